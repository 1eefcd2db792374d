"""The all-reduce inside a decode step (simulator/calibration/allreduce_in_step.py): the looked-at runs' epsilon, the blind
grid's rule, the H200's after_gemm term and where the op model charges it."""
from __future__ import annotations

import shutil
from dataclasses import replace

import numpy as np
import pytest

from hwmodels.roofline import price
from hwmodels.spec import load_hardware
from simulator.calibration import allreduce_in_step as S
from simulator.calibration.engine_allreduce import DATA_DIR


def test_looked_at_runs_give_the_committed_epsilon_and_the_spin_controls_sit_near_zero():
    t = S.looked_at()
    assert len(t) == 24 and set(t["world"]) == {2, 4} and set(t["tokens"]) == {1, 16, 64}
    assert S.fitted_epsilon_us() == pytest.approx(S.FITTED_EPS_US, abs=5e-4)
    assert (t["eps"] > 0).all()
    assert abs(t["eps_spin"].dropna().median()) < 0.3 and abs(t["eps_gspin"].dropna().median()) < 0.3


def test_blind_grid_by_its_rule():
    r = S.judge_blind()
    assert r is not None and r["n"] == 12 and r["nearer"] == 8 and r["adopt"]
    c = r["cells"]
    assert set(c["hidden"]) == {4096, 5120} and set(c["tokens"]) == set(S.BLIND_TOKENS)
    assert not set(c["tokens"]) & {1, 16, 64}                      # no looked-at token count
    rep = S.judge_blind(run=S.BLIND_REPLICATE)
    assert rep is not None and rep["n"] == 12 and rep["nearer"] >= 8
    z = S.sizes_probe()
    assert z is not None and len(z) == 8 and z["eps"].abs().max() < 0.3     # short GEMMs: no wait


def test_writers_reproduce_the_h200_yaml_and_the_terms_are_read(tmp_path):
    src = DATA_DIR.parents[1] / "fitted" / "H200.yaml"
    shutil.copy(src, tmp_path / "H200.yaml")
    once = S.ship_after_gemm_h200(tmp_path).read_text()                  # the constant, shipped after the blind grid
    assert "after_gemm: 1.546" in once and once != src.read_text()
    assert S.ship_step2_h200(tmp_path).read_text() == src.read_text()    # replaced by the share after the step-2 grid
    eff = load_hardware("H200").efficiency
    assert eff.engine_ar["after_gemm_s"] == 0.0 and eff.engine_ar_rules["after_gemm_share"] == S.STEP2_SHARE
    assert "after_gemm_s" not in load_hardware("H100-SXM").efficiency.engine_ar
    assert "after_gemm_share" not in load_hardware("H100-SXM").efficiency.engine_ar_rules


def _decode(dev, engine, tp=4):
    from simulator.combo import make_combo
    from simulator.engine.runtime import load_profile
    from simulator.pricing import decode_ops

    c = load_profile(engine).apply_collectives(make_combo(dev, "Llama-3.1-70B", tp=tp, attention="dense"))
    ops, _ = decode_ops(c, np.array([1.0, 16.0]), np.array([4096.0, 4096.0]))
    return ops


def test_the_step_pays_the_wait_once_per_custom_all_reduce_after_a_gemm():
    ops = _decode("H200", "vllm-v1")
    names = np.asarray(ops.names)[ops.name_id].astype(str)
    ar = np.char.startswith(names, "allreduce")
    # each carries its GEMM's HBM bytes per rank (o_proj 2048 x 8192, down 7168 x 8192 bf16 weights at TP4)
    assert ops.after_gemm is not None and (ops.after_gemm[~ar] == 0.0).all()
    w = ops.after_gemm[ar & (ops.setting == 0)]
    assert set(np.round(w / 2**20).astype(int)) == {32, 112}
    hw = load_hardware("H200")
    t_on = price(ops, hw)
    t_off = price(replace(ops, after_gemm=None), hw)
    # the shipped wait (step-2 grid): share x sqrt(g - 1) x the GEMM's memory time, once per all-reduce (count)
    t_gemm = ops.after_gemm / (hw.hbm_bw_bytes_s * hw.efficiency.memory["gemm"])
    assert np.allclose(t_on - t_off, np.where(ar, S.STEP2_SHARE * np.sqrt(3.0) * t_gemm * ops.count, 0.0))
    n_ar = np.bincount(ops.setting, weights=np.where(ar, ops.count, 0.0), minlength=ops.n_settings)
    assert (n_ar == 160).all()
    d = np.bincount(ops.setting, weights=t_on - t_off, minlength=ops.n_settings)
    assert ((d / n_ar > 0.5e-6) & (d / n_ar < 3e-6)).all()             # a microsecond or two per all-reduce at 70B / TP4
    # the H100 has no such term: the column changes nothing there
    h100 = load_hardware("H100-SXM")
    o100 = _decode("H100-SXM", "vllm-v1")
    assert np.allclose(price(o100, h100), price(replace(o100, after_gemm=None), h100))


