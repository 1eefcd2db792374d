"""Engines' custom all-reduce at decode sizes, modelled from their sources (a kernel, not a ring of NCCL steps).

vLLM (csrc/custom_all_reduce.cuh @ c9eabec7, vllm/distributed/device_communicators/custom_all_reduce.py):
    one-shot  cross_device_reduce_1stage: a start barrier (each rank stores one flag into every peer's signal buffer,
              then polls its own: one peer round trip), every rank reads the whole message from every peer over
              NVLink (16-B loads, fp32 accumulation) and writes the sum; an end barrier (another round trip) before
              the kernel exits
    two-shot  cross_device_reduce_2stage: start barrier, reduce-scatter (each rank sums its 1/g slice from every
              peer into its scratch), a grid-wide barrier across ranks, all-gather (each rank copies the g slices
              from the peers' scratch): (g-1)/g of the message crosses the links twice
    launch    512 threads x at most 36 blocks (block_limit = 36)
    choice    custom all-reduce only below _MAX_CAR_SIZE = 8 MiB (else NCCL); one-shot always at 2 ranks, at <= 4
              ranks below 512 KiB, at <= 8 ranks below 256 KiB; two-shot above (full NVLink only)
SGLang runs vLLM's kernel (sgl-kernel's port, the same 8 MiB cap: python/sglang/srt/distributed/device_communicators/
custom_all_reduce.py).
TensorRT-LLM (cpp/tensorrt_llm/thop/allreduceOp.cpp, kernels/communicationKernels/allReduceFusionKernels.cu):
    AUTO picks NCCL above the workspace (getMaxRequiredWorkspaceSize: 16 MB at 2 ranks, 8 MB above) or without
    NVLink P2P, else selectStrategyLookUpTable (common/customAllReduceUtils.h @ 005b299b): a best-strategy table
    indexed by (SM 90 | 100, TP 2/4/8, fusion op, floor(log2 hidden) over 128..8192, floor(log2 tokens) over
    1..16384) whose entries are ONESHOT / TWOSHOT / NCCL, NCCL_SYMMETRIC past the table. It is DATA here
    (kernels/data/trtllm_allreduce_strategy.yaml, with the sources and the reading of out-of-table sizes;
    trtllm_choose). The PyTorch backend's newest AUTO autotunes among the same strategies per power-of-2 token
    bucket; the table stands for its pick (an ASSUMPTION stated in the YAML). The fused kernel
    (allreduce_fusion_kernel_oneshot_lamport / _twoshot_sync) also adds the residual and applies RMSNorm where the
    model asks for it (modeling_llama.py: Llama layers with hidden > 4096 under TP; simulator.layers
    trtllm_fused_norm), so that norm kernel disappears; with an NCCL pick the norm runs as its own kernel
    (fallbackRunSubsequentOps). Its MIN_LATENCY rule is one-shot up to kOneShotMaxToken = 128 tokens (not AUTO's).

The kernels as flashinfer-python 0.6.4 ships them (include/flashinfer/comm/vllm_custom_all_reduce.cuh, "refer to vllm
v0.8.2 csrc/custom_all_reduce.cuh"; include/flashinfer/comm/trtllm_allreduce_fusion.cuh, TensorRT-LLM's
allReduceFusionKernels.cu) give these structural rules (hwmodels.roofline AR_BARRIERS):
    vLLM one-shot   start barrier + end barrier, both per block (each CTA syncs with the same CTA index of every
                    peer: no grid-wide barrier), pull of g messages (g-1 over NVLink), 36 x 512 threads
    vLLM two-shot   start barrier + one barrier between reduce-scatter and all-gather; NO end barrier (two alternating
                    peer_counter sets make the next call's start barrier safe); all-gather pulls the peers' scratch
    TRT-LLM one-shot (allreduce_fusion_kernel_oneshot_lamport; kind allreduce_1shot_lamport) no barrier at all: every
                    rank stores its message into every peer's Lamport buffer (push, (g-1) x S out over NVLink) and
                    polls its own buffer until no -0.0 is left, so the only wait is the data's own arrival (one link
                    latency); it also clears the buffer used two calls ago (g x S local writes) and polls g x S
                    locally (local HBM traffic, not priced: under the link time at every size here). Grid: one
                    cluster per token, hidden/8 threads per token, up to one CTA per SM (132 on H100) instead of 36
    TRT-LLM two-shot (allreduce_fusion_kernel_twoshot_sync) copy of the input into the own comm buffer, barrier,
                    reduce-scatter (pull of the own token slice from every peer) with a PUSH of the sum into every
                    peer's buffer, barrier, then the fused epilogue over the whole message from local memory: 2
                    barriers, the same link bytes as vLLM's two-shot
    fused epilogue  (pattern kARResidualRMSNorm) residual_in read, residual_out and norm_out written (one output more
                    than the plain all-reduce's allreduce_out), the RMS reduction per token inside a CTA cluster:
                    fused_epilogue_s prices the extra read + write at the elementwise HBM rate, added after the
                    all-reduce (in the layers: the op's bytes_written = 2 x message, which hwmodels.roofline prices
                    the same way) (the two-shot runs it after its last barrier; an ASSUMPTION for the one-shot, whose
                    epilogue interleaves with the polling)
    barrier flags    (added after the measurement below was read) TensorRT-LLM's Barrier::sync stores the new flag
                    value into all kBarrierFlagCount = 256 flag slots of every peer, each CTA the slots blockIdx.x,
                    blockIdx.x + gridDim.x, ...: ceil(256 / grid) st.global.release.sys stores in a row per thread,
                    twice per call. With few tokens per rank the grid is small (one cluster per token of the rank's
                    share) and the stores dominate: trtllm_twoshot_flag_steps charges the stores beyond the one per
                    peer that the committed barrier holds at sync[allreduce_2shot] each (the time one more flag
                    store adds to a barrier, fitted on the project's own kernel; no new term)
    flashinfer's own one-shot choice (comm/trtllm_ar.py _should_use_oneshot): one-shot while tokens x hidden x 2 x
                    g x 2 bytes <= 512 / 64 / 42 MiB at 2 / 4 / 8 ranks (at 4 ranks: messages up to 8 MiB); the
                    TensorRT-LLM kernel's MIN_LATENCY rule is kOneShotMaxToken = 128 tokens

Time (hwmodels.roofline prices kinds allreduce_1shot / allreduce_1shot_lamport / allreduce_2shot):
    one-shot  = n_bar barriers + max((g-1) x S / (link bw x ceiling), S / (link bw x one-peer rate))
                (each rank pulls, or TensorRT-LLM pushes, g-1 full messages; the transfers to / from every peer are
                in flight together); n_bar = 2 (vLLM: start + end), 1 (TensorRT-LLM's Lamport: the data's arrival)
    two-shot  = 2 barriers + max(2 (g-1)/g x S / (link bw x ceiling), 2/g x S / (link bw x one-peer rate))
                (+ TensorRT-LLM's barrier-flag stores, trtllm_twoshot_flag_steps x sync_us)
    a barrier = one flag store into every peer and a poll of every peer's flag: the link latency (the spec's, or the
                fitted one) plus a time per peer beyond the first (sync_us of the kind)
    with the engines' own terms (Efficiency.engine_ar; the H100 only, hwmodels/calibration/fitted/H100-SXM.yaml
    engine_allreduce_us): a barrier is one per-CTA flag barrier (`barrier`, the same at any rank count: every peer's
    flag is stored and polled by its own thread; vLLM's kernels have two, TensorRT-LLM's two-shot two, its Lamport
    one-shot none: hwmodels.roofline ENGINE_AR_BARRIERS), the fixed time is `phase` per serialized peer-data phase
    (one-shots 1, two-shots 2), each further TensorRT-LLM flag store costs `flag_store`, and a fused residual +
    RMSNorm epilogue pays `norm` per RMSNorm a thread runs in a row (FusedOp::rms_norm: a block reduction and two
    cluster syncs per token; the Lamport one-shot overlaps them with its polling but the last token's: 1; the
    two-shot's epilogue walks every rank's token slice after its last barrier: g); the link terms stay the own kernel's
    (sources: the measured copies, flashinfer-python 0.6.4 include/flashinfer/comm/trtllm_allreduce_fusion.cuh and
    vllm_custom_all_reduce.cuh; the same structure upstream in TensorRT-LLM cpp/tensorrt_llm/kernels/
    communicationKernels/allReduceFusionKernels.cu @ b35ac1b6 and vLLM csrc/custom_all_reduce.cuh @ c9eabec7)
Fitted on 2 and 4 x H100 (lab/kernels/measure_allreduce.py, hwmodels/calibration/data/production_kernels/
allreduce_*): the H100's fixed_us / memory (one-peer rate) / sync_us / link_ceiling terms of both kinds are fitted on
the project's kernel with vLLM's structure (simulator/calibration/fit_production_allreduce.py, which prices that
kernel's third, end barrier explicitly; held out 2-8 % at 2 ranks, 1-13 % median at 4); other devices keep the spec's
link latency and bandwidth (an ASSUMPTION), and at 8 ranks the per-peer barrier time is extrapolated linearly.
Checked against the engines' own kernels (flashinfer-python 0.6.4 JIT modules, lab/kernels/measure_engine_allreduce.py,
4 x H200 lent for an H100 request, simulator/calibration/engine_allreduce.py; nothing of them fitted): blind |error|
median 15 %, p90 64 % over 148 rows; >= 2 MiB at 4 ranks within -3..+13 %; every kernel's small messages priced too
slow (vLLM one-shot +50-108 %: 5-6 us measured, its per-CTA barriers are cheaper than the assumed 3 us link latency +
the own kernel's grid-wide barriers; TensorRT-LLM's Lamport one-shot +25-64 % at <= 1 MiB); the residual + RMSNorm
epilogue adds a near-constant ~2 us at small sizes that the HBM-traffic term lacks; TensorRT-LLM's two-shot with few
tokens per rank (up to 5x slower than priced) led to the barrier-flag rule above (read after the measurement).
The engines' own terms were then fitted on the 2 x H100 rows alone (simulator/calibration/engine_allreduce.py
fit_engine_terms, 76 rows: barrier 0.0 us at its bound, phase 4.68 us, flag_store 1.81 us; |error| median 6.8 %, p90
27 %); held out, the 4 x H200 rows: median 11.0 %, p90 37 % (was 13.4 / 49 %; the H200's few-token two-shot is faster
than the H100's: +74 % there); BLIND on 4 x H100 (4 ranks, tokens 2-768 x hidden 5120 / 7168, 66 rows, prediction
committed first): median 9.6 %, p90 22.8 %, signed -8.4 % (+ RMSNorm rows 8-26 % too fast; Lamport one-shot small
13-29 % too slow). Then the per-kernel structure above (no flag barrier in the Lamport one-shot, the fused RMSNorm's
`norm`), refitted on the same 2 x H100 rows (barrier 0.41, phase 3.86, flag_store 1.75, norm 1.65 us; was 0.0 / 4.68 /
1.81 / -): fit rows median 6.6 %, p90 17.1 % (was 6.8 / 27.4 %); the 4 x H200 rows and the 4 x H100 blind rows above,
seen after the rule was fixed (nothing chosen on them): 9.7 / 30.5 % and 7.6 / 14.1 % (was 11.0 / 36.8 and 9.6 /
22.8 %). A new blind grid (engine_allreduce_grid6.py BLIND6_*, 2 and 4 ranks) holds both models' prices, committed before
its measurement. Beyond 4 ranks the engines' barrier and phase times are taken as at 4 ranks (an ASSUMPTION).

The Lamport one-shot as flashinfer v0.6.4 ships it (include/flashinfer/comm/trtllm_allreduce_fusion.cuh @ f1e6fdcb,
allreduce_fusion_kernel_oneshot_lamport and allreduce_fusion_kernel_launcher), read for its own phase term:
    vector width   kBytesPerAccess = 16 B (8 bf16) per thread access, hidden / 8 threads per token
    grid           one cluster (<= 8 CTAs, >= 128 threads a CTA) per token, clusters halved while tokens x cluster size
                   exceeds the SMs and a CTA can double; grid = min(SMs, tokens x size) in whole clusters (trtllm_grid);
                   a cluster strides over the tokens by the number of clusters: ceil(tokens / clusters) tokens per
                   thread in a row (trtllm_oneshot_token_steps)
    order          per thread: load its input vectors, store each into all g ranks' Lamport buffers (g - 1 over NVLink,
                   posted stores: no reply awaited), then clear g x S bytes of the local buffer used two calls ago
                   (three buffers rotate; comm.update records g x S as the next clear), then per token poll the g
                   vectors (ld.volatile, local) until none holds -0.0, sum in fp32 and run the fused op
    + RMSNorm      per token: residual add, a block reduction of the squares and, with a cluster of > 1 CTA, two
                   cluster.sync around the CTAs' partial sums (FusedOp::rms_norm), then the two stores
    the one phase is a posted push and a local poll, not a pull (vLLM) or a flag exchange. An own fitted phase term for
    it (push, 3.51 us against phase 4.22 us, robust soft_l1 refit on the same 2 x H100 rows: fit rows |error| median
    6.6 -> 5.4 %, p90 17.1 -> 16.3 %) was tested BLIND (engine_allreduce_grid7.py BLIND7_*, 170 rows on 4 x H100, both
    prices committed first) and LOST: median 5.8 / p90 14.4 %, 34 of 41 regimes, against the kept model's 5.6 / 14.0 %,
    35 of 41 (the Lamport one-shot's 2-rank rows improved, its 4-rank small messages went from -8 % to -15 %: what
    the 2-rank rows lend the push phase, the 4-rank call spends waiting on the slowest of three peers). It is not
    in the model. Pricing a thread's further tokens (a poll step, or a further RMSNorm, per token beyond the first:
    trtllm_oneshot_token_steps) was tried on the fit rows and rejected there: the fit put 0 us on a poll step, and a
    norm per token raised the fit's log error (0.1252 against 0.1192 without it).

Blind grid 8 (4 ranks, 2-rank controls; simulator/calibration/engine_allreduce_grid8.py BLIND8_*) shipped two rules, read from
the 4-rank rows of grids 4, 6 and 7 (looked-at) and fitted there only (fit_grid8_terms), priced beside main's model and
committed (d5ee6a3) before the measurement:
    vLLM two-shot   cross_device_reduce_2stage (custom_all_reduce.cuh @ c9eabec7) walks each rank's part of 16-B packs
                    with a stride of all 36 x 512 threads, reduce-scatter then all-gather: ceil(bytes / (16 x 36 x 512 x
                    g)) loop steps per phase (vllm_twoshot_waves; 1.125 MiB a step at 4 ranks), each waiting on its
                    peers' loads; its time rises in steps of ~6.7 us at 4 ranks (the link term of one whole step), not
                    with the bytes. hwmodels.roofline prices a two-shot op that declares its CTAs (add_allreduce:
                    parallel_units = 36 for vLLM / SGLang) on (steps - AR_WAVE_SKIP = 0.25) whole steps (grid 9: the
                    last step by its fill, below)
    Lamport push    over more than one peer TensorRT-LLM's one-shot reaches LAMPORT_CEILING_RATIO = 0.922 of the pull
                    one-shot's link ceiling (0.604 against 0.655 of the datasheet rate); at 2 ranks the one-peer rate
                    binds and nothing moves
Blind (90 rows measured of 150 priced: the TensorRT-LLM JIT build took 164 s of the one call, so its 4-rank rows stop
after 11 of 26 shapes): |error| median 6.0 %, p90 14.8 %, 19 of 22 regimes, against main's 8.5 / 19.6 %, 17 of 22.

Blind grid 9 (4 ranks, 2-rank controls; engine_allreduce_grid9.py BLIND9_*) shipped the last loop step priced by its fill:
grid 8's rows near the top of a step (fill 0.9-1.0) were 11-19 % too fast, as the time still grows within a step (the
last step's threads are fewer the smaller its fill: cross_device_reduce_2stage's `idx < end` / `idx < largest_part`
loop bounds). The priced steps are ceil(x) - AR_WAVE_SKIP - AR_FILL_SLOPE x (ceil(x) - x), x = bytes / step bytes,
0.09 / 0.16 fitted together on the 4-rank vLLM two-shot rows of grids 4, 6, 7 and 8 (fit_grid9_terms; 45 rows).
Blind (207 rows, one call): 7.16 / 16.0 %, 22 of 31 regimes, against grid 8's rule's 7.25 / 16.9 %, 22 of 31 (vLLM's
two-shot 2-8 MiB -8.8 -> -3.6 % signed, p90 19.8 -> 13.9 %; its two rows of 0.5-0.7 MiB +18 -> +23 %).

Blind grid 10 (4 ranks, 2-rank controls; engine_allreduce_grid10.py BLIND10_*) tested, and did NOT ship, a candidate read from
allreduce_fusion_kernel_twoshot_sync / _launcher (flashinfer 0.6.4 @ f1e6fdcb): the two-shot copies the whole input into
its own comm buffer before the first barrier and reads the sums back + writes the output after the last (2 x (read +
write) of the message of local HBM traffic, serialized with the link phases: copy 2.01 fitted), and FusedOp::rms_norm's
two cluster.sync run only with > 1 CTA a cluster (launcher's cluster size: trtllm_cluster_size), so with one CTA a
cluster the RMSNorms pay 0.19 of `norm` (engine_allreduce_grid10.GRID10_CANDIDATE, predict_grid10; fitted on grids 4, 6-9's
4-rank rows). Blind (201 rows): 17 of 26 regimes against main's 18 (pooled 4.46 / 14.26 % against 5.80 / 14.97 %): it
met TensorRT-LLM's 4-rank two-shot at 2-8 MiB (-11.5 -> -1.5 % signed) but priced the 2-rank two-shot controls +14 %
(looked at after: the copy term was fitted on 4 ranks and at 2 ranks the one-peer link bound already covers it).

Blind grid 11 (4 AND 2 ranks, >= 4 rows in every (implementation, ranks, size regime) cell, 31 cells; engine_allreduce.py
BLIND11_*) tested, and did NOT ship, grid 10's copy term above 2 ranks only plus the fused RMSNorm's `norm` by the fusion
kernel's cluster size in the Lamport one-shot too (FusedOp::rms_norm's cluster.sync only with > 1 CTA a cluster):
GRID11_CANDIDATE copy 1.93, norm_cs1 0.28, norm_csn 1.18 (predict_grid11; fit_grid11_terms on grids 4, 6-10's rows).
Its one 4-GPU call, asked for 4 x H100, was served by 4 x H200: the H100 model judged across devices. Main 11.8 / 39.7 %,
12 of 31; candidate 12.5 / 39.7 %, 11 of 31 (the RMSNorm rule alone, looked at after: 13 of 31; the copy term, priced at
the H100's HBM rate, overprices the H200's faster local copies). The H200's TensorRT-LLM two-shot below 1 MiB is priced
+11..+72 % too slow (as the 4 x H200 campaign showed), and 131 x 4096 at 4 ranks (132 CTAs in 33 clusters of 4) is again
priced too fast (-21 %; grid 10's 132 x 4096 on the H100 -27 %). The family's STANDING stays on grid 10 (4 x H100).

Blind grid 13 (4 x H100, 4 AND 2 ranks, 210 rows; engine_allreduce_grid13.py BLIND13_*) SHIPPED grid 11's two rules with a third
(GRID13_CANDIDATE, fit_grid13_terms on grids <= 12's H100 rows): TensorRT-LLM's two-shot local copies above 2 ranks
(hwmodels.roofline AR_TWOSHOT_COPY 1.42), the fused RMSNorm's norm term by the fusion kernel's cluster (AR_NORM_CS1 0.36
with one CTA, FusedOp::rms_norm's cluster.sync skipped; AR_NORM_CSN 1.07 with more; the ops declare cluster_ctas,
trtllm_cluster_size) and (g - 2) x AR_PEER_SHARE x phase (0.145 us on the H100) per serialized peer wait (each flag
barrier and peer-data phase waits on the slowest of g - 1 peers; vLLM's two-shot none). Blind: 25 of 31 regimes against
main's 22 (4.7 / 16.3 % against 5.4 / 17.1 %).
"""
from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import yaml

