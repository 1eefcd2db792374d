"""The FlashMLA sparse decode grid's shapes and the product's price it is judged against
(simulator/calibration/flashmla_sparse_h200.py)."""
import collections

import numpy as np

from hwmodels.spec import load_hardware
from simulator.calibration import flashmla_sparse_h200 as S


def test_the_kernel_runs_64_or_128_heads_padding_fewer():
    assert [S.kernel_heads(tp) for tp in (1, 2, 4, 8)] == [128, 64, 64, 64]


def test_the_grid_holds_every_regime_at_least_eight_times():
    t = S.frame()
    counts = collections.Counter(t["regime"])
    assert len(counts) == 6 and min(counts.values()) >= 8
    assert set(t["s_q"]) == {1, 2} and set(t["topk"]) == {2048}


def test_the_products_price_grows_with_batch_and_heads_and_ignores_context_past_k():
    hw = load_hardware("H200")
    a, b = S.product_us(hw, 8, 1, 1, 65536), S.product_us(hw, 8, 32, 1, 65536)
    c = S.product_us(hw, 1, 32, 1, 65536)
    assert 0 < a < b < c
    assert np.isclose(S.product_us(hw, 8, 4, 1, 8192), S.product_us(hw, 8, 4, 1, 65536))


def test_padding_the_heads_to_64_prices_tp8_as_tp2_and_leaves_64_and_128_alone():
    from simulator.strategies.dsa import PAD_HEADS_CANDIDATE, decode_heads

    assert list(decode_heads(np.array([16.0, 32.0, 64.0, 128.0]), PAD_HEADS_CANDIDATE)) == [64, 64, 64, 128]
    assert decode_heads(16, 0) == 16
    hw = load_hardware("H200")
    assert np.isclose(S.product_us(hw, 8, 16, 1, 65536, pad_heads=64), S.product_us(hw, 2, 16, 1, 65536, pad_heads=64))
    assert S.product_us(hw, 8, 16, 1, 65536, pad_heads=0) < S.product_us(hw, 8, 16, 1, 65536, pad_heads=64)
    assert np.isclose(S.product_us(hw, 1, 16, 1, 65536, pad_heads=0), S.product_us(hw, 1, 16, 1, 65536, pad_heads=64))


def test_the_second_grid_is_new_and_holds_its_four_regimes():
    g1 = {(tp, b, sq, n) for tp, b, sq, n in S.SHAPES}
    assert not g1 & set(S.SHAPES2)
    counts = collections.Counter(S.regime2([s[0] for s in S.SHAPES2], [s[1] for s in S.SHAPES2]))
    assert len(counts) == 4 and counts["heads padded to 64 (TP4 / TP8), batch >= 24"] >= 8


def test_the_scheduler_replica_matches_the_sources_worked_examples():
    from simulator.kernels import flashmla_sparse as K

    got = {(b, h): K.busiest_part(b, 2048, int(K.parts(h, 1, 132))) for b, h in
           ((1, 64), (8, 64), (32, 64), (32, 128), (132, 64), (128, 128))}
    assert got == {(1, 64): (1, 1, 32), (8, 64): (3, 1, 11), (32, 64): (9, 1, 4), (32, 128): (18, 1, 2),
                   (132, 64): (32, 1, 1), (128, 128): (64, 2, 1)}
    assert list(K.payload([1, 32, 128], 1, [64, 64, 128], 2048, 132)) == [6, 14, 77]


def test_the_third_grid_is_new():
    old = {(tp, b, sq, n) for tp, b, sq, n in S.SHAPES + S.SHAPES2}
    assert not old & set(S.SHAPES3) and len(set(S.SHAPES3)) == len(S.SHAPES3)
    assert len(collections.Counter(S.regime2([s[0] for s in S.SHAPES3], [s[1] for s in S.SHAPES3]))) == 4


