"""The engine's fast path: a run of identical pure-decode steps planned and applied at once.

When nothing waits and every running request decodes, consecutive steps schedule the same requests, one token
(or one speculative round) each; `plan` works out up to k such steps in one go (their attended contexts, the
blocks they take, where the first request finishes or the blocks would run out) and `apply` advances the
scheduler by the first j of them (the engine cuts a run at the step in progress when a request arrives). The
result equals calling Scheduler.schedule / step_done step by step (tests/test_engine_scheduler.py) for every
policy that declares `decode_runs` (simulator.engine.scheduler.Scheduler.decode_runs); `ready` is False for any
other.

    if decode_run.ready(sched):
        run = decode_run.plan(sched, k, accepted)        # accepted: (k, running) drafts with speculation
        events = decode_run.apply(sched, run, j, now)     # j <= run.steps
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.engine.scheduler import Scheduler, SchedulerError, StepEvents


@dataclass
class DecodeRun:
    """A planned run of pure-decode steps (plan): `steps` steps of `batch` requests
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
    ctx_rows: np.ndarray | None = None  # ctx_rows[j, i]: row i's attended KV length in step j (plan(rows=True))


def ready(sched: Scheduler) -> bool:
    """True when the next steps are pure decodes of the same requests under a policy that declares decode_runs:
    nothing waits, every running request is decoding, and one step fits them all in the token budget."""
    if not sched.decode_runs or sched.waiting or not sched.running:
        return False
    per = 1 + sched.cfg.num_spec_tokens
    if len(sched.running) * per > sched.cfg.max_num_batched_tokens:
        return False
    for r in sched.running:
        if r.computed != r.prompt + r.out - 1 or not r.out:
            return False
    return True

def plan(sched: Scheduler, max_steps: int, accepted: np.ndarray | None = None, rows: bool = False) -> DecodeRun:
    """Plan up to `max_steps` consecutive pure-decode steps (call only when ready(sched)).
    rows: also give each row's attended context in each step (DecodeRun.ctx_rows; per-row pricing).

    The run ends at the step in which the first request finishes, or earlier when the blocks all
    rows need would no longer be free (the step-by-step scheduler would then preempt). accepted:
    with speculation, a (max_steps, n_running) array of accepted drafts per round and row.
    Returns a DecodeRun; nothing is changed until apply()."""
    cfg = sched.cfg
    run = sched.running
    b = len(run)
    spec = cfg.num_spec_tokens
    K = int(max_steps)
    if not spec and cfg.kv_cap_tokens is None:
        run = _plan_plain(sched, K)
        if rows:
            comp = np.fromiter((r.computed for r in sched.running), dtype=np.int64, count=b)
            run.ctx_rows = comp[None, :] + 1 + np.arange(run.steps, dtype=np.int64)[:, None]
        return run
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
    fits = need <= sched.pool.num_free
    if not fits.all():
        k = int(np.argmin(fits))  # steps that fit before the first that does not
    attended = cbefore[:k] + 1
    if cfg.kv_cap_tokens is not None:
        attended = np.minimum(attended, cfg.kv_cap_tokens)
    return DecodeRun(steps=k, batch=b, rows=b * (1 + spec), ctx_sum=attended.sum(axis=1),
                     gen=gen[:k] if spec else None, need_blocks=need[:k], ctx_max=attended.max(axis=1),
                     ctx_rows=attended if rows else None)

def _plan_plain(sched: Scheduler, K: int) -> DecodeRun:
    """plan() without speculation or a KV cap, in plain Python (runs are planned often and
    batches are small, where numpy's per-call overhead dominates): each row advances one token a step,
    so step j (from 0) attends to sum(computed) + b * (j + 1) tokens and row i holds blocks for
    computed_i + j + 1 + lookahead tokens."""
    run = sched.running
    b = len(run)
    bs = sched.cfg.block_size
    la = sched.cfg.num_lookahead_tokens + 1
    free = sched.pool.num_free
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

def apply(sched: Scheduler, run: DecodeRun, steps: int, now: float = 0.0) -> StepEvents:
    """Apply the first `steps` steps of a planned run (all of them, or fewer when an arrival cut it);
    requests finishing in the last applied step finish at `now` (a run has no first tokens)."""
    ev = StepEvents()
    if steps <= 0:
        return ev
    cfg = sched.cfg
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
    for i, r in enumerate(sched.running):
        g = int(adv[i]) if spec else steps
        # blocks for the last applied step: computed before it + 1 + spec + lookahead
        last_before = r.computed + (g - int(run.gen[steps - 1, i]) if spec else steps - 1)
        want = cfg.blocks_for(last_before + 1 + spec + look)
        if want > r.blocks:
            r.blocks = want
        if caching:  # what schedule() caches at the last step's allocation
            sched.kv.register(r, last_before + 1)
        r.computed += g
        before = r.out
        r.out = min(r.out + g, r.output)
        emitted += r.out - before
        if r.out >= r.output:
            r.finish_time = now
            finished.append(r)
    sched.pool.take(need_total)
    sched.steps += steps
    sched.tokens_scheduled += run.rows * steps
    if spec:
        sched.tokens_rejected += run.rows * steps - int(run.gen[:steps].sum())
    ev.tokens_emitted = emitted
    sched.retire(finished)
    return ev
