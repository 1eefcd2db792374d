"""The engines' all-reduce blind grid 10 (simulator/calibration/engine_allreduce_grid10.py BLIND10_*) and its candidate, not
shipped: TensorRT-LLM's two-shot's serialized local copies and the fused RMSNorm by cluster size (GRID10_CANDIDATE)."""
import ast
import csv
from pathlib import Path

import numpy as np
import pandas as pd

from hwmodels import datafiles as DF
from hwmodels.spec import load_hardware
from simulator.calibration import engine_allreduce as E
from simulator.calibration import engine_allreduce_grid10 as G10
from simulator.kernels.allreduce import trtllm_cluster_size

ROOT = Path(__file__).resolve().parents[1]
KEY = ["impl", "world", "tokens", "hidden"]


def _keys(df):
    return sorted(map(tuple, df[KEY].to_numpy().tolist()))


def test_blind10_shapes_match_the_measurement_script_and_are_new():
    src = (ROOT / "lab" / "kernels" / "measure_engine_allreduce.py").read_text()
    vals = {t.id: ast.literal_eval(n.value) for n in ast.parse(src).body if isinstance(n, ast.Assign)
            for t in n.targets if isinstance(t, ast.Name) and t.id in ("BLIND10_SHAPES", "BLIND10_CONTROL")}
    assert vals == {"BLIND10_SHAPES": G10.BLIND10_SHAPES, "BLIND10_CONTROL": G10.BLIND10_CONTROL}
    seen = set()
    for f in DF.glob(E.DATA_DIR, "engine_allreduce_*.csv"):
        if "blind10" not in f.name:
            seen |= {(int(r["tokens"]), int(r["hidden"])) for r in csv.DictReader(DF.open_text(f))}
    assert len(seen) > 80 and not seen & set(G10.BLIND10_SHAPES)
    assert set(G10.BLIND10_CONTROL) <= set(G10.BLIND10_SHAPES)
    g = G10.blind10_grid()
    assert len(g) == 201 and (g["world"] == 4).sum() == 181 and set(g["impl"]) == set(E.IMPL_KIND)
    # every launch config of the two-shot fusion kernel at 4 ranks: cluster sizes 1, 2 and 4 (none of 8: that needs hidden 8192 at <= 64 tokens)
    two = g[(g["world"] == 4) & (g["impl"] == "trtllm_ar_twoshot")]
    assert set(trtllm_cluster_size(two["tokens"], two["hidden"], 4, False, 132)) == {1.0, 2.0, 4.0}
    assert ((two["bytes"] > 2 ** 20) & (two["bytes"] <= 8 * 2 ** 20)).sum() >= 20


def test_committed_blind10_prediction():
    pred = pd.read_csv(DF.resolve(E.DATA_DIR / G10.BLIND10_PRED_CSV))
    assert len(pred) == 201 and _keys(pred) == _keys(G10.blind10_grid())
    assert {"pred_main_us", "pred_new_us", "trt_ctas", "trt_cluster_size", "trt_tokens_per_cluster"} <= set(pred.columns)
    assert (pred["pred_main_us"] > 0).all() and (pred["pred_new_us"] > 0).all()
    # the candidate moves only TensorRT-LLM's two-shot rows, and raises every plain one
    two = pred["impl"].str.startswith("trtllm") & pred["impl"].str.endswith("twoshot")
    assert np.allclose(pred.loc[~two, "pred_main_us"], pred.loc[~two, "pred_new_us"])
    plain = pred["impl"] == "trtllm_ar_twoshot"
    assert (pred.loc[plain, "pred_new_us"] > pred.loc[plain, "pred_main_us"]).all()
    hw = load_hardware("H100-SXM")
    assert np.allclose(G10.predict_grid10(pred, hw, G10.GRID10_CANDIDATE), pred["pred_new_us"], rtol=1e-3)
    # main's prices are today's model (the candidate was not shipped) and GRID10_MAIN prices the same
    assert np.allclose(E.predict_with(pred, hw, {}), pred["pred_main_us"], rtol=1e-3)   # grid 13's rules off
    assert np.allclose(G10.predict_grid10(pred, hw, G10.GRID10_MAIN), pred["pred_main_us"], rtol=1e-3)


def test_candidate_structure():
    hw = load_hardware("H100-SXM")
    df = pd.DataFrame({"impl": ["trtllm_ar_twoshot", "trtllm_arnorm_twoshot", "trtllm_arnorm_twoshot"],
                       "world": 4, "tokens": [300, 300, 130], "hidden": 4096})
    df["bytes"] = df["tokens"] * df["hidden"] * 2
    base, new = E.predict_with(df, hw, {}), G10.predict_grid10(df, hw, {"copy": 1.0, "norm_cs1": 1.0})
    hbm = hw.hbm_bw_bytes_s * hw.efficiency.memory["elementwise"]
    assert np.allclose(new - base, 2.0 * df["bytes"] / hbm * 1e6)        # one read + one write of the message
    # the RMSNorm's norm term shrinks only with one CTA a cluster (300 tokens: cluster 1; 130 tokens: cluster 4)
    cs = trtllm_cluster_size(df["tokens"], df["hidden"], 4, False, 132)
    assert list(cs) == [1.0, 1.0, 4.0]
    less = G10.predict_grid10(df, hw, {"copy": 0.0, "norm_cs1": 0.0}) - base
    assert less[0] == 0.0 and less[2] == 0.0 and less[1] < -1.0


def test_the_measurement_is_whole_and_the_candidate_lost():
    pred = pd.read_csv(DF.resolve(E.DATA_DIR / G10.BLIND10_PRED_CSV))
    meas = pd.read_csv(DF.glob(E.DATA_DIR, G10.BLIND10_MEAS_GLOB)[-1])
    assert len(meas) == 201 and _keys(meas) == _keys(pred) and (meas["script_version"] == 7).all()
    assert not meas["note"].astype("string").fillna("").str.contains("WRONG").any()
    r = E.blind6_rows(pred, meas)
    met = {}
    for m in ("main", "new"):
        t = r.groupby(["impl", "world", "regime"])[f"err_{m}"].agg(
            med=lambda e: (100 * e).abs().median(), p90=lambda e: (100 * e).abs().quantile(0.9))
        met[m] = int(((t["med"] <= 10) & (t["p90"] <= 25)).sum())
    assert met == {"main": 18, "new": 17}
