"""All-reduce blind grid 17 (2 ranks, 2 x H100): the two 2-rank rules (lamport_phase2, twoshot2_link), the committed
prediction and measurement."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hwmodels.errors import SpecError
from hwmodels.spec import efficiency_from_dict, load_hardware
from simulator.calibration import engine_allreduce as EA
from simulator.calibration import engine_allreduce_grid17 as G
from simulator.calibration.engine_allreduce_grid16 import with_rules


@pytest.fixture(scope="module")
def pred():
    return pd.read_csv(EA.DATA_DIR / G.BLIND17_PRED_CSV)


def test_grid17_shapes_are_new_and_cells_full(pred):
    assert not set(G.BLIND17_SHAPES) & G.earlier_shapes17() and len(set(G.BLIND17_SHAPES)) == 44
    assert len(pred) == len(G.blind17_grid()) == 220 and set(pred["world"]) == {2}
    assert {"pred_main_us", "pred_new_us", "pred_alt_us", "regime", "device"} <= set(pred.columns)
    cells = pred.groupby(["impl", "regime"]).size()
    assert len(cells) == 20 and cells.min() >= 6
    assert cells[("trtllm_ar_oneshot", "a small (8-64 KiB)")] >= 12 and cells[("trtllm_ar_twoshot", "c large (2-8 MiB)")] >= 12


def test_lab_script_holds_the_same_shapes():
    import importlib.util
    from pathlib import Path

    # the checkout's lab script (the tests run from the checkout against an installed package: not DATA_DIR's tree)
    p = Path(__file__).resolve().parents[1] / "lab" / "kernels" / "measure_engine_allreduce.py"
    spec = importlib.util.spec_from_file_location("mea17", p)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    assert m.BLIND17_SHAPES == G.BLIND17_SHAPES and m.SCRIPT_VERSION >= 14   # v14 added --grid blind17


def test_rules_move_only_2rank_trtllm_rows_and_are_off_by_default():
    """lamport_phase2 moves only the 2-rank Lamport one-shot, twoshot2_link only TensorRT-LLM's 2-rank two-shot; with
    neither key (or at the module constants) nothing moves."""
    import hwmodels.roofline as R

    assert (R.AR_LAMPORT_PHASE2, R.AR_TWOSHOT2_LINK) == (1.0, 0.0)
    h = load_hardware("H100-SXM")
    df = EA.grid((2, 4), [(40, 4096), (400, 4096)])
    base = G.predict(df, with_rules(h, {}))
    assert np.allclose(G.predict(df, with_rules(h, {"lamport_phase2": 1.0, "twoshot2_link": 0.0})), base, rtol=1e-12)
    lam = G.predict(df, with_rules(h, {"lamport_phase2": 0.8}))
    two = G.predict(df, with_rules(h, {"twoshot2_link": 0.6}))
    is_lam = (df["impl"].str.startswith("trtllm") & df["impl"].str.endswith("oneshot") & (df["world"] == 2)).to_numpy()
    is_two = (df["impl"].str.startswith("trtllm") & df["impl"].str.endswith("twoshot") & (df["world"] == 2)).to_numpy()
    assert (lam[is_lam] < base[is_lam]).all() and np.allclose(lam[~is_lam], base[~is_lam], rtol=1e-12)
    assert np.allclose(base[is_lam] - lam[is_lam], 0.2 * h.efficiency.engine_ar["phase_s"] * 1e6)
    assert (two[is_two] < base[is_two]).all() and np.allclose(two[~is_two], base[~is_two], rtol=1e-12)
    # the own kernel (no engine terms) ignores both
    from simulator.calibration.fit_production_allreduce import own_kernel

    o = own_kernel(h)
    assert np.allclose(G.predict(df, with_rules(o, {"lamport_phase2": 0.5, "twoshot2_link": 0.9})),
                       G.predict(df, with_rules(o, {})), rtol=1e-12)


def test_rules_keys_are_checked():
    assert efficiency_from_dict({"engine_allreduce_rules": {"twoshot2_link": 0.5}}, "t").engine_ar_rules == \
        {"twoshot2_link": 0.5}
    for bad in ({"lamport_phase2": 1.5}, {"twoshot2_link": -0.1}, {"twoshot_link": 0.5}):
        with pytest.raises(SpecError):
            efficiency_from_dict({"engine_allreduce_rules": bad}, "t")


def test_prediction_reprices_and_ship_state(pred):
    h = load_hardware("H100-SXM")
    sub = pred.iloc[::11]
    from simulator.calibration.engine_allreduce_grid16 import GRID16_H100_RULES

    for col, rules in (("pred_main_us", GRID16_H100_RULES), ("pred_new_us", G.GRID17_H100_RULES),
                       ("pred_alt_us", G.GRID17_H100_ALT)):
        assert np.allclose(np.round(G.predict(sub, with_rules(h, rules)), 3), sub[col], atol=2e-3, rtol=0)
    # grid 17's rules shipped, kept after grid 19 (which adds its 4-rank oneshot_peer_share); grid 20 refitted the
    # Lamport pair with its lamport2_link and kept twoshot2_link
    from simulator.calibration.engine_allreduce_grid19 import GRID19_H100_RULES
    from simulator.calibration.engine_allreduce_grid20 import GRID20_H100_RULES

    assert GRID19_H100_RULES.items() >= G.GRID17_H100_RULES.items()
    from simulator.calibration.engine_allreduce_grid22 import GRID22_H100_RULES

    assert h.efficiency.engine_ar_rules == GRID22_H100_RULES       # grid 22: the Lamport trio refitted again
    assert GRID22_H100_RULES["twoshot2_link"] == GRID20_H100_RULES["twoshot2_link"]
    assert GRID20_H100_RULES["twoshot2_link"] == G.GRID17_H100_RULES["twoshot2_link"]
    # the H200 has no grid-17 Lamport phase rule; its 2-rank two-shot link share is its own (grid 24), not the H100's
    h200_rules = load_hardware("H200").efficiency.engine_ar_rules
    assert "lamport_phase2" not in h200_rules and h200_rules["twoshot2_link"] != G.GRID17_H100_RULES["twoshot2_link"]


def test_measurement_joins_the_prediction(pred):
    from hwmodels import datafiles as DF

    meas = pd.read_csv(DF.glob(EA.DATA_DIR, G.BLIND17_MEAS_GLOB)[-1])
    assert len(meas) == 220 and set(meas["world"]) == {2} and (meas["script_version"] == 14).all()
    assert set(meas["device"]) == {"NVIDIA H100 80GB HBM3"}
    assert not meas["note"].astype("string").fillna("").str.contains("WRONG").any()
    assert len(EA.blind_rows(pred.rename(columns={"pred_new_us": "pred_us"}), meas)) == 220


def test_writer_reproduces_the_committed_yaml(tmp_path):
    import shutil

    from simulator.calibration.engine_allreduce import DATA_DIR

    src = DATA_DIR.parents[1] / "fitted" / "H100-SXM.yaml"
    shutil.copy(src, tmp_path / "H100-SXM.yaml")
    from simulator.calibration.engine_allreduce_grid19 import ship_grid19
    from simulator.calibration.engine_allreduce_grid20 import ship_grid20
    from simulator.calibration.engine_allreduce_grid22 import ship_grid22

    G.ship_grid17(tmp_path)
    ship_grid19(tmp_path)             # the H100 moved on after grid 19
    ship_grid20(tmp_path)             # and after grid 20
    out = ship_grid22(tmp_path)       # and after grid 22
    assert out.read_text() == src.read_text()
