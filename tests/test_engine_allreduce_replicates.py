"""simulator.calibration.engine_allreduce_replicates: the blind grids measured twice."""
from __future__ import annotations

import pandas as pd

from hwmodels import datafiles as DF
from simulator.calibration import engine_allreduce as EA
from simulator.calibration import engine_allreduce_grid12 as G12
from simulator.calibration import engine_allreduce_grid13 as G13
from simulator.calibration import engine_allreduce_replicates as R


def test_grid12_replicate_joins_every_row_and_is_not_the_scored_run():
    scored, rep = R.REPLICATES[12]
    assert not DF.glob(EA.DATA_DIR, scored)[-1].name == rep
    j = R.joined(12)
    assert len(j) == 215 and (j["us_1"] > 0).all() and (j["us_2"] > 0).all()
    assert 0.0 < j["spread"].abs().median() < 0.10          # two hosts of one kind: a few %, not another device


def test_regimes_on_both_scores_each_run_on_the_same_rows():
    pred = pd.read_csv(DF.resolve(EA.DATA_DIR / G12.BLIND12_PRED_CSV))
    t = R.regimes_on_both(pred, 12, "pred_h100_us")
    assert len(t) == 31 and int(t["n"].sum()) == 215
    assert set(t["run1_goal"]) <= {"met", "MISSED"} and len(t.attrs["err_2"]) == 215
    # scoring the first run must reproduce the grid's own section (23 of 31 regimes met by main)
    assert int((t["run1_goal"] == "met").sum()) == 23


def test_grid13_replicate_scores_both_models():
    pred = pd.read_csv(DF.resolve(EA.DATA_DIR / G13.BLIND13_PRED_CSV))
    assert len(R.joined(13)) == 210
    new = R.regimes_on_both(pred, 13, "pred_new_us")
    # the first run reproduces grid 13's own section: the shipped rules meet 25 of 31
    assert len(new) == 31 and int((new["run1_goal"] == "met").sum()) == 25


def test_grid14_replicate_ran_on_a_second_h200_host_and_judges_the_shipped_h200():
    from simulator.calibration import engine_allreduce_h200 as H

    a, b = R.runs(14)
    assert set(a["device"]) == set(b["device"]) == {"NVIDIA H200"} and len(R.joined(14)) == 235
    late = pd.read_csv(EA.DATA_DIR / H.H200_GRID14_PRED_CSV)
    t = R.regimes_on_both(late, 14, "pred_new13_us")
    without = R.regimes_on_both(late, 14, "pred_main_us")
    # the H200's own terms beat the H200 without them on both hosts
    assert (t["run2_goal"] == "met").sum() > (without["run2_goal"] == "met").sum() + 10


def test_h100_replicates_of_grids_14_and_16_ran_on_h100s_and_reproduce_the_first_run():
    from simulator.calibration import engine_allreduce_grid16 as G

    for key, n in (("14 (H100)", 235), (16, 225)):
        a, b = R.runs(key)
        assert set(a["device"]) == set(b["device"]) == {"NVIDIA H100 80GB HBM3"} and len(R.joined(key)) == n
    pred = pd.read_csv(DF.resolve(EA.DATA_DIR / G.BLIND16_PRED_CSV))
    new = R.regimes_on_both(pred[pred["device"] == "H100-SXM"], 16, "pred_new_us")
    # the first run reproduces grid 16's own H100 section: the shipped rules meet 28 of 31
    assert len(new) == 31 and int((new["run1_goal"] == "met").sum()) == 28
