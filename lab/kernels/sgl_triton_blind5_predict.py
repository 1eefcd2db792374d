"""Price sgl_triton blind grid 5 (lab/kernels/sgl_triton_blind5.py blind5_shapes()) BEFORE it is measured, each shape
three times:

  pred_base_us  main's model (BASE_COMMIT), from `git archive` of that commit in a temporary folder
  pred_v1_us    the model blind grid 4 tested (V1_COMMIT: the bf16 kind's K/V stream at attn_fa2's rate, the stage-1 /
                stage-2 constants at 0, refitted)
  pred_new_us   the model at this commit: v1 and the lone iteration of the binary compiled for GQA group 7
                (simulator/kernels/triton_engines.py SGL_ITER_BY_G, measured on grid 4's diagnosis rows)

First checks that no shape is in any committed CSV of either Triton family. Writes
hwmodels/calibration/data/production_attention/sgl_triton_blind5_predictions.csv with the three commits.

    python lab/kernels/sgl_triton_blind5_predict.py
"""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from triton_blind_pricing import DATA, price_grid, price_variant  # noqa: E402

OUT = DATA / "sgl_triton_blind5_predictions.csv"
BASE_COMMIT = "08cf44f"
V1_COMMIT = "12445d4"


def main() -> None:
    import sgl_triton_blind5 as M

    s = pd.DataFrame(M.blind5_shapes())
    price_grid(s.copy(), OUT, BASE_COMMIT, None, ["dtype", "model"])
    price_variant(s, OUT, V1_COMMIT)


if __name__ == "__main__":
    main()
