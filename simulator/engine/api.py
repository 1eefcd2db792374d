"""The engine as a function, for `sparsesim simulate` and the capacity planner (docs/ENGINE_API.md).

    from simulator.engine.api import simulate, load_source
    res = simulate(config, requests=None, seed=None)     # config: a ServingConfig (Scenario.serving)
    res.summary        dict (simulator.engine.results.summarize)
    res.requests       pandas DataFrame, one row per request
    res.timeseries     pandas DataFrame, one row per engine event
    res2 = res.rerun(rate_scale=2.0)                    # same setup, arrivals x 1/2: cost surfaces reused

`requests` is a RequestTrace (simulator.traces.requests); None = the config's own source (load_source). A closed
loop (serving.requests.closed_loop, or `with_concurrency(config, C)`) submits the trace's requests in order, C in
flight, ignoring the trace's arrival times. `res.notes` lists what the engine runtime profile does not know (taken
as 0) or assumes.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from simulator.engine.config import (
    ServingConfig,
    SourceConfig,
    check_request_volume,
    check_trace_run,
    closed_loop_source,
)
from simulator.engine.results import itl_samples, request_table, summarize, timeseries_table
from simulator.engine.sim import Engine, RunStats
from simulator.engine.trace_replay import replay_notes
from simulator.traces.requests import closed_loop, gamma_arrivals, load_requests, poisson


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
    if src.kind == "closed_loop":
        return closed_loop(src.concurrency, n, src.input_len, src.output_len, rng)
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
    warm_end = -math.inf
    if "warmup" in df.columns and df["warmup"].any():
        warm_end = float(np.nanmax(eng.rec.finish[df["warmup"].to_numpy()]))
    summary = summarize(df, ts, config.slo, len(eng.replicas), nblocks, itl=itl_samples(eng, warm_end))
    stats = RunStats(events=sum(r.events for r in eng.replicas), steps=sum(r.steps for r in eng.replicas),
                     busy_s=[r.busy_s for r in eng.replicas],
                     replica_labels=[f"{r.group.role}:{r.group.label}" for r in eng.replicas], num_blocks=nblocks,
                     preemptions=sum(r.sched.num_preemptions for r in eng.replicas),
                     prefix_hit_tokens=sum(r.sched.prefix_hit_tokens for r in eng.replicas),
                     prefix_query_tokens=sum(r.sched.prefix_query_tokens for r in eng.replicas),
                     evicted_units=sum(r.sched.pool.evicted_units for r in eng.replicas), sim_end_s=eng.env.now)
    summary["simulated_s_per_wall_s"] = eng.env.now / wall if wall > 0 else math.inf
    summary["wall_s"] = wall
    notes = list(runtime_notes(config)) + replay_notes(eng)
    return SimResult(summary=summary, requests=df, timeseries=ts, stats=stats, config=config, trace=requests,
                     seed=seed, engine=eng, wall_s=wall, notes=notes)


def runtime_notes(config: ServingConfig) -> list[str]:
    """What the engine runtime profile does not know (taken as 0) or does not apply, one line each."""
    prof = config.runtime
    if prof is None:
        return []
    given = config.step_cost_given
    out = [f"engine {config.engine}: {n}" for n in prof.notes]
    if prof.launch is not None and config.host_launch_s is None:
        lm = prof.launch
        out.append(f"engine {config.engine}: issuing the forward takes {lm.median_s() * 1e3:.1f} ms (median; "
                   f"{'drawn per step from' if config.host_launch_mode == 'sample' else 'the median of'} the profile's "
                   f"measured distribution, p5-p95 {dict(lm.quantiles).get(5, lm.constant_s) * 1e3:.0f}-"
                   f"{dict(lm.quantiles).get(95, lm.constant_s) * 1e3:.0f} ms): a property of the host it was "
                   "measured on; set serving.step_cost.host_launch_ms to your machine's")
    if prof.mask is not None and any(g.combo.hardware.name != prof.mask.gpu for g in config.groups):
        out.append(f"engine {config.engine}: batch-mask attention terms measured on {prof.mask.gpu}, scaled to the "
                   "replica's GPU by HBM bandwidth (per key) and bf16 peak (per Q x K): an assumption")
    fams = sorted({f for g in config.groups for f in [prof.apply_attention(g.combo)[1]] if f})
    if fams:
        out.append(f"engine {config.engine}: dense attention priced as its default kernel family {', '.join(fams)} "
                   "(runtime.attention_defaults; set strategies.attention dense.kernel to choose another)")
    out.extend(_pool_cast_notes(config, prof))
    if prof.prefill_attn == "dp" and any(np.any(np.asarray(g.combo.attn_dp) > 1) for g in config.groups):
        out.append(f"engine {config.engine}: under attention DP a prompt's prefill attention runs on its DP group at "
                   "heads / (tp / attn_dp) a device (runtime.prefill_attention dp; the scenario's runtime "
                   "prefill_attention does not override the profile)")
    lays = sorted({f"decode kernel {d['sparse_kernel']}, rows {d['decode_rows']}, prefill {d['sparse_prefill']}"
                   + (", prompts <= k dense" if d["short_prompt_dense"] else "")
                   + f", indexer rows {d['indexer_rows']}" for g in config.groups
                   for d in [prof.dsa_layout(g.combo)] if d})
    if lays:
        out.append(f"engine {config.engine}: DSA's sparse MLA laid out as the engine does ({'; '.join(lays)}: "
                   "runtime.attention_defaults; set strategies.attention dsa.sparse_kernel / decode_rows / sparse_prefill / "
                   "short_prompt_dense to choose)")
    if prof.kernels is not None and any(g.combo.kernels != prof.kernels for g in config.groups):
        out.append(f"engine {config.engine}: its steps are priced with the {prof.kernels} kernel set (the scenario's "
                   "runtime.kernels is replaced)")
    for k in sorted(given):
        out.append(f"engine {config.engine}: serving.step_cost.{k} overrides the profile")
    return out


def with_concurrency(config: ServingConfig, concurrency: int, warmup: int = 0, think_s: float = 0.0) -> ServingConfig:
    """The config with its request source run as a closed loop of `concurrency` requests in flight (the client
    submits the next request think_s after a request's last token reached it)."""
    return replace(config, source=closed_loop_source(config.source, concurrency, warmup, think_s))


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


def _pool_cast_notes(config, prof) -> list[str]:
    """A line per replica group whose attention family casts the device's whole KV pool every layer
    (families.POOL_CAST_FAMILIES: fa3_mla_fp8cast, fi_mla_fp8cast): the pool it prices, and the rule that sized it,
    since that pool sets the step's time."""
    from dataclasses import replace

    from simulator import memory
    from simulator.kernels.families import casts_pool

    out = []
    for g in config.groups:
        c = prof.apply_layout(g.combo)
        c, fam = prof.apply_attention(c)
        att = c.attention
        fam = fam or (att.values.get("kernel") if getattr(att, "name", "") == "dense" else None)
        if not fam or not casts_pool(fam):
            continue
        given = g.combo.attention.values.get("kernel") if "kernel" in getattr(g.combo.attention, "given", ()) else None
        if given and given != fam:   # the engine's form of the scenario's kernel (engine_attention_defaults.yaml mla_fp8_as)
            fam = f"{fam} (the scenario's kernel {given}, as engine {config.engine} runs it over an fp8 MLA cache)"
        pinned = float(att.values.get("pool_tokens") or 0.0)
        if pinned:
            out.append(f"{g.label}: {fam} casts the layer's whole fp8 KV pool to bf16 every layer of every step: "
                       f"{pinned:,.0f} tokens a device (strategies.attention dense.pool_tokens)")
            continue
        pool = float(memory.kv_pool_tokens(c))
        rule = (f"SGLang's mem_fraction_static {memory.sglang_mem_fraction_static(c.hardware.hbm_capacity_bytes, c.tp, True)}"
                if c.kv_budget == "sglang" else f"capacity x {memory.MEMORY_UTILIZATION} - weights - workspace")
        other = float(memory.kv_pool_tokens(replace(c, kv_budget="vllm" if c.kv_budget == "sglang" else "sglang")))
        out.append(f"{g.label}: {fam} casts the layer's whole fp8 KV pool to bf16 every layer of every step: "
                   f"{pool:,.0f} tokens a device ({rule}; the other engine's rule {other:,.0f}); pin SGLang's "
                   "--max-total-tokens with strategies.attention dense.pool_tokens")
    return out
