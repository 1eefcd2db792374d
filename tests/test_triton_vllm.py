"""vLLM's Triton unified attention family: the launch rules read from the source agree with the measured launch
profile, and the committed fit reproduces from the committed measurement."""
import numpy as np
import pandas as pd
import pytest

from hwmodels import datafiles as DF
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
    prof = pd.concat([pd.read_csv(f) for f in [g, *DF.glob(FP.DATA_DIR, "triton_vllm_blind_grids_*.csv")]])
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
    lone = FP.load_triton_vllm_lone_fit()
    assert meta["rows"] == 41 + len(lone) and meta["lone_rows"] == len(lone)
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
    pred = pd.read_csv(DF.resolve(FP.DATA_DIR / FP.TV_BLIND_PRED_CSV))
    assert len(pred.merge(blind, on=keys)) == len(blind)
    b = FP.load_triton_vllm_blind()
    if len(b):
        assert len(b) == len(blind) and b["new_err_pct"].notna().all() and b["base_err_pct"].notna().all()


def test_occupancy_follows_the_compiled_group_and_prices_the_waves():
    # the binary compiled for G 8 (8/1, 64/8 heads) uses 92 registers in the 2D kernel: 5 programs per SM, G 4's 112: 4
    # (measured launch profiles, VLLM_REGS_BY_G); the op carries it (resident_ctas) and the roofline's waves use it
    from hwmodels.spec import load_hardware
    from simulator.kernels.production import emit
    from simulator.ops import OpBuilder

    hw = load_hardware("H100-SXM")
    launches, info = TE.triton_vllm(np.array([40.0, 40.0]), 3.0, 3000.0, np.array([32.0, 64.0]), 8.0, 128.0, 2.0,
                                    hw.units, 233472.0)
    assert not info["use_3d"].any()
    b = OpBuilder(2)
    emit(b, launches[:1], hw.units)
    ops = b.build()
    assert ops.resident_ctas.tolist() == [4.0, 5.0]
    # 640 programs of 64/8 heads fit one wave of 5 x 132 slots, not two of 4 x 132: no second wave's chain
    assert info["ctas"].tolist() == [320.0, 640.0] and 640.0 <= 5 * hw.units < 640.0 + 4 * hw.units


def test_idle_programs_fill_the_last_wave_first():
    # Launch.idle_fill: idle programs that fit in the slots the working programs leave free add no load round
    from simulator.kernels.production import Launch, emit
    from simulator.ops import OpBuilder

    def steps(fill, idle):
        b = OpBuilder(1)
        emit(b, [Launch("attention", "attn_triton_vllm", 100.0, 4.0, 1.0, 1.0, 1.0, 1.0, 1.0, idle=idle,
                        idle_share=0.5, idle_fill=fill)], 132)
        return float(b.build().sync_steps[0])

    assert steps(True, 300.0) == 1.0 and steps(False, 300.0) == 1.5
    assert steps(True, 600.0) == 1.5     # 528 - 100 free slots, 172 idle programs left: one more round


def test_chain_queue_adds_a_share_of_the_memory_time():
    # roofline CHAIN_ISSUE: max(memory, chain + compute + chain_queue x memory); 0 leaves the earlier rule
    from dataclasses import replace

    import hwmodels.roofline as R
    from hwmodels.spec import load_hardware
    from simulator.kernels.production import emit
    from simulator.ops import OpBuilder

    hw = load_hardware("H100-SXM")
    b = OpBuilder(1)
    launches, _ = TE.triton_vllm(16.0, 1.0, 16384.0, 32.0, 8.0, 128.0, 2.0, hw.units, 233472.0)
    emit(b, launches[:1], hw.units)
    ops = b.build()
    eff = hw.efficiency
    t0 = R.price(ops, hw.with_efficiency(replace(eff, chain_queue={})), "graph")[0]
    t1 = R.price(ops, hw.with_efficiency(replace(eff, chain_queue={"attn_triton_vllm": 0.5})), "graph")[0]
    mem = R.price(ops, hw, "graph", detail=True).memory_s[0]
    assert t1 > t0 and t1 - t0 <= 0.5 * mem * 1.5


