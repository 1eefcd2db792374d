"""The discrete-event model: a request source, a router, and N replicas each running the vLLM-like scheduler over
priced steps (optionally prefill and decode pools with the KV cache moved between them).

    source process    one per run: waits for each arrival (trace replay or generated), routes it
    replica process   one per replica: schedule a step (its scheduler policy, simulator.engine.scheduler), wait its
                      price (simulator.engine.step_cost: StepCostModel.engine_step_s, device time plus the
                      runtime's measured host time), apply it; or, when the next steps are pure decodes of the
                      same requests, plan a run of them at once (simulator.engine.decode_run) and wait for its end
                      (cut short at the step in progress when a new request arrives, exactly where the
                      step-by-step loop would admit it)

The simulated clock advances only by priced step times and arrival gaps; the simulator's own host time never
enters it. The router (simulator.engine.routers, one instance per pool) picks the replica a request goes to.
Disaggregated pools (roles prefill/decode): a request runs its prefill (and first token) on a prefill replica,
its KV cache (prompt tokens x KV bytes per token on each device, all devices in parallel) crosses the link in
latency + bytes / bandwidth (the spec's interconnect unless serving.kv_transfer says otherwise; the prefill
replica frees its blocks when the prefill ends), then the request joins a decode replica with its prompt
already computed. TTFT is the prefill replica's first token.

Speculative decoding: a decode step of b requests is one round each; accepted drafts per round are drawn
from the speculation strategy's acceptance model (`accept_length_pmf()`: chains from `acceptance` /
`per_position`, trees from simulator.acceptance's tree model with mutually exclusive siblings, or the
`accept_lengths` distribution), or replayed in order from a recorded list (serving.acceptance.replay).
"""
from __future__ import annotations

import heapq
import math
from array import array
from dataclasses import dataclass, field, replace

import numpy as np

from hwmodels.errors import SparsesimError
from simulator.engine import async_launch, decode_run
from simulator.engine.adaptive import Adaptive
from simulator.engine.config import ServingConfig
from simulator.engine.routers import ARRIVAL, DECODE, router_class
from simulator.engine.runtime import LaunchModel
from simulator.engine.scheduler import (
    DEFAULT_CACHE_UNIT_TOKENS,
    Request,
    SchedulerConfig,
    policy_class,
)
from simulator.engine.sizing import attention_kv_ratio, vllm_batch_defaults
from simulator.engine.step_cost import Composition, HostTime, StepCostModel, StepRuntime, kv_cache_blocks
from simulator.engine.trace_replay import group_replay

GIB = 1024 ** 3


class SimulationError(SparsesimError):
    """A serving setup that cannot be simulated (no KV cache fits, a request can never run, ...)."""


# ---- per-group setup ----------------------------------------------------------------------------------------
def kv_cap_tokens(combo) -> int | None:
    """A KV policy's fixed budget (tokens a request keeps), or None when it keeps everything."""
    big = 1e12
    kept = float(combo.kv_policy.cached_tokens(combo, np.array([big]))[0])
    return int(kept) if kept < big else None


class Acceptance:
    """Accepted drafts per speculative round: sampled from the strategy's model (or the serving section's
    per-position chain acceptance: draft j accepted with probability a_j given drafts 1..j-1 were), or replayed in
    order."""

    def __init__(self, combo, drafts: int, replay: np.ndarray | None, rng: np.random.Generator,
                 per_position: tuple | None = None):
        self.drafts = drafts
        self.rng = rng
        self.replay = None if replay is None else np.minimum(np.asarray(replay, dtype=np.int64), drafts)
        self._pos = 0
        self.dist = None
        if self.replay is not None or drafts == 0:
            return
        if per_position is not None:   # P(L >= j) = a_1 ... a_j; P(L = j) = P(L >= j) - P(L >= j + 1)
            reach = np.concatenate([[1.0], np.cumprod(np.asarray(per_position, dtype=np.float64))])
            pmf = reach - np.concatenate([reach[1:], [0.0]])
        else:
            pmf = combo.speculation.accept_length_pmf()  # P(L = j), j = 0..levels (the strategy's own model)
        self.dist = np.cumsum(pmf / pmf.sum())

    def expected_tokens(self) -> float:
        if self.replay is not None:
            return 1.0 + float(self.replay.mean())
        if self.dist is not None:
            p = np.diff(np.concatenate([[0.0], self.dist]))
            return 1.0 + float((np.arange(len(p)) * p).sum())
        return 1.0

    def draw(self, shape) -> np.ndarray:
        n = int(np.prod(shape))
        if self.replay is not None:
            idx = (self._pos + np.arange(n)) % len(self.replay)
            self._pos = (self._pos + n) % len(self.replay)
            return self.replay[idx].reshape(shape)
        u = self.rng.random(n)
        a = np.searchsorted(self.dist, u, side="right")
        return np.minimum(a, self.drafts).reshape(shape)


@dataclass
class GroupSetup:
    """What the replicas of one group share: the tuple, scheduler knobs, cost model, KV size."""

    index: int
    role: str
    label: str
    combo: object
    sched_cfg: SchedulerConfig
    cost: StepCostModel
    kv_bytes_per_token_dev: float
    adaptive: tuple | None = None   # (candidate combos, their cost models) under serving.adaptation
    policy: str = "fcfs"            # the scheduler policy (serving.scheduler.policy)
    replay: object = None           # per-step trace replay (simulator.engine.trace_replay.GroupReplay) or None


