"""TensorRT-LLM's top-k on the blind grid 14: the co-resident single 512-thread CTAs whose rows fit the L2 (simulator/
kernels/topk_trtllm.py PAIR_L2_SHARE: a paired CTA's sweep rounds and job that hit the L2 cost the SM that share, over
the measured pair shares PAIR_SHARES_CANDIDATE), judged on 31 new TensorRT-LLM shapes (25 decode-dispatch launches:
single 512-thread CTAs at 160-900 rows of mid rows 17K-52K and long rows 68K-240K, 512-thread split launches; 6
prefill-entry launches) and 6 SGLang controls, priced by main 2bec4e2's product price, the pair shares alone and the
pair shares with the L2 term, all three committed before measuring."""
from __future__ import annotations

from simulator.calibration import topk_engines as TE

#: the commit that holds the grid 14 predictions (made before the measurement; main's and the pair shares' prices first
#: committed in a998803, the L2 term's re-made after its scan fit)
PREDICTION_COMMIT = "2fd6d2e"
#: the model the family ships after grid 14: "main" (PAIR_SHARES None) or "l2" (PAIR_SHARES = PAIR_SHARES_L2); the L2
#: term had to meet MORE of grid 14's TensorRT-LLM regimes than main's to ship: it met 3 of 5, as main did (pooled 9.2 /
#: 16.5 % against 10.1 / 26.6 %), so main's model stays
SHIPPED = "main"


def topk_trtllm_grid14() -> None:
    """Print grid 14's per-regime table (main 2bec4e2 / pair shares / pair shares + L2 term; SGLang's controls on main's
    model) and add its BOARD rows; the shipped model's row holds the family's STANDING line."""
    from .topk_engines import topk_grid_board, trtllm_pooled_lines

    if not (TE.F.DATA_DIR / TE.GRID14_MEASURED).is_file():
        return
    g = TE.grid14_accuracy(shipped=SHIPPED)
    m = TE.measured14()
    trt_k = ("trt_topk", "trt_topk_pf")
    n_trt = int(m["kernel"].isin(trt_k).sum())
    print(f"\n== top-k grid14 ({n_trt} new TensorRT-LLM shapes: single 512-thread CTAs at 160-900 rows (2-7 CTAs per "
          f"SM) of mid rows 17K-52K and long rows 68K-240K, 512-thread split launches at 22-63 rows x 210K-295K, the "
          f"prefill entry at long and mid rows; predicted before measuring, commit {PREDICTION_COMMIT}: "
          f"{TE.GRID14_PREDICTION}; measured {TE.GRID14_MEASURED}); every row BLIND: main = main 2bec4e2's product "
          f"price (PAIR_SHARES None), cand = the measured pair shares alone (PAIR_SHARES_CANDIDATE), l2 = with the "
          f"L2 term (PAIR_SHARES_L2; shipped: {SHIPPED}); PAIR_L2_SHARE fitted on the named TRT_PAIR_L2_FIT rows "
          f"(looked-at grid 13 / 12 rows) and TRT_PAIR_L2_SCAN only; {int(m['wrong'].sum())} SGLang rows WRONG "
          f"SELECTION (threshold-bin ties, time kept); |error| median / p90, signed median, %")
    print(g.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    topk_grid_board(m, g, (
        (trt_k, "trtllm", "pred_us", "l2", f"grid14 ({n_trt}), pair shares + L2 term"
         + (" (shipped)" if SHIPPED == "l2" else " (not shipped)") + ", committed"),
        (trt_k, "trtllm", "pred_cand_us", "cand", f"grid14 ({n_trt}), measured pair shares alone (not shipped), "
                                                  "committed"),
        (trt_k, "trtllm", "pred_main_us", "main", f"grid14 ({n_trt}), main 2bec4e2's price"
         + (" (shipped)" if SHIPPED == "main" else "") + ", committed"),
        (("sgl_topk",), "sglang", "pred_main_us", "main", "grid14 controls (6), main's committed prices")),
        shipped=None)   # the family's STANDING line moved to grid 15's shipped row (topk_grid15)
    trtllm_pooled_lines(m, g, trt_k, (
        ("pred_main_us", "main", "main 2bec4e2"),
        ("pred_cand_us", "cand", "pair shares"),
        ("pred_us", "l2", "pair shares + L2 term"),
    ), SHIPPED)
