"""attention: nsa — branch sizes, per-branch bytes/FLOPs by hand, verification loading, schedules, spill."""
from dataclasses import replace

import numpy as np
import pytest

from hwmodels.roofline import price, spill_passes
from hwmodels.spec import load_hardware
from simulator import memory
from simulator.ops import OpBuilder
from simulator.planner import combo_refusal
from simulator.pricing import decode_ops, price_combo
from simulator.strategies.base import parse_axis
from tests.conftest import make_combo

PCIE = "H100-PCIe"


def mk(att="nsa", spec="none", vk="none", sch="none", model="Llama-3.1-8B", tp=1):
    c = make_combo(hw=PCIE, model=model, tp=tp)
    kw = {}
    for ax, v in (("attention", att), ("speculation", spec), ("verify_kernel", vk), ("schedule", sch)):
        [s] = parse_axis(ax, [v])
        kw[ax] = s
    return replace(c, **kw)


def frame(c, B=1.0, T=65536.0):
    ops, plan = decode_ops(c, np.array([B]), np.array([T]))
    return ops.to_frame().set_index("name"), plan


def test_sizes_follow_nsa_defaults():
    a = mk().attention
    assert (a.block, a.stride, a.select_block, a.top_n, a.window) == (32, 16, 64, 16, 512)
    Nc, Nsel, S, W, n = (float(x[0]) for x in a.sizes(np.array([65536.0])))
    # Nc = floor((65536 - 32) / 16) + 1 = 4095; 1024 selection blocks; n l' = 16 * 64 = 1024; w = 512
    assert (Nc, Nsel, S, W, n) == (4095, 1024, 1024, 512, 16)
    Nc, Nsel, S, W, n = (float(x[0]) for x in a.sizes(np.array([100.0])))
    assert (Nc, Nsel, S, W, n) == (5, 2, 100, 100, 2)   # floor(68 / 16) + 1; ceil(100/64); capped by T
    assert float(a.sizes(np.array([20.0]))[0][0]) == 0  # shorter than one compression block


def test_branch_table_by_hand():
    # Llama-3.1-8B on one GPU: 8 KV heads, G = 4 query heads each, d = 128 (e = dk + dv = 256), bf16 KV
    t = mk().attention.branch_table(mk(), 1, 65536)
    assert t["route"]["kv_bytes"] == 8 * 4095 * 128 * 2             # compressed keys only
    assert t["route"]["flops"] == 8 * 4 * 4095 * (2 * 128 + 5)      # QK + softmax/head-sum
    assert t["route"]["writes"] == 8 * (1024 * 4 + 16 * 4)          # fp32 block scores + int32 indices
    assert t["compression"]["kv_bytes"] == 8 * 4095 * 256 * 2 == 16_773_120
    assert t["compression"]["flops"] == 8 * 2 * 4 * 4095 * 256
    assert t["selection"]["kv_bytes"] == 8 * 1024 * 256 * 2 == 4_194_304
    assert t["window"]["kv_bytes"] == 8 * 512 * 256 * 2
    assert t["window"]["writes"] == 8 * 4 * 129 * 4                 # fp32 partial o (128) + lse per head
    # per_query verification with 5 rows loads every branch 5 times
    t5 = mk(spec="eagle3", vk="per_query").attention.branch_table(mk(spec="eagle3", vk="per_query"), 5, 65536)
    for br in ("route", "compression", "selection", "window"):
        assert t5[br]["kv_bytes"] == 5 * t[br]["kv_bytes"]
        assert t5[br]["flops"] == pytest.approx(5 * t[br]["flops"])


def test_decode_ops_unfused_baseline():
    df, plan = frame(mk())
    assert plan.query_rows == 1
    for k in ("nsa.route_scores", "nsa.route_topn", "nsa.compress", "nsa.select", "nsa.window", "nsa.merge"):
        assert df.loc[k, "count"] == 32                                # 6 kernels in every layer
    sel = df.loc["nsa.select"]
    # KV 8 * 1024 * 256 * 2 + Q once per split (4 splits of 256 tokens) 4 * 32 * 128 * 2 + indices 8 * 16 * 4
    assert sel.bytes_read == 4_194_304 + 4 * 32 * 128 * 2 + 512
    assert sel.parallel_units == 8 * 4                                 # (KV head, split)
    assert sel.bytes_written == 4 * 32 * 129 * 4                       # fp32 partials of each split
    assert df.loc["nsa.compress_kv", "count"] == 32 / 16               # one new compressed block per 16 tokens


