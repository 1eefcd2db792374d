"""Engines' all-reduce, BLIND grid 17 (simulator/calibration/engine_allreduce_grid17.py: 44 shapes at 2 ranks ONLY,
(tokens, hidden) in no earlier grid), priced and committed (220293f) for the H100 before the measurement: main = the H100
as shipped at afb6b98 (grid 16's rules), new = the H100 + GRID17_H100_RULES (grid 17's two 2-rank rules, hwmodels.roofline
AR_LAMPORT_PHASE2 / AR_TWOSHOT2_LINK as the H100's own lamport_phase2 0.911 / twoshot2_link 0.533, lamport_overlap refit to
0.10; fit_grid17_h100_rules on every looked-at 2-rank H100 row), alt = GRID17_H100_ALT (the Lamport pair fitted on plain +
RMSNorm rows; named before measuring, NOT shipped).

The run (lab/kernels/run_engine_allreduce_blind17.sh, nvidia-h100-x2): 2026-11-28 00:11 UTC, 2 x H100 NVLink, 220 rows, 0
WRONG: new 18 of 20 regimes against main's 17 (pooled |error| 4.9 / 13.0 % against 5.8 / 14.3 %) -> GRID17_H100_RULES
SHIPPED into H100-SXM.yaml (engine_allreduce_grid17.write_rules). Met by new, missed by main: the plain Lamport one-shot
<= 64 KiB (7.7 / 21.7 % against 12.3 / 25.5 %) and 128 KiB-1 MiB (9.3 / 15.8 against 12.3 / 22.7). Missed by new, met by
main: TensorRT-LLM's + RMSNorm two-shot beyond 8 MiB (-10.4 % signed: twoshot2_link speeds its link, the epilogue past the
L2 is the slower part there). Missed by both: vLLM's one-shot <= 64 KiB (10.9 % median, untouched).
The family's STANDING stays on grid 16 (4 x H100, 31 cells at 2 + 4 ranks): grid 17 holds only the 2-rank regimes.
"""
from __future__ import annotations

from .allreduce import _engine_allreduce_blind_table

#: the commit that holds blind grid 17's prediction (engine_allreduce_grid17.BLIND17_PRED_CSV), made before the measurement
ENGINE_AR_BLIND17_COMMIT = "220293f"


def engine_allreduce_blind17(data_dir=None) -> None:
    """The engines' all-reduce BLIND grid 17 (2 ranks, 2 x H100) against its committed prices, main vs new (shipped):
    per implementation x size regime n, |error| median / p90, signed median, regimes met (median <= 10 %, p90 <= 25 %);
    then the alt's (not shipped) totals. No STANDING row (the STANDING stays on grid 16's 31 cells)."""
    import pandas as pd

    from hwmodels import datafiles as DF
    from simulator.calibration import engine_allreduce as EA
    from simulator.calibration import engine_allreduce_grid17 as G

    _engine_allreduce_blind_table(17, data_dir, G.BLIND17_PRED_CSV, G.BLIND17_MEAS_GLOB, lambda pred: (
            f"\n== engines' all-reduce kernels, BLIND grid 17 on 2 x H100 (2 ranks only, (tokens, hidden) "
            f"{list(G.BLIND17_SHAPES)}; prediction {pred}, commit {ENGINE_AR_BLIND17_COMMIT}, before measuring: "
            f"main = the H100-SXM as shipped at {G.BLIND17_MAIN_COMMIT}, new = the H100-SXM with "
            f"engine_allreduce_rules {G.GRID17_H100_RULES}: SHIPPED)"),
        shipped=None, rows_what="2 ranks, 2 x H100", device="H100-SXM")
    d = EA.DATA_DIR if data_dir is None else data_dir
    meas_f = DF.glob(d, G.BLIND17_MEAS_GLOB)
    if not meas_f:
        return
    pred = pd.read_csv(DF.resolve(d / G.BLIND17_PRED_CSV))
    r = EA.blind_rows(pred.rename(columns={"pred_alt_us": "pred_us"}), pd.read_csv(meas_f[-1]))
    met = sum(100 * t["err"].abs().median() <= 10 and 100 * t["err"].abs().quantile(0.9) <= 25
              for _, t in r.groupby(["impl", "world", "regime"]))
    e = 100 * r["err"]
    print(f"   alt (GRID17_H100_ALT {G.GRID17_H100_ALT}, NOT shipped): {len(r)} rows |error| median "
          f"{e.abs().median():.1f} %, p90 {e.abs().quantile(0.9):.1f} %; signed median {e.median():+.1f} %; regimes met "
          f"{met} of {r.groupby(['impl', 'world', 'regime']).ngroups}")
