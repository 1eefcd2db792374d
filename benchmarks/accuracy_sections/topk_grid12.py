"""TensorRT-LLM's top-k on the blind grid 12: its 512-thread CTAs register-limited to two per SM, a later CTA on an SM
adding half of its sweeps and whole job (simulator/kernels/topk_trtllm.py REG_RESIDENT, REG_CTAS; no constant fitted),
judged on 32 new TensorRT-LLM shapes (19 decode-dispatch launches: 512-thread split launches of 2-5 CTAs per SM, single
512-thread CTAs at 150-400 rows, narrow 256-thread short rows and multi-wave 1024-thread split launches as controls;
13 prefill-entry launches, 10 at mid rows 16K-64K) and 6 SGLang controls, main ea0997d's product price beside this
one, both committed before measuring."""
from __future__ import annotations

import numpy as np

from simulator.calibration import topk_engines as TE

#: the commit that holds the grid 12 predictions (the last one before the measurement)
PREDICTION_COMMIT = "66c3a8c"


def topk_trtllm_grid12() -> None:
    """Print grid 12's per-regime table (main ea0997d vs now; SGLang's controls on main's model) and add its BOARD rows."""
    from .topk_engines import topk_grid_board

    if not (TE.F.DATA_DIR / TE.GRID12_MEASURED).is_file():
        return
    g = TE.grid12_accuracy()
    m = TE.measured12()
    trt_k = ("trt_topk", "trt_topk_pf")
    n_trt = int(m["kernel"].isin(trt_k).sum())
    print(f"\n== top-k grid12 ({n_trt} new TensorRT-LLM shapes: 512-thread split launches at 14-59 rows x 205K-295K of "
          f"2-5 CTAs per SM, single 512-thread CTAs at 150-400 rows, the prefill entry at mid rows 16K-64K and at "
          f"long / short rows, narrow 256-thread and multi-wave 1024-thread controls; predicted before measuring, "
          f"commit {PREDICTION_COMMIT}: {TE.GRID12_PREDICTION}; measured {TE.GRID12_MEASURED}); every row BLIND: "
          f"main = main ea0997d's product price, new = the product's price now (goal judged on it; SGLang's controls on "
          f"main's); REG_RESIDENT (two 512-thread CTAs per SM by their registers) has no fitted constant and was chosen "
          f"with grids 7-11's multi-CTA 512-thread rows LOOKED-AT; narrow and 1024-thread rows are priced as main prices "
          f"them (controls of what did not change); {int(m['wrong'].sum())} SGLang rows WRONG SELECTION "
          f"(threshold-bin ties, time kept); |error| median / p90, signed median, %")
    print(g.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    topk_grid_board(m, g, (
        (trt_k, "trtllm", "pred_us", "new", f"grid12 ({n_trt}), the product's price, committed"),
        (trt_k, "trtllm", "pred_main_us", "main", f"grid12 ({n_trt}), main ea0997d's price, committed"),
        (("sgl_topk",), "sglang", "pred_main_us", "main", "grid12 controls (6), main's committed prices")))
    trt = m[m["kernel"].isin(trt_k)]
    for c, lab in (("pred_main_us", "main ea0997d"), ("pred_us", "now")):
        e = 100.0 * (trt[c] / trt["median_us"] - 1.0)
        print(f"  TensorRT-LLM, all {n_trt} rows, {lab}: |error| median {np.median(np.abs(e)):.1f} %, p90 "
              f"{np.percentile(np.abs(e), 90):.1f} %, signed median {np.median(e):+.1f} %")
