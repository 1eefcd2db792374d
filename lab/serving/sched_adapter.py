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
"""
from __future__ import annotations

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
    def __init__(self, sched_config, arena):
        from simulator.engine.scheduler import Request, Scheduler

        self._Request = Request
        self.cfg = sched_config
        self.s = Scheduler(sched_config)
        self.reqs: dict = {}
        self.slot: dict = {}
        self.arena = arena
        self._plan = None

    def add(self, rid, prompt_tokens: int, output_tokens: int, arrival_s: float) -> None:
        r = self._Request(rid, prompt_tokens, output_tokens, arrival_s)
        self.reqs[rid] = r
        self.s.add_request(r, arrival_s)

    def _release(self, rid) -> None:
        sl = self.slot.pop(rid, None)
        if sl is not None:
            self.arena.release(*sl)

    def schedule(self, now: float = 0.0) -> list:
        plan = self.s.schedule(now)
        for r in plan.preempted:
            self._release(r.rid)
        self._plan = plan
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

    def update(self, rows, now: float):
        ev = self.s.step_done(self._plan, now)
        for r in ev.finished:
            self._release(r.rid)
        return [r.rid for r in ev.first_token], [r.rid for r in ev.finished]

    def has_work(self) -> bool:
        return not self.s.idle

    def counts(self):
        return self.s.num_running, self.s.num_waiting, self.s.pool.used

    def preemptions(self, rid) -> int:
        r = self.reqs.get(rid)
        return r.preemptions if r is not None else 0
