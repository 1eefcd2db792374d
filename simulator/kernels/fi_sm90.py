"""FlashInfer's own Hopper prefill kernel (its "fa3" backend: include/flashinfer/attention/hopper/, flashinfer-python
0.6.4, commit simulator.kernels.flashinfer.FI_COMMIT), the kernel the engines' FlashInfer backends run for a prefill on
sm_90 when the K/V cache is bf16:

  * flashinfer/utils.py determine_attention_backend: a wrapper built with backend "auto" (the default) takes "fa3" on
    sm_90a unless a custom mask, a positional encoding, fp16 QK reductions or an fp8 K/V with a bf16 query rule it out
    (is_fa3_backend_supported); otherwise "fa2" (prefill.cuh, the fi_tc family).
  * vLLM's FLASHINFER backend (vllm/v1/attention/backends/flashinfer.py _get_prefill_wrapper) plans
    BatchPrefillWithPagedKVCacheWrapper(workspace, layout) with backend "auto": its chunked prefill runs the PAGED
    sm_90 kernel at bf16 K/V (fa2 at fp8 K/V).
  * SGLang's flashinfer backend (python/sglang/srt/layers/attention/flashinfer_backend.py) runs the new tokens of an
    extend batch through BatchPrefillWithRaggedKVCacheWrapper(workspace, "NHD", backend="auto") (the RAGGED sm_90
    kernel, causal) and a cached prefix through its paged wrappers, built with backend "fa2", non-causal, the two
    merged by merge_state; its flashinfer MLA backend (flashinfer_mla_backend.py) runs a prefix-free extend through the
    same ragged wrapper with head_dim_qk 192 / head_dim_vo 128.

The structure, read from the source before anything was measured:

  plan    scheduler.cuh PrefillSM90Plan: requests sorted by K/V length, longest first; for each query head (every work
          item is one query head: "our current FA3 implementation do not fuse query and group heads"), for each request,
          its query tiles of CTA_Q = 128 rows (192 at head dim 64) from the last to the first, each handed to the CTA of
          least accumulated cost (a min-heap over the SMs, one CTA per SM) at cost 2 x CTA_Q + the tile's causal K/V end
          (cost_function, packed_causal_kv_end). No split of a tile's keys, no merge kernel. Where a head's items exceed
          4096 (same_schedule_for_all_heads) one head's schedule is computed and the grid is (SMs, query heads).
  kernel  hopper/prefill_sm90.cuh: a persistent launch of one CTA per SM (launch bounds 1), (CTA_Q / 64 + 1) x 4
          warps: a producer warpgroup and CTA_Q / 64 consumer warpgroups (kernel_traits.cuh), 2 K/V stages. Each CTA
          walks its items in order (tile_scheduler.cuh BatchPrefillPersistentTileScheduler: the item's coordinates
          read from the plan's arrays), each item's key tiles up to its causal bound: n = ceil(min(T, T - P + (j + 1)
          CTA_Q) / CTA_KV) for query tile j of P new rows after T - P cached keys. Tiles (getCTATileSize and the paged
          dispatch): ragged (K/V loaded by TMA) 128 x 128 at head dim 128 causal (128 x 192 non-causal), 192 x 128 at
          64, 128 x 64 at 256, 128 x 128 at 192 / 128 (DeepSeek's prefill); paged (K/V gathered through the page
          table by cp.async, the sparse mainloop) 128 x 96 at 128, 192 x 96 at 64, 128 x 32 at 256; the paged path has
          no 192 / 128 kernel (cudaErrorNotSupported).

The time of a key tile and of an item's Q load / O epilogue are not measured for this kernel at first: the first look
takes them from FlashAttention-3's binary (the same producer / consumer warpgroup design on the same wgmma tiles:
simulator.kernels.fa3 FA3_PREFILL_BLOCK_SCALE, FA3_PREFILL_TILE_EXTRA_BLOCKS, FA3_MLA_BLOCK, on the kind
attn_fa3_persist), a key tile's time scaled by its keys / 128 (FI_SM90_KEY_SCALE). What this kernel's own
measurement changed is marked where it did.
"""
from __future__ import annotations

