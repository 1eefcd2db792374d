"""FlashInfer's attention kernels as their `plan()` launches them (flashinfer-ai/flashinfer, tag v0.6.4, commit
f1e6fdcb8f65104047697f022b5d055ef022d763; the version measured on the H100, `flashinfer-python` 0.6.4). Every rule
below is cited by file; simulator/kernels/data/attention_families.yaml lists them again with the engines that run them.

fi_decode  BatchDecodeWithPagedKVCacheWrapper(use_tensor_cores=False): the CUDA-core decode kernel
  (include/flashinfer/attention/decode.cuh BatchDecodeWithPagedKVCacheDispatched; scheduler.cuh
  BatchDecodeWithPagedKVCacheWorkEstimationDispatched, DecodePlan):
    vec = max(16 / kv bytes, d / 32), bdx = d / vec, bdy = G (query heads per KV head: 1, 2, 3, 4 or 8 only,
    utils.cuh DISPATCH_GQA_GROUP_SIZE), threads = max(128, bdx bdy), bdz = threads / (bdx bdy),
    tile_size_per_bdx = 1 (G > 1) or 4 (bf16) / 2 (fp8) for G = 1: keys per loop iteration = tile x bdy x bdz
    (8 for d 128 bf16 at G 4 or 8), 2 shared-memory stages (sm_80+), grid (padded batch, Hkv), one CTA per
    (request chunk, KV head); smem = 2 x 2 x tile bdy bdz d kvb + max(tile x threads x 8, 2 bdy bdz x 4)
    split: max_grid = resident CTAs per SM x SMs; no split when B Hkv >= max_grid; otherwise the smallest chunk of
    c >= max(128 / page, 1) pages with B ceil(pages / c) Hkv <= max_grid (binary search); split when that makes
    more chunks than requests, or always under a CUDA-graph plan, which then launches max_grid / Hkv x Hkv CTAs
    whose surplus exits at block_valid_mask. Merge: VariableLengthMergeStates (cascade.cuh), a persistent kernel
    of SMs x resident CTAs (128 threads, 4 smem stages) walking the (row, head) pairs' partial states.
    Per CTA before the first K/V tile (decode.cuh BatchDecodeWithPagedKVCacheDevice): request_indices[bx] ->
    paged_kv.indptr / last_page_len of that request -> the page indices of the chunk -> the tile: 3 dependent loads.
fi_tc  the tensor-core path: BatchDecodeWithPagedKVCacheWrapper(use_tensor_cores=True) (decode.py plan: the
  prefill module, backend fa2 for bf16), and BatchPrefillWithPagedKVCacheWrapper(backend="fa2") for
  verification / chunked prefill (prefill.cuh BatchPrefillWithPagedKVCacheDispatched, scheduler.cuh
  PrefillSplitQOKVIndptr / PrefillPlan):
    rows are packed (q x G per KV head); cta_tile_q = 128 when the packed length > 64 (d < 256), 64 when > 16,
    else 16 (utils.cuh FA2DetermineCtaTileQ); a CUDA-graph plan sizes it on the longest possible request,
    (total rows - B + 1) x G; warps 4 x 1 (tile q > 16) or 1 x 4; CTA_TILE_KV = NUM_MMA_KV x warps_kv x 16 with
    NUM_MMA_KV = the largest power of two <= min(8 / NUM_MMA_Q, the shared memory of one of the 2 CTAs per SM the
    plan expects); split: max_batch_if_split = 2 SMs / Hkv; the smallest KV chunk of c >= max(128 / page, 1)
    pages with sum(q tiles x ceil(pages / c)) <= that (PrefillBinarySearchKVChunkSize); split always under a
    CUDA-graph plan, whose grid is max(max_batch_if_split, an upper bound of the q tiles) x Hkv; merge as fi_decode.
    fp8 K/V (prefill.cuh compute_qk / compute_sfm_v): every warp walks a KV tile as NUM_MMA_KV 16-key fragment columns
    (fa2_fp8_frags), each read by a half-width ldmatrix, swizzled (frag_layout_swizzle_16b_to_8b) and converted
    (vec_cast) before its MMAs, for K and for V, masked keys included; the fp8 kind's chain is tiles x NUM_MMA_KV
    columns (its iter_us is one column at the kernel's full residency): 4 at a 16-row Q tile (256-token tiles), 8 at
    64 rows, 4 at 128 rows, x k / slots for a CTA that shares its SM with k - 1 others (the columns' conversion work
    is issued by the SM's schedulers for all of them; a lone CTA of a one-wave launch takes half a full SM's time).
    bf16 K/V (FI_TC_BF16_TILE_WAITS, fi_tc_bf16_steps): every tile after a CTA's first waits on its K and its V load
    (one shared-memory stage each) and issues its MMAs on the CTA's chain, in dependent-load units; the MMAs at 1 / k
    of the one-CTA rate when k CTAs share the busiest SM (FI_TC_MMA_SHARED, the exposed share fitted).
    Both kinds' CTAs carry a fitted serial time co-resident CTAs do not overlap (cta_serial_us, fitted on the fp8
    kind's fit rows, the bf16 kind takes it: the CTA outside the K/V loop is the same code, fit_production_attention
    CTA_SERIAL_FROM).
    PDL: the calls are launched with programmatic dependent launch on sm_90 (FI_PDL_GRAPH below; the CUDA-core
    decode call prices it, FI_DECODE_PDL).
fi_mla  BatchMLAPagedAttentionWrapper, backend fa3 on sm_90 (scheduler.cuh MLAPlan; mla_hopper.cuh
  BatchMLAPageAttentionHopperKernel; mla.cuh DevicePersistentMergeStates; all read at FI_COMMIT): ONE cooperative
  persistent launch, grid (cluster, SMs / cluster) of 256 threads: cluster = 2 CTAs when the mean packed rows
  q x H > 64 (then a cluster tile is 128 rows, each CTA 64), else 1; work items = (request, cluster row tile, KV
  piece): each tile's KV range is cut into pieces of at most kv_len_limit = f(total KV / clusters) tokens (f: 32, 64,
  128, 192 for <= 8, 16, 32, 64, else a multiple of 256), each piece handed to the least-loaded cluster by a
  min-heap on cost 2 x tile rows + tokens (cost_function); a CTA walks its items one after another: per item
  work_indptr -> the item's coordinates -> its kv_indices -> the first 64-token stage (CTA_TILE_KV 64, 2 stages),
  then the stages, then write_o (bf16 partial + fp32 lse when split, else the final output; the next item's loads
  wait for it: priced on the CTA's chain, hwmodels/roofline.py CTA_FIXED_HIDDEN, the stages' GEMMs too: CHAIN_TENSOR); after grid.sync() the
  same CTAs merge the split pieces (<= SMs merge CTAs, 4 rows per serial iteration, each row's pieces one dependent
  load after another, read from L2).

Resident CTAs per SM (`slots`) come from the kernel's threads and shared memory (source) and its registers
(FI_DECODE_REGS / FI_REGS: MEASURED from the launch profile, hwmodels/calibration/data; the split rule needs them, since
FlashInfer's plan sizes its grid with cudaOccupancyMaxActiveBlocksPerMultiprocessor).
"""
from __future__ import annotations

import functools
import heapq

import numpy as np

from simulator.kernels.mla_greedy import BLOCK_SLOTS, busiest, decode_busiest
from simulator.kernels.production import (
    Launch,
    attention_io,
    causal_flops,
    causal_tile_blocks,
    ceil_div,
    combine_io,
    inorder_makespan,
    occupancy,
)

FI_COMMIT = "f1e6fdcb8f65104047697f022b5d055ef022d763"
#: GQA group sizes the CUDA-core decode kernel is compiled for (utils.cuh DISPATCH_GQA_GROUP_SIZE)
FI_DECODE_GROUPS = (1, 2, 3, 4, 8)
#: registers per thread, for occupancy (not in the source: the compiler's). MEASURED on the H100 for the compiled
#: kernels of flashinfer 0.6.4 (hwmodels/calibration/data/production_attention_grids_*.csv, CUDA 13.0 JIT, sm_90a):
#: decode (G, K/V bytes) -> registers; the group-8 fp8 K/V kernel (Llama-3.1-70B's heads) from the second decode blind
#: grid's launch profile (production_attention/production_attention_fi_dec_blind2_grids_*.csv: 72 registers, 128
#: threads, CUDA-graph grid (115, 8) = 7 resident CTAs x 132 SMs / 8 heads; it was 64 assumed, 8 resident);
#: other decode variants: ASSUMPTION 64 (the first look used 64 for all)
FI_DECODE_REGS = {(4.0, 2.0): 59.0, (8.0, 2.0): 56.0, (4.0, 1.0): 77.0, (8.0, 1.0): 72.0}
FI_REGS = {"decode": 64.0, "merge": 40.0, "prefill": 183.0}


def fi_decode_regs(G, kvb):
    """Registers per thread of the decode kernel for each (group size, K/V bytes): FI_DECODE_REGS, else 64."""
    G, kvb = np.broadcast_arrays(np.asarray(G, dtype=np.float64), np.asarray(kvb, dtype=np.float64))
    out = np.full(G.shape, FI_REGS["decode"])
    for (g, b), r in FI_DECODE_REGS.items():
        out = np.where((G == g) & (kvb == b), r, out)
    return out
#: dependent global loads before a CTA's first tile (module docstring)
FI_PROLOGUE_LOADS = 3.0
#: the merge kernel: one dependent load (the request's merge_indptr) before its partial states
FI_MERGE_PROLOGUE_LOADS = 2.0
#: programmatic dependent launch (PDL). On sm_90 FlashInfer launches its decode, prefill and merge kernels with
#: cudaLaunchAttributeProgrammaticStreamSerialization (decode.py / prefill.py run: enable_pdl = device_support_pdl,
#: compute capability >= 9; decode.cuh BatchDecodeWithPagedKVCacheDispatched, prefill.cuh
#: BatchPrefillWithPagedKVCacheDispatched, cascade.cuh VariableLengthMergeStates), each kernel waits for its
#: predecessor at `griddepcontrol.wait` and releases its dependant at `griddepcontrol.launch_dependents`, the last
#: instruction after its output store. What a CTA reads before the wait (the plan's arrays, not the previous kernel's
#: output) can run under the predecessor's tail, for the CTAs resident when it starts (the first wave):
#:   decode   request_indices / kv_tile_indices / block_valid_mask[bx] -> the request's indptr / last_page_len (the kv
#:            length): 2 of the 3 prologue loads (the page indices are read after the wait)
#:   prefill  block_valid_mask[bx] -> request_indices[bx] -> the kv length (variant constructor): the model's first 2
#:            (its 3 loads are request index -> indptr -> page index; the page indices after the wait)
#:   merge    *seq_len_ptr: 1 of its 2
#: Whether that overlap survives the timing harness (calls captured back to back in a CUDA graph) is MEASURED by
#: lab/kernels/probe_fi_pdl.py (H100, 2026-11-27, hwmodels/calibration/data/production_attention/fi_pdl_probe_*.csv): it
#: does: every edge of a captured two-call graph is programmatic, and a call in the chain takes 0.45-1.04 us less with
#: enable_pdl than without (decode + merge; 0.2 us for one unsplit decode kernel, 0.4-1.8 us for the prefill kernel
#: and its merge). Priced as the hidden pre-wait loads above (FI_PDL_GRAPH = True, the families refitted), the third
#: FlashInfer check grid (committed before it was measured) came out worse: regimes met 12 of 25 against 16 without
#: it (decode short small batch 25 -> 16 %, but the refit raises the prefill kinds' serial CTA time 0.89 -> 1.44 us
#: and their short shapes go 4 -> 12 % too slow), and the loads it hides (1.05 us per split call) exceed the measured
#: saving at most shapes. So FI_PDL_GRAPH stays False for the FA2 prefill calls (fi_tc, fi_verify)
FI_PDL_PREWAIT_LOADS = 2.0
FI_MERGE_PDL_PREWAIT_LOADS = 1.0
FI_PDL_GRAPH = False
#: the CUDA-core decode call alone (its decode kernel and its merge) IS priced with PDL's hidden pre-wait loads: the
#: probe measured the saving on exactly this chain (decode + merge, 0.45-1.04 us per split call), and the loss above came
#: from the shared refit moving the FA2 prefill kinds' serial CTA time, which a decode-only switch does not touch (the
#: decode kinds are fitted in their own group; the prefill kinds and fi_tc's merge keep FI_PDL_GRAPH). Tested blind
#: with the HBM ceiling and the lone-CTA fit rows (benchmarks/calibration_accuracy.py, FI_DECODE BLIND GRID 2)
FI_DECODE_PDL = True
#: ... and its merge kernel (the probe's saving is the decode + merge pair's)
FI_DECODE_MERGE_PDL = True


