"""Block-scaled fp8 GEMM grid 7 (DeepGEMM fp8_gemm_nt): a K loop shorter than the pipeline's stages exposes less of the
fill the per-wave CTA time holds (simulator/kernels/gemm_fp8.py UNFILLED_STAGES, kind gemm_fp8_block), judged BLIND.

The grid (lab/kernels/predict_deepgemm_gemm_grid7.py: one-wave tiny-K (K 256-512) decode where the rule applies,
several-wave K 640-1024, controls: several-wave tiny K, long-K prefill, long-K decode and one-wave K 640-1024 decode; no
(M, K, N) of any earlier CSV) was priced by main's model (08cf44f) and by the new one (9720e84: the rule + the kind's
terms refitted on its 91 named fit rows, the fill7 K scans among them) and committed before it was measured
(lab/kernels/run_deepgemm_gemm_device.sh OUT grid7.csv 14 grid7, the grid + 3 fill7 rows repeated).
The same section prints cuBLASLt's split-K choice on 16 fresh decode shapes (the fill7 call): the split counts the rule
before and the read-off rule named (committed before the call) against the kernels cuBLASLt launched, and the two
models' times, priced AFTER the measurement from those committed rules (looked-at; nothing of this set fitted).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from simulator.calibration import fit_production_topk_gemm as FP
from simulator.calibration.scoreboard import BOARD, add_table

from .deepgemm_grid6 import grid_errors

PREDICTION_COMMIT = "e05ff06"
PREDICTION = "deepgemm_gemm_grid7_prediction_9720e84_2026-11-27.csv"
MEASURED_GLOB = "deepgemm_gemm_grid7_nvidia-h100-80gb-hbm3_*.csv"
#: prediction column -> label
MODELS = {"pred_main_us": "main", "pred_new_us": "new"}
FAMILY = "block fp8 GEMM (DeepGEMM / cuBLASLt)"
#: the model that ships (its grid-7 row holds the family's STANDING marker)
SHIPPED = "new"

def _split7_table() -> None:
    m = FP.cublaslt_split7_errors(MODELS)
    named = {c: int((m[c] == m["split_recorded"]).sum()) for c in ("split_main", "split_readoff")}
    sides = {c: int(((m[c] > 1) == (m["split_recorded"] > 1)).sum()) for c in ("split_main", "split_readoff")}
    print(f"\n== cuBLASLt block fp8 GEMM split-K choice, 16 fresh decode shapes (M 8-64, 8-48 tiles, 32-128 K steps; "
          f"split counts committed before the call: {FP.CUBLASLT_SPLIT7_PREDICTION}): the rule before named {named['split_main']} "
          f"of {len(m)} recorded counts ({sides['split_main']} split / no-split decisions), the read-off rule (shipped) "
          f"{named['split_readoff']} ({sides['split_readoff']}); times priced AFTER the measurement from those rules "
          f"(main = 08cf44f, new = the read-off rule with the kind refitted on its own fit rows; LOOKED-AT), |error| "
          f"median / p90 and signed median, %")
    cols = ["rows", "k", "n", "tiles", "ksteps", "split_recorded", "split_main", "split_readoff", "median_us",
            "main_err_pct", "new_err_pct"]
    print(m[cols].to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    for lab in MODELS.values():
        e = m[f"{lab}_err_pct"]
        print(f"  {lab}: {e.abs().median():.1f} / {e.abs().quantile(0.9):.1f} %, signed {e.median():+.1f} %")
        BOARD.add(FAMILY, "looked-at", f"cuBLASLt split-K set 7 (16 decode shapes; split counts blind, times LOOKED-AT), {lab}",
                  e.to_numpy(np.float64))


def grid7_errors() -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """Grid 7's rows and per-regime table (deepgemm_grid6.grid_errors)."""
    return grid_errors(PREDICTION, MEASURED_GLOB)


def grid7_section() -> None:
    """Print grid 7's blind table (main vs new per regime) and the cuBLASLt split-K set's table; add their board
    rows."""
    _split7_table()
    m, tab = grid7_errors()
    head = (f"\n== DeepGEMM block fp8 GEMM grid 7, BLIND (predicted before measuring, commit {PREDICTION_COMMIT}: "
            f"{PREDICTION}): one-wave tiny-K (K 256-512) decode + several-wave K 640-1024, with several-wave tiny-K, "
            f"long-K prefill / decode and one-wave K 640-1024 controls; main = the model at 08cf44f, new = a K loop "
            f"shorter than the pipeline's stages exposes less fill (sync_us[gemm_fp8_block] per unfilled stage: "
            f"gemm_fp8.UNFILLED_STAGES, sm90_fp8_gemm_1d2d.cuh @ 54e2261), the kind refitted on its 91 named fit rows "
            f"(the fill7 K scans among them; no row of this grid fitted); weights rotated past the L2")
    if tab is None:
        med = m.groupby("regime")[list(MODELS)].median()
        print(head + f": NOT MEASURED YET ({len(m)} rows); predicted medians, us:")
        print(med.to_string(float_format=lambda v: f"{v:.2f}"))
        return
    print(head + f"; |error| median / p90 and signed median, %, {len(m)} timed rows")
    print(tab.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    for lab in MODELS.values():
        mark = False   # the STANDING marker moved to grid 8 (accuracy_sections/gemm_grid8.py)
        add_table(tab, "blind", f"DeepGEMM grid 7 (H100, one-wave tiny K + several-wave K 640-1024 + controls), {lab}",
                  goal=f"{lab}_goal", family=FAMILY, standing=mark)
        BOARD.add(FAMILY, "blind", f"DeepGEMM grid 7 pooled, {lab}", m[f"{lab}_err_pct"].to_numpy(np.float64),
                  standing=mark)
