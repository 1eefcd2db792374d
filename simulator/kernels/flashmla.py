"""FlashMLA's sm_90 dense MLA decode as it launches it (deepseek-ai/FlashMLA, commit
9241ae3ef9bac614dd25e45e507e089f888280e0; csrc/api/dense_decode.h, csrc/smxx/decode/get_decoding_sched_meta/
get_decoding_sched_meta.cu, csrc/sm90/decode/dense/splitkv_mla.cuh, csrc/smxx/decode/combine/combine.cu).

    num_sm_parts = max(SMs / Hk / ceil(q x Hq / Hk / 64), 1) persistent CTAs per 64-row head block (Hk = 1);
    grid (ceil(q Hq / 64), num_sm_parts); the scheduler (get_decoding_sched_meta) cuts the batch's 64-token blocks
    (block_size_n = 64) into num_sm_parts contiguous pieces of payload = ceil(total / parts) + 5 blocks, where every
    request counts ceil(T / 64) + 5 blocks: fixed_overhead_num_blocks = 5 is the source's own price of a request's
    per-sequence work (loading its block table entry, Q, and writing its partial output), in units of K/V blocks.
    Each part's CTA walks its requests one after another; a request cut between parts is merged by the combine
    kernel (one CTA per (request, 64 head rows) over its splits; total splits = B + num_sm_parts).
Per request a CTA does 3 dependent loads before its first block (its seqlen / block-table row -> the page -> the
block) and writes a partial output.
"""
from __future__ import annotations

import numpy as np

from simulator.kernels.production import Launch, ceil_div, combine_io

FLASHMLA_COMMIT = "9241ae3ef9bac614dd25e45e507e089f888280e0"
BLOCK_N, FIXED_OVERHEAD_BLOCKS, BLOCK_M = 64.0, 5.0, 64.0
PROLOGUE_LOADS = 3.0


def flashmla(B, q, T, H, d_ckv, d_kpe, kvb, sms: int):
    """Launches of one flash_mla_with_kvcache call (module docstring)."""
    B, q, T, H = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in (B, q, T, H)))
    mblocks = ceil_div(q * H, BLOCK_M)
    parts = np.maximum(np.floor(sms / mblocks), 1.0)
    blocks = ceil_div(T, BLOCK_N)
    total = B * (blocks + FIXED_OVERHEAD_BLOCKS)
    payload = ceil_div(total, parts) + FIXED_OVERHEAD_BLOCKS
    per_part_reqs = np.minimum(B, ceil_div(payload, blocks + FIXED_OVERHEAD_BLOCKS) + 1.0)
    iters = np.minimum(payload - FIXED_OVERHEAD_BLOCKS * np.maximum(per_part_reqs - 1.0, 1.0), B * blocks)
    iters = np.maximum(iters, np.minimum(blocks, payload))
    lat = d_ckv + d_kpe
    flops = 2.0 * B * q * H * T * (lat + d_ckv)
    kv = B * T * lat * kvb * mblocks
    splits_total = B + parts
    written = splits_total * q * H * (d_ckv + 1.0) * 4.0
    k1 = Launch("attention", "attn_flashmla", mblocks * parts, 1.0, iters, PROLOGUE_LOADS * per_part_reqs, flops,
                kv + B * q * H * lat * 2.0, written)
    rows = B * q * H
    S = splits_total / B
    rd, wr = combine_io(rows, S, d_ckv)
    k2 = Launch("attention_combine", "attn_combine_flashmla", B * mblocks, 8.0, ceil_div(S, 4.0), 2.0,
                3.0 * rows * d_ckv * S, rd, wr, dtype="fp32")
    return [k1, k2], {"parts": parts, "payload_blocks": payload, "requests_per_part": per_part_reqs}
