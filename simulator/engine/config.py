"""The scenario's `serving:` section: request source, replicas, router, scheduler knobs, SLOs.

    serving:
      engine: vllm-v1                    # the engine runtime profile applied to every request and step:
                                         #  vllm-v1 | sglang | trtllm | hf-cb | hf-cb-efficient | own | none (the op model alone,
                                         #  the default) | a path to a profile YAML (simulator/engine/runtime.py,
                                         #  simulator/engine/profiles/README.md)
      requests:                          # exactly one of trace / poisson / gamma / closed_loop
        trace: mooncake_conversation     #  a shipped request trace (`simulator.traces.requests.SHIPPED`) or a path
        poisson: {rate: 2.0, count: 1000}          # rate in requests/s
        gamma: {rate: 2.0, cv: 2.0, count: 1000}   # burstier than Poisson when cv > 1
        closed_loop: {concurrency: 16, count: 500, warmup: 16, think_ms: 0}   # C requests in flight: the next
                                         #  is submitted when one finishes (vLLM --max-concurrency, genai-perf,
                                         #  aiperf), think_ms after its last token reached the client; the first
                                         #  `warmup` finished requests are left out of the summary
        input_tokens: {lognormal: {mean: 2048, cv: 1.0}, max: 32768}   # generated sources only
        output_tokens: {fixed: 256}                #  (simulator.traces.requests.length_dist_from_dict)
        limit: 1000                      # optional: the first N requests
        window_s: [0, 600]               # optional: requests arriving in [start, end) seconds of the trace
        time_scale: 1.0                  # arrival times x time_scale / rate_scale
        rate_scale: 1.0
      replicas:                          # replica groups; default: one replica of the scenario's first
        - count: 2                       #  hardware and model with each axis' first strategy value
          hardware: H100-SXM             # default: the scenario's first hardware
          model: Llama-3.1-8B            # default: the scenario's first model
          parallelism: {tp: 1}           # {tp, ep, attn_dp}
          strategies: {attention: dense, speculation: none, kv_policy: full, kv_dtype: bf16, weight_dtype: native}
          role: mixed                    # mixed | prefill | decode (disaggregated pools)
      router: least_outstanding_tokens   # round_robin | least_outstanding_tokens | prefix_aware (simulator.engine.routers)
      scheduler:                         # vLLM knobs (docs/SCHEDULER_POLICY.md); auto = vLLM's default
        max_num_batched_tokens: auto     #  8192 on >= 70 GiB GPUs other than A100, else 2048
        max_num_seqs: auto               #  1024 / 256 likewise
        block_size: 16
        enable_prefix_caching: true
        long_prefill_token_threshold: 0
        gpu_memory_utilization: 0.9      #  unset: the engine profile's own pool rule where it has one (sglang)
        num_blocks: auto                 #  KV blocks per replica (auto: from memory)
        cache_unit_tokens: auto          #  prefix-cache unit: the trace's hash-block size, else 512
        mixed_launch: eager              #  launch mode of steps holding a prefill chunk (eager | graph)
        policy: fcfs                     #  a registered scheduler policy (simulator.engine.scheduler.policies())
      step_cost:                         # how a step's price is formed (defaults: the op model alone)
        decode_context: mean             #  mean | max: decode attention at the rows' mean or longest KV length
                                         #   (an attention that reads the longest row itself, dense fa2_call:
                                         #   varlen, gets both either way)
        host_per_step_us: 0              #  host time added to every step (scheduler, input packing), measured;
                                         #   or {decode: N, mixed: M} (pure decode steps / steps with a chunk)
        host_per_row_us: 0               #  host time added per request scheduled in the step, measured
        host_floor_ms: 0                 #  a step never takes less (a host-bound engine), measured
        launch_eager_us: null            #  the runtime's host cost per eagerly launched kernel (steps with a
                                         #   prefill chunk), measured; null = the device's fitted bare launch
        eager_overlap: kernel            #  kernel | step: an eager step costs the sum over its kernels of max(device,
                                         #   launch) (the roofline's rule), or max(device time, host launch time)
                                         #   of the whole step (the host runs ahead through the launch queue)
        graph_sizes: none                #  none | vllm | [sizes]: pure decode steps run as the smallest captured
                                         #   CUDA graph >= their batch (padding rows attend one token); vllm =
                                         #   1, 2, 4, 8..248 by 8, 256..512 by 16, capped at max_num_seqs
        host_launch_ms: null             #  the host time to issue a step's forward, measured on your machine
                                         #   (replaces the engine profile's launch distribution)
        host_launch: median              #  median | sample: the profile's launch distribution as its median, or
                                         #   drawn per step (seeded)
        host_overlap: null               #  share f of the host time hidden under the GPU (async scheduling):
                                         #   a step costs (1 - f) H + max(device, f H); null = the engine
                                         #   profile's overlap_fraction (0 without a profile)
        async_admission: false           #  true: the engine plans step N+1 when step N starts (async
                                         #   scheduling), so a request arriving during step N joins step N+2
        async_launch: false              #  true: the host schedules, packs and launches step N+1 while step N
                                         #   runs (async scheduling): a step's token interval = max(its device
                                         #   time, the host's chain since step N-1's ids + its forward); an eager
                                         #   step's launch hides under the previous step (replaces host_overlap,
                                         #   which must then be absent or 0; simulator/engine/async_launch.py)
        validation_host_speed_series: null   # VALIDATION ONLY, never a prediction: {t_s: [...], factor: [...]}, a
                                         #   host-speed probe's series recorded in a run; each step's launch is
                                         #   scaled by the factor measured nearest its start (needs a launch:
                                         #   an engine profile's host_time.launch or host_launch_ms)
        host_warm_shapes: null           #  attention shapes the engine's process already ran (its per-shape
                                         #   host caches are warm; profiles with a seen-shape launch level):
                                         #   [[Q, K], ...] (query tokens, keys of a step) or a CSV FILE with
                                         #   columns tokens, keys (a recorded step log)
                                         # every step_cost knob given overrides the engine profile's term
        memory_budget_gb: 1              #  memory the step-cost tables of one replica group may hold (GiB)
      acceptance: model                  # model (the speculation strategy's acceptance) | trace (the scenario
                                         #  trace's spec.accept_len_samples) | {replay: FILE or [counts]} |
                                         #  {per_position: [a1, ..., aK]}: P(draft j accepted | drafts < j accepted)
      kv_transfer: {bandwidth_gbps: null, latency_us: null}   # disaggregation link; null = the spec's interconnect
      slo: {ttft_ms: 2000, tpot_ms: 100} # goodput counts requests within every given limit
      seed: 0
      decode_run_steps: 256              # fast path: pure-decode steps applied per event (0 = step by step)
      event_loop: heap                   # heap (fast, the default) | simpy (the reference: the same callbacks as
                                         #  simpy timeouts in a simpy.Environment; identical results, slower)
      trace_replay: per_step             # per_step (the default with a scenario trace:): each decode step draws
                                         #  the inputs its strategies read from the trace's per-step, per-layer
                                         #  distributions (simulator/engine/trace_replay.py) | mean: every step
                                         #  at the trace's mean statistics
      adaptation:                        # SSV's per-request switching between speculation tuples
        candidates: [{speculation: ...}] #  (simulator/engine/adaptive.py; equal drafts per round only)
        acceptance: {uniform: [0.2, 0.9]}
        eps: 0.1
        window: 8

The parser receives the parsed Scenario (simulator.scenario), never the raw document: a replica group's defaults are
the scenario's first hardware, model, axis values and dtypes, its runtime (launch, kernels) comes from the scenario's
`runtime:`, and the scenario's `trace:` statistics (parsed before this section) reach every replica's strategies as
combo.trace (built into the step-cost surfaces); its combo is built by Scenario.combo and checked by
simulator.combo.combo_refusal. Every mistake stops with one line naming the file and the field (ScenarioError).
"""
from __future__ import annotations

