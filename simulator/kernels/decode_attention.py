"""How real decode-attention kernels parallelize: CTAs per (batch x KV head x split) and the split heuristics
of FlashDecoding-style kernels, per kernel family. Used by `attention: dense` with `kernel: <family>`.

A decode (or verification) step of B sequences, q query rows each, Hq query heads over Hkv KV heads (group
G = Hq / Hkv), T cached tokens of head dim d. Every family below reads each KV head's K/V once per CTA range
and writes, when it splits the range, fp32 partial outputs that a combine kernel merges. The op's
`parallel_units` is the family's CTA count and `serial_iters` the K/V tiles ONE CTA walks in sequence
(tokens per CTA / the family's tile of keys); hwmodels.roofline prices the CTAs in waves of the device's
resident slots (Efficiency.cta_slots of the family's op kind), each CTA's chain of iterations at the
family's measured iteration time, and the bytes against the device's bandwidth.

family          op kind      CTAs                                  split count S (source)
fa2             attn_fa2     B * Hkv * ceil(q*G/64) * S            FlashAttention-2 num_splits_heuristic
                             (q = 1: the G heads of a KV head       (Dao-AILab/flash-attention csrc/flash_attn/
                             packed, seqlenq_ngroups_swapped)        flash_api.cpp; set_params_splitkv passes
                             q > 1: B * Hq * ceil(q/64) * S          2 x SMs, 128-key blocks for d = 128; one
                                                                     split once the CTAs fill 80 % of 2 x SMs)
triton_splitkv  attn_triton  B * Hkv * S (the q*G rows of a KV       the same heuristic on B * Hkv * ceil(q*G/64)
                             head packed in one tile)                (lab/measure_regimes.py)
flex            attn_flex    ceil(q*G/BLOCK_M) * B * Hkv * S          S = 1, MEASURED: torch 2.11's compiled
                                                                     flex_attention ran every (batch, KV head)
                                                                     as one CTA chain over the whole cache
                                                                     (time proportional to T, the same at 1 and 4
                                                                     sequences and at 1 and 2 KV heads: data/
                                                                     regimes_*.csv), although flex_decoding's
                                                                     get_split_k would give SMs // (B*Hkv) * 2
                                                                     (torch/_inductor/kernel/flex_decoding.py);
                                                                     `flex_num_splits` keeps that rule for reference
cudnn           attn_cudnn   q = 1: B * Hkv * S                      MEASURED (regimes_grids_*.csv: the launch grid of
                             q > 1: B * Hq * ceil(q/64), no split    cuDNN's SDPA kernel, torch.profiler, 27 shapes):
                                                                     S = min(64, 2^floor(log2(2 SMs / (B Hkv))),
                                                                     2^floor(log2(T / 128))), and S = 1 when that is
                                                                     below 8 (`cudnn_num_splits`; cuDNN is closed
                                                                     source). Several rows: MEASURED one persistent
                                                                     CTA per SM (232 KB shared memory) walking one
                                                                     (sequence, query head) tile after another over
                                                                     the whole cache
memeff          attn_memeff  B * Hq * ceil(q/64), no split           memory-efficient SDPA (xFormers cutlass
                                                                     FMHA, PyTorch's efficient backend): one
                                                                     CTA per (query head, 64 query rows) walks
                                                                     the whole cache; every query head streams
                                                                     its own K/V (no GQA sharing)

The split kernels' partial outputs are merged by a combine kernel of the family's own (op `attention_combine`,
kind COMBINE_KIND[family]; MEASURED launch grids and durations in regimes_grids_*.csv):
  fa2     flash_fwd_splitkv_combine_kernel: one CTA per kBlockM = 4 (row x head) outputs (d = 128), walking the
          splits one after another (serial_iters = S: 3.2 us at S = 2, 25.7 us at S = 128)
  triton  our _splitkv_combine: one program per (sequence, query head, row), all splits in one vectorized load
  cudnn   cudnn::fusion::lean_reduction_kernel: one CTA of 256 threads per (sequence, query head); its duration grows
          0.031 us per split (2.1 us at S = 8, 3.8 us at S = 64): one dependent L2 load per CUDNN_COMBINE_SPLITS
          splits
Resident CTAs per SM of every kernel (Efficiency.cta_slots) come from the launched kernel's registers and shared
memory (regimes_grids_*.csv; simulator/calibration/fit_regimes.py `occupancy`), not from a fit.
memeff has no GQA: the caller expands K/V to every query head (HF's repeat_kv, or the campaign outside its
timing), so its Hq streams are distinct memory and none of them is served by L2.
For several query rows FA2 and cuDNN (q > 1) stream K/V once per query head; the other heads of a GQA group
re-read the same K/V (`reread_bytes`): FA2 from L2 when its launch splits the KV range (the heads of a group run
together) and not at all when it does not (MEASURED on the v4 campaign: `reread_working_set`), cuDNN always (working set = the groups' tiles in flight: MEASURED, it moves
5.5 TB/s of per-head K/V at every batch, so the heads of a group run together). The re-reads that hit are not free:
every byte passes through the L2 at its measured bandwidth (hwmodels.roofline, Efficiency.l2_bw_bytes_s).
"""
from __future__ import annotations

