"""The third DeepGEMM DSA-indexer grid (blind): shapes in no committed measurement, weighted to the regimes the second
grid missed (verification next_n 2 at short chains, prefill with few query blocks per CTA) and to decode at small
batches, each small-batch decode shape measured twice: with the first two grids' key rotation ("warm8": 8 block
tables, whose pages fit the 50 MB L2 at these sizes) and with one fresh table per call over a 400 MB pool ("cold":
>= 150 MB of pages between two uses of a page, as a decode step's 61 layers, each on its own keys); a few controls from
the regimes that passed. Priced BEFORE the device measures them by main's model (the tree at MAIN_COMMIT, its own
fitted YAML) and by this tree's model, written to
hwmodels/calibration/data/production_kernels/deepgemm_indexer_blind3_predictions_<commits>.csv.

    python lab/kernels/predict_deepgemm_indexer_blind3.py MAIN_TREE_DIR     (a `git archive MAIN_COMMIT` unpacked there)

The same grid is what lab/kernels/measure_deepgemm_indexer.py --grid measures (grid_rows below, written to
lab/kernels/deepgemm_indexer_blind3_grid.csv). Rows marked `replicate` repeat shapes of the earlier grids (warm8 as
measured then, and cold) to see the rotation's effect on shapes already measured; they are not blind. Both models
price a shape once, whatever its rotation (the model prices the engine's step)."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from indexer_blind_pricing import ROOT, write_predictions  # noqa: E402

MAIN_COMMIT = "5b35f90"
GRID = ROOT / "lab" / "kernels" / "deepgemm_indexer_blind3_grid.csv"
COLS = ["part", "batch", "context", "next_n", "rows", "keys", "rotation", "set"]


def grid_rows() -> list[dict]:
    rows = []

    def dec(b, c, n, rot="warm8", tag="blind"):
        rows.append({"part": "decode", "batch": b, "context": c, "next_n": n, "rows": b * n, "keys": c,
                     "rotation": rot, "set": tag})
    for b, c in ((3, 2048), (5, 3072), (12, 2048), (6, 5120), (1, 12288), (4, 6144)):    # verify, one item per CTA
        dec(b, c, 2)
    for b, c in ((1, 49152), (3, 16384), (6, 12288), (3, 40960), (10, 16384), (2, 65536)):   # verify, 2-5 items
        dec(b, c, 2)
    for b, c in ((32, 8192), (96, 16384), (12, 65536), (40, 24576)):   # verify, long chains
        dec(b, c, 2)
    for b, c in ((3, 2048), (5, 3072), (12, 2048)):   # verify, cold keys
        dec(b, c, 2, "cold")
    for b in (1, 4, 7):                               # decode next_n 1, short context, small batch: warm8 and cold
        for c in (1536, 2560, 5120, 7168):
            dec(b, c, 1)
            dec(b, c, 1, "cold")
    for b, c in ((1, 24576), (3, 81920), (4, 40960), (2, 20480)):   # long context, small batch: warm8 and cold
        dec(b, c, 1)
        dec(b, c, 1, "cold")
    for b, c in ((20, 3072), (40, 6144), (100, 1024), (64, 5120), (20, 24576), (40, 65536), (10, 40960)):   # controls
        dec(b, c, 1)
    for b, c in ((20, 3072), (100, 1024)):
        dec(b, c, 1, "cold")
    for b, c in ((1, 1024), (2, 4096), (8, 4096), (8, 6144), (1, 32768)):   # shapes of grid 2: as then and cold
        dec(b, c, 1, "warm8", "replicate")
        dec(b, c, 1, "cold", "replicate")
    for s, k in ((1536, 1536), (3072, 3072), (1024, 4096), (2048, 8192), (512, 8192), (768, 49152), (4096, 12288),
                 (2560, 20480)):
        rows.append({"part": "prefill", "batch": 1, "context": k, "next_n": 0, "rows": s, "keys": k, "rotation": "",
                     "set": "blind"})
    return rows


def main() -> None:
    write_predictions(grid_rows(), COLS, GRID, Path(sys.argv[1]), MAIN_COMMIT, "blind3")


if __name__ == "__main__":
    main()
