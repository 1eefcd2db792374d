"""The fourth DeepGEMM DSA-indexer grid (blind), on keys that are not in L2: decode shapes in no committed measurement
measured with the script's rotation "cold" (one fresh block table per call over a 400 MB pool, >= 150 MB of pages
between two uses of a page, as a decode step's 61 layers each read their own keys), across batch 1-128, contexts
1K-96K and verification next_n 2, plus a few rotation "warm8" controls; and the fit rows (batch 16, contexts 2K-128K,
next_n 1 and 2) measured cold, set "fit" (what the cold kind indexer_dg_cold is fitted on after the measurement; not
blind). Priced BEFORE the device measures them by main's model (the tree at MAIN_COMMIT, its own fitted YAML: every row
as kind indexer_dg, whatever its rotation) and by this tree's model (cold rows as indexer_dg_cold, the stream's late
start hwmodels/roofline.py CHAIN_COLD_HEAD, its terms derived from indexer_dg's: no cold row fitted yet), written to
hwmodels/calibration/data/production_kernels/deepgemm_indexer_blind4_predictions_<commits>.csv.

    python lab/kernels/predict_deepgemm_indexer_blind4.py MAIN_TREE_DIR     (a `git archive MAIN_COMMIT` unpacked there)

lab/kernels/measure_deepgemm_indexer.py --grid lab/kernels/deepgemm_indexer_blind4_grid.csv measures the same rows."""
from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAIN_COMMIT = "8b74743"
GRID = ROOT / "lab" / "kernels" / "deepgemm_indexer_blind4_grid.csv"
COLS = ["part", "batch", "context", "next_n", "rows", "keys", "rotation", "set"]


def grid_rows() -> list[dict]:
    rows = []

    def dec(b, c, n, rot="cold", tag="blind"):
        rows.append({"part": "decode", "batch": b, "context": c, "next_n": n, "rows": b * n, "keys": c,
                     "rotation": rot, "set": tag})
    for b, c in ((1, 3328), (2, 1536), (3, 5632), (1, 6656), (4, 3584), (2, 7680), (3, 1280), (1, 512)):
        dec(b, c, 1)                                   # small batch (<= 4), short context (<= 8K)
    for b, c in ((1, 12800), (2, 15360), (1, 49408), (3, 28672), (4, 20736), (2, 106496), (1, 90112)):
        dec(b, c, 1)                                   # small batch, long context
    for b, c in ((6, 2304), (10, 4096), (12, 1536), (24, 3072), (32, 1280), (9, 7168), (5, 6400), (28, 2048)):
        dec(b, c, 1)                                   # batch 5-32, short context
    for b, c in ((8, 16640), (12, 24576), (6, 45056), (20, 12288)):
        dec(b, c, 1)                                   # batch 5-32, long context
    for b, c in ((48, 2048), (64, 4352), (96, 1024), (40, 12288), (128, 3072), (72, 6144)):
        dec(b, c, 1)                                   # batch > 32
    for b, c in ((1, 4608), (2, 10240), (4, 2304), (8, 3072), (6, 20480), (20, 1536), (2, 1792)):
        dec(b, c, 2)                                   # verification next_n 2
    for b, c in ((2, 3584), (6, 2304), (48, 2048), (8, 16640), (4, 2304)):   # controls, warm8 (as the fit rows were)
        dec(b, c, 2 if (b, c) == (4, 2304) else 1, "warm8", "control")
    for n in (1, 2):                                   # the fit rows (batch 16) measured cold: fitted after, not blind
        for c in (2048, 8192, 32768, 65536, 131072):
            dec(16, c, n, "cold", "fit")
    return rows


PRICE = """
import json, sys
import pandas as pd
from hwmodels.spec import load_hardware
from simulator.calibration import fit_deepgemm_indexer as F
hw = load_hardware("H100-SXM")
df = pd.read_csv(sys.argv[1])
print(json.dumps([round(float(v), 3) for v in F.predict_us(df, hw, hw.efficiency)]))
"""


def price_with(tree: Path) -> list[float]:
    out = subprocess.run([sys.executable, "-c", PRICE, str(GRID)], capture_output=True, text=True, check=True,
                         cwd=str(tree), env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"})
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    main_tree = Path(sys.argv[1])
    rows = grid_rows()
    with open(GRID, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=COLS)
        w.writeheader()
        w.writerows(rows)
    here = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    pm, pn = price_with(main_tree), price_with(ROOT)
    out = ROOT / "hwmodels" / "calibration" / "data" / "production_kernels" / \
        f"deepgemm_indexer_blind4_predictions_main-{MAIN_COMMIT}_new-{here}.csv"
    with open(out, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=COLS + ["pred_main_us", "pred_new_us"])
        w.writeheader()
        for r, a, b in zip(rows, pm, pn):
            w.writerow({**r, "pred_main_us": a, "pred_new_us": b})
    print(out, len(rows))


if __name__ == "__main__":
    main()
