"""The xqa family's fourteenth-grid candidate (simulator/kernels/xqa.py XQA_LATE: mha.cu's late CTAs under programmatic
dependent launch): its structure, its fit on the named rows, and the committed prices of the fourteenth blind grid."""
import numpy as np
import pandas as pd
import pytest

from hwmodels import roofline as RF
from hwmodels.spec import load_hardware
from simulator.calibration import fit_production_attention as FP
from simulator.kernels import xqa as XQ


def _loads(ctas_batch, kvb=2.0, late=True):
    keep = XQ.XQA_LATE
    XQ.XQA_LATE = late
    try:
        launches, info = XQ.xqa(np.asarray(ctas_batch, float), 1.0, 3000.0, 32.0, 8.0, 128.0, kvb, 132, 16.0,
                                split="port", split_sms=1.0)
    finally:
        XQ.XQA_LATE = keep
    return np.ravel(np.broadcast_to(launches[0].prologue_loads, info["ctas"].shape)), info["ctas"]


def test_late_loads_only_on_one_partial_wave_of_more_than_half_the_sms():
    """Context 3000 (12 tiles per unsplit CTA); batch 6-20 of Llama-3.1-8B (8 KV heads, unsplit): 48-64 CTAs (<= 66) and 136-160 (two waves) untouched; 72-128
    CTAs pay XQA_LATE_LOADS x min(1, XQA_LATE_SAT_SMS / CTAs) more loads; fp8 (the GMMA kernel) untouched."""
    b = np.array([6.0, 8.0, 9.0, 12.0, 16.0, 17.0, 20.0])
    on, ctas = _loads(b)
    off, _ = _loads(b, late=False)
    want = np.where((ctas > 66.0) & (ctas <= 132.0), XQ.XQA_LATE_LOADS * np.minimum(1.0, XQ.XQA_LATE_SAT_SMS / ctas), 0.0)
    assert ctas.tolist() == [48.0, 64.0, 72.0, 96.0, 128.0, 136.0, 160.0]
    assert (on - off) == pytest.approx(want)
    f_on, _ = _loads(b, kvb=1.0)
    f_off, _ = _loads(b, kvb=1.0, late=False)
    assert f_on == pytest.approx(f_off)


def test_late_saturation_sms_is_the_hbm_rate_over_the_per_sm_ceiling():
    hw = load_hardware("H100-SXM")
    sat = hw.hbm_bw_bytes_s * hw.efficiency.memory["attn_xqa"] / RF.SM_STREAM_CEILING["attn_xqa"]
    assert XQ.XQA_LATE_SAT_SMS == pytest.approx(sat, rel=0.01)


def test_late_loads_fitted_on_the_named_rows():
    hw = load_hardware("H100-SXM")
    x10, x11, x12 = FP.load_xqa_x10(), FP.load_xqa_x11(), FP.load_xqa_x12()
    rows = FP.xqa_late_fit_rows(x10, x11, x12)
    assert len(rows) == 96 and set(rows["dtype"]) == {"bf16"}
    keep = XQ.XQA_LATE_MIN_TILES
    XQ.XQA_LATE_MIN_TILES = 1.0   # the form fitted and priced before the fourteenth grid's call
    try:
        loads, rms, rms1, n = FP.xqa_late_loads(x10, x11, x12, hw)
    finally:
        XQ.XQA_LATE_MIN_TILES = keep
    assert loads == pytest.approx(XQ.XQA_LATE_LOADS_HARD, abs=0.01) and rms < rms1 and n == 96


def test_fourteenth_grid_predictions_committed():
    p = pd.read_csv(FP.DATA_DIR / FP.XQA_X14_PRED_CSV)
    assert len(p) == 34
    for c in ("pred_base_us", "pred_new_us", "pred_here_off_us", "role", "model_commit", "base_commit"):
        assert c in p.columns
    assert (p["pred_here_off_us"] == p["pred_base_us"]).all()
    assert not p.duplicated(list(FP.XQA_KEYS) + ["role"]).any()


def test_fourteenth_grid_measured_and_the_fits_hold_late_off():
    b = FP.load_xqa_x14()
    assert len(b) == 34 and {"base_err_pct", "new_err_pct", "role"} <= set(b.columns)
    assert XQ.XQA_LATE is True
    with FP._xqa_ceiling_off():
        assert XQ.XQA_LATE is False
    assert XQ.XQA_LATE is True


def test_late_loads_spare_one_tile_ctas():
    keep = XQ.XQA_LATE
    try:
        XQ.XQA_LATE = True
        on, _ = XQ.xqa(12.0, 1.0, 200.0, 32.0, 8.0, 128.0, 2.0, 132, 16.0, split="port")
        XQ.XQA_LATE = False
        off, _ = XQ.xqa(12.0, 1.0, 200.0, 32.0, 8.0, 128.0, 2.0, 132, 16.0, split="port")
    finally:
        XQ.XQA_LATE = keep
    assert np.ravel(on[0].prologue_loads) == pytest.approx(np.ravel(off[0].prologue_loads))


def test_fourteenth_grid_blind_prices_are_the_shipped_models():
    """The shipped rule (XQA_LATE_MIN_TILES 2) prices the fourteenth grid as the candidate committed before the call."""
    b = FP.load_xqa_x14()
    hw = load_hardware("H100-SXM")
    keep = RF.SM_STREAM_TAIL
    try:   # the fifteenth and sixteenth grids' rules came after: the fourteenth grid's model is without them
        RF.SM_STREAM_TAIL = ()
        with FP.xqa_before_soft():   # the late loads enter when the ops are built
            now = FP.predict_us(FP.build_ops(b, 132, 233472.0), hw, hw.efficiency, len(b))
    finally:
        RF.SM_STREAM_TAIL = keep
    assert now == pytest.approx(b["pred_new_us"].to_numpy(float), rel=1e-3)
