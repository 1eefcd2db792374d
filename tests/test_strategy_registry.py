"""The strategy-tuple machinery: axis parsing, parameter grids, and plugging in a new strategy."""
from dataclasses import replace

import pytest

from hwmodels.errors import ScenarioError
from simulator.pricing import price_combo
from simulator.strategies import base
from simulator.strategies.base import AttentionStrategy, Param, parse_axis, register
from tests.conftest import make_combo


def test_defaults_and_grids():
    assert [s.name for s in parse_axis("attention", None)] == ["dense"]
    vals = parse_axis("attention", [{"dense": {"split_tokens": [128, 256, 512]}}])
    assert [v.split_tokens for v in vals] == [128, 256, 512]
    assert vals[0].label() == "dense(split_tokens=128)" and vals[1].label() == "dense"


def test_unknown_axis_value():
    with pytest.raises(ScenarioError, match="unknown speculation strategy 'eagle9'"):
        parse_axis("speculation", ["eagle9"])


def test_a_new_strategy_is_one_class():
    """A strategy defined anywhere becomes selectable by registering itself; nothing else changes."""

    @register
    class HalfAttention(AttentionStrategy):
        name = "test_half"
        params = {"keep": Param(0.5, "test value", lambda v: 0 < v <= 1, "(0, 1]")}

        def decode_ops(self, b, combo, shape):
            dense = base.registry()["attention"]["dense"]()
            half = replace(shape, context=shape.context * self.keep)
            dense.decode_ops(b, combo, half)

        def prefill_ops(self, b, combo, shape):
            base.registry()["attention"]["dense"]().prefill_ops(b, combo, shape)

    try:
        [s] = parse_axis("attention", [{"test_half": {"keep": 0.25}}])
        c_dense = make_combo()
        c_half = make_combo(attention="test_half")
        object.__setattr__(c_half, "attention", s)
        d, _ = price_combo(c_dense, [4], [65536], [1])
        h, _ = price_combo(c_half, [4], [65536], [1])
        assert h["attention_ms"][0] < 0.3 * d["attention_ms"][0]
        assert h["gemm_ms"][0] == pytest.approx(d["gemm_ms"][0])
    finally:
        del base._REGISTRY["attention"]["test_half"]
