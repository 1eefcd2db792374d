"""TensorRT-LLM's top-k on the blind grid 16: the narrow 256-thread launches (useNarrowBlock: topKPerRowDecode<256>)
at their register residency, four CTAs per SM (simulator/kernels/topk_trtllm.py NARROW_REG; 62 registers a thread),
where main counts eight a wave (the kind's CTA_SLOTS), judged on 33 new TensorRT-LLM shapes (28 narrow launches over
short rows 4.3K-15K at 360-2950 rows, recorded / gaussian / uniform scores; controls: single 512-thread CTAs at mid and
long rows, a split launch, the prefill entry), priced by main 60b5b38's product price, the candidate (NARROW_REG) and
the candidate with co-resident shares fitted on the looked-at narrow rows (NARROW_SHARES_CANDIDATE, for the record),
all three committed before measuring."""
from __future__ import annotations

from simulator.calibration import topk_engines as TE

#: the commit that holds the grid 16 predictions (made before the measurement)
PREDICTION_COMMIT = "e170f4f"
#: the model the family ships after grid 16: "main" (NARROW_REG off) or "cand" (NARROW_REG on); the candidate had to
#: meet MORE of grid 16's regimes than main (or as many with a lower pooled median AND p90): both met 1 of 3 (the
#: controls), the candidate at 13.5 / 25.3 % pooled against main's 20.6 / 37.3 %, so the candidate ships
SHIPPED = "cand"


def topk_trtllm_grid16() -> None:
    """Print grid 16's per-regime table (main 60b5b38 / candidate / candidate + fitted shares) and add its BOARD rows;
    the shipped model's row holds the family's STANDING line."""
    from .topk_engines import topk_grid_board, trtllm_pooled_lines

    if not (TE.F.DATA_DIR / TE.GRID16_MEASURED).is_file():
        return
    g = TE.grid16_accuracy(shipped=SHIPPED)
    m = TE.measured16()
    trt_k = ("trt_topk", "trt_topk_pf")
    n_trt = int(m["kernel"].isin(trt_k).sum())
    print(f"\n== top-k grid16 ({n_trt} new TensorRT-LLM shapes: narrow 256-thread CTAs over short rows 4.3K-15K at "
          f"360-2950 rows, recorded / gaussian / uniform scores, at <= 8 and > 8 CTAs per SM; controls: single "
          f"512-thread CTAs at mid / long rows, a split launch, the prefill entry; predicted before measuring, commit "
          f"{PREDICTION_COMMIT}: {TE.GRID16_PREDICTION}; measured {TE.GRID16_MEASURED}); every row BLIND: main = main "
          f"60b5b38's product price, cand = four narrow CTAs per SM by their registers (NARROW_REG), sh = cand with "
          f"co-resident shares {TE.TK.NARROW_SHARES_CANDIDATE} fitted on the looked-at narrow rows (shipped: "
          f"{SHIPPED}); {int(m['wrong'].sum())} rows WRONG SELECTION (time kept); |error| median / p90, signed "
          f"median, %")
    print(g.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    topk_grid_board(m, g, (
        (trt_k, "trtllm", "pred_us", "cand", f"grid16 ({n_trt}), narrow CTAs four per SM by registers"
         + (" (shipped)" if SHIPPED == "cand" else " (not shipped)") + ", committed"),
        (trt_k, "trtllm", "pred_sh_us", "sh", f"grid16 ({n_trt}), + fitted co-resident shares (not shipped), "
                                              "committed"),
        (trt_k, "trtllm", "pred_main_us", "main", f"grid16 ({n_trt}), main 60b5b38's price"
         + (" (shipped)" if SHIPPED == "main" else "") + ", committed")),
        shipped=None)   # the family's STANDING line moved to grid 17's shipped row (topk_grid17)
    trtllm_pooled_lines(m, g, trt_k, (
        ("pred_main_us", "main", "main 60b5b38"),
        ("pred_us", "cand", "narrow CTAs by registers"),
        ("pred_sh_us", "sh", "+ fitted shares"),
    ), SHIPPED)
