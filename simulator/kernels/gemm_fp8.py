"""fp8 GEMMs with block scales (DeepSeek-V3's recipe: one fp32 scale per 1 x 128 activation slice and per 128 x 128
weight block), modelled on DeepGEMM's SM90 kernel (deepseek-ai/DeepGEMM @ 54e22612: deep_gemm/include/deep_gemm/impls/
sm90_fp8_gemm_1d2d.cuh, csrc/jit_kernels/heuristics/sm90.hpp).

Structure read from the source:
    persistent grid    one CTA per SM (get_launch_config: grid = num_sms), 128 TMA-producer threads + 128 (block_m
                       <= 64) or 256 math threads, walking output tiles block_m x block_n in a tile schedule
    tiles              block_k = 128 (fp8); block_m from {64, 128} (+16 / 32 when M <= 16 / 32, + 256 for bf16
                       output), block_n from 16 to 192 in steps of 16 (1D2D kernel: register spills above 192); a
                       candidate needs >= 3 pipeline stages in 232,448 B of shared memory (>= 4 below 128 x 192)
    choice             get_layout_info's cost: L1 / L2 bytes per tile x tiles / wave efficiency (tiles / (waves x
                       SMs)); the smallest wins (block_layout below re-implements that comparison); TMA multicast over
                       a 2-CTA cluster only when there is more than one wave
    K loop             every 128-wide K step is one WGMMA chain on the tile (BLOCK_K / WGMMA::K = 128 / 32 = 4
                       wgmma issues into a fresh accumulator, then warpgroup_wait<0>: sm90_fp8_gemm_1d2d.cuh lines
                       283-323 @ 54e22612), then the math threads read scale_b (shared memory, per K block) and scale_a
                       (per stage), scale the partial sum by scale_a[m] x scale_b[n-block] and add it into the fp32
                       final_accum ("promotion", lines 326-347: block_m x block_n FMAs on the CUDA cores per K step,
                       which the tensor cores do not overlap within a warpgroup), so a tile's critical path is
                       ceil(K / 128) such steps (serial_iters); no split-K
pipeline fill          a K loop shorter than the pipeline's stages exposes less fill than the fitted per-wave CTA
                       time holds: a share (r^n - r^S) / (1 - r^S) of the full fill sync_us[gemm_fp8_block] off
                       (UNFILLED_STAGES, FILL_CURVE)
K step time            the fitted per-step latency iter_us[gemm_fp8_block] (WGMMA pipeline latency, the wait, the
                       promotion, the pipeline barriers) + the tile's WGMMA time at the SM's share of the fp8 peak
                       (wgmma_step_s; TILE_STEP), so a 64 x 16 tile's step is cheaper than a 256 x 128 tile's
Calibration: kind gemm_fp8_block is fitted on DeepGEMM's own fp8_gemm_nt (its host code built on the lent H100:
production_kernels/deepgemm_gemm_fit_*.csv + the decode-2 grid's 53 rows + the fill7 K scans' 32, named fit rows:
simulator/calibration/fit_production_topk_gemm.py write_block_deepgemm, DEEPGEMM_NAMED_FIT_CSVS).
torch._scaled_mm's block-scaled path is another kernel, cuBLASLt's nvjet ..._Ablk128_Bvec128 (one 128 x 128 tile per
CTA, split-K at decode where its tiles are few): kind gemm_fp8_block_cublaslt, add_block_gemm_cublaslt below.
The roofline's wave model prices it (kind gemm_fp8_block): CTAs = tiles, one resident per SM, serial_iters = K steps,
tile-padded flops (a partial tile multiplies the whole block).
"""
from __future__ import annotations

import numpy as np

BLOCK_K = 128
SMEM_CAPACITY = 232448        # SM90ArchSpec::smem_capacity
MAX_STAGES = 16


