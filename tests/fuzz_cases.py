"""Generated bad (and borderline-good) inputs for the CLI: scenario files, hardware specs, model files, YAML
itself, and command lines. Used by tests/test_fuzz_inputs.py (in process) and benchmarks/fuzz_report.py
(through a `sparsesim` executable, to count outcomes before and after a change).

A case is a set of files to write into a fresh folder, a command line, and the expected outcome:
  'error'  the run must stop with exit status 2 and ONE line on stderr naming the file (and, when the case
           targets a field, the field), no traceback;
  'ok'     the run must succeed (exit 0): a legal edge case that must not be refused.
Outcomes are classified by `classify`: ok | clean | traceback | unclear (rc 2 but not one line / no file /
no field, or rc 1) | accepted (a bad input that ran).
"""
from __future__ import annotations

import copy
import functools
import math
from dataclasses import dataclass, field
from pathlib import Path

import yaml

BASE_SCENARIO = {
    "name": "fz",
    "hardware": "H100-SXM",
    "model": "Llama-3.1-8B",
    "workload": {"batch": [1], "context": [4096], "output_tokens": 16},
    "outputs": ["table"],
}

#: values no numeric field may accept
BAD_NUMBERS = [-1, 0, 1.5, "x", "", True, math.nan, math.inf, -math.inf, [], {}, None, [[1]], "1e12"]


@dataclass
class Case:
    name: str
    files: dict[str, bytes]
    argv: list[str]
    expect: str = "error"             # error | ok
    fld: str | None = None            # the field the message must name ('' = no field expected)
    file_in_message: str | None = None  # a file name the message must contain (default: the first file)
    tags: list[str] = field(default_factory=list)


#: libyaml's emitter where PyYAML has it (the same text as the pure-Python one for these documents, ~4x faster: the
#: cases are built at collection)
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _dump(doc) -> bytes:
    return yaml.dump(doc, Dumper=_DUMPER, sort_keys=False, allow_unicode=True).encode()


def _yaml_value(v) -> str:
    if isinstance(v, float) and math.isnan(v):
        return ".nan"
    if isinstance(v, float) and math.isinf(v):
        return ".inf" if v > 0 else "-.inf"
    return yaml.dump(v, Dumper=_DUMPER, default_flow_style=True).strip().removesuffix("...").strip()


def _set(doc: dict, path: str, value):
    node = doc
    parts = path.split(".")
    for p in parts[:-1]:
        node = node.setdefault(p, {})
    node[parts[-1]] = value


def _scenario_case(name: str, doc, expect="error", fld=None, extra_files=None, tags=()) -> Case:
    files = {"s.yaml": doc if isinstance(doc, bytes) else _dump(doc)}
    files.update(extra_files or {})
    return Case(name, files, ["run", "s.yaml", "--out", "out"], expect, fld, "s.yaml", list(tags))


def _raw_scenario(name: str, text: str, expect="error", fld=None) -> Case:
    return _scenario_case(name, text.encode() if isinstance(text, str) else text, expect, fld)


