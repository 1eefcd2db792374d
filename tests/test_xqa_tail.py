"""hwmodels.roofline SM_STREAM_TAIL (mha.cu's per-SM stream ceiling wave by wave, shipped on the fifteenth xqa blind
grid) and the grid's committed files."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hwmodels import roofline as RF
from hwmodels.spec import load_hardware
from simulator.calibration import fit_production_attention as FP

KEYS = {"family": "xqa", "model": "llama8b", "dtype": "bf16", "heads": 32, "kv_heads": 8, "head_dim": 128,
        "q_rows": 1, "page_size": 16}


def _price(rows, tail):
    hw = load_hardware("H100-SXM")
    d = pd.DataFrame([{**KEYS, "batch": b, "context": t, "split_sms": s} for b, t, s in rows])
    keep = RF.SM_STREAM_TAIL
    try:
        RF.SM_STREAM_TAIL = RF.SM_STREAM_TAIL_CANDIDATE if tail else ()
        return FP.predict_us(FP.build_ops(d, hw.units, 233472.0), hw, hw.efficiency, len(d))
    finally:
        RF.SM_STREAM_TAIL = keep


def test_tail_is_shipped_for_mha_cu_and_the_sparse_prefill_rows():
    assert RF.SM_STREAM_TAIL_CANDIDATE == (RF.KIND_CODE["attn_xqa"],)
    # shipped for mha.cu and, with its own fitted terms, FlashMLA's sparse prefill kernel over decode rows
    assert RF.SM_STREAM_TAIL == RF.SM_STREAM_TAIL_CANDIDATE + (RF.KIND_CODE["attn_flashmla_sparse_fwd"],)
    assert 0.0 < RF.SM_STREAM_TAIL_HEAD < 0.5 and RF.SM_STREAM_TAIL_MIN_TILES == 2.0


def test_tail_prices_a_full_wave_and_a_few_ctas_longer():
    # batch 17 x 8 KV heads = 136 unsplit CTAs of 17 tiles: the last 4 stream alone at the per-SM rate
    on, off = _price([(17, 4200, np.nan)], True), _price([(17, 4200, np.nan)], False)
    hw = load_hardware("H100-SXM")
    per = 4200 * 128 * 2 * 2 / RF.SM_STREAM_CEILING["attn_xqa"] * 1e6
    wave = 132 * 4200 * 512 / (hw.hbm_bw_bytes_s * hw.efficiency.memory["attn_xqa"]) * 1e6
    assert on[0] > off[0] * 1.1
    # the rule's memory time: (1 - HEAD) of the full wave plus one CTA at the per-SM rate, never below the rule before
    assert on[0] - off[0] == pytest.approx((1.0 - RF.SM_STREAM_TAIL_HEAD) * wave + per - 136 / 132 * wave, rel=0.05)


def test_tail_leaves_one_wave_one_tile_and_hbm_bound_tails_alone():
    rows = [(12, 4400, np.nan),    # 96 CTAs: one wave
            (40, 200, np.nan),     # 320 one-tile CTAs: a burst, not a stream
            (25, 2700, np.nan)]    # 200 CTAs: the last wave's 68 CTAs are HBM-bound
    assert _price(rows, True) == pytest.approx(_price(rows, False), rel=1e-9)


def test_xqa_fits_run_without_the_tail():
    rows = [(17, 4200, np.nan)]
    with FP._xqa_ceiling_off():
        assert _price(rows, True) == pytest.approx(_price(rows, False), rel=1e-12)


def test_fifteenth_grid_predictions_committed():
    p = pd.read_csv(FP.DATA_DIR / FP.XQA_X15_PRED_CSV)
    assert len(p) == 32 and (p["role"] == "nopdl").sum() == 3
    for c in ("pred_base_us", "pred_new_us", "pred_here_off_us", "role", "pdl", "model_commit", "base_commit",
              "new_tail_head"):
        assert c in p.columns
    assert (p["pred_here_off_us"] == p["pred_base_us"]).all()
    assert (p["new_tail_head"] == RF.SM_STREAM_TAIL_HEAD).all()
    assert not p.duplicated(list(FP.XQA_KEYS) + ["role", "pdl"]).any()
    assert set(p["dtype"]) == {"bf16"} and set(p["role"]) == {"two136", "below", "control", "nopdl"}


def test_fifteenth_grid_measured_and_blind_prices_are_the_shipped_models():
    b = FP.load_xqa_x15()
    assert len(b) == 32 and {"base_err_pct", "new_err_pct", "role", "pdl"} <= set(b.columns)
    assert (pd.to_numeric(b["pdl"]) == (b["role"] != "nopdl").astype(int)).all()
    hw = load_hardware("H100-SXM")
    d = b.copy()
    d["split_sms"] = pd.to_numeric(d["split_sms"], errors="coerce")
    with FP.xqa_before_soft():   # the sixteenth grid's soft knee came after
        now = FP.predict_us(FP.build_ops(d, hw.units, 233472.0), hw, hw.efficiency, len(d))
    assert now == pytest.approx(b["pred_new_us"].to_numpy(float), rel=1e-3)


def test_fifteenth_grid_diagnostic_scan():
    d = FP.load_xqa_x15d()
    assert len(d) == 18 and set(d["context"]) == {1100, 2600} and (pd.to_numeric(d["split_sms"]) == 1).all()