def _pdl(pdl, default=None) -> bool:
    return (FI_PDL_GRAPH if default is None else default) if pdl is None else bool(pdl)
#: FlashInfer's sm_90 MLA kernel (include/flashinfer/attention/mla_hopper.cuh @ FI_COMMIT, BatchMLAPageAttentionHopper):
#: CTA_TILE_Q = 64 packed q rows, CTA_TILE_KV = 64 KV tokens per stage, NUM_STAGES = 2, 256 threads, one CTA per SM
FI_MLA_TILE_Q, FI_MLA_TILE_KV, FI_MLA_STAGES = 64.0, 64.0, 2.0
#: the in-kernel merge (mla.cuh DevicePersistentMergeStates @ FI_COMMIT): 256 threads, 64 per row (VEC_SIZE 8 of
#: HEAD_DIM_CKV 512: one 16-byte load of 8 bf16 partial outputs + the row's fp32 log-sum-exp per thread and piece), so
#: 4 rows per iteration; the row loop is `#pragma unroll 1` (serial) and, per row, the loop over the row's pieces has a
#: run-time trip count (merge_partial_packed_offset_end, stride = the tile's rows): each piece's load feeds st.merge
#: before the next piece's load issues (in-order issue), so a row iteration is a chain of `pieces` dependent loads.
#: The partial states were written just before grid.sync() and are read back from L2 (the device's MEASURED L2 hit
#: latency 0.1431 us, DRAM 0.3494 us: hwmodels/calibration/fitted/H100-SXM.yaml latency block, fit_latency.py on
#: latency_nvidia-h100-80gb-hbm3_2026-11-22.csv). A link is priced as a FITTED share of a dependent load (sync_us = the
#: measured DRAM latency, 0.3494 us) per link of that chain: 0.60 (0.210 us per link: the L2 hit, 0.143 us, plus
#: st.merge's dependent arithmetic on the loaded state before the next piece: max, two exp2, eight fused multiply-adds).
#: Chosen by the scan of simulator/calibration/fit_production_attention.py (`merge_share_scan`: shares 0.45-0.85 in
#: steps of 0.05, the kind's other terms refitted at each; rms log error on the fit rows, the campaign's middle regime
#: + the mla_fit2 rows with the per-item epilogue fitted: 0.0633 at 0.45, 0.0595 at 0.55, 0.0590 at 0.60, 0.0595 at
#: 0.65, 0.0655 at 0.80; on the campaign's rows alone it was 0.65: 0.0477, 0.048 at 0.60); the L2 latency alone (0.41)
#: gives 0.065 on those. With the per-item first-stage fill (FI_MLA_FILL_RATE_SM) the scan is flat between 0.60 and
#: 0.65 (0.0627 / 0.0627): 0.60 kept
FI_MLA_MERGE_LOAD_SHARE = 0.60
FI_MLA_MERGE_ROWS_PER_ITER = 256.0 / (512.0 / 8.0)
#: per merge row iteration, beyond its `pieces` partial-state links, one more link (the row's setup, divmod of its packed
#: offset and the piece loop's entry, and its epilogue: st.normalize, the 16-byte output store and the lse store,
#: mla.cuh DevicePersistentMergeStates @ FI_COMMIT) before the next row's first load. The fit rows cannot identify it
#: (their merge CTAs walk 1-4 rows of 8-16 pieces: merge_share_scan rms log error 0.0627 without, 0.0637 with it at the
#: same 0.60 share, the best share with it); it was chosen after the fifth MLA blind grid's small-batch short rows had
#: been seen (LOOKED-AT: at 16-64 heads, where the cluster is one CTA and the first phase is the same 64-row tile, the
#: measured time grows ~0.72 us per 2-piece merge row iteration, B 4 T 56 and B 12 T 232; 64 heads -20 / -15 % without
#: it). BLIND test, the sixth MLA blind grid (mla_blind6: batch 1-28 x context 36-448 + 2 controls, 48 shapes, priced
#: before measuring): 4.2 / 9.0 % median / p90 against 6.5 / 12.5 % without it (main at cbe4f0b). 0 = the rule before
#: (a row = its pieces' links only)
FI_MLA_MERGE_ROW_LINKS = 1.0
#: per work item, write_o (mla_hopper.cuh @ FI_COMMIT) stores the item's output tile (min(q x Hq, 64) rows x 512 in the
#: output dtype, bf16, + an fp32 log-sum-exp per row when the item is a split piece) before the CTA starts its next
#: item: the candidate term is the tile's bytes at one SM's share of the store stream, FI_MLA_O_RATE_SM bytes/s, in
#: dependent-load units (FI_MLA_LOAD_S: the kind's sync_us, which the fit sets to the device's MEASURED DRAM latency
#: 0.3494 us). REJECTED by the scan on the fit rows (simulator/calibration/fit_production_attention.py `rate_scan`: the
#: campaign's middle rows + the mla_fit2 rows, 2-12 items per cluster; rms log error 0.0816 at 15 GB/s, 0.0641 at 42.5
#: (the blind grid's prior), 0.0611 at 80, 0.0590 without it, merge link share 0.60): the per-item time does not grow with the output tile
#: (16 KB at 16 heads, 64 KB at 128), so the item's epilogue is the kind's per-wave CTA time (cta_fixed_us, one per
#: item, identified by the mla_fit2 rows: ~3.1 us), not bytes / rate. Kept at infinity (no term)
FI_MLA_O_RATE_SM = float("inf")
FI_MLA_LOAD_S = 0.3494e-6
#: the tail round (hwmodels/roofline.py TAIL_ROUND_KINDS) assumes items of equal bytes: true of an unsplit call
#: (MLAPlan deals whole requests of T tokens, scheduler.cuh @ FI_COMMIT), not exactly of a split one (pieces of
#: kv_len_limit tokens and a shorter remainder). False = every call prices its tail round (the rule as judged; the rule itself ships off); True = only
#: unsplit calls do, a split one keeps max(body, chain) (the alternative `tail_unsplit` priced beside it on the fourth
#: MLA blind grid). The mla_fit2 fit rows are unsplit: both give the same fit (rms log error 0.0547; 0.0622 without the
#: tail round)
FI_MLA_TAIL_UNSPLIT_ONLY = False
#: the call's Q (B x q x H rows x 576 bf16) as an L2 re-read (the roofline's reread_bytes on a working set of the Q tensor:
#: hit = min(1, L2 / Q bytes)): in an engine the absorbed-Q GEMM writes it just before this call, and the measuring
#: harness reads the same Q every graph replay. False = Q from DRAM (the rule shipped); True = the alternative `q_l2`
#: priced beside it on the fourth MLA blind grid, whose batch-64 short shapes are also timed with a fresh Q per replay
FI_MLA_Q_L2 = False
#: per work item, the first 64-token stage's K/V must arrive before the item's first QK^T can issue (mla_hopper.cuh
#: @ FI_COMMIT: the producer warp group issues load_kv for the item's stages only after the previous item's write_o and
#: __syncthreads, and the consumers wait on the first stage's barrier): the pipeline fill is exposed once per item.
#: load_kv<true> zero-fills the rows past the item's end without a global read, so the fill carries min(n, 64) x
#: (d_ckv + d_kpe) x kv bytes of an item of n tokens: a short item (one 16-48-token stage) fills less than a long one,
#: whose fill is the same 64-token stage however long the item. Priced as those bytes at one SM's share of the load
#: stream, FI_MLA_FILL_RATE_SM bytes/s, in dependent-load units (FI_MLA_LOAD_S); the rest of the per-item time stays
#: the kind's fitted per-wave CTA time (write_o, the barrier), refitted beside it. The fit rows cannot choose the rate:
#: their items are long (every item's first stage is a whole 64-token stage, but for the 32-token pieces of the
#: campaign's small-batch middle rows), so the fill and the per-item CTA time trade one for the other
#: (simulator/calibration/fit_production_attention.py `fill_rate_scan`, the kind's other terms refitted at each rate:
#: rms log error 0.0727 at 15 GB/s, 0.0648 at 20, 0.0638 at 25, 0.0633 at 30, 0.0628 at 40, 0.0624 at 60, 0.0622
#: without the term). ASSUMPTION: 42.5 GB/s, FlashMLA's per-SM rate of its exposed per-request tile load
#: (simulator/kernels/flashmla.py FM_Q_RATE_SM, scanned on that kernel's fit rows; same device, a TMA tile exposed once per
#: request / item); an SM's share of the kind's HBM stream (0.8418 x 3.35 TB/s / 132 = 21.4 GB/s) and 30 GB/s were
#: priced beside it on the fifth MLA blind grid (fill21, fill30). The choice of 42.5 over 21.4 / 30 was made after the
#: campaign's short rows had been seen (looked-at: short small batch 5.8 -> 12.7 % median at 21.4, 10.6 % at 30, 7.1 % at
#: 42.5). float("inf") = no fill term (the model before it, `nofill`). BLIND test (the fifth MLA blind grid, 56 shapes,
#: priced before measuring): 7.0 / 15.2 % median / p90 against 7.3 / 16.0 % without the term; fill21 7.5 / 21.5 %,
#: fill30 7.7 / 16.2 %
FI_MLA_FILL_RATE_SM = 42.5e9
#: (the item's Q tile, load_q after the first K/V stage, min(q x Hq, 64) rows x 576 bf16, added to the fill's bytes was
#: REJECTED by the fit rows: fill_rate_scan rms log error 0.0667 at 42.5 GB/s against 0.0627 without it)


def fi_mla_fill_loads(first_tokens, lat, kvb, rate=None):
    """The exposed per-item pipeline fill in dependent-load units (FI_MLA_FILL_RATE_SM): the item's first stage's
    valid tokens (min(n, 64)) x lat x kvb bytes / rate / FI_MLA_LOAD_S."""
    return np.asarray(first_tokens, dtype=np.float64) * lat * kvb / (rate or FI_MLA_FILL_RATE_SM) / FI_MLA_LOAD_S


def fi_mla_o_loads(q, H, split, rate=None):
    """The exposed per-item output store in dependent-load units (FI_MLA_O_RATE_SM)."""
    rows = np.minimum(np.asarray(q, dtype=np.float64) * np.asarray(H, dtype=np.float64), FI_MLA_TILE_Q)
    return rows * (512.0 * 2.0 + np.where(split, 4.0, 0.0)) / (rate or FI_MLA_O_RATE_SM) / FI_MLA_LOAD_S + 0.0