def test_verification_kernels_load_differently():
    per = frame(mk(spec="eagle3", vk="per_query"))[0]
    none = frame(mk(spec="eagle3"))[0]
    ssv = frame(mk(spec="eagle3", vk="ssv"))[0]
    union = frame(mk(spec="eagle3", vk="dense_union"))[0]
    approx = frame(mk(spec="eagle3", vk={"ssv": {"mode": "approx"}}))[0]
    kv = 8 * 256 * 2  # bytes of one token's K and V over the 8 KV heads
    q5, idx5 = 5 * 32 * 128 * 2, 5 * 8 * 16 * 4  # Q of 5 rows x 32 heads (read once per split); indices
    # bytes of one step (all launches): per_query launches each branch once per row (5 launches of 1/5)
    sel_kv = lambda d: d.loc["nsa.select", "bytes_read"] * d.loc["nsa.select", "count"] / 32  # noqa: E731
    # eagle3 default: chain k = 4 -> 5 rows; per_query (and none) load 5 x 1024 selected tokens, 4 splits each
    assert sel_kv(per) == pytest.approx(5 * 1024 * kv + 4 * q5 + idx5) and sel_kv(none) == pytest.approx(sel_kv(per))
    # the document's naive path: "3 x K kernel launches" -> compress / select / window 5 launches per layer
    for k in ("nsa.compress", "nsa.select", "nsa.window"):
        assert per.loc[k, "count"] == 5 * 32 and ssv.loc[k, "count"] == 32
    assert per.loc["nsa.select", "parallel_units"] == 8 * 4      # one row's launch: 8 KV heads x 4 splits of 256
    assert per.loc["nsa.merge", "count"] == 32 and per.loc["nsa.route_scores", "count"] == 32
    batched = frame(mk(spec="eagle3", vk={"per_query": {"launch_per_row": False}}))[0]
    assert batched.loc["nsa.select", "count"] == 32
    assert batched.loc["nsa.select", "bytes_read"] == pytest.approx(sel_kv(per))      # same bytes, 1 launch
    t_per = price_combo(mk(spec="eagle3", vk="per_query"), [1], [8192], [256])[0]["step_ms"][0]
    t_bat = price_combo(mk(spec="eagle3", vk={"per_query": {"launch_per_row": False}}), [1], [8192], [256])[0]
    assert t_per > t_bat["step_ms"][0]                                                # launch + fixed cost x 5
    # ssv exact, C = 4, gamma = 0.7: groups of 4 + 1 rows -> 16 (1 + 3 * 0.3) + 16 = 46.4 blocks of 64;
    # each of the 2 groups streams 1484.8 tokens = 5.8 splits of 256
    assert sel_kv(ssv) == pytest.approx(46.4 * 64 * kv + 5.8 * q5 + idx5)
    assert sel_kv(ssv) < 0.6 * sel_kv(per)
    assert sel_kv(approx) < sel_kv(ssv)                                 # 2 groups x 16 blocks
    # compressed and window KV: once per group (2) instead of once per row (5)
    # (Nc = floor((65536 - 32) / 16) + 1 = 4095; 4095 / 256 = 16.0 splits)
    cmp_kv = lambda d: d.loc["nsa.compress", "bytes_read"] - 4095 / 256 * q5  # noqa: E731
    cmp_kv = lambda d: (d.loc["nsa.compress", "bytes_read"] * d.loc["nsa.compress", "count"] / 32  # noqa: E731
                        - 4095 / 256 * q5)
    assert cmp_kv(per) == pytest.approx(5 * 4095 * kv) and cmp_kv(ssv) == pytest.approx(2 * 4095 * kv)
    # dense_union streams the whole range (65536 tokens) once for all rows
    assert sel_kv(union) > 60000 * kv
    # approx: one representative per group is routed (2 groups instead of 5 rows)
    assert approx.loc["nsa.route_topn", "bytes_read"] == pytest.approx(ssv.loc["nsa.route_topn", "bytes_read"] * 2 / 5)


