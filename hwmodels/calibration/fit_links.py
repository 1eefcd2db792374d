"""Fit the interconnect terms of the roofline to NCCL measurements (measure_collectives.py).

The roofline prices (hwmodels/roofline.py), for g devices and a message of b bytes per device:

    all-reduce (ring)  t = fixed[collective] + 2 (g-1) * latency + 2 (g-1)/g * b / (bw_link * eff[collective])
    all-to-all         t = fixed[alltoall]   +         latency + (g-1)/g   * b / (bw_link * eff[alltoall])

plus the graph launch of the kernel. From measurements at two or more GPU counts the per-step latency
and the fixed software cost separate; bandwidths are fitted as fractions of the spec's link bandwidth.
Fitted with scipy least squares on log(predicted / measured), all rows used (there is little data; the
report prints every row's error instead of a held-out split).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from scipy.optimize import least_squares

from hwmodels.errors import SparsesimError
from hwmodels.spec import FITTED_DIR, HardwareSpec

REQUIRED = ("device", "gpus", "op", "bytes", "median_us")


def load(paths: list[str | Path]) -> pd.DataFrame:
    frames = []
    for p in paths:
        p = Path(p)
        if not p.exists():
            raise SparsesimError("no such file", file=str(p))
        df = pd.read_csv(p)
        missing = [c for c in REQUIRED if c not in df.columns]
        if missing:
            raise SparsesimError(f"is missing columns {missing}; is it a measure_collectives.py CSV?", file=str(p))
        frames.append(df.assign(file=p.name))
    return pd.concat(frames, ignore_index=True)


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


def write(params: dict, target: str, data_files: list[str], measured_on: str, link_kind: str,
          out_dir: Path = FITTED_DIR) -> Path:
    """Merge the interconnect terms into calibration/fitted/<target>.yaml (created if missing)."""
    p = out_dir / f"{target}.yaml"
    doc = (yaml.safe_load(p.read_text()) or {}) if p.exists() else {"source": f"interconnect fit for {target}"}
    doc.setdefault("memory", {})
    doc.setdefault("fixed_us", {})
    doc["memory"]["collective"] = round(params["eff_collective"], 4)
    doc["memory"]["alltoall"] = round(params["eff_alltoall"], 4)
    doc["fixed_us"]["collective"] = round(params["fixed_us_collective"], 3)
    doc["fixed_us"]["alltoall"] = round(params["fixed_us_alltoall"], 3)
    doc["link_latency_us"] = round(params["link_latency_us"], 3)
    borrowed = "" if measured_on == target else f" (measured on {measured_on}, same NVLink generation: borrowed)"
    doc["links"] = {"source": f"hwmodels/calibration/fit_links.py on {', '.join(Path(f).name for f in data_files)}"
                              + borrowed, "kind": link_kind, "params": {k: round(v, 4) for k, v in params.items()}}
    p.write_text(yaml.safe_dump(doc, sort_keys=False, width=110))
    return p
