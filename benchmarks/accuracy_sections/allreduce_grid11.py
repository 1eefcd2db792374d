"""Engines' all-reduce, BLIND grid 11 (4 ranks AND 2 ranks, >= 4 rows in every (implementation, ranks, size regime) cell):
main's model (grid 9's, at f9af03b) against the candidate (TensorRT-LLM's two-shot's serialized local copies above 2 ranks
only + the fused RMSNorm by the fusion kernel's cluster size, one- and two-shot: simulator/calibration/engine_allreduce.py
GRID11_CANDIDATE, predict_grid11), both priced and committed before the measurement.
"""
from __future__ import annotations

from .allreduce import _engine_allreduce_blind_table

#: the commit that holds blind grid 11's prediction (engine_allreduce.BLIND11_PRED_CSV), made before the measurement
ENGINE_AR_BLIND11_COMMIT = "7984042"
#: the model whose row is the family's STANDING after grid 11 (main / new): set from the blind judgement
SHIPPED = "main"


def engine_allreduce_blind11(data_dir=None) -> None:
    """The engines' all-reduce BLIND grid 11 (simulator/calibration/engine_allreduce.py BLIND11_*: 27 shapes at 4 ranks,
    15 at 2 ranks, token counts in no earlier grid, hidden 1024-8192; lab/kernels/run_engine_allreduce_blind11.sh on
    4 x H100, one call, the flashinfer modules JIT-built beforehand on one H100 by
    lab/kernels/build_flashinfer_comm_on_device.sh), priced before the measurement by main's model (BLIND11_MAIN_COMMIT)
    and the candidate (fitted on grids 4, 6-10's rows only), both committed in BLIND11_PRED_CSV: per implementation x
    ranks x size regime n, |error| median / p90 and signed median of each, regimes met (median <= 10 %, p90 <= 25 %);
    the shipped model's row is the family's STANDING."""
    from simulator.calibration import engine_allreduce as EA

    _engine_allreduce_blind_table(11, data_dir, EA.BLIND11_PRED_CSV, EA.BLIND11_MEAS_GLOB, lambda pred: (
            f"\n== engines' all-reduce kernels, BLIND grid 11 (4 ranks, (tokens, hidden) {list(EA.BLIND11_SHAPES)}; "
            f"2 ranks {list(EA.BLIND11_CONTROL)}; prediction {pred}, commit {ENGINE_AR_BLIND11_COMMIT}, before "
            f"measuring: main = the model at {EA.BLIND11_MAIN_COMMIT}, new = TensorRT-LLM's two-shot's local copies "
            f"above 2 ranks + the fused RMSNorm by cluster size, one- and two-shot {EA.GRID11_CANDIDATE}: "
            f"{'SHIPPED' if SHIPPED == 'new' else 'NOT shipped'})"), shipped=SHIPPED)
