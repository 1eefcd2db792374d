"""Request traces: when requests arrive and how long their prompts and outputs are.

In memory a trace is a `RequestTrace` of numpy columns (one entry per request, sorted by arrival):

    arrival_s      float64  seconds from the trace's start
    input_tokens   int64    prompt length (>= 1)
    output_tokens  int64    tokens generated (>= 1)
    hash_offsets / hash_ids (optional) prefix block hashes in CSR form: request i's blocks are
                   hash_ids[hash_offsets[i]:hash_offsets[i+1]], each covering `block_tokens` prompt tokens;
                   equal ids across requests = a shared prefix block (Mooncake's `hash_ids`)

Readers (`load_requests`): the shipped traces by name (`shipped_request_traces()`), or a file by path:
  * Mooncake JSONL (FAST'25 release): {"timestamp": ms, "input_length", "output_length", "hash_ids": [...]},
    512 tokens per hash block (Mooncake README);
  * Azure LLM inference 2023 CSV: TIMESTAMP (date-time), ContextTokens, GeneratedTokens;
  * generic CSV or Parquet: arrival_s, input_tokens, output_tokens, optional prefix_hashes (space-separated
    integers) and a single-valued block_tokens column.
Files may be gzip-compressed (.gz). Every malformed file stops with one line naming the file, the row
(1-based, as an editor shows it) and the field.

Generators (`poisson`, `gamma_arrivals`) draw arrivals and lengths from a seeded numpy Generator.
"""
from __future__ import annotations

import gzip
import io
import json
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from hwmodels.errors import SparsesimError

#: Mooncake's hash_ids cover 512 prompt tokens each (Mooncake FAST'25 trace README: "block size 512").
MOONCAKE_BLOCK_TOKENS = 512

#: shipped name -> (file under traces/requests/, format, provenance)
SHIPPED = {
    "mooncake_conversation": ("mooncake_conversation_trace.jsonl.gz", "mooncake",
                              "Mooncake FAST'25 release, traces/conversation_trace.jsonl (kvcache-ai/Mooncake "
                              "3b5a5941), Apache-2.0 (LICENSE-mooncake-APACHE)"),
    "mooncake_synthetic": ("mooncake_synthetic_trace.jsonl.gz", "mooncake",
                           "Mooncake FAST'25 release, traces/synthetic_trace.jsonl (kvcache-ai/Mooncake 3b5a5941), "
                           "Apache-2.0 (LICENSE-mooncake-APACHE)"),
    "azure_conv": ("azure_llm_inference_2023_conv.csv.gz", "azure",
                   "Azure LLM inference trace 2023, conversation (Azure/AzurePublicDataset b469a113), CC-BY-4.0: "
                   "Patel et al., Splitwise, ISCA 2024"),
    "azure_code": ("azure_llm_inference_2023_code.csv.gz", "azure",
                   "Azure LLM inference trace 2023, code (Azure/AzurePublicDataset b469a113), CC-BY-4.0: "
                   "Patel et al., Splitwise, ISCA 2024"),
}

#: most requests a file may hold (a guard against reading a wrong, huge file into memory)
MAX_REQUESTS = 50_000_000


class TraceError(SparsesimError):
    """A request trace (or attention trace) file is missing, malformed or inconsistent."""


