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
    P2 verify    S secant count passes over the row (no atomics: per-thread counters + block reduce);
                 S comes from `secant_passes` (below) and depends on the step-to-step overlap
    P3 collect   one sweep writing the >= threshold elements to shared memory at prefix-sum offsets
                 (ballot-free; reuses P2's per-thread counts, so no extra count sweep)
    P4 refine    exact selection among <= C candidates in shared memory: one 2048-bin histogram over the
                 candidates (C shared atomics), then write k indices
    sweeps = S + 1 (the document: "1-2 full-row passes in the common case" for S, vs 3-4 for radix)
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

import numpy as np

from hwmodels.errors import ScenarioError
from simulator.strategies.base import Param, TopkStrategy, register

# ---- instruction work, flop-equivalents per element (see module docstring) ------------------------------
SM_CYCLE_FLOPS = 256.0   # 128 FP32 lanes x 2 flops per SM-cycle (CUDA C++ Programming Guide, SM80-SM100)
#: Three constants of the kernels' structure are MEASURED, not assumed: `sparsesim calibrate fit-topk`
#: (hwmodels/calibration/fit_topk_cta.py) fits them jointly with the topk_cta efficiencies to our single-CTA
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
def _bvn_upper(t: float, rho: float) -> float:
    """P(A > t, B > t) for a standard bivariate normal with correlation rho."""
    from scipy.stats import multivariate_normal, norm

    if rho <= 0:
        return float(norm.sf(t) ** 2) if rho == 0 else float(
            multivariate_normal(mean=[0, 0], cov=[[1, rho], [rho, 1]]).cdf([-t, -t]))
    rho = min(rho, 1 - 1e-9)
    return float(multivariate_normal(mean=[0, 0], cov=[[1, rho], [rho, 1]]).cdf([-t, -t]))


def overlap_correlation(overlap: float, k: int, n: int) -> float:
    """The step-to-step score correlation rho whose expected raw top-k overlap is `overlap`.

    Model (ASSUMPTION, stated in the figure notes): scores are standard normal and consecutive steps are
    jointly normal with correlation rho (an AR(1) drift of the score landscape). The raw overlap of the two
    top-k sets is P(B > t | A > t) with t the (1 - k/n) quantile. An overlap at or below the random
    baseline k/n gives rho = 0 (the prediction carries no information)."""
    from scipy.stats import norm

    q = k / n
    if overlap <= q:
        return 0.0
    if overlap >= 1:
        return 1.0
    t = float(norm.isf(q))
    lo, hi = 0.0, 1.0
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        if _bvn_upper(t, mid) / q < overlap:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def secant_search(scores: np.ndarray, predicted: np.ndarray, k: int, capacity: int, max_passes: int = 12) -> int:
    """Full-row count passes GVR's phase 2 needs before the candidate count lands in [k, capacity].

    Phase 1 gives T0 = pmean and the bracket [pmin, pmax] (count(pmin) >= k: every predicted score is
    >= pmin). Each pass counts c(T) = #{s >= T}. Outside the window the bracket shrinks and the next T is
    a secant step on (T, ln c) toward ln sqrt(k * capacity) through the last two points (the first step
    uses the bracket end: c(pmax) ~ 1, c(pmin) ~ n); a step outside the bracket bisects instead.
    The blog gives only this outline (exact pseudocode is in arXiv:2604.22312): ASSUMPTION."""
    p = scores[predicted]
    lo, hi = float(p.min()), float(p.max())
    T = float(p.mean())
    target = 0.5 * np.log(k * capacity)
    pts: list[tuple[float, float]] = []
    n = len(scores)
    for it in range(1, max_passes + 1):
        c = int((scores >= T).sum())
        if k <= c <= capacity:
            return it
        lc = np.log(max(c, 0.5))
        if c > capacity:
            lo = T
        else:
            hi = T
        if pts:
            t1, l1 = pts[-1]
        else:
            t1, l1 = (hi, 0.0) if c > capacity else (lo, np.log(n))
        pts.append((T, lc))
        Tn = T + (target - lc) * (T - t1) / (lc - l1) if lc != l1 else 0.5 * (lo + hi)
        T = Tn if lo < Tn < hi else 0.5 * (lo + hi)
    return max_passes


@functools.lru_cache(maxsize=256)
def secant_passes(overlap: float, source: str, k: int, n: int, capacity: int = GVR_CAPACITY, seed: int = 0,
                  trials: int = 6) -> float:
    """Mean phase-2 passes for a row of n scores, k kept, with predicted indices from `source`:
    'previous' (the previous step's top-k, whose raw overlap with the current top-k is `overlap`) or
    'random' (k uniform positions: overlap k/n). Monte Carlo over `trials` rows from a seeded Generator."""
    rng = np.random.default_rng(seed)
    rho = 0.0 if source == "random" else overlap_correlation(overlap, k, n)
    total = 0
    for _ in range(trials):
        prev = rng.standard_normal(n)
        cur = rho * prev + np.sqrt(max(0.0, 1 - rho * rho)) * rng.standard_normal(n)
        pred = (rng.choice(n, k, replace=False) if source == "random"
                else np.argpartition(-prev, k)[:k])
        total += secant_search(cur, pred, k, capacity)
    return total / trials


#: row lengths at which secant passes are simulated; settings in between interpolate in log2(N)
PASS_GRID = np.array([2.0 ** e for e in range(12, 19)])


def passes_for(overlap: float, source: str, k: int, length: np.ndarray, seed: int) -> np.ndarray:
    n = np.clip(np.asarray(length, dtype=np.float64), PASS_GRID[0], PASS_GRID[-1])
    grid = np.array([secant_passes(float(overlap), source, int(k), int(g), seed=seed) for g in PASS_GRID])
    return np.interp(np.log2(n), np.log2(PASS_GRID), grid)


def gvr_work(length, k, passes, capacity: int = GVR_CAPACITY, hist_flops: float | None = None,
             fixed_flops: float | None = None) -> dict:
    """Per-row (bytes_read, bytes_written, flops) of each GVR phase (see the module docstring).
    `hist_flops` / `fixed_flops` override HIST_ATOMIC_FLOPS / GVR_FIXED_FLOPS (the calibration fits them)."""
    hist = HIST_ATOMIC_FLOPS if hist_flops is None else hist_flops
    fixed = GVR_FIXED_FLOPS if fixed_flops is None else fixed_flops
    n = np.asarray(length, dtype=np.float64)
    return {
        "guess": (k * (INDEX_BYTES + SECTOR_BYTES), 0.0, k * SWEEP_FLOPS),
        "verify": (passes * n * SCORE_BYTES, 0.0, passes * n * SWEEP_FLOPS),
        "collect": (n * SCORE_BYTES, 0.0, n * SWEEP_FLOPS),
        "refine": (0.0, k * INDEX_BYTES, capacity * (hist + SWEEP_FLOPS)
                   + FINAL_SORT_ITEMS * SWEEP_FLOPS + fixed),
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
        "steps": RadixTopk.params["steps"],
        "seed": Param(0, "seed of the secant-pass Monte Carlo", lambda v: isinstance(v, int), "an integer"),
    }

    def groups(self, layers: int) -> list[tuple[int, float]]:
        ov = self.overlap
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
        total = sum(g[0] for g in self.overlap) if isinstance(self.overlap, list) else combo.model.layers
        if total != combo.model.layers:
            return f"gvr overlap groups cover {total} layers; {combo.model.name} has {combo.model.layers}"
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

    def passes(self, overlap: float, k: int, length) -> np.ndarray:
        source = "random" if self.preidx == "random" else "previous"
        return passes_for(overlap, source, k, length, self.seed)

    def add_ops(self, b, combo, rows, length, k, layers, phase) -> None:
        rows = np.asarray(rows, dtype=np.float64) * np.ones(b.n)
        n = np.asarray(length, dtype=np.float64) * np.ones(b.n)
        fast = self.dispatch(combo, rows, n, k, phase)
        add_radix_ops(b, rows, n, k, layers, self.steps, where=~fast)
        if not fast.any():
            return
        start = 0
        for nl, ov in self.groups(int(layers)):
            passes = self.passes(ov, k, n)
            w = gvr_work(n, k, passes)
            rd = sum(v[0] for v in w.values())
            wr = sum(v[1] for v in w.values())
            fl = sum(v[2] for v in w.values())
            sweeps = w["verify"][0] + w["collect"][0]
            # sweeps re-read the L2-resident logits (see radix); P2 passes + P3 sweep + P1 / P4 phases
            b.add(f"topk.gvr[L{start}-{start + nl - 1}]", "topk_cta", flops=rows * fl, bytes_read=rows * rd,
                  bytes_written=rows * wr, parallel_units=rows, reread_bytes=rows * sweeps,
                  working_set=rows * n * SCORE_BYTES, sync_steps=passes + GVR_EXTRA_PHASES, dtype="fp32", count=nl,
                  where=fast)
            start += nl


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
        n = np.asarray(length, dtype=np.float64)
        units = rows * np.maximum(1.0, n / TILE_ELEMS)
        b.add("topk.torch_count", "topk", flops=rows * n * (HIST_ATOMIC_FLOPS + SWEEP_FLOPS),
              bytes_read=rows * n * SCORE_BYTES, bytes_written=units * 256 * INDEX_BYTES,
              parallel_units=units, dtype="fp32", count=layers * self.digit_passes)
        b.add("topk.torch_gather", "topk", flops=rows * n * SWEEP_FLOPS + rows * k * SERIAL_ATOMIC_FLOPS,
              bytes_read=rows * n * SCORE_BYTES, bytes_written=rows * k * (SCORE_BYTES + 8.0),
              parallel_units=units, dtype="fp32", count=layers)
        b.add("topk.torch_sort", "topk", flops=rows * k * FINAL_SORT_FLOPS_PER_ITEM,
              bytes_read=rows * k * (SCORE_BYTES + 8.0), bytes_written=rows * k * (SCORE_BYTES + 8.0),
              parallel_units=rows, dtype="fp32", count=layers)
