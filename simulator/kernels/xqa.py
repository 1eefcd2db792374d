"""TensorRT-LLM's XQA decode / verification kernels as TensorRT-LLM launches them, and as FlashInfer's port (the
measurable stand-in) launches the same kernels.

Sources. TensorRT-LLM's launcher: NVIDIA/TensorRT-LLM cpp/tensorrt_llm/kernels/decoderMaskedMultiheadAttention/
decoderXQAImplCommon.h `computeMultiBlockCount` and decoderXQAImplJIT.cpp (read through the code index; the repository is
too large to fetch). The kernels themselves: FlashInfer's port, flashinfer-python 0.6.4 (PyPI wheel),
flashinfer/data/csrc/xqa/mha.cu, mha_sm90.cu, defines.h, mha.h, xqa_wrapper.cu and flashinfer/xqa.py, flashinfer/jit/xqa.py;
the kernel files carry NVIDIA's TensorRT-LLM copyright (they are TensorRT-LLM's cpp/kernels/xqa sources, which
TensorRT-LLM JIT-compiles), so their tile, threads and residency are TensorRT-LLM's.

Two kernels (flashinfer/xqa.py: run_sm90_fp8_mha = fp8 K/V on compute capability 9; xqa_wrapper.cu picks
launchHopperF8MHAFlashInfer then, else launchMHAFlashInfer):

  mha.cu (kind attn_xqa; bf16 / fp16 K/V on sm_90): warp-specialised mma.sync kernel, ctaShapeInWarps {4, 1, 2} = 256
    threads; one CTA iteration covers ctaTile.x = warpTile.x (64) x 4 warps = 256 keys; query rows padded to
    warpTile.y = roundUp(G, 16) (decode) or 32 (verification: rowsPerBlock = M_TILESIZE 32, grid y = Hkv x
    ceil(q G / 32)); __launch_bounds__(256, nbCtaPerSM): 2 CTAs per SM on sm_90 for decode, 1 for verification
    (M_TILESIZE 32). Two K and two V shared-memory buffers (nbKBuffers, nbVBuffers = 2). MEASURED (launch profile,
    hwmodels/calibration/data/production_attention/xqa_attention_grids_*.csv): 145 KB of shared memory per CTA (157 KB
    for verification) at 128 (227) registers: 1 CTA per SM on the H100, not the 2 the launch bounds ask for.
  mha_sm90.cu (kind attn_xqa_fp8kv; fp8 K/V on sm_90): GMMA (wgmma) kernel, 3 warpgroups (gemm0, gemm1, I/O) = 384
    threads, K/V tiles by TMA from tensor maps of the paged cache; one iteration covers gemm0CtaTileNbTokens = 64
    keys; Q converted to fp8 and the products run in fp8 (MathElem = the cache's type); query rows padded to
    roundUp(G, 8) (swap-AB); verification with q G <= 32 compiles SPEC_Q_SEQ_LEN = q (flashinfer/jit/xqa.py): one CTA
    holds every query row of a KV head. __launch_bounds__(384) with no minimum (OPTIMIZE_FOR_LATENCY = 1): the
    registers set the residency: MEASURED 44 registers x 384 threads, 35 KB of shared memory: 3 CTAs per SM for
    decode; the verification builds' registers depend on q and G (42-100 measured: XQA_GMMA_REGS), 3 to 1 per SM.

Waves. mha.cu's CTA is alone on its SM (145 KB of shared memory): before its first tile it initialises its barriers,
waits on the previous grid (PDL: preExit / acqBulk) and loads Q into shared memory, and after its last it merges its
gemm1 warp groups' partial outputs through shared memory (mergeAndSaveOutTile, three CTA barriers) and stores the
output tile; only then can the next CTA take the SM. So attn_xqa takes hwmodels.roofline CTA_ALONE (every wave pays
its pipeline fill, every wave after the first one CTA turnover, cta_fixed_us, fitted on one-tile short rows), and its
identical one-tile CTAs start each wave in step (hwmodels.roofline CTA_LOCKSTEP: part of each later wave's loads on the
SMs' serial path). The GMMA kernel's 3 co-resident CTAs share their SM: each CTA beyond the first on an SM adds its SM
time (tensor-map prefetch, barrier init, Q load and fp8 conversion, output conversion and store: cta_serial_us) to that
SM's serial path beside the K/V stream (hwmodels.roofline CTA_SERIAL_AFTER_FIRST; an additive per-wave term instead
took the place of the per-tile page walk the middle rows need: calibration_accuracy.py's xqa blind grid); a lone GMMA
call is its fixed time, the prologue's dependent loads (sequence length -> page indices
(KVTilePartLoader::loadPages, again for every 64-key tile) -> the first tile's TMA load; Q is loaded by the I/O warps at
the same time) and one tile.

Both walk a sequence's tiles interleaved: sub-sequence s of nbSub takes tiles s, s + nbSub, ... (seqIter +=
nbSubSeqPerSeq): ceil(ceil(T / tile) / nbSub) serial tiles per CTA. Before its first tile a CTA makes 3 dependent
loads (sequence length -> page indices -> keys); the next tile's page indices are loaded with the current tile
(loadCacheIndir / the TMA producer), so page size adds no per-tile round trip: it enters only through maxSeqLen =
pages per sequence x page size (the page table's width), which the split rules read. The GMMA kernel's loader warps run its 2-deep K / V pipeline (nbKBuf = nbVBuf = 2) ahead of
its math warps, so a CTA's tiles beyond the first 2 are its steady state (XQA_GMMA_STEADY_SHARE of the fitted
iteration, under the roofline's loaded chain: the steady tile is the loader's page-index load).

Multi-block (nbSub > 1): every CTA writes its partial output tile with its row max and row sum to the scratch
workspace, then increments one semaphore per (sequence, KV head[, token block]) with atom.inc (which wraps to 0: no reset
kernel, no memset); the CTA that sees the last count merges all nbSub partials (mergeRowMax, then the tiles double-
buffered): no combine kernel. Priced as the merging CTA's dependent loads as each kernel walks the partials (the
release of its scratch stores before the atomic, XQA_RELEASE_LOADS; mha.cu: the atomic, ceil(nbSub / 8) rounds of row maxima, ceil(nbSub / 2) partial tiles per gemm1 warp group; mha_sm90.cu: the
atomic, ceil(nbSub / nbBuf) rounds of its IO warps' buffers) and the partials' bytes written and read back.

Rows per CTA and the last tile. mha.cu's verification build (SPEC_DEC) runs every CTA at warpTile.y = M_TILESIZE = 32
rows whatever q x G (q 2 and q 4 at G 4 time alike), the decode build at roundUp(G, 16) = 16 rows for G <= 16: a
verification CTA runs two 16-row MMA blocks (instM = 16, qSliceRows = warpTile.y / 16) where a decode CTA runs one. Not
everything doubles: for each k-step a gemm0 warp loads its Q slice (one ldmatrix per row block) and its K slice (once,
whatever the rows: loadMatrix of warpTile.x keys) from shared memory and issues qSliceRows x kSliceRows MMAs on them
(smemQKPartGemm), and gemm1 likewise loads each V fragment once for its row blocks (smemXVPartGemm); the MMAs, the
softmax's elements and the X stores double. The row-dependent part is XQA_ROW_SHARE of a tile's time (fitted on named
verification rows), priced through the padded rows the tile's tensor work runs: 16 + XQA_ROW_SHARE x 16 for q x G <= 32
at G <= 16. Within one
tile gemm0 (the 4 z = 0 warps) and gemm1 (the z = 1 warps) run one after the other; across tiles they overlap. The
last tile of a CTA alone on its SM has nothing to hide its MMAs under: hwmodels.roofline CTA_TILE_EXPOSED prices both
phases of one tile on every wave's serial path, the tile's padded rows x 256 keys (a short tile's time is its busiest
gemm0 warp's 64-key slice: SHORT_SEQ_OPT skips the empty ones). The verification CTA also reads the draft mask from
global memory between its last tile's MMAs and its softmax (applyMaskFromInput): one more dependent load.

The gemm1 walk of a one-tile CTA (mha.cu kernel_mha_impl, flashinfer-python 0.6.4 csrc/xqa/mha.cu). At head dim 128 the
4 gemm1 warps form gemm1NbWarpGrps = 2 warp groups of 2 (gemm1WarpsPerGrp = headElems / warpTile.x), and on sm_90
cacheVTileSeqLen = 64, so nbXTilesPerXIter = 2 and nbXItersPerCtaTile = 2: warp group g walks the tile's 64-key X tiles
g and g + 2 one after the other (idxXTile = xIter x nbXTilesPerXIter + warpGrpIdx; SHORT_SEQ_OPT breaks at the first X
tile past the sequence's end). Each step issues the NEXT step's V load (loadVTilePart(nNext, ...)), whose address needs
that step's page indices, loaded into registers (getPage) at the end of the previous loadVTilePart: the V tile of a
group's second step waits on the page indices its first step loaded, one dependent load more. A tile of 1-2 slices
(T <= 128) takes one step per group, 3-4 slices two on group 0: a one-tile CTA pays ceil(slices / 2) - 1 more dependent
loads (XQA_SLICE, XQA_GEMM1_GROUPS). A CTA of several tiles keeps the page indices one step ahead through its whole
walk: its tiles are the chain's per-tile time (iter), not extra loads.

GMMA columns (mha_sm90.cu, flashinfer-python 0.6.4 csrc/xqa/mha_sm90.cu). The verification build with q G <= 32
(SPEC_Q_SEQ_LEN = q, SWAP_AB) puts all q x G query heads of a KV head into one CTA as the GMMA's N columns
(ctaNbQHeads = 8 / 16 / 32 for q G <= 8 / 16 / 32; the decode CTA has roundUp(G, 8)). Per column, not per key: the
gemm0 accumulator (GmmaAcc<gemm0CtaTileNbTokens, ctaNbQHeads>) and its online softmax, the column max / sum vectors
exchanged through shared memory (ShmQWiseVec xColMax / xColSum, computeWarpGrpColMax_sync), the fp8 X tile
(ctaNbQHeads x 64), gemm1's accumulator (GmmaAcc<headElems, ctaNbQHeads>, rescaleGemm1AccForNewColMax_sync) and its
epilogue (finalizeAndWriteOut_sync: convert and store the output heads); per valid head: the I/O warps' Q load and fp8
conversion, the draft mask, the output store. Each 8 query heads beyond the decode CTA's G add XQA_GMMA_COL_SHARE of
the kind's per-CTA SM time (cta_serial_us) to every CTA on its SM, the first included (the op's cta_extra,
hwmodels.roofline CTA_SERIAL_AFTER_FIRST); read per valid head (XQA_GMMA_COL_MODE). The tiles' chain is not scaled:
a per-tile share fitted beside it on the same rows went to 0. At 32 columns __launch_bounds__(384, headElems x
ctaNbQHeads <= 128 x 16 ? 3 : 2) asks for 2 CTAs per SM and the launch measured 79 registers x 384 threads: 2 resident
per SM, not the decode build's 3. The residency of every verification build is read from its MEASURED registers
(XQA_GMMA_REGS, the occupancy rule: 60 registers at q 3 x G 4 and 66 at q 2 x G 7 leave 2 per SM, 100 at q 4 x G 7
one), passed as the op's resident_ctas; a build without a profile keeps the launch bounds' rule (3, or 2 at 17-32
columns: XQA_GMMA_WIDE_SLOTS). That residency sets the waves of both the stream and the prologue: every CTA of
every wave makes the 3 dependent loads before its first tile (sequence length -> page indices -> the first TMA
load, kernel_mha's IO warps), so a build at 1 or 2 CTAs per SM pays them in ceil(CTAs / (SMs x resident)) waves, not
in the ceil(CTAs / (3 SMs)) waves of the decode build (simulator.kernels.production.emit counts the launch's
sync_steps at its own residency).

Split rules:
  TensorRT-LLM (split="trtllm", what the product prices): computeMultiBlockCount: mb = T // 512
    (kMinHistoryTokensPerBlock), mb = min(mb, round(sqrt(8 mb))), at least 1; waves = B Hkv mb / SMs, and when
    waves / 8 (kTargetWaveFactor) > 1, mb = floor(mb / (waves / 8)); at least 1 (at most the workspace's
    sub-sequences / B: ASSUMPTION that it does not bind).
  FlashInfer's port (split="port", what the measurement runs; the rule of TensorRT-LLM's standalone launchers launchMHA /
    launchHopperF8MHA in the same files, not of its production launcher):
    mha.cu:      nbSub = min(max(1, SMs // (B Hkv)), ceil(maxSeqLen / 256))
    mha_sm90.cu: nbSub = min(max(1, round((3 SMs // (B Hkv)) x 0.25)), ceil(maxSeqLen / 64))
"""
from __future__ import annotations