@dataclass(frozen=True)
class RequestTrace:
    """Requests sorted by arrival (see module docstring for the columns)."""

    name: str
    source: str
    arrival_s: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    hash_offsets: np.ndarray | None = None
    hash_ids: np.ndarray | None = None
    block_tokens: int | None = None

    def __len__(self) -> int:
        return len(self.arrival_s)

    @property
    def has_prefix_hashes(self) -> bool:
        return self.hash_ids is not None

    @property
    def duration_s(self) -> float:
        return float(self.arrival_s[-1] - self.arrival_s[0]) if len(self) > 1 else 0.0

    def prefix_hashes(self, i: int) -> np.ndarray:
        """Request i's prefix block hashes (empty when the trace has none)."""
        if self.hash_ids is None:
            return np.zeros(0, dtype=np.int64)
        return self.hash_ids[self.hash_offsets[i]:self.hash_offsets[i + 1]]

    def scaled(self, time_scale: float = 1.0, rate_scale: float = 1.0) -> "RequestTrace":
        """Arrivals stretched by `time_scale` and compressed by `rate_scale` (rate x rate_scale): arrival
        times become arrival_s * time_scale / rate_scale. Lengths are unchanged."""
        for v, what in ((time_scale, "time_scale"), (rate_scale, "rate_scale")):
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise TraceError(f"{what} must be a positive number, got {v!r}")
        if time_scale == 1.0 and rate_scale == 1.0:
            return self
        return replace(self, arrival_s=self.arrival_s * (time_scale / rate_scale))

    def subset(self, idx: np.ndarray) -> "RequestTrace":
        """The requests at sorted positions `idx` (an index array or boolean mask), hashes kept."""
        idx = np.arange(len(self))[idx] if np.asarray(idx).dtype == bool else np.asarray(idx, dtype=np.int64)
        offs = ids = None
        if self.hash_ids is not None:
            lens = np.diff(self.hash_offsets)[idx]
            offs = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
            ids = (np.concatenate([self.prefix_hashes(i) for i in idx]) if len(idx)
                   else np.zeros(0, dtype=np.int64))
        return replace(self, arrival_s=self.arrival_s[idx], input_tokens=self.input_tokens[idx],
                       output_tokens=self.output_tokens[idx], hash_offsets=offs, hash_ids=ids)

    def head(self, n: int) -> "RequestTrace":
        """The first n requests."""
        return self.subset(np.arange(min(int(n), len(self))))

    def window(self, start_s: float, end_s: float) -> "RequestTrace":
        """Requests arriving in [start_s, end_s), times shifted so the window starts at 0."""
        m = (self.arrival_s >= start_s) & (self.arrival_s < end_s)
        t = self.subset(m)
        return replace(t, arrival_s=t.arrival_s - start_s)

    def to_frame(self):
        """A pandas DataFrame (prefix hashes as space-separated text), e.g. to write a generic CSV."""
        import pandas as pd

        df = pd.DataFrame({"arrival_s": self.arrival_s, "input_tokens": self.input_tokens,
                           "output_tokens": self.output_tokens})
        if self.hash_ids is not None:
            df["prefix_hashes"] = [" ".join(map(str, self.prefix_hashes(i))) for i in range(len(self))]
            df["block_tokens"] = self.block_tokens
        return df


# ---- validation -------------------------------------------------------------------------------------------
def _finish(name: str, source: str, file: str, arrival, inp, out, offs=None, ids=None, block=None) -> RequestTrace:
    arrival = np.asarray(arrival, dtype=np.float64)
    inp = np.asarray(inp, dtype=np.float64)
    out = np.asarray(out, dtype=np.float64)
    if len(arrival) == 0:
        raise TraceError("holds no requests", file=file)
    for col, what in ((arrival, "arrival time"), (inp, "input tokens"), (out, "output tokens")):
        bad = ~np.isfinite(col)
        if bad.any():
            raise TraceError(f"row {int(np.argmax(bad)) + 2}: {what} is not a finite number", file=file)
    for col, what in ((inp, "input tokens"), (out, "output tokens")):
        bad = (col < 1) | (col != np.round(col))
        if bad.any():
            i = int(np.argmax(bad))
            raise TraceError(f"row {i + 2}: {what} must be a positive integer, got {col[i]:g}", file=file)
        if (col > 10_000_000).any():
            i = int(np.argmax(col > 10_000_000))
            raise TraceError(f"row {i + 2}: {what} {col[i]:g} is beyond 10,000,000 tokens", file=file)
    if (arrival < 0).any():
        i = int(np.argmax(arrival < 0))
        raise TraceError(f"row {i + 2}: arrival time must be >= 0, got {arrival[i]:g}", file=file)
    if offs is not None and block:
        n_hash = np.diff(np.asarray(offs, dtype=np.int64))
        most = np.ceil(inp / block)
        over = n_hash > most
        if over.any():
            i = int(np.argmax(over))
            raise TraceError(f"row {i + 2}: {int(n_hash[i])} prefix hash blocks of {block} tokens cover "
                             f"{int(n_hash[i]) * block:,} tokens, more than the prompt's {int(inp[i]):,} (at most "
                             f"{int(most[i])} blocks)", file=file)
    order = np.argsort(arrival, kind="stable")
    t = RequestTrace(name=name, source=source, arrival_s=arrival - 0.0, input_tokens=inp.astype(np.int64),
                     output_tokens=out.astype(np.int64), hash_offsets=offs, hash_ids=ids, block_tokens=block)
    if not np.array_equal(order, np.arange(len(order))):
        t = t.subset(order)
    return t


