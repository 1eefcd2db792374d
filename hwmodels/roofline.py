"""Price an Op table on a device: seconds per op row, vectorized over the whole table.

For every op row (one kernel, or `count` identical kernels in sequence):

    units_eff   = U                          (the device's SMs / PCUs)
    fill_c      = n / (ceil(n / U) * U)      when n = parallel_units > 0, else 1
                  (wave quantization: a kernel of n CTAs keeps n of U units busy in its last wave;
                   with fewer CTAs than units, only n units do arithmetic)
    fill_m      = min(1, n / (s * U))        when n > 0, else 1
                  (a kernel on too few units cannot pull full bandwidth; s = saturation[kind], the
                   units (as a multiple of U) a kernel of that kind needs to saturate bandwidth;
                   1.0 uncalibrated = bandwidth linear in occupied units up to one per SM)
    compute_s   = flops / (peak[dtype] * eff_c[kind] * eff_dtype[dtype] * fill_c)
    hbm_bytes   = bytes_read + bytes_written - reread_bytes * hit
                  hit = min(1, L2 * l2_fraction / working_set): re-reads of a working set that fits in L2
                  come from L2 (no HBM traffic); of a larger one, the resident share does; for the plain-PyTorch
                  streaming kinds (STREAM_REREAD: elementwise, cast, copy_strided, reduce) hit = 1 if the working set
                  fits, else 0 (a later kernel re-streaming a tensor in the order it was written: LRU scan); for the
                  multi-sweep top-k kinds (SWEEP_REREAD) the first sweep's and the later sweeps' hit shares come
                  from the device's measured hit curve (Efficiency.l2_sweep_hit) at the working set and at the rows in
                  flight, each over the L2 (all-or-nothing uncalibrated)
    memory_s    = hbm_bytes / (bw_hbm * eff_m[kind] * fill_m)
    waves       kinds with a calibrated occupancy (cta_slots[kind] = o resident CTAs per SM; decode attention of
                a named kernel family, the indexer) price their CTAs in waves: slots = U * o, waves = ceil(n / slots);
                o = the op's own `resident_ctas` where its family module sets one (a kernel whose registers depend on
                the shape's compile-time constants, e.g. vLLM's Triton attention per GQA group size).
                Each CTA walks its share of the work in `serial_iters` synchronous load-then-compute iterations
                of iter[kind] each (the measured per-iteration latency of that kernel; iter_l2[kind] for the share
                of its reads that hit in L2, where the kind has one: reread_bytes * hit / bytes_read; iter_l1[kind]
                for the op's `l1_iters`, loads that hit the CTA's own L1, where the kind has one), so
                  device_s = max(body, chain) + min(body, chain) / (waves * serial_iters)
                             + fixed[kind] + waves * cta_fixed[kind] + ceil(n / U) * cta_serial[kind]
                  (fixed[kind] = wave_fixed[kind] where the kind has one: Efficiency.wave_fixed_s, the wave-priced
                  kernels' own fixed time, e.g. cuBLASLt's small-M GEMMs against the full-device GEMMs)
                  body = overlap(compute_s, memory_s'), chain = waves * serial_iters * iter[kind] (for the kinds of
                   CHAIN_OVERLAP, FlashInfer's CUDA-core decode, max(body, chain) is max(memory_s', overlap_p(compute_s,
                   chain)), HBM a ceiling (CHAIN_OVERLAP_BW_CEILING), compounded in the first wave only and
                   max(memory_s', compute_s, chain) per later wave (CHAIN_OVERLAP_STAGGERED), compute_s + iter per later
                   wave in that max (CHAIN_OVERLAP_WAVE_FILL); for those of CHAIN_ISSUE, vLLM's Triton
                   attention, max(memory_s', chain + compute_s + chain_queue[kind] x memory_s')); the second term is
                  the pipeline fill: the first tiles load before anything overlaps them, once per kernel (one wave
                  of one-tile CTAs pays body + chain; a long chain or many waves max(body, chain))
                with memory_s' = max(hbm_bytes / (bw_hbm * eff_m), l2_bytes / bw_l2) (no fill_m: too few CTAs show up as the chain
                instead). l2_bytes = bytes_read + bytes_written (+ spill): every byte, L2 hits included, passes
                through the L2, whose measured bandwidth bw_l2 (Efficiency.l2_bw_bytes_s, a full-occupancy streaming
                kernel's) bounds a kernel whose re-reads hit: they are not free (FlashAttention-2 verification rows re-read a GQA
                group's K/V once per query head). Only here, in the wave model: a
                full-chip streaming bandwidth says nothing of what one CTA draws from L2 (the single-CTA top-k kernels,
                `topk_cta`, re-read their row from L2 at a rate their own fit measures); no L2 term when uncalibrated
                or when the efficiencies are borrowed from another chip (hwmodels.spec). Few CTAs over a long range = one long serial chain per CTA (fp8 K/V halves the bytes
                but not the iterations); a last partial wave costs a whole CTA's chain (the tail);
                cta_fixed = the per-wave prologue / epilogue (load Q, write the partial output); for the kinds of
                CTA_FIXED_HIDDEN (on-chip epilogues) every wave's but the last's hides under the body:
                max(body, chain + (waves - 1) * cta_fixed) + cta_fixed replaces max(body, chain) + waves * cta_fixed;
                for the kinds of CTA_ALONE (one resident CTA per SM, not persistent: FA4-CuTe's sm_90 forward, XQA's
                mha.cu) every wave pays its fill and every wave but the first one CTA turnover on its SM, while the
                other SMs stream: max(body + fill, chain + waves * fill + (waves - 1) * cta_fixed) + fixed (the
                kinds of CTA_LOCKSTEP, whose SMs start each wave in step, add H(waves) - 1 waves' loads to that
                serial path);
                cta_serial = the
                part of each CTA's launch / prologue / epilogue that co-resident CTAs do not overlap (0 unless fitted;
                for the kinds of CTA_SERIAL_AFTER_FIRST, every CTA an SM runs but its first, on that SM's serial path
                with the later waves' prologue loads: max(body, chain + (ceil(n / U) - 1) * cta_serial + later loads);
                an op's `cta_extra` x = the share of cta_serial its shape's CTAs add, paid by every CTA on the SM, the
                first included (CTA_SERIAL_AFTER_FIRST): (ceil(n / U) - 1 + x ceil(n / U)) * cta_serial)
    device_s    = max(compute_s, memory_s) + fixed[kind] + sync_steps * sync[kind]
                  fixed = ramp/tail time of one kernel; sync = latency of one synchronized in-kernel phase
                  (with a calibrated overlap exponent p: (compute_s^p + memory_s^p)^(1/p) replaces the max)
    loop floor  device_s >= serial_iters * loop_iter + fixed: an op that declares `serial_iters` (iterations of
                a synchronous load-then-compute loop on one CTA's critical path) cannot finish sooner than
                that many measured loop iterations (Efficiency.loop_iter_s; no floor when uncalibrated)
    kernel_s    = device_s + launch_graph                  (graph: the gap between consecutive graph nodes)
                = max(device_s, launch_eager)              (eager: the host issues kernels asynchronously,
                                                            so a kernel costs whichever is slower, the
                                                            device or the host's launch)
    collective  = 2 (g-1)/g * bytes / (bw_link * eff_m) + 2 (g-1) * (latency_link + sync[collective]) + fixed
                  + launch (ring all-reduce over g = devices of the op; bytes = the message size per device, in
                  `bytes_read`; latency_link and eff_m, fixed calibrated from NCCL measurements when available;
                  sync[collective] = the measured time of one ring step, 0 uncalibrated)
    custom all-reduce (kinds allreduce_1shot / allreduce_1shot_lamport / allreduce_2shot: engines' peer-memory
                kernels, simulator/kernels/allreduce.py): one-shot = n_bar barrier + max((g-1) * bytes / (bw_link *
                ceil), bytes / (bw_link * eff_m)) + fixed + launch; two-shot = n_bar barrier + max(2 (g-1)/g * bytes /
                (bw_link * ceil), 2/g * bytes / (bw_link * eff_m)) + fixed + launch; n_bar = AR_BARRIERS from the
                engines' sources (2 for the pull one-shot and both two-shots, 1 for TensorRT-LLM's Lamport one-shot:
                the data's own arrival). A barrier = one flag store into every peer and a poll of every
                peer's flag: at least the spec's link latency, plus sync[kind] for each peer beyond the first
                (barrier = latency_link + (g-2) * sync[kind]); a fused epilogue's bytes_written (the residual add +
                RMSNorm's extra read + write) add bytes_written / (hbm_bw * memory[elementwise]). eff_m =
                memory[kind]: the rate at which one peer's data arrives (achieved / datasheet link bandwidth; a thread's loads from its g-1 peers are in flight
                together, so at 2 ranks it is the whole rate); ceil = link_ceiling[kind]: the rate that every peer's
                traffic together reaches on the device's links (absent = eff_m, which leaves (g-1) x bytes / eff_m,
                the link-bound form). 1.0 / 0 uncalibrated. The Lamport kind takes the pull one-shot's terms
                (AR_TERMS_FROM). With the engines' own terms (Efficiency.engine_ar, ENGINE_AR_TERMS) a custom kind's
                barrier is engine_ar[barrier_s] at any rank count and its fixed time AR_PHASES x engine_ar[phase_s]
                + sync_steps x engine_ar[flag_store_s] (the own kernel's grid-wide barrier, fixed and sync terms
                are not used for it); ENGINE_AR_BARRIERS barriers (none in the Lamport one-shot) and, with a fused
                epilogue, engine_ar[norm_s] per serialized RMSNorm (1 in a one-shot, g in a two-shot); and with
                them a two-shot that declares its CTAs (vLLM's) moves its bytes in whole grid-stride loop steps less
                AR_WAVE_SKIP of one, and the Lamport push over > 1 peer reaches LAMPORT_CEILING_RATIO x the ceiling
    alltoall    = (g-1)/g * bytes / (bw_link * eff_m) + latency_link + fixed + launch    (each device sends
                  the (g-1)/g of its `bytes_read` that belongs to the others, over all its links at once)
    time_s      = count * kernel_s
    spill       an op may declare `onchip_bytes` (working set per parallel unit) and `spill_bytes` (bytes
                re-read per extra pass): passes = ceil(onchip_bytes / smem_per_unit) when it exceeds the
                device's shared memory per unit, and (passes - 1) * spill_bytes join memory_s's bytes

`peak[dtype]` is the dense datasheet rate for the op's arithmetic dtype, falling back to the next wider
unit the device has (hwmodels.opkinds.DTYPE_FALLBACK). `eff_c`, `eff_dtype`, `eff_m`, `fixed`, `s`
come from the spec's Efficiency (1.0 / 0 until calibrated, see hwmodels/calibration). A collective with
g == 1 costs nothing.

Ops with parallel_units == 0 are library kernels assumed to pick a split that fills the device (cuBLAS
split-K / stream-K GEMMs); they get fill = 1.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hwmodels.errors import SparsesimError
from hwmodels.opkinds import ALLTOALL, COLLECTIVE, DTYPES, KIND_CODE, KINDS
from hwmodels.spec import HardwareSpec

ONESHOT, TWOSHOT = KIND_CODE["allreduce_1shot"], KIND_CODE["allreduce_2shot"]
LAMPORT = KIND_CODE["allreduce_1shot_lamport"]
#: cross-rank barriers per call of each custom all-reduce kind, from the engines' sources (flashinfer-python 0.6.4's
#: copies): vLLM cross_device_reduce_1stage = start + end barrier; cross_device_reduce_2stage = start + one barrier
#: between reduce-scatter and all-gather (no end barrier: the two alternating peer_counter sets make a next call's
#: start barrier safe); TensorRT-LLM allreduce_fusion_kernel_twoshot_sync = two Barrier::sync(); _oneshot_lamport =
#: none: each rank stores its message into every peer's Lamport buffer and polls its own buffer until no -0.0 is left,
#: so the data's own arrival (one link latency) is the only wait
AR_BARRIERS = {ONESHOT: 2.0, TWOSHOT: 2.0, LAMPORT: 1.0}
#: custom kinds priced with another kind's fitted terms (fixed, memory, sync, link_ceiling): the Lamport one-shot moves
#: the same bytes over the same links as the pull one-shot and has no measurement of its own in the committed fit
AR_TERMS_FROM = {LAMPORT: ONESHOT}
#: Efficiency.engine_ar's terms: the engines' kernels' own barrier, fixed time and flag-store time (fitted on their
#: measurement, simulator/calibration/engine_allreduce.py fit_engine_terms), which replace for the custom kinds the
#: own kernel's barrier (link latency + sync per further peer: grid-wide barriers), fixed_s and sync_s
ENGINE_AR_TERMS = ("barrier_s", "phase_s", "flag_store_s", "norm_s", "after_gemm_s")
#: cross-rank flag barriers per call of each custom kind priced with the engines' own terms (flashinfer-python 0.6.4's
#: copies of the engines' kernels): vLLM's cross_device_reduce_1stage / _2stage two multi_gpu_barrier calls each (per
#: CTA, relaxed st/ld.volatile flags, the 2-stage's middle one a release/acquire pair); TensorRT-LLM's Lamport one-shot
#: NONE: it pushes the data and polls it (its only wait is the data's arrival, one peer-data phase) -- AR_BARRIERS
#: keeps 1 there for the own kernel's terms, where the barrier term is the link latency that arrival takes
ENGINE_AR_BARRIERS = {ONESHOT: 2.0, TWOSHOT: 2.0, LAMPORT: 0.0}
#: RMSNorm epilogues a fused call serializes per thread (TensorRT-LLM's FusedOp::rms_norm: blockReduceSumV2 + two
#: cluster.sync per token): the Lamport one-shot overlaps them with its polling, leaving the last token's, one; the
#: two-shot's epilogue loops over every rank's token slice after its last barrier from local memory: g in a row
ENGINE_AR_NORMS_ONESHOT = 1.0
#: serialized peer-data phases per call (engines' sources): the one-shots pull (vLLM) or push (TensorRT-LLM's Lamport)
#: once; the two-shots reduce-scatter, then all-gather (vLLM: pull the peers' scratch; TensorRT-LLM: push the sums),
#: the second phase starting only after the first one's data arrived
AR_PHASES = {ONESHOT: 1.0, TWOSHOT: 2.0, LAMPORT: 1.0}
#: a two-shot whose op declares its CTAs (parallel_units > 0: vLLM's cross_device_reduce_2stage, custom_all_reduce.cuh @
#: c9eabec7, 36 CTAs x 512 threads) walks each rank's part of 16-B packs with a stride of every thread of the grid, both
#: phases: ceil(bytes / (16 x 512 x CTAs x g)) loop steps in a row, each waiting on its peers' loads before the next
#: issues; with the engines' terms its link bytes are those whole steps less AR_WAVE_SKIP of one (the share of the last
#: step the next phase or the exit overlaps) less AR_FILL_SLOPE x (1 - fill) of one (fill, 0 < fill <= 1: the share of
#: the grid's threads the last step still has work for; the priced steps are ceil(x) - AR_WAVE_SKIP - AR_FILL_SLOPE x
#: (ceil(x) - x) for x = bytes / step bytes). Blind grid 8 shipped 0.25 / 0 (fit_grid8_terms on grids 4, 6, 7); blind
#: grid 9 shipped 0.09 / 0.16 (FITTED together by simulator/calibration/engine_allreduce_grid9.py fit_grid9_terms on the
#: 4-rank vLLM two-shot rows of grids 4, 6, 7 and 8 only, GRID9_CANDIDATE; judged on blind grid 9: same regimes met,
#: lower pooled median and p90)
AR_STEP_BYTES, AR_CTA_THREADS = 16.0, 512.0
AR_WAVE_SKIP = 0.09
AR_FILL_SLOPE = 0.16
#: TensorRT-LLM's Lamport one-shot PUSHES its message into every peer (posted stores) where vLLM's one-shot pulls: over
#: more than one peer, with the engines' terms, its traffic together reaches this share of the pull one-shot's link
#: ceiling (FITTED: fit_grid8_terms, 0.604 against the pull's 0.655 on the 4-rank rows >= 2 MiB of grids 4, 6, 7); at 2
#: ranks the one-peer rate binds and nothing moves
LAMPORT_CEILING_RATIO = 0.9219
#: blind grid 13's rules (SHIPPED: fitted together by simulator/calibration/engine_allreduce_grid13.py fit_grid13_terms on grids
#: <= 12's H100 rows only, GRID13_CANDIDATE; judged on blind grid 13, 4 x H100: 25 of 31 regimes against main's 22), all
#: with the engines' terms only:
#:   AR_TWOSHOT_COPY   TensorRT-LLM's two-shot (allreduce_2shot without declared CTAs) above 2 ranks also pays its
#:                     serialized local copies (allreduce_fusion_kernel_twoshot_sync, flashinfer 0.6.4 @ f1e6fdcb: the
#:                     input into its own comm buffer before the first Barrier::sync, the sums read back + the output
#:                     written after the last): AR_TWOSHOT_COPY x 2 x message at the elementwise HBM rate (at 2 ranks
#:                     the one-peer link bound already covers them)
#:   AR_NORM_CS1 / _CSN the fused RMSNorm's serialized reductions (norm_s) cost this share of norm_s when the fusion
#:                     kernel's cluster (an op's `cluster_ctas`: allreduce_fusion_kernel_launcher, simulator.kernels.
#:                     allreduce trtllm_cluster_size) has ONE CTA (FusedOp::rms_norm runs no cluster.sync) / more; an op
#:                     that declares no cluster pays norm_s whole
#:   AR_PEER_SHARE     each serialized peer wait (ENGINE_AR_BARRIERS flag barriers + AR_PHASES peer-data phases) waits on
#:                     the slowest of g - 1 peers: (g - 2) x AR_PEER_SHARE x phase_s more per wait (vLLM's two-shot, an
#:                     allreduce_2shot that declares its CTAs, pays none: its AR_WAVE_SKIP / AR_FILL_SLOPE were fitted on
#:                     4-rank rows and hold its 4-rank waits already). 0.0376 x the H100's phase 3.858 us = 0.145 us
AR_TWOSHOT_COPY = 1.42
AR_NORM_CS1 = 0.36
AR_NORM_CSN = 1.07
AR_PEER_SHARE = 0.0376
#: blind grid 14's rules (with the engines' terms only), NOT shipped: they stay at the values that turn them OFF
#: (simulator/calibration/engine_allreduce_grid14.py GRID14_CANDIDATE = 0.57 / 0.19, fit_grid14_terms on looked-at H100 rows;
#: blind grid 14 ran on 4 x H200 for an H100 request: 16 of 31 regimes against main's 12, judged across devices only):
#:   AR_FIRST_FILL_EXTRA  vLLM's two-shot (a declared-CTA allreduce_2shot) whose message fits ONE loop step (ceil(x) = 1):
#:                        its step is priced AR_FIRST_FILL_EXTRA x (1 - x) of a step lower still than AR_FILL_SLOPE does
#:                        (cross_device_reduce_2stage, flashinfer 0.6.4 vllm_custom_all_reduce.cuh: with part = size / g
#:                        packs < the 36 x 512 threads, only the first `part` threads load anything, in both phases,
#:                        and no further step waits on the slowest one: the fill sets the time, not the step)
#:   AR_LAMPORT_OVERLAP   TensorRT-LLM's Lamport one-shot at 2 ranks (one peer): its fixed phase (phase_s) and its one-peer
#:                        transfer overlap by this share of the shorter one (allreduce_fusion_kernel_oneshot_lamport,
#:                        trtllm_allreduce_fusion.cuh @ f1e6fdcb: posted st of every vector into the peer's buffer, then
#:                        the local buffer's clear and the ld.volatile poll run while the pushes are still in flight)
AR_FIRST_FILL_EXTRA = 0.0
AR_LAMPORT_OVERLAP = 0.0
#: blind grid 17's rules (with the engines' terms only; 2 ranks only), module constants that turn them OFF; a device's
#: own values come from its engine_allreduce_rules (hwmodels.spec ENGINE_AR_RULES; simulator/calibration/
#: engine_allreduce_grid17.py GRID17_H100_RULES, fitted on looked-at H100 rows only):
#:   AR_LAMPORT_PHASE2  TensorRT-LLM's Lamport one-shot at 2 ranks pays this share of phase_s for its peer-data phase
#:                      (allreduce_fusion_kernel_oneshot_lamport, trtllm_allreduce_fusion.cuh @ f1e6fdcb: a posted st
#:                      into the one peer's buffer and an ld.volatile poll of its own -- a one-way trip -- where phase_s
#:                      was fitted with vLLM's pull, a load's round trip, on the same rows; 1 = off)
#:   AR_TWOSHOT2_LINK   TensorRT-LLM's two-shot (an allreduce_2shot that declares no CTAs) at 2 ranks: its link bytes at
#:                      this share of the datasheet link rate, in place of max(link / ceiling, link / memory) of the own
#:                      kernel's shares (allreduce_fusion_kernel_twoshot_sync: each rank's reduce-scatter loads the one
#:                      peer's half and stores the sum into the peer's buffer in the same loop, reads and posted writes
#:                      on the two directions of the link at once; 0 = off)
AR_LAMPORT_PHASE2 = 1.0
AR_TWOSHOT2_LINK = 0.0
#: blind grid 19's rule (with the engines' terms only; above 2 ranks): no module constant (AR_PEER_SHARE where a device
#: has none, the shipped model as it was); a device's own value comes from its engine_allreduce_rules (oneshot_peer_share;
#: simulator/calibration/engine_allreduce_grid19.py, fitted on looked-at 4-rank H100 rows of every host only). Source: flashinfer
#: 0.6.4 @ f1e6fdcb (vllm_custom_all_reduce.cuh multi_gpu_barrier: threads 0..g-1 of each CTA each store one peer's
#: flag and spin on that peer's own flag AT ONCE, so a barrier waits ONE max over the peers; cross_device_reduce_1stage:
#: start barrier, the unrolled loads from every rank (one round trip, again the slowest peer), end barrier: 3 waits,
#: each a max of g - 1 peers; trtllm_allreduce_fusion.cuh allreduce_fusion_kernel_oneshot_lamport: the pushes to all
#: ranks, then each thread polls all g slots of its own buffer in one loop: one one-way wait, the slowest peer's -- the
#: ONE wait main already charges it, so the Lamport keeps its rule)
#:   oneshot_peer_share  vLLM's one-shot pays this share of phase_s per wait per peer beyond the first in place of
#:                       AR_PEER_SHARE (which grid 13 fitted on every kind's rows together)



#: blind grid 20's rule (with the engines' terms only; 2 ranks only), a module constant that turns it OFF; a device's own
#: value comes from its engine_allreduce_rules (lamport2_link; simulator/calibration/engine_allreduce_grid20.py, fitted on
#: looked-at 2-rank H100 rows only):
#:   AR_LAMPORT2_LINK  TensorRT-LLM's Lamport one-shot at 2 ranks: its push's link bytes at this share of the datasheet
#:                     link rate, in place of max(link / ceiling, link / memory) of the own kernel's shares, which were
#:                     fitted with vLLM's PULLS (allreduce_fusion_kernel_oneshot_lamport, trtllm_allreduce_fusion.cuh @
#:                     f1e6fdcb: every thread posts st.global of its 16-byte vectors into the ONE peer's buffer, no round
#:                     trip, then clears the previous buffer and polls its own; 0 = off)
AR_LAMPORT2_LINK = 0.0
#: blind grid 23's rules (with the engines' terms only), module constants that turn them OFF; a device's own values come
#: from its engine_allreduce_rules (oneshot2_link, multi_link_time; simulator/calibration/engine_allreduce_grid23.py,
#: fitted on H100 rows measured before grid 23, protocol-A rows corrected to protocol B). Source: flashinfer 0.6.4 @
#: f1e6fdcb -- above 1 MiB every engine kernel's time is its link phase (vllm_custom_all_reduce.cuh
#: cross_device_reduce_1stage: one grid-stride loop of 16-B loads from every peer; cross_device_reduce_2stage: the
#: reduce-scatter and all-gather loops of peer loads; trtllm_allreduce_fusion.cuh allreduce_fusion_kernel_oneshot_lamport:
#: posted stores into every peer, allreduce_fusion_kernel_twoshot_sync: its peer loads / stores plus local copies), and
#: the link shares that set that slope were fitted on protocol-A rows that carried the harness's per-replay skew / 10:
#:   AR_ONESHOT2_LINK     vLLM's one-shot (cross_device_reduce_1stage) at 2 ranks: its one peer's loads at this share of
#:                        the datasheet link rate, in place of max(link / ceiling, link / memory) (0 = off)
#:   AR_MULTI_LINK_TIME  every engine kernel above 2 ranks: its link time (one-shot: max((g - 1) x link / ceiling,
#:                        link / memory); two-shot: its two phases' share) times this share (1 = off)
AR_ONESHOT2_LINK = 0.0
AR_MULTI_LINK_TIME = 1.0
#: the in-step candidate's rule (simulator/calibration/allreduce_in_step.py STEP2_*; with the engines' terms only), a
#: module constant that turns it OFF; a device's own value comes from its engine_allreduce_rules (after_gemm_share):
#:   AR_AFTER_GEMM_SHARE  an all-reduce after a GEMM on every rank (an op's after_gemm = that GEMM's HBM bytes per rank)
#:                        waits this share of the GEMM's memory time x sqrt(g - 1) (the slowest of g - 1 peers' GEMM
#:                        ends; measured: the wait grows with the GEMM, ~0 for GEMMs of 2-6 us), on top of the
#:                        device's constant engine_ar[after_gemm_s]
AR_AFTER_GEMM_SHARE = 0.0
#: blind grid 25's rule (with the engines' terms only; above 2 ranks): no module constant (AR_PEER_SHARE where a device has
#: none, the shipped model as it was); a device's own value comes from its engine_allreduce_rules (lamport_peer_share;
#: simulator/calibration/engine_allreduce_grid25.py, fitted on looked-at 4-rank H200 Lamport rows <= 1 MiB). Source:
#: flashinfer 0.6.4 @ f1e6fdcb trtllm_allreduce_fusion.cuh allreduce_fusion_kernel_oneshot_lamport -- each thread polls
#: all g slots of its own buffer in one loop, so its wait ends with the last of the g - 1 peers' pushes:
#:   lamport_peer_share  the Lamport one-shot pays this share of phase_s per wait per peer beyond the first in place of
#:                       AR_PEER_SHARE (as oneshot_peer_share does for vLLM's one-shot)


def ar_barrier_s(hw: HardwareSpec, kind: str, world) -> np.ndarray:
    """One custom all-reduce barrier of `kind` over `world` ranks on `hw` (the term `price` charges AR_BARRIERS
    times): the link latency (the fitted one, at least the spec's) plus sync[kind] per peer beyond the first."""
    eff = hw.efficiency
    lat = eff.link_latency_s if eff.link_latency_s is not None else (hw.link_latency_s or 0.0)
    lat_c = max(lat, hw.link_latency_s or 0.0)
    k = KINDS[AR_TERMS_FROM.get(KIND_CODE[kind], KIND_CODE[kind])]
    g = np.asarray(world, float)
    if eff.engine_ar:
        return np.where(g > 1.0, eff.engine_ar.get("barrier_s", 0.0), 0.0)
    return np.where(g > 1.0, lat_c + np.maximum(g - 2.0, 0.0) * eff.sync_s.get(k, 0.0), 0.0)


LAUNCH_MODES = ("graph", "eager")
#: kinds whose re-reads (`reread_bytes`) are a later kernel streaming a tensor that an earlier kernel streamed in the
#: same address order (TensorIterator elementwise / cast / broadcast kernels and torch's row reductions reading the
#: output of the kernel before them: eager fp8 quantization, fp8-KV dequantization, HF RMSNorm): all-or-nothing L2
#: hits (module docstring, `hbm_bytes`). MEASURED on the H100 (regimes_*_v4.csv l2_bw): a resident x.sum() over a
#: buffer of >= 48 MiB (of a 50 MiB L2) takes the rotated (HBM) time, i.e. a re-streamed buffer that does not fit
#: keeps no useful share in L2; the other kinds (multi-pass top-k, GQA heads re-reading K/V concurrently) keep the
#: resident-share rule.
STREAM_REREAD = tuple(KIND_CODE[k] for k in ("elementwise", "cast", "copy_strided", "reduce", "copy_broadcast"))
#: kinds whose per-wave CTA time (cta_fixed) is on-chip work that the other CTAs' streaming hides: their CTAs end in a
#: cross-warp merge through shared memory and a register -> global store, with no K/V load after the main loop, and the
#: waves are not lock-stepped (a slot one CTA frees is refilled while its neighbours still stream), so every wave's
#: CTA time but the last's adds to the tile chain, not to the bandwidth-bound body, and the last wave's is the tail:
#:   max(body, chain + (waves - 1) x cta_fixed) + cta_fixed      (instead of max(body, chain) + waves x cta_fixed)
#: FlashInfer's FA2 prefill kernel (include/flashinfer/attention/prefill.cuh @ 0d618712faff: after the K/V loop,
#: threadblock_sync_mdo_states merges the KV warps' m / d / o through shared memory, then the output is normalized and
#: written from registers, write_o_reg_gmem). One wave prices as before; the other kinds keep the additive form
#: FlashInfer's sm_90 MLA kernel (attn_fi_mla; include/flashinfer/attention/mla_hopper.cuh @ f1e6fdcb,
#: BatchMLAPageAttentionHopperKernel) is priced with it too: the family module prices its persistent CTAs' work items as
#: waves of one-item CTAs (simulator/kernels/flashinfer.py fi_mla), and an item's epilogue (normalize_d_, write_o through
#: shared memory, then __syncthreads before the producer warp group issues the next item's prefetch_offset / load_kv) is
#: on that CTA's own serial path while the other SMs stream their items: every item's epilogue but the last adds to the
#: chain, not to the bandwidth-bound body
#: DeepGEMM's SM90 fp8 1D2D GEMM (kind gemm_fp8_block; deep_gemm/include/deep_gemm/impls/sm90_fp8_gemm_1d2d.cuh @
#: 54e2261) is persistent too: its TMA-producer warp walks the same tile schedule as the math warpgroups and issues the
#: next tile's A / B loads as soon as the K loop's last empty_barrier_arrive frees a stage, i.e. BEFORE the math
#: warpgroups run the tile's epilogue (STSM into shared memory, TMA store); that store is waited for only at the next
#: tile's epilogue (tma_store_wait<0>), and the next tile's scale_b loads are issued by the math threads right after.
#: So a later tile's turnover (cta_fixed) overlaps the device's byte stream: it adds to the SM's tile chain, not to the
#: body (a memory-bound walk of many waves, e.g. a K <= 512 prefill writing a wide output, pays it once)
#: cuBLASLt's block-scaled fp8 GEMM (kind gemm_fp8_block_cublaslt; closed source: what is known is the launch recorded by
#: lab/kernels/measure_deepgemm_gemm.py's _notes files) runs its multi-wave prefill as a persistent kernel: nvjet_sm90_
#: qqtst_128x128_128x6_{1x2,2x1}_..._coopA grid [2, 66, 1] = 132 CTAs walking 700-9200 output tiles (grids 13 and 14,
#: hwmodels/calibration/data/production_kernels/gemm_grid1{3,4}_*_notes.txt), so a tile's turnover is on its CTA's tile
#: chain while the next tile's loads run, as DeepGEMM's. One wave (decode, where grid = the padded tiles) prices as before.
#: Blind grid 14 (s23gm, benchmarks/accuracy_sections/gemm_grid14.py): 4-K-step prefill +28 -> +8 %, 5 of 5 regimes
CTA_FIXED_HIDDEN = tuple(KIND_CODE[k] for k in ("attn_fi_prefill", "attn_fi_prefill_fp8kv", "attn_fi_mla",
                                                "gemm_fp8_block", "gemm_fp8_block_cublaslt"))
#: kind code -> (share, step) for the later tiles of a CTA_FIXED_HIDDEN kind (default (1.0, 1.0)): each later tile keeps
#: share x cta_fixed of its turnover on the tile chain (the first wave's exposed turnover, added once, stays whole: a
#: persistent CTA prefetches the next tile's stages during the epilogue, cuBLASLt's nvjet 128x128_128x6 6 of them, all 4
#: of a 4-K-step tile) and runs its K steps at step x iter (the later waves' share of the chain: a chip whose every SM
#: is busy for the whole kernel): chain x (1 + (step - 1) (waves - 1) / waves), one wave unchanged. Empty = not used
#: (grid 15's candidate, fit_production_topk_gemm.CUBLASLT_GRID15_CAND_SHARE, NOT SHIPPED: blind grid 15 5 of 5 regimes as
#: main, pooled median 4.6 vs 6.7 % but p90 12.0 vs 11.8 %: benchmarks/accuracy_sections/gemm_grid15.py)
CTA_FIXED_HIDDEN_SHARE: dict[int, tuple[float, float]] = {}
#: kinds whose tensor-core work is on the CTA's per-tile chain and not a throughput stream of its own: FlashInfer's
#: sm_90 MLA kernel runs ONE CTA per SM (256 threads, 222 KB of shared memory) and each 64-token stage's two GEMMs are
#: issued and waited for synchronously by that CTA (mla_hopper.cuh @ f1e6fdcb: compute_mla_qk / compute_mla_pv, each
#: followed by warpgroup_wait<0>(), between the pipeline's consumer_wait and consumer_release), so a stage's MMA time is
#: part of its measured per-stage time (iter[kind]) and no co-resident CTA issues tensor work meanwhile: the wave
#: model's body is the kind's bytes alone (the compute term would count the stages' MMAs a second time)
#: DeepGEMM's paged DSA-indexer kernel (sm90_fp8_paged_mqa_logits, kind indexer_dg) likewise: each of its 4 math
#: warpgroups issues one [64 keys x 128] x [next_n x 64 heads x 128] WGMMA per 64-key page and waits for it
#: (warpgroup_wait<0>) before its ReLU-weighted head reduction and logits store, after that page's TMA load
#: (deep_gemm/include/deep_gemm/impls/sm90_fp8_paged_mqa_logits.cuh @ DeepGEMM 54e2261): its MMAs are in the per-item
#: time, not a stream of their own
#: DeepGEMM's prefill indexer kernel (sm90_fp8_mqa_logits, kind indexer_dg_prefill) too: its 4 math warpgroups each
#: issue one [64 keys x 128] x [block_q x 64 heads x 128] WGMMA per 256-key block, wait for it (warpgroup_wait<0>)
#: and reduce over the heads before the next block (deep_gemm/include/deep_gemm/impls/sm90_fp8_mqa_logits.cuh @
#: 54e2261): a key block's MMAs and epilogue are its per-block time on the busiest CTA's chain
#: FlashAttention-3's persistent hopper/ forward (attn_fa3_persist; flash-attention @ 0251105a hopper/
#: flash_fwd_kernel_sm90.h, mainloop_fwd_sm90_tma_gmma_ws.hpp): one CTA per SM (one producer and two consumer
#: warpgroups); its consumers' QK and PV wgmma of a 128-key block run on that SM's tensor cores while the producer's
#: cp.async loads stream, and a decode tile's m-block is padded to 128 rows (PackGQA: q x G rows), so the SM's tensor
#: work is part of its measured per-block time (iter[kind], fitted on the binary's one-tile long chains) and runs beside
#: the other SMs' bytes: the body is the bytes alone (compounding a padded-MMA stream with the bytes priced the
#: many-wave calls 6-9 % too slow); its fp8 build (attn_fa3_persist_fp8kv, attn_fa3_prefill_fp8kv at prefill tiles)
#: likewise
CHAIN_TENSOR = tuple(KIND_CODE[k] for k in ("attn_fi_mla", "indexer_dg", "indexer_dg_cold", "indexer_dg_prefill",
                                            "attn_fa3_persist", "attn_fa3_persist_fp8kv", "attn_fa3_prefill_fp8kv"))
#: True = an op's `lone_tile_bytes` (the first K/V tile each CTA waits for with nothing of its own to overlap) adds
#: to the kernel's time where the launch holds at most one CTA per SM in one wave: its CTAs' tiles at the kind's HBM
#: rate (lone_tile_bytes x CTAs / (HBM x memory[kind])), as they all load at once and each gets its share. Declared by
#: FlashInfer's FA2 prefill kernel for an fp8 K/V cache at decode tiles (simulator/kernels/flashinfer.py fi_tc: 16-row
#: Q tiles, warps along KV; prefill.cuh @ f1e6fdcb compute_qk / compute_sfm_v read, swizzle and convert each fp8
#: fragment column before its MMAs, so a one-tile CTA waits for its tile, then works). LOOKED-AT when chosen (cold grid
#: 2's fp8 rows; the fi_tc probe, lab/kernels/probe_fi_tc_fp8.py, 1 x H100 2026-11-28: the prefill kernel 11.8-12.3 us
#: at 8-16 active CTAs, 12.5-13.5 us at 64-128, priced flat 11.0-11.4 us); no constant refitted. A second resident CTA
#: hides its load behind its neighbour's columns (two-per-SM launches are priced as fitted), and verification tiles
#: (64 / 128 rows) do not declare it (the same term on them priced fi_verify fp8 3.6 / 14.0 -> 4.9 / 17.2 %, looked-at).
#: Judged on its own blind grid (cold grid 3, simulator/calibration/fi_tc_fp8_grid3.py: 30 fi_tc / fi_verify shapes in
#: the engine's state, priced by main and by this rule with the fit rerun under it before the device call, H100
#: 2026-11-28): 4 of 4 regimes against main's 3 (fi_tc fp8 10.1 / 12.1 -> 6.6 / 8.9 %), pooled 6.8 / 12.0 -> 5.9 / 9.4 %;
#: SHIPPED by the rule (a replicate in the same call: 4 against 4, 7.9 / 12.0 -> 5.9 / 9.5 %). False = off
LONE_TILE_LOAD = True
#: kinds whose CTAs' `epilogue_bytes` (each CTA's output tile, stored after its main loop) are exposed in the launch's
#: last wave: the last wave's CTAs x epilogue_bytes at the L2's measured rate (Efficiency.l2_bw_bytes_s) add to the
#: kernel's time, the earlier waves' stores draining under the next tiles' main loops. cuBLASLt's block-scaled fp8
#: GEMM (kind gemm_fp8_block_cublaslt: a persistent nvjet 128 x 128 kernel whose epilogue writes its tile through
#: shared memory and TMA stores; the kernel ends when the last wave's stores have landed) declares it. The stores land in the L2 (a one-wave output of 4 MB fits it many times over), so the term does not speed up
#: with the device's HBM: on the H200 transfer grid the one-wave prefill rows run 0.95-0.99 of the H100's time while the
#: model's HBM term gave 0.87-0.93. No fitted constant (the tile from the kernel, the rate the measured L2 bandwidth);
#: the kind's terms stay as fitted without it. LOOKED-AT when chosen (grids 8-15, the H200 transfer grid); judged BLIND
#: on cuBLASLt block grid 16 (31 new shapes, 1 x H200, 2026-11-28, priced at d554dfb with it off and on before the
#: call; benchmarks/accuracy_sections/gemm_grid16.py): 4.7 / 14.0 % (4 of 5 regimes; one-wave prefill 11.8 / 18.8,
#: -11.8 % signed) -> 3.4 / 7.8 % (5 of 5; one wave 5.4 / 8.1): SHIPPED. Empty = off
EPILOGUE_EXPOSED: tuple = ("gemm_fp8_block_cublaslt",)
#: kinds whose last partial wave streams on its own: FlashInfer's sm_90 MLA kernel is one persistent CTA (pair) per SM
#: walking the work items MLAPlan dealt it (include/flashinfer/scheduler.cuh @ f1e6fdcb: the min-heap on cost 2 x tile
#: rows + tokens; mla_hopper.cuh BatchMLAPageAttentionHopperKernel: for work_idx in [work_indptr[cta], work_indptr[cta
#: + 1])), so when n items do not fill their last round (r = n - (waves - 1) x SMs < SMs clusters hold one item more)
#: the other SMs are done and the r items' bytes stream over r SMs at their own chain's pace: the full rounds are priced
#: as the wave model's max(body, chain) over their share of the bytes and chain, and the last round as max(its bytes'
#: share of the body, one wave of chain) after them. The share is r / n of the bytes (ASSUMPTION: the items of one call
#: carry about equal bytes; true of unsplit uniform requests, where MLAPlan deals whole requests). At r = SMs it is
#: max(body, chain) again. Switch: TAIL_ROUND_KINDS = () restores the single max(body, chain)
#: OFF (()): judged on the fourth MLA blind grid (prices committed before measuring), the rule met 4 of 6 fi_mla
#: regimes against 5 of 6 without it (pooled 4.9 / 17.3 % against 7.4 / 15.2 %): it fixes the middle regimes it was
#: built for and loses the short ones (its refit raises the per-item time), so the model without it stays shipped
TAIL_ROUND_KINDS: tuple[str, ...] = ()
#: kinds whose CTAs keep several loads in flight ahead of their compute, so the pipeline fill is not one more
#: iteration: DeepGEMM's paged indexer kernel gives each math warpgroup its own TMA producer warp and kNumKVStages = 3
#: shared-memory stages (sm90_fp8_paged_mqa_logits.cuh @ 54e2261; host: csrc/jit_kernels/impls/sm90_fp8_mqa_logits.hpp),
#: and the producer issues the next pages' loads as soon as a stage is free, before the first page is consumed: a CTA's
#: first load is its chain's first iteration already (iter[kind] is the per-item time on that chain), and a one-item
#: CTA costs max(its bytes' arrival, one iteration), not their sum: these kinds' fill is 0
#: DeepGEMM's prefill indexer kernel likewise: one TMA warp issues every key block of a CTA's query blocks through
#: kNumKVStages = 3 stages (and the next query block's Q before the current block's keys), ahead of the 4 math
#: warpgroups (sm90_fp8_mqa_logits.cuh @ 54e2261)
CHAIN_PREFETCHED = tuple(KIND_CODE[k] for k in ("indexer_dg", "indexer_dg_cold", "indexer_dg_prefill"))
#: kinds whose stream of bytes cannot start before the first item's dependent loads return: DeepGEMM's paged indexer
#: over keys that are not in L2 (kind indexer_dg_cold, the engine's case: every layer reads its own keys). A CTA's
#: producer warp reads its schedule_meta pair, the sequence's context length and the split's block-table entries
#: before it can issue the first page's TMA load (sm90_fp8_paged_mqa_logits.cuh and scheduler/sm90_paged_mqa_logits.cuh
#: @ DeepGEMM 54e2261), so when the pages come from HBM the launch's bytes arrive one item's dependent-load chain
#: (iter[kind]) after the start: the body is body + iter (the chain side is unchanged: its first iteration is that same
#: chain). With the keys in L2 (kind indexer_dg) the pages' arrival overlaps those loads and the body is the bytes
#: alone. The extra misses of a cold first item beyond its page (the block-table entry) are per launch: fixed[kind]
CHAIN_COLD_HEAD = tuple(KIND_CODE[k] for k in ("indexer_dg_cold",))
#: kinds whose `l1_iters` are on-chip rounds (shared-memory block scans and sorts between barriers, no load of their
#: own) and that have no measured L1 iteration: those rounds cost the kind's L2 round (iter_l2[kind]) whatever the op's
#: L2 hit share, the round their terms were fitted at (TensorRT-LLM's job model: JOB_TERMS fitted on launches whose
#: scores stay in the L2, simulator/kernels/topk_trtllm.py ONCHIP_JOB). Judged blind on the H200's on-chip grid
#: (simulator/calibration/topk_trtllm_onchip.py: 12 of 12 regimes against 9 of 12)
L1_AT_L2_ROUND = tuple(KIND_CODE[k] for k in ("topk_trtllm",))
#: kinds whose CTAs run alone on their SM, one wave after another (FlashAttention's CuTe sm_90 forward: 384 threads x 168
#: registers and 164,864 B of shared memory per CTA, so one resident CTA per SM; SingleTileScheduler, not persistent:
#: flash-attn-4 4.0.0b36 flash_attn/cute/flash_fwd_sm90.py). Two rules follow from that structure:
#:   fill      a CTA's first K/V block is loaded (after its prologue's dependent loads) before its first MMA can start,
#:             and no co-resident CTA overlaps that wait, so EVERY wave pays the pipeline fill: waves x fill (a wave of
#:             one-block CTAs pays load + MMA in sequence)
#:   turnover  the next CTA on an SM is dispatched only after the previous one has stored its output and exited (its
#:             shared memory and registers are the whole SM's), so every wave after the first adds one CTA turnover
#:             (epilogue, exit, dispatch and setup: mbarrier init, TMA descriptor prefetch, register reallocation), while
#:             the first wave's setup and the last wave's epilogue are part of the kernel's fixed time:
#:             fixed + (waves - 1) x cta_fixed replaces fixed + waves x cta_fixed (cta_fixed = that turnover)
#:   overlap   the SMs are not lock-stepped (a wave's CTAs start as their SMs free up), so while one SM fills its first
#:             tile or turns its CTA over, the others stream: the fills and turnovers are one SM's serial path, added to
#:             its tile chain, not to the device-wide bytes. A kernel of many waves costs whichever is longer, the
#:             bytes of every wave at the kind's rate (plus the first fill, before any load overlaps) or one SM's
#:             serial path:
#:               max(body + fill, chain + waves x fill + (waves - 1) x cta_fixed) + fixed
#:             (one wave: max(body, chain) + fill + fixed, as before)
#: A persistent launch of these kinds (one CTA per SM walking tiles: FA3's hopper/ scheduler) is one wave: only its
#: fixed time and one fill
#: TensorRT-LLM's XQA mha.cu (attn_xqa, bf16 / fp16 K/V) runs the same way: 256 threads and 145 KB of shared memory per
#: CTA (measured launch profile), so one resident CTA per SM although its launch bounds ask for 2; before its first
#: tile a CTA initialises its barriers, waits on the previous grid (PDL) and loads Q, and after its last it merges its
#: gemm1 warp groups' partial outputs through shared memory (mergeAndSaveOutTile: three CTA barriers) and stores the
#: output tile, and only then can the next CTA take the SM (flashinfer-python 0.6.4 csrc/xqa/mha.cu kernel_mha_impl).
#: The GMMA kernel (attn_xqa_fp8kv, mha_sm90.cu) keeps 3 CTAs per SM: not here
CTA_ALONE = tuple(KIND_CODE[k] for k in ("attn_fa3", "attn_fa3_tma", "attn_fa3_persist", "attn_fa3_persist_fp8kv",
                                         "attn_fa3_prefill_fp8kv", "attn_fa4", "attn_xqa"))
#: kinds of CTA_ALONE whose CTA's last tile computes with nothing to overlap it: its MMAs need the tile the CTA has just
#: loaded, no later tile's load runs under them and no other CTA shares the SM, so one tile's load (fill_m =
#: min(memory_s', chain) / (waves x serial_iters), the memory share of the fill) and then one tile's tensor work on
#: one SM (c_tile = phases x compute_s / (waves x serial_iters): the CTA's flops per tile at the kind's per-SM rate) add to
#: every wave's serial path (the streaming path's body already holds every tile's compute):
#:   max(body + fill_m, chain + waves x (fill_m + c_tile) + (waves - 1) x cta_fixed) + fixed
#: TensorRT-LLM's XQA mha.cu (flashinfer-python 0.6.4 csrc/xqa/mha.cu kernel_mha_impl): a 256-key tile is gemm0 (the
#: 4 gemm0 warps, 64 keys x warpTile.y rows each, mma.sync) -> online softmax -> X through shared memory -> gemm1 (the
#: gemm1 warps, P x V), in sequence for one tile; with SHORT_SEQ_OPT a warp past the sequence's end skips its slice, so
#: a short tile costs its busiest warp's slice (the family module prices the tile's padded keys and rows). Value = the
#: tile's serial MMA phases: mha.cu's gemm0 and gemm1 are different warps (ctaShapeInWarps.z = 2, warp specialisation)
#: that overlap ACROSS tiles (gemm0 of tile i + 1 while gemm1 of tile i: the body's compute term, both GEMMs' flops at
#: the kind's rate over 2 concurrent warp sets) but run one after the other WITHIN a tile: c_tile = phases x
#: compute_s / (waves x serial_iters)
CTA_TILE_EXPOSED = {KIND_CODE["attn_xqa"]: 2.0}
#: kinds whose per-CTA serial time (cta_serial[kind]) is paid by every CTA an SM runs but its first: the first CTA's
#: prologue and epilogue are the kernel's lone path (its dependent loads, one tile, its fixed time), while each further
#: CTA on the same SM, co-resident or in a later wave, shares the SM's issue slots and tensor cores with the others:
#: (ceil(n / U) - 1) x cta_serial instead of ceil(n / U) x cta_serial. TensorRT-LLM's XQA GMMA kernel (attn_xqa_fp8kv,
#: flashinfer-python 0.6.4 csrc/xqa/mha_sm90.cu kernel_mha): 3 warpgroups per CTA (gemm0, gemm1, I/O), 3 CTAs per SM;
#: per CTA, outside its tile loop, warp 0 prefetches the K / V tensor maps (tma::prefetchTensorMap), the first warps
#: initialise the K / V / X / Q mbarriers before a __syncthreads, the I/O warps load Q in 16 bits and convert it to fp8
#: into shared memory (F16QToF8Converter: the products run in the cache's fp8), and after the last tile the gemm1
#: warpgroup rescales, converts and stores its output (finalizeAndWriteOut_sync); 3 such CTAs on one SM share its 4
#: schedulers and its GMMA unit. A lone call (one CTA per SM) pays none of it beyond its fixed time and chain; a launch of many one-tile
#: CTAs pays it once per CTA beyond the first on each SM (ASSUMPTION that the first CTA's part is the lone path's, so
#: not counted twice; fitted on the family's fit rows). That SM time is on one SM's serial path, beside its CTAs' tile
#: chain, while the other SMs' loads stream: max(body, chain + (ceil(n / U) - 1) x cta_serial) replaces
#: max(body, chain) + ceil(n / U) x cta_serial (many one-tile CTAs cost their SM time, many long CTAs their bytes);
#: the prologue's dependent loads of every wave but the first (sync_steps x sync[kind], which the other kinds pay
#: outside the max) are on that serial path too: a later wave's CTAs start as co-resident ones leave, while the other
#: two CTAs of their SM stream
#: An op's `cta_extra` x (simulator.ops) is the share of cta_serial its shape's CTAs add to that SM time (the GMMA
#: kernel's verification CTAs: work per GMMA column, simulator.kernels.xqa XQA_GMMA_COL_SHARE), paid by every CTA on
#: the SM, the first included (the lone path was fitted without it): (ceil(n / U) - 1 + x ceil(n / U)) x cta_serial;
#: x = 0 (the column absent) leaves the rule above as it was
CTA_SERIAL_AFTER_FIRST = (KIND_CODE["attn_xqa_fp8kv"],)
#: kinds of CTA_ALONE whose SMs start each wave in step: TensorRT-LLM's XQA mha.cu (attn_xqa; flashinfer-python 0.6.4
#: csrc/xqa/mha.cu kernel_mha_impl). Its CTAs of one launch are alike (the same tiles, the same prologue: barrier init,
#: PDL wait, Q load) and alone on their SMs, and the launch dispatches the first wave at once: every SM issues its first
#: tile's K / V loads at the same moment (the 2 K and 2 V shared-memory buffers hold a whole 256-key tile, so a one-tile
#: CTA's load is one burst) and the wave's bytes arrive at the device's rate, not beside other SMs' MMAs and turnovers.
#: An SM's CTA ends, and the next one starts there, when its share of that burst has arrived and its tile is computed,
#: so the burst spreads the SMs' starts over its own length: after w waves their phases are spread over about w bursts,
#: and a wave's load overlaps the other SMs' compute and turnover except about 1/w of it (the 1/w shape read from this
#: picture, an ASSUMPTION). On one SM's serial path this adds
#:   lock = LOCKSTEP_SHARE x (memory_s' / waves) x sum_{w = 2..waves} 1 / w       (lockstep_exposure)
#: to chain + waves x (fill_m + c_tile) + (waves - 1) x cta_fixed: nothing for one wave (the fill already holds its
#: load), about 0.5 / 0.8 / 1.7 shares of a wave's load at 2 / 3 / 8 waves, 3 at 32 (where the streaming path is longer
#: anyway)
CTA_LOCKSTEP = (KIND_CODE["attn_xqa"],)
#: the exposed share of one wave's load per harmonic step (lockstep_exposure). FITTED (one dimension, the other attn_xqa
#: terms refitted on their own fit rows until it settled: 1.74 -> 1.86 -> 1.90 -> 1.91; with the per-SM stream ceiling
#: candidate (SM_STREAM_CEILING_CANDIDATE) and the terms it moved, refitted together: 2.02, not shipped) on the lock-step
#: W-sweep
#: (simulator.calibration.fit_production_attention.xqa_lockstep_share on xqa_lock_nvidia-h100-80gb-hbm3_2026-11-27.csv:
#: bf16 one-tile Llama-3.1-8B CTAs in W = 1..8 nearly full waves at 1 / 2 / 3 / 4 filled 64-key slices, H100 SXM,
#: lab/kernels/measure_xqa_attention.py --grid lock; sweep rms log error 0.084 at the earlier assumed 1 -> 0.039; 0.038
#: at 2.02).
#: Fitted per slice count it is 1.6 / 1.5 / 2.0 / 2.0: a tile of 3-4 slices loads in two dependent steps (the gemm1
#: walk, simulator/kernels/xqa.py), two bursts per wave; one share for both is what ships (the op rows carry no burst
#: count)
LOCKSTEP_SHARE = 1.91
#: per-SM stream ceilings (bytes / s per SM, by kind): a kernel whose CTAs each walk their K / V tiles through a fixed
#: set of shared-memory buffers (TensorRT-LLM's XQA mha.cu: 2 K and 2 V buffers of one 256-key tile, one CTA per SM;
#: mha_sm90.cu: its TMA ring) draws at most a bounded number of bytes in flight per SM, so its SM streams at no more than
#: a per-SM rate however idle the DRAM is. The busiest SM holds ceil(n / U) of the launch's n CTAs (one after another, or
#: side by side, on that SM), each streaming its share of the launch's HBM bytes: its stream takes
#:   ceil(n / U) x (hbm_bytes / n) / rate
#: and the launch's memory time is the longer of that and the chip's fitted HBM time (the aggregate rate = min(HBM
#: rate, busy SMs x per-SM rate)). A launch of fewer CTAs than the HBM rate / per-SM rate is bound by it; one of a few
#: more than a whole number of waves pays its last CTAs' stream on their own SMs. Empty = no ceiling (the rule before).
#: FITTED (one dimension per kind, every other term as committed;
#: simulator.calibration.fit_production_attention.xqa_stream_per_sm) on the named scan rows (xqa_stream_fit_rows: one
#: variable, the launch's unsplit CTAs 8 -> 400 at a fixed long chain): xqa_x11_nvidia-h100-80gb-hbm3_2026-11-27.csv
#: (H100 SXM, flashinfer-python 0.6.4, lab/kernels/measure_xqa_attention.py --grid x11). attn_xqa: 49.51 GB/s per SM on
#: the 33 bf16 rows (q 1 / 2 / 4; 8 CTAs of 16384 keys measured 160 us, 8 x 8.4 MB: 52 GB/s per SM; main's model priced
#: them 79 us). The procedure was committed before the call, the rate fitted after it: 50.58 GB/s at first (the rows' rms
#: log error 0.262 without a ceiling -> 0.064), then, the ceiling moving the attn_xqa fit rows of few CTAs, refitted with
#: the terms it moves until they settled (fit_production_attention --write, XQA_ROW_SHARE, LOCKSTEP_SHARE): 49.51, rms
#: 0.071. attn_xqa_fp8kv: none: on its 8 rows the rms is flat (0.1905) for every rate above ~100 GB/s per SM, i.e. no
#: ceiling binds in the GMMA kernel's scan (its misses there, +20..+35 % at 8-96 CTAs and -8 % at 400, are its per-tile
#: chain, not a stream ceiling): the rate is not identified and none is set
#: NOT SHIPPED: on the eleventh XQA grid (45 blind shapes, prices of main's model committed before the call, the
#: candidate priced by the fitting procedure fixed before it) the candidate with its refit scored 9.3 / 17.8 % against
#: main's 8.6 / 18.3 %, 9 of 11 regimes for both: no blind row reached the few-CTA regime the ceiling fixes (the port's
#: split launches those shapes at 72-128 CTAs), and the refit it forces made the tenth grid 2 of 7 -> 1 of 7. The
#: fitted rate stays as the candidate, with its scan; a blind grid of few-CTA long-chain launches (TensorRT-LLM's split
#: for few KV heads at long context) decides it.
#: SHIPPED since (SM_STREAM_CEILING below): the same procedure under main's other terms, none refitted, gives 50.58 GB/s
#: per SM (the scan's bf16 rms 0.262 -> 0.064); the twelfth XQA grid (xqa_x12_*.csv, priced before the call:
#: 44 blind rows, 24 in a first call and the rest in a second) put it where it binds: 9 few-CTA long-chain bf16 launches under TensorRT-LLM's split
#: (Llama-3.1-70B at TP 8 and Llama-3.1-8B at TP 4, batch 1-3, 16K-180K tokens, 21-53 CTAs): main's model |error|
#: median / p90 19.2 / 25.5 % (signed -19 %, MISSED), the ceiling 3.4 / 7.8 % (met; the candidate as fitted, with
#: its refit, 2.9 / 6.9 %); the grid's other regimes did not move (all 44 rows: main 10.3 / 19.8 %, 5 of 9 regimes; shipped
#: 7.6 / 16.6 %, 6 of 9). What it costs (LOOKED-AT, campaign rows):
#: one-tile bf16 CTAs at batch 1-4 and 16-64 keys (8-32 CTAs of one short burst, which arrives in one latency rather
#: than at the per-SM rate) +3..+9 points; the bf16 fit rows' rms log error 0.0517 -> 0.0594 with the fitted terms
#: kept (they are NOT refitted with the ceiling: that refit, e4c53d3, moved the tenth grid 2 of 7 -> 1 of 7 regimes)
SM_STREAM_CEILING_CANDIDATE: dict = {"attn_xqa": 49.51e9}
SM_STREAM_CEILING: dict = {"attn_xqa": 50.58e9}
#: a device's fitted file may set a kind's per-SM rate (stream_per_sm_gbs, hwmodels.spec.Efficiency
#: stream_per_sm_bytes_s): it replaces this table's for that kind (FlashMLA's sparse prefill kernel over decode rows,
#: attn_flashmla_sparse_fwd, fitted on the H200: simulator/calibration/flashmla_sparse_h200.py fit_rows)
#: kinds whose per-SM stream (SM_STREAM_CEILING) carries every byte a CTA reads, its L2 hits too: FlashMLA's sparse
#: prefill kernel at 128 heads runs two CTAs a row (one per 64 heads, not a cluster: sparse_attn_fwd_kernel's grid is
#: (h / 64) x rows), each gathering the row's k tokens through its own SM, the second mostly from the L2; the DRAM
#: serves the row once. () = the ceiling on the bytes from HBM alone
SM_STREAM_THROUGH_L2: tuple = (KIND_CODE["attn_flashmla_sparse_fwd"],)
#: kinds whose per-SM stream ceiling (SM_STREAM_CEILING) binds wave by wave, not over the launch: a CTA_ALONE kind's
#: CTA (one per SM, TensorRT-LLM's XQA mha.cu) of a later wave starts only when one of the earlier wave exits, so its
#: stream cannot overlap the earlier waves'. Each of the launch's ceil(n / U) waves streams its CTAs' bytes at the
#: longer of the chip's fitted HBM time and one CTA's bytes at the per-SM rate, and the waves add, the last wave's CTAs
#: starting SM_STREAM_TAIL_HEAD of a wave early (b = bytes / n, r = the last wave's CTAs; never below the rule before):
#:   memory_s = (waves - 1 - HEAD) x max(U b / HBM, b / rate) + max(r b / HBM, b / rate)
#: (the rule before: max(n b / HBM, ceil(n / U) b / rate), the busiest SM's CTAs beside the others' full waves). A launch
#: of a full wave and r << U CTAs pays the r CTAs' whole stream at the per-SM rate after the first wave
#: (Llama-3.1-8B bf16 at batch 17, 2500 tokens: 132 CTAs of 1.28 MB in 61 us at 2.78 TB/s, then 4 more alone in 25
#: us at 50.6 GB/s). Only CTAs of at least SM_STREAM_TAIL_MIN_TILES serial tiles (a stream: a one-tile CTA's burst
#: arrives in about one latency, not at the per-SM rate). No parameter is fitted: the rate is SM_STREAM_CEILING's.
#: SHIPPED on the fifteenth xqa blind grid (xqa_x15_*.csv: 29 bf16 rows priced before the call, xqa_x15_predictions.csv,
#: prices at 3792c83 with the rule on, main's at 60b5b38): two waves of 136-200 CTAs 8.6 / 15.7 % -> 4.8 / 11.2 %
#: (signed -8.6 -> -2.7 %), below half the SMs and the controls unmoved; 2 of 3 regimes for both, pooled 8.0 / 16.5 ->
#: 5.7 / 15.8 %. SM_STREAM_TAIL_CANDIDATE = the kinds it prices; () = the model before (the xqa fits run without it:
#: fit_production_attention._xqa_ceiling_off takes the xqa kinds' ceiling away, and the rule with it)
SM_STREAM_TAIL_CANDIDATE = (KIND_CODE["attn_xqa"],)
#: + FlashMLA's sparse prefill kernel over decode rows (one CTA an SM streaming its row; rows grid 2, blind, with the
#: kind's fitted terms: simulator/strategies/dsa.py SPARSE_FWD_ROWS_KIND)
SM_STREAM_TAIL: tuple = SM_STREAM_TAIL_CANDIDATE + (KIND_CODE["attn_flashmla_sparse_fwd"],)
SM_STREAM_TAIL_MIN_TILES = 2.0
#: the share of the last full wave's stream the last wave's CTAs start ahead of its end: the first CTAs of a wave to
#: finish free their SMs before the wave's mean (the lock-step spread, CTA_LOCKSTEP); 0 = the waves strictly one after
#: another. FITTED (one dimension, a grid search in steps of 0.02, every other term as committed, the candidate on) ONLY
#: on the six LOOKED-AT bf16 rows of 136-192 CTAs of >= 2 tiles measured before the fifteenth grid (the eleventh grid's
#: 136 / 192-CTA scan rows at 16384 tokens, q 1 / 2, and the fourteenth grid's 136-160-CTA rows): rms log error 0.097
#: at 0 -> 0.037 at 0.14 (main's model: -8.6..-17.8 % on them)
SM_STREAM_TAIL_HEAD = 0.14
#: the soft knee of a one-wave stream (candidate, helper s19xqa, the sixteenth xqa grid): a launch of one wave whose n
#: CTAs each stream b bytes (CTAs of >= SM_STREAM_TAIL_MIN_TILES serial tiles) draws at most the per-SM rate per CTA
#: (SM_STREAM_CEILING) and at most the chip's fitted HBM rate in all; the rule above takes the harder of the two,
#: max(a, c) with a = n b / HBM and c = b / rate, flat in n until they meet. Measured (the fifteenth grid's diagnostic
#: scan xqa_x15d, LOOKED-AT: 8 -> 128 unsplit mha.cu CTAs at 1100 / 2600 tokens) the time rises smoothly through the
#: crossover: as the aggregate demand nears the HBM rate the DRAM queues lengthen each CTA's round trips, so the per-SM
#: stream slows before the chip is saturated. Priced as a soft maximum (a^p + c^p)^(1/p) (never below the rule above)
#: where the launch is one wave. SM_STREAM_SOFT_P FITTED JOINTLY with simulator.kernels.xqa.XQA_LATE_LOADS
#: (simulator.calibration.fit_production_attention.xqa_soft_knee, a grid in p x a bounded search in loads, every other
#: term as committed) ONLY on LOOKED-AT bf16 rows (grids 10-15 and the x15d scan, PDL on; 172 rows): p 4.0 (grid
#: 1.5-8 in steps of 0.25), loads 15.86 (main's 18.01); rms log error 0.0679 (main) -> 0.0555. The per-SM rate refitted
#: beside them (48-64 GB/s) stays at 50 GB/s (rms 0.0552): kept at the shipped 50.58. On the x15d scan it lifts the
#: short chains' knee (1100 tokens, 48-64 CTAs: -17 -> -10 %) but prices the scan's long chains (16384 tokens, 48-80
#: CTAs) +8..+11 % (main's -2..+4 %). SHIPPED on the sixteenth xqa blind grid (xqa_x16_*.csv: 38 rows priced before the
#: call, xqa_x16_predictions.csv, commit c5f0136; main's model c073267): 4 of 5 regimes for both, pooled 5.9 / 17.5 ->
#: 2.9 / 12.5 %; the knee (24-64 unsplit CTAs of 3-20 tiles) 8.7 / 17.8 -> 2.7 / 10.4 % (signed -8.7 -> -2.4 %), the
#: one-wave middle 4.8 / 7.1 -> 3.1 / 5.4 %, q 2 missed by both (10.9 / 22.1 -> 10.3 / 16.3 %), controls unmoved.
#: SM_STREAM_SOFT_CANDIDATE = the kinds it prices; SM_STREAM_SOFT = () is the model before (with
#: simulator.kernels.xqa.XQA_LATE_LOADS_HARD; the xqa fits run without it: fit_production_attention._xqa_ceiling_off)
SM_STREAM_SOFT_CANDIDATE = (KIND_CODE["attn_xqa"],)
#: + FlashMLA's sparse prefill kernel over decode rows (as SM_STREAM_TAIL)
SM_STREAM_SOFT: tuple = SM_STREAM_SOFT_CANDIDATE + (KIND_CODE["attn_flashmla_sparse_fwd"],)
SM_STREAM_SOFT_P = 4.0


def lockstep_exposure(waves):
    """Waves' worth of one wave's K/V load that a CTA_LOCKSTEP launch of `waves` waves exposes on its SMs' serial path:
    LOCKSTEP_SHARE x (H(waves) - 1), H the harmonic number (exact to 64 waves, its asymptotic form beyond)."""
    w = np.maximum(np.asarray(waves, dtype=float), 1.0)
    tab = np.concatenate([[0.0, 0.0], np.cumsum(1.0 / np.arange(2, 65, dtype=float))])
    small = tab[np.clip(w, 1, 64).astype(int)]
    big = np.log(w) + 0.5772156649 + 0.5 / w - 1.0
    return LOCKSTEP_SHARE * np.where(w <= 64, small, big)
#: kinds whose tile chain and body are not either / or but compound: FlashInfer's CUDA-core decode kernel
#: (include/flashinfer/attention/decode.cuh @ f1e6fdcb, BatchDecodeWithPagedKVCacheDevice: num_stages_smem = 2, the
#: K / V loads of tile i + 2 issued while tile i computes; its q.k, shuffles, exp and p.v are CUDA-core FMAs issued by
#: the SM's schedulers). A CTA alone on its SM waits on its tile's latency chain (the chain term, iter[kind] per tile);
#: k CTAs resident on the busiest SM share its issue slots (the body's compute term, which the family module prices on
#: that SM: simulator/kernels/flashinfer.py fi_decode_crowding). A warp then waits for both, so a tile costs
#: (chain^p + body^p)^(1/p) with the device's committed overlap exponent p (overlap_p, the regimes fit) instead of the
#: larger of the two: the latency-bound tile at k = 1 grows smoothly into the issue-bound k x tile as k rises. Only
#: the wave model's max(body, chain) changes for these kinds (nothing when overlap_p is uncalibrated)
CHAIN_OVERLAP = tuple(KIND_CODE[k] for k in ("attn_fi_decode", "attn_fi_decode_fp8kv"))
#: ... and the HBM stream is a ceiling of its own, not a third compounded term: the decode kernel's K / V tiles are
#: cp.async copies issued num_stages_smem = 2 tiles ahead of their use (decode.cuh @ f1e6fdcb,
#: BatchDecodeWithPagedKVCacheDevice: wait_group<2 x num_stages_smem - 1> before compute_qk / update_local_state, the
#: next stage's pred_load after it), so the transfer runs under the issue of the tiles before it and the wave costs
#: max(memory, (chain^p + compute^p)^(1/p)) instead of ((compute^p + memory^p)^(1/p))^p compounded with the chain,
#: which charged both the stream and the issue where a many-wave launch has them close (B >= 144 at 300-16K tokens)
CHAIN_OVERLAP_BW_CEILING = True
#: ... and only a launch's first wave compounds them: its CTAs start together on every SM (one launch, the same
#: prologue, decode.cuh @ f1e6fdcb BatchDecodeWithPagedKVCacheDevice: 3 dependent loads, then the first num_stages_smem
#: tiles' cp.async, then wait_group before the first compute_qk), so their latency waits and their issue bursts fall at
#: the same moments and neither hides the other. A CTA of a later wave starts when one of the first wave's leaves its SM
#: (the block scheduler refills a freed slot at once), and the first wave's CTAs leave one by one (their chains drift by
#: the issue order of the SM's 4 schedulers), so from the second wave on the resident CTAs are out of phase: one CTA's
#: latency wait is another's issue, and the SM runs max(issue, chain) per wave. A launch of w waves costs
#: overlap(issue, chain) / w + (w - 1) / w x max(issue, chain) (no constant: the compounding exponent is the device's
#: committed overlap_p). The decode fit rows are all one-wave launches (B <= 64 x 8 KV heads <= 6-9 slots x 132 SMs),
#: but for a few, and its refit moved the fit rows' rms log error bf16 / fp8 0.0721 / 0.0754 -> 0.0719 / 0.0753; the HBM
#: ceiling is per wave (a later wave costs max(memory, issue, chain) / w). The fourth decode blind grid's fp8 many-wave
#: calls (LOOKED-AT while choosing it: +8..+16 % with the compounded chain) go to +2..+7 %. Rejected on the fit rows: the
#: first wave compounding its HBM stream too (overlap(overlap(compute, memory), chain)): bf16 rms 0.072 -> 0.088. Tested
#: on the fifth decode blind grid (39 new shapes, H100 2026-11-27, both prices committed before measuring,
#: benchmarks/calibration_accuracy.py): fp8 many-wave middle |error| median / p90 11.5 / 20.0 % -> 4.9 / 6.8; fp8
#: many-wave short (3-8 tiles per CTA) 4.0 / 8.8 -> 11.8 / 15.3 (too fast: a per-CTA time of many-wave launches that
#: the compounded chain had stood in for; docs/KNOWN_GAPS.md)
CHAIN_OVERLAP_STAGGERED = True
#: ... and a CTA of a later wave issues nothing until its own first tile has landed (decode.cuh @ f1e6fdcb,
#: BatchDecodeWithPagedKVCacheDevice: the prologue's cp.async of the first num_stages_smem tiles, then wait_group
#: before the first compute_qk): a slot freed by a leaving CTA stays without issue for one iteration of the chain
#: (iter[kind], the lone CTA's tile time) while its successor fills, so the SM's issue of a later wave is issue + iter
#: instead of issue; HBM stays a ceiling of its own (the other CTAs' streams run through the fill): a later wave costs
#: max(memory, issue + iter, chain). No constant (iter is the kind's fitted tile time). Seen on LOOKED-AT rows before it
#: was chosen: the fp8 many-wave short calls (Llama-3.1-8B fp8, B 128-1024 at 16-256 tokens, 19 rows of five grids)
#: -10.6 % median -> -1.1 % (|error| 10.6 -> 3.2 %, p90 32 -> 14 %; at 16-28 tokens still -13..-17 %); the bf16
#: Llama-3.1-8B many-wave calls are HBM-bound and do not move, Llama-3.1-70B bf16 many-wave +1..+5 points; the fit rows
#: are one-wave launches (rms unchanged). Tested on the sixth decode blind grid (74 new shapes, H100 2026-11-27, both
#: prices committed before measuring, benchmarks/calibration_accuracy.py): fp8 many-wave short (20 shapes, Llama-3.1-8B
#: at TP 1 / 2, Llama-3.1-70B at TP 2) |error| median / p90 13.1 / 24.8 % -> 4.4 / 13.1 (still -11..-16 % at 40-52
#: tokens); bf16 many-wave short 4.3 / 9.7 -> 3.7 / 9.7
CHAIN_OVERLAP_WAVE_FILL = True
#: the CUDA-core decode kinds' dependent-load iteration under load: a load that queues behind the launch's own HBM
#: traffic waits longer than the idle DRAM latency the lone-CTA fit rows measure. The iteration (iter[kind]) grows by the
#: queueing wait of an M/M/1-like memory queue in units of the idle latency: iter(u) = iter + sync[kind] x c x u / (1 - u),
#: u = the launch's HBM bytes / (bw_hbm x its LOADED time) (its device-wide traffic as a share of the datasheet
#: bandwidth, at the time the loaded chain gives: a closed loop, solved by bisection between 0 and the unloaded time's
#: u), sync[kind] = the device's MEASURED idle DRAM latency (0.3494 us). c (CHAIN_LOADED_C) from the CUDA-core decode CTA probe's records (LOOKED-AT,
#: lab/kernels/probe_fi_decode_ctas.py, fi_cta_probe_*_records.csv.gz, H100 2026-11-27): Llama-3.1-8B bf16 at 204
#: tokens, S = 2, the full-chunk CTAs (16 iterations of 8 keys) on SMs holding 8 CTAs take 18.6 us at B 14 (device-wide
#: K/V traffic 0.46 TB/s, u 0.137) and 21.6 us at B 60 (1.78 TB/s, u 0.531): +0.1875 us per iteration over
#: u / (1 - u) 0.159 -> 1.132, c = 0.1875 / (0.3494 x 0.973) = 0.55. Only the decode kinds (their chain is the one the
#: probe timed); u is capped at CHAIN_LOADED_U_MAX (the queue's form has no meaning at the ceiling, where the HBM term
#: prices the call)
#: TensorRT-LLM's GMMA XQA kernel (attn_xqa_fp8kv) joins them: its steady tile is its loader warp's page-index load
#: (simulator/kernels/xqa.py XQA_GMMA_STEADY_SHARE), a dependent global load, at the same c (not refitted)
CHAIN_LOADED = tuple(KIND_CODE[k] for k in ("attn_fi_decode", "attn_fi_decode_fp8kv", "attn_xqa_fp8kv"))
CHAIN_LOADED_C = 0.55
CHAIN_LOADED_U_MAX = 0.9
CHAIN_LOADED_STEPS = 8
#: kinds whose tile chain ADDS to the SM's shared issue, with HBM bandwidth a ceiling of its own: vLLM's Triton unified
#: attention (simulator/kernels/triton_engines.py triton_vllm: 4 warps per program, 4-5 programs per SM from the
#: measured registers) and SGLang's Triton grouped decode kernel (triton_sgl: the same loop, a token-location load then
#: the K / V at it, then q.k, softmax, p.v, each iteration; 4 warps, 4-6 programs per SM measured). A program's iteration is a dependent chain (block-table entry -> K / V at it -> q.k dot -> softmax ->
#: p.v dot: the dots need the tile the chain just brought), and the dots, exponentials and masks of the k programs
#: resident on an SM are issued by that SM's 4 schedulers. Alone on its SM a program pays its chain (iter[kind] per
#: tile: the lone program's loads) plus its own issue; k programs add k tiles' issue (the compute term: flops over the
#: kind's fitted rate, ceil(n / U) programs' tiles on the busiest SM). A wave of tiles costs
#: max(memory, chain + compute): the lone program's latency-bound iteration grows by one issue share per co-resident
#: program, and a bandwidth-bound launch's loads queue in HBM. Additive rather than compounded with the device's overlap
#: exponent: on the fit rows (Llama-3.1-8B decode, 1K-16K, B <= 64; fit_production_attention.fit_triton_vllm) the
#: rms log error of (chain^p + compute^p)^(1/p) is 0.055 at p = 1, 0.058 at 1.5, 0.062 at 2, 0.082 at the device's 2.73.
#: A dependent load's latency grows with the traffic it queues behind: the lone chain (iter[kind]) is what one program
#: meets among programs that together draw a small share of HBM, and a wave adds chain_queue[kind] (Efficiency.chain_queue,
#: fitted) x its HBM streaming time: max(memory, chain + compute + chain_queue x memory). MEASURED on the held-out rows
#: (LOOKED-AT): one 2D program alone walks its 32-key tiles at 1.12 us each (Llama-3.1-70B TP8 verification, batch 1,
#: context 4096) where 128 of them, one per SM, take 1.53 us (Llama-3.1-8B decode, batch 16, context 16384)
CHAIN_ISSUE = tuple(KIND_CODE[k] for k in ("attn_triton_vllm", "attn_triton_vllm_fp8kv", "attn_triton_sgl", "attn_triton_sgl_fp8kv"))
#: SGLang's Triton decode kernel's bf16 kind among CHAIN_ISSUE (simulator/kernels/triton_engines.py triton_sgl): the
#: co-resident programs' issue hides in the lone program's load waits, and the chain meets the HBM stream at a knee. A
#: program's iteration is a synchronous token-location load, then the K / V of the NEXT iteration issued as async copies
#: before this one's dots (the two-stage pipeline; decode_attention.py _fwd_grouped_kernel_stage1, sglang 0.5.6), so a
#: program holds its 4 warps idle on a dependent load every iteration: the k programs resident on an SM take turns in
#: those waits, and their dots / softmax share the SM's issue slots without lengthening the lone chain (the busiest
#: SM's issue costs one program's share: compute / k, k the programs per SM of one wave), while the chain's loads queue
#: behind the launch's HBM traffic as it nears the stream rate: wave = (a^p + memory^p)^(1/p), a = chain + compute / k
#: + chain_queue x memory, p = CHAIN_ISSUE_HIDDEN_P[kind], FITTED (simulator.calibration.fit_production_attention
#: sgl_coresident_p_scan: the minimum of the rms log error over the family's bf16 fit rows and the co-resident scan,
#: 36 rows, 0.0549 at 4.5; main's form, chain + every program's issue + chain_queue x memory, 0.0694; the other terms
#: as fitted, not refitted). MEASURED scan (H100 2026-11-27, lab/kernels/sgl_triton_fit6.py, Llama-3.1-8B heads 32/8,
#: 64-512 programs, 1-4 per SM): batch 1-8 x 65536 562, 570, 566, 590, 626, 669, 729, 826 us (a second program per SM
#: adds nothing; the rise after it follows the K / V traffic, 2.15 GB at batch 8: 751 us at the stream rate), batch 1,
#: 2, 4, 8 x 16384 142, 144, 153, 207 us. The fp8 kind keeps main's form: its memory term is its fitted conversion-bound
#: rate, not the HBM queue, and its scan rows (batch 1, 2, 4, 6, 8) are within -1..+5 % as main prices them
CHAIN_ISSUE_HIDDEN_P = {KIND_CODE["attn_triton_sgl"]: 4.5}
#: kinds whose loop rounds are a closed loop of loads, so that the HBM queue adds to the latency chain instead of
#: hiding behind it: TensorRT-LLM's indexer top-k (cpp/tensorrt_llm/kernels/indexerTopK.cu @ 07339e94,
#: processHistogramStep's vectorized_process: each thread holds ONE float4 load in flight, its next load issued after
#: the shared-memory atomicAdd of the values it brought; one CTA per row (split work aside), up to 4 per SM, no cp.async
#: or prefetch). Each load round of a CTA then lasts its unloaded round trip (iter[kind]: the chain) plus its wait in the
#: HBM queue behind the rounds in flight on the other SMs: a closed queue of N requests, whose round trip goes from the
#: latency (few rows: chain >> body) to N x service (bandwidth-bound: body >> chain) through a knee where both count.
#: Priced as the smooth knee (chain^p + body^p)^(1/p) with p = CHAIN_QUEUED_P in place of max(body, chain) + fill.
#: p = 1.5 (ASSUMPTION: chosen among 1 / 1.5 / 2 / 3 with grids 5-7's TensorRT-LLM rows LOOKED-AT, |error| median / p90
#: over their 145 non-fit rows 12.8 / 33.3 % at max(), 10.1 / 30.4 at 1.5, 13.7 / 44.5 at 1 (additive, too slow where
#: many CTAs per SM stream), 12.1 / 35.2 at 2; the fit rows, single-CTA launches whose body is small, do not constrain it:
#: rms log error 0.0591 -> 0.0588). Long multi-wave prefill launches are the knee: 640 x 250K measured 624 us where the
#: chain is ~387 us and the HBM stream ~286 us. Judged blind on grid 8 (simulator/calibration/topk_engines.py)
CHAIN_QUEUED = tuple(KIND_CODE[k] for k in ("topk_trtllm",))
CHAIN_QUEUED_P = 1.5
#: the knee's exponent where the launch keeps two or more of its CTAs resident on an SM (per_sm = min(ceil(units / SMs),
#: the op's resident CTAs) >= 2, units in the op's parallel_units): each SM then holds two CTAs' worth of closed-loop
#: loads in flight (indexerTopK.cu @ 07339e94: one float4 a thread, 512 threads a CTA, two CTAs by registers), so the
#: HBM queue stays full through one CTA's on-chip phases (scans, sorts) and the round trip turns from latency to queue
#: over a shorter stretch (a closed queue's knee sharpens with its population); None = CHAIN_QUEUED_P everywhere (the
#: rule before grid 15). SHIPPED at 2.0 = simulator/kernels/topk_trtllm.py QUEUE_P_SHARED (scanned on grids 11-14's
#: looked-at rows, topk_engines.fit_queue_p_shared; judged blind on grid 15 with the pair shares + L2 term: 6 of 7
#: regimes, main's rule 2 of 7); the terms fitted before it keep their values (topk_engines.as_fitted prices their fits
#: under the rule they were fitted with). WITHDRAWN after the on-chip grid (2026-11-29): with the job's on-chip rounds
#: off the load chain (L1_AT_L2_ROUND, topk_trtllm.ONCHIP_JOB) the same scan's best exponent is 1.5, the lone CTA's
#: knee (rms log error 0.0766 over the 133 rows; the sharper knee had stood in for the job charged at the HBM round),
#: so None: one knee, CHAIN_QUEUED_P, everywhere (simulator/calibration/topk_trtllm_onchip.py)
CHAIN_QUEUED_P_SHARED: float | None = None
#: kinds whose CTAs each sweep their own row in address order, several times in one launch (the production top-k
#: kernels, simulator/kernels/topk_production.py: SGLang's topk.cu sweeps a row twice, `for (idx = tx; idx < length;
#: idx += BLOCK_SIZE)`, then gathers candidates of it). Their reads come in two parts with different reuse distances:
#:   first sweep   (bytes_read - reread_bytes) re-reads what the kernel before it wrote (the indexer; the previous call
#:                 when timed back to back): between two touches of a value the whole tensor passes, reuse distance =
#:                 working_set
#:   re-sweeps     (reread_bytes: later sweeps and gathers of the same row by the same CTA): between two touches only
#:                 the rows in flight pass, reuse distance = working_set x min(1, resident CTAs / CTAs), resident CTAs
#:                 = U x cta_slots[kind]
#: The share of each that hits is the device's measured curve for that reuse pattern at distance / (L2 x l2_fraction)
#: (Efficiency.l2_sweep_hit "first" / "again", `sweep_hit`; on the H100 partial, not a step, and short of the nominal
#: size: a re-read tensor hits fully to 0.80 of the L2 and ~nothing past 0.88, rows re-swept in flight fade from 0.97
#: at 0.6 to ~0.05 at 0.92); uncalibrated, all-or-nothing at the L2's size (a cyclic scan longer than an LRU cache
#: keeps nothing)
SWEEP_REREAD = tuple(KIND_CODE[k] for k in ("topk_sglang", "topk_trtllm", "topk_flashinfer"))
#: kinds whose `sync_steps` count one CTA's barrier phases rather than the kernel's: SGLang's top-k
#: (sgl-kernel/csrc/elementwise/topk.cu @ 06c48ca8, simulator/kernels/topk_production.py SGL_PHASES) runs one CTA per
#: row and one resident CTA per SM, and each CTA walks its own `run_cumsum` / threshold / clear phases (a dozen
#: `__syncthreads()` each) after its first sweep and in every refinement round, so every wave pays them:
#: waves x sync_steps x sync[kind] (the other kinds pay sync_steps x sync[kind] once per kernel); FlashInfer's filtered
#: top-k is the same algorithm (flashinfer topk.cuh FilteredTopKUnifiedKernel; its radix kernel runs one wave)
CTA_SYNC_PER_WAVE = (KIND_CODE["topk_sglang"], KIND_CODE["topk_flashinfer"])
#: elements a chip keeps in flight in PyTorch's non-vectorized elementwise loop, per SM: 2048 resident threads (CUDA C++
#: Programming Guide, "Features and Technical Specifications": max resident threads per SM for compute capability 8.0
#: and 9.0) x 4 elements per thread (aten/src/ATen/native/cuda/Loops.cuh: elementwise_kernel<128, 4>, 128 threads of 4
#: elements: the `at::native::elementwise_kernel<128, 4, ...>` repeat_kv runs, CUPTI names in graph_chains_*_v6.csv).
#: 128-thread blocks at 2048 threads need 16 resident blocks per SM (the limit is 32 on sm_80 / sm_90).
INFLIGHT_ELEMS_PER_UNIT = 2048.0 * 4.0
#: the largest source row measured, as a share of the L2 (B 1 T 65536 hd 256: 33.6 MB of a 50 MiB L2,
#: graph_chains_*_v6.csv): far() is held beyond it. The one larger row measured (repeat_kv at T 262144, 67 MB, split
#: into 32-bit sub-kernels: regimes_*_v4.csv) runs at the same 2.5 ps per element as this one, no faster nor slower.
FAR_MAX = 0.64
_BROADCAST = KIND_CODE["copy_broadcast"]


def _in(kind, members) -> np.ndarray:
    """np.isin(kind, members) for op-kind codes, as one gather through a lookup table over KINDS (the same booleans;
    np.isin compares every row with every member)."""
    lut = np.zeros(len(KINDS), dtype=bool)
    lut[np.asarray(list(members), dtype=np.intp)] = True
    return lut[kind]


def _pnorm_on(mask, a, b, p) -> np.ndarray:
    """hi * ((a / hi)^p + (b / hi)^p)^(1 / p), hi = max(a, b, 1e-30): the soft maximum the wave model's knees use,
    evaluated only on the rows where `mask` holds (0 elsewhere; every caller selects with the same mask). The values
    are those of the whole-table expression: the powers dominate the wave model's time, and most knees apply to one
    or two kinds."""
    mask = np.asarray(mask, dtype=bool)
    out = np.zeros(mask.shape)
    idx = np.flatnonzero(mask)
    if not len(idx):
        return out

    def pick(x):   # a scalar stays the scalar the whole-table expression used
        return np.broadcast_to(np.asarray(x, dtype=np.float64), mask.shape)[idx] if np.ndim(x) else x

    a_, b_, p_ = pick(a), pick(b), pick(p)
    hi = np.maximum(np.maximum(a_, b_), 1e-30)
    out[idx] = hi * ((a_ / hi) ** p_ + (b_ / hi) ** p_) ** (1.0 / p_)
    return out


def sweep_hit(eff, pattern: str, set_over_l2):
    """Share of a re-scanned set's re-reads that come from the L2, for sets of `set_over_l2` times the usable L2
    (array): the device's measured curve for `pattern` (Efficiency.l2_sweep_hit, linear between its points, held at
    the ends), else 1 where the set fits and 0 where it does not (SWEEP_REREAD)."""
    x = np.asarray(set_over_l2, dtype=float)
    curve = eff.l2_sweep_hit.get(pattern)
    if curve is None:
        return np.where(x <= 1.0, 1.0, 0.0)
    return np.interp(x, curve[0], curve[1])


def broadcast_s(ops, hw: HardwareSpec, eff) -> np.ndarray | float:
    """Device seconds a broadcast copy adds to its roofline time (module docstring, `broadcast`); 0 for every other op
    and when the device has no broadcast_copy terms (uncalibrated)."""
    b = eff.broadcast_copy
    rr = getattr(ops, "reread_bytes", None)
    if not b or rr is None or not hw.l2_bytes:
        return 0.0
    m = (ops.kind == _BROADCAST) & (rr > 0) & (ops.flops > 0) & (ops.bytes_read > rr)
    if not m.any():
        return 0.0
    i = np.flatnonzero(m)
    read, reread, ws, out = ops.bytes_read[i], rr[i], ops.working_set[i], ops.bytes_written[i]
    uniq = read - reread                          # source bytes, each loaded first from HBM
    G = (read / uniq) * ws / (read / ops.flops[i])   # rep x elements of one source row (flops = elements)
    lg = np.log2(hw.units * INFLIGHT_ELEMS_PER_UNIT / np.maximum(G, 1.0))
    near = (b.get("near_ps_per_byte", 0.0) * np.clip(1.0 + lg, 0.0, 1.0)
            + b.get("near_slope_ps_per_byte", 0.0) * np.maximum(0.0, lg))
    x = np.minimum(ws / hw.l2_bytes, FAR_MAX)
    far = b.get("far_ps_per_byte", 0.0) * np.expm1(x / b.get("far_l2_scale", 1.0))
    extra = np.zeros(len(m))
    extra[i] = (uniq * b.get("lead_ps_per_byte", 0.0) + out * (near + far)) * 1e-12
    return extra


@dataclass
class Priced:
    """Per-row results of `price`. All arrays have one entry per op row; times are for all `count` kernels."""

    time_s: np.ndarray
    compute_s: np.ndarray
    memory_s: np.ndarray
    launch_s: np.ndarray      # launch cost (graph gap, or what the host's launch adds in eager mode)
    fixed_s: np.ndarray       # per-kernel fixed time + in-kernel sync latency (part of the kernel's device time)
    memory_bound: np.ndarray  # bool: memory_s >= compute_s


def spill_passes(ops, hw: HardwareSpec) -> np.ndarray:
    """Passes each op row needs when its declared on-chip working set (`onchip_bytes` per parallel unit)
    exceeds the device's shared memory per unit: ceil(onchip / smem), 1 when it fits, when nothing is
    declared (0) or when the device publishes no per-unit shared memory."""
    onchip = getattr(ops, "onchip_bytes", None)
    smem = hw.smem_per_unit_bytes
    if onchip is None or not smem:
        return np.ones(len(ops.kind))
    return np.where(onchip > 0, np.maximum(1.0, np.ceil(onchip / smem)), 1.0)


def spill_bytes(ops, hw: HardwareSpec) -> np.ndarray | float:
    """Extra bytes re-read because of a spill: (passes - 1) * the op's declared `spill_bytes` per pass."""
    sb = getattr(ops, "spill_bytes", None)
    if sb is None:
        return 0.0
    return (spill_passes(ops, hw) - 1.0) * sb


def _waves(ops, hw: HardwareSpec, eff, device_s, compute_s, hbm_bytes, fixed, n, has_n, U, l2_bytes, hit_bytes,
           it_add=None):
    """device_s of the rows whose kind has a calibrated occupancy (module docstring, `waves`); it_add: seconds added
    to each row's iteration (the loaded latency of CHAIN_LOADED; None = price unloaded, then loaded)."""
    occ = np.array([eff.cta_slots.get(k, 0.0) for k in KINDS])[ops.kind]
    wave = (occ > 0) & has_n
    if not wave.any():
        return device_s
    own = getattr(ops, "resident_ctas", None)
    if own is not None:   # the launch's own occupancy for this shape, where its family module sets one
        occ = np.where(own > 0, own, occ)
    slots = np.where(wave, U * occ, 1.0)
    waves = np.ceil(n / slots)
    eff_m = np.array([eff.memory[k] for k in KINDS])[ops.kind]
    memory_s = hbm_bytes / (hw.hbm_bw_bytes_s * eff_m)
    if eff.l2_bw_bytes_s:
        memory_s = np.maximum(memory_s, l2_bytes / eff.l2_bw_bytes_s)
    if SM_STREAM_CEILING:   # the busiest SM's CTAs at the kind's per-SM stream rate (SM_STREAM_CEILING)
        rate = np.array([(eff.stream_per_sm_bytes_s or {}).get(k, SM_STREAM_CEILING.get(k, 0.0))
                         for k in KINDS])[ops.kind]
        nn = np.maximum(n, 1.0)
        # the bytes a CTA streams through its SM: from HBM, or every byte it reads (SM_STREAM_THROUGH_L2)
        sm_bytes = np.where(_in(ops.kind, SM_STREAM_THROUGH_L2), l2_bytes, hbm_bytes)
        memory_s = np.where(rate > 0.0, np.maximum(memory_s, np.ceil(nn / U) * sm_bytes / nn
                                                   / np.maximum(rate, 1e-30)), memory_s)
        if SM_STREAM_TAIL:   # the ceiling wave by wave, the waves one after another (SM_STREAM_TAIL)
            its = getattr(ops, "serial_iters", None)
            b = hbm_bytes / nn
            per = sm_bytes / nn / np.maximum(rate, 1e-30)
            hbm = b / (hw.hbm_bw_bytes_s * eff_m)
            r = nn - (waves - 1.0) * slots
            full = np.maximum(slots * hbm, per)
            seq = (np.maximum(waves - 1.0 - SM_STREAM_TAIL_HEAD, 0.0) * full + np.maximum(r * hbm, per))
            on = (_in(ops.kind, SM_STREAM_TAIL) & (rate > 0.0) & (waves > 1.0)
                  & (np.asarray(its if its is not None else 0.0) >= SM_STREAM_TAIL_MIN_TILES))
            memory_s = np.where(on, np.maximum(memory_s, seq), memory_s)
        if SM_STREAM_SOFT:   # one wave: the soft knee between the per-SM and the HBM rate (SM_STREAM_SOFT)
            its_s = np.asarray(getattr(ops, "serial_iters", None) if getattr(ops, "serial_iters", None) is not None
                               else 0.0)
            a = hbm_bytes / (hw.hbm_bw_bytes_s * eff_m)
            c = np.ceil(nn / U) * sm_bytes / nn / np.maximum(rate, 1e-30)
            pp = float(SM_STREAM_SOFT_P)
            on = (_in(ops.kind, SM_STREAM_SOFT) & (rate > 0.0) & (waves <= 1.0)
                  & (its_s >= SM_STREAM_TAIL_MIN_TILES))
            memory_s = np.where(on, np.maximum(memory_s, _pnorm_on(on, a, c, pp)), memory_s)
    if CHAIN_TENSOR:   # tensor work on the per-tile chain: the body is the bytes alone (CHAIN_TENSOR)
        compute_s = np.where(_in(ops.kind, CHAIN_TENSOR), 0.0, compute_s)
    if eff.overlap_p:
        p = eff.overlap_p
        hi = np.maximum(np.maximum(compute_s, memory_s), 1e-30)
        body = hi * ((compute_s / hi) ** p + (memory_s / hi) ** p) ** (1.0 / p)
    else:
        body = np.maximum(compute_s, memory_s)
    iters = getattr(ops, "serial_iters", None)
    it = np.array([eff.iter_s.get(k, 0.0) for k in KINDS])[ops.kind]
    if eff.iter_l2_s:   # loads that hit in L2 iterate faster (Efficiency.iter_l2_s)
        it_l2 = np.array([eff.iter_l2_s.get(k, eff.iter_s.get(k, 0.0)) for k in KINDS])[ops.kind]
        share = np.clip(hit_bytes / np.maximum(ops.bytes_read, 1.0), 0.0, 1.0)
        it = it + (it_l2 - it) * share
    if it_add is not None:   # the dependent load's latency under the launch's own HBM traffic (CHAIN_LOADED)
        it = it + it_add
    n_it = iters if iters is not None else 0.0
    chain = waves * n_it * it
    l1 = getattr(ops, "l1_iters", None)
    if (eff.iter_l1_s or L1_AT_L2_ROUND) and l1 is not None:   # iterations off the load path (Efficiency.iter_l1_s)
        it_l1 = np.array([eff.iter_l1_s.get(k, np.nan) for k in KINDS])[ops.kind]
        if L1_AT_L2_ROUND:   # on-chip rounds at the kind's L2 round where no L1 iteration is measured (L1_AT_L2_ROUND)
            l2r = np.array([(eff.iter_l2_s or {}).get(k, eff.iter_s.get(k, np.nan)) for k in KINDS])[ops.kind]
            it_l1 = np.where(np.isnan(it_l1) & _in(ops.kind, L1_AT_L2_ROUND), l2r, it_l1)
        chain = np.where(np.isnan(it_l1), chain, waves * ((n_it - l1) * it + l1 * np.nan_to_num(it_l1)))
    # pipeline fill: the first tiles are loaded before anything overlaps them, so one iteration's share of the
    # shorter of the two terms adds to the longer, once per kernel (later waves start while earlier ones stream): a
    # kernel of one wave of one-tile CTAs pays body + chain, a long chain or many waves max(body, chain)
    fill = np.minimum(body, chain) / np.maximum(waves * n_it, 1.0)
    if CHAIN_PREFETCHED:   # loads in flight ahead of the compute: no fill of their own (CHAIN_PREFETCHED)
        fill = np.where(_in(ops.kind, CHAIN_PREFETCHED), 0.0, fill)
    if CHAIN_COLD_HEAD:   # cold keys: the stream starts after the first item's dependent loads (CHAIN_COLD_HEAD)
        body = np.where(_in(ops.kind, CHAIN_COLD_HEAD) & (np.asarray(n_it) > 0), body + it, body)
    if eff.wave_fixed_s:   # the wave-priced kernels' own fixed time where the kind has one (Efficiency.wave_fixed_s)
        own = np.array([k in eff.wave_fixed_s for k in KINDS])[ops.kind]
        fixed = np.where(own, np.array([eff.wave_fixed_s.get(k, 0.0) for k in KINDS])[ops.kind], fixed)
    cta_fixed = np.array([eff.cta_fixed_s.get(k, 0.0) for k in KINDS])[ops.kind]
    per_cta = 0.0
    if eff.cta_serial_s:   # CTA time co-resident CTAs do not overlap: ceil(CTAs / SMs) per SM (Efficiency.cta_serial_s)
        per_sm = np.ceil(n / U)
        if CTA_SERIAL_AFTER_FIRST:   # the first CTA per SM is the lone path (CTA_SERIAL_AFTER_FIRST)
            after = _in(ops.kind, CTA_SERIAL_AFTER_FIRST)
            extra = getattr(ops, "cta_extra", None)
            on_sm = per_sm
            per_sm = np.where(after, np.maximum(per_sm - 1.0, 0.0), per_sm)
            if extra is not None:   # the shape's added share, every CTA on the SM (CTA_SERIAL_AFTER_FIRST)
                per_sm = np.where(after, per_sm + extra * on_sm, per_sm)
        per_cta = per_sm * np.array([eff.cta_serial_s.get(k, 0.0) for k in KINDS])[ops.kind]
    wave_s = np.maximum(body, chain) + fill + fixed + waves * cta_fixed + per_cta
    if CTA_SERIAL_AFTER_FIRST:   # the SM's serial CTA time runs beside the K/V stream (CTA_SERIAL_AFTER_FIRST)
        st = getattr(ops, "sync_steps", None)
        later = 0.0
        if st is not None:   # the later waves' prologue loads: on the SM's serial path too
            sync_k = np.array([eff.sync_s.get(k, 0.0) for k in KINDS])[ops.kind]
            later = st * sync_k * (waves - 1.0) / np.maximum(waves, 1.0)
        wave_s = np.where(_in(ops.kind, CTA_SERIAL_AFTER_FIRST),
                          np.maximum(body, chain + per_cta + later) + fill + fixed - later + waves * cta_fixed, wave_s)
    steps = getattr(ops, "sync_steps", None)
    if steps is not None and steps.any():   # per-CTA barrier phases recur in every wave (CTA_SYNC_PER_WAVE)
        sync = np.array([eff.sync_s.get(k, 0.0) for k in KINDS])[ops.kind]
        wave_s = wave_s + np.where(_in(ops.kind, CTA_SYNC_PER_WAVE), (waves - 1.0) * steps * sync, 0.0)
    if CHAIN_OVERLAP and eff.overlap_p:   # latency chain and shared issue compound, HBM a ceiling (CHAIN_OVERLAP)
        p = eff.overlap_p
        issue = compute_s if CHAIN_OVERLAP_BW_CEILING else body
        over = _in(ops.kind, CHAIN_OVERLAP)
        both = _pnorm_on(over, issue, chain, p)
        if CHAIN_OVERLAP_STAGGERED:   # only the first wave's CTAs start in phase (CHAIN_OVERLAP_STAGGERED)
            w = np.maximum(waves, 1.0)
            # a later wave's CTAs each wait for their first tile before they issue (CHAIN_OVERLAP_WAVE_FILL)
            wfill = w * it * np.minimum(n_it, 1.0) if CHAIN_OVERLAP_WAVE_FILL else 0.0
            both = (np.maximum(memory_s, both) / w
                    + (w - 1.0) / w * np.maximum(np.maximum(issue + wfill, chain), memory_s))
        elif CHAIN_OVERLAP_BW_CEILING:
            both = np.maximum(memory_s, both)
        wave_s = np.where(over, wave_s - np.maximum(body, chain) + both, wave_s)
    if CHAIN_ISSUE:   # latency chain plus the SM's shared issue, bandwidth a ceiling (CHAIN_ISSUE)
        q = np.array([eff.chain_queue.get(k, 0.0) for k in KINDS])[ops.kind]
        wave_s = np.where(_in(ops.kind, CHAIN_ISSUE), wave_s - np.maximum(body, chain)
                          + np.maximum(memory_s, chain + compute_s + q * memory_s), wave_s)
        if CHAIN_ISSUE_HIDDEN_P:   # co-resident programs' issue in the lone chain's waits (CHAIN_ISSUE_HIDDEN_P)
            hp = np.array([CHAIN_ISSUE_HIDDEN_P.get(c, 0.0) for c in range(len(KINDS))])[ops.kind]
            k = np.maximum(np.ceil(n / U) / np.maximum(waves, 1.0), 1.0)
            a = chain + compute_s / k + q * memory_s
            hpp = np.maximum(hp, 1.0)
            knee = _pnorm_on(hp > 0.0, a, memory_s, hpp)
            wave_s = np.where(hp > 0.0, wave_s - np.maximum(memory_s, chain + compute_s + q * memory_s) + knee, wave_s)
    if CHAIN_QUEUED:   # a closed loop of loads: the HBM queue and the chain meet at a knee (CHAIN_QUEUED)
        qp = CHAIN_QUEUED_P
        if CHAIN_QUEUED_P_SHARED is not None:   # several CTAs resident per SM: a sharper knee (CHAIN_QUEUED_P_SHARED)
            occ_q = np.array([eff.cta_slots.get(k, 0.0) for k in KINDS])[ops.kind]
            own_q = getattr(ops, "resident_ctas", None)
            if own_q is not None:
                occ_q = np.where(own_q > 0, own_q, occ_q)
            per_sm = np.minimum(np.ceil(np.maximum(n, 1.0) / U), np.maximum(occ_q, 1.0))
            qp = np.where(per_sm >= 2.0, CHAIN_QUEUED_P_SHARED, CHAIN_QUEUED_P)
        queued = _in(ops.kind, CHAIN_QUEUED)
        both = _pnorm_on(queued, body, chain, qp)
        wave_s = np.where(queued, wave_s - np.maximum(body, chain) - fill + both, wave_s)
    if CTA_ALONE:   # one CTA per SM: every wave pays its fill, every wave but the first one turnover, on one SM's
        # serial path while the others stream (CTA_ALONE)
        c_tile, fill_a = 0.0, fill
        if CTA_TILE_EXPOSED:   # the last tile's MMAs after its load, on one SM's serial path (CTA_TILE_EXPOSED)
            exposed = _in(ops.kind, list(CTA_TILE_EXPOSED))
            per = np.maximum(waves * n_it, 1.0)
            phases = np.array([CTA_TILE_EXPOSED.get(i, 0.0) for i in range(len(KINDS))])[ops.kind]
            c_tile = phases * compute_s / per
            fill_a = np.where(exposed, np.minimum(memory_s, chain) / per, fill)
        lock = 0.0
        if CTA_LOCKSTEP:   # the later waves' loads partly exposed while the SMs run in step (CTA_LOCKSTEP)
            stepped = _in(ops.kind, CTA_LOCKSTEP)
            lock = np.zeros(stepped.shape)
            if stepped.any():
                lock = np.where(stepped, memory_s / np.maximum(waves, 1.0) * lockstep_exposure(waves), 0.0)
        alone = (np.maximum(body + fill_a, chain + waves * (fill_a + c_tile) + (waves - 1.0) * cta_fixed + lock)
                 + fixed + per_cta)
        wave_s = np.where(_in(ops.kind, CTA_ALONE), alone, wave_s)
    if CTA_FIXED_HIDDEN:   # all waves' CTA time but the last's overlaps the body (CTA_FIXED_HIDDEN)
        later_fixed, chain_h = cta_fixed, chain
        if CTA_FIXED_HIDDEN_SHARE:   # a later tile's turnover share and K-step factor (CTA_FIXED_HIDDEN_SHARE)
            sh = np.array([CTA_FIXED_HIDDEN_SHARE.get(c, (1.0, 1.0)) for c in range(len(KINDS))])[ops.kind]
            later_fixed = cta_fixed * sh[..., 0]
            chain_h = chain * (1.0 + (sh[..., 1] - 1.0) * (waves - 1.0) / np.maximum(waves, 1.0))
        hidden = np.maximum(body, chain_h + (waves - 1.0) * later_fixed) + cta_fixed + fill + fixed + per_cta
        if TAIL_ROUND_KINDS:   # the last partial round streams on its own SMs (TAIL_ROUND_KINDS)
            tail = _in(ops.kind, [KIND_CODE[k] for k in TAIL_ROUND_KINDS]) & (waves > 1.0)
            r = n - (waves - 1.0) * slots
            share = np.clip(r / np.maximum(n, 1.0), 0.0, 1.0)
            w1 = np.maximum(waves, 1.0)
            two = (np.maximum(body * (1.0 - share), chain * (w1 - 1.0) / w1 + (waves - 1.0) * later_fixed)
                   + np.maximum(body * share, chain / w1) + cta_fixed + fill + fixed + per_cta)
            hidden = np.where(tail & (r < slots), two, hidden)
        wave_s = np.where(_in(ops.kind, CTA_FIXED_HIDDEN), hidden, wave_s)
    if CHAIN_LOADED and it_add is None and iters is not None:   # loaded latency (CHAIN_LOADED)
        loaded = _in(ops.kind, CHAIN_LOADED) & wave & (np.asarray(n_it) > 0)
        if loaded.any():
            # u is the traffic at the LOADED time (what the probe measured): u = bytes / (bw T(u)), T rising with u, so
            # the root lies between 0 and the unloaded u; bisection (CHAIN_LOADED_STEPS halvings)
            sync_k = np.array([eff.sync_s.get(k, 0.0) for k in KINDS])[ops.kind]
            hi = np.where(loaded, np.clip(hbm_bytes / (hw.hbm_bw_bytes_s * np.maximum(wave_s, 1e-30)), 0.0,
                                          CHAIN_LOADED_U_MAX), 0.0)
            lo = np.zeros_like(hi)

            def at(u):
                return _waves(ops, hw, eff, device_s, compute_s, hbm_bytes, fixed, n, has_n, U, l2_bytes, hit_bytes,
                              it_add=np.where(loaded, sync_k * CHAIN_LOADED_C * u / (1.0 - u), 0.0))
            for _ in range(CHAIN_LOADED_STEPS):
                mid = 0.5 * (lo + hi)
                t = at(mid)
                over = mid > hbm_bytes / (hw.hbm_bw_bytes_s * np.maximum(t, 1e-30))
                hi, lo = np.where(over, mid, hi), np.where(over, lo, mid)
            return at(0.5 * (lo + hi))
    return np.where(wave, wave_s, device_s)


NEGATIVE_BYTES_TOL = 1e-9
"""Relative slack of `_refuse_negative_bytes` (float rounding of bytes - L2 hits on rows that hit everything)."""


def _refuse_negative_bytes(ops, hbm_bytes, traffic) -> None:
    """An op whose L2 re-read credit exceeds what it reads (reread_bytes > bytes_read), or leaves it a negative
    HBM traffic after the L2 hits, would get a negative memory term (a kernel faster than free): that is a defect of
    the op's builder, never a price, so stop with the kinds and rows at fault."""
    tol = NEGATIVE_BYTES_TOL * np.maximum(traffic, 1.0)
    bad = (hbm_bytes < -tol) | (ops.reread_bytes > ops.bytes_read + tol)
    if np.any(bad):
        rows = np.flatnonzero(bad)
        kinds = sorted({KINDS[int(k)] for k in np.asarray(ops.kind)[rows]})
        raise SparsesimError(f"{len(rows)} op row(s) of kind {', '.join(kinds)} re-read more bytes than they read "
                             f"(reread_bytes > bytes_read, or HBM bytes after L2 hits "
                             f"{float(np.min(hbm_bytes[rows])):.3g} < 0): a defect of the op builder "
                             f"(rows {rows[:8].tolist()})")


def price(ops, hw: HardwareSpec, launch: str = "graph", detail: bool = False):
    """Seconds for each op row of `ops` on `hw`.

    ops: any object with numpy columns kind, dtype, flops, bytes_read, bytes_written, parallel_units,
         count, devices (see simulator.ops.OpTable).
    launch: 'graph' (CUDA graph replay / compiled static dataflow graph) or 'eager'.
    detail: return a `Priced` with the terms instead of the total-time array.
    """
    if launch not in LAUNCH_MODES:
        raise SparsesimError(f"launch mode {launch!r} unknown; allowed: {', '.join(LAUNCH_MODES)}")
    eff = hw.efficiency
    eff_c = np.array([eff.compute[k] for k in KINDS])[ops.kind]
    tkind = ops.kind
    if _in(ops.kind, list(AR_TERMS_FROM)).any():
        tkind = np.array([AR_TERMS_FROM.get(i, i) for i in range(len(KINDS))])[ops.kind]
    eff_m = np.array([eff.memory[k] for k in KINDS])[tkind]
    fixed = np.array([eff.fixed_s.get(k, 0.0) for k in KINDS])[tkind]
    steps = getattr(ops, "sync_steps", None)
    if steps is not None and steps.any():
        fixed = fixed + steps * np.array([eff.sync_s.get(k, 0.0) for k in KINDS])[ops.kind]
    eff_c = eff_c * np.array([eff.compute_dtype.get(d, 1.0) for d in DTYPES])[ops.dtype]
    peak = hw.flops_table()[ops.dtype]
    U = float(hw.units)
    n = ops.parallel_units
    has_n = n > 0
    n_safe = np.where(has_n, n, 1.0)
    fill_c = np.where(has_n, n_safe / (np.ceil(n_safe / U) * U), 1.0)
    sat = np.array([eff.saturation.get(k, 1.0) for k in KINDS])[ops.kind]
    fill_m = np.where(has_n, np.minimum(1.0, n_safe / (sat * U)), 1.0)
    compute_s = ops.flops / (peak * eff_c * fill_c)
    hbm_bytes = ops.bytes_read + ops.bytes_written + spill_bytes(ops, hw)
    l2_bytes = hbm_bytes
    hit_bytes = 0.0
    rr = getattr(ops, "reread_bytes", None)
    if hw.l2_bytes and rr is not None and rr.any():
        cap = hw.l2_bytes * eff.l2_fraction
        hit = np.minimum(1.0, cap / np.maximum(ops.working_set, 1.0))
        # a plain-PyTorch streaming kernel re-reads what the kernel before it wrote, in the same address order: a
        # working set larger than the L2 has had every line evicted before it is re-read (LRU scan), so it hits nothing
        stream = _in(ops.kind, STREAM_REREAD)
        if stream.any():
            hit = np.where(stream, np.where(ops.working_set <= cap, 1.0, 0.0), hit)
        hit_bytes = rr * hit
        sweep = _in(ops.kind, SWEEP_REREAD)
        if sweep.any():   # multi-sweep top-k (SWEEP_REREAD): first sweep and re-sweeps, each on its reuse distance
            occ = np.array([eff.cta_slots.get(k, 0.0) for k in KINDS])[ops.kind]
            own = getattr(ops, "resident_ctas", None)
            if own is not None:   # the launch's own occupancy where its family module sets one (as `waves` does)
                occ = np.where((own > 0) & (occ > 0), own, occ)
            inflight = np.where(occ > 0, np.minimum(1.0, U * occ / np.maximum(n, 1.0)), 1.0)
            first = (ops.bytes_read - rr) * sweep_hit(eff, "first", ops.working_set / cap)
            again = rr * sweep_hit(eff, "again", ops.working_set * inflight / cap)
            hit_bytes = np.where(sweep, first + again, hit_bytes)
        hbm_bytes = hbm_bytes - hit_bytes
        _refuse_negative_bytes(ops, hbm_bytes, l2_bytes)
    memory_s = hbm_bytes / (hw.hbm_bw_bytes_s * eff_m * fill_m)
    graph = launch == "graph"
    launch_one = hw.launch_graph_s if graph else hw.launch_eager_s

    is_ring = ops.kind == COLLECTIVE
    is_a2a = ops.kind == ALLTOALL
    is_one, is_two = (ops.kind == ONESHOT) | (ops.kind == LAMPORT), ops.kind == TWOSHOT
    is_coll = is_ring | is_a2a | is_one | is_two
    if is_coll.any():
        g = np.maximum(ops.devices, 1.0)
        if hw.link_bw_bytes_s is None or hw.link_latency_s is None:
            if (g[is_coll] > 1).any():
                raise SparsesimError(f"{hw.name} has no sourced interconnect bandwidth/latency "
                                     f"(interconnect.* is null in {hw.file}); collectives cannot be priced")
        bw = (hw.link_bw_bytes_s or np.inf) * eff_m   # eff_m: memory[collective] / memory[alltoall]
        lat = eff.link_latency_s if eff.link_latency_s is not None else (hw.link_latency_s or 0.0)
        sync = np.array([eff.sync_s.get(k, 0.0) for k in KINDS])[tkind]
        ring = 2.0 * (g - 1.0) / g * ops.bytes_read / bw + 2.0 * (g - 1.0) * (lat + sync)
        a2a = (g - 1.0) / g * ops.bytes_read / bw + np.where(g > 1.0, lat, 0.0)
        # a custom kernel's barrier: the spec's link latency (the NCCL fit folds NCCL's own latency into its fixed
        # term and may leave link_latency_s at 0, which would make a peer round trip free), plus sync[kind] per peer
        # beyond the first
        lat_c = max(lat, hw.link_latency_s or 0.0)
        barrier = np.where(g > 1.0, lat_c + np.maximum(g - 2.0, 0.0) * sync, 0.0)
        if eff.engine_ar and (is_one | is_two).any():
            # the engines' kernels (Efficiency.engine_ar): per-CTA flag barriers of one time whatever the rank count
            # (each peer's flag is stored and polled by its own thread, in parallel), phase_s per serialized
            # peer-data phase (AR_PHASES) in place of the own kernel's fixed time, and TensorRT-LLM's further flag
            # stores (sync_steps) at flag_store_s each; ENGINE_AR_BARRIERS flag barriers (none in the Lamport
            # one-shot), and the fused RMSNorm's serialized
            # per-token reductions (norm_s; ENGINE_AR_NORMS_ONESHOT, g for a two-shot) where the call carries the
            # epilogue (bytes_written > 0: simulator.kernels.allreduce add_allreduce)
            cust = is_one | is_two
            e = eff.engine_ar
            barrier = np.where(cust, np.where(g > 1.0, e.get("barrier_s", 0.0), 0.0), barrier)
            st = 0.0 if steps is None else steps * e.get("flag_store_s", 0.0)
            nph = np.array([AR_PHASES.get(i, 0.0) for i in range(len(KINDS))])[ops.kind]
            nnorm = np.where(ops.bytes_written > 0.0, np.where(is_two, g, ENGINE_AR_NORMS_ONESHOT), 0.0)
            # blind grid 13's rules (AR_TWOSHOT_COPY, AR_NORM_CS1 / _CSN, AR_PEER_SHARE)
            cc = getattr(ops, "cluster_ctas", None)
            nshare = 1.0 if cc is None else np.where(cc == 1.0, AR_NORM_CS1, np.where(cc > 1.0, AR_NORM_CSN, 1.0))
            declared = ops.parallel_units > 0
            nbw = np.array([ENGINE_AR_BARRIERS.get(i, 0.0) for i in range(len(KINDS))])[ops.kind]
            waits = np.where(is_two & declared, 0.0, nph + nbw)
            # blind grid 19's oneshot_peer_share (the device's own; AR_PEER_SHARE where it has none): vLLM's one-shot
            # (cross_device_reduce_1stage) pays its own per-wait share of the slowest-of-(g - 1)-peers extra
            psh = np.where(ops.kind == ONESHOT, eff.engine_ar_rules.get("oneshot_peer_share", AR_PEER_SHARE), AR_PEER_SHARE)
            # blind grid 25's lamport_peer_share (the device's own; AR_PEER_SHARE where it has none): TensorRT-LLM's
            # Lamport one-shot pays its own per-wait share of the slowest-of-(g - 1)-peers extra
            psh = np.where(ops.kind == LAMPORT, eff.engine_ar_rules.get("lamport_peer_share", AR_PEER_SHARE), psh)
            peer = psh * e.get("phase_s", 0.0) * np.maximum(g - 2.0, 0.0) * waits
            copy = np.where(is_two & ~declared & (g > 2.0), AR_TWOSHOT_COPY * 2.0 * ops.bytes_read
                            / (hw.hbm_bw_bytes_s * eff.memory["elementwise"]), 0.0)
            # blind grid 17's AR_LAMPORT_PHASE2 (or the device's own lamport_phase2): the 2-rank Lamport's one-way phase
            lp2 = eff.engine_ar_rules.get("lamport_phase2", AR_LAMPORT_PHASE2)
            nph_p = np.where((ops.kind == LAMPORT) & (g == 2.0), lp2 * nph, nph)
            # the all-reduce after a GEMM on every rank (an op's `after_gemm`: the layer model's tensor-parallel
            # all-reduce) waits for the slowest rank's GEMM: engine_ar[after_gemm_s] (simulator/calibration/
            # allreduce_in_step.py; 0 where the device has none, and for back-to-back calls)
            ag = getattr(ops, "after_gemm", None)
            wait = 0.0 if ag is None else np.where(ag > 0.0, e.get("after_gemm_s", 0.0), 0.0)
            agsh = eff.engine_ar_rules.get("after_gemm_share", AR_AFTER_GEMM_SHARE)
            if ag is not None and agsh:
                # the in-step candidate's AR_AFTER_GEMM_SHARE (or the device's own after_gemm_share): the wait as a
                # share of the preceding GEMM's memory time (its bytes in after_gemm) per sqrt(g - 1) peers
                t_gemm = ag / (hw.hbm_bw_bytes_s * eff.memory["gemm"])
                wait = wait + np.where(ag > 1.0, agsh * np.sqrt(np.maximum(g - 1.0, 1.0)) * t_gemm, 0.0)
            fixed = np.where(cust, nph_p * e.get("phase_s", 0.0) + st + nnorm * nshare * e.get("norm_s", 0.0) + peer
                             + copy + wait, fixed)
        ceil = np.array([eff.link_ceiling.get(k, eff.memory[k]) for k in KINDS])[tkind]
        nbar = np.array([AR_BARRIERS.get(i, 0.0) for i in range(len(KINDS))])[ops.kind]
        link = ops.bytes_read
        if eff.engine_ar:
            nbar_e = np.array([ENGINE_AR_BARRIERS.get(i, 0.0) for i in range(len(KINDS))])[ops.kind]
            nbar = np.where(is_one | is_two, nbar_e, nbar)
            # vLLM's two-shot in loop steps, the last one by its fill (AR_WAVE_SKIP, AR_FILL_SLOPE), the Lamport push's
            # own ceiling (LAMPORT_CEILING_RATIO)
            step = AR_STEP_BYTES * AR_CTA_THREADS * np.maximum(ops.parallel_units, 1.0) * g
            waves = (is_two & (ops.parallel_units > 0)) & (ops.bytes_read > 0)
            x = ops.bytes_read / step
            first = np.where(np.ceil(x) <= 1.0, eff.engine_ar_rules.get("first_fill_extra", AR_FIRST_FILL_EXTRA), 0.0)
            link = np.where(waves, (np.ceil(x) - AR_WAVE_SKIP - (AR_FILL_SLOPE + first) * (np.ceil(x) - x)) * step, link)
            ceil = np.where((ops.kind == LAMPORT) & (g > 2.0), ceil * LAMPORT_CEILING_RATIO, ceil)
        bw_all = (hw.link_bw_bytes_s or np.inf) * ceil
        one = np.maximum((g - 1.0) * link / bw_all, link / bw)
        l2 = eff.engine_ar_rules.get("lamport2_link", AR_LAMPORT2_LINK)
        if eff.engine_ar and l2:
            # blind grid 20's AR_LAMPORT2_LINK (or the device's own lamport2_link): the Lamport one-shot's push at 2 ranks
            lam2l = (ops.kind == LAMPORT) & (g == 2.0)
            one = np.where(lam2l, link / ((hw.link_bw_bytes_s or np.inf) * l2), one)
        o2 = eff.engine_ar_rules.get("oneshot2_link", AR_ONESHOT2_LINK)
        if eff.engine_ar and o2:
            # blind grid 23's AR_ONESHOT2_LINK (or the device's own oneshot2_link): vLLM's one-shot at 2 ranks
            one = np.where((ops.kind == ONESHOT) & (g == 2.0), link / ((hw.link_bw_bytes_s or np.inf) * o2), one)
        mls = eff.engine_ar_rules.get("multi_link_time", AR_MULTI_LINK_TIME)
        if eff.engine_ar and mls != 1.0:
            # blind grid 23's AR_MULTI_LINK_TIME (or the device's own multi_link_time): the engines' link time above
            # 2 ranks
            one = np.where((is_one | is_two) & (g > 2.0), one * mls, one)
        overlap = eff.engine_ar_rules.get("lamport_overlap", AR_LAMPORT_OVERLAP)
        if eff.engine_ar and overlap:
            # blind grid 14's AR_LAMPORT_OVERLAP (or the device's own lamport_overlap): the 2-rank Lamport push overlaps
            # its phase with its transfer
            lam2 = (ops.kind == LAMPORT) & (g == 2.0)
            one = one - np.where(lam2, overlap * np.minimum(one, eff.engine_ar.get("phase_s", 0.0)), 0.0)
        one = one + nbar * barrier
        two = np.maximum(2.0 * (g - 1.0) / g * link / bw_all, 2.0 / g * link / bw)
        if eff.engine_ar and mls != 1.0:
            two = np.where(is_two & (g > 2.0), two * mls, two)
        t2 = eff.engine_ar_rules.get("twoshot2_link", AR_TWOSHOT2_LINK)
        if eff.engine_ar and t2:
            # blind grid 17's AR_TWOSHOT2_LINK (or the device's own twoshot2_link): TensorRT-LLM's 2-rank two-shot
            two2 = is_two & (ops.parallel_units <= 0) & (g == 2.0)
            two = np.where(two2, link / ((hw.link_bw_bytes_s or np.inf) * t2), two)
        two = two + nbar * barrier
        # a fused epilogue (TensorRT-LLM's residual add + RMSNorm): its extra HBM traffic in bytes_written, at the
        # elementwise rate after the all-reduce (simulator.kernels.allreduce.fused_epilogue_s); 0 for a plain kernel
        epi = ops.bytes_written / (hw.hbm_bw_bytes_s * eff.memory["elementwise"])
        one, two = one + epi, two + epi
        memory_s = np.where(is_ring, ring, np.where(is_a2a, a2a, np.where(is_one, one, np.where(is_two, two, memory_s))))
        compute_s = np.where(is_coll, 0.0, compute_s)
        launch_row = np.where(is_coll & (g <= 1.0), 0.0, launch_one)
        fixed = np.where(is_coll & (g <= 1.0), 0.0, fixed)
    else:
        launch_row = np.full(ops.kind.shape, launch_one)
    if CHAIN_TENSOR:   # tensor work on the per-tile chain: the body is the bytes alone (CHAIN_TENSOR)
        compute_s = np.where(_in(ops.kind, CHAIN_TENSOR), 0.0, compute_s)
    if eff.overlap_p:
        p = eff.overlap_p
        hi = np.maximum(np.maximum(compute_s, memory_s), 1e-30)
        device_s = hi * ((compute_s / hi) ** p + (memory_s / hi) ** p) ** (1.0 / p) + fixed
    else:
        device_s = np.maximum(compute_s, memory_s) + fixed
    device_s = device_s + broadcast_s(ops, hw, eff)
    iters = getattr(ops, "serial_iters", None)
    if eff.loop_iter_s and iters is not None and iters.any():
        device_s = np.maximum(device_s, iters * eff.loop_iter_s + fixed)
    if eff.cta_slots:
        device_s = _waves(ops, hw, eff, device_s, compute_s, hbm_bytes, fixed, n_safe, has_n, U, l2_bytes,
                          hit_bytes)
    lt = getattr(ops, "lone_tile_bytes", None)
    if LONE_TILE_LOAD and lt is not None:   # one wave of at most one CTA per SM: the tile loads add (LONE_TILE_LOAD)
        lone = (lt > 0.0) & has_n & (n_safe <= U)
        device_s = device_s + np.where(lone, lt * n_safe / (hw.hbm_bw_bytes_s * eff_m), 0.0)
    ep = getattr(ops, "epilogue_bytes", None)
    if EPILOGUE_EXPOSED and ep is not None and eff.l2_bw_bytes_s:   # the last wave's stores (EPILOGUE_EXPOSED)
        occ_e = np.array([eff.cta_slots.get(k, 0.0) for k in KINDS])[ops.kind]
        slots_e = U * np.maximum(occ_e, 1.0)
        last = n_safe - (np.ceil(n_safe / slots_e) - 1.0) * slots_e
        on = _in(ops.kind, [KIND_CODE[k] for k in EPILOGUE_EXPOSED]) & (ep > 0.0) & has_n
        device_s = device_s + np.where(on, last * ep / eff.l2_bw_bytes_s, 0.0)
    if graph:
        kernel_s = device_s + launch_row
    else:
        kernel_s = np.maximum(device_s, launch_row)
        launch_row = kernel_s - device_s  # the part of the kernel's time the host's launch adds
    time_s = ops.count * kernel_s
    if not detail:
        return time_s
    return Priced(time_s=time_s, compute_s=ops.count * compute_s, memory_s=ops.count * memory_s,
                  launch_s=ops.count * launch_row, fixed_s=ops.count * fixed, memory_bound=memory_s >= compute_s)
