"""SN40L-16 node: interconnect assumption, attention DP16 mapping, fused spatially pipelined kernels, the
static-graph alternatives, the range rule of the prefill overhead, the SnapStream reproduction."""
import numpy as np
import pytest

from hwmodels.spec import load_hardware
from simulator.combo import make_combo as make
from simulator.figures.snapstream import compiled_batch, decode_step_s, fused_s, prefill_overhead_pct, routed_only
from simulator.ops import OpBuilder
from simulator.planner import combo_refusal
from simulator.pricing import decode_ops

SEP = {"dense": {"mla_cache": "separate_kv"}}


def test_interconnect_is_an_explicit_assumption():
    for name in ("SN40L", "SN40L-16"):
        h = load_hardware(name)
        assert h.link_bw_bytes_s == 100e9 and h.link_latency_s == 3e-6
        assert {"interconnect.bandwidth_gbps", "interconnect.latency_us"} <= h.assumed
        assert "ASSUMPTION" in h.sources["interconnect.bandwidth_gbps"]
    assert combo_refusal(make("SN40L-16", "DeepSeek-R1", tp=16, attn_dp=16)) is None


def test_compiled_batches():
    assert compiled_batch(33) == 32 and compiled_batch(31) == 16 and compiled_batch(15) == 0
    assert compiled_batch(541) == 512 and compiled_batch(256) == 256


def test_pipelined_fused_kernel_is_max_of_summed_resources():
    """Two ops in one fused kernel: a memory-bound GEMM and a collective. Pipelined = max(compute, HBM, link)
    summed over the members + one call; sequential = the members' device times summed + one call."""
    hw = load_hardware("SN40L-16")
    b = OpBuilder(1)
    b.add("g", "gemm", flops=1e9, bytes_read=1.6e9 * 0.01, dtype="bf16", count=1.0)     # ~10 ms of HBM
    b.add("ar", "collective", bytes_read=1e8, devices=16, count=1.0)                   # ~2.5 ms of link
    ops = b.build()
    from hwmodels.roofline import price

    pr = price(ops, hw, "graph", detail=True)
    pipe = fused_s(ops, hw, {"k": (("g", "ar"), 1.0)}, "pipelined")["k"][0]
    seq = fused_s(ops, hw, {"k": (("g", "ar"), 1.0)}, "sequential")["k"][0]
    assert pipe == pytest.approx(max(pr.memory_s[0], pr.compute_s[0], pr.memory_s[1]) + hw.launch_graph_s)
    assert seq == pytest.approx((pr.time_s - pr.launch_s).sum() + hw.launch_graph_s)
    assert pipe < seq                                   # the link time hides under the HBM time


def test_static_graph_reads_every_expert():
    """The SN40L's compiled static graph (a dataflow device run as a graph) streams every expert each step
    (simulator.layers.streams_all_experts, SnapStream sec. 2.3 / 4.2); a GPU reads the experts its tokens touch."""
    from simulator.layers import expected_distinct_experts, streams_all_experts

    c = make("SN40L-16", "DeepSeek-R1", tp=16, attn_dp=16)
    assert streams_all_experts(c) and not streams_all_experts(make("H100-SXM", "DeepSeek-R1", tp=8))
    B = np.array([16.0])
    ops, _ = decode_ops(c, B, np.array([131072.0]))
    routed = routed_only(ops, c, B)
    names = np.asarray(ops.names, dtype=object)[ops.name_id]
    sel = names == "moe_experts_down"
    # 16 tokens x top-8 of 256 experts touch 256 (1 - (1 - 8/256)^16) = 101.7 distinct experts; the static graph
    # reads all 256: (256 - 101.7) x 7168 x (2048 / 16) fp8 bytes more per down projection
    touched = expected_distinct_experts(256, 8, 16.0)
    assert float(touched) == pytest.approx(256 * (1 - (1 - 8 / 256) ** 16))
    extra = (256 - touched) * 7168 * 2048 / 16 * c.wbytes
    assert (ops.bytes_read[sel] - routed.bytes_read[sel])[0] == pytest.approx(extra)
    # a bigger batch touches more experts: the routed step grows more than the static one
    grow_routed = decode_step_s(c, 256, 8192.0, experts="routed")[0] / decode_step_s(c, 16, 131072.0, experts="routed")[0]
    grow_static = decode_step_s(c, 256, 8192.0)[0] / decode_step_s(c, 16, 131072.0)[0]
    assert grow_static < grow_routed


