"""All-reduce blind grid 23 on 4 x H100 (simulator/calibration/engine_allreduce_grid23.py): the candidate's two engine-only
link keys (oneshot2_link, multi_link_time), the grid, the committed prediction and the protocol-B correction."""
from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hwmodels import roofline as R
from hwmodels.spec import ENGINE_AR_RULES, load_hardware
from simulator.calibration import engine_allreduce as EA
from simulator.calibration import engine_allreduce_grid23 as G
from simulator.calibration.engine_allreduce_grid22 import GRID22_H100_RULES

LAB = Path(__file__).resolve().parents[1] / "lab" / "kernels" / "measure_engine_allreduce.py"
NEW = ("oneshot2_link", "multi_link_time")


@pytest.fixture(scope="module")
def pred():
    return pd.read_csv(EA.DATA_DIR / G.BLIND23_PRED_CSV)


def _lab_consts(*names):
    return {t.id: ast.literal_eval(n.value) for n in ast.parse(LAB.read_text()).body if isinstance(n, ast.Assign)
            for t in n.targets if isinstance(t, ast.Name) and t.id in names}


def test_grid23_shapes_new_cells_whole_and_lab_script_agrees(pred):
    c = _lab_consts("BLIND23_SHAPES", "BLIND23_DIAG", "SCRIPT_VERSION", "REPS_B", "CALLS_B")
    assert c["BLIND23_SHAPES"] == G.BLIND23_SHAPES and c["BLIND23_DIAG"] == G.BLIND23_DIAG and c["SCRIPT_VERSION"] >= 20
    assert (c["REPS_B"], c["CALLS_B"]) == (G.REPS_B, G.CALLS_B)
    shapes = set(G.BLIND23_SHAPES) | set(G.BLIND23_DIAG)
    assert not shapes & G.earlier_shapes23() and len(shapes) == 38
    assert len(pred) == len(G.blind23_grid()) == 360 and int(pred["diag"].sum()) == 20
    assert set(pred[pred["diag"]]["world"]) == {2} and (pred[pred["diag"]]["bytes"] > 8 << 20).all()
    cells = pred[~pred["diag"]].groupby(["impl", "world", "regime"]).size()
    assert len(cells) == 31 and cells.min() >= 5
    for impl, g in (("vllm_oneshot", 2), ("vllm_twoshot", 4), ("trtllm_ar_oneshot", 4)):   # grid 22's three misses
        assert cells[(impl, g, "c large (2-8 MiB)")] >= 8


def test_new_keys_default_off_and_structure(pred):
    assert set(NEW) <= set(ENGINE_AR_RULES) and R.AR_ONESHOT2_LINK == 0.0 and R.AR_MULTI_LINK_TIME == 1.0
    assert {k: v for k, v in G.GRID23_H100_RULES.items() if k not in NEW} == GRID22_H100_RULES
    assert 0 < G.GRID23_H100_RULES["oneshot2_link"] <= 1 and 0 < G.GRID23_H100_RULES["multi_link_time"] <= 1
    sub = pred.iloc[::9]
    assert np.allclose(np.round(G.predict(sub, G.main_hw()), 3), sub["pred_main_us"], atol=2e-3, rtol=0)
    assert np.allclose(np.round(G.predict(sub, G.new_hw()), 3), sub["pred_new_us"], atol=2e-3, rtol=0)
    # oneshot2_link moves only vLLM's one-shot at 2 ranks, multi_link_time only the 4-rank rows, both faster
    moved = pred[pred["pred_new_us"] != pred["pred_main_us"]]
    m2 = moved[moved["world"] == 2]
    assert set(m2["impl"]) == {"vllm_oneshot"} and (moved["pred_new_us"] < moved["pred_main_us"]).all()
    assert set(moved[moved["world"] == 4]["impl"]) == set(pred[pred["world"] == 4]["impl"])
    # keys are honoured only where the engines' terms are set
    from dataclasses import replace
    hw = G.new_hw()
    off = replace(hw, efficiency=replace(hw.efficiency, engine_ar={}))
    base = replace(G.main_hw(), efficiency=replace(G.main_hw().efficiency, engine_ar={}))
    assert np.allclose(G.predict(sub, off), G.predict(sub, base))


def test_as_b23_correction_per_rank_count(tmp_path):
    rows = pd.DataFrame({"impl": ["vllm_twoshot"] * 3, "world": [4] * 3, "tokens": [128, 64, 128],
                         "hidden": [8192] * 3, "bytes": [2 << 20, 1 << 20, 2 << 20], "median_us": [30.0, 8.0, 30.0],
                         "calls": [10, 40, 10], "note": ["", "", ""]})
    rows.iloc[[0, 1]].to_csv(tmp_path / "engine_allreduce_blind19_nvidia-h100-80gb-hbm3_x4_2026-11-28.csv", index=False)
    rows.iloc[[2]].assign(calls=40).to_csv(tmp_path / "engine_allreduce_blind22B_nvidia-h100-80gb-hbm3_x4_2026-11-28.csv",
                                           index=False)
    rows.iloc[[2]].to_csv(tmp_path / "engine_allreduce_blind22A_nvidia-h100-80gb-hbm3_x4_2026-11-28.csv", index=False)
    v = G.h100_rows_as_b23(4, data_dir=tmp_path).sort_values(["file", "bytes"]).reset_index(drop=True)
    c = G.S_WORLD[4] * (1 / 10 - 1 / 40)
    assert len(v) == 3 and not v["file"].str.contains("blind22A").any() and 2.0 < c < 3.0
    assert v["b_corr_us"].tolist() == pytest.approx([0.0, c, 0.0])
    assert G.S_WORLD[2] < G.S_WORLD[4]


def test_shipped_h100_rules_unchanged_until_judged():
    assert load_hardware("H100-SXM").efficiency.engine_ar_rules == GRID22_H100_RULES


def test_h200_run_is_judged_against_the_h200_prices_committed_before_it():
    from simulator.calibration import engine_allreduce_grid23 as G
    from simulator.calibration import engine_allreduce_grid23_h200 as H

    r = H.load_blind23_h200()
    assert r is not None and len(r) == 360 and set(r["device"]) == {"H200"}
    assert (r["median_us"] > 0).all() and r["spread"].between(0.99, 5).all()
    j = G.judge(r, "err")
    assert len(j) == 31 and j["n"].min() >= 7
    s = G.pooled(r, err="err")
    assert s["cells"] == 31 and s["met"] == int(j["met"].sum())
