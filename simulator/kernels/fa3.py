"""FlashAttention-3 (Hopper) and FlashAttention-4 (Blackwell) paged decode / verification as they launch them
(Dao-AILab/flash-attention, commit 0251105a2fb19d2957484b7f023cd8c115286ced; FA3's own hopper/ binary, built from that
commit, is measured too: its kinds below). attn_fa3's rates are MEASURED through a stand-in, FA4-CuTe's sm_90 forward
(flash-attn-4 4.0.0b36, `fa4cute_sm90` below: hopper/'s 128 x 128 paged tiles, stages and warpgroups, but no split-KV,
no combine and no persistent scheduler on sm_90); FA3's split plan, scheduler and combine keep their structure from
the source (data/attention_families.yaml `fa3.stand_in`).

fa3  hopper/flash_api.cpp (get_num_splits, get_pack_gqa, get_pagedkv_tma), hopper/heuristics.h
  (num_splits_heuristic, should_pack_gqa), hopper/tile_size.h (tile_size_fwd_sm90), hopper/flash_prepare_scheduler.cu
  (dynamic splits of varlen calls), hopper/tile_scheduler.hpp:
    tiles (bf16): d <= 64: 192 x 192 (128 keys with a page table without TMA); d <= 128: 128 x 176 (128 keys when
    causal / local / paged without TMA); d <= 192: 128 x 128 (96 paged); else 128 x 80. The paged K/V uses TMA only
    when the page size is a multiple of kBlockN and q x G > kBlockM, so decode reads pages with cp.async (128 keys).
    PackGQA always for a split or a non-TMA page table: q x G rows per KV head in 128-row m-blocks.
    num_splits_heuristic(total_mblocks, SMs, n_blocks, ...): 1 if the m-blocks fill 80 % of the SMs (or
    n_blocks <= 4); else the smallest split count whose wave efficiency is >= 0.85 x the best, <= 128. A varlen call
    (vLLM: cu_seqlens_q + seqused_k) evaluates it as if batch = 1 (an upper bound), then prepare_varlen_num_blocks
    gives each request min(ceil(n_blocks / ceil(total_blocks x 1.1 x Hkv / SMs)), that bound) splits.
    The kernel is persistent on sm_90 (one CTA per SM walking tiles handed out by an atomic tile counter:
    scheduler_needs_semaphore); its combine kernel merges the splits (flash_fwd_combine_kernel.h). Each varlen call
    first launches prepare_varlen_num_blocks (flash_prepare_scheduler.cu: one CTA writes every request's split count
    and m-blocks), and the combine kernel runs whenever the split BOUND is > 1 (flash_api.cpp mha_fwd), its CTAs of
    an unsplit request exiting after reading num_splits (seen on the binary: both kernels in every profiled call,
    fa3_binary_nvidia-h100-80gb-hbm3_2026-11-27_grids.csv).
    Per tile (request, head, m-block, split): its request's seqused_k / page-table row, then the pages: 3 dependent
    loads before the first K/V block. Rates fitted on the FA4-CuTe sm_90 measurement (simulator/calibration/
    fit_production_attention.py fit_fa3, the cp.async page walk: the path hopper/'s decode takes); the combine kernel
    borrows FlashInfer's merge terms. The persistent launch is one wave (hwmodels.roofline CTA_ALONE: no CTA turnover,
    one pipeline fill).
    FA3's own binary (kind attn_fa3, measured: fa3_binary_*.csv): the main kernel is its own kind attn_fa3_persist
    (attn_fa3_persist_fp8kv for fp8: hopper/'s 128 x 160 fp8 paged tile, FA3_FP8_PAGED_TILE_N); a CTA's tiles are
    waves of one tile on its SM (PERSIST_TILE_WAVES: a fill per tile, a turnover per later tile, the first tile's
    prologue loads once: the page walk + the persistent scheduler's loads, scheduler_loads); its terms (fixed time,
    prologue load, turnover, streaming rate, each build's per-block time) fitted on the binary's named rows
    (fit_production_attention.fit_fa3_binary); a partial last round of tiles is its own op row after the full rounds
    (PERSIST_LAST_ROUND); the prepare kernel is its own kind attn_prepare_fa3 (prepare_steps: a load and the merge
    sort's passes, fitted on the kernel's own records).
fa4  flash_attn/cute (CuTe-DSL, sm_100): the same packing and split rules (flash_attn/cute/interface.py reuses
    num_splits_heuristic) with 128 x 128 tiles and two Q tiles per CTA on tcgen05; modelled with fa3's structure
    (kind attn_fa4) and attn_fa3's rates (measured on Hopper): ASSUMPTION, no Blackwell device here.
"""
from __future__ import annotations

import numpy as np

from simulator.kernels.decode_attention import fa2_num_splits  # noqa: F401  (FA2's variant of the same rule)
from simulator.kernels.production import (
    Launch,
    attention_io,
    causal_flops,
    causal_tile_blocks,
    ceil_div,
    combine_io,
    lpt_makespan,
)

FA3_COMMIT = "0251105a2fb19d2957484b7f023cd8c115286ced"
FA3_PROLOGUE_LOADS = 3.0
#: rows per CTA of FA3's combine kernel at head dim 128 (flash_fwd_combine_launch_template.h kBlockM = 8 when kBlockK %
#: 128 == 0)
COMBINE_ROWS = 8.0


def fa3_tile(d, paged_no_tma=True, causal=False, dv=None):
    """(kBlockM, kBlockN) of tile_size_fwd_sm90 for bf16; dv: V's head dim where it is not d (d <= 64 with dv 512:
    MLA's absorbed decode, 64 x 64; with dv 256: 128 x 96)."""
    d = np.asarray(d, dtype=np.float64)
    dv = d if dv is None else np.asarray(dv, dtype=np.float64)
    n128 = np.where(paged_no_tma | causal, 128.0, 176.0)
    bm = np.where(d <= 64, np.where(dv > 256, 64.0, np.where(dv > 64, 128.0, 192.0)), 128.0)
    bn = np.where(d <= 64, np.where(dv > 256, 64.0, np.where(dv > 64, 96.0, np.where(paged_no_tma | causal, 128.0,
                                                                                           192.0))),
                  np.where(d <= 128, n128, np.where(d <= 192, np.where(paged_no_tma, 96.0, 128.0), 80.0)))
    return bm, bn


