"""Scenario files: hardware + model + workload + strategy space + objective + outputs.

    name: quickstart
    description: free text
    hardware: H100-SXM                 # a name from hwmodels/specs, a path, or a list of them
    model: Llama-3.1-8B                # a name from simulator/models, a path, or a list
    workload:
      batch: [1, 4, 16]                # sequences decoded together
      context: [4096, 131072]          # KV length at the end of generation (prompt + output)
      output_tokens: 256               # tokens generated per request (a number or a list)
    strategies:                        # one list per axis; the sweep is their Cartesian product
      attention: [dense]
      topk: [none]
      speculation: [none]
      verify_kernel: [none]
      schedule: [none]
      kv_policy: [full]
      kv_dtype: [bf16]                 # bf16 | fp16 | fp8 | int8 | int4
      weight_dtype: [native]           # native (the model's released dtype) | bf16 | fp16 | fp8 | int8 | int4
      parallelism: [{tp: 1}]           # {tp: N, ep: E, attn_dp: D}; each may be a list (their product)
                                       #  tp: tensor-parallel devices; ep: 1 (experts TP-sharded) or tp
                                       #  (whole experts spread over the tp devices); attn_dp: attention
                                       #  data parallelism, divides tp (KV and attention split by batch)
    runtime:
      launch: graph                    # graph (CUDA graph / static dataflow graph) | eager
      kernels: fused                   # fused (an inference engine's fused kernels) | unfused (plain PyTorch)
      prefill_attention: tp            # under attn_dp: one prompt's prefill attention over the whole TP group (tp) or
                                       #  on its attention-DP group (dp: SGLang's DP attention)
    objective:                         # used by `sparsesim sweep` to rank
      rank_by: tokens_per_s            # tokens_per_s | tpot_ms | ttft_ms
      slo: {tpot_ms: 50, ttft_ms: 2000}   # optional limits; settings over them are not ranked
      top: 10
    outputs: [table, csv, plot]
    targets: [ssv_throughput]          # optional: reproductions (simulator/figures) printed after the run
    trace: NAME-or-PATH                # optional: an attention/top-k trace whose statistics drive strategy
                                       #  costs (simulator/traces; `sparsesim trace list`)
    serving: {...}                     # optional: request source, replicas, scheduler, SLOs for
                                       #  `sparsesim simulate` (simulator/engine)
    plan: {...}                        # optional: candidates, prices and targets for `sparsesim plan`

A name in a list may also be written as a path to a file of that kind. The sections trace, serving and
plan are validated by the packages that use them (SECTION_PARSERS); a section is never accepted unread.

How a scenario is read (one way, top to bottom; docs/DESIGN.md, "Configuration flow"):
  read_scenario_doc(path)       the YAML file -> a plain mapping (the one place the raw document is read)
  scenario_from_dict(doc)       the mapping -> a typed Scenario: hardware and model specs, strategy instances per
                                axis, dtypes, parallelism, runtime, workload, objective; then each optional section
                                is parsed by its package's parser, which receives this Scenario (never the raw
                                document) and reads the hardware, models, strategies and trace from it
  Scenario.combo(**overrides)   a Combo on the scenario's first values (simulator.combo.make_combo, the one Combo
                                factory); the sweep enumerates every tuple through the same factory
"""
from __future__ import annotations

import importlib
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from hwmodels.errors import ScenarioError, SparsesimError
from hwmodels.spec import HardwareSpec, load_hardware
from hwmodels.yamlio import load_yaml
from simulator.combo import Combo, make_combo
from simulator.model import ModelSpec, load_model
from simulator.precision import DTYPE_BYTES
from simulator.strategies.base import AXES, Strategy, parse_axis

TOP_KEYS = {"name", "description", "hardware", "model", "workload", "strategies", "runtime", "objective",
            "outputs", "targets", "trace", "serving", "plan"}
