"""GVR's pass model: how many phase-2 count passes TensorRT-LLM's Guess-Verify-Refine top-k kernel (gvrTopKKernel,
one CTA per row) makes over a row of N scores, given how well the previous step's top-k predicts this step's.

    kernel_passes(rows, pred, k)      the secant rule of the project's measured kernel
                                      (lab/topk_cta_kernels.cu gvr_topk, P2), on real rows
    secant_search(scores, pred, k)    the same for one row (the trace analysis replays recorded rows through it)
    pass_table(k)                     the shipped table (data/gvr_passes.csv): pass histograms of Gaussian AR(1)
                                      rows per row length, correlation rho and k, built by build_pass_table()
    pass_distribution / passes_for    P(passes = s) and its mean at an overlap or a correlation (the table)
    rho_for_overlap / overlap_for_rho the AR(1) correlation <-> expected raw top-k overlap (the table)
    launch_passes(...)                E[max passes] over the rows of one launch (the launch lasts as long as its
                                      slowest row; MTP rows share one stale preIdx)

`topk: gvr` (simulator.strategies.topk) prices its ops with these counts; simulator.traces.analysis derives
trace statistics with them. The model reads no hardware numbers.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hwmodels.errors import ScenarioError

#: GVR's candidate capacity C. ASSUMPTION: the dispatcher comment gives ~58 KB of shared memory per CTA;
#: 6144 candidates x 8 B (fp32 score + int32 index) + a 2048-bin int histogram = 57,344 B fits that.
GVR_CAPACITY = 6144

#: Phase-2 secant target count per k: TensorRT-LLM heuristic_topk.cuh GvrParams<float, K>::kFTarget, as quoted
#: by lab/measure_topk_cta.py GVR_TARGET (K=512: 512, K=1024: 3072, K=2048: 3072).
GVR_TARGET = {512: 512, 1024: 3072, 2048: 3072}
#: secant passes before the bisection fallback (topk_cta_kernels.cu GVR_MAX_SECANT)
GVR_MAX_SECANT = 12

_BIG = np.float32(3.402823466e38)


def _key_asc(x: np.ndarray) -> np.ndarray:
    """Order-preserving uint32 key of fp32 values (topk_cta_kernels.cu key_asc)."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32)
    return np.where(u & np.uint32(0x80000000), ~u, u | np.uint32(0x80000000)).astype(np.uint32)


def _key_inv(key: np.ndarray) -> np.ndarray:
    k = np.asarray(key, dtype=np.uint32)
    u = np.where(k & np.uint32(0x80000000), k & np.uint32(0x7FFFFFFF), ~k).astype(np.uint32)
    return u.view(np.float32)


