"""Strategy axes and the registry every strategy module plugs into.

A strategy module defines subclasses of `Strategy` decorated with `@register`; importing the module is
all it takes (`registry()` imports every module in its folder the first time it is called). Each class declares:

    axis    which axis it is a value of (AXES below)
    name    its value name in scenario YAML
    params  {param: Param(default, source, check)} — defaults carry their source
    refuse(combo) -> reason or None          combinations that make no sense, with the reason
and the axis's hooks, which turn (model, setting) into Op rows:

    attention      decode_ops(b, combo, shape), prefill_ops(b, combo, shape), cached_tokens(combo, context);
                   declares selects_tokens (needs a top-k algorithm), routes_blocks (per-row selected
                   blocks: verify kernels and refresh/reuse schedules apply), precision_class(), and what of
                   the StepShape it reads beyond batch / query_rows / context / layers: reads_ctx_max,
                   reads_mixed, prices_kv_prefix
    speculation    round_plan(combo, batch, context) -> RoundPlan, prefill_draft_ops(b, combo, prompt);
                   draft_tokens, tree_shape(), chain_length(), acceptance_hat()
    topk           add_ops(b, combo, rows, length, k, layers, phase): the selection kernels of a
                   selects_tokens attention; `selects` False only for 'none'
    verify_kernel  loads(combo, R, S, T, n_blocks, block_tokens) -> Loads: how R verification rows load
                   the blocks a routes_blocks attention selected ('none': each row its own)
    schedule       refresh_layers(n_layers) -> int | None: layers that recompute their routing (None: no
                   schedule, every layer runs its own unfused kernels); is_refresh(n_layers)
    kv_policy      what the KV cache keeps: cached_tokens(combo, context) for memory,
                   attended_tokens(combo, kv_len) for the decode kernel, prefill_ops / decode_ops

Hooks take (b: simulator.ops.OpBuilder, combo: simulator.combo.Combo, shape: StepShape); an op a hook adds runs
shape.layers times per step (`count=shape.layers`). Axes never probe each other with getattr: a capability is a
declared class attribute, property or method of the axis base class, with a default every value inherits.
Nothing here reads hardware numbers (strategies may read `combo.target`, the facts software queries at run
time; see simulator.combo.TargetFacts).
"""
from __future__ import annotations

import importlib
import itertools
import pkgutil
from dataclasses import KW_ONLY, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar

import numpy as np

from hwmodels.errors import ScenarioError

if TYPE_CHECKING:
    from simulator.combo import Combo
    from simulator.ops import OpBuilder

AXES = ("attention", "topk", "speculation", "verify_kernel", "schedule", "kv_policy")
DEFAULT_VALUE = {"attention": "dense", "topk": "none", "speculation": "none", "verify_kernel": "none",
                 "schedule": "none", "kv_policy": "full"}


@dataclass(frozen=True)
class Param:
    """A strategy parameter: its default, where the default comes from, and a validity check."""

    default: Any
    source: str
    check: Callable[[Any], bool] | None = None
    allowed: str = ""  # what the check accepts, in words, for error messages
    list_valued: bool = False  # the value itself is a list: only a list of lists expands into a grid
    #: the value may be a path to a file: a relative one resolves against the scenario's folder when it is not
    #: found from the working folder (as hardware and model paths do)
    path_valued: bool = False


#: Most strategy values one axis may list, its entries' parameter lists expanded (their products): a bound of
#: work, each value is a strategy tuple of its own (benchmarks/price_speed.py sweeps 2,084 dense values)
MAX_AXIS_VALUES = 10_000

#: Largest magnitude any numeric strategy parameter may take: token counts, bytes, layers and probabilities
#: are all far below it; a value beyond it is a typo or an overflow, never a setting.
MAX_PARAM_MAGNITUDE = 1e12


