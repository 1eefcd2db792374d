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
