"""Serving-benchmark result files read into one shape (`BenchmarkRun`), for `sparsesim compare`.

    from simulator.benchmark_results import read_result
    run = read_result("vllm_result.json")             # format detected from the content
    run = read_result("out.jsonl", fmt="sglang")      # or named: vllm | sglang | csv

One small module per format, each registering a reader in READERS:

    vllm_json     `vllm bench serve --save-result [--save-detailed]` JSON (one object per file)
    sglang_jsonl  `python -m sglang.bench_serving --output-file X.jsonl [--output-details]` (one object per line,
                  appended per run; the last line is read unless `run_index` names another)
    request_csv   a plain per-request CSV (columns in seconds or milliseconds by suffix; see that module)

Every reader returns a BenchmarkRun checked by `BenchmarkRun.check()`: list lengths agree, latencies of the
requests that finished are finite and non-negative, lengths are positive integers. A file that is truncated, of
another kind, or breaks any of these raises BenchmarkFileError naming the file and the field (one line, exit 2).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hwmodels.errors import SparsesimError

#: most bytes of a result file read (a --save-detailed run of 100,000 requests with their ITLs is ~100 MB)
MAX_RESULT_BYTES = 512 * 2**20


class BenchmarkFileError(SparsesimError):
    """A serving-benchmark result file is unreadable, of another kind, or inconsistent."""


@dataclass
class BenchmarkRun:
    """One measured serving run, per request in submission order (times in seconds).

    ok[i] is False for a request the benchmark reports as failed (its latencies are not compared). start_s is the
    submission time relative to the first request (None when the file has none); itl_s the gaps between a request's
    later tokens (None when the file has none). request_rate is the client's target rate (inf = all at once or a
    closed loop); max_concurrency the client's cap on requests in flight (None = no cap)."""

    file: str
    format: str
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    ttft_s: np.ndarray
    e2e_s: np.ndarray
    ok: np.ndarray
    start_s: np.ndarray | None = None
    itl_s: list | None = None
    request_rate: float = math.inf
    burstiness: float = 1.0
    max_concurrency: int | None = None
    duration_s: float | None = None
    label: str = ""
    model_id: str = ""
    backend: str = ""
    reported: dict = field(default_factory=dict)   # the file's own summary numbers, as written

    def __len__(self) -> int:
        return len(self.input_tokens)

    def check(self) -> "BenchmarkRun":
        """Refuse inconsistent content (BenchmarkFileError naming the file and field)."""
        n = len(self.input_tokens)
        if n == 0:
            raise BenchmarkFileError("holds no requests", file=self.file, field="input_lens")
        names = {"output_tokens": "output_lens", "ttft_s": "ttfts", "e2e_s": "latencies", "ok": "errors",
                 "start_s": "start_times"}
        for attr, fld in names.items():
            v = getattr(self, attr)
            if v is not None and len(v) != n:
                raise BenchmarkFileError(f"has {len(v)} entries, input_lens has {n}: the lists must line up",
                                         file=self.file, field=fld)
        if self.itl_s is not None and len(self.itl_s) != n:
            raise BenchmarkFileError(f"has {len(self.itl_s)} entries, input_lens has {n}: the lists must line up",
                                     file=self.file, field="itls")
        for attr, fld in (("input_tokens", "input_lens"), ("output_tokens", "output_lens")):
            v = np.asarray(getattr(self, attr), dtype=np.float64)
            bad = ~np.isfinite(v) | (v < 0) | (v != np.round(v)) | (v > 10_000_000)
            if attr == "input_tokens":
                bad |= v < 1
            else:
                bad |= self.ok & (v < 1)
            if bad.any():
                i = int(np.argmax(bad))
                raise BenchmarkFileError(f"request {i}: {v[i]!r} is not a token count (a positive integer up to "
                                         "10,000,000)", file=self.file, field=fld)
        ok = self.ok
        if not ok.any():
            raise BenchmarkFileError("every request failed (errors are non-empty): nothing to compare", file=self.file,
                                     field="errors")
        for attr, fld in (("ttft_s", "ttfts"), ("e2e_s", "latencies")):
            v = getattr(self, attr)
            bad = ok & ~(np.isfinite(v) & (v >= 0))
            if bad.any():
                i = int(np.argmax(bad))
                raise BenchmarkFileError(f"request {i}: {v[i]!r} is not a latency (a finite number of seconds >= 0)",
                                         file=self.file, field=fld)
        bad = ok & (self.e2e_s < self.ttft_s - 1e-9)
        if bad.any():
            i = int(np.argmax(bad))
            raise BenchmarkFileError(f"request {i}: end-to-end latency {self.e2e_s[i]:g} s is below its TTFT "
                                     f"{self.ttft_s[i]:g} s", file=self.file, field="latencies")
        if self.start_s is not None:
            v = self.start_s
            bad = ~np.isfinite(v)
            if bad.any():
                raise BenchmarkFileError(f"request {int(np.argmax(bad))}: not a finite time", file=self.file,
                                         field="start_times")
        if self.itl_s is not None:
            for i, g in enumerate(self.itl_s):
                if not ok[i]:
                    continue
                if len(g) and not (np.isfinite(g).all() and (g >= 0).all()):
                    raise BenchmarkFileError(f"request {i}: holds a gap that is not a finite number of seconds >= 0",
                                             file=self.file, field="itls")
        if not (isinstance(self.request_rate, (int, float)) and self.request_rate > 0):
            raise BenchmarkFileError(f"must be a positive number or \"inf\", got {self.request_rate!r}", file=self.file,
                                     field="request_rate")
        if self.max_concurrency is not None and not (isinstance(self.max_concurrency, int) and self.max_concurrency >= 1):
            raise BenchmarkFileError(f"must be a positive integer or null, got {self.max_concurrency!r}", file=self.file,
                                     field="max_concurrency")
        return self

    def in_send_order(self) -> "BenchmarkRun":
        """The run with its requests sorted by start time (stable; unchanged without start times). vLLM lists the
        requests in the order they were created, which its asynchronous client may send slightly out of order."""
        if self.start_s is None:
            return self
        order = np.argsort(self.start_s, kind="stable")
        if np.array_equal(order, np.arange(len(order))):
            return self
        out = self.subset(order)
        out.duration_s = self.duration_s
        return out

    def subset(self, idx: np.ndarray) -> "BenchmarkRun":
        """The requests at positions idx (in order), e.g. one half of the run."""
        from dataclasses import replace

        idx = np.asarray(idx, dtype=np.int64)
        start = None
        if self.start_s is not None:
            start = self.start_s[idx] - (self.start_s[idx].min() if len(idx) else 0.0)
        return replace(self, input_tokens=self.input_tokens[idx], output_tokens=self.output_tokens[idx],
                       ttft_s=self.ttft_s[idx], e2e_s=self.e2e_s[idx], ok=self.ok[idx], start_s=start,
                       itl_s=None if self.itl_s is None else [self.itl_s[i] for i in idx], duration_s=None)


