"""DeepGEMM's DSA-indexer logits kernels (deepseek-ai/DeepGEMM @ 54e22612), their work decomposition read from the
source: how query rows and key blocks map to CTAs.

fp8_paged_mqa_logits (decode / verification; csrc/apis/attention.hpp, deep_gemm/include/deep_gemm/impls/
sm90_fp8_paged_mqa_logits.cuh, scheduler/sm90_paged_mqa_logits.cuh):
    grid        num_sms persistent CTAs; 128 TMA threads + split_kv / 64 = 4 math warpgroups (split_kv = 256)
    work items  one (query atom, 256-key split) per item: atoms are next_n rows taken 2 at a time (next_n_atom = 2 when
                next_n >= 2, else 1), splits = ceil(context / 256) per sequence; get_paged_mqa_logits_metadata (a
                32-thread kernel SGLang / TensorRT-LLM launch once per step) prefix-sums the items over the batch and
                gives every SM an equal contiguous share (q or q + 1 items)
    per item    each math warpgroup takes one 64-key block (block_kv = 64, the cache page) of the split: a TMA load
                (3-stage pipeline), one WGMMA [next_n x heads, d] x [64, d], ReLU x weight summed over the heads, fp32
                stores of next_n x 64 logits
    so          the critical path is ceil(items / SMs) items on one SM: at one query row it grows linearly with the
                context (132 CTAs walk 512 splits at 128K on an H100) while only items / SMs of the device works at
                short contexts
fp8_mqa_logits (prefill, ragged keys per query row; impls/sm90_fp8_mqa_logits.cuh):
    grid        num_sms persistent CTAs; 128 TMA threads + 512 math threads
    work items  query blocks of block_q = 128 / heads rows (2 at 64 heads); CTA s takes blocks s, s + SMs, s + 2 SMs, ...
                and walks each block's key range [min start, max end) in 256-key blocks (block_kv = 256): one WGMMA
                [block_q x heads, d] x [256, d] per key block, the query block loaded once
    so          many query rows per CTA (the prefill indexer is one persistent GEMM-like sweep, not one CTA per
                (row, key block)); a CTA's chain = the key blocks of its query blocks

Priced (simulator/strategies/dsa.py, indexer_kernel deepgemm) as the roofline's kind gemm_fp8_block: DeepGEMM's own
persistent fp8 WGMMA structure, the nearest kind with measured rates (H100: cuBLASLt's block-scaled fp8 GEMM,
simulator/calibration/fit_production_topk_gemm.py). The indexer kernels themselves were NOT measured (DeepGEMM does not
run on the lent machines without its JIT toolchain); ASSUMPTIONS: one paged work item (256 fp8 keys + scales, ~34 KB
through TMA, four 64-row WGMMAs) costs one K step of the measured block GEMM (128 x 128 + 128 x 192 fp8 operands, ~41 KB,
one WGMMA chain), and one prefill key block (a 128 x 256 x 128 WGMMA) costs ITERS_PER_PREFILL_BLOCK = 256 / 192 such
steps (time proportional to the WGMMA's N; 192 is the measured kind's widest tile).
"""
from __future__ import annotations

import numpy as np

SPLIT_KV = 256        # paged kernel: keys per work item (4 warpgroups x block_kv 64)
BLOCK_KV_PREFILL = 256
BLOCK_QH = 128        # prefill: block_q x heads
ITERS_PER_PREFILL_BLOCK = 256.0 / 192.0   # ASSUMPTION (module docstring)


def paged_items(batch, context, next_n=1):
    """Work items of one paged-logits launch (module docstring)."""
    atoms = np.ceil(np.asarray(next_n, float) / np.where(np.asarray(next_n) >= 2, 2.0, 1.0))
    return np.asarray(batch, float) * np.ceil(np.asarray(context, float) / SPLIT_KV) * atoms


def paged_chain(batch, context, sms: int, next_n=1):
    """(CTAs with work, items on the busiest SM) of the paged kernel's schedule metadata split."""
    items = paged_items(batch, context, next_n)
    return np.minimum(items, sms), np.ceil(items / sms)


