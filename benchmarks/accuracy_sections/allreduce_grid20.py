"""Engines' all-reduce, BLIND grid 20 on 2 x H100 (simulator/calibration/engine_allreduce_grid20.py: 32 shapes at 2 ranks
ONLY, (tokens, hidden) in no earlier grid, 12 rows in each target cell), aimed at grid 19's two 2-rank misses (TensorRT-
LLM's Lamport one-shot 128 KiB-1 MiB, +8.3 % signed; vLLM's one-shot 2-8 MiB, p90 25.4 %), priced and committed (9695459)
before the measurement by main = the H100 as shipped at 667a291 (GRID19_H100_RULES) and new = GRID20_H100_RULES (main +
lamport2_link 0.5266: the 2-rank Lamport push at its own share of the datasheet link rate, with lamport_overlap 0.1311 /
lamport_phase2 0.9128 refitted with it on 293 looked-at 2-rank plain Lamport rows of 16 H100 runs, hosts pooled); alt =
GRID20_H100_ALT (the three on plain + RMSNorm rows; named, NOT shipped). vLLM's one-shot got no rule: its own 2-rank link
share fits to 0.527, what main prices already.

The one call (lab/kernels/run_engine_allreduce_blind20.sh, nvidia-h100-x2, 2026-11-28 01:45 UTC, 56 s, 156 rows, 0 WRONG):
new 9 of 15 as main's 9, pooled 8.3 / 21.3 % against 8.6 / 21.3 % (p90 21.28 against 21.34) -> SHIPPED by the ship rule
(equal regimes, lower pooled median AND p90) into H100-SXM.yaml (engine_allreduce_grid20.ship_grid20) -- a marginal win,
within this host's scatter. Both target cells missed by both models on this host (Lamport 128 KiB-1 MiB 15.0 / 24.1 %
against 15.7 / 23.1 %; vLLM 1-8 MiB 15.9 / 27.7 % both), and four more 2-rank one-shot cells missed by both: this host's
rows near 1-2.5 MiB are bimodal PER CALL (p20 to p80 up to 40 % apart on 10 calls, e.g. vLLM 290 x 2560 11.0 / 16.2 us),
the step seen above 1 MiB on earlier hosts. The STANDING stays on grid 19 (4 x H100, all 31 cells): grid 20 holds only
the 2-rank cells, no STANDING row here.
"""
from __future__ import annotations

from .allreduce import _engine_allreduce_blind_table

#: the commit that holds blind grid 20's prediction (engine_allreduce_grid20.BLIND20_PRED_CSV), made before the measurement
ENGINE_AR_BLIND20_COMMIT = "9695459"


def G():
    from simulator.calibration import engine_allreduce_grid20

    return engine_allreduce_grid20


def engine_allreduce_blind20(data_dir=None) -> None:
    """The engines' all-reduce BLIND grid 20 (2 ranks, 2 x H100) against its committed prices, main vs new (shipped):
    per implementation x size regime n, |error| median / p90, signed median, regimes met (median <= 10 %, p90 <= 25 %);
    then the alt's (not shipped) totals and the two target cells per H100 run (looked-at runs: in-sample for new, which
    was fitted there; grid 20: blind). No STANDING row (the STANDING stays on grid 19's 31 cells)."""
    _engine_allreduce_blind_table(20, data_dir, G().BLIND20_PRED_CSV, G().BLIND20_MEAS_GLOB, lambda pred: (
            f"\n== engines' all-reduce kernels, BLIND grid 20 on 2 x H100 (2 ranks only, (tokens, hidden) "
            f"{list(G().BLIND20_SHAPES)}; prediction {pred}, commit {ENGINE_AR_BLIND20_COMMIT}, before measuring: main = "
            f"the H100-SXM as shipped at {G().BLIND20_MAIN_COMMIT}, new = the H100-SXM with engine_allreduce_rules "
            f"{G().GRID20_H100_RULES}: SHIPPED)"),
        shipped=None, rows_what="2 ranks, 2 x H100", device="H100-SXM")
    _alt_and_hosts(data_dir)


def _alt_and_hosts(data_dir) -> None:
    import pandas as pd

    from hwmodels import datafiles as DF
    from simulator.calibration import engine_allreduce as EA

    d = EA.DATA_DIR if data_dir is None else data_dir
    meas_f = DF.glob(d, G().BLIND20_MEAS_GLOB)
    if not meas_f:
        return
    pred = pd.read_csv(DF.resolve(d / G().BLIND20_PRED_CSV))
    r = EA.blind_rows(pred.rename(columns={"pred_alt_us": "pred_us"}), pd.read_csv(meas_f[-1]))
    e = 100 * r["err"]
    met = sum(int(100 * t["err"].abs().median() <= 10 and 100 * t["err"].abs().quantile(0.9) <= 25)
              for _, t in r.groupby(["impl", "world", "regime"]))
    print(f"   alt (GRID20_H100_ALT {G().GRID20_H100_ALT}, NOT shipped): {len(r)} rows |error| median "
          f"{e.abs().median():.1f} %, p90 {e.abs().quantile(0.9):.1f} %; signed median {e.median():+.1f} %; regimes met "
          f"{met} of {r.groupby(['impl', 'world', 'regime']).ngroups}")
    t = G().cells_by_host(d)
    print("   the two target cells per H100 run at 2 ranks (main = GRID19_H100_RULES, new = GRID20_H100_RULES: in-sample "
          "on the looked-at runs, fitted there; grid 20 blind):")
    print(t.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