def test_ssv_selected_bytes_by_hand():
    c = mk(spec="eagle3", vk="ssv")
    ld = c.attention.loads(c, np.array([5.0]), np.array([65536.0]))
    assert float(ld.units[0]) == 2
    assert float(ld.sel_tokens[0]) == pytest.approx(16 * 1.9 * 64 + 16 * 64)   # 30.4 + 16 blocks of 64
    # versus per-row loading: 5 * 16 blocks -> f = 46.4 / 80
    assert float(ld.sel_tokens[0]) / (5 * 1024) == pytest.approx(46.4 / 80)


def test_schedule_refresh_reuse_ops():
    df, _ = frame(mk(spec="eagle3", vk="ssv", sch="refresh_reuse"))
    assert "nsa.compress" not in df.index and "nsa.merge" not in df.index
    assert df.loc["nsa.route_scores", "count"] == 8                   # refresh every 4 of 32 layers
    assert df.loc["nsa.fused_refresh", "count"] == 8
    assert df.loc["nsa.fused_reuse", "count"] == 24
    # the fused kernel writes no branch intermediates: only split-KV partials (fp32 o + lse per row, head)
    splits = df.loc["nsa.fused_reuse", "parallel_units"] / (8 * 2)
    assert df.loc["nsa.fused_reuse", "bytes_written"] == pytest.approx(splits * 5 * 32 * 129 * 4)
    vec = ["R", "U", "U", "U"] * 8
    df2, _ = frame(mk(spec="eagle3", vk="ssv", sch={"refresh_reuse": {"layers": [vec]}}))
    assert df2.loc["nsa.fused_refresh", "count"] == 8 and df2.loc["nsa.fused_reuse", "count"] == 24
    every = frame(mk(spec="eagle3", vk="ssv", sch={"refresh_reuse": {"refresh_every": 1}}))[0]
    assert "nsa.fused_reuse" not in every.index and every.loc["nsa.route_scores", "count"] == 32
    # launches per step: baseline 6 NSA kernels x 32 layers; refresh/reuse 8 x 3 + 24 x 1 + 32 combines
    base = frame(mk(spec="eagle3", vk="ssv"))[0]
    nsa_launch = lambda d: d[d.index.str.startswith("nsa.") & ~d.index.isin(["nsa.gate_proj", "nsa.compress_kv"])]["count"].sum()  # noqa: E731
    assert nsa_launch(base) == 6 * 32 and nsa_launch(df) == 8 * 3 + 24 + 32
    t0 = price_combo(mk(spec="eagle3", vk="ssv"), [1], [65536], [256])[0]["step_ms"][0]
    t1 = price_combo(mk(spec="eagle3", vk="ssv", sch="refresh_reuse"), [1], [65536], [256])[0]["step_ms"][0]
    assert t1 < t0


def test_spill_roofline_hook():
    h = load_hardware(PCIE)
    smem = h.smem_per_unit_bytes  # 228 KiB (H100 whitepaper)
    b = OpBuilder(3)
    b.add("k", "attention", bytes_read=1e9, parallel_units=1e6, onchip_bytes=np.array([0.0, smem, smem + 1]),
          spill_bytes=5e8)
    ops = b.build()
    assert spill_passes(ops, h).tolist() == [1.0, 1.0, 2.0]
    t = price(ops, h)
    assert t[1] == t[0]
    eff = h.efficiency.memory["attention"]
    assert t[2] - t[0] == pytest.approx(5e8 / (h.hbm_bw_bytes_s * eff))  # one extra pass re-reads 5e8 bytes


