"""The tensor-core (FA2 prefill) kernel's fourteenth blind grid: FlashInfer verification rows (fi_verify) at middle
contexts where the plan leaves a partial last wave (265-396 working CTAs at 2 per SM) or splits the KV in 2, and fp8
one- / two-tile shapes at mid batch, the test of the last wave's own occupancy (simulator/kernels/flashinfer.py
FI_TC_LAST_WAVE_SHARE) and of the merge's item reloads (FI_TC_MERGE_AS_DECODE).

The grid (lab/kernels/measure_production_attention.py --grid fi_tc_blind14) was priced by main's model (the flags off:
60b5b38's model) and by the candidate (both flags on, the fitted file refitted so) and both price files were committed
(5f39d90) before the one device call measured it.
"""
from __future__ import annotations

#: (the candidate's prices, main's prices, the measured blind grid); both price files committed before measuring
FI_TC_BLIND14 = ("production_attention_fi_tc_blind14_predictions.csv",
                 "production_attention_fi_tc_blind14_predictions_60b5b38.csv",
                 "production_attention_fi_tc_blind14_nvidia*.csv")


def fi_tc_blind14(FP, hw, fmt) -> None:
    """Print the fourteenth blind grid's per-regime |error| of main's and the candidate's committed prices and of the
    committed fitted file (now), per shape group and per standard regime; add the board rows (the candidate ships: its
    row is fi_verify's STANDING row)."""
    from .fi_tc_grid12 import fi_tc_verify_grid_report

    def head(m, name, before, pred):
        return (f"\nFI_TC BLIND GRID 14 (FlashInfer verification, q 2-4, middle contexts 560-2000 at batch 18-104 with "
                f"a partial last wave or a KV split in 2, fp8 one- / two-tile shapes at batch 38-180, + 6 controls; "
                f"{len(m)} shapes of {m.attrs.get('timed_of', len(m))} timed, {name}): BLIND: main = the model at "
                f"60b5b38 ({before}), new = the last partial wave at its own occupancy + the merge's item reloads (model "
                f"{str(m['model_commit'].iloc[0])[:7]}, {pred}), both committed before measuring; now = the committed "
                "fitted file")

    # the new model ships: its row is fi_verify's STANDING row
    fi_tc_verify_grid_report(FP, hw, fmt, FI_TC_BLIND14, 14, head, {
        "main": "main model's committed prices", "new": "last-wave / merge-reload model's prices"}, True)
