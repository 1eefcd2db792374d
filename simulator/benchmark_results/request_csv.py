"""A plain per-request CSV: one row per request, in submission order.

    input_tokens,output_tokens,start_s,ttft_s,e2e_s
    2048,256,0.000,0.212,7.94

Columns (a time column may end in _s or _ms; one of each pair is needed unless marked optional):
    input_tokens, output_tokens     prompt and generated tokens (positive integers)
    ttft_s | ttft_ms                time to first token
    e2e_s | e2e_ms                  first byte sent to last token received (also accepted: latency_s / latency_ms)
    start_s | start_ms              optional: when the request was sent (any origin); without it the arrivals come
                                    from --request-rate or --max-concurrency
    error                           optional: non-empty = the request failed (not compared)
Other columns are ignored.
"""
from __future__ import annotations

import csv
import io
import math

import numpy as np

from simulator.benchmark_results import BenchmarkFileError, BenchmarkRun

MAX_ROWS = 10_000_000


def _col(rows: list[dict], names: list[str], file: str, required: bool = True):
    """(values in seconds or counts, the column used) for the first of `names` present."""
    header = rows[0].keys()
    for n in names:
        if n in header:
            scale = 1e-3 if n.endswith("_ms") else 1.0
            out = np.empty(len(rows))
            for i, r in enumerate(rows):
                v = (r.get(n) or "").strip()
                try:
                    out[i] = float(v) * scale if v else math.nan
                except ValueError:
                    raise BenchmarkFileError(f"row {i + 2}: {v[:40]!r} is not a number", file=file, field=n) from None
            return out, n
    if required:
        raise BenchmarkFileError(f"no column {' or '.join(names)}; a request CSV needs input_tokens, output_tokens, "
                                 "ttft_s (or _ms) and e2e_s (or _ms)", file=file, field=names[0])
    return None, None


def read(file: str, text: str, run_index: int = -1) -> BenchmarkRun:
    try:
        rows = list(csv.DictReader(io.StringIO(text)))
    except csv.Error as e:
        raise BenchmarkFileError(f"is not a CSV table ({e})", file=file) from None
    if not rows:
        raise BenchmarkFileError("holds no rows (a header and one row per request are needed)", file=file)
    if len(rows) > MAX_ROWS:
        raise BenchmarkFileError(f"holds {len(rows):,} rows; at most {MAX_ROWS:,}", file=file)
    if None in rows[0] or any(None in r for r in rows):
        i = next(i for i, r in enumerate(rows) if None in r)
        raise BenchmarkFileError(f"row {i + 2} has more cells than the header", file=file)
    inp, _ = _col(rows, ["input_tokens", "input_len"], file)
    out, _ = _col(rows, ["output_tokens", "output_len"], file)
    ttft, _ = _col(rows, ["ttft_s", "ttft_ms"], file)
    e2e, _ = _col(rows, ["e2e_s", "e2e_ms", "latency_s", "latency_ms"], file)
    start, _ = _col(rows, ["start_s", "start_ms"], file, required=False)
    if start is not None:
        start = start - np.nanmin(start)
    ok = np.ones(len(rows), dtype=bool)
    if "error" in rows[0]:
        ok = np.asarray([not (r.get("error") or "").strip() for r in rows])
    for v, n in ((inp, "input_tokens"), (out, "output_tokens")):
        bad = ~np.isfinite(v)
        if bad.any():
            raise BenchmarkFileError(f"row {int(np.argmax(bad)) + 2}: is empty", file=file, field=n)
    return BenchmarkRun(file=file, format="csv", input_tokens=inp, output_tokens=out, ttft_s=ttft, e2e_s=e2e, ok=ok,
                        start_s=start)
