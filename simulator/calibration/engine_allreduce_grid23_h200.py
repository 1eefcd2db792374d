"""Blind grid 23's shapes priced for the H200 as shipped (its engine_allreduce_rules of grid 16, its own engine terms),
committed BEFORE a run (engine_allreduce_grid23 prices the H100). Written when two 4 x H100 requests for grid 23 were
served by 4 x H200 (2026-11-28 02:40-02:45 UTC): the same script, run on H200s, then judges the H200 model under
protocol B (21 replays of 40 calls), which no H200 grid had (grids 11-16 ran protocol A). Nothing is fitted here.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

BLIND23_H200_PRED_CSV = "engine_allreduce_blind23_prediction_H200_2026-11-28.csv"
BLIND23_H200_MEAS_GLOB = "engine_allreduce_blind23B_nvidia-h200*.csv"
#: the commit whose H200 model the prediction prices (main when it was written)
BLIND23_H200_MAIN_COMMIT = "9d3cffb"


def blind23_h200_prediction(out: str | Path) -> pd.DataFrame:
    """pred_main_us = the H200 as shipped for every row of blind grid 23 (the H100 file's rows, diagnostic included)."""
    from hwmodels.spec import load_hardware
    from simulator.calibration import engine_allreduce as EA
    from simulator.calibration import engine_allreduce_grid23 as G23

    hw = load_hardware("H200")
    df = G23.blind23_grid()
    df["kind"] = df["impl"].map(EA.IMPL_KIND)
    df["pred_main_us"] = np.round(G23.predict(df, hw), 3)
    EA.trtllm_launch_columns(df, int(hw.units), tokens_per_cluster=False)
    df["regime"] = EA.size_regime(df["bytes"])
    df["calls_B"] = G23.calls_b(df["bytes"])
    df["reps_B"] = G23.REPS_B
    df["device"] = "H200"
    df["main_model"] = (f"the H200 as shipped at {BLIND23_H200_MAIN_COMMIT} (engine_allreduce_rules "
                        f"{dict(hw.efficiency.engine_ar_rules)})")
    df.to_csv(out, index=False)
    return df


def load_blind23_h200(data_dir: Path | None = None) -> pd.DataFrame | None:
    """The H200 prediction joined to the H200 run of grid 23 (protocol B; engine_allreduce_grid23.join_run): err =
    pred_main_us / median - 1, spread = p80 / p20; WRONG rows left out; None while no H200 measurement is committed."""
    from simulator.calibration.engine_allreduce_grid23 import join_run

    return join_run(BLIND23_H200_PRED_CSV, BLIND23_H200_MEAS_GLOB, data_dir)

if __name__ == "__main__":
    import sys

    print(blind23_h200_prediction(sys.argv[1]).groupby(["world", "regime"]).size())
