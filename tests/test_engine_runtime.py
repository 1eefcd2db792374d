"""Engine runtime profiles as the event engine applies them (simulator/engine/runtime.py), closed-loop workloads,
vLLM-style ITL, and speculative decoding's reservation / per-position acceptance in the scheduler."""
from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from hwmodels.errors import ScenarioError
from simulator.engine.config import parse_serving_section
from simulator.engine.runtime import (
    ENGINES,
    HostTerms,
    LaunchModel,
    ProfileError,
    fit_host_terms,
    fit_overlap_norm,
    load_profile,
    sglang_capture_sizes,
    trtllm_capture_sizes,
    vllm_capture_sizes,
)
from simulator.engine.scheduler import Request, Scheduler, SchedulerConfig
from simulator.engine.step_cost import Composition, HostTime, StepRuntime

ROOT = Path(__file__).resolve().parents[1]
DOC = {"hardware": ["H100-SXM"], "model": "Llama-3.1-8B", "strategies": {"attention": "dense"},
       "runtime": {"launch": "graph", "kernels": "hf"}}
SCHED = {"max_num_batched_tokens": 2048, "max_num_seqs": 64, "block_size": 16, "num_blocks": 4000,
         "enable_prefix_caching": False}


def section(engine="none", requests=None, **kw):
    s = {"requests": requests or {"poisson": {"rate": 4.0, "count": 30}, "input_tokens": {"fixed": 512},
                                  "output_tokens": {"fixed": 24}},
         "replicas": [{"count": 1}], "scheduler": dict(SCHED), "engine": engine}
    s.update(kw)
    return s


def cfg_of(**kw):
    return parse_serving_section(section(**kw), "<test>", ROOT, DOC)


# ---- profiles ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", [n for n in ENGINES if n != "none"])
def test_every_profile_loads_with_sources(name):
    p = load_profile(name)
    assert p.engine and p.sources, name
    for line in p.notes:   # unknowns become notes, never values
        assert "unknown" in line or "not applied" in line


def test_hf_cb_profile_terms_are_its_yaml_numbers():
    p = load_profile("hf-cb")
    h = p.host
    assert h.per_step_s == pytest.approx((1.159 + 0.207 + 0.465) * 1e-3)      # pre base + update base + gap
    assert h.per_request_s == pytest.approx((54.2 + 2.6) * 1e-6)
    assert h.per_key_s == pytest.approx(0.1202e-6) and h.per_new_request_s == pytest.approx(47.3e-6)
    assert p.launch.median_s() == pytest.approx(0.0951) and p.launch.norm_p == 1.9
    assert p.launch.seen_s == pytest.approx(0.0384)          # a step whose attention shape ran before
    assert p.mask.per_qk_s == pytest.approx(1.73e-9) and p.mask.per_key_s == pytest.approx(1.5144e-6)
    assert p.graphs.decode == "host_launch" and p.overlap_fraction == 0.0


def test_vllm_profile_unknown_host_terms_are_zero_and_noted():
    p = load_profile("vllm-v1")
    assert not p.host.any() and p.launch is None and p.api_per_request_s == 0.0
    assert any("per_step_s" in n for n in p.notes) and any("api_per_request_ms" in n for n in p.notes)
    assert p.graphs.mixed == "piecewise" and p.graphs.capture == "vllm"


def test_capture_size_rules():
    v = vllm_capture_sizes(1024, 8192, "hopper")
    assert v[:4] == (1, 2, 4, 8) and 248 in v and 256 in v and 272 in v and v[-1] == 512 and 260 not in v
    assert vllm_capture_sizes(1024, 8192, "blackwell")[-1] == 1024
    assert vllm_capture_sizes(64, 8192, "hopper")[-1] == 128          # 2 x max_num_seqs
    s = sglang_capture_sizes("hopper", 1)
    assert s[:5] == (1, 2, 4, 8, 12) and s[-1] == 256 and sglang_capture_sizes("hopper", 4)[-1] == 512
    assert trtllm_capture_sizes() == tuple(range(1, 32)) + (32, 64, 128)


def test_unknown_engine_and_bad_profile_are_named_errors(tmp_path):
    with pytest.raises(ScenarioError, match="serving.engine"):
        cfg_of(engine="nope")
    bad = tmp_path / "p.yaml"
    bad.write_text("engine: x\nhost_time:\n  per_step_s: {value: 0.001, assumed: true, reason: r}\n"
                   "  weird: {value: {per_nothing_us: 3}, assumed: true, reason: r}\n")
    with pytest.raises(ProfileError, match="unknown host term"):
        load_profile(str(bad))


