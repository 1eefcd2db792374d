"""topk: radix | gvr | sort | torch_topk — exact top-k over a row of N scores, used by selecting attention
(attention: dsa). Each value turns (rows, row length N, k) into Op rows with a documented pass model.

Interface used by the attention strategy:
    topk.add_ops(b, combo, rows, length, k, layers, phase)
rows    rows selected per device per layer (batch x query rows; in prefill, the prompt's rows)
length  N, the row length (past tokens each row ranks), one value per setting
k       how many to keep (DSA: index_topk)
layers  how many layers run the kernel (the op's count)

Currency of the pass model: a *sweep* reads the whole row once from device memory (N x 4 B of fp32
logits, the blog's "R . N . 4B" for radix). All kernels run one CTA per row (TensorRT-LLM
`indexer_topk_decode`: gridDim = numRows, 512 threads), so `parallel_units = rows` and the roofline's
occupancy term prices a batch-1 row on one SM. Work the roofline cannot see as bytes (shared-memory
atomics, in-shared-memory refinement and sorts) is written as instruction work in flop-equivalents
(`flops`, fp32): one SM-cycle of vector work = 256 flop-equivalents (128 FP32 lanes x 2 per SM on
SM80-SM100: CUDA C++ Programming Guide, arithmetic-instruction throughput table). radix and gvr are op kind
'topk_cta' (one-CTA-per-row kernels, calibrated on our own such kernels: hwmodels/calibration/
measure_topk_cta.py, fit_topk_cta.py); sort and torch_topk are kind 'topk' (calibrated on torch.topk). The
sweeps re-read logits the indexer just wrote, from L2 while rows x N x 4 B fits (`reread_bytes`). The
constants below are per element; three are measured (HIST_ATOMIC_FLOPS, GVR_FIXED_FLOPS,
SERIAL_ATOMIC_FLOPS), the rest marked ASSUMPTION where no measurement could be sourced.

radix (TensorRT-LLM topKPerRowDecode, indexerTopK.cu "half - 11 - 11 - 10 bit iterations"):
    `steps` histogram steps; each step = 2 sweeps: (1) every element -> atomicAdd into a 2048-bin
    shared-memory histogram, prefix scan, (2) every element re-read; the ones above the threshold bin
    are appended through ONE shared counter (atomicAdd(&smemFoundTopKValues[0], 1)) — the serialized
    same-address atomics the document calls "shared-memory atomic serialization" — and the threshold
    bin's items (<= 2048) are staged for a final cub::BlockRadixSort of 2048 items.
    steps = 2 (4 sweeps) by default: the document's "3-4 full-row passes" (the upper end; the code's
    passes come in pairs).  Rows of >= 200,000 columns take the split-work path (10 CTAs per row, then a
    1024-thread merge over 10 x k candidates: `multipleBlocksPerRowConfig = 10`, `kDefaultSplitWorkThreshold
    = 200 * 1000` in indexerTopK.cu).
gvr (Guess-Verify-Refine, one fused kernel gvrTopKKernel, one CTA per row):
    P1 guess     read the k predicted positions (preIdx, int32) and their scores: k random 4-B reads, each
                 costing a 32-B sector; block reduction to pmin / pmax / pmean
    P2 verify    S secant count passes over the row (no atomics: per-thread counters + block reduce).
                 S is a DISTRIBUTION: `kernel_passes` replays our measured kernel's secant rule
                 (hwmodels/calibration/topk_cta_kernels.cu, "the production's secant step"); run on Gaussian
                 AR(1) rows it gives the shipped pass table (data/gvr_passes.csv, per row length, correlation
                 and k; agrees with our kernel measured on H100/H200 to ~0.06 passes, tests/test_topk.py). The
                 overlap the kernel sees (shifted: preIdx + 1; the raw one stands in when only it is known)
                 maps to the correlation; a trace (combo.trace) gives per-layer overlaps and recorded pass
                 counts; `passes` sets the prev-step distribution directly (the document's "1-2 iterations")
    P3 collect   one sweep writing the >= threshold elements to shared memory at prefix-sum offsets
                 (ballot-free; reuses P2's per-thread counts, so no extra count sweep)
    P4 refine    exact selection among <= C candidates in shared memory: one 2048-bin histogram over the
                 candidates (C shared atomics), then write k indices
    sweeps = S + 1 (the document: "1-2 full-row passes in the common case" for S, vs 3-4 for radix)
    A launch runs its rows as parallel CTAs and lasts as long as the slowest: the op prices E[max S] over
    the launch's rows. Under MTP all next_n rows of a request share ONE previous top-k (heuristicTopKDecode.cu:
    rowPreIdx = preIdx + (rowIdx / next_n) * preIdxStride, preIdxOffset = (rowIdx % next_n) + 1): row j is
    j + 1 steps stale (correlation rho^(j+1), ASSUMPTION), which dilutes the saving as MTP deepens.
    Kernel variants (`kernel`): 'trtllm' (default) = TensorRT-LLM's kernel, its fixed work and per-sweep work
    pinned by its dispatcher's own B200 random-data timings (GVR_KERNELS below); 'ours' = our measured kernel.
    Dispatch (the document's fallback list; each rule falls back to radix):
      prefill / no previous indices; row length < `min_length` (12,288: TRTLLM_HEURISTIC_NMIN default);
      rows in the launch >= the SM/L2-derived batch bound (below); k not in `supported_topk` (2048 only
      in the document); row length >= `split_work_length` (200,000: "very long rows where the
      implementation still prefers the existing split-work radix path"); architecture before Blackwell
      (the flag is ignored there — only the architecture NAME is read).
    Batch bound (TensorRT-LLM indexerTopK.cu getSchemeXBounds): GVR only while rows < min(kBsWave, kBsL2)
      kBsWave = 3*SM - SM/8   (3 CTAs of ~58 KB smem per SM; B200: 3*148 - 148//8 = 426)
      kBsL2   = 0.9 * L2_bytes / (4 * N)   (B200: L2 126.5 MiB -> 0.9 * 132,644,864 = 119,380,377 B)
    The dispatcher reads the SM count and L2 size at run time (cudaGetDeviceProperties), so the strategy
    takes them from `combo.target` (simulator.combo.TargetFacts), the facts software may query; the
    parameters `wave_bound` / `l2_budget_bytes` override them (None = from the target device).
sort: a full segmented radix sort of the row (cub DeviceSegmentedRadixSort: 8-bit digits -> 4 passes over
    fp32 keys + int32 values, each reading and writing keys and values), then the first k are taken.
torch_topk: PyTorch's radix-select (aten/src/ATen/native/cuda/TensorTopK.cu: RADIX_BITS = 2 ... for
    multi-block slices 8-bit digits) — `digit_passes` = 4 count passes (each its own kernel with
    device-wide histograms), one gather pass, and a sort of the k outputs (sorted=True). Sanity check:
    hwmodels/calibration/data/*.csv rows of family 'topk' (H100/H200, torch.topk); not fitted.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hwmodels.errors import ScenarioError
from simulator.strategies.base import Param, TopkStrategy, register

# ---- instruction work, flop-equivalents per element (see module docstring) ------------------------------
SM_CYCLE_FLOPS = 256.0   # 128 FP32 lanes x 2 flops per SM-cycle (CUDA C++ Programming Guide, SM80-SM100)
#: Three constants of the kernels' structure are MEASURED, not assumed: `sparsesim calibrate fit-topk`
#: (simulator/calibration/fit_topk_cta.py) fits them jointly with the topk_cta efficiencies to our single-CTA
#: radix-select / GVR kernels (measure_topk_cta.py, 2026-11-22; H100 / H200 values in each comment).
#: Shared-memory histogram atomic, flop-equivalents per element on top of the sweep's own work: 9.37 / 9.44.
#: (It replaced an assumed 32, 4 SM-cycles per warp-wide atomic, which priced the histogram sweep too slow.)
HIST_ATOMIC_FLOPS = 9.4
#: GVR's work outside its row sweeps that the phase formulas above do not cover (P1's scattered reads and
#: reductions, P3's prefix sums, P4's histogram / scan / emit / in-bin ranking), per row: 2.74e5 / 2.50e5,
#: ~5 us on one SM - the order of the "P1 + P4 ~ 11 us" of TensorRT-LLM's dispatcher comment.
GVR_FIXED_FLOPS = 2.6e5
#: GVR's synchronized phases outside its count passes: P1 (block reduction of pmin / pmax / pmean), P3 (the
#: prefix sum of the per-thread counts), P4 (the in-shared-memory refinement): one each (pass model).
GVR_EXTRA_PHASES = 3.0
#: Atomics on ONE shared address (the radix kernel's output counter), per selected element: 13.0 / 0.0 (the
#: fit barely sees them: the warp aggregates same-address atomics), taken as their mean. It replaced the
#: assumption of full serialization, one per SM-cycle = 256, which put ~8 us into every radix call.
SERIAL_ATOMIC_FLOPS = 6.5
#: ALU work of a plain streaming pass, per element: load-convert-compare-add (4 instructions; read off
#: the kernels' inner loops: floatAsSortableUint, isPartialMatch, extractBinIdx / compare + counter).
SWEEP_FLOPS = 4.0
#: cub::BlockRadixSort of 2048 float keys + int values, 4-bit digits -> 8 digit passes of rank + scatter,
#: ~16 instructions per item per pass (ASSUMPTION from cub's BlockRadixRank structure).
FINAL_SORT_ITEMS = 2048   # kNumFinalItems in indexerTopK.cu
FINAL_SORT_FLOPS_PER_ITEM = 8 * 16.0
SECTOR_BYTES = 32.0       # a random 4-B read costs one 32-B DRAM/L2 sector (CUDA best-practices guide)
SCORE_BYTES = 4.0         # fp32 logits (indexer_topk_decode takes float logits)
INDEX_BYTES = 4.0         # int32 indices

# ---- GVR dispatch defaults (TensorRT-LLM indexerTopK.cu, quoted in the module docstring) -----------------
GVR_MIN_LENGTH = 12288
SPLIT_WORK_LENGTH = 200_000
SPLIT_WORK_CTAS = 10
L2_BUDGET_FRACTION = 0.9   # indexerTopK.cu getSchemeXBounds: kBsL2 = 0.9 * L2 / (4 N)


def wave_bound_for(sm_count: int) -> int:
    """indexerTopK.cu getSchemeXBounds: kBsWave = 3*SM - SM/8 (B200: 3*148 - 148//8 = 426)."""
    return 3 * sm_count - sm_count // 8
#: GVR's candidate capacity C. ASSUMPTION: the dispatcher comment gives ~58 KB of shared memory per CTA;
#: 6144 candidates x 8 B (fp32 score + int32 index) + a 2048-bin int histogram = 57,344 B fits that.
GVR_CAPACITY = 6144
BLACKWELL_AND_LATER = ("blackwell",)   # sm_100+: the document "targeted at Blackwell (sm_100+)"


def _is_groups(v) -> bool:
    """overlap: a number in [0, 1] (every layer) or [[layers, overlap], ...] groups."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return 0 <= v <= 1
    return (isinstance(v, list) and bool(v) and all(
        isinstance(g, list) and len(g) == 2 and isinstance(g[0], int) and g[0] >= 1
        and isinstance(g[1], (int, float)) and 0 <= g[1] <= 1 for g in v))


class _Topk(TopkStrategy):
    """Base of the selecting top-k values (refusal and the add_ops hook are TopkStrategy's)."""


# ---- radix ---------------------------------------------------------------------------------------------
def radix_work(length, k, steps, hist_flops: float | None = None, serial_flops: float | None = None):
    """(bytes_read, bytes_written, flops) of one row through the single-CTA radix-select kernel.
    `hist_flops` / `serial_flops` override HIST_ATOMIC_FLOPS / SERIAL_ATOMIC_FLOPS (the calibration fits them)."""
    hist = HIST_ATOMIC_FLOPS if hist_flops is None else hist_flops
    serial = SERIAL_ATOMIC_FLOPS if serial_flops is None else serial_flops
    n = np.asarray(length, dtype=np.float64)
    sweeps = 2.0 * np.asarray(steps, dtype=np.float64)
    read = sweeps * n * SCORE_BYTES
    flops = (steps * n * (hist + SWEEP_FLOPS)                     # histogram sweeps (atomics)
             + steps * n * SWEEP_FLOPS                             # scatter sweeps
             + k * serial                                          # same-address output counter
             + FINAL_SORT_ITEMS * FINAL_SORT_FLOPS_PER_ITEM)       # final block sort of the threshold bin
    written = k * INDEX_BYTES
    return read, written, flops


def add_radix_ops(b, rows, length, k, layers, steps: float, where=None, name="topk.radix") -> None:
    """The production radix-select path; rows of >= 200K columns use the two-kernel split-work path."""
    n = np.asarray(length, dtype=np.float64) * np.ones(b.n)
    w = np.ones(b.n, dtype=bool) if where is None else np.broadcast_to(np.asarray(where, dtype=bool), (b.n,))
    split = n >= SPLIT_WORK_LENGTH
    read, written, flops = radix_work(n, k, steps)
    # the indexer kernel wrote the logits just before: every sweep re-reads them, from L2 while they fit
    # (working set rows x N x 4 B); one block-wide reduction per sweep (sync_steps), as calibrated
    b.add(name, "topk_cta", flops=rows * flops, bytes_read=rows * read, bytes_written=rows * written,
          parallel_units=rows, reread_bytes=rows * read, working_set=rows * n * SCORE_BYTES,
          sync_steps=2.0 * steps, dtype="fp32", count=layers, where=w & ~split)
    # split work: 10 CTAs per row, each a radix select over N/10 writing k (score, index) candidates ...
    r10, w10, f10 = radix_work(n / SPLIT_WORK_CTAS, k, steps)
    b.add(name + "_split", "topk_cta", flops=rows * SPLIT_WORK_CTAS * f10, bytes_read=rows * SPLIT_WORK_CTAS * r10,
          bytes_written=rows * SPLIT_WORK_CTAS * 2 * k * SCORE_BYTES, parallel_units=rows * SPLIT_WORK_CTAS,
          dtype="fp32", count=layers, where=w & split)
    # ... then one 1024-thread CTA per row merges the 10 x k candidates
    rm, wm, fm = radix_work(SPLIT_WORK_CTAS * k, k, steps)
    b.add(name + "_merge", "topk_cta", flops=rows * fm, bytes_read=rows * SPLIT_WORK_CTAS * k * (SCORE_BYTES + INDEX_BYTES),
          bytes_written=rows * wm, parallel_units=rows, dtype="fp32", count=layers, where=w & split)


@register
class RadixTopk(_Topk):
    name = "radix"
    description = "production radix-select (TensorRT-LLM indexer top-k): histogram steps over the whole row"
    params = {
        "steps": Param(2, "GVR document: radix pays '3-4 full-row passes'; indexerTopK.cu passes come in pairs "
                          "(histogram + scatter) -> 2 steps = 4 sweeps",
                       lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and 1 <= v <= 4,
                       "a number of histogram steps in [1, 4] (half-11, 11, 11, 10 bits)"),
    }

    def add_ops(self, b, combo, rows, length, k, layers, phase) -> None:
        add_radix_ops(b, rows, length, k, layers, self.steps)


# ---- GVR -----------------------------------------------------------------------------------------------
#: Phase-2 secant target count per k: TensorRT-LLM heuristic_topk.cuh GvrParams<float, K>::kFTarget, as quoted
#: by hwmodels/calibration/measure_topk_cta.py GVR_TARGET (K=512: 512, K=1024: 3072, K=2048: 3072).
GVR_TARGET = {512: 512, 1024: 3072, 2048: 3072}
#: secant passes before the bisection fallback (topk_cta_kernels.cu GVR_MAX_SECANT)
GVR_MAX_SECANT = 12

_BIG = np.float32(3.402823466e38)


def _key_asc(x: np.ndarray) -> np.ndarray:
    """Order-preserving uint32 key of fp32 values (topk_cta_kernels.cu key_asc)."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32)
    return np.where(u & np.uint32(0x80000000), ~u, u | np.uint32(0x80000000)).astype(np.uint32)


def _key_inv(key: np.ndarray) -> np.ndarray:
    k = np.asarray(key, dtype=np.uint32)
    u = np.where(k & np.uint32(0x80000000), k & np.uint32(0x7FFFFFFF), ~k).astype(np.uint32)
    return u.view(np.float32)


def kernel_passes(rows, pred, k: int, capacity: int = GVR_CAPACITY, target: int | None = None,
                  max_secant: int = GVR_MAX_SECANT) -> np.ndarray:
    """Phase-2 count passes of GVR for each row of `rows` [R, N] (fp32 scores) with predicted indices `pred`
    [R, M] — the rule of the project's measured kernel, hwmodels/calibration/topk_cta_kernels.cu gvr_topk
    (P2, "the production's secant step"), vectorized over rows:
      T0 = pmean of the predicted scores, bracket [pmin, pmax] with initial counts c(pmin) = M + M/4,
      c(pmax) = 1; a pass counts c(T) = #{x >= T}; stop when k <= c <= capacity; otherwise move the bracket
      end and step T = vlo + (vhi - vlo) f, f = (c_lo - target) / (c_lo - c_hi) clamped to [0.05, 0.95] (and
      <= 0.5 on the first step); after `max_secant` passes or a collapsed bracket: bisection on the
      order-preserving 32-bit key of the verified bounds. fp32 arithmetic as on the device."""
    x = np.asarray(rows, dtype=np.float32)
    if x.ndim != 2:
        raise ValueError("rows must be [R, N]")
    R = x.shape[0]
    p = np.take_along_axis(x, np.asarray(pred), axis=1)
    M = p.shape[1]
    tgt = np.float32(target if target is not None else GVR_TARGET.get(int(k), 3 * int(k) // 2))
    vlo, vhi = p.min(axis=1), p.max(axis=1)
    T = (p.astype(np.float64).sum(axis=1) / M).astype(np.float32)
    clo = np.full(R, M + M // 4, dtype=np.int64)
    chi = np.ones(R, dtype=np.int64)
    lo_ok = np.zeros(R, dtype=bool)
    hi_ok = np.zeros(R, dtype=bool)
    passes = np.zeros(R, dtype=np.int64)
    done = np.zeros(R, dtype=bool)
    active = vlo < vhi
    while active.any():
        i = np.nonzero(active)[0]
        c = (x[i] >= T[i, None]).sum(axis=1)
        passes[i] += 1
        ok = (c >= k) & (c <= capacity)
        done[i[ok]] = True
        high = ~ok & (c > capacity)
        low = ~ok & ~high
        vlo[i[high]], clo[i[high]], lo_ok[i[high]] = T[i[high]], c[high], True
        vhi[i[low]], chi[i[low]], hi_ok[i[low]] = T[i[low]], c[low], True
        go = i[~ok & (passes[i] < max_secant)]
        if len(go) == 0:
            break
        rng = (vhi[go] - vlo[go]).astype(np.float32)
        sec = (clo[go] > chi[go]) & (rng > np.float32(1e-10))
        with np.errstate(divide="ignore", invalid="ignore"):
            f = ((clo[go] - tgt) / (clo[go] - chi[go])).astype(np.float32)
        f = np.clip(f, np.float32(0.05), np.float32(0.95))
        f = np.where(passes[go] == 1, np.minimum(f, np.float32(0.5)), f)
        nv = np.where(sec, vlo[go] + rng * f, np.float32(0.5) * (vlo[go] + vhi[go])).astype(np.float32)
        nv = np.where(nv <= vlo[go], vlo[go] + rng * np.float32(0.05), nv).astype(np.float32)
        nv = np.where(nv >= vhi[go], vhi[go] - rng * np.float32(0.05), nv).astype(np.float32)
        edge = (nv == vlo[go]) | (nv == vhi[go])
        nv = np.where(edge, np.float32(0.5) * (vlo[go] + vhi[go]), nv).astype(np.float32)
        collapsed = (nv == vlo[go]) | (nv == vhi[go])
        T[go] = nv
        active[:] = False
        active[go[~collapsed]] = True
    # bisection fallback on the ascending key (invariant c(lo) >= k, c(hi) < k)
    todo = ~done
    if todo.any():
        lo = np.where(lo_ok, _key_asc(vlo), _key_asc(np.full(R, -_BIG, np.float32))).astype(np.int64)
        hi = np.where(hi_ok, _key_asc(vhi), _key_asc(np.full(R, np.inf, np.float32))).astype(np.int64)
        act = todo & (hi - lo > 1)
        while act.any():
            i = np.nonzero(act)[0]
            mid = lo[i] + (hi[i] - lo[i]) // 2
            t = _key_inv(mid.astype(np.uint32))
            c = (x[i] >= t[:, None]).sum(axis=1)
            passes[i] += 1
            ok = (c >= k) & (c <= capacity)
            done[i[ok]] = True
            up = ~ok & (c > capacity)
            lo[i[up]] = mid[up]
            hi[i[~ok & ~up]] = mid[~ok & ~up]
            act = ~done & (hi - lo > 1)
        passes[~done] += 1   # ties at the k-th value: one last (truncated) count pass
    return passes


def secant_search(scores: np.ndarray, predicted: np.ndarray, k: int, capacity: int = GVR_CAPACITY,
                  max_passes: int = GVR_MAX_SECANT) -> int:
    """Phase-2 count passes for ONE row (kernel_passes on a single row; kept for simulator.traces)."""
    return int(kernel_passes(np.asarray(scores)[None, :], np.asarray(predicted)[None, :], k, capacity,
                             max_secant=max_passes)[0])


# ---- the pass table: synthetic Gaussian rows through kernel_passes, precomputed and shipped -------------
#: Rows are standard normal; the current step's scores are rho * prev + sqrt(1 - rho^2) * noise (the AR(1)
#: drift ASSUMPTION; the same generator as hwmodels/calibration/measure_topk_cta.py), preIdx = the top-k of
#: prev ('previous') or k uniform positions ('random'). Each cell holds the histogram of phase-2 passes over
#: PASS_TABLE_ROWS rows and the measured mean raw overlap |top-k(cur) & preIdx| / k. Built by
#: `python -c "from simulator.strategies.topk import build_pass_table; build_pass_table()"` (~2 min); read in ~10 ms.
PASS_TABLE = Path(__file__).parent / "data" / "gvr_passes.csv"
PASS_TABLE_LENGTHS = (4096, 8192, 12288, 16384, 24576, 32768, 49152, 68665, 100000, 131072, 196608)
PASS_TABLE_RHOS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.725, 0.75, 0.775, 0.8, 0.825, 0.85,
                   0.875, 0.9, 0.925, 0.95, 0.975, 0.99)
PASS_TABLE_KS = (512, 1024, 2048)
PASS_TABLE_ROWS = 256
PASS_TABLE_SEED = 20261122
MAX_PASSES = 48


def pass_cell(n: int, k: int, rhos, rows: int = PASS_TABLE_ROWS, seed: int = PASS_TABLE_SEED) -> list[dict]:
    """Pass histograms for one row length: 'random' preIdx, then 'previous' at every rho of `rhos`."""
    rng = np.random.default_rng([seed, n, k])
    prev = rng.standard_normal((rows, n), dtype=np.float32)
    noise = rng.standard_normal((rows, n), dtype=np.float32)
    r = np.arange(rows)[:, None]
    top_prev = np.argpartition(-prev, k, axis=1)[:, :k]
    rand = np.argpartition(rng.random((rows, n), dtype=np.float32), k, axis=1)[:, :k]
    out = []
    for source, rho in [("random", 0.0)] + [("previous", float(x)) for x in rhos]:
        cur = noise if rho == 0.0 else (np.float32(rho) * prev + np.float32(np.sqrt(1 - rho * rho)) * noise)
        pred = rand if source == "random" else top_prev
        mask = np.zeros((rows, n), dtype=bool)
        mask[r, np.argpartition(-cur, k, axis=1)[:, :k]] = True
        overlap = float(mask[r, pred].sum() / (rows * k))
        p = kernel_passes(cur, pred, k)
        hist = np.bincount(np.minimum(p, MAX_PASSES), minlength=MAX_PASSES + 1)
        out.append({"k": k, "row_len": n, "source": source, "rho": rho, "overlap": round(overlap, 5), "rows": rows,
                    "hist": " ".join(f"{s}:{c}" for s, c in enumerate(hist) if c)})
    return out


def build_pass_table(path: Path = PASS_TABLE, lengths=PASS_TABLE_LENGTHS, ks=PASS_TABLE_KS, rhos=PASS_TABLE_RHOS,
                     rows: int = PASS_TABLE_ROWS) -> Path:
    import pandas as pd

    cells = []
    for k in ks:
        for n in lengths:
            if n >= 2 * k:
                cells += pass_cell(n, k, rhos, rows)
                print(f"k {k} N {n}: done", flush=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(cells).to_csv(path, index=False)
    return path


def _hist_probs(h: str) -> np.ndarray:
    v = np.zeros(MAX_PASSES + 1)
    for item in str(h).split():
        s, c = item.split(":")
        v[int(s)] = float(c)
    return v / v.sum()


@dataclass(frozen=True)
class _PassCells:
    lengths: np.ndarray      # [L] row lengths with cells
    rhos: np.ndarray         # [Q] rho grid ('previous')
    overlap: np.ndarray      # [L, Q] measured mean raw overlap
    probs: np.ndarray        # [L, Q, MAX_PASSES + 1]
    random: np.ndarray       # [L, MAX_PASSES + 1]


@functools.lru_cache(maxsize=4)
def pass_table(k: int) -> _PassCells:
    """The shipped pass table for top-k `k` (ScenarioError when k has no cells)."""
    import pandas as pd

    df = pd.read_csv(PASS_TABLE)
    d = df[df["k"] == int(k)]
    if d.empty:
        raise ScenarioError(f"no GVR pass-table cells for k = {k} (table has k in "
                            f"{sorted(df['k'].unique().tolist())}); rebuild with build-pass-table")
    lengths = np.array(sorted(d["row_len"].unique()), dtype=np.float64)
    prev = d[d["source"] == "previous"]
    rhos = np.array(sorted(prev["rho"].unique()), dtype=np.float64)
    ov = np.zeros((len(lengths), len(rhos)))
    pr = np.zeros((len(lengths), len(rhos), MAX_PASSES + 1))
    rnd = np.zeros((len(lengths), MAX_PASSES + 1))
    for i, n in enumerate(lengths):
        rows = prev[prev["row_len"] == n].set_index("rho").loc[rhos]
        ov[i] = rows["overlap"].to_numpy()
        pr[i] = np.stack([_hist_probs(h) for h in rows["hist"]])
        rnd[i] = _hist_probs(d[(d["row_len"] == n) & (d["source"] == "random")]["hist"].iloc[0])
    return _PassCells(lengths, rhos, ov, pr, rnd)


def _length_weights(t: _PassCells, n: float) -> list[tuple[int, float]]:
    x = np.log2(np.clip(float(n), t.lengths[0], t.lengths[-1]))
    g = np.log2(t.lengths)
    j = int(np.clip(np.searchsorted(g, x) - 1, 0, len(g) - 2))
    w = (x - g[j]) / (g[j + 1] - g[j])
    return [(j, 1.0 - w), (j + 1, w)]


def rho_for_overlap(overlap: float, k: int, n: float) -> float:
    """The AR(1) correlation whose expected raw top-k overlap at row length n is `overlap` (table inversion;
    an overlap at or below the rho = 0 cell, i.e. the random baseline ~k/n, gives 0)."""
    t = pass_table(k)
    ov = sum(w * t.overlap[j] for j, w in _length_weights(t, n))
    ov = np.maximum.accumulate(ov)
    if overlap <= ov[0]:
        return 0.0
    return float(np.interp(overlap, ov, t.rhos))


def overlap_for_rho(rho: float, k: int, n: float) -> float:
    t = pass_table(k)
    ov = sum(w * t.overlap[j] for j, w in _length_weights(t, n))
    return float(np.interp(rho, t.rhos, ov))


def pass_distribution(source: str, k: int, n: float, rho: float = 0.0) -> np.ndarray:
    """P(phase-2 passes = s), s = 0..MAX_PASSES, for one row of length n ('random' preIdx, or 'previous' with
    AR(1) correlation rho); linear in log2(n) between table lengths and in rho between table rhos."""
    t = pass_table(k)
    out = np.zeros(MAX_PASSES + 1)
    for j, w in _length_weights(t, n):
        if w == 0.0:
            continue
        if source == "random":
            out += w * t.random[j]
        else:
            r = float(np.clip(rho, t.rhos[0], t.rhos[-1]))
            q = int(np.clip(np.searchsorted(t.rhos, r) - 1, 0, len(t.rhos) - 2))
            a = (r - t.rhos[q]) / (t.rhos[q + 1] - t.rhos[q])
            out += w * ((1 - a) * t.probs[j, q] + a * t.probs[j, q + 1])
    return out


def expected_max_passes(dists, copies: float = 1.0) -> float:
    """E[max] of independent pass counts: one row per distribution in `dists`, each repeated `copies` times
    (the rows of one launch run as parallel CTAs; the launch lasts as long as its slowest row)."""
    cdf = np.ones(MAX_PASSES + 1)
    for d in dists:
        cdf = cdf * np.cumsum(d) ** copies
    pmf = np.diff(np.concatenate([[0.0], cdf]))
    return float((np.arange(MAX_PASSES + 1) * pmf).sum())


def passes_for(overlap: float, source: str, k: int, length, seed: int = 0) -> np.ndarray:  # noqa: ARG001
    """Mean phase-2 passes at each row length for one row whose preIdx has raw overlap `overlap` ('previous')
    or is random (the table; `seed` is kept for callers of the former Monte Carlo and ignored)."""
    n = np.atleast_1d(np.asarray(length, dtype=np.float64))
    out = np.empty(len(n))
    for i, x in enumerate(n):
        rho = 0.0 if source == "random" else rho_for_overlap(float(overlap), int(k), float(x))
        d = pass_distribution("random" if source == "random" else "previous", int(k), float(x), rho)
        out[i] = float((np.arange(MAX_PASSES + 1) * d).sum())
    return out


def overlap_correlation(overlap: float, k: int, n: int) -> float:
    """Alias of rho_for_overlap (kept for callers of the former bivariate-normal inversion)."""
    return rho_for_overlap(overlap, k, n)


def gvr_work(length, k, passes, capacity: int = GVR_CAPACITY, hist_flops: float | None = None,
             fixed_flops: float | None = None, sweep_flops: float | None = None) -> dict:
    """Per-row (bytes_read, bytes_written, flops) of each GVR phase (see the module docstring).
    `hist_flops` / `fixed_flops` / `sweep_flops` override HIST_ATOMIC_FLOPS / GVR_FIXED_FLOPS / SWEEP_FLOPS."""
    hist = HIST_ATOMIC_FLOPS if hist_flops is None else hist_flops
    fixed = GVR_FIXED_FLOPS if fixed_flops is None else fixed_flops
    sweep = SWEEP_FLOPS if sweep_flops is None else sweep_flops
    n = np.asarray(length, dtype=np.float64)
    return {
        "guess": (k * (INDEX_BYTES + SECTOR_BYTES), 0.0, k * SWEEP_FLOPS),
        "verify": (passes * n * SCORE_BYTES, 0.0, passes * n * sweep),
        "collect": (n * SCORE_BYTES, 0.0, n * sweep),
        "refine": (0.0, k * INDEX_BYTES, capacity * (hist + SWEEP_FLOPS)
                   + FINAL_SORT_ITEMS * SWEEP_FLOPS + fixed),
    }


#: GVR kernel variants: per-element work of a row sweep and the work outside the sweeps, flop-equivalents.
#:   ours    our own kernel (topk_cta_kernels.cu), measured on H100/H200 (SWEEP_FLOPS, GVR_FIXED_FLOPS above)
#:   trtllm  TensorRT-LLM's gvrTopKKernel: pinned by its dispatcher's B200 random-data timings (longcheng-nv/
#:           TensorRT-LLM@20727fcc89f359b5f22308be002a4b1df0655536 cpp/tensorrt_llm/kernels/indexerTopK.cu,
#:           invokeIndexerTopKDecode, comment
#:           "Scheme X v1.2 (2026-04-25)": N = 8192 / 16384 / 32768 / 131072 -> Heuristic 16.5 / 21.9 / 26.1 /
#:           43.4 us at BS = 1). simulator/figures/gvr.py fit_trtllm_split() fits (sweep, fixed) to the 8K, 32K
#:           and 128K timings through the B200 roofline with the pass table's random-preIdx pass counts; 16K
#:           is held out (the document's parity point). tests/test_topk.py re-derives these two numbers.
GVR_KERNELS = {
    "ours": {"sweep_flops": SWEEP_FLOPS, "fixed_flops": GVR_FIXED_FLOPS},
    "trtllm": {"sweep_flops": 2.85, "fixed_flops": 7.94e5},
}


@register
class GVRTopk(_Topk):
    name = "gvr"
    description = "Guess-Verify-Refine exact top-k from the previous step's top-k (TensorRT-LLM, Blackwell)"
    params = {
        "overlap": Param([[2, 0.015], [59, 0.44]],
                         "GVR document Fig. 2 / ablation: layers 0-1 ~1.5 % raw overlap, layers 20-60 ~44 %; "
                         "ASSUMPTION: layers 2-19 (not quoted) like layers 20-60",
                         _is_groups, "a number in [0, 1] or [[layers, overlap], ...] whose layers sum to the "
                         "model's", list_valued=True),
        "shifted_overlap": Param(None, "not given: the raw overlap stands in for the shifted one (ASSUMPTION: the "
                                       "kernel applies preIdx + 1, heuristicTopKDecode.cu, so it sees the "
                                       "shifted overlap; the document publishes only the raw one)",
                                 lambda v: v is None or _is_groups(v),
                                 "null or like `overlap` (overlap with the previous top-k shifted by +1)",
                                 list_valued=True),
        "passes": Param(None, "not given: the pass table at the overlap (Gaussian AR(1) rows)",
                        lambda v: v is None or (isinstance(v, dict) and bool(v) and all(
                            isinstance(s, int) and 1 <= s <= MAX_PASSES and isinstance(p, (int, float)) and 0 <= p <= 1
                            for s, p in v.items()) and abs(sum(v.values()) - 1.0) <= 1e-6),
                        "null or {passes: probability} for the prev-step rows, probabilities summing to 1, e.g. "
                        "{1: 0.5, 2: 0.5} (the document's '1-2 iterations on real decode data')"),
        "kernel": Param("trtllm", "TensorRT-LLM's kernel (the document's); 'ours' = our measured kernel",
                        lambda v: (isinstance(v, str) and v in GVR_KERNELS) or (isinstance(v, dict) and set(v) == {"sweep_flops", "fixed_flops"}
                                                       and all(isinstance(x, (int, float)) and x >= 0
                                                               for x in v.values())),
                        " | ".join(GVR_KERNELS) + " | {sweep_flops: F, fixed_flops: F} (what-if / fitting)"),
        "preidx": Param("previous", "the document's production path: preIdx = previous step's top-k",
                        lambda v: v in ("previous", "random", "none"),
                        "previous | random (ablation: random indices) | none (no preIdx -> radix)"),
        "min_length": Param(GVR_MIN_LENGTH, "TRTLLM_HEURISTIC_NMIN default 12288 (GVR document)",
                            lambda v: isinstance(v, int) and 1024 <= v <= 200000, "an integer 1024..200000"),
        "supported_topk": Param([2048], "GVR document: 'currently supports index_topk=2048'; 512/1024 planned",
                                lambda v: isinstance(v, list) and all(isinstance(x, int) and x > 0 for x in v),
                                "a list of k values GVR handles (what-if: [512, 1024, 2048])", list_valued=True),
        "wave_bound": Param(None, "indexerTopK.cu kBsWave = 3*SM - SM/8 of the target device (B200 148 SMs -> 426)",
                            lambda v: v is None or (isinstance(v, int) and v >= 1),
                            "null (from the target's SM count) or a positive integer (rows per launch)"),
        "l2_budget_bytes": Param(None, "indexerTopK.cu kBsL2 budget = 0.9 x the target's L2 (B200 126.5 MiB)",
                                 lambda v: v is None or (isinstance(v, (int, float)) and v > 0),
                                 "null (0.9 x the target's L2) or a positive number of bytes"),
        "stale_rows": Param(True, "heuristicTopKDecode.cu: the next_n rows of a request share one preIdx, row j is "
                                  "j + 1 steps from it; ASSUMPTION: its correlation decays as rho^(j+1)",
                            lambda v: isinstance(v, bool), "true | false (every row at the layer's overlap)"),
        "steps": RadixTopk.params["steps"],
        "seed": Param(0, "kept for scenario compatibility (the pass table replaced the seeded Monte Carlo)",
                      lambda v: isinstance(v, int), "an integer"),
    }

    def groups(self, layers: int) -> list[tuple[int, float]]:
        """(layers, overlap the kernel sees) groups: the shifted overlap when given, else the raw one."""
        ov = self.shifted_overlap if self.shifted_overlap is not None else self.overlap
        if self.preidx == "random":  # random indices: the overlap is k/n whatever the layer
            return [(layers, 0.0)]
        if not isinstance(ov, list):
            return [(layers, float(ov))]
        total = sum(g[0] for g in ov)
        if total != layers:
            raise ScenarioError(f"gvr overlap groups cover {total} layers; the model has {layers}",
                                field="strategies.topk.gvr.overlap")
        return [(int(g[0]), float(g[1])) for g in ov]

    def refuse(self, combo):
        r = super().refuse(combo)
        if r:
            return r
        for name in ("overlap", "shifted_overlap"):
            v = getattr(self, name)
            if isinstance(v, list) and sum(g[0] for g in v) != combo.model.layers:
                return (f"gvr {name} groups cover {sum(g[0] for g in v)} layers; {combo.model.name} has "
                        f"{combo.model.layers}")
        return None

    def dispatch(self, combo, rows, length, k, phase) -> np.ndarray:
        """True where the GVR fast path runs (one value per setting); False falls back to radix."""
        rows = np.asarray(rows, dtype=np.float64)
        n = np.asarray(length, dtype=np.float64) * np.ones_like(rows)
        if phase != "decode" or self.preidx == "none":
            return np.zeros(n.shape, dtype=bool)
        target = combo.target
        if target.architecture not in BLACKWELL_AND_LATER:
            return np.zeros(n.shape, dtype=bool)
        if int(k) not in self.supported_topk:
            return np.zeros(n.shape, dtype=bool)
        wave = self.wave_bound if self.wave_bound is not None else wave_bound_for(target.sm_count)
        l2 = self.l2_budget_bytes if self.l2_budget_bytes is not None else L2_BUDGET_FRACTION * (target.l2_bytes or 0.0)
        batch_bound = np.minimum(wave, np.floor(l2 / (SCORE_BYTES * n)))
        return (n >= self.min_length) & (n < SPLIT_WORK_LENGTH) & (rows < batch_bound)

    # ---- pass counts ---------------------------------------------------------------------------------
    def layer_inputs(self, combo, layers: int, k: int, n: float) -> tuple[list[tuple[float | None, tuple | None]], str]:
        """Per model layer: (overlap, pass distribution as a tuple or None), and where they came from.
        overlap None and distribution None = random preIdx. With a trace (combo.trace): its shifted (else raw)
        overlap per layer at the top-k tier whose fraction k_t / N_trace is closest to k / n (statistics depend
        on k/N; the layer transfer by relative depth is simulator.traces' ASSUMPTION), and its recorded pass
        counts on full score rows (gvr.passes_rows) when present and recorded at a k/N within 1.5x of k / n;
        otherwise the parameters (the overlap
        groups, and an explicit `passes` distribution for the prev-step rows when given)."""
        if self.preidx == "random":
            return [(None, None)] * layers, "random preIdx"
        ts = combo.trace
        name = next((nm for nm in ("topk.overlap_shifted", "topk.overlap_raw") if ts is not None and ts.has(nm)), None)
        if name is not None and _coords(ts, "k"):
            tiers = _coords(ts, "k")
            ctx = float(ts.meta.get("mean_context") or n)
            kt = min(tiers, key=lambda t: abs(t / ctx - k / n))
            ov = [float(o) for o in ts.per_layer(name, layers, k=kt)]
            src = f"trace {ts.name} ({ts.source}): {name} at k {kt} of mean context {ctx:,.0f} (k/N {kt / ctx:.3f})"
            pk = float(((ts.meta.get("policies") or {}).get("topk") or {}).get("k") or 0.0)
            if ts.has("gvr.passes_rows") and pk > 0 and 2.0 / 3.0 <= (pk / ctx) / (k / n) <= 1.5:
                dists = []
                for j in _trace_layers(ts, layers):
                    x = np.clip(np.asarray(ts.samples("gvr.passes_rows", layer=int(j)), dtype=int), 1, MAX_PASSES)
                    h = np.bincount(x, minlength=MAX_PASSES + 1) / max(len(x), 1)
                    dists.append(tuple(np.round(h, 6)))
                return list(zip(ov, dists)), src + "; gvr.passes_rows (recorded score rows)"
            return [(o, None) for o in ov], src
        dist = None
        if self.passes is not None:
            d = np.zeros(MAX_PASSES + 1)
            for s_, p in self.passes.items():
                d[int(s_)] = float(p)
            dist = tuple(d / d.sum())
        which = "shifted_overlap" if self.shifted_overlap is not None else "overlap (raw, standing in for shifted)"
        out = []
        for nl, ov in self.groups(layers):
            out += [(ov, dist)] * nl
        return out, f"parameter: {which}" + (", passes" if dist is not None else "")

    def add_ops(self, b, combo, rows, length, k, layers, phase) -> None:
        rows = np.asarray(rows, dtype=np.float64) * np.ones(b.n)
        n = np.asarray(length, dtype=np.float64) * np.ones(b.n)
        fast = self.dispatch(combo, rows, n, k, phase)
        add_radix_ops(b, rows, n, k, layers, self.steps, where=~fast)
        if not fast.any():
            return
        q = int(combo.speculation.draft_tokens) + 1 if phase == "decode" else 1
        kern = self.kernel if isinstance(self.kernel, dict) else GVR_KERNELS[self.kernel]
        L = int(layers)
        passes = np.zeros((L, b.n))
        for x in np.unique(n[fast]):
            inputs, _ = self.layer_inputs(combo, L, int(k), float(x))
            for i in np.nonzero(fast & (n == x))[0]:
                passes[:, i] = [launch_passes(inp, int(k), float(x), float(rows[i]) / q, q, self.stale_rows)
                                for inp in inputs]
        # one op per run of consecutive layers with the same pass counts (a few groups; more with a trace)
        start = 0
        while start < L:
            end = start + 1
            while end < L and np.array_equal(passes[end], passes[start]):
                end += 1
            p = passes[start]
            w = gvr_work(n, k, p, sweep_flops=kern["sweep_flops"], fixed_flops=kern["fixed_flops"])
            rd = sum(v[0] for v in w.values())
            wr = sum(v[1] for v in w.values())
            fl = sum(v[2] for v in w.values())
            sweeps = w["verify"][0] + w["collect"][0]
            # sweeps re-read the L2-resident logits (see radix); P2 passes + P3 sweep + P1 / P4 phases
            b.add(f"topk.gvr[L{start}-{end - 1}]", "topk_cta", flops=rows * fl, bytes_read=rows * rd,
                  bytes_written=rows * wr, parallel_units=rows, reread_bytes=rows * sweeps,
                  working_set=rows * n * SCORE_BYTES, sync_steps=p + GVR_EXTRA_PHASES, dtype="fp32",
                  count=end - start, where=fast)
            start = end


@functools.lru_cache(maxsize=4096)
def launch_passes(inp: tuple, k: int, n: float, batch: float, rows_per_seq: int, stale: bool = True) -> float:
    """E[max phase-2 passes] over the rows of one launch: `batch` sequences x `rows_per_seq` rows; inp =
    (overlap, distribution tuple or None), both None = random preIdx. All rows of a sequence share ONE
    previous top-k (heuristicTopKDecode.cu: rowPreIdx = preIdx + (rowIdx / next_n) * preIdxStride, offset
    (rowIdx % next_n) + 1), so row j is j + 1 steps from it; under the AR(1) drift its correlation is
    rho^(j+1) (ASSUMPTION: staleness compounds like the drift); the launch lasts as long as its slowest row.
    A given distribution (trace, `passes`) replaces the table for row 0 where the overlap is above random."""
    overlap, dist = inp
    if overlap is None and dist is None:
        return expected_max_passes([pass_distribution("random", k, n)], batch * rows_per_seq)
    d0 = None if dist is None else np.asarray(dist, dtype=np.float64)
    rho = rho_for_overlap(float(overlap), k, n) if overlap is not None else \
        rho_for_overlap(overlap_of_dist(d0, k, n), k, n)
    dists = [pass_distribution("previous", k, n, rho ** (j + 1 if stale else 1)) for j in range(rows_per_seq)]
    if d0 is not None and rho > 0:
        dists[0] = d0
        if not stale:
            dists = [d0] * rows_per_seq
    return expected_max_passes(dists, batch)


def overlap_of_dist(d: np.ndarray, k: int, n: float) -> float:
    """The overlap whose table distribution has the same mean passes as `d` (for staleness of a given
    distribution; the nearest in mean)."""
    t = pass_table(k)
    mean = float((np.arange(MAX_PASSES + 1) * d).sum())
    means = np.array([float((np.arange(MAX_PASSES + 1) * pass_distribution("previous", k, n, r)).sum())
                      for r in t.rhos])
    return overlap_for_rho(float(t.rhos[int(np.argmin(np.abs(means - mean)))]), k, n)


def _trace_layers(ts, layers: int) -> np.ndarray:
    from simulator.traces.stats import layer_map

    return layer_map(ts.layers, layers)


def _coords(ts, axis: str) -> list:
    try:
        return [int(x) for x in ts.coords.get(axis, [])]
    except (AttributeError, TypeError, ValueError):
        return []


def _merge_runs(inputs: list[tuple[int, object]]) -> list[tuple[int, object]]:
    """Merge consecutive entries with equal inputs (fewer op rows)."""
    out: list[tuple[int, object]] = []
    for nl, inp in inputs:
        if out and _same(out[-1][1], inp):
            out[-1] = (out[-1][0] + nl, inp)
        else:
            out.append((nl, inp))
    return out


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and np.array_equal(a, b)
    return a == b

# ---- sort and torch.topk -------------------------------------------------------------------------------
#: cub segmented radix sort: 8-bit digits over 32-bit keys -> 4 passes (cub's default for 4-byte keys
#: uses 7-8 bit digits), each reading and writing key + value.
SORT_PASSES = 4
#: ASSUMPTION: elements per CTA of a device-wide sort / multi-block select pass (cub onesweep tile:
#: 256 threads x 15 items ~ 3840; rounded to 4096)
TILE_ELEMS = 4096


@register
class SortTopk(_Topk):
    name = "sort"
    description = "sort the whole row (segmented radix sort) and keep the first k"

    def add_ops(self, b, combo, rows, length, k, layers, phase) -> None:
        n = np.asarray(length, dtype=np.float64)
        kv = SCORE_BYTES + INDEX_BYTES
        b.add("topk.sort", "topk", flops=rows * SORT_PASSES * n * 2 * SWEEP_FLOPS,
              bytes_read=rows * SORT_PASSES * n * kv, bytes_written=rows * SORT_PASSES * n * kv,
              parallel_units=rows * np.maximum(1.0, n / TILE_ELEMS), dtype="fp32", count=layers)
        b.add("topk.sort_take", "copy", bytes_read=rows * k * INDEX_BYTES, bytes_written=rows * k * INDEX_BYTES,
              parallel_units=rows, dtype="fp32", count=layers)


@register
class TorchTopk(_Topk):
    name = "torch_topk"
    description = "torch.topk-like radix select: one kernel per digit pass, a gather pass, a sort of the k"
    params = {
        "digit_passes": Param(4, "PyTorch TensorTopK.cu multi-block radix select: 8-bit digits over 32-bit "
                                 "keys -> 4 count passes", lambda v: isinstance(v, int) and 1 <= v <= 16,
                              "an integer 1..16"),
    }

    def add_ops(self, b, combo, rows, length, k, layers, phase) -> None:
        # --- kernel model (calibration helper, issue 15): torch.topk's own dispatch, see torch_topk_dispatch_ops
        torch_topk_dispatch_ops(b, rows, length, SCORE_BYTES, k, None, count=layers)


#: torch.topk's sort path (TensorTopK.cpp should_use_sort: <= 10 rows of >= 100,000). MEASURED against it on the
#: H100 with torch 2.11 (hwmodels/calibration/data/regimes_*.csv): 2 and 8 rows of 256K-1M columns take 1.0-1.3 x
#: the time of one row, which a segmented sort of all rows x L (key, index) pairs cannot; the multi-block
#: path's cost scales as measured, so it prices them (False). True restores the sort path.
USE_SORT_PATH = False


def torch_topk_dispatch_ops(b, rows, L, dtype_bytes, k, sel, count=1.0) -> None:
    """Kernels of torch.topk(sorted=True) on `rows` rows of length `L` (each a scalar or one value per
    setting), following PyTorch's dispatch (aten/src/ATen/native/cuda/TensorTopK.cpp should_use_sort,
    TensorTopK.cu should_use_multiblock). Its work is per-element instruction work (digit extraction,
    shared-memory histogram atomics) in the flop-equivalent currency of this module (SWEEP_FLOPS,
    HIST_ATOMIC_FLOPS), priced as op kind 'topk' (calibrated on torch.topk, simulator/calibration/fit.py).
    (Moved here from the calibration so that `topk: torch_topk` prices what the calibration measures.)

    sort path    rows <= 10 and L >= 100,000: a segmented radix sort of (key, int64 index) pairs, per 8-bit
                 digit an upsweep, a scan and a downsweep kernel (CUB's radix-sort structure), plus the
                 index fill and the copies of the first k
    multi-block  (rows, L) inside should_use_multiblock's bounds: per 8-bit digit (RADIX_BITS = 8) a
                 counting kernel over all rows (rows x L / 4096 blocks) and a small within-k-counts kernel;
                 two prefix-sum kernels; a gather kernel reading the rows once
    single-block otherwise: one thread block per row sweeps its row once per 2-bit digit (SortingRadix-
                 Select.cuh RADIX_BITS = 2) and once more to gather: one kernel whose sweeps are
                 synchronized phases (sync_steps)
    and finally (sorted=True) a sort of the k selected (value, index) pairs per row."""
    bits = dtype_bytes * 8
    rows = np.asarray(rows, float) * np.ones(b.n)
    L = np.asarray(L, float) * np.ones(b.n)
    sel = np.ones(b.n, dtype=bool) if sel is None else np.broadcast_to(np.asarray(sel, dtype=bool), (b.n,))
    n = rows * L
    count_work = n * (SWEEP_FLOPS + HIST_ATOMIC_FLOPS)   # a digit-counting pass: sweep + histogram atomic
    use_sort = sel & (rows <= 10) & (L >= 100_000) & USE_SORT_PATH
    mb = sel & ~use_sort & (((rows <= 20) & (L >= 20000)) | ((rows > 20) & (rows <= 40) & (L >= 10000))
                            | ((rows > 40) & (rows <= 80) & (L >= 8000)) | ((rows > 80) & (rows < 200) & (L >= 5000))
                            | ((rows >= 200) & (rows < 800) & (L >= 3000)) | ((rows >= 800) & (L >= 800)))
    sb = sel & ~use_sort & ~mb
    data = n * dtype_bytes
    pairs = n * (dtype_bytes + 8)
    passes8 = bits / 8
    b.add("topk_sort_pass", "topk", flops=count_work, bytes_read=pairs, bytes_written=pairs,
          count=3 * passes8 * count, dtype="fp32", where=use_sort)
    b.add("topk_sort_misc", "topk", bytes_written=n * 8, count=3.0 * count, dtype="fp32", where=use_sort)
    units_mb = rows * np.ceil(L / 4096)  # blocks per slice: items per thread x 256 threads (TensorTopK.cu)
    b.add("topk_count", "topk", flops=count_work, bytes_read=data, reread_bytes=data * (passes8 - 1) / passes8,
          working_set=data, parallel_units=units_mb, count=passes8 * count, dtype="fp32", where=mb)
    b.add("topk_within_k", "topk", bytes_read=units_mb * 1024.0, count=passes8 * count, dtype="fp32", where=mb)
    b.add("topk_scan", "topk", bytes_read=units_mb * 8.0, count=2.0 * count, dtype="fp32", where=mb)
    b.add("topk_gather", "topk", flops=n * SWEEP_FLOPS, bytes_read=data, bytes_written=rows * k * (dtype_bytes + 8),
          parallel_units=units_mb, count=count, dtype="fp32", where=mb)
    sweeps = bits / 2 + 1
    # single-block digit counting uses warp ballots and block reductions (no atomics): 2 sweeps' work each
    b.add("topk_single_block", "topk", flops=n * sweeps * 2 * SWEEP_FLOPS, bytes_read=data * sweeps,
          reread_bytes=data * (sweeps - 1), working_set=data, parallel_units=rows, sync_steps=sweeps,
          count=count, dtype="fp32", where=sb)
    b.add("topk_sort_k", "topk", flops=rows * k * 8 * 16.0, bytes_read=rows * k * (dtype_bytes + 8),
          bytes_written=rows * k * (dtype_bytes + 8), parallel_units=rows, count=count, dtype="fp32",
          where=sel & ~use_sort)