import numpy as np

from simulator.kernels.production import Launch, attention_io, ceil_div, occupancy

MIN_HISTORY_PER_BLOCK, TARGET_WAVE_FACTOR = 512.0, 8.0
#: keys per CTA iteration: mha.cu ctaTile.x (64 x 4 warps), mha_sm90.cu gemm0CtaTileNbTokens
XQA_TILE, XQA_GMMA_TILE = 256.0, 64.0
#: resident CTAs per SM of mha.cu, decode / verification: its launch bounds ask for 2 on sm_90 (nbCtaPerSM) for
#: decode, but its 145 KB of shared memory per CTA leave room for 1 (MEASURED launch profile, module docstring; the
#: first look, xqa_first_look.csv, priced 2 as read from the launch bounds)
XQA_SLOTS, XQA_SPEC_SLOTS = 1.0, 1.0
#: mha_sm90.cu: no minimum in its launch bounds; MEASURED 3 per SM (44 registers x 384 threads; the first look priced
#: an assumed 1)
XQA_GMMA_SLOTS = 3.0
#: dependent loads before a CTA's first tile (module docstring); the merging CTA's extra ones
XQA_PROLOGUE_LOADS, XQA_MERGE_LOADS = 3.0, 2.0
#: query rows of one verification CTA of mha.cu (M_TILESIZE) and of the GMMA kernel without swap-AB (Q_HEADS_PER_CTA)
SPEC_ROWS, GMMA_Q_HEADS = 32.0, 64.0
#: mha.cu verification (SPEC_DEC): the last tile's gemm0 warps read the draft mask from global memory
#: (applyMaskFromInput, for seqIter >= nbSeqItersWithoutMask) between their MMAs and the softmax: one more dependent
#: load on the CTA's path
XQA_SPEC_MASK_LOADS = 1.0
#: mha_sm90.cu's merge (the CTA that sees the last semaphore count): after the atomic (atom.acq_rel.gpu.inc) its IO
#: warps load the nbSubSeq partials (row sum / max, then the output rows) into MultiBlockSMem::nbBuf buffers (4 for
#: decode, 2 with SPEC_DEC), one warp per buffer, each refilled only after the math warps consumed it: 1 + ceil(nbSubSeq
#: / nbBuf) dependent loads on the merging CTA's path
XQA_GMMA_MERGE_BUFS = 4.0
#: mha.cu's merge (the CTA whose atom.acq_rel.gpu.inc sees the last count): mergeRowMax<8> reads the nbSubSeq partial
#: row maxima 8 in flight (ceil(nbSubSeq / 8) dependent rounds), a CTA barrier, then each of the gemm1NbWarpGrps (2 for
#: head dim 128: 4 warps / (128 / 64)) warp groups walks its share of the partial tiles (n = warpGrpIdx, += 2), loading
#: the next while it rescales the current one (waitGroup<1>): ceil(nbSubSeq / 2) dependent loads. With the atomic,
#: 1 + ceil(nbSubSeq / 8) + ceil(nbSubSeq / 2) dependent loads on the merging CTA's path
XQA_ROWMAX_BUFS, XQA_GEMM1_GROUPS = 8.0, 2.0
#: both kernels' split CTAs, before the semaphore: every CTA of a split sequence stores its partial tile and row sum /
#: max to the scratch workspace, a CTA barrier orders those stores before one thread's atom.acq_rel.gpu.global.inc
#: (mha_sm90.cu kernel_mha after the tile loop; mha.cu kernel_mha_impl, the same atomic), and the release half of
#: acq_rel at GPU scope makes the CTA's scratch stores visible device-wide before the increment: the stores' round
#: trip to L2 is on the path before the atomic's own (counted in merge_loads' leading 1). One more dependent load on
#: a split sequence's path than the merge walk alone (an unsplit CTA's output store is not waited on inside the kernel)
XQA_RELEASE_LOADS = 1.0
#: mha.cu's warp tile along the keys (warpTile.x = 64): one gemm0 warp's K slice and one X tile of the gemm1 walk
XQA_SLICE = 64.0
#: mha.cu's MMA row block (instM = 16): warpTile.y = roundUp(rows, 16) rows are qSliceRows = warpTile.y / 16 blocks
XQA_ROW_BLOCK = 16.0
#: the share of mha.cu's tile time that grows with its 16-row MMA blocks (module docstring, "Rows per CTA"): at
#: warpTile.y = 32 (verification) against 16 (decode at G <= 16) a tile costs (1 + share) decode tiles, not 2. FITTED
#: (one dimension, every other term as committed; simulator.calibration.fit_production_attention.xqa_row_share) on the
#: named verification fit rows (xqa_verify_fit_rows: Llama-3.1-8B, page 16, bf16, q 2 and q 4, context <= 256 at every
#: batch and 1024-16384 at batch <= 64 of xqa_attention_nvidia-h100-80gb-hbm3_2026-11-27.csv: the q 1 fit rows'
#: windows; these rows had been seen, LOOKED-AT, before the rule was chosen); 1 = every part of the tile doubles (the
#: rule before). With the per-SM stream ceiling candidate (hwmodels.roofline.SM_STREAM_CEILING_CANDIDATE, not shipped)
#: and the attn_xqa terms it moves, refitted together: 0.826 (the rows' rms log error 0.077)
XQA_ROW_SHARE = 0.629
#: mha.cu's verification build (SPEC_DEC, warpTile.y = 32 rows) on a chain of tiles: the gemm0 warps that run the
#: tile's MMAs also issue its K loads (kernel_mha_impl, flashinfer-python 0.6.4 csrc/xqa/mha.cu: per K head part,
#: loadKTilePart of the NEXT part by ldgsts, commitGroup, waitGroup<1>, then qSliceRows x kSliceRows MMAs on the
#: current part; the softmax over warpTile.y rows after the last part), one part in flight per warp: the doubled 16-row
#: MMA blocks and the softmax's doubled rows stay on every tile's issue path, so the build streams its K/V slower than
#: the decode build on every tile, not only on the last one (XQA_ROW_SHARE, fitted on short rows). Priced as the
#: verification launch's K/V bytes x (1 + share) for a CTA of at least XQA_SPEC_TILE_MIN_TILES tiles (its per-SM and
#: chip-wide stream alike; a one-tile CTA has no stream for it). CANDIDATE of the seventeenth xqa grid, FITTED (one
#: dimension, every other term as committed; simulator.calibration.fit_production_attention.xqa_spec_tile_share) ONLY
#: on the LOOKED-AT bf16 q 2 rows of grids 10-16 whose CTAs walk >= 2 tiles (xqa_spec_tile_fit_rows: 30 rows, rms log
#: error 0.0763 at 0 -> 0.0668)
XQA_SPEC_TILE_SHARE_CANDIDATE = 0.0481
#: the share priced (0 = the model before). SHIPPED on the seventeenth xqa blind grid (xqa_x17_*.csv, 30 rows priced
#: before the call, xqa_x17_predictions.csv): 4 of 5 regimes against main's 3, pooled 5.4 / 16.7 % against 7.7 / 17.0 %
#: (q 2 below half the SMs 12.6 / 21.0 -> 9.9 / 19.0 %). The grid's twins put the verification build at ~1.25 x its q 1
#: twin below half the SMs (24-64 CTAs, 2-39 tiles alike) but 1.01-1.15 x at 72-152 CTAs: the premium is on the per-SM
#: stream, far above this share, which the fit rows' long one-wave rows hold down
#: REPLACED since by XQA_SPEC_STREAM_SHARE (the eighteenth grid): 0 here; grid 17's model is this share at
#: XQA_SPEC_TILE_SHARE_CANDIDATE with the stream share 0 (fit_production_attention.xqa_before_spec_stream)
XQA_SPEC_TILE_SHARE = 0.0
#: the fewest serial tiles per CTA the share applies to
XQA_SPEC_TILE_MIN_TILES = 2.0
#: mha.cu's verification build streams its K/V at a slower PER-SM rate than the decode build. Source (kernel_mha_impl,
#: flashinfer-python 0.6.4 csrc/xqa/mha.cu): each gemm0 warp streams its 64-key K slice in parts of kHeadPartBytes
#: (128 B per head on sm_90: 2 parts per 128-dim bf16 head, 8 KB per warp and part) with ONE part in flight ahead
#: (nbKBuffers = 2: loadKTilePart(next), commitGroup, waitGroup<1>, then qSliceRows x kSliceRows MMAs on the current
#: part; the softmax / row sums / X store of the tile after its last part, the next tile's first part in flight), and
#: the gemm1 warps likewise hold nbVBuffers = 2 V parts ("@fixme: H100 SXM need more in-flight requests"). A stream of
#: one part in flight whose issue waits on the current part's math has the period (latency + math) / 2 per part: the
#: math on the issue path slows the lone CTA's stream, and the verification build (warpTile.y = 32: two 16-row MMA
#: blocks, a softmax over twice the rows) has more of it. Once the chip's HBM rate binds (about XQA_LATE_SAT_SMS CTAs
#: streaming) the latency grows with the queues and the math's share of the period shrinks: the premium is on the
#: per-SM rate alone (hwmodels.roofline SM_STREAM_CEILING attn_xqa), not on the chip's. Priced as the verification
#: launch's per-SM stream time x (1 + share), carried into the launch's K/V bytes by the factor that gives the
#: roofline's stream rule (the soft knee of one wave, SM_STREAM_SOFT_P; wave by wave with SM_STREAM_TAIL_HEAD beyond
#: one wave) that per-SM time at the committed HBM time (xqa_spec_stream_factor), for CTAs of >= XQA_SPEC_TILE_MIN_TILES
#: tiles; it REPLACES XQA_SPEC_TILE_SHARE (0 with it). CANDIDATE of the eighteenth xqa grid (helper s21xqa), FITTED
#: (one dimension, XQA_SPEC_TILE_SHARE 0, every other term as committed;
#: simulator.calibration.fit_production_attention.xqa_spec_stream_share) ONLY on the LOOKED-AT bf16 q 2 rows of
#: grids 10-17 whose CTAs walk >= 2 tiles (xqa_spec_stream_fit_rows)
XQA_SPEC_STREAM_SHARE_CANDIDATE = 0.246
#: the share priced (0 = the model before: main at f9af03b, with XQA_SPEC_TILE_SHARE 0.0481). SHIPPED on the eighteenth
#: xqa blind grid (xqa_x18_*.csv: 29 rows priced before the call, xqa_x18_predictions.csv, commit 2aa985e): 4 of 4
#: regimes against main's 3 of 4, pooled 6.1 / 11.3 % against 6.2 / 16.6 %; q 2 below half the SMs (8-64 CTAs, 2-40
#: tiles) 10.6 / 26.2 % (signed -10.6) -> 6.9 / 23.9 % (signed -1.3). The grid's q 2 / q 1 twins measure 1.18-1.28
#: at 8-64 CTAs at every chain length (one row, 48 CTAs of 5 tiles, 1.68 with a wide p20-p80 spread)
XQA_SPEC_STREAM_SHARE = XQA_SPEC_STREAM_SHARE_CANDIDATE