def test_chain_queue_is_read_and_checked():
    from hwmodels.errors import SparsesimError
    from hwmodels.spec import efficiency_from_dict

    assert efficiency_from_dict({"chain_queue": {"attn_triton_vllm": 0.4}}, "x.yaml").chain_queue == {
        "attn_triton_vllm": 0.4}
    with pytest.raises(SparsesimError, match="chain_queue"):
        efficiency_from_dict({"chain_queue": {"attn_triton_vllm": 1.5}}, "x.yaml")


def test_launch_constant_is_reduce_segments_and_shared_by_dtype():
    # the 2D / 3D kernels fit no per-launch constant (TV_NO_FIXED): the 3D structure's is reduce_segments', which the
    # 3D launches of bf16 and fp8 K/V share, and a 2D launch (no reduce) does not pay
    from hwmodels.spec import load_hardware
    from simulator.calibration import fit_production_attention as FP

    eff = load_hardware("H100-SXM").efficiency
    assert set(FP.TV_NO_FIXED) == {"attn_triton_vllm", "attn_triton_vllm_fp8kv"}
    assert all(eff.fixed_s.get(k, 0.0) == 0.0 for k in FP.TV_NO_FIXED)
    assert eff.fixed_s["attn_combine_triton_vllm"] > 0.0
    for kvb in (2.0, 1.0):
        launches, info = TE.triton_vllm(2.0, 1.0, 200.0, 32.0, 8.0, 128.0, kvb, 132, 233472.0)
        assert bool(info["use_3d"]) and launches[-1].kind == "attn_combine_triton_vllm"


def test_second_q_block_rereads_kv_through_l2():
    # 64/8 heads (G 8, BLOCK_Q 2) at q 3: two working q blocks per sequence, the second re-reading the sequence's K / V
    # (reread_bytes = the K / V once more, a working set of one program's range: an L2 hit); Llama-3.1-8B q 2
    # (BLOCK_Q 4): one q block, no re-read
    kv = 384.0 * 56.0 * 8.0 * 256.0 * 1.0
    launches, info = TE.triton_vllm(384.0, 3.0, 56.0, 64.0, 8.0, 128.0, 1.0, 132, 233472.0)
    ln = launches[0]
    assert float(info["block_q"]) == 2.0 and float(ln.reread_bytes) == pytest.approx(kv)
    assert float(ln.working_set) == pytest.approx(kv / (384.0 * 8.0))
    launches, _ = TE.triton_vllm(384.0, 2.0, 56.0, 32.0, 8.0, 128.0, 1.0, 132, 233472.0)
    assert float(launches[0].reread_bytes) == 0.0


def test_blind3_grid_is_new_and_priced_before():
    import importlib.util
    from pathlib import Path

    from simulator.calibration import fit_production_attention as FP

    p = Path(__file__).resolve().parents[1] / "lab" / "kernels" / "triton_decode_blind3.py"
    spec = importlib.util.spec_from_file_location("blind3", p)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    keys = list(FP.TD_BLIND3_KEYS)
    grid = pd.DataFrame(m.diagnosis_shapes() + m.blind3_shapes())
    pred = pd.read_csv(DF.resolve(FP.DATA_DIR / FP.TD_BLIND3_PRED_CSV))
    assert len(pred.merge(grid, on=keys)) == len(grid) == len(pred)
    assert (pred["base_commit"] == "5b35f90").all() and pred["pred_new_us"].gt(0).all()
    b = FP.load_triton_decode_blind3()
    if len(b):
        assert set(b["row_role"]) == {"blind"} and b["new_err_pct"].notna().all()
        lone = FP.load_triton_vllm_lone_fit()
        assert len(lone) and set(lone["model"]) == {"llama8b"}
        diag = lone[lone["row_role"] == "diagnosis"]
        assert len(diag) and set(diag["dtype"]) == {"bf16"}
        assert set(lone["row_role"]) <= {"diagnosis", "fit_fp8", "fit_lone"}


