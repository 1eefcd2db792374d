"""TensorRT-LLM's XQA decode kernel as it launches it (NVIDIA/TensorRT-LLM, cpp/tensorrt_llm/kernels/
decoderMaskedMultiheadAttention/decoderXQAImplCommon.h `computeMultiBlockCount`, decoderXQAImplJIT.cpp launch;
read through the code index, not run: XQA ships inside TensorRT-LLM's binaries).

    multi-block mode: blocks per sequence mb = T // 512 (kMinHistoryTokensPerBlock), mb = min(mb, round(sqrt(8 mb))),
    at least 1; waves = B Hkv mb / SMs, and when waves / 8 (kTargetWaveFactor) > 1, mb = floor(mb / (waves / 8));
    at least 1 (and at most the workspace's sub-sequences / B: not modelled, ASSUMPTION that it does not bind).
    grid (mb, Hkv x token blocks, B), 128 x 1 x 2 threads (x 3 for the fp8 GMMA kernel on sm_90); the sub-sequences of
    one sequence are reduced inside the kernel by the last CTA to finish (a semaphore per (sequence, KV head)): no
    combine kernel, but a zeroed semaphore workspace (cudaMemsetAsync) before each launch.
    ASSUMPTION (not read): 64 keys per CTA iteration and 2 resident CTAs per SM; 3 dependent loads per CTA before its
    first tile (sequence length / page list -> page -> keys). Rates borrowed from FlashInfer's decode kernel (the
    nearest measured CUDA-core, packed-group decode kernel).
"""
from __future__ import annotations

import numpy as np

from simulator.kernels.production import Launch, attention_io, ceil_div

MIN_HISTORY_PER_BLOCK, TARGET_WAVE_FACTOR = 512.0, 8.0
XQA_TILE, XQA_SLOTS, XQA_PROLOGUE_LOADS = 64.0, 2.0, 3.0


def xqa_multi_block(B, T, Hkv, sms):
    """computeMultiBlockCount (module docstring)."""
    mb = np.floor(np.asarray(T, dtype=np.float64) / MIN_HISTORY_PER_BLOCK)
    mb = np.maximum(np.minimum(mb, np.round(np.sqrt(mb * 8.0))), 1.0)
    adj = B * Hkv * mb / float(sms) / TARGET_WAVE_FACTOR
    mb = np.where(adj > 1.0, np.floor(mb / np.maximum(adj, 1.0)), mb)
    return np.maximum(mb, 1.0)


def xqa(B, q, T, Hq, Hkv, d, kvb, sms: int):
    B, q, T, Hq, Hkv, d, kvb = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in (B, q, T, Hq, Hkv, d, kvb)))
    mb = xqa_multi_block(B, T, Hkv, sms)
    ctas = mb * Hkv * B
    iters = ceil_div(ceil_div(T, mb), XQA_TILE)
    flops, kv, qb, ob = attention_io(B, q, T, Hq, Hkv, d, d, kvb)
    k1 = Launch("attention", "attn_xqa", ctas, XQA_SLOTS, iters, XQA_PROLOGUE_LOADS, flops, kv + mb * qb,
                ob + np.where(mb > 1, 2.0 * mb * B * q * Hq * (d + 1.0) * 4.0, 0.0))
    return [k1], {"multi_block": mb, "ctas": ctas}
