"""Production top-k kernels of DSA serving engines, modelled from their sources: how many passes over a row each one
makes, as a function of the row's score distribution, and what one launch looks like.

SGLang (sgl-kernel/csrc/elementwise/topk.cu, sgl-project/sglang @ 06c48ca8; adapted upstream from tilelang's
deepseek_v32 topk_selector): k = 2048 fixed, ONE CTA of 1024 threads per row, 128 KiB of dynamic shared memory (one
resident CTA per SM), scalar 4-byte loads.
    stage 1   a full sweep: 256-bin histogram of the top byte of each value's fp16 key (sign + 5 exponent + 2 mantissa
              bits); a prefix sum picks the threshold bin (the one that crosses k)
    stage 1b  a second full sweep: values above the threshold bin are emitted; those IN it are staged in shared memory
              (at most 16,384 candidates: SMEM_INPUT_SIZE = 128 KiB / 8) with a histogram of their fp32 key's top byte
    rounds    up to 4 refinement rounds over the staged candidates, 8 key bits each (fp32 bits 31-24, 23-16, 15-8,
              7-0): each round re-reads every candidate's score from global memory at its index (a gather) and stages
              the new threshold bin's members for the next round; the loop ends as soon as the round's threshold bin
              exactly fills k (`topk == 0`)
    So: 2 full sweeps always, plus sum over rounds of the candidates gathered; a row no longer than k is copied.
TensorRT-LLM (cpp/tensorrt_llm/kernels/indexerTopK.cu, NVIDIA/TensorRT-LLM @ 07339e94; its launch:
simulator/kernels/topk_trtllm.py): topKPerRowJob, "half - 11 - 11
- 10 bit iterations", 2048 bins, 512 threads (256 for >= 256 rows of short rows), float4 loads.
    step 0    histogram of the fp16 key's top 11 bits (a full sweep), prefix scan, threshold bin; a second full sweep
              emits the values above it and stages the threshold bin's values for a final sort if it holds <= 2048
    steps 1-3 only while the threshold bin holds > 2048 values (kNumFinalItems): the same two full sweeps over the
              row on fp32 key bits 31-21, then (values matching the kept prefix only) 20-10, then 9-0
    final     insertion sort of the staged items (<= 512) or a BlockRadixSort of 2048
    So: 2 x steps full sweeps, steps = 1 + the number of times the threshold bin still holds more than 2048 values.
    Dispatch (invokeIndexerTopKDecodeImpl): rows of >= the split-work threshold (65,536 columns at <= 8 rows;
    200,000 at 9-63; 524,288 at 64-127; never at >= 128 rows) run the fused split-work kernel: numBlocksPerRow CTAs
    per row (indexerTopKDecodeFusedAuxBlocksPerRow: 10, up to 32 at one row), each the same job on a 1/numBlocks
    slice, then the last CTA merges numBlocks x k candidates; GVR (the heuristic kernel, simulator.strategies.topk)
    only with previous indices, > 16,384 columns and > 32 rows; the multi-pass radix path only when the caller passes
    scratch (not modelled).

FlashInfer (flashinfer-python 0.6.4 include/flashinfer/topk.cuh): simulator/kernels/topk_flashinfer.py.

Which engine runs which (the user picks one as `topk: {radix: {kernel: sglang | trtllm | flashinfer}}`,
simulator.strategies.topk PRODUCTION_RADIX): SGLang's DSA top-k backend option (`--dsa-topk-backend`) names
'sgl-kernel' (topk.cu above) and 'flashinfer' (flashinfer.top_k_page_table_transform at decode, top_k_ragged_transform
at prefill; priced so: topk_flashinfer.add_ops `page_table`) among others; TensorRT-LLM runs its own indexerTopK.cu
(simulator/kernels/topk_trtllm.py). All three are measured on the H100 (FlashInfer's ragged and page-table transforms;
TensorRT-LLM's decode kernels built from a local transcription of its source: topk_engines GRID5).

All three are priced as one op per launch in the roofline's wave model (hwmodels.roofline `waves`): CTAs = rows (x blocks per
row), resident CTAs per SM from the source (cta_slots), and each CTA's critical path = `serial_iters` loop iterations of
one round of loads (each waits for its loads before the next atomics): a full sweep of N values is ceil(N / (threads x
values per load x loads in flight)) iterations (SGLang's histogram sweep keeps 4 loads in flight, its emit sweep 1:
SGL_LOADS_IN_FLIGHT, read from the compiled kernel; the histogram sweep's remainder loop of (trips mod 4) single loads
comes first: SGL_HIST_UNROLL), a gather round of c candidates ceil(c / threads) iterations of
SGL_GATHER_ROUNDS load rounds each (SGLang: counted per round, `gather_iters`). SGLang's CTA also walks 1 + rounds
barrier phases (a 256-bin `run_cumsum` of 8 `__syncthreads()` plus the threshold search and clear: SGL_PHASES), priced
as `sync_steps` x sync[topk_sglang] and paid by every wave (hwmodels.roofline CTA_SYNC_PER_WAVE: one CTA per SM, each
row's CTA on its own); the kernel-level fixed time is the single-CTA radix kind's (fit_production_topk_gemm.FIXED_FROM).
A one-wave launch lasts as long as its slowest row: its statistics are the expected largest of `rows` sampled rows
(expected_max); a launch of several waves takes the average row. Bytes: each sweep reads the row (4 B per
value), each gathered candidate one 32-B sector (none for SGLang's rows within the CTA's L1, SGL_L1_BYTES: gathered
from there at iter_l1[topk_sglang], `l1_iters`). The rows were just written by the indexer (or, when measured, by the
previous call): the first sweep re-reads a tensor of rows x N x 4 B that the previous kernel streamed, the later sweeps
and gathers re-read the CTA's own row (`reread_bytes`), and both are sequential scans, so the share of each that hits in
L2 is set by its reuse distance (hwmodels.roofline SWEEP_REREAD: the whole tensor for the first sweep, the rows in
flight for the rest), through the device's measured hit curve of each pattern (Efficiency.l2_sweep_hit: on the H100 a
re-read tensor hits to 40 MiB and is gone by 44 MiB, rows re-swept in flight fade from ~30 to ~46 MiB; production_
kernels/l2_sweep_*.csv).
"""
from __future__ import annotations

