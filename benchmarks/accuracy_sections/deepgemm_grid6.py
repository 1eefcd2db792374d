"""Block-scaled fp8 GEMM grid 6 (DeepGEMM fp8_gemm_nt): the per-wave tile turnover of DeepGEMM's persistent kernel
hidden under the byte stream (hwmodels/roofline.py CTA_FIXED_HIDDEN, kind gemm_fp8_block), judged BLIND.

The grid (lab/kernels/predict_deepgemm_gemm_grid6.py: several-wave tiny-K (K <= 512) and K 640-1024 shapes, long-K
prefill, one-wave tiny-K and long-K decode controls, no (M, K, N) of any earlier CSV) was priced by main's model
(06e70f8) and by the new one (33275dc: the rule + the kind's terms refitted on its 59 named fit rows) and committed
before it was measured (lab/kernels/run_deepgemm_gemm_device.sh OUT lab/kernels/deepgemm_gemm_grid6_grid.csv 14 grid6).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from simulator.calibration import fit_production_topk_gemm as FP
from simulator.calibration.scoreboard import BOARD, add_table, models_table

PREDICTION_COMMIT = "5177194"
PREDICTION = "deepgemm_gemm_grid6_prediction_33275dc_2026-11-27.csv"
MEASURED_GLOB = "deepgemm_gemm_grid6_nvidia-h100-80gb-hbm3_*.csv"
#: prediction column -> label
MODELS = {"pred_main_us": "main", "pred_new_us": "new"}
FAMILY = "block fp8 GEMM (DeepGEMM / cuBLASLt)"


def grid_errors(prediction: str, measured_glob: str) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """A DeepGEMM grid's committed predictions (`prediction`) joined to its newest measurement (`measured_glob`, timed
    DeepGEMM rows), with each model's signed error (%), and the per-regime table (None before the measurement
    exists)."""
    p = pd.read_csv(FP.DATA_DIR / prediction)
    files = sorted(FP.DATA_DIR.glob(measured_glob))
    if not files:
        return p, None
    me = pd.read_csv(files[-1])
    me = me[(me["kernel"] == "deepgemm") & pd.to_numeric(me["median_us"], errors="coerce").notna()]
    m = p.merge(me[["rows", "k", "n", "median_us"]], on=["rows", "k", "n"])
    m["median_us"] = m["median_us"].astype(float)
    for col, lab in MODELS.items():
        m[f"{lab}_err_pct"] = (m[col] / m["median_us"] - 1.0) * 100.0
    return m, models_table(m, ["regime"], list(MODELS.values()), list(MODELS.values()))


def grid6_errors() -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """Grid 6's rows and per-regime table (grid_errors)."""
    return grid_errors(PREDICTION, MEASURED_GLOB)


def grid6_section() -> None:
    """Print grid 6's blind table (main vs new per regime) and add its board rows."""
    m, tab = grid6_errors()
    head = (f"\n== DeepGEMM block fp8 GEMM grid 6, BLIND (predicted before measuring, commit {PREDICTION_COMMIT}: "
            f"{PREDICTION}): several-wave tiny K <= 512 / K 640-1024 (DeepSeek-V3 wkv_b, Qwen3-30B-A3B expert down, "
            f"...) + long-K prefill, one-wave tiny-K and long-K decode controls; main = the model at 06e70f8, new = a "
            f"later tile's turnover hidden under the byte stream (the persistent kernel's TMA producer loads the next "
            f"tile before the epilogue: roofline CTA_FIXED_HIDDEN, sm90_fp8_gemm_1d2d.cuh @ 54e2261), the kind "
            f"refitted on its 59 named fit rows (no row of this grid fitted); weights rotated past the L2")
    if tab is None:
        med = m.groupby("regime")[list(MODELS)].median()
        print(head + f": NOT MEASURED YET ({len(m)} rows); predicted medians, us:")
        print(med.to_string(float_format=lambda v: f"{v:.2f}"))
        return
    print(head + f"; |error| median / p90 and signed median, %, {len(m)} timed rows")
    print(tab.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    for lab in MODELS.values():
        # the family's STANDING marker is on grid 7's shipped row (accuracy_sections/deepgemm_grid7.py)
        add_table(tab, "blind", f"DeepGEMM grid 6 (H100, several-wave short K + controls), {lab}", goal=f"{lab}_goal",
                  family=FAMILY)
        BOARD.add(FAMILY, "blind", f"DeepGEMM grid 6 pooled, {lab}", m[f"{lab}_err_pct"].to_numpy(np.float64))