#: dependent loads of the persistent scheduler per tile (hopper/tile_scheduler.hpp VarlenDynamicPersistentTileScheduler @
#: 0251105a): prefetch_next_work's atomicAdd on the tile counter, then tile_idx_to_work_tile's read of the tile's
#: batch group (num_m_blocks_ptr / num_splits_dynamic_ptr, 31 requests per warp), which needs the counter's value
FA3_SCHED_LOADS = 2.0
#: requests one warp of the scheduler (and of prepare_varlen_num_blocks) covers per load (kNumBatchPerWarp = 31)
FA3_BATCH_PER_WARP = 31.0
#: price the persistent kernel's partial last round of tiles after its full rounds (fa3: the binary's dynamic
#: scheduler); False = every tile inside one bandwidth-bound body (the earlier rule)
PERSIST_LAST_ROUND = True
#: the persistent CTA's tiles as rounds on its SM's serial path (fa3: the binary): a CTA's tiles are CTA_ALONE waves of
#: one tile each (hwmodels.roofline: each tile pays its fill, each tile after the CTA's first one turnover,
#: cta_fixed[attn_fa3_persist]), the prologue's dependent loads once (the first tile's). hopper/ @ 0251105a
#: mainloop_fwd_sm90_tma_gmma_ws.hpp load(): the producer waits on barrier_O (the consumers' epilogue of the previous
#: tile, flash_fwd_kernel_sm90.h epilogue.store: O through shared memory, which V's stage reuses) before it loads the
#: tile's V, and on QueryEmpty before its Q; so the previous tile's PV, softmax finalize and O store, then this tile's V
#: load, run in sequence on the SM, while the next tile's seqused_k / page-table / K loads and the scheduler's
#: prefetch_next_work (issued inside load()) run ahead of them. False = every tile's prologue loads added to the kernel
#: (the earlier rule)
PERSIST_TILE_WAVES = True
#: kBlockN of the fp8 (e4m3) forward at head dim 128 with a page table read by cp.async (hopper/tile_size.h @ 0251105a
#: tile_size_fwd_sm90, element_size 1: `headdim <= 128: {128, paged_kv_non_TMA ? 160 : ...}`); bf16 keeps 128
FA3_FP8_PAGED_TILE_N = 160.0


#: True = a causal (prefill) call's tiles take their own block time and a per-tile term (FA3_PREFILL_BLOCK_SCALE,
#: FA3_PREFILL_TILE_EXTRA_BLOCKS); False = the decode-fitted block time alone (the shipped causal bound of prefill grid 1)
FA3_PREFILL_TILES = True
#: a prefill tile's key block as a multiple of the kind's decode-fitted block time (iter_us[attn_fa3_persist] 1.546 us
#: bf16 / [_fp8kv] 2.143 us fp8, one-tile decode chains of padded m-blocks), per K/V bytes: a full 128-row m-block's
#: QK / PV wgmma and softmax run on real rows and its K/V blocks come from the L2 (the tile's neighbours read them);
#: FITTED by lab/kernels/fit_fa3_prefill.py on prefill grid 1's 'fit' rows (Llama-3.1-8B's heads; 14 bf16 + 4 fp8;
#: hwmodels/calibration/data/production_attention/prefill_kernels_nvidia-h100-80gb-hbm3_2026-11-28.csv, H100 SXM):
#: bf16 1.1206 (1.73 us a 128-key block, ~640 TFLOP/s over the SMs), fp8 0.7961 (1.71 us a 160-key block, ~810 TFLOP/s);
#: rms log error of the fit rows 0.159 -> 0.058. LOOKED-AT when chosen: blind grid 2 had run (FA3 bf16 -11 %, fp8 +17 %
#: signed under the decode block time); judged on prefill blind grid 3
FA3_PREFILL_BLOCK_SCALE = {2.0: 1.1206, 1.0: 0.7961}
#: a prefill tile's full-row Q load and O epilogue (128 rows x 128 x 2 B each way through shared memory and TMA, where a
#: decode tile's PackGQA m-block has q x G real rows), in block times, scaled by the tile's real rows / 128: FITTED with
#: the scales above: 0.9155 block times (~1.4 us a full bf16 tile)
FA3_PREFILL_TILE_EXTRA_BLOCKS = 0.9155
#: a block's time at another head dim than the measured 128: the d = 128 block's x (d + dv) / 256, the MMA work per block
#: (ASSUMPTION read from hopper/mainloop_fwd_sm90_tma_gmma_ws.hpp: per K/V block one QK^T GEMM over d and one PV GEMM over
#: dv on the same kBlockM x kBlockN tile; the MLA prefill grid's first look, lab/kernels/predict_mla_prefill.py)
FA3_BLOCK_WORK_SCALE = True
#: MLA's prefill block (d 192, dv 128): 1.106 d = 128 blocks, not the work ratio's 1.25. FITTED on the MLA prefill grid
#: 1's 50 rows on the H200 (looked-at; simulator/calibration/mla_prefill.py fit_block, rms log error 0.110 against 0.155
#: at 1.25): the contiguous K / V come by TMA, where the d = 128 block was measured on the paged cp.async path, and the
#: softmax work per block does not grow with d. SHIPPED after blind grid 2 (48 rows, priced before the call): 7.0 / 16.7 %,
#: 4 of 4 regimes against the work ratio's 11.9 / 23.4 %, 1 of 4. None = the work ratio
FA3_MLA_BLOCK = 1.106
#: True = a causal call of several rounds of the persistent kernel is priced by its longest-first schedule (hopper/
#: tile_scheduler.hpp VarlenDynamicPersistentTileScheduler, LPT = Is_causal: each request's m-blocks handed out in
#: reverse, the longest first, heads interleaved within an L2 section; production.lpt_makespan emulates it across the
#: call's tiles), its chain the busiest SM's blocks, with no last round priced apart (PERSIST_LAST_ROUND: the shortest
#: tiles fill the SMs that finish first). False = the mean tile's chain a round and the last round apart (the model
#: shipped after prefill grid 3). Read from the source after grids 1-3 were seen (nothing fitted); SHIPPED after prefill
#: blind grid 5 (53 FA3 rows of 1.3-3.7 rounds, five new models, 1 x H200, priced before the call by
#: lab/kernels/predict_prefill_kernels.py --grid blind5): 3.4 / 11.5 % against 8.1 / 17.9 %, 4 of 4 regimes both
FA3_PREFILL_LPT = True


