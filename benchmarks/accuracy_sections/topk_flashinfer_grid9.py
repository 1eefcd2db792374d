"""FlashInfer's top-k on its blind grid 9 (simulator/calibration/topk_flashinfer_grid9.py): 28 new shapes, each timed
through the ragged and the page-table transform (56 rows), aimed at the page-table lookups' L2-miss threshold (float4
rows, n = 0 mod 4, at decode 90-260 whose scores and page table hold 0.46-0.90 of the L2, one and two waves; one-wave
long rows past the L2; float2 rows whose scores fit the L2) with controls, priced by main 922980a's model (grid 8's
shipped one, PT_MISS_CANDIDATE at 0.84) and the candidate (its threshold and term re-fitted on grids 5-8:
topk_flashinfer.PT_MISS9_CANDIDATE, 0.73 / 0.029), both committed before the one device call."""
from __future__ import annotations

from simulator.calibration import topk_flashinfer_grid9 as G

from .topk_flashinfer_grid6 import fi_grid_board, fi_grid_pooled_lines

#: the commit that holds the grid 9 predictions (made before the measurement)
PREDICTION_COMMIT = "cc73e17"
#: the model the family ships after grid 9: "cand" (topk_flashinfer.PT_MISS9_CANDIDATE) or "main" (PT_MISS_CANDIDATE);
#: both met 11 of 14 regimes and tie on the pooled median (8.2 %), the candidate's pooled p90 is higher (15.1 against
#: 14.6 %): the tie rule keeps main; PT_MISS9_CANDIDATE stays a named, not-shipped constant
SHIPPED = "main"
#: the STANDING rows grid 9's shipped lines held moved to grid 10 (benchmarks/accuracy_sections/topk_flashinfer_grid10.py);
#: grid 9's lines stand as history
STANDING: dict = {}


def topk_flashinfer_grid9() -> None:
    """Print grid 9's per-regime table (main 922980a / candidate) and its pooled lines, and add its BOARD rows; the
    shipped model's ragged and page-table rows hold the STANDING lines (STANDING)."""
    if not (G.F.DATA_DIR / G.FI_GRID9_MEASURED).is_file():
        print(f"\n== FlashInfer top-k grid9: not measured yet ({G.FI_GRID9_PREDICTION} holds the predictions)")
        return
    m = G.measured()
    g = G.accuracy(m)
    print(f"\n== FlashInfer top-k grid9 ({len(m) // 2} new shapes x the ragged and the page-table transform: decode 1-260 "
          f"/ prefill 800 rows, n 3.6K-200K, aimed at the page-table lookups' L2 threshold (float4 rows); predicted "
          f"before measuring, commit {PREDICTION_COMMIT}: {G.FI_GRID9_PREDICTION}; measured {G.FI_GRID9_MEASURED}); "
          f"every row BLIND: main = main 922980a's model (grid 8's shipped one: lookups miss past 0.84 x the L2), cand = "
          f"the candidate (past {G.FK.PT_MISS9_CANDIDATE['l2_miss_at']} x the L2, "
          f"{G.FK.PT_MISS9_CANDIDATE['miss_row_phases']} phases a CTA, topk_flashinfer.PT_MISS9_CANDIDATE fitted on "
          f"grids 5-8's looked-at rows); shipped: {SHIPPED}; {int(m['wrong'].sum())} rows marked WRONG SELECTION "
          f"(time kept); |error| median / p90, signed median, %")
    print(g.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    fi_grid_pooled_lines(G, m, g, "grid9", (("pred_main_us", "main"), ("pred_us", "cand")), SHIPPED)
    from hwmodels.spec import load_hardware

    # the calibration beside the product: the shipped model's prices (main's: the candidate did not ship)
    p = G.G7.product_accuracy(load_hardware("H100-SXM"), m, {"cand": "pred_us", "main": "pred_main_us"}[SHIPPED])
    print("  the product's statistics through the shipped kernel model (simulator/strategies/topk.py prices through the "
          "same topk_flashinfer.add_ops, lookups included), beside the calibration's (cal): prod = topk_flashinfer."
          "launch_stats (shipped with grid 7), prod_main = topk_production.default_stats: met "
          f"{int((p['goal_prod'] == 'met').sum())} / {int((p['goal_prod_main'] == 'met').sum())} of {len(p)} regimes "
          f"against the calibration's {int((p['goal_cal'] == 'met').sum())}")
    print(p.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    fi_grid_board(G, m, g, "grid9", {"cand": "candidate (lookups' L2 threshold 0.73)", "main": "main 922980a's model"},
                  SHIPPED, STANDING)
