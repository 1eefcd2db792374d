"""Fit the tensor-core (FA2 prefill) kernel's bf16 tile-chain rates from the tile-rate scan (--grid fi_tc_scan12).

The scan's FIT rows are its one-CTA rows (batch 1, one KV head, split-KV off: one CTA walks the whole context). For
each q (one CTA_TILE_Q / CTA_TILE_KV configuration) the time is fitted as a + s x tiles (tiles = ceil(context /
CTA_TILE_KV)): s is one tile's time on the CTA's chain. The model's step per tile after the first
(simulator/kernels/flashinfer.py fi_tc_bf16_steps) is

    s = 2 x (FI_TC_LOAD_S + tile bytes / FI_TC_TILE_RATE_SM) + warp MMA FLOPs / FI_TC_WARP_MMA_FLOPS

(one K and one V tile waited on, each a dependent load plus its bytes at one SM's rate; a warp's MMA blocks of that
tile). The two unknowns 1 / rate and 1 / warp rate are fitted by non-negative least squares over the configurations'
slopes (FI_TC_LOAD_S fixed: the device's measured DRAM latency). A zero coefficient means the scan sees no such term
(rate = inf). The many-CTA rows (2 .. 132 CTAs, one per SM) are NOT fitted: their slope per tile is printed beside the
one-CTA slope (does the per-SM rate hold when many SMs load at once).

The procedure is fixed before the scan is measured (committed with the grid): run it on the measured scan CSV, put the
two printed rates into flashinfer.py, refit the fitted terms (fit_production_attention --write) and price the blind
grid with predict_fresh_production_attention.py --grid fi_tc_blind12.

    python lab/kernels/fit_fi_tc_tile_rates.py SCAN.csv [--out RATES.csv]
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from simulator.kernels import flashinfer as FI  # noqa: E402

SMEM_PER_SM = 233472.0   # H100 SXM, the value the fit scripts use (hw.smem_per_unit_bytes)


def configs(df: pd.DataFrame) -> pd.DataFrame:
    """Each row's CTA_TILE_Q, CTA_TILE_KV, tiles, and one tile's bytes (K or V) and one warp's MMA FLOPs."""
    g = df["heads"] / df["kv_heads"]
    ctq = FI.fa2_cta_tile_q(df["q_rows"] * g, df["head_dim"])
    kvb = np.where(df["dtype"] == "fp8", 1.0, 2.0)
    tile = FI.fa2_tile_kv(ctq, df["head_dim"], kvb, SMEM_PER_SM)[0]
    blocks = ctq / (16.0 * np.where(ctq > 16, 4.0, 1.0)) * FI.fa2_fp8_frags(ctq, tile)
    return df.assign(ctq=ctq, tile_kv=tile, tiles=np.ceil(df["context"] / tile),
                     tile_bytes=tile * df["head_dim"] * kvb, warp_flops=blocks * 4.0 * 16.0 * 16.0 * df["head_dim"])


def slopes(df: pd.DataFrame) -> pd.DataFrame:
    """Per (batch, q): the least-squares slope (us per tile) and intercept of median_us on tiles."""
    rows = []
    for (b, q), d in df.groupby(["batch", "q_rows"]):
        if d["tiles"].nunique() < 2:
            continue
        s, a = np.polyfit(d["tiles"], d["median_us"], 1)
        rows.append(dict(batch=b, q_rows=q, ctq=d["ctq"].iloc[0], tile_kv=d["tile_kv"].iloc[0],
                         tile_bytes=d["tile_bytes"].iloc[0], warp_flops=d["warp_flops"].iloc[0], n=len(d),
                         slope_us=s, intercept_us=a))
    return pd.DataFrame(rows)


def fit_rates(one: pd.DataFrame) -> tuple[float, float]:
    """(FI_TC_TILE_RATE_SM, FI_TC_WARP_MMA_FLOPS) from the one-CTA slopes (non-negative least squares)."""
    from scipy.optimize import nnls
    y = one["slope_us"].to_numpy() * 1e-6 - 2.0 * FI.FI_TC_LOAD_S
    A = np.column_stack([2.0 * one["tile_bytes"].to_numpy(), one["warp_flops"].to_numpy()])
    scale = A.max(axis=0)
    x, _ = nnls(A / scale, y)
    x = x / scale
    return (1.0 / x[0] if x[0] > 0 else math.inf), (1.0 / x[1] if x[1] > 0 else math.inf)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scan")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    df = pd.read_csv(args.scan)
    df = df[df["median_us"].notna() & df["note"].fillna("").str.contains("nosplit") & (df["dtype"] == "bf16")]
    df = configs(df)
    sl = slopes(df)
    one = sl[sl["batch"] == 1]
    rate, warp = fit_rates(one)
    model = 2.0 * (FI.FI_TC_LOAD_S + sl["tile_bytes"] / rate) + sl["warp_flops"] / warp
    sl["model_slope_us"] = model * 1e6
    sl["fit_row"] = sl["batch"] == 1
    print(sl.round(4).to_string(index=False))
    print(f"FI_TC_TILE_RATE_SM = {rate:.4g} B/s per SM (was {FI.FI_TC_TILE_RATE_SM:.4g}); "
          f"FI_TC_WARP_MMA_FLOPS = {warp:.4g} FLOP/s per warp (was {FI.FI_TC_WARP_MMA_FLOPS:.4g})")
    if args.out:
        sl.assign(fitted_tile_rate_sm=rate, fitted_warp_mma_flops=warp).to_csv(args.out, index=False)


if __name__ == "__main__":
    main()
