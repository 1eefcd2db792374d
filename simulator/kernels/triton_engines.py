"""The engines' Triton decode kernels as they launch them.

triton_sgl  SGLang's grouped decode kernel (sglang 0.5.6, python/sglang/srt/layers/attention/triton_ops/
  decode_attention.py `_decode_grouped_att_m_fwd` / `_fwd_grouped_kernel_stage1`, and triton_backend.py
  `get_num_kv_splits_triton`; MEASURED on the H100):
    grid (B, ceil(Hq / min(16, G)), max_kv_splits) with max_kv_splits = 8 (server_args.triton_attention_num_kv_splits);
    BLOCK_H = 16 query heads of one KV head per program, BLOCK_N = 32 keys per loop iteration, 4 warps, 2 stages;
    every iteration first loads the 32 keys' token locations (kv_indices, a token-level page table) and then the
    keys at those locations: the location load is a dependent load inside every iteration. Triton's two-stage
    pipeline (num_stages = 2) issues the keys / values of iteration i + 1 during iteration i and peels the first
    iteration's loads (locations, then keys / values) into the loop prologue: a program of n iterations is its
    prologue's 3 + 2 dependent loads and n - 1 steady-state iterations.
    num_kv_splits per request: max(ceil(T / ceil(Tmax / s1)), ceil(T / ceil(Tmax / s2))), s1 = min(ceil(Tmax / Tmin),
    8), s2 = min(ceil(SMs x max(log2(Tmax / 64), 1) / (B x ceil(Hq / min(16, G)))), 8); a split's KV range is
    ceil(ceil(T / splits) / 32) x 32 tokens; programs beyond a request's splits exit after loading its indptr and
    split count, words every program of the request reads: an L2 hit (SGL_IDLE_LOAD_SHARE); split_kv_id is the grid's
    slowest dimension, so they are launched last and run in the slots the working programs' last wave leaves free,
    only the rest adding rounds (Launch.idle_fill). A wave of tiles is priced as vLLM's Triton kernel's (the lone
    chain, the busiest SM's issue and the queueing share of the HBM time: hwmodels.roofline CHAIN_ISSUE; the bf16 kind's
    co-resident programs issue in the lone chain's waits and the chain meets the HBM stream at a knee: CHAIN_ISSUE_HIDDEN_P). fp8 K/V is its own kind
    (attn_triton_sgl_fp8kv): the program converts its fp8 tiles, and its tile time and occupancy are its own.
    Stage 2 (`_fwd_kernel_stage2`): one program per (request, query head) merges the splits.
    Prologue per program: kv_indptr[b] (its start and length) and num_kv_splits[b] -> kv_indices -> the first keys.
triton_vllm  vLLM's unified Triton attention (vllm/attention/ops/triton_unified_attention.py `unified_attention`,
  `kernel_unified_attention_2d` / `_3d`, `reduce_segments`, `find_seq_idx`, commit
  001ceb3e98e7a19ebe33f542a368fa73bf6c76ad; vllm/v1/attention/backends/triton_attn.py at the same commit: K/V cache
  (blocks, 2, block_size, Hkv, d) unbound into K and V, fp8 K/V viewed as float8_e4m3fn, the query stays bf16):
    BLOCK_M = 16 if G <= 16 else next_pow2(G) packed (query row, head) rows; BLOCK_Q = BLOCK_M // G query rows of one
    sequence per program; total_num_q_blocks = (B x q) // BLOCK_Q + B (an upper bound: the q blocks past a
    sequence's rows exit after their search and query_start_len loads);
    3D (segmented) kernel iff max_seqlen_q <= 1 and total_num_q_blocks x Hkv <= 128 (decode only), grid
    (total_num_q_blocks, Hkv, NUM_SEGMENTS = 16), TILE_SIZE_DECODE = 16 keys per iteration (32 for an fp8 query;
    the backend's query is bf16), each segment walks ceil(T / (16 x 16)) tiles and the segments past the sequence
    exit after loading seq_len; then reduce_segments, grid (B x q, Hq), merges the 16 segment slots (masked);
    otherwise the 2D kernel, grid (total_num_q_blocks, Hkv), TILE_SIZE_PREFILL = 32 keys per iteration over the
    whole sequence, no combine;
    every program first finds its sequence by a binary search over query_start_len (find_seq_idx: floor(log2(B)) + 1
    dependent loads), loads query_start_len[seq], [seq + 1] (one round trip), then seq_len (another): words every
    program of the launch or of its sequence reads, so L2 hits after the first (priced at the measured L2 / DRAM
    latency share, VLLM_L2_SHARE), as the first tile's block-table entries; idle programs (segments past the sequence,
    q blocks past its rows) do the same loads and exit, in the slots the working programs' last wave leaves free
    (Launch.idle_fill); reduce_segments' search and seq_len likewise. Registers (so programs per SM: 5 at 88-92, 4
    above) depend on the compiled G (VLLM_REGS_BY_G, measured): the launch's own occupancy prices its waves
    (Launch.resident, the op's resident_ctas), and so does the lone program's iteration (VLLM_ITER_BY_G: the tiles'
    work is the same for every G <= 16, the compiled code is not); per tile it
    loads the tile's block-table entries and then the keys / values at them (a dependent load per iteration;
    default num_warps 4, num_stages 3: Triton pipelines the indirect loads as in SGLang's kernel, the first
    iteration's two loads peeled into the prologue); fp8 K/V is converted in the loop ((k.to(f32) x k_scale)
    .to(bf16)): its own kind (attn_triton_vllm_fp8kv). The roofline prices a wave of these programs' tiles as the lone
    program's chain plus the issue of the programs sharing the busiest SM plus the fitted share of the launch's HBM time
    the chain's loads queue behind, bandwidth a ceiling of its own (hwmodels.roofline CHAIN_ISSUE). After its last
    tile's K / V arrive every program runs that tile's dots and softmax and then its epilogue's stores (the 2D kernel:
    the output; the 3D kernel: segm_output, segm_max, segm_expsum) and exits: a tail the same for every length, priced
    once per wave (cta_fixed_us of the two kinds, one fitted value: simulator.calibration.fit_production_attention
    TV_TAIL_MAX_US), so a one-tile program is its prologue plus its tail.
    K/V the L2 already holds (kv_l2_hit, VLLM_KV_L2_HIT_SAVING_SHARE): each dependent K/V load waits the L2's latency
    instead of the DRAM's (per tile, for the whole chain: Launch.saved_loads), and its bytes leave the HBM traffic; 0
    in an engine (the default), a share for the timing harness's few rotated K/V copies
    (simulator.calibration.fit_production_attention tv_harness_kv_l2_hit).
    The engine's state (engine=True, the default; VLLM_COLD_META_LOADS): an engine's layer finds the step's metadata,
    its block table and the kernel's code out of the L2 (the other layers' weights and K/V passed it since), so the
    first wave's query_start_len / seq_len / first block-table loads and its code and parameters wait the DRAM's
    latency, and so does every later block-table sector; the timing harness (engine=False) replays the call warm.
"""
from __future__ import annotations