#: a block's time in the hdim 64 x 512 kernels with qv (MLA's absorbed decode), as a multiple of the measured d = 128
#: block (128 x 128 keys x rows, QK^T and PV over 128 each, two MMA warpgroups of 64 rows). Read from hopper/ @ 0251105a
#: before the kernel was measured (mainloop_fwd_sm90_tma_gmma_ws.hpp, LargeHeadDimV = kHeadDimV > 256: kBlockM 64, PV
#: split over kHeadDimV / 256 = 2 MMA warpgroups, warpgroup 0 alone computing S = Q K^T + Qv V^T and the softmax, then
#: both the P V of their 256 V columns). "work": the block's MMA work, kBlockM x kBlockN x (d + qv + dv) over the
#: d = 128 block's 128 x 128 x 256 (1.0625 at 64 x 64 x 1088; the family's FA3_BLOCK_WORK_SCALE reading); "wg_chain":
#: the busiest warpgroup's MMA work, warpgroup 0's 64 x 64 x (d + qv) + 64 x 256 x 64 over a d = 128 warpgroup's
#: 64 x 128 x 256 (1.625). ASSUMPTION either way (no hdim 64 x 512 block was measured when it was chosen): "work" is
#: the family's standing rule; the first look prices both
FA3_QV_BLOCK = "work"


#: a qv tile's fixed work beyond the d = 128 tile's (the Q + Qv rows' cp.async load, PackGQA's row gather, the 512-wide
#: output through shared memory, an fp32 partial for a split tile), in block times on its CTA's chain: {"split": ...,
#: "whole": ...}; 0 = none (the first look's). FITTED (simulator/calibration/fa3_sparse_mla_h200.py fit_qv_terms, least
#: squares on log time over the MLA decode grid 1's 51 calls, 1 x H200, LOOKED-AT: the first look had missed them by
#: 15.9 / 25.6 %): split 2.0475 (~3.2 us a tile), whole 1.4358 (~2.2 us); judged blind on grid 2 (FA3_COMBINE_SCAN).
#: REFITTED with the split candidate's pieces (FA3_QV_TILE_IO_EXPOSED, FA3_COMBINE_ROWS_FROM_SOURCE,
#: FA3_COMBINE_SCAN_HIDDEN, FA3_COMBINE_PARTIALS_L2) by fit_qv_candidate: least squares on log time over 140 call
#: totals (the two split scans: SGLang's dense call at 1-8 requests with the split bound forced; the sparse grids 1
#: and 2 re-timed with the harness's tail spans), 1 x H200, LOOKED-AT: split 1.7023, whole 1.9546. SHIPPED with them
#: after the MLA decode grid 3 (43 calls in no earlier grid, both prices committed 9129f81 / 4a9381c before the call):
#: 4.7 / 9.1 %, 8 of 8 regimes, against the grid-2 model's 3.8 / 12.6 %, 6 of 8 (dense 64-128 heads at 1-8 requests
#: 12.3 / 16.7 -> 5.1 / 9.2 %; dense verification rows 11.4 / 14.7 -> 7.0 / 8.9 %; sparse rows <= 256 2.4-4.1 ->
#: 4.8-7.2 % median)
FA3_QV_TILE_EXTRA_BLOCKS = {"split": 1.7023, "whole": 1.9546}
#: the share of a request's gathered K/V each m-block past its first reads again from HBM (128 heads: two 64-row
#: m-blocks walk the same 2048 tokens); 0 = read once (the first look's). FITTED with FA3_QV_TILE_EXTRA_BLOCKS: 0.6328
FA3_QV_MBLOCK_REREAD = 0.6328
#: True = a causal (prefill) call's m-blocks re-read its K/V by FA3_QV_MBLOCK_REREAD too (the rule the SGLang MLA prefill
#: grid was priced with: a 8K prompt's 2,048 m-blocks x 0.63 of its latent from HBM, ~12 GB); False = once (read from
#: the kernel's structure after that grid was seen: LOOKED-AT, 5.8 / 10.8 %, 4 of 4 there, nothing fitted). Judged on the
#: second SGLang MLA prefill grid (simulator/calibration/fa3_sparse_mla_h200.py SHAPES8: 14 new extend calls, 1 x H200,
#: prices committed 793107b before the call): 6.3 / 12.2 %, 4 of 4 regimes, against 14.1 / 54.3 %, 2 of 4: SHIPPED
FA3_QV_MBLOCK_REREAD_CAUSAL = False


#: True = a one-round qv call's tile I/O as exposed phases at the device's HBM rate (Launch.lone_tile_bytes, hwmodels.
#: roofline LONE_TILE_LOAD): every CTA loads its m-block's Q + Qv rows (576 bf16 values a real row) before its first
#: key block and stores its O (512 bf16 a row; a split tile: the fp32 partial and its LSE, 512 x 4 + 4 B) after its
#: last, all CTAs of the one round at once (flash_fwd_kernel_sm90.h @ 0251105a: the producer's Q / Qv load waits for
#: nothing but the tile's coordinates, the epilogue's store follows the last PV), so those bytes do not overlap the K/V
#: stream the main op's bytes sit in. Read from the source after the split scans' spans showed the main kernel's
#: shortfall growing with the m-block's real rows and the CTAs (16 heads +3-7 us, 64-128 heads +5-9 us at ~110 CTAs);
#: no constant of its own. False = those bytes inside the main op's stream (the model shipped after grid 2). SHIPPED
#: after the MLA decode grid 3 (FA3_QV_TILE_EXTRA_BLOCKS' comment)
FA3_QV_TILE_IO_EXPOSED = True


