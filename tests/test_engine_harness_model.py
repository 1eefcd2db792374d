"""The engine's step-cost knobs for pricing a serving harness as it runs (issue 12 validation round 2):
FlashAttention-2's varlen call (dense fa2_call: varlen), CUDA-graph padding, per-step decode pricing with the
batch's longest context (memoized), the eager step rule (eager_overlap: step), the runtime's eager launch cost
and the host terms. Hand arithmetic next to every expected value."""
from __future__ import annotations

import numpy as np
import pytest

from hwmodels.errors import ScenarioError
from simulator.combo import make_combo
from simulator.engine.config import parse_serving_section, vllm_graph_sizes
from simulator.engine.step_cost import Composition, StepCostModel
from simulator.ops import OpBuilder
from simulator.strategies.base import StepShape

FA2 = {"dense": {"kernel": "fa2", "fa2_call": "varlen", "fa2_graph_max_k": 16384}}
TILE_F = 4.0 * 128 * 64 * 128      # one 128x64 (or 64x128) tile of QK^T + PV at d = 128: 4,194,304 flops


def _ops(combo, B, T, Tmax=None, mixed=False):
    b = OpBuilder(1)
    combo.attention.decode_ops(b, combo, StepShape(batch=np.array([float(B)]), query_rows=np.ones(1),
                                                   context=np.array([float(T)]), phase="decode", layers=1.0,
                                                   mixed=mixed,
                                                   ctx_max=None if Tmax is None else np.array([float(Tmax)])))
    ops = b.build()
    return {n: i for i, n in enumerate(ops.names)}, ops


def _row(names, ops, name):
    i = np.flatnonzero(ops.name_id == names[name])
    assert len(i) == 1, name
    return int(i[0])


@pytest.fixture(scope="module")
def fa2():
    return make_combo("H100-SXM", "Llama-3.1-8B", attention=FA2, kernels="unfused")


def test_fa2_varlen_split_decode_hand_arithmetic(fa2):
    # B = 4 rows, 8 KV heads, group of 4 query heads swapped into the rows: FA2's heuristic on 4 * 8 = 32 CTAs,
    # 2 x 132 SMs, max_seqlen_k 16384 -> 128 blocks: s = 7 is the first eligible split with 32*7/264 = 0.848 >=
    # 0.85 x the best (0.97), so S = 7. T = 1024: 1024/128 = 8 key tiles per (row, head) -> 4*8*8 = 256 tiles.
    names, ops = _ops(fa2, 4, 1024.0)
    a = _row(names, ops, "attention")
    assert ops.flops[a] == pytest.approx(256 * TILE_F)
    assert ops.parallel_units[a] == 4 * 8 * 7                     # B x Hkv x S CTAs, one wave (<= 264)
    # the longest CTA walks ceil(8/7) = 2 split tiles of 128 keys = 4 units of the forward kernel's 64-key tile
    assert ops.serial_iters[a] == pytest.approx(4.0) and ops.sync_steps[a] == 0.0
    c = _row(names, ops, "attention_swap_copy")
    assert ops.count[c] == 3.0                                    # q in, out, q_padded (seqlenq_ngroups_swapped)
    assert "attention_combine" in names


def test_fa2_varlen_forward_kernel_and_longest_row(fa2):
    # B = 64: 64 * 8 = 512 CTAs >= 0.8 * 264 -> no split: the forward kernel, 128 x 64 tiles, 64-key iterations.
    names, ops = _ops(fa2, 64, 2048.0)
    a = _row(names, ops, "attention")
    assert ops.parallel_units[a] == 512 and "attention_combine" not in names
    assert ops.flops[a] == pytest.approx(512 * 32 * TILE_F)        # 2048 / 64 = 32 tiles per CTA
    assert ops.serial_iters[a] == 32.0 and ops.sync_steps[a] == 0.0
    # one row at 8192 beside the others (mean kept at 2048): 512 CTAs fill 2 waves of 264, so the longest CTA runs
    # its 8192/64 - 32 = 96 excess tiles after the others (sync_steps); serial_iters stays the mean CTA's 32
    names, ops = _ops(fa2, 64, 2048.0, Tmax=8192.0)
    a = _row(names, ops, "attention")
    assert ops.serial_iters[a] == 32.0 and ops.sync_steps[a] == 96.0
    # 16 rows (S = 2, 256 CTAs, one wave): every CTA starts at once, the chain is the longest CTA's:
    # ceil(ceil(8192/128) / 2) = 32 split tiles = 64 forward-tile units
    names, ops = _ops(fa2, 16, 2048.0, Tmax=8192.0)
    a = _row(names, ops, "attention")
    assert ops.parallel_units[a] == 16 * 8 * 2 and ops.serial_iters[a] == 64.0 and ops.sync_steps[a] == 0.0