def _stream_ceiling_on() -> bool:
    """Whether hwmodels.roofline prices attn_xqa's per-SM stream ceiling (the fits take it away: then no premium)."""
    from hwmodels import roofline as RF

    return bool(RF.SM_STREAM_CEILING.get("attn_xqa", 0.0))


def xqa_spec_stream_factor(ctas, sms, share, sat: float | None = None):
    """The K/V byte factor that makes the roofline's stream rule (hwmodels.roofline: one wave's soft knee
    (a^p + c^p)^(1/p), a = n b / HBM, c = b / rate; beyond one wave the waves' max(U b / HBM, b / rate) one after
    another, the last one SM_STREAM_TAIL_HEAD early) price the per-SM stream time b / rate x (1 + share) at the same
    HBM time. In units of one CTA's per-SM time b / rate: a = n / sat (sat = XQA_LATE_SAT_SMS, the CTAs whose per-SM
    rates add up to the kind's HBM rate). 1 where share is 0."""
    from hwmodels import roofline as RF

    sat = XQA_LATE_SAT_SMS if sat is None else float(sat)
    n = np.maximum(np.asarray(ctas, dtype=np.float64), 1.0)
    U = float(sms) * XQA_SLOTS
    k = 1.0 + float(share)
    waves = np.ceil(n / U)
    p = float(RF.SM_STREAM_SOFT_P)
    x = n / sat
    one = ((x ** p + k ** p) / (x ** p + 1.0)) ** (1.0 / p) if RF.SM_STREAM_SOFT else (
        np.maximum(x, k) / np.maximum(x, 1.0))
    r = n - (waves - 1.0) * U
    head = float(RF.SM_STREAM_TAIL_HEAD)

    def seq(kk):
        return (np.maximum(waves - 1.0 - head, 0.0) * np.maximum(U / sat, kk) + np.maximum(r / sat, kk))

    many = np.maximum(seq(k), n / sat) / np.maximum(seq(1.0), n / sat)
    return np.where(waves <= 1.0, one, many)