def _blind4_module():
    import importlib.util
    import sys
    from pathlib import Path

    here = Path(__file__).resolve().parents[1] / "lab" / "kernels"
    sys.path.insert(0, str(here))
    try:
        spec = importlib.util.spec_from_file_location("blind4", here / "triton_decode_blind4.py")
        m = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(m)
    finally:
        sys.path.remove(str(here))
    return m


def test_blind4_grid_priced_before_and_fit_sets_apart():
    # the fourth call's blind grid and its two fit sets were priced (main's model and the revised one) and committed
    # before the measurement; the blind rows are none of the fit rows, and the fit sets are Llama-3.1-8B (32/8) rows
    # apart from the other GQA binaries' lone rows, which only give VLLM_ITER_BY_G
    from simulator.calibration import fit_production_attention as FP

    m = _blind4_module()
    keys = list(FP.TD_BLIND3_KEYS)
    grid = pd.DataFrame(m.all_shapes())
    pred = pd.read_csv(DF.resolve(FP.DATA_DIR / FP.TD_BLIND4_PRED_CSV))
    assert len(pred.merge(grid, on=keys)) == len(grid) == len(pred)
    assert (pred["base_commit"].astype(str) == "8b74743").all() and pred["pred_new_us"].gt(0).all()
    shape = ["heads", "kv_heads", "dtype", "batch", "q_rows", "context"]
    blind, fit = grid[grid["row_role"] == "blind"], grid[grid["row_role"] != "blind"]
    assert len(blind) and not len(blind.merge(fit, on=shape))
    assert set(grid.loc[grid["row_role"] == "fit_fp8", "model"]) == {"llama8b"}
    lone = FP.load_triton_vllm_lone_fit()
    if (lone["row_role"] == "fit_lone").any():
        assert set(lone["model"]) == {"llama8b"}


def test_iter_by_g_is_the_measured_rule():
    # VLLM_ITER_BY_G is lone_iter_ratios() of the committed measurement (the rule fixed before it), and a G 8 2D bf16
    # lone program is priced slower than the G 4 one by that ratio's share of its chain
    from hwmodels.spec import load_hardware
    from simulator.calibration import fit_production_attention as FP

    r = FP.lone_iter_ratios()
    if not r:
        pytest.skip("no measurement")
    assert TE.VLLM_ITER_BY_G == r
    hw = load_hardware("H100-SXM")
    s = pd.DataFrame([dict(family="triton_vllm", model=mdl, heads=h, kv_heads=8, head_dim=128, dtype="bf16", batch=1,
                           q_rows=2, context=90000, page_size=16) for mdl, h in (("llama8b", 32), ("qwen72b", 64))])
    ops = FP.build_ops(s, hw.units, float(hw.smem_per_unit_bytes))
    p = FP.predict_us(ops, hw, hw.efficiency, len(s))
    assert 1.0 + 0.5 * (r[8.0][2] - 1.0) < p[1] / p[0] < r[8.0][2] + 0.01


