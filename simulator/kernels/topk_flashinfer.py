"""FlashInfer's top-k (kind topk_flashinfer), modelled from its source: include/flashinfer/topk.cuh of the
flashinfer-python 0.6.4 wheel (flashinfer-ai/flashinfer tag v0.6.4), the kernels behind flashinfer.top_k,
top_k_page_table_transform and top_k_ragged_transform (what SGLang's DSA top-k backend 'flashinfer' calls).

The DSA transforms (top_k_ragged_transform / top_k_page_table_transform) and top_k dispatch per launch between two
kernels (ShouldUseFilteredTopK, fp32 scores): FilteredTopK when the row holds <= 32,768 scores, or when rows >
max_len / 16,384 (integer division); else the multi-CTA RadixTopK.
    filtered  FilteredTopKUnifiedKernel: SGLang's algorithm (the source says "based on sgl-kernel's filter
              algorithm"): one 1024-thread CTA per row, 128 KiB dynamic shared memory, the same fp16-key 256-bin
              histogram sweep, the same emit / stage sweep, up to 4 refinement rounds (fp32 bits 31-24 ... 7-0) over
              at most 16,384 staged candidates re-gathered from global memory each round, the same `topk == 0` exit:
              its passes per row are topk_production.sglang_row's. It differs in its loads: vec_t<float, VEC_SIZE> cast_load with
              VEC_SIZE = gcd(max_len, 4) (float4 for row lengths divisible by 4), both sweeps `#pragma unroll 2`
              (measured: the per-score chain, not the load, sets their pace: VALUES_PER_ROUND), and no remainder
              loop (only a scalar tail of max_len mod VEC_SIZE values)
    radix     RadixTopKKernel_Unified, multi-CTA: a row is split over ctas_per_group = ceil(max_len / chunk_max)
              CTAs of 1024 threads, chunk_max = (MaxSharedMemoryPerBlockOptin - 2,080 B) / 4 scores (CHUNK_MAX),
              each CTA loading its chunk ONCE from global memory into shared memory as ordered keys (float4,
              unroll 2); then always 4 radix rounds (no early exit) each sweeping the whole chunk in shared memory
              (a prefix match and a shared atomic per value, unroll 2), each ending in an inter-CTA barrier over a
              global histogram (red.release / ld.acquire spin on RadixRowState) and a 256-bin suffix sum of 16
              `__syncthreads()`; then two more shared-memory sweeps collecting the values above / equal to the pivot
              with one more inter-CTA barrier; an initial barrier too (6 per row). Groups = min(SMs / ctas_per_group,
              rows) run persistently, each row after row: ceil(rows / groups) rows per CTA, one wave.

Its terms (iter, iter_l2, iter_l1, the barrier phase) are fitted on grid4's FI_FIT rows
(simulator/calibration/topk_engines.py; measured on the H100, lab/kernels/measure_topk_engines.py).
"""
from __future__ import annotations

import numpy as np

from simulator.kernels import topk_production as P