#: MEASURED block dispatch of the CUDA-graph decode grids (padded batch x Hkv): the SM (%smid) of every CTA of the
#: (132, 8), (148, 8) and (99, 8) grids resident at once (lab/kernels/probe_block_placement.py on the H100, 2026-11-26,
#: hwmodels/calibration/data/production_attention/block_placement_nvidia-h100-80gb-hbm3_2026-11-26.csv). Not in any
#: kernel's source: the hardware's dispatcher. A plan's active CTAs are its first nb = B x splits columns in every row
#: (block_valid_mask, decode.cuh), and the dispatcher puts the same column of different rows on the same few SMs:
#: 64 active CTAs of the (132, 8) grid share 24 SMs (at most 4 on one), 256 share 48 (8 on one)
FI_PLACEMENT_CSV = "block_placement_nvidia-h100-80gb-hbm3_2026-11-26.csv"
#: resident CTAs per SM of the probe's kernel (256 threads: 8 by threads): the dispatch is only taken from the probe for
#: a kernel with the same residency (the bf16 decode kernels, 8 per SM); a kernel with fewer slots (fp8 K/V: 6 per SM)
#: fills the SMs in another pattern, which was not probed: even spread there (a first trial that took the (99, 8) probe
#: for the fp8 kernel raised its fit rows' rms log error from 0.095 to 0.229). A later probe at the decode kernels' 128
#: threads with residency capped by shared memory (lab/kernels/probe_fi_dispatch.py, H100 2026-11-27,
#: production_attention/fi_dispatch_probe_nvidia-h100-80gb-hbm3_2026-11-27.csv) put the (99, 8) grid at 6 CTAs per SM on
#: exactly the SMs of this probe, and the (132, 8) grid's busiest-SM counts match too: the dispatch does not follow the
#: residency; not yet used for the 6-slot kernel (its fit would move)
FI_PLACEMENT_SLOTS = 8.0
#: ... and the decode kernels' own residencies, probed at 128 threads with residency capped by shared memory
#: (lab/kernels/probe_fi_dispatch.py; production_attention/fi_dispatch_probe_*.csv, the newest file): a kernel of k
#: resident CTAs per SM takes the probed placement of its CUDA-graph grid where that grid was probed AT k (the file's
#: `occupancy` column, the residency the probe achieved) and k is in FI_DISPATCH_PROBED_SLOTS; the 8-slot kernels keep
#: FI_PLACEMENT_CSV. The first probe (2026-11-27) reached 8 and 6 where 9 and 7 were meant (its shared-memory cap was
#: one allocation step off); the second (fi_dispatch_probe_nvidia-h100-80gb-hbm3_2026-11-27_2.csv, the cap searched to
#: the exact residency) reached 9 and 7: the (148, 8) grid at 9 per SM and the (115, 8) grid at 7 are placed almost
#: evenly (the first nb columns put at most 1, 2, 3, 4, 5, 7 CTAs on one SM at nb = 8, 14, 30, 44, 64, 100), unlike the
#: 8-per-SM grid (132, 8), whose columns pile up (7 at nb = 14, 8 from 30). The rule that a probed residency replaces the
#: even spread was committed before that probe ran (fourth decode blind grid); its refit moved the bf16 decode fit rows'
#: rms log error 0.0956 -> 0.0721 (Llama-3.1-70B's rows). The 6-slot kernel (group 4, fp8 K/V) keeps the even spread:
#: its probed (99, 8) placement, the 8-slot grid's SMs, raised its fit rows' rms log error 0.076 -> 0.109
FI_DISPATCH_GLOB = "fi_dispatch_probe_*.csv"
FI_DISPATCH_PROBED_SLOTS = (9.0, 7.0)


#: the CUDA-graph grids the placement probes above never covered, placed as the real kernel's launches were: the CTA
#: probe (lab/kernels/probe_fi_decode_ctas.py, H100 2026-11-27: an instrumented build of the decode kernel records
#: %smid per CTA) mapped every CTA of the Llama-3.1-70B TP 4 grid (594, 2) at 9 per SM (8 launches) and the
#: Llama-3.1-8B TP 2 grid (264, 4) at 8 per SM (3 launches) (FI_GRAPH_PLACEMENT_CSV: one row per launch, the SM of
#: each CTA in blockIdx order, y x grid_x + x). All of a launch's CTAs start within 0.3 us, so each map is the
#: dispatch of a full one-wave grid (the padded CTAs exit only after all are placed); the maps differ a little from
#: launch to launch (the (594, 2) grid's first 150 columns: 3 or 4 CTAs on the busiest SM), so the busiest count at nb
#: working columns is the median over the launches. Where the even spread priced those grids, the probe's calls were
#: 17-36 % too fast and 3-4 % with their own measured busiest count (LOOKED-AT rows: benchmarks/calibration_accuracy.py
#: FI_DECODE CTA PROBE). ON since the seventh decode blind grid (prices with it on and off committed before that grid
#: was measured, 35 shapes in no earlier CSV): |error| 17.8 / 25.9 % (1 of 5 regimes) off -> 9.6 / 18.0 % (4 of 5) on;
#: (594, 2) grid 19.2 -> 7.3 % median, (264, 4) grid 21.1 -> 9.3 %, the crowded S = 2 calls unchanged (-11 %)
FI_GRAPH_PLACEMENT = True
FI_GRAPH_PLACEMENT_CSV = "fi_graph_placement_nvidia-h100-80gb-hbm3_2026-11-27.csv"


@functools.lru_cache(maxsize=8)
def _graph_placement_table(grid_x: int, grid_y: int, slots: int) -> tuple | None:
    """k[nb] = the median over FI_GRAPH_PLACEMENT_CSV's launches of the (grid_x, grid_y) grid at `slots` per SM of the
    most working CTAs on one SM when columns 0..nb-1 work (nb = 0..grid_x); None when that grid is not in the file."""
    import csv
    from pathlib import Path

    import hwmodels
    from hwmodels import datafiles as DF
    p = DF.resolve(Path(hwmodels.__file__).resolve().parent / "calibration" / "data" / "production_attention"
                   / FI_GRAPH_PLACEMENT_CSV)
    if not p.is_file():
        return None
    tables = []
    with DF.open_text(p) as f:
        for r in csv.DictReader(f):
            if r["grid"] != f"{grid_x}x{grid_y}" or int(r["slots"]) != slots:
                continue
            sm = [int(v) for v in r["smid_by_cta"].split()]
            if len(sm) != grid_x * grid_y:
                continue
            counts: dict[int, int] = {}
            best, out = 0, [0]
            for x in range(grid_x):
                for y in range(grid_y):
                    s = sm[y * grid_x + x]
                    counts[s] = counts.get(s, 0) + 1
                    best = max(best, counts[s])
                out.append(best)
            tables.append(out)
    if not tables:
        return None
    return tuple(float(v) for v in np.median(np.asarray(tables, dtype=np.float64), axis=0))


@functools.lru_cache(maxsize=32)
def _placement_table(grid_x: int, grid_y: int, slots: int = 8) -> tuple | None:
    """k[nb] = the most active CTAs on one SM when columns 0..nb-1 of the measured (grid_x, grid_y) grid are active
    (nb = 0..grid_x), or None when that grid was not probed: at 8 slots FI_PLACEMENT_CSV, at the FI_DISPATCH_PROBED_SLOTS
    residencies the newest FI_DISPATCH_GLOB file's rows probed at that occupancy."""
    import csv
    from pathlib import Path

    import hwmodels
    from hwmodels import datafiles as DF
    d = Path(hwmodels.__file__).resolve().parent / "calibration" / "data" / "production_attention"
    if slots == int(FI_PLACEMENT_SLOTS):
        p, occ = DF.resolve(d / FI_PLACEMENT_CSV), None
    else:
        fs = DF.glob(d, FI_DISPATCH_GLOB)
        p, occ = (fs[-1] if fs else d / FI_DISPATCH_GLOB), str(slots)
    if not p.is_file():
        return None
    sm = {}
    with DF.open_text(p) as f:
        for r in csv.DictReader(f):
            if r["grid"] == f"{grid_x}x{grid_y}" and (occ is None or r.get("occupancy") == occ):
                sm[(int(r["x"]), int(r["y"]))] = int(r["smid"])
    if len(sm) != grid_x * grid_y:
        return None
    counts: dict[int, int] = {}
    out = [0]
    best = 0
    for x in range(grid_x):
        for y in range(grid_y):
            s = sm[(x, y)]
            counts[s] = counts.get(s, 0) + 1
            best = max(best, counts[s])
        out.append(best)
    return tuple(out)


def fi_decode_crowding(active_cols, grid_x, grid_y, slots, sms: int):
    """CTAs on the busiest SM of a one-wave decode launch whose first `active_cols` columns (of grid_x x grid_y) do
    work: the MEASURED dispatch where that grid was probed with the kernel's residency (FI_PLACEMENT_CSV at
    FI_PLACEMENT_SLOTS, FI_DISPATCH_GLOB at FI_DISPATCH_PROBED_SLOTS); otherwise the even spread
    min(slots, ceil(active CTAs / SMs))."""
    nb, gx, gy, slots = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64) for v in (active_cols, grid_x, grid_y,
                                                                                        slots)))
    k = np.minimum(slots, np.maximum(np.ceil(nb * gy / float(sms)), 1.0))
    out = np.array(k, dtype=np.float64)
    for i in np.ndindex(nb.shape):
        if (slots[i] != FI_PLACEMENT_SLOTS and slots[i] not in FI_DISPATCH_PROBED_SLOTS) or gx[i] != int(gx[i]) \
                or gy[i] != int(gy[i]):
            continue
        t = _placement_table(int(gx[i]), int(gy[i]), int(slots[i]))
        if t is not None and 1 <= nb[i] <= gx[i]:
            out[i] = min(float(slots[i]), float(t[int(nb[i])]))
    if FI_GRAPH_PLACEMENT:   # the grids no earlier probe covered, as the real kernel's launches placed them
        for i in np.ndindex(nb.shape):
            if gx[i] != int(gx[i]) or gy[i] != int(gy[i]) or slots[i] != int(slots[i]) or not 1 <= nb[i] <= gx[i]:
                continue
            if (slots[i] == FI_PLACEMENT_SLOTS or slots[i] in FI_DISPATCH_PROBED_SLOTS) and \
                    _placement_table(int(gx[i]), int(gy[i]), int(slots[i])) is not None:
                continue
            t = _graph_placement_table(int(gx[i]), int(gy[i]), int(slots[i]))
            if t is not None:
                out[i] = min(float(slots[i]), t[int(nb[i])])
    return out


#: the CUDA-core decode call's CTA launch: each CTA an SM hosts after its first starts later by a share of a dependent
#: load (sync_us = the device's MEASURED DRAM latency, 0.3494 us), priced on the busiest SM of the launch (the
#: measured dispatch, fi_decode_crowding) for the decode kernel, and on SMs x m CTAs (m per SM) for its merge kernel
#: (VariableLengthMergeStates, cascade.cuh @ FI_COMMIT: a persistent grid of num_sms x min(occupancy, ceil(rows / SMs))
#: CTAs whose every CTA takes one (row, head) pair at a time, `#pragma unroll 1`). Not in any source: the CTA launch is
#: the hardware's (register and shared-memory allocation, the block scheduler's hand-off). Where it shows: the
#: launch profiles' per-kernel times (torch.profiler, production_attention_*_grids_*.csv, LOOKED-AT): the merge of a
#: call with S = 1 (one partial state per row, the copy path) takes 1.5-1.8 us at 1 CTA per SM, 1.9 at 3, 2.56 at 7,
#: 3.49 at 12 (~0.17 us per extra CTA); the decode kernel of Llama-3.1-8B bf16 B 28 at 20 tokens (8 CTAs on the busiest
#: SM) 7.78 us against 6.11 priced without it. Only the CUDA-core decode call (its kernel and its merge) takes it: the
#: FA2 prefill kinds' merge (fi_tc, fi_verify) keeps its fitted terms. Value: MEASURED from those merge kernels (the
#: launch profiles of 40 short-context calls, S = 1, 1-12 CTAs per SM: merge_us = 1.608 + 0.1657 x (CTAs per SM - 1),
#: least squares; 0.1657 / 0.3494 = 0.47), not fitted to the calls' times. The fit rows' own scan
#: (simulator/calibration/fit_production_attention.py `cta_launch_scan`, the decode kinds refitted at each share) is
#: flat and lower at larger shares (rms log error bf16 / fp8, before the 9- / 7-slot dispatch probe: 0.0995 / 0.0767 at
#: 0, 0.0956 / 0.0759 at 0.47, 0.0928 / 0.0758 at 1.0, 0.0919 / 0.0759 at 1.5, 0.0938 / 0.0765 at 2.0; with it: 0.0817 /
#: 0.0765, 0.0721 / 0.0754, 0.0651 / 0.0749, 0.0629 / 0.0753, 0.0650 / 0.0764): its optimum 1.5 is three times the
#: measured CTA launch; priced beside it on the fourth decode blind grid (benchmarks/calibration_accuracy.py), it
#: overshoots the short calls (bf16 short mid batch +12 % median, p90 48 %) where 0.47 meets them
FI_DECODE_CTA_LAUNCH_SHARE = 0.47
#: the decode launches give the roofline their own residency (Launch.resident = the kernel's slots from its registers
#: and shared memory) for the wave count, instead of the kind's calibrated cta_slots (8 bf16, 6 fp8), which count the
#: 9- and 7-slot kernels (Llama-3.1-70B's group of 8) in waves of 8 / 6 per SM (a (148, 8) grid of 1,100 working CTAs
#: is one wave at 9 per SM, two at 8). The kernels' slots are the occupancy of their source geometry and MEASURED
#: registers (FI_DECODE_REGS), the same number FlashInfer's plan sizes its CUDA-graph grid with. Fit rows' rms log error
#: bf16 0.0719 -> 0.0717 (fp8 unchanged). On the sixth decode blind grid (H100 2026-11-27) its `9-slot past 8 per SM`
#: rows (Llama-3.1-70B bf16, B 136 / 146: 1,088-1,168 working CTAs) moved little: |error| 6.6 / 8.4 % -> 7.0 / 8.8 (met
#: in both; the prices moved by -0.4 %)
FI_DECODE_OWN_RESIDENCY = True


