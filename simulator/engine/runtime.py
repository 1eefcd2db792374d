"""Engine runtime profiles: what a serving engine does around each step's GPU work, as the event engine applies it.

A profile is one YAML file per engine and version (simulator/engine/profiles/, schema in the README beside them).
`serving.engine` names one (`vllm-v1`, `sglang`, `trtllm`, `hf-cb`, `hf-cb-efficient`, `own`, or a path to a user's
profile YAML);
`none` (the default) keeps the op model alone. `load_profile` reads it once into a typed RuntimeProfile:

    host        HostTerms: host seconds per step as a function of the step's content (requests, decode rows,
                prefill chunks and tokens, query tokens, keys read, new / finished / first-token requests)
    overlap     the share of that host time the engine hides under the GPU (async scheduling, overlap scheduler):
                a step costs (1 - f) x host + max(device, launch + f x host)
    launch      LaunchModel: the host time to issue the forward (an eager forward's kernels), which overlaps the
                device within the step; a measured distribution (its median, or drawn per step) or none
    graphs      GraphRules: how pure decode steps launch (CUDA graph / eager / host-issued), the capture sizes and
                whether a decode batch is padded to them, how mixed steps launch (piecewise graphs with the
                attention eager, eager, or host-issued), eager above the largest captured size
    mask        MaskAttention: an engine that runs ONE attention over all Q queries x all K keys of the batch
                under a block-diagonal mask (HF continuous batching): the step's attention priced as
                per_key x K + per_qk x Q x K instead of per request
    api         seconds a request spends in the API-server path before the scheduler sees it (tokenize,
                schedule) and that each token's delivery lags the step that made it (detokenize, stream)

Every number keeps the provenance its YAML entry gives (`sources`); an entry marked `unknown` contributes 0 and a
line to `notes`, which `sparsesim simulate` prints: nothing is invented. `serving.step_cost` knobs override the
profile's terms (docs/ENGINE_API.md).

`fit_host_terms(steps)` fits a profile's host terms and launch distribution from per-step host timers (the columns
lab/serving/hf_cb_runtime.py records; a user's own engine run with the same columns), for `sparsesim compare` and
benchmarks/des_validation.py.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from hwmodels.errors import SparsesimError
from simulator.kernels.allreduce import ENGINES as AR_ENGINES

PROFILES_DIR = Path(__file__).resolve().parent / "profiles"
#: serving.engine names -> profile files (None: the op model alone)
ENGINES = {"none": None, "vllm-v1": "vllm-v1-0.33.yaml", "sglang": "sglang-0.5.yaml",
           "trtllm": "trtllm-pytorch.yaml", "hf-cb": "hf-cb-5.17.yaml",
           "hf-cb-efficient": "hf-cb-5.17-sdpa-efficient.yaml", "own": "own-harness.yaml"}
UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6}
#: how a step launches: graph (a CUDA graph replay: the kernels back to back on the device), eager (the roofline's
#: per-kernel rule: each kernel costs max(device, its launch)), host_launch (kernels back to back on the device,
#: issued by a host that needs the profile's launch time: the step's device part is max(device, launch)),
#: piecewise (mixed steps only: CUDA-graph pieces between attention calls that run eagerly)
DECODE_LAUNCH = ("graph", "eager", "host_launch")
MIXED_LAUNCH = ("graph", "eager", "host_launch", "piecewise")
CAPTURE_RULES = ("vllm", "sglang", "trtllm", "none")


class ProfileError(SparsesimError):
    """An engine runtime profile that cannot be read (unknown name, missing file, malformed entry)."""


# ---- the typed profile ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class HostTerms:
    """Host seconds one step costs, by the step's content (all seconds):

    per_step          every step (scheduler, input packing, loop overhead)
    per_mixed_step    added when the step holds a prefill chunk
    per_request       each request scheduled in the step
    per_decode_row    each decoding request
    per_prefill_chunk each prefill chunk
    per_prefill_token each token of the prefill chunks
    per_query_token   each token of the step (decode rows and chunk tokens: Q)
    per_key           each key the step's attention reads (K: sum over requests of cached + new tokens)
    per_new_request   each request admitted in the step (new or resumed)
    per_finished      each request that finishes in the step
    per_first_token   each request whose first token comes out of the step"""

    per_step_s: float = 0.0
    per_mixed_step_s: float = 0.0
    per_request_s: float = 0.0
    per_decode_row_s: float = 0.0
    per_prefill_chunk_s: float = 0.0
    per_prefill_token_s: float = 0.0
    per_query_token_s: float = 0.0
    per_key_s: float = 0.0
    per_new_request_s: float = 0.0
    per_finished_s: float = 0.0
    per_first_token_s: float = 0.0

    def plus(self, other: "HostTerms") -> "HostTerms":
        return HostTerms(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)})

    def any(self) -> bool:
        return any(getattr(self, f.name) for f in fields(self))


#: YAML term names (unit suffix stripped) -> HostTerms fields
TERM_NAMES = {"base": "per_step_s", "per_step": "per_step_s", "gap": "per_step_s",
              "per_mixed_step": "per_mixed_step_s", "per_request": "per_request_s",
              "per_decode_row": "per_decode_row_s", "per_prefill_chunk": "per_prefill_chunk_s",
              "per_prefill_token": "per_prefill_token_s", "per_query_token": "per_query_token_s",
              "per_key": "per_key_s", "per_new_request": "per_new_request_s", "per_finished": "per_finished_s",
              "per_finished_request": "per_finished_s", "per_first_token": "per_first_token_s"}
#: host_time entries that are not host terms
NOT_HOST = {"launch", "launch_s", "launch_overlap", "launch_host_speed", "launch_modes", "device", "overlap_fraction",
            "first_seen_shape"}


@dataclass(frozen=True)
class LaunchModel:
    """Host seconds to issue a step's forward. `quantiles`: ((q, seconds), ...) with q in (0, 100) increasing, a
    measured distribution; `constant_s` the value used per step unless drawn (mode 'sample': per step from the
    quantiles, linear between them, the outer quantiles held beyond)."""

    constant_s: float
    quantiles: tuple = ()
    mode: str = "constant"
    #: host seconds of a step whose attention shape (query tokens Q, keys K of the whole step) the engine's process
    #: has already run: measured ~2.4x faster than a new shape (HF-CB: cuDNN's SDPA graph is cached per shape), None =
    #: no such rule. With it, constant_s / quantiles are the launch of a step whose shape is new
    seen_s: float | None = None
    #: how issuing the forward and running it on the device overlap: a step's forward takes (launch^p + device^p)^(1/p)
    #: (p = inf: max(launch, device), the GPU fully hidden behind the host or the reverse; p = 1: one after the
    #: other); None = inf. Measured: the forwards of steps with a prefill chunk, where both are comparable
    norm_p: float | None = None

    def forward_s(self, device_s, launch_s):
        """Seconds of a forward whose kernels take device_s on the GPU and launch_s to issue (scalars or arrays)."""
        p = self.norm_p
        if p is None:
            return max(device_s, launch_s) if isinstance(device_s, float) else np.maximum(device_s, launch_s)
        return (device_s ** p + launch_s ** p) ** (1.0 / p)

    def median_s(self) -> float:
        q = dict(self.quantiles)
        return float(q.get(50, self.constant_s))

    def mean_s(self) -> float:
        if not self.quantiles:
            return self.constant_s
        u = np.linspace(0.0005, 0.9995, 1000)
        return float(self._inverse(u).mean())

    def _inverse(self, u: np.ndarray) -> np.ndarray:
        qs = np.asarray([q for q, _ in self.quantiles], dtype=np.float64) / 100.0
        vs = np.asarray([v for _, v in self.quantiles], dtype=np.float64)
        return np.interp(u, qs, vs)

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        if self.mode != "sample" or not self.quantiles:
            return np.full(n, self.constant_s)
        return self._inverse(rng.random(n))


@dataclass(frozen=True)
class HostSpeedSeries:
    """A measured host-speed series, for VALIDATION only (serving.step_cost.validation_host_speed_series): at engine
    time t_s[i] the host ran factor[i] x slower than the launch model's level (a fixed-work probe timed before every
    step of a recorded run, divided by its median). The engine scales a step's launch by the factor measured nearest
    its start. It replays the exogenous host speed of one recorded run, to tell the model's structure apart from the
    host's speed; no prediction can have it."""

    t_s: np.ndarray
    factor: np.ndarray

    def at(self, t):
        """The factor measured nearest engine time t (a float or an array)."""
        ts = self.t_s
        j = np.searchsorted(ts, t)
        j = np.clip(j, 1, len(ts) - 1) if len(ts) > 1 else np.zeros_like(j)
        if len(ts) > 1:
            j = np.where(np.abs(ts[j - 1] - t) <= np.abs(ts[j] - t), j - 1, j)
        out = self.factor[j]
        return float(out) if np.ndim(out) == 0 else out


