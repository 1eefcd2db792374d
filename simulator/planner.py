"""The strategy-tuple space of a scenario: enumerate, refuse with reasons, price, rank.

Categorical axes (hardware, model, every strategy axis, KV and weight dtype, parallelism) form the
Cartesian product of Combos (`combos`); numeric axes (batch, context, output length) are priced together
as arrays under each Combo. A combination that makes no sense is skipped with a stated reason, and every
skip is counted in `SweepResult.skipped` — nothing is dropped silently.

How a sweep is priced (`evaluate`):
  chunks   the tuples, in enumeration order, are cut into chunks of about CHUNK_SETTINGS settings; a chunk
           is the unit of work (serial, or one task on a Dask cluster: simulator.parallel) and of memory
  groups   inside a chunk, tuples that share a structure (hardware, model, dtypes, ep, attention DP, launch,
           kernels, trace, every strategy's class and its non-array parameters; TP too unless every strategy
           is array-safe) are priced as ONE op table through one combo whose varying fields are arrays
           with one value per setting (docs/VECTOR_COMBOS.md); the strategy hooks run once per group
  pricing  the groups of a chunk that share hardware and launch mode are priced by one roofline call
  table    each chunk yields numeric columns and per-tuple label codes; the result table is built once at
           the end (categorical label columns, np.repeat), or streamed to Parquet chunk by chunk
Every number equals what pricing the tuples one at a time gives (tests/test_sweep_equivalence.py), and the
row order is the enumeration order, whatever the chunking or the number of Dask workers.
"""
from __future__ import annotations

import itertools
import math
import weakref
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

# combo_refusal and onchip_overflow live in simulator.combo; they stay reachable as simulator.planner.combo_refusal /
# onchip_overflow (their former home, public API)
from simulator.combo import Combo, combo_of, combo_refusal, onchip_overflow
from simulator.parallel import map_ordered
from simulator.pricing import KIND_COLUMNS, RESULT_COLUMNS, TAIL_COLUMNS, breakdown_frame, build_group, finish_groups
from simulator.scenario import RANK_BY, Scenario, numeric_grid
from simulator.strategies.base import AXES

#: Settings (rows of the result table) per chunk of work: bounds the op tables in memory at a time
#: (~30 op rows per setting for a dense model with its prefill: ~1M rows x 12 float columns) and is the task size on Dask.
CHUNK_SETTINGS = 1 << 15

#: label columns of the result table, in order (then the numeric columns)
LABEL_COLUMNS = ("hardware", "model", "strategy", *AXES, "kv_dtype", "weight_dtype", "tp", "ep", "attn_dp",
                 "parallel", "launch")
INT_LABELS = ("tp", "ep", "attn_dp")
STR_LABELS = tuple(c for c in LABEL_COLUMNS if c not in INT_LABELS)
GRID_COLUMNS = ("batch", "context", "output_tokens")


@dataclass
class SweepResult:
    """Priced settings (one row per combo x batch x context x output length) and what was skipped.

    After a streamed sweep (`evaluate(..., parquet=PATH)`) `results` is None: the rows are in `parquet`;
    `rows` counts them and `ranked` / `best` hold the best feasible rows (StreamRanker)."""

    results: pd.DataFrame | None
    skipped: Counter = field(default_factory=Counter)  # reason -> number of settings skipped
    breakdown: pd.DataFrame | None = None
    parquet: Path | None = None
    rows: int = 0
    n_oom: int = 0                 # rows whose batch does not fit in memory
    n_slo: int = 0                 # rows that fit but miss the SLO
    ranked: pd.DataFrame | None = None
    best: pd.DataFrame | None = None

    @property
    def n_skipped(self) -> int:
        return sum(self.skipped.values())


def _axis_lists(sc: Scenario) -> list[list]:
    """The lists whose Cartesian product is the tuple space, in enumeration order."""
    return [sc.hardware, sc.models, sc.kv_dtype, sc.weight_dtype, sc.parallel, *(sc.axes[a] for a in AXES)]


