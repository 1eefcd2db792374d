"""Generated inputs for the eight classes of input robustness (one generator per class), beside the field-by-field
cases of tests/fuzz_cases.py. Used by benchmarks/fuzz_report.py (each case in its own process, under a memory cap)
and, one representative per class, by tests/test_fuzz_classes.py.

  size        reads of device files and decompression bombs (a hard byte cap on what is read), speculative trees,
              parameter grids, workload grids, engine tables and request volumes bounded up front
  crossfield  model and hardware files whose fields contradict each other; unknown spec keys; calibration in use
  trace       the attention-trace contract: what simulator/traces/format.py documents is what every reader reads
  calib       `calibrate fit*` never fits half a CSV, rows outside physical ranges, a fit judged by its worst row,
              nothing written when nothing was fitted, never into an installed package
  list        one bad member of a list is an error naming it; a run where everything is refused exits 3
  misc        the remaining tracebacks and silent acceptances (duplicates, long paths, time zones, tiny rates ...)
  progress    long commands report progress when stderr is not a terminal; no temporary folders left behind
  exitcode    exit statuses: 0 ok, 2 bad input, 3 nothing fits / nothing priced

A case extends fuzz_cases.Case with: `cls` (the class above), `links` (file -> symlink target, e.g. /dev/zero),
`env`, `keep` (files that must be byte-identical afterwards: nothing may be rewritten), `absent` (paths that must
not exist afterwards), `want` (a regex the stderr must match: a warning, a progress line), `not_in_msg` (a
regex the one-line error must not match). Expectations: 'error' (exit 2, one line naming the file and field),
'ok' (exit 0), 'warn' (exit 0 and a stderr line matching `want`), 'nofit' (exit 3). These inputs are new: none
is a copy of an input of the newcomer reliability review.
"""
from __future__ import annotations

import copy
import gzip
import io
import json
import zipfile
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from hwmodels import datafiles as DF
from hwmodels.calibration import DATA_DIR  # noqa: E402
from tests.fuzz_cases import BASE_SCENARIO, Case, _dump, _model_doc, _spec_doc

CAL_DATA = DATA_DIR          # the installed package's calibration data (CI runs the suite against the wheel)
CLASSES = ("size", "crossfield", "trace", "calib", "list", "misc", "progress", "exitcode")


@dataclass
class ClassCase(Case):
    cls: str = ""
    links: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    keep: list[str] = field(default_factory=list)
    absent: list[str] = field(default_factory=list)
    want: str | None = None
    not_in_msg: str | None = None
    timeout: int = 180


def _case(cls, name, files, argv, expect="error", fld=None, file_in_message=None, **kw) -> ClassCase:
    files = {k: (v if isinstance(v, bytes) else _dump(v)) for k, v in files.items()}
    return ClassCase(f"{cls}_{name}", files, argv, expect, fld, file_in_message, [cls], cls=cls, **kw)


def _run(cls, name, doc, expect="error", fld=None, extra=None, argv_extra=(), cmd="run", **kw) -> ClassCase:
    files = {"s.yaml": doc}
    files.update(extra or {})
    return _case(cls, name, files, [cmd, "s.yaml", "--out", "out", *argv_extra], expect, fld, "s.yaml", **kw)


def _scen(**changes) -> dict:
    d = copy.deepcopy(BASE_SCENARIO)
    for k, v in changes.items():
        d[k] = v
    return d


def _serving(requests=None, **more) -> dict:
    s = {"requests": requests or {"poisson": {"rate": 4, "count": 40}, "input_tokens": {"fixed": 300},
                                  "output_tokens": {"fixed": 24}}}
    s.update(more)
    return _scen(serving=s)


def _plan(**more) -> dict:
    p = {"workload": {"poisson": {"rate": 2, "count": 40}, "input_tokens": {"fixed": 400},
                      "output_tokens": {"fixed": 20}},
         "slo": {"ttft_p90_ms": 3000}, "target": {"rate_req_s": 1}, "search": {"max_runs": 3},
         "quick": {"limit": 30, "max_runs": 3}}
    p.update(more)
    return _scen(plan=p)


# ---- 1. memory and size bounds ---------------------------------------------------------------------------
@lru_cache(maxsize=1)
def _gzip_bomb() -> bytes:
    """~4 MB of gzip members that expand to 4 GiB of zeros (a valid multi-member gzip file)."""
    one = gzip.compress(b"\0" * (1 << 20), compresslevel=9)
    return one * 4096