def _generic_problem(v: Any, spec: "Param") -> str:
    """Problems every parameter shares, whatever its own check says: a boolean where the default is not
    one, a non-finite number, a magnitude beyond MAX_PARAM_MAGNITUDE (also inside lists)."""
    import math

    def one(x) -> str:
        if isinstance(x, bool):
            return "" if isinstance(spec.default, bool) else " (true/false is not a number)"
        if isinstance(x, float) and not math.isfinite(x):
            return " (not a finite number)"
        if isinstance(x, (int, float)) and abs(x) > MAX_PARAM_MAGNITUDE:
            return f" (magnitude beyond {MAX_PARAM_MAGNITUDE:g})"
        if isinstance(x, list):
            for y in x:
                r = one(y)
                if r:
                    return r
        if isinstance(x, dict):
            for y in x.values():
                r = one(y)
                if r:
                    return r
        return ""
    if isinstance(v, list) and not v and spec.default != []:
        return " (an empty list)"
    return one(v)


class Strategy:
    axis: ClassVar[str] = ""
    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    params: ClassVar[dict[str, Param]] = {}
    #: Sweeps price tuples that share a structure as one op table (docs/VECTOR_COMBOS.md): with
    #: array_combo = True every hook accepts a combo whose `tp` (and per-device head counts) are arrays with one
    #: value per setting; the params named in array_params may be such arrays too. Off by default: the
    #: strategy is then priced one tuple at a time, as before.
    array_combo: ClassVar[bool] = False
    array_params: ClassVar[tuple[str, ...]] = ()

    def __init__(self, **values: Any):
        unknown = set(values) - set(self.params)
        if unknown:
            raise ScenarioError(
                f"{self.axis} '{self.name}' has no parameter(s) {sorted(unknown)}; "
                f"allowed: {sorted(self.params) or 'none'}", field=f"strategies.{self.axis}")
        self.values: dict[str, Any] = {}
        #: the parameters the scenario set (the others took their defaults): an engine profile may fill a default the
        #: scenario left (RuntimeProfile.apply_attention), never one it set
        self.__dict__["given"] = frozenset(values)
        for p, spec in self.params.items():
            v = values.get(p, spec.default)
            bad = _generic_problem(v, spec)
            if bad or (spec.check is not None and not spec.check(v)):
                raise ScenarioError(f"{self.axis} '{self.name}': {p}={v!r} is invalid{bad}; allowed: "
                                    f"{spec.allowed or 'see `sparsesim strategies --sources`'}",
                                    field=f"strategies.{self.axis}.{self.name}.{p}")
            self.values[p] = v
        problem = self.param_problem()
        if problem:
            p, why = problem
            raise ScenarioError(f"{self.axis} '{self.name}': {why}", field=f"strategies.{self.axis}.{self.name}.{p}")

    def __getattr__(self, item):
        values = self.__dict__.get("values")
        if values is not None and item in values:
            return values[item]
        raise AttributeError(item)

    def label(self) -> str:
        changed = {k: v for k, v in self.values.items() if v != self.params[k].default}
        if not changed:
            return self.name
        return self.name + "(" + ",".join(f"{k}={v}" for k, v in changed.items()) + ")"

    def param_problem(self) -> tuple[str, str] | None:
        """A rule between this value's own parameters, whatever the model and hardware: (the parameter at fault,
        why) or None. Checked when the scenario is read, so a bad value stops with its file and field even
        beside valid ones in a list; never a skip at pricing time."""
        return None

    def model_problem(self, model) -> str | None:  # noqa: ARG002 - hook
        """Why this strategy, as such, cannot run on `model` whatever else the tuple holds (e.g. Quest on a GQA
        model), or None: a counted skip (simulator.combo.combo_refusal), like every refusal that depends on
        the rest of the tuple; a run where everything is skipped exits 3 with the reasons."""
        return None

    def param_model_problem(self, model) -> tuple[str, str] | None:  # noqa: ARG002 - hook
        """Why a PARAMETER choice of this value cannot run on `model` (the parameter, why), or None (e.g.
        gqa_expand: repeat_kv on an MLA model). A skip for models that refuse it, but an error naming the
        parameter's field when the scenario is read if no model of the scenario can take it: a mistyped
        parameter in a list is a mistake, not a setting to skip."""
        return None

    def refuse(self, combo: Combo) -> str | None:  # noqa: ARG002 - hook
        """A reason why this value cannot be combined with the rest of `combo` (another axis' value, the
        hardware, the parallelism), or None. Rules on its own parameters belong in param_problem, rules on
        the model alone in model_problem."""
        return None

    def extra_weight_bytes(self, combo: Combo) -> float:  # noqa: ARG002 - hook
        """Weight bytes this strategy adds on each device (a draft model, an indexer, ...)."""
        return 0.0

    def extra_kv_bytes_per_token(self, combo: Combo) -> float:  # noqa: ARG002 - hook
        """Cache bytes per context token this strategy adds on each device (a draft model's KV, ...)."""
        return 0.0

    def trace_replay(self, combo: Combo) -> ReplayInputs | None:  # noqa: ARG002 - hook
        """The per-step inputs this strategy reads from the scenario trace (combo.trace), for a serving run's
        per-step replay (simulator/engine/trace_replay.py), or None: its cost has no trace-driven part that varies
        from step to step (the default)."""
        return None

    def onchip_bytes(self, combo: Combo, batch: np.ndarray, context: np.ndarray):  # noqa: ARG002 - hook
        """Extra on-chip (SRAM / PMU) bytes per device this strategy's kernels need at (batch, context)
        arrays, beyond the standard kernels' own buffers. The planner refuses a setting whose sum over the
        tuple's strategies exceeds the device's on-chip memory on a static-graph dataflow device (where
        such buffers are allocated on chip at compile time); 0 = nothing extra (the default)."""
        return 0.0


