"""FlashInfer's top-k on its blind grid 10 (simulator/calibration/topk_flashinfer_grid10.py): 33 new shapes, each timed
through the ragged and the page-table transform (66 rows), aimed at the page-table lookups' L2 miss across 0.30-1.20 of
the L2 (float4 rows at decode 96-256, one and two waves) and at short rows (2K < n <= 4K, one and two waves), with
the copy path (n <= k) and controls, priced by main f9af03b's model (PT_MISS_CANDIDATE at 0.84, no short-row rule) and
the candidate (topk_flashinfer.PT_RAMP_CANDIDATE + SHORT_SWEEP_CANDIDATE, fitted on grids 5-9's looked-at rows), both
committed before the one device call."""
from __future__ import annotations

from simulator.calibration import topk_flashinfer_grid10 as G

from .topk_flashinfer_grid6 import fi_grid_board, fi_grid_pooled_lines

#: the commit that holds the grid 10 predictions (made before the measurement)
PREDICTION_COMMIT = "d3389d3"
#: the model the family ships after grid 10: "cand" (PT_RAMP_CANDIDATE + SHORT_SWEEP_CANDIDATE) or "main"; the
#: candidate met 13 of 14 regimes, main 10 (pooled 6.3 / 15.0 % against 8.3 / 19.4 %): it ships. Its gain is the
#: short-row rule's; the ramp alone moved 9 page-table rows, 6 of them away from the measurement (one-wave rows at
#: 0.5-0.8 of the L2 stay +15-29 % in both models: the lookups' hit terms, not the ramp)
SHIPPED = "cand"
#: the STANDING rows grid 10's shipped lines held moved to grid 11 (benchmarks/accuracy_sections/topk_flashinfer_grid11.py);
#: grid 10's lines stand as history
STANDING: dict = {}


def topk_flashinfer_grid10() -> None:
    """Print grid 10's per-regime table (main f9af03b / candidate) and its pooled lines, and add its BOARD rows; the
    shipped model's ragged and page-table rows hold the STANDING lines (STANDING)."""
    if not (G.F.DATA_DIR / G.FI_GRID10_MEASURED).is_file():
        print(f"\n== FlashInfer top-k grid10: not measured yet ({G.FI_GRID10_PREDICTION} holds the predictions)")
        return
    m = G.measured()
    g = G.accuracy(m)
    print(f"\n== FlashInfer top-k grid10 ({len(m) // 2} new shapes x the ragged and the page-table transform: decode 1-256 "
          f"/ prefill 700-1500 rows, n 2.3K-150K (the two copy-path shapes, n <= k, unmeasured), aimed at the page-table lookups' L2 ramp (0.30-1.20 of the L2) and "
          f"short rows; predicted before measuring, commit {PREDICTION_COMMIT}: {G.FI_GRID10_PREDICTION}; measured "
          f"{G.FI_GRID10_MEASURED}); every row BLIND: main = main f9af03b's model (lookups miss past 0.84 x the L2), "
          f"cand = the candidate (lookups' miss ramped over {G.FK.PT_RAMP_CANDIDATE['ramp_lo']}-"
          f"{G.FK.PT_RAMP_CANDIDATE['ramp_hi']} x the L2, {G.FK.PT_RAMP_CANDIDATE['miss_row_phases']} phases a CTA; a "
          f"short row's sweep {G.FK.SHORT_SWEEP_CANDIDATE['short_sweep_iters']} iterations: topk_flashinfer."
          f"PT_RAMP_CANDIDATE + SHORT_SWEEP_CANDIDATE fitted on grids 5-9's looked-at rows); shipped: {SHIPPED}; "
          f"{int(m['wrong'].sum())} rows marked WRONG SELECTION (time kept); |error| median / p90, signed median, %")
    print(g.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    fi_grid_pooled_lines(G, m, g, "grid10", (("pred_main_us", "main"), ("pred_us", "cand")), SHIPPED)
    fi_grid_board(G, m, g, "grid10", {"cand": "candidate (L2 ramp + short-row sweeps)",
                                      "main": "main f9af03b's model"}, SHIPPED, STANDING)
