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
The engine (TensorRT-LLM's DSA indexer through its torch op, IndexerTopKOp.cpp @ 07339e94) reaches only two of these:
the single tier below 200,000 logits columns at every row count, and at or above it the original two-launch split
(10 x 512-thread slices, then a 1024-thread merge launch): `torch_op` (OP_SPLIT) prices it; the product's default
(strategy parameter trtllm_dispatch: engine).
Within a CTA (topKPerRowJob): float4 loads (vectorized_process), a 2048-bin histogram per step with a cub BlockScan
prefix, the final sort of the threshold bin's <= 2048 items an insertion sort (<= 512) or a BlockRadixSort.

Priced as one wave-model op per launch (topk_production's module docstring): CTAs = rows x blocks per row, two
512-thread CTAs resident per SM (REG_RESIDENT: 47-64 registers a thread; the narrow 256-thread CTAs keep CTA_SLOTS = 4
slots; one 1024-thread CTA per SM, WIDE_ALONE), each sweep ceil(slice / (threads x 4)) load rounds. `add_priced_ops` is THE
price (the product's `topk: {radix: {kernel: trtllm}}` and the calibration, simulator/calibration/topk_engines.py,
call it): the "job model" below, the on-chip phases of each CTA (block scans, the final sort) as loop rounds with
terms fitted on topk_engines.TRT_FIT (JOB_TERMS), the split path's slice and merge jobs with their own steps, and the
CTAs an SM runs one after another in a launch of more CTAs than SMs (SERIAL_PHASES), the split path's handshake
(HANDSHAKE_ROUNDS), and with `prefill` the prefill entry's launch (one 512-thread CTA per row); the kind's loads are a
closed loop, priced by hwmodels/roofline.py CHAIN_QUEUED. Blind on grid 7 (H100): 16.9 % median / 33.0 % p90; on grid 8
(prefill entry, split long rows): 17.0 / 38.8 % (main's price before these three 29.0 / 47.6); the block width's cost
(WIDE_ROUND_COST: a 1024-thread round is dearer than two 512-thread ones; NARROW_SORT_SHARE: a 256-thread CTA's sort
holds the SM half as long) blind on grid 9: 11.0 / 41.7 % (main's price before them 27.9 / 49.9); a 1024-thread CTA alone
on its SM (WIDE_ALONE) blind on grid 10: 20.8 / 35.8 % (before it 26.1 / 79.4); the split path's fixed stretch per
row (SPLIT_FIXED_ROUNDS, WIDE_ROUND_COST refitted after it) and a later lone CTA's share (LATER_CTA_SHARE) blind on
grid 11: 6.9 / 35.2 % (main 06e70f8's 20.9 / 38.1); two 512-thread CTAs per SM by their registers (REG_RESIDENT) blind on
grid 12: 6.2 / 25.7 % (main ea0997d's 17.0 / 41.8); their co-resident share measured on a scan (PAIR_SHARES) blind on
grid 13: 10.5 / 24.4 % (main 08cf44f's 13.3 / 25.4; the single CTAs' mid rows, whose re-sweeps hit the L2, now -14 %
fast); those shares with an L2 term (PAIR_L2_SHARE) blind on grid 14: 9.2 / 16.5 % (main 2bec4e2's 10.1 / 26.6 %, the
same 3 of 5 regimes: not shipped then); those shares with the L2 term and a sharper closed-loop knee where an SM keeps
two or more CTAs resident (QUEUE_P_SHARED, hwmodels/roofline.py CHAIN_QUEUED_P_SHARED) blind on grid 15: 6.0 / 18.8 %,
6 of 7 regimes (main 8c86417's 19.3 / 27.6 %, 2 of 7): SHIPPED (PAIR_SHARES = PAIR_SHARES_L2); the narrow 256-thread CTAs four per SM by
their registers (NARROW_REG) blind on grid 16: 13.5 / 25.3 % (main 60b5b38's 20.6 / 37.3 %, the same 1 of 3 regimes):
SHIPPED. `add_ops` is the first
look (no on-chip phases, ~64 % fast), kept for the record of grids 5-7; the multi-pass path is not priced
(KNOWN_GAPS).
"""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from simulator.kernels import topk_production as P

THREADS = 512                 # kNumThreadsPerBlock (decode single-block and split part 1)
VEC = 4                       # float4 loads (vectorized_process)
SPLIT_BLOCKS = 10             # indexerTopKDecodeFusedAuxBlocksPerRow's default


#: TensorRT-LLM's torch op as its DSA indexer calls it (the engine's dispatch; `torch_op`): indexer_topk_decode
#: (cpp/tensorrt_llm/thop/IndexerTopKOp.cpp @ 07339e94) passes splitWorkThreshold = 200 * 1000 to
#: invokeIndexerTopKDecodeImpl, which then uses it for every row count instead of adaptiveSplitWorkThreshold, and compares
#: it with numColumns, the logits tensor's width (the indexer's buffer: the engine's padded width, not the live length);
#: the indexer (tensorrt_llm/_torch/attention_backend/sparse/dsa.py, the version of that era) passes no
#: done_counter_scratch and no multi-pass scratch (pre_idx / heuristic_scratch only under enable_heuristic_topk, default
#: off, and GVR only on SM >= 100), so at or above the threshold the dispatcher takes its original two-launch split:
#: topKPerRowDecode<512, multipleBlocksPerRow> over a (rows, 10) grid (each CTA the job of a 1/10 slice, its k values
#: and indices to the aux buffers), then topKPerRowDecode<1024, mergeBlocks> over `rows` CTAs (each the job over the
#: 10 x k candidates); below it, the single-block tier as the kernel dispatch runs it (narrow 256-thread CTAs by the same
#: rule on numColumns). The fused split (topKPerRowDecodeFused) is never reached from the engine.
OP_SPLIT = 200_000
OP_BLOCKS = 10                # multipleBlocksPerRowConfig of the two-launch tier
_OP: dict = {"on": False, "width": None}


@contextmanager
def torch_op(width: float | None = None):
    """Within it, the dispatch functions (split_threshold, blocks_per_row, block_threads, narrow_block,
    launch_job_stats) and add_job_ops follow the engine's torch op (OP_SPLIT above) instead of the kernel's adaptive
    tiers; `width`: the logits buffer's width (numColumns: the split and the narrow choice read it; None = each row's
    own length, the measured case)."""
    old = dict(_OP)
    _OP.update(on=True, width=None if width is None else float(width))
    try:
        yield
    finally:
        _OP.update(old)


def _columns(n):
    """numColumns the dispatch compares: the torch op's logits width where torch_op gives one, else the row length."""
    n = np.asarray(n, float)
    return n if not (_OP["on"] and _OP["width"] is not None) else np.full(n.shape, _OP["width"])


def split_threshold(rows):
    """adaptiveSplitWorkThreshold of invokeIndexerTopKDecodeImpl: columns at which a row is split over several CTAs
    (within torch_op: OP_SPLIT at every row count)."""
    rows = np.asarray(rows, float)
    if _OP["on"]:
        return np.full(rows.shape, float(OP_SPLIT))
    return np.where(rows >= 128, np.inf, np.where(rows >= 64, 524 * 1024, np.where(rows > 8, 200_000, 65 * 1024)))


def blocks_per_row(rows, n, prefill: bool = False):
    """CTAs per row of the decode dispatch (module docstring): 1 below split_threshold, else
    indexerTopKDecodeFusedAuxBlocksPerRow's count; 1 for the prefill entry (`prefill`: invokeIndexerTopKPrefill launches
    topKPerRowPrefill, one CTA per row, whatever the row length)."""
    rows, n = np.asarray(rows, float), np.asarray(n, float)
    if prefill:
        return np.ones(np.broadcast(rows, n).shape)
    if _OP["on"]:   # the two-launch tier: always OP_BLOCKS CTAs a row
        return np.where(_columns(n) * np.ones(np.broadcast(rows, n).shape) >= split_threshold(rows), float(OP_BLOCKS),
                        1.0)
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
    rows, n = np.asarray(rows, float), _columns(n)
    thr = np.where(rows >= 4096, 200_000, np.where(rows >= 1024, 100_000, 12_288))
    return (rows >= 256) & (rows * n >= 4 * 2 ** 20) & (n < thr)


def block_threads(rows, n, prefill: bool = False):
    """Threads of the CTA that does a row's (or a slice's) job: 256 (narrow), 1024 (split work, slices >= 30,000),
    else 512; always 512 for the prefill entry (`prefill`: invokeIndexerTopKPrefill's kNumThreadsPerBlock)."""
    rows, n = np.asarray(rows, float), np.asarray(n, float)
    if prefill:
        return np.full(np.broadcast(rows, n).shape, float(THREADS))
    nb = blocks_per_row(rows, n)
    if _OP["on"]:   # the two-launch tier's part 1: 512-thread CTAs whatever the slice
        return np.where(nb > 1, float(THREADS), np.where(narrow_block(rows, n), float(NARROW), float(THREADS)))
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


def hist_conflict(x: np.ndarray) -> float:
    """The step-0 histogram's shared-memory atomic conflict of a row (grid 22's candidate statistic): distributeToBins
    (processHistogramStep<0> of indexerTopK.cu @ 07339e94) reads one float4 a lane (vectorized_process) and issues its
    four atomicAdd(&histo[bin]) one element at a time, so each warp-wide atomic holds the bins of 32 lanes' j-th
    elements (lane l of warp w in round i: element 4 (l + 32 w + threads i) + j); lanes on the same bin serialize.
    Returned: the mean over those 32-lane atomics of the largest number of lanes on one bin (1 = no conflict, 32 =
    all on one bin), from the fp16 key >> 5 bins the step uses (extractBinIdx<0>); the tail past the last full warp
    group and the row's misaligned head (vectorized_process's skip_cnt) are left out. Recorded scores fall in ~35-45
    of the 2048 bins (~5.8 lanes a bin), gaussian in ~450 (~1.9), uniform in ~230 (~2.4)."""
    x = np.asarray(x, np.float32)
    m = (len(x) // 128) * 128
    if m == 0:
        return 1.0
    b = (P._fp16_key(x[:m]) >> 5).astype(np.int64).reshape(-1, 32, 4).transpose(0, 2, 1).reshape(-1, 32)
    a = np.sort(b, axis=1)
    idx = np.arange(32)
    new = np.ones(a.shape, bool)
    new[:, 1:] = a[:, 1:] != a[:, :-1]
    start = np.maximum.accumulate(np.where(new, idx, 0), axis=1)
    return float((idx - start + 1).max(axis=1).mean())


def launch_job_stats(x: np.ndarray, rows: int, k: int = 2048, nb: int | None = None, th: int | None = None) -> dict:
    """A row's on-chip phases on its critical path for the decode dispatch at `rows` rows: one job over the row (single
    CTA), or a job over one slice (the slowest of the slices) plus the last CTA's merge job over the slices' top-k
    candidates (split work; merge at the part's width). `nb` / `th` override the dispatch of (rows, len(x)) (a row
    resampled to another length keeps the launch of the length it stands for). Also the full sweeps on that path:
    `sweeps` = 2 per step of the row's (or the slowest slice's) job, `merge_sweeps` = 2 per step of the merge job over
    nb x k candidates (topKPerRowDecodeFused: the last CTA runs topKPerRowJob<mergeBlocks> over them, step after step
    while its threshold bin holds > 2048: the slices' top values crowd the merge's threshold bin)."""
    n = len(x)
    nb = int(blocks_per_row(rows, n)) if nb is None else int(nb)
    th = int(block_threads(rows, n)) if th is None else int(th)
    if nb == 1:
        js = job_stats(x, th, k)
        return {c: js[c] for c in JOB_NAMES} | {"sweeps": 2.0 * js["steps"], "merge_sweeps": 0.0, "threads": th,
                                                "conflict": hist_conflict(x) if n > k else 0.0,
                                                "rank_work": js["rank_items"] * np.ceil(js["rank_items"] / th)}
    parts = np.array_split(x, nb)
    js = [job_stats(s, th, k) for s in parts]
    part = max(js, key=lambda d: d["steps"] * 64 + d["scan_rounds"] + d["radix"] * 8 + d["rank_items"] / 64)
    cand = np.concatenate([np.partition(s, len(s) - k)[len(s) - k:] if len(s) > k else s for s in parts])
    if _OP["on"]:   # the two-launch tier: the merge is its own 1024-thread launch (`merge`, add_job_ops prices it)
        mj = job_stats(cand, WIDE, k)
        return {c: part[c] for c in JOB_NAMES} | {"sweeps": 2.0 * part["steps"], "merge_sweeps": 2.0 * mj["steps"],
                                                  "threads": th, "slice": {c: part[c] for c in JOB_NAMES},
                                                  "merge": {c: mj[c] for c in JOB_NAMES}}
    mj = job_stats(cand, th, k)
    return {c: part[c] + mj[c] for c in JOB_NAMES} | {"sweeps": 2.0 * part["steps"],
                                                       "merge_sweeps": 2.0 * mj["steps"], "threads": th,
                                                       "slice": {c: part[c] for c in JOB_NAMES}}


def job_iters(stats: dict, terms: dict):
    """Extra loop rounds (units of the kind's iter_us) of a CTA's on-chip phases: terms = {"scan": rounds per block-scan
    round, "radix": per BlockRadixSort of 2048 keys, "rank": per staged item of the all-pairs rank}."""
    return (terms["scan"] * np.asarray(stats["scan_rounds"], float) + terms["radix"] * np.asarray(stats["radix"], float)
            + terms["rank"] * np.asarray(stats["rank_items"], float))


def ctas_per_sm(rows, n, sms, prefill: bool = False):
    """CTAs of one launch the busiest SM runs over the whole launch: ceil(rows x blocks per row / SMs) (the block
    scheduler deals CTAs out over the SMs; up to CTA_SLOTS of them resident at once)."""
    return np.ceil(np.asarray(rows, float) * blocks_per_row(rows, n, prefill) / max(float(sms), 1.0))


#: a 1024-thread CTA is alone on its SM: topKPerRowDecodeFused's 1024-thread instantiation is compiled under
#: __launch_bounds__(1024) (indexerTopK.cu @ 07339e94), which caps a thread at 64 registers, and 1024 x 64 = 65,536
#: registers is a whole sm_90 SM's register file, so the block scheduler places ONE such CTA per SM (not the two its
#: 2048 threads would allow): a launch of more 1024-thread CTAs than SMs runs them one after another on each SM, each
#: paying its whole sweeps and on-chip job; nothing of a later CTA overlaps an earlier one (ASSUMPTION from the
#: launch bounds and the H100's 64 Ki registers per SM; the compiler may use fewer, which the launch bounds do not
#: promise; chosen with grids 8-9's multi-wave 1024-thread split launches LOOKED-AT, judged blind on grid 10). With it
#: off, a 1024-thread CTA takes two of CTA_SLOTS and co-resident CTAs add their SERIAL_PHASES (the model before)
WIDE_ALONE = True


#: the kind's 512-thread CTAs are register-limited to REG_CTAS per SM, not the CTA_SLOTS = 4 their threads allow: ptxas
#: (nvcc 13.0, -arch=sm_90a) gives the transcribed kernels of indexerTopK.cu @ 07339e94 topKPerRowDecodeFused<512> 64
#: registers a thread (cuobjdump -res-usage of the device build agrees, grid 10's log), topKPerRowPrefill<512> 51 and
#: topKPerRowDecode<512> 47; allocated per warp in units of 256 registers (8 a thread: 64 / 56 / 48), a CTA holds
#: 32,768 / 28,672 / 24,576 of the SM's 65,536, so two fit (shared memory, ~27-37 KiB with the dynamic output buffer,
#: would allow six). With REG_RESIDENT a launch's 512-thread CTAs count two per SM in its waves and its rows in flight
#: (the op's resident_ctas), and an SM that runs c > 1 of them over the launch (ctas_per_sm) holds on its path, beside
#: its slowest CTA, (c - 1) / REG_CTAS of the other CTAs' sweep rounds and whole job (slice job on the split path; the
#: merge once per row: merge_waves; this assumed share is the rule only with PAIR_SHARES None: the shipped share is
#: PAIR_SHARES's, measured), where the model before charged the co-resident CTAs' block scans and radix sorts
#: whole (SERIAL_PHASES) and overlapped their sweeps fully: two CTAs share the SM's issue and each one's rounds are
#: latency-bound, so the pair takes about one CTA's time and a third CTA waits for a slot (ASSUMPTION from the residency;
#: no constant fitted: a lone CTA per SM, every fit row, prices as before). Chosen with grids 7-11's multi-CTA 512-thread
#: rows LOOKED-AT (split launches 10.5 / 89.5 -> 4.2 / 18.0 %, the prefill entry's mid rows 26.6 / 43.5 -> 2.9 / 17.9
#: %; its long rows +5 -> +20 %), judged blind on grid 12. The narrow 256-thread CTAs (topKPerRowDecode<256>, 62
#: registers: four per SM, the same two 512-thread units) kept the CTA_SLOTS rule (eight a wave) up to grid 15; with
#: NARROW_REG they count by their registers too: 62 registers a thread (cuobjdump -res-usage of the device build, grids
#: 10-16's logs), allocated 64, 256 x 64 = 16,384 of the SM's 65,536: four per SM (shared memory, 17,424 B static +
#: 8,192 B of output buffer, would allow eight), so a launch of narrow CTAs counts four per SM in its waves, each wave's
#: co-resident CTAs still charged by SERIAL_PHASES with NARROW_SORT_SHARE (no constant fitted; ASSUMPTION that the
#: register limit is the residency: the source's launch and ptxas's count, not a measured occupancy). Judged blind on
#: grid 16 (33 new shapes, 28 narrow launches over short rows, all prices committed before measuring, e170f4f): 13.5 /
#: 25.3 % pooled where main 60b5b38's eight-a-wave rule had 20.6 / 37.3 %, the same 1 of 3 regimes met (the controls;
#: both narrow regimes missed either way: <= 8 CTAs per SM 21.8 / 31.2 -> 12.5 / 24.4 %, > 8 CTAs per SM 21.1 / 41.3 ->
#: 15.0 / 29.3 %): SHIPPED on the lower pooled median and p90. A 1024-thread CTA is alone on its SM either way
#: (WIDE_ALONE)
REG_RESIDENT = True
REG_CTAS = 2.0
NARROW_REG = True

#: the share of a co-resident 512-thread CTA's work on its SM's path, MEASURED (replacing REG_RESIDENT's assumed 1 /
#: REG_CTAS): an SM that runs c > 1 of the launch's 512-thread CTAs runs them REG_CTAS at a time, so ceil(c / REG_CTAS)
#: of them (each group's first) are on its path whole and each other one adds PAIR_SHARES[path]["sweep"] of its sweep
#: rounds and ["job"] of its on-chip job (block scans, final sort; the split path's slice job, the merge once per row),
#: per path: "single" = topKPerRowDecode<512> / topKPerRowPrefill<512> (one CTA per row), "split" =
#: topKPerRowDecodeFused<512> (slices < 30,000 scores) of indexerTopK.cu @ 07339e94. Fitted by
#: topk_engines.fit_pair_shares on the named TRT_PAIR_FIT scan (one device call, H100, 2026-11-27: 46 single-CTA rows at
#: 55K / 120K / 250K x 132-1020 rows, 1-8 CTAs per SM, both entries, recorded and gaussian scores; 18 split rows, 32-63
#: rows x 200K-290K), each path on its own rows: the single CTAs fit 0 / 0 (rms log 0.097; the pair's cost is what the
#: kind's closed load loop already charges for the doubled loads in flight, hwmodels/roofline.py CHAIN_QUEUED: measured
#: 250K rows take 1.29 / 2.24 / 2.50 / 4.78 x one lone CTA at 2 / 3 / 4 / 8 CTAs per SM, i.e. groups of two), the split
#: CTAs 0.465 / 0.244 (rms 0.129; their slices are short, their re-sweeps mostly L2 hits that the load loop's HBM queue
#: does not charge). Recorded in the fitted file's production_kernels.topk_trtllm (pair_*); None = the assumed rule
#: NOT SHIPPED: on blind grid 13 (both prices committed before measuring) it met 3 of 7 regimes where the assumed rule
#: met 4 of 7 (pooled 10.5 / 24.4 % vs 13.3 / 25.4 %): it closes the single CTAs' long rows (19.2 -> 10.5 % median) but
#: loses their mid rows (21K-48K: 2.5 -> 13.9 %), whose second sweep is an L2 hit the scan (every multi-CTA single row
#: >= 58 MB) could not show. The fitted shares stay as PAIR_SHARES_CANDIDATE; PAIR_SHARES None = the assumed rule
#: (the shipped rule up to grid 14: after grid 15 PAIR_SHARES = PAIR_SHARES_L2, set below)
PAIR_SHARES_CANDIDATE = {"single": {"sweep": 0.0, "job": 0.0}, "split": {"sweep": 0.465, "job": 0.244}}
PAIR_SHARES: dict | None = None

#: the candidate rule plus an L2 term (PAIR_SHARES_CANDIDATE's single-CTA shares, 0 / 0, were fitted on scan rows whose
#: rows in flight (>= 58 MB at >= 2 CTAs per SM) outgrow the L2, where the kind's closed load loop (hwmodels/roofline.py
#: CHAIN_QUEUED) already charges the second CTA's loads in the HBM queue): a co-resident single CTA's sweep rounds whose
#: loads HIT the L2 cost the SM PAIR_L2_SHARE of them. An L2-hit round is short (no HBM queue) and its work is issue:
#: per float4 four bin extractions, four shared-memory atomicAdds (processHistogramStep's distributeToBins) or four
#: compares and staging atomics (processBins), every thread of both 16-warp CTAs issuing on the same four schedulers
#: (indexerTopK.cu @ 07339e94: vectorized_process keeps one float4 load in flight a thread); with the loads from the L2
#: the pair's rounds no longer hide behind each other's latency, and nothing in the HBM queue charges them (ASSUMPTION
#: from the kernel's structure; bounded 0..1: 1 = the pair's L2-hit rounds fully serial). The hit share of a CTA's
#: sweeps is pair_l2_hit's (its first sweep at the whole tensor's reuse distance, its re-sweeps at the rows in flight's:
#: the roofline's SWEEP_REREAD reuse, on the device's measured curve where the caller passes it). Fitted by
#: topk_engines.fit_pair_l2 on the named TRT_PAIR_L2_FIT rows only (grid 13's single-CTA mid rows, both entries, and grid
#: 12's 200 x 30K: measured, LOOKED-AT before, named as fit rows) and the named TRT_PAIR_L2_SCAN (one device call, H100,
#: 2026-11-27: 20K / 32K / 45K x 132-1020 rows, both entries), each entry on its own rows: decode dispatch 0.487 (23
#: rows, rms log 0.203 -> 0.075), prefill entry 0.389 (21 rows, 0.163 -> 0.098); the split path keeps its fitted shares
#: (its scan rows were all L2-resident: their 0.465 carries the L2 part). PAIR_SHARES_L2 = the candidate with this term.
#: NOT SHIPPED: on blind grid 14 (all three prices committed before measuring) it met 3 of 5 TensorRT-LLM regimes, as
#: the assumed rule did (the pair shares alone 2 of 5), where shipping needed more: pooled 9.2 / 16.5 % (rms log 0.107)
#: against main's 10.1 / 26.6 % (0.152), single CTAs at mid rows 8.4 / 23.3 -> 7.6 / 13.7 %, long rows 17.2 / 31.3 ->
#: 12.5 / 16.8 % (missed either way), the prefill entry's mid rows 2.3 / 6.5 -> 9.2 / 13.1 % (+9 % slow, met either way)
#: REFITTED after the on-chip grid (2026-11-29, simulator/calibration/topk_trtllm_onchip.py fit_onchip, the same fit
#: rows and order, with the job's rounds off the load chain, ONCHIP_JOB): decode 0.487 -> 0.546, prefill 0.389 -> 0.519;
#: the single CTAs' job share 0 -> 0.202 and the split CTAs' 0.465 / 0.244 -> 0.611 / 0.621 (fit_pair_shares: rms log
#: 0.0556 and 0.0683 on the TRT_PAIR_FIT scan). Judged blind: 12 of 12 regimes against 9 of 12
PAIR_L2_SHARE = 0.546
PAIR_L2_JOB = True
PAIR_L2_SHARE_PREFILL = 0.519
PAIR_SHARES_L2 = {"single": {"sweep": 0.0, "job": 0.202, "l2_sweep": PAIR_L2_SHARE,
                             "l2_sweep_prefill": PAIR_L2_SHARE_PREFILL},
                  "split": {"sweep": 0.611, "job": 0.621, "l2_sweep": 0.0}}
#: the values before the on-chip refit (grids 14-15's fits): kept for the record
PAIR_SHARES_L2_BEFORE_ONCHIP = {"single": {"sweep": 0.0, "job": 0.0, "l2_sweep": 0.487, "l2_sweep_prefill": 0.389},
                                "split": {"sweep": 0.465, "job": 0.244, "l2_sweep": 0.0}}

#: the closed load loop's knee where an SM keeps two or more CTAs resident (hwmodels/roofline.py CHAIN_QUEUED_P_SHARED;
#: the shipped CHAIN_QUEUED_P = 1.5 was chosen with one CTA per SM in the fit rows): in indexerTopK.cu @ 07339e94 a CTA
#: stops loading for its on-chip phases (processHistogramStep's cub::BlockScan rounds between __syncthreads, the final
#: sort), each thread otherwise holding ONE float4 load in flight (vectorized_process); two co-resident CTAs (REG_CTAS,
#: by registers) are out of phase, so one's loads keep the HBM queue full through the other's barriers and the launch
#: turns from latency- to queue-bound over a shorter stretch: a sharper knee, (chain^q + body^q)^(1/q) with q > 1.5.
#: Where grids 11-14 missed it: single 512-thread CTAs at long rows (> 64K) at 2-7 CTAs per SM and the prefill entry's
#: long rows ran +10..+43 % slow-priced with max(body, chain) within 5-26 % of the measured time while the 1.5-knee added
#: 36-51 % (ASSUMPTION from the kernel's structure; the value scanned, topk_engines.fit_queue_p_shared, over the named
#: looked-at rows of grids 11-14 (every TensorRT-LLM row but the narrow launches, 133 rows) with PAIR_SHARES_L2: rms log
#: error 0.0865 at 2.0, 0.1053 at 1.5). Judged with PAIR_SHARES_L2 on blind grid 15 (37 new shapes, all three prices
#: committed before measuring): 6.0 / 18.8 %, 6 of 7 regimes, where main 8c86417's rule met 2 of 7 (19.3 / 27.6 %) and
#: main's rule with this knee alone 4 of 7 (8.9 / 28.4 %): SHIPPED, as hwmodels/roofline.py CHAIN_QUEUED_P_SHARED (equal
#: to this constant; tests check) with PAIR_SHARES = PAIR_SHARES_L2 below
QUEUE_P_SHARED_CANDIDATE = 2.0
#: WITHDRAWN after the on-chip grid (2026-11-29): refitted with the job's rounds off the load chain (ONCHIP_JOB) the
#: scan's best is 1.5, the lone CTA's knee (hwmodels/roofline.py CHAIN_QUEUED_P): None = one knee everywhere
QUEUE_P_SHARED = None
#: SHIPPED after grid 15: the measured pair shares with the L2 term (PAIR_SHARES_L2; not shipped alone on grid 14, where
#: they tied main's regimes: with the sharper knee above they met 6 of grid 15's 7 regimes, main's rule 2)
PAIR_SHARES = PAIR_SHARES_L2


def pair_l2_hit(rows, n, sweeps: float, sms: float, l2_bytes: float | None, curves: dict | None = None,
                prefill: bool = False) -> float:
    """Share of a single 512-thread CTA's sweep rounds whose loads hit the L2: its first sweep re-reads the row after
    the whole tensor (rows x n x 4 B) passed, its later sweeps after the rows in flight passed (min(rows, sms x
    REG_CTAS) rows: topk_production's SWEEP_REREAD reuse distances), each hit by the device's measured curve for that
    pattern (`curves`: Efficiency.l2_sweep_hit's "first" / "again", (set_over_l2, hit)) where given, else all-or-nothing
    at the L2's size (the roofline's uncalibrated rule); 0 without an L2 size."""
    if not l2_bytes or sweeps <= 0.0:
        return 0.0
    nb = float(blocks_per_row(rows, n, prefill))
    inflight = min(float(rows) * nb, float(sms) * REG_CTAS) / nb
    curves = curves or {}

    def hit(pattern, x):
        c = curves.get(pattern)
        return float(np.interp(x, c[0], c[1])) if c is not None else float(x <= 1.0)
    first = hit("first", float(rows) * float(n) * P.SCORE_BYTES / l2_bytes)
    again = hit("again", inflight * float(n) * P.SCORE_BYTES / l2_bytes)
    return (min(sweeps, 1.0) * first + max(sweeps - 1.0, 0.0) * again) / sweeps


def sm_slots(threads=None):
    """512-thread slots an SM holds for a CTA of `threads` threads: REG_CTAS under REG_RESIDENT (the narrow 256-thread
    CTAs CTA_SLOTS unless NARROW_REG), else the kind's CTA_SLOTS."""
    if not REG_RESIDENT:
        return P.CTA_SLOTS["trtllm"]
    if threads is None or NARROW_REG:
        return REG_CTAS
    return np.where(np.asarray(threads, float) < THREADS, P.CTA_SLOTS["trtllm"], REG_CTAS)


def resident_units(threads):
    """A CTA of `threads` threads in 512-thread slots for the wave count: threads / 512, and a whole SM's slots
    (sm_slots) for a 1024-thread CTA (WIDE_ALONE)."""
    t = np.asarray(threads, float)
    if WIDE_ALONE:
        return np.where(t > THREADS, sm_slots(), t / THREADS)
    return t / THREADS


def launch_waves(rows, n, sms, prefill: bool = False):
    """Waves of the launch in 512-thread slots (CTA_SLOTS per SM; a 256-thread CTA half a slot, a 1024-thread one
    the whole SM: resident_units), as hwmodels.roofline `waves` counts them for add_job_ops's ops."""
    rows, n = np.asarray(rows, float), np.asarray(n, float)
    units = rows * blocks_per_row(rows, n, prefill) * resident_units(block_threads(rows, n, prefill))
    return np.maximum(np.ceil(units / (sm_slots(block_threads(rows, n, prefill)) * max(float(sms), 1.0))), 1.0)


#: the on-chip phases whose work co-resident CTAs cannot overlap (shape_terms): the block scans (every thread of the
#: CTA in each cub::BlockScan round, between __syncthreads) and the BlockRadixSort of the threshold bin (every thread,
#: several shared-memory passes). The all-pairs rank of <= 512 staged items is NOT among them: only ceil(items / 32)
#: warps of the CTA walk it, each one dependent shared-memory load per item, so the SM's other CTAs' warps issue in
#: its shadow (ASSUMPTION from the loop's structure in topKPerRowJob; chosen with grid 5-6's multi-CTA-per-SM rows
#: LOOKED-AT, judged blind on grid 7)
SERIAL_PHASES = ("scan", "radix")


#: a narrow CTA's BlockRadixSort holds the SM's issue slots for threads / 512 of a 512-thread CTA's sort: the fitted
#: radix term is a lone 512-thread CTA's latency-bound sort (16 warps, cub::BlockRadixSort<float, 512, 4>); a 256-thread
#: CTA (useNarrowBlock: BlockRadixSort<float, 256, 8>, kNumFinalItemsPerThread = 2048 / threads, TopKSmem of
#: indexerTopK.cu @ 07339e94) runs the same passes with 8 warps at the same per-warp issue rate, so two co-resident
#: sorts share the SM's schedulers (ASSUMPTION from the kernel's structure, the scan's rounds x t / 512 rule applied to
#: the sort; chosen with grids 7-8's narrow short rows LOOKED-AT, +39..+103 %, judged blind on grid 9). Never above
#: one (a 1024-thread CTA is alone on its SM in every split launch)
NARROW_SORT_SHARE = True

#: NOT SHIPPED (grid 16's record; see NARROW_SHARES_CANDIDATE): the narrow 256-thread CTAs held NARROW_CTAS at a time per
#: SM by their registers (NARROW_REG), each group's first CTA on the SM's path whole, each other one adding NARROW_SHARES
#: of its sweep rounds ("sweep"), of its BlockRadixSort ("radix", default "job") and of the rest of its on-chip job
#: ("job"); None = the shipped rule (NARROW_REG's waves, SERIAL_PHASES with NARROW_SORT_SHARE)
NARROW_CTAS = 4.0
NARROW_SHARES: dict | None = None
#: the shares fitted by topk_engines.fit_narrow_shares on the looked-at narrow rows of grids 5-15 (73 rows, NARROW_REG
#: on; rms log error 0.186, where NARROW_REG with the shipped co-resident rule, SERIAL_PHASES / NARROW_SORT_SHARE, has
#: 0.173 and main 0.242): priced beside the candidate on grid 16 for the record, not the shipping candidate; blind on
#: grid 16 13.9 / 22.3 % pooled, 1 of 3 regimes (<= 8 CTAs per SM 16.3 / 26.6 %, > 8 CTAs per SM 13.1 / 21.5 %)
NARROW_SHARES_CANDIDATE = {"sweep": 0.023, "job": 0.165}


#: NOT SHIPPED unless set (grid 17's candidate): the narrow 256-thread CTAs (useNarrowBlock: topKPerRowDecode<256>) priced
#: PER CTA: the busiest SM's c = ctas_per_sm narrow CTAs are c whole per-CTA costs on its path, nothing of one CTA's
#: sweep rounds or on-chip phases hidden behind another's; the SM's FIRST CTA is priced as a lone CTA (the fitted
#: latency-bound JOB_TERMS at round cost 1: the launch's first wave starts every SM at once), each LATER one at the
#: narrow costs below (the looked-at rows' time is ~12 us + c x a per-CTA cost). From topKPerRowJob of indexerTopK.cu @ 07339e94 a narrow CTA
#: (kNumThreadsPerBlock 256, kNumFinalItemsPerThread 8) does per phase: each step's two sweeps (distributeToBins'
#: histogram pass and processBins' staging pass: vectorized_process, ONE float4 load in flight a thread, then four
#: shared-memory atomics) of ceil(n / 1024) rounds, each round priced NARROW_PERCTA["round"] of the kind's 512-thread
#: load rounds (a narrow round moves half the bytes of a 512-thread one; the looked-at rows say the SM's co-resident
#: narrow CTAs do not overlap each other's rounds: ~18 GB/s per SM); each step's block scan of the 2048-bin histogram
#: (ceil((2048 - tb) / 256) cub::BlockScan rounds: JOB_TERMS["scan"] each, 8 warps); the final sort of the threshold
#: bin, cub::BlockRadixSort<float, 256, 8> where it holds > 512 staged items (NARROW_PERCTA["radix"] rounds, its own
#: narrow term: 8 warps x 8 keys, not the lone 512-thread CTA's latency-bound JOB_TERMS["radix"]), else the all-pairs
#: rank (JOB_TERMS["rank"] per staged item). ASSUMPTION from the kernel's structure and the looked-at rows' linearity in
#: c; the two constants fitted by topk_engines.fit_narrow_percta on the narrow rows of grids 5-16 (looked-at); None =
#: the shipped rule (NARROW_REG's waves, SERIAL_PHASES with NARROW_SORT_SHARE)
NARROW_PERCTA: dict | None = None
#: fitted by topk_engines.fit_narrow_percta (81 looked-at narrow short rows of grids 5-16, rms log error 0.133)
NARROW_PERCTA_CANDIDATE = {"round": 0.3836, "scan": 0.1002, "radix": 11.5931, "rank": 0.0481}
#: the rule's scope: narrow launches over short rows (n <= 16,384, its fit rows' range); longer narrow rows (>= 1024
#: rows, up to 100K-200K) keep the shipped rule
NARROW_PERCTA_MAX_N = 16384
#: SHIPPED after grid 17 (39 blind rows, both prices committed before measuring, ce6191e): 1 of 3 regimes as main
#: de97b41 (the controls), pooled 11.3 / 22.7 % (signed +0.4) against main's 13.6 / 23.8 % (-10.7): shipped by the tie
#: rule (lower pooled median AND p90); <= 8 CTAs per SM 14.9 / 26.0 -> 15.7 / 22.2 %, > 8 11.5 / 21.9 -> 11.3 / 22.8 %
#: (grid 17's rule as shipped up to grid 20; grid 20 ships NARROW_PERCTA_FIRST_CANDIDATE below in its place)
NARROW_PERCTA = NARROW_PERCTA_CANDIDATE

#: NOT SHIPPED unless set (grid 18's candidate): a narrow short-row launch under NARROW_PERCTA priced ADDITIVELY, its
#: busiest SM's per-CTA chain alone (the c CTAs' load rounds and on-chip phases end to end), NOT through the kind's
#: closed-loop knee (hwmodels/roofline.py CHAIN_QUEUED: sqrt(body^2 + chain^2) at >= 2 CTAs per SM), which bends the
#: per-CTA rule's linear-in-c form. From topKPerRowJob of indexerTopK.cu @ 07339e94: a 256-thread CTA keeps ONE float4
#: load in flight a thread (vectorized_process), 1,024 loads an SM-resident CTA, ~4 KB per round trip, far from the
#: HBM queue (a 3,000-row launch of 8K scores streams ~100 MB over ~150 us: < 1 TB/s), so the loads' queue is not the
#: bound and the chain is the time (ASSUMPTION from the kernel's structure and grid 17's c >= 21 rows, +20..+36 % slow
#: through the knee). In add_job_ops the launch's bytes leave the roofline's body (the knee then returns the chain);
#: the re-read bytes stay (the L2 share of a round). Constants NARROW_PERCTA_ADD_CANDIDATE refitted by
#: topk_engines.fit_narrow_additive on the narrow short rows of grids 5-17 (all looked-at). False = the shipped rule
NARROW_ADDITIVE = False
NARROW_PERCTA_ADD_CANDIDATE: dict = {"round": 0.6112, "scan": 0.003, "radix": 20.2477, "rank": 0.051}
#: (fit_narrow_additive: 115 looked-at narrow short rows of grids 5-17, rms log error 0.0902; the shipped per-CTA rule
#: through the knee 0.1401 on the same rows)

#: NOT SHIPPED after grid 18 (36 blind rows, both prices committed before measuring, 83db7bc): it met 2 of 3 regimes as
#: main 922980a did, pooled 6.0 / 20.1 % (signed -2.2) against main's 12.2 / 23.7 % (+2.7), which the tie rule would
#: ship; but after the measurement the lead found a DEFECT in it: add_job_ops scales the launch's bytes by 1e-6 and
#: leaves reread_bytes (the L2 re-read credit) unscaled, so the roofline's L2 credit exceeds the bytes and the memory
#: term goes NEGATIVE (-17..-35 us on 16 of grid 18's rows). Its committed (judged) prices carry that defect; scaling
#: the credit too moves them 0.55-1.44x, a model no grid has judged. Grid 17's rule (NARROW_PERCTA_CANDIDATE through
#: the knee) stays shipped; the candidate is kept as it was judged (narrow_additive(True, NARROW_PERCTA_ADD_CANDIDATE)
#: reproduces its committed prices), to be fixed and re-judged on a fresh grid

#: grid 19's REPAIR of that defect (NOT SHIPPED unless set): with NARROW_ADD_BOUNDED the re-read credit (reread_bytes,
#: the later sweeps' bytes of the same CTA, which the roofline's SWEEP_REREAD rule turns into L2 hits) is scaled by the
#: same factor as the bytes it re-reads (1e-6 on a narrow short-row launch under NARROW_ADDITIVE, 1 elsewhere) and
#: bounded by them (reread_bytes <= bytes_read, both in bytes of the one op): the roofline's memory term is then >= 0
#: (a ~0 body; the knee returns the chain), and the L2 share of a round (hit bytes / bytes read: the kind's iter_l2_s
#: blend) is the unscaled launch's, since both scale alike. Off = grid 18's candidate as judged (its committed prices).
#: Every other launch is unchanged either way (keep = 1 there and again <= rd already: add_job_ops's `again` is the
#: bytes of all but the first sweep). The terms refitted with it: NARROW_PERCTA_BOUNDED_CANDIDATE below
NARROW_ADD_BOUNDED = False
#: the per-CTA terms refitted with NARROW_ADDITIVE and NARROW_ADD_BOUNDED on, by topk_engines.fit_narrow_bounded on the
#: 146 looked-at narrow short rows of grids 5-18 (rms log error 0.1462; on the same rows main's shipped rule, grid 17's
#: per-CTA rule through the knee, has 0.1449 and grid 18's defective candidate 0.1073: its gain was the defect's, a
#: negative body squared into the knee). NOT SHIPPED after grid 19 (35 blind rows, both prices committed before
#: measuring, 2b60d40; one H100 call): 1 of 3 regimes as main f9af03b (the controls), pooled 14.3 / 22.2 % (signed
#: -9.6) against main's 13.1 / 22.7 % (-9.1): a higher median, so the tie rule keeps main; <= 8 CTAs per SM 16.1 / 22.6
#: -> 14.9 / 22.1 %, > 8 13.1 / 21.7 -> 16.9 / 18.9 % (both missed either way; benchmarks/accuracy_sections/topk_grid19.py)
NARROW_PERCTA_BOUNDED_CANDIDATE: dict = {"round": 0.3795, "scan": 0.5544, "radix": 12.1763, "rank": 0.0345}


#: grid 20's candidate (SHIPPED after grid 20, below): grids 5-19's narrow short rows (all looked-at) run ~23 us
#: + ~8 us per CTA on the busiest SM on recorded scores where the per-CTA rule prices ~12 us + ~10 us (the first CTA
#: too cheap, each later one too dear), and uniform rows the other way (+27 % at 4 CTAs per SM, -13 % at 10). The three
#: score kinds differ in the pass statistics the model already carries for each row (launch_job_stats over its own
#: scores): recorded rows scan 7 block-scan rounds (their threshold bin lies deeper in the 2048-bin histogram) and sort
#: their threshold bin with cub::BlockRadixSort on 10-60 % of rows (more at longer rows), gaussian and uniform rows scan
#: 3 and rank <= 512 staged items (uniform ~3x gaussian's). So the SM's FIRST narrow CTA adds, on top of the lone CTA's
#: JOB_TERMS price, `first` + `first_scan` x its block-scan rounds + `first_radix` x its radix-sort share (+
#: `first_rank` x its staged items) loop rounds (the NARROW_PERCTA dict's optional keys; absent = 0 = the shipped
#: rule), and the per-CTA slope terms (round, scan, radix, rank) are refitted with it. ASSUMPTION: the first CTA's
#: extra part is linear in its pass statistics (the launch's first wave: every SM's first CTA loads at once; its
#: block scans, sort or rank then run with the SM's three other register-resident CTAs issuing beside it); fitted by
#: topk_engines.fit_narrow_first on the 177 narrow short rows of grids 5-19 (all looked-at), form chosen by
#: leave-one-grid-out error over grids 16-19 (topk_engines.NARROW_FIRST_FORMS)
FIRST_STATS = (("", None), ("_scan", "scan_rounds"), ("_radix", "radix"), ("_rank", "rank_items"),
               ("_conflict", "conflict"), ("_rankw", "rank_work"))   # (grid 22's candidate: the last two)
NARROW_PERCTA_FIRST_CANDIDATE: dict = {"first": -100.7869, "first_scan": 33.4349, "first_radix": -169.7668,
                                       "round": 0.4742, "scan": 0.0001, "radix": 10.0176, "rank": 0.0195}
#: (fit_narrow_first "kind": rms log error 0.0993 on the 177 rows, where main's per-CTA rule refitted alone has 0.1435;
#: leave-one-grid-out |error| median 5.5-6.9 %, p90 10.0-19.4 % on grids 16-19 vs 12.3-15.2 / 18.0-21.5 % for the slope
#: alone: on recorded rows the first part is ~31 rounds at a 0.6 radix share and ~117 at 0.1; ~0 on gaussian / uniform)
#: the same with the first CTA's part read from its staged items alone (first + first_rank x rank_items): reported
#: beside the candidate on grid 20, not the shipping candidate
NARROW_PERCTA_FIRST_RANK: dict = {"first": -20.0004, "first_rank": 0.3702, "round": 0.3233, "scan": 1.1604,
                                  "radix": 7.5927, "rank": 0.0002}   # fit_narrow_first "rank": rms 0.1109
#: SHIPPED after grid 20 (35 blind rows, all three prices committed before measuring, eae2283; one H100 call, 42 s):
#: 2 of 3 regimes against main b118817's 1 (the controls): <= 8 CTAs per SM 13.6 / 21.1 % (signed -7.6) -> 8.0 / 17.8 %
#: (+0.4) MET, > 8 15.5 / 26.1 (-6.0) -> 10.2 / 22.5 % (-4.7) missed by 0.2 points; pooled 12.5 / 23.1 -> 8.5 / 19.3 %
#: (benchmarks/accuracy_sections/topk_grid20.py). Grid 17's rule: NARROW_PERCTA_CANDIDATE (narrow_additive(False, it))
NARROW_PERCTA = NARROW_PERCTA_FIRST_CANDIDATE

#: grid 21's candidate (NOT SHIPPED unless set as NARROW_PERCTA): grid 20's first-CTA rule whose narrow short-row
#: launches' L2 working set also holds their output indices (`out_set` 1: narrow_out_set, rows x 2048 x 4 B), the
#: first-CTA part and per-CTA slope refitted with it. Why: on grids 5-20's 208 narrow short rows (all looked-at) the
#: shipped rule's error follows the scores' share of the 50 MiB L2, not the CTA count: 0.57-0.80 of it -15..-25 %
#: (the device's "first" re-read curve, measured on a read-only x.sum(), keeps them resident), above 0.85 +3..+10 %
#: (the slope making up for them), below 0.5 ~+5 %; every launch also writes rows x 8 KiB of indices
#: (topKPerRowJob's final store, indexerTopK.cu @ 07339e94), 7-17 MB at 900-2100 rows, which shares the L2 with the
#: next replay's scores. With them in the set: rms log error 0.1037 -> 0.0803 (grid 20's form refitted on the same
#: rows alone: 0.1037), leave-one-grid-out over grids 17-20 |error| median 4.5-6.0 % / p90 10.6-13.2 % (the form alone
#: 5.5-9.8 / 10.1-19.5). Tried and dropped: the lead's fixed part per later CTA (`later`, shape_terms: each of the
#: c - 1 later CTAs pays it whatever n) fits 1.57 loop rounds alone (rms 0.1019, leave-one-out no better) and 0.12
#: beside out_set; out_set fitted 1.5 / 2 / 3 instead of the source's 1: rms 0.0879 / 0.0871 / 0.0936. Fitted by
#: topk_engines.fit_narrow_later(hw, "kind", out_set=1.0) on topk_engines.narrow_later_fit_rows (grids 5-20)
NARROW_PERCTA_OUTSET_CANDIDATE: dict = {"first": -100.9694, "first_scan": 33.3846, "first_radix": -174.6411,
                                        "round": 0.4687, "scan": 0.0, "radix": 10.9322, "rank": 0.0141, "out_set": 1.0}
#: NOT SHIPPED after grid 21 (36 blind rows, both prices committed before measuring, 6905ae5; one H100 call, 46 s):
#: 1 of 3 regimes each (<= 8 CTAs per SM: main 7.6 / 14.8 %, candidate 4.8 / 11.7 %); > 8 CTAs per SM main 14.3 / 31.4
#: (+4.1), candidate 8.3 / 47.6 % (+3.5); pooled main 12.4 / 25.4 %, candidate 6.9 / 25.6 %: lower median, higher p90,
#: so the tie rule keeps grid 20's rule (benchmarks/accuracy_sections/topk_grid21.py). The set fixed the rows at
#: 0.5-0.8 of the L2 it moves; the p90 is the shortest rows' (2.6K-3.3K scores at 11-19 CTAs per SM: 1.2-2x faster
#: than both rules), which the set makes worse where it pushes them past the curve's edge


#: grid 22's candidate (NOT SHIPPED unless set as NARROW_PERCTA): the SM's first narrow CTA's part read from the work of
#: its threshold-bin sort instead of its block-scan rounds. Why: the shipped first part (first + first_scan x
#: scan_rounds + first_radix x radix) was fitted where the scan rounds only took 3 (gaussian / uniform) or 7
#: (recorded), so it stands for the score kind; at the shortest rows (2.6K-3.3K scores, k 2048) a gaussian row's
#: threshold bin lies in the lower tail and it scans 6 rounds, so the first part jumps from ~0 to ~100 loop rounds
#: (grid 21: gaussian 1420 x 3300 +100 %, 2010 x 2700 +56 %). From topKPerRowJob of indexerTopK.cu @ 07339e94: the
#: threshold bin's staged items (finalCount) go to cub::BlockRadixSort above kInsertionSortBranchThreshold (512), else
#: to the all-pairs rank, where each of the 256 threads takes ceil(finalCount / 256) items and walks all finalCount
#: staged logits for each: finalCount x ceil(finalCount / 256) shared-memory reads on a thread's path (`rank_work`,
#: launch_job_stats; a 2.6K recorded row stages ~150 items, mostly one pass; a 4-5K one ~300, half its rows two
#: passes, ~10 % sorted by BlockRadixSort; gaussian / uniform rows ~5-40). So the first part is first + first_rankw x rank_work + first_radix x radix, the per-CTA slope
#: refitted with it, and the output indices in the L2 set (`out_set` 1, grid 21's NARROW_PERCTA_OUTSET_CANDIDATE:
#: rows at 0.5-0.8 of the L2 ran -15..-25 %). Fitted by topk_engines.fit_narrow_conflict(hw, "rankw", out_set=1.0,
#: start=topk_engines.NARROW_RANKW_START) on grids 5-21's 240 narrow short rows (all looked-at): rms log error 0.0861
#: (main's rule on the same rows 0.1229; the form without out_set 0.1068), leave-one-grid-out over grids 18-21
#: |error| median 4.0-7.6 %, p90 13.9-18.3 % (grid 20's form refitted with out_set: 4.7-7.7 / 12.6-25.1). Tried and
#: dropped (topk_engines.NARROW_CONFLICT_FORMS): the first part in the step-0 histogram's atomic conflict
#: (hist_conflict: recorded scores sit in ~40 of the 2048 bins) rms 0.0991, its coefficient ~0 beside rank_work; later
#: CTAs' sweep rounds priced by the conflict (`round_conflict`): fitted at its negative bound (unphysical); a rank_work
#: term in the per-CTA slope too (`rankw`): 0.005, rms 0.0850, no better leave-one-out
NARROW_PERCTA_RANKW_CANDIDATE: dict = {"first": -15.7912, "first_radix": -25.3439, "first_rankw": 0.2448,
                                       "round": 0.3941, "scan": 0.7067, "radix": 8.473, "rank": 0.0, "out_set": 1.0}
#: the same form without the output indices in the set (fit_narrow_conflict(hw, "rankw", out_set=0.0, start=...):
#: rms 0.1068): priced beside the candidate on grid 22 to part its two changes, not the shipping candidate
NARROW_PERCTA_RANKW_NOSET: dict = {"first": -17.6509, "first_radix": -16.4264, "first_rankw": 0.2416, "round": 0.3894,
                                   "scan": 0.9857, "radix": 6.0803, "rank": 0.0013}
#: SHIPPED after grid 22 (36 blind rows, all three prices committed before measuring, 41ccfef; one H100 call, 47 s):
#: 2 of 2 regimes against main 9addb67's 1 (the controls): narrow > 8 CTAs per SM main 18.9 / 50.5 % (signed -0.3) ->
#: 6.6 / 15.8 % (-1.7) MET (without the output indices in the set 7.2 / 21.5 %); pooled 18.6 / 48.7 -> 6.6 / 17.1 %
#: (benchmarks/accuracy_sections/topk_grid22.py). Grid 20's rule: NARROW_PERCTA_FIRST_CANDIDATE (narrow_additive(False,
#: it) reproduces main 9addb67's prices)
NARROW_PERCTA = NARROW_PERCTA_RANKW_CANDIDATE
#: grid 22's form refitted with the job's rounds off the load chain (ONCHIP_JOB; topk_trtllm_onchip.fit_onchip:
#: fit_narrow_conflict("rankw", out_set 1) on the same 240 narrow rows, rms log error 0.0673 where the shipped form had
#: 0.0861): SHIPPED with it after the on-chip grid (narrow > 8 CTAs per SM 7.7 / 10.3 % against 11.8 / 16.1 %)
NARROW_PERCTA_ONCHIP: dict = {"first": -20.1266, "first_radix": -25.5584, "first_rankw": 0.1539, "round": 0.3673,
                              "scan": 0.6978, "radix": 18.1708, "rank": 0.0204, "out_set": 1.0}
NARROW_PERCTA = NARROW_PERCTA_ONCHIP


def narrow_additive(rows, n) -> np.ndarray:
    """Rows of a launch that NARROW_ADDITIVE prices by its chain alone: narrow 256-thread launches over short rows
    (n <= NARROW_PERCTA_MAX_N) under NARROW_PERCTA with NARROW_REG."""
    rows, n = np.asarray(rows, float), np.asarray(n, float)
    on = bool(NARROW_ADDITIVE and NARROW_PERCTA is not None and NARROW_REG)
    return on & (block_threads(rows, n) < THREADS) & (n <= NARROW_PERCTA_MAX_N)


def serial_iters_of(stats: dict, terms: dict) -> float:
    """A CTA's on-chip rounds that the SM's other CTAs wait through (SERIAL_PHASES), in 512-thread-CTA rounds: a block
    scan round of t threads scans t bins, so its work is rounds x t / 512 rounds of the fitted (512-thread) scan; a
    radix sort by a narrower CTA min(t / 512, 1) of the fitted one (NARROW_SORT_SHARE)."""
    w = float(stats.get("threads", THREADS)) / THREADS
    out = 0.0
    if "scan" in SERIAL_PHASES:
        out += terms["scan"] * float(stats["scan_rounds"]) * w
    if "radix" in SERIAL_PHASES:
        out += terms["radix"] * float(stats["radix"]) * (min(w, 1.0) if NARROW_SORT_SHARE else 1.0)
    if "rank" in SERIAL_PHASES:
        out += terms["rank"] * float(stats["rank_items"])
    return out


def shape_terms(samples: list[dict], rows: int, n: int, terms: dict, sms: float, prefill: bool = False,
                later_share: float | None = None, pair_shares: dict | None = None, l2_hit: float = 0.0) -> dict:
    """One launch's critical path from the per-sampled-row launch_job_stats `samples`: the full sweeps and merge sweeps
    (one wave: the expected slowest of `rows` rows, topk_production.expected_max; more: the mean row) and the on-chip
    rounds (job_iters under `terms`) of the busiest SM: its slowest CTA's own rounds plus, for each of the other
    ctas_per_sm - 1 CTAs the SM runs in the launch, that CTA's serial work (SERIAL_PHASES: the phases co-resident CTAs
    cannot overlap, serial_iters_of). A lone CTA per SM (every fit row) is the fitted case. Returned per wave (`job`:
    the SM's on-chip rounds / waves, since the wave model charges waves x serial_iters)."""
    one = launch_waves(rows, n, sms, prefill) <= 1.0
    c = float(ctas_per_sm(rows, n, sms, prefill))
    w = float(launch_waves(rows, n, sms, prefill))
    out = {}
    for name in ("sweeps", "merge_sweeps"):
        v = [s[name] for s in samples]
        out[name] = P.expected_max(v, rows) if one else float(np.mean(v))
    v = np.array([float(job_iters(s, terms)) for s in samples])
    th = float(samples[0].get("threads", THREADS)) if samples else float(THREADS)
    alone = bool(samples) and WIDE_ALONE and th > THREADS
    paired = bool(samples) and REG_RESIDENT and th == THREADS and c > 1.0
    if alone or paired:
        # a CTA alone on its SM (WIDE_ALONE), or one of the REG_CTAS 512-thread CTAs the register file holds at once
        # (REG_RESIDENT): the SM's other CTAs run their slice's (row's) whole job after or beside it, not in its
        # shadow, and only a row's last CTA runs the merge (its job once on the path: merge_waves)
        ser = np.array([float(job_iters(s.get("slice", s), terms)) for s in samples])
    else:
        ser = np.array([serial_iters_of(s, terms) for s in samples])
    slowest = P.expected_max(v, rows) if one else float(v.mean())
    if NARROW_PERCTA is not None and NARROW_REG and bool(samples) and th < THREADS and n <= NARROW_PERCTA_MAX_N:
        # NARROW_PERCTA: the SM's first narrow CTA whole at the lone CTA's cost (JOB_TERMS, round_cost 1), each of its
        # c - 1 later ones adding a whole narrow CTA at the narrow round / scan / radix / rank costs
        nt = NARROW_PERCTA
        per = np.array([nt["scan"] * float(s["scan_rounds"]) + nt["radix"] * float(s["radix"])
                        + nt["rank"] * float(s["rank_items"]) + float(nt.get("rankw", 0.0)) * float(s.get("rank_work", 0.0))
                        for s in samples])
        out["sweeps"] = float(np.mean([s["sweeps"] for s in samples]))
        out["merge_sweeps"] = 0.0
        # grid 20's candidate (NARROW_PERCTA_FIRST_CANDIDATE): the SM's first CTA adds a part read from its own
        # scores' pass statistics (absent keys: 0, the shipped rule)
        first = sum(float(nt.get(f"first{key}", 0.0)) * float(np.mean([s.get(st, 0.0) for s in samples]) if st else 1.0)
                    for key, st in FIRST_STATS)
        # a fixed part per later CTA (`later` loop rounds whatever n; tried for grid 21, not in any candidate; absent: 0)
        later = float(nt.get("later", 0.0))
        out["job"] = (slowest + first + (c - 1.0) * (float(per.mean()) + later)) / w
        out["merge_waves"] = w
        # grid 22's candidate: each later CTA's sweep rounds dearer by `round_conflict` x (its histogram atomics'
        # conflict - 1) (hist_conflict; absent: 0, the shipped rule)
        conf = float(nt.get("round_conflict", 0.0)) * (float(np.mean([s.get("conflict", 1.0) for s in samples])) - 1.0)
        out["sweep_scale"] = (1.0 + (c - 1.0) * (float(nt["round"]) + conf)) / w
        return out
    if NARROW_SHARES is not None and NARROW_REG and bool(samples) and th < THREADS and c > 1.0:
        # NARROW_SHARES: the SM's c narrow CTAs run NARROW_CTAS at a time (their registers); each group's first CTA is
        # on the path whole, each other one adds its share of its sweep rounds, of its BlockRadixSort and of the rest
        # of its on-chip job (block scans, the all-pairs rank)
        ns = NARROW_SHARES
        lead = float(np.ceil(c / NARROW_CTAS))
        full = np.array([float(job_iters(s, terms)) for s in samples])
        rad = np.array([float(terms["radix"]) * float(s["radix"]) for s in samples])
        other = (c - lead) * (ns["job"] * float((full - rad).mean()) + ns.get("radix", ns["job"]) * float(rad.mean()))
        out["job"] = (slowest + (lead - 1.0) * float(full.mean()) + other) / w
        out["merge_waves"] = w
        out["sweep_scale"] = (lead + (c - lead) * ns["sweep"]) / w
        return out
    if paired and (PAIR_SHARES is not None or pair_shares is not None):
        # PAIR_SHARES: the SM's c CTAs run ceil(c / REG_CTAS) at a time; each group's first CTA (`lead`) is on the path
        # whole, each other one adds its share of its sweep rounds and of its on-chip job
        ps = (PAIR_SHARES if pair_shares is None else pair_shares)["split" if "slice" in samples[0] else "single"]
        lead = float(np.ceil(c / REG_CTAS))
        # the L2 term (PAIR_L2_SHARE): the other CTAs' sweep rounds that hit the L2 (share `l2_hit`), and as much of
        # their on-chip job (issue-bound beside the pair's L2-fed rounds: nothing of it hides behind an HBM wait)
        l2x = ps.get("l2_sweep_prefill" if prefill else "l2_sweep", 0.0) * float(l2_hit)
        # TWO_LAUNCH_LEAD_SHARE: the torch op's part 1 (slices that end without a merge) pays each later pair group's
        # lead at that share (None: whole, the fused path's rule)
        ls = 1.0 if TWO_LAUNCH_LEAD_SHARE is None or "merge" not in samples[0] else float(TWO_LAUNCH_LEAD_SHARE)
        if prefill and PREFILL_LEAD_SHARE is not None:   # the prefill entry's CTAs end without a merge as well
            ls = float(PREFILL_LEAD_SHARE)
        # STAGGERED_PARTNERS: the L2 term's job share on the SM's first pair's partner only (the pair that starts in
        # lockstep); the later partners' on-chip job at the path's own share ps["job"] (all of them: the rule before)
        locked = min(c - lead, 1.0) if STAGGERED_PARTNERS else (c - lead)
        out["job"] = (slowest + (lead - 1.0) * ls * float(ser.mean())
                      + locked * min(ps["job"] + (l2x if PAIR_L2_JOB else 0.0), 1.0) * float(ser.mean())
                      + (c - lead - locked) * min(ps["job"], 1.0) * float(ser.mean())) / w
        out["merge_waves"] = w
        sweep_share = min(ps["sweep"] + l2x, 1.0)
        out["sweep_scale"] = (1.0 + (lead - 1.0) * ls + (c - lead) * sweep_share) / w
        return out
    if paired:
        share = 1.0 / REG_CTAS
    else:
        share = (LATER_CTA_SHARE if later_share is None else float(later_share)) if alone else 1.0
    out["job"] = (slowest + (c - 1.0) * share * float(ser.mean())) / w
    out["merge_waves"] = w if (alone or paired) else 1.0
    # a lone CTA's later CTAs on its SM add LATER_CTA_SHARE of its sweep rounds, a paired one's 1 / REG_CTAS (add_job_ops
    # scales them by this: over the launch's w waves the SM's path holds 1 + (c - 1) x share CTAs' sweeps)
    out["sweep_scale"] = (1.0 + (c - 1.0) * share) / w if (alone or paired) and c > 1.0 else 1.0
    if LONE_L2_ROUND != 1.0 and c <= 1.0 and th == THREADS and bool(samples) and (
            "slice" not in samples[0] or "merge" in samples[0]):
        # LONE_L2_ROUND: a lone 512-thread CTA's sweep rounds from the L2 (share l2_hit) at TensorRT-LLM's own L2 round
        out["sweep_scale"] = 1.0 + (LONE_L2_ROUND - 1.0) * float(l2_hit)
    return out


#: the split path's handshake and the merge's aux reads (topKPerRowDecodeFused, indexerTopK.cu @ 07339e94), on the
#: critical path of the row: after its slice's job each CTA runs __threadfence() (its 2 x k aux values and indices
#: visible device-wide) then thread 0's atomicAdd on the row's done counter, each a round trip to the L2 that nothing
#: overlaps (HANDSHAKE_ROUNDS: one load round each); the last CTA's merge job (topKPerRowJob<mergeBlocks>) reads, in
#: each step's processBins sweep, the aux index `indices[idx]` of every value above or in the threshold bin and stores
#: it to shared memory, a load the store waits for: one more dependent round per round of that sweep (half the merge's
#: sweeps). Counted from the source, no fitted term (ASSUMPTION: each such wait costs one of the kind's load rounds);
#: chosen with grids 6-7's split rows LOOKED-AT (1-16 rows ~20 % fast), judged blind on grid 8
HANDSHAKE_ROUNDS = 2.0
MERGE_HANDSHAKE = True

#: a sweep round of a wide CTA is issue-bound, not latency-bound: each thread's float4 is four histogram updates
#: (distributeToBins: the partial-match test, the bin extraction, a shared-memory atomicAdd on one of 2048 bins, in
#: processHistogramStep of indexerTopK.cu @ 07339e94) and in processBins four compares and staging atomics; the loop
#: (vectorized_process) keeps ONE float4 load in flight per thread per iteration, and the 1024-thread instantiation
#: (__launch_bounds__(1024): at most 64 registers a thread) cannot hold more. A lone 512-thread CTA (every TRT_FIT row)
#: is the fitted, latency-bound round; a 1024-thread CTA's round (topKPerRowDecodeFused where a slice holds >= 30,000
#: scores: slices and the merge job) costs WIDE_ROUND_COST of them (round_cost) where halving the rounds assumed 1.
#: WIDE_ROUND_COST is fitted on topk_engines.TRT_WIDE_FIT (named fit rows: the one-wave 1024-thread split launches of
#: grids 6 and 8, LOOKED-AT before; recorded as production_kernels.topk_trtllm.wide_round_cost of the fitted file by
#: topk_engines.write_trtllm), judged blind on grid 9; refitted (2.2317 -> 1.7059) once SPLIT_FIXED_ROUNDS carries the
#: split path's fixed part, judged blind on grid 11; 256- and 512-thread rounds unchanged (round_cost 1)
WIDE_ROUND_COST = 1.7059

#: the split path's once-per-row rounds that no per-round term carries: topKPerRowDecodeFused (indexerTopK.cu @ 07339e94)
#: makes the row's last CTA, after its slice, __threadfence + __syncthreads + thread 0's atomicAdd on doneCounter +
#: __syncthreads again, reset the counter, then start a whole second topKPerRowJob (shared histogram cleared, step-0
#: prologue, its own scan / final sort) on nb x k aux values another CTA wrote moments before (L2 round trips, cold
#: for this SM): a fixed stretch of the row's path, in the kind's load rounds. Fitted by topk_engines.fit_split_fixed on
#: the named TRT_SPLIT_FIT rows (grid 8's one-wave 512-thread split launches, LOOKED-AT before: they ran 9-18 % fast,
#: where round_cost is 1 and nothing else is fitted); recorded as production_kernels.topk_trtllm.split_fixed_rounds.
#: Paid once on the row's path (a launch of lone CTAs: once, like the merge: merge_waves; paying it on every lone CTA
#: instead fitted TRT_WAVE_FIT worse, rms 0.124 vs 0.119). The 1024-thread
#: WIDE_ROUND_COST is refitted with it (fit_wide_round), so it no longer carries this fixed part as per-round cost
SPLIT_FIXED_ROUNDS = 22.17

#: a 1024-thread CTA alone on its SM (WIDE_ALONE) that the SM runs after its first one adds LATER_CTA_SHARE of that
#: CTA's sweep rounds and on-chip job, not all of it: the first wave of a split launch starts on every SM at once, all
#: 132 CTAs streaming their first sweep together (the kind's closed load loop at its fullest, hwmodels/roofline.py
#: CHAIN_QUEUED), while the later CTAs start as the earlier ones end, staggered by the slices' on-chip phases (block
#: scans, final sorts, the last CTA's merge job: topKPerRowDecodeFused launches a (rows, numBlocksPerRow) grid, x the
#: row, so a row's slices fall in different waves and the merges all in the last), so fewer SMs load at once and a
#: later CTA's load round waits less (ASSUMPTION from the launch's structure; the share is fitted by
#: topk_engines.fit_later_share on the named TRT_WAVE_FIT rows: every multi-wave 1024-thread split launch of grids 8-10,
#: LOOKED-AT before, +20..+48 % slow under the whole-CTA rule; recorded as production_kernels.topk_trtllm.later_cta_share)
LATER_CTA_SHARE = 0.774


#: the torch op's two-launch part 1 at >= 3 CTAs per SM (two resident by registers, REG_CTAS): each pair group after
#: the SM's first adds TWO_LAUNCH_LEAD_SHARE of its lead CTA's sweeps and job instead of all of it. Part 1's CTAs
#: (topKPerRowDecode<512, multipleBlocksPerRow>) end with their slice's job, no handshake or merge, so the next pair's
#: CTAs start as soon as one of the SM's CTAs retires and their first sweep overlaps the retiring pair's on-chip phases
#: (the staggering LATER_CTA_SHARE prices for lone 1024-thread CTAs); the fused path's rule (every group's lead
#: whole) over-prices it: +14 % at >= 9 CTAs per SM on the second op grid (blind). None = the fused rule; the
#: candidate is fitted by simulator/calibration/topk_trtllm_op.py fit_lead_share on the looked-at two-launch rows
#: (20 looked-at rows: rms log error 0.133 at 1.0 / None, 0.066 at 0.75, the scan's best; the lone 1024-thread CTAs'
#: fitted LATER_CTA_SHARE is 0.774); judged blind on the third op grid (14 new shapes, committed b865c26): 3.6 / 13.5 %,
#: 2 of 3 regimes (>= 9 CTAs per SM 1.7 / 4.7 %), against None's 12.4 / 19.0 %, 1 of 3 (16.2 / 20.8 %): SHIPPED
TWO_LAUNCH_LEAD_SHARE_CANDIDATE = 0.75
TWO_LAUNCH_LEAD_SHARE: float | None = TWO_LAUNCH_LEAD_SHARE_CANDIDATE

#: the prefill entry's paired 512-thread CTAs (topKPerRowPrefill: one CTA a row, ending with its row's job, like the
#: two-launch part 1): each pair group after the SM's first at PREFILL_LEAD_SHARE of its lead; None = whole.
#: The uniform prefill grids' recorded short-mid rows at many CTAs per SM run +15..+36 % under the whole-lead rule
#: (gaussian ~0), and the causal prompts +22..+47 %; fitted by simulator/calibration/topk_trtllm_prefill.py
#: fit_prefill_lead on the looked-at prefill-entry rows at >= 3 CTAs per SM (H100 grids 8-22, the H200 grids)
#: (86 rows: rms log error 0.094 at None, 0.068 at 0.9, the scan's best), PREFILL_LEAD_SHARE_CANDIDATE; judged blind on
#: 8 new rows of one length and 4 new causal prompts (committed 036cbe0): 13.9 / 22.9 % against None's 22.5 / 30.8 %,
#: 0 of 2 regimes each (recorded rows still +10..+30 %): SHIPPED by the declared tie rule (the lower pooled median)
#: NOT SHIPPED since the prefill stagger grid: with STAGGERED_PARTNERS the fitted 0.9 over-corrects (it compensated for
#: the later partners' L2 job share that rule removes); None = each pair group's lead whole
PREFILL_LEAD_SHARE_CANDIDATE = 0.9
PREFILL_LEAD_SHARE: float | None = None

#: the L2 term's job share (PAIR_L2_JOB: a co-resident single 512-thread CTA's on-chip job at PAIR_L2_SHARE x its
#: sweeps' L2 hit share) only for the partner of the SM's FIRST pair, not for every later CTA: the launch's first
#: CTAs start on every SM at once, so the first pair's two CTAs run their phases in step (both sweeping, then both in
#: their block scans and final sort on the same four schedulers, the issue the L2 term prices); each later CTA starts
#: when one of the SM's CTAs retires, so its block scans and all-pairs rank run beside its partner's sweeps, not
#: beside the same phases (the staggering LATER_CTA_SHARE and TWO_LAUNCH_LEAD_SHARE price for other launches;
#: ASSUMPTION from the launch's structure, no constant fitted: at <= 3 CTAs per SM, one pair group and its partner,
#: the price is the rule's before). Formed after looking at the paired single-CTA rows of the committed H100 / H200
#: grids: the prefill entry's short rows at > 12 CTAs per SM over-priced +14..+23 % where the job (scans, rank of 130-300
#: staged items) is most of a CTA's time, long rows not; with it, on those looked-at 512-thread single rows at >= 2
#: CTAs per SM, rms log error 0.0715 -> 0.0685 with PREFILL_LEAD_SHARE None (the prefill lead share's scan with it: None
#: 0.0685, 0.9 0.0747, 0.8 0.0980: the fitted 0.9 compensated for this charge; both seen before choosing). The
#: candidate (STAGGERED_CANDIDATE: this rule, PREFILL_LEAD_SHARE None) against main was judged on the prefill stagger
#: grid (simulator/calibration/topk_trtllm_prefill.py STAGGER_*, 30 new shapes on 1 x H200, prices committed before the
#: call, 1563c30): 4 of 5 judged regimes against main's 3 of 5 (the prefill entry at > 12 CTAs per SM over rows <= 16K
#: 15.1 / 23.2 -> 9.0 / 18.4 %; decode single CTAs at 4-8 per SM 8.7 / 16.7 -> 7.4 / 9.8 %; causal prompts missed by
#: both, 24.8 -> 16.0 %), pooled 9.5 / 24.8 -> 8.3 / 16.7 %: SHIPPED
STAGGERED_PARTNERS = True
STAGGERED_CANDIDATE = {"STAGGERED_PARTNERS": True, "PREFILL_LEAD_SHARE": None}

#: a lone CTA's sweep round from the L2 in units of the kind's L2 round (iter_l2_us[topk_trtllm]): that round is
#: SGLang's (fit_production_topk_gemm write_topk: "TensorRT-LLM's top-k was not measured: its loop round ... SGLang's",
#: an ASSUMPTION), but TensorRT-LLM's loop keeps one float4 a thread in flight and issues its four shared-memory
#: histogram atomics (processHistogramStep's distributeToBins) before the next load (indexerTopK.cu @ 07339e94), so its
#: L2 round trip is longer. Shows where nothing else absorbs it: one CTA per SM (ctas_per_sm <= 1), 512 threads, rows
#: whose scores stay in the L2 across calls, the single tier (and the torch op's two-launch part 1), long rows:
#: -20 % at 60K-190K scores on the H100 and the H200 alike (grids 5-8; the H200 TensorRT-LLM grid's "single CTA, <= 16
#: rows" and the torch-op grid's single rows, LOOKED-AT), ~0 at <= 20K (JOB_TERMS' fit rows, grid 5, absorbed it into
#: the job), ~0 where the set exceeds the L2 (rounds from HBM at iter_us). The fused split's 512-thread slices keep their
#: fitted SPLIT_FIXED_ROUNDS, which was fitted with it absent. Fitted by simulator/calibration/topk_trtllm_lone.py on
#: the named looked-at lone rows (103: 67 H100, 36 H200; rms log error 0.148 at 1.0, 0.097 at 1.3, the scan's best):
#: LONE_L2_ROUND_CANDIDATE; judged blind on the H200 lone grid (28 new torch-op shapes, topk_trtllm_lone.BLIND,
#: committed fbd0a71): 3.5 / 10.0 %, 5 of 5 regimes, against 1.0's 11.8 / 21.4 %, 3 of 5: SHIPPED
LONE_L2_ROUND_CANDIDATE = 1.3
LONE_L2_ROUND = LONE_L2_ROUND_CANDIDATE


#: the job's on-chip rounds (shape_terms' `job`: the block scans, the threshold bin's BlockRadixSort or all-pairs rank,
#: shared-memory work between __syncthreads) as the op's `l1_iters`, priced at the kind's L2 round whatever the sweeps'
#: L2 hit share (hwmodels/roofline.py L1_AT_L2_ROUND): JOB_TERMS were fitted on launches whose scores stay in the L2,
#: and nothing of that work waits on the HBM. Before (False) a launch whose scores pass the L2 paid every job round at
#: the HBM round (0.554 against 0.296 us), which the co-resident shares, the L2 term, the sharper knee and the narrow
#: terms then made up for; with it they were refitted (PAIR_SHARES_L2, QUEUE_P_SHARED, NARROW_PERCTA_ONCHIP).
#: SHIPPED after the on-chip grid (52 new shapes on one H200, both prices committed before the call, c480ec3): 12 of 12
#: regimes against main's 9 of 12 (causal prompts 18.1 / 27.7 -> 7.9 / 13.9 %, the two-launch split at <= 2 CTAs per
#: SM 12.4 / 13.8 -> 6.9 / 12.0 %, narrow launches 11.8 / 16.1 -> 7.7 / 10.3 %; simulator/calibration/topk_trtllm_onchip)
ONCHIP_JOB = True


def round_cost(threads, wide: float | None = None):
    """A sweep (or merge) round of a `threads`-thread CTA in the kind's 512-thread load rounds: 1 up to 512 threads,
    WIDE_ROUND_COST x threads / 1024 above (the docstring above; `wide` overrides WIDE_ROUND_COST)."""
    w = WIDE_ROUND_COST if wide is None else float(wide)
    t = np.asarray(threads, float)
    return np.where(t > THREADS, w * t / WIDE, 1.0)


def add_job_ops(b, rows, n, k, sweeps, job_extra_iters, count=1.0, where=None, merge_sweeps=None,
                prefill: bool = False, wide_round_cost: float | None = None, merge_waves=None, sweep_scale=None,
                split_fixed: float | None = None, out_set: float | None = None, merge_job=0.0) -> None:
    """TensorRT-LLM's decode launch with its block widths (block_threads: each sweep ceil(slice / (threads x 4)) load
    rounds; a 256-thread CTA takes half a 512-thread slot, a 1024-thread one two: parallel_units scaled by threads /
    512) and `job_extra_iters` (shape_terms' `job`) more loop rounds on each CTA's critical path; `sweeps` = the full
    sweeps of a row (split work: of its slowest slice), `merge_sweeps` those of the merge job over nb x k candidates
    (default 2; launch_job_stats counts them); `prefill`: the prefill entry's launch (blocks_per_row); otherwise
    add_ops. Each sweep / merge round costs round_cost(threads) load rounds (`wide_round_cost` overrides
    WIDE_ROUND_COST, for its fit); `sweep_scale` (shape_terms: LATER_CTA_SHARE's mean over a lone CTA's SM) scales the
    sweep rounds; a split row's path adds SPLIT_FIXED_ROUNDS once (`split_fixed` overrides it, for its fit). Within
    torch_op a split row is the two-launch tier: this launch is its part 1 (no merge, no handshake) and
    add_merge_launch adds part 2 (`merge_job`: its on-chip rounds, price_terms' merge_job)."""
    rows = np.asarray(rows, float)
    n = np.asarray(n, float)
    nb = blocks_per_row(rows, n, prefill)
    th = block_threads(rows, n, prefill)
    seg = n / nb
    ms = 2.0 if merge_sweeps is None else np.asarray(merge_sweeps, float)
    rc = round_cost(th, wide_round_cost)
    sc = 1.0 if sweep_scale is None else np.asarray(sweep_scale, float)
    iters = sweeps * np.ceil(seg / (th * VEC)) * rc * sc + np.asarray(job_extra_iters, float)
    merge_rounds = np.ceil(nb * k / (th * VEC)) * rc
    sf = SPLIT_FIXED_ROUNDS if split_fixed is None else float(split_fixed)
    merge_iters = np.where(nb > 1, ms * merge_rounds + (HANDSHAKE_ROUNDS + ms / 2.0 * merge_rounds
                                                          if MERGE_HANDSHAKE else 0.0) + sf, 0.0)
    if merge_waves is not None:   # the merge once on the path of a launch of lone CTAs (shape_terms, WIDE_ALONE)
        merge_iters = merge_iters / np.maximum(np.asarray(merge_waves, float), 1.0)
    two = (nb > 1) & _OP["on"] & (not prefill)
    if np.any(two):   # the torch op's two-launch split: part 1 here without a merge, the merge its own launch
        merge_iters = np.where(two, 0.0, merge_iters)
        tw = np.broadcast_to(np.asarray(two, bool), (b.n,))
        add_merge_launch(b, rows, nb, k, ms, merge_job, count=count, split_fixed=sf,
                         where=tw if where is None else tw & np.broadcast_to(np.asarray(where, bool), (b.n,)))
    rd = rows * (sweeps * n * P.SCORE_BYTES + np.where((nb > 1) & ~two, ms / 2.0 * nb * k * 8.0, 0.0))
    again = rd - rows * np.minimum(sweeps, 1.0) * n * P.SCORE_BYTES
    # WIDE_ALONE: a 1024-thread CTA's two units are a whole SM (resident_ctas in the op's units); 0 = the kind's slots
    res = np.where((th > THREADS) & WIDE_ALONE, sm_slots() * THREADS / th, 0.0)
    if REG_RESIDENT:
        res = np.asarray(sm_slots(th), float) * np.ones(np.shape(th))
    # NARROW_ADDITIVE: a narrow short-row launch's bytes leave the body (its chain alone is the time; not prefill)
    keep = 1.0 if prefill else np.where(narrow_additive(rows, n), 1e-6, 1.0)   # (not 0: the roofline divides by it)
    if NARROW_ADD_BOUNDED:   # the re-read credit in the same units as the bytes it re-reads, never above them
        again = np.minimum(keep * again, keep * rd)
    # grid 21's candidate (NARROW_OUT_SET): a narrow short-row launch's L2 set holds its output indices too
    ws = rows * n * P.SCORE_BYTES + narrow_out_set(rows, n, k, prefill, out_set)
    extra = {"l1_iters": np.asarray(job_extra_iters, float) * np.ones(np.shape(iters))} if ONCHIP_JOB else {}
    b.add("topk_trtllm", P.OP_KIND["trtllm"], flops=keep * rows * sweeps * n * 4.0, bytes_read=keep * rd,
          bytes_written=keep * rows * k * 4.0, parallel_units=rows * nb * th / THREADS, serial_iters=iters + merge_iters,
          reread_bytes=again, working_set=ws, dtype="fp32", count=count, where=where,
          resident_ctas=res, **extra)


def add_merge_launch(b, rows, nb, k, merge_sweeps, merge_job, count=1.0, where=None,
                     split_fixed: float | None = None) -> None:
    """Part 2 of the torch op's two-launch split (topKPerRowDecode<1024, mergeBlocks> of indexerTopK.cu @ 07339e94):
    one 1024-thread CTA per row (alone on its SM, WIDE_ALONE) running topKPerRowJob over the nb x k fp32 candidates
    part 1 wrote, reading each kept value's aux index in its processBins sweeps. Priced from the source with the fused
    merge's terms, no new fitted term: merge_sweeps sweeps of ceil(nb x k / (1024 x 4)) rounds at WIDE_ROUND_COST, half
    as many dependent aux-index rounds (the fused merge's MERGE_HANDSHAKE reading), the job's on-chip rounds
    (`merge_job`), and SPLIT_FIXED_ROUNDS (a whole second topKPerRowJob started on aux values another CTA wrote: the
    fused path's fixed stretch; ASSUMPTION: the same without the done-counter handshake, which the kernel boundary
    replaces; the boundary itself is the graph's per-launch cost of this op)."""
    rows = np.asarray(rows, float)
    ms = np.asarray(merge_sweeps, float)
    rounds = np.ceil(np.asarray(nb, float) * k / (WIDE * VEC)) * round_cost(WIDE)
    sf = SPLIT_FIXED_ROUNDS if split_fixed is None else float(split_fixed)
    iters = ms * rounds + ms / 2.0 * rounds + np.asarray(merge_job, float) + sf
    rd = rows * ms / 2.0 * np.asarray(nb, float) * k * 8.0
    b.add("topk_trtllm_merge", P.OP_KIND["trtllm"], flops=rows * ms * nb * k * 4.0, bytes_read=rd,
          bytes_written=rows * k * 4.0, parallel_units=rows * WIDE / THREADS, serial_iters=iters,
          reread_bytes=rd, working_set=rows * np.asarray(nb, float) * k * 8.0, dtype="fp32", count=count,
          where=where, resident_ctas=merge_resident())


def merge_resident() -> float:
    """The merge launch's resident_ctas in the op's 512-thread units (parallel_units counts a 1024-thread CTA as 2): a
    whole SM's REG_CTAS slots under REG_RESIDENT, as add_job_ops gives its 1024-thread slices (one CTA per SM,
    WIDE_ALONE); else WIDE_ALONE's share of the kind's slots. (Until 2026-11-28 it was sm_slots() x 512 / 1024 = 1
    unit, half a 1024-thread CTA: twice the waves. The torch-op grid's first look was priced with that defect.)"""
    if REG_RESIDENT:
        return float(sm_slots(WIDE))
    return float(sm_slots()) * THREADS / WIDE if WIDE_ALONE else 0.0


def narrow_out_set(rows, n, k, prefill: bool = False, out_set: float | None = None) -> np.ndarray:
    """The bytes NARROW_PERCTA's `out_set` key (grid 21's candidate; absent = 0 = the shipped rule; `out_set` given
    overrides it, for the fit's pricer) adds to a narrow short-row decode launch's L2 working set: out_set x its
    output indices, rows x k x 4 B (topKPerRowJob's final `outIndices[i] = smemOutput[i]`, 2048 int32 a row, written
    every launch: under graph replay they share the L2 with the next launch's scores, which the first sweep re-reads
    from it only while both fit; the device's "first" curve was measured on a read-only x.sum())."""
    rows, n = np.asarray(rows, float), np.asarray(n, float)
    f = float((NARROW_PERCTA or {}).get("out_set", 0.0)) if out_set is None else float(out_set)
    if prefill or f == 0.0 or not NARROW_REG:
        return np.zeros(np.broadcast(rows, n).shape)
    on = (block_threads(rows, n) < THREADS) & (n <= NARROW_PERCTA_MAX_N)
    return np.where(on, f * rows * float(k) * 4.0, 0.0)


#: the job model's terms (loop rounds of iter_us[topk_trtllm] per block-scan round, per BlockRadixSort, per staged item
#: ranked), fitted on topk_engines.TRT_FIT only (grid 5: six single-CTA decode launches, 1-16 rows, NVIDIA H100 80GB
#: HBM3, 2026-11-27; topk_engines.fit_trtllm_job, which tests/test_topk_engines.py re-runs); the fitted file's
#: production_kernels.topk_trtllm records them. Dimensionless counts: another GPU prices them at its own iter_us
#: (ASSUMPTION: the same on-chip phases take the same number of the kind's loop rounds)
JOB_TERMS = {"scan": 2.5782, "radix": 39.5607, "rank": 0.0871}
#: rows sampled per shape from the default recorded scores for the product's price (topk_production.DEFAULT_SCORE_TRACE)
PRODUCT_SAMPLE = 4
_JOB_CACHE: dict = {}


def _length_bucket(n: float) -> int:
    """The row length the product's statistics are sampled at: n rounded to a quarter octave (the job statistics move
    slowly with n; the launch itself keeps the exact n)."""
    return int(round(2.0 ** (np.round(4.0 * np.log2(max(float(n), 1.0))) / 4.0)))


def default_samples(rows: int, n: float, k: int = 2048, sample: int = PRODUCT_SAMPLE,
                    prefill: bool = False) -> list[dict]:
    """launch_job_stats of `sample` rows of the default recorded scores (topk_production.default_stats' resampling with
    fp16 dither) at the launch of (rows, n) (`prefill`: the prefill entry's); cached per (blocks per row, threads,
    length bucket, k)."""
    nb, th = int(blocks_per_row(rows, n, prefill)), int(block_threads(rows, n, prefill))
    nl = _length_bucket(n)
    key = (nb, th, nl, int(k), int(sample), bool(_OP["on"]))
    if key not in _JOB_CACHE:
        rec = P.default_rows()
        rng = np.random.default_rng(nl)
        xs = []
        for j in range(sample):
            base = rec[j % len(rec)]
            xs.append((base[rng.integers(0, len(base), nl)] * (1.0 + rng.uniform(-1, 1, nl) * 2.0 ** -11))
                      .astype(np.float32))
        _JOB_CACHE[key] = [launch_job_stats(x, rows, k, nb=nb, th=th) for x in xs]
    return _JOB_CACHE[key]


def price_terms(rows, n, k, sms, samples_of=None, terms=None, prefill: bool = False,
                later_share: float | None = None, pair_shares: dict | None = None, l2_bytes: float | None = None,
                l2_curves: dict | None = None) -> dict:
    """Per shape (arrays over rows x n broadcast): sweeps, merge_sweeps and job rounds of the launch (shape_terms; the
    prefill entry's where `prefill`) on `samples_of(rows, n)` (default: default_samples, the recorded scores) under
    `terms` (default JOB_TERMS)."""
    terms = JOB_TERMS if terms is None else terms
    samples_of = samples_of or (lambda r, m: default_samples(r, m, int(k), prefill=prefill))
    rows, n = np.broadcast_arrays(np.asarray(rows, float), np.asarray(n, float))
    out = {c: np.zeros(rows.shape) for c in ("sweeps", "merge_sweeps", "job", "merge_waves", "sweep_scale",
                                               "merge_job")}
    memo: dict = {}
    for i, (r, m) in enumerate(zip(rows.flat, n.flat)):
        if (r, m) not in memo:   # no rows, or rows no longer than k (copied, no job): nothing on the path
            if int(r) >= 1 and m > k:
                smp = samples_of(int(r), int(m))
                hit = pair_l2_hit(r, m, float(np.mean([x["sweeps"] for x in smp])), sms, l2_bytes, l2_curves, prefill)
            memo[(r, m)] = (shape_terms(smp, int(r), int(m), terms, sms, prefill, later_share, pair_shares, hit)
                            | {"merge_job": float(np.mean([job_iters(x["merge"], terms) if "merge" in x else 0.0
                                                           for x in smp]))}
                            if int(r) >= 1 and m > k else dict.fromkeys(out, 0.0) | {"merge_waves": 1.0, "sweep_scale": 1.0})
        for c in out:
            out[c].flat[i] = memo[(r, m)][c]
    return out


def add_priced_ops(b, rows, n, k, sms, count=1.0, where=None, samples_of=None, terms=None, prefill: bool = False,
                   wide_round_cost: float | None = None, split_fixed: float | None = None,
                   later_share: float | None = None, pair_shares: dict | None = None, l2_bytes: float | None = None,
                   l2_curves: dict | None = None) -> None:
    """TensorRT-LLM's top-k as the product prices it (the job model: price_terms then add_job_ops): the decode dispatch,
    or with `prefill` the prefill entry (invokeIndexerTopKPrefill: one 512-thread CTA per row at any length); the
    calibration (simulator/calibration/topk_engines.py) prices its grids through this same function."""
    t = price_terms(rows, n, k, sms, samples_of, terms, prefill, later_share, pair_shares, l2_bytes, l2_curves)
    add_job_ops(b, rows, n, k, t["sweeps"], t["job"], count=count, where=where, merge_sweeps=t["merge_sweeps"],
                prefill=prefill, wide_round_cost=wide_round_cost, merge_waves=t["merge_waves"],
                sweep_scale=t["sweep_scale"], split_fixed=split_fixed, merge_job=t["merge_job"])