def scenario_cases() -> list[Case]:
    cases: list[Case] = []
    # ---- the document itself -------------------------------------------------------------------------
    for nm, text in [("empty", ""), ("comment_only", "# nothing\n"), ("a_list", "- 1\n- 2\n"),
                     ("a_scalar", "42\n"), ("null_doc", "null\n"), ("bad_yaml", "name: [1, 2\n"),
                     ("tab_indent", "name: x\n\thardware: H100-SXM\n"), ("dup_key", "name: a\nname: b\n"),
                     ("unclosed_quote", "name: 'abc\n")]:
        cases.append(_raw_scenario(f"doc_{nm}", text))
    cases.append(_raw_scenario("doc_binary", bytes(range(256)).decode("latin-1")))
    cases.append(_scenario_case("doc_non_utf8", b"name: \xff\xfe\n"))
    cases.append(_scenario_case("doc_nul_bytes", b"name: a\x00b\n"))
    cases.append(_raw_scenario("doc_deep_nesting", "name: " + "[" * 5000 + "]" * 5000 + "\n"))
    cases.append(_raw_scenario("doc_deep_block_nesting", "".join("  " * i + f"k{i}:\n" for i in range(200)) + "  " * 200 + "v: 1\n"))
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n" for p, c in zip("abcdefg", "bcdefgh"))
    base_text = _dump(BASE_SCENARIO).decode()
    cases.append(_raw_scenario("doc_alias_bomb_top", bomb + base_text))
    cases.append(_raw_scenario("doc_alias_bomb_description",
                               base_text + "description: &d0 [x, x, x, x, x, x, x, x, x]\n"
                               + "".join(f"x{i}: &d{i} [*d{i-1}, *d{i-1}, *d{i-1}, *d{i-1}, *d{i-1}, *d{i-1}, *d{i-1}, *d{i-1}, *d{i-1}]\n"
                                         for i in range(1, 9))))
    cases.append(_raw_scenario("doc_huge", base_text + "description: '" + "x" * (9 * 2**20) + "'\n"))
    # ---- top-level keys ------------------------------------------------------------------------------
    for k in ("hardware", "model", "workload"):
        d = copy.deepcopy(BASE_SCENARIO)
        del d[k]
        cases.append(_scenario_case(f"missing_{k}", d, fld=k))
    for k in ("bogus", "Hardware", "strategy", "output"):
        d = copy.deepcopy(BASE_SCENARIO)
        d[k] = 1
        cases.append(_scenario_case(f"unknown_top_{k}", d))
    # ---- scalar / list fields with bad values --------------------------------------------------------
    fields = {
        "name": ["", "a b", "../x", "x" * 500, 5, [], {}, True, ".hidden"],
        "description": [5, [], {}, True, "x" * 5000],
        "hardware": ["", "NoSuchGPU", 5, [], [5], {}, True, ["H100-SXM", "NoSuch"], "nosuch.yaml"],
        "model": ["", "NoSuchModel", 5, [], [5], {}, True, "nosuch.yaml"],
        "workload": [5, [], "x", True],
        "workload.batch": [0, -1, 1.5, "x", "", True, math.nan, math.inf, [], {}, None, [[1]], "1e12", [1, "x"]],
        "workload.context": [0, -1, 1.5, "x", "", True, math.nan, [], {}, None, "4K", 10**12, [4096, 0]],
        "workload.output_tokens": [0, -1, 1.5, "x", True, math.nan, [], {}, None, 4096, 10**7],
        "workload.extra": [1],
        "strategies": [5, [], "x", True],
        "strategies.bogus_axis": [["x"]],
        "strategies.attention": [[], ["nosuch"], [5], [{}], [{"dense": 5}], [{"dense": {"bogus": 1}}],
                                 [{"dense": {}, "nsa": {}}], "nosuch", [[1]]],
        "strategies.topk": [[], ["nosuch"], [{"radix": {"bogus": 1}}]],
        "strategies.speculation": [[], ["nosuch"], [{"eagle3": {"k": 0}}], [{"eagle3": {"k": "x"}}],
                                   [{"eagle3": {"acceptance": math.nan}}], [{"eagle3": {"acceptance": 1.5}}],
                                   [{"draft_model": {"model": "NoSuch"}}], [{"eagle3": {"tree": {"branch": 0}}}],
                                   [{"eagle3": {"accept_lengths": [0.5, 0.6]}}]],
        "strategies.verify_kernel": [[], ["nosuch"]],
        "strategies.schedule": [[], ["nosuch"], [{"refresh_reuse": {"refresh_every": 0}}]],
        "strategies.kv_policy": [[], ["nosuch"], [{"streamingllm": {"bogus": 1}}]],
        "strategies.kv_dtype": [[], ["fp7"], [5], "bogus", [None]],
        "strategies.weight_dtype": [[], ["fp7"], [5], [None]],
        "strategies.parallelism": [[], [5], ["tp2"], [{"tp": 0}], [{"tp": -1}], [{"tp": "2"}], [{"tp": 1.5}],
                                   [{"pp": 2}], [{"tp": 2, "ep": 3}], [{"tp": 4, "attn_dp": 3}], [{}],
                                   [{"tp": math.nan}], [{"tp": True}]],
        "runtime": [5, [], "x"],
        "runtime.launch": ["fast", 5, [], None, True],
        "runtime.kernels": ["fast", 5, [], True],
        "runtime.bogus": [1],
        "objective": [5, [], "x"],
        "objective.rank_by": ["speed", 5, [], True],
        "objective.slo": [5, [], "x", {"tpot_ms": math.nan}, {"tpot_ms": -1}, {"tpot_ms": 0},
                          {"tpot_ms": "50"}, {"tpot_ms": True}, {"latency": 5}, {"tpot_ms": math.inf}],
        "objective.top": [0, -1, 1.5, "x", True, math.nan],
        "objective.bogus": [1],
        "outputs": [["pdf"], [5], "pdf", [None], {}, []],
        "targets": [["no_such_target"], [5], 5, [None], {}],
        "trace": [5, "", "no_such_trace", [], {}, True, "nosuch.npz"],
        "serving": [5, "x", [], True],
        "plan": [5, "x", [], True],
    }
    ok_values = {  # legal edge cases: must run
        "name": ["a.b-c_d", None],
        "description": ["", None],
        "workload.batch": [[64, 1, 1]],
        "workload.context": [[4096, 4096]],
        "workload.output_tokens": [[1, 16]],
        "strategies.attention": [None, "dense", [{"dense": None}]],
        "strategies.kv_dtype": ["fp8"],
        "runtime.launch": ["eager"],
        "objective.slo": [{}, None],
        "targets": [[]],
    }
    for path, values in fields.items():
        for i, v in enumerate(values):
            d = copy.deepcopy(BASE_SCENARIO)
            _set(d, path, v)
            top = path.split(".")[0]
            fld = path if top not in ("strategies", "runtime", "objective", "workload") or "." in path else top
            if path.endswith(".bogus") or path.endswith(".extra") or path == "strategies.bogus_axis":
                fld = top
            cases.append(_scenario_case(f"field_{path}_{i}", d, fld=fld))
    for path, values in ok_values.items():
        for i, v in enumerate(values):
            d = copy.deepcopy(BASE_SCENARIO)
            _set(d, path, v)
            cases.append(_scenario_case(f"ok_{path}_{i}", d, expect="ok"))
    return cases


