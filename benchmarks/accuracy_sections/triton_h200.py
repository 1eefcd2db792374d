"""The H200's vLLM Triton grid (lab/kernels/triton_decode_h200.py, 1 x H200, 2026-11-28): 36 new shapes of vLLM's Triton
unified attention over Triton decode blind grid 8's regimes, 16 of them lone 2D programs (the regime part E missed
warm), each timed warm (the family's harness) and in the engine's state (cold), priced before the call by the product
as committed (no model change: the H100-SXM's terms). Declared before the call as vLLM Triton's two H200 STANDING rows
(part E's give them up: h200_transfer_e.MOVED_ON); the second run on the same warm machine is its replicate.
"""
from __future__ import annotations

import numpy as np

from simulator.calibration import h200_transfer as HT
from simulator.calibration.scoreboard import BOARD, models_table

#: row role -> the board's family label
FAMILY = {"blind": "triton_vllm, H200", "cold": "triton_vllm, cold (engine state), H200"}


def triton_h200(fmt: dict | None = None) -> None:
    fmt = fmt or {"index": False, "float_format": lambda v: f"{v:.1f}"}
    b = HT.load_triton_h200()
    if not len(b):
        return
    print(f"\n== THE H200'S vLLM TRITON GRID ({len(b)} rows: 36 shapes in none of the committed rows of either Triton "
          f"family, warm and cold, {b['file'].iloc[0]}; {HT.PRED_TRITON_H200_CSV}, model at "
          f"{str(b['model_commit'].iloc[0])[:7]}, before the call), BLIND: the product as committed (the H100-SXM's "
          "terms); vLLM Triton's H200 STANDING (declared before the call); |model/measured - 1| median / p90, signed "
          "median, %")
    r = HT.load_triton_h200(replicate=True)
    for role, x in b.groupby("row_role", sort=False):
        t = models_table(x, ("regime",), ("new",), ("new",))
        e = x["new_err_pct"]
        met = int((t["new_goal"] == "met").sum())
        print(f"-- {'warm (the harness)' if role == 'blind' else 'cold (the engine state)'}:")
        print(t.to_string(**fmt))
        line = (f"   median |error| {np.median(e.abs()):.1f} %, p90 {np.percentile(e.abs(), 90):.1f} %, signed "
                f"{np.median(e):+.1f} %; regimes met {met} of {len(t)}")
        if len(r):
            rr = r[r["row_role"] == role]
            tr = models_table(rr, ("regime",), ("new",), ("new",))
            line += (f"; replicate {np.median(rr['new_err_pct'].abs()):.1f} / "
                     f"{np.percentile(rr['new_err_pct'].abs(), 90):.1f} %, {int((tr['new_goal'] == 'met').sum())} of "
                     f"{len(tr)}")
        print(line)
        BOARD.add(FAMILY[role], "blind", "the H200's vLLM Triton grid, the product as committed", e, met, len(t),
                  standing=True)
