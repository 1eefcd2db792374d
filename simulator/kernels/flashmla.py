"""FlashMLA's sm_90 dense MLA decode as it launches it (deepseek-ai/FlashMLA, commit
9241ae3ef9bac614dd25e45e507e089f888280e0; csrc/api/dense_decode.h, csrc/smxx/decode/get_decoding_sched_meta/
get_decoding_sched_meta.cu, csrc/sm90/decode/dense/splitkv_mla.cuh, csrc/sm90/decode/dense/config.h,
csrc/smxx/decode/combine/combine.cu).

    num_sm_parts = max(SMs / Hk / ceil(q x Hq / Hk / 64), 1) persistent CTAs per 64-row head block (Hk = 1);
    grid (ceil(q Hq / 64), 1, num_sm_parts). The scheduler (get_mla_metadata_kernel) counts every request as
    ceil(T / 64) + 5 blocks (block_size_n = PAGE_BLOCK_SIZE = 64; fixed_overhead_num_blocks = 5: the scheduler's own
    estimate of a request's per-sequence work, used ONLY to balance the parts), payload = ceil(total / parts) + 5,
    and deals the requests to the parts in order: a part takes a whole request while its remaining payload covers the
    request's remaining blocks + 5, else the first (payload - 5) blocks of it (a split) and stops.
    The kernel (flash_fwd_splitkv_mla_kernel) then walks each part's requests one after another; per request:
    seqlens_k[b] -> the block table entry -> the first K/V block's TMA load (3 dependent loads), its blocks, and the
    epilogue: the row sums reduced through shared memory, the output stored by TMA and waited for
    (store_o ... tma_store_wait<0>, then __syncthreads before the next request), while the next request's Q is
    already prefetched (launch_q_copy(batch_idx + 1)). A request kept inside one part is written directly (no partials);
    a split one writes fp32 partials merged by the combine kernel, which every call launches: grid (B x q, 1,
    ceil(Hq / 8)), 256 threads; the CTAs of an unsplit request exit after reading num_splits.
Modelled: the scheduler replayed (flashmla_schedule) for uniform requests; the busiest part (largest scheduler cost)
walking R requests and N K/V blocks is priced as R waves of one-request CTAs on one slot per SM: per wave the 3
prologue loads, N / R blocks of the chain and the kind's per-wave CTA time (the epilogue); per request also the output
store's wait, per request after the first the next request's exposed Q tile (one round trip + its bytes at
FM_Q_RATE_SM, q_tile_loads), and per request with a partial last block the zero-fill of its out-of-bound V rows
(FM_OOB_TOKEN_S). The combine kernel runs under the MLA kernel's tail as far as PDL lets it (FM_COMBINE_PDL). The
tensor work is the MMAs' padded work: 64-row head blocks x whole 64-token blocks (FM_MMA_PADDED).
"""
from __future__ import annotations

import functools

import numpy as np

from simulator.kernels.production import Launch, ceil_div, combine_io