#: most bytes of a request-trace file read, compressed or not, and most bytes a .gz file may expand to: the
#: largest shipped trace is ~3 MB of text; 1 GiB holds millions of requests and stays within a shared machine's
#: memory when parsed
MAX_TRACE_BYTES = 1 << 30


def read_capped(path: Path, what: str = "request trace file") -> bytes:
    """The bytes of a trace file, decompressed when gzip: at most MAX_TRACE_BYTES read from the file and at most
    MAX_TRACE_BYTES after decompression (a device file never ends; a small .gz can expand to terabytes)."""
    from hwmodels.yamlio import read_bytes

    f = str(path)
    try:
        raw = read_bytes(path, what, MAX_TRACE_BYTES)
    except TraceError:
        raise
    except SparsesimError as e:
        raise TraceError(str(e).removeprefix(f"{f}: "), file=f) from None
    if path.suffix == ".gz" or raw[:2] == b"\x1f\x8b":
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(raw)) as gz:
                raw = gz.read(MAX_TRACE_BYTES + 1)
        except (OSError, EOFError, gzip.BadGzipFile) as e:
            raise TraceError(f"is not a readable gzip file ({e})", file=f) from None
        if len(raw) > MAX_TRACE_BYTES:
            raise TraceError(f"expands to more than {MAX_TRACE_BYTES:,} bytes when decompressed (read stopped there); "
                             "refused as a possible decompression bomb", file=f)
    return raw


def _open_text(path: Path) -> str:
    raw = read_capped(path)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[:e.start].count(b"\n") + 1
        raise TraceError(f"is not UTF-8 text (line {line})", file=str(path)) from None


def read_mooncake(path: Path, name: str | None = None, source: str = "") -> RequestTrace:
    """Mooncake JSONL: timestamp (ms), input_length, output_length, hash_ids (512-token blocks)."""
    text = _open_text(path)
    f = str(path)
    arrival, inp, out, lens, ids = [], [], [], [], []
    for ln, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise TraceError(f"line {ln}: not valid JSON ({e.msg})", file=f) from None
        if not isinstance(rec, dict):
            raise TraceError(f"line {ln}: each line must be a JSON object", file=f)
        for key in ("timestamp", "input_length", "output_length"):
            v = rec.get(key)
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise TraceError(f"line {ln}: field '{key}' must be a number, got {v!r}", file=f)
        h = rec.get("hash_ids", [])
        if not isinstance(h, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in h):
            raise TraceError(f"line {ln}: field 'hash_ids' must be a list of integers", file=f)
        arrival.append(rec["timestamp"] / 1000.0)
        inp.append(rec["input_length"])
        out.append(rec["output_length"])
        lens.append(len(h))
        ids.extend(h)
        if len(arrival) > MAX_REQUESTS:
            raise TraceError(f"holds more than {MAX_REQUESTS:,} requests", file=f)
    offs = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    return _finish(name or path.name.split(".")[0], source or f"Mooncake-format JSONL {f}", f, arrival, inp, out,
                   offs, np.asarray(ids, dtype=np.int64), MOONCAKE_BLOCK_TOKENS)


