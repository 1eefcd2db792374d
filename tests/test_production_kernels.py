"""Production kernels modelled from their sources: pass counts of the engines' top-k on score distributions, DeepGEMM's
block-GEMM layout choice, and the fitted H100 terms reproducing the committed held-out accuracy."""
import numpy as np
import pandas as pd

from simulator.kernels import gemm_fp8 as G
from simulator.kernels import topk_production as P


def test_sglang_short_row_is_a_copy_and_long_rows_sweep_twice():
    rng = np.random.default_rng(0)
    assert P.sglang_row(rng.standard_normal(2048).astype(np.float32))["sweeps"] == 0
    st = P.sglang_row(rng.standard_normal(65536).astype(np.float32))
    assert st["sweeps"] == 2 and 1 <= st["rounds"] <= 4
    # every refinement round gathers at most the staged candidates, and the first at most the shared-memory cap
    assert 0 < st["gathers"] <= st["rounds"] * P.SGL_CAND_CAP


def test_sglang_candidates_follow_the_distribution():
    """A narrow distribution puts more values in the threshold bin of the fp16 key's top byte than a wide one."""
    rng = np.random.default_rng(1)
    wide = P.sglang_row((rng.standard_normal(262144) * 100).astype(np.float32))["candidates0"]
    narrow = P.sglang_row(rng.random(262144).astype(np.float32))["candidates0"]
    assert narrow > 4 * wide


def test_trtllm_steps_depend_on_the_scores():
    rng = np.random.default_rng(2)
    assert P.trtllm_row(rng.standard_normal(16384).astype(np.float32))["steps"] == 1
    u = P.trtllm_row(rng.random(1 << 18).astype(np.float32))
    assert u["steps"] >= 2 and u["sweeps"] == 2 * u["steps"]


def test_trtllm_split_work_dispatch():
    from simulator.kernels import topk_trtllm as TK

    nb = TK.blocks_per_row(np.array([1, 1, 16, 16, 128]), np.array([16384, 1 << 20, 100000, 300000, 1 << 20]))
    assert list(nb) == [1.0, 32.0, 1.0, 10.0, 1.0]


def test_deepgemm_layout_is_legal():
    for m, n, k in ((1, 6144, 4096), (4096, 7168, 2048), (64, 24576, 1536)):
        bm, bn, cl = G.block_layout(m, n, k, 132)
        assert bm in (16, 32, 64, 128, 256) and bn % 16 == 0 and bn <= 192 and cl in (1, 2)
        assert not (bm > 128 and bn > 128)


def test_fitted_topk_terms_price_the_measurements():
    from hwmodels.spec import load_hardware
    from simulator.calibration import fit_production_topk_gemm as F

    hw = load_hardware("H100-SXM")
    df = F.load(F.DATA_DIR / "production_kernels_nvidia-h100-80gb-hbm3_2026-11-26.csv")
    t = F.topk_frame(df[(df["family"] == "topk") & (df["n"] <= 65536)])
    err = np.abs(F.predict_topk_us(t, hw, hw.efficiency) / t["median_us"].to_numpy() - 1.0)
    assert np.median(err) < 0.25


def test_custom_allreduce_beats_the_ring_at_decode_sizes():
    from hwmodels.roofline import price
    from hwmodels.spec import load_hardware
    from simulator.kernels import allreduce as A
    from simulator.ops import OpBuilder

    assert list(A.choose("vllm", 8, [16384, 1 << 20, 16 << 20])) == ["oneshot", "twoshot", "nccl"]
    # TensorRT-LLM (SM 90 table, TP4, fusion NONE, hidden 4096): 4 tokens one-shot, 64 two-shot, 1024 tokens (8 MiB,
    # above the 8 MB workspace) NCCL
    assert list(A.choose("trtllm", 4, [1 << 15, 1 << 19, 8 << 20], hidden=4096)) == ["oneshot", "twoshot", "nccl"]
    hw = load_hardware("B200")
    t = {}
    for eng in ("nccl", "vllm"):
        b = OpBuilder(1)
        A.add_allreduce(b, "ar", eng, 16384.0, 8, 1.0)
        t[eng] = price(b.build(), hw, "graph").sum()
    assert t["vllm"] < t["nccl"] / 3


def test_deepgemm_indexer_schedule():
    from simulator.kernels import indexer as X

    ctas, chain = X.paged_chain(1, 131072, 132)
    assert ctas == 132 and chain == 4          # 512 splits over 132 SMs
    ctas, chain = X.paged_chain(1, 4096, 132)
    assert ctas == 16 and chain == 1
    nq, per = X.prefill_chain(8192, 64, 132)
    assert nq == 4096 and per > 4096 * 16 / 132 / 2


