"""Engines' all-reduce, BLIND grid 12 measured a second time: a 4 x H200 request (to judge the H200's own terms,
engine_allreduce.GRID12_CANDIDATE) was served by another 4 x H100 host, so the call became a replicate of grid 12's H100
run (simulator/calibration/engine_allreduce_replicates.py REPLICATES[12]; the H200 candidate stays unjudged). Main's
committed prices (pred_h100_us of BLIND12_PRED_CSV, the H100 model as it was before grid 13's rules shipped) scored on
both runs, per regime:
which misses hold on both hosts (the model's) and which come and go with the host.
"""
from __future__ import annotations

from hwmodels import datafiles as DF
from simulator.calibration.scoreboard import BOARD


def engine_allreduce_blind12_replicate(data_dir=None) -> None:
    """Grid 12's two 4 x H100 runs: the hosts' |spread| (us_2 / us_1 - 1), and per implementation x ranks x size regime
    main's |error| median / p90 and goal on each run; a BOARD row of main on the replicate (blind: its prices were
    committed before either run); the STANDING stays on the first run (allreduce_grid12)."""
    import pandas as pd

    from simulator.calibration import engine_allreduce as EA
    from simulator.calibration import engine_allreduce_replicates as R

    _, rep = R.REPLICATES[12]
    j = R.joined(12, data_dir)
    pred = pd.read_csv(DF.resolve((EA.DATA_DIR if data_dir is None else data_dir) / EA.BLIND12_PRED_CSV))
    tab = R.regimes_on_both(pred, 12, "pred_h100_us", data_dir)
    met1, met2 = (int((tab[f"run{i}_goal"] == "met").sum()) for i in (1, 2))
    both = int(((tab["run1_goal"] == "MISSED") & (tab["run2_goal"] == "MISSED")).sum())
    print(f"\n== engines' all-reduce kernels, BLIND grid 12 measured twice on 4 x H100 (second run {rep}: a 4 x H200 "
          f"request served by 4 x H100, the same script and prebuilt modules): {len(j)} rows, hosts' |second / first - 1| "
          f"median {100 * j['spread'].abs().median():.1f} %, p90 {100 * j['spread'].abs().quantile(0.9):.1f} %; main = "
          f"the H100 model's committed prices (pred_h100_us, commit 95e278e: the model before grid 13), scored on each run")
    print(tab.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    print(f"   main meets {met1} of {len(tab)} regimes on the first run (the STANDING), {met2} on the second; {both} "
          f"missed on both hosts (the model's own misses), {len(tab) - met1 - both + (len(tab) - met2 - both)} "
          f"misses that hold on one host only")
    BOARD.add("engines' all-reduce", "blind", "BLIND grid 12's replicate, 2+4 ranks, a second 4 x H100 host (main "
              "model's committed prices)", tab.attrs["err_2"], met2, len(tab))
