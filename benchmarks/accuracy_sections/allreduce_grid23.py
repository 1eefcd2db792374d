"""Engines' all-reduce, BLIND grid 23 on 4 x H100 (simulator/calibration/engine_allreduce_grid23.py: 34 shapes at 4 AND 2
ranks, all 31 (implementation, ranks, size regime) cells, 7-16 rows a cell, 11 in each of grid 22's three missed > 1 MiB
cells, (tokens, hidden) in no earlier grid; plus a 2-rank 12-30 MiB diagnostic outside the cells), protocol B only (21
replays of 40 calls). Priced and committed (1238290) before the call by main = the H100 as shipped at 193e61d
(GRID22_H100_RULES) and new = GRID23_H100_RULES (grid 22's rules + two engine-only link keys, oneshot2_link 0.6191 for
vLLM's 2-rank one-shot and multi_link_time 0.9224 for every engine kernel above 2 ranks, fitted on the rows measured
before grid 23 with protocol-A rows corrected to B: s = 30.9 us at 2 ranks, 35.5 us at 4).

Three calls for it (lab/kernels/run_engine_allreduce_blind23.sh, nvidia-h100-x4, 2026-11-28 02:36-02:45 UTC) got 4 x H200.
The first two skipped (ON_H200=skip). Before the third, the lead committed the H200 as shipped priced on the same rows
(engine_allreduce_grid23_h200.py, commit 6dfae1c) and ran the script with ON_H200=run: the H200 judged blind under
protocol B (its first protocol-B grid; grids 11-16 ran protocol A), 360 rows, 0 wrong sums. That run was the H200's
STANDING (its newest blind grid, all 31 cells) until grid 24 (allreduce_grid24), whose H200 candidate was fitted on it.
The H100's rows of grid 23 are not measured: its STANDING stays on grid 22's protocol-B row of the shipped model
(GRID22_H100_RULES) and GRID23_H100_RULES is not shipped.
"""
from __future__ import annotations

from simulator.calibration.scoreboard import BOARD

from .allreduce_cells import cells_table, pooled_lines

#: the commit that holds blind grid 23's prediction (engine_allreduce_grid23.BLIND23_PRED_CSV), made before the measurement
ENGINE_AR_BLIND23_COMMIT = "1238290"
#: not judged yet: main (GRID22_H100_RULES) stays shipped; no STANDING row here
SHIPPED = "main"
STANDING = False
#: the H200 as shipped on grid 23 was the H200's STANDING until grid 24 (allreduce_grid24) shipped GRID24_H200_RULES
H200_STANDING = False


def engine_allreduce_blind23(data_dir=None) -> None:
    """The engines' all-reduce BLIND grid 23 (4 and 2 ranks, 4 x H100, protocol B): per implementation x ranks x size
    regime, main's and new's |error| median / p90, signed median, met; pooled per model (BOARD rows); the 2-rank 12-30 MiB
    diagnostic rows (not counted)."""
    import pandas as pd

    from simulator.calibration import engine_allreduce_grid23 as G

    head = (f"\n== engines' all-reduce kernels, BLIND grid 23 on 4 x H100 (4 and 2 ranks, (tokens, hidden) "
            f"{list(G.BLIND23_SHAPES)}, 2-rank diagnostic {list(G.BLIND23_DIAG)}; prediction {G.BLIND23_PRED_CSV}, commit "
            f"{ENGINE_AR_BLIND23_COMMIT}, before measuring: main = the H100-SXM as shipped at {G.BLIND23_MAIN_COMMIT}, new "
            f"= the H100 with engine_allreduce_rules {G.GRID23_H100_RULES}; protocol {G.PROTOCOL})")
    r = G.load_blind23(data_dir)
    if r is None:
        print(head + ": not measured yet (the call of 2026-11-28 got 4 x H200 and skipped; expected "
              "engine_allreduce_blind23B_<device>_<date>.csv); the STANDING stays on grid 22")
        return
    print(head + "; |model/measured - 1| median / p90, signed median, %")
    cells_table(r)
    pooled_lines(r, "BLIND grid 23, 2+4 ranks, 4 x H100, protocol B", SHIPPED, STANDING)
    print("   the 2-rank diagnostic at 12-30 MiB (outside the 31 cells; not counted), signed %")
    with pd.option_context("display.width", 250):
        print(G.diag_rows(r).to_string(index=False, float_format=lambda v: f"{v:.1f}"))


def engine_allreduce_blind23_h200(data_dir=None) -> None:
    """Grid 23's rows on 4 x H200 (protocol B) against the H200 as shipped, priced before the run: per cell |error|
    median / p90, signed median, met; pooled; the H200's STANDING row; the 12-30 MiB diagnostic rows (not counted)."""
    import pandas as pd

    from simulator.calibration import engine_allreduce_grid23 as G
    from simulator.calibration import engine_allreduce_grid23_h200 as H

    r = H.load_blind23_h200(data_dir)
    if r is None:
        return
    print(f"\n== engines' all-reduce kernels, BLIND grid 23 on 4 x H200 (the same rows; prediction {H.BLIND23_H200_PRED_CSV}, "
          "commit 6dfae1c, before the run: the H200 as shipped at "
          f"{H.BLIND23_H200_MAIN_COMMIT} (grid 16's rules, fitted on protocol-A rows); protocol {G.PROTOCOL}; the H200's "
          "STANDING until grid 24); |model/measured - 1| median / p90, signed median, %")
    j = G.judge(r, "err")
    j["goal"] = j["met"].map({True: "met", False: "MISSED"})
    with pd.option_context("display.width", 250):
        print(j.drop(columns="met").to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    s = G.pooled(r, err="err")
    w = {g: G.pooled(r, g, "err") for g in (4, 2)}
    print(f"   the H200 as shipped: {s['n']} rows |error| median {s['med']:.1f} %, p90 {s['p90']:.1f} %; signed median "
          f"{s['signed']:+.1f} %; regimes met {s['met']} of {s['cells']} (4 ranks {w[4]['met']} of {w[4]['cells']}, "
          f"2 ranks {w[2]['met']} of {w[2]['cells']})")
    cells = r[~r["diag"].astype(bool)]
    BOARD.add("engines' all-reduce", "blind", "BLIND grid 23, 2+4 ranks, 4 x H200, protocol B (the H200 as shipped, "
              "committed prices)", 100 * cells["err"], s["met"], s["cells"],
              standing="engines' all-reduce, H200" if H200_STANDING else False)
    d = r[r["diag"].astype(bool)]
    print("   the 2-rank diagnostic at 12-30 MiB (outside the 31 cells; not counted), signed %: " + ", ".join(
        f"{i} {int(t)} x {int(h)} {100 * e:+.1f}" for i, t, h, e in zip(d["impl"], d["tokens"], d["hidden"], d["err"])))