def test_allreduce_fit_sees_only_its_sizes_and_matches_the_committed_terms():
    """The committed H100 all-reduce terms are what fit() gives on the committed 2- and 4-rank campaigns, and rows
    outside FIT_SIZES (held out) do not move them: scaling every held-out time by 3 leaves the fitted terms unchanged."""
    from hwmodels.spec import load_hardware
    from simulator.calibration import fit_production_allreduce as A

    hw = load_hardware("H100-SXM")
    df = A.campaign()
    assert sorted(df["world"].unique()) == [2, 4]
    got = A.fit(df, hw)
    held = ~df["bytes"].isin(A.FIT_SIZES)
    moved = A.fit(df.assign(median_us=np.where(held, 3.0 * df["median_us"], df["median_us"])), hw)
    for kind, t in got.items():
        for term in ("fixed_us", "link_eff", "sync_us", "link_ceiling"):
            assert moved[kind].get(term) == t.get(term)
        assert abs(hw.efficiency.fixed_s[kind] * 1e6 - t["fixed_us"]) < 1e-3
        assert abs(hw.efficiency.memory[kind] - t["link_eff"]) < 1e-3
        assert abs(hw.efficiency.sync_s[kind] * 1e6 - t["sync_us"]) < 1e-3
        if kind in A.CUSTOM_KINDS:
            assert abs(hw.efficiency.link_ceiling[kind] - t["link_ceiling"]) < 1e-3
    # the 2-rank rows alone cannot separate the per-peer / per-step terms: they are left out, and the custom kinds'
    # fixed time and one-peer rate come out as the committed ones (the 4-rank terms do not change 2-rank prices)
    two = A.fit(A.campaign((2,)), hw)
    assert "sync_us" not in two["allreduce_1shot"] and "link_ceiling" not in two["allreduce_2shot"]
    for kind in A.CUSTOM_KINDS:
        assert abs(two[kind]["fixed_us"] - got[kind]["fixed_us"]) < 0.05
        assert abs(two[kind]["link_eff"] - got[kind]["link_eff"]) < 0.01
    # the ring at a decode-size message is device time (~12 us measured at 2 ranks), and grows with the ring's steps
    q = pd.DataFrame({"impl": ["nccl_graph"] * 2, "world": [2, 4], "bytes": [16384] * 2})
    p2, p4 = A.predict_us(q, hw)
    assert 10.0 < p2 < 16.0 and 2.0 < p4 - p2 < 5.0


def test_custom_allreduce_barriers_and_link_ceiling():
    """roofline: a custom all-reduce's barrier grows by sync[kind] per peer beyond the first; its transfer is the
    larger of every peer's traffic at the link ceiling and one peer's at memory[kind]; without those terms the old
    form stands ((g-1) x bytes at memory[kind], barriers at the spec's link latency)."""
    import pytest

    from hwmodels.roofline import price
    from hwmodels.spec import efficiency_from_dict, load_hardware
    from simulator.ops import OpBuilder

    hw = load_hardware("H100-SXM")
    B, lat, S = hw.link_bw_bytes_s, hw.link_latency_s, 8e6

    def t(eff, kind, g, nbytes=S):
        b = OpBuilder(1)
        b.add("ar", kind, bytes_read=nbytes, dtype="bf16", devices=g)
        return price(b.build(), hw.with_efficiency(eff), "graph")[0] - hw.launch_graph_s

    plain = efficiency_from_dict({"memory": {"allreduce_1shot": 0.5, "allreduce_2shot": 0.5}}, "t")
    assert t(plain, "allreduce_1shot", 4) == pytest.approx(3 * S / (0.5 * B) + 2 * lat)
    # the engines' two-shot kernels have two barriers (no end barrier), TensorRT-LLM's Lamport one-shot none: only
    # the data's own arrival, one link latency; it takes the pull one-shot's terms
    assert t(plain, "allreduce_2shot", 4) == pytest.approx(1.5 * S / (0.5 * B) + 2 * lat)
    assert t(plain, "allreduce_1shot_lamport", 4) == pytest.approx(3 * S / (0.5 * B) + lat)
    eff = efficiency_from_dict({"memory": {"allreduce_1shot": 0.5, "allreduce_2shot": 0.5},
                                "link_ceiling": {"allreduce_1shot": 0.7, "allreduce_2shot": 0.6},
                                "sync_us": {"allreduce_1shot": 1.0, "allreduce_2shot": 2.0}}, "t")
    # 2 ranks: one peer, no extra barrier time, the one-peer rate binds (the 2-rank fit is untouched)
    assert t(eff, "allreduce_1shot", 2) == pytest.approx(t(plain, "allreduce_1shot", 2))
    assert t(eff, "allreduce_2shot", 2) == pytest.approx(t(plain, "allreduce_2shot", 2))
    # 4 ranks: the ceiling binds the transfer, two further peers per barrier
    assert t(eff, "allreduce_1shot", 4) == pytest.approx(3 * S / (0.7 * B) + 2 * (lat + 2e-6))
    assert t(eff, "allreduce_2shot", 4) == pytest.approx(1.5 * S / (0.6 * B) + 2 * (lat + 4e-6))
    assert t(eff, "allreduce_1shot_lamport", 4, 4096) == pytest.approx(
        t(eff, "allreduce_1shot", 4, 4096) - (lat + 2e-6))
    with pytest.raises(Exception, match="link_ceiling"):
        efficiency_from_dict({"link_ceiling": {"allreduce_1shot": 0.0}}, "t")