import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hwmodels.errors import ScenarioError, SparsesimError
from hwmodels.spec import load_hardware
from simulator.combo import combo_refusal
from simulator.engine import plugins  # noqa: F401 - registers the routers and policies beyond the built-in ones
from simulator.engine.adaptive import candidate_combos, parse_adaptation
from simulator.engine.routers import routers
from simulator.engine.scheduler import policies
from simulator.engine.sizing import ENGINE_BYTES_PER_OP_ROW, ENGINE_TABLE_BUDGET
from simulator.model import load_model
from simulator.precision import DTYPE_BYTES
from simulator.scenario import Scenario, as_scenario
from simulator.sections import FIELD_IN_MSG as _FIELD_IN_MSG
from simulator.sections import bare_message as _bare
from simulator.sections import err as _err
from simulator.sections import mapping as _mapping
from simulator.sections import number as _num
from simulator.sections import one_strategy as _one
from simulator.strategies.base import AXES, DEFAULT_VALUE
from simulator.traces.requests import SHIPPED, length_dist_from_dict

SOURCE_KEYS = {"trace", "poisson", "gamma", "closed_loop", "input_tokens", "output_tokens", "limit", "window_s",
               "time_scale", "rate_scale"}
SOURCE_KINDS = ("trace", "poisson", "gamma", "closed_loop")
TOP_KEYS = {"engine", "requests", "replicas", "router", "scheduler", "step_cost", "acceptance", "kv_transfer", "slo",
            "seed", "decode_run_steps", "adaptation", "event_loop", "trace_replay"}
REPLICA_KEYS = {"count", "hardware", "model", "parallelism", "strategies", "role"}
REPLICA_STRATEGY_KEYS = {"attention", "topk", "speculation", "verify_kernel", "schedule", "kv_policy", "kv_dtype",
                         "weight_dtype"}
ROLES = ("mixed", "prefill", "decode")
SCHEDULER_KEYS = {"max_num_batched_tokens", "max_num_seqs", "block_size", "enable_prefix_caching",
                  "long_prefill_token_threshold", "gpu_memory_utilization", "num_blocks", "cache_unit_tokens",
                  "mixed_launch", "policy"}
SLO_KEYS = ("ttft_ms", "tpot_ms", "e2e_ms")
MAX_REPLICAS = 4096
#: most replica groups of one serving section: each builds its own step-cost tables (~1-3 s each)
MAX_GROUPS = 64
#: Bounds of work the engine is asked for, checked when the section is read (check_request_volume,
#: check_engine_sizes); each refusal says the bound and why.
#: most prompt + output tokens of all requests of one run: ~70x the shipped Mooncake hour (1.5e8 tokens,
#: simulated in ~4 s); beyond it a run takes hours of wall time
MAX_REQUEST_TOKENS = 1e10
#: latest arrival a run may have (seconds; ~3 years): beyond it arrival times lose the precision of a float64
#: (a tiny rate puts arrivals near 1e300 s, where adding a step time of milliseconds changes nothing)
MAX_HORIZON_S = 1e8
#: most sequences a replica may batch (vLLM's defaults are 256 and 1024)
MAX_NUM_SEQS = 1 << 20
#: largest file of replayed accepted drafts read (bytes): millions of rounds; the cap is on what is read
MAX_REPLAY_BYTES = 256 * 2**20
MAX_GENERATED = 50_000_000


@dataclass
class SourceConfig:
    """Where requests come from (see module docstring)."""

    kind: str                      # trace | poisson | gamma | closed_loop
    trace: str | None = None
    rate: float = 0.0
    concurrency: int = 0           # closed_loop: requests in flight
    warmup: int = 0                # closed_loop: first finished requests left out of the summary
    think_s: float = 0.0           # closed_loop: client time between a request's last token and the next submission
    cv: float = 1.0
    count: int = 0
    input_len: Any = None          # LengthDist (generated sources)
    output_len: Any = None
    limit: int | None = None
    window_s: tuple | None = None
    time_scale: float = 1.0
    rate_scale: float = 1.0
    file: str = "<scenario>"


@dataclass
class ReplicaGroup:
    count: int
    combo: Any
    role: str = "mixed"
    label: str = ""


@dataclass
class ServingConfig:
    """The parsed `serving:` section. `scheduler` holds the knobs as given ('auto' resolved per replica
    by simulator.engine.sim)."""

    source: SourceConfig
    groups: list[ReplicaGroup]
    router: str = "least_outstanding_tokens"
    scheduler: dict = field(default_factory=dict)
    acceptance: Any = "model"      # 'model' or a numpy int array replayed round by round
    kv_bandwidth_bytes_s: float | None = None
    kv_latency_s: float | None = None
    slo: dict = field(default_factory=dict)
    seed: int = 0
    decode_run_steps: int = 256
    event_loop: str = "heap"               # serving.event_loop: heap | simpy (identical results; docs/DESIGN.md)
    trace_replay: str = "mean"             # serving.trace_replay: per_step | mean (simulator/engine/trace_replay.py)
    decode_context: str = "mean"
    host_per_step_s: float = 0.0
    host_floor_s: float = 0.0
    host_mixed_s: float | None = None      # host time of a step with a prefill chunk (None = host_per_step_s)
    host_per_row_s: float = 0.0
    launch_eager_s: float | None = None    # the runtime's eager launch cost (None = the device's)
    graph_sizes: tuple | None = None       # CUDA-graph batch sizes pure decode steps are padded to
    eager_overlap: str = "kernel"          # kernel | step (serving.step_cost.eager_overlap)
    step_cost_budget_bytes: float | None = None   # serving.step_cost.memory_budget_gb (None = the engine's default)
    engine: str = "none"                   # serving.engine: the runtime profile's name or path
    runtime: Any = None                    # simulator.engine.runtime.RuntimeProfile (None: the op model alone)
    step_cost_given: frozenset = frozenset()   # serving.step_cost knobs the user gave (they override the profile)
    host_launch_s: float | None = None     # serving.step_cost.host_launch_ms (None: the profile's)
    host_launch_mode: str = "median"       # median | sample (serving.step_cost.host_launch)
    host_overlap: float | None = None      # serving.step_cost.host_overlap (None: the profile's overlap_fraction)
    async_admission: bool = False          # serving.step_cost.async_admission: arrivals join the step after next
    async_launch: bool = False             # serving.step_cost.async_launch: step N+1 launched while N runs
    #: serving.step_cost.validation_host_speed_series (simulator.engine.runtime.HostSpeedSeries): validation only
    host_speed_series: Any = field(default=None, compare=False)
    host_warm_shapes: frozenset = frozenset()   # serving.step_cost.host_warm_shapes: (Q, K) already run
    adaptation: Any = None                 # simulator.engine.adaptive.AdaptationConfig (serving.adaptation)
    adaptation_combos: list = field(default_factory=list)   # per group: [its combo, candidate combos...]
    file: str = "<scenario>"

    @property
    def disaggregated(self) -> bool:
        return any(g.role != "mixed" for g in self.groups)

    @property
    def n_replicas(self) -> int:
        return sum(g.count for g in self.groups)








