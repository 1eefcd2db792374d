"""FlashInfer's top-k on its blind grid 8 (simulator/calibration/topk_flashinfer_grid8.py): 37 new shapes, each timed
through the ragged and the page-table transform (74 rows), aimed at grid 7's page-table misses at decode 24-256 (mid
and long rows on both sides of the L2 threshold, one and two waves; short rows with a partial second wave) with
controls, priced by main de97b41's model (grid 7's shipped one) and the candidate (the lookups of a launch of at most
two waves whose scores and page table pass the L2 priced as HBM-queued full waves, topk_flashinfer.PT_MISS_CANDIDATE),
both committed before the one device call."""
from __future__ import annotations

from simulator.calibration import topk_flashinfer_grid8 as G
from simulator.calibration.scoreboard import BOARD

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
    for kerns, lab, regex in ((G.KERNELS, "both transforms", "grid8"), (("fi_topk",), "ragged", "ragged grid8"),
                              (("fi_topk_pt",), "page-table", "page-table grid8")):
        regs = g["regime"].str.contains(regex)
        parts = []
        for col, tag in (("pred_main_us", "main"), ("pred_us", "cand")):
            med, p90, sgn = G.pooled(m, col, kerns)
            met = int(((g[f"{tag}_med"] <= 10.0) & (g[f"{tag}_p90"] <= 25.0) & regs).sum())
            parts.append(f"{tag}{' (shipped)' if tag == SHIPPED else ''} {med:.1f} / {p90:.1f} % ({sgn:+.1f}), "
                         f"{met} of {int(regs.sum())}")
        print(f"  {lab}, {int(m['kernel'].isin(kerns).sum())} rows: " + "; ".join(parts))
    from hwmodels.spec import load_hardware

    p = G.G7.product_accuracy(load_hardware("H100-SXM"), m, "pred_us")
    print("  the product's statistics through the shipped kernel model (simulator/strategies/topk.py prices through the "
          "same topk_flashinfer.add_ops, lookups included), beside the calibration's (cal): prod = topk_flashinfer."
          "launch_stats (shipped with grid 7), prod_main = topk_production.default_stats: met "
          f"{int((p['goal_prod'] == 'met').sum())} / {int((p['goal_prod_main'] == 'met').sum())} of {len(p)} regimes "
          f"against the calibration's {int((p['goal_cal'] == 'met').sum())}")
    print(p.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    for kerns, fam, regex in ((G.KERNELS, "top-k flashinfer", "grid8"),
                              (("fi_topk",), "top-k flashinfer ragged", "ragged grid8"),
                              (("fi_topk_pt",), "top-k flashinfer page-table", "page-table grid8")):
        regs = g["regime"].str.contains(regex)
        s = m[m["kernel"].isin(kerns)]
        for col, tag in (("pred_us", "cand"), ("pred_main_us", "main")):
            met = int(((g[f"{tag}_med"] <= 10.0) & (g[f"{tag}_p90"] <= 25.0) & regs).sum())
            what = {"cand": "candidate (lookups' L2-miss waves)", "main": "main de97b41's model"}[tag]
            BOARD.add(fam, "blind", f"grid8 ({len(s)}), {what}{' (shipped)' if tag == SHIPPED else ''}, committed",
                      100.0 * (s[col] / s["median_us"] - 1.0), met, int(regs.sum()),
                      standing=STANDING.get(fam, False) if tag == SHIPPED else False)
