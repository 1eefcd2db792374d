"""Price the fifth Triton decode blind grid (lab/kernels/triton_decode_blind5.py blind5_shapes(): short contexts and
controls) BEFORE it is measured, each shape twice:

  pred_base_us  the model at BASE_COMMIT (main's model): its code and fitted file, run from `git archive` of that
                commit in a temporary folder (fit_production_attention build_ops / predict_us)
  pred_new_us   the model at this commit (the shipped fitted file)
  pred_v1_us    the model at V1_COMMIT (the first variant: a program tail fitted per K/V dtype), also before

First checks that no blind shape is in any committed CSV of the family (same heads, K/V dtype, batch, query rows and
context). Writes hwmodels/calibration/data/production_attention/triton_decode_blind5_predictions.csv with both
commits.

    python lab/kernels/predict_triton_decode_blind5.py
"""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from triton_blind_pricing import DATA, price_grid, price_variant  # noqa: E402

OUT = DATA / "triton_decode_blind5_predictions.csv"
BASE_COMMIT = "6648a5d"
V1_COMMIT = "56b06ad"


def main() -> None:
    import triton_decode_blind5 as M

    s = pd.DataFrame(M.all_shapes())
    price_grid(s, OUT, BASE_COMMIT, s["row_role"] == "blind", ["row_role", "family", "dtype", "q_rows"])
    price_variant(pd.DataFrame(M.all_shapes()), OUT, V1_COMMIT)


if __name__ == "__main__":
    main()
