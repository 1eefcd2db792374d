"""TensorRT-LLM's top-k on the blind grid 20: the narrow per-CTA rule's FIRST CTA part read from its own scores' pass
statistics (simulator/kernels/topk_trtllm.py NARROW_PERCTA_FIRST_CANDIDATE: the SM's first narrow CTA adds first +
first_scan x its block-scan rounds + first_radix x its radix-sort share loop rounds, the per-CTA slope refitted with
it; topk_engines.fit_narrow_first "kind" on the 177 looked-at narrow short rows of grids 5-19, the form chosen by
leave-one-grid-out error), where main b118817 prices grid 17's per-CTA rule through the knee, judged on 35 new
TensorRT-LLM shapes (31 narrow launches over short rows 4.4K-12.2K at 350-2040 rows, 3-16 CTAs per SM, 18 of them at
<= 8; recorded / gaussian / uniform scores, 9 uniform; controls: single 512-thread CTAs at a mid and a long row, a split
launch, the prefill entry), all prices committed before measuring."""
from __future__ import annotations

from simulator.calibration import topk_engines as TE

#: the commit that holds the grid 20 predictions (made before the measurement)
PREDICTION_COMMIT = "eae2283"
#: the model the family ships after grid 20: "main" (grid 17's NARROW_PERCTA_CANDIDATE) or "cand"
#: (NARROW_PERCTA_FIRST_CANDIDATE)
SHIPPED = "cand"   # 2 of 3 regimes (<= 8 CTAs per SM and the controls) against main's 1 (the controls)


def topk_trtllm_grid20() -> None:
    """Print grid 20's per-regime table (main b118817 / the first-CTA candidate / its staged-items variant) and add its
    BOARD rows; the shipped model's row holds the family's STANDING line."""
    from .topk_engines import topk_grid_board, trtllm_pooled_lines

    if not (TE.F.DATA_DIR / TE.GRID20_MEASURED).is_file():
        return
    g = TE.grid20_accuracy(shipped=SHIPPED)
    m = TE.measured20()
    trt_k = ("trt_topk", "trt_topk_pf")
    n_trt = int(m["kernel"].isin(trt_k).sum())
    print(f"\n== top-k grid20 ({n_trt} new TensorRT-LLM shapes: narrow 256-thread CTAs over short rows 4.4K-12.2K at "
          f"350-2040 rows (3-16 CTAs per SM), recorded / gaussian / uniform scores, at <= 8 and > 8 CTAs per SM; "
          f"controls: single 512-thread CTAs at a mid / long row, a split launch, the prefill entry; predicted before "
          f"measuring, commit {PREDICTION_COMMIT}: {TE.GRID20_PREDICTION}; measured {TE.GRID20_MEASURED}); every row "
          f"BLIND: main = main b118817's product price, cand = the first CTA's part by its pass statistics "
          f"{TE.TK.NARROW_PERCTA_FIRST_CANDIDATE} (shipped: {SHIPPED}), rank = the first part by its staged items "
          f"{TE.TK.NARROW_PERCTA_FIRST_RANK} (reported); {int(m['wrong'].sum())} rows WRONG SELECTION (time kept); "
          f"|error| median / p90, signed median, %")
    print(g.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    topk_grid_board(m, g, (
        (trt_k, "trtllm", "pred_us", "cand", f"grid20 ({n_trt}), first CTA's part by pass statistics"
         + (" (shipped)" if SHIPPED == "cand" else " (not shipped)") + ", committed"),
        (trt_k, "trtllm", "pred_main_us", "main", f"grid20 ({n_trt}), main b118817's price"
         + (" (shipped)" if SHIPPED == "main" else "") + ", committed")),
        shipped=None)   # the family's STANDING line moved to grid 21's shipped row (topk_grid21)
    trtllm_pooled_lines(m, g, trt_k, (
        ("pred_main_us", "main", "main b118817"),
        ("pred_us", "cand", "first CTA by pass statistics"),
        ("pred_rank_us", "rank", "first CTA by staged items"),
    ), SHIPPED)
    print(TE.grid20_accuracy(by_dist=True, shipped=SHIPPED).to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    print("  the first CTA's part by its pass statistics moves recorded few-CTA rows from -16 % to -1 % signed and uniform "
          "ones from +15 % to +4 %: <= 8 CTAs per SM met; > 8 still misses by its median (10.2 %): short rows (4.9K-6.1K) "
          "at 12-16 CTAs per SM run -19..-25 % fast on every score kind, longer ones +10 % slow: each later CTA's fixed "
          "part (histogram clear, prologue, block scans) is not in the per-round slope")
