"""hwmodels.roofline SM_STREAM_SOFT (the soft knee of mha.cu's one-wave stream between the per-SM and the HBM rate,
shipped on the sixteenth xqa blind grid with XQA_LATE_LOADS refitted jointly) and the grid's committed files."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hwmodels import roofline as RF
from hwmodels.spec import load_hardware
from simulator.calibration import fit_production_attention as FP
from simulator.kernels import xqa as XQ

KEYS = {"family": "xqa", "model": "llama8b", "dtype": "bf16", "heads": 32, "kv_heads": 8, "head_dim": 128,
        "q_rows": 1, "page_size": 16}


def _price(rows, soft, dtype="bf16"):
    hw = load_hardware("H100-SXM")
    d = pd.DataFrame([{**KEYS, "dtype": dtype, "batch": b, "context": t, "split_sms": s} for b, t, s in rows])
    keep = RF.SM_STREAM_SOFT
    try:
        RF.SM_STREAM_SOFT = RF.SM_STREAM_SOFT_CANDIDATE if soft else ()
        return FP.predict_us(FP.build_ops(d, hw.units, 233472.0), hw, hw.efficiency, len(d))
    finally:
        RF.SM_STREAM_SOFT = keep


def test_soft_knee_shipped_for_mha_cu_with_the_joint_loads():
    assert RF.SM_STREAM_SOFT_CANDIDATE == (RF.KIND_CODE["attn_xqa"],)
    # shipped for mha.cu and, with its own fitted terms, FlashMLA's sparse prefill kernel over decode rows
    assert RF.SM_STREAM_SOFT == RF.SM_STREAM_SOFT_CANDIDATE + (RF.KIND_CODE["attn_flashmla_sparse_fwd"],)
    assert RF.SM_STREAM_SOFT_P == 4.0
    assert XQ.XQA_LATE_LOADS == XQ.XQA_LATE_LOADS_SOFT == 15.86 and XQ.XQA_LATE_LOADS_HARD == 18.01


def test_soft_knee_adds_most_where_the_two_rates_meet():
    # 8 / 56 / 128 unsplit CTAs of 13 tiles: the knee (56 CTAs ~ 54.9 SMs' worth of the HBM rate) moves most
    rows = [(1, 3300, 1.0), (7, 3300, 1.0), (16, 3300, 1.0)]
    on, off = _price(rows, True), _price(rows, False)
    rel = on / off - 1.0
    assert (on >= off - 1e-12).all()
    assert rel[1] > 0.05 and rel[1] > 5 * rel[0] and rel[1] > 3 * rel[2]


def test_soft_knee_leaves_two_waves_one_tile_and_fp8_alone():
    rows = [(20, 3000, np.nan),   # 160 CTAs: two waves
            (7, 200, 1.0)]        # 56 one-tile CTAs: a burst, not a stream
    assert _price(rows, True) == pytest.approx(_price(rows, False), rel=1e-12)
    f = [(7, 3300, np.nan)]
    assert _price(f, True, "fp8") == pytest.approx(_price(f, False, "fp8"), rel=1e-12)


def test_xqa_fits_run_without_the_soft_knee():
    rows = [(7, 3300, 1.0)]
    with FP._xqa_ceiling_off():
        assert _price(rows, True) == pytest.approx(_price(rows, False), rel=1e-12)


def test_soft_knee_fit_rows_are_the_looked_at_bf16_pdl_rows():
    fit = FP.xqa_soft_fit_rows()
    assert len(fit) == 172 and set(fit["dtype"]) == {"bf16"}
    assert (pd.to_numeric(fit.get("pdl", pd.Series(1, index=fit.index)), errors="coerce").fillna(1) != 0).all()


def test_sixteenth_grid_predictions_committed():
    p = pd.read_csv(FP.DATA_DIR / FP.XQA_X16_PRED_CSV)
    assert len(p) == 38
    for c in ("pred_base_us", "pred_new_us", "pred_here_off_us", "role", "pdl", "model_commit", "base_commit",
              "new_soft_p", "new_late_loads"):
        assert c in p.columns
    assert (p["pred_here_off_us"] == p["pred_base_us"]).all()
    assert (p["new_soft_p"] == RF.SM_STREAM_SOFT_P).all() and (p["new_late_loads"] == XQ.XQA_LATE_LOADS_SOFT).all()
    assert not p.duplicated(list(FP.XQA_KEYS) + ["role"]).any()
    assert set(p["role"]) == {"knee", "middle", "q2", "control", "fp8"}


def test_sixteenth_grid_measured_and_blind_prices_are_the_shipped_models():
    b = FP.load_xqa_x16()
    assert len(b) == 38 and {"base_err_pct", "new_err_pct", "role"} <= set(b.columns)
    hw = load_hardware("H100-SXM")
    d = b.copy()
    d["split_sms"] = pd.to_numeric(d["split_sms"], errors="coerce")
    with FP.xqa_before_spec_tile():   # grid 16's prices predate grid 17's verification chain premium
        now = FP.predict_us(FP.build_ops(d, hw.units, 233472.0), hw, hw.efficiency, len(d))
    assert now == pytest.approx(b["pred_new_us"].to_numpy(float), rel=1e-3)
    with FP.xqa_before_soft():
        before = FP.predict_us(FP.build_ops(d, hw.units, 233472.0), hw, hw.efficiency, len(d))
    assert before == pytest.approx(b["pred_base_us"].to_numpy(float), rel=1e-3)
