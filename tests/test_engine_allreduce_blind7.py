"""The engines' all-reduce blind grid 7 (simulator/calibration/engine_allreduce_grid7.py BLIND7_*): the same shapes as the lab
script measures, token counts in no committed campaign, and the Lamport one-shot's push phase the new model prices."""
import ast
import csv
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hwmodels import datafiles as DF
from simulator.calibration import engine_allreduce as E
from simulator.calibration import engine_allreduce_grid7 as G7

ROOT = Path(__file__).resolve().parents[1]


def test_blind7_shapes_match_the_measurement_script_and_are_new():
    src = (ROOT / "lab" / "kernels" / "measure_engine_allreduce.py").read_text()
    vals = {t.id: ast.literal_eval(n.value) for n in ast.parse(src).body if isinstance(n, ast.Assign)
            for t in n.targets if isinstance(t, ast.Name) and t.id == "BLIND7_SHAPES"}
    assert vals["BLIND7_SHAPES"] == G7.BLIND7_SHAPES
    seen = set()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lab" / "kernels"))
    from data_order import committed_before  # the CSVs committed before this grid (data_order.txt)
    for f in committed_before("engine_allreduce_blind7_", DF.glob(E.DATA_DIR, "engine_allreduce_*.csv")):
        seen |= {int(r["tokens"]) for r in csv.DictReader(DF.open_text(f))}
    g = G7.blind7_grid()
    assert not seen & set(g["tokens"])
    assert set(g["world"]) == {2, 4} and set(g["impl"]) == set(E.IMPL_KIND)
    assert set(g["hidden"]) == {4096, 5120, 7168, 8192} and 120 <= len(g) <= 180


def test_committed_blind7_prediction_covers_the_grid():
    f = DF.resolve(E.DATA_DIR / G7.BLIND7_PRED_CSV)
    if not f.is_file():
        pytest.skip("blind7 prediction not written yet")
    pred = pd.read_csv(f)
    key = ["impl", "world", "tokens", "hidden"]
    assert sorted(map(tuple, pred[key].to_numpy().tolist())) == \
        sorted(map(tuple, G7.blind7_grid()[key].to_numpy().tolist()))
    assert (pred["pred_main_us"] > 0).all() and (pred["pred_new_us"] > 0).all()


def test_committed_blind7_measurement_covers_the_grid_and_the_lamport_tokens_per_cluster_follow_the_source():
    meas = DF.glob(E.DATA_DIR, G7.BLIND7_MEAS_GLOB)
    if not meas:
        pytest.skip("blind7 not measured yet")
    m = pd.read_csv(meas[-1])
    key = ["impl", "world", "tokens", "hidden"]
    assert sorted(map(tuple, m[key].to_numpy().tolist())) == \
        sorted(map(tuple, G7.blind7_grid()[key].to_numpy().tolist()))
    assert not m["note"].astype("string").fillna("").str.contains("WRONG").any()
    from simulator.kernels.allreduce import trtllm_cluster_size, trtllm_oneshot_token_steps
    # allreduce_fusion_kernel_launcher on 132 SMs: 4096 x 256 -> 512-thread CTAs, 132 clusters of 1, 2 tokens each;
    # 8192 x 128 -> 128 clusters of one 1024-thread CTA, 1 token; 6144 x 10 -> clusters of 4 x 192 threads
    got = trtllm_oneshot_token_steps([256, 128, 10], [4096, 8192, 6144], 2, 132)
    assert np.array_equal(got, [1.0, 0.0, 0.0])
    assert np.array_equal(trtllm_cluster_size([256, 128, 10], [4096, 8192, 6144], 2, True, 132), [1.0, 1.0, 4.0])