def n_tuples(sc: Scenario) -> int:
    """Number of strategy tuples of the scenario (refused ones included)."""
    return math.prod(len(x) for x in _axis_lists(sc))


def _make_combo(sc: Scenario, values) -> Combo:
    hw, m, kv, wd, (tp, ep, dp), *axes = values
    return combo_of(hw, m, kv, wd, tp, ep, dp, sc.launch, sc.kernels, sc.trace, dict(zip(AXES, axes)),
                    sc.prefill_attention)


def combos(sc: Scenario, start: int = 0, stop: int | None = None):
    """Every strategy tuple of the scenario (or those numbered start..stop-1), as Combo objects."""
    lists = _axis_lists(sc)
    total = n_tuples(sc)
    stop = total if stop is None else min(stop, total)
    if start == 0 and stop == total:
        for values in itertools.product(*lists):
            yield _make_combo(sc, values)
        return
    if stop <= start:
        return
    digits = [d.tolist() for d in np.unravel_index(np.arange(start, stop), [len(x) for x in lists])]
    for i in range(stop - start):
        yield _make_combo(sc, [lst[d[i]] for lst, d in zip(lists, digits)])


def chunk_bounds(sc: Scenario, chunk_settings: int = CHUNK_SETTINGS) -> list[tuple[int, int]]:
    """The tuple ranges [start, stop) of the chunks of work, in order."""
    total = n_tuples(sc)
    per = max(1, chunk_settings // max(1, len(sc.batch) * len(sc.context) * len(sc.output_tokens)))
    return [(s, min(s + per, total)) for s in range(0, total, per)]


# ---- structure groups --------------------------------------------------------------------------------------
_FROZEN: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _frozen_params(s) -> tuple:
    """The strategy's class and the values of its parameters that are not array-valued (a group key part;
    memoized per strategy instance)."""
    got = _FROZEN.get(s)
    if got is None:
        arr = type(s).array_params
        got = _FROZEN[s] = (type(s), tuple((p, repr(v)) for p, v in s.values.items() if p not in arr))
    return got


def _structure_key(combo: Combo, cache: dict | None = None) -> tuple:  # noqa: ARG001 - kept for callers
    """What tuples priced as one group share (module docstring); for tests and inspection — price_chunk
    computes the same key from the enumeration digits (_group_ids)."""
    strats = combo.strategies()
    vec = all(type(s).array_combo for s in strats)
    return (id(combo.hardware), id(combo.model), combo.kv_dtype, combo.weight_dtype, combo.ep, combo.attn_dp,
            combo.launch, combo.kernels, combo.prefill_attn, id(combo.trace), None if vec else combo.tp,
            tuple(_frozen_params(s) for s in strats))


def _codes(values: list, key) -> tuple[np.ndarray, list]:
    """Per list entry: the index of its key among the distinct keys (equal keys, equal codes)."""
    seen: dict = {}
    return np.array([seen.setdefault(key(v), len(seen)) for v in values], dtype=np.int64), list(seen)


def _group_ids(sc: Scenario, digits: list[np.ndarray]) -> np.ndarray:
    """Structure group of each tuple (given its enumeration digits): tuples with equal ids share hardware,
    model, dtypes, ep, attention DP, every strategy's class and non-array parameters, and TP unless every
    strategy of the tuple is array_combo."""
    lists = _axis_lists(sc)
    cols = [digits[0], digits[1], digits[2], digits[3]]
    dims = [len(x) for x in lists[:4]]
    par = lists[4]
    cols.append(_codes(par, lambda v: (v[1], v[2]))[0][digits[4]])
    dims.append(len(par))
    vec = np.ones(len(digits[0]), dtype=bool)
    for lst, d in zip(lists[5:], digits[5:]):
        cols.append(_codes(lst, _frozen_params)[0][d])
        dims.append(len(lst))
        vec &= np.array([type(s).array_combo for s in lst], dtype=bool)[d]
    cols.append(np.where(vec, 0, digits[4] + 1))  # TP (the parallelism entry) where not every axis is array-safe
    dims.append(len(par) + 1)
    # every code is below its list's length, so the mixed-radix number fits in int64 whenever the
    # tuple space itself does (its size is the product of the same lengths, times len(par) + 1)
    _, ids = np.unique(np.ravel_multi_index(cols, dims), return_inverse=True)
    return ids.ravel()


def _clone_with(s, arrays: dict):
    """A copy of strategy `s` whose parameters in `arrays` are arrays (one value per setting)."""
    c = object.__new__(type(s))
    c.__dict__.update(s.__dict__)
    c.values = {**s.values, **arrays}
    return c


def vector_combo(combos_: list[Combo]):
    """For tuples that share a structure (same `_structure_key`): a function tuple_index_array -> Combo whose
    fields that differ between the tuples (tp, array_params) are arrays picked by the index array. Fields
    that do not differ stay scalars (docs/VECTOR_COMBOS.md)."""
    rep = combos_[0]
    tps = [c.tp for c in combos_]
    tp = np.array(tps, dtype=np.int64) if any(t != tps[0] for t in tps) else None
    axis_arrays = {}
    for a in AXES:
        s0 = getattr(rep, a)
        per = {}
        for p in type(s0).array_params:
            vals = [getattr(c, a).values[p] for c in combos_]
            if any(v != vals[0] for v in vals):
                per[p] = np.array(vals)
        if per:
            axis_arrays[a] = per

    def expand(idx: np.ndarray) -> Combo:
        changes = {}
        if tp is not None:
            changes["tp"] = tp[idx]
        for a, per in axis_arrays.items():
            changes[a] = _clone_with(getattr(rep, a), {p: v[idx] for p, v in per.items()})
        return replace(rep, **changes) if changes else rep

    return expand


# ---- one chunk of work ---------------------------------------------------------------------------------------
@dataclass
class ChunkResult:
    """The priced rows of the tuples start..stop-1: numeric columns (every kind column, NaN where a tuple has
    no op of that kind), the enumeration index and number of settings of each priced tuple (labels are
    derived from the index when the table is assembled), skips, and the breakdown (settings numbered
    inside the chunk)."""

    start: int
    stop: int
    cols: dict
    tuple_index: np.ndarray
    n_per_tuple: np.ndarray
    kinds_seen: set
    skipped: Counter
    breakdown: pd.DataFrame | None = None

    @property
    def rows(self) -> int:
        return int(self.n_per_tuple.sum())


def price_chunk(sc: Scenario, start: int, stop: int, breakdown: bool = False) -> ChunkResult:
    """Price the tuples numbered start..stop-1 of the scenario (see module docstring)."""
    B, C, L = numeric_grid(sc)
    lists = _axis_lists(sc)
    digits = list(np.unravel_index(np.arange(start, stop), [len(x) for x in lists]))
    group_of = _group_ids(sc, digits) if not breakdown and stop > start else None
    skipped: Counter = Counter()
    ctx_ok: dict[int, tuple] = {}
    priced: list[tuple[Combo, np.ndarray]] = []   # (combo, indices into the grid)
    tuple_index: list[int] = []
    groups: dict[int, list[int]] = {}
    per_axis = [[lst[d] for d in dig.tolist()] for lst, dig in zip(lists, digits)]
    for i, (hw, m, kv, wd, (tp, ep, dp), *axes) in enumerate(zip(*per_axis)):
        combo = combo_of(hw, m, kv, wd, tp, ep, dp, sc.launch, sc.kernels, sc.trace, dict(zip(AXES, axes)),
                         sc.prefill_attention)
        reason = combo_refusal(combo)
        if reason:
            skipped[reason] += len(B)
            continue
        got = ctx_ok.get(id(m))
        if got is None:
            ok = (C <= m.max_context) & (L < C)
            got = ctx_ok[id(m)] = (ok, bool(ok.all()), bool(ok.any()), int((C > m.max_context).sum()),
                                   int(((C <= m.max_context) & (L >= C)).sum()), np.flatnonzero(ok))
        ok, ok_all, ok_any, n_long, n_short, ix = got
        if not ok_all:
            if n_long:
                skipped[f"context beyond {m.name}'s limit of {m.max_context} tokens"] += n_long
            if n_short:
                skipped["output_tokens >= context leaves no prompt"] += n_short
            if not ok_any:
                continue
        if hw.kind == "dataflow":
            over, why = onchip_overflow(combo, B, C)
            if (over & ok).any():
                skipped[why] += int((over & ok).sum())
                ok = ok & ~over
                if not ok.any():
                    continue
                ix = np.flatnonzero(ok)
        key = len(priced) if group_of is None else int(group_of[i])
        groups.setdefault(key, []).append(len(priced))
        priced.append((combo, ix))
        tuple_index.append(start + i)

    n_per = np.array([len(ix) for _, ix in priced], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(n_per)])
    rows = int(offsets[-1])
    cols: dict[str, np.ndarray] = {}
    grid_idx = np.concatenate([ix for _, ix in priced]) if priced else np.zeros(0, dtype=np.int64)
    for name, arr in zip(GRID_COLUMNS, (B, C, L)):
        cols[name] = arr[grid_idx]
    for name in RESULT_COLUMNS + KIND_COLUMNS + ("ttft_ms", "kv_bytes_per_seq", "kv_bytes"):
        cols[name] = np.full(rows, np.nan)
    cols["max_batch"] = np.zeros(rows, dtype=np.int64)
    cols["fits"] = np.zeros(rows, dtype=bool)
    kinds_seen: set = set()
    bds = []

    # build each group's op tables, then price the groups of each (hardware, launch) together
    buckets: dict[tuple, list] = {}
    for members in groups.values():
        c0 = priced[members[0]][0]
        if len(members) == 1:
            ix = priced[members[0]][1]
            g = build_group(c0, B[ix], C[ix], L[ix])
        else:
            idx = np.concatenate([priced[t][1] for t in members])
            tuple_of = np.repeat(np.arange(len(members)), n_per[members])
            g = build_group(c0, B[idx], C[idx], L[idx], tuple_of=tuple_of,
                            expand=vector_combo([priced[t][0] for t in members]))
        buckets.setdefault((id(c0.hardware), c0.launch), []).append((members, g))
    for bucket in buckets.values():
        c0 = priced[bucket[0][0][0]][0]
        res, present = finish_groups([g for _, g in bucket], c0.hardware, c0.launch)
        members = [t for m_, _ in bucket for t in m_]
        counts = n_per[members]
        # destination rows: each tuple's settings land at its offset in enumeration order
        within = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
        dest = np.repeat(offsets[members], counts) + within
        row_tuple = np.repeat(np.arange(len(members)), counts)
        for name, v in res.items():
            if name in KIND_COLUMNS:
                has = present[:, KIND_COLUMNS.index(name)]
                if has.any():
                    kinds_seen.add(name)
                cols[name][dest] = v if has.all() else np.where(has[row_tuple], v, np.nan)
            else:
                cols[name][dest] = v
        if breakdown:
            for m_, g in bucket:
                bd = breakdown_frame(g.decode.build(), c0.hardware, c0.launch)
                bd["setting"] += int(offsets[m_[0]])
                bds.append((m_[0], bd))
    cols["slo_ok"] = _slo_ok(cols, sc.slo, rows)
    check_priced(cols, np.repeat(np.arange(len(priced)), n_per), [c for c, _ in priced])
    bd = None
    if bds:
        bd = pd.concat([b for _, b in sorted(bds, key=lambda x: x[0])], ignore_index=True)
    return ChunkResult(start=start, stop=stop, cols=cols, tuple_index=np.array(tuple_index, dtype=np.int64),
                       n_per_tuple=n_per, kinds_seen=kinds_seen, skipped=skipped, breakdown=bd)


