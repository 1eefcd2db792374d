"""Online strategy adaptation for speculative decoding: rank strategy tuples offline, switch per prompt online.

The mechanism is SSV's "profile-guided prompt-adaptive orchestration" (SSV document "Core Mechanism 3"), but
nothing in it is specific to SSV's kernels.

Offline: every candidate strategy tuple (speculation x verify kernel x schedule ...) is priced with
simulator.pricing for each context regime (8K/16K/32K/64K by default) and ranked by expected accepted tokens per
second at its profiled acceptance (the speculation's `acceptance` parameter):
    tokens/s = batch x E[tokens per round](alpha_hat) / round time.
Refused tuples (simulator.combo.combo_refusal) are counted with their reason, never dropped silently.

Online: a prompt starts with its regime's top-ranked tuple. Every round draws the accepted length L of the
current tuple from the prompt's true acceptance alpha_r (simulator.acceptance: P(L >= l) of its chain or tree).
The running acceptance alpha_bar is the maximum-likelihood alpha of every round of the prompt so far (on a
401-point grid: sum over rounds of log P_alpha(L_i) under the tuple that ran that round; a chain's P(L = j) =
alpha^j (1 - alpha), j < K), checked every `window` rounds. When |alpha_bar - alpha_hat| > eps (document: "If
|alpha_bar - alpha_hat| > epsilon, SSV re-scores candidates and switches"), every candidate is re-scored at
alpha_bar and the best one taken; alpha_hat becomes alpha_bar. Round times do not depend on acceptance.
(The earlier estimator inverted the tuple's tokens-per-round curve tau(alpha) from the mean of the last 8
rounds; a tree's tau is nearly flat in alpha, so noise in the mean swung alpha_bar to the ends of [0, 1] and the
planner thrashed: -5.5 % at alpha = alpha_hat, 118 switches over 16 prompts. A likelihood over 8 rounds alone
still switched 75 times there (-2.6 %); pooling the prompt's rounds is what removes the thrashing.)

Planning gain = throughput with online switching / throughput of the fixed offline-best tuple - 1, both
simulated over the same prompts (document: "comparing SSV with a fixed (offline best) strategy vs. SSV with
online adaptation"; it reports 33.2 %). `oracle_gain` gives the upper bound: each prompt on the tuple that is
best at its true acceptance.

Randomness only through the numpy Generator passed in; the same seed gives the same switches.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace

import numpy as np

from hwmodels.errors import ScenarioError
from simulator.acceptance import TreeShape, accept_length_dist
from simulator.combo import Combo, combo_refusal
from simulator.pricing import price_combo

REGIMES = (8192, 16384, 32768, 65536)
ALPHA_GRID = np.linspace(0.0, 1.0, 401)


def _shape(combo: Combo) -> TreeShape:
    """The speculation's tree, or its chain as a tree of branch 1."""
    s = combo.speculation
    t = s.tree_shape()
    return t if t is not None else TreeShape(1, s.chain_length(), 0, alpha=s.acceptance_hat(), decay=1.0)


@dataclass
class Candidate:
    """One ranked strategy tuple in one context regime."""

    combo: Combo
    label: str
    round_s: float          # one round (drafting + verification) for the whole batch
    batch: float
    alpha_hat: float        # profiled acceptance
    _grid: np.ndarray | None = field(default=None, repr=False)   # [G, levels]: P(L >= l) on ALPHA_GRID
    _logp: np.ndarray | None = field(default=None, repr=False)
    _grid_rate: np.ndarray | None = field(default=None, repr=False)

    @property
    def grid_mass(self) -> np.ndarray:
        if self._grid is None:
            self._grid = _shape(self.combo).level_mass_grid(ALPHA_GRID)
        return self._grid

    def length_dist(self, alpha) -> np.ndarray:
        """P(L = j), j = 0..levels, at acceptance alpha (scalar -> [levels + 1]; array -> [A, levels + 1]),
        linear between the 401 grid points (accurate to ~1e-5)."""
        a = np.clip(np.asarray(alpha, dtype=np.float64), 0.0, 1.0) * (len(ALPHA_GRID) - 1)
        i0 = np.minimum(a.astype(np.int64), len(ALPHA_GRID) - 2)
        f = (a - i0)[..., None]
        m = self.grid_mass[i0] * (1.0 - f) + self.grid_mass[i0 + 1] * f
        return accept_length_dist(m)

    def exact_tokens(self, alpha) -> np.ndarray:
        """Expected tokens per round (bonus included), exact, for each alpha of an array."""
        return 1.0 + _shape(self.combo).level_mass_grid(np.atleast_1d(np.asarray(alpha, dtype=np.float64))).sum(axis=1)

    def tokens(self, alpha) -> np.ndarray:
        """Expected tokens per round, interpolated on the 401-point grid (accurate to ~1e-5 tokens)."""
        return np.interp(np.atleast_1d(np.asarray(alpha, dtype=np.float64)), ALPHA_GRID,
                         1.0 + self.grid_mass.sum(axis=1))

    def rate(self, alpha) -> np.ndarray:
        """Expected accepted tokens per second of the batch at acceptance alpha."""
        return self.batch * self.tokens(alpha) / self.round_s

    def grid_rate(self) -> np.ndarray:
        """[G]: expected accepted tokens/s of the batch at each ALPHA_GRID point (what a switch re-scores)."""
        if self._grid_rate is None:
            self._grid_rate = self.batch * (1.0 + self.grid_mass.sum(axis=1)) / self.round_s
        return self._grid_rate

    def log_length_probs(self) -> np.ndarray:
        """[G, levels + 1]: log P_alpha(L = j) on ALPHA_GRID."""
        if self._logp is None:
            self._logp = np.log(np.maximum(accept_length_dist(self.grid_mass), 1e-300))
        return self._logp

    def estimate_alpha(self, lengths) -> float:
        """Maximum-likelihood acceptance of observed accepted lengths under this tuple's chain/tree."""
        logp = self.log_length_probs()
        counts = np.bincount(np.asarray(lengths, dtype=np.int64), minlength=logp.shape[1])
        return float(ALPHA_GRID[int(np.argmax(logp @ counts))])