#: mha_sm90.cu's verification CTA (SPEC_DEC, SWAP_AB at q G <= 32): the share of the kind's per-CTA SM time
#: (cta_serial_us.attn_xqa_fp8kv) that each 8 query heads (GMMA columns) beyond the decode CTA's G add, paid by every
#: CTA on its SM (module docstring, "GMMA columns"; the op's cta_extra). FITTED (one dimension, every other term as
#: committed; simulator.calibration.fit_production_attention.xqa_gmma_col_share) on the named fit rows
#: xqa_gmma_verify_fit_rows (the 30 fp8 q 2 / q 4 rows of xqa_attention_nvidia-h100-80gb-hbm3_2026-11-27.csv,
#: Llama-3.1-8B, page 16; LOOKED-AT before the rule was chosen); 0 = the verification CTA priced as the decode CTA
XQA_GMMA_COL_SHARE = 0.603
#: what counts as the CTA's columns (module docstring): "valid" = q x G query heads (the Q load and fp8 conversion,
#: the mask, the output conversion and store: per valid head; the fit rows' rms 0.0618), "padded" = ctaNbQHeads (8 /
#: 16 / 32: the GMMA N, the column max / sum, gemm1's accumulator; rms 0.0704 at its own fitted share), "both" = their
#: mean (rms 0.0629). Chosen on the fit rows' rms
XQA_GMMA_COL_MODE = "valid"
#: mha_sm90.cu's resident CTAs at 32 GMMA columns where its registers were not profiled (XQA_GMMA_REGS):
#: __launch_bounds__(384, headElems x ctaNbQHeads <= 128 x 16 ? 3 : 2) asks for 2 (the rule's ASSUMPTION for an
#: unprofiled build of 17-32 columns; an unprofiled build of <= 16 columns gets the decode build's XQA_GMMA_SLOTS)
XQA_GMMA_WIDE_SLOTS = 2.0
#: mha_sm90.cu's threads per CTA (3 warpgroups)
XQA_GMMA_THREADS = 384.0
#: MEASURED registers per thread and shared memory per CTA (bytes) of mha_sm90.cu's JIT builds (flashinfer-python 0.6.4,
#: head dim 128, page 16, bf16 Q, fp8 K/V, sm_90a), keyed by (query rows q = SPEC_Q_SEQ_LEN, query heads per KV head
#: G = HEAD_GRP_SIZE): the build's compile-time settings, so the launch profile of one shape holds for every batch and
#: context. From the committed launch profiles (torch.profiler's "registers per thread" / "shared memory", H100 80GB
#: HBM3, 2026-11-27) in hwmodels/calibration/data/production_attention/: xqa_attention_grids_*.csv (q 1 at G 4 / 7 / 8,
#: q 2 and q 4 at G 4), xqa_x7_grids_*.csv and xqa_x8_grids_*.csv (q 8 at G 4; q 3 at G 4, q 2 and q 4 at G 7). The
#: registers grow with the CTA's columns (q x G query heads: the gemm0 / gemm1 accumulators GmmaAcc<.., ctaNbQHeads>,
#: the column max / sum) but not monotonically (q 3 x G 4 = 12 heads: 60; q 4 x G 4 = 16: 56): only a profile tells.
#: The residency is the occupancy rule (simulator.kernels.production.occupancy: 64 K registers in 256-register units per
#: warp; here the registers bind: 44 -> 3, 56 -> 3, 60 -> 2, 66 / 67 -> 2, 79 / 80 -> 2, 100 -> 1 per SM). These rows were
#: LOOKED-AT (the eighth grid's profile showed the misses this table explains). A build not in the table keeps the
#: launch-bounds rule (XQA_GMMA_SLOTS at <= 16 columns, XQA_GMMA_WIDE_SLOTS at 17-32): an ASSUMPTION, since its
#: registers are unknown
XQA_GMMA_REGS = {
    (1, 4): (44, 35456), (1, 7): (44, 35456), (1, 8): (44, 35456),
    (2, 4): (42, 35456), (3, 4): (60, 37888), (4, 4): (56, 37888), (8, 4): (79, 42880),
    (2, 7): (66, 37888), (4, 7): (100, 42880),
    # the tenth grid's launch profile (xqa_x10_grids_*.csv), read after its errors were seen (LOOKED-AT): G 5 q 2 at 67
    # registers holds 2 per SM, not the launch bounds' 3; the 80-register builds of 17-32 columns confirm the wide rule
    (2, 5): (67, 37888), (4, 5): (80, 42880), (3, 6): (80, 42880), (4, 6): (80, 42880), (3, 7): (80, 42880),
}
#: shared memory per SM the occupancy rule reads where the caller gives none: the H100's 228 KB (hwmodels' H100-SXM
#: smem_per_unit_bytes); never the binding limit at these builds' 35-43 KB per CTA
XQA_SMEM_PER_SM = 233472.0
#: read the residency from XQA_GMMA_REGS (False = the launch-bounds rule alone, the model before)
XQA_GMMA_USE_REGS = True
#: mha_sm90.cu's K / V loader warps (kernel_mha, flashinfer-python 0.6.4 csrc/xqa/mha_sm90.cu) walk a CTA's tiles
#: idxKTile = idxKTileInit + idxIter x nbSubSeq and, before each tile's TMA load, read that tile's page indices
#: (KVTilePartLoader::loadPages: nbPagesPerTile = 64 / tokensPerPage indices of 4 bytes, a generic global load whose
#: value the TMA address needs). An unsplit CTA (nbSubSeq = 1) reads consecutive tiles' indices, 16 bytes apart at
#: page 16, so every other tile's indices sit in the 32-byte sector the previous tile's load already brought into the
#: CTA's L1; a split CTA's stride is nbSubSeq x 16 bytes >= 32, a sector of its own every tile. So an unsplit walk's
#: tiles after the first are a share of the split walk's per-tile time (iter_us.attn_xqa_fp8kv, fitted on rows most of
#: which are split). FITTED (one dimension, every other term as committed;
#: simulator.calibration.fit_production_attention.xqa_gmma_unsplit_share) ONLY on the 8 fp8 rows of the per-SM stream
#: scan (xqa_stream_fit_rows: 8-400 unsplit CTAs of 256 64-key tiles, xqa_x11_nvidia-h100-80gb-hbm3_2026-11-27.csv;
#: their rms log error 0.190 at share 1 -> 0.064). ASSUMPTIONS: the same share at every page size (the sector arithmetic would
#: give page 64 more hits; not measured) and none for a split walk. Read by xqa() only when XQA_GMMA_UNSPLIT is on
XQA_GMMA_UNSPLIT_SHARE = 0.773
#: price the unsplit GMMA walk at XQA_GMMA_UNSPLIT_SHARE (False = every tile at the fitted iteration). OFF (not shipped):
#: the twelfth XQA blind grid (xqa_x12_*.csv, priced before the call) did not reach its regime (the fp8 middle), and
#: its split fp8 long chains (TensorRT-LLM's split, 21-42 tiles per CTA), which the rule leaves at the fitted
#: iteration, ran 14-19 % faster than priced: split walks are fast too, so the sector-sharing premise is refuted; on
#: the eleventh grid's unsplit fp8 middle rows (LOOKED-AT) it over-corrects, +3..+20 % -> -5..-14 %
XQA_GMMA_UNSPLIT = False
#: mha_sm90.cu's K/V pipeline depth: SharedMem::nbKBuf = nbVBuf = nbXBuf = 2 (flashinfer-python 0.6.4
#: csrc/xqa/mha_sm90.cu). The K loader warp's walk (kernel_mha, "load k"): per tile, loadPages (the tile's page indices,
#: a dependent global load), then kBar[idxIter % 2].consumed.arrive_and_wait (the buffer the math freed two tiles
#: back), then the TMA load; the V loader the same. So the loaders run up to 2 tiles ahead of the gemm0 / gemm1 warps:
#: the first 2 tiles of a CTA's walk pay their page-index load, their TMA round trip and their math one after the other
#: (the fitted iteration, iter_us.attn_xqa_fp8kv, fitted on rows whose CTAs walk 1-40 tiles), the later ones only the
#: longest of the loader's per-tile page-index load, half a TMA round trip and the tile's math (the steady state)
XQA_GMMA_PIPE_TILES = 2.0
#: the steady-state tile of a GMMA CTA's walk (tiles beyond XQA_GMMA_PIPE_TILES) as a share of the fitted iteration,
#: split and unsplit walks, decode and verification builds alike (the loader warps' walk is the same in every build).
#: The steady tile is the loader's page-index load, a dependent global load, so it also waits on the launch's own HBM
#: traffic: the kind is one of hwmodels.roofline CHAIN_LOADED's (its queueing term at the shipped CHAIN_LOADED_C, not
#: refitted), and the share is the idle one. FITTED (one dimension, every other term as committed, the loaded chain
#: on; simulator.calibration.fit_production_attention.xqa_gmma_steady_share) ONLY on the named rows
#: xqa_gmma_steady_fit_rows: the 8 fp8 rows of the per-SM stream scan (8-400 unsplit CTAs of 256 tiles,
#: xqa_x11_nvidia-h100-80gb-hbm3_2026-11-27.csv) and the twelfth grid's 4 fp8 few-CTA rows (TensorRT-LLM's split,
#: 21-42 tiles per CTA, xqa_x12_nvidia-h100-80gb-hbm3_2026-11-27.csv; LOOKED-AT: seen before this rule); their rms log
#: error 0.25 at share 1 -> 0.074. The choice of the loaded form and of one share for the verification builds was made
#: after looking at the eleventh and twelfth grids' fp8 middle and q 2 rows (LOOKED-AT): without the loaded term the
#: idle share (0.785) over-corrects the middle (-5..-17 %), and the loaded term without the share in the verification
#: builds prices their q 2 middle rows +23..+31 %
XQA_GMMA_STEADY_SHARE = 0.691
#: price the GMMA walk's steady-state tiles at XQA_GMMA_STEADY_SHARE, under the loaded chain (False = every tile at the
#: fitted iteration, the model before). The fits of the xqa kinds' terms and shares run with both off
#: (fit_production_attention.XQA_FIT_WITHOUT_STEADY), so the fitted terms are the ones the share was fitted under
XQA_GMMA_STEADY = True