THREADS = 1024                 # FILTERED_TOPK_BLOCK_THREADS; BLOCK_THREADS of RadixTopK*MultiCTA
FILTERED_MAX_LEN = 32768       # ShouldUseFilteredTopK, 32-bit types: max_len <= 32768 -> filtered
ROWS_PER_LEN = 16384           # ... else filtered only when num_rows > max_len / 16384
#: scores one radix CTA holds: (cudaDevAttrMaxSharedMemoryPerBlockOptin - round_up(4 x (256 + 256 + 5), 16)) / 4, the
#: optin limit 227 KiB = 232,448 B on sm_90 (CUDA C++ Programming Guide, compute capability 9.0): (232448 - 2080) / 4
CHUNK_MAX = 57592
RADIX_ROUNDS = 4               # RadixTopKTraits<float>: 32 bits / 8 radix bits, no early exit
RADIX_SMEM_SWEEPS = RADIX_ROUNDS + 2   # + RadixCollectIndices' two sweeps (> pivot, == pivot)
RADIX_BARRIERS = 1 + RADIX_ROUNDS + 1  # initial + one per round + the collect's (ragged / basic modes)
#: scores one thread of FlashInfer's filtered kernel walks per load round of its two sweeps. The source's structure says
#: 8 (vec_t<float, 4> loads, `#pragma unroll 2`: SOURCE_VALUES_PER_ROUND, the first look, committed before the
#: measurement); measured (grid4, 2026-11-27), the kernel runs no faster at float4 than at scalar loads (rows of 9000
#: vs 9001 scores: 13.9 vs 15.0 us at 40 / 16 rows) and about as fast as SGLang's one-load-per-round sweeps: each score
#: still walks its own dependent chain after the load (fp16 key, a shared atomic; the emit sweep's returning atomic and
#: index store), which the vector load does not shorten. FITTED CHOICE: 2, the value of {8, 4, 2, 1} with the least
#: rms log error on topk_engines.FI_FIT alone (simulator/calibration/topk_engines.py values_per_round_study: 0.18 / 0.14 / 0.06 /
#: 0.08); chosen after the held-out errors of every value had been printed, so FlashInfer's held-out grid4 rows are
#: LOOKED-AT for it
VALUES_PER_ROUND = 2.0
SOURCE_VALUES_PER_ROUND = 8.0
#: a radix round's barrier phase relative to SGLang's (sync[topk_flashinfer] is one SGLang-like phase: a run_cumsum of 8
#: `__syncthreads()` plus ~4 around it): RadixSuffixSum is 8 strides of 2 `__syncthreads()` and ~5 more surround it
#: (histogram clear, after the histogram, after the copy, RadixFindThresholdBucket's 2, the prefix update): 21 / 12
#: (ASSUMPTION: a phase costs in proportion to its barriers)
RADIX_PHASE = 21.0 / 12.0
#: the multi-CTA inter-CTA barrier (red.release of arrival_counter, a spin of ld.acquire until all CTAs of the group
#: arrived, the global histogram read back): in phases, ASSUMPTION ~2 dependent L2 round trips (~0.3 us each at the
#: fitted L2 iteration) against the ~1.3 us fitted SGLang phase -> 0.5 phase; a one-CTA group has none
GLOBAL_BARRIER_PHASE = 0.5
#: a shared-memory sweep iteration of the radix kernel (one ordered key read from shared memory, the prefix compare, a
#: shared atomic) is priced as an L1-hit iteration (iter_l1[topk_flashinfer], `l1_iters`), two in flight (unroll 2)
#: The page-table transform (top_k_page_table_transform, what SGLang's DSA backend 'flashinfer' calls at decode) is the
#: same kernel with another epilogue (topk.cuh @ v0.6.4, FilteredTopKMode::PageTable / RadixTopKMode::
#: PageTableTransform): each of the k selected indices is looked up in the row's page table (`dst[base] =
#: src_page_entry[idx]`) instead of having an offset added. Filtered kernel: the output loop (`#pragma unroll 2`, k /
#: 1024 = 2 entries per thread) adds one dependent global load round per PT_VALUES_PER_ROUND entries per thread; radix
#: kernel: the collect writes raw indices, then (multi-CTA) one more inter-CTA barrier and each CTA looks up its
#: ceil(k / ctas) share (one CTA: a `__syncthreads()` and all k). Each lookup is one 32-B sector of the page table
#: (ASSUMPTION: the k indices of a row fall on distinct sectors until the row's table of n x 4 B is all read).
PT_VALUES_PER_ROUND = 2.0
PT_EXTRA_BARRIERS = 1.0
#: FlashInfer grid 6's candidate (simulator/calibration/topk_flashinfer_grid6.py; shipped: PT_LOOKUP_SHIPPED): the
#: filtered kernel's page-table epilogue (topk.cuh @ f1e6fdcb FilteredTopKUnifiedKernel,
#: "Output phase": `#pragma unroll 2` over k / 1024 = 2 entries a thread, `dst[base] = src_page_entry[idx]`) is a
#: phase of its own at the end of each CTA: 2048 dependent random loads into the row's page table that nothing of the
#: CTA overlaps (one CTA per SM: 128 KiB dynamic shared memory), and the CTAs of a wave, which start together and run the
#: same passes, reach it together, so a wave's lookups queue behind each other in the memory system. Priced per wave
#: in barrier phases of the kind (sync[topk_flashinfer], paid by every wave: CTA_SYNC_PER_WAVE) as
#:     wave_phases + (rows / waves) x (row_phases + row_phases_per_kscore x min(n, span_sat_kscores x 1000) / 1000)
#: one dependent round per wave plus a share per CTA of the wave that grows with the span of the row's page table
#: (n x 4 B: the 2048 lookups spread over more DRAM pages) up to span_sat (FITTED: the four terms by least squares on
#: grid 5's 53 filtered page-table rows, the measured page-table minus ragged time, relative to the page-table time:
#: topk_flashinfer_grid6.fit_pt_lookup; those rows are LOOKED-AT). It replaces the filtered kernel's
#: PT_VALUES_PER_ROUND load round; the radix kernel keeps PT_VALUES_PER_ROUND / PT_EXTRA_BARRIERS.
PT_LOOKUP_CANDIDATE = {"wave_phases": 0.2938, "row_phases": 0.000566, "row_phases_per_kscore": 0.000401,
                       "span_sat_kscores": 70.1}
