"""FlashInfer's own Hopper prefill kernel (simulator/kernels/fi_sm90.py) and the engines' FlashInfer prefill calls
(simulator/kernels/families.py fi_prefill_launches)."""
from __future__ import annotations

import heapq

import numpy as np
import pandas as pd
import pytest

from simulator.calibration import fi_sm90_prefill as S
from simulator.kernels import families as FAM
from simulator.kernels import fi_sm90 as K
from simulator.kernels.families import fi_prefill_launches


def test_tiles_are_the_sources():
    """getCTATileSize and the paged dispatch of hopper/prefill_sm90.cuh @ FI_COMMIT."""
    cq, ck = K.sm90_tile([128, 128, 64, 256, 192], [128, 128, 64, 256, 128], causal=[True, False, True, True, True])
    assert cq.tolist() == [128, 128, 192, 128, 128] and ck.tolist() == [128, 192, 128, 64, 128]
    cq, ck = K.sm90_tile([128, 64, 256], [128, 64, 256], paged=True)
    assert cq.tolist() == [128, 192, 128] and ck.tolist() == [96, 96, 32]
    assert np.isnan(K.sm90_tile(192, 128, paged=True)[0])      # no paged 192 / 128 kernel
    with pytest.raises(ValueError, match="no kernel"):
        K.fi_sm90_prefill(1, 512, 512, 16, 16, 192, 128, 132, paged=True)


def _heap_plan(B, P, O, heads, cq, ck, m, bw, ew):
    """PrefillSM90Plan written out with heapq: items (head, request, tile last to first) to the CTA of least plan
    cost, ties to the lowest index; each CTA's time its items' key tiles x bw + ew. Returns (busiest, its items, mean)."""
    nt = int(np.ceil(P / cq))
    heap = [(0.0, c) for c in range(m)]
    R, N = np.zeros(m), np.zeros(m)
    for _h in range(heads):
        for _r in range(B):
            for j in range(nt - 1, -1, -1):
                cost, c = heapq.heappop(heap)
                end = O + P if j == nt - 1 else O + (j + 1) * cq
                heapq.heappush(heap, (cost + 2 * cq + end, c))
                R[c] += np.ceil(end / ck) * bw + ew
                N[c] += 1
    top = int(np.argmax(R))
    return R[top], N[top], R.mean()


@pytest.mark.parametrize("B,P,O,heads", [(1, 1024, 0, 32), (3, 640, 0, 28), (2, 2048, 512, 8), (16, 256, 0, 40),
                                         (1, 4096, 3072, 16)])
def test_the_emulation_is_the_plans_heap(B, P, O, heads):
    """_emulate_many one item at a time (FI_SM90_GROUP_PARTS None) reproduces the heap written out independently."""
    old = K.FI_SM90_GROUP_PARTS
    try:
        K.FI_SM90_GROUP_PARTS = None
        got = K._emulate_many(np.array([[B, P / 128, heads, O, 128, 128, 132, 1.1, 0.9]], dtype=float))[0]
    finally:
        K.FI_SM90_GROUP_PARTS = old
    span, items, mean = _heap_plan(B, P, O, heads, 128, 128, 132, 1.1, 0.9)
    assert got[0] == pytest.approx(span / mean, rel=1e-9) and got[1] == items


def test_one_item_per_sm_is_the_longest_item_and_waits_for_its_first_tiles():
    """At most one item per SM the busiest CTA walks the longest item (the last tile, all T keys) and the launch
    declares the first Q / K / V tiles of each working CTA (FI_SM90_LONE_TILE); with more items it declares none."""
    ls, info = K.fi_sm90_prefill(np.array([1.0, 8.0]), np.array([256.0, 4096.0]), np.array([256.0, 4096.0]), 32.0,
                                 8.0, 128.0, 128.0, 132)
    assert info["items_busiest"][0] == 1.0 and info["items_busiest"][1] > 1.0
    lt = np.asarray(ls[0].lone_tile_bytes)
    assert lt[0] == 2.0 * (128 * 128 + 128 * 256) and lt[1] == 0.0
    assert np.asarray(ls[0].ctas)[0] == 32.0 * 2    # 32 heads x 2 query tiles: the other SMs' CTAs exit at once


def test_the_price_is_continuous_in_the_prefix():
    """The cached prefix is counted continuously (the engine interpolates its chunk surface in it): one more token of
    prefix moves the chain by about one token's share of a key tile, with no step at the key tiles' multiples."""
    O = np.arange(4000.0, 4400.0)
    _, info = K.fi_sm90_prefill(1.0, 1024.0, 1024.0 + O, 32.0, 8.0, 128.0, 128.0, 132)
    d = np.diff(info["span_blocks"])
    assert np.all(d > 0) and d.max() < 5 * np.median(d)


