"""Blind grid 8 of the engines' all-reduce kernels: vLLM's two-shot in whole loop steps and the Lamport push's own link
ceiling over > 1 peer (fit_grid8_terms on grids 4, 6 and 7; shipped) (moved unchanged from engine_allreduce.py, whose
live code it imports; the grid's record is the comment above its shapes). `python -m
simulator.calibration.engine_allreduce_grid8 MAIN_TREE MODEL_COMMIT` writes its prediction.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from hwmodels.spec import HardwareSpec
from simulator.calibration.engine_allreduce import DATA_DIR, _price_both, _write_prediction, grid, predict_with

#: blind grid 8 (4 ranks, with 2-rank controls; token counts in none of the earlier grids, the 4-rank messages just below
#: and just above whole loop steps of vLLM's two-shot): main = the model at BLIND8_MAIN_COMMIT, new = the candidate
#: (vLLM's two-shot in whole loop steps, the Lamport push's own link ceiling over > 1 peer: hwmodels.roofline
#: AR_WAVE_SKIP / LAMPORT_CEILING_RATIO, fitted by fit_grid8_terms on grids 4, 6 and 7 only), priced at c848512 and
#: committed (d5ee6a3) before lab/kernels/run_engine_allreduce_blind8.sh measured them. The candidate won blind (19 of 22
#: regimes against 17) and is the model now: predict_us prices it
#: the 4-rank rows the grid-8 terms are fitted on (fit_grid8_terms): blind grids 4, 6 and 7, all measured before grid 8
GRID8_FIT_GLOBS = ("engine_allreduce_blind4_nvidia*.csv", "engine_allreduce_blind6_nvidia*.csv",
                   "engine_allreduce_blind7_nvidia*.csv")
BLIND8_SHAPES = ((9, 4096), (36, 4096), (66, 4096), (140, 4096), (150, 4096), (280, 4096), (296, 4096), (440, 4096),
                 (570, 4096),
                 (11, 8192), (30, 8192), (76, 8192), (136, 8192), (150, 8192), (220, 8192), (356, 8192), (600, 8192),
                 (13, 3584), (52, 3584), (168, 3584), (330, 3584), (900, 3584),
                 (17, 5120), (120, 5120), (230, 5120), (240, 5120))
BLIND8_CONTROL = ((36, 4096), (150, 8192), (330, 3584), (900, 3584))
BLIND8_PRED_CSV = "engine_allreduce_blind8_prediction_H100-SXM_2026-11-27.csv"
BLIND8_MEAS_GLOB = "engine_allreduce_blind8_nvidia*.csv"
BLIND8_MAIN_COMMIT = "8c86417"


def blind8_grid() -> pd.DataFrame:
    """Blind grid 8's rows: BLIND8_SHAPES at 4 ranks and BLIND8_CONTROL at 2 ranks, every implementation the lab script
    runs (lab/kernels/measure_engine_allreduce.py --grid blind8)."""
    return pd.concat([grid((4,), list(BLIND8_SHAPES)), grid((2,), list(BLIND8_CONTROL))], ignore_index=True)


def blind8_prediction(hw: HardwareSpec, main_tree: str | Path, out: str | Path, model_commit: str) -> pd.DataFrame:
    """Write blind grid 8's prediction: pred_main_us = the model at BLIND8_MAIN_COMMIT (priced in `main_tree`, that commit
    exported), pred_new_us = this model; plus each vLLM two-shot row's loop steps. The committed CSV was written at
    c848512 (the candidate as an option of predict_us, before it shipped); run today it prices the same new model
    through hwmodels.roofline."""
    from simulator.kernels.allreduce import vllm_twoshot_waves

    df = _price_both(blind8_grid(), hw, main_tree)
    df["vllm_twoshot_waves"] = np.where(df["impl"] == "vllm_twoshot", vllm_twoshot_waves(df["bytes"], df["world"]),
                                        np.nan)
    return _write_prediction(df, hw, out, BLIND8_MAIN_COMMIT, model_commit,
                             "; vLLM two-shot in whole loop steps, the Lamport push's own link ceiling over > 1 peer "
                             "(fitted on grids 4, 6, 7's 4-rank rows)")


def grid8_fit_rows() -> pd.DataFrame:
    """The 4-rank rows of blind grids 4, 6 and 7 (GRID8_FIT_GLOBS; not WRONG): what fit_grid8_terms may read."""
    from hwmodels import datafiles as DF

    fr = [pd.read_csv(DF.glob(DATA_DIR, g)[-1]) for g in GRID8_FIT_GLOBS]
    m = pd.concat(fr, ignore_index=True)
    m = m[(m["world"] == 4) & ~m["note"].astype("string").fillna("").str.contains("WRONG")]
    return m.reset_index(drop=True)


def fit_grid8_terms(hw: HardwareSpec) -> dict:
    """The two grid-8 terms (hwmodels.roofline AR_WAVE_SKIP, LAMPORT_CEILING_RATIO), each a bounded 1-D least squares on
    log time over grid8_fit_rows: the wave skip on vLLM's two-shot rows, the Lamport ratio on TensorRT-LLM's one-shot
    rows (plain and + RMSNorm) >= 2 MiB (where the link term rules). Returns the fitted values, rounded as shipped."""
    from unittest import mock

    from scipy.optimize import minimize_scalar

    import hwmodels.roofline as R

    m = grid8_fit_rows()
    v = m[m["impl"] == "vllm_twoshot"]
    lam = m[m["impl"].str.startswith("trtllm") & m["impl"].str.endswith("oneshot") & (m["bytes"] >= 2 * 2 ** 20)]

    def loss(rows, name, x):   # grid 8's rule had no fill term (AR_FILL_SLOPE 0, shipped after grid 9)
        with mock.patch.object(R, name, x), mock.patch.object(R, "AR_FILL_SLOPE", 0.0):
            return float(np.mean((np.log(predict_with(rows, hw, {})) - np.log(rows["median_us"].to_numpy(float))) ** 2))
    skip = minimize_scalar(lambda x: loss(v, "AR_WAVE_SKIP", x), bounds=(0.0, 1.0), method="bounded").x
    ratio = minimize_scalar(lambda x: loss(lam, "LAMPORT_CEILING_RATIO", x), bounds=(0.5, 1.5), method="bounded").x
    return {"AR_WAVE_SKIP": round(float(skip), 2), "LAMPORT_CEILING_RATIO": round(float(ratio), 4),
            "rows_vllm_twoshot": len(v), "rows_lamport": len(lam)}


def main() -> None:  # pragma: no cover - writes the committed prediction
    """`python -m simulator.calibration.engine_allreduce_grid8 MAIN_TREE MODEL_COMMIT` writes blind grid 8's prediction
    (MAIN_TREE: BLIND8_MAIN_COMMIT exported)."""
    import sys

    from hwmodels.spec import load_hardware
    df = blind8_prediction(load_hardware("H100-SXM"), sys.argv[1], DATA_DIR / BLIND8_PRED_CSV, sys.argv[2])
    print(df.groupby(["impl", "world"])[["pred_main_us", "pred_new_us"]].median().round(2))


if __name__ == "__main__":
    main()