def setup_group(i: int, group, cfg: ServingConfig, cache_unit: int, rng: np.random.Generator | None = None) -> GroupSetup:
    combo = group.combo
    knobs = cfg.scheduler
    d_tok, d_seqs = vllm_batch_defaults(combo.hardware)
    mnbt = d_tok if knobs["max_num_batched_tokens"] == "auto" else knobs["max_num_batched_tokens"]
    seqs = d_seqs if knobs["max_num_seqs"] == "auto" else knobs["max_num_seqs"]
    bs = knobs["block_size"]
    if cache_unit % bs:
        raise SimulationError(f"prefix-cache unit of {cache_unit} tokens is not a multiple of block_size {bs}; set "
                              "serving.scheduler.cache_unit_tokens", file=cfg.file, field="serving.scheduler")
    spec = int(combo.speculation.draft_tokens)
    if knobs["num_blocks"] == "auto":
        # the engine's own pool rule (an engine profile's runtime.kv_budget) unless the scenario set the utilization
        kc = cfg.runtime.apply_layout(combo) if cfg.runtime is not None else combo
        util = knobs["gpu_memory_utilization"] if knobs.get("gpu_memory_utilization_given", True) else None
        nblocks = kv_cache_blocks(kc, bs, mnbt, util)
        ratio = attention_kv_ratio(combo)
        if 0 < ratio < 1:
            nblocks = int(nblocks / ratio)
    else:
        nblocks = knobs["num_blocks"]
    if nblocks < 2:
        raise SimulationError(f"{group.label}: no KV cache fits beside the weights and workspace "
                              f"({nblocks} blocks of {bs} tokens)", file=cfg.file, field=f"serving.replicas[{i}]")
    if spec + 1 > mnbt:
        raise SimulationError(f"{spec} drafts per round exceed max_num_batched_tokens {mnbt}", file=cfg.file,
                              field="serving.scheduler.max_num_batched_tokens")
    sc = SchedulerConfig(num_blocks=nblocks, block_size=bs, max_num_batched_tokens=mnbt, max_num_seqs=seqs,
                         enable_prefix_caching=knobs["enable_prefix_caching"],
                         long_prefill_token_threshold=knobs["long_prefill_token_threshold"],
                         num_spec_tokens=spec, num_lookahead_tokens=spec, kv_cap_tokens=kv_cap_tokens(combo),
                         cache_unit_tokens=cache_unit)
    rs = resolve_runtime(cfg, combo, mnbt, seqs, spec, knobs, rng)
    combo = rs.combo
    cost = _cost_model(combo, mnbt, seqs, rs.mixed_launch, rs.graph_sizes, rs.eager_overlap,
                       cfg.step_cost_budget_bytes)
    # the same tables, at this config's decode context, with the runtime's host time and step rules
    cost = cost.for_serving(cfg.decode_context, rs.host, rs.rt)
    per_tok = combo.model.kv_bytes_per_token(combo.kv_dtype) * combo.kv_fraction_dev
    adaptive = None
    if cfg.adaptation is not None:
        combos = [combo] + list(cfg.adaptation_combos[i][1:])
        combos = [combos[0]] + [replace(c, hardware=combo.hardware, launch=combo.launch) for c in combos[1:]]
        costs = [cost] + [_cost_model(c, mnbt, seqs, rs.mixed_launch, rs.graph_sizes, rs.eager_overlap,
                                      cfg.step_cost_budget_bytes) for c in combos[1:]]
        adaptive = (combos, costs)
    # per-step trace replay (serving.trace_replay; not under per-request switching, whose candidates price apart)
    replay = None if adaptive is not None else group_replay(combo, cost, cfg.trace_replay, cfg.seed, i)
    return GroupSetup(index=i, role=group.role, label=group.label, combo=combo, sched_cfg=sc, cost=cost,
                      kv_bytes_per_token_dev=per_tok, adaptive=adaptive, policy=knobs.get("policy", "fcfs"),
                      replay=replay)


@dataclass
class RuntimeSetup:
    """An engine runtime profile resolved for one replica group, with the serving.step_cost overrides applied."""

    combo: object
    mixed_launch: str
    graph_sizes: tuple | None
    eager_overlap: str
    host: HostTime
    rt: StepRuntime | None


#: how each profile launch mode prices the device side: graph and host_launch price the kernels back to back (the
#: host's issuing is HostTime.launch for host_launch); piecewise mixed steps price their attention eagerly
_DEVICE_LAUNCH = {"graph": "graph", "eager": "eager", "host_launch": "graph", "piecewise": "eager"}


def resolve_runtime(cfg: ServingConfig, combo, mnbt: int, seqs: int, spec: int, knobs: dict,
                    rng: np.random.Generator | None = None) -> RuntimeSetup:
    """The engine runtime profile (cfg.runtime, simulator.engine.runtime) applied to one replica group: the launch
    modes the step prices use, the CUDA-graph capture sizes, the host time (content terms, overlap, launch) and the
    step rules. Every serving.step_cost knob the user gave (cfg.step_cost_given) overrides the profile's value;
    without a profile, the knobs alone (the op model plus the measured terms given)."""
    prof = cfg.runtime
    given = cfg.step_cost_given
    le = cfg.launch_eager_s
    if prof is None:
        if le is not None:   # the runtime's own eager launch cost (serving.step_cost.launch_eager_us)
            combo = replace(combo, hardware=replace(combo.hardware, launch_eager_s=float(le)))
        host = HostTime(per_step_s=cfg.host_per_step_s, mixed_s=cfg.host_mixed_s, per_row_s=cfg.host_per_row_s,
                        floor_s=cfg.host_floor_s, overlap=0.0 if cfg.async_launch else (cfg.host_overlap or 0.0),
                        launch=None if cfg.host_launch_s is None else LaunchModel(constant_s=cfg.host_launch_s),
                        pipeline=cfg.async_launch, speed=cfg.host_speed_series)
        _check_speed(cfg, host)
        return RuntimeSetup(combo, knobs["mixed_launch"], cfg.graph_sizes, cfg.eager_overlap, host, None)
    g = prof.graphs
    if "launch_eager_us" not in given and prof.launch_eager_s is not None:
        le = prof.launch_eager_s
    if le is not None:
        combo = replace(combo, hardware=replace(combo.hardware, launch_eager_s=float(le)))
    dl = _DEVICE_LAUNCH[g.decode]
    if combo.launch != dl:
        combo = replace(combo, launch=dl)
    if prof.kernels is not None and combo.kernels != prof.kernels:   # the engine's own kernel set
        combo = replace(combo, kernels=prof.kernels)
    combo = prof.apply_collectives(combo)   # the engine's tensor-parallel all-reduce (runtime profile `allreduce`)
    combo = prof.apply_layout(combo)        # the engine's KV pool rule and prefill layout (kv_budget, prefill_attention)
    combo, _ = prof.apply_attention(combo)  # the engine's default attention kernel family (runtime.attention_defaults)
    mixed = knobs["mixed_launch"] if knobs.get("mixed_launch_given") else _DEVICE_LAUNCH[g.mixed]
    sizes = (cfg.graph_sizes if "graph_sizes" in given else
             g.capture_sizes(seqs, mnbt, combo.hardware, combo.tp, 1 + spec) if g.decode == "graph" else None)
    eo = cfg.eager_overlap if "eager_overlap" in given else (g.eager_overlap or "kernel")
    terms = prof.host
    if "host_per_step_us" in given:
        terms = replace(terms, per_step_s=0.0, per_mixed_step_s=0.0)
    if "host_per_row_us" in given:
        terms = replace(terms, per_request_s=0.0)
    # async launch: the user's serving.step_cost.async_launch, else the profile's runtime.async_launch; a user's
    # host_overlap > 0 without async_launch given replaces the profile's loop by the overlap fraction
    if "async_launch" in given:
        pipe = cfg.async_launch
    else:
        pipe = prof.async_launch and not cfg.host_overlap
    if cfg.host_launch_s is not None:
        launch = LaunchModel(constant_s=cfg.host_launch_s)
    elif prof.launch is not None:
        launch = replace(prof.launch, mode="sample" if cfg.host_launch_mode == "sample" else "constant")
    else:
        launch = None
    host = HostTime(per_step_s=cfg.host_per_step_s, mixed_s=cfg.host_mixed_s, per_row_s=cfg.host_per_row_s,
                    floor_s=cfg.host_floor_s, terms=terms if terms.any() else None,
                    overlap=(0.0 if pipe else
                             prof.overlap_fraction if cfg.host_overlap is None else cfg.host_overlap),
                    launch=launch, rng=rng if launch is not None and launch.mode == "sample" else None,
                    shapes=set(cfg.host_warm_shapes) if launch is not None and launch.seen_s is not None else None,
                    pipeline=pipe, speed=cfg.host_speed_series)
    _check_speed(cfg, host)
    if cfg.host_warm_shapes and host.shapes is None:
        raise SparsesimError(f"{cfg.file}: serving.step_cost.host_warm_shapes: the engine's launch has no seen-shape "
                             f"level to apply them to (engine {cfg.engine!r}: its profile's host_time.launch needs "
                             "seen_shape_p50_ms, and serving.step_cost.host_launch_ms replaces it)")
    mask = None
    if prof.mask is not None:
        m = prof.mask.on(combo.hardware)
        mask = (m.per_key_s, m.per_qk_s)
    rt = StepRuntime(piecewise=g.mixed == "piecewise", eager_above=g.eager_above, pad_decode=g.pad_decode, mask=mask)
    return RuntimeSetup(combo, mixed, sizes, eo, host, rt)