def kernel_passes(rows, pred, k: int, capacity: int = GVR_CAPACITY, target: int | None = None,
                  max_secant: int = GVR_MAX_SECANT) -> np.ndarray:
    """Phase-2 count passes of GVR for each row of `rows` [R, N] (fp32 scores) with predicted indices `pred`
    [R, M] — the rule of the project's measured kernel, lab/topk_cta_kernels.cu gvr_topk
    (P2, "the production's secant step"), vectorized over rows:
      T0 = pmean of the predicted scores, bracket [pmin, pmax] with initial counts c(pmin) = M + M/4,
      c(pmax) = 1; a pass counts c(T) = #{x >= T}; stop when k <= c <= capacity; otherwise move the bracket
      end and step T = vlo + (vhi - vlo) f, f = (c_lo - target) / (c_lo - c_hi) clamped to [0.05, 0.95] (and
      <= 0.5 on the first step); after `max_secant` passes or a collapsed bracket: bisection on the
      order-preserving 32-bit key of the verified bounds. fp32 arithmetic as on the device."""
    x = np.asarray(rows, dtype=np.float32)
    if x.ndim != 2:
        raise ValueError("rows must be [R, N]")
    R = x.shape[0]
    p = np.take_along_axis(x, np.asarray(pred), axis=1)
    M = p.shape[1]
    tgt = np.float32(target if target is not None else GVR_TARGET.get(int(k), 3 * int(k) // 2))
    vlo, vhi = p.min(axis=1), p.max(axis=1)
    T = (p.astype(np.float64).sum(axis=1) / M).astype(np.float32)
    clo = np.full(R, M + M // 4, dtype=np.int64)
    chi = np.ones(R, dtype=np.int64)
    lo_ok = np.zeros(R, dtype=bool)
    hi_ok = np.zeros(R, dtype=bool)
    passes = np.zeros(R, dtype=np.int64)
    done = np.zeros(R, dtype=bool)
    active = vlo < vhi
    while active.any():
        i = np.nonzero(active)[0]
        c = (x[i] >= T[i, None]).sum(axis=1)
        passes[i] += 1
        ok = (c >= k) & (c <= capacity)
        done[i[ok]] = True
        high = ~ok & (c > capacity)
        low = ~ok & ~high
        vlo[i[high]], clo[i[high]], lo_ok[i[high]] = T[i[high]], c[high], True
        vhi[i[low]], chi[i[low]], hi_ok[i[low]] = T[i[low]], c[low], True
        go = i[~ok & (passes[i] < max_secant)]
        if len(go) == 0:
            break
        rng = (vhi[go] - vlo[go]).astype(np.float32)
        sec = (clo[go] > chi[go]) & (rng > np.float32(1e-10))
        with np.errstate(divide="ignore", invalid="ignore"):
            f = ((clo[go] - tgt) / (clo[go] - chi[go])).astype(np.float32)
        f = np.clip(f, np.float32(0.05), np.float32(0.95))
        f = np.where(passes[go] == 1, np.minimum(f, np.float32(0.5)), f)
        nv = np.where(sec, vlo[go] + rng * f, np.float32(0.5) * (vlo[go] + vhi[go])).astype(np.float32)
        nv = np.where(nv <= vlo[go], vlo[go] + rng * np.float32(0.05), nv).astype(np.float32)
        nv = np.where(nv >= vhi[go], vhi[go] - rng * np.float32(0.05), nv).astype(np.float32)
        edge = (nv == vlo[go]) | (nv == vhi[go])
        nv = np.where(edge, np.float32(0.5) * (vlo[go] + vhi[go]), nv).astype(np.float32)
        collapsed = (nv == vlo[go]) | (nv == vhi[go])
        T[go] = nv
        active[:] = False
        active[go[~collapsed]] = True
    # bisection fallback on the ascending key (invariant c(lo) >= k, c(hi) < k)
    todo = ~done
    if todo.any():
        lo = np.where(lo_ok, _key_asc(vlo), _key_asc(np.full(R, -_BIG, np.float32))).astype(np.int64)
        hi = np.where(hi_ok, _key_asc(vhi), _key_asc(np.full(R, np.inf, np.float32))).astype(np.int64)
        act = todo & (hi - lo > 1)
        while act.any():
            i = np.nonzero(act)[0]
            mid = lo[i] + (hi[i] - lo[i]) // 2
            t = _key_inv(mid.astype(np.uint32))
            c = (x[i] >= t[:, None]).sum(axis=1)
            passes[i] += 1
            ok = (c >= k) & (c <= capacity)
            done[i[ok]] = True
            up = ~ok & (c > capacity)
            lo[i[up]] = mid[up]
            hi[i[~ok & ~up]] = mid[~ok & ~up]
            act = ~done & (hi - lo > 1)
        passes[~done] += 1   # ties at the k-th value: one last (truncated) count pass
    return passes


def secant_search(scores: np.ndarray, predicted: np.ndarray, k: int, capacity: int = GVR_CAPACITY,
                  max_passes: int = GVR_MAX_SECANT) -> int:
    """Phase-2 count passes for ONE row (kernel_passes on a single row; kept for simulator.traces)."""
    return int(kernel_passes(np.asarray(scores)[None, :], np.asarray(predicted)[None, :], k, capacity,
                             max_secant=max_passes)[0])


# ---- the pass table: synthetic Gaussian rows through kernel_passes, precomputed and shipped -------------
#: Rows are standard normal; the current step's scores are rho * prev + sqrt(1 - rho^2) * noise (the AR(1)
#: drift ASSUMPTION; the same generator as lab/measure_topk_cta.py), preIdx = the top-k of
#: prev ('previous') or k uniform positions ('random'). Each cell holds the histogram of phase-2 passes over
#: PASS_TABLE_ROWS rows and the measured mean raw overlap |top-k(cur) & preIdx| / k. Built by
#: `python -c "from simulator.kernels.gvr_passes import build_pass_table; build_pass_table()"` (~2 min); read in ~10 ms.
PASS_TABLE = Path(__file__).parent / "data" / "gvr_passes.csv"
PASS_TABLE_LENGTHS = (4096, 8192, 12288, 16384, 24576, 32768, 49152, 68665, 100000, 131072, 196608)
PASS_TABLE_RHOS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.725, 0.75, 0.775, 0.8, 0.825, 0.85,
                   0.875, 0.9, 0.925, 0.95, 0.975, 0.99)
PASS_TABLE_KS = (512, 1024, 2048)
PASS_TABLE_ROWS = 256
PASS_TABLE_SEED = 20261122
MAX_PASSES = 48


def pass_cell(n: int, k: int, rhos, rows: int = PASS_TABLE_ROWS, seed: int = PASS_TABLE_SEED) -> list[dict]:
    """Pass histograms for one row length: 'random' preIdx, then 'previous' at every rho of `rhos`."""
    rng = np.random.default_rng([seed, n, k])
    prev = rng.standard_normal((rows, n), dtype=np.float32)
    noise = rng.standard_normal((rows, n), dtype=np.float32)
    r = np.arange(rows)[:, None]
    top_prev = np.argpartition(-prev, k, axis=1)[:, :k]
    rand = np.argpartition(rng.random((rows, n), dtype=np.float32), k, axis=1)[:, :k]
    out = []
    for source, rho in [("random", 0.0)] + [("previous", float(x)) for x in rhos]:
        cur = noise if rho == 0.0 else (np.float32(rho) * prev + np.float32(np.sqrt(1 - rho * rho)) * noise)
        pred = rand if source == "random" else top_prev
        mask = np.zeros((rows, n), dtype=bool)
        mask[r, np.argpartition(-cur, k, axis=1)[:, :k]] = True
        overlap = float(mask[r, pred].sum() / (rows * k))
        p = kernel_passes(cur, pred, k)
        hist = np.bincount(np.minimum(p, MAX_PASSES), minlength=MAX_PASSES + 1)
        out.append({"k": k, "row_len": n, "source": source, "rho": rho, "overlap": round(overlap, 5), "rows": rows,
                    "hist": " ".join(f"{s}:{c}" for s, c in enumerate(hist) if c)})
    return out


def build_pass_table(path: Path = PASS_TABLE, lengths=PASS_TABLE_LENGTHS, ks=PASS_TABLE_KS, rhos=PASS_TABLE_RHOS,
                     rows: int = PASS_TABLE_ROWS) -> Path:
    import pandas as pd

    cells = []
    for k in ks:
        for n in lengths:
            if n >= 2 * k:
                cells += pass_cell(n, k, rhos, rows)
                print(f"k {k} N {n}: done", flush=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(cells).to_csv(path, index=False)
    return path


def _hist_probs(h: str) -> np.ndarray:
    v = np.zeros(MAX_PASSES + 1)
    for item in str(h).split():
        s, c = item.split(":")
        v[int(s)] = float(c)
    return v / v.sum()


@dataclass(frozen=True)
class _PassCells:
    lengths: np.ndarray      # [L] row lengths with cells
    rhos: np.ndarray         # [Q] rho grid ('previous')
    overlap: np.ndarray      # [L, Q] measured mean raw overlap
    probs: np.ndarray        # [L, Q, MAX_PASSES + 1]
    random: np.ndarray       # [L, MAX_PASSES + 1]


@functools.lru_cache(maxsize=4)
def pass_table(k: int) -> _PassCells:
    """The shipped pass table for top-k `k` (ScenarioError when k has no cells)."""
    import pandas as pd

    df = pd.read_csv(PASS_TABLE)
    d = df[df["k"] == int(k)]
    if d.empty:
        raise ScenarioError(f"no GVR pass-table cells for k = {k} (table has k in "
                            f"{sorted(df['k'].unique().tolist())}); rebuild with build-pass-table")
    lengths = np.array(sorted(d["row_len"].unique()), dtype=np.float64)
    prev = d[d["source"] == "previous"]
    rhos = np.array(sorted(prev["rho"].unique()), dtype=np.float64)
    ov = np.zeros((len(lengths), len(rhos)))
    pr = np.zeros((len(lengths), len(rhos), MAX_PASSES + 1))
    rnd = np.zeros((len(lengths), MAX_PASSES + 1))
    for i, n in enumerate(lengths):
        rows = prev[prev["row_len"] == n].set_index("rho").loc[rhos]
        ov[i] = rows["overlap"].to_numpy()
        pr[i] = np.stack([_hist_probs(h) for h in rows["hist"]])
        rnd[i] = _hist_probs(d[(d["row_len"] == n) & (d["source"] == "random")]["hist"].iloc[0])
    return _PassCells(lengths, rhos, ov, pr, rnd)


def _length_weights(t: _PassCells, n: float) -> list[tuple[int, float]]:
    x = np.log2(np.clip(float(n), t.lengths[0], t.lengths[-1]))
    g = np.log2(t.lengths)
    j = int(np.clip(np.searchsorted(g, x) - 1, 0, len(g) - 2))
    w = (x - g[j]) / (g[j + 1] - g[j])
    return [(j, 1.0 - w), (j + 1, w)]


def rho_for_overlap(overlap: float, k: int, n: float) -> float:
    """The AR(1) correlation whose expected raw top-k overlap at row length n is `overlap` (table inversion;
    an overlap at or below the rho = 0 cell, i.e. the random baseline ~k/n, gives 0)."""
    t = pass_table(k)
    ov = sum(w * t.overlap[j] for j, w in _length_weights(t, n))
    ov = np.maximum.accumulate(ov)
    if overlap <= ov[0]:
        return 0.0
    return float(np.interp(overlap, ov, t.rhos))


def overlap_for_rho(rho: float, k: int, n: float) -> float:
    t = pass_table(k)
    ov = sum(w * t.overlap[j] for j, w in _length_weights(t, n))
    return float(np.interp(rho, t.rhos, ov))


def pass_distribution(source: str, k: int, n: float, rho: float = 0.0) -> np.ndarray:
    """P(phase-2 passes = s), s = 0..MAX_PASSES, for one row of length n ('random' preIdx, or 'previous' with
    AR(1) correlation rho); linear in log2(n) between table lengths and in rho between table rhos."""
    t = pass_table(k)
    out = np.zeros(MAX_PASSES + 1)
    for j, w in _length_weights(t, n):
        if w == 0.0:
            continue
        if source == "random":
            out += w * t.random[j]
        else:
            r = float(np.clip(rho, t.rhos[0], t.rhos[-1]))
            q = int(np.clip(np.searchsorted(t.rhos, r) - 1, 0, len(t.rhos) - 2))
            a = (r - t.rhos[q]) / (t.rhos[q + 1] - t.rhos[q])
            out += w * ((1 - a) * t.probs[j, q] + a * t.probs[j, q + 1])
    return out


def expected_max_passes(dists, copies: float = 1.0) -> float:
    """E[max] of independent pass counts: one row per distribution in `dists`, each repeated `copies` times
    (the rows of one launch run as parallel CTAs; the launch lasts as long as its slowest row)."""
    cdf = np.ones(MAX_PASSES + 1)
    for d in dists:
        cdf = cdf * np.cumsum(d) ** copies
    pmf = np.diff(np.concatenate([[0.0], cdf]))
    return float((np.arange(MAX_PASSES + 1) * pmf).sum())


def passes_for(overlap: float, source: str, k: int, length, seed: int = 0) -> np.ndarray:  # noqa: ARG001
    """Mean phase-2 passes at each row length for one row whose preIdx has raw overlap `overlap` ('previous')
    or is random (the table; `seed` is kept for callers of the former Monte Carlo and ignored)."""
    n = np.atleast_1d(np.asarray(length, dtype=np.float64))
    out = np.empty(len(n))
    for i, x in enumerate(n):
        rho = 0.0 if source == "random" else rho_for_overlap(float(overlap), int(k), float(x))
        d = pass_distribution("random" if source == "random" else "previous", int(k), float(x), rho)
        out[i] = float((np.arange(MAX_PASSES + 1) * d).sum())
    return out


def overlap_correlation(overlap: float, k: int, n: int) -> float:
    """Alias of rho_for_overlap (kept for callers of the former bivariate-normal inversion)."""
    return rho_for_overlap(overlap, k, n)


@functools.lru_cache(maxsize=4096)
def launch_passes(inp: tuple, k: int, n: float, batch: float, rows_per_seq: int, stale: bool = True) -> float:
    """E[max phase-2 passes] over the rows of one launch: `batch` sequences x `rows_per_seq` rows; inp =
    (overlap, distribution tuple or None), both None = random preIdx. All rows of a sequence share ONE
    previous top-k (heuristicTopKDecode.cu: rowPreIdx = preIdx + (rowIdx / next_n) * preIdxStride, offset
    (rowIdx % next_n) + 1), so row j is j + 1 steps from it; under the AR(1) drift its correlation is
    rho^(j+1) (ASSUMPTION: staleness compounds like the drift); the launch lasts as long as its slowest row.
    A given distribution (trace, `passes`) replaces the table for row 0 where the overlap is above random."""
    dists, copies = launch_dists(inp, k, n, rows_per_seq, stale)
    return expected_max_passes(dists, batch * copies)


def launch_dists(inp: tuple, k: int, n: float, rows_per_seq: int, stale: bool = True) -> tuple[list, int]:
    """(pass distributions of the rows of ONE sequence, copies of them per sequence) in a launch (launch_passes'
    model): the launch of `batch` sequences has the CDF prod_j cumsum(dists[j]) ** (batch x copies) of its slowest
    row's passes, whose mean is launch_passes. Per-step trace replay draws from that CDF
    (simulator/engine/trace_replay.py)."""
    overlap, dist = inp
    if overlap is None and dist is None:
        return [pass_distribution("random", k, n)], rows_per_seq
    d0 = None if dist is None else np.asarray(dist, dtype=np.float64)
    rho = rho_for_overlap(float(overlap), k, n) if overlap is not None else \
        rho_for_overlap(overlap_of_dist(d0, k, n), k, n)
    dists = [pass_distribution("previous", k, n, rho ** (j + 1 if stale else 1)) for j in range(rows_per_seq)]
    if d0 is not None and rho > 0:
        dists[0] = d0
        if not stale:
            dists = [d0] * rows_per_seq
    return dists, 1


def overlap_of_dist(d: np.ndarray, k: int, n: float) -> float:
    """The overlap whose table distribution has the same mean passes as `d` (for staleness of a given
    distribution; the nearest in mean)."""
    t = pass_table(k)
    mean = float((np.arange(MAX_PASSES + 1) * d).sum())
    means = np.array([float((np.arange(MAX_PASSES + 1) * pass_distribution("previous", k, n, r)).sum())
                      for r in t.rhos])
    return overlap_for_rho(float(t.rhos[int(np.argmin(np.abs(means - mean)))]), k, n)


#: rho_for_overlap per (overlap, k) and row length, kept across calls (a surface prices the same lengths row after row)
_RHO_MEMO: dict = {}


def launch_passes_array(inp: tuple, k: int, n, batch, rows_per_seq: int, stale: bool = True) -> np.ndarray:
    """launch_passes for arrays of row lengths `n` and launch sizes `batch` (equal length), the same numbers
    (bit for bit): the table lookups and the E[max] are vectorized over the settings, for an overlap given as a
    number (with or without a pass distribution for row 0) or a random preIdx (inp = (None, None)); a distribution
    without an overlap takes launch_passes setting by setting."""
    n = np.asarray(n, dtype=np.float64)
    batch = np.asarray(batch, dtype=np.float64)
    overlap, dist = inp
    if (dist is not None and overlap is None) or len(n) == 0:
        return np.array([launch_passes(inp, k, float(x), float(y), rows_per_seq, stale) for x, y in zip(n, batch)])
    t = pass_table(k)
    x = np.log2(np.clip(n, t.lengths[0], t.lengths[-1]))
    g = np.log2(t.lengths)
    j = np.clip(np.searchsorted(g, x) - 1, 0, len(g) - 2)
    w = (x - g[j]) / (g[j + 1] - g[j])
    if overlap is None:   # random preIdx: the 'random' cells
        d = _mix(np.zeros((len(n), MAX_PASSES + 1)), j, w, lambda jj: t.random[jj])
        return _expected_max_rows([d], batch * rows_per_seq)
    # rho per setting (rho_for_overlap), one interpolation per distinct row length
    ov = 0 + (1.0 - w)[:, None] * t.overlap[j] + w[:, None] * t.overlap[j + 1]
    ov = np.maximum.accumulate(ov, axis=1)
    uniq, first, inv = np.unique(n, return_index=True, return_inverse=True)
    memo = _RHO_MEMO.setdefault((float(overlap), int(k)), {})
    if len(memo) > 1 << 20:
        memo.clear()
    rho_u = np.empty(len(uniq))
    for u, (x_, i) in enumerate(zip(uniq.tolist(), first.tolist())):
        r = memo.get(x_)
        if r is None:
            r = memo[x_] = 0.0 if float(overlap) <= ov[i, 0] else float(np.interp(float(overlap), ov[i], t.rhos))
        rho_u[u] = r
    rho = rho_u[inv]
    dists = []
    for r_ in range(rows_per_seq):
        r = rho ** (r_ + 1 if stale else 1)
        r = np.clip(r, t.rhos[0], t.rhos[-1])
        q = np.clip(np.searchsorted(t.rhos, r) - 1, 0, len(t.rhos) - 2)
        a = ((r - t.rhos[q]) / (t.rhos[q + 1] - t.rhos[q]))[:, None]
        dists.append(_mix(np.zeros((len(n), MAX_PASSES + 1)), j, w,
                          lambda jj, q=q, a=a: (1 - a) * t.probs[jj, q] + a * t.probs[jj, q + 1]))
    if dist is not None:   # a given distribution (trace, `passes`) replaces row 0's where the overlap is above random
        d0 = np.asarray(dist, dtype=np.float64)[None, :]
        pos = (rho > 0)[:, None]
        dists = [np.where(pos, d0, d) if (i == 0 or not stale) else d for i, d in enumerate(dists)]
    return _expected_max_rows(dists, batch)


def _mix(out: np.ndarray, j: np.ndarray, w: np.ndarray, cell) -> np.ndarray:
    """pass_distribution's sum over the two table lengths around n (weights 1 - w and w; a zero weight skipped)."""
    for jj, ww in ((j, 1.0 - w), (j + 1, w)):
        add = ww != 0.0
        if add.any():
            out = np.where(add[:, None], out + ww[:, None] * cell(jj), out)
    return out


def _expected_max_rows(dists: list, copies: np.ndarray) -> np.ndarray:
    """expected_max_passes per setting: dists[i][s] is row i's distribution in setting s, copies[s] its copies."""
    cdf = np.ones_like(dists[0])
    c = np.asarray(copies, dtype=np.float64)[:, None]
    for d in dists:
        cdf = cdf * np.cumsum(d, axis=1) ** c
    pmf = np.diff(np.concatenate([np.zeros((len(cdf), 1)), cdf], axis=1), axis=1)
    return (np.arange(MAX_PASSES + 1) * pmf).sum(axis=1)

