"""The engine's seams (docs/EXTENDING.md): a scheduler policy and a router defined outside the package register
themselves and a scenario selects them by name; a tiny simulation runs through both and shows their effect."""
from pathlib import Path

import numpy as np
import pytest

from hwmodels.errors import ScenarioError
from simulator.engine import decode_run, routers, scheduler
from simulator.engine.api import simulate
from simulator.engine.config import parse_serving_section
from simulator.engine.routers import Router, register_router
from simulator.engine.scheduler import Scheduler, register_policy
from simulator.traces.requests import RequestTrace

DOC = {"hardware": "H100-SXM", "model": "Llama-3.1-8B", "runtime": {"launch": "graph"}}
PROMPTS = [900, 300, 700, 100, 500]   # all arrive at t = 0, in this order


def _config(**serving):
    serving.setdefault("requests", {"poisson": {"rate": 1.0, "count": 5}, "input_tokens": {"fixed": 100},
                                    "output_tokens": {"fixed": 4}})
    return parse_serving_section(serving, "<test>", Path("."), DOC)


def _burst() -> RequestTrace:
    n = len(PROMPTS)
    return RequestTrace(name="burst", source="test", arrival_s=np.zeros(n), input_tokens=np.asarray(PROMPTS),
                        output_tokens=np.full(n, 4), hash_offsets=None, hash_ids=None, block_tokens=None)


@pytest.fixture
def toys():
    """A shortest-prompt-first policy and a last-replica router, registered for the test only."""

    @register_policy
    class ShortestPromptFirst(Scheduler):
        name = "test_shortest_prompt_first"
        description = "waiting requests in order of prompt length (FCFS among equals)"
        decode_runs = True   # it orders WAITING only: a run of pure decodes (nothing waits) is FCFS's

        def _enqueue(self, req):
            i = len(self.waiting)
            while i > 0 and self.waiting[i - 1].prompt > req.prompt and self.waiting[i - 1].computed == 0:
                i -= 1
            self.waiting.insert(i, req)

    @register_router
    class LastReplica(Router):
        name = "test_last_replica"

        def choose(self, pool, req, stage):
            return pool[-1]

    yield ShortestPromptFirst, LastReplica
    del scheduler._POLICIES[ShortestPromptFirst.name]
    del routers._ROUTERS[LastReplica.name]


def test_a_toy_policy_and_router_run_a_simulation(toys):
    policy, _router = toys
    trace = _burst()
    runs = {}
    for name in ("fcfs", policy.name):
        cfg = _config(replicas=[{"count": 2}], router="test_last_replica",
                      scheduler={"policy": name, "max_num_seqs": 1})
        res = simulate(cfg, trace, check=True)
        df = res.requests
        assert (df["replica"] == 1).all()                  # the router sent every request to the last replica
        assert isinstance(res.engine.replicas[1].sched, policy if name != "fcfs" else Scheduler)
        assert df["ttft_s"].notna().all() and not df["rejected"].any()
        runs[name] = df["queue_s"].to_numpy()
    # one request at a time (max_num_seqs 1): FCFS starts them in arrival order, the toy by prompt length
    assert list(np.argsort(runs["fcfs"], kind="stable")) == [0, 1, 2, 3, 4]
    assert list(np.argsort(runs[policy.name], kind="stable")) == list(np.argsort(PROMPTS, kind="stable"))


def test_names_come_from_the_registries(toys):
    with pytest.raises(ScenarioError, match="serving.scheduler.policy.*allowed: .*fcfs.*test_shortest_prompt_first"):
        _config(scheduler={"policy": "lottery"})
    with pytest.raises(ScenarioError, match="serving.router.*allowed: .*prefix_aware.*test_last_replica"):
        _config(router="random")


def test_a_policy_must_declare_the_fast_path():
    with pytest.raises(TypeError, match="must declare decode_runs"):
        class Silent(Scheduler):   # noqa: F841 - defining it is the test
            name = "test_silent"

    class NoRuns(Scheduler):
        name = "test_no_runs"
        decode_runs = False

    s = NoRuns(scheduler.SchedulerConfig(num_blocks=64, enable_prefix_caching=False))
    s.add_request(scheduler.Request(0, 16, 8))
    s.step_done(s.schedule(0.0), 1.0)
    assert s.running and not s.waiting and not decode_run.ready(s)
