"""SGLang's benchmark result file (`python -m sglang.bench_serving --output-file X.jsonl --output-details`).

bench_serving appends one JSON object per run to the file (sgl-project/sglang `python/sglang/bench_serving.py`,
`benchmark`'s result dict; facts only): run fields `backend`, `request_rate` (a number or inf), `max_concurrency`,
`duration`, summary `{mean,median,std,p99}_{ttft,tpot,itl}_ms` and `{mean,median,std,p99}_e2e_latency_ms`, and with
--output-details the per-request lists `input_lens`, `output_lens`, `ttfts`, `itls`, `generated_texts`, `errors`
(vLLM's names and units). It writes no start times and no per-request end-to-end latency: E2E is rebuilt as TTFT +
the sum of the request's ITLs, and arrivals come from the request rate. The last line is read unless `run_index`
(0-based; negative counts from the end) names another run.
"""
from __future__ import annotations

import json

from simulator.benchmark_results import BenchmarkFileError, BenchmarkRun
from simulator.benchmark_results.vllm_json import from_dict


def read(file: str, text: str, run_index: int = -1) -> BenchmarkRun:
    lines = [(i, ln) for i, ln in enumerate(text.splitlines(), 1) if ln.strip()]
    if not lines:
        raise BenchmarkFileError("is empty", file=file)
    docs = []
    for no, ln in lines:
        try:
            d = json.loads(ln)
        except json.JSONDecodeError as e:
            raise BenchmarkFileError(f"line {no} is not valid JSON ({e.msg}; truncated?)", file=file) from None
        if not isinstance(d, dict):
            raise BenchmarkFileError(f"line {no} must be a JSON object (one bench_serving run)", file=file)
        docs.append(d)
    if not -len(docs) <= run_index < len(docs):
        raise BenchmarkFileError(f"holds {len(docs)} run(s); --run {run_index} is out of range", file=file)
    doc = dict(docs[run_index])
    return from_dict(doc, file, "sglang")
