"""Adapter between the simulator's scheduler (simulator.engine.scheduler: the policy the simulator models,
docs/SCHEDULER_POLICY.md) and the harness's serving loop (driver.serve). Pure Python.

The scheduler counts KV blocks per request (its policy: admission, preemption); the GPU needs to know where
each request's K/V live. The executor keeps K/V in one arena per layer (model_torch.py) and the adapter
places each request in a contiguous slot of prompt + output tokens (SlotArena below, first fit) the
first time it is scheduled; a preempted or finished request's slot goes back. The arena holds as many tokens
as the scheduler's blocks (num_blocks * block_size), so the scheduler's accounting and the arena agree on
capacity; the arena reserves whole requests, so it can run out (or fragment) before the scheduler's blocks
do: then ArenaFull is raised and the level is cut (counted in the summary). KV contents are not carried
across a preemption (a self prefix hit after a recompute preemption reads stale random K/V): timing is the
same.

Async scheduling (``async_scheduling=True``, the way vLLM v1's AsyncScheduler runs): the next step is scheduled
while the previous one is still on the GPU, so its sampled tokens are not known yet. Each request that samples in
a scheduled step gets an OUTPUT PLACEHOLDER: the scheduler sees its generated-token count one higher from the
moment the step is scheduled (vLLM: ``request.num_output_placeholders``, raised in
``AsyncScheduler._update_after_schedule`` and lowered in ``_update_request_with_output``;
vllm/v1/core/sched/async_scheduler.py @ 014b2350), so the next schedule asks it for its next decode token. A
request whose in-flight step samples its last token (placeholders > 0 and generated + placeholders >= its output
length) is skipped, not scheduled for a wasted step (vLLM ``Scheduler.schedule``: ``num_computed_tokens + 2 -
num_output_placeholders >= num_prompt_tokens + max_tokens``; vllm/v1/core/sched/scheduler.py @ b4622cf9); it
stays in RUNNING, holding its blocks, until its step's update, one step late. ``update`` applies the OLDEST
scheduled step: the placeholders and the computed tokens of later scheduled steps are taken off around the
scheduler's ``step_done`` and put back after it. A request preempted while a step holding it is in flight loses
its placeholders and that step's token (it is recomputed), and, unlike vLLM, a request skipped as finishing is
not a preemption candidate while skipped (ASSUMPTION: rare at the loads run; counted by the run's preemptions).
"""
from __future__ import annotations

from collections import deque

NULL_SLOT_TOKENS = 16   # arena tokens 0..15: the null slot padding rows write to and read from


