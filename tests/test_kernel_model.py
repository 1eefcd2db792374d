"""The kernel model outside the bandwidth regime (issue 15): decode-kernel families and their split rules, the
roofline's wave model, HF-style kernel counts, fp8 GEMM paths, torch.topk's dispatch, the indexer's CTAs, and
the regime fit's refusals."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hwmodels import datafiles as DF
from hwmodels.calibration import DATA_DIR
from hwmodels.errors import SparsesimError
from hwmodels.roofline import price
from hwmodels.spec import Efficiency, efficiency_from_dict, load_hardware
from simulator.combo import make_combo
from simulator.kernels.decode_attention import decode_layout, fa2_num_splits
from simulator.ops import OpBuilder
from simulator.pricing import decode_ops

REGIMES = DF.resolve(DATA_DIR / "regimes_nvidia-h100-80gb-hbm3_2026-11-22.csv")


def test_fa2_split_rule_reproduces_the_measured_kernel_splits():
    """Our Triton kernel used FlashAttention-2's rule on the GPU (its split count is in the CSV): the model's
    vectorized rule gives the same count for every measured decode / verification shape."""
    df = pd.read_csv(REGIMES)
    t = df[(df.kernel == "triton_splitkv") & df.splits.notna() & df.family.isin(["decode_attn", "verify_attn"])]
    assert len(t) > 150
    G = t.heads / t.kv_heads
    bhm = t.batch * t.kv_heads * np.ceil(t.q_rows * G / 64)
    s = fa2_num_splits(bhm.to_numpy(), 2 * 132, np.ceil(t.context / 128).to_numpy())
    # the kernel rounds its chunk up to 64-key tiles: the launched count is ceil(T / ceil(T / S / 64) / 64 ...)
    chunk = np.ceil(t.context / s / 64) * 64
    launched = np.ceil(t.context / chunk)
    assert (launched == t.splits).all()


def test_fa2_rule_by_hand():
    # 8 CTAs on 264 slots, 8 blocks of 128 keys: no wave reaches 0.8 x 264, every split count up to 8 is
    # eligible only where ceil(8 / s) changes: s = 1, 2, 3, 4, 8; efficiencies 8s/264 -> the best is s = 8
    # (0.242), 0.85 x 0.242 = 0.206 > 7/264 ... so s = 8
    assert fa2_num_splits(8, 264, 8)[()] == 8
    assert fa2_num_splits(256, 264, 64)[()] == 1    # 256 >= 0.8 x 264: one split
    assert fa2_num_splits(1, 264, 8192)[()] == 110  # the best wave efficiency within 0.85 at the fewest splits


def test_family_layouts():
    # flex (measured): one CTA chain per (batch, KV head), no split; memeff: one CTA per query head, Hq streams
    kind, ctas, splits, iters, streams, _ = decode_layout("flex", 1, 1, 8, 1, 65536, 132)
    assert kind == "attn_flex" and splits == 1 and iters == 65536 / 64 and ctas == 1
    kind, ctas, splits, iters, streams, _ = decode_layout("memeff", 2, 1, 32, 8, 4096, 132)
    assert ctas == 64 and streams == 32 and iters == 4096 / 128   # 64 x 128 tiles (measured kernel name, round 3)
    # cuDNN: one query row splits like FA2, several rows run one CTA per query head without a split
    _, ctas1, s1, _, st1, _ = decode_layout("cudnn", 1, 1, 32, 8, 32768, 132)
    _, ctas4, s4, _, st4, _ = decode_layout("cudnn", 1, 4, 32, 8, 32768, 132)
    assert s1 > 1 and st1 == 8 and s4 == 1 and ctas4 == 32 and st4 == 32


def _one_op(n_ctas, iters, nbytes, kind="attn_triton"):
    b = OpBuilder(len(n_ctas))
    b.add("attention", kind, bytes_read=nbytes, parallel_units=n_ctas, serial_iters=iters, dtype="bf16")
    return b.build()


def test_wave_model_chain_tail_and_fp8():
    hw = load_hardware("H100-SXM")
    eff = Efficiency(cta_slots={"attn_triton": 2.0}, iter_s={"attn_triton": 1e-6},
                     cta_fixed_s={"attn_triton": 2e-6}, fixed_s={"attn_triton": 0.0})
    hw = hw.with_efficiency(eff)
    # one CTA, 1000 iterations, few bytes: a 1 ms chain (+ one wave's 2 us) whatever the bytes
    t = price(_one_op(np.array([1.0, 1.0]), np.array([1000.0, 1000.0]), np.array([1e6, 0.5e6])), hw, "graph")
    assert t[0] == pytest.approx(1000e-6 + 2e-6 + hw.launch_graph_s)
    assert t[1] == pytest.approx(t[0])   # fp8 K/V: half the bytes, the same chain
    # 264 slots: 264 CTAs are one wave, 265 two (the tail costs a whole chain)
    t = price(_one_op(np.array([264.0, 265.0]), np.array([10.0, 10.0]), np.array([1e3, 1e3])), hw, "graph")
    assert t[0] == pytest.approx(10e-6 + 2e-6 + hw.launch_graph_s, rel=1e-5)   # + a 0.3 ns pipeline fill
    assert t[1] == pytest.approx(2 * (10e-6 + 2e-6) + hw.launch_graph_s, rel=1e-5)
    # many bytes: bandwidth-bound (3.35 TB/s x memory 1.0), plus the pipeline fill: one wave of one-iteration CTAs
    # pays its 1 us chain on top of the 1 ms of bytes (min(body, chain) / (waves x iterations) = 1 us)
    t = price(_one_op(np.array([264.0]), np.array([1.0]), np.array([3.35e9])), hw, "graph")
    assert t[0] == pytest.approx(1e-3 + 1e-6 + 2e-6 + hw.launch_graph_s, rel=1e-6)
    # ... which a long chain spreads: 100 iterations of 1 us (a 100 us chain) against 1 ms of bytes -> the fill is
    # one iteration's share of the shorter term, 100 us / 100 = 1 us
    t = price(_one_op(np.array([264.0]), np.array([100.0]), np.array([3.35e9])), hw, "graph")
    assert t[0] == pytest.approx(1e-3 + 100e-6 / 100 + 2e-6 + hw.launch_graph_s, rel=1e-6)
    # 1000 iterations of 1 us against 1 ms of bytes (chain == body): the fill is 1 ms / 1000
    t = price(_one_op(np.array([264.0]), np.array([1000.0]), np.array([3.35e9])), hw, "graph")
    assert t[0] == pytest.approx(1e-3 + 1e-3 / 1000 + 2e-6 + hw.launch_graph_s, rel=1e-6)


def test_efficiency_file_reads_the_wave_terms():
    e = efficiency_from_dict({"cta_slots": {"attn_fa2": 2}, "iter_us": {"attn_fa2": 0.5},
                              "cta_fixed_us": {"attn_fa2": 4}}, "x.yaml")
    assert e.cta_slots["attn_fa2"] == 2 and e.iter_s["attn_fa2"] == pytest.approx(5e-7)
    with pytest.raises(SparsesimError, match="cta_slots"):
        efficiency_from_dict({"cta_slots": {"attn_fa2": 0}}, "x.yaml")
    with pytest.raises(SparsesimError, match="iter_us"):
        efficiency_from_dict({"iter_us": {"nope": 1}}, "x.yaml")


def test_hf_kernel_structure():
    """kernels: hf prices the measured HF module structure: per layer 7 GEMMs, 2 x 8 RMSNorm kernels, 12 rope /
    cache-update kernels, 2 residual adds, 2 MLP activation kernels, 3 mask kernels, plus the attention (cuBLAS's
    5 split-K reduces are inside the priced GEMMs, not ops of their own: the gemm kind is fitted to whole calls);
    per step 115 small kernels, the final norm (8), embedding, LM head and sampling."""
    c = make_combo("H100-SXM", "Llama-3.1-8B", kernels="hf", attention={"dense": {"kernel": "cudnn"}})
    ops, _ = decode_ops(c, np.array([64.0]), np.array([1024.0]))   # cuDNN at 64 x 8 CTAs: one split
    f = ops.to_frame()
    per = lambda name: float(f[f.name == name]["count"].sum())  # noqa: E731
    assert per("attn_norm") == 8 * 32 and per("qkv_proj") == 3 * 32 and per("mlp_gate_up") == 2 * 32
    assert per("rope_kv_write") == 12 * 32 and per("hf_splitk_reduce") == 0 and per("hf_step_misc") == 115
    per_layer = 7 + 16 + 12 + 2 + 2 + 3 + 1      # + the attention kernel (one split: no combine)
    assert f["count"].sum() == per_layer * 32 + 115 + 8 + 3   # embedding, lm_head, sampling
    # the split GEMMs carry the fused GEMM's bytes in total
    fused = make_combo("H100-SXM", "Llama-3.1-8B", attention={"dense": {"kernel": "cudnn"}})
    g, _ = decode_ops(fused, np.array([64.0]), np.array([1024.0]))
    g = g.to_frame()
    tot = lambda fr, n: float((fr[fr.name == n]["bytes_read"] * fr[fr.name == n]["count"]).sum())  # noqa: E731
    assert tot(f, "qkv_proj") == pytest.approx(tot(g, "qkv_proj"))


def test_fp8_gemm_path():
    """fp8 weights: a per-token activation quantization kernel before each GEMM (1 fused, 8 eager), and the GEMM
    reads 1-byte activations."""
    for kernels, n_quant in (("fused", 1), ("unfused", 8)):
        c = make_combo("H100-SXM", "Llama-3.1-8B", weight_dtype="fp8", kernels=kernels)
        f = decode_ops(c, np.array([16.0]), np.array([1024.0]))[0].to_frame()
        q = f[f.name == "act_quant"]
        assert q["count"].sum() == n_quant * 4 * 32   # qkv, o, gate_up, down per layer
        o = f[f.name == "o_proj"].iloc[0]
        assert o["dtype"] == "fp8" and o["bytes_read"] == pytest.approx(4096 * 4096 * (1 + 4 / 16384) + 16 * 4096)


def test_torch_topk_dispatch_and_indexer_ctas():
    from simulator.strategies.dsa import add_indexer_logits
    from simulator.strategies.topk import torch_topk_dispatch_ops

    b = OpBuilder(3)
    torch_topk_dispatch_ops(b, np.array([8.0, 1.0, 512.0]), np.array([1048576.0, 4096.0, 4096.0]), 4.0, 2048, None)
    f = b.build().to_frame()
    # 8 x 1M: the multi-block path (measured cost, not a sort); 1 x 4K: one block per row; 512 x 4K: multi-block
    assert set(f[f.setting == 0].name) >= {"topk_count", "topk_gather"} and "topk_sort_pass" not in set(f.name)
    assert "topk_single_block" in set(f[f.setting == 1].name) and "topk_count" in set(f[f.setting == 2].name)
    b = OpBuilder(2)
    add_indexer_logits(b, np.array([1.0, 4.0]), 1.0, np.array([2048.0, 131072.0]), 64, 128, "fp8", 1.0)
    f = b.build().to_frame()
    assert list(f.parallel_units) == [32.0, 4 * 2048.0] and (f.kind == "indexer").all()


def test_regime_fit_refuses_data_it_does_not_describe(tmp_path):
    from dataclasses import replace

    from hwmodels.spec import load_efficiency
    from simulator.calibration import checks as C
    from simulator.calibration import fit_regimes as FR

    df = FR.load(REGIMES)
    df = df[df.family.isin(["decode_attn"]) & (df.kernel == "efficient")].reset_index(drop=True)
    df.attrs["file"] = "x.csv"
    hw = FR.hw_for(df, None)
    base = load_efficiency("H100-SXM")
    hw = replace(hw, launch_graph_s=base.launch_graph_s)
    eff, meta = FR.fit(df, hw, base)
    ev = FR.evaluate(df, hw, eff, base)
    assert "attn_memeff" in FR.check_result(eff, meta, ev, "x.csv")[0]
    # the same rows with held-out times x 3 are refused (the fit rows alone cannot see it)
    bad = df.copy()
    hold = FR.held_out(bad)
    bad.loc[hold, "median_us"] *= 3.0
    eff, meta = FR.fit(bad, hw, base)
    with pytest.raises(C.CalibrationError, match="misses its bound"):
        FR.check_result(eff, meta, FR.evaluate(bad, hw, eff, base), "x.csv")


# --- round 2 (issue 15): measured split rules and occupancy, combine kernels, eager kinds, fp8 paths ---------------
GRIDS = DF.resolve(DATA_DIR / "regimes_grids_nvidia-h100-80gb-hbm3_2026-11-22_v3.csv")


def test_cudnn_split_rule_reproduces_every_measured_launch_grid():
    """cuDNN's decode split count (its launch grid's x, torch.profiler) equals cudnn_num_splits for all 27 one-row
    shapes; by hand: B Hkv = 8 at T = 4096 -> 2 x 132 / 8 = 33 -> 32; T = 1024 -> 1024 / 128 = 8; T = 512 -> 4 < 8 -> 1;
    B Hkv = 64 -> 264 / 64 = 4.1 -> 4 < 8 -> 1; B Hkv = 2 -> 128, capped at 64."""
    from simulator.kernels.decode_attention import cudnn_num_splits

    assert list(cudnn_num_splits([8, 8, 8, 64, 2], [4096, 1024, 512, 4096, 1 << 20], 132)) == [32, 8, 1, 1, 64]
    g = pd.read_csv(GRIDS)
    d = g[(g.family == "decode_grid") & (g.kernel == "cudnn") & (g.q_rows == 1)
          & g.kernel_name.str.startswith("cudnn_generated")]
    assert len(d) >= 25
    s = cudnn_num_splits((d.batch * d.kv_heads).to_numpy(), d.context.to_numpy(), 132)
    assert (s == d.grid_x.to_numpy()).all()


def test_combine_layouts_match_the_measured_grids():
    """FlashAttention-2's combine: ceil(B Hq / 4) CTAs walking S splits; cuDNN's lean_reduction: B Hq CTAs,
    ceil(S / 4) loads; ours: B Hq programs, one load."""
    from simulator.kernels.decode_attention import combine_layout

    c, it = combine_layout("fa2", 1, 1, 32, 8)
    assert c == 8 and it == 8
    c, it = combine_layout("cudnn", 2, 1, 32, 64)
    assert c == 64 and it == 16
    c, it = combine_layout("triton_splitkv", 2, 1, 32, 64)
    assert c == 64 and it == 1
    g = pd.read_csv(GRIDS)
    f = g[(g.family == "decode_grid") & g.kernel_name.str.contains("flash_fwd_splitkv_combine")]
    assert len(f) >= 15
    ctas, _ = combine_layout("fa2", f.batch.to_numpy(), f.q_rows.to_numpy(), f.heads.to_numpy(), 2.0)
    assert (ctas == f.grid_x.to_numpy()).all()


def test_occupancy_from_registers_and_shared_memory():
    """CTAs per SM by hand (64 K registers in 256-register warp units, 228 KB shared memory + 1 KB per CTA):
    cuDNN decode 183 regs x 128 threads: 23 x 256 x 4 = 23552 -> 2; 86336 + 1024 B -> 2. Our Triton kernel 80 regs
    -> 6, 71680 + 1024 -> 3. cuBLASLt rowwise fp8: 168 x 384 -> 1, 214260 B -> 1."""
    from simulator.calibration.fit_regimes import load_grids, measured_slots, occupancy

    smem = 228 * 1024
    assert list(occupancy([183, 80, 168], [86336, 71680, 214260], [128, 128, 384], smem)) == [2, 3, 1]
    slots = measured_slots(load_grids(GRIDS), load_hardware("H100-SXM"))
    assert {k: v for k, (v, _) in slots.items() if k in ("attn_cudnn", "attn_fa2", "attn_triton", "attn_memeff",
                                                        "attn_cudnn_rows", "gemm_fp8_rowwise")} == \
        {"attn_cudnn": 2, "attn_fa2": 2, "attn_triton": 3, "attn_memeff": 2, "attn_cudnn_rows": 1,
         "gemm_fp8_rowwise": 1}


def _attn_frame(kernel, B, q, T, heads=32, kv_heads=8, kv_dtype="bf16"):
    c = make_combo("H100-SXM", "Llama-3.1-8B", kv_dtype=kv_dtype, attention={"dense": {"kernel": kernel}})
    return decode_ops(c, np.array([float(B)]), np.array([float(T)]))[0].to_frame()


def test_family_combine_kinds_and_memeff_streams():
    f = _attn_frame("fa2", 1, 1, 32768)
    comb = f[f.name == "attention_combine"].iloc[0]
    # FA2 at B = 1, 8 KV heads, 256 key blocks: split count from its rule; 32 query heads / 4 = 8 CTAs
    assert comb.kind == "attn_combine_fa2" and comb.parallel_units == 8
    assert comb.serial_iters == f[f.name == "attention"].iloc[0].bytes_written / (32 * 129 * 4)
    f = _attn_frame("cudnn", 1, 1, 4096)
    assert f[f.name == "attention_combine"].iloc[0].kind == "attn_combine_cudnn"
    assert f[f.name == "attention"].iloc[0].parallel_units == 8 * 32   # B Hkv x S = 8 x 32
    # memeff: no GQA, every query head's K/V is its own memory: the re-reads get no L2 credit (infinite working set)
    f = _attn_frame("memeff", 1, 1, 4096)
    a = f[f.name == "attention"].iloc[0]
    assert a.reread_bytes == pytest.approx(4096 * 2 * 24 * 128 * 2) and np.isinf(a.working_set)


def test_fp8_kv_is_its_own_kernel_kind():
    """fp8 K/V: our Triton kernel compiled for fp8 is another kernel (kind attn_triton_fp8kv: its own resident CTAs,
    iteration and bandwidth); the bf16 cache keeps attn_triton; the layout (CTAs, iterations) is the same."""
    bf = _attn_frame("triton_splitkv", 8, 1, 65536).query("name == 'attention'").iloc[0]
    f8 = _attn_frame("triton_splitkv", 8, 1, 65536, kv_dtype="fp8").query("name == 'attention'").iloc[0]
    assert bf.kind == "attn_triton" and f8.kind == "attn_triton_fp8kv"
    assert f8.serial_iters == bf.serial_iters and f8.parallel_units == bf.parallel_units
    assert f8.bytes_read < 0.6 * bf.bytes_read
    hw = load_hardware("H100-SXM")
    assert hw.efficiency.cta_slots["attn_triton_fp8kv"] == 4   # 128 registers, 38 KB shared memory (measured)


def test_quantization_kernels():
    """Fused: one kind-quant kernel, one CTA per row, 2 x ceil(k / 1024) serial blocks, its second pass from L2;
    eager: the 8 measured kernels with their kinds (abs, amax, 3 tiny, x / scale converting, clamp, to fp8)."""
    from simulator.layers import act_quant

    b = OpBuilder(1)
    act_quant(b, np.array([16.0]), 4096.0, 1.0, kernels=1)
    f = b.build().to_frame()
    assert list(f.kind) == ["quant"] and f.serial_iters[0] == 8 and f.reread_bytes[0] == 16 * 4096 * 2
    b = OpBuilder(1)
    act_quant(b, np.array([16.0]), 4096.0, 1.0, kernels=8)
    f = b.build().to_frame()
    assert f["count"].sum() == 8
    assert list(f.kind) == ["elementwise", "reduce_max", "elementwise", "cast", "elementwise", "elementwise"]


def test_hf_norm_and_rope_kernel_kinds():
    c = make_combo("H100-SXM", "Llama-3.1-8B", kernels="hf", attention={"dense": {"kernel": "cudnn"}})
    f = decode_ops(c, np.array([8.0]), np.array([1024.0]))[0].to_frame()
    n = f[f.name == "attn_norm"].groupby("kind")["count"].sum()
    # per layer: 1 up-cast, 1 mean, 2 broadcast products (8 rows: the weight product broadcasts too), 4 vectorized
    assert dict(n) == {"cast": 32, "reduce": 32, "copy_strided": 64, "elementwise": 128}
    r = f[f.name == "rope_kv_write"].groupby("kind")["count"].sum()
    assert dict(r) == {"copy_strided": 10 * 32, "elementwise": 2 * 32}


def test_indexer_key_bytes():
    from simulator.strategies.dsa import add_indexer_logits

    b = OpBuilder(2)
    add_indexer_logits(b, np.array([1.0, 1.0]), 1.0, np.array([2048.0, 2048.0]), 64, 128, "bf16", 1.0,
                       key_bytes=np.array([128.0, 256.0]))
    f = b.build().to_frame()
    assert f.bytes_read[1] - f.bytes_read[0] == 2048 * 128 and (f.dtype == "bf16").all()


def test_regimes_loader_merges_passes(tmp_path):
    from simulator.calibration.fit_regimes import load

    base = pd.read_csv(REGIMES, nrows=1)
    rows = []
    for p, t in ((0, 4.0), (1, 30.0), (2, 5.0)):
        r = base.iloc[0].to_dict()
        r.update(family="decode_attn", kernel="cudnn", timing="graph", corner="short", median_us=t, **{"pass": p})
        rows.append(r)
    pth = tmp_path / "r.csv"
    pd.DataFrame(rows).to_csv(pth, index=False)
    df = load(pth)
    assert len(df) == 1 and df.median_us[0] == 5.0 and df.passes[0] == 3   # the median of 4, 30, 5


def test_topk_has_one_owner():
    from simulator.calibration import fit as F
    from simulator.calibration import fit_regimes as FR

    assert "topk" not in F.FIT_ORDER and "topk" in FR.FIT_ORDER


# --- round 3 (issue 15): v4 timing, torch's reductions, the L2 bandwidth, FA2's re-reads, small CTAs ---------------
GRIDS4 = DF.resolve(DATA_DIR / "regimes_grids_nvidia-h100-80gb-hbm3_2026-11-22_v4.csv")
REGIMES4 = DF.resolve(DATA_DIR / "regimes_nvidia-h100-80gb-hbm3_2026-11-22_v4.csv")


def test_torch_reduce_layout_reproduces_every_measured_launch():
    """Reduce.cuh's setReduceConfig for a last-dim row reduction, by hand: 1 x 4096 -> 1 CTA of 512 threads, 8 values
    a thread (2 loads of 4); 16 x 4096 -> one CTA of 32 x 16 (a warp per row), 128 values (32 loads); 2 x 14336 ->
    the warps split the row (56 values >= 2 x 16): 2 CTAs of 256 x 2; 4096 x 1024 -> 256 CTAs of 32 x 16. Then all 72
    launches of the v4 grid profile (amax bf16 / mean fp32, rows 1-16384, length 1024 / 4096 / 14336)."""
    from simulator.kernels.decode_attention import torch_reduce_layout

    c, t, it = torch_reduce_layout([1, 16, 2, 4096], [4096, 4096, 14336, 1024], 132)
    assert list(c) == [1, 1, 2, 256] and list(t) == [512, 512, 512, 512] and list(it) == [2, 32, 7, 8]
    g = pd.read_csv(GRIDS4)
    r = g[g.family == "reduce_grid"]
    assert len(r) == 72
    c, t, _ = torch_reduce_layout(r.m.to_numpy(), r.n.to_numpy(), 132)
    assert (c == r.grid_x * r.grid_y).all() and (t == r.block_x * r.block_y).all()


def test_reduction_ops_carry_the_layout_and_l2_residency():
    from simulator.layers import act_quant, hf_rmsnorm_ops

    b = OpBuilder(1)
    hf_rmsnorm_ops(b, "n", np.array([16.0]), 4096.0, 1.0, sms=132)
    f = b.build().to_frame()
    red = f[f.kind == "reduce"].iloc[0]
    # mean over [16, 4096] fp32, the pow kernel's output: 1 CTA, 32 loads a thread, read from L2 while it fits
    assert red.parallel_units == 1 and red.serial_iters == 32 and red.reread_bytes == red.bytes_read == 16 * 4096 * 4
    b = OpBuilder(1)
    act_quant(b, np.array([16.0]), 4096.0, 1.0, kernels=8)   # no SM count: no layout (continuous pricing)
    assert b.build().to_frame().query("kind == 'reduce_max'").parallel_units.iloc[0] == 0   # amax: round 6


def test_l2_bandwidth_is_measured_and_bounds_l2_hits():
    """x.sum() over L2-resident buffers of 4-40 MiB: the slope is the L2 bandwidth (5.6 TB/s on the H100, vs
    3.1 TB/s from HBM); an op whose re-reads all hit still moves every byte through the L2 at that rate."""
    from simulator.calibration import fit_regimes as FR

    df = FR.load(REGIMES4)
    tbs, how = FR.measured_l2_bw(df, FR.hw_for(df, None))
    assert 5.0 < tbs < 6.5 and "L2-resident" in how
    hw = load_hardware("H100-SXM")
    assert hw.efficiency.l2_bw_bytes_s == pytest.approx(tbs * 1e12, rel=1e-3)
    # 40 MB once from HBM and re-read 3 times from L2 (working set 40 MB < 50 MB): 160 MB through the L2. The floor
    # belongs to the wave model (kernels with a calibrated occupancy, full-chip streaming like the measurement) ...
    eff = dict(cta_slots={"attn_fa2": 2.0}, iter_s={"attn_fa2": 1e-9}, fixed_s={"attn_fa2": 0.0})

    def one(kind, **extra):
        b = OpBuilder(1)
        b.add("a", kind, bytes_read=160e6, reread_bytes=120e6, working_set=40e6, dtype="bf16",
              parallel_units=264.0, serial_iters=1.0)
        return price(b.build(), hw.with_efficiency(Efficiency(**eff, **extra)), "graph")[0] - hw.launch_graph_s

    assert one("attn_fa2", l2_bw_bytes_s=5e12) == pytest.approx(160e6 / 5e12, rel=1e-3)   # not 40 MB / 3.35 TB/s
    assert one("attn_fa2") == pytest.approx(40e6 / hw.hbm_bw_bytes_s, rel=1e-3)            # uncalibrated: hits free
    # ... not to kernels priced without an occupancy (one CTA's L2 rate is not the chip's: topk_cta fits its own)
    assert one("attention", l2_bw_bytes_s=5e12) == pytest.approx(one("attention"))
    # an absolute rate does not transfer to a chip that borrows the H100's efficiencies
    assert load_hardware("A100-80GB").efficiency.l2_bw_bytes_s is None
    assert "borrowed" in load_hardware("A100-80GB").efficiency.source


def test_iteration_from_l2_and_serial_cta_time():
    hw = load_hardware("H100-SXM")
    eff = Efficiency(cta_slots={"reduce": 4.0}, iter_s={"reduce": 0.4e-6}, iter_l2_s={"reduce": 0.2e-6},
                     fixed_s={"reduce": 0.0}, cta_serial_s={"reduce": 1e-6})
    b = OpBuilder(2)
    b.add("r", "reduce", bytes_read=np.array([1e3, 1e3]), reread_bytes=np.array([0.0, 1e3]),
          working_set=np.array([1e3, 1e3]), parallel_units=np.array([264.0, 264.0]), serial_iters=10.0, dtype="fp32")
    t = price(b.build(), hw.with_efficiency(eff), "graph") - hw.launch_graph_s
    # 264 CTAs on 132 SMs: 2 per SM x 1 us serial; 10 iterations of 0.4 us (HBM) or 0.2 us (L2)
    assert t[0] == pytest.approx(10 * 0.4e-6 + 2e-6, rel=1e-3) and t[1] == pytest.approx(10 * 0.2e-6 + 2e-6, rel=1e-3)


def test_streaming_rereads_hit_all_or_nothing():
    """A plain-PyTorch streaming kernel (elementwise / cast / copy_strided / reduce) re-reading what the kernel before it
    wrote hits L2 entirely when the working set fits and not at all when it does not (LRU scan; MEASURED: a resident
    x.sum() over >= 48 MiB of the 50 MiB L2 takes the HBM time, regimes_*_v4.csv l2_bw); the other kinds keep the
    resident share (min(1, L2 / working set))."""
    hw = load_hardware("H100-SXM")
    eff = Efficiency(fixed_s={"elementwise": 0.0, "gemm": 0.0})
    L2 = float(hw.l2_bytes)

    def t(kind, ws):
        b = OpBuilder(1)
        b.add("a", kind, bytes_read=2.0 * ws, reread_bytes=ws, working_set=ws, dtype="fp32")
        return price(b.build(), hw.with_efficiency(eff), "graph")[0] - hw.launch_graph_s

    bw = hw.hbm_bw_bytes_s
    assert t("elementwise", 0.5 * L2) == pytest.approx(0.5 * L2 / bw, rel=1e-6)      # fits: the re-read is free
    assert t("elementwise", 2.0 * L2) == pytest.approx(4.0 * L2 / bw, rel=1e-6)      # does not: all from HBM
    assert t("gemm", 2.0 * L2) == pytest.approx(3.0 * L2 / bw, rel=1e-6)             # resident share: half hits
    # the fp8-KV dequantization's scale kernel at B=8, T=8192, 8 KV heads (134 MB of bf16): no L2 credit
    from simulator.calibration import fit_regimes as FR

    df = pd.DataFrame([dict(family="fp8kv_attn", corner="fp8kv", kernel="dequant+cudnn", timing="graph", dtype="fp8",
                            batch=8.0, heads=32.0, kv_heads=8.0, head_dim=128.0, context=8192.0, q_rows=1.0)])
    for c in FR.NUMERIC:
        df[c] = df.get(c, np.nan)
    for c in ("note",):
        df[c] = ""
    ops = FR.build(df, "after", 132)
    names = np.asarray(ops.names, dtype=object)[ops.name_id]
    sc = names == "kv_dequant_scale"
    pr = price(ops, hw, "graph", detail=True)
    e = 8 * 8 * 8192 * 128
    assert pr.memory_s[sc][0] == pytest.approx(2.0 * 4.0 * e / (bw * hw.efficiency.memory["elementwise"]), rel=1e-6)


def test_fa2_several_rows_reuse_the_group_only_when_split():
    """FlashAttention-2 with several query rows: a split launch re-reads the group's K/V from L2 (working set = the
    groups' tiles in flight), an unsplit one not at all (infinite working set): measured, regimes_*_v4.csv."""
    from simulator.kernels.decode_attention import reread_working_set

    ws = reread_working_set("fa2", 4, 8, 8192, 128, 2.0, splits=np.array([2.0, 1.0]))
    assert ws[0] == 4 * 8 * 2 * 128 * 128 * 2 and np.isinf(ws[1])


