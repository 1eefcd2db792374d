"""torch's own RMSNorm kernel on the H200: grid 2's shapes (32 blind + 3 controls), priced for the H200 before any H200
run by the three forms fitted on H100 rows only (simulator/calibration/torch_rmsnorm_h200.py: main = grid 1's, cand2 =
grid 2's, cand3 = grid 3's = the shipped form), each carried over with the H200's SMs, L2 and HBM ratio. Timed on GPU 0 of
a 4 x H200 lease after the all-reduce grid 24 (2026-11-28 03:39 UTC), and again on a second lease (a replicate). Nothing
is fitted on H200 rows: every row is a transfer, blind for the H200."""
from __future__ import annotations

from simulator.calibration.scoreboard import BOARD

FAMILY = "torch RMSNorm (own kernel)"


def torch_rmsnorm_h200() -> None:
    """Print the H200 run's per-regime table, the replicate's pooled lines and the BOARD rows (transfer, blind)."""
    from hwmodels import datafiles as DF
    from hwmodels.calibration import DATA_DIR
    from simulator.calibration import torch_rmsnorm as TR
    from simulator.calibration import torch_rmsnorm_h200 as H

    if not DF.resolve(DATA_DIR / H.MEASURED).is_file():
        return
    m = H.measured()
    g = H.accuracy(m)
    blind = m[m["kind"] == "blind"]
    print(f"\n== torch RMSNorm grid 2 on the H200 ({len(blind)} blind shapes + {len(m) - len(blind)} controls; priced for "
          f"the H200 before any H200 run: {H.PREDICTION}; measured {H.MEASURED}); the H100-fitted forms transferred: "
          "main = grid 1's, cand2 = grid 2's, cand3 = grid 3's (shipped); blind rows only; |error| median / p90, signed "
          "median, %")
    print(g.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    rep_name = H.MEASURED.replace("grid2_", "grid2rep2_")
    if DF.resolve(DATA_DIR / rep_name).is_file():
        rep = TR.read_measured(rep_name, ("rows", "n", "kind", "regime", "median_us"), H.MODELS)
        gr = H.accuracy(rep).set_index("regime")
        print(f"  second lease ({rep_name}): " + "; ".join(
            f"{name} {gr.loc['pooled', name + '_med']:.1f} / {gr.loc['pooled', name + '_p90']:.1f}, "
            f"{int((gr.loc[list(TR.REGIMES), name + '_met'] == 'yes').sum())} of {len(TR.REGIMES)}"
            for name, _ in H.MODELS))
    for name, _ in H.MODELS:
        met = int((g.set_index("regime").loc[list(TR.REGIMES), f"{name}_met"] == "yes").sum())
        what = {"main": "grid 1's form", "cand2": "grid 2's form", "cand3": "grid 3's form (shipped)"}[name]
        BOARD.add(FAMILY, "blind", f"H200 grid2 ({len(blind)}), {what} transferred from the H100, committed",
                  blind[f"err_{name}"], met, len(TR.REGIMES))