FLASHMLA_COMMIT = "9241ae3ef9bac614dd25e45e507e089f888280e0"
BLOCK_N, FIXED_OVERHEAD_BLOCKS, BLOCK_M = 64.0, 5.0, 64.0
#: heads per CTA of the combine kernel (combine.cu: BLOCK_SIZE_M = 8, NUM_THREADS = 256)
COMBINE_HEADS = 8.0
PROLOGUE_LOADS = 3.0
#: per request, the epilogue's TMA store of the output is waited for (store_o ... cute::tma_store_wait<0>) before the
#: next request starts: one more round trip
STORE_WAITS = 1.0
#: per request after a part's first, the next request's Q tile (launch_q_copy(batch_idx + 1): one TMA load of the CTA's
#: head block, min(q x Hq, 64) rows x 576 bf16, 73.7 KB at 128 heads, 18.4 KB at 16) is issued only after the current
#: request's last K/V block and waited for (barrier_Q wait) before the next request's first QK^T: exposed per request as
#: one more round trip (Q_WAITS) plus the tile's bytes at one SM's share of the load stream, FM_Q_RATE_SM bytes/s (the
#: first request's Q is issued in the prologue beside its first K/V block: not charged). The rate is FITTED by a scan
#: on the fit rows (simulator/calibration/fit_production_attention.py `rate_scan`: the campaign's middle rows + the
#: mla_fit2 rows, 4-15 requests per part; the kind's other terms refitted at each rate; rms log error 0.0396 at 25 GB/s,
#: 0.0392 at 35 and 42.5, 0.0393 at 50, 0.0397 at 80, 0.0409 without the bytes): flat between 35 and 50, 42.5 GB/s kept
#: (5.6 TB/s over 132 SMs: about twice an SM's share of the HBM stream; at 128 heads half the K/V reads of a part are
#: L2 hits). The blind grid was priced with the same 42.5 GB/s as a prior (from the 2.1 / 0.8 us per request missing
#: at 128 / 16 heads on the earlier rows, looked-at) but charged for every request including the first; charging
#: requests 2..R only was decided after the blind grid and the campaign's short rows had been seen (looked-at)
Q_WAITS = 1.0
FM_Q_RATE_SM = 42.5e9
#: the unit the exposed tile time is expressed in: one dependent load (sync_us of the kind, which the fit sets to the
#: device's MEASURED DRAM latency, hwmodels/calibration/fitted/H100-SXM.yaml latency.dram_us = 0.3494 us); on a device
#: whose sync_us differs the tile time scales with it (ASSUMPTION: the rate is an H100 measurement)
LOAD_S = 0.3494e-6
#: the call's Q as an L2 re-read beside the head blocks' K/V re-reads (working set: Q + the blocks in flight): in an engine
#: the absorbed-Q GEMM writes it just before this call, and the measuring harness reads the same Q every graph replay.
#: False = Q from DRAM (the rule shipped); True = the alternative `q_l2` priced on the fourth MLA blind grid
FM_Q_L2 = False
#: the combine kernel is launched with programmatic dependent launch (cudaLaunchKernelEx with
#: cudaLaunchAttributeProgrammaticStreamSerialization, combine.cu @ 9241ae3; the MLA kernel's CTAs call
#: cudaTriggerProgrammaticLaunchCompletion after their last request's compute, before its output store,
#: splitkv_mla.cuh), and the captured graph keeps the programmatic edge (MEASURED for FlashInfer's chains on this
#: device: lab/kernels/probe_fi_pdl.py). Its CTAs read num_splits (one load) and, for a request that is not split, exit
#: BEFORE cudaGridDependencySynchronize: so that load is hidden under the MLA kernel's tail (hidden_loads 1, idle CTAs'
#: loads free), and a call with no split request runs its whole combine launch there (no launch priced). False = the
#: rule before (a full launch on every call). Chosen after the small-batch short rows (one request per part: 10-31 %
#: too slow at T 56-64, campaign, fresh, fifth blind grid) had been seen (LOOKED-AT); the fit rows (split calls) give
#: the same rms log error (0.0392). BLIND test with FM_OOB_TOKEN_S, the sixth MLA blind grid (mla_blind6: batch 1-28 x
#: context 36-448 + 2 controls, 48 shapes, priced before measuring): 3.9 / 10.0 % median / p90 against 4.6 / 13.6 % for
#: main at cbe4f0b (short small batch p90 17.3 -> 7.3 %; short B 20 / 28 5.7 -> 7.2 % median)
FM_COMBINE_PDL = True
#: a request's last 64-token block, when partial, has its V rows past the valid tokens zeroed in shared memory before its
#: PV GEMM (fill_oob_V, splitkv_mla.cuh @ 9241ae3: per warpgroup half, a strided loop of one 8-byte st.shared per
#: thread and iteration, (64 - valid) / 2 iterations; then fence_view_async_shared), on the part's serial path.
#: ASSUMPTION: 35 SM cycles per iteration (about 8 dependent integer instructions, the swizzled address, the store and
#: the loop test, at ~4 cycles each) at the 1.98 GHz maximum SM clock: 8.8 ns per out-of-bound token. The fit rows'
#: contexts are whole blocks (no such fill), so nothing fits it; the campaign's B 1-16 T 16 rows are 0.7-0.8 us slower
#: than T 64 (LOOKED-AT, 15 ns per token; priced beside it on the sixth MLA blind grid as `oob15`: 3.6 / 9.7 % against
#: 3.9 / 10.0 % at 8.8 ns, not taken since that choice would follow the measurement). 0 = the rule before
FM_OOB_TOKEN_S = 8.8e-9

