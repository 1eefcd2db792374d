"""Per-row decode pricing of mixed batches: ops whose launch lasts as long as the longest row
(decode_longest_row_ops) against the exact price of the batch (StepCostModel.exact_decode_rows_s)."""
import numpy as np
import pytest

from simulator.combo import make_combo
from simulator.engine.step_cost import StepCostModel

CASES = {
    "dsa_radix": ("B200", "DeepSeek-V3.2-Exp",
                  {"attention": "dsa", "topk": {"radix": {"kernel": "trtllm_b200"}}, "tp": 8, "ep": 8, "kv_dtype": "fp8"}),
    "dsa_gvr": ("B200", "DeepSeek-V3.2-Exp", {"attention": "dsa", "topk": "gvr", "tp": 8, "ep": 8, "kv_dtype": "fp8"}),
    "lserve": ("A100-80GB", "Llama-3-8B-Gradient-1048k", {"attention": "lserve"}),
}
#: per-row pricing against the exact price of a mixed batch (benchmarks/per_row_error.py prints the errors: within
#: 3.4 % on these cases; before the longest-row ops it was -39 % to -71 %)
TOL = 0.05


@pytest.fixture(scope="module", params=sorted(CASES))
def model(request):
    hw, mdl, kw = CASES[request.param]
    return StepCostModel(make_combo(hw, mdl, **kw), 256, 32, max_context=132000)


def test_declares_longest_row_ops(model):
    assert model.per_row and model.long_names


def test_one_long_row_among_short_ones(model):
    ctx = np.array([131072.0] + [1024.0] * 7)
    exact = model.exact_decode_rows_s(8, ctx)
    assert model.row_mean_s(8, ctx) == pytest.approx(exact, rel=TOL)
    # the mean over the rows alone misses the long row's chain by far
    plain = float(model.dec.along(8, ctx).sum()) / 8
    assert plain < exact * (1 - 3 * TOL)


def test_uniform_batch_unchanged(model):
    ctx = np.full(32, 8192.0)
    assert model.row_mean_s(32, ctx) == pytest.approx(float(model.dec.along(32, ctx[:1])[0]), rel=1e-12)
    assert model.exact_decode_rows_s(32, ctx) == pytest.approx(model.exact_decode_rows_s(32, ctx, kind_rules=False),
                                                                rel=1e-12)


def test_run_path_matches_step_path(model):
    rng = np.random.default_rng(1)
    rows = np.exp(rng.uniform(np.log(1024), np.log(100000), (3, 8))).round()
    run = model._rows_run_s(model.dec, 8, rows, 0)
    assert run == pytest.approx([model.row_mean_s(8, r) for r in rows], rel=1e-12)