#: Columns every priced row must hold as finite numbers > 0, and (BATCH_MONOTONE) the columns that may not fall
#: as the batch grows at a fixed tuple, context and output length: a step of more sequences does at least the
#: arithmetic of fewer. Step TIME is not such a column: kernel launch heuristics legitimately make some batches
#: faster than smaller ones (FlashAttention-2's and Triton's split-KV rules: up to ~20 % between neighbouring
#: batches in a sweep of every kernel family, strategy and device, measured on this model); the arithmetic has
#: no such heuristic (flops_per_step never fell in that sweep of 607,464 rows), so a drop there means negative
#: or inconsistent work in the inputs (e.g. MoE layers beyond the layer count). Relative tolerance: float rounding.
POSITIVE_COLUMNS = ("step_ms", "tpot_ms", "tokens_per_s", "ttft_ms", "kv_bytes_per_seq", "tokens_per_round",
                    "flops_per_step", "bytes_per_step")
BATCH_MONOTONE = ("flops_per_step",)
MONOTONE_TOL = 1e-9


def check_priced(cols: dict, tuple_of_row: np.ndarray, combos_: list) -> None:
    """The generic sanity check after pricing: NaN, infinite, zero or negative times, or a step that is faster at
    a larger batch, mean the inputs contradict each other (a model or hardware file validation let through), so
    they stop with one line naming the hardware and model files, the strategy tuple and the setting, instead of
    being printed as results."""
    from hwmodels.errors import SparsesimError

    def where(i: int) -> tuple[str, str]:
        c = combos_[int(tuple_of_row[i])]
        return (f"{c.hardware.name} ({c.hardware.file}) x {c.model.name} ({c.model.file}), {c.strategy_label()} "
                f"{c.parallel_label()}", f"batch {int(cols['batch'][i])}, context {int(cols['context'][i])}")

    for name in POSITIVE_COLUMNS:
        v = cols.get(name)
        if v is None or not len(v):
            continue
        bad = ~(np.isfinite(v) & (v > 0))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            who, at = where(i)
            raise SparsesimError(f"pricing {who} gives {name} = {float(v[i])!r} at {at}: the inputs contradict each other "
                                 "(check the hardware and model files); nothing is printed from it")
    b, c, o, t = cols["batch"], cols["context"], cols["output_tokens"], tuple_of_row
    if len(b) < 2:
        return
    order = np.lexsort((b, o, c, t))
    same = ((t[order][1:] == t[order][:-1]) & (c[order][1:] == c[order][:-1]) & (o[order][1:] == o[order][:-1]))
    for name in BATCH_MONOTONE:
        v = cols[name][order]
        drop = same & (v[1:] < v[:-1] * (1 - MONOTONE_TOL))
        if drop.any():
            j = int(np.flatnonzero(drop)[0])
            lo, hi = order[j], order[j + 1]
            who, at = where(int(lo))
            raise SparsesimError(f"pricing {who} gives {name} {v[j]:.4g} at batch {int(b[lo])} but {v[j + 1]:.4g} at the "
                                 f"larger batch {int(b[hi])} ({at.split(', ')[1]}): more sequences cannot need less "
                                 "arithmetic, so the inputs contradict each other (check the hardware and model files)")