import numpy as np

from simulator.kernels.production import Launch, attention_io, ceil_div, combine_io, occupancy, waves

SGL_MAX_KV_SPLITS, SGL_BLOCK_N, SGL_BLOCK_H, SGL_MIN_BLOCK_KV = 8.0, 32.0, 16.0, 32.0
#: SGLang's grouped kernel: 4 warps; registers / shared memory: ASSUMPTION until the launch profile measures them
SGL_THREADS, SGL_REGS, SGL_SMEM = 128.0, 128.0, 32768.0
#: dependent loads before the first keys (module docstring) and inside every iteration (the token locations)
SGL_PROLOGUE_LOADS = 3.0
#: the first iteration's loads, peeled into the pipeline prologue by Triton's two-stage software pipeliner: the token
#: locations (kept a synchronous tt.load), then the keys / values (async copies) -- triton-lang/triton
#: test/TritonGPU/loop-pipeline-indirect-load.mlir @ d4d7f4587aceb52e0ec305a3529afb24dc28bbe6 (indirect_load_two_stages:
#: in the loop the index load stays a tt.load, the loads it addresses become async_copy_global_to_local one iteration
#: ahead); the version of the pass in Triton 3.6 (measured) not read
SGL_PIPELINE_PROLOGUE_LOADS = 2.0
#: an idle program (split_kv_id beyond its request's num_kv_splits) loads kv_indptr[b], kv_indptr[b + 1] and
#: num_kv_splits[b] (independent loads: one round trip), finds split_kv_end <= split_kv_start and stores nothing
#: (decode_attention.py _fwd_grouped_kernel_stage1, sglang 0.5.6). Those words are read by all heads x 8 programs of
#: the request, the working ones first (grid order: split_kv_id is the slowest grid dimension): an L2 hit, priced at
#: the device's MEASURED L2 hit latency as a share of the dependent-load price (sync_us = the measured DRAM latency):
#: hwmodels/calibration/fitted/H100-SXM.yaml latency block (fit_latency.py on latency_nvidia-h100-80gb-hbm3_2026-11-22
#: .csv): l2 0.1431 us / dram 0.3494 us
SGL_IDLE_LOAD_SHARE = 0.1431 / 0.3494
#: the lone program's iteration of the binary compiled for GQA group G (kv_group_num, a tl.constexpr of
#: _fwd_grouped_kernel_stage1: Triton compiles one binary per group), as a multiple of the G 4 binary's (the fitted
#: iter_us, fitted on Llama-3.1-8B's 32/8 and Llama-3.1-70B's 64/8 heads, whose G 4 and G 8 binaries walk their lone
#: chains within 1 % of each other: 598 / 602 us at batch 1 x context 65536, 2214 / 2235 us at 262144): (bf16, fp8).
#: The source gives every G <= 16 the same tile (BLOCK_H = 16 query-head rows, VALID_BLOCK_H = G of them unmasked; the
#: same two tl.dot shapes, (16 x 128) . (128 x 32) and (16 x 32) . (32 x 128); decode_attention.py, sglang 0.5.6), so
#: the difference is the compiled binary's, MEASURED, not derived: lone programs (batch 2, context 65536, 64-128
#: programs, one per SM) of heads 28/4 and 56/8 (G 7) against 16/4 and 32/8 (G 4), the same KV-head count paired:
#: bf16 441.3 / 559.4 us (Hkv 4) and 454.8 / 556.5 us (Hkv 8), the median of the two ratios 0.803 (the KV-head count,
#: so a token's K/V row of 512 or 1024 bytes, moves nothing: 559.4 / 556.5); fp8 (56/8 against 16/4) 472.1 / 457.0 =
#: 1.033 (hwmodels/calibration/data/production_attention/sgl_triton_blind4_nvidia-h100-80gb-hbm3_2026-11-27.csv,
#: row_role diagnosis, the smaller of its two runs). Groups 2, 3, 5, 6 likewise, against group 4's binary in the same
#: call (lone programs of heads 16/8, 24/8, 40/8, 48/8 and 32/8, batch 2, context 65536: 128 programs, one per SM):
#: bf16 551.3, 551.7, 462.2, 461.9 / 570.4 us, fp8 580.2, 579.2, 483.4, 480.3 / 466.2 us (hwmodels/calibration/data/
#: production_attention/sgl_triton_fit6_nvidia-h100-80gb-hbm3_2026-11-27.csv, row_role fit_lone; lab/kernels/
#: sgl_triton_fit6.py): the binaries fall in two classes, groups 2-3 (bf16 0.967, fp8 1.244: the fp8 chain 24 % slower)
#: and groups 5-7 (bf16 0.81, fp8 1.03-1.04). The ratio is of the whole call (the chain is ~98 % of it). A G not
#: measured (1, 8 and above: group 8's binary walks as group 4's, 602 / 598 us above): 1.0 (an ASSUMPTION for G 1 and
#: G > 8)
SGL_ITER_BY_G = {2.0: (0.967, 1.244), 3.0: (0.967, 1.242), 5.0: (0.810, 1.037), 6.0: (0.810, 1.030),
                 7.0: (0.803, 1.033)}