def fi_decode_geometry(G, d, kvb):
    """(threads, keys per iteration, shared memory bytes) of the CUDA-core decode kernel (module docstring)."""
    G, d, kvb = (np.asarray(x, dtype=np.float64) for x in (G, d, kvb))
    vec = np.maximum(16.0 / kvb, d / 32.0)
    bdx = d / vec
    threads = np.maximum(128.0, bdx * G)
    bdz = threads / (bdx * G)
    tile = np.where(G == 1, np.where(kvb == 1, 2.0, 4.0), 1.0)
    keys = tile * G * bdz
    smem = 2.0 * 2.0 * tile * G * bdz * d * kvb + np.maximum(tile * threads * 8.0, 2.0 * G * bdz * 4.0)
    return threads, keys, smem


#: the merge kernel's items of two or more partial states (PersistentVariableLengthMergeStatesKernel, cascade.cuh @
#: FI_COMMIT): an item with num_index_sets >= 2 takes the merge path, not the copy path: its indptr load, then the cp.async
#: of its states and the global load of their lse into s_smem, each closed by __syncthreads (the lse store, then after
#: wait_group, after the merge, after wait_group<0>, then threadblock_sync_state's), so the CTA's four warps leave the
#: item together, after both loads have landed, and the next item's indptr load issues only then. Each item after a CTA's
#: first therefore pays the item's dependent loads again (FI_MERGE_PROLOGUE_LOADS: indptr -> partial states), on top of
#: the per-state term (iter_us); the copy path (one state: a load and a store, no barrier) keeps the per-state term
#: alone. No constant (the measured DRAM latency per load). Where it showed (LOOKED-AT, the CUDA-core decode CTA probe,
#: fi_cta_probe_*_summary.csv, H100 2026-11-27): Llama-3.1-8B bf16 S = 2 at 204 tokens, the merge's slowest CTA runs
#: 3.9 us after its wait at B 42 (one item per CTA) and 5.2 us at B 60 (two), model 4.2 at B 60 without this term; one-
#: state items at B 60 / 120 tokens (two per CTA) 1.5 us
FI_MERGE_ITEM_RELOADS = True


#: True = a merge of many merge-path items (two or more partial states each) is bounded by its SMs' issue: the items
#: beyond the first round of CTAs (rows / SMs - CTAs per SM of them) take FI_MERGE_ITEM_SM_US each on their SM, in
#: the CTAs' chain (dependent-load units, FI_TC_LOAD_S), where that exceeds the items' reloads (FI_MERGE_ITEM_RELOADS);
#: False = the reloads alone. LOOKED-AT: the ten merge kernels in the prefill grids' launch profiles (1584 CTAs, 6,144-
#: 16,384 items of 2+ states, six models) follow 2.76 us + 0.310 us x items / SM within -3.6..+2.7 %, where the model
#: priced 9-17 us against 17-43 us measured. Applied to a prefill call's merge (fi_tc causal) only: the decode and
#: verification merges of the production-attention fit keep their reloads (on them the law would move the fitted FA2
#: prefill kinds, attn_fi_prefill's compute 0.654 -> 0.713, a refit not done here)
FI_MERGE_ITEM_SM = True
#: the per-item SM time of that law: FITTED (least squares) on those ten profiled merges (hwmodels/calibration/data/
#: production_attention/prefill_kernels*_grids.csv, PersistentVariableLengthMergeStatesKernel rows, H100 2026-11-28)
FI_MERGE_ITEM_SM_US = 0.3103
#: True = a decode call's merge prices its merge-path items (two or more partial states: the cp.async stages, the lse
#: load and the five __syncthreads of PersistentVariableLengthMergeStatesKernel, cascade.cuh @ FI_COMMIT) by the SM's
#: issue of every item it hosts, FI_MERGE_ITEM_SM_US x (rows / SMs) -- the per-item time of the prefill merges' law --
#: where that exceeds the CTA launch share and reloads (FI_DECODE_CTA_LAUNCH_SHARE, FI_MERGE_ITEM_RELOADS): the SM's
#: resident CTAs each take one item at a time, so at a few items per CTA the SM's issue of the items, not the CTAs'
#: launch, sets the merge's length. The copy path (one state: a load and a store) keeps the launch share it was
#: measured with. No constant of its own. Where it showed (LOOKED-AT, the launch profiles of the decode blind grids
#: 6-8 and the H200 transfer grid: 20 merge-path merges, S 2-9, 0.06-12 items per SM): measured 2.3-5.5 us against
#: 1.6-4.7 us priced (-13..-33 %); the law 1.9 + 0.31 x items / SM us follows them within about 10 %, the prefill
#: merges' (2.76 + 0.310 x items / SM, 47-124 items / SM) with the same slope. Judged BLIND on the ninth decode blind
#: grid (53 new shapes, 1 x H200, 2026-11-28, priced at a086edb with the decode kinds refitted with it; benchmarks/
#: accuracy_sections/fi_dec_blind9.py): calls 8.7 / 15.4 % -> 7.8 / 14.7 % (median / p90), signed -8.3 -> -6.3 %, S = 2
#: bf16 10.1 / 13.5 -> 6.6 / 17.2 % (regimes met 3 -> 4 of 4); its 8 profiled merge-path merges -30 % -> +3 % (median
#: |error| 29.9 -> 3.3 %): SHIPPED. False = the launch share and reloads alone (the model shipped after the eighth decode
#: blind grid). The verification / prefill call's merge (fi_tc) does not take it: its profiled merges run 25-60 % longer
#: than priced too (the copy path's as well, where the decode call's launch share is not taken), absorbed by the fitted
#: FA2 kinds; moving them means refitting attn_fi_prefill, which the FA2 prefill families share
FI_MERGE_PATH_SM_DECODE = True


def _merge(B, q, Hq, d, S, sms, smem_per_sm, where, name="attention_merge", pdl=None, cta_launch=0.0, reloads=False,
           item_sm=False, path_sm=False):
    """VariableLengthMergeStates (cascade.cuh): persistent, SMs x min(resident, ceil(pairs / SMs)) CTAs; cta_launch: the
    share of a dependent load each CTA after the first on an SM adds (FI_DECODE_CTA_LAUNCH_SHARE; 0 = none); reloads:
    each merge-path item after a CTA's first pays its dependent loads again (FI_MERGE_ITEM_RELOADS); item_sm: the
    prefill merges' per-item SM time beyond the first round (FI_MERGE_ITEM_SM); path_sm: the merge-path items at least
    the SM's issue of all it hosts (FI_MERGE_PATH_SM_DECODE)."""
    rows = B * q * Hq
    vec = np.maximum(8.0, np.asarray(d, dtype=np.float64) / 32.0)
    bdy = 128.0 / (np.asarray(d, dtype=np.float64) / vec)
    smem = 4.0 * bdy * d * 2.0 + 128.0 * 4.0
    slots = occupancy(128.0, smem, FI_REGS["merge"], smem_per_sm)
    ctas = sms * np.minimum(slots, ceil_div(rows, sms))
    per_cta = ceil_div(rows, ctas)
    rd, wr = combine_io(rows, S, d)
    # each of a CTA's (row, head) pairs walks its S partial states one after another (4 shared-memory stages ahead)
    # one wave (persistent grid): the SM's CTAs after its first each add a launch share (cta_launch)
    launch = cta_launch * np.maximum(ctas / float(sms) - 1.0, 0.0)
    if reloads:   # the merge path's items after the CTA's first (FI_MERGE_ITEM_RELOADS)
        again = FI_MERGE_PROLOGUE_LOADS * np.maximum(per_cta - 1.0, 0.0)
        if FI_MERGE_ITEM_SM:   # the SM's issue of the items beyond its first round (FI_MERGE_ITEM_SM_US), prefill's
            k1 = ctas / float(sms)
            sm = FI_MERGE_ITEM_SM_US * 1e-6 * np.maximum(rows / float(sms) - k1, 0.0) / FI_TC_LOAD_S
            again = np.where(item_sm, np.maximum(again, sm), again)
        launch = launch + np.where(np.asarray(S) >= 2.0, again, 0.0)
    if path_sm:   # the merge path's items by the SM's issue of all it hosts (FI_MERGE_PATH_SM_DECODE)
        issue = FI_MERGE_ITEM_SM_US * 1e-6 * np.asarray(rows, dtype=np.float64) / float(sms) / FI_TC_LOAD_S
        launch = np.where(np.asarray(S) >= 2.0, np.maximum(launch, issue), launch)
    return Launch(name, "attn_combine_fi", ctas, slots, per_cta * S, FI_MERGE_PROLOGUE_LOADS + launch,
                  3.0 * rows * d * S, rd, wr, dtype="fp32", where=where, info={"merge_rows": rows},
                  hidden_loads=FI_MERGE_PDL_PREWAIT_LOADS if _pdl(pdl) else 0.0)


def fi_decode(B, T, Hq, Hkv, d, kvb, page, sms: int, smem_per_sm: float, cuda_graph: bool = True, regs=None,
              pdl=None, busiest=None):
    """Launches of one CUDA-core decode call (one query row per sequence): the decode kernel and, when it splits,
    the merge kernel (module docstring); pdl: launched with programmatic dependent launch in a chain (FI_PDL_GRAPH
    when None); busiest: CTAs on the busiest SM of a one-wave launch to price instead of fi_decode_crowding's (a
    diagnosis's what-if, e.g. a probe's measured placement; None = the model's own). Returns (launches, info)."""
    B, T, Hq, Hkv, d, kvb, page = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64)
                                                        for x in (B, T, Hq, Hkv, d, kvb, page)))
    G = Hq / Hkv
    threads, keys, smem = fi_decode_geometry(G, d, kvb)
    slots = occupancy(threads, smem, fi_decode_regs(G, kvb) if regs is None else regs, smem_per_sm)
    max_grid = slots * sms
    P = np.maximum(ceil_div(T, page), 1.0)
    lb = np.maximum(np.floor(128.0 / page), 1.0)
    big = B * Hkv >= max_grid
    nmax = np.maximum(np.floor(max_grid / np.maximum(B * Hkv, 1.0)), 1.0)
    c = np.where(lb >= P, lb, np.clip(ceil_div(P, nmax), lb, P))
    chunks = ceil_div(P, c)
    split = ~big & ((chunks > 1) | cuda_graph)
    S = np.where(split, chunks, 1.0)
    chunk_tok = np.where(split, np.minimum(c * page, T), T)
    active = B * S * Hkv
    grid = np.where(split & cuda_graph, np.floor(max_grid / Hkv) * Hkv, active)
    iters = ceil_div(chunk_tok, keys)
    flops, kv, qb, ob = attention_io(B, 1.0, T, Hq, Hkv, d, d, kvb)
    # issue on the busiest SM: a tile's CUDA-core work (q.k, the shuffles over bdx, exp, p.v as fp32 FMAs on vec_t,
    # decode.cuh compute_qk / update_local_state) is issued by the SM's warp schedulers, shared by every CTA resident
    # there, so a one-wave launch lasts as long as its most crowded SM's k CTAs take to issue their tiles. The
    # roofline's compute term spreads a launch evenly (ceil(n / SMs) per SM); `crowd` rescales the arithmetic to the
    # busiest SM's k (fi_decode_crowding): flops x k x SMs x fill / n, 1 for an even spread or several waves
    one_wave = active <= slots * sms
    kb = fi_decode_crowding(np.where(split, B * S, B), np.where(split & cuda_graph, grid / Hkv, B), Hkv, slots, sms)
    if busiest is not None:
        kb = np.broadcast_to(np.asarray(busiest, dtype=np.float64), kb.shape).copy()
    even = np.ceil(active / sms)
    # the busiest SM's CTAs walk whole chunks (PartitionPagedKVCache: every chunk c pages but a request's last), not
    # the mean chunk T / S the launch's flops spread: their share is chunk tokens x S / T of the mean's (added after
    # the FlashInfer check grid was measured, from its T 160 rows: 2 chunks of 128 + 32 tokens, 25-45 % too fast
    # blind; fit rows' rms log error 0.077 -> 0.078; those rows are looked-at since)
    full = np.where(split, chunk_tok * S / np.maximum(T, 1.0), 1.0)
    crowd = np.where(one_wave, np.maximum(kb / np.maximum(even, 1.0), 1.0) * full, 1.0)
    # the busiest SM's CTAs start one after another (FI_DECODE_CTA_LAUNCH_SHARE): the measured dispatch's k in a one-wave
    # launch, a full SM (slots) in the first wave of several; priced once per launch (emit multiplies the prologue's
    # loads by the waves)
    k_first = np.where(one_wave, np.maximum(kb, 1.0), slots)
    waves_n = np.maximum(np.ceil(active / (slots * sms)), 1.0)
    launch_loads = FI_DECODE_CTA_LAUNCH_SHARE * (k_first - 1.0) / waves_n
    pages_read = B * P * 4.0 * Hkv            # every KV head's CTAs read the request's page indices
    written = np.where(split, S * B * Hq * (d * 2.0 + 4.0), ob)   # tmp_v in the output dtype + fp32 lse
    kind = np.where(kvb < 2.0, "attn_fi_decode_fp8kv", "attn_fi_decode")
    out = []
    pdl = _pdl(pdl, FI_DECODE_PDL)
    for k in ("attn_fi_decode", "attn_fi_decode_fp8kv"):
        m = kind == k
        if m.any():
            # CUDA-core arithmetic: q . k and p v as fp32 FMAs on vec_t<float> (decode.cuh compute_qk / update_local_state)
            out.append(Launch("attention", k, active, slots, iters, FI_PROLOGUE_LOADS + launch_loads, flops * crowd,
                              kv + S * qb + pages_read, written, dtype="fp32", where=m, idle=grid - active,
                              resident=slots if FI_DECODE_OWN_RESIDENCY else 0.0,
                              hidden_loads=FI_PDL_PREWAIT_LOADS if _pdl(pdl) else 0.0))
    out.append(_merge(B, 1.0, Hq, d, S, sms, smem_per_sm, split, pdl=pdl and FI_DECODE_MERGE_PDL,
                      cta_launch=FI_DECODE_CTA_LAUNCH_SHARE, reloads=FI_MERGE_ITEM_RELOADS,
                      path_sm=FI_MERGE_PATH_SM_DECODE))
    return out, {"splits": S, "chunk_tokens": chunk_tok, "ctas": grid, "active_ctas": active, "slots": slots,
                 "keys_per_iter": keys, "split": split, "crowd": crowd, "busiest_sm_ctas": kb}