def _label_columns(sc: Scenario, tuple_index: np.ndarray) -> dict:
    """Per label column, one value per tuple of `tuple_index` (enumeration indices): (codes, categories)
    for the string labels (categories sorted, so sorting by the column orders rows as sorting the strings
    would), an int array for tp / ep / attn_dp. Computed from the enumeration digits, once per distinct
    value, not once per tuple."""
    from types import SimpleNamespace

    lists = _axis_lists(sc)
    shape = [len(x) for x in lists]
    d = np.unravel_index(tuple_index, shape)
    out: dict = {}

    def cat(values_per_key: list[str], key_of_tuple: np.ndarray):
        names = sorted(set(values_per_key))
        pos = {v: i for i, v in enumerate(names)}
        lut = np.array([pos[v] for v in values_per_key], dtype=np.int32)
        return lut[key_of_tuple], names

    out["hardware"] = cat([h.name for h in lists[0]], d[0])
    out["model"] = cat([m.name for m in lists[1]], d[1])
    # strategy: one label per distinct combination of the six axis values
    sk = np.ravel_multi_index(d[5:], shape[5:]) if len(tuple_index) else np.zeros(0, dtype=np.int64)
    uniq, inv = np.unique(sk, return_inverse=True)
    labels = []
    for k in uniq.tolist():
        ds = np.unravel_index(k, shape[5:])
        ns = SimpleNamespace(**{a: lists[5 + j][int(ds[j])] for j, a in enumerate(AXES)})
        labels.append(Combo.strategy_label(ns))
    out["strategy"] = cat(labels, inv.ravel())
    for j, a in enumerate(AXES):
        out[a] = cat([s.label() for s in lists[5 + j]], d[5 + j])
    out["kv_dtype"] = cat(list(lists[2]), d[2])
    wd = [m.dtype if w == "native" else w for m in lists[1] for w in lists[3]]
    out["weight_dtype"] = cat(wd, d[1] * len(lists[3]) + d[3])
    par = lists[4]
    for j, c in enumerate(INT_LABELS):
        out[c] = np.array([p[j] for p in par], dtype=np.int64)[d[4]]
    out["parallel"] = cat([Combo.parallel_label(SimpleNamespace(tp=t, ep=e, attn_dp=a, prefill_attn=sc.prefill_attention))
                           for t, e, a in par], d[4])
    out["launch"] = (np.zeros(len(tuple_index), dtype=np.int32), [sc.launch])
    return out


