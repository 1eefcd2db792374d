"""The seventh MLA blind grid: FlashMLA where get_mla_metadata gives each part one request (or one piece of one),
DeepSeek-V3's heads at TP 1-8 (lab/kernels/measure_production_attention.py --grid mla_blind7,
run_mla_blind7_device.sh), its committed predictions (priced before measuring) against its measurement in
hwmodels/calibration/data/production_attention/; nothing but a line where it is not measured.
"""
from __future__ import annotations

from simulator.calibration.scoreboard import add_pooled as _board

from .mla import _met_line, _variant_table, _with_variants

#: the committed prices: the padded-MMA model (simulator/kernels/flashmla.py FM_MMA_PADDED on, at the commit recorded in
#: the file) and main's model at ea0997d (the model shipped: FM_MMA_PADDED off)
MLA_BLIND7_PRED = "production_attention_mla_blind7_predictions.csv"
MLA_BLIND7_BEFORE = "production_attention_mla_blind7_predictions_ea0997d.csv"
MLA_BLIND7_GLOB = "production_attention_mla_blind7_nvidia*.csv"
#: which model the grid's board rows call shipped ("padded": FM_MMA_PADDED on, it met 4 of 4 regimes where main's
#: model met 3 of 4; set from the blind result, measured 2026-11-27)
MLA_BLIND7_SHIPPED = "padded"


def mla_grid7(FP, fmt) -> None:
    """Per regime the committed prices of the padded-MMA model and of main's model at ea0997d against the goal
    (median <= 10 %, p90 <= 25 %), and the board rows."""
    r = _with_variants(FP, 7, MLA_BLIND7_GLOB, MLA_BLIND7_PRED, MLA_BLIND7_BEFORE, {})
    if r is None:
        return
    m, name = r
    print(f"\nMLA BLIND GRID 7 (BLIND: FlashMLA at one request per part, DeepSeek-V3's MLA heads at TP 1-8 = 16-128 "
          f"heads, batch 2-64 x context 2.3K-24K, batch 24-88 x context 40-176, controls B 240 T 700 / B 416 T 56, in "
          f"no earlier grid; {name}, {len(m)} shapes, the same Q every replay). Priced and committed before measuring: "
          f"the padded-MMA model (commit {str(m['model_commit'].iloc[0])[:10]}: the MMAs' 64-row head blocks x whole "
          f"64-token blocks as the tensor term), before = main's model at {str(m['before_commit'].iloc[0])[:7]}. The "
          "rule was chosen with the earlier grids' one-request-per-part rows seen (looked-at there; these shapes are "
          "blind). Goal: median <= 10 %, p90 <= 25 %")
    t = _variant_table(m, {}, "ea0997d", fmt)
    padded = MLA_BLIND7_SHIPPED == "padded"
    _board(m, "err", "blind", "MLA blind grid 7, padded-MMA model's committed prices"
           + (" (shipped)" if padded else " (not shipped)"), t, standing=padded)
    _board(m, "err_before", "blind", "MLA blind grid 7, main ea0997d model's committed prices"
           + (" (not shipped)" if padded else " (shipped)"), t, goal="before goal",
           standing=not padded)
    _met_line(t, 7, "ea0997d")
