"""Combo: one strategy tuple — a value on every categorical axis — plus the per-device shapes it implies, and
the rules that refuse a tuple.

Numeric axes (batch, context, output tokens) are not part of a Combo: they are numpy arrays priced
together under one Combo.

    make_combo(hardware, model, ...)   the one Combo factory (names or loaded specs, axis values as written in a
                                       scenario or Strategy instances); Scenario.combo(**overrides) and the
                                       sweep's enumeration (simulator.planner.combos) build through it
    combo_refusal(combo)               why a tuple cannot run (device count, interconnect, head / expert split,
                                       every strategy's model and tuple rules), or None
    onchip_overflow(combo, b, c)       settings whose extra on-chip buffers exceed a dataflow device's memory
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
    heads_dev, kv_heads_dev             query / KV heads on one device where one prompt's prefill attention runs
                                        (Combo.prefill_heads_dev: the whole TP group, or under prefill_attn "dp" the
                                        prompt's attention-DP group)
    attn_heads_dev, attn_kv_heads_dev   the same inside the decode kernel (under attention DP its sequences' heads
                                        split over tp / attn_dp devices)
    attn_dp                             attention data-parallel groups: a device runs the decode kernel for
                                        1 / attn_dp of the batch
    kvbytes                             bytes per cached K / V element
    target                              the device facts a kernel's launch reads (TargetFacts)
    kv_pool_tokens                      tokens the device's KV pool holds (simulator/memory.py kv_pool_tokens, set by
                                        the dense strategy for a family that touches its whole pool each step:
                                        fa3_mla_fp8cast); 0 where unknown (a bare kernel in fitting)
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
    kv_pool_tokens: Any = 0.0

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
    prefill_attn: str = "tp"  # where one prompt's prefill attention runs under attention DP (attn_dp > 1): tp = over
                              # the whole TP group (a separate prefill mapping: SnapStream's TP16 prefill on SN40L);
                              # dp = on the prompt's attention-DP group at attn_heads_dev (SGLang's DP attention: each
                              # DP group schedules its own requests; an engine profile's runtime.prefill_attention)
    kv_budget: str = "vllm"  # how a device's KV pool is sized (simulator.memory kv_budget_bytes): vllm = capacity x 0.9 -
                             # weights - workspace; sglang = SGLang's mem_fraction_static rule (an engine profile's
                             # runtime.kv_budget: RuntimeProfile.apply_collectives)
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
    def small_m_gemm(self) -> bool:
        """Whether decode-sized (M <= 64) bf16 / per-tensor fp8 weight GEMMs are priced as cuBLASLt runs them (few
        CTAs walking serial K steps, plus the split-K reduce: simulator.kernels.cublaslt): only on a device whose
        fitted terms carry that chain (cublaslt.priced_on: the H100); elsewhere one kernel filling the device."""
        from simulator.kernels.cublaslt import priced_on
        return priced_on(self.hardware)

    @functools.cached_property
    def flashmla_sparse_priced(self) -> bool:
        """Whether the device's fitted terms carry FlashMLA sparse decode's tile chain (flashmla_sparse.priced_on):
        DSA's `sparse_kernel: flashmla` is refused elsewhere."""
        from simulator.kernels.flashmla_sparse import priced_on
        return priced_on(self.hardware)

    @functools.cached_property
    def flashmla_sparse_rows_priced(self) -> bool:
        """Whether the device's fitted terms carry the sparse prefill kernel's decode rows (kind
        attn_flashmla_sparse_fwd): DSA's `sparse_kernel: prefill_kernel` is refused elsewhere."""
        return "attn_flashmla_sparse_fwd" in self.hardware.efficiency.cta_slots

    @functools.cached_property
    def attn_layout(self) -> AttentionLayout:
        """What attention kernels read about this tuple's attention (see AttentionLayout)."""
        return AttentionLayout(mla=self.model.mla, head_dim=self.model.head_dim, heads_dev=self.prefill_heads_dev,
                               kv_heads_dev=self.prefill_kv_heads_dev, attn_heads_dev=self.attn_heads_dev,
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

    # ---- the prefill attention's layout (prefill_attn) ---------------------------------------------------------
    @property
    def prefill_dp(self) -> bool:
        """Whether one prompt's prefill attention runs on its attention-DP group (prefill_attn "dp", attn_dp > 1)."""
        return getattr(self, "prefill_attn", "tp") == "dp" and bool(np.any(np.asarray(self.attn_dp) > 1))

    @property
    def prefill_heads_dev(self):
        """Query heads one prompt's prefill attention runs at on a device: the TP group's split, or under
        prefill_attn "dp" its attention-DP group's (attn_heads_dev)."""
        return self.attn_heads_dev if self.prefill_dp else self.heads_dev

    @property
    def prefill_kv_heads_dev(self):
        """KV heads of one prompt's prefill attention on a device (prefill_heads_dev's layout)."""
        return self.attn_kv_heads_dev if self.prefill_dp else self.kv_heads_dev

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
            if getattr(self, "prefill_attn", "tp") == "dp":
                s += " (prefill on DP)"
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
    """The Combo factory: a Combo from names (or loaded specs) and axis values written as in a scenario ('dense',
    {'eagle3': {'k': 4}}) or as Strategy instances; axes not given take their defaults. weight_dtype None or
    'native' = the model's released dtype."""
    unknown = set(axes) - set(AXES)
    if unknown:
        raise ValueError(f"unknown axes {sorted(unknown)}; axes: {AXES}")
    hw = load_hardware(hardware) if isinstance(hardware, str) else hardware
    m = load_model(model) if isinstance(model, str) else model
    values = {}
    for a in AXES:
        v = axes.get(a, DEFAULT_VALUE[a])
        values[a] = v if isinstance(v, Strategy) else parse_axis(a, [v])[0]
    return combo_of(hw, m, kv_dtype, weight_dtype, tp, ep, attn_dp, launch, kernels, trace, values)


def combo_of(hardware: HardwareSpec, model: ModelSpec, kv_dtype: str, weight_dtype: str | None, tp, ep: int,
             attn_dp: int, launch: str, kernels: str, trace: Any, axes: dict, prefill_attn: str = "tp") -> Combo:
    """A Combo from values already parsed (specs, Strategy instances on every axis): what make_combo ends in, and
    what the sweep calls once per enumerated tuple (simulator.planner), so it skips the dataclass __init__'s
    per-field setattr. weight_dtype None or 'native' = the model's released dtype."""
    combo = object.__new__(Combo)
    combo.__dict__.update(hardware=hardware, model=model, kv_dtype=kv_dtype,
                          weight_dtype=model.dtype if weight_dtype in (None, "native") else weight_dtype, tp=tp,
                          ep=ep, attn_dp=attn_dp, launch=launch, kernels=kernels, trace=trace, **axes)
    if prefill_attn != "tp":
        combo.__dict__["prefill_attn"] = prefill_attn
    return combo


# ---- refusal rules: a tuple that cannot run is skipped with its reason, and the skip is counted ----------------
def combo_refusal(combo: Combo) -> str | None:
    """Why a strategy tuple cannot run, or None."""
    hw, m = combo.hardware, combo.model
    if combo.tp > hw.max_devices_per_node:
        return f"TP{combo.tp} needs {combo.tp} devices; a {hw.name} node has at most {hw.max_devices_per_node}"
    if combo.tp > 1 and (hw.link_bw_bytes_s is None or hw.link_latency_s is None):
        return (f"TP{combo.tp} needs {hw.name}'s interconnect bandwidth and latency, which its spec leaves "
                "unsourced (null)")
    if m.heads % combo.tp:
        return f"{m.name}: {m.heads} attention heads do not split evenly over TP{combo.tp}"
    if combo.ep > 1 and not m.moe:
        return f"EP{combo.ep}: {m.name} has no experts"
    if combo.ep > 1 and m.moe.experts % combo.ep:
        return f"EP{combo.ep}: {m.moe.experts} experts do not split evenly"
    for axis in AXES:
        s = getattr(combo, axis)
        pm = s.param_model_problem(m)
        reason = s.model_problem(m) or (pm and pm[1]) or s.refuse(combo)
        if reason:
            return reason
    return None


def onchip_overflow(combo: Combo, batch: np.ndarray, context: np.ndarray) -> tuple[np.ndarray, str]:
    """Settings whose strategies' extra on-chip buffers (Strategy.onchip_bytes) exceed the on-chip memory of
    one device, and the reason. Only static-graph dataflow devices (kind 'dataflow', e.g. SN40L) are
    checked: their compiler allocates every buffer of a fused kernel on chip (SnapStream sec. 3.2.1 and
    appendix A.1); on a GPU such buffers live in HBM and cost bandwidth instead."""
    hw = combo.hardware
    none = np.zeros(len(batch), dtype=bool)
    if hw.kind != "dataflow" or hw.sram_total_bytes is None:
        return none, ""
    need = sum(np.broadcast_to(np.asarray(s.onchip_bytes(combo, batch, context), dtype=np.float64), batch.shape)
               for s in combo.strategies())
    over = need > hw.sram_total_bytes
    if not over.any():
        return none, ""
    names = "+".join(s.label() for s in combo.strategies() if np.any(np.asarray(s.onchip_bytes(combo, batch, context)) > 0))
    return over, (f"{names}: extra on-chip buffers exceed {hw.name}'s {hw.sram_total_bytes / 2**20:.0f} MiB of "
                  "on-chip memory per device (static-graph mapping infeasible)")
