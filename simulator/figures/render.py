"""PNG rendering of an evaluated reproduction: one figure per paper figure/table (`figure` column).

Each quantity is one horizontal row with two bars, the document's printed value (grey) beside the simulated
one, coloured by the row's class (simulator/figures/framework.py, THE COUNTING RULE): green within tolerance,
orange conditional (inside, but an unpublished input's printed range misses), red and marked "MISSED" outside,
purple not reproducible, blue a prediction, hatched grey an identity/input row. Rows that are judged but not
counted are hatched and tagged: a check derived from counted rows ("check, not counted"), a calibration check
against a value that is not the paper's (its bar labelled with its source, not "paper"), a bound or absolute
band (the bound drawn as a dashed line or a shaded band, "bound holds / fails"). A not-reproducible row without
a simulated value shows its missing source instead of a bar. Rows of one figure that carry different units are
drawn in separate panels (each with its own axis), so bars are comparable.
"""
from __future__ import annotations

import math
import re
import textwrap
from pathlib import Path
from typing import Callable

COLORS = {"within": "#2e7d32", "conditional": "#ef6c00", "missed": "#c62828", "prediction": "#1565c0",
          "identity": "#9e9e9e", "not reproducible": "#8e24aa", "check": "#9e9e9e", "calibration": "#9e9e9e",
          "bound": "#9e9e9e"}
#: not-counted classes: the bar is hatched; its colour says the verdict (green agrees / holds, red otherwise)
JUDGED = ("check", "calibration", "bound")
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


def _bar_color(r) -> str:
    cls = r.get("class") or r["status"]
    if cls in JUDGED:
        return COLORS["within"] if r.get("within") else COLORS["missed"]
    return COLORS.get(cls, "#666")


def _tag(r) -> str:
    cls = r.get("class") or r["status"]
    return {"missed": "  MISSED", "conditional": "  CONDITIONAL", "not reproducible": "  NOT REPRODUCIBLE",
            "identity": "  (identity, not counted)", "prediction": "  (prediction)",
            "check": f"  (check: {r['status']}, not counted)",
            "calibration": f"  (calibration check: {r['status']}, not counted)",
            "bound": f"  (bound {r['status']}, not counted)"}.get(cls, "")


def _bound_marks(ax, yi, r) -> None:
    """The bound (dashed line) or absolute band (shaded) of a bound row, at its bar."""
    lo, hi, p, ta = _num(r.get("lower")), _num(r.get("upper")), _num(r["paper"]), _num(r.get("tolerance_abs"))
    if lo is None and hi is None and ta is not None and p is not None:
        lo, hi = p - ta, p + ta
        ax.fill_betweenx([yi - 0.45, yi + 0.45], lo, hi, color="#ffe082", alpha=0.6, zorder=0)
        return
    for b in (lo, hi):
        if b is not None:
            ax.plot([b, b], [yi - 0.45, yi + 0.45], "k--", linewidth=1.2, zorder=3)


def _panel(ax, unit: str, rows: list[dict]) -> None:
    n = len(rows)
    y = list(range(n))[::-1]
    vals = [v for r in rows for v in (_num(r["paper"]), _num(r["simulated"]), _num(r.get("lower")),
                                      _num(r.get("upper"))) if v is not None]
    top = max([abs(v) for v in vals] + [1e-12])
    for yi, r in zip(y, rows):
        p, s, st = _num(r["paper"]), _num(r["simulated"]), r.get("class") or r["status"]
        if p is not None:
            ax.barh(yi + 0.2, p, height=0.38, color=PAPER_COLOR, edgecolor="k", linewidth=0.4,
                    hatch=".." if st == "calibration" else None)
            ax.text(p, yi + 0.2, f" {_fmt(p)}" + (" (not the paper: see ref)" if st == "calibration" else ""),
                    va="center", fontsize=7)
        if st == "bound":
            _bound_marks(ax, yi, r)
        if s is None:
            if st == "not reproducible":
                ax.text(0.01, yi - 0.2, "not reproducible: " + textwrap.shorten(str(r["note"]), 110), va="center",
                        fontsize=7, style="italic", transform=ax.get_yaxis_transform())
            continue
        ax.barh(yi - 0.2, s, height=0.38, color=_bar_color(r), edgecolor="k", linewidth=0.4,
                hatch="//" if st in ("identity",) + JUDGED else None, alpha=0.75 if st in JUDGED else 1.0)
        ratio = _num(r.get("ratio"))
        bad = st in ("missed", "not reproducible") or (st in JUDGED and not r.get("within"))
        ax.text(s, yi - 0.2, f" {_fmt(s)}" + (f" ({ratio:.2f}x)" if ratio and st not in ("identity", "prediction")
                                               else "") + _tag(r),
                va="center", fontsize=7, color="#c62828" if bad else "k", fontweight="bold" if bad else "normal")
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
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    present = {r.get("class") or r["status"] for r in rows}
    handles = [Patch(color=PAPER_COLOR, label="paper (printed)")]
    for cls, lab in (("within", "simulated, within"), ("conditional", "within, but an unpublished input flips it"),
                     ("missed", "simulated, missed"), ("not reproducible", "not reproducible (missing input)"),
                     ("prediction", "prediction (no paper value)")):
        if cls in present or cls in ("within", "missed"):
            handles.append(Patch(color=COLORS[cls], label=lab))
    if "identity" in present:
        handles.append(Patch(facecolor=COLORS["identity"], hatch="//", label="identity / input"))
    if present & {"check", "calibration"}:
        handles.append(Patch(facecolor="#dddddd", hatch="//", label="check / calibration check (not counted)"))
    if "calibration" in present:
        handles.append(Patch(facecolor=PAPER_COLOR, hatch="..", label="value not from the paper (ref names it)"))
    if "bound" in present:
        handles.append(Line2D([], [], color="k", ls="--", label="bound (not counted)"))
    ax.legend(handles=handles, fontsize=6, loc="best", framealpha=0.8)
