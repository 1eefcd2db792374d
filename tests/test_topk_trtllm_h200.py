"""The H200 TensorRT-LLM top-k grid's shapes and regimes (simulator/calibration/topk_trtllm_h200.py)."""
import numpy as np

from simulator.calibration import topk_engines as TE
from simulator.calibration import topk_trtllm_h200 as H
from simulator.kernels import topk_trtllm as TK


def test_every_new_shape_lands_in_the_regime_it_was_chosen_for():
    groups = {"split decode, 1-8 rows": H.NEW_SPLIT_FEW, "split decode, 9-127 rows": H.NEW_SPLIT_MANY,
              "single CTA, <= 16 rows": H.NEW_FEW_ROWS, "single 512-thread CTAs, mid rows 12K-64K": H.NEW_SINGLE_MID,
              "single 512-thread CTAs, long rows > 64K": H.NEW_SINGLE_LONG, "narrow 256-thread CTAs": H.NEW_NARROW}
    for label, shapes in groups.items():
        rows = np.array([r for _, r, _ in shapes])
        n = np.array([x for _, _, x in shapes])
        assert set(H.regime(["trt_topk"] * len(rows), rows, n)) == {label}
    rows = np.array([r for _, r, _ in H.NEW_PREFILL])
    n = np.array([x for _, _, x in H.NEW_PREFILL])
    assert set(H.regime([TE.CSV_KERNEL["trtllm_prefill"]] * len(rows), rows, n)) == \
        {"prefill entry (one 512-thread CTA a row)"}


def test_the_split_regimes_really_split_and_the_others_do_not():
    for shapes, split in ((H.NEW_SPLIT_FEW + H.NEW_SPLIT_MANY, True), (H.NEW_FEW_ROWS + H.NEW_SINGLE_MID
                                                                        + H.NEW_SINGLE_LONG + H.NEW_NARROW, False)):
        nb = TK.blocks_per_row(np.array([r for _, r, _ in shapes]), np.array([x for _, _, x in shapes]))
        assert bool(np.all(nb > 1)) is split and bool(np.all(nb == 1)) is not split


def test_the_frame_holds_grid22_as_transfer_rows_and_new_shapes_apart():
    t = H.frame()
    tr, nw = t[t["set"] == "transfer"], t[t["set"] == "new"]
    assert len(tr) == len(TE.grid22_frame()) and len(nw) == len(H.NEW_DECODE) + len(H.NEW_PREFILL)
    keys = {(d, r, n) for d, r, n in zip(tr["dist"], tr["rows"], tr["n"])}
    assert not keys & {(d, r, n) for d, r, n in zip(nw["dist"], nw["rows"], nw["n"])}
    assert set(nw["dist"]) == {"recorded", "gaussian", "uniform"}


def test_the_second_grid_holds_four_new_shapes_in_each_regime():
    import collections

    t = TE.engines_frame(H.NEW2_DECODE, H.NEW2_PREFILL)
    assert set(collections.Counter(H.regime(t["kernel"], t["rows"], t["n"])).values()) == {4}
    assert not set(H.NEW2_DECODE + H.NEW2_PREFILL) & set(H.NEW_DECODE + H.NEW_PREFILL)


def test_the_third_grid_holds_four_new_shapes_in_each_regime():
    import collections

    t = TE.engines_frame(H.NEW3_DECODE, H.NEW3_PREFILL)
    assert set(collections.Counter(H.regime(t["kernel"], t["rows"], t["n"])).values()) == {4}
    assert len(collections.Counter(H.regime(t["kernel"], t["rows"], t["n"]))) == 7
    earlier = set(H.NEW_DECODE + H.NEW_PREFILL + H.NEW2_DECODE + H.NEW2_PREFILL)
    assert not set(H.NEW3_DECODE + H.NEW3_PREFILL) & earlier