@dataclass
class Ranking:
    """Offline ranking per context regime, best first, and what was refused."""

    by_regime: dict[int, list[Candidate]]
    refused: Counter = field(default_factory=Counter)


def offline_rank(base: Combo, tuples: list[dict], batch: int, regimes=REGIMES, output_tokens: int = 256) -> Ranking:
    """Price every tuple (a dict axis -> Strategy applied to `base`) at each regime; rank by tokens/s.

    Tuples whose batch does not fit in memory at a regime are kept out of that regime's ranking."""
    regimes = tuple(int(r) for r in regimes)
    by: dict[int, list[Candidate]] = {r: [] for r in regimes}
    refused: Counter = Counter()
    ctx = np.array(regimes, dtype=np.float64)
    for axes in tuples:
        combo = replace(base, **axes)
        reason = combo_refusal(combo)
        if reason:
            refused[reason] += 1
            continue
        cols, _ = price_combo(combo, np.full(len(ctx), float(batch)), ctx, np.full(len(ctx), float(output_tokens)))
        alpha_hat = combo.speculation.acceptance_hat()
        for i, r in enumerate(regimes):
            if not bool(cols["fits"][i]):
                refused[f"batch {batch} does not fit at {r} tokens"] += 1
                continue
            by[r].append(Candidate(combo=combo, label=combo.strategy_label(), round_s=float(cols["step_ms"][i]) / 1e3,
                                   batch=float(batch), alpha_hat=alpha_hat))
    for r in regimes:
        by[r].sort(key=lambda c: -float(c.rate(c.alpha_hat)[0]))
    return Ranking(by_regime=by, refused=refused)


def regime_of(context: float, regimes=REGIMES) -> int:
    """The regime a prompt falls in: the smallest regime >= its context (the largest one beyond)."""
    for r in sorted(regimes):
        if context <= r:
            return r
    return max(regimes)


@dataclass
class PromptRun:
    tokens: float
    time_s: float
    rounds: int
    switches: int
    used: list[str]

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.time_s


def simulate_prompt(candidates: list[Candidate], alpha_seq, output_tokens: int, rng: np.random.Generator,
                    eps: float = 0.1, window: int = 8, adaptive: bool = True) -> PromptRun:
    """Generate `output_tokens` (per sequence) with the ranked `candidates` (best first).

    alpha_seq: the prompt's true per-position acceptance for each round (a scalar, or a sequence whose last
    value repeats). adaptive=False keeps the first candidate (the fixed offline-best strategy)."""
    if not candidates:
        raise ScenarioError("no candidate strategy tuple to simulate (all refused or out of memory)")
    if eps < 0 or window < 1:
        raise ScenarioError(f"eps must be >= 0 and window >= 1, got eps={eps}, window={window}")
    seq = np.atleast_1d(np.asarray(alpha_seq, dtype=np.float64))
    if np.any((seq < 0) | (seq > 1)):
        raise ScenarioError("acceptance values must lie in [0, 1]")
    rates = np.stack([c.grid_rate() for c in candidates]) if adaptive else None
    cur = 0
    alpha_hat = candidates[0].alpha_hat
    cdf_cache: dict[tuple[int, float], np.ndarray] = {}
    loglik = np.zeros(len(ALPHA_GRID))   # log-likelihood of the prompt's acceptance, every round so far
    since = 0
    tokens = time_s = 0.0
    rounds = switches = 0
    used = [candidates[0].label]
    while tokens < output_tokens:
        a = float(seq[min(rounds, len(seq) - 1)])
        key = (cur, a)
        if key not in cdf_cache:
            cdf_cache[key] = np.cumsum(candidates[cur].length_dist(a))
        accepted = int(np.searchsorted(cdf_cache[key], rng.random(), side="right"))
        tokens += 1.0 + accepted
        time_s += candidates[cur].round_s
        rounds += 1
        if not adaptive:
            continue
        loglik += candidates[cur].log_length_probs()[:, accepted]
        since += 1
        if since >= window:
            alpha_bar = float(ALPHA_GRID[int(np.argmax(loglik))])
            since = 0
            if abs(alpha_bar - alpha_hat) > eps:
                i = int(round(alpha_bar * (len(ALPHA_GRID) - 1)))
                best = int(np.argmax(rates[:, i]))
                if best != cur:
                    cur = best
                    switches += 1
                    used.append(candidates[cur].label)
                alpha_hat = alpha_bar
    return PromptRun(tokens=tokens, time_s=time_s, rounds=rounds, switches=switches, used=used)


