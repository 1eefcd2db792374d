import os

# Under pytest-xdist (the README's `-n 2`) each worker is one process per core: BLAS threads of their own would only
# oversubscribe the cores (measured on 2 cores: 266 s -> 232 s for the suite). Set before numpy loads its BLAS.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from simulator.combo import make_combo as build_combo


def make_combo(hw="H100-SXM", model="Llama-3.1-8B", kv_dtype="bf16", weight_dtype=None, tp=1, launch="graph",
               attention="dense", ep=1, attn_dp=1):
    return build_combo(hw, model, kv_dtype=kv_dtype, weight_dtype=weight_dtype, tp=tp, launch=launch, ep=ep,
                       attn_dp=attn_dp, attention=attention)


@pytest.fixture
def combo():
    return make_combo


def arr(*v):
    return np.array(v, dtype=np.float64)


def pytest_collection_finish(session):
    """Start executing the selected notebook tests' notebooks in the background (tests/notebook_runner.py). Not in a
    pytest-xdist worker: every worker collects every test, so each would run every notebook; there a notebook test
    executes its notebook itself while the other worker runs the rest."""
    if session.config.option.collectonly or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    from tests import notebook_runner
    from tests.test_notebooks import NOTEBOOKS, notebooks_to_run

    notebook_runner.start(NOTEBOOKS, notebooks_to_run(session.items))


def pytest_sessionfinish(session):
    from tests import notebook_runner

    notebook_runner.stop()


@pytest.fixture(scope="session")
def dask_client():
    """One LocalCluster of 2 single-threaded worker processes (simulator.parallel.client) for every test that needs a
    Dask cluster: starting one takes ~4-9 s on 2 cores, so the tests share it."""
    pytest.importorskip("dask.distributed")
    from simulator.parallel import client

    with client(workers=2) as cl:
        yield cl
