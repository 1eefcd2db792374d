"""Async launch (serving.step_cost.async_launch, simulator/engine/async_launch.py) and the validation-only host-speed
series (serving.step_cost.validation_host_speed_series)."""
from __future__ import annotations

import numpy as np
import pytest

from hwmodels.errors import SparsesimError
from simulator.engine import async_launch
from simulator.engine.runtime import HostSpeedSeries
from tests.test_engine_runtime import _sim, cfg_of

EAGER = {"eager_overlap": "step", "launch_eager_us": 40, "host_per_step_us": 500}


def test_loop_structure_by_hand():
    h, d_graph = 0.5e-3, 10e-3
    # from an idle engine: the synchronous step, and the host's launch ends L - F before the device
    i, rho = async_launch.step(0.0, h, 40e-3, 38e-3, 20e-3)
    assert i == pytest.approx(h + 40e-3) and rho == pytest.approx(20e-3 - 40e-3)
    # a graph step after a graph step: its host work hides under the previous one, its state is -D
    _, rho_g = async_launch.step(-d_graph, h, d_graph, d_graph, 0.0)
    i, rho = async_launch.step(rho_g, h, d_graph, d_graph, 0.0)
    assert i == pytest.approx(d_graph) and rho == pytest.approx(-d_graph)
    # an eager step after a graph step: launched while the graph step runs; the graph step's ids wait for that launch
    f, d, la = 30e-3, 22e-3, 25e-3
    i, _ = async_launch.step(rho_g, h, f, d, la)
    assert i == pytest.approx(max(d, h + f - d_graph))
    assert async_launch.emit_delay(rho_g, h, la) == pytest.approx(h + la - d_graph)
    assert async_launch.emit_delay(rho_g, h, 0.0) == 0.0     # a graph step next: nothing waits


def test_run_closed_form_equals_the_recurrence():
    rng = np.random.default_rng(3)
    d = rng.uniform(2e-3, 20e-3, 300)
    h = rng.uniform(0.1e-3, 12e-3, 300)      # some host work longer than the previous step: not all of it hides
    for rho in (0.0, -5e-3, -30e-3):
        i, r = async_launch.run(rho, h, d, d, 0.0)
        ri, rr, x = [], [], rho
        for hj, dj in zip(h, d):
            a, x = async_launch.step(x, hj, dj, dj, 0.0)
            ri.append(a)
            rr.append(x)
        assert np.allclose(i, ri, rtol=0, atol=1e-15) and np.allclose(r, rr, rtol=0, atol=1e-15)
        assert (i > d).any() and (i >= d - 1e-15).all()


def test_engine_async_launch_hides_host_work_and_launches():
    sync = _sim(cfg_of(step_cost=dict(EAGER)))
    asy = _sim(cfg_of(step_cost={**EAGER, "async_launch": True}))
    fast = _sim(cfg_of(step_cost={**EAGER, "async_launch": True}, decode_run_steps=0))
    assert asy.summary["tpot_p50_ms"] < sync.summary["tpot_p50_ms"] - 0.5
    assert asy.summary["ttft_p50_ms"] < sync.summary["ttft_p50_ms"]
    # the decode-run fast path carries the loop's state exactly as the step-by-step loop
    for k in ("ttft_s", "tpot_s", "e2e_s"):
        assert np.allclose(asy.requests[k].to_numpy(), fast.requests[k].to_numpy(), rtol=1e-9, atol=1e-12)
    # no host time and graph decode only: nothing to hide, the loop is the synchronous engine
    plain = _sim(cfg_of(requests={"poisson": {"rate": 1.0, "count": 6}, "input_tokens": {"fixed": 16},
                                  "output_tokens": {"fixed": 40}}, step_cost={"async_launch": True}))
    ref = _sim(cfg_of(requests={"poisson": {"rate": 1.0, "count": 6}, "input_tokens": {"fixed": 16},
                                "output_tokens": {"fixed": 40}}))
    assert np.allclose(plain.requests["tpot_s"], ref.requests["tpot_s"], rtol=1e-9)