def sample_prompt_alphas(rng: np.random.Generator, n: int, low: float, high: float) -> np.ndarray:
    """Per-prompt acceptance drawn uniformly from [low, high]."""
    if not 0 <= low <= high <= 1:
        raise ScenarioError(f"acceptance range must satisfy 0 <= low <= high <= 1, got [{low}, {high}]")
    return rng.uniform(low, high, size=n)


@dataclass
class PlanningResult:
    fixed_tokens_per_s: float
    adaptive_tokens_per_s: float
    switches: int
    prompts: int
    oracle_tokens_per_s: float = float("nan")

    @property
    def gain(self) -> float:
        return self.adaptive_tokens_per_s / self.fixed_tokens_per_s - 1.0

    @property
    def oracle_gain(self) -> float:
        return self.oracle_tokens_per_s / self.fixed_tokens_per_s - 1.0


def run_prompts(candidates: list[Candidate], alphas, output_tokens: int, seed: int, eps: float = 0.1,
                window: int = 8, adaptive: bool = True) -> tuple[float, int]:
    """Aggregate tokens/s (total tokens / total time, times the batch) over prompts with acceptance `alphas`;
    prompt i draws its rounds from Generator(seed + i), so fixed and adaptive runs see the same prompts (the
    fixed run is vectorized over prompts and rounds: the same draws as round-by-round simulation)."""
    alphas = np.atleast_1d(np.asarray(alphas, dtype=np.float64))
    if not adaptive:
        tok, rounds = fixed_prompts(candidates[0], alphas, output_tokens, seed)
        return candidates[0].batch * float(tok.sum()) / (float(rounds.sum()) * candidates[0].round_s), 0
    tok = t = 0.0
    sw = 0
    for i, a in enumerate(alphas):
        run = simulate_prompt(candidates, a, output_tokens, np.random.default_rng(seed + i), eps, window, adaptive)
        tok += run.tokens
        t += run.time_s
        sw += run.switches
    return candidates[0].batch * tok / t, sw


def fixed_prompts(c: Candidate, alphas: np.ndarray, output_tokens: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Tokens and rounds of each prompt on one fixed tuple: every prompt draws up to `output_tokens` rounds at
    once (a round yields >= 1 token) and stops at the first round whose cumulative tokens reach the output."""
    if np.any((alphas < 0) | (alphas > 1)):
        raise ScenarioError("acceptance values must lie in [0, 1]")
    n = int(output_tokens)
    u = np.stack([np.random.default_rng(seed + i).random(n) for i in range(len(alphas))])      # [P, n]
    cdf = np.cumsum(c.length_dist(alphas), axis=-1)                                          # [P, levels + 1]
    acc = (u[:, :, None] >= cdf[:, None, :]).sum(axis=-1)                                    # accepted drafts
    cum = np.cumsum(1 + acc, axis=1)
    rounds = np.argmax(cum >= n, axis=1) + 1
    return cum[np.arange(len(alphas)), rounds - 1].astype(np.float64), rounds.astype(np.float64)


def oracle_rate(candidates: list[Candidate], alphas, output_tokens: int) -> float:
    """Aggregate expected tokens/s when every prompt runs the tuple that is best at its TRUE acceptance."""
    a = np.atleast_1d(np.asarray(alphas, dtype=np.float64))
    tpr = np.stack([c.tokens(a) for c in candidates])                                 # [C, P]
    rate = tpr / np.array([c.round_s for c in candidates])[:, None]
    best = np.argmax(rate, axis=0)
    rounds = output_tokens / tpr[best, np.arange(len(a))]
    t = (rounds * np.array([c.round_s for c in candidates])[best]).sum()
    return candidates[0].batch * output_tokens * len(a) / float(t)


def planning_gain(candidates: list[Candidate], alphas, output_tokens: int, seed: int, eps: float = 0.1,
                  window: int = 8) -> PlanningResult:
    """Online switching vs the fixed offline-best tuple over the same prompts (and the oracle's bound)."""
    fixed, _ = run_prompts(candidates, alphas, output_tokens, seed, eps, window, adaptive=False)
    adaptive, sw = run_prompts(candidates, alphas, output_tokens, seed, eps, window, adaptive=True)
    fixed_expected = oracle_rate(candidates[:1], alphas, output_tokens)
    oracle = oracle_rate(candidates, alphas, output_tokens) * fixed / fixed_expected
    return PlanningResult(fixed_tokens_per_s=fixed, adaptive_tokens_per_s=adaptive, switches=sw,
                          prompts=len(np.atleast_1d(alphas)), oracle_tokens_per_s=oracle)
