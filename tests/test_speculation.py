"""Speculative decoding: acceptance arithmetic and the cost of a round."""
from dataclasses import replace

import numpy as np
import pytest

from hwmodels.errors import ScenarioError
from simulator.acceptance import (TreeShape, chain_tokens_per_round, lengths_tokens_per_round,
                                  tree_tokens_per_round)
from simulator.planner import combo_refusal
from simulator.pricing import decode_ops, price_combo
from simulator.strategies.base import parse_axis
from tests.conftest import make_combo


def test_document_worked_example():
    # SSV document: alpha = 0.8, K = 4 -> 0.8 + 0.64 + 0.512 + 0.4096 = 2.3616 accepted drafts,
    # 3.3616 tokens per round with the bonus token ("~3.36 per verification round")
    assert chain_tokens_per_round(0.8, 4) == pytest.approx(3.3616)
    assert chain_tokens_per_round([1.0, 1.0, 0.0], 3) == pytest.approx(3.0)
    assert chain_tokens_per_round(0.0, 8) == 1.0


def test_tree_reduces_to_chain_and_beats_it():
    chain = TreeShape(branch=1, depth=4)
    assert chain.widths() == [1, 1, 1, 1]
    assert tree_tokens_per_round(0.6, chain) == pytest.approx(chain_tokens_per_round(0.6, 4))
    t = TreeShape(branch=3, depth=3)
    assert t.widths() == [3, 9, 27] and t.size == 39   # the document's 1 + 3 + 9 + 27 = 40 incl. root
    pruned = TreeShape(branch=3, depth=4, nodes=16)
    assert pruned.widths() == [3, 9, 4] and pruned.size == 16
    # level 1: 3 siblings -> 1 - 0.4^3 = 0.936; level 2: 3 children each -> 0.936; level 3: 4/9 child each
    p1 = 1 - 0.4**3
    p3 = 1 - 0.4 ** (4 / 9)
    assert tree_tokens_per_round(0.6, pruned) == pytest.approx(1 + p1 + p1 * p1 + p1 * p1 * p3)
    assert tree_tokens_per_round(0.6, pruned) > chain_tokens_per_round(0.6, 3)


def test_length_distribution():
    assert lengths_tokens_per_round([0.1, 0.2, 0.7]) == pytest.approx(1 + 0.2 + 1.4)
    with pytest.raises(ScenarioError):
        lengths_tokens_per_round([0.5, 0.6])


def _spec(value, model="Llama-3.1-8B", tp=1):
    [s] = parse_axis("speculation", [value])
    return replace(make_combo(model=model, tp=tp), speculation=s)


def test_verification_runs_all_draft_rows():
    c = _spec({"eagle3": {"k": 4, "acceptance": 0.8}})
    ops, plan = decode_ops(c, np.array([2.0]), np.array([8192.0]))
    assert plan.query_rows == 5 and plan.tokens_per_round == pytest.approx(3.3616)
    df = ops.to_frame()
    qkv = df[df.name == "qkv_proj"].iloc[0]
    assert qkv.flops == 2 * (2 * 5) * 4096 * 6144          # target GEMM at M = B x (K + 1)
    drafts = df[df.name == "draft.qkv_proj"]
    assert len(drafts) == 4 and (drafts["count"] == 1).all()  # 4 sequential one-layer draft forwards
    t = _spec({"eagle3": {"tree": {"branch": 3, "depth": 4, "nodes": 16}}})
    _, plan = decode_ops(t, np.array([1.0]), np.array([8192.0]))
    assert plan.query_rows == 17


def test_speculation_lowers_tpot_at_batch_one():
    base, _ = price_combo(make_combo(), [1], [8192], [128])
    spec, _ = price_combo(_spec({"eagle3": {"k": 4, "acceptance": 0.8}}), [1], [8192], [128])
    assert spec["step_ms"][0] > base["step_ms"][0]
    assert spec["tpot_ms"][0] < base["tpot_ms"][0] / 2
    assert spec["max_batch"][0] <= base["max_batch"][0]   # the head's weights and KV take memory


def test_refusals():
    assert "tokenizer" in combo_refusal(_spec({"draft_model": {"model": "TinyLlama-1.1B"}}))
    assert combo_refusal(_spec({"draft_model": {"model": "TinyLlama-1.1B"}}, model="Llama-2-7B")) is None
    assert "no MTP modules" in combo_refusal(_spec("mtp"))
    assert combo_refusal(_spec({"mtp": {"k": 3}}, model="DeepSeek-V3", tp=8)) is None
    assert "MLA" in combo_refusal(_spec("eagle3", model="DeepSeek-V3", tp=8))
    assert "k = 4" in combo_refusal(_spec({"eagle3": {"per_position": [0.9, 0.8]}}))
    assert combo_refusal(_spec({"eagle3": {"k": 2, "per_position": [0.9, 0.8]}})) is None
    # a list of scalars sweeps; a list of lists sweeps a list-valued parameter
    assert len(parse_axis("speculation", [{"eagle3": {"acceptance": [0.6, 0.7, 0.8]}}])) == 3
    assert len(parse_axis("speculation", [{"eagle3": {"k": 2, "per_position": [[0.9, 0.8], [0.7, 0.6]]}}])) == 2
    with pytest.raises(ScenarioError, match="acceptance"):
        parse_axis("speculation", [{"eagle3": {"acceptance": 1.5}}])
