"""The DSA indexer's MTP rows on the H200 (simulator/calibration/indexer_mtp_h200.py; 1 x H200, 2026-11-29): DeepGEMM's
fp8_paged_mqa_logits with an MTP step's rows flattened into sequences of next_n 1 sharing their request's block table,
as SGLang runs every verification row on SM90 and TensorRT-LLM / vLLM do above next_n 2 (DeepGEMM's sm90 kernel takes
next_n 1 or 2). Grid 1: the product as committed (every row's keys from HBM), blind; grid 2: main against
dsa.FLATTENED_ROWS_L2 (a later row's walk re-reading the keys as far as the schedule's reuse distance lets it), both
priced before the call; grid 2 holds the STANDING.
"""
from __future__ import annotations

from accuracy_sections._blind_grid import pooled, replicate_pct
from accuracy_sections.topk_trt_h200 import _main_vs_cand
from simulator.calibration import indexer_mtp_h200 as M
from simulator.calibration.scoreboard import BOARD, models_table

FAMILY = "indexer_dg, flattened MTP rows (DSA on Hopper), H200"


def indexer_mtp(fmt: dict | None = None) -> None:
    fmt = fmt or {"index": False, "float_format": lambda v: f"{v:.1f}"}
    m = M.measured()
    if m is None:
        print(f"\nThe DSA indexer's MTP rows grid 1: not measured yet ({M.PREDICTION} holds the prices)")
        return
    rr = replicate_pct(m, M.measured(replicate=True))
    m["regime"] = m["set"]
    m["shipped_err_pct"] = (m["pred_us"] / m["median_us"] - 1.0) * 100.0
    t = models_table(m, ("regime",), ("shipped",), ("shipped",))
    print(f"\n== THE DSA INDEXER'S MTP ROWS ON THE H200, GRID 1 ({len(m)} shapes: fp8_paged_mqa_logits over flattened "
          f"rows of 2-4 sharing their request's block table, distinct-sequence controls, native next_n 2; {M.PREDICTION}, "
          f"commit {str(m['model_commit'].iloc[0])[:7]}, before the call; replicate run to run {rr:.2f} %), BLIND: the "
          "product as committed (every row's keys from HBM); |model/measured - 1| median / p90, signed median, %")
    print(t.to_string(**fmt))
    judged = m[m["regime"].str.startswith("flattened")]
    tj = t[t["regime"].str.startswith("flattened")]
    met = int((tj["shipped_goal"] == "met").sum())
    print(f"  flattened rows: {pooled(judged['shipped_err_pct'])}, {met} of {len(tj)}; a request's later rows re-read "
          "its keys from the L2 where the schedule puts them close (32 rows of 16 requests x 32K: 27.8 us against 36 "
          "distinct sequences' 43.7), and not where it does not (96 rows of 16K: no gain)")
    BOARD.add(FAMILY, "blind", "MTP rows grid 1, every row's keys from HBM", judged["shipped_err_pct"], met, len(tj))
    g = M.measured2()
    if g is None:
        print(f"\nThe DSA indexer's MTP rows grid 2: not measured yet ({M.PREDICTION2} holds the prices)")
        return
    rr2 = replicate_pct(g, M.measured2(replicate=True))
    g["regime"] = g["set"]
    judged = g[g["regime"].str.startswith("flattened")].copy()
    _main_vs_cand(
        judged, fmt, f"\n== THE DSA INDEXER'S MTP ROWS ON THE H200, GRID 2 ({len(judged)} new flattened shapes, "
        f"{len(g) - len(judged)} controls beside them; {M.PREDICTION2}, commit {str(g['model_commit'].iloc[0])[:7]}, "
        f"before the call; replicate run to run {rr2:.2f} %): main = every row's keys from HBM, cand = "
        "FLATTENED_ROWS_L2 (simulator/strategies/dsa.py flattened_rows_hit: the schedule's reuse distance, the "
        "roofline's min(1, L2 / distance); built after grid 1, LOOKED-AT there); declared before the call: the "
        "candidate ships if it meets more regimes, a tie by the lower pooled median; the grid holds the STANDING; "
        "|model/measured - 1| median / p90, signed median, %",
        "SHIPPED (dsa.FLATTENED_ROWS_L2)",
        ("  still off: rows of 2 11.6 % median (12 x 16K -13 %, 64 x 48K +16 %: the hit share's soft rule against the "
         "L2's replacement), rows of 4 at 128 x 16K +22 %",), FAMILY,
        ("MTP rows grid 2, main (every row's keys from HBM)", "MTP rows grid 2, FLATTENED_ROWS_L2 (shipped)"))
    c = g[~g["regime"].str.startswith("flattened")]
    print(f"  controls (distinct sequences, both models alike): "
          f"{pooled((c['pred_us'] / c['median_us'] - 1.0) * 100.0)}")
