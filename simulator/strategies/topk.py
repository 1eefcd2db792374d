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
'topk_cta' (one-CTA-per-row kernels, calibrated on our own such kernels: lab/
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
                 S is a DISTRIBUTION, from the pass model (simulator/kernels/gvr_passes.py): `kernel_passes`
                 replays our measured kernel's secant rule (lab/topk_cta_kernels.cu, "the
                 production's secant step"); run on Gaussian AR(1) rows it gives the shipped pass table
                 (kernels/data/gvr_passes.csv, per row length, correlation and k; agrees with our kernel
                 measured on H100/H200 to ~0.06 passes, tests/test_topk.py). The
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

import numpy as np

from hwmodels.errors import ScenarioError
from simulator.combo import Combo
from simulator.kernels.gvr_passes import (
    GVR_CAPACITY,
    MAX_PASSES,
    launch_dists,
    launch_passes_array,
)
from simulator.ops import OpBuilder
from simulator.strategies.base import Param, ReplayInputs, TopkStrategy, register

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
def radix_work(length, k, steps, hist_flops: float | None = None, serial_flops: float | None = None,
               fixed_flops: float | None = None):
    """(bytes_read, bytes_written, flops) of one row through the single-CTA radix-select kernel.
    `hist_flops` / `serial_flops` override HIST_ATOMIC_FLOPS / SERIAL_ATOMIC_FLOPS (the calibration fits them);
    `fixed_flops` replaces the final block sort's work (a RADIX_KERNELS entry fits it)."""
    hist = HIST_ATOMIC_FLOPS if hist_flops is None else hist_flops
    serial = SERIAL_ATOMIC_FLOPS if serial_flops is None else serial_flops
    fixed = FINAL_SORT_ITEMS * FINAL_SORT_FLOPS_PER_ITEM if fixed_flops is None else fixed_flops
    n = np.asarray(length, dtype=np.float64)
    sweeps = 2.0 * np.asarray(steps, dtype=np.float64)
    read = sweeps * n * SCORE_BYTES
    flops = (steps * n * (hist + SWEEP_FLOPS)                     # histogram sweeps (atomics)
             + steps * n * SWEEP_FLOPS                             # scatter sweeps
             + k * serial                                          # same-address output counter
             + fixed)                                              # final block sort of the threshold bin
    written = k * INDEX_BYTES
    return read, written, flops


#: radix-select kernels (RadixTopk `kernel`): 'ours' = our measured single-CTA kernel (the constants above);
#: 'trtllm_b200' = TensorRT-LLM's production radix (indexerTopK.cu), its histogram work per element and its fixed
#: work FITTED to TensorRT-LLM's own B200 random-data radix timings (longcheng-nv/TensorRT-LLM@20727fc
#: indexerTopK.cu, "Scheme X v1.2": N = 8192 / 16384 / 32768 / 131072 -> Radix 11.2 / 22.0 / 32.9 / 76.1 us at
#: BS = 1) at 8K / 32K / 128K with 16K held out, like the GVR split: simulator/figures/gvr.py fit_trtllm_radix();
#: tests/test_topk.py re-derives the two numbers.
RADIX_KERNELS = {
    "ours": {"hist_flops": HIST_ATOMIC_FLOPS, "fixed_flops": FINAL_SORT_ITEMS * FINAL_SORT_FLOPS_PER_ITEM},
    "trtllm_b200": {"hist_flops": 8.59, "fixed_flops": 3.67e5},
}
#: engines' radix kernels modelled from their sources (simulator/kernels/topk_production.py): SGLang's sgl-kernel top-k
#: (its DSA top-k backend 'sgl-kernel'), TensorRT-LLM's indexer top-k, FlashInfer's top-k (SGLang's DSA top-k backend
#: 'flashinfer' calls flashinfer.top_k_page_table_transform / top_k_ragged_transform; measured: FlashInfer 0.6.4)
PRODUCTION_RADIX = ("sglang", "trtllm", "flashinfer")


def add_radix_ops(b, rows, length, k, layers, steps: float, where=None, name="topk.radix", kernel="ours") -> None:
    """The production radix-select path; rows of >= 200K columns use the two-kernel split-work path.
    kernel: a RADIX_KERNELS key or {hist_flops, fixed_flops}."""
    kern = kernel if isinstance(kernel, dict) else RADIX_KERNELS[kernel]
    n = np.asarray(length, dtype=np.float64) * np.ones(b.n)
    w = np.ones(b.n, dtype=bool) if where is None else np.broadcast_to(np.asarray(where, dtype=bool), (b.n,))
    split = n >= SPLIT_WORK_LENGTH
    read, written, flops = radix_work(n, k, steps, kern["hist_flops"], fixed_flops=kern["fixed_flops"])
    # the indexer kernel wrote the logits just before: every sweep re-reads them, from L2 while they fit
    # (working set rows x N x 4 B); one block-wide reduction per sweep (sync_steps), as calibrated
    b.add(name, "topk_cta", flops=rows * flops, bytes_read=rows * read, bytes_written=rows * written,
          parallel_units=rows, reread_bytes=rows * read, working_set=rows * n * SCORE_BYTES,
          sync_steps=2.0 * steps, dtype="fp32", count=layers, where=w & ~split)
    # split work: 10 CTAs per row, each a radix select over N/10 writing k (score, index) candidates ...
    r10, w10, f10 = radix_work(n / SPLIT_WORK_CTAS, k, steps, kern["hist_flops"], fixed_flops=kern["fixed_flops"])
    b.add(name + "_split", "topk_cta", flops=rows * SPLIT_WORK_CTAS * f10, bytes_read=rows * SPLIT_WORK_CTAS * r10,
          bytes_written=rows * SPLIT_WORK_CTAS * 2 * k * SCORE_BYTES, parallel_units=rows * SPLIT_WORK_CTAS,
          dtype="fp32", count=layers, where=w & split)
    # ... then one 1024-thread CTA per row merges the 10 x k candidates
    rm, wm, fm = radix_work(SPLIT_WORK_CTAS * k, k, steps, kern["hist_flops"], fixed_flops=kern["fixed_flops"])
    b.add(name + "_merge", "topk_cta", flops=rows * fm, bytes_read=rows * SPLIT_WORK_CTAS * k * (SCORE_BYTES + INDEX_BYTES),
          bytes_written=rows * wm, parallel_units=rows, dtype="fp32", count=layers, where=w & split)


@register
class RadixTopk(_Topk):
    name = "radix"
    #: one CTA per score row (kind topk_cta): the launch waits for the longest row's CTA
    decode_longest_row_ops = ("topk.",)
    description = "production radix-select (TensorRT-LLM indexer top-k): histogram steps over the whole row"
    params = {
        "steps": Param(2, "GVR document: radix pays '3-4 full-row passes'; indexerTopK.cu passes come in pairs "
                          "(histogram + scatter) -> 2 steps = 4 sweeps",
                       lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and 1 <= v <= 4,
                       "a number of histogram steps in [1, 4] (half-11, 11, 11, 10 bits)"),
        "kernel": Param("ours", "'ours' = our measured single-CTA radix kernel (this pass model, fixed `steps`); "
                                "'trtllm_b200' = the same pass model with TensorRT-LLM's histogram and fixed work fitted to "
                                "its own B200 radix timings (RADIX_KERNELS); 'sglang' / 'trtllm' / 'flashinfer' = the "
                                "engines' kernels modelled from their sources, passes counted on recorded scores "
                                "(simulator/kernels/topk_production.py); 'trtllm' is priced with its on-chip phases (block "
                                "scans, final sort; its prefill entry at prefill: one 512-thread CTA per row; "
                                "simulator/kernels/topk_trtllm.py add_priced_ops, the function its calibration "
                                "judges): blind on an H100 17.0 % median / 38.8 % p90 (topk_engines grid 8), split "
                                "long rows of 1024-thread slices ~30 % fast",
                        lambda v: (isinstance(v, str) and v in tuple(RADIX_KERNELS) + PRODUCTION_RADIX) or (
                            isinstance(v, dict) and set(v) == {"hist_flops", "fixed_flops"}
                            and all(isinstance(x, (int, float)) and x >= 0 for x in v.values())),
                        " | ".join(tuple(RADIX_KERNELS) + PRODUCTION_RADIX)
                        + " | {hist_flops: F, fixed_flops: F} (what-if / fitting)"),
        "trtllm_dispatch": Param("engine", "kernel 'trtllm' only: 'engine' = the launch TensorRT-LLM's DSA indexer gets "
                                           "through its torch op (cpp/tensorrt_llm/thop/IndexerTopKOp.cpp @ 07339e94: "
                                           "split at a logits width >= 200,000 for every row count, the two-launch "
                                           "split: 10 CTAs a row then a 1024-thread merge launch; "
                                           "simulator/kernels/topk_trtllm.py torch_op); 'kernel' = "
                                           "invokeIndexerTopKDecodeImpl's own adaptive tiers and fused split (a caller "
                                           "passing no threshold and a done counter; what the H100 grids 5-22 timed)",
                                 lambda v: v in ("engine", "kernel"), "engine | kernel"),
        "logits_width": Param(None, "kernel 'trtllm', dispatch 'engine': the indexer's logits buffer width (numColumns "
                                    "the torch op's split and narrow choices read: the engine's padded width, e.g. "
                                    "its max sequence length); None = each row's own length",
                              lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool) and v > 0),
                              "a positive integer or null"),
    }

    def param_problem(self) -> tuple[str, str] | None:
        """trtllm_dispatch / logits_width are TensorRT-LLM's (kernel 'trtllm'), and logits_width the engine dispatch's:
        set elsewhere they would be silently ignored."""
        if self.kernel != "trtllm":
            for p in ("trtllm_dispatch", "logits_width"):
                if p in self.given:
                    return p, f"{p} applies to kernel 'trtllm' only (kernel is {self.kernel!r})"
        elif self.logits_width is not None and self.trtllm_dispatch != "engine":
            return "logits_width", ("logits_width is the engine's torch-op buffer width: it applies to trtllm_dispatch "
                                    "'engine' only (the kernel's own tiers read each row's length)")
        return None

    def add_ops(self, b: OpBuilder, combo: Combo, rows: np.ndarray, length: np.ndarray, k: int, layers: float,
                phase: str) -> None:
        if isinstance(self.kernel, str) and self.kernel in PRODUCTION_RADIX:
            from simulator.kernels import topk_production as TP
            if self.kernel == "trtllm":   # its own module (dispatch, split work, on-chip phases): topk_trtllm
                from contextlib import nullcontext

                from simulator.kernels import topk_trtllm as TK
                engine = self.trtllm_dispatch == "engine"
                # the L2 size the dispatch-side hit shares read (topk_trtllm.pair_l2_hit: all-or-nothing at the L2's
                # size here; the calibration reads the device's measured curves, which a strategy may not)
                l2 = {"l2_bytes": float(combo.target.l2_bytes)} if combo.target.l2_bytes else {}
                with TK.torch_op(self.logits_width) if engine else nullcontext():
                    TK.add_priced_ops(b, rows, length, float(k), float(combo.target.sm_count), count=layers,
                                      prefill=phase == "prefill", **l2)   # its prefill entry: one 512-thread CTA a row
                return
            if self.kernel == "flashinfer":   # its own module (dispatch, multi-CTA launch): topk_flashinfer; SGLang's
                # DSA backend calls its page-table transform at decode, the ragged transform at prefill; its pass
                # statistics by the launch's rows and waves (topk_flashinfer.launch_stats: the calibration's rule)
                from simulator.kernels import topk_flashinfer as FK
                st = FK.launch_stats(rows, length, int(k), float(combo.target.sm_count))
                FK.add_ops(b, rows, length, float(k), st["sweeps"], st["gathers"], count=layers, where=None,
                           gather_iters=st["gather_iters"], rounds=st["rounds"], sms=float(combo.target.sm_count),
                           page_table=phase == "decode", **({"l2_bytes": float(combo.target.l2_bytes)}
                                                            if combo.target.l2_bytes else {}))
                return
            st = TP.default_stats(self.kernel, length, int(k))
            TP.add_topk_ops(b, self.kernel, rows, length, float(k), st["sweeps"], st["gathers"], count=layers,
                            gather_iters=st["gather_iters"], rounds=st["rounds"])
            return
        add_radix_ops(b, rows, length, k, layers, self.steps, kernel=self.kernel)


