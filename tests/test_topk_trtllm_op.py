"""TensorRT-LLM's torch-op dispatch (simulator/kernels/topk_trtllm.py torch_op) and its grid's shapes."""
import numpy as np

from simulator.calibration import topk_trtllm_op as O
from simulator.kernels import topk_trtllm as TK
from simulator.ops import OpBuilder


def test_the_op_splits_at_200k_for_every_row_count_in_ten_512_thread_slices():
    rows = np.array([1, 4, 8, 20, 64, 130, 300])
    with TK.torch_op():
        assert np.all(TK.blocks_per_row(rows, 199_999) == 1)
        assert np.all(TK.blocks_per_row(rows, 200_000) == TK.OP_BLOCKS)
        assert np.all(TK.block_threads(rows, 900_000) == TK.THREADS)
    # the kernel's own tiers: rows <= 8 split from 65,536, rows >= 128 never, fused slices of >= 30K at 1024 threads
    assert TK.blocks_per_row(1, 70_000) > 1 and TK.blocks_per_row(300, 900_000) == 1
    assert TK.block_threads(4, 900_000) == TK.WIDE


def test_the_logits_width_decides_the_split_and_the_narrow_block_not_the_live_length():
    with TK.torch_op(163_840):           # a padded buffer below the threshold: one CTA a row even for long rows
        assert TK.blocks_per_row(2, 150_000) == 1
    with TK.torch_op(262_144):           # a padded buffer above it: the two-launch split even for short live rows
        assert TK.blocks_per_row(2, 20_000) == TK.OP_BLOCKS
    with TK.torch_op(163_840):           # 600 rows of 8K live scores in a 163,840-wide buffer: no narrow block
        assert TK.block_threads(600, 8_000) == TK.THREADS
    assert TK.block_threads(600, 8_000) == TK.NARROW


def _ops(rows, n, op):
    b = OpBuilder(1)
    if op:
        with TK.torch_op():
            TK.add_priced_ops(b, rows, n, 2048.0, 132.0)
    else:
        TK.add_priced_ops(b, rows, n, 2048.0, 132.0)
    return b.build()


def test_the_two_launch_split_adds_its_merge_launch_and_the_single_tier_does_not():
    assert len(_ops(8, 300_000, True).kind) == 2
    assert len(_ops(8, 150_000, True).kind) == 1          # the op's single-CTA tier
    assert len(_ops(8, 300_000, False).kind) == 1         # the kernel's fused split: merge inside the launch


def test_the_grid_holds_each_shape_for_both_dispatches_in_its_declared_regime():
    t = O.frame()
    assert len(t) == 2 * len(O.SHAPES) and set(t["kernel"]) == {"trt_topk_op", "trt_topk"}
    reg = O.op_regime(np.array([r for _, r, _ in O.SINGLE_FEW]), np.array([n for _, _, n in O.SINGLE_FEW]))
    assert set(reg) == {"single CTA where the kernel splits, 1-8 rows"}
    reg = O.op_regime(np.array([r for _, r, _ in O.SPLIT_MANY]), np.array([n for _, _, n in O.SPLIT_MANY]))
    assert set(reg) == {"two-launch split, >= 128 rows"}
    assert np.all(TK.blocks_per_row(np.array([r for _, r, _ in O.SINGLE_FEW]),
                                    np.array([n for _, _, n in O.SINGLE_FEW])) > 1)


def test_the_lone_round_touches_only_lone_512_thread_ctas_whose_rows_stay_in_the_l2():
    from simulator.calibration import topk_trtllm_lone as L

    t = L.TE._trtllm_frame([("recorded", 4, 120000), ("recorded", 300, 40000), ("recorded", 110, 190000)])
    t["kernel"] = "trt_topk_op"
    t["device"] = "H200"
    a, b = L.price(t, 1.0), L.price(t, 1.3)
    assert b[0] > 1.15 * a[0]                    # lone, 1.9 MB: its sweep rounds at the dearer L2 round
    assert b[1] == a[1]                          # 300 rows: more than one CTA per SM
    assert b[2] < 1.05 * a[2]                    # lone but 84 MB: its rounds come from HBM
    assert set(L.blind_regime([r for _, r, _ in L.BLIND], [n for _, _, n in L.BLIND])) == {
        "lone single CTAs, rows <= 24K", "lone single CTAs, rows 24K-64K", "lone single CTAs, rows 64K-200K",
        "lone two-launch part 1 (1-13 rows >= 200K)", "controls: > 1 CTA per SM, or a set beyond the L2"}


