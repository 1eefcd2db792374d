"""The second DeepGEMM DSA-indexer grid (blind): shapes in no committed measurement, weighted to decode at short
contexts and small batches (the regime the first grid missed), priced BEFORE the device measures them by main's model
(the tree at MAIN_COMMIT, its own fitted YAML) and by this tree's model, written to
hwmodels/calibration/data/production_kernels/deepgemm_indexer_blind2_predictions_<commits>.csv.

    python lab/kernels/predict_deepgemm_indexer_blind.py MAIN_TREE_DIR     (a `git archive MAIN_COMMIT` unpacked there)

The same grid is what lab/kernels/measure_deepgemm_indexer.py --grid measures (grid_rows below, written to
lab/kernels/deepgemm_indexer_blind2_grid.csv). Rows marked `replicate` repeat shapes of the first measurement (two fit
rows, two held-out rows) to see how far a second session moves them; they are not blind."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from indexer_blind_pricing import ROOT, write_predictions  # noqa: E402

MAIN_COMMIT = "c61edea"
GRID = ROOT / "lab" / "kernels" / "deepgemm_indexer_blind2_grid.csv"
COLS = ["part", "batch", "context", "next_n", "rows", "keys", "set"]


def grid_rows() -> list[dict]:
    rows = []

    def dec(b, c, n, tag="blind"):
        rows.append({"part": "decode", "batch": b, "context": c, "next_n": n, "rows": b * n, "keys": c, "set": tag})
    for b in (1, 2, 3, 6, 8):                         # short context, small batch (<= 8), next_n 1
        for c in (1024, 3072, 4096, 6144):
            dec(b, c, 1)
    for b in (1, 2, 8):                               # short context, small batch, next_n 2
        for c in (1024, 4096):
            dec(b, c, 2)
    for b in (2, 3, 6, 8):                            # long context, small batch
        for c in (16384, 49152, 98304):
            dec(b, c, 1)
    for c in (24576, 98304):
        dec(2, c, 2)
    for b in (12, 24, 32, 48):                        # larger batch, short and long
        for c in (1024, 4096, 12288, 49152):
            dec(b, c, 1)
    for b in (24, 48):
        for c in (4096, 49152):
            dec(b, c, 2)
    for s, k in ((2048, 2048), (2048, 16384), (6144, 6144), (512, 32768), (3072, 24576)):
        rows.append({"part": "prefill", "batch": 1, "context": k, "next_n": 0, "rows": s, "keys": k, "set": "blind"})
    for b, c in ((16, 2048), (16, 8192), (1, 2048), (1, 32768)):   # repeats of the first grid's shapes
        dec(b, c, 1, "replicate")
    return rows


def main() -> None:
    write_predictions(grid_rows(), COLS, GRID, Path(sys.argv[1]), MAIN_COMMIT, "blind2")


if __name__ == "__main__":
    main()