def _stages(m: float, n: float, k: float, bm: int, bn: int) -> int:
    """get_pipeline_config's stage count for a bf16-output 1D2D kernel (smem for C/D, barriers, per-stage A/B/SFA,
    the extra per-K SFB)."""
    smem_cd = int(np.ceil(bm * bn * 2 / 1024.0) * 1024)
    barriers = MAX_STAGES * 8 * 2
    uniform = 1 if BLOCK_K % bn == 0 else 2
    extra_sfb = int(np.ceil(np.ceil(k / BLOCK_K) * 4 * uniform / 8.0) * 8)
    per_stage = bm * BLOCK_K + bn * BLOCK_K + int(np.ceil(bm * 4 / 128.0) * 128)
    return int(min((SMEM_CAPACITY - smem_cd - barriers - extra_sfb) // per_stage, MAX_STAGES))


def block_layout(m: float, n: float, k: float, sms: int) -> tuple[int, int, int]:
    """(block_m, block_n, cluster) DeepGEMM's SM90 heuristic picks for an fp8 1D2D GEMM [m, k] x [k, n] -> bf16, as
    csrc/jit_kernels/heuristics/sm90.hpp @ 54e2261 computes it (get_layout_candidates, get_layout_info, compare; the
    first candidate of least cost wins, common.hpp get_best_config): candidates walked cluster (m, n) in (1, 1), (1, 2),
    (2, 1), block_m in 64, 128, (16), (32), 256, block_n 16..192; the L1 / L2 cycle counts in integer arithmetic, the
    L2 rate int(min(64 x SMs, 8e6 / 1.3e3)) B / cycle, the A / B bytes over L2 k x (block_m / cluster_n + block_n /
    cluster_m), the cost max(L1, L2 cycles) / wave efficiency truncated to an integer; multicast only with > 1 wave.
    cluster = cluster_m x cluster_n."""
    m, n, k, sms = int(m), int(n), int(k), int(sms)
    bms = [64, 128] + ([16] if m <= 16 else []) + ([32] if m <= 32 else []) + [256]
    bns = [b for b in range(16, 193, 16) if not (b > BLOCK_K and BLOCK_K % (b - BLOCK_K) and b % (b - BLOCK_K))]
    l2_bw = int(min(64.0 * sms, 8e6 / 1.3e3))
    l1_bw = 128 * sms
    best, best_cost = (128, 128, 1), None
    for cm, cn in ((1, 1), (1, 2), (2, 1)):
        if sms % (cm * cn):
            continue
        for bm in bms:
            for bn in bns:
                if bm > 128 and bn > 128:
                    continue
                st = _stages(m, n, k, bm, bn)
                if st < 3 or (bm * bn < 128 * 192 and st < 4):
                    continue
                blocks = -(-m // bm) * -(-n // bn)
                waves = -(-blocks // sms)
                cd = bm * bn * 2
                l2 = (k * (bm // cn + bn // cm) + cd) * blocks // l2_bw
                l1 = (k * (bm + bn) + k * (max(64, bm) + bn) + cd + cd) * blocks // l1_bw
                cost = int(max(l1, l2) / (np.float32(blocks) / np.float32(waves * sms)))
                if cm * cn > 1 and waves <= 1:
                    cost = 2 ** 63 - 1
                if best_cost is None or cost < best_cost:
                    best, best_cost = (bm, bn, cm * cn), cost
    return best


#: price a K step as the fitted latency + the tile's WGMMA time (wgmma_step_s; add_block_gemm's step_lat_s) rather than
#: one tile-blind iteration: a 64 x 16 tile's 4 WGMMAs take 0.018 us of tensor time at the H100's fp8 peak, a 256 x 128
#: tile's 0.54 us (False: the tile-blind step, the model before)
TILE_STEP = True

#: WGMMA's M: a math warpgroup multiplies 64 rows, so a 16- or 32-row tile still issues m64 instructions (sm90.hpp's
#: max(wgmma_m, block_m) in the tensor-core bytes)
WGMMA_M = 64


def wgmma_step_s(bm, bn, fp8_flops_s: float, sms: int):
    """Seconds of one K step's tensor work on one SM: the tile's WGMMAs (max(64, block_m) x block_n x BLOCK_K MACs,
    BLOCK_K / 32 = 4 instructions per math warpgroup, sm90_fp8_gemm_1d2d.cuh lines 283-323 @ 54e2261) at the SM's
    share of the dense fp8 tensor peak (datasheet: fp8_flops_s / sms). This is the part of a K step that grows with
    the tile; the rest (WGMMA pipeline latency, warpgroup_wait, the promotion FMAs, the pipeline barriers) is the
    fitted per-step latency iter_us[gemm_fp8_block]."""
    return 2.0 * np.maximum(WGMMA_M, bm) * bn * BLOCK_K / (fp8_flops_s / sms)


#: add the promotion FMAs on the CUDA cores (promotion_step_s) to each K step beside the tile's WGMMA time (PROMOTION;
#: a candidate rule priced beside the shipped step on the decode-3 blind grid, off by default: the shipped K step is
#: the fitted latency + the WGMMA time). Not modelled: a 256-row tile's two serial math waves per K step
#: (sm90_fp8_gemm_1d2d.cuh line 297 @ 54e2261, `local_idx < BLOCK_M / WAVE_BLOCK_M`): the two math warpgroups run
#: unsynchronised, so one's promotion overlaps the other's WGMMAs (pricing two latencies per step over-priced the
#: M 1024 fit rows by 12-25 %)
PROMOTION = False


def promotion_step_s(bm, bn, fp32_flops_s: float, sms: int):
    """Seconds of one K step's promotion on one SM: every accumulator of the tile's WGMMAs (max(64, block_m) x block_n,
    WGMMA::kNumAccum per thread) gets one FMA final_accum += scale x accum (sm90_fp8_gemm_1d2d.cuh lines 336-346 @
    54e2261), on the SM's FP32 lanes (the datasheet's non-tensor fp32 peak / sms, 2 flops per FMA); not overlapped
    with the warpgroup's own next WGMMAs (they wait on the same registers)."""
    return 2.0 * np.maximum(WGMMA_M, bm) * bn / (fp32_flops_s / sms)


#: price the runtime-predicated promotion of tiles whose block_n neither divides BLOCK_K nor shares a factor of >= 32
#: with it (RUNTIME_SFB): sm90_fp8_gemm_1d2d.cuh @ 54e2261 lines 67 / 252-255: kMustUseUniformedScaleB = BLOCK_K %
#: BLOCK_N == 0; otherwise, kShouldOptimize = BLOCK_K / gcd(BLOCK_K, BLOCK_N) <= 4 compiles one loop body per value of
#: num_former_iters (dispatch_num_former_iters), and for the rest (block_n 48, 80, 112, 144, 176) the choice between the
#: tile's two scale_b columns stays a run-time predicate on every promoted accumulator (`i < num_former_iters`, lines
#: 331-346): a select per FMA, and a K loop the compiler cannot specialise. Priced as RUNTIME_SFB_STEP_LATS extra
#: per-step latencies (iter_us[gemm_fp8_block]) on each K step of such a tile (runtime_sfb_steps: fitted beside the
#: kind's terms on its named fit rows, fit_production_topk_gemm.fit_block; the value and fit recorded under
#: production_kernels.gemm_fp8_block in hwmodels/calibration/fitted/H100-SXM.yaml). False: no such term (the model
#: before)
RUNTIME_SFB = True
#: the fitted extra step latencies of a runtime-predicated tile's K step (see RUNTIME_SFB; fit_block's runtime_sfb_steps)
RUNTIME_SFB_STEP_LATS = 0.802


def runtime_sfb(bn) -> np.ndarray:
    """True where DeepGEMM's 1D2D kernel promotes a block_n-wide tile with a run-time scale_b predicate (RUNTIME_SFB)."""
    bn = np.asarray(bn, dtype=np.int64)
    uniform = BLOCK_K % bn == 0
    specialised = BLOCK_K // np.gcd(BLOCK_K, bn) <= 4
    return ~uniform & ~specialised


def sfb_selects(bm, bn):
    """Promoted accumulators per math thread per K step: WGMMA::kNumAccum = 64 x block_n / 128 per math wave, block_m /
    WAVE_BLOCK_M waves (WAVE_BLOCK_M = block_m up to 64, else 128: sm90_fp8_gemm_1d2d.cuh lines 262-264 @ 54e2261);
    each is one FMA, and with a run-time scale_b predicate (runtime_sfb) one select more."""
    bm = np.asarray(bm, dtype=np.float64)
    return np.asarray(bn, dtype=np.float64) / 2.0 * np.maximum(1.0, bm / 128.0)


#: price the pipeline fill a short K loop does not expose (UNFILLED_STAGES): DeepGEMM's TMA producer issues one stage's
#: loads per K step and waits for a freed stage only once all kNumStages are in flight (sm90_fp8_gemm_1d2d.cuh @ 54e2261:
#: the producer's `empty_barriers[stage_idx]->wait` in its K loop; the stage count from get_pipeline_config, _stages
#: here). The kind's per-wave CTA time (cta_fixed_us), fitted on K loops that fill every stage, holds that fill: the S
#: stage loads issued back to back at the start and the math warpgroups' waits on their arrivals before the loop runs
#: at its steady rate. A K loop of ceil(K / 128) < S steps (K <= 1920 for the 16-stage decode tiles) fills only that
#: many stages, so its kernel's exposed time is shorter by sync_us[gemm_fp8_block] (fitted: fit_production_topk_gemm
#: fit_block, on the kind's named fit rows, among them one-wave K scans from 1 K step to past the stage count) per stage
#: it leaves unfilled, once per kernel (the op's sync_steps = -unfilled_stages: roofline adds sync_steps x sync_us to
#: the kernel's fixed time, outside the wave walk). False: no such term (the model before)
UNFILLED_STAGES = True


def unfilled_stages(m, n, k, bm, bn) -> np.ndarray:
    """Pipeline stages a tile's K loop leaves unfilled: max(0, stages - ceil(K / 128)) (UNFILLED_STAGES), per row."""
    return np.maximum(_stage_counts(m, n, k, bm, bn) - np.ceil(k / BLOCK_K), 0.0)


def _stage_counts(m, n, k, bm, bn) -> np.ndarray:
    """get_pipeline_config's stage count (_stages) per row."""
    return np.array([_stages(float(a), n, k, int(x), int(y)) for a, x, y in zip(np.atleast_1d(m), np.atleast_1d(bm),
                                                                                np.atleast_1d(bn))], dtype=np.float64)


#: price the unfilled pipeline as a FILL CURVE rather than linearly per unfilled stage (FILL_CURVE; with
#: UNFILLED_STAGES): before the math warpgroups consume stage 0 the TMA producer has issued the loads of the first
#: min(K steps, stages) stages back to back, without waiting (sm90_fp8_gemm_1d2d.cuh @ 54e2261: the producer's
#: empty_barriers wait is passed until every stage has been issued once; the consumer's first full_barriers wait is on
#: stage 0's arrival), so the first steps' loads are exposed almost whole and every later in-flight stage's arrival is
#: overlapped more by the ones before it. ASSUMED shape (not read from the source): the step j (1-based) exposes
#: FILL_STEP_RATIO^(j-1) of step 1's share, so a K loop of n < S steps exposes (1 - r^n) / (1 - r^S) of the full
#: fill (the linear rule is the r -> 1 limit), and the time saved is sync_us[gemm_fp8_block] (the full fill, us) x
#: (r^n - r^S) / (1 - r^S) (fill_curve_saved). Both fitted on the fill7 K scans only, the kind's other terms held
#: (fit_production_topk_gemm.fit_fill_curve: full fill 1.5 us, r 0.868; the blind grid was priced with 1.5 / 0.8677,
#: the writer gives 1.5001 / 0.8676; rms log error on those 32 rows 0.089 with the linear rule -> 0.081). Judged BLIND on grid 8 (deepgemm rows of gemm_grid8_*): one-wave K 128-1024 at new (M, N)
#: 9.5 / 12.6 % (linear, -8.7 signed) -> 6.1 / 9.6 % (-4.2), pooled 8.7 / 12.6 -> 6.1 / 11.3 %. False: the linear rule
#: (sync_us per unfilled stage, 0.077 us)
FILL_CURVE = True
#: the fill curve's per-step ratio r (FILL_CURVE; fit_fill_curve's fill_step_ratio, recorded under
#: production_kernels.gemm_fp8_block in hwmodels/calibration/fitted/H100-SXM.yaml)
FILL_STEP_RATIO = 0.8676


def fill_curve_saved(m, n, k, bm, bn, ratio: float | None = None) -> np.ndarray:
    """The share of the full pipeline fill a K loop of n = ceil(K / 128) steps does not expose: (r^n - r^S) /
    (1 - r^S) for n < S stages, else 0 (FILL_CURVE), per row."""
    r = FILL_STEP_RATIO if ratio is None else ratio
    st = _stage_counts(m, n, k, bm, bn)
    ks = np.ceil(k / BLOCK_K) * np.ones_like(st)
    saved = (r ** ks - r ** st) / (1.0 - r ** st)
    return np.where(ks < st, saved, 0.0)


def add_block_gemm(b, name: str, rows, k: float, n: float, count, sms: int, weight_bytes: float = 1.0,
                   step_lat_s: float | None = None, fp8_flops_s: float | None = None,
                   fp32_flops_s: float | None = None, runtime_sfb_steps: float | None = None) -> None:
    """An fp8 block-scaled GEMM [rows, k] x [k, n] -> bf16 as DeepGEMM runs it (module docstring); `sms` is the
    device's SM count (the persistent grid and the layout heuristic read it at run time).

    step_lat_s / fp8_flops_s (both or neither): the kind's fitted per-step latency (iter_us) and the device's dense
    fp8 peak. With them a K step costs latency + the tile's WGMMA time (wgmma_step_s), written as serial_iters = K steps
    x (1 + wgmma_step_s / step_lat_s) iterations of the kind's iter time (the wave model has one iteration time per
    kind, so the tile's share rides on the count); without them every K step is one iteration (the tile-blind step).
    fp32_flops_s (with both; PROMOTION): a K step also costs promotion_step_s. runtime_sfb_steps (with both; default
    RUNTIME_SFB_STEP_LATS when RUNTIME_SFB, else 0): a runtime-predicated tile's K step (runtime_sfb) costs that many
    more step latencies. UNFILLED_STAGES: the op's sync_steps = -unfilled_stages (priced at sync_us[gemm_fp8_block])."""
    r = np.atleast_1d(np.asarray(rows, dtype=np.float64))
    lay = [block_layout(float(m), n, k, sms) for m in r]
    bm = np.array([x[0] for x in lay], float)
    bn = np.array([x[1] for x in lay], float)
    tiles = np.ceil(r / bm) * np.ceil(n / bn)
    ksteps = np.ceil(k / BLOCK_K)
    iters = np.full(r.shape, ksteps)
    if step_lat_s is not None and fp8_flops_s is not None and step_lat_s > 0:
        extra = wgmma_step_s(bm, bn, fp8_flops_s, sms)
        if fp32_flops_s is not None:
            extra = extra + promotion_step_s(bm, bn, fp32_flops_s, sms)
        if runtime_sfb_steps is None:
            runtime_sfb_steps = RUNTIME_SFB_STEP_LATS if RUNTIME_SFB else 0.0
        iters = ksteps * (1.0 + extra / step_lat_s + runtime_sfb_steps * runtime_sfb(bn) * sfb_selects(bm, bn) / 64.0)
    flops = 2.0 * tiles * bm * bn * ksteps * BLOCK_K
    scale_bytes = 4.0 * (r * ksteps + ksteps * np.ceil(n / BLOCK_K))
    shape = np.shape(rows)
    if UNFILLED_STAGES:
        sync = -(fill_curve_saved(r, n, k, bm, bn) if FILL_CURVE else unfilled_stages(r, n, k, bm, bn))
    else:
        sync = np.zeros(r.shape)
    b.add(name, "gemm_fp8_block", flops=flops.reshape(shape), bytes_read=(k * n * weight_bytes + r * k + scale_bytes
          ).reshape(shape), bytes_written=(r * n * 2.0).reshape(shape), parallel_units=tiles.reshape(shape),
          serial_iters=iters.reshape(shape), sync_steps=sync.reshape(shape), dtype="fp8", count=count)


# ---- cuBLASLt's block-scaled kernel (torch._scaled_mm with 1 x 128 / 128 x 128 scales) ------------------------------

#: cuBLASLt's block-scaled fp8 kernel on the H100 (torch 2.11 / CUDA 13.0, what torch._scaled_mm launches; kernel names
#: and grids in production_kernels/production_kernels_nvidia-h100-80gb-hbm3_2026-11-27_blind5_notes.txt):
#: nvjet_sm90_qqtst_128x128_128x6_<cluster>_..._Ablk128_Bvec128: one 128 x 128 output tile per CTA, K step 128, 6
#: stages (218 KB of shared memory: one CTA per SM), a grid of the tiles at decode and mid M, a persistent 2 x 66 grid at
#: prefill (the same waves of 132 CTAs in the wave model)
CUBLASLT_TILE = 128
#: split-K (the names' _splitK_ kernels + cublasLt::splitKreduce_kernel; cuBLASLt's heuristic is closed source): a rule
#: READ OFF the kernel choices recorded at M <= 128 (the first block grid's, grid 4's and grid 5's _notes files: 38
#: choices, LOOKED-AT; it reproduces 35 of them and the split / no-split of all 33 fifth-set block rows): no split above
#: M 64 (CUBLASLT_SPLIT_MAX_M) or below 48 K steps (CUBLASLT_SPLIT_MIN_STEPS); a split where the 128 x 128 output tiles
#: are <= 20 (CUBLASLT_SPLIT_TILES), or <= 44 at M <= 28 (CUBLASLT_SPLIT_TILES_SMALL_M, CUBLASLT_SPLIT_SMALL_M: at the
#: same (K, N) M 16 / 24 / 28 split where M 32-64 did not); 2 slices up to 56 K steps (CUBLASLT_SPLIT_TWO_STEPS), 3
#: above. Tested BLIND on 16 fresh decode shapes (M 8-64, 8-48 tiles, 32-128 K steps; split counts committed before
#: the call, production_kernels/cublaslt_block_split7_prediction_2026-11-27.csv): it named 10 of the 16 recorded split
#: counts and 13 of 16 split / no-split decisions (the rule before: 4 and 9). The constants are read off kernel names,
#: not fitted to times; the kind's terms (gemm_fp8_block_cublaslt) are those fitted under the rule before
CUBLASLT_SPLIT_MAX_M = 64
CUBLASLT_SPLIT_MIN_STEPS = 48
CUBLASLT_SPLIT_TILES = 20
CUBLASLT_SPLIT_TILES_SMALL_M = 44
CUBLASLT_SPLIT_SMALL_M = 28
CUBLASLT_SPLIT_TWO_STEPS = 56


#: the candidate split rule of grid 9 (CUBLASLT_SPLIT_RULE "work"), READ OFF all 83 recorded choices at M <= 128 (the
#: _notes files of the block grid, grids 4 / 5 / 8 and fill7: LOOKED-AT; it reproduces all 83, the rule above 67). The
#: launched grids show that cuBLASLt's 4 x 1 cluster pads the N tiles to a multiple of 4 (10 tiles run 12 CTAs unsplit,
#: 24 split in 2), so W = M x the padded tile count (the output rows x padded columns / 128). Unsplit where M > 64, fewer
#: than 48 K steps, more than 48 padded tiles (CUBLASLT_W_MAX_TILES) or W > 960 (CUBLASLT_W_MAX: M 52 x 20 tiles ran
#: unsplit, M 48 x 20 split); else the largest of 2 / 3 / 5 / 7 slices (CUBLASLT_W_SLICES: 4 and 6 never recorded) whose
#: slices keep more than 20 K steps each (CUBLASLT_W_MIN_STEPS: 60 steps ran 2 slices, 64 ran 3, 144 ran 7) and, for 3
#: or more, slices x W <= 1900 (CUBLASLT_W_SLICE_BUDGET: 3 x 624 ran 3, 3 x 640 ran 2, 5 x 560 ran 3). cuBLASLt's
#: heuristic is closed source: every constant is read off kernel names and grids, none is fitted to times.
#: Grid 9 (42 decode shapes, BLIND, predictions committed in 09a8e20 before one device call; benchmarks/
#: accuracy_sections/gemm_grid9.py): "work" 7.2 / 17.2 % pooled, 2 of 4 regimes (>= 3 slices 5.9 / 9.2, unsplit at M <= 64
#: 9.4 / 12.2), "tiles" 8.1 / 22.1 %, 2 of 4 (2 slices 5.3 / 21.0, unsplit 9.4 / 12.2): "work" SHIPS (same regimes, lower
#: pooled median and p90), though it named 22 of 42 recorded counts ("tiles" 23): cuBLASLt also ran 4, 6 and 9 slices
#: (the 2 / 3 / 5 / 7 set is wrong; slices keep ~21-32 K steps), split M 68 x 12 tiles (3), M 56 x 20 tiles at 128 K
#: steps (W 1120) and M 8 x 52 / 64 tiles at 128 / 224 K steps, so the W and tile bounds relax with K. "tiles": the rule
#: above (the constants CUBLASLT_SPLIT_*), kept for the earlier grids' tests. "slices" (below) shipped after grid 10: "work"
#: stays, named, as the rule judged on grid 10 as main. "workspace" (below) SHIPS after grid 11: "slices" stays, named, as
#: the rule judged on grid 11 as main
CUBLASLT_SPLIT_RULE = "workspace"
CUBLASLT_W_MAX = 960
CUBLASLT_W_MAX_TILES = 48
CUBLASLT_W_SLICES = (2, 3, 5, 7)
CUBLASLT_W_MIN_STEPS = 20
CUBLASLT_W_SLICE_BUDGET = 1900
CUBLASLT_CLUSTER_N = 4


def cublaslt_padded_tiles(m, n) -> np.ndarray:
    """cuBLASLt's launched 128 x 128 tiles at decode: the N tiles padded to its 4 x 1 cluster, times the M tiles."""
    m, n = np.asarray(m, dtype=np.float64), np.asarray(n, dtype=np.float64)
    return np.ceil(np.ceil(n / CUBLASLT_TILE) / CUBLASLT_CLUSTER_N) * CUBLASLT_CLUSTER_N * np.ceil(m / CUBLASLT_TILE)


def cublaslt_block_split_work(m, k, n) -> np.ndarray:
    """The candidate split count (CUBLASLT_SPLIT_RULE "work"; constants above): 1 = unsplit."""
    m, k, n = (np.asarray(x, dtype=np.float64) for x in (m, k, n))
    pt = cublaslt_padded_tiles(m, n)
    ks = np.ceil(k / BLOCK_K)
    w = m * pt
    split = (m <= CUBLASLT_SPLIT_MAX_M) & (ks >= CUBLASLT_SPLIT_MIN_STEPS) & (pt <= CUBLASLT_W_MAX_TILES) & (
        w <= CUBLASLT_W_MAX)
    s = np.full(np.broadcast(m, k, n).shape, float(CUBLASLT_W_SLICES[0]))
    for c in CUBLASLT_W_SLICES[1:]:
        s = np.where((ks > CUBLASLT_W_MIN_STEPS * c) & (c * w <= CUBLASLT_W_SLICE_BUDGET), float(c), s)
    return np.where(split, s, 1.0)


#: the split rule shipped after grid 10 (CUBLASLT_SPLIT_RULE "slices"), READ OFF all 125 recorded choices at M <= 128 (the
#: _notes files of the block grid, grids 4 / 5 / 8 / 9 and fill7: LOOKED-AT; it reproduces 122 of them and all 125 split /
#: no-split decisions, "work" 105). W = M x padded tiles pt, ks = K steps. Unsplit below 48 K steps, where W >
#: max(960, 960 + 2.5 (ks - 64)) (CUBLASLT_S_W_MAX, CUBLASLT_S_W_SLOPE: W 1120 split at 128 K steps, W 1152 not at 112;
#: M > 64 splits inside it: M 68 x 12 tiles) or pt > min(66, max(48, 48 + (ks - 64) / 4)) (CUBLASLT_S_PT_MAX,
#: CUBLASLT_S_PT_SLOPE: 52 tiles split at 128 K steps, 64 at 224, 56 not at 64). Else the largest slice count c in 2..16
#: (any integer: 4, 6, 9 ran) with ks / c > 20 (CUBLASLT_W_MIN_STEPS), for c >= 3 c x W <= 1800 + 2 ks
#: (CUBLASLT_S_BUDGET, CUBLASLT_S_BUDGET_STEP) and c x pt <= 80 CTAs (CUBLASLT_S_SMALL_CTAS), or <= 132 (one wave) with
#: slices of >= 28 K steps (CUBLASLT_S_LONG_STEPS) and >= 0.875 x pt (CUBLASLT_S_STEPS_PER_TILE: 40 tiles ran 2 slices
#: at 100 K steps, 3 at 200); else 2. Closed source: every constant is read off kernel names and grids, none fitted
#: to times. Grid 10 (43 decode shapes, BLIND, predictions committed in f099c09 before one device call; benchmarks/
#: accuracy_sections/gemm_grid10.py): "slices" 6.9 / 17.0 % pooled, 3 of 4 regimes, 37 of 43 counts named; "work" 8.8 /
#: 53.3 %, 3 of 4, 26 of 43 (it priced M 72-128 unsplit: +64 to +153 %): "slices" SHIPS (same regimes, lower pooled
#: median and p90), with the kind's terms as committed (fitted under "tiles", CUBLASLT_FIT_SPLIT_RULE). Still missed:
#: M 72-128 (10.9 / 38.8: M 100 x 8 tiles ran 3 slices, M 112-128 at W 1024-1344 and 192-256 K steps ran unsplit) and the
#: 2-slice rows at 56-64 tiles (-15 to -18 %)
CUBLASLT_S_W_MAX = 960
CUBLASLT_S_W_SLOPE = 2.5
CUBLASLT_S_PT_MAX = 48
CUBLASLT_S_PT_SLOPE = 0.25
CUBLASLT_S_PT_CAP = 66
CUBLASLT_S_BUDGET = 1800
CUBLASLT_S_BUDGET_STEP = 2.0
CUBLASLT_S_SMALL_CTAS = 80
CUBLASLT_S_WAVE = 132
CUBLASLT_S_LONG_STEPS = 28
CUBLASLT_S_STEPS_PER_TILE = 0.875
CUBLASLT_S_MAX_SLICES = 16


def cublaslt_block_split_slices(m, k, n) -> np.ndarray:
    """The split count of the rule shipped after grid 10 (CUBLASLT_SPLIT_RULE "slices"; constants above): 1 = unsplit."""
    m, k, n = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in (m, k, n)))
    ks = np.ceil(k / BLOCK_K)
    pt = cublaslt_padded_tiles(m, n)
    w = m * pt
    w_max = np.maximum(CUBLASLT_S_W_MAX, CUBLASLT_S_W_MAX + CUBLASLT_S_W_SLOPE * (ks - 64))
    pt_max = np.minimum(CUBLASLT_S_PT_CAP, np.maximum(CUBLASLT_S_PT_MAX, CUBLASLT_S_PT_MAX + CUBLASLT_S_PT_SLOPE * (ks - 64)))
    split = (ks >= CUBLASLT_SPLIT_MIN_STEPS) & (w <= w_max) & (pt <= pt_max)
    s = np.full(m.shape, 2.0)
    for c in range(3, CUBLASLT_S_MAX_SLICES + 1):
        per = ks / c
        ctas = c * pt
        fits = (ctas <= CUBLASLT_S_SMALL_CTAS) | ((ctas <= CUBLASLT_S_WAVE) & (per >= CUBLASLT_S_LONG_STEPS) & (
            per >= CUBLASLT_S_STEPS_PER_TILE * pt))
        ok = (per > CUBLASLT_W_MIN_STEPS) & fits & (c * w <= CUBLASLT_S_BUDGET + CUBLASLT_S_BUDGET_STEP * ks)
        s = np.where(ok, float(c), s)
    return np.where(split, s, 1.0)


#: the split rule shipped after grid 11 (CUBLASLT_SPLIT_RULE "workspace"), READ OFF all 168 recorded choices at M <= 128
#: (the _notes files of the block grid, grids 4 / 5 / 8 / 9 / 10 and fill7: LOOKED-AT; it reproduces 166 of them and all 168
#: split / no-split decisions, "slices" 159 / 164): "slices" with its W = M x padded tiles gates (the W ceiling and the
#: c x W budget) replaced by ONE bound on the split's fp32 partials, c x M x N x 4 bytes < 1 MiB (CUBLASLT_WS_BYTES, strict:
#: M 128 x N 1024 and M 16 x N 8192 = exactly 1 MiB at 2 slices ran unsplit, M 68 x N 1280 = 0.996 MiB at 3 slices ran
#: 3). Unsplit below 48 K steps, where 2 slices' partials reach 1 MiB (whatever M: the bound alone names M 72-128's
#: choices, M 100 x 8 tiles' 3 slices, M 128 x 8 tiles unsplit at 192 K steps, M 28 x N 5120 unsplit at 216) or padded
#: tiles pt > min(66, max(48, 48 + (ks - 64) / 3)) (CUBLASLT_WS_PT_SLOPE: pt 64 split at 112 K steps, 56 not at 64). The
#: slice count as "slices" (ks / c > 20; c x pt <= 80 CTAs, or <= 132 with slices of >= 28 K steps and >= 0.875 pt) with
#: c x M x N x 4 < 1 MiB for its budget. A 1 MiB limit is consistent with cuBLASLt's split-K partials needing a workspace
#: of c x M x N fp32 and a 1 MiB workspace offered to it (an assumption: torch's cuBLASLt workspace setting is not read
#: here). Closed source: every constant read off kernel names and grids, none fitted to times. Misses: M 12 x 28 tiles at
#: 72 K steps (3 slices = 84 CTAs ran, the rule says 2), M 20 x 16 tiles at 192 (5 ran, the rule says 6).
#: Grid 11 (43 shapes, 29 of them at M 68-256 with 4-16 padded tiles at 64-256 K steps, BLIND, predictions committed in
#: d34a52c before one device call; benchmarks/accuracy_sections/gemm_grid11.py): "workspace" 8.2 / 13.4 % pooled, 3 of 4
#: regimes, 41 of 43 counts named (42 split / no-split); "slices" 11.2 / 90.1 %, 1 of 4, 24 of 43 (it kept M > 128
#: unsplit: +50 to +144 %, and split M 68-80 x 16 tiles whose partials reach 1 MiB: -35 to -38 %): "workspace" SHIPS,
#: with the kind's terms as committed. The same call's control (gemm_grid11ws_*: CUBLASLT_WORKSPACE_SIZE=32768) split all
#: 6 rows the bound keeps unsplit, 5 of them 2.3-3.2x faster: the bound is the 1 MiB cuBLASLt workspace torch offers by
#: default (a process that sets a larger one gets splits this rule does not price). Still missed: unsplit long-K rows
#: over-priced by 11-15 % (the kind's per-step term, fitted under "tiles"), M 8 x 72 tiles (a persistent 132-CTA split-K
#: ran, priced unsplit: -13 %), M 16 x 16 tiles at 240 K steps (6 slices ran, 8 priced: -6 %).
#: Grid 12 (44 shapes, BLIND, fa98159; benchmarks/accuracy_sections/gemm_grid12.py): the kind's terms refitted under
#: "workspace" on grids 4-11 (fit_production_topk_gemm.CUBLASLT_FIT_SPLIT_RULE / CUBLASLT_NAMED_FIT) 6.6 / 8.2 %, 5 of 5
#: regimes, SHIPPED; the terms fitted under "tiles" 11.8 / 14.6 %, 2 of 5; this rule named 43 of 44 counts
CUBLASLT_WS_BYTES = float(1 << 20)
CUBLASLT_WS_PT_SLOPE = 1.0 / 3.0


def cublaslt_block_split_workspace(m, k, n) -> np.ndarray:
    """The split count of the rule shipped after grid 11 (CUBLASLT_SPLIT_RULE "workspace"; constants above): 1 = unsplit."""
    m, k, n = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in (m, k, n)))
    ks = np.ceil(k / BLOCK_K)
    pt = cublaslt_padded_tiles(m, n)
    part = m * n * 4.0
    pt_max = np.minimum(CUBLASLT_S_PT_CAP, np.maximum(CUBLASLT_S_PT_MAX, CUBLASLT_S_PT_MAX + CUBLASLT_WS_PT_SLOPE * (
        ks - 64)))
    split = (ks >= CUBLASLT_SPLIT_MIN_STEPS) & (2.0 * part < CUBLASLT_WS_BYTES) & (pt <= pt_max)
    s = np.full(m.shape, 2.0)
    for c in range(3, CUBLASLT_S_MAX_SLICES + 1):
        per = ks / c
        ctas = c * pt
        fits = (ctas <= CUBLASLT_S_SMALL_CTAS) | ((ctas <= CUBLASLT_S_WAVE) & (per >= CUBLASLT_S_LONG_STEPS) & (
            per >= CUBLASLT_S_STEPS_PER_TILE * pt))
        ok = (per > CUBLASLT_W_MIN_STEPS) & fits & (c * part < CUBLASLT_WS_BYTES)
        s = np.where(ok, float(c), s)
    return np.where(split, s, 1.0)


def cublaslt_block_split(m, k, n) -> np.ndarray:
    """The split-K count cuBLASLt's block-scaled kernel is priced with (1 = unsplit): the rule CUBLASLT_SPLIT_RULE names
    ("slices": cublaslt_block_split_slices, shipped after grid 10; "workspace": cublaslt_block_split_workspace, shipped
    after grid 11; "work": cublaslt_block_split_work, shipped after grid
    9; "tiles": cublaslt_block_split_tiles, the rule before grid 9)."""
    if CUBLASLT_SPLIT_RULE == "work":
        return cublaslt_block_split_work(m, k, n)
    if CUBLASLT_SPLIT_RULE == "slices":
        return cublaslt_block_split_slices(m, k, n)
    if CUBLASLT_SPLIT_RULE == "workspace":
        return cublaslt_block_split_workspace(m, k, n)
    return cublaslt_block_split_tiles(m, k, n)


def cublaslt_block_split_tiles(m, k, n) -> np.ndarray:
    """The split rule before grid 9 (CUBLASLT_SPLIT_RULE "tiles"; the CUBLASLT_SPLIT_* constants): 1 = unsplit."""
    m, k, n = (np.asarray(x, dtype=np.float64) for x in (m, k, n))
    tiles = np.ceil(m / CUBLASLT_TILE) * np.ceil(n / CUBLASLT_TILE)
    ks = np.ceil(k / BLOCK_K)
    few = (tiles <= CUBLASLT_SPLIT_TILES) | ((m <= CUBLASLT_SPLIT_SMALL_M) & (tiles <= CUBLASLT_SPLIT_TILES_SMALL_M))
    split = (m <= CUBLASLT_SPLIT_MAX_M) & (ks >= CUBLASLT_SPLIT_MIN_STEPS) & few
    return np.where(split, np.where(ks <= CUBLASLT_SPLIT_TWO_STEPS, 2.0, 3.0), 1.0)


def add_block_gemm_cublaslt(b, name: str, rows, k: float, n: float, count, weight_bytes: float = 1.0) -> None:
    """An fp8 block-scaled GEMM [rows, k] x [k, n] -> bf16 as cuBLASLt runs it (kind gemm_fp8_block_cublaslt):
    CTAs = 128 x 128 output tiles x split slices, each walking ceil(K steps / split) K steps (serial_iters), tile-padded
    flops; where it splits, cuBLASLt's splitKreduce (kind elementwise: split fp32 partials [M, N] read, bf16 written),
    as simulator.kernels.cublaslt.add_gemm emits it for the small-M bf16 / per-tensor kernels. Many waves: every tile's
    turnover (the kind's cta_fixed) but the last's on the tile chain, hidden under the body (the kind is in
    hwmodels.roofline.CTA_FIXED_HIDDEN since blind grid 14: a persistent 132-CTA nvjet kernel runs the prefill tiles)."""
    r = np.atleast_1d(np.asarray(rows, dtype=np.float64))
    split = cublaslt_block_split(r, k, n)
    tiles = np.ceil(r / CUBLASLT_TILE) * np.ceil(n / CUBLASLT_TILE)
    ksteps = np.ceil(k / BLOCK_K)
    flops = 2.0 * tiles * CUBLASLT_TILE * CUBLASLT_TILE * ksteps * BLOCK_K
    scale_bytes = 4.0 * (r * ksteps + ksteps * np.ceil(n / BLOCK_K))
    shape = np.shape(rows)
    b.add(name, "gemm_fp8_block_cublaslt", flops=flops.reshape(shape),
          bytes_read=(k * n * weight_bytes + r * k + scale_bytes).reshape(shape),
          bytes_written=(r * n * np.where(split > 1, 4.0 * split, 2.0)).reshape(shape),
          parallel_units=(tiles * split).reshape(shape), serial_iters=np.ceil(ksteps / split).reshape(shape),
          dtype="fp8", count=count,
          # each CTA's output tile after its K steps: its valid rows x 128, bf16 (fp32 partials where split)
          epilogue_bytes=(np.minimum(r, CUBLASLT_TILE) * CUBLASLT_TILE * np.where(split > 1, 4.0, 2.0)).reshape(shape))
    red = split > 1
    if red.any():
        b.add(name + "_splitk_reduce", "elementwise", flops=(split * r * n).reshape(shape),
              bytes_read=(split * r * n * 4.0).reshape(shape), bytes_written=(r * n * 2.0).reshape(shape),
              dtype="fp32", count=count, where=red.reshape(shape))