def qv_block_scale(bm, bn, d, qv, dv, rule: str | None = None):
    """A qv block's time over the measured d = 128 block's (FA3_QV_BLOCK)."""
    rule = FA3_QV_BLOCK if rule is None else rule
    if rule == "wg_chain":
        return (64.0 * bn * (d + qv) + 64.0 * 256.0 * bn) / (64.0 * 128.0 * 256.0)
    return bm * bn * (d + qv + dv) / (128.0 * 128.0 * 256.0)


#: True = the combine kernel's varlen grid as hopper/ @ 0251105a builds it (combine_scan); False = a STANDARD grid of
#: b x ceil(q x Hq / 8) CTAs whose idle CTAs make one load (the rule before). Read from the source after FA3's MLA
#: decode grid 1 (simulator/calibration/fa3_sparse_mla_h200.py) showed its combine kernel at 47-192 us where every
#: request was unsplit (512-1024 rows): looked-at, no constant fitted. SHIPPED with the qv tile terms above after the
#: MLA decode grid 2 (38 new shapes, 1 x H200, prices committed c82fb1f before the call): the candidate 2.9 / 7.5 %,
#: 7 of 7 regimes, against the first look's 16.5 / 25.0 %, 0 of 7 (the scan alone, no fitted term: 6.8 / 14.5 %,
#: 5 of 7). On the GQA binary's looked-at first-look grid (num_splits 0, 91 rows) it moves 3.1 / 8.8 % to 3.8 / 7.5 %;
#: no blind GQA grid row changes
FA3_COMBINE_SCAN = True
#: the combine's kBlockM rows a CTA at kBlockK 128 and its batch groups (flash_fwd_combine_kernel.h: one warp's 32)
COMBINE_GROUP = 32.0
#: True = the combine's working CTAs as its source grid has them: kBlockM = 8 rows a CTA at kBlockK 128
#: (flash_fwd_combine_launch_template.h run_mha_fwd_combine_: COMBINE_ROWS) x ceil(dv / 128); False = ceil(rows / 4)
#: x ceil(dv / 128), the count the family's first version took (ab56c0d0, from no source) and its terms were fitted
#: under. qv calls only (the GQA calls keep the count their terms were fitted under). SHIPPED after the MLA decode
#: grid 3 (FA3_QV_TILE_EXTRA_BLOCKS' comment)
FA3_COMBINE_ROWS_FROM_SOURCE = True
#: True = a qv call's combine CTAs find their request (the varlen grid's batch scan, combine_scan) before they wait on
#: the main kernel (flash_fwd_combine_kernel.h @ 0251105a: tile_scheduler.get_block_coord precedes
#: cutlass::arch::wait_on_dependent_grids; the kernel is launched with PDL, flash_fwd_combine_launch_template.h), so the
#: scan's loads run under the main kernel (Launch.hidden_loads); False = on the combine's chain. SHIPPED after the MLA
#: decode grid 3 (FA3_QV_TILE_EXTRA_BLOCKS' comment)
FA3_COMBINE_SCAN_HIDDEN = True
#: True = a qv call's combine reads its fp32 partials (and LSEs) as re-reads of what the main kernel has just written
#: (Launch.reread_bytes over a working set of those bytes: hwmodels.roofline's L2 hit share and rate); False = from HBM.
#: SHIPPED after the MLA decode grid 3 (FA3_QV_TILE_EXTRA_BLOCKS' comment). Not expressed: the combine's chain where
#: the partials exceed ~13 MB at 64-128 heads and 40-57 splits (the split scans: its tail +2 to +9 us over the L2 chain,
#: as if they came from HBM, a step in the splits rather than in their bytes; docs/KNOWN_GAPS.md)
FA3_COMBINE_PARTIALS_L2 = True


def combine_scan(B, q, Hq, varlen=True):
    """The combine kernel's varlen grid (hopper/flash_fwd_combine_kernel.h @ 0251105a, StaticVarlenTileScheduler):
    choose_scheduling_algo takes LINEARIZE_M_AND_BATCH when 2 x ceil(total_q / 8) < b x ceil(max_seqlen_q / 8) (a
    decode step of one or a few rows a request), a grid of ceil(total_q x Hq / 8) + b CTAs along m (x ceil(dv / 128)
    along V), and each CTA's first warp finds its request by scanning the batches in groups of 32
    (get_block_coord_linearized_m_and_batch's do-while): a CTA in group g makes g + 1 passes, the grid's b spare CTAs
    (past the real tiles) all ceil(b / 32); each pass two dependent loads (varlen_batch_idx_ptr[bidb], then that
    request's cu_seqlens_q), then the request's num_splits (one load; an unsplit request's CTAs exit there). Returns
    (linearized, the grid's m CTAs, the mean dependent loads a CTA, the spare CTAs' loads)."""
    B, q, Hq = (np.asarray(x, dtype=np.float64) for x in (B, q, Hq))
    lin = np.asarray(varlen, bool) & (2.0 * ceil_div(B * q, COMBINE_ROWS) < B * ceil_div(q, COMBINE_ROWS))
    real = B * ceil_div(q * Hq, COMBINE_ROWS)
    grid_m = ceil_div(B * q * Hq, COMBINE_ROWS) + B
    G = ceil_div(B, COMBINE_GROUP)
    passes = (real * (G + 1.0) / 2.0 + B * G) / np.maximum(real + B, 1.0)
    return lin, grid_m, 2.0 * passes + 1.0, 2.0 * G + 1.0


