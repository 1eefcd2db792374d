"""cuBLASLt block fp8 grid 10: the split rule shipped after it ('slices', read off 125 recorded choices), the committed
grid-10 prediction and its measurement's loader."""
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simulator.calibration import fit_production_topk_gemm as F
from simulator.kernels import gemm_fp8 as G


@pytest.fixture(autouse=True)
def _before_the_epilogue(monkeypatch):
    """The committed prices this module reproduces predate hwmodels.roofline EPILOGUE_EXPOSED (cuBLASLt block grid 16,
    2026-11-28): they are priced with it off."""
    import hwmodels.roofline as R
    monkeypatch.setattr(R, "EPILOGUE_EXPOSED", ())


def test_slices_rule_structure():
    s = G.cublaslt_block_split_slices
    assert G.CUBLASLT_SPLIT_RULE == "workspace"      # "slices" shipped after grid 10, "workspace" after grid 11
    assert int(s(8, 25600, 1024)) == 9               # 200 K steps, 8 tiles: slices of > 20 steps, 72 CTAs
    assert int(s(12, 18432, 1536)) == 6              # 7 x 12 = 84 CTAs > 80 with 20.6-step slices
    assert int(s(8, 14336, 4096)) == 4               # 128 CTAs: one wave, 28-step slices
    assert int(s(8, 12800, 5120)) == 2               # 3 x 40 tiles: 33-step slices < 0.875 x 40
    assert int(s(8, 16384, 6656)) == 2               # 52 tiles split at 128 K steps
    assert int(s(8, 8192, 7168)) == 1                # 56 tiles do not at 64
    assert int(s(56, 16384, 2304)) == 2              # W 1120 <= 960 + 2.5 x 64
    assert int(s(36, 14336, 4096)) == 1              # W 1152 > 960 + 2.5 x 48
    assert int(s(68, 8192, 1280)) == 2               # M > 64 may split (it ran 3)
    assert int(s(8, 4096, 1024)) == 1 and int(s(1024, 7168, 4096)) == 1
    out = s(np.array([8, 36]), np.array([25600, 14336]), np.array([1024, 4096]))
    assert out.shape == (2,) and list(out) == [9, 1]


def test_slices_rule_reproduces_the_recorded_choices():
    """'slices' names at least 122 of the 125 recorded choices at M <= 128 before grid 10 and every split / no-split."""
    from hwmodels import datafiles as DF
    rec = {}
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lab" / "kernels"))
    from data_order import committed_before  # the notes committed before grid 10 (data_order.txt)
    for f in committed_before("gemm_grid10_", DF.glob(F.DATA_DIR, "*_notes.txt")):
        rec.update({k: v for k, v in F.cublaslt_recorded_splits(DF.read_text(f)).items() if k[0] <= 128})
    assert len(rec) == 125
    got = {k: int(G.cublaslt_block_split_slices(*k)) for k in rec}
    assert sum(got[k] == v for k, v in rec.items()) >= 122
    assert all((got[k] > 1) == (v > 1) for k, v in rec.items())


def test_grid10_prediction_committed_rows():
    p = pd.read_csv(F.DATA_DIR / F.CUBLASLT_GRID10_PREDICTION)
    assert len(p) == 43
    assert {"rows", "k", "n", "split_main", "split_cand", "pred_main_us", "pred_cand_us", "pred_cand_refit_us",
            "regime"} <= set(p.columns)
    assert all(p["rows"] % 4 == 0) and all(p["k"] % 512 == 0)
    assert [int(G.cublaslt_block_split_work(a, k, n)) for a, k, n in zip(p["rows"], p["k"], p["n"])] == list(
        p["split_main"])
    assert [int(G.cublaslt_block_split_slices(a, k, n)) for a, k, n in zip(p["rows"], p["k"], p["n"])] == list(
        p["split_cand"])
    assert set(p["regime"]) == {">=3 slices", "2 slices", "unsplit, M<=64", "M 72-128"}


def test_grid10_errors_join_the_measurement():
    m = F.cublaslt_grid10_errors()
    if "median_us" not in m.columns:
        pytest.skip("grid 10 not measured")
    assert len(m) == 43 and (m["split_recorded"] > 0).all()
    assert np.isfinite(m[["main_err_pct", "cand_err_pct", "cand_refit_err_pct"]].to_numpy()).all()
    assert int((m["split_cand"] == m["split_recorded"]).sum()) == 37
    assert int((m["split_main"] == m["split_recorded"]).sum()) == 26


def test_shipped_rule_prices_the_candidate(monkeypatch):
    """The "slices" rule (shipped after grid 10, main on grid 11) is the candidate judged on grid 10: pricing a committed
    row under it gives its pred_cand_us."""
    from hwmodels.spec import load_hardware
    monkeypatch.setattr(G, "CUBLASLT_SPLIT_RULE", "slices")
    hw = load_hardware("H100-SXM")
    p = pd.read_csv(F.DATA_DIR / F.CUBLASLT_GRID10_PREDICTION).iloc[[6, 12, 31, 35]]
    df = pd.DataFrame({"family": "gemm", "kernel": "fp8_block_cublaslt", "dist": "", "rows": p["rows"], "n": p["n"],
                       "k": p["k"]})
    # with the kind's terms of then (grid 12 refitted them: fit_production_topk_gemm.CUBLASLT_TERMS_BEFORE_GRID12)
    us = F.predict_gemm_us(F.gemm_frame(df), hw, F.block_cublaslt_eff_with(hw, F.CUBLASLT_TERMS_BEFORE_GRID12))
    assert np.allclose(us, p["pred_cand_us"], rtol=1e-3)


def test_refit_terms_price_cand_refit(monkeypatch):
    """CUBLASLT_GRID10_REFIT_TERMS (not shipped) are the terms cand_refit was priced with (under "slices")."""
    from hwmodels.spec import load_hardware
    monkeypatch.setattr(G, "CUBLASLT_SPLIT_RULE", "slices")
    hw = load_hardware("H100-SXM")
    p = pd.read_csv(F.DATA_DIR / F.CUBLASLT_GRID10_PREDICTION).iloc[[0, 20, 40]]
    df = pd.DataFrame({"family": "gemm", "kernel": "fp8_block_cublaslt", "dist": "", "rows": p["rows"], "n": p["n"],
                       "k": p["k"]})
    us = F.predict_gemm_us(F.gemm_frame(df), hw, F.block_cublaslt_eff_with(hw, F.CUBLASLT_GRID10_REFIT_TERMS))
    assert np.allclose(us, p["pred_cand_refit_us"], rtol=1e-3)