def test_v4_campaign_fixes_the_graph_timing():
    """v1-v3 timed a graph replay from an idle GPU: the host's launch (~14 us for one node) was in every sample. v4
    spins the GPU first: one tiny node then costs ~3 us, and 1000 of them ~1 us each (measure.py: 1.008 us)."""
    df = pd.read_csv(REGIMES4)
    assert (df.script_version == 4).all()
    rep = df[df.family == "launch"].set_index(["kernel", "n_kernels"])["median_us"]
    assert rep[("graph_replay_nospin", 1.0)] - rep[("graph_replay_spin", 1.0)] > 8.0
    node = df[(df.family == "launch") & (df.kernel == "graph_node_1elem")].iloc[0]
    assert node.median_us == pytest.approx(1.0, abs=0.1) and node.calls > 500


def test_round3_ownership():
    from simulator.calibration import fit_regimes as FR

    assert FR.FIT_ORDER[:3] == ("reduce", "reduce_max", "eager") and "attn_triton_fp8kv" in FR.FIT_ORDER
    assert FR.SCALARS == ("l2_bw_tbs",) and "iter_l2_us" in FR.WAVE_PARTS and "cta_serial_us" in FR.WAVE_PARTS


def test_hf_step_is_re_timed_after_a_long_spin(tmp_path):
    """Round 5: the v4 HF step rows included the host's launch of a ~1,750-node graph (150-us spin); the loader takes
    the times measure_graph_chains.py took after spins of >= 2 ms (their mean), keeps the old ones, ignores short
    spins, and leaves the other rows alone."""
    from simulator.calibration import fit_regimes as FR

    df = FR.load(REGIMES4)
    hf = df[(df.family == "hf_step") & (df.timing == "graph")]
    assert len(hf) == 6 and hf["median_us_v4"].notna().all() and (hf["median_us"] < hf["median_us_v4"]).all()
    assert df.attrs["hf_step_remeasured"].startswith("graph_chains_")
    copy = tmp_path / REGIMES4.name          # alone in its folder: nothing re-timed
    copy.write_bytes(REGIMES4.read_bytes())
    alone = FR.load(copy)
    assert "hf_step_remeasured" not in alone.attrs and "repeat_kv_grid" not in alone.attrs
    assert len(df) > len(alone)   # the repeat_kv grid rows (round 7) come after the CSV's rows, only with chains beside
    df = df.iloc[: len(alone)]
    other = (df.family != "hf_step") & (df.kernel != "quant_eager")    # (quant_eager: round 6, its own test)
    assert (df[other]["median_us"].to_numpy() == alone[other]["median_us"].to_numpy()).all()
    # a chains CSV beside the copy: the >= 2000-us spins are averaged, 150 us ignored
    pd.DataFrame({"chain": ["hf_llama8b_B1_T512:spin150", "hf_llama8b_B1_T512:spin2000",
                            "hf_llama8b_B1_T512:spin20000"], "graph_us": [900.0, 100.0, 120.0]}).to_csv(
        tmp_path / "graph_chains_nvidia-h100-80gb-hbm3_2099-01-01_v2.csv", index=False)
    d2 = FR.load(copy)
    row = d2[(d2.family == "hf_step") & (d2.timing == "graph") & (d2.batch == 1) & (d2.context == 512)].iloc[0]
    assert row.median_us == pytest.approx(110.0)
    other = d2[(d2.family == "hf_step") & (d2.timing == "graph") & (d2.context == 2048) & (d2.batch == 1)].iloc[0]
    assert np.isnan(other.median_us_v4)     # no re-timed row for it: its v4 time stays


