"""cuBLASLt's block-scaled fp8 kernel (kind gemm_fp8_block_cublaslt): its split-K choice against the kernels the fifth
GEMM set recorded, its ops, and the blind DeepGEMM / cuBLASLt grid's committed predictions."""
import re

import numpy as np
import pandas as pd
import pytest

from hwmodels import datafiles as DF
from simulator.calibration import fit_production_topk_gemm as F
from simulator.kernels import gemm_fp8 as G
from simulator.ops import OpBuilder


def test_split_choice_reproduces_the_recorded_block_kernels():
    notes = DF.read_text(F.DATA_DIR / "production_kernels_nvidia-h100-80gb-hbm3_2026-11-27_blind5_notes.txt")
    n = 0
    for line in notes.splitlines():
        mt = re.match(r"kernels fp8_block \(M (\d+), K (\d+), N (\d+)\): (.*)", line)
        if not mt:
            continue
        m, k, nn = (int(mt.group(i)) for i in (1, 2, 3))
        observed = "_splitK_" in mt.group(4)
        assert (G.cublaslt_block_split_tiles(m, k, nn) > 1) == observed, (m, k, nn)   # the rule before grid 9
        n += 1
    assert n >= 30


def test_split_rows_add_the_reduce_and_divide_the_k_walk():
    b = OpBuilder(1)
    G.add_block_gemm_cublaslt(b, "g", np.array([28.0]), 7168.0, 1536.0, 1.0)
    ops = b.build()
    assert len(ops.kind) == 2                       # the GEMM and cuBLASLt's splitKreduce
    assert ops.parallel_units[0] == 12 * 2 and ops.serial_iters[0] == 28
    b = OpBuilder(1)
    G.add_block_gemm_cublaslt(b, "g", np.array([1024.0]), 7168.0, 1536.0, 1.0)
    assert len(b.build().kind) == 1                 # prefill: no split


