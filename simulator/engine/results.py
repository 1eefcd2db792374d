"""What a simulation produces: the per-request table, the summary, the time series.

Per-request columns (one row per request of the source, in arrival order; times in seconds from the first
arrival; NaN where a request was rejected or a metric is undefined):
    arrival_s          when it arrived
    input_tokens, output_tokens
    replica            replica it was routed to (the prefill replica under disaggregation; -1 = rejected)
    decode_replica     the decode replica (disaggregated serving only, else -1)
    queue_s            first scheduled - arrival (waiting for admission, first time)
    ttft_s             first token - arrival (end of the step that computed the last prompt token)
    tpot_s             (finish - first token) / (output_tokens - 1): the mean gap between later tokens,
                       the definition of vLLM's benchmark_serving (NaN for a 1-token output)
    e2e_s              finish - arrival
    preemptions        times it was preempted (recompute)
    prefix_hit_tokens  prompt tokens found in the prefix cache at its first admission
    kv_transfer_s      prefill-to-decode KV transfer time (disaggregated serving)
    rejected           True when it could never run (longer than the model's context or a replica's KV cache)
    spec_switches      (only with serving.adaptation) times it switched speculation tuples
    warmup             (only in a closed loop) True for the first `warmup` requests to finish: left out of the summary

Arrival is when the client sent the request (the trace's time, or in a closed loop the moment a slot freed);
TTFT and E2E end when the token reaches the client: the engine profile's API path adds its per-token delay
(simulator.engine.runtime; 0 unless the profile sources it).

Summary (`summarize`): counts; duration (first arrival to last finish); request, output-token and total
token throughput over that duration; goodput = requests meeting every SLO given (ttft_ms, tpot_ms, e2e_ms;
a request with a 1-token output meets any TPOT limit) per second; mean/p50/p90/p99 of TTFT, TPOT, E2E and
queueing (ms); ITL (ms): every gap between two consecutive tokens of a request, pooled over requests (vLLM
benchmarks/serve.py: `itls` of every request concatenated; TPOT there is (e2e - ttft) / (output - 1) per request,
as here); preemptions; prefix-cache hit rate (hit tokens / prompt tokens of admitted requests); mean running batch
and KV use (time-weighted over busy time). In a closed loop the warm-up requests are left out of every figure
(ITL: the gaps after the last warm-up request finished).

Time series (one row per engine event: a step, or a run of identical decode steps): t_s (start), dt_s,
replica, steps, running (requests in the batch), waiting (queue at the event's start), kv_used_blocks,
tokens (rows computed in all its steps), prefill_tokens, decode_rows, preempted.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

PERCENTILES = (50, 90, 99)


def request_table(engine) -> pd.DataFrame:
    t = engine.trace
    rec = engine.rec
    arrival = rec.arrival if getattr(rec, "arrival", None) is not None else t.arrival_s - (
        t.arrival_s[0] if len(t) else 0.0)
    out = t.output_tokens.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(out > 1, (rec.finish - rec.first_token) / (out - 1), np.nan)
    d = float(getattr(engine, "api_per_token_s", 0.0) or 0.0)
    first, finish = (rec.first_token + d, rec.finish + d) if d else (rec.first_token, rec.finish)
    cols = {
        "arrival_s": arrival,
        "input_tokens": t.input_tokens,
        "output_tokens": t.output_tokens,
        "replica": rec.replica,
        "decode_replica": rec.decode_replica,
        "queue_s": rec.first_scheduled - arrival,
        "ttft_s": first - arrival,
        "tpot_s": tpot,
        "e2e_s": finish - arrival,
        "preemptions": rec.preemptions,
        "prefix_hit_tokens": np.where(rec.prefix_hit >= 0, rec.prefix_hit, 0),
        "kv_transfer_s": rec.kv_transfer,
        "rejected": rec.rejected,
    }
    adaptive = [r.adapt for r in getattr(engine, "replicas", []) if getattr(r, "adapt", None) is not None]
    if adaptive:   # serving.adaptation: how often each request switched speculation tuples
        sw = np.zeros(len(t), dtype=np.int64)
        for a in adaptive:
            for rid, st in a.state.items():
                sw[rid] += st[5]
        cols["spec_switches"] = sw
    if getattr(engine, "closed", False):   # the first `warmup` requests to finish
        w = min(int(engine.cfg.source.warmup), max(len(t) - 1, 0))   # at least one request is measured
        warm = np.zeros(len(t), dtype=bool)
        if w:
            order = np.lexsort((np.arange(len(t)), np.nan_to_num(rec.finish, nan=np.inf)))
            warm[order[:w]] = True
        cols["warmup"] = warm
    return pd.DataFrame(cols)


def itl_samples(engine, after_s: float = -np.inf) -> tuple[np.ndarray, np.ndarray]:
    """(gaps in seconds, weights) of the inter-token latencies emitted after `after_s` (vLLM's pooled ITL)."""
    itl = engine.rec.itl
    t = np.frombuffer(itl["t"], dtype=np.float64) if len(itl["t"]) else np.zeros(0)
    g = np.frombuffer(itl["gap"], dtype=np.float64) if len(itl["gap"]) else np.zeros(0)
    w = np.frombuffer(itl["w"], dtype=np.float64) if len(itl["w"]) else np.zeros(0)
    m = (t > after_s) & np.isfinite(g)
    return g[m], w[m]


def _weighted_pct(x: np.ndarray, w: np.ndarray, prefix: str, scale: float = 1e3) -> dict:
    """Mean and percentiles of samples x with integer weights w (each sample repeated w times; numpy's linear
    percentile of the repeated samples)."""
    out = {f"{prefix}_mean_ms": float((x * w).sum() / w.sum() * scale) if len(x) and w.sum() else np.nan}
    if not len(x):
        for p in PERCENTILES:
            out[f"{prefix}_p{p}_ms"] = np.nan
        return out
    o = np.argsort(x, kind="stable")
    xs, cw = x[o], np.cumsum(w[o])
    n = cw[-1]
    for p in PERCENTILES:
        pos = p / 100.0 * (n - 1)           # position in the repeated, sorted sample (0-based)
        lo = int(np.searchsorted(cw, np.floor(pos) + 1, side="left"))
        hi = int(np.searchsorted(cw, np.ceil(pos) + 1, side="left"))
        fr = pos - np.floor(pos)
        out[f"{prefix}_p{p}_ms"] = float((xs[lo] + (xs[min(hi, len(xs) - 1)] - xs[lo]) * fr) * scale)
    return out


def timeseries_table(engine) -> pd.DataFrame:
    ts = engine.rec.ts
    df = pd.DataFrame({k: np.frombuffer(v, dtype=np.float64) if len(v) else np.zeros(0) for k, v in ts.items()})
    df = df.rename(columns={"t": "t_s", "dt": "dt_s", "kv_used": "kv_used_blocks"})
    for c in ("replica", "steps", "running", "waiting", "kv_used_blocks", "tokens", "prefill_tokens", "decode_rows",
              "preempted"):
        df[c] = df[c].astype(np.int64)
    return df.sort_values(["t_s", "replica"], kind="stable").reset_index(drop=True)


def _pct(x: np.ndarray, prefix: str, scale: float = 1e3) -> dict:
    x = x[np.isfinite(x)]
    out = {f"{prefix}_mean_ms": float(x.mean() * scale) if len(x) else np.nan}
    for p in PERCENTILES:
        out[f"{prefix}_p{p}_ms"] = float(np.percentile(x, p) * scale) if len(x) else np.nan
    return out


def slo_met(df: pd.DataFrame, slo: dict) -> np.ndarray:
    ok = np.isfinite(df["e2e_s"].to_numpy())
    if "ttft_ms" in slo:
        ok &= df["ttft_s"].to_numpy() * 1e3 <= slo["ttft_ms"]
    if "tpot_ms" in slo:
        tp = df["tpot_s"].to_numpy()
        ok &= ~(tp * 1e3 > slo["tpot_ms"])  # NaN (1-token outputs) passes
    if "e2e_ms" in slo:
        ok &= df["e2e_s"].to_numpy() * 1e3 <= slo["e2e_ms"]
    return ok


def summarize(df: pd.DataFrame, ts: pd.DataFrame, slo: dict, n_replicas: int, num_blocks: list,
              itl: tuple | None = None) -> dict:
    """The summary (module docstring). itl: (gaps s, weights) from itl_samples; None leaves the ITL figures out."""
    if "warmup" in df.columns and df["warmup"].any():   # closed loop: the measured window starts after warm-up
        df = df[~df["warmup"].to_numpy()]
        if len(ts) and len(df):
            ts = ts[ts["t_s"].to_numpy() >= float(df["arrival_s"].min())]
    done = df[np.isfinite(df["e2e_s"])]
    n = len(df)
    start = float(df["arrival_s"].min()) if n else 0.0
    end = float((df["arrival_s"] + df["e2e_s"]).max()) if len(done) else start
    dur = max(end - start, 1e-12)
    out_tok = float(done["output_tokens"].sum())
    in_tok = float(done["input_tokens"].sum())
    s = {
        "requests": n,
        "finished": int(len(done)),
        "rejected": int(df["rejected"].sum()),
        "replicas": n_replicas,
        "duration_s": dur,
        "request_rate_offered": (n - 1) / max(float(df["arrival_s"].max()) - start, 1e-12) if n > 1 else np.nan,
        "throughput_req_s": len(done) / dur,
        "output_tokens_per_s": out_tok / dur,
        "total_tokens_per_s": (out_tok + in_tok) / dur,
    }
    if slo:
        met = slo_met(df, slo)
        s["slo"] = ", ".join(f"{k} <= {v:g}" for k, v in slo.items())
        s["slo_attainment"] = float(met.sum() / max(n, 1))
        s["goodput_req_s"] = float(met.sum()) / dur
    s.update(_pct(done["ttft_s"].to_numpy(), "ttft"))
    s.update(_pct(done["tpot_s"].to_numpy(), "tpot"))
    s.update(_pct(done["e2e_s"].to_numpy(), "e2e"))
    s.update(_pct(done["queue_s"].to_numpy(), "queue"))
    if itl is not None:
        s.update(_weighted_pct(itl[0], itl[1], "itl"))
    s["preemptions"] = int(df["preemptions"].sum())
    prompt = float(df.loc[df["replica"] >= 0, "input_tokens"].sum())
    s["prefix_hit_rate"] = float(df["prefix_hit_tokens"].sum()) / prompt if prompt else 0.0
    if len(ts):
        w = ts["dt_s"].to_numpy()
        busy = w.sum()
        s["mean_running"] = float((ts["running"] * w).sum() / busy) if busy else 0.0
        total_blocks = np.asarray(num_blocks, dtype=np.float64)[ts["replica"].to_numpy()]
        s["mean_kv_use"] = float((ts["kv_used_blocks"] / total_blocks * w).sum() / busy) if busy else 0.0
        s["steps"] = int(ts["steps"].sum())
        s["engine_events"] = int(len(ts))
        s["busy_fraction"] = float(busy / (dur * n_replicas))
    return s


SUMMARY_LINES = [
    ("requests", "requests", "{:.0f}"), ("finished", "finished", "{:.0f}"), ("rejected", "rejected", "{:.0f}"),
    ("replicas", "replicas", "{:.0f}"), ("duration_s", "duration (s)", "{:.1f}"),
    ("request_rate_offered", "offered rate (req/s)", "{:.3f}"),
    ("throughput_req_s", "throughput (req/s)", "{:.3f}"), ("output_tokens_per_s", "output tokens/s", "{:.1f}"),
    ("total_tokens_per_s", "total tokens/s", "{:.1f}"), ("slo", "SLO", "{}"),
    ("slo_attainment", "SLO attainment", "{:.3f}"), ("goodput_req_s", "goodput (req/s)", "{:.3f}"),
    ("ttft", "TTFT ms", None), ("tpot", "TPOT ms", None), ("itl", "ITL ms", None), ("e2e", "E2E ms", None),
    ("queue", "queueing ms", None),
    ("preemptions", "preemptions", "{:.0f}"), ("prefix_hit_rate", "prefix-cache hit rate", "{:.3f}"),
    ("mean_running", "mean running batch", "{:.1f}"), ("mean_kv_use", "mean KV use", "{:.3f}"),
    ("busy_fraction", "busy fraction", "{:.3f}"), ("steps", "engine steps", "{:.0f}"),
    ("engine_events", "engine events", "{:.0f}"),
]


def summary_text(s: dict) -> str:
    lines = []
    for key, label, fmt in SUMMARY_LINES:
        if fmt is None:
            if f"{key}_mean_ms" not in s:
                continue
            vals = "  ".join(f"{q} {_num_or_dash(s[f'{key}_{q}_ms'], '{:.1f}')}" for q in ("mean", "p50", "p90", "p99"))
            lines.append(f"  {label:<24}{vals}")
        elif key in s:
            lines.append(f"  {label:<24}{_num_or_dash(s[key], fmt)}")
    return "\n".join(lines)


def _num_or_dash(v, fmt: str) -> str:
    """A summary value, or '–' where it is undefined (e.g. TPOT when every request generates one token)."""
    if isinstance(v, float) and not np.isfinite(v):
        return "–"
    return fmt.format(v)


def request_groups(df: pd.DataFrame, labels: list[str]) -> np.ndarray:
    """Each request's replica group: its replica's label ("prefill -> decode" labels for disaggregated pools, "(not
    placed)" for a rejected request)."""
    lab = np.asarray(labels, dtype=object)
    rep = df["replica"].to_numpy()
    key = np.where(rep >= 0, lab[np.clip(rep, 0, len(lab) - 1)], "(not placed)")
    if "decode_replica" in df.columns:
        dec = df["decode_replica"].to_numpy()
        key = np.where(dec >= 0, key + " -> " + lab[np.clip(dec, 0, len(lab) - 1)].astype(str), key)
    return key


def short_group_names(keys: np.ndarray) -> np.ndarray:
    """Group labels without the words every group shares at their start (for plot legends)."""
    names = list(dict.fromkeys(keys.tolist()))
    if len(names) < 2:
        return keys
    words = [n.split(" ") for n in names]
    common = 0
    while all(len(w) > common + 1 for w in words) and len({w[common] for w in words}) == 1:
        common += 1
    short = {n: " ".join(w[common:]) for n, w in zip(names, words)}
    return np.asarray([short[k] for k in keys.tolist()], dtype=object)


def group_breakdown(df: pd.DataFrame, labels: list[str], slo: dict) -> pd.DataFrame:
    """One row per replica group (the deployment a request ran on: its replica's label, and its decode replica's
    for disaggregated pools): requests, finished, TTFT / TPOT p50 and p90 (ms), SLO attainment. What a scenario
    that sets strategies side by side compares; requests are split by the router, so each group sees its share
    of the load."""
    if "warmup" in df.columns and df["warmup"].any():
        df = df[~df["warmup"].to_numpy()]
    key = request_groups(df, labels)
    rows = []
    met = slo_met(df, slo) if slo else None
    for k in dict.fromkeys(key.tolist()):
        sel = key == k
        part = df[sel]
        done = part[np.isfinite(part["e2e_s"])]
        r = {"group": k, "requests": int(sel.sum()), "finished": int(len(done))}
        for col, name in (("ttft_s", "ttft"), ("tpot_s", "tpot")):
            v = done[col].to_numpy(dtype=np.float64)
            v = v[np.isfinite(v)]
            for q in (50, 90):
                r[f"{name}_p{q}_ms"] = float(np.percentile(v, q)) * 1e3 if len(v) else np.nan
        if met is not None:
            r["slo_attainment"] = float(met[sel].sum() / max(sel.sum(), 1))
        rows.append(r)
    return pd.DataFrame(rows)


def group_breakdown_text(g: pd.DataFrame) -> str:
    """The per-group table as text (ms, two decimals for TPOT)."""
    w = min(max([len(str(x)) for x in g["group"]] + [13]) + 2, 100)
    head = f"  {'replica group':<{w}}{'requests':>9}{'TTFT p50':>10}{'p90':>9}{'TPOT p50':>10}{'p90':>8}"
    has_slo = "slo_attainment" in g.columns
    if has_slo:
        head += f"{'SLO met':>9}"
    lines = ["per replica group (ms):", head]
    for r in g.itertuples(index=False):
        line = (f"  {str(r.group)[:w - 1]:<{w}}{r.requests:>9,}{_num_or_dash(r.ttft_p50_ms, '{:.1f}'):>10}"
                f"{_num_or_dash(r.ttft_p90_ms, '{:.1f}'):>9}{_num_or_dash(r.tpot_p50_ms, '{:.2f}'):>10}"
                f"{_num_or_dash(r.tpot_p90_ms, '{:.2f}'):>8}")
        if has_slo:
            line += f"{r.slo_attainment:>9.3f}"
        lines.append(line)
    return "\n".join(lines)
