"""PNG plots of a trace's statistics (`sparsesim trace plot | stats`), with the seed documents' published
values drawn where they exist (shaded bands / dashed lines; see published.yaml)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from simulator.traces.stats import TraceStats


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, ts, path):
    """Title the figure with the trace, write it as a PNG and close it; returns the path."""
    plt = _plt()
    fig.suptitle(_title(ts), fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _title(ts: TraceStats) -> str:
    m = ts.meta["model"]
    return (f"{ts.name} [{ts.source}] - {m['name']} ({m['layers']} layers, {m['kv_heads']} KV heads), "
            f"mean context {ts.meta.get('mean_context', float('nan')):,.0f}")


def plot_stats(ts: TraceStats, out: Path) -> list[Path]:
    """Write every plot the trace's statistics allow into folder `out`; returns the files."""
    plt = _plt()
    out = Path(out)
    files = []
    L = ts.layers
    x = np.arange(L)
    if ts.has("topk.overlap_raw"):
        fig, ax = plt.subplots(1, 2, figsize=(13, 4.2))
        ks = ts.coords["k"]
        N = ts.meta.get("mean_context", np.nan)
        for i, k in enumerate(ks):
            c = f"C{i}"
            ax[0].plot(x, ts.get("topk.overlap_raw")[i], "o-", color=c, label=f"raw, k={k} ({k / N:.1%} of N)")
            ax[0].plot(x, ts.get("topk.overlap_shifted")[i], "s--", color=c, alpha=0.7, label=f"shifted +1, k={k}")
            ax[0].axhline(ts.get("topk.random_overlap")[i], color=c, lw=0.6, ls=":")
        ax[0].axhspan(0.35, 0.50, color="grey", alpha=0.15, label="GVR Fig. 2: layers 20-60, 35-50 %")
        ax[0].axhline(0.015, color="grey", ls="-.", lw=1, label="GVR: layers 0-1, ~1.5 %")
        ax[0].set(xlabel="layer", ylabel="overlap with the previous step's top-k", ylim=(0, 1.02),
                  title="step-to-step top-k overlap (dotted: random k/N)")
        ax[0].legend(fontsize=7, ncol=2)
        mid = ks[len(ks) // 2]
        data = [ts.samples("topk.overlap_shifted_samples", layer=layer, k=mid) for layer in range(L)]
        ax[1].violinplot([d if d.size else [np.nan] for d in data], positions=x, showmedians=True)
        ax[1].set(xlabel="layer", ylabel="shifted overlap", ylim=(0, 1.02),
                  title=f"distribution per (step, head), k={mid}")
        if ts.has("gvr.passes_rows"):
            ax2 = ax[1].twinx()
            ax2.plot(x, np.nanmean(ts.get("gvr.passes_rows"), axis=1), "r^-", label="GVR phase-2 passes (rows)")
            ax2.set_ylabel("passes", color="r")
            ax2.set_ylim(0, max(4, float(np.nanmax(ts.get("gvr.passes_rows"))) + 0.5))
            ax2.legend(loc="lower right", fontsize=7)
        files.append(_save(fig, ts, out / "overlap.png"))
    if ts.has("ssv.adjacent_overlap"):
        fig, ax = plt.subplots(1, 3, figsize=(15, 4.2))
        for i, o in enumerate(ts.coords["order"]):
            ax[0].plot(x, ts.get("ssv.adjacent_overlap")[i], "o-", label=o)
        ax[0].axhspan(0.5, 0.9, color="grey", alpha=0.15, label="SSV Insight 1: 50-90 % (8K)")
        if ts.has("nsa.overlap_step"):
            ax[0].plot(x, ts.get("nsa.overlap_step"), "k:", label="decode step-to-step")
        ax[0].set(xlabel="layer", ylabel="|I_a & I_b| / n", ylim=(0, 1.02),
                  title="adjacent verification rows: NSA block overlap")
        ax[0].legend(fontsize=7)
        Cs = np.array(ts.coords["C"])
        for i, o in enumerate(ts.coords["order"]):
            ax[1].plot(Cs, np.nanmean(ts.get("ssv.union_ratio")[i], axis=-1), "o-", label=o)
        for rho in (0.5, 0.7, 0.9):
            ax[1].plot(Cs, 1 + (Cs - 1) * (1 - rho), "--", color="grey", lw=0.8)
            ax[1].text(Cs[-1], 1 + (Cs[-1] - 1) * (1 - rho), f" rho={rho}", fontsize=7, va="center")
        ax[1].set(xlabel="group size C", ylabel="|union| / n", xticks=Cs,
                  title="group union (dashed: SSV formula n(1+(C-1)(1-rho)))")
        ax[1].legend(fontsize=7)
        if ts.has("ssv.cross_layer_jaccard"):
            jac = ts.get("ssv.cross_layer_jaccard")
            for i, lag in enumerate(ts.coords["layer_lag"]):
                ax[2].plot(x, jac[i], "o-", label=f"Jaccard, layer l vs l+{lag}")
            if ts.has("ssv.reuse_mass"):
                ax[2].plot(x, ts.get("ssv.reuse_mass")[0], "k--", label="mass kept reusing l for l+1")
            ax[2].set(xlabel="layer l", ylabel="fraction", ylim=(0, 1.02),
                      title="cross-layer stability (refresh/reuse)")
            ax[2].legend(fontsize=7)
        files.append(_save(fig, ts, out / "ssv.png"))
    if ts.has("lserve.interval_recall") or ts.has("snapkv.recall"):
        fig, ax = plt.subplots(1, 2, figsize=(12, 4.2))
        if ts.has("lserve.interval_recall"):
            iv = np.array(ts.coords["interval"])
            r = ts.get("lserve.interval_recall")
            for layer in range(L):
                ax[0].plot(iv, r[:, layer], "o-", lw=0.8, label=f"layer {layer}")
            ax[0].plot([1, 2, 4, 8, 16], np.array([86.2, 85.6, 85.6, 84.8, 83.2]) / 86.2, "k*--",
                       label="LServe Table 6 accuracy ratio (proxy)")
            ax[0].set(xscale="log", xticks=iv, xticklabels=[str(i) for i in iv], xlabel="reuse interval",
                      ylabel="attention mass vs fresh selection",
                      title=f"LServe reusable page selection ({ts.meta['policies'].get('lserve', {}).get('budget_tokens', '?')} tokens)")
            ax[0].legend(fontsize=7)
        if ts.has("snapkv.recall"):
            b = np.array(ts.coords["budget"])
            r = ts.get("snapkv.recall")
            for layer in range(L):
                ax[1].plot(b, r[:, layer], "o-", lw=0.8, label=f"layer {layer}")
            if ts.has("streaming.mass"):
                ax[1].axhline(float(np.nanmean(ts.get("streaming.mass"))), color="grey", ls=":",
                              label="StreamingLLM sink+window (mean)")
            ax[1].set(xlabel="SnapKV budget K (tokens)", ylabel="attention mass kept", ylim=(0, 1.02),
                      title="SnapKV: prompt-time selection vs later decode steps")
            ax[1].legend(fontsize=7)
        files.append(_save(fig, ts, out / "reuse.png"))
    if ts.has("specattn.kl") or ts.has("spec.accept_hist"):
        fig, ax = plt.subplots(1, 2, figsize=(12, 4.2))
        if ts.has("specattn.kl"):
            kl = ts.get("specattn.kl")
            im = ax[0].imshow(kl, aspect="auto", cmap="viridis_r", origin="lower")
            mp = ts.get("specattn.layer_map")
            ax[0].plot(np.arange(len(mp)), mp, "r*", ms=12, label="DTW map")
            ax[0].set(xlabel="target layer", ylabel="draft layer", title="KL(target || draft), nats")
            fig.colorbar(im, ax=ax[0])
            ax[0].legend(fontsize=7)
        if ts.has("spec.accept_hist"):
            h = ts.get("spec.accept_hist")
            ax[1].bar(np.arange(len(h)), h)
            ax[1].set(xlabel="accepted draft tokens per round", ylabel="fraction of rounds",
                      title=f"acceptance: alpha = {ts.scalar('spec.accept_rate'):.2f}, "
                            f"tokens/round = {ts.scalar('spec.tokens_per_round'):.2f}")
        files.append(_save(fig, ts, out / "speculation.png"))
    return files


def plot_side_by_side(rows: list[tuple[str, float, float]], title: str, path: Path) -> Path:
    """Bar chart of (label, recorded, synthetic) pairs."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(max(8, 0.55 * len(rows)), 4.2))
    x = np.arange(len(rows))
    ax.bar(x - 0.2, [r[1] for r in rows], 0.4, label="recorded")
    ax.bar(x + 0.2, [r[2] for r in rows], 0.4, label="synthetic")
    ax.set_xticks(x, [r[0] for r in rows], rotation=60, ha="right", fontsize=7)
    ax.set(title=title, ylabel="value")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
