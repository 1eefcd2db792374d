"""FlashInfer's top-k on its blind grid 6 (simulator/calibration/topk_flashinfer_grid6.py): 41 new shapes, each timed
through the ragged and the page-table transform (82 rows), aimed at grid 5's misses (mid rows at decode 24-256, long
prefill rows, the page-table transform's mid rows and prefill) with controls, priced by main 8c86417's model, the
candidate (multi-wave launches priced by their busiest SM's rows, the page-table lookups a phase per wave) and an
alternative (the list-scheduling bound with the same lookups), all three committed before the one device call."""
from __future__ import annotations

from simulator.calibration import topk_flashinfer_grid6 as G
from simulator.calibration.scoreboard import BOARD

#: the commit that holds the grid 6 predictions (made before the measurement)
PREDICTION_COMMIT = "716930a"
#: the model the family ships after grid 6: "cand" (topk_flashinfer.PT_LOOKUP_SHIPPED = PT_LOOKUP_CANDIDATE, the
#: calibration's multi-wave statistic topk_flashinfer_grid6.WAVE_RULE) or "main"; the candidate had to meet MORE of grid
#: 6's 20 regimes than main's: it met 14, main 9 (pooled 6.7 / 18.0 % against 12.2 / 25.5 %), so it ships
SHIPPED = "cand"
#: the STANDING rows grid 6's shipped lines held (the ragged transform's and the page-table transform's) moved to grid 7
#: (benchmarks/accuracy_sections/topk_flashinfer_grid7.py); grid 6's lines stand as history
STANDING: dict = {}


def topk_flashinfer_grid6() -> None:
    """Print grid 6's per-regime table (main 8c86417 / candidate / alternative) and its pooled lines, and add its BOARD
    rows; the shipped model's ragged and page-table rows hold the STANDING lines (STANDING)."""
    if not (G.F.DATA_DIR / G.FI_GRID6_MEASURED).is_file():
        print(f"\n== FlashInfer top-k grid6: not measured yet ({G.FI_GRID6_PREDICTION} holds the predictions)")
        return
    m = G.measured()
    g = G.accuracy(m)
    print(f"\n== FlashInfer top-k grid6 ({len(m) // 2} new shapes x the ragged and the page-table transform: decode 1-250 "
          f"/ prefill 600-3800 rows, n 4.5K-760K, aimed at grid 5's misses; predicted before measuring, commit "
          f"{PREDICTION_COMMIT}: {G.FI_GRID6_PREDICTION}; measured {G.FI_GRID6_MEASURED}); every row BLIND: main = "
          f"main 8c86417's model, cand = the candidate (a multi-wave launch's pass statistics mean + (one wave's "
          f"slowest - mean) / sqrt(waves); the page-table lookups a phase per wave, topk_flashinfer.PT_LOOKUP_CANDIDATE "
          f"fitted on grid 5's looked-at filtered page-table rows), alt = the same lookups with mean + (slowest - mean) "
          f"/ waves; shipped: {SHIPPED}; {int(m['wrong'].sum())} rows marked WRONG SELECTION (the 16,384-candidate "
          f"cap; time kept); |error| median / p90, signed median, %")
    print(g.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    fi_grid_pooled_lines(G, m, g, "grid6", (("pred_main_us", "main"), ("pred_us", "cand"), ("pred_alt_us", "alt")),
                         SHIPPED)
    fi_grid_board(G, m, g, "grid6", {"cand": "candidate (busiest-SM rows, lookup phase)",
                                     "main": "main 8c86417's model"}, SHIPPED, STANDING)


def fi_grid_pooled_lines(G, m, g, grid: str, models, shipped: str) -> None:
    """Print a FlashInfer top-k grid's pooled lines: for both transforms, the ragged and the page-table rows, each model
    (prediction column, tag) in `models`: |error| median / p90 (signed median) and the regimes of that transform it
    met (median <= 10 %, p90 <= 25 %); `grid` = the regimes' grid tag (e.g. 'grid7'), `shipped` = the shipped tag."""
    for kerns, lab, regex in ((G.KERNELS, "both transforms", grid), (("fi_topk",), "ragged", f"ragged {grid}"),
                              (("fi_topk_pt",), "page-table", f"page-table {grid}")):
        regs = g["regime"].str.contains(regex)
        parts = []
        for col, tag in models:
            med, p90, sgn = G.pooled(m, col, kerns)
            met = int(((g[f"{tag}_med"] <= 10.0) & (g[f"{tag}_p90"] <= 25.0) & regs).sum())
            parts.append(f"{tag}{' (shipped)' if tag == shipped else ''} {med:.1f} / {p90:.1f} % ({sgn:+.1f}), "
                         f"{met} of {int(regs.sum())}")
        print(f"  {lab}, {int(m['kernel'].isin(kerns).sum())} rows: " + "; ".join(parts))


def fi_grid_board(G, m, g, grid: str, whats: dict, shipped: str, standing: dict) -> None:
    """Add a FlashInfer top-k grid's BOARD rows: per family (both transforms, ragged, page-table) and model tag in
    `whats` (tag -> description; columns pred_us = cand, pred_main_us = main) the signed errors and regimes met; the
    shipped tag's rows hold the STANDING lines `standing` names (family -> label)."""
    cols = {"cand": "pred_us", "main": "pred_main_us"}
    for kerns, fam, regex in ((G.KERNELS, "top-k flashinfer", grid),
                              (("fi_topk",), "top-k flashinfer ragged", f"ragged {grid}"),
                              (("fi_topk_pt",), "top-k flashinfer page-table", f"page-table {grid}")):
        regs = g["regime"].str.contains(regex)
        s = m[m["kernel"].isin(kerns)]
        for tag, what in whats.items():
            met = int(((g[f"{tag}_med"] <= 10.0) & (g[f"{tag}_p90"] <= 25.0) & regs).sum())
            BOARD.add(fam, "blind", f"{grid} ({len(s)}), {what}{' (shipped)' if tag == shipped else ''}, committed",
                      100.0 * (s[cols[tag]] / s["median_us"] - 1.0), met, int(regs.sum()),
                      standing=standing.get(fam, False) if tag == shipped else False)