def test_engine_profiles_carry_their_allreduce_and_the_tp_layers_use_it():
    import pytest

    from hwmodels.opkinds import KINDS
    from simulator.combo import make_combo
    from simulator.engine.runtime import ProfileError, load_profile, parse_profile
    from simulator.pricing import decode_ops

    assert [load_profile(n).allreduce for n in ("vllm-v1", "sglang", "trtllm", "hf-cb")] == \
        ["vllm", "sglang", "trtllm", None]
    c = make_combo("H100-SXM", "Llama-3.1-70B", tp=8, attention="dense")
    assert c.allreduce == "nccl" and load_profile("hf-cb").apply_collectives(c) is c
    cv = load_profile("vllm-v1").apply_collectives(c)
    assert cv.allreduce == "vllm"

    def kinds(combo, batch):
        ops, _ = decode_ops(combo, np.array([batch]), np.array([4096.0]))
        return {KINDS[k] for k in np.unique(ops.kind)}
    assert "collective" in kinds(c, 8.0) and not {"allreduce_1shot", "allreduce_2shot"} & kinds(c, 8.0)
    assert "allreduce_1shot" in kinds(cv, 8.0) and "collective" not in kinds(cv, 8.0)
    ct = load_profile("trtllm").apply_collectives(c)
    assert "allreduce_1shot_lamport" in kinds(ct, 8.0) and "allreduce_1shot" not in kinds(ct, 8.0)
    # 1024 rows x 8192 hidden x 2 B = 16 MiB: above vLLM's 8 MiB cap, NCCL again
    assert "collective" in kinds(cv, 1024.0)
    with pytest.raises(ProfileError, match="runtime.allreduce"):
        parse_profile({"engine": "x", "runtime": {"allreduce": {"value": "gloo", "source": {"repo": "r"}}}}, "p.yaml")


def test_dsa_indexer_deepgemm_schedule_in_the_step():
    """DeepGEMM's paged logits at one query row: once the 256-key items outnumber the SMs the chain (items per SM)
    grows with the context; `measured` keeps the project's kernel (kind indexer)."""
    from hwmodels.opkinds import KIND_CODE
    from simulator.combo import make_combo
    from simulator.pricing import decode_ops

    c = make_combo("H100-SXM", "DeepSeek-V3.2-Exp", tp=8, attention="dsa", topk="radix")
    ops, _ = decode_ops(c, np.ones(3), np.array([16384.0, 131072.0, 262144.0]))
    ix = ops.kind == KIND_CODE["indexer_dg_cold"]   # the default: each layer's keys come from HBM (indexer_keys)
    sel = ix & (ops.parallel_units <= 132)
    assert sel.sum() == 3
    assert list(ops.serial_iters[sel]) == [1.0, 4.0, 8.0]
    warm = make_combo("H100-SXM", "DeepSeek-V3.2-Exp", tp=8, attention={"dsa": {"indexer_keys": "warm"}},
                      topk="radix")
    ops3, _ = decode_ops(warm, np.ones(1), np.array([16384.0]))
    assert (ops3.kind == KIND_CODE["indexer_dg"]).sum() == 1 and (ops3.kind == KIND_CODE["indexer_dg_cold"]).sum() == 0
    old = make_combo("H100-SXM", "DeepSeek-V3.2-Exp", tp=8, attention={"dsa": {"indexer_kernel": "measured"}},
                     topk="radix")
    ops2, _ = decode_ops(old, np.ones(1), np.array([16384.0]))
    assert (ops2.kind == KIND_CODE["indexer"]).sum() == 1


def test_topk_sweeps_hit_l2_by_reuse_distance():
    """SWEEP_REREAD: the first sweep hits while the whole score tensor fits in L2, the later sweeps while the rows in
    flight fit (far inside / past the edge of the measured hit curve: all or nothing there)."""
    from hwmodels.roofline import price
    from hwmodels.spec import load_hardware
    from simulator.kernels import topk_production as P
    from simulator.ops import OpBuilder

    hw = load_hardware("H100-SXM")
    cases = [(1024, 4096), (1024, 16384), (256, 1 << 20)]   # 16 MB fits; 64 MB with 8.6 MB in flight; 554 MB in flight
    b = OpBuilder(len(cases))
    P.add_topk_ops(b, "sglang", np.array([c[0] for c in cases], float), np.array([c[1] for c in cases], float), 2048.0,
                   2.0, 0.0)
    ops = b.build()
    mem = price(ops, hw, "graph", detail=True).memory_s
    bw = hw.hbm_bw_bytes_s * hw.efficiency.memory["topk_sglang"]
    hbm = mem * bw
    written = np.array([r * 2048 * 4.0 for r, _ in cases])
    one_sweep = np.array([r * n * 4.0 for r, n in cases])
    assert np.allclose(hbm - written, [0.0, one_sweep[1], 2 * one_sweep[2]], rtol=0.02, atol=1e4)


