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

The values go into <fitted dir>/<device>.yaml under `latency:` (merged; other keys are kept).

Refusal bound (`check_result`): the fit rows' median |error| <= 15 % (p90 <= 30 %) and the held-out
64-512-CTA rows' median <= 25 % (p90 <= 45 %) (committed H100 / H200: 3.4 / 3.3 % and 9.4 / 7.3 %), plus the
physical ranges: loop iteration, DRAM and L2 latency in (0, 100) us.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from hwmodels import datafiles as DF
from hwmodels.errors import SparsesimError
from hwmodels.spec import HardwareSpec
from simulator.calibration import checks as C
from simulator.calibration.report import group_error_table as error_table  # noqa: F401 - used as FT.error_table

REQUIRED = ("device", "family", "median_us")
FIT_MAX_CTAS = 32
FIT_MIN_ITERS = 16


def load(path: str | Path) -> pd.DataFrame:
    """Read a measure_latency.py CSV strictly (one line per malformed file)."""
    df, _ = C.read_csv(path, REQUIRED + ("footprint_bytes", "cache", "indirect", "ctas", "iterations",
                                         "bytes_moved"), "a measure_latency.py CSV")
    fam = df["family"].astype(str).str.strip()
    if not {"chase", "page_scan"} <= set(fam):
        raise C.CalibrationError("is not a measure_latency.py CSV (needs chase and page_scan rows)", file=str(path))
    C.positive_columns(df, (fam == "chase").to_numpy(), ("footprint_bytes",), str(path), "chase")
    C.positive_columns(df, (fam == "page_scan").to_numpy(), ("ctas", "iterations", "bytes_moved"), str(path),
                       "page_scan")
    df = C.numeric(df, ("footprint_bytes", "ctas", "iterations", "bytes_moved", "indirect")).assign(family=fam)
    df["cache"] = df["cache"].astype(str).str.strip()
    df.attrs["file"] = str(path)
    return df


def fit_rows(df: pd.DataFrame) -> np.ndarray:
    return ((df["family"] == "page_scan") & (df["cache"] == "cold") & (df["indirect"] == 1)
            & (df["ctas"] <= FIT_MAX_CTAS) & (df["iterations"] >= FIT_MIN_ITERS)).to_numpy()


def fit(df: pd.DataFrame) -> dict:
    ch = df[df["family"] == "chase"]
    dram = ch[ch["footprint_bytes"] >= 256 * 2**20]["median_us"]
    l2 = ch[ch["footprint_bytes"] <= 16 * 2**20]["median_us"]
    if dram.empty or l2.empty:
        raise SparsesimError("needs chase rows both <= 16 MiB and >= 256 MiB", file=df.attrs.get("file"))
    rows = df[fit_rows(df)]
    if len(rows) < 3:
        raise SparsesimError(f"needs >= 3 cold page_scan rows with indirect=1, <= {FIT_MAX_CTAS} CTAs and "
                             f">= {FIT_MIN_ITERS} iterations; found {len(rows)}", file=df.attrs.get("file"))
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


def check_result(params: dict, chk: pd.DataFrame, file: str) -> None:
    """Refuse unphysical latencies or a fit that misses its bounds (module docstring)."""
    C.check_physical({"latency.loop_iter_us": params["loop_iter_us"], "latency.dram_us": params["dram_us"],
                      "latency.l2_us": params["l2_us"]}, file)
    for group, med_b, p90_b in (("fit: selector structure, <= 32 CTAs, cold", 15.0, 30.0),
                                ("check: 64-512 CTAs, cold", 25.0, 45.0)):
        e = chk[chk["group"] == group]["error_pct"].abs().to_numpy(float)
        if len(e) == 0:
            if group.startswith("fit"):
                raise C.CalibrationError(f"no '{group}' rows to check the fit on", file=file)
            continue
        med, p90 = float(np.median(e)), float(np.percentile(e, 90))
        if not (med <= med_b and p90 <= p90_b):
            raise C.CalibrationError(f"the latency fit misses its bound on '{group}': median |error| {med:.3g} % "
                                     f"(bound {med_b:g} %), p90 {p90:.3g} % (bound {p90_b:g} %); nothing was written",
                                     file=file)


def write(params: dict, target: str, data_file: str, measured_on: str, table: pd.DataFrame,
          out_dir: Path) -> Path:
    p = Path(out_dir) / f"{target}.yaml"
    borrowed = "" if measured_on == target else f" (measured on {measured_on}: borrowed)"
    own = {"latency": {
        "loop_iter_us": round(params["loop_iter_us"], 4),
        "dram_us": round(params["dram_us"], 4),
        "l2_us": round(params["l2_us"], 4),
        "source": f"simulator/calibration/fit_latency.py on {DF.name(data_file)}{borrowed}",
        "intercept_us": round(params["intercept_us"], 3),
        "fit_rows": params["fit_rows"],
        "errors_pct": [{k: (round(v, 2) if isinstance(v, float) else (int(v) if isinstance(v, np.integer) else v))
                        for k, v in r.items()} for r in table.to_dict("records")],
    }}
    if not p.exists():
        own["source"] = f"latency fit for {target}"
    return C.write_checked(p, C.merge_into(p, own, {"latency": None}), "")
