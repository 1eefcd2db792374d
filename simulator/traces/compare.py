"""Trace statistics beside the values the seed documents publish (simulator/traces/published.yaml).

`published_rows(ts)` evaluates every published entry on a TraceStats: the entry's `where` coordinates
(`k_fraction: f` -> the recorded top-k tier closest to f x mean context; `budget: max` -> the largest
budget), averaged over the entry's relative-depth range of layers. The verdict says whether the trace value
lies in the published range (within +-15 % of a single value); 'proxy' and 'example' entries get no verdict
(their published number is not the same quantity, see the YAML).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from hwmodels.yamlio import load_yaml
from simulator.traces.stats import BY_NAME, TraceStats

PUBLISHED = Path(__file__).with_name("published.yaml")
TOLERANCE = 0.15


def published_entries() -> list[dict]:
    doc = load_yaml(PUBLISHED, "published trace statistics")
    if not isinstance(doc, list):
        raise ValueError(f"{PUBLISHED}: must be a list of entries")
    for e in doc:
        if e.get("stat") not in BY_NAME:
            raise ValueError(f"{PUBLISHED}: unknown statistic {e.get('stat')!r}")
    return doc


def _value(ts: TraceStats, e: dict) -> tuple[float, str]:
    name = e["stat"]
    if not ts.has(name):
        return float("nan"), "not in this trace"
    where = dict(e.get("where") or {})
    label = []
    if "k_fraction" in where:
        f = float(where.pop("k_fraction"))
        ks = list(ts.coords.get("k", ()))
        target = f * float(ts.meta.get("mean_context", np.nan))
        k = min(ks, key=lambda x: abs(np.log(x / target))) if ks and np.isfinite(target) else None
        if k is None:
            return float("nan"), "no k tiers"
        where["k"] = k
        label.append(f"k={k} ({k / ts.meta['mean_context']:.1%} of N)")
    if where.get("budget") == "max":
        where["budget"] = max(ts.coords.get("budget", (0,)))
    for a, b in where.items():
        if a != "k":
            label.append(f"{a}={b}")
    arr = np.asarray(ts.select(name, **where), dtype=np.float64)
    axes = [a for a in ts.axes(name) if a not in where]
    if "layer" in axes or "target_layer" in axes:
        ax = axes.index("layer" if "layer" in axes else "target_layer")
        n = arr.shape[ax]
        lo, hi = e.get("depth") or [0.0, 1.0]
        depth = ts.layer_depths if ts.layer_depths is not None else np.arange(n) / max(n - 1, 1)
        keep = (depth >= lo - 1e-9) & (depth <= hi + 1e-9)
        if not keep.any():
            if ts.layer_depths is not None:     # the trace holds no layer at that depth (e.g. Gemma's global layers)
                return float("nan"), f"no recorded layer at depth {lo:g}-{hi:g}"
            keep[int(round(lo * (n - 1)))] = True
        arr = np.compress(keep, arr, axis=ax)
        layers = np.flatnonzero(keep)
        label.append(f"layers {layers[0]}-{layers[-1]} of {n}" if len(layers) > 1 else f"layer {layers[0]} of {n}")
    with np.errstate(all="ignore"):
        val = float(np.nanmean(arr)) if np.isfinite(arr).any() else float("nan")
    return val, ", ".join(label)


def published_rows(ts: TraceStats) -> list[dict]:
    rows = []
    for e in published_entries():
        val, label = _value(ts, e)
        pub = e.get("published")
        if pub is None:
            ptxt, verdict = "(no number)", ""
        elif "value" in pub:
            ptxt = f"{pub['value']:g}"
            verdict = "" if e["kind"] != "measured" or not np.isfinite(val) else (
                "within" if abs(val - pub["value"]) <= TOLERANCE * abs(pub["value"]) else "outside")
        else:
            ptxt = f"{pub['low']:g}-{pub['high']:g}"
            verdict = "" if e["kind"] != "measured" or not np.isfinite(val) else (
                "within" if pub["low"] <= val <= pub["high"] else ("below" if val < pub["low"] else "above"))
        rows.append({"statistic": e["stat"], "selection": label, "trace": val, "published": ptxt,
                     "kind": e["kind"], "verdict": verdict, "source": e["source"], "setting": e.get("setting", "")})
    return rows


#: statistics shown beside the published ones in the all-traces summary (no published number): name, where, label
SHAPE_ROWS = (("attn.sink_mass", {}, "attention mass on the first 4 tokens"),
              ("attn.entropy_bits", {}, "attention entropy (bits)"),
              ("lserve.mass", {}, "LServe pages: attention mass kept"),
              ("quest.mass", {}, "Quest pages: attention mass kept"))


def summary_rows(stats: list[TraceStats]) -> list[dict]:
    """One row per published entry (plus SHAPE_ROWS), one value per trace: the all-traces table of
    `sparsesim trace stats --all` (each value as `published_rows` computes it for that trace)."""
    rows = []
    per = [published_rows(ts) for ts in stats]
    for i, e in enumerate(published_entries()):
        pub = e.get("published")
        ptxt = "-" if pub is None else (f"{pub['value']:g}" if "value" in pub else f"{pub['low']:g}-{pub['high']:g}")
        where = ",".join(f"{k}={v}" for k, v in (e.get("where") or {}).items())
        depth = e.get("depth")
        label = e["stat"] + (f" {where}" if where else "") + (f" depth {depth[0]:g}-{depth[1]:g}" if depth else "")
        rows.append({"statistic": label, "published": ptxt, "kind": e["kind"],
                     "values": [p[i]["trace"] for p in per]})
    for name, where, label in SHAPE_ROWS:
        vals = [ts.summary(name) if ts.has(name) else float("nan") for ts in stats]
        rows.append({"statistic": f"{name} ({label})", "published": "-", "kind": "shape", "values": vals})
    return rows
