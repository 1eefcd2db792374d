"""The H200's FlashMLA grid (lab/kernels/predict_mla_h200.py; measure_production_attention.py --grid mla_h200, 1 x H200,
2026-11-28): 52 new shapes of DeepSeek-V3's MLA heads at TP 1-8, 28 of them in the regime part E of the H200 transfer
grid missed (short contexts at mid batch), priced before the call by the product as committed (no model change: the
H100-SXM's flashmla terms on the H200). Declared before the call as FlashMLA's H200 STANDING (part E's row gives it up:
h200_transfer_e.MOVED_ON); the second run on the same warm machine is its replicate.
"""
from __future__ import annotations

import numpy as np

from simulator.calibration import h200_transfer as HT
from simulator.calibration.scoreboard import BOARD, models_table


def mla_h200(fmt: dict | None = None) -> None:
    fmt = fmt or {"index": False, "float_format": lambda v: f"{v:.1f}"}
    b = HT.load_mla_h200()
    if not len(b):
        return
    t = models_table(b, ("regime",), ("new",), ("new",))
    e = b["new_err_pct"]
    met = int((t["new_goal"] == "met").sum())
    print(f"\n== THE H200'S FLASHMLA GRID ({len(b)} shapes in no committed flashmla row, {b['file'].iloc[0]}; "
          f"{HT.PRED_MLA_H200_CSV}, model at {str(b['model_commit'].iloc[0])[:7]}, before the call), BLIND: the product as "
          "committed (the H100-SXM's terms), FlashMLA's H200 STANDING (declared before the call); |model/measured - 1| "
          "median / p90, signed median, %")
    print(t.to_string(**fmt))
    print(f"  median |error| {np.median(e.abs()):.1f} %, p90 {np.percentile(e.abs(), 90):.1f} %, signed "
          f"{np.median(e):+.1f} %; regimes met {met} of {len(t)} (part E's short mid-batch rows: 10.4 / 19.5 %, -10.4 %)")
    BOARD.add("flashmla, H200", "blind", "the H200's FlashMLA grid, the product as committed", e, met, len(t),
              standing=True)
    r = HT.load_mla_h200(replicate=True)
    if len(r):
        tr = models_table(r, ("regime",), ("new",), ("new",))
        er = r["new_err_pct"]
        print(f"  the replicate (the same script again on the same warm machine): {np.median(er.abs()):.1f} / "
              f"{np.percentile(er.abs(), 90):.1f} %, regimes met {int((tr['new_goal'] == 'met').sum())} of {len(tr)}")