import numpy as np

KERNELS = ("sglang", "trtllm", "flashinfer")
SCORE_BYTES = 4.0
SECTOR_BYTES = 32.0
#: SGLang topk.cu constants (see module docstring)
SGL_TOPK = 2048
SGL_THREADS = 1024
SGL_CAND_CAP = 16384          # SMEM_INPUT_SIZE = kSmem / (2 * sizeof(int)), kSmem = 128 KiB
SGL_ROUNDS = 4
#: TensorRT-LLM indexerTopK.cu constants
TRT_FINAL_ITEMS = 2048        # kNumFinalItems (its launch: simulator/kernels/topk_trtllm.py)
#: resident CTAs per SM, from each kernel's launch: SGLang 1024 threads + 128 KiB dynamic shared memory -> 1 per SM
#: (228 KiB per SM on sm_90); TensorRT-LLM 512 threads and ~24 KiB -> 4 per SM (2048 resident threads per SM);
#: FlashInfer's filtered kernel 1024 threads + 128 KiB (FILTERED_TOPK_SMEM_DYNAMIC) -> 1, its radix kernel 1024 threads +
#: up to 227 KiB -> 1
CTA_SLOTS = {"sglang": 1.0, "trtllm": 4.0, "flashinfer": 1.0}
#: loads each thread keeps in flight per loop round, per sweep, in SGLang's kernel as compiled (SASS of the measured
#: build, `cuobjdump -sass sgl_topk.so`, nvcc for sm_90a): the histogram sweep is unrolled 4x with its four
#: LDG.E.CONSTANT issued back to back before the four ATOMS.POPC.INC (a warp-aggregated shared-memory increment, so
#: same-bin lanes do not serialize), while the emit / stage sweep and the gather rounds issue one load per iteration,
#: each behind the previous iteration's branches, shared-memory atomics and stores
SGL_LOADS_IN_FLIGHT = {"histogram": 4.0, "emit": 1.0, "gather": 1.0}
#: how the 4x unrolled histogram sweep handles a trip count that is not a multiple of 4 (the PTX of topk.cu @ 06c48ca8
#: compiled by nvcc 13.0 -O3 for sm_90a: the loop `for (idx = tx; idx < length; idx += BLOCK_SIZE)` becomes a
#: `.pragma "nounroll"` remainder loop of (trips mod 4) single-load iterations, each load feeding its shared-memory
#: atomic before the next is issued, ahead of the 4x unrolled body of floor(trips / 4) rounds of 4 loads in flight): a
#: thread of t = ceil(length / 1024) trips waits floor(t / 4) + (t mod 4) load rounds. At long rows this is the
#: t / 4 of SGL_LOADS_IN_FLIGHT; at short ones it is up to 3 rounds more (t = 3: 3 rounds, not 1)
SGL_HIST_UNROLL = 4
#: load rounds one iteration of SGLang's gather loops costs, relative to a sweep iteration (ASSUMPTION, from the loop's
#: dependent chain in topk.cu @ 06c48ca8: a sweep iteration is one global load; a gather iteration first reads the
#: candidate's index from shared memory (`s_input_idx[r_idx][i]`), then loads `input[idx]`, then for a threshold-bin
#: survivor (most candidates in the early rounds) makes `atomicAdd(&s_num_input[r_idx ^ 1], 1)` whose returned position
#: addresses the next store: one global round trip plus two shared-memory round trips; 1.5 lies between the load alone
#: (1) and a shared round trip as long as the load (2). Chosen after the looked-at fresh rows were seen: judged on the
#: blind set, not on those)
SGL_GATHER_ROUNDS = 1.5
#: barrier phases of one SGLang CTA, each a `run_cumsum` (8 `__syncthreads()` steps over the 256-bin histogram) plus
#: the threshold search and histogram clear around it (3-4 more barriers): one after the first sweep (stage1) and one
#: per refinement round (`rounds` of sglang_row). The phase time is fitted (sync_us[topk_sglang]); the phases are
#: per CTA, and one CTA per SM runs at a time, so every wave pays them (hwmodels.roofline CTA_SYNC_PER_WAVE)
SGL_PHASES = {"stage1": 1.0}
#: bytes of a row SGLang's CTA keeps in its own L1 between the first sweep and the refinement rounds: the kernel reads
#: `input` through a `const float* __restrict__` (ld.global.nc in its PTX: cached in L1), and the SM's 256 KiB of
#: unified L1 / shared memory (NVIDIA H100 Tensor Core GPU Architecture whitepaper) loses to shared memory the
#: carveout that holds the CTA's 128 KiB of dynamic plus ~4 KiB of static shared memory and the 1 KiB the system
#: reserves per CTA: 164 KiB of the sm_90 carveouts (..., 132, 164, ... KiB), leaving 256 - 164 = 92 KiB of L1. A row no
#: longer than that (23,552 fp32 scores) is still there when the rounds gather their candidates from it: those gather
#: iterations are `l1_iters`, priced at iter_l1[topk_sglang] (SGL_L1_LATENCY_US). The emit / stage sweep also re-reads
#: the row, but its iterations are kept at the L2 round: each also carries the CTA-wide returning shared atomic on one
#: counter for every value above the threshold bin (most of a short row) and the dependent index store (ASSUMPTION:
#: that chain, not the load, sets its pace; the measured short rows of earlier campaigns, looked at, agree)
SGL_L1_BYTES = 92.0 * 1024
#: an L1 hit's load latency on the H100 (ASSUMPTION: ~33 cycles at ~1.75 GHz, the order published Hopper
#: microbenchmarks report; not measured here). A gather iteration from L1 costs the fitted L2 iteration less the
#: measured L2 load latency (latency.l2_us) plus this: `sglang_iter_l1_us`
SGL_L1_LATENCY_US = 0.019
OP_KIND = {"sglang": "topk_sglang", "trtllm": "topk_trtllm", "flashinfer": "topk_flashinfer"}


