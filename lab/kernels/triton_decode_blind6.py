"""The sixth blind grid of vLLM's Triton unified attention, measured on the lent GPU in one call (triton_vllm only:
ext/vllm_unified_attention.py, a copy of vllm-project/vllm vllm/attention/ops/triton_unified_attention.py
@ 001ceb3e98e7a19ebe33f542a368fa73bf6c76ad kept outside the repository, launched as lab/kernels/triton_decode_blind3.py
run_vllm_layout does with the harness's page layout "perm").

Rows (column row_role "blind"), chosen and committed before the measurement (blind6_shapes()): verification (q 2-4)
of 1-8 sequences at contexts 12-252 (the fifth grid's miss), decode of 150-600 sequences at contexts 12-60 (the 2D
kernel's one- and two-tile programs in several waves, the other miss), and controls from regimes the fifth grid met;
heads 32/8, 28/4, 64/8, 8/1, bf16 and fp8 K/V; shapes in none of the committed CSVs, priced by main's model and the
revised ones before this measurement (lab/kernels/predict_triton_decode_blind6.py). Then (row_role "diagnosis",
diagnosis6_shapes()) committed shapes timed again in the harness's page pool and in a 24 GiB one.

    python3 triton_decode_blind6.py --out DIR [--budget-s 70] [--smoke] [--list]   (beside ext/ and the blind3 script)
"""
from __future__ import annotations

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import triton_blind_harness as H  # noqa: E402
import triton_decode_blind3 as B3  # noqa: E402

SCRIPT_VERSION = "blind6"
V = "triton_vllm"


def _row(model, kv, b, q, t, role="blind"):
    return B3._row(V, model, kv, b, q, t, role, "perm")


def blind6_shapes() -> list[dict]:
    """The sixth blind grid (module docstring); contexts / batches in none of the committed grids."""
    r = []
    # (a) verification of 1-8 sequences at short contexts (the 2D kernel: 1-64 programs of one to eight 32-key tiles)
    for m, kv, b, q, t in (("llama8b", "bf16", 1, 3, 20), ("llama8b", "bf16", 3, 2, 136), ("llama8b", "fp8", 2, 2, 60),
                           ("llama8b", "fp8", 7, 3, 228), ("qwen7b", "bf16", 1, 4, 92), ("qwen7b", "bf16", 5, 2, 36),
                           ("qwen7b", "fp8", 3, 3, 12), ("qwen7b", "fp8", 8, 4, 170), ("qwen72b", "bf16", 2, 4, 44),
                           ("qwen72b", "bf16", 7, 3, 196), ("qwen72b", "fp8", 1, 2, 140), ("qwen72b", "fp8", 4, 2, 28),
                           ("llama70b_tp8", "bf16", 3, 2, 76), ("llama70b_tp8", "bf16", 8, 3, 252),
                           ("llama70b_tp8", "fp8", 1, 3, 180), ("llama70b_tp8", "fp8", 5, 4, 20),
                           ("llama8b", "bf16", 4, 4, 100), ("qwen7b", "bf16", 6, 3, 236)):
        r.append(_row(m, kv, b, q, t))
    # (b) decode of 150-600 sequences at contexts <= 32 (the 2D kernel's one-tile programs, several waves), and two at
    # two tiles
    for m, kv, b, t in (("llama8b", "bf16", 224, 20), ("llama8b", "bf16", 600, 28), ("llama8b", "fp8", 416, 12),
                        ("qwen7b", "bf16", 160, 30), ("qwen7b", "bf16", 544, 16), ("qwen7b", "fp8", 288, 28),
                        ("qwen72b", "bf16", 256, 12), ("qwen72b", "bf16", 576, 20), ("qwen72b", "fp8", 192, 30),
                        ("qwen72b", "fp8", 448, 20), ("llama70b_tp8", "bf16", 320, 28), ("llama70b_tp8", "bf16", 600, 12),
                        ("llama70b_tp8", "fp8", 240, 20), ("qwen72b", "bf16", 384, 60), ("llama8b", "bf16", 320, 48)):
        r.append(_row(m, kv, b, 1, t))
    # (c) controls: regimes met on the fifth grid (3D decode of 1-6 sequences at short contexts, 2D decode of 28-80
    # sequences at short contexts, verification of 80-176 sequences, middle-context decode and verification)
    for m, kv, b, q, t in (("llama8b", "bf16", 3, 1, 120), ("qwen7b", "fp8", 5, 1, 200), ("qwen72b", "bf16", 1, 1, 60),
                           ("llama70b_tp8", "fp8", 3, 1, 36), ("qwen7b", "bf16", 56, 1, 140),
                           ("llama8b", "fp8", 64, 1, 72), ("qwen72b", "fp8", 120, 2, 180),
                           ("llama8b", "bf16", 96, 3, 2000), ("qwen7b", "bf16", 14, 1, 3000),
                           ("llama70b_tp8", "bf16", 40, 2, 1200), ("qwen72b", "fp8", 3, 1, 6400)):
        r.append(_row(m, kv, b, q, t))
    return r


def diagnosis6_shapes() -> list[dict]:
    """The K/V extent diagnosis (row_role "diagnosis", never blind): lone and few programs of committed shapes whose
    tiles ran 20-30 % faster than the lone programs at long contexts (1.05-1.10 against 1.34-1.47 us per bf16 tile;
    the harness's K/V copies of at most ~12 MB each), timed again in the harness's compact pool ("perm") and with their
    pages drawn from a 24 GiB pool ("pool24g", an engine's pool), and one with its pages in order."""
    r = []
    for m, kv, b, q, t in (("llama70b_tp8", "bf16", 1, 2, 4096), ("qwen7b", "bf16", 1, 2, 4096),
                           ("llama8b", "bf16", 1, 2, 256), ("qwen7b", "fp8", 1, 4, 256),
                           ("llama70b_tp8", "fp8", 1, 4, 256)):
        for lay in ("perm", "pool24g"):
            r.append(B3._row(V, m, kv, b, q, t, "diagnosis", lay))
    r.append(B3._row(V, "llama70b_tp8", "bf16", 1, 2, 4096, "diagnosis", "inorder"))
    return r


def all_shapes() -> list[dict]:
    return blind6_shapes() + diagnosis6_shapes()


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
    H.run_grid(shp, args.out, args.budget_s, SCRIPT_VERSION, "triton_decode_blind6")


if __name__ == "__main__":
    main()
