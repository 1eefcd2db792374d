"""Engines' all-reduce on the H200, BLIND grid 15 (4 x H200; 24 shapes at 4 ranks, 18 at 2, >= 4 rows in every
(implementation, ranks, size regime) cell, (tokens, hidden) in no earlier grid), priced and committed (175308f) before the
measurement by two models: main = the H200 as shipped at 7f96efc (GRID12_CANDIDATE's engines' terms + the H100's custom-kind
link terms, grid 13's rules on) and GRID15_H200_CANDIDATE (simulator/calibration/engine_allreduce_grid15.py: the four
engines' terms AND the custom kinds' memory / link_ceiling refitted together on every looked-at 4 x H200 row: the campaign,
grid 11's two runs, grid 14's three runs, 1,273 rows; nothing of hwmodels.roofline's shared constants moved). The one call
(lab/kernels/run_engine_allreduce_blind15.sh, 4 x H200, 138 s, 208 rows, 0 wrong sums): the candidate met 30 of 31
regimes against main's 27 (pooled |error| median / p90 4.1 / 12.0 % against 5.3 / 13.0 %): SHIPPED into H200.yaml only
(engine_allreduce_grid15.write_h200_grid15_terms). The miss left: vLLM's two-shot at 4 ranks, 512 KiB-1 MiB (one loop
step, +14.7 % signed), the cell grid 14's not-shipped AR_FIRST_FILL_EXTRA targets (a shared roofline constant, not an
H200 key). The H200's STANDING row moved here from grid 14's replicate, then on to blind grid 16 (allreduce_grid16),
where the H200 carries grid 14's two rules as its own values.
"""
from __future__ import annotations

from .allreduce import _engine_allreduce_blind_table

#: the commit that holds blind grid 15's prediction (engine_allreduce_grid15.BLIND15_PRED_CSV), made before the measurement
ENGINE_AR_BLIND15_COMMIT = "175308f"
#: the model kept after grid 15: new (30 of 31 regimes against main's 27, lower pooled median and p90): SHIPPED
SHIPPED = "new"


def engine_allreduce_grid15_h200(data_dir=None) -> None:
    """The engines' all-reduce BLIND grid 15 on 4 x H200 (engine_allreduce_grid15.BLIND15_*), both models' prices committed
    in BLIND15_PRED_CSV before it: per implementation x ranks x size regime n, |error| median / p90 and signed median,
    regimes met (median <= 10 %, p90 <= 25 %); the shipped model's row is the H200's STANDING."""
    from simulator.calibration import engine_allreduce_grid15 as G

    _engine_allreduce_blind_table(15, data_dir, G.BLIND15_PRED_CSV, G.BLIND15_MEAS_GLOB, lambda pred: (
            f"\n== engines' all-reduce kernels on the H200, BLIND grid 15 (4 x H200; 4 ranks, (tokens, hidden) "
            f"{list(G.BLIND15_SHAPES)}; 2 ranks {list(G.BLIND15_CONTROL)}; prediction {pred}, commit "
            f"{ENGINE_AR_BLIND15_COMMIT}, before measuring: main = the H200 as shipped at {G.BLIND15_MAIN_COMMIT}, new = "
            f"GRID15_H200_CANDIDATE {G.GRID15_H200_CANDIDATE} (engines' terms + custom kinds' link shares refitted on the "
            f"looked-at 4 x H200 rows): {'SHIPPED' if SHIPPED == 'new' else 'NOT shipped'})"),
        shipped=None, rows_what="2+4 ranks, 4 x H200, the H200 models")   # STANDING: grid 16 (allreduce_grid16)