#: mha.cu (attn_xqa) under programmatic dependent launch, a launch of ONE partial wave holding more than half the SMs.
#: mha.cu calls preExit (griddepcontrol.launch_dependents) right after its barrier init (kernel_mha_impl,
#: flashinfer-python 0.6.4 csrc/xqa/mha.cu), so the next call's grid is dispatched while this one streams: its CTAs take
#: the SMs this launch leaves idle (SMs - n of them, 145 KB of shared memory: one per SM) and wait there (acqBulk); the
#: rest, 2n - SMs when n > SMs / 2, are dispatched only as this launch's CTAs exit, and pay their dispatch, barrier init,
#: Q load and prologue after the early ones began to stream. Those late CTAs finish after the early ones; in the tail they
#: stream at their SM's rate, not at a share of the HBM rate, so the tail is the late start times the share of the
#: per-SM rate each CTA got while all n streamed: min(1, XQA_LATE_SAT_SMS / n). Priced as XQA_LATE_LOADS dependent
#: loads (sync_us.attn_xqa) x that share on the launch's path. The mechanism's form is read from the source; the size
#: (XQA_LATE_LOADS) is FITTED (simulator.calibration.fit_production_attention.xqa_late_loads, one dimension, every
#: other term as committed) ONLY on the bf16 PDL-on rows of the tenth to twelfth grids (xqa_late_fit_rows; LOOKED-AT:
#: their middle rows' misses, -8..-22 % at 72-104 CTAs, 2.5-7 us a launch, motivated the rule). The twelfth grid's
#: diagnostics put about half of that extra on PDL (enable_pdl off: 1-2.5 us faster): the fitted size holds the rest
#: too (ASSUMPTION: the same share form). A launch of n <= SMs / 2 places every next CTA early: no late CTAs
XQA_LATE_LOADS_HARD = 18.01
#: XQA_LATE_LOADS refitted JOINTLY with hwmodels.roofline.SM_STREAM_SOFT_P (the soft knee of a one-wave stream, the
#: sixteenth xqa grid's candidate; fit_production_attention.xqa_soft_knee on its LOOKED-AT rows, 172 bf16 rows of grids
#: 10-15 and the x15d scan): 15.86 with the soft knee on. XQA_LATE_LOADS_HARD above is the size fitted without it (the
#: fourteenth grid's, fit_production_attention.xqa_late_loads, which holds the soft knee off), the model before
XQA_LATE_LOADS_SOFT = 15.86
#: the size priced: SHIPPED with hwmodels.roofline SM_STREAM_SOFT on the sixteenth xqa blind grid (xqa_x16_*.csv)
XQA_LATE_LOADS = XQA_LATE_LOADS_SOFT
#: SMs whose per-SM stream rate (hwmodels.roofline SM_STREAM_CEILING attn_xqa, 50.58 GB/s) adds up to the kind's fitted
#: HBM rate (3.35 TB/s x memory.attn_xqa 0.8289 = 2.777 TB/s): 54.9 (tests/test_xqa_late.py checks it against the files)
XQA_LATE_SAT_SMS = 54.9
#: the fewest serial tiles per CTA the late-CTA term applies to. Chosen AFTER the fourteenth grid's call on LOOKED-AT
#: rows: with every launch priced (1 = the candidate as committed before the call) the one-tile short launches of 72-128
#: CTAs (6-10 us: the campaign's short bf16 rows, the lock-step sweep, the fourth and CTA_ALONE grids) went +28..+41 %
#: (main's model -8..0 %): a one-tile CTA has no stream for a late start to lengthen. Every fourteenth-grid row in the
#: rule's regime walks >= 4 tiles, so its blind prices are the committed candidate's (tests/test_xqa_late.py)
XQA_LATE_MIN_TILES = 2.0
#: price mha.cu's late CTAs (False = the model before). SHIPPED on the fourteenth xqa blind grid (xqa_x14_*.csv, 34 rows
#: priced before the call, xqa_x14_predictions.csv): 5 of 6 regimes, 3.1 / 11.7 % (main's 4 of 6, 7.8 / 16.4 %; the
#: one-partial-wave 72-104-CTA bf16 middle 11.2 / 16.6 -> 2.9 / 5.7 %, 112-128 CTAs 5.1 / 10.0 -> 0.7 / 3.9 %). The xqa
#: fits hold it off (fit_production_attention._xqa_ceiling_off): the fitted terms are unchanged
XQA_LATE = True