def fa2_cta_tile_q(packed, d):
    """FA2DetermineCtaTileQ (utils.cuh): 128 / 64 / 16 query rows (packed with the GQA group) per CTA."""
    packed = np.asarray(packed, dtype=np.float64)
    return np.where((packed > 64) & (np.asarray(d) < 256), 128.0, np.where(packed > 16, 64.0, 16.0))


def fa2_tile_kv(ctq, d, kvb, smem_per_sm):
    """(CTA_TILE_KV, CTAs per SM the plan expects, threads, shared memory) of FlashInfer's FA2 prefill kernel."""
    ctq, d, kvb = (np.asarray(x, dtype=np.float64) for x in (ctq, d, kvb))
    nwq = np.where(ctq > 16, 4.0, 1.0)
    nwkv = 4.0 / nwq
    nmq = np.where(ctq > 64, 2.0, 1.0)
    per = 2.0 * d * 16.0 * nwkv * kvb
    per_sm = np.where(smem_per_sm >= 2.0 * (ctq * d * 2.0 + per), 2.0, 1.0)
    max_smem = np.floor((smem_per_sm / per_sm - ctq * d * 2.0) / per)
    m = np.minimum(max_smem, 8.0 / nmq)
    nmkv = np.where(m >= 8, 8.0, np.where(m >= 4, 4.0, np.where(m >= 2, 2.0, 1.0)))
    tile = nmkv * nwkv * 16.0
    smem = np.maximum(ctq * d * 2.0 + 2.0 * tile * d * kvb, np.where(nwkv > 1, nwkv * ctq * d * 4.0 + nwkv * ctq * 8.0,
                                                                      0.0))
    return tile, per_sm, 32.0 * nwq * nwkv, smem


def fa2_fp8_frags(ctq, tile_kv):
    """NUM_MMA_KV of the FA2 prefill kernel: the 16-key fragment columns of a KV tile that one warp walks, each
    converted from fp8 before its MMAs (module docstring, fi_tc fp8): CTA_TILE_KV / (warps along KV x 16)."""
    nwkv = np.where(np.asarray(ctq, dtype=np.float64) > 16, 1.0, 4.0)
    return np.asarray(tile_kv, dtype=np.float64) / (nwkv * 16.0)


# ---- the tensor-core (FA2 prefill) kernel's bf16 K/V tile chain ---------------------------------------------------------
#: True = a bf16 K/V CTA's chain is its tiles' waited loads and MMAs (fi_tc_bf16_steps), in dependent-load units (the
#: kind's iter_us, which the fit sets to the device's MEASURED DRAM latency, as sync_us: fit_production_attention
#: TILE_WAIT_KINDS); False = one fitted step per tile (the rule before: its fit rows put that step at its lower bound,
#: 0.005 us, so a bf16 CTA's tiles cost nothing on its chain)
FI_TC_BF16_TILE_WAITS = True
#: the dependent-load unit of that chain (s): the device's MEASURED DRAM latency, as FI_MLA_LOAD_S
FI_TC_LOAD_S = 0.3494e-6
#: one SM's rate for a K or V tile it waits on (bytes/s) and one warp's m16n8k16 MMA rate (FLOP/s) on that chain: FITTED
#: (lab/kernels/fit_fi_tc_tile_rates.py, non-negative least squares of the chain step on the per-tile slopes) on the
#: tile-rate scan's one-CTA rows, MEASURED on this kernel: hwmodels/calibration/data/production_attention/
#: production_attention_fi_tc_scan12_nvidia-h100-80gb-hbm3_2026-11-27.csv (H100 SXM, flashinfer 0.6.4; one request and
#: KV head per CTA, split-KV off, q 1-32 x context 16-1024 in KV-tile steps; slopes and rates in
#: production_attention_fi_tc_scan12_rates.csv). Measured slopes per tile: 1.19-1.22 us at 16-row Q tiles (128-key
#: tiles), 2.28-2.34 us at 64 rows, 1.82 us at 128 rows (64-key tiles); the fitted step gives 1.25 / 2.18 / 2.05 us.
#: Before the scan both were ASSUMED: 42.5 GB/s (FlashMLA's per-SM fill rate) and a quarter of one SM's datasheet
#: dense bf16 rate (1.87 TFLOP/s): the scan puts a tile's load 6x faster and a warp's MMAs 2.2x slower than that. The
#: many-CTA rows (2-132 CTAs, one per SM; not fitted) keep the 128-row slope within 1.00-1.26x of one CTA's, while the
#: 16-row tiles' slope grows to 2.8x at 132 CTAs (the launch's HBM traffic, which the kind's memory term prices)
FI_TC_TILE_RATE_SM = 263.8e9
FI_TC_WARP_MMA_FLOPS = 0.8524e12
#: True = the bf16 tile chain's MMAs are shared by the CTAs resident on the busiest SM: a CTA with k - 1 neighbours
#: issues its tile's MMAs at 1 / k of the rate the one-CTA scan measured (the fitted per-warp rate x 4 warps = 3.4
#: TFLOP/s per SM, 450 TFLOP/s over 132 SMs: the m16n8k16 mma.sync rate of one SM's four schedulers, which the
#: two co-resident CTAs' eight warps then share, two per scheduler: prefill.cuh compute_qk / compute_sfm_v issue
#: one MMA stream per warp, and the plan sizes the launch for 2 CTAs per SM, PrefillPlan). k = min(slots, ceil(CTAs /
#: SMs)), the fp8 kind's column share (fi_tc share8) applied to the bf16 MMAs; the waited K / V loads are a CTA's own
#: latency and stay unshared. False = every CTA at the one-CTA rate (the model before)
FI_TC_MMA_SHARED = True
#: the share of the added MMA time (k - 1 neighbours' MMAs) that lands on the CTA's chain, the rest overlapping the
#: neighbours' waited loads: step = 2 x load + mma x (1 + share x (k - 1)). FITTED (lab/kernels/fit_fi_tc_mma_share.py,
#: the smallest rms log error in 0.05 steps) on NAMED fit rows: the bf16 fi_verify rows at batch >= 32 of the
#: fresh_fi2, fresh_fi3 and fi_tc_blind12 grids (34 rows, contexts 20-1200, 2 CTAs per SM; looked at before, as
#: earlier blind tests). Tested on the thirteenth tensor-core blind grid (48 fi_verify shapes, priced and committed
#: before measuring): |error| median / p90 3.9 / 13.2 % against main's 7.6 / 15.4 %, bf16 short contexts at batch
#: 44-170 11.3 -> 4.9 %, at 264-400 7.2 -> 3.5 % (benchmarks/accuracy_sections/fi_tc_grid13.py)
FI_TC_MMA_SHARE_EXPOSED = 0.9
#: True = the launch's last, partial wave shares its SMs by its OWN occupancy: FlashInfer's FA2 prefill kernel holds 2
#: CTAs per SM (255 registers x 128 threads, measured in the launch profiles), so a launch of n working CTAs on U SMs
#: runs ceil(n / 2U) waves and its last one holds r = n - (waves - 1) 2U CTAs; where r <= U (e.g. Llama-3.1-8B
#: verification at B 44 without a KV split: 352 CTAs = 264 + 88) those CTAs run alone on their SMs once their wave-1
#: neighbours leave, and issue their MMAs (bf16: fi_tc_bf16_steps' k) and fp8 fragment columns (the share k / slots) at
#: k_last = min(slots, ceil(r / U)) rather than the busiest SM's k of the whole launch. The chain the roofline prices
#: is waves x steps, so the steps become the waves' mean: ((waves - 1) x steps(k) + steps(k_last)) / waves. No
#: constant. False = every wave at the whole launch's k (the rule before). Tested on the fourteenth tensor-core blind
#: grid (39 fi_verify shapes, both price files committed before the one device call, H100 2026-11-27): bf16 middle
#: contexts with a partial last wave 20.0 / 23.1 -> 2.5 / 4.7 % (median / p90), fp8 one- / two-tile mid batch 18.9 /
#: 28.1 -> 6.6 / 19.3 %; regimes met 6 -> 8 of 8 (benchmarks/accuracy_sections/fi_tc_grid14.py)
FI_TC_LAST_WAVE_SHARE = True
#: True = the FA2 prefill call's merge (VariableLengthMergeStates, the same persistent kernel the CUDA-core decode call
#: launches, cascade.cuh @ FI_COMMIT) is priced as the decode call's: each merge-path item after a CTA's first pays its
#: dependent loads again (FI_MERGE_ITEM_RELOADS) and the SM's CTAs after its first each add a launch share
#: (FI_DECODE_CTA_LAUNCH_SHARE). Where it showed (LOOKED-AT, the launch profiles of the thirteenth tensor-core blind
#: grid): Llama-3.1-70B TP 2, B 28, q 3, 900 tokens (2 partial states, 2 items per CTA): merge 9.2 us measured, 3.1 us
#: priced; Llama-3.1-8B B 12 q 4 at 700 tokens 5.3 / 2.5 us. No constant; the decode call's CTA launch share is NOT
#: taken (it raised every S = 1 merge, the short small-batch rows' +8 % -> +11 % on the looked-at grids). False = the
#: merge's bare per-state walk. It closes little of the gap: the fourteenth blind grid's KV-split rows (S = 2) stay
#: 12 % fast (main 14 %)
FI_TC_MERGE_AS_DECODE = True
#: True = the FA2 prefill call's merge is priced as the decode call's in full: the CTA launch share for the SM's CTAs
#: after its first (FI_DECODE_CTA_LAUNCH_SHARE) and the merge path's items by the SM's issue of all it hosts
#: (FI_MERGE_PATH_SM_DECODE's rule). NOT SHIPPED (looked-at, 2026-11-28): on the 130 profiled merges of the tensor-core
#: grids (fi_tc / fi_verify launch profiles, H100 and H200) it takes the merge kernel from 30.3 / 43.3 % (S = 1, signed
#: -30 %) and 26.4 / 50.1 % (S >= 2) to 8.2 / 16.1 and 11.8 / 15.8 %, but the call's fit does not hold it: refitted, the
#: FA2 kinds move their time out of the tiles (attn_fi_prefill compute 0.652 -> 1.0, its bound; cta_serial 0.718 ->
#: 0.538 us), the fit rows' rms log error rises (bf16 0.0702 -> 0.0767, fp8 0.0484 -> 0.0531) and the held-out fi_verify
#: rows go 4.1 / 11.3 -> 5.3 / 12.7 % (the S >= 2 verification rows of grid 14 and the H200 transfer grid 12.4-14.4 %
#: -> 2.6-4.0 % median, the one-state rows worse). The tiles' own terms carry the merge's missing time today: a correct
#: merge needs the FA2 tile chain re-derived with it, which the FA2 prefill families share. False = the launch share off
#: and the merge-path items at their reloads (FI_TC_MERGE_AS_DECODE)
FI_TC_MERGE_SM = False
#: True = a decode call's fp8 K/V CTAs declare their first tile's bytes as waited with nothing to overlap
#: (Launch.lone_tile_bytes; hwmodels.roofline LONE_TILE_LOAD: added where the launch holds at most one CTA per SM);
#: verification tiles (> 16 rows) and bf16 K/V do not. LOOKED-AT when chosen (the fi_tc probe); shipped after cold grid
#: 3 judged it blind (simulator/calibration/fi_tc_fp8_grid3.py: 4 of 4 regimes against 3); False = off
FI_TC_FP8_LONE_TILE = True


