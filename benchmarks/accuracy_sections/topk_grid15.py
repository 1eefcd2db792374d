"""TensorRT-LLM's top-k on the blind grid 15: a sharper closed-loop knee where an SM keeps two or more CTAs resident
(hwmodels/roofline.py CHAIN_QUEUED_P_SHARED = simulator/kernels/topk_trtllm.py QUEUE_P_SHARED_CANDIDATE, scanned on
grids 11-14's looked-at rows), over the measured pair shares with the L2 term (PAIR_SHARES_L2), judged on 37 new
TensorRT-LLM shapes (29 decode-dispatch launches: single 512-thread CTAs at long rows and at mid rows with odd / even
CTA counts per SM, narrow 256-thread short rows, split-launch controls; 8 prefill-entry launches), priced by main
8c86417's product price, main's rule with the sharper knee alone and the candidate, all three committed before
measuring. No SGLang controls (its .so was not rebuilt)."""
from __future__ import annotations

from simulator.calibration import topk_engines as TE

#: the commit that holds the grid 15 predictions (made before the measurement)
PREDICTION_COMMIT = "a43eaf3"
#: the model the family ships after grid 15: "main" (PAIR_SHARES None, CHAIN_QUEUED_P_SHARED None) or "cand"
#: (PAIR_SHARES_L2 and CHAIN_QUEUED_P_SHARED = QUEUE_P_SHARED_CANDIDATE); the candidate had to meet MORE of grid 15's
#: regimes than main (or as many with a lower pooled median AND p90): it met 6 of 7 (6.0 / 18.8 %), main 2 of 7 (19.3 /
#: 27.6 %), so the candidate ships
SHIPPED = "cand"


def topk_trtllm_grid15() -> None:
    """Print grid 15's per-regime table (main 8c86417 / main + sharper knee / candidate) and add its BOARD rows; the
    shipped model's row holds the family's STANDING line."""
    from .topk_engines import topk_grid_board, trtllm_pooled_lines

    if not (TE.F.DATA_DIR / TE.GRID15_MEASURED).is_file():
        return
    g = TE.grid15_accuracy(shipped=SHIPPED)
    m = TE.measured15()
    trt_k = ("trt_topk", "trt_topk_pf")
    n_trt = int(m["kernel"].isin(trt_k).sum())
    print(f"\n== top-k grid15 ({n_trt} new TensorRT-LLM shapes: single 512-thread CTAs at 170-900 rows of long rows "
          f"72K-260K and of mid rows 19K-50K at odd / even CTA counts per SM, narrow 256-thread short rows 520-3000 x "
          f"6K-11K, split-launch controls, the prefill entry at long and mid rows; predicted before measuring, commit "
          f"{PREDICTION_COMMIT}: {TE.GRID15_PREDICTION}; measured {TE.GRID15_MEASURED}); every row BLIND: main = main "
          f"8c86417's product price, q = main's rule with the sharper knee (CHAIN_QUEUED_P_SHARED = "
          f"{TE.TK.QUEUE_P_SHARED_CANDIDATE}), cand = the pair shares + L2 term + sharper knee (shipped: {SHIPPED}); "
          f"the knee's exponent scanned on grids 11-14's looked-at rows only; {int(m['wrong'].sum())} rows WRONG "
          f"SELECTION (time kept); |error| median / p90, signed median, %")
    print(g.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    topk_grid_board(m, g, (
        (trt_k, "trtllm", "pred_us", "cand", f"grid15 ({n_trt}), pair shares + L2 term + sharper knee"
         + (" (shipped)" if SHIPPED == "cand" else " (not shipped)") + ", committed"),
        (trt_k, "trtllm", "pred_q_us", "q", f"grid15 ({n_trt}), main's rule + sharper knee (not shipped), committed"),
        (trt_k, "trtllm", "pred_main_us", "main", f"grid15 ({n_trt}), main 8c86417's price"
         + (" (shipped)" if SHIPPED == "main" else "") + ", committed")),
        shipped=None)   # the family's STANDING line moved to grid 16's shipped row (topk_grid16)
    trtllm_pooled_lines(m, g, trt_k, (
        ("pred_main_us", "main", "main 8c86417"),
        ("pred_q_us", "q", "main + sharper knee"),
        ("pred_us", "cand", "pair shares + L2 term + sharper knee"),
    ), SHIPPED)
