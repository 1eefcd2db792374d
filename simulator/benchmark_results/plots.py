"""Plots of a comparison (matplotlib, Agg backend).

compare_cdf.png       measured and simulated empirical CDFs of TTFT, TPOT, ITL and end-to-end latency (ms)
compare_scatter.png   per request, simulated against measured TTFT and end-to-end latency (requests lined up in the
                      order they were sent), the y = x line and +-20 % bands
"""
from __future__ import annotations

import numpy as np


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _cdf(ax, x, label, **kw):
    x = np.sort(np.asarray(x, dtype=np.float64))
    x = x[np.isfinite(x) & (x > 0)]
    if len(x):
        ax.plot(x, np.arange(1, len(x) + 1) / len(x), label=label, **kw)


def compare_cdf(meas: dict, sim: dict, path, title: str = "") -> None:
    """meas / sim: metric -> samples in ms (ttft, tpot, itl, e2e; a missing or empty one is left blank)."""
    plt = _plt()
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.8))
    for ax, (key, label) in zip(axes, (("ttft", "TTFT"), ("tpot", "TPOT"), ("itl", "ITL"), ("e2e", "end-to-end"))):
        _cdf(ax, meas.get(key, []), "measured", lw=1.8, color="black")
        _cdf(ax, sim.get(key, []), "simulated", lw=1.6, color="tab:blue", ls="--")
        both = np.concatenate([np.asarray(meas.get(key, []), dtype=np.float64),
                               np.asarray(sim.get(key, []), dtype=np.float64)])
        both = both[np.isfinite(both) & (both > 0)]
        if len(both) and both.max() > 20 * both.min():   # a log axis only for a wide range (a narrow one gets
            ax.set_xscale("log")                        # matplotlib's slow, crowded minor ticks)
        ax.set_xlabel(f"{label} (ms)")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("fraction of requests (ITL: of gaps)")
    axes[0].legend(fontsize=8, loc="lower right")
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def compare_scatter(meas: dict, sim: dict, path, title: str = "") -> None:
    """Per request: simulated against measured TTFT and E2E (ms), the same requests in the same order."""
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.4))
    for ax, (key, label) in zip(axes, (("ttft", "TTFT"), ("e2e", "end-to-end"))):
        m, s = np.asarray(meas[key], dtype=np.float64), np.asarray(sim[key], dtype=np.float64)
        ok = np.isfinite(m) & np.isfinite(s) & (m > 0) & (s > 0)
        ax.scatter(m[ok], s[ok], s=12, alpha=0.7)
        if ok.any():
            lo, hi = min(m[ok].min(), s[ok].min()) * 0.8, max(m[ok].max(), s[ok].max()) * 1.25
            xs = np.array([lo, hi])
            ax.plot(xs, xs, color="black", lw=1)
            ax.plot(xs, xs * 1.2, color="gray", lw=0.8, ls=":")
            ax.plot(xs, xs / 1.2, color="gray", lw=0.8, ls=":")
            ax.set_xlim(lo, hi)
            ax.set_ylim(lo, hi)
            if hi > 20 * lo:
                ax.set_xscale("log")
                ax.set_yscale("log")
        ax.set_xlabel(f"measured {label} (ms)")
        ax.set_ylabel(f"simulated {label} (ms)")
        ax.grid(alpha=0.3)
    if title:
        fig.suptitle(title + "  (dotted: +-20 %)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