#: optional sections and the function that validates each: parse(value, file, base, scenario) -> parsed object,
#: where `scenario` is the Scenario parsed so far (its top level, and the sections parsed before this one, in this
#: order). The parsed object is stored on Scenario.sections[key]; a section whose package is missing is refused.
SECTION_PARSERS = {
    "trace": "simulator.traces.scenario:parse_trace_section",
    "serving": "simulator.engine.config:parse_serving_section",
    "plan": "simulator.planning.config:parse_plan_section",
}
WORKLOAD_KEYS = {"batch", "context", "output_tokens"}
STRATEGY_KEYS = set(AXES) | {"kv_dtype", "weight_dtype", "parallelism"}
OUTPUTS = ("table", "csv", "plot")
RANK_BY = {"tokens_per_s": False, "tpot_ms": True, "ttft_ms": True}  # metric -> ascending
SLO_KEYS = ("tpot_ms", "ttft_ms")
LAUNCH = ("graph", "eager")


@dataclass
class Scenario:
    name: str
    file: str
    description: str
    hardware: list[HardwareSpec]
    models: list[ModelSpec]
    batch: list[int]
    context: list[int]
    output_tokens: list[int]
    axes: dict[str, list[Strategy]]
    kv_dtype: list[str]
    weight_dtype: list[str]
    parallel: list[tuple[int, int, int]]  # (tp, ep, attn_dp)
    launch: str = "graph"
    kernels: str = "fused"
    prefill_attention: str = "tp"   # runtime.prefill_attention (Combo.prefill_attn)
    rank_by: str = "tokens_per_s"
    slo: dict[str, float] = field(default_factory=dict)
    top: int = 10
    outputs: list[str] = field(default_factory=lambda: list(OUTPUTS))
    targets: list[str] = field(default_factory=list)
    doc: dict = field(default_factory=dict)
    sections: dict[str, Any] = field(default_factory=dict)  # parsed trace / serving / plan sections
    base: Path = Path(".")  # the folder relative paths in the scenario resolve against (the file's own)

    def combo(self, **overrides) -> Combo:
        """A Combo on the scenario's first hardware, model, KV / weight dtype, parallelism entry and each axis' first
        value, with its runtime (launch, kernels) and trace. `overrides`: hardware, model, kv_dtype, weight_dtype
        ('native' = the model's own), tp, ep, attn_dp, launch, kernels, trace, and axis values (a name, a {name:
        {param: value}} mapping, or a Strategy). Built by simulator.combo.make_combo; refusals are not checked
        (simulator.combo.combo_refusal)."""
        tp, ep, dp = self.parallel[0]
        settings = {"hardware": self.hardware[0], "model": self.models[0], "kv_dtype": self.kv_dtype[0],
                    "weight_dtype": self.weight_dtype[0], "tp": tp, "ep": ep, "attn_dp": dp, "launch": self.launch,
                    "kernels": self.kernels, "trace": self.trace}
        axes = {a: self.axes[a][0] for a in AXES}
        for k, v in overrides.items():
            if k in settings:
                settings[k] = v
            elif k in axes:
                axes[k] = v
            else:
                raise ValueError(f"unknown combo setting {k!r}; settings: {sorted(settings)}, axes: {AXES}")
        c = make_combo(**settings, **axes)
        return replace(c, prefill_attn=self.prefill_attention) if self.prefill_attention != "tp" else c

    @property
    def trace(self):
        """The parsed `trace:` section (simulator.traces), or None."""
        return self.sections.get("trace")

    @property
    def serving(self):
        """The parsed `serving:` section (simulator.engine), or None."""
        return self.sections.get("serving")

    @property
    def plan(self):
        """The parsed `plan:` section (simulator.planning), or None."""
        return self.sections.get("plan")


def _as_list(v: Any) -> list:
    return v if isinstance(v, list) else [v]


