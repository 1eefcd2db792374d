"""Price sgl_triton blind grid 4 (lab/kernels/sgl_triton_blind4.py blind4_shapes()) and its diagnosis rows
(diagnosis_shapes(): not blind, not fitted) BEFORE they are measured, each shape twice:

  pred_base_us  main's model (BASE_COMMIT): its code and fitted file, run from `git archive` of that commit in a
                temporary folder (fit_production_attention build_ops / predict_us)
  pred_new_us   the model at this commit: the bf16 kind's K/V stream at attn_fa2's measured rate and the stage-1 /
                stage-2 constants at 0 (fit_production_attention SGL_MEMORY_FROM, SGL_FIXED_ZERO), refitted on the
                family's fit rows

First checks that no blind shape is in any committed CSV of either Triton family (same heads, K/V dtype, batch, query
rows and context). Writes hwmodels/calibration/data/production_attention/sgl_triton_blind4_predictions.csv with both
commits.

    python lab/kernels/sgl_triton_blind4_predict.py
"""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from triton_blind_pricing import DATA, price_grid  # noqa: E402

OUT = DATA / "sgl_triton_blind4_predictions.csv"
BASE_COMMIT = "08cf44f"


def main() -> None:
    import sgl_triton_blind4 as M

    s = pd.DataFrame(M.shapes())
    price_grid(s, OUT, BASE_COMMIT, s["row_role"] == "blind", ["row_role", "dtype", "model"])


if __name__ == "__main__":
    main()
