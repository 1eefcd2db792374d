"""All-reduce blind grid 16: grid 14's rules as per-device values (engine_allreduce_rules), the committed prediction."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hwmodels.errors import SpecError
from hwmodels.spec import efficiency_from_dict, load_hardware
from simulator.calibration import engine_allreduce as EA
from simulator.calibration import engine_allreduce_grid14 as G14
from simulator.calibration import engine_allreduce_grid16 as G


@pytest.fixture(scope="module")
def pred():
    return pd.read_csv(EA.DATA_DIR / G.BLIND16_PRED_CSV)


def test_grid16_shapes_are_new_and_cells_full(pred):
    assert not set(G.BLIND16_SHAPES + G.BLIND16_CONTROL) & G.earlier_shapes16()
    n = len(G.blind16_grid())
    assert n == 225 and len(pred) == 2 * n and set(pred["device"]) == {"H100-SXM", "H200"}
    cells = pred[pred["device"] == "H100-SXM"].groupby(["impl", "world", "regime"]).size()
    assert cells.min() >= 5 and len(cells) == 31


def test_device_rules_match_the_module_constants():
    """An H100 with GRID16_H100_RULES prices exactly as grid 14's module constants at GRID14_CANDIDATE did."""
    h100 = load_hardware("H100-SXM")
    assert G.GRID16_H100_RULES == {"first_fill_extra": G14.GRID14_CANDIDATE["AR_FIRST_FILL_EXTRA"],
                                   "lamport_overlap": G14.GRID14_CANDIDATE["AR_LAMPORT_OVERLAP"]}
    df = G.blind16_grid().iloc[::9]
    a = G14.predict_grid14(df, G.with_rules(h100, {}), G14.GRID14_CANDIDATE)
    b = G.predict(df, G.with_rules(h100, G.GRID16_H100_RULES))
    assert np.allclose(a, b, rtol=1e-12)
    # the rules move only the cells they are about: vLLM's two-shot in one step, the 2-rank Lamport one-shot
    base = G.predict(df, G.with_rules(h100, {}))
    moved = ~np.isclose(b, base, rtol=1e-9)
    about = ((df["impl"] == "vllm_twoshot") | (df["impl"].str.startswith("trtllm") & df["impl"].str.endswith("oneshot")
                                               & (df["world"] == 2))).to_numpy()
    assert moved.any() and not (moved & ~about).any() and (b[moved] < base[moved]).all()


def test_rules_key_is_checked():
    assert efficiency_from_dict({"engine_allreduce_rules": {"first_fill_extra": 0.5}}, "t").engine_ar_rules == \
        {"first_fill_extra": 0.5}
    for bad in ({"first_fill": 0.5}, {"lamport_overlap": 1.5}, {"lamport_overlap": -0.1}):
        with pytest.raises(SpecError):
            efficiency_from_dict({"engine_allreduce_rules": bad}, "t")


def test_prediction_reprices_from_the_committed_rules(pred):
    for dev, rules in (("H100-SXM", G.GRID16_H100_RULES), ("H200", G.GRID16_H200_RULES)):
        hw = load_hardware(dev)
        sub = pred[pred["device"] == dev].iloc[::30]
        assert np.allclose(np.round(G.predict(sub, G.with_rules(hw, {})), 3), sub["pred_main_us"], atol=2e-3, rtol=0)
        assert np.allclose(np.round(G.predict(sub, G.with_rules(hw, rules)), 3), sub["pred_new_us"], atol=2e-3, rtol=0)


def test_shipped_rules_per_device():
    """Rules ship per device, each judged on its own device's blind runs (grid 16 on 4 x H200; grids 14 and 16 on
    4 x H100); the module constants stay off."""
    import hwmodels.roofline as R

    # grid 24 kept grid 16's two H200 rules and added the four link keys (engine_allreduce_grid24.GRID24_H200_RULES)
    assert G.GRID16_H200_RULES.items() <= load_hardware("H200").efficiency.engine_ar_rules.items()
    from simulator.calibration import engine_allreduce_grid17 as G17
    from simulator.calibration import engine_allreduce_grid20 as G20

    # the H100 moved on after grid 17 (its 2-rank rules; grid 16's first_fill_extra kept), grid 19 (oneshot_peer_share)
    # and grid 20 (lamport2_link, the Lamport pair refitted), then grid 22 (the Lamport trio refitted on protocol-B rows)
    from simulator.calibration import engine_allreduce_grid22 as G22

    assert load_hardware("H100-SXM").efficiency.engine_ar_rules == G22.GRID22_H100_RULES
    assert G20.GRID20_H100_RULES.keys() == G22.GRID22_H100_RULES.keys()
    assert G17.GRID17_H100_RULES["first_fill_extra"] == G.GRID16_H100_RULES["first_fill_extra"]
    assert R.AR_FIRST_FILL_EXTRA == 0.0 and R.AR_LAMPORT_OVERLAP == 0.0


@pytest.mark.parametrize("glob, worlds, n", [("engine_allreduce_blind16_nvidia-h100-80gb-hbm3_x4_*.csv", {2, 4}, 225),
                                             ("engine_allreduce_blind16_nvidia-h200_x4_*.csv", {2, 4}, 225),
                                             ("engine_allreduce_blind16_nvidia-h200_x2_*.csv", {2}, 90),
                                             ("engine_allreduce_blind16rep2_nvidia-h200_x2_*.csv", {2}, 90)])
def test_grid16_runs_join_the_prediction(pred, glob, worlds, n):
    from hwmodels import datafiles as DF

    meas = pd.read_csv(DF.glob(EA.DATA_DIR, glob)[-1])
    dev = "H100-SXM" if "h100" in glob else "H200"
    assert set(meas["device"]) == {"NVIDIA H100 80GB HBM3" if dev == "H100-SXM" else "NVIDIA H200"}
    assert set(meas["world"]) == worlds and len(meas) == n
    assert not meas["note"].astype("string").fillna("").str.contains("WRONG").any()
    assert len(pred[pred["device"] == dev].merge(meas, on=["impl", "world", "tokens", "hidden"])) == n