def prefill_chain(prompt: int, heads: int, sms: int) -> tuple[int, int]:
    """(query blocks, key blocks on the busiest CTA) of fp8_mqa_logits over one causal prompt: query block j (rows
    j*bq .. j*bq+bq-1) walks ceil((j+1) * bq / 256) key blocks; CTA s takes blocks s, s + SMs, ..."""
    bq = BLOCK_QH // heads
    nq = int(np.ceil(prompt / bq))
    kv_blocks = np.ceil((np.arange(nq) + 1) * bq / BLOCK_KV_PREFILL)
    per_cta = np.bincount(np.arange(nq) % sms, weights=kv_blocks, minlength=sms)
    return nq, int(per_cta.max())


def prefill_blocks(prompt, heads: int):
    """(query blocks, key blocks summed over them) of fp8_mqa_logits over causal prompts of `prompt` tokens
    (vectorized): query block j walks ceil((j + 1) * block_q / 256) 256-key blocks; sum_{m=1..nq} ceil(m / c) with
    c = 256 / block_q in closed form."""
    bq = max(1, BLOCK_QH // int(heads))
    p = np.asarray(prompt, float)
    nq = np.ceil(p / bq)
    c = BLOCK_KV_PREFILL / bq
    if float(c).is_integer():
        a = np.floor(nq / c)
        r = nq - a * c
        total = c * a * (a + 1.0) / 2.0 + r * (a + 1.0)
    else:   # block_q does not divide 256: the mean of ceil(m / c) is m / c + 1/2
        total = nq * (nq + 1.0) / (2.0 * c) + nq / 2.0
    return nq, total


def prefill_schedule(rows: int, keys: int, heads: int, sms: int) -> tuple[int, float, float, float]:
    """fp8_mqa_logits over one ragged chunk: `rows` query rows at the end of a prompt of `keys` tokens, row i seeing
    keys [0, keys - rows + i + 1). Returns (query blocks, key blocks summed over them, key blocks of the busiest
    persistent CTA, (row, key) pairs). Query block j walks ceil((min start, aligned down to 4 = 0; max end) / 256)
    key blocks; CTA s takes query blocks s, s + SMs, ... (impls/sm90_fp8_mqa_logits.cuh)."""
    bq = max(1, BLOCK_QH // int(heads))
    nq = int(np.ceil(rows / bq))
    past = keys - rows
    last_row = np.minimum((np.arange(nq) + 1) * bq, rows)        # rows of block j end at row last_row - 1
    blocks = np.ceil((past + last_row) / BLOCK_KV_PREFILL)
    per_cta = np.bincount(np.arange(nq) % sms, weights=blocks, minlength=sms)
    pairs = rows * past + rows * (rows + 1) / 2.0
    return nq, float(blocks.sum()), float(per_cta.max()), float(pairs)


def prefill_busiest(rows, keys, heads: int, sms: int):
    """Vectorized estimate of prefill_schedule's busiest-CTA key blocks (and the summed key blocks): the CTA that takes
    the last query block walks w = ceil(nq / SMs) blocks, nq - 1, nq - 1 - SMs, ..., each ceil((past + end) / 256) key
    blocks, a ceiling's mean excess taken as 1/2 (tests/test_indexer_deepgemm.py checks it against the exact count)."""
    bq = max(1, BLOCK_QH // int(heads))
    r = np.asarray(rows, float)
    past = np.asarray(keys, float) - r
    nq = np.ceil(r / bq)
    w = np.ceil(nq / sms)
    # ends of the busiest CTA's blocks: rows, rows - SMs*bq, ... (w terms, arithmetic)
    mean_end = r - (w - 1.0) * sms * bq / 2.0
    busiest = w * ((past + mean_end) / BLOCK_KV_PREFILL + 0.5)
    total = nq * ((past + (r + bq) / 2.0) / BLOCK_KV_PREFILL + 0.5)
    return np.maximum(busiest, 1.0), np.maximum(total, 1.0)
