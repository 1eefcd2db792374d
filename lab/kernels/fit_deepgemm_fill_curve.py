"""Fit DeepGEMM's pipeline fill curve (simulator.kernels.gemm_fp8.FILL_CURVE: the full fill, sync_us[gemm_fp8_block],
and the per-step ratio FILL_STEP_RATIO) on the fill7 K scans ONLY (deepgemm_gemm_fill7_*.csv, 32 DeepGEMM rows named as
fit rows before they were measured), the kind's other terms (memory, cta_fixed, iter, runtime_sfb_steps) held at the
committed values (hwmodels/calibration/fitted/H100-SXM.yaml). Least squares on log time, priced in-graph as
fit_production_topk_gemm.fit_block prices the kind (fit_production_topk_gemm.fit_fill_curve; the writer runs the same
fit). Prints the two terms, the rms and the per-row errors of the linear rule (the model before) and of the curve.
Grid 8's prediction (lab/kernels/predict_gemm_grid8.py) used this fit at 35b7db0 (1.5 us, 0.8677).

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

FILL7 = F.DEEPGEMM_FILL7_CSV
KIND = "gemm_fp8_block"


def _linear_eff(hw):
    """The committed terms with the linear unfilled-stage rule's time as the kind's sync_us (production_kernels.
    gemm_fp8_block.unfilled_stage_us, the value the model before the fill curve priced with)."""
    import hwmodels
    from hwmodels.yamlio import load_yaml

    rec = load_yaml(Path(hwmodels.__file__).resolve().parent / "calibration" / "fitted" / "H100-SXM.yaml",
                    "fitted efficiency file")["production_kernels"][KIND]
    e = hw.efficiency
    return replace(e, sync_s={**e.sync_s, KIND: rec["unfilled_stage_us"] * 1e-6})


def linear_price(g, hw) -> np.ndarray:
    """g's rows priced with the linear unfilled-stage rule (gemm_fp8.FILL_CURVE off), the other terms as committed."""
    old, G.FILL_CURVE = G.FILL_CURVE, False
    try:
        return F.predict_gemm_us(g, hw, _linear_eff(hw))
    finally:
        G.FILL_CURVE = old


def curve_price(g, hw, full_us: float, ratio: float) -> np.ndarray:
    """g's rows priced with the fill curve (full fill full_us, per-step ratio), the other terms as committed."""
    return F.fill_curve_us(g, hw, hw.efficiency, full_us, ratio)


def fit(hw=None) -> dict:
    """{'fill_us', 'fill_step_ratio', 'fill_curve_fit_rows', 'fill_curve_rms_log_error', 'rms_log_error_linear'} on the
    fill7 rows (fit_production_topk_gemm.fit_fill_curve)."""
    hw = hw or load_hardware("H100-SXM")
    g = F.deepgemm_frame(F.DATA_DIR / FILL7)
    y = np.log(g["median_us"].to_numpy(float))
    lin = np.log(linear_price(g, hw)) - y
    return F.fit_fill_curve(g, hw, hw.efficiency) | {"rms_log_error_linear": round(float(np.sqrt(np.mean(lin ** 2))), 4)}


def main():
    hw = load_hardware("H100-SXM")
    f = fit(hw)
    print(f)
    g = F.deepgemm_frame(F.DATA_DIR / FILL7)
    g["ks"] = np.ceil(g["K"] / 128).astype(int)
    g["linear_%"] = (linear_price(g, hw) / g["median_us"] - 1) * 100
    g["curve_%"] = (curve_price(g, hw, f["fill_us"], f["fill_step_ratio"]) / g["median_us"] - 1) * 100
    print(g[["m", "N", "K", "ks", "median_us", "linear_%", "curve_%"]].round(2).to_string())


if __name__ == "__main__":
    main()