def test_sweep_hit_curve_interpolates_the_measured_edge():
    """sweep_hit: the device's measured curve per reuse pattern, linear between its points, held at its ends; the
    all-or-nothing step when uncalibrated. The H100's committed curves are partial across the edge, non-increasing,
    and the in-kernel re-sweep pattern fades earlier than the re-read tensor."""
    from dataclasses import replace

    from hwmodels.roofline import sweep_hit
    from hwmodels.spec import Efficiency, load_hardware

    x = np.array([0.1, 0.8, 0.85, 0.9, 1.0, 2.0])
    assert list(sweep_hit(Efficiency(), "first", x)) == [1.0, 1.0, 1.0, 1.0, 1.0, 0.0]
    e = replace(Efficiency(), l2_sweep_hit={"first": ((0.8, 0.9), (1.0, 0.0))})
    assert np.allclose(sweep_hit(e, "first", x), [1.0, 1.0, 0.5, 0.0, 0.0, 0.0])
    assert list(sweep_hit(e, "again", x)) == [1.0, 1.0, 1.0, 1.0, 1.0, 0.0]   # no curve for that pattern: the step
    hw = load_hardware("H100-SXM")
    grid = np.linspace(0.3, 2.0, 60)
    for pat in ("first", "again"):
        h = sweep_hit(hw.efficiency, pat, grid)
        assert h[0] == 1.0 and h[-1] == 0.0 and np.all(np.diff(h) <= 0)
    assert 0.2 < sweep_hit(hw.efficiency, "first", 0.84) < 0.8          # 42 MiB of a 50 MiB L2: partial
    assert sweep_hit(hw.efficiency, "again", 0.8) < sweep_hit(hw.efficiency, "first", 0.8)


def test_sweep_hit_curve_is_validated_and_fitted_from_times():
    """A malformed l2_sweep_hit is refused naming its field; the hit share implied by all-hit / all-miss times is
    recovered exactly from synthetic re-sweep times."""
    import pytest

    from hwmodels.errors import SparsesimError
    from hwmodels.spec import efficiency_from_dict
    from simulator.calibration import fit_l2_sweep_hit as F

    ok = efficiency_from_dict({"l2_sweep_hit": {"first": {"set_over_l2": [0.8, 0.9], "hit": [1, 0]}, "source": "x"}}, "f")
    assert ok.l2_sweep_hit["first"] == ((0.8, 0.9), (1.0, 0.0))
    for bad in ({"first": {"set_over_l2": [0.9, 0.8], "hit": [1, 0]}}, {"first": {"set_over_l2": [0.8, 0.9],
                                                                                 "hit": [1, 1.5]}},
                {"later": {"set_over_l2": [0.8, 0.9], "hit": [1, 0]}}, {"first": [1, 0]}):
        with pytest.raises(SparsesimError, match="l2_sweep_hit"):
            efficiency_from_dict({"l2_sweep_hit": bad}, "f")
    mib = np.array([8, 16, 20, 40, 44, 80, 96, 128], float) * F.MiB
    hit_true = np.array([1, 1, 1, 0.7, 0.25, 0, 0, 0])
    per_hit, per_miss = mib * 1e-7, mib * 4e-7            # us per re-sweep from L2 / HBM, linear in the set
    one = 3.0 + per_miss                                  # the first sweep streams from HBM
    three = one + 2 * (hit_true * per_hit + (1 - hit_true) * per_miss)
    c = F.again_from_resweeps(mib, one, three, 50 * F.MiB)
    assert np.allclose(c["hit"], hit_true, atol=1e-9)
    doc = F.curve_doc({"again": c.assign(hit=[1, 1, 1, 0.7, 0.8, 0, 0, 0])}, "synthetic")
    assert doc["again"]["hit"] == [1.0, 1.0, 0.7, 0.7, 0.0, 0.0]   # 0.3-2.0 of the L2 kept, made non-increasing


def test_sglang_loop_rounds_per_sweep():
    """SGLang's histogram sweep keeps 4 loads in flight per thread, its emit sweep 1 (SGL_LOADS_IN_FLIGHT); a gather
    iteration costs SGL_GATHER_ROUNDS load rounds; the barrier phases (1 + rounds) go in sync_steps."""
    from simulator.kernels import topk_production as P
    from simulator.ops import OpBuilder

    b = OpBuilder(1)
    P.add_topk_ops(b, "sglang", 1.0, 65536.0, 2048.0, 2.0, 3000.0, gather_iters=4.0, rounds=3.0)
    ops = b.build()
    assert float(ops.serial_iters[0]) == 65536 / 4096 + 65536 / 1024 + P.SGL_GATHER_ROUNDS * 4.0
    assert float(ops.sync_steps[0]) == 4.0
    assert ops.l1_iters is None or float(ops.l1_iters[0]) == 0.0   # a 256 KiB row does not stay in the CTA's L1 (SGL_L1_BYTES)


def test_sglang_histogram_remainder_rounds_and_l1_gathers():
    """The histogram sweep's remainder loop runs (trips mod 4) single loads before the 4x unrolled body
    (SGL_HIST_UNROLL): 3 trips wait 3 rounds, 4 trips 1, 14 trips 3 + 2; a row within the CTA's L1 gathers its
    candidates from there at the derived L1 iteration (iter_l2 less the L2 latency plus an L1 hit's)."""
    from simulator.kernels import topk_production as P
    from simulator.ops import OpBuilder

    assert list(P.sglang_histogram_rounds([2560, 4096, 14336, 65536])) == [3.0, 1.0, 5.0, 16.0]
    b = OpBuilder(1)
    P.add_topk_ops(b, "sglang", 8.0, 2560.0, 2048.0, 2.0, 3000.0, gather_iters=4.0, rounds=3.0)
    ops = b.build()
    assert float(ops.serial_iters[0]) == 3 + 3 + P.SGL_GATHER_ROUNDS * 4.0
    assert float(ops.l1_iters[0]) == P.SGL_GATHER_ROUNDS * 4.0
    assert float(ops.bytes_read[0]) == 8 * 2 * 2560 * 4.0   # the gathers come from the L1: no L2 / HBM bytes
    assert P.sglang_iter_l1_us(0.3, 0.143) == 0.3 - 0.143 + P.SGL_L1_LATENCY_US


