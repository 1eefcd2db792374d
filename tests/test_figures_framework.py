"""The reproduction framework (simulator/figures/framework.py, common.py, render.py): kinds and counts, tolerances,
paper values the rows did not use, alternatives / sensitivity text, PNG rendering, and the one-line error when a
reproduction is attached to a scenario it does not fit."""
import numpy as np
import pandas as pd
import pytest

from hwmodels.errors import ScenarioError, SpecError
from simulator.figures import Plot, Quantity, Value, check_fit, evaluate, reproductions, run_reproduction
from simulator.figures import common as C
from simulator.figures.framework import PaperValues
from simulator.scenario import load_scenario


def _paper():
    return PaperValues("unit", {
        "paper": "a unit-test paper", "tolerance": 0.1, "out_of_scope": ["perplexity (Table 3)"],
        "values": {
            "speed": {"value": 2.0, "ref": "Table 1", "figure": "Table 1"},
            "tpot": {"value": 5.0, "ref": "Table 2", "figure": "Table 2", "tolerance_abs": 1.5},
            "floor": {"value": 4.0, "ref": "Fig. 3: at least 4x", "figure": "Fig. 3", "lower": 4.0},
            "ratio": {"value": 1.5, "ref": "Table 1 speedup", "kind": "check", "of": "the two speed rows"},
            "code": {"value": 21.9, "ref": "not the paper: a source-code comment", "kind": "calibration"},
            "text": {"value": 7.7, "ref": "sec. 5", "contradicts": "the caption's 4.5x"},
            "echo": {"value": 0.44, "ref": "input", "kind": "identity"},
            "gone": {"value": 2.42, "ref": "Fig. 9", "kind": "not_reproducible", "missing": "per-step samples"},
            "unused": {"value": 7.0, "ref": "Fig. 1"},
        }}, "<unit>")


def test_counting_rule_classes_and_counts():
    """THE COUNTING RULE: relative rows are within / conditional / missed / not reproducible (mechanically from
    the printed sensitivity); bounds, absolute bands, checks and calibration checks are judged, not counted."""
    sens_flip = {"launch (ASSUMPTION)": {"5 us": 2.5, "14 us": 2.1}}     # 2.5 is 25 % off: flips a within row
    sens_span = {"window (ASSUMPTION)": {"32": 1.0, "4096": 2.05}}       # reaches the target: spans it
    rows = [
        Quantity("speed, within", lambda: 2.1, paper="speed", unit="x"),               # 5 % off, tol 10 %
        Quantity("speed, missed", lambda: 2.5, paper="speed", unit="x"),               # 25 % off
        Quantity("speed, conditional", lambda: Value(2.1, sensitivity=sens_flip), paper="speed", unit="x"),
        Quantity("speed, decided by a missing input", lambda: Value(1.2, sensitivity=sens_span), paper="speed"),
        Quantity("tpot, absolute band", lambda: 6.4, paper="tpot", unit="%"),          # +1.4 points <= 1.5
        Quantity("floor, bound", lambda: 3.0, paper="floor", unit="x"),
        Quantity("ratio of two rows", lambda: 1.6, paper="ratio", unit="x"),
        Quantity("source-code timing", lambda: 30.0, paper="code", unit="us"),
        Quantity("self-contradicting text", lambda: 7.6, paper="text", unit="x"),
        Quantity("echo", lambda: 0.44, paper="echo"),
        Quantity("gone", None, paper="gone"),
        Quantity("beyond", lambda: Value(3.0, note="accuracy unknown"), unit="x"),
    ]
    rep = evaluate("unit", "Unit paper", rows, _paper(), notes=[lambda: f"computed {2 * 3}"], draw_figures=False)
    df = rep.frame()
    assert list(df["class"]) == ["within", "missed", "conditional", "not reproducible", "bound", "bound", "check",
                                 "calibration", "not reproducible", "identity", "not reproducible", "prediction"]
    assert list(df["status"][4:8]) == ["holds", "fails", "agrees", "differs"]
    assert list(df["tolerance_kind"][:8]) == ["relative"] * 4 + ["absolute", "bound", "relative", "relative"]
    assert "launch (ASSUMPTION) at 5 us" in df.loc[2, "class_reason"]
    assert "window (ASSUMPTION)" in df.loc[3, "class_reason"] and "contradicts" in df.loc[8, "class_reason"]
    assert "derived from the two speed rows" in df.loc[6, "note"]
    c = rep.counts()
    assert (c["within"], c["conditional"], c["missed"], c["not reproducible"]) == (1, 1, 1, 3)
    assert (c["checks"], c["checks agreeing"], c["bounds"], c["bounds holding"]) == (1, 1, 2, 1)
    assert (c["calibration checks"], c["calibration agreeing"], c["identity"], c["predictions"]) == (1, 0, 1, 1)
    assert df.loc[9, "within"] is None or pd.isna(df.loc[9, "within"])            # identity: not judged
    assert "missing: per-step samples" in df.loc[10, "note"]
    text = rep.text()
    assert text.splitlines()[-1] == (
        "unit: 1 within / 1 conditional / 1 missed / 3 not reproducible (3 counted, 33 % within); checks 1 (1 agree); "
        "bounds 2 (1 hold); calibration checks 1 (0 agree); 1 identity (not counted); 1 predictions")
    assert text.splitlines()[-2].startswith("counting rule:")
    assert "note: computed 6" in text and "paper values not compared by any row: unused" in text
    assert "out of scope" in text and "perplexity" in text


