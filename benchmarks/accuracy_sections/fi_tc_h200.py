"""The H200 verification grid (lab/kernels/measure_production_attention.py --grid fi_tc_h200, 1 x H200, 2026-11-28):
FlashInfer's FA2 prefill kernel at 2-4 query rows (fi_verify), 38 shapes in none of the committed CSVs over the eight
(K/V dtype, context, batch) regimes of the H200 transfer grid's verification rows (that grid held one row in six of
them), priced before the call by the product as committed (lab/kernels/predict_fi_tc_h200.py; the H100-SXM's FA2
kinds on the H200), no candidate. Declared before the call: this grid holds fi_verify's H200 STANDING whatever its
result. (The first call's files of this grid did not come back (the device returns a limited number of files); the
grid was timed again in the next call on the same warm machine: the rows here.)
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from simulator.calibration import fit_production_attention as FP
from simulator.calibration.scoreboard import BOARD, models_table

PRED = "production_attention_fi_tc_h200_predictions.csv"
MEAS = "production_attention_fi_tc_h200_nvidia-h200_2026-11-28.csv"
KEYS = ["model", "dtype", "batch", "q_rows", "context", "page_size"]


def load() -> pd.DataFrame:
    d = FP.DATA_DIR
    if not ((d / PRED).is_file() and (d / MEAS).is_file()):
        return pd.DataFrame()
    p = pd.read_csv(d / PRED, dtype={"model_commit": str})
    m = pd.read_csv(d / MEAS)
    b = p.merge(m[KEYS + ["median_us", "device"]], on=KEYS, how="inner")
    b["shipped_err_pct"] = (b["pred_us"] / b["median_us"] - 1.0) * 100.0
    return b


def fi_tc_h200(fmt: dict | None = None) -> None:
    fmt = fmt or {"index": False, "float_format": lambda v: f"{v:.1f}"}
    b = load()
    if not len(b):
        print(f"\nH200 verification grid: not measured yet ({PRED} holds the prices)")
        return
    print(f"\n== THE H200 VERIFICATION GRID ({len(b)} fi_verify shapes in none of the committed CSVs over the transfer "
          f"grid's eight regimes; {PRED}, commit {str(b['model_commit'].iloc[0])[:7]}, before the call; measured {MEAS} "
          f"on the {b['device'].iloc[0]}), BLIND: the product as committed (the H100-SXM's FA2 kinds); fi_verify's H200 "
          "STANDING (declared before the call); |model/measured - 1| median / p90, signed median, %")
    t = models_table(b, ("regime",), ("shipped",), ("shipped",))
    print(t.to_string(**fmt))
    e = b["shipped_err_pct"].to_numpy(np.float64)
    met = int((t["shipped_goal"] == "met").sum())
    print(f"  all: median |error| {np.median(np.abs(e)):.1f} %, p90 {np.percentile(np.abs(e), 90):.1f} %, signed "
          f"{np.median(e):+.1f} %; regimes met {met} of {len(t)}; still off: Llama-3.1-8B q 3 at B 40 and 64 "
          "(-8..-12 %) where B 50-52 and 100 of the same shapes are within 1 %")
    BOARD.add("fi_verify, H200", "blind", "H200 verification grid, the product as committed", e, met, len(t),
              standing=True)