# ---- strategy parameters: every registered strategy, every parameter ----------------------------------
BAD_PARAM_VALUES = [math.nan, math.inf, -math.inf, True, "x", {}, [], -1, 10**13]


def strategy_param_cases() -> list[Case]:
    from simulator.strategies.base import registry

    cases = []
    for axis, values in registry().items():
        for name, cls in sorted(values.items()):
            for p, spec in cls.params.items():
                for i, bad in enumerate(BAD_PARAM_VALUES):
                    if _legal(p, spec, bad):
                        continue  # a value this parameter legitimately takes (e.g. seed -1): not a bad case
                    d = copy.deepcopy(BASE_SCENARIO)
                    d["strategies"] = {axis: [{name: {p: bad}}]}
                    cases.append(_scenario_case(f"param_{axis}.{name}.{p}_{i}", d,
                                                fld=f"strategies.{axis}", tags=["param"]))
    return cases


def _legal(param: str, spec, v) -> bool:
    """Values of BAD_PARAM_VALUES a parameter legitimately takes: any integer is a valid random seed, and
    true/false is a value of a boolean parameter."""
    if isinstance(v, bool):
        return isinstance(spec.default, bool)
    return param == "seed" and isinstance(v, int)


# ---- hardware spec and model files, given as paths ------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _parsed(path: str) -> dict:
    """A YAML file parsed once per test session (every case mutates its own deep copy: _spec_doc, _model_doc)."""
    return yaml.load(Path(path).read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _spec_doc(name="H100-SXM") -> dict:
    from hwmodels.spec import SPEC_DIR

    return copy.deepcopy(_parsed(str(SPEC_DIR / f"{name}.yaml")))


def _model_doc(name="Llama-3.1-8B") -> dict:
    from simulator.model import MODEL_DIR

    return copy.deepcopy(_parsed(str(MODEL_DIR / f"{name}.yaml")))


SPEC_NUMERIC = ["max_devices_per_node", "compute_units.count", "compute_units.clock_ghz", "peak_tflops.bf16",
                "peak_tflops.fp8", "memory.hbm.capacity_gib", "memory.hbm.bandwidth_gbps",
                "onchip.smem_per_unit_kib", "onchip.l2_mib", "launch_overhead_us.eager", "launch_overhead_us.graph",
                "interconnect.bandwidth_gbps", "interconnect.latency_us"]


def spec_cases() -> list[Case]:
    cases = []
    scen = copy.deepcopy(BASE_SCENARIO)
    scen["hardware"] = "hw.yaml"
    for path in SPEC_NUMERIC:
        for i, bad in enumerate([-1, 0, "x", True, math.nan, math.inf, 1e30, [], {}]):
            doc = _spec_doc()
            node = doc
            for p in path.split(".")[:-1]:
                node = node[p]
            leaf = path.split(".")[-1]
            node[leaf] = dict(node[leaf], value=bad)
            cases.append(Case(f"spec_{path}_{i}", {"hw.yaml": _dump(doc), "s.yaml": _dump(scen)},
                              ["run", "s.yaml", "--out", "out"], "error", path, "hw.yaml", ["spec"]))
    for nm, mut in [("no_source", lambda d: d["memory"]["hbm"]["bandwidth_gbps"].pop("source")),
                    ("empty_source", lambda d: d["memory"]["hbm"]["bandwidth_gbps"].update(source=" ")),
                    ("bare_number", lambda d: d["memory"]["hbm"].update(bandwidth_gbps=3350)),
                    ("bad_arch", lambda d: d.update(architecture="pascal")),
                    ("bad_kind", lambda d: d.update(kind="cpu")),
                    ("devices_over_max", lambda d: d.update(devices=16)),
                    ("devices_zero", lambda d: d.update(devices=0)),
                    ("no_peaks", lambda d: d.update(peak_tflops={})),
                    ("unknown_peak_dtype", lambda d: d["peak_tflops"].update(fp5={"value": 1, "source": "x"})),
                    ("missing_memory", lambda d: d.pop("memory")),
                    ("bad_link_kind", lambda d: d["interconnect"].update(kind="ethernet")),
                    ("calibration_from_unknown", lambda d: d.update(calibration_from="NoSuchGPU")),
                    ("name_number", lambda d: d.update(name=5))]:
        doc = _spec_doc()
        mut(doc)
        cases.append(Case(f"spec_{nm}", {"hw.yaml": _dump(doc), "s.yaml": _dump(scen)},
                          ["run", "s.yaml", "--out", "out"], "error", None, "hw.yaml", ["spec"]))
    cases.append(Case("spec_list", {"hw.yaml": b"- 1\n", "s.yaml": _dump(scen)}, ["run", "s.yaml", "--out", "out"],
                      "error", None, "hw.yaml", ["spec"]))
    cases.append(Case("spec_binary", {"hw.yaml": bytes(range(256)), "s.yaml": _dump(scen)},
                      ["run", "s.yaml", "--out", "out"], "error", None, "hw.yaml", ["spec"]))
    cases.append(Case("hw_show_bad_file", {"hw.yaml": b"name: [\n"}, ["hw", "show", "hw.yaml"], "error", None,
                      "hw.yaml", ["spec"]))
    return cases


MODEL_INT = ["layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab", "max_context"]


def model_cases() -> list[Case]:
    cases = []
    scen = copy.deepcopy(BASE_SCENARIO)
    scen["model"] = "m.yaml"
    for f in MODEL_INT:
        for i, bad in enumerate([-1, 0, 1.5, "x", True, math.nan, None, 10**12, [], {}]):
            doc = _model_doc()
            doc[f] = bad
            cases.append(Case(f"model_{f}_{i}", {"m.yaml": _dump(doc), "s.yaml": _dump(scen)},
                              ["run", "s.yaml", "--out", "out"], "error", f, "m.yaml", ["model"]))
    for nm, mut, fld in [("heads_not_multiple", lambda d: d.update(kv_heads=7), "kv_heads"),
                         ("mha_mismatch", lambda d: d.update(attention="mha"), "kv_heads"),
                         ("mla_without_block", lambda d: d.update(attention="mla"), "mla"),
                         ("bad_activation", lambda d: d.update(activation="tanh"), "activation"),
                         ("bad_norm", lambda d: d.update(norm="batchnorm"), "norm"),
                         ("bad_dtype", lambda d: d.update(dtype="fp7"), "dtype"),
                         ("tie_not_bool", lambda d: d.update(tie_embeddings="yes"), "tie_embeddings"),
                         ("unknown_field", lambda d: d.update(bogus=1), None),
                         ("moe_not_mapping", lambda d: d.update(moe=5), "moe"),
                         ("moe_missing_keys", lambda d: d.update(moe={"experts": 8}), "moe"),
                         ("moe_negative", lambda d: d.update(moe={"experts": -8, "shared_experts": 0, "top_k": 2,
                                                                  "expert_ffn": 100, "first_dense_layers": 0}), "moe"),
                         ("moe_topk_over_experts", lambda d: d.update(moe={"experts": 8, "shared_experts": 0,
                                                                           "top_k": 9, "expert_ffn": 100,
                                                                           "first_dense_layers": 0}), "moe"),
                         ("mtp_bad", lambda d: d.update(mtp={"modules": "x"}), "mtp"),
                         ("name_empty", lambda d: d.update(name=""), "name"),
                         ("source_missing", lambda d: d.pop("source"), "source"),
                         ("notes_list", lambda d: d.update(notes=[1, 2]), "notes"),
                         ("rope_theta_str", lambda d: d.update(rope_theta="big"), "rope_theta")]:
        doc = _model_doc()
        mut(doc)
        cases.append(Case(f"model_{nm}", {"m.yaml": _dump(doc), "s.yaml": _dump(scen)},
                          ["run", "s.yaml", "--out", "out"], "error", fld, "m.yaml", ["model"]))
    cases.append(Case("models_show_missing", {}, ["models", "show", "nosuch.yaml"], "error", None, "nosuch.yaml",
                      ["model"]))
    return cases


def cli_cases() -> list[Case]:
    """Command-line misuse and output-folder problems (found before any pricing)."""
    good = _dump(BASE_SCENARIO)
    out = [
        Case("cli_run_missing_file", {}, ["run", "nosuch.yaml"], "error", None, "nosuch.yaml"),
        Case("cli_run_directory", {"d/x": b""}, ["run", "d"], "error", None, "d"),
        Case("cli_out_is_file", {"s.yaml": good, "o": b"x"}, ["run", "s.yaml", "--out", "o"], "error", None, "o"),
        Case("cli_out_sub_is_file", {"s.yaml": good, "o/fz": b"x"}, ["run", "s.yaml", "--out", "o"], "error", None,
             "fz"),
        Case("cli_sweep_missing", {}, ["sweep", "nosuch"], "error", None, "nosuch"),
        Case("cli_hw_show_unknown", {}, ["hw", "show", "NoSuchGPU"], "error", None, "NoSuchGPU"),
        Case("cli_hw_show_no_name", {}, ["hw", "show"], "error", None, ""),
        Case("cli_models_show_unknown", {}, ["models", "show", "NoSuch"], "error", None, "NoSuch"),
        Case("cli_strategies_bad_axis", {}, ["strategies", "bogus"], "error", None, "bogus"),
        Case("cli_figures_run_nothing", {}, ["figures", "run"], "error", None, ""),
        Case("cli_figures_run_no_targets", {"s.yaml": good}, ["figures", "run", "s.yaml"], "error", None, "s.yaml"),
        Case("cli_figures_list_extra", {}, ["figures", "list", "extra"], "error", None, "extra"),
        Case("cli_scenarios_show_unknown", {}, ["scenarios", "show", "nosuch"], "error", None, "nosuch"),
        Case("ok_cli_run_shipped_name", {}, ["run", "quickstart", "--out", "o"], "ok"),
        Case("ok_cli_scenarios_list", {}, ["scenarios", "list"], "ok"),
    ]
    for c in out:
        c.tags.append("cli")
    return out


def all_cases() -> list[Case]:
    return scenario_cases() + strategy_param_cases() + spec_cases() + model_cases() + cli_cases()


# ---- classification ---------------------------------------------------------------------------------------
def classify(case: Case, rc: int | None, stderr: str, crashed: bool) -> tuple[str, str]:
    """(outcome, why) for one finished case; see module docstring."""
    if crashed or "Traceback (most recent call last)" in stderr:
        return "traceback", stderr.strip().splitlines()[-1][:200] if stderr.strip() else "exception"
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    if case.expect == "ok":
        return ("ok", "") if rc == 0 else ("refused", " | ".join(lines)[:200])
    if rc == 0:
        return "accepted", "ran"
    if rc != 2:
        return "unclear", f"exit status {rc}: {' | '.join(lines)[:160]}"
    if len(lines) != 1:
        return "unclear", f"{len(lines)} lines: {' | '.join(lines)[:160]}"
    msg = lines[0]
    want_file = case.file_in_message if case.file_in_message is not None else next(iter(case.files), "")
    if want_file and want_file not in msg:
        return "unclear", f"no file name {want_file!r}: {msg[:160]}"
    if case.fld and case.fld not in msg:
        return "unclear", f"no field {case.fld!r}: {msg[:160]}"
    return "clean", msg[:200]
