"""Engines' all-reduce, BLIND grid 16 (simulator/calibration/engine_allreduce_grid16.py: 27 shapes at 4 ranks, 18 at 2,
(tokens, hidden) in no earlier grid), priced and committed (7ba43ee) for BOTH devices before any measurement: main = the
device as shipped at 4ee4cbc, new = the device with grid 14's two rules as its own values (engine_allreduce_rules): the
H100 at GRID14_CANDIDATE's values (first_fill_extra 0.57, lamport_overlap 0.19; fitted on looked-at H100 rows), the H200 at
GRID16_H200_RULES (0.66 / 0.11; fitted on every looked-at 4 x H200 row).

Run 1 (2026-11-27 23:38 UTC): the 4-GPU kinds were not lent; an nvidia-h100-x2 request was served by 2 x H200, so the
device script ran the 2-rank rows of grid 16 (and of grid 15 again: allreduce_replicates) on H200s. At 2 ranks only the
lamport_overlap rule acts (first_fill_extra is about vLLM's 4-rank two-shot): the H200 with lamport_overlap 0.11 met 14 of
15 regimes against main's 13 (pooled 5.8 / 12.1 % against 5.8 / 13.6 %), so lamport_overlap 0.11 SHIPPED into H200.yaml
(engine_allreduce_grid16.write_rules); first_fill_extra stays off on the H200 (not judged), and every rule stays off on
the H100 (no H100 host was lent: the H100 judgement of grid 14 and 16 is still to run). The H200's STANDING stays on grid
15, the newest grid with all 31 of its regimes measured.
"""
from __future__ import annotations

from .allreduce import _engine_allreduce_blind_table

#: the commit that holds blind grid 16's prediction (engine_allreduce_grid16.BLIND16_PRED_CSV), made before any measurement
ENGINE_AR_BLIND16_COMMIT = "7ba43ee"
#: (the measured file's glob, the prediction's device column, the ranks it holds, the model kept after it)
RUNS = (("engine_allreduce_blind16_nvidia-h200_x2_*.csv", "H200", "2 ranks, 2 x H200", "new"),)


def engine_allreduce_blind16(data_dir=None) -> None:
    """The engines' all-reduce BLIND grid 16, each measured run against its device's committed prices (main vs the
    device's grid-16 rules): per implementation x ranks x size regime n, |error| median / p90 and signed median, regimes
    met (median <= 10 %, p90 <= 25 %); no STANDING row (no run holds every regime yet)."""
    from simulator.calibration import engine_allreduce_grid16 as G

    for glob, device, what, kept in RUNS:
        rules = G.GRID16_H100_RULES if device == "H100-SXM" else G.GRID16_H200_RULES
        _engine_allreduce_blind_table(16, data_dir, G.BLIND16_PRED_CSV, glob, lambda pred: (
                f"\n== engines' all-reduce kernels, BLIND grid 16 on {what} (4 ranks, (tokens, hidden) "
                f"{list(G.BLIND16_SHAPES)}; 2 ranks {list(G.BLIND16_CONTROL)}; prediction {pred} (the {device} rows), "
                f"commit {ENGINE_AR_BLIND16_COMMIT}, before measuring: main = the {device} as shipped at "
                f"{G.BLIND16_MAIN_COMMIT}, new = the {device} with engine_allreduce_rules {rules}: "
                f"{'SHIPPED (the rules this run judged)' if kept == 'new' else 'NOT shipped'})"),
            shipped=None, rows_what=what, device=device)