@dataclass(frozen=True)
class ReplayInputs:
    """What a strategy's decode cost reads from a trace step by step (Strategy.trace_replay), in the form the
    engine's per-step replay prices once per input level (simulator/engine/trace_replay.py):

    label       what is replayed, for notes (e.g. "GVR launch passes per layer (gvr.passes_rows)")
    ops         op-name prefixes of the decode step whose time the trace drives (e.g. ("topk.gvr",))
    levels      [V] the input levels (e.g. pass counts 0..48, or (1.0,) for a cost linear in the input)
    draws       draws(batch, context, n, rng) -> [n, V]: for each of n steps, the weight of each level (units,
                e.g. layers, at that level; or the sum of drawn values when the cost is linear in them)
    expected    expected(batch, context) -> [V]: the same weights in expectation, which is what the
                mean-statistics run prices
    level_ops   level_ops(b, batch, context): the ops of ONE unit at each of the V levels (an OpBuilder of V
                settings), priced by the engine; None: the ops' time is proportional to the level value
    """

    label: str
    ops: tuple[str, ...]
    levels: np.ndarray
    draws: Callable
    expected: Callable
    level_ops: Callable | None = None


class AttentionStrategy(Strategy):
    axis = "attention"
    #: the kernel ranks per-token scores and keeps the best k: it needs a top-k algorithm (topk axis)
    selects_tokens: ClassVar[bool] = False
    #: each query row loads the KV blocks it selected: a verification kernel (verify_kernel axis) can share
    #: them across rows, and a refresh/reuse schedule (schedule axis) can reuse the routing across layers
    routes_blocks: ClassVar[bool] = False

    def precision_class(self) -> str:
        """'strict' (exact per-query, per-layer semantics) or 'approximate' (shared or reused selections
        allowed: SSV's approx mode, reuse layers)."""
        return "strict"

    # what the strategy's ops read of a StepShape beyond batch, query_rows, context and layers (declared, so the
    # engine never probes by pricing twice): properties, since a parameter may decide them
    @property
    def reads_ctx_max(self) -> bool:
        """The decode ops depend on StepShape.ctx_max (the batch's longest row): the engine then prices decode
        attention per step, not from its (batch, mean context) surfaces."""
        return False

    @property
    def reads_mixed(self) -> bool:
        """The decode ops depend on StepShape.mixed (decode rows beside a prefill chunk in one launch)."""
        return False

    @property
    def decode_cost_per_row(self) -> bool:
        """The decode ops' work per row is not linear in the row's context (a selection budget clips it: min(N, k); a
        dispatch or a mask switches with it): a batch of rows at different contexts is not a batch at their mean
        context, and the engine prices such decode rows per row (simulator.engine.step_cost.row_mean_s)."""
        return False

    @property
    def decode_longest_row_ops(self) -> tuple[str, ...]:
        """Prefixes of the names of decode ops whose launch lasts as long as the batch's longest row (a per-row CTA
        chain: one CTA or CTA group per row walking that row's context; or an op only rows above a length run, whose
        launch the step pays once any row needs it). The engine's per-row pricing (row_mean_s) charges these ops at
        least what the longest row alone costs; every other decode op is priced on the sum of the rows' work (the
        mean over the rows). Read only for decode_cost_per_row strategies."""
        return ()

    @property
    def prices_kv_prefix(self) -> bool:
        """The prefill ops price a chunk after StepShape.kv_prefix cached tokens themselves; otherwise the engine
        prices a chunk as the difference of whole-prompt costs, A(prefix + chunk) - A(prefix)."""
        return False

    def chunk_grid_ratio(self, combo: Combo) -> float:  # noqa: ARG002 - hook
        """0: the engine prices a prefill chunk at every chunk length (exact in c). A ratio > 1: at every length up to
        simulator.engine.step_cost.CHUNK_EXACT_BELOW and on a geometric grid of that ratio above it, linear between,
        for an attention whose chunk price replays a kernel's plan too slowly to run at every length."""
        return 0.0

    def decode_ops(self, b: OpBuilder, combo: Combo, shape: StepShape) -> None:
        raise NotImplementedError

    def prefill_ops(self, b: OpBuilder, combo: Combo, shape: StepShape) -> None:
        raise NotImplementedError

    def cached_tokens(self, combo: Combo, context: np.ndarray) -> np.ndarray:
        """Tokens each sequence keeps in its KV cache at `context` (dense: all of them)."""
        return context

    def selection_k(self, combo: Combo) -> int | None:  # noqa: ARG002 - hook
        """The k of the token top-k a selects_tokens attention hands its topk strategy per decode row (None: it
        selects no tokens)."""
        return None