@dataclass(frozen=True)
class GraphRules:
    """How steps launch (DECODE_LAUNCH / MIXED_LAUNCH) and the CUDA-graph capture sizes decode batches are padded to.

    capture: a rule name (CAPTURE_RULES: vllm, sglang, trtllm) resolved per replica by capture_sizes(), a tuple of
    sizes, or None. pad_decode: a decode batch of b rows runs the smallest captured size >= b (else a batch whose
    size was not captured runs eagerly, TensorRT-LLM's default). eager_above: steps with more tokens than the
    largest captured size run eagerly (vLLM, SGLang, TensorRT-LLM)."""

    decode: str = "graph"
    mixed: str = "eager"
    capture: Any = None
    pad_decode: bool = True
    eager_above: bool = True
    eager_overlap: str | None = None    # kernel | step (serving.step_cost.eager_overlap), None: the engine's default

    def capture_sizes(self, max_num_seqs: int, max_num_batched_tokens: int, hardware, tp: int = 1,
                      query_len: int = 1) -> tuple | None:
        """The captured batch sizes (tokens of a uniform decode batch) on this replica, or None."""
        c = self.capture
        if c is None or c == "none":
            return None
        if isinstance(c, (tuple, list)):
            return tuple(sorted({int(x) for x in c}))
        arch = (getattr(hardware, "architecture", "") or "").lower()
        if c == "vllm":
            return vllm_capture_sizes(max_num_seqs, max_num_batched_tokens, arch, query_len)
        if c == "sglang":
            return sglang_capture_sizes(arch, tp)
        if c == "trtllm":
            return trtllm_capture_sizes()
        raise ProfileError(f"unknown capture-size rule {c!r}; known: {', '.join(CAPTURE_RULES)}")


