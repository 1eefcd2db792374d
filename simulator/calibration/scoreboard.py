"""One line per production kernel family and judgement: the summary benchmarks/calibration_accuracy.py prints last.

Each section of the report that judges a family on rows it did not fit adds its pooled figures here as it prints them:
which rows (`stage`: `first look` = priced from the source before any measurement of the family, `held out` = measured
rows never fitted, `blind` = priced and committed before the rows were measured, `looked-at` = never fitted, but a rule
changed after their errors were seen), how many, median / p90 of |predicted / measured - 1| and the median signed error
(+ = the model too slow), and the regimes of that table that meet the goal (median <= 10 %, p90 <= 25 %).
Nothing here is computed anew: the entries are the figures the sections above it printed.

After it, the STANDING table: one row per family, where the family stands now. A section marks (`standing=True`, or
the row's own label, e.g. `standing="fi_decode, cold K/V (engine state)"`) the entry that is the SHIPPED model's
newest blind grid of a family (its `main` column where the candidate lost and main's model stayed); the row shows
that entry's figures beside the family's first look (its newest `first look` entry, looked up by the row's label).
A label marked twice is an error (not "the newest wins": a grid newer than the marked one must move the marker), except
that one grid may give a per-regime entry (regimes met only) and a pooled one (figures only): the two fill one row. A
family with a first look and no marked grid gets a row of its own.
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
    standing: str | None = None   # the STANDING row this entry is (the shipped model's newest blind grid), or None


def _standing_label(family: str, standing: bool | str) -> str | None:
    """The STANDING row label of an entry marked `standing` (True: its family's name; a string: that label)."""
    if standing is None:
        return None
    if isinstance(standing, (bool, np.bool_)):
        return family if standing else None
    if isinstance(standing, str) and standing.strip():
        return standing
    raise ValueError(f"scoreboard standing {standing!r}: True, False or a row label")


def _pct(v: float, signed: bool = False) -> str:
    return "-" if not np.isfinite(v) else (f"{v:+.1f}" if signed else f"{v:.1f}")


class Scoreboard:
    """Entries in the order the report added them."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []

    def add(self, family: str, stage: str, rows: str, err_pct, regimes_met: int | None = None,
            regimes: int | None = None, standing: bool | str = False) -> None:
        """Add the pooled figures of signed errors `err_pct` (%, predicted / measured - 1); `standing` marks the
        shipped model's newest blind grid of the family (see the module's docstring)."""
        label = _standing_label(family, standing)
        if stage not in STAGES:
            raise ValueError(f"scoreboard stage {stage!r}: one of {', '.join(STAGES)}")
        e = np.asarray(err_pct, dtype=np.float64)
        e = e[np.isfinite(e)]
        if not len(e):
            return
        self.entries.append(Entry(family, stage, rows, int(len(e)), float(np.median(np.abs(e))),
                                  float(np.percentile(np.abs(e), 90)), float(np.median(e)),
                                  None if regimes_met is None else int(regimes_met),
                                  None if regimes is None else int(regimes), label))

    def add_regimes(self, family: str, stage: str, rows: str, n: int, regimes_met: int, regimes: int,
                    standing: bool | str = False) -> None:
        """Add a section that prints per-regime figures only (no pooled |error|): its row count and regimes met."""
        label = _standing_label(family, standing)
        if stage not in STAGES:
            raise ValueError(f"scoreboard stage {stage!r}: one of {', '.join(STAGES)}")
        self.entries.append(Entry(family, stage, rows, int(n), float("nan"), float("nan"), float("nan"),
                                  int(regimes_met), int(regimes), label))

    def table(self) -> pd.DataFrame:
        rows = []
        for x in self.entries:
            rows.append({"family": x.family, "stage": x.stage, "rows": x.rows, "n": x.n,
                         "median": _pct(x.median_pct), "p90": _pct(x.p90_pct), "signed": _pct(x.signed_pct, True),
                         "regimes met": "" if x.regimes is None else f"{x.regimes_met} of {x.regimes}"})
        return pd.DataFrame(rows)

    def _standing_entries(self) -> dict[str, Entry]:
        """Each STANDING label's entry: a label marked twice raises, unless a per-regime entry (regimes only) and a
        pooled one (figures only, no regimes) of the same stage fill one row between them."""
        out: dict[str, Entry] = {}
        for x in self.entries:
            if x.standing is None:
                continue
            y = out.get(x.standing)
            if y is None:
                out[x.standing] = x
                continue
            a, b = (y, x) if np.isfinite(y.median_pct) else (x, y)   # a: the pooled one, b: the per-regime one
            if (a.stage != b.stage or not np.isfinite(a.median_pct) or a.regimes is not None
                    or np.isfinite(b.median_pct) or b.regimes is None):
                raise ValueError(f"scoreboard: STANDING row {x.standing!r} marked twice ({y.rows!r} and {x.rows!r}); "
                                 "mark only the shipped model's newest blind grid")
            out[x.standing] = Entry(a.family, a.stage, b.rows, a.n, a.median_pct, a.p90_pct, a.signed_pct,
                                    b.regimes_met, b.regimes, a.standing)
        return out

    def standing_table(self) -> pd.DataFrame:
        """One row per STANDING label (in the order the board first named its family, then the order marked), and one
        per family with a first look but no marked grid: the marked entry's figures and the newest first look."""
        first = {}
        for x in self.entries:
            if x.stage == "first look":
                first[x.family] = x          # the newest first look of a family wins
        order = {}
        for i, x in enumerate(self.entries):
            order.setdefault(x.family, i)
        marked = self._standing_entries()
        keyed = [((order[x.family], i), label, x) for i, (label, x) in enumerate(marked.items())]
        keyed += [((order[f], len(self.entries)), f, None) for f in first if f not in marked]
        rows = []
        for _, label, x in sorted(keyed, key=lambda k: k[0]):
            fl = first.get(label)
            r = {"family": label, "newest blind grid (shipped model)": "-" if x is None else x.rows,
                 "n": "" if x is None else str(x.n)}
            r.update({"median": "-", "p90": "-", "signed": "-", "regimes met": ""} if x is None else
                     {"median": _pct(x.median_pct), "p90": _pct(x.p90_pct), "signed": _pct(x.signed_pct, True),
                      "regimes met": "" if x.regimes is None else f"{x.regimes_met} of {x.regimes}"})
            if fl is None:
                r["first look"] = "-"
            else:
                parts = ([f"{_pct(fl.median_pct)} / {_pct(fl.p90_pct)}"] if np.isfinite(fl.median_pct) else []) + (
                    [] if fl.regimes is None else [f"{fl.regimes_met} of {fl.regimes}"])
                r["first look"] = ", ".join(parts)
            rows.append(r)
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
        st = self.standing_table()
        if not len(st):
            return
        print(f"\n== PRODUCTION KERNEL FAMILIES, STANDING: where each family stands now: the shipped model on its "
              f"newest blind grid (rows priced and committed before they were measured; |error| %, median / p90, signed + = "
              f"the model too slow; regimes met = median <= {GOAL_MEDIAN_PCT:.0f} % and p90 <= {GOAL_P90_PCT:.0f} %), "
              "and the family's first look (priced from the source before it was measured: median / p90, regimes "
              "met). An 'engine state' row is the same family on cold K/V (the engine's state), beside its standing")
        print(st.to_string(index=False))
        print(self.standing_total(st))

    @staticmethod
    def standing_total(st: pd.DataFrame) -> str:
        """One line under the STANDING table: regimes met over every family's standing row, and the families (with
        their misses) that keep the issue's goal open."""
        met = tot = 0
        short = []
        for fam, cell in zip(st["family"], st["regimes met"]):
            if not cell:
                continue
            a, b = (int(v) for v in cell.split(" of "))
            met, tot = met + a, tot + b
            if a < b:
                short.append(f"{fam} {b - a}")
        return (f"   STANDING total: {met} of {tot} regimes met on the newest blind grids; missed "
                f"{tot - met}: {', '.join(short) if short else 'none'}")


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


