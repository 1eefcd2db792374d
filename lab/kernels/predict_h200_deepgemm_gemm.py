"""Price the H200 transfer grid's part G BEFORE it is measured: DeepGEMM's block-scaled fp8 GEMM (fp8_gemm_nt, the
sm90 1D2D kernel; kind gemm_fp8_block), every term fitted on the H100-SXM alone, on the lent H200. The shapes are the
H100's DeepGEMM rows of block grid 8 (one-wave K <= 1024, block_m 64 one wave, controls: the kind's STANDING grid there)
and of the decode-3 grid (decode M 1-128 over DeepSeek-V3 / Kimi-K2 / Qwen3 layers, prefill controls), re-run there by
the same script (lab/kernels/measure_deepgemm_gemm.py, DeepGEMM 54e2261 built on the device with DG_API_GROUPS
gemm,layout,runtime: lab/kernels/run_h200_transfer_g_device.sh). Two prices a row:

  pred_new_us   the product as committed on the H200 (simulator.calibration.fit_production_topk_gemm predict_gemm_us,
                kernel fp8_block; the H200's fitted file takes the kind from the H100-SXM's: unmeasured_kinds_from)
  pred_h100_us  the same model on the H100-SXM, beside h100_us, the H100's own measurement of the shape

Declared before the call: each grid's rows by its own regimes (the prediction files' `regime` column) are the DeepGEMM
GEMM's two H200 STANDING rows, as grid 8 and decode-3 are on the H100. Writes h200_transfer_g_predictions.csv and the
call's grid h200_transfer_g_grid.csv (kernel, rows, k, n; DeepGEMM rows only, each shape once).

    python lab/kernels/predict_h200_deepgemm_gemm.py
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
from simulator.calibration import fit_production_topk_gemm as F  # noqa: E402

DATA = ROOT / "hwmodels/calibration/data/production_kernels"
OUT = DATA / "h200_transfer_g_predictions.csv"
GRID = DATA / "h200_transfer_g_grid.csv"
#: (grid, the H100's committed prediction (shapes and regimes), the H100's measurement)
GRIDS = (("grid8", "gemm_grid8_prediction_35b7db0_2026-11-27_deepgemm.csv", "gemm_grid8_nvidia-h100-80gb-hbm3_2026-11-27.csv"),
         ("decode3", "deepgemm_gemm_decode3_prediction_bbe3701_2026-11-27.csv",
          "deepgemm_gemm_decode3_nvidia-h100-80gb-hbm3_2026-11-27.csv"))


def price(df: pd.DataFrame, hw) -> np.ndarray:
    f = pd.DataFrame({"family": "gemm", "kernel": "fp8_block", "dist": "", "rows": df["rows"], "n": df["n"],
                      "k": df["k"]})
    return F.predict_gemm_us(F.gemm_frame(f), hw, hw.efficiency)


def main() -> None:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    h200, h100 = load_hardware("H200"), load_hardware("H100-SXM")
    out = []
    for grid, pred, meas in GRIDS:
        p = pd.read_csv(DATA / pred)
        p = p[p["kernel"] == "deepgemm"][["kernel", "rows", "k", "n", "regime"]].copy()
        m = pd.read_csv(DATA / meas)
        m = m[(m["kernel"] == "deepgemm") & pd.to_numeric(m["median_us"], errors="coerce").notna()]
        m = m[["rows", "k", "n", "median_us"]].drop_duplicates(["rows", "k", "n"]).rename(columns={"median_us": "h100_us"})
        p = p.merge(m, on=["rows", "k", "n"], how="left")
        p.insert(0, "grid", grid)
        p["pred_new_us"] = np.round(price(p, h200), 4)
        p["pred_h100_us"] = np.round(price(p, h100), 4)
        out.append(p)
    res = pd.concat(out, ignore_index=True)
    res["model_commit"] = commit
    res.to_csv(OUT, index=False)
    res[["kernel", "rows", "k", "n"]].drop_duplicates().to_csv(GRID, index=False)
    e = (res["pred_h100_us"] / res["h100_us"] - 1) * 100
    print(f"{len(res)} rows -> {OUT.relative_to(ROOT)}, {len(res[['rows', 'k', 'n']].drop_duplicates())} shapes -> "
          f"{GRID.relative_to(ROOT)} (model at {commit}); H100 model / measured |err| median {np.nanmedian(e.abs()):.1f} "
          f"%, H200 / H100 price median {np.median(res['pred_new_us'] / res['pred_h100_us']):.3f}; rows without an H100 "
          f"time {int(res['h100_us'].isna().sum())}")


if __name__ == "__main__":
    main()