def vllm_capture_sizes(max_num_seqs: int, max_num_batched_tokens: int, arch: str, query_len: int = 1) -> tuple:
    """vLLM V1 (vllm/config/vllm.py VllmConfig._set_cudagraph_sizes, v0.33.0): [1, 2, 4] + range(8, 256, 8) +
    range(256, max + 1, 16), plus max_num_batched_tokens when <= max; max = min(2 x max_num_seqs x decode query
    length, 512 on Hopper and older | 1024 on data-center Blackwell)."""
    cap = min(2 * int(max_num_seqs) * int(query_len), 1024 if arch == "blackwell" else 512)
    sizes = {1, 2, 4} | set(range(8, 256, 8)) | set(range(256, cap + 1, 16))
    if max_num_batched_tokens <= cap:
        sizes.add(int(max_num_batched_tokens))
    out = sorted(x for x in sizes if x <= cap)
    return tuple(out) if out else (1,)


def sglang_capture_sizes(arch: str, tp: int = 1) -> tuple:
    """SGLang 0.5.23 (sglang/srt/arg_groups/cuda_graph_hook.py generate_decode_cuda_graph_batch_sizes; max_bs from
    memory_hook.py): [1, 2, 4, 8, 12] + range(16, 257, 8) + range(272, 512, 16) + range(512, max_bs + 1, 32), kept
    <= max_bs, max_bs appended; max_bs = 256 on H100 / A100 / H200 at TP < 4, 512 at TP >= 4 and on B200."""
    mx = 512 if (arch == "blackwell" or tp >= 4) else 256
    sizes = {1, 2, 4, 8, 12} | set(range(16, 257, 8)) | set(range(272, 512, 16)) | set(range(512, mx + 1, 32))
    return tuple(sorted({x for x in sizes if x <= mx} | {mx}))


def trtllm_capture_sizes() -> tuple:
    """TensorRT-LLM PyTorch backend (tensorrt_llm/llmapi/llm_args.py CudaGraphConfig._generate_cuda_graph_batch_sizes,
    padding off, max_batch_size 0 -> 128): range(1, 32) + [32, 64, 128]."""
    return tuple(list(range(1, 32)) + [32, 64, 128])


@dataclass(frozen=True)
class MaskAttention:
    """One attention over the whole batch (all Q queries x all K keys under a block-diagonal bias mask): the step's
    attention costs per_key_s x K + per_qk_s x Q x K on the GPU it was measured on (`gpu`, a hardware name); on
    another GPU per_key scales with HBM bandwidth and per_qk with the dense bf16 peak (an assumption, in notes)."""

    per_key_s: float
    per_qk_s: float
    gpu: str = "H100-SXM"

    def on(self, hardware) -> "MaskAttention":
        if hardware is None or getattr(hardware, "name", self.gpu) == self.gpu:
            return self
        from hwmodels.spec import load_hardware

        ref = load_hardware(self.gpu)
        bw = ref.hbm_bw_bytes_s / hardware.hbm_bw_bytes_s
        fl = ref.flops_for("bf16") / hardware.flops_for("bf16")
        return MaskAttention(self.per_key_s * bw, self.per_qk_s * fl, hardware.name)


