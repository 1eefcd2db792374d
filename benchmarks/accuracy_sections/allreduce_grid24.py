"""Engines' all-reduce, BLIND grid 24 (simulator/calibration/engine_allreduce_grid24.py: 34 shapes at 4 AND 2 ranks, all 31
(implementation, ranks, size regime) cells, 7-16 rows a cell, (tokens, hidden) in no earlier grid), protocol B (21 replays
of 40 calls), priced and committed (32a912d) for BOTH devices before any call, because the lender serves a 4 x H100
request with H100s or H200s (lab/kernels/run_engine_allreduce_blind23_24.sh branches on what it got):
    H200  main = the H200 as shipped at 1d28e96 (GRID16_H200_RULES), new = GRID24_H200_RULES (the H100's four link keys
          lamport2_link / twoshot2_link / oneshot2_link / multi_link_time, fitted on grid 23's H200 protocol-B rows)
    H100  main = GRID22_H100_RULES (shipped), new = grid 23's candidate GRID23_H100_RULES

Three nvidia-h100-x4 calls (2026-11-28 03:37-03:45 UTC) got 4 x H200 each: the first ran grid 24 (the judged H200 run),
the second (after giving the first machine back) a replicate, the third skipped. By the ship rule (more cells met),
GRID24_H200_RULES shipped (engine_allreduce_grid24.ship_grid24_h200); its row on the judged run was the H200's STANDING
(moved from grid 23) until grid 25 (allreduce_grid25). The H100's rows of grids 23 and 24 are still not measured.
"""
from __future__ import annotations

from .allreduce_cells import cells_table, pooled_lines

#: the commit that holds grid 24's predictions (engine_allreduce_grid24.BLIND24_PRED_CSV), made before any run
ENGINE_AR_BLIND24_COMMIT = "32a912d"
#: the H200 model whose row on the judged run is the H200's STANDING: new (GRID24_H200_RULES) met 29 of 31 cells against
#: main's 27 (the ship rule's "more cells")
SHIPPED_H200 = "new"
#: grid 24's row of the shipped H200 model was the H200's STANDING until grid 25 (allreduce_grid25) measured it again
H200_STANDING = False


def engine_allreduce_blind24(data_dir=None) -> None:
    """Grid 24 per device: the judged run's per-cell table (main / new), pooled rows (the H200's STANDING on the shipped
    model), the replicate's pooled rows; a line for a device not measured yet."""
    from simulator.calibration import engine_allreduce_grid24 as G

    for dev, n_gpu in (("H200", "4 x H200"), ("H100-SXM", "4 x H100")):
        main, new, main_label, new_label = G.models(dev)
        head = (f"\n== engines' all-reduce kernels, BLIND grid 24 on {n_gpu} (4 and 2 ranks, (tokens, hidden) "
                f"{list(G.BLIND24_SHAPES)}; prediction {G.BLIND24_PRED_CSV[dev]}, commit {ENGINE_AR_BLIND24_COMMIT}, "
                f"before any run: main = {main_label}, new = {new_label}; protocol B)")
        r = G.load_blind24(dev, data_dir)
        if r is None:
            print(head + ": not measured yet (three 4 x H100 requests of 2026-11-28 got H200s; expected "
                  f"{G.BLIND24_MEAS_GLOB[dev]})")
            continue
        print(head + "; |model/measured - 1| median / p90, signed median, %")
        cells_table(r)
        std = "engines' all-reduce, H200" if (dev == "H200" and H200_STANDING) else None
        pooled_lines(r, f"BLIND grid 24, 2+4 ranks, {n_gpu}, protocol B", SHIPPED_H200, std)
        rep = G.load_blind24(dev, data_dir, replicate=True)
        if rep is not None:
            print(f"   the replicate (a second lease, {G.BLIND24_REP_GLOB[dev]}; the same committed prices):")
            pooled_lines(rep, f"BLIND grid 24 replicate (second lease), 2+4 ranks, {n_gpu}, protocol B", None, None)