VLLM_BLOCK_M, VLLM_TILE_DECODE, VLLM_TILE_PREFILL, VLLM_SEGMENTS, VLLM_MIN_GRID_2D = 16.0, 16.0, 32.0, 16.0, 128.0
#: vLLM's default KV block size (the page the block table addresses)
VLLM_PAGE = 16.0
#: 4 warps (Triton's default num_warps; the launch passes none); registers per thread / shared memory bytes of the
#: 3D and 2D kernels, bf16 and fp8 K/V, Llama-3.1-8B heads: MEASURED launch profile (hwmodels/calibration/data/
#: production_attention/triton_vllm_attention_grids_nvidia-h100-80gb-hbm3_2026-11-27.csv, Triton 3.6.0)
VLLM_THREADS = 128.0
VLLM_REGS_3D, VLLM_SMEM_3D, VLLM_REGS_3D_FP8, VLLM_SMEM_3D_FP8 = 88.0, 12928.0, 106.0, 16512.0
VLLM_REGS_2D, VLLM_SMEM_2D, VLLM_REGS_2D_FP8, VLLM_SMEM_2D_FP8 = 112.0, 21760.0, 128.0, 28928.0
#: registers per thread by GQA group size G (num_queries_per_kv, a tl.constexpr of both kernels: Triton compiles one
#: binary per G, and its register allocation differs): (3D bf16, 3D fp8, 2D bf16, 2D fp8). MEASURED launch profiles
#: (torch.profiler, Triton 3.6.0, H100): G 4 and 7 in triton_vllm_attention_grids_nvidia-h100-80gb-hbm3_2026-11-27.csv,
#: G 8 (8/1 and 64/8 heads, the same binary) in triton_vllm_blind_grids_nvidia-h100-80gb-hbm3_2026-11-27.csv; shared
#: memory does not depend on G there. A G not profiled takes G 4's (the Llama-3.1-8B fit rows': an ASSUMPTION).
#: At 4 warps, 88 / 92 registers leave 5 programs per SM, 98-128 leave 4 (occupancy()): the 3D bf16 kernel and the 2D
#: bf16 kernel of G 8 run 5 per SM, the others 4
VLLM_REGS_BY_G = {4.0: (88.0, 106.0, 112.0, 128.0), 7.0: (92.0, 116.0, 112.0, 128.0), 8.0: (88.0, 98.0, 92.0, 128.0)}
#: the lone program's iteration of the binary compiled for GQA group G, as a multiple of the G 4 binary's (the fitted
#: iter_us of the family's kinds, fitted on Llama-3.1-8B heads 32/8): (3D bf16, 3D fp8, 2D bf16, 2D fp8).
#: The source gives the tile the same work for every G <= 16: BLOCK_M = 16 packed (query row, head) rows whatever G
#: (BLOCK_Q = 16 // G query rows of G heads), so both tl.dot calls compile to the same shapes, (16 x 128) . (128 x TILE)
#: and (16 x TILE) . (TILE x 128), and nothing else in the loop depends on G (num_queries_per_kv only sets query_pos /
#: query_offset_1 before the loop; kernel_unified_attention_2d / _3d @ 001ceb3e). What differs is the binary Triton
#: compiles per G (VLLM_REGS_BY_G: the 2D bf16 kernel gets 92 registers at G 8 against 112 at G 4): MEASURED, not
#: derived: lone programs (batch 1, context 32768 / 90000) of heads 28/4 (G 7) and 64/8, 8/1 (G 8) against 32/8 (G 4),
#: the median ratio per G, kernel and dtype (simulator.calibration.fit_production_attention.lone_iter_ratios, the rule
#: committed before the measurement; triton_decode_blind4_nvidia-h100-80gb-hbm3_2026-11-27.csv, row_role fit_lone).
#: Only the 2D bf16 binaries differ by more than 2 % (G 7 +5 %, G 8 +9 %). G not measured: 1.0 (an ASSUMPTION)
VLLM_ITER_BY_G = {7.0: (1.0, 0.992, 1.054, 1.01), 8.0: (1.014, 0.977, 1.093, 1.003)}
#: the share of a dependent load's price (sync_s = the measured DRAM latency) that a load of a word every program of
#: the launch reads costs: an L2 hit after the first program's miss (SGL_IDLE_LOAD_SHARE: the measured L2 / DRAM
#: latencies)
VLLM_L2_SHARE = SGL_IDLE_LOAD_SHARE
#: after the search: query_start_len[seq] and [seq + 1] (one round trip), then seq_len (module docstring)
VLLM_META_LOADS = 2.0
#: the first tile's block-table load and then its keys / values, peeled into the pipeline prologue (as SGLang's)
VLLM_PIPELINE_PROLOGUE_LOADS = 2.0
#: reduce_segments' loads of the segment slots: one round, not one per segment. The program loads segm_max,
#: segm_expsum and segm_output of all NUM_SEGMENTS_PER_SEQ slots as [16] / [16, HEAD_SIZE_PADDED] blocks masked by
#: the sequence's active segments (three independent tl.load calls whose addresses need only seq_idx: in flight
#: together), then reduces them in registers and stores one output row (reduce_segments @ 001ceb3e). Earlier versions
#: priced 16 serial rounds, which gave the reduce 2.6 us of chain at every batch and carried the 3D kernel's own
#: per-program time (MEASURED launch profiles: reduce_segments 1.9-2.7 us, the one-tile 3D kernel 3.0-4.8 us at batch
#: 1-5, triton_vllm_*grids*.csv)
VLLM_REDUCE_ROUNDS = 1.0
#: K/V in the L2 (triton_vllm's kv_l2_hit). The program's chain is a dependent load per tile (the block-table entries,
#: then the K / V at them); the fitted lone iteration is that chain with its K / V from DRAM (the lone fit rows walk
#: 16-128 MiB of K / V per call). Where the K / V a call reads were read by a recent call and nothing since has evicted
#: them (a timing harness replaying the call over a few K/V copies whose total fits in the L2), each tile's K / V load
#: waits the L2's latency: the measured L2 / DRAM latencies (VLLM_L2_SHARE) give the saving per load, 0.206 us
#: (0.3494 - 0.1431). Which share of the loads hit is the caller's: 0 in an engine (the default); for the timing
#: harness simulator.calibration.fit_production_attention.tv_harness_kv_l2_hit
VLLM_KV_L2_HIT_SAVING_SHARE = 1.0 - VLLM_L2_SHARE
#: The engine's state (triton_vllm's engine=True, the default). An engine step runs every layer's attention call with
#: the same metadata (query_start_len, seq_lens, the block table: built once per step), and between two layers' calls
#: the layer's weights (hundreds of MB per layer on one GPU for the served models) and the other layers' K/V pass the
#: 50 MB L2: the call finds its metadata, its block table, its K/V and its own code out of the L2. The timing harness
#: replays the call back to back, all of it warm (engine=False; its K/V copies' share, kv_l2_hit). Which loads then
#: wait the DRAM's latency (kernel_unified_attention_2d / _3d, reduce_segments @ 001ceb3e), for the first wave of
#: programs (they issue together and wait on the same misses; later waves find the lines the first brought in):
#:   the first load of query_start_len (find_seq_idx's first probe; the rest of the search and query_start_len[seq],
#:   [seq + 1] fall in the lines it brought), seq_len (seq_lens_ptr: its own buffer), and the first tile's block-table
#:   entries (block_tables_ptr): 3 loads that the warm model prices as L2 hits (VLLM_L2_SHARE) now pay a whole
#:   dependent load (the measured DRAM latency, sync_us);
#: reduce_segments: its first query_start_len probe and seq_len (2); its segment slots were just written by the 3D
#: kernel (L2 hits, as priced).
VLLM_COLD_META_LOADS, VLLM_COLD_REDUCE_META_LOADS = 3.0, 2.0
#: every program of either state walks its own block-table entries in the loop: one int32 per 16-token page, and the
#: L2 fills its 32-byte sectors (8 entries) from DRAM. Cold, each sector past the first costs one DRAM latency where the
#: warm fit rows (their table in the L2) had an L2 hit: (sectors - 1) x (1 - VLLM_L2_SHARE) per program, every wave
#: (each program's own sequence). NVIDIA CUDA C++ Best Practices Guide, "Coalesced Access to Global Memory": 32-byte
#: segments (sectors) are the unit of L2 / DRAM traffic
VLLM_BT_SECTOR_PAGES = 8.0
#: the launch's own code and parameters out of the L2: before its first load a program fetches its first instructions,
#: and then the kernel parameters its first address needs (query_start_len_ptr, from the constant bank), both from
#: memory the weights' traffic evicted: two dependent fetches at the DRAM latency per launch (first wave). An
#: ASSUMPTION (the device's cold instruction / constant fetch was never measured alone), chosen with the seventh grid's
#: 30 cold rows seen (looked-at: |error| median / p90 with 0 / 1 / 2 such loads 5.6 / 12.3, 3.5 / 7.5, 2.2 / 5.6 %)
VLLM_COLD_LAUNCH_LOADS = 2.0


