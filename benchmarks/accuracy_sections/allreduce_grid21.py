"""Engines' all-reduce, BLIND grid 21 on 2 x H100 (simulator/calibration/engine_allreduce_grid21.py: 27 shapes at 2 ranks
ONLY, (tokens, hidden) in no earlier grid), every row timed by TWO protocols in one process: A = the earlier grids' (7
replays; 40 calls a replay <= 1 MiB, 10 above) and B = 21 replays of 40 calls. A diagnosis of the 2-rank scatter above
1 MiB (grid 19's one cell missed on both hosts, grid 20's six): hypothesis H (the harness's per-replay cost, the ranks'
start skew, divided by the calls) with its checks P1-P4, and main's prices (the H100 as shipped at 4c6b642,
GRID20_H100_RULES), committed at 26a2c44 before the call.

The one call (lab/kernels/run_engine_allreduce_blind21.sh, nvidia-h100-x2, 2026-11-28 02:05 UTC, 75 s, 0 WRONG): H holds
(P1-P3 in all five implementations, P4 in four); the per-replay cost is 22-31 us in every kernel. Main meets 11 of 15
cells on A's rows and 14 of 15 on B's; both shown, neither picked by the model's errors. No STANDING row (the STANDING stays
on grid 19's 31 cells); the BOARD rows are the two protocols' pooled figures.
"""
from __future__ import annotations

from simulator.calibration.scoreboard import BOARD

#: the commit that holds blind grid 21's prediction (engine_allreduce_grid21.BLIND21_PRED_CSV), made before the measurement
ENGINE_AR_BLIND21_COMMIT = "26a2c44"


def engine_allreduce_blind21(data_dir=None) -> None:
    """The engines' all-reduce BLIND grid 21 (2 ranks, 2 x H100): per implementation x size regime and per protocol, n,
    measured median, main's |error| median / p90, signed median, met, and the replay spread p80 / p20; the pooled
    figures per protocol (BOARD rows, no STANDING); H's checks P1-P4 per implementation."""
    import pandas as pd

    from simulator.calibration import engine_allreduce_grid21 as G

    head = (f"\n== engines' all-reduce kernels, BLIND grid 21 on 2 x H100 (2 ranks only, (tokens, hidden) "
            f"{list(G.BLIND21_SHAPES)}; prediction {G.BLIND21_PRED_CSV}, commit {ENGINE_AR_BLIND21_COMMIT}, before "
            f"measuring: main = the H100-SXM as shipped at {G.BLIND21_MAIN_COMMIT}; timed by protocol A (7 replays, "
            f"40 / 10 calls) and B (21 replays, 40 calls), same rows, same process)")
    r = G.load_blind21(data_dir)
    if r is None:
        print(head + ": not measured yet (expected engine_allreduce_blind21A_ / blind21B_<device>_<date>.csv)")
        return
    print(head + "; |model/measured - 1| median / p90, signed median, %; spread = median p80 / p20 of the replays")
    a, b = G.judge(r, "A"), G.judge(r, "B")
    t = a[["impl", "regime", "n"]].copy()
    for p, j in (("A", a), ("B", b)):
        for c in ("meas_us", "med", "p90", "signed", "spread"):
            t[f"{p}_{c}"] = j[c]
        t[f"{p}_goal"] = j["met"].map({True: "met", False: "MISSED"})
    with pd.option_context("display.width", 250):
        print(t.to_string(index=False, float_format=lambda v: f"{v:.2f}" if abs(v) < 2 else f"{v:.1f}"))
    for p in ("A", "B"):
        s = G.pooled(r, p)
        print(f"   protocol {p}: main {s['n']} rows |error| median {s['med']:.1f} %, p90 {s['p90']:.1f} %; signed median "
              f"{s['signed']:+.1f} %; regimes met {s['met']} of {s['cells']}")
        BOARD.add("engines' all-reduce", "blind", f"BLIND grid 21, 2 ranks, 2 x H100, protocol {p} (main model's "
                  "committed prices)", 100 * r[f"err_{p}"], s["met"], s["cells"], standing=False)
    print("   hypothesis H's checks (pre-registered at 26a2c44): P1 A - B at > 1 MiB in 0.3-3 us (one-shots; > 0 "
          "two-shots), P2 |A - B| < 0.3 us at <= 1 MiB, P3 B's 1-1.6 MiB spread - 1 <= half of A's, P4 main's signed "
          "step 0.65-1 -> 1-1.6 MiB < -5 points under A (one-shots), within 5 under B; s_us = (A - B) / (1/10 - 1/40)")
    with pd.option_context("display.width", 250):
        print(G.hypothesis_checks(r).to_string(index=False, float_format=lambda v: f"{v:.2f}"))
