"""attention: dsa — DeepSeek Sparse Attention (DeepSeek-V3.2-Exp): a lightning indexer scores every past
token, an exact top-k (the `topk` axis) keeps index_topk of them, and MLA attends only to those.

Per layer, per device, one decode step of R = batch x query rows rows over a KV length N
(indexer: heads Hi = index_n_heads, head dim di = index_head_dim, fp8, from the model file's dsa_indexer):
  indexer_q_proj    wq_b: [R, q_lora_rank] @ [q_lora_rank, Hi*di]  (the query latent comes from MLA's q_a path)
  indexer_k_proj    wk + weights_proj fused: [R, hidden] @ [hidden, di + Hi]
  indexer_rope_quant RoPE on the first 64 dims of q and k, fp8 quantization, write the key cache
                    (di fp8 bytes + one fp32 scale per 128 values per token: ModelSpec.kv_bytes_per_token)
  indexer_logits    I[r, t] = sum_h w[r, h] * ReLU(q[r, h] . k[t]) over all N past tokens (MQA: one key head)
                    flops = 2 R N Hi di + 3 R N Hi;   bytes = B N (di + 4) (key cache, once per sequence)
                    + R Hi di (q) read, R N 4 (fp32 logits) written      -> O(N)  (the document's N . d_i term)
  topk              the `topk` axis over each row of N fp32 logits        -> O(R_passes . N)
  attention         sparse MLA over the k selected latent entries (absorbed, as dense MLA, with T = min(N, k)):
                    flops = 2 R H k (r + p + r);  bytes = R k (r + p) kv_bytes (each row gathers its own
                    entries) + R k 4 (the indices)                        -> constant in N
The top-k share of the step therefore grows with N (tests/test_dsa.py checks it).

Indexer kernel (parameter indexer_kernel): `deepgemm` (default: what SGLang and TensorRT-LLM run for
DeepSeek-V3.2) prices DeepGEMM's fp8_paged_mqa_logits (decode / verification) and fp8_mqa_logits (prefill) with
the work decomposition of their source (simulator/kernels/indexer.py, sgl-deep-gemm 0.2.5 / deepseek-ai/DeepGEMM @
54e22612): decode = min(items, SMs) persistent CTAs walking ceil(items / SMs) 256-key items each, items = batch x
ceil(N / 256) (next_n <= 2 is one atom on sm_90), plus the schedule-metadata kernel once per step; prefill = persistent
CTAs over query blocks of 128 / Hi rows, the chain the busiest CTA's 256-key blocks. Kinds indexer_dg /
indexer_dg_prefill, whose terms are borrowed from the block-scaled fp8 GEMM kind until measured (see
simulator/kernels/indexer.py). Parameter indexer_keys: `cold` (default: each layer's indexer reads its own layer's
keys, not in L2 since that layer's last use: kind indexer_dg_cold) or `warm` (kind indexer_dg: the keys in L2).
`measured` keeps the indexer kernel the project measured (one CTA per (query row, 64
keys), kind 'indexer'; its prefill charged as one device-filling attention-kind sweep).

Assumptions: the indexer is replicated on every TP rank (its 64 heads are not split; every rank selects the
same k tokens: TensorRT-LLM / SGLang TP attention); the scheduling-metadata kernel of the paged logits
(get_paged_mqa_logits_metadata) runs once per step, not per layer; FlashMLA's sparse kernel splits the k entries into chunks of
`split_tokens` per (row, 64-head tile) like dense FlashMLA, plus a combine kernel.
Prefill (P prompt tokens, causal): the indexer over P(P+1)/2 pairs, the top-k over the rows of more than k keys
(PREFILL_TOPK_ROWS; GVR falls back to radix in prefill), sparse MLA as FlashMLA's sparse prefill runs it (every row's k
index tiles at the padded heads; `sparse_prefill: generic`: the absorbed MQA form over sum_i min(i, k) pairs), the
latent read once (re-reads assumed to hit L2, as for dense prefill).
"""
from __future__ import annotations

import numpy as np

from simulator.combo import Combo
from simulator.layers import gemm
from simulator.ops import MaskedBuilder, OpBuilder
from simulator.precision import ACT_BYTES, ACT_DTYPE, DTYPE_BYTES
from simulator.strategies.base import AttentionStrategy, Param, StepShape, register

FLASHMLA_HEAD_TILE = 64   # FlashMLA processes 64 query heads per CTA (dense.py uses the same tile)
LOGIT_BYTES = 4.0         # the indexer writes fp32 logits (indexer_topk_decode takes float logits)


#: --- kernel model (calibration helper, issue 15) ---
#: Keys per CTA of the decode indexer-logits kernel. ASSUMPTION: 64, the tile of the indexer kernel we measured
#: (lab/measure_regimes.py _indexer_fwd: one CTA per (query row, 64 keys), all heads) and of
#: DeepGEMM's paged MQA-logits kernel's KV block (block_kv = 64, ASSUMPTION from its default config). At one
#: query row and a short context the kernel has R x N / 64 CTAs - fewer than the SMs - so its time grows with
#: N at low parallelism; op kind 'indexer' (calibrated on those measurements: wave model of hwmodels.roofline).
INDEXER_KEYS_PER_CTA = 64.0


#: the causal prompt's top-k rows as priced (prefill_topk_rows): "mean" = every one of the B x P rows at the mean
#: length P / 2 (the rule before 2026-11-28); "causal" = only the rows that hold more than k keys (a row of <= k keys
#: selects them all: topKPerRowJob's `rowLen <= topK` copy in TensorRT-LLM's indexerTopK.cu @ 07339e94, the same early
#: return in the other engines' kernels), B x (P - k) rows at their mean length (P + k + 1) / 2. Judged on the causal
#: prompt grid (simulator/calibration/topk_trtllm_prefill.py, 6 whole prompts of 3K-32K on the H200, TensorRT-LLM's
#: prefill entry, both priced before the call): causal 24.3 / 43.4 %, mean 44.1 / 67.9 %, 0 of 2 regimes each (at P =
#: 3,072 the mean rule priced no job at all: -55.5 %; causal +5.2 %): SHIPPED by the declared tie rule (the lower
#: pooled median); both over-price recorded prompts of 6K-32K by +22..+47 % (the prefill entry's many-CTA rule,
#: then PREFILL_LEAD_SHARE: causal prompts 16.1 / 26.9 % blind; since the stagger grid topk_trtllm.STAGGERED_PARTNERS:
#: 16.0 / 25.9 % blind on four new prompts of 5K-18K, +12..+29 %; docs/KNOWN_GAPS.md). SGLang's kernel over 9 whole
#: prompts of 3.5K-30K under this rule (H200, blind, simulator/calibration/topk_sglang_h200.py CAUSAL): 5.0 / 8.3 %,
#: 2 of 2 regimes, and FlashInfer's ragged transform over 9 more (topk_flashinfer_causal_h200): 6.9 / 10.4 %, 2 of 2:
#: TensorRT-LLM's miss is its kernel model's, not the rule's
PREFILL_TOPK_ROWS = "causal"


