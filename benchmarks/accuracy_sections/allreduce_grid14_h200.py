"""Engines' all-reduce on the H200: the H200's own engines' terms (engine_allreduce_grid12.GRID12_CANDIDATE, fitted on the
4 x H200 campaign + grid 11's first run, committed at 95e278e and never judged on an H200 before) against the H200 as
shipped (no engine terms: the own kernel's structure and the spec's links), on blind grid 14's rows, which an H100
request ran on 4 x H200 (simulator/calibration/engine_allreduce_h200.py). The H200 prices were written after that
measurement existed, from the frozen constants (they reproduce grid 12's committed H200 prices exactly; the test checks
it), and committed (80154df) before any error was computed: a LATE pricing of a frozen model, labelled so.
"""
from __future__ import annotations

from .allreduce import _engine_allreduce_blind_table

#: the commit that holds the late H200 prices (engine_allreduce_h200.H200_GRID14_PRED_CSV)
H200_GRID14_COMMIT = "80154df"
#: the H200 model kept after this judgement: new (the H200's own terms met 25 of 31 regimes with grid 13's rules on, 21 as
#: fitted, against 3 of 31 for the H200 without them): SHIPPED into H200.yaml by engine_allreduce_grid12.write_h200_engine_terms;
#: the shipped H200 prices these rows exactly as pred_new13_us (grid 13's rules act once a device has engine terms)
SHIPPED = "new"


def engine_allreduce_grid14_h200(data_dir=None) -> None:
    """Grid 14 on 4 x H200 scored for the H200: main = the H200 without engine terms, new = GRID12_CANDIDATE as fitted
    (grid 13's and 14's rules off), then new = the same with grid 13's rules on (what write_h200_engine_terms shipped:
    the H200's prices now); per implementation x ranks x size regime, regimes met (median <= 10 %, p90 <= 25 %); the
    H200's own STANDING row (the shipped H200 model, new13)."""
    from simulator.calibration import engine_allreduce_grid12 as G12
    from simulator.calibration import engine_allreduce_grid14 as G14
    from simulator.calibration import engine_allreduce_h200 as H

    for col, words in (("pred_new_us", "as fitted (grid 13's rules off)"),
                       ("pred_new13_us", "with grid 13's rules on")):
        _engine_allreduce_blind_table(14, data_dir, H.H200_GRID14_PRED_CSV, G14.BLIND14_MEAS_GLOB, lambda pred, w=words: (
                f"\n== engines' all-reduce kernels on the H200: grid 14's rows (run on 4 x H200), priced LATE from frozen "
                f"constants ({pred}, commit {H200_GRID14_COMMIT}): main = the H200 without engine terms (shipped until now), new = "
                f"the H200's own engines' terms {G12.GRID12_CANDIDATE} (committed {H.GRID12_CANDIDATE_COMMIT}) {w}"),
            shipped=None,   # the H200's STANDING is on grid 14's second H200 run (allreduce_replicates), priced before it
            rows_what=f"2+4 ranks, 4 x H200, the H200 models priced late ({words})",
            rename={"pred_new_us": "pred_unused_us", col: "pred_new_us"} if col != "pred_new_us" else None)
