"""FlashMLA's sparse decode on Hopper: the kernel DeepSeek-V3.2's DSA attention runs (flash_mla_with_kvcache with
`indices`), as a chain of the scheduler's index tiles.

From deepseek-ai/FlashMLA @ 9241ae3 (the sm90 sparse decode, unchanged since 082094b7; sgl_flash_mla 1.0.0 carries a
frozen copy in csrc_legacy, its scheduler constants checked against the built extension):
  launch     grid (h / 64, s_q, parts), 384 threads (two consumer warpgroups, one producer that gathers and dequantizes
             the 656-byte V3.2 tokens), one CTA per SM; h 64 or 128 only (128: the two CTAs of a cluster share each
             tile's gather); fewer heads are padded to 64 by the engine (simulator/strategies/dsa.py pad_heads)
  scheduler  parts = max(SMs // s_q // (h / 64), 1) (C integer division, sparse_decode.h get_meta); a request's k indices
             are ceil(k / 64) tiles of 64 tokens and cost 5 more tiles a segment (fixed_overhead_num_blocks); each part
             takes payload = ceil(b (ceil(k / 64) + 5) / parts) + 5 tiles, splitting requests across parts when b is
             small (a combine kernel merges the splits)
  per tile   the producer gathers 64 tokens (16-byte loads) and dequantizes them to bf16 into a 2-deep buffer; the
             consumers run QK^T (36 WGMMA m64n64k16), the softmax, PV (8 WGMMA m64n256k16) in sequence
So a launch lasts its busiest part's chain: its tiles at the kind's tile time (iter_us of attn_flashmla_sparse at 64
heads, attn_flashmla_sparse_pair at 128) and its request segments at the kind's segment time (sync_us), plus the kind's
fixed time, the three fitted on the sparse kernel's own spans (the SPANS campaign: simulator/calibration/
flashmla_sparse_h200.py fit_span_tiles); FlashMLA's combine kernel where a request splits, as the dense family prices
it (COMBINE_CHAIN: its warps' chain over the splits, launched under the sparse kernel's tail by PDL).
"""
from __future__ import annotations

import functools

import numpy as np

from simulator.kernels.flashmla import COMBINE_HEADS
from simulator.kernels.production import Launch, ceil_div, combine_io, emit

TILE = 64            # block_size_topk: tokens of one index tile
SEGMENT_TILES = 5    # fixed_overhead_num_blocks: the scheduler's cost of a request segment, in tiles
HEAD_TILE = 64       # query heads of one CTA


def parts(heads, s_q, sms):
    """num_sm_parts: max(SMs // s_q // (heads / 64), 1), C integer division."""
    heads, s_q = np.asarray(heads, float), np.asarray(s_q, float)
    return np.maximum(np.floor(np.floor(float(sms) / s_q) / np.maximum(heads / HEAD_TILE, 1.0)), 1.0)


def payload(batch, s_q, heads, k, sms):
    """Tiles one part walks: ceil(b (ceil(k / 64) + 5) / parts) + 5."""
    per = np.ceil(np.asarray(k, float) / TILE) + SEGMENT_TILES
    return np.ceil(np.asarray(batch, float) * per / parts(heads, s_q, sms)) + SEGMENT_TILES


def busiest_part(batch: int, k: int, n_parts: int) -> tuple[int, int, int]:
    """(tiles, segments, splits of the most split request) of the part the scheduler loads most, in its own unit (tiles
    + 5 a segment), by its greedy packing (get_decoding_sched_meta.cu: each part takes whole requests while its budget
    holds the request's left tiles + 5, else remain - 5 tiles of the current request, a split, and stops)."""
    return schedule(int(batch), int(k), int(n_parts))[:3]


