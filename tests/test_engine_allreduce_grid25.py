"""All-reduce blind grid 25 on 4 x H200 (simulator/calibration/engine_allreduce_grid25.py): the Lamport one-shot's own
per-peer share (lamport_peer_share), the grid, the committed prediction and the candidate's fit."""
from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from hwmodels.spec import ENGINE_AR_RULES, load_hardware
from simulator.calibration import engine_allreduce as EA
from simulator.calibration import engine_allreduce_grid25 as G
from simulator.calibration.engine_allreduce_grid24 import GRID24_H200_RULES, h200_hw

LAB = Path(__file__).resolve().parents[1] / "lab" / "kernels" / "measure_engine_allreduce.py"


def test_grid25_shapes_new_and_lab_script_agrees():
    tree = ast.parse(LAB.read_text())
    c = {t.id: ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
         for t in n.targets if isinstance(t, ast.Name) and t.id in ("BLIND25_SHAPES", "SCRIPT_VERSION")}
    assert c["BLIND25_SHAPES"] == G.BLIND25_SHAPES and c["SCRIPT_VERSION"] >= 22
    assert len(set(G.BLIND25_SHAPES)) == 35 and not set(G.BLIND25_SHAPES) & G.earlier_shapes25()
    assert all(h % 8 == 0 for _, h in G.BLIND25_SHAPES)
    pred = pd.read_csv(EA.DATA_DIR / G.BLIND25_PRED_CSV)
    cells = pred.groupby(["impl", "world", "regime"]).size()
    assert len(pred) == len(G.blind25_grid()) and len(cells) == 31 and cells.min() >= 8


def test_lamport_peer_share_moves_only_the_4_rank_lamport_rows():
    assert "lamport_peer_share" in ENGINE_AR_RULES
    assert {k: v for k, v in G.GRID25_H200_RULES.items() if k != "lamport_peer_share"} == GRID24_H200_RULES
    pred = pd.read_csv(EA.DATA_DIR / G.BLIND25_PRED_CSV)
    main, new, _, _ = G.models()
    sub = pred.iloc[::6]
    assert np.allclose(np.round(EA.predict_us(sub, main), 3), sub["pred_main_us"], atol=2e-3, rtol=0)
    assert np.allclose(np.round(EA.predict_us(sub, new), 3), sub["pred_new_us"], atol=2e-3, rtol=0)
    moved = pred[pred["pred_new_us"] != pred["pred_main_us"]]
    assert set(moved["world"]) == {4} and set(moved["kind"]) == {"allreduce_1shot_lamport"}
    assert (moved["pred_new_us"] > moved["pred_main_us"]).all()     # a larger share than AR_PEER_SHARE: slower
    # honoured only where the engines' terms are set
    off = replace(new, efficiency=replace(new.efficiency, engine_ar={}))
    base = replace(main, efficiency=replace(main.efficiency, engine_ar={}))
    assert np.allclose(EA.predict_us(sub, off), EA.predict_us(sub, base))


def test_candidate_refits_from_the_rows_measured_before_it():
    rows = G.h200_rows25()
    assert not rows["file"].str.contains("blind25").any()
    f = G.fit_grid25_h200_rules(rows)
    assert f["new"] == G.GRID25_H200_RULES and f["rows"] == 438 and f["rms"][1] < f["rms"][0]


def test_shipped_h200_is_grid24_until_grid25_is_judged():
    rules = load_hardware("H200").efficiency.engine_ar_rules     # + the in-step share (no back-to-back call carries it)
    assert {k: v for k, v in rules.items() if k != "after_gemm_share"} == GRID24_H200_RULES
    assert h200_hw(GRID24_H200_RULES).efficiency.engine_ar_rules == GRID24_H200_RULES


def test_judged_run_keeps_main():
    from simulator.calibration import engine_allreduce_grid23 as G23

    r = G.load_blind25()
    assert r is not None and len(r) == 350 and (r["median_us"] > 0).all()
    main, new = G23.pooled(r, err="err"), G23.pooled(r, err="errnew")
    assert main["cells"] == 31 and new["met"] == main["met"]
    assert not (new["med"] < main["med"] and new["p90"] < main["p90"])     # the ship rule: main stays
