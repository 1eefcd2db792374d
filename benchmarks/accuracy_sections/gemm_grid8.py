"""Block-scaled fp8 GEMM grid 8, BLIND for both libraries: cuBLASLt's shipped split-K rule (simulator/kernels/gemm_fp8.py
cublaslt_block_split, read off 38 recorded choices) with its times, and DeepGEMM's pipeline fill curve (gemm_fp8.
FILL_CURVE: the fill a short K loop does not expose saved as (r^n - r^S) / (1 - r^S) of the full fill, not linearly per
unfilled stage; fitted on the fill7 K scans only).

The grid (lab/kernels/predict_gemm_grid8.py; no (M, K, N) of any earlier CSV but two marked fill7 repeats) was priced
and committed before it was measured (f73dbb8): cuBLASLt decode / small-M shapes M 8-128 (split counts and times of the
shipped model, 2bec4e2, and of the model before the read-off rule, 08cf44f); DeepGEMM one-wave K 128-1024 at new (M, N),
one-wave block_m 64 tiles at M 56-64 x N 4096-12288, controls (main = 2bec4e2: the linear unfilled-stage rule; new =
the fill curve of 35b7db0, the kind's other terms as committed). One device call (run_deepgemm_gemm_device.sh OUT
grid8.csv 14 grid8; H100 80GB HBM3, 2026-11-27).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from hwmodels import datafiles as DF
from simulator.calibration import fit_production_topk_gemm as FP
from simulator.calibration.scoreboard import BOARD, add_table, models_table

PREDICTION_COMMIT = "f73dbb8"
CL_PREDICTION = "gemm_grid8_prediction_35b7db0_2026-11-27_cublaslt.csv"
DG_PREDICTION = "gemm_grid8_prediction_35b7db0_2026-11-27_deepgemm.csv"
MEASURED_GLOB = "gemm_grid8_nvidia-h100-80gb-hbm3_*.csv"
FAMILY = "block fp8 GEMM (DeepGEMM / cuBLASLt)"
#: prediction column -> label, per library
CL_MODELS = {"pred_main_us": "main", "pred_before_us": "before"}
DG_MODELS = {"pred_main_us": "main", "pred_new_us": "new"}
#: the models that ship (their grid-8 rows hold the STANDING markers): cuBLASLt's rule as it is (main), DeepGEMM's
#: fill curve (new: it won the blind grid's target regime and pooled, no regime lost)
CL_SHIPPED, DG_SHIPPED = "main", "new"


def _measured() -> pd.DataFrame | None:
    files = DF.glob(FP.DATA_DIR, MEASURED_GLOB)
    if not files:
        return None
    me = pd.read_csv(files[-1])
    me = me[pd.to_numeric(me["median_us"], errors="coerce").notna()].copy()
    me["median_us"] = me["median_us"].astype(float)
    return me


def grid8_errors(kernel: str) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """kernel 'cublaslt' | 'deepgemm': the committed predictions joined to the timed rows with each model's signed error
    (%) (cuBLASLt: + split_recorded, the count the _notes file recorded), and the per-regime table (the fill7 repeats
    left out); (predictions, None) before the measurement exists."""
    models = CL_MODELS if kernel == "cublaslt" else DG_MODELS
    p = pd.read_csv(FP.DATA_DIR / (CL_PREDICTION if kernel == "cublaslt" else DG_PREDICTION))
    me = _measured()
    if me is None:
        return p, None
    m = p.merge(me[me["kernel"] == kernel][["rows", "k", "n", "median_us"]], on=["rows", "k", "n"])
    for col, lab in models.items():
        m[f"{lab}_err_pct"] = (m[col] / m["median_us"] - 1.0) * 100.0
    if kernel == "cublaslt":
        notes = DF.glob(FP.DATA_DIR, MEASURED_GLOB.replace(".csv", "_notes.txt"))
        rec = FP.cublaslt_recorded_splits(DF.read_text(notes[-1]))
        m["split_recorded"] = [rec.get((a, b, c), 0) for a, b, c in zip(m["rows"], m["k"], m["n"])]
    judged = m[~m["regime"].str.startswith("repeat")]
    return m, models_table(judged, ["regime"], list(models.values()), list(models.values()))


def grid8_section() -> None:
    """Print grid 8's two blind tables (cuBLASLt: shipped rule vs the one before, split counts and times; DeepGEMM: main
    vs the fill curve) and add their board rows."""
    fmt = {"float_format": lambda v: f"{v:.1f}", "index": False}
    m, tab = grid8_errors("cublaslt")
    head = (f"\n== cuBLASLt block fp8 GEMM grid 8, BLIND (split counts AND times predicted before measuring, commit "
            f"{PREDICTION_COMMIT}: {CL_PREDICTION}): torch._scaled_mm's block path at M 8-128, 8-60 tiles, 32-144 K "
            f"steps; main = the shipped model (2bec4e2: the split rule read off 38 recorded choices, the kind refitted "
            f"under it), before = 08cf44f (the rule before)")
    if tab is None:
        print(head + f": NOT MEASURED YET ({len(m)} rows)")
        return
    named = {c: int((m[c] == m["split_recorded"]).sum()) for c in ("split_main", "split_before")}
    sides = {c: int(((m[c] > 1) == (m["split_recorded"] > 1)).sum()) for c in ("split_main", "split_before")}
    print(head + f"; split counts named: main {named['split_main']} of {len(m)} ({sides['split_main']} split / "
          f"no-split decisions), before {named['split_before']} ({sides['split_before']}); |error| median / p90 and "
          f"signed median, %")
    print(m[["rows", "k", "n", "tiles", "ksteps", "split_recorded", "split_main", "split_before", "median_us",
             "main_err_pct", "before_err_pct"]].to_string(**fmt))
    print(tab.to_string(**fmt))
    for lab in CL_MODELS.values():
        mark = False   # cuBLASLt's STANDING marker moved to grid 9 (accuracy_sections/gemm_grid9.py)
        add_table(tab, "blind", f"cuBLASLt grid 8 (H100, decode / small M, split counts + times), {lab}",
                  goal=f"{lab}_goal", family=FAMILY, standing=mark)
        BOARD.add(FAMILY, "blind", f"cuBLASLt grid 8 pooled, {lab}", m[f"{lab}_err_pct"].to_numpy(np.float64),
                  standing=mark)

    d, tab = grid8_errors("deepgemm")
    rep = d[d["regime"].str.startswith("repeat")]
    print(f"\n== DeepGEMM block fp8 GEMM grid 8, BLIND (predicted before measuring, commit {PREDICTION_COMMIT}: "
          f"{DG_PREDICTION}): one-wave K 128-1024 at new (M, N), one-wave block_m 64 tiles at M 56-64 x N "
          f"4096-12288, controls; main = 2bec4e2 (sync_us per unfilled stage), new = the fill curve (gemm_fp8."
          f"FILL_CURVE; full fill and per-step ratio fitted on the fill7 scans only, the other terms as committed); "
          f"{len(d) - len(rep)} judged rows + {len(rep)} fill7 repeats (not judged; measured "
          f"{', '.join(f'{v:.2f}' for v in rep['median_us'])} us); |error| median / p90 and signed median, %")
    print(d[["rows", "k", "n", "layout", "stages", "ksteps", "regime", "median_us", "main_err_pct",
             "new_err_pct"]].to_string(**fmt))
    print(tab.to_string(**fmt))
    judged = d[~d["regime"].str.startswith("repeat")]
    for lab in DG_MODELS.values():
        mark = lab == DG_SHIPPED and "block fp8 GEMM: DeepGEMM"
        add_table(tab, "blind", f"DeepGEMM grid 8 (H100, one-wave K<=1024 + block_m 64 one wave + controls), {lab}",
                  goal=f"{lab}_goal", family=FAMILY, standing=mark)
        BOARD.add(FAMILY, "blind", f"DeepGEMM grid 8 pooled, {lab}", judged[f"{lab}_err_pct"].to_numpy(np.float64),
                  standing=mark)
