"""A measured run replayed through the engine: the workload rebuilt, simulated, and both sides' statistics.

    trace, conc, how = workload(run)                 # RequestTrace, closed-loop concurrency or None, one line
    res = replay(run, cfg, seed=0)                   # simulator.engine.api.SimResult (requests in the run's order)
    meas, sim = measured_stats(run, slo), simulated_stats(res, slo)
    rows = error_rows(meas, sim)

The workload (the finished requests, in the order they were sent, with their prompt and output lengths):
  * max_concurrency set and request_rate inf: a closed loop of that many requests in flight (vLLM
    --max-concurrency, the next request sent when one finishes; `think_s` after its last token);
  * else start times in the file: each request arrives when it was sent (exact replay);
  * else a finite request_rate: arrivals drawn as vLLM draws them (gamma with shape = burstiness, mean 1/rate;
    burstiness 1 = Poisson) with the seed: the measured arrivals are not in the file, so this is not their replay;
  * else (inf, no cap): every request at t = 0.
Failed requests (non-empty errors) are left out of the workload and of every statistic.

Statistics follow vLLM's definitions (vllm/benchmarks/serve.py `calculate_metrics`, as
simulator.engine.results does): TTFT and E2E per request; TPOT = (E2E - TTFT) / (output - 1) over requests with
more than one output token; ITL = every gap between two tokens of a request, pooled; mean and linear percentiles
(numpy); throughput = output tokens / duration (the file's `duration` when given, else first send to last token;
simulated: first arrival to last finish); goodput = requests within every SLO limit given per second of duration.
"""
from __future__ import annotations

import math

import numpy as np

from simulator.benchmark_results import BenchmarkRun

METRICS = ("ttft", "tpot", "itl", "e2e")
STATS = ("mean", "p50", "p90", "p99")
RATES = ("request_throughput", "output_throughput", "goodput")


def workload(run: BenchmarkRun, seed: int = 0, think_s: float = 0.0):
    """(RequestTrace of the finished requests, closed-loop concurrency or None, one line saying how it was built)."""
    from simulator.traces.requests import RequestTrace

    ok = run.ok
    inp = run.input_tokens[ok].astype(np.int64)
    out = run.output_tokens[ok].astype(np.int64)
    n = int(ok.sum())
    name = run.label or "measured"
    if run.max_concurrency is not None and math.isinf(run.request_rate):
        how = (f"closed loop of {run.max_concurrency} in flight (max_concurrency {run.max_concurrency}, request_rate "
               f"inf), {n} requests in the order sent" + (f", {think_s * 1e3:g} ms client think time" if think_s else ""))
        return (RequestTrace(name=name, source=f"{run.file} (closed loop)", arrival_s=np.zeros(n), input_tokens=inp,
                             output_tokens=out), run.max_concurrency, how)
    if run.start_s is not None:
        arr = run.start_s[ok] - run.start_s[ok].min()
        if np.any(np.diff(arr) < 0):
            raise ValueError("requests must be in send order (BenchmarkRun.in_send_order)")
        how = f"{n} requests arriving at their measured send times (start_times, over {arr.max():,.1f} s)"
        if run.max_concurrency is not None:
            how += f"; the client's cap of {run.max_concurrency} in flight is in those times"
        return RequestTrace(name=name, source=f"{run.file} (start_times)", arrival_s=arr, input_tokens=inp,
                            output_tokens=out), None, how
    if math.isfinite(run.request_rate):
        rng = np.random.default_rng(seed)
        shape = run.burstiness
        gaps = rng.gamma(shape, 1.0 / (run.request_rate * shape), size=n)
        gaps[0] = 0.0
        arr = np.cumsum(gaps)
        how = (f"{n} requests at {run.request_rate:g}/s, gamma arrivals (burstiness {shape:g}) drawn with seed {seed}: "
               "the file holds no send times, so these are not the measured arrivals")
        if run.max_concurrency is not None:
            how += f"; its cap of {run.max_concurrency} in flight is NOT applied"
        return RequestTrace(name=name, source=f"{run.file} (rate {run.request_rate:g}/s)", arrival_s=arr,
                            input_tokens=inp, output_tokens=out), None, how
    how = f"{n} requests all sent at t = 0 (request_rate inf, no concurrency cap)"
    return RequestTrace(name=name, source=f"{run.file} (all at once)", arrival_s=np.zeros(n), input_tokens=inp,
                        output_tokens=out), None, how


