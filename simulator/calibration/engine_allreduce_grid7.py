"""Blind grid 7 of the engines' all-reduce kernels: the Lamport one-shot's own push phase against the model at
BLIND7_MAIN_COMMIT (not kept) (moved unchanged from engine_allreduce.py, whose live code it imports; the grid's
record is the comment above its shapes). `python -m simulator.calibration.engine_allreduce_grid7 MAIN_TREE
MODEL_COMMIT` writes its prediction.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from hwmodels.spec import HardwareSpec
from simulator.calibration.engine_allreduce import DATA_DIR, _price_both, _write_prediction, grid

#: blind grid 7 (2 and 4 ranks; hidden 4096 / 5120 / 7168 / 8192 at token counts in none of the earlier grids; an
#: 18.75 MiB control past vLLM's cap): main = the model at BLIND7_MAIN_COMMIT, new = the Lamport one-shot's own push
#: phase (an engine_ar push term) with a robust (soft_l1) refit on FIT_CSV, priced at commit 09dd500; both committed
#: (ea4904a) before the measurement. The new model LOST blind (170 rows: |error| median 5.8 / p90 14.4 %, 34 of 41
#: regimes, against main's 5.6 / 14.0 %, 35 of 41: better for the Lamport one-shot at 2 ranks, worse at 4 ranks, whose
#: small messages it made 15 % too fast) and was not kept: the code here prices main's model, and pred_new_us of the
#: committed CSV is the record of the discarded one
BLIND7_WORLDS = (2, 4)
BLIND7_SHAPES = ((5, 4096), (7, 4096), (40, 4096), (112, 4096), (448, 4096),
                 (5, 5120), (20, 5120), (56, 5120), (224, 5120),
                 (12, 7168), (28, 7168), (88, 7168), (176, 7168),
                 (14, 8192), (44, 8192), (300, 8192), (1200, 8192))
BLIND7_PRED_CSV = "engine_allreduce_blind7_prediction_H100-SXM_2026-11-27.csv"
BLIND7_MEAS_GLOB = "engine_allreduce_blind7_nvidia*.csv"
BLIND7_MAIN_COMMIT = "6648a5d"


def blind7_grid() -> pd.DataFrame:
    """Blind grid 7's rows (BLIND7_*): 2 and 4 ranks, every implementation the lab script runs."""
    return grid(BLIND7_WORLDS, list(BLIND7_SHAPES))


def blind7_prediction(hw: HardwareSpec, main_tree: str | Path, out: str | Path, model_commit: str) -> pd.DataFrame:
    """Write blind grid 7's prediction BEFORE it is measured: pred_main_us = the model at BLIND7_MAIN_COMMIT (priced in
    `main_tree`, that commit exported), pred_new_us = this model (its code at `model_commit`, the fitted terms). The
    committed CSV was written at 09dd500 (the discarded push-phase model); run today it would price main's model
    twice. Its lamport_tokens_per_cluster column (priced by neither model) was computed with trtllm_cluster_size's
    arguments swapped (tokens for hidden), fixed after the measurement: read it from trtllm_oneshot_token_steps."""
    df = _price_both(blind7_grid(), hw, main_tree)
    # the Lamport one-shot's tokens per cluster (a thread's serial token loop; priced by neither model, kept to read
    # the errors against)
    from simulator.kernels.allreduce import trtllm_oneshot_token_steps
    steps = trtllm_oneshot_token_steps(df["tokens"], df["hidden"], df["world"], int(hw.units))
    df["lamport_tokens_per_cluster"] = np.where(df["kind"] == "allreduce_1shot_lamport", steps + 1.0, np.nan)
    return _write_prediction(df, hw, out, BLIND7_MAIN_COMMIT, model_commit, "; the Lamport one-shot's own push phase "
                             "(push: posted stores + local poll, no peer round trip)")


def main() -> None:  # pragma: no cover - writes the committed prediction
    """`python -m simulator.calibration.engine_allreduce_grid7 MAIN_TREE MODEL_COMMIT` writes blind grid 7's prediction
    (MAIN_TREE: BLIND7_MAIN_COMMIT exported)."""
    import sys

    from hwmodels.spec import load_hardware
    df = blind7_prediction(load_hardware("H100-SXM"), sys.argv[1], DATA_DIR / BLIND7_PRED_CSV, sys.argv[2])
    print(df.groupby(["impl", "world"])[["pred_main_us", "pred_new_us"]].median().round(2))


if __name__ == "__main__":
    main()
