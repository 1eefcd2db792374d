"""cuBLASLt block fp8 grid 11: the split rule shipped after it ('workspace': c x M x N x 4 bytes < 1 MiB, read off 168
recorded choices), the 4 x 2-cluster reading of the recorded counts, the committed grid-11 prediction and its loader."""
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simulator.calibration import fit_production_topk_gemm as F
from simulator.kernels import gemm_fp8 as G

PRED = pd.read_csv(F.DATA_DIR / F.CUBLASLT_GRID11_PREDICTION)


@pytest.fixture(autouse=True)
def _before_the_epilogue(monkeypatch):
    """The committed prices this module reproduces predate hwmodels.roofline EPILOGUE_EXPOSED (cuBLASLt block grid 16,
    2026-11-28): they are priced with it off."""
    import hwmodels.roofline as R
    monkeypatch.setattr(R, "EPILOGUE_EXPOSED", ())


def test_workspace_rule_structure():
    w = G.cublaslt_block_split_workspace
    assert G.CUBLASLT_SPLIT_RULE == "workspace"
    assert int(w(128, 8192, 1024)) == 1              # 2 x 128 x 1024 x 4 B = exactly 1 MiB: unsplit
    assert int(w(120, 12288, 1024)) == 2             # 0.94 MiB at 2 slices
    assert int(w(68, 8192, 1280)) == 3               # 3 slices = 0.996 MiB (ran 3; "slices" said 2)
    assert int(w(72, 8192, 1280)) == 2               # 3 would be 1.05 MiB
    assert int(w(28, 27648, 5120)) == 1              # W 1120 at 216 K steps: the partials bound, not W
    assert int(w(144, 16384, 512)) == 3              # M > 128 splits where the partials fit
    assert int(w(8, 14336, 8192)) == 2 and int(w(8, 8192, 7168)) == 1   # the padded-tile gate relaxes with K
    assert int(w(64, 4096, 1024)) == 1               # < 48 K steps
    out = w(np.array([8, 256]), np.array([25600, 16384]), np.array([1024, 512]))
    assert out.shape == (2,) and list(out) == [9, 1]


def test_workspace_rule_reproduces_the_recorded_choices():
    """'workspace' names at least 166 of the 168 recorded choices at M <= 128 before grid 11 and every split / no-split."""
    from hwmodels import datafiles as DF
    rec = {}
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lab" / "kernels"))
    from data_order import committed_before  # the notes committed before grid 11 (data_order.txt)
    for f in committed_before("gemm_grid11", DF.glob(F.DATA_DIR, "*_notes.txt")):
        rec.update({k: v for k, v in F.cublaslt_recorded_splits(DF.read_text(f)).items() if k[0] <= 128})
    assert len(rec) == 168
    got = {k: int(G.cublaslt_block_split_workspace(*k)) for k in rec}
    assert sum(got[k] == v for k, v in rec.items()) >= 166
    assert all((got[k] > 1) == (v > 1) for k, v in rec.items())


def test_recorded_splits_read_4x2_clusters():
    name = "nvjet_sm90_qqtst_128x128_128x6_4x2_h_bz_coopA_algo2_Ablk128_Bvec128_splitK_TNN"
    notes = "\n".join(f"kernels cublaslt (M {m}, K {k}, N {n}, scales plain): {name} grid [8, {g}, 1] (1.0 us)"
                      for m, k, n, g in ((256, 8192, 384, 2), (176, 28672, 640, 4), (160, 24576, 512, 3)))
    assert F.cublaslt_recorded_splits(notes) == {(256, 8192, 384): 2, (176, 28672, 640): 2, (160, 24576, 512): 3}


def test_grid11_prediction_committed_rows():
    assert len(PRED) == 43
    assert {"rows", "k", "n", "split_main", "split_cand", "pred_main_us", "pred_cand_us", "regime"} <= set(PRED.columns)
    assert all(PRED["rows"] % 4 == 0) and all(PRED["k"] % 512 == 0) and all(PRED["n"] % 128 == 0)
    assert set(PRED["regime"]) == {"M 65-128", "M 129-256", "M<=64 split", "M<=64 unsplit"}
    p = PRED.iloc[::4]
    assert [int(G.cublaslt_block_split_slices(a, k, n)) for a, k, n in zip(p["rows"], p["k"], p["n"])] == list(
        p["split_main"])
    assert [int(G.cublaslt_block_split_workspace(a, k, n)) for a, k, n in zip(p["rows"], p["k"], p["n"])] == list(
        p["split_cand"])


def test_shipped_rule_prices_the_grid11_candidate():
    """The shipped split rule is the candidate judged on grid 11: pricing committed rows now, with the kind's terms of
    then (fit_production_topk_gemm.CUBLASLT_TERMS_BEFORE_GRID12: grid 12 refitted them), gives their pred_cand_us."""
    from hwmodels.spec import load_hardware
    hw = load_hardware("H100-SXM")
    p = PRED.iloc[[2, 11, 18, 33]]
    df = pd.DataFrame({"family": "gemm", "kernel": "fp8_block_cublaslt", "dist": "", "rows": p["rows"], "n": p["n"],
                       "k": p["k"]})
    us = F.predict_gemm_us(F.gemm_frame(df), hw, F.block_cublaslt_eff_with(hw, F.CUBLASLT_TERMS_BEFORE_GRID12))
    assert np.allclose(us, p["pred_cand_us"], rtol=1e-3)


def test_grid11_errors_join_the_measurement():
    m = F.cublaslt_grid11_errors()
    if "median_us" not in m.columns:
        pytest.skip("grid 11 not measured")
    assert len(m) == 43 and (m["split_recorded"] > 0).all()
    assert np.isfinite(m[["main_err_pct", "cand_err_pct"]].to_numpy()).all()
    assert int((m["split_cand"] == m["split_recorded"]).sum()) == 41
    assert int((m["split_main"] == m["split_recorded"]).sum()) == 24