#: the page-table lookup rule the product prices (None = main's PT_VALUES_PER_ROUND / PT_EXTRA_BARRIERS rule). SHIPPED
#: after FlashInfer's blind grid 6 (benchmarks/accuracy_sections/topk_flashinfer_grid6.py: 41 new shapes x both
#: transforms, priced before measuring, commit 716930a): the candidate met 14 of 20 regimes, main's rule 9 (page-table
#: rows 6.1 / 17.1 % against 14.7 / 27.6 %)
PT_LOOKUP_SHIPPED: dict | None = PT_LOOKUP_CANDIDATE   # replaced below by PT_MISS_CANDIDATE (grid 8)
#: FlashInfer grid 8's candidate (simulator/calibration/topk_flashinfer_grid8.py): the lookups of a launch of at most
#: two waves (decode 24-264 rows, whose CTAs start together and reach the output phase together) whose scores and
#: identity page table (2 x rows x n x 4 B: the harness's page table is rows x n int32, touched nearly whole) pass the
#: L2 come from HBM: ~64 B of DRAM a lookup (one 32-B sector, DRAM's 64-B access), 2048 a CTA, queued across the wave,
#: and (looked-at, grids 5-7) a second, partial wave pays like a full one; launches of 3+ waves keep grid 6's terms
#: (ASSUMPTION: their CTAs drift apart and the lookups overlap other SMs' sweeps). miss_row_phases FITTED on the
#: looked-at miss rows (topk_flashinfer_grid8.fit_pt_miss); l2_miss_at as the stream floor's.
PT_MISS_CANDIDATE = {**PT_LOOKUP_CANDIDATE, "miss_row_phases": 0.0269, "l2_miss_at": 0.84, "max_waves": 2.0}
#: SHIPPED after FlashInfer's blind grid 8 (benchmarks/accuracy_sections/topk_flashinfer_grid8.py: 37 new shapes x both
#: transforms, priced before measuring, commit 9853195): both models met 13 of 18 regimes, the candidate with the lower
#: pooled median and p90 (8.2 / 18.9 % against 8.6 / 19.9 %; page-table 8.6 / 19.3 % against 11.3 / 22.8 %): the tie rule
PT_LOOKUP_SHIPPED = PT_MISS_CANDIDATE
#: FlashInfer grid 9's candidate (simulator/calibration/topk_flashinfer_grid9.py): PT_MISS_CANDIDATE with its threshold
#: re-fitted for the lookups (read last, after the launch's scores streamed through the L2, they miss below the sweeps'
#: own 0.84): l2_miss_at and miss_row_phases FITTED together on every looked-at filtered pair of grids 5-8
#: (topk_flashinfer_grid9.fit_pt_miss9); judged on the blind grid 9 against the shipped PT_MISS_CANDIDATE
PT_MISS9_CANDIDATE = {**PT_MISS_CANDIDATE, "miss_row_phases": 0.029, "l2_miss_at": 0.73}


#: FlashInfer grid 10's candidate (simulator/calibration/topk_flashinfer_grid10.py): PT_MISS_CANDIDATE with the lookups'
#: L2 miss as a RAMP, not a threshold: a launch of at most max_waves waves whose scores and page table (2 x rows x n x
#: 4 B) hold s x the L2 pays the fraction f = clip((s - ramp_lo) / (ramp_hi - ramp_lo), 0, 1) of the miss price and
#: 1 - f of grid 6's hit terms (the L2's two partitions, its hashing and the sweeps' streaming evict the page table
#: line by line, not at one size: grid 9's diagnosis, 0.45-0.95). ramp_lo / ramp_hi / miss_row_phases FITTED together
#: on every looked-at filtered pair of grids 5-9 (topk_flashinfer_grid10.fit_pt_ramp)
PT_RAMP_CANDIDATE = {**PT_MISS_CANDIDATE, "miss_row_phases": 0.0307, "ramp_lo": 0.70, "ramp_hi": 0.95}
#: FlashInfer grid 11's candidate (simulator/calibration/topk_flashinfer_grid11.py): the lookups of launches of at most
#: max_waves (2) waves by their own terms. Measured page-table minus ragged time of grids 5-10 (looked-at): a one-wave
#: launch pays ~0.4-1.4 us below ~0.85 of the L2 whatever its rows (1 row and 120 rows of ~27K scores alike), growing
#: with the row's length, where grid 6's hit terms (per CTA of the wave) price up to 3.9-5 us; its lookups miss the L2
#: only past ~0.85-1.0 of it; a two-wave launch pays about twice the one-wave base at small sets and ramps to the miss
#: price from ~0.4 of the L2 (the second wave's lookups follow the first wave's sweeps through the L2). So per wave
#: base = base_wave_phases + base_kscore_phases x min(n, base_sat_kscores x 1000) / 1000 (rows-independent: the
#: wave's CTAs' lookups overlap each other), ramped to PT_MISS_CANDIDATE's full miss price over ramp1_lo-ramp1_hi
#: (one wave) or ramp_lo-ramp_hi (two waves) of the L2 (2 x rows x n x 4 B); launches of 3+ waves keep grid 6's hit
#: terms. FITTED (topk_flashinfer_grid11.fit_pt_wave) on every looked-at filtered pair of grids 5-10 with <= 2 waves:
#: the (lo, hi) pairs on a grid, base_wave_phases / base_kscore_phases / miss_row_phases by least squares (relative
#: to the page-table time), base_sat_kscores fixed at grid 6's 70.1
#: (182 pairs, rms relative error 0.032)
PT_WAVE_CANDIDATE = {**PT_MISS_CANDIDATE, "base_wave_phases": 0.261, "base_kscore_phases": 0.0137,
                     "base_sat_kscores": 70.1, "ramp1_lo": 1.1, "ramp1_hi": 1.45, "ramp_lo": 0.6, "ramp_hi": 0.9,
                     "miss_row_phases": 0.0294}
