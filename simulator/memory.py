"""Device memory: weights, KV cache, activation workspace -> the largest batch that fits.

Per device under tensor parallelism tp (a node spec's devices, or tp GPUs of a board):

    usable      = HBM capacity * MEMORY_UTILIZATION
    weights     = (linear-layer params * weight bytes + embedding/LM head/norms * 2 bytes) / tp
                  (small replicated pieces — MLA's q_a/kv_a projections, routers, norms — are counted as
                  split; they are < 0.1 % of the weights of the shipped models)
    workspace   = PREFILL_CHUNK_TOKENS * (2 * hidden + widest per-token intermediate / tp) * 2 bytes
                  (the activation peak of the largest forward the engine profiles)
    per_seq     = cached tokens * KV bytes per token * share of KV stored on this device
                  + vocab / tp * 4 bytes (fp32 logits of one sequence)
    max_batch   = floor((usable - weights - workspace) / per_seq)

An engine profile may size the KV pool by its engine's own rule (`runtime.kv_budget`, Combo.kv_budget): "sglang" =
SGLang's mem_fraction_static heuristic and pool profiling (kv_budget_bytes); "vllm" (the default) = the budget above.
"""
from __future__ import annotations

import numpy as np

from simulator.combo import Combo
from simulator.precision import ACT_BYTES, DTYPE_BYTES, LOGIT_BYTES

#: Fraction of device memory the engine may use: vLLM's default gpu_memory_utilization = 0.9
#: (vLLM EngineArgs documentation). The rest is CUDA context, NCCL buffers, fragmentation.
MEMORY_UTILIZATION = 0.9
#: Tokens of the largest forward pass the engine reserves activations for: vLLM V1's default
#: max_num_batched_tokens for chunked prefill on large GPUs is 8192 (vLLM engine arguments docs).
PREFILL_CHUNK_TOKENS = 8192


GIB = float(2**30)
MIB = float(2**20)
#: what the device holds before SGLang profiles its pool beyond the weights: the CUDA context, NCCL's and the custom
#: all-reduce's buffers (SGLang measures free memory after its distributed init, total_gpu_memory in
#: profile_max_num_token). ASSUMPTION: 1 GiB, not measured; each GiB moves the pool by ~0.9 GiB (2-3 % of an 8 x H200
#: DeepSeek-V3 device's pool)
SGLANG_CONTEXT_BYTES = 1.0 * GIB
#: SGLang's GPU memory tiers (sglang/srt/arg_groups/memory_hook.py handle_gpu_memory_settings, sgl-project/sglang @
#: 031ed82): (below MiB, chunked_prefill_size, decode graph max_bs at tp < 4, at tp >= 4)
SGLANG_TIERS = ((20 * 1024, 2048, 8, 8), (35 * 1024, 4096, 48, 160), (60 * 1024, 4096, 32, 160),
                (90 * 1024, 8192, 256, 512), (160 * 1024, 8192, 256, 512), (float("inf"), 16384, 512, 512))
#: MiB SGLang reserves per captured decode batch size's max_bs, per prefill capture size (non-MLA), and for an MLA
#: backend's prefill graph (memory_hook.py reserve_for_graph_mb)
SGLANG_DECODE_GRAPH_MIB_PER_BS = 2.0
SGLANG_PREFILL_GRAPH_MIB_PER_SIZE = 8.0
SGLANG_MLA_PREFILL_GRAPH_MIB = 1536.0


def sglang_prefill_capture_sizes(max_bs: int) -> int:
    """How many prefill CUDA graph sizes SGLang captures up to max_bs tokens (cuda_graph_hook.py
    generate_prefill_cuda_graph_batch_sizes @ 031ed82: 4..32 by 4, 48..256 by 16, 288..512 by 32, 576..1024 by 64,
    1280..4096 by 256, 4608.. by 512)."""
    sizes = (list(range(4, 33, 4)) + list(range(48, 257, 16)) + list(range(288, 513, 32)) + list(range(576, 1025, 64))
             + list(range(1280, 4097, 256)) + list(range(4608, int(max_bs) + 1, 512)))
    return sum(1 for x in sizes if x <= max_bs)


def sglang_mem_fraction_static(capacity_bytes: float, tp: int, mla: bool, pp: int = 1) -> float:
    """SGLang's default mem_fraction_static (memory_hook.py handle_gpu_memory_settings @ 031ed82, its post-capture
    sizing off: SGLANG_ENABLE_POST_CAPTURE_KV_SIZING defaults to False and MLA never takes it): reserved MiB = 512 +
    1.5 x max(chunked_prefill_size, 2048) + tp x pp / 8 x 1024 + the graphs' reserve (decode max_bs x 2; the prefill
    graph's: 1536 for an MLA backend, 8 a capture size otherwise), at least 10 GiB on a GPU of more than 60 GiB; the
    fraction (capacity - reserved) / capacity, rounded to 3 places. chunked_prefill_size and max_bs are the tier's
    defaults (SGLANG_TIERS; the prefill graph's max_bs = chunked_prefill_size, 2048 for MLA)."""
    mib = float(capacity_bytes) / MIB
    _, chunk, bs_lo, bs_hi = next(t for t in SGLANG_TIERS if mib < t[0])
    max_bs = bs_lo if tp < 4 else bs_hi
    graph = SGLANG_DECODE_GRAPH_MIB_PER_BS * max_bs + (
        SGLANG_MLA_PREFILL_GRAPH_MIB if mla else SGLANG_PREFILL_GRAPH_MIB_PER_SIZE * sglang_prefill_capture_sizes(chunk))
    reserved = 512.0 + 1.5 * max(chunk, 2048) + tp * pp / 8.0 * 1024.0 + graph
    if mib > 60 * 1024:
        reserved = max(reserved, 10.0 * 1024)
    return round((mib - reserved) / mib, 3)