def size_cases() -> list[ClassCase]:
    c = "size"
    out = [
        _case(c, "models_show_urandom", {}, ["models", "show", "m.yaml"], links={"m.yaml": "/dev/urandom"},
              file_in_message="m.yaml"),
        _case(c, "hw_show_zero", {}, ["hw", "show", "gpu.yaml"], links={"gpu.yaml": "/dev/zero"},
              file_in_message="gpu.yaml"),
        _case(c, "scenario_itself_zero", {}, ["run", "big.yaml", "--out", "out"], links={"big.yaml": "/dev/zero"},
              file_in_message="big.yaml"),
        _run(c, "model_path_urandom", _scen(model="weights.yaml"), fld="model", links={"weights.yaml": "/dev/urandom"}),
        _case(c, "trace_info_npz_zero", {}, ["trace", "info", "t.npz"], links={"t.npz": "/dev/zero"},
              file_in_message="t.npz"),
        _case(c, "trace_stats_jsonl_zero", {}, ["trace", "stats", "r.jsonl", "--out", "o"],
              links={"r.jsonl": "/dev/zero"}, file_in_message="r.jsonl"),
        _case(c, "trace_stats_csv_urandom", {}, ["trace", "stats", "r.csv", "--out", "o"],
              links={"r.csv": "/dev/urandom"}, file_in_message="r.csv"),
        _case(c, "calibrate_fit_zero", {}, ["calibrate", "fit", "m.csv", "--device", "H100-SXM", "--fitted-dir", "F",
                                            "--out", "co"], links={"m.csv": "/dev/zero"}, file_in_message="m.csv"),
        _case(c, "trace_stats_gzip_bomb", {"b.jsonl.gz": _gzip_bomb()}, ["trace", "stats", "b.jsonl.gz", "--out", "o"],
              file_in_message="b.jsonl.gz"),
        _run(c, "replay_file_zero",
             _serving(replicas=[{"strategies": {"speculation": {"eagle3": {"k": 3}}}}],
                      acceptance={"replay": "acc.txt"}), fld="serving.acceptance", cmd="simulate",
             links={"acc.txt": "/dev/zero"}),
        _run(c, "empirical_lengths_urandom",
             _serving({"poisson": {"rate": 2, "count": 20}, "input_tokens": {"empirical": "lens.csv"},
                       "output_tokens": {"fixed": 8}}), fld="serving.requests", cmd="simulate",
             links={"lens.csv": "/dev/urandom"}),
    ]
    # speculative trees: the verified nodes per round are bounded (branch^depth grows without limit)
    for nm, spec, fld in [("eagle3_unpruned_12x6", {"eagle3": {"tree": {"branch": 12, "depth": 6}}}, None),
                          ("draft_unpruned_300x3", {"draft_model": {"tree": {"branch": 300, "depth": 3, "nodes": 0}}},
                           None),
                          ("mtp_unpruned_3x14", {"mtp": {"tree": {"branch": 3, "depth": 14}}}, None),
                          ("eagle3_budget_huge", {"eagle3": {"tree": {"branch": 6, "depth": 12, "nodes": 2_000_000}}},
                           None)]:
        model = "DeepSeek-V3" if "mtp" in spec else "Llama-3.1-8B"
        out.append(_run(c, nm, _scen(model=model, strategies={"speculation": [spec]}), fld="strategies.speculation"))
    out.append(_run(c, "ok_eagle3_tree_5x3", _scen(strategies={"speculation": [{"eagle3": {"tree": {"branch": 5,
                                                                                                     "depth": 3}}}]}),
                    expect="ok"))
    # parameter grids and workload grids
    out.append(_run(c, "lserve_grid_45x45x9", _scen(workload={"batch": [1], "context": [16384],
                                                                             "output_tokens": 16},
                                                    strategies={"attention": [{"lserve": {
                                                        "token_budget": list(range(1024, 1024 + 45 * 64, 64)),
                                                        "reuse_interval": list(range(1, 46)),
                                                        "local_pages": list(range(1, 10))}}]}),
                    fld="strategies.attention"))
    out.append(_run(c, "workload_grid_600x300x3", _scen(workload={"batch": list(range(1, 601)),
                                                                  "context": list(range(2048, 2048 + 300 * 16, 16)),
                                                                  "output_tokens": [8, 16, 32]}), fld="workload"))
    out.append(_run(c, "tuple_product_overflow", _scen(
        hardware=["H100-SXM", "H200", "B200", "A100-80GB"],
        strategies={"attention": [{"dense": {"split_tokens": list(range(16, 4016))}}],
                    "speculation": [{"eagle3": {"k": list(range(1, 65)), "acceptance": [x / 40 for x in range(40)]}}],
                    "kv_dtype": ["bf16", "fp8", "fp16"], "parallelism": [{"tp": [1, 2, 4, 8]}]}),
        fld="strategies"))
    out.append(_case(c, "sweep_parquet_beyond_stream_bound", {"s.yaml": _scen(
        hardware=["H100-SXM", "H200"], workload={"batch": list(range(1, 65)), "context": [4096, 8192], "output_tokens": 8},
        strategies={"attention": [{"dense": {"split_tokens": list(range(16, 9016))}}],
                    "speculation": [{"eagle3": {"k": list(range(1, 65)), "acceptance": [x / 100 for x in range(100)]}}],
                    "kv_dtype": ["bf16", "fp8"]})}, ["sweep", "s.yaml", "--parquet", "--out", "out"], "error", None,
        "s.yaml"))
    # the engine's exact tables and request volumes
    out.append(_run(c, "engine_batched_tokens_huge", _serving(scheduler={"max_num_batched_tokens": 40_000_000}),
                    fld="serving.scheduler.max_num_batched_tokens", cmd="simulate"))
    out.append(_run(c, "engine_num_blocks_beyond_memory", _serving(scheduler={"num_blocks": 300_000_000}),
                    fld="serving.scheduler.num_blocks", cmd="simulate"))
    out.append(_run(c, "engine_max_seqs_huge", _serving(scheduler={"max_num_seqs": 200_000_000}),
                    fld="serving.scheduler.max_num_seqs", cmd="simulate"))
    out.append(_run(c, "request_volume_huge", _serving({"gamma": {"rate": 50, "cv": 2, "count": 30_000_000},
                                                        "input_tokens": {"lognormal": {"mean": 400_000, "cv": 1}},
                                                        "output_tokens": {"fixed": 2000}}),
                    fld="serving.requests", cmd="simulate"))
    out.append(_run(c, "requests_flag_volume_huge", _serving({"poisson": {"rate": 5, "count": 10},
                                                              "input_tokens": {"fixed": 2_000_000},
                                                              "output_tokens": {"fixed": 4}}),
                    fld="serving.requests", cmd="simulate", argv_extra=("--requests", "20000000")))
    return out


# ---- 2. cross-field validation of model and hardware files ----------------------------------------------------
def _model_case(c, name, mut, fld, base="Llama-3.1-8B", expect="error", show=False, **kw) -> ClassCase:
    doc = _model_doc(base)
    mut(doc)
    if show:
        return _case(c, name, {"m.yaml": doc}, ["models", "show", "m.yaml"], expect, fld, "m.yaml", **kw)
    return _case(c, name, {"m.yaml": doc, "s.yaml": _scen(model="m.yaml")}, ["run", "s.yaml", "--out", "out"],
                 expect, fld, "m.yaml", **kw)


def _spec_case(c, name, mut, fld, base="H100-SXM", expect="error", show=False, **kw) -> ClassCase:
    doc = _spec_doc(base)
    mut(doc)
    if show:
        return _case(c, name, {"gpu.yaml": doc}, ["hw", "show", "gpu.yaml"], expect, fld, "gpu.yaml", **kw)
    return _case(c, name, {"gpu.yaml": doc, "s.yaml": _scen(hardware="gpu.yaml")}, ["run", "s.yaml", "--out", "out"],
                 expect, fld, "gpu.yaml", **kw)


def _set_path(doc, path, value):
    node = doc
    parts = path.split(".")
    for p in parts[:-1]:
        node = node[p]
    node[parts[-1]] = value