def _slo_ok(cols: dict, slo: dict[str, float], rows: int) -> np.ndarray:
    ok = np.ones(rows, dtype=bool)
    for k, limit in slo.items():
        ok &= cols[k] <= limit
    return ok


# ---- the whole sweep ---------------------------------------------------------------------------------------
def _chunk_results(sc: Scenario, bounds, breakdown: bool, client, progress: bool):
    """ChunkResults in order: computed here, or on a Dask cluster (simulator.parallel)."""
    from simulator.progress import progress_bar

    bar = progress_bar(n_tuples(sc), "pricing strategy tuples", "tuple", progress and n_tuples(sc) > 20)
    if client is not None:
        it = map_ordered(client, price_chunk, sc, [(a, b, breakdown) for a, b in bounds])
    else:
        it = (price_chunk(sc, a, b, breakdown) for a, b in bounds)
    try:
        for cr in it:
            if bar is not None:
                bar.update(cr.stop - cr.start)
            yield cr
    finally:
        if bar is not None:
            bar.close()


def evaluate(sc: Scenario, breakdown: bool = False, progress: bool = False, parquet: str | Path | None = None,
             client=None, chunk_settings: int = CHUNK_SETTINGS) -> SweepResult:
    """Price every setting of the scenario.

    parquet: stream the rows to this Parquet file chunk by chunk instead of building the table in memory
             (results is then None; SweepResult.ranked / .best hold the best feasible rows).
    client:  a dask.distributed Client (simulator.parallel.client): chunks run on its workers; the result
             is the same, bit for bit, as the serial run's."""
    check_rows(sc, streamed=parquet is not None)
    bounds = chunk_bounds(sc, chunk_settings)
    chunks = _chunk_results(sc, bounds, breakdown, client, progress)
    if parquet is not None:
        return _stream_parquet(sc, chunks, Path(parquet), progress)
    skipped: Counter = Counter()
    parts: list[ChunkResult] = []
    for cr in chunks:
        skipped.update(cr.skipped)
        if cr.rows:
            parts.append(cr)
    results, bd = assemble(sc, parts, progress=progress)
    return SweepResult(results=results, skipped=skipped, breakdown=bd, rows=len(results))


