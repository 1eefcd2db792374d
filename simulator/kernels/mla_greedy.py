"""FlashInfer's MLAPlan work assignment replayed for many call shapes at once (numpy).

MLAPlan (include/flashinfer/attention/scheduler.cuh @ flashinfer f1e6fdcb, the module docstring of
simulator/kernels/flashinfer.py) cuts every (request, cluster q tile) KV range into pieces of at most kv_len_limit
tokens and hands each piece, in plan order, to the cluster of least accumulated cost (a MinHeap of (cost, cluster):
the lowest cost, the lowest index among equals), cost_function = 2 x cluster tile rows + the piece's tokens. The
kernel's time follows the cluster that ends with the largest cost (the heap's max: the largest cost, the highest index
among equals), so the price needs that cluster's items, KV tokens, 64-token stages, stage units (a partial last stage
counted as share + (1 - share) x its part of 64 tokens) and first-stage tokens (min(n, 64) per item).

`busiest` replays that greedy for every shape of a batch at once: exactly the heap's choices (the costs are sums of
whole numbers, exact in float64). The first `clusters` pieces go to clusters 0, 1, ... in order (every cost is 0
then); later pieces a round of `clusters` at a time, to the clusters in (cost, index) order, wherever that is what
the heap would do piece by piece (every cluster served earlier in the round then costs more than the next one: on the
causal plan's nearly sorted pieces, almost always), else piece by piece (argmin: the lowest index among equals).
simulator/kernels/flashinfer.py _mla_assign is the one-shape reference it is tested against.
"""
from __future__ import annotations

import numpy as np

#: the kernel's KV stage (mla_hopper.cuh CTA_TILE_KV)
TILE_KV = 64.0
#: the most piece slots a block of shapes holds at once (shapes x pieces), to bound the replay's memory
BLOCK_SLOTS = 4_000_000


def piece_stats(sizes: np.ndarray, share: float) -> np.ndarray:
    """(5, ...) per piece of `sizes` tokens: items (1), tokens, 64-token stages, stage units, first-stage tokens."""
    full, part = np.divmod(sizes, TILE_KV)
    units = full + np.where(part > 0, share + (1.0 - share) * part / TILE_KV, 0.0)
    return np.stack([np.ones_like(sizes), sizes, np.ceil(sizes / TILE_KV), units, np.minimum(sizes, TILE_KV)])


def busiest(sizes: np.ndarray, counts: np.ndarray, clusters: np.ndarray, tile_rows: np.ndarray,
            share: float) -> np.ndarray:
    """The busiest cluster's (items, tokens, stages, stage units, first-stage tokens), shape (5, S), of S greedy
    assignments: row s hands its first counts[s] pieces (sizes[s, :counts[s]], tokens, in plan order) to
    clusters[s] clusters at cost 2 x tile_rows[s] + tokens each."""
    sizes = np.asarray(sizes, dtype=np.float64)
    S = sizes.shape[0]
    out = np.zeros((5, S))
    counts = np.asarray(counts, dtype=np.int64)
    clusters = np.asarray(clusters, dtype=np.int64)
    for c in np.unique(clusters):
        rows = np.flatnonzero(clusters == c)
        out[:, rows] = _busiest_one_width(sizes[rows], counts[rows], int(c),
                                          2.0 * np.asarray(tile_rows, dtype=np.float64)[rows], share)
    return out


def _busiest_one_width(sizes, counts, C: int, w, share: float) -> np.ndarray:
    """busiest for rows that share one cluster count C: the first round dealt in index order, then round by round
    (_deal_round)."""
    order = np.argsort(-counts, kind="stable")           # longest rows first: the rows still dealing form a prefix
    sizes, counts, w = sizes[order], counts[order], w[order]
    S, N = sizes.shape
    per = piece_stats(sizes, share)                      # (5, S, N)
    valid = np.arange(N)[None, :] < counts[:, None]
    cost = np.zeros((S, C))
    acc = np.zeros((5, S, C))
    k0 = min(N, C)                                       # the first round: piece k to cluster k
    head = valid[:, :k0]
    cost[:, :k0] += np.where(head, w[:, None] + sizes[:, :k0], 0.0)
    acc[:, :, :k0] += np.where(head[None], per[:, :, :k0], 0.0)
    for k in range(C, N, C):
        n = int(np.searchsorted(-counts, -k, side="left"))   # rows with more than k pieces
        _deal_round(cost[:n], acc[:, :n], sizes[:n, k:k + C], per[:, :n, k:k + C], valid[:n, k:k + C], w[:n])
    top = cost.max(axis=1)
    last = C - 1 - np.argmax((cost == top[:, None])[:, ::-1], axis=1)   # the highest index of the largest cost
    res = acc[:, np.arange(S), last]
    out = np.empty_like(res)
    out[:, order] = res
    return out


