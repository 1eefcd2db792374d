"""Price the second Triton decode blind grid (lab/kernels/triton_decode_blind2.py blind2_shapes()) BEFORE it is
measured, each shape twice:

  pred_base_us  the model at BASE_COMMIT (the branch point): its code and fitted file, run from `git archive` of that
                commit in a temporary folder (simulator.calibration.fit_production_attention build_ops / predict_us)
  pred_new_us   the model at this commit (the shipped fitted file)

First checks that no shape is in any committed CSV of either family (same heads, K/V dtype, batch, query rows and
context). Writes hwmodels/calibration/data/production_attention/triton_decode_blind2_predictions.csv with both commits.

    python lab/kernels/predict_triton_decode_blind2.py
"""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from triton_blind_pricing import DATA, price_grid  # noqa: E402

OUT = DATA / "triton_decode_blind2_predictions.csv"
BASE_COMMIT = "65f5d1f"


def main() -> None:
    import triton_decode_blind2 as M

    s = pd.DataFrame(M.blind2_shapes())
    price_grid(s, OUT, BASE_COMMIT, None, ["family", "dtype", "q_rows"])


if __name__ == "__main__":
    main()
