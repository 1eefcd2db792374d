"""Speculative-decoding acceptance: expected tokens per round for chains and trees.

A round drafts candidate tokens, verifies them in one target forward, keeps the longest accepted prefix
and adds one bonus token sampled from the target (so a round always yields >= 1 token).

Chain of K drafts with per-position conditional acceptance probabilities a_1..a_K
(a_i = P(draft i accepted | drafts 1..i-1 accepted)):
    E[accepted drafts] = sum_{k=1..K} prod_{i<=k} a_i          (SSV document, "Expected accepted tokens")
    E[tokens / round]  = 1 + E[accepted drafts]                 (the bonus token)
With a_i = 0.8 and K = 4: 0.8 + 0.64 + 0.512 + 0.4096 = 2.3616 accepted, 3.3616 tokens per round (the
document's "~3.36 per verification round" counts the bonus token).

Trees. The children of a node are the draft's top-c candidates for the next position; the target takes ONE
token there, so at most one sibling can match: sibling matches are mutually exclusive, not independent.
    p_r = P(the target's token is the draft's rank-r candidate) = h_r prod_{i<r} (1 - h_i),
    h_r = a_l decay^(r-1)    (the conditional hit of rank r given ranks < r missed, at level l)
decay is an ASSUMPTION (SIBLING_DECAY, range [0, 1]; no published rank distribution for EAGLE-3 drafts):
decay = 1 makes P(rank <= c) = 1 - (1 - a)^c (the geometric model, every sibling as good as the first),
decay = 0 makes siblings worthless (a tree accepts like its best chain). A node's probability of being on
the accepted path is the product of p_r along its path, and since siblings exclude each other
    P(L >= l) = sum of those products over the nodes of level l,   E[tokens] = 1 + sum_l P(L >= l).
Pruning to a node budget keeps the `nodes` nodes of highest path probability at the shape's acceptance (the
draft's own confidence, EAGLE-2/3's global re-ranking of the tree by cumulative draft probability; a child
is never more probable than its parent, so the kept set is a tree). A pruned tree keeps its depth when its
deep nodes are more probable than wide ones: TreeShape(3, 3, 12) at a = 0.7 has levels [3, 4, 5].

An acceptance-length distribution P(L = j), j = 0..K accepted drafts, gives E[tokens] = 1 + sum j P(j).
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from hwmodels.errors import ScenarioError

#: ASSUMPTION: conditional hit of the draft's rank-r candidate decays by this factor per rank (see the module
#: docstring); the midpoint of the plausible range [0 (siblings never match), 1 (geometric)]. Sensitivity:
#: simulator/figures/ssv.py prints the SSV rows at 0, 0.5 and 1.
SIBLING_DECAY = 0.5


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


def sibling_probs(alpha, branch: int, decay: float = SIBLING_DECAY) -> np.ndarray:
    """P(target token = draft's rank-r candidate), r = 1..branch, for acceptance alpha (scalar or array:
    the result gets a trailing axis of length branch)."""
    a = np.asarray(alpha, dtype=np.float64)[..., None]
    h = a * decay ** np.arange(branch, dtype=np.float64)
    miss_before = np.cumprod(np.concatenate([np.ones_like(h[..., :1]), 1.0 - h[..., :-1]], axis=-1), axis=-1)
    return h * miss_before


@lru_cache(maxsize=512)
def _select(branch: int, depth: int, nodes: int, alpha: tuple, decay: float) -> tuple[tuple[int, ...], ...]:
    """The kept nodes as rank paths (1-based ranks), best first (see the module docstring)."""
    if nodes == 0:
        out, frontier = [], [()]
        for _ in range(depth):
            frontier = [p + (r,) for p in frontier for r in range(1, branch + 1)]
            out += frontier
        return tuple(out)
    probs = [sibling_probs(a, branch, decay) for a in alpha]
    heap = [(-float(probs[0][r - 1]), (r,)) for r in range(1, branch + 1)]
    heapq.heapify(heap)
    out: list[tuple[int, ...]] = []
    while heap and len(out) < nodes:
        neg, path = heapq.heappop(heap)
        out.append(path)
        lvl = len(path)
        if lvl < depth:
            for r in range(1, branch + 1):
                heapq.heappush(heap, (neg * float(probs[lvl][r - 1]), path + (r,)))
    return tuple(out)


@dataclass(frozen=True)
class TreeShape:
    """A draft tree: branching factor, depth, and a node budget (0 = the full tree of branch^l nodes per
    level). `alpha` (one value or one per level) and `decay` say which nodes a budget keeps (the draft's
    confidence ranking); evaluating acceptance at another alpha keeps the same tree."""

    branch: int
    depth: int
    nodes: int = 0
    alpha: float | tuple = 0.7
    decay: float = SIBLING_DECAY

    def _alphas(self) -> tuple:
        a = np.atleast_1d(np.asarray(self.alpha, dtype=np.float64))
        return tuple(float(x) for x in (np.full(self.depth, a[0]) if a.size == 1 else a[:self.depth]))

    def paths(self) -> tuple[tuple[int, ...], ...]:
        return _select(int(self.branch), int(self.depth), int(self.nodes), self._alphas(), float(self.decay))

    def widths(self) -> list[int]:
        """Nodes per level (levels without nodes dropped)."""
        counts = np.bincount([len(p) for p in self.paths()], minlength=self.depth + 1)[1:]
        return [int(c) for c in counts if c > 0]

    @property
    def size(self) -> int:
        """Draft nodes verified (the root, the last accepted token, is verified too: size + 1 rows)."""
        return len(self.paths())

    def level_mass(self, alpha) -> np.ndarray:
        """P(L >= l), l = 1..levels, at acceptance alpha: a scalar or one value per level."""
        levels = len(self.widths())
        a = np.atleast_1d(np.asarray(alpha, dtype=np.float64))
        a = np.full(levels, a[0]) if a.size == 1 else a
        return self._mass([sibling_probs(x, self.branch, self.decay) for x in a], ())

    def level_mass_grid(self, alphas) -> np.ndarray:
        """[A, levels]: P(L >= l) at each scalar acceptance of `alphas` (every level at that value)."""
        p = sibling_probs(np.asarray(alphas, dtype=np.float64), self.branch, self.decay)   # [A, branch]
        return self._mass([p] * len(self.widths()), (p.shape[0],))

    def _mass(self, per_level, lead: tuple) -> np.ndarray:
        out = np.zeros(lead + (len(self.widths()),))
        for path in self.paths():
            v = np.ones(lead)
            for lvl, r in enumerate(path):
                v = v * per_level[lvl][..., r - 1]
            out[..., len(path) - 1] += v
        return out


def tree_tokens_per_round(alpha, tree: TreeShape) -> float:
    """Expected tokens per round of a draft tree (module docstring); alpha a scalar or one per level."""
    a = np.atleast_1d(np.asarray(alpha, dtype=np.float64))
    levels = len(tree.widths())
    if a.size not in (1, levels):
        raise ScenarioError(f"acceptance lists {a.size} per-level probabilities for a tree of {levels} levels")
    if np.any((a < 0) | (a > 1)):
        raise ScenarioError(f"acceptance probabilities must lie in [0, 1], got {a.tolist()}")
    return float(1.0 + np.sum(tree.level_mass(a)))


def accept_length_dist(level_mass: np.ndarray) -> np.ndarray:
    """P(L = j), j = 0..levels, from P(L >= l), l = 1..levels (works row-wise on [A, levels])."""
    m = np.asarray(level_mass, dtype=np.float64)
    ge = np.concatenate([np.ones(m.shape[:-1] + (1,)), m, np.zeros(m.shape[:-1] + (1,))], axis=-1)
    return np.clip(ge[..., :-1] - ge[..., 1:], 0.0, 1.0)


def lengths_tokens_per_round(dist) -> float:
    """Expected tokens per round from P(L = j accepted drafts), j = 0..K."""
    p = np.asarray(dist, dtype=np.float64)
    if p.ndim != 1 or p.size < 2 or np.any(p < 0) or abs(p.sum() - 1.0) > 1e-6:
        raise ScenarioError(f"an acceptance-length distribution must be >= 2 non-negative numbers summing to 1, "
                            f"got {list(dist)}")
    return float(1.0 + (np.arange(p.size) * p).sum())
