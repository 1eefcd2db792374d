"""Fit the interconnect terms of the roofline to NCCL measurements (measure_collectives.py).

The roofline prices (hwmodels/roofline.py), for g devices and a message of b bytes per device:

    all-reduce (ring)  t = fixed[collective] + 2 (g-1) * latency + 2 (g-1)/g * b / (bw_link * eff[collective])
    all-to-all         t = fixed[alltoall]   +         latency + (g-1)/g   * b / (bw_link * eff[alltoall])

plus the graph launch of the kernel. From measurements at two or more GPU counts the per-step latency
and the fixed software cost separate; bandwidths are fitted as fractions of the spec's link bandwidth.
Fitted with scipy least squares on log(predicted / measured), all rows used (there is little data; the
report prints every row's error instead of a held-out split).

Refusal bound (`check`): median |error| <= 25 % and p90 <= 60 % over all rows (the committed H200 x2 / x4
fit: 12.2 % median, 49 % worst, small messages being the hard part: NCCL switches algorithms there), at least
two GPU counts (latency and fixed cost cannot be told apart from one), and the physical ranges of
simulator.calibration.checks (bandwidth fractions in (0, 1.2], fixed costs < 1 ms, latency < 100 us).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from hwmodels.spec import HardwareSpec
from simulator.calibration import checks as C

REQUIRED = ("device", "gpus", "op", "bytes", "median_us")
OPS = ("all_reduce", "all_to_all")
BOUND_MEDIAN_PCT, BOUND_P90_PCT = 25.0, 60.0


def load(paths: list[str | Path]) -> pd.DataFrame:
    """Read measure_collectives.py CSVs strictly (one line per malformed file)."""
    frames = []
    for p in paths:
        df, _ = C.read_csv(p, REQUIRED, "a measure_collectives.py CSV")
        C.positive_columns(df, np.ones(len(df), bool), ("gpus", "bytes"), str(p), "collective")
        op = df["op"].astype(str).str.strip()
        if not op.isin(OPS).all():
            raise C.CalibrationError(f"column op: {int((~op.isin(OPS)).sum())} row(s) are not one of {', '.join(OPS)}"
                                     f" (first: {op[~op.isin(OPS)].iloc[0]!r})", file=str(p), field="op")
        df = C.numeric(df, ("gpus", "bytes")).assign(op=op, file=Path(p).name)
        if (df["gpus"] < 2).any():
            raise C.CalibrationError("column gpus: a collective needs >= 2 GPUs", file=str(p), field="gpus")
        frames.append(df)
    df = pd.concat(frames, ignore_index=True)
    if df["gpus"].nunique() < 2 or len(df) < 8:
        raise C.CalibrationError(f"{len(df)} row(s) at {df['gpus'].nunique()} GPU count(s): the fit separates the "
                                 "per-step latency from the fixed cost only with >= 2 GPU counts and >= 8 rows",
                                 file=str(paths[0]))
    return df


def model_us(df: pd.DataFrame, hw: HardwareSpec, x) -> np.ndarray:
    """Predicted µs per row for parameters x = (fixed_ar, fixed_a2a, latency, eff_ar, eff_a2a) in µs / fractions."""
    fixed_ar, fixed_a2a, lat, eff_ar, eff_a2a = x
    g = df["gpus"].to_numpy(float)
    b = df["bytes"].to_numpy(float)
    bw = hw.link_bw_bytes_s
    ring = fixed_ar + 2 * (g - 1) * lat + 2 * (g - 1) / g * b / (bw * eff_ar) * 1e6
    a2a = fixed_a2a + lat + (g - 1) / g * b / (bw * eff_a2a) * 1e6
    return np.where(df["op"].to_numpy() == "all_reduce", ring, a2a) + (hw.launch_graph_s or 0.0) * 1e6


def fit(df: pd.DataFrame, hw: HardwareSpec) -> tuple[dict, pd.DataFrame]:
    meas = df["median_us"].to_numpy(float)
    x0 = np.array([10.0, 10.0, 3.0, 0.7, 0.7])
    lo = np.array([0.0, 0.0, 0.0, 0.05, 0.05])
    hi = np.array([500.0, 500.0, 100.0, 1.0, 1.0])
    r = least_squares(lambda x: np.log(model_us(df, hw, x) / meas), x0, bounds=(lo, hi))
    pred = model_us(df, hw, r.x)
    out = df.assign(predicted_us=pred, error_pct=(pred / meas - 1) * 100)
    params = dict(zip(("fixed_us_collective", "fixed_us_alltoall", "link_latency_us", "eff_collective",
                       "eff_alltoall"), map(float, r.x)))
    return params, out


def check(params: dict, chk: pd.DataFrame, file: str) -> None:
    """Refuse unphysical parameters or a fit that misses its bound (module docstring)."""
    C.check_physical({"memory.collective": params["eff_collective"], "memory.alltoall": params["eff_alltoall"],
                      "fixed_us.collective": params["fixed_us_collective"],
                      "fixed_us.alltoall": params["fixed_us_alltoall"],
                      "link_latency_us": max(params["link_latency_us"], 1e-9)}, file)
    e = chk["error_pct"].abs().to_numpy(float)
    med, p90 = float(np.median(e)), float(np.percentile(e, 90))
    if not (med <= BOUND_MEDIAN_PCT and p90 <= BOUND_P90_PCT):
        raise C.CalibrationError(f"the interconnect fit misses its bound: median |error| {med:.3g} % (bound "
                                 f"{BOUND_MEDIAN_PCT:g} %), p90 {p90:.3g} % (bound {BOUND_P90_PCT:g} %); nothing was "
                                 "written", file=file)


def write(params: dict, target: str, data_files: list[str], measured_on: str, link_kind: str,
          out_dir: Path) -> Path:
    """Merge the interconnect terms into out_dir/<target>.yaml (created if missing; other terms kept)."""
    p = Path(out_dir) / f"{target}.yaml"
    borrowed = "" if measured_on == target else f" (measured on {measured_on}, same NVLink generation: borrowed)"
    own = {"memory": {"collective": round(params["eff_collective"], 4), "alltoall": round(params["eff_alltoall"], 4)},
           "fixed_us": {"collective": round(params["fixed_us_collective"], 3),
                        "alltoall": round(params["fixed_us_alltoall"], 3)},
           "link_latency_us": round(params["link_latency_us"], 3),
           "links": {"source": f"simulator/calibration/fit_links.py on "
                               f"{', '.join(Path(f).name for f in data_files)}" + borrowed,
                     "kind": link_kind, "params": {k: round(v, 4) for k, v in params.items()}}}
    if not p.exists():
        own["source"] = f"interconnect fit for {target}"
    doc = C.merge_into(p, own, {"memory": ("collective", "alltoall"), "fixed_us": ("collective", "alltoall"),
                                "link_latency_us": None, "links": None})
    return C.write_checked(p, doc, "")
