"""Combo: one strategy tuple — a value on every categorical axis — plus the per-device shapes it implies.

Numeric axes (batch, context, output tokens) are not part of a Combo: they are numpy arrays priced
together under one Combo.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from typing import TYPE_CHECKING

from hwmodels.spec import HardwareSpec
from simulator.model import ModelSpec
from simulator.precision import DTYPE_BYTES, WEIGHT_COMPUTE_DTYPE

if TYPE_CHECKING:
    from simulator.strategies.base import Strategy


@dataclass(frozen=True)
class Combo:
    hardware: HardwareSpec
    model: ModelSpec
    attention: Strategy
    topk: Strategy
    speculation: Strategy
    verify_kernel: Strategy
    schedule: Strategy
    kv_policy: Strategy
    kv_dtype: str
    weight_dtype: str
    tp: int
    launch: str = "graph"

    # ---- per-device shapes under tensor parallelism ----------------------------------------------------
    @property
    def heads_dev(self) -> int:
        """Query heads on one device (heads are split evenly over TP ranks)."""
        return math.ceil(self.model.heads / self.tp)

    @property
    def kv_heads_dev(self) -> int:
        """KV heads on one device: split over TP ranks, replicated when TP exceeds the KV-head count
        (what vLLM and TensorRT-LLM do)."""
        if self.model.mla:
            return 1  # one shared latent, replicated on every rank
        return max(1, math.ceil(self.model.kv_heads / self.tp))

    @property
    def kv_fraction_dev(self) -> float:
        """Share of one token's KV bytes that one device stores."""
        if self.model.mla:
            return 1.0
        return self.kv_heads_dev / self.model.kv_heads

    @property
    def wbytes(self) -> float:
        return DTYPE_BYTES[self.weight_dtype]

    @property
    def kvbytes(self) -> float:
        return DTYPE_BYTES[self.kv_dtype]

    @property
    def gemm_dtype(self) -> str:
        return WEIGHT_COMPUTE_DTYPE[self.weight_dtype]

    def strategies(self) -> tuple:
        """The strategy values of every axis (simulator.strategies.base.AXES)."""
        from simulator.strategies.base import AXES

        return tuple(getattr(self, a) for a in AXES)

    def strategy_label(self) -> str:
        """'dense', 'nsa+eagle3(k=4)+ssv', ...: the attention value plus every non-default value."""
        from simulator.strategies.base import AXES, DEFAULT_VALUE

        parts = [self.attention.label()]
        for a in AXES[1:]:
            s = getattr(self, a)
            if s.name != DEFAULT_VALUE[a] or s.label() != s.name:
                parts.append(s.label())
        return "+".join(parts)