#: True = a causal prefill launch of several waves puts on each slot's chain the in-order dispatch's makespan over the
#: waves (production.inorder_makespan: FlashInfer's plan orders CTAs by request, query tile and chunk, heads slowest,
#: and the GPU hands them out in that order, so the heaviest tiles of each head start last); False = the mean CTA's
#: walk (the shipped first look's rule). LOOKED-AT: chosen after the first prefill grid, whose multi-wave fresh rows ran
#: 15-28 % slower than priced where the emulated makespan is 1.3-1.6x the mean slot's work
FI_TC_INORDER_TAIL = True


def fi_tc_bf16_steps(iters, ctq, tile_kv, d, kvb, k_sm=1.0):
    """Chain steps (in FI_TC_LOAD_S units) of a bf16 K/V CTA of the FA2 prefill kernel walking `iters` K/V tiles
    (FI_TC_BF16_TILE_WAITS; prefill.cuh @ FI_COMMIT BatchPrefillWithPagedKVCacheDevice). The kernel keeps ONE shared-
    memory stage of K and one of V: tile i + 1's K is issued after tile i's q.k and softmax (page_produce_kv, commit)
    and waited for before tile i's p.v (cp_async::wait_group<1>, which drains V(i)), its V after that p.v and waited for
    before tile i + 1's q.k. So each tile after the first waits on two tile loads that only half a tile's compute hides:
    2 x (one dependent load + the tile's bytes at one SM's rate, FI_TC_TILE_RATE_SM) per tile but the first, whose load
    is in the CTA's per-wave CTA time (cta_fixed_us, borrowed from FlashAttention-2's split-KV kernel, whose measured
    per-wave time holds its one tile). And each such tile's MMAs are issued by the CTA's 4 warps between block.sync()s:
    NUM_MMA_Q x NUM_MMA_KV blocks of 16 rows x 16 keys per warp (q.k over d, p.v over d: 4 x 16 x 16 x d FLOP each) at
    one warp's MMA rate (FI_TC_WARP_MMA_FLOPS): NUM_MMA_Q = CTA_TILE_Q / (16 x warps along Q), 1 at 16 and 64 rows, 2
    at 128; NUM_MMA_KV = fa2_fp8_frags, 2 at 16 rows (128-key tiles), 8 at 64, 4 at 128 (64-key tiles). A one-tile CTA
    adds nothing (its tile is in the per-wave time; the chain of a one-tile launch is 0, as it was at 0.005 us).
    One step per tile when the rule is off. `k_sm`: the CTAs on the launch's busiest SM (fi_tc's busiest_sm_ctas), whose
    MMAs share its issue (FI_TC_MMA_SHARED: mma x (1 + FI_TC_MMA_SHARE_EXPOSED (k - 1))).

    The later waves' first tile: as in the CUDA-core decode kernel (hwmodels/roofline.py CHAIN_OVERLAP_WAVE_FILL), a CTA
    of a later wave issues nothing before its Q and first K / V stage land (griddepcontrol.wait, load_q_global_smem,
    the page offsets, page_produce_kv, then wait_group before compute_qk), but this kind's wave model already puts
    each wave's CTA time (cta_fixed_us, with that first tile) on the chain of every wave but the last
    (roofline CTA_FIXED_HIDDEN) and its serial CTA time once per CTA on an SM (cta_serial_us): a separate wave fill
    would count it twice."""
    iters = np.asarray(iters, dtype=np.float64)
    if not FI_TC_BF16_TILE_WAITS:
        return iters
    ctq, tile_kv = np.asarray(ctq, dtype=np.float64), np.asarray(tile_kv, dtype=np.float64)
    load = 1.0 + tile_kv * np.asarray(d) * np.asarray(kvb) / (FI_TC_TILE_RATE_SM * FI_TC_LOAD_S)
    blocks = ctq / (16.0 * np.where(ctq > 16, 4.0, 1.0)) * fa2_fp8_frags(ctq, tile_kv)
    mma = blocks * 4.0 * 16.0 * 16.0 * np.asarray(d) / FI_TC_WARP_MMA_FLOPS / FI_TC_LOAD_S
    if FI_TC_MMA_SHARED:   # the busiest SM's k CTAs share its MMA issue (FI_TC_MMA_SHARED)
        mma = mma * (1.0 + FI_TC_MMA_SHARE_EXPOSED * (np.maximum(np.asarray(k_sm, dtype=np.float64), 1.0) - 1.0))
    return np.maximum(iters - 1.0, 0.0) * (2.0 * load + mma)


def fa2_max_chunks(tiles, Hkv, sms: int):
    """KV chunks the FA2 prefill plan may cut each (request, query tile) into (scheduler.cuh PrefillSplitQOKVIndptr @
    FI_COMMIT: max_batch_size_if_split = 2 x SMs / KV heads CTAs, shared by `tiles` (request, query tile) pairs);
    below 1 the plan does not split."""
    return np.floor(np.floor(2.0 * sms / np.asarray(Hkv, dtype=np.float64))
                    / np.maximum(np.asarray(tiles, dtype=np.float64), 1.0))


def fa2_chunk_pages(pages, n, page):
    """Pages of each KV chunk of the FA2 prefill plan (scheduler.cuh PrefillSplitQOKVIndptr @ FI_COMMIT): the smallest
    chunk that keeps the plan within its n chunks (fa2_max_chunks), at least 128 tokens' pages; every page (one chunk,
    no split) where that would not cut the keys or n < 1."""
    pages, n = np.asarray(pages, dtype=np.float64), np.asarray(n, dtype=np.float64)
    lb = np.maximum(np.floor(128.0 / np.asarray(page, dtype=np.float64)), 1.0)
    return np.where(lb >= pages, lb, np.where(n >= 1, np.clip(ceil_div(pages, np.maximum(n, 1.0)), lb, pages), pages))


def fi_tc(B, q, T, Hq, Hkv, d, kvb, page, sms: int, smem_per_sm: float, cuda_graph: bool = True, causal=None,
          pdl=None):
    """Launches of one call of FlashInfer's FA2 prefill kernel over the paged cache (tensor-core decode at q = 1,
    verification rows q > 1): the kernel and its merge (module docstring); pdl as fi_decode. causal: None / False =
    every query tile walks its whole chunk (the decode and verification pricing, fitted so); True (per setting) = a
    prefill call's causal bound on each query tile's keys (production.causal_tile_blocks). cuda_graph False = an
    engine's eager prefill plan (no padded grid, split only where it fills the device). Returns (launches, info)."""
    B, q, T, Hq, Hkv, d, kvb, page = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64)
                                                           for x in (B, q, T, Hq, Hkv, d, kvb, page)))
    G = Hq / Hkv
    packed = q * G
    ctq = fa2_cta_tile_q(np.where(cuda_graph, (B * q - B + 1.0) * G, packed), d)
    tiles_q = ceil_div(packed, ctq)
    total_tiles = np.where(cuda_graph, ceil_div(B * q * G, ctq) + B - 1.0, B * tiles_q)
    M = np.floor(2.0 * sms / Hkv)
    P = np.maximum(ceil_div(T, page), 1.0)
    n = fa2_max_chunks(B * tiles_q, Hkv, sms)
    c = fa2_chunk_pages(P, n, page)
    chunks = ceil_div(P, c)
    split = np.asarray(cuda_graph | (c < P)) & np.ones_like(B, dtype=bool)
    S = chunks
    new_batch = B * tiles_q * S
    padded = np.where(cuda_graph, np.maximum(M, total_tiles), new_batch)
    grid = padded * Hkv
    tile_kv, per_sm, threads, smem = fa2_tile_kv(ctq, d, kvb, smem_per_sm)
    chunk_tok = np.minimum(c * page, T)
    iters = ceil_div(chunk_tok, tile_kv)
    flops, kv, qb, ob = attention_io(B, q, T, Hq, Hkv, d, d, kvb)
    tile_flops = new_batch * Hkv * iters * 4.0 * ctq * tile_kv * d     # whole tiles, padded rows included
    waves0 = np.maximum(np.ceil(new_batch * Hkv / (per_sm * sms)), 1.0)
    if causal is not None and np.any(causal):
        # causal (prefill.cuh num_iterations, production.causal_tile_blocks): a query tile walks its chunk's keys up to
        # its last row's diagonal; the CTAs' chain is the mean CTA's over several waves, the longest's in one
        total, longest = causal_tile_blocks(q, T, G, ctq, tile_kv, chunk=chunk_tok, prefix_continuous=True)
        cz = np.asarray(causal, dtype=bool) & np.ones_like(B, dtype=bool)
        mean = total / np.maximum(tiles_q * S, 1.0)
        if FI_TC_INORDER_TAIL:   # the heaviest tiles dispatched last (production.inorder_makespan): a slot's chain
            span, _ = inorder_makespan(B, q, T, G, ctq, tile_kv, chunk_tok, Hkv, per_sm * sms)
            mean = span / waves0
        iters = np.where(cz, np.where(waves0 > 1.0, mean, longest), iters)
        tile_flops = np.where(cz, B * Hkv * total * 4.0 * ctq * tile_kv * d, tile_flops)
        flops = np.where(cz, causal_flops(B, q, T, Hq, d), flops)
    written = np.where(split, S * B * q * Hq * (d + 1.0) * 4.0, ob)
    out = []
    frags = fa2_fp8_frags(ctq, tile_kv)
    # fp8 K/V: the fragment columns' conversion work (half-width ldmatrix, swizzle, vec_cast before each column's MMAs)
    # is issued by the SM's schedulers for every CTA resident there, so a column takes as long as the busiest SM's k
    # CTAs take to issue theirs: iter_us[fp8 kind] is the column time at the kernel's full residency (slots) and a CTA
    # with k - 1 neighbours takes k / slots of it (k = min(slots, ceil(CTAs / SMs)), even spread: the prefill grid's
    # dispatch was not probed; the CUDA-core decode kernel's crowding rule, fi_decode_crowding, for the same reason)
    k_sm = np.minimum(per_sm, np.maximum(np.ceil(new_batch * Hkv / float(sms)), 1.0))
    share8 = k_sm / per_sm
    n_act = new_batch * Hkv
    waves = np.maximum(np.ceil(n_act / (per_sm * sms)), 1.0)
    k_last = np.minimum(per_sm, np.maximum(np.ceil((n_act - (waves - 1.0) * per_sm * sms) / float(sms)), 1.0))
    for k, m in (("attn_fi_prefill", kvb >= 2.0), ("attn_fi_prefill_fp8kv", kvb < 2.0)):
        if m.any():
            if k == "attn_fi_prefill_fp8kv":
                steps = iters * frags * share8
                if FI_TC_LAST_WAVE_SHARE:   # the last partial wave at its own occupancy (FI_TC_LAST_WAVE_SHARE)
                    steps = iters * frags * ((waves - 1.0) * share8 + k_last / per_sm) / waves
            else:
                steps = fi_tc_bf16_steps(iters, ctq, tile_kv, d, kvb, k_sm)
                if FI_TC_LAST_WAVE_SHARE:
                    steps = ((waves - 1.0) * steps + fi_tc_bf16_steps(iters, ctq, tile_kv, d, kvb, k_last)) / waves
            # fp8 K/V at decode tiles (16 rows, warps along KV): each CTA's first tile (its valid keys, K and V) is
            # waited for with nothing to overlap it (hwmodels.roofline LONE_TILE_LOAD)
            lone = np.where((k == "attn_fi_prefill_fp8kv") & (ctq <= 16.0),
                            np.minimum(chunk_tok, tile_kv) * d * kvb * 2.0, 0.0) if FI_TC_FP8_LONE_TILE else 0.0
            out.append(Launch("attention", k, new_batch * Hkv, per_sm, steps, FI_PROLOGUE_LOADS,
                              np.maximum(tile_flops, flops), kv + S * qb + B * P * 4.0 * Hkv, written, where=m,
                              idle=grid - new_batch * Hkv, hidden_loads=FI_PDL_PREWAIT_LOADS if _pdl(pdl) else 0.0,
                              lone_tile_bytes=lone))
    prefill = (np.asarray(causal, dtype=bool) & np.ones_like(B, dtype=bool)) if causal is not None else False
    out.append(_merge(B, q, Hq, d, S, sms, smem_per_sm, split, pdl=pdl,
                      cta_launch=FI_DECODE_CTA_LAUNCH_SHARE if FI_TC_MERGE_SM else 0.0,
                      reloads=FI_TC_MERGE_AS_DECODE and FI_MERGE_ITEM_RELOADS, item_sm=prefill,
                      path_sm=FI_TC_MERGE_SM))
    return out, {"splits": S, "cta_tile_q": ctq, "cta_tile_kv": tile_kv, "ctas": grid, "active_ctas": new_batch * Hkv,
                 "slots": per_sm, "chunk_tokens": chunk_tok, "split": split, "busiest_sm_ctas": k_sm,
                 "waves": waves, "last_wave_sm_ctas": k_last}


