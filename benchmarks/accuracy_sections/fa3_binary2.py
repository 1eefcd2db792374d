"""FlashAttention-3's own hopper/ binary, blind grid 2: main's model against the model with the persistent kernel's own
kind (attn_fa3_persist: the tile scheduler's dependent loads per tile, a partial last round of tiles after the full
rounds) and the prepare kernel's own terms (attn_prepare_fa3), both priced BEFORE the grid was measured.

Fit rows of the new terms (simulator/calibration/fit_production_attention.py fit_fa3_binary, all LOOKED-AT before the
fit): the first-look grid's num_splits = 1 rows and its `short` rows, blind grid 1's `b_short` rows (57 rows), and the
prepare kernel's records in both grids' profiles (93). Predictions: hwmodels/calibration/data/production_attention/
fa3_binary_blind2_predictions.csv (lab/kernels/predict_fa3_binary.py --grid blind2: pred_base_us = main's model,
pred_new_us = this model; both commits in the file). Measurement: fa3_binary_blind2_<device>_<date>.csv
(lab/kernels/measure_fa3_binary.py v3 --grid blind2, num_splits = 0 as engines call it); a `_repeat` file is the same
grid timed again in the same call.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from hwmodels import datafiles as DF
from simulator.calibration.scoreboard import BOARD, models_table

DATA = Path(__file__).resolve().parents[2] / "hwmodels/calibration/data/production_attention"
PRED_CSV = DF.resolve(DATA / "fa3_binary_blind2_predictions.csv")
KEYS = ["model", "dtype", "heads", "kv_heads", "head_dim", "batch", "q_rows", "context", "page_size", "num_splits"]
REGIME = {"c_tiny": "tiny B<=8 T<=200", "c_short": "short T<=200 B 32-512", "c_split": "split B 2-12 T 2.5K-20K",
          "c_fp8": "fp8 e4m3", "c_control": "controls"}


def load_grid(grid: int, regime: dict) -> pd.DataFrame:
    """Blind grid `grid`'s two committed prices (fa3_binary_blind<grid>_predictions.csv) joined with its newest
    measurement, errors in % and the regime named by `regime` (tag -> name); empty when either file is missing."""
    pred = DF.resolve(DATA / f"fa3_binary_blind{grid}_predictions.csv")
    meas = sorted(f for f in DF.glob(DATA, f"fa3_binary_blind{grid}_nvidia-*.csv")
                  if not DF.stem(f).endswith(("_grids", "_repeat", "_nvidia-smi")))
    if not pred.exists() or not meas:
        return pd.DataFrame()
    p = pd.read_csv(pred)
    m = pd.read_csv(meas[-1])
    m = m[pd.to_numeric(m["median_us"], errors="coerce").notna()]
    b = p.merge(m[KEYS + ["median_us", "device", "date", "torch", "cuda"]], on=KEYS)
    b.attrs["file"] = meas[-1].name
    b["regime"] = b["tag"].map(regime).fillna(b["tag"])
    for lab in ("base", "new"):
        b[f"{lab}_err_pct"] = (b[f"pred_{lab}_us"] / b["median_us"] - 1.0) * 100.0
    return b


def pooled_lines(b: pd.DataFrame, t: pd.DataFrame, grid: int) -> None:
    """One line per model (base, new): n, |error| median / p90, signed median, regimes met of the table t."""
    for lab in ("base", "new"):
        e = b[f"{lab}_err_pct"]
        print(f"fa3 binary blind {grid}, {lab}: n {len(e)}, median |error| {np.median(e.abs()):.1f} %, p90 "
              f"{np.percentile(e.abs(), 90):.1f} %, signed {np.median(e):+.1f} %; regimes met "
              f"{int((t[lab + '_goal'] == 'met').sum())} of {len(t)}")


def load() -> pd.DataFrame:
    """The two committed prices joined with the newest blind-2 measurement; empty when either is missing."""
    return load_grid(2, REGIME)


def fa3_binary2(fmt) -> None:
    """Print blind grid 2 per regime (main's model = base, this model = new) and add it to the summary board."""
    b = load()
    if not len(b):
        return
    r0 = b.iloc[0]
    print(f"\nFA3 BINARY BLIND GRID 2 ({b.attrs['file']}: {len(b)} shapes in neither committed FA3-binary grid; "
          f"{r0['device']}, torch {r0['torch']}, CUDA {r0['cuda']}), both prices committed before the measurement "
          f"({PRED_CSV.name}): base = main's model at {str(r0['base_commit'])[:7]}, new = the persistent kernel's own "
          f"kind (scheduler loads per tile, partial last round) and the prepare kernel's own terms at "
          f"{str(r0['model_commit'])[:7]} (fitted on looked-at rows of the first-look grid and blind grid 1)")
    t = models_table(b, ("regime",), ("base", "new"), ("base", "new"))
    print(t.to_string(**fmt))
    pooled_lines(b, t, 2)
    BOARD.add("fa3", "blind", "FA3 binary blind grid 2, main's model", b["base_err_pct"],
              int((t["base_goal"] == "met").sum()), len(t))
    BOARD.add("fa3", "blind", "FA3 binary blind grid 2, persistent kind + prepare terms", b["new_err_pct"],
              int((t["new_goal"] == "met").sum()), len(t))
