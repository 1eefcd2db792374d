"""The per-cell table and pooled lines every protocol-B all-reduce grid section prints (grids 23-25): main's and the
candidate's |error| median / p90, signed median and goal per (implementation, ranks, size regime) cell
(engine_allreduce_grid23.judge), and per model the pooled figures over the 31 cells' rows with a BOARD row each."""
from __future__ import annotations

from simulator.calibration.scoreboard import BOARD


def cells_table(r) -> None:
    """Print main's and new's per-cell figures side by side (r: a grid joined by engine_allreduce_grid23.join_run)."""
    import pandas as pd

    from simulator.calibration import engine_allreduce_grid23 as G

    jm, jn = G.judge(r, "err"), G.judge(r, "errnew")
    t = jm[["impl", "world", "regime", "n", "meas_us"]].copy()
    for m, j in (("main", jm), ("new", jn)):
        for c in ("med", "p90", "signed"):
            t[f"{m}_{c}"] = j[c]
        t[f"{m}_goal"] = j["met"].map({True: "met", False: "MISSED"})
    with pd.option_context("display.width", 250):
        print(t.to_string(index=False, float_format=lambda v: f"{v:.1f}"))


def pooled_lines(r, what: str, standing_model: str | None, label) -> None:
    """Per model, the pooled line (all ranks, 4 and 2 ranks) and a BOARD row of the 31 cells' rows (a diag column's rows
    left out) under `what`; the row of `standing_model` carries `label` (a STANDING label, or True) when given."""
    from simulator.calibration import engine_allreduce_grid23 as G

    cells = r[~r["diag"].astype(bool)]
    for m, err in (("main", "err"), ("new", "errnew")):
        s = G.pooled(r, err=err)
        w = {g: G.pooled(r, g, err) for g in (4, 2)}
        print(f"   {m}: {s['n']} rows |error| median {s['med']:.1f} %, p90 {s['p90']:.1f} %; signed median "
              f"{s['signed']:+.1f} %; regimes met {s['met']} of {s['cells']} (4 ranks {w[4]['met']} of {w[4]['cells']}, "
              f"2 ranks {w[2]['met']} of {w[2]['cells']})")
        BOARD.add("engines' all-reduce", "blind", f"{what} ({m} model's committed prices)", 100 * cells[err], s["met"],
                  s["cells"], standing=label if (label and m == standing_model) else False)
