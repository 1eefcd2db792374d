"""Reproductions of the source papers' tables and figures: one module per paper, over one framework.

    framework.py  Quantity / Value / Plot declarations, paper values (`<paper>.yaml`), evaluate -> Reproduction
                  (printed table with a within / missed / not reproducible / identity count line,
                  reproduction.csv rows, PNGs via render.py)
    common.py     the shared helpers: one combo factory, one per-op timer, pricing over arrays
    render.py     the PNG of each paper figure/table: paper value beside simulated, misses marked
    <paper>.py    `@reproduction("name", needs=...)` functions: Scenario -> Reproduction

A scenario names the reproductions it prints with `targets: [name, ...]`; `sparsesim run` and
`sparsesim figures run` print them after the run, write reproduction.csv and each reproduction's PNGs.
A reproduction attached to a scenario it does not fit stops with one line (ScenarioError) naming the
scenario and what the reproduction needs. The contract is in docs/FIGURES_FRAMEWORK.md.
"""
from __future__ import annotations

import importlib
import pkgutil
from typing import Callable

from hwmodels.errors import ScenarioError, SparsesimError, SpecError
from hwmodels.yamlio import load_yaml
from simulator.figures.framework import (  # noqa: F401 - the public API of the package
    CALIBRATION,
    CHECK,
    COUNTING_RULE,
    FIGURE_DIR,
    IDENTITY,
    KINDS,
    NOT_REPRODUCIBLE,
    PREDICTION,
    REPRODUCTION,
    PaperValues,
    Plot,
    Quantity,
    Reproduction,
    Value,
    evaluate,
    load_paper,
    misfit,
)

#: modules of this package that are not paper reproductions
_INFRASTRUCTURE = {"framework", "common", "render"}
_REPRODUCTIONS: dict[str, Callable] = {}
_NEEDS: dict[str, Callable] = {}


def reproduction(name: str, needs: Callable | None = None):
    """Decorator registering a reproduction function `fn(scenario) -> Reproduction` under `name`.

    needs(scenario) -> None, or a phrase saying what the scenario lacks ("a model with a DSA indexer"); it runs
    before the reproduction, which then stops with one line instead of a traceback."""
    def deco(fn):
        if name in _REPRODUCTIONS:
            raise ValueError(f"reproduction {name!r} registered twice")
        _REPRODUCTIONS[name] = fn
        if needs is not None:
            _NEEDS[name] = needs
        return fn
    return deco


def reproductions() -> dict[str, Callable]:
    for m in pkgutil.iter_modules([str(FIGURE_DIR)]):
        if m.name not in _INFRASTRUCTURE:
            importlib.import_module(f"{__name__}.{m.name}")
    return _REPRODUCTIONS


def check_fit(name: str, scenario) -> None:
    """Raise the one-line ScenarioError when reproduction `name` does not fit `scenario`."""
    need = _NEEDS.get(name)
    reason = need(scenario) if need else None
    if reason:
        raise misfit(name, scenario, reason)


def run_reproduction(name: str, scenario) -> Reproduction:
    reg = reproductions()
    if name not in reg:
        raise ScenarioError(f"unknown reproduction {name!r}; known: {', '.join(sorted(reg)) or 'none'}",
                            field="targets")
    check_fit(name, scenario)
    rep = reg[name](scenario)
    if not rep.name:
        rep.name = name
    return rep


def paper_values(paper: str) -> dict:
    """The raw document of `simulator/figures/<paper>.yaml` (modules not yet on `load_paper`)."""
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
