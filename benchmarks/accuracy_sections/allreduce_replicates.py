"""Engines' all-reduce blind grids measured a second time on another host of the same kind
(simulator/calibration/engine_allreduce_replicates.py REPLICATES): two 4 x H200 requests were served by 4 x H100 (grids 12
and 13 again) and a 4 x H100 request by a second 4 x H200 host (grid 14 again). Each model's committed prices are scored
on both runs, per regime: which misses hold on both hosts (the model's own) and which come and go with the host. The H100
STANDING stays on grid 13's first run; the H200's STANDING was the shipped H200 on grid 14's second run until blind grid
15 (allreduce_grid15_h200) moved it there.
"""
from __future__ import annotations

from hwmodels import datafiles as DF
from simulator.calibration.scoreboard import BOARD

#: grid -> (the committed prediction's name: None = the grid's own BLIND<grid>_PRED_CSV, of engine_allreduce_grid<grid>;
#: {column: (the model's words, its STANDING label or None)}) scored on both runs
SCORED = {
    12: (None, {"pred_h100_us": ("main: the H100 model before grid 13's rules (commit 95e278e)", None)}),
    13: (None, {"pred_main_us": ("main: the H100 model before grid 13's rules (commit 8525dba)", None),
                "pred_new_us": ("new: grid 13's rules (shipped, commit 8525dba)", None)}),
    # grid 14 ran twice on 4 x H200 (two H100 requests): the H200 models' prices, committed (80154df) after the first
    # run and BEFORE the second: on the second run the shipped H200 (new13) is judged blind, its STANDING row
    14: ("engine_allreduce_blind14_prediction_H200_late_2026-11-27.csv",
         {"pred_main_us": ("main: the H200 without engine terms (shipped until da3c83c)", None),
          # the H200's STANDING moved to blind grid 15 (allreduce_grid15_h200), its shipped model's row
          "pred_new13_us": ("new: the H200's own engines' terms + grid 13's rules (shipped at da3c83c)", None)}),
    # grid 15 on a second 4 x H200 host: the H200 shipped after grid 15 (its prices committed 175308f) blind again
    15: ("engine_allreduce_blind15_prediction_H200_2026-11-27.csv",
         {"pred_main_us": ("main: the H200 before grid 15 (commit 175308f)", None),
          "pred_new_us": ("new: GRID15_H200_CANDIDATE (shipped, commit 175308f)", None)}),
    # grids 14 and 16 on a second 4 x H100 lease: the H100's engine_allreduce_rules (shipped after the first H100 run of
    # both) blind again; grid 16's shipped model is the H100's STANDING on the first run
    "14 (H100)": (None, {"pred_main_us": ("main: the H100 before grid 14's rules (commit 85d8fc2)", None),
                         "pred_new_us": ("new: GRID14_CANDIDATE (shipped as the H100's rules, commit 85d8fc2)", None)}),
    16: ("engine_allreduce_blind16_prediction_2026-11-27.csv",
         {"pred_main_us": ("main: the H100 before grid 16 (commit 7ba43ee)", None),
          "pred_new_us": ("new: the H100's rules (shipped, commit 7ba43ee)", None)}),
    # grid 19 on a second 4 x H100 lease: both models' prices as committed (1e53d08) before either run
    19: ("engine_allreduce_blind19_prediction_H100-SXM_2026-11-28.csv",
         {"pred_main_us": ("main: the H100 as shipped after grid 17 (commit 1e53d08)", None),
          "pred_new_us": ("new: GRID19_H100_RULES (shipped after grid 19, commit 1e53d08)", None)}),
}
HOSTS = {12: "4 x H100", 13: "4 x H100", 14: "4 x H200", 15: "4 x H200", "14 (H100)": "4 x H100", 16: "4 x H100",
         19: "4 x H100"}
#: the prediction's `device` rows a replicate scores, where the prediction priced several devices
DEVICE = {16: "H100-SXM"}


def engine_allreduce_replicates(data_dir=None) -> None:
    """Every grid of SCORED measured twice: the hosts' |spread| (us_2 / us_1 - 1) and, per model, its |error| median /
    p90 and goal per implementation x ranks x size regime on each run; a BOARD row of each model on the replicate
    (blind: the prices were committed before either run)."""
    for grid, (pred_csv, cols) in SCORED.items():
        _replicate(grid, pred_csv, cols, data_dir)


def _replicate(grid: int | str, pred_csv: str | None, cols: dict, data_dir) -> None:
    import importlib

    import pandas as pd

    from simulator.calibration import engine_allreduce as EA
    from simulator.calibration import engine_allreduce_replicates as R

    _, rep = R.REPLICATES[grid]
    j = R.joined(grid, data_dir)
    n = str(grid).split()[0]
    pred_csv = pred_csv or getattr(importlib.import_module(f"{EA.__name__}_grid{n}"), f"BLIND{n}_PRED_CSV")
    pred = pd.read_csv(DF.resolve((EA.DATA_DIR if data_dir is None else data_dir) / pred_csv))
    if grid in DEVICE:
        pred = pred[pred["device"] == DEVICE[grid]]
    print(f"\n== engines' all-reduce kernels, BLIND grid {grid} measured twice on {HOSTS[grid]} (second run {rep}: another "
          f"host of the kind, the same script and prebuilt modules; prices {pred_csv}): {len(j)} rows, hosts' |second / first - 1| "
          f"median {100 * j['spread'].abs().median():.1f} %, p90 {100 * j['spread'].abs().quantile(0.9):.1f} %")
    for col, (words, standing) in cols.items():
        tab = R.regimes_on_both(pred, grid, col, data_dir)
        met1, met2 = (int((tab[f"run{i}_goal"] == "met").sum()) for i in (1, 2))
        both = int(((tab["run1_goal"] == "MISSED") & (tab["run2_goal"] == "MISSED")).sum())
        print(f"-- {words} ({col}), scored on each run")
        print(tab.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
        print(f"   meets {met1} of {len(tab)} regimes on the first run, {met2} on the second; {both} missed on both hosts "
              f"(the model's own misses), {(len(tab) - met1 - both) + (len(tab) - met2 - both)} misses on one host only")
        BOARD.add("engines' all-reduce", "blind", f"BLIND grid {grid}'s replicate, 2+4 ranks, a second {HOSTS[grid]} host "
                  f"({words.split(':')[0]} model's committed prices)", tab.attrs["err_2"], met2, len(tab),
                  standing=standing or False)