ENGINES = ("nccl", "vllm", "sglang", "trtllm")
VLLM_MAX_BYTES = 8 * 1024 * 1024
#: the op kind of each engine's one-shot / two-shot kernel (module docstring)
KIND = {("vllm", "oneshot"): "allreduce_1shot", ("vllm", "twoshot"): "allreduce_2shot",
        ("sglang", "oneshot"): "allreduce_1shot", ("sglang", "twoshot"): "allreduce_2shot",
        ("trtllm", "oneshot"): "allreduce_1shot_lamport", ("trtllm", "twoshot"): "allreduce_2shot"}


STRATEGY_FILE = Path(__file__).parent / "data" / "trtllm_allreduce_strategy.yaml"
#: the fusion ops the strategy table holds (customAllReduceUtils.h mapFusionOpToIndex 0 and 1)
FUSIONS = ("none", "residual_rms_norm")


@functools.lru_cache(maxsize=4)
def trtllm_rule(path: str = str(STRATEGY_FILE)) -> dict:
    """TensorRT-LLM's AUTO strategy rule as the YAML records it: table[sm][tp][fusion] = int codes [hidden, tokens]."""
    doc = yaml.safe_load(Path(path).read_text())
    table = {int(sm): {int(tp): {f: np.asarray(rows, dtype=int) for f, rows in by_f.items()}
                       for tp, by_f in by_sm.items()}
             for sm, by_sm in doc["table"].items()}
    return {"table": table, "codes": {int(k): v for k, v in doc["codes"].items()},
            "hidden": np.asarray(doc["hidden"], float), "tokens": np.asarray(doc["tokens"], float),
            "workspace": {str(k): float(v) for k, v in doc["workspace_bytes"].items()},
            "out_of_table": doc["out_of_table"], "fusion": doc["llama_fusion"]}


