"""ModelSpec: a decoder architecture loaded from `simulator/models/<name>.yaml`, with its source.

It knows the shapes, parameter counts and cache sizes of the architecture; it knows nothing of hardware.
Sizes are in elements; `*_bytes` helpers take a dtype from `DTYPE_BYTES`.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hwmodels.errors import SparsesimError, SpecError
from hwmodels.yamlio import file_stamp, load_yaml, named_file
from simulator.precision import DTYPE_BYTES

MODEL_DIR = Path(__file__).parent / "models"

#: Largest integer a model field may hold (layers, widths, vocabulary, context): 1e9 is 1,000x the largest
#: released value of any of them; beyond it a number is a typo, not an architecture.
MAX_MODEL_INT = 10**9

ATTENTION_KINDS = ("gqa", "mha", "mla")
ACTIVATIONS = {"silu_glu": 3, "relu2": 2, "gelu": 2}  # activation -> weight matrices per MLP
NORMS = ("rmsnorm", "layernorm")
FAMILIES = ("llama", "deepseek", "nemotron")

@dataclass(frozen=True)
class MLA:
    """Multi-head latent attention (DeepSeek-V2/V3): queries through a low-rank q path, keys/values
    through a shared latent of kv_lora_rank plus a shared rope key of qk_rope_head_dim."""

    q_lora_rank: int
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int


@dataclass(frozen=True)
class MoE:
    experts: int
    shared_experts: int
    top_k: int
    expert_ffn: int
    first_dense_layers: int


@dataclass(frozen=True)
class DSAIndexer:
    """DeepSeek Sparse Attention lightning indexer (DeepSeek-V3.2-Exp)."""

    heads: int
    head_dim: int
    topk: int
    dtype: str


@dataclass(frozen=True)
class ModelSpec:
    name: str
    source: str
    family: str
    attention: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    activation: str
    norm: str
    vocab: int
    tie_embeddings: bool
    max_context: int
    dtype: str
    file: str
    mla: MLA | None = None
    moe: MoE | None = None
    mtp_modules: int = 0
    dsa_indexer: DSAIndexer | None = None
    notes: str = ""
    extra: dict = field(default_factory=dict)

    # ---- shapes -------------------------------------------------------------------------------------
    @property
    def mlp_matrices(self) -> int:
        return ACTIVATIONS[self.activation]

    @property
    def dense_layers(self) -> int:
        """Layers whose FFN is a dense MLP (all of them without MoE)."""
        return self.moe.first_dense_layers if self.moe else self.layers

    @property
    def moe_layers(self) -> int:
        return self.layers - self.dense_layers

    @property
    def q_dim(self) -> int:
        """Width of all query heads together (MLA: nope + rope per head)."""
        if self.mla:
            return self.heads * (self.mla.qk_nope_head_dim + self.mla.qk_rope_head_dim)
        return self.heads * self.head_dim

    # ---- parameters ---------------------------------------------------------------------------------
    def attention_params(self) -> int:
        """Weight elements of one layer's attention block (projections only)."""
        h = self.hidden
        if self.mla:
            m = self.mla
            q = h * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * self.heads * (
                m.qk_nope_head_dim + m.qk_rope_head_dim)
            kv = h * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank + m.kv_lora_rank * self.heads * (
                m.qk_nope_head_dim + m.v_head_dim)
            o = self.heads * m.v_head_dim * h
            p = q + kv + o
            if self.dsa_indexer:
                ix = self.dsa_indexer
                # wq_b (q_lora -> heads*head_dim), wk (h -> head_dim) + its layernorm, weights_proj (h -> heads)
                p += m.q_lora_rank * ix.heads * ix.head_dim + h * ix.head_dim + 2 * ix.head_dim + h * ix.heads
            return p
        return h * self.heads * self.head_dim + 2 * h * self.kv_heads * self.head_dim + self.heads * self.head_dim * h

    def mlp_params(self, ffn: int) -> int:
        return self.mlp_matrices * self.hidden * ffn

    def moe_params(self) -> int:
        """Weight elements of one MoE layer: router, routed experts, shared experts."""
        m = self.moe
        return self.hidden * m.experts + (m.experts + m.shared_experts) * self.mlp_params(m.expert_ffn)

    def norm_params(self) -> int:
        per = self.hidden if self.norm == "rmsnorm" else 2 * self.hidden
        return per

    def param_counts(self) -> dict[str, int]:
        """Parameter counts by component for the main model (MTP modules counted separately)."""
        embed = self.vocab * self.hidden
        out = {
            "embedding": embed,
            "attention": self.layers * self.attention_params(),
            "dense_mlp": self.dense_layers * self.mlp_params(self.ffn),
            "moe": self.moe_layers * self.moe_params() if self.moe else 0,
            "norms": (2 * self.layers + 1) * self.norm_params(),
            "lm_head": 0 if self.tie_embeddings else embed,
        }
        if self.mla:
            out["norms"] += self.layers * (self.mla.q_lora_rank + self.mla.kv_lora_rank)
            out["attention"] -= self.layers * (self.mla.q_lora_rank + self.mla.kv_lora_rank)
        return out

    def total_params(self) -> int:
        return sum(self.param_counts().values())

    def mtp_params(self) -> int:
        """Parameters of the MTP modules (DeepSeek-V3: per module one MoE decoder layer, two norms and a
        2h -> h projection; embedding and output head are shared with the main model)."""
        if not self.mtp_modules:
            return 0
        layer = self.attention_params() + (self.moe_params() if self.moe else self.mlp_params(self.ffn))
        return self.mtp_modules * (layer + 2 * self.hidden * self.hidden + 4 * self.hidden)

    # ---- KV cache -----------------------------------------------------------------------------------
    def kv_elements_per_token_layer(self) -> int:
        """Cached elements per token per layer: K and V for GQA/MHA, latent + rope key for MLA."""
        if self.mla:
            return self.mla.kv_lora_rank + self.mla.qk_rope_head_dim
        return 2 * self.kv_heads * self.head_dim

    def kv_bytes_per_token(self, kv_dtype: str) -> float:
        """KV-cache bytes per token over all layers (plus the DSA indexer's fp8 key cache, if any)."""
        per_layer = self.kv_elements_per_token_layer() * DTYPE_BYTES[kv_dtype]
        if self.dsa_indexer:
            # indexer key cache: head_dim fp8 values + one fp32 scale per 128 values (V3.2-Exp inference code)
            ix = self.dsa_indexer
            per_layer += ix.head_dim * 1.0 + 4.0 * ix.head_dim / 128
        return per_layer * self.layers


