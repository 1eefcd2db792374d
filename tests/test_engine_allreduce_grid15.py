"""All-reduce blind grid 15 on 4 x H200: the H200-only candidate, its committed prediction, the measurement, the ship."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hwmodels import datafiles as DF
from hwmodels.spec import load_hardware
from simulator.calibration import engine_allreduce as EA
from simulator.calibration import engine_allreduce_grid12 as G12
from simulator.calibration import engine_allreduce_grid13 as G13
from simulator.calibration import engine_allreduce_grid15 as G


@pytest.fixture(scope="module")
def pred():
    return pd.read_csv(EA.DATA_DIR / G.BLIND15_PRED_CSV)


def test_grid15_shapes_are_new_and_cells_full(pred):
    assert not set(G.BLIND15_SHAPES + G.BLIND15_CONTROL) & G.earlier_shapes15()
    assert len(pred) == len(G.blind15_grid()) == 208
    assert {"impl", "world", "tokens", "hidden", "bytes", "pred_main_us", "pred_new_us", "regime"} <= set(pred.columns)
    assert pred.groupby(["impl", "world", "regime"]).size().min() >= 4


def test_h200_ships_the_candidate_and_prices_the_prediction(pred):
    h200 = load_hardware("H200")
    c = G.GRID15_H200_CANDIDATE
    # (the in-step after_gemm term came later: simulator/calibration/allreduce_in_step.py)
    own = {k: v for k, v in h200.efficiency.engine_ar.items() if k != "after_gemm_s"}
    assert own == pytest.approx({f"{k}_s": c[k] * 1e-6 for k in EA.TERMS})
    for k in G.LINK_KINDS:
        assert h200.efficiency.memory[k] == c[f"memory.{k}"] and h200.efficiency.link_ceiling[k] == c[f"link_ceiling.{k}"]
    sub = pred.iloc[::25]
    # grid 16's rules (engine_allreduce_rules) shipped after grid 15: its prices are the H200 without them
    from simulator.calibration.engine_allreduce_grid16 import with_rules
    h200 = with_rules(h200, {})
    assert np.allclose(np.round(G.predict_shipped(sub, h200), 3), sub["pred_new_us"], atol=0)
    # main's prices: the H200 as shipped before (GRID12 terms + the H100's link terms)
    old = G12.h200_candidate(h200, load_hardware("H100-SXM"))
    assert np.allclose(np.round(G.predict_shipped(sub, old), 3), sub["pred_main_us"], atol=0)


def test_h100_prices_did_not_move():
    g13 = pd.read_csv(DF.resolve(EA.DATA_DIR / G13.BLIND13_PRED_CSV)).iloc[::40]
    # grid 15's H200 fit moved nothing of the H100 (its own rules, shipped after grid 16, left out)
    h100 = EA.without_device_rules(load_hardware("H100-SXM"))
    assert np.allclose(EA.predict_us(g13, h100), g13["pred_new_us"], atol=2e-3, rtol=0)


def test_grid15_ran_on_h200s(pred):
    meas = pd.read_csv(DF.glob(EA.DATA_DIR, G.BLIND15_MEAS_GLOB)[-1])
    assert set(meas["device"]) == {"NVIDIA H200"} and len(meas) == 208
    assert not meas["note"].astype("string").fillna("").str.contains("WRONG").any()
    assert len(pred.merge(meas, on=["impl", "world", "tokens", "hidden"])) == 208