def _fp16_key(x: np.ndarray) -> np.ndarray:
    """Ascending-order 16-bit key of fp16(x) (sign-flipped as both kernels do): larger value -> larger key."""
    b = x.astype(np.float16).view(np.uint16).astype(np.uint32)
    return np.where(b & 0x8000, (~b) & 0xFFFF, b | 0x8000)


def _fp32_key(x: np.ndarray) -> np.ndarray:
    b = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return np.where(b & 0x80000000, (~b) & 0xFFFFFFFF, b | 0x80000000)


def _threshold(keys: np.ndarray, bins: int, k: int, past: bool = False) -> tuple[int, int, int]:
    """Walking bins from the largest key down: (threshold bin, values strictly above it, values in it), the bin where
    the running count first reaches k (TensorRT-LLM: prefix < k <= prefix + bin), or with `past` first exceeds k
    (SGLang: suffix(bin) > k >= suffix(bin + 1), so the selection is complete once the values above it number k)."""
    h = np.bincount(keys.astype(np.int64), minlength=bins)[::-1]
    c = np.cumsum(h)
    i = int(np.searchsorted(c, k, side="right" if past else "left"))
    i = min(i, bins - 1)
    above = int(c[i] - h[i])
    return bins - 1 - i, above, int(h[i])


def sglang_row(x: np.ndarray, k: int = SGL_TOPK) -> dict:
    """The passes SGLang's topk.cu makes over one row x (fp32 scores): full sweeps, gathered candidates per round, the
    gather loops' iterations (each round's `for (i = tx; i < num_input; i += BLOCK_SIZE)`: ceil(candidates / 1024)
    per round) and the refinement rounds run (each one more barrier phase of the CTA: SGL_PHASES)."""
    n = len(x)
    if n <= k:
        return {"sweeps": 0, "gathers": 0, "gather_iters": 0, "rounds": 0, "candidates0": 0}
    k8 = _fp16_key(x) >> 8
    tb, above, inbin = _threshold(k8, 256, k, past=True)
    remain = k - above
    cand = x[k8 == tb]
    cand0 = len(cand)
    gathers = rounds = giters = 0
    if remain > 0:
        k32 = _fp32_key(cand)
        for r in range(SGL_ROUNDS):
            num = min(len(cand), SGL_CAND_CAP)
            gathers += num
            giters += int(np.ceil(num / SGL_THREADS))
            rounds += 1
            sub = ((k32[:num] >> (24 - 8 * r)) & 0xFF)
            tb, above, inbin = _threshold(sub, 256, remain, past=True)
            remain -= above
            if remain == 0 or r == SGL_ROUNDS - 1:
                break
            keep = sub == tb
            cand, k32 = cand[:num][keep], k32[:num][keep]
    return {"sweeps": 2, "gathers": gathers, "gather_iters": giters, "rounds": rounds, "candidates0": cand0}