def scheduler_loads(B, tiles_per_request, sms):
    """Dependent loads the persistent scheduler adds to each tile (FA3_SCHED_LOADS), plus the groups of 31 requests
    it walks past (tile_idx_to_work_tile's `while (group_end_tile <= next_tile_idx)`: each a further load): a CTA's
    next tile lies `sms` tiles on, sms / tiles_per_request requests later, where the batch has more than one group."""
    B = np.asarray(B, dtype=np.float64)
    walk = np.minimum(float(sms) / np.maximum(np.asarray(tiles_per_request, dtype=np.float64), 1.0)
                      / FA3_BATCH_PER_WARP, np.ceil(B / FA3_BATCH_PER_WARP) - 1.0)
    return FA3_SCHED_LOADS + np.where(B > FA3_BATCH_PER_WARP, walk, 0.0)


def prepare_steps(B):
    """Serial steps of prepare_varlen_num_blocks (flash_prepare_scheduler.cu @ 0251105a, Sort = true as the binary
    runs it: the kernel record's template <NumWarps, true>): one dependent load of every request's seqused_k, then the
    CTA's block merge sort over NumWarps x 32 items, NumWarps = ceil(B / 31) rounded up to a power of 2 (at most 32,
    NUM_WARP_SWITCH): log2(NumWarps) merge passes beyond a warp's own (each a __syncthreads-separated pass)."""
    nw = np.minimum(32.0, 2.0 ** np.ceil(np.log2(np.maximum(np.ceil(np.asarray(B, dtype=np.float64)
                                                                    / FA3_BATCH_PER_WARP), 1.0))))
    return 1.0 + np.log2(nw)


def num_splits_heuristic(total_mblocks, sms, n_blocks, max_splits=128.0):
    """heuristics.h num_splits_heuristic (non-causal, K/V of one head below 50 MB)."""
    tm = np.asarray(total_mblocks, dtype=np.float64)
    nb = np.asarray(n_blocks, dtype=np.float64)
    tm, nb = np.broadcast_arrays(tm, nb)
    out = np.ones(tm.size)
    need = np.flatnonzero(~((tm.ravel() >= 0.8 * sms) | (nb.ravel() <= 4)))   # the rest take 1 split at once
    if len(need):   # each distinct (m-blocks, n-blocks) pair searched once (a table of launches repeats few pairs)
        tn, nn = tm.ravel()[need], nb.ravel()[need]
        _, first, inv = np.unique(tn * (nn.max() + 1.0) + nn, return_index=True, return_inverse=True)   # whole counts
        s = np.arange(1, int(max_splits) + 1, dtype=np.float64)[None, :]
        cap = np.minimum(np.minimum(max_splits, float(sms)), nn[first, None])
        wv = tn[first, None] * s / sms
        eff = np.where(s <= cap, wv / np.ceil(wv), 0.0)
        best = eff.max(axis=1, keepdims=True)
        out[need] = (np.argmax(eff >= 0.85 * best, axis=1) + 1.0)[inv.ravel()]
    return out.reshape(tm.shape)


