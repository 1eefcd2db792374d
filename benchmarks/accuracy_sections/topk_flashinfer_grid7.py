"""FlashInfer's top-k on its blind grid 7 (simulator/calibration/topk_flashinfer_grid7.py): 50 new shapes, each timed
through the ragged and the page-table transform (100 rows), aimed at grid 6's misses (long filtered rows at decode
24-256 and prefill, single mid rows at decode 1-16, short multi-wave decode) with controls, priced by main 60b5b38's
model (grid 6's shipped one), the candidate (the filtered kernel's HBM stream floor, topk_flashinfer.
STREAM_FLOOR_CANDIDATE) and an alternative (the same floor, one-wave recorded launches on the rows the harness
launches), all three committed before the one device call; then the same kernel model priced on the product's
statistics (topk_flashinfer.launch_stats, shipped; main's topk_production.default_stats) beside the calibration's."""
from __future__ import annotations

from simulator.calibration import topk_flashinfer_grid7 as G

from .topk_flashinfer_grid6 import fi_grid_board, fi_grid_pooled_lines

#: the commit that holds the grid 7 predictions (made before the measurement)
PREDICTION_COMMIT = "15e1f3a"
#: the model the family ships after grid 7: "cand" (topk_flashinfer.STREAM_FLOOR_SHIPPED = STREAM_FLOOR_CANDIDATE) or
#: "main"; the candidate had to meet MORE of grid 7's 18 regimes than main's: it met 16, main 12 (pooled 7.4 / 14.7 %
#: against 8.7 / 19.9 %), so it ships
SHIPPED = "cand"
#: the STANDING rows grid 7's shipped lines held moved to grid 8 (benchmarks/accuracy_sections/topk_flashinfer_grid8.py);
#: grid 7's lines stand as history
STANDING: dict = {}


def topk_flashinfer_grid7() -> None:
    """Print grid 7's per-regime table (main 60b5b38 / candidate / alternative), its pooled lines and the product's
    statistics beside the calibration's, and add its BOARD rows; the shipped model's ragged and page-table rows hold
    the STANDING lines (STANDING)."""
    if not (G.F.DATA_DIR / G.FI_GRID7_MEASURED).is_file():
        print(f"\n== FlashInfer top-k grid7: not measured yet ({G.FI_GRID7_PREDICTION} holds the predictions)")
        return
    m = G.measured()
    g = G.accuracy(m)
    print(f"\n== FlashInfer top-k grid7 ({len(m) // 2} new shapes x the ragged and the page-table transform: decode 1-256 "
          f"/ prefill 700-3100 rows, n 3.7K-433K, float4 / float2 / scalar loads, aimed at grid 6's misses; predicted "
          f"before measuring, commit {PREDICTION_COMMIT}: {G.FI_GRID7_PREDICTION}; measured {G.FI_GRID7_MEASURED}); "
          f"every row BLIND: main = main 60b5b38's model (grid 6's shipped one), cand = the candidate (the filtered "
          f"kernel's HBM-streamed sweeps last at least ceil(n / (1024 x 2 x VEC)) rounds of "
          f"{G.FK.STREAM_FLOOR_CANDIDATE['loaded_round_iters']} iterations, topk_flashinfer.STREAM_FLOOR_CANDIDATE "
          f"fitted on grids 4-6's looked-at filtered rows), alt = the same floor with one-wave recorded launches priced "
          f"on the rows the harness launches; shipped: {SHIPPED}; {int(m['wrong'].sum())} rows marked WRONG SELECTION "
          f"(the 16,384-candidate cap; time kept); |error| median / p90, signed median, %")
    print(g.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    fi_grid_pooled_lines(G, m, g, "grid7", (("pred_main_us", "main"), ("pred_us", "cand"), ("pred_alt_us", "alt")), SHIPPED)
    from hwmodels.spec import load_hardware

    p = G.product_accuracy(load_hardware("H100-SXM"), m, "pred_us")
    print("  the product's statistics through the shipped kernel model, beside the calibration's (cal): prod = "
          "topk_flashinfer.launch_stats (the calibration's wave rule over 32 recorded rows at the power of two nearest "
          "n; shipped with grid 7, chosen after these rows were seen: LOOKED-AT), prod_main = main's topk_production."
          "default_stats (the largest of 4 such rows whatever the rows and waves): met "
          f"{int((p['goal_prod'] == 'met').sum())} / {int((p['goal_prod_main'] == 'met').sum())} of {len(p)} regimes "
          f"against the calibration's {int((p['goal_cal'] == 'met').sum())}")
    print(p.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    fi_grid_board(G, m, g, "grid7", {"cand": "candidate (HBM stream floor)", "main": "main 60b5b38's model"}, SHIPPED, STANDING)
