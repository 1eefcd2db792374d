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
            "echo": {"value": 0.44, "ref": "input", "kind": "identity"},
            "gone": {"value": 2.42, "ref": "Fig. 9", "kind": "not_reproducible", "missing": "per-step samples"},
            "unused": {"value": 7.0, "ref": "Fig. 1"},
        }}, "<unit>")


def test_kinds_counts_and_tolerances():
    rows = [
        Quantity("speed, within", lambda: 2.1, paper="speed", unit="x"),               # 5 % off, tol 10 %
        Quantity("speed, missed", lambda: 2.5, paper="speed", unit="x"),               # 25 % off
        Quantity("tpot, absolute tolerance", lambda: 6.4, paper="tpot", unit="%"),     # +1.4 points <= 1.5
        Quantity("echo", lambda: 0.44, paper="echo"),
        Quantity("gone", None, paper="gone"),
        Quantity("beyond", lambda: Value(3.0, note="accuracy unknown"), unit="x"),
    ]
    rep = evaluate("unit", "Unit paper", rows, _paper(), notes=[lambda: f"computed {2 * 3}"], draw_figures=False)
    df = rep.frame()
    assert list(df["status"]) == ["within", "missed", "within", "identity", "not reproducible", "prediction"]
    assert rep.counts() == {"within": 2, "missed": 1, "not reproducible": 1, "identity": 1, "predictions": 1}
    assert df.loc[2, "tolerance_abs"] == 1.5 and pd.isna(df.loc[2, "tolerance"])
    assert df.loc[3, "within"] is None or pd.isna(df.loc[3, "within"])            # identity: not judged
    assert "missing: per-step samples" in df.loc[4, "note"]
    text = rep.text()
    assert text.splitlines()[-1] == ("unit: 2 within / 1 missed / 1 not reproducible / 1 identity (not counted) "
                                     "/ 1 predictions")
    assert "note: computed 6" in text and "paper values not compared by any row: unused" in text
    assert "out of scope" in text and "perplexity" in text


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
