"""MLA prefill through FlashAttention-3 (simulator/calibration/mla_prefill.py): vLLM's MLA backends' prefill on Hopper,
flash_attn_varlen_func over DeepSeek's non-absorbed heads (192 / 128), measured on the lent H200 with FA3's own binary
built with its hdim 192 x 128 forward. Grid 1 is the first look (the product's generic op and FA3's launches from
source, both priced before the call); the block multiple was fitted on it; blind grid 2 judged that candidate against
the source's work ratio, both priced before its call."""
from __future__ import annotations

import numpy as np

from simulator.calibration import mla_prefill as MP
from simulator.calibration.scoreboard import BOARD, models_table

FAMILY = "fa3 MLA prefill"


def _pooled(b, labs, t) -> None:
    for lab in labs:
        e = b[f"{lab}_err_pct"]
        print(f"  {lab}: median |error| {np.median(e.abs()):.1f} %, p90 {np.percentile(e.abs(), 90):.1f} %, signed "
              f"{np.median(e):+.1f} %; regimes met {int((t[lab + '_goal'] == 'met').sum())} of {len(t)}")


def mla_prefill(fmt: dict | None = None) -> None:
    """Print both grids per regime and add them to the summary board (grid 2's shipped candidate: the STANDING row)."""
    fmt = fmt or {"index": False, "float_format": lambda v: f"{v:.1f}"}
    b1 = MP.measured(1)
    if not len(b1):
        return
    r0 = b1.iloc[0]
    print(f"\nMLA PREFILL THROUGH FA3, GRID 1 = THE FIRST LOOK ({b1.attrs['file']}: {len(b1)} rows, {r0['device']}; "
          f"DeepSeek-V3 heads at TP 1-8 and Kimi-K2's, d_qk 192 / d_v 128, causal, contiguous K / V; every price "
          f"committed before the call, {MP.GRIDS[1][0]}, model at {str(r0['model_commit'])[:7]}): product = the dense "
          "strategy's generic prefill op (what flashmla / fi_mla users got); family = FA3's launches from source "
          "(the d = 128 block x the work ratio 1.25); |model/measured - 1| median / p90, signed median, %")
    labs1 = ("product", "family")
    t1 = models_table(b1, ("regime",), labs1, labs1)
    print(t1.to_string(**fmt))
    _pooled(b1, labs1, t1)
    for lab, what in (("product", "the product's generic op"), ("family", "FA3's launches from source")):
        BOARD.add(FAMILY, "first look", f"MLA prefill grid 1, {what}, priced before measuring", b1[f"{lab}_err_pct"],
                  int((t1[f"{lab}_goal"] == "met").sum()), len(t1))
    b2 = MP.measured(2)
    if not len(b2):
        print(f"MLA prefill blind grid 2: not measured yet ({MP.GRIDS[2][0]} holds the predictions)")
        return
    r0 = b2.iloc[0]
    print(f"\nMLA PREFILL BLIND GRID 2 ({b2.attrs['file']}: {len(b2)} rows in no grid-1 shape, {r0['device']}; priced "
          f"before the call, {MP.GRIDS[2][0]}, model at {str(r0['model_commit'])[:7]}): product = the generic op; main "
          "= FA3's launches with the work ratio (grid 1's family); new = a 192 x 128 block of 1.106 d = 128 blocks "
          f"(fitted on grid 1's rows, looked-at); ship rule: {r0['ship_rule']}")
    labs2 = ("product", "main", "new")
    t2 = models_table(b2, ("regime",), labs2, labs2)
    print(t2.to_string(**fmt))
    _pooled(b2, labs2, t2)
    BOARD.add(FAMILY, "blind", "MLA prefill blind grid 2, the generic op", b2["product_err_pct"],
              int((t2["product_goal"] == "met").sum()), len(t2))
    BOARD.add(FAMILY, "blind", "MLA prefill blind grid 2, main (the work ratio)", b2["main_err_pct"],
              int((t2["main_goal"] == "met").sum()), len(t2))
    BOARD.add(FAMILY, "blind", "MLA prefill blind grid 2, the fitted block multiple (shipped)", b2["new_err_pct"],
              int((t2["new_goal"] == "met").sum()), len(t2), standing=True)