@dataclass
class RoundPlan:
    """One speculative round (or one plain decode step): how many query rows per sequence the target
    model runs, how many tokens a round yields on average, and the extra ops (drafting) it costs."""

    query_rows: int
    tokens_per_round: np.ndarray | float
    add_draft_ops: Callable | None = None


class SpeculationStrategy(Strategy):
    axis = "speculation"

    def round_plan(self, combo: Combo, batch: np.ndarray, context: np.ndarray) -> RoundPlan:
        raise NotImplementedError

    @property
    def draft_tokens(self) -> int:
        """Draft tokens verified per round: a verification forward has draft_tokens + 1 query rows."""
        return 0

    def tree_shape(self):
        """The draft tree (simulator.acceptance.TreeShape), or None for a chain."""
        return None

    def chain_length(self) -> int:
        """Drafts of a chain (K); 0 without speculation."""
        return 0

    def acceptance_hat(self) -> float:
        """The profiled per-position acceptance the strategy was configured with (0 without speculation)."""
        return 0.0

    def accept_length_pmf(self) -> np.ndarray | None:
        """P(L = j accepted drafts per round), j = 0..levels, of the strategy's acceptance model (None
        without speculation); 1 + sum_j j P(L = j) equals the round plan's tokens per round. The serving
        engine samples accepted lengths from it."""
        return None

    def prefill_draft_ops(self, b: OpBuilder, combo: Combo, prompt: np.ndarray) -> None:  # noqa: ARG002 - hook
        """Ops the drafter adds to the prefill of a prompt (its own KV cache)."""
        return None


class TopkStrategy(Strategy):
    axis = "topk"
    #: False only for 'none': an attention that selects tokens needs a value with selects = True
    selects: ClassVar[bool] = True

    def refuse(self, combo: Combo) -> str | None:
        if self.selects and not combo.attention.selects_tokens:
            return f"topk '{self.name}' selects from a score row; attention '{combo.attention.name}' has none"
        if not self.selects and combo.attention.selects_tokens:
            return f"attention '{combo.attention.name}' selects tokens and needs a top-k algorithm"
        return None

    #: prefixes of the names of decode selection ops whose launch lasts as long as the longest score row
    #: (AttentionStrategy.decode_longest_row_ops; one CTA per row: kind topk_cta)
    decode_longest_row_ops: ClassVar[tuple[str, ...]] = ()

    def add_ops(self, b: OpBuilder, combo: Combo, rows: np.ndarray, length: np.ndarray, k: int, layers: float,
                phase: str) -> None:
        """Ops selecting the top `k` of `rows` score rows of `length` entries, `layers` times per step."""
        raise NotImplementedError(f"topk '{self.name}' prices no selection")