# ---- host time ------------------------------------------------------------------------------------------------
def test_host_time_formula_content_overlap_and_norm():
    t = HostTerms(per_step_s=1e-3, per_request_s=1e-5, per_key_s=1e-7, per_query_token_s=1e-6,
                  per_new_request_s=2e-5, per_first_token_s=3e-5, per_mixed_step_s=4e-4)
    comp = Composition(total_tokens=130, logit_rows=3, n_decode=2, decode_ctx_sum=3000.0, chunks=((128, 64),),
                       completes=(192,), n_new=1)
    h = 1e-3 + 4e-4 + 3 * 1e-5 + 1e-7 * (3000 + 192) + 1e-6 * 130 + 2e-5 + 3e-5
    assert HostTime(terms=t).plan_s(0.02, comp) == pytest.approx(0.02 + h)
    f, L = 0.5, 0.004
    got = HostTime(terms=t, overlap=f, launch=LaunchModel(constant_s=L)).plan_s(0.02, comp)
    assert got == pytest.approx((1 - f) * h + max(0.02, L + f * h))
    got = HostTime(terms=t, launch=LaunchModel(constant_s=0.03, norm_p=2.0)).plan_s(0.02, comp)
    assert got == pytest.approx(h + math.hypot(0.02, 0.03))


def test_host_time_run_equals_step_by_step():
    t = HostTerms(per_step_s=1e-3, per_request_s=1e-5, per_decode_row_s=2e-6, per_key_s=1e-7, per_query_token_s=1e-6)
    host = HostTime(per_row_s=3e-6, terms=t, launch=LaunchModel(constant_s=0.01, norm_p=1.9), overlap=0.2)
    dev = np.array([0.004, 0.02, 0.012])
    ctx = np.array([4000.0, 4008.0, 4016.0])
    run = host.run_s(dev, 8, 8, ctx)
    steps = [host.plan_s(float(d), Composition(total_tokens=8, logit_rows=8, n_decode=8, decode_ctx_sum=float(c)))
             for d, c in zip(dev, ctx)]
    assert np.allclose(run, steps, rtol=1e-12)


def test_launch_sample_draws_from_quantiles():
    lm = LaunchModel(constant_s=0.09, quantiles=((5, 0.06), (50, 0.09), (95, 0.14)), mode="sample")
    d = lm.draw(np.random.default_rng(0), 20000)
    assert d.min() >= 0.06 and d.max() <= 0.14 and np.median(d) == pytest.approx(0.09, abs=0.002)


# ---- step rules ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cost():
    from simulator.engine.sim import _cost_model

    c = cfg_of().groups[0].combo
    return _cost_model(c, 2048, 64, "eager", graph_sizes=vllm_capture_sizes(64, 2048, "hopper"))


def test_batch_mask_attention_prices_q_times_k(cost):
    m = cost.for_serving(rt=StepRuntime(mask=(1.5e-6, 1.73e-9)))
    comp = Composition(total_tokens=1026, logit_rows=3, n_decode=2, decode_ctx_sum=4000.0, chunks=((1024, 512),))
    K = 4000 + 1024 + 512
    assert m.step_s(comp) == pytest.approx(cost.base_s(1026, 3, mixed=True) + K * (1.5e-6 + 1.73e-9 * 1026))
    ctx = np.array([4000.0, 4004.0])
    run = m.decode_run_s(4, 4, ctx)
    one = [m.step_s(Composition(total_tokens=4, logit_rows=4, n_decode=4, decode_ctx_sum=float(c))) for c in ctx]
    assert np.allclose(run, one)