def _reraise_length(e: SparsesimError, file: str, fld: str) -> ScenarioError:
    """A length-distribution error (its message starts with field 'x': ...) as a ScenarioError on x."""
    msg = _bare(e)
    m = _FIELD_IN_MSG.match(msg)
    if m:
        return _err(msg[m.end():], file, m.group(1))
    return _err(msg, file, fld)






def _source(v: Any, file: str, base: Path) -> SourceConfig:
    fld = "serving.requests"
    if v is None:
        raise _err("is missing: give a request source (trace: NAME, poisson: {...} or gamma: {...})", file, fld)
    d = _mapping(v, SOURCE_KEYS, file, fld)
    kinds = [k for k in SOURCE_KINDS if k in d]
    if len(kinds) != 1:
        raise _err(f"give exactly one of {', '.join(SOURCE_KINDS)}; got {kinds or 'none'}", file, fld)
    kind = kinds[0]
    src = SourceConfig(kind=kind)
    if kind == "trace":
        t = d["trace"]
        if not isinstance(t, str) or not t.strip():
            raise _err(f"must be a shipped request trace ({', '.join(SHIPPED)}) or a path, got {t!r}", file,
                       f"{fld}.trace")
        if t not in SHIPPED:
            p = Path(t)
            if not p.is_absolute() and not p.exists():
                p = base / p
            if not p.is_file():
                raise _err(f"no such request trace {t!r}; shipped: {', '.join(SHIPPED)} (or a path to a JSONL, CSV "
                           "or Parquet file)", file, f"{fld}.trace")
            t = str(p)
        src.trace = t
        for k in ("input_tokens", "output_tokens"):
            if k in d:
                raise _err("applies to generated sources (poisson, gamma) only; a trace has its own lengths", file,
                           f"{fld}.{k}")
    else:
        if kind == "closed_loop":
            _closed_loop(d[kind], src, file, f"{fld}.closed_loop")
        else:
            g = _mapping(d[kind], {"rate", "count", "cv"} if kind == "gamma" else {"rate", "count"}, file,
                         f"{fld}.{kind}")
            for k in ("rate", "count"):
                if k not in g:
                    raise _err("is missing", file, f"{fld}.{kind}.{k}")
            src.rate = _num(g["rate"], file, f"{fld}.{kind}.rate", 0.0, 1e9)
            src.count = _num(g["count"], file, f"{fld}.{kind}.count", 0, MAX_GENERATED, integer=True)
            if src.count / src.rate > MAX_HORIZON_S:
                raise _err(f"{src.count:,} requests at {src.rate:g}/s arrive over ~{src.count / src.rate:.3g} s; at "
                           f"most {MAX_HORIZON_S:g} s (~3 years: beyond it float64 arrival times lose the precision "
                           "of a step)", file, f"{fld}.{kind}.rate")
            if kind == "gamma":
                src.cv = _num(g.get("cv", 1.0), file, f"{fld}.gamma.cv", 1e-3, 1e3, strict_lo=False)
        for k, attr in (("input_tokens", "input_len"), ("output_tokens", "output_len")):
            if k not in d:
                raise _err("is missing: a generated source needs a length distribution ({fixed: N}, {uniform: [lo, "
                           "hi]}, {lognormal: {mean: M, cv: C}} or {empirical: TRACE})", file, f"{fld}.{k}")
            try:
                setattr(src, attr, length_dist_from_dict(d[k], f"{fld}.{k}", base))
            except SparsesimError as e:
                raise _reraise_length(e, file, f"{fld}.{k}") from None
        check_request_volume(src.count, src.input_len.mean_tokens() + src.output_len.mean_tokens(), file, fld)
    if "limit" in d:
        src.limit = _num(d["limit"], file, f"{fld}.limit", 0, MAX_GENERATED, integer=True)
    if "window_s" in d:
        w = d["window_s"]
        if not isinstance(w, list) or len(w) != 2:
            raise _err(f"must be [start, end] in seconds, got {w!r}", file, f"{fld}.window_s")
        a = _num(w[0], file, f"{fld}.window_s", 0.0, 1e9, strict_lo=False)
        b = _num(w[1], file, f"{fld}.window_s", 0.0, 1e9)
        if b <= a:
            raise _err(f"end {b:g} must be after start {a:g}", file, f"{fld}.window_s")
        src.window_s = (a, b)
    src.time_scale = _num(d.get("time_scale", 1.0), file, f"{fld}.time_scale", 0.0, 1e6)
    src.rate_scale = _num(d.get("rate_scale", 1.0), file, f"{fld}.rate_scale", 0.0, 1e6)
    src.file = file
    return src


def _closed_loop(v: Any, src: SourceConfig, file: str, fld: str) -> None:
    """serving.requests.closed_loop: {concurrency: C, count: N, warmup: W, think_ms: T} (W < N, default 0; T >= 0,
    default 0)."""
    g = _mapping(v, {"concurrency", "count", "warmup", "think_ms"}, file, fld)
    for k in ("concurrency", "count"):
        if k not in g:
            raise _err("is missing", file, f"{fld}.{k}")
    src.concurrency = _num(g["concurrency"], file, f"{fld}.concurrency", 0, 1_000_000, integer=True)
    src.count = _num(g["count"], file, f"{fld}.count", 0, MAX_GENERATED, integer=True)
    src.warmup = _num(g.get("warmup", 0), file, f"{fld}.warmup", 0, MAX_GENERATED, strict_lo=False, integer=True)
    src.think_s = _num(g.get("think_ms", 0), file, f"{fld}.think_ms", 0.0, 1e9, strict_lo=False) * 1e-3
    if src.warmup >= src.count:
        raise _err(f"warmup {src.warmup} must be below count {src.count} (the requests measured are count - warmup)",
                   file, f"{fld}.warmup")