def test_blind_grid_prediction_is_new_and_priced_by_both_models():
    import importlib.util
    from pathlib import Path

    p = pd.read_csv(F.DATA_DIR / "deepgemm_gemm_blind_prediction_d3c34ca_2026-11-27.csv")
    assert len(p) == 80 and set(p["kernel"]) == {"deepgemm", "cublaslt"}
    dg = p["kernel"] == "deepgemm"
    assert np.allclose(p.loc[dg, "pred_main_us"], p.loc[dg, "pred_new_us"])   # DeepGEMM's model not changed
    spec = importlib.util.spec_from_file_location(
        "pdg", Path(__file__).resolve().parents[1] / "lab" / "kernels" / "predict_deepgemm_gemm.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    shapes = set(zip(p["rows"], p["k"], p["n"]))
    assert not shapes & mod.committed_shapes()                      # no shape measured before
    assert [tuple(r) for r in p[["kernel", "rows", "k", "n"]].itertuples(index=False)] == mod.grid()


def test_cublaslt_kind_terms_are_its_fit_on_the_scaled_mm_rows():
    """The committed terms are the writer's fit on its 266 rows under "workspace" (grid 12 on): the rms log error the
    record names, below the terms before grid 12 on the same rows. (The least-squares fixed-point check this test ran
    on 60 rows takes ~10 s on 266: the writer's rerun at merge, a nil YAML diff, is that check.)"""
    from hwmodels.spec import load_hardware
    from hwmodels.yamlio import load_yaml

    hw = load_hardware("H100-SXM")
    g = F.cublaslt_fit_frame(F.DATA_DIR / "production_kernels_nvidia-h100-80gb-hbm3_2026-11-26.csv")
    e, k = hw.efficiency, F.CUBLASLT_BLOCK_KIND
    rec = load_yaml(F.DATA_DIR.parents[1] / "fitted" / "H100-SXM.yaml", "fitted")["production_kernels"][k]
    assert len(g) == rec["fit_rows"] == 266 and e.fixed_s[k] == 0.0 and rec["split_rule"] == "workspace"
    y = np.log(g["median_us"].to_numpy(float))
    shipped, G.CUBLASLT_SPLIT_RULE = G.CUBLASLT_SPLIT_RULE, F.CUBLASLT_FIT_SPLIT_RULE
    turnover = F.cublaslt_turnover_hidden(F.CUBLASLT_FIT_TURNOVER_HIDDEN)   # the structure the terms were fitted under
    try:
        now = np.sqrt(np.mean((np.log(F.predict_gemm_us(g, hw, e)) - y) ** 2))
        before = np.sqrt(np.mean((np.log(F.predict_gemm_us(g, hw, F.block_cublaslt_eff_with(
            hw, F.CUBLASLT_TERMS_BEFORE_GRID12))) - y) ** 2))
    finally:
        G.CUBLASLT_SPLIT_RULE = shipped
        F._restore_hidden(turnover)
    assert now == pytest.approx(rec["rms_log_error"], abs=1e-3) and now < before


def test_grid4_prediction_is_new_and_priced_by_both_models():
    import importlib.util
    from pathlib import Path

    p = pd.read_csv(F.DATA_DIR / "deepgemm_gemm_grid4_prediction_388fd6e_2026-11-27.csv")
    assert len(p) == 57 and set(p["kernel"]) == {"deepgemm", "cublaslt"}
    spec = importlib.util.spec_from_file_location(
        "pg4", Path(__file__).resolve().parents[1] / "lab" / "kernels" / "predict_deepgemm_gemm_grid4.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert [tuple(r) for r in p[["kernel", "rows", "k", "n"]].itertuples(index=False)] == [r[:4] for r in mod.grid()]
    seen = mod.committed_shapes()
    assert not {("deepgemm", m, k, n) for c, m, k, n in p[["kernel", "rows", "k", "n"]].itertuples(index=False)
                if c == "deepgemm"} & seen
    # the measurement that followed: DeepGEMM printed the layouts the model priced
    meas = pd.read_csv(F.DATA_DIR / "deepgemm_gemm_grid4_nvidia-h100-80gb-hbm3_2026-11-27.csv")
    assert len(meas) == 57 and pd.to_numeric(meas["median_us"], errors="coerce").notna().sum() == 40


def test_grid5_prediction_is_new_runnable_and_measured():
    import importlib.util
    from pathlib import Path

    p = pd.read_csv(F.DATA_DIR / "cublaslt_block_grid5_prediction_cc8d66a_2026-11-27.csv")
    spec = importlib.util.spec_from_file_location(
        "pg5", Path(__file__).resolve().parents[1] / "lab" / "kernels" / "predict_cublaslt_block_grid5.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    shapes = [tuple(r) for r in p[["rows", "k", "n"]].itertuples(index=False)]
    assert len(p) == 20 and shapes == [r[1:4] for r in mod.grid()]
    assert not set(shapes) & mod.committed_shapes()
    assert all(m % 4 == 0 and (k // 128) % 4 == 0 for m, k, n in shapes)   # where the block path runs (grid 4)
    meas = pd.read_csv(F.DATA_DIR / "deepgemm_gemm_grid5_nvidia-h100-80gb-hbm3_2026-11-27.csv")
    assert pd.to_numeric(meas["median_us"], errors="coerce").notna().sum() == 20


def test_split_rule_names_the_fresh_sets_recorded_splits():
    """The shipped split rule (read off the earlier recorded choices) is the one committed as split_readoff before the
    fresh decode set was measured, and names at least 10 of its 16 recorded split counts (the rule before: 4)."""
    m = F.cublaslt_split7_errors()
    assert len(m) == 16
    assert [int(G.cublaslt_block_split_tiles(a, k, n)) for a, k, n in zip(m["rows"], m["k"], m["n"])] == list(
        m["split_readoff"])
    assert (m["split_readoff"] == m["split_recorded"]).sum() >= 10


def test_grid12_prediction_is_committed_new_and_unsplit_where_its_regime_says():
    """Grid 12's committed prediction: 44 rows, its columns, both models under one split rule, the unsplit regimes
    unsplit and the controls split, and the candidate's terms are what the writer's fit rows name."""
    p = pd.read_csv(F.DATA_DIR / F.CUBLASLT_GRID12_PREDICTION)
    assert len(p) == 44 and {"rows", "k", "n", "split_main", "split_cand", "pred_main_us", "pred_cand_us",
                             "regime"} <= set(p.columns)
    assert (p["split_main"] == p["split_cand"]).all()
    ctl = p["regime"] == "M<=64 split"
    assert (p.loc[ctl, "split_main"] > 1).all() and (p.loc[~ctl, "split_main"] == 1).all()
    assert ((p["k"] // 128).between(64, 256)).all()
    assert len(F.CUBLASLT_NAMED_FIT_GRID12) == len(F.CUBLASLT_NAMED_FIT_GRID4) + 7 and F.CUBLASLT_GRID12_RULE == "workspace"
    assert F.CUBLASLT_NAMED_FIT == F.CUBLASLT_NAMED_FIT_GRID12 and F.CUBLASLT_FIT_SPLIT_RULE == "workspace"   # shipped


def test_grid12_candidate_terms_price_the_committed_rows(monkeypatch):
    """The candidate's terms (CUBLASLT_GRID12_CAND_TERMS) reproduce its committed prices on a handful of rows, and are
    the committed (shipped) terms of the kind (priced without EPILOGUE_EXPOSED, which came after)."""
    import hwmodels.roofline as R
    monkeypatch.setattr(R, "EPILOGUE_EXPOSED", ())
    from hwmodels.spec import load_hardware

    hw = load_hardware("H100-SXM")
    p = pd.read_csv(F.DATA_DIR / F.CUBLASLT_GRID12_PREDICTION).iloc[[0, 12, 23, 33]]
    df = pd.DataFrame({"family": "gemm", "kernel": "fp8_block_cublaslt", "dist": "", "rows": p["rows"], "n": p["n"],
                       "k": p["k"]})
    eff = F.block_cublaslt_eff_with(hw, F.CUBLASLT_GRID12_CAND_TERMS)
    e, k = hw.efficiency, F.CUBLASLT_BLOCK_KIND
    assert (e.compute[k], e.memory[k], e.fixed_s[k] * 1e6, e.cta_fixed_s[k] * 1e6, e.iter_s[k] * 1e6) == pytest.approx(
        F.CUBLASLT_GRID12_CAND_TERMS)
    shipped, G.CUBLASLT_SPLIT_RULE = G.CUBLASLT_SPLIT_RULE, "workspace"
    try:
        us = F.predict_gemm_us(F.gemm_frame(df), hw, eff)
    finally:
        G.CUBLASLT_SPLIT_RULE = shipped
    assert np.allclose(us, p["pred_cand_us"], rtol=1e-3)


def test_grid12_measured_splits_and_the_shipped_terms_error():
    """Grid 12's measurement: 44 timed rows, every split / no-split the rule named ran, 43 of 44 counts; the shipped
    (candidate) terms' errors are the ones judged (pooled median |err| < 7 %, main's > 11 %)."""
    m = F.cublaslt_grid12_errors()
    assert len(m) == 44 and ((m["split_cand"] > 1) == (m["split_recorded"] > 1)).all()
    assert (m["split_cand"] == m["split_recorded"]).sum() == 43
    assert m["cand_err_pct"].abs().median() < 7.0 < 11.0 < m["main_err_pct"].abs().median()


def test_grid13_prefill_check_is_committed_priced_by_both_term_sets_and_measured(monkeypatch):
    """Grid 13 (the lead's prefill check of grid 12's refit): 26 committed rows, unsplit except the split controls; the
    shipped terms and CUBLASLT_TERMS_BEFORE_GRID12 reproduce their committed prices on a handful of rows (priced without
    EPILOGUE_EXPOSED, which came after); every row
    measured with the split the rule named, and the refit's few-K-step prefill rows are the over-priced ones."""
    from hwmodels import roofline as R
    from hwmodels.spec import load_hardware

    hw = load_hardware("H100-SXM")
    # the structure of then: the kind's turnover added per wave (grid 14 moved it into CTA_FIXED_HIDDEN)
    monkeypatch.setattr(R, "CTA_FIXED_HIDDEN", tuple(c for c in R.CTA_FIXED_HIDDEN
                                                     if c != R.KIND_CODE[F.CUBLASLT_BLOCK_KIND]))
    monkeypatch.setattr(R, "EPILOGUE_EXPOSED", ())
    p = pd.read_csv(F.DATA_DIR / F.CUBLASLT_GRID13_PREDICTION)
    assert len(p) == 26 and ((p["split_main"] > 1) == p["regime"].str.startswith("decode split")).all()
    q = p.iloc[[0, 9, 17, 23]]
    df = pd.DataFrame({"family": "gemm", "kernel": "fp8_block_cublaslt", "dist": "", "rows": q["rows"], "n": q["n"],
                       "k": q["k"]})
    fr = F.gemm_frame(df)
    assert np.allclose(F.predict_gemm_us(fr, hw, hw.efficiency), q["pred_main_us"], rtol=1e-3)
    before = F.block_cublaslt_eff_with(hw, F.CUBLASLT_TERMS_BEFORE_GRID12)
    assert np.allclose(F.predict_gemm_us(fr, hw, before), q["pred_before_us"], rtol=1e-3)
    m = F.cublaslt_grid13_errors()
    assert len(m) == 26 and (m["split_main"] == m["split_recorded"]).all()
    few = m[m["regime"] == "prefill M>=640, K steps <= 16"]
    assert few.loc[few["ksteps"] == 4, "main_err_pct"].min() > 15.0      # the refit's fixed time per CTA at 4 K steps


def test_epilogue_exposed_adds_the_last_waves_stores_at_the_l2_rate():
    # hwmodels.roofline EPILOGUE_EXPOSED (shipped after grid 16): the cuBLASLt block GEMM declares each CTA's output tile
    # (epilogue_bytes); with its kind in the tuple the last wave's CTAs x bytes at the L2's rate add to the kernel
    import hwmodels.roofline as R
    from hwmodels.roofline import price
    from hwmodels.spec import load_hardware

    hw = load_hardware("H200")
    rows = np.array([896.0, 8192.0])          # N 2304: one wave (126 tiles) and 9 waves (1152 tiles, the last 96)
    b = OpBuilder(2)
    G.add_block_gemm_cublaslt(b, "g", rows, 1024.0, 2304.0, 1.0)
    ops = b.build()
    assert np.allclose(ops.epilogue_bytes, 128 * 128 * 2.0)
    assert R.EPILOGUE_EXPOSED == ("gemm_fp8_block_cublaslt",)
    on = price(ops, hw, "graph")
    old = R.EPILOGUE_EXPOSED
    try:
        R.EPILOGUE_EXPOSED = ()
        off = price(ops, hw, "graph")
    finally:
        R.EPILOGUE_EXPOSED = old
    tiles = np.ceil(rows / 128) * np.ceil(2304.0 / 128)
    last = tiles - (np.ceil(tiles / 132) - 1) * 132
    assert np.allclose(on - off, last * 128 * 128 * 2.0 / hw.efficiency.l2_bw_bytes_s)