@dataclass(frozen=True)
class RuntimeProfile:
    """One engine's runtime model (module docstring). `sources` maps each applied quantity to its provenance;
    `notes` says what is unknown (taken as 0) or assumed."""

    engine: str
    version: str = ""
    file: str = ""
    host: HostTerms = field(default_factory=HostTerms)
    overlap_fraction: float = 0.0
    launch: LaunchModel | None = None
    graphs: GraphRules = field(default_factory=GraphRules)
    mask: MaskAttention | None = None
    api_per_request_s: float = 0.0
    api_per_token_s: float = 0.0
    launch_eager_s: float | None = None   # the runtime's host cost per eagerly launched kernel (None: the device's)
    kernels: str | None = None            # the engine's kernel set (runtime.kernels: fused | unfused | hf), None: the scenario's
    #: runtime.async_launch: the engine launches step N+1 while step N runs (async scheduling's loop,
    #: simulator.engine.async_launch); serving.step_cost.async_launch overrides it
    async_launch: bool = False
    #: runtime.async_admission: a request arriving while step N runs joins step N+2 (step N+1 was scheduled when N
    #: was launched); serving.step_cost.async_admission overrides it
    async_admission: bool = False
    #: runtime.kv_budget: how the engine sizes a device's KV pool (simulator.memory kv_budget_bytes: sglang | vllm),
    #: None: the scenario's (vLLM's rule)
    kv_budget: str | None = None
    #: runtime.prefill_attention: where one prompt's prefill attention runs under attention DP (Combo.prefill_attn: tp |
    #: dp), None: the scenario's (tp)
    prefill_attn: str | None = None
    allreduce: str | None = None          # the engine's tensor-parallel all-reduce (runtime.allreduce: nccl | vllm | sglang |
                                          # trtllm, simulator.kernels.allreduce), None: the scenario's (NCCL)
    #: the engine whose default attention kernel family fills a dense attention left at kernel: generic
    #: (runtime.attention_defaults: a key of simulator/kernels/data/engine_attention_defaults.yaml), None: none
    attention_engine: str | None = None
    sources: tuple = ()
    notes: tuple = ()

    def apply_attention(self, combo):
        """(combo, the family it now prices or None): a dense attention whose `kernel` the scenario did not set takes
        this engine's default family for the device's architecture and the model (engine_attention_defaults.yaml),
        where that file names the architecture and the family can run the model; a family the engine runs otherwise
        over an fp8 MLA cache (the file's `mla_fp8_as`: SGLang's fi_mla -> fi_mla_fp8cast) takes that form; a FlashInfer
        GQA family (set or defaulted) whose `flashinfer_prefill` the scenario did not set takes the engine's (the same
        file); unchanged otherwise."""
        from simulator.kernels.families import engine_default_kernel, engine_defaults, refuse

        att = combo.attention
        if self.attention_engine is not None and getattr(att, "name", "") == "dsa":
            return self._apply_dsa(combo, engine_defaults()), None
        if (self.attention_engine is None or getattr(att, "name", "") != "dense"
                or att.values.get("fa2_call", "sdpa") != "sdpa"):
            return combo, None
        arch = (engine_defaults().get(self.attention_engine) or {}).get(combo.hardware.architecture)
        if not arch:
            return combo, None
        values = {k: v for k, v in att.values.items() if k in att.given}
        fam = None
        if "kernel" not in att.given:
            mla = combo.model.mla is not None
            fam = engine_default_kernel(self.attention_engine, combo.hardware.architecture, mla, combo.kv_dtype)
            lay = combo.attn_layout
            if refuse(fam, np.asarray(lay.attn_heads_dev) / np.maximum(np.asarray(lay.attn_kv_heads_dev), 1), mla=mla):
                return combo, None
            values["kernel"] = fam
        kernel = values.get("kernel", att.values.get("kernel"))
        remap = (arch.get("mla_fp8_as") or {}).get(kernel) if combo.kv_dtype == "fp8" and combo.model.mla else None
        if remap:   # the family as this engine runs it over an fp8 MLA cache (engine_attention_defaults.yaml mla_fp8_as)
            values["kernel"] = kernel = remap
        mode = arch.get("flashinfer_prefill")
        set_mode = bool(mode) and "flashinfer_prefill" not in att.given and kernel in ("fi_decode", "fi_tc", "flashinfer")
        if set_mode:
            values["flashinfer_prefill"] = mode
        if fam is None and not set_mode and not remap:
            return combo, None
        return replace(combo, attention=type(att)(**values)), fam

    def _apply_dsa(self, combo, defaults: dict):
        """`combo` with this engine's DSA row layout (engine_attention_defaults.yaml `dsa`, replaced by
        `dsa_fp8_few_heads` with an fp8 cache below its `below_heads` query heads a device, by `dsa_bf16` with a bf16
        cache) in the dsa parameters the scenario did not set; unchanged where the file names none for the device's
        architecture."""
        att = combo.attention
        arch = (defaults.get(self.attention_engine) or {}).get(combo.hardware.architecture) or {}
        layout = dict(arch.get("dsa") or {})
        few = arch.get("dsa_fp8_few_heads")
        if few and combo.kv_dtype == "fp8" and float(np.max(np.asarray(combo.heads_dev, float))) < float(few["below_heads"]):
            layout.update({k: v for k, v in few.items() if k != "below_heads"})
        if combo.kv_dtype != "fp8":
            layout.update(arch.get("dsa_bf16") or {})
        fill = {k: v for k, v in layout.items() if k not in att.given}
        if not fill:
            return combo
        values = {k: v for k, v in att.values.items() if k in att.given} | fill
        return replace(combo, attention=type(att)(**values))

    def dsa_layout(self, combo) -> dict | None:
        """The DSA row layout this engine gives `combo` ({decode_rows, sparse_prefill}), None where it sets none."""
        from simulator.kernels.families import engine_defaults

        if self.attention_engine is None or getattr(combo.attention, "name", "") != "dsa":
            return None
        c = self._apply_dsa(combo, engine_defaults())
        if c is combo:
            return None
        out = {k: c.attention.values[k] for k in ("sparse_kernel", "decode_rows", "sparse_prefill", "short_prompt_dense",
                                                  "indexer_rows")}
        return out

    def with_overrides(self, **kw) -> "RuntimeProfile":
        return replace(self, **kw)

    def apply_layout(self, combo):
        """`combo` with this engine's KV pool rule (runtime.kv_budget) and its prefill attention's layout under
        attention DP (runtime.prefill_attention); unchanged where the profile names neither."""
        kw = {}
        if self.kv_budget is not None and getattr(combo, "kv_budget", "vllm") != self.kv_budget:
            kw["kv_budget"] = self.kv_budget
        if self.prefill_attn is not None and getattr(combo, "prefill_attn", "tp") != self.prefill_attn:
            kw["prefill_attn"] = self.prefill_attn
        return replace(combo, **kw) if kw else combo

    def apply_collectives(self, combo):
        """`combo` with this engine's tensor-parallel all-reduce (runtime.allreduce); unchanged when the profile names
        none. (The step cost cache must key on combo.allreduce.)"""
        if self.allreduce is None or getattr(combo, "allreduce", "nccl") == self.allreduce:
            return combo
        return replace(combo, allreduce=self.allreduce)


