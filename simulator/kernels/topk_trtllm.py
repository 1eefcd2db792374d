"""TensorRT-LLM's indexer top-k (kind topk_trtllm), modelled from its source: cpp/tensorrt_llm/kernels/indexerTopK.cu
(NVIDIA/TensorRT-LLM @ 07339e94). Its pass model (how many full sweeps a row takes: `trtllm_row`, "half - 11 - 11 -
10 bit iterations", two sweeps per step, a step more while the threshold bin holds > kNumFinalItems = 2048 values) is
topk_production's; this module is its launch.

Dispatch (invokeIndexerTopKDecodeImpl, decode; the prefill entry invokeIndexerTopKPrefill is always one 512-thread CTA
per row):
    heuristic   GVR (launchHeuristicTopKDecode) only when the caller passes the previous step's indices, > 16,384
                columns and > 32 rows (simulator.strategies.topk prices it)
    multi-pass  three radixPassKernel launches of 512-thread CTAs over sm_count x 4 / rows CTAs per row (>= 2048 scores
                each), only when the caller passes `scratch` and rows <= 32 / n >= 65,536, <= 64 / >= 131,072, <= 256 /
                >= 524,288 (multi_pass_radix_eligible): NOT MODELLED (not the default caller's path)
    single      below the split-work threshold (65,536 columns at <= 8 rows; 200,000 at 9-63; 524,288 at 64-127; never at
                >= 128 rows): topKPerRowDecode, one CTA per row of 512 threads (256, `useNarrowBlock`, at >= 256 rows
                of rows x n >= 4 Mi scores and n < 12,288 / 100,000 / 200,000 at < 1024 / >= 1024 / >= 4096 rows)
    split       at or above it: topKPerRowDecodeFused, numBlocksPerRow CTAs per row (10; up to 32 at one row, 16 / 14 /
                12 at 2 / 4 / 8 rows of >= 400K-500K: indexerTopKDecodeFusedAuxBlocksPerRow), each the same job on
                a 1/numBlocks slice, then the last CTA to finish merges numBlocks x k candidates (1024 threads where
                the slice holds >= 30,000 scores, else 512)
Within a CTA (topKPerRowJob): float4 loads (vectorized_process), a 2048-bin histogram per step with a cub BlockScan
prefix, the final sort of the threshold bin's <= 2048 items an insertion sort (<= 512) or a BlockRadixSort.

Priced as one wave-model op per launch (topk_production's module docstring): CTAs = rows x blocks per row, 4 resident
per SM (CTA_SLOTS: 512 threads, ~24 KiB), each sweep ceil(slice / (512 x 4)) load rounds, the merge 2 sweeps of
numBlocks x k candidates. NOT MEASURED: its terms are borrowed from topk_sglang (the fitted file's
production_kernels.topk_trtllm says which); the narrow 256-thread block, the 1024-thread fused block, the final sort's
cost and the multi-pass path are not priced (KNOWN_GAPS).
"""
from __future__ import annotations

import numpy as np

from simulator.kernels import topk_production as P

THREADS = 512                 # kNumThreadsPerBlock (decode single-block and split part 1)
VEC = 4                       # float4 loads (vectorized_process)
SPLIT_BLOCKS = 10             # indexerTopKDecodeFusedAuxBlocksPerRow's default


def split_threshold(rows):
    """adaptiveSplitWorkThreshold of invokeIndexerTopKDecodeImpl: columns at which a row is split over several CTAs."""
    rows = np.asarray(rows, float)
    return np.where(rows >= 128, np.inf, np.where(rows >= 64, 524 * 1024, np.where(rows > 8, 200_000, 65 * 1024)))


def blocks_per_row(rows, n):
    """CTAs per row of the decode dispatch (module docstring): 1 below split_threshold, else
    indexerTopKDecodeFusedAuxBlocksPerRow's count."""
    rows, n = np.asarray(rows, float), np.asarray(n, float)
    nb = np.full(np.broadcast(rows, n).shape, float(SPLIT_BLOCKS))
    nb = np.where(rows == 1, np.maximum(10.0, np.minimum(32.0, np.floor(n / 30000))), nb)
    nb = np.where((rows == 2) & (n >= 400000), 16.0, nb)
    nb = np.where((rows == 4) & (n >= 400000), 14.0, nb)
    nb = np.where((rows == 8) & (n >= 500000), 12.0, nb)
    return np.where(n >= split_threshold(rows), nb, 1.0)


