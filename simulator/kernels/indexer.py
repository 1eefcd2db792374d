"""DeepGEMM's DSA-indexer logits kernels, their work decomposition read from the source: how query rows and key blocks
map to CTAs. First read at deepseek-ai/DeepGEMM @ 54e22612; re-read in sgl-deep-gemm 0.2.5 (SGLang's packaging of
DeepGEMM, the version measured: deep_gemm/include/deep_gemm/impls/sm90_fp8_paged_mqa_logits.cuh,
scheduler/sm90_paged_mqa_logits.cuh, impls/sm90_fp8_mqa_logits.cuh; host side sgl-project/DeepGEMM
csrc/jit_kernels/impls/sm90_fp8_mqa_logits.hpp @ 4305ab71, csrc/apis/attention.hpp). Every rule below holds in 0.2.5.

fp8_paged_mqa_logits (decode / verification):
    grid        num_sms persistent CTAs; 128 TMA threads + split_kv / 64 = 4 math warpgroups (split_kv = 256: the
                metadata's constexpr split_kv = 256, the kernel's SPLIT_KV == BLOCK_KV x math warpgroups, mma_m = 64)
    work items  one (query atom, 256-key split) per item: splits = ceil(context / 256) per sequence;
                get_paged_mqa_logits_metadata (one CTA of 32 threads) prefix-sums the splits over the batch and gives
                every SM an equal contiguous share (q or q + 1 items). On sm_90 next_n is 1 or 2 (host assert) and the
                kernel takes all next_n rows of a sequence in one atom (the metadata's next_n_atom = 2 for next_n >= 2
                makes one atom of next_n = 2), so items = batch x ceil(context / 256) for both
    per item    each math warpgroup takes one 64-key page (block_kv = 64) of the split: a TMA load of 64 x 128 fp8 keys
                + 64 scales (3 KV stages, 3 Q stages), one WGMMA [64 keys, d] x [next_n x heads, d] (N = 64 or 128),
                ReLU x weight summed over the heads, fp32 stores of next_n x 64 logits; the pages of a split past the
                context are loaded and computed in full
    so          the critical path is ceil(items / SMs) items on one SM: at one query row it grows linearly with the
                context (132 CTAs walk 512 splits at 128K on an H100) while only items / SMs of the device works at
                short contexts
fp8_mqa_logits (prefill, ragged keys per query row):
    grid        num_sms persistent CTAs; 128 TMA threads + 512 math threads (4 warpgroups), 3 Q and 3 KV stages
    work items  query blocks of block_q = 128 / heads rows (2 at 64 heads); CTA s takes blocks s, s + SMs, s + 2 SMs, ...
                and walks each block's key range [min start aligned down to 4, max end) in 256-key blocks
                (block_kv = 256, each warpgroup 64 of them): one WGMMA [64, d] x [block_q x heads, d] per warpgroup
                per key block, the query block loaded once
    so          a CTA's chain = the key blocks of its query blocks; for a causal chunk the CTA holding the last query
                block is the busiest (prefill_schedule / prefill_busiest)
    per CTA     each math warpgroup has its own TMA producer warp and 3 KV stages, so the loads of a CTA's next items
                are issued before its first is consumed: the price is fixed + max(the bytes' arrival, the chain of items)
                with no pipeline fill (hwmodels.roofline CHAIN_PREFETCHED), the WGMMAs inside the per-item time
                (CHAIN_TENSOR); one item's time is its dependent loads (schedule_meta, context_lens, block table from
                L2, the page from HBM: fit_deepgemm_indexer.paged_item_latency_us), measured per device, not fitted
verification (next_n 2): the scheduler's kNumNextNAtoms = 1, so a CTA's item covers both rows: each page's WGMMA has
                N = 128 (FP8MMASelector<kNextN x kNumHeads>) and the head reduction and store loop over kNextN rows;
                with the next pages in flight only the last item's extra work is exposed: one tail per extra row
                (fit_deepgemm_indexer.verify_row_tail_us, the op's sync_steps)
prefill per CTA: one TMA warp issues the key blocks of all its query blocks through 3 stages ahead of the 4 math
                warpgroups, which each WGMMA their 64 keys of the block, wait and reduce before the next: the per-block
                time is the chain's iteration (CHAIN_TENSOR, CHAIN_PREFETCHED; fitted iter_us), no compute stream
get_paged_mqa_logits_metadata: one 32-thread CTA; measured alongside the paged kernel (the engine launches it once per
step, simulator/strategies/dsa.py add_paged_logits_metadata).

Priced (simulator/strategies/dsa.py, indexer_kernel deepgemm) as kinds of their own, indexer_dg (paged: one 256-key
item per chain iteration) and indexer_dg_prefill (one 256-key block per chain iteration), MEASURED on the lent H100
(2026-11-27, hwmodels/calibration/data/production_kernels/deepgemm_indexer_nvidia-h100-80gb-hbm3_2026-11-27.csv:
deepseek-ai/DeepGEMM @ 54e2261's host code built on the machine against its PyTorch, lab/kernels/dg_upstream.py; its
paged and schedule-metadata kernels are byte-identical to sgl-deep-gemm 0.2.5's, its prefill kernel differs in the
logits-store guard only; both checked against a torch reference, max |err| / max |ref| <= 2e-4). The terms are fitted
(simulator/calibration/fit_deepgemm_indexer.py) on decode batch 16 and the 4K-row prefill only; every other row is
held out. Before the measurement both kinds carried the block-scaled fp8 GEMM kind's terms (gemm_fp8_block, the
first look: ASSUMPTIONS one paged item = one K step of that GEMM, one prefill key block = ITERS_PER_PREFILL_BLOCK =
256 / 192 steps; fit_deepgemm_indexer.borrowed_eff); both first-look prices of the grid, (a) the model before the 0.2.5
re-read and (b) this structure at those rates, were committed before it was timed
(deepgemm_indexer_first_look_h100.csv). The metadata kernel measures 2.4-3.8 us per step (batch 1-128). A second grid
(69 shapes, decode weighted to short contexts at batch <= 8) was priced and committed before it was measured
(deepgemm_indexer_blind2_*: lab/kernels/predict_deepgemm_indexer_blind.py; benchmarks/calibration_accuracy.py); a
third (78 rows: verification, prefill, small-batch decode with the keys rotated past the L2 and not) likewise
(deepgemm_indexer_blind3_*: lab/kernels/predict_deepgemm_indexer_blind3.py): small-batch launches whose keys come from
HBM (the engine's case) take 0.4-1.3 us more than with the 8-table rotation the fit rows used (docs/KNOWN_GAPS.md).
Keys that are not in L2 are the kind indexer_dg_cold (the pages' stream starts after the first item's dependent loads:
hwmodels/roofline.py CHAIN_COLD_HEAD), fitted on the batch-16 rows measured cold and judged on a fourth blind grid
(deepgemm_indexer_blind4_*); the engine prices it by default (simulator/strategies/dsa.py indexer_keys).
"""
from __future__ import annotations

import numpy as np

SPLIT_KV = 256        # paged kernel: keys per work item (4 warpgroups x block_kv 64)
BLOCK_KV_PREFILL = 256
BLOCK_QH = 128        # prefill: block_q x heads
ITERS_PER_PREFILL_BLOCK = 256.0 / 192.0   # the first look's borrowed-rate assumption (module docstring)


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
