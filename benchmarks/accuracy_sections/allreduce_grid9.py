"""Engines' all-reduce, BLIND grid 9 (4 ranks with 2-rank controls): main's model (grid 8's rule: the last loop step of
vLLM's two-shot costs the same whatever its fill) against the candidate (that step priced by its fill: hwmodels.roofline
AR_FILL_SLOPE with AR_WAVE_SKIP, simulator/calibration/engine_allreduce_grid9.py GRID9_CANDIDATE), both priced and committed
before the measurement.
"""
from __future__ import annotations

from .allreduce import _engine_allreduce_blind_table

#: the commit that holds blind grid 9's prediction (engine_allreduce_grid9.BLIND9_PRED_CSV), made before the measurement
ENGINE_AR_BLIND9_COMMIT = "9a26791"
#: the model shipped after grid 9 (main / new): the candidate met as many regimes as main (22 of 31) with a lower pooled
#: |error| median and p90 (7.16 / 16.0 % against 7.25 / 16.9 %); the family's STANDING moved to grid 10 (allreduce_grid10)
SHIPPED = "new"
STANDING = None


def engine_allreduce_blind9(data_dir=None) -> None:
    """The engines' all-reduce BLIND grid 9 (simulator/calibration/engine_allreduce_grid9.py BLIND9_*: 4 ranks, TensorRT-LLM's
    one- and two-shot, plain and + RMSNorm, at 14-64 KiB, vLLM's two-shot at fills 0.22-1.0 of loop steps 1-7,
    TensorRT-LLM's two-shot at 2-8 MiB; 2-rank Lamport controls; lab/kernels/run_engine_allreduce_blind9.sh on 4 x H100,
    one call, the flashinfer modules prebuilt off the device), priced before the measurement by main's model
    (BLIND9_MAIN_COMMIT) and the candidate (fitted on grids 4, 6, 7 and 8's 4-rank rows only), both committed in
    BLIND9_PRED_CSV: per implementation x ranks x size regime n, |error| median / p90 and signed median of each, regimes
    met (median <= 10 %, p90 <= 25 %); the shipped model's row is the family's STANDING."""
    from simulator.calibration import engine_allreduce_grid9 as G9

    _engine_allreduce_blind_table(9, data_dir, G9.BLIND9_PRED_CSV, G9.BLIND9_MEAS_GLOB, lambda pred: (
            f"\n== engines' all-reduce kernels, BLIND grid 9 (4 ranks, (tokens, hidden) {list(G9.BLIND9_SHAPES)}; 2-rank "
            f"controls {list(G9.BLIND9_CONTROL)}; prediction {pred}, commit {ENGINE_AR_BLIND9_COMMIT}, before measuring: "
            f"main = the model at {G9.BLIND9_MAIN_COMMIT}, new = vLLM's two-shot's last loop step by its fill "
            f"{G9.GRID9_CANDIDATE}: same regimes met, lower pooled median and p90, shipped)"), shipped=STANDING)
