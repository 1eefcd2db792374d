"""The engines' all-reduce blind grid 9 (simulator/calibration/engine_allreduce_grid9.py BLIND9_*) and its candidate: vLLM's
two-shot's last loop step priced by its fill (hwmodels.roofline AR_FILL_SLOPE, GRID9_CANDIDATE)."""
import ast
import csv
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import hwmodels.roofline as R
from hwmodels import datafiles as DF
from hwmodels.spec import load_hardware
from simulator.calibration import engine_allreduce as E
from simulator.calibration import engine_allreduce_grid9 as G9

ROOT = Path(__file__).resolve().parents[1]
KEY = ["impl", "world", "tokens", "hidden"]


def _keys(df):
    return sorted(map(tuple, df[KEY].to_numpy().tolist()))


def test_blind9_shapes_match_the_measurement_script_and_are_new():
    src = (ROOT / "lab" / "kernels" / "measure_engine_allreduce.py").read_text()
    vals = {t.id: ast.literal_eval(n.value) for n in ast.parse(src).body if isinstance(n, ast.Assign)
            for t in n.targets if isinstance(t, ast.Name) and t.id in ("BLIND9_SHAPES", "BLIND9_CONTROL")}
    assert vals == {"BLIND9_SHAPES": G9.BLIND9_SHAPES, "BLIND9_CONTROL": G9.BLIND9_CONTROL}
    seen = set()
    for f in DF.glob(E.DATA_DIR, "engine_allreduce_*.csv"):
        if "blind9" not in f.name:
            seen |= {(int(r["tokens"]), int(r["hidden"])) for r in csv.DictReader(DF.open_text(f))}
    assert len(seen) > 80 and not seen & set(G9.BLIND9_SHAPES)
    assert set(G9.BLIND9_CONTROL) <= set(G9.BLIND9_SHAPES)
    g = G9.blind9_grid()
    assert len(g) == 207 and (g["world"] == 4).sum() == 177 and set(g["impl"]) == set(E.IMPL_KIND)
    # the regimes grid 8 left untested or missed are in it: <= 64 KiB at 4 ranks, vLLM two-shot fills near 1
    g4 = g[g["world"] == 4]
    assert (g4[g4["impl"] == "trtllm_arnorm_twoshot"]["bytes"] <= 64 * 1024).sum() >= 5
    step = 16 * 512 * 36 * 4
    two = g4[g4["impl"] == "vllm_twoshot"]["bytes"] / step
    assert ((np.ceil(two) - two) < 0.1).sum() >= 10


def test_committed_blind9_prediction():
    pred = pd.read_csv(DF.resolve(E.DATA_DIR / G9.BLIND9_PRED_CSV))
    assert _keys(pred) == _keys(G9.blind9_grid())
    assert {"pred_main_us", "pred_new_us", "vllm_twoshot_waves", "vllm_last_step_fill"} <= set(pred.columns)
    assert (pred["pred_main_us"] > 0).all() and (pred["pred_new_us"] > 0).all()
    # the candidate moves only vLLM's two-shot rows
    other = pred["impl"] != "vllm_twoshot"
    assert np.allclose(pred.loc[other, "pred_main_us"], pred.loc[other, "pred_new_us"])
    assert (pred.loc[~other, "pred_new_us"] > pred.loc[~other, "pred_main_us"]).all()
    hw = load_hardware("H100-SXM")
    assert np.allclose(E.predict_with(pred, hw, G9.GRID9_CANDIDATE), pred["pred_new_us"], rtol=1e-3)
    assert np.allclose(E.predict_with(pred, hw, G9.GRID8_RULE), pred["pred_main_us"], rtol=1e-3)


def test_the_candidate_shipped_and_the_measurement_is_whole():
    hw = load_hardware("H100-SXM")
    assert {k: getattr(R, k) for k in G9.GRID9_CANDIDATE} == G9.GRID9_CANDIDATE
    pred = pd.read_csv(DF.resolve(E.DATA_DIR / G9.BLIND9_PRED_CSV))
    assert np.allclose(E.predict_with(pred, hw, {}), pred["pred_new_us"], rtol=1e-3)   # grid 13's rules off
    meas = pd.read_csv(DF.glob(E.DATA_DIR, G9.BLIND9_MEAS_GLOB)[-1])
    assert len(meas) == 207 and _keys(meas) == _keys(pred) and (meas["script_version"] == 6).all()
    assert not meas["note"].astype("string").fillna("").str.contains("WRONG").any()
    r = E.blind6_rows(pred, meas)
    med = {m: (100 * r[f"err_{m}"]).abs().median() for m in ("main", "new")}
    p90 = {m: (100 * r[f"err_{m}"]).abs().quantile(0.9) for m in ("main", "new")}
    assert med["new"] < med["main"] and p90["new"] < p90["main"]


def test_fill_slope_prices_the_last_step_by_its_fill():
    hw = load_hardware("H100-SXM")
    step = 16 * 36 * 512 * 4
    tok = np.array([step // 8192 // 4, step // 8192 // 2, step // 8192])     # fills 0.25, 0.5, 1.0 of one step
    df = pd.DataFrame({"impl": "vllm_twoshot", "world": 4, "tokens": tok, "hidden": 4096, "bytes": tok * 8192})
    flat = E.predict_with(df, hw, G9.GRID8_RULE)
    assert flat[0] == pytest.approx(flat[2])          # grid 8's rule: one step whatever its fill
    p = E.predict_with(df, hw, {"AR_WAVE_SKIP": 0.25, "AR_FILL_SLOPE": 0.4})
    assert p[0] < p[1] < p[2] and p[2] == pytest.approx(flat[2])
    unit = 2 * 0.75 * step / (hw.link_bw_bytes_s * hw.efficiency.link_ceiling["allreduce_2shot"]) * 1e6   # one step
    assert p[1] - p[0] == pytest.approx(0.4 * 0.25 * unit, rel=1e-6)


def test_grid9_candidate_refits_on_earlier_grids_only():
    got = G9.fit_grid9_terms(load_hardware("H100-SXM"))
    assert got["AR_WAVE_SKIP"] == pytest.approx(G9.GRID9_CANDIDATE["AR_WAVE_SKIP"], abs=0.011)
    assert got["AR_FILL_SLOPE"] == pytest.approx(G9.GRID9_CANDIDATE["AR_FILL_SLOPE"], abs=0.011)
    assert got["rows"] == 45 and got["loss"] <= got["loss_grid8_rule"]
    assert "blind9" not in "".join(G9.GRID9_FIT_GLOBS)
