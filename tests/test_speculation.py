"""Speculative decoding: acceptance arithmetic and the cost of a round."""
from dataclasses import replace

import numpy as np
import pytest

from hwmodels.errors import ScenarioError
from simulator.acceptance import (
    TreeShape,
    accept_length_dist,
    chain_tokens_per_round,
    lengths_tokens_per_round,
    sibling_probs,
    tree_tokens_per_round,
)
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


def test_siblings_are_mutually_exclusive():
    # rank r matches with p_r = h_r prod_{i<r}(1 - h_i), h_r = a decay^(r-1): a = 0.6, decay 0.5 ->
    # p = 0.6, 0.4 * 0.3 = 0.12, 0.4 * 0.7 * 0.15 = 0.042; they sum to P(rank <= 3) < 1
    p = sibling_probs(0.6, 3, 0.5)
    assert p == pytest.approx([0.6, 0.12, 0.042])
    # decay 1 is the geometric model: P(rank <= 3) = 1 - 0.4^3 (the former "independent siblings" survival)
    assert sibling_probs(0.6, 3, 1.0).sum() == pytest.approx(1 - 0.4 ** 3)
    # a one-level tree of 3 siblings: E[tokens] = 1 + sum p_r
    assert tree_tokens_per_round(0.6, TreeShape(3, 1, 0, 0.6, 0.5)) == pytest.approx(1 + 0.762)
    # decay 0: siblings never match, a tree accepts like its best chain
    t0 = TreeShape(3, 3, 12, 0.7, 0.0)
    assert tree_tokens_per_round(0.7, t0) == pytest.approx(chain_tokens_per_round(0.7, 3))


def test_pruned_tree_keeps_its_depth():
    # SSV's "b = 3, d = 3 pruned to ~12 nodes": the 12 most probable nodes at a = 0.7, decay 0.5 reach depth 3
    # (the former level-filling rule built [3, 9], depth 2, capping tokens per round at 3)
    t = TreeShape(3, 3, 12, 0.7, 0.5)
    assert t.size == 12 and len(t.widths()) == 3 and t.widths() == [3, 5, 4]
    tok = tree_tokens_per_round(0.7, t)
    assert chain_tokens_per_round(0.7, 3) < tok < 4.0
    assert tree_tokens_per_round(0.9, t) > 3.5                       # above the former cap of 3
    # P(L >= l) is the sum of path probabilities of level l; the distribution of L sums to 1
    m = t.level_mass(0.7)
    d = accept_length_dist(m)
    assert d.sum() == pytest.approx(1.0) and 1 + (np.arange(4) * d).sum() == pytest.approx(tok)
    assert np.all(np.diff(m) < 0)
    grid = t.level_mass_grid(np.array([0.5, 0.7]))
    assert grid[1] == pytest.approx(m) and grid.shape == (2, 3)


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
    draft_fwd = decode_ops(t, np.array([1.0]), np.array([8192.0]))[0].to_frame()
    assert len(draft_fwd[draft_fwd.name == "draft.qkv_proj"]) == len(t.speculation.tree_shape().widths())


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
    with pytest.raises(ScenarioError, match="eagle3.per_position.*k = 4"):   # own parameters: when read
        _spec({"eagle3": {"per_position": [0.9, 0.8]}})
    assert combo_refusal(_spec({"eagle3": {"k": 2, "per_position": [0.9, 0.8]}})) is None
    # a list of scalars sweeps; a list of lists sweeps a list-valued parameter
    assert len(parse_axis("speculation", [{"eagle3": {"acceptance": [0.6, 0.7, 0.8]}}])) == 3
    assert len(parse_axis("speculation", [{"eagle3": {"k": 2, "per_position": [[0.9, 0.8], [0.7, 0.6]]}}])) == 2
    with pytest.raises(ScenarioError, match="acceptance"):
        parse_axis("speculation", [{"eagle3": {"acceptance": 1.5}}])
