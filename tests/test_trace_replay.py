"""Per-step trace replay in serving runs (simulator/engine/trace_replay.py, serving.trace_replay)."""
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from hwmodels.errors import ScenarioError
from simulator.engine import trace_replay as TR
from simulator.kernels.gvr_passes import launch_passes
from simulator.strategies.base import parse_axis
from simulator.traces.scenario import find_trace
from tests.conftest import make_combo

TRACE = "smollm2_135m_8k_2026-11-26"


def _stats():
    from simulator.traces.analysis import load_stats

    return load_stats(find_trace(TRACE), write_cache=False)


def _ssv(ts):
    c = replace(make_combo(hw="H100-SXM"), attention=parse_axis("attention", ["nsa"])[0],
                speculation=parse_axis("speculation", [{"eagle3": {"k": 4}}])[0],
                verify_kernel=parse_axis("verify_kernel", [{"ssv": {"group": 4}}])[0])
    return replace(c, trace=ts)


def _gvr(ts):
    c = make_combo(hw="B200", model="DeepSeek-V3.2-Exp", tp=8, attention="dsa", kv_dtype="fp8")
    return replace(c, topk=parse_axis("topk", ["gvr"])[0], trace=ts)


def _part(inputs, seed=0):
    """A ReplayPart whose levels need no pricing (level_ops None) or are checked in level space."""
    cost = SimpleNamespace(max_context=131072, query_rows=5)
    return TR.ReplayPart(inputs, cost, seed, (0, 0))


def test_gvr_draws_have_the_mean_statistics_passes_as_expectation():
    """The per-layer launch passes drawn per step have, in expectation, exactly the mean-statistics run's
    launch_passes (E[max] over the launch's rows), at batch 1 and 16; the seeded, stratified draws of one cycle
    match it within 1 %, and batch 16 varies less from step to step than batch 1 (the slowest row dominates)."""
    c = _gvr(_stats())
    inp = c.topk.trace_replay(c)
    assert inp is not None and "gvr.passes_rows" in inp.label
    L, n = c.model.layers, 16384.0
    layer_inputs, _ = c.topk.layer_inputs(c, L, 2048, n)
    sd = {}
    for batch in (1, 16):
        mean_run = sum(launch_passes(x, 2048, n, float(batch), 1, True) for x in layer_inputs)
        assert float(inp.expected(batch, n) @ inp.levels) == pytest.approx(mean_run, rel=1e-9)
        w = inp.draws(batch, n, 2048, np.random.default_rng(3))
        assert w.shape == (2048, len(inp.levels)) and np.allclose(w.sum(axis=1), L)
        per_step = w @ inp.levels
        assert per_step.mean() == pytest.approx(mean_run, rel=0.01)
        sd[batch] = per_step.std() / per_step.mean()
    assert sd[16] < sd[1]


def test_ssv_factor_sequence_mean_is_the_mean_statistics_factor():
    """SSV: the union sums' expectation is what the mean run prices (the trace's mean union ratio per layer, to the
    subsample's precision); the factor sequence averages 1 (the mean run is the per-step run's expectation)."""
    ts = _stats()
    c = _ssv(ts)
    inp = c.verify_kernel.trace_replay(c)
    assert inp is not None and inp.ops == ("nsa.select",)
    L = c.model.layers
    mean_run = float(np.sum(ts.per_layer("ssv.union_ratio", L, order="position_sorted", C=4))) + L * 1.0
    assert float(inp.expected(4, 8192.0)[0]) == pytest.approx(mean_run, rel=0.02)
    for batch in (1, 16):
        f = _part(inp).sequence(batch, 8192.0)
        assert len(f) == TR.SEQ_STEPS and f.std() > 0
        assert abs(f.mean() - 1.0) < 4 * f.std() / np.sqrt(len(f)) + 1e-12


def test_constant_trace_replays_the_mean_exactly():
    """A trace whose union ratios do not vary gives factor 1 at every step: per_step prices what mean prices."""
    ts = _stats()
    s = ts.values["ssv.union_ratio_samples"]
    const = np.where(np.isfinite(s), np.nanmean(s, axis=-1, keepdims=True), np.nan)
    c = _ssv(replace(ts, values={**ts.values, "ssv.union_ratio_samples": const}))
    inp = c.verify_kernel.trace_replay(c)
    for batch in (1, 2, 64):
        f = _part(inp).sequence(batch, 8192.0)
        assert np.allclose(f, 1.0, rtol=0, atol=1e-12)


def test_seeded_and_a_run_equals_its_steps():
    """Same seed, same sequences and replica offsets; another seed, others. A decode run's deltas (one slice of
    the sequence) equal its steps' deltas taken one at a time."""
    c = _ssv(_stats())
    inp = c.verify_kernel.trace_replay(c)

    class Cost(SimpleNamespace):
        def price_decode_part(self, batch, ctx, prefixes):   # a part time linear in the context
            assert prefixes == ("nsa.select",)
            return 1e-9 * np.asarray(ctx) * np.asarray(batch)

    def group(seed):
        return TR.GroupReplay([TR.ReplayPart(inp, Cost(max_context=65536, query_rows=5), seed, (0, 3))], seed)

    a, b, other = group(7), group(7), group(8)
    assert np.array_equal(a.parts[0].factors(16, 9000.0), b.parts[0].factors(16, 9000.0))
    assert not np.array_equal(a.parts[0].factors(16, 9000.0), other.parts[0].factors(16, 9000.0))
    assert a.cursor(2).pos == b.cursor(2).pos
    ctx = 9000.0 + np.arange(300.0)
    run, steps = a.cursor(1), b.cursor(1)
    whole = run.run_delta(16, ctx)
    run.advance(len(ctx))
    one = []
    for x in ctx:
        one.append(steps.step_delta(16, x))
        steps.advance(1)
    assert np.allclose(whole, one, rtol=1e-12, atol=0) and np.any(whole != 0)
    assert run.pos == steps.pos
    # the part time is interpolated on the context grid: within 0.2 % of direct pricing
    p = a.parts[0]
    assert p.part_s(16, [9123.0])[0] == pytest.approx(1e-9 * 9123.0 * 16, rel=2e-3)


def test_bad_values_refused(tmp_path):
    from simulator.scenario import load_scenario

    base = (tmp_path / "s.yaml")

    def scen(extra: str, trace: bool):
        base.write_text("name: t\nhardware: H100-SXM\nmodel: Llama-3.1-8B\n"
                        "workload: {batch: [1], context: [1024], output_tokens: 16}\n"
                        + (f"trace: {TRACE}\n" if trace else "")
                        + "serving:\n  requests: {poisson: {rate: 1.0, count: 4}, input_tokens: 128, "
                        "output_tokens: 16}\n" + extra)
        return load_scenario(str(base))

    with pytest.raises(ScenarioError, match=r"trace_replay.*'sometimes'.*per_step, mean"):
        scen("  trace_replay: sometimes\n", True)
    with pytest.raises(ScenarioError, match="trace_replay.*no trace: section"):
        scen("  trace_replay: per_step\n", False)
    assert scen("", True).serving.trace_replay == "per_step"
    assert scen("", False).serving.trace_replay == "mean"
    assert scen("  trace_replay: mean\n", True).serving.trace_replay == "mean"
