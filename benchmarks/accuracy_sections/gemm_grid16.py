"""cuBLASLt block fp8 GEMM grid 16, BLIND, on the H200 (lab/kernels/predict_gemm_grid16.py, measured by
lab/kernels/run_gemm_grid16_device.sh): 31 shapes in no earlier CSV, K % 512 == 0, in grid 15's five regimes (prefill at
4 and 8 K steps, one-wave prefill, decode unsplit and split). Models, both priced on the H200 and committed before the
call (d554dfb / bfc1b16): `main` (the model then shipped: the H100-SXM's terms, unmeasured_kinds_from) and `new` (main
+ the last wave's output tiles at the L2's rate, hwmodels.roofline EPILOGUE_EXPOSED). Declared before the call: new
ships only if it meets more regimes than main (or as many with a lower pooled median and p90). It met 5 of 5 against
main's 4: SHIPPED; this grid holds the H200 STANDING of the cuBLASLt block GEMM.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from simulator.calibration import fit_production_topk_gemm as FP
from simulator.calibration.scoreboard import BOARD, models_table, pooled_lines

PRED = "gemm_grid16_prediction_h200_2026-11-28.csv"
MEAS = "gemm_grid16_nvidia-h200_2026-11-28.csv"
LABELS = ("main", "new")
FAMILY = "block fp8 GEMM: cuBLASLt, H200"
WHAT = {"main": "main (the H100's terms)", "new": "+ the last wave's exposed epilogue (shipped)"}


def load() -> pd.DataFrame:
    d = FP.DATA_DIR
    if not ((d / PRED).is_file() and (d / MEAS).is_file()):
        return pd.DataFrame()
    p = pd.read_csv(d / PRED, dtype={"model_commit": str})
    m = pd.read_csv(d / MEAS)
    b = p.merge(m[["rows", "k", "n", "median_us", "device"]], on=["rows", "k", "n"], how="inner")
    for lab in LABELS:
        b[f"{lab}_err_pct"] = (b[f"pred_{lab}_us"] / b["median_us"] - 1.0) * 100.0
    return b


def grid16_section() -> None:
    b = load()
    if not len(b):
        print(f"\ncuBLASLt block grid 16 (H200): not measured yet ({PRED} holds the prices)")
        return
    fmt = {"float_format": lambda v: f"{v:.1f}", "index": False}
    print(f"\n== cuBLASLt block fp8 GEMM grid 16 on the {b['device'].iloc[0]}, BLIND ({len(b)} shapes in no earlier CSV; "
          f"{PRED}, commit {str(b['model_commit'].iloc[0])[:7]}, before the call; measured {MEAS}): main = the model "
          "shipped at the call (the H100-SXM's terms on the H200), new = main + the last wave's output tiles at the "
          "L2's rate (EPILOGUE_EXPOSED): SHIPPED after this grid; |model/measured - 1| median / p90, signed median, %")
    t = models_table(b, ("regime",), LABELS, LABELS)
    print(t.to_string(**fmt))
    pooled_lines(b, t, LABELS, "  cuBLASLt grid 16")
    for lab in LABELS:
        e = b[f"{lab}_err_pct"].to_numpy(np.float64)
        BOARD.add(FAMILY, "blind", f"cuBLASLt grid 16 (H200), {WHAT[lab]}", e, int((t[f"{lab}_goal"] == "met").sum()),
                  len(t), standing=lab == "new")
    rep = FP.DATA_DIR / "gemm_grid16_replicate_nvidia-h200_2026-11-28.csv"
    if rep.is_file():
        r = b.merge(pd.read_csv(rep)[["rows", "k", "n", "median_us"]].rename(columns={"median_us": "rep_us"}),
                    on=["rows", "k", "n"])
        x = r["rep_us"] / r["median_us"]
        e = (r["pred_new_us"] / r["rep_us"] - 1.0) * 100.0
        print(f"  replicate ({rep.name}, a later process on another lease): {int(((x - 1.0).abs() <= 0.02).sum())} of "
              f"{len(r)} rows within 2 % (M 16 x K 3584 x N 12288 {100 * (x.max() - 1):+.0f} %: the same kernel and grid); "
              f"new on the replicate {np.median(np.abs(e)):.1f} / {np.percentile(np.abs(e), 90):.1f} %")
    h = b["pred_new_h100_us"] / b["pred_main_h100_us"] - 1.0
    print(f"  the same rule on the H100-SXM's prices of these shapes: {100 * np.median(h):+.1f} % median "
          f"({100 * h.min():+.1f}..{100 * h.max():+.1f}); the H100's own STANDING stays on grid 15 (main's committed "
          "prices: no H100 was lent since)")