def fa3(B, q, T, Hq, Hkv, d, kvb, page, sms: int, varlen: bool = True, kind: str = "attn_fa3", num_splits=0.0,
        causal=None, dv=None, paged: bool = True, qv=0.0, T_bound=None, kv_hbm_share=1.0, prepare: bool = True):
    """Launches of one FA3 (or FA4: kind attn_fa4) paged call with PackGQA (module docstring). num_splits: the
    caller's argument as flash_attn_with_kvcache takes it: 0 = hopper/'s heuristic (engines), n >= 1 = the split bound
    (params.num_splits; 1 = no split and no combine kernel). causal: None / False = every m-block walks every key
    block (the decode and verification pricing, fitted so); True (per setting) = a prefill call's causal bound on each
    m-block's key blocks (block.h get_n_block_min_max; production.causal_tile_blocks). dv: V's head dim where it is not
    d (MLA's non-absorbed prefill: d = 192 for Q / K, dv = 128; hopper/'s hdim 192 x 128 instantiations); paged: False =
    contiguous K/V (flash_attn_varlen_func: loaded by TMA, tile_size_fwd_sm90's non-paged tile), True = the paged cache
    through cp.async (the measured path). A d != 128 call's per-block time is the measured d = 128 block's scaled by the
    MMA work per block, (d + dv) / 256 (FA3_BLOCK_WORK_SCALE; the first look's reading of the source: a block's QK^T
    and PV are kBlockM x kBlockN x d and x dv, the tile being the same 128 x 128). qv: the width of Q's second part
    multiplied with V (flash_attn_with_kvcache's qv: MLA's absorbed decode, d = 64 RoPE dims for Q / K, qv = dv = 512
    latent dims; hopper/'s hdim 64 x 512 kernels with HasQv): the QK^T GEMM's inner width is d + qv, the tile
    64 x 64, and the block's time the FA3_QV_BLOCK rule's. T_bound: the seqlen_k the split heuristic sees where it is
    not T (flash_api.cpp get_num_splits: params.seqlen_k = the page table's width x page_size with a page table; SGLang's
    DSA page table is index_topk wide whatever the rows' cache_seqlens). kv_hbm_share: the share of the gathered K/V
    bytes that come from HBM (rows re-reading keys another row of the call gathered: an MTP verification's flattened
    rows, simulator/strategies/dsa.py FA3_ROW_OVERLAP); 1 = every gather from HBM. prepare: False = the caller passes
    scheduler_metadata computed once a step (vLLM's FLASH_ATTN_MLA: get_scheduler_metadata before the layers), so the
    call launches no prepare kernel (flash_fwd_launch_template.h skip_scheduler_metadata_computation)."""
    dv = d if dv is None else dv
    B, q, T, Hq, Hkv, d, kvb, page, dv = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64)
                                                               for x in (B, q, T, Hq, Hkv, d, kvb, page, dv)))
    G = Hq / Hkv
    persist = kind == "attn_fa3"   # FA3's own hopper/ binary (measured); attn_fa4 keeps the stand-in's terms
    causal_any = causal is not None and bool(np.any(causal))
    bm, bn = fa3_tile(d, paged_no_tma=paged, causal=causal_any, dv=dv)
    qv = np.broadcast_to(np.asarray(qv, dtype=np.float64), B.shape)
    has_qv = qv > 0
    if persist and PERSIST_TILE_WAVES:   # the fp8 forward's own key tile (FA3_FP8_PAGED_TILE_N)
        bn = np.where((kvb <= 1.0) & (d > 64) & (d <= 128), FA3_FP8_PAGED_TILE_N, bn)
    mblocks = ceil_div(q * G, bm)
    nblocks = ceil_div(T, bn)
    ns = np.broadcast_to(np.asarray(num_splits, dtype=np.float64), B.shape)
    nb_bound = nblocks if T_bound is None else ceil_div(np.broadcast_to(np.asarray(T_bound, float), B.shape), bn)
    bound = np.where(ns > 0, ns, num_splits_heuristic(np.where(varlen, 1.0, B) * Hkv * mblocks, sms, nb_bound))
    per_sm = ceil_div(B * mblocks * nblocks * 1.1 * Hkv, sms)
    # prepare_varlen_num_blocks runs one CTA per 992 requests; with more than one CTA (B > 992) every request takes
    # one split (flash_prepare_scheduler.cu @ 0251105a: `if (int(gridDim.x) > 1 || num_splits_static == 1)
    # num_splits_dynamic = 1`; the split bound's rule before this reading, no measured row above 992 with a bound > 1)
    S = np.where(varlen, np.where(B <= 992, np.clip(ceil_div(nblocks, per_sm), 1.0, bound), 1.0), bound)
    tiles = B * Hkv * mblocks * S
    per_cta_tiles = ceil_div(tiles, sms)
    flops, kv, qb, ob = attention_io(B, q, T, Hq, Hkv, d, dv, kvb)
    flops = flops + 2.0 * B * q * Hq * T * qv    # Qv x V^T (qv > 0): V read once for both GEMMs
    qb = qb + B * q * Hq * qv * 2.0
    split = S > 1
    dd = (d + qv + dv) / 2.0           # the mean of the two GEMMs' inner widths: 4 x bm x bn x dd FLOP a block
    main_kind = "attn_fa3_persist" if persist else kind
    tile_loads = FA3_PROLOGUE_LOADS + (scheduler_loads(B, Hkv * mblocks * S, sms) if persist else 0.0)
    fl = np.maximum(flops, tiles * ceil_div(nblocks, S) * 4.0 * bm * bn * dd)
    blocks = ceil_div(nblocks, S)      # one tile's key blocks on its chain
    if causal is not None and np.any(causal):
        # causal: each m-block walks its own blocks up to its last row's diagonal, a split divides that range; the
        # chain is the mean tile's over several rounds of the SMs, the longest's in one
        total, longest = causal_tile_blocks(q, T, G, bm, bn, per_tile_split=S, prefix_continuous=True)
        cz = np.asarray(causal, dtype=bool) & np.ones_like(B, dtype=bool)
        mean = total / np.maximum(mblocks * S, 1.0)
        pb = np.where(per_cta_tiles > 1.0, mean, longest)
        if persist and FA3_PREFILL_LPT:   # the longest-first schedule's busiest SM over the rounds (FA3_PREFILL_LPT)
            lpt = cz & (per_cta_tiles > 1.0) & (S <= 1.0)
            if np.any(lpt):
                span, _ = lpt_makespan(B, q, T, G, bm, bn, Hkv, float(sms))
                pb = np.where(lpt, span / np.maximum(per_cta_tiles, 1.0), pb)
        if FA3_PREFILL_TILES:   # a prefill tile's own block time and its full-row Q load / O epilogue (constants above)
            scale = np.where(kvb <= 1.0, FA3_PREFILL_BLOCK_SCALE[1.0], FA3_PREFILL_BLOCK_SCALE[2.0])
            pb = pb * scale + FA3_PREFILL_TILE_EXTRA_BLOCKS * np.minimum(q * G, bm) / bm
        blocks = np.where(cz, pb, blocks)
        fl = np.where(cz, np.maximum(causal_flops(B, q, T, Hq, dd), B * Hkv * total * 4.0 * bm * bn * dd), fl)
    if FA3_BLOCK_WORK_SCALE:   # a d != 128 block's time (FA3_BLOCK_WORK_SCALE, FA3_MLA_BLOCK, FA3_QV_BLOCK)
        ratio = (d + dv) / 256.0
        mla = (d == 192.0) & (dv == 128.0) & (FA3_MLA_BLOCK is not None)
        blocks = blocks * np.where(has_qv, qv_block_scale(bm, bn, d, qv, dv),
                                   np.where(d == 128.0, 1.0, np.where(mla, FA3_MLA_BLOCK or 1.0, ratio)))
    if np.any(has_qv):   # the qv tile's own fixed work (FA3_QV_TILE_EXTRA_BLOCKS) and its m-blocks' K/V (FA3_QV_MBLOCK_REREAD)
        blocks = blocks + np.where(has_qv, np.where(split, FA3_QV_TILE_EXTRA_BLOCKS["split"],
                                                    FA3_QV_TILE_EXTRA_BLOCKS["whole"]), 0.0)
        # the m-block re-read is a decode call's (a row's 128 heads in two m-blocks over its own gathered keys); a causal
        # prefill call's m-blocks walk one prompt's contiguous latent, read from the HBM once and from the L2 after
        # (FA3_QV_MBLOCK_REREAD_CAUSAL)
        causal_rows = np.asarray(causal, dtype=bool) & np.ones(B.shape, dtype=bool) if causal_any else np.zeros(B.shape, bool)
        reread = np.where(causal_rows & ~FA3_QV_MBLOCK_REREAD_CAUSAL, 0.0, FA3_QV_MBLOCK_REREAD)
        kv = kv * np.where(has_qv, 1.0 + reread * (mblocks - 1.0), 1.0)
    kv = kv * np.asarray(kv_hbm_share, dtype=np.float64)
    rd1, wr1 = kv + S * qb, np.where(split, S * B * q * Hq * (dv + 1.0) * 4.0, ob)
    # the binary's dynamic scheduler hands tiles out in order: where the tiles fill `full` rounds of every SM and leave
    # `last` over, the SMs stream the full rounds together and the `last` CTAs that finish first then walk one tile
    # each with the rest of the GPU idle: the last round is priced after the full rounds (its own op row, its share
    # of the bytes, one tile's blocks on its chain), not inside their bandwidth-bound body (PERSIST_LAST_ROUND)
    full = np.floor(tiles / sms)
    last = tiles - full * sms
    tail = persist & PERSIST_LAST_ROUND & (full >= 1.0) & (last > 0.0)
    if persist and FA3_PREFILL_LPT and causal is not None and np.any(causal):
        tail = tail & ~(np.asarray(causal, dtype=bool) & (S <= 1.0))   # the LPT span holds the last round
    head_share = np.where(tail, full * sms / tiles, 1.0)
    rounds = np.where(tail, full, per_cta_tiles)
    mains = []
    tile_io = 0.0
    if FA3_QV_TILE_IO_EXPOSED and np.any(has_qv):   # a one-round call's Q / O phases (FA3_QV_TILE_IO_EXPOSED), per CTA
        real = q * G / np.maximum(mblocks, 1.0)      # an m-block's mean real rows
        per_tile = real * ((d + qv) * 2.0 + np.where(split, dv * 4.0 + 4.0, dv * 2.0))
        tile_io = np.where(has_qv & (tiles <= sms), per_tile * tiles / float(sms), 0.0)
    if persist and PERSIST_TILE_WAVES:   # a CTA's tiles as waves of one tile (PERSIST_TILE_WAVES): `rounds` x the SMs
        # CTAs of one resident slot, each walking one tile's blocks; emit counts the prologue's loads once per wave, so
        # a wave's share (the first tile's loads / rounds) makes them one tile's. The fp8 build is its own kind
        fp8 = kvb <= 1.0
        # the fp8 build at causal prefill tiles is its own kind (attn_fa3_prefill_fp8kv: the decode kind's terms where
        # they were fitted; a tile's time is its tensor work, a decode block's waits on the HBM, so a device may time
        # its decode blocks apart, hwmodels/opkinds.py)
        pre8 = fp8 & (np.asarray(causal, dtype=bool) & np.ones(B.shape, dtype=bool) if causal_any else False)
        for k_, on in ((main_kind, ~fp8), (main_kind + "_fp8kv", fp8 & ~pre8), ("attn_fa3_prefill_fp8kv", pre8)):
            mains.append(Launch("attention", k_, float(sms) * rounds, 1.0, blocks,
                                tile_loads / np.maximum(rounds, 1.0), fl * head_share, rd1 * head_share,
                                wr1 * head_share, where=on, lone_tile_bytes=tile_io))
            # its CTAs' chains bound each of them (per-block latency); their bytes are priced at the device's full rate
            # (ctas = the SMs: no linear-in-CTAs bandwidth share, which would double-count what the chain holds)
            mains.append(Launch("attention_last_round", k_, np.full(B.shape, float(sms)), 1.0, blocks,
                                tile_loads, fl * (1.0 - head_share), rd1 * (1.0 - head_share),
                                wr1 * (1.0 - head_share), where=tail & on))
    else:
        mains.append(Launch("attention", main_kind, np.full(B.shape, float(sms)), 1.0, rounds * blocks,
                            tile_loads * rounds, fl * head_share, rd1 * head_share, wr1 * head_share))
        mains.append(Launch("attention_last_round", main_kind, np.full(B.shape, float(sms)), 1.0, blocks,
                            tile_loads, fl * (1.0 - head_share), rd1 * (1.0 - head_share), wr1 * (1.0 - head_share),
                            where=tail))
    rd, wr = combine_io(B * q * Hq, S, dv)
    # the combine kernel runs whenever the split bound (params.num_splits) is > 1 (flash_api.cpp mha_fwd: `if
    # (params.num_splits > 1) run_mha_fwd_combine`), also where the dynamic split leaves every request whole: then
    # the main kernel writes O itself (epilogue_fwd.hpp is_split = num_splits_dynamic > 1) and each combine CTA
    # (grid (ceil(q Hq / 8), 1, B): kBlockM = 8 rows at head dim 128, flash_fwd_combine_launch_template.h) exits
    # after reading its request's num_splits (flash_fwd_combine_kernel.h `if (num_splits <= 1) return`): idle CTAs
    launched = (bound > 1) | split
    # the combine's grid spans V's head dim in kBlockK = 128 columns (flash_fwd_combine_launch_template.h: dv > 64 runs
    # the kBlockK 128 instantiation; the scheduler's grid y = ceil(dv / kBlockK)): 4 x the CTAs at dv 512
    kcols = ceil_div(dv, 128.0)
    idle = np.where(split, 0.0, B * ceil_div(q * Hq, COMBINE_ROWS) * kcols)
    idle_share, scan = np.ones_like(B), np.zeros_like(B)
    if FA3_COMBINE_SCAN:   # the varlen grid's batch scan (combine_scan)
        lin, grid_m, mean_loads, extra_loads = combine_scan(B, q, Hq, varlen)
        idle = np.where(lin, np.where(split, B, grid_m) * kcols, idle)
        idle_share = np.where(lin, np.where(split, extra_loads, mean_loads), 1.0)
        scan = np.where(lin & split, mean_loads - 1.0, 0.0)
    rows_cta = np.where(has_qv, COMBINE_ROWS, 4.0) if FA3_COMBINE_ROWS_FROM_SOURCE else 4.0
    k2 = Launch("attention_combine", "attn_combine_fa3", np.where(split, ceil_div(B * q * Hq, rows_cta) * kcols, 0.0), 8.0,
                np.where(split, S, 0.0), np.where(split, 2.0 + scan, 0.0),
                np.where(split, 3.0 * B * q * Hq * dv * S, 0.0), np.where(split, rd, 0.0), np.where(split, wr, 0.0),
                dtype="fp32", idle=idle, idle_share=idle_share, where=launched,
                hidden_loads=np.where(has_qv & split, scan, 0.0) if FA3_COMBINE_SCAN_HIDDEN else 0.0,
                reread_bytes=np.where(has_qv & split, rd, 0.0) if FA3_COMBINE_PARTIALS_L2 else 0.0,
                working_set=np.where(has_qv & split, rd, 0.0) if FA3_COMBINE_PARTIALS_L2 else 0.0)
    # prepare_varlen_num_blocks (flash_prepare_scheduler.cu), launched before the main kernel on every varlen call
    # (flash_fwd_launch_template.h: `if (Varlen && !skip_scheduler_metadata_computation)`): one CTA for B <= 992
    # (PREPARE_VARLEN_MAX_BATCHES_1CTA) reads each request's seqused_k and writes its split count and m-blocks.
    # FA3's binary: its own kind attn_prepare_fa3 (fitted on the kernel's own records), one dependent load and the
    # merge sort's passes (prepare_steps); attn_fa4 (not measured): attn_combine_fa3's terms (ASSUMPTION)
    k0 = Launch("attention_prepare", "attn_prepare_fa3" if persist else "attn_combine_fa3", 1.0, 1.0, 1.0,
                prepare_steps(B) if persist else 1.0, 0.0, 4.0 * B, 8.0 * B,
                where=np.asarray(varlen) & (B > 0) & bool(prepare))
    return [k0, *mains, k2], {"splits": S, "kBlockN": bn, "mblocks": mblocks, "split_bound": bound,
                               "last_round": np.where(tail, last, 0.0)}