def trtllm_row(x: np.ndarray, k: int = 2048) -> dict:
    """The steps TensorRT-LLM's topKPerRowJob makes over one row: each step is two full sweeps; a step follows while the
    threshold bin holds more than kNumFinalItems values; the final sort's item count."""
    n = len(x)
    if n <= k:
        return {"sweeps": 0, "steps": 0, "final_items": 0}
    k16 = _fp16_key(x) >> 5                          # step 0: fp16 key's top 11 bits
    tb, above, inbin = _threshold(k16, 2048, k)
    if inbin <= TRT_FINAL_ITEMS:
        return {"sweeps": 2, "steps": 1, "final_items": inbin}
    k32 = _fp32_key(x)
    remain, mask = k, np.ones(n, bool)               # step 0 promoted nothing (step0WillContinue)
    steps, final = 1, 0
    for shift, width in ((21, 11), (10, 11), (0, 10)):
        steps += 1
        sub = (k32[mask] >> shift) & ((1 << width) - 1)
        tb, above, inbin = _threshold(sub, 1 << width, remain)
        remain -= above
        if inbin <= TRT_FINAL_ITEMS or shift == 0:
            final = min(inbin, TRT_FINAL_ITEMS)
            break
        sel = np.flatnonzero(mask)[sub == tb]
        mask = np.zeros(n, bool)
        mask[sel] = True
    return {"sweeps": 2 * steps, "steps": steps, "final_items": final}


#: FlashInfer's filtered kernel makes SGLang's passes (topk_flashinfer); its radix path ignores them
ROW_MODELS = {"sglang": sglang_row, "trtllm": trtllm_row, "flashinfer": sglang_row}


