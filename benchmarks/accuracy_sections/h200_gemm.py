"""The H200 GEMM transfer grid (lab/kernels/predict_h200_gemm.py, measured by lab/kernels/run_h200_gemm_device.sh): the
H100-SXM's fifth fp8 GEMM set (99 shapes) and fourth small-M set (102) re-run on the lent H200, every row priced and
committed before the call:

  serving   the serving op model as the product charges it on the H200 (decode-sized bf16 / per-tensor rows one kernel
            filling the device: cuBLASLt's small-M model is off in serving, simulator.kernels.cublaslt.priced_on) -- the
            H200 STANDING of GEMM bf16 / fp8_tensorwise / fp8_rowwise
  kernel    the kernel families' model (the board's: cuBLASLt's small-M table and rule) with the H100-SXM's gemm /
            gemm_fp8 terms on the H200 (not in the product: the H200's own gemm terms carry no per-step chain)
  h100      the kernel families' model on the H100-SXM against the H100's own measurement of the same shapes

The fifth set's block rows ran torch._scaled_mm's block path (cuBLASLt's kernel) but carry the label fp8_block, which
the calibration prices as DeepGEMM's kernel: shown apart, beside the cuBLASLt block model's price of the same rows
(the model as shipped now, computed after the call: looked-at).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from simulator.calibration.scoreboard import BOARD, models_table

PRED = "h200_gemm_predictions.csv"
MEAS = "production_kernels_nvidia-h200_2026-11-28_h200gemm.csv"
H100_MEAS = ("production_kernels_nvidia-h100-80gb-hbm3_2026-11-27_blind5.csv",
             "production_kernels_nvidia-h100-80gb-hbm3_2026-11-27_blind4.csv")
LABELS = ("serving", "kernel", "h100")
FAMILIES = ("GEMM bf16", "GEMM fp8_rowwise", "GEMM fp8_tensorwise")


def load() -> pd.DataFrame:
    """The grid's rows joined with their committed prices and the H100's measurement of the same shapes."""
    from simulator.calibration import fit_production_topk_gemm as FP

    d = FP.DATA_DIR
    if not ((d / PRED).is_file() and (d / MEAS).is_file()):
        return pd.DataFrame()
    b = FP._predicted_and_measured(d / PRED, d / MEAS)
    h = pd.concat([pd.read_csv(d / f, keep_default_na=False) for f in H100_MEAS if (d / f).is_file()])
    h["dist"] = h["dist"].astype(str)
    b = b.merge(h[FP.SHAPE_KEYS + ["median_us"]].rename(columns={"median_us": "h100_meas_us"}), on=FP.SHAPE_KEYS,
                how="left")
    meas = b["median_us"].astype(float)
    b["serving_err_pct"] = (b["pred_us"].astype(float) / meas - 1.0) * 100.0
    b["kernel_err_pct"] = (b["pred_kernel_us"].astype(float) / meas - 1.0) * 100.0
    b["h100_err_pct"] = (b["pred_h100_us"].astype(float) / b["h100_meas_us"].astype(float) - 1.0) * 100.0
    b["family_label"] = b["regime"].str.split(":").str[0]
    return b


def block_as_cublaslt(b: pd.DataFrame) -> pd.DataFrame:
    """The block rows priced with the cuBLASLt block model (kernel fp8_block_cublaslt) on the H200: err_pct, %."""
    from hwmodels.spec import load_hardware
    from simulator.calibration import fit_production_topk_gemm as FP

    x = b[b["kernel"] == "fp8_block"].copy()
    f = x[FP.SHAPE_KEYS].copy()
    f["kernel"] = "fp8_block_cublaslt"
    hw = load_hardware("H200")
    x["cl_us"] = FP.predict_gemm_us(FP.gemm_frame(f), hw, hw.efficiency)
    x["err_pct"] = (x["cl_us"] / x["median_us"].astype(float) - 1.0) * 100.0
    return x


def h200_gemm(fmt: dict | None = None) -> None:
    fmt = fmt or {"index": False, "float_format": lambda v: f"{v:.1f}"}
    b = load()
    if not len(b):
        print(f"\nH200 GEMM transfer grid: not measured yet ({PRED} holds the prices)")
        return
    commit = str(b["model_commit"].iloc[0])[:7]
    print(f"\n== THE H200 GEMM TRANSFER GRID ({len(b)} shapes: the H100's fifth fp8 set and fourth small-M set re-run on "
          f"the H200; {PRED}, commit {commit}, before the call; measured {MEAS}), BLIND: serving = the serving op model "
          "as the product charges it on the H200 (STANDING), kernel = the kernel families' small-M model with the "
          "H100-SXM's gemm / gemm_fp8 terms (not in the product), h100 = the kernel model on the H100 against the "
          "H100's own measurement; |model/measured - 1| median / p90, signed median, %")
    main = b[b["kernel"] != "fp8_block"]
    t = models_table(main, ("regime",), LABELS, LABELS)
    print(t.to_string(**fmt))
    ratio = (b["median_us"].astype(float) / b["h100_meas_us"].astype(float))
    small = b["regime"].str.contains("decode")
    print(f"  measured H200 / H100 time of the same shapes: decode rows {ratio[small].median():.3f} "
          f"[{ratio[small].min():.2f}, {ratio[small].max():.2f}], the others {ratio[~small].median():.3f}")
    fam = t["regime"].str.split(":").str[0]
    for f in FAMILIES:
        g = main[main["family_label"] == f]
        tt = t[fam == f]
        for lab, what, stand in (("serving", "the serving op model (the product's price)", True),
                                 ("kernel", "the kernel model with the H100-SXM's gemm terms (not in the product)",
                                  False)):
            BOARD.add(f"{f}, H200", "blind", f"H200 GEMM transfer grid, {what}", g[f"{lab}_err_pct"],
                      int((tt[f"{lab}_goal"] == "met").sum()), len(tt), standing=stand)
    for lab in LABELS:
        e = main[f"{lab}_err_pct"].dropna()
        print(f"  {lab}: median |error| {np.median(e.abs()):.1f} %, p90 {np.percentile(e.abs(), 90):.1f} %, signed "
              f"{np.median(e):+.1f} %; regimes met {int((t[lab + '_goal'] == 'met').sum())} of {len(t)}")
    x = block_as_cublaslt(b)
    if len(x):
        tb = models_table(x.assign(cl_err_pct=x["err_pct"]), ("regime",), ("serving", "cl"), ("serving", "cl"))
        print("  the fifth set's block rows (torch._scaled_mm's block path: cuBLASLt's kernel), priced as labelled "
              "(DeepGEMM's kernel, serving) and by the cuBLASLt block model as shipped now (cl: computed after the "
              "call, LOOKED-AT):")
        print(tb.to_string(**fmt))