#: FA4-CuTe's sm_90 forward (flash-attn-4 4.0.0b36, flash_attn/cute/interface.py _flash_attn_fwd and
#: flash_fwd_sm90.py, read before it was measured): the kernel this project measures as the fa3 family's stand-in
FA4CUTE_VERSION = "flash-attn-4 4.0.0b36"


def fa4cute_sm90(B, q, T, Hq, Hkv, d, kvb, page, sms: int, kind: str = "attn_fa3"):
    """Launches of one FA4-CuTe sm_90 forward call with PackGQA (page = 0: contiguous K/V, no page table).

    interface.py: _tile_size_fwd_sm90 gives 128 x 128 at 64 < d <= 128 (hopper/tile_size.h's 128 x 176 is kept by the
    C++ kernel only; the CuTe port says it re-benchmarked); PackGQA when G > 1 (q x G rows in 128-row m-blocks);
    `assert not is_split_kv, "SplitKV not supported on SM 9.0"`: num_splits = 1, no combine kernel.
    flash_fwd_sm90.py: SingleTileScheduler (is_persistent=False): one CTA per (m-block, KV head, request), each walking
    all ceil(T / 128) K/V blocks; K/V by TMA when contiguous or page_size == tile_n, else cp.async through the page
    table (paged_kv.py PagedKVManager.load_page_table per block). Dependent loads before the first K/V block:
    seqused_k -> page-table entries -> K (3) with a page table, the K TMA alone (1) without one.

    The two K/V paths are two kinds: `kind` (cp.async page walk: the producer warpgroup's 128 threads load a block's
    page-table entries, then issue its K and V rows by cp.async, block after block, 224 / 40 registers for the consumer
    / producer warpgroups) and `kind`_tma for kind attn_fa3 (contiguous K/V, or page_size == tile_n: one producer warp
    issues one K and one V TMA per block, the next block's K before this block's V (intra-warpgroup overlap), a scalar
    page-table read per block when paged, 240 / 24 registers): the TMA path has its own rate of a lone CTA's blocks
    (fit_production_attention.py fit_fa3). Each launch carries the rows of its path (`where`). A CTA is alone on its SM
    (hwmodels.roofline CTA_ALONE: every wave pays its fill, every wave after the first one CTA turnover)."""
    B, q, T, Hq, Hkv, d, kvb, page = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64)
                                                           for x in (B, q, T, Hq, Hkv, d, kvb, page)))
    G = Hq / Hkv
    bm = np.where(d <= 64, 192.0, 128.0)
    bn = np.where(d <= 64, 128.0, np.where(d <= 128, 128.0, np.where(d <= 192, 128.0, 80.0)))
    mblocks = ceil_div(q * G, bm)
    nblocks = ceil_div(T, bn)
    tiles = B * Hkv * mblocks
    flops, kv, qb, ob = attention_io(B, q, T, Hq, Hkv, d, d, kvb)
    tma = fa4cute_kv_tma(page, bn)
    args = (tiles, 1.0, nblocks, np.where(page > 0, FA3_PROLOGUE_LOADS, 1.0),
            np.maximum(flops, tiles * nblocks * 4.0 * bm * bn * d), kv + qb, ob)
    if kind != "attn_fa3":   # only attn_fa3 has a TMA kind of its own (the one measured)
        return [Launch("attention", kind, *args)], {"splits": np.ones_like(B), "kBlockN": bn, "mblocks": mblocks,
                                                     "kv_tma": tma}
    k1 = Launch("attention", kind, *args, where=~tma)
    k2 = Launch("attention", kind + "_tma", *args, where=tma)
    return [k1, k2], {"splits": np.ones_like(B), "kBlockN": bn, "mblocks": mblocks, "kv_tma": tma}


def fa4cute_kv_tma(page, tile_n=128.0) -> np.ndarray:
    """True where FA4-CuTe's sm_90 forward reads K/V by TMA: no page table (page 0) or page_size == tile_n
    (interface.py _flash_attn_fwd: paged_kv_non_tma = page_size not in (None, tile_n)); else the cp.async page walk."""
    page = np.asarray(page, dtype=np.float64)
    return (page <= 0) | (page == np.asarray(tile_n, dtype=np.float64))