def async_admission(cfg: ServingConfig) -> bool:
    """Whether an arrival during a step joins the step after next: the user's serving.step_cost.async_admission, else
    the engine profile's runtime.async_admission (vLLM v1's step_with_batch_queue), else no."""
    if "async_admission" in cfg.step_cost_given or cfg.runtime is None:
        return bool(cfg.async_admission)
    return bool(cfg.runtime.async_admission)


def _check_speed(cfg: ServingConfig, host: HostTime) -> None:
    """A validation host-speed series scales a launch: refuse one the engine has none for."""
    if cfg.host_speed_series is not None and host.launch is None:
        raise SparsesimError(f"{cfg.file}: serving.step_cost.validation_host_speed_series: the engine has no host launch "
                             f"to scale (engine {cfg.engine!r}); allowed with an engine profile whose host_time has a "
                             "launch, or with serving.step_cost.host_launch_ms")


_COST_CACHE: dict = {}
#: cost models the memo keeps (least recently used dropped first): a plan searches its candidates one after the
#: other, each over several runs, so a short memo keeps the memory of one candidate's tables, not of every one
#: (ASSUMPTION: 8 covers a deployment's replica groups and their adaptation candidates)
COST_CACHE_ENTRIES = 8


def _cost_model(combo, mnbt: int, seqs: int, mixed_launch: str, graph_sizes=None,
                eager_overlap: str = "kernel", budget_bytes: float | None = None) -> StepCostModel:
    """Cost surfaces, memoized per (tuple, knobs) within a process: re-runs at another rate, seed or request
    count, and configs naming the same tuple again, reuse them. The key is the tuple's content (device and
    model names and files, every strategy value, dtypes, parallelism, runtime, the trace object)."""
    hw, m_ = combo.hardware, combo.model
    key = (hw.name, getattr(hw, "file", None), m_.name, getattr(m_, "file", None), combo.strategy_label(),
           tuple(sorted((a, repr(s.values)) for a, s in zip(("att", "topk", "spec", "verify", "sched", "kvp"),
                                                              combo.strategies()))),
           combo.kv_dtype, combo.weight_dtype, combo.tp, combo.ep, combo.attn_dp, combo.launch, combo.kernels, combo.allreduce,
           combo.kv_budget, combo.prefill_attn,
           id(combo.trace) if combo.trace is not None else None, mnbt, seqs, mixed_launch,
           hw.launch_eager_s, hw.launch_graph_s, tuple(graph_sizes) if graph_sizes else None,
           getattr(hw.efficiency, "source", None), eager_overlap, budget_bytes)
    hit = _COST_CACHE.pop(key, None)
    if hit is not None and (combo.trace is None or hit[0].trace is combo.trace):
        _COST_CACHE[key] = hit   # the most recently used last
        return hit[1]
    while len(_COST_CACHE) >= COST_CACHE_ENTRIES:
        del _COST_CACHE[next(iter(_COST_CACHE))]
    m = StepCostModel(combo, mnbt, seqs, mixed_launch=mixed_launch, graph_sizes=graph_sizes,
                      eager_overlap=eager_overlap, memory_budget_bytes=budget_bytes)
    _COST_CACHE[key] = (combo, m)
    return m