def test_harness_gap_is_the_measured_rule_and_prices_only_this_family():
    # TV_HARNESS_GAP_US is tv_harness_gap() of the committed launch profiles, and a measured row of the family is priced
    # with it in place of the device's graph node cost (launch_graph), once per launch (two for the 3D pair)
    from dataclasses import replace

    from hwmodels import roofline as R
    from hwmodels.spec import load_hardware
    from simulator.calibration import fit_production_attention as FP

    gap, n = FP.tv_harness_gap()
    if not n:
        pytest.skip("no launch profile")
    assert FP.TV_HARNESS_GAP_US == gap and 0.0 < gap < 0.5 and n >= 50
    hw = load_hardware("H100-SXM")
    s = pd.DataFrame([dict(family="triton_vllm", model="llama8b", heads=32, kv_heads=8, head_dim=128, dtype="bf16",
                           batch=1, q_rows=q, context=24, page_size=16) for q in (1, 2)])
    ops = FP.build_ops(s, hw.units, float(hw.smem_per_unit_bytes))
    hw2 = replace(hw, launch_graph_s=hw.efficiency.launch_graph_s or hw.launch_graph_s)
    raw = np.bincount(ops.setting, weights=R.price(ops, hw2, "graph"), minlength=2) * 1e6
    kernels = np.array([2.0, 1.0])          # q 1: the 3D kernel and reduce_segments; q 2: the 2D kernel
    p = FP.predict_us(ops, hw, hw.efficiency, 2)
    assert p == pytest.approx(raw - kernels * (hw2.launch_graph_s * 1e6 - gap), rel=1e-9)


def _blind6_module():
    import importlib.util
    from pathlib import Path

    p = Path(__file__).resolve().parents[1] / "lab" / "kernels" / "triton_decode_blind6.py"
    spec = importlib.util.spec_from_file_location("triton_decode_blind6", p)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def test_blind6_grid_priced_before_and_regimes_named():
    # the sixth grid's every shape was priced by main's model, the shipped one and the variant before the measurement,
    # its blind rows are none of the diagnosis rows, and every named regime holds rows
    from simulator.calibration import fit_production_attention as FP

    m = _blind6_module()
    keys = list(FP.TD_BLIND3_KEYS)
    grid = pd.DataFrame(m.all_shapes())
    pred = pd.read_csv(DF.resolve(FP.DATA_DIR / FP.TD_BLIND6_PRED_CSV))
    assert len(pred.merge(grid, on=keys)) == len(grid) == len(pred)
    assert (pred["base_commit"].astype(str) == "c460edb").all()
    assert pred[["pred_base_us", "pred_new_us", "pred_v1_us"]].gt(0).all().all()
    shape = ["heads", "kv_heads", "dtype", "batch", "q_rows", "context"]
    blind, diag = grid[grid["row_role"] == "blind"], grid[grid["row_role"] == "diagnosis"]
    assert len(blind) == 44 and not len(blind.merge(diag, on=shape))
    assert set(FP.blind6_regime(blind)) == {"verify B<=8 short", "2D one-tile decode B>=150", "control"}


def test_harness_kv_l2_hit_follows_the_copies_footprint_and_engines_pay_none():
    from simulator.calibration import fit_production_attention as FP
    # one sequence of 330 tokens, 1 KV head, bf16: 16 copies of 0.17 MB -> all in one L2 partition; 8 sequences of 4096
    # tokens, 8 KV heads: 8 copies of 128 MiB -> none; 16 copies of 2.5 MB = 40 MB -> between
    h = FP.tv_harness_kv_l2_hit(np.array([1.0, 8.0, 1.0]), np.array([330.0, 4096.0, 600.0]), np.array([1.0, 8.0, 8.0]),
                                128.0, 2.0)
    assert h[0] == 1.0 and h[1] == 0.0 and 0.0 < h[2] < 1.0
    args = (1.0, 2.0, 1450.0, 8.0, 1.0, 128.0, 2.0, 132, 233472.0)
    cold, _ = TE.triton_vllm(*args, engine=False)
    same, _ = TE.triton_vllm(*args, kv_l2_hit=0.0, engine=False)
    hot, info = TE.triton_vllm(*args, kv_l2_hit=1.0, engine=False)
    assert float(cold[0].prologue_loads) == float(same[0].prologue_loads) == float(hot[0].prologue_loads)
    assert float(cold[0].saved_loads) == 0.0
    # one L2-hit saving per K/V load (46 tiles), taken off after emit's clip of the prologue at zero
    assert float(hot[0].saved_loads) == pytest.approx(TE.VLLM_KV_L2_HIT_SAVING_SHARE * float(info["iters"]))
    assert float(hot[0].saved_loads) > float(hot[0].prologue_loads)
    assert float(hot[0].bytes_read) < float(cold[0].bytes_read)
    from simulator.kernels.production import emit
    from simulator.ops import OpBuilder
    steps = []
    for ln in (cold, hot):
        b = OpBuilder(1)
        emit(b, ln[:1], 132)
        steps.append(float(b.build().sync_steps[0]))
    assert steps[1] == pytest.approx(steps[0] - float(hot[0].saved_loads)) and steps[1] < 0.0


