"""The engines' all-reduce blind grid 14 on 4 x H100 (simulator/calibration/engine_allreduce_grid14.py BLIND14_*) and its candidate:
vLLM's two-shot's first loop step priced by its fill (hwmodels.roofline AR_FIRST_FILL_EXTRA) and the 2-rank Lamport
one-shot's phase / transfer overlap (AR_LAMPORT_OVERLAP), GRID14_CANDIDATE."""
import ast
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hwmodels import datafiles as DF
from hwmodels.spec import load_hardware
from simulator.calibration import engine_allreduce as E
from simulator.calibration import engine_allreduce_grid13 as G13
from simulator.calibration import engine_allreduce_grid14 as G14

ROOT = Path(__file__).resolve().parents[1]
KEY = ["impl", "world", "tokens", "hidden"]


@pytest.fixture(scope="module")
def pred():
    return pd.read_csv(DF.resolve(E.DATA_DIR / G14.BLIND14_PRED_CSV))


@pytest.fixture(scope="module")
def hw():
    return load_hardware("H100-SXM")


def _keys(df):
    return sorted(map(tuple, df[KEY].to_numpy().tolist()))


def test_blind14_shapes_match_the_measurement_script_and_are_new():
    src = (ROOT / "lab" / "kernels" / "measure_engine_allreduce.py").read_text()
    vals = {t.id: ast.literal_eval(n.value) for n in ast.parse(src).body if isinstance(n, ast.Assign)
            for t in n.targets if isinstance(t, ast.Name) and t.id in ("BLIND14_SHAPES", "BLIND14_CONTROL")}
    assert vals == {"BLIND14_SHAPES": G14.BLIND14_SHAPES, "BLIND14_CONTROL": G14.BLIND14_CONTROL}
    seen = G13.earlier_shapes() | set(G13.BLIND13_SHAPES) | set(G13.BLIND13_CONTROL)
    assert not seen & set(G14.BLIND14_SHAPES + G14.BLIND14_CONTROL)
    assert set(G14.BLIND14_CONTROL) <= set(G14.BLIND14_SHAPES)


def test_committed_blind14_prediction_prices_main_and_the_candidate(pred, hw):
    assert len(pred) == 235 and _keys(pred) == _keys(G14.blind14_grid())
    assert {"pred_main_us", "pred_new_us", "trt_ctas", "trt_cluster_size", "regime"} <= set(pred.columns)
    few = pred.iloc[::20].reset_index(drop=True)
    assert np.allclose(G14.predict_grid14(few, hw, E.GRID14_RULES_OFF), few["pred_main_us"], rtol=1e-3)
    assert np.allclose(G14.predict_grid14(few, hw), few["pred_new_us"], rtol=1e-3)
    n = pred.groupby(["impl", "world", "regime"]).size()
    assert n.min() >= 4
    assert n[("trtllm_ar_oneshot", 2, "b middle (128 KiB-1 MiB)")] >= 5
    assert n[("vllm_twoshot", 4, "b middle (128 KiB-1 MiB)")] >= 5


