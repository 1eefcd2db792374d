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

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from indexer_blind_pricing import ROOT, write_predictions  # noqa: E402

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


def main() -> None:
    write_predictions(grid_rows(), COLS, GRID, Path(sys.argv[1]), MAIN_COMMIT, "blind4")


if __name__ == "__main__":
    main()