def test_async_launch_knobs_are_checked():
    with pytest.raises(SparsesimError, match="async_launch"):
        cfg_of(step_cost={"async_launch": "yes"})
    with pytest.raises(SparsesimError, match="host_overlap"):
        cfg_of(step_cost={"async_launch": True, "host_overlap": 0.5})
    assert cfg_of(step_cost={"async_launch": True, "host_overlap": 0}).async_launch


def test_host_speed_series_is_checked_and_scales_the_launch():
    fld = "validation_host_speed_series"
    for bad, what in (({"t_s": [0, 1], "factor": [1.0]}, "one factor per time"),
                      ({"t_s": [1, 0], "factor": [1.0, 1.0]}, "increase"),
                      ({"t_s": [0, 1], "factor": [1.0, 0.0]}, "> 0"),
                      ({"t_s": [0, "x"], "factor": [1.0, 1.0]}, "numbers"),
                      ({"t_s": [0], "factor": [1.0], "extra": 1}, fld)):
        with pytest.raises(SparsesimError, match=what):
            cfg_of(engine="hf-cb", step_cost={fld: bad})
    with pytest.raises(SparsesimError, match="no host launch"):   # nothing to scale without a launch
        _sim(cfg_of(step_cost={fld: {"t_s": [0.0], "factor": [2.0]}}))
    s = HostSpeedSeries(t_s=np.array([0.0, 1.0, 3.0]), factor=np.array([1.0, 2.0, 4.0]))
    assert s.at(0.4) == 1.0 and s.at(0.6) == 2.0 and s.at(9.0) == 4.0
    assert s.at(np.array([-1.0, 2.1])).tolist() == [1.0, 4.0]
    req = {"poisson": {"rate": 2.0, "count": 8}, "input_tokens": {"fixed": 256}, "output_tokens": {"fixed": 12}}
    base = _sim(cfg_of(engine="hf-cb", requests=req, decode_run_steps=0))
    one = _sim(cfg_of(engine="hf-cb", requests=req, decode_run_steps=0,
                      step_cost={fld: {"t_s": [0.0, 100.0], "factor": [1.0, 1.0]}}))
    slow = _sim(cfg_of(engine="hf-cb", requests=req, decode_run_steps=0,
                       step_cost={fld: {"t_s": [0.0, 100.0], "factor": [2.0, 2.0]}}))
    run = _sim(cfg_of(engine="hf-cb", requests=req, decode_run_steps=256,
                      step_cost={fld: {"t_s": [0.0, 100.0], "factor": [2.0, 2.0]}}))
    assert np.allclose(one.requests["tpot_s"], base.requests["tpot_s"], rtol=1e-12)
    assert slow.summary["tpot_p50_ms"] > 1.5 * base.summary["tpot_p50_ms"]
    assert np.allclose(run.requests["tpot_s"], slow.requests["tpot_s"], rtol=1e-9)


def test_vllm_profile_runs_the_async_loop_and_the_knob_overrides_it():
    from simulator.engine.runtime import load_profile
    from simulator.engine.sim import setup_group

    assert load_profile("vllm-v1").async_launch and not load_profile("hf-cb").async_launch
    on = cfg_of(engine="vllm-v1", step_cost={"host_per_step_us": 300})
    off = cfg_of(engine="vllm-v1", step_cost={"host_per_step_us": 300, "async_launch": False})
    assert setup_group(0, on.groups[0], on, 64).cost.host.pipeline
    assert not setup_group(0, off.groups[0], off, 64).cost.host.pipeline
    # its host work hides under the device in the loop, and adds to every step without it
    assert _sim(on).summary["tpot_p50_ms"] < _sim(off).summary["tpot_p50_ms"] - 0.2