def test_check_rows_need_their_source_rows():
    with pytest.raises(SpecError, match="check"):
        PaperValues("bad", {"values": {"r": {"value": 1.0, "ref": "x", "kind": "check"}}}, "<bad>")


def test_alternatives_sensitivity_inputs():
    v = Value(1.5, alternatives={"B=4": 1.2}, reading="batch 1 is the reference",
              sensitivity={"gamma (ASSUMPTION 0.7)": {"0.5": 1.4, "0.9": 1.7}}, inputs="assumed: gamma 0.7")
    rep = evaluate("unit", "t", [Quantity("speed", lambda: v, paper="speed")], _paper(), draw_figures=False)
    r = rep.frame().iloc[0]
    assert r["alternatives"] == "B=4 1.2 (batch 1 is the reference)"
    assert r["sensitivity"] == "gamma (ASSUMPTION 0.7): 0.5 1.4, 0.9 1.7"
    assert r["inputs"] == "assumed: gamma 0.7"
    assert "sensitivity: speed: gamma" in rep.text()


def test_declaration_errors():
    with pytest.raises(ValueError, match="needs a paper value"):
        evaluate("unit", "t", [Quantity("x", lambda: 1.0, kind="reproduction")], _paper(), draw_figures=False)
    with pytest.raises(SpecError, match="missing"):
        PaperValues("bad", {"values": {"a": {"ref": "r", "kind": "not_reproducible"}}}, "<bad>")
    with pytest.raises(SpecError, match="kind"):
        PaperValues("bad", {"values": {"a": {"ref": "r", "kind": "guess"}}}, "<bad>")


def test_render_writes_one_png_per_figure(tmp_path):
    drawn = []
    rows = [Quantity("speed", lambda: 2.5, paper="speed", unit="x"), Quantity("tpot", lambda: 6.0, paper="tpot"),
            Quantity("gone", None, paper="gone")]
    rep = evaluate("unit", "t", rows, _paper(), plots=[Plot("extra", lambda p: (drawn.append(p), p.write_bytes(b"x")))])
    paths = rep.files(tmp_path)
    names = sorted(p.name for p in paths)
    assert names == ["unit_extra.png", "unit_other.png", "unit_table_1.png", "unit_table_2.png"]
    assert all(p.stat().st_size > 0 for p in paths) and drawn == [tmp_path / "unit_extra.png"]


def test_a_reproduction_on_a_scenario_it_does_not_fit():
    sc = load_scenario("gvr_b200")                      # DeepSeek-V3.2-Exp: no GQA model for NSA/EAGLE-3
    with pytest.raises(ScenarioError, match="reproduction 'ssv' does not fit scenario 'gvr_b200': it needs a GQA"):
        run_reproduction("ssv", sc)
    q = load_scenario("quickstart")
    for name in ("ssv", "gvr_topk"):
        with pytest.raises(ScenarioError, match="does not fit scenario"):
            check_fit(name, q)
    assert {"ssv", "gvr_topk"} <= set(reproductions())


def test_combo_factory_and_op_timer():
    sc = load_scenario("ssv_h100_pcie")
    c = C.combo(sc, attention=C.scenario_value(sc, "attention", "nsa"), speculation="eagle3")
    assert c.hardware.name == "H100-PCIe" and c.speculation.name == "eagle3" and c.verify_kernel.name == "none"
    with pytest.raises(ScenarioError, match="configuration 'broken'.*refused"):
        C.combo(sc, label="broken", attention="dense", verify_kernel="ssv", speculation="eagle3")
    t = C.op_times(c, [1.0, 4.0], C.mean_kv([65536.0, 65536.0], 256))
    assert set(t) >= {"nsa.select", "qkv_proj", "draft.qkv_proj"} and t["nsa.select"].shape == (2,)
    assert (t["nsa.select"][1] > t["nsa.select"][0])                  # batch 4 loads 4x the blocks
    k = C.op_times(c, 1.0, [65536.0], launch=False)
    assert C.sum_ops(k, lambda n: n == "nsa.select")[0] < t["nsa.select"][0]
    assert C.gmean([1.0, 4.0]) == pytest.approx(2.0) and np.allclose(C.mean_kv([100.0], 9), 95.0)
    assert C.with_params(c.speculation, k=6).k == 6 and c.speculation.k == 4
