"""The engines' all-reduce blind grid 13 on 4 x H100 (simulator/calibration/engine_allreduce_grid13.py BLIND13_*) and its
candidate, shipped: TensorRT-LLM's two-shot local copies above 2 ranks, the fused RMSNorm by the fusion kernel's cluster,
(g - 2) x peer per serialized peer wait (GRID13_CANDIDATE; hwmodels.roofline AR_TWOSHOT_COPY / AR_NORM_CS1 / AR_NORM_CSN /
AR_PEER_SHARE)."""
import ast
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import hwmodels.roofline as R
from hwmodels import datafiles as DF
from hwmodels.spec import load_hardware
from simulator.calibration import engine_allreduce as E
from simulator.calibration import engine_allreduce_grid13 as G13

ROOT = Path(__file__).resolve().parents[1]
KEY = ["impl", "world", "tokens", "hidden"]


@pytest.fixture(scope="module")
def pred():
    return pd.read_csv(DF.resolve(E.DATA_DIR / G13.BLIND13_PRED_CSV))


@pytest.fixture(scope="module")
def hw():
    return load_hardware("H100-SXM")


def _keys(df):
    return sorted(map(tuple, df[KEY].to_numpy().tolist()))


def test_blind13_shapes_match_the_measurement_script_and_are_new():
    src = (ROOT / "lab" / "kernels" / "measure_engine_allreduce.py").read_text()
    vals = {t.id: ast.literal_eval(n.value) for n in ast.parse(src).body if isinstance(n, ast.Assign)
            for t in n.targets if isinstance(t, ast.Name) and t.id in ("BLIND13_SHAPES", "BLIND13_CONTROL")}
    assert vals == {"BLIND13_SHAPES": G13.BLIND13_SHAPES, "BLIND13_CONTROL": G13.BLIND13_CONTROL}
    seen = G13.earlier_shapes()
    assert len(seen) > 200 and not seen & set(G13.BLIND13_SHAPES + G13.BLIND13_CONTROL)
    assert set(G13.BLIND13_CONTROL) <= set(G13.BLIND13_SHAPES)


def test_committed_blind13_prediction_prices_main_and_the_shipped_candidate(pred, hw):
    assert len(pred) == 210 and _keys(pred) == _keys(G13.blind13_grid())
    assert {"pred_main_us", "pred_new_us", "trt_ctas", "trt_cluster_size", "regime"} <= set(pred.columns)
    few = pred.iloc[::25].reset_index(drop=True)
    assert np.allclose(E.predict_with(few, hw, {}), few["pred_main_us"], rtol=1e-3)       # main: grid 13's rules off
    assert np.allclose(G13.predict_grid13(few, hw), few["pred_new_us"], rtol=1e-3)
    # shipped: the model now, without grid 16's per-device rules
    assert np.allclose(E.predict_us(few, E.without_device_rules(hw)), few["pred_new_us"], rtol=2e-3)
    # >= 4 rows in every (implementation, ranks, size regime) cell
    assert pred.groupby(["impl", "world", "regime"]).size().min() >= 4


def test_the_measurement_is_whole_on_4_h100():
    meas = pd.read_csv(DF.glob(E.DATA_DIR, G13.BLIND13_MEAS_GLOB)[-1])
    assert len(meas) == 210 and _keys(meas) == _keys(G13.blind13_grid())
    assert (meas["script_version"] == 10).all() and meas["device"].str.contains("H100").all()
    assert not meas["note"].astype("string").fillna("").str.contains("WRONG").any()


def test_the_roofline_holds_the_shipped_candidate(hw):
    c = G13.GRID13_CANDIDATE
    assert (R.AR_TWOSHOT_COPY, R.AR_NORM_CS1, R.AR_NORM_CSN) == (c["copy"], c["norm_cs1"], c["norm_csn"])
    assert abs(R.AR_PEER_SHARE * hw.efficiency.engine_ar["phase_s"] * 1e6 - c["peer"]) < 1e-3
    assert set(E.GRID13_RULES_OFF) == {"AR_TWOSHOT_COPY", "AR_NORM_CS1", "AR_NORM_CSN", "AR_PEER_SHARE"}


def test_grid13_rules_structure(hw):
    df = pd.DataFrame({"impl": ["vllm_oneshot", "vllm_oneshot", "vllm_twoshot", "trtllm_ar_oneshot", "trtllm_ar_twoshot",
                                "trtllm_ar_twoshot"],
                       "world": [2, 4, 4, 4, 4, 2], "tokens": [20, 20, 300, 20, 300, 300], "hidden": 4096})
    df["bytes"] = df["tokens"] * df["hidden"] * 2
    d = G13.predict_grid13(df, hw, {"copy": 0.0, "norm_cs1": 1.0, "norm_csn": 1.0, "peer": 1.0}) - E.predict_with(df, hw, {})
    # peer: (g - 2) x waits (vLLM one-shot 2 barriers + 1 phase, Lamport 1 phase, TensorRT-LLM two-shot 2 + 2, vLLM's
    # two-shot none), nothing at 2 ranks
    assert np.allclose(d, [0.0, 6.0, 0.0, 2.0, 8.0, 0.0])
    d = G13.predict_grid13(df, hw, {"copy": 1.0, "norm_cs1": 1.0, "norm_csn": 1.0, "peer": 0.0}) - E.predict_with(df, hw, {})
    hbm = hw.hbm_bw_bytes_s * hw.efficiency.memory["elementwise"]
    assert np.allclose(d, [0, 0, 0, 0, 2.0 * df["bytes"][4] / hbm * 1e6, 0])       # copies: two-shot above 2 ranks only
    # the shipped roofline prices the same rows as the candidate function
    assert np.allclose(E.predict_us(df, E.without_device_rules(hw)), G13.predict_grid13(df, hw), rtol=2e-3)


def test_add_allreduce_declares_the_fusion_kernels_cluster():
    from simulator.kernels.allreduce import add_allreduce, trtllm_cluster_size
    from simulator.ops import OpBuilder

    b = OpBuilder(2)
    add_allreduce(b, "ar", "trtllm", np.array([20.0, 100.0]) * 4096 * 2, 4, 1.0, hidden=4096, sms=132, fused=True)
    ops = b.build()
    want = trtllm_cluster_size(np.array([20.0, 100.0]), 4096, 4, True, 132)
    assert list(ops.cluster_ctas) == list(want) and list(want) == [4.0, 1.0]
    b = OpBuilder(1)
    add_allreduce(b, "ar", "vllm", 20 * 4096 * 2.0, 4, 1.0)
    assert b.build().cluster_ctas is None
