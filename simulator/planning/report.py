"""What a plan writes: the ranked table (CSV, Parquet), every engine run (CSV), two Pareto plots and a
one-page report (Markdown and HTML) that explains the winner, the runner-up and why the others lost.

Pareto plots (one point per engine run; filled where the run met the SLO, hollow where it did not):
  throughput   output tokens per second per GPU vs p90 TPOT: what a GPU delivers at what decode latency
  cost         USD per million output tokens at the run's throughput (GPUs x price / tokens per hour) vs p90
               end-to-end latency
The front (black steps) joins the runs that met the SLO and that no other passing run beats on both axes.
"""
from __future__ import annotations

import html
import math
import re
from pathlib import Path

import numpy as np

from simulator.planning.study import PlanResult, label_of
from simulator.report import _num

TABLE_COLUMNS = ["rank", "status", "hardware", "model", "strategy", "parallel", "kv_dtype", "weight_dtype",
                 "gpus_per_replica", "usd_per_gpu_hour", "capacity_req_s", "replicas", "gpus", "usd_per_hour",
                 "usd_per_mtok", "ttft_p90_ms", "tpot_p90_ms", "e2e_p90_ms", "output_tokens_per_s_per_gpu",
                 "engine_runs", "screen_max_batch", "screen_tpot_b1_ms", "screen_rate_ub", "screen_rate_est",
                 "reason"]


def _fmt(v, spec: str = "{:,.2f}") -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "–"
    return spec.format(v)


def _short(row) -> str:
    return f"{row['model']} · {row['hardware']} · {row['parallel']} · {row['strategy']}"


# ---- text for the terminal ------------------------------------------------------------------------------
def summary_text(res: PlanResult, top: int = 10) -> str:
    t = res.table
    lines = [f"plan {res.scenario}: {len(t)} candidates ({sum(res.skipped.values())} more tuples refused), "
             f"{res.engine_runs} engine runs in {res.wall_s:.0f} s" + (" (--quick)" if res.quick else "")]
    counts = t["status"].value_counts()
    lines.append("  " + ", ".join(f"{counts.get(s, 0)} {w}" for s, w in (
        ("ok", "meet the SLO"), ("slo", "miss the SLO"), ("memory", "do not fit in memory"),
        ("cost", "pruned on cost (cannot beat the best)"))) + (
        f", {counts.get('budget', 0)} cost more than the budget for one replica" if counts.get("budget", 0) else ""))
    ok = t[t["status"] == "ok"].head(top)
    if ok.empty:
        what = ("meets the SLO within the budget" if counts.get("budget", 0) else "meets the SLO")
        lines.append(f"nothing fits: no candidate {what}; see report.md for why each failed")
        return "\n".join(lines)
    cols = ["rank", "hardware", "model", "strategy", "parallel", "capacity_req_s", "engine_runs"]
    cols += ["replicas", "gpus", "usd_per_hour"] if res.objective in ("target", "budget") else []
    cols += ["served_req_s"] if res.objective == "budget" else []
    cols += ["usd_per_mtok", "ttft_p90_ms", "tpot_p90_ms"]
    show = ok[[c for c in cols if c in ok]].copy()
    for c, f in (("capacity_req_s", "{:.3g}"), ("usd_per_hour", "{:,.2f}"), ("usd_per_mtok", "{:,.3f}"),
                 ("ttft_p90_ms", "{:,.0f}"), ("tpot_p90_ms", "{:.1f}"), ("replicas", "{:.0f}"), ("gpus", "{:.0f}"),
                 ("served_req_s", "{:.3g}")):
        if c in show:
            show[c] = show[c].map(lambda v, f=f: _fmt(v, f))
    lines.append(show.to_string(index=False))
    w = res.winner
    lines.append(f"winner: {label_of(w)}" + (f" — {w['gpus']:.0f} GPUs, ${w['usd_per_hour']:,.2f}/h"
                                              if res.objective == "target" else ""))
    return "\n".join(lines)


# ---- plots ---------------------------------------------------------------------------------------------
def _pareto_mask(x: np.ndarray, y: np.ndarray, x_low: bool, y_high: bool) -> np.ndarray:
    """Points no other point beats on both axes (x lower/higher is better per x_low, y per y_high)."""
    xs = x if x_low else -x
    ys = -y if y_high else y
    order = np.lexsort((ys, xs))
    best = np.inf
    keep = np.zeros(len(x), dtype=bool)
    for i in order:
        if ys[i] < best:
            keep[i] = True
            best = ys[i]
    return keep