def test_eager_quantization_rows_take_their_in_step_time(tmp_path):
    """Round 6: the eager fp8 quantization rows are compared with their in-step time (measure_graph_chains.py v5
    quant_step, beside the CSV); the micro-benchmark time stays in median_us_warm; a K not re-timed keeps its time."""
    from simulator.calibration import fit_regimes as FR

    df = FR.load(REGIMES4)
    q = df[(df.kernel == "quant_eager") & (df.timing == "graph")]
    done = q[q.median_us_warm.notna()]
    assert set(done.k) == {4096.0, 8192.0} and (q[q.k == 14336].median_us_warm.isna()).all()
    assert (done.median_us >= 0.9 * done.median_us_warm).all() and df.attrs["quant_in_step"].startswith("graph_chains_")
    copy = tmp_path / REGIMES4.name
    copy.write_bytes(REGIMES4.read_bytes())
    alone = FR.load(copy)
    assert "quant_in_step" not in alone.attrs
    pd.DataFrame({"chain": ["quant_step:K8192:M4", "hf_llama8b_B1_T512:spin2000"], "graph_us": [99.0, 100.0]}).to_csv(
        tmp_path / "graph_chains_nvidia-h100-80gb-hbm3_2099-01-01_v5.csv", index=False)
    d2 = FR.load(copy)
    r = d2[(d2.kernel == "quant_eager") & (d2.timing == "graph") & (d2.k == 8192) & (d2.m == 4)].iloc[0]
    assert r.median_us == 99.0 and r.median_us_warm == pytest.approx(15.785) and "in-step" in r.note
    other = d2[(d2.kernel == "quant_eager") & (d2.timing == "graph") & (d2.k == 8192) & (d2.m == 1)].iloc[0]
    assert np.isnan(other.median_us_warm)
    keep = ~d2.family.isin(["hf_step"]).to_numpy() & (d2.kernel != "quant_eager").to_numpy()
    assert (d2.median_us.to_numpy()[keep] == alone.median_us.to_numpy()[keep]).all()


