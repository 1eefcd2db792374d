"""Engines' all-reduce blind grids measured a second time on another host of the same kind
(simulator/calibration/engine_allreduce_replicates.py REPLICATES): a 4 x H200 request meant to judge the H200's own
terms (engine_allreduce.GRID12_CANDIDATE) was served by 4 x H100 twice this way, so each call became a replicate of the
newest H100 grid. Each model's committed prices are scored on both runs, per regime: which misses hold on both hosts
(the model's own) and which come and go with the host. The family's STANDING stays on each grid's first run.
"""
from __future__ import annotations

from hwmodels import datafiles as DF
from simulator.calibration.scoreboard import BOARD

#: grid -> the committed prediction's columns scored on both runs: {column: the model's words}
SCORED = {
    12: {"pred_h100_us": "main: the H100 model before grid 13's rules (commit 95e278e)"},
    13: {"pred_main_us": "main: the H100 model before grid 13's rules (commit 8525dba)",
         "pred_new_us": "new: grid 13's rules (shipped, commit 8525dba)"},
}


def engine_allreduce_replicates(data_dir=None) -> None:
    """Every grid of SCORED measured twice: the hosts' |spread| (us_2 / us_1 - 1) and, per model, its |error| median /
    p90 and goal per implementation x ranks x size regime on each run; a BOARD row of each model on the replicate
    (blind: the prices were committed before either run)."""
    for grid, cols in SCORED.items():
        _replicate(grid, cols, data_dir)


def _replicate(grid: int, cols: dict, data_dir) -> None:
    import pandas as pd

    from simulator.calibration import engine_allreduce as EA
    from simulator.calibration import engine_allreduce_replicates as R

    _, rep = R.REPLICATES[grid]
    j = R.joined(grid, data_dir)
    pred_csv = getattr(EA, f"BLIND{grid}_PRED_CSV")
    pred = pd.read_csv(DF.resolve((EA.DATA_DIR if data_dir is None else data_dir) / pred_csv))
    print(f"\n== engines' all-reduce kernels, BLIND grid {grid} measured twice on 4 x H100 (second run {rep}: a 4 x H200 "
          f"request served by 4 x H100, the same script and prebuilt modules): {len(j)} rows, hosts' |second / first - 1| "
          f"median {100 * j['spread'].abs().median():.1f} %, p90 {100 * j['spread'].abs().quantile(0.9):.1f} %")
    for col, words in cols.items():
        tab = R.regimes_on_both(pred, grid, col, data_dir)
        met1, met2 = (int((tab[f"run{i}_goal"] == "met").sum()) for i in (1, 2))
        both = int(((tab["run1_goal"] == "MISSED") & (tab["run2_goal"] == "MISSED")).sum())
        print(f"-- {words} ({col}), scored on each run")
        print(tab.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
        print(f"   meets {met1} of {len(tab)} regimes on the first run, {met2} on the second; {both} missed on both hosts "
              f"(the model's own misses), {(len(tab) - met1 - both) + (len(tab) - met2 - both)} misses on one host only")
        BOARD.add("engines' all-reduce", "blind", f"BLIND grid {grid}'s replicate, 2+4 ranks, a second 4 x H100 host "
                  f"({words.split(':')[0]} model's committed prices)", tab.attrs["err_2"], met2, len(tab))