STAT_NAMES = ("sweeps", "gathers", "gather_iters", "rounds")


def expected_max(values, rows) -> float:
    """The expected largest of `rows` draws (with replacement) from the sampled per-row values: a one-wave launch of
    `rows` rows lasts as long as its slowest row, one row is an average row. Sorted values v_1 <= ... <= v_m weigh
    (i / m)^rows - ((i - 1) / m)^rows."""
    v = np.sort(np.asarray(values, float))
    m = len(v)
    i = np.arange(1, m + 1)
    w = (i / m) ** float(rows) - ((i - 1) / m) ** float(rows)
    return float(np.dot(w, v))


def pass_stats(kernel: str, sample_rows: list[np.ndarray], k: int = 2048) -> dict:
    """Pass statistics of `kernel` over sampled rows: mean and max of sweeps, gathered candidates, gather-loop
    iterations and refinement rounds (a launch lasts as long as its slowest row within a wave), and
    the per-row values themselves (`values`, for expected_max)."""
    f = ROW_MODELS[kernel]
    st = [f(x, k) for x in sample_rows]
    out: dict = {"values": {}}
    for name in STAT_NAMES:
        v = np.array([s.get(name, 0) for s in st], float)
        out[f"{name}_mean"], out[f"{name}_max"] = v.mean(), v.max()
        out["values"][name] = v
    return out


def sglang_iter_l1_us(iter_l2_us: float, l2_latency_us: float) -> float:
    """One SGLang gather iteration whose loads hit the CTA's L1 (SGL_L1_BYTES): the L2 iteration with the L2 load
    latency replaced by an L1 hit's (SGL_L1_LATENCY_US); derived from the fitted L2 iteration, not fitted itself."""
    return max(float(iter_l2_us) - float(l2_latency_us) + SGL_L1_LATENCY_US, SGL_L1_LATENCY_US)


def sglang_histogram_rounds(n):
    """Load rounds of SGLang's histogram sweep over a row of n values on its slowest thread (SGL_HIST_UNROLL): the
    remainder loop's (t mod 4) single loads, then floor(t / 4) rounds of 4, t = ceil(n / 1024) trips."""
    t = np.ceil(np.asarray(n, float) / SGL_THREADS)
    u = SGL_HIST_UNROLL
    return np.floor(t / u) + np.mod(t, u)


