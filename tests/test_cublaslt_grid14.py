"""cuBLASLt block fp8 grid 14: the per-tile turnover hidden across waves (hwmodels.roofline.CTA_FIXED_HIDDEN) that ships
after it, the fit that keeps the terms of the additive form, the committed grid-14 prediction / measurement and loader."""
import numpy as np
import pandas as pd
import pytest

from hwmodels import roofline as R
from hwmodels.spec import load_hardware
from simulator.calibration import fit_production_topk_gemm as F

PRED = pd.read_csv(F.DATA_DIR / F.CUBLASLT_GRID14_PREDICTION)
HW = load_hardware("H100-SXM")


def _us(rows):
    df = pd.DataFrame([{"family": "gemm", "kernel": "fp8_block_cublaslt", "dist": "", "rows": m, "n": n, "k": k}
                       for m, k, n in rows])
    return F.predict_gemm_us(F.gemm_frame(df), HW, HW.efficiency)


@pytest.fixture(autouse=True)
def _before_the_epilogue(monkeypatch):
    """The committed prices this module reproduces predate hwmodels.roofline EPILOGUE_EXPOSED (cuBLASLt block grid 16,
    2026-11-28): they are priced with it off."""
    import hwmodels.roofline as R
    monkeypatch.setattr(R, "EPILOGUE_EXPOSED", ())


def test_turnover_hidden_structure():
    code = R.KIND_CODE[F.CUBLASLT_BLOCK_KIND]
    assert code in R.CTA_FIXED_HIDDEN and F.CUBLASLT_FIT_TURNOVER_HIDDEN is False
    rows = [(3584, 512, 24576), (64, 28672, 8192)]   # 41 waves of 4 K steps; one wave
    hid = _us(rows)
    before = F.cublaslt_turnover_hidden(False)
    try:
        assert code not in R.CTA_FIXED_HIDDEN
        add = _us(rows)
    finally:
        F._restore_hidden(before)
    assert code in R.CTA_FIXED_HIDDEN
    assert hid[0] < 0.9 * add[0]                       # many waves: every turnover but the last's off the body
    assert abs(hid[1] - add[1]) < 1e-9                 # one wave prices as before


def test_grid14_prediction_committed_rows():
    assert len(PRED) == 35
    assert {"rows", "k", "n", "waves", "split_main", "pred_main_us", "pred_hidden_us", "pred_cand_us",
            "regime"} <= set(PRED.columns)
    assert set(PRED["regime"]) == {"prefill 2-4 K steps", "prefill 6-16 K steps", "prefill one wave",
                                   "decode unsplit M 8-64", "decode split M 8-64"}
    one = PRED["waves"] == 1
    assert np.allclose(PRED.loc[one & (PRED["split_main"] == 1), "pred_main_us"],
                       PRED.loc[one & (PRED["split_main"] == 1), "pred_hidden_us"])
    p = PRED.iloc[[6, 25]]   # the shipped model prices these as the committed `hidden` column
    assert np.allclose(_us(list(zip(p["rows"], p["k"], p["n"]))), p["pred_hidden_us"], rtol=1e-3)


def test_grid14_errors_loader():
    m = F.cublaslt_grid14_errors()
    assert len(m) == 23 and (m["k"] % 512 == 0).all()
    assert {"main_err_pct", "hidden_err_pct", "cand_err_pct", "split_recorded", "median_us"} <= set(m.columns)
    assert (m["split_recorded"] == m["split_main"]).all()
    few = m[m["regime"] == "prefill 2-4 K steps"]
    assert np.median(few["main_err_pct"]) > 20 and np.median(few["hidden_err_pct"].abs()) <= 10