def test_attention_dp_splits_kv_by_batch():
    c = make("SN40L-16", "DeepSeek-R1", tp=16, attn_dp=16)
    assert c.kv_fraction_dev == pytest.approx(1 / 16)


def test_separate_kv_mla_cache_layout():
    """(576 + 512) x 2 bytes x 61 layers = 132,736 bytes per token, against 70,272 for the shared latent."""
    from simulator import memory

    split = make("SN40L-16", "DeepSeek-R1", attention=SEP, tp=16, attn_dp=16)
    shared = make("SN40L-16", "DeepSeek-R1", tp=16, attn_dp=16)
    assert memory.kv_bytes_per_sequence(split, np.array([1.0]))[0] * 16 == pytest.approx(132_736, rel=1e-3)
    assert memory.kv_bytes_per_sequence(shared, np.array([1.0]))[0] * 16 == pytest.approx(70_272, rel=1e-3)
    # 128K x 132,736 B = 17.4 GB per sequence: one per socket fits beside 42 GB of fp8 weights in 0.9 x 64 GiB
    assert 16 <= memory.max_batch(split, np.array([131072.0]))[0] < 32


def test_prefill_overhead_grows_with_the_observation_window():
    full = make("SN40L-16", "DeepSeek-R1", attention=SEP, tp=16, attn_dp=16)
    snap = [make("SN40L-16", "DeepSeek-R1", attention=SEP, tp=16, attn_dp=16,
                 kv_policy={"snapstream": {"budget_tokens": 32768, "window": w}}) for w in (32, 4096)]
    o32, o4k = (prefill_overhead_pct(full, s, 131072.0) for s in snap)
    assert 0 < o32 < o4k
    assert o4k / o32 > 5                  # the recompute is linear in the window (Eq. 3)


def test_range_rows_are_missed_below_the_range():
    """The document's '2-5 %' is a range: a simulated 0.2 % is a miss, 3 % within (framework lower / upper)."""
    from simulator.figures.framework import PaperValues, Quantity, evaluate

    pv = PaperValues("t", {"values": {"o": {"value": 5, "lower": 2, "upper": 5, "ref": "r"}}}, "t.yaml")
    rep = evaluate("t", "t", [Quantity("low", lambda: 0.2, paper="o"), Quantity("mid", lambda: 3.0, paper="o"),
                              Quantity("high", lambda: 5.5, paper="o")], pv, draw_figures=False)
    assert [r["status"] for r in rep.rows] == ["fails", "holds", "fails"]
    assert {r["class"] for r in rep.rows} == {"bound"}                                 # judged, not counted
    assert "range 2-5" in rep.rows[0]["note"]


def test_snapstream_reproduction_rows():
    from simulator.figures import run_reproduction
    from simulator.scenario import load_scenario

    rep = run_reproduction("snapstream_sn40l", load_scenario("snapstream_sn40l"))
    df = rep.frame()
    assert set(df.kind) >= {"reproduction", "identity", "not_reproducible", "prediction"}
    assert df.set_index("quantity").loc["MTP tokens per forward (the paper's multiplier)", "kind"] == "identity"
    gain = df[df.quantity == "Table 5 throughput gain, 128k"].iloc[0]
    assert "routed experts only" in gain.alternatives and "sequential" in gain.alternatives
    assert gain["class"] == "check"                                     # the ratio of two counted rows
    t4 = df[df.quantity.str.contains("SnapKV Compression")].iloc[0]
    assert "window 4096" in t4.sensitivity
    assert rep.summary_line().startswith("snapstream_sn40l:")
