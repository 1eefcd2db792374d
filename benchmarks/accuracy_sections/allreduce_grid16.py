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
  4. 23:51 UTC, 4 x H100 (the first H100 host lent): grid 14 (its H100 prices committed 85d8fc2; allreduce_grid14) 26 of
     31 regimes against main's 24, then grid 16: 28 of 31 against 26 (pooled 4.9 / 11.4 % against 5.4 / 13.7 %) -> the
     H100's rules (GRID14_CANDIDATE's values) SHIPPED into H100-SXM.yaml; this run is the H100's STANDING (the family's
     row moved here from grid 13, and on to grid 18 after grid 17's 2-rank rules). Still missed on it: three 2-rank cells (the Lamport one-shot <= 64 KiB +11 %,
     TensorRT-LLM's two-shot 2-8 MiB +15 %, vLLM's one-shot 2-8 MiB 12.5 % median with -1 % signed).
"""
from __future__ import annotations

from .allreduce import _engine_allreduce_blind_table

#: the commit that holds blind grid 16's prediction (engine_allreduce_grid16.BLIND16_PRED_CSV), made before any measurement
ENGINE_AR_BLIND16_COMMIT = "7ba43ee"
#: (the measured file's glob, the prediction's device column, the ranks it holds, the model kept after it)
#: and its STANDING label (the run whose shipped model's row is a device's STANDING: every regime measured; None = none)
RUNS = (("engine_allreduce_blind16_nvidia-h100-80gb-hbm3_x4_*.csv", "H100-SXM", "2+4 ranks, 4 x H100", "new",
         None),   # the H100's STANDING was here until blind grid 18 (allreduce_grid18) judged the model as it ships
        ("engine_allreduce_blind16_nvidia-h200_x4_*.csv", "H200", "2+4 ranks, 4 x H200", "new",
         None),   # the H200's STANDING was here (protocol A) until grid 23 ran on 4 x H200 (allreduce_grid23, protocol B)
        ("engine_allreduce_blind16_nvidia-h200_x2_*.csv", "H200", "2 ranks, 2 x H200", "new", None),
        ("engine_allreduce_blind16rep2_nvidia-h200_x2_*.csv", "H200", "2 ranks, 2 x H200 again", "new", None))


def engine_allreduce_blind16(data_dir=None) -> None:
    """The engines' all-reduce BLIND grid 16, each measured run against its device's committed prices (main vs the
    device's grid-16 rules): per implementation x ranks x size regime n, |error| median / p90 and signed median, regimes
    met (median <= 10 %, p90 <= 25 %); the shipped H200 on the 4 x H200 run was the H200's STANDING row until grid 23."""
    from simulator.calibration import engine_allreduce_grid16 as G

    for glob, device, what, kept, standing in RUNS:
        rules = G.GRID16_H100_RULES if device == "H100-SXM" else G.GRID16_H200_RULES
        _engine_allreduce_blind_table(16, data_dir, G.BLIND16_PRED_CSV, glob, lambda pred: (
                f"\n== engines' all-reduce kernels, BLIND grid 16 on {what} (4 ranks, (tokens, hidden) "
                f"{list(G.BLIND16_SHAPES)}; 2 ranks {list(G.BLIND16_CONTROL)}; prediction {pred} (the {device} rows), "
                f"commit {ENGINE_AR_BLIND16_COMMIT}, before measuring: main = the {device} as shipped at "
                f"{G.BLIND16_MAIN_COMMIT}, new = the {device} with engine_allreduce_rules {rules}: "
                f"{'SHIPPED' if kept == 'new' else 'NOT shipped'})"),
            shipped=kept if standing else None, standing_label=standing, rows_what=what, device=device)
