"""The H200's vLLM Triton grid (1 x H200, 2026-11-28): new shapes of vLLM's Triton unified attention over Triton decode
blind grid 8's four regimes, weighted to the one part E of the H200 transfer grid missed there (lone 2D programs of one
sequence, warm: 7.8 / 25.9 %), each timed warm (row_role "blind", the family's harness) and in the engine's state
("cold", the L2 flushed before every call), by triton_decode_blind8.py's measuring loop (this file swaps its shapes in;
the kernel from ext/vllm_unified_attention.py as in part E). No model change: priced before the call by the product as
committed (lab/kernels/predict_triton_h200.py). Declared before the call: the warm and the cold rows are vLLM Triton's two
H200 STANDING rows.

    python3 triton_decode_h200.py --out DIR [--budget-s 110] [--list]     (beside ext/ and the blind3 / blind8 scripts)
"""
from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import triton_decode_blind8 as B8  # noqa: E402

#: (model, K/V dtype, batch, query rows, context) per regime, named before the measurement
LONE_2D = (("llama8b", "bf16", 1, 3, 820), ("llama8b", "fp8", 1, 2, 1430), ("llama8b", "bf16", 1, 5, 2150),
           ("llama8b", "fp8", 1, 4, 460), ("qwen7b", "bf16", 1, 4, 1320), ("qwen7b", "fp8", 1, 2, 2600),
           ("qwen7b", "bf16", 1, 6, 700), ("qwen7b", "fp8", 1, 3, 390), ("qwen72b", "bf16", 1, 2, 1180),
           ("qwen72b", "fp8", 1, 4, 1900), ("qwen72b", "bf16", 1, 5, 520), ("qwen72b", "fp8", 1, 3, 2400),
           ("llama70b_tp8", "bf16", 1, 2, 1650), ("llama70b_tp8", "fp8", 1, 5, 980), ("llama70b_tp8", "bf16", 1, 3, 300),
           ("llama70b_tp8", "fp8", 1, 4, 2050))
SHORT_DECODE = (("llama8b", "bf16", 2, 1, 170), ("llama8b", "fp8", 20, 1, 330), ("qwen7b", "bf16", 6, 1, 120),
                ("qwen7b", "fp8", 32, 1, 480), ("qwen72b", "bf16", 10, 1, 64), ("qwen72b", "fp8", 2, 1, 420),
                ("llama70b_tp8", "bf16", 28, 1, 150), ("llama70b_tp8", "fp8", 5, 1, 270))
VERIFY = (("llama8b", "bf16", 4, 3, 410), ("llama8b", "fp8", 6, 2, 250), ("qwen7b", "bf16", 3, 4, 130),
          ("qwen7b", "fp8", 12, 3, 80), ("qwen72b", "bf16", 2, 3, 540), ("qwen72b", "fp8", 8, 2, 200),
          ("llama70b_tp8", "bf16", 10, 2, 330), ("llama70b_tp8", "fp8", 5, 4, 620))
CONTROL = (("llama8b", "bf16", 26, 1, 3300), ("qwen7b", "fp8", 40, 2, 1600), ("qwen72b", "bf16", 12, 1, 5200),
           ("llama70b_tp8", "fp8", 64, 1, 2900))


def h200_shapes() -> list[dict]:
    """The grid's shapes, warm then cold (no K/V-cold rows)."""
    b = [B8._row(*s) for s in (*LONE_2D, *SHORT_DECODE, *VERIFY, *CONTROL)]
    return b + [{**s, "row_role": "cold"} for s in b]


if __name__ == "__main__":
    B8.all_shapes = h200_shapes
    B8.SCRIPT_VERSION = "h200"
    B8.main()