#: FlashInfer grid 10's short-row rule (candidate; None = not priced): topk.cuh @ f1e6fdcb FilteredTopKUnifiedKernel's
#: Stage 1 and filter sweeps are `#pragma unroll 2` loops of `vec_t<float, VEC_SIZE>::cast_load` strided by 1024 x VEC:
#: a row of n <= 1024 x VEC x max_loads scores gives each thread at most max_loads vector loads, issued together (the
#: unrolled pair), so a sweep is ONE dependent load round followed by the thread's <= VEC x max_loads key atomics, not
#: ceil(n / (1024 x VALUES_PER_ROUND)) rounds: such a sweep is priced `short_sweep_iters` iterations (FITTED on the
#: looked-at filtered rows of grids 5-9 with n <= 1024 x VEC x max_loads: topk_flashinfer_grid10.fit_short, 16 rows: 0.0
#: of {0, 0.25, ..., 2}, rms log 0.035 against 0.096 at the source's 1 round: the one load round hides under the row's
#: barrier phases, which the kind's sync terms already price)
SHORT_SWEEP_CANDIDATE = {"max_loads": 1.0, "short_sweep_iters": 0.0}
#: the short-row rule the product prices (None = main's VALUES_PER_ROUND chain at every length). SHIPPED after FlashInfer's
#: blind grid 10 (benchmarks/accuracy_sections/topk_flashinfer_grid10.py: 31 new shapes x both transforms, priced before
#: measuring, commit d3389d3), with PT_RAMP_CANDIDATE (PT_LOOKUP_SHIPPED below): the candidate met 13 of 14 regimes, main
#: 10 (pooled 6.3 / 15.0 % against 8.3 / 19.4 %); the gain is the short-row rule's (short rows <= 4K: 6.0-6.9 / 11-14 %
#: against 11.7-13.5 / 22-24 %); the ramp alone moved 9 page-table rows, 6 of them away from the measurement
SHORT_SWEEP_SHIPPED: dict | None = SHORT_SWEEP_CANDIDATE
#: SHIPPED with SHORT_SWEEP_SHIPPED after grid 10 (the candidate as judged; see above); replaced by PT_WAVE_CANDIDATE
PT_LOOKUP_SHIPPED = PT_RAMP_CANDIDATE
#: SHIPPED after FlashInfer's blind grid 11 (benchmarks/accuracy_sections/topk_flashinfer_grid11.py: 38 new shapes x
#: both transforms, priced before measuring, commit 9befb15): the candidate met 14 of 14 regimes, main (PT_RAMP_CANDIDATE)
#: 13 (page-table rows 6.5 / 15.8 % against 6.4 / 16.3 %; pooled 6.4 / 15.1 % against 6.2 / 15.1 %); the regime it gains
#: (page-table two waves at >= 0.6 of the L2) is a thin one: 10.0 % against 10.3 % median
PT_LOOKUP_SHIPPED = PT_WAVE_CANDIDATE
#: FlashInfer grid 12's lookup candidate (simulator/calibration/topk_flashinfer_grid12.py): PT_WAVE_CANDIDATE with the
#: lookups of launches of 3+ waves (more than max_waves) priced like the one- and two-wave launches' misses inside a
#: window of the launch's set (2 x rows x n x 4 B over the L2). Source (topk.cuh @ f1e6fdcb FilteredTopKUnifiedKernel,
#: `dim3 grid(num_rows)`, one CTA per SM): every CTA ends with its "Output phase" (`dst[base] = src_page_entry[idx]`,
#: 2048 dependent loads, `#pragma unroll 2`), and an SM starts its next row only after that CTA retires, so in a launch
#: of w waves each SM pays w lookup rounds one after another. Measured (looked-at grids 5-11, page-table minus ragged
#: time of 3+-wave launches): 8.4-15.2 us at 0.6-1.1 of the L2 where grid 6's hit terms price 4.9-11.6 us (the
#: sweeps' streaming evicts the page table: the rounds miss, as PT_MISS_CANDIDATE's full price), while past ~1.5-2 of
#: the L2 the hit terms already cover it (the launch streams its scores from HBM and its SMs drift apart: one SM's
#: lookup misses overlap the others' sweeps). So for waves > max_waves the price is out + f3 x (full - out) with
#: f3 = clip((s - ramp3_lo) / ramp3_w, 0, 1) x clip((ramp3_hi - s) / ramp3_w, 0, 1) (a trapezoid window). FITTED
#: (topk_flashinfer_grid12.fit_pt_wave3) on every looked-at filtered pair of grids 5-11 with 3+ waves: (lo, hi, w) on a
#: grid, least rms relative error of the page-table minus ragged time
PT_WAVE3_CANDIDATE = {**PT_WAVE_CANDIDATE, "ramp3_lo": 0.25, "ramp3_hi": 1.4, "ramp3_w": 0.2}
#: SHIPPED after FlashInfer's blind grid 12 (benchmarks/accuracy_sections/topk_flashinfer_grid12.py: 36 new shapes x
#: both transforms, priced before measuring, commit b144490), with GATHER_SECTOR_CANDIDATE (GATHER_SECTOR_SHIPPED): the
#: candidate met 14 of 14 regimes, main (PT_WAVE_CANDIDATE, one sector a candidate) 12 (pooled 5.1 / 11.3 % against
#: 6.7 / 17.5 %; page-table 5.1 / 12.3 % against 7.3 / 16.8 %)
PT_LOOKUP_SHIPPED = PT_WAVE3_CANDIDATE


