"""Per-step replay of a scenario trace in a serving run (serving.trace_replay: per_step | mean).

With `trace:`, the strategies price a decode step from the trace's statistics (combo.trace). The step-cost surfaces
(simulator.engine.step_cost) hold the MEAN-statistics price: every step of a run at the same (batch, context)
costs the same. Under `per_step` (the default when the scenario has a trace) each decode step instead draws the
inputs its strategies read from the trace's per-step, per-layer distributions, cycled with the run's seed:

    what is replayed   each strategy's Strategy.trace_replay(combo) (a simulator.strategies.base.ReplayInputs):
                       GVR top-k: the launch passes of every layer (topk.py); SSV: the group unions of every
                       layer (verify_kernels.py). Accepted draft lengths have their own replay
                       (serving.acceptance: trace). Everything else keeps the mean.
    how it is priced   the strategy's trace-driven ops (ReplayInputs.ops, by op name) are priced at each input
                       LEVEL once (one vectorized call over the levels: ReplayInputs.level_ops; or a cost
                       proportional to the level), giving c[v]; a step whose units take the levels with
                       weights W_i[v] costs its mean-statistics price plus

                           part(b, T) x (f_i - 1),   f_i = W_i . c / E . c

                       where E[v] is the weights' expectation (what the mean-statistics run prices) and
                       part(b, T) the time of those ops in the step at batch b and mean context T (priced from
                       the same op model, on a grid in T from 256 tokens, interpolated; exact in b). E[f_i] = 1 by construction
                       of the draws: the mean-statistics run is the expectation of the per-step run (to first
                       order where the step cost is a max of host and device time).
    sequences          per (part, batch level, context level) a factor sequence of SEQ_STEPS steps, drawn once
                       (seeded by the run's seed and the levels, so independent of the order steps ask for them);
                       each replica starts at its own seeded offset and advances one entry per decode step,
                       cycling. A decode run of n steps takes n consecutive entries in one numpy slice: no
                       per-step Python in the hot path.

The trace statistics keep each layer's distribution over its recorded (step, head) values, not their order
(simulator.traces.stats: sorted subsamples): consecutive steps draw independently, and so do layers, sequences and
KV heads (ASSUMPTION, stated by each strategy). A trace-driven part whose ops do not occur in a step (GVR outside its
dispatch window, a fused refresh/reuse kernel) has part(b, T) = 0 there: nothing moves.
"""
from __future__ import annotations

import math

import numpy as np

from hwmodels.roofline import price
from simulator.ops import OpBuilder
from simulator.strategies.base import AXES

#: length of a factor sequence (steps) before it cycles
SEQ_STEPS = 4096
#: ratio between context points of the part-time grid (linear interpolation between them)
CTX_RATIO = 1.1
#: the grid's first context: shorter contexts take its value (the part's time changes little below it, and only
#: its product with the factor's deviation from 1 enters a step)
CTX_LOW = 256.0
#: batch sizes above this are replayed at the nearest level of ratio 2^(1/4) (factor sequences are per level)
EXACT_BATCH = 8
#: context levels of the factor sequences: ratio 2^(1/4)
LEVEL_STEPS_PER_OCTAVE = 4
#: modes of serving.trace_replay
MODES = ("per_step", "mean")


def _level(x: float, exact: int = 0) -> float:
    """x rounded to a level: exact up to `exact`, else the nearest point of ratio 2^(1/LEVEL_STEPS_PER_OCTAVE)."""
    if x <= exact:
        return float(max(1, round(x)))
    return float(2.0 ** (round(math.log2(max(x, 1.0)) * LEVEL_STEPS_PER_OCTAVE) / LEVEL_STEPS_PER_OCTAVE))


class ReplayPart:
    """One strategy's replayed inputs (ReplayInputs) priced on one replica group's cost model."""

    def __init__(self, inputs, cost, seed: int, key: tuple):
        self.inputs = inputs
        self.cost = cost
        self.seed = int(seed)
        self.key = tuple(key)
        self.prefixes = tuple(inputs.ops)
        hi = max(float(cost.max_context) + cost.query_rows + 1.0, 2.0)
        lo = min(CTX_LOW, hi / 2.0)
        n = int(math.ceil(math.log(hi / lo) / math.log(CTX_RATIO))) + 1
        self.t_grid = np.unique(np.minimum(lo * CTX_RATIO ** np.arange(n), hi))
        self._log_t = np.log(self.t_grid)
        self._part: dict = {}
        self._seq: dict = {}

    # ---- the trace-driven ops' time in a step ---------------------------------------------------------------
    def part_row(self, batch: int) -> np.ndarray:
        """Time of the trace-driven ops at `batch` rows over the context grid (priced once per batch)."""
        row = self._part.get(batch)
        if row is None:
            row = self._part[batch] = self.cost.price_decode_part(np.full(len(self.t_grid), float(batch)),
                                                                  self.t_grid, self.prefixes)
        return row

    def part_s(self, batch: int, ctx) -> np.ndarray:
        """part(b, T) at mean contexts `ctx` (array), linear in log T between grid points."""
        return np.interp(np.log(np.maximum(np.asarray(ctx, dtype=np.float64), 1.0)), self._log_t, self.part_row(batch))

    # ---- factor sequences -----------------------------------------------------------------------------------
    def level_costs(self, batch: float, ctx: float) -> np.ndarray:
        """c[v]: the time of one unit's trace-driven ops at each input level (or the level itself)."""
        inp = self.inputs
        if inp.level_ops is None:
            return np.asarray(inp.levels, dtype=np.float64)
        b = OpBuilder(len(inp.levels))
        inp.level_ops(b, batch, ctx)
        if not b._blocks:
            return np.asarray(inp.levels, dtype=np.float64)
        ops = b.build()
        t = price(ops, self.cost.combo.hardware, self.cost.decode_launch)
        return np.bincount(ops.setting, weights=t, minlength=ops.n_settings)

    def factors(self, batch: int, ctx: float) -> np.ndarray:
        """The factor sequence f (SEQ_STEPS entries, mean 1 in expectation) at the levels of (batch, ctx)."""
        bl, cl = _level(batch, EXACT_BATCH), _level(ctx)
        f = self._seq.get((bl, cl))
        if f is None:
            f = self._seq[(bl, cl)] = self.sequence(int(round(bl)), cl)
        return f

    def sequence(self, batch: int, ctx: float, n: int = SEQ_STEPS) -> np.ndarray:
        rng = np.random.default_rng([self.seed, 0x7E, *self.key, int(batch), int(round(ctx))])
        inp = self.inputs
        c = self.level_costs(batch, ctx)
        e = float(np.asarray(inp.expected(batch, ctx), dtype=np.float64) @ c)
        if not e > 0:
            return np.ones(n)
        w = np.asarray(inp.draws(batch, ctx, n, rng), dtype=np.float64)
        return (w @ c) / e