def test_sample_count_and_fitted_l1_iteration():
    """Short rows get up to SAMPLE_ROWS_MAX sampled rows for the slowest-row statistics, long rows at least
    SAMPLE_ROWS; the committed L1 gather iteration is the derived one, not a fitted term."""
    from hwmodels.spec import load_hardware
    from simulator.calibration import fit_production_topk_gemm as F
    from simulator.kernels import topk_production as P

    assert F.sample_count(4096) == F.SAMPLE_ROWS_MAX and F.sample_count(1 << 20) == F.SAMPLE_ROWS
    e = load_hardware("H100-SXM").efficiency
    want = P.sglang_iter_l1_us(e.iter_l2_s["topk_sglang"] * 1e6, e.l2_latency_s * 1e6)
    assert abs(e.iter_l1_s["topk_sglang"] * 1e6 - want) < 1e-3


def test_topk_blind3_set_predicted_before_measuring_and_measured_the_same_list():
    """The third blind set: committed predictions of every model cover BLIND3_TOPK, the campaign script measures the
    same list, and no row length repeats an earlier grid's."""
    import ast
    from pathlib import Path

    from simulator.calibration import fit_production_topk_gemm as F

    pr = F.pd.read_csv(F.DATA_DIR / F.BLIND3_PREDICTION, keep_default_na=False)
    assert len(pr) == len(F.BLIND3_TOPK) == len(set(F.BLIND3_TOPK)) == 94
    assert all(pr[c].gt(0).all() for c in F.BLIND3_MODELS)
    assert set(zip(pr["dist"], pr["rows"], pr["n"])) == set(F.BLIND3_TOPK)
    src = (Path(__file__).resolve().parents[1] / "lab" / "kernels" / "measure_production_kernels.py").read_text()
    node = next(n for n in ast.parse(src).body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") ==
                "BLIND3_TOPK")
    assert eval(compile(ast.Expression(node.value), "BLIND3_TOPK", "eval"), {"BLIND3_SHORT": F.BLIND3_SHORT}) == \
        F.BLIND3_TOPK
    earlier = ({n for _, _, n in F.BLIND_TOPK} | {n for _, _, n in F.FRESH_TOPK} | {n for _, _, n in F.BLIND2_TOPK}
               | {4096, 16384, 65536, 262144, 1048576})
    assert not earlier & {n for _, _, n in F.BLIND3_TOPK}
    assert list(F.blind3_regime([1, 64, 256, 2048, 16, 512], [2200, 9500, 4500, 6000, 500000, 30000])) == [
        "short rows, decode 1-16", "short rows, decode 32-132", "short rows, decode 200-256",
        "short rows, prefill 512-4096", "long rows, decode 1-100", "long rows, prefill"]


def test_sglang_gather_loops_count_per_round():
    """Each refinement round runs its own gather loop, ceil(candidates / 1024) iterations, and the first sweep's
    threshold bin is gathered in round 0: a row whose threshold bin holds 1500 values gathers >= 2 iterations."""
    from simulator.kernels import topk_production as P

    rng = np.random.default_rng(3)
    x = rng.standard_normal(1 << 16).astype(np.float32)
    st = P.sglang_row(x)
    assert st["rounds"] >= 1 and st["gather_iters"] >= np.ceil(st["gathers"] / 1024)
    assert st["gather_iters"] <= st["rounds"] + st["gathers"] / 1024


def test_expected_max_of_rows():
    from simulator.kernels import topk_production as P

    v = [1.0, 2.0, 3.0, 4.0]
    assert P.expected_max(v, 1) == np.mean(v)
    assert P.expected_max(v, 1000) > 3.99
    assert np.mean(v) < P.expected_max(v, 2) < 4.0


def test_sglang_phases_paid_every_wave():
    """CTA_SYNC_PER_WAVE: a launch of 4 waves pays 4x one CTA's barrier phases; 1 wave pays them once."""
    from dataclasses import replace

    from hwmodels.roofline import price
    from hwmodels.spec import load_hardware
    from simulator.kernels import topk_production as P
    from simulator.ops import OpBuilder

    hw = load_hardware("H100-SXM")
    eff = hw.efficiency
    rows = np.array([132.0, 4 * 132.0])

    def t(ph):
        e = replace(eff, sync_s={**eff.sync_s, "topk_sglang": ph})
        b = OpBuilder(2)
        P.add_topk_ops(b, "sglang", rows, 8192.0, 2048.0, 2.0, 1000.0, gather_iters=1.0, rounds=3.0)
        return price(b.build(), hw.with_efficiency(e), "graph")
    d = t(1e-6) - t(0.0)
    assert np.allclose(d, [4e-6, 16e-6], rtol=1e-6)


def test_fresh_predictions_cover_the_fresh_shapes():
    from simulator.calibration import fit_production_topk_gemm as F

    pr = F.pd.read_csv(F.DATA_DIR / "production_kernels_fresh_prediction_2026-11-26.csv")
    assert len(pr) == len(F.FRESH_TOPK) + len(F.FRESH_GEMM) and pr["pred_us"].gt(0).all()