# ---- records ------------------------------------------------------------------------------------------------
class Records:
    """Per-request results (numpy arrays indexed by request id) and the time series of steps."""

    def __init__(self, n: int, record_steps: bool = True):
        nan = np.full(n, np.nan)
        self.first_scheduled = nan.copy()
        self.first_token = nan.copy()
        self.finish = nan.copy()
        self.preemptions = np.zeros(n, dtype=np.int32)
        self.prefix_hit = np.full(n, -1, dtype=np.int64)
        self.replica = np.full(n, -1, dtype=np.int32)
        self.decode_replica = np.full(n, -1, dtype=np.int32)
        self.kv_transfer = np.zeros(n)
        self.rejected = np.zeros(n, dtype=bool)
        self.arrival = nan.copy()      # when each request was submitted (the source's clock: trace or closed loop)
        # inter-token latencies as vLLM's benchmark pools them: one gap per request and step that emitted a later
        # token (time since that request's previous token), with its emission time and weight (runs of decode steps
        # add each step's gap once with weight = batch)
        self.last_emit = nan.copy()
        self.itl = {k: array("d") for k in ("t", "gap", "w")}
        self.record_steps = record_steps
        # one row per event (a step, or a run of identical decode steps)
        self.ts = {k: array("d") for k in ("t", "dt", "replica", "steps", "running", "waiting", "kv_used", "tokens",
                                           "prefill_tokens", "decode_rows", "preempted")}


# ---- the event loop ---------------------------------------------------------------------------------------------
# What the replicas, the request source, the API path and the KV transfers wait for are entries (kind, target, wait)
# pushed `delay` seconds ahead. serving.event_loop picks what runs them: one binary heap of (time, seq, ...) (heap,
# the default) or simpy timeouts in a simpy.Environment (simpy, the reference). Both run entries in time order and,
# at one time, in the order they were pushed: simpy's (time, priority, event id) order. The callbacks keep the event
# order of the engine's earlier simpy process model exactly, including its extra hop through a condition event when
# a decode run ends or is cut (RUN_END / WAKE -> COND).
SRC, STEP, RUN_END, WAKE, COND, CUT, XFER, ADD, CALL = range(9)


class _Clock:
    """The simulated clock (`engine.env.now`, seconds from the first arrival)."""

    __slots__ = ("now",)

    def __init__(self):
        self.now = 0.0


