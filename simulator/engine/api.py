"""The engine as a function, for `sparsesim simulate` and the capacity planner (notes/ENGINE_API.md).

    from simulator.engine.api import simulate, load_source
    res = simulate(config, requests=None, seed=None)     # config: a ServingConfig (Scenario.serving)
    res.summary        dict (simulator.engine.results.summarize)
    res.requests       pandas DataFrame, one row per request
    res.timeseries     pandas DataFrame, one row per engine event
    res2 = res.rerun(rate_scale=2.0)                    # same setup, arrivals x 1/2: cost surfaces reused

`requests` is a RequestTrace (simulator.traces.requests); None = the config's own source (load_source).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from simulator.engine.config import ServingConfig, SourceConfig
from simulator.engine.results import request_table, summarize, timeseries_table
from simulator.engine.sim import Engine, RunStats


@dataclass
class SimResult:
    """One simulation: summary, per-request table, time series, engine counters, and how to re-run it."""

    summary: dict
    requests: pd.DataFrame
    timeseries: pd.DataFrame
    stats: RunStats
    config: ServingConfig
    trace: object
    seed: int
    engine: object = None
    wall_s: float = math.nan
    notes: list = field(default_factory=list)

    def rerun(self, rate_scale: float = 1.0, seed: int | None = None, **kw) -> "SimResult":
        """The same setup with arrivals compressed by rate_scale (x rate) relative to this run's trace;
        the cost surfaces built for this run are reused (memoized per strategy tuple)."""
        t = self.trace.scaled(rate_scale=rate_scale) if rate_scale != 1.0 else self.trace
        return simulate(self.config, t, self.seed if seed is None else seed, **kw)


def load_source(src: SourceConfig, seed: int, requests: int | None = None, rate_scale: float | None = None):
    """The RequestTrace a SourceConfig describes (trace replay cut and scaled, or generated with `seed`).
    requests: override the count (generated) or limit (trace); rate_scale: override the config's."""
    from simulator.engine.config import check_request_volume, check_trace_run
    from simulator.traces.requests import gamma_arrivals, load_requests, poisson

    rs = src.rate_scale if rate_scale is None else rate_scale
    if src.kind == "trace":
        t = load_requests(src.trace)
        if src.window_s is not None:
            t = t.window(*src.window_s)
        lim = requests if requests is not None else src.limit
        if lim is not None:
            t = t.head(lim)
        t = t.scaled(time_scale=src.time_scale, rate_scale=rs)
        check_trace_run(t, src)
        return t
    rng = np.random.default_rng(seed)
    n = requests if requests is not None else src.count
    if src.limit is not None and requests is None:
        n = min(n, src.limit)
    # before drawing: --requests may ask for far more than the section did
    check_request_volume(n, src.input_len.mean_tokens() + src.output_len.mean_tokens(), src.file)
    if src.kind == "poisson":
        t = poisson(src.rate, n, src.input_len, src.output_len, rng)
    else:
        t = gamma_arrivals(src.rate, src.cv, n, src.input_len, src.output_len, rng)
    if src.window_s is not None:
        t = t.window(*src.window_s)
    t = t.scaled(time_scale=src.time_scale, rate_scale=rs)
    check_trace_run(t, src)
    return t


def simulate(config: ServingConfig, requests=None, seed: int | None = None, progress: bool = False,
             record_steps: bool = True, check: bool = False, sample_every: int = 0) -> SimResult:
    """Run the engine once. Same config, requests and seed -> the same result."""
    seed = config.seed if seed is None else int(seed)
    if requests is None:
        requests = load_source(config.source, seed)
    from hwmodels.errors import SparsesimError

    t0 = time.perf_counter()
    try:
        eng = Engine(config, requests, seed=seed, progress=progress, record_steps=record_steps, check=check,
                     sample_every=sample_every).run()
    except SparsesimError as e:
        if e.file is None:   # a bound the engine met (engine.config.check_surface): name the scenario too
            msg = str(e).removeprefix(f"field '{e.field}': ") if e.field else str(e)
            raise type(e)(msg, file=config.file, field=e.field) from None
        raise
    wall = time.perf_counter() - t0
    df = request_table(eng)
    check_finished(df, config)
    ts = timeseries_table(eng)
    nblocks = [r.sched.cfg.num_blocks for r in eng.replicas]
    summary = summarize(df, ts, config.slo, len(eng.replicas), nblocks)
    stats = RunStats(events=sum(r.events for r in eng.replicas), steps=sum(r.steps for r in eng.replicas),
                     busy_s=[r.busy_s for r in eng.replicas],
                     replica_labels=[f"{r.group.role}:{r.group.label}" for r in eng.replicas], num_blocks=nblocks,
                     preemptions=sum(r.sched.num_preemptions for r in eng.replicas),
                     prefix_hit_tokens=sum(r.sched.prefix_hit_tokens for r in eng.replicas),
                     prefix_query_tokens=sum(r.sched.prefix_query_tokens for r in eng.replicas),
                     evicted_units=sum(r.sched.pool.evicted_units for r in eng.replicas), sim_end_s=eng.env.now)
    summary["simulated_s_per_wall_s"] = eng.env.now / wall if wall > 0 else math.inf
    summary["wall_s"] = wall
    return SimResult(summary=summary, requests=df, timeseries=ts, stats=stats, config=config, trace=requests,
                     seed=seed, engine=eng, wall_s=wall)


def check_finished(df: pd.DataFrame, config: ServingConfig) -> None:
    """The generic sanity check after a simulation: every finished request has finite, non-negative times in order
    (queue <= TTFT <= end to end). Anything else means the inputs contradict each other (a hardware or model file
    that validation let through), so it stops naming the replicas' files instead of printing NaN or negative
    latencies."""
    from hwmodels.errors import SparsesimError

    done = np.isfinite(df["e2e_s"].to_numpy(float)) | ~df["rejected"].to_numpy(bool)
    q, t, e = (df[c].to_numpy(float)[done] for c in ("queue_s", "ttft_s", "e2e_s"))
    with np.errstate(invalid="ignore"):
        bad = ~(np.isfinite(q) & np.isfinite(t) & np.isfinite(e) & (q >= -1e-9) & (t >= q - 1e-9) & (e >= t - 1e-9))
    if bad.any():
        i = int(np.flatnonzero(done)[np.argmax(bad)])
        files = "; ".join(sorted({f"{g.combo.hardware.file}, {g.combo.model.file}" for g in config.groups}))
        raise SparsesimError(f"request {i} finished with queue {q[np.argmax(bad)]!r} s, TTFT {t[np.argmax(bad)]!r} s, end "
                             f"to end {e[np.argmax(bad)]!r} s: the engine priced nonsense, so the inputs contradict each "
                             f"other (check {files})", file=config.file, field="serving.replicas")


def with_overrides(config: ServingConfig, **changes) -> ServingConfig:
    """A copy of `config` with top-level fields replaced (e.g. router=..., decode_run_steps=0)."""
    return replace(config, **changes)
