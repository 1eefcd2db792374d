"""Compute the catalog's statistics (simulator.traces.stats.CATALOG) from an AttentionTrace, and load a trace
file's statistics (load_stats: from the cache beside it, else computed).

Set statistics (overlaps, unions, Jaccard) come from the stored selections, vectorized over rows: every
element of a row set becomes a key (pair or group id) * U + unit index, and intersections / unions are
counts of shared / distinct keys (np.intersect1d, np.unique). Mass statistics come from the trace's
record-time measurements (format.py: measure.*). Only pairs of CONSECUTIVE decode steps enter step-to-step
statistics; rows whose selection is shorter than k (a context shorter than k) are left out of top-k overlaps.
"""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from hwmodels.errors import SparsesimError
from simulator.dtw import monotonic_dtw
from simulator.kernels.gvr_passes import passes_for, secant_search
from simulator.traces.format import AttentionTrace, Selection, read_trace, spec_k
from simulator.traces.recorder import traversal_orders
from simulator.traces.requests import TraceError
from simulator.traces.stats import SAMPLES, TraceStats, file_digest, read_stats, stats_path

ORDERS = ("bfs", "dfs", "position_sorted")
GROUPS = (2, 4, 8)
INTERVALS = (1, 2, 4, 8, 16)
STEP_BINS = 4
#: GVR's candidate capacity relative to k (TensorRT-LLM KernelSmemTplK<float, 6144, 2048>: C = 3k)
GVR_CAPACITY_PER_K = 3


