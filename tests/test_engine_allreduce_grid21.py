"""All-reduce blind grid 21 on 2 x H100: two timing protocols per row (A: the earlier grids' 7 replays x 40 / 10 calls, B: 21
replays x 40 calls), the harness's per-replay cost diagnosed (simulator/calibration/engine_allreduce_grid21.py)."""
from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hwmodels.spec import load_hardware
from simulator.calibration import engine_allreduce as EA
from simulator.calibration import engine_allreduce_grid21 as G
from simulator.calibration.engine_allreduce_grid20 import GRID20_H100_RULES

LAB = Path(__file__).resolve().parents[1] / "lab" / "kernels" / "measure_engine_allreduce.py"


@pytest.fixture(scope="module")
def pred():
    return pd.read_csv(EA.DATA_DIR / G.BLIND21_PRED_CSV)


def _lab_consts(*names):
    src = LAB.read_text()
    return {t.id: ast.literal_eval(n.value) for n in ast.parse(src).body if isinstance(n, ast.Assign)
            for t in n.targets if isinstance(t, ast.Name) and t.id in names}


def test_grid21_shapes_new_and_lab_script_agrees(pred):
    c = _lab_consts("BLIND21_SHAPES", "REPS", "REPS_B", "CALLS_B")
    assert c == {"BLIND21_SHAPES": G.BLIND21_SHAPES, "REPS": G.PROTOCOLS["A"][0], "REPS_B": G.PROTOCOLS["B"][0],
                 "CALLS_B": G.PROTOCOLS["B"][2]}
    assert not set(G.BLIND21_SHAPES) & G.earlier_shapes21() and len(set(G.BLIND21_SHAPES)) == 27
    assert len(pred) == len(G.blind21_grid()) == 135 and set(pred["world"]) == {2} and set(pred["device"]) == {"H100-SXM"}
    cells = pred.groupby(["impl", "regime"]).size()
    assert len(cells) == 15 and cells.min() >= 5
    one = pred[pred["impl"].str.endswith("oneshot") & (pred["bytes"] > 64 * 1024)].groupby(["impl", "regime"]).size()
    assert len(one) == 6 and one.min() >= 8
    # rows straddle A's 40 -> 10 calls step
    assert ((pred["bytes"] > 1 << 20) & (pred["bytes"] <= 1600 * 1024)).sum() == 5 * 8


def test_prediction_prices_main_and_prior(pred):
    from simulator.calibration.engine_allreduce_grid22 import GRID22_H100_RULES

    assert load_hardware("H100-SXM").efficiency.engine_ar_rules == GRID22_H100_RULES   # shipped after grid 22
    assert G.main_hw().efficiency.engine_ar_rules == GRID20_H100_RULES                 # grid 21's main, as priced
    sub = pred.iloc[::9]
    assert np.allclose(np.round(G.predict(sub, G.main_hw()), 3), sub["pred_main_us"], atol=2e-3, rtol=0)
    assert (pred["calls_A"] == np.where(pred["bytes"] <= 1 << 20, 40, 10)).all() and (pred["calls_B"] == 40).all()
    want = pred["impl"].map(G.S_PRIOR) * (1 / pred["calls_A"] - 1 / pred["calls_B"])
    assert np.allclose(pred["expect_a_minus_b_us"], want, atol=1e-3) and (pred.loc[pred["bytes"] <= 1 << 20,
                                                                                   "expect_a_minus_b_us"] == 0).all()


def test_measured_both_protocols_join():
    r = G.load_blind21()
    assert r is not None and len(r) == 135
    assert (r["calls_A"] == r["pcalls_A"]).all() and (r["calls_B"] == r["pcalls_B"]).all()
    assert r["s_us"].notna().sum() == (r["bytes"] > 1 << 20).sum() == 5 * 13


def test_replay_cost_recovered_from_synthetic_rows(pred):
    """A = t + s / calls_A, B = t + s / calls_B: s_us and t0_us give s and t back; P1-P3 hold, and fail with no cost."""
    import shutil
    import tempfile

    t = pred["pred_main_us"].to_numpy()
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        shutil.copy(EA.DATA_DIR / G.BLIND21_PRED_CSV, d / G.BLIND21_PRED_CSV)
        for s in (20.0, 0.0):
            for p in ("A", "B"):
                calls = pred[f"calls_{p}"].to_numpy()
                m = pred[["impl", "world", "tokens", "hidden", "bytes"]].assign(
                    median_us=t + s / calls, p20_us=t + s / calls - 0.1 * s / calls, p80_us=t + s / calls + 0.2 * s / calls,
                    calls=calls, note="")
                m.to_csv(d / f"engine_allreduce_blind21{p}_nvidia-h100-80gb-hbm3_x2_2026-11-28.csv", index=False)
            r = G.load_blind21(d)
            hi = r[r["bytes"] > 1 << 20]
            h = G.hypothesis_checks(r)
            if s:
                assert np.allclose(hi["s_us"], s) and np.allclose(hi["t0_us"], hi["pred_main_us"], atol=1e-9)
                assert h["P1"].all() and h["P2"].all() and h["P3"].all()
                assert G.pooled(r, "B")["med"] < G.pooled(r, "A")["med"]
            else:
                assert not h["P1"].any() and np.allclose(hi["s_us"], 0)