#: format name -> "module:function" reading (path, text, run_index) into a BenchmarkRun; `detect` in the same module
#: says whether a parsed document looks like that format
READERS = {
    "vllm": "simulator.benchmark_results.vllm_json",
    "sglang": "simulator.benchmark_results.sglang_jsonl",
    "csv": "simulator.benchmark_results.request_csv",
}


def _module(fmt: str):
    import importlib

    return importlib.import_module(READERS[fmt])


def shipped_results() -> dict[str, Path]:
    """The committed real runs in vLLM's format (hwmodels/calibration/data/serving/vllm_format), by file stem."""
    import hwmodels

    d = Path(hwmodels.__file__).resolve().parent / "calibration" / "data" / "serving" / "vllm_format"
    return {f.stem: f for f in sorted(d.glob("*.json"))} if d.is_dir() else {}


def find_result(path: str | Path) -> Path:
    """A result file: a path, or the stem of a committed run (shipped_results), with or without .json."""
    p = Path(path)
    if p.exists() or len(p.parts) > 1:
        return p
    stem = p.name.removesuffix(".json")
    return shipped_results().get(stem, p)


def read_text(path: str | Path) -> str:
    """The file's text (capped at MAX_RESULT_BYTES), or one line naming the file."""
    p = Path(path)
    if not p.is_file() and not p.exists() and len(p.parts) == 1:
        known = ", ".join(shipped_results()) or "none"
        raise BenchmarkFileError(f"no such file, nor a committed run of that name (committed: {known})", file=str(p))
    if not p.is_file():
        raise BenchmarkFileError("no such file" if not p.exists() else "is not a file", file=str(p))
    try:
        size = p.stat().st_size
        if size > MAX_RESULT_BYTES:
            raise BenchmarkFileError(f"is {size / 2**20:,.0f} MiB; result files are read up to "
                                     f"{MAX_RESULT_BYTES / 2**20:,.0f} MiB", file=str(p))
        return p.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise BenchmarkFileError("is not UTF-8 text (a vLLM / SGLang result is JSON, a request table CSV)",
                                 file=str(p)) from None
    except OSError as e:
        raise BenchmarkFileError(f"cannot be read ({e.strerror or e})", file=str(p)) from None