def test_grid14_rules_structure(hw):
    df = pd.DataFrame({"impl": ["vllm_twoshot", "vllm_twoshot", "vllm_twoshot", "trtllm_ar_oneshot", "trtllm_ar_oneshot",
                                "trtllm_arnorm_oneshot", "vllm_oneshot", "trtllm_ar_twoshot"],
                       "world": [4, 4, 4, 2, 4, 2, 2, 2], "tokens": [72, 144, 200, 100, 100, 3, 100, 100], "hidden": 4096})
    df["bytes"] = df["tokens"] * df["hidden"] * 2
    off = G14.predict_grid14(df, hw, E.GRID14_RULES_OFF)
    # first: only the one-step vLLM two-shot moves, by extra x (1 - x) of a step; a full step and a second step do not
    d = off - G14.predict_grid14(df, hw, {"AR_FIRST_FILL_EXTRA": 1.0})
    assert d[0] > 1.0 and np.allclose(d[1:], 0.0, atol=1e-6)
    d2 = off - G14.predict_grid14(df, hw, {"AR_FIRST_FILL_EXTRA": 0.5})
    assert d2[0] == pytest.approx(d[0] / 2, rel=1e-6)
    # overlap: only the 2-rank Lamport one-shot (plain and + RMSNorm) moves, by overlap x min(transfer, phase)
    d = off - G14.predict_grid14(df, hw, {"AR_LAMPORT_OVERLAP": 1.0})
    assert d[3] > 0 and d[5] > 0 and np.allclose(d[[0, 1, 2, 4, 6, 7]], 0.0, atol=1e-6)
    phase = hw.efficiency.engine_ar["phase_s"] * 1e6
    assert d[3] <= phase + 1e-9 and d[5] < d[3]          # 3 tokens: a shorter transfer than 100
    # predict_with (every earlier grid's model) prices grid 14's rules off
    assert np.allclose(E.predict_with(df, hw, {}), E.predict_with(df, hw, E.GRID14_RULES_OFF))


def test_fit_grid14_terms_reads_looked_at_h100_rows_only():
    files = [g for g in G14.GRID14_FIT_GLOBS]
    assert not any("blind14" in g for g in files) and not any("h200" in g for g in files)
    assert set(G14.GRID14_CANDIDATE) == set(E.GRID14_RULES_OFF) == {"AR_FIRST_FILL_EXTRA", "AR_LAMPORT_OVERLAP"}


def test_the_measurement_is_whole_and_on_the_h200_it_ran_on():
    meas = pd.read_csv(DF.glob(E.DATA_DIR, G14.BLIND14_MEAS_GLOB)[-1])
    assert len(meas) == 235 and _keys(meas) == _keys(G14.blind14_grid())
    assert (meas["script_version"] == 11).all() and meas["device"].str.contains("H200").all()
    assert not meas["note"].astype("string").fillna("").str.contains("WRONG").any()


def test_grid14_candidate_ships_as_the_h100s_own_rules():
    """The module constants stay off; the H100 carries GRID14_CANDIDATE's values as its own engine_allreduce_rules,
    after grid 14's 4 x H100 run (26 of 31 regimes against 24) and grid 16's (28 against 26)."""
    import hwmodels.roofline as R
    from hwmodels.spec import load_hardware

    assert (R.AR_FIRST_FILL_EXTRA, R.AR_LAMPORT_OVERLAP) == (0.0, 0.0)
    assert (R.AR_FIRST_FILL_EXTRA, R.AR_LAMPORT_OVERLAP) == tuple(E.GRID14_RULES_OFF[k] for k in
                                                                  ("AR_FIRST_FILL_EXTRA", "AR_LAMPORT_OVERLAP"))
    rules = load_hardware("H100-SXM").efficiency.engine_ar_rules
    # grid 14's first_fill_extra still; lamport_overlap refit with grid 17's 2-rank rules (engine_allreduce_grid17)
    assert rules["first_fill_extra"] == G14.GRID14_CANDIDATE["AR_FIRST_FILL_EXTRA"]
    assert set(rules) == {"first_fill_extra", "lamport_overlap", "lamport_phase2", "twoshot2_link", "oneshot_peer_share",
                          "lamport2_link"}    # grid 20's lamport2_link (engine_allreduce_grid20)


def test_the_h100_run_is_whole():
    meas = pd.read_csv(DF.glob(E.DATA_DIR, G14.BLIND14_H100_MEAS_GLOB)[-1])
    assert len(meas) == 235 and _keys(meas) == _keys(G14.blind14_grid())
    assert (meas["script_version"] == 13).all() and (meas["device"] == "NVIDIA H100 80GB HBM3").all()
    assert not meas["note"].astype("string").fillna("").str.contains("WRONG").any()
