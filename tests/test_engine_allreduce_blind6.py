"""The engines' all-reduce blind grid (simulator/calibration/engine_allreduce_grid6.py BLIND6_*): the same shapes as the lab
script measures, none of them in a committed campaign, and the per-kernel structure the new model prices."""
import ast
import csv
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from hwmodels import datafiles as DF
from simulator.calibration import engine_allreduce as E
from simulator.calibration import engine_allreduce_grid6 as G6

ROOT = Path(__file__).resolve().parents[1]


def test_blind6_shapes_match_the_measurement_script_and_are_new():
    src = (ROOT / "lab" / "kernels" / "measure_engine_allreduce.py").read_text()
    names = ("BLIND6_TOKENS", "BLIND6_HIDDENS", "BLIND6_EXTRA")
    vals = {t.id: ast.literal_eval(n.value) for n in ast.parse(src).body if isinstance(n, ast.Assign)
            for t in n.targets if isinstance(t, ast.Name) and t.id in names}
    assert (vals["BLIND6_TOKENS"], vals["BLIND6_HIDDENS"], vals["BLIND6_EXTRA"]) == \
        (G6.BLIND6_TOKENS, G6.BLIND6_HIDDENS, G6.BLIND6_EXTRA)
    seen_t, seen_h = set(), set()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lab" / "kernels"))
    from data_order import committed_before  # the CSVs committed before this grid (data_order.txt)
    for f in committed_before("engine_allreduce_blind6_", DF.glob(E.DATA_DIR, "engine_allreduce_*.csv")):
        for r in csv.DictReader(DF.open_text(f)):
            seen_t.add(int(r["tokens"]))
            seen_h.add(int(r["hidden"]))
    g = G6.blind6_grid()
    assert not seen_t & set(g["tokens"]) and not seen_h & set(g["hidden"])
    assert set(g["world"]) == {2, 4} and set(g["impl"]) == set(E.IMPL_KIND)
    assert (g[g["impl"].str.endswith("twoshot") & g["impl"].str.startswith("trtllm")]["tokens"]
            > g[g["impl"].str.endswith("twoshot") & g["impl"].str.startswith("trtllm")]["world"]).all()


def test_committed_blind6_prediction_covers_the_grid():
    pred = pd.read_csv(DF.resolve(E.DATA_DIR / G6.BLIND6_PRED_CSV))
    key = ["impl", "world", "tokens", "hidden"]
    assert sorted(map(tuple, pred[key].to_numpy().tolist())) == \
        sorted(map(tuple, G6.blind6_grid()[key].to_numpy().tolist()))
    assert (pred["pred_main_us"] > 0).all() and (pred["pred_new_us"] > 0).all()


def test_lamport_oneshot_prices_no_flag_barrier_and_the_norm_counts_per_kernel():
    from hwmodels.spec import load_hardware
    hw = load_hardware("H100-SXM")
    e = hw.efficiency.engine_ar
    df = pd.DataFrame([{"impl": i, "world": 2, "tokens": 4, "hidden": 4096, "bytes": 4 * 4096 * 2}
                       for i in ("vllm_oneshot", "trtllm_ar_oneshot", "trtllm_arnorm_oneshot", "trtllm_ar_twoshot",
                                 "trtllm_arnorm_twoshot")])
    us = dict(zip(df["impl"], E.predict_with(df, hw, {})))   # the structure before grid 13's rules
    # same bytes over the same links: vLLM's one-shot differs from the Lamport one-shot by its two flag barriers
    assert np.isclose(us["vllm_oneshot"] - us["trtllm_ar_oneshot"], 2e6 * e["barrier_s"], atol=1e-3)
    epi = 2 * 4 * 4096 * 2 / (hw.hbm_bw_bytes_s * hw.efficiency.memory["elementwise"]) * 1e6
    assert np.isclose(us["trtllm_arnorm_oneshot"] - us["trtllm_ar_oneshot"], 1e6 * e["norm_s"] + epi, atol=1e-3)
    assert np.isclose(us["trtllm_arnorm_twoshot"] - us["trtllm_ar_twoshot"], 2e6 * e["norm_s"] + epi, atol=1e-3)

