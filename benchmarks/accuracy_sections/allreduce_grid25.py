"""Engines' all-reduce, BLIND grid 25 on 4 x H200 (simulator/calibration/engine_allreduce_grid25.py: 35 shapes at 4 AND 2
ranks with the hiddens of six other real models (896-5376), all 31 cells, 8-16 rows a cell, protocol B). Priced and
committed (e619cd0) before the call: main = the H200 as shipped after grid 24 (GRID24_H200_RULES, 7541c42), new =
GRID25_H200_RULES (+ lamport_peer_share 0.081, the Lamport one-shot's own per-peer share, fitted on the 438 looked-at
4-rank H200 Lamport rows <= 1 MiB after grid 24's two small-row misses).

An nvidia-h100-x4 request (2026-11-28 03:51 UTC) got 4 x H200; the script ran grid 25. Both models meet 31 of 31 cells;
new's pooled median and p90 are both higher (4.39 / 10.76 against 4.36 / 10.51 %), so by the ship rule main stays and
GRID25_H200_RULES is not shipped. The H200's STANDING moves to this grid's row of the shipped model (main).
"""
from __future__ import annotations

from .allreduce_cells import cells_table, pooled_lines

#: the commit that holds grid 25's prediction (engine_allreduce_grid25.BLIND25_PRED_CSV), made before the call
ENGINE_AR_BLIND25_COMMIT = "e619cd0"
#: the shipped H200 model on grid 25: main (GRID24_H200_RULES); new met as many cells with a higher median and p90
SHIPPED_H200 = "main"


def engine_allreduce_blind25(data_dir=None) -> None:
    """Grid 25 on 4 x H200: per-cell table (main / new), pooled rows, the H200's STANDING on the shipped model."""
    from simulator.calibration import engine_allreduce_grid25 as G

    _, _, main_label, new_label = G.models()
    head = (f"\n== engines' all-reduce kernels, BLIND grid 25 on 4 x H200 (4 and 2 ranks, (tokens, hidden) "
            f"{list(G.BLIND25_SHAPES)}; prediction {G.BLIND25_PRED_CSV}, commit {ENGINE_AR_BLIND25_COMMIT}, before the "
            f"run: main = {main_label}, new = {new_label}; protocol B)")
    r = G.load_blind25(data_dir)
    if r is None:
        print(head + f": not measured yet (expected {G.BLIND25_MEAS_GLOB})")
        return
    print(head + "; |model/measured - 1| median / p90, signed median, %")
    cells_table(r)
    pooled_lines(r, "BLIND grid 25, 2+4 ranks, 4 x H200, protocol B", SHIPPED_H200, "engines' all-reduce, H200")
