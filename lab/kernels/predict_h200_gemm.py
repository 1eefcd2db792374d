"""Price the H200 GEMM transfer grid before it is measured.

The fifth fp8 GEMM set (99 shapes: per-tensor / per-row / 1x128-128x128 block scales through torch._scaled_mm, decode M
2-56, mid M 96-768, prefill M 1536-8192) and the fourth small-M set (102 shapes: bf16 and per-tensor fp8 at M 1 / 24 /
40), both blind grids of the H100-SXM, re-run on the lent H200 (lab/kernels/measure_production_kernels.py --grid list).
Every shape is priced by the product as committed on the H200 (its own fitted GEMM kinds; cuBLASLt's small-M selection
table and split rule read on the H100; the block kinds from the H100-SXM's file, unmeasured_kinds_from) and, for
reference, on the H100-SXM. Writes hwmodels/calibration/data/production_kernels/h200_gemm_predictions.csv (columns
family, kernel, dist, rows, n, k, set, regime, pred_us (H200), pred_h100_us, model_commit).

    python lab/kernels/predict_h200_gemm.py
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
from simulator.calibration import fit_production_topk_gemm as FP  # noqa: E402
from simulator.calibration import small_m_gemm_holdout as H  # noqa: E402

OUT = FP.DATA_DIR / "h200_gemm_predictions.csv"


def shapes() -> pd.DataFrame:
    """The two sets' shapes with their H100 regimes (the fifth set's kind x phase; the fourth set's kind x whether
    cuBLASLt's selection table covers the shape)."""
    five = pd.read_csv(FP.DATA_DIR / FP.BLIND5_PREDICTION, keep_default_na=False)[FP.SHAPE_KEYS]
    five["set"] = "fifth fp8 set"
    five["regime"] = FP.blind5_regime(five["kernel"], five["rows"])
    four = H.shapes(H.BLIND4_KN, H.BLIND4_M)
    four["set"] = "fourth small-M set"
    cov = FP.small_m_covered(FP.gemm_frame(four)).astype(bool)
    four["regime"] = [f"GEMM {k}: decode M<=40, {'selection table' if c else 'not in the table'}"
                      for k, c in zip(four["kernel"], cov)]
    return pd.concat([five, four], ignore_index=True)


def price(df: pd.DataFrame, device: str) -> np.ndarray:
    hw = load_hardware(device)
    return np.round(FP.predict_gemm_us(FP.gemm_frame(df), hw, hw.efficiency), 4)


def main() -> None:
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "simulator", "hwmodels", "lab"], cwd=ROOT,
                           capture_output=True, text=True).stdout.strip()
    if dirty:
        raise SystemExit(f"uncommitted changes under simulator/ hwmodels/ lab/: commit the model first\n{dirty}")
    df = shapes()
    df["dist"] = ""
    df["pred_us"] = price(df, "H200")
    df["pred_h100_us"] = price(df, "H100-SXM")
    df["model_commit"] = commit
    df.to_csv(OUT, index=False)
    print(f"{len(df)} shapes priced at {commit[:10]} -> {OUT}")
    print(df.groupby("regime")[["pred_us", "pred_h100_us"]].median().round(2).to_string())


if __name__ == "__main__":
    main()
