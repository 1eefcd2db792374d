"""Engines' all-reduce, BLIND grid 8 (4 ranks with 2-rank controls): main's model against the candidate that shipped
(vLLM's two-shot priced in whole grid-stride loop steps, the TensorRT-LLM Lamport push's own link ceiling over more than
one peer; hwmodels.roofline AR_WAVE_SKIP / LAMPORT_CEILING_RATIO), both priced and committed before the measurement.
"""
from __future__ import annotations

from .allreduce import _engine_allreduce_blind_table

#: the commit that holds blind grid 8's prediction (engine_allreduce_grid8.BLIND8_PRED_CSV), made before the measurement
ENGINE_AR_BLIND8_COMMIT = "d5ee6a3"


def engine_allreduce_blind8(data_dir=None) -> None:
    """The engines' all-reduce BLIND grid 8 (simulator/calibration/engine_allreduce_grid8.py BLIND8_*: 4 ranks at hidden 3584 /
    4096 / 5120 / 8192 and token counts in no earlier grid, the messages just below and just above whole loop steps of
    vLLM's two-shot, plus 2-rank controls; lab/kernels/run_engine_allreduce_blind8.sh on 4 x H100, one call: the
    TensorRT-LLM JIT build took 164 s, so its 4-rank rows stop after the first 11 shapes), priced before the measurement
    by main's model (BLIND8_MAIN_COMMIT) and the candidate (fitted on grids 4, 6 and 7's 4-rank rows only), both
    committed in BLIND8_PRED_CSV: per implementation x ranks x size regime n, |error| median / p90 and signed median of
    each, regimes met (median <= 10 %, p90 <= 25 %); the candidate (new) won and shipped (grid 9's fill rule has
    replaced its whole-step rule since; the family's STANDING is grid 9's row)."""
    from simulator.calibration import engine_allreduce_grid8 as G8

    _engine_allreduce_blind_table(8, data_dir, G8.BLIND8_PRED_CSV, G8.BLIND8_MEAS_GLOB, lambda pred: (
            f"\n== engines' all-reduce kernels, BLIND grid 8 (4 ranks, (tokens, hidden) {list(G8.BLIND8_SHAPES)}; 2-rank "
            f"controls {list(G8.BLIND8_CONTROL)}; prediction {pred}, commit {ENGINE_AR_BLIND8_COMMIT}, before measuring: "
            f"main = the model at {G8.BLIND8_MAIN_COMMIT}, new = vLLM's two-shot in whole loop steps + the Lamport "
            "push's own link ceiling (won blind, shipped; the STANDING moved to grid 9))"), shipped=None)