#: Most rows (settings) a result table held in memory may have: ~600 B per row (README: 1,000,320 rows in 608 MiB),
#: so ~3 GiB; larger sweeps stream to Parquet (`sparsesim sweep --parquet`)
MAX_TABLE_ROWS = 5_000_000
#: Most settings a streamed sweep may price (time, not memory: ~170,000 settings/s on 2 cores for vectorized tuples)
MAX_STREAM_ROWS = 10**10


def check_rows(sc: Scenario, streamed: bool = False) -> None:
    """Refuse, before any pricing, a sweep whose rows exceed MAX_TABLE_ROWS (in memory) or MAX_STREAM_ROWS."""
    from hwmodels.errors import ScenarioError

    rows = n_tuples(sc) * len(sc.batch) * len(sc.context) * len(sc.output_tokens)
    limit = MAX_STREAM_ROWS if streamed else MAX_TABLE_ROWS
    if rows > limit:
        how = ("split the scenario along an outer axis (hardware or model)" if streamed else
               "use `sparsesim sweep --parquet` (rows streamed to disk) or fewer values")
        raise ScenarioError(f"{n_tuples(sc):,} strategy tuples x {rows // max(1, n_tuples(sc)):,} workload settings = "
                            f"{rows:,} rows; at most {limit:,} {'streamed' if streamed else 'in memory (~600 B each)'}: "
                            f"{how}", file=sc.file, field="strategies")


