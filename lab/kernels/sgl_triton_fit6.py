"""Fit rows of SGLang's Triton decode kernel (sgl_triton) for its sixth blind grid, measured on the lent GPU in one
call BEFORE grid 6 is priced, as lab/kernels/sgl_triton_blind4.py measures (its runner, CSV columns and launch
profiles). Every row here is a FIT row (named before the measurement):

  fit_lone   lone programs (batch 2, context 65536: 2 x 8 KV heads x 8 splits = 128 programs, at most one per SM) of
             the binaries Triton compiles for GQA groups 2, 3, 5 and 6 (heads 16/8, 24/8, 40/8, 48/8) and of group 4
             (32/8, the reference the fitted iteration belongs to), bf16 and fp8 K/V: the lone chain of each group's
             binary as a multiple of group 4's (simulator/kernels/triton_engines.py SGL_ITER_BY_G)
  fit_cores  the co-resident scan: one binary (group 4, heads 32/8) at context 65536 and batch 1-8 (64-512 programs:
             1-4 per SM), bf16 (every batch) and fp8 (batch 1, 2, 4, 6, 8), and bf16 at context 16384, batch 1, 2, 4,
             8: what a second, third and fourth program on the SM adds to the lone chain

    python3 sgl_triton_fit6.py --out DIR [--budget-s 40] [--list]   (beside ext/ and sgl_triton_blind4.py)
"""
from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import sgl_triton_blind4 as B4  # noqa: E402

FIT_HEADS = {"g2h8": (16, 8), "g3h8": (24, 8), "g5h8": (40, 8), "g6h8": (48, 8)}
B4.HEADS.update(FIT_HEADS)


def fit6_shapes() -> list[dict]:
    """The fit rows (module docstring), lone rows first."""
    out = [B4._row(m, kv, 2, 65536, "fit_lone") for kv in ("bf16", "fp8")
           for m in ("llama8b", "g2h8", "g3h8", "g5h8", "g6h8")]
    out += [B4._row("llama8b", "bf16", b, 65536, "fit_cores") for b in (1, 3, 4, 5, 6, 7, 8)]
    out += [B4._row("llama8b", "fp8", b, 65536, "fit_cores") for b in (1, 4, 6, 8)]
    out += [B4._row("llama8b", "bf16", b, 16384, "fit_cores") for b in (1, 2, 4, 8)]
    for s in out:
        assert s["batch"] * s["context"] * s["kv_heads"] * s["head_dim"] < 2 ** 31, s
    return out


def main() -> None:
    B4.shapes = fit6_shapes
    B4.SCRIPT_VERSION = "sgl_fit6"
    B4.OUT_STEM = "sgl_triton_fit6"
    B4.main()


if __name__ == "__main__":
    main()
