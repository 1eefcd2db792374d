"""Data shipped with sparsesim that lives outside the Python packages in a source checkout.

The repository keeps scenarios in `scenarios/` and trace data in `traces/` at its top level (the layout
is fixed); a wheel carries them as `simulator/shipped/scenarios/` and `simulator/shipped/traces/`
(pyproject.toml maps the two folders into this package). These helpers find them in either layout, so
`sparsesim run quickstart` works from any folder after `pip install .` and from a source checkout.
"""
from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).resolve().parent
_REPO = _HERE.parents[1]  # the checkout root in a source layout (simulator/shipped/ -> repo)


def _dir(name: str) -> Path:
    installed = _HERE / name
    if installed.is_dir():
        return installed
    return _REPO / name


def scenarios_dir() -> Path:
    """Folder of the shipped scenario YAML files."""
    return _dir("scenarios")


def traces_dir() -> Path:
    """Folder of the shipped traces (attention/top-k traces, and request traces under requests/)."""
    return _dir("traces")


def shipped_scenarios() -> dict[str, Path]:
    """Shipped scenario name -> file."""
    d = scenarios_dir()
    return {p.stem: p for p in sorted(d.glob("*.yaml"))} if d.is_dir() else {}
