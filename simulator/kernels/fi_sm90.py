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

The time of a key tile and of an item's Q load / O epilogue come from FlashAttention-3's binary (the same producer /
consumer warpgroup design on the same wgmma tiles: simulator.kernels.fa3 FA3_PREFILL_BLOCK_SCALE,
FA3_PREFILL_TILE_EXTRA_BLOCKS, FA3_MLA_BLOCK, on the kind attn_fa3_persist), a key tile's time scaled by its keys / 128
(FI_SM90_KEY_SCALE). That was the first look (priced before the kernel was measured: grid 1, 73 rows on 1 x H200,
5.7 / 13.8 %, 5 of 6 regimes; the product's reading of these calls as FlashInfer's FA2 kernel 68.1 / 121.0 %, 0 of 6).
Its own measurement changed two things (FI_SM90_TILE_SCALE, FI_SM90_LONE_TILE), judged on blind grid 2 (104 rows of
other models): 4.6 / 9.5 %, 6 of 6 (the first look 6.6 / 14.6 %, 4 of 6; the FA2 reading 68.2 / 134.7 %, 0 of 6).
"""
from __future__ import annotations

import numpy as np

from simulator.kernels import fa3 as FA3
from simulator.kernels.production import Launch, attention_io, causal_flops, floor_sum, unique_rows

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
#: a key tile's time on each path as a multiple of the first look's (FA3's prefill block x keys / 128), head dim 128 only
#: (the 192 / 128 tile keeps FA3_MLA_BLOCK, measured on FA3's own TMA path): ragged (TMA) 0.955, paged (cp.async
#: gather, 96 keys) 1.07. FITTED on grid 1's 'fit' rows (Llama-3.1-8B's heads, 10 ragged + 9 paged; hwmodels/calibration/
#: data/production_attention/fi_sm90_prefill_nvidia-h200_2026-11-28.csv, 1 x H200) by the rms log error over a 0.005
#: scan, with FI_SM90_LONE_TILE on; LOOKED-AT (chosen after grid 1's errors: the ragged rows +8 % signed, the paged -6 %).
#: SHIPPED after blind grid 2 (104 rows of other models, priced before the call: lab/kernels/predict_fi_sm90_prefill.py
#: --grid blind2, candidate A): 4.6 / 9.5 %, 6 of 6 regimes, against the first look's 6.6 / 14.6 %, 4 of 6. None = 1
FI_SM90_TILE_SCALE: dict | None = {"ragged": 0.955, "paged": 1.07}
#: True = a launch of at most one item per SM counts only the CTAs with an item and declares each one's first Q tile and
#: K / V tiles as the bytes it waits for with nothing of its own to overlap (Launch.lone_tile_bytes, hwmodels.roofline
#: LONE_TILE_LOAD: the CTAs' loads at the kind's HBM rate; the roofline's existing rule, no constant of its own). Chosen
#: after grid 1 (its one-item rows 9-25 % fast under the first look's prologue loads alone); shipped with the scales
#: above (blind grid 2: the one-item regimes 14.4 / 15.5 -> 4.6 / 9.4 % ragged, 21.9 / 27.6 -> 7.3 / 14.5 % MLA).
#: False = the first look's
FI_SM90_LONE_TILE = True
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


#: the emulation hands out ceil(SMs / FI_SM90_GROUP_PARTS) items at a time, each group to the least-loaded CTAs in
#: order (None: one item at a time, the plan's heap exactly); the grouped form bounds its steps (the engine prices
#: ~10^4 distinct launches a run), as production.INORDER_GROUP_PARTS does for FA3's schedule
FI_SM90_GROUP_PARTS: int | None = 8
#: memo of emulated plans across calls: (B, tiles, heads, prefix, CTA_Q, CTA_KV, SMs, block_w, extra_w) -> (span / mean,
#: the busiest CTA's items); cleared when it passes _MEMO_MAX entries
_MEMO: dict = {}
_MEMO_MAX = 500_000


def _emulate_many(keys: np.ndarray) -> np.ndarray:
    """The plan (scheduler.cuh PrefillSM90Plan) of every launch in `keys` (rows B, tiles nt, heads, prefix O, CTA_Q,
    CTA_KV, SMs, block_w, extra_w; every request nt full tiles), vectorized across them: items handed out in the plan's
    order (heads, then requests, each request's tiles last to first) to the CTAs of least accumulated plan cost (2 CTA_Q
    + the tile's causal key end, cost_function), FI_SM90_GROUP_PARTS at a time; each CTA's time the sum of its items'
    key tiles x block_w + extra_w. Returns rows (busiest CTA's time / the mean CTA's, the busiest CTA's items)."""
    B, nt, heads, O, cq, ck, m, bw, ew = (keys[:, i][:, None] for i in range(9))
    M = int(keys[:, 6].max())
    n = heads * B * nt
    g = 1 if FI_SM90_GROUP_PARTS is None else max(int(np.ceil(M / FI_SM90_GROUP_PARTS)), 1)
    K = len(keys)
    F = np.where(np.arange(M)[None, :] < m, 0.0, np.inf)
    R = np.zeros((K, M))
    N = np.zeros((K, M))
    rows = np.arange(K)[:, None]
    cols = np.arange(g, dtype=np.float64)[None, :]
    for step in range(int(np.ceil(n.max() / g))):
        k = step * g + cols
        live = k < n
        i = np.mod(k, nt)                       # 0 = a request's last tile (handed out first)
        end = np.where(i == 0.0, O + nt * cq, O + (nt - i) * cq)
        cost = np.where(live, 2.0 * cq + end, 0.0)
        real = np.where(live, np.ceil(end / ck) * bw + ew, 0.0)
        slot = np.argsort(F, axis=1, kind="stable")[:, :g] if g > 1 else np.argmin(F, axis=1)[:, None]
        F[rows, slot] += cost
        R[rows, slot] += real
        N[rows, slot] += live
    top = np.argmax(R, axis=1)
    mean = R.sum(axis=1) / keys[:, 6]
    return np.stack([R[np.arange(K), top] / np.maximum(mean, 1e-30), N[np.arange(K), top]], axis=1)


def _plan_ratio(keys: np.ndarray, block_w: float, extra_w: float) -> np.ndarray:
    """_emulate_many of every row of `keys` (B, tiles, heads, prefix, CTA_Q, CTA_KV, SMs) at these time units, through
    the memo (_MEMO): only the keys no earlier call emulated are emulated."""
    uk, inv = unique_rows(np.rint(keys))
    out = np.empty((len(uk), 2))
    todo = []
    for r, row in enumerate(map(tuple, uk.tolist())):
        got = _MEMO.get(row + (block_w, extra_w))
        if got is None:
            todo.append(r)
        else:
            out[r] = got
    if todo:
        if len(_MEMO) > _MEMO_MAX:
            _MEMO.clear()
        for a in range(0, len(todo), 4096):
            part = todo[a:a + 4096]
            full = np.concatenate([uk[part], np.full((len(part), 1), block_w), np.full((len(part), 1), extra_w)], axis=1)
            res = _emulate_many(full)
            out[part] = res
            for r, v in zip(part, res.tolist()):
                _MEMO[tuple(uk[r].tolist()) + (block_w, extra_w)] = (v[0], v[1])
    return out[inv.ravel()]


def sm90_plan_span(B, P, T, Hq, cq, ck, sms, block_w, extra_w):
    """(busiest CTA's time, its items, mean CTA time, the launch's items) of the plan, in units of one `block_w = 1` key
    tile: every item's key tiles x block_w + extra_w x its real rows / CTA_Q. At most one item per SM: the longest item. Up to
    FI_SM90_EMULATE_ROUNDS items per SM the plan is emulated (_plan_ratio: its span / mean at full query tiles and the
    prefix's key-tile multiples around it, interpolated, times this launch's mean); beyond, max(longest item, mean +
    half the shortest item) (the last items handed out are each request's first tiles, the cheapest, onto the
    least-loaded CTAs). Where one head's items
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
    # the cached prefix O counted in key tiles continuously (as production.causal_tile_blocks' prefix_continuous: exact
    # where O is a multiple of CTA_KV, linear between): the engine interpolates its chunk surface in the prefix, which
    # a step every key tile of prefix would defeat. A request's tiles j = 0 .. nt - 2 end at O + (j + 1) CTA_Q keys
    # (an arithmetic progression, summed exactly by production.floor_sum), its last at T; the items' rows sum to P
    O = np.maximum(T - P, 0.0)
    pre = O / ck
    last_rows = np.minimum(cq, P - (nt - 1.0) * cq)
    longest = (np.ceil(P / ck) + pre) * bw + ew * last_rows / cq
    shortest = np.where(nt <= 1.0, longest, (np.ceil(cq / ck) + pre) * bw + ew)
    own = floor_sum(np.maximum(nt - 1.0, 0.0), ck, cq, cq + ck - 1.0) + np.ceil(np.rint(P) / ck)
    total = ((own + nt * pre) * bw + ew * P / cq) * B * heads
    mean = total / m
    span = np.where(n <= m, longest, np.maximum(longest, mean + shortest / 2.0))
    items = np.ceil(n / m)
    emu = np.flatnonzero((n > m) & (n <= FI_SM90_EMULATE_ROUNDS * m))
    if len(emu):
        # the plan's span / mean, emulated at the prefix's key-tile multiples below and above it (full query tiles) and
        # interpolated, then scaled to this launch's exact mean (as production.lpt_makespan does for FA3's schedule)
        Oe, kte = O[emu], ck[emu]
        lo = np.floor(Oe / kte) * kte
        w = (Oe - lo) / kte
        res = [np.empty((len(emu), 2)), np.empty((len(emu), 2))]
        pairs = np.stack([bw[emu], ew[emu]], axis=1)
        for pair in np.unique(pairs, axis=0):   # the time units: one pair per call in practice
            sel = np.flatnonzero((pairs == pair).all(axis=1))
            e = emu[sel]
            for r, Ok in enumerate((lo[sel], lo[sel] + kte[sel])):
                res[r][sel] = _plan_ratio(np.stack([B[e], nt[e], heads[e], Ok, cq[e], ck[e], m[e]], axis=1),
                                          float(pair[0]), float(pair[1]))
        ratio = (1.0 - w) * res[0][:, 0] + w * res[1][:, 0]
        span[emu] = np.maximum(ratio * mean[emu], longest[emu])
        items[emu] = res[0][:, 1]
    mult = np.where(same, Hq, 1.0)
    return tuple((x * mult).reshape(shape) for x in (span, items, mean, n))


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
    span, items, mean, n_items = sm90_plan_span(B, P, T, Hq, cq, ck, float(sms), block, extra)
    flops_io, kv, qb, ob = attention_io(B, P, T, Hq, Hkv, d_qk, d_vo, 2.0)
    dd = (d_qk + d_vo) / 2.0
    fl = causal_flops(B, P, T, Hq, dd) if np.all(causal) else flops_io
    rounds = np.maximum(items, 1.0)
    loads = FI_SM90_LOADS["paged" if paged else "ragged"]
    # the CTAs that get work: every item at one item per SM (the others exit at once), else the SMs x the busiest CTA's
    # items (the first look counted every SM's CTA at one item per SM too)
    one = (rounds <= 1.0) & FI_SM90_LONE_TILE
    ctas = np.where(one, np.minimum(n_items, float(sms)), float(sms) * rounds)
    lone = np.where(rounds <= 1.0, 2.0 * (cq * d_qk + ck * (d_qk + d_vo)), 0.0) if FI_SM90_LONE_TILE else 0.0
    main = Launch("attention", FI_SM90_KIND, ctas, 1.0, span / rounds, loads / rounds, fl, kv + qb, ob,
                  lone_tile_bytes=lone,
                  info={"cta_q": cq, "cta_kv": ck, "items": items, "span_blocks": span, "mean_blocks": mean})
    return [main], {"cta_q": cq, "cta_kv": ck, "items_busiest": items, "span_blocks": span, "mean_blocks": mean}
