"""The engine samples accepted drafts from the speculation strategy's own acceptance model: its sampled mean
equals the round plan's tokens per round, for chains and for pruned trees with exclusive siblings."""
import numpy as np
import pytest

from simulator.combo import make_combo
from simulator.engine.sim import Acceptance


@pytest.mark.parametrize("spec", [
    {"eagle3": {"k": 4, "acceptance": 0.7}},
    {"eagle3": {"tree": {"branch": 3, "depth": 3, "nodes": 12}, "acceptance": 0.7}},
    {"eagle3": {"k": 3, "accept_lengths": [0.1, 0.2, 0.3, 0.4]}},
])
def test_sampled_acceptance_matches_tokens_per_round(spec):
    combo = make_combo("H100-SXM", "Llama-3.1-8B", speculation=spec)
    s = combo.speculation
    acc = Acceptance(combo, int(combo.speculation.draft_tokens), None, np.random.default_rng(0))
    draws = acc.draw((200_000,))
    assert acc.expected_tokens() == pytest.approx(s.tokens_per_round(), rel=1e-12)
    # 200k draws of a variable with sd <= 2 tokens: the mean is within ~0.015 (5 sigma) of its expectation
    assert 1 + draws.mean() == pytest.approx(s.tokens_per_round(), abs=0.015)
    pmf = s.accept_length_pmf()
    assert pmf.sum() == pytest.approx(1.0) and (pmf >= 0).all()
