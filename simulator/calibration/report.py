"""Calibration report: predicted vs measured per measured kernel, errors per op kind, plots.

Used by `sparsesim calibrate fit|report` and benchmarks/calibration_accuracy.py (no GPU needed: it reads the
committed CSVs and fitted files)."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pandas as pd

from hwmodels.spec import load_efficiency
from simulator.calibration import fit as F

TARGET_MEDIAN_PCT = {"gemm bf16": 5.0, "gemm fp8": 5.0, "decode_attn q_rows=1, cuDNN": 5.0}
DEFAULT_TARGET_PCT = 10.0


def data_for_device(name: str) -> Path:
    """The newest committed measurement CSV of the shipped spec `name`."""
    rev = {v: k for k, v in F.DEVICE_SPECS.items()}
    candidates = []
    for f in F.latest_data_files():
        dev = pd.read_csv(f, usecols=["device"], nrows=1)["device"].iloc[0]
        if F.DEVICE_SPECS.get(dev) == name or dev == rev.get(name):
            candidates.append(f)
    if not candidates:
        from hwmodels.errors import SparsesimError

        measured = sorted(set(F.DEVICE_SPECS.values()))
        raise SparsesimError(f"no committed measurements for {name!r}; measured devices: {', '.join(measured)}")
    return sorted(candidates)[-1]


def evaluate(data_file: str | Path, device: str | None = None, refit: bool = False, out_dir: Path | None = None):
    """(errors per row, error table, end-to-end table, efficiency, fit metadata, datasheet spec) for one CSV.

    refit=False uses the fitted file the spec loads for the device; True fits afresh from the datasheet
    (never from an earlier fit) and, when `out_dir` is given, prices the rows with the fit merged into what
    other fits own in out_dir's file (the efficiency that file will hold)."""
    df = F.load_measurements(data_file)
    hw = F.spec_for(df, device)
    if refit:
        eff, meta = F.fit(df, hw)
        if out_dir is not None:
            eff = F.merged_efficiency(eff, meta, hw, str(data_file), out_dir)
    else:
        eff, meta = load_efficiency(hw.name), {}
    err = F.errors(df, hw, eff)
    err["group"] = err.apply(F.group_label, axis=1) if len(err) else []
    table = F.error_table(err)
    hwc = replace(hw.with_efficiency(eff), launch_graph_s=eff.launch_graph_s or hw.launch_graph_s,
                  launch_eager_s=eff.launch_eager_s or hw.launch_eager_s)
    e2e = F.e2e_comparison(df, hwc)
    return err, table, e2e, eff, meta, hw


def table_text(table: pd.DataFrame) -> str:
    t = table.copy()
    t["target"] = [("<= %g%%" % TARGET_MEDIAN_PCT.get(g, DEFAULT_TARGET_PCT)) if p == "held-out" else ""
                   for g, p in zip(t["group"], t["part"])]
    t["met"] = [("yes" if m <= TARGET_MEDIAN_PCT.get(g, DEFAULT_TARGET_PCT) else "NO") if p == "held-out" else ""
                for g, m, p in zip(t["group"], t["median_ape_pct"], t["part"])]
    t["median_ape_pct"] = t["median_ape_pct"].map("{:.1f}".format)
    t["worst_ape_pct"] = t["worst_ape_pct"].map("{:.1f}".format)
    return t.to_string(index=False)


def e2e_text(e2e: pd.DataFrame) -> str:
    if e2e.empty:
        return "no end-to-end rows in this CSV"
    t = e2e.copy()
    for c in ("measured_ms", "simulated_ms"):
        t[c] = t[c].map("{:.2f}".format)
    t["error_pct"] = t["error_pct"].map("{:+.1f}".format)
    return t.to_string(index=False)


def plot(err: pd.DataFrame, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    e = err.assign(group=err.apply(F.group_label, axis=1))
    groups = sorted(e["group"].unique())
    fig, ax = plt.subplots(figsize=(8.5, 7))
    cmap = plt.get_cmap("tab20")
    for i, g in enumerate(groups):
        d = e[e["group"] == g]
        for part, marker in (("fit", "o"), ("held-out", "^"), ("predicted", "x")):
            dd = d[d["part"] == part]
            if len(dd):
                ax.scatter(dd["median_us"], dd["predicted_us"], s=12, marker=marker, color=cmap(i % 20),
                           label=f"{g} ({part})")
    lo, hi = e["median_us"].min() * 0.7, e["median_us"].max() * 1.4
    ax.plot([lo, hi], [lo, hi], "k-", lw=0.8)
    ax.plot([lo, hi], [lo * 1.1, hi * 1.1], "k:", lw=0.6)
    ax.plot([lo, hi], [lo / 1.1, hi / 1.1], "k:", lw=0.6)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measured (us)")
    ax.set_ylabel("predicted (us)")
    ax.set_title(title + "\n(dotted: +-10 %; o fitted, ^ held out, x predicted only)", fontsize=9)
    ax.legend(fontsize=6, ncol=2, loc="upper left")
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_groups(chk: pd.DataFrame, path: Path, title: str, measured: str = "median_us",
                predicted: str = "predicted_us", unit: str = "us") -> None:
    """Predicted vs measured, one colour per `group` (the check frames of fit_latency / fit_topk_cta /
    fit_prefill): rows whose group starts with 'fit' drawn as circles, the others as triangles."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    many = chk["group"].nunique() > 12    # a long legend goes beside the axes, where it hides no point
    fig, ax = plt.subplots(figsize=(11.5, 6.5) if many else (8, 6.5))
    cmap = plt.get_cmap("tab10")
    for i, (g, d) in enumerate(chk.groupby("group")):
        ax.scatter(d[measured], d[predicted], s=14, marker="o" if str(g).startswith("fit") else "^",
                   color=cmap(i % 10), label=f"{g} ({len(d)})")
    lo, hi = chk[measured].min() * 0.7, chk[measured].max() * 1.4
    ax.plot([lo, hi], [lo, hi], "k-", lw=0.8)
    ax.plot([lo, hi], [lo * 1.15, hi * 1.15], "k:", lw=0.6)
    ax.plot([lo, hi], [lo / 1.15, hi / 1.15], "k:", lw=0.6)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"measured ({unit})")
    ax.set_ylabel(f"predicted ({unit})")
    ax.set_title(title + "\n(dotted: +-15 %; o fitted, ^ checked)", fontsize=9)
    if many:
        ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    else:
        ax.legend(fontsize=6, loc="upper left")
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def group_error_table(chk: pd.DataFrame) -> pd.DataFrame:
    """Median / worst absolute and median signed error (%) per `group` of a check frame (the fit_latency,
    fit_topk_cta and fit_prefill checks)."""
    g = chk.groupby("group")["error_pct"]
    return pd.DataFrame({"rows": g.size(), "median_ape_pct": g.apply(lambda e: e.abs().median()),
                         "worst_ape_pct": g.apply(lambda e: e.abs().max()),
                         "median_signed_pct": g.median()}).reset_index()