def trtllm_sm(architecture: str | None) -> int:
    """The table's SM key: Blackwell and later read the SM 100 table, every earlier architecture the SM 90 one
    (selectStrategyLookUpTable maps sm < 100 to 90, sm >= 100 to 100)."""
    return 100 if architecture == "blackwell" else 90


def trtllm_choose(world, tokens, hidden, fusion: str = "none", sm: int = 90) -> np.ndarray:
    """'nccl', 'oneshot' or 'twoshot' per message of `tokens` x `hidden` bf16 elements over `world` ranks, as
    TensorRT-LLM's AllreduceOp::selectImplementation picks under AUTO (kernels/data/trtllm_allreduce_strategy.yaml):
    NCCL when the message exceeds the workspace, else the table entry at floor(log2) of TP, hidden and tokens, NCCL
    (symmetric) past the table. Arrays broadcast."""
    if fusion not in FUSIONS:
        raise ValueError(f"unknown all-reduce fusion {fusion!r}; allowed: {', '.join(FUSIONS)}")
    r = trtllm_rule()
    g, t, h = np.broadcast_arrays(np.asarray(world, float), np.maximum(np.asarray(tokens, float), 1.0),
                                  np.asarray(hidden, float))
    nbytes = t * h * 2.0
    cap = np.where(g <= 2, r["workspace"]["2"], r["workspace"]["default"])
    out = np.full(g.shape, r["out_of_table"], dtype=object)
    ti = np.floor(np.log2(t) + 1e-9).astype(int)
    hi = np.floor(np.log2(np.maximum(h, 1.0)) + 1e-9).astype(int) - 7
    tp_i = np.floor(np.log2(np.maximum(g, 1.0)) + 1e-9).astype(int)
    by_tp = r["table"][sm]
    for tp in by_tp:
        m = (tp_i == int(np.log2(tp))) & (hi >= 0) & (hi < len(r["hidden"])) & (ti < len(r["tokens"]))
        if m.any():
            codes = by_tp[tp][fusion][hi[m], ti[m]]
            out[m] = np.array([r["codes"][int(c)] for c in codes], dtype=object)
    return np.where(nbytes > cap, "nccl", out).astype(object)