def _csv_frame(path: Path):
    import pandas as pd

    text = _open_text(path)
    if not text.strip():
        raise TraceError("is empty", file=str(path))
    try:
        return pd.read_csv(io.StringIO(text), low_memory=False)
    except (pd.errors.ParserError, ValueError) as e:
        raise TraceError(f"is not a readable CSV ({' '.join(str(e).split())[:160]})", file=str(path)) from None


def read_azure(path: Path, name: str | None = None, source: str = "") -> RequestTrace:
    """Azure LLM inference 2023 CSV: TIMESTAMP (date-time), ContextTokens, GeneratedTokens."""
    import pandas as pd

    df = _csv_frame(path)
    f = str(path)
    missing = [c for c in ("TIMESTAMP", "ContextTokens", "GeneratedTokens") if c not in df.columns]
    if missing:
        raise TraceError(f"missing column(s) {missing}; an Azure trace has TIMESTAMP, ContextTokens, "
                         "GeneratedTokens", file=f)
    raw = df["TIMESTAMP"].astype(str).str.strip()
    aware = raw.str.contains(r"(?:Z|[+-]\d\d:?\d\d)$", regex=True).to_numpy()
    if aware.any() and not aware.all():
        i = int(np.argmax(aware != aware[0]))
        raise TraceError(f"row {i + 2}: TIMESTAMP {raw.iloc[i]!r} {'has' if aware[i] else 'lacks'} a time-zone offset "
                         f"and row 2 ({raw.iloc[0]!r}) {'does' if aware[0] else 'does not'}: times without an offset "
                         "cannot be ordered against times with one; give every row an offset or none", file=f,
                         field="TIMESTAMP")
    # offsets may differ between rows (daylight saving, several regions): compare them in UTC
    ts = pd.to_datetime(raw, errors="coerce", utc=bool(aware.all()), format="mixed")
    if ts.isna().any():
        i = int(np.argmax(ts.isna().to_numpy()))
        raise TraceError(f"row {i + 2}: TIMESTAMP {df['TIMESTAMP'].iloc[i]!r} is not a date-time", file=f)
    t = (ts - ts.min()).dt.total_seconds().to_numpy()
    inp = pd.to_numeric(df["ContextTokens"], errors="coerce").to_numpy(dtype=np.float64)
    out = pd.to_numeric(df["GeneratedTokens"], errors="coerce").to_numpy(dtype=np.float64)
    return _finish(name or path.name.split(".")[0], source or f"Azure-format CSV {f}", f, t, inp, out)


def read_generic(path: Path, name: str | None = None, source: str = "") -> RequestTrace:
    """Generic CSV/Parquet: arrival_s, input_tokens, output_tokens [, prefix_hashes, block_tokens]."""
    import pandas as pd

    f = str(path)
    if path.suffix == ".parquet":
        try:
            df = pd.read_parquet(path)
        except FileNotFoundError:
            raise TraceError("no such request trace file", file=f) from None
        except Exception as e:  # noqa: BLE001 - pyarrow raises many kinds for a corrupt file
            raise TraceError(f"is not a readable Parquet file ({' '.join(str(e).split())[:160]})", file=f) from None
    else:
        df = _csv_frame(path)
    missing = [c for c in ("arrival_s", "input_tokens", "output_tokens") if c not in df.columns]
    if missing:
        raise TraceError(f"missing column(s) {missing}; a request trace has arrival_s, input_tokens, "
                         "output_tokens (optional prefix_hashes, block_tokens)", file=f)
    cols = [pd.to_numeric(df[c], errors="coerce").to_numpy(dtype=np.float64)
            for c in ("arrival_s", "input_tokens", "output_tokens")]
    offs = ids = block = None
    if "prefix_hashes" in df.columns:
        if "block_tokens" not in df.columns:
            raise TraceError("has prefix_hashes but no block_tokens column (tokens per hash block)", file=f)
        bt = pd.to_numeric(df["block_tokens"], errors="coerce").dropna().unique()
        if len(bt) != 1 or bt[0] < 1 or bt[0] != int(bt[0]):
            raise TraceError("column block_tokens must hold one positive integer for every row", file=f)
        block = int(bt[0])
        lens, all_ids = [], []
        for i, v in enumerate(df["prefix_hashes"].fillna("").astype(str)):
            try:
                h = [int(x) for x in v.split()]
            except ValueError:
                raise TraceError(f"row {i + 2}: prefix_hashes must be space-separated integers, got {v[:40]!r}",
                                 file=f) from None
            lens.append(len(h))
            all_ids.extend(h)
        offs = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        ids = np.asarray(all_ids, dtype=np.int64)
    return _finish(name or path.name.split(".")[0], source or f"request trace {f}", f, *cols, offs, ids, block)


