"""A serving run's per-request results written as vLLM's benchmark result file (pure Python: no torch).

`vllm bench serve --save-result --save-detailed` writes one JSON object per run. The field names, units and
statistics below follow vLLM's own code, read at these commits (facts only, no code copied):

* ``vllm/benchmarks/serve.py`` (vllm-project/vllm @ 009e6d4a1cd6ba3fb2a9fc00f4ec06f5297232a1): ``calculate_metrics``
  (TPOT = (latency - ttft) / (output_len - 1) over requests with more than one output token; ITLs of all requests
  pooled; mean / median / std / percentiles in milliseconds via ``np.mean`` / ``np.median`` / ``np.std`` /
  ``np.percentile``; throughputs over ``duration``; ``max_output_tokens_per_s`` from one-second buckets of token
  times and ``max_concurrent_requests`` from a sweep over [start, start + latency) intervals), ``benchmark``'s
  ``result`` dict (``duration, completed, failed, total_input_tokens, total_output_tokens, request_throughput,
  request_goodput, output_throughput, total_token_throughput, input_lens, output_lens, ttfts, itls, latencies,
  start_times, queue_times, generated_texts, errors, max_output_tokens_per_s, max_concurrent_requests, rtfx`` and
  ``{mean,median,std}_{ttft,tpot,itl,e2el}_ms`` plus ``p{P}_{metric}_ms`` for each ``--metric-percentiles`` P,
  default "99"), and ``main``'s header fields (``date`` as ``%Y%m%d-%H%M%S``, ``endpoint_type``, ``backend``,
  ``label``, ``model_id``, ``tokenizer_id``, ``num_prompts``, ``request_rate`` (a number, or the string "inf"),
  ``burstiness``, ``max_concurrency`` (null without ``--max-concurrency``)).
* ``vllm/benchmarks/lib/endpoint_request_func.py`` (@ 02cfb534df5674737558730b10f23d1b7aef9b7c): per request
  ``start_time`` is ``time.perf_counter()`` when the request is sent (an arbitrary origin: only differences mean
  anything), ``ttft`` = first streamed token - start, ``itl`` = the gaps between later tokens, ``latency`` = last
  token - start; all in SECONDS. A request that failed has ``ttft`` 0, empty ``itl`` and a non-empty ``error``.

Here the "client" is the harness's driver thread in the same process as the engine: ``start_time`` is the
``perf_counter`` at ``add_request``, token times are the engine's own per-token ``perf_counter`` stamps (no HTTP,
no detokenization: the API-server path is absent from these runs, which the config JSON says).
"""
from __future__ import annotations

import datetime as dt
import math

import numpy as np

#: the percentiles written as p{P}_{metric}_ms (vLLM writes the ones --metric-percentiles names; this harness
#: always writes these three and says so in the file's "metric_percentiles" field)
PERCENTILES = (50.0, 90.0, 99.0)


def _pword(p: float) -> str:
    return str(int(p)) if int(p) == p else str(p)


def _stats(prefix: str, values: list[float], percentiles) -> dict:
    """vLLM's statistics of one metric in ms; an empty list gives vLLM's zeros (np.mean(values or 0))."""
    v = values or 0
    out = {f"mean_{prefix}_ms": float(np.mean(v)) * 1000, f"median_{prefix}_ms": float(np.median(v)) * 1000,
           f"std_{prefix}_ms": float(np.std(v)) * 1000}
    for p in percentiles:
        out[f"p{_pword(p)}_{prefix}_ms"] = float(np.percentile(v, p)) * 1000
    return out


