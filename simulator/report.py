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
    for key, g in df.groupby(GROUP_COLS, sort=False):
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


def write_plot(df: pd.DataFrame, path: Path, title: str, max_groups: int = 6) -> list[str]:
    """TPOT and throughput versus context, one line per (strategy tuple, batch); solid where the batch fits
    in memory, dotted where it does not. Returns notes about what was left out."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    notes = []
    groups = list(df.groupby(GROUP_COLS, sort=False))
    if len(groups) > max_groups:
        notes.append(f"plot shows the first {max_groups} of {len(groups)} strategy tuples; all are in the CSV")
        groups = groups[:max_groups]
    fig, axes = plt.subplots(1, 2, figsize=(13, 5.2))
    styles = ["-", "--", "-.", ":"]
    batches = sorted(df["batch"].unique())
    cmap = plt.get_cmap("viridis")
    colors = {b: cmap(i / max(1, len(batches) - 1)) for i, b in enumerate(batches)}
    for gi, (key, g) in enumerate(groups):
        for bsz, gb in g.groupby("batch"):
            gb = gb.sort_values("context")
            x = gb["context"].to_numpy()
            fit = gb["fits"].to_numpy()
            lab = f"B={bsz}" + (f" | {key[2]} {key[5]} {key[3]}" if len(groups) > 1 else "")
            for ax, col in ((axes[0], "tpot_ms"), (axes[1], "tokens_per_s")):
                y = gb[col].to_numpy()
                ax.plot(x, np.where(fit, y, np.nan), styles[gi % 4], color=colors[bsz], marker="o", ms=3,
                        label=lab if ax is axes[0] else None)
                if (~fit).any():
                    ax.plot(x, y, ":", color=colors[bsz], alpha=0.35)
        if gi == 0:
            g1 = g[g["batch"] == g["batch"].min()].sort_values("context")
            axes[0].plot(g1["context"], g1["bw_floor_ms"], "k--", lw=1,
                         label=f"bandwidth floor B={g1['batch'].iloc[0]}")
    axes[0].set_ylabel("TPOT (ms)")
    axes[1].set_ylabel("decode throughput (tokens/s)")
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_xlabel("context (tokens)")
        ticks = sorted(df["context"].unique())
        ax.set_xticks(ticks, [fmt_tokens(t) for t in ticks])
        ax.grid(True, alpha=0.3)
    axes[1].set_yscale("log")
    axes[0].set_yscale("log")
    axes[0].legend(fontsize=7, ncol=2)
    fig.suptitle(title + "\n(dotted: batch does not fit in memory)", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return notes
