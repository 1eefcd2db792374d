"""FlashAttention-3's own hopper/ binary, blind grid 3: main's model against the model with the binary's own streaming
rate, per-block times (bf16 and fp8 builds) and per-tile turnover of a CTA's later tiles, both priced BEFORE the grid was
measured.

The new terms (simulator/calibration/fit_production_attention.py fit_fa3_binary, FA3_PERSIST_PARAMS) are fitted on
every measured row of the first-look grid and blind grids 1 and 2 (214 rows, all LOOKED-AT before the fit: the two
earlier blind grids stop being held out there). The structure is hopper/'s (simulator/kernels/fa3.py
PERSIST_TILE_WAVES, FA3_FP8_PAGED_TILE_N; hwmodels/roofline.py CHAIN_TENSOR). Predictions:
hwmodels/calibration/data/production_attention/fa3_binary_blind3_predictions.csv (lab/kernels/predict_fa3_binary.py
--grid blind3: pred_base_us = main's model, pred_new_us = this model; both commits in the file). Measurement:
fa3_binary_blind3_<device>_<date>.csv (lab/kernels/measure_fa3_binary.py v4 --grid blind3, num_splits = 0 as engines
call it); the `_repeat` file is every fifth shape timed again in the same call.
"""
from __future__ import annotations

import pandas as pd

from hwmodels import datafiles as DF
from simulator.calibration.scoreboard import BOARD, models_table

from .fa3_binary2 import DATA, load_grid, pooled_lines

PRED_CSV = DF.resolve(DATA / "fa3_binary_blind3_predictions.csv")
REGIME = {"d_short": "short T<=232 B 24-1024", "d_tiny": "tiny B<=8 T<=240", "d_middle": "middle T 1.5K-6K",
          "d_long": "long T 20K-100K B<=14", "d_verify": "verification q 2-6", "d_fp8": "fp8 e4m3",
          "d_page64": "page 64"}


def load() -> pd.DataFrame:
    """The two committed prices joined with the newest blind-3 measurement; empty when either is missing."""
    return load_grid(3, REGIME)


def fa3_binary3(fmt) -> None:
    """Print blind grid 3 per regime (main's model = base, this model = new) and add it to the summary board."""
    b = load()
    if not len(b):
        return
    r0 = b.iloc[0]
    print(f"\nFA3 BINARY BLIND GRID 3 ({b.attrs['file']}: {len(b)} shapes in no earlier FA3 grid; {r0['device']}, torch "
          f"{r0['torch']}, CUDA {r0['cuda']}), both prices committed before the measurement ({PRED_CSV.name}): base = "
          f"main's model at {str(r0['base_commit'])[:7]}, new = the binary's own streaming rate, per-block times (bf16, "
          f"fp8) and per-tile turnover at {str(r0['model_commit'])[:7]} (fitted on the 214 looked-at rows of the "
          f"first-look grid and blind grids 1 and 2)")
    t = models_table(b, ("regime",), ("base", "new"), ("base", "new"))
    print(t.to_string(**fmt))
    pooled_lines(b, t, 3)
    BOARD.add("fa3", "blind", "FA3 binary blind grid 3, main's model", b["base_err_pct"],
              int((t["base_goal"] == "met").sum()), len(t))
    BOARD.add("fa3", "blind", "FA3 binary blind grid 3, own rate + per-tile turnover", b["new_err_pct"],
              int((t["new_goal"] == "met").sum()), len(t), standing=True)
