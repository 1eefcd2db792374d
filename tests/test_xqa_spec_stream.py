"""The eighteenth xqa grid: mha.cu's verification per-SM stream premium (simulator.kernels.xqa.XQA_SPEC_STREAM_SHARE),
its byte factor, its loader and the committed blind grid."""
import numpy as np
import pandas as pd
import pytest

from simulator.calibration import fit_production_attention as FP
from simulator.kernels import xqa as XQ


def _bytes(B, q, T, share):
    keep = XQ.XQA_SPEC_STREAM_SHARE
    try:
        XQ.XQA_SPEC_STREAM_SHARE = share
        ops, _ = XQ.xqa(B, q, T, 32, 8, 128, 2, 132, split="port", split_sms=1)
        return float(np.asarray(ops[0].bytes_read).ravel()[0])
    finally:
        XQ.XQA_SPEC_STREAM_SHARE = keep


def test_shipped_constants():
    assert XQ.XQA_SPEC_STREAM_SHARE == XQ.XQA_SPEC_STREAM_SHARE_CANDIDATE == pytest.approx(0.246)
    assert XQ.XQA_SPEC_TILE_SHARE == 0.0   # replaced


def test_factor_per_sm_regime_only():
    f = XQ.xqa_spec_stream_factor(np.array([1.0, 8.0, 32.0, 64.0, 132.0, 136.0, 264.0]), 132, 0.25)
    assert f[0] == pytest.approx(1.25, abs=1e-3)            # a lone CTA: its whole stream at the slower rate
    assert np.all(np.diff(f[:5]) < 0)                       # fading as the chip's HBM rate binds
    assert f[4] < 1.03 and f[6] < 1.03                      # full waves: hidden
    assert f[5] > f[4]                                      # 4 CTAs alone after a full wave stream per SM again
    assert np.all(XQ.xqa_spec_stream_factor(np.array([8.0, 200.0]), 132, 0.0) == 1.0)


def test_prices_verification_chains_only():
    assert _bytes(1, 2, 3000, 0.3) == pytest.approx(_bytes(1, 2, 3000, 0.0) * 1.3, rel=2e-3)   # q 2, 8 CTAs
    assert _bytes(1, 1, 3000, 0.3) == _bytes(1, 1, 3000, 0.0)      # q 1: untouched
    assert _bytes(1, 2, 200, 0.3) == _bytes(1, 2, 200, 0.0)        # one tile: untouched


def test_x18_committed_grid():
    p = pd.read_csv(FP.DATA_DIR / FP.XQA_X18_PRED_CSV)
    assert len(p) == 29
    assert {"pred_base_us", "pred_new_us", "pred_here_off_us", "role", "model_commit", "base_commit"} <= set(p.columns)
    assert np.allclose(p["pred_here_off_us"], p["pred_base_us"])
    b = FP.load_xqa_x18()
    assert len(b) == 29 and b["base_err_pct"].notna().all() and b["new_err_pct"].notna().all()
    assert set(b["role"]) == {"q1", "q2_half", "q2_one", "control"}


def test_x18_prices_reproduce():
    """The shipped model re-makes the committed candidate prices and xqa_before_spec_stream main's, on 4 rows."""
    from hwmodels.spec import load_hardware

    hw = load_hardware("H100-SXM")
    p = pd.read_csv(FP.DATA_DIR / FP.XQA_X18_PRED_CSV)
    p = p[p["role"].isin(["q2_half", "control"])].iloc[[0, 4, 8, 11]].reset_index(drop=True)
    p["split_sms"] = pd.to_numeric(p["split_sms"], errors="coerce")

    def price():
        return FP.predict_us(FP.build_ops(p, hw.units, FP._smem(hw)), hw, hw.efficiency, len(p))

    assert np.allclose(price(), p["pred_new_us"], rtol=1e-3)
    with FP.xqa_before_spec_stream():
        assert np.allclose(price(), p["pred_base_us"], rtol=1e-3)