def crossfield_cases() -> list[ClassCase]:
    c = "crossfield"
    ds = "DeepSeek-V3"
    out = [
        _model_case(c, "moe_dense_layers_over_layers", lambda d: d["moe"].update(first_dense_layers=70), "moe",
                    base=ds, show=True),
        _model_case(c, "moe_dense_layers_equal_layers_run", lambda d: d["moe"].update(first_dense_layers=61), "moe",
                    base=ds),
        _model_case(c, "mla_block_on_mha", lambda d: d.update(mla=_model_doc(ds)["mla"]), "mla", base="Llama-2-7B"),
        _model_case(c, "mla_kv_rank_zero", lambda d: d["mla"].update(kv_lora_rank=0), "mla.kv_lora_rank", base=ds,
                    show=True),
        _model_case(c, "mla_rope_dim_zero", lambda d: d["mla"].update(qk_rope_head_dim=0), "mla.qk_rope_head_dim",
                    base=ds),
        _model_case(c, "mla_v_dim_zero", lambda d: d["mla"].update(v_head_dim=0), "mla.v_head_dim", base=ds),
        _model_case(c, "dsa_indexer_on_llama", lambda d: d.update(dsa_indexer={"heads": 64, "head_dim": 128,
                                                                             "topk": 2048, "dtype": "fp8"}),
                    "dsa_indexer", show=True),
        _model_case(c, "dsa_indexer_topk_zero", lambda d: d["dsa_indexer"].update(topk=0), "dsa_indexer.topk",
                    base="DeepSeek-V3.2-Exp"),
        _model_case(c, "moe_top_k_zero_shared", lambda d: d["moe"].update(top_k=0), "moe", base=ds),
        _model_case(c, "family_unknown_listing", lambda d: d.update(family="mistral"), "family",
                    not_in_msg=r"nemotron.*nemotron"),
        _spec_case(c, "sm_count_two_and_half", lambda d: d["compute_units"]["count"].update(value=2.5),
                   "compute_units.count"),
        _spec_case(c, "sm_count_quarter", lambda d: d["compute_units"]["count"].update(value=0.25),
                   "compute_units.count", show=True),
        _spec_case(c, "max_devices_fraction", lambda d: d["max_devices_per_node"].update(value=0.4),
                   "max_devices_per_node"),
        _spec_case(c, "max_devices_one_and_half", lambda d: d["max_devices_per_node"].update(value=7.5),
                   "max_devices_per_node"),
        _spec_case(c, "unknown_top_memory_gib", lambda d: d.update(memory_gib=80), None),
        _spec_case(c, "unknown_nested_hbm_bw", lambda d: d["memory"]["hbm"].update(bw_gbps={"value": 1, "source": "x"}),
                   "memory.hbm"),
        _spec_case(c, "unknown_onchip_l2_size", lambda d: d["onchip"].update(l2_size_mib={"value": 50, "source": "x"}),
                   "onchip", show=True),
        _spec_case(c, "unknown_link_key", lambda d: d["interconnect"].update(bandwith_gbps={"value": 900,
                                                                                            "source": "x"}),
                   "interconnect"),
        _spec_case(c, "unknown_key_in_value_entry", lambda d: d["memory"]["hbm"]["capacity_gib"].update(unit="GB"),
                   "memory.hbm.capacity_gib"),
        _spec_case(c, "assumed_text_yes", lambda d: d["memory"]["hbm"]["bandwidth_gbps"].update(assumed="yes"),
                   "memory.hbm.bandwidth_gbps"),
        _spec_case(c, "assumed_number", lambda d: d["compute_units"]["clock_ghz"].update(assumed=1),
                   "compute_units.clock_ghz"),
        _spec_case(c, "name_with_separator", lambda d: d.update(name="gpus/H100"), "name"),
        _spec_case(c, "name_dotdot", lambda d: d.update(name=".."), "name", show=True),
        _spec_case(c, "calibration_from_path", lambda d: d.update(calibration_from="../fitted/H100-SXM"),
                   "calibration_from"),
        _spec_case(c, "renamed_copy_warns", lambda d: d.update(name="MyLabH100"), None, expect="warn",
                   want=r"(?i)uncalibrated.*MyLabH100|MyLabH100.*uncalibrated"),
        _spec_case(c, "ok_renamed_copy_borrowing", lambda d: d.update(name="MyLabH100b", calibration_from="H100-SXM"),
                   None, expect="ok"),
    ]
    # a simulate and a plan with a renamed copy must say so too
    doc = _spec_doc()
    doc["name"] = "RackH100"
    out.append(_case(c, "renamed_copy_simulate_warns", {"gpu.yaml": doc, "s.yaml": _serving() | {"hardware": "gpu.yaml"}},
                     ["simulate", "s.yaml", "--out", "out"], "warn", None, "gpu.yaml",
                     want=r"(?i)uncalibrated.*RackH100|RackH100.*uncalibrated"))
    out.append(_case(c, "renamed_copy_plan_warns", {"gpu.yaml": doc, "s.yaml": _plan(
                     prices={"override": {"RackH100": 2.0}}) | {"hardware": "gpu.yaml"}},
                     ["plan", "s.yaml", "--quick", "--out", "out"], "warn", None, "gpu.yaml",
                     want=r"(?i)uncalibrated.*RackH100|RackH100.*uncalibrated"))
    return out