def test_fp8_tensorwise_gemm_has_its_own_kind_and_split_k_reduce():
    """Round 5: per-tensor fp8 GEMMs are kind gemm_fp8; cuBLASLt's split-K reduce is one more kernel where the fit
    shapes showed it (K 14336 at M <= 24; never at K 4096)."""
    from simulator.layers import SPLITK_MAX_ROWS, SPLITK_MIN_K, fp8_gemm
    from simulator.precision import FP8_GEMM_KIND

    assert FP8_GEMM_KIND == "gemm_fp8" and 4096 < SPLITK_MIN_K < 14336 and 24 < SPLITK_MAX_ROWS < 32
    rows = np.array([1.0, 24.0, 32.0, 1.0])
    for k, n, split in ((14336.0, 4096.0, [1, 1, 0, 1]), (4096.0, 1024.0, [0, 0, 0, 0])):
        b = OpBuilder(len(rows))
        fp8_gemm(b, "down", rows, k, n, 1.0, 1.0)
        f = b.build().to_frame()
        assert (f.kind == "gemm_fp8").sum() == 4
        red = f[f.kind == "elementwise"].groupby("setting")["count"].sum().reindex(range(4), fill_value=0.0)
        assert list(red.to_numpy()) == split


def test_beyond_32bit_indexing_rows_are_checked_not_fitted():
    """repeat_kv at T 262144 writes 2^31 bytes: PyTorch runs it as several 32-bit-indexable kernels; it is not a fit
    row of the eager kinds."""
    from simulator.calibration import fit_regimes as FR

    df = FR.load(REGIMES4)
    big = FR.beyond_32bit_indexing(df)
    assert big.sum() == 1 and df[big].iloc[0].kernel == "repeat_kv" and df[big].iloc[0].context == 262144
    assert not (FR.fit_sets(df)["eager"][0] & big).any()


