"""The tensor-core (FA2 prefill) kernel's thirteenth blind grid: FlashInfer verification rows (fi_verify) at short
contexts with several CTAs per SM, the test of the bf16 tile chain's shared MMA issue (simulator/kernels/flashinfer.py
FI_TC_MMA_SHARED, its exposed share FI_TC_MMA_SHARE_EXPOSED fitted on named rows of three earlier grids).

The grid (lab/kernels/measure_production_attention.py --grid fi_tc_blind13) was priced by main's model (08cf44f) and by
the shared-MMA model (6f7773a) and both price files were committed before it was measured.
"""
from __future__ import annotations

#: (the shared-MMA model's prices, main's prices, the measured blind grid); both price files committed before measuring
FI_TC_BLIND13 = ("production_attention_fi_tc_blind13_predictions.csv",
                 "production_attention_fi_tc_blind13_predictions_08cf44f.csv",
                 "production_attention_fi_tc_blind13_nvidia*.csv")


def fi_tc_blind13(FP, hw, fmt) -> None:
    """Print the thirteenth blind grid's per-regime |error| of main's and the shared-MMA model's committed prices and of
    the committed fitted file (now), per shape group and per standard regime; add the board rows (the shared-MMA model
    shipped; fi_verify's STANDING row is grid 14's since)."""
    from .fi_tc_grid12 import fi_tc_verify_grid_report

    def head(m, name, before, pred):
        return (f"\nFI_TC BLIND GRID 13 (FlashInfer verification, q 2-5, at short contexts 44-460 x batch 44-400 and "
                f"middle contexts at batch 10-44, + 7 controls; {len(m)} shapes of {m.attrs.get('timed_of', len(m))} "
                f"timed, {name}): BLIND: main = the model at 08cf44f ({before}), new = the bf16 tile chain's MMAs shared "
                f"by the busiest SM's co-resident CTAs (model {str(m['model_commit'].iloc[0])[:7]}, {pred}), both "
                "committed before measuring; now = the committed fitted file")

    # fi_verify's STANDING row: grid 14
    fi_tc_verify_grid_report(FP, hw, fmt, FI_TC_BLIND13, 13, head, {"main": "main model's committed prices",
                                                                    "new": "shared-MMA model's committed prices"}, False)