def test_harness_footprint_counts_the_copies_the_graphs_calls_touch():
    from simulator.calibration import fit_production_attention as FP
    # one sequence of 2150 tokens, 8 KV heads, bf16: 8.85 MB a call, R = 16 copies (142 MB: no hit); a graph of 2 calls
    # reads 2 copies (17.7 MB: all hit), of 4 calls 4 (35.4 MB: on the ramp), of 16 or more all 16 (the rule before)
    args = (np.ones(5), np.full(5, 2150.0), np.full(5, 8.0), 128.0, 2.0)
    calls = np.array([2.0, 4.0, 16.0, 32.0, np.inf])
    h = FP.tv_harness_kv_l2_hit(*args, calls)
    before = FP.tv_harness_kv_l2_hit(*args)
    assert h[0] == 1.0 and 0.0 < h[1] < 1.0 and list(h[2:]) == [0.0, 0.0, 0.0]
    kv = 2150.0 / 16.0
    kv = np.ceil(kv) * 16.0 * 8.0 * 128.0 * 2.0 * 2.0
    assert h[1] == pytest.approx((FP.TV_HARNESS_L2_BYTES - 4.0 * kv) / (FP.TV_HARNESS_L2_BYTES / 2.0))
    assert list(before) == [0.0] * 5
    # priced through build_ops: a warm row with few calls is faster, its cold twin (the engine's state) and a row
    # without a calls column price as before
    from hwmodels.spec import load_hardware
    hw = load_hardware("H200")
    row = dict(family="triton_vllm", model="llama8b", heads=32, kv_heads=8, head_dim=128, dtype="bf16", batch=1,
               q_rows=5, context=2150, page_size=16)
    df = pd.DataFrame([{**row, "row_role": "blind", "calls": 3.0}, {**row, "row_role": "blind", "calls": 32.0},
                       {**row, "row_role": "cold", "calls": 3.0}])
    t = FP.predict_us(FP.build_ops(df, hw.units, float(hw.smem_per_unit_bytes)), hw, hw.efficiency, len(df))
    t0 = FP.predict_us(FP.build_ops(df.drop(columns="calls"), hw.units, float(hw.smem_per_unit_bytes)), hw,
                       hw.efficiency, len(df))
    assert t[0] < 0.9 * t[1] and t[1] == pytest.approx(t0[0]) and t[2] == pytest.approx(t0[2])


def test_fit_keeps_the_r_copy_footprint_and_the_grid_ran_the_committed_call_counts():
    from simulator.calibration import fit_production_attention as FP
    from simulator.calibration import h200_transfer as HT
    assert FP.TV_HARNESS_CALLS and not FP.TV_FIT_HARNESS_CALLS
    b = HT.load_triton_h200_calls()
    if not len(b):
        pytest.skip("the second H200 grid is not measured")
    warm = b["row_role"].isin(["blind", "blind_many", "recheck"])
    assert (b.loc[warm, "calls"] == b.loc[warm, "calls_measured"]).all()
    assert b.loc[~warm, "calls"].isna().all()
    # every new shape is timed warm and cold; the lone ones at 32 calls too
    assert (b["row_role"] == "blind").sum() == (b["row_role"] == "cold").sum() == 36
    assert set(b.loc[b["row_role"] == "blind_many", "calls"]) == {32.0}
    assert b.loc[b["row_role"].str.startswith("recheck"), "first_us"].notna().all()