def write_plots(res: PlanResult, folder: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = res.runs
    if runs.empty:
        return []
    t = res.table.set_index("id")
    runs = runs.assign(
        tput_gpu=runs["sim_output_tokens_per_s"] / runs["gpus"],
        usd_mtok=runs["gpus"] * runs["usd_per_gpu_hour"] / (3600.0 * runs["sim_output_tokens_per_s"]) * 1e6,
        e2e_s=runs["sim_e2e_p90_ms"] / 1e3)
    ranked_ids = [i for i in res.table["id"] if i in set(runs["id"])]
    shown = ranked_ids[:10]
    cmap = plt.get_cmap("tab10")
    paths = []
    limits = res.plan.slo_limits
    specs = [("pareto_throughput.png", "sim_tpot_p90_ms", "tput_gpu", "p90 TPOT (ms)",
              "output tokens / s per GPU", True, True, limits.get("tpot_p90_ms")),
             ("pareto_cost.png", "e2e_s", "usd_mtok", "p90 end-to-end latency (s)",
              "USD per million output tokens", True, False,
              limits.get("e2e_p90_ms", None) and limits["e2e_p90_ms"] / 1e3)]
    for name, xc, yc, xl, yl, x_low, y_high, lim in specs:
        fig, ax = plt.subplots(figsize=(11, 6))
        d = runs[np.isfinite(runs[xc]) & np.isfinite(runs[yc]) & (runs[yc] > 0)]
        other = d[~d["id"].isin(shown)]
        if not other.empty:
            ax.scatter(other[xc], other[yc], s=14, facecolors="none", edgecolors="0.7", lw=0.8,
                       label=f"other candidates ({other['id'].nunique()})")
        for k, i in enumerate(shown):
            g = d[d["id"] == i]
            if g.empty:
                continue
            col = cmap(k % 10)
            row = t.loc[i]
            lab = f"#{int(row['rank'])} {_short(row)}"
            ax.scatter(g.loc[g["passed"], xc], g.loc[g["passed"], yc], s=36, color=col, label=lab, zorder=3)
            ax.scatter(g.loc[~g["passed"], xc], g.loc[~g["passed"], yc], s=36, facecolors="none", edgecolors=col,
                       lw=1.2, zorder=3)
        ok = d[d["passed"]]
        if len(ok) > 1:
            m = _pareto_mask(ok[xc].to_numpy(), ok[yc].to_numpy(), x_low, y_high)
            f = ok[m].sort_values(xc)
            ax.step(f[xc], f[yc], where="post", color="k", lw=1.2, label="Pareto front (runs within the SLO)",
                    zorder=2)
        if lim:
            ax.axvline(lim, color="r", ls="--", lw=1, label="SLO limit")
        ax.set_xscale("log")
        ax.set_yscale("log")
        from matplotlib.ticker import FuncFormatter

        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_formatter(FuncFormatter(lambda v, _: _num(v)))
            axis.set_minor_formatter(FuncFormatter(lambda v, _: _num(v) if f"{v:e}"[0] in "235" else ""))
        ax.set_xlabel(xl)
        ax.set_ylabel(yl)
        ax.grid(True, which="both", alpha=0.25)
        ax.legend(fontsize=7.5, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
        ax.set_title(f"{res.scenario}: every engine run (filled: met the SLO; hollow: missed it)", fontsize=10)
        fig.tight_layout()
        p = folder / name
        fig.savefig(p, dpi=110)
        plt.close(fig)
        paths.append(p)
    return paths


# ---- the one-page report ---------------------------------------------------------------------------------
def _slo_text(plan) -> str:
    parts = []
    for k, v in plan.slo_limits.items():
        m, p, _ = k.split("_")
        parts.append(f"{p} {m.upper()} ≤ {v:g} ms")
    if plan.goodput:
        g = plan.goodput
        lim = ", ".join(f"{k[:-3].upper()} ≤ {v:g} ms" for k, v in g["slo"].items())
        parts.append(f"≥ {100 * g['min_attainment']:.0f} % of the requests within {lim} (goodput)")
    return "; ".join(parts)


def _why_won(res: PlanResult, w, r) -> str:
    if r is None:
        return "It is the only candidate that meets the SLO."
    if res.objective == "target":
        d = r["usd_per_hour"] / w["usd_per_hour"] - 1.0
        why = (f"It needs {w['gpus']:.0f} GPUs (${w['usd_per_hour']:,.2f}/h) for {res.plan.target_rate:g} req/s where the "
               f"runner-up needs {r['gpus']:.0f} (${r['usd_per_hour']:,.2f}/h): "
               + (f"{100 * d:.0f} % cheaper." if d > 0.005 else "the same cost; it ranks first on its lower "
                  "cost per token at capacity."))
    elif res.objective == "budget":
        why = (f"Within ${res.plan.budget_usd_h:,.0f}/h it serves {w['served_req_s']:.3g} req/s "
               f"({w['replicas']:.0f} replicas) against the runner-up's {r['served_req_s']:.3g} req/s.")
    else:
        why = (f"It costs ${w['usd_per_mtok']:,.3f} per million output tokens at capacity against the runner-up's "
               f"${r['usd_per_mtok']:,.3f}.")
    per_gpu_w = w["capacity_req_s"] / w["gpus_per_replica"]
    per_gpu_r = r["capacity_req_s"] / r["gpus_per_replica"]
    why += (f" Per GPU it serves {per_gpu_w:.3g} req/s (runner-up {per_gpu_r:.3g}) at "
            f"${w['usd_per_gpu_hour']:.2f} per GPU-hour (runner-up ${r['usd_per_gpu_hour']:.2f}).")
    return why


def _candidate_para(res: PlanResult, row, title: str) -> list[str]:
    out = [f"## {title}: {label_of(row)}", ""]
    if res.objective == "target":
        out.append(f"**{row['replicas']:.0f} replicas × {row['gpus_per_replica']:.0f} GPUs = {row['gpus']:.0f} GPUs, "
                   f"${row['usd_per_hour']:,.2f} per hour, ${row['usd_per_mtok']:,.3f} per million output tokens** "
                   f"at {res.plan.target_rate:g} req/s.")
    elif res.objective == "budget":
        out.append(f"**{row['replicas']:.0f} replicas ({row['gpus']:.0f} GPUs, ${row['usd_per_hour']:,.2f}/h) serve "
                   f"{row['served_req_s']:.3g} req/s.**")
    else:
        out.append(f"**${row['usd_per_mtok']:,.3f} per million output tokens** at capacity.")
    floor = " (a floor: every rate tried passed)" if row.get("capacity_is_floor") is True else ""
    out.append(f"One replica serves {row['capacity_req_s']:.3g} req/s within the SLO{floor}: at that rate p90 TTFT "
               f"{_fmt(row['ttft_p90_ms'], '{:,.0f}')} ms, p90 TPOT {_fmt(row['tpot_p90_ms'], '{:.1f}')} ms, "
               f"{_fmt(row['output_tokens_per_s_per_gpu'], '{:,.0f}')} output tokens/s per GPU "
               f"({row['engine_runs']:.0f} engine runs). Analytic screen: up to {row['screen_max_batch']:.0f} sequences "
               f"of the mean context fit per replica; a lone sequence decodes at "
               f"{_fmt(row['screen_tpot_b1_ms'], '{:.1f}')} ms per token.")
    caveat = _accuracy_caveat(row)
    if caveat:
        out.append(caveat)
    out.append("")
    return out


#: strategy values that change which tokens the model attends to (sparse attention, KV compression)
_LOSSY = ("nsa", "dsa", "quest", "lserve", "streaming", "specattn", "streamingllm", "snapkv", "snapstream")


def _accuracy_caveat(row) -> str:
    """A sentence when the candidate changes the model's outputs: a performance model prices time only."""
    parts = [p.split("(")[0] for p in str(row.get("strategy", "")).split("+")]
    lossy = [p for p in parts if p in _LOSSY]
    low = [f"{what} {row[col]}" for col, what in (("kv_dtype", "KV"), ("weight_dtype", "weights"))
           if str(row.get(col, "")) in ("fp8", "int8", "int4", "fp4")]
    if not lossy and not low:
        return ""
    what = ", ".join([f"`{p}`" for p in lossy] + low)
    return (f"**Accuracy is not modeled.** {what} change what the model computes; sparsesim prices time, not output "
            "quality: check this candidate's accuracy on your workload before choosing it.")


def report_markdown(res: PlanResult, images: list[str]) -> str:
    t, wl, plan, pr = res.table, res.workload, res.plan, res.prices
    src = plan.serving.source
    what = (f"trace `{Path(str(src.trace)).name}`" if src.kind == "trace" else
            f"{src.kind} arrivals at {src.rate:g} req/s")
    lines = [f"# Capacity plan: {res.scenario}", ""]
    lines.append(f"**Workload.** {wl.requests} requests of the {what} (mean prompt {wl.mean_input:,.0f} tokens, "
                 f"p90 {wl.input_pct[90]:,.0f}; mean output {wl.mean_output:,.0f} tokens; recorded rate "
                 f"{wl.native_rate:.3g} req/s), replayed on one replica per engine run with arrivals compressed "
                 "or stretched to each rate tried.")
    if res.objective == "target":
        tgt = f"serve {plan.target_rate:g} req/s at the lowest cost per hour"
    elif res.objective == "budget":
        tgt = f"serve the most requests within ${plan.budget_usd_h:,.0f} per hour"
    else:
        tgt = "the lowest cost per million output tokens"
    lines.append(f"**SLO.** {_slo_text(plan)}. **Goal:** {tgt}.")
    lines.append(f"**Prices.** {pr.provider}, {pr.date} ({pr.url}), USD per GPU-hour: "
                 + ", ".join(f"{h} {pr.of(h):.2f}" for h in sorted(set(t["hardware"])))
                 + (f" (overridden: {', '.join(pr.overridden)})" if pr.overridden else "") + ".")
    lines.append("")
    w, r = res.winner, res.runner_up
    if w is None:
        lines += ["## No candidate meets the SLO", "",
                  "Every candidate was pruned or failed; the reasons are below.", ""]
    else:
        lines += _candidate_para(res, w, "Winner")
        lines.append(f"**Why it wins.** {_why_won(res, w, r)}")
        lines.append("")
        if r is not None:
            lines += _candidate_para(res, r, "Runner-up")
    lines += ["## Why the others lost", ""]
    losers = t.iloc[2:] if w is not None else t
    for status, title in (("ok", "Meet the SLO but cost more"), ("budget", "One replica costs more than the budget"),
                          ("cost", "Pruned on cost (branch and bound)"),
                          ("slo", "Miss the SLO"), ("memory", "Do not fit in memory")):
        g = losers[losers["status"] == status]
        if g.empty:
            continue
        lines.append(f"**{title} ({len(g)}).**")
        lines.append("")
        for _, row in g.head(12).iterrows():
            if status == "ok" and w is not None and res.objective == "target":
                why = (f"${row['usd_per_hour']:,.2f}/h for {row['gpus']:.0f} GPUs "
                       f"({row['usd_per_hour'] / w['usd_per_hour']:.2f}× the winner)")
            elif status == "ok":
                why = f"${row['usd_per_mtok']:,.3f} per million output tokens"
            else:
                why = row["reason"]
            lines.append(f"- {_short(row)}: {why}")
        if len(g) > 12:
            lines.append(f"- … and {len(g) - 12} more (ranked.csv)")
        lines.append("")
    if res.skipped:
        lines.append(f"**Refused before screening ({sum(res.skipped.values())} tuples).** "
                     + "; ".join(f"{n} × {k}" for k, n in res.skipped.most_common()))
        lines.append("")
    if res.alternatives and w is not None:
        lines += ["## Price sensitivity", ""]
        lines.append("The winner among the candidates that meet the SLO under the other public price lists of "
                     "hwmodels/prices.yaml that price all of them:")
        lines.append("")
        for alt, lab, score in res.alternatives:
            unit = {"target": f"${score:,.2f}/h", "budget": f"{-score:.3g} req/s",
                    "usd_per_mtok": f"${score:,.3f}/Mtok"}[res.objective]
            lines.append(f"- {alt.provider}, {alt.date}: {lab} ({unit})"
                         + (" — the same winner" if lab == label_of(w) else " — **a different winner**"))
        lines.append("")
    if images:
        lines += ["## Pareto plots", ""]
        lines += [f"![{Path(p).stem}]({Path(p).name})" for p in images]
        lines.append("")
    n_screened = int((t["engine_runs"] == 0).sum())
    per = t.loc[t["engine_runs"] > 0, "engine_runs"]
    lines += ["## How it was computed", ""]
    lines.append(f"{len(t)} candidates (the scenario's strategy tuples that are not refused); {n_screened} settled "
                 f"without the engine (analytic memory/SLO screen, or pruned on cost); {len(per)} searched with "
                 f"the engine in {res.engine_runs} runs ({per.min() if len(per) else 0}–{per.max() if len(per) else 0}"
                 f" per candidate, tolerance {100 * plan.search.tolerance:.0f} %), {res.wall_s:.0f} s in all"
                 + (" (--quick)" if res.quick else "") + ". A replica's capacity is the highest request rate at which "
                 "one replica met every limit (simulator.planning.search); replicas for the target = ceil(target / "
                 "capacity), assuming the router spreads load evenly (least outstanding tokens). All numbers come "
                 "from the analytic Op-table pricer and the serving engine with their documented assumptions.")
    lines.append("")
    return "\n".join(lines)


_INLINE = [(re.compile(r"\*\*(.+?)\*\*"), r"<b>\1</b>"), (re.compile(r"`(.+?)`"), r"<code>\1</code>")]


def _inline(s: str) -> str:
    s = html.escape(s, quote=False)
    for rx, rep in _INLINE:
        s = rx.sub(rep, s)
    return re.sub(r"(https?://[^\s)]+)", r'<a href="\1">\1</a>', s)


def markdown_to_html(md: str, title: str) -> str:
    """The report's Markdown (headings, paragraphs, lists, images) as one self-contained HTML page."""
    out = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title><style>"
           "body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;line-height:1.45}"
           "img{max-width:100%;border:1px solid #ddd;margin:.5rem 0}code{background:#f3f3f3;padding:0 .2rem}"
           "h1{font-size:1.6rem}h2{font-size:1.25rem;margin-top:1.6rem;border-bottom:1px solid #eee}"
           "</style></head><body>"]
    in_list = False
    for line in md.splitlines():
        if line.startswith("- "):
            if not in_list:
                out.append("<ul>")
                in_list = True
            out.append(f"<li>{_inline(line[2:])}</li>")
            continue
        if in_list:
            out.append("</ul>")
            in_list = False
        if not line.strip():
            continue
        m = re.match(r"!\[(.*?)\]\((.*?)\)", line)
        if m:
            out.append(f"<img alt='{html.escape(m.group(1))}' src='{html.escape(m.group(2))}'>")
        elif line.startswith("## "):
            out.append(f"<h2>{_inline(line[3:])}</h2>")
        elif line.startswith("# "):
            out.append(f"<h1>{_inline(line[2:])}</h1>")
        else:
            out.append(f"<p>{_inline(line)}</p>")
    if in_list:
        out.append("</ul>")
    out.append("</body></html>")
    return "\n".join(out)


def write_outputs(res: PlanResult, out) -> list[str]:
    """Every file of a plan into the OutputDir `out`; returns the 'wrote ...' lines."""
    lines = []
    table = res.table[[c for c in TABLE_COLUMNS if c in res.table] +
                      [c for c in res.table.columns if c not in TABLE_COLUMNS and c != "id"]]
    p = out.file("ranked.csv")
    table.to_csv(p, index=False)
    lines.append(f"wrote {p}  ({len(table)} candidates, best first)")
    p = out.file("ranked.parquet")
    table.to_parquet(p, index=False)
    lines.append(f"wrote {p}")
    p = out.file("runs.csv")
    res.runs.to_csv(p, index=False)
    lines.append(f"wrote {p}  ({len(res.runs)} engine runs)")
    images = []
    for path in write_plots(res, out.path):
        out.file(path.name)
        images.append(str(path))
        lines.append(f"wrote {path}")
    md = report_markdown(res, images)
    p = out.file("report.md")
    p.write_text(md)
    lines.append(f"wrote {p}")
    p = out.file("report.html")
    p.write_text(markdown_to_html(md, f"Capacity plan: {res.scenario}"))
    lines.append(f"wrote {p}")
    return lines
