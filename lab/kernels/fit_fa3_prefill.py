"""Fit FlashAttention-3's prefill tile terms (simulator/kernels/fa3.py FA3_PREFILL_BLOCK_SCALE for bf16 and fp8 K/V,
FA3_PREFILL_TILE_EXTRA_BLOCKS) on prefill grid 1's 'fit' rows (Llama-3.1-8B's heads, role fixed before the run), by
least squares on log(model / measured); prints the values and the errors on every committed prefill grid's FA3 rows
(grid 1's held-out rows and blind grid 2 were LOOKED-AT before this fit: not held out in the blind sense).

    python lab/kernels/fit_fa3_prefill.py
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from accuracy_sections.prefill_kernels import load  # noqa: E402

from simulator.calibration import prefill_kernels as PK  # noqa: E402
from simulator.kernels import fa3 as FA3  # noqa: E402


def priced(df: pd.DataFrame, x) -> np.ndarray:
    FA3.FA3_PREFILL_BLOCK_SCALE = {2.0: float(x[0]), 1.0: float(x[1])}
    FA3.FA3_PREFILL_TILE_EXTRA_BLOCKS = float(x[2])
    return PK.family_us(df, causal=True)


def main() -> None:
    g1 = load()
    g2 = load("_blind2")
    g1, g2 = (g[g["family"] == "fa3_prefill"].reset_index(drop=True) for g in (g1, g2))
    fit = g1[g1["role"] == "fit"].reset_index(drop=True)
    meas = fit["median_us"].to_numpy(float)
    r = least_squares(lambda x: np.log(priced(fit, x) / meas), np.array([1.0, 1.0, 0.5]),
                      bounds=([0.5, 0.5, 0.0], [2.0, 2.0, 5.0]))
    x = r.x
    print(f"fit rows {len(fit)}: scale bf16 {x[0]:.4f}, fp8 {x[1]:.4f}, tile extra {x[2]:.4f} blocks; "
          f"rms log error {np.sqrt(np.mean(r.fun ** 2)):.4f} (start {np.sqrt(np.mean(np.log(priced(fit, [1, 1, 0]) / meas) ** 2)):.4f})")
    for name, g in (("grid 1 fit", g1[g1["role"] == "fit"]), ("grid 1 held_out", g1[g1["role"] == "held_out"]),
                    ("blind grid 2 (looked-at)", g2)):
        g = g.reset_index(drop=True)
        for lab, xx in (("before", [1.0, 1.0, 0.0]), ("fitted", x)):
            e = (priced(g, xx) / g["median_us"].to_numpy(float) - 1.0) * 100.0
            by = pd.Series(e).groupby(g["dtype"].to_numpy())
            parts = ", ".join(f"{k} {v.abs().median():.1f} / {v.abs().quantile(0.9):.1f} ({v.median():+.1f})"
                              for k, v in by)
            print(f"  {name:26s} {lab:7s} {np.median(np.abs(e)):.1f} / {np.percentile(np.abs(e), 90):.1f} %  [{parts}]")


if __name__ == "__main__":
    main()
