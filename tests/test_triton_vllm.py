"""vLLM's Triton unified attention family: the launch rules read from the source agree with the measured launch
profile, and the committed fit reproduces from the committed measurement."""
import numpy as np
import pandas as pd
import pytest

from simulator.kernels import triton_engines as TE


def test_grid_rules():
    # Llama-3.1-8B decode (G 4: BLOCK_Q 4): 3D while (B // 4 + B) x 8 <= 128 -> B <= 13 (measured: 13 -> 3D, 14 -> 2D)
    _, bq, qb, use3d = TE.vllm_grid(np.array([13.0, 14.0, 1.0]), np.array([1.0, 1.0, 2.0]), 32.0, 8.0)
    assert float(bq) == 4.0 and qb.tolist() == [16.0, 17.0, 1.0]
    assert list(use3d) == [True, False, False]          # verification rows always take the 2D kernel
    bm, bq, _, _ = TE.vllm_grid(np.ones(3), np.ones(3), np.array([28.0, 8.0, 64.0]), np.array([4.0, 1.0, 2.0]))
    assert bq.tolist() == [2.0, 2.0, 1.0] and bm.tolist() == [16.0, 16.0, 32.0]
    # context 16 in 3D: one segment of 16 works, the other 15 exit after loading seq_len
    _, info = TE.triton_vllm(1.0, 1.0, 16.0, 32.0, 8.0, 128.0, 2.0, 132, 233472.0)
    assert float(info["ctas"]) == 8.0 and float(info["idle"]) == 120.0 and float(info["iters"]) == 1.0


def test_grid_matches_launch_profile():
    from simulator.calibration import fit_production_attention as FP

    _, g = FP.latest_triton_vllm()
    if g is None:
        pytest.skip("no launch profile")
    prof = pd.concat([pd.read_csv(f) for f in [g, *FP.DATA_DIR.glob("triton_vllm_blind_grids_*.csv")]])
    heads = {"llama8b": (32.0, 8.0), "llama70b_tp8": (8.0, 1.0), "qwen7b": (28.0, 4.0), "qwen72b": (64.0, 8.0)}
    checked = 0
    for r in prof[prof["kernel_name"].str.startswith("kernel_unified_attention")].itertuples():
        _, model, _, q, path, b, _ = r.label.split(":")
        hq, hkv = heads[model]
        _, _, qb, use3d = TE.vllm_grid(float(b[1:]), float(q[1:]), hq, hkv)
        assert bool(use3d) == (path == "3d") and float(qb) == r.grid_x and hkv == r.grid_y
        assert r.grid_z == (16 if path == "3d" else 1)
        checked += 1
    assert checked >= 10


def test_fit_reproduces_committed_terms():
    from hwmodels.spec import load_hardware
    from simulator.calibration import fit_production_attention as FP

    tv = FP.load_triton_vllm()
    if not len(tv):
        pytest.skip("no measurement")
    _, g = FP.latest_triton_vllm()
    hw = load_hardware("H100-SXM")
    eff, meta = FP.fit_triton_vllm(tv, hw, hw.efficiency, pd.read_csv(g))
    assert meta["rows"] == 41
    for k in ("attn_triton_vllm", "attn_triton_vllm_fp8kv"):
        assert eff.iter_s[k] == pytest.approx(hw.efficiency.iter_s[k], rel=2e-3)
        assert eff.memory[k] == pytest.approx(hw.efficiency.memory[k], rel=2e-3)
        assert eff.cta_slots[k] == hw.efficiency.cta_slots[k]


def test_iteration_is_lone_chain_plus_shared_issue():
    # roofline CHAIN_ISSUE: one wave of the same per-program chain costs more with 4 programs per SM than with 1 (the
    # SM's issue is shared), by less than 4x (the lone chain is paid once), and a bandwidth-bound launch stays at
    # its memory time
    import hwmodels.roofline as R
    from hwmodels.spec import load_hardware
    from simulator.kernels.production import emit
    from simulator.ops import OpBuilder

    hw = load_hardware("H100-SXM")
    # Llama-3.1-8B decode, context 16K: B 1 (128 programs, 1 per SM) and B 4 (512, 4 per SM), the same 64 tiles each
    B = np.array([1.0, 4.0])
    b = OpBuilder(2)
    launches, info = TE.triton_vllm(B, 1.0, 16384.0, 32.0, 8.0, 128.0, 2.0, hw.units, 233472.0)
    assert info["iters"].tolist() == [64.0, 64.0] and info["ctas"].tolist() == [128.0, 512.0]
    emit(b, launches[:1], hw.units)
    ops = b.build()
    t = R.price(ops, hw, "graph")
    assert t[0] < t[1] < 4.0 * t[0]
    d = R.price(ops, hw, "graph", detail=True)
    assert (t >= d.memory_s).all()


def test_blind_grid_is_new_and_priced_before():
    import importlib.util
    from pathlib import Path

    from simulator.calibration import fit_production_attention as FP

    p = Path(__file__).resolve().parents[1] / "lab" / "kernels" / "measure_triton_vllm_attention.py"
    spec = importlib.util.spec_from_file_location("measure_tv", p)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    keys = ["model", "dtype", "q_rows", "batch", "context"]
    blind, first = pd.DataFrame(m.blind_shapes()), pd.DataFrame(m.shapes())
    assert len(blind) >= 150 and not len(blind.merge(first, on=keys))
    pred = pd.read_csv(FP.DATA_DIR / FP.TV_BLIND_PRED_CSV)
    assert len(pred.merge(blind, on=keys)) == len(blind)
    b = FP.load_triton_vllm_blind()
    if len(b):
        assert len(b) == len(blind) and b["new_err_pct"].notna().all() and b["base_err_pct"].notna().all()
