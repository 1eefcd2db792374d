"""Blind grid 18 of the engines' all-reduce kernels on 4 x H100 (4 AND 2 ranks): the H100 as shipped after grid 17 (its
engine_allreduce_rules = engine_allreduce_grid17.GRID17_H100_RULES: grid 16's first_fill_extra, grid 17's two 2-rank
rules and refitted lamport_overlap) judged on every (implementation, ranks, size regime) cell at once, against the H100 as
shipped after grid 16 (GRID16_H100_RULES). Grid 17 held only 2-rank rows and grid 16's 2-rank rows were fitted on, so this
is the first blind grid of all 31 cells for the model as it ships; its shipped model's row becomes the H100's STANDING.

Both prices are committed (BLIND18_PRED_CSV) before lab/kernels/run_engine_allreduce_blind18.sh measures (4 x H100 only:
it stops at once on H200s). Shapes (tokens, hidden) in no earlier grid (earlier_shapes18); >= 6 rows in every cell.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

BLIND18_SHAPES = ((7, 3072), (28, 1024), (19, 1280), (5, 4608), (20, 1536), (16, 2048), (30, 1024),
                  (12, 4096), (23, 3072), (34, 2560), (41, 4096), (26, 5120), (64, 2048),
                  (72, 4096), (88, 5120), (42, 7168), (54, 6144), (36, 8192), (140, 3072), (230, 2048),
                  (185, 5120), (145, 8192), (360, 4096), (440, 6144), (650, 5120), (910, 3584), (490, 8192))
BLIND18_CONTROL = ((7, 3072), (28, 1024), (19, 1280), (5, 4608), (20, 1536), (16, 2048),
                   (23, 3072), (34, 2560), (41, 4096), (64, 2048), (72, 4096), (42, 7168), (140, 3072),
                   (185, 5120), (145, 8192), (360, 4096), (440, 6144), (650, 5120), (490, 8192))
BLIND18_PRED_CSV = "engine_allreduce_blind18_prediction_H100-SXM_2026-11-28.csv"
BLIND18_MEAS_GLOB = "engine_allreduce_blind18_nvidia-h100*.csv"


def earlier_shapes18() -> set:
    """Every (tokens, hidden) an earlier grid measured (campaign, blind 4, 6-17)."""
    from simulator.calibration import engine_allreduce_grid17 as G17

    return G17.earlier_shapes17() | set(G17.BLIND17_SHAPES)


def blind18_grid() -> pd.DataFrame:
    """Blind grid 18's rows: BLIND18_SHAPES at 4 ranks, BLIND18_CONTROL at 2 (measure_engine_allreduce.py --grid blind18)."""
    from simulator.calibration import engine_allreduce as EA

    return pd.concat([EA.grid((4,), list(BLIND18_SHAPES)), EA.grid((2,), list(BLIND18_CONTROL))], ignore_index=True)


def blind18_prediction(out: str | Path, model_commit: str) -> pd.DataFrame:
    """Write blind grid 18's prediction BEFORE it is measured: pred_main_us = the H100 with GRID16_H100_RULES (as shipped
    after grid 16), pred_new_us = the H100 with GRID17_H100_RULES (as shipped after grid 17, the model at model_commit)."""
    from hwmodels.spec import load_hardware
    from simulator.calibration import engine_allreduce as EA
    from simulator.calibration import engine_allreduce_grid16 as G16
    from simulator.calibration import engine_allreduce_grid17 as G17

    h100 = load_hardware("H100-SXM")
    df = blind18_grid()
    df["kind"] = df["impl"].map(EA.IMPL_KIND)
    df["pred_main_us"] = np.round(EA.predict_us(df, G16.with_rules(h100, G16.GRID16_H100_RULES)), 3)
    df["pred_new_us"] = np.round(EA.predict_us(df, G16.with_rules(h100, G17.GRID17_H100_RULES)), 3)
    EA.trtllm_launch_columns(df, int(h100.units), tokens_per_cluster=False)
    df["regime"] = EA.size_regime(df["bytes"])
    df["device"] = h100.name
    df["main_model"] = f"the H100 with engine_allreduce_rules {G16.GRID16_H100_RULES} (as shipped after grid 16)"
    df["new_model"] = (f"the model at {model_commit}: the H100 with engine_allreduce_rules {G17.GRID17_H100_RULES} "
                       "(as shipped after grid 17)")
    df.to_csv(out, index=False)
    return df
