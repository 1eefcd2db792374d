"""Human-readable outputs: text tables for the terminal, CSV files, PNG plots."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

GROUP_COLS = ["hardware", "model", "strategy", "kv_dtype", "weight_dtype", "parallel", "launch", "output_tokens"]


def fmt_tokens(n: float) -> str:
    """4096 -> '4K', 131072 -> '128K', 1000 -> '1000'."""
    n = int(n)
    if n >= 1024 and n % 1024 == 0:
        return f"{n // 1024}K"
    return str(n)


def fmt_bytes(n: float) -> str:
    for unit, div in (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if abs(n) >= div:
            return f"{n / div:.2f} {unit}"
    return f"{n:.0f} B"


def group_title(key: tuple) -> str:
    hw, model, strategy, kv, wd, par, launch, out = key
    return (f"{model} on {hw} | {strategy} | weights {wd}, KV {kv} | {par} | "
            f"{'CUDA graph' if launch == 'graph' else 'eager'} | {int(out)} output tokens")


def _pivot(g: pd.DataFrame, value: str, fmt: str) -> pd.DataFrame:
    cells = g.assign(cell=[(fmt.format(v) if ok else "oom") for v, ok in zip(g[value], g["fits"])])
    p = cells.pivot(index="context", columns="batch", values="cell")
    p.columns = [f"B={b}" for b in p.columns]
    return p


def run_tables(df: pd.DataFrame) -> str:
    """Per strategy tuple: context x batch tables of TPOT and throughput, with TTFT and max batch."""
    out = []
    for key, g in df.groupby(GROUP_COLS, sort=False, observed=True):
        lead = g.groupby("context").agg(max_batch=("max_batch", "first"), ttft_ms=("ttft_ms", "first"))
        lead["ttft_ms"] = lead["ttft_ms"].map(lambda v: f"{v:,.0f}")
        tp = _pivot(g, "tpot_ms", "{:.2f}")
        th = _pivot(g, "tokens_per_s", "{:,.0f}")
        for t in (tp, th):
            t.index = [fmt_tokens(c) for c in t.index]
        lead.index = [fmt_tokens(c) for c in lead.index]
        out.append(group_title(key))
        out.append("TPOT (ms) per batch size; 'oom' = the batch's KV cache does not fit")
        out.append(pd.concat([lead, tp], axis=1).rename_axis("context").to_string())
        out.append("Decode throughput (tokens/s)")
        out.append(th.rename_axis("context").to_string())
        out.append("")
    return "\n".join(out)


def skipped_text(skipped: Counter) -> str:
    if not skipped:
        return "Skipped: none"
    lines = [f"Skipped {sum(skipped.values())} settings:"]
    for reason, n in skipped.most_common():
        lines.append(f"  {n:6d}  {reason}")
    return "\n".join(lines)


RANK_COLUMNS = ["hardware", "model", "strategy", "kv_dtype", "weight_dtype", "parallel", "batch", "context",
                "tpot_ms", "tokens_per_s", "ttft_ms", "max_batch"]


def ranking_text(ranked: pd.DataFrame, top: int, title: str) -> str:
    if ranked.empty:
        return f"{title}: no setting fits in memory and meets the SLO"
    t = ranked[RANK_COLUMNS].head(top).copy()
    t["context"] = t["context"].map(fmt_tokens)
    for c, f in (("tpot_ms", "{:.2f}"), ("tokens_per_s", "{:,.0f}"), ("ttft_ms", "{:,.0f}")):
        t[c] = t[c].map(f.format)
    return f"{title}\n" + t.to_string(index=False)


def progress_bar(total: int, desc: str, unit: str, enabled: bool = True):
    """Progress on stderr when `enabled` (simulator.progress: a tqdm bar on a terminal, else a line every few
    seconds), else None."""
    from simulator.progress import progress_bar as bar

    return bar(total, desc, unit, enabled)


def write_csv(df: pd.DataFrame, path: Path, progress: bool = False, chunk_rows: int = 100_000) -> None:
    """df.to_csv(path, index=False), written in chunks of rows with a progress bar on a terminal when the
    table is large (the same bytes as one to_csv call)."""
    n = len(df)
    bar = progress_bar(n, f"writing {Path(path).name}", "row", progress and n > 2 * chunk_rows)
    if bar is None:
        df.to_csv(path, index=False)
        return
    with open(path, "w", newline="") as f:
        for a in range(0, n, chunk_rows):
            df.iloc[a:a + chunk_rows].to_csv(f, index=False, header=a == 0)
            bar.update(min(chunk_rows, n - a))
    bar.close()


#: Tuples drawn at most in a sweep's plot (the best by throughput; every tuple is in the CSV)
MAX_PLOT_TUPLES = 12


def write_plot(df: pd.DataFrame, path: Path, title: str, max_groups: int = MAX_PLOT_TUPLES) -> list[str]:
    """The TPOT / throughput figure of a priced scenario. One strategy tuple: one line per batch (solid where
    the batch fits in memory, dotted where it does not). Several tuples: `sweep_plot`. Returns notes about
    what was left out."""
    if df.groupby(GROUP_COLS, sort=False, observed=True).ngroups > 1:
        return sweep_plot(df, path, title, max_groups)
    groups = list(df.groupby(GROUP_COLS, sort=False, observed=True))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(13, 5.2))
    batches = sorted(df["batch"].unique())
    cmap = plt.get_cmap("viridis")
    colors = {b: cmap(i / max(1, len(batches) - 1)) for i, b in enumerate(batches)}
    key, g = groups[0]
    for bsz, gb in g.groupby("batch"):
        gb = gb.sort_values("context")
        x = gb["context"].to_numpy()
        fit = gb["fits"].to_numpy()
        for ax, col in ((axes[0], "tpot_ms"), (axes[1], "tokens_per_s")):
            y = gb[col].to_numpy()
            ax.plot(x, np.where(fit, y, np.nan), "-", color=colors[bsz], marker="o", ms=3,
                    label=f"B={bsz}" if ax is axes[0] else None)
            if (~fit).any():
                ax.plot(x, y, ":", color=colors[bsz], alpha=0.35)
    g1 = g[g["batch"] == g["batch"].min()].sort_values("context")
    axes[0].plot(g1["context"], g1["bw_floor_ms"], "k--", lw=1, label=f"bandwidth floor B={g1['batch'].iloc[0]}")
    axes[0].set_ylabel("TPOT (ms)")
    axes[1].set_ylabel("decode throughput (tokens/s)")
    _context_axes(axes, df)
    axes[0].legend(fontsize=7, ncol=2)
    fig.suptitle(f"{title}\n{group_title(key)}\n(dotted: batch does not fit in memory)", fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return []


def _context_axes(axes, df: pd.DataFrame) -> None:
    from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator, NullLocator

    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_xlabel("context (tokens)")
        ticks = sorted(df["context"].unique())
        ax.set_xticks(ticks, [fmt_tokens(t) for t in ticks])
        ax.grid(True, alpha=0.3)
        ax.set_yscale("log")
        lo, hi = ax.get_ylim()
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: _num(v)))
        if hi / max(lo, 1e-300) < 10:  # less than a decade: evenly spaced ticks, all labelled
            ax.yaxis.set_major_locator(FixedLocator([t for t in MaxNLocator(6).tick_values(lo, hi) if lo <= t <= hi]))
            ax.yaxis.set_minor_locator(NullLocator())
        else:
            ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: _num(v) if f"{v:e}"[0] in "235" else ""))
        ax.xaxis.set_minor_locator(NullLocator())


def _num(v: float) -> str:
    """Axis numbers: 12,000 / 300 / 12.5 / 0.25 (no exponent notation)."""
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"


def _tuple_labels(keys: list[tuple]) -> list[str]:
    """Short labels for strategy tuples: only the fields (of GROUP_COLS) that differ between them."""
    names = ["", "", "", "KV ", "W ", "", "", "out "]
    varying = [i for i in range(len(GROUP_COLS)) if len({k[i] for k in keys}) > 1] or [0, 1]
    out = []
    for k in keys:
        parts = []
        for i in varying:
            v = k[i]
            if GROUP_COLS[i] == "launch":
                v = "CUDA graph" if v == "graph" else v
            parts.append(f"{names[i]}{fmt_tokens(v) if GROUP_COLS[i] == 'output_tokens' else v}")
        out.append(" | ".join(parts))
    return out


def sweep_plot(df: pd.DataFrame, path: Path, title: str, max_groups: int = MAX_PLOT_TUPLES) -> list[str]:
    """Several strategy tuples in one readable figure: per tuple, TPOT at the smallest batch (latency) and
    the best decode throughput over the batches that fit in memory (capacity), versus context. Only the
    `max_groups` tuples with the highest mean best throughput are drawn (named in the legend by what
    differs between them, placed beside the axes); the rest are counted in a note and are in the CSV.
    Colors distinguish tuples; line styles are never used for "does not fit" (those points are left out)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    notes = []
    b_min = df["batch"].min()
    fit = df[df["fits"]]
    best = (fit.groupby(GROUP_COLS + ["context"], sort=False, observed=True)["tokens_per_s"].max()
            .reset_index())
    score = best.groupby(GROUP_COLS, sort=False, observed=True)["tokens_per_s"].mean()
    n_all = df.groupby(GROUP_COLS, sort=False, observed=True).ngroups
    keys = list(score.sort_values(ascending=False, kind="stable").index[:max_groups])
    n_never = n_all - len(score)
    if len(keys) < max_groups and n_never:   # fill up with tuples that fit nowhere (drawn only where they fit)
        rest = df[GROUP_COLS].drop_duplicates()
        have = set(score.index)
        keys += [k for k in map(tuple, rest.itertuples(index=False)) if k not in have][:max_groups - len(keys)]
    if n_all > len(keys):
        notes.append(f"plot shows the {len(keys)} of {n_all} strategy tuples with the highest mean decode "
                     "throughput at the best batch that fits; all are in the CSV")
    if n_never:
        notes.append(f"{n_never} strategy tuples fit no batch in memory at any context")
    labels = _tuple_labels(keys)
    cmap = plt.get_cmap("tab20" if len(keys) > 10 else "tab10")
    markers = "osD^v<>pP*Xh"
    fig, axes = plt.subplots(1, 2, figsize=(16, 5.6))

    def rows_of(frame, k):
        m = np.ones(len(frame), dtype=bool)
        for c, v in zip(GROUP_COLS, k):
            m &= (frame[c] == v).to_numpy()
        return frame[m].sort_values("context")

    for i, (k, lab) in enumerate(zip(keys, labels)):
        color, mk = cmap(i % cmap.N), markers[i % len(markers)]
        g = rows_of(df, k)
        g = g[g["batch"] == b_min]
        if len(g):
            axes[0].plot(g["context"], np.where(g["fits"], g["tpot_ms"], np.nan), "-", color=color, marker=mk,
                         ms=4, lw=1.4, label=lab)
        g = rows_of(best, k)
        if len(g):
            axes[1].plot(g["context"], g["tokens_per_s"], "-", color=color, marker=mk, ms=4, lw=1.4)
    axes[0].set_ylabel(f"TPOT at batch {b_min} (ms)")
    axes[1].set_ylabel("decode throughput at the best batch that fits (tokens/s)")
    _context_axes(axes, df)
    names = {"kv_dtype": "KV", "weight_dtype": "weights", "output_tokens": "output tokens"}
    same = [f"{names.get(c, c)} {fmt_tokens(keys[0][i]) if c == 'output_tokens' else keys[0][i]}"
            for i, c in enumerate(GROUP_COLS) if len({k[i] for k in keys}) == 1]
    fig.legend(*axes[0].get_legend_handles_labels(), loc="center left", bbox_to_anchor=(0.735, 0.5), fontsize=8,
               title="strategy tuple", title_fontsize=8, frameon=False)
    fig.suptitle(title + ("\nevery tuple shown: " + ", ".join(same) if same else "") +
                 "\n(points where the batch does not fit in memory are left out)", fontsize=10)
    fig.tight_layout(rect=(0, 0, 0.73, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return notes
