"""hwmodels.datafiles: committed measurement files are read as NAME or NAME.gz, one per logical name."""
import gzip

import pandas as pd
import pytest

from hwmodels import datafiles as DF
from simulator.calibration import checks as C


def _gz(path, text):
    with gzip.open(path, "wt") as f:
        f.write(text)


def test_resolve_glob_and_logical_names(tmp_path):
    (tmp_path / "a_2026.csv").write_text("x\n1\n")
    _gz(tmp_path / "b_2026_repeat.csv.gz", "x\n2\n")
    _gz(tmp_path / "a_2026.csv.gz", "x\n9\n")              # stale .gz beside a rewritten plain file: plain wins
    assert DF.resolve(tmp_path / "b_2026_repeat.csv").name == "b_2026_repeat.csv.gz"
    assert DF.resolve(tmp_path / "a_2026.csv").name == "a_2026.csv"
    assert DF.resolve(tmp_path / "missing.csv").name == "missing.csv"
    got = DF.glob(tmp_path, "*_2026*.csv")
    assert [p.name for p in got] == ["a_2026.csv", "b_2026_repeat.csv.gz"]
    p = got[1]
    assert (DF.name(p), DF.stem(p), DF.suffix(p)) == ("b_2026_repeat.csv", "b_2026_repeat", ".csv")
    assert DF.read_text(tmp_path / "b_2026_repeat.csv") == "x\n2\n"
    with DF.open_text(p) as f:
        assert pd.read_csv(f)["x"].tolist() == [2]


def test_strict_csv_reader_reads_gzip_and_names_a_bad_one(tmp_path):
    _gz(tmp_path / "m.csv.gz", "median_us,k\n1.5,2\n")
    df, untimed = C.read_csv(tmp_path / "m.csv", ("median_us", "k"), "a test CSV")
    assert df["median_us"].tolist() == [1.5] and untimed == 0
    (tmp_path / "bad.csv.gz").write_bytes(b"not gzip")
    with pytest.raises(C.CalibrationError, match="bad.csv.gz.*gzip"):
        C.read_csv(tmp_path / "bad.csv.gz", ("median_us",), "a test CSV")

