"""Speculative-decoding acceptance: expected tokens per round for chains and trees.

A round drafts candidate tokens, verifies them in one target forward, keeps the longest accepted prefix
and adds one bonus token sampled from the target (so a round always yields >= 1 token).

Chain of K drafts with per-position conditional acceptance probabilities a_1..a_K
(a_i = P(draft i accepted | drafts 1..i-1 accepted)):
    E[accepted drafts] = sum_{k=1..K} prod_{i<=k} a_i          (SSV document, "Expected accepted tokens")
    E[tokens / round]  = 1 + E[accepted drafts]                 (the bonus token)
With a_i = 0.8 and K = 4: 0.8 + 0.64 + 0.512 + 0.4096 = 2.3616 accepted, 3.3616 tokens per round (the
document's "~3.36 per verification round" counts the bonus token).

Tree of depth d whose level l holds w_l nodes: every accepted node at level l-1 has on average
c_l = w_l / w_{l-1} children (w_0 = 1, the root). Treating siblings as independent candidates that each
match the target with probability a_l, the path survives level l with probability 1 - (1 - a_l)^{c_l}.
This independence is an assumption (siblings are the draft's top-c alternatives, which overlap in
probability mass); it reduces to the chain formula when every c_l = 1.

An acceptance-length distribution P(L = j), j = 0..K accepted drafts, gives E[tokens] = 1 + sum j P(j).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hwmodels.errors import ScenarioError


def chain_tokens_per_round(alpha, k: int) -> float:
    """Expected tokens per round (bonus included) of a K-draft chain; alpha is a scalar or K values."""
    a = per_position(alpha, k)
    return float(1.0 + np.cumprod(a).sum())


def per_position(alpha, k: int) -> np.ndarray:
    """K per-position conditional acceptance probabilities from a scalar or a list."""
    a = np.atleast_1d(np.asarray(alpha, dtype=np.float64))
    if a.size == 1:
        a = np.full(k, float(a[0]))
    if a.size != k:
        raise ScenarioError(f"acceptance lists {a.size} per-position probabilities for {k} draft positions")
    if np.any((a < 0) | (a > 1)):
        raise ScenarioError(f"acceptance probabilities must lie in [0, 1], got {a.tolist()}")
    return a


@dataclass(frozen=True)
class TreeShape:
    """A draft tree: branching factor, depth, and a node budget that prunes it (0 = no pruning).

    Level widths grow by `branch` per level and are cut so that the levels together hold at most `nodes`
    nodes (beam pruning keeps the top-scored nodes of each level, EAGLE-2/3 style)."""

    branch: int
    depth: int
    nodes: int = 0

    def widths(self) -> list[int]:
        out, total, w = [], 0, 1
        for _ in range(self.depth):
            w = w * self.branch
            if self.nodes:
                w = min(w, self.nodes - total)
            if w <= 0:
                break
            out.append(w)
            total += w
        return out

    @property
    def size(self) -> int:
        """Draft nodes verified (the root, the last accepted token, is verified too: size + 1 rows)."""
        return sum(self.widths())


def tree_tokens_per_round(alpha, tree: TreeShape) -> float:
    """Expected tokens per round of a pruned draft tree (see module docstring)."""
    w = tree.widths()
    a = per_position(alpha, len(w))
    parents = np.array([1] + w[:-1], dtype=np.float64)
    children = np.array(w, dtype=np.float64) / parents
    survive = 1.0 - (1.0 - a) ** children
    return float(1.0 + np.cumprod(survive).sum())


def lengths_tokens_per_round(dist) -> float:
    """Expected tokens per round from P(L = j accepted drafts), j = 0..K."""
    p = np.asarray(dist, dtype=np.float64)
    if p.ndim != 1 or p.size < 2 or np.any(p < 0) or abs(p.sum() - 1.0) > 1e-6:
        raise ScenarioError(f"an acceptance-length distribution must be >= 2 non-negative numbers summing to 1, "
                            f"got {list(dist)}")
    return float(1.0 + (np.arange(p.size) * p).sum())
