"""FlashMLA's sm_90 dense MLA decode as it launches it (deepseek-ai/FlashMLA, commit
9241ae3ef9bac614dd25e45e507e089f888280e0; csrc/api/dense_decode.h, csrc/smxx/decode/get_decoding_sched_meta/
get_decoding_sched_meta.cu, csrc/sm90/decode/dense/splitkv_mla.cuh, csrc/smxx/decode/combine/combine.cu).

    num_sm_parts = max(SMs / Hk / ceil(q x Hq / Hk / 64), 1) persistent CTAs per 64-row head block (Hk = 1);
    grid (ceil(q Hq / 64), num_sm_parts); the scheduler (get_decoding_sched_meta) cuts the batch's 64-token blocks
    (block_size_n = 64) into num_sm_parts contiguous pieces of payload = ceil(total / parts) + 5 blocks, where every
    request counts ceil(T / 64) + 5 blocks: fixed_overhead_num_blocks = 5 is the source's own price of a request's
    per-sequence work (loading its block table entry, Q, and writing its partial output), in units of K/V blocks.
    Each part's CTA walks its requests one after another; a request cut between parts is merged by the combine
    kernel (one CTA per (request, 64 head rows) over its splits; total splits = B + num_sm_parts); a request
    kept inside one part is written directly (no partials, no combine work).
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
    per_req = blocks + FIXED_OVERHEAD_BLOCKS
    total = B * per_req
    payload = ceil_div(total, parts) + FIXED_OVERHEAD_BLOCKS
    used = np.minimum(parts, ceil_div(total, payload - FIXED_OVERHEAD_BLOCKS))   # parts that get any work
    # a part walks payload blocks' worth: its requests' K/V blocks plus 5 per request it starts (the scheduler's own
    # price of a request); the K/V blocks it loads are the payload less those
    per_part_reqs = np.minimum(B, ceil_div(payload, per_req) + 1.0)
    # the chain of a part: its payload in the scheduler's own units, K/V blocks plus 5 block-times per request it
    # starts (fixed_overhead_num_blocks: the source prices a request's setup and partial-output write as 5 blocks)
    iters = np.minimum(payload, total)
    # pieces of one request: the parts its blocks span
    S = np.minimum(used, np.maximum(1.0, ceil_div(blocks, np.maximum(payload - FIXED_OVERHEAD_BLOCKS, 1.0))))
    lat = d_ckv + d_kpe
    flops = 2.0 * B * q * H * T * (lat + d_ckv)
    kv = B * T * lat * kvb * mblocks
    # a request kept in one part writes its output directly; a split one writes fp32 partials for the combine kernel
    split = S > 1
    written = np.where(split, B * S * q * H * (d_ckv + 1.0) * 4.0, B * q * H * d_ckv * 2.0)
    # the head blocks of one part walk the same K/V blocks side by side: every block after the first is an L2 hit
    # (working set: the blocks in flight, 2 x 64 tokens per CTA)
    reread = kv * (mblocks - 1.0) / mblocks
    k1 = Launch("attention", "attn_flashmla", mblocks * used, 1.0, iters, PROLOGUE_LOADS, flops,
                kv + B * q * H * lat * 2.0, written, idle=mblocks * (parts - used), reread_bytes=reread,
                working_set=np.where(mblocks > 1, mblocks * used * 2.0 * BLOCK_N * lat * kvb, 0.0))
    rows = B * q * H
    rd, wr = combine_io(rows, S, d_ckv)
    k2 = Launch("attention_combine", "attn_combine_flashmla", B * mblocks, 8.0, ceil_div(S, 4.0), 2.0,
                3.0 * rows * d_ckv * S, rd, wr, dtype="fp32", where=split)
    return [k1, k2], {"parts": parts, "used_parts": used, "payload_blocks": payload, "requests_per_part": per_part_reqs,
                      "splits": S}