class VerifyKernelStrategy(Strategy):
    axis = "verify_kernel"

    def loads(self, combo: Combo, R, S, T, n_blocks, block_tokens):
        """How R verification rows load the blocks a routes_blocks attention selected (a
        simulator.strategies.verify_kernels.Loads); S selected tokens per row of n_blocks blocks of
        block_tokens tokens, context T."""
        raise NotImplementedError


class ScheduleStrategy(Strategy):
    axis = "schedule"

    def refresh_layers(self, n_layers: int) -> int | None:
        """Layers (of n_layers) that recompute their routing; None = no schedule (every layer runs its own
        unfused kernels)."""
        return None

    def is_refresh(self, n_layers: int) -> list[bool]:
        """Per layer: True where the layer recomputes its routing."""
        return [True] * n_layers


class KVPolicyStrategy(Strategy):
    axis = "kv_policy"

    def cached_tokens(self, combo: Combo, context: np.ndarray) -> np.ndarray:
        """Tokens a sequence keeps in its cache when its context is `context` (full: all of them)."""
        return context

    def attended_tokens(self, combo: Combo, kv_len: np.ndarray) -> np.ndarray:
        """Tokens a decode query attends over when the sequence has `kv_len` tokens."""
        return kv_len

    def prefill_ops(self, b: OpBuilder, combo: Combo, shape: StepShape) -> None:
        """Ops the policy adds to prefill (e.g. SnapKV's observation-window scoring)."""
        return None

    def decode_ops(self, b: OpBuilder, combo: Combo, shape: StepShape) -> None:
        """Ops the policy adds to each decode step (e.g. a cache rebuilt by concatenation); none by default."""
        return None

    @property
    def decode_cost_per_row(self) -> bool:
        """The policy's decode ops are not linear in a row's context (AttentionStrategy.decode_cost_per_row)."""
        return False


_REGISTRY: dict[str, dict[str, type[Strategy]]] = {a: {} for a in AXES}


def register(cls: type[Strategy]) -> type[Strategy]:
    """Class decorator: make `cls` selectable as `<cls.axis>: <cls.name>` in scenarios."""
    if cls.axis not in _REGISTRY:
        raise ValueError(f"{cls.__name__}: unknown axis {cls.axis!r}")
    if cls.name in _REGISTRY[cls.axis]:
        raise ValueError(f"{cls.__name__}: {cls.axis} value {cls.name!r} registered twice")
    _REGISTRY[cls.axis][cls.name] = cls
    return cls


_LOADED = False


def registry() -> dict[str, dict[str, type[Strategy]]]:
    """Every registered strategy by axis and name. The first call imports every module of this folder (each
    registers its classes), so a new strategy is one new file; importing this module alone loads none of them."""
    global _LOADED
    if not _LOADED:
        _LOADED = True
        for m in pkgutil.iter_modules([str(Path(__file__).parent)]):
            if m.name != "base":
                importlib.import_module(f"{__package__}.{m.name}")
    return _REGISTRY


def _resolve_path(v: Any, base) -> Any:
    """A relative path value that does not exist from the working folder but does under `base`: the latter."""
    from pathlib import Path

    if base is None or not isinstance(v, str) or not v.strip():
        return v
    p = Path(v)
    if p.is_absolute() or p.exists() or not (Path(base) / p).exists():
        return v
    return str(Path(base) / p)


