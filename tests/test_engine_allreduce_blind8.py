"""The engines' all-reduce blind grid 8 (simulator/calibration/engine_allreduce_grid8.py BLIND8_*) and the rule it shipped:
vLLM's two-shot priced in whole grid-stride loop steps, the TensorRT-LLM Lamport push's own link ceiling over > 1 peer
(hwmodels.roofline AR_WAVE_SKIP / LAMPORT_CEILING_RATIO)."""
import ast
import csv
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import hwmodels.roofline as R
from hwmodels import datafiles as DF
from hwmodels.spec import load_hardware
from simulator.calibration import engine_allreduce as E
from simulator.calibration import engine_allreduce_grid8 as G8
from simulator.calibration import engine_allreduce_grid9 as G9
from simulator.kernels.allreduce import vllm_twoshot_waves

ROOT = Path(__file__).resolve().parents[1]
KEY = ["impl", "world", "tokens", "hidden"]


def _keys(df):
    return sorted(map(tuple, df[KEY].to_numpy().tolist()))


def test_blind8_shapes_match_the_measurement_script_and_are_new():
    src = (ROOT / "lab" / "kernels" / "measure_engine_allreduce.py").read_text()
    vals = {t.id: ast.literal_eval(n.value) for n in ast.parse(src).body if isinstance(n, ast.Assign)
            for t in n.targets if isinstance(t, ast.Name) and t.id in ("BLIND8_SHAPES", "BLIND8_CONTROL")}
    assert vals == {"BLIND8_SHAPES": G8.BLIND8_SHAPES, "BLIND8_CONTROL": G8.BLIND8_CONTROL}
    seen = set()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lab" / "kernels"))
    from data_order import committed_before  # the CSVs committed before this grid (data_order.txt)
    for f in committed_before("engine_allreduce_blind8_", DF.glob(E.DATA_DIR, "engine_allreduce_*.csv")):
        seen |= {int(r["tokens"]) for r in csv.DictReader(DF.open_text(f))}
    g = G8.blind8_grid()
    assert not seen & set(g["tokens"])
    assert len(g) == 150 and (g["world"] == 4).sum() == 130 and set(g["impl"]) == set(E.IMPL_KIND)


def test_committed_blind8_prediction_and_measurement():
    pred = pd.read_csv(DF.resolve(E.DATA_DIR / G8.BLIND8_PRED_CSV))
    assert _keys(pred) == _keys(G8.blind8_grid())
    assert {"pred_main_us", "pred_new_us", "vllm_twoshot_waves"} <= set(pred.columns)
    assert (pred["pred_main_us"] > 0).all() and (pred["pred_new_us"] > 0).all()
    meas = pd.read_csv(DF.glob(E.DATA_DIR, G8.BLIND8_MEAS_GLOB)[-1])
    # one device call: vLLM complete, TensorRT-LLM's 4-rank rows stop after the first 11 shapes (JIT build 164 s)
    assert len(meas) == 90 and set(_keys(meas)) <= set(_keys(pred))
    assert not meas["note"].astype("string").fillna("").str.contains("WRONG").any()
    assert (meas["impl"].str.startswith("vllm")).sum() == 30


def test_grid8_rule_prices_the_committed_candidate():
    # grid 8's rule (shipped at grid 8, replaced by grid 9's fill rule: GRID8_RULE) reproduces its committed prices
    hw = load_hardware("H100-SXM")
    pred = pd.read_csv(DF.resolve(E.DATA_DIR / G8.BLIND8_PRED_CSV))
    assert np.allclose(E.predict_with(pred, hw, G9.GRID8_RULE), pred["pred_new_us"], rtol=1e-3)


def test_vllm_twoshot_steps_and_lamport_ceiling_follow_the_rule():
    hw = load_hardware("H100-SXM")
    step = 16 * 36 * 512 * 4      # bytes of one loop step of vLLM's two-shot at 4 ranks
    tok = np.array([step // 8192 - 2, step // 8192 + 2])    # hidden 4096: just below and just above one step
    df = pd.DataFrame({"impl": "vllm_twoshot", "world": 4, "tokens": tok, "hidden": 4096, "bytes": tok * 8192})
    lo, hi = E.predict_with(df, hw, G9.GRID8_RULE)
    assert list(vllm_twoshot_waves(df["bytes"], 4)) == [1.0, 2.0]
    one_step = 2 * 0.75 * step / (hw.link_bw_bytes_s * hw.efficiency.link_ceiling["allreduce_2shot"]) * 1e6
    assert hi - lo == pytest.approx(one_step, rel=1e-6)
    # TensorRT-LLM's two-shot declares no CTAs: no steps; the Lamport ratio moves 4 ranks, not 2
    tt = df.assign(impl="trtllm_ar_twoshot")
    assert E.predict_us(tt, hw)[1] - E.predict_us(tt, hw)[0] < 0.5 * one_step
    lam = pd.DataFrame({"impl": "trtllm_ar_oneshot", "world": [2, 4], "tokens": 400, "hidden": 8192,
                        "bytes": 400 * 16384})
    base = E.predict_us(lam, hw)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(R, "LAMPORT_CEILING_RATIO", 1.0)
        off = E.predict_us(lam, hw)
    assert base[0] == pytest.approx(off[0]) and base[1] > off[1] * 1.05


def test_grid8_terms_refit_on_earlier_grids_reproduce_the_shipped_constants():
    got = G8.fit_grid8_terms(load_hardware("H100-SXM"))
    assert got["AR_WAVE_SKIP"] == pytest.approx(G9.GRID8_RULE["AR_WAVE_SKIP"], abs=0.01)
    assert got["LAMPORT_CEILING_RATIO"] == pytest.approx(R.LAMPORT_CEILING_RATIO, abs=1e-3)
    assert got["rows_vllm_twoshot"] == 26 and got["rows_lamport"] == 28
    assert "blind8" not in "".join(G8.GRID8_FIT_GLOBS)


def test_add_allreduce_declares_vllm_ctas():
    from simulator.kernels.allreduce import VLLM_CTAS, add_allreduce
    from simulator.ops import OpBuilder
    for eng, want in (("vllm", VLLM_CTAS), ("sglang", VLLM_CTAS), ("trtllm", 0.0), ("nccl", 0.0)):
        b = OpBuilder(1)
        add_allreduce(b, "ar", eng, 4 * 2 ** 20, 4, 1.0, hidden=8192, sms=132)
        assert b.build().parallel_units.tolist() == [want]
