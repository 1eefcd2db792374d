"""Blind grid 6 of the engines' all-reduce kernels: `blind6_prediction`, 2 and 4 ranks, BLIND6_TOKENS x BLIND6_HIDDENS +
BLIND6_EXTRA, priced by the model at BLIND6_MAIN_COMMIT (`price_in_tree` on that commit exported) and by the current
one (no flag barrier in the Lamport one-shot, the fused RMSNorm's norm term), both committed before
lab/kernels/run_engine_allreduce_blind6.sh measures them; benchmarks/calibration_accuracy.py prints the table (moved
unchanged from engine_allreduce.py, whose live code it imports; the grid's record is the comment above its shapes).
`python -m simulator.calibration.engine_allreduce_grid6 MAIN_TREE MODEL_COMMIT` writes the prediction (MAIN_TREE:
BLIND6_MAIN_COMMIT exported, `git archive 65f5d1f | tar -x -C DIR`).
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from hwmodels.spec import HardwareSpec
from simulator.calibration.engine_allreduce import DATA_DIR, _price_both, _write_prediction, grid

#: the blind test of the per-kernel structure (ENGINE_AR_BARRIERS: no flag barrier in the Lamport one-shot; norm_s:
#: the fused RMSNorm's serialized reductions): 2 and 4 ranks, token counts and hidden sizes in none of the committed
#: campaigns (lab/kernels/measure_engine_allreduce.py --grid blind6), priced by the model at BLIND6_MAIN_COMMIT and by
#: the new one, both committed (BLIND6_PRED_CSV) before the measurement
BLIND6_WORLDS = (2, 4)
BLIND6_TOKENS = (3, 6, 10, 24, 48, 80, 160, 320, 640)
BLIND6_HIDDENS = (3072, 6144)
BLIND6_EXTRA = ((1280, 6144),)
BLIND6_PRED_CSV = "engine_allreduce_blind6_prediction_H100-SXM_2026-11-27.csv"

#: the measured CSV, as the lab script names it (engine_allreduce_blind6_<device>_<date>.csv)
BLIND6_MEAS_GLOB = "engine_allreduce_blind6_nvidia*.csv"
BLIND6_MAIN_COMMIT = "65f5d1f"


def blind6_grid() -> pd.DataFrame:
    """The blind test's rows (BLIND6_*): 2 and 4 ranks, every implementation the lab script runs."""
    shapes = [(t, h) for h in BLIND6_HIDDENS for t in BLIND6_TOKENS] + list(BLIND6_EXTRA)
    return grid(BLIND6_WORLDS, shapes)


def blind6_prediction(hw: HardwareSpec, main_tree: str | Path, out: str | Path, model_commit: str) -> pd.DataFrame:
    """Write the blind test's prediction BEFORE it is measured: pred_main_us = the model at BLIND6_MAIN_COMMIT (priced
    in `main_tree`, that commit exported), pred_new_us = this model (its code at `model_commit`, the committed fitted
    terms)."""
    df = _price_both(blind6_grid(), hw, main_tree)
    return _write_prediction(df, hw, out, BLIND6_MAIN_COMMIT, model_commit, ", Lamport one-shot without a flag barrier, "
                             "fused RMSNorm's serialized reductions")


def main() -> None:  # pragma: no cover - writes the committed prediction
    """`python -m simulator.calibration.engine_allreduce_grid6 MAIN_TREE MODEL_COMMIT` writes blind grid 6's prediction
    (MAIN_TREE: BLIND6_MAIN_COMMIT exported)."""
    import sys

    from hwmodels.spec import load_hardware
    df = blind6_prediction(load_hardware("H100-SXM"), sys.argv[1], DATA_DIR / BLIND6_PRED_CSV, sys.argv[2])
    print(df.groupby(["impl", "world"])[["pred_main_us", "pred_new_us"]].median().round(2))


if __name__ == "__main__":
    main()
