"""Reproductions of the source papers' tables and figures: one module per paper.

A figure module defines functions decorated `@reproduction("name")` that take the loaded Scenario and
return a `Reproduction`: rows of (quantity, paper value, simulated value) plus notes. Paper values live
in YAML next to the module (`<paper>.yaml`, each value with its table/figure reference), never in code.
A scenario names the reproductions it prints with `targets: [name, ...]`; `sparsesim run` prints them
after its tables and writes `reproduction.csv`.
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pandas as pd

from hwmodels.errors import ScenarioError, SparsesimError, SpecError
from hwmodels.yamlio import load_yaml

FIGURE_DIR = Path(__file__).parent
_REPRODUCTIONS: dict[str, Callable] = {}


@dataclass
class Reproduction:
    """A reproduction table: `rows` of dicts with quantity, paper, simulated, unit, and optional note."""

    title: str
    rows: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, quantity: str, paper: float | None, simulated: float, unit: str = "", note: str = "",
            tolerance: float | None = None) -> None:
        """One compared quantity. tolerance: the accepted relative error (e.g. 0.15), or None."""
        self.rows.append({"quantity": quantity, "paper": paper, "simulated": simulated, "unit": unit,
                          "note": note, "tolerance": tolerance})

    def frame(self) -> pd.DataFrame:
        df = pd.DataFrame(self.rows, columns=["quantity", "paper", "simulated", "unit", "note", "tolerance"])
        paper = pd.to_numeric(df["paper"], errors="coerce")
        df["ratio"] = df["simulated"] / paper
        within = (df["ratio"] - 1).abs() <= df["tolerance"].astype(float)
        df["within"] = within.where(paper.notna() & df["tolerance"].notna(), other=pd.NA)
        return df

    def text(self) -> str:
        df = self.frame()
        t = pd.DataFrame({
            "quantity": df["quantity"],
            "paper": [("-" if pd.isna(p) else f"{p:,.4g}") for p in pd.to_numeric(df["paper"], errors="coerce")],
            "simulated": [f"{s:,.4g}" for s in df["simulated"]],
            "unit": df["unit"],
            "sim/paper": [("-" if pd.isna(r) else f"{r:.3f}") for r in df["ratio"]],
            "within tol.": [("-" if pd.isna(w) else ("yes" if w else "NO")) for w in df["within"]],
            "note": df["note"],
        })
        out = [self.title, t.to_string(index=False)]
        out += [f"note: {n}" for n in self.notes]
        return "\n".join(out)


def reproduction(name: str):
    """Decorator registering a reproduction function under `name`."""
    def deco(fn):
        if name in _REPRODUCTIONS:
            raise ValueError(f"reproduction {name!r} registered twice")
        _REPRODUCTIONS[name] = fn
        return fn
    return deco


def reproductions() -> dict[str, Callable]:
    for m in pkgutil.iter_modules([str(FIGURE_DIR)]):
        importlib.import_module(f"{__name__}.{m.name}")
    return _REPRODUCTIONS


def run_reproduction(name: str, scenario) -> Reproduction:
    reg = reproductions()
    if name not in reg:
        raise ScenarioError(f"unknown reproduction {name!r}; known: {', '.join(sorted(reg)) or 'none'}",
                            field="targets")
    return reg[name](scenario)


def paper_values(paper: str) -> dict:
    """The paper values of `simulator/figures/<paper>.yaml`."""
    path = FIGURE_DIR / f"{paper}.yaml"
    try:
        return load_yaml(path, "paper-values file")
    except SparsesimError as e:
        raise SpecError(str(e)) from None


def scenario_for(name: str) -> str | None:
    """The shipped scenario that lists reproduction `name` among its targets, or None."""
    from simulator.shipped import shipped_scenarios

    for stem, path in shipped_scenarios().items():
        try:
            doc = load_yaml(path, "scenario file")
        except SparsesimError:
            continue
        targets = doc.get("targets", []) if isinstance(doc, dict) else []
        if name in (targets if isinstance(targets, list) else [targets]):
            return stem
    return None