#: FlashInfer grid 12's gather candidate (simulator/calibration/topk_flashinfer_grid12.py): the refinement rounds'
#: gathers (topk.cuh @ f1e6fdcb FilteredTopKUnifiedKernel: each round re-reads `score[idx]` for the staged candidate
#: indices, 4 B each, from global memory) are priced by main at one 32-B sector per candidate (P.SECTOR_BYTES) on rows
#: past the L1 (n x 4 B > P.SGL_L1_BYTES); but a round's candidates are one bin's share of the row, spread over it, so
#: neighbouring candidates share a sector: a round of c candidates of a row of n scores touches (n / sector_scores)
#: x (1 - (1 - c / n)^sector_scores) sectors (each sector of 8 scores holds a candidate with that probability),
#: c = gathers / max(rounds, 1) the round's mean. Where it matters: a full one-wave launch of long rows (24K+ scores at
#: 116-132 rows) is L2-bandwidth-bound in main's price (its L2 traffic, 132 rows x (2 sweeps + ~29K gathers x 32 B),
#: outlasts its chain) and measured +11..+18 % too slow there (looked-at grids 8-11), while the same rows at 100-118
#: rows (chain-bound) are met. NOT FITTED: sector_scores = 32 B / 4 B (the sector size and the score width)
GATHER_SECTOR_CANDIDATE = {"sector_scores": 8.0}
#: the gather sector rule the product prices (None = main's one sector a candidate). SHIPPED after FlashInfer's blind
#: grid 12 with PT_WAVE3_CANDIDATE (see PT_LOOKUP_SHIPPED): full one-wave launches (116-132 rows) 6.1 / 8.3 % (ragged)
#: and 6.2 / 10.4 % (page-table) against main's 9.5 / 19.2 % and 10.4 / 24.5 %
GATHER_SECTOR_SHIPPED: dict | None = GATHER_SECTOR_CANDIDATE


#: FlashInfer grid 7's candidate (simulator/calibration/topk_flashinfer_grid7.py; shipped: STREAM_FLOOR_SHIPPED): the
#: filtered kernel's two sweeps (topk.cuh @ f1e6fdcb FilteredTopKUnifiedKernel, Stage 1 and the filter sweep: `#pragma
#: unroll 2` over `vec_t<float, VEC_SIZE>::cast_load`, VEC_SIZE = gcd(max_len, 4)) keep 2 x VEC_SIZE scores of each
#: thread in flight, one CTA per SM: 32 KiB a SM at float4, 16 KiB at float2. VALUES_PER_ROUND prices a sweep by its
#: per-score chain, which does not see the load width; where a sweep streams from HBM (its set misses the L2) the
#: loads' loaded round trip can outlast that chain, so a sweep lasts at least ceil(n / (1024 x 2 x VEC_SIZE)) rounds of
#: `loaded_round_iters` iterations (iter[topk_flashinfer]): the float2 rows (n = 2 mod 4) pay it first. The first sweep
#: misses when the launch's rows x n x 4 B pass `l2_miss_at` x the L2 (the back-to-back call re-reads them), the
#: second when one wave's min(rows, SMs) x n x 4 B do (the device's measured sweep-hit curves fall from ~1 to ~0.05
#: between 0.80 and 0.88 of the L2: 0.84 their midpoint, ASSUMPTION). FITTED: loaded_round_iters by least squares on log
#: time over the looked-at filtered rows of grids 4-6, both transforms (topk_flashinfer_grid7.fit_stream_floor)
STREAM_FLOOR_CANDIDATE = {"loaded_round_iters": 3.0, "l2_miss_at": 0.84}
#: the stream floor the product prices (None = none: main's VALUES_PER_ROUND chain alone). SHIPPED after FlashInfer's
#: blind grid 7 (benchmarks/accuracy_sections/topk_flashinfer_grid7.py: 50 new shapes x both transforms, priced before
#: measuring, commit 15e1f3a): the candidate met 16 of 18 regimes, main's model 12 (pooled 7.4 / 14.7 % against
#: 8.7 / 19.9 %; the two scalar-load rows, n odd, -8 to -10 % against main's -39 to -41 %)
STREAM_FLOOR_SHIPPED: dict | None = STREAM_FLOOR_CANDIDATE
#: the L2 the stream floor compares a sweep's set with when the caller gives none: the H100's 50 MiB
STREAM_FLOOR_L2_BYTES = 50.0 * 2 ** 20


def stream_floor_iters(rows, n, sweeps, floor: dict, sms: float = 132.0,
                       l2_bytes: float = STREAM_FLOOR_L2_BYTES) -> np.ndarray:
    """Serial iterations the filtered kernel's HBM-streamed sweeps add under the stream floor `floor`
    (STREAM_FLOOR_CANDIDATE's keys): per missed sweep max(0, ceil(n / (1024 x 2 x VEC)) x loaded_round_iters -
    ceil(n / (1024 x VALUES_PER_ROUND))); the first sweep missed where rows x n x 4 B > l2_miss_at x L2, the later ones
    where min(rows, sms) x n x 4 B is."""
    rows, n = np.broadcast_arrays(np.asarray(rows, float), np.asarray(n, float))
    sweeps = np.broadcast_to(np.asarray(sweeps, float), rows.shape)
    lim = floor["l2_miss_at"] * l2_bytes
    miss = (np.where(rows * n * P.SCORE_BYTES > lim, 1.0, 0.0) * np.minimum(sweeps, 1.0)
            + np.where(np.minimum(rows, sms) * n * P.SCORE_BYTES > lim, 1.0, 0.0) * np.maximum(sweeps - 1.0, 0.0))
    per = np.maximum(np.ceil(n / (THREADS * 2.0 * vec_width(n))) * floor["loaded_round_iters"]
                     - np.ceil(n / (THREADS * VALUES_PER_ROUND)), 0.0)
    return miss * per