import numpy as np

#: family -> op kind of its several-query-row kernel when it is another kernel (cuDNN: MEASURED one resident CTA
#: per SM instead of two, a different chain)
ROWS_KIND = {"cudnn": "attn_cudnn_rows"}
#: family -> op kind of its combine kernel (module docstring); families that never split have none
COMBINE_KIND = {"fa2": "attn_combine_fa2", "triton_splitkv": "attn_combine_triton", "cudnn": "attn_combine_cudnn"}
#: FlashAttention-2's combine kernel: (row x head) outputs per CTA for head dim 128 (flash_fwd_launch_template.h
#: run_mha_fwd_splitkv_dispatch kBlockM = d % 128 == 0 ? 4 : ...; MEASURED grid = ceil(B Hq q / 4))
FA2_COMBINE_ROWS = 4.0
#: cuDNN's lean_reduction combine: splits per dependent L2 load, from its measured slope (0.031 us per split over
#: S = 8..64 at 0.143 us per L2 load, latency_*.csv): ASSUMPTION that the slope is L2 round trips
CUDNN_COMBINE_SPLITS = 4.0
#: family -> the op kind of its kernel when K/V are stored in fp8 and converted to bf16 in the kernel's registers: a
#: kernel of its own (its resident CTAs from its registers and shared memory, its own iteration time and bandwidth,
#: fitted by simulator/calibration/fit_regimes.py on the fp8-KV rows of heads 8/1 and 32/8, 64/8 held out). One
#: factor on the bf16 kernel's serial iterations (fitted: 1.94) cannot represent both the latency-bound corner
#: (~1.1 x bf16) and the bandwidth-bound one (the fp8 kernel reaches ~2.5 TB/s on half the bytes)
FP8_KV_KIND = {"triton_splitkv": "attn_triton_fp8kv"}
#: cuDNN's decode split rule (MEASURED, module docstring): the CTA target 2 x SMs, at most 64 splits, at least 8
CUDNN_MAX_SPLITS, CUDNN_MIN_SPLITS = 64.0, 8.0
#: family -> (op kind, keys per serial iteration of one CTA, source of the tile)
FAMILIES = {
    "fa2": ("attn_fa2", 128.0, "flash_api.cpp set_params_splitkv: block_n = 128 for head dim <= 128"),
    "triton_splitkv": ("attn_triton", 64.0, "measure_regimes.py triton_splitkv: BLOCK_N = 64"),
    "flex": ("attn_flex", 64.0, "flex_decoding default config: BLOCK_N = 64 (ASSUMPTION: the autotuned block of "
                                "torch 2.11 is not recorded)"),
    "cudnn": ("attn_cudnn", 128.0, "ASSUMPTION: 128-key tiles, as FlashAttention-2"),
    "memeff": ("attn_memeff", 128.0, "MEASURED kernel name fmha_cutlassF_bf16_aligned_64x128_rf_sm80 (64 queries x 128 "
                                     "keys per block, regimes_grids_*_v4.csv): its times step "
                                     "every 128 cached tokens"),
}
#: FlashAttention-2: query rows per CTA tile in the split-KV kernels (flash_api.cpp num_m_blocks: 64)
FA2_BLOCK_M = 64.0
#: FlashAttention-2's heuristic runs on 2 CTAs per SM (flash_api.cpp: num_SMs * 2) and at most 128 splits
FA2_CTAS_PER_SM = 2
FA2_MAX_SPLITS = 128
#: flex_decoding's BLOCK_M over the packed (q x G) query rows (ASSUMPTION: 16, the smallest tensor-core tile)
FLEX_BLOCK_M = 16.0


