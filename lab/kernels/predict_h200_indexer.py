"""Price the H200 transfer grid's part F BEFORE it is measured: DeepGEMM's DSA-indexer kernels (the paged decode /
verification kernel on cold and warm keys, the ragged prefill kernel), every term fitted on the H100-SXM alone, on the
lent H200 (the same GH100 SM; HBM3e). The shapes are the H100's blind grids 4 (cold keys: its STANDING grid) and 3 (warm
and cold decode, prefill), re-run there by the same script (lab/kernels/measure_deepgemm_indexer.py --grid, DeepGEMM
54e2261 built on the device: lab/kernels/run_h200_transfer_f_device.sh). Two prices a row:

  pred_new_us   the product as committed on the H200 (simulator.calibration.fit_deepgemm_indexer predict_us; the H200's
                fitted file takes the indexer kinds from the H100-SXM's: unmeasured_kinds_from)
  pred_h100_us  the same model on the H100-SXM, beside h100_us, the H100's own measurement of the shape

Declared before the call: grid 4's rows, by grid 4's regimes (benchmarks/accuracy_sections/indexer.py), are the
indexer's H200 STANDING; grid 3's rows are shown beside them by rotation and part.

    python lab/kernels/predict_h200_indexer.py     # writes h200_transfer_f_predictions.csv
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from hwmodels.spec import load_hardware  # noqa: E402
from simulator.calibration import fit_deepgemm_indexer as FI  # noqa: E402

DATA = ROOT / "hwmodels/calibration/data/production_kernels"
OUT = DATA / "h200_transfer_f_predictions.csv"
KEYS = ["part", "batch", "context", "next_n", "rows", "keys", "rotation"]
#: (grid, its shape file, the H100's measurement of it)
GRIDS = ((4, "lab/kernels/deepgemm_indexer_blind4_grid.csv", "deepgemm_indexer_blind4_nvidia-h100-80gb-hbm3_2026-11-27.csv"),
         (3, "lab/kernels/deepgemm_indexer_blind3_grid.csv", "deepgemm_indexer_blind3_nvidia-h100-80gb-hbm3_2026-11-27.csv"))


def main() -> None:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    h200, h100 = load_hardware("H200"), load_hardware("H100-SXM")
    out = []
    for grid, shapes, meas in GRIDS:
        s = pd.read_csv(ROOT / shapes, keep_default_na=False)
        s["rotation"] = s["rotation"].astype(str) if "rotation" in s.columns else ""
        m = FI.load(DATA / meas)
        m["rotation"] = m["rotation"].fillna("").astype(str)
        m = m[KEYS + ["median_us"]].drop_duplicates(KEYS).rename(columns={"median_us": "h100_us"})
        s = s.merge(m, on=KEYS, how="left")
        s.insert(0, "grid", grid)
        s["pred_new_us"] = np.round(FI.predict_us(s, h200, h200.efficiency), 3)
        s["pred_h100_us"] = np.round(FI.predict_us(s, h100, h100.efficiency), 3)
        out.append(s)
    res = pd.concat(out, ignore_index=True)
    res["model_commit"] = commit
    res.to_csv(OUT, index=False)
    e = (res["pred_h100_us"] / res["h100_us"] - 1) * 100
    print(f"{len(res)} rows -> {OUT.relative_to(ROOT)} (model at {commit}); H100 model / H100 measured |err| median "
          f"{np.nanmedian(e.abs()):.1f} %, H200 / H100 price median {np.median(res['pred_new_us'] / res['pred_h100_us']):.3f}"
          f"; rows without an H100 time {int(res['h100_us'].isna().sum())}")


if __name__ == "__main__":
    main()