def pt_lookup_phases(rows, n, terms: dict, sms: float = 132.0, k: float = 2048.0,
                     l2_bytes: float = STREAM_FLOOR_L2_BYTES) -> np.ndarray:
    """Barrier phases per wave of the filtered kernel's page-table lookups under `terms` (PT_LOOKUP_CANDIDATE's keys):
    one round per wave plus each CTA's share, the wave's CTAs = rows / ceil(rows / sms) on average. With
    PT_MISS_CANDIDATE's keys too (`miss_row_phases`, `l2_miss_at`, `max_waves`): a launch of at most `max_waves` waves
    whose scores and page table (2 x rows x n x 4 B) pass l2_miss_at x the L2 pays per wave wave_phases + min(rows, sms)
    x miss_row_phases x min(1, n x 4 / (k x 64)) instead (every wave priced as a full one)."""
    rows, n = np.broadcast_arrays(np.asarray(rows, float), np.asarray(n, float))
    waves = np.maximum(np.ceil(rows / sms), 1.0)
    per_wave = rows / waves
    span = np.minimum(n, terms["span_sat_kscores"] * 1000.0) / 1000.0
    out = terms["wave_phases"] + per_wave * (terms["row_phases"] + terms["row_phases_per_kscore"] * span)
    if "miss_row_phases" not in terms:
        return out
    full = terms["wave_phases"] + np.minimum(rows, sms) * terms["miss_row_phases"] * np.minimum(
        1.0, n * P.SCORE_BYTES / (float(k) * 64.0))
    if "base_wave_phases" in terms:   # PT_WAVE_CANDIDATE: one- and two-wave launches by their own terms
        s = 2.0 * rows * n * P.SCORE_BYTES / l2_bytes
        base = terms["base_wave_phases"] + terms["base_kscore_phases"] * np.minimum(
            n, terms["base_sat_kscores"] * 1000.0) / 1000.0
        lo = np.where(waves <= 1.0, terms["ramp1_lo"], terms["ramp_lo"])
        hi = np.where(waves <= 1.0, terms["ramp1_hi"], terms["ramp_hi"])
        f = np.clip((s - lo) / np.maximum(hi - lo, 1e-9), 0.0, 1.0)
        if "ramp3_lo" in terms:   # PT_WAVE3_CANDIDATE: 3+ waves pay the miss price inside a window of the set
            w3 = max(terms["ramp3_w"], 1e-9)
            f3 = (np.clip((s - terms["ramp3_lo"]) / w3, 0.0, 1.0)
                  * np.clip((terms["ramp3_hi"] - s) / w3, 0.0, 1.0))
            out = out + f3 * (full - out)
        return np.where(waves <= terms["max_waves"], base + f * (full - base), out)
    if "ramp_lo" in terms:   # PT_RAMP_CANDIDATE: the miss price's share ramps over the launch's set
        s = 2.0 * rows * n * P.SCORE_BYTES / l2_bytes
        f = np.clip((s - terms["ramp_lo"]) / max(terms["ramp_hi"] - terms["ramp_lo"], 1e-9), 0.0, 1.0)
        f = np.where(waves <= terms["max_waves"], f, 0.0)
        return out + f * (full - out)
    miss = (2.0 * rows * n * P.SCORE_BYTES > terms["l2_miss_at"] * l2_bytes) & (waves <= terms["max_waves"])
    return np.where(miss, full, out)


def gather_bytes(n, gathers, rounds, rule: dict) -> np.ndarray:
    """Bytes a row's refinement gathers read under `rule` (GATHER_SECTOR_CANDIDATE's keys): per round of c = gathers /
    max(rounds, 1) candidates, (n / s) x (1 - (1 - c / n)^s) sectors of P.SECTOR_BYTES, s = sector_scores; never more
    than one sector a candidate."""
    n, gathers, rounds = np.broadcast_arrays(np.asarray(n, float), np.asarray(gathers, float),
                                             np.asarray(rounds, float))
    s = float(rule["sector_scores"])
    r = np.maximum(rounds, 1.0)
    c = gathers / r
    p = np.clip(c / np.maximum(n, 1.0), 0.0, 1.0)
    sectors = r * (n / s) * (1.0 - (1.0 - p) ** s)
    return np.minimum(sectors, gathers) * P.SECTOR_BYTES


#: recorded rows the product samples for launch_stats (every base row of the default trace once)
LAUNCH_SAMPLE = 32
_LAUNCH_VALUES: dict = {}


