"""The arrivals the harness replays (pure Python + numpy; uses the simulator's request-trace readers and
generators, so the simulator can rebuild exactly the same requests from the parameters in the config JSON).

* ``poisson_<rate>``: ``simulator.traces.requests.poisson`` at ``rate`` requests/s for ``duration_s`` seconds
  (``round(rate * duration_s)`` requests), prompt and output lengths drawn independently from the shipped Azure
  LLM-inference 2023 conversation trace (``LengthDist('empirical')`` over its ContextTokens / GeneratedTokens
  columns), one seeded generator per level (seed + level index).
* ``azure``: a window of the shipped ``azure_conv`` trace (its own arrivals and lengths), arrivals compressed by
  ``rate_scale`` (``RequestTrace.scaled(rate_scale=...)``) so the slice loads one GPU; the window is chosen in
  the original trace's time and then rescaled.

Prompts longer than ``max_model_len - output`` are cut to fit (counted in the workload's meta).
"""
from __future__ import annotations

import numpy as np
from driver import Workload


def _lengths():
    from simulator.traces.requests import LengthDist, load_requests

    t = load_requests("azure_conv")
    return (LengthDist("empirical", samples=t.input_tokens.astype(np.float64)),
            LengthDist("empirical", samples=t.output_tokens.astype(np.float64)))


def _fit(inp, out, max_model_len):
    out = np.minimum(out, max_model_len // 2)
    cut = inp + out > max_model_len
    inp = np.where(cut, max_model_len - out, inp)
    return inp, out, int(cut.sum())


def poisson_level(rate: float, duration_s: float, seed: int, max_model_len: int, scale_lengths: float = 1.0
                  ) -> Workload:
    from simulator.traces.requests import poisson

    li, lo = _lengths()
    n = max(1, int(round(rate * duration_s)))
    t = poisson(rate, n, li, lo, np.random.default_rng(seed), name=f"poisson_{rate:g}")
    inp = np.maximum(1, np.round(t.input_tokens * scale_lengths)).astype(np.int64)
    out = np.maximum(2, np.round(t.output_tokens * scale_lengths)).astype(np.int64)
    inp, out, cut = _fit(inp, out, max_model_len)
    return Workload(f"poisson_{rate:g}", t.arrival_s.copy(), inp, out,
                    meta={"kind": "poisson", "rate_per_s": rate, "duration_s": duration_s, "seed": seed, "n": n,
                          "lengths": "empirical azure_conv input/output (independent draws)",
                          "scale_lengths": scale_lengths, "prompts_cut": cut, "max_model_len": max_model_len})


def azure_slice(start_s: float, window_s: float, rate_scale: float, max_model_len: int, scale_lengths: float = 1.0
                ) -> Workload:
    from simulator.traces.requests import load_requests

    t = load_requests("azure_conv").window(start_s, start_s + window_s).scaled(rate_scale=rate_scale)
    inp = np.maximum(1, np.round(t.input_tokens * scale_lengths)).astype(np.int64)
    out = np.maximum(2, np.round(t.output_tokens * scale_lengths)).astype(np.int64)
    inp, out, cut = _fit(inp, out, max_model_len)
    return Workload("azure", t.arrival_s.copy(), inp, out,
                    meta={"kind": "azure_conv", "window_start_s": start_s, "window_s": window_s,
                          "rate_scale": rate_scale, "n": len(t), "scale_lengths": scale_lengths,
                          "prompts_cut": cut, "max_model_len": max_model_len,
                          "mean_rate_per_s": len(t) / (window_s / rate_scale)})


def closed_loop_level(concurrency: int, count: int, duration_s: float, seed: int, max_model_len: int,
                      scale_lengths: float = 1.0) -> Workload:
    """`count` requests for a closed loop of `concurrency` in flight (``simulator.traces.requests.closed_loop``:
    lengths drawn in order from the same Azure conversation distributions as the Poisson levels); the driver
    submits the next one when one finishes and cuts the level at duration_s + drain."""
    from simulator.traces.requests import closed_loop

    li, lo = _lengths()
    t = closed_loop(concurrency, count, li, lo, np.random.default_rng(seed), name=f"closed_{concurrency}")
    inp = np.maximum(1, np.round(t.input_tokens * scale_lengths)).astype(np.int64)
    out = np.maximum(2, np.round(t.output_tokens * scale_lengths)).astype(np.int64)
    inp, out, cut = _fit(inp, out, max_model_len)
    return Workload(f"closed_{concurrency}", np.zeros(count), inp, out, concurrency=int(concurrency),
                    meta={"kind": "closed_loop", "concurrency": int(concurrency), "count": int(count),
                          "duration_s": duration_s, "seed": seed, "n": int(count),
                          "lengths": "empirical azure_conv input/output (independent draws, in order)",
                          "scale_lengths": scale_lengths, "prompts_cut": cut, "max_model_len": max_model_len})


def build(rates: list[float], duration_s: float, seed: int, azure: tuple | None, max_model_len: int,
          scale_lengths: float = 1.0) -> list[Workload]:
    wls = [poisson_level(r, duration_s, seed + i, max_model_len, scale_lengths) for i, r in enumerate(rates)]
    if azure is not None:
        wls.append(azure_slice(azure[0], azure[1], azure[2], max_model_len, scale_lengths))
    return wls
