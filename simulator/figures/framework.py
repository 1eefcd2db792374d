"""The reproduction framework: quantities declared once, evaluated, compared, counted and rendered.

A reproduction is a declarative list of `Quantity` rows over the shared helpers of `simulator.figures.common`
(one combo factory, one per-op timer). Each row says
    label        what is compared, in words (printed as the row's name)
    metric       a zero-argument callable returning the simulated value (a float, or a `Value` carrying its
                 note, the alternative readings, the sensitivity to an assumption, where its inputs came from)
    paper        a key into the paper's YAML (`simulator/figures/<paper>.yaml`, `values:`), which holds the
                 document's printed value, its table/figure reference (`ref`), the figure it is drawn in
                 (`figure`) and optionally its tolerance and kind
    config       the configuration in words (hardware, model, batch, strategies; printed in the CSV)
    kind         reproduction (a printed paper number compared with a simulated value: counted) | check (derived
                 from other counted rows - a ratio of two of them, a mean of the model's own rows, the same paper
                 number compared twice, a row that follows from another: judged, NOT counted) | calibration (a
                 value that is not the paper's, e.g. a timing from the authors' source code: judged, not counted)
                 | identity (an input or an echo of one: shown, not counted) | prediction (beyond the paper: no
                 paper value) | not_reproducible (a paper value the model cannot produce; the YAML's `missing:`
                 names the source that would be needed)
`evaluate` runs the metrics in order, joins the paper values, classes every row by THE COUNTING RULE below,
and returns a `Reproduction`, whose render step is
    text()       the printed table, its notes and sensitivity lines, the counting rule, then the count line
                 "<name>: W within / C conditional / M missed / N not reproducible (K counted, x % within);
                  checks ...; bounds ...; calibration checks ...; I identity (not counted); P predictions"
    frame()      one row per quantity (reproduction.csv; simulator/commands/outputs.py concatenates them)
    files(out)   PNGs of the paper's figures/tables, one per `figure` group: paper value beside simulated, misses
                 marked (simulator/figures/render.py), plus the reproduction's own `plots`; returns the paths
                 written (the CLI prints them)
Paper values are the document's printed numbers, never recomputed. Notes are callables evaluated with the
quantities, so every number in them is computed. The contract is written out in docs/FIGURES_FRAMEWORK.md.

THE COUNTING RULE (COUNTING_RULE, printed with every table; the class is computed, never typed in):
  counted      a `reproduction` row under a RELATIVE tolerance (the paper file's, +-15 %):
                 within           |sim / paper - 1| <= tol, and no printed sensitivity setting misses
                 conditional      within at the reference setting, but some setting of a printed sensitivity
                                  (an unpublished or borrowed input: every `Value.sensitivity` entry is one)
                                  misses: the verdict hinges on an input the paper does not fix
                 missed           outside the tolerance, and no sensitivity setting reaches the target
                 not reproducible outside, but the sensitivity of an unpublished input spans the paper value
                                  (some setting within, or settings on both sides): decided by the missing
                                  input, named in `class_reason`; also a paper value that contradicts another
                                  printed number (YAML `contradicts:`) or a `not_reproducible` YAML entry
  not counted  bound        a one-sided bound or a range (YAML lower / upper) or an absolute band
                            (YAML tolerance_abs): "bound holds / fails", drawn on the figure
               check        kind check: judged under the relative tolerance ("agrees / differs"), not counted
               calibration  kind calibration: the same, for a value that is not the paper's (source named)
               identity, prediction
The `class` column carries the class, `tolerance_kind` relative / absolute / bound, `class_reason` why a row is
conditional or not reproducible.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from hwmodels.errors import ScenarioError, SparsesimError, SpecError
from hwmodels.yamlio import load_yaml
from simulator.figures import render
from simulator.figures.render import slug

FIGURE_DIR = Path(__file__).parent

REPRODUCTION = "reproduction"
CHECK = "check"
CALIBRATION = "calibration"
IDENTITY = "identity"
PREDICTION = "prediction"
NOT_REPRODUCIBLE = "not_reproducible"
KINDS = (REPRODUCTION, CHECK, CALIBRATION, IDENTITY, PREDICTION, NOT_REPRODUCIBLE)

#: classes of an evaluated row (the `class` column; module docstring: THE COUNTING RULE)
WITHIN, CONDITIONAL, MISSED, NR = "within", "conditional", "missed", "not reproducible"
COUNTED = (WITHIN, CONDITIONAL, MISSED)
BOUND = "bound"
STATUS_OF_KIND = {IDENTITY: "identity", PREDICTION: "prediction", NOT_REPRODUCIBLE: NR}

COUNTING_RULE = ("counting rule: a row counts when it compares a number printed in the paper with a simulated value "
                 "under the relative tolerance; within = inside it at the reference setting and at every printed "
                 "sensitivity setting; conditional = inside it, but some setting of an unpublished or borrowed input "
                 "misses; not reproducible = outside, but an unpublished input's sensitivity spans the paper value, "
                 "or the document contradicts itself; bounds and absolute bands, checks derived from counted rows "
                 "and calibration checks against values that are not the paper's are judged but not counted")

COLUMNS = ["quantity", "kind", "class", "status", "paper", "simulated", "unit", "ratio", "tolerance_kind",
           "tolerance", "tolerance_abs", "lower", "upper", "within", "class_reason", "ref", "figure", "config",
           "inputs", "note", "alternatives", "sensitivity"]


# ---- declarations ----------------------------------------------------------------------------------------
@dataclass
class Value:
    """A simulated value and what its row must say about it.

    alternatives  other settings or readings of the same quantity (label -> value), shown beside the row when
                  the value depends on a choice the document does not pin (e.g. a batch or launch mode)
    reading       which of those readings the document supports, and why (one sentence)
    sensitivity   {assumption (its plausible range): {setting: value}}: the row's value across an assumed
                  parameter's range (every unpublished parameter the row hinges on)
    inputs        where the inputs came from, e.g. "trace gvr_synthetic: overlap per layer group" or
                  "assumed: overlap 0.44 (document's Fig. 2 band)"
    """

    value: float
    note: str = ""
    alternatives: dict[str, float] = field(default_factory=dict)
    reading: str = ""
    sensitivity: dict[str, dict[str, float]] = field(default_factory=dict)
    inputs: str = ""


@dataclass
class Quantity:
    """One row of a reproduction (see the module docstring)."""

    label: str
    metric: Callable[[], Any] | None
    paper: str | None = None
    kind: str | None = None        # None: the YAML entry's kind, else reproduction (with paper) / prediction
                                   # (check / calibration: judged, not counted; module docstring)
    config: str = ""
    unit: str = ""
    figure: str | None = None      # None: the YAML entry's `figure`
    note: str = ""
    tolerance: float | None = None  # None: the YAML entry's, else the paper file's default


@dataclass
class Plot:
    """A reproduction-specific figure: `draw(path)` writes one PNG (the framework names and announces it)."""

    name: str
    draw: Callable[[Path], None]


# ---- paper values ----------------------------------------------------------------------------------------
class PaperValues:
    """`simulator/figures/<paper>.yaml`:

        paper: "full citation"
        source: "where the values were read (the seed document)"
        tolerance: 0.15                 # default relative tolerance of compared rows
        out_of_scope: ["accuracy result the performance model does not address", ...]
        values:
          key: {value: 1.6, ref: "table/figure/section and the printed text", figure: "Fig. 6",
                tolerance: 0.15,        # optional: relative
                tolerance_abs: 1.5,     # optional: absolute (same unit as value), replaces the relative one
                lower: 2, upper: 5,     # optional: the document prints a bound or a range ("at least 50 %",
                                        # "under 1 ms", "2-5 %"): within = lower <= simulated <= upper, no tolerance
                kind: check | calibration | identity | not_reproducible,   # optional
                of: "the rows a check derives from",  # check only
                contradicts: "the printed number it disagrees with",   # the row is not reproducible
                missing: "the source needed"}        # not_reproducible only
    """

    def __init__(self, name: str, doc: dict, file: str):
        self.name, self.file, self.doc = name, file, doc
        if not isinstance(doc, dict) or not isinstance(doc.get("values"), dict):
            raise SpecError("a paper-values file needs a `values:` mapping", file=file, field="values")
        self.values: dict[str, dict] = {}
        for k, v in doc["values"].items():
            if not isinstance(v, dict) or "ref" not in v:
                raise SpecError(f"value {k!r} needs a mapping with at least `ref` (and `value`)", file=file,
                                field=f"values.{k}")
            kind = v.get("kind", REPRODUCTION)
            if kind not in KINDS:
                raise SpecError(f"value {k!r}: kind {kind!r}; allowed: {', '.join(KINDS)}", file=file,
                                field=f"values.{k}.kind")
            if kind == NOT_REPRODUCIBLE and not v.get("missing"):
                raise SpecError(f"value {k!r} is not_reproducible: say what is `missing`", file=file,
                                field=f"values.{k}.missing")
            if kind == CHECK and not v.get("of"):
                raise SpecError(f"value {k!r} is a check: say which rows it derives from (`of`)", file=file,
                                field=f"values.{k}.of")
            self.values[k] = v
        self.tolerance = float(doc.get("tolerance", 0.15))
        self.out_of_scope = list(doc.get("out_of_scope", []))
        self.title = str(doc.get("paper", name))

    def __getitem__(self, key: str) -> dict:
        if key not in self.values:
            raise SpecError(f"no paper value {key!r}", file=self.file, field="values")
        return self.values[key]

    def value(self, key: str) -> float | None:
        return self[key].get("value")


def load_paper(name: str) -> PaperValues:
    """The paper values of `simulator/figures/<name>.yaml`."""
    path = FIGURE_DIR / f"{name}.yaml"
    try:
        doc = load_yaml(path, "paper-values file")
    except SparsesimError as e:
        raise SpecError(str(e)) from None
    return PaperValues(name, doc, str(path))


# ---- the evaluated reproduction -------------------------------------------------------------------------
def _fmt(x) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:,.4g}"


def _fmt_map(d: dict) -> str:
    return ", ".join(f"{k} {_fmt(v)}" for k, v in d.items())


@dataclass
class Reproduction:
    """An evaluated reproduction: rows (dicts with COLUMNS), notes, and what files() draws."""

    title: str
    rows: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    name: str = ""
    plots: list[Plot] = field(default_factory=list)
    out_of_scope: list[str] = field(default_factory=list)
    draw_figures: bool = True

    # legacy API (modules not yet converted): one compared row
    def add(self, quantity: str, paper: float | None, simulated: float, unit: str = "", note: str = "",
            tolerance: float | None = None) -> None:
        # a paper value shown without a tolerance is not judged: an identity/input row, not counted
        kind = PREDICTION if paper is None else (REPRODUCTION if tolerance is not None else IDENTITY)
        self.rows.append(_row(quantity, kind, paper, simulated, unit, tolerance, None, note=note))

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=COLUMNS)

    def counts(self) -> dict[str, int]:
        """Rows per class, and the judged-but-not-counted rows by verdict (module docstring)."""
        cl = [r["class"] for r in self.rows]
        judged = {k: [r["within"] for r in self.rows if r["class"] == k] for k in (CHECK, BOUND, CALIBRATION)}
        c = {k: cl.count(k) for k in (WITHIN, CONDITIONAL, MISSED, NR)}
        c.update({"checks": len(judged[CHECK]), "checks agreeing": sum(bool(w) for w in judged[CHECK]),
                  "bounds": len(judged[BOUND]), "bounds holding": sum(bool(w) for w in judged[BOUND]),
                  "calibration checks": len(judged[CALIBRATION]),
                  "calibration agreeing": sum(bool(w) for w in judged[CALIBRATION]),
                  "identity": cl.count(IDENTITY), "predictions": cl.count(PREDICTION)})
        return c

    def summary_line(self) -> str:
        c = self.counts()
        k = c[WITHIN] + c[CONDITIONAL] + c[MISSED]
        share = f", {100.0 * c[WITHIN] / k:.0f} % within" if k else ""
        return (f"{self.name or self.title}: {c[WITHIN]} within / {c[CONDITIONAL]} conditional / {c[MISSED]} missed / "
                f"{c[NR]} not reproducible ({k} counted{share}); checks {c['checks']} ({c['checks agreeing']} agree); "
                f"bounds {c['bounds']} ({c['bounds holding']} hold); calibration checks {c['calibration checks']} "
                f"({c['calibration agreeing']} agree); {c['identity']} identity (not counted); "
                f"{c['predictions']} predictions")

    def text(self) -> str:
        df = self.frame()
        t = pd.DataFrame({
            "quantity": df["quantity"],
            "paper": [_fmt(p) for p in df["paper"]],
            "simulated": [_fmt(s) for s in df["simulated"]],
            "unit": df["unit"],
            "sim/paper": [_fmt(r) if r is not None and not pd.isna(r) else "-" for r in df["ratio"]],
            "class": [_class_text(c, s) for c, s in zip(df["class"], df["status"])],
            "note": df["note"],
        })
        out = [self.title, t.to_string(index=False)]
        for r in self.rows:
            if r["class_reason"]:
                out.append(f"{r['class']}: {r['quantity']}: {r['class_reason']}")
            if r["alternatives"]:
                out.append(f"alternatives: {r['quantity']}: {r['alternatives']}")
            if r["sensitivity"]:
                out.append(f"sensitivity: {r['quantity']}: {r['sensitivity']}")
        out += [f"note: {n}" for n in self.notes]
        if self.out_of_scope:
            out.append("out of scope (accuracy results, not a performance model's): " + "; ".join(self.out_of_scope))
        out.append(COUNTING_RULE)
        out.append(self.summary_line())
        return "\n".join(out)

    def files(self, out) -> list[Path]:
        """Draw the PNGs next to reproduction.csv; `out` is a commands._common.OutputDir or a folder."""
        if not self.draw_figures:
            return []
        def path_of(fname: str) -> Path:
            if hasattr(out, "file"):
                return out.file(fname)
            Path(out).mkdir(parents=True, exist_ok=True)
            return Path(out) / fname

        written = render.draw_rows(self, path_of)
        for p in self.plots:
            path = path_of(f"{self.name or slug(self.title)}_{slug(p.name)}.png")
            p.draw(path)
            written.append(path)
        return written


def _class_text(cls: str, status: str) -> str:
    if cls == MISSED:
        return "NO (missed)"
    if cls in (CHECK, BOUND, CALIBRATION):
        return f"{cls}: {status}"
    return cls


def _judge(x, paper, tol, tol_abs, bounds) -> bool | None:
    """The row's test on one simulated value x (None when there is no test)."""
    if x is None or paper is None or (isinstance(x, float) and math.isnan(x)):
        return False
    if bounds != (None, None):
        lo, hi = bounds
        return (lo is None or x >= lo - 1e-12) and (hi is None or x <= hi + 1e-12)
    if tol_abs is not None:
        return abs(x - paper) <= tol_abs
    if tol is not None and paper:
        return abs(x / paper - 1.0) <= tol + 1e-12
    return None


