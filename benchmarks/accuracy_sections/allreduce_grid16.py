"""Engines' all-reduce, BLIND grid 16 (simulator/calibration/engine_allreduce_grid16.py: 27 shapes at 4 ranks, 18 at 2,
(tokens, hidden) in no earlier grid), priced and committed (7ba43ee) for BOTH devices before any measurement: main = the
device as shipped at 4ee4cbc, new = the device with grid 14's two rules as its own values (engine_allreduce_rules): the
H100 at GRID14_CANDIDATE's values (first_fill_extra 0.57, lamport_overlap 0.19; fitted on looked-at H100 rows), the H200 at
GRID16_H200_RULES (0.66 / 0.11; fitted on every looked-at 4 x H200 row).

The runs (lab/kernels/run_engine_allreduce_blind16.sh; every H100 request was served by H200s):
  1. 23:38 UTC, 2 x H200 (the 4-GPU kinds not lent): the 2-rank rows, where only lamport_overlap acts: 14 of 15 regimes
     against main's 13 -> lamport_overlap 0.11 SHIPPED into H200.yaml (engine_allreduce_grid16.write_rules)
  2. 23:42 UTC, 2 x H200 again (another lease): the same rows repeated (rep2)
  3. 23:44 UTC, 4 x H200: every row: both rules 31 of 31 regimes against main's 29 (pooled 4.0 / 11.0 % against
     4.2 / 11.8 %) -> first_fill_extra 0.66 SHIPPED too; this run is the H200's STANDING
The H100 carries no rule yet: no H100 host was lent, so grid 14's and grid 16's H100 prices are still blind.
"""
from __future__ import annotations

from .allreduce import _engine_allreduce_blind_table

#: the commit that holds blind grid 16's prediction (engine_allreduce_grid16.BLIND16_PRED_CSV), made before any measurement
ENGINE_AR_BLIND16_COMMIT = "7ba43ee"
#: (the measured file's glob, the prediction's device column, the ranks it holds, the model kept after it)
RUNS = (("engine_allreduce_blind16_nvidia-h200_x4_*.csv", "H200", "2+4 ranks, 4 x H200", "new"),
        ("engine_allreduce_blind16_nvidia-h200_x2_*.csv", "H200", "2 ranks, 2 x H200", "new"),
        ("engine_allreduce_blind16rep2_nvidia-h200_x2_*.csv", "H200", "2 ranks, 2 x H200 again", "new"))
#: the run whose shipped model's row is the H200's own STANDING row (every regime measured)
STANDING_RUN = "2+4 ranks, 4 x H200"
STANDING_LABEL = "engines' all-reduce, H200"


def engine_allreduce_blind16(data_dir=None) -> None:
    """The engines' all-reduce BLIND grid 16, each measured run against its device's committed prices (main vs the
    device's grid-16 rules): per implementation x ranks x size regime n, |error| median / p90 and signed median, regimes
    met (median <= 10 %, p90 <= 25 %); the shipped H200 on the 4 x H200 run is the H200's STANDING row."""
    from simulator.calibration import engine_allreduce_grid16 as G

    for glob, device, what, kept in RUNS:
        rules = G.GRID16_H100_RULES if device == "H100-SXM" else G.GRID16_H200_RULES
        _engine_allreduce_blind_table(16, data_dir, G.BLIND16_PRED_CSV, glob, lambda pred: (
                f"\n== engines' all-reduce kernels, BLIND grid 16 on {what} (4 ranks, (tokens, hidden) "
                f"{list(G.BLIND16_SHAPES)}; 2 ranks {list(G.BLIND16_CONTROL)}; prediction {pred} (the {device} rows), "
                f"commit {ENGINE_AR_BLIND16_COMMIT}, before measuring: main = the {device} as shipped at "
                f"{G.BLIND16_MAIN_COMMIT}, new = the {device} with engine_allreduce_rules {rules}: "
                f"{'SHIPPED' if kept == 'new' else 'NOT shipped'})"),
            shipped=kept if what == STANDING_RUN else None, standing_label=STANDING_LABEL, rows_what=what, device=device)