def test_topk_blind_set_predicted_for_every_shape_and_measured_the_same_list():
    """The blind set's committed predictions cover BLIND_TOPK (both models), and the campaign script measures the same
    shape list (it cannot import the package on the device, so the list is written twice)."""
    import ast
    from pathlib import Path

    from simulator.calibration import fit_production_topk_gemm as F

    pr = F.pd.read_csv(F.DATA_DIR / F.BLIND_PREDICTION, keep_default_na=False)
    assert len(pr) == len(F.BLIND_TOPK) == 120
    assert pr["pred_us"].gt(0).all() and pr["pred_1081e97_us"].gt(0).all()
    assert set(zip(pr["dist"], pr["rows"], pr["n"])) == set(F.BLIND_TOPK)
    src = (Path(__file__).resolve().parents[1] / "lab" / "kernels" / "measure_production_kernels.py").read_text()
    node = next(n for n in ast.parse(src).body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "BLIND_TOPK")
    assert eval(compile(ast.Expression(node.value), "BLIND_TOPK", "eval")) == F.BLIND_TOPK_SHAPES


def test_topk_blind2_set_predicted_before_measuring_and_measured_the_same_list():
    """The second blind set: its committed predictions (db3789c, coarse and fine curve, L1 variant) cover BLIND2_TOPK,
    the campaign script measures the same list, and no shape repeats a row length of an earlier grid."""
    import ast
    from pathlib import Path

    from simulator.calibration import fit_production_topk_gemm as F

    pr = F.pd.read_csv(F.DATA_DIR / F.BLIND2_FINE_CURVE, keep_default_na=False)
    assert len(pr) == len(F.BLIND2_TOPK) == 114
    assert all(pr[c].gt(0).all() for c in F.BLIND2_MODELS)
    assert set(zip(pr["dist"], pr["rows"], pr["n"])) == set(F.BLIND2_TOPK)
    src = (Path(__file__).resolve().parents[1] / "lab" / "kernels" / "measure_production_kernels.py").read_text()
    node = next(n for n in ast.parse(src).body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") ==
                "BLIND2_TOPK")
    assert set(eval(compile(ast.Expression(node.value), "BLIND2_TOPK", "eval"))) == {(r, n) for _, r, n in F.BLIND2_TOPK}
    earlier = {n for _, _, n in F.BLIND_TOPK} | {n for _, _, n in F.FRESH_TOPK} | {4096, 16384, 65536, 262144, 1048576}
    assert not earlier & {n for _, _, n in F.BLIND2_TOPK}
    assert list(F.blind2_regime([32, 1200, 8, 3072], [311296, 75776, 2560, 14336])) == [
        "L2 edge, one wave (tensor 38-56 MiB)", "L2 edge, waves (rows in flight 38-57 MiB)", "short rows, decode 1-40",
        "short rows, prefill 1024 / 3072"]


def test_topk_blind_regimes():
    from simulator.calibration import fit_production_topk_gemm as F

    assert list(F.blind_regime([1, 64, 160, 2048, 1536, 4096])) == [
        "decode rows 1-64", "decode rows 1-64", "multi-wave rows 160-2048", "multi-wave rows 160-2048",
        "prefill rows 1536 / 4096", "prefill rows 1536 / 4096"]


def test_trtllm_fusion_grid_and_barrier_flag_stores_follow_the_source():
    """allreduce_fusion_kernel_launcher's grid (hidden / 8 threads per token, clusters of up to 8 CTAs of >= 128
    threads, one cluster per token, at most one CTA per SM) and Barrier::sync's 256 flag slots: ceil(256 / grid)
    release stores per thread, twice per two-shot call, the one per peer the barrier already holds left out."""
    from simulator.kernels.allreduce import trtllm_grid, trtllm_twoshot_flag_steps

    assert trtllm_grid(1, 4096, 4, True, 132) == 4          # 512 threads: 4 CTAs of 128 (cluster 4)
    assert trtllm_grid(1, 8192, 4, True, 132) == 8          # 1024 threads: 8 x 128
    assert trtllm_grid(512, 4096, 4, True, 132) == 132      # CTAs widened to 512 threads, clusters of 1, SM-capped
    assert trtllm_grid(4, 4096, 2, False, 132) == 8         # two-shot: 2 tokens per rank x cluster 4
    assert trtllm_twoshot_flag_steps(4, 4096, 2, 132) == 2 * (32 - 1)
    assert trtllm_twoshot_flag_steps(512, 8192, 4, 132) == 2 * (2 - 1)


