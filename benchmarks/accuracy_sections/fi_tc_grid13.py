"""The tensor-core (FA2 prefill) kernel's thirteenth blind grid: FlashInfer verification rows (fi_verify) at short
contexts with several CTAs per SM, the test of the bf16 tile chain's shared MMA issue (simulator/kernels/flashinfer.py
FI_TC_MMA_SHARED, its exposed share FI_TC_MMA_SHARE_EXPOSED fitted on named rows of three earlier grids).

The grid (lab/kernels/measure_production_attention.py --grid fi_tc_blind13) was priced by main's model (08cf44f) and by
the shared-MMA model (6f7773a) and both price files were committed before it was measured.
"""
from __future__ import annotations

import numpy as np

from simulator.calibration.scoreboard import BOARD, models_table

#: (the shared-MMA model's prices, main's prices, the measured blind grid); both price files committed before measuring
FI_TC_BLIND13 = ("production_attention_fi_tc_blind13_predictions.csv",
                 "production_attention_fi_tc_blind13_predictions_08cf44f.csv",
                 "production_attention_fi_tc_blind13_nvidia*.csv")


def fi_tc_blind13(FP, hw, fmt) -> None:
    """Print the thirteenth blind grid's per-regime |error| of main's and the shared-MMA model's committed prices and of
    the committed fitted file (now), per shape group and per standard regime; add the board rows (the shared-MMA model
    ships: its row is fi_verify's STANDING row)."""


    from .fi_tc_grid12 import fi_tc_grid_rows

    pred, before, _ = FI_TC_BLIND13
    r = fi_tc_grid_rows(FP, hw, FI_TC_BLIND13, 13)
    if r is None:
        return
    m, name = r
    m["regime"] = m["kv"] + " " + m["ctx_regime"] + " " + m["batch_regime"]
    print(f"\nFI_TC BLIND GRID 13 (FlashInfer verification, q 2-5, at short contexts 44-460 x batch 44-400 and middle "
          f"contexts at batch 10-44, + 7 controls; {len(m)} shapes of {m.attrs.get('timed_of', len(m))} timed, {name}): "
          f"BLIND: main = the model at 08cf44f ({before}), new = the bf16 tile chain's MMAs shared by the busiest SM's "
          f"co-resident CTAs (model {str(m['model_commit'].iloc[0])[:7]}, {pred}), both committed before measuring; "
          "now = the committed fitted file")
    labels = ["main", "new", "now"]
    g = models_table(m.assign(regime=m["group"]), ("regime",), labels, labels)
    print("per shape group:")
    print(g.to_string(**fmt))
    t = models_table(m, ("regime",), labels, labels)
    print("per regime:")
    print(t.to_string(**fmt))
    for lab in labels:
        e = m[f"{lab}_err_pct"]
        print(f"  {lab}: median |error| {np.median(e.abs()):.1f} %, p90 {np.percentile(e.abs(), 90):.1f} %, signed "
              f"{np.median(e):+.1f} %; regimes met {int((t[lab + '_goal'] == 'met').sum())} of {len(t)}")
    for lab, desc in (("main", "main model's committed prices"), ("new", "shared-MMA model's committed prices")):
        BOARD.add("fi_verify", "blind", f"fi_tc blind grid 13, {desc}", m[f"{lab}_err_pct"],
                  int((t[f"{lab}_goal"] == "met").sum()), len(t))   # fi_verify's STANDING row: grid 14
