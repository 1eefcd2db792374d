"""Wall-clock serving loop of the harness (pure Python: no torch here, so tests run it on the CPU).

A workload is a list of requests with nominal arrival times (seconds from the workload's start). The loop:

1. admits every request whose nominal arrival time has passed (the scheduler sees it from then on; its
   recorded arrival stays the nominal time: a request that arrives while a step runs waits for the step's end,
   exactly what a discrete-event engine does with the same arrivals);
2. if the scheduler has work, asks it for one step (``schedule``), hands the batch to the executor (the GPU
   step: ``run(StepInput) -> (ids, StepTiming)``), and reports the step back (``update``); token times are
   taken when the sampled ids are on the host;
3. if not, sleeps until the next arrival.

It stops when every request has finished, or at ``last arrival + drain_s`` (requests not finished by then
are recorded with empty first-token / finish times and counted).

A closed-loop workload (``Workload.concurrency`` = C > 0) has no arrival times: C requests are submitted at the
start and the next one whenever one finishes (vLLM's ``--max-concurrency``); a request's recorded arrival is the
moment it was submitted, and the level is cut at ``duration_s + drain_s`` (its meta).

With ``async_scheduling=True`` (serve_async, vLLM v1's async scheduling: vllm/v1/engine/core.py
``EngineCore.step_with_batch_queue`` @ ac3cb2e2 with a queue of two batches, and the AsyncScheduler's output
placeholders, sched_adapter.py) the loop schedules step N+1, packs its inputs and launches it while step N is
still on the GPU, and only then waits for step N's sampled ids and updates the scheduler with them: the
executor takes ``launch(StepIn) -> handle`` and ``wait(handle) -> (ids, StepTiming)`` and feeds the input token
of a decode row whose last token is still in flight from the previous step's sampled ids on the device. Finished
requests are known one step late (their blocks and slots are freed at their step's update, after the next step
was scheduled). Each step row then also says what overlapped the device (ASYNC_COLUMNS).

Every step is recorded with its batch composition and its host timers (scheduler, input packing, launch,
device sync, scheduler update), every request with its arrival, first-token and finish times.
The scheduler is reached through a small adapter (``sched_adapter.py``) with this protocol:

    add(rid, prompt_tokens, output_tokens, arrival_s)
    schedule() -> list of (rid, num_computed, num_new, placement)     # placement: [slot start] (executor's)
    update(scheduled, now_s) -> (first_token_rids, finished_rids)
    has_work() -> bool;  counts() -> (running, waiting, kv_blocks_used);  preemptions(rid) -> int
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Workload:
    """Requests of one load level: ids, nominal arrival (s from start), prompt and output lengths."""

    name: str
    arrival_s: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    meta: dict = field(default_factory=dict)

    concurrency: int = 0   # > 0: a closed loop of this many requests in flight (arrival_s ignored)

    def __len__(self) -> int:
        return len(self.arrival_s)


@dataclass
class StepIn:
    """What the executor gets (mirrors model_torch.StepInput without importing torch)."""

    req_ids: list
    num_computed: np.ndarray
    num_new: np.ndarray
    block_tables: list

    @property
    def n(self) -> int:
        return len(self.req_ids)

    @property
    def tokens(self) -> int:
        return int(self.num_new.sum())

    @property
    def decode_only(self) -> bool:
        return bool((self.num_new == 1).all())


REQUEST_COLUMNS = ["workload", "rid", "arrival_s", "enqueue_s", "first_token_s", "finish_s", "input_tokens",
                   "output_tokens", "preemptions"]
STEP_COLUMNS = ["workload", "step", "t_start_s", "sched_s", "prep_s", "launch_s", "sync_s", "update_s", "wall_s",
                "gpu_s", "path", "rows", "padded", "tokens", "n_decode", "decode_ctx_sum", "decode_ctx",
                "prefill_chunks", "running", "waiting", "kv_blocks_used"]


#: extra step columns of an async-scheduling run (seconds from the workload's start, or spans): when the host
#: finished launching the step, when it began to wait for the step's ids and when they were on the host;
#: hidden_s = wait start - launch end: the host work done while the step was in flight (the next step's
#: schedule, packing and launch, the previous step's update, admissions), i.e. what overlapped the device;
#: gpu_gap_s: device time between the previous step's end and this step's start (CUDA events; nan after an idle
#: wait); fed_rows: decode rows whose input token came from the previous step's ids on the device
ASYNC_COLUMNS = ["t_launch_end_s", "t_wait_s", "t_ids_s", "hidden_s", "gpu_gap_s", "fed_rows"]
ASYNC_STEP_COLUMNS = STEP_COLUMNS + ASYNC_COLUMNS


def composition(step: StepIn) -> dict:
    """Batch composition of a step: decode rows with the KV length each attends (context after the step's
    token is written = num_computed + 1) and prefill chunks as 'tokens:prefix' (prefix = tokens already in the
    cache before the chunk)."""
    dec = step.num_new == 1
    # a 1-token prefill chunk (a prompt's last token alone) is counted as a decode row: same work
    dctx = (step.num_computed[dec] + 1).astype(np.int64)
    chunks = [f"{int(n)}:{int(c)}" for n, c in zip(step.num_new[~dec], step.num_computed[~dec])]
    return {"n_decode": int(dec.sum()), "decode_ctx_sum": int(dctx.sum()),
            "decode_ctx": " ".join(map(str, dctx.tolist())), "prefill_chunks": " ".join(chunks)}


class _Run:
    """The state one workload's serving loop keeps (both loops below): arrivals, admissions, token times, the step
    rows, and how a finished step is reported to the scheduler and recorded."""

    def __init__(self, workload: Workload, sched, executor, drain_s: float, clock, log):
        self.w, self.sched, self.executor, self.clock, self.log, self.drain_s = (workload, sched, executor, clock,
                                                                                 log, drain_s)
        self.n = n = len(workload)
        self.arr = np.asarray(workload.arrival_s, dtype=np.float64)
        self.inp = np.asarray(workload.input_tokens, dtype=np.int64)
        self.out = np.asarray(workload.output_tokens, dtype=np.int64)
        self.enq = np.full(n, math.nan)
        self.first = np.full(n, math.nan)
        self.fin = np.full(n, math.nan)
        self.steps: list = []
        self.t0 = clock()
        self.C = C = int(workload.concurrency)
        if C:
            self.arr = np.full(n, math.inf)
            self.stop_at = float(workload.meta.get("duration_s", math.inf)) + drain_s
        else:
            self.stop_at = (self.arr[-1] if n else 0.0) + drain_s
        self.nxt = self.done = self.k = 0
        self.error = ""

    def admit(self, now: float) -> None:
        """Every request whose arrival has passed (closed loop: up to C in flight) goes to the scheduler."""
        while self.nxt < self.n and (self.nxt - self.done < self.C if self.C else self.arr[self.nxt] <= now):
            i = self.nxt
            if self.C:
                self.arr[i] = now
            self.sched.add(i, int(self.inp[i]), int(self.out[i]), float(self.arr[i]))
            self.enq[i] = now
            self.nxt += 1

    def schedule(self):
        """The scheduler's next plan ([] when nothing is schedulable), or None when it raised (the level is cut and
        `error` says why)."""
        try:
            return self.sched.schedule()
        except RuntimeError as ex:   # e.g. the executor's KV placement ran out: cut the level, say why
            self.error = f"{type(ex).__name__}: {ex}"
            if self.log:
                self.log(f"[{self.w.name}] stopped: {self.error}")
            return None

    def wait_s(self) -> float:
        """Seconds until the next arrival (0 when it has passed)."""
        return max(0.0, self.arr[self.nxt] - (self.clock() - self.t0))

    def step_done(self, plan, st: StepIn, tm, ts: float, tsch: float, sync_from: float, extra: dict | None = None):
        """Report a finished step to the scheduler, take its token times and record its row."""
        t0, clock = self.t0, self.clock
        tu0 = clock()
        firsts, finished = self.sched.update(plan, tm.t_end - t0)
        tu1 = clock()
        for r in firsts:
            self.first[r] = tm.t_end - t0
        for r in finished:
            self.fin[r] = tm.t_end - t0
            if math.isnan(self.first[r]):
                self.first[r] = tm.t_end - t0
            self.executor.forget(r)
            self.done += 1
        running, waiting, blocks = self.sched.counts()
        row = {"workload": self.w.name, "step": self.k, "t_start_s": ts - t0, "sched_s": tsch - ts,
               "prep_s": tm.t_prep_end - tsch, "launch_s": tm.t_launch_end - tm.t_prep_end,
               "sync_s": tm.t_end - sync_from, "update_s": tu1 - tu0, "wall_s": tu1 - ts,
               "gpu_s": tm.gpu_s, "path": tm.path, "rows": st.n, "padded": tm.padded, "tokens": st.tokens,
               "running": running, "waiting": waiting, "kv_blocks_used": blocks}
        row.update(extra or {})
        row.update(composition(st))
        self.steps.append(row)
        self.k += 1

    def finish(self):
        return _finish(self.w, self.sched, self.arr, self.inp, self.out, self.enq, self.first, self.fin, self.steps,
                       self.nxt, self.done, self.k, self.clock() - self.t0, self.drain_s, self.error, self.log)


def _step_in(plan) -> StepIn:
    return StepIn([p[0] for p in plan], np.asarray([p[1] for p in plan], dtype=np.int64),
                  np.asarray([p[2] for p in plan], dtype=np.int64), [p[3] for p in plan])


def serve(workload: Workload, sched, executor, *, drain_s: float = 30.0, clock=time.perf_counter,
          sleep=time.sleep, log=None, async_scheduling: bool = False):
    """Run one workload in real time. Returns (request rows, step rows, summary dict)."""
    if async_scheduling:
        return serve_async(workload, sched, executor, drain_s=drain_s, clock=clock, sleep=sleep, log=log)
    run = _Run(workload, sched, executor, drain_s, clock, log)
    while True:
        now = clock() - run.t0
        run.admit(now)
        if run.done == run.n or now > run.stop_at:
            break
        if sched.has_work():
            ts = clock()
            plan = run.schedule()
            if plan is None:
                break
            tsch = clock()
            if not plan:
                # nothing schedulable (e.g. blocks exhausted and nothing to preempt): wait for a change
                sleep(min(0.001, run.wait_s()) if run.nxt < run.n else 0.001)
                continue
            st = _step_in(plan)
            _ids, tm = executor.run(st)
            run.step_done(plan, st, tm, ts, tsch, tm.t_launch_end)
        elif run.nxt < run.n and not run.C:
            sleep(run.wait_s())
        else:
            break
    return run.finish()


def serve_async(workload: Workload, sched, executor, *, drain_s: float = 30.0, clock=time.perf_counter,
                sleep=time.sleep, log=None):
    """serve() with async scheduling (module docstring): at most one step in flight while the next is scheduled,
    packed and launched; the scheduler adapter must run with async_scheduling=True."""
    run = _Run(workload, sched, executor, drain_s, clock, log)
    t0 = run.t0
    pending = None     # the step on the device: dict(plan, st, handle, ts, tsch)
    while True:
        now = clock() - t0
        run.admit(now)
        stopping = run.done == run.n or now > run.stop_at or bool(run.error)
        if stopping and pending is None:
            break
        new = None
        idle = False
        if not stopping and sched.has_work():
            ts = clock()
            plan = run.schedule() or []
            tsch = clock()
            if plan:
                st = _step_in(plan)
                new = {"plan": plan, "st": st, "handle": executor.launch(st), "ts": ts, "tsch": tsch}
            else:
                idle = True
        elif not stopping:
            idle = True
        if pending is not None:
            tw = clock()
            _ids, tm = executor.wait(pending["handle"])
            run.step_done(pending["plan"], pending["st"], tm, pending["ts"], pending["tsch"], tw, {
                "t_launch_end_s": tm.t_launch_end - t0, "t_wait_s": tw - t0, "t_ids_s": tm.t_end - t0,
                "hidden_s": tw - tm.t_launch_end, "gpu_gap_s": getattr(tm, "gpu_gap_s", math.nan),
                "fed_rows": int(getattr(tm, "fed", 0))})
        pending = new
        if pending is None and idle:
            if sched.has_work() or run.nxt >= run.n:
                if not sched.has_work() and run.nxt >= run.n and not run.C:
                    break
                sleep(0.001 if run.nxt >= run.n else min(0.001, run.wait_s()))
            elif not run.C:
                sleep(run.wait_s())
    return run.finish()


def _finish(workload, sched, arr, inp, out, enq, first, fin, steps, nxt, done, k, wall_s, drain_s, error, log):
    n = len(workload)
    reqs = []
    for i in range(n):
        reqs.append({"workload": workload.name, "rid": i, "arrival_s": float(arr[i]), "enqueue_s": enq[i],
                     "first_token_s": first[i], "finish_s": fin[i], "input_tokens": int(inp[i]),
                     "output_tokens": int(out[i]), "preemptions": sched.preemptions(i) if nxt > i else 0})
    summary = {"workload": workload.name, "requests": n, "admitted": int(nxt), "finished": int(done),
               "unfinished": int(n - done), "steps": k, "wall_s": wall_s, "drain_s": drain_s, "error": error}
    if log:
        log(f"[{workload.name}] {done}/{n} finished in {summary['wall_s']:.1f} s, {k} steps")
    return reqs, steps, summary


def latency_stats(reqs: list[dict]) -> dict:
    """TTFT = first token - nominal arrival; TPOT = (finish - first token) / (output tokens - 1), over
    finished requests with at least 2 output tokens for TPOT."""
    ttft = np.asarray([r["first_token_s"] - r["arrival_s"] for r in reqs if not math.isnan(r["finish_s"])])
    tpot = np.asarray([(r["finish_s"] - r["first_token_s"]) / (r["output_tokens"] - 1) for r in reqs
                       if not math.isnan(r["finish_s"]) and r["output_tokens"] > 1])
    q = lambda a, p: float(np.percentile(a, p)) if len(a) else math.nan  # noqa: E731
    return {"ttft_p50_s": q(ttft, 50), "ttft_p90_s": q(ttft, 90), "tpot_p50_s": q(tpot, 50), "tpot_p90_s": q(tpot, 90),
            "n_ttft": len(ttft), "n_tpot": len(tpot)}
