"""Engines' all-reduce, BLIND grid 14 (4 ranks AND 2 ranks, >= 4 rows in every (implementation, ranks, size regime) cell,
>= 5 in the two cells grid 13's shipped model missed on both 4 x H100 hosts, (tokens, hidden) in no earlier grid), priced
and committed (85d8fc2) before the measurement by two models: main = the H100 model as shipped at 9addb67 (predict_us,
grid 13's rules) and the candidate GRID14_CANDIDATE (predict_grid14: vLLM's two-shot's first loop step priced by its
fill, AR_FIRST_FILL_EXTRA 0.57; the 2-rank Lamport one-shot's phase / transfer overlap, AR_LAMPORT_OVERLAP 0.19), fitted
by fit_grid14_terms on looked-at H100 rows only (grids <= 13 and the replicates of grids 12 and 13). The one 4-GPU call
(lab/kernels/run_engine_allreduce_blind14.sh, 114 s, 235 rows, 0 wrong sums) asked for 4 x H100 and was run on 4 x H200
by the lender: the H100 model judged ACROSS devices. The candidate met 16 of 31 regimes against main's 12 (pooled |error|
median / p90 11.0 / 43.6 % against 12.8 / 43.6 %; both target cells moved the right way: vLLM's 4-rank two-shot
512 KiB-1 MiB +21.7 -> +6.4 % signed, met; the 2-rank Lamport one-shot 128 KiB-1 MiB +18.4 -> +11.6 %, still missed on the
H200) but is NOT shipped: an H100 model is judged on H100s (as grid 12's H200 candidate was left unjudged on H100s), and
the committed prediction stays blind for a 4 x H100 run of the same script. No STANDING row here; the family's STANDING
stays on grid 13 (4 x H100).
"""
from __future__ import annotations

from .allreduce import _engine_allreduce_blind_table

#: the commit that holds blind grid 14's prediction (engine_allreduce_grid14.BLIND14_PRED_CSV), made before the measurement
ENGINE_AR_BLIND14_COMMIT = "85d8fc2"
#: the model kept after grid 14 (main / new): the candidate met 16 of 31 regimes against main's 12 on 4 x H200, another
#: device than the model's: NOT shipped (hwmodels.roofline AR_FIRST_FILL_EXTRA / AR_LAMPORT_OVERLAP stay 0)
SHIPPED = "main"
#: grid 14 ran on 4 x H200 (an H100 request served by H200s): the family's STANDING stays on grid 13's row (allreduce_grid13)
STANDING = None
#: the model kept after grid 14's 4 x H100 run (next session, with grid 16 on the same host): new, SHIPPED as the H100's
#: engine_allreduce_rules; the STANDING moved to grid 16 (allreduce_grid16), the newer blind grid of that host
SHIPPED_AFTER_H100 = "new"


def engine_allreduce_blind14(data_dir=None) -> None:
    """The engines' all-reduce BLIND grid 14 (simulator/calibration/engine_allreduce_grid14.py BLIND14_*: 28 shapes at 4 ranks,
    19 at 2 ranks, token counts in no earlier grid, hidden 1024-8192; lab/kernels/run_engine_allreduce_blind14.sh, one
    call asked for 4 x H100 and run on 4 x H200, the flashinfer modules prebuilt), both models' prices committed in
    BLIND14_PRED_CSV before it: per implementation x ranks x size regime n, |error| median / p90 and signed median,
    regimes met (median <= 10 %, p90 <= 25 %); no STANDING row here (another device than the model's)."""
    from simulator.calibration import engine_allreduce_grid14 as G14

    _engine_allreduce_blind_table(14, data_dir, G14.BLIND14_PRED_CSV, G14.BLIND14_MEAS_GLOB, lambda pred: (
            f"\n== engines' all-reduce kernels, BLIND grid 14 (4 ranks, (tokens, hidden) {list(G14.BLIND14_SHAPES)}; "
            f"2 ranks {list(G14.BLIND14_CONTROL)}; prediction {pred}, commit {ENGINE_AR_BLIND14_COMMIT}, before measuring: "
            f"main = the H100 model at {G14.BLIND14_MAIN_COMMIT}, new = GRID14_CANDIDATE {G14.GRID14_CANDIDATE} (vLLM "
            f"two-shot's first loop step by its fill; the 2-rank Lamport one-shot's phase / transfer overlap; fitted on "
            f"looked-at H100 rows of grids <= 13 and both replicates): "
            f"{'SHIPPED' if SHIPPED == 'new' else 'NOT shipped'}; measured on 4 x H200 lent for a 4 x H100 request: the "
            f"H100 model judged across devices, STANDING stays on grid 13)"),
        shipped=STANDING, rows_what="2+4 ranks, 4 x H200 for an H100 request")
    _engine_allreduce_blind_table(14, data_dir, G14.BLIND14_PRED_CSV, G14.BLIND14_H100_MEAS_GLOB, lambda pred: (
            f"\n== engines' all-reduce kernels, BLIND grid 14 on 4 x H100 (the same rows and committed prices, {pred}, "
            f"commit {ENGINE_AR_BLIND14_COMMIT}; run in the next session with grid 16 on one 4 x H100 host: main = the H100 "
            f"model at {G14.BLIND14_MAIN_COMMIT}, new = GRID14_CANDIDATE {G14.GRID14_CANDIDATE}: "
            f"{'SHIPPED' if SHIPPED_AFTER_H100 == 'new' else 'NOT shipped'} as the H100's engine_allreduce_rules; "
            f"STANDING on grid 16)"),
        shipped=None, rows_what="2+4 ranks, 4 x H100")
