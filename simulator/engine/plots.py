"""Plots of a simulation: latency CDFs and timelines (matplotlib, Agg backend).

latency_cdf.png   empirical CDFs of TTFT, TPOT and end-to-end latency (log x), the SLO limits dashed
timeline.png      per replica over time: running batch, waiting queue, KV-cache use; with the arrival and
                  completion rates of the whole cluster. Long runs are binned (time-weighted means per bin).
"""
from __future__ import annotations

import numpy as np


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def latency_cdf(df, slo: dict, path, title: str = "", groups=None) -> None:
    """TTFT, TPOT and end-to-end CDFs of the finished requests (log axes, p50/p99 marked, the SLO drawn). `groups`
    (optional, one label per request row): one curve per replica group when there are several (strategies side by
    side), the p50/p99 marks then left out."""
    plt = _plt()
    from matplotlib.ticker import NullFormatter

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    fin = np.isfinite(df["e2e_s"].to_numpy())
    done = df[fin]
    labels = None if groups is None else np.asarray(groups, dtype=object)[fin]
    names = [None] if labels is None or len(set(labels.tolist())) < 2 else list(dict.fromkeys(labels.tolist()))
    for ax, (col, label, key) in zip(axes, (("ttft_s", "TTFT", "ttft_ms"), ("tpot_s", "TPOT", "tpot_ms"),
                                            ("e2e_s", "end-to-end", "e2e_ms"))):
        drawn = False
        for name in names:
            v = done[col].to_numpy() * 1e3
            if name is not None:
                v = v[labels == name]
            x = np.sort(v)
            x = x[np.isfinite(x) & (x > 0)]
            if not len(x):
                continue
            ax.plot(x, np.arange(1, len(x) + 1) / len(x), lw=1.6, label=name)
            drawn = True
            if name is None:
                for q, ls, y in ((50, ":", 0.55), (99, "-.", 0.9)):
                    p = np.percentile(x, q)
                    ax.axvline(p, color="gray", ls=ls, lw=0.8)
                    ax.text(p, y, f"p{q} {p:.0f} " if p >= 10 else f"p{q} {p:.2g} ", fontsize=8, color="dimgray",
                            ha="right")
        if drawn:
            ax.set_xscale("log")
            ax.xaxis.set_minor_formatter(NullFormatter())
        if key in slo:
            ax.axvline(slo[key], color="tab:red", ls="--", lw=1.2, label=f"SLO {slo[key]:g} ms")
        if key in slo or (drawn and names[0] is not None and ax is axes[0]):
            ax.legend(loc="lower right", fontsize=7 if names[0] is not None else 8)
        ax.set_xlabel(f"{label} (ms)")
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3, which="both")
    axes[0].set_ylabel("fraction of requests")
    fig.suptitle(title or "latency CDFs", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _binned(t0, dt, val, edges):
    """Time-weighted mean of a piecewise-constant series (value `val` on [t0, t0 + dt)) in each bin."""
    out = np.zeros(len(edges) - 1)
    cover = np.zeros(len(edges) - 1)
    t1 = t0 + dt
    i0 = np.clip(np.searchsorted(edges, t0, side="right") - 1, 0, len(edges) - 2)
    i1 = np.clip(np.searchsorted(edges, t1, side="right") - 1, 0, len(edges) - 2)
    same = i0 == i1
    np.add.at(out, i0[same], (val * dt)[same])
    np.add.at(cover, i0[same], dt[same])
    for k in np.flatnonzero(~same):  # events spanning bins (rare: long decode runs)
        for b in range(i0[k], i1[k] + 1):
            lo, hi = max(t0[k], edges[b]), min(t1[k], edges[b + 1])
            if hi > lo:
                out[b] += val[k] * (hi - lo)
                cover[b] += hi - lo
    width = np.diff(edges)
    return out / width, cover / width


def timeline(df, ts, num_blocks: list, path, title: str = "", bins: int = 400) -> None:
    plt = _plt()
    fig, axes = plt.subplots(4, 1, figsize=(12, 9), sharex=True)
    end = float(np.nanmax((df["arrival_s"] + df["e2e_s"]).to_numpy())) if np.isfinite(df["e2e_s"]).any() else 1.0
    end = max(end, float(ts["t_s"].max() + ts["dt_s"].max()) if len(ts) else 1.0)
    edges = np.linspace(0.0, end, bins + 1)
    mid = 0.5 * (edges[1:] + edges[:-1])
    reps = sorted(ts["replica"].unique()) if len(ts) else []
    many = len(reps) > 8
    agg_run = np.zeros(bins)
    agg_wait = np.zeros(bins)
    agg_kv = np.zeros(bins)
    for r in reps:
        s = ts[ts["replica"] == r]
        t0, dt = s["t_s"].to_numpy(), s["dt_s"].to_numpy()
        run, _ = _binned(t0, dt, s["running"].to_numpy(np.float64), edges)
        wait, _ = _binned(t0, dt, s["waiting"].to_numpy(np.float64), edges)
        kv, _ = _binned(t0, dt, s["kv_used_blocks"].to_numpy(np.float64) / num_blocks[r], edges)
        agg_run += run
        agg_wait += wait
        agg_kv += kv / len(reps)
        if not many:
            axes[0].plot(mid, run, lw=0.8, label=f"replica {r}")
            axes[1].plot(mid, wait, lw=0.8)
            axes[2].plot(mid, kv, lw=0.8)
    if many or len(reps) > 1:
        axes[0].plot(mid, agg_run / max(len(reps), 1), color="k", lw=1.4, label="mean over replicas")
        axes[1].plot(mid, agg_wait / max(len(reps), 1), color="k", lw=1.4)
        axes[2].plot(mid, agg_kv, color="k", lw=1.4)
    axes[0].set_ylabel("running batch")
    axes[0].legend(fontsize=7, ncol=4, loc="upper right")
    axes[1].set_ylabel("waiting queue")
    axes[2].set_ylabel("KV cache used")
    axes[2].set_ylim(0, 1.05)
    width = edges[1] - edges[0]
    arr = np.histogram(df["arrival_s"].to_numpy(), edges)[0] / width
    fin = (df["arrival_s"] + df["e2e_s"]).to_numpy()
    comp = np.histogram(fin[np.isfinite(fin)], edges)[0] / width
    axes[3].plot(mid, arr, lw=0.9, label="arrivals")
    axes[3].plot(mid, comp, lw=0.9, label="completions")
    axes[3].set_ylabel("requests / s")
    axes[3].legend(fontsize=8, loc="upper right")
    axes[3].set_xlabel("simulated time (s)")
    for ax in axes:
        ax.grid(alpha=0.3)
    fig.suptitle(title or "timeline", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
