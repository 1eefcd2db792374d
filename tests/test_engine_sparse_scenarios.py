"""The shipped sparse serving scenarios (one per family: DSA with radix / GVR top-k, NSA with SSV verification,
Quest / LServe page selection, SpecAttn, SnapKV / StreamingLLM) simulate on a short prefix of their requests:
every request finishes, the strategies that price decode per row do, and the priced steps match direct pricing.
Their full runs (time, peak memory) are measured by benchmarks/des_speed.py."""
import numpy as np
import pytest

from simulator.engine.api import load_source, simulate
from simulator.scenario import load_scenario

#: scenario -> whether each replica group prices decode per row (its decode cost is not linear in a row's context)
SPARSE = {
    "serving_dsa_gvr_b200": (True, True),
    "serving_nsa_ssv_h100": (True, True),
    "serving_lserve_quest_a100": (True, True),
    "serving_specattn_a100": (False, False),
    "serving_snapkv_streaming_h100": (False, False),
}


@pytest.mark.parametrize("name", sorted(SPARSE))
def test_sparse_serving_scenario_runs(name):
    cfg = load_scenario(name).serving
    n = 24
    reqs = load_source(cfg.source, cfg.seed, requests=n)
    res = simulate(cfg, reqs, sample_every=7)
    assert res.summary["finished"] == n and res.summary["rejected"] == 0
    groups = res.engine.groups
    assert tuple(g.cost.per_row for g in groups) == SPARSE[name]
    # the two groups run different strategies on the same arrivals: their step prices differ
    assert groups[0].combo.strategy_label() != groups[1].combo.strategy_label()
    # decode steps (surfaces, per-row pricing) against direct pricing; steps with a prefill chunk price it as the
    # difference of the whole-prompt table, A(o + c) - A(o), which the direct path does not (a few % on 1-token
    # chunks at long offsets, unchanged by per-row pricing)
    samples = [(g, c) for g, c, _ in res.engine.plan_samples if not c.chunks][:10]
    assert samples
    errs = [groups[g].cost.step_s(c) / groups[g].cost.direct_step_s(c) - 1 for g, c in samples]
    assert np.max(np.abs(errs)) < 1e-3
