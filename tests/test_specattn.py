"""attention: specattn — mask-generation ops, sparse verification, refusals and the shipped scenario."""
from dataclasses import replace

import numpy as np
import pytest

from simulator.cli import main
from simulator.planner import combo_refusal
from simulator.pricing import decode_ops, price_combo
from simulator.strategies.base import parse_axis
from simulator.strategies.specattn import reduction_for
from tests.conftest import make_combo


def _c(att, spec={"draft_model": {"k": 4}}, hw="RTX-4090"):
    c = make_combo(hw=hw, model="Llama-2-7B", kv_dtype="fp16", launch="eager")
    return replace(c, attention=parse_axis("attention", [att])[0], speculation=parse_axis("speculation", [spec])[0])


def test_table1_interpolation():
    assert reduction_for(0.97) == pytest.approx(0.688)
    assert reduction_for(0.96) == pytest.approx((0.784 + 0.688) / 2)


def test_mask_generation_ops():
    c = _c({"specattn": {"kv_reduction": 0.75}})
    ops, plan = decode_ops(c, np.array([1.0]), np.array([2048.0]))
    df = ops.to_frame()
    topp = df[df.name == "specattn.topp_search"].iloc[0]
    # gamma = 4 rows of L = 2048 fp32 read once, 10 iterations x 3 flops per element, 30 sparse layers
    assert topp.bytes_read == 4 * 2048 * 4 and topp.flops == 4 * 2048 * 10 * 3 and topp["count"] == 30
    w = df[df.name == "specattn.draft_weights"].iloc[0]
    assert w["count"] == 4 * 22            # gamma x TinyLlama's 22 layers (all mapped: upper bound)
    # sparse layers attend over 25 % of the KV (512 of 2048 tokens), the first 2 layers over all of it
    sparse = df[df.name == "sparse_attention"].iloc[0]
    full = df[(df.name == "attention")].iloc[0]
    assert sparse["count"] == 30 and full["count"] == 2
    assert sparse.bytes_read < 0.3 * full.bytes_read


def test_ordering_at_2k_and_the_reason():
    none, _ = price_combo(_c("dense", "none"), [1], [2048], [1843])
    sd, _ = price_combo(_c("dense"), [1], [2048], [1843])
    sa, bd = price_combo(_c({"specattn": {"kv_reduction": 0.7189}}), [1], [2048], [1843], breakdown=True)
    assert none["tokens_per_s"][0] < sa["tokens_per_s"][0] < sd["tokens_per_s"][0]
    mask = bd[bd.op.str.startswith("specattn.")].time_ms.sum()
    assert mask > 0.5 * (sd["step_ms"][0] - sa["step_ms"][0] + mask)   # mask generation dominates the delta


def test_refusals():
    assert "needs speculation 'draft_model'" in combo_refusal(_c("specattn", "none"))
    assert "full_layers" in combo_refusal(_c({"specattn": {"full_layers": 32}}))
    assert combo_refusal(_c("specattn")) is None


def test_specattn_scenario_end_to_end(tmp_path, capsys):
    assert main(["run", "scenarios/specattn_rtx4090.yaml", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "SpecAttn Table 2 on RTX-4090" in out and "context where SpecAttn >= SD" in out