def test_engine_calls():
    """vLLM's paged call: the sm_90 kernel at bf16, FlashInfer's FA2 kernel at fp8 K/V and off Hopper; SGLang's ragged
    call: the sm_90 kernel for the new tokens, FA2 and a merge only where a prefix is cached."""
    args = (np.array([1.0, 1.0]), np.array([1024.0, 1024.0]), np.array([1024.0, 5120.0]), 32.0, 8.0, 128.0)
    kinds = lambda ls: {x.kind for x in ls}   # noqa: E731
    assert kinds(fi_prefill_launches("paged", *args, 2.0, 16.0, 132)) == {"attn_fa3_persist"}
    assert "attn_fa3_persist" not in kinds(fi_prefill_launches("paged", *args, 1.0, 16.0, 132))
    assert "attn_fa3_persist" not in kinds(fi_prefill_launches("paged", *args, 2.0, 16.0, 148,
                                                               architecture="blackwell"))
    assert "attn_fa3_persist" not in kinds(fi_prefill_launches("fa2", *args, 2.0, 16.0, 132))
    rag = fi_prefill_launches("ragged", *args, 1.0, 1.0, 132)
    assert {"attn_fa3_persist", "elementwise"} <= kinds(rag)
    merge = [x for x in rag if x.kind == "elementwise"][0]
    assert np.asarray(merge.where).tolist() == [False, True]
    with pytest.raises(ValueError, match="flashinfer_prefill"):
        fi_prefill_launches("auto", *args, 2.0, 16.0, 132)


def test_committed_grids_are_whole_and_checked():
    """Both grids: every committed shape timed on the H200, none failed, the reference check (where run) within bf16
    rounding; grid 2 shares no shape with grid 1."""
    for g, n in ((1, 73), (2, 104)):
        m = S.measured(g)
        assert len(m) == n and np.isfinite(m["median_us"]).all() and set(m["device"]) == {"NVIDIA H200"}
        err = m["note"].astype(str).str.extract(r"rel_err=([0-9.e+-]+)")[0].dropna().astype(float)
        assert len(err) >= 30 and (err < 5e-3).all()
    k = ["family", "heads", "kv_heads", "batch", "q_rows", "prefix"]
    assert len(S.measured(1)[k].merge(S.measured(2)[k])) == 0


def test_the_shipped_model_on_the_blind_grid():
    """The shipped model (the engine's form of candidate A) on blind grid 2: the goal in every regime, within a few
    points of the prices committed before the call."""
    b = S.measured(2)
    now = S.now_us(b)
    err = now / b["median_us"].to_numpy() - 1.0
    for _, g in pd.DataFrame({"regime": b["regime"], "e": np.abs(err)}).groupby("regime"):
        assert g["e"].median() <= 0.10 and g["e"].quantile(0.9) <= 0.25
    assert np.median(np.abs(now / b["pred_candA_us"].to_numpy() - 1.0)) < 0.01


def test_sglang_extend_grid_is_whole_and_the_product_prices_it_as_committed():
    """SGLang's extend with a cached prefix: every committed row timed on the H200, and the product's composition
    (fi_prefill_launches 'ragged') still prices the 'extend' rows as committed before the call."""
    from hwmodels.spec import load_hardware
    from simulator.calibration import fit_production_attention as FP
    from simulator.kernels.production import emit
    from simulator.ops import OpBuilder

    b = S.sglang_extend()
    assert len(b) == 76 and np.isfinite(b["median_us"]).all()
    e = b[b["part"] == "extend"].reset_index(drop=True)
    hw = load_hardware("H200")
    a = {c: e[c].to_numpy(float) for c in ("batch", "q_rows", "context", "heads", "kv_heads")}
    def priced(interpolated):
        old = FAM.FA2_PREFIX_INTERPOLATED
        FAM.FA2_PREFIX_INTERPOLATED = interpolated
        try:
            ob = OpBuilder(len(e))
            emit(ob, fi_prefill_launches("ragged", a["batch"], a["q_rows"], a["context"], a["heads"], a["kv_heads"],
                                         128.0, np.where(e["dtype"] == "fp8", 1.0, 2.0), 1.0, hw.units), hw.units)
            return FP.predict_us(ob.build(), hw, hw.efficiency, len(e))
        finally:
            FAM.FA2_PREFIX_INTERPOLATED = old

    # the exact plan at each row's prefix is what was committed; the engine's prefix interpolation (the product's form
    # since 2026-11-28) stays within 2 % of it on these rows (measured: median 0.05 %, max 1.7 %)
    assert np.allclose(priced(False), e["pred_us"].to_numpy(), rtol=1e-3)
    assert np.allclose(priced(True), e["pred_us"].to_numpy(), rtol=0.02)


def test_a_flashinfer_family_label_names_its_prefill_call():
    """A summary names the FlashInfer prefill call a run priced, the default included; other kernels' labels unchanged."""
    from simulator.strategies.dense import DenseAttention

    assert DenseAttention(kernel="flashinfer").label() == "dense(kernel=flashinfer,flashinfer_prefill=paged)"
    assert DenseAttention(kernel="fi_tc", flashinfer_prefill="ragged").label() == \
        "dense(kernel=fi_tc,flashinfer_prefill=ragged)"
    assert DenseAttention(kernel="fa3").label() == "dense(kernel=fa3)"
    assert DenseAttention().label() == "dense"
