"""FlashInfer's top-k on its blind grid 12 (simulator/calibration/topk_flashinfer_grid12.py): 36 new shapes, each timed
through the ragged and the page-table transform (72 rows), aimed at launches of 3-5 waves at 0.6-1.45 of the L2 (the
page-table lookups) and full one-wave launches (120-132 rows) of 18K-64K scores (the refinement gathers' sectors), with
controls (two waves of long rows, partial one-wave launches, decode 2-10, radix, 7 and 10 waves), priced by main
753b5c0's model (PT_WAVE_CANDIDATE, one sector a gathered candidate) and the candidate (topk_flashinfer.
PT_WAVE3_CANDIDATE + GATHER_SECTOR_CANDIDATE, the window fitted on grids 5-11's looked-at rows, the sector rule not
fitted), both committed before the one device call."""
from __future__ import annotations

from simulator.calibration import topk_flashinfer_grid12 as G

from .topk_flashinfer_grid6 import fi_grid_board, fi_grid_pooled_lines

#: the commit that holds the grid 12 predictions (made before the measurement)
PREDICTION_COMMIT = "b144490"
#: the model the family ships after grid 12: "cand" (PT_WAVE3_CANDIDATE + GATHER_SECTOR_CANDIDATE) or "main"; the
#: candidate met 14 of 14 regimes, main 12 (pooled 5.1 / 11.3 % against 6.7 / 17.5 %; ragged 5.1 / 10.9 % against
#: 6.3 / 17.2 %, page-table 5.1 / 12.3 % against 7.3 / 16.8 %): it ships by the regime count
SHIPPED = "cand"
#: the STANDING rows grid 12's shipped lines hold (grid 11's before)
STANDING = {"top-k flashinfer ragged": "top-k flashinfer", "top-k flashinfer page-table": "top-k flashinfer page-table"}


def topk_flashinfer_grid12() -> None:
    """Print grid 12's per-regime table (main 753b5c0 / candidate) and its pooled lines, and add its BOARD rows; the
    shipped model's ragged and page-table rows hold the STANDING lines (STANDING)."""
    if not (G.F.DATA_DIR / G.FI_GRID12_MEASURED).is_file():
        print(f"\n== FlashInfer top-k grid12: not measured yet ({G.FI_GRID12_PREDICTION} holds the predictions)")
        return
    m = G.measured()
    g = G.accuracy(m)
    c = G.FK.PT_WAVE3_CANDIDATE
    print(f"\n== FlashInfer top-k grid12 ({len(m) // 2} new shapes x the ragged and the page-table transform: decode 2-10 "
          f"/ 60-132 / 160-250 / 280-650 / 900-1300 rows, n 5K-250K, aimed at 3-5-wave launches at 0.6-1.45 of the L2 "
          f"and full one-wave launches of long rows; predicted before measuring, commit {PREDICTION_COMMIT}: "
          f"{G.FI_GRID12_PREDICTION}; measured {G.FI_GRID12_MEASURED}); every row BLIND: main = main 753b5c0's model "
          f"(3+ waves: grid 6's hit lookups; one 32-B sector a gathered candidate), cand = the candidate (3+ waves: "
          f"the miss price inside {c['ramp3_lo']}-{c['ramp3_hi']} x the L2, edges {c['ramp3_w']} wide: topk_flashinfer."
          f"PT_WAVE3_CANDIDATE fitted on grids 5-11's looked-at pairs; a round's gathered candidates share sectors: "
          f"GATHER_SECTOR_CANDIDATE, not fitted); shipped: {SHIPPED}; {int(m['wrong'].sum())} rows marked WRONG "
          f"SELECTION (time kept); |error| median / p90, signed median, %")
    print(g.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    fi_grid_pooled_lines(G, m, g, "grid12", (("pred_main_us", "main"), ("pred_us", "cand")), SHIPPED)
    fi_grid_board(G, m, g, "grid12", {"cand": "candidate (3+-wave lookups, gather sectors)",
                                      "main": "main 753b5c0's model"}, SHIPPED, STANDING)