def _sensitivity_class(within: bool, paper: float, tol: float, sensitivity: dict) -> tuple[str, str]:
    """(class, reason) of a relative-tolerance row from its printed sensitivity (THE COUNTING RULE)."""
    flips, spans = [], []
    for name, settings in (sensitivity or {}).items():
        vals = {k: float(v) for k, v in settings.items() if v is not None and not math.isnan(float(v))}
        inside = [k for k, v in vals.items() if abs(v / paper - 1.0) <= tol + 1e-12]
        outside = [k for k, v in vals.items() if abs(v / paper - 1.0) > tol + 1e-12]
        if within and outside:
            flips.append(f"{name} at {', '.join(outside)}")
        lo, hi = (min(vals.values()), max(vals.values())) if vals else (None, None)
        if not within and (inside or (vals and lo <= paper <= hi)):
            spans.append(f"{name} ({', '.join(f'{k} {_fmt(v)}' for k, v in vals.items())})")
    if within:
        return (CONDITIONAL, "misses under " + "; ".join(flips)) if flips else (WITHIN, "")
    if spans:
        return NR, "decided by an unpublished input whose range spans the paper value: " + "; ".join(spans)
    return MISSED, ""


def _row(label, kind, paper, simulated, unit, tolerance, tolerance_abs, *, ref="", figure="", config="",
         inputs="", note="", alternatives="", sensitivity="", bounds=(None, None), sens_values=None,
         contradicts="") -> dict:
    ratio = within = None
    cls = status = STATUS_OF_KIND.get(kind)
    reason = ""
    tkind = ("bound" if bounds != (None, None) else "absolute" if tolerance_abs is not None
             else "relative" if tolerance is not None else "")
    if kind in (REPRODUCTION, CHECK, CALIBRATION):
        if paper and simulated is not None and not (isinstance(simulated, float) and math.isnan(simulated)):
            ratio = simulated / paper
        within = _judge(simulated, paper, tolerance, tolerance_abs, bounds)
        if kind == CHECK or kind == CALIBRATION:
            cls, status = kind, ("agrees" if within else "differs")
        elif tkind in ("bound", "absolute"):
            cls, status = BOUND, ("holds" if within else "fails")
        elif contradicts:
            cls, reason = NR, f"the document contradicts itself: {contradicts}"
        else:
            cls, reason = (_sensitivity_class(bool(within), paper, tolerance, sens_values)
                           if paper and tolerance is not None else (MISSED, ""))
        if kind == REPRODUCTION and cls in COUNTED + (NR,):
            status = cls
    elif kind == IDENTITY and paper and simulated is not None:
        ratio = simulated / paper
    lo, hi = bounds
    return {"quantity": label, "kind": kind, "class": cls, "status": status, "paper": paper,
            "simulated": simulated, "unit": unit, "ratio": ratio, "tolerance_kind": tkind, "tolerance": tolerance,
            "tolerance_abs": tolerance_abs, "lower": lo, "upper": hi, "within": within, "class_reason": reason,
            "ref": ref, "figure": figure, "config": config, "inputs": inputs, "note": note,
            "alternatives": alternatives, "sensitivity": sensitivity}