def mla_kv_limit(x):
    """MLAPlan's f (scheduler.cuh): the KV tokens one piece of work may hold, from the mean per cluster."""
    x = np.asarray(x, dtype=np.float64)
    return np.where(x <= 8, 32.0, np.where(x <= 16, 64.0, np.where(x <= 32, 128.0, np.where(x <= 64, 192.0,
                                                                                          ceil_div(x, 256) * 256.0))))


#: a work item's last 64-token stage when it is partial (n mod 64 tokens): mla_hopper.cuh @ FI_COMMIT load_kv<true>
#: fills the rows past the item's end with zeros (load_128b_async<kFillZero>: no global read), so a partial stage loads
#: (n mod 64) x 1152 B, while its two GEMMs, softmax and barriers run on the whole 64-token tile. Its chain time is priced
#: as share + (1 - share) x (n mod 64) / 64 of a full stage (iter[kind]): share = the part of a stage that does not
#: scale with its tokens. Chosen by a scan on the fit rows (simulator/calibration/fit_production_attention.py
#: `partial_stage_scan`, the kind's other terms refitted at each share: their partial stages are the 32-token pieces
#: of the campaign's small-batch middle rows; the mla_fit2 rows' items are whole stages): rms log error 0.0639 at 0,
#: 0.0630 at 0.4, 0.0627 at 0.6, 0.0623 at 1.0, monotone: the fit rows prefer a partial stage at a full stage's time,
#: so the share is 1.0 (no partial-stage discount). The short shapes (one 16-48-token stage per item), which are not
#: fit rows, would take less
FI_MLA_PARTIAL_STAGE_SHARE = 1.0


def _mla_assign(lens, limit: float, clusters: int, tile_rows: float, partial_share: float = 1.0):
    """MLAPlan's least-loaded assignment (scheduler.cuh @ FI_COMMIT: MinHeap of clusters, cost_function = 2 x tile
    rows + tokens) of (request, q tile) KV ranges of `lens` tokens, in plan order, each cut into pieces of <= limit
    tokens (a range of 0 tokens still makes one item: zero_kv_len): (items, KV tokens, 64-token stages, stage units,
    first-stage tokens) of the cluster that ends with the largest cost; stage units count an item's partial last stage
    as partial_share + (1 - partial_share) x its share of 64 tokens (FI_MLA_PARTIAL_STAGE_SHARE); first-stage tokens
    sum min(n, 64) over its items (FI_MLA_FILL_RATE_SM)."""
    heap = [(0.0, c) for c in range(clusters)]
    items = [0] * clusters
    stages = [0] * clusters
    units = [0.0] * clusters
    toks = [0.0] * clusters
    first = [0.0] * clusters
    for T in lens:
        rem = T
        for _ in range(max(int(np.ceil(T / limit)), 1)):
            n = min(rem, limit)
            cost, c = heapq.heappop(heap)
            heapq.heappush(heap, (cost + 2.0 * tile_rows + n, c))
            items[c] += 1
            toks[c] += n
            first[c] += min(n, FI_MLA_TILE_KV)
            stages[c] += int(np.ceil(n / FI_MLA_TILE_KV))
            full, part = divmod(n, FI_MLA_TILE_KV)
            units[c] += full + (partial_share + (1.0 - partial_share) * part / FI_MLA_TILE_KV if part > 0 else 0.0)
            rem -= n
    cost, c = max(heap)
    return items[c], toks[c], stages[c], units[c], first[c]


def fi_mla_plan(B, q, T, H, sms: int):
    """MLAPlan (scheduler.cuh @ FI_COMMIT) for B requests of q rows and T cached tokens each (module docstring):
    cluster size, clusters, kv_len_limit, pieces per (request, row tile), and the busiest cluster's work items and
    64-token stages (the least-loaded greedy replayed for every shape at once: mla_greedy.decode_busiest), the split flag and the merge phase's serial
    row iterations and dependent loads."""
    B, q, T, H = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in (B, q, T, H)))
    cluster = np.where(q * H > FI_MLA_TILE_Q, 2.0, 1.0)          # avg_packed_qo_len > 64 -> two CTAs per cluster
    clusters = np.floor(sms / cluster)
    tile_rows = FI_MLA_TILE_Q * cluster
    tiles_q = ceil_div(q * H, tile_rows)
    limit = mla_kv_limit(np.maximum(ceil_div(B * tiles_q * T, clusters), 1.0))
    per_tile = np.maximum(ceil_div(T, limit), 1.0)                # pieces of one (request, q tile)
    pieces = B * tiles_q * per_tile
    items, _, stages, units, first = decode_busiest(B * tiles_q, limit, T, clusters, tile_rows,
                                                    FI_MLA_PARTIAL_STAGE_SHARE)
    split = T > limit
    rows = np.minimum(q * H, tile_rows)
    chunks = np.maximum(np.floor(T * cluster / limit), 1.0)      # merge CTAs per split tile (num_qo_chunks)
    merge_rows = ceil_div(rows, chunks)
    # merge phase (FI_MLA_MERGE_*): ceil(rows / 4) serial row iterations, each a chain of `per_tile` dependent loads of
    # the partial states + FI_MLA_MERGE_ROW_LINKS; 0 when nothing is split
    merge_iters = np.where(split, ceil_div(merge_rows, FI_MLA_MERGE_ROWS_PER_ITER), 0.0)
    merge_loads = merge_iters * (per_tile + FI_MLA_MERGE_ROW_LINKS)
    return {"cluster": cluster, "clusters": clusters, "tiles_q": tiles_q, "kv_len_limit": limit, "per_tile": per_tile,
            "pieces": pieces, "items": items, "stages": stages, "stage_units": units, "first_tokens": first, "split": split, "merge_rows": merge_rows,
            "merge_iters": merge_iters, "merge_loads": merge_loads}


def _fi_mla_launch(pl, q, H, lat, kvb, flops, read, written, sms: int, reread=0.0, working_set=0.0):
    """The one cooperative launch of an MLA wrapper call from its plan `pl` (fi_mla_plan or fi_mla_causal_plan): the
    busiest cluster's items as waves of one-item CTAs (fi_mla's docstring), each wave's stage chain, prologue loads,
    first-stage fill and its share of the merge phase's loads; (launch, waves)."""
    split = pl["split"]
    waves = np.maximum(pl["items"], 1.0)
    iters = pl["stage_units"] / waves          # the busiest cluster's chain, per wave (FI_MLA_PARTIAL_STAGE_SHARE)
    # + once: the grid barrier and the merge offsets, and the merge's chain of partial-state loads (FI_MLA_MERGE_LOAD_SHARE)
    merge = np.where(split, 2.0, 1.0) + pl["merge_loads"] * FI_MLA_MERGE_LOAD_SHARE
    loads = FI_PROLOGUE_LOADS + fi_mla_o_loads(q, H, split) + merge / waves
    # + per item: its first stage's fill, the valid tokens of that stage at one SM's share (FI_MLA_FILL_RATE_SM)
    loads = loads + fi_mla_fill_loads(pl["first_tokens"] / waves, lat, kvb)
    active = pl["pieces"] * pl["cluster"]                           # CTAs with an item in the first round
    ctas = np.clip(active, (waves - 1.0) * sms + 1.0, waves * sms)   # -> ceil(ctas / SMs) = the busiest's items
    # the last round's share of the items prices the tail round (hwmodels/roofline.py TAIL_ROUND_KINDS) only where the
    # items carry equal bytes: unsplit calls, whose items are whole requests of T tokens; a split call's pieces differ
    # (kv_len_limit pieces and a remainder), so its CTAs count as whole rounds there (no tail round: max(body, chain))
    if FI_MLA_TAIL_UNSPLIT_ONLY:
        ctas = np.where(split, waves * sms, ctas)
    return Launch("attention", "attn_fi_mla", ctas, 1.0, iters, loads, flops, read, written, reread_bytes=reread,
                  working_set=working_set), waves


def fi_mla(B, q, T, H, d_ckv, d_kpe, kvb, page, sms: int):
    """Launches of one BatchMLAPagedAttentionWrapper call (sm_90, decode / verification, module docstring): ONE
    cooperative launch (mla_hopper.cuh BatchMLAPageAttentionHopper: cudaLaunchCooperativeKernel, grid
    (cluster size, SMs / cluster size), 256 threads) whose CTAs walk their work items and then, after grid.sync(),
    merge the split pieces themselves (DevicePersistentMergeStates): no second kernel.

    The busiest cluster's k work items are priced as k waves of one-item CTAs on one slot per SM (the same chain:
    each item's 3 prologue loads, its 64-token stages, its epilogue: write_o through shared memory, the kind's
    cta_fixed per wave, and the output tile's store at FI_MLA_O_RATE_SM, fi_mla_o_loads). The epilogue of every item
    but the last is on that CTA's own serial path while the other SMs stream (hwmodels/roofline.py CTA_FIXED_HIDDEN:
    the producer warp group issues the next item's loads only after write_o and __syncthreads), and the stages' GEMMs
    are issued and waited for by the lone CTA (warpgroup_wait<0>), so their time is in the per-stage chain and the body
    is the bytes alone (CHAIN_TENSOR). Checked by the third MLA blind grid (lab/kernels/measure_production_attention.py
    --grid mla_blind3, priced before measuring): |error| median 7.6 -> 5.1 %, p90 20.0 -> 13.4 % against the rules
    before (an additive per-item epilogue and a compute term). The merge phase adds, once, the grid barrier and the merge offsets (dependent loads) and the
    busiest merge CTA's chain of partial-state loads (fi_mla_plan merge_loads = ceil(merge rows / 4) x pieces), each
    link an L2 hit plus st.merge's arithmetic (FI_MLA_MERGE_LOAD_SHARE = 0.60 of a dependent load, scanned on the fit
    rows). Alternatives tried on the fit rows (middle regime; rms log error after the refit): this rule 0.048; a link
    at the bare L2 latency (share 0.41) 0.065; a row iteration of up to 8 pieces priced as one
    64-token stage (the earlier rule) 0.049 but +48..98 % on the 2-piece 128-head shapes of the fresh grid (8-11 row
    iterations); 8 loads in flight per row (the unroll by 8) 0.133; a DRAM latency per load 0.082."""
    B, q, T, H = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in (B, q, T, H)))
    pl = fi_mla_plan(B, q, T, H, sms)
    lat = d_ckv + d_kpe
    flops = 2.0 * B * q * H * T * (lat + d_ckv)
    kv = B * T * lat * kvb * pl["tiles_q"]   # the two CTAs of a cluster share each stage's lines (second from L2)
    rows = B * q * H
    split = pl["split"]
    # a split piece writes its rows' partial output in the output dtype (bf16) + an fp32 log-sum-exp
    # (partial_o is DTypeO*, MLAPlan sizes it with sizeof_dtype_o = 2); an unsplit one writes the final output
    part_w = rows * pl["per_tile"] * (d_ckv * 2.0 + 4.0)
    final = rows * d_ckv * 2.0
    written = np.where(split, part_w + final, final)
    read = kv + rows * lat * 2.0 + np.where(split, part_w, 0.0)
    qb = rows * lat * 2.0 if FI_MLA_Q_L2 else 0.0     # Q as an L2 re-read (FI_MLA_Q_L2)
    ln, waves = _fi_mla_launch(pl, q, H, lat, kvb, flops, read, written, sms, reread=qb, working_set=qb)
    return [ln], {**pl, "ctas": np.full(B.shape, float(sms)), "waves": waves}


