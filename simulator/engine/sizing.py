"""How big the engine's per-replica allocations get, and the budgets they are held to: vLLM's default step
and batch limits by GPU, the attention strategy's cached-token ratio, and the memory budgets of the engine's
pricing tables (the exact step tables, checked at parse time; the lazily priced decode cost surfaces, whose rows
are held within serving.step_cost.memory_budget_gb). Shared by the scenario
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
#: memory the engine's exact step tables of one replica group may take (bytes), checked before they are built: every
#: step size from 1 to max_num_batched_tokens, one row per op (simulator.engine.config checks it at parse time).
ENGINE_TABLE_BUDGET = 4 * 2**30
#: peak bytes per op row while the exact step tables are priced, MEASURED: Llama-3.1-8B on H100-SXM with
#: max_num_batched_tokens 131,072 (14 body op rows per token row) peaked at 2.48 GB RSS (2026-11, this repo)
ENGINE_BYTES_PER_OP_ROW = 1400
#: What the decode cost surfaces of one replica group may hold in memory (bytes; serving.step_cost.memory_budget_gb):
#: their priced rows (simulator.engine.step_cost.DecodeSurface prices a row, one batch size at every context point,
#: when a step first reads it, and drops the oldest beyond the budget) and the op table of one pricing call.
#: ASSUMPTION: 1 GiB, an eighth of a laptop's memory; the shipped serving scenarios hold at most a few hundred MB
#: (`sparsesim simulate` prints what a run used).
DEFAULT_MEMORY_BUDGET_BYTES = 1 << 30
#: Bytes a pricing call holds per op row (the builder's columns, the built OpTable, the roofline's temporaries),
#: MEASURED with tracemalloc on price_decode of DeepSeek-V3.2-Exp + DSA + GVR on B200 and Llama-3.1-8B dense
#: (2026-11, this repo): a pricing call is cut into pieces of PRICE_CHUNK_BYTES / (this x op rows per setting)
#: settings.
PRICING_BYTES_PER_OP_ROW = 900
#: Bytes one pricing call may hold at once (a piece of at most this many bytes of op rows at a time).
PRICE_CHUNK_BYTES = 64 << 20
#: bytes a priced surface row holds per context point: the numpy row (8) and its Python list for scalar lookups
#: (an 8-byte pointer + a 24-byte float)
ROW_BYTES_PER_POINT = 40
#: rows of a decode surface that must fit at once (a bilinear lookup reads two, a decode run two more)
MIN_SURFACE_ROWS = 4


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


def check_surface(combo, points_per_row: int, budget: float = DEFAULT_MEMORY_BUDGET_BYTES, surfaces: int = 1) -> int:
    """Rows (one batch size at every one of `points_per_row` context points) each of `surfaces` decode cost
    surfaces of `combo` may hold within `budget` bytes beside one pricing call's op table (PRICE_CHUNK_BYTES);
    refused before anything is allocated when not even MIN_SURFACE_ROWS fit (a step cost with many kinks refines
    its context grid to many points)."""
    per_row = ROW_BYTES_PER_POINT * points_per_row
    room = max(float(budget) - PRICE_CHUNK_BYTES, 0.0)
    rows = int(room // (per_row * surfaces))
    if rows < MIN_SURFACE_ROWS:
        raise SparsesimError(f"the decode cost surface of {combo.model.name} on {combo.hardware.name} "
                             f"({combo.strategy_label()}) needs {per_row * MIN_SURFACE_ROWS * surfaces / 2**20:,.0f} "
                             f"MiB for its first rows ({points_per_row:,} context points each), beyond the step-cost "
                             f"memory budget of {budget / 2**20:,.0f} MiB; raise serving.step_cost.memory_budget_gb",
                             field="serving.step_cost.memory_budget_gb")
    return rows
