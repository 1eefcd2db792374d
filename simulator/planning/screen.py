"""The analytic screen of a plan candidate: does one replica fit in memory, can it meet the SLO at all, and
how many requests per second could it serve at best — from the Op-table pricer, in milliseconds, before any
engine run.

Workload statistics come from the replayed requests: context of a request = input + output tokens (the KV
length at its end); the decode context of a request averages input + output / 2.

  memory    one GPU of the replica holds 1/tp of the weights, the activation workspace and KV caches
            (simulator.memory): `max_batch` at the mean context must be >= 1, else the candidate is pruned
            ("memory"). When the weights and workspace alone exceed the usable memory the reason says so.
  SLO       a p-th percentile TPOT limit can never be met when even a lone sequence (batch 1, no
            interference) decodes slower than the limit at the decode KV length that (100 - p) % of the
            requests reach: those requests all have a TPOT at least that large (step time grows with the KV
            length), so the p-th percentile does too. Same for a TTFT limit with the prefill of the p-th
            percentile prompt, but only when no prefix cache can shorten prefills (no prefix hashes in the
            trace, or prefix caching off).
  bound     an optimistic request rate: 1 / max(prefill compute, decode time) per request, where decode time =
            mean output tokens / the best decode throughput of one replica over every batch that fits (powers
            of two up to the largest, at the 10th-percentile context: short contexts decode fastest) and
            prefill compute = the compute time (roofline FLOP rate, no memory or launch time) of the mean
            uncached prompt's prefill (FLOPs are convex in the prompt length, and batching prefills shares
            weight reads, never FLOPs). Decode rows ride along in prefill steps, hence the max, not the sum.
            It bounds the cost a candidate can reach (branch and bound: simulator.planning.study).
  first     the engine search starts from a realistic guess instead: one request's prefill (batch 1, mean
  guess     prompt) plus its share of the decode steps at the batch that decodes fastest within the TPOT
            limit, as if nothing overlapped: 1 / (TTFT + mean output / tokens per s) requests/s.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hwmodels.roofline import price
from simulator import memory
from simulator.pricing import prefill_ops, price_combo

GIB = 2.0 ** 30


@dataclass
class Workload:
    """Statistics of the requests a plan replays (one engine run = these requests, rate-scaled)."""

    requests: int
    native_rate: float        # requests/s of the replayed requests as recorded (count / arrival span)
    mean_input: float
    mean_output: float
    input_pct: dict           # {10: ..., 50: ..., 90: ..., 99: ...} input tokens
    context_pct: dict         # percentiles of input + output tokens
    decode_context_pct: dict  # percentiles of input + output / 2 (mean KV length while decoding)
    prefix_hashes: bool
    uncached_input_pct: dict = None   # percentiles of the prompt tokens a perfect prefix cache cannot serve
    mean_uncached_input: float = 0.0

    @classmethod
    def of(cls, trace) -> "Workload":
        inp = np.asarray(trace.input_tokens, dtype=np.float64)
        out = np.asarray(trace.output_tokens, dtype=np.float64)
        n = len(inp)
        span = float(trace.arrival_s[-1] - trace.arrival_s[0]) if n > 1 else 0.0
        pct = (1, 10, 50, 90, 99)
        q = lambda a: {p: float(np.percentile(a, p)) for p in pct}  # noqa: E731
        return cls(requests=n, native_rate=(n - 1) / span if span > 0 else float("inf"),
                   mean_input=float(inp.mean()), mean_output=float(out.mean()), input_pct=q(inp),
                   context_pct=q(inp + out), decode_context_pct=q(inp + out / 2.0),
                   prefix_hashes=bool(trace.has_prefix_hashes), uncached_input_pct=q(unc := uncached_tokens(trace)),
                   mean_uncached_input=float(unc.mean()))


def uncached_tokens(trace) -> np.ndarray:
    """Per request: prompt tokens that even a perfect, unbounded prefix cache shared by every earlier request
    cannot serve (the leading prompt blocks whose hash no earlier request carried are computed; at least one
    token always is). Without prefix hashes: the whole prompt."""
    inp = np.asarray(trace.input_tokens, dtype=np.float64)
    if not trace.has_prefix_hashes or not trace.block_tokens:
        return inp
    seen: set = set()
    out = np.empty(len(inp))
    for i in range(len(inp)):
        h = trace.prefix_hashes(i).tolist()
        k = 0
        while k < len(h) and h[k] in seen:
            k += 1
        out[i] = max(1.0, inp[i] - k * trace.block_tokens)
        seen.update(h)
    return out


@dataclass
class Screen:
    """What the analytic screen found for one candidate."""

    ok: bool
    status: str = "ok"                 # ok | memory | slo
    reason: str = ""
    max_batch: int = 0                 # at the mean context
    tpot_b1_ms: float = float("nan")   # batch 1 at the mean decode context
    ttft_b1_ms: float = float("nan")   # prefill of the mean prompt
    best_tokens_per_s: float = 0.0     # optimistic decode throughput of one replica (module docstring)
    rate_ub: float = 0.0               # optimistic requests/s of one replica
    prefill_compute_s: float = 0.0     # compute time of the mean (uncached) prompt's prefill
    rate_est: float = 0.0              # first guess of the engine search: prefill + decode share, serialized
    notes: list = field(default_factory=list)


def _percentile_of(key: str) -> int:
    return int(key.split("_p")[1].split("_")[0])


def screen(combo, wl: Workload, slo_limits: dict, prefix_caching: bool = True) -> Screen:
    """The analytic screen of one candidate (module docstring)."""
    hw = combo.hardware
    mean_ctx = np.array([min(wl.mean_input + wl.mean_output, combo.model.max_context)])
    usable = hw.hbm_capacity_bytes * memory.MEMORY_UTILIZATION
    fixed = memory.weight_bytes(combo) + memory.workspace_bytes(combo)
    mb = int(memory.max_batch(combo, combo.kv_policy.cached_tokens(combo, combo.attention.cached_tokens(combo,
                                                                                                  mean_ctx)))[0])
    s = Screen(ok=True, max_batch=mb)
    if fixed >= usable:
        return Screen(ok=False, status="memory", max_batch=0, reason=(
            f"weights {memory.weight_bytes(combo) / GIB:.0f} GiB + workspace {memory.workspace_bytes(combo) / GIB:.1f} "
            f"GiB per GPU exceed the usable {usable / GIB:.0f} GiB of a {hw.name} "
            f"({memory.MEMORY_UTILIZATION:.0%} of {hw.hbm_capacity_bytes / GIB:.0f} GiB) at TP{combo.tp}"))
    if mb < 1:
        return Screen(ok=False, status="memory", max_batch=0, reason=(
            f"after weights and workspace ({fixed / GIB:.0f} GiB per GPU) no sequence of the mean context "
            f"{mean_ctx[0]:,.0f} tokens fits in the {usable / GIB:.0f} GiB usable on a {hw.name} at TP{combo.tp}"))

    out = float(max(1.0, round(wl.mean_output)))
    limit_ctx = combo.model.max_context

    def at_kv(d: float) -> float:
        """The `context` argument of the pricer whose mean decode KV length is d (pricing.py definitions)."""
        return float(min(max(d + (out + 1.0) / 2.0, out + 1.0), limit_ctx))

    # batch 1 at the mean decode context, and at the decode context that (100 - p) % of the requests reach
    tpot_keys = [k for k in slo_limits if k.startswith("tpot_")]
    ctx = np.array([at_kv(wl.mean_input + wl.mean_output / 2.0)]
                   + [at_kv(wl.decode_context_pct[_percentile_of(k)]) for k in tpot_keys])
    cols, _ = price_combo(combo, np.ones(len(ctx)), ctx, np.full(len(ctx), out))
    s.tpot_b1_ms = float(cols["tpot_ms"][0])
    s.ttft_b1_ms = float(cols["ttft_ms"][0])
    for i, k in enumerate(tpot_keys, start=1):
        lb = float(cols["tpot_ms"][i])
        if lb > slo_limits[k]:
            return Screen(ok=False, status="slo", max_batch=mb, tpot_b1_ms=s.tpot_b1_ms, ttft_b1_ms=s.ttft_b1_ms,
                          reason=(f"even a lone sequence decodes at {lb:.1f} ms per token (analytic, batch 1) at the "
                                  f"{ctx[i] - (out + 1) / 2:,.0f}-token KV length that {100 - _percentile_of(k)} % of "
                                  f"the requests exceed: above the {k} limit {slo_limits[k]:g} ms"))
    cached = wl.prefix_hashes and prefix_caching
    pcts = wl.uncached_input_pct if cached else wl.input_pct
    for k in [k for k in slo_limits if k.startswith("ttft_")]:
        prompt = max(1.0, pcts[_percentile_of(k)])
        c2, _ = price_combo(combo, [1.0], [min(prompt + out, limit_ctx)], [out])
        if c2["ttft_ms"][0] > slo_limits[k]:
            what = "prompt tokens no prefix cache can serve" if cached else "prompt tokens"
            return Screen(ok=False, status="slo", max_batch=mb, tpot_b1_ms=s.tpot_b1_ms, ttft_b1_ms=s.ttft_b1_ms,
                          reason=(f"prefilling {prompt:,.0f} {what} ({100 - _percentile_of(k)} % of the requests have "
                                  f"more) alone takes {c2['ttft_ms'][0]:,.0f} ms (analytic, batch 1) > the {k} limit "
                                  f"{slo_limits[k]:g} ms"))

    # optimistic throughput: every batch that fits, short (10th-percentile) contexts, prefill free
    c10 = np.array([max(min(wl.context_pct[10], combo.model.max_context), out + 1.0)])
    mb10 = int(memory.max_batch(combo, combo.kv_policy.cached_tokens(combo, combo.attention.cached_tokens(combo,
                                                                                                   c10)))[0])
    mb10 = max(1, min(mb10, 4096))
    b = np.unique(np.minimum(2.0 ** np.arange(0, int(np.log2(mb10)) + 2), mb10))
    cols, _ = price_combo(combo, b, np.full(len(b), c10[0]), np.full(len(b), out))
    s.best_tokens_per_s = float(np.max(cols["tokens_per_s"]))
    # ... and the compute a request's prefill needs at the least: the FLOPs of the mean uncached prompt (convex
    # in the prompt, so the mean prompt's FLOPs bound the mean request's) at the roofline's compute rate;
    # batching prefills shares weight reads, never FLOPs. Decode rows ride along in prefill steps, so a
    # replica is busy at least max(prefill compute, decode time) per request.
    prompt = max(1.0, (wl.mean_uncached_input if cached else wl.mean_input))
    pops = prefill_ops(combo, np.array([min(prompt, limit_ctx)]))
    s.prefill_compute_s = float(np.sum(price(pops, combo.hardware, "eager", detail=True).compute_s))
    s.rate_ub = 1.0 / max(s.prefill_compute_s, max(wl.mean_output, 1.0) / s.best_tokens_per_s)

    # a realistic first guess for the engine search: one request's prefill (batch 1, the mean prompt) and its
    # share of decode steps at the batch that decodes fastest within the TPOT limit, done one after the other
    cm = np.array([at_kv(wl.mean_input + wl.mean_output / 2.0)])
    bm = np.unique(np.minimum(2.0 ** np.arange(0, int(np.log2(max(mb, 1))) + 2), max(mb, 1)))
    cols, _ = price_combo(combo, bm, np.full(len(bm), cm[0]), np.full(len(bm), out))
    ok = np.ones(len(bm), dtype=bool)
    for k in tpot_keys:
        ok &= cols["tpot_ms"] <= slo_limits[k]
    i = int(np.argmax(np.where(ok, cols["tokens_per_s"], -1.0))) if ok.any() else 0
    per_request_s = s.ttft_b1_ms / 1e3 + wl.mean_output / cols["tokens_per_s"][i]
    s.rate_est = 1.0 / per_request_s
    return s