#: the tensor work the kernel issues: every QK^T / PV wgmma runs on the CTA's whole 64-row head block
#: (BLOCK_SIZE_M = 64, csrc/sm90/decode/dense/config.h @ 9241ae3; the grid's m blocks are ceil(q x Hq / 64), so at
#: q x Hq = 16 / 32 heads the rows past q x Hq are padding the MMA still computes) and over the K/V block's whole
#: 64 tokens (PAGE_BLOCK_SIZE = 64; a partial last block is masked in the softmax, not skipped): flops =
#: 2 x B x m blocks x 64 x ceil(T / 64) x 64 x (576 + 512). False = the useful work only (2 x B x q x Hq x T x 1088),
#: the rule before. True = `padded`, SHIPPED: priced on the seventh MLA blind grid (mla_blind7, committed before
#: measuring; measured 2026-11-27 on the H100: padded 5.6 / 13.5 %, 4 of 4 regimes; main's 5.7 / 17.1 %, 3 of 4). Chosen after the one-request-per-part rows of the earlier grids had
#: been seen (LOOKED-AT): at 8 / 16 / 32 heads they are 6-29 % too fast (worst at batch 32-64 with 2-4 blocks per
#: request), at 64 / 128 heads within a few %, the pattern the padding predicts (1.19 us of MMA per block and SM at the
#: dense peak whatever the heads); with it (refitted) their 16-head signed median -9.1 -> -1.9 % but |error| median only
#: 9.1 -> 7.3 % (batch 1-8 then 3-19 % too slow), the 64 / 128-head ones -1..-3 -> +5 %, and the fit rows' rms log
#: error 0.0392 -> 0.0438; shipped on the blind result
FM_MMA_PADDED = True


def q_tile_loads(q, H, rate=None):
    """The exposed per-request Q tile load in dependent-load units (Q_WAITS, FM_Q_RATE_SM): the round trip plus
    min(q x Hq, 64) rows x 576 x 2 bytes / rate / LOAD_S."""
    rows = np.minimum(np.asarray(q, dtype=np.float64) * np.asarray(H, dtype=np.float64), BLOCK_M)
    return Q_WAITS + rows * 576.0 * 2.0 / (rate or FM_Q_RATE_SM) / LOAD_S