def _positive_ints(v: Any, file: str, fld: str) -> list[int]:
    vals = _as_list(v)
    if not vals:
        raise ScenarioError("must list at least one value", file=file, field=fld)
    for x in vals:
        if isinstance(x, bool) or not isinstance(x, int) or x < 1:
            raise ScenarioError(f"values must be positive integers, got {x!r}", file=file, field=fld)
    return sorted(set(vals))


def _choices(v: Any, allowed: tuple[str, ...], file: str, fld: str) -> list[str]:
    vals = _as_list(v)
    if not vals:
        raise ScenarioError(f"must list at least one value; allowed: {', '.join(allowed)}", file=file, field=fld)
    for x in vals:
        if x not in allowed:
            raise ScenarioError(f"unknown value {x!r}; allowed: {', '.join(allowed)}", file=file, field=fld)
    return list(dict.fromkeys(vals))


def _mapping(doc: Any, key: str, file: str, allowed: set[str]) -> dict:
    node = doc.get(key)
    if node is None:
        node = {}
    if not isinstance(node, dict):
        raise ScenarioError("must be a mapping", file=file, field=key)
    unknown = set(node) - allowed
    if unknown:
        raise ScenarioError(f"unknown keys {sorted(unknown)}; allowed: {sorted(allowed)}", file=file, field=key)
    return node


def _load_named(loader, names: Any, file: str, fld: str, base: Path):
    out = []
    if not _as_list(names):
        raise ScenarioError("must name at least one (a shipped name or a path to a YAML file)", file=file,
                            field=fld)
    for n in _as_list(names):
        if not isinstance(n, str):
            raise ScenarioError(f"must be a name or a path, got {n!r}", file=file, field=fld)
        p = Path(n)
        if p.suffix in (".yaml", ".yml") and not p.is_absolute() and not p.exists():
            p = base / p
            n = str(p)
        try:
            item = loader(n)
        except SparsesimError as e:
            raise ScenarioError(str(e), file=file, field=fld) from None
        same = [x for x in out if Path(x.file).resolve() == Path(item.file).resolve() or x.name == item.name]
        if same and Path(same[0].file).resolve() == Path(item.file).resolve():
            raise ScenarioError(f"lists {item.name} ({item.file}) twice; each {fld} may appear once (as a name or a "
                                "path)", file=file, field=fld)
        if same:
            raise ScenarioError(f"{same[0].file} and {item.file} are both named {item.name!r}; names label the results, "
                                "so they must differ (rename one in its file)", file=file, field=fld)
        out.append(item)
    return out


def _specs(doc: dict, file: str, base: Path) -> tuple[list[HardwareSpec], list[ModelSpec]]:
    """hardware: and model: as loaded specs."""
    return (_load_named(load_hardware, doc["hardware"], file, "hardware", base),
            _load_named(load_model, doc["model"], file, "model", base))


def _workload(doc: dict, file: str, models: list[ModelSpec]) -> tuple[list[int], list[int], list[int]]:
    """workload: batch, context and output_tokens lists (contexts within some model's limit)."""
    wl = _mapping(doc, "workload", file, WORKLOAD_KEYS)
    for k in WORKLOAD_KEYS:
        if k not in wl:
            raise ScenarioError("is missing", file=file, field=f"workload.{k}")
    batch = _positive_ints(wl["batch"], file, "workload.batch")
    context = _positive_ints(wl["context"], file, "workload.context")
    out_tokens = _positive_ints(wl["output_tokens"], file, "workload.output_tokens")
    longest = max(m.max_context for m in models)
    too_long = [c for c in context if c > longest]
    if too_long:
        limits = ", ".join(f"{m.name} {m.max_context}" for m in models)
        raise ScenarioError(f"context {too_long} is beyond every model's limit ({limits})", file=file,
                            field="workload.context")
    if min(out_tokens) >= max(context):
        raise ScenarioError(f"output_tokens {min(out_tokens)} leaves no prompt in any context (the context is "
                            "prompt + output)", file=file, field="workload.output_tokens")
    return batch, context, out_tokens


