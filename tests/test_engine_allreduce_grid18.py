"""All-reduce blind grid 18 on 4 x H100: the H100 as shipped after grid 17 judged on every cell."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hwmodels.spec import load_hardware
from simulator.calibration import engine_allreduce as EA
from simulator.calibration import engine_allreduce_grid16 as G16
from simulator.calibration import engine_allreduce_grid17 as G17
from simulator.calibration import engine_allreduce_grid18 as G


@pytest.fixture(scope="module")
def pred():
    return pd.read_csv(EA.DATA_DIR / G.BLIND18_PRED_CSV)


def test_grid18_shapes_are_new_and_cells_full(pred):
    assert not set(G.BLIND18_SHAPES + G.BLIND18_CONTROL) & G.earlier_shapes18()
    assert len(pred) == len(G.blind18_grid()) == 230 and set(pred["device"]) == {"H100-SXM"}
    cells = pred.groupby(["impl", "world", "regime"]).size()
    assert len(cells) == 31 and cells.min() >= 6


def test_grid18_prices_the_shipped_h100_against_grid16s(pred):
    h100 = load_hardware("H100-SXM")
    sub = pred.iloc[::23]
    new = G16.with_rules(h100, G17.GRID17_H100_RULES)     # new = the model as shipped after grid 17 (until grid 19)
    assert np.allclose(np.round(EA.predict_us(sub, new), 3), sub["pred_new_us"], atol=2e-3, rtol=0)
    old = G16.with_rules(h100, G16.GRID16_H100_RULES)
    assert np.allclose(np.round(EA.predict_us(sub, old), 3), sub["pred_main_us"], atol=2e-3, rtol=0)


def test_grid18_ran_on_h100s_and_joins(pred):
    from hwmodels import datafiles as DF

    meas = pd.read_csv(DF.glob(EA.DATA_DIR, G.BLIND18_MEAS_GLOB)[-1])
    assert set(meas["device"]) == {"NVIDIA H100 80GB HBM3"} and len(meas) == 230 and (meas["script_version"] == 15).all()
    assert not meas["note"].astype("string").fillna("").str.contains("WRONG").any()
    assert len(pred.merge(meas, on=["impl", "world", "tokens", "hidden"])) == 230


def test_lab_script_holds_grid18s_shapes():
    import importlib.util
    from pathlib import Path

    # the checkout's lab script (the tests run from the checkout against an installed package: not DATA_DIR's tree)
    p = Path(__file__).resolve().parents[1] / "lab" / "kernels" / "measure_engine_allreduce.py"
    spec = importlib.util.spec_from_file_location("mea18", p)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    assert (m.BLIND18_SHAPES, m.BLIND18_CONTROL) == (G.BLIND18_SHAPES, G.BLIND18_CONTROL) and m.SCRIPT_VERSION >= 15