def test_engine_allreduce_grid_choice_and_blind_table():
    import pandas as pd
    import pytest

    from hwmodels.spec import load_hardware
    from simulator.calibration import engine_allreduce as EA

    assert EA.vllm_impl(2, 8 << 20) == "vllm_oneshot" and EA.vllm_impl(4, 256 << 10) == "vllm_oneshot"
    assert EA.vllm_impl(4, 512 << 10) == "vllm_twoshot" and EA.vllm_impl(8, 256 << 10) == "vllm_twoshot"
    g = EA.grid()
    two = g[g["impl"].str.endswith("twoshot") & g["impl"].str.startswith("trtllm")]
    assert (two["tokens"] > two["world"]).all() and len(g) == 148
    hw = load_hardware("H100-SXM")
    g["pred_us"] = EA.predict_us(g, hw)
    plain = EA.predict_us(g, hw, flags=False)
    # the flag stores only ever add, and only to TensorRT-LLM's two-shot rows
    assert (g["pred_us"] >= plain - 1e-9).all()
    assert (g["pred_us"] > plain + 1e-6).sum() == len(two)
    # the residual + RMSNorm epilogue costs more than the plain all-reduce at the same size
    k = ["world", "tokens", "hidden"]
    a = g[g["impl"] == "trtllm_ar_oneshot"].set_index(k)["pred_us"]
    n = g[g["impl"] == "trtllm_arnorm_oneshot"].set_index(k)["pred_us"]
    assert (n > a).all()
    meas = g[["impl", "world", "tokens", "hidden"]].assign(median_us=g["pred_us"] / 2.0, note="")
    meas.loc[0, "note"] = "WRONG"
    tab = EA.blind_table(g, meas)
    assert tab.attrs["wrong"] == 1 and tab["median"].to_numpy() == pytest.approx(1.0)
    assert set(pd.unique(tab["regime"].str[2:])) >= {"small (8-64 KiB)", "beyond the cap (16-32 MiB)"}


def test_trtllm_layers_pay_the_twoshot_flag_stores():
    from hwmodels.opkinds import KIND_CODE
    from simulator.combo import make_combo
    from simulator.engine.runtime import load_profile
    from simulator.pricing import decode_ops

    c = load_profile("trtllm").apply_collectives(make_combo("H100-SXM", "Llama-3.1-8B", tp=8, attention="dense"))
    # 8 ranks, 64 rows x hidden 4096 (no norm fusion at hidden <= 4096): the SM 90 table's TP8 / NONE entry is two-shot
    ops, _ = decode_ops(c, np.array([64.0]), np.array([4096.0]))
    m = ops.kind == KIND_CODE["allreduce_2shot"]
    assert m.any() and (ops.sync_steps[m] > 0).all()


def test_engine_allreduce_terms_are_the_fit_and_leave_the_own_kernel():
    """The engines' kernel terms (Efficiency.engine_ar) are what fit_engine_terms gives on the 2 x H100 engine rows
    (and move when those rows do); the engine kinds are priced with them (2 barriers + 1 phase for vLLM's one-shot,
    1 phase for the Lamport one-shot, 2 barriers + 2 phases + flag stores for the two-shot); the project's own
    kernel keeps its grid-wide barriers (link latency) and fixed time."""
    import pytest

    from hwmodels.spec import efficiency_from_dict, load_hardware
    from simulator.calibration import engine_allreduce as E
    from simulator.calibration import fit_production_allreduce as A
    from simulator.kernels.allreduce import trtllm_twoshot_flag_steps

    hw = load_hardware("H100-SXM")
    meas = pd.read_csv(E.DATA_DIR / E.FIT_CSV)
    got = E.fit_engine_terms(meas, A.own_kernel(hw))
    assert got["fit_rows"] == len(meas) == 76
    for k in E.TERMS:
        assert hw.efficiency.engine_ar[f"{k}_s"] * 1e6 == pytest.approx(got[k], abs=1e-3)
    slow = E.fit_engine_terms(meas.assign(median_us=meas["median_us"] + 3.0), A.own_kernel(hw))
    assert slow["phase"] > got["phase"] + 1.0
    e = hw.efficiency.engine_ar
    S = 8192.0
    rows = pd.DataFrame({"impl": ["vllm_oneshot", "trtllm_ar_oneshot", "trtllm_ar_twoshot"], "world": [2, 2, 2],
                         "tokens": [1, 1, 256], "hidden": [4096, 4096, 16], "bytes": [S, S, S]})
    us = E.predict_us(rows, hw)
    data = S / (hw.link_bw_bytes_s * hw.efficiency.memory["allreduce_1shot"]) * 1e6
    assert us[0] == pytest.approx(2 * e["barrier_s"] * 1e6 + e["phase_s"] * 1e6 + data)
    # the 2-rank Lamport one-shot: its share of the phase (grid 17's lamport_phase2) + data (at the device's
    # lamport2_link share of the link: grid 20's rule), less the device's lamport_overlap share of the shorter of phase
    # and data (grid 16's rule)
    rules = hw.efficiency.engine_ar_rules
    ov, lp2 = rules.get("lamport_overlap", 0.0), rules.get("lamport_phase2", 1.0)
    l2 = rules.get("lamport2_link", 0.0)
    data_l = S / (hw.link_bw_bytes_s * (l2 or hw.efficiency.memory["allreduce_1shot"])) * 1e6
    assert us[1] == pytest.approx(lp2 * e["phase_s"] * 1e6 + data_l - ov * min(e["phase_s"] * 1e6, data_l))
    steps = float(trtllm_twoshot_flag_steps(256, 16, 2, hw.units))
    # TensorRT-LLM's 2-rank two-shot: its link bytes at the device's twoshot2_link share of the link (grid 17's rule)
    t2 = rules.get("twoshot2_link", 0.0)
    data2 = S / (hw.link_bw_bytes_s * (t2 or hw.efficiency.memory["allreduce_2shot"])) * 1e6
    assert us[2] == pytest.approx((2 * e["barrier_s"] + 2 * e["phase_s"] + steps * e["flag_store_s"]) * 1e6 + data2)
    # the own kernel: 2 barriers at the link latency + its fitted fixed time, as before the engines' terms existed
    own = A.predict_us(pd.DataFrame({"impl": ["own_oneshot"], "world": [2], "bytes": [S]}), hw)[0]
    assert own == pytest.approx((2 * hw.link_latency_s + hw.efficiency.fixed_s["allreduce_1shot"]) * 1e6 + data)
    with pytest.raises(Exception, match="engine_allreduce_us"):
        efficiency_from_dict({"engine_allreduce_us": {"fixed": 1.0}}, "t")


