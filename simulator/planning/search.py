"""The engine search of a plan candidate: the highest request rate one replica serves within the SLOs.

One engine run replays the plan's requests (simulator.engine.api.simulate) on ONE replica of the candidate
with arrivals compressed by a factor x (rate = x times the requests' own rate); a run passes when no request
was rejected and every SLO limit holds (percentiles over the replayed requests; goodput: the share of requests
within every limit). Passing is taken as monotone in the rate.

A short replay flatters an overloaded replica (its queue has no time to grow), so a run replays at least as
many requests as it takes for their compressed arrivals to span MIN_SPAN_FACTOR x the longest latency limit
(more requests from the same trace or generator, Replay); and an SLO without a TTFT or E2E limit gets an
implicit p90 queueing limit (implicit_limits).

Search (a trickle probe, a bracket, then safeguarded interpolation):
  0. a run at 1/16 of the first guess (below): a candidate that misses the SLO when requests barely queue
     misses it at every rate, and is rejected after this one run;
  1. then the screen's first guess (simulator.planning.screen: prefill + decode share of one request,
     serialized); double while runs pass (at most 2^4 above the guess: beyond, the capacity is reported as
     a floor), so that a passing and a failing rate bracket the capacity;
  2. between the best passing rate `lo` and the lowest failing rate `hi`: SLO margin
     m(x) = max over limits of log(value / limit) (< 0 passes) is interpolated linearly in log x, the next rate
     taken where it crosses 0, kept within the middle half of [lo, hi] (a bisection step when a run rejected
     requests); stop when hi / lo - 1 <= tolerance or after max_runs runs.
The capacity is `lo`'s rate, with that run's percentiles and throughput.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

MAX_DOUBLINGS = 4
#: a run's arrivals must span at least MIN_SPAN_FACTOR x the longest latency limit: a replica overloaded by
#: 10 % builds a backlog of 10 % of the span, which then exceeds the limit (a short replay of an overloaded
#: replica would pass on its transient). ASSUMPTION: overloads smaller than 10 % may go unnoticed.
MIN_SPAN_FACTOR = 10.0
#: replays grow to at most this many times the plan's request count
MAX_REQUESTS_FACTOR = 20
#: a p90 queueing limit applied when the SLO has no TTFT or E2E limit (ASSUMPTION: a replica whose requests
#: wait more than 2 s at p90 before their prefill starts is not keeping up; see implicit_limits)
MAX_QUEUE_MS = 2000.0
#: the trickle probe runs at the first guess / PROBE_FACTOR: low enough that requests barely queue, so a miss
#: there is a miss at any rate (ASSUMPTION: 16x below a guess that itself ignores overlap)
PROBE_FACTOR = 16.0
SUMMARY_KEYS = ("queue_p50_ms", "queue_p90_ms", "request_rate_offered", "throughput_req_s", "output_tokens_per_s", "total_tokens_per_s",
                "ttft_p50_ms", "ttft_p90_ms", "ttft_p99_ms", "tpot_p50_ms", "tpot_p90_ms", "tpot_p99_ms",
                "e2e_p50_ms", "e2e_p90_ms", "e2e_p99_ms", "rejected", "finished", "requests", "slo_attainment",
                "preemptions", "duration_s")


@dataclass
class Run:
    """One engine run of a candidate."""

    scale: float
    rate: float
    passed: bool
    margin: float
    summary: dict


@dataclass
class SearchResult:
    status: str                     # ok | slo (fails even at the lowest rate tried)
    capacity: float = 0.0           # requests/s one replica serves within the SLOs
    at_least: bool = False          # the search never found a failing rate: capacity is a floor
    runs: list = field(default_factory=list)
    reason: str = ""
    wall_s: float = 0.0

    @property
    def best(self) -> Run | None:
        ok = [r for r in self.runs if r.passed]
        return max(ok, key=lambda r: r.scale) if ok else None


def margin(summary: dict, slo_limits: dict, goodput: dict | None) -> float:
    """max over limits of log(value / limit): < 0 means every limit holds (inf: rejected requests)."""
    if summary.get("rejected", 0):
        return math.inf
    m = -math.inf
    for k, lim in slo_limits.items():
        v = summary.get(k, math.nan)
        if not np.isfinite(v):
            return math.inf
        m = max(m, math.log(max(v, 1e-12) / lim))
    if goodput is not None:
        att = summary.get("slo_attainment", 0.0)
        m = max(m, math.log(max(goodput["min_attainment"], 1e-12) / max(att, 1e-12)))
    return m


class Replay:
    """The requests of a run at arrival compression x: the plan's requests (`base`), extended from the same
    source while their compressed arrivals span less than `min_span_s` (module docstring), up to
    MAX_REQUESTS_FACTOR x the base count (or all a trace holds)."""

    def __init__(self, source, seed: int, min_span_s: float):
        from simulator.engine.api import load_source

        self.source, self.seed, self.min_span_s = source, seed, min_span_s
        self._load = load_source
        # the traces of every request count loaded so far, shared by the candidates of a plan (same source and seed)
        key = (id(source), seed)
        shared = _TRACES.get(key)
        if shared is None or shared[0] is not source:
            _TRACES.clear()
            shared = (source, {}, [False])
            _TRACES[key] = shared
        self._cache, self._exhausted = shared[1], shared[2]
        base = self._cache.get(-1)
        if base is None:
            base = load_source(source, seed=seed)
            self._cache[-1] = base
        self.base_n = len(base)
        self._cache.setdefault(self.base_n, base)
        span = _span(base)
        self.native = (self.base_n - 1) / span if span > 0 else 1.0

    def at(self, x: float):
        n = self.base_n
        t = self._cache[n]
        cap = MAX_REQUESTS_FACTOR * self.base_n
        while _span(t) / x < self.min_span_s and n < cap and not (self.exhausted and n >= max(self._cache)):
            want = min(cap, int(math.ceil(n * 1.2 * self.min_span_s / max(_span(t) / x, 1e-9))))
            if want <= n:
                break
            t = self._cache.get(want)
            if t is None:
                t = self._load(self.source, seed=self.seed, requests=want)
                self._cache[want] = t
                if len(t) < want:
                    self._exhausted[0] = True
            if len(t) <= n:
                break
            n = len(t)
        return t.scaled(rate_scale=x)

    @property
    def exhausted(self) -> bool:
        """The source holds fewer requests than a longer replay asked for."""
        return self._exhausted[0]


#: (id(source), seed) -> (source, {request count: trace}, [exhausted]): the replays one plan's candidates share
_TRACES: dict = {}


def _span(t) -> float:
    return float(t.arrival_s[-1] - t.arrival_s[0]) if len(t) > 1 else 0.0


def implicit_limits(slo_limits: dict, goodput: dict | None) -> dict:
    """The limits a run is judged by: the plan's, plus p90 queueing <= MAX_QUEUE_MS when no limit reacts
    to queueing (no TTFT or E2E limit): a TPOT-only SLO would otherwise pass a replica whose queue grows
    without bound (TPOT stays bounded by max_num_seqs while requests wait)."""
    lim = dict(slo_limits)
    queue_aware = any(k.startswith(("ttft_", "e2e_")) for k in lim) or (
        goodput is not None and any(k in goodput["slo"] for k in ("ttft_ms", "e2e_ms")))
    if not queue_aware:
        lim["queue_p90_ms"] = MAX_QUEUE_MS
    return lim


def min_span_s(limits: dict) -> float:
    """Arrival span a run needs (module docstring): MIN_SPAN_FACTOR x the longest latency limit (s)."""
    lat = [v for k, v in limits.items() if k.startswith(("ttft_", "e2e_", "queue_"))]
    return MIN_SPAN_FACTOR * max(lat) / 1e3 if lat else 0.0


def find_capacity(combo, serving, source, slo_limits: dict, goodput: dict | None, rate_start: float,
                  tolerance: float, max_runs: int, seed: int, label: str = "") -> SearchResult:
    """The highest rate one replica of `combo` serves within the SLOs (module docstring). `source` is the
    plan's request source (a simulator.engine.config.SourceConfig)."""
    import time

    from simulator.engine.api import simulate
    from simulator.engine.config import ReplicaGroup

    t0 = time.perf_counter()
    cfg = replace(serving, groups=[ReplicaGroup(count=1, combo=combo, role="mixed", label=label)],
                  slo=dict(goodput["slo"]) if goodput else {}, seed=seed)
    limits = implicit_limits(slo_limits, goodput)
    replay = Replay(source, seed, min_span_s(limits))
    native = replay.native
    runs: list[Run] = []

    def run(x: float) -> Run:
        t = replay.at(x)
        res = simulate(cfg, t, seed=seed, record_steps=False)
        s = {k: res.summary.get(k) for k in SUMMARY_KEYS}
        m = margin(res.summary, limits, goodput)
        span = _span(t)
        r = Run(scale=x, rate=(len(t) - 1) / span if span > 0 else x * native, passed=m < 0, margin=m, summary=s)
        runs.append(r)
        return r

    x0 = max(rate_start / native, 1e-9) if rate_start > 0 else 1.0
    # a trickle first: a candidate that misses the SLO with (almost) no queueing misses it at any rate
    probe = run(x0 / PROBE_FACTOR)
    if not probe.passed:
        return SearchResult(status="slo", runs=runs, wall_s=time.perf_counter() - t0,
                            reason=(f"misses the SLO even at a trickle of {probe.rate:.3g} req/s per replica "
                                    f"({_worst(probe.summary, limits, goodput)})"))
    lo, hi = probe, None
    if len(runs) < max_runs:
        first = run(x0)
        if first.passed:
            lo = first
            while lo.scale < x0 * 2.0 ** MAX_DOUBLINGS and len(runs) < max_runs:
                r = run(lo.scale * 2.0)
                if r.passed:
                    lo = r
                else:
                    hi = r
                    break
        else:
            hi = first
    if hi is None:
        return SearchResult(status="ok", capacity=lo.rate, at_least=True, runs=runs, wall_s=time.perf_counter() - t0,
                            reason=f"passes at every rate tried, up to {lo.rate:.3g} req/s (a floor)")
    while hi.scale / lo.scale - 1.0 > tolerance and len(runs) < max_runs:
        t = 0.5
        if np.isfinite(hi.margin) and np.isfinite(lo.margin) and hi.margin > lo.margin:
            t = min(0.75, max(0.25, -lo.margin / (hi.margin - lo.margin)))
        r = run(lo.scale * (hi.scale / lo.scale) ** t)
        if r.passed:
            lo = r
        else:
            hi = r
    return SearchResult(status="ok", capacity=lo.rate, runs=runs, wall_s=time.perf_counter() - t0)


def _worst(s: dict, slo_limits: dict, goodput: dict | None) -> str:
    if s.get("rejected"):
        return f"{s['rejected']} requests rejected (their KV cache never fits)"
    parts = []
    for k, lim in slo_limits.items():
        v = s.get(k)
        if v is not None and (not np.isfinite(v) or v > lim):
            parts.append(f"{k} {v:,.0f} ms > {lim:g}")
    if goodput is not None and (s.get("slo_attainment") or 0) < goodput["min_attainment"]:
        parts.append(f"goodput {100 * (s.get('slo_attainment') or 0):.0f} % < {100 * goodput['min_attainment']:.0f} %")
    return "; ".join(parts) or "limits missed"
