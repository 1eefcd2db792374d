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


def test_standing_marks_the_shipped_grid_beside_the_first_look():
    b = Scoreboard()
    b.add("xqa", "first look", "from source", [20.0, -30.0], 1, 4)
    b.add("xqa", "blind", "grid 1, new", [5.0, 7.0], 3, 3)                      # an older grid: not marked
    b.add("xqa", "blind", "grid 2, main (kept)", [2.0, -4.0], 2, 2, standing=True)
    b.add("xqa", "blind", "grid 2, new (lost)", [9.0, 9.0], 0, 2)
    b.add("xqa", "blind", "cold grid, main", [3.0], 1, 1, standing="xqa, cold K/V (engine state)")
    b.add_regimes("gemm", "blind", "grid 6, new", 10, 4, 5, standing="gemm: DeepGEMM")
    b.add("gemm", "blind", "grid 6 pooled, new", [1.0, -3.0], standing="gemm: DeepGEMM")
    b.add("top-k pt", "first look", "page-table", [8.0])
    assert len(b.table()) == 8                                              # the SUMMARY board keeps every entry
    t = b.standing_table().set_index("family")
    assert list(t.index) == ["xqa", "xqa, cold K/V (engine state)", "gemm: DeepGEMM", "top-k pt"]
    assert t.loc["xqa", "newest blind grid (shipped model)"] == "grid 2, main (kept)"
    assert (t.loc["xqa", "median"], t.loc["xqa", "signed"], t.loc["xqa", "regimes met"]) == ("3.0", "-1.0", "2 of 2")
    assert t.loc["xqa", "first look"] == "25.0 / 29.0, 1 of 4"
    assert t.loc["xqa, cold K/V (engine state)", "first look"] == "-"
    g = t.loc["gemm: DeepGEMM"]                                              # per-regime + pooled entries: one row
    assert (g["newest blind grid (shipped model)"], g["median"], g["regimes met"]) == ("grid 6, new", "2.0", "4 of 5")
    assert t.loc["top-k pt", "newest blind grid (shipped model)"] == "-" and t.loc["top-k pt", "first look"] == "8.0 / 8.0"


def test_a_family_marked_twice_is_an_error():
    b = Scoreboard()
    b.add("fa3", "blind", "grid 1", [1.0], 1, 1, standing=True)
    b.add("fa3", "blind", "grid 2", [2.0], 1, 1, standing=True)
    with pytest.raises(ValueError, match="marked twice"):
        b.standing_table()
    with pytest.raises(ValueError, match="standing"):
        b.add("fa3", "blind", "grid 3", [1.0], standing=3)


def test_standing_total_counts_every_family_and_names_the_short_ones():
    import pandas as pd

    st = pd.DataFrame({"family": ["a", "b", "c", "d"], "regimes met": ["3 of 4", "5 of 5", "", "0 of 2"]})
    assert Scoreboard.standing_total(st) == ("   STANDING total: 8 of 11 regimes met on the newest blind grids; "
                                             "missed 3: a 1, d 2")
    st = pd.DataFrame({"family": ["a"], "regimes met": ["2 of 2"]})
    assert Scoreboard.standing_total(st).endswith("missed 0: none")