def test_engine_state_prices_the_first_waves_metadata_block_table_and_code_from_dram():
    # one sequence, 2D (q 2, 1450 tokens: 46 tiles of 32 keys, 91 pages = 12 block-table sectors of 8 entries), one
    # program: the engine adds the launch's cold loads, 3 metadata / first-table loads at the DRAM latency (from the
    # L2 share) and the 11 later table sectors
    args = (1.0, 2.0, 1450.0, 8.0, 1.0, 128.0, 2.0, 132, 233472.0)
    warm, _ = TE.triton_vllm(*args, engine=False)
    eng, _ = TE.triton_vllm(*args)
    miss = 1.0 - TE.VLLM_L2_SHARE
    want = TE.VLLM_COLD_LAUNCH_LOADS + TE.VLLM_COLD_META_LOADS * miss + 11.0 * miss
    assert float(eng[0].prologue_loads) - float(warm[0].prologue_loads) == pytest.approx(want)
    # 3D decode (one sequence, 230 tokens): the reduce launch pays its own code, query_start_len probe and seq_len
    warm, _ = TE.triton_vllm(1.0, 1.0, 230.0, 32.0, 8.0, 128.0, 2.0, 132, 233472.0, engine=False)
    eng, _ = TE.triton_vllm(1.0, 1.0, 230.0, 32.0, 8.0, 128.0, 2.0, 132, 233472.0)
    red = [i for i, ln in enumerate(eng) if ln.kind == "attn_combine_triton_vllm"][0]
    assert float(eng[red].prologue_loads) - float(warm[red].prologue_loads) == pytest.approx(
        TE.VLLM_COLD_LAUNCH_LOADS + TE.VLLM_COLD_REDUCE_META_LOADS * miss)
    # many waves: the first wave's cold loads spread over the waves emit multiplies the prologue by
    big_w, _ = TE.triton_vllm(600.0, 1.0, 100.0, 32.0, 8.0, 128.0, 2.0, 132, 233472.0, engine=False)
    big, _ = TE.triton_vllm(600.0, 1.0, 100.0, 32.0, 8.0, 128.0, 2.0, 132, 233472.0)
    assert 0.0 < float(big[0].prologue_loads) - float(big_w[0].prologue_loads) < want / 2.0


def test_blind8_grid_priced_before_in_three_states():
    # the eighth grid: every row (warm, cold, K/V-cold) priced by main's model, the shipped one and the variant before
    # the measurement; the measured rows join the prices one to one; every named regime holds rows of each state
    import importlib.util
    import sys
    from pathlib import Path

    from simulator.calibration import fit_production_attention as FP

    root = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(root / "lab" / "kernels"))
    spec = importlib.util.spec_from_file_location("triton_decode_blind8", root / "lab" / "kernels" / "triton_decode_blind8.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    grid = pd.DataFrame(m.all_shapes())
    keys = ["model", "dtype", "batch", "q_rows", "context", "row_role"]
    pred = pd.read_csv(DF.resolve(FP.DATA_DIR / "triton_decode_blind8_predictions.csv"))
    assert len(pred.merge(grid, on=keys)) == len(grid) == len(pred) == 117
    assert (pred["base_commit"].astype(str) == "08cf44f").all()
    assert pred[["pred_base_us", "pred_new_us", "pred_v1_us"]].gt(0).all().all()
    b = FP.load_triton_decode_blind8(FP.DATA_DIR)
    if not len(b):
        pytest.skip("not measured")
    assert len(b) == 117 and b["median_us"].gt(0).all()
    assert set(FP.triton_blind8_regime(b)) == {"lone 2D", "short decode", "verify", "control"}
    # the engine's state (cold) costs more than the harness's warm replay, and the new model prices it so
    cold = b[b["row_role"] == "cold"].set_index(keys[:-1])
    warm = b[b["row_role"] == "blind"].set_index(keys[:-1])
    assert (cold["pred_new_us"] >= warm["pred_new_us"]).all()