# ---- 3. one trace contract --------------------------------------------------------------------------------
def _npz(meta: dict, arrays: dict[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("meta.json", json.dumps(meta))
        for k, a in arrays.items():
            b = io.BytesIO()
            np.lib.format.write_array(b, np.ascontiguousarray(a), allow_pickle=False)
            zf.writestr(k + ".npy", b.getvalue())
    return buf.getvalue()


def trace_parts(spec: dict | None = None, accepted=None, positions=None, **meta_changes) -> tuple[dict, dict]:
    """A small valid trace (meta, arrays): 6 steps, 2 layers, 2 KV heads, one token top-k policy of k = 8."""
    S, L, H, k = 6, 2, 2, 8
    prompt = 200
    pos = np.arange(prompt, prompt + S, dtype=np.int32) if positions is None else np.asarray(positions, np.int32)
    rng = np.random.default_rng(7)
    counts = np.full((S, L, H, 1), k, dtype=np.uint16)
    flat = []
    for s in range(S):
        for _ in range(L * H):
            flat.append(np.sort(rng.choice(int(pos[s]), k, replace=False)))
    flat = np.concatenate(flat).astype(np.int64)
    delta = np.diff(flat, prepend=0)
    delta[::k] = flat[::k]
    meta = {"format": "sparsesim.attention-trace", "version": 1, "name": "fz_trace", "source": "synthetic",
            "model": {"name": "fz-model", "layers": L, "heads": 4, "kv_heads": H, "head_dim": 16, "params": 123456,
                      "max_context": 4096},
            "context": {"prompt_tokens": prompt, "max_tokens": prompt + S}, "steps": S,
            "made": {"date": "2026-01-02", "script": "tests/fuzz_classes.py", "how": "random rows", "seed": 7},
            "provenance": "generated by the fuzz generator",
            "policies": {"topk": {"kind": "token_topk", "unit": "token", "block_size": 1, "k": k, "queries": 1,
                                  "tiers": None, "scores": False, "params": {}, "meaning": "random top-k rows"}}}
    if spec is not None:
        meta["spec"] = spec
    for key, v in meta_changes.items():
        _set_path(meta, key, v) if "." in key else meta.__setitem__(key, v)
    arrays = {"positions": pos, "step_index": np.arange(S, dtype=np.int32), "sel.topk.counts": counts,
              "sel.topk.delta": delta.astype(np.uint16)}
    if accepted is not None:
        arrays["spec.accepted"] = np.asarray(accepted, dtype=np.int16)
    return meta, arrays


def _trace_cases(c, name, meta, arrays, expect="error", fld=None, cmds=("info", "stats", "run")) -> list[ClassCase]:
    blob = _npz(meta, arrays)
    out = []
    for cmd in cmds:
        if cmd == "run":
            out.append(_case(c, f"{name}_run", {"t.npz": blob, "s.yaml": _scen(trace="t.npz")},
                             ["run", "s.yaml", "--out", "out"], expect, fld and "trace", "t.npz"))
        else:
            argv = ["trace", cmd, "t.npz"] + (["--out", "o"] if cmd == "stats" else [])
            out.append(_case(c, f"{name}_{cmd}", {"t.npz": blob}, argv, expect, fld, "t.npz"))
    return out


def trace_cases() -> list[ClassCase]:
    c = "trace"
    out: list[ClassCase] = []
    tree = {"tree_parent": [-1, -1, 0, 0, 1]}              # a documented tree without 'k'
    out += _trace_cases(c, "ok_tree_spec_without_k", *trace_parts(tree, [0, 1, 2, 2, 1, 0]), expect="ok")
    out += _trace_cases(c, "ok_chain_spec_with_k", *trace_parts({"tree_parent": [-1, 0, 1], "k": 3}, [3, 0, 2]),
                        expect="ok", cmds=("stats",))
    out += _trace_cases(c, "ok_draft_model_mapping", *trace_parts(
        draft_model={"name": "tiny", "layers": 2, "heads": 2, "kv_heads": 1, "head_dim": 16, "params": 9000}),
        expect="ok", cmds=("info", "stats"))
    for nm, spec, acc, fld in [("spec_k_zero", {"tree_parent": [-1, 0], "k": 0}, [0, 1], "meta.spec.k"),
                               ("spec_k_text", {"tree_parent": [-1, 0], "k": "two"}, [0, 1], "meta.spec.k"),
                               ("spec_k_beyond_tree", {"tree_parent": [-1, 0], "k": 9}, [0, 1], "meta.spec.k"),
                               ("accepted_beyond_k", {"tree_parent": [-1, 0, 1, 2], "k": 2}, [0, 3, 1], "spec.accepted"),
                               ("spec_verification_number", {"tree_parent": [-1, 0], "verification": 5}, [0],
                                "meta.spec.verification")]:
        out += _trace_cases(c, nm, *trace_parts(spec, acc), fld=fld, cmds=("info", "stats"))
    for nm, dm, fld in [("draft_model_number", 42, "meta.draft_model"),
                        ("draft_model_list", ["tiny", 2], "meta.draft_model"),
                        ("draft_model_params_text", {"name": "tiny", "layers": 2, "params": "3M"},
                         "meta.draft_model.params"),
                        ("draft_model_layers_negative", {"name": "tiny", "layers": -2, "params": 100},
                         "meta.draft_model.layers"),
                        ("draft_model_name_number", {"name": 7, "layers": 2, "params": 100}, "meta.draft_model.name")]:
        out += _trace_cases(c, nm, *trace_parts(draft_model=dm), fld=fld)
    for nm, changes, fld in [("max_context_below_positions", {"model.max_context": 150}, "meta.model.max_context"),
                             ("prompt_beyond_max_tokens", {"context.prompt_tokens": 900}, "meta.context.prompt_tokens"),
                             ("synthetic_not_mapping", {"synthetic": "yes"}, "meta.synthetic"),
                             ("record_config_list", {"record_config": [1, 2]}, "meta.record_config"),
                             ("unknown_meta_key", {"extras": {"a": 1}}, "meta")]:
        out += _trace_cases(c, nm, *trace_parts(**changes), fld=fld, cmds=("info", "stats"))
    meta, arrays = trace_parts(positions=[150, 201, 202, 203, 204, 205])   # a step below prompt_tokens 200
    out += _trace_cases(c, "positions_below_prompt", meta, arrays, fld="positions", cmds=("info",))
    return out


# ---- 4. calibration that cannot be half-fitted ---------------------------------------------------------------
@lru_cache(maxsize=1)
def _measure_csv() -> str:
    return DF.read_text(CAL_DATA / "nvidia-h100-80gb-hbm3_2026-11-22.csv")


def _csv_without(text: str, keep_row) -> bytes:
    import csv

    rows = list(csv.reader(io.StringIO(text)))
    head, body = rows[0], rows[1:]
    ix = {h: i for i, h in enumerate(head)}
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(head)
    for r in body:
        r2 = keep_row(dict(zip(head, r)), r, ix)
        if r2 is not None:
            w.writerow(r2)
    return buf.getvalue().encode()


def _fit_case(c, name, keep_row, fld=None, **kw) -> ClassCase:
    data = _csv_without(_measure_csv(), keep_row)
    return _case(c, name, {"m.csv": data}, ["calibrate", "fit", "m.csv", "--device", "H100-SXM", "--fitted-dir", "F",
                                            "--out", "co"], "error", fld, "m.csv", absent=["F/H100-SXM.yaml"], **kw)


def calib_cases() -> list[ClassCase]:
    c = "calib"
    out = []

    def drop(fam):
        return lambda d, r, ix: None if d["family"] == fam else r

    out.append(_fit_case(c, "no_decode_attention_rows", drop("decode_attn")))
    out.append(_fit_case(c, "no_paged_rows", drop("paged_attn")))
    out.append(_fit_case(c, "no_elementwise_rows", drop("elementwise")))

    def gemm_times_blank(d, r, ix):
        if d["family"] == "gemm":
            r = list(r)
            r[ix["median_us"]] = ""
        return r

    out.append(_fit_case(c, "gemm_rows_all_untimed", gemm_times_blank))

    def mutate_first(fam, col, value, n=2, backend=None):
        seen = [0]

        def f(d, r, ix):
            if d["family"] == fam and seen[0] < n and (backend is None or d["backend"] == backend):
                seen[0] += 1
                r = list(r)
                r[ix[col]] = value
            return r
        return f

    out.append(_fit_case(c, "gemm_n_beyond_physical", mutate_first("gemm", "n", "3e11"), fld="n"))
    out.append(_fit_case(c, "attn_context_beyond_physical", mutate_first("decode_attn", "context", "9e13"),
                         fld="context"))
    out.append(_fit_case(c, "gemm_m_fractional", mutate_first("gemm", "m", "2.5"), fld="m"))
    out.append(_fit_case(c, "copy_bytes_petabytes", mutate_first("copy", "bytes", "4e18"), fld="bytes"))
    out.append(_fit_case(c, "one_fit_attention_time_x1e5", mutate_first("decode_attn", "median_us", "4000000", n=1,
                                                                         backend="cudnn+gqa_native")))
    # fit-regimes on a handful of rows: nothing to fit; the fitted file must not be rewritten
    reg = DF.read_text(CAL_DATA / "regimes_nvidia-h100-80gb-hbm3_2026-11-22_v4.csv").splitlines()
    few = ("\n".join(reg[:1] + reg[200:203]) + "\n").encode()
    fitted = (DATA_DIR.parent / "fitted" / "H100-SXM.yaml").read_bytes()
    out.append(_case(c, "fit_regimes_three_rows", {"r.csv": few, "F/H100-SXM.yaml": fitted},
                     ["calibrate", "fit-regimes", "r.csv", "--device", "H100-SXM", "--fitted-dir", "F", "--out", "co"],
                     "error", None, "r.csv", keep=["F/H100-SXM.yaml"]))
    lat = DF.read_text(CAL_DATA / "latency_nvidia-h100-80gb-hbm3_2026-11-22.csv").splitlines()
    only_chase = "\n".join([lat[0]] + [x for x in lat[1:] if ",chase," in x]) + "\n"
    out.append(_case(c, "fit_latency_no_loop_rows", {"l.csv": only_chase.encode(), "F/H100-SXM.yaml": fitted},
                     ["calibrate", "fit-latency", "l.csv", "--device", "H100-SXM", "--fitted-dir", "F", "--out", "co"],
                     "error", None, "l.csv", keep=["F/H100-SXM.yaml"]))
    pre = (CAL_DATA / "prefill_attn_nvidia-h100-80gb-hbm3_2026-11-22.csv").read_text().splitlines()
    no_cudnn = "\n".join([pre[0]] + [x for x in pre[1:] if ",cudnn," not in x]) + "\n"
    out.append(_case(c, "fit_prefill_no_cudnn_rows", {"p.csv": no_cudnn.encode(), "F/H100-SXM.yaml": fitted},
                     ["calibrate", "fit-prefill", "p.csv", "--device", "H100-SXM", "--fitted-dir", "F", "--out", "co"],
                     "error", None, "p.csv", keep=["F/H100-SXM.yaml"]))
    # reports and plots never go into an installed package
    site = Path(np.__file__).resolve().parents[1]
    target = site / "sparsesim_fuzz_report_out"
    out.append(_case(c, "report_out_in_site_packages", {}, ["calibrate", "report", "H100-SXM", "--out", str(target)],
                     "error", None, str(target), absent=[str(target)]))
    target2 = site / "numpy" / "sparsesim_fuzz_run_out"
    out.append(_case(c, "run_out_in_installed_package", {}, ["run", "quickstart", "--out", str(target2)], "error",
                     None, str(target2), absent=[str(target2)]))
    return out


# ---- 5. a bad member of a list is an error, not a skip --------------------------------------------------------
def list_cases() -> list[ClassCase]:
    c = "list"
    long = {"batch": [1], "context": [16384], "output_tokens": 16}
    out = []
    for nm, st, fld in [
        ("lserve_page_not_multiple", {"attention": ["dense", {"lserve": {"page": 72, "logical_page": 16}}]},
         "strategies.attention.lserve"),
        ("lserve_page_in_grid", {"attention": [{"lserve": {"page": [64, 40]}}]}, "strategies.attention.lserve"),
        ("fa2_varlen_flashinfer", {"attention": ["dense", {"dense": {"fa2_call": "varlen", "kernel": "cudnn"}}]},
         "strategies.attention.dense"),
        ("per_position_vs_k", {"speculation": ["none", {"eagle3": {"k": 3, "per_position": [0.9, 0.8]}}]},
         "strategies.speculation.eagle3"),
        ("accept_lengths_vs_k", {"speculation": [{"draft_model": {"k": 2, "accept_lengths": [0.2, 0.3, 0.3, 0.2]}},
                                                 "none"]}, "strategies.speculation.draft_model"),
        ("per_position_vs_tree_levels", {"speculation": [{"eagle3": {"tree": {"branch": 2, "depth": 3},
                                                                     "per_position": [0.8, 0.7]}}]},
         "strategies.speculation.eagle3"),
        ("refresh_first_layer_reuse", {"attention": ["nsa"], "topk": ["none"],
                                       "schedule": ["none", {"refresh_reuse": {"layers": ["U"] + ["R"] * 31}}]},
         "strategies.schedule.refresh_reuse"),
        ("refresh_layers_wrong_count", {"attention": ["nsa"],
                                        "schedule": [{"refresh_reuse": {"layers": ["R", "U"] * 5}}]},
         "strategies.schedule.refresh_reuse"),
        ("snapkv_window_over_capacity", {"kv_policy": ["full", {"snapkv": {"window": 512, "max_capacity": 256}}]},
         "strategies.kv_policy.snapkv"),
        ("snapstream_sink_recent_over_budget", {"kv_policy": [{"snapstream": {"budget_tokens": 1000,
                                                                             "recent_tokens": 1200}}]},
         "strategies.kv_policy.snapstream"),
        ("nsa_stride_over_block", {"attention": ["dense", {"nsa": {"block": 16, "stride": 32}}]},
         "strategies.attention.nsa"),
        ("repeat_kv_on_mla_only", {"attention": ["dense", {"dense": {"gqa_expand": "repeat_kv"}}]},
         "strategies.attention.dense"),
    ]:
        doc = _scen(workload=long, strategies=st)
        if nm == "repeat_kv_on_mla_only":
            doc["model"] = "DeepSeek-V3"
            doc["strategies"]["parallelism"] = [{"tp": 8}]
            doc["strategies"]["weight_dtype"] = ["fp8"]
        out.append(_run(c, nm, doc, fld=fld))
    # the same value refused for one model only stays a skip (another model takes it)
    out.append(_run(c, "ok_repeat_kv_one_of_two_models", _scen(model=["Llama-3.1-8B", "DeepSeek-V3"], strategies={
        "attention": [{"dense": {"gqa_expand": "repeat_kv"}}], "parallelism": [{"tp": 8}], "weight_dtype": ["fp8"]}),
        expect="ok"))
    out.append(_run(c, "plan_list_member_bad", _plan() | {"strategies": {"attention": ["dense", {"lserve": {"page": 20}}]}},
                    fld="strategies.attention.lserve", cmd="plan", argv_extra=("--quick",)))
    out.append(_run(c, "serving_replica_bad_member", _serving(replicas=[
        {"count": 1}, {"count": 1, "strategies": {"kv_policy": {"snapkv": {"window": 64, "max_capacity": 32}}}}]),
        fld="serving.replicas[1].strategies.kv_policy", cmd="simulate"))
    # a strategy that cannot run on the model as such (not a parameter choice) stays a skip: exit 3 when alone
    out.append(_run(c, "quest_alone_on_gqa", _scen(workload=long, strategies={"attention": ["quest"]}), expect="nofit"))
    out.append(_run(c, "ok_quest_beside_dense_on_gqa", _scen(workload=long, strategies={"attention": ["dense", "quest"]}),
                    expect="ok"))
    # everything refused by the hardware: nothing priced -> exit 3 with the reasons
    out.append(_run(c, "all_refused_tp16", _scen(strategies={"parallelism": [{"tp": [16, 32]}]}), expect="nofit"))
    out.append(_case(c, "sweep_all_refused", {"s.yaml": _scen(strategies={"parallelism": [{"tp": [3, 5, 6]}]},
        workload={"batch": [1], "context": [4096, 8192], "output_tokens": 16})},
        ["sweep", "s.yaml", "--out", "out"], "nofit"))
    return out


# ---- 6. the remaining tracebacks and silent acceptances ------------------------------------------------------
def _azure(rows: list[str]) -> bytes:
    return ("TIMESTAMP,ContextTokens,GeneratedTokens\n" + "\n".join(rows) + "\n").encode()


def misc_cases() -> list[ClassCase]:
    c = "misc"
    out = [
        _run(c, "hardware_twice_among_three", _scen(hardware=["H200", "H100-SXM", "H200"]), fld="hardware"),
        _case(c, "model_twice_name_and_path", {"m/Llama-3.1-8B.yaml": _model_doc(), "s.yaml": _scen(
            model=["m/Llama-3.1-8B.yaml", "m/../m/Llama-3.1-8B.yaml"])}, ["run", "s.yaml", "--out", "out"], "error",
            "model", "s.yaml"),
        _case(c, "out_component_too_long", {"s.yaml": _scen()}, ["run", "s.yaml", "--out", "o/" + "b" * 270 + "/x"],
              "error", None, "b" * 40),
        _case(c, "out_path_too_long", {"s.yaml": _scen()}, ["sweep", "s.yaml", "--out", "/".join(["c" * 200] * 25)],
              "error", None, "c" * 40),
        _case(c, "scheduler_no_port", {"s.yaml": _scen()}, ["sweep", "s.yaml", "--scheduler", "tcp://localhost",
                                                             "--out", "out"], "error", None, "tcp://localhost"),
        _case(c, "scheduler_garbage", {"s.yaml": _scen()}, ["run", "s.yaml", "--scheduler", "::::", "--out", "out"],
              "error", None, "::::"),
        _case(c, "ok_azure_mixed_offsets", {"a.csv": _azure(["2024-05-10 10:00:00+02:00,100,10",
                                                             "2024-05-10 08:00:05+00:00,120,12",
                                                             "2024-05-10 03:00:09-05:00,90,8"])},
              ["trace", "stats", "a.csv", "--out", "o"], "ok"),
        _case(c, "azure_naive_and_aware", {"a.csv": _azure(["2024-05-10 10:00:00,100,10",
                                                            "2024-05-10 10:00:05+00:00,120,12"])},
              ["trace", "stats", "a.csv", "--out", "o"], "error", "TIMESTAMP", "a.csv"),
        _run(c, "gamma_cv_1e-12", _serving({"gamma": {"rate": 3, "cv": 1e-12, "count": 30},
                                            "input_tokens": {"fixed": 100}, "output_tokens": {"fixed": 8}}),
             fld="serving.requests.gamma.cv", cmd="simulate"),
        _run(c, "fixed_length_5e18", _serving({"poisson": {"rate": 3, "count": 30}, "input_tokens": {"fixed": 5e18},
                                               "output_tokens": {"fixed": 8}}),
             fld="serving.requests.input_tokens", cmd="simulate"),
        _run(c, "uniform_high_1e22", _serving({"poisson": {"rate": 3, "count": 30},
                                               "input_tokens": {"uniform": [10, 1e22]}, "output_tokens": {"fixed": 8}}),
             fld="serving.requests.input_tokens", cmd="simulate"),
        _run(c, "output_lognormal_mean_1e40", _serving({"poisson": {"rate": 3, "count": 30},
                                                        "input_tokens": {"fixed": 100},
                                                        "output_tokens": {"lognormal": {"mean": 1e40, "cv": 0.5}}}),
             fld="serving.requests.output_tokens", cmd="simulate"),
        _run(c, "fixed_beyond_its_max", _serving({"poisson": {"rate": 3, "count": 30},
                                                  "input_tokens": {"fixed": 5000, "max": 300},
                                                  "output_tokens": {"fixed": 8}}),
             fld="serving.requests.input_tokens", cmd="simulate"),
        _run(c, "snapkv_kernel_six", _scen(strategies={"kv_policy": [{"snapkv": {"kernel": 6}}]}),
             fld="strategies.kv_policy.snapkv.kernel"),
        _run(c, "snapstream_kernel_even", _scen(strategies={"kv_policy": [{"snapstream": {"kernel": 4,
                                                                                        "budget_tokens": 2048}}]}),
             fld="strategies.kv_policy.snapstream.kernel"),
        _run(c, "gvr_passes_sum_1_4", _scen(model="DeepSeek-V3.2-Exp", strategies={
            "attention": ["dsa"], "topk": [{"gvr": {"passes": {1: 0.9, 3: 0.5}}}], "parallelism": [{"tp": 8}],
            "weight_dtype": ["fp8"]}, workload={"batch": [1], "context": [32768], "output_tokens": 16}),
             fld="strategies.topk.gvr.passes"),
        _run(c, "gvr_passes_sum_half", _scen(model="DeepSeek-V3.2-Exp", strategies={
            "attention": ["dsa"], "topk": [{"gvr": {"passes": {2: 0.25, 3: 0.25}}}], "parallelism": [{"tp": 8}],
            "weight_dtype": ["fp8"]}, workload={"batch": [1], "context": [32768], "output_tokens": 16}),
             fld="strategies.topk.gvr.passes"),
        _run(c, "replay_value_beyond_k", _serving(replicas=[{"strategies": {"speculation": {"mtp": {"k": 2}}},
                                                              "model": "DeepSeek-V3", "parallelism": {"tp": 8},
                                                              "hardware": "H200"}],
                                                  acceptance={"replay": [1, 2, 5, 0]}) | {"model": "DeepSeek-V3"},
             fld="serving.acceptance", cmd="simulate"),
        _run(c, "window_after_shipped_trace", _serving({"trace": "azure_code", "window_s": [9e5, 1e6]}),
             fld="serving.requests.window_s", cmd="simulate"),
        _run(c, "window_between_generated", _serving({"poisson": {"rate": 1, "count": 20}, "window_s": [5000, 6000],
                                                      "input_tokens": {"fixed": 100}, "output_tokens": {"fixed": 5}}),
             fld="serving.requests.window_s", cmd="simulate"),
        _run(c, "poisson_rate_1e-250", _serving({"poisson": {"rate": 1e-250, "count": 20},
                                                 "input_tokens": {"fixed": 100}, "output_tokens": {"fixed": 5}}),
             fld="serving.requests.poisson.rate", cmd="simulate"),
        _run(c, "time_scale_absurd_horizon", _serving({"trace": "mooncake_conversation", "limit": 50,
                                                       "time_scale": 1e6, "rate_scale": 1e-6}),
             fld="serving.requests", cmd="simulate"),
        _case(c, "generic_hashes_beyond_prompt", {"r.csv": (
            "arrival_s,input_tokens,output_tokens,prefix_hashes,block_tokens\n"
            "0.0,40,5,1 2 3 4 5 6 7 8,16\n0.5,30,5,1 2,16\n").encode()},
            ["trace", "stats", "r.csv", "--out", "o"], "error", None, "r.csv"),
        _case(c, "mooncake_hashes_beyond_prompt", {"r.jsonl": (
            json.dumps({"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": list(range(40))}) + "\n"
            + json.dumps({"timestamp": 10, "input_length": 100, "output_length": 5, "hash_ids": [1]}) + "\n").encode()},
            ["trace", "info", "r.jsonl"], "error", None, "r.jsonl"),
        _run(c, "prices_override_unknown_gpu", _plan(prices={"override": {"H100-SXM": 2.5, "H1OO-SXM": 1.0}}),
             fld="plan.prices.override", cmd="plan", argv_extra=("--quick",)),
        _run(c, "plan_budget_below_one_gpu", _plan(target={"budget_usd_per_hour": 0.2}), expect="nofit", cmd="plan",
             argv_extra=("--quick",)),
        _case(c, "ok_draft_model_relative_to_scenario", {
            "cfg/s.yaml": _scen(model="Llama-2-7B", strategies={"speculation": [{"draft_model": {"model": "m/d.yaml"}}]}),
            "cfg/m/d.yaml": _model_doc("TinyLlama-1.1B")}, ["run", "cfg/s.yaml", "--out", "out"], "ok"),
        _case(c, "ok_empirical_relative_to_scenario", {
            "cfg/s.yaml": _serving({"poisson": {"rate": 3, "count": 20}, "input_tokens": {"empirical": "d/l.csv"},
                                    "output_tokens": {"fixed": 6}}),
            "cfg/d/l.csv": b"arrival_s,input_tokens,output_tokens\n0,120,4\n1,300,9\n2,80,3\n"},
            ["simulate", "cfg/s.yaml", "--out", "out"], "ok"),
        _case(c, "ok_serving_trace_relative_to_scenario", {
            "cfg/s.yaml": _serving({"trace": "d/r.csv"}),
            "cfg/d/r.csv": b"arrival_s,input_tokens,output_tokens\n0,120,4\n1,300,9\n2,80,3\n"},
            ["simulate", "cfg/s.yaml", "--out", "out"], "ok"),
        _model_case(c, "family_error_lists_once", lambda d: d.update(family="gpt"), "family",
                    not_in_msg=r"(\bnemotron\b.*\bnemotron\b)|(\bllama\b.*\bllama\b)"),
        _spec_case(c, "max_devices_zero_point_two", lambda d: d["max_devices_per_node"].update(value=0.2),
                   "max_devices_per_node", not_in_msg=r"field 'devices'"),
        _run(c, "simulate_nothing_finishes", _serving({"poisson": {"rate": 2, "count": 10},
                                                       "input_tokens": {"fixed": 6000}, "output_tokens": {"fixed": 4}},
                                                      scheduler={"num_blocks": 50}), expect="nofit", cmd="simulate"),
    ]
    return out


# ---- 7. quiet progress, no temporary folders ----------------------------------------------------------------
PROGRESS_RE = r"(?m)^sparsesim: .*(\d+ ?%|\d+/\d+)"


def progress_cases() -> list[ClassCase]:
    c = "progress"
    env = {"SPARSESIM_PROGRESS_EVERY_S": "0.05"}
    return [
        _run(c, "simulate_reports", _serving({"poisson": {"rate": 20, "count": 400}, "input_tokens": {"fixed": 900},
                                              "output_tokens": {"fixed": 60}}),
             expect="warn", cmd="simulate", env=env, want=PROGRESS_RE),
        _run(c, "sweep_reports", _scen(strategies={"attention": [{"dense": {"split_tokens": list(range(16, 400))}}]},
                                       workload={"batch": [1, 4], "context": [4096, 8192], "output_tokens": 16}),
             expect="warn", cmd="sweep", env=env, want=PROGRESS_RE),
        _run(c, "plan_reports", _plan(), expect="warn", cmd="plan", argv_extra=("--quick",), env=env, want=PROGRESS_RE),
        _run(c, "run_reports", _scen(strategies={"attention": [{"lserve": {"token_budget": list(range(1024, 1024 + 64 * 40,
                                                                                                      64))}}]},
                                     workload={"batch": [1], "context": [16384], "output_tokens": 16}),
             expect="warn", env=env, want=PROGRESS_RE),
        _case(c, "calibrate_fit_leaves_no_temp", {"m.csv": _measure_csv().encode()},
              ["calibrate", "fit", "m.csv", "--device", "H100-SXM", "--fitted-dir", "F", "--out", "co"], "ok"),
        _case(c, "plan_leaves_no_temp", {"s.yaml": _plan()}, ["plan", "s.yaml", "--quick", "--out", "out"], "ok"),
    ]


# ---- 8. exit statuses ------------------------------------------------------------------------------------------
def exitcode_cases() -> list[ClassCase]:
    c = "exitcode"
    return [
        _case(c, "help_states_statuses", {}, ["--help"], "warn", want=None),
        _run(c, "nothing_fits_kv_policy_model", _scen(model="DeepSeek-V3", strategies={
            "attention": ["dense"], "parallelism": [{"tp": 16}], "weight_dtype": ["fp8"]}), expect="nofit"),
        _run(c, "sweep_nothing_priced", _scen(strategies={"parallelism": [{"tp": 64}]}), expect="nofit", cmd="sweep"),
        _run(c, "simulate_all_rejected", _serving({"poisson": {"rate": 1, "count": 5}, "input_tokens": {"fixed": 9000},
                                                   "output_tokens": {"fixed": 3}}, scheduler={"num_blocks": 20}),
             expect="nofit", cmd="simulate"),
        _run(c, "plan_nothing_meets_slo", _plan(slo={"ttft_p90_ms": 0.001}), expect="nofit", cmd="plan",
             argv_extra=("--quick",)),
    ]


GENERATORS = {"size": size_cases, "crossfield": crossfield_cases, "trace": trace_cases, "calib": calib_cases,
              "list": list_cases, "misc": misc_cases, "progress": progress_cases, "exitcode": exitcode_cases}


def class_cases(only: tuple[str, ...] = CLASSES) -> list[ClassCase]:
    out = []
    for c in only:
        out += GENERATORS[c]()
    return out


# ---- classification ------------------------------------------------------------------------------------------
HELP_RE = r"(?s)exit status.*\b0\b.*\b2\b.*\b3\b"


def classify_class(case: ClassCase, rc: int | None, stdout: str, stderr: str, folder: Path,
                   kept: dict[str, bytes] | None = None) -> tuple[str, str]:
    """(outcome, why): ok | clean | traceback | unclear | accepted | refused | memcap | leftover (see the module
    docstring and fuzz_cases.classify)."""
    import re

    from tests.fuzz_cases import classify

    if "MemoryError" in stderr or rc in (-9, 137) or "Cannot allocate memory" in stderr:
        return "memcap", (stderr.strip().splitlines() or ["killed"])[-1][:160]
    # post-conditions first: a rewritten or created file is a silent acceptance whatever the exit status
    for rel, before in (kept or {}).items():
        p = folder / rel
        if not p.is_file() or p.read_bytes() != before:
            return "accepted", f"{rel} was rewritten"
    for rel in case.absent:
        p = Path(rel) if Path(rel).is_absolute() else folder / rel
        if p.exists():
            return "accepted", f"{rel} was written"
    if "Traceback (most recent call last)" in stderr:
        return "traceback", stderr.strip().splitlines()[-1][:200]
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    if case.expect == "nofit":
        if rc == 3:
            return "clean", "exit 3"
        if rc == 0:
            return "accepted", "exit 0: " + " | ".join(stdout.strip().splitlines()[-2:])[:150]
        return "unclear", f"exit {rc}, not 3: {' | '.join(lines)[:150]}"
    if case.expect == "warn":
        if rc != 0:
            return "refused", f"exit {rc}: {' | '.join(lines)[:160]}"
        want = case.want or HELP_RE
        text = stderr if case.want else stdout
        if not re.search(want, text):
            return "accepted", f"ran without the expected {'message' if case.want else 'exit-status help'}"
        return "ok", ""
    outcome, why = classify(case, rc, stderr, False)
    priced = case.argv and case.argv[0] in ("run", "sweep", "simulate", "plan")   # (trace stats marks 'not defined')
    if outcome == "ok" and priced and re.search(r"(?<![A-Za-z])nan(?![A-Za-z])", stdout):
        return "accepted", "printed NaN"
    if outcome == "clean" and case.not_in_msg and re.search(case.not_in_msg, lines[0]):
        return "unclear", f"message matches {case.not_in_msg!r}: {lines[0][:140]}"
    return outcome, why
