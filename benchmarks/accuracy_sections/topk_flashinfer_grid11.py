"""FlashInfer's top-k on its blind grid 11 (simulator/calibration/topk_flashinfer_grid11.py): 38 new shapes, each timed
through the ragged and the page-table transform (76 rows), aimed at the page-table lookups of one-wave (24-132 rows) and
two-wave (133-264 rows) decode launches across 0.12-1.10 of the L2, with controls (decode 2-12, radix, 3 and 9 waves),
priced by main b118817's model (PT_RAMP_CANDIDATE + SHORT_SWEEP_CANDIDATE) and the candidate
(topk_flashinfer.PT_WAVE_CANDIDATE, fitted on grids 5-10's looked-at rows), both committed before the one device call."""
from __future__ import annotations

from simulator.calibration import topk_flashinfer_grid11 as G

from .topk_flashinfer_grid6 import fi_grid_board, fi_grid_pooled_lines

#: the commit that holds the grid 11 predictions (made before the measurement)
PREDICTION_COMMIT = "9befb15"
#: the model the family ships after grid 11: "cand" (PT_WAVE_CANDIDATE) or "main"; the candidate met 14 of 14 regimes,
#: main 13 (pooled 6.4 / 15.1 % against 6.2 / 15.1 %; page-table 6.5 / 15.8 % against 6.4 / 16.3 %): it ships by the
#: regime count; the regime it gains (page-table two waves at >= 0.6 of the L2) is thin, 10.0 % against 10.3 % median
SHIPPED = "cand"
#: the STANDING rows grid 11's shipped lines held moved to grid 12 (benchmarks/accuracy_sections/topk_flashinfer_grid12.py)
STANDING: dict = {}


def topk_flashinfer_grid11() -> None:
    """Print grid 11's per-regime table (main b118817 / candidate) and its pooled lines, and add its BOARD rows; the
    shipped model's ragged and page-table rows hold the STANDING lines (STANDING)."""
    if not (G.F.DATA_DIR / G.FI_GRID11_MEASURED).is_file():
        print(f"\n== FlashInfer top-k grid11: not measured yet ({G.FI_GRID11_PREDICTION} holds the predictions)")
        return
    m = G.measured()
    g = G.accuracy(m)
    c = G.FK.PT_WAVE_CANDIDATE
    print(f"\n== FlashInfer top-k grid11 ({len(m) // 2} new shapes x the ragged and the page-table transform: decode 2-264 "
          f"/ 340 / 1100 rows, n 5.5K-120K, aimed at the page-table lookups of one- and two-wave launches at 0.12-1.10 "
          f"of the L2; predicted before measuring, commit {PREDICTION_COMMIT}: {G.FI_GRID11_PREDICTION}; measured "
          f"{G.FI_GRID11_MEASURED}); every row BLIND: main = main b118817's model (grid 6's hit terms ramped to the miss "
          f"price over 0.70-0.95 x the L2), cand = the candidate (per wave {c['base_wave_phases']} + "
          f"{c['base_kscore_phases']} x n / 1000 phases whatever the rows, ramped to the miss price over "
          f"{c['ramp1_lo']}-{c['ramp1_hi']} x the L2 at one wave, {c['ramp_lo']}-{c['ramp_hi']} at two: topk_flashinfer."
          f"PT_WAVE_CANDIDATE fitted on grids 5-10's looked-at rows); the ragged prices are the same in both; shipped: "
          f"{SHIPPED}; {int(m['wrong'].sum())} rows marked WRONG SELECTION (time kept); |error| median / p90, signed "
          f"median, %")
    print(g.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    fi_grid_pooled_lines(G, m, g, "grid11", (("pred_main_us", "main"), ("pred_us", "cand")), SHIPPED)
    fi_grid_board(G, m, g, "grid11", {"cand": "candidate (per-wave lookups)", "main": "main b118817's model"},
                  SHIPPED, STANDING)
