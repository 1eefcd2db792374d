"""Engines' all-reduce, BLIND grid 12 on 4 x H200 (4 ranks AND 2 ranks, >= 4 rows in every (implementation, ranks, size
regime) cell): main = the H200 as shipped (H200.yaml carries no engines' terms and no custom-kind link terms: the
datasheet link rate, a 3 us spec latency per barrier, no fixed time) against the candidate = the H200's own engines'
terms (simulator/calibration/engine_allreduce.py GRID12_CANDIDATE, h200_candidate: fit_engine_terms on the 4 x H200
campaign + grid 11's first run, the custom kinds' link terms from the H100's own-kernel fit), both priced and committed
before the measurement. Its row is the H200's own STANDING (STANDING_LABEL); the family's H100 STANDING stays on grid 10.
"""
from __future__ import annotations

from .allreduce import _engine_allreduce_blind_table

#: the commit that holds blind grid 12's prediction (engine_allreduce.BLIND12_PRED_CSV), made before the measurement
ENGINE_AR_BLIND12_COMMIT = "95e278e"
#: the model kept for the H200 after grid 12 (main / new)
SHIPPED = "PENDING"
#: the H200's own STANDING row (the H100's stays on grid 10's main row, allreduce_grid10)
STANDING_LABEL = "engines' all-reduce, 4 x H200"


def engine_allreduce_blind12(data_dir=None) -> None:
    """The engines' all-reduce BLIND grid 12 (simulator/calibration/engine_allreduce.py BLIND12_*: 28 shapes at 4 ranks,
    15 at 2 ranks, token counts in no earlier grid, hidden 768-8192, 4-rank TensorRT-LLM two-shot probes at 120-132 CTAs
    in clusters of 4 / 8; lab/kernels/run_engine_allreduce_blind12.sh, one 4 x H200 call, the flashinfer modules
    prebuilt), priced before the measurement by main's H200 (BLIND12_MAIN_COMMIT) and the candidate (the H200's own
    terms, fitted on H200_FIT_CSVS only), both committed in BLIND12_PRED_CSV: per implementation x ranks x size regime n,
    |error| median / p90 and signed median of each, regimes met (median <= 10 %, p90 <= 25 %); the shipped model's
    row is the H200's STANDING."""
    from simulator.calibration import engine_allreduce as EA

    _engine_allreduce_blind_table(12, data_dir, EA.BLIND12_PRED_CSV, EA.BLIND12_MEAS_GLOB, lambda pred: (
            f"\n== engines' all-reduce kernels on 4 x H200, BLIND grid 12 (4 ranks, (tokens, hidden) "
            f"{list(EA.BLIND12_SHAPES)}; 2 ranks {list(EA.BLIND12_CONTROL)}; prediction {pred}, commit "
            f"{ENGINE_AR_BLIND12_COMMIT}, before measuring: main = the H200 as shipped at {EA.BLIND12_MAIN_COMMIT}, new = "
            f"the H200's own engines' terms {EA.GRID12_CANDIDATE} (us; fitted on {', '.join(EA.H200_FIT_CSVS)}) + "
            f"{EA.H200_LINKS_FROM}'s custom-kind link terms: {'SHIPPED' if SHIPPED == 'new' else 'NOT shipped'})"),
        shipped=SHIPPED, standing_label=STANDING_LABEL, rows_what="2+4 ranks, 4 x H200")