class SlotArena:
    """First-fit allocator of contiguous token ranges in the KV arena (free list kept sorted and coalesced)."""

    def __init__(self, tokens: int, align: int = 16):
        self.align = align
        self.tokens = tokens
        self.free = [(NULL_SLOT_TOKENS, tokens - NULL_SLOT_TOKENS)]   # (start, length)
        self.used = 0

    def alloc(self, n: int):
        n = -(-n // self.align) * self.align
        for k, (a, ln) in enumerate(self.free):
            if ln >= n:
                if ln == n:
                    self.free.pop(k)
                else:
                    self.free[k] = (a + n, ln - n)
                self.used += n
                return a, n
        return None

    def release(self, start: int, n: int) -> None:
        self.used -= n
        fr = self.free
        lo, hi = 0, len(fr)
        while lo < hi:
            mid = (lo + hi) // 2
            if fr[mid][0] < start:
                lo = mid + 1
            else:
                hi = mid
        fr.insert(lo, (start, n))
        if lo + 1 < len(fr) and fr[lo][0] + fr[lo][1] == fr[lo + 1][0]:
            fr[lo] = (fr[lo][0], fr[lo][1] + fr[lo + 1][1])
            fr.pop(lo + 1)
        if lo > 0 and fr[lo - 1][0] + fr[lo - 1][1] == fr[lo][0]:
            fr[lo - 1] = (fr[lo - 1][0], fr[lo - 1][1] + fr[lo][1])
            fr.pop(lo)


class ArenaFull(RuntimeError):
    pass


class SchedAdapter:
    def __init__(self, sched_config, arena, async_scheduling: bool = False):
        from simulator.engine.scheduler import Request, Scheduler

        self._Request = Request
        self.cfg = sched_config
        self.s = Scheduler(sched_config)
        self.reqs: dict = {}
        self.slot: dict = {}
        self.arena = arena
        self._plan = None
        self.async_scheduling = bool(async_scheduling)
        #: async: the scheduled steps not yet updated, oldest first: (plan, request ids given a placeholder)
        self._pending: deque = deque()
        self.placeholders: dict = {}   # rid -> output placeholders (async)
        self.skipped = 0               # async: running requests skipped as finishing in their in-flight step

    def add(self, rid, prompt_tokens: int, output_tokens: int, arrival_s: float) -> None:
        r = self._Request(rid, prompt_tokens, output_tokens, arrival_s)
        self.reqs[rid] = r
        self.s.add_request(r, arrival_s)

    def _release(self, rid) -> None:
        sl = self.slot.pop(rid, None)
        if sl is not None:
            self.arena.release(*sl)

    def _drop_placeholders(self, r) -> None:
        """A preempted request: its in-flight steps' tokens are lost, and so are their placeholders."""
        k = self.placeholders.pop(r.rid, 0)
        if k:
            r.out -= k
            for _plan, ph in self._pending:
                ph.discard(r.rid)

    def schedule(self, now: float = 0.0) -> list:
        if not self.async_scheduling:
            plan = self.s.schedule(now)
        else:
            plan = self._schedule_async(now)
        for r in plan.preempted:
            self._release(r.rid)
            if self.async_scheduling:
                self._drop_placeholders(r)
        self._plan = plan
        if self.async_scheduling:
            ph = set()
            for r, n, c in zip(plan.reqs, plan.num_tokens, plan.context_before):
                if c + n >= r.prompt + r.out:     # the step samples a token for it: a placeholder until its update
                    r.out += 1
                    self.placeholders[r.rid] = self.placeholders.get(r.rid, 0) + 1
                    ph.add(r.rid)
            if not plan.empty:
                self._pending.append((plan, ph))
        if plan.empty:
            return []
        rows = []
        for r, n, c in zip(plan.reqs, plan.num_tokens, plan.context_before):
            sl = self.slot.get(r.rid)
            if sl is None:
                sl = self.arena.alloc(r.prompt + r.output)
                if sl is None:
                    raise ArenaFull(f"KV arena: no free slot of {r.prompt + r.output} tokens "
                                    f"({self.arena.used} of {self.arena.tokens} used)")
                self.slot[r.rid] = sl
            rows.append((r.rid, int(c), int(n), [sl[0]]))
        return rows

    def _schedule_async(self, now: float):
        """The scheduler's pass with the requests whose in-flight step samples their last token left out of
        RUNNING (and put back in their places afterwards)."""
        s = self.s
        ph = self.placeholders
        skip = [r for r in s.running if ph.get(r.rid, 0) > 0 and r.out >= r.output]
        if not skip:
            return s.schedule(now)
        self.skipped += len(skip)
        orig = list(s.running)
        gone = set(map(id, skip))
        s.running = [r for r in orig if id(r) not in gone]
        plan = s.schedule(now)
        cur = set(map(id, s.running))
        before = set(map(id, orig))
        s.running = [r for r in orig if id(r) in gone or id(r) in cur] + [r for r in s.running if id(r) not in before]
        return plan

    def update(self, rows, now: float):
        """Apply the step that ran (sync: the one just scheduled; async: the oldest scheduled one)."""
        if not self.async_scheduling:
            ev = self.s.step_done(self._plan, now)
        else:
            ev = self._update_async(now)
        for r in ev.finished:
            self._release(r.rid)
        return [r.rid for r in ev.first_token], [r.rid for r in ev.finished]

    def _update_async(self, now: float):
        plan, ph = self._pending.popleft()
        later = list(self._pending)
        for lp, lph in later:   # take the later steps' computed tokens and placeholders off ...
            for r, n in zip(lp.reqs, lp.num_tokens):
                r.computed -= n
            for r in lp.reqs:
                if r.rid in lph:
                    r.out -= 1
        for r in plan.reqs:
            if r.rid in ph:
                r.out -= 1
                k = self.placeholders[r.rid] - 1
                if k:
                    self.placeholders[r.rid] = k
                else:
                    del self.placeholders[r.rid]
        ev = self.s.step_done(plan, now)
        for lp, lph in later:   # ... and back on
            for r, n in zip(lp.reqs, lp.num_tokens):
                r.computed += n
            for r in lp.reqs:
                if r.rid in lph:
                    r.out += 1
        return ev

    def in_flight(self) -> int:
        """Scheduled steps not yet updated (async)."""
        return len(self._pending)

    def has_work(self) -> bool:
        return not self.s.idle

    def counts(self):
        return self.s.num_running, self.s.num_waiting, self.s.pool.used

    def preemptions(self, rid) -> int:
        r = self.reqs.get(rid)
        return r.preemptions if r is not None else 0
