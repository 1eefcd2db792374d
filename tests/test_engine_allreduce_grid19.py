"""All-reduce blind grid 19 on 4 x H100: vLLM's one-shot's own per-wait peer share (oneshot_peer_share), judged on 31 cells."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hwmodels.errors import SpecError
from hwmodels.spec import efficiency_from_dict, load_hardware
from simulator.calibration import engine_allreduce as EA
from simulator.calibration import engine_allreduce_grid19 as G
from simulator.calibration.engine_allreduce_grid16 import with_rules
from simulator.calibration.engine_allreduce_grid17 import GRID17_H100_RULES


@pytest.fixture(scope="module")
def pred():
    return pd.read_csv(EA.DATA_DIR / G.BLIND19_PRED_CSV)


def test_grid19_shapes_are_new_and_cells_full(pred):
    assert not set(G.BLIND19_SHAPES + G.BLIND19_CONTROL) & G.earlier_shapes19()
    assert len(pred) == len(G.blind19_grid()) == 280 and set(pred["device"]) == {"H100-SXM"}
    cells = pred.groupby(["impl", "world", "regime"]).size()
    assert len(cells) == 31 and cells.min() >= 5
    small = pred[(pred["world"] == 4) & (pred["bytes"] <= 64 * 1024)]
    assert (small["impl"] == "vllm_oneshot").sum() >= 10 and (small["impl"] == "trtllm_ar_oneshot").sum() >= 10


def test_prediction_reprices_and_ship_state(pred):
    h = load_hardware("H100-SXM")
    from simulator.calibration.engine_allreduce_grid20 import GRID20_H100_RULES

    # shipped after grid 19, then grid 20 moved only the 2-rank Lamport keys (oneshot_peer_share kept)
    from simulator.calibration.engine_allreduce_grid22 import GRID22_H100_RULES

    assert h.efficiency.engine_ar_rules == GRID22_H100_RULES      # grid 22 refitted the Lamport trio again
    lam = {"lamport_overlap", "lamport_phase2", "lamport2_link"}
    assert {k: v for k, v in GRID20_H100_RULES.items() if k not in lam} == \
        {k: v for k, v in G.GRID19_H100_RULES.items() if k not in lam}
    assert {k: v for k, v in G.GRID19_H100_RULES.items() if k != "oneshot_peer_share"} == GRID17_H100_RULES
    sub = pred.iloc[::13]
    for col, rules in (("pred_main_us", GRID17_H100_RULES), ("pred_new_us", G.GRID19_H100_RULES),
                       ("pred_alt_us", G.GRID19_H100_ALT)):
        assert np.allclose(np.round(G.predict(sub, with_rules(h, rules)), 3), sub[col], atol=2e-3, rtol=0)


def test_rule_moves_only_vllms_oneshot_above_two_ranks():
    import hwmodels.roofline as R
    from simulator.calibration.fit_production_allreduce import own_kernel

    df = EA.grid((2, 4, 8), [(3, 4096), (40, 4096), (300, 8192)])
    h = load_hardware("H100-SXM")
    base, new = (G.predict(df, with_rules(h, {**GRID17_H100_RULES, **x})) for x in ({}, {"oneshot_peer_share": 0.01}))
    moved = (df["impl"] == "vllm_oneshot").to_numpy() & (df["world"] > 2).to_numpy()
    assert moved.any() and np.allclose(base[~moved], new[~moved], rtol=1e-12)
    # 3 waits (2 flag barriers + 1 peer-data phase), each (g - 2) x share x phase_s
    g = df["world"].to_numpy(float)[moved]
    want = 3 * (g - 2) * (R.AR_PEER_SHARE - 0.01) * h.efficiency.engine_ar["phase_s"] * 1e6
    assert np.allclose(base[moved] - new[moved], want)
    o = own_kernel(h)       # the own kernel (no engine terms) and the H200 (no such key) ignore it
    assert np.allclose(G.predict(df, with_rules(o, {"oneshot_peer_share": 0.5})), G.predict(df, with_rules(o, {})))
    assert "oneshot_peer_share" not in load_hardware("H200").efficiency.engine_ar_rules


def test_rule_key_is_checked():
    assert efficiency_from_dict({"engine_allreduce_rules": {"oneshot_peer_share": 0.02}}, "t").engine_ar_rules == \
        {"oneshot_peer_share": 0.02}
    with pytest.raises(SpecError):
        efficiency_from_dict({"engine_allreduce_rules": {"oneshot_peer_share": 1.5}}, "t")


def test_committed_share_beats_the_shared_one_on_grid18s_looked_at_rows():
    """The candidate's share was fitted on looked-at rows (grid 18's among them): there it must price the 4-rank vLLM
    one-shot closer (log error) than AR_PEER_SHARE did, and lie below it (the rows sat high)."""
    import hwmodels.roofline as R
    from hwmodels import datafiles as DF
    from simulator.calibration import engine_allreduce_grid18 as G18

    m = pd.read_csv(DF.glob(EA.DATA_DIR, G18.BLIND18_MEAS_GLOB)[-1])
    m = m[(m["impl"] == "vllm_oneshot") & (m["world"] == 4)].reset_index(drop=True)
    h = load_hardware("H100-SXM")
    y = np.log(m["median_us"].to_numpy(float))
    err = {k: np.sum((np.log(G.predict(m, with_rules(h, r))) - y) ** 2)
           for k, r in (("main", GRID17_H100_RULES), ("new", G.GRID19_H100_RULES))}
    assert err["new"] < err["main"] and G.GRID19_H100_RULES["oneshot_peer_share"] < R.AR_PEER_SHARE


def test_grid19_ran_on_h100s_and_joins(pred):
    from hwmodels import datafiles as DF

    meas = pd.read_csv(DF.glob(EA.DATA_DIR, G.BLIND19_MEAS_GLOB)[-1])
    assert set(meas["device"]) == {"NVIDIA H100 80GB HBM3"} and len(meas) == 280 and (meas["script_version"] == 16).all()
    assert not meas["note"].astype("string").fillna("").str.contains("WRONG").any()
    assert len(pred.merge(meas, on=["impl", "world", "tokens", "hidden"])) == 280


def test_lab_script_holds_grid19s_shapes():
    import importlib.util
    from pathlib import Path

    p = Path(__file__).resolve().parents[1] / "lab" / "kernels" / "measure_engine_allreduce.py"
    spec = importlib.util.spec_from_file_location("mea19", p)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    assert m.BLIND19_SHAPES == G.BLIND19_SHAPES and m.SCRIPT_VERSION >= 16