def detect_format(path: str | Path, text: str) -> str:
    """vllm, sglang or csv from the file's content (JSON object -> vllm; JSON lines -> sglang; else csv)."""
    s = text.lstrip()
    if s.startswith("{"):
        import json

        try:
            json.loads(s)
            return "vllm"
        except json.JSONDecodeError:
            first = s.splitlines()[0]
            try:
                json.loads(first)
                return "sglang"
            except json.JSONDecodeError:
                raise BenchmarkFileError("starts like JSON but is not valid JSON (truncated?)", file=str(path)) from None
    if s.startswith("["):
        raise BenchmarkFileError("is a JSON list; a vLLM result is one JSON object, an SGLang result one object per "
                                 "line", file=str(path))
    return "csv"


def read_result(path: str | Path, fmt: str | None = None, run_index: int = -1) -> BenchmarkRun:
    """A checked BenchmarkRun from a result file of format `fmt` (None: detected)."""
    if fmt is not None and fmt not in READERS:
        raise BenchmarkFileError(f"unknown result format {fmt!r}; known: {', '.join(READERS)}")
    path = find_result(path)
    text = read_text(path)
    fmt = fmt or detect_format(path, text)
    return _module(fmt).read(str(path), text, run_index).check().in_send_order()


# ---- helpers the readers share -------------------------------------------------------------------------------
def need(doc: dict, key: str, file: str, what: str):
    """doc[key], or one line naming the missing field."""
    if key not in doc:
        raise BenchmarkFileError(f"is missing ({what})", file=file, field=key)
    return doc[key]


def num_list(v, file: str, fld: str, allow_none: bool = False) -> np.ndarray:
    """A JSON list of numbers as float64 (None -> nan when allowed)."""
    if not isinstance(v, list):
        raise BenchmarkFileError(f"must be a list of numbers, got {type(v).__name__}", file=file, field=fld)
    out = np.empty(len(v), dtype=np.float64)
    for i, x in enumerate(v):
        if x is None and allow_none:
            out[i] = math.nan
        elif isinstance(x, bool) or not isinstance(x, (int, float)):
            raise BenchmarkFileError(f"entry {i} is {x!r}, not a number", file=file, field=fld)
        else:
            out[i] = float(x)
    return out


def rate_value(v, file: str, fld: str = "request_rate") -> float:
    """A request rate: a positive number, or "inf" / null / Infinity for all-at-once."""
    if v is None or (isinstance(v, str) and v.strip().lower() in ("inf", "infinity")):
        return math.inf
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
        raise BenchmarkFileError(f"must be a positive number or \"inf\", got {v!r}", file=file, field=fld)
    return float(v)


def concurrency_value(v, file: str, fld: str = "max_concurrency") -> int | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != int(v) or v < 1:
        raise BenchmarkFileError(f"must be a positive integer or null, got {v!r}", file=file, field=fld)
    return int(v)
