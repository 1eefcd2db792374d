"""Fit DeepGEMM's pipeline fill curve (simulator.kernels.gemm_fp8.FILL_CURVE: the full fill, sync_us[gemm_fp8_block],
and the per-step ratio FILL_STEP_RATIO) on the fill7 K scans ONLY (deepgemm_gemm_fill7_*.csv, 32 DeepGEMM rows named as
fit rows before they were measured), the kind's other terms (memory, cta_fixed, iter, runtime_sfb_steps) held at the
committed values (hwmodels/calibration/fitted/H100-SXM.yaml). Least squares on log time, priced in-graph as
fit_production_topk_gemm.fit_block prices the kind. Prints the two terms, the rms and the per-row errors of the linear
rule (committed) and of the curve.

    python lab/kernels/fit_deepgemm_fill_curve.py
"""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from hwmodels.spec import load_hardware  # noqa: E402
from simulator.calibration import fit_production_topk_gemm as F  # noqa: E402
from simulator.kernels import gemm_fp8 as G  # noqa: E402

FILL7 = "deepgemm_gemm_fill7_nvidia-h100-80gb-hbm3_2026-11-27.csv"
KIND = "gemm_fp8_block"


def curve_price(g, hw, full_us: float, ratio: float) -> np.ndarray:
    """g's rows priced with the fill curve (full fill full_us, per-step ratio), the other terms as committed."""
    e = hw.efficiency
    e = replace(e, sync_s={**e.sync_s, KIND: full_us * 1e-6})
    old = (G.FILL_CURVE, G.FILL_STEP_RATIO)
    G.FILL_CURVE, G.FILL_STEP_RATIO = True, ratio
    try:
        return F.predict_gemm_us(g, hw, e)
    finally:
        G.FILL_CURVE, G.FILL_STEP_RATIO = old


def fit(hw=None) -> dict:
    """{'fill_us', 'fill_step_ratio', 'fit_rows', 'rms_log_error', 'rms_log_error_linear'} on the fill7 rows."""
    from scipy.optimize import least_squares

    hw = hw or load_hardware("H100-SXM")
    g = F.deepgemm_frame(F.DATA_DIR / FILL7)
    y = np.log(g["median_us"].to_numpy(float))

    def resid(x):
        return np.log(np.maximum(curve_price(g, hw, x[0], x[1]), 1e-3)) - y
    r = least_squares(resid, [1.2, 0.8], bounds=([0.0, 0.3], [5.0, 0.999]))
    lin = np.log(F.predict_gemm_us(g, hw, hw.efficiency)) - y
    return {"fill_us": round(float(r.x[0]), 4), "fill_step_ratio": round(float(r.x[1]), 4), "fit_rows": len(g),
            "rms_log_error": round(float(np.sqrt(np.mean(r.fun ** 2))), 4),
            "rms_log_error_linear": round(float(np.sqrt(np.mean(lin ** 2))), 4)}


def main():
    hw = load_hardware("H100-SXM")
    f = fit(hw)
    print(f)
    g = F.deepgemm_frame(F.DATA_DIR / FILL7)
    g["ks"] = np.ceil(g["K"] / 128).astype(int)
    g["linear_%"] = (F.predict_gemm_us(g, hw, hw.efficiency) / g["median_us"] - 1) * 100
    g["curve_%"] = (curve_price(g, hw, f["fill_us"], f["fill_step_ratio"]) / g["median_us"] - 1) * 100
    print(g[["m", "N", "K", "ks", "median_us", "linear_%", "curve_%"]].round(2).to_string())


if __name__ == "__main__":
    main()
