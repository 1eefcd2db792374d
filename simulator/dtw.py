"""Layer mapping for SpecAttn: KL-divergence similarity and the monotonic dynamic time warping of the
SpecAttn paper's appendix B (Algorithm 3).

Given S[i, j] = similarity of draft layer i and verifier layer j, find f: verifier layers -> draft layers,
non-decreasing (f(j1) <= f(j2) for j1 < j2; draft layers may be skipped or repeated), maximizing
sum_j S[f(j), j]. Algorithm 3 in the paper's 1-indexed form, with D = -S:

    dp[0, 0] = 0, every other entry = +inf
    dp[i, j] = D[i-1, j-1] + min(dp[i-1, j-1]          diagonal: match current layers
                                 dp[i,   j-1]          left: repeat the draft layer
                                 min_{k=0..i} dp[k, j-1])   above: skip draft layers
    answer = min_i dp[i, n], backtracked to the mapping.
(The 'above' option contains the other two, so dp[i, j] = D[i-1, j-1] + min_{k<=i} dp[k, j-1]; the code
keeps the three options to mirror the paper and records which one won.)
"""
from __future__ import annotations

import numpy as np


def kl_similarity(draft_attn: np.ndarray, verifier_attn: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    """S[i, j] = -KL(A_v[j] || A_d[i]) (SpecAttn eq. 4) for attention distributions of shape
    [draft layers, L] and [verifier layers, L] (each row sums to 1)."""
    d = np.asarray(draft_attn, dtype=np.float64) + eps
    v = np.asarray(verifier_attn, dtype=np.float64) + eps
    d = d / d.sum(axis=1, keepdims=True)
    v = v / v.sum(axis=1, keepdims=True)
    # KL(v_j || d_i) = sum_k v_j[k] (log v_j[k] - log d_i[k])
    ent = (v * np.log(v)).sum(axis=1)                 # [n]
    cross = np.log(d) @ v.T                           # [m, n]: sum_k v_j[k] log d_i[k]
    return -(ent[None, :] - cross)


def monotonic_dtw(S: np.ndarray) -> tuple[np.ndarray, float]:
    """(mapping, total score): mapping[j] = the draft layer (0-based) for verifier layer j."""
    S = np.asarray(S, dtype=np.float64)
    if S.ndim != 2 or 0 in S.shape:
        raise ValueError(f"similarity matrix must be 2-D and non-empty, got shape {S.shape}")
    m, n = S.shape
    D = -S
    dp = np.full((m + 1, n + 1), np.inf)
    dp[0, 0] = 0.0
    back = np.zeros((m + 1, n + 1), dtype=np.int64)  # the row k of column j-1 this cell came from
    for j in range(1, n + 1):
        prev = dp[:, j - 1]
        best_k = 0
        for i in range(1, m + 1):
            if prev[i] < prev[best_k]:
                best_k = i
            cost = D[i - 1, j - 1]
            diagonal = prev[i - 1] + cost
            left = prev[i] + cost
            above = prev[best_k] + cost  # min over k = 0..i
            options = ((diagonal, i - 1), (left, i), (above, best_k))
            val, src = min(options, key=lambda o: o[0])
            dp[i, j], back[i, j] = val, src
    i = int(np.argmin(dp[1:, n])) + 1
    total = -float(dp[i, n])
    mapping = np.zeros(n, dtype=np.int64)
    for j in range(n, 0, -1):
        mapping[j - 1] = i - 1
        i = int(back[i, j])
    return mapping, total


def brute_force_mapping(S: np.ndarray) -> tuple[np.ndarray, float]:
    """Exhaustive search over every non-decreasing mapping (tests only: C(m + n - 1, n) candidates)."""
    import itertools

    S = np.asarray(S, dtype=np.float64)
    m, n = S.shape
    best, best_map = -np.inf, None
    for combo in itertools.combinations_with_replacement(range(m), n):
        score = float(sum(S[i, j] for j, i in enumerate(combo)))
        if score > best:
            best, best_map = score, np.array(combo)
    return best_map, best
