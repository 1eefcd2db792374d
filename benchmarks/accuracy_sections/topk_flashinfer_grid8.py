"""FlashInfer's top-k on its blind grid 8 (simulator/calibration/topk_flashinfer_grid8.py): 37 new shapes, each timed
through the ragged and the page-table transform (74 rows), aimed at grid 7's page-table misses at decode 24-256 (mid
and long rows on both sides of the L2 threshold, one and two waves; short rows with a partial second wave) with
controls, priced by main de97b41's model (grid 7's shipped one) and the candidate (the lookups of a launch of at most
two waves whose scores and page table pass the L2 priced as HBM-queued full waves, topk_flashinfer.PT_MISS_CANDIDATE),
both committed before the one device call."""
from __future__ import annotations

from simulator.calibration import topk_flashinfer_grid8 as G

from .topk_flashinfer_grid6 import fi_grid_board, fi_grid_pooled_lines

#: the commit that holds the grid 8 predictions (made before the measurement)
PREDICTION_COMMIT = "9853195"
#: the model the family ships after grid 8: "cand" (topk_flashinfer.PT_LOOKUP_SHIPPED = PT_MISS_CANDIDATE) or "main";
#: both met 13 of 18 regimes; the candidate has the lower pooled median and p90 (8.2 / 18.9 % against 8.6 / 19.9 %), so it ships by the tie rule
SHIPPED = "cand"
#: the STANDING rows grid 8's shipped lines held moved to grid 9 (benchmarks/accuracy_sections/topk_flashinfer_grid9.py);
#: grid 8's lines stand as history
STANDING: dict = {}


def topk_flashinfer_grid8() -> None:
    """Print grid 8's per-regime table (main de97b41 / candidate) and its pooled lines, and add its BOARD rows; the
    shipped model's ragged and page-table rows hold the STANDING lines (STANDING)."""
    if not (G.F.DATA_DIR / G.FI_GRID8_MEASURED).is_file():
        print(f"\n== FlashInfer top-k grid8: not measured yet ({G.FI_GRID8_PREDICTION} holds the predictions)")
        return
    m = G.measured()
    g = G.accuracy(m)
    print(f"\n== FlashInfer top-k grid8 ({len(m) // 2} new shapes x the ragged and the page-table transform: decode 1-264 "
          f"/ prefill 700-2000 rows, n 4.9K-250K, aimed at grid 7's page-table misses at decode 24-256; predicted "
          f"before measuring, commit {PREDICTION_COMMIT}: {G.FI_GRID8_PREDICTION}; measured {G.FI_GRID8_MEASURED}); "
          f"every row BLIND: main = main de97b41's model (grid 7's shipped one), cand = the candidate (launches of at "
          f"most 2 waves whose 2 x rows x n x 4 B pass 0.84 x the L2 pay per wave min(rows, SMs) x "
          f"{G.FK.PT_MISS_CANDIDATE['miss_row_phases']} phases of lookups, topk_flashinfer.PT_MISS_CANDIDATE fitted on "
          f"grids 5-7's looked-at rows); shipped: {SHIPPED}; {int(m['wrong'].sum())} rows marked WRONG SELECTION "
          f"(time kept); |error| median / p90, signed median, %")
    print(g.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    fi_grid_pooled_lines(G, m, g, "grid8", (("pred_main_us", "main"), ("pred_us", "cand")), SHIPPED)
    from hwmodels.spec import load_hardware

    p = G.G7.product_accuracy(load_hardware("H100-SXM"), m, "pred_us")
    print("  the product's statistics through the shipped kernel model (simulator/strategies/topk.py prices through the "
          "same topk_flashinfer.add_ops, lookups included), beside the calibration's (cal): prod = topk_flashinfer."
          "launch_stats (shipped with grid 7), prod_main = topk_production.default_stats: met "
          f"{int((p['goal_prod'] == 'met').sum())} / {int((p['goal_prod_main'] == 'met').sum())} of {len(p)} regimes "
          f"against the calibration's {int((p['goal_cal'] == 'met').sum())}")
    print(p.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    fi_grid_board(G, m, g, "grid8", {"cand": "candidate (lookups' L2-miss waves)", "main": "main de97b41's model"}, SHIPPED, STANDING)
