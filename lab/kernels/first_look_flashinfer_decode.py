"""Price FlashInfer's decode kernels from their source structure alone, BEFORE any FlashInfer measurement is looked at:
the exact shapes lab/kernels/measure_production_attention.py measures (parts fi_decode and fi_tc), launches from
simulator/kernels/flashinfer.py (plan rules of flashinfer v0.6.4), rates borrowed from the committed H100 fit of the
closest family (FlashAttention-2 split-KV, kind attn_fa2, and its combine kernel; the per-CTA dependent loads at the
measured DRAM latency): simulator/calibration/fit_production_attention.py `borrowed_efficiency`. Writes
hwmodels/calibration/data/production_attention/first_look_flashinfer_decode.csv (committed before the device run).

    python lab/kernels/first_look_flashinfer_decode.py [--out PATH]
"""
from __future__ import annotations

import argparse
from pathlib import Path

import measure_production_attention as campaign  # the campaign's shape grids (this script's folder)
import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    from hwmodels.spec import load_hardware
    from simulator.calibration import fit_production_attention as FP

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "hwmodels/calibration/data/production_attention/first_look_flashinfer_decode.csv"))
    args = ap.parse_args()
    m = campaign
    df = pd.DataFrame(m.shapes("fi_decode") + m.shapes("fi_tc"))
    df["median_us"] = np.nan
    hw = load_hardware("H100-SXM")
    eff = FP.borrowed_efficiency(hw)
    ops = FP.build_ops(df, hw.units, float(hw.smem_per_unit_bytes))
    df["first_look_us"] = np.round(FP.predict_us(ops, hw, eff, len(df)), 3)
    df = df.drop(columns=["median_us"])
    df["priced_with"] = "simulator/kernels/flashinfer.py launches; terms of attn_fa2 / attn_combine_fa2 (H100-SXM fit)"
    df.to_csv(args.out, index=False)
    print(f"{len(df)} shapes -> {args.out}")
    print(df.groupby(["family", "model", "dtype", "page_size"])["first_look_us"].describe()[["count", "min", "50%",
                                                                                             "max"]].to_string())


if __name__ == "__main__":
    main()