def sgl_num_kv_splits(B, T, Hq, Hkv, sms):
    """num_kv_splits of a batch of B requests of T tokens each (get_num_kv_splits_triton, uniform lengths)."""
    B, T, Hq, Hkv = (np.asarray(x, dtype=np.float64) for x in (B, T, Hq, Hkv))
    G = Hq / Hkv
    s1 = np.minimum(1.0, SGL_MAX_KV_SPLITS)          # ceil(Tmax / Tmin) = 1 for uniform lengths
    c1 = ceil_div(T, s1)
    ext = np.floor(sms * np.maximum(np.log2(np.maximum(T, 1.0) / 64.0), 1.0))
    grid = B * np.where(G == 1, Hq, ceil_div(Hq, np.minimum(SGL_BLOCK_H, G)))
    s2 = np.minimum(ceil_div(ext, grid), SGL_MAX_KV_SPLITS)
    c2 = ceil_div(T, s2)
    return np.maximum(ceil_div(T, c1), ceil_div(T, c2))


def triton_sgl(B, T, Hq, Hkv, d, kvb, sms: int, smem_per_sm: float):
    """Launches of one SGLang Triton decode call (module docstring)."""
    B, T, Hq, Hkv, d, kvb = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in (B, T, Hq, Hkv, d, kvb)))
    G = Hq / Hkv
    head_progs = ceil_div(Hq, np.minimum(SGL_BLOCK_H, G))
    S = sgl_num_kv_splits(B, T, Hq, Hkv, sms)
    per_split = ceil_div(ceil_div(T, S), SGL_MIN_BLOCK_KV) * SGL_MIN_BLOCK_KV
    iters = ceil_div(np.minimum(per_split, T), SGL_BLOCK_N)
    # splits whose range starts past the sequence skip the loop and store nothing (stage 1's
    # `if split_kv_end > split_kv_start`; stage 2 skips them too): the splits that do work
    S = np.minimum(S, ceil_div(T, per_split))
    ctas = B * head_progs * S                      # programs with a split to walk
    idle = B * head_progs * SGL_MAX_KV_SPLITS - ctas   # the rest of the (B, heads, 8) grid exits after its loads
    slots = occupancy(SGL_THREADS, SGL_SMEM, SGL_REGS, smem_per_sm)
    flops, kv, qb, ob = attention_io(B, 1.0, T, Hq, Hkv, d, d, kvb)
    idx = B * T * 4.0 * head_progs
    part_w = B * Hq * S * (d + 1.0) * 4.0
    # Triton's two-stage software pipeline (num_stages = 2) peels the first iteration's loads into the loop
    # prologue: its token locations (a plain load) and then its K / V (async copies), 2 dependent loads after the
    # program's own 3; every later iteration is one steady-state tile of the chain (its location load synchronous,
    # its K / V copies issued one iteration ahead)
    # fp8 K/V: the program loads fp8 keys / values (half the bytes of a tile) and converts them to the query's dtype
    # (k.to(q.dtype)): its own kind, whose tile time is fitted on the fp8 rows (as FlashInfer's attn_fi_decode_fp8kv)
    kind = np.where(kvb < 2.0, "attn_triton_sgl_fp8kv", "attn_triton_sgl")
    it_scale = np.ones_like(G)
    for g, (a16, a8) in SGL_ITER_BY_G.items():   # the binary's lone iteration (SGL_ITER_BY_G)
        it_scale = np.where(G == g, np.where(kvb < 2.0, a8, a16), it_scale)
    k1s = [Launch("attention", k, ctas, slots, np.maximum(iters - 1.0, 0.0) * it_scale,
                  SGL_PROLOGUE_LOADS + SGL_PIPELINE_PROLOGUE_LOADS, flops,
                  kv + S * qb + idx, part_w, idle=idle, idle_share=SGL_IDLE_LOAD_SHARE, where=kind == k, idle_fill=True,
                  info={"splits": S})
           for k in ("attn_triton_sgl", "attn_triton_sgl_fp8kv") if (kind == k).any()]
    rd, wr = combine_io(B * Hq, S, d)
    k2 = Launch("attention_combine", "attn_combine_triton_sgl", B * Hq, 16.0, S, 2.0, 3.0 * B * Hq * d * S, rd, wr,
                dtype="fp32")
    return [*k1s, k2], {"splits": S, "ctas": ctas, "iters": iters, "slots": slots}