def prefill_topk_rows(B, P, k, rule: str | None = None):
    """(rows, length) the prefill top-k is priced at for B causal prompts of P tokens (row i of a prompt holds i + 1
    keys), under `rule` (default PREFILL_TOPK_ROWS)."""
    B, P = np.asarray(B, float), np.asarray(P, float)
    if (rule or PREFILL_TOPK_ROWS) == "causal":
        return B * np.maximum(P - k, 0.0), np.maximum((P + k + 1.0) / 2.0, 1.0)
    return B * P, np.maximum(P / 2.0, 1.0)


def add_indexer_logits(b, R, B, N, heads, head_dim, dtype, count, key_bytes=None) -> None:
    """I[r, t] = sum_h w[r, h] * ReLU(q[r, h] . k[t]) for R query rows over N keys (fp8 keys + one fp32 scale per
    128 values, unless `key_bytes` per key says otherwise): flops 2 R N H d + 3 R N H in `dtype` arithmetic; reads
    the key cache once per sequence, q and w; writes fp32 logits.
    CTAs = R x ceil(N / INDEXER_KEYS_PER_CTA), one key tile each (serial_iters 1)."""
    if key_bytes is None:
        key_bytes = head_dim + 4.0 * head_dim / 128
    b.add("indexer_logits", "indexer", flops=2.0 * R * N * heads * head_dim + 3.0 * R * N * heads,
          bytes_read=B * N * key_bytes + R * heads * head_dim + R * heads * ACT_BYTES,
          bytes_written=R * N * LOGIT_BYTES, parallel_units=R * np.ceil(N / INDEXER_KEYS_PER_CTA),
          serial_iters=1.0, dtype=dtype, count=count)




def flattened_rows_hit(B, N, sms: int, l2_bytes: float, key_bytes: float):
    """The share of a flattened request's later rows' key walks that hit in the L2 (FLATTENED_ROWS_L2): the schedule
    metadata deals the launch's B x T items (T = ceil(N / 256) a sequence) evenly, P = B T / SMs to an SM in order, so
    item i of row j + 1 is T positions after row j's: on an SM r = T mod P steps later ((P - r) / P of the items) or
    P - r steps earlier (r / P); between the two walks the other SMs read that many steps of items, a reuse distance of
    steps x SMs x 256 keys' bytes, and the re-read hits by the roofline's own rule, min(1, L2 / distance)."""
    from simulator.kernels import indexer as X

    T = np.maximum(np.ceil(np.asarray(N, float) / X.SPLIT_KV), 1.0)
    P = np.maximum(np.asarray(B, float) * T / float(sms), 1.0)
    r = np.mod(T, P)
    item = X.SPLIT_KV * key_bytes * float(sms)

    def hit(steps):
        return np.minimum(1.0, float(l2_bytes) / np.maximum(steps * item, 1.0))
    return (P - r) / P * hit(np.maximum(r, 1.0)) + r / P * hit(np.maximum(P - r, 1.0))


#: the share of the L2 within whose reuse distance a flattened row's re-read hits (flattened_rows_hit_schedule): the
#: midpoint of the measured re-sweep curve (hwmodels/calibration/fitted/H100-SXM.yaml l2_sweep_hit.again, 132 CTAs
#: re-sweeping their own rows, lab/kernels/measure_l2_sweep.py, 2026-11-27: hit 0.826 at 0.76 L2, 0.696 at 0.80, 0.535
#: at 0.84, 0.127 at 0.88, 0.04 at 0.96; the H200, the same 50 MiB L2 of the GH100 die, borrows that curve): a step
#: where the curve falls through one half
FLATTENED_L2_REUSE_SHARE = 0.845
#: how a flattened row's re-reads hit (add_deepgemm_paged_logits): "soft" = flattened_rows_hit (the first and second
#: rows' two reuse distances, min(1, L2 / distance); shipped on the MTP rows grid 2); "schedule" =
#: flattened_rows_hit_schedule (every row's position in the schedule, the nearest earlier read of the same keys, the
#: L2's measured step; built after grids 1-2, LOOKED-AT there: pooled 5.9 against 6.1 % median). Judged on the MTP rows
#: grid 3 (18 new shapes drawn by a seeded rule, 1 x H200, prices committed 54fcd72 before the call,
#: simulator/calibration/indexer_mtp_h200.py GRID3): schedule 8.6 / 13.6 %, 2 of 2 regimes (rows of 2 9.8 / 15.4 %,
#: rows of 3-4 7.7 / 11.9 %) against soft 12.0 / 20.2 %, 1 of 2 (rows of 2 15.7 / 22.6 %: hits priced where the
#: schedule puts a request's rows more than an L2 apart). SHIPPED by the declared rule (more regimes)
FLATTENED_ROWS_HIT = "schedule"
def flattened_rows_hit_schedule(B, N, g, sms: int, l2_bytes: float, key_bytes: float):
    """The share of a flattened request's later rows' key walks that hit in the L2, from the schedule's positions
    (FLATTENED_ROWS_HIT = "schedule"): the metadata deals the launch's B x T items (T = ceil(N / 256) a sequence) in
    order, P = B T / SMs to an SM, so a request's g rows read item i at positions x, x + T, ..., x + (g - 1) T, each at
    step (position mod P) of its SM. Sorted by step, the first read misses and each later one re-reads after the gap to
    the one before it, a reuse distance of gap x SMs x 256 keys' bytes (at least one step's); it hits where that
    distance is within FLATTENED_L2_REUSE_SHARE of the L2 (an LRU-like cache: the device's measured re-sweep curve is a
    step there), and misses beyond. Exact over the offset x of the first row's item on its SM (uniform on [0, P)): the
    reads are the points k T mod P of a circle of length P turned by x, their sorted gaps the circle's gaps but the one
    the SM's start cuts, which is gap j with probability gap_j / P; so the expected hits are sum_j hit(gap_j) (1 -
    gap_j / P), over g - 1 later reads. Vectorized over shapes."""
    from simulator.kernels import indexer as X

    B, N, g = np.broadcast_arrays(np.asarray(B, float), np.asarray(N, float), np.asarray(g, float))
    shape = B.shape
    B, N, g = B.ravel(), N.ravel(), g.ravel()
    T = np.maximum(np.ceil(N / X.SPLIT_KV), 1.0)
    P = np.maximum(B * T / float(sms), 1.0)
    item = X.SPLIT_KV * key_bytes * float(sms)
    G = max(int(np.max(g, initial=1.0)), 2)
    k = np.arange(G)
    live = k[None, :] < g[:, None]
    # a shape's rows past its g sort last (the circle's length P beyond any point) and their gaps are not counted
    pts = np.sort(np.where(live, np.mod(k[None, :] * T[:, None], P[:, None]), 2.0 * P[:, None]), axis=1)
    inner = np.diff(pts, axis=1)                                   # gap j between the j-th and (j+1)-th points
    wrap = P - pts[np.arange(len(P)), np.maximum(g, 1.0).astype(int) - 1] + pts[:, 0]
    gaps = np.concatenate([np.where(live[:, 1:], inner, 0.0), wrap[:, None]], axis=1)
    counted = np.concatenate([live[:, 1:], (g > 1.0)[:, None]], axis=1)
    dist = np.maximum(gaps, 1.0) * item / float(l2_bytes)
    h = np.where(counted & (dist <= FLATTENED_L2_REUSE_SHARE), 1.0 - gaps / P[:, None], 0.0)
    return (h.sum(axis=1) / np.maximum(g - 1.0, 1.0)).reshape(shape)


