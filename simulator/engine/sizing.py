"""How big the engine's per-replica allocations get, and the budgets they are held to: vLLM's default step
and batch limits by GPU, the attention strategy's cached-token ratio, and the memory budget of the engine's
pricing tables (the decode cost surface is checked here before it is allocated). Shared by the scenario
checks (simulator.engine.config), the replica setup (simulator.engine.sim) and the cost model
(simulator.engine.step_cost) without importing any of them.
"""
from __future__ import annotations

import numpy as np

from hwmodels.errors import SparsesimError
from simulator.engine.request import (
    VLLM_LARGE_GPU_BATCHED_TOKENS,
    VLLM_LARGE_GPU_MAX_SEQS,
    VLLM_SMALL_GPU_BATCHED_TOKENS,
    VLLM_SMALL_GPU_MAX_SEQS,
)

GIB = 1024 ** 3
#: memory the engine's pricing tables of one replica group may take (bytes), checked before they are built: the
#: exact step tables (every step size from 1 to max_num_batched_tokens, one row per op) and the decode cost
#: surface over (batch, context) grid points (simulator.engine.step_cost). The shipped scenarios need up to
#: ~2.9 GB (serving_poisson_h200's surface)
ENGINE_TABLE_BUDGET = 4 * 2**30
#: peak bytes per op row while the exact step tables are priced, MEASURED: Llama-3.1-8B on H100-SXM with
#: max_num_batched_tokens 131,072 (14 body op rows per token row) peaked at 2.48 GB RSS (2026-11, this repo)
ENGINE_BYTES_PER_OP_ROW = 1400
#: peak bytes per op row of the decode cost surface, MEASURED: serving_poisson_h200 (Llama-3.1-8B + EAGLE-3 on
#: H200: 214,370 grid points x 59 decode ops) peaked at 2.87 GB RSS (2026-11, this repo)
ENGINE_SURFACE_BYTES_PER_OP_ROW = 230


def vllm_batch_defaults(hw) -> tuple[int, int]:
    """vLLM's default (max_num_batched_tokens, max_num_seqs) for the OpenAI server on this GPU:
    EngineArgs.get_batch_defaults (vllm/engine/arg_utils.py): >= 70 GiB and not an A100 -> 8192, 1024;
    otherwise 2048, 256."""
    if hw.hbm_capacity_bytes >= 70 * GIB and "a100" not in hw.name.lower():
        return VLLM_LARGE_GPU_BATCHED_TOKENS, VLLM_LARGE_GPU_MAX_SEQS
    return VLLM_SMALL_GPU_BATCHED_TOKENS, VLLM_SMALL_GPU_MAX_SEQS


def attention_kv_ratio(combo) -> float:
    """Cached tokens per context token of the attention strategy at the model's longest context
    (block-sparse LServe keeps fewer for its streaming heads, plus page statistics); 1 for most."""
    C = float(combo.model.max_context)
    return float(combo.attention.cached_tokens(combo, np.array([C]))[0]) / C


def check_surface(combo, points: int) -> None:
    """The engine's decode cost surface (simulator.engine.step_cost: `points` (batch, context) grid points, each
    priced as the step's decode ops) within ENGINE_TABLE_BUDGET, checked before it is allocated; a strategy whose
    step cost has many kinks makes the grid refinement add points without bound."""
    from simulator.ops import OpBuilder
    from simulator.strategies.base import StepShape

    one, ctx = np.ones(1), np.full(1, 4096.0)
    plan = combo.speculation.round_plan(combo, one, ctx)
    shape = StepShape(batch=one, query_rows=np.full(1, float(plan.query_rows)), context=ctx, phase="decode",
                      layers=combo.model.layers, mixed=False)
    b = OpBuilder(1)
    if plan.add_draft_ops is not None:
        plan.add_draft_ops(b, combo, shape)
    combo.attention.decode_ops(b, combo, shape)
    combo.kv_policy.decode_ops(b, combo, shape)
    try:
        n_ops = max(1, len(b.build().flops))
    except (ValueError, IndexError):   # no ops at all
        n_ops = 1
    need = float(points) * n_ops * ENGINE_SURFACE_BYTES_PER_OP_ROW
    if need > ENGINE_TABLE_BUDGET:
        raise SparsesimError(f"the engine's decode cost surface for {combo.model.name} on {combo.hardware.name} "
                             f"({combo.strategy_label()}) refined to {points:,} (batch, context) points x {n_ops} ops, "
                             f"~{need / 2**30:.1f} GiB; the budget is {ENGINE_TABLE_BUDGET / 2**30:g} GiB (a step cost "
                             "with many kinks: lower max_num_seqs or the model's context, or use another strategy)",
                             field="serving.replicas")