def _deal_round(cost, acc, sizes, per, valid, w) -> None:
    """Hand the next m <= C pieces of every row (in place). The greedy gives piece i of the round to the i-th cluster
    in (cost, index) order whenever every cluster served earlier in the round then costs more than that cluster
    (strictly: an equal cost would go to the lower index); a row where that fails is dealt piece by piece."""
    n, m = sizes.shape
    r = np.arange(n)[:, None]
    srt = np.argsort(cost, axis=1, kind="stable")[:, :m]                 # (cost, index) order
    before = cost[r, srt]
    after = np.where(valid, before + w[:, None] + sizes, np.inf)
    earlier = np.minimum.accumulate(np.concatenate([np.full((n, 1), np.inf), after[:, :-1]], axis=1), axis=1)
    ok = ~np.any(valid & (earlier <= before), axis=1)
    if ok.any():
        rows = np.flatnonzero(ok)
        rr, ss = r[rows], srt[rows]
        cost[rr, ss] = np.where(valid[rows], after[rows], before[rows])
        acc[:, rr, ss] += np.where(valid[None, rows], per[:, rows], 0.0)
    for i in range(m):                                   # the rest, one piece at a time (argmin: the lowest index)
        rows = np.flatnonzero(~ok & valid[:, i])
        if not rows.size:
            continue
        idx = np.argmin(cost[rows], axis=1)
        cost[rows, idx] += w[rows] + sizes[rows, i]
        acc[:, rows, idx] += per[:, rows, i]


def decode_busiest(tiles, limit, T, clusters, tile_rows, share: float) -> np.ndarray:
    """busiest for decode / verification calls: `tiles` identical KV ranges of T tokens (every (request, q tile)),
    each cut into max(ceil(T / limit), 1) pieces (limit, ..., the remainder). Unsplit calls (one piece a range: every
    cost equal, a round robin) in closed form: the busiest holds ceil(tiles / clusters) pieces; split ones replayed
    (busiest; fewer than 2 x clusters pieces, since kv_len_limit >= the tokens a cluster)."""
    tiles, limit, T, clusters, tile_rows = np.broadcast_arrays(
        *(np.asarray(x, dtype=np.float64) for x in (tiles, limit, T, clusters, tile_rows)))
    shp = tiles.shape
    tiles, limit, T, clusters, tile_rows = (x.ravel() for x in (tiles, limit, T, clusters, tile_rows))
    p = np.maximum(np.ceil(T / limit), 1.0)
    out = np.zeros((5, tiles.size))
    one = p <= 1.0
    if one.any():
        out[:, one] = np.ceil(tiles[one] / clusters[one]) * piece_stats(T[one], share)
    if (~one).any():
        m = ~one
        key = np.stack([tiles[m], limit[m], T[m], clusters[m], tile_rows[m]], axis=1)
        uniq, inv = np.unique(key, axis=0, return_inverse=True)
        k, lim, t, c, tr = uniq.T
        pp = np.ceil(t / lim)
        counts = (k * pp).astype(np.int64)
        j = np.arange(int(counts.max()))[None, :]
        within = j % pp[:, None]                          # the piece's place in its range
        sizes = np.where(within < pp[:, None] - 1, lim[:, None], t[:, None] - (pp[:, None] - 1) * lim[:, None])
        out[:, m] = busiest(sizes, counts, c, tr, share)[:, inv.ravel()]
    return out.reshape((5,) + shp)
