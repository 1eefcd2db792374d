"""SSV's online strategy switching per request in the engine (`serving.adaptation`; simulator/adaptation.py holds
the mechanism: "profile-guided prompt-adaptive orchestration", SSV document, Core Mechanism 3).

    serving:
      adaptation:
        candidates:                       # speculation tuples a request may switch to, besides the replica's own
          - {speculation: {eagle3: {k: 4, tree: {branch: 2, depth: 2, nodes: 4}, acceptance: 0.4}}}
        acceptance: {uniform: [0.2, 0.9]} # each request's true per-position acceptance (or {fixed: a})
        eps: 0.1                          # switch threshold on |alpha_bar - alpha_hat| (simulator.adaptation)
        window: 8                         # rounds between checks

Every request starts on the replica's own tuple (candidate 0: the offline choice) with alpha_hat = its profiled
acceptance. Each of its speculative rounds draws the accepted drafts from its CURRENT candidate's accept-length
distribution at the request's TRUE acceptance (simulator.adaptation.Candidate.length_dist), adds the round to its
likelihood over the 401-point acceptance grid, and every `window` rounds takes alpha_bar (the maximum-likelihood
acceptance of all its rounds so far); when |alpha_bar - alpha_hat| > eps it re-scores every candidate at alpha_bar
(expected tokens per round / the round's price: a decode step of the current batch at the request's context on
that candidate) and moves to the best; alpha_hat becomes alpha_bar. Exactly simulate_prompt's rule, per request
inside the batch.

A step whose decode rows run different candidates costs body(R) + head(L) (the replica's tables) + for each
candidate k its decode ops over its b_k rows (mean and longest context of those rows) + the step's chunks. The
candidates must verify the SAME number of draft tokens per round as the replica's tuple (the scheduler's token and
block accounting is per replica: num_spec_tokens, lookahead); tuples that differ in tree shape, acceptance profile,
verify kernel, schedule or attention qualify, a different draft count is refused with a one-line error.
The decode-run fast path is off while adaptation is on (every round is a step). Graph padding and the eager-overlap
rule are not applied to adaptive steps (their decode parts are priced per candidate group).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from hwmodels.errors import ScenarioError
from simulator.adaptation import ALPHA_GRID, Candidate
from simulator.combo import combo_refusal
from simulator.sections import one_strategy

CANDIDATE_AXES = ("speculation", "verify_kernel", "schedule", "attention", "topk", "kv_policy")


@dataclass
class AdaptationConfig:
    candidates: list = field(default_factory=list)   # [{axis: raw scenario value}]
    low: float = 0.0
    high: float = 1.0
    eps: float = 0.1
    window: int = 8


def parse_adaptation(v: Any, file: str) -> AdaptationConfig | None:
    fld = "serving.adaptation"
    if v is None:
        return None
    if not isinstance(v, dict):
        raise ScenarioError("must be a mapping {candidates: [...], acceptance: ..., eps: ..., window: ...}", file=file,
                            field=fld)
    bad = [k for k in v if k not in ("candidates", "acceptance", "eps", "window")]
    if bad:
        raise ScenarioError(f"unknown key(s) {sorted(map(str, bad))}; allowed: acceptance, candidates, eps, window",
                            file=file, field=fld)
    cands = v.get("candidates")
    if not isinstance(cands, list) or not cands:
        raise ScenarioError("must list at least one candidate tuple ({speculation: ..., verify_kernel: ...})",
                            file=file, field=f"{fld}.candidates")
    for i, c in enumerate(cands):
        if not isinstance(c, dict) or not c or any(k not in CANDIDATE_AXES for k in c):
            raise ScenarioError(f"must map strategy axes ({', '.join(CANDIDATE_AXES)}) to values, got {c!r}",
                                file=file, field=f"{fld}.candidates[{i}]")
    acc = v.get("acceptance", {"uniform": [0.0, 1.0]})
    if isinstance(acc, dict) and set(acc) == {"fixed"}:
        lo = hi = acc["fixed"]
    elif isinstance(acc, dict) and set(acc) == {"uniform"} and isinstance(acc["uniform"], list) \
            and len(acc["uniform"]) == 2:
        lo, hi = acc["uniform"]
    else:
        raise ScenarioError(f"is {acc!r}; allowed: {{uniform: [low, high]}} or {{fixed: a}}", file=file,
                            field=f"{fld}.acceptance")
    for x in (lo, hi):
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not 0.0 <= x <= 1.0:
            raise ScenarioError(f"acceptance values must lie in [0, 1], got {x!r}", file=file, field=f"{fld}.acceptance")
    if lo > hi:
        raise ScenarioError(f"low {lo} above high {hi}", file=file, field=f"{fld}.acceptance")
    eps = v.get("eps", 0.1)
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0.0 <= eps <= 1.0:
        raise ScenarioError(f"must be a number in [0, 1], got {eps!r}", file=file, field=f"{fld}.eps")
    w = v.get("window", 8)
    if isinstance(w, bool) or not isinstance(w, int) or not 1 <= w <= 100_000:
        raise ScenarioError(f"must be a whole number in [1, 100000], got {w!r}", file=file, field=f"{fld}.window")
    return AdaptationConfig(candidates=list(cands), low=float(lo), high=float(hi), eps=float(eps), window=int(w))


def candidate_combos(combo, cfg: AdaptationConfig, file: str, fld: str) -> list:
    """The replica's combo (candidate 0) and each candidate tuple applied to it; every one must verify the same
    number of drafts per round and not be refused."""
    base = int(combo.speculation.draft_tokens)
    if base < 1:
        raise ScenarioError("per-request switching needs a speculative replica (its speculation drafts tokens)",
                            file=file, field=fld)
    out = [combo]
    for i, c in enumerate(cfg.candidates):
        axes = {a: one_strategy(a, val, file, f"{fld}.candidates[{i}].{a}") for a, val in c.items()}
        cc = replace(combo, **axes)
        reason = combo_refusal(cc)
        if reason:
            raise ScenarioError(f"this candidate cannot run: {reason}", file=file, field=f"{fld}.candidates[{i}]")
        if int(cc.speculation.draft_tokens) != base:
            raise ScenarioError(f"verifies {int(cc.speculation.draft_tokens)} drafts per round, the replica's tuple {base}: "
                                "per-request switching keeps the scheduler's per-replica draft count (equal drafts "
                                "per round only)", file=file, field=f"{fld}.candidates[{i}]")
        out.append(cc)
    return out


class Adaptive:
    """Per-group switching state: candidates (combo, cost model, simulator.adaptation.Candidate) and per-request
    (candidate, true alpha, alpha_hat, likelihood, rounds since the last check, switches)."""

    def __init__(self, combos: list, costs: list, cfg: AdaptationConfig, rng: np.random.Generator):
        self.cfg = cfg
        self.costs = costs
        self.cands = [Candidate(combo=c, label=c.strategy_label(), round_s=1.0, batch=1.0,
                                alpha_hat=c.speculation.acceptance_hat()) for c in combos]
        self.rng = rng
        self.state: dict = {}
        self._cdf: dict = {}
        self.drafts = int(costs[0].query_rows) - 1

    def admit(self, rid: int) -> None:
        a = float(self.rng.uniform(self.cfg.low, self.cfg.high)) if self.cfg.high > self.cfg.low else self.cfg.low
        self.state[rid] = [0, a, self.cands[0].alpha_hat, np.zeros(len(ALPHA_GRID)), 0, 0]

    def switches(self, rid: int) -> int:
        s = self.state.get(rid)
        return s[5] if s is not None else 0

    # ---- pricing ----------------------------------------------------------------------------------------------
    def step_s(self, plan, cost) -> float:
        """body + head (the replica's tables) + each candidate group's decode ops + the chunks."""
        R, L = plan.total_tokens, plan.logit_rows
        mixed = bool(plan.chunks)
        t = cost.base_s(R, L, mixed)
        groups: dict = {}
        for i, r in enumerate(plan.reqs):
            if plan.is_decode[i]:
                g = groups.setdefault(self.state[r.rid][0], [0, 0.0, 0.0])
                ctx = plan.context_before[i] + 1
                g[0] += 1
                g[1] += ctx
                g[2] = max(g[2], ctx)
        for k, (b, s, mx) in groups.items():
            t += self.costs[k].decode_s(b, s / b, mixed, mx)
        return cost.add_prefill_s(t, plan)

    # ---- rounds -------------------------------------------------------------------------------------------------
    def draw(self, plan) -> list:
        """Accepted drafts for every scheduled request (0 for prefill chunks): its candidate at its true alpha."""
        out = []
        u = self.rng.random(len(plan.reqs))
        for i, r in enumerate(plan.reqs):
            if not plan.is_decode[i]:
                out.append(0)
                continue
            st = self.state[r.rid]
            key = (st[0], st[1])
            cdf = self._cdf.get(key)
            if cdf is None:
                cdf = self._cdf[key] = np.cumsum(self.cands[st[0]].length_dist(st[1]))
            out.append(min(int(np.searchsorted(cdf, u[i], side="right")), plan.drafts[i]))
        return out

    def update(self, plan, accepted: list, batch: int, cost) -> None:
        """Every decode row's round enters its request's likelihood; every `window` rounds the request may switch
        (module docstring), pricing a pure decode step of `batch` requests with the replica's cost model (its body
        and head) and each candidate's decode ops."""
        cfg = self.cfg
        for i, r in enumerate(plan.reqs):
            if not plan.is_decode[i]:
                continue
            st = self.state[r.rid]
            logp = self.cands[st[0]].log_length_probs()
            st[3] += logp[:, min(int(accepted[i]), logp.shape[1] - 1)]
            st[4] += 1
            if st[4] < cfg.window:
                continue
            st[4] = 0
            alpha_bar = float(ALPHA_GRID[int(np.argmax(st[3]))])
            if abs(alpha_bar - st[2]) > cfg.eps:
                ctx = float(plan.context_before[i] + 1)
                rows = batch * cost.query_rows
                base = cost.base_s(rows, rows)
                rates = [float(c.tokens(alpha_bar)[0]) / (base + self.costs[k].decode_s(batch, ctx, False, ctx))
                         for k, c in enumerate(self.cands)]
                best = int(np.argmax(rates))
                if best != st[0] and rates[best] > rates[st[0]] * (1.0 + 1e-12):
                    st[0] = best
                    st[5] += 1
                st[2] = alpha_bar

