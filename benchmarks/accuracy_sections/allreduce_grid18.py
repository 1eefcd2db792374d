"""Engines' all-reduce, BLIND grid 18 on 4 x H100 (simulator/calibration/engine_allreduce_grid18.py: 27 shapes at 4 ranks,
19 at 2, >= 6 rows in every (implementation, ranks, size regime) cell, (tokens, hidden) in no earlier grid), priced and
committed (4adc538) before the measurement by two models: main = the H100 as shipped after grid 16 (engine_allreduce_rules
GRID16_H100_RULES) and new = the H100 as shipped after grid 17 (GRID17_H100_RULES: grid 17's 2-rank rules judged on
2-rank rows only until now). The one call (lab/kernels/run_engine_allreduce_blind18.sh, 4 x H100, 130 s, 230 rows, 0 wrong
sums): new 29 of 31 regimes against main's 27 (pooled 4.0 / 11.9 % against 4.4 / 12.9 %): the model as it ships, judged
on every cell; the H100's STANDING moved here from grid 16, and on to grid 19 (allreduce_grid19). Misses left, both
4-rank <= 64 KiB one-shots: vLLM's (+15.9 % signed; 13.4 % on grid 13, met on grids 14 and 16) and TensorRT-LLM's Lamport (11.9 / 23.9 %, -7.0 % signed:
scatter), cells that came and went with the host before.
"""
from __future__ import annotations

from .allreduce import _engine_allreduce_blind_table

#: the commit that holds blind grid 18's prediction (engine_allreduce_grid18.BLIND18_PRED_CSV), made before the measurement
ENGINE_AR_BLIND18_COMMIT = "4adc538"
#: the model kept after grid 18: new (GRID17_H100_RULES); its row was the family's STANDING until blind grid 19
#: (allreduce_grid19) judged the H100 as shipped after it on all 31 cells
SHIPPED = "new"
STANDING = False


def engine_allreduce_blind18(data_dir=None) -> None:
    """The engines' all-reduce BLIND grid 18 on 4 x H100, both models' prices committed in BLIND18_PRED_CSV before it: per
    implementation x ranks x size regime n, |error| median / p90 and signed median, regimes met (median <= 10 %, p90 <=
    25 %); the shipped model's row is the family's STANDING."""
    from simulator.calibration import engine_allreduce_grid16 as G16
    from simulator.calibration import engine_allreduce_grid17 as G17
    from simulator.calibration import engine_allreduce_grid18 as G

    _engine_allreduce_blind_table(18, data_dir, G.BLIND18_PRED_CSV, G.BLIND18_MEAS_GLOB, lambda pred: (
            f"\n== engines' all-reduce kernels, BLIND grid 18 (4 x H100; 4 ranks, (tokens, hidden) {list(G.BLIND18_SHAPES)}; "
            f"2 ranks {list(G.BLIND18_CONTROL)}; prediction {pred}, commit {ENGINE_AR_BLIND18_COMMIT}, before measuring: "
            f"main = the H100 with engine_allreduce_rules {G16.GRID16_H100_RULES} (as shipped after grid 16), new = the "
            f"H100 with {G17.GRID17_H100_RULES} (as shipped after grid 17): STANDING until grid 19)"),
        shipped=SHIPPED if STANDING else None, rows_what="2+4 ranks, 4 x H100")
