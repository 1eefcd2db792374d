"""Engines' all-reduce, BLIND grid 11 (4 ranks AND 2 ranks, >= 4 rows in every (implementation, ranks, size regime) cell):
main's model (grid 9's, at f9af03b) against the candidate (TensorRT-LLM's two-shot's serialized local copies above 2 ranks
only + the fused RMSNorm by the fusion kernel's cluster size, one- and two-shot: simulator/calibration/engine_allreduce.py
GRID11_CANDIDATE, predict_grid11), both priced and committed before the measurement. The one 4-GPU call asked for
4 x H100 and was run on 4 x H200 by the lender: the H100 model judged across devices. The candidate met FEWER regimes
(11 of 31 against main's 12) and is not shipped; the family's STANDING stays on grid 10 (4 x H100).
"""
from __future__ import annotations

from hwmodels import datafiles as DF

from .allreduce import _engine_allreduce_blind_table

#: the commit that holds blind grid 11's prediction (engine_allreduce_grid11.BLIND11_PRED_CSV), made before the measurement
ENGINE_AR_BLIND11_COMMIT = "7984042"
#: the model kept after grid 11 (main / new): the candidate met 11 of 31 regimes against main's 12 (pooled 12.5 / 39.7 %
#: against 11.8 / 39.7 %): NOT shipped
SHIPPED = "main"
#: grid 11 ran on 4 x H200 (an H100 request served by H200s): the family's STANDING (an H100 model judged on H100s) stays on
#: grid 10's main row (allreduce_grid10)
STANDING = None


def engine_allreduce_blind11(data_dir=None) -> None:
    """The engines' all-reduce BLIND grid 11 (simulator/calibration/engine_allreduce_grid11.py BLIND11_*: 27 shapes at 4 ranks,
    15 at 2 ranks, token counts in no earlier grid, hidden 1024-8192; lab/kernels/run_engine_allreduce_blind11.sh, one
    call asked for 4 x H100 and run on 4 x H200, the flashinfer modules JIT-built beforehand on one H100 by
    lab/kernels/build_flashinfer_comm_on_device.sh), priced before the measurement by main's model (BLIND11_MAIN_COMMIT)
    and the candidate (fitted on grids 4, 6-10's rows only), both committed in BLIND11_PRED_CSV: per implementation x
    ranks x size regime n, |error| median / p90 and signed median of each, regimes met (median <= 10 %, p90 <= 25 %);
    no STANDING row here (another device than the model's)."""
    from simulator.calibration import engine_allreduce_grid11 as G11

    _engine_allreduce_blind_table(11, data_dir, G11.BLIND11_PRED_CSV, G11.BLIND11_MEAS_GLOB, lambda pred: (
            f"\n== engines' all-reduce kernels, BLIND grid 11 (4 ranks, (tokens, hidden) {list(G11.BLIND11_SHAPES)}; "
            f"2 ranks {list(G11.BLIND11_CONTROL)}; prediction {pred}, commit {ENGINE_AR_BLIND11_COMMIT}, before "
            f"measuring: main = the model at {G11.BLIND11_MAIN_COMMIT}, new = TensorRT-LLM's two-shot's local copies "
            f"above 2 ranks + the fused RMSNorm by cluster size, one- and two-shot {G11.GRID11_CANDIDATE}: "
            f"{'SHIPPED' if SHIPPED == 'new' else 'NOT shipped'}; measured on 4 x H200 lent for a 4 x H100 request: the H100 "
            f"model judged across devices, STANDING stays on grid 10)"), shipped=STANDING)
    _replicate_table()


def _replicate_table() -> None:
    """Grid 11 measured twice, on two 4 x H200 hosts (engine_allreduce_replicates.joined(11)): |second / first - 1| per implementation x
    ranks, median / p90 %, beside main's |error| on the same rows: where the two hosts disagree by as much as the model
    misses, no model of one host can meet the goal on the other."""
    import pandas as pd

    from simulator.calibration import engine_allreduce as EA
    from simulator.calibration import engine_allreduce_grid11 as G11
    from simulator.calibration.engine_allreduce_replicates import joined

    j = joined(11)
    pred = pd.read_csv(DF.resolve(EA.DATA_DIR / G11.BLIND11_PRED_CSV))
    key = ["impl", "world", "tokens", "hidden"]
    j = j.merge(pred[key + ["pred_main_us"]], on=key, how="left")
    j["err_main"] = j["pred_main_us"] / j["us_1"] - 1.0
    print(f"   grid 11 measured twice (second run {G11.BLIND11_REPLICATE_CSV}, another 4 x H200 host, same script): "
          f"{len(j)} rows, |second / first - 1| median {100 * j['spread'].abs().median():.1f} %, p90 "
          f"{100 * j['spread'].abs().quantile(0.9):.1f} %")
    rows = []
    for (impl, g), t in j.groupby(["impl", "world"]):
        rows.append({"impl": impl, "world": g, "n": len(t), "host_spread_med": 100 * t["spread"].abs().median(),
                     "host_spread_p90": 100 * t["spread"].abs().quantile(0.9),
                     "main_err_med": 100 * t["err_main"].abs().median()})
    print(pd.DataFrame(rows).round(1).to_string(index=False))