import numpy as np

from simulator.kernels import fa3 as FA3
from simulator.kernels.production import Launch, attention_io, causal_flops

#: work items of one query head above which the plan keeps one schedule for every head (scheduler.cuh PrefillSM90Plan:
#: plan_info.same_schedule_for_all_heads = max_num_works_per_head > 4096)
SAME_SCHEDULE_ITEMS = 4096.0
#: the op kind whose fitted terms (fixed time, per-item turnover, the decode-fitted key block) price this kernel: FA3's
#: persistent binary (ASSUMPTION of the first look: the same design; docstring)
FI_SM90_KIND = "attn_fa3_persist"
#: dependent loads before an item's first key tile: the item's coordinates from the plan's arrays, then its Q tile
#: (ragged, TMA) / its first page index and the gathered tile (paged). Read from tile_scheduler.cuh and
#: sparse_mainloop.cuh (ASSUMPTION: counted from the source, not measured)
FI_SM90_LOADS = {"ragged": 2.0, "paged": 3.0}
#: a key tile's time relative to FA3's 128-key prefill block: its keys / 128 (ASSUMPTION of the first look: the wgmma
#: work of a CTA_Q x CTA_KV tile is linear in CTA_KV)
FI_SM90_KEY_SCALE = True
#: a key tile's time on each path as a multiple of the first look's (FA3's prefill block x keys / 128): None = 1 (the
#: first look). Head dim 128 only: the 192 / 128 tile keeps FA3_MLA_BLOCK (measured on FA3's own TMA path)
FI_SM90_TILE_SCALE: dict | None = None
#: True = a launch of at most one item per SM declares its first Q tile and K / V tiles as the bytes each CTA waits for
#: with nothing of its own to overlap (Launch.lone_tile_bytes, hwmodels.roofline LONE_TILE_LOAD: the CTAs' loads at the
#: kind's HBM rate); False = the first look's (the prologue's dependent loads alone)
FI_SM90_LONE_TILE = False
#: emulate the plan's min-heap one item at a time up to this many items per SM (exact); beyond, the closed form
#: (sm90_plan_span)
FI_SM90_EMULATE_ROUNDS = 8.0


def sm90_tile(d_qk, d_vo, causal=True, paged=False):
    """(CTA_Q, CTA_KV) of the sm_90 prefill kernel (module docstring); NaN where the source has no kernel."""
    d_qk, d_vo = np.broadcast_arrays(np.asarray(d_qk, dtype=np.float64), np.asarray(d_vo, dtype=np.float64))
    causal = np.broadcast_to(np.asarray(causal, dtype=bool), d_qk.shape)
    same = d_qk == d_vo
    if paged:
        cq = np.where(same & (d_qk == 64), 192.0, np.where(same & ((d_qk == 128) | (d_qk == 256)), 128.0, np.nan))
        ck = np.where(same & (d_qk == 64), 96.0, np.where(same & (d_qk == 128), 96.0,
                                                          np.where(same & (d_qk == 256), 32.0, np.nan)))
        return cq, ck
    mla = (d_qk == 192) & (d_vo == 128)
    cq = np.where(same & (d_qk == 64), 192.0, np.where((same & ((d_qk == 128) | (d_qk == 256))) | mla, 128.0, np.nan))
    ck = np.where(same & (d_qk == 64), 128.0,
                  np.where(same & (d_qk == 128), np.where(causal, 128.0, 192.0),
                           np.where(same & (d_qk == 256), 64.0, np.where(mla, 128.0, np.nan))))
    return cq, ck


