"""SSV's per-request strategy switching in the engine (serving.adaptation, simulator/engine/adaptive.py): parsing
and its refusals, a request whose true acceptance is far below the profiled one switches to the candidate that
yields more tokens there, a request at its profiled acceptance stays, same seed -> same run."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hwmodels.errors import ScenarioError
from simulator.engine.api import simulate
from simulator.engine.config import parse_serving_section

CHAIN = {"eagle3": {"k": 4, "acceptance": 0.9}}
TREE = {"eagle3": {"k": 4, "acceptance": 0.9, "tree": {"branch": 2, "depth": 2, "nodes": 4}}}
DOC = {"hardware": ["H100-SXM"], "model": "Llama-3.1-8B"}


def _cfg(adaptation, speculation=CHAIN, count=6):
    sec = {"requests": {"poisson": {"rate": 4.0, "count": count}, "input_tokens": {"fixed": 200},
                        "output_tokens": {"fixed": 120}},
           "replicas": [{"count": 1, "strategies": {"speculation": speculation}}],
           "scheduler": {"num_blocks": 4096}, "adaptation": adaptation}
    return parse_serving_section(sec, "x.yaml", Path("."), DOC)


def test_candidates_are_parsed_and_refused_when_they_cannot_switch():
    cfg = _cfg({"candidates": [{"speculation": TREE}], "acceptance": {"fixed": 0.3}})
    combos = cfg.adaptation_combos[0]
    assert len(combos) == 2 and combos[1].speculation.tree_shape() is not None
    # a tree of branch 2, depth 2 kept to 4 nodes verifies 4 drafts, like the chain of k = 4
    assert combos[0].speculation.draft_tokens == combos[1].speculation.draft_tokens == 4
    bad = [({"candidates": [{"speculation": {"eagle3": {"k": 2}}}]}, "drafts per round"),
           ({"candidates": [{"speculation": TREE}], "acceptance": {"uniform": [0.9, 0.2]}}, "above high"),
           ({"candidates": [{"speculation": TREE}], "window": 0}, "window"),
           ({"candidates": []}, "candidates"), ({"candidates": [{"kv_dtype": "fp8"}]}, "candidates[0]")]
    for ad, msg in bad:
        with pytest.raises(ScenarioError) as e:
            _cfg(ad)
        assert msg in str(e.value)
    with pytest.raises(ScenarioError) as e:
        _cfg({"candidates": [{"speculation": TREE}]}, speculation="none")
    assert "speculative replica" in str(e.value)


def test_low_acceptance_requests_switch_and_profiled_ones_stay():
    low = simulate(_cfg({"candidates": [{"speculation": TREE}], "acceptance": {"fixed": 0.3}, "window": 8}), seed=1)
    # at alpha 0.3 the tree (two candidates at the first level) yields more tokens per round than the chain with the
    # same 4 drafts and the same round price: after 8 rounds alpha_bar ~ 0.3, |0.3 - 0.9| > eps -> switch to it
    sw = low.requests["spec_switches"].to_numpy()
    assert (sw >= 1).all() and low.summary["finished"] == 6
    rep = low.engine.replicas[0].adapt
    assert all(st[0] == 1 for st in rep.state.values())            # everyone ended on the tree
    assert rep.cands[1].tokens(0.3)[0] > rep.cands[0].tokens(0.3)[0]
    high = simulate(_cfg({"candidates": [{"speculation": TREE}], "acceptance": {"fixed": 0.9}, "window": 8}), seed=1)
    assert (high.requests["spec_switches"].to_numpy() == 0).all()   # the chain stays best at its profiled alpha
    # switching to the better candidate makes low-acceptance requests faster than staying on the chain
    stay = simulate(_cfg({"candidates": [{"speculation": TREE}], "acceptance": {"fixed": 0.3}, "window": 8,
                          "eps": 1.0}), seed=1)
    assert (stay.requests["spec_switches"].to_numpy() == 0).all()
    assert np.median(low.requests.tpot_s) < np.median(stay.requests.tpot_s)


def test_same_seed_same_switches():
    cfg = _cfg({"candidates": [{"speculation": TREE}], "acceptance": {"uniform": [0.2, 0.95]}}, count=10)
    a, b = simulate(cfg, seed=3), simulate(cfg, seed=3)
    assert a.requests.equals(b.requests)
    assert int(a.requests.spec_switches.sum()) >= 1
