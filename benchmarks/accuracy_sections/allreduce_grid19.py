"""Engines' all-reduce, BLIND grid 19 on 4 x H100 (simulator/calibration/engine_allreduce_grid19.py: 30 shapes at 4 AND 2
ranks, 14 of them <= 64 KiB, every (implementation, ranks, size regime) cell held, (tokens, hidden) in no earlier grid),
aimed at grid 18's two misses (4-rank one-shots <= 64 KiB), priced and committed (1e53d08) before the measurement by main
= the H100 as shipped at f845e58 (GRID17_H100_RULES), new = GRID19_H100_RULES (main + oneshot_peer_share 0.0228: vLLM's
one-shot's own per-wait share of the slowest-of-(g - 1)-peers extra, fitted on 161 looked-at 4-rank vLLM one-shot rows of
14 H100 runs, hosts pooled) and alt = GRID19_H100_ALT (0.0191, fitted on the <= 64 KiB rows only; named, NOT shipped).
The one call (lab/kernels/run_engine_allreduce_blind19.sh, 4 x H100, 116 s, 280 rows, 0 wrong sums): new 29 of 31 as
main's 29, pooled 4.8 / 12.8 % against 5.2 / 13.0 % (4 ranks 16 of 16 both, 4.0 / 11.3 % against 4.6 / 13.0 %): SHIPPED
into H100-SXM.yaml (engine_allreduce_grid19.ship_grid19); the shipped model's row was the H100's STANDING (moved here from
grid 18: grid 19 holds all 31 cells) until grid 22 (allreduce_grid22: protocol B's rows). Both target cells met by main
too on this host (vLLM 7.8 / 13.9 %, +7.8 % signed; Lamport 6.7 / 11.8 %, -5.9 %): grid 18's misses came with its host. Missed by both: two 2-rank cells (the Lamport one-shot
128 KiB-1 MiB 11.2 / 17.0 %, +8.3 % signed; vLLM's one-shot 2-8 MiB 10.9 / 25.4 %), which the candidate does not touch.
"""
from __future__ import annotations

from .allreduce import _engine_allreduce_blind_table

#: the commit that holds blind grid 19's prediction (engine_allreduce_grid19.BLIND19_PRED_CSV), made before the measurement
ENGINE_AR_BLIND19_COMMIT = "1e53d08"
#: the model shipped after grid 19: new (GRID19_H100_RULES); its row was the family's STANDING until blind grid 22
#: (allreduce_grid22: protocol B's rows, all 31 cells)
SHIPPED = "new"
STANDING = False


def engine_allreduce_blind19(data_dir=None) -> None:
    """The engines' all-reduce BLIND grid 19 on 4 x H100, main's and the candidate's prices committed in BLIND19_PRED_CSV
    before it: per implementation x ranks x size regime n, |error| median / p90 and signed median, regimes met (median
    <= 10 %, p90 <= 25 %); the shipped model's row is the family's STANDING; then the named alternative's totals and the
    target cell (vLLM's one-shot, 4 ranks, <= 64 KiB) per looked-at H100 run (in-sample for new: it was fitted there)."""
    _engine_allreduce_blind_table(19, data_dir, G().BLIND19_PRED_CSV, G().BLIND19_MEAS_GLOB, lambda pred: (
            f"\n== engines' all-reduce kernels, BLIND grid 19 (4 x H100; 4 and 2 ranks, (tokens, hidden) "
            f"{list(G().BLIND19_SHAPES)}; prediction {pred}, commit {ENGINE_AR_BLIND19_COMMIT}, before measuring: main = "
            f"the H100 as shipped at {G().BLIND19_MAIN_COMMIT}, new = the H100 with engine_allreduce_rules "
            f"{G().GRID19_H100_RULES}: SHIPPED; STANDING until grid 22)"),
        shipped=SHIPPED if STANDING else None, rows_what="2+4 ranks, 4 x H100")
    _alt_and_hosts(data_dir)


def G():
    from simulator.calibration import engine_allreduce_grid19

    return engine_allreduce_grid19


def _alt_and_hosts(data_dir) -> None:
    import pandas as pd

    from hwmodels import datafiles as DF
    from simulator.calibration import engine_allreduce as EA

    d = EA.DATA_DIR if data_dir is None else data_dir
    meas_f = DF.glob(d, G().BLIND19_MEAS_GLOB)
    if not meas_f:
        return
    pred = pd.read_csv(DF.resolve(d / G().BLIND19_PRED_CSV))
    r = EA.blind_rows(pred.rename(columns={"pred_alt_us": "pred_us"}), pd.read_csv(meas_f[-1]))
    e = 100 * r["err"]
    met = sum(int(100 * t["err"].abs().median() <= 10 and 100 * t["err"].abs().quantile(0.9) <= 25)
              for _, t in r.groupby(["impl", "world", "regime"]))
    print(f"   alt (GRID19_H100_ALT {G().GRID19_H100_ALT['oneshot_peer_share']}, NOT shipped): {len(r)} rows |error| median "
          f"{e.abs().median():.1f} %, p90 {e.abs().quantile(0.9):.1f} %; signed median {e.median():+.1f} %; regimes met "
          f"{met} of {r.groupby(['impl', 'world', 'regime']).ngroups}")
    t = G().target_cell_by_host(data_dir)
    print("   vLLM's one-shot, 4 ranks, <= 64 KiB, per LOOKED-AT H100 run (main = as shipped before grid 19, new = "
          "GRID19_H100_RULES: in-sample, fitted on these rows) and grid 19 (blind):")
    print(t.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