def test_fa2_varlen_mixed_rows_and_prefill_chunk(fa2):
    # decode rows beside a chunk: no swap, no split; one CTA per (row, query head): 8 * 32 = 256 CTAs,
    # 1024/64 = 16 tiles each (the mean row's tiles are continuous: 1000 tokens would be 15.625), no copies
    names, ops = _ops(fa2, 8, 1024.0, mixed=True)
    a = _row(names, ops, "attention")
    assert ops.parallel_units[a] == 256 and ops.flops[a] == pytest.approx(256 * 16 * TILE_F)
    assert "attention_swap_copy" not in names and "attention_combine" not in names
    # a 512-token chunk, no prefix: M = 4 query tiles; tile j walks ceil(128 (j+1) / 64) = 2, 4, 6, 8 key tiles = 20
    b = OpBuilder(1)
    fa2.attention.prefill_ops(b, fa2, StepShape(batch=np.ones(1), query_rows=np.array([512.0]),
                                                context=np.array([512.0]), phase="prefill",
                                                layers=1.0, kv_prefix=np.zeros(1)))
    ops = b.build()
    assert ops.flops[0] == pytest.approx(32 * 20 * TILE_F) and ops.parallel_units[0] == 32 * 4
    assert ops.serial_iters[0] == pytest.approx(8.0)               # 4 x 32 = 128 CTAs, one wave: the last tile's 8


def test_fa2_varlen_refused_without_kernel_fa2():
    from hwmodels.errors import ScenarioError

    with pytest.raises(ScenarioError, match="dense.fa2_call.*kernel: fa2"):   # when the value is read
        make_combo("H100-SXM", "Llama-3.1-8B", attention={"dense": {"fa2_call": "varlen"}})


@pytest.fixture(scope="module")
def harness_cost(fa2):
    return StepCostModel(fa2, 8192, 256, graph_sizes=[1, 2, 4, 8, 16, 24, 32], eager_overlap="step")


def test_graph_padding_and_spread_pricing(harness_cost):
    m = harness_cost
    assert m.spread and m.reads_mixed                 # the varlen call reads ctx_max and the mixed flag
    assert m.graph_batch(5) == 8 and m.graph_batch(8) == 8 and m.graph_batch(33) == 33   # beyond 32: unpadded
    # 5 rows at contexts summing to 5000 (longest 2000) run as the 8-row graph: 3 padding rows of 1 token
    comp = Composition(total_tokens=5, logit_rows=5, n_decode=5, decode_ctx_sum=5000.0, decode_ctx_max=2000.0)
    exp = m.base_s(8, 8) + m.spread_decode_s(8, 5003.0 / 8.0, 2000.0)
    assert m.step_s(comp) == pytest.approx(exp, rel=1e-12)
    # the memo grid (1/256 in log context) against direct pricing
    for b, s, mx in ((1, 1500.0, 1500.0), (7, 7000.0, 4000.0), (30, 45000.0, 9000.0), (100, 150000.0, 16000.0)):
        comp = Composition(total_tokens=b, logit_rows=b, n_decode=b, decode_ctx_sum=s, decode_ctx_max=mx)
        assert m.step_s(comp) == pytest.approx(m.direct_step_s(comp), rel=5e-3)
    # a decode run prices each step like step_s
    run = m.decode_run_s(5, 5, np.array([5000.0, 5005.0]), np.array([2000.0, 2001.0]))
    assert run[0] == pytest.approx(exp, rel=1e-12)