class GroupReplay:
    """The replayed parts of one replica group (a tuple can have several: each multiplies its own ops)."""

    def __init__(self, parts: list[ReplayPart], seed: int):
        self.parts = parts
        self.seed = int(seed)

    def labels(self) -> list[str]:
        return [p.inputs.label for p in self.parts]

    def cursor(self, replica: int) -> Cursor:
        start = int(np.random.default_rng([self.seed, 0x7F, int(replica)]).integers(0, SEQ_STEPS))
        return Cursor(self, start)


class Cursor:
    """Where one replica is in its group's factor sequences: advances one entry per decode step."""

    __slots__ = ("replay", "pos")

    def __init__(self, replay: GroupReplay, pos: int):
        self.replay = replay
        self.pos = int(pos)

    def run_delta(self, batch: int, ctx) -> np.ndarray:
        """Seconds to add to each of the next len(ctx) decode steps of `batch` rows at mean contexts `ctx` (the
        steps are not taken: advance() takes those that ran)."""
        ctx = np.asarray(ctx, dtype=np.float64)
        n = len(ctx)
        idx = (self.pos + np.arange(n)) % SEQ_STEPS
        out = np.zeros(n)
        for p in self.replay.parts:
            f = p.factors(int(batch), float(ctx[0]))
            out += p.part_s(int(batch), ctx) * (f[idx] - 1.0)
        return out

    def step_delta(self, batch: int, ctx: float) -> float:
        return float(self.run_delta(batch, np.array([ctx]))[0])

    def advance(self, steps: int) -> None:
        self.pos = (self.pos + int(steps)) % SEQ_STEPS


def group_replay(combo, cost, mode: str, seed: int, group: int) -> GroupReplay | None:
    """The per-step replay of a replica group under serving.trace_replay `mode`, or None (mode mean, no trace, or
    no strategy of the tuple reads a per-step input from it)."""
    if mode != "per_step" or combo.trace is None:
        return None
    parts = []
    for i, axis in enumerate(AXES):
        inp = getattr(combo, axis).trace_replay(combo)
        if inp is not None:
            parts.append(ReplayPart(inp, cost, seed, (int(group), i)))
    return GroupReplay(parts, seed) if parts else None


# ---- reporting ---------------------------------------------------------------------------------------------------
def replay_notes(engine) -> list[str]:
    """One line per replica group: what its decode steps replay from the trace (or that nothing varies)."""
    cfg = engine.cfg
    if cfg.trace_replay != "per_step":
        return []
    out = []
    for g in engine.groups:
        ts = g.combo.trace
        if g.replay is None:
            out.append(f"trace replay: group {g.index} ({g.label}) reads no per-step input from trace "
                       f"{ts.name if ts is not None else '-'}: every step at the trace's mean statistics")
        else:
            out.append(f"trace replay: group {g.index} draws per decode step from trace {ts.name}: "
                       + "; ".join(g.replay.labels()) + f" (seed {cfg.seed}, cycled every {SEQ_STEPS} steps)")
    return out


def comparison_text(per_step: dict, mean: dict) -> str:
    """p50 / p99 TPOT and goodput of the per-step replay beside the mean-statistics run (two summaries)."""
    rows = (("TPOT p50 ms", "tpot_p50_ms"), ("TPOT p99 ms", "tpot_p99_ms"), ("goodput req/s", "goodput_req_s"))
    lines = ["trace replay          per-step        mean      change",
             "-" * 56]
    for label, key in rows:
        a, b = float(per_step.get(key, math.nan)), float(mean.get(key, math.nan))
        ch = (a / b - 1.0) * 100.0 if b else math.nan
        lines.append(f"{label:<18}{a:>12.4f}{b:>12.4f}{ch:>+10.4f} %")
    return "\n".join(lines)