def fa2_num_splits(bhm, sms: int, n_blocks, max_splits: int = FA2_MAX_SPLITS) -> np.ndarray:
    """FlashAttention-2's num_splits_heuristic, vectorized (flash_api.cpp): 1 when batch_nheads_mblocks >=
    0.8 * num_SMs; otherwise, over the eligible split counts s <= min(max_splits, num_SMs, num_n_blocks)
    (s = 1, or ceil(n / s) != ceil(n / (s - 1))), the smallest whose wave efficiency n_waves / ceil(n_waves)
    (n_waves = bhm * s / num_SMs) is >= 0.85 x the best. `sms` is what the heuristic is given (2 x SMs)."""
    bhm = np.asarray(bhm, dtype=np.float64)
    nb = np.asarray(n_blocks, dtype=np.float64)
    bhm, nb = np.broadcast_arrays(bhm, nb)
    flat = np.stack([bhm.ravel(), nb.ravel()], axis=1)
    uniq, inv = np.unique(flat, axis=0, return_inverse=True)
    u_bhm, u_nb = uniq[:, 0:1], uniq[:, 1:2]
    s = np.arange(1, max_splits + 1, dtype=np.float64)[None, :]
    cap = np.minimum(np.minimum(float(max_splits), float(sms)), u_nb)
    prev = np.maximum(s - 1.0, 1.0)
    eligible = (s <= cap) & ((s == 1) | (np.ceil(u_nb / s) != np.ceil(u_nb / prev)))
    waves = u_bhm * s / sms
    effs = np.where(eligible, waves / np.ceil(waves), 0.0)
    best = effs.max(axis=1, keepdims=True)
    ok = eligible & (effs >= 0.85 * best)
    first = np.where(ok.any(axis=1), ok.argmax(axis=1) + 1.0, 1.0)
    out = np.where(u_bhm[:, 0] >= 0.8 * sms, 1.0, first)
    return out[inv.ravel()].reshape(bhm.shape)


def cudnn_num_splits(b_hkv, T, sms: int) -> np.ndarray:
    """cuDNN SDPA's decode split count (one query row), MEASURED from its launch grids on the H100 (27 shapes of
    regimes_grids_*.csv, all reproduced): the largest power of two <= 2 SMs / (B Hkv), at most 64 and at most the
    largest power of two <= T / 128; no split (1) when that is below 8."""
    bh = np.maximum(np.asarray(b_hkv, dtype=np.float64), 1.0)
    T = np.maximum(np.asarray(T, dtype=np.float64), 1.0)
    p2 = lambda x: 2.0 ** np.floor(np.log2(np.maximum(x, 1.0)))  # noqa: E731
    s = np.minimum(np.minimum(CUDNN_MAX_SPLITS, p2(2.0 * sms / bh)), p2(T / 128.0))
    return np.where(s < CUDNN_MIN_SPLITS, 1.0, s)


def flex_num_splits(b_hkv, sms: int) -> np.ndarray:
    """flex_decoding get_split_k: SM // (B * Hkv) * 2, at least 1 (integer division)."""
    bh = np.maximum(np.asarray(b_hkv, dtype=np.float64), 1.0)
    return np.maximum(np.floor(sms / bh) * 2.0, 1.0)


