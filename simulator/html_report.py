"""One self-contained HTML report per `simulate`, `plan` and `compare` run (--html): interactive Plotly figures with
Plotly's JavaScript inlined once (no server, no network), a table of the figures, and the provenance of the numbers.

    simulate_report(path, sc, cfg, res, trace)     latency CDFs, timeline, a decode step's per-op breakdown
    plan_report(path, sc, res)                     Pareto: output tokens/s per GPU vs tokens/s per user; candidates
    compare_report(path, ...)                      measured vs simulated CDFs, per-request scatter, error table

Every plot is a `<div class="plotly-graph-div">` drawn by the inlined plotly.js when the file is opened; the
provenance section lists the calibration of each device, the engine runtime profile and its notes (what it assumes
or does not know), the scenario and trace files, and the command line.
"""
from __future__ import annotations

import html
import math
import sys
from pathlib import Path

import numpy as np

MAX_POINTS = 5000     # points per timeline series (longer runs are binned)


def _plotly():
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    return go, make_subplots


def _div(fig) -> str:
    import plotly.io as pio

    return pio.to_html(fig, include_plotlyjs=False, full_html=False, config={"displaylogo": False})


def _esc(x) -> str:
    return html.escape(str(x))


def _table(rows: list[dict], cols: list[str] | None = None) -> str:
    if not rows:
        return "<p>(none)</p>"
    cols = cols or list(rows[0])

    def cell(v):
        if isinstance(v, float):
            if not math.isfinite(v):
                return "-"
            return f"{v:,.4g}" if abs(v) < 1e5 else f"{v:,.0f}"
        return _esc(v)
    head = "".join(f"<th>{_esc(c)}</th>" for c in cols)
    body = "".join("<tr>" + "".join(f"<td>{cell(r.get(c))}</td>" for c in cols) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _page(title: str, sections: list[tuple[str, str]], provenance: list[str]) -> str:
    from plotly.offline import get_plotlyjs

    body = "\n".join(f"<section><h2>{_esc(h)}</h2>\n{content}</section>" for h, content in sections)
    prov = "".join(f"<li>{_esc(x)}</li>" for x in provenance)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{_esc(title)}</title>
<style>body{{font-family:sans-serif;margin:1.5em;max-width:1400px}}table{{border-collapse:collapse;font-size:13px}}
td,th{{border:1px solid #ccc;padding:2px 6px;text-align:right}}th{{background:#f3f3f3}}h2{{margin-top:1.6em}}
li{{font-size:13px;margin:2px 0}}</style>
<script type="text/javascript">{get_plotlyjs()}</script></head>
<body><h1>{_esc(title)}</h1>
{body}
<section><h2>Provenance</h2><ul class="provenance">{prov}</ul></section>
</body></html>
"""


def _write(path, text: str) -> None:
    from hwmodels.errors import SparsesimError

    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as e:
        raise SparsesimError(f"cannot be written ({e.strerror or e})", file=str(path)) from None


def _cdf_trace(go, x, name, color, dash=None, show=True):
    x = np.sort(np.asarray(x, dtype=np.float64))
    x = x[np.isfinite(x) & (x > 0)]
    if len(x) > MAX_POINTS:
        x = x[np.linspace(0, len(x) - 1, MAX_POINTS).astype(int)]
    y = np.arange(1, len(x) + 1) / max(len(x), 1)
    return go.Scatter(x=x, y=y, mode="lines", name=name, line={"color": color, "dash": dash}, legendgroup=name,
                      showlegend=show)


def latency_cdf_figure(series: dict, slo: dict | None = None):
    """series: label -> {ttft, tpot, itl, e2e: samples in ms}; one panel per metric."""
    go, make_subplots = _plotly()
    keys = [("ttft", "TTFT"), ("tpot", "TPOT"), ("itl", "ITL"), ("e2e", "end-to-end")]
    keys = [k for k in keys if any(len(np.asarray(s.get(k[0], []))) for s in series.values())]
    fig = make_subplots(rows=1, cols=len(keys), subplot_titles=[f"{lbl} (ms)" for _, lbl in keys])
    colors = ["black", "#1f77b4", "#d62728", "#2ca02c"]
    for j, (label, s) in enumerate(series.items()):
        for i, (k, _) in enumerate(keys):
            fig.add_trace(_cdf_trace(go, s.get(k, []), label, colors[j % 4], "dash" if j else None, show=i == 0),
                          row=1, col=i + 1)
            lim = (slo or {}).get(f"{k}_ms")
            if lim and j == 0:
                fig.add_vline(x=lim, line_dash="dot", line_color="red", row=1, col=i + 1)
    for i, (k, _) in enumerate(keys):
        both = np.concatenate([np.asarray(sr.get(k, []), dtype=np.float64) for sr in series.values()])
        both = both[np.isfinite(both) & (both > 0)]
        if len(both) and both.max() > 20 * both.min():
            fig.update_xaxes(type="log", row=1, col=i + 1)
    fig.update_yaxes(range=[0, 1.02], title_text="fraction", row=1, col=1)
    fig.update_layout(height=380, margin={"t": 40, "b": 40})
    return fig


def timeline_figure(ts):
    """Running batch, waiting queue and KV blocks in use over time (replica 0 and the sum over replicas)."""
    go, make_subplots = _plotly()
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, subplot_titles=["running requests", "waiting requests",
                                                                          "KV blocks in use"])
    if ts is not None and len(ts):
        for rep in sorted(ts["replica"].unique())[:8]:
            d = ts[ts["replica"] == rep]
            if len(d) > MAX_POINTS:
                d = d.iloc[np.linspace(0, len(d) - 1, MAX_POINTS).astype(int)]
            for row, col in ((1, "running"), (2, "waiting"), (3, "kv_used_blocks")):
                fig.add_trace(go.Scatter(x=d["t_s"], y=d[col], mode="lines", line={"shape": "hv"},
                                         name=f"replica {int(rep)}", legendgroup=str(rep), showlegend=row == 1),
                              row=row, col=1)
    fig.update_xaxes(title_text="time (s)", row=3, col=1)
    fig.update_layout(height=560, margin={"t": 40, "b": 40})
    return fig


def step_breakdown(combo, batch: int, context: int):
    """(figure, rows): one decode step's op times at `batch` requests of `context` tokens under `combo` (the op
    model: simulator.pricing.price_combo)."""
    from simulator.pricing import price_combo

    go, _ = _plotly()
    _, bd = price_combo(combo, np.array([batch]), np.array([context]), np.array([1]), breakdown=True)
    bd = bd.groupby(["op", "kind", "bound"], as_index=False)["time_ms"].sum().sort_values("time_ms")
    fig = go.Figure()
    for kind, d in bd.groupby("kind", sort=False):
        fig.add_trace(go.Bar(y=d["op"], x=d["time_ms"], orientation="h", name=str(kind),
                             customdata=d["bound"], hovertemplate="%{y}: %{x:.4f} ms (%{customdata}-bound)"))
    fig.update_layout(barmode="stack", height=max(300, 22 * len(bd) + 120), xaxis_title="ms per step",
                      margin={"l": 220, "t": 30}, title=f"decode step, batch {batch}, context {context:,} tokens")
    return fig, bd.sort_values("time_ms", ascending=False).to_dict(orient="records")


def _provenance(cfg=None, hardware=(), extra=()) -> list[str]:
    out = [f"command: sparsesim {' '.join(sys.argv[1:])}"] if sys.argv and sys.argv[0].endswith("sparsesim") else []
    for hw in {h.file: h for h in hardware}.values():
        out.append(f"calibration: {hw.name}: {hw.calibration_text()}")
    if cfg is not None:
        rt = cfg.runtime
        out.append(f"engine runtime profile: {cfg.engine}" + (f" ({rt.file})" if rt is not None and rt.file else ""))
        if rt is not None:
            for name, src in rt.sources:
                out.append(f"profile {name}: {src}")
            for n in rt.notes:
                out.append(f"profile note (unknown / assumed): {n}")
        for g in cfg.groups:
            c = g.combo
            out.append(f"replica group: {g.count} x {c.hardware.name} ({c.hardware.file}), {c.model.name} "
                       f"({c.model.file}), {c.strategy_label()}, tp {c.tp}")
    out.extend(extra)
    return out


def simulate_report(path, sc, cfg, res, trace) -> None:
    """`sparsesim simulate --html`."""
    df = res.requests
    done = np.isfinite(df["e2e_s"].to_numpy(float))
    from simulator.engine.results import itl_samples

    gaps, w = itl_samples(res.engine)
    s = {"ttft": df["ttft_s"].to_numpy()[done] * 1e3, "tpot": df["tpot_s"].to_numpy()[done] * 1e3,
         "e2e": df["e2e_s"].to_numpy()[done] * 1e3, "itl": np.repeat(gaps, w.astype(int))[:200_000] * 1e3}
    summary = [{"figure": k, "value": v} for k, v in res.summary.items() if isinstance(v, (int, float))]
    sections = [("Summary", _table(summary)), ("Latency CDFs", _div(latency_cdf_figure({"simulated": s}, cfg.slo))),
                ("Timeline", _div(timeline_figure(res.timeseries)))]
    g = cfg.groups[0]
    b = max(1, int(round(res.summary.get("mean_running", 1) or 1)))
    ctx = int(np.nanmean(trace.input_tokens + trace.output_tokens / 2)) if len(trace) else 1024
    ctx = max(1, min(ctx, g.combo.model.max_context))
    fig, _ = step_breakdown(g.combo, b, ctx)
    sections.append(("Per-op breakdown of a step", f"<p>A decode step of replica group 0 at the run's mean running "
                     f"batch ({b}) and mean context ({ctx:,} tokens), priced by the op model (device time; the engine "
                     "profile's host time is not in it).</p>" + _div(fig)))
    prov = _provenance(cfg, [x.combo.hardware for x in cfg.groups],
                       [f"scenario: {sc.name} ({sc.file})", f"requests: {trace.name} ({trace.source})",
                        f"seed: {res.seed}"] + [f"note: {n}" for n in res.notes])
    _write(path, _page(f"sparsesim simulate: {sc.name}", sections, prov))


def plan_report(path, sc, res) -> None:
    """`sparsesim plan --html`: Pareto of output tokens/s per GPU against tokens/s per user over every engine run."""
    go, _ = _plotly()
    runs = res.runs
    fig = go.Figure()
    if not runs.empty:
        d = runs.assign(tput_gpu=runs["sim_output_tokens_per_s"] / runs["gpus"],
                        per_user=1e3 / runs["sim_tpot_p90_ms"])
        d = d[np.isfinite(d["tput_gpu"]) & np.isfinite(d["per_user"])]
        t = res.table.set_index("id")
        for i, g in d.groupby("id", sort=False):
            r = t.loc[i] if i in t.index else None
            name = (f"#{i} {r['model']} {r['hardware']} {r['parallel']} {r['strategy']}" if r is not None and
                    {"model", "hardware", "parallel", "strategy"} <= set(t.columns) else f"#{i}")
            fig.add_trace(go.Scatter(x=g["per_user"], y=g["tput_gpu"], mode="markers", name=name[:60],
                                     marker={"symbol": ["circle" if p else "circle-open" for p in g["passed"]]}))
        ok = d[d["passed"]].sort_values("per_user", ascending=False)
        if len(ok):
            front, best = [], -np.inf
            for _, r in ok.iterrows():
                if r["tput_gpu"] > best:
                    front.append(r)
                    best = r["tput_gpu"]
            fig.add_trace(go.Scatter(x=[r["per_user"] for r in front], y=[r["tput_gpu"] for r in front],
                                     mode="lines", line={"color": "black", "shape": "hv"}, name="Pareto front (in SLO)"))
    fig.update_layout(height=560, xaxis_title="output tokens/s per user (1000 / p90 TPOT ms)",
                      yaxis_title="output tokens/s per GPU", xaxis_type="log", yaxis_type="log")
    cols = [c for c in ("rank", "id", "hardware", "model", "parallel", "strategy", "status", "gpus", "capacity_req_s", "usd_per_mtok", "ttft_p90_ms",
                        "tpot_p90_ms", "output_tokens_per_s_per_gpu", "reason") if c in res.table.columns]
    sections = [("Pareto: throughput per GPU vs tokens/s per user",
                 "<p>Every engine run of the capacity search (filled: within the SLO; open: outside).</p>" + _div(fig)),
                ("Candidates", _table(res.table[cols].head(200).to_dict(orient="records"), cols))]
    from simulator.planning.report import summary_text

    prov = _provenance(None, sc.hardware, [f"scenario: {sc.name} ({sc.file})"] +
                       [f"plan: {line}" for line in summary_text(res).splitlines() if line.strip()][:40])
    _write(path, _page(f"sparsesim plan: {sc.name}", sections, prov))


def compare_report(path, *, title, run, res, rows, meas_ms, sim_ms, sc, how, fit=None) -> None:
    """`sparsesim compare --html`."""
    go, make_subplots = _plotly()
    cfg = sc.serving
    shown = [dict(r, error=f"{r['error']:+.1%}" if math.isfinite(r["error"]) else "-") for r in rows]
    sections = [("Measured vs simulated", _table(shown, ["metric", "stat", "unit", "measured", "simulated", "error"])),
                ("Latency CDFs", _div(latency_cdf_figure({"measured": meas_ms, "simulated": sim_ms}, cfg.slo)))]
    fig = make_subplots(rows=1, cols=2, subplot_titles=["TTFT (ms)", "end-to-end (ms)"])
    for i, k in enumerate(("ttft", "e2e")):
        m, s = np.asarray(meas_ms[k]), np.asarray(sim_ms[k])
        fig.add_trace(go.Scatter(x=m, y=s, mode="markers", name=k, text=[f"request {j}" for j in range(len(m))]),
                      row=1, col=i + 1)
        ok = np.isfinite(m) & np.isfinite(s)
        if ok.any():
            lo, hi = float(min(m[ok].min(), s[ok].min())), float(max(m[ok].max(), s[ok].max()))
            fig.add_trace(go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", line={"color": "black"}, showlegend=False),
                          row=1, col=i + 1)
    fig.update_xaxes(title_text="measured")
    fig.update_yaxes(title_text="simulated")
    fig.update_layout(height=420)
    sections.append(("Per request", _div(fig)))
    sections.append(("Simulated timeline", _div(timeline_figure(res.timeseries))))
    g = cfg.groups[0]
    b = max(1, int(round(res.summary.get("mean_running", 1) or 1)))
    ctx = int(np.mean(run.input_tokens[run.ok] + run.output_tokens[run.ok] / 2))
    ctx = max(1, min(ctx, g.combo.model.max_context))
    bfig, _ = step_breakdown(g.combo, b, ctx)
    sections.append(("Per-op breakdown of a step", f"<p>A decode step at the replay's mean running batch ({b}) and "
                     f"the run's mean context ({ctx:,} tokens), op model device time.</p>" + _div(bfig)))
    if fit is not None:
        sections.append((f"Host-time fit ({fit.kind}: {fit.value_s * 1e3:.3f} ms)",
                         f"<p>{_esc(fit.note)}</p><p>Written to {_esc(fit.path)}.</p>"
                         + _table([dict(r, error=f"{r['error']:+.1%}" if math.isfinite(r["error"]) else "-")
                                   for r in fit.held_rows], ["metric", "stat", "measured", "simulated", "error"])))
    prov = _provenance(cfg, [x.combo.hardware for x in cfg.groups],
                       [f"measured run: {run.file} ({run.format}, {run.backend or '?'}, {run.label or '-'})",
                        f"workload: {how}", f"scenario: {sc.name} ({sc.file})"] + [f"note: {n}" for n in res.notes])
    _write(path, _page(title, sections, prov))
