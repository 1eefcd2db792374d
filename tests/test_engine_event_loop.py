"""serving.event_loop: the heap loop (the default) and the simpy reference run the same callbacks in the same order,
so every per-request result and every time-series row is identical, on dense, speculative, disaggregated, sparse
(per-row priced) and closed-loop configurations."""
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hwmodels.errors import SparsesimError
from simulator.engine.api import simulate
from simulator.engine.config import parse_serving_section

DOC = {"hardware": "H100-SXM", "model": "Llama-3.1-8B", "workload": {}, "runtime": {"launch": "graph"}}
REQ = {"poisson": {"rate": 4.0, "count": 60}, "input_tokens": {"uniform": [200, 6000]},
       "output_tokens": {"uniform": [5, 120]}}


def _config(doc=DOC, **serving):
    serving.setdefault("requests", REQ)
    return parse_serving_section(serving, "<test>", Path("."), doc)


CONFIGS = {
    "dense": lambda: _config(replicas=[{"count": 2}], router="least_outstanding_tokens"),
    "speculative": lambda: _config(replicas=[{"count": 1, "strategies": {"speculation": {"eagle3": {"k": 3}}}}]),
    "disaggregated": lambda: _config(replicas=[{"count": 1, "role": "prefill"}, {"count": 2, "role": "decode"}]),
    "sparse_nsa": lambda: _config(replicas=[{"count": 1, "strategies": {"attention": "nsa"}}],
                                  scheduler={"max_num_seqs": 64}),
    "closed_loop_api": lambda: _with_api(_config(engine="hf-cb", requests={
        "closed_loop": {"concurrency": 6, "count": 40, "think_ms": 50}, "input_tokens": {"fixed": 1500},
        "output_tokens": {"fixed": 40}})),
}


def _with_api(cfg):
    """The runtime's API path with delays (per request and per token), so both loops schedule them."""
    return replace(cfg, runtime=replace(cfg.runtime, api_per_request_s=2e-3, api_per_token_s=1e-3))


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_heap_and_simpy_loops_give_identical_results(name):
    cfg = CONFIGS[name]()
    assert cfg.event_loop == "heap"
    heap = simulate(cfg)
    ref = simulate(replace(cfg, event_loop="simpy"))
    assert heap.summary["finished"] > 0
    pd.testing.assert_frame_equal(heap.requests, ref.requests, check_exact=True)
    pd.testing.assert_frame_equal(heap.timeseries, ref.timeseries, check_exact=True)
    assert np.array_equal(np.asarray(heap.engine.rec.itl["gap"]), np.asarray(ref.engine.rec.itl["gap"]))


def test_event_loop_is_checked():
    with pytest.raises(SparsesimError, match="event_loop"):
        _config(event_loop="asyncio")
