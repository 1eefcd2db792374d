"""Price the FlashInfer sm_90 prefill grid (lab/kernels/measure_fi_sm90_prefill.py shapes()) BEFORE it is measured: the
first look of FlashInfer's own Hopper prefill kernel (simulator/kernels/fi_sm90.py), priced from its source with
FlashAttention-3's binary's terms, nothing of this kernel measured, on the device the grid runs on (the lent H200: the
H100-SXM's terms through the H200's unmeasured_kinds_from) and, for reference, on the H100:

  pred_family_us   simulator/kernels/fi_sm90.py fi_sm90_prefill: the plan's min-heap of (query head, request, query
                   tile) items over one CTA per SM, each item's causal key tiles (128 x 128 ragged, 128 x 96 paged,
                   128 x 128 at 192 / 128) at FA3's prefill block time x keys / 128, each item's Q load / O epilogue
  pred_product_us  what the product charged these calls before: FlashInfer's FA2 prefill (fi_tc) for the GQA rows (the
                   engines' FlashInfer prefill as the product read it), the dense strategy's generic op for MLA rows

Nothing here is fitted. Regimes (simulator/calibration/fi_sm90_prefill.py regime, fixed before the call): call (ragged /
paged / MLA ragged) x one item per CTA / several; goal median <= 10 %, p90 <= 25 %.

    python lab/kernels/predict_fi_sm90_prefill.py   # -> hwmodels/calibration/data/production_attention/
                                                    #    fi_sm90_prefill_first_look.csv
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))
from measure_fi_sm90_prefill import shapes  # noqa: E402

from hwmodels.spec import load_hardware  # noqa: E402
from simulator.calibration import fi_sm90_prefill as S  # noqa: E402

OUT = ROOT / "hwmodels/calibration/data/production_attention/fi_sm90_prefill_first_look.csv"


def main() -> None:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    s = pd.DataFrame(shapes())
    out = s.copy()
    out["regime"] = S.regime(s, 132).to_numpy()
    out["items_busiest"] = S.items_busiest(s, 132)
    for dev, tag in (("H200", ""), ("H100-SXM", "_h100")):
        hw = load_hardware(dev)
        out[f"pred_product{tag}_us"] = np.round(S.product_us(s, hw), 3)
        out[f"pred_family{tag}_us"] = np.round(S.family_us(s, hw), 3)
    out["model_commit"] = commit
    out.to_csv(OUT, index=False)
    print(f"{len(out)} rows -> {OUT.relative_to(ROOT)} (model at {commit})")
    print(out[["family", "model", "batch", "q_rows", "prefix", "regime", "items_busiest", "pred_product_us",
               "pred_family_us"]].to_string())


if __name__ == "__main__":
    main()
