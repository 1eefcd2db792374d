"""The DSA indexer's MTP rows on the H200 (simulator/calibration/indexer_mtp_h200.py; 1 x H200, 2026-11-29): DeepGEMM's
fp8_paged_mqa_logits with an MTP step's rows flattened into sequences of next_n 1 sharing their request's block table,
as SGLang runs every verification row on SM90 and TensorRT-LLM / vLLM do above next_n 2 (DeepGEMM's sm90 kernel takes
next_n 1 or 2). Grid 1: the product as committed (every row's keys from HBM), blind; grid 2: main against
dsa.FLATTENED_ROWS_L2 (a later row's walk re-reading the keys as far as the schedule's reuse distance lets it); grid 3:
the soft hit rule against dsa.FLATTENED_ROWS_HIT "schedule" (every row's place in the metadata's deal); each priced
before its call; grid 3 holds the STANDING. Its diagnostic rows (every row one request's keys) are shown, not judged.
"""
from __future__ import annotations

from accuracy_sections._blind_grid import measured_twice, pooled, replicate_pct
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
    got = _flattened_grid(M.measured2, 2, M.PREDICTION2)
    if got is None:
        return
    g, rr2, judged = got
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
        ("MTP rows grid 2, main (every row's keys from HBM)", "MTP rows grid 2, FLATTENED_ROWS_L2 (shipped)"),
        standing=False)
    c = g[~g["regime"].str.startswith("flattened")]
    print(f"  controls (distinct sequences, both models alike): "
          f"{pooled((c['pred_us'] / c['median_us'] - 1.0) * 100.0)}")
    _grid3(fmt)
    _grid4(fmt)


def _flattened_grid(measured, n: int, prediction: str):
    """(the grid joined to its prices, its replicate's run to run %, its flattened rows with their regimes), or None
    (printed) before it is measured."""
    got = measured_twice(lambda r: measured(replicate=r),
                         f"The DSA indexer's MTP rows grid {n}: not measured yet ({prediction} holds the prices)")
    if got is None:
        return None
    g, rr = got
    g["regime"] = g["set"]
    return g, rr, g[g["regime"].str.startswith("flattened")].copy()


def _now_on(m, hw) -> None:
    """The shipped model's price of each row of an earlier grid (`now_us`, LOOKED-AT)."""
    m["now_us"] = [M.kernel_us(hw, r.batch, r.context, r.next_n, r.expand) for r in m.itertuples()]
    m["now_err_pct"] = (m["now_us"] / m["median_us"] - 1.0) * 100.0