def evaluate(name: str, title: str, quantities: list[Quantity], paper: PaperValues | None = None,
             notes: list[Callable[[], str] | str] = (), plots: list[Plot] = (), draw_figures: bool = True,
             ) -> Reproduction:
    """Run every quantity's metric, join its paper value, class it by THE COUNTING RULE; evaluate the notes.

    A paper value of `paper` that no quantity uses is listed in a note (nothing is dropped silently)."""
    rep = Reproduction(title=title, name=name, plots=list(plots), draw_figures=draw_figures,
                       out_of_scope=list(paper.out_of_scope) if paper else [])
    used = set()
    for q in quantities:
        pv = paper[q.paper] if (paper is not None and q.paper) else {}
        if q.paper:
            used.add(q.paper)
        kind = q.kind or pv.get("kind") or (REPRODUCTION if q.paper else PREDICTION)
        if kind not in KINDS:
            raise ValueError(f"quantity {q.label!r}: kind {kind!r}")
        if kind in (REPRODUCTION, CHECK, CALIBRATION) and not q.paper:
            raise ValueError(f"quantity {q.label!r}: a {kind} row needs a paper value")
        val = None if (q.metric is None or kind == NOT_REPRODUCIBLE) else q.metric()
        v = val if isinstance(val, Value) else (None if val is None else Value(float(val)))
        tol_abs = pv.get("tolerance_abs")
        bounds = (pv.get("lower"), pv.get("upper"))
        if bounds != (None, None):
            tol_abs = None
            q = Quantity(**{**q.__dict__, "note": "; ".join(x for x in (q.note, "the document gives a " + (
                f"range {bounds[0]:g}-{bounds[1]:g}" if None not in bounds else f"lower bound {bounds[0]:g}"
                if bounds[0] is not None else f"upper bound {bounds[1]:g}")) if x)})
        tol = None if tol_abs is not None else (q.tolerance if q.tolerance is not None
                                                 else pv.get("tolerance", paper.tolerance if paper else None))
        of = f"derived from {pv['of']}" if kind == CHECK and pv.get("of") else ""
        note = "; ".join(x for x in (of, q.note, v.note if v else "",
                                     f"missing: {pv['missing']}" if kind == NOT_REPRODUCIBLE else "") if x)
        alts = ""
        if v and v.alternatives:
            alts = _fmt_map(v.alternatives) + (f" ({v.reading})" if v.reading else "")
        sens = "; ".join(f"{k}: {_fmt_map(d)}" for k, d in v.sensitivity.items()) if v and v.sensitivity else ""
        judged = kind in (REPRODUCTION, CHECK, CALIBRATION)
        rep.rows.append(_row(q.label, kind, pv.get("value"), None if v is None else v.value, q.unit,
                             tol if judged else None, tol_abs if judged else None,
                             ref=str(pv.get("ref", "")), figure=q.figure or str(pv.get("figure", "")),
                             config=q.config, inputs=v.inputs if v else "", note=note, alternatives=alts,
                             sensitivity=sens, bounds=bounds if judged else (None, None),
                             sens_values=v.sensitivity if v else None, contradicts=str(pv.get("contradicts", ""))))
    for n in notes:
        rep.notes.append(n() if callable(n) else str(n))
    if paper is not None:
        unused = [k for k in paper.values if k not in used]
        if unused:
            rep.notes.append(f"paper values not compared by any row: {', '.join(unused)}")
    return rep


# ---- fitting a reproduction to a scenario ----------------------------------------------------------------
def misfit(name: str, sc, reason: str) -> ScenarioError:
    """The one-line error for a reproduction attached to a scenario it does not fit."""
    return ScenarioError(f"reproduction {name!r} does not fit scenario {sc.name!r}: it needs {reason}",
                         file=getattr(sc, "file", None), field="targets")
