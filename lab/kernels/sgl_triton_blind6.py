"""The sixth blind grid of SGLang's Triton decode kernel (sgl_triton, "sgl_triton blind grid 6"): the test of the lone
chains of the GQA group 2 / 3 / 5 / 6 binaries (simulator/kernels/triton_engines.py SGL_ITER_BY_G) and of the
co-resident programs' issue hidden in the lone chain with its knee against the HBM stream (hwmodels.roofline
CHAIN_ISSUE_HIDDEN_P), both fitted on lab/kernels/sgl_triton_fit6.py's rows; measured on the lent GPU in one call, as
lab/kernels/sgl_triton_blind4.py measures (its runner, CSV columns and launch profiles).

Rows (all row_role "blind", each with its regime in `group`): shapes in none of the committed CSVs, priced BEFORE this
measurement by main's model and the new one (lab/kernels/sgl_triton_blind6_predict.py): bf16 long contexts (>= 64K) at
2-4 programs per SM of groups 2-8 (heads 32/16 Gemma-2-27B, 24/8 Llama-3.2-3B, 40/8 Qwen2.5-14B / 32B, 20/4 Qwen2.5-14B
at TP 2, 12/2 Qwen2.5-1.5B, 28/4 Qwen2.5-7B, 56/8 Yi-34B, 32/8 Mistral-7B, 64/8 Llama-3.1-70B, 32/4 Yi-6B); bf16 middle
contexts of groups 2, 3, 5, 6; fp8 of groups 2, 3, 5, 6; fp8 short contexts (<= 1024) at batch <= 6; controls.

    python3 sgl_triton_blind6.py --out DIR [--budget-s 40] [--list]   (beside ext/ and sgl_triton_blind4.py)
"""
from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import sgl_triton_blind4 as B4  # noqa: E402

B4.HEADS.update({"gemma27b": (32, 16), "llama3b": (24, 8), "qwen14b": (40, 8), "qwen14b_tp2": (20, 4),
                 "qwen1p5b": (12, 2), "yi34b": (56, 8), "mistral7b": (32, 8), "yi6b": (32, 4)})

LONG_G48 = "bf16 long co-resident, G 4 / 8"
LONG_G23 = "bf16 long co-resident, G 2 / 3"
LONG_G567 = "bf16 long co-resident, G 5-7"
MID = "bf16 middle, G 2 / 3 / 5 / 6"
FP8_G = "fp8 middle / long, G 2 / 3 / 5 / 6"
FP8_SHORT = "fp8 short, batch <= 6"
CONTROL = "control"


def blind6_shapes() -> list[dict]:
    """The sixth grid (module docstring): (regime, model, K/V dtype, batch, context)."""
    rows = (
        (LONG_G48, "mistral7b", "bf16", 3, 100000), (LONG_G48, "mistral7b", "bf16", 6, 72000),
        (LONG_G48, "llama70b", "bf16", 3, 80000), (LONG_G48, "llama70b", "bf16", 4, 110000),
        (LONG_G48, "llama70b", "bf16", 5, 70000), (LONG_G48, "yi6b", "bf16", 8, 100000),
        (LONG_G48, "yi6b", "bf16", 12, 80000),
        (LONG_G23, "gemma27b", "bf16", 2, 70000), (LONG_G23, "gemma27b", "bf16", 4, 64000),
        (LONG_G23, "llama3b", "bf16", 4, 80000), (LONG_G23, "llama3b", "bf16", 8, 66000),
        (LONG_G23, "llama3b", "bf16", 2, 150000),
        (LONG_G567, "qwen14b", "bf16", 4, 90000), (LONG_G567, "qwen14b", "bf16", 6, 70000),
        (LONG_G567, "qwen14b", "bf16", 3, 128000), (LONG_G567, "qwen14b_tp2", "bf16", 6, 100000),
        (LONG_G567, "qwen1p5b", "bf16", 8, 131072), (LONG_G567, "qwen1p5b", "bf16", 16, 80000),
        (LONG_G567, "qwen7b", "bf16", 12, 90000), (LONG_G567, "yi34b", "bf16", 5, 80000),
        (MID, "gemma27b", "bf16", 3, 12000), (MID, "llama3b", "bf16", 10, 20000), (MID, "qwen14b", "bf16", 16, 6000),
        (MID, "qwen1p5b", "bf16", 32, 10000), (MID, "qwen14b", "bf16", 1, 30000),
        (FP8_G, "llama3b", "fp8", 4, 70000), (FP8_G, "qwen14b", "fp8", 6, 50000), (FP8_G, "gemma27b", "fp8", 2, 40000),
        (FP8_G, "qwen1p5b", "fp8", 24, 20000),
        (FP8_SHORT, "mistral7b", "fp8", 2, 600), (FP8_SHORT, "mistral7b", "fp8", 5, 900),
        (FP8_SHORT, "qwen7b", "fp8", 4, 1000), (FP8_SHORT, "llama70b", "fp8", 3, 700),
        (FP8_SHORT, "qwen14b", "fp8", 6, 400), (FP8_SHORT, "llama3b", "fp8", 1, 1024),
        (CONTROL, "mistral7b", "bf16", 24, 20000), (CONTROL, "mistral7b", "bf16", 64, 3000),
        (CONTROL, "qwen7b", "bf16", 40, 8000), (CONTROL, "mistral7b", "fp8", 32, 12000),
    )
    out = [dict(B4._row(m, kv, b, t), group=g) for g, m, kv, b, t in rows]
    for s in out:
        assert s["batch"] * s["context"] * s["kv_heads"] * s["head_dim"] < 2 ** 31, s
    return out


def main() -> None:
    B4.shapes = blind6_shapes
    B4.SCRIPT_VERSION = "sgl_blind6"
    B4.OUT_STEM = "sgl_triton_blind6"
    B4.main()


if __name__ == "__main__":
    main()