def _strategy_space(doc: dict, file: str, base: Path, models: list[ModelSpec]):
    """strategies: (axes, kv_dtype, weight_dtype, parallelism entries (tp, ep, attn_dp) in listed order)."""
    st = _mapping(doc, "strategies", file, STRATEGY_KEYS)
    axes = {a: parse_axis(a, st.get(a), file, base) for a in AXES}
    check_models_take(axes, models, file)
    kv = _choices(st.get("kv_dtype", ["bf16"]), tuple(DTYPE_BYTES), file, "strategies.kv_dtype")
    wd = _choices(st.get("weight_dtype", ["native"]), ("native",) + tuple(DTYPE_BYTES), file,
                  "strategies.weight_dtype")
    parallel: list[tuple[int, int, int]] = []
    par_entries = _as_list(st.get("parallelism", [{"tp": 1}]))
    if not par_entries:
        raise ScenarioError("must list at least one {tp: N} entry", file=file, field="strategies.parallelism")
    for entry in par_entries:
        if not isinstance(entry, dict) or "tp" not in entry or set(entry) - {"tp", "ep", "attn_dp"}:
            raise ScenarioError(f"each entry must be {{tp: N}} with optional ep: E, attn_dp: D (each a number or a "
                                f"list), got {entry!r}", file=file, field="strategies.parallelism")
        tps = _positive_ints(entry["tp"], file, "strategies.parallelism.tp")
        eps = _positive_ints(entry.get("ep", 1), file, "strategies.parallelism.ep")
        dps = _positive_ints(entry.get("attn_dp", 1), file, "strategies.parallelism.attn_dp")
        for t in tps:
            for e_ in eps:
                if e_ not in (1, t):
                    raise ScenarioError(f"ep={e_} with tp={t}: ep must be 1 (experts TP-sharded) or equal tp "
                                        "(whole experts over the same devices)", file=file,
                                        field="strategies.parallelism.ep")
                for d_ in dps:
                    if t % d_:
                        raise ScenarioError(f"attn_dp={d_} must divide tp={t}", file=file,
                                            field="strategies.parallelism.attn_dp")
                    parallel.append((t, e_, d_))
    return axes, kv, wd, parallel


def _runtime(doc: dict, file: str) -> tuple[str, str, str]:
    """runtime: (launch, kernels, prefill_attention)."""
    rt = _mapping(doc, "runtime", file, {"launch", "kernels", "prefill_attention"})
    launch = rt.get("launch", "graph")
    if launch not in LAUNCH:
        raise ScenarioError(f"is {launch!r}; allowed: {', '.join(LAUNCH)}", file=file, field="runtime.launch")
    kernels = rt.get("kernels", "fused")
    if kernels not in ("fused", "unfused", "hf"):
        raise ScenarioError(f"is {kernels!r}; allowed: fused, unfused, hf", file=file, field="runtime.kernels")
    pa = rt.get("prefill_attention", "tp")
    if pa not in ("tp", "dp"):
        raise ScenarioError(f"is {pa!r}; allowed: tp (one prompt's prefill attention over the whole TP group), dp "
                            "(on its attention-DP group)", file=file, field="runtime.prefill_attention")
    return launch, kernels, pa