def shipped_request_traces() -> dict[str, tuple[Path, str]]:
    """Shipped request-trace name -> (file, provenance)."""
    from simulator.shipped import traces_dir

    d = traces_dir() / "requests"
    return {k: (d / v[0], v[2]) for k, v in SHIPPED.items()}


#: traces read in this process, by (file, its size and modification time): a plan's engine runs replay the same trace
#: (plan_mooncake read the Mooncake hour 12 times, 0.6 s each); the cached trace's arrays are read-only
_LOADED: dict = {}
LOADED_TRACES_KEPT = 4


def load_requests(name_or_path: str | Path) -> RequestTrace:
    """A shipped request trace by name ('mooncake_conversation', ...) or a trace file by path; the format
    is taken from the shipped table or from the file (JSONL = Mooncake; a CSV with TIMESTAMP = Azure;
    otherwise the generic columns). A file read before in this process, unchanged since, is not read again."""
    if not isinstance(name_or_path, (str, Path)) or not str(name_or_path).strip():
        raise TraceError(f"a request trace is a shipped name or a path, got {name_or_path!r}")
    key = str(name_or_path)
    path = shipped_request_traces()[key][0] if key in SHIPPED else Path(name_or_path)
    try:
        st = path.stat()
        memo_key = (key, str(path.resolve()), st.st_size, st.st_mtime_ns)
    except OSError:
        memo_key = None
    hit = _LOADED.get(memo_key) if memo_key is not None else None
    if hit is not None:
        return hit
    t = _read_requests(name_or_path, key)
    if memo_key is not None:
        for a in (t.arrival_s, t.input_tokens, t.output_tokens, t.hash_offsets, t.hash_ids):
            if isinstance(a, np.ndarray):
                a.setflags(write=False)
        while len(_LOADED) >= LOADED_TRACES_KEPT:
            del _LOADED[next(iter(_LOADED))]
        _LOADED[memo_key] = t
    return t


def _read_requests(name_or_path: str | Path, key: str) -> RequestTrace:
    """load_requests' read of the file, every time."""
    if key in SHIPPED:
        fname, fmt, source = SHIPPED[key]
        path = shipped_request_traces()[key][0]
        reader = read_mooncake if fmt == "mooncake" else read_azure
        return reader(path, key, source)
    path = Path(name_or_path)
    if not path.exists():
        raise TraceError(f"no such request trace; shipped names: {', '.join(SHIPPED)} (or give a path to a "
                         "JSONL, CSV or Parquet file)", file=key)
    stem = path.name[:-3] if path.name.endswith(".gz") else path.name
    if stem.endswith(".jsonl") or stem.endswith(".json"):
        return read_mooncake(path)
    if stem.endswith(".parquet"):
        return read_generic(path)
    if stem.endswith(".csv"):
        head = _open_text(path).split("\n", 1)[0]
        return read_azure(path) if "TIMESTAMP" in head else read_generic(path)
    raise TraceError("unknown request trace format; use .jsonl (Mooncake), .csv (Azure or generic) or .parquet "
                     "(generic), optionally .gz", file=key)


