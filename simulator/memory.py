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
    hw = combo.hardware
    free = hw.hbm_capacity_bytes * MEMORY_UTILIZATION - weight_bytes(combo) - workspace_bytes(combo)
    per_seq = kv_bytes_per_sequence(combo, cached_tokens) + combo.model.vocab / combo.tp * LOGIT_BYTES
    return np.maximum(0, np.floor(free / per_seq)).astype(np.int64)


def kv_pool_tokens(combo: Combo):
    """Tokens one device's KV pool holds: the memory left after weights and workspace over the KV bytes of one token
    stored on it (an engine sizes its pool so: SGLang's max_total_num_tokens, vLLM's KV blocks; the same
    MEMORY_UTILIZATION here for both, an ASSUMPTION: SGLang's mem_fraction_static varies with the GPU and TP)."""
    hw = combo.hardware
    free = hw.hbm_capacity_bytes * MEMORY_UTILIZATION - weight_bytes(combo) - workspace_bytes(combo)
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
