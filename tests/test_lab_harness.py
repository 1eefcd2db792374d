"""The GPU lab's shared harness (lab/harness.py), the parts that need no GPU: the CSV sink (the script's own columns
and version), the whole-file writer, the statistics, the file-name slug, and that every lab script imports only
names the harness has. lab/ is not part of the package; it sits beside tests/ (in the checkout and in .ci/run's
copy of the suite)."""
from __future__ import annotations

import ast
import csv
import importlib
import sys
from pathlib import Path

import numpy as np
import pytest

LAB = Path(__file__).resolve().parents[1] / "lab"
if not LAB.is_dir():  # pragma: no cover - lab/ is not part of the installed package
    raise RuntimeError(f"lab folder missing: {LAB}")
sys.path.insert(0, str(LAB))
harness = importlib.import_module("harness")

COLUMNS = ["device", "torch_version", "date", "script_version", "family", "median_us", "note"]
FACTS = {"device": "NVIDIA H100 80GB HBM3", "date": "2026-11-22", "torch_version": "2.11.0",
         "gpu_mem_bytes": 85e9}   # not a column: left out


def read(path):
    with open(path, newline="") as f:
        return list(csv.reader(f))


def test_sink_writes_the_scripts_columns_and_version_row_by_row(tmp_path):
    p = tmp_path / "x.csv"
    sink = harness.Sink(str(p), COLUMNS, 7, FACTS)
    assert read(p) == [COLUMNS]                      # the header is on disk before any row
    row = sink.write({"family": "copy", "median_us": "1.500"})
    assert read(p)[1] == ["NVIDIA H100 80GB HBM3", "2.11.0", "2026-11-22", "7", "copy", "1.500", ""]
    assert row["script_version"] == 7 and "gpu_mem_bytes" not in row
    with pytest.raises(ValueError):                  # a field outside the columns is an error by default
        sink.write({"family": "copy", "kernel": "x"})
    sink.close()
    assert sink.n == len(sink.rows) == 1


def test_sink_can_leave_extra_fields_out_and_needs_no_version_column(tmp_path):
    p = tmp_path / "g.csv"
    sink = harness.Sink(str(p), ["device", "kernel_name"], 3, FACTS, extras="ignore")
    sink.write({"kernel_name": "k", "grid_x": 4})
    sink.close()
    assert read(p) == [["device", "kernel_name"], ["NVIDIA H100 80GB HBM3", "k"]]


def test_write_rows_names_the_file_by_prefix_device_and_date(tmp_path):
    path = harness.write_rows(str(tmp_path / "out"), "latency", "NVIDIA H200", "2026-11-22", ["a", "b"],
                              [{"a": 1, "c": 2}, {"b": 3}])
    assert Path(path).name == "latency_nvidia-h200_2026-11-22.csv"
    assert read(path) == [["a", "b"], ["1", ""], ["", "3"]]


def test_statistics_and_slug():
    xs = [5.0, 1.0, 4.0, 2.0, 3.0, 10.0]
    for q in (0.0, 0.2, 0.5, 0.8, 1.0):
        assert harness.quantile(xs, q) == pytest.approx(float(np.quantile(xs, q)))
    assert np.isnan(harness.quantile([], 0.5))
    st = harness.stats(xs, 4)
    assert st == {"median": 3.5, "p20": pytest.approx(2.0), "p80": pytest.approx(5.0), "reps": 6, "calls": 4}
    assert harness.device_slug("NVIDIA H100 80GB HBM3") == "nvidia-h100-80gb-hbm3"
    assert harness.device_slug("NVIDIA A100-SXM4-80GB (MIG 1g)") == "nvidia-a100-sxm4-80gb-mig-1g"


def test_every_lab_script_imports_only_what_the_harness_has_and_the_harness_imports_no_gpu_library():
    tree = ast.parse((LAB / "harness.py").read_text())
    top = {a.name.split(".")[0] for n in tree.body if isinstance(n, ast.Import) for a in n.names}
    top |= {n.module.split(".")[0] for n in tree.body if isinstance(n, ast.ImportFrom) and n.module}
    assert not top & {"torch", "cupy", "numpy", "triton", "simulator", "hwmodels"}
    missing = []
    for f in sorted(LAB.rglob("*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "harness":
                missing += [f"{f.name}: {a.name}" for a in node.names if not hasattr(harness, a.name)]
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "harness":
                if not hasattr(harness, node.attr):
                    missing.append(f"{f.name}: harness.{node.attr}")
    assert not missing, missing