def test_roofline_refuses_an_l2_credit_larger_than_the_bytes_read():
    """A builder that credits more L2 re-reads than its op reads would get a negative memory term: the roofline
    stops with the kind and row instead of pricing a kernel faster than free (hwmodels.roofline)."""
    hw = load_hardware("H100-SXM")
    ok, bad = OpBuilder(2), OpBuilder(2)
    ok.add("k", "elementwise", bytes_read=np.array([4e6, 4e6]), reread_bytes=np.array([4e6, 2e6]),
           working_set=np.array([8e6, 8e6]))
    assert (price(ok.build(), hw) > 0).all()
    bad.add("k", "elementwise", bytes_read=np.array([4e6, 4e6]), reread_bytes=np.array([1e6, 5e6]),
            working_set=np.array([8e6, 8e6]))
    with pytest.raises(SparsesimError, match=r"1 op row\(s\) of kind elementwise re-read more.*rows \[1\]"):
        price(bad.build(), hw)


def test_settings_subset_prices_its_ops_as_the_whole_table_does():
    """OpTable.settings_subset keeps the ops of the chosen settings, renumbered in order, and the roofline prices each
    of them exactly as in the whole table (what lets a fit price only the settings it judges)."""
    hw = load_hardware("H100-SXM")
    b = OpBuilder(3)
    b.add("a", "elementwise", bytes_read=np.array([1e6, 2e6, 3e6]), parallel_units=np.array([10.0, 200.0, 500.0]))
    b.add("g", "gemm", flops=np.array([1e9, 2e9, 4e9]), bytes_read=1e6, where=np.array([True, False, True]),
          parallel_units=64.0)
    ops = b.build()
    keep = np.array([True, False, True])
    sub = ops.settings_subset(keep)
    assert sub.n_settings == 2 and sorted(set(sub.setting.tolist())) == [0, 1] and len(sub) == 4
    assert np.array_equal(price(sub, hw), price(ops, hw)[keep[ops.setting]])
    assert np.array_equal(np.bincount(sub.setting, weights=price(sub, hw)),
                          np.bincount(ops.setting, weights=price(ops, hw))[keep])