# ---- GVR -----------------------------------------------------------------------------------------------
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
    #: one CTA per score row (kind topk_cta): the launch waits for the longest row's CTA
    decode_longest_row_ops = ("topk.",)
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

    def refuse(self, combo: Combo) -> str | None:
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
            pk = float(((ts.meta.get("policies") or {}).get("topk") or {}).get("k") or 0.0)
            rows = ts.has("gvr.passes_rows") and pk > 0 and 2.0 / 3.0 <= (pk / ctx) / (k / n) <= 1.5
            # the inputs depend on n only through the tier and whether the recorded rows apply: one build per choice
            key = (ts.name, ts.digest, name, int(layers), int(kt), bool(rows))
            hit = _TRACE_INPUTS.get(key)
            if hit is None:
                if len(_TRACE_INPUTS) > 256:
                    _TRACE_INPUTS.clear()
                hit = _TRACE_INPUTS[key] = self._trace_layer_inputs(ts, name, layers, kt, ctx, rows)
            return list(hit[0]), hit[1]
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

    @staticmethod
    def _trace_layer_inputs(ts, name: str, layers: int, kt: int, ctx: float, use_rows: bool) -> tuple[tuple, str]:
        """layer_inputs from a trace at top-k tier kt, with the recorded pass rows when use_rows (memoized)."""
        ov = [float(o) for o in ts.per_layer(name, layers, k=kt)]
        src = f"trace {ts.name} ({ts.source}): {name} at k {kt} of mean context {ctx:,.0f} (k/N {kt / ctx:.3f})"
        if use_rows:
            dists = []
            for j in ts.layer_map(layers):
                x = np.clip(np.asarray(ts.samples("gvr.passes_rows", layer=int(j)), dtype=int), 1, MAX_PASSES)
                h = np.bincount(x, minlength=MAX_PASSES + 1) / max(len(x), 1)
                dists.append(tuple(np.round(h, 6)))
            return tuple(zip(ov, dists)), src + "; gvr.passes_rows (recorded score rows)"
        return tuple((o, None) for o in ov), src

    def _trace_inputs(self, combo) -> bool:
        """Whether layer_inputs reads the trace (its inputs then depend on the row length)."""
        ts = combo.trace
        return self.preidx != "random" and ts is not None and any(ts.has(nm) for nm in ("topk.overlap_shifted",
                                                                                        "topk.overlap_raw"))

    def add_ops(self, b: OpBuilder, combo: Combo, rows: np.ndarray, length: np.ndarray, k: int, layers: float,
                phase: str) -> None:
        rows = np.asarray(rows, dtype=np.float64) * np.ones(b.n)
        n = np.asarray(length, dtype=np.float64) * np.ones(b.n)
        fast = self.dispatch(combo, rows, n, k, phase)
        # the dispatcher's fallback is the same library's radix (TensorRT-LLM's with its GVR kernel)
        add_radix_ops(b, rows, n, k, layers, self.steps, where=~fast,
                      kernel="trtllm_b200" if self.kernel == "trtllm" else "ours")
        if not fast.any():
            return
        q = int(combo.speculation.draft_tokens) + 1 if phase == "decode" else 1
        kern = self.kernel if isinstance(self.kernel, dict) else GVR_KERNELS[self.kernel]
        L = int(layers)
        passes = np.zeros((L, b.n))
        if not self._trace_inputs(combo):
            # the layers' inputs do not depend on the row length: E[max passes] for every fast setting at once
            inputs, _ = self.layer_inputs(combo, L, int(k), float(n[fast][0]))
            idx = np.flatnonzero(fast)
            for inp in dict.fromkeys(inputs):
                p = launch_passes_array(inp, int(k), n[idx], rows[idx] / q, q, self.stale_rows)
                for layer in [i for i, x in enumerate(inputs) if x == inp]:
                    passes[layer, idx] = p
        else:
            # the trace's inputs change with the row length only where the tier or the recorded rows' use does:
            # settings with the same inputs are priced together (launch_passes_array, vectorized over them)
            by_inputs: dict = {}
            for x in np.unique(n[fast]).tolist():
                by_inputs.setdefault(tuple(self.layer_inputs(combo, L, int(k), float(x))[0]), []).append(x)
            for inputs, xs in by_inputs.items():
                idx = np.flatnonzero(fast & np.isin(n, xs))
                for inp in dict.fromkeys(inputs):
                    p = launch_passes_array(inp, int(k), n[idx], rows[idx] / q, q, self.stale_rows)
                    for layer in [i for i, y in enumerate(inputs) if y == inp]:
                        passes[layer, idx] = p
        # one op per run of consecutive layers with the same pass counts (a few groups; more with a trace)
        start = 0
        while start < L:
            end = start + 1
            while end < L and np.array_equal(passes[end], passes[start]):
                end += 1
            _gvr_op(b, f"topk.gvr[L{start}-{end - 1}]", kern, rows, n, k, passes[start], end - start, fast)
            start = end

    def trace_replay(self, combo) -> ReplayInputs | None:
        """Per-step replay of the launch passes (simulator/engine/trace_replay.py). Each layer's launch of
        `batch` sequences x q rows lasts as long as its slowest row: per step and layer, its passes are drawn
        from that maximum's distribution (launch_dists: the trace's recorded pass counts gvr.passes_rows, or the
        pass table at the trace's per-layer overlap), whose mean is the mean-statistics run's launch_passes.
        ASSUMPTIONS: layers and rows draw independently (the statistics keep each layer's distribution over
        (step, head), not the step order nor the correlation between layers)."""
        k = combo.attention.selection_k(combo)
        if not self._trace_inputs(combo) or not k:
            return None
        L = combo.model.layers
        q = int(combo.speculation.draft_tokens) + 1
        kern = self.kernel if isinstance(self.kernel, dict) else GVR_KERNELS[self.kernel]
        levels = np.arange(MAX_PASSES + 1, dtype=np.float64)
        cdfs: dict = {}

        def layer_cdfs(batch: int, ctx: float) -> np.ndarray:   # [L, levels] CDF of each layer's launch passes
            key = (int(batch), float(ctx))
            if key not in cdfs:
                inputs, _ = self.layer_inputs(combo, L, int(k), float(ctx))
                out = np.empty((L, MAX_PASSES + 1))
                for inp in dict.fromkeys(inputs):
                    dists, copies = launch_dists(inp, int(k), float(ctx), q, self.stale_rows)
                    c = np.ones(MAX_PASSES + 1)
                    for d in dists:
                        c = c * np.cumsum(d) ** (batch * copies)
                    out[[i for i, x in enumerate(inputs) if x == inp]] = c
                cdfs[key] = out
            return cdfs[key]

        def expected(batch, ctx):
            c = layer_cdfs(batch, ctx)
            return np.diff(np.concatenate([np.zeros((L, 1)), c], axis=1), axis=1).sum(axis=0)

        def draws(batch, ctx, n, rng):
            c = layer_cdfs(batch, ctx)
            # stratified: each layer's n uniforms take every n-quantile once, in a seeded order
            u = (rng.permuted(np.tile(np.arange(n), (L, 1)), axis=1) + rng.random((L, n))) / n
            V = MAX_PASSES + 1
            key = np.empty((L, n), dtype=np.int64)
            for j in range(L):
                key[j] = np.arange(n) * V + np.minimum(np.searchsorted(c[j], u[j], side="left"), MAX_PASSES)
            return np.bincount(key.reshape(-1), minlength=n * V).reshape(n, V).astype(np.float64)

        def level_ops(b, batch, ctx):
            v = len(levels)
            _gvr_op(b, "topk.gvr", kern, np.full(v, float(batch * q)), np.full(v, float(ctx)), int(k), levels, 1.0,
                    np.ones(v, dtype=bool))

        return ReplayInputs("GVR launch passes per layer (" + ("gvr.passes_rows" if
                            combo.trace.has("gvr.passes_rows") else "pass table at the trace's overlap") + ")",
                            ("topk.gvr",), levels, draws, expected, level_ops)


