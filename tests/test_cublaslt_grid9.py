"""cuBLASLt block fp8 grid 9: the candidate split rule ('work', read off 83 recorded choices), the padded-tile parser of
the recorded split counts, and the committed grid-9 prediction."""
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simulator.calibration import fit_production_topk_gemm as F
from simulator.kernels import gemm_fp8 as G


def _note(m, k, n, grid, split=True):
    name = "nvjet_sm90_qqtst_128x128_128x6_4x1_v_bz_coopA_algo2_Ablk128_Bvec128_" + ("splitK_" if split else "") + "TNN"
    return f"kernels cublaslt (M {m}, K {k}, N {n}, scales plain): {name} grid [{grid[0]}, {grid[1]}, 1] (1.0 us)"


@pytest.fixture(autouse=True)
def _before_the_epilogue(monkeypatch):
    """The committed prices this module reproduces predate hwmodels.roofline EPILOGUE_EXPOSED (cuBLASLt block grid 16,
    2026-11-28): they are priced with it off."""
    import hwmodels.roofline as R
    monkeypatch.setattr(R, "EPILOGUE_EXPOSED", ())


def test_recorded_splits_count_the_cluster_padded_tiles():
    notes = "\n".join([_note(12, 10240, 768, (4, 6)), _note(24, 14336, 1280, (4, 15)), _note(36, 5120, 1280, (4, 3),
                                                                                         split=False),
                       _note(8, 18432, 1024, (4, 14))])
    rec = F.cublaslt_recorded_splits(notes)
    assert rec == {(12, 10240, 768): 3, (24, 14336, 1280): 5, (36, 5120, 1280): 1, (8, 18432, 1024): 7}


def test_work_rule_structure():
    w = G.cublaslt_block_split_work
    assert G.CUBLASLT_SPLIT_RULE == "workspace"      # "work" after grid 9, "slices" after 10, "workspace" after 11
    assert int(w(8, 18432, 1024)) == 7               # 144 K steps, W 64
    assert int(w(20, 14336, 2048)) == 5              # 112 K steps, W 320
    assert int(w(16, 12288, 5120)) == 2              # 3 x 640 > the slice budget
    assert int(w(12, 12288, 4096)) == 3
    assert int(w(24, 7680, 2560)) == 2               # 60 K steps: 3 slices of 20 are too short
    assert int(w(52, 9216, 2560)) == 1               # W 1040 > 960
    assert int(w(12, 7168, 7168)) == 1               # 56 tiles > 48
    assert int(w(80, 16384, 2048)) == 1 and int(w(8, 4096, 1024)) == 1
    assert np.array_equal(G.cublaslt_padded_tiles(np.array([8, 200]), np.array([1280, 1024])), [12, 16])


def test_work_rule_reproduces_the_recorded_choices():
    """The candidate reproduces every recorded choice at M <= 128 of the committed _notes files it was read off."""
    from hwmodels import datafiles as DF
    rec = {}
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lab" / "kernels"))
    from data_order import committed_before  # the notes committed before grid 9 (data_order.txt)
    for f in committed_before("gemm_grid9_", DF.glob(F.DATA_DIR, "*_notes.txt")):
        rec.update({k: v for k, v in F.cublaslt_recorded_splits(DF.read_text(f)).items() if k[0] <= 128})
    assert len(rec) >= 83
    miss = [k for k, v in rec.items() if int(G.cublaslt_block_split_work(*k)) != v]
    assert not miss, miss


def test_grid9_prediction_committed_rows():
    p = pd.read_csv(F.DATA_DIR / F.CUBLASLT_GRID9_PREDICTION)
    assert len(p) == 42
    assert {"rows", "k", "n", "split_main", "split_cand", "pred_main_us", "pred_cand_us", "regime"} <= set(p.columns)
    assert all(p["rows"] % 4 == 0) and all(p["k"] % 512 == 0)
    assert [int(G.cublaslt_block_split_tiles(a, k, n)) for a, k, n in zip(p["rows"], p["k"], p["n"])] == list(
        p["split_main"])
    assert [int(G.cublaslt_block_split_work(a, k, n)) for a, k, n in zip(p["rows"], p["k"], p["n"])] == list(
        p["split_cand"])


def test_grid9_errors_join_the_measurement():
    m = F.cublaslt_grid9_errors()
    if "median_us" not in m.columns:
        pytest.skip("grid 9 not measured")
    assert len(m) >= 40 and (m["split_recorded"] > 0).all()
    assert np.isfinite(m[["main_err_pct", "cand_err_pct"]].to_numpy()).all()
    assert int((m["split_cand"] == m["split_recorded"]).sum()) == 22


def test_work_rule_prices_the_grid9_candidate(monkeypatch):
    """The "work" rule (shipped after grid 9, main on grid 10) is the candidate judged on grid 9: pricing a committed row
    under it gives its pred_cand_us."""
    from hwmodels import roofline as R
    from hwmodels.spec import load_hardware
    monkeypatch.setattr(G, "CUBLASLT_SPLIT_RULE", "work")
    # and the structure of then: the kind's turnover added per wave (grid 14 moved it into CTA_FIXED_HIDDEN)
    monkeypatch.setattr(R, "CTA_FIXED_HIDDEN", tuple(c for c in R.CTA_FIXED_HIDDEN
                                                     if c != R.KIND_CODE[F.CUBLASLT_BLOCK_KIND]))
    hw = load_hardware("H100-SXM")
    p = pd.read_csv(F.DATA_DIR / F.CUBLASLT_GRID9_PREDICTION).iloc[[0, 9, 27]]
    df = pd.DataFrame({"family": "gemm", "kernel": "fp8_block_cublaslt", "dist": "", "rows": p["rows"], "n": p["n"],
                       "k": p["k"]})
    # with the kind's terms of then (grid 12 refitted them: fit_production_topk_gemm.CUBLASLT_TERMS_BEFORE_GRID12)
    us = F.predict_gemm_us(F.gemm_frame(df), hw, F.block_cublaslt_eff_with(hw, F.CUBLASLT_TERMS_BEFORE_GRID12))
    assert np.allclose(us, p["pred_cand_us"], rtol=1e-3)
