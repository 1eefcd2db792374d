"""A continuous-batching scheduler modeled on vLLM's v1 scheduler: requests in, one step's plan out.

Pure Python, no simpy, no pricing: the discrete-event engine (simulator.engine.sim) and the GPU harness
(benchmarks/des_validation.py) both drive it the same way,

    sched = Scheduler(SchedulerConfig(num_blocks=...))
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
"""
from __future__ import annotations

import math
from collections import OrderedDict, deque
from dataclasses import dataclass, field

import numpy as np

from hwmodels.errors import SparsesimError

#: vLLM defaults (sources in docs/SCHEDULER_POLICY.md): CacheConfig.DEFAULT_BLOCK_SIZE = 16
#: (vllm/config/cache.py); EngineArgs.get_batch_defaults (vllm/engine/arg_utils.py) for the OpenAI API
#: server on a GPU with >= 70 GiB that is not an A100 (H100, H200, B200, MI300X): max_num_batched_tokens
#: 8192 and max_num_seqs 1024; on smaller GPUs and A100: 2048 and 256.
VLLM_BLOCK_SIZE = 16
VLLM_LARGE_GPU_BATCHED_TOKENS = 8192
VLLM_LARGE_GPU_MAX_SEQS = 1024
VLLM_SMALL_GPU_BATCHED_TOKENS = 2048
VLLM_SMALL_GPU_MAX_SEQS = 256
#: Tokens per prefix-cache unit when the request trace gives no hash-block size: Mooncake's 512-token
#: hash blocks (Mooncake FAST'25 trace README), 32 vLLM blocks.
DEFAULT_CACHE_UNIT_TOKENS = 512

_KEY_MASK = (1 << 61) - 1      # trace chain keys live in [0, 2^61)
_PRIVATE_BASE = 1 << 61        # private unit keys: 2^61 + (rid << 24 | unit)


class SchedulerError(SparsesimError):
    """A request or a configuration the scheduler cannot run (too long for the cache, bad parameters)."""