def gmma_resident(q, G, smem_per_sm: float = XQA_SMEM_PER_SM):
    """Resident CTAs per SM of mha_sm90.cu's build for (q, G) from its MEASURED registers (XQA_GMMA_REGS) by the
    occupancy rule; 0 where the build was not profiled (the caller's launch-bounds rule then holds)."""
    q, G = np.broadcast_arrays(np.asarray(q, dtype=np.float64), np.asarray(G, dtype=np.float64))
    out = np.zeros(q.shape)
    for (qq, gg), (regs, smem) in XQA_GMMA_REGS.items():
        hit = (q == qq) & (np.abs(G - gg) < 1e-9)
        if hit.any():
            out = np.where(hit, occupancy(XQA_GMMA_THREADS, smem, regs, smem_per_sm), out)
    return out


def xqa_multi_block(B, T, Hkv, sms):
    """TensorRT-LLM's computeMultiBlockCount (module docstring)."""
    mb = np.floor(np.asarray(T, dtype=np.float64) / MIN_HISTORY_PER_BLOCK)
    mb = np.maximum(np.minimum(mb, np.round(np.sqrt(mb * 8.0))), 1.0)
    adj = B * Hkv * mb / float(sms) / TARGET_WAVE_FACTOR
    mb = np.where(adj > 1.0, np.floor(mb / np.maximum(adj, 1.0)), mb)
    return np.maximum(mb, 1.0)


