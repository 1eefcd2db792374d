"""Read the latency measurements (measure_latency.py) into the roofline's loop floor.

From one CSV of a device:
  dram_us       median dependent-load time of the pointer-chase rows whose footprint is >= 256 MiB
                (far beyond L2: every step misses)
  l2_us         the same for footprints <= 16 MiB (the cycle stays in L2)
  loop_iter_us  slope of a straight line t = c + iterations * loop_iter through the 'page_scan' rows of
                the page-selector structure (block-table indirection, L2 evicted before each launch) at
                <= 32 CTAs and >= 16 iterations: one CTA per SM, so no CTA waits for bandwidth and the time
                is the loop's latency chain. The intercept c is reported, not used (the roofline's fixed
                time of the op's kind stands in for it).
Every other page_scan row is a check, priced through hwmodels.roofline as a kind-'attention' op with its
bytes, CTAs and `serial_iters` (no parameter is fitted to them): more CTAs (bandwidth contention), the
variant without a block table, and the L2-hot launches. The report prints their errors by group.

The values go into calibration/fitted/<device>.yaml under `latency:` (merged; other keys are kept).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from hwmodels.calibration.report import group_error_table as error_table
from hwmodels.errors import SparsesimError
from hwmodels.spec import FITTED_DIR, HardwareSpec

REQUIRED = ("device", "family", "median_us")
FIT_MAX_CTAS = 32
FIT_MIN_ITERS = 16


def load(path: str | Path) -> pd.DataFrame:
    p = Path(path)
    if not p.exists():
        raise SparsesimError("no such file", file=str(p))
    df = pd.read_csv(p)
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing or not {"chase", "page_scan"} <= set(df["family"]):
        raise SparsesimError("is not a measure_latency.py CSV (needs chase and page_scan rows)", file=str(p))
    return df


def fit_rows(df: pd.DataFrame) -> np.ndarray:
    return ((df["family"] == "page_scan") & (df["cache"] == "cold") & (df["indirect"] == 1)
            & (df["ctas"] <= FIT_MAX_CTAS) & (df["iterations"] >= FIT_MIN_ITERS)).to_numpy()


def fit(df: pd.DataFrame) -> dict:
    ch = df[df["family"] == "chase"]
    dram = ch[ch["footprint_bytes"] >= 256 * 2**20]["median_us"]
    l2 = ch[ch["footprint_bytes"] <= 16 * 2**20]["median_us"]
    if dram.empty or l2.empty:
        raise SparsesimError("needs chase rows both <= 16 MiB and >= 256 MiB")
    rows = df[fit_rows(df)]
    if len(rows) < 3:
        raise SparsesimError(f"needs >= 3 cold page_scan rows with indirect=1, <= {FIT_MAX_CTAS} CTAs and "
                             f">= {FIT_MIN_ITERS} iterations; found {len(rows)}")
    A = np.c_[np.ones(len(rows)), rows["iterations"].to_numpy(float)]
    (c, slope), *_ = np.linalg.lstsq(A, rows["median_us"].to_numpy(float), rcond=None)
    return {"loop_iter_us": float(slope), "intercept_us": float(c), "dram_us": float(dram.median()),
            "l2_us": float(l2.median()), "fit_rows": int(len(rows))}


def check(df: pd.DataFrame, hw: HardwareSpec) -> pd.DataFrame:
    """Every page_scan row priced by the roofline (kind attention, its bytes / CTAs / serial_iters)."""
    from hwmodels.roofline import price
    from simulator.ops import OpBuilder

    ps = df[df["family"] == "page_scan"].reset_index(drop=True)
    b = OpBuilder(len(ps))
    b.add("page_scan", "attention", bytes_read=ps["bytes_moved"].to_numpy(float),
          parallel_units=ps["ctas"].to_numpy(float), serial_iters=ps["iterations"].to_numpy(float), dtype="fp16")
    ops = b.build()
    pred = price(ops, hw, launch="graph") - hw.launch_graph_s
    pred_us = np.bincount(ops.setting, weights=pred, minlength=len(ps)) * 1e6
    fitted = fit_rows(ps)
    group = np.where(fitted, "fit: selector structure, <= 32 CTAs, cold",
                     np.where(ps["cache"] == "hot", "check: L2-hot launches",
                              np.where(ps["indirect"] == 0, "check: no block table, cold",
                                       np.where(ps["ctas"] > FIT_MAX_CTAS, "check: 64-512 CTAs, cold",
                                                "check: < 16 iterations, cold"))))
    return ps.assign(predicted_us=pred_us, error_pct=(pred_us / ps["median_us"] - 1) * 100, group=group)


def write(params: dict, target: str, data_file: str, measured_on: str, table: pd.DataFrame,
          out_dir: Path = FITTED_DIR) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    p = out_dir / f"{target}.yaml"
    doc = (yaml.safe_load(p.read_text()) or {}) if p.exists() else {"source": f"latency fit for {target}"}
    borrowed = "" if measured_on == target else f" (measured on {measured_on}: borrowed)"
    doc["latency"] = {
        "loop_iter_us": round(params["loop_iter_us"], 4),
        "dram_us": round(params["dram_us"], 4),
        "l2_us": round(params["l2_us"], 4),
        "source": f"hwmodels/calibration/fit_latency.py on {Path(data_file).name}{borrowed}",
        "intercept_us": round(params["intercept_us"], 3),
        "fit_rows": params["fit_rows"],
        "errors_pct": [{k: (round(v, 2) if isinstance(v, float) else (int(v) if isinstance(v, np.integer) else v))
                        for k, v in r.items()} for r in table.to_dict("records")],
    }
    p.write_text(yaml.safe_dump(doc, sort_keys=False, width=110))
    return p