def vllm_grid(B, q, Hq, Hkv):
    """(BLOCK_M, BLOCK_Q, total_num_q_blocks, use_3d) of unified_attention's launch (module docstring)."""
    B, q, Hq, Hkv = (np.asarray(x, dtype=np.float64) for x in (B, q, Hq, Hkv))
    G = np.floor(Hq / Hkv)
    block_m = np.where(G <= VLLM_BLOCK_M, VLLM_BLOCK_M, 2.0 ** np.ceil(np.log2(np.maximum(G, 1.0))))
    block_q = np.floor(block_m / G)
    q_blocks = np.floor(B * q / block_q) + B
    use_3d = (q <= 1) & (q_blocks * Hkv <= VLLM_MIN_GRID_2D)
    return block_m, block_q, q_blocks, use_3d


def triton_vllm(B, q, T, Hq, Hkv, d, kvb, sms: int, smem_per_sm: float, kv_l2_hit=0.0, engine=True):
    """Launches of one vLLM unified-attention call (module docstring): the 2D kernel, or the 3D kernel and
    reduce_segments. kv_l2_hit: the share of the K/V tile loads that hit in the L2 (0, the default: an engine's layer
    finds its K/V in DRAM, every other layer's K/V and the weights having passed the L2 since its last step; a timing
    harness that replays the call over a few small K/V copies keeps them in the L2: see VLLM_KV_L2_HIT). engine: the
    engine's state (True, the default: metadata, block table and code out of the L2, VLLM_COLD_META_LOADS) or the
    timing harness's back-to-back replay (False: all warm but the K/V)."""
    B, q, T, Hq, Hkv, d, kvb = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in (B, q, T, Hq, Hkv, d, kvb)))
    kv_l2_hit = np.broadcast_to(np.asarray(kv_l2_hit, dtype=np.float64), B.shape)
    block_m, block_q, q_blocks, use_3d = vllm_grid(B, q, Hq, Hkv)
    work_q = B * ceil_div(q, block_q)                 # q blocks that hold query rows
    seg = np.where(use_3d, VLLM_SEGMENTS, 1.0)
    tile = np.where(use_3d, VLLM_TILE_DECODE, VLLM_TILE_PREFILL)
    tiles = ceil_div(T, tile)
    per_seg = ceil_div(T, seg * tile)                 # tiles_per_segment (3D); the whole sequence (2D)
    seg_work = np.where(use_3d, ceil_div(T, per_seg * tile), 1.0)
    iters = np.minimum(per_seg, tiles)
    ctas = work_q * Hkv * seg_work
    idle = q_blocks * Hkv * seg - ctas                # programs that exit after their prologue loads
    f8 = kvb < 2.0
    regs = np.where(use_3d, np.where(f8, VLLM_REGS_3D_FP8, VLLM_REGS_3D), np.where(f8, VLLM_REGS_2D_FP8, VLLM_REGS_2D))
    G = np.floor(Hq / Hkv)
    for g, (r3, r3f, r2, r2f) in VLLM_REGS_BY_G.items():   # the binary compiled for this G (VLLM_REGS_BY_G)
        regs = np.where(G == g, np.where(use_3d, np.where(f8, r3f, r3), np.where(f8, r2f, r2)), regs)
    it_scale = np.ones_like(G)
    for g, (a3, a3f, a2, a2f) in VLLM_ITER_BY_G.items():   # the binary's lone iteration (VLLM_ITER_BY_G)
        it_scale = np.where(G == g, np.where(use_3d, np.where(f8, a3f, a3), np.where(f8, a2f, a2)), it_scale)
    smem = np.where(use_3d, np.where(f8, VLLM_SMEM_3D_FP8, VLLM_SMEM_3D), np.where(f8, VLLM_SMEM_2D_FP8, VLLM_SMEM_2D))
    slots = occupancy(VLLM_THREADS, smem, regs, smem_per_sm)
    _, kv, qb, ob = attention_io(B, q, T, Hq, Hkv, d, d, kvb)
    # the tensor-core work the programs issue: every tile is a (BLOCK_M x d) x (d x TILE) product and a (BLOCK_M x
    # TILE) x (TILE x d) one, whatever share of the BLOCK_M rows holds query rows (decode: G of 16 for G <= 16;
    # verification of q <= BLOCK_Q rows: the same tiles). Looked-at revision: the first fit charged 2 B q Hq T 2d flops
    # and came out 1.2-2.4x too slow on the held-out verification rows
    flops = ctas * iters * 4.0 * block_m * tile * d
    search = np.floor(np.log2(np.maximum(B, 1.0))) + 1.0
    idx = B * tiles * tile / VLLM_PAGE * 4.0 * Hkv    # block-table words (one int32 per page per program)
    part_w = np.where(use_3d, B * q * Hq * seg_work * (d + 2.0) * 4.0, ob)
    kind = np.where(kvb < 2.0, "attn_triton_vllm_fp8kv", "attn_triton_vllm")
    # the prologue's dependent loads: the search over query_start_len, query_start_len[seq] / [seq + 1] and seq_len
    # are words every program of the launch (or of the sequence: Hkv x segments x q blocks programs) reads, and the
    # first tile's block-table entries are read by the sequence's Hkv programs of that segment: L2 hits after the
    # first program's miss (VLLM_L2_SHARE); only the first tile's K / V come from DRAM (one full dependent load)
    pro = (search + VLLM_META_LOADS + VLLM_PIPELINE_PROLOGUE_LOADS - 1.0) * VLLM_L2_SHARE + 1.0
    # K/V that hit in the L2 (kv_l2_hit, VLLM_KV_L2_HIT): each of the program's dependent K/V loads (the prologue's
    # first tile and one per steady iteration) waits the L2's latency instead of the DRAM's: the difference, a share
    # (1 - VLLM_L2_SHARE) of a dependent load, comes off the chain (the fitted iteration is a DRAM-latency chain), and
    # their bytes off the HBM traffic (the bandwidth term and the chain's queueing share of it)
    # (taken off after emit's clip of the prologue at zero: Launch.saved_loads; a lone program of 46 hot tiles saves
    # 46 x the difference, more than its whole prologue)
    saved = kv_l2_hit * VLLM_KV_L2_HIT_SAVING_SHARE * (1.0 + np.maximum(iters - 1.0, 0.0))
    # the engine's state (VLLM_COLD_META_LOADS, VLLM_BT_SECTOR_PAGES, VLLM_COLD_LAUNCH_LOADS): the first wave's
    # metadata / first block-table loads and the launch's code at the DRAM latency, and every program's block-table
    # sectors past the first from DRAM
    engine = np.broadcast_to(np.asarray(engine, dtype=bool), B.shape)
    slots_w = waves(ctas, slots, sms)
    bt_sectors = ceil_div(iters * tile / VLLM_PAGE, VLLM_BT_SECTOR_PAGES)
    cold = ((VLLM_COLD_LAUNCH_LOADS + VLLM_COLD_META_LOADS * (1.0 - VLLM_L2_SHARE)) / slots_w
            + np.maximum(bt_sectors - 1.0, 0.0) * (1.0 - VLLM_L2_SHARE))
    pro = pro + np.where(engine, cold, 0.0)
    # an idle program (a segment past its sequence, a q block past its rows) exits after the search and the metadata
    # loads: L2 hits, as above. The grid holds them beside the working programs (the 3D grid's segments past the
    # sequence come last, the 2D grid's spare q blocks sit between the sequences' working ones): they run in the slots
    # the working programs' last wave leaves free, only the rest add rounds (idle_fill)
    idle_share = (search + VLLM_META_LOADS) * VLLM_L2_SHARE
    # a sequence of more query rows than BLOCK_Q has ceil(q / BLOCK_Q) working q blocks (verification of G 7 / 8 heads
    # at q 3-4: two), each walking the sequence's whole K / V for its KV head: the later ones re-read the first's
    # tiles. The q blocks of one sequence are neighbours in the grid's fastest dimension (program_id(0) = q block,
    # kernel_unified_attention_2d @ 001ceb3e), so they run in the same wave over the same tiles: the re-read is
    # traffic that passes the L2 (reread_bytes, the L2 bandwidth term of the roofline) and hits there, its working set
    # the one K / V range the q blocks share
    nqb = ceil_div(q, block_q)
    reread = kv * (nqb - 1.0)
    shared_range = kv / np.maximum(B * Hkv * seg_work, 1.0)
    k1s = [Launch("attention", k, ctas, slots, np.maximum(iters - 1.0, 0.0) * it_scale, pro, flops,
                  kv * (1.0 - kv_l2_hit) + reread + seg_work * qb + idx, part_w, idle=idle, idle_share=idle_share,
                  where=kind == k, saved_loads=saved,
                  reread_bytes=reread, working_set=shared_range, resident=slots, idle_fill=True,
                  info={"segments": seg_work})
           for k in ("attn_triton_vllm", "attn_triton_vllm_fp8kv") if (kind == k).any()]
    rd, wr = combine_io(B * q * Hq, seg_work, d)
    # reduce_segments: find_seq_idx and seq_len (words every program reads: L2 hits, VLLM_L2_SHARE), then the 16
    # segment slots (masked by seq_len) the 3D kernel just wrote, in one round of loads (VLLM_REDUCE_ROUNDS)
    # (the engine's state: its code, its first query_start_len probe and seq_len at the DRAM latency, first wave only)
    rctas = B * q * Hq
    rcold = (VLLM_COLD_LAUNCH_LOADS + VLLM_COLD_REDUCE_META_LOADS * (1.0 - VLLM_L2_SHARE)) / waves(rctas, 16.0, sms)
    k2 = Launch("attention_combine", "attn_combine_triton_vllm", rctas, 16.0, VLLM_REDUCE_ROUNDS,
                (1.0 + search) * VLLM_L2_SHARE + np.where(engine, rcold, 0.0),
                3.0 * B * q * Hq * d * seg_work, rd, wr, dtype="fp32", where=use_3d)
    return [*k1s, k2], {"segments": seg, "ctas": ctas, "use_3d": use_3d, "iters": iters, "idle": idle,
                        "block_q": block_q, "q_blocks": q_blocks}
