"""The L2's edge for re-scanned sets (Efficiency.l2_sweep_hit, used by hwmodels.roofline SWEEP_REREAD): the share of a
set of S bytes, read again in the same address order, that still comes from the L2, as a function of S over the L2.

Two sources, each a measurement of plain streaming kernels (no top-k row enters it):
  regimes   lab/measure_regimes.py's l2_bw family (regimes_*_v4.csv): x.sum() over one fp32 buffer read by every call
            (sum_resident) and over sets rotated past the L2 (sum_rotated), S = 1-128 MiB in steps of 8 MiB around
            the L2. One pattern only (a kernel re-reading what the kernel before it read): used for both patterns
  sweep     lab/kernels/measure_l2_sweep.py (l2_sweep_*.csv): the same sum pattern on 2 MiB steps from 24 to 64 MiB
            ("first"), and one CTA per SM re-sweeping its own row 1 or 3 times in one kernel ("again")

The hit share implied at S: h = (t_miss(S) - t(S)) / (t_miss(S) - t_hit(S)), clipped to [0, 1] (1 by definition at
the sizes that define t_hit, 0 at those that define t_miss), where
  first   t = sum_resident(S), t_miss = sum_rotated(S) (measured at the same S), t_hit = the straight line through
          sum_resident at the sizes that surely fit (<= HIT_MAX of the L2)
  again   t = one re-sweep = (resweep_3 - resweep_1) / 2; t_hit / t_miss = straight lines through it at the sizes that
          surely fit (<= HIT_MAX) / surely do not (>= MISS_MIN of the L2)
`write` merges the curve into a fitted file (key l2_sweep_hit, with its source).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

MiB = 1 << 20
#: sets of at most this share of the L2 hit entirely in every measurement so far (regimes v4: 40 MiB of 50 resident)
HIT_MAX = 0.45
#: sets of at least this share miss entirely (regimes v4: 48, 64 and 128 MiB time as their rotated sets)
MISS_MIN = 1.5


def _line(x, y):
    a, b = np.polyfit(np.asarray(x, float), np.asarray(y, float), 1)
    return lambda s: a * np.asarray(s, float) + b


def implied(t, t_hit, t_miss) -> np.ndarray:
    """The hit share between an all-hit time and an all-miss time (clipped to [0, 1])."""
    t, t_hit, t_miss = (np.asarray(v, float) for v in (t, t_hit, t_miss))
    den = np.where(np.abs(t_miss - t_hit) > 1e-9, t_miss - t_hit, np.nan)
    return np.clip(np.nan_to_num((t_miss - t) / den, nan=1.0), 0.0, 1.0)


def first_from_sums(sizes_bytes, resident_us, rotated_us, l2_bytes: float) -> pd.DataFrame:
    """The 'first' curve from x.sum() times (resident = one buffer every call, rotated = from HBM)."""
    x = np.asarray(sizes_bytes, float) / l2_bytes
    res, rot = np.asarray(resident_us, float), np.asarray(rotated_us, float)
    fit = x <= HIT_MAX
    hit_line = _line(x[fit], res[fit])
    return pd.DataFrame({"set_over_l2": x, "t_us": res, "t_hit_us": hit_line(x), "t_miss_us": rot,
                         "hit": np.where(fit, 1.0, implied(res, hit_line(x), rot))})


def again_from_resweeps(sizes_bytes, one_us, three_us, l2_bytes: float) -> pd.DataFrame:
    """The 'again' curve from the in-kernel re-sweep times (1 and 3 sweeps of each CTA's own row)."""
    x = np.asarray(sizes_bytes, float) / l2_bytes
    r = (np.asarray(three_us, float) - np.asarray(one_us, float)) / 2.0
    hit_line, miss_line = _line(x[x <= HIT_MAX], r[x <= HIT_MAX]), _line(x[x >= MISS_MIN], r[x >= MISS_MIN])
    return pd.DataFrame({"set_over_l2": x, "t_us": r, "t_hit_us": hit_line(x), "t_miss_us": miss_line(x),
                         "hit": np.where(x <= HIT_MAX, 1.0, np.where(x >= MISS_MIN, 0.0,
                                                                      implied(r, hit_line(x), miss_line(x))))})


def from_regimes(csv: str | Path) -> dict[str, pd.DataFrame]:
    """Both patterns from regimes_*_v4.csv's l2_bw rows (the sum pattern stands for both)."""
    df = pd.read_csv(csv)
    d = df[df["family"] == "l2_bw"]
    l2 = float(df["l2_bytes"].dropna().iloc[0])
    res = d[d["kernel"] == "sum_resident"].set_index("bytes_moved")["median_us"]
    rot = d[d["kernel"] == "sum_rotated"].set_index("bytes_moved")["median_us"]
    s = sorted(set(res.index) & set(rot.index))
    c = first_from_sums(s, res[s].to_numpy(), rot[s].to_numpy(), l2)
    return {"first": c, "again": c}


def from_sweep(csv: str | Path, l2_bytes: float = 50 * MiB) -> dict[str, pd.DataFrame]:
    """Both patterns from lab/kernels/measure_l2_sweep.py's CSV ('again' only where the re-sweep rows exist)."""
    df = pd.read_csv(csv)
    p = df.pivot_table(index="set_mib", columns="pattern", values="median_us")
    s = p.index.to_numpy(float) * MiB
    out = {"first": first_from_sums(s, p["sum_resident"], p["sum_rotated"], l2_bytes)}
    if {"resweep_1", "resweep_3"} <= set(p.columns):
        ok = p[["resweep_1", "resweep_3"]].notna().all(axis=1).to_numpy()
        out["again"] = again_from_resweeps(s[ok], p["resweep_1"][ok], p["resweep_3"][ok], l2_bytes)
    return out


def curve_doc(curves: dict[str, pd.DataFrame], source: str, lo: float = 0.3, hi: float = 2.0) -> dict:
    """The fitted file's l2_sweep_hit mapping: each pattern's points with lo <= set_over_l2 <= hi (outside, the curve
    is held at its end values), made non-increasing (a running minimum: a longer reuse distance cannot keep more of a
    set; a point above the running minimum is timing noise, e.g. one short re-sweep sample), rounded."""
    doc: dict = {}
    for k, c in curves.items():
        c = c[(c["set_over_l2"] >= lo) & (c["set_over_l2"] <= hi)].sort_values("set_over_l2")
        h = np.minimum.accumulate(c["hit"].to_numpy(float))
        doc[k] = {"set_over_l2": [round(float(v), 4) for v in c["set_over_l2"]],
                  "hit": [round(float(v), 3) for v in h]}
    doc["source"] = source
    return doc


def write(curves: dict[str, pd.DataFrame], source: str, target: str, out_dir: Path) -> Path:
    """Merge the curve into out_dir/<target>.yaml (key l2_sweep_hit; every other term kept)."""
    from simulator.calibration import checks as C

    p = Path(out_dir) / f"{target}.yaml"
    doc = C.merge_into(p, {"l2_sweep_hit": curve_doc(curves, source)}, {"l2_sweep_hit": None})
    return C.write_checked(p, doc, "")
