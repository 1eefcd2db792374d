"""The SSV planner (SSV document, "Core Mechanism 3: Profile-Guided Prompt-Adaptive Orchestration").

Offline: every candidate strategy tuple (speculation x verify kernel x schedule on an NSA model) is priced
with simulator.pricing for each context regime (8K/16K/32K/64K by default) and ranked by expected accepted
tokens per second at its profiled acceptance (the speculation's `acceptance` parameter):
    tokens/s = batch x E[tokens per round](alpha_hat) / round time.
Refused tuples (simulator.planner.combo_refusal) are counted with their reason, never dropped silently.

Online: a prompt starts with its regime's top-ranked tuple. Every round draws the accepted drafts of the
current tuple from the prompt's true acceptance alpha_r (per-position Bernoulli; a tree level survives
with 1 - (1 - alpha)^children, simulator.acceptance). The running acceptance alpha_bar is the alpha at
which the current tuple's expected tokens per round equal the mean tokens of its last `window` rounds
(inverted on a grid). When |alpha_bar - alpha_hat| > eps (document: "If |alpha_bar - alpha_hat| > epsilon,
SSV re-scores candidates and switches"), every candidate is re-scored at alpha_bar and the best one
taken; alpha_hat becomes alpha_bar and the window restarts. Round times do not depend on acceptance.

Planning gain = throughput with online switching / throughput of the fixed offline-best tuple - 1, both
simulated over the same prompts (document: "comparing SSV with a fixed (offline best) strategy vs. SSV
with online adaptation"; it reports 33.2 %).

Randomness only through the numpy Generator passed in; the same seed gives the same switches.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace

import numpy as np

from hwmodels.errors import ScenarioError
from simulator.combo import Combo
from simulator.planner import combo_refusal
from simulator.pricing import price_combo

REGIMES = (8192, 16384, 32768, 65536)
_ALPHA_GRID = np.linspace(0.0, 1.0, 401)


@dataclass
class Candidate:
    """One ranked strategy tuple in one context regime."""

    combo: Combo
    label: str
    round_s: float          # one round (drafting + verification) for the whole batch
    batch: float
    alpha_hat: float        # profiled acceptance
    _curve: np.ndarray | None = field(default=None, repr=False)

    def survival(self, alpha: float) -> np.ndarray:
        """Probability that the accepted path survives each draft level (chain: each position)."""
        s = self.combo.speculation
        t = s.tree_shape()
        if t is None:
            return np.full(s.chain_length(), float(alpha))
        w = np.array(t.widths(), dtype=np.float64)
        parents = np.concatenate([[1.0], w[:-1]])
        return 1.0 - (1.0 - alpha) ** (w / parents)

    def tokens(self, alpha) -> np.ndarray:
        """Expected tokens per round (bonus included) at acceptance alpha (scalar or array): interpolated
        on a 401-point grid of exact values (simulator.acceptance), accurate to ~1e-5 tokens."""
        if self._curve is None:
            self._curve = self.exact_tokens(_ALPHA_GRID)
        return np.interp(np.atleast_1d(np.asarray(alpha, dtype=np.float64)), _ALPHA_GRID, self._curve)

    def exact_tokens(self, alpha) -> np.ndarray:
        """simulator.acceptance's chain / tree formulas, vectorized over alpha: 1 + sum over levels of the
        cumulative product of the per-level survival probabilities."""
        a = np.atleast_1d(np.asarray(alpha, dtype=np.float64))[:, None]
        s = self.combo.speculation
        t = s.tree_shape()
        if t is None:
            k = s.chain_length()
            surv = np.repeat(a, k, axis=1)
        else:
            w = np.array(t.widths(), dtype=np.float64)
            surv = 1.0 - (1.0 - a) ** (w / np.concatenate([[1.0], w[:-1]]))[None, :]
        return 1.0 + np.cumprod(surv, axis=1).sum(axis=1)

    def rate(self, alpha) -> np.ndarray:
        """Expected accepted tokens per second of the batch at acceptance alpha."""
        return self.batch * self.tokens(alpha) / self.round_s


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


def _rates_at(curves: np.ndarray, rate_factor: np.ndarray, alpha: float) -> np.ndarray:
    """Tokens/s of every candidate at `alpha` from their tokens-per-round curves on _ALPHA_GRID."""
    x = float(np.clip(alpha, 0.0, 1.0)) * (len(_ALPHA_GRID) - 1)
    i0 = min(int(x), len(_ALPHA_GRID) - 2)
    f = x - i0
    return rate_factor * (curves[:, i0] * (1.0 - f) + curves[:, i0 + 1] * f)


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
    curves = np.stack([c.tokens(_ALPHA_GRID) for c in candidates]) if adaptive else None
    rate_factor = np.array([c.batch / c.round_s for c in candidates])
    cur = 0
    alpha_hat = candidates[0].alpha_hat
    surv_cache: dict[tuple[int, float], np.ndarray] = {}
    recent: list[float] = []
    tokens = time_s = 0.0
    rounds = switches = 0
    used = [candidates[0].label]
    while tokens < output_tokens:
        a = float(seq[min(rounds, len(seq) - 1)])
        key = (cur, a)
        if key not in surv_cache:
            surv_cache[key] = candidates[cur].survival(a)
        surv = surv_cache[key]
        ok = rng.random(len(surv)) < surv
        accepted = int(np.argmin(ok)) if not ok.all() else len(surv)
        got = 1.0 + accepted
        tokens += got
        time_s += candidates[cur].round_s
        rounds += 1
        if not adaptive:
            continue
        recent.append(got)
        if len(recent) >= window:
            alpha_bar = float(np.interp(np.mean(recent[-window:]), curves[cur], _ALPHA_GRID))
            if abs(alpha_bar - alpha_hat) > eps:
                best = int(np.argmax(_rates_at(curves, rate_factor, alpha_bar)))
                if best != cur:
                    cur = best
                    switches += 1
                    used.append(candidates[cur].label)
                alpha_hat = alpha_bar
                recent = []
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

    @property
    def gain(self) -> float:
        return self.adaptive_tokens_per_s / self.fixed_tokens_per_s - 1.0


def run_prompts(candidates: list[Candidate], alphas, output_tokens: int, seed: int, eps: float = 0.1,
                window: int = 8, adaptive: bool = True) -> tuple[float, int]:
    """Aggregate tokens/s (total tokens / total time, times the batch) over prompts with acceptance `alphas`;
    prompt i draws its rounds from Generator(seed + i), so fixed and adaptive runs see the same prompts."""
    tok = t = 0.0
    sw = 0
    for i, a in enumerate(np.atleast_1d(alphas)):
        run = simulate_prompt(candidates, a, output_tokens, np.random.default_rng(seed + i), eps, window, adaptive)
        tok += run.tokens
        t += run.time_s
        sw += run.switches
    return candidates[0].batch * tok / t, sw


def planning_gain(candidates: list[Candidate], alphas, output_tokens: int, seed: int, eps: float = 0.1,
                  window: int = 8) -> PlanningResult:
    """Online switching vs the fixed offline-best tuple over the same prompts."""
    fixed, _ = run_prompts(candidates, alphas, output_tokens, seed, eps, window, adaptive=False)
    adaptive, sw = run_prompts(candidates, alphas, output_tokens, seed, eps, window, adaptive=True)
    return PlanningResult(fixed_tokens_per_s=fixed, adaptive_tokens_per_s=adaptive, switches=sw,
                          prompts=len(np.atleast_1d(alphas)))