def test_ssv_spill_when_group_footprint_exceeds_smem():
    # l' = 256: the K/V tile pipeline alone is 2 x 256 x 256 x 2 B = 256 KiB > 228 KiB -> 2 passes
    big = {"nsa": {"select_block": 256, "top_n": 4}}
    c = mk(att=big, spec={"eagle3": {"tree": {"branch": 3, "depth": 3, "nodes": 12}}}, vk={"ssv": {"group": 8}})
    df, _ = frame(c)
    sel = df.loc["nsa.select"]
    assert sel.onchip_bytes == 8 * 4 * (2 * 128 + 4 * 130) + 2 * 256 * 256 * 2
    # re-read per extra pass: each of the 2 groups re-reads the shared part n l' gamma of its blocks
    assert sel.spill_bytes == pytest.approx(8 * 2 * 4 * 256 * 0.7 * 256 * 2)
    h = load_hardware(PCIE)
    ops, _ = decode_ops(c, np.array([1.0]), np.array([65536.0]))
    no_spill = replace(ops, spill_bytes=np.zeros(len(ops)))
    assert price(ops, h).sum() > price(no_spill, h).sum()
    # the default footprint fits: C 4 x G 4 rows of state + two 64-token tiles = 78 KiB
    d = frame(mk(spec="eagle3", vk="ssv"))[0]
    assert d.loc["nsa.select", "onchip_bytes"] == 4 * 4 * 776 + 2 * 64 * 256 * 2 < 228 * 1024


def test_memory_and_prefill():
    c, dense = mk(), mk(att="dense")
    kv_nsa = memory.kv_bytes_per_sequence(c, np.array([65536.0]))[0]
    kv_dense = memory.kv_bytes_per_sequence(dense, np.array([65536.0]))[0]
    assert kv_nsa == pytest.approx(kv_dense * (1 + 1 / 16))          # compressed K/V: one per 16 tokens
    # phi (2 x 32 x 128 x 128) and gates (4096 x 96) per layer, bf16
    assert c.attention.extra_weight_bytes(c) == 32 * (2 * 32 * 128 * 128 + 4096 * 96) * 2
    cols, _ = price_combo(c, [1], [65536], [256])
    cd, _ = price_combo(dense, [1], [65536], [256])
    assert 0 < cols["ttft_ms"][0] < cd["ttft_ms"][0]                 # sparse prefill beats dense at 64K
    assert cols["step_ms"][0] < cd["step_ms"][0]


def test_refusals():
    assert "speculation is none" in combo_refusal(mk(vk="per_query"))
    # dense attention loads one KV range for all rows: no verify kernel applies (the reason names it)
    assert "attention 'dense' loads one KV range" in combo_refusal(mk(att="dense", spec="eagle3", vk="ssv"))
    assert "rows load their own selected blocks" in combo_refusal(mk(att="dense", spec="eagle3", vk="per_query"))
    assert "larger than the 5 verification rows" in combo_refusal(mk(spec="eagle3", vk={"ssv": {"group": 8}}))
    assert combo_refusal(mk(spec="eagle3", vk={"ssv": {"group": 5}})) is None
    strict = {"nsa": {"precision": "strict"}}
    assert "strict precision" in combo_refusal(mk(att=strict, spec="eagle3", vk={"ssv": {"mode": "approx"}}))
    assert combo_refusal(mk(att=strict, spec="eagle3", vk="ssv")) is None
    assert "strict precision" in combo_refusal(mk(att=strict, spec="eagle3", vk="ssv", sch="refresh_reuse"))
    assert combo_refusal(mk(att=strict, spec="eagle3", vk="ssv", sch={"refresh_reuse": {"refresh_every": 1}})) is None
    assert "no routing" in combo_refusal(mk(att="dense", sch="refresh_reuse"))
    assert "32" in combo_refusal(mk(sch={"refresh_reuse": {"layers": [["R", "U"]]}}))
    assert "MLA" in combo_refusal(mk(model="DeepSeek-V3", tp=8))
    from hwmodels.errors import ScenarioError
    with pytest.raises(ScenarioError, match="refresh_reuse.layers.*first layer"):   # read-time: own parameters
        mk(sch={"refresh_reuse": {"layers": [["U"] + ["R"] * 31]}})
    with pytest.raises(ScenarioError, match="exact | approx"):
        parse_axis("verify_kernel", [{"ssv": {"mode": "fast"}}])
    with pytest.raises(ScenarioError, match="overlap"):
        parse_axis("verify_kernel", [{"ssv": {"overlap": {"bfs": 1.5, "dfs": 0.5, "position_sorted": 0.5}}}])