class Replica:
    """One replica: a scheduler, its group's cost model, and where it is in its loop (idle, a step, a decode run).

    Its loop (proceed): sleep while idle; run a planned run of identical decode steps when the policy allows it (and
    not under per-request adaptation, where every round is a step); else one step. A decode run is cut at the step in
    progress when a request arrives here.

    With async admission (serving.step_cost.async_admission, else the profile's runtime.async_admission: an engine
    with async scheduling plans step N+1 when step N starts, vLLM v1's EngineCore.step_with_batch_queue) a request
    that arrives while a step runs is held and reaches the scheduler only at the next step boundary after the one that
    ends that step: it joins step N+2, not N+1; while one is held the replica runs single steps, not decode runs. An
    idle replica takes it at once."""

    def __init__(self, idx: int, group: GroupSetup, engine: "Engine"):
        self.idx = idx
        self.group = group
        self.engine = engine
        self.sched = policy_class(group.policy)(group.sched_cfg)
        self.cost = group.cost
        self.outstanding = 0
        spec = group.sched_cfg.num_spec_tokens
        pp = engine.cfg.acceptance.get("per_position") if isinstance(engine.cfg.acceptance, dict) else None
        self.acc = Acceptance(group.combo, spec, engine.replay, engine.rng, pp) if spec else None
        self.adapt = None
        if group.adaptive is not None:   # per-request switching (serving.adaptation, simulator/engine/adaptive.py)
            self.adapt = Adaptive(group.adaptive[0], group.adaptive[1], engine.cfg.adaptation, engine.rng)
        self.K = 0 if self.adapt is not None else engine.cfg.decode_run_steps
        self.replay = None if group.replay is None else group.replay.cursor(idx)   # per-step trace replay
        self.busy_s = 0.0
        self.steps = 0
        self.events = 0
        self.last_dt = 0.0
        # what a wake-up resumes: None (in a step, or waiting out the cut step of a run), "idle" or "run"
        self.waiting_on: str | None = None
        self.wake_triggered = False
        self.wait = 0                 # id of the current wait (entries of an older wait are stale)
        self.cond_pending = False     # a decode run whose end (or cut) has not been taken yet
        self._plan = None
        self._run = None
        self._start = 0.0
        self._dt = 0.0
        self._queue = 0
        self._dts = None
        self._ends = None
        self._cut = 0
        self.async_admission = async_admission(engine.cfg)
        self.held: list = []           # async admission: (request, arrival) not yet visible to the scheduler
        self._step_start = 0.0         # start of the last step that ended
        # async launch (serving.step_cost.async_launch, simulator.engine.async_launch): the host's state the last
        # step left (rho) and when that step ended; a step that does not follow it at once starts from rho = 0
        self.pipeline = bool(group.cost.host.pipeline)
        self._rho = 0.0
        self._rho_next = 0.0
        self._rhos = None
        self._delays = None
        self._end = -math.inf
        self._pend = None              # the last step's emissions, until the next step's launch says how late

    def _rho_in(self, now: float) -> float:
        """The async loop's state a step starting now continues: the last step's, when it follows it at once."""
        return self._rho if now <= self._end + 1e-9 else 0.0

    def _emit(self, rho_in: float, lead: float) -> None:
        """Async launch: the last step's ids reached the host only once the step starting now was launched
        (simulator.engine.async_launch.emit_delay; nothing moves when the engine idled in between: with no step to
        launch the host waits for the ids at once): its first tokens, finishes and inter-token gaps move later.
        A closed-loop client still submits its next request at the device end (not moved)."""
        pend, self._pend = self._pend, None
        if pend is None or self.engine.env.now > self._end + 1e-9:
            return
        d = async_launch.emit_delay(rho_in, lead, 0.0)
        if d <= 0.0:
            return
        firsts, finished, i0, i1, rids = pend
        rec = self.engine.rec
        for r in firsts:
            r.first_token_time += d
            if not math.isnan(rec.first_token[r.rid]):
                rec.first_token[r.rid] += d
        for r in finished:
            r.finish_time += d
            if not math.isnan(rec.finish[r.rid]):
                rec.finish[r.rid] += d
        t, g = rec.itl["t"], rec.itl["gap"]
        for j in range(i0, i1):
            t[j] += d
            g[j] += d
        if len(rids):
            rec.last_emit[rids] += d

    def add(self, req: Request, now: float) -> None:
        if self.adapt is not None:
            self.adapt.admit(req.rid)
        if self.async_admission and self.waiting_on != "idle":
            self.held.append((req, now))
            if self.waiting_on == "run" and not self.wake_triggered:   # cut a decode run: single steps from here
                self.wake_triggered = True
                self.engine.push(0.0, WAKE, self, self.wait)
            return
        self.sched.add_request(req, now)
        if self.waiting_on is not None and not self.wake_triggered:
            self.wake_triggered = True
            self.engine.push(0.0, WAKE, self, self.wait)

    # ---- waiting ------------------------------------------------------------------------------------------------
    def _sleep(self, what: str) -> None:
        self.wait += 1
        self.waiting_on = what
        self.wake_triggered = False

    def on_wake(self, wait: int) -> None:
        if wait != self.wait or self.waiting_on is None:
            return
        if self.waiting_on == "idle":
            self.waiting_on = None
            self.proceed()
        elif self.cond_pending:
            self.cond_pending = False
            self.engine.push(0.0, COND, self, wait)

    def on_run_end(self, wait: int) -> None:
        if wait == self.wait and self.cond_pending:
            self.cond_pending = False
            self.engine.push(0.0, COND, self, wait)

    # ---- the loop -----------------------------------------------------------------------------------------------
    def proceed(self) -> None:
        """Start the next step or decode run, or sleep while idle (the body of the replica's loop)."""
        eng = self.engine
        sched = self.sched
        K = self.K
        if self.held:   # async admission: requests that arrived before the last ended step started join now
            keep = []
            for req, t in self.held:
                if t <= self._step_start or sched.idle:
                    sched.add_request(req, t)
                else:
                    keep.append((req, t))
            self.held = keep
        while True:
            if sched.idle:
                if self.held:
                    for req, t in self.held:
                        sched.add_request(req, t)
                    self.held = []
                    continue
                self._sleep("idle")
                return
            if K and not self.held and decode_run.ready(sched):
                run = self._plan_run(K)
                if run.steps > 1:
                    self._start_run(run)
                    return
            plan = sched.schedule(eng.env.now)
            if plan.preempted:
                for r in plan.preempted:
                    eng.rec.preemptions[r.rid] += 1
            if plan.empty:
                if plan.preempted:
                    continue
                raise SimulationError(f"replica {self.idx}: nothing can run although requests wait "
                                      f"({len(sched.waiting)} waiting, {sched.pool.num_free} free blocks)")
            self._start_step(plan)
            return

    def _plan_run(self, K: int) -> decode_run.DecodeRun:
        """Plan up to K identical decode steps, no further than the next arrival when drafts are drawn."""
        sched, eng = self.sched, self.engine
        spec = sched.cfg.num_spec_tokens
        k = K
        if spec:  # draws for rounds past the next arrival (it may come here) would mostly be wasted
            gap = eng.next_arrival - eng.env.now
            if gap < k * self.last_dt:
                k = int(gap / self.last_dt) + 2 if self.last_dt > 0 else K
        acc = self.acc.draw((k, len(sched.running))) if spec else None
        return decode_run.plan(sched, k, acc, rows=self.cost.per_row)

    # ---- a decode run -------------------------------------------------------------------------------------------
    def _start_run(self, run: decode_run.DecodeRun) -> None:
        """Wait out a planned run of decode steps (RUN_END), or until a request arrives here (WAKE)."""
        sched = self.sched
        t = self.cost.host.terms
        fin = 0
        if t is not None and t.per_finished_s and run.steps:   # requests finishing in the run's last step
            if run.gen is None:
                fin = sum(1 for r in sched.running if r.output - r.out <= run.steps)
            else:
                fin = int(sum(r.out + int(g) >= r.output for r, g in zip(sched.running, run.gen.sum(axis=0))))
        now = self.engine.env.now
        if self.pipeline:   # async launch: the run continues the host's state from the step before it
            rin = self._rho_in(now)
            dts, self._rhos, lead = self.cost.engine_run_async(run.batch, run.rows, run.ctx_sum, rin,
                                                               run.ctx_max, fin, run.ctx_rows, now)
            self._emit(rin, float(lead[0]))
            # each step's ids reach the host once the next step of the run is launched
            self._delays = np.maximum(0.0, self._rhos[:-1] + lead[1:])
        else:
            dts = self.cost.engine_run_s(run.batch, run.rows, run.ctx_sum, run.ctx_max, fin, run.ctx_rows, now)
        if self.replay is not None:
            dts = dts + self.replay.run_delta(run.batch, np.asarray(run.ctx_sum, dtype=np.float64) / run.batch)
        ends = np.cumsum(dts)
        self._run, self._dts, self._ends, self._start = run, dts, ends, now
        self._sleep("run")
        self.cond_pending = True
        self.engine.push(float(ends[-1]), RUN_END, self, self.wait)

    def on_cond(self, wait: int) -> None:
        """The run ended, or a request arrived: cut it at the step in progress."""
        self.waiting_on = None
        now = self.engine.env.now
        start, ends = self._start, self._ends
        if now < start + ends[-1]:
            j = int(np.searchsorted(ends, now - start, side="left"))
            end = start + float(ends[j])
            if end > now:
                self._cut = j + 1
                self.engine.push(end - now, CUT, self, wait)
                return
            done = j + 1
        else:
            done = self._run.steps
        self._finish_run(done)

    def on_cut(self, wait: int) -> None:
        self._finish_run(self._cut)

    def _finish_run(self, done: int) -> None:
        """Apply the `done` steps of the run that ran (and record its inter-token gaps)."""
        eng = self.engine
        sched, rec, run, dts, ends, start = self.sched, eng.rec, self._run, self._dts, self._ends, self._start
        now = eng.env.now
        if self.cost.host.shapes is not None:     # the attention shapes these steps ran (a launch with seen_s)
            self.cost.host.note_shapes(run.rows, np.asarray(run.ctx_sum, dtype=np.float64)[:done])
        rids = np.fromiter((r.rid for r in sched.running), dtype=np.int64, count=run.batch)
        itl = rec.itl
        emit = start + ends[:done]
        gaps = dts[1:done]
        if self.pipeline and done > 1:   # async launch: ids of every step but the last reach the host late
            dl = self._delays[:done - 1]
            emit = emit + np.concatenate([dl, [0.0]])
            gaps = gaps + dl - np.concatenate([[0.0], dl[:-1]])
        itl["t"].extend(np.full(run.batch, emit[0]).tolist())
        itl["gap"].extend((emit[0] - rec.last_emit[rids]).tolist())
        itl["w"].extend([1.0] * run.batch)
        if done > 1:
            itl["t"].extend(emit[1:].tolist())
            itl["gap"].extend(gaps.tolist())
            itl["w"].extend([float(run.batch)] * (done - 1))
        rec.last_emit[rids] = float(emit[-1])
        ev = decode_run.apply(sched, run, done, now)
        if self.pipeline:   # the last step's emissions, delayed once the next step's launch is known
            self._pend = (list(ev.first_token), list(ev.finished), len(itl["t"]) - (run.batch if done == 1 else 1),
                          len(itl["t"]), rids)
        if self.replay is not None:
            self.replay.advance(done)
        self.last_dt = float(dts[done - 1])
        if eng.check:
            sched.check_invariants()
        dt = float(ends[done - 1])
        self._step_start = start + (float(ends[done - 2]) if done > 1 else 0.0)
        if self.pipeline:
            self._rho, self._end = float(self._rhos[done - 1]), start + dt
        self.busy_s += dt
        self.steps += done
        self.events += 1
        if rec.record_steps:
            self._record(rec.ts, self._start, dt, done, run.batch, 0, run.rows * done, 0, run.batch * done, 0)
        if eng.sample_every and self.events % eng.sample_every == 0:
            eng.plan_samples.append((self.group.index, Composition(
                total_tokens=run.rows, logit_rows=run.rows, n_decode=run.batch,
                decode_ctx_sum=float(run.ctx_sum[0]), decode_ctx_max=float(run.ctx_max[0]),
                decode_ctx=() if run.ctx_rows is None else tuple(run.ctx_rows[0].tolist())),
                float(dts[0])))
        self._run = self._dts = self._ends = None
        if ev.finished:
            eng.on_finished(self, ev.finished)
        self.proceed()

    # ---- one step -----------------------------------------------------------------------------------------------
    def _start_step(self, plan) -> None:
        """Wait out one scheduled step (device + host time)."""
        eng = self.engine
        cost, adapt = self.cost, self.adapt
        now = eng.env.now
        self._queue = len(self.sched.waiting)
        dev = None if adapt is None else adapt.step_s(plan, cost)
        if self.pipeline:   # async launch: this step's launch against the previous step's device time
            rin = self._rho_in(now)
            dt, self._rho_next, lead = cost.engine_step_async(plan, rin, dev, now)
            self._emit(rin, lead)
        else:
            dt = cost.engine_step_s(plan, dev, now)
        if self.replay is not None and plan.n_decode:
            dt += self.replay.step_delta(plan.n_decode, plan.decode_ctx_sum / plan.n_decode)
        self._plan, self._start, self._dt = plan, now, dt
        eng.push(dt, STEP, self, self.wait)

    def on_step(self, wait: int) -> None:
        """Apply the step that ended (accepted drafts drawn for its decode rows)."""
        eng = self.engine
        sched, rec, cost, adapt, plan, dt = self.sched, eng.rec, self.cost, self.adapt, self._plan, self._dt
        now = eng.env.now
        acc = None
        if sched.cfg.num_spec_tokens and plan.n_decode:
            acc = adapt.draw(plan) if adapt is not None else self.acc.draw((len(plan.reqs),))
        ev = sched.step_done(plan, now, acc)
        if self.replay is not None and plan.n_decode:
            self.replay.advance(1)
        i0 = len(rec.itl["t"])
        if plan.n_decode:   # inter-token gaps of the decode rows (vLLM's ITL)
            le, itl = rec.last_emit, rec.itl
            for r, d in zip(plan.reqs, plan.is_decode):
                if d:
                    itl["t"].append(now)
                    itl["gap"].append(now - le[r.rid])
                    itl["w"].append(1.0)
                    le[r.rid] = now
        for r in ev.first_token:
            rec.last_emit[r.rid] = now
        if adapt is not None and plan.n_decode:
            adapt.update(plan, acc, plan.n_decode, cost)
        self.last_dt = dt
        self._step_start = self._start
        if self.pipeline:
            self._rho, self._end = self._rho_next, now
            rids = [r.rid for r, d in zip(plan.reqs, plan.is_decode) if d] + [r.rid for r in ev.first_token]
            self._pend = (list(ev.first_token), list(ev.finished), i0, len(rec.itl["t"]),
                          np.asarray(rids, dtype=np.int64))
        if eng.check:
            sched.check_invariants()
        self.busy_s += dt
        self.steps += 1
        self.events += 1
        if rec.record_steps:
            ptok = sum(c for c, _ in plan.chunks)
            self._record(rec.ts, self._start, dt, 1, len(plan.reqs), self._queue,
                         plan.total_tokens, ptok, plan.n_decode, len(plan.preempted))
        if eng.sample_every and self.events % eng.sample_every == 0:
            eng.plan_samples.append((self.group.index, Composition(
                total_tokens=plan.total_tokens, logit_rows=plan.logit_rows, n_decode=plan.n_decode,
                decode_ctx_sum=plan.decode_ctx_sum, chunks=tuple(plan.chunks), completes=tuple(plan.completes),
                decode_ctx_max=plan.decode_ctx_max,
                decode_ctx=tuple(cost.plan_rows(plan).tolist()) if cost.per_row else ()), dt))
        self._plan = None
        for r in ev.first_token:
            eng.on_first_token(self, r)
        if ev.finished:
            eng.on_finished(self, ev.finished)
        self.proceed()

    def _record(self, ts, t, dt, steps, running, waiting, tokens, ptok, drows, preempted):
        ts["t"].append(t)
        ts["dt"].append(dt)
        ts["replica"].append(self.idx)
        ts["steps"].append(steps)
        ts["running"].append(running)
        ts["waiting"].append(waiting)
        ts["kv_used"].append(self.sched.pool.used)
        ts["tokens"].append(tokens)
        ts["prefill_tokens"].append(ptok)
        ts["decode_rows"].append(drows)
        ts["preempted"].append(preempted)