def closed_loop_source(src: SourceConfig, concurrency: int, warmup: int = 0, think_s: float = 0.0) -> SourceConfig:
    """The same source run as a closed loop of `concurrency` requests in flight (`sparsesim simulate
    --concurrency`): generated sources keep their count and lengths, a trace its requests' lengths in order."""
    from dataclasses import replace

    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ScenarioError(f"concurrency must be a positive integer, got {concurrency!r}")
    if not (isinstance(think_s, (int, float)) and 0 <= think_s < 1e6):
        raise ScenarioError(f"think time must be a number of seconds >= 0, got {think_s!r}")
    return replace(src, concurrency=int(concurrency), warmup=int(warmup), think_s=float(think_s))


def check_request_volume(n: int, mean_tokens: float, file: str, fld: str = "serving.requests") -> None:
    """Refuse a request source whose prompt + output tokens exceed MAX_REQUEST_TOKENS (n requests of
    `mean_tokens` each)."""
    total = float(n) * float(mean_tokens)
    if total > MAX_REQUEST_TOKENS:
        raise _err(f"{int(n):,} requests of ~{mean_tokens:,.0f} tokens (prompt + output) are ~{total:.3g} tokens; at "
                   f"most {MAX_REQUEST_TOKENS:g} per run (~70x the shipped Mooncake hour; beyond it a run takes "
                   "hours): use fewer or shorter requests", file, fld)


def check_trace_run(trace, src: SourceConfig) -> None:
    """The requests a run replays (after window, limit, --requests and scaling): at least one, a bounded volume
    and horizon. Called where the trace is built (simulator.engine.api.load_source)."""
    fld = "serving.requests"
    if len(trace) == 0:
        where = (f"the window {list(src.window_s)} s" if src.window_s is not None else "the source")
        raise _err(f"{where} holds no requests (the trace's arrivals lie elsewhere); nothing to simulate", src.file,
                   f"{fld}.window_s" if src.window_s is not None else fld)
    check_request_volume(len(trace), float(trace.input_tokens.mean() + trace.output_tokens.mean()), src.file, fld)
    last = float(trace.arrival_s[-1])
    if not last <= MAX_HORIZON_S:
        raise _err(f"the last request arrives at {last:.3g} s (after time_scale / rate_scale); at most "
                   f"{MAX_HORIZON_S:g} s (~3 years: beyond it float64 arrival times lose the precision of a step)",
                   src.file, fld)


def _replica_group(i: int, v: Any, file: str, base: Path, sc: Scenario, trace=None) -> ReplicaGroup:
    """serving.replicas[i]: a count, a role and one strategy tuple; what the group does not give is the scenario's
    first value (Scenario.combo)."""
    fld = f"serving.replicas[{i}]"
    d = _mapping(v, REPLICA_KEYS, file, fld)
    count = _num(d.get("count", 1), file, f"{fld}.count", 0, MAX_REPLICAS, integer=True)
    role = d.get("role", "mixed")
    if role not in ROLES:
        raise _err(f"is {role!r}; allowed: {', '.join(ROLES)}", file, f"{fld}.role")

    def load(loader, name, what):
        if not isinstance(name, str) or not name.strip():
            raise _err(f"must be a {what} name or a path, got {name!r}", file, f"{fld}.{what}")
        p = Path(name)
        if p.suffix in (".yaml", ".yml") and not p.is_absolute() and not p.exists():
            name = str(base / p)
        try:
            return loader(name)
        except SparsesimError as e:
            raise _err(str(e), file, f"{fld}.{what}") from None

    hw = load(load_hardware, d["hardware"], "hardware") if "hardware" in d else sc.hardware[0]
    model = load(load_model, d["model"], "model") if "model" in d else sc.models[0]

    par = _mapping(d.get("parallelism"), {"tp", "ep", "attn_dp"}, file, f"{fld}.parallelism")
    tp = _num(par.get("tp", 1), file, f"{fld}.parallelism.tp", 0, 1024, integer=True)
    ep = _num(par.get("ep", 1), file, f"{fld}.parallelism.ep", 0, 1024, integer=True)
    dp = _num(par.get("attn_dp", 1), file, f"{fld}.parallelism.attn_dp", 0, 1024, integer=True)
    if ep not in (1, tp):
        raise _err(f"ep={ep} with tp={tp}: ep must be 1 (experts TP-sharded) or equal tp", file, f"{fld}.parallelism.ep")
    if tp % dp:
        raise _err(f"attn_dp={dp} must divide tp={tp}", file, f"{fld}.parallelism.attn_dp")

    st = _mapping(d.get("strategies"), REPLICA_STRATEGY_KEYS, file, f"{fld}.strategies")
    values = {a: _one(a, st[a], file, f"{fld}.strategies.{a}", base) for a in AXES if a in st}
    kv = st.get("kv_dtype", sc.kv_dtype[0])
    kv = kv[0] if isinstance(kv, list) and kv else kv
    if kv not in DTYPE_BYTES:
        raise _err(f"is {kv!r}; allowed: {', '.join(DTYPE_BYTES)}", file, f"{fld}.strategies.kv_dtype")
    wd = st.get("weight_dtype", sc.weight_dtype[0])
    wd = wd[0] if isinstance(wd, list) and wd else wd
    if wd != "native" and wd not in DTYPE_BYTES:
        raise _err(f"is {wd!r}; allowed: native, {', '.join(DTYPE_BYTES)}", file, f"{fld}.strategies.weight_dtype")
    combo = sc.combo(hardware=hw, model=model, kv_dtype=kv, weight_dtype=wd, tp=tp, ep=ep, attn_dp=dp, trace=trace,
                     **values)
    return _group(combo, count, role, fld, file)


def _group(combo, count: int, role: str, fld: str, file: str) -> ReplicaGroup:
    """A replica group of `count` replicas running `combo` (refused with the tuple's reason)."""
    hw, model = combo.hardware, combo.model
    reason = combo_refusal(combo)
    if reason:
        raise _err(f"this replica cannot run: {reason}", file, fld)
    label = f"{hw.name} {model.name} {combo.parallel_label()} {combo.strategy_label()}"
    return ReplicaGroup(count=count, combo=combo, role=role, label=label)


