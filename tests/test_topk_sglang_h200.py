"""The H200 SGLang top-k grid's shapes and regimes (simulator/calibration/topk_sglang_h200.py)."""
import collections

import numpy as np

from simulator.calibration import topk_engines as TE
from simulator.calibration import topk_sglang_h200 as S


def test_the_new_rows_hold_four_shapes_in_each_of_grid5s_nine_regimes():
    rows = np.array([r for _, r, _ in S.NEW])
    n = np.array([x for _, _, x in S.NEW])
    counts = collections.Counter(TE.regime5(rows, n))
    assert len(counts) == 9 and set(counts.values()) == {4}
    assert len(set(S.NEW)) == len(S.NEW) and all(x > 2048 for x in n)


def test_the_frame_holds_grid5_as_transfer_rows_and_new_shapes_apart_sglang_only():
    t = S.frame()
    assert set(t["kernel"]) == {S.KERNEL}
    tr, nw = t[t["set"] == "transfer"], t[t["set"] == "new"]
    assert len(tr) == len(set(TE.GRID5)) and len(nw) == len(S.NEW)
    keys = {(d, r, n) for d, r, n in zip(tr["dist"], tr["rows"], tr["n"])}
    assert not keys & {(d, r, n) for d, r, n in zip(nw["dist"], nw["rows"], nw["n"])}
    assert set(nw["dist"]) == {"recorded", "gaussian", "uniform"}


def test_one_1024_thread_cta_a_row_gives_the_waves():
    assert list(S.wave_count([1, 132, 133, 4096])) == [1.0, 1.0, 2.0, 32.0]


def test_the_second_grid_holds_four_new_shapes_in_each_regime_none_from_the_first():
    rows = np.array([r for _, r, _ in S.NEW2])
    n = np.array([x for _, _, x in S.NEW2])
    counts = collections.Counter(TE.regime5(rows, n))
    assert len(counts) == 9 and set(counts.values()) == {4}
    assert not set(S.NEW2) & (set(S.NEW) | set(TE.GRID5) | set(S.FIT_SHAPES))


def test_the_h200s_own_fit_reproduces_the_h100s_procedure():
    x = S.fit_h200()
    assert x is not None and x["fit_rows"] == 10 and x["fixed_from"] == "fixed_us.topk_cta"
    assert 0.3 < x["iter_us"] < 0.8 and 0.1 < x["iter_l2_us"] < x["iter_us"]


def test_the_causal_grid_prices_the_rows_of_more_than_k_keys_at_their_mean_length():
    from hwmodels.spec import load_hardware

    assert all(r == n and n <= 32768 for _, r, n in S.CAUSAL)
    t = S.predict_causal(load_hardware("H200"))
    assert list(t["priced_rows"]) == [n - 2048 for _, _, n in S.CAUSAL]
    assert list(t["priced_n"]) == [round((n + 2049) / 2) for _, _, n in S.CAUSAL]
    assert set(t["regime"]) == {"causal prompt, P <= 8K", "causal prompt, P > 8K"}
    assert bool((t["pred_us"] > 0).all())


def test_the_flashinfer_causal_grid_prices_the_rule_on_the_ragged_transform():
    from hwmodels.spec import load_hardware
    from simulator.calibration import topk_flashinfer_causal_h200 as C

    assert all(r == n and n <= 32768 for _, r, n in C.CAUSAL)
    assert not {n for *_, n in C.CAUSAL} & {n for *_, n in S.CAUSAL}
    t = C.predict(load_hardware("H200"))
    assert list(t["priced_rows"]) == [n - 2048 for _, _, n in C.CAUSAL]
    assert set(t["regime"]) == {"causal prompt, P <= 8K", "causal prompt, P > 8K"} and bool((t["pred_us"] > 0).all())