def choose(engine: str, world, nbytes, hidden=None, fusion: str = "none", sm: int = 90):
    """'nccl', 'oneshot' or 'twoshot' per message, as each engine's source picks (module docstring). TensorRT-LLM's
    table needs the message's `hidden` (elements per token, bf16: tokens = nbytes / (2 hidden)), its `fusion` op and
    the table's `sm` (trtllm_sm)."""
    g = np.asarray(world, float)
    s = np.asarray(nbytes, float)
    if engine == "nccl":
        return np.full(np.broadcast(g, s).shape, "nccl", dtype=object)
    if engine in ("vllm", "sglang"):
        one = (g <= 2) | ((g <= 4) & (s < 512 * 1024)) | ((g <= 8) & (s < 256 * 1024))
        out = np.where(one, "oneshot", "twoshot").astype(object)
        return np.where(s >= VLLM_MAX_BYTES, "nccl", out)
    if engine == "trtllm":
        if hidden is None:
            raise ValueError("TensorRT-LLM's all-reduce choice needs the message's hidden size (elements per token)")
        return trtllm_choose(g, s / (2.0 * np.asarray(hidden, float)), hidden, fusion, sm)
    raise ValueError(f"unknown all-reduce engine {engine!r}; allowed: {', '.join(ENGINES)}")