def _scheduler(v: Any, file: str) -> dict:
    fld = "serving.scheduler"
    d = _mapping(v, SCHEDULER_KEYS, file, fld)
    out: dict = {}
    for k in ("max_num_batched_tokens", "max_num_seqs", "num_blocks", "cache_unit_tokens"):
        x = d.get(k, "auto")
        if x in ("auto", None):
            out[k] = "auto"
        else:
            out[k] = _num(x, file, f"{fld}.{k}", 0, MAX_NUM_SEQS if k == "max_num_seqs" else 1e9, integer=True)
    out["block_size"] = _num(d.get("block_size", 16), file, f"{fld}.block_size", 0, 4096, integer=True)
    out["long_prefill_token_threshold"] = _num(d.get("long_prefill_token_threshold", 0), file,
                                               f"{fld}.long_prefill_token_threshold", 0, 1e9, strict_lo=False,
                                               integer=True)
    out["gpu_memory_utilization"] = _num(d.get("gpu_memory_utilization", 0.9), file, f"{fld}.gpu_memory_utilization",
                                         0.0, 1.0)
    # an engine profile's own pool rule (runtime.kv_budget) applies where the scenario left the utilization unset
    out["gpu_memory_utilization_given"] = "gpu_memory_utilization" in d
    pc = d.get("enable_prefix_caching", True)
    if not isinstance(pc, bool):
        raise _err(f"must be true or false, got {pc!r}", file, f"{fld}.enable_prefix_caching")
    out["enable_prefix_caching"] = pc
    ml = d.get("mixed_launch", "eager")
    if ml not in ("eager", "graph"):
        raise _err(f"is {ml!r}; allowed: eager, graph", file, f"{fld}.mixed_launch")
    out["mixed_launch"] = ml
    out["mixed_launch_given"] = "mixed_launch" in d   # an engine profile's own mixed-step launch applies otherwise
    pol = d.get("policy", "fcfs")
    if not isinstance(pol, str) or pol not in policies():
        raise _err(f"is {pol!r}; allowed: {', '.join(policies())}", file, f"{fld}.policy")
    out["policy"] = pol
    if out["cache_unit_tokens"] != "auto" and out["cache_unit_tokens"] % out["block_size"]:
        raise _err(f"{out['cache_unit_tokens']} is not a multiple of block_size {out['block_size']}", file,
                   f"{fld}.cache_unit_tokens")
    return out