def _req(doc: dict, key: str, file: str, kind=int, allowed=None):
    if key not in doc:
        raise SpecError("is missing", file=file, field=key)
    v = doc[key]
    if kind is int:
        if isinstance(v, bool) or not isinstance(v, int) or v < 1 or v > MAX_MODEL_INT:
            raise SpecError(f"must be an integer from 1 to {MAX_MODEL_INT:,}, got {v!r}", file=file, field=key)
    elif kind is str:
        if not isinstance(v, str) or not v:
            raise SpecError(f"must be a non-empty string, got {v!r}", file=file, field=key)
        if allowed and v not in allowed:
            raise SpecError(f"is {v!r}; allowed: {', '.join(allowed)}", file=file, field=key)
    elif kind is bool and not isinstance(v, bool):
        raise SpecError(f"must be true or false, got {v!r}", file=file, field=key)
    return v


def _sub(doc: dict, key: str, cls, file: str, allowed_str: dict | None = None, lowest: dict | None = None):
    node = doc.get(key)
    if node is None:
        return None
    if not isinstance(node, dict):
        raise SpecError("must be a mapping", file=file, field=key)
    kw = {}
    for f in cls.__dataclass_fields__:
        if f not in node:
            raise SpecError("is missing", file=file, field=f"{key}.{f}")
        v = node[f]
        if allowed_str and f in allowed_str:
            if v not in allowed_str[f]:
                raise SpecError(f"is {v!r}; allowed: {', '.join(allowed_str[f])}", file=file, field=f"{key}.{f}")
        else:
            lo = (lowest or {}).get(f, 1)
            if isinstance(v, bool) or not isinstance(v, int) or v < lo or v > MAX_MODEL_INT:
                raise SpecError(f"must be an integer from {lo} to {MAX_MODEL_INT:,}, got {v!r}", file=file,
                                field=f"{key}.{f}")
        kw[f] = v
    unknown = set(node) - set(cls.__dataclass_fields__)
    if unknown:
        raise SpecError(f"unknown keys {sorted(unknown)}; allowed: {list(cls.__dataclass_fields__)}",
                        file=file, field=key)
    return cls(**kw)


_KNOWN_KEYS = {"name", "source", "family", "attention", "layers", "hidden", "heads", "kv_heads", "head_dim",
               "ffn", "activation", "norm", "vocab", "tie_embeddings", "max_context", "dtype", "mla", "moe",
               "mtp", "dsa_indexer", "notes", "rope_theta"}