def _product_iters(dispatch, width=None, rows=(4.0,), n=(120000.0,)):
    from dataclasses import replace

    from simulator.strategies.base import parse_axis
    from tests.conftest import make_combo

    c = replace(make_combo(hw="H200", model="DeepSeek-V3.2-Exp", tp=8, attention="dsa", kv_dtype="fp8"),
                topk=parse_axis("topk", [{"radix": {"kernel": "trtllm", "trtllm_dispatch": dispatch,
                                                    "logits_width": width}}])[0])
    b = OpBuilder(len(rows))
    c.topk.add_ops(b, c, np.array(rows), np.array(n), 2048, 1.0, "decode")
    return b.build()


def test_the_product_prices_the_engines_launch_unless_asked_for_the_kernels():
    eng, ker = _product_iters("engine"), _product_iters("kernel")
    assert len(eng.kind) == 1 and eng.parallel_units[0] == 4.0          # one 512-thread CTA a row
    assert ker.parallel_units[0] > 4.0                                   # the fused split's slices
    wide = _product_iters("engine", 262144)                              # a 256K-wide logits buffer: two launches
    assert len(wide.kind) == 2
    import pytest

    from hwmodels.errors import ScenarioError
    with pytest.raises(ScenarioError):
        _product_iters("fused")


def test_the_merge_launch_keeps_one_1024_thread_cta_per_sm_and_the_second_grid_spans_its_regimes():
    b = OpBuilder(1)
    TK.add_merge_launch(b, 140.0, 10.0, 2048.0, 4.0, 40.0)
    ops = b.build()
    # 140 CTAs of 1024 threads (2 units each), one per SM: two waves of 132 SMs, not four
    assert ops.parallel_units[0] / (132 * ops.resident_ctas[0]) == __import__("pytest").approx(140 / 132)
    reg = O.split_regime(np.array([r for _, r, _ in O.SPLIT_BLIND]), np.array([n for _, _, n in O.SPLIT_BLIND]))
    assert {"two-launch split, part 1 at 2-3 CTAs per SM", "two-launch split, part 1 at 4-8 CTAs per SM",
            "two-launch split, part 1 at >= 9 CTAs per SM"} == set(reg)
    assert not set(O.SPLIT_BLIND) & set(O.SHAPES)


def test_the_lead_share_leaves_the_fused_path_and_two_ctas_per_sm_alone():
    import pytest

    from hwmodels.spec import load_hardware
    from simulator.calibration import topk_engines as TE

    t = TE._trtllm_frame([("recorded", 20, 300000), ("recorded", 200, 240000)])
    ops = t.copy()
    ops["kernel"] = "trt_topk_op"
    hw = load_hardware("H200")
    old = TK.TWO_LAUNCH_LEAD_SHARE
    try:
        TK.TWO_LAUNCH_LEAD_SHARE = None
        a_op, a_k = TE.predict_trtllm(ops, hw), TE.predict_trtllm(t, hw)
        TK.TWO_LAUNCH_LEAD_SHARE = 0.75
        b_op, b_k = TE.predict_trtllm(ops, hw), TE.predict_trtllm(t, hw)
    finally:
        TK.TWO_LAUNCH_LEAD_SHARE = old
    assert b_op[0] == pytest.approx(a_op[0])          # 200 CTAs: two per SM, one pair group
    assert b_op[1] < 0.95 * a_op[1]                   # 2,400 CTAs: 19 per SM, ten pair groups
    assert np.allclose(a_k, b_k)                      # the kernel's own dispatch (fused split, single CTAs)
    reg = set(O.lead_regime(np.array([r for _, r, _ in O.LEAD_BLIND]), np.array([n for _, _, n in O.LEAD_BLIND])))
    assert reg == {"controls: part 1 at <= 2 CTAs per SM", "two-launch split, part 1 at 3-8 CTAs per SM",
                   "two-launch split, part 1 at >= 9 CTAs per SM"}


def test_tensorrt_llm_only_parameters_are_refused_where_they_would_be_ignored():
    import pytest

    from hwmodels.errors import ScenarioError
    from simulator.strategies.base import parse_axis

    for bad in ({"kernel": "sglang", "trtllm_dispatch": "engine"}, {"kernel": "ours", "logits_width": 163840},
                {"kernel": "trtllm", "trtllm_dispatch": "kernel", "logits_width": 163840}):
        with pytest.raises(ScenarioError):
            parse_axis("topk", [{"radix": bad}])
    assert parse_axis("topk", [{"radix": {"kernel": "trtllm", "logits_width": 163840}}])


def test_a_padded_buffer_prices_the_op_by_its_width_and_the_rows_by_their_live_scores():
    from hwmodels.spec import load_hardware

    t = O.predict_width(load_hardware("H200"))
    two = t["regime"] == "two-launch split over live rows < 200K (a 262,144-wide buffer)"
    assert two.sum() == 7 and (t.loc[two, "pred_us"] != t.loc[two, "pred_unpadded_us"]).all()
    assert (t.loc[~two, "pred_us"] == t.loc[~two, "pred_unpadded_us"]).all()   # below 200K wide, or live >= 200K
