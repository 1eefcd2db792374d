"""Helpers the blind-grid predictors share: the model's commit (refusing an uncommitted model, whose prices no commit
could reproduce) and the shapes the committed measurement CSVs already hold (a blind grid's shapes must be new)."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]


def head_or_exit(root: Path = ROOT) -> str:
    """The full HEAD commit of `root`; exits when simulator/, hwmodels/ or lab/ hold uncommitted changes."""
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "simulator", "hwmodels", "lab"], cwd=root,
                           capture_output=True, text=True).stdout.strip()
    if dirty:
        raise SystemExit(f"uncommitted changes under simulator/ hwmodels/ lab/: commit the model first\n{dirty}")
    return commit


def measured_shapes(data_dir: Path, families: tuple[str, ...], keys: tuple[str, ...],
                    as_family: str | None = None) -> set[tuple]:
    """The `keys` tuples (as strings) of every row of `families` in data_dir's committed measurement CSVs (prediction
    files and launch profiles left out); as_family: the family column rewritten to it first (kernels measured under
    two family names)."""
    seen = set()
    for p in sorted(Path(data_dir).glob("*.csv*")):
        if "prediction" in p.name or "_grids" in p.name:
            continue
        try:
            d = pd.read_csv(p)
        except Exception:  # noqa: BLE001 (logs, gzipped clocks and other non-tables)
            continue
        if not {"family", *keys} <= set(d.columns):
            continue
        d = d[d["family"].isin(families)].copy()
        if as_family is not None:
            d["family"] = as_family
        seen.update(tuple(r) for r in d[list(keys)].astype(str).itertuples(index=False))
    return seen