def _item_arrays(P, T, cq, ck, nt):
    """Per query tile j = nt - 1 .. 0 (the plan's order within a request): (plan cost, key tiles, real rows)."""
    j = nt - 1.0 - np.arange(int(nt), dtype=np.float64)
    end = np.where(j + 1.0 >= nt, T, np.maximum(np.minimum(T - P + (j + 1.0) * cq, T), 0.0))
    return 2.0 * cq + end, np.ceil(end / ck), np.minimum(cq, P - j * cq)


def _emulate(B, P, T, heads, cq, ck, sms, block_w, extra_w):
    """One launch's plan, item by item (scheduler.cuh PrefillSM90Plan's min-heap; ties to the lowest CTA index, as the
    heap's (cost, index) pairs order them): (the busiest CTA's time in key-block units, its items, the mean CTA's)."""
    nt = np.ceil(P / cq)
    cost, blocks, rows = _item_arrays(P, T, cq, ck, nt)
    real = blocks * block_w + extra_w * rows / cq
    n_items = int(heads * B * nt)
    m = int(sms)
    F = np.zeros(m)
    R = np.zeros(m)
    N = np.zeros(m)
    per_req = int(nt)
    for k in range(n_items):
        c = int(np.argmin(F))
        i = k % per_req
        F[c] += cost[i]
        R[c] += real[i]
        N[c] += 1.0
    top = int(np.argmax(R))
    return R[top], N[top], R.sum() / m


def sm90_plan_span(B, P, T, Hq, cq, ck, sms, block_w, extra_w):
    """(busiest CTA's time, its items, mean CTA time) of the plan, in units of one `block_w = 1` key tile: every item's
    key tiles x block_w + extra_w x its real rows / CTA_Q. Up to FI_SM90_EMULATE_ROUNDS items per SM the plan is
    emulated (_emulate, once per distinct launch); beyond, max(longest item, mean + half the shortest item) (the last
    items handed out are each request's first tiles, the cheapest, onto the least-loaded CTAs). Where one head's items
    exceed SAME_SCHEDULE_ITEMS the grid is (SMs, heads): the heads' copies of one head's schedule run one after another
    on each SM (heads x the one-head span). Every argument broadcasts."""
    arrs = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in (B, P, T, Hq, cq, ck, sms, block_w, extra_w)))
    shape = arrs[0].shape
    B, P, T, Hq, cq, ck, m, bw, ew = (a.ravel() for a in arrs)
    nt = np.ceil(P / cq)
    per_head = B * nt
    same = per_head > SAME_SCHEDULE_ITEMS
    heads = np.where(same, 1.0, Hq)
    n = heads * per_head
    j0 = np.zeros_like(P)                               # the first (cheapest) tile of a request
    end0 = np.where(nt <= 1.0, T, np.minimum(T - P + cq, T))
    end_last = T
    longest = np.ceil(end_last / ck) * bw + ew * np.minimum(cq, P - (nt - 1.0) * cq) / cq
    shortest = np.ceil(end0 / ck) * bw + ew * np.minimum(cq, P - j0 * cq) / cq
    # the mean CTA's time: every item's key tiles (an arithmetic walk of the tiles' causal ends) over the SMs
    total = np.zeros_like(P)
    for i in range(P.size):   # tiles per request are few (<= P / 128): summed exactly
        _, blocks, rows = _item_arrays(P[i], T[i], cq[i], ck[i], nt[i])
        total[i] = (blocks.sum() * bw[i] + ew[i] * rows.sum() / cq[i]) * B[i] * heads[i]
    mean = total / m
    span = np.maximum(longest, mean + shortest / 2.0)
    items = np.ceil(n / m)
    emu = np.flatnonzero(n <= FI_SM90_EMULATE_ROUNDS * m)
    if len(emu):
        keys = np.stack([B[emu], P[emu], T[emu], heads[emu], cq[emu], ck[emu], m[emu], bw[emu], ew[emu]], axis=1)
        uk, inv = np.unique(keys, axis=0, return_inverse=True)
        got = np.array([_emulate(*row) for row in uk])
        span[emu] = got[inv.ravel(), 0]
        items[emu] = got[inv.ravel(), 1]
    mult = np.where(same, Hq, 1.0)
    return (span * mult).reshape(shape), (items * mult).reshape(shape), (mean * mult).reshape(shape)