# ---- generators -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LengthDist:
    """A token-length distribution: 'fixed' (value), 'uniform' (low, high), 'lognormal' (mean, cv) or
    'empirical' (samples drawn from a shipped or given request trace's column); clipped to [low, high]."""

    kind: str = "fixed"
    value: float = 1024.0
    mean: float = 1024.0
    cv: float = 1.0
    low: float = 1.0
    high: float = 1e7
    samples: np.ndarray | None = None

    def mean_tokens(self) -> float:
        """Expected length (before clipping to [low, high], an upper estimate for sizing a run)."""
        if self.kind == "fixed":
            return min(self.value, self.high)
        if self.kind == "uniform":
            return (self.low + self.high) / 2
        if self.kind == "lognormal":
            return min(self.mean, self.high)
        return float(np.mean(self.samples)) if self.samples is not None and len(self.samples) else 0.0

    def draw(self, n: int, rng: np.random.Generator) -> np.ndarray:
        if self.kind == "fixed":
            x = np.full(n, self.value)
        elif self.kind == "uniform":
            x = rng.uniform(self.low, self.high + 1, n)
        elif self.kind == "lognormal":
            s2 = math.log1p(self.cv ** 2)  # lognormal with the given mean and coefficient of variation
            x = rng.lognormal(math.log(self.mean) - s2 / 2, math.sqrt(s2), n)
        elif self.kind == "empirical":
            x = rng.choice(self.samples, n, replace=True)
        else:  # pragma: no cover - validated at parse time
            raise TraceError(f"unknown length distribution {self.kind!r}")
        return np.clip(np.floor(x), max(1.0, self.low), self.high).astype(np.int64)


def _check_rate(rate: float, n: int) -> None:
    if not (isinstance(rate, (int, float)) and not isinstance(rate, bool) and math.isfinite(rate) and rate > 0):
        raise TraceError(f"request rate must be a positive number of requests/s, got {rate!r}")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= MAX_REQUESTS:
        raise TraceError(f"request count must be an integer in [1, {MAX_REQUESTS:,}], got {n!r}")


def poisson(rate_per_s: float, n: int, input_len: LengthDist, output_len: LengthDist,
            rng: np.random.Generator, name: str = "poisson") -> RequestTrace:
    """n requests with exponential inter-arrival times of mean 1/rate (a Poisson process)."""
    _check_rate(rate_per_s, n)
    gaps = rng.exponential(1.0 / rate_per_s, n)
    arrival = np.cumsum(gaps) - gaps[0]
    return RequestTrace(name=name, source=f"generated: Poisson arrivals at {rate_per_s:g}/s", arrival_s=arrival,
                        input_tokens=input_len.draw(n, rng), output_tokens=output_len.draw(n, rng))


def closed_loop(concurrency: int, n: int, input_len: LengthDist, output_len: LengthDist, rng: np.random.Generator,
                name: str = "closed_loop") -> RequestTrace:
    """n requests for a closed loop of `concurrency` in flight: lengths drawn in order, no arrival process (the
    engine submits request i + concurrency when one finishes; arrival_s is 0 here)."""
    if not (isinstance(n, (int, np.integer)) and n >= 1):
        raise TraceError(f"count must be a positive integer, got {n!r}")
    return RequestTrace(name=name, source=f"generated: closed loop, {concurrency} requests in flight",
                        arrival_s=np.zeros(n), input_tokens=input_len.draw(n, rng),
                        output_tokens=output_len.draw(n, rng))


def gamma_arrivals(rate_per_s: float, cv: float, n: int, input_len: LengthDist, output_len: LengthDist,
                   rng: np.random.Generator, name: str = "gamma") -> RequestTrace:
    """n requests with gamma inter-arrival times of mean 1/rate and coefficient of variation cv (cv > 1:
    burstier than Poisson; cv = 1 is Poisson)."""
    _check_rate(rate_per_s, n)
    if not (isinstance(cv, (int, float)) and math.isfinite(cv) and cv > 0):
        raise TraceError(f"cv must be a positive number, got {cv!r}")
    shape = 1.0 / cv ** 2
    gaps = rng.gamma(shape, 1.0 / (rate_per_s * shape), n)
    arrival = np.cumsum(gaps) - gaps[0]
    return RequestTrace(name=name, source=f"generated: gamma arrivals at {rate_per_s:g}/s, cv {cv:g}",
                        arrival_s=arrival, input_tokens=input_len.draw(n, rng), output_tokens=output_len.draw(n, rng))


