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
    kind         reproduction (compared, counted) | identity (an input or an echo of one: shown, not counted)
                 | prediction (beyond the paper: no paper value) | not_reproducible (a paper value the model
                 cannot produce; the YAML's `missing:` names the source that would be needed)
`evaluate` runs the metrics in order, joins the paper values, decides within / missed, and returns a
`Reproduction`, whose render step is
    text()       the printed table, its notes and sensitivity lines, then the count line
                 "<name>: N within / M missed / K not reproducible / I identity (not counted) / P predictions"
    frame()      one row per quantity (reproduction.csv; simulator/commands/outputs.py concatenates them)
    files(out)   PNGs of the paper's figures/tables, one per `figure` group: paper value beside simulated, misses
                 marked (simulator/figures/render.py), plus the reproduction's own `plots`; returns the paths
                 written (the CLI prints them)
Paper values are the document's printed numbers, never recomputed. Notes are callables evaluated with the
quantities, so every number in them is computed. The contract is written out in notes/FIGURES_FRAMEWORK.md.
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
IDENTITY = "identity"
PREDICTION = "prediction"
NOT_REPRODUCIBLE = "not_reproducible"
KINDS = (REPRODUCTION, IDENTITY, PREDICTION, NOT_REPRODUCIBLE)

#: status of an evaluated row (the `status` column)
WITHIN, MISSED = "within", "missed"
STATUS_OF_KIND = {IDENTITY: "identity", PREDICTION: "prediction", NOT_REPRODUCIBLE: "not reproducible"}

COLUMNS = ["quantity", "kind", "status", "paper", "simulated", "unit", "ratio", "tolerance", "tolerance_abs",
           "within", "ref", "figure", "config", "inputs", "note", "alternatives", "sensitivity"]


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
                kind: identity | not_reproducible,   # optional
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
        st = [r["status"] for r in self.rows]
        return {"within": st.count(WITHIN), "missed": st.count(MISSED),
                "not reproducible": st.count("not reproducible"), "identity": st.count("identity"),
                "predictions": st.count("prediction")}

    def summary_line(self) -> str:
        c = self.counts()
        return (f"{self.name or self.title}: {c['within']} within / {c['missed']} missed / {c['not reproducible']} "
                f"not reproducible / {c['identity']} identity (not counted) / {c['predictions']} predictions")

    def text(self) -> str:
        df = self.frame()
        t = pd.DataFrame({
            "quantity": df["quantity"],
            "paper": [_fmt(p) for p in df["paper"]],
            "simulated": [_fmt(s) for s in df["simulated"]],
            "unit": df["unit"],
            "sim/paper": [_fmt(r) if r is not None and not pd.isna(r) else "-" for r in df["ratio"]],
            "status": [("NO (missed)" if s == MISSED else s) for s in df["status"]],
            "note": df["note"],
        })
        out = [self.title, t.to_string(index=False)]
        for r in self.rows:
            if r["alternatives"]:
                out.append(f"alternatives: {r['quantity']}: {r['alternatives']}")
            if r["sensitivity"]:
                out.append(f"sensitivity: {r['quantity']}: {r['sensitivity']}")
        out += [f"note: {n}" for n in self.notes]
        if self.out_of_scope:
            out.append("out of scope (accuracy results, not a performance model's): " + "; ".join(self.out_of_scope))
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


def _row(label, kind, paper, simulated, unit, tolerance, tolerance_abs, *, ref="", figure="", config="",
         inputs="", note="", alternatives="", sensitivity="", bounds=(None, None)) -> dict:
    ratio = within = None
    status = STATUS_OF_KIND.get(kind)
    if kind == REPRODUCTION:
        if paper is None or simulated is None or (isinstance(simulated, float) and math.isnan(simulated)):
            within = False
        else:
            ratio = simulated / paper if paper else None
            if bounds != (None, None):
                lo, hi = bounds
                within = (lo is None or simulated >= lo - 1e-12) and (hi is None or simulated <= hi + 1e-12)
            elif tolerance_abs is not None:
                within = abs(simulated - paper) <= tolerance_abs
            elif tolerance is not None and ratio is not None:
                within = abs(ratio - 1.0) <= tolerance + 1e-12
            else:
                within = None
        status = WITHIN if within else MISSED
    elif kind == IDENTITY and paper and simulated is not None:
        ratio = simulated / paper
    return {"quantity": label, "kind": kind, "status": status, "paper": paper, "simulated": simulated,
            "unit": unit, "ratio": ratio, "tolerance": tolerance, "tolerance_abs": tolerance_abs, "within": within,
            "ref": ref, "figure": figure, "config": config, "inputs": inputs, "note": note,
            "alternatives": alternatives, "sensitivity": sensitivity}


def evaluate(name: str, title: str, quantities: list[Quantity], paper: PaperValues | None = None,
             notes: list[Callable[[], str] | str] = (), plots: list[Plot] = (), draw_figures: bool = True,
             ) -> Reproduction:
    """Run every quantity's metric, join its paper value, decide within / missed; evaluate the notes.

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
        if kind == REPRODUCTION and not q.paper:
            raise ValueError(f"quantity {q.label!r}: a reproduction row needs a paper value")
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
        note = "; ".join(x for x in (q.note, v.note if v else "",
                                     f"missing: {pv['missing']}" if kind == NOT_REPRODUCIBLE else "") if x)
        alts = ""
        if v and v.alternatives:
            alts = _fmt_map(v.alternatives) + (f" ({v.reading})" if v.reading else "")
        sens = "; ".join(f"{k}: {_fmt_map(d)}" for k, d in v.sensitivity.items()) if v and v.sensitivity else ""
        rep.rows.append(_row(q.label, kind, pv.get("value"), None if v is None else v.value, q.unit,
                             tol if kind == REPRODUCTION else None, tol_abs if kind == REPRODUCTION else None,
                             ref=str(pv.get("ref", "")), figure=q.figure or str(pv.get("figure", "")),
                             config=q.config, inputs=v.inputs if v else "", note=note, alternatives=alts,
                             sensitivity=sens, bounds=bounds))
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