def test_fp8_gemm_rows_priced_in_graph_and_block_terms_are_the_fit():
    """predict_gemm_us prices every fp8 GEMM as the serving step does (its launches kept: the fitted per-tensor / per-row
    terms and the block refit assume it; the device convention is one launch lower per kernel), and the committed
    gemm_fp8_block terms are fit_block's on DeepGEMM's own fit rows (+ the named ones) with fixed_us pinned."""
    import pytest

    from hwmodels.spec import load_hardware
    from simulator.calibration import fit_production_topk_gemm as F

    hw = load_hardware("H100-SXM")
    g = F.gemm_frame(F.pd.DataFrame([{"family": "gemm", "kernel": k, "dist": "", "rows": m, "n": 6144, "k": 4096}
                                     for k in ("fp8_block", "fp8_rowwise") for m in (64, 1024)]))
    graph = F.predict_gemm_us(g, hw, hw.efficiency)
    dev = F.predict_gemm_us(g, hw, hw.efficiency, launch_convention="device")
    assert graph - dev == pytest.approx(F.np.full(4, hw.launch_graph_s * 1e6))
    # DeepGEMM's own kernel: the 6 FIT_GEMM rows + the named fit rows (the decode-2 grid's 53, the fill7 scans' 32)
    e = hw.efficiency
    k = "gemm_fp8_block"
    # started at the committed terms (the fit's fixed point: least squares stays there; the writer's default start
    # reaches the same terms, slower)
    # the linear unfilled-stage time the terms are fitted under (the kind's sync_us is the fill curve's full fill)
    import hwmodels
    from hwmodels.yamlio import load_yaml

    rec = load_yaml(F.Path(hwmodels.__file__).resolve().parent / "calibration" / "fitted" / "H100-SXM.yaml",
                    "f")["production_kernels"][k]
    start = [e.memory[k], e.cta_fixed_s[k] * 1e6, e.iter_s[k] * 1e6, F.G.RUNTIME_SFB_STEP_LATS,
             rec["unfilled_stage_us"]]
    bk = F.fit_block(F.deepgemm_fit_frame(F.DATA_DIR / F.DEEPGEMM_FIT_CSV), hw, x0=start,
                     fill_x0=[rec["fill_us"], rec["fill_step_ratio"]])
    assert bk["fit_rows"] == 6 + 53 + 32
    assert bk["fixed_us"] == F.BLOCK_FIXED_US == e.fixed_s["gemm_fp8_block"] * 1e6
    assert e.iter_s["gemm_fp8_block"] * 1e6 == pytest.approx(bk["iter_us"], rel=2e-3)
    assert e.cta_fixed_s["gemm_fp8_block"] * 1e6 == pytest.approx(bk["cta_fixed_us"], rel=2e-3)
    assert e.compute["gemm_fp8_block"] == pytest.approx(bk["compute"], rel=2e-3)
    assert rec["unfilled_stage_us"] == pytest.approx(bk["unfilled_stage_us"], rel=2e-3)
    # the fill curve (gemm_fp8.FILL_CURVE) on the fill7 rows only: sync_us is its full fill, the ratio the module's
    assert bk["fill_curve_fit_rows"] == 32
    assert e.sync_s["gemm_fp8_block"] * 1e6 == pytest.approx(bk["fill_us"], rel=2e-3)
    assert F.G.FILL_STEP_RATIO == pytest.approx(bk["fill_step_ratio"], rel=2e-3)


def test_blind5_set_predicted_before_measuring_on_new_shapes():
    """The fifth fp8 GEMM set: its committed predictions (main and in-graph) cover blind5_shapes, the measurement has
    the same shapes, and none of them is in an earlier campaign's CSV."""
    from simulator.calibration import fit_production_topk_gemm as F

    want = set(F.blind5_shapes())
    assert len(want) == 99
    pr = F.pd.read_csv(F.DATA_DIR / F.BLIND5_PREDICTION, keep_default_na=False)
    assert pr["pred_us"].gt(0).all() and pr["pred_main_us"].gt(0).all()
    assert set(zip(pr["kernel"], pr["rows"], pr["k"], pr["n"])) == want
    me = F.pd.read_csv(F.DATA_DIR / F.BLIND5_MEASURED)
    assert set(zip(me["kernel"], me["rows"], me["k"], me["n"])) == want
    earlier = set()
    for f in F.DATA_DIR.glob("production_kernels_nvidia*.csv"):
        if f.name != F.BLIND5_MEASURED and "_h200gemm" not in f.name:   # (the H200 re-run of this set, afterwards)
            d = F.pd.read_csv(f)
            d = d[d["family"] == "gemm"]
            earlier |= set(zip(d["kernel"], d["rows"].astype(int), d["k"].astype(int), d["n"].astype(int)))
    assert not want & earlier
    t = F.blind5_accuracy()
    assert len(t) == 9 and t["n"].sum() == 99
