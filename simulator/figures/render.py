"""PNG rendering of an evaluated reproduction: one figure per paper figure/table (`figure` column).

Each quantity is one horizontal row with two bars, the document's printed value (grey) beside the simulated
one (green within tolerance, red and marked "MISSED" outside, blue for a prediction, hatched grey for an
identity/input row); a not-reproducible row shows its missing source instead of a bar. Rows of one figure
that carry different units are drawn in separate panels (each with its own axis), so bars are comparable.
"""
from __future__ import annotations

import math
import re
import textwrap
from pathlib import Path
from typing import Callable

COLORS = {"within": "#2e7d32", "missed": "#c62828", "prediction": "#1565c0", "identity": "#9e9e9e",
          "not reproducible": "#ffffff"}
PAPER_COLOR = "#bdbdbd"


def _num(x) -> float | None:
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


def _fmt(x) -> str:
    return "-" if x is None else f"{x:,.3g}"


def slug(text: str) -> str:
    """A file-name stem of `text`: runs of other characters become one underscore, lower case."""
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").lower() or "figure"


def draw_rows(rep, path_of: Callable[[str], Path]) -> list[Path]:
    """One PNG per figure group of `rep.rows` (rows without a figure go to 'other'); returns the paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups: dict[str, list[dict]] = {}
    for r in rep.rows:
        groups.setdefault(r.get("figure") or "other", []).append(r)
    written = []
    for fig_name, rows in groups.items():
        units: dict[str, list[dict]] = {}
        for r in rows:
            units.setdefault(r.get("unit") or "", []).append(r)
        heights = [0.5 * len(u) + 0.9 for u in units.values()]
        fig, axes = plt.subplots(len(units), 1, figsize=(11, sum(heights) + 0.8),
                                 gridspec_kw={"height_ratios": heights}, squeeze=False)
        for ax, (unit, urows) in zip(axes[:, 0], units.items()):
            _panel(ax, unit, urows)
        fig.suptitle(textwrap.fill(f"{rep.name or rep.title}: {fig_name}", 110), fontsize=11)
        fig.tight_layout()
        path = path_of(f"{rep.name or slug(rep.title)}_{slug(fig_name)}.png")
        fig.savefig(path, dpi=110, bbox_inches="tight")
        plt.close(fig)
        written.append(path)
    return written


def _panel(ax, unit: str, rows: list[dict]) -> None:
    n = len(rows)
    y = list(range(n))[::-1]
    vals = [v for r in rows for v in (_num(r["paper"]), _num(r["simulated"])) if v is not None]
    top = max([abs(v) for v in vals] + [1e-12])
    for yi, r in zip(y, rows):
        p, s, st = _num(r["paper"]), _num(r["simulated"]), r["status"]
        if p is not None:
            ax.barh(yi + 0.2, p, height=0.38, color=PAPER_COLOR, edgecolor="k", linewidth=0.4)
            ax.text(p, yi + 0.2, f" {_fmt(p)}", va="center", fontsize=7)
        if st == "not reproducible":
            ax.text(0.01, yi - 0.2, "not reproducible: " + textwrap.shorten(str(r["note"]), 110), va="center",
                    fontsize=7, style="italic", transform=ax.get_yaxis_transform())
            continue
        if s is not None:
            ax.barh(yi - 0.2, s, height=0.38, color=COLORS.get(st, "#666"), edgecolor="k", linewidth=0.4,
                    hatch="//" if st == "identity" else None)
            tag = {"missed": "  MISSED", "identity": "  (identity, not counted)",
                   "prediction": "  (prediction)"}.get(st, "")
            ratio = _num(r.get("ratio"))
            ax.text(s, yi - 0.2, f" {_fmt(s)}" + (f" ({ratio:.2f}x)" if ratio and st in ("within", "missed")
                                                   else "") + tag,
                    va="center", fontsize=7, color="#c62828" if st == "missed" else "k",
                    fontweight="bold" if st == "missed" else "normal")
    ax.set_ylim(-0.7, n - 0.3)
    ax.set_yticks(y)
    ax.set_yticklabels([textwrap.fill(textwrap.shorten(r["quantity"], 90), 48) for r in rows], fontsize=7)
    pos = [v for v in vals if v > 0]
    if pos and len(pos) == len(vals) and max(pos) / min(pos) > 50:   # orders of magnitude apart: log axis
        ax.set_xscale("log")
        ax.set_xlim(min(pos) / 3, max(pos) * 6)
    else:
        ax.set_xlim(min(0.0, min(vals + [0.0]) * 1.1), top * 1.45)
        ax.axvline(0, color="k", linewidth=0.5)
    ax.set_xlabel(unit or "value", fontsize=8)
    ax.tick_params(axis="x", labelsize=7)
    from matplotlib.patches import Patch

    handles = [Patch(color=PAPER_COLOR, label="paper (printed)"), Patch(color=COLORS["within"], label="simulated, within"),
               Patch(color=COLORS["missed"], label="simulated, missed")]
    if any(r["status"] == "prediction" for r in rows):
        handles.append(Patch(color=COLORS["prediction"], label="prediction (no paper value)"))
    if any(r["status"] == "identity" for r in rows):
        handles.append(Patch(facecolor=COLORS["identity"], hatch="//", label="identity / input"))
    ax.legend(handles=handles, fontsize=6, loc="lower right")