def test_eager_overlap_step_is_max_of_device_and_launches(harness_cost):
    m = harness_cost
    # unfused Llama-3.1-8B body: per layer norm 1 + qkv 1 + RoPE/KV write 16 + o_proj 1 + norm 1 + gate_up 1 +
    # act 2 + down 1 + residual adds 2 = 26 kernels, x 32 layers = 832, + embedding, final norm, LM head, sampling
    assert m._kernels["body"] == 836.0 and m._kernels["chunk"] == 32.0 and m._kernels["decode"] == 32.0
    comp = Composition(total_tokens=40, logit_rows=9, n_decode=8, decode_ctx_sum=8000.0, chunks=((32, 0),),
                       decode_ctx_max=1000.0)
    n = 836 + 32 + 32
    launch = m.combo.hardware.launch_eager_s
    assert m.step_s(comp) == pytest.approx(max(m._dev.step_s(comp), n * launch), rel=1e-12)
    # a host-bound step (tiny chunk, no decode rows) costs its launches
    small = Composition(total_tokens=16, logit_rows=1, chunks=((16, 0),))
    if (836 + 32) * launch > m._dev.step_s(small):
        assert m.step_s(small) == pytest.approx((836 + 32) * launch)


def _section(step_cost: dict, sched=None):
    return {"requests": {"poisson": {"rate": 1.0, "count": 1}, "input_tokens": {"fixed": 100},
                         "output_tokens": {"fixed": 11}},
            "replicas": [{"count": 1}], "scheduler": sched or {"num_blocks": 4096}, "step_cost": step_cost,
            "decode_run_steps": 0}


DOC = {"hardware": ["H100-SXM"], "model": "Llama-3.1-8B", "runtime": {"launch": "graph", "kernels": "unfused"}}


def test_step_cost_knobs_parse_and_reject():
    from pathlib import Path

    cfg = parse_serving_section(_section({"host_per_step_us": {"decode": 300, "mixed": 600}, "host_per_row_us": 8,
                                          "launch_eager_us": 20, "graph_sizes": "vllm", "eager_overlap": "step"}),
                                "x.yaml", Path("."), DOC)
    assert cfg.host_per_step_s == pytest.approx(3e-4) and cfg.host_mixed_s == pytest.approx(6e-4)
    assert cfg.host_per_row_s == pytest.approx(8e-6) and cfg.launch_eager_s == pytest.approx(2e-5)
    assert cfg.eager_overlap == "step" and cfg.graph_sizes == vllm_graph_sizes(512)
    # vLLM's capture sizes: 1, 2, 4, then 8..248 by 8 (31), then 256..512 by 16 (17): 51 sizes
    assert len(vllm_graph_sizes(512)) == 51 and vllm_graph_sizes(20) == (1, 2, 4, 8, 16, 20)
    for bad, fld in (({"eager_overlap": "queue"}, "eager_overlap"), ({"graph_sizes": [0, 4]}, "graph_sizes"),
                     ({"host_per_step_us": {"prefill": 3}}, "host_per_step_us"), ({"launch_eager_us": 0}, "launch_eager_us"),
                     ({"host_per_row_us": -1}, "host_per_row_us")):
        with pytest.raises(ScenarioError) as e:
            parse_serving_section(_section(bad), "x.yaml", Path("."), DOC)
        assert fld in str(e.value)


def test_host_terms_and_launch_override_in_the_simulation():
    from pathlib import Path

    from simulator.engine.api import simulate
    from simulator.engine.sim import setup_group

    base = parse_serving_section(_section({}), "x.yaml", Path("."), DOC)
    host = parse_serving_section(_section({"host_per_step_us": {"decode": 1000, "mixed": 2000},
                                           "host_per_row_us": 100, "launch_eager_us": 33}), "x.yaml", Path("."), DOC)
    assert setup_group(0, host.groups[0], host, 512).cost.combo.hardware.launch_eager_s == pytest.approx(33e-6)
    a = simulate(base, seed=0).requests.iloc[0]
    hb = parse_serving_section(_section({"host_per_step_us": {"decode": 1000, "mixed": 2000},
                                         "host_per_row_us": 100}), "x.yaml", Path("."), DOC)
    b = simulate(hb, seed=0).requests.iloc[0]
    # one request alone: its prompt is one mixed step (+2000 us + 1 request x 100 us), then 10 decode steps of
    # one request each (+1000 + 100 us): TTFT + 2.1 ms, TPOT + 1.1 ms
    assert b.ttft_s - a.ttft_s == pytest.approx(2.1e-3, rel=1e-9)
    assert b.tpot_s - a.tpot_s == pytest.approx(1.1e-3, rel=1e-9)