def _gvr_op(b, name, kern, rows, n, k, p, count, where) -> None:
    """One GVR launch of `rows` rows of length `n` with `p` phase-2 passes, `count` layers."""
    w = gvr_work(n, k, p, sweep_flops=kern["sweep_flops"], fixed_flops=kern["fixed_flops"])
    rd = sum(v[0] for v in w.values())
    wr = sum(v[1] for v in w.values())
    fl = sum(v[2] for v in w.values())
    sweeps = w["verify"][0] + w["collect"][0]
    # sweeps re-read the L2-resident logits (see radix); P2 passes + P3 sweep + P1 / P4 phases
    b.add(name, "topk_cta", flops=rows * fl, bytes_read=rows * rd,
          bytes_written=rows * wr, parallel_units=rows, reread_bytes=rows * sweeps,
          working_set=rows * n * SCORE_BYTES, sync_steps=p + GVR_EXTRA_PHASES, dtype="fp32",
          count=count, where=where)


#: layer_inputs built from a trace, by (trace, statistic, layers, tier, recorded rows used)
_TRACE_INPUTS: dict = {}


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

    def add_ops(self, b: OpBuilder, combo: Combo, rows: np.ndarray, length: np.ndarray, k: int, layers: float,
                phase: str) -> None:
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

    def add_ops(self, b: OpBuilder, combo: Combo, rows: np.ndarray, length: np.ndarray, k: int, layers: float,
                phase: str) -> None:
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