def test_the_flashmla_kernel_is_refused_where_no_device_fit_stands_behind_it():
    from dataclasses import replace

    from simulator.combo import combo_refusal, make_combo
    from simulator.strategies.base import parse_axis

    c = make_combo("H200", "DeepSeek-V3.2-Exp", kv_dtype="fp8", tp=8, attention="dense")
    c = replace(c, attention=parse_axis("attention", ["dsa"])[0], topk=parse_axis("topk", ["radix"])[0])
    assert combo_refusal(c) is None
    bare = c.hardware.with_efficiency(replace(c.hardware.efficiency, cta_slots={}))
    r = combo_refusal(replace(c, hardware=bare))
    assert r is not None and "sparse_kernel" in r and "generic" in r
    gen = replace(c, hardware=bare, attention=parse_axis("attention", [{"dsa": {"sparse_kernel": "generic"}}])[0])
    assert combo_refusal(gen) is None


def test_the_flashmla_prefill_walks_every_rows_k_tiles_at_padded_heads():
    hw = load_hardware("H200")
    a = S.product_prefill_us(hw, 8, 4096, "flashmla")
    assert np.isclose(a, S.product_prefill_us(hw, 2, 4096, "flashmla"))   # 16 heads padded: TP2's 64
    assert S.product_prefill_us(hw, 1, 4096, "flashmla") > 1.5 * a
    old = {p for _, p in S.PREFILL_SHAPES}
    assert not old & {p for _, p in S.PREFILL_SHAPES2}


def test_the_fourth_grid_runs_batch_and_query_rows_no_earlier_campaign_ran():
    import pandas as pd

    from simulator.calibration import fit_production_topk_gemm as F

    old = set()
    for f in (S.PREDICTION, S.PREDICTION2, S.PREDICTION3, S.SPANS_PREDICTION):
        d = pd.read_csv(F.DATA_DIR / f)
        old |= set(zip(d["heads"], d["batch"], d["s_q"]))
    new = [(S.kernel_heads(tp), b, sq) for tp, b, sq, _ in S.SHAPES4]
    assert len(set(new)) == len(new) and not old & set(new)
    assert len(collections.Counter(S.regime2([s[0] for s in S.SHAPES4], [s[1] for s in S.SHAPES4]))) == 4


def test_the_combine_chain_grows_with_the_splits_and_is_absent_where_no_request_splits():
    from simulator.kernels import flashmla_sparse as K

    hw = load_hardware("H200")
    old = K.COMBINE_CHAIN
    K.COMBINE_CHAIN = True
    try:
        one, four = S.product_parts_us(hw, 8, 1, 1, 32768), S.product_parts_us(hw, 8, 4, 1, 32768)
        whole = S.product_parts_us(hw, 8, 128, 1, 32768)   # 132 parts, 128 requests of 32 tiles: none splits
    finally:
        K.COMBINE_CHAIN = old
    # 32 splits a request at batch 1, 16 at batch 4: ceil(S / 4) chained steps of the combine's warps
    assert one["attention_combine"] > 1.5 * four["attention_combine"] > 0
    assert "attention_combine" not in whole
    assert one["attention"] < four["attention"] < whole["attention"]


def test_the_spans_campaign_prices_both_ops_of_every_shape():
    t = S.predict_spans(load_hardware("H200"))
    assert len(t) == len(dict.fromkeys(S.SPANS_SHAPES))
    assert np.allclose(t["pred_us"], t["pred_attention_us"] + t["pred_combine_us"])
    assert (t.loc[t["batch"] <= 3, "pred_combine_us"] > 0).all()


def test_the_shipped_model_reproduces_grid_4s_committed_prices():
    """The STANDING grid's candidate prices are the shipped product's (the harness's rows priced with row_overlap 0)."""
    import pandas as pd

    from simulator.calibration import fit_production_topk_gemm as F

    hw = load_hardware("H200")
    p = pd.read_csv(F.DATA_DIR / S.PREDICTION4).iloc[::4]
    now = np.array([S.product_us(hw, r.tp, r.batch, r.s_q, r.context) for r in p.itertuples()])
    assert np.allclose(now, p["pred_us"].to_numpy(), rtol=1e-4)
    assert (p["s_q"] > 1).any()
