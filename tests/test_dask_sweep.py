"""Sweeps on a Dask cluster (simulator.parallel) equal the serial run bit for bit (issue 13).

A LocalCluster of 2 worker processes prices a sweep in several chunks (the scenario is pickled to the
workers, each chunk comes back as columns); the table must be identical to the serial one: same rows in the
same order, same labels, every number equal (not merely close), same skip counts.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from simulator import planner
from simulator.scenario import scenario_from_dict

pytest.importorskip("dask.distributed")

DOC = {
    "name": "dask-eq", "hardware": ["H100-SXM", "RTX-4090"], "model": ["Llama-3.1-8B", "Llama-2-7B"],
    "workload": {"batch": [1, 16], "context": [4096, 32768], "output_tokens": 256},
    "strategies": {"attention": [{"dense": {"split_tokens": [64, 1024]}}],
                   "speculation": ["none", {"eagle3": {"k": [2, 4]}}],
                   "kv_dtype": ["bf16", "fp8"], "parallelism": [{"tp": [1, 2]}]},
    "objective": {"slo": {"tpot_ms": 30}},
}


def _identical(a: pd.DataFrame, b: pd.DataFrame) -> None:
    assert list(a.columns) == list(b.columns)
    assert len(a) == len(b)
    for c in a.columns:
        x, y = a[c].to_numpy(), b[c].to_numpy()
        if x.dtype.kind == "f":
            assert np.array_equal(x, y, equal_nan=True), c      # bit for bit, not approximately
        else:
            assert (a[c].astype(str) == b[c].astype(str)).all(), c


def test_local_cluster_equals_serial(tmp_path, dask_client):
    sc = scenario_from_dict(DOC, "<dask-eq>")
    serial = planner.evaluate(sc, chunk_settings=40)
    assert planner.n_tuples(sc) == 2 * 2 * 2 * 2 * 3 * 2 == 96
    assert len(planner.chunk_bounds(sc, 40)) == 96 // 10 + 1 == 10   # 10 tuples of 4 settings per chunk, the last 6
    cl = dask_client
    assert len(cl.scheduler_info()["workers"]) == 2
    dist = planner.evaluate(sc, chunk_settings=40, client=cl)
    streamed = planner.evaluate(sc, chunk_settings=40, client=cl, parquet=tmp_path / "r.parquet")
    assert len(serial.results) > 0 and serial.n_skipped > 0        # RTX-4090 refuses TP > 1; Llama-2-7B stops at 4K
    _identical(dist.results, serial.results)
    assert list(dist.skipped.items()) == list(serial.skipped.items())
    back = pd.read_parquet(tmp_path / "r.parquet")
    _identical(back[list(serial.results.columns)].astype({c: "category" for c in ("hardware", "model")}),
               serial.results)
    assert streamed.rows == len(serial.results)


def test_workers_flag_needs_a_positive_count():
    from hwmodels.errors import SparsesimError
    from simulator.parallel import client

    with pytest.raises(SparsesimError, match="positive"):
        with client(workers=0):
            pass