def test_piecewise_mixed_steps_and_eager_decode(cost):
    pw = cost.for_serving(rt=StepRuntime(piecewise=True, eager_above=True))
    small = Composition(total_tokens=100, logit_rows=3, n_decode=2, decode_ctx_sum=2000.0, chunks=((98, 0),),
                        decode_ctx_max=1000.0)
    # padded to the 104 graph (the largest is 2 x max_num_seqs = 128); body and head replay the graph, the
    # attention is eager
    want = cost.base_s(104, 3) + cost.decode_s(2, 1000.0, True, 1000.0) + cost.chunk_s(98, 0)
    assert pw.step_s(small) == pytest.approx(want)
    big = Composition(total_tokens=300, logit_rows=1, chunks=((300, 0),))
    assert pw.step_s(big) == pytest.approx(cost.step_s(big))          # above the largest graph: eager, as before
    nopad = cost.for_serving(rt=StepRuntime(pad_decode=False))
    d33 = Composition(total_tokens=33, logit_rows=33, n_decode=33, decode_ctx_sum=33 * 900.0, decode_ctx_max=900.0)
    d32 = Composition(total_tokens=32, logit_rows=32, n_decode=32, decode_ctx_sum=32 * 900.0, decode_ctx_max=900.0)
    assert nopad.step_s(d32) == pytest.approx(cost.step_s(d32))        # a captured size: the graph
    assert nopad.step_s(d33) == pytest.approx(cost.base_s(33, 33, mixed=True) + cost.decode_s(33, 900.0, True, 900.0))
    run = nopad.decode_run_s(33, 33, np.array([33 * 900.0]), np.array([900.0]))
    assert run[0] == pytest.approx(nopad.step_s(d33), rel=1e-9)


# ---- the engine under a profile ----------------------------------------------------------------------------------
def _sim(cfg, **kw):
    from simulator.engine.api import simulate

    return simulate(cfg, **kw)


def test_profile_fast_path_equals_step_by_step():
    """The decode-run fast path applies the profile's host terms per step exactly as the step-by-step loop."""
    a = _sim(cfg_of(engine="hf-cb", decode_run_steps=256)).requests
    b = _sim(cfg_of(engine="hf-cb", decode_run_steps=0)).requests
    for c in ("ttft_s", "tpot_s", "e2e_s"):
        assert np.allclose(a[c], b[c], rtol=1e-9), c


def test_hf_cb_profile_makes_steps_host_bound():
    base = _sim(cfg_of()).summary
    hf = _sim(cfg_of(engine="hf-cb")).summary
    # every step issues an eager forward: ~92 ms median launch, far above the op model's device time
    assert hf["tpot_p50_ms"] > 80 and base["tpot_p50_ms"] < 40


def test_step_cost_knobs_override_the_profile():
    cfg = cfg_of(engine="hf-cb", step_cost={"host_launch_ms": 40})
    s = _sim(cfg).summary
    assert 40 < s["tpot_p50_ms"] < 60
    from simulator.engine.api import runtime_notes

    assert any("host_launch_ms overrides" in n for n in runtime_notes(cfg))


# ---- closed loop and ITL ------------------------------------------------------------------------------------------
CLOSED = {"closed_loop": {"concurrency": 3, "count": 12, "warmup": 3}, "input_tokens": {"fixed": 256},
          "output_tokens": {"fixed": 16}}


def test_closed_loop_keeps_c_in_flight_and_excludes_warmup():
    res = _sim(cfg_of(requests=CLOSED))
    df = res.requests
    assert df["e2e_s"].notna().all() and df["warmup"].sum() == 3 and res.summary["requests"] == 9
    arr = df["arrival_s"].to_numpy()
    fin = (df["arrival_s"] + df["e2e_s"]).to_numpy()
    assert (arr[:3] == 0).all()
    # request i >= C is submitted exactly when an earlier request finished (think time 0), in order
    for i in range(3, 12):
        assert np.isclose(fin[:i], arr[i]).any() and arr[i] >= arr[i - 1]
    # never more than C in flight
    for t in arr:
        assert ((arr <= t) & (fin > t)).sum() <= 3


def test_closed_loop_think_time_delays_submission():
    from simulator.engine.api import with_concurrency

    cfg = with_concurrency(cfg_of(requests={"poisson": {"rate": 1.0, "count": 6}, "input_tokens": {"fixed": 128},
                                            "output_tokens": {"fixed": 8}}), 1, think_s=0.05)
    df = _sim(cfg).requests
    fin = (df["arrival_s"] + df["e2e_s"]).to_numpy()
    assert np.allclose(df["arrival_s"].to_numpy()[1:], fin[:-1] + 0.05)