def add_ops(b, rows, n, k, sweeps, gathers, count=1.0, where=None, gather_iters=None, rounds=None) -> None:
    """One decode launch of TensorRT-LLM's indexer top-k (module docstring) for `rows` rows of `n` scores making
    `sweeps` full sweeps (topk_production.trtllm_row via pass_stats); `gathers` (0 for this kernel: its steps re-sweep
    the row) adds ceil(gathers / 512) iterations; `gather_iters`, `rounds` are accepted for a common signature."""
    rows = np.asarray(rows, float)
    n = np.asarray(n, float)
    nb = blocks_per_row(rows, n)
    seg = n / nb
    g_it = np.ceil(np.asarray(gathers, float) / THREADS)
    iters = sweeps * np.ceil(seg / (THREADS * VEC)) + g_it
    merge_iters = np.where(nb > 1, 2.0 * np.ceil(nb * k / (THREADS * VEC)), 0.0)   # the last CTA's merge job
    rd = rows * (sweeps * n * P.SCORE_BYTES + np.asarray(gathers, float) * P.SECTOR_BYTES
                 + np.where(nb > 1, nb * k * 8.0, 0.0))
    again = rd - rows * np.minimum(sweeps, 1.0) * n * P.SCORE_BYTES   # all but the first sweep: the same CTA's re-reads
    b.add("topk_trtllm", P.OP_KIND["trtllm"], flops=rows * sweeps * n * 4.0, bytes_read=rd,
          bytes_written=rows * k * 4.0, parallel_units=rows * nb, serial_iters=iters + merge_iters,
          reread_bytes=again, working_set=rows * n * P.SCORE_BYTES, dtype="fp32", count=count, where=where)


# --- a CTA's on-chip phases (the "job model"): the block scans of each step and the final sort of the threshold bin,
# read from topKPerRowJob / processHistogramStep (cpp/tensorrt_llm/kernels/indexerTopK.cu @ 07339e94). Priced as extra
# loop rounds of the kind (serial_iters), in units of its iter_us, with constants fitted on TRT_FIT (topk_engines). ---
NUM_BINS = 2048               # kNumBins: each step's histogram
RANK_SORT_MAX = 512           # kInsertionSortBranchThreshold: <= 512 staged items are ranked by an all-pairs count
NARROW = 256                  # useNarrowBlock's block width (single-CTA decode of many short rows)
WIDE = 1024                   # topKPerRowDecodeFused's width where a slice holds >= WIDE_SLICE scores
WIDE_SLICE = 30_000


def narrow_block(rows, n):
    """useNarrowBlock of invokeIndexerTopKDecodeImpl: >= 256 rows, rows x n >= 4 Mi scores and n below the sort
    threshold (12,288 at < 1024 rows, 100,000 at 1024-4095, 200,000 at >= 4096)."""
    rows, n = np.asarray(rows, float), np.asarray(n, float)
    thr = np.where(rows >= 4096, 200_000, np.where(rows >= 1024, 100_000, 12_288))
    return (rows >= 256) & (rows * n >= 4 * 2 ** 20) & (n < thr)


def block_threads(rows, n):
    """Threads of the CTA that does a row's (or a slice's) job: 256 (narrow), 1024 (split work, slices >= 30,000),
    else 512."""
    rows, n = np.asarray(rows, float), np.asarray(n, float)
    nb = blocks_per_row(rows, n)
    return np.where(nb > 1, np.where(n / nb >= WIDE_SLICE, float(WIDE), float(THREADS)),
                    np.where(narrow_block(rows, n), float(NARROW), float(THREADS)))


