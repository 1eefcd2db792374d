"""Price the seventh Triton decode blind grid (lab/kernels/triton_decode_blind7.py all_shapes(): lone short programs,
verification q 2-6 of 1-6 sequences, controls; the first 30 again as "cold" rows timed with the L2 flushed before each
call; the graph-gap probe's shapes) BEFORE it is measured, each shape twice:

  pred_base_us  the model at BASE_COMMIT (main's model): its code and fitted file, run from `git archive` of that
                commit in a temporary folder (fit_production_attention build_ops / predict_us); it prices a cold row
                as the harness row of the same shape (it has no notion of the L2 state)
  pred_new_us   the model at this commit (the shipped fitted file): the harness's K/V copies in the L2
                (fit_production_attention tv_harness_kv_l2_hit) for blind / gap rows, no K/V in the L2 for cold rows

First checks that no blind shape is in any committed CSV of the family (same heads, K/V dtype, batch, query rows and
context). Writes hwmodels/calibration/data/production_attention/triton_decode_blind7_predictions.csv with the commits.

    python lab/kernels/predict_triton_decode_blind7.py
"""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from triton_blind_pricing import DATA, price_grid  # noqa: E402

OUT = DATA / "triton_decode_blind7_predictions.csv"
BASE_COMMIT = "06e70f8"


def main() -> None:
    import triton_decode_blind7 as M

    s = pd.DataFrame(M.all_shapes())
    price_grid(s, OUT, BASE_COMMIT, s["row_role"] == "blind", ["row_role", "dtype", "q_rows"])


if __name__ == "__main__":
    main()
