"""The summary board of benchmarks/calibration_accuracy.py: pooled figures as the sections computed them."""
import numpy as np
import pytest

from simulator.calibration.scoreboard import Scoreboard


def test_pooled_figures_and_regimes():
    b = Scoreboard()
    b.add("fa3", "blind", "grid", [1.0, -5.0, 20.0, np.nan], 2, 3)
    b.add_regimes("top-k", "held out", "table", 10, 1, 2)
    t = b.table()
    assert list(t["n"]) == [3, 10]
    assert t.loc[0, "median"] == "5.0" and t.loc[0, "signed"] == "+1.0"
    assert t.loc[0, "p90"] == f"{np.percentile([1, 5, 20], 90):.1f}"
    assert list(t["regimes met"]) == ["2 of 3", "1 of 2"]
    assert t.loc[1, "median"] == "-"


def test_unknown_stage_and_empty_errors():
    b = Scoreboard()
    with pytest.raises(ValueError, match="stage"):
        b.add("x", "fitted", "rows", [1.0])
    b.add("x", "blind", "rows", [np.nan])
    assert b.entries == []
