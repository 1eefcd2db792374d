"""A continuous-batching scheduler modeled on vLLM's v1 scheduler: requests in, one step's plan out. The base class
is vLLM's FCFS policy (`fcfs`); other policies are subclasses registered with @register_policy and chosen by
`serving.scheduler.policy` (docs/EXTENDING.md shows one).

Pure Python, no simpy, no pricing: the discrete-event engine (simulator.engine.sim) and the GPU harness
(benchmarks/des_validation.py) both drive it the same way,

    sched = Scheduler(SchedulerConfig(num_blocks=...))   # or policy_class("fcfs")(...)
    sched.add_request(Request(rid, prompt_tokens, output_tokens), now)
    plan = sched.schedule(now)              # which requests run this step, how many tokens each
    ... run (or price) the step ...
    events = sched.step_done(plan, now, accepted=None)   # first tokens, finished requests

The policy, the API and every default with its source are written down in docs/SCHEDULER_POLICY.md.
What was taken from vLLM (github.com/vllm-project/vllm; files read through the stored index, 2026):

  vllm/v1/core/sched/scheduler.py  Scheduler.schedule(): one token budget (max_num_batched_tokens) per step;
      first the RUNNING requests in order, each asking for num_tokens_with_spec - num_computed_tokens
      tokens (1 for a decode, 1 + drafts with speculation, the rest of the prompt for a partial prefill)
      capped by the remaining budget (chunked prefill); when its KV blocks cannot be allocated, the LAST
      running request is preempted (FCFS: `self.running.pop()`; recompute: blocks freed,
      num_computed_tokens = 0, prepended to WAITING) and the allocation retried, and if the request itself
      was the victim the RUNNING loop stops. Then, only if nothing was preempted this step, WAITING
      requests are admitted FCFS while budget > 0 and len(running) < max_num_seqs, starting after their
      prefix-cache hit, chunked to the remaining budget; the first that cannot get its blocks stops
      admission. update_from_output(): rejected draft tokens are subtracted from num_computed_tokens;
      a request samples when it has computed all its tokens; it stops at max_tokens (extra accepted
      tokens trimmed) and its blocks are freed. long_prefill_token_threshold caps a prefill chunk (0 =
      off, the default with max_num_partial_prefills = 1).
  vllm/v1/core/kv_cache_manager.py  get_computed_blocks(): full blocks only, and the hit is capped at
      num_tokens - 1 (the last token is recomputed to get logits). allocate_slots(): blocks for
      num_computed + num_new + num_lookahead tokens (lookahead = the drafts of EAGLE/draft-model
      proposers, not at first admission); the request fails when the blocks it needs plus the hit blocks
      that sit evictable in the free queue exceed the free blocks; full blocks are cached (hashed) at
      allocation time, up to min(computed + new, num_tokens).
  vllm/v1/core/block_pool.py  one free queue in eviction order holding uncached free blocks AND cached
      blocks nobody references (ref_cnt 0); allocation pops from its head and evicts a cached block it
      pops (LRU); a hit on an evictable block removes it from the queue (`touch`); freed blocks are
      appended to the tail in reverse order of the request's block table (tail blocks evicted first);
      block 0 is the reserved null block.

Modeling choices (each also in SCHEDULER_POLICY.md):
  * Prefix caching works on CACHE UNITS of `cache_unit_tokens` prompt tokens (a multiple of block_size):
    request traces describe prefixes only at their own hash-block granularity (Mooncake: 512 tokens),
    so a unit is one trace hash block. Unit j of a request is keyed by the chain of the trace's hash ids
    0..j when it lies wholly inside the prompt and the trace names it; otherwise (no hashes, the partial
    last prompt block, generated tokens) by a key private to the request, so a preempted request can
    still hit its own freed blocks on resume, as in vLLM. Hits, caching and eviction move whole units
    (cache_unit_tokens / block_size blocks); a unit that another request has already cached is not
    cached twice (its blocks stay private and are freed uncached).
  * A KV policy that caps the cache (StreamingLLM / SnapKV / SnapStream budgets) caps the blocks a
    request holds at ceil(kv_cap_tokens / block_size) (kv_cap_tokens = the policy's budget); prefix
    caching is then off (a compressed cache is not a reusable prefix).
  * Times (`now`) are only recorded; the scheduler never reads a clock.

Where things live: simulator.engine.request (SchedulerConfig, Request), simulator.engine.kv_cache (block pool,
prefix-cache units, allocation), this module (the policy: StepPlan, StepEvents, Scheduler and its registry),
simulator.engine.decode_run (the engine's fast path over runs of identical decode steps, for policies that
declare decode_runs).

A policy overrides the phases of schedule() (each documented below): _schedule_running (the RUNNING pass),
_admit_waiting (the WAITING pass), _pop_victim (which running request a failed allocation preempts), _enqueue
(where a new request waits) and _requeue (where a preempted one waits); it declares `decode_runs`.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import ClassVar

from simulator.engine.kv_cache import BlockPool, KVCache
from simulator.engine.request import (
    DEFAULT_CACHE_UNIT_TOKENS,
    VLLM_BLOCK_SIZE,
    VLLM_LARGE_GPU_BATCHED_TOKENS,
    VLLM_LARGE_GPU_MAX_SEQS,
    VLLM_SMALL_GPU_BATCHED_TOKENS,
    VLLM_SMALL_GPU_MAX_SEQS,
    Request,
    SchedulerConfig,
    SchedulerError,
)

__all__ = ["BlockPool", "DEFAULT_CACHE_UNIT_TOKENS", "KVCache", "Request", "Scheduler", "SchedulerConfig",
           "SchedulerError", "StepEvents", "StepPlan", "VLLM_BLOCK_SIZE", "VLLM_LARGE_GPU_BATCHED_TOKENS",
           "VLLM_LARGE_GPU_MAX_SEQS", "VLLM_SMALL_GPU_BATCHED_TOKENS", "VLLM_SMALL_GPU_MAX_SEQS", "policies",
           "policy_class", "register_policy"]


@dataclass
class StepPlan:
    """What one step runs. Per scheduled request (parallel lists, in scheduling order):
        reqs            the Request objects
        num_tokens      tokens computed for it this step (decode: 1 + drafts; prefill: the chunk)
        context_before  its computed tokens before the step (the KV prefix its tokens attend to)
        is_decode       True when it is decoding (only its last sampled token, plus drafts, is new)
        drafts          draft tokens verified for it (0 without speculation; fewer than num_spec_tokens
                        only when the token budget ran out at this request)
    Aggregates used to price the step:
        total_tokens    sum of num_tokens (rows of the forward pass; <= max_num_batched_tokens)
        logit_rows      rows whose logits are computed: 1 per prefill chunk, 1 + drafts per decode
        n_decode        decoding requests; decode_ctx_sum / decode_ctx_max: sum / largest over them of the
                        KV length their query attends to (context_before + 1, capped by the KV policy's budget)
        chunks          (tokens, prefix) of each prefill chunk; completes: prompt lengths of the chunks
                        that finish a prompt this step (KV policies price their compression there)
    preempted lists the requests preempted while building this plan (already back in WAITING)."""

    reqs: list = field(default_factory=list)
    num_tokens: list = field(default_factory=list)
    context_before: list = field(default_factory=list)
    is_decode: list = field(default_factory=list)
    drafts: list = field(default_factory=list)
    total_tokens: int = 0
    logit_rows: int = 0
    n_decode: int = 0
    decode_ctx_sum: int = 0
    decode_ctx_max: int = 0
    chunks: list = field(default_factory=list)
    completes: list = field(default_factory=list)
    preempted: list = field(default_factory=list)
    num_spec_tokens: int = 0
    n_new: int = 0                # requests admitted from WAITING this step (new or resumed after a preemption)

    def __len__(self) -> int:
        return len(self.reqs)

    @property
    def empty(self) -> bool:
        return not self.reqs

    @property
    def has_prefill(self) -> bool:
        return bool(self.chunks)

    def rows(self) -> list[tuple]:
        """(rid, num_tokens, context_before, is_decode) per scheduled request (for logs and the harness)."""
        return [(r.rid, n, c, d) for r, n, c, d in zip(self.reqs, self.num_tokens, self.context_before,
                                                        self.is_decode)]


@dataclass
class StepEvents:
    """What a finished step produced: requests that got their first token, and requests that finished
    (both lists of Request objects, with first_token_time / finish_time set to `now`); tokens emitted."""

    first_token: list = field(default_factory=list)
    finished: list = field(default_factory=list)
    tokens_emitted: int = 0


class Scheduler:
    """One replica's continuous-batching scheduler; as written, vLLM v1's FCFS policy (see the module docstring).

    Subclasses are other policies: they override the phases below and must declare `decode_runs`."""

    name: ClassVar[str] = "fcfs"
    description: ClassVar[str] = "vLLM v1: RUNNING in order, the last preempted first, WAITING first come first served"
    #: The engine's decode-run fast path (simulator.engine.decode_run) gives exactly the steps schedule() /
    #: step_done() would: with nothing waiting and every running request decoding, each step schedules every
    #: running request once, in order, and the run stops before any allocation could fail. True for FCFS; a
    #: policy that holds running requests back or preempts without an allocation failure must say False.
    decode_runs: ClassVar[bool] = True

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if "decode_runs" not in cls.__dict__:
            raise TypeError(f"scheduler policy {cls.__name__} must declare decode_runs (True only if "
                            "simulator.engine.decode_run's fast path equals its schedule() on pure-decode steps)")

    def __init__(self, config: SchedulerConfig):
        self.cfg = config
        self.kv = KVCache(config)
        self.pool = self.kv.pool
        self.unit_blocks = self.kv.unit_blocks
        self.waiting: deque = deque()
        self.running: list = []
        self.num_preemptions = 0
        self.steps = 0
        self.prefix_hit_tokens = 0
        self.prefix_query_tokens = 0
        # token accounting (tests): scheduled = sum over requests of (final computed - hit_total + lost)
        # + rejected drafts
        self.tokens_scheduled = 0
        self.tokens_rejected = 0
        self.tokens_lost = 0
        self.tokens_hit = 0
        self._cap_tokens = config.token_capacity()

    # ---- requests --------------------------------------------------------------------------------------
    def can_ever_fit(self, req: Request) -> bool:
        """Whether the request, alone on this replica, fits its whole prompt + output in the cache."""
        return self.fits_tokens(req.prompt + req.output)

    def fits_tokens(self, tokens: int) -> bool:
        """Whether a request of `tokens` prompt + output tokens fits this replica's cache alone."""
        return tokens + self.cfg.num_lookahead_tokens + self.cfg.num_spec_tokens <= self._cap_tokens

    def add_request(self, req: Request, now: float = 0.0) -> None:  # noqa: ARG002 - the API takes a time
        """Queue a new request (where: _enqueue)."""
        if not self.can_ever_fit(req):
            raise SchedulerError(f"request {req.rid}: {req.prompt} + {req.output} tokens exceed this replica's KV "
                                 f"cache of {self._cap_tokens} tokens; it can never run")
        if req.unit_keys is None:
            req.unit_keys = self.kv.trace_keys(req)
        self._enqueue(req)

    @property
    def num_waiting(self) -> int:
        return len(self.waiting)

    @property
    def num_running(self) -> int:
        return len(self.running)

    @property
    def idle(self) -> bool:
        return not self.waiting and not self.running

    def match_tokens(self, req: Request) -> int:
        """Prompt tokens a new request would find in this replica's prefix cache now (for routers)."""
        return self.kv.match(req) * self.cfg.cache_unit_tokens

    # ---- policy hooks: where requests wait, whom a failed allocation preempts ---------------------------------
    def _enqueue(self, req: Request) -> None:
        """A new request waits at the back of WAITING (FCFS)."""
        self.waiting.append(req)

    def _requeue(self, req: Request) -> None:
        """A preempted request waits at the front of WAITING (vLLM: `self.waiting.prepend_request`)."""
        self.waiting.appendleft(req)

    def _pop_victim(self) -> Request:
        """Remove and return the running request a failed allocation preempts: the last one (FCFS:
        `self.running.pop()`). _schedule_running walks RUNNING from the front, so the victim must be the request
        being scheduled or one after it."""
        return self.running.pop()

    def _preempt(self, req: Request) -> None:
        """Recompute preemption: its blocks are freed, its computed tokens lost; it waits again (_requeue)."""
        self.kv.free(req)
        req.lost += req.computed
        self.tokens_lost += req.computed
        req.computed = 0
        req.preemptions += 1
        self.num_preemptions += 1
        self._requeue(req)

    # ---- one step ----------------------------------------------------------------------------------------
    def schedule(self, now: float = 0.0) -> StepPlan:
        """Build the next step's plan (and advance each scheduled request's computed tokens, as vLLM does
        at scheduling time; step_done corrects for rejected drafts): the RUNNING pass, then, when it
        preempted nobody, the WAITING pass, sharing one token budget."""
        plan = StepPlan(num_spec_tokens=self.cfg.num_spec_tokens)
        budget = self._schedule_running(plan, self.cfg.max_num_batched_tokens)
        if not plan.preempted:
            self._admit_waiting(plan, budget, now)
        self.tokens_scheduled += plan.total_tokens
        if plan.reqs:
            self.steps += 1
        return plan

    def _schedule_running(self, plan: StepPlan, budget: int) -> int:
        """Phase 1: every RUNNING request in order asks for its remaining tokens (1 + drafts when decoding), capped
        by long_prefill_token_threshold and the budget; when its blocks are not free, _pop_victim is preempted
        and the allocation retried (the pass stops if the request itself was the victim). Returns the budget
        left."""
        cfg = self.cfg
        thr = cfg.long_prefill_token_threshold
        spec = cfg.num_spec_tokens
        look = cfg.num_lookahead_tokens
        cap = cfg.kv_cap_tokens
        reqs, ntok, ctx, dec, drafts = plan.reqs, plan.num_tokens, plan.context_before, plan.is_decode, plan.drafts
        running = self.running
        caching = cfg.caching
        allocate = self.kv.allocate
        register = self.kv.register
        total = logits = n_dec = dsum = dmax = 0
        i = 0
        while i < len(running) and budget > 0:
            r = running[i]
            c = r.computed
            nt = r.prompt + r.out
            decoding = c == nt - 1 and r.out > 0  # the last prompt token of a chunked prefill is not a decode
            need = nt - c + (spec if decoding else 0)
            if 0 < thr < need:
                need = thr
            n = need if need < budget else budget
            ok = allocate(r, c + n + look)
            while not ok:
                victim = self._pop_victim()
                self._preempt(victim)
                plan.preempted.append(victim)
                if victim is r:
                    break
                ok = allocate(r, c + n + look)
            if not ok:
                break
            if caching:
                register(r, min(c + n, nt))
            reqs.append(r)
            ntok.append(n)
            ctx.append(c)
            r.computed = c + n
            budget -= n
            total += n
            if decoding:
                dec.append(True)
                drafts.append(n - 1)
                n_dec += 1
                a = c + 1
                if cap is not None and a > cap:
                    a = cap
                dsum += a
                if a > dmax:
                    dmax = a
                logits += n
            else:
                dec.append(False)
                drafts.append(0)
                plan.chunks.append((n, c))
                logits += 1
                if c + n >= nt and r.out == 0:
                    plan.completes.append(r.prompt)
            i += 1
        plan.total_tokens += total
        plan.logit_rows += logits
        plan.n_decode += n_dec
        plan.decode_ctx_sum += dsum
        if dmax > plan.decode_ctx_max:
            plan.decode_ctx_max = dmax
        return budget

    def _admit_waiting(self, plan: StepPlan, budget: int, now: float) -> int:
        """Phase 2: WAITING requests from the front while budget > 0 and RUNNING has room (max_num_seqs), each
        starting after its prefix-cache hit (or its external KV), chunked to the budget; the first whose blocks
        are not free stops admission. Returns the budget left."""
        cfg = self.cfg
        thr = cfg.long_prefill_token_threshold
        running = self.running
        waiting = self.waiting
        kv = self.kv
        caching = cfg.caching
        U = cfg.cache_unit_tokens
        reqs, ntok, ctx, dec, drafts = plan.reqs, plan.num_tokens, plan.context_before, plan.is_decode, plan.drafts
        total = logits = 0
        look = cfg.num_lookahead_tokens
        while waiting and budget > 0:
            if len(running) >= cfg.max_num_seqs:
                break
            r = waiting[0]
            nt = r.num_tokens
            hit_units = kv.match(r) if caching else 0
            local = hit_units * U
            hit = local if local > r.external else r.external
            n = nt - hit
            if 0 < thr < n:
                n = thr
            if n > budget:
                n = budget
            # lookahead slots only for a request whose KV arrives computed (vLLM: effective_lookahead_tokens = 0 when
            # num_computed_tokens == 0, i.e. every new or preempted request)
            if not kv.admit(r, hit_units, hit + n + (look if r.external else 0)):
                break
            waiting.popleft()
            r.computed = hit
            if caching:
                kv.register(r, min(hit + n, nt))
            r.external = 0
            r.hit_total += hit
            self.tokens_hit += hit
            if r.prefix_hit_tokens < 0:
                r.prefix_hit_tokens = local
                self.prefix_hit_tokens += local
                self.prefix_query_tokens += r.prompt
                r.first_scheduled = now
            running.append(r)
            plan.n_new += 1
            reqs.append(r)
            ntok.append(n)
            ctx.append(hit)
            dec.append(False)
            drafts.append(0)
            plan.chunks.append((n, hit))
            r.computed = hit + n
            budget -= n
            total += n
            logits += 1
            if hit + n >= nt and r.out == 0:
                plan.completes.append(r.prompt)
        plan.total_tokens += total
        plan.logit_rows += logits
        return budget

    def step_done(self, plan: StepPlan, now: float = 0.0, accepted=None) -> StepEvents:
        """Apply a finished step: requests that computed all their tokens sample (1 token, or 1 + the
        accepted drafts); finished requests leave and free their blocks.

        accepted: with speculation, accepted drafts per scheduled request (a sequence aligned with
        plan.reqs; entries of prefill chunks are ignored); None = none accepted."""
        ev = StepEvents()
        finished = ev.finished
        for idx, r in enumerate(plan.reqs):
            d = plan.drafts[idx]
            if d:
                a = int(accepted[idx]) if accepted is not None else 0
                if a < 0 or a > plan.num_spec_tokens:
                    raise SchedulerError(f"accepted drafts must lie in [0, {plan.num_spec_tokens}], got {a}")
                if a > d:
                    a = d
                r.computed -= d - a
                self.tokens_rejected += d - a
                gen = a + 1
            else:
                gen = 1
            if r.computed < r.prompt + r.out:
                continue  # a partial prefill (or recompute) chunk: nothing sampled
            before = r.out
            r.out = min(r.out + gen, r.output)
            ev.tokens_emitted += r.out - before
            if before == 0:
                r.first_token_time = now
                ev.first_token.append(r)
            if r.out >= r.output:
                r.finish_time = now
                finished.append(r)
        self.retire(finished)
        return ev

    def retire(self, finished: list) -> None:
        """Drop finished requests from RUNNING and free their blocks (prefix-cached ones stay evictable)."""
        if finished:
            done = set(id(r) for r in finished)
            self.running = [r for r in self.running if id(r) not in done]
            for r in finished:
                self.kv.free(r)

    # ---- checks ----------------------------------------------------------------------------------------
    def check_invariants(self) -> None:
        """Raise AssertionError if block accounting is inconsistent (tests call this after each step)."""
        self.kv.check(self.running, self.waiting)


# ---- the policy registry ------------------------------------------------------------------------------------
_POLICIES: dict[str, type[Scheduler]] = {"fcfs": Scheduler}


def register_policy(cls: type[Scheduler]) -> type[Scheduler]:
    """Class decorator: make a Scheduler subclass selectable as `serving.scheduler.policy: <cls.name>`."""
    if not (isinstance(cls, type) and issubclass(cls, Scheduler)):
        raise TypeError(f"{cls!r} is not a Scheduler subclass")
    if cls.name in _POLICIES:
        raise ValueError(f"{cls.__name__}: scheduler policy {cls.name!r} registered twice")
    _POLICIES[cls.name] = cls
    return cls


def policies() -> dict[str, type[Scheduler]]:
    """Registered scheduler policies by name (simulator.engine.plugins imports the modules beyond this one)."""
    return _POLICIES


def policy_class(name: str) -> type[Scheduler]:
    """The policy registered as `name` (SchedulerError naming the known ones otherwise)."""
    cls = _POLICIES.get(name)
    if cls is None:
        raise SchedulerError(f"unknown scheduler policy {name!r}; known: {', '.join(sorted(_POLICIES))}")
    return cls
