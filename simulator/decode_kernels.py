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
                             head packed in one tile)                (hwmodels/calibration/measure_regimes.py)
flex            attn_flex    ceil(q*G/BLOCK_M) * B * Hkv * S          S = 1, MEASURED: torch 2.11's compiled
                                                                     flex_attention ran every (batch, KV head)
                                                                     as one CTA chain over the whole cache
                                                                     (time proportional to T, the same at 1 and 4
                                                                     sequences and at 1 and 2 KV heads: data/
                                                                     regimes_*.csv), although flex_decoding's
                                                                     get_split_k would give SMs // (B*Hkv) * 2
                                                                     (torch/_inductor/kernel/flex_decoding.py);
                                                                     `flex_num_splits` keeps that rule for reference
cudnn           attn_cudnn   q = 1: B * Hkv * S, S as fa2            ASSUMPTION: cuDNN's SDPA is closed source;
                             q > 1: B * Hq * ceil(q/64), no split    its split rule is not published. One query
                                                                     row: the FA2 rule (cuDNN's measured times
                                                                     track our FA2-rule Triton kernel within a few
                                                                     % from 16 to 1M tokens); several rows:
                                                                     MEASURED one CTA per (sequence, query head)
                                                                     walking the whole cache (time proportional to
                                                                     T, independent of q_rows, doubling with the
                                                                     query heads once they exceed one wave)
memeff          attn_memeff  B * Hq * ceil(q/64), no split           memory-efficient SDPA (xFormers cutlass
                                                                     FMHA, PyTorch's efficient backend): one
                                                                     CTA per (query head, 64 query rows) walks
                                                                     the whole cache; every query head streams
                                                                     its own K/V (no GQA sharing)

The split kernels' partial outputs are merged by a combine kernel (op `attention_combine`, the family's kind):
one CTA per 64 (row x head) outputs; FlashAttention-2's combine walks the splits in sequence
(`serial_iters` = S: MEASURED, its time grows with the split count, ~25 us at 128 splits), ours reads them in
one vectorized load (1 iteration).
For several query rows FA2 and cuDNN (q > 1) stream K/V once per query head; the other heads of a GQA group
re-read the same K/V (`reread_bytes`): FA2 from L2 while the batch's K/V fits (working set = all of it:
MEASURED, its B = 1 / 4 / 16 rows reuse 100 / ~36 / ~0 % of the re-reads as 50 MiB of L2 predicts), cuDNN
always (working set = the groups' tiles in flight: MEASURED, it moves 5.5 TB/s of per-head K/V at every batch,
so the heads of a group run together).
"""
from __future__ import annotations

import numpy as np

#: family -> op kind of its several-query-row kernel when it is another kernel (cuDNN: MEASURED one resident CTA
#: per SM instead of two, a different chain)
ROWS_KIND = {"cudnn": "attn_cudnn_rows"}
#: family -> (op kind, keys per serial iteration of one CTA, source of the tile)
FAMILIES = {
    "fa2": ("attn_fa2", 128.0, "flash_api.cpp set_params_splitkv: block_n = 128 for head dim <= 128"),
    "triton_splitkv": ("attn_triton", 64.0, "measure_regimes.py triton_splitkv: BLOCK_N = 64"),
    "flex": ("attn_flex", 64.0, "flex_decoding default config: BLOCK_N = 64 (ASSUMPTION: the autotuned block of "
                                "torch 2.11 is not recorded)"),
    "cudnn": ("attn_cudnn", 128.0, "ASSUMPTION: 128-key tiles, as FlashAttention-2"),
    "memeff": ("attn_memeff", 64.0, "xFormers cutlass FMHA forward: kKeysPerBlock = 64 for head dim 128 on sm80+"),
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
        splits = fa2_num_splits(rows_ctas, FA2_CTAS_PER_SM * sms, np.ceil(T / 128.0))
        if family == "cudnn":
            splits = np.where(packed, splits, 1.0)        # measured: no split for several rows (docstring)
        ctas = rows_ctas * splits
        streams = np.where(packed, Hkv, Hq) * np.ones_like(splits)
    iters = np.ceil(np.ceil(T / splits) / tile)
    combine_iters = splits if family == "fa2" else np.ones_like(splits)
    return kind, ctas, splits, iters, streams, combine_iters


def reread_working_set(family: str, B, Hkv, T, d, kvb, tile: float = 128.0):
    """Working set over which a family's per-query-head re-reads of a GQA group's K/V cycle (see docstring)."""
    whole = np.asarray(B, dtype=np.float64) * T * 2.0 * Hkv * d * kvb
    if family == "cudnn":
        return np.asarray(B, dtype=np.float64) * Hkv * 2.0 * tile * d * kvb   # the groups' tiles in flight
    return whole
