"""How much faster the H200 runs each production family than the H100, measured against the model, over every H200
transfer part (A-D: FA3, FlashInfer, XQA, FlashInfer MLA / top-k, cuBLASLt block GEMM; E: vLLM / SGLang Triton,
FlashMLA; F: DeepGEMM's indexer; G: DeepGEMM's block GEMM): the same shapes timed on both chips, each priced by the
model as committed before its H200 call (the H200 borrows the H100's terms: unmeasured_kinds_from). Prints, per family,
the median H200 / H100 time measured and modelled and the signed error on each chip, and draws the rows' measured
against modelled ratio (h200_transfer_ratio.png beside this script, or --png PATH). CPU only, a few seconds.

    python benchmarks/h200_transfer_ratio.py [--png PATH]

A family whose model ratio sits below its measured one is credited with more of HBM3e's bandwidth than it draws.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from simulator.calibration import h200_transfer as HT


def pooled() -> pd.DataFrame:
    """Every H200 transfer row with a family label, its measured and modelled H200 / H100 ratio and both chips' signed
    errors (the part-E K/V-cold diagnosis and grid 8's fill7 repeats left out)."""
    parts = []
    a = HT.load()
    if len(a):
        parts.append(a[["family_label", "measured_ratio", "model_ratio", "new_err_pct", "h100_err_pct"]])
    e = HT.load(parts=HT.PARTS_E)
    if len(e):
        e = e[~e["family_label"].str.contains("diagnosis")]
        parts.append(e[["family_label", "measured_ratio", "model_ratio", "new_err_pct", "h100_err_pct"]])
    f = HT.load_part_f()
    if len(f):
        f = f.assign(family_label=np.where(f["part"] == "prefill", "indexer_dg prefill", "indexer_dg decode"))
        parts.append(f[["family_label", "measured_ratio", "model_ratio", "new_err_pct", "h100_err_pct"]])
    g = HT.load_part_g()
    if len(g):
        g = g[~g["regime"].str.startswith("repeat")].assign(family_label="block fp8 GEMM: DeepGEMM")
        parts.append(g[["family_label", "measured_ratio", "model_ratio", "new_err_pct", "h100_err_pct"]])
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def table(d: pd.DataFrame) -> pd.DataFrame:
    t = d.groupby("family_label").agg(n=("measured_ratio", "size"), measured=("measured_ratio", "median"),
                                      model=("model_ratio", "median"), h200_signed=("new_err_pct", "median"),
                                      h100_signed=("h100_err_pct", "median"))
    t["model - measured"] = t["model"] - t["measured"]
    t["h200 - h100 signed"] = t["h200_signed"] - t["h100_signed"]
    return t.sort_values("model - measured").reset_index()


def draw(d: pd.DataFrame, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 6.5))
    colors = plt.get_cmap("tab20").colors
    for i, (fam, x) in enumerate(d.groupby("family_label")):
        ax.scatter(x["measured_ratio"], x["model_ratio"], s=11, alpha=0.7, color=colors[i % len(colors)],
                   marker="os^D"[i // len(colors) % 4], label=f"{fam} ({len(x)})")
    lo = float(min(d["measured_ratio"].min(), d["model_ratio"].min())) - 0.02
    ax.plot([lo, 1.15], [lo, 1.15], color="black", lw=0.8)
    ax.axhline(3.35 / 4.8, color="grey", ls=":", lw=0.8)
    ax.text(lo + 0.01, 3.35 / 4.8 + 0.005, "HBM3 / HBM3e datasheet ratio", fontsize=8, color="grey")
    ax.set_xlabel("measured H200 time / H100 time (same shape)")
    ax.set_ylabel("modelled H200 price / H100 price")
    ax.set_title("Production kernels on the H200: the speed-up measured vs modelled\n(below the diagonal: the model "
                 "credits the H200 more than it gains)", fontsize=10)
    ax.legend(fontsize=6.5, loc="lower right", ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--png", type=Path, default=Path(__file__).with_name("h200_transfer_ratio.png"))
    args = ap.parse_args()
    d = pooled()
    if not len(d):
        raise SystemExit("no H200 transfer measurement committed")
    print(f"{len(d)} H200 transfer rows over {d['family_label'].nunique()} families; ratios are H200 / H100 time of "
          "the same shape (medians), signed errors model / measured - 1 in % on each chip")
    t = table(d)
    fmt = {c: (lambda v: f"{v:.3f}") for c in ("measured", "model")}
    fmt["model - measured"] = lambda v: f"{v:+.3f}"
    fmt.update({c: (lambda v: f"{v:+.1f}") for c in ("h200_signed", "h100_signed", "h200 - h100 signed")})
    print(t.to_string(index=False, formatters=fmt))
    gap = d["model_ratio"] - d["measured_ratio"]
    print(f"all rows: model - measured ratio median {gap.median():+.3f} (p10 {gap.quantile(0.1):+.3f}, p90 "
          f"{gap.quantile(0.9):+.3f}); signed error H200 {d['new_err_pct'].median():+.1f} % against H100 "
          f"{d['h100_err_pct'].median():+.1f} %")
    draw(d, args.png)
    print(f"figure: {args.png}")


if __name__ == "__main__":
    main()