def decode_layout(family: str, B, q, Hq, Hkv, T, sms: int):
    """(op kind, CTAs, splits, serial iterations per CTA, K/V streams, combine iterations) of one launch.

    B, q, T (and Hq, Hkv under array combos) broadcast; `streams` = how many K/V head copies the kernel reads
    per sequence (Hkv when the group shares its loads; Hq for memeff / unpacked rows)."""
    kind, tile, _ = FAMILIES[family]
    B = np.asarray(B, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    T = np.asarray(T, dtype=np.float64)
    Hq = np.asarray(Hq, dtype=np.float64)
    Hkv = np.asarray(Hkv, dtype=np.float64)
    G = Hq / Hkv
    if family == "memeff":
        ctas = B * Hq * np.ceil(q / FA2_BLOCK_M)
        splits = np.ones(np.broadcast(B, T, Hq).shape)
        streams = Hq * np.ones_like(splits)
    elif family == "flex":
        splits = np.ones(np.broadcast(B, T, Hkv).shape)   # measured (module docstring), not get_split_k
        ctas = np.ceil(q * G / FLEX_BLOCK_M) * B * Hkv * splits
        streams = Hkv * np.ones_like(splits)
    else:
        # fa2 and cudnn pack the group only for one query row (seqlenq_ngroups_swapped); our Triton kernel always
        packed = (q <= 1) | (family == "triton_splitkv")
        rows_ctas = np.where(packed, B * Hkv * np.ceil(q * G / FA2_BLOCK_M), B * Hq * np.ceil(q / FA2_BLOCK_M))
        if family == "cudnn":  # measured rule (cudnn_num_splits); no split for several rows (docstring)
            splits = np.where(packed, cudnn_num_splits(B * Hkv, T, sms), 1.0)
            tile = np.where(T <= 256, 64.0, tile)   # MEASURED: a 64 x 64 tile engine at T <= 256 (kernel names)
        else:
            splits = fa2_num_splits(rows_ctas, FA2_CTAS_PER_SM * sms, np.ceil(T / 128.0))
        ctas = rows_ctas * splits
        streams = np.where(packed, Hkv, Hq) * np.ones_like(splits)
    iters = np.ceil(np.ceil(T / splits) / tile)
    _, combine_iters = combine_layout(family, B, q, Hq, splits)
    return kind, ctas, splits, iters, streams, combine_iters


def combine_layout(family: str, B, q, Hq, splits):
    """(CTAs, serial iterations) of a family's combine kernel (module docstring)."""
    rows = np.asarray(B, dtype=np.float64) * q * Hq
    S = np.asarray(splits, dtype=np.float64)
    if family == "fa2":
        return np.maximum(1.0, np.ceil(rows / FA2_COMBINE_ROWS)), S
    if family == "cudnn":
        return np.maximum(1.0, rows), np.ceil(S / CUDNN_COMBINE_SPLITS)
    return np.maximum(1.0, rows), np.ones_like(S)


def reread_working_set(family: str, B, Hkv, T, d, kvb, tile: float = 128.0, splits=None):
    """Working set over which a family's per-query-head re-reads of a GQA group's K/V cycle (see docstring)."""
    whole = np.asarray(B, dtype=np.float64) * T * 2.0 * Hkv * d * kvb
    inflight = np.asarray(B, dtype=np.float64) * Hkv * 2.0 * tile * d * kvb   # the groups' tiles in flight
    if family == "memeff":   # no GQA: expanded K/V, every stream is its own memory (docstring): nothing fits L2
        return np.full(np.shape(whole), np.inf)
    if family == "cudnn":
        return inflight
    if family == "fa2" and splits is not None:
        # FlashAttention-2 with several query rows (MEASURED on regimes_*_v4.csv verify_attn): a
        # split launch (grid z = batch x heads, heads fastest: the heads of a group start together) re-reads the
        # group's K/V from L2 at any batch (32 / 8 heads at B = 4, T = 32K: 2.15 GB of per-head K/V in 420 us, 5.1
        # TB/s, 4 x HBM's); an unsplit one (grid y = batch, z = heads) re-reads none of it, even when the batch's
        # K/V would fit in L2 (64 / 8 at B = 4, T = 8K: 1.07 GB in 380 us, 2.8 TB/s)
        return np.where(np.asarray(splits) > 1, inflight, np.inf) * np.ones(np.shape(whole))
    return whole


# ---------------------------------------------------------------------------------------------------
# PyTorch's row reductions (x.amax(-1), x.mean(-1), x.sum(-1)): reduce_kernel's launch configuration
# ---------------------------------------------------------------------------------------------------
#: aten/src/ATen/native/cuda/Reduce.cuh (github:pytorch/pytorch, PyTorch 2.x; torch 2.11 ran reduce_kernel<512, 1>:
#: MEASURED kernel names, regimes_grids_*_v4.csv): ReduceConfig::input_vec_size = 4 values per vectorized load,
#: mnt_wrapper<T>::MAX_NUM_THREADS = 512, setReduceConfig's min / max values per thread 16 / 256, warp 32, and its
#: target grid of maxThreadsPerMultiProcessor (2048 on sm_80 / sm_90) / threads blocks per SM
TORCH_REDUCE_VEC, TORCH_REDUCE_MAX_THREADS, TORCH_REDUCE_WARP = 4, 512, 32
TORCH_REDUCE_MIN_VPT, TORCH_REDUCE_MAX_VPT, TORCH_MAX_THREADS_PER_SM = 16, 256, 2048


def _last_pow2(x) -> np.ndarray:
    """Reduce.cuh last_pow2: the largest power of two <= x (at least 1)."""
    return 2.0 ** np.floor(np.log2(np.maximum(np.asarray(x, dtype=np.float64), 1.0)))


def torch_reduce_layout(rows, length, sms: int):
    """(CTAs, threads per CTA, serial iterations per thread) of torch's reduce_kernel over the last, contiguous dim
    of a [rows, length] tensor, following setReduceConfig (Reduce.cuh) for one reduced dim on the fastest stride:
      dim0 = length / 4 when length > 128 (vectorize_input: 4 values per load), else length; dim1 = rows;
      set_block_dimension: block.x = min(pow2(dim0), 32), block.y = min(pow2(dim1), 512 / block.x), then block.x =
      min(pow2(dim0), 512 / block.y) (pow2(d) = 512 for d >= 512, else the largest power of two <= d);
      the lanes split the row (step block.x); the warps split it too (step block.x * block.y, one output per CTA)
      when that leaves a thread >= 16 block.y values or >= 256 values, else each warp takes its own row (block.y
      rows per CTA); CTAs = ceil(rows / rows per CTA) x ctas_per_output, where a row is split over several CTAs
      (a global reduction) when the warps split it, a thread still has >= 256 values and the grid is below the
      target (SMs x 2048 / threads): ctas_per_output = max(min(ceil(target / grid), ceil(vpt / 16)), ceil(vpt / 256)).
    Serial iterations = each thread's values / 4 (vectorized loads, or the vt0 = 4 unrolled scalar loads).
    MEASURED: all 72 launches of regimes_grids_*_v4.csv (reduce_grid: rows 1-16384 x length 1024 / 4096 / 14336,
    amax bf16 and mean fp32) have this grid and block."""
    R = np.maximum(np.asarray(rows, dtype=np.float64), 1.0)
    L = np.maximum(np.asarray(length, dtype=np.float64), 1.0)
    R, L = np.broadcast_arrays(R, L)
    mt = float(TORCH_REDUCE_MAX_THREADS)
    dim0 = np.where(L > 128, np.floor(L / TORCH_REDUCE_VEC), L)
    p0 = np.where(dim0 < mt, _last_pow2(dim0), mt)
    p1 = np.where(R < mt, _last_pow2(R), mt)
    bw = np.minimum(p0, TORCH_REDUCE_WARP)
    bh = np.minimum(p1, np.floor(mt / bw))
    bw = np.minimum(p0, np.floor(mt / bh))
    vpt = np.ceil(L / bw)
    split_y = (vpt >= bh * TORCH_REDUCE_MIN_VPT) | (vpt >= TORCH_REDUCE_MAX_VPT)
    step_in = np.where(split_y, bw * bh, bw)
    rows_per_cta = np.where(split_y, 1.0, bh)
    vpt = np.ceil(L / step_in)
    grid = np.ceil(R / rows_per_cta)
    threads = bw * bh
    target = sms * np.floor(TORCH_MAX_THREADS_PER_SM / threads)
    glob = split_y & (vpt >= TORCH_REDUCE_MAX_VPT) & (grid <= target)
    cpo = np.maximum(np.minimum(np.ceil(target / grid), np.ceil(vpt / TORCH_REDUCE_MIN_VPT)),
                     np.ceil(vpt / TORCH_REDUCE_MAX_VPT))
    cpo = np.where(glob, cpo, 1.0)
    vpt = np.ceil(L / (step_in * cpo))
    return grid * cpo, threads, np.maximum(1.0, np.ceil(vpt / TORCH_REDUCE_VEC))