def replay(run: BenchmarkRun, cfg, seed: int = 0, think_s: float = 0.0, progress: bool = False):
    """(SimResult, how): the run's workload simulated under ServingConfig `cfg` (no warm-up left out, so both
    sides cover the same requests)."""
    from simulator.engine.api import simulate, with_concurrency

    trace, conc, how = workload(run, seed, think_s)
    if conc is not None:
        cfg = with_concurrency(cfg, conc, 0, think_s)
    elif cfg.source.concurrency:
        cfg = _open_loop(cfg)
    return simulate(cfg, trace, seed=seed, progress=progress), how


def _open_loop(cfg):
    """The config with its source's closed loop switched off (the measured arrivals drive the replay)."""
    from dataclasses import replace

    return replace(cfg, source=replace(cfg.source, concurrency=0, warmup=0, think_s=0.0))


def _stats(prefix: str, x: np.ndarray, out: dict) -> None:
    x = np.asarray(x, dtype=np.float64)
    x = x[np.isfinite(x)]
    out[f"{prefix}_mean_ms"] = float(x.mean() * 1e3) if len(x) else math.nan
    for p in (50, 90, 99):
        out[f"{prefix}_p{p}_ms"] = float(np.percentile(x, p) * 1e3) if len(x) else math.nan


def _tpot(ttft, e2e, out_tok) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(out_tok > 1, (e2e - ttft) / (out_tok - 1), np.nan)


def _slo_met(ttft, tpot, e2e, slo: dict) -> np.ndarray:
    ok = np.ones(len(ttft), dtype=bool)
    if "ttft_ms" in slo:
        ok &= ttft * 1e3 <= slo["ttft_ms"]
    if "tpot_ms" in slo:
        ok &= ~(tpot * 1e3 > slo["tpot_ms"])      # a 1-token output (NaN TPOT) meets any TPOT limit
    if "e2e_ms" in slo:
        ok &= e2e * 1e3 <= slo["e2e_ms"]
    return ok


def measured_stats(run: BenchmarkRun, slo: dict | None = None) -> dict:
    """vLLM-style statistics of the run's finished requests (ms; rates per second)."""
    ok = run.ok
    ttft, e2e, out = run.ttft_s[ok], run.e2e_s[ok], run.output_tokens[ok]
    tpot = _tpot(ttft, e2e, out)
    s: dict = {"requests": int(ok.sum())}
    _stats("ttft", ttft, s)
    _stats("tpot", tpot, s)
    _stats("e2e", e2e, s)
    if run.itl_s is not None:
        pooled = [g for i, g in enumerate(run.itl_s) if ok[i] and len(g)]
        _stats("itl", np.concatenate(pooled) if pooled else np.zeros(0), s)
    else:
        _stats("itl", np.zeros(0), s)
    dur = run.duration_s
    if dur is None and run.start_s is not None:
        dur = float(np.max(run.start_s[ok] + e2e) - np.min(run.start_s[ok]))
    s["duration_s"] = math.nan if dur is None else float(dur)
    s["request_throughput"] = s["requests"] / dur if dur else math.nan
    s["output_throughput"] = float(out.sum()) / dur if dur else math.nan
    s["goodput"] = float(_slo_met(ttft, tpot, e2e, slo).sum()) / dur if (dur and slo) else math.nan
    return s


def simulated_stats(res, slo: dict | None = None) -> dict:
    """The same statistics of a replay's finished requests (ITL from the engine's pooled gaps)."""
    df = res.requests
    done = ~df["rejected"].to_numpy(bool) & np.isfinite(df["e2e_s"].to_numpy(float))
    ttft, e2e = df["ttft_s"].to_numpy(float)[done], df["e2e_s"].to_numpy(float)[done]
    out = df["output_tokens"].to_numpy(float)[done]
    tpot = _tpot(ttft, e2e, out)
    s: dict = {"requests": int(done.sum())}
    _stats("ttft", ttft, s)
    _stats("tpot", tpot, s)
    _stats("e2e", e2e, s)
    for k in STATS:
        s[f"itl_{k}_ms"] = float(res.summary.get(f"itl_{k}_ms", math.nan))
    arr = df["arrival_s"].to_numpy(float)[done]
    dur = float(np.max(arr + e2e) - np.min(df["arrival_s"].to_numpy(float))) if done.any() else math.nan
    s["duration_s"] = dur
    s["request_throughput"] = s["requests"] / dur if dur else math.nan
    s["output_throughput"] = float(out.sum()) / dur if dur else math.nan
    s["goodput"] = float(_slo_met(ttft, tpot, e2e, slo).sum()) / dur if (dur and slo) else math.nan
    return s