def port_split(B, T, Hkv, sms, gmma, page=16.0):
    """FlashInfer's port: sub-sequences per (sequence, KV head) of mha.cu (gmma False) / mha_sm90.cu (module
    docstring); maxSeqLen = the page table's width in tokens; sms = the multiProcessorCount the launcher is given
    (a scalar or one per setting)."""
    B, T, Hkv = (np.asarray(x, dtype=np.float64) for x in (B, T, Hkv))
    sms = np.asarray(sms, dtype=np.float64)
    max_t = ceil_div(T, page) * np.asarray(page, dtype=np.float64)
    bh = np.maximum(B * Hkv, 1.0)
    amp = np.maximum(1.0, np.floor(sms / bh))
    hop = np.maximum(1.0, np.floor(np.floor(3.0 * sms / bh) * 0.25 + 0.5))   # C round(): half away from 0
    return np.where(gmma, np.minimum(hop, ceil_div(max_t, XQA_GMMA_TILE)), np.minimum(amp, ceil_div(max_t, XQA_TILE)))


def xqa(B, q, T, Hq, Hkv, d, kvb, sms: int, page=16.0, split: str = "trtllm", gmma_slots=None, use_regs=None,
        split_sms=None):
    """Launches of one XQA call: mha.cu for 2-byte K/V, mha_sm90.cu for fp8 K/V (each a Launch restricted by `where`
    to its settings); split "trtllm" (the product) or "port" (FlashInfer's port, the measured stand-in); use_regs
    (default XQA_GMMA_USE_REGS): the GMMA verification build's residency from its profiled registers; split_sms: the
    SM count the port's launcher is handed (xqa_wrapper's multiProcessorCount: only its split reads it; default sms;
    a measurement may hand it a smaller one to launch unsplit CTAs)."""
    use_regs = XQA_GMMA_USE_REGS if use_regs is None else bool(use_regs)
    B, q, T, Hq, Hkv, d, kvb, page = np.broadcast_arrays(
        *(np.asarray(x, dtype=np.float64) for x in (B, q, T, Hq, Hkv, d, kvb, page)))
    if split not in ("trtllm", "port"):
        raise ValueError(f"split must be 'trtllm' or 'port', not {split!r}")
    gmma = kvb < 2.0
    G = Hq / np.maximum(Hkv, 1.0)
    spec = q > 1.0
    mb = (xqa_multi_block(B, T, Hkv, sms) if split == "trtllm"
          else port_split(B, T, Hkv, sms if split_sms is None else split_sms, gmma, page))
    # token blocks per KV head (grid y of mha.cu, grid x of mha_sm90.cu) and the padded rows each computes
    blocks = np.where(gmma, np.where(q * G <= 32.0, 1.0, ceil_div(q * G, GMMA_Q_HEADS)),
                      np.where(spec, ceil_div(q * G, SPEC_ROWS), 1.0))
    spec_rows = np.where(q * G <= 8.0, 8.0, np.where(q * G <= 16.0, 16.0, 32.0))
    rows = np.where(gmma, np.where(spec, np.where(q * G <= 32.0, spec_rows, GMMA_Q_HEADS), np.ceil(G / 8.0) * 8.0),
                    np.where(spec, SPEC_ROWS, np.ceil(G / 16.0) * 16.0))
    ctas = mb * Hkv * B * blocks
    tile = np.where(gmma, XQA_GMMA_TILE, XQA_TILE)
    iters = ceil_div(ceil_div(T, tile), mb)
    # mha_sm90.cu, an unsplit CTA: its tiles after the first read their page indices from a sector already in L1
    # (XQA_GMMA_UNSPLIT_SHARE); the chain's tiles as priced
    chain_iters = (np.where(gmma & (mb <= 1.0) & (iters > 1.0), 1.0 + (iters - 1.0) * XQA_GMMA_UNSPLIT_SHARE, iters)
                   if XQA_GMMA_UNSPLIT else iters)
    # mha_sm90.cu decode: the loaders run XQA_GMMA_PIPE_TILES tiles ahead, so the tiles beyond the pipeline's depth
    # are the steady state (XQA_GMMA_STEADY_SHARE of the fitted iteration), split or unsplit
    if XQA_GMMA_STEADY:
        chain_iters = np.where(gmma & (iters > XQA_GMMA_PIPE_TILES),
                               XQA_GMMA_PIPE_TILES + (iters - XQA_GMMA_PIPE_TILES) * XQA_GMMA_STEADY_SHARE, chain_iters)
    flops, kv, qb, ob = attention_io(B, q, T, Hq, Hkv, d, d, kvb)
    # padded rows, as the tensor cores run them; mha.cu's CTA (alone on its SM) runs whole 256-key tiles: a short
    # tile's time is its busiest gemm0 warp's 64-key slice (SHORT_SEQ_OPT), the same as a full tile's
    keys_run = np.where(gmma, T, mb * iters * XQA_TILE)
    # mha.cu: a warp loads each K (gemm0) and V (gemm1) fragment from shared memory once for all its 16-row blocks
    # (qSliceRows x kSliceRows MMAs per loaded K slice): only XQA_ROW_SHARE of a tile's time grows with the blocks
    rows_dec = np.ceil(G / XQA_ROW_BLOCK) * XQA_ROW_BLOCK
    rows_run = np.where(gmma | (rows <= rows_dec), rows, rows_dec + XQA_ROW_SHARE * (rows - rows_dec))
    flops_run = 2.0 * B * Hkv * blocks * rows_run * keys_run * 2.0 * d
    merge = np.where(mb > 1.0, 2.0 * mb * B * Hkv * blocks * rows * (d + 2.0) * 4.0, 0.0)
    merge_loads = XQA_RELEASE_LOADS + np.where(gmma, 1.0 + ceil_div(mb, np.where(spec, 2.0, XQA_GMMA_MERGE_BUFS)),
                                               1.0 + ceil_div(mb, XQA_ROWMAX_BUFS) + ceil_div(mb, XQA_GEMM1_GROUPS))
    # mha.cu, a CTA of one tile: its busiest gemm1 warp group walks ceil(slices / 2) of the tile's 64-key X tiles, the
    # second one's V load waiting on the page indices loaded with the first's (XQA_GEMM1_WALK)
    slices = np.minimum(ceil_div(T, XQA_SLICE), XQA_TILE / XQA_SLICE)
    walk = np.where(~gmma & (iters <= 1.0), ceil_div(slices, XQA_GEMM1_GROUPS) - 1.0, 0.0)
    loads = (XQA_PROLOGUE_LOADS + np.where(mb > 1.0, merge_loads, 0.0)
             + np.where(~gmma & spec, XQA_SPEC_MASK_LOADS, 0.0) + walk)
    if XQA_LATE:   # mha.cu, one partial wave of more CTAs than half the SMs: the next call's late CTAs (XQA_LATE)
        late = (~gmma & (ctas > 0.5 * float(sms)) & (ctas <= float(sms) * XQA_SLOTS)
                & (iters >= XQA_LATE_MIN_TILES))
        loads = loads + np.where(late, XQA_LATE_LOADS * np.minimum(1.0, XQA_LATE_SAT_SMS / np.maximum(ctas, 1.0)), 0.0)
    slots_g = XQA_GMMA_SLOTS if gmma_slots is None else float(gmma_slots)
    # the roofline counts waves with one residency per kind (cta_slots.attn_xqa): a residency of the verification
    # build other than the decode build's is priced as more CTAs at the decode residency (the same waves)
    amp_units = ctas * XQA_SLOTS / np.where(spec, XQA_SPEC_SLOTS, XQA_SLOTS)
    # mha_sm90.cu verification: the per-column share of the CTA's SM time (XQA_GMMA_COL_SHARE) and the residency at 32
    # columns (XQA_GMMA_WIDE_SLOTS)
    cols_dec = np.ceil(G / 8.0) * 8.0
    if XQA_GMMA_COL_MODE == "valid":
        more = np.maximum(q * G - G, 0.0)
    elif XQA_GMMA_COL_MODE == "both":
        more = 0.5 * (np.maximum(rows - cols_dec, 0.0) + np.maximum(q * G - G, 0.0))
    else:
        more = np.maximum(rows - cols_dec, 0.0)
    col_extra = np.where(gmma & spec & (q * G <= 32.0), XQA_GMMA_COL_SHARE * more / 8.0, 0.0)
    # the verification build's residency: from its profiled registers (XQA_GMMA_REGS), else the launch bounds' 2 at
    # 17-32 columns (0 = the kind's XQA_GMMA_SLOTS)
    wide = gmma & spec & (q * G > 16.0) & (q * G <= 32.0)
    res_regs = gmma_resident(q, G) if use_regs else np.zeros(q.shape)
    res_g = np.where(gmma & spec & (res_regs > 0.0), res_regs, np.where(wide, XQA_GMMA_WIDE_SLOTS, 0.0))
    # mha.cu verification on a chain: the doubled row blocks on every tile's issue path (XQA_SPEC_TILE_SHARE)
    spec_tile = np.where(~gmma & spec & (iters >= XQA_SPEC_TILE_MIN_TILES), 1.0 + XQA_SPEC_TILE_SHARE, 1.0)
    if XQA_SPEC_STREAM_SHARE and _stream_ceiling_on():   # mha.cu verification: its slower per-SM stream
        spec_tile = spec_tile * np.where(~gmma & spec & (iters >= XQA_SPEC_TILE_MIN_TILES),
                                         xqa_spec_stream_factor(ctas, sms, XQA_SPEC_STREAM_SHARE), 1.0)
    out = []
    for sel, kind, units, slots, dtype in ((~gmma, "attn_xqa", amp_units, XQA_SLOTS, "bf16"),
                                           (gmma, "attn_xqa_fp8kv", ctas, slots_g, "fp8")):
        if not sel.any():
            continue
        out.append(Launch("attention", kind, units, slots, chain_iters, loads, np.maximum(flops, flops_run),
                          kv * blocks * spec_tile + mb * qb, ob + merge, dtype=dtype,
                          where=None if sel.all() else sel,
                          **({"cta_extra": col_extra, "resident": res_g} if kind == "attn_xqa_fp8kv" else {})))
    return out, {"multi_block": mb, "ctas": ctas, "tile": tile, "rows": rows, "blocks": blocks, "gmma": gmma}