def add_deepgemm_paged_logits(b, B, q, N, heads, head_dim, count, sms: int, kind: str = "indexer_dg",
                              rows_sharing_keys=1, l2_bytes: float = 0.0) -> None:
    """DeepGEMM fp8_paged_mqa_logits for B sequences of q query rows (next_n) over N cached keys (simulator/kernels/
    indexer.py): min(items, SMs) persistent CTAs, each walking ceil(items / SMs) 256-key items (serial_iters), kind
    indexer_dg (terms borrowed until measured: simulator/kernels/indexer.py). Flops of whole 256-key items (a
    partial split is computed in full); the key cache (fp8 + one fp32 scale per 128 values) read once per sequence;
    fp32 logits written; next_n - 1 exposed extra-row tails (sync_steps: simulator/calibration/fit_deepgemm_indexer.py
    verify_row_tail_us, the fitted YAML's sync_us). `kind` indexer_dg_cold prices keys that come from HBM (the
    pages' stream after the first item's dependent loads: hwmodels/roofline.py CHAIN_COLD_HEAD)."""
    from simulator.kernels import indexer as X

    R = B * q
    ctas, chain = X.paged_chain(B, N, sms, q)
    keys = np.ceil(np.asarray(N, float) / X.SPLIT_KV) * X.SPLIT_KV
    key_bytes = head_dim + 4.0 * head_dim / 128
    g = np.asarray(rows_sharing_keys, float)
    # sequences that are rows of one request walk its keys again: the later rows' walks re-read them from the L2 as far
    # as the schedule's reuse distance lets them (flattened_rows_hit; FLATTENED_ROWS_L2); the share is priced as hits
    reread = 0.0
    if FLATTENED_ROWS_L2 and l2_bytes > 0 and np.any(g > 1.0):
        if FLATTENED_ROWS_HIT == "schedule":
            hit = flattened_rows_hit_schedule(B, N, g, sms, l2_bytes, key_bytes)
        else:
            hit = flattened_rows_hit(B, N, sms, l2_bytes, key_bytes)
        reread = B * N * key_bytes * (g - 1.0) / g * hit
    b.add("indexer_logits", kind, flops=2.0 * R * keys * heads * head_dim + 3.0 * R * keys * heads,
          bytes_read=B * N * key_bytes + R * heads * head_dim + R * heads * 4.0,
          reread_bytes=reread, working_set=1.0,
          bytes_written=R * N * LOGIT_BYTES, parallel_units=ctas, serial_iters=chain,
          sync_steps=np.asarray(q, float) - 1.0, dtype="fp8", count=count)


#: the indexer's flattened MTP rows re-read their request's keys from the L2 (add_deepgemm_paged_logits
#: rows_sharing_keys). The MTP rows grid (lab/kernels/deepgemm_indexer_mtp_grid.csv, 1 x H200, blind) priced them
#: without it: distinct-sequence controls 0.6 / 1.8 %, flattened rows of 2 8.3 / 34.9 % (+42 % at 32 x 32K), of 3-4
#: +41.6 %: the re-reads hit (32 rows of 16 requests x 32K keys took 27.8 us, 36 distinct 43.7), as far as the
#: schedule's reuse distance lets them (96 rows of 16K gained nothing: flattened_rows_hit, built after grid 1, LOOKED-AT
#: there). Judged on the second MTP rows grid (12 new shapes, blind, prices committed 7e42f005): 6.2 / 16.7 %, 1 of 2
#: regimes (rows of 3-4 3.2 / 13.5 %; rows of 2 11.6 / 15.2 %, missed), against every row's keys from HBM 37.0 / 62.8 %,
#: 0 of 2. SHIPPED; False = every row's keys from HBM (the rule before)
FLATTENED_ROWS_L2 = True


def add_paged_logits_metadata(b, B, sms: int, count=1.0) -> None:
    """get_paged_mqa_logits_metadata: one 32-thread CTA (a prefix sum over the batch's 256-key splits and a binary
    search per SM) that the engine launches once per step before the layers (ASSUMPTION: SGLang's DSA backend builds
    the schedule with the step's metadata and every layer's indexer reuses it); priced as one small elementwise
    launch."""
    b.add("indexer_metadata", "elementwise", flops=0.0, bytes_read=4.0 * np.asarray(B, float),
          bytes_written=8.0 * (sms + 1), parallel_units=1.0, dtype="fp32", count=count)


