"""TensorRT-LLM's top-k on the blind grid 11: the split path's once-per-row fixed stretch, the refitted 1024-thread
round and a later lone CTA's share (simulator/kernels/topk_trtllm.py SPLIT_FIXED_ROUNDS, WIDE_ROUND_COST,
LATER_CTA_SHARE), judged on 43 new TensorRT-LLM shapes (37 decode-dispatch launches: 1024-thread split launches over
1-10 waves, 512-thread split launches, narrow 256-thread short rows; 6 prefill-entry launches at mid rows) and 8 SGLang
controls, main 06e70f8's product price beside this one, both committed before measuring."""
from __future__ import annotations

from simulator.calibration import topk_engines as TE

#: the commit that holds the grid 11 predictions (the last one before the measurement: a shape already measured was
#: replaced, both models' prices redone)
PREDICTION_COMMIT = "fb2abae"


def topk_trtllm_grid11() -> None:
    """Print grid 11's per-regime table (main 06e70f8 vs now; SGLang's controls on main's model) and add its BOARD rows
    (the product's price on TensorRT-LLM's rows: the family's STANDING)."""
    from .topk_engines import new_main_board, topk_grid_board, trtllm_lines

    if not (TE.F.DATA_DIR / TE.GRID11_MEASURED).is_file():
        return
    g = TE.grid11_accuracy()
    m = TE.measured11()
    trt_k = ("trt_topk", "trt_topk_pf")
    n_trt = int(m["kernel"].isin(trt_k).sum())
    print(f"\n== top-k grid11 ({n_trt} new TensorRT-LLM shapes: 1024-thread split launches at 5-127 rows x 315K-820K over "
          f"1-10 waves of one CTA per SM, 512-thread split launches at 1-63 rows, narrow 256-thread short rows, the "
          f"prefill entry at mid rows 16K-64K; predicted before measuring, commit {PREDICTION_COMMIT}: "
          f"{TE.GRID11_PREDICTION}; measured {TE.GRID11_MEASURED}); every row BLIND: main = main 06e70f8's product "
          f"price, new = the product's price now (goal judged on it; SGLang's controls on main's); SPLIT_FIXED_ROUNDS "
          f"fitted on TRT_SPLIT_FIT (grid 8), WIDE_ROUND_COST refitted on TRT_WIDE_FIT (grids 6, 8), LATER_CTA_SHARE "
          f"fitted on TRT_WAVE_FIT (grids 8-10's multi-wave 1024-thread rows), grids 7-10 LOOKED-AT; narrow short rows "
          f"and the prefill entry are priced as main prices them (controls of what did not change); "
          f"{int(m['wrong'].sum())} SGLang rows WRONG SELECTION (threshold-bin ties, time kept); |error| median / p90, "
          f"signed median, %")
    print(g.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    topk_grid_board(m, g, new_main_board(11, n_trt, "06e70f8", 8, trt_k), shipped=None)   # grid 12 is the family's STANDING line now
    trtllm_lines(m, "main 06e70f8", trt_k)
