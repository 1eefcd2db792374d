"""SpecAttn's layer mapping: KL similarity and the monotonic DTW of the paper's Algorithm 3."""
import numpy as np
import pytest

from simulator.dtw import brute_force_mapping, kl_similarity, monotonic_dtw


def test_identity_like_matrix_maps_diagonally():
    S = -np.abs(np.subtract.outer(np.arange(4), np.arange(4))).astype(float)   # best at i == j
    mapping, total = monotonic_dtw(S)
    assert mapping.tolist() == [0, 1, 2, 3] and total == 0.0


def test_shallow_draft_repeats_and_skips():
    # 3 draft layers, 6 verifier layers; verifier j prefers draft round(j/2.5): 0,0,1,1,2,2
    pref = [0, 0, 1, 1, 2, 2]
    S = np.full((3, 6), -1.0)
    for j, i in enumerate(pref):
        S[i, j] = 0.0
    mapping, total = monotonic_dtw(S)
    assert mapping.tolist() == pref and total == 0.0
    # a draft layer nobody prefers is skipped
    S2 = np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    assert monotonic_dtw(S2)[0].tolist() == [0, 0, 2]


def test_monotone_beats_greedy_when_greedy_is_not_monotone():
    # greedy argmax per column = [1, 0]: not monotone; best monotone: [0, 0] (0.9 + 1.0) vs [1, 1] (1.0 + 0.2)
    S = np.array([[0.9, 1.0], [1.0, 0.2]])
    mapping, total = monotonic_dtw(S)
    assert mapping.tolist() == [0, 0] and total == pytest.approx(1.9)


def test_optimal_against_brute_force():
    rng = np.random.default_rng(7)
    for _ in range(100):
        m, n = rng.integers(1, 5), rng.integers(1, 7)
        S = rng.standard_normal((m, n))
        mapping, total = monotonic_dtw(S)
        _, best = brute_force_mapping(S)
        assert total == pytest.approx(best)
        assert np.all(np.diff(mapping) >= 0)
        assert total == pytest.approx(S[mapping, np.arange(n)].sum())


def test_kl_similarity_on_synthetic_attention():
    rng = np.random.default_rng(0)
    L = 64
    base = rng.dirichlet(np.ones(L), size=3)             # 3 distinct "attention patterns"
    draft = base                                          # draft layers 0, 1, 2
    verifier = base[[0, 0, 1, 2, 2]] * 0.9 + 0.1 / L      # verifier layers drift slightly from the patterns
    S = kl_similarity(draft, verifier)
    assert S.shape == (3, 5) and np.all(S <= 1e-9)        # -KL <= 0
    assert kl_similarity(base, base).diagonal() == pytest.approx(0.0, abs=1e-9)
    assert monotonic_dtw(S)[0].tolist() == [0, 0, 1, 2, 2]


def test_rejects_empty():
    with pytest.raises(ValueError):
        monotonic_dtw(np.zeros((0, 3)))