def _nanmean(a, axis=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(np.asarray(a, dtype=np.float64), axis=axis)


def _units(sel: Selection) -> int:
    return int(sel.indices.max()) + 3 if sel.indices.size else 3


def _gather(sel: Selection, rows: np.ndarray, key: np.ndarray, U: int, shift: int = 0) -> np.ndarray:
    """Keys key[i] * U + index (+ shift) of every element of the rows `rows`."""
    off = sel.offsets
    counts = sel.counts.reshape(-1)[rows]
    starts = off[rows]
    total = int(counts.sum())
    pos = np.repeat(starts - np.concatenate([[0], np.cumsum(counts)[:-1]]), counts) + np.arange(total)
    return np.repeat(key, counts) * U + sel.indices[pos] + shift


def pair_intersections(sel: Selection, a: np.ndarray, b: np.ndarray, shift_b: int = 0) -> np.ndarray:
    """|row a[i] & (row b[i] + shift_b)| for every pair i (vectorized; shift_b in {0, 1})."""
    a = np.asarray(a, np.int64).reshape(-1)
    b = np.asarray(b, np.int64).reshape(-1)
    if not a.size:
        return np.zeros(0, np.int64)
    U = _units(sel)
    pid = np.arange(a.size)
    ka = _gather(sel, a, pid, U)
    kb = _gather(sel, b, pid, U, shift_b)
    common = np.intersect1d(ka, kb, assume_unique=True)
    return np.bincount(common // U, minlength=a.size)


def group_unions(sel: Selection, rows: np.ndarray, group: np.ndarray, n_groups: int) -> np.ndarray:
    """Number of distinct units over the rows of each group (rows[i] belongs to group[i])."""
    U = _units(sel)
    keys = np.sort(_gather(sel, np.asarray(rows, np.int64), np.asarray(group, np.int64), U))
    first = np.ones(keys.size, dtype=bool)
    first[1:] = keys[1:] != keys[:-1]           # sort-based distinct (np.unique's hash path is slow here)
    return np.bincount(keys[first] // U, minlength=n_groups)


def _subsample(v: np.ndarray) -> np.ndarray:
    """<= SAMPLES evenly spaced values of v (sorted by value first, so the subsample keeps the distribution);
    padded with NaN to SAMPLES."""
    v = np.asarray(v, np.float64)
    v = np.sort(v[np.isfinite(v)])
    out = np.full(SAMPLES, np.nan)
    if v.size == 0:
        return out
    if v.size <= SAMPLES:
        out[:v.size] = v
    else:
        out[:] = v[np.linspace(0, v.size - 1, SAMPLES).round().astype(int)]
    return out


def _row_ids(S, L, H, Q):
    return np.arange(S * L * H * Q).reshape(S, L, H, Q)


def _step_overlaps(tr: AttentionTrace, sel: Selection, shift: int = 0, k: int | None = None):
    """[pairs, L, H] overlap fraction |cur & (prev + shift)| / |cur| over consecutive step pairs (NaN where the
    current row holds fewer than k units)."""
    S, L, H, Q = sel.shape
    cons = tr.consecutive()
    if not cons.size:
        return np.zeros((0, L, H))
    ids = _row_ids(S, L, H, Q)[..., 0]
    a, b = ids[cons], ids[cons - 1]
    inter = pair_intersections(sel, a, b, shift).reshape(a.shape)
    cnt = sel.counts[..., 0][cons].astype(np.float64)
    out = inter / np.maximum(cnt, 1)
    if k is not None:
        out = np.where(cnt >= k, out, np.nan)
    return out


def compute_stats(tr: AttentionTrace, digest: str = "") -> TraceStats:
    v: dict[str, np.ndarray] = {}
    coords: dict[str, tuple] = {}
    notes: list[str] = []
    L, H = tr.layers, tr.kv_heads
    T_mean = float(np.mean(tr.positions)) if tr.steps else float("nan")
    ms = tr.measures
    # ---- token top-k --------------------------------------------------------------------------------
    if "topk" in tr.selections:
        sel = tr.selections["topk"]
        tiers = sel.tiers or [sel.k]
        coords["k"] = tuple(int(t) for t in tiers)
        raw, shf, rawh, raws, shs, lift = [], [], [], [], [], []
        for k in tiers:
            sk = sel.restricted(k) if sel.tiers else sel
            o = _step_overlaps(tr, sk, 0, k)
            so = _step_overlaps(tr, sk, 1, k)
            raw.append(_nanmean(o, (0, 2)))
            shf.append(_nanmean(so, (0, 2)))
            rawh.append(_nanmean(o, 0))
            raws.append(np.stack([_subsample(o[:, layer, :]) for layer in range(L)]))
            shs.append(np.stack([_subsample(so[:, layer, :]) for layer in range(L)]))
            cons = tr.consecutive()
            Tn = tr.positions[cons].astype(np.float64)[:, None, None] if cons.size else np.ones((0, 1, 1))
            lift.append(_nanmean(o / (k / Tn), (0, 2)) if cons.size else np.full(L, np.nan))
        v["topk.overlap_raw"] = np.array(raw)
        v["topk.overlap_shifted"] = np.array(shf)
        v["topk.overlap_raw_head"] = np.array(rawh)
        v["topk.overlap_raw_samples"] = np.array(raws)
        v["topk.overlap_shifted_samples"] = np.array(shs)
        v["topk.random_overlap"] = np.array([k / T_mean for k in tiers])
        v["topk.prev_hit_lift"] = np.array(lift)
        if "prevmass_topk" in ms and "mass_topk" in ms:
            pm, own = ms["prevmass_topk"].astype(np.float64), ms["mass_topk"].astype(np.float64)
            own = np.where(np.isfinite(pm), own, np.nan)
            v["topk.prev_hit_mass"] = (_nanmean(pm, (0, 2)) / np.maximum(_nanmean(own, (0, 2)), 1e-12)).T  # [k, L]
            v["attn.topk_mass"] = _nanmean(ms["mass_topk"], (0, 2)).T
    # ---- GVR on full rows ---------------------------------------------------------------------------
    if "gvr_rows" in ms:
        rows, prev, key = ms["gvr_rows"], ms["gvr_prev"], ms["gvr_key"]
        ratio = np.full(len(rows), np.nan)
        passes = np.full(len(rows), np.nan)
        for i in range(len(rows)):
            T = int(tr.positions[int(key[i, 0])])
            s = rows[i, :T].astype(np.float64)
            pr = prev[i][(prev[i] >= 0) & (prev[i] < T)].astype(np.int64)
            k = len(prev[i])
            if not np.isfinite(s).all() or len(pr) < k or 3 * k > T:
                continue
            ratio[i] = (s >= s[pr].mean()).sum() / k
            passes[i] = secant_search(s, pr, k, GVR_CAPACITY_PER_K * k)
        lay = key[:, 1]
        v["gvr.guess_count_ratio"] = np.stack([_subsample(ratio[lay == layer]) for layer in range(L)])
        v["gvr.passes_rows"] = np.stack([_subsample(passes[lay == layer]) for layer in range(L)])
        notes.append(f"gvr: {int(np.isfinite(passes).sum())} full rows replayed through topk.secant_search "
                     f"(k = {prev.shape[1]}, capacity = {GVR_CAPACITY_PER_K}k)")
    if "topk.overlap_raw" in v and "gvr_rows" in ms:
        k = int(coords["k"][-1])
        try:
            pm = [float(passes_for(float(ov), "previous", k, np.array([T_mean]))[0]) if np.isfinite(ov) else np.nan
                  for ov in v["topk.overlap_raw"][-1]]
            v["gvr.passes_model"] = np.array(pm)
        except SparsesimError as e:
            notes.append(f"gvr.passes_model not computed: {e}")
    # ---- NSA decode rows and cross-layer reuse -----------------------------------------------------------
    if "nsa" in tr.selections:
        sel = tr.selections["nsa"]
        o = _step_overlaps(tr, sel, 0)
        v["nsa.overlap_step"] = _nanmean(o, (0, 2)) if o.size else np.full(L, np.nan)
        S = sel.shape[0]
        ids = _row_ids(S, L, H, 1)[..., 0]
        nl = max(1, min(4, L - 1))
        coords["layer_lag"] = tuple(range(1, nl + 1))
        jac = np.full((nl, L), np.nan)
        rec = np.full((nl, L), np.nan)
        for lag in range(1, nl + 1):
            a, b = ids[:, :L - lag], ids[:, lag:]
            inter = pair_intersections(sel, a, b).reshape(a.shape).astype(np.float64)
            ca = sel.counts[:, :L - lag, :, 0].astype(np.float64)
            cb = sel.counts[:, lag:, :, 0].astype(np.float64)
            jac[lag - 1, :L - lag] = _nanmean(inter / np.maximum(ca + cb - inter, 1), (0, 2))
            rec[lag - 1, :L - lag] = _nanmean(inter / np.maximum(cb, 1), (0, 2))
        v["ssv.cross_layer_jaccard"] = jac
        v["ssv.reuse_recall"] = rec
        if "reuse_nsa" in ms:
            rm = _nanmean(ms["reuse_nsa"], (0, 2)).T                                 # [layer_lag, L]
            v["ssv.reuse_mass"] = rm[:nl]
    # ---- SSV: adjacent rows of a verification round -----------------------------------------------------
    if "nsa_tree" in tr.selections:
        sel = tr.selections["nsa_tree"]
        S, _, _, Q = sel.shape
        parent = list(sel.params.get("tree_parent", [-1] + list(range(Q - 1))))
        score = ms.get("tree_score")
        orders = {o: np.stack([traversal_orders(parent, None if score is None else score[s])[o] for s in range(S)])
                  for o in ORDERS}                                                  # [S, Q] each
        coords["order"] = ORDERS
        coords["C"] = GROUPS
        ids = _row_ids(S, L, H, Q)
        adj, adjs = [], []
        ur = np.full((len(ORDERS), len(GROUPS), L), np.nan)
        urs = np.full((len(ORDERS), len(GROUPS), L, SAMPLES), np.nan)
        fl = np.full((len(ORDERS), len(GROUPS), L), np.nan)
        n_row = sel.counts.astype(np.float64)                                       # [S, L, H, Q]
        for oi, oname in enumerate(ORDERS):
            od = orders[oname]
            perm_ids = np.take_along_axis(ids, od[:, None, None, :].repeat(L, 1).repeat(H, 2), -1)   # [S, L, H, Q]
            perm_n = np.take_along_axis(n_row, od[:, None, None, :].repeat(L, 1).repeat(H, 2), -1)
            a, b = perm_ids[..., :-1], perm_ids[..., 1:]
            inter = pair_intersections(sel, a, b).reshape(a.shape)
            frac = inter / np.maximum(np.minimum(perm_n[..., :-1], perm_n[..., 1:]), 1)
            adj.append(_nanmean(frac, (0, 2, 3)))
            adjs.append(np.stack([_subsample(frac[:, layer]) for layer in range(L)]))
            for ci, C in enumerate(GROUPS):
                gq = np.arange(Q) // C                                                # group of each ordered row
                ng = int(gq.max()) + 1
                gid = ((np.arange(S)[:, None, None, None] * L + np.arange(L)[None, :, None, None]) * H
                       + np.arange(H)[None, None, :, None]) * ng + gq[None, None, None, :]
                un = group_unions(sel, perm_ids.reshape(-1), gid.reshape(-1), S * L * H * ng).reshape(S, L, H, ng)
                nsum = np.zeros((S, L, H, ng))
                np.add.at(nsum, (slice(None), slice(None), slice(None), gq), perm_n)
                nmean = nsum / np.bincount(gq, minlength=ng)[None, None, None, :]
                ratio = un / np.maximum(nmean, 1)
                ur[oi, ci] = _nanmean(ratio, (0, 2, 3))
                for layer in range(L):
                    urs[oi, ci, layer] = _subsample(ratio[:, layer])
                fl[oi, ci] = un.sum(axis=(0, 2, 3)) / np.maximum(nsum.sum(axis=(0, 2, 3)), 1)
        v["ssv.adjacent_overlap"] = np.array(adj)
        v["ssv.adjacent_overlap_samples"] = np.array(adjs)
        v["ssv.union_ratio"] = ur
        v["ssv.union_ratio_samples"] = urs
        v["ssv.f_load"] = fl
        Cs = np.array(GROUPS, np.float64)[None, :, None]
        v["ssv.gamma_eff"] = np.clip(1.0 - (Cs * fl - 1.0) / (Cs - 1.0), 0.0, 1.0)
    # ---- LServe / Quest -------------------------------------------------------------------------------
    if "reuse_lserve" in ms and "mass_lserve" in ms:
        # ratio of means (a selection made from min-max estimates is not mass-optimal, so an old selection can
        # capture more than the fresh one in a single row; the ratio of means stays interpretable)
        rl = ms["reuse_lserve"].astype(np.float64)
        own = np.where(np.isfinite(rl), ms["mass_lserve"].astype(np.float64)[..., None], np.nan)
        rr = (_nanmean(rl, (0, 2)) / np.maximum(_nanmean(own, (0, 2)), 1e-12)).T       # [step_lag, L]
        v["lserve.reuse_recall"] = rr
        coords["step_lag"] = tuple(range(rr.shape[0]))
        ints = tuple(i for i in INTERVALS if i <= rr.shape[0])
        coords["interval"] = ints
        v["lserve.interval_recall"] = np.array([_nanmean(rr[:i], 0) for i in ints])
    for key, stat in (("mass_lserve", "lserve.mass"), ("mass_quest", "quest.mass"),
                      ("inflation_lserve", "lserve.page_inflation"), ("mass_streaming", "streaming.mass"),
                      ("sink_mass", "attn.sink_mass"), ("local_mass", "attn.local_mass"),
                      ("entropy_bits", "attn.entropy_bits")):
        if key in ms:
            v[stat] = _nanmean(ms[key], (0, 2))
    if "lserve" in tr.selections:
        o = _step_overlaps(tr, tr.selections["lserve"], 0)
        v["lserve.step_overlap"] = _nanmean(o, (0, 2)) if o.size else np.full(L, np.nan)
    # ---- SnapKV -------------------------------------------------------------------------------------
    if "snapkv_recall" in ms:
        sr = ms["snapkv_recall"].astype(np.float64)                                  # [S, L, H, budget]
        coords["budget"] = tuple(tr.coords("budget"))
        v["snapkv.recall"] = _nanmean(sr, (0, 2)).T
        step_no = tr.step_index % 1_000_000
        edges = np.linspace(0, step_no.max() + 1, STEP_BINS + 1)
        b = np.clip(np.searchsorted(edges, step_no, side="right") - 1, 0, STEP_BINS - 1)
        coords["step_bin"] = tuple(int(e) for e in edges[:-1])
        v["snapkv.recall_decay"] = np.array([[_nanmean(sr[b == i][..., j]) if (b == i).any() else np.nan
                                              for i in range(STEP_BINS)] for j in range(sr.shape[-1])])
    # ---- speculation ----------------------------------------------------------------------------------
    if tr.accepted is not None and len(tr.accepted):
        acc = tr.accepted
        K = spec_k(tr.meta)
        v["spec.accept_len_samples"] = acc.astype(np.float64)
        coords["length"] = tuple(range(K + 1))
        coords["round"] = tuple()
        v["spec.accept_hist"] = np.bincount(acc, minlength=K + 1)[:K + 1] / len(acc)
        reached = np.array([(acc >= i).sum() for i in range(K)], np.float64)
        passed = np.array([(acc >= i + 1).sum() for i in range(K)], np.float64)
        v["spec.accept_rate"] = np.array([passed.sum() / max(reached.sum(), 1)])
        v["spec.tokens_per_round"] = np.array([acc.mean() + 1.0])
    # ---- SpecAttn --------------------------------------------------------------------------------------
    if "specattn_kl" in ms:
        kl = _nanmean(ms["specattn_kl"], 0)                                          # [Ld, L]
        v["specattn.kl"] = kl
        mapping, _ = monotonic_dtw(-kl)
        v["specattn.layer_map"] = mapping.astype(np.float64)
        v["specattn.mapped_draft_layers"] = np.array([float(len(np.unique(mapping)))])
        coords["p"] = tuple(tr.coords("p"))
        kept = _nanmean(ms["specattn_kept"], 0)                                      # [Ld, p]
        mass = _nanmean(ms["specattn_mass"], 0)                                      # [Ld, L, p]
        agree = _nanmean(ms["specattn_agree"], 0)                                    # [Ld, L]
        j = np.arange(L)
        v["specattn.kept_fraction"] = kept[mapping].T                                # [p, L]
        v["specattn.target_mass"] = mass[mapping, j].T                              # [p, L]
        v["specattn.agreement"] = agree[mapping, j]
    meta = {"model": dict(tr.meta["model"]), "context": dict(tr.meta["context"]), "steps": tr.steps,
            "made": dict(tr.meta["made"]), "provenance": tr.meta.get("provenance", ""),
            "policies": {k: p.get("params", {}) | {"k": p.get("k"), "block_size": p.get("block_size")}
                         for k, p in tr.meta["policies"].items()},
            "mean_context": T_mean}
    if "draft_model" in tr.meta:
        meta["draft_model"] = dict(tr.meta["draft_model"])
    if tr.meta.get("synthetic"):
        meta["synthetic"] = tr.meta["synthetic"]
    return TraceStats(name=tr.name, file=tr.file, source=tr.source, meta=meta,
                      values={k: np.asarray(x, dtype=np.float64) for k, x in v.items()},
                      coords=coords, digest=digest, notes=tuple(notes))


_MEMO: dict[tuple[str, str], TraceStats] = {}


def load_stats(trace_path: str | Path, *, write_cache: bool = True, recompute: bool = False) -> TraceStats:
    """TraceStats of a trace file: from the cache beside it when it matches the file's digest, else computed
    (compute_stats) and the cache written when the folder is writable."""
    trace_path = Path(trace_path)
    if not trace_path.is_file():
        raise TraceError("is not a regular file (a device, a pipe or a folder?)" if trace_path.exists()
                         else "no such trace file", file=str(trace_path))
    digest = file_digest(trace_path)
    key = (str(trace_path.resolve()), digest)
    if not recompute and key in _MEMO:
        return _MEMO[key]
    cached = None if recompute else read_stats(stats_path(trace_path), digest)
    if cached is not None:
        ts = TraceStats(name=cached.name, file=str(trace_path), source=cached.source, meta=cached.meta,
                        values=cached.values, coords=cached.coords, digest=digest, notes=cached.notes)
    else:
        ts = compute_stats(read_trace(trace_path), digest=digest)
        if write_cache:
            try:
                ts.save(stats_path(trace_path))
            except OSError:
                pass  # a read-only folder (an installed package): the statistics are still returned
    _MEMO[key] = ts
    return ts