def launch_stats(rows, n, k: int = 2048, sms: float = 132.0, sample: int = LAUNCH_SAMPLE) -> dict:
    """The product's pass statistics of a filtered launch of `rows` rows of n scores, by the calibration's rule
    (topk_flashinfer_grid6.wave_stat, the statistic blind grids 6 and 7 judged): one wave (rows <= sms) the expected
    slowest of its rows (topk_production.expected_max), more waves w = ceil(rows / sms) mean + (E[max of sms rows] -
    mean) / sqrt(w); the per-row values from `sample` recorded rows of the default trace (topk_production.default_rows,
    base row j mod 32 resampled with fp16 dither, as default_stats draws its first 4) at the power of two nearest n.
    Arrays shaped like rows x n (scalars for scalars)."""
    scalar = np.ndim(rows) == 0 and np.ndim(n) == 0
    rows, n = np.broadcast_arrays(np.atleast_1d(np.asarray(rows, float)), np.atleast_1d(np.asarray(n, float)))
    out = {c: np.zeros(rows.shape) for c in P.STAT_NAMES}
    for i, (r, v) in enumerate(zip(rows.flat, n.flat)):
        p2 = int(2 ** np.clip(np.round(np.log2(max(v, 1.0))), 0, 24))
        key = (p2, int(k), int(sample))
        if key not in _LAUNCH_VALUES:
            rec = P.default_rows()
            rng = np.random.default_rng(p2)
            xs = []
            for j in range(sample):
                base = rec[j % len(rec)]
                xs.append((base[rng.integers(0, len(base), p2)] * (1.0 + rng.uniform(-1, 1, p2) * 2.0 ** -11))
                          .astype(np.float32))
            _LAUNCH_VALUES[key] = P.pass_stats("flashinfer", xs, int(k))["values"]
        vals = _LAUNCH_VALUES[key]
        r = max(float(r), 1.0)
        for c in P.STAT_NAMES:
            x = vals[c]
            if r <= sms:
                out[c].flat[i] = P.expected_max(x, r)
            else:
                mean, top = float(np.mean(x)), P.expected_max(x, sms)
                out[c].flat[i] = mean + (top - mean) / np.sqrt(np.ceil(r / sms))
    if scalar:
        return {c: float(v[0]) for c, v in out.items()}
    return out

def filtered(rows, n):
    """True where FlashInfer's dispatch (ShouldUseFilteredTopK, fp32, k <= 2048 < max_len) runs FilteredTopK, False
    where it runs the multi-CTA RadixTopK (module docstring)."""
    rows, n = np.asarray(rows, float), np.asarray(n, float)
    return (n <= FILTERED_MAX_LEN) | (rows > np.floor(n / ROWS_PER_LEN))


def launch(rows, n, sms: float = 132.0) -> dict:
    """FlashInfer's multi-CTA radix launch (RadixTopKRaggedTransformMultiCTA): CTAs per row (`ctas`), scores per CTA
    (`chunk`), row groups in flight (`groups`), rows each CTA walks in turn (`iters`); arrays shaped like rows x n."""
    rows, n = np.broadcast_arrays(np.asarray(rows, float), np.asarray(n, float))
    ctas = np.ceil(n / CHUNK_MAX)
    chunk = np.minimum(np.ceil(np.ceil(n / ctas) / 4.0) * 4.0, CHUNK_MAX)
    groups = np.maximum(np.minimum(np.floor(sms / ctas), rows), 1.0)
    return {"ctas": ctas, "chunk": chunk, "groups": groups, "iters": np.ceil(rows / groups)}


def vec_width(n):
    """FlashInfer's vector width for rows of n fp32 scores: gcd(n, 4) (ComputeFilteredTopKVecSize, vec_size of the
    radix launch)."""
    n = np.asarray(n, float)
    return np.where(np.mod(n, 4.0) == 0, 4.0, np.where(np.mod(n, 2.0) == 0, 2.0, 1.0))


