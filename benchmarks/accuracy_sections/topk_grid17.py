"""TensorRT-LLM's top-k on the blind grid 17: the narrow 256-thread launches (useNarrowBlock: topKPerRowDecode<256>)
priced per CTA (simulator/kernels/topk_trtllm.py NARROW_PERCTA: the busiest SM's first narrow CTA at the lone CTA's
cost, each later one a whole narrow CTA at its own round / scan / radix / rank costs, fitted on the 81 looked-at narrow
short rows of grids 5-16), where main de97b41 prices them four per SM by registers (NARROW_REG, SERIAL_PHASES), judged
on 39 new TensorRT-LLM shapes (34 narrow launches over short rows 4.4K-12.3K at 380-3800 rows, recorded / gaussian /
uniform scores; controls: single 512-thread CTAs at mid and long rows, two split launches, the prefill entry), both
prices committed before measuring."""
from __future__ import annotations

from simulator.calibration import topk_engines as TE

#: the commit that holds the grid 17 predictions (made before the measurement)
PREDICTION_COMMIT = "ce6191e"
#: the model the family ships after grid 17: "main" (NARROW_PERCTA None) or "cand" (NARROW_PERCTA on)
SHIPPED = "cand"   # 1 of 3 regimes each; the candidate's pooled 11.3 / 22.7 % < main's 13.6 / 23.8 %


def topk_trtllm_grid17() -> None:
    """Print grid 17's per-regime table (main de97b41 / the per-CTA candidate) and add its BOARD rows; the shipped
    model's row holds the family's STANDING line."""
    from .topk_engines import topk_grid_board, trtllm_pooled_lines

    if not (TE.F.DATA_DIR / TE.GRID17_MEASURED).is_file():
        return
    g = TE.grid17_accuracy(shipped=SHIPPED)
    m = TE.measured17()
    trt_k = ("trt_topk", "trt_topk_pf")
    n_trt = int(m["kernel"].isin(trt_k).sum())
    print(f"\n== top-k grid17 ({n_trt} new TensorRT-LLM shapes: narrow 256-thread CTAs over short rows 4.4K-12.3K at "
          f"380-3800 rows, recorded / gaussian / uniform scores, at <= 8 and > 8 CTAs per SM; controls: single "
          f"512-thread CTAs at mid / long rows, two split launches, the prefill entry; predicted before measuring, "
          f"commit {PREDICTION_COMMIT}: {TE.GRID17_PREDICTION}; measured {TE.GRID17_MEASURED}); every row BLIND: main = "
          f"main de97b41's product price, cand = the narrow CTAs priced per CTA {TE.TK.NARROW_PERCTA_CANDIDATE} "
          f"(NARROW_PERCTA; shipped: {SHIPPED}); {int(m['wrong'].sum())} rows WRONG SELECTION (time kept); |error| "
          f"median / p90, signed median, %")
    print(g.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    topk_grid_board(m, g, (
        (trt_k, "trtllm", "pred_us", "cand", f"grid17 ({n_trt}), narrow CTAs priced per CTA"
         + (" (shipped)" if SHIPPED == "cand" else " (not shipped)") + ", committed"),
        (trt_k, "trtllm", "pred_main_us", "main", f"grid17 ({n_trt}), main de97b41's price"
         + (" (shipped)" if SHIPPED == "main" else "") + ", committed")),
        shipped=None)   # the family's STANDING line moved to grid 18's shipped row (topk_grid18)
    trtllm_pooled_lines(m, g, trt_k, (
        ("pred_main_us", "main", "main de97b41"),
        ("pred_us", "cand", "narrow CTAs per CTA"),
    ), SHIPPED)
