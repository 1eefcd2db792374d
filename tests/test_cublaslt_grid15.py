"""cuBLASLt block fp8 grid 15: the candidate's later-tile turnover share and K-step factor
(hwmodels.roofline.CTA_FIXED_HIDDEN_SHARE, not shipped: empty on main), the committed grid-15 prediction / measurement
and loader."""
import numpy as np
import pandas as pd
import pytest

from hwmodels import roofline as R
from hwmodels.spec import load_hardware
from simulator.calibration import fit_production_topk_gemm as F

PRED = pd.read_csv(F.DATA_DIR / F.CUBLASLT_GRID15_PREDICTION)
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


def test_hidden_share_structure():
    code = R.KIND_CODE[F.CUBLASLT_BLOCK_KIND]
    assert code not in R.CTA_FIXED_HIDDEN_SHARE          # the candidate does not ship
    rows = [(4608, 512, 20480), (8192, 2048, 7168), (256, 2048, 8192)]   # 44 waves at 4 K steps, 28 at 16; one wave
    main = _us(rows)
    before = F.cublaslt_hidden_share(F.CUBLASLT_GRID15_CAND_SHARE)
    try:
        assert R.CTA_FIXED_HIDDEN_SHARE[code] == F.CUBLASLT_GRID15_CAND_SHARE
        cand = _us(rows)
        F.cublaslt_hidden_share((1.0, 1.0))
        same = _us(rows)
    finally:
        R.CTA_FIXED_HIDDEN_SHARE = before
    assert code not in R.CTA_FIXED_HIDDEN_SHARE
    assert np.allclose(same, main)                        # (1, 1) = no share
    assert cand[0] < 0.95 * main[0]                       # short K: the turnover share dominates
    assert main[1] < cand[1] < 1.05 * main[1]             # 16 K steps: the step factor outweighs the share
    assert abs(cand[2] - main[2]) < 1e-9                  # one wave prices as main


def test_grid15_prediction_committed_rows():
    assert len(PRED) == 37 and (PRED["k"] % 512 == 0).all()
    assert {"rows", "k", "n", "waves", "split_main", "pred_main_us", "pred_cand_us", "regime"} <= set(PRED.columns)
    assert set(PRED["regime"]) == {"prefill 4 K steps", "prefill 8 K steps", "prefill one wave",
                                   "decode unsplit M 8-64", "decode split M 8-64"}
    one = PRED["waves"] == 1
    assert np.allclose(PRED.loc[one, "pred_main_us"], PRED.loc[one, "pred_cand_us"])
    p = PRED.iloc[[6, 27]]   # the shipped model prices these as the committed `main` column
    assert np.allclose(_us(list(zip(p["rows"], p["k"], p["n"]))), p["pred_main_us"], rtol=1e-3)


def test_grid15_errors_loader():
    m = F.cublaslt_grid15_errors()
    assert len(m) == 37
    assert {"main_err_pct", "cand_err_pct", "split_recorded", "median_us"} <= set(m.columns)
    assert (m["split_recorded"] == m["split_main"]).all()
    few = m[m["regime"] == "prefill 4 K steps"]
    assert np.median(few["cand_err_pct"].abs()) < np.median(few["main_err_pct"].abs())