def add_ops(b, rows, n, k, sweeps, gathers, count=1.0, where=None, gather_iters=None, rounds=None,
            sms: float = 132.0, page_table: bool = False, pt_lookup: dict | None = None,
            stream_floor: dict | None = None, l2_bytes: float = STREAM_FLOOR_L2_BYTES,
            short_sweep: dict | None = None, gather_sector: dict | None = None) -> None:
    """FlashInfer's top-k launch (module docstring), per setting the kernel its dispatch picks (filtered):
    filtered   SGLang's passes (`sweeps`, `gathers`, `gather_iters`, `rounds` from sglang_row), each full sweep
               ceil(n / (1024 x VALUES_PER_ROUND)) load rounds, the gathers as SGLang's (P.SGL_GATHER_ROUNDS,
               from the L1 when the row fits P.SGL_L1_BYTES: its `input` is `const DType* __restrict__` too), 1 + rounds
               barrier phases per CTA, one CTA per row
    radix      per CTA and row: one load of its chunk (ceil(chunk / (1024 x vec x 2)) rounds), RADIX_SMEM_SWEEPS
               shared-memory sweeps of ceil(chunk / 1024) / 2 iterations (`l1_iters`), RADIX_ROUNDS phases of
               RADIX_PHASE and, with more than one CTA per row, RADIX_BARRIERS inter-CTA barriers of
               GLOBAL_BARRIER_PHASE; times the rows each CTA walks (`iters`); groups x ctas CTAs (one wave); each
               score read once.
    page_table  the page-table transform's epilogue (PT_VALUES_PER_ROUND, PT_EXTRA_BARRIERS) on top of either kernel;
               False = the ragged transform / plain top-k (an offset added, no lookup).
    pt_lookup  the filtered kernel's lookup phase terms (PT_LOOKUP_CANDIDATE's keys: pt_lookup_phases in place of the
               PT_VALUES_PER_ROUND round); None = PT_LOOKUP_SHIPPED (None: main's rule).
    stream_floor  the filtered kernel's HBM stream floor (STREAM_FLOOR_CANDIDATE's keys, stream_floor_iters against
               `l2_bytes`); None = STREAM_FLOOR_SHIPPED (None: no floor).
    short_sweep  the filtered kernel's short-row sweeps (SHORT_SWEEP_CANDIDATE's keys); None = SHORT_SWEEP_SHIPPED,
               {} = none.
    gather_sector  the filtered kernel's gathered sectors (GATHER_SECTOR_CANDIDATE's keys, gather_bytes); None =
               GATHER_SECTOR_SHIPPED, {} = none (one sector a candidate)."""
    rows, n = np.broadcast_arrays(np.asarray(rows, float), np.asarray(n, float))
    shape = rows.shape
    sweeps = np.broadcast_to(np.asarray(sweeps, float), shape)
    gathers = np.broadcast_to(np.asarray(gathers, float), shape)
    g_it = np.ceil(gathers / THREADS) if gather_iters is None else np.broadcast_to(np.asarray(gather_iters, float),
                                                                                      shape)
    rnd = np.zeros(shape) if rounds is None else np.broadcast_to(np.asarray(rounds, float), shape)
    vec = vec_width(n)
    filt = filtered(rows, n)
    in_l1 = n * P.SCORE_BYTES <= P.SGL_L1_BYTES
    # filtered kernel
    sweep_it = np.ceil(n / (THREADS * VALUES_PER_ROUND))
    short = SHORT_SWEEP_SHIPPED if short_sweep is None else (short_sweep or None)
    if short is not None:   # one unrolled vector-load round a sweep on short rows (SHORT_SWEEP_CANDIDATE)
        sweep_it = np.where(n <= THREADS * vec * short["max_loads"], short["short_sweep_iters"], sweep_it)
    f_iters = sweeps * sweep_it + P.SGL_GATHER_ROUNDS * g_it
    floor = STREAM_FLOOR_SHIPPED if stream_floor is None else stream_floor
    if floor is not None:   # the HBM-streamed sweeps' load floor (STREAM_FLOOR_CANDIDATE)
        f_iters = f_iters + stream_floor_iters(rows, n, sweeps, floor, sms, l2_bytes)
    f_l1 = np.where(in_l1, P.SGL_GATHER_ROUNDS * g_it, 0.0)
    f_sync = np.where(sweeps > 0, P.SGL_PHASES["stage1"] + rnd, 0.0)
    gsec = GATHER_SECTOR_SHIPPED if gather_sector is None else (gather_sector or None)
    g_bytes = gathers * P.SECTOR_BYTES if gsec is None else gather_bytes(n, gathers, rnd, gsec)
    f_rd = rows * (sweeps * n * P.SCORE_BYTES + np.where(in_l1, 0.0, g_bytes))
    f_again = f_rd - rows * np.minimum(sweeps, 1.0) * n * P.SCORE_BYTES
    # multi-CTA radix kernel
    L = launch(rows, n, sms)
    smem_it = RADIX_SMEM_SWEEPS * np.ceil(L["chunk"] / THREADS) / 2.0
    r_iters = L["iters"] * (np.ceil(L["chunk"] / (THREADS * vec * 2.0)) + smem_it)
    r_l1 = L["iters"] * smem_it
    r_sync = L["iters"] * (RADIX_ROUNDS * RADIX_PHASE
                           + np.where(L["ctas"] > 1, RADIX_BARRIERS * GLOBAL_BARRIER_PHASE, 0.0))
    r_rd = rows * n * P.SCORE_BYTES
    if page_table:   # the lookup epilogue (PT_VALUES_PER_ROUND, PT_EXTRA_BARRIERS)
        k_ = float(k)
        look = PT_LOOKUP_SHIPPED if pt_lookup is None else pt_lookup
        if look is None:
            f_iters = f_iters + np.ceil(k_ / (THREADS * PT_VALUES_PER_ROUND))
        else:   # a phase of its own per wave (PT_LOOKUP_CANDIDATE)
            f_sync = f_sync + pt_lookup_phases(rows, n, look, sms, k_, l2_bytes)
        per_cta = np.ceil(k_ / L["ctas"])
        r_iters = r_iters + L["iters"] * np.ceil(per_cta / THREADS)
        r_sync = r_sync + L["iters"] * np.where(L["ctas"] > 1, PT_EXTRA_BARRIERS * GLOBAL_BARRIER_PHASE, 0.0)
        pt = rows * np.minimum(k_ * P.SECTOR_BYTES, n * 4.0)
        f_rd, r_rd = f_rd + pt, r_rd + pt
    b.add("topk_flashinfer", P.OP_KIND["flashinfer"], flops=rows * np.where(filt, sweeps, 1.0) * n * 4.0,
          bytes_read=np.where(filt, f_rd, r_rd), bytes_written=rows * k * 4.0,
          parallel_units=np.where(filt, rows, L["groups"] * L["ctas"]), serial_iters=np.where(filt, f_iters, r_iters),
          reread_bytes=np.where(filt, f_again, 0.0), working_set=rows * n * P.SCORE_BYTES, dtype="fp32", count=count,
          where=where, l1_iters=np.where(filt, f_l1, r_l1), sync_steps=np.where(filt, f_sync, r_sync))
