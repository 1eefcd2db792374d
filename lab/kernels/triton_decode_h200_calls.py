"""The H200's second vLLM Triton grid (1 x H200): the harness's graph calls as the warm K/V's footprint.

vLLM Triton's one H200 miss (the first H200 grid, triton_decode_h200.py: warm lone 2D programs +13.9 %) was read after
that call (LOOKED-AT) as the timing harness's state, not the kernel's: lab/harness.py time_graph captures
calls = ceil(250 us / one call) calls back to back and call i reads K/V copy i mod R, so a long lone call captured 2-19
times reads only min(calls, R) of its R = min(16, ceil(128 MiB / K/V)) copies, a footprint of 1.5-31 MB where the
family's warm rule (fit_production_attention.tv_harness_kv_l2_hit) assumed R x the K/V (2.5-142 MB). This grid tests
that reading on new shapes, each timed in up to three states with the graph's call count FIXED before the call (the
committed prediction's `calls` column, lab/kernels/predict_triton_h200_calls.py, read by this script):
  row_role "blind"       warm, the harness's own count: ceil(250 us / main's price), 2..128 (what time_graph picks)
  row_role "blind_many"  warm, lone 2D programs only, 32 calls: every one of the R copies read twice a replay, the
                         footprint the old rule assumed
  row_role "cold"        the engine's state: the L2 flushed before every call (triton_decode_blind8.py's flush)
  row_role "recheck"     six rows of the first H200 grid re-timed (warm at their recorded call count, or cold): the
                         kernel's launcher here is a rewrite (ext/vllm_unified_attention.py over the vllm 0.12.0
                         wheel's kernels, ext/vllm_ua_kernels.py; the first grid's copy was not kept), checked against
                         the committed times
Runs triton_decode_blind8.py's measuring loop (this file swaps its shapes in).

    python3 triton_decode_h200_calls.py --out DIR [--budget-s 110] [--list]   (beside ext/ and the blind3 / blind8 scripts)
"""
from __future__ import annotations

import csv
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import triton_decode_blind8 as B8  # noqa: E402

PREDICTION = os.path.join(HERE, "..", "..", "hwmodels", "calibration", "data", "production_attention",
                          "triton_decode_h200_calls_predictions.csv")
#: (model, K/V dtype, batch, query rows, context) per regime, named before the measurement
LONE_2D = (("llama8b", "bf16", 1, 2, 2600), ("llama8b", "fp8", 1, 3, 1750), ("llama8b", "bf16", 1, 4, 1100),
           ("llama8b", "fp8", 1, 6, 640), ("qwen7b", "bf16", 1, 3, 2900), ("qwen7b", "fp8", 1, 5, 1050),
           ("qwen7b", "bf16", 1, 2, 430), ("qwen7b", "fp8", 1, 4, 2200), ("qwen72b", "bf16", 1, 4, 1560),
           ("qwen72b", "fp8", 1, 2, 2750), ("qwen72b", "bf16", 1, 6, 880), ("qwen72b", "fp8", 1, 5, 610),
           ("llama70b_tp8", "bf16", 1, 5, 2300), ("llama70b_tp8", "fp8", 1, 3, 1370),
           ("llama70b_tp8", "bf16", 1, 6, 520), ("llama8b", "bf16", 1, 5, 360))
SHORT_DECODE = (("llama8b", "fp8", 3, 1, 450), ("llama8b", "bf16", 12, 1, 95), ("qwen7b", "bf16", 20, 1, 260),
                ("qwen7b", "fp8", 4, 1, 150), ("qwen72b", "bf16", 6, 1, 330), ("qwen72b", "fp8", 16, 1, 48),
                ("llama70b_tp8", "bf16", 3, 1, 500), ("llama70b_tp8", "fp8", 48, 1, 210))
VERIFY = (("llama8b", "bf16", 3, 4, 520), ("llama8b", "fp8", 10, 2, 170), ("qwen7b", "bf16", 8, 3, 350),
          ("qwen7b", "fp8", 2, 6, 610), ("qwen72b", "bf16", 5, 2, 260), ("qwen72b", "fp8", 14, 3, 110),
          ("llama70b_tp8", "bf16", 7, 4, 430), ("llama70b_tp8", "fp8", 16, 2, 690))
CONTROL = (("llama8b", "fp8", 20, 1, 3900), ("qwen7b", "bf16", 36, 2, 2100), ("qwen72b", "fp8", 24, 1, 4400),
           ("llama70b_tp8", "bf16", 72, 1, 3500))
#: first-grid rows re-timed (shape, role, the committed row's calls; None = cold: the loop's own count)
RECHECK = ((("llama8b", "bf16", 1, 5, 2150), "blind", 3), (("qwen72b", "bf16", 1, 2, 1180), "blind", 5),
           (("qwen7b", "bf16", 6, 1, 120), "blind", 29), (("llama70b_tp8", "fp8", 64, 1, 2900), "blind", 5),
           (("llama8b", "bf16", 1, 5, 2150), "cold", None), (("qwen7b", "bf16", 6, 1, 120), "cold", None))
MANY_CALLS = 32


def grid_shapes() -> list[dict]:
    """The new shapes, warm at the harness's count, the lone ones at MANY_CALLS too, then cold (calls set by
    predict_triton_h200_calls.py for the warm rows)."""
    b = [B8._row(*s) for s in (*LONE_2D, *SHORT_DECODE, *VERIFY, *CONTROL)]
    many = [{**B8._row(*s), "row_role": "blind_many", "calls": MANY_CALLS} for s in LONE_2D]
    return b + many + [{**s, "row_role": "cold"} for s in b]


def recheck_shapes() -> list[dict]:
    return [{**B8._row(*s), "row_role": "recheck" if role == "blind" else "recheck_cold", "calls": c}
            for s, role, c in RECHECK]


def timed_shapes() -> list[dict]:
    """Every row as the device times it: the warm rows' call counts from the committed prediction."""
    with open(PREDICTION) as f:
        pred = {(r["model"], r["dtype"], int(r["batch"]), int(r["q_rows"]), int(r["context"]), r["row_role"]):
                r.get("calls", "") for r in csv.DictReader(f)}
    out = []
    for s in [*recheck_shapes(), *grid_shapes()]:
        c = pred[(s["model"], s["dtype"], s["batch"], s["q_rows"], s["context"], s["row_role"])]
        out.append({**s, "calls": int(float(c))} if c not in ("", None) else {k: v for k, v in s.items() if k != "calls"})
    return out


if __name__ == "__main__":
    B8.all_shapes = timed_shapes
    B8.SCRIPT_VERSION = "h200_calls"
    B8.main()
