"""What the DeepGEMM indexer blind-grid pricing scripts (predict_deepgemm_indexer_blind.py, _blind3.py, _blind4.py) share:
a grid priced twice, by main's model (a `git archive` of main's commit unpacked in a folder) and by this tree's model
(simulator.calibration.fit_deepgemm_indexer predict_us on H100-SXM), written with both prices before the grid is
measured."""
from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PRICE = """
import json, sys
import pandas as pd
from hwmodels.spec import load_hardware
from simulator.calibration import fit_deepgemm_indexer as F
hw = load_hardware("H100-SXM")
df = pd.read_csv(sys.argv[1])
print(json.dumps([round(float(v), 3) for v in F.predict_us(df, hw, hw.efficiency)]))
"""


def price_with(tree: Path, grid: Path) -> list[float]:
    """The indexer model of the source tree `tree` priced on the shapes of `grid` (us per row, 3 decimals)."""
    out = subprocess.run([sys.executable, "-c", PRICE, str(grid)], capture_output=True, text=True, check=True,
                         cwd=str(tree), env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"})
    return json.loads(out.stdout.strip().splitlines()[-1])


def write_predictions(rows: list[dict], cols: list[str], grid: Path, main_tree: Path, main_commit: str,
                      name: str) -> None:
    """Write the grid's shapes to `grid`, price them with main's tree and with this tree, and write both beside the
    shapes to hwmodels/calibration/data/production_kernels/deepgemm_indexer_<name>_predictions_main-<main>_new-<here>.csv"""
    with open(grid, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols)
        w.writeheader()
        w.writerows(rows)
    here = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    pm, pn = price_with(main_tree, grid), price_with(ROOT, grid)
    out = ROOT / "hwmodels" / "calibration" / "data" / "production_kernels" / \
        f"deepgemm_indexer_{name}_predictions_main-{main_commit}_new-{here}.csv"
    with open(out, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols + ["pred_main_us", "pred_new_us"])
        w.writeheader()
        for r, a, b in zip(rows, pm, pn):
            w.writerow({**r, "pred_main_us": a, "pred_new_us": b})
    print(out, len(rows))