def model_from_dict(doc: Any, file: str) -> ModelSpec:
    if not isinstance(doc, dict):
        raise SpecError("must be a YAML mapping of fields", file=file)
    unknown = set(doc) - _KNOWN_KEYS
    if unknown:
        raise SpecError(f"unknown fields {sorted(unknown)}; allowed: {sorted(_KNOWN_KEYS)}", file=file)
    attention = _req(doc, "attention", file, str, ATTENTION_KINDS)
    heads = _req(doc, "heads", file)
    kv_heads = _req(doc, "kv_heads", file)
    if heads % kv_heads:
        raise SpecError(f"heads ({heads}) must be a multiple of kv_heads ({kv_heads})", file=file, field="kv_heads")
    if attention == "mha" and kv_heads != heads:
        raise SpecError("attention 'mha' needs kv_heads == heads", file=file, field="kv_heads")
    mla = _sub(doc, "mla", MLA, file)
    if attention == "mla" and mla is None:
        raise SpecError("attention 'mla' needs an 'mla' block", file=file, field="mla")
    if mla is not None and attention != "mla":
        raise SpecError(f"an 'mla' block describes latent attention, but attention is {attention!r}: give attention: "
                        "mla, or remove the block (it would replace the KV cache of a GQA/MHA model)", file=file,
                        field="mla")
    mtp = doc.get("mtp") or {}
    if (not isinstance(mtp, dict) or set(mtp) - {"modules"} or isinstance(mtp.get("modules", 0), bool)
            or not isinstance(mtp.get("modules", 0), int) or not 0 <= mtp.get("modules", 0) <= 64):
        raise SpecError("must be {modules: <integer 0..64>}", file=file, field="mtp")
    moe = _sub(doc, "moe", MoE, file, lowest={"shared_experts": 0, "first_dense_layers": 0})
    if moe is not None:
        if moe.experts < 1 or moe.top_k < 1 or moe.expert_ffn < 1:
            raise SpecError("experts, top_k and expert_ffn must be >= 1", file=file, field="moe")
        if moe.top_k > moe.experts:
            raise SpecError(f"top_k ({moe.top_k}) exceeds experts ({moe.experts})", file=file, field="moe.top_k")
        layers = doc.get("layers")
        if isinstance(layers, int) and not isinstance(layers, bool) and moe.first_dense_layers >= layers:
            raise SpecError(f"{moe.first_dense_layers} dense layers leave no MoE layer of the model's {layers}; "
                            f"allowed: 0 to {layers - 1} (without MoE layers, remove the moe block)", file=file,
                            field="moe.first_dense_layers")
    dsa = _sub(doc, "dsa_indexer", DSAIndexer, file, {"dtype": tuple(DTYPE_BYTES)})
    if dsa is not None and mla is None:
        raise SpecError(f"the DSA lightning indexer selects over an MLA latent cache; attention is {attention!r} "
                        "without an mla block (DeepSeek-V3.2-Exp is MLA)", file=file, field="dsa_indexer")
    notes = doc.get("notes", "")
    if notes is not None and not isinstance(notes, str):
        raise SpecError(f"must be text, got {type(notes).__name__}", file=file, field="notes")
    theta = doc.get("rope_theta")
    if "rope_theta" in doc and (isinstance(theta, bool) or not isinstance(theta, (int, float))
                                or not math.isfinite(theta) or theta <= 0):
        raise SpecError(f"must be a positive number, got {theta!r}", file=file, field="rope_theta")
    dtype = _req(doc, "dtype", file, str, tuple(DTYPE_BYTES))
    return ModelSpec(
        name=_req(doc, "name", file, str),
        source=_req(doc, "source", file, str),
        family=_req(doc, "family", file, str, FAMILIES),
        attention=attention,
        layers=_req(doc, "layers", file),
        hidden=_req(doc, "hidden", file),
        heads=heads,
        kv_heads=kv_heads,
        head_dim=_req(doc, "head_dim", file),
        ffn=_req(doc, "ffn", file),
        activation=_req(doc, "activation", file, str, tuple(ACTIVATIONS)),
        norm=_req(doc, "norm", file, str, NORMS),
        vocab=_req(doc, "vocab", file),
        tie_embeddings=_req(doc, "tie_embeddings", file, bool),
        max_context=_req(doc, "max_context", file),
        dtype=dtype,
        file=file,
        mla=mla,
        moe=moe,
        mtp_modules=int(mtp.get("modules", 0)),
        dsa_indexer=dsa,
        notes=notes or "",
        extra={"rope_theta": doc["rope_theta"]} if "rope_theta" in doc else {},
    )


def list_models() -> list[str]:
    return sorted(p.stem for p in MODEL_DIR.glob("*.yaml"))


def load_model(name_or_path: str | Path) -> ModelSpec:
    """Load a shipped model by name (e.g. 'Llama-3.1-8B') or any model file by path. Memoized per (file,
    modification time): a ModelSpec is frozen, so sharing it is safe (a draft model is loaded once, not
    once per use)."""
    try:
        path = named_file(name_or_path, MODEL_DIR, "model")
    except SparsesimError as e:
        raise SpecError(str(e)) from None
    return _load_model_cached(str(path), file_stamp(path))


@functools.lru_cache(maxsize=256)
def _load_model_cached(path: str, stamp) -> ModelSpec:  # noqa: ARG001 - cache key
    try:
        doc = load_yaml(path, "model file")
    except SparsesimError as e:
        raise SpecError(str(e)) from None
    return model_from_dict(doc, path)
