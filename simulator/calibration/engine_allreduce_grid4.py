"""Blind grid 4 of the engines' all-reduce kernels: `blind4_prediction`, 4 ranks, BLIND4_TOKENS x BLIND4_HIDDENS (shapes
in no earlier campaign), priced with the committed terms and committed before lab/kernels/measure_engine_allreduce.py
--grid blind4 measured them (moved unchanged from engine_allreduce.py, whose live code it imports; the grid's record
is the comment above its shapes).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from hwmodels.spec import HardwareSpec
from simulator.calibration.engine_allreduce import FIT_CSV, IMPL_KIND, grid, predict_us

#: the blind test (4 ranks, shapes measured in no campaign before) and its prediction, committed before the measurement
BLIND4_WORLD = 4
BLIND4_TOKENS = (2, 8, 32, 96, 192, 384, 768)
BLIND4_HIDDENS = (5120, 7168)
BLIND4_PRED_CSV = "engine_allreduce_blind4_prediction_H100-SXM_2026-11-27.csv"


def blind4_grid() -> pd.DataFrame:
    """The blind test's rows: 4 ranks, token counts and hidden sizes in none of the earlier campaigns
    (lab/kernels/measure_engine_allreduce.py --grid blind4)."""
    return grid((BLIND4_WORLD,), [(t, h) for h in BLIND4_HIDDENS for t in BLIND4_TOKENS])


def blind4_prediction(hw: HardwareSpec, out: str | Path) -> pd.DataFrame:
    """Write the blind test's prediction (the committed fitted terms, Efficiency.engine_ar) BEFORE it is measured."""
    df = blind4_grid()
    df["kind"] = df["impl"].map(IMPL_KIND)
    df["pred_us"] = np.round(predict_us(df, hw), 3)
    df["device"] = hw.name
    df["model"] = (f"engines' terms {hw.efficiency.engine_ar} fitted on {FIT_CSV} only (fit_engine_terms) + the own "
                   "kernel's link terms; nothing of these shapes or of 4 ranks of these kernels fitted")
    df.to_csv(out, index=False)
    return df