def _table_columns(parts: list[ChunkResult], all_kinds: bool = False) -> list[str]:
    seen = set().union(*(p.kinds_seen for p in parts)) if parts else set()
    kinds = [k for k in KIND_COLUMNS if all_kinds or k in seen]
    return [*GRID_COLUMNS, *RESULT_COLUMNS, *kinds, *TAIL_COLUMNS, "slo_ok"]


def assemble(sc: Scenario, parts: list[ChunkResult], progress: bool = False, all_kinds: bool = False):
    """The result table of some chunks (in order) and their breakdown: label columns categorical, numeric
    columns concatenated once (each chunk's arrays are released as they are consumed)."""
    if not parts:
        return pd.DataFrame(), None
    from simulator.progress import progress_bar

    numeric = _table_columns(parts, all_kinds)
    bar = progress_bar(len(LABEL_COLUMNS) + len(numeric), "assembling the result table", "column",
                       progress and sum(p.rows for p in parts) > 200_000)
    data: dict[str, object] = {}
    n = np.concatenate([p.n_per_tuple for p in parts])
    labels = _label_columns(sc, np.concatenate([p.tuple_index for p in parts]))
    for c in LABEL_COLUMNS:
        if c in INT_LABELS:
            data[c] = np.repeat(labels[c], n)
        else:
            codes, names = labels[c]
            data[c] = pd.Categorical.from_codes(np.repeat(codes, n), categories=names)
        if bar is not None:
            bar.update()
    for c in numeric:
        data[c] = np.concatenate([p.cols.pop(c) for p in parts]) if len(parts) > 1 else parts[0].cols.pop(c)
        if bar is not None:
            bar.update()
    if bar is not None:
        bar.close()
    df = pd.DataFrame(data, copy=False)
    bd = None
    bds = []
    off = 0
    for p in parts:
        if p.breakdown is not None:
            b = p.breakdown
            b["setting"] += off
            bds.append(b)
        off += p.rows
    if bds:
        bd = pd.concat(bds, ignore_index=True)
    return df, bd