def check_engine_sizes(groups: list, sched: dict, file: str) -> None:
    """Sizes the engine allocates per replica group, checked before it builds anything: the exact step tables
    (max_num_batched_tokens rows x the step's op rows) within ENGINE_TABLE_BUDGET, and a given num_blocks within
    what the device's memory holds beside the weights and workspace (at gpu_memory_utilization 1)."""
    from simulator.engine.sizing import attention_kv_ratio, vllm_batch_defaults
    from simulator.engine.step_cost import kv_cache_blocks
    from simulator.layers import body_ops
    from simulator.ops import OpBuilder

    fld = "serving.scheduler"
    for g in groups:
        combo = g.combo
        mnbt = sched["max_num_batched_tokens"]
        if mnbt == "auto":
            mnbt = vllm_batch_defaults(combo.hardware)[0]
        b = OpBuilder(1)
        body_ops(b, combo, np.ones(1), np.ones(1), "prefill", lambda bb, count: None)
        n_ops = max(1, len(b.build().flops))
        need = float(mnbt) * n_ops * ENGINE_BYTES_PER_OP_ROW
        if need > ENGINE_TABLE_BUDGET:
            most = int(ENGINE_TABLE_BUDGET // (n_ops * ENGINE_BYTES_PER_OP_ROW))
            raise _err(f"{mnbt:,} tokens per step: the engine prices every step size up to it exactly, one row per op "
                       f"({n_ops} ops per step for {g.label}), ~{need / 2**30:.1f} GiB; the budget is "
                       f"{ENGINE_TABLE_BUDGET / 2**30:g} GiB, so at most {most:,} here", file,
                       f"{fld}.max_num_batched_tokens")
        nb = sched["num_blocks"]
        if nb != "auto":
            most = kv_cache_blocks(combo, sched["block_size"], mnbt, 1.0)
            ratio = attention_kv_ratio(combo)
            if 0 < ratio < 1:
                most = int(most / ratio)
            if nb > most:
                raise _err(f"{nb:,} KV blocks of {sched['block_size']} tokens do not fit: {g.label} holds at most "
                           f"{most:,} beside its weights and workspace (all of the device's memory)", file,
                           f"{fld}.num_blocks")


STEP_COST_KEYS = {"decode_context", "host_per_step_us", "host_per_row_us", "host_floor_ms", "launch_eager_us",
                  "graph_sizes", "eager_overlap", "host_launch_ms", "host_launch", "host_warm_shapes",
                  "host_overlap", "async_admission", "async_launch", "validation_host_speed_series",
                  "memory_budget_gb"}
#: most (Q, K) pairs serving.step_cost.host_warm_shapes may list, and the bytes its file may hold
MAX_WARM_SHAPES = 5_000_000
MAX_WARM_SHAPES_BYTES = 256 * 2**20
#: vLLM's default CUDA-graph capture sizes (vllm/config/compilation.py: [1, 2, 4] + range(8, 256, 8) +
#: range(256, max_cudagraph_capture_size + 1, 16), max_cudagraph_capture_size = 512), cut at max_num_seqs
VLLM_MAX_CAPTURE = 512


def vllm_graph_sizes(max_num_seqs: int) -> tuple:
    top = min(VLLM_MAX_CAPTURE, int(max_num_seqs))
    sizes = [1, 2, 4] + list(range(8, 256, 8)) + list(range(256, VLLM_MAX_CAPTURE + 1, 16))
    return tuple(sorted({x for x in sizes if x <= top} | {top}))


def _graph_sizes(v: Any, sched: dict, file: str):
    fld = "serving.step_cost.graph_sizes"
    if v is None or v == "none":
        return None
    if v == "vllm":
        seqs = sched.get("max_num_seqs", "auto")
        return vllm_graph_sizes(VLLM_MAX_CAPTURE if seqs == "auto" else seqs)
    if isinstance(v, list) and v and all(isinstance(x, int) and not isinstance(x, bool) and 0 < x <= 1 << 20
                                         for x in v):
        return tuple(sorted(set(v)))
    raise _err(f"is {v!r}; allowed: none, vllm, or a list of positive batch sizes", file, fld)


def _engine(v: Any, file: str, base: Path):
    """serving.engine: (name, RuntimeProfile or None)."""
    from simulator.engine.runtime import ENGINES, load_profile

    fld = "serving.engine"
    if not isinstance(v, str) or not v.strip():
        raise _err(f"must be an engine ({', '.join(ENGINES)}) or a path to a profile YAML, got {v!r}", file, fld)
    try:
        prof = load_profile(v, base)
    except SparsesimError as e:
        raise _err(_bare(e), file, fld) from None
    return v, (None if prof.engine == "none" else prof)


def _acceptance(v: Any, file: str, base: Path):
    fld = "serving.acceptance"
    if v is None or v == "model":
        return "model"
    if v == "trace":
        return "trace"
    if not isinstance(v, dict):
        raise _err(f"is {v!r}; allowed: model (the speculation strategy's acceptance), trace (the scenario trace's "
                   "recorded rounds), {replay: FILE or [accepted drafts per round, ...]} or {per_position: [a1, ..., "
                   "aK]}", file, fld)
    d = _mapping(v, {"replay", "per_position"}, file, fld)
    if len(d) != 1:
        raise _err("must be 'model', {replay: FILE or [accepted drafts per round, ...]} or {per_position: [...]}",
                   file, fld)
    if "per_position" in d:
        pp = d["per_position"]
        if (not isinstance(pp, list) or not pp or any(isinstance(x, bool) or not isinstance(x, (int, float))
                                                        or not 0 <= x <= 1 for x in pp)):
            raise _err(f"must list one probability in [0, 1] per draft position (draft j accepted given drafts "
                       f"1..j-1 were), got {pp!r}", file, f"{fld}.per_position")
        return {"per_position": tuple(float(x) for x in pp)}
    r = d["replay"]
    if isinstance(r, list):
        arr = r
    elif isinstance(r, str) and r.strip():
        p = Path(r)
        if not p.is_absolute() and not p.exists():
            p = base / p
        arr = _read_acceptance(p, file, f"{fld}.replay")
    else:
        raise _err(f"must be a file (.npz with 'accepted', .npy, or a text/CSV column) or a list, got {r!r}", file,
                   f"{fld}.replay")
    if not arr or any(isinstance(x, bool) or not isinstance(x, (int, np.integer)) or x < 0 for x in arr):
        raise _err("must hold at least one whole number >= 0 (accepted drafts of each recorded round)", file,
                   f"{fld}.replay")
    return np.asarray(arr, dtype=np.int64)


def check_replay(acc: np.ndarray, groups: list, file: str) -> None:
    """Replayed accepted drafts must be possible for every speculating replica: at most its drafts per round (a
    chain's k, a tree's levels); a replay with no speculating replica would be ignored."""
    fld = "serving.acceptance.replay"
    spec = [g for g in groups if g.combo.speculation.accept_length_pmf() is not None]
    if not spec:
        raise _err("replays accepted drafts, but no replica group speculates (speculation: none)", file, fld)
    for g in spec:
        most = len(g.combo.speculation.accept_length_pmf()) - 1
        if int(acc.max()) > most:
            i = int(np.argmax(acc > most))
            raise _err(f"round {i + 1} accepts {int(acc[i])} drafts; {g.label} drafts at most {most} per round", file,
                       fld)


def _read_acceptance(p: Path, file: str, fld: str) -> list:
    import io

    from hwmodels.yamlio import read_bytes

    if not p.is_file():
        raise _err(f"{str(p)!r} is not a regular file" if p.exists() else f"no such file {str(p)!r}", file, fld)
    try:
        raw = read_bytes(p, "file of accepted drafts", MAX_REPLAY_BYTES)
    except SparsesimError as e:
        raise _err(str(e), file, fld) from None
    try:
        if p.suffix == ".npz":
            with np.load(io.BytesIO(raw), allow_pickle=False) as z:
                if "accepted" not in z:
                    raise _err(f"{p} has no array 'accepted'", file, fld)
                a = z["accepted"]
        elif p.suffix == ".npy":
            a = np.load(io.BytesIO(raw), allow_pickle=False)
        else:
            rows = [x.strip().split(",")[0] for x in raw.decode("utf-8").splitlines() if x.strip()]
            if rows and not rows[0].lstrip("-").isdigit():
                rows = rows[1:]  # a header
            a = np.array([int(x) for x in rows])
    except ScenarioError:
        raise
    except (ValueError, OSError, UnicodeDecodeError, EOFError, zipfile.BadZipFile) as e:
        raise _err(f"cannot read {p}: {' '.join(str(e).split())[:120]}", file, fld) from None
    a = np.asarray(a)
    if a.ndim != 1 or a.dtype.kind not in "iu":
        raise _err(f"{p}: accepted drafts must be a 1-D integer array", file, fld)
    return [int(x) for x in a]


#: samples a validation host-speed series may hold
MAX_HOST_SPEED_SAMPLES = 1_000_000


def _host_speed_series(v: Any, file: str):
    """serving.step_cost.validation_host_speed_series: {t_s: [...], factor: [...]} (engine seconds, increasing;
    factors > 0), or None. Validation only (simulator.engine.runtime.HostSpeedSeries)."""
    from simulator.engine.runtime import HostSpeedSeries

    fld = "serving.step_cost.validation_host_speed_series"
    if v is None:
        return None
    m = _mapping(v, {"t_s", "factor"}, file, fld)
    out = {}
    for k in ("t_s", "factor"):
        x = m.get(k)
        if not isinstance(x, (list, tuple)) or not x or len(x) > MAX_HOST_SPEED_SAMPLES:
            raise _err(f"{k} must be a non-empty list of numbers (at most {MAX_HOST_SPEED_SAMPLES:,}), got "
                       f"{type(x).__name__}", file, f"{fld}.{k}")
        if any(isinstance(y, bool) or not isinstance(y, (int, float, np.integer, np.floating)) for y in x):
            raise _err(f"{k} must hold numbers only", file, f"{fld}.{k}")
        out[k] = np.asarray(x, dtype=np.float64)
        if not np.isfinite(out[k]).all():
            raise _err(f"{k} must hold finite numbers", file, f"{fld}.{k}")
    t, f = out["t_s"], out["factor"]
    if len(t) != len(f):
        raise _err(f"t_s has {len(t)} samples and factor {len(f)}; allowed: one factor per time", file, fld)
    if len(t) > 1 and not (np.diff(t) > 0).all():
        raise _err("t_s must increase strictly", file, f"{fld}.t_s")
    if not (f > 0).all():
        raise _err("every factor must be > 0 (the host's time per unit of work / its level)", file, f"{fld}.factor")
    return HostSpeedSeries(t_s=t, factor=f)


def _warm_shapes(v: Any, file: str, base: Path) -> frozenset:
    """serving.step_cost.host_warm_shapes: the (query tokens, keys) step shapes the engine's process has already run,
    as a list of [Q, K] pairs or a CSV file with columns `tokens` and `keys` (.csv or .csv.gz; e.g. a step log of
    lab/serving/hf_cb_runtime.py). Empty when absent."""
    fld = "serving.step_cost.host_warm_shapes"
    if v is None:
        return frozenset()
    if isinstance(v, str) and v.strip():
        p = Path(v)
        if not p.is_absolute() and not p.exists():
            p = base / p
        pairs = _read_warm_shapes(p, file, fld)
    elif isinstance(v, list):
        if len(v) > MAX_WARM_SHAPES:
            raise _err(f"lists {len(v):,} shapes; at most {MAX_WARM_SHAPES:,}", file, fld)
        pairs = v
    else:
        raise _err(f"must be a list of [Q, K] pairs (query tokens, keys of a step) or a CSV file with columns tokens, "
                   f"keys, got {v!r}", file, fld)
    out = set()
    for i, x in enumerate(pairs):
        if (not isinstance(x, (list, tuple)) or len(x) != 2
                or any(isinstance(y, bool) or not isinstance(y, (int, np.integer)) or y < 0 for y in x)):
            raise _err(f"entry {i} is {x!r}; each shape is [Q, K]: two whole numbers >= 0 (query tokens, keys of a "
                       "step)", file, fld)
        out.add((int(x[0]), int(x[1])))
    return frozenset(out)


def _read_warm_shapes(p: Path, file: str, fld: str) -> list:
    import csv
    import gzip
    import io

    from hwmodels.yamlio import read_bytes

    if not p.is_file():
        raise _err(f"{str(p)!r} is not a regular file" if p.exists() else f"no such file {str(p)!r}", file, fld)
    try:
        raw = read_bytes(p, "file of warm shapes", MAX_WARM_SHAPES_BYTES)
        if p.name.endswith(".gz"):
            raw = gzip.GzipFile(fileobj=io.BytesIO(raw)).read(MAX_WARM_SHAPES_BYTES + 1)
            if len(raw) > MAX_WARM_SHAPES_BYTES:
                raise _err(f"{p} unpacks to more than {MAX_WARM_SHAPES_BYTES // 2**20} MiB", file, fld)
        rows = csv.DictReader(io.StringIO(raw.decode("utf-8")))
        if not rows.fieldnames or not {"tokens", "keys"} <= set(rows.fieldnames):
            raise _err(f"{p} needs columns tokens and keys (query tokens, keys of each step); it has "
                       f"{', '.join(rows.fieldnames or []) or 'none'}", file, fld)
        pairs = []
        for r in rows:
            pairs.append([int(float(r["tokens"])), int(float(r["keys"]))])
            if len(pairs) > MAX_WARM_SHAPES:
                raise _err(f"{p} lists more than {MAX_WARM_SHAPES:,} shapes", file, fld)
    except ScenarioError:
        raise
    except SparsesimError as e:
        raise _err(str(e), file, fld) from None
    except (ValueError, OSError, UnicodeDecodeError, EOFError, TypeError) as e:
        raise _err(f"cannot read {p}: {' '.join(str(e).split())[:120]}", file, fld) from None
    return pairs


def parse_serving_section(value: Any, file: str, base: Path, scenario: Scenario | dict) -> ServingConfig:
    """Validate the `serving:` section (signature of simulator.scenario.SECTION_PARSERS): `scenario` is the parsed
    Scenario (a library caller may hand a mapping of its hardware / model / strategies / runtime / trace instead:
    simulator.scenario.scenario_setup reads it)."""
    base = Path(base) if base is not None else Path(".")
    sc = as_scenario(scenario, file, base)
    d = _mapping(value, TOP_KEYS, file, "serving")
    if not d:
        raise _err("is empty: give at least a request source under serving.requests", file, "serving")
    source = _source(d.get("requests"), file, base)
    reps = d.get("replicas", [{}])
    if not isinstance(reps, list) or not reps:
        raise _err("must be a non-empty list of replica groups ({count: N, hardware: ..., ...})", file,
                   "serving.replicas")
    if len(reps) > MAX_GROUPS:
        raise _err(f"lists {len(reps)} replica groups; at most {MAX_GROUPS} (each builds its own step-cost tables, ~1-3 s "
                   "each): give identical replicas one group with a count", file, "serving.replicas")
    stats = sc.trace
    groups = [_replica_group(i, r, file, base, sc, stats) for i, r in enumerate(reps)]
    total = sum(g.count for g in groups)
    if total > MAX_REPLICAS:
        raise _err(f"{total} replicas in all; at most {MAX_REPLICAS}", file, "serving.replicas")
    roles = {g.role for g in groups}
    if roles != {"mixed"}:
        if "mixed" in roles or roles != {"prefill", "decode"}:
            raise _err(f"disaggregated serving needs prefill and decode groups and no mixed ones; got roles "
                       f"{sorted(roles)}", file, "serving.replicas")
    router = d.get("router", "least_outstanding_tokens")
    if not isinstance(router, str) or router not in routers():
        raise _err(f"is {router!r}; allowed: {', '.join(routers())}", file, "serving.router")
    sched = _scheduler(d.get("scheduler"), file)
    check_engine_sizes(groups, sched, file)
    acc = _acceptance(d.get("acceptance"), file, base)
    if isinstance(acc, np.ndarray):
        check_replay(acc, groups, file)
    if isinstance(acc, str) and acc == "trace":
        if stats is None or not stats.has("spec.accept_len_samples"):
            raise _err("'trace' replays the scenario trace's spec.accept_len_samples; "
                       + ("this scenario has no trace: section" if stats is None else
                          f"trace {stats.name} has none (it records no draft/target pair)"), file,
                       "serving.acceptance")
        acc = np.asarray(stats.get("spec.accept_len_samples"), dtype=np.float64)
        acc = acc[np.isfinite(acc)].astype(np.int64)
        if not len(acc):
            raise _err(f"trace {stats.name}: spec.accept_len_samples holds no rounds", file, "serving.acceptance")
        check_replay(acc, groups, file)
    if isinstance(acc, dict):
        k = len(acc["per_position"])
        for i, g in enumerate(groups):
            sp = g.combo.speculation
            if int(sp.draft_tokens) != k or getattr(sp, "tree", None) is not None:
                raise _err(f"lists {k} positions; replica group {i} verifies {int(sp.draft_tokens)} drafts per round"
                           + (" in a tree (per-position chain acceptance needs a chain)" if getattr(sp, "tree", None)
                              else ""), file, "serving.acceptance.per_position")
    kvt = _mapping(d.get("kv_transfer"), {"bandwidth_gbps", "latency_us"}, file, "serving.kv_transfer")
    bw = kvt.get("bandwidth_gbps")
    lat = kvt.get("latency_us")
    bw = None if bw is None else _num(bw, file, "serving.kv_transfer.bandwidth_gbps", 0.0, 1e7) * 1e9
    lat = None if lat is None else _num(lat, file, "serving.kv_transfer.latency_us", 0.0, 1e9, strict_lo=False) * 1e-6
    if roles != {"mixed"}:
        for g in groups:
            hw = g.combo.hardware
            if bw is None and hw.link_bw_bytes_s is None:
                raise _err(f"{hw.name} has no sourced interconnect bandwidth to move KV between pools; give "
                           "serving.kv_transfer.bandwidth_gbps", file, "serving.kv_transfer")
    sc_ = _mapping(d.get("step_cost"), STEP_COST_KEYS, file, "serving.step_cost")
    dctx = sc_.get("decode_context", "mean")
    if dctx not in ("mean", "max"):
        raise _err(f"is {dctx!r}; allowed: mean, max", file, "serving.step_cost.decode_context")
    hps = sc_.get("host_per_step_us", 0)
    fld_h = "serving.step_cost.host_per_step_us"
    if isinstance(hps, dict):
        hd = _mapping(hps, {"decode", "mixed"}, file, fld_h)
        host_step = _num(hd.get("decode", 0), file, f"{fld_h}.decode", 0.0, 1e9, strict_lo=False) * 1e-6
        host_mixed = _num(hd.get("mixed", 0), file, f"{fld_h}.mixed", 0.0, 1e9, strict_lo=False) * 1e-6
    else:
        host_step = _num(hps, file, fld_h, 0.0, 1e9, strict_lo=False) * 1e-6
        host_mixed = None
    host_row = _num(sc_.get("host_per_row_us", 0), file, "serving.step_cost.host_per_row_us", 0.0, 1e9,
                    strict_lo=False) * 1e-6
    host_floor = _num(sc_.get("host_floor_ms", 0), file, "serving.step_cost.host_floor_ms", 0.0, 1e9,
                      strict_lo=False) * 1e-3
    le = sc_.get("launch_eager_us")
    launch_eager = None if le is None else _num(le, file, "serving.step_cost.launch_eager_us", 0.0, 1e6) * 1e-6
    graph_sizes = _graph_sizes(sc_.get("graph_sizes", "none"), sched, file)
    eo = sc_.get("eager_overlap", "kernel")
    if eo not in ("kernel", "step"):
        raise _err(f"is {eo!r}; allowed: kernel, step", file, "serving.step_cost.eager_overlap")
    mb = sc_.get("memory_budget_gb")
    budget = None if mb is None else _num(mb, file, "serving.step_cost.memory_budget_gb", 0.0, 1024.0) * 2**30
    hl = sc_.get("host_launch_ms")
    host_launch = None if hl is None else _num(hl, file, "serving.step_cost.host_launch_ms", 0.0, 1e6,
                                               strict_lo=False) * 1e-3
    hlm = sc_.get("host_launch", "median")
    if hlm not in ("median", "sample"):
        raise _err(f"is {hlm!r}; allowed: median, sample", file, "serving.step_cost.host_launch")
    ho = sc_.get("host_overlap")
    host_overlap = None if ho is None else _num(ho, file, "serving.step_cost.host_overlap", 0.0, 1.0, strict_lo=False)
    aa = sc_.get("async_admission", False)
    if not isinstance(aa, bool):
        raise _err(f"is {aa!r}; allowed: true, false", file, "serving.step_cost.async_admission")
    al = sc_.get("async_launch", False)
    if not isinstance(al, bool):
        raise _err(f"is {al!r}; allowed: true, false", file, "serving.step_cost.async_launch")
    if al and host_overlap:
        raise _err(f"is {host_overlap!r} with async_launch: true; the async loop hides the host work itself "
                   "(allowed with async_launch: absent, null or 0)", file, "serving.step_cost.host_overlap")
    speed = _host_speed_series(sc_.get("validation_host_speed_series"), file)
    warm = _warm_shapes(sc_.get("host_warm_shapes"), file, base)
    engine, runtime = _engine(d.get("engine", "none"), file, base)
    slo = _mapping(d.get("slo"), set(SLO_KEYS), file, "serving.slo")
    slo = {k: _num(x, file, f"serving.slo.{k}", 0.0, 1e9) for k, x in slo.items()}
    seed = _num(d.get("seed", 0), file, "serving.seed", 0, 2**63 - 1, strict_lo=False, integer=True)
    drs = _num(d.get("decode_run_steps", 256), file, "serving.decode_run_steps", 0, 1_000_000, strict_lo=False,
               integer=True)
    loop = d.get("event_loop", "heap")
    if loop not in ("heap", "simpy"):
        raise _err(f"is {loop!r}; allowed: heap, simpy", file, "serving.event_loop")
    replay = d.get("trace_replay", "per_step" if stats is not None else "mean")
    if replay not in ("per_step", "mean"):
        raise _err(f"is {replay!r}; allowed: per_step, mean", file, "serving.trace_replay")
    if replay == "per_step" and stats is None:
        raise _err("per_step replays the scenario trace step by step; this scenario has no trace: section", file,
                   "serving.trace_replay")
    adapt = parse_adaptation(d.get("adaptation"), file)
    adapt_combos = []
    if adapt is not None:
        if not (isinstance(acc, str) and acc == "model"):
            raise _err("per-request switching draws accepted drafts from each request's candidate; it cannot replay "
                       "recorded acceptance (serving.acceptance: model)", file, "serving.adaptation")
        adapt_combos = [candidate_combos(g.combo, adapt, file, "serving.adaptation") for g in groups]
    return ServingConfig(source=source, groups=groups, router=router, scheduler=sched, acceptance=acc,
                         kv_bandwidth_bytes_s=bw, kv_latency_s=lat, slo=slo, seed=seed, decode_run_steps=drs,
                         event_loop=loop, trace_replay=replay,
                         decode_context=dctx, host_per_step_s=host_step, host_floor_s=host_floor,
                         host_mixed_s=host_mixed, host_per_row_s=host_row, launch_eager_s=launch_eager,
                         graph_sizes=graph_sizes, eager_overlap=eo, step_cost_budget_bytes=budget, adaptation=adapt,
                         adaptation_combos=adapt_combos, file=file, engine=engine, runtime=runtime,
                         step_cost_given=frozenset(sc_), host_launch_s=host_launch, host_launch_mode=hlm,
                         host_warm_shapes=warm, host_overlap=host_overlap, async_admission=aa, async_launch=al,
                         host_speed_series=speed)


def serving_template(requests: Any, scheduler: Any, router: Any, seed: int, scenario: Scenario, file: str,
                     base: Path) -> ServingConfig:
    """A ServingConfig with a request source (the keys of serving.requests), scheduler knobs, a router and a seed,
    every other knob at its default, and one replica of dense attention at TP1 (bf16 KV, native weights, no trace)
    on the scenario's first hardware and model: the template `sparsesim plan` replaces the group of per candidate
    (simulator.planning.config). Errors name serving.* fields, as parse_serving_section's do."""
    base = Path(base) if base is not None else Path(".")
    source = _source(requests, file, base)
    combo = scenario.combo(tp=1, ep=1, attn_dp=1, kv_dtype="bf16", weight_dtype="native", trace=None,
                           **{a: DEFAULT_VALUE[a] for a in AXES})
    groups = [_group(combo, 1, "mixed", "serving.replicas[0]", file)]
    router = "least_outstanding_tokens" if router is None else router
    if not isinstance(router, str) or router not in routers():
        raise _err(f"is {router!r}; allowed: {', '.join(routers())}", file, "serving.router")
    sched = _scheduler(scheduler, file)
    check_engine_sizes(groups, sched, file)
    seed = _num(seed, file, "serving.seed", 0, 2**63 - 1, strict_lo=False, integer=True)
    return ServingConfig(source=source, groups=groups, router=router, scheduler=sched, seed=seed, file=file)
