"""Price sgl_triton blind grid 6 (lab/kernels/sgl_triton_blind6.py blind6_shapes()) BEFORE it is measured, twice:

  pred_base_us  main's model (BASE_COMMIT), from `git archive` of that commit in a temporary folder
  pred_new_us   the model at this commit: the GQA group 2 / 3 / 5 / 6 binaries' lone chains (SGL_ITER_BY_G) and the
                co-resident programs' issue hidden in the lone chain with a knee against the HBM stream
                (hwmodels.roofline CHAIN_ISSUE_HIDDEN_P), fitted on lab/kernels/sgl_triton_fit6.py's rows

First checks that no shape is in any committed CSV of either Triton family. Writes
hwmodels/calibration/data/production_attention/sgl_triton_blind6_predictions.csv with both commits.

    python lab/kernels/sgl_triton_blind6_predict.py
"""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from triton_blind_pricing import DATA, price_grid  # noqa: E402

OUT = DATA / "sgl_triton_blind6_predictions.csv"
BASE_COMMIT = "2bec4e2"


def main() -> None:
    import sgl_triton_blind6 as M

    s = pd.DataFrame(M.blind6_shapes())
    price_grid(s, OUT, BASE_COMMIT, None, ["group"])


if __name__ == "__main__":
    main()
