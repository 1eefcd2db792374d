"""One line per production kernel family and judgement: the summary benchmarks/calibration_accuracy.py prints last.

Each section of the report that judges a family on rows it did not fit adds its pooled figures here as it prints them:
which rows (`stage`: `first look` = priced from the source before any measurement of the family, `held out` = measured
rows never fitted, `blind` = priced and committed before the rows were measured, `looked-at` = never fitted, but a rule
changed after their errors were seen), how many, median / p90 of |predicted / measured - 1| and the median signed error
(+ = the model too slow), and the regimes of that table that meet the goal (median <= 10 %, p90 <= 25 %).
Nothing here is computed anew: the entries are the figures the sections above it printed.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

#: the goal each regime is judged against (issue: held-out median <= 10 % and p90 <= 25 % per regime)
GOAL_MEDIAN_PCT, GOAL_P90_PCT = 10.0, 25.0
STAGES = ("first look", "held out", "blind", "looked-at")


@dataclass(frozen=True)
class Entry:
    family: str
    stage: str
    rows: str             # what the rows are (grid, device)
    n: int
    median_pct: float
    p90_pct: float
    signed_pct: float
    regimes_met: int | None = None
    regimes: int | None = None


def _pct(v: float, signed: bool = False) -> str:
    return "-" if not np.isfinite(v) else (f"{v:+.1f}" if signed else f"{v:.1f}")


class Scoreboard:
    """Entries in the order the report added them."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []

    def add(self, family: str, stage: str, rows: str, err_pct, regimes_met: int | None = None,
            regimes: int | None = None) -> None:
        """Add the pooled figures of signed errors `err_pct` (%, predicted / measured - 1)."""
        if stage not in STAGES:
            raise ValueError(f"scoreboard stage {stage!r}: one of {', '.join(STAGES)}")
        e = np.asarray(err_pct, dtype=np.float64)
        e = e[np.isfinite(e)]
        if not len(e):
            return
        self.entries.append(Entry(family, stage, rows, int(len(e)), float(np.median(np.abs(e))),
                                  float(np.percentile(np.abs(e), 90)), float(np.median(e)),
                                  None if regimes_met is None else int(regimes_met),
                                  None if regimes is None else int(regimes)))

    def add_regimes(self, family: str, stage: str, rows: str, n: int, regimes_met: int, regimes: int) -> None:
        """Add a section that prints per-regime figures only (no pooled |error|): its row count and regimes met."""
        if stage not in STAGES:
            raise ValueError(f"scoreboard stage {stage!r}: one of {', '.join(STAGES)}")
        self.entries.append(Entry(family, stage, rows, int(n), float("nan"), float("nan"), float("nan"),
                                  int(regimes_met), int(regimes)))

    def table(self) -> pd.DataFrame:
        rows = []
        for x in self.entries:
            rows.append({"family": x.family, "stage": x.stage, "rows": x.rows, "n": x.n,
                         "median": _pct(x.median_pct), "p90": _pct(x.p90_pct), "signed": _pct(x.signed_pct, True),
                         "regimes met": "" if x.regimes is None else f"{x.regimes_met} of {x.regimes}"})
        return pd.DataFrame(rows)

    def print(self) -> None:
        if not self.entries:
            return
        print(f"\n== PRODUCTION KERNEL FAMILIES, SUMMARY: the pooled figures of the sections above (|error| %, median "
              f"/ p90; signed + = the model too slow); regimes met = per-regime median <= {GOAL_MEDIAN_PCT:.0f} % and "
              f"p90 <= {GOAL_P90_PCT:.0f} %. first look = priced from the source before the family was measured; "
              "held out = measured, never fitted; blind = priced and committed before measuring; looked-at = never "
              "fitted, a rule changed after their errors were seen")
        print(self.table().to_string(index=False))


#: the report's board (benchmarks/calibration_accuracy.py fills it section by section, prints it last)
BOARD = Scoreboard()


def models_table(b, by, labels, goals):
    """Per regime (`by`) of a blind grid: n, and for each label in `labels` (its error column `<label>_err_pct`) the
    |error| median / p90 and signed median; `<label>_goal` (median <= 10 %, p90 <= 25 %) for the labels in `goals`."""
    rows = []
    for key, g in b.groupby(list(by)):
        r = dict(zip(by, key), n=len(g))
        for lab in labels:
            e = g[f"{lab}_err_pct"].abs()
            r.update({f"{lab}_med": float(np.median(e)), f"{lab}_p90": float(np.percentile(e, 90)),
                      f"{lab}_sgn": float(np.median(g[f"{lab}_err_pct"]))})
        for lab in goals:
            r[f"{lab}_goal"] = "met" if r[f"{lab}_med"] <= 10 and r[f"{lab}_p90"] <= 25 else "MISSED"
        rows.append(r)
    return pd.DataFrame(rows)


def add_pooled(df, col: str, stage: str, rows: str, t=None, goal: str = "goal", by: str = "family") -> None:
    """Add each family's pooled errors (column `col` of df, %) to the summary board, with the regimes met of its
    per-regime table t (column `goal`)."""
    for fam, x in df.groupby(by):
        met = tot = None
        if t is not None and len(t):
            tt = t[t[by] == fam]
            met, tot = int((tt[goal] == "met").sum()), len(tt)
        BOARD.add(str(fam), stage, rows, x[col], met, tot)


def add_table(tab, stage: str, rows: str, goal: str = "goal", family: str | None = None) -> None:
    """Add a per-regime table's row count and regimes met to the summary board, per family (the regime's text before
    its first ':' unless `family` is given)."""
    fam = tab["regime"].str.split(":").str[0].str.strip() if family is None else np.full(len(tab), family)
    for f, x in tab.groupby(fam):
        n = int(x["n"].sum()) if "n" in x else 0
        BOARD.add_regimes(str(f), stage, rows, n, int((x[goal] == "met").sum()), len(x))