def test_nccl_rings_do_not_declare_it():
    from simulator.combo import make_combo
    from simulator.pricing import decode_ops

    c = make_combo("H200", "Llama-3.1-70B", tp=4, attention="dense")      # the scenario's default: NCCL's ring
    ops, _ = decode_ops(c, np.array([1.0]), np.array([4096.0]))
    assert ops.after_gemm is None


def test_step2_candidate_was_priced_before_its_grid_adopted_by_its_rule_and_moves_only_the_wait():
    f = S.fit_step2_share()
    assert f["share"] == S.STEP2_SHARE and f["cells"] == 56
    assert f["rms_us"]["candidate"] < f["rms_us"]["shipped"] < f["rms_us"]["zero"]
    pred = __import__("pandas").read_csv(DATA_DIR / S.STEP2_PRED_CSV)
    assert len(pred) == 18 and set(pred["hidden"]) == {h for h, _ in S.STEP2_DIMS}
    fit_shapes = set(zip(S.step2_fit_cells()["hidden"], S.step2_fit_cells()["tokens"]))
    assert not fit_shapes & set(zip(pred["hidden"], pred["tokens"]))         # blind: no shape of the fit runs
    assert np.allclose(pred["eps_candidate_us"], np.round(S.STEP2_SHARE * S.step2_x(pred) * 1e6, 3))
    r = S.judge_step2()                                                        # judged by the committed rule
    assert r is not None and r["n"] == 18 and r["nearer"] == 11 and r["adopt"]
    rep = S.judge_step2(run=S.STEP2_REPLICATE)
    assert rep is not None and rep["n"] == 18 and rep["nearer"] >= 10 and rep["adopt"]
    # in the op model: the candidate prices share x sqrt(g - 1) x the GEMM's memory time per all-reduce, no constant
    ops = _decode("H200", "vllm-v1")
    hw, cand = load_hardware("H200"), S.step2_candidate_hw()
    names = np.asarray(ops.names)[ops.name_id].astype(str)
    ar = np.char.startswith(names, "allreduce")
    off = price(replace(ops, after_gemm=None), hw)
    t_gemm = ops.after_gemm / (hw.hbm_bw_bytes_s * hw.efficiency.memory["gemm"])
    want = np.where(ar, S.STEP2_SHARE * np.sqrt(3.0) * t_gemm * ops.count, 0.0)   # price() includes the count
    assert np.allclose(price(ops, cand) - off, want)


def test_trtllm_in_step_grid_was_priced_before_and_its_rule_keeps_the_wait():
    import pandas as pd

    pred = pd.read_csv(DATA_DIR / S.TRT_PRED_CSV)
    assert len(pred) == 30 and set(pred["impl"]) == set(S.TRT_KERNELS)
    assert (pred.loc[pred["impl"] == "trtllm_twoshot", "tokens"] > pred.loc[pred["impl"] == "trtllm_twoshot", "world"]).all()
    # the same wait for both kernels: the shipped share x the cell's regressor
    assert np.allclose(pred["eps_shipped_us"], np.round(S.STEP2_SHARE * S.step2_x(pred) * 1e6, 3))
    r = S.judge_trt()
    assert r is not None and r["n"] == 30 and r["nearer"] == 28 and r["keep"]
    rep = S.judge_trt(run=S.TRT_REPLICATE)
    assert rep is not None and rep["n"] == 30 and rep["keep"]
    # TensorRT-LLM's kinds are priced with the wait in a step (the rule kept it): a TensorRT-LLM decode step's
    # all-reduces each carry share x sqrt(g - 1) x their GEMM's memory time
    ops = _decode("H200", "trtllm")
    names = np.asarray(ops.names)[ops.name_id].astype(str)
    ar = np.char.startswith(names, "allreduce")
    hw = load_hardware("H200")
    d = price(ops, hw) - price(replace(ops, after_gemm=None), hw)
    t_gemm = ops.after_gemm / (hw.hbm_bw_bytes_s * hw.efficiency.memory["gemm"])
    assert ar.any() and np.allclose(d, np.where(ar & (ops.after_gemm > 1.0), S.STEP2_SHARE * np.sqrt(3.0) * t_gemm
                                                * ops.count, 0.0))
    assert (d[ar] > 0).any()