def peak_output_and_concurrency(start, ttft, itls, latency) -> tuple[float, int]:
    """vLLM's max_output_tokens_per_s (most tokens in one one-second bucket from the earliest start) and
    max_concurrent_requests (sweep over half-open [start, start + latency) intervals, departures first)."""
    if not start:
        return 0.0, 0
    t0 = min(start)
    t1 = max(s + lat for s, lat in zip(start, latency))
    nb = int(math.ceil(t1 - t0)) + 1
    buckets = np.zeros(nb)
    for s, f, gaps in zip(start, ttft, itls):
        t = s + f
        times = [t]
        for g in gaps:
            t += g
            times.append(t)
        for x in times:
            b = int(x - t0)
            if 0 <= b < nb:
                buckets[b] += 1
    ev = sorted([(s, 1) for s in start] + [(s + lat, -1) for s, lat in zip(start, latency)])
    cur = peak = 0
    for _, d in ev:
        cur += d
        peak = max(peak, cur)
    return float(buckets.max()), int(peak)


def vllm_result(requests: list[dict], *, duration_s: float, request_rate: float | None, max_concurrency: int | None,
                label: str, model_id: str, backend: str = "hf-transformers-cb", percentiles=PERCENTILES,
                date: str | None = None, metadata: dict | None = None) -> dict:
    """One run as vLLM's result dict. ``requests``: dicts with ``start_time`` (s, perf_counter), ``input_len``,
    ``output_len`` (tokens generated), ``token_times`` (s, perf_counter, one per generated token; empty = failed)
    and optional ``error``. ``request_rate`` None = "inf" (closed loop / all at once)."""
    ok = [r for r in requests if r.get("token_times") and not r.get("error")]
    input_lens, output_lens, ttfts, itls, lats, starts, errors = [], [], [], [], [], [], []
    for r in requests:
        tt = list(r.get("token_times") or [])
        good = bool(tt) and not r.get("error")
        input_lens.append(int(r["input_len"]))
        output_lens.append(int(r["output_len"]) if good else 0)
        starts.append(float(r["start_time"]))
        if good:
            ttfts.append(tt[0] - r["start_time"])
            itls.append([b - a for a, b in zip(tt[:-1], tt[1:])])
            lats.append(tt[-1] - r["start_time"])
            errors.append("")
        else:
            ttfts.append(0.0)
            itls.append([])
            lats.append(0.0)
            errors.append(r.get("error") or "not finished before the run was cut")
    good_idx = [i for i, r in enumerate(requests) if r in ok]
    g_ttft = [ttfts[i] for i in good_idx]
    g_lat = [lats[i] for i in good_idx]
    g_itl = [x for i in good_idx for x in itls[i]]
    g_tpot = [(lats[i] - ttfts[i]) / (output_lens[i] - 1) for i in good_idx if output_lens[i] > 1]
    total_in = sum(input_lens[i] for i in good_idx)
    total_out = sum(output_lens)
    peak_tok, peak_conc = peak_output_and_concurrency([starts[i] for i in good_idx], g_ttft,
                                                      [itls[i] for i in good_idx], g_lat)
    res = {"date": date or dt.datetime.now().strftime("%Y%m%d-%H%M%S"), "endpoint_type": backend, "backend": backend,
           "label": label, "model_id": model_id, "tokenizer_id": None, "num_prompts": len(requests)}
    res.update(metadata or {})
    res.update({"request_rate": "inf" if request_rate is None else float(request_rate), "burstiness": 1.0,
                "max_concurrency": max_concurrency})
    res.update({"duration": float(duration_s), "completed": len(good_idx), "failed": len(requests) - len(good_idx),
                "total_input_tokens": total_in, "total_output_tokens": total_out,
                "request_throughput": len(good_idx) / duration_s, "request_goodput": None,
                "output_throughput": total_out / duration_s,
                "total_token_throughput": (total_in + total_out) / duration_s,
                "input_lens": input_lens, "output_lens": output_lens, "ttfts": ttfts, "itls": itls,
                "latencies": lats, "start_times": starts, "queue_times": [0.0] * len(requests),
                "generated_texts": [""] * len(requests), "errors": errors,
                "max_output_tokens_per_s": peak_tok, "max_concurrent_requests": peak_conc, "rtfx": 0.0})
    for name, vals in (("ttft", g_ttft), ("tpot", g_tpot), ("itl", g_itl), ("e2el", g_lat)):
        res.update(_stats(name, vals, percentiles))
    res["metric_percentiles"] = ",".join(_pword(p) for p in percentiles)
    return res
