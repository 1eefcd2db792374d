"""One blind grid priced by the product as committed before its call: its per-regime table, pooled figures, notes and
scoreboard entry (the H200 top-k sections share it)."""
from __future__ import annotations

import numpy as np

from simulator.calibration.scoreboard import BOARD, models_table


def pooled(e) -> str:
    """median |error|, p90 and signed median of the signed errors `e` (%)."""
    e = np.asarray(e, float)
    return (f"median |error| {np.median(np.abs(e)):.1f} %, p90 {np.percentile(np.abs(e), 90):.1f} %, signed "
            f"{np.median(e):+.1f} %")


def replicate_pct(m, rep) -> float:
    """Run to run: the median |replicate / first - 1| of the grid's rows (%), the two joined in the same row order."""
    return float(np.median(np.abs(rep["median_us"].to_numpy() / m["median_us"].to_numpy() - 1.0)) * 100.0)


def measured_twice(fetch, missing: str):
    """(a grid's first run, its replicate's run to run %) from `fetch(replicate)` (a measured grid joined to its
    committed prices, None before it is measured), or None after printing `missing` on a line of its own."""
    m = fetch(False)
    if m is None:
        print(f"\n{missing}")
        return None
    return m, replicate_pct(m, fetch(True))


def blind_grid(m, rep, fmt: dict, header, family: str, label: str, standing: bool = True, notes=()) -> int:
    """Print grid `m` (committed `pred_us`, measured `median_us`, `regime`): header(replicate %) first, then its
    regimes' table, the pooled figures and each line of `notes`; add it to the board as `family` / `label`. Returns the
    regimes met."""
    m["blind_err_pct"] = (m["pred_us"].astype(float) / m["median_us"].astype(float) - 1.0) * 100.0
    print(header(replicate_pct(m, rep)))
    t = models_table(m, ("regime",), ("blind",), ("blind",))
    print(t.to_string(**fmt))
    met = int((t["blind_goal"] == "met").sum())
    print(f"  {pooled(m['blind_err_pct'])}; regimes met {met} of {len(t)}")
    for line in notes:
        print(line)
    BOARD.add(family, "blind", label, m["blind_err_pct"], met, len(t), standing=standing)
    return met