def add_pooled(df, col: str, stage: str, rows: str, t=None, goal: str = "goal", by: str = "family",
               standing: bool | frozenset = False) -> None:
    """Add each family's pooled errors (column `col` of df, %) to the summary board, with the regimes met of its
    per-regime table t (column `goal`); `standing` marks each as its family's STANDING row (True: every family of df;
    a frozenset of family names: only those, where a newer grid holds the others' marker)."""
    for fam, x in df.groupby(by):
        mark = (str(fam) in standing) if isinstance(standing, frozenset) else standing
        met = tot = None
        if t is not None and len(t):
            tt = t[t[by] == fam]
            met, tot = int((tt[goal] == "met").sum()), len(tt)
        BOARD.add(str(fam), stage, rows, x[col], met, tot, standing=mark)


def add_table(tab, stage: str, rows: str, goal: str = "goal", family: str | None = None,
              standing: bool | str | tuple = False) -> None:
    """Add a per-regime table's row count and regimes met to the summary board, per family (the regime's text before
    its first ':' unless `family` is given); `standing` marks each as a STANDING row (see Scoreboard), or, a tuple of
    family names, only those families."""
    fam = tab["regime"].str.split(":").str[0].str.strip() if family is None else np.full(len(tab), family)
    for f, x in tab.groupby(fam):
        n = int(x["n"].sum()) if "n" in x else 0
        mark = str(f) in standing if isinstance(standing, tuple) else standing
        BOARD.add_regimes(str(f), stage, rows, n, int((x[goal] == "met").sum()), len(x), standing=mark)


def pooled_lines(df, t, labels, title: str) -> None:
    """Print one line per model label: `title, label: median |error| ... %, p90 ... %, signed ... %; regimes met a of
    b`, from df's `<label>_err_pct` column (%) and the per-regime table t's `<label>_goal` column."""
    for lab in labels:
        e = df[f"{lab}_err_pct"]
        print(f"{title}, {lab}: median |error| {np.median(e.abs()):.1f} %, p90 {np.percentile(e.abs(), 90):.1f} %, "
              f"signed {np.median(e):+.1f} %; regimes met {int((t[lab + '_goal'] == 'met').sum())} of {len(t)}")