def scenario_from_dict(doc: Any, file: str = "<scenario>", base: Path | None = None) -> Scenario:
    """Validate a parsed scenario mapping and resolve its names: the one parse of a scenario (module docstring).
    The optional sections are parsed last, each by its package's parser, handed this Scenario."""
    base = base or Path(".")
    if not isinstance(doc, dict):
        raise ScenarioError("must be a YAML mapping with at least hardware, model and workload", file=file)
    unknown = set(doc) - TOP_KEYS
    if unknown:
        raise ScenarioError(f"unknown top-level keys {sorted(unknown)}; allowed: {sorted(TOP_KEYS)}", file=file)
    for k in ("hardware", "model", "workload"):
        if k not in doc:
            raise ScenarioError("is missing", file=file, field=k)
    name = doc.get("name")
    if name is None:
        name = Path(file).stem
    if (not isinstance(name, str) or not name.replace("-", "").replace("_", "").replace(".", "").isalnum()
            or len(name) > 100 or name.startswith(".")):
        raise ScenarioError(f"must be 1-100 letters, digits, '-', '_' or '.' (not starting with '.'), got "
                            f"{str(name)[:60]!r}", file=file, field="name")

    hardware, models = _specs(doc, file, base)
    batch, context, out_tokens = _workload(doc, file, models)
    axes, kv, wd, parallel = _strategy_space(doc, file, base, models)
    check_sizes(hardware, models, batch, context, out_tokens, axes, kv, wd, parallel, file)
    launch, kernels, prefill_attention = _runtime(doc, file)

    obj = _mapping(doc, "objective", file, {"rank_by", "slo", "top"})
    rank_by = obj.get("rank_by", "tokens_per_s")
    if not isinstance(rank_by, str) or rank_by not in RANK_BY:
        raise ScenarioError(f"is {rank_by!r}; allowed: {', '.join(RANK_BY)}", file=file, field="objective.rank_by")
    slo = obj.get("slo")
    if slo is None:
        slo = {}
    if not isinstance(slo, dict) or set(slo) - set(SLO_KEYS):
        raise ScenarioError(f"must map some of {SLO_KEYS} to limits in ms, got {slo!r}", file=file,
                            field="objective.slo")
    for k, v in slo.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
            raise ScenarioError(f"must be a positive number of ms, got {v!r}", file=file, field=f"objective.slo.{k}")
    top = obj.get("top", 10)
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise ScenarioError(f"must be a positive integer, got {top!r}", file=file, field="objective.top")

    outputs = _choices(doc.get("outputs", list(OUTPUTS)), OUTPUTS, file, "outputs")
    targets = _as_list(doc.get("targets", []))
    if not all(isinstance(t, str) for t in targets):
        raise ScenarioError(f"must list reproduction names, got {targets!r}", file=file, field="targets")
    if targets:
        from simulator.figures import reproductions

        known = reproductions()
        bad = [t for t in targets if t not in known]
        if bad:
            raise ScenarioError(f"unknown reproduction(s) {bad}; known: {', '.join(sorted(known))}", file=file,
                                field="targets")
    desc = doc.get("description", "")
    if desc is None:
        desc = ""
    if not isinstance(desc, str) or len(desc) > 4000:
        raise ScenarioError("must be a text of at most 4000 characters", file=file, field="description")
    sc = Scenario(name=name, file=file, description=desc.strip(), hardware=hardware, models=models,
                  batch=batch, context=context, output_tokens=out_tokens, axes=axes, kv_dtype=kv,
                  weight_dtype=wd, parallel=list(dict.fromkeys(parallel)), launch=launch, kernels=kernels,
                  prefill_attention=prefill_attention, rank_by=rank_by, slo={k: float(v) for k, v in slo.items()}, top=top, outputs=outputs,
                  targets=targets, doc=doc, sections={}, base=base)
    _parse_sections(sc, doc)
    return sc