# ---- streaming to Parquet ----------------------------------------------------------------------------------
class StreamRanker:
    """The feasible (fits and SLO) rows, best first, kept incrementally over chunks: the `keep` best by the
    objective, and the best per (hardware, model, context) — what `rank` and `best_per_context` give on
    the whole table (stable sorts: ties keep enumeration order)."""

    def __init__(self, sc: Scenario, keep: int):
        self.sc, self.keep = sc, keep
        self.top: pd.DataFrame | None = None
        self.best: pd.DataFrame | None = None

    def add(self, df: pd.DataFrame) -> None:
        feas = df[df["fits"] & df["slo_ok"]]
        if feas.empty:
            return
        asc = RANK_BY[self.sc.rank_by]
        feas = feas.sort_values(self.sc.rank_by, ascending=asc, kind="stable")
        top = feas.head(self.keep)
        best = feas.groupby(["hardware", "model", "context"], sort=False, observed=True).head(1)
        self.top = top if self.top is None else (
            pd.concat([self.top, top], ignore_index=True).sort_values(self.sc.rank_by, ascending=asc,
                                                                      kind="stable").head(self.keep))
        if self.best is not None:
            best = (pd.concat([self.best, best], ignore_index=True)
                    .sort_values(self.sc.rank_by, ascending=asc, kind="stable")
                    .groupby(["hardware", "model", "context"], sort=False, observed=True).head(1))
        self.best = best

    def results(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        empty = pd.DataFrame()
        top = self.top if self.top is not None else empty
        best = self.best if self.best is not None else empty
        if not best.empty:
            best = best.sort_values(["hardware", "model", "context"]).reset_index(drop=True)
        return top.reset_index(drop=True), best


#: best feasible rows a streamed sweep keeps in memory (ranked.csv of `sparsesim sweep --parquet`)
STREAM_KEEP = 1000


def _stream_parquet(sc: Scenario, chunks, path: Path, progress: bool) -> SweepResult:
    import pyarrow as pa
    import pyarrow.parquet as pq

    skipped: Counter = Counter()
    ranker = StreamRanker(sc, max(sc.top, STREAM_KEEP))
    writer = None
    rows = n_oom = n_slo = 0
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".partial")
    try:
        for cr in chunks:
            skipped.update(cr.skipped)
            if not cr.rows:
                continue
            df, _ = assemble(sc, [cr], all_kinds=True)
            for c in STR_LABELS:  # chunk-local dictionaries: plain strings in the file
                df[c] = df[c].astype(object)
            rows += len(df)
            n_oom += int((~df["fits"]).sum())
            n_slo += int((df["fits"] & ~df["slo_ok"]).sum())
            ranker.add(df)
            table = pa.Table.from_pandas(df, preserve_index=False)
            if writer is None:
                writer = pq.ParquetWriter(tmp, table.schema)
            writer.write_table(table)
        if writer is not None:
            writer.close()
            writer = None
            tmp.replace(path)
    finally:
        if writer is not None:
            writer.close()
        if tmp.exists():
            tmp.unlink()
    top, best = ranker.results()
    return SweepResult(results=None, skipped=skipped, parquet=path if rows else None, rows=rows, n_oom=n_oom,
                       n_slo=n_slo, ranked=top, best=best)


def slo_mask(df: pd.DataFrame, slo: dict[str, float]) -> np.ndarray:
    ok = np.ones(len(df), dtype=bool)
    for k, limit in slo.items():
        ok &= df[k].to_numpy() <= limit
    return ok


def rank(result: SweepResult, sc: Scenario) -> pd.DataFrame:
    """Settings that fit in memory and meet the SLO, best first by the scenario's objective."""
    if result.results is None:
        return result.ranked if result.ranked is not None else pd.DataFrame()
    df = result.results
    if df.empty:
        return df
    keep = df[df["fits"] & df["slo_ok"]]
    return keep.sort_values(sc.rank_by, ascending=RANK_BY[sc.rank_by], kind="stable")


def best_per_context(result: SweepResult, sc: Scenario) -> pd.DataFrame:
    """For each (hardware, model, context): the best feasible strategy tuple and batch."""
    if result.results is None:
        return result.best if result.best is not None else pd.DataFrame()
    ranked = rank(result, sc)
    if ranked.empty:
        return ranked
    return (ranked.groupby(["hardware", "model", "context"], sort=True, as_index=False, observed=True).head(1)
            .sort_values(["hardware", "model", "context"]))