def fuses_norm(engine: str) -> bool:
    """TensorRT-LLM's all-reduce fusion adds the residual and applies RMSNorm inside the all-reduce kernel."""
    return engine == "trtllm"


TRTLLM_BARRIER_FLAGS = 256   # details::kBarrierFlagCount (trtllm_allreduce_fusion.cuh)


def trtllm_grid(tokens, hidden, world, oneshot: bool, sms: int) -> np.ndarray:
    """CTAs of TensorRT-LLM's fusion kernel (allreduce_fusion_kernel_launcher): hidden / 8 threads per token split
    over a cluster of up to 8 CTAs of >= 128 threads, one cluster per token (two-shot: per token of the largest
    rank share), clusters halved while they would exceed the SMs and a CTA can double (<= 1024 threads, register
    limit taken as reached at 1024), grid = min(sms, clusters x size) rounded down to whole clusters."""
    def one(t, h, g):
        tpt, cs = int(h) // 8, 8
        while tpt % cs and cs > 1:
            cs //= 2
        tpb = tpt // cs
        while tpb < 128 and cs >= 2:
            tpb, cs = tpb * 2, cs // 2
        cn = int(t) if oneshot else -(-int(t) // int(g))
        while cn * cs > sms and cs > 1 and tpb <= 512:
            tpb, cs = tpb * 2, cs // 2
        return (min(sms, cn * cs) // cs) * cs
    return np.vectorize(one, otypes=[float])(tokens, hidden, world)


def trtllm_cluster_size(tokens, hidden, world, oneshot: bool, sms: int) -> np.ndarray:
    """CTAs per cluster of TensorRT-LLM's fusion kernel (allreduce_fusion_kernel_launcher; trtllm_grid's rule)."""
    def one(t, h, g):
        tpt, cs = int(h) // 8, 8
        while tpt % cs and cs > 1:
            cs //= 2
        tpb = tpt // cs
        while tpb < 128 and cs >= 2:
            tpb, cs = tpb * 2, cs // 2
        cn = int(t) if oneshot else -(-int(t) // int(g))
        while cn * cs > sms and cs > 1 and tpb <= 512:
            tpb, cs = tpb * 2, cs // 2
        return cs
    return np.vectorize(one, otypes=[float])(tokens, hidden, world)


def trtllm_oneshot_token_steps(tokens, hidden, world, sms: int) -> np.ndarray:
    """Tokens per cluster beyond one in TensorRT-LLM's Lamport one-shot (allreduce_fusion_kernel_oneshot_lamport:
    each cluster owns one token of hidden / 8 16-byte vectors and strides by the number of clusters, so a thread
    polls, sums and stores its tokens one after the other: ceil(tokens / clusters) - 1 further serial token steps)."""
    t = np.maximum(np.asarray(tokens, float), 1.0)
    grid = np.maximum(trtllm_grid(t, hidden, world, True, sms), 1.0)
    clusters = np.maximum(grid / trtllm_cluster_size(t, hidden, world, True, sms), 1.0)
    return np.ceil(t / clusters) - 1.0


def trtllm_twoshot_flag_steps(tokens, hidden, world, sms: int) -> np.ndarray:
    """Flag stores per thread beyond one, over the two-shot kernel's two barriers (module docstring: barrier flags)."""
    grid = np.maximum(trtllm_grid(tokens, hidden, world, False, sms), 1.0)
    return 2.0 * (np.ceil(TRTLLM_BARRIER_FLAGS / grid) - 1.0)


#: vLLM's custom all-reduce launch (custom_all_reduce.cuh @ c9eabec7: block_limit = 36 CTAs of 512 threads) and its
#: packed access (16 B a thread per loop step)
VLLM_CTAS, VLLM_THREADS, VLLM_PACK_BYTES = 36, 512, 16


def vllm_twoshot_waves(nbytes, world) -> np.ndarray:
    """Loop steps of vLLM's two-shot kernel (cross_device_reduce_2stage, custom_all_reduce.cuh @ c9eabec7): each rank's
    reduce-scatter walks its part = packs / g (16-B packs) with stride 36 x 512 threads, and its all-gather the largest
    part the same way, so both phases take ceil(bytes / (16 x 36 x 512 x g)) steps in a row (a thread's step waits on its
    peers' loads before the next one issues). hwmodels.roofline prices these steps for a two-shot op that declares its
    CTAs (add_allreduce: parallel_units = VLLM_CTAS for vLLM's and SGLang's kernels; AR_WAVE_SKIP)."""
    w = VLLM_PACK_BYTES * VLLM_CTAS * VLLM_THREADS * np.maximum(np.asarray(world, float), 1.0)
    return np.ceil(np.asarray(nbytes, float) / w)


def fused_epilogue_s(nbytes, hw) -> np.ndarray:
    """Seconds the residual-add + RMSNorm epilogue of TensorRT-LLM's fusion adds to its plain all-reduce: one more
    read (residual_in) and one more write (residual_out and norm_out against allreduce_out) of the message, at the
    device's HBM bandwidth x memory[elementwise] (module docstring)."""
    return 2.0 * np.asarray(nbytes, float) / (hw.hbm_bw_bytes_s * hw.efficiency.memory["elementwise"])


def add_allreduce(b, name: str, engine: str, nbytes, world, count, where=None, hidden=None, sms=None,
                  fused=False, sm: int = 90, after_gemm=0.0):
    """The all-reduce of `nbytes` per rank over `world` ranks as `engine` runs it: one op of kind collective (NCCL's
    ring), or the engine's one-shot / two-shot kind (KIND) per the engine's choice. With `hidden` (elements per token,
    bf16) and `sms` given, TensorRT-LLM's two-shot pays its barrier-flag stores (trtllm_twoshot_flag_steps).
    `fused` (TensorRT-LLM only; a bool or one per setting): the call carries the residual add + RMSNorm (fusion op
    RESIDUAL_RMS_NORM: the table's fusion column, and where a custom kernel runs, its epilogue's extra read + write
    as bytes_written = 2 x nbytes, which hwmodels.roofline prices at the elementwise HBM rate: fused_epilogue_s); with
    `hidden` and `sms` its ops also declare the fusion kernel's cluster (trtllm_cluster_size: cluster_ctas, which sets
    the fused RMSNorm's share, hwmodels.roofline AR_NORM_CS1 / AR_NORM_CSN).
    `after_gemm` (> 0, scalar or one per setting): the call follows a GEMM on every rank (the tensor-parallel
    all-reduce after a row-parallel GEMM), the value that GEMM's HBM bytes per rank (1 where unknown): its
    custom-kernel ops carry it (op column after_gemm), so a device with engine_ar[after_gemm_s] (and the rule
    after_gemm_share) charges the wait for the slowest rank's GEMM (simulator/calibration/allreduce_in_step.py);
    NCCL's ring ops do not.
    Returns where (per setting) the norm ran inside the custom kernel; with an NCCL pick the caller keeps its norm
    kernel (fallbackRunSubsequentOps)."""
    fz = np.asarray(fused, bool)
    if engine != "trtllm" and fz.any():
        raise ValueError(f"only TensorRT-LLM's all-reduce fuses the norm (engine {engine!r})")
    if engine == "trtllm" and fz.any():
        p_none = choose(engine, world, nbytes, hidden, "none", sm)
        p_norm = choose(engine, world, nbytes, hidden, "residual_rms_norm", sm)
        pick = np.where(np.broadcast_to(fz, np.shape(p_norm)), p_norm, p_none).astype(object)
    else:
        pick = choose(engine, world, nbytes, hidden, "none", sm)
    base = np.ones(np.shape(pick), bool) if where is None else np.broadcast_to(np.asarray(where, bool), np.shape(pick))
    kinds = (("nccl", "collective"),) if engine == "nccl" else (
        ("nccl", "collective"), ("oneshot", KIND[engine, "oneshot"]), ("twoshot", KIND[engine, "twoshot"]))
    for impl, kind in kinds:
        m = (pick == impl) & base
        if np.any(m):
            steps, cluster = 0.0, 0.0
            if engine == "trtllm" and impl != "nccl" and hidden is not None and sms is not None:
                tokens = np.maximum(np.asarray(nbytes, float) / (2.0 * hidden), 1.0)
                if impl == "twoshot":
                    steps = trtllm_twoshot_flag_steps(tokens, hidden, world, sms)
                # the fusion kernel's cluster (hwmodels.roofline AR_NORM_CS1 / AR_NORM_CSN: the fused RMSNorm)
                cluster = trtllm_cluster_size(tokens, hidden, world, impl == "oneshot", sms)
            written = 0.0 if impl == "nccl" else np.where(fz, 2.0, 0.0) * np.asarray(nbytes, float)
            # vLLM's (and SGLang's) kernels declare their 36 CTAs: hwmodels.roofline prices the two-shot's link bytes in
            # whole grid-stride loop steps (vllm_twoshot_waves)
            units = VLLM_CTAS if engine in ("vllm", "sglang") and impl != "nccl" else 0.0
            ag = 0.0 if impl == "nccl" else after_gemm
            b.add(name, kind, bytes_read=nbytes, bytes_written=written, dtype="bf16", count=count, devices=world,
                  sync_steps=steps, parallel_units=units, cluster_ctas=cluster, after_gemm=ag,
                  where=m if np.ndim(m) else None)
    return fz & (pick != "nccl") & base