def scenario_setup(doc: Any, file: str = "<scenario>", base: Path | None = None) -> Scenario:
    """The part of a scenario that Combos are built from (hardware, model, strategies, runtime, trace), read from
    a partial mapping by the same field parsers as scenario_from_dict: for library callers that hand a section
    parser a mapping instead of a parsed Scenario (e.g. {"hardware": "H100-SXM", "model": "Llama-3.1-8B"}). The
    workload lists are empty; the serving and plan sections, if present, are not read."""
    base = Path(base) if base is not None else Path(".")
    if not isinstance(doc, dict):
        raise ScenarioError("must be a YAML mapping with at least hardware and model", file=file)
    for k in ("hardware", "model"):
        if k not in doc:
            raise ScenarioError("is missing", file=file, field=k)
    hardware, models = _specs(doc, file, base)
    axes, kv, wd, parallel = _strategy_space(doc, file, base, models)
    launch, kernels, prefill_attention = _runtime(doc, file)
    sc = Scenario(name=str(doc.get("name") or Path(file).stem), file=file, description="", hardware=hardware,
                  models=models, batch=[], context=[], output_tokens=[], axes=axes, kv_dtype=kv, weight_dtype=wd,
                  parallel=list(dict.fromkeys(parallel)), launch=launch, kernels=kernels,
                  prefill_attention=prefill_attention, doc=doc, base=base)
    _parse_sections(sc, {k: v for k, v in doc.items() if k == "trace"})
    return sc


def as_scenario(scenario: Any, file: str, base: Path | None) -> Scenario:
    """A section parser's `scenario` argument as a Scenario: a parsed Scenario as is, a mapping through
    scenario_setup (library callers)."""
    return scenario if isinstance(scenario, Scenario) else scenario_setup(scenario, file, base)


#: Most strategy tuples (hardware x model x dtypes x parallelism x every axis' values) one scenario may span: 100x
#: the 10M-tuple sweep the README describes for a Dask cluster; beyond it a sweep takes days
MAX_TUPLES = 10**9
#: Most workload settings (batch x context x output_tokens) under one strategy tuple: they are priced as one op
#: table, ~2-4 KB per setting (MEASURED: 100,000 settings of Llama-3.1-8B dense in 220 MB, NSA + EAGLE-3 in 350 MB)
MAX_GRID_SETTINGS = 200_000


def check_models_take(axes: dict, models: list, file: str) -> None:
    """A parameter choice that no model of the scenario can run (Strategy.param_model_problem) is a mistake in
    the list, not a skip: stop naming the parameter. Choices some models take stay, and are skipped (counted) for
    the others; strategies that cannot run on a model as such (Strategy.model_problem) are skips too."""
    for axis, values in axes.items():
        for s in values:
            problems = [s.param_model_problem(m) for m in models]
            if all(problems):
                p, why = problems[0]
                raise ScenarioError(f"{axis} '{s.label()}': no model of the scenario can take {p}: {why}", file=file,
                                    field=f"strategies.{axis}.{s.name}.{p}")


def check_sizes(hardware, models, batch, context, out_tokens, axes, kv, wd, parallel, file: str) -> None:
    """Refuse a scenario whose tuple space or per-tuple workload grid exceeds MAX_TUPLES / MAX_GRID_SETTINGS."""
    grid = len(batch) * len(context) * len(out_tokens)
    if grid > MAX_GRID_SETTINGS:
        raise ScenarioError(f"batch {len(batch)} x context {len(context)} x output_tokens {len(out_tokens)} values = "
                            f"{grid:,} settings per strategy tuple; at most {MAX_GRID_SETTINGS:,} (each tuple's "
                            "settings are priced as one table in memory)", file=file, field="workload")
    sizes = {"hardware": len(hardware), "model": len(models), "kv_dtype": len(kv), "weight_dtype": len(wd),
             "parallelism": len(set(parallel)), **{a: len(v) for a, v in axes.items()}}
    n = math.prod(sizes.values())
    if n > MAX_TUPLES:
        big = ", ".join(f"{k} {v:,}" for k, v in sizes.items() if v > 1)
        raise ScenarioError(f"{big}: {n:,} strategy tuples; at most {MAX_TUPLES:,} (a sweep of that size takes days "
                            "even on a cluster)", file=file, field="strategies")


