"""All-reduce blind grid 20 on 2 x H100: the 2-rank Lamport push's own link share (lamport2_link), judged on the 15
2-rank cells."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hwmodels.errors import SpecError
from hwmodels.spec import efficiency_from_dict, load_hardware
from simulator.calibration import engine_allreduce as EA
from simulator.calibration import engine_allreduce_grid20 as G
from simulator.calibration.engine_allreduce_grid16 import with_rules
from simulator.calibration.engine_allreduce_grid19 import GRID19_H100_RULES


@pytest.fixture(scope="module")
def pred():
    return pd.read_csv(EA.DATA_DIR / G.BLIND20_PRED_CSV)


def test_grid20_shapes_are_new_and_cells_full(pred):
    assert not set(G.BLIND20_SHAPES) & G.earlier_shapes20() and len(set(G.BLIND20_SHAPES)) == len(G.BLIND20_SHAPES)
    assert len(pred) == len(G.blind20_grid()) == 156 and set(pred["world"]) == {2} and set(pred["device"]) == {"H100-SXM"}
    assert {"pred_main_us", "pred_new_us", "pred_alt_us", "regime", "trt_ctas", "trt_cluster_size"} <= set(pred.columns)
    cells = pred.groupby(["impl", "regime"]).size()
    assert len(cells) == 15 and cells.min() >= 5
    for impl, reg in G.TARGETS:
        assert cells[(impl, reg)] >= 10


def test_prediction_reprices_and_ship_state(pred):
    h = load_hardware("H100-SXM")
    from simulator.calibration.engine_allreduce_grid22 import GRID22_H100_RULES

    assert h.efficiency.engine_ar_rules == GRID22_H100_RULES        # grid 22 refitted the same three keys
    lam3 = ("lamport_overlap", "lamport_phase2", "lamport2_link")
    assert {k: v for k, v in GRID22_H100_RULES.items() if k not in lam3} == \
        {k: v for k, v in G.GRID20_H100_RULES.items() if k not in lam3}
    lam = ("lamport_overlap", "lamport_phase2", "lamport2_link")
    assert {k: v for k, v in G.GRID20_H100_RULES.items() if k not in lam} == \
        {k: v for k, v in GRID19_H100_RULES.items() if k not in lam}
    sub = pred.iloc[::11]
    for col, rules in (("pred_main_us", GRID19_H100_RULES), ("pred_new_us", G.GRID20_H100_RULES),
                       ("pred_alt_us", G.GRID20_H100_ALT)):
        assert np.allclose(np.round(G.predict(sub, with_rules(h, rules)), 3), sub[col], atol=2e-3, rtol=0)


def test_rule_moves_only_the_two_rank_lamport():
    import hwmodels.roofline as R
    from simulator.calibration.fit_production_allreduce import own_kernel

    df = EA.grid((2, 4), [(3, 4096), (40, 4096), (300, 8192)])
    h = load_hardware("H100-SXM")
    base = {k: v for k, v in GRID19_H100_RULES.items() if k != "lamport_overlap"}     # overlap off: the bare link term
    a, b = (G.predict(df, with_rules(h, {**base, **x})) for x in ({}, {"lamport2_link": 0.5}))
    moved = df["impl"].str.startswith("trtllm").to_numpy() & df["impl"].str.endswith("oneshot").to_numpy() \
        & (df["world"] == 2).to_numpy()
    assert moved.any() and np.allclose(a[~moved], b[~moved], rtol=1e-12) and not np.allclose(a[moved], b[moved])
    # the 2-rank Lamport's link term is exactly bytes / (datasheet link rate x share)
    c = G.predict(df, with_rules(h, {**base, "lamport2_link": 0.25}))
    step = (c - b)[moved]
    want = df["bytes"].to_numpy(float)[moved] / h.link_bw_bytes_s * (1 / 0.25 - 1 / 0.5) * 1e6
    assert np.allclose(step, want, rtol=1e-9)
    assert R.AR_LAMPORT2_LINK == 0.0       # off by default
    o = own_kernel(h)       # the own kernel (no engine terms) and the H200 (no such key) ignore it
    assert np.allclose(G.predict(df, with_rules(o, {"lamport2_link": 0.5})), G.predict(df, with_rules(o, {})))
    # the H200's own lamport2_link (grid 24), fitted on its own rows, not the H100's
    from simulator.calibration.engine_allreduce_grid24 import GRID24_H200_RULES
    assert load_hardware("H200").efficiency.engine_ar_rules["lamport2_link"] == GRID24_H200_RULES["lamport2_link"]


def test_rule_key_is_checked():
    assert efficiency_from_dict({"engine_allreduce_rules": {"lamport2_link": 0.5}}, "t").engine_ar_rules == \
        {"lamport2_link": 0.5}
    with pytest.raises(SpecError):
        efficiency_from_dict({"engine_allreduce_rules": {"lamport2_link": 1.5}}, "t")


def test_grid20_ran_on_h100s_and_joins(pred):
    from hwmodels import datafiles as DF

    meas = pd.read_csv(DF.glob(EA.DATA_DIR, G.BLIND20_MEAS_GLOB)[-1])
    assert set(meas["device"]) == {"NVIDIA H100 80GB HBM3"} and len(meas) == 156 and (meas["script_version"] == 17).all()
    assert not meas["note"].astype("string").fillna("").str.contains("WRONG").any()
    assert len(pred.merge(meas, on=["impl", "world", "tokens", "hidden"])) == 156


def test_lab_script_holds_grid20s_shapes():
    import importlib.util
    from pathlib import Path

    p = Path(__file__).resolve().parents[1] / "lab" / "kernels" / "measure_engine_allreduce.py"
    spec = importlib.util.spec_from_file_location("mea20", p)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    assert m.BLIND20_SHAPES == G.BLIND20_SHAPES and m.SCRIPT_VERSION >= 17