def add_deepgemm_prefill_logits(b, B, P, heads, head_dim, count, sms: int) -> None:
    """DeepGEMM fp8_mqa_logits over B causal prompts of P tokens in one ragged launch (simulator/kernels/indexer.py):
    min(query blocks, SMs) persistent CTAs over query blocks of 128 / heads rows, CTA s taking blocks s, s + SMs, ...,
    each block walking its causal key range in 256-key blocks; the chain is the busiest CTA's key blocks
    (prefill_busiest: for B prompts the summed blocks spread over the CTAs plus one prompt's imbalance), kind
    indexer_dg_prefill (terms borrowed until measured: simulator/kernels/indexer.py). Flops of whole blocks; the
    key cache read once per prompt (re-reads by later query blocks hit L2); fp32 logits of the causal pairs."""
    from simulator.kernels import indexer as X

    P = np.asarray(P, float)
    Bf = np.asarray(B, float)
    bq = max(1, X.BLOCK_QH // int(heads))
    nq = np.ceil(P / bq)
    busiest1, total1 = X.prefill_busiest(P, P, heads, sms)
    ctas = np.minimum(Bf * nq, sms)
    chain = Bf * total1 / ctas + (busiest1 - total1 / np.minimum(nq, sms))
    key_bytes = head_dim + 4.0 * head_dim / 128
    pairs = P * (P + 1) / 2.0
    flops_block = 2.0 * bq * heads * head_dim * X.BLOCK_KV_PREFILL + 3.0 * bq * heads * X.BLOCK_KV_PREFILL
    b.add("indexer_logits", "indexer_dg_prefill", flops=Bf * total1 * flops_block,
          bytes_read=Bf * P * (key_bytes + heads * (head_dim + 4.0)), bytes_written=Bf * pairs * LOGIT_BYTES,
          parallel_units=ctas, serial_iters=np.maximum(chain, 1.0), dtype="fp8", count=count)


#: FlashMLA's sparse decode (the kernel DeepSeek-V3.2's DSA attention runs on Hopper: flash_mla_with_kvcache with
#: indices; deepseek-ai/FlashMLA @ 9241ae3, the sm90 sparse decode launcher, and the frozen copy in sgl_flash_mla 1.0.0)
#: takes 64 or 128 query heads, a CTA per 64 heads; fewer heads a device (DeepSeek-V3.2 at TP 4 / 8: 32 / 16) are padded
#: to 64 by the engine and cost the padded heads' work. Read from the source after the first FlashMLA sparse grid's
#: TP8 rows ran -44..-57 % fast under the unpadded price (simulator/calibration/flashmla_sparse_h200.py, 1 x H200);
#: judged blind on its second grid (24 new shapes at TP 1 / 2 / 4 / 8, s_q 1-4; prices committed cbb5751): 2 of 4
#: regimes against the unpadded 1 of 4, 8.1 / 16.1 % against 41.8 / 55.7 %: SHIPPED as the strategy's `pad_heads`
#: default (0 = unpadded, the rule before). The sparse prefill pads the same way (`sparse_prefill: flashmla`, judged on
#: its own grid: SPARSE_PREFILL_SOURCE)
PAD_HEADS_CANDIDATE = 64

#: where `sparse_kernel: flashmla` was judged: the third FlashMLA sparse grid (22 new shapes at TP 1 / 2 / 4 / 8, s_q
#: 1-4, 1 x H200, prices committed ce081db before the call; the tile terms fitted on grid 1 alone): 3 of 4 regimes,
#: 3.6 / 11.5 %, against the generic kind's (heads padded) 2 of 4, 9.6 / 16.1 %: SHIPPED as the default. Still missed:
#: padded heads at batch <= 16 (+12 %: the split requests' combine and segments). Then the combine as FlashMLA's combine
#: kernel (simulator/kernels/flashmla_sparse.py COMBINE_CHAIN) with the tile terms refitted on the kernel's own spans
#: (the SPANS campaign) won the fourth grid (39 new shapes, prices committed f10a2f5 before the call): 2.6 / 7.1 %, 4 of
#: 4 regimes, against 4.5 / 11.7 %, 4 of 4 (padded heads at batch <= 16: 2.9 / 7.0 against 8.5 / 18.3 %)
SPARSE_KERNEL_SOURCE = "simulator/calibration/flashmla_sparse_h200.py SHAPES4"

#: where `sparse_prefill: flashmla` was judged: FlashMLA's sparse prefill (sm90 sparse_attn_fwd_kernel, grid (h / 64) x
#: rows; every row walks its k index tiles, the -1 entries masked, not skipped, since V3.2 engines pass no topk_length)
#: first looked at on 15 prompts of 2K-32K at TP 1 / 2 / 8 (the generic kind 68.7 / 264.0 %: its parallel units were
#: heads x P / 128 / 64, a handful of CTAs), then judged blind on 12 new prompts at TP 1 / 2 / 4 / 8 (prices committed
#: 58514ef before the call): 3.6 / 10.5 %, 3 of 3 regimes, against the generic kind's 42.0 / 278.2 %, 0 of 3: SHIPPED;
#: no constant fitted (the attention kind's own terms price the padded work)
SPARSE_PREFILL_SOURCE = "simulator/calibration/flashmla_sparse_h200.py PREFILL_SHAPES2"

#: the engines' row layouts for FlashMLA's sparse decode kernel, read from their sources (2026-11-29):
#:   SGLang (python/sglang/srt/layers/attention/nsa_backend.py, v0.5.10.post1; dsa_backend.py in v0.5.23,
#:   _forward_flashmla_kv): q_all.view(-1, 1, h, d) and indices page_table_1.unsqueeze(1): every query row of a decode,
#:   verification or draft-extend step its own request of one row (the page table repeat_interleave'd per draft token),
#:   the heads padded to 64 / 128; on Hopper its default DSA backend is flashmla_kv for prefill too (v0.5.23
#:   arg_groups/overrides.py: "trtllm" if major >= 10 else "flashmla_kv"), so a prompt's rows run this decode kernel over
#:   the fp8 cache, no dequantization; the scheduler metadata once per step, reused by every layer
#:   vLLM (vllm/v1/attention/backends/mla/flashmla_sparse.py, v0.33.0 @ 4ba787ec9): with an fp8 cache and fewer than 32
#:   heads a device (MIN_HEADS_FOR_BF16_PREFILL; DeepSeek-V3.2 at TP8) every token of the step, prefill rows too, goes
#:   as ONE request, q.unsqueeze(0): (1, T, h, d); otherwise decode rows keep their request (reshape_query_for_spec_decode:
#:   (requests, 1 + draft, h, d)) and prefill gathers and up-converts the fp8 cache (cp_gather_and_upconvert_fp8_kv_cache)
#:   for flash_mla_sparse_fwd
#:   TensorRT-LLM (tensorrt_llm/_torch/modules/attention.py @ 00547a25, forward_generation_sparse_mla /
#:   forward_sparse_mla_kvcache_bf16; attention_backend/sparse/dsa/module.py @ 047098b7): on SM90 both generation and
#:   context rows go through FlashMLA's sparse PREFILL kernel, flash_mla_sparse_fwd(q (tokens, heads padded to a
#:   multiple of 64, 576), the all-layer bf16 pool, indices (tokens, 1, k)): every generation row its own row, the cache
#:   bf16 (sparse_kernel prefill_kernel); SM100 runs trtllm-gen kernels (not modelled)
#: The kernel at those layouts, priced before measuring (FlashMLA sparse grid 5, 1 x H200, blind): flattened decode rows
#: 2.5 / 3.4 %; rows of one shared sequence +30 % until the L2 re-reads were priced (flashmla_sparse.SHARED_ROWS_L2, grid
#: 6: 3 of 3 regimes, 4.0 / 6.6 %; one request of distinct sequences' rows 4.6 / 6.2 %)
ROW_LAYOUT_SOURCE = "simulator/calibration/flashmla_sparse_h200.py SHAPES5, SHAPES6"

#: TensorRT-LLM's decode rows through the sparse prefill kernel priced as their own kind (attn_flashmla_sparse_fwd:
#: the per-SM stream ceiling and the HBM share, hwmodels.roofline SM_STREAM_CEILING / TAIL / SOFT), its terms fitted on
#: the rows grid (simulator/calibration/flashmla_sparse_h200.py fit_rows, LOOKED-AT: the first look, the generic kind's
#: op over the rows, was 1 of 4 regimes: 19 rows, one wave +19..+27 %, several waves -18 %). Judged on the second rows
#: grid (22 new shapes, blind, prices committed 2b8e91b): 3.8 / 9.9 %, 4 of 4 regimes, against the first look's op
#: 16.9 / 26.7 %, 1 of 4. SHIPPED; False = the sparse prefill's generic op (the first look)
SPARSE_FWD_ROWS_KIND = True

#: SGLang's DSA decode over a bf16 cache on Hopper (its default there: server_args _set_default_nsa_kv_cache_dtype ->
#: bfloat16 on SM90, _set_default_nsa_backends -> nsa_decode_backend "fa3"; nsa_backend.py _forward_fa3 @ v0.5.10.post1,
#: dsa_backend.py later): flash_attn_with_kvcache(q = q_rope (rows, h, 64), k_cache / v_cache = the layer's pool's RoPE
#: and latent columns as pages of one token, qv = q_nope (rows, h, 512), page_table (rows, index_topk) of slot indices,
#: cache_seqlens = min(seq_len, index_topk), cu_seqlens_q = arange(rows + 1), max_seqlen_q 1, num_splits 0): every
#: decode / verification / draft-extend row its own request, FA3's hdim 64 x 512 kernel with qv
#: (simulator/kernels/fa3.py; sgl-kernel compiles it from its fork sgl-project/sgl-attn, modelled from upstream hopper/
#: @ 0251105a and measured there). Judged on the MLA decode grid 2 (38 shapes, 1 x H200, blind): 2.9 / 7.5 %, 7 of 7
#: regimes; the first look from source 15.9 / 25.6 %, 0 of 7 (simulator/calibration/fa3_sparse_mla_h200.py). A row's
#: gathers all from HBM: a verification's rows re-reading their request's keys through the L2 (row_overlap) are not
#: priced on this path (ASSUMPTION, on the slow side)
FA3_DECODE_SOURCE = "simulator/calibration/fa3_sparse_mla_h200.py SHAPES2"
#: True = an MTP verification's flattened rows on the fa3 path gather their request's re-selected keys (row_overlap)
#: from the L2: the call's HBM bytes are the rows' distinct tokens' (row_unique_tokens); False = every row's gathers
#: from HBM (the rule judged on grid 2). Judged on the FA3 MTP rows grid (simulator/calibration/fa3_sparse_mla_h200.py
#: SHAPES3: 17 shapes of s_q 2-4 at overlaps 0 / 0.44 / 0.8, 1 x H200, prices committed 4a50143 before the call): main
#: 2.1 / 6.9 %, 3 of 3 regimes, the candidate 11.1 / 18.8 %, 1 of 3 (-10..-26 % at overlaps 0.44 / 0.8): NOT SHIPPED.
#: FA3's gathers of a request's re-selected keys cost what fresh ones do (its per-block chain, not the HBM, sets the
#: time), where FlashMLA's sparse decode gains from them (SHARED_ROWS_L2)
FA3_ROW_OVERLAP = False
ROW_LAYOUTS = ("per_request", "flattened", "one_request")

#: row_overlap's default: adjacent query rows of one request select mostly the same keys. The GVR document (seeds/001,
#: Fig. 2 and its ablation; simulator/traces/published.yaml) records the raw overlap of consecutive decode steps' top-k
#: (the same adjacency): ~1.5 % in layers 0-1, ~44 % in layers 20-60; layers 2-19 are not quoted (ASSUMPTION: like
#: 20-60, as the gvr top-k strategy assumes). Layer-weighted over DeepSeek-V3.2's 61: (2 x 0.015 + 59 x 0.44) / 61 =
#: 0.43 (one share for every layer: the attention op is one row per step). The mechanism (the rows' re-reads priced by
#: SHARED_ROWS_L2 at a given overlap) was judged on the MTP rows grid (17 new shapes at overlaps 0 / 0.44 / 0.8, blind,
#: prices committed 32f44385): 2.8 / 5.1 %, 3 of 3 regimes, against every row's keys its own, 3.0 / 9.7 %, 3 of 3
#: (shipped by the tie rule). Sensitivity (DeepSeek-V3.2, TP8, H200, 32K, the sparse MLA of an MTP-1 step at batch 32):
#: see docs/KNOWN_GAPS.md (0 / 0.43 / 0.8)
ROW_OVERLAP_DEFAULT = 0.43

#: the paged indexer's MTP rows (read, not measured: the flattened rows are the measured next_n 1 kernel at batch x rows;
#: the L2 re-reads of a request's keys by its later rows are not counted, an ASSUMPTION on the slow side):
#:   DeepGEMM 54e2261 csrc/jit_kernels/impls/sm90_fp8_mqa_logits.hpp sm90_fp8_paged_mqa_logits:
#:   DG_HOST_ASSERT(next_n == 1 or next_n == 2); SM100 any next_n (csrc/apis/attention.hpp: next_n >= 1)
#:   SGLang dsa_backend.py @ 0034a380 _build_paged_mqa_schedule_2d_ctx_lens: DG-native next_n only on SM100 ("for now
#:   DG-native is SM100+ only"); on SM90 every verification row its own sequence (q_fp8.unsqueeze(1), the block table
#:   repeat_interleave'd)
#:   TensorRT-LLM attention_backend/sparse/dsa.py @ 00e3c1a5 use_expanded_buffers_for_mtp: SM90 and max_draft_tokens > 1
#:   -> q_decode.view(-1, 1, ...), kv_lens and the block table expanded per row
#:   vLLM v1/attention/backends/mla/indexer.py @ 0023368d _use_flattening: SM90 flattens unless next_n is natively
#:   supported (DeepGEMM main: 1, 2)
INDEXER_ROWS_SOURCE = "simulator/strategies/dsa.py INDEXER_ROWS_SOURCE's comment"


def indexer_rows_flattened(mode: str, architecture: str, q_rows) -> np.ndarray:
    """Where the paged indexer runs a step's rows as sequences of one row (indexer_rows, INDEXER_ROWS_SOURCE)."""
    q = np.asarray(q_rows, float)
    if mode == "flattened":
        return q > 1
    if mode == "native":
        return np.zeros(q.shape, bool)
    return (q > 2) & (architecture == "hopper")


def row_unique_tokens(batch, q_rows, context, k, overlap: float):
    """The distinct cached tokens a decode step's rows gather: per request min(N, k) for its first row and (1 - overlap)
    of that for each later row (row_overlap); None where no row re-reads another's (one row a request, or no overlap)."""
    q = np.asarray(q_rows, float)
    if overlap <= 0.0 or not np.any(q > 1):
        return None
    T = np.minimum(np.asarray(context, float), float(k))
    return np.asarray(batch, float) * T * (1.0 + (q - 1.0) * (1.0 - overlap)) * np.ones(np.shape(context))


def kernel_rows(batch, q_rows, layout: str):
    """(requests, rows a request) FlashMLA's sparse decode sees for `batch` sequences of `q_rows` query rows each under
    an engine's row `layout` (ROW_LAYOUT_SOURCE)."""
    batch, q_rows = np.asarray(batch, float), np.asarray(q_rows, float)
    if layout == "flattened":
        return batch * q_rows, np.ones_like(batch * q_rows)
    if layout == "one_request":
        return np.ones_like(batch * q_rows), batch * q_rows
    return batch, q_rows


def decode_heads(heads_dev, pad: int):
    """The query heads sparse MLA decode computes for `heads_dev` heads a device: rounded up to a multiple of `pad`
    (0: as they are)."""
    if not pad:
        return heads_dev
    return np.ceil(np.asarray(heads_dev, float) / pad) * pad


@register
class DSAAttention(AttentionStrategy):
    name = "dsa"
    description = "DeepSeek Sparse Attention: lightning indexer + exact top-k + sparse MLA over k entries"
    selects_tokens = True
    decode_cost_per_row = True   # sparse MLA over min(N, k) entries; the top-k only on rows longer than k
    params = {
        "index_topk": Param(None, "the model file's dsa_indexer.topk (DeepSeek-V3.2-Exp index_topk = 2048)",
                            lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool) and v >= 1),
                            "null (the model's index_topk) or a positive integer (e.g. 512, 1024, 2048)"),
        "indexer_kernel": Param("deepgemm", "DeepGEMM's fp8 (paged) MQA-logits kernels, as SGLang / TensorRT-LLM run "
                                "them (module docstring); `measured`: the project's measured indexer kernel",
                                lambda v: v in ("deepgemm", "measured"), "deepgemm or measured"),
        "indexer_keys": Param("cold", "where the paged indexer finds its keys: `cold` (each layer reads its own "
                              "layer's keys, ~1 GB of weights and keys after the last use of its pages: from HBM, kind "
                              "indexer_dg_cold), `warm` (the keys in L2, as a benchmark repeating one layer finds them: "
                              "kind indexer_dg)", lambda v: v in ("cold", "warm"), "cold or warm"),
        "split_tokens": Param(256, "same split-KV chunk as attention: dense (ASSUMPTION until calibrated)",
                              lambda v: isinstance(v, int) and v >= 16, "an integer >= 16"),
        "sparse_kernel": Param("flashmla", "decode's sparse MLA: `flashmla` (FlashMLA's sparse decode as its "
                               "scheduler's busiest part: simulator/kernels/flashmla_sparse.py, kinds "
                               "attn_flashmla_sparse[_pair], fitted on the H200, judged blind on its fourth grid: "
                               "SPARSE_KERNEL_SOURCE), `prefill_kernel` (every decode row a row of FlashMLA's sparse "
                               "PREFILL kernel over the bf16 cache, as TensorRT-LLM runs DSA's generation on Hopper: "
                               "ROW_LAYOUT_SOURCE), `fa3` (every row its own request of FlashAttention-3's hdim 64 x "
                               "512 kernel with qv over the top-k tokens as pages of one, over a bf16 cache: SGLang's "
                               "default on Hopper, FA3_DECODE_SOURCE) or `generic` (the attention kind over min(N, k) "
                               "entries, split by split_tokens: the rule before)",
                               lambda v: v in ("generic", "flashmla", "prefill_kernel", "fa3"),
                               "generic, flashmla, prefill_kernel or fa3"),
        "sparse_prefill": Param("flashmla", "prefill's sparse MLA: `flashmla` (FlashMLA's sparse prefill: every row's "
                                "k entries at the padded heads, a CTA per (64 heads, row); judged blind on the second "
                                "FlashMLA sparse prefill grid: SPARSE_PREFILL_SOURCE), `decode_kernel` (the prompt's "
                                "rows through FlashMLA's fp8 sparse DECODE kernel, laid out by decode_rows, re-reading "
                                "the prompt's cache from the L2: SGLang's flashmla_kv on Hopper, vLLM's fp8 path below "
                                "32 heads; ROW_LAYOUT_SOURCE) or `generic` (the attention kind over sum_i min(i, k) "
                                "pairs at the heads a device holds: the rule before)",
                                lambda v: v in ("generic", "flashmla", "decode_kernel"),
                                "generic, flashmla or decode_kernel"),
        "short_prompt_dense": Param(False, "a prompt of at most index_topk tokens prefills with dense MHA: SGLang's "
                                    "MHA_ONE_SHOT on SM90 / SM100 (nsa_backend set_nsa_prefill_impl: max_kv_len <= "
                                    "nsa_index_topk), priced as the dense strategy's MLA prefill of kernel flashmla "
                                    "(FA3's varlen 192 / 128 forward on the decompressed heads; the layer's GEMMs "
                                    "stay the absorbed path's: an ASSUMPTION); false = the sparse_prefill kernel for "
                                    "every prompt", lambda v: isinstance(v, bool), "true or false"),
        "indexer_rows": Param("auto", "how the paged indexer takes an MTP step's 1 + draft rows: `native` (a request's "
                              "rows as DeepGEMM's next_n), `flattened` (every row a sequence of next_n 1 re-walking its "
                              "request's keys: SGLang on SM90, TensorRT-LLM / vLLM where next_n is unsupported) or "
                              "`auto` (flattened on Hopper above next_n 2, whose fp8_paged_mqa_logits asserts next_n "
                              "1 or 2; native elsewhere); INDEXER_ROWS_SOURCE",
                              lambda v: v in ("auto", "native", "flattened"), "auto, native or flattened"),
        "row_overlap": Param(ROW_OVERLAP_DEFAULT, "the share of a query row's k selected keys the next row of the "
                             "same request keeps (an MTP verification's consecutive rows): their gathers re-read those "
                             "keys from the L2 (flashmla_sparse.SHARED_ROWS_L2, sparse_kernel flashmla); default "
                             "ROW_OVERLAP_DEFAULT (an ASSUMPTION from the GVR document's recorded overlap); 0 = every "
                             "row's keys its own",
                             lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and 0.0 <= v <= 1.0,
                             "a share in [0, 1]"),
        "decode_rows": Param("per_request", "how the engine hands a step's query rows to FlashMLA's sparse decode: "
                             "`per_request` (a request's 1 + draft rows as its s_q: vLLM at >= 32 heads a device), "
                             "`flattened` (every row its own request of one row: SGLang) or `one_request` (every row of "
                             "the step as one request: vLLM's fp8 path below 32 heads); ROW_LAYOUT_SOURCE",
                             lambda v: v in ROW_LAYOUTS, "per_request, flattened or one_request"),
        "pad_heads": Param(PAD_HEADS_CANDIDATE, "decode's query heads padded up to a multiple of this (64: FlashMLA's "
                           "sparse decode takes 64 or 128 query heads, so an engine pads fewer to 64; judged blind on "
                           "the FlashMLA sparse grid 2, module constant PAD_HEADS_CANDIDATE); 0 = the heads a device "
                           "holds, unpadded (the rule before)", lambda v: isinstance(v, int) and v >= 0,
                           "0 or a positive integer"),
    }

    def refuse(self, combo):
        if self.sparse_kernel == "flashmla" and not combo.flashmla_sparse_priced:
            return ("attention 'dsa' with sparse_kernel 'flashmla' needs FlashMLA sparse decode's fitted terms on this "
                    "device (the H200's, the H100-SXM's and the devices that borrow them have them); use attention: "
                    "{dsa: {sparse_kernel: generic}} for the generic attention kind")
        if self.sparse_prefill == "decode_kernel" and not combo.flashmla_sparse_priced:
            return ("attention 'dsa' with sparse_prefill 'decode_kernel' needs FlashMLA sparse decode's fitted terms on "
                    "this device; use sparse_prefill: flashmla or generic")
        if self.sparse_kernel == "prefill_kernel" and SPARSE_FWD_ROWS_KIND and not combo.flashmla_sparse_rows_priced:
            return ("attention 'dsa' with sparse_kernel 'prefill_kernel' needs the sparse prefill kernel's decode-row "
                    "terms (kind attn_flashmla_sparse_fwd) on this device (the H200's and the H100-SXM's have them); "
                    "use sparse_kernel: flashmla or generic")
        if self.sparse_kernel == "fa3":
            if combo.target.architecture != "hopper":
                return (f"attention 'dsa' with sparse_kernel 'fa3': FlashAttention-3's hdim 64 x 512 qv kernels are "
                        f"Hopper's (sm_90a; SGLang decodes DSA with trtllm on SM100); this device is "
                        f"{combo.target.architecture}: use sparse_kernel: flashmla or generic")
            if combo.kv_dtype not in ("bf16", "fp16"):
                return (f"attention 'dsa' with sparse_kernel 'fa3' reads a bf16 cache (FlashAttention-3's qv kernels "
                        f"are bf16 / fp16 only: hopper/ HasQv needs !Is_FP8); kv_dtype is {combo.kv_dtype}: set "
                        "kv_dtype: bf16, or sparse_kernel: flashmla for an fp8 cache (SGLang's flashmla_kv)")
        if self.decode_rows != "per_request" and self.sparse_kernel == "generic":
            return (f"attention 'dsa': decode_rows '{self.decode_rows}' lays a step's rows out for FlashMLA's sparse "
                    "decode kernel; it needs sparse_kernel: flashmla (the generic kind has no rows to lay out)")
        return None

    def model_problem(self, model):
        if model.dsa_indexer is None or model.mla is None:
            return (f"attention 'dsa' needs an MLA model with a DSA lightning indexer (dsa_indexer block); "
                    f"{model.name} has none (e.g. use DeepSeek-V3.2-Exp)")
        return None

    def k(self, combo) -> int:
        return int(self.index_topk if self.index_topk is not None else combo.model.dsa_indexer.topk)

    def selection_k(self, combo) -> int:
        return self.k(combo)

    # ---- shared pieces ------------------------------------------------------------------------------
    def _indexer_proj(self, b, combo, rows, count) -> None:
        m = combo.model
        ix, a = m.dsa_indexer, m.mla
        gemm(b, "indexer_q_proj", combo, rows, a.q_lora_rank, ix.heads * ix.head_dim, count)
        gemm(b, "indexer_k_proj", combo, rows, m.hidden, ix.head_dim + ix.heads, count)
        rope = a.qk_rope_head_dim
        key_bytes = ix.head_dim * DTYPE_BYTES["fp8"] + 4.0 * ix.head_dim / 128
        b.add("indexer_rope_quant", "elementwise", flops=4.0 * rows * (ix.heads + 1) * (rope + ix.head_dim),
              bytes_read=rows * (ix.heads + 1) * ix.head_dim * ACT_BYTES,
              bytes_written=rows * (ix.heads * ix.head_dim + key_bytes), dtype="fp32", count=count)

    def decode_ops(self, b: OpBuilder, combo: Combo, shape: StepShape) -> None:
        """One decode step's DSA ops on a device. Under attention data parallelism (attn_dp > 1: SGLang's
        --enable-dp-attention) a device runs the indexer (its replicated projections too), the top-k and the sparse MLA
        for its 1 / attn_dp share of the sequences, at the heads of its attention TP group (attn_heads_dev: 128 at DP8
        for DeepSeek-V3.2); the reshards between the layouts are the body's (simulator/layers.py body_ops)."""
        m = combo.model
        ix, a = m.dsa_indexer, m.mla
        B, q, N = np.asarray(shape.batch, float) / combo.attn_dp, shape.query_rows, shape.context
        R = B * q
        count = shape.layers
        k = self.k(combo)
        self._indexer_proj(b, combo, R, count)
        if self.indexer_kernel == "deepgemm":
            kind = "indexer_dg_cold" if self.indexer_keys == "cold" else "indexer_dg"
            flat = np.broadcast_to(indexer_rows_flattened(self.indexer_rows, combo.target.architecture, q), np.shape(N))
            one = np.ones(np.shape(N))
            if flat.any():   # every row a sequence of next_n 1 (indexer_rows), the rows of a request sharing its keys
                add_deepgemm_paged_logits(MaskedBuilder(b, flat), B * q * one, one, N, ix.heads, ix.head_dim, count,
                                          combo.target.sm_count, kind, rows_sharing_keys=q * one,
                                          l2_bytes=combo.target.l2_bytes)
            if not flat.all():
                add_deepgemm_paged_logits(MaskedBuilder(b, ~flat), B * one, q * one, N, ix.heads, ix.head_dim, count,
                                          combo.target.sm_count, kind)
            add_paged_logits_metadata(b, np.where(flat, B * q, B), combo.target.sm_count)
        else:
            add_indexer_logits(b, R, B, N, ix.heads, ix.head_dim, ix.dtype, count)
        select = N > k  # a row no longer than k keeps everything (indexerTopK.cu rowLen <= topK shortcut)
        if np.any(select):
            combo.topk.add_ops(MaskedBuilder(b, select), combo, R, N, k, count, "decode")
        # sparse MLA over T = min(N, k) gathered latent entries per row
        T = np.minimum(N, float(k))
        lat = a.kv_lora_rank + a.qk_rope_head_dim
        H = decode_heads(combo.attn_heads_dev, self.pad_heads)
        if self.sparse_kernel == "prefill_kernel":   # every decode row a row of flash_mla_sparse_fwd (TensorRT-LLM, SM90)
            if SPARSE_FWD_ROWS_KIND:
                self._sparse_fwd_rows(b, combo, B * q * np.ones(np.shape(N)), float(k), count, combo.attn_heads_dev)
            else:
                self._sparse_fwd(b, combo, B * q * np.ones(np.shape(N)), float(k), count, combo.attn_heads_dev)
            return
        if self.sparse_kernel == "fa3":   # every row its own request of FA3's qv kernel (FA3_DECODE_SOURCE)
            from simulator.kernels import fa3 as FA3
            from simulator.kernels.production import emit
            one = np.ones(np.shape(N))
            share = 1.0
            uniq = row_unique_tokens(B, q, N, k, self.row_overlap) if FA3_ROW_OVERLAP else None
            if uniq is not None:   # FA3_ROW_OVERLAP: the rows' distinct tokens from HBM
                share = uniq / np.maximum(B * q * T * one, 1.0)
            launches, _ = FA3.fa3(B * q * one, one, T * one, combo.attn_heads_dev * one, one,
                                  float(a.qk_rope_head_dim), 2.0, 1.0, combo.target.sm_count,
                                  dv=float(a.kv_lora_rank), qv=float(a.kv_lora_rank), T_bound=float(k) * one,
                                  kv_hbm_share=share)
            emit(b, launches, combo.target.sm_count, count=count)
            return
        if self.sparse_kernel == "flashmla":   # every index tile walked, -1 entries too (the kernel skips none)
            from simulator.kernels import flashmla_sparse
            kb, kq = kernel_rows(B * np.ones(np.shape(N)), q * np.ones(np.shape(N)), self.decode_rows)
            flashmla_sparse.add_ops(b, kb, kq, H * np.ones(np.shape(N)), float(k), lat, a.kv_lora_rank, combo.kvbytes,
                                    ACT_BYTES, ACT_DTYPE, count, combo.target.sm_count,
                                    unique_tokens=row_unique_tokens(B, q, N, k, self.row_overlap))
            return
        splits = np.maximum(1.0, T / self.split_tokens)
        split = T > self.split_tokens
        out = R * H * a.kv_lora_rank
        partials = splits * (out + R * H) * 4.0
        b.add("attention", "attention", flops=2.0 * R * H * T * (lat + a.kv_lora_rank),
              bytes_read=R * T * (lat * combo.kvbytes + 4.0) + splits * R * H * lat * ACT_BYTES,
              bytes_written=np.where(split, partials, out * ACT_BYTES),
              parallel_units=R * splits * np.ceil(H / FLASHMLA_HEAD_TILE), dtype=ACT_DTYPE, count=count)
        b.add("attention_combine", "elementwise", flops=3.0 * out * splits, bytes_read=partials,
              bytes_written=out * ACT_BYTES, dtype="fp32", count=count, where=split)

    def prefill_ops(self, b: OpBuilder, combo: Combo, shape: StepShape) -> None:
        m = combo.model
        ix, a = m.dsa_indexer, m.mla
        B, P = shape.batch, shape.context
        count = shape.layers
        k = float(self.k(combo))
        rows = B * P
        self._indexer_proj(b, combo, rows, count)
        pairs = P * (P + 1) / 2.0
        key_bytes = ix.head_dim + 4.0 * ix.head_dim / 128
        if self.indexer_kernel == "deepgemm":
            add_deepgemm_prefill_logits(b, B, P, ix.heads, ix.head_dim, count, combo.target.sm_count)
        else:
            b.add("indexer_logits", "attention", flops=B * pairs * (2.0 * ix.heads * ix.head_dim + 3.0 * ix.heads),
                  bytes_read=B * P * (key_bytes + ix.heads * ix.head_dim), bytes_written=B * pairs * LOGIT_BYTES,
                  parallel_units=0, dtype=ix.dtype, count=count)
        select = P > k
        if np.any(select):
            tr, tl = prefill_topk_rows(B, P, k)
            combo.topk.add_ops(MaskedBuilder(b, select), combo, tr, tl, int(k), count, "prefill")
        lat = a.kv_lora_rank + a.qk_rope_head_dim
        short = np.broadcast_to(np.asarray(P, float) <= k, np.shape(np.asarray(B, float) * P)) & self.short_prompt_dense
        if short.any():   # MHA_ONE_SHOT: a prompt of at most k tokens attends densely (short_prompt_dense)
            from simulator.strategies.dense import DenseAttention
            DenseAttention(kernel="flashmla").layout_prefill_ops(MaskedBuilder(b, short), combo.attn_layout, shape)
            if short.all():
                return
            b = MaskedBuilder(b, ~short)
        if self.sparse_prefill == "decode_kernel":
            # the prompt's rows through FlashMLA's fp8 sparse decode kernel (ROW_LAYOUT_SOURCE): flattened into requests
            # of one row (SGLang) or one request of every row (vLLM below 32 heads), every row's k / 64 tiles, the
            # prompts' caches re-read from the L2 (flashmla_sparse.SHARED_ROWS_L2: the distinct tokens are the prompts')
            from simulator.kernels import flashmla_sparse
            H = decode_heads(combo.prefill_heads_dev, self.pad_heads)
            lay = "one_request" if self.decode_rows == "one_request" else "flattened"
            kb, kq = kernel_rows(B * P, 1.0, lay)
            flashmla_sparse.add_ops(b, kb, kq, H * np.ones(np.shape(kb)), k, lat, a.kv_lora_rank, combo.kvbytes,
                                    ACT_BYTES, ACT_DTYPE, count, combo.target.sm_count, unique_tokens=B * P)
            return
        if self.sparse_prefill == "flashmla":
            self._sparse_fwd(b, combo, B * P, k, count)
            return
        self._prefill_generic(b, combo, B, P, k, lat, count)

    def _sparse_fwd(self, b, combo, rows, k, count, heads=None) -> None:
        """FlashMLA's sparse prefill kernel (flash_mla_sparse_fwd, sm90 sparse_attn_fwd_kernel: grid (h / 64) x the
        rows, not persistent) over `rows` query rows: every row walks all ceil(k / 64) index tiles, the -1 entries of
        a prompt's first k rows masked, not skipped (engines pass no topk_length for V3.2); query heads padded to 64
        (pad_heads); priced with the generic attention kind's terms. heads: a device's (None: a prompt's, prefill_heads_dev)."""
        a = combo.model.mla
        lat = a.kv_lora_rank + a.qk_rope_head_dim
        H = decode_heads(combo.prefill_heads_dev if heads is None else heads, self.pad_heads)
        io = rows * (lat * ACT_BYTES + H * lat * ACT_BYTES + H * a.kv_lora_rank * ACT_BYTES)
        b.add("attention", "attention", flops=2.0 * H * rows * k * (lat + a.kv_lora_rank),
              bytes_read=io * 0.6, bytes_written=io * 0.4,
              parallel_units=rows * np.ceil(H / FLASHMLA_HEAD_TILE), dtype=ACT_DTYPE, count=count)

    def _sparse_fwd_rows(self, b, combo, rows, k, count, heads=None) -> None:
        """FlashMLA's sparse prefill kernel over `rows` decode rows of distinct sequences (SPARSE_FWD_ROWS_KIND): a CTA
        per (64 heads, row), one resident per SM, each streaming its row's k bf16 tokens through its SM (the kind's
        per-SM stream ceiling) while the launch shares the HBM (the kind's memory efficiency); at 128 heads the row's
        second CTA re-reads the same tokens from the L2 (the DRAM serves a row once); every row's ceil(k / 64) tiles as
        the CTA's serial chain. heads: a device's (None: a prompt's, prefill_heads_dev)."""
        a = combo.model.mla
        lat = a.kv_lora_rank + a.qk_rope_head_dim
        H = decode_heads(combo.prefill_heads_dev if heads is None else heads, self.pad_heads)
        per_cta = np.ceil(H / FLASHMLA_HEAD_TILE)
        gathered = rows * k * lat * ACT_BYTES
        b.add("attention", "attn_flashmla_sparse_fwd", flops=2.0 * H * rows * k * (lat + a.kv_lora_rank),
              bytes_read=per_cta * gathered + rows * H * lat * ACT_BYTES, reread_bytes=(per_cta - 1.0) * gathered,
              working_set=np.minimum(rows * per_cta, combo.target.sm_count) * 2.0 * FLASHMLA_HEAD_TILE * lat * ACT_BYTES,
              bytes_written=rows * H * a.kv_lora_rank * ACT_BYTES, parallel_units=rows * per_cta,
              serial_iters=np.ceil(k / FLASHMLA_HEAD_TILE) * np.ones_like(rows), resident_ctas=1.0, dtype=ACT_DTYPE,
              count=count)

    def _prefill_generic(self, b, combo, B, P, k, lat, count) -> None:
        """The generic attention kind over sum_{i=1..P} min(i, k) causal pairs at the heads a device holds."""
        a = combo.model.mla
        pairs = P * (P + 1) / 2.0
        sparse_pairs = np.where(P <= k, pairs, k * (k + 1) / 2.0 + (P - k) * k)
        H = combo.prefill_heads_dev
        io = B * P * (lat * combo.kvbytes + H * lat * ACT_BYTES + H * a.kv_lora_rank * ACT_BYTES)
        b.add("attention", "attention", flops=2.0 * B * H * sparse_pairs * (lat + a.kv_lora_rank),
              bytes_read=io * 0.6, bytes_written=io * 0.4,
              parallel_units=B * H * np.maximum(1.0, P / 128.0) / FLASHMLA_HEAD_TILE, dtype=ACT_DTYPE, count=count)