def _parse_sections(sc: Scenario, doc: dict) -> None:
    """Parse the optional sections present in `doc`, in SECTION_PARSERS order, into sc.sections: each parser gets
    the Scenario with the sections parsed before it."""
    for key, target in SECTION_PARSERS.items():
        if key in doc:
            sc.sections[key] = _parse_section(key, target, doc[key], sc.file, sc.base, sc)


def _parse_section(key: str, target: str, value: Any, file: str, base: Path, sc: Scenario):
    """Validate one optional section with the parser of the package that owns it."""
    mod_name, fn_name = target.split(":")
    try:
        mod = importlib.import_module(mod_name)
    except ModuleNotFoundError as e:
        if e.name and mod_name.startswith(e.name):
            raise ScenarioError(f"this installation has no {mod_name.rsplit('.', 1)[0]} package to read it",
                                file=file, field=key) from None
        raise
    try:
        return getattr(mod, fn_name)(value, file, base, sc)
    except ScenarioError as e:
        if e.file is None:
            raise ScenarioError(str(e), file=file, field=e.field or key) from None
        raise
    except SparsesimError as e:
        raise ScenarioError(str(e), file=file, field=key) from None


def find_scenario(name_or_path: str) -> Path:
    """A scenario file: a path to a file, or the name of a shipped scenario ('quickstart', also written
    'quickstart.yaml' or 'scenarios/quickstart.yaml') from any folder."""
    from simulator.shipped import shipped_scenarios

    if not isinstance(name_or_path, str) or not name_or_path.strip():
        raise ScenarioError(f"a scenario name or path must be a non-empty string, got {name_or_path!r}")
    p = Path(name_or_path)
    if p.is_file():
        return p
    if p.is_dir():
        raise ScenarioError("is a directory; give a scenario YAML file or a shipped scenario name", file=str(p))
    shipped = shipped_scenarios()
    stem = p.stem if p.suffix in (".yaml", ".yml") else p.name
    if stem in shipped and (len(p.parts) == 1 or p.parent.name == "scenarios"):
        return shipped[stem]
    raise ScenarioError(f"no scenario file {name_or_path!r}; shipped scenarios (`sparsesim scenarios list`): "
                        f"{', '.join(shipped) or 'none'}")


def read_scenario_doc(path: Path, overrides: list[str] | None = None) -> Any:
    """The scenario file at `path` as the plain YAML document (a mapping when the file is well formed) with the
    `--set PATH=VALUE` overrides applied (simulator.overrides): the one place a scenario's raw document is read;
    everything after works on the Scenario scenario_from_dict makes."""
    from simulator.overrides import apply_overrides

    try:
        doc = load_yaml(path, "scenario file")
    except ScenarioError:
        raise
    except SparsesimError as e:
        raise ScenarioError(str(e)) from None
    return apply_overrides(doc, overrides, str(path), TOP_KEYS)


def load_scenario(name_or_path: str, overrides: list[str] | None = None) -> Scenario:
    """Find (find_scenario), read with the overrides (read_scenario_doc), validate and resolve a scenario file."""
    path = find_scenario(name_or_path)
    doc = read_scenario_doc(path, overrides)
    return scenario_from_doc(doc, str(path), path.parent, overrides)


def scenario_from_doc(doc: Any, file: str, base: Path, overrides: list[str] | None = None) -> Scenario:
    """scenario_from_dict; an error after --set overrides (or other flags that edit the mapping, given as
    "--flag value" text) says which were applied (the flag may be the cause)."""
    if not overrides:
        return scenario_from_dict(doc, file, base)
    try:
        return scenario_from_dict(doc, file, base)
    except ScenarioError as e:
        given = [o if o.startswith("--") else f"--set {o}" for o in overrides]
        raise ScenarioError(f"{e} (with {', '.join(given)})") from None


def numeric_grid(sc: Scenario) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The batch x context x output_tokens product as three equal-length arrays."""
    b, c, o = np.meshgrid(sc.batch, sc.context, sc.output_tokens, indexing="ij")
    return b.ravel(), c.ravel(), o.ravel()
