"""All-reduce blind grid 22 on 4 x H100: 4 and 2 ranks, all 31 cells, every row timed by protocols A and B; the STANDING
scored on protocol B's rows (simulator/calibration/engine_allreduce_grid22.py)."""
from __future__ import annotations

import ast
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hwmodels.spec import load_hardware
from simulator.calibration import engine_allreduce as EA
from simulator.calibration import engine_allreduce_grid22 as G
from simulator.calibration.engine_allreduce_grid20 import GRID20_H100_RULES

LAB = Path(__file__).resolve().parents[1] / "lab" / "kernels" / "measure_engine_allreduce.py"
LAM3 = ("lamport_overlap", "lamport_phase2", "lamport2_link")


@pytest.fixture(scope="module")
def pred():
    return pd.read_csv(EA.DATA_DIR / G.BLIND22_PRED_CSV)


def _lab_consts(*names):
    src = LAB.read_text()
    return {t.id: ast.literal_eval(n.value) for n in ast.parse(src).body if isinstance(n, ast.Assign)
            for t in n.targets if isinstance(t, ast.Name) and t.id in names}


def test_grid22_shapes_new_cells_whole_and_lab_script_agrees(pred):
    c = _lab_consts("BLIND22_SHAPES", "REPS", "REPS_B", "CALLS_B", "SCRIPT_VERSION")
    assert c["BLIND22_SHAPES"] == G.BLIND22_SHAPES and c["SCRIPT_VERSION"] >= 19
    assert (c["REPS"], c["REPS_B"], c["CALLS_B"]) == (G.PROTOCOLS["A"][0], G.PROTOCOLS["B"][0], G.PROTOCOLS["B"][2])
    assert 'choices=("A", "B", "AB"), default="B"' in LAB.read_text()       # protocol B the default from v19
    assert not set(G.BLIND22_SHAPES) & G.earlier_shapes22() and len(set(G.BLIND22_SHAPES)) == 31
    assert len(pred) == len(G.blind22_grid()) == 310 and set(pred["world"]) == {2, 4}
    cells = pred.groupby(["impl", "world", "regime"]).size()
    assert len(cells) == 31 and cells.min() >= 5


def test_prediction_prices_main_and_candidate(pred):
    assert G.STANDING_PROTOCOL == "B"
    sub = pred.iloc[::17]
    assert np.allclose(np.round(G.predict(sub, G.main_hw()), 3), sub["pred_main_us"], atol=2e-3, rtol=0)
    assert np.allclose(np.round(G.predict(sub, G.new_hw()), 3), sub["pred_new_us"], atol=2e-3, rtol=0)
    # the candidate moves only the 2-rank Lamport trio, so only the 2-rank Lamport one-shot rows change price
    assert {k: v for k, v in G.GRID22_H100_RULES.items() if k not in LAM3} == \
        {k: v for k, v in GRID20_H100_RULES.items() if k not in LAM3}
    moved = pred[pred["pred_new_us"] != pred["pred_main_us"]]
    assert set(moved["world"]) == {2} and set(moved["impl"]) == {"trtllm_ar_oneshot", "trtllm_arnorm_oneshot"}
    assert (pred["calls_A"] == np.where(pred["bytes"] <= 1 << 20, 40, 10)).all() and (pred["calls_B"] == 40).all()


def test_as_b_correction_moves_only_protocol_a_rows_above_1mib(tmp_path):
    rows = pd.DataFrame({"impl": ["trtllm_ar_oneshot"] * 3, "world": [2] * 3, "tokens": [128, 64, 128],
                         "hidden": [8192] * 3, "bytes": [2 << 20, 1 << 20, 2 << 20], "median_us": [20.0, 8.0, 20.0],
                         "calls": [10, 40, 10], "note": ["", "", ""]})
    rows.iloc[[0, 1]].to_csv(tmp_path / "engine_allreduce_blind19_nvidia-h100-80gb-hbm3_x4_2026-11-28.csv", index=False)
    rows.iloc[[2]].assign(calls=40).to_csv(tmp_path / "engine_allreduce_blind21B_nvidia-h100-80gb-hbm3_x2_2026-11-28.csv",
                                           index=False)
    rows.iloc[[2]].to_csv(tmp_path / "engine_allreduce_blind21A_nvidia-h100-80gb-hbm3_x2_2026-11-28.csv", index=False)
    v = G.h100_rows_as_b(data_dir=tmp_path).sort_values(["file", "bytes"]).reset_index(drop=True)
    c = G.S_GRID21["trtllm_ar_oneshot"] * (1 / 10 - 1 / 40)
    assert len(v) == 3 and not v["file"].str.contains("blind21A").any() and 1.5 < c < 2.5
    assert v["b_corr_us"].tolist() == pytest.approx([0.0, c, 0.0])      # blind19 1 MiB, blind19 2 MiB, blind21B
    assert (v["median_a_us"] - v["median_us"]).tolist() == pytest.approx([0.0, c, 0.0])


def test_measured_both_protocols_join_and_shipped():
    r = G.load_blind22()
    assert r is not None and len(r) == 310 and set(r["world"]) == {2, 4}
    assert (r["calls_A"] == r["pcalls_A"]).all() and (r["calls_B"] == r["pcalls_B"]).all()
    assert r["s_us"].notna().sum() == (r["bytes"] > 1 << 20).sum()
    b_main, b_new = G.pooled(r, "B"), G.pooled(r, "B", err="errnew")
    assert (b_main["met"], b_new["met"], b_new["cells"]) == (27, 28, 31)       # the ship rule: more cells met on B
    assert load_hardware("H100-SXM").efficiency.engine_ar_rules == G.GRID22_H100_RULES


def test_writer_touches_only_the_engine_allreduce_keys(tmp_path):
    src = EA.DATA_DIR.parents[1] / "fitted" / "H100-SXM.yaml"
    shutil.copy(src, tmp_path / "H100-SXM.yaml")
    assert G.ship_grid22(tmp_path).read_text() == src.read_text()