def error_rows(meas: dict, sim: dict) -> list[dict]:
    """One row per compared figure: metric, stat, measured, simulated, error (simulated / measured - 1)."""
    rows = []
    for m in METRICS:
        for st in STATS:
            k = f"{m}_{st}_ms"
            rows.append(_row(m, st, "ms", meas.get(k), sim.get(k)))
    for k in RATES:
        rows.append(_row(k, "", "req/s" if k != "output_throughput" else "tok/s", meas.get(k), sim.get(k)))
    return rows


def _row(metric, stat, unit, m, s) -> dict:
    m = math.nan if m is None else float(m)
    s = math.nan if s is None else float(s)
    err = s / m - 1.0 if (math.isfinite(m) and math.isfinite(s) and m > 0) else math.nan
    return {"metric": metric, "stat": stat, "unit": unit, "measured": m, "simulated": s, "error": err}


def subset_rows(run: BenchmarkRun, res, pos: np.ndarray) -> list[dict]:
    """error_rows of TTFT, TPOT and E2E over the finished requests at positions `pos` (in send order) of a replay of
    the whole run (ITL and the rates are not defined for a subset of requests: left out)."""
    ok = run.ok
    df = res.requests
    m: dict = {}
    s: dict = {}
    mt, me, mo = run.ttft_s[ok][pos], run.e2e_s[ok][pos], run.output_tokens[ok][pos]
    st, se = df["ttft_s"].to_numpy(float)[pos], df["e2e_s"].to_numpy(float)[pos]
    for k, mv, sv in (("ttft", mt, st), ("tpot", _tpot(mt, me, mo), _tpot(st, se, mo)), ("e2e", me, se)):
        _stats(k, mv, m)
        _stats(k, sv, s)
    return [_row(k, st_, "ms", m[f"{k}_{st_}_ms"], s[f"{k}_{st_}_ms"]) for k in ("ttft", "tpot", "e2e") for st_ in STATS]


def per_request_errors(run: BenchmarkRun, res) -> dict:
    """Median and p90 of |simulated / measured - 1| per request (TTFT, TPOT, E2E), requests lined up in order."""
    ok = run.ok
    df = res.requests
    m = {"ttft": run.ttft_s[ok], "e2e": run.e2e_s[ok]}
    m["tpot"] = _tpot(m["ttft"], m["e2e"], run.output_tokens[ok])
    s = {k: df[f"{k}_s"].to_numpy(float) for k in ("ttft", "tpot", "e2e")}
    out = {}
    for k in ("ttft", "tpot", "e2e"):
        good = np.isfinite(m[k]) & np.isfinite(s[k]) & (m[k] > 0)
        e = np.abs(s[k][good] / m[k][good] - 1.0)
        out[k] = (float(np.median(e)) if len(e) else math.nan, float(np.percentile(e, 90)) if len(e) else math.nan)
    return out


def table_text(rows: list[dict]) -> str:
    """The error table as text."""
    lines = [f"{'metric':<27} {'measured':>12} {'simulated':>12} {'error':>8}"]
    for r in rows:
        name = f"{r['metric']} {r['stat']}".strip() + f" ({r['unit']})"
        err = "" if not math.isfinite(r["error"]) else f"{r['error']:+.1%}"
        fm = lambda v: "-" if not math.isfinite(v) else f"{v:,.3f}" if abs(v) < 100 else f"{v:,.1f}"  # noqa: E731
        lines.append(f"{name:<27} {fm(r['measured']):>12} {fm(r['simulated']):>12} {err:>8}")
    return "\n".join(lines)
