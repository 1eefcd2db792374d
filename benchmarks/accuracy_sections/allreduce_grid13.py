"""Engines' all-reduce, BLIND grid 13 (4 x H100; 4 ranks AND 2 ranks, >= 4 rows in every (implementation, ranks, size regime)
cell, (tokens, hidden) in no earlier grid), priced and committed (8525dba) before the measurement by two models: main = the
H100 model as shipped at 753b5c0 (predict_us) and the candidate GRID13_CANDIDATE (predict_grid13: grid 11's TensorRT-LLM
two-shot local copies above 2 ranks and fused RMSNorm by cluster size, judged on the H100 for the first time, plus
(g - 2) x peer per serialized peer wait), fitted by fit_grid13_terms on grids <= 12's H100 rows only. One 4 x H100 call
(lab/kernels/run_engine_allreduce_blind13.sh, 108 s, 210 rows, 0 wrong sums). The candidate met 25 of 31 regimes
against main's 22 (pooled |error| median / p90 4.7 / 16.3 % against 5.4 / 17.1 %) and SHIPPED: its row is the family's
STANDING (moved from grid 12).
"""
from __future__ import annotations

from .allreduce import _engine_allreduce_blind_table

#: the commit that holds blind grid 13's prediction (engine_allreduce_grid13.BLIND13_PRED_CSV), made before the measurement
ENGINE_AR_BLIND13_COMMIT = "8525dba"
#: the model whose row is the family's STANDING: the candidate met MORE regimes on the blind rows (25 of 31 against main's
#: 22; pooled |error| median / p90 4.7 / 16.3 % against 5.4 / 17.1 %) and is the model now (hwmodels.roofline
#: AR_TWOSHOT_COPY / AR_NORM_CS1 / AR_NORM_CSN / AR_PEER_SHARE hold GRID13_CANDIDATE)
SHIPPED = "new"


def engine_allreduce_blind13(data_dir=None) -> None:
    """The engines' all-reduce BLIND grid 13 (simulator/calibration/engine_allreduce_grid13.py BLIND13_*: 27 shapes at 4 ranks,
    15 at 2 ranks, token counts in no earlier grid, hidden 1024-8192; lab/kernels/run_engine_allreduce_blind13.sh, one
    4 x H100 call, the flashinfer modules prebuilt), both models' prices committed in BLIND13_PRED_CSV before it: per
    implementation x ranks x size regime n, |error| median / p90 and signed median, regimes met (median <= 10 %,
    p90 <= 25 %); the shipped model's row is the family's STANDING."""
    from simulator.calibration import engine_allreduce_grid13 as G13

    _engine_allreduce_blind_table(13, data_dir, G13.BLIND13_PRED_CSV, G13.BLIND13_MEAS_GLOB, lambda pred: (
            f"\n== engines' all-reduce kernels, BLIND grid 13 (4 x H100; 4 ranks, (tokens, hidden) {list(G13.BLIND13_SHAPES)}; "
            f"2 ranks {list(G13.BLIND13_CONTROL)}; prediction {pred}, commit {ENGINE_AR_BLIND13_COMMIT}, before measuring: "
            f"main = the H100 model at {G13.BLIND13_MAIN_COMMIT}, new = GRID13_CANDIDATE {G13.GRID13_CANDIDATE} (copy above "
            f"2 ranks, RMSNorm by cluster size, (g - 2) x peer us per serialized peer wait; fitted on grids <= 12's H100 "
            f"rows) -- won blind: SHIPPED; the STANDING moved on to grid 16)"),
        shipped=None, rows_what="2+4 ranks, 4 x H100")   # STANDING: grid 16 on 4 x H100 (allreduce_grid16)
