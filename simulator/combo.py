"""Combo: one strategy tuple — a value on every categorical axis — plus the per-device shapes it implies.

Numeric axes (batch, context, output tokens) are not part of a Combo: they are numpy arrays priced
together under one Combo.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from hwmodels.spec import HardwareSpec, load_hardware
from simulator.model import MLA, ModelSpec, load_model
from simulator.precision import DTYPE_BYTES, WEIGHT_COMPUTE_DTYPE
from simulator.strategies.base import AXES, DEFAULT_VALUE, Strategy, parse_axis


def _ceil(x):
    """math.ceil, or np.ceil where `x` is an array (array-valued combos: docs/VECTOR_COMBOS.md)."""
    return np.ceil(x) if isinstance(x, np.ndarray) else math.ceil(x)


def _at_least_1(x):
    return np.maximum(1.0, x) if isinstance(x, np.ndarray) else max(1, x)


@dataclass(frozen=True)
class TargetFacts:
    """The only hardware facts a strategy may read: what serving software itself queries at run time to
    pick a kernel or a dispatch path (cudaGetDeviceProperties: architecture family, SM count, L2 size;
    e.g. TensorRT-LLM's GVR top-k dispatcher bounds its batch by 3*SM - SM/8 and 0.9*L2). Never bandwidths,
    peak rates or efficiencies: what an op costs is priced by hwmodels.roofline alone."""

    architecture: str
    sm_count: int
    l2_bytes: float | None
    smem_per_sm: float | None = None   # shared memory per SM (cudaDevAttrMaxSharedMemoryPerMultiprocessor): kernel
                                       # plans size their tiles and occupancy on it (FlashInfer's prefill plan)


@dataclass(frozen=True)
class AttentionLayout:
    """What attention kernels read about one step's attention on one device (dense attention's accounting and the
    decode-kernel models of simulator.kernels): the model's attention geometry and the per-device head split.
    `Combo.attn_layout` builds it from a tuple; fitting a bare kernel (simulator.calibration) builds it directly.
    Inside a sweep the per-device counts may be arrays (one value per setting).

    mla                                 the model's MLA dimensions, or None (GQA / MHA)
    head_dim                            per-head dimension (GQA / MHA)
    heads_dev, kv_heads_dev             query / KV heads on one device of the TP group (prefill runs one prompt on
                                        the whole group)
    attn_heads_dev, attn_kv_heads_dev   the same inside the decode kernel (under attention DP its sequences' heads
                                        split over tp / attn_dp devices)
    attn_dp                             attention data-parallel groups: a device runs the decode kernel for
                                        1 / attn_dp of the batch
    kvbytes                             bytes per cached K / V element
    target                              the device facts a kernel's launch reads (TargetFacts)
    """

    mla: MLA | None
    head_dim: int
    heads_dev: Any
    kv_heads_dev: Any
    attn_heads_dev: Any
    attn_kv_heads_dev: Any
    attn_dp: int
    kvbytes: Any
    target: TargetFacts

    @classmethod
    def one_device(cls, heads, kv_heads, head_dim, kvbytes, target: TargetFacts) -> AttentionLayout:
        """One bare GQA/MHA attention call on one device (no TP, no attention DP): a measured kernel in fitting."""
        return cls(mla=None, head_dim=head_dim, heads_dev=heads, kv_heads_dev=kv_heads, attn_heads_dev=heads,
                   attn_kv_heads_dev=kv_heads, attn_dp=1, kvbytes=kvbytes, target=target)


@dataclass(frozen=True)
class Combo:
    """One strategy tuple. Inside a sweep, tuples that share a structure are priced together through ONE
    combo whose `tp` and some strategy parameters are arrays with one value per setting (see
    docs/VECTOR_COMBOS.md); the per-device properties below then return arrays too."""

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
    ep: int = 1        # expert parallelism: 1 = experts TP-sharded; == tp = whole experts spread over the TP devices
    attn_dp: int = 1   # attention data parallelism: the attention kernel and KV cache split by batch over
                       # attn_dp groups of tp / attn_dp devices; projections and FFN stay TP
    kernels: str = "fused"  # fused: an inference engine's fused norm/RoPE/activation kernels;
                            # unfused: plain eager PyTorch ops (simulator.layers.UNFUSED_TORCH_KERNELS)
    allreduce: str = "nccl"  # the tensor-parallel all-reduce as the serving engine runs it (simulator.kernels.
                             # allreduce.ENGINES): nccl = NCCL's ring for every message; vllm / sglang / trtllm = that
                             # engine's custom one-shot / two-shot peer-memory kernel below its size cap, NCCL above
                             # (an engine profile's runtime.allreduce: RuntimeProfile.apply_collectives)
    trace: Any = None       # statistics of an attention/top-k trace (simulator.traces), or None: strategies
                            # then use their parameters' (assumed or published) values

    @property
    def target(self) -> TargetFacts:
        """The hardware facts strategies may read (see TargetFacts); strategies never read `hardware`."""
        hw = self.hardware
        return TargetFacts(architecture=hw.architecture, sm_count=hw.units, l2_bytes=hw.l2_bytes,
                           smem_per_sm=hw.smem_per_unit_bytes)

    @functools.cached_property
    def attn_layout(self) -> AttentionLayout:
        """What attention kernels read about this tuple's attention (see AttentionLayout)."""
        return AttentionLayout(mla=self.model.mla, head_dim=self.model.head_dim, heads_dev=self.heads_dev,
                               kv_heads_dev=self.kv_heads_dev, attn_heads_dev=self.attn_heads_dev,
                               attn_kv_heads_dev=self.attn_kv_heads_dev, attn_dp=self.attn_dp, kvbytes=self.kvbytes,
                               target=self.target)

    # ---- per-device shapes under tensor parallelism ----------------------------------------------------
    @property
    def heads_dev(self) -> int:
        """Query heads on one device (heads are split evenly over TP ranks)."""
        return _ceil(self.model.heads / self.tp)

    @property
    def kv_heads_dev(self) -> int:
        """KV heads on one device: split over TP ranks, replicated when TP exceeds the KV-head count
        (what vLLM and TensorRT-LLM do)."""
        if self.model.mla:
            return 1  # one shared latent, replicated on every rank
        return _at_least_1(_ceil(self.model.kv_heads / self.tp))

    @property
    def kv_fraction_dev(self) -> float:
        """Share of one token's KV bytes that one device stores, averaged over the batch (under attention
        DP a device holds 1/attn_dp of the sequences)."""
        return self.attn_kv_fraction_dev / self.attn_dp

    # ---- the attention kernel's layout (differs from the projections' under attention DP) -------------
    @property
    def attn_tp(self) -> int:
        """Devices that split one sequence's heads inside the attention kernel."""
        return self.tp // self.attn_dp

    @property
    def attn_heads_dev(self) -> int:
        return _ceil(self.model.heads / self.attn_tp)

    @property
    def attn_kv_heads_dev(self) -> int:
        if self.model.mla:
            return 1
        return _at_least_1(_ceil(self.model.kv_heads / self.attn_tp))

    @property
    def attn_kv_fraction_dev(self) -> float:
        """Share of one sequence's per-token KV bytes held by a device that holds that sequence."""
        if self.model.mla:
            return 1.0
        return self.attn_kv_heads_dev / self.model.kv_heads

    @property
    def wbytes(self) -> float:
        return DTYPE_BYTES[self.weight_dtype]

    @property
    def kvbytes(self) -> float:
        return DTYPE_BYTES[self.kv_dtype]

    @property
    def gemm_dtype(self) -> str:
        return WEIGHT_COMPUTE_DTYPE[self.weight_dtype]

    def parallel_label(self) -> str:
        s = f"TP{self.tp}"
        if self.ep > 1:
            s += f" EP{self.ep}"
        if self.attn_dp > 1:
            s += f" attnDP{self.attn_dp}"
        return s

    def strategies(self) -> tuple:
        """The strategy values of every axis (simulator.strategies.base.AXES)."""
        return tuple(getattr(self, a) for a in AXES)

    def strategy_label(self) -> str:
        """'dense', 'nsa+eagle3(k=4)+ssv', ...: the attention value plus every non-default value."""
        parts = [self.attention.label()]
        for a in AXES[1:]:
            s = getattr(self, a)
            if s.name != DEFAULT_VALUE[a] or s.label() != s.name:
                parts.append(s.label())
        return "+".join(parts)


def make_combo(hardware, model, *, kv_dtype: str = "bf16", weight_dtype: str | None = None, tp: int = 1,
               ep: int = 1, attn_dp: int = 1, launch: str = "graph", kernels: str = "fused", trace: Any = None,
               **axes) -> Combo:
    """A Combo from names (or loaded specs) and axis values written as in a scenario ('dense',
    {'eagle3': {'k': 4}}) or as Strategy instances; axes not given take their defaults. weight_dtype None
    = the model's released dtype."""
    unknown = set(axes) - set(AXES)
    if unknown:
        raise ValueError(f"unknown axes {sorted(unknown)}; axes: {AXES}")
    hw = load_hardware(hardware) if isinstance(hardware, str) else hardware
    m = load_model(model) if isinstance(model, str) else model
    values = {}
    for a in AXES:
        v = axes.get(a, DEFAULT_VALUE[a])
        values[a] = v if isinstance(v, Strategy) else parse_axis(a, [v])[0]
    return Combo(hardware=hw, model=m, kv_dtype=kv_dtype, weight_dtype=weight_dtype or m.dtype, tp=tp, ep=ep,
                 attn_dp=attn_dp, launch=launch, kernels=kernels, trace=trace, **values)