def job_stats(x: np.ndarray, threads: int, k: int = 2048) -> dict:
    """One topKPerRowJob over the scores x by a CTA of `threads` threads: `steps`; `scan_rounds` = the block-scan
    rounds summed over its steps (processHistogramStep scans the 2048-bin histogram `threads` bins per round from bin 0,
    the largest values, and leaves the loop at the round that holds the threshold bin: its index // threads + 1; each
    round is a cub::BlockScan between three __syncthreads); `final_items` = the threshold bin's staged values; `radix`
    = 1 when they are sorted by cub::BlockRadixSort (> 512, kInsertionSortBranchThreshold), else they are ranked by
    the all-pairs count (each thread walks all final_items staged values: `rank_items`)."""
    n = len(x)
    out = {"steps": 0.0, "scan_rounds": 0.0, "final_items": 0.0, "radix": 0.0, "rank_items": 0.0}
    if n <= k:
        return out
    k16 = P._fp16_key(x) >> 5
    tb, above, inbin = P._threshold(k16, NUM_BINS, k)
    steps, rounds = 1, (NUM_BINS - 1 - tb) // threads + 1
    final = inbin if inbin <= P.TRT_FINAL_ITEMS else 0
    if inbin > P.TRT_FINAL_ITEMS:
        k32 = P._fp32_key(x)
        remain, mask = k, np.ones(n, bool)
        for shift, width in ((21, 11), (10, 11), (0, 10)):
            steps += 1
            sub = (k32[mask] >> shift) & ((1 << width) - 1)
            tb, above, inbin = P._threshold(sub, 1 << width, remain)
            rounds += ((1 << width) - 1 - tb) // threads + 1
            remain -= above
            if shift == 0:
                final = 0                 # step 3 writes its threshold bin's values directly (no final sort)
                break
            if inbin <= P.TRT_FINAL_ITEMS:
                final = inbin
                break
            sel = np.flatnonzero(mask)[sub == tb]
            mask = np.zeros(n, bool)
            mask[sel] = True
    radix = float(final > RANK_SORT_MAX)
    return {"steps": float(steps), "scan_rounds": float(rounds), "final_items": float(final), "radix": radix,
            "rank_items": 0.0 if radix else float(final)}


JOB_NAMES = ("scan_rounds", "radix", "rank_items")


def launch_job_stats(x: np.ndarray, rows: int, k: int = 2048) -> dict:
    """A row's on-chip phases on its critical path for the decode dispatch at `rows` rows: one job over the row (single
    CTA), or a job over one slice (the slowest of the slices) plus the last CTA's merge job over the slices' top-k
    candidates (split work; merge at the part's width)."""
    n = len(x)
    nb = int(blocks_per_row(rows, n))
    th = int(block_threads(rows, n))
    if nb == 1:
        return job_stats(x, th, k)
    parts = np.array_split(x, nb)
    js = [job_stats(s, th, k) for s in parts]
    part = max(js, key=lambda d: d["scan_rounds"] + d["radix"] * 8 + d["rank_items"] / 64)
    cand = np.concatenate([np.partition(s, len(s) - k)[len(s) - k:] if len(s) > k else s for s in parts])
    mj = job_stats(cand, th, k)
    return {c: part[c] + mj[c] for c in JOB_NAMES}


def job_iters(stats: dict, terms: dict):
    """Extra loop rounds (units of the kind's iter_us) of a CTA's on-chip phases: terms = {"scan": rounds per block-scan
    round, "radix": per BlockRadixSort of 2048 keys, "rank": per staged item of the all-pairs rank}."""
    return (terms["scan"] * np.asarray(stats["scan_rounds"], float) + terms["radix"] * np.asarray(stats["radix"], float)
            + terms["rank"] * np.asarray(stats["rank_items"], float))


def add_job_ops(b, rows, n, k, sweeps, job_extra_iters, count=1.0, where=None) -> None:
    """TensorRT-LLM's decode launch with its block widths (block_threads: each sweep ceil(slice / (threads x 4)) load
    rounds; a 256-thread CTA takes half a 512-thread slot, a 1024-thread one two: parallel_units scaled by threads /
    512) and `job_extra_iters` (job_iters) more loop rounds on each CTA's critical path; otherwise add_ops."""
    rows = np.asarray(rows, float)
    n = np.asarray(n, float)
    nb = blocks_per_row(rows, n)
    th = block_threads(rows, n)
    seg = n / nb
    iters = sweeps * np.ceil(seg / (th * VEC)) + np.asarray(job_extra_iters, float)
    merge_iters = np.where(nb > 1, 2.0 * np.ceil(nb * k / (th * VEC)), 0.0)
    rd = rows * (sweeps * n * P.SCORE_BYTES + np.where(nb > 1, nb * k * 8.0, 0.0))
    again = rd - rows * np.minimum(sweeps, 1.0) * n * P.SCORE_BYTES
    b.add("topk_trtllm", P.OP_KIND["trtllm"], flops=rows * sweeps * n * 4.0, bytes_read=rd,
          bytes_written=rows * k * 4.0, parallel_units=rows * nb * th / THREADS, serial_iters=iters + merge_iters,
          reread_bytes=again, working_set=rows * n * P.SCORE_BYTES, dtype="fp32", count=count, where=where)
