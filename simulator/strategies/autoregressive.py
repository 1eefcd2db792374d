"""The 'none' values of the axes that later strategy families fill in:

speculation: none    plain autoregressive decoding: one query row per sequence, one token per step.
topk: none           no top-k selection (attention that selects nothing).
verify_kernel: none  (in verify_kernels.py) every verification row loads its own selected blocks.
schedule: none       every layer runs the same attention kernel (no refresh/reuse schedule).
kv_policy: full      the KV cache keeps every token.
"""
from __future__ import annotations

import numpy as np

from simulator.combo import Combo
from simulator.strategies.base import (
    KVPolicyStrategy,
    RoundPlan,
    ScheduleStrategy,
    SpeculationStrategy,
    TopkStrategy,
    register,
)


@register
class NoSpeculation(SpeculationStrategy):
    name = "none"
    description = "autoregressive decoding: one token per step"
    array_combo = True  # array-safe hooks (docs/VECTOR_COMBOS.md)

    def round_plan(self, combo: Combo, batch: np.ndarray, context: np.ndarray) -> RoundPlan:
        return RoundPlan(query_rows=1, tokens_per_round=1.0)


@register
class NoTopk(TopkStrategy):
    name = "none"
    description = "no top-k selection"
    array_combo = True  # array-safe hooks (docs/VECTOR_COMBOS.md)
    selects = False


@register
class NoSchedule(ScheduleStrategy):
    name = "none"
    description = "every layer runs the same attention kernel"
    array_combo = True  # array-safe hooks (docs/VECTOR_COMBOS.md)


@register
class FullKV(KVPolicyStrategy):
    name = "full"
    description = "the KV cache keeps every token"
    array_combo = True  # array-safe hooks (docs/VECTOR_COMBOS.md)