def fi_sm90_prefill(B, P, T, Hq, Hkv, d_qk, d_vo, sms: int, paged: bool = False, causal=True):
    """Launches of one FlashInfer sm_90 prefill call (module docstring): B requests of P new query rows after T - P
    cached keys, Hq query / Hkv KV heads, bf16. paged: the paged wrapper (vLLM), else the ragged one (SGLang). The one
    launch is FA3's persistent kind priced over the busiest CTA's items: `items` rounds of one item each on its SM
    (FA3's PERSIST_TILE_WAVES form: a fill per item, a turnover after the first), the chain the busiest CTA's key tiles
    in FA3's prefill block times (x keys / 128, x FA3_MLA_BLOCK at 192 / 128) plus each item's Q load / O epilogue
    (FA3_PREFILL_TILE_EXTRA_BLOCKS x its rows / CTA_Q)."""
    B, P, T, Hq, Hkv, d_qk, d_vo = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64)
                                                         for x in (B, P, T, Hq, Hkv, d_qk, d_vo)))
    cq, ck = sm90_tile(d_qk, d_vo, causal, paged)
    if np.any(np.isnan(cq)):
        raise ValueError("FlashInfer's sm_90 prefill has no kernel for these head dims "
                         f"(ragged: 64, 128, 256 or 192 / 128; paged: 64, 128, 256): {np.unique(d_qk)} / {np.unique(d_vo)}")
    block = FA3.FA3_PREFILL_BLOCK_SCALE[2.0] * np.where((d_qk == 192) & (d_vo == 128), FA3.FA3_MLA_BLOCK or 1.0,
                                                        np.where(d_qk == 128, 1.0, (d_qk + d_vo) / 256.0))
    if FI_SM90_KEY_SCALE:
        block = block * ck / 128.0
    if FI_SM90_TILE_SCALE:
        block = block * np.where(d_qk == 128.0, FI_SM90_TILE_SCALE["paged" if paged else "ragged"], 1.0)
    extra = FA3.FA3_PREFILL_TILE_EXTRA_BLOCKS
    span, items, mean = sm90_plan_span(B, P, T, Hq, cq, ck, float(sms), block, extra)
    flops_io, kv, qb, ob = attention_io(B, P, T, Hq, Hkv, d_qk, d_vo, 2.0)
    dd = (d_qk + d_vo) / 2.0
    fl = causal_flops(B, P, T, Hq, dd) if np.all(causal) else flops_io
    rounds = np.maximum(items, 1.0)
    loads = FI_SM90_LOADS["paged" if paged else "ragged"]
    n_items = np.where(B * np.ceil(P / cq) > SAME_SCHEDULE_ITEMS, 1.0, Hq) * B * np.ceil(P / cq)
    # the CTAs that get work: every item at one item per SM (the others exit at once), else the SMs x the busiest CTA's
    # items (the first look counted every SM's CTA at one item per SM too)
    one = (rounds <= 1.0) & FI_SM90_LONE_TILE
    ctas = np.where(one, np.minimum(n_items, float(sms)), float(sms) * rounds)
    lone = np.where(rounds <= 1.0, 2.0 * (cq * d_qk + ck * (d_qk + d_vo)), 0.0) if FI_SM90_LONE_TILE else 0.0
    main = Launch("attention", FI_SM90_KIND, ctas, 1.0, span / rounds, loads / rounds, fl, kv + qb, ob,
                  lone_tile_bytes=lone,
                  info={"cta_q": cq, "cta_kv": ck, "items": items, "span_blocks": span, "mean_blocks": mean})
    return [main], {"cta_q": cq, "cta_kv": ck, "items_busiest": items, "span_blocks": span, "mean_blocks": mean}