def kv_budget_bytes(combo: Combo) -> float:
    """Bytes one device gives its KV pool: under combo.kv_budget "sglang", SGLang's profile_max_num_token (model_runner:
    the free memory after its distributed init, less the weights, less that memory x (1 - mem_fraction_static):
    (capacity - SGLANG_CONTEXT_BYTES) x fraction - weights); otherwise capacity x MEMORY_UTILIZATION - weights -
    workspace (vLLM's rule)."""
    hw = combo.hardware
    if getattr(combo, "kv_budget", "vllm") == "sglang":
        frac = sglang_mem_fraction_static(hw.hbm_capacity_bytes, combo.tp, combo.model.mla is not None)
        return (hw.hbm_capacity_bytes - SGLANG_CONTEXT_BYTES) * frac - weight_bytes(combo)
    return hw.hbm_capacity_bytes * MEMORY_UTILIZATION - weight_bytes(combo) - workspace_bytes(combo)


def model_weight_bytes(combo: Combo) -> float:
    """Weight bytes of the combo's model stored on one device (experts: 1/tp of each under TP, or
    E/ep whole experts under EP — the same bytes per device when ep == tp)."""
    m = combo.model
    pc = m.param_counts()
    linear = pc["attention"] + pc["dense_mlp"] + pc["moe"]
    other = pc["embedding"] + pc["lm_head"] + pc["norms"]
    return (linear * DTYPE_BYTES[combo.weight_dtype] + other * ACT_BYTES) / combo.tp


def weight_bytes(combo: Combo) -> float:
    """Weight bytes stored on one device: the model plus what strategies add (draft models, ...)."""
    return model_weight_bytes(combo) + sum(s.extra_weight_bytes(combo) for s in combo.strategies())


def workspace_bytes(combo: Combo) -> float:
    """Activation workspace reserved on one device for the largest forward pass."""
    m = combo.model
    widest = max(m.q_dim + 2 * m.kv_heads * m.head_dim,
                 (m.mlp_matrices - 1) * m.ffn,
                 (m.mlp_matrices - 1) * m.moe.expert_ffn * m.moe.top_k if m.moe else 0)
    return PREFILL_CHUNK_TOKENS * (2 * m.hidden + widest / combo.tp) * ACT_BYTES


def kv_bytes_per_sequence(combo: Combo, cached_tokens: np.ndarray) -> np.ndarray:
    """KV-cache bytes one sequence of `cached_tokens` keeps on one device."""
    per_token = combo.model.kv_bytes_per_token(combo.kv_dtype) * combo.kv_fraction_dev
    per_token += sum(s.extra_kv_bytes_per_token(combo) for s in combo.strategies())
    return cached_tokens * per_token


def max_batch(combo: Combo, cached_tokens: np.ndarray) -> np.ndarray:
    """Largest batch whose weights, workspace and KV caches fit on each device (0 if nothing fits)."""
    free = kv_budget_bytes(combo)
    per_seq = kv_bytes_per_sequence(combo, cached_tokens) + combo.model.vocab / combo.tp * LOGIT_BYTES
    return np.maximum(0, np.floor(free / per_seq)).astype(np.int64)


def kv_pool_tokens(combo: Combo):
    """Tokens one device's KV pool holds: the memory left after weights and workspace over the KV bytes of one token
    stored on it (an engine sizes its pool so: SGLang's max_total_num_tokens, vLLM's KV blocks; each by its own rule,
    kv_budget_bytes)."""
    free = kv_budget_bytes(combo)
    per_token = combo.model.kv_bytes_per_token(combo.kv_dtype) * combo.attn_kv_fraction_dev
    per_token = per_token + sum(s.extra_kv_bytes_per_token(combo) for s in combo.strategies())
    return np.maximum(0.0, np.floor(free / per_token))


def memory_summary(combo: Combo) -> dict[str, float]:
    """The fixed parts of the footprint, in bytes per device (for reports)."""
    hw = combo.hardware
    return {
        "capacity": hw.hbm_capacity_bytes,
        "usable": hw.hbm_capacity_bytes * MEMORY_UTILIZATION,
        "weights": weight_bytes(combo),
        "workspace": workspace_bytes(combo),
        "kv_per_token": combo.model.kv_bytes_per_token(combo.kv_dtype) * combo.kv_fraction_dev,
    }
