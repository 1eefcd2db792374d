"""The fifth blind grid of vLLM's Triton unified attention, measured on the lent GPU in one call (triton_vllm only:
ext/vllm_unified_attention.py, a copy of vllm-project/vllm vllm/attention/ops/triton_unified_attention.py
@ 001ceb3e98e7a19ebe33f542a368fa73bf6c76ad kept outside the repository, launched as lab/kernels/triton_decode_blind3.py
run_vllm_layout does with the harness's page layout "perm").

Rows (column row_role "blind"), chosen and committed before the measurement (blind5_shapes()): short contexts
(16-256: one- to eight-tile programs, the 3D kernel's one-tile segments and the 2D kernel's short rows) at batch 1-512,
bf16 and fp8 K/V, decode (q 1) and verification (q 2-4), heads 32/8, 28/4, 64/8, 8/1, plus controls at middle
contexts; shapes in none of the committed CSVs, priced by main's model and the new one before this measurement
(lab/kernels/predict_triton_decode_blind5.py).

    python3 triton_decode_blind5.py --out DIR [--budget-s 70] [--smoke] [--list]   (beside ext/ and the blind3 script)
"""
from __future__ import annotations

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import triton_blind_harness as H  # noqa: E402
import triton_decode_blind3 as B3  # noqa: E402

SCRIPT_VERSION = "blind5"
V = "triton_vllm"


def _row(model, kv, b, q, t, role="blind"):
    return B3._row(V, model, kv, b, q, t, role, "perm")


def blind5_shapes() -> list[dict]:
    """The fifth blind grid (module docstring); contexts / batches in none of the committed grids."""
    r = []
    # (a) decode, short contexts, batch 1-6 (the 3D kernel's one-tile segments)
    for m, kv, b, t in (("llama8b", "bf16", 1, 24), ("qwen7b", "bf16", 1, 184), ("qwen72b", "bf16", 2, 104),
                        ("llama70b_tp8", "bf16", 4, 248), ("llama8b", "bf16", 6, 88), ("llama8b", "fp8", 1, 216),
                        ("qwen7b", "fp8", 2, 24), ("qwen72b", "fp8", 1, 248), ("llama70b_tp8", "fp8", 6, 152),
                        ("qwen7b", "fp8", 4, 104)):
        r.append(_row(m, kv, b, 1, t))
    # (b) decode, short contexts, batch 12-80 (3D with idle programs, or 2D one- to eight-tile programs)
    for m, kv, b, t in (("llama8b", "bf16", 12, 24), ("qwen7b", "bf16", 28, 216), ("qwen72b", "bf16", 80, 24),
                        ("llama70b_tp8", "bf16", 28, 24), ("llama8b", "bf16", 80, 104), ("llama8b", "fp8", 12, 184),
                        ("qwen7b", "fp8", 80, 24), ("qwen72b", "fp8", 28, 88), ("llama70b_tp8", "fp8", 80, 248),
                        ("llama8b", "fp8", 28, 32)):
        r.append(_row(m, kv, b, 1, t))
    # (c) decode, short contexts, batch 176-512 (the 2D kernel, several waves)
    for m, kv, b, t in (("llama8b", "bf16", 176, 24), ("qwen7b", "bf16", 352, 104), ("qwen72b", "bf16", 480, 32),
                        ("llama70b_tp8", "bf16", 352, 184), ("llama8b", "bf16", 480, 216), ("llama8b", "fp8", 176, 88),
                        ("qwen7b", "fp8", 480, 24), ("qwen72b", "fp8", 176, 216), ("llama70b_tp8", "fp8", 480, 32),
                        ("qwen7b", "fp8", 176, 248)):
        r.append(_row(m, kv, b, 1, t))
    # (d) verification, short contexts (the 2D kernel), batch 1-480, q 2-4
    for m, kv, b, q, t in (("llama8b", "bf16", 1, 2, 24), ("qwen7b", "bf16", 2, 3, 184), ("qwen72b", "bf16", 6, 2, 88),
                           ("llama70b_tp8", "bf16", 1, 4, 104), ("llama8b", "fp8", 2, 4, 216),
                           ("qwen7b", "fp8", 1, 2, 32), ("qwen72b", "fp8", 4, 3, 248), ("llama8b", "bf16", 28, 3, 104),
                           ("qwen7b", "fp8", 80, 2, 216), ("llama70b_tp8", "fp8", 28, 3, 24),
                           ("llama8b", "bf16", 176, 2, 184), ("qwen72b", "fp8", 352, 2, 24),
                           ("llama70b_tp8", "bf16", 480, 4, 88), ("llama8b", "fp8", 480, 3, 32)):
        r.append(_row(m, kv, b, q, t))
    # (e) controls at middle contexts (regimes that pass)
    for m, kv, b, q, t in (("llama8b", "bf16", 6, 1, 3400), ("qwen7b", "fp8", 28, 1, 2200),
                           ("qwen72b", "bf16", 12, 1, 7400), ("llama70b_tp8", "fp8", 80, 1, 1800),
                           ("llama8b", "fp8", 176, 1, 1400), ("qwen7b", "bf16", 2, 2, 5400),
                           ("llama8b", "bf16", 28, 3, 2600), ("qwen72b", "fp8", 6, 4, 4400),
                           ("llama70b_tp8", "bf16", 1, 1, 9800), ("qwen7b", "bf16", 352, 1, 1100)):
        r.append(_row(m, kv, b, q, t))
    return r


def all_shapes() -> list[dict]:
    return blind5_shapes()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=70.0)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--list", action="store_true", help="print the rows and exit (no GPU)")
    args = ap.parse_args()
    shp = all_shapes()
    if args.smoke:
        shp = shp[:2] + shp[-1:]
    if args.list:
        for s in shp:
            print(s)
        print(len(shp), "rows")
        return
    H.run_grid(shp, args.out, args.budget_s, SCRIPT_VERSION, "triton_decode_blind5")


if __name__ == "__main__":
    main()
