"""Statistics of request traces (simulator.traces.requests.RequestTrace): arrival rate, burstiness, length
percentiles, prefix-block reuse. All vectorized over requests.

    rate_per_s           (n - 1) / (last arrival - first arrival)
    interarrival_cv      std / mean of the gaps between consecutive arrivals (Poisson: 1; bursty: > 1)
    dispersion_Ws        index of dispersion of the request count in windows of W seconds: var / mean of the
                         counts over the windows that tile the trace (Poisson: 1 at every W; bursts: > 1,
                         growing with W when bursts last longer than W)
    input_pNN / output_pNN  percentiles of the prompt and output lengths (tokens)
    prefix_block_reuse   share of the prompts' hash blocks already seen in an EARLIER request (a prefix cache
                         with unbounded capacity would hit them); prefix_token_reuse the same in tokens
"""
from __future__ import annotations

import numpy as np

from simulator.traces.requests import RequestTrace

WINDOWS_S = (1.0, 10.0, 60.0)
PERCENTILES = (10, 50, 90, 99)


def request_stats(t: RequestTrace) -> dict[str, float]:
    a = t.arrival_s
    n = len(t)
    out: dict[str, float] = {"requests": float(n), "duration_s": t.duration_s}
    out["rate_per_s"] = (n - 1) / t.duration_s if t.duration_s > 0 else float("nan")
    gaps = np.diff(a)
    out["interarrival_mean_s"] = float(gaps.mean()) if gaps.size else float("nan")
    out["interarrival_cv"] = float(gaps.std() / gaps.mean()) if gaps.size and gaps.mean() > 0 else float("nan")
    for w in WINDOWS_S:
        nb = int(np.floor((a[-1] - a[0]) / w)) if n > 1 else 0
        if nb >= 2:
            c = np.bincount(np.minimum(((a - a[0]) // w).astype(np.int64), nb - 1), minlength=nb)[:nb]
            out[f"dispersion_{w:g}s"] = float(c.var() / c.mean()) if c.mean() > 0 else float("nan")
        else:
            out[f"dispersion_{w:g}s"] = float("nan")
    for col, arr in (("input", t.input_tokens), ("output", t.output_tokens)):
        out[f"{col}_mean"] = float(arr.mean())
        for p in PERCENTILES:
            out[f"{col}_p{p}"] = float(np.percentile(arr, p))
    if t.hash_ids is not None and t.hash_ids.size:
        lens = np.diff(t.hash_offsets)
        req = np.repeat(np.arange(n), lens)
        _, first, inv = np.unique(t.hash_ids, return_index=True, return_inverse=True)
        reused = req[first][inv] < req
        out["prefix_blocks_per_request"] = float(lens.mean())
        out["prefix_block_reuse"] = float(reused.mean())
        tok = np.minimum(np.bincount(req[reused], minlength=n) * (t.block_tokens or 0), t.input_tokens)
        out["prefix_token_reuse"] = float(tok.sum() / t.input_tokens.sum())
    return out


def plot_requests(t: RequestTrace, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 3, figsize=(13, 3.8))
    a = t.arrival_s
    w = max(1.0, (a[-1] - a[0]) / 200) if len(a) > 1 else 1.0
    nb = max(1, int(np.ceil((a[-1] - a[0]) / w))) if len(a) > 1 else 1
    c = np.bincount(np.minimum(((a - a[0]) // w).astype(int), nb - 1), minlength=nb)
    ax[0].plot(np.arange(nb) * w, c / w, lw=0.8)
    ax[0].set(xlabel="time (s)", ylabel=f"arrivals / s ({w:g}-s bins)", title="arrival rate")
    for arr, lab in ((t.input_tokens, "input"), (t.output_tokens, "output")):
        s = np.sort(arr)
        ax[1].plot(s, np.arange(1, len(s) + 1) / len(s), label=lab)
    ax[1].set(xscale="log", xlabel="tokens", ylabel="CDF", title="lengths")
    ax[1].legend()
    gaps = np.diff(a)
    if gaps.size and gaps.max() > 0:
        g = np.sort(gaps)
        ccdf = 1 - np.arange(len(g)) / len(g)
        xmax = float(np.percentile(g, 99.9)) or float(g.max())
        x = np.linspace(0, xmax, 200)
        ax[2].step(g, ccdf, where="post", label="trace")
        ax[2].plot(x, np.exp(-x / gaps.mean()), "--", label="Poisson, same rate")
        ax[2].set(yscale="log", xlim=(0, xmax), ylim=(max(1e-4, 1 / len(g)), 1.05), xlabel="inter-arrival gap (s)",
                  ylabel="P(gap > x)", title=f"burstiness: CV {gaps.std() / gaps.mean():.2f}, "
                                             f"{(gaps == 0).mean():.0%} gaps are 0")
        ax[2].legend()
    fig.suptitle(f"request trace {t.name} ({len(t):,} requests)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