#: longest prompt or output a length distribution may give (tokens), as for request-trace files
MAX_LENGTH_TOKENS = 10_000_000


def length_dist_from_dict(doc: Any, field: str, base: Path | None = None) -> LengthDist:
    """Parse {fixed: N} | {uniform: [lo, hi]} | {lognormal: {mean: M, cv: C}, max: H} | {empirical: TRACE,
    column: input|output} into a LengthDist; errors name `field`. Lengths are at most MAX_LENGTH_TOKENS (the
    bound of the request-trace readers); a relative empirical trace path resolves against `base` (the scenario's
    folder) when it is not found from the working folder."""
    def num(v, what, sub=""):
        if (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 1
                or v > MAX_LENGTH_TOKENS):
            raise TraceError(f"field '{field}{sub}': {what} must be a number of tokens in [1, {MAX_LENGTH_TOKENS:,}], "
                             f"got {v!r}")
        return float(v)

    if isinstance(doc, (int, float)) and not isinstance(doc, bool):
        return LengthDist("fixed", value=num(doc, "a fixed length"))
    if not isinstance(doc, dict):
        raise TraceError(f"field '{field}': must be a number or one of {{fixed: N}}, {{uniform: [lo, hi]}}, "
                         "{lognormal: {mean: M, cv: C}}, {empirical: TRACE}")
    hi = num(doc.get("max", 1e7), "max", ".max")
    kinds = [k for k in ("fixed", "uniform", "lognormal", "empirical") if k in doc]
    extra = set(doc) - {"fixed", "uniform", "lognormal", "empirical", "max", "column"}
    if len(kinds) != 1 or extra:
        raise TraceError(f"field '{field}': give exactly one of fixed, uniform, lognormal, empirical (and optional "
                         f"max, column); got {sorted(doc)}")
    k = kinds[0]
    v = doc[k]
    if k == "fixed":
        value = num(v, "fixed", ".fixed")
        if value > hi:
            raise TraceError(f"field '{field}.fixed': {value:g} is above max {hi:g} (every request would be clipped to "
                             "max): give one of them")
        return LengthDist("fixed", value=value, high=hi)
    if k == "uniform":
        if not isinstance(v, list) or len(v) != 2 or num(v[0], "low", ".uniform") > num(v[1], "high", ".uniform"):
            raise TraceError(f"field '{field}.uniform': must be [low, high] with 1 <= low <= high <= "
                             f"{MAX_LENGTH_TOKENS:,}")
        if float(v[0]) > hi:
            raise TraceError(f"field '{field}.uniform': low {v[0]:g} is above max {hi:g}")
        return LengthDist("uniform", low=float(v[0]), high=min(hi, float(v[1])))
    if k == "lognormal":
        if not isinstance(v, dict) or set(v) - {"mean", "cv"} or "mean" not in v:
            raise TraceError(f"field '{field}.lognormal': must be {{mean: M, cv: C}}")
        cv = v.get("cv", 1.0)
        if isinstance(cv, bool) or not isinstance(cv, (int, float)) or not math.isfinite(cv) or not 0 < cv <= 100:
            raise TraceError(f"field '{field}.lognormal.cv': must be a positive number up to 100, got {cv!r}")
        return LengthDist("lognormal", mean=num(v["mean"], "mean", ".lognormal.mean"), cv=float(cv), high=hi)
    col = doc.get("column", "input")
    if col not in ("input", "output"):
        raise TraceError(f"field '{field}.column': must be input or output, got {col!r}")
    if isinstance(v, str) and v not in SHIPPED and base is not None:
        p = Path(v)
        if not p.is_absolute() and not p.exists() and (Path(base) / p).exists():
            v = str(Path(base) / p)
    try:
        t = load_requests(v)
    except TraceError as e:
        raise TraceError(f"field '{field}.empirical': {e}") from None
    samples = (t.input_tokens if col == "input" else t.output_tokens).astype(np.float64)
    return LengthDist("empirical", samples=samples, high=hi)
