"""Price the H200 GEMM transfer grid before it is measured.

The fifth fp8 GEMM set (99 shapes: per-tensor / per-row / 1x128-128x128 block scales through torch._scaled_mm, decode M
2-56, mid M 96-768, prefill M 1536-8192) and the fourth small-M set (102 shapes: bf16 and per-tensor fp8 at M 1 / 24 /
40), both blind grids of the H100-SXM, re-run on the lent H200 (lab/kernels/measure_production_kernels.py --grid list).
Every shape is priced three ways on the H200 and two on the H100-SXM (reference):

  pred_us               the serving op model as the product charges it on the H200 (simulator/layers.py: decode-sized
                        bf16 / per-tensor rows one kernel filling the device, cuBLASLt's small-M model being off there:
                        simulator.kernels.cublaslt.priced_on; per-row and block rows by their kernels' structure)
  pred_kernel_us        the kernel families' model (the board's: cuBLASLt's small-M selection table and rule) on the
                        H200 with the H100-SXM's terms for the two kinds it needs (gemm, gemm_fp8: compute, memory,
                        fixed, the per-step chain), the H200's bandwidth: the H200 has no chain terms of its own
  pred_nochain_us       that model on the H200's own terms as written (no chain terms: what calibration code that
                        skips the device check computes; kept to show why it is not a price)
  pred_h100_us          the kernel families' model on the H100-SXM (its blind grids' model)
  pred_h100_serving_us  the serving op model on the H100-SXM

Writes hwmodels/calibration/data/production_kernels/h200_gemm_predictions.csv. (The file's first commit, b92c8a9,
held pred_nochain_us alone, labelled as the product's price: wrong, rewritten before anything was measured.)

    python lab/kernels/predict_h200_gemm.py
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from _committed import head_or_exit  # noqa: E402

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


#: the efficiency sections (dotted-key prefixes) of a GEMM kind taken whole from the H100-SXM for pred_kernel_us
KIND_PARTS = ("compute", "memory", "fixed_us", "iter_us", "cta_slots", "wave_fixed_us")
CHAIN_KINDS = ("gemm", "gemm_fp8")


def h100_chain_eff(hw200, hw100):
    """The H200's efficiency with gemm / gemm_fp8 as the H100-SXM fitted them (every KIND_PARTS section)."""
    from simulator.calibration.fit import efficiency_with

    e = hw100.efficiency
    table = {"compute": e.compute, "memory": e.memory, "fixed_us": e.fixed_s, "iter_us": e.iter_s,
             "cta_slots": e.cta_slots, "wave_fixed_us": e.wave_fixed_s}
    scale = {"fixed_us": 1e6, "iter_us": 1e6, "wave_fixed_us": 1e6}
    up = {f"{p}.{k}": table[p][k] * scale.get(p, 1.0) for p in KIND_PARTS for k in CHAIN_KINDS if k in table[p]}
    return efficiency_with(hw200.efficiency, up)


def price(df: pd.DataFrame, device: str, small_m: bool, eff=None) -> np.ndarray:
    hw = load_hardware(device)
    return np.round(FP.predict_gemm_us(FP.gemm_frame(df), hw, eff or hw.efficiency, small_m=small_m), 4)


def main() -> None:
    commit = head_or_exit(ROOT)
    df = shapes()
    df["dist"] = ""
    df["pred_us"] = price(df, "H200", small_m=False)
    df["pred_kernel_us"] = price(df, "H200", True, h100_chain_eff(load_hardware("H200"), load_hardware("H100-SXM")))
    df["pred_nochain_us"] = price(df, "H200", small_m=True)
    df["pred_h100_us"] = price(df, "H100-SXM", small_m=True)
    df["pred_h100_serving_us"] = price(df, "H100-SXM", small_m=False)
    df["model_commit"] = commit
    df.to_csv(OUT, index=False)
    print(f"{len(df)} shapes priced at {commit[:10]} -> {OUT}")
    cols = ["pred_us", "pred_kernel_us", "pred_nochain_us", "pred_h100_us", "pred_h100_serving_us"]
    print(df.groupby("regime")[cols].median().round(2).to_string())


if __name__ == "__main__":
    main()