@functools.lru_cache(maxsize=65536)
def schedule(batch: int, k: int, n_parts: int) -> tuple[int, int, int, int, int]:
    """The scheduler's packing of `batch` requests of ceil(k / 64) tiles over `n_parts` parts (busiest_part), in
    O(parts): (the busiest part's tiles, its segments, the most pieces a request is split into, the requests split,
    their pieces in all). A part first finishes the request its predecessor split, then takes as many whole requests as
    its budget holds (tiles + 5 each), then a split piece of the next (budget - 5 tiles) and stops."""
    T = int(np.ceil(k / TILE))
    pay = int(np.ceil(batch * (T + SEGMENT_TILES) / n_parts)) + SEGMENT_TILES
    best, req, blk, touch = (0, 0), 0, 0, 0
    most, nsplit, pieces = (1 if batch else 0), 0, 0

    def done(t):
        nonlocal most, nsplit, pieces
        if t > 1:
            most, nsplit, pieces = max(most, t), nsplit + 1, pieces + t

    for _ in range(int(n_parts)):
        remain, tiles, segs = pay, 0, 0
        if blk > 0 and req < batch:            # the request the previous part split
            left = T - blk
            if remain >= left + SEGMENT_TILES:
                tiles, segs, remain = tiles + left, segs + 1, remain - left - SEGMENT_TILES
                done(touch + 1)
                req, blk, touch = req + 1, 0, 0
            else:
                take = remain - SEGMENT_TILES
                if take > 0:
                    tiles, segs, blk, touch = tiles + take, segs + 1, blk + take, touch + 1
                remain = -1                    # the part stops
        if remain >= 0 and req < batch:
            m = min(batch - req, remain // (T + SEGMENT_TILES))
            tiles, segs, remain, req = tiles + m * T, segs + m, remain - m * (T + SEGMENT_TILES), req + m
            if req < batch:                    # a piece of the next request, and the part stops
                take = remain - SEGMENT_TILES
                if take > 0:
                    tiles, segs, blk, touch = tiles + take, segs + 1, take, 1
        if tiles + SEGMENT_TILES * segs > best[0] + SEGMENT_TILES * best[1]:
            best = (tiles, segs)
        if req >= batch:
            break
    if blk > 0:
        done(touch)
    return best[0], best[1], most, nsplit, pieces


def schedule_arrays(batch, k: int, n_parts) -> tuple[np.ndarray, ...]:
    """schedule() for arrays of `batch` and `n_parts` at once (numpy, one step a part over every setting): (tiles,
    segments, most pieces, requests split, pieces), each shaped as the broadcast inputs."""
    batch, n_parts = np.broadcast_arrays(np.asarray(batch, dtype=np.int64), np.asarray(n_parts, dtype=np.int64))
    shape = batch.shape
    B, NP = batch.ravel(), n_parts.ravel()
    T, S = int(np.ceil(k / TILE)), SEGMENT_TILES
    pay = -(-(B * (T + S)) // np.maximum(NP, 1)) + S
    z = np.zeros(B.shape, np.int64)
    req, blk, touch = z.copy(), z.copy(), z.copy()
    best_t, best_s = z.copy(), z.copy()
    most, nsplit, pieces = np.where(B > 0, 1, 0), z.copy(), z.copy()
    live = B > 0
    for part in range(int(NP.max()) if NP.size else 0):
        on = live & (part < NP) & (req < B)
        if not on.any():
            break
        remain, tiles, segs = np.where(on, pay, 0), z.copy(), z.copy()
        # the request the previous part split
        cont = on & (blk > 0)
        left = T - blk
        whole = cont & (remain >= left + S)
        t1 = np.where(whole, touch + 1, 0)
        fin = whole & (t1 > 1)
        most = np.where(fin, np.maximum(most, t1), most)
        nsplit, pieces = nsplit + fin, pieces + np.where(fin, t1, 0)
        tiles, segs = tiles + np.where(whole, left, 0), segs + whole
        remain = np.where(whole, remain - left - S, remain)
        req = req + whole
        blk, touch = np.where(whole, 0, blk), np.where(whole, 0, touch)
        part_piece = cont & ~whole
        take = remain - S
        grow = part_piece & (take > 0)
        tiles, segs = tiles + np.where(grow, take, 0), segs + grow
        blk, touch = np.where(grow, blk + take, blk), touch + grow
        go = on & ~part_piece & (req < B)
        # whole requests, then a piece of the next
        m = np.where(go, np.minimum(B - req, np.maximum(remain, 0) // (T + S)), 0)
        tiles, segs, remain, req = tiles + m * T, segs + m, remain - m * (T + S), req + m
        nxt = go & (req < B)
        take = remain - S
        grow = nxt & (take > 0)
        tiles, segs = tiles + np.where(grow, take, 0), segs + grow
        blk, touch = np.where(grow, take, blk), np.where(grow, 1, touch)
        better = on & (tiles + S * segs > best_t + S * best_s)
        best_t, best_s = np.where(better, tiles, best_t), np.where(better, segs, best_s)
    end = blk > 0
    fin = end & (touch > 1)
    most = np.where(fin, np.maximum(most, touch), most)
    nsplit, pieces = nsplit + fin, pieces + np.where(fin, touch, 0)
    return tuple(x.reshape(shape) for x in (best_t, best_s, most, nsplit, pieces))


KINDS = ("attn_flashmla_sparse", "attn_flashmla_sparse_pair")

#: the combine as FlashMLA's combine kernel runs it (combine.cu @ 9241ae3, the kernel the dense decode launches too, and
#: priced as simulator/kernels/flashmla.py prices it there, on attn_combine_flashmla's terms fitted on the dense rows):
#: grid (b x s_q, 1, ceil(h / 8)) of 256 threads, a warp per head walking its request's splits one after another (each
#: split's 512 fp32 partial values loaded one step ahead: a chain of ceil(S / 4) iterations at S splits), launched with
#: programmatic dependent launch after the sparse kernel's trigger (its last request, splitkv_mla.cuh), the CTAs of an
#: unsplit request exiting before the wait. False = the rule before (b x s_q x ceil(h / 8) CTAs pricing only the bytes of
#: the partials, no chain). The SPANS campaign (each kernel timed on its own, 1 x H200,
#: flashmla_sparse_nvidia-h200_*_spans1_spans.csv) showed the combine's exposed tail at 8-10 us where every request
#: splits 32 ways (batch 1-3 at 64 heads) against 1.3-3.4 us priced, and the sparse kernel 4-5 us shorter than its price
#: there (LOOKED-AT: the candidate was built after that campaign). With the tile kinds' terms refitted on that campaign's
#: sparse kernel spans (simulator/calibration/flashmla_sparse_h200.py fit_span_tiles) it won the fourth grid (39 new
#: shapes, blind, flashmla_sparse_h200_grid4_prediction_2026-11-29.csv): 2.6 / 7.1 %, 4 of 4 regimes, against 4.5 /
#: 11.7 %, 4 of 4 (padded heads at batch <= 16: 2.9 / 7.0 against 8.5 / 18.3 %). SHIPPED
COMBINE_CHAIN = True

#: rows that gather from one shared sequence (a prompt's rows, flattened by SGLang or passed as one request by vLLM,
#: all index that prompt's cache) re-read its tokens: the gathers past the distinct tokens are L2 re-reads of a working
#: set of those tokens (the roofline's hit share, min(1, L2 / working set)) and the tile chain runs at the kind's
#: iter_l2 for that share. FlashMLA sparse grid 5 (blind, 1 x H200) priced such rows with every gather from HBM: +30 %
#: (64 heads) and +8.5 % (128 heads), where rows of distinct requests (flattened decode) met (2.5 %); iter_l2 of both
#: kinds fitted on its six prefill rows (LOOKED-AT; simulator/calibration/flashmla_sparse_h200.py fit_iter_l2: 2.76 us a
#: tile at 64 heads against 3.74 from HBM, 2.44 against 2.71 at 128). Judged on grid 6 (20 new shapes, blind, prices
#: committed 8a0e488): 4.0 / 6.6 %, 3 of 3 regimes, against 13.4 / 31.3 %, 1 of 3 (rows of one sequence inside the L2
#: 0.9 / 3.1 against 31.0 / 31.8 %, past it 5.1 / 9.3 against 14.0 / 15.7 %). SHIPPED. False = every gather from HBM
SHARED_ROWS_L2 = True


def priced_on(hw) -> bool:
    """Whether `hw`'s fitted terms carry the tile chain's kinds (their resident CTAs: the wave model prices them)."""
    return all(k in hw.efficiency.cta_slots for k in KINDS)


def kind(heads) -> np.ndarray:
    """The op kind by the kernel's heads: 64-head CTAs or 128-head 2-CTA clusters."""
    return np.where(np.asarray(heads, float) >= 2 * HEAD_TILE, "attn_flashmla_sparse_pair", "attn_flashmla_sparse")


def add_ops(b, batch, s_q, heads, k, lat, kv_lora, kvbytes, act_bytes, act_dtype, count, sms, where=None,
            unique_tokens=None) -> None:
    """One sparse decode launch per layer: `batch` sequences of `s_q` query rows, `heads` the kernel's (padded) query
    heads, `k` index tiles' tokens, latent width `lat` (512 + 64) read at `kvbytes` a value, output `kv_lora` wide.
    flops and bytes as the generic price had them (the body); the busiest part's tiles as serial_iters (the kind's
    iter_us a tile) and its request segments as sync_steps (the kind's sync_us a segment: Q load, output or partial
    store, the barrier before the next request); where a request splits, FlashMLA's combine kernel
    (attn_combine_flashmla: b x s_q x ceil(h / 8) CTAs reading each split's partial output and LSE; with COMBINE_CHAIN
    the kernel's own launch as the dense family prices it: its warps' chain over the splits, PDL). One op per head
    kind. `unique_tokens`: the distinct cached tokens the call's rows gather from, where its rows share sequences (a
    prompt's rows all index that prompt's cache; SHARED_ROWS_L2): every gather past them is an L2 re-read of a working
    set of those tokens, and the tile chain iterates at the kind's L2 time for the share that hits (hwmodels.roofline
    iter_l2); None = every gather from HBM (decode rows of distinct requests)."""
    batch, s_q, heads = (np.broadcast_to(np.asarray(v, float), np.shape(np.asarray(batch, float) * np.asarray(heads, float)))
                         for v in (batch, s_q, heads))
    P = parts(heads, s_q, sms)
    tiles, segs, splits, nsplit_s, pieces_s = (x.astype(float) for x in schedule_arrays(batch, int(k), P))
    R = batch * s_q
    T = float(k)
    ctas = np.ceil(heads / HEAD_TILE) * s_q * P
    kd = kind(heads)
    allowed = np.ones(kd.shape, bool) if where is None else np.broadcast_to(np.asarray(where, bool), kd.shape)
    if COMBINE_CHAIN:   # the requests split and their pieces, by the same scheduler
        nsplit, pieces = nsplit_s, pieces_s
        per_split = np.maximum(pieces / np.maximum(nsplit, 1.0), 1.0)   # pieces of a split request, on average
        written = R * heads * kv_lora * np.where(splits > 1, 4.0 * per_split, act_bytes)
    else:
        written = R * heads * kv_lora * np.where(splits > 1, 4.0 * splits, act_bytes)
    per_token = lat * kvbytes + 4.0
    gathered = R * T * per_token
    if unique_tokens is not None and SHARED_ROWS_L2:   # rows sharing a sequence re-read its tokens (SHARED_ROWS_L2)
        ws = np.minimum(np.broadcast_to(np.asarray(unique_tokens, float), R.shape) * per_token, gathered)
        reread = gathered - ws
    else:
        ws, reread = 0.0, 0.0
    for name in KINDS:
        on = (kd == name) & allowed
        if not on.any():
            continue
        b.add("attention", name, flops=2.0 * R * heads * T * (lat + kv_lora),
              bytes_read=gathered + R * heads * lat * act_bytes, bytes_written=written,
              parallel_units=ctas, serial_iters=tiles, sync_steps=segs, resident_ctas=1.0, dtype=act_dtype,
              reread_bytes=reread, working_set=ws, count=count, where=on)
    split = (splits > 1) & allowed
    if not split.any():
        return
    if COMBINE_CHAIN:   # FlashMLA's combine kernel as the dense family prices it (COMBINE_CHAIN)
        act = nsplit * s_q * ceil_div(heads, COMBINE_HEADS)
        rows = nsplit * s_q * heads
        rd, wr = combine_io(rows, per_split, kv_lora)
        emit(b, [Launch("attention_combine", "attn_combine_flashmla", act, 8.0, np.where(split, ceil_div(splits, 4.0), 0.0),
                        np.where(split, 2.0, 0.0), 3.0 * rows * kv_lora * per_split, rd, wr, dtype="fp32",
                        idle=R * ceil_div(heads, COMBINE_HEADS) - act, hidden_loads=1.0, idle_share=0.0, where=split)],
             sms, count)
        return
    part = R * heads * (kv_lora + 1.0) * 4.0 * splits
    b.add("attention_combine", "attn_combine_flashmla", flops=3.0 * R * heads * kv_lora * splits, bytes_read=part,
          bytes_written=R * heads * kv_lora * act_bytes, parallel_units=R * np.ceil(heads / 8.0), dtype="fp32",
          count=count, where=split)