def test_itl_is_vllm_pooled_inter_token_gaps():
    """At concurrency 1 every later token comes one decode step after the previous: the pooled ITL mean equals the
    mean TPOT (vLLM benchmarks/serve.py: TPOT = (e2e - ttft) / (output - 1), ITL = every gap pooled)."""
    res = _sim(cfg_of(requests={"closed_loop": {"concurrency": 1, "count": 4}, "input_tokens": {"fixed": 256},
                                "output_tokens": {"fixed": 20}}))
    s = res.summary
    assert s["itl_mean_ms"] == pytest.approx(s["tpot_mean_ms"], rel=1e-9)
    from simulator.engine.results import itl_samples

    g, w = itl_samples(res.engine)
    assert w.sum() == 4 * 19


def test_closed_loop_config_errors():
    with pytest.raises(ScenarioError, match="warmup"):
        cfg_of(requests={"closed_loop": {"concurrency": 2, "count": 4, "warmup": 4}, "input_tokens": {"fixed": 8},
                         "output_tokens": {"fixed": 8}})
    with pytest.raises(ScenarioError, match="concurrency"):
        cfg_of(requests={"closed_loop": {"count": 4}, "input_tokens": {"fixed": 8}, "output_tokens": {"fixed": 8}})


# ---- speculation in the scheduler ----------------------------------------------------------------------------------
def test_lookahead_reserved_for_every_running_request_and_kept_after_rejection():
    """vLLM v1 (vllm/v1/core/sched/scheduler.py @ 00024d3): allocate_slots(request, num_new_tokens,
    num_lookahead_tokens) for every RUNNING request; rejected drafts roll num_computed_tokens back, the blocks stay."""
    cfg = SchedulerConfig(num_blocks=200, block_size=16, max_num_batched_tokens=64, num_spec_tokens=3,
                          num_lookahead_tokens=3, enable_prefix_caching=False)
    s = Scheduler(cfg)
    s.add_request(Request(0, 100, 10))
    p = s.schedule()                          # first chunk of 64 (a new request: no lookahead)
    assert p.chunks == [(64, 0)] and s.running[0].blocks == 4
    s.step_done(p)
    p = s.schedule()                          # the rest of the prompt, a RUNNING request: + 3 lookahead slots
    assert p.chunks == [(36, 64)] and s.running[0].blocks == -(-(100 + 3) // 16)
    s.step_done(p)
    r = s.running[0]
    p = s.schedule()                          # a decode round: 1 + 3 drafts, slots for computed + 4 + 3
    assert p.num_tokens == [4] and p.drafts == [3] and r.blocks == -(-(100 + 4 + 3) // 16)
    held = r.blocks
    s.step_done(p, accepted=[1])              # 2 drafts rejected: computed rolls back, blocks are kept
    assert r.computed == 100 + 1 + 1 and r.blocks == held and r.out == 3
    s.check_invariants()


def test_per_position_acceptance():
    from simulator.engine.sim import Acceptance

    a = Acceptance(None, 2, None, np.random.default_rng(0), per_position=(0.8, 0.5))
    pmf = np.diff(np.concatenate([[0.0], a.dist]))
    assert pmf == pytest.approx([0.2, 0.4, 0.4])
    d = a.draw((20000,))
    assert np.bincount(d, minlength=3) / 20000 == pytest.approx([0.2, 0.4, 0.4], abs=0.015)


def test_per_position_acceptance_must_match_the_drafts():
    sec = section(acceptance={"per_position": [0.9, 0.7, 0.5]})
    doc = dict(DOC, strategies={"attention": "dense", "speculation": {"eagle3": {"k": 4}}})
    with pytest.raises(ScenarioError, match="per_position"):
        parse_serving_section(sec, "<test>", ROOT, doc)
    sec["acceptance"] = {"per_position": [0.9, 0.7, 0.5, 0.3]}
    assert parse_serving_section(sec, "<test>", ROOT, doc).acceptance == {"per_position": (0.9, 0.7, 0.5, 0.3)}


# ---- fitting host terms ------------------------------------------------------------------------------------------
def test_fit_host_terms_recovers_synthetic_terms():
    rng = np.random.default_rng(1)
    n = 400
    rows = rng.integers(1, 40, n).astype(float)
    keys = rows * rng.integers(500, 9000, n)
    tokens = rows + rng.integers(0, 2, n) * rng.integers(0, 4000, n)
    new = rng.integers(0, 3, n).astype(float)
    fin = rng.integers(0, 2, n).astype(float)
    first = rng.integers(0, 2, n).astype(float)
    pre = 1e-3 + 50e-6 * rows + 0.1e-6 * keys + 0.3e-6 * tokens + 40e-6 * new
    frame = {"sched_s": pre * 0.2, "prep_s": pre * 0.7, "kwargs_s": pre * 0.1,
             "update_s": 2e-4 + 3e-6 * rows + 60e-6 * fin + 30e-6 * first, "gap_s": np.full(n, 5e-4),
             "rows": rows, "keys": keys, "tokens": tokens, "new_reqs": new, "finished": fin, "first_tokens": first,
             "launch_s": np.full(n, 0.08), "sync_s": np.zeros(n), "n_prefill": np.zeros(n)}
    f = fit_host_terms(frame)
    h = f.host
    assert h.per_step_s == pytest.approx(1e-3 + 2e-4 + 5e-4) and h.per_key_s == pytest.approx(0.1e-6)
    assert h.per_request_s == pytest.approx(53e-6) and h.per_finished_s == pytest.approx(60e-6)
    assert f.launch.median_s() == pytest.approx(0.08) and f.n_launch == n
    L = rng.uniform(0.03, 0.15, n)
    D = rng.uniform(0.01, 0.3, n)
    assert fit_overlap_norm(L, D, (L ** 2.5 + D ** 2.5) ** 0.4) == pytest.approx(2.5)


def test_shipped_serving_scenarios_name_an_engine():
    from simulator.scenario import load_scenario
    from simulator.shipped import shipped_scenarios

    for n in shipped_scenarios():
        if n.startswith("serving_"):
            cfg = load_scenario(n).serving
            assert cfg.engine in ENGINES and cfg.engine != "none", n


def test_replace_profile_on_config():
    cfg = cfg_of(engine="hf-cb")
    p2 = replace(cfg.runtime, launch=LaunchModel(constant_s=0.02))
    s = _sim(replace(cfg, runtime=p2)).summary
    assert s["tpot_p50_ms"] < 60


def test_the_replica_prices_the_engine_profiles_allreduce():
    """A tensor-parallel replica group runs the all-reduce its engine profile names (vLLM's custom all-reduce for
    vllm-v1), and a replica without a profile keeps the scenario's NCCL; the step costs differ accordingly."""
    from simulator.engine.sim import resolve_runtime

    doc = dict(DOC, runtime={"launch": "graph"})
    got = {}
    for engine in ("none", "vllm-v1"):
        sec = section(engine=engine, replicas=[{"count": 1, "parallelism": {"tp": 2}}])
        cfg = parse_serving_section(sec, "<test>", ROOT, doc)
        combo = cfg.groups[0].combo
        assert combo.tp == 2
        setup = resolve_runtime(cfg, combo, 2048, 64, 0, {"mixed_launch": "eager"})
        got[engine] = setup.combo.allreduce
    assert got == {"none": "nccl", "vllm-v1": "vllm"}


def test_group_breakdown_splits_requests_by_the_deployment_they_ran_on():
    """simulate's per-group table: each request counted once under its replica's group (prefill -> decode pair for
    disaggregated pools), percentiles over the group's finished requests, SLO attainment per group."""
    import pandas as pd

    from simulator.engine.results import group_breakdown, group_breakdown_text

    df = pd.DataFrame({"replica": [0, 1, 1, 2], "decode_replica": [-1, -1, -1, 3],
                       "ttft_s": [0.1, 0.2, 0.4, 0.3], "tpot_s": [0.01, 0.02, 0.04, 0.03],
                       "e2e_s": [1.0, 2.0, np.nan, 3.0], "rejected": [False] * 4})
    g = group_breakdown(df, ["mixed:a", "mixed:b", "prefill:p", "decode:d"], {"tpot_ms": 25})
    assert g["group"].tolist() == ["mixed:a", "mixed:b", "prefill:p -> decode:d"]
    assert g["requests"].tolist() == [1, 2, 1] and g["finished"].tolist() == [1, 1, 1]
    assert g.loc[1, "tpot_p50_ms"] == pytest.approx(20.0)          # the unfinished request is left out
    assert g["slo_attainment"].tolist() == [1.0, 0.5, 0.0]
    assert "prefill:p -> decode:d" in group_breakdown_text(g)


def test_latency_cdf_draws_one_curve_per_group(tmp_path):
    import pandas as pd

    from simulator.engine.plots import latency_cdf
    from simulator.engine.results import short_group_names

    keys = np.array(["mixed:H100 M dsa+radix", "mixed:H100 M dsa+gvr"] * 3, dtype=object)
    assert short_group_names(keys).tolist()[:2] == ["dsa+radix", "dsa+gvr"]
    df = pd.DataFrame({"ttft_s": np.linspace(0.1, 0.6, 6), "tpot_s": np.linspace(0.01, 0.06, 6),
                       "e2e_s": np.linspace(1, 6, 6)})
    latency_cdf(df, {"tpot_ms": 50}, tmp_path / "c.png", groups=short_group_names(keys))
    assert (tmp_path / "c.png").stat().st_size > 10_000


def test_host_overlap_knob_hides_host_time_and_is_checked():
    # 2 ms of host time per step: serialized it adds to every step, fully overlapped (f = 1) it hides under the
    # device (decode steps here take longer than 2 ms), with or without an engine profile
    serial = _sim(cfg_of(step_cost={"host_per_step_us": 2000})).summary["tpot_p50_ms"]
    hidden = _sim(cfg_of(step_cost={"host_per_step_us": 2000, "host_overlap": 1.0})).summary["tpot_p50_ms"]
    none = _sim(cfg_of()).summary["tpot_p50_ms"]
    assert serial == pytest.approx(none + 2.0, rel=0.02)
    assert hidden == pytest.approx(none, rel=0.02)
    prof = cfg_of(engine="own", step_cost={"host_overlap": 0.5})
    assert prof.host_overlap == 0.5
    with pytest.raises(ScenarioError, match="host_overlap"):
        cfg_of(step_cost={"host_overlap": 1.5})


def test_async_admission_joins_the_step_after_next():
    # one long request decoding alone; a second arrives mid-step: synchronously it joins the next step, with async
    # admission (the next step was planned when the current one started) the one after: its TTFT grows by about one
    # step, the decode of the first request does not change, and the books still balance
    from simulator.engine.api import simulate
    from simulator.traces.requests import RequestTrace

    tr = RequestTrace(name="t", source="test", arrival_s=np.array([0.0, 0.2005]),
                      input_tokens=np.array([64, 64]), output_tokens=np.array([400, 8]))
    sync = simulate(cfg_of(), tr, seed=0)
    asy = simulate(cfg_of(step_cost={"async_admission": True}), tr, seed=0)
    step = float(sync.requests["tpot_s"].to_numpy()[0])
    d = asy.requests["ttft_s"].to_numpy()[1] - sync.requests["ttft_s"].to_numpy()[1]
    assert 0.5 * step < d < 1.6 * step
    assert asy.requests["ttft_s"].to_numpy()[0] == pytest.approx(sync.requests["ttft_s"].to_numpy()[0])
    assert asy.requests["e2e_s"].notna().all()
    with pytest.raises(ScenarioError, match="async_admission"):
        cfg_of(step_cost={"async_admission": "yes"})


def test_profile_async_admission_applies_unless_the_user_overrides_it():
    # vLLM v1's profile plans step N+1 when N is launched (runtime.async_admission); a scenario's
    # serving.step_cost.async_admission wins either way; engines without async scheduling keep synchronous admission
    from simulator.engine.sim import async_admission

    assert load_profile("vllm-v1").async_admission and not load_profile("hf-cb").async_admission
    assert not load_profile("own").async_admission
    assert async_admission(cfg_of(engine="vllm-v1"))
    assert not async_admission(cfg_of(engine="vllm-v1", step_cost={"async_admission": False}))
    assert not async_admission(cfg_of())
    assert async_admission(cfg_of(step_cost={"async_admission": True}))


def test_sglangs_mem_fraction_static_follows_its_reserve_rule():
    """memory_hook.py's rule by hand: an H200 at TP 8 with MLA reserves 512 + 1.5 x 8192 + 1024 + 2 x 512 + 1536 =
    16384 MiB of its 144384 (0.887); an 80 GiB H100 at TP 1 without MLA 512 + 12288 + 128 + 512 + 8 x 58 = 13904 MiB
    (0.830); a 40 GiB GPU keeps its own smaller reserve (no 10 GiB floor below 60 GiB)."""
    from simulator.memory import sglang_mem_fraction_static, sglang_prefill_capture_sizes

    gib = 2.0**30
    assert sglang_prefill_capture_sizes(8192) == 58 and sglang_prefill_capture_sizes(2048) == 42
    assert sglang_mem_fraction_static(141 * gib, 8, True) == round((144384 - 16384) / 144384, 3)
    assert sglang_mem_fraction_static(80 * gib, 1, False) == round((81920 - 13904) / 81920, 3)
    small = 512 + 1.5 * 4096 + 128 + 2 * 32 + 8 * sglang_prefill_capture_sizes(4096)
    assert sglang_mem_fraction_static(40 * gib, 1, False) == round((40960 - small) / 40960, 3)


def test_the_sglang_profile_sizes_the_pool_by_its_rule_unless_the_scenario_sets_the_utilization(monkeypatch):
    """The SGLang profile's runtime.kv_budget: its replica's KV blocks follow SGLang's pool rule (fewer than vLLM's
    0.9 on this H100 at TP 1), the combo carries the rule for the kernels that read the pool; a scenario's own
    gpu_memory_utilization restores vLLM's rule at that value. (The step-cost tables are stubbed: not under test.)"""
    from types import SimpleNamespace

    from simulator import memory
    from simulator.engine import sim as S
    from simulator.engine.sim import resolve_runtime, setup_group

    stub = SimpleNamespace(for_serving=lambda *a, **k: stub)
    monkeypatch.setattr(S, "_cost_model", lambda *a, **k: stub)
    monkeypatch.setattr(S, "group_replay", lambda *a, **k: None)

    doc = dict(DOC, runtime={"launch": "graph"})
    sched = {k: v for k, v in SCHED.items() if k != "num_blocks"}
    blocks = {}
    for engine, extra in (("vllm-v1", {}), ("sglang", {}), ("sglang", {"gpu_memory_utilization": 0.9})):
        cfg = parse_serving_section(section(engine=engine, scheduler=dict(sched, **extra)), "<test>", ROOT, doc)
        g = setup_group(0, cfg.groups[0], cfg, 16)
        blocks[(engine, bool(extra))] = g.sched_cfg.num_blocks
        if engine == "sglang" and not extra:
            assert g.combo.kv_budget == "sglang"
            rs = resolve_runtime(cfg, cfg.groups[0].combo, 2048, 64, 0, {"mixed_launch": "eager"})
            assert rs.combo.kv_budget == "sglang"
            free = memory.kv_budget_bytes(g.combo)
            per = float(memory.kv_bytes_per_sequence(g.combo, np.ones(1))[0])
            assert g.sched_cfg.num_blocks == int(free // (per * 16))
    assert blocks[("sglang", False)] < blocks[("vllm-v1", False)]
    assert blocks[("sglang", True)] == blocks[("vllm-v1", False)]


def test_a_whole_pool_cast_names_the_pool_it_prices_and_the_rule_that_sized_it():
    """SGLang's fa3 backend over an fp8 MLA cache (fa3_mla_fp8cast) casts the device's whole pool every layer: the
    run's notes name that pool (SGLang's rule under its profile, with vLLM's beside it) or the pinned one."""
    from simulator import memory
    from simulator.engine.api import _pool_cast_notes

    doc = {"hardware": ["H200"], "model": "DeepSeek-V3", "strategies": {"attention": "dense"},
           "runtime": {"launch": "graph"}}
    rep = {"count": 1, "parallelism": {"tp": 8}, "strategies": {"attention": "dense", "kv_dtype": "fp8"}}
    cfg = parse_serving_section(section(engine="sglang", replicas=[rep]), "<test>", ROOT, doc)
    (line,) = _pool_cast_notes(cfg, cfg.runtime)
    c = replace(cfg.groups[0].combo, kv_budget="sglang")
    assert "fa3_mla_fp8cast" in line and f"{float(memory.kv_pool_tokens(c)):,.0f} tokens" in line
    assert "mem_fraction_static 0.887" in line
    pinned = dict(rep, strategies={"attention": {"dense": {"kernel": "fa3_mla_fp8cast", "pool_tokens": 131072}},
                                   "kv_dtype": "fp8"})
    cfg = parse_serving_section(section(engine="vllm-v1", replicas=[pinned]), "<test>", ROOT, doc)
    (line,) = _pool_cast_notes(cfg, cfg.runtime)
    assert "131,072 tokens" in line
    cfg = parse_serving_section(section(engine="vllm-v1", replicas=[dict(rep, strategies={"attention": "dense",
                                                                                         "kv_dtype": "bf16"})]),
                                "<test>", ROOT, doc)
    assert _pool_cast_notes(cfg, cfg.runtime) == []


def test_sglangs_flashinfer_mla_backend_over_an_fp8_cache_is_priced_as_it_runs_there():
    """A scenario's kernel fi_mla over an fp8 MLA cache under the SGLang profile takes the engine's form
    (engine_attention_defaults.yaml mla_fp8_as: fi_mla_fp8cast, the whole pool cast every layer) and the run's notes say
    so; under vLLM's profile, and over a bf16 cache, the kernel stays as the scenario set it."""
    from simulator.engine.api import _pool_cast_notes

    doc = {"hardware": ["H200"], "model": "DeepSeek-V3", "strategies": {"attention": "dense"},
           "runtime": {"launch": "graph"}}

    def group(engine, kv):
        rep = {"count": 1, "parallelism": {"tp": 8},
               "strategies": {"attention": {"dense": {"kernel": "fi_mla", "page_size": 1}}, "kv_dtype": kv}}
        cfg = parse_serving_section(section(engine=engine, replicas=[rep]), "<test>", ROOT, doc)
        combo, _ = cfg.runtime.apply_attention(cfg.groups[0].combo)
        return cfg, combo.attention.values["kernel"]
    cfg, kernel = group("sglang", "fp8")
    assert kernel == "fi_mla_fp8cast"
    (line,) = _pool_cast_notes(cfg, cfg.runtime)
    assert "fi_mla_fp8cast (the scenario's kernel fi_mla, as engine sglang runs it" in line
    for engine, kv in (("vllm-v1", "fp8"), ("sglang", "bf16")):
        cfg, kernel = group(engine, kv)
        assert kernel == "fi_mla" and _pool_cast_notes(cfg, cfg.runtime) == []


def test_a_prompts_prefill_attention_runs_on_its_dp_group_where_the_engine_does():
    """Under attention DP, SGLang (runtime.prefill_attention: dp) runs one prompt's attention on its attention-DP
    group at heads / (tp / attn_dp) a device: the prefill's attention at DP8 is ~8x the TP-split one (the causal
    pairs' work scales with the heads), the projections unchanged; without attention DP the rule changes nothing; the
    default (tp) is the separate TP prefill mapping SnapStream describes."""
    from hwmodels.roofline import price
    from simulator.combo import make_combo
    from simulator.engine.runtime import load_profile
    from simulator.pricing import prefill_ops

    def attention_s(c):
        ops = prefill_ops(c, np.array([32768.0]))
        t = price(ops, c.hardware, "eager")
        names = np.asarray(ops.names, dtype=object)[ops.name_id]
        return float(t[names == "attention"].sum()), float(t[names == "q_b_proj"].sum())

    c = make_combo("H200", "DeepSeek-V3", kv_dtype="bf16", tp=8, attn_dp=8, launch="graph", attention="dense")
    assert c.prefill_attn == "tp" and c.prefill_heads_dev == c.heads_dev == 16
    dp = load_profile("sglang").apply_layout(c)
    assert dp.prefill_attn == "dp" and dp.prefill_heads_dev == 128 and dp.attn_layout.heads_dev == 128
    (a_tp, p_tp), (a_dp, p_dp) = attention_s(c), attention_s(dp)
    assert 6.0 < a_dp / a_tp < 9.0 and p_dp == p_tp
    one = make_combo("H200", "DeepSeek-V3", kv_dtype="bf16", tp=8, launch="graph", attention="dense")
    assert attention_s(replace(one, prefill_attn="dp")) == attention_s(one)


def test_the_scenarios_runtime_names_where_a_prompts_prefill_attention_runs():
    """runtime.prefill_attention in a scenario reaches every combo it builds (sweeps and serving alike), and a wrong
    value is a named error."""
    from simulator.planner import combos
    from simulator.scenario import scenario_from_dict

    doc = {"name": "pfa", "hardware": "H200", "model": "DeepSeek-V3",
           "workload": {"batch": [1], "context": [8192], "output_tokens": 16},
           "strategies": {"attention": "dense", "parallelism": [{"tp": 8, "attn_dp": 8}]},
           "runtime": {"launch": "graph", "prefill_attention": "dp"}}
    sc = scenario_from_dict(doc)
    assert sc.prefill_attention == "dp" and sc.combo().prefill_dp
    assert all(c.prefill_attn == "dp" for c in combos(sc))
    with pytest.raises(ScenarioError, match="prefill_attention"):
        scenario_from_dict(dict(doc, runtime={"prefill_attention": "ep"}))