NO_PROFILE = RuntimeProfile(engine="none", graphs=GraphRules(decode="graph", mixed="eager", capture=None))


# ---- reading a profile ------------------------------------------------------------------------------------------
def _prov(entry: dict) -> str:
    """One line of provenance for an entry."""
    for k in ("measured", "source"):
        if k in entry and isinstance(entry[k], dict):
            d = entry[k]
            if k == "measured":
                return f"measured: {d.get('file', '?')} ({d.get('script', '?')}, {d.get('gpu', '?')}, {d.get('date', '?')})"
            return f"source: {d.get('repo', '?')} {d.get('file', '?')} @ {d.get('ref', '?')}"
    if entry.get("assumed"):
        return f"assumed: {entry.get('reason', '')}"
    if entry.get("unknown"):
        return f"needs {entry.get('needs', '?')}"
    return "no provenance"


def _entry(doc: dict, section: str, key: str, file: str) -> dict | None:
    sec = doc.get(section)
    if not isinstance(sec, dict) or key not in sec:
        return None
    e = sec[key]
    if not isinstance(e, dict) or "value" not in e:
        raise ProfileError(f"{section}.{key} must be a mapping with a value and its provenance", file=file,
                           field=f"{section}.{key}")
    return e


def _term(name: str, value: Any, file: str, fld: str) -> tuple[str, float]:
    """('per_key_s', seconds) from a unit-suffixed YAML term ('per_key_us': 0.12)."""
    base, _, unit = name.rpartition("_")
    if unit not in UNITS or base not in TERM_NAMES:
        raise ProfileError(f"unknown host term {name!r}: a name among {', '.join(sorted(TERM_NAMES))} with a unit "
                           "suffix _s, _ms or _us", file=file, field=fld)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ProfileError(f"must be a number >= 0, got {value!r}", file=file, field=fld)
    return TERM_NAMES[base], float(value) * UNITS[unit]


def _host_terms(doc: dict, file: str, sources: list, notes: list) -> HostTerms:
    """Sum of every host_time entry that holds terms (a mapping of unit-suffixed terms, or one term named by its
    key); unknown entries add a note."""
    ht = doc.get("host_time") or {}
    acc = {f.name: 0.0 for f in fields(HostTerms)}
    for key, e in ht.items():
        if key in NOT_HOST or not isinstance(e, dict) or "value" not in e:
            continue
        v = e["value"]
        if v is None:
            notes.append(f"host_time.{key}: unknown, taken as 0 ({_prov(e)})")
            continue
        items = v.items() if isinstance(v, dict) else [(key, v)]
        for name, x in items:
            f, s = _term(name, x, file, f"host_time.{key}.{name}" if isinstance(v, dict) else f"host_time.{key}")
            acc[f] += s
        sources.append((f"host_time.{key}", _prov(e)))
    return HostTerms(**acc)


