"""The newest engines' all-reduce fits reproduce their committed rules from exactly the rows they saw: the files
committed before each grid's own (lab/kernels/data_order.txt), with the rules shipped when the grid was priced held.
The loaders' glob also finds later files (later grids, replicates), so without the manifest a refit would drift."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from hwmodels import datafiles as DF
from simulator.calibration import engine_allreduce as EA
from simulator.calibration import engine_allreduce_grid19 as G19
from simulator.calibration import engine_allreduce_grid20 as G20


def _seen(prefix: str) -> set:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lab" / "kernels"))
    from data_order import committed_before

    return {Path(f).name for f in committed_before(prefix, DF.glob(EA.DATA_DIR, "engine_allreduce_*h100*.csv*"))}


def test_grid19_share_is_the_fit_of_the_rows_committed_before_grid19():
    seen = _seen("engine_allreduce_blind19")
    assert not any("blind19" in n or "blind20" in n for n in seen)
    fit = G19.fit_grid19_h100_rules(G19.h100_looked_at_rows19(names=seen))
    assert fit["new"]["oneshot_peer_share"] == pytest.approx(G19.GRID19_H100_RULES["oneshot_peer_share"], abs=2e-4)


def test_grid20_rules_are_the_fit_of_the_rows_committed_before_grid20():
    seen = _seen("engine_allreduce_blind20")
    assert any("blind19_" in n for n in seen) and not any("blind19rep" in n or "blind20" in n for n in seen)
    fit = G20.fit_grid20_h100_rules(G20.h100_looked_at_rows20(names=seen))
    for k in ("lamport_overlap", "lamport_phase2", "lamport2_link"):
        assert fit["new"][k] == pytest.approx(G20.GRID20_H100_RULES[k], abs=2e-3), k
        assert fit["alt"][k] == pytest.approx(G20.GRID20_H100_ALT[k], abs=2e-3), k
