"""vLLM's benchmark result file (`vllm bench serve --save-result --save-detailed`): read and write.

Fields (vllm-project/vllm `vllm/benchmarks/serve.py` @ 009e6d4a1cd6ba3fb2a9fc00f4ec06f5297232a1, `benchmark`'s result
dict and `main`'s header; facts only): per request, in the order the requests were sent, `input_lens`,
`output_lens`, `ttfts` (s), `itls` (s, the gaps between a request's later tokens), `latencies` (s, end to end; older
versions omit it, then it is ttft + sum(itls)), `start_times` (perf_counter s when sent; newer versions only),
`errors` (empty string = finished); per run `request_rate` (a number or "inf"), `burstiness`, `max_concurrency`
(null without --max-concurrency), `duration`, and the summary `{mean,median,std,p99}_{ttft,tpot,itl,e2el}_ms`.
A file written without --save-detailed has no per-request lists: it cannot be replayed and is refused.
"""
from __future__ import annotations

import json
import math

import numpy as np

from simulator.benchmark_results import (
    BenchmarkFileError,
    BenchmarkRun,
    concurrency_value,
    need,
    num_list,
    rate_value,
)

SUMMARY_PREFIXES = ("mean_", "median_", "std_", "p")


def read(file: str, text: str, run_index: int = -1) -> BenchmarkRun:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise BenchmarkFileError(f"is not valid JSON (line {e.lineno}: {e.msg}; truncated?)", file=file) from None
    if not isinstance(doc, dict):
        raise BenchmarkFileError(f"must be one JSON object (vLLM --save-result), got a {type(doc).__name__}", file=file)
    return from_dict(doc, file, "vllm")


def from_dict(doc: dict, file: str, fmt: str) -> BenchmarkRun:
    """A BenchmarkRun from a vLLM-shaped result dict (SGLang's per-request lists use the same names)."""
    if "input_lens" not in doc and ("mean_ttft_ms" in doc or "duration" in doc):
        raise BenchmarkFileError("has only summary numbers, no per-request lists: rerun the benchmark with "
                                 "--save-detailed (vLLM) or --output-details (SGLang) so the workload can be replayed",
                                 file=file, field="input_lens")
    inp = num_list(need(doc, "input_lens", file, "per-request prompt lengths"), file, "input_lens")
    out = num_list(need(doc, "output_lens", file, "per-request output lengths"), file, "output_lens")
    ttft = num_list(need(doc, "ttfts", file, "per-request time to first token, s"), file, "ttfts", allow_none=True)
    errors = doc.get("errors")
    if errors is None:
        ok = np.ones(len(inp), dtype=bool)
    else:
        if not isinstance(errors, list):
            raise BenchmarkFileError("must be a list of strings (empty = the request finished)", file=file,
                                     field="errors")
        ok = np.asarray([not e for e in errors], dtype=bool)
    itls = None
    if "itls" in doc:
        raw = doc["itls"]
        if not isinstance(raw, list):
            raise BenchmarkFileError("must be a list of lists of seconds", file=file, field="itls")
        itls = [num_list(g, file, f"itls[{i}]") for i, g in enumerate(raw)]
    if "latencies" in doc:
        e2e = num_list(doc["latencies"], file, "latencies", allow_none=True)
    elif itls is not None and len(itls) == len(ttft):
        e2e = ttft + np.asarray([g.sum() for g in itls])
    else:
        raise BenchmarkFileError("is missing (per-request end-to-end latency, s), and there are no itls to rebuild "
                                 "it from", file=file, field="latencies")
    start = None
    if doc.get("start_times") is not None:
        s = num_list(doc["start_times"], file, "start_times")
        start = s - (s.min() if len(s) else 0.0)
    dur = doc.get("duration")
    if dur is not None and (isinstance(dur, bool) or not isinstance(dur, (int, float)) or not math.isfinite(dur)
                            or dur <= 0):
        raise BenchmarkFileError(f"must be a positive number of seconds, got {dur!r}", file=file, field="duration")
    burst = doc.get("burstiness", 1.0)
    if burst is None:
        burst = 1.0
    if isinstance(burst, bool) or not isinstance(burst, (int, float)) or not (math.isfinite(burst) and burst > 0):
        raise BenchmarkFileError(f"must be a positive number, got {burst!r}", file=file, field="burstiness")
    reported = {k: v for k, v in doc.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
                and k.endswith("_ms")}
    for k in ("request_throughput", "output_throughput", "total_token_throughput", "request_goodput", "duration"):
        if isinstance(doc.get(k), (int, float)):
            reported[k] = doc[k]
    return BenchmarkRun(file=file, format=fmt, input_tokens=inp, output_tokens=out, ttft_s=ttft, e2e_s=e2e, ok=ok,
                        start_s=start, itl_s=itls, request_rate=rate_value(doc.get("request_rate"), file),
                        burstiness=float(burst), max_concurrency=concurrency_value(doc.get("max_concurrency"), file),
                        duration_s=None if dur is None else float(dur), label=str(doc.get("label") or ""),
                        model_id=str(doc.get("model_id") or doc.get("model") or ""),
                        backend=str(doc.get("backend") or ""), reported=reported)


def write_result(requests, *, request_rate: float | None, max_concurrency: int | None, label: str = "",
                 model_id: str = "", backend: str = "sparsesim") -> dict:
    """A simulation's per-request table (simulator.engine.results.request_table) as a vLLM result dict, the
    per-request lists only (what `sparsesim compare` replays): start_times = arrival, ttfts, latencies, and itls as
    the request's TPOT repeated (the engine pools ITLs over requests; per-request gaps are not kept), so mean ITL
    and TPOT are exact and ITL percentiles are not."""
    df = requests
    done = ~df["rejected"].to_numpy(bool) & np.isfinite(df["e2e_s"].to_numpy(float))
    out_tok = df["output_tokens"].to_numpy(int)
    ttft, e2e = df["ttft_s"].to_numpy(float), df["e2e_s"].to_numpy(float)
    itls = []
    for i in range(len(df)):
        k = int(out_tok[i]) - 1
        itls.append([float((e2e[i] - ttft[i]) / k)] * k if done[i] and k > 0 else [])
    arrival = df["arrival_s"].to_numpy(float)
    dur = float(np.nanmax(np.where(done, arrival + e2e, np.nan)) - arrival.min())
    return {"backend": backend, "label": label, "model_id": model_id, "num_prompts": int(len(df)),
            "request_rate": "inf" if request_rate is None else float(request_rate), "burstiness": 1.0,
            "max_concurrency": max_concurrency, "duration": dur, "completed": int(done.sum()),
            "failed": int((~done).sum()), "input_lens": df["input_tokens"].astype(int).tolist(),
            "output_lens": [int(o) if d else 0 for o, d in zip(out_tok, done)],
            "ttfts": [float(t) if d else 0.0 for t, d in zip(ttft, done)], "itls": itls,
            "latencies": [float(t) if d else 0.0 for t, d in zip(e2e, done)],
            "start_times": arrival.tolist(), "errors": ["" if d else "rejected" for d in done]}
