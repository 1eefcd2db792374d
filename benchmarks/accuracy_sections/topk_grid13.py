"""TensorRT-LLM's top-k on the blind grid 13: the co-resident share of its 512-thread CTAs MEASURED (simulator/kernels/
topk_trtllm.py PAIR_SHARES, fitted per path on the named TRT_PAIR_FIT scan, where REG_RESIDENT had assumed 1 / REG_CTAS),
judged on 38 new TensorRT-LLM shapes (28 decode-dispatch launches: single 512-thread CTAs at 180-850 rows of long and mid
rows, 512-thread split launches of 2-5 CTAs per SM, narrow 256-thread short rows and multi-wave 1024-thread split
launches as controls; 10 prefill-entry launches, 6 at long rows > 64K) and 6 SGLang controls, main 08cf44f's product
price beside this one, both committed before measuring."""
from __future__ import annotations

import numpy as np

from simulator.calibration import topk_engines as TE

#: the commit that holds the grid 13 predictions (the last one before the measurement)
PREDICTION_COMMIT = "586b7fb"


def topk_trtllm_grid13() -> None:
    """Print grid 13's per-regime table (main 08cf44f vs now; SGLang's controls on main's model) and add its BOARD rows;
    main 08cf44f's price is the product's (the measured pair shares lost a regime and did not ship); the family's
    STANDING line is grid 14's now."""
    from .topk_engines import topk_grid_board

    if not (TE.F.DATA_DIR / TE.GRID13_MEASURED).is_file():
        return
    g = TE.grid13_accuracy()
    m = TE.measured13()
    trt_k = ("trt_topk", "trt_topk_pf")
    n_trt = int(m["kernel"].isin(trt_k).sum())
    print(f"\n== top-k grid13 ({n_trt} new TensorRT-LLM shapes: single 512-thread CTAs at 180-850 rows of 21K-300K "
          f"(2-7 CTAs per SM), 512-thread split launches at 19-61 rows x 205K-280K, the prefill entry at long rows "
          f"> 64K and mid rows, narrow 256-thread and multi-wave 1024-thread controls; predicted before measuring, "
          f"commit {PREDICTION_COMMIT}: {TE.GRID13_PREDICTION}; measured {TE.GRID13_MEASURED}); every row BLIND: "
          f"main = main 08cf44f's product price (shipped), new = the measured pair shares (not shipped: 3 of 7 regimes "
          f"against main's 4; SGLang's controls on main's); PAIR_SHARES_CANDIDATE fitted on the named TRT_PAIR_FIT scan ({TE.PAIR_SCAN_MEASURED}, "
          f"{len(TE.TRT_PAIR_FIT)} rows) only; narrow and 1024-thread rows are priced as main prices them (controls "
          f"of what did not change); {int(m['wrong'].sum())} SGLang rows WRONG SELECTION (threshold-bin ties, time "
          f"kept); |error| median / p90, signed median, %")
    print(g.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    topk_grid_board(m, g, (
        (trt_k, "trtllm", "pred_us", "new", f"grid13 ({n_trt}), measured pair shares (not shipped), committed"),
        (trt_k, "trtllm", "pred_main_us", "main", f"grid13 ({n_trt}), main 08cf44f's price (shipped), committed"),
        (("sgl_topk",), "sglang", "pred_main_us", "main", "grid13 controls (6), main's committed prices")),
        shipped=None)   # the family's STANDING line moved to grid 14's main row (topk_grid14)
    trt = m[m["kernel"].isin(trt_k)]
    for c, lab in (("pred_main_us", "main 08cf44f (shipped)"), ("pred_us", "pair shares")):
        e = 100.0 * (trt[c] / trt["median_us"] - 1.0)
        met = int(((g[f"{'main' if c == 'pred_main_us' else 'new'}_med"] <= 10.0)
                   & (g[f"{'main' if c == 'pred_main_us' else 'new'}_p90"] <= 25.0)
                   & g["regime"].str.startswith("top-k trtllm ")).sum())
        print(f"  TensorRT-LLM, all {n_trt} rows, {lab}: |error| median {np.median(np.abs(e)):.1f} %, p90 "
              f"{np.percentile(np.abs(e), 90):.1f} %, signed median {np.median(e):+.1f} %, rms log error "
              f"{np.sqrt(np.mean(np.log1p(e / 100.0) ** 2)):.3f}, regimes met {met} of "
              f"{int(g['regime'].str.startswith('top-k trtllm ').sum())}")
