"""SN40L-16 node: interconnect assumption, attention DP16 mapping, static-graph batches, fused launches,
the SnapStream scenario end to end."""
import numpy as np
import pytest

from hwmodels.spec import load_hardware
from simulator.acceptance import chain_tokens_per_round
from simulator.cli import main
from simulator.figures.snapstream import compiled_batch, fused_step_s, make
from simulator.planner import combo_refusal


def test_interconnect_is_an_explicit_assumption():
    for name in ("SN40L", "SN40L-16"):
        h = load_hardware(name)
        assert h.link_bw_bytes_s == 100e9 and h.link_latency_s == 3e-6
        assert {"interconnect.bandwidth_gbps", "interconnect.latency_us"} <= h.assumed
        assert "ASSUMPTION" in h.sources["interconnect.bandwidth_gbps"]
    assert combo_refusal(make("SN40L-16", "DeepSeek-R1", tp=16, attn_dp=16)) is None


def test_compiled_batches():
    assert compiled_batch(33, 16) == 32 and compiled_batch(31, 16) == 16 and compiled_batch(15, 16) == 0
    assert compiled_batch(541, 16) == 512 and compiled_batch(256, 16) == 256


def test_fused_kernels_cut_launches_and_mtp():
    c = make("SN40L-16", "DeepSeek-R1", tp=16, attn_dp=16)
    fused, op_by_op = fused_step_s(c, 16, 131072.0)
    assert fused < op_by_op
    # two fused kernels per layer (+2) instead of every op's launch: the saving is positive and below the
    # whole step's launch time of 1.5 us per kernel
    assert 0 < op_by_op - fused < op_by_op
    assert chain_tokens_per_round(0.8, 2) == pytest.approx(1 + 0.8 + 0.64)   # ~2.4 tokens per forward


def test_attention_dp_splits_kv_by_batch():
    c = make("SN40L-16", "DeepSeek-R1", tp=16, attn_dp=16)
    # MLA latent replicated under TP, but each socket holds 1/16 of the sequences
    assert c.kv_fraction_dev == pytest.approx(1 / 16)


def test_snapstream_scenario_end_to_end(tmp_path, capsys):
    assert main(["run", "scenarios/snapstream_sn40l.yaml", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "SnapStream (seeds/003) on SN40L-16" in out and "max batch, full KV, 128K" in out
    assert "static-graph mapping infeasible" in out        # naive update refused where it does not fit on chip
    assert (tmp_path / "snapstream_sn40l" / "reproduction.csv").is_file()


def test_separate_kv_mla_cache_layout():
    """SnapStream keeps MLA key (latent 512 + rope 64) and value (latent 512) caches as two tensors:
    (576 + 512) x 2 bytes x 61 layers = 132,736 bytes per token, against 70,272 for the shared latent."""
    from dataclasses import replace


    from simulator import memory
    from simulator.strategies.base import parse_axis
    from tests.conftest import make_combo

    [sep] = parse_axis("attention", [{"dense": {"mla_cache": "separate_kv"}}])
    shared = make_combo(hw="SN40L-16", model="DeepSeek-R1", tp=16, attn_dp=16)
    split = replace(shared, attention=sep)
    per_tok = memory.kv_bytes_per_sequence(split, np.array([1.0]))[0] * 16   # x attn_dp: one sequence's share
    assert per_tok == pytest.approx(132_736, rel=1e-3)
    assert memory.kv_bytes_per_sequence(shared, np.array([1.0]))[0] * 16 == pytest.approx(70_272, rel=1e-3)
    # 128K tokens x 132,736 B = 17.4 GB per sequence: one per socket fits beside 42 GB of fp8 weights in
    # 0.9 x 64 GiB, two do not -> 16 sequences on 16 sockets (SnapStream Table 5: 16)
    assert 16 <= memory.max_batch(split, np.array([131072.0]))[0] < 32
    assert "MLA models only" in split.attention.refuse(make_combo())