def mla_causal_tile_lens(P: int, T: int, H: int, tile_rows: int) -> list[int]:
    """The KV tokens each (request, cluster q tile) of a causal MLA call reaches, in MLAPlan's order (scheduler.cuh
    @ FI_COMMIT: tiles from the last to the first; packed_causal_kv_end with group_size = num_heads, the packed rows
    being (query, head) pairs, heads innermost): the last tile reaches all T; tile t < last the prefix T - P plus the
    queries its rows cover, ceil((t + 1) x tile_rows / H), at most T. The kernel bounds each item's stages the same
    way (mla_hopper.cuh: kv_tile_idx from min(kv_end, kv_len - q_len + (packed_qo_start + cluster_tile_q) / heads)).
    One shape, as the source loops: the reference the vectorized plan (_causal_plan_block) is tested against, with
    _mla_assign for the greedy."""
    n = -(-P * H // tile_rows)
    return [T if t == n - 1 else max(min(T - P + -(-(t + 1) * tile_rows // H), T), 0) for t in range(n - 1, -1, -1)]


def fi_mla_causal_plan(B, P, T, H, sms: int):
    """MLAPlan (scheduler.cuh @ FI_COMMIT) planned causal, for B requests of P new query rows after T - P cached tokens
    each: SGLang's extend over a cached prefix (flashinfer_mla_backend.py, the paged branch of forward_extend). The
    decode plan (fi_mla_plan) with each cluster q tile's KV bounded by its diagonal (mla_causal_tile_lens): the
    kv_len_limit from the tiles' total bounded KV over the clusters, the same least-loaded greedy over the tiles'
    pieces (replayed for every shape at once: mla_greedy.busiest), a merge CTA per chunk of every split tile (<= SMs:
    the plan checks it), the busiest merge CTA priced (ceil(ceil(tile rows / chunks) / 4) row iterations x (the tile's
    pieces + FI_MLA_MERGE_ROW_LINKS) loads, chunks = max(floor(tokens x cluster / limit), 1)). Returns fi_mla_plan's
    keys, with `tokens` the KV tokens the items read in all (each tile re-reads the prefix)."""
    B, P, T, H = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in (B, P, T, H)))
    cluster = np.where(P * H > FI_MLA_TILE_Q, 2.0, 1.0)
    clusters = np.floor(sms / cluster)
    tile_rows = FI_MLA_TILE_Q * cluster
    keys = ("kv_len_limit", "pieces", "items", "stages", "stage_units", "first_tokens", "split", "merge_iters",
            "merge_loads", "tokens")
    uniq, inv = np.unique(np.stack([x.ravel() for x in (B, P, T, H, clusters, tile_rows)], axis=1), axis=0,
                          return_inverse=True)
    vals = _causal_plan_rows(*uniq.T)
    out = {k: v[inv.ravel()].reshape(B.shape) for k, v in zip(keys, vals)}
    out["split"] = out["split"] > 0
    return {"cluster": cluster, "clusters": clusters, "tiles_q": ceil_div(P * H, tile_rows), **out}


def _causal_plan_rows(B, P, T, H, clusters, tile_rows):
    """fi_mla_causal_plan's keys for distinct shapes (1-D arrays), in blocks of at most mla_greedy.BLOCK_SLOTS tiles."""
    n = ceil_div(P * H, tile_rows).astype(np.int64)                  # cluster q tiles a request
    order = np.argsort(B * n, kind="stable")
    res = np.zeros((10, B.size))
    start = 0
    while start < B.size:
        rows = [order[start]]
        while start + len(rows) < B.size:
            nxt = order[start + len(rows)]
            if (len(rows) + 1) * (B[nxt] * n[nxt] + clusters[nxt]) > BLOCK_SLOTS:   # pieces < tiles + clusters
                break
            rows.append(nxt)
        rows = np.asarray(rows)
        res[:, rows] = _causal_plan_block(B[rows], P[rows], T[rows], H[rows], clusters[rows], tile_rows[rows], n[rows])
        start += len(rows)
    return res


def _causal_plan_block(B, P, T, H, clusters, tile_rows, n):
    """_causal_plan_rows for one block of shapes."""
    S, R = B.size, tile_rows.astype(np.int64)
    nmax = int(n.max())
    j = np.arange(nmax)[None, :]                                     # plan order: the last tile first
    valid = j < n[:, None]
    t = n[:, None] - 1 - j
    bound = (T - P)[:, None] + -(-((t + 1) * R[:, None]) // H.astype(np.int64)[:, None])
    lens = np.where(j == 0, T[:, None], np.clip(bound, 0.0, T[:, None]))
    lens = np.where(valid, lens, 0.0)
    total = B * lens.sum(axis=1)
    limit = mla_kv_limit(np.maximum(ceil_div(total, clusters), 1.0))
    per = np.where(valid, np.maximum(np.ceil(lens / limit[:, None]), 1.0), 0.0)    # pieces a tile
    one = per.sum(axis=1).astype(np.int64)                           # pieces a request
    # merge: the busiest merge CTA over the split tiles (the first in plan order among equals)
    split_t = valid & (lens > limit[:, None])
    chunks = np.maximum(np.floor(lens * (tile_rows / FI_MLA_TILE_Q)[:, None] / limit[:, None]), 1.0)
    rows_t = np.minimum(tile_rows[:, None], P[:, None] * H[:, None] - t * tile_rows[:, None])
    iters = ceil_div(ceil_div(rows_t, chunks), FI_MLA_MERGE_ROWS_PER_ITER)
    loads = np.where(split_t, iters * (per + FI_MLA_MERGE_ROW_LINKS), 0.0)
    at = np.argmax(loads, axis=1)
    m_loads = loads[np.arange(S), at]
    m_iters = np.where(m_loads > 0, iters[np.arange(S), at], 0.0)
    # one request's pieces in plan order (each tile: limit, ..., the remainder; a tile of 0 tokens one piece of 0)
    flat = np.flatnonzero(valid.ravel())
    rep = np.repeat(flat, per.ravel()[flat].astype(np.int64))
    first = np.r_[0, np.cumsum(per.ravel()[flat].astype(np.int64))[:-1]]
    k = np.arange(rep.size) - np.repeat(first, per.ravel()[flat].astype(np.int64))
    row = rep // nmax
    size = np.minimum(limit[row], lens.ravel()[rep] - k * limit[row])
    col = np.arange(rep.size) - np.repeat(np.r_[0, np.cumsum(one)[:-1]], one)
    pieces1 = np.zeros((S, int(one.max())))
    pieces1[row, col] = size
    counts = (B * one).astype(np.int64)                              # B identical requests, one after another
    jj = np.arange(int(counts.max()))[None, :]
    sizes = pieces1[np.arange(S)[:, None], jj % one[:, None]]
    items, _, stages, units, first_tok = busiest(sizes, counts, clusters, tile_rows, FI_MLA_PARTIAL_STAGE_SHARE)
    return np.stack([limit, counts, items, stages, units, first_tok, split_t.any(axis=1), m_iters, m_loads, total])


#: the extend's K/V beyond its unique bytes (every cluster q tile of a request walks the prefix again:
#: fi_mla_causal_plan tokens) as L2 re-reads of the batch's latent (the roofline's hit = min(1, L2 / working set)).
#: ASSUMPTION: the tiles of a request run at about the same time (MLAPlan deals them one after another to the least
#: loaded clusters), so the whole batch's latent is the working set. False = every tile's K/V from DRAM
FI_MLA_EXTEND_L2_REREAD = True
#: (sensitivity on extend grids 1-2: False moves two of the 18 rows by 0.1-0.3 points; the stages' chain, not the bytes,
#: sets these calls' time)
#: an extend's 64-token stage as a share of the stage time the kind's decode fit sets (iter[attn_fi_mla], fitted on
#: decode rows whose stages stream their K/V from DRAM; an extend's cluster q tiles re-read the request's prefix, so
#: their stages are fed mostly from L2). FITTED on the 18 rows of extend grids 1 and 2 (1 x H200, the rows the
#: absorbed generic op was built and judged on: LOOKED-AT for this model; lab/kernels/measure_fi_mla_fp8cast.py,
#: hwmodels/calibration/data/production_kernels/fi_mla_extend*_h200_*.csv), one constant, the minimum of a scan in steps
#: of 0.005 (rms log error over the 18 rows: 0.1886 at 1.0 (the source's structure with the decode terms alone: 21.1 /
#: 24.0 % median |error| on the bf16 / fp8 rows, every row too slow), 0.1007 at 0.9, 0.0406 at 0.83, 0.0301 at 0.805,
#: 0.0303 at 0.80, 0.0393 at 0.78, 0.0656 at 0.75). Judged on extend grid 3 (blind: new shapes priced before their call)
FI_MLA_EXTEND_STAGE_SHARE = 0.805


def fi_mla_extend(B, P, T, H, d_ckv, d_kpe, kvb, page, sms: int):
    """Launches of one BatchMLAPagedAttentionWrapper call planned causal (sm_90): B requests of P new rows after T - P
    cached tokens, the absorbed MLA over the latent (d_ckv + d_kpe a key, d_ckv a value) as SGLang's flashinfer_mla
    backend runs an extend over a cached prefix. The same kernel and the same terms as the decode call (fi_mla; the
    per-stage chain, the per-item prologue, fill and epilogue, the in-kernel merge: all fitted at decode rows), on the
    causal plan (fi_mla_causal_plan): a stage is the same 64-row x 64-token tile whatever rows are valid, so the kind's
    iteration transfers; the diagonal stages' mask (logits_mask_) is not priced apart. Work = the executed tiles'
    pairs (each item's stages x 64 tokens x its 64-row tile at 2 x 1088 flops a pair); bytes = the latent once from
    DRAM, the tiles' re-reads of it from L2 (FI_MLA_EXTEND_L2_REREAD), Q and O, the split pieces' partial states."""
    B, P, T, H = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in (B, P, T, H)))
    pl = fi_mla_causal_plan(B, P, T, H, sms)
    lat = d_ckv + d_kpe
    rows = B * P * H
    flops = 2.0 * rows * (T - P + (P + 1.0) / 2.0) * (lat + d_ckv)      # the causal pairs' work
    once = B * T * lat * kvb
    walked = pl["tokens"] * lat * kvb
    split = pl["split"]
    part_w = np.where(split, pl["pieces"] * FI_MLA_TILE_Q * pl["cluster"] * (d_ckv * 2.0 + 4.0), 0.0)
    written = rows * d_ckv * 2.0 + part_w
    if FI_MLA_EXTEND_L2_REREAD:
        read, reread, ws = walked + rows * lat * 2.0 + part_w, walked - once, once
    else:
        read, reread, ws = walked + rows * lat * 2.0 + part_w, 0.0, 0.0
    pl = {**pl, "stage_units": pl["stage_units"] * FI_MLA_EXTEND_STAGE_SHARE}
    ln, waves = _fi_mla_launch(pl, P, H, lat, kvb, flops, read, written, sms, reread=reread, working_set=ws)
    return [ln], {**pl, "ctas": np.full(B.shape, float(sms)), "waves": waves}