@dataclass(frozen=True)
class SchedulerConfig:
    """The knobs of the policy (vLLM names). `num_blocks` is the KV cache size in blocks of `block_size`
    tokens (the engine derives it from memory; the GPU harness from what it allocated)."""

    num_blocks: int
    block_size: int = VLLM_BLOCK_SIZE
    max_num_batched_tokens: int = VLLM_LARGE_GPU_BATCHED_TOKENS
    max_num_seqs: int = VLLM_LARGE_GPU_MAX_SEQS
    enable_prefix_caching: bool = True
    long_prefill_token_threshold: int = 0
    num_spec_tokens: int = 0          # drafts per decode round (0 = no speculative decoding)
    num_lookahead_tokens: int = 0     # extra slots reserved for the drafter (vLLM: = num_spec_tokens for
                                      # EAGLE and draft models, 0 for n-gram)
    kv_cap_tokens: int | None = None  # a KV policy's budget: tokens a request keeps (None = all)
    cache_unit_tokens: int = DEFAULT_CACHE_UNIT_TOKENS
    reserve_null_block: bool = True   # vLLM's block 0 is a null block that is never allocated

    def __post_init__(self):
        def bad(what, v, allowed):
            raise SchedulerError(f"scheduler {what}={v!r} is invalid; allowed: {allowed}")

        for name in ("num_blocks", "block_size", "max_num_batched_tokens", "max_num_seqs", "cache_unit_tokens"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                bad(name, v, "a positive integer")
        for name in ("long_prefill_token_threshold", "num_spec_tokens", "num_lookahead_tokens"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                bad(name, v, "an integer >= 0")
        if self.cache_unit_tokens % self.block_size:
            bad("cache_unit_tokens", self.cache_unit_tokens, f"a multiple of block_size ({self.block_size})")
        if self.kv_cap_tokens is not None and (not isinstance(self.kv_cap_tokens, (int, np.integer))
                                               or self.kv_cap_tokens < 1):
            bad("kv_cap_tokens", self.kv_cap_tokens, "null or a positive integer")
        if self.num_spec_tokens + 1 > self.max_num_batched_tokens:
            bad("num_spec_tokens", self.num_spec_tokens, "fewer than max_num_batched_tokens")

    @property
    def usable_blocks(self) -> int:
        return self.num_blocks - (1 if self.reserve_null_block else 0)

    @property
    def caching(self) -> bool:
        return self.enable_prefix_caching and self.kv_cap_tokens is None

    def blocks_for(self, tokens: int) -> int:
        """Blocks a request needs to hold `tokens` KV entries (capped by the KV policy)."""
        cap = self.kv_cap_tokens
        if cap is not None and tokens > cap:
            tokens = cap
        return -(-tokens // self.block_size)

    def token_capacity(self) -> int:
        """Largest sequence (prompt + output) one request can ever hold alone."""
        if self.kv_cap_tokens is not None and self.usable_blocks * self.block_size >= self.kv_cap_tokens:
            return 1 << 62
        return self.usable_blocks * self.block_size


class Request:
    """One request and its progress. `hash_ids` are the trace's prefix block hashes, each covering
    `hash_block_tokens` prompt tokens (None = no shared prefixes)."""

    __slots__ = ("rid", "prompt", "output", "arrival", "hash_ids", "hash_block_tokens", "computed", "out",
                 "blocks", "units", "unit_keys", "units_done", "preemptions", "prefix_hit_tokens",
                 "first_scheduled", "first_token_time", "finish_time", "replica", "tag", "external", "hit_total",
                 "lost")

    def __init__(self, rid: int, prompt_tokens: int, output_tokens: int, arrival_s: float = 0.0,
                 hash_ids=None, hash_block_tokens: int | None = None, tag=None):
        if prompt_tokens < 1 or output_tokens < 1:
            raise SchedulerError(f"request {rid}: prompt and output tokens must be >= 1, got "
                                 f"{prompt_tokens} and {output_tokens}")
        self.rid = int(rid)
        self.prompt = int(prompt_tokens)
        self.output = int(output_tokens)
        self.arrival = float(arrival_s)
        self.hash_ids = hash_ids
        self.hash_block_tokens = hash_block_tokens
        self.computed = 0          # tokens whose KV is in the cache (vLLM num_computed_tokens)
        self.out = 0               # tokens generated so far
        self.blocks = 0            # KV blocks this request references (shared units included)
        self.units = []            # keys of the cache units it references, in order
        self.unit_keys = None      # lazily built chain keys of its prompt units
        self.units_done = 0        # units (from 0) already hit or registered
        self.preemptions = 0
        self.prefix_hit_tokens = -1  # tokens of the first admission's prefix-cache hit (-1 = not admitted)
        self.first_scheduled = math.nan
        self.first_token_time = math.nan
        self.finish_time = math.nan
        self.replica = -1
        self.tag = tag
        self.external = 0          # tokens whose KV arrives computed (disaggregated decode; first admission only)
        self.hit_total = 0         # tokens found computed at every admission (prefix hits, external KV)
        self.lost = 0              # computed tokens thrown away by preemptions

    @property
    def num_tokens(self) -> int:
        """Prompt plus generated tokens (vLLM request.num_tokens)."""
        return self.prompt + self.out

    @property
    def finished(self) -> bool:
        return self.out >= self.output

    def __repr__(self) -> str:
        return (f"Request({self.rid}, prompt={self.prompt}, output={self.output}, computed={self.computed}, "
                f"out={self.out}, blocks={self.blocks})")


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


class _Unit:
    __slots__ = ("ref", "nb")

    def __init__(self, nb: int):
        self.ref = 1
        self.nb = nb


class BlockPool:
    """Free KV blocks in eviction order (vLLM block_pool.py, at cache-unit granularity). Entries of the
    free queue are cache units nobody references (evictable, key >= 0) or runs of uncached free blocks
    (key < 0); `num_free` counts both."""

    def __init__(self, usable_blocks: int, unit_blocks: int):
        self.total = usable_blocks
        self.unit_blocks = unit_blocks
        self.queue: OrderedDict = OrderedDict()
        self.cache: dict = {}
        self._next = -1
        self.num_free = 0
        self.evicted_units = 0
        self._push_free(usable_blocks)

    def _push_free(self, n: int) -> None:
        if n > 0:
            self.queue[self._next] = n
            self._next -= 1
            self.num_free += n

    @property
    def used(self) -> int:
        """Blocks referenced by requests (what the cache holds for running work)."""
        return self.total - self.num_free

    @property
    def cached_units(self) -> int:
        return len(self.cache)

    def take(self, n: int) -> None:
        """Pop n blocks from the head of the free queue (the caller checked num_free), evicting cached
        units it pops."""
        if n <= 0:
            return
        self.num_free -= n
        q = self.queue
        while n > 0:
            key, nb = next(iter(q.items()))
            if nb <= n:
                del q[key]
                n -= nb
                if key >= 0:
                    del self.cache[key]
                    self.evicted_units += 1
            else:
                if key >= 0:  # evict the unit, the rest of its blocks stay free (uncached) at the head
                    del q[key]
                    del self.cache[key]
                    self.evicted_units += 1
                    q[self._next] = nb - n
                    q.move_to_end(self._next, last=False)
                    self._next -= 1
                else:
                    q[key] = nb - n
                n = 0

    def free_request(self, req: Request) -> None:
        """Release every block `req` references: private blocks first, then its units in reverse order
        (the tail of the block table is evicted first)."""
        shared = len(req.units) * self.unit_blocks
        self._push_free(req.blocks - shared)
        cache, q = self.cache, self.queue
        for key in reversed(req.units):
            u = cache[key]
            u.ref -= 1
            if u.ref == 0:
                q[key] = u.nb
                self.num_free += u.nb
        req.units = []
        req.blocks = 0
        req.units_done = 0


class Scheduler:
    """vLLM-v1-style FCFS continuous batching over one replica's KV cache (see the module docstring)."""

    def __init__(self, config: SchedulerConfig):
        self.cfg = config
        self.unit_blocks = config.cache_unit_tokens // config.block_size
        self.pool = BlockPool(config.usable_blocks, self.unit_blocks)
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
        """Queue a new request (FCFS, at the back of WAITING)."""
        if not self.can_ever_fit(req):
            raise SchedulerError(f"request {req.rid}: {req.prompt} + {req.output} tokens exceed this replica's KV "
                                 f"cache of {self._cap_tokens} tokens; it can never run")
        if req.unit_keys is None:
            req.unit_keys = self._trace_keys(req)
        self.waiting.append(req)

    @property
    def num_waiting(self) -> int:
        return len(self.waiting)

    @property
    def num_running(self) -> int:
        return len(self.running)

    @property
    def idle(self) -> bool:
        return not self.waiting and not self.running

    # ---- prefix cache ----------------------------------------------------------------------------------
    def _unit_key(self, req: Request, j: int) -> int:
        keys = req.unit_keys
        if keys is None:
            keys = req.unit_keys = self._trace_keys(req)
        if j < len(keys):
            return keys[j]
        return _PRIVATE_BASE + ((req.rid << 24) | j)

    def _trace_keys(self, req: Request) -> list:
        """Chain keys of the prompt units the trace names (full units inside the prompt only)."""
        h = req.hash_ids
        if h is None or len(h) == 0 or not self.cfg.caching:
            return []
        per = (req.hash_block_tokens or self.cfg.cache_unit_tokens)
        if per != self.cfg.cache_unit_tokens:
            raise SchedulerError(f"request {req.rid}: hash blocks of {per} tokens, but the prefix cache works in "
                                 f"units of {self.cfg.cache_unit_tokens} tokens (set cache_unit_tokens to the "
                                 "trace's block size)")
        n = min(len(h), req.prompt // per)
        keys, prev = [], 0
        for i in range(n):
            prev = hash((prev, int(h[i]))) & _KEY_MASK
            keys.append(prev)
        return keys

    def _match(self, req: Request) -> int:
        """Cache units of a prefix hit for a request that has computed nothing (capped so at least one
        token is computed)."""
        if not self.cfg.caching:
            return 0
        max_units = (req.num_tokens - 1) // self.cfg.cache_unit_tokens
        cache = self.pool.cache
        j = 0
        while j < max_units and self._unit_key(req, j) in cache:
            j += 1
        return j

    def match_tokens(self, req: Request) -> int:
        """Prompt tokens a new request would find in this replica's prefix cache now (for routers)."""
        return self._match(req) * self.cfg.cache_unit_tokens

    def _register(self, req: Request, upto_tokens: int) -> None:
        """Cache the full units of req below `upto_tokens` that it has not yet hit or registered."""
        U = self.cfg.cache_unit_tokens
        last = upto_tokens // U
        j = req.units_done
        if j >= last:
            return
        cache = self.pool.cache
        nb = self.unit_blocks
        while j < last:
            key = self._unit_key(req, j)
            if key not in cache:
                cache[key] = _Unit(nb)
                req.units.append(key)
            j += 1
        req.units_done = last

    # ---- allocation ------------------------------------------------------------------------------------
    def _allocate(self, req: Request, tokens: int) -> bool:
        """Make req hold blocks for `tokens` KV entries; False (nothing changed) if they are not free."""
        need = self.cfg.blocks_for(tokens) - req.blocks
        if need <= 0:
            return True
        if need > self.pool.num_free:
            return False
        self.pool.take(need)
        req.blocks += need
        return True

    def _preempt(self, req: Request) -> None:
        self.pool.free_request(req)
        req.lost += req.computed
        self.tokens_lost += req.computed
        req.computed = 0
        req.preemptions += 1
        self.num_preemptions += 1
        self.waiting.appendleft(req)

    # ---- one step ----------------------------------------------------------------------------------------
    def schedule(self, now: float = 0.0) -> StepPlan:
        """Build the next step's plan (and advance each scheduled request's computed tokens, as vLLM does
        at scheduling time; step_done corrects for rejected drafts)."""
        cfg = self.cfg
        budget = cfg.max_num_batched_tokens
        thr = cfg.long_prefill_token_threshold
        spec = cfg.num_spec_tokens
        look = cfg.num_lookahead_tokens
        cap = cfg.kv_cap_tokens
        plan = StepPlan(num_spec_tokens=spec)
        reqs, ntok, ctx, dec, drafts = plan.reqs, plan.num_tokens, plan.context_before, plan.is_decode, plan.drafts
        running = self.running
        caching = cfg.caching
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
            extra = look if decoding else 0
            ok = self._allocate(r, c + n + extra)
            while not ok:
                victim = running.pop()
                self._preempt(victim)
                plan.preempted.append(victim)
                if victim is r:
                    break
                ok = self._allocate(r, c + n + extra)
            if not ok:
                break
            if caching:
                self._register(r, min(c + n, nt))
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

        if not plan.preempted:
            waiting = self.waiting
            pool = self.pool
            U = cfg.cache_unit_tokens
            while waiting and budget > 0:
                if len(running) >= cfg.max_num_seqs:
                    break
                r = waiting[0]
                nt = r.num_tokens
                hit_units = self._match(r) if caching else 0
                local = hit_units * U
                hit = local if local > r.external else r.external
                n = nt - hit
                if 0 < thr < n:
                    n = thr
                if n > budget:
                    n = budget
                # blocks: the hit units (those sitting evictable in the free queue leave it) + new ones
                cache = pool.cache
                keys = [self._unit_key(r, j) for j in range(hit_units)]
                evictable = sum(cache[k].nb for k in keys if cache[k].ref == 0)
                new_blocks = cfg.blocks_for(hit + n) - hit_units * self.unit_blocks
                if new_blocks + evictable > pool.num_free:
                    break
                waiting.popleft()
                for k in keys:  # touch
                    u = cache[k]
                    if u.ref == 0:
                        del pool.queue[k]
                        pool.num_free -= u.nb
                    u.ref += 1
                r.units = keys
                r.units_done = hit_units
                r.blocks = hit_units * self.unit_blocks
                pool.take(new_blocks)
                r.blocks += new_blocks
                r.computed = hit
                if caching:
                    self._register(r, min(hit + n, nt))
                r.external = 0
                r.hit_total += hit
                self.tokens_hit += hit
                if r.prefix_hit_tokens < 0:
                    r.prefix_hit_tokens = local
                    self.prefix_hit_tokens += local
                    self.prefix_query_tokens += r.prompt
                    r.first_scheduled = now
                running.append(r)
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

        plan.total_tokens = total
        self.tokens_scheduled += total
        plan.logit_rows = logits
        plan.n_decode = n_dec
        plan.decode_ctx_sum = dsum
        plan.decode_ctx_max = dmax
        if reqs:
            self.steps += 1
        return plan

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
        self._retire(finished)
        return ev

    # ---- fast path: runs of identical decode steps -------------------------------------------------------
    def decode_run_ready(self) -> bool:
        """True when the next steps are pure decodes of the same requests: nothing waits, every running
        request is decoding, and one step fits them all in the token budget."""
        if self.waiting or not self.running:
            return False
        per = 1 + self.cfg.num_spec_tokens
        if len(self.running) * per > self.cfg.max_num_batched_tokens:
            return False
        for r in self.running:
            if r.computed != r.prompt + r.out - 1 or not r.out:
                return False
        return True

    def plan_decode_run(self, max_steps: int, accepted: np.ndarray | None = None):
        """Plan up to `max_steps` consecutive pure-decode steps (call only when decode_run_ready()).

        The run ends at the step in which the first request finishes, or earlier when the blocks all
        rows need would no longer be free (the step-by-step scheduler would then preempt). accepted:
        with speculation, a (max_steps, n_running) array of accepted drafts per round and row.
        Returns a DecodeRun; nothing is changed until apply_decode_run."""
        cfg = self.cfg
        run = self.running
        b = len(run)
        spec = cfg.num_spec_tokens
        K = int(max_steps)
        if not spec and cfg.kv_cap_tokens is None:
            return self._plan_plain_run(K)
        if not spec:
            K = min(K, min(r.output - r.out for r in run))  # the first finish ends the run
        comp = np.fromiter((r.computed for r in run), dtype=np.int64, count=b)
        out = np.fromiter((r.out for r in run), dtype=np.int64, count=b)
        tgt = np.fromiter((r.output for r in run), dtype=np.int64, count=b)
        held = np.fromiter((r.blocks for r in run), dtype=np.int64, count=b)
        if spec:
            if accepted is None or accepted.shape[0] < K or accepted.shape[1] != b:
                raise SchedulerError("a speculative decode run needs accepted drafts of shape (steps, running)")
            gen = accepted[:K].astype(np.int64) + 1                         # tokens per round and row
            outs = out[None, :] + np.cumsum(gen, axis=0)                    # out after each round
            done = outs >= tgt[None, :]
            fin_step = np.where(done.any(axis=0), done.argmax(axis=0) + 1, K + 1)
            k = int(min(K, fin_step.min()))
            cbefore = comp[None, :] + np.concatenate([np.zeros((1, b), np.int64), np.cumsum(gen, axis=0)[:-1]])
        else:
            k = int(min(K, (tgt - out).min()))
            cbefore = comp[None, :] + np.arange(K, dtype=np.int64)[:, None]
        # blocks needed at each step j: for tokens cbefore + 1 + spec + lookahead
        bs = cfg.block_size
        tok = cbefore[:k] + 1 + spec + cfg.num_lookahead_tokens
        if cfg.kv_cap_tokens is not None:
            tok = np.minimum(tok, cfg.kv_cap_tokens)
        need = np.maximum(0, -(-tok // bs) - held[None, :]).sum(axis=1)    # cumulative by step (monotone)
        fits = need <= self.pool.num_free
        if not fits.all():
            k = int(np.argmin(fits))  # steps that fit before the first that does not
        attended = cbefore[:k] + 1
        if cfg.kv_cap_tokens is not None:
            attended = np.minimum(attended, cfg.kv_cap_tokens)
        return DecodeRun(steps=k, batch=b, rows=b * (1 + spec), ctx_sum=attended.sum(axis=1),
                         gen=gen[:k] if spec else None, need_blocks=need[:k], ctx_max=attended.max(axis=1))

    def _plan_plain_run(self, K: int) -> "DecodeRun":
        """plan_decode_run without speculation or a KV cap, in plain Python (runs are planned often and
        batches are small, where numpy's per-call overhead dominates): each row advances one token a step,
        so step j (from 0) attends to sum(computed) + b * (j + 1) tokens and row i holds blocks for
        computed_i + j + 1 + lookahead tokens."""
        run = self.running
        b = len(run)
        bs = self.cfg.block_size
        la = self.cfg.num_lookahead_tokens + 1
        free = self.pool.num_free
        k = max(K, 0)
        s0 = 0
        cmax = 0
        for r in run:
            left = r.output - r.out
            if left < k:
                k = left
            s0 += r.computed
            if r.computed > cmax:
                cmax = r.computed

        def need(steps):  # new blocks all rows hold after `steps` steps
            n = 0
            for r in run:
                x = -(-(r.computed + steps - 1 + la) // bs) - r.blocks
                if x > 0:
                    n += x
            return n

        if k > 0 and need(k) > free:
            lo, hi = 0, k  # need(lo) <= free < need(hi)
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if need(mid) <= free:
                    lo = mid
                else:
                    hi = mid
            k = lo
        j = np.arange(k, dtype=np.int64)
        ctx = s0 + b * (j + 1)
        needs = np.array([need(i + 1) for i in range(k)], dtype=np.int64) if k and k <= 4 else None
        if needs is None and k:
            # blocks by step, vectorized: rows cross a block boundary every bs steps
            comp = np.fromiter((r.computed for r in run), dtype=np.int64, count=b)
            held = np.fromiter((r.blocks for r in run), dtype=np.int64, count=b)
            first = held * bs - (comp + la) + 1  # first step index (from 0) that needs a new block
            steps = j[:, None]
            needs = np.maximum(0, (steps - first[None, :]) // bs + 1).sum(axis=1) if b else np.zeros(k, np.int64)
        return DecodeRun(steps=k, batch=b, rows=b, ctx_sum=ctx, gen=None,
                         need_blocks=needs if needs is not None else np.zeros(0, np.int64), ctx_max=cmax + 1 + j)

    def apply_decode_run(self, run: "DecodeRun", steps: int, now: float = 0.0) -> StepEvents:
        """Apply the first `steps` steps of a planned run (all of them, or fewer when an arrival cut it);
        requests finishing in the last applied step finish at `now` (a run has no first tokens)."""
        ev = StepEvents()
        if steps <= 0:
            return ev
        cfg = self.cfg
        spec = cfg.num_spec_tokens
        if steps > run.steps:
            raise SchedulerError(f"cannot apply {steps} steps of a run of {run.steps}")
        if spec:
            adv = run.gen[:steps].sum(axis=0)
        else:
            adv = None
        need_total = int(run.need_blocks[steps - 1])
        look = cfg.num_lookahead_tokens
        caching = cfg.caching
        finished = ev.finished
        emitted = 0
        for i, r in enumerate(self.running):
            g = int(adv[i]) if spec else steps
            # blocks for the last applied step: computed before it + 1 + spec + lookahead
            last_before = r.computed + (g - int(run.gen[steps - 1, i]) if spec else steps - 1)
            want = cfg.blocks_for(last_before + 1 + spec + look)
            if want > r.blocks:
                r.blocks = want
            if caching:  # what schedule() caches at the last step's allocation
                self._register(r, last_before + 1)
            r.computed += g
            before = r.out
            r.out = min(r.out + g, r.output)
            emitted += r.out - before
            if r.out >= r.output:
                r.finish_time = now
                finished.append(r)
        self.pool.take(need_total)
        self.steps += steps
        self.tokens_scheduled += run.rows * steps
        if spec:
            self.tokens_rejected += run.rows * steps - int(run.gen[:steps].sum())
        ev.tokens_emitted = emitted
        self._retire(finished)
        return ev

    def _retire(self, finished: list) -> None:
        """Drop finished requests from RUNNING and free their blocks (prefix-cached ones stay evictable)."""
        if finished:
            done = set(id(r) for r in finished)
            self.running = [r for r in self.running if id(r) not in done]
            for r in finished:
                self.pool.free_request(r)

    # ---- checks ----------------------------------------------------------------------------------------
    def check_invariants(self) -> None:
        """Raise AssertionError if block accounting is inconsistent (tests call this after each step)."""
        pool = self.pool
        held = sum(r.blocks - len(r.units) * self.unit_blocks for r in self.running)
        refs: dict = {}
        for r in self.running:
            for k in r.units:
                refs[k] = refs.get(k, 0) + 1
        shared = sum(self.unit_blocks for _ in refs)
        assert pool.num_free == sum(pool.queue.values()), "free count != free queue"
        assert held + shared + pool.num_free == pool.total, (held, shared, pool.num_free, pool.total)
        for k, u in pool.cache.items():
            assert u.ref == refs.get(k, 0), (k, u.ref, refs.get(k, 0))
            assert (u.ref == 0) == (k in pool.queue)
        for r in self.running:
            assert r.blocks >= self.cfg.blocks_for(r.computed), (r, self.cfg.blocks_for(r.computed))
        for r in self.waiting:
            assert r.blocks == 0 and r.computed == 0


@dataclass
class DecodeRun:
    """A planned run of pure-decode steps (Scheduler.plan_decode_run): `steps` steps of `batch` requests
    (`rows` query rows each step); ctx_sum[j] / ctx_max[j] = summed / largest attended KV length of step j;
    gen[j, i] = tokens row i yields in step j (speculation only); need_blocks[j] = new blocks the run has
    taken after step j."""

    steps: int
    batch: int
    rows: int
    ctx_sum: np.ndarray
    gen: np.ndarray | None
    need_blocks: np.ndarray
    ctx_max: np.ndarray | None = None   # largest attended KV length of step j
