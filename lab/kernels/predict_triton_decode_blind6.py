"""Price the sixth Triton decode blind grid (lab/kernels/triton_decode_blind6.py blind6_shapes(): verification of few
sequences at short contexts, one-tile 2D decode at batch 150-600, controls) BEFORE it is measured, each shape three
times:

  pred_base_us  the model at BASE_COMMIT (main's model): its code and fitted file, run from `git archive` of that
                commit in a temporary folder (fit_production_attention build_ops / predict_us)
  pred_new_us   the model at this commit (the shipped fitted file): the harness's measured node gap
  pred_v1_us    the model at V1_COMMIT (the variant: that gap and the program tail once per launch), also before

First checks that no blind shape is in any committed CSV of the family (same heads, K/V dtype, batch, query rows and
context). Writes hwmodels/calibration/data/production_attention/triton_decode_blind6_predictions.csv with the commits.

    python lab/kernels/predict_triton_decode_blind6.py
"""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from triton_blind_pricing import DATA, price_grid, price_variant  # noqa: E402

OUT = DATA / "triton_decode_blind6_predictions.csv"
BASE_COMMIT = "c460edb"
V1_COMMIT = "64cbd31"


def main() -> None:
    import triton_decode_blind6 as M

    s = pd.DataFrame(M.all_shapes())
    price_grid(s, OUT, BASE_COMMIT, s["row_role"] == "blind", ["row_role", "family", "dtype", "q_rows"])
    price_variant(pd.DataFrame(M.all_shapes()), OUT, V1_COMMIT)


if __name__ == "__main__":
    main()
