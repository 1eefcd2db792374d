"""Engines' all-reduce, BLIND grid 12 (4 ranks AND 2 ranks, >= 4 rows in every (implementation, ranks, size regime) cell),
priced and committed (95e278e) before the measurement by three models: the H200 as shipped (pred_main_us: no engines'
terms, no custom-kind link terms), the candidate = the H200's own engines' terms (pred_new_us: GRID12_CANDIDATE,
h200_candidate) and the H100 model as shipped (pred_h100_us). The one call asked for 4 x H200 and was served by
4 x H100: the H200 candidate could NOT be judged on its device and is NOT shipped (GRID12_CANDIDATE stays a named
constant; H200.yaml unchanged). Scored here on the device measured: main = the H100 model (the shipped one: its row is
the family's STANDING, moved from grid 10), new = the H200 candidate (another device's terms, for the record).
"""
from __future__ import annotations

from .allreduce import _engine_allreduce_blind_table

#: the commit that holds blind grid 12's prediction (engine_allreduce_grid12.BLIND12_PRED_CSV), made before the measurement
ENGINE_AR_BLIND12_COMMIT = "95e278e"
#: the model whose row was the family's STANDING (main = the H100 model, measured on 4 x H100) until blind grid 13 moved
#: it (allreduce_grid13: the candidate shipped)
SHIPPED = None
#: the committed prediction's columns as scored on 4 x H100: main = the H100 model, new = the H200 candidate
RENAME = {"pred_main_us": "pred_h200_main_us", "pred_h100_us": "pred_main_us"}


def engine_allreduce_blind12(data_dir=None) -> None:
    """The engines' all-reduce BLIND grid 12 (simulator/calibration/engine_allreduce_grid12.py BLIND12_*: 28 shapes at 4 ranks,
    15 at 2 ranks, token counts in no earlier grid, hidden 768-8192, 4-rank TensorRT-LLM two-shot probes at 120-132 CTAs
    in clusters of 4 / 8; lab/kernels/run_engine_allreduce_blind12.sh, one call asked for 4 x H200 and run on 4 x H100,
    the flashinfer modules prebuilt), all models' prices committed in BLIND12_PRED_CSV before it: per implementation x
    ranks x size regime n, |error| median / p90 and signed median, regimes met (median <= 10 %, p90 <= 25 %); main (the
    H100 model, shipped) is the family's STANDING."""
    from simulator.calibration import engine_allreduce_grid12 as G12

    _engine_allreduce_blind_table(12, data_dir, G12.BLIND12_PRED_CSV, G12.BLIND12_MEAS_GLOB, lambda pred: (
            f"\n== engines' all-reduce kernels, BLIND grid 12 (4 ranks, (tokens, hidden) {list(G12.BLIND12_SHAPES)}; "
            f"2 ranks {list(G12.BLIND12_CONTROL)}; prediction {pred}, commit {ENGINE_AR_BLIND12_COMMIT}, before measuring; "
            f"asked for 4 x H200, run on 4 x H100: main = the H100 model as shipped (pred_h100_us, STANDING), new = the "
            f"H200's own engines' terms {G12.GRID12_CANDIDATE} (us; fitted on {', '.join(G12.H200_FIT_CSVS)}) + "
            f"{G12.H200_LINKS_FROM}'s custom-kind link terms, judged on another device: NOT shipped, not judged)"),
        shipped=SHIPPED, rows_what="2+4 ranks, 4 x H100", rename=RENAME)