def parse_axis(axis: str, values: Any, file: str | None = None, base=None) -> list[Strategy]:
    """Turn a scenario's list for one axis into Strategy instances.

    Each entry is a value name ('dense') or a one-key mapping {name: {param: value or [values]}}; a list
    expands into one instance per value (for a parameter whose value is itself a list, a list of lists).
    `base`: the scenario's folder, against which path-valued parameters (Param.path_valued) resolve.
    """
    reg = registry()[axis]
    if values is None:
        values = [DEFAULT_VALUE[axis]]
    if not isinstance(values, list):
        values = [values]
    if not values:
        raise ScenarioError(f"must list at least one value (default: [{DEFAULT_VALUE[axis]}])", file=file,
                            field=f"strategies.{axis}")
    out: list[Strategy] = []
    for entry in values:
        if isinstance(entry, str):
            name, params = entry, {}
        elif isinstance(entry, dict) and len(entry) == 1:
            name, params = next(iter(entry.items()))
            params = params or {}
            if not isinstance(params, dict):
                raise ScenarioError(f"parameters of {name!r} must be a mapping", file=file,
                                    field=f"strategies.{axis}")
        else:
            raise ScenarioError(f"each entry must be a name or {{name: {{params}}}}, got {entry!r}", file=file,
                                field=f"strategies.{axis}")
        if name not in reg:
            raise ScenarioError(f"unknown {axis} strategy {name!r}; known: {', '.join(sorted(reg))}", file=file,
                                field=f"strategies.{axis}")
        keys = list(params)
        specs = reg[name].params
        grids: list[list] = []
        for k_, v in params.items():
            if k_ in specs and specs[k_].path_valued:
                v = [_resolve_path(x, base) for x in v] if isinstance(v, list) else _resolve_path(v, base)
            if k_ in specs and specs[k_].list_valued:
                grids.append(v if isinstance(v, list) and v and all(isinstance(x, list) for x in v) else [v])
            else:
                if isinstance(v, list) and not v:
                    raise ScenarioError(f"{axis} '{name}': parameter {k_!r} lists no values (give a value or a "
                                        "non-empty list of values)", file=file,
                                        field=f"strategies.{axis}.{name}.{k_}")
                grids.append(v if isinstance(v, list) else [v])
        n_values = 1
        for g in grids:
            n_values *= len(g)
        if len(out) + n_values > MAX_AXIS_VALUES:
            sizes = " x ".join(f"{k_} {len(g)}" for k_, g in zip(keys, grids) if len(g) > 1) or "1"
            raise ScenarioError(f"{axis} '{name}': its parameter lists ({sizes}) expand to {n_values:,} values, "
                                f"{len(out) + n_values:,} on this axis; at most {MAX_AXIS_VALUES:,} per axis (each is "
                                "priced as its own strategy tuple)", file=file, field=f"strategies.{axis}")
        for combo in itertools.product(*grids):
            try:
                out.append(reg[name](**dict(zip(keys, combo))))
            except ScenarioError as e:
                e.file = file
                raise ScenarioError(str(e), file=file) from None
    return out


@dataclass
class StepShape:
    """The shape of one forward pass for `n` settings at once (arrays of length n, or scalars).

    batch       sequences in the batch
    query_rows  rows each sequence feeds: 1 for a decode step, the draft tokens + 1 for verification, the prompt
                (or chunk) length for prefill
    context     KV length each query attends to (for prefill, the prompt length: attention is causal inside it;
                for a chunk of a chunked prefill, kv_prefix + the chunk)
    phase       "decode" or "prefill"
    layers      how many layers run the strategy's kernels this step: the ops' `count` (the model's layers, or a
                part of them: SpecAttn's full and sparse layers, a drafter's own layers, 1 for a bare kernel)
    ctx_max     the longest row's attended context, per setting (None: every row at `context`). Set by the
                engine for attentions that declare reads_ctx_max
    kv_prefix   tokens already cached before a prefill chunk (0: a whole prompt). Set by the engine's chunked
                prefill for attentions that declare prices_kv_prefix
    mixed       the decode rows share their step (and launch) with a prefill chunk (engine steps; read by
                attentions that declare reads_mixed)
    """

    batch: np.ndarray
    query_rows: np.ndarray
    context: np.ndarray
    phase: str = "decode"
    _: KW_ONLY
    layers: float | np.ndarray
    ctx_max: np.ndarray | None = None
    kv_prefix: float | np.ndarray = 0.0
    mixed: bool = False

    @property
    def rows(self) -> np.ndarray:
        return self.batch * self.query_rows
