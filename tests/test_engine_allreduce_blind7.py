"""The engines' all-reduce blind grid 7 (simulator/calibration/engine_allreduce.py BLIND7_*): the same shapes as the lab
script measures, token counts in no committed campaign, and the Lamport one-shot's push phase the new model prices."""
import ast
import csv
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simulator.calibration import engine_allreduce as E

ROOT = Path(__file__).resolve().parents[1]


def test_blind7_shapes_match_the_measurement_script_and_are_new():
    src = (ROOT / "lab" / "kernels" / "measure_engine_allreduce.py").read_text()
    vals = {t.id: ast.literal_eval(n.value) for n in ast.parse(src).body if isinstance(n, ast.Assign)
            for t in n.targets if isinstance(t, ast.Name) and t.id == "BLIND7_SHAPES"}
    assert vals["BLIND7_SHAPES"] == E.BLIND7_SHAPES
    seen = set()
    for f in E.DATA_DIR.glob("engine_allreduce_*.csv"):
        if "blind7" not in f.name:
            seen |= {int(r["tokens"]) for r in csv.DictReader(f.open())}
    g = E.blind7_grid()
    assert not seen & set(g["tokens"])
    assert set(g["world"]) == {2, 4} and set(g["impl"]) == set(E.IMPL_KIND)
    assert set(g["hidden"]) == {4096, 5120, 7168, 8192} and 120 <= len(g) <= 180


def test_committed_blind7_prediction_covers_the_grid():
    f = E.DATA_DIR / E.BLIND7_PRED_CSV
    if not f.is_file():
        pytest.skip("blind7 prediction not written yet")
    pred = pd.read_csv(f)
    key = ["impl", "world", "tokens", "hidden"]
    assert sorted(map(tuple, pred[key].to_numpy().tolist())) == \
        sorted(map(tuple, E.blind7_grid()[key].to_numpy().tolist()))
    assert (pred["pred_main_us"] > 0).all() and (pred["pred_new_us"] > 0).all()


def test_lamport_push_phase_replaces_the_pull_phase_only_in_the_lamport_kernel():
    from hwmodels.spec import load_hardware
    hw = load_hardware("H100-SXM")
    terms = {k[:-2]: v * 1e6 for k, v in hw.efficiency.engine_ar.items()}
    df = pd.DataFrame([{"impl": i, "world": 2, "tokens": 4, "hidden": 4096, "bytes": 4 * 4096 * 2}
                       for i in ("vllm_oneshot", "trtllm_ar_oneshot", "trtllm_ar_twoshot")])
    base = E.predict_us(df, hw)
    up = E.predict_us(df, E.with_engine_terms(hw, {**terms, "push": terms["push"] + 1.0}))
    assert np.allclose(up - base, [0.0, 1.0, 0.0], atol=1e-6)