def add_topk_ops(b, kernel: str, rows, n, k: float, sweeps, gathers, count=1.0, where=None, gather_iters=None,
                 rounds=None) -> None:
    """One launch of a production top-k kernel as a wave-model op (module docstring): CTAs, serial load rounds on one
    CTA's critical path, bytes (every read a re-read of the rows the indexer wrote), for `rows` rows of `n` scores
    making `sweeps` full sweeps and gathering `gathers` candidates per row (from pass_stats or a trace).
    SGLang: `gather_iters` = the gather loops' iterations per row (default ceil(gathers / threads)), each
    SGL_GATHER_ROUNDS load rounds long; `rounds` = refinement rounds per row: the CTA's barrier phases (1 + rounds,
    SGL_PHASES) go in `sync_steps`, which hwmodels.roofline CTA_SYNC_PER_WAVE charges once per wave.
    FlashInfer's launch is topk_flashinfer.add_ops (same arguments, plus the device's SM count its launch reads),
    TensorRT-LLM's topk_trtllm.add_ops (same arguments)."""
    if kernel == "flashinfer":
        raise ValueError("FlashInfer's top-k is priced by simulator.kernels.topk_flashinfer.add_ops")
    if kernel == "trtllm":
        raise ValueError("TensorRT-LLM's top-k is priced by simulator.kernels.topk_trtllm.add_ops")
    if kernel != "sglang":
        raise ValueError(f"unknown production top-k kernel {kernel!r}; allowed: {', '.join(KERNELS)}")
    rows = np.asarray(rows, float)
    n = np.asarray(n, float)
    threads, seg = SGL_THREADS, n
    shape = np.broadcast(rows, n).shape
    g_it = np.ceil(np.asarray(gathers, float) / threads) if gather_iters is None else np.asarray(gather_iters, float)
    extra = {}
    # the histogram sweep keeps 4 loads in flight after its remainder loop (SGL_HIST_UNROLL), the emit sweep 1
    # (SGL_LOADS_IN_FLIGHT)
    first = np.minimum(sweeps, 1.0) * sglang_histogram_rounds(seg)
    iters = first + np.maximum(sweeps - 1.0, 0.0) * np.ceil(seg / threads) + SGL_GATHER_ROUNDS * g_it
    in_l1 = seg * SCORE_BYTES <= SGL_L1_BYTES
    l1 = np.where(in_l1, SGL_GATHER_ROUNDS * g_it, 0.0)   # SGL_L1_BYTES
    extra["l1_iters"] = np.broadcast_to(l1, shape).astype(float)
    if rounds is not None:
        ph = np.where(np.asarray(sweeps, float) > 0, SGL_PHASES["stage1"] + np.asarray(rounds, float), 0.0)
        extra["sync_steps"] = np.broadcast_to(ph, shape).astype(float)
    # a row within the CTA's L1 is gathered from there: no L2 / HBM traffic (SGL_L1_BYTES)
    gathered = np.where(in_l1, 0.0, np.asarray(gathers, float) * SECTOR_BYTES)
    rd = rows * (sweeps * n * SCORE_BYTES + gathered)
    again = rd - rows * np.minimum(sweeps, 1.0) * n * SCORE_BYTES   # all but the first sweep: the same CTA's re-reads
    b.add(f"topk_{kernel}", OP_KIND[kernel], flops=rows * sweeps * n * 4.0, bytes_read=rd,
          bytes_written=rows * k * 4.0, parallel_units=rows * np.ones(shape), serial_iters=iters,
          reread_bytes=again, working_set=rows * n * SCORE_BYTES, dtype="fp32", count=count, where=where, **extra)


#: the score rows production kernels are priced on when no trace is given: the recorded rows of the shipped codegqa
#: 16K trace (log-probabilities, `measure.gvr_rows`), resampled to the row length with fp16 dither (as measured)
DEFAULT_SCORE_TRACE = "codegqa_16k_h100_2026-11-22"
_PASS_CACHE: dict = {}


def default_rows() -> list[np.ndarray]:
    """The recorded score rows of DEFAULT_SCORE_TRACE (`measure.gvr_rows`, NaN padding dropped), loaded once."""
    from simulator.shipped import traces_dir

    if "rows" not in _PASS_CACHE:
        z = np.load(traces_dir() / "attention" / f"{DEFAULT_SCORE_TRACE}.npz")
        _PASS_CACHE["rows"] = [r[~np.isnan(r)] for r in z["measure.gvr_rows"].astype(np.float32)]
    return _PASS_CACHE["rows"]


def default_stats(kernel: str, n, k: int = 2048, sample: int = 4) -> dict:
    """Per row, for row lengths `n` on the default recorded scores: sweeps, gathers, gather_iters and rounds (max over
    `sample` sampled rows: a launch lasts as long as its slowest row; lengths rounded to the nearest power of two for
    the statistic, which moves slowly with n). Scalars for a scalar n, else arrays shaped like n."""
    scalar = np.ndim(n) == 0
    n = np.atleast_1d(np.asarray(n, float))
    out = {c: np.zeros(n.shape) for c in STAT_NAMES}
    for i, v in enumerate(n.flat):
        p2 = int(2 ** np.clip(np.round(np.log2(max(v, 1.0))), 0, 24))
        key = (kernel, p2, k)
        if key not in _PASS_CACHE:
            rec = default_rows()
            rng = np.random.default_rng(p2)
            rows = []
            for j in range(sample):
                base = rec[j % len(rec)]
                rows.append((base[rng.integers(0, len(base), p2)] * (1.0 + rng.uniform(-1, 1, p2) * 2.0 ** -11))
                            .astype(np.float32))
            st = pass_stats(kernel, rows, k)
            _PASS_CACHE[key] = {c: st[f"{c}_max"] for c in STAT_NAMES}
        for c in STAT_NAMES:
            out[c].flat[i] = _PASS_CACHE[key][c]
    if scalar:
        return {c: float(v[0]) for c, v in out.items()}
    return out
