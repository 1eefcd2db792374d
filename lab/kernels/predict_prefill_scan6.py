"""Price scan 6 of lab/kernels/measure_prefill_kernels.py (--grid scan6: FlashInfer's FA2 prefill kernel, bf16, chunks
whose cached prefix walks across the FA2 plan's steps) BEFORE it is measured, on the H200 (its production kinds the
H100-SXM's fitted terms, unmeasured_kinds_from), two ways from this tree:

  pred_exact_us   the exact plan at each row's prefix (simulator/calibration/prefill_kernels.py engine_fi_us with
                  interpolated=False: flashinfer.fi_tc, eager, causal; its longest CTA's chain steps by a key tile every
                  n x 64 tokens of prefix, its KV chunk count by one every 128 tokens while the chunk is at its minimum)
  pred_interp_us  the engine's form (families.fa2_prefix_interpolated): the exact plan at the steps' prefixes, linear
                  between them

Fixed before the call (QUESTION): which of the two does the kernel's time follow across a step? Per scan, the measured
time of the rows just after each step the exact plan takes (a change of >= 2 % between neighbouring rows) over the
rows just before it, against each form's ratio; and each form's median / p90 |error| over the scan's rows. The engine
keeps the interpolated form either way (its chunk surface needs it); the scan says what that costs.

    python lab/kernels/predict_prefill_scan6.py     # -> hwmodels/calibration/data/production_attention/
                                                    #    prefill_kernels_scan6_predictions.csv
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))
from measure_prefill_kernels import scan6_shapes  # noqa: E402

from hwmodels.spec import load_hardware  # noqa: E402
from simulator.calibration import prefill_kernels as PK  # noqa: E402

OUT = ROOT / "hwmodels/calibration/data/production_attention/prefill_kernels_scan6_predictions.csv"
QUESTION = ("across each step of the exact FA2 plan (>= 2 % between neighbouring rows): measured after / before vs each "
            "form's; per form median / p90 |error| over the scan; the engine keeps the interpolated form either way")


def main() -> None:
    df = pd.DataFrame(scan6_shapes())
    hw = load_hardware("H200")
    df["pred_exact_us"] = PK.engine_fi_us(df, interpolated=False, hw=hw)
    df["pred_interp_us"] = PK.engine_fi_us(df, interpolated=True, hw=hw)
    df["model_commit"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                        text=True).stdout.strip()
    df["question"] = QUESTION
    df.to_csv(OUT, index=False)
    r = df["pred_interp_us"] / df["pred_exact_us"] - 1.0
    print(f"{len(df)} rows -> {OUT.relative_to(ROOT)}; interp / exact - 1: median {r.abs().median() * 100:.2f} %, "
          f"max {r.abs().max() * 100:.2f} %")


if __name__ == "__main__":
    main()
