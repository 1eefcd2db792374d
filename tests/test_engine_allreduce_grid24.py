"""All-reduce blind grid 24 (simulator/calibration/engine_allreduce_grid24.py): the shapes, both devices' committed
predictions, the H200 candidate's fit from the committed grid-23 H200 rows, the judged H200 run and the shipped rules."""
from __future__ import annotations

import ast
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hwmodels.spec import load_hardware
from simulator.calibration import engine_allreduce as EA
from simulator.calibration import engine_allreduce_grid23 as G23
from simulator.calibration import engine_allreduce_grid24 as G
from simulator.calibration.engine_allreduce_grid16 import GRID16_H200_RULES

LAB = Path(__file__).resolve().parents[1] / "lab" / "kernels" / "measure_engine_allreduce.py"
LINK_KEYS = ("lamport2_link", "twoshot2_link", "oneshot2_link", "multi_link_time")


def test_grid24_shapes_new_cells_whole_and_lab_script_agrees():
    tree = ast.parse(LAB.read_text())
    c = {t.id: ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
         for t in n.targets if isinstance(t, ast.Name) and t.id in ("BLIND24_SHAPES", "SCRIPT_VERSION")}
    assert c["BLIND24_SHAPES"] == G.BLIND24_SHAPES and c["SCRIPT_VERSION"] >= 21
    assert len(set(G.BLIND24_SHAPES)) == 34 and not set(G.BLIND24_SHAPES) & G.earlier_shapes24()
    assert all(h % 8 == 0 for _, h in G.BLIND24_SHAPES)          # trtllm fusion: hidden % VEC_SIZE (8 bf16) == 0
    for dev in G.BLIND24_PRED_CSV:
        pred = pd.read_csv(EA.DATA_DIR / G.BLIND24_PRED_CSV[dev])
        assert len(pred) == len(G.blind24_grid()) == 340 and set(pred["device"]) == {dev}
        cells = pred.groupby(["impl", "world", "regime"]).size()
        assert len(cells) == 31 and cells.min() >= 7


def test_predictions_reprice_from_the_named_models():
    for dev in G.BLIND24_PRED_CSV:
        pred = pd.read_csv(EA.DATA_DIR / G.BLIND24_PRED_CSV[dev]).iloc[::7]
        main, new, _, _ = G.models(dev)
        assert np.allclose(np.round(EA.predict_us(pred, main), 3), pred["pred_main_us"], atol=2e-3, rtol=0)
        assert np.allclose(np.round(EA.predict_us(pred, new), 3), pred["pred_new_us"], atol=2e-3, rtol=0)
    with pytest.raises(ValueError, match="H200 and H100-SXM"):
        G.models("B200")


def test_h200_candidate_refits_from_the_committed_grid23_rows():
    f = G.fit_grid24_h200_rules()
    assert f["new"] == G.GRID24_H200_RULES
    assert {k: v for k, v in G.GRID24_H200_RULES.items() if k not in LINK_KEYS} == GRID16_H200_RULES
    assert f["rows"] == {"lamport2_link": 26, "twoshot2_link": 26, "oneshot2_link": 13, "multi_link_time": 55}
    assert all(after < before for before, after in f["rms"].values())
    # every key faster than the link shares it replaces, at 1-8 MiB: the new prices there are lower
    pred = pd.read_csv(EA.DATA_DIR / G.BLIND24_PRED_CSV["H200"])
    big = pred[pred["bytes"] > 1 << 20]
    assert (big["pred_new_us"] <= big["pred_main_us"] + 1e-9).all()


def test_judged_h200_run_and_its_replicate():
    r, rep = G.load_blind24("H200"), G.load_blind24("H200", replicate=True)
    assert len(r) == len(rep) == 340 and (r["median_us"] > 0).all()
    main, new = G23.pooled(r, err="err"), G23.pooled(r, err="errnew")
    assert new["cells"] == 31 and new["met"] > main["met"]       # the ship rule's "more cells met"
    assert G23.pooled(rep, err="errnew")["met"] > G23.pooled(rep, err="err")["met"]
    assert G.load_blind24("H100-SXM") is None                    # not measured


def test_shipped_h200_rules_and_the_writer_reproduces_the_yaml(tmp_path):
    from simulator.calibration import allreduce_in_step as S

    rules = load_hardware("H200").efficiency.engine_ar_rules
    assert {k: v for k, v in rules.items() if k != "after_gemm_share"} == G.GRID24_H200_RULES
    src = EA.DATA_DIR.parents[1] / "fitted" / "H200.yaml"
    shutil.copy(src, tmp_path / "H200.yaml")
    G.ship_grid24_h200(tmp_path)                        # grid 24's rules, then the in-step share on top (step-2 grid)
    assert S.ship_step2_h200(tmp_path).read_text() == src.read_text()


def test_protocol_b_prediction_writers_regenerate_the_committed_csvs(tmp_path):
    """Grids 23-25's predictions, written by one helper (engine_allreduce_grid23.price_protocol_b), byte for byte."""
    from simulator.calibration import engine_allreduce_grid25 as G25

    G23.blind23_prediction(tmp_path / "g23.csv")
    assert (tmp_path / "g23.csv").read_bytes() == (EA.DATA_DIR / G23.BLIND23_PRED_CSV).read_bytes()
    for dev, name in G.BLIND24_PRED_CSV.items():
        G.blind24_prediction(tmp_path / f"g24_{dev}.csv", dev)
        assert (tmp_path / f"g24_{dev}.csv").read_bytes() == (EA.DATA_DIR / name).read_bytes()
    G25.blind25_prediction(tmp_path / "g25.csv")
    assert (tmp_path / "g25.csv").read_bytes() == (EA.DATA_DIR / G25.BLIND25_PRED_CSV).read_bytes()
