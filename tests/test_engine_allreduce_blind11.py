"""The engines' all-reduce blind grid 11 (simulator/calibration/engine_allreduce_grid11.py BLIND11_*) and its candidate:
TensorRT-LLM's two-shot's serialized local copies above 2 ranks only + the fused RMSNorm by cluster size, one- and two-shot
(GRID11_CANDIDATE, predict_grid11)."""
import ast
import csv
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hwmodels import datafiles as DF
from hwmodels.spec import load_hardware
from simulator.calibration import engine_allreduce as E
from simulator.calibration import engine_allreduce_grid11 as G11
from simulator.kernels.allreduce import trtllm_cluster_size

ROOT = Path(__file__).resolve().parents[1]
KEY = ["impl", "world", "tokens", "hidden"]


@pytest.fixture(scope="module")
def pred():
    return pd.read_csv(DF.resolve(E.DATA_DIR / G11.BLIND11_PRED_CSV))


def _keys(df):
    return sorted(map(tuple, df[KEY].to_numpy().tolist()))


def test_blind11_shapes_match_the_measurement_script_and_token_counts_are_new():
    src = (ROOT / "lab" / "kernels" / "measure_engine_allreduce.py").read_text()
    vals = {t.id: ast.literal_eval(n.value) for n in ast.parse(src).body if isinstance(n, ast.Assign)
            for t in n.targets if isinstance(t, ast.Name) and t.id in ("BLIND11_SHAPES", "BLIND11_CONTROL")}
    assert vals == {"BLIND11_SHAPES": G11.BLIND11_SHAPES, "BLIND11_CONTROL": G11.BLIND11_CONTROL}
    seen = set()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lab" / "kernels"))
    from data_order import committed_before  # the CSVs committed before this grid (data_order.txt)
    for f in committed_before("engine_allreduce_blind11_", DF.glob(E.DATA_DIR, "engine_allreduce_*.csv")):
        seen |= {int(r["tokens"]) for r in csv.DictReader(DF.open_text(f))}
    assert len(seen) > 80
    assert not seen & {t for t, _ in G11.BLIND11_SHAPES + G11.BLIND11_CONTROL}


def test_every_cell_holds_at_least_four_rows():
    g = G11.blind11_grid()
    assert len(g) == 210 and (g["world"] == 4).sum() == 135 and set(g["impl"]) == set(E.IMPL_KIND)
    n = g.assign(regime=E.size_regime(g["bytes"])).groupby(["impl", "world", "regime"]).size()
    assert len(n) == 31 and n.min() >= 4
    # TensorRT-LLM's two-shot at 132 CTAs in clusters of 4 (grid 10's worst rows) is in the grid
    assert trtllm_cluster_size([131], [4096], [4], False, 132)[0] == 4.0


def test_committed_blind11_prediction(pred):
    assert len(pred) == 210 and _keys(pred) == _keys(G11.blind11_grid())
    assert {"pred_main_us", "pred_new_us", "trt_ctas", "trt_cluster_size", "regime"} <= set(pred.columns)
    trt = pred["impl"].str.startswith("trtllm")
    moved = (pred["impl"] == "trtllm_ar_twoshot") & (pred["world"] > 2) | pred["impl"].str.startswith("trtllm_arnorm")
    assert np.allclose(pred.loc[~moved, "pred_main_us"], pred.loc[~moved, "pred_new_us"])
    assert (pred.loc[trt & ~moved & pred["impl"].str.endswith("twoshot"), "world"] == 2).all()
    hw = load_hardware("H100-SXM")
    few = pred.iloc[::15]
    assert np.allclose(G11.predict_grid11(few, hw, G11.GRID11_CANDIDATE), few["pred_new_us"], rtol=1e-3)
    assert np.allclose(G11.predict_grid11(few, hw, G11.GRID11_MAIN), few["pred_main_us"], rtol=1e-3)


def test_candidate_structure():
    hw = load_hardware("H100-SXM")
    df = pd.DataFrame({"impl": ["trtllm_ar_twoshot", "trtllm_ar_twoshot", "trtllm_arnorm_oneshot", "trtllm_arnorm_oneshot"],
                       "world": [4, 2, 4, 4], "tokens": [300, 300, 100, 18], "hidden": 4096})
    df["bytes"] = df["tokens"] * df["hidden"] * 2
    base = E.predict_with(df, hw, {})
    d = G11.predict_grid11(df, hw, {"copy": 1.0, "norm_cs1": 1.0, "norm_csn": 1.0}) - base
    hbm = hw.hbm_bw_bytes_s * hw.efficiency.memory["elementwise"]
    assert np.isclose(d[0], 2.0 * df["bytes"][0] / hbm * 1e6) and d[1] == 0.0 and d[2] == 0.0 and d[3] == 0.0
    # one-shot clusters: 100 tokens x 4096 -> one CTA a cluster, 18 tokens -> four
    assert list(trtllm_cluster_size(df["tokens"][2:], 4096, 4, True, 132)) == [1.0, 4.0]
    d = G11.predict_grid11(df, hw, {"copy": 0.0, "norm_cs1": 0.0, "norm_csn": 2.0}) - base
    norm_us = hw.efficiency.engine_ar["norm_s"] * 1e6
    assert np.allclose(d, [0.0, 0.0, -norm_us, norm_us])


def test_the_measurement_is_whole_and_the_candidate_lost(pred):
    meas = pd.read_csv(DF.glob(E.DATA_DIR, G11.BLIND11_MEAS_GLOB)[-1])
    # the one 4-GPU call asked for 4 x H100 and ran on 4 x H200 (the STANDING stays on grid 10)
    assert len(meas) == 210 and _keys(meas) == _keys(pred) and (meas["script_version"] == 8).all()
    assert set(meas["device"]) == {"NVIDIA H200"}
    assert not meas["note"].astype("string").fillna("").str.contains("WRONG").any()
    r = E.blind6_rows(pred, meas)
    met = {}
    for m in ("main", "new"):
        t = r.groupby(["impl", "world", "regime"])[f"err_{m}"].agg(
            med=lambda e: (100 * e).abs().median(), p90=lambda e: (100 * e).abs().quantile(0.9))
        met[m] = int(((t["med"] <= 10) & (t["p90"] <= 25)).sum())
    assert met == {"main": 12, "new": 11}


def test_grid11_replicate_joins_every_row_of_the_scored_run():
    """The second 4 x H200 run of grid 11 (BLIND11_REPLICATE_CSV, named outside BLIND11_MEAS_GLOB so the scored run
    stays the first) joins the scored run on all 210 rows; the spread is second / first - 1."""
    from hwmodels import datafiles as DF

    assert not any(f.name == G11.BLIND11_REPLICATE_CSV for f in DF.glob(E.DATA_DIR, G11.BLIND11_MEAS_GLOB))
    from simulator.calibration.engine_allreduce_replicates import joined

    j = joined(11)   # grid 11's two runs
    assert len(j) == 210 and j[["us_1", "us_2"]].gt(0).all().all()
    assert j["spread"].to_numpy() == pytest.approx((j["us_2"] / j["us_1"] - 1).to_numpy())
    assert set(j["regime"]) <= {"small (8-64 KiB)", "middle (128 KiB-1 MiB)", "large (2-8 MiB)"}