def _grid3(fmt: dict) -> None:
    from hwmodels.spec import load_hardware

    got = _flattened_grid(M.measured3, 3, M.PREDICTION3)
    if got is None:
        return
    g, rr, judged = got
    _main_vs_cand(
        judged, fmt, f"\n== THE DSA INDEXER'S MTP ROWS ON THE H200, GRID 3 ({len(judged)} new flattened shapes drawn by a "
        f"seeded rule (indexer_mtp_h200.GRID3), {len(g) - len(judged)} controls beside them; {M.PREDICTION3}, commit "
        f"{str(g['model_commit'].iloc[0])[:7]}, before the call; replicate run to run {rr:.2f} % median, one row 7.8 %): "
        "main = the soft rule shipped on grid 2 (FLATTENED_ROWS_HIT 'soft'), cand = 'schedule' (simulator/strategies/"
        "dsa.py flattened_rows_hit_schedule: every row's place in the metadata's deal, the nearest earlier read of its "
        "request's keys, a hit within the measured re-sweep curve's midpoint, 0.845 of the L2; built after grids 1-2, "
        "LOOKED-AT there: pooled 5.9 against 6.1 %); declared before the call: the candidate ships if it meets more "
        "regimes, a tie by the lower pooled median; the grid holds the STANDING; |model/measured - 1| median / p90, "
        "signed median, %",
        "SHIPPED (dsa.FLATTENED_ROWS_HIT 'schedule')",
        ("  the soft rule priced hits where the schedule puts a request's rows more than an L2 apart (52 x 24K -27 %, "
         "32 x 92K -20 %); still off under both: a few requests at long context, 4-6 rows of 28K-64K -12..-16 % (one "
         "distinct control, 5 x 56K, -8 %: the lone CTAs' latency chain, not the hit share)",), FAMILY,
        ("MTP rows grid 3, main (the soft hit rule, shipped on grid 2)", "MTP rows grid 3, FLATTENED_ROWS_HIT schedule "
         "(shipped)"), standing=False)
    c = g[g["regime"].str.startswith("controls")]
    print(f"  controls (distinct sequences, both models alike): {pooled((c['pred_us'] / c['median_us'] - 1.0) * 100.0)}")
    hw = load_hardware("H200")
    for name, earlier in (("grid 1", M.measured()), ("grid 2", M.measured2())):
        e = earlier[earlier["set"].str.startswith("flattened")].copy()
        _now_on(e, hw)
        print(f"  the shipped model on {name}'s flattened rows (LOOKED-AT): {pooled(e['now_err_pct'])}")
    d = M.measured3_diag()
    if d is None:
        return
    d = d.copy()
    _now_on(d, hw)
    items = d["batch"] * -(-d["context"] // 256) / hw.units
    d["items_per_sm"] = items
    d["us_per_item"] = (d["median_us"] - hw.efficiency.fixed_s["indexer_dg_cold"] * 1e6) / items.clip(lower=1.0)
    d["l2_tbs"] = d["batch"] * d["context"] * 132.0 / (d["median_us"] * 1e-6) / 1e12
    print("  diagnostic rows (every row one request's keys: all re-reads hit; measured in the same call after the "
          "prices were committed, not judged): per-item time and the bytes the L2 delivered")
    print(d[["batch", "context", "items_per_sm", "median_us", "now_us", "now_err_pct", "us_per_item", "l2_tbs"]]
          .to_string(**fmt))
    print(f"  an item whose keys hit takes {d['us_per_item'][d['items_per_sm'] >= 32].min():.2f}-"
          f"{d['us_per_item'][d['items_per_sm'] >= 32].max():.2f} us at >= 32 items an SM (the kind's chain prices "
          f"{hw.efficiency.iter_s['indexer_dg_cold'] * 1e6:.2f}), and the kernel pulls up to {d['l2_tbs'].max():.1f} TB/s "
          f"through the L2 (the roofline's L2 bound: {hw.efficiency.l2_bw_bytes_s / 1e12:.1f} TB/s, x.sum()'s): the "
          "full-hit rows' misses are the time model's, not the hit rule's")
    print("  tried on these rows and not carried to a grid (LOOKED-AT): that per-item time (median 0.62 us, the rows of "
          ">= 32 items an SM) as the kind's iter_l2 with the L2 rate's bound lifted for the kind: the diagnostic rows "
          "4.5 / 9.1 % (in-sample), but grids 1-3's flattened rows 9.2-19.7 % median against 3.6-11.6 % (rows of 2 on "
          "grid 3 19.7 / 27.2 %): the bound had stood in for the few-rows calls' latency, which the chain does not carry")


def _grid4(fmt: dict) -> None:
    """Grid 4: a second draw of grid 3's rule priced by the shipped schedule rule (the soft rule beside it); grids 3
    and 4 pooled hold the STANDING (declared before grid 4's call)."""
    import pandas as pd

    from simulator.calibration.scoreboard import models_table

    got = _flattened_grid(M.measured4, 4, M.PREDICTION4)
    if got is None:
        return
    g, rr, judged = got
    _main_vs_cand(
        judged, fmt, f"\n== THE DSA INDEXER'S MTP ROWS ON THE H200, GRID 4 ({len(judged)} new flattened shapes, a second "
        f"draw of grid 3's rule (indexer_mtp_h200.GRID4), {len(g) - len(judged)} controls beside them; {M.PREDICTION4}, "
        f"commit {str(g['model_commit'].iloc[0])[:7]}, before the call; replicate run to run {rr:.2f} %): the shipped "
        "schedule rule (cand) re-judged after grid 3 passed its rows of 2 at 9.8 %, the soft rule (main) beside it; "
        "declared before the call: grids 3 and 4 pooled hold the STANDING; |model/measured - 1| median / p90, signed "
        "median, %",
        "the shipped rule holds (no model change)",
        ("  still off: the fewest requests at long context (6 rows of 24K -16 %), as on grid 3",), FAMILY,
        ("MTP rows grid 4, the soft hit rule (the rule before)", "MTP rows grid 4, FLATTENED_ROWS_HIT schedule (shipped)"),
        standing=False)
    both = pd.concat([M.measured3(), M.measured4()], ignore_index=True)
    both = both[both["set"].str.startswith("flattened")].copy()
    both["regime"] = both["set"]
    both["shipped_err_pct"] = (both["pred_us"] / both["median_us"] - 1.0) * 100.0
    t = models_table(both, ("regime",), ("shipped",), ("shipped",))
    met = int((t["shipped_goal"] == "met").sum())
    print(f"  grids 3 and 4 pooled ({len(both)} flattened rows, the STANDING): {pooled(both['shipped_err_pct'])}, "
          f"{met} of {len(t)}")
    print(t.to_string(**fmt))
    BOARD.add(FAMILY, "blind", "MTP rows grids 3 + 4 pooled, FLATTENED_ROWS_HIT schedule (shipped)",
              both["shipped_err_pct"], met, len(t), standing=True)