@functools.lru_cache(maxsize=4096)
def flashmla_schedule(B: int, blocks: int, parts: int):
    """get_mla_metadata_kernel for B requests of `blocks` 64-token blocks each (module docstring): (requests and K/V
    blocks of the busiest part by the scheduler's cost, parts used, the largest number of parts one request spans,
    the requests split over several parts, their pieces in all)."""
    fo = int(FIXED_OVERHEAD_BLOCKS)
    payload = -(-(B * (blocks + fo)) // parts) + fo
    req, now_block = 0, 0
    best = (-1, 0, 0)           # (cost, requests, blocks)
    used = 0
    span = [0] * B
    for _ in range(parts):
        if req >= B:
            break
        used += 1
        remain, nreq, nblk = payload, 0, 0
        while req < B:
            left = blocks - now_block
            if remain >= left + fo:          # the rest of this request fits: take it whole
                span[req] += 1
                nreq += 1
                nblk += left
                remain -= left + fo
                req += 1
                now_block = 0
            else:                            # take (remaining payload - 5) blocks of it, if any, and stop
                if remain - fo > 0:
                    span[req] += 1
                    now_block += remain - fo
                    nblk += remain - fo
                    nreq += 1
                break
        cost = nblk + fo * nreq
        if (cost, nreq) > best[:2]:
            best = (cost, nreq, nblk)
    split = [n for n in span if n > 1]
    return best[1], best[2], used, max(span), len(split), sum(split)


#: an fp8 cache's call (vLLM's FLASHMLA backend with kv_cache_dtype fp8: vllm-project/FlashMLA @ 46d64a8
#: csrc/extension/sm90/dense_fp8, deepseek-ai/FlashMLA PR #54's kernel) merges its splits in its own combine kernel,
#: flash_fwd_splitkv_mla_combine_kernel (flash_fwd_mla_kernel.h 591-700): a 128-thread CTA per (request, query row,
#: head), grid b x h_k x q_seq_per_hk; a CTA of an unsplit request exits after reading num_splits; a split one loads its
#: splits' LSEs (one warp), then walks its splits one 2 KB fp32 partial row at a time. True = that kernel
#: (FM_FP8_COMBINE_SPLIT_ITERS a split), its split kernel's MMA work at FM_FP8_MMA_SCALE; False = the bf16 build's kernels
#: at fp8 bytes for every call (the first look: 10.7 / 26.0 %, 0 of 2 regimes on the FlashMLA dense fp8 grid 1, one
#: request over 128 splits +83 %). SHIPPED after the FlashMLA dense fp8 grid 2 (11 new fp8 calls, 1 x H200, prices
#: committed 46762e3 before the call): 3.2 / 5.6 %, 2 of 2 regimes, against 10.2 / 16.7 %, 0 of 2
FM_FP8_DENSE_COMBINE = True
#: the fp8 combine's time a split on its CTA's chain, in iterations of the combine kind (iter_us[attn_combine_flashmla]:
#: the bf16 combine's four-split step). FITTED on the FlashMLA dense spans scan's fp8 calls (simulator/calibration/
#: flashmla_dense_h200.py fit_fp8_terms over its 7 fp8 calls and the first grid's 10, LOOKED-AT): 0.0821 (~0.071 us a
#: split), rms log error 0.051 with FM_FP8_MMA_SCALE
FM_FP8_COMBINE_SPLIT_ITERS = 0.0821
#: the fp8 split kernel's MMA work over the bf16 kernel's terms (its V transposed in shared memory for the fp8 PV MMA:
#: fp8_transpose_v.h); 1 = the bf16 kernel's. FITTED with FM_FP8_COMBINE_SPLIT_ITERS: 1.2172. Applies where
#: FM_FP8_DENSE_COMBINE is on (the fp8 candidate); off, an fp8 call is the bf16 kernel at fp8 bytes
FM_FP8_MMA_SCALE = 1.2172
#: the fp8 combine's CTAs a SM holds: 16 (128 threads, 42 registers, 640 B shared memory: the profiler's launch records of
#: the FlashMLA dense spans scan, lab/kernels/measure_flashmla_dense.py; 2048 threads an SM)
FM_FP8_COMBINE_RESIDENT = 16.0


def flashmla(B, q, T, H, d_ckv, d_kpe, kvb, sms: int):
    """Launches of one flash_mla_with_kvcache call (module docstring)."""
    B, q, T, H = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in (B, q, T, H)))
    mblocks = ceil_div(q * H, BLOCK_M)
    parts = np.maximum(np.floor(sms / mblocks), 1.0)
    blocks = np.maximum(ceil_div(T, BLOCK_N), 1.0)
    reqs, nblk, used, S, nsplit, pieces = (np.empty(B.shape) for _ in range(6))
    for i in np.ndindex(B.shape):
        reqs[i], nblk[i], used[i], S[i], nsplit[i], pieces[i] = flashmla_schedule(int(B[i]), int(blocks[i]),
                                                                                  int(parts[i]))
    lat = d_ckv + d_kpe
    if FM_MMA_PADDED:   # the MMAs' real work: 64-row head blocks x whole 64-token blocks (FM_MMA_PADDED)
        flops = 2.0 * B * mblocks * BLOCK_M * blocks * BLOCK_N * (lat + d_ckv)
    else:
        flops = 2.0 * B * q * H * T * (lat + d_ckv)
    # the K/V of a block is one TMA tile of PAGE_BLOCK_SIZE = 64 tokens x 576 (launch_kv_tiles_copy_tma): a request's
    # last block is loaded whole however few of its tokens are valid (masked in the softmax)
    kv = B * blocks * BLOCK_N * lat * kvb * mblocks
    # a request kept in one part writes its output directly; a split one writes fp32 partials for the combine kernel
    split = S > 1
    written = (B - nsplit) * q * H * d_ckv * 2.0 + pieces * q * H * (d_ckv + 1.0) * 4.0
    # the head blocks of one part walk the same K/V blocks side by side: every block after the first is an L2 hit
    # (working set: the blocks in flight, 2 x 64 tokens per CTA)
    reread = kv * (mblocks - 1.0) / mblocks
    # the busiest part's chain in the scheduler's own units: its K/V blocks + 5 per request it walks
    # (fixed_overhead_num_blocks); and per request its dependent round trips: the 3 prologue loads and the output
    # store it waits for (tma_store_wait<0>) before the next request
    iters = nblk + FIXED_OVERHEAD_BLOCKS * reqs
    # + per request after a part's first: the next request's exposed Q tile (the first request's Q is issued in the
    # kernel's prologue beside its first K/V block, so only requests 2..R wait for a Q issued after a last block)
    loads = ((PROLOGUE_LOADS + STORE_WAITS) * np.maximum(reqs, 1.0)
             + q_tile_loads(q, H) * np.maximum(reqs - 1.0, 0.0))
    # + per request whose last 64-token block is partial: fill_oob_V's zero-fill of that block's V rows past the valid
    # tokens in shared memory, in dependent-load units (FM_OOB_TOKEN_S per out-of-bound token)
    oob = np.mod(BLOCK_N - np.mod(T, BLOCK_N), BLOCK_N)
    loads = loads + np.maximum(reqs, 1.0) * oob * FM_OOB_TOKEN_S / LOAD_S
    qb = B * q * H * lat * 2.0
    ws = np.where(mblocks > 1, mblocks * used * 2.0 * BLOCK_N * lat * kvb, 0.0)
    if FM_Q_L2:   # Q as an L2 re-read too (FM_Q_L2)
        reread, ws = reread + qb, ws + qb
    fp8 = np.asarray(kvb, dtype=np.float64) <= 1.0
    k1 = Launch("attention", "attn_flashmla", mblocks * used, 1.0, iters, loads,
                flops * np.where(fp8 & FM_FP8_DENSE_COMBINE, FM_FP8_MMA_SCALE, 1.0), kv + qb, written,
                idle=mblocks * (parts - used),
                reread_bytes=reread, working_set=ws)
    # the combine kernel (combine.cu run_flash_mla_combine_kernel), launched on every call: grid (B x q, 1,
    # ceil(Hq / 8)) of 256 threads (8 heads per CTA, one warp each); a CTA whose request is not split exits after
    # loading num_splits (idle); a split request's CTAs load its partial outputs and log-sum-exps and merge them
    act = nsplit * q * ceil_div(H, COMBINE_HEADS)
    rows = nsplit * q * H
    Sm = np.maximum(pieces / np.maximum(nsplit, 1.0), 1.0)
    rd, wr = combine_io(rows, Sm, d_ckv)
    k2 = Launch("attention_combine", "attn_combine_flashmla", act, 8.0, np.where(split, ceil_div(S, 4.0), 0.0),
                np.where(split, 2.0, 0.0), 3.0 * rows * d_ckv * Sm, rd, wr, dtype="fp32",
                idle=B * q * ceil_div(H, COMBINE_HEADS) - act,
                hidden_loads=1.0 if FM_COMBINE_PDL else 0.0, idle_share=0.0 if FM_COMBINE_PDL else 1.0,
                where=split if FM_COMBINE_PDL else None)
    if FM_FP8_DENSE_COMBINE and np.any(fp8):   # the fp8 extension's own combine (FM_FP8_DENSE_COMBINE)
        k2.where = (split if FM_COMBINE_PDL else np.ones(B.shape, dtype=bool)) & ~fp8
        # a CTA per split request's (row, head): its LSEs (one dependent load after num_splits), then its splits
        k3 = Launch("attention_combine", "attn_combine_flashmla", rows, 1.0, Sm * FM_FP8_COMBINE_SPLIT_ITERS, 2.0,
                    3.0 * rows * d_ckv * Sm, rd, wr, dtype="fp32", idle=B * q * H - rows, where=split & fp8,
                    resident=FM_FP8_COMBINE_RESIDENT)
        return [k1, k2, k3], {"parts": parts, "used_parts": used, "requests_per_part": reqs, "blocks_per_part": nblk,
                              "splits": S, "split_requests": nsplit}
    return [k1, k2], {"parts": parts, "used_parts": used, "requests_per_part": reqs, "blocks_per_part": nblk,
                      "splits": S, "split_requests": nsplit}
