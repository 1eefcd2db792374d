"""The fifth blind grid of SGLang's Triton decode kernel (sgl_triton, "sgl_triton blind grid 5"): the test of the
per-binary lone iteration of GQA group 7 (simulator/kernels/triton_engines.py SGL_ITER_BY_G), measured on the lent GPU
in one call, as lab/kernels/sgl_triton_blind4.py measures (its runner, CSV columns and launch profiles).

Rows (all row_role "blind"): 26 shapes in none of the committed CSVs, priced BEFORE this measurement by main's model,
the model grid 4 tested and the model with SGL_ITER_BY_G (lab/kernels/sgl_triton_blind5_predict.py): G 7 heads (28/4
Qwen2.5-7B, 56/8) bf16 at long / middle / short contexts and batch 1-120 and fp8 at batch 3-40; G 5 heads (40/8:
Qwen2.5-14B / 32B, whose binary the model prices as G 4's, an assumption) bf16; and G 4 / G 8 controls (32/8, 64/8).

    python3 sgl_triton_blind5.py --out DIR [--budget-s 60] [--list]   (beside ext/ and sgl_triton_blind4.py)
"""
from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import sgl_triton_blind4 as B4  # noqa: E402

B4.HEADS.setdefault("g5h8", (40, 8))


def blind5_shapes() -> list[dict]:
    """The fifth grid (module docstring): (model, K/V dtype, batch, context)."""
    rows = (
        # G 7, bf16, long (>= 64K): lone programs and bandwidth-bound launches
        ("qwen7b", "bf16", 2, 120000), ("qwen7b", "bf16", 5, 96000), ("qwen7b", "bf16", 10, 72000),
        ("g7h8", "bf16", 1, 90000), ("g7h8", "bf16", 3, 70000), ("qwen7b", "bf16", 20, 100000),
        ("qwen7b", "bf16", 48, 66000),
        # G 7, bf16, middle
        ("qwen7b", "bf16", 1, 20000), ("qwen7b", "bf16", 4, 6000), ("qwen7b", "bf16", 9, 30000),
        ("qwen7b", "bf16", 16, 1500), ("g7h8", "bf16", 4, 16000), ("qwen7b", "bf16", 24, 20000),
        ("qwen7b", "bf16", 64, 3000), ("qwen7b", "bf16", 120, 9000),
        # G 7, bf16, short
        ("qwen7b", "bf16", 12, 240), ("qwen7b", "bf16", 64, 200),
        # G 7, fp8
        ("qwen7b", "fp8", 3, 70000), ("qwen7b", "fp8", 8, 20000), ("qwen7b", "fp8", 40, 5000),
        # G 5 (priced as G 4's binary)
        ("g5h8", "bf16", 2, 80000), ("g5h8", "bf16", 8, 12000),
        # G 4 / G 8 controls
        ("llama8b", "bf16", 4, 30000), ("llama70b", "bf16", 10, 50000), ("llama8b", "fp8", 2, 50000),
        ("llama70b", "bf16", 32, 4000),
    )
    out = [B4._row(m, kv, b, t) for m, kv, b, t in rows]
    for s in out:
        assert s["batch"] * s["context"] * s["kv_heads"] * s["head_dim"] < 2 ** 31, s
    return out


def main() -> None:
    B4.shapes = blind5_shapes
    B4.SCRIPT_VERSION = "sgl_blind5"
    B4.OUT_STEM = "sgl_triton_blind5"
    B4.main()


if __name__ == "__main__":
    main()