def _launch(doc: dict, file: str, sources: list) -> LaunchModel | None:
    e = _entry(doc, "host_time", "launch", file)
    if e is None or not isinstance(e["value"], dict):
        return None
    qs = []
    for k, v in e["value"].items():
        if k.startswith("p") and k.endswith("_ms") and k[1:-3].isdigit():
            qs.append((int(k[1:-3]), float(v) * 1e-3))
    if not qs:
        raise ProfileError("host_time.launch needs quantiles pNN_ms", file=file, field="host_time.launch")
    qs.sort()
    p = None
    ov = _entry(doc, "host_time", "launch_overlap", file)
    if ov is not None and isinstance(ov["value"], dict) and ov["value"].get("norm_p") is not None:
        p = float(ov["value"]["norm_p"])
        if not p >= 1:
            raise ProfileError(f"norm_p must be >= 1, got {p!r}", file=file, field="host_time.launch_overlap")
        sources.append(("host_time.launch_overlap", _prov(ov)))
    seen = e["value"].get("seen_shape_p50_ms")
    if seen is not None and (isinstance(seen, bool) or not isinstance(seen, (int, float)) or not seen >= 0):
        raise ProfileError(f"must be a number >= 0, got {seen!r}", file=file, field="host_time.launch.seen_shape_p50_ms")
    lm = LaunchModel(constant_s=dict(qs).get(50, qs[len(qs) // 2][1]), quantiles=tuple(qs), norm_p=p,
                     seen_s=None if seen is None else float(seen) * 1e-3)
    sources.append(("host_time.launch", _prov(e)))
    return lm


def _mask(doc: dict, file: str, sources: list) -> MaskAttention | None:
    rt = doc.get("runtime") or {}
    e = rt.get("batch_mask_attention")
    if not isinstance(e, dict) or not e.get("value"):
        return None
    d = _entry(doc, "host_time", "device", file)
    if d is None or not isinstance(d["value"], dict) or "per_1e9_qk_ms" not in d["value"]:
        raise ProfileError("runtime.batch_mask_attention needs host_time.device with per_key_us and per_1e9_qk_ms",
                           file=file, field="host_time.device")
    v = d["value"]
    gpu = (d.get("measured") or {}).get("gpu", "H100-SXM")
    sources.append(("batch mask attention (per key, per Q x K)", _prov(d)))
    return MaskAttention(per_key_s=float(v.get("per_key_us", 0.0)) * 1e-6,
                         per_qk_s=float(v["per_1e9_qk_ms"]) * 1e-3 / 1e9, gpu=gpu)


def _runtime_value(doc: dict, key: str, file: str, sources: list, notes: list, allowed=None, default=None):
    e = _entry(doc, "runtime", key, file)
    if e is None:
        return default
    v = e["value"]
    if v is None:
        notes.append(f"runtime.{key}: unknown, taken as {default!r} ({_prov(e)})")
        return default
    if allowed is not None and v not in allowed:
        raise ProfileError(f"is {v!r}; allowed: {', '.join(map(str, allowed))}", file=file, field=f"runtime.{key}.value")
    sources.append((f"runtime.{key}", _prov(e)))
    return v


def parse_profile(doc: Any, file: str) -> RuntimeProfile:
    """A RuntimeProfile from a profile YAML document (schema: simulator/engine/profiles/README.md)."""
    if not isinstance(doc, dict) or "engine" not in doc:
        raise ProfileError("is not an engine runtime profile (a mapping with engine, version, sections)", file=file)
    sources: list = []
    notes: list = []
    host = _host_terms(doc, file, sources, notes)
    launch = _launch(doc, file, sources)
    rv = lambda k, **kw: _runtime_value(doc, k, file, sources, notes, **kw)  # noqa: E731
    decode = rv("decode_launch", allowed=DECODE_LAUNCH, default="graph")
    mixed = rv("mixed_launch", allowed=MIXED_LAUNCH, default="eager")
    cap = rv("capture_sizes", default=None)
    if isinstance(cap, list):
        if not cap or not all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in cap):
            raise ProfileError("must be a rule name or a list of positive batch sizes", file=file,
                               field="runtime.capture_sizes.value")
        cap = tuple(sorted(set(cap)))
    elif cap is not None and cap not in CAPTURE_RULES:
        raise ProfileError(f"is {cap!r}; allowed: {', '.join(CAPTURE_RULES)} or a list of sizes", file=file,
                           field="runtime.capture_sizes.value")
    pad = rv("pad_decode", allowed=(True, False), default=True)
    above = rv("eager_above_capture", allowed=(True, False), default=True)
    eo = rv("eager_overlap", allowed=("kernel", "step"), default=None)
    ov = rv("overlap_fraction", default=0.0)
    if isinstance(ov, bool) or not isinstance(ov, (int, float)) or not 0 <= ov <= 1:
        raise ProfileError(f"must be a number in [0, 1], got {ov!r}", file=file, field="runtime.overlap_fraction.value")
    al = rv("async_launch", allowed=(True, False), default=False)
    if al and ov:
        raise ProfileError(f"async_launch true with overlap_fraction {ov!r}: the async loop hides the host work itself "
                           "(allowed: overlap_fraction 0 or null)", file=file, field="runtime.overlap_fraction.value")
    adm = rv("async_admission", allowed=(True, False), default=False)
    api = []
    for k in ("api_per_request_ms", "api_per_token_ms"):
        x = rv(k, default=0.0)
        if isinstance(x, bool) or not isinstance(x, (int, float)) or x < 0:
            raise ProfileError(f"must be a number >= 0, got {x!r}", file=file, field=f"runtime.{k}.value")
        api.append(float(x) * 1e-3)
    kern = rv("kernels", allowed=("fused", "unfused", "hf"), default=None)
    ar = rv("allreduce", allowed=AR_ENGINES, default=None)
    kvb = rv("kv_budget", allowed=("vllm", "sglang"), default=None)
    pfa = rv("prefill_attention", allowed=("tp", "dp"), default=None)
    from simulator.kernels.families import engine_defaults
    ae = rv("attention_defaults", allowed=tuple(engine_defaults()), default=None)
    le = rv("launch_eager_us", default=None)
    if le is not None and (isinstance(le, bool) or not isinstance(le, (int, float)) or le <= 0):
        raise ProfileError(f"must be a positive number, got {le!r}", file=file, field="runtime.launch_eager_us.value")
    if decode == "host_launch" and launch is None:
        raise ProfileError("decode_launch host_launch needs host_time.launch (the measured time to issue a forward)",
                           file=file, field="runtime.decode_launch")
    mask = _mask(doc, file, sources)
    fs = (doc.get("host_time") or {}).get("first_seen_shape")
    if isinstance(fs, dict) and isinstance(fs.get("value"), dict):
        notes.append("host_time.first_seen_shape: not applied (one-off costs of new batch shapes and host stalls)")
    return RuntimeProfile(engine=str(doc["engine"]), version=str(doc.get("version", "")), file=file, host=host,
                          overlap_fraction=float(ov), launch=launch,
                          graphs=GraphRules(decode=decode, mixed=mixed, capture=cap, pad_decode=bool(pad),
                                            eager_above=bool(above), eager_overlap=eo),
                          mask=mask, api_per_request_s=api[0], api_per_token_s=api[1],
                          launch_eager_s=None if le is None else float(le) * 1e-6, kernels=kern, allreduce=ar, kv_budget=kvb, prefill_attn=pfa,
                          attention_engine=ae,
                          async_launch=bool(al), async_admission=bool(adm), sources=tuple(sources),
                          notes=tuple(notes))


_CACHE: dict = {}


def profile_path(name: str, base: Path | None = None) -> Path | None:
    """The YAML file of a serving.engine value (a name in ENGINES or a path), None for `none`."""
    if name in ENGINES:
        f = ENGINES[name]
        return None if f is None else PROFILES_DIR / f
    p = Path(name)
    if not p.is_absolute() and not p.exists() and base is not None:
        p = Path(base) / p
    if p.suffix not in (".yaml", ".yml") or not p.is_file():
        raise ProfileError(f"is {name!r}: neither an engine ({', '.join(ENGINES)}) nor a profile YAML file")
    return p


def load_profile(name: str, base: Path | None = None) -> RuntimeProfile:
    """The RuntimeProfile a serving.engine value names (read once per file and process)."""
    p = profile_path(name, base)
    if p is None:
        return NO_PROFILE
    key = str(p.resolve())
    hit = _CACHE.get(key)
    if hit is None:
        try:
            doc = yaml.safe_load(p.read_text())
        except (OSError, yaml.YAMLError) as e:
            raise ProfileError(f"cannot read {p}: {' '.join(str(e).split())[:160]}") from None
        hit = parse_profile(doc, str(p))
        _CACHE[key] = hit
    return hit


# ---- fitting host terms from a run's step timers --------------------------------------------------------------
#: the step-content columns of a steps frame -> HostTerms fields they multiply
FIT_COLUMNS = {"rows": "per_request_s", "n_decode": "per_decode_row_s", "n_prefill": "per_prefill_chunk_s",
               "prefill_tokens": "per_prefill_token_s", "tokens": "per_query_token_s", "keys": "per_key_s",
               "new_reqs": "per_new_request_s", "finished": "per_finished_s", "first_tokens": "per_first_token_s"}
PRE_TERMS = ("rows", "keys", "tokens", "new_reqs")
UPDATE_TERMS = ("rows", "finished", "first_tokens")
HOST_BOUND_SYNC_S = 0.002
STALL_S = 0.3
LAUNCH_QUANTILES = (5, 10, 25, 50, 75, 90, 95)
#: fewest host-bound decode steps of an already-seen attention shape for fit_host_terms to fit LaunchModel.seen_s
SEEN_MIN = 5


def fit_overlap_norm(launch_s, device_s, forward_s, grid=None) -> float:
    """The p of LaunchModel.forward_s that fits measured forwards best: (launch^p + device^p)^(1/p) against
    forward_s (the host's launch time + its wait for the GPU after the last launch), least squares in log, p on a
    grid of 0.05 from 1 to 8. Fit it on steps where launch and device are comparable (steps holding a prefill
    chunk); host-bound decode steps do not constrain it."""
    L, D, W = (np.asarray(x, dtype=np.float64) for x in (launch_s, device_s, forward_s))
    ok = np.isfinite(L) & np.isfinite(D) & np.isfinite(W) & (W > 0) & (L > 0) & (D > 0)
    L, D, W = L[ok], D[ok], W[ok]
    if not len(W):
        raise ValueError("no steps to fit the launch / device overlap on")
    grid = np.round(np.arange(1.0, 8.0001, 0.05), 2) if grid is None else np.asarray(grid, dtype=np.float64)
    err = [float(np.sum(np.log((L ** p + D ** p) ** (1.0 / p) / W) ** 2)) for p in grid]
    return float(grid[int(np.argmin(err))])


@dataclass(frozen=True)
class HostFit:
    """fit_host_terms' result: the host terms (pre-forward + update + gap), the launch distribution of host-bound
    decode steps, and the number of steps each part used. `profile_overrides()` gives RuntimeProfile fields."""

    host: HostTerms
    launch: LaunchModel | None
    n_steps: int
    n_launch: int
    pre: tuple = ()
    update: tuple = ()
    gap_s: float = 0.0

    def profile_overrides(self) -> dict:
        out = {"host": self.host}
        if self.launch is not None:
            out["launch"] = self.launch
        return out


def _col(steps, name: str) -> np.ndarray:
    return np.asarray(steps[name], dtype=np.float64)


def _lstsq(y: np.ndarray, cols: list[np.ndarray]) -> np.ndarray:
    a = np.column_stack([np.ones(len(y))] + cols)
    return np.linalg.lstsq(a, y, rcond=None)[0]


def fit_host_terms(steps, pre_terms=PRE_TERMS, update_terms=UPDATE_TERMS) -> HostFit:
    """Host terms from per-step timers (least squares; lab/serving/fit_host.py's formulas):

        pre    = a + sum b_i x content_i     sched_s + prep_s + kwargs_s (the host work before the forward)
        update = a + sum b_i x content_i     update_s (after the sampled ids reach the host)
        gap    = median of gap_s             (between two steps)
        launch = quantiles of launch_s over host-bound pure-decode steps (sync_s < 2 ms), stalls > 0.3 s left out;
                 with a seen_qk column (1: the step's (Q, K) ran before in the process), the quantiles of the new
                 shapes and the median of the seen ones (LaunchModel.seen_s; at least SEEN_MIN steps)

    steps: a mapping (dict of arrays or a pandas DataFrame) with those timer columns and the content columns of
    FIT_COLUMNS (rows, tokens, keys, new_reqs, finished, first_tokens, n_prefill, ...). Missing timer columns
    leave their part out (a frame with only `host_s` fits host_s against pre_terms). A negative fitted coefficient
    is kept: it is what the data say (printed by the caller)."""
    names = set(steps.keys()) if hasattr(steps, "keys") else set(steps.columns)
    n = len(_col(steps, "rows"))
    acc = {f.name: 0.0 for f in fields(HostTerms)}
    pre = upd = ()
    if {"sched_s", "prep_s", "kwargs_s"} <= names or "host_s" in names:
        y = (_col(steps, "host_s") if "host_s" in names else
             _col(steps, "sched_s") + _col(steps, "prep_s") + _col(steps, "kwargs_s"))
        ok = np.isfinite(y)
        c = _lstsq(y[ok], [_col(steps, t)[ok] for t in pre_terms])
        pre = tuple(float(x) for x in c)
        acc["per_step_s"] += pre[0]
        for t, x in zip(pre_terms, pre[1:]):
            acc[FIT_COLUMNS[t]] += x
    if "update_s" in names:
        y = _col(steps, "update_s")
        ok = np.isfinite(y)
        c = _lstsq(y[ok], [_col(steps, t)[ok] for t in update_terms])
        upd = tuple(float(x) for x in c)
        acc["per_step_s"] += upd[0]
        for t, x in zip(update_terms, upd[1:]):
            acc[FIT_COLUMNS[t]] += x
    gap = 0.0
    if "gap_s" in names:
        g = _col(steps, "gap_s")
        g = g[np.isfinite(g)]
        gap = float(np.median(g)) if len(g) else 0.0
        acc["per_step_s"] += gap
    launch = None
    nl = 0
    if {"launch_s", "sync_s", "n_prefill"} <= names:
        lau, sync, npf = _col(steps, "launch_s"), _col(steps, "sync_s"), _col(steps, "n_prefill")
        hb = (sync < HOST_BOUND_SYNC_S) & (npf == 0) & np.isfinite(lau) & (lau < STALL_S)
        nl = int(hb.sum())
        seen_s = None
        if "seen_qk" in names:
            sq = _col(steps, "seen_qk")
            if int((hb & (sq == 1)).sum()) >= SEEN_MIN and (hb & (sq == 0)).any():
                seen_s = float(np.median(lau[hb & (sq == 1)]))
                hb = hb & (sq == 0)
                nl = int(hb.sum())
        if nl:
            qs = tuple((q, float(np.percentile(lau[hb], q))) for q in LAUNCH_QUANTILES)
            launch = LaunchModel(constant_s=dict(qs)[50], quantiles=qs, seen_s=seen_s)
    return HostFit(host=HostTerms(**acc), launch=launch, n_steps=n, n_launch=nl, pre=pre, update=upd, gap_s=gap)