# ---- the engine ------------------------------------------------------------------------------------------------
class Engine:
    """One simulation of `cfg` over the request trace `trace` (already scaled and cut)."""

    def __init__(self, cfg: ServingConfig, trace, seed: int | None = None, progress: bool = False,
                 record_steps: bool = True, check: bool = False, sample_every: int = 0, event_loop: str | None = None):
        self.cfg = cfg
        self.event_loop = cfg.event_loop if event_loop is None else event_loop   # heap | simpy (serving.event_loop)
        self.trace = trace
        self.seed = cfg.seed if seed is None else int(seed)
        self.rng = np.random.default_rng(self.seed)
        self.replay = cfg.acceptance if isinstance(cfg.acceptance, np.ndarray) else None
        self.env = _Clock()
        self._heap: list = []
        self._seq = 0
        self.progress = progress
        self.check = check  # tests: verify the scheduler's block accounting after every event
        # validation: every `sample_every`-th event of each replica, (group, Composition, priced seconds)
        self.sample_every = int(sample_every)
        self.plan_samples: list = []
        n = len(trace)
        self.rec = Records(n, record_steps)
        unit = cfg.scheduler.get("cache_unit_tokens", "auto")
        if unit == "auto":
            unit = int(trace.block_tokens) if trace.block_tokens else DEFAULT_CACHE_UNIT_TOKENS
        self.cache_unit = unit
        # launch times drawn per step (serving.step_cost.host_launch: sample) use their own stream
        launch_rng = np.random.default_rng([self.seed, 0x1A])
        self.groups = [setup_group(i, g, cfg, unit, launch_rng) for i, g in enumerate(cfg.groups)]
        prof = cfg.runtime
        self.api_per_request_s = prof.api_per_request_s if prof is not None else 0.0
        self.api_per_token_s = prof.api_per_token_s if prof is not None else 0.0
        self.closed = int(getattr(cfg.source, "concurrency", 0) or 0) > 0
        self.think_s = float(getattr(cfg.source, "think_s", 0.0) or 0.0)
        self._next_closed = 0
        self._pending = 0
        self._submitting = False
        self.max_ctx = min(g.combo.model.max_context for g in self.groups)
        self.replicas: list[Replica] = []
        for g in self.groups:
            for _ in range(cfg.groups[g.index].count):
                self.replicas.append(Replica(len(self.replicas), g, self))
        if not self.replicas:
            raise SimulationError("no replicas (every group has count 0)", file=cfg.file, field="serving.replicas")
        self.front = [r for r in self.replicas if r.group.role in ("mixed", "prefill")]
        self.back = [r for r in self.replicas if r.group.role == "decode"]
        self._back_by_group = list({id(r.group): r for r in self.back}.values())
        # one router per pool (a router may keep state, e.g. its turn)
        self.routers = [router_class(cfg.router)(), router_class(cfg.router)()]
        self.finished = 0
        self.n_rejected = 0
        self._bar = None
        self.next_arrival = 0.0  # time of the next request the source will emit (inf after the last)
        self._src_i = 0
        self._src_waited = False

    def push(self, delay: float, kind: int, target, wait=0) -> None:
        """Schedule an entry of the event loop `delay` seconds from now (after every entry already scheduled at
        that time; the simpy loop replaces this with a simpy timeout)."""
        self._seq += 1
        heapq.heappush(self._heap, (self.env.now + delay, self._seq, kind, target, wait))

    # ---- routing ---------------------------------------------------------------------------------------------
    def _choose(self, pool: list, req: Request, which: int) -> Replica:
        """The replica of `pool` (0: the front pool, new requests; 1: the decode pool) that `req` goes to."""
        if len(pool) == 1:
            return pool[0]
        return self.routers[which].choose(pool, req, DECODE if which else ARRIVAL)

    def _back_fits(self, tokens: int) -> bool:
        return all(b.sched.fits_tokens(tokens) for b in self._back_by_group)

    # ---- the request source ------------------------------------------------------------------------------------
    def _start_source(self) -> None:
        """At time 0: the open-loop source emits the first arrivals, or the closed loop its first requests."""
        if self.closed:
            self.next_arrival = math.inf
            for _ in range(min(int(self.cfg.source.concurrency), len(self.trace))):
                self._submit_next()
        else:
            self.source()

    def source(self) -> None:
        """Open loop: submit the arrivals due now, up to the first later one (then wait for it: SRC)."""
        env = self.env
        arr = self.trace.arrival_s
        n = len(arr)
        t0 = self._t0
        i = self._src_i
        while i < n:
            if not self._src_waited:
                self.next_arrival = float(arr[i]) - t0
                gap = self.next_arrival - env.now
                if gap > 0:
                    self._src_waited = True
                    self._src_i = i
                    self.push(gap, SRC, self)
                    return
            self._src_waited = False
            self.next_arrival = float(arr[i + 1]) - t0 if i + 1 < n else math.inf
            i += 1
            self._src_i = i
            self._submit(i - 1, float(arr[i - 1]) - t0)

    def _submit_next(self) -> None:
        """Submit the closed loop's next request (serving.requests.closed_loop, `--concurrency`: `concurrency`
        requests at once, then the next request of the trace, in order, each time one finishes (its last token
        delivered to the client, plus the client's think time), as vLLM benchmarks/serve.py --max-concurrency,
        genai-perf and aiperf do; a rejection submits the one after it: iteratively, not by recursion)."""
        self._pending += 1
        if self._submitting:
            return
        self._submitting = True
        n = len(self.trace)
        while self._pending:
            self._pending -= 1
            i = self._next_closed
            if i >= n:
                self._pending = 0
                break
            self._next_closed = i + 1
            self._submit(i, self.env.now)
        self._submitting = False

    def _client_done(self) -> None:
        """A request left the client's window (finished, or rejected): a closed loop submits the next one once the
        last token has reached the client (the API path's per-token delay) and the client's think time passed."""
        if not self.closed:
            return
        d = self.api_per_token_s + self.think_s
        if d > 0:
            self.push(d, CALL, self._submit_next)
        else:
            self._submit_next()

    def _submit(self, i: int, arrival: float) -> None:
        """Request i arrives (the client sends it) now: route it, or reject it; it reaches the scheduler after the
        API path's per-request delay (tokenization, the hop to the engine: ADD)."""
        t = self.trace
        rec = self.rec
        disagg = bool(self.back)
        rec.arrival[i] = arrival
        P, L = int(t.input_tokens[i]), int(t.output_tokens[i])
        h = t.hash_ids[t.hash_offsets[i]:t.hash_offsets[i + 1]] if t.hash_ids is not None else None
        req = Request(i, P, 1 if disagg else L, arrival, hash_ids=h, hash_block_tokens=t.block_tokens)
        if P + L > self.max_ctx:
            self._reject(i)
            return
        rep = self._choose(self.front, req, 0)
        if not rep.sched.fits_tokens(P + req.output) or (disagg and not self._back_fits(P + L)):
            self._reject(i)
            return
        req.replica = rep.idx
        rec.replica[i] = rep.idx
        rep.outstanding += P + (1 if disagg else L)
        d = self.api_per_request_s
        if d > 0:
            self.push(d, ADD, rep, req)
        else:
            rep.add(req, self.env.now)

    def _reject(self, i: int) -> None:
        self.rec.rejected[i] = True
        self.n_rejected += 1
        self._tick()
        self._client_done()

    def _tick(self) -> None:
        if self._bar is not None:
            self._bar.update(1)

    def on_first_token(self, rep: Replica, r: Request) -> None:
        rec = self.rec
        if rep.group.role != "decode":
            rec.first_token[r.rid] = r.first_token_time
            rec.first_scheduled[r.rid] = r.first_scheduled
            rec.prefix_hit[r.rid] = r.prefix_hit_tokens

    def on_finished(self, rep: Replica, reqs: list) -> None:
        rec = self.rec
        role = rep.group.role
        now = self.env.now
        for r in reqs:
            rep.outstanding -= r.prompt + r.output
            if role == "prefill":
                L = int(self.trace.output_tokens[r.rid])
                if L <= 1:
                    rec.finish[r.rid] = now
                    self.finished += 1
                    self._tick()
                    self._client_done()
                    continue
                self._transfer(rep, r, L)
                continue
            rec.finish[r.rid] = now
            if role == "decode":
                rec.decode_replica[r.rid] = rep.idx
            self.finished += 1
            self._tick()
            self._client_done()

    def _transfer(self, rep: Replica, r: Request, L: int) -> None:
        """Move the prompt's KV from a prefill replica to a decode replica, then queue the decode (XFER)."""
        g = rep.group
        hw = g.combo.hardware
        bw = self.cfg.kv_bandwidth_bytes_s or hw.link_bw_bytes_s
        lat = self.cfg.kv_latency_s if self.cfg.kv_latency_s is not None else (hw.link_latency_s or 0.0)
        dt = lat + r.prompt * g.kv_bytes_per_token_dev / bw
        self.rec.kv_transfer[r.rid] = dt
        self.push(dt, XFER, (r, L))

    def _arrive(self, r: Request, L: int) -> None:
        """A prompt's KV reached the decode pool: its decode joins a decode replica."""
        d = Request(r.rid, r.prompt, L, r.arrival, hash_ids=r.hash_ids, hash_block_tokens=r.hash_block_tokens)
        d.out = 1
        d.external = r.prompt
        back = self._choose(self.back, d, 1)
        d.replica = back.idx
        self.rec.decode_replica[r.rid] = back.idx
        back.outstanding += d.prompt + d.output
        back.add(d, self.env.now)

    # ---- run -------------------------------------------------------------------------------------------------
    def run(self):
        n = len(self.trace)
        if self.progress:   # a tqdm bar on a terminal, else a line every few seconds (simulator.progress)
            from simulator.progress import progress_bar

            self._bar = progress_bar(n, "simulate", "req")
        self._t0 = float(self.trace.arrival_s[0]) if n else 0.0
        try:
            for r in self.replicas:   # every replica starts idle, then the source emits the first arrivals
                r._sleep("idle")
            if self.event_loop == "simpy":
                self._run_simpy()
            else:
                self._run_heap()
        finally:
            if self._bar is not None:
                self._bar.close()
        busy = [r.sched for r in self.replicas if not r.sched.idle]
        if busy:
            raise SimulationError(f"the simulation stopped with {len(busy)} replica(s) still holding requests")
        for i in np.flatnonzero(self.rec.preemptions < 0):  # pragma: no cover - defensive
            raise SimulationError(f"request {i} has a negative preemption count")
        return self

    def _dispatch(self, kind: int, obj, wait) -> None:
        """Run one entry of the event loop."""
        if kind == STEP:
            obj.on_step(wait)
        elif kind == RUN_END:
            obj.on_run_end(wait)
        elif kind == SRC:
            self.source()
        elif kind == WAKE:
            obj.on_wake(wait)
        elif kind == COND:
            obj.on_cond(wait)
        elif kind == CUT:
            obj.on_cut(wait)
        elif kind == XFER:
            self._arrive(*obj)
        elif kind == ADD:
            obj.add(wait, self.env.now)
        else:
            obj()

    def _run_heap(self) -> None:
        """serving.event_loop: heap (the default): the entries on one binary heap of (time, seq, kind, target,
        wait), popped in time order and, at one time, in the order they were pushed."""
        heap = self._heap
        pop = heapq.heappop
        clock = self.env
        self._start_source()
        while heap:
            t, _, kind, obj, wait = pop(heap)
            clock.now = t
            if kind == STEP:   # the common entries first, without a call
                obj.on_step(wait)
            elif kind == RUN_END:
                obj.on_run_end(wait)
            else:
                self._dispatch(kind, obj, wait)

    def _run_simpy(self) -> None:
        """serving.event_loop: simpy (the reference): every entry is a simpy timeout in a simpy.Environment, which
        runs them in (time, priority, event id) order, the heap's order; the clock is the environment's."""
        import simpy

        env = simpy.Environment()
        self.env = env
        disp = self._dispatch

        def push(delay: float, kind: int, target, wait=0) -> None:
            env.timeout(delay).callbacks.append(lambda _ev: disp(kind, target, wait))

        self.push = push
        self._start_source()
        env.run()


@dataclass
class RunStats:
    """Engine-level counters of one run (filled by simulator.engine.api)."""

    events: int = 0
    steps: int = 0
    busy_s: list = field(default_factory=list)
    replica_labels: list = field(default_factory=list)
    num_blocks: list = field(default_factory=list)
    preemptions: int = 0
    prefix_hit_tokens: int = 0
    prefix_query_tokens: int = 0
    evicted_units: int = 0
    sim_end_s: float = math.nan
