"""The engines' all-reduce blind grids measured twice (the same script, a second host of the same kind: 4 x H100 for
grids 12-13, 4 x H200 for grids 14 and 15): how far two hosts disagree, the floor under any model's error on those rows.

REPLICATES maps a grid to (its scored measurement's glob, the replicate's file) in engine_allreduce.DATA_DIR; the
replicate's file name never matches the scored glob, so the grid's own section keeps scoring the first run.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from simulator.calibration import engine_allreduce_grid11 as G11
from simulator.calibration import engine_allreduce_grid14 as G14

#: grid (or a grid and its device, where the grid ran on both) -> (the scored run's glob, the replicate), DATA_DIR
REPLICATES = {
    # grid 11: the second 4 x H200 host (an H100 request served by H200s), the lead, 2026-11-27
    11: (G11.BLIND11_MEAS_GLOB, G11.BLIND11_REPLICATE_CSV),
    # grid 12: a 4 x H200 request served by 4 x H100 (the H200 candidate not judged), the lead, 2026-11-27 21:44 UTC;
    # ..._notes.txt beside it
    12: ("engine_allreduce_blind12_nvidia*.csv", "engine_allreduce_blind12rep2_nvidia-h100-80gb-hbm3_x4_2026-11-27.csv"),
    # grid 13: the same again (lead, 22:04 UTC: lab/kernels/run_engine_allreduce_h200_or_replicate.sh ran grid 13 on H100s), ..._notes.txt beside it
    13: ("engine_allreduce_blind13_nvidia*.csv", "engine_allreduce_blind13rep2_nvidia-h100-80gb-hbm3_x4_2026-11-27.csv"),
    # grid 14: a 4 x H100 request served by a SECOND 4 x H200 host (the lead, 22:31 UTC, run_engine_allreduce_blind14.sh):
    # a blind judgement of the H200 model shipped at da3c83c (its prices committed at 80154df, before this run)
    14: (G14.BLIND14_MEAS_GLOB, "engine_allreduce_blind14rep2_nvidia-h200_x4_2026-11-27.csv"),
    # grid 15: a second 4 x H200 host (an H100 x4 request served by H200s; the lead, 2026-11-27 23:44 UTC,
    # run_engine_allreduce_blind16.sh after grid 16's rows; ..._notes.txt beside grid 16's x4 file): the H200 shipped
    # after grid 15 blind again. Its 2-rank rows also ran twice on 2 x H200 hosts (blind15rep2 / rep3_..._x2_, not scored)
    15: ("engine_allreduce_blind15_nvidia*.csv", "engine_allreduce_blind15rep4_nvidia-h200_x4_2026-11-27.csv"),
    # grids 14 and 16 on a second 4 x H100 lease (the lead, 2026-11-28 00:00 UTC, run_engine_allreduce_blind16.sh with
    # ON_H200=skip; ..._notes.txt beside grid 16's rep3): the H100's rules, shipped after the first H100 run, blind again
    "14 (H100)": (G14.BLIND14_H100_MEAS_GLOB, "engine_allreduce_blind14rep2_nvidia-h100-80gb-hbm3_x4_2026-11-28.csv"),
    16: ("engine_allreduce_blind16_nvidia-h100-80gb-hbm3_x4_*.csv",
         "engine_allreduce_blind16rep3_nvidia-h100-80gb-hbm3_x4_2026-11-28.csv"),
    # grid 19 (the H100's STANDING) on a second 4 x H100 lease (the lead, 2026-11-28 01:54 UTC, the grid's own script
    # and lab script v16; ..._env.txt / _log.txt / _notes.txt beside it): the rules shipped after grid 19 blind again
    19: ("engine_allreduce_blind19_nvidia-h100-80gb-hbm3_x4_*.csv",
         "engine_allreduce_blind19rep2_nvidia-h100-80gb-hbm3_x4_2026-11-28.csv"),
}
KEY = ["impl", "world", "tokens", "hidden"]


def runs(grid: int | str, data_dir: Path | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(first run, replicate) of `grid` as measured (REPLICATES)."""
    from hwmodels import datafiles as DF
    from simulator.calibration.engine_allreduce import DATA_DIR

    d = DATA_DIR if data_dir is None else data_dir
    scored, rep = REPLICATES[grid]
    return pd.read_csv(DF.glob(d, scored)[-1]), pd.read_csv(DF.resolve(d / rep))


def joined(grid: int | str, data_dir: Path | None = None) -> pd.DataFrame:
    """The two runs of `grid` per (impl, world, tokens, hidden): us_1 (scored run), us_2 (replicate), spread =
    us_2 / us_1 - 1, and the size regime as the grid's section scores it."""
    from simulator.calibration.engine_allreduce import size_regime

    a, b = runs(grid, data_dir)
    j = a[KEY + ["bytes", "median_us"]].merge(b[KEY + ["median_us"]], on=KEY, suffixes=("_1", "_2"), how="inner")
    j = j.rename(columns={"median_us_1": "us_1", "median_us_2": "us_2"})
    j["spread"] = j["us_2"] / j["us_1"] - 1.0
    j["regime"] = [r[2:] for r in size_regime(j["bytes"])]
    return j


def regimes_on_both(pred: pd.DataFrame, grid: int | str, col: str = "pred_main_us", data_dir: Path | None = None) -> pd.DataFrame:
    """The committed prices `pred[col]` scored on each run of `grid` per implementation x ranks x size regime: n,
    |error| median / p90 on run 1 and on run 2, the hosts' |spread| median, and whether the goal (median <= 10 %,
    p90 <= 25 %) is met on each run."""
    from simulator.calibration.engine_allreduce import blind_rows

    p = pred.rename(columns={col: "pred_us"})
    r1, r2 = (blind_rows(p, m) for m in runs(grid, data_dir))
    j = r1[KEY + ["regime", "err"]].merge(r2[KEY + ["err"]], on=KEY, suffixes=("_1", "_2"))
    j["spread"] = (1 + j["err_1"]) / (1 + j["err_2"]) - 1.0      # us_2 / us_1 - 1
    rows = []
    for (impl, g, reg), t in j.groupby(["impl", "world", "regime"]):
        row = {"impl": impl, "world": g, "regime": reg[2:], "n": len(t)}
        for i in (1, 2):
            e = 100 * t[f"err_{i}"].abs()
            row[f"run{i}_med"], row[f"run{i}_p90"] = e.median(), e.quantile(0.9)
            row[f"run{i}_goal"] = "met" if row[f"run{i}_med"] <= 10 and row[f"run{i}_p90"] <= 25 else "MISSED"
        row["host_spread_med"] = 100 * t["spread"].abs().median()
        rows.append(row)
    out = pd.DataFrame(rows)
    out.attrs["err_2"] = 100 * j["err_2"].to_numpy()
    return out
