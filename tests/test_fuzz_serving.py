"""Every mistake a user can make in a scenario's `serving:` section stops `sparsesim simulate` with exit status
2 and one line naming the file and the field: no traceback, nothing simulated."""
import copy

import pytest
import yaml

from simulator.cli import main

BASE = {
    "name": "fuzz",
    "hardware": "H100-SXM",
    "model": "Llama-3.1-8B",
    "workload": {"batch": [1], "context": [4096], "output_tokens": 128},
    "serving": {
        "requests": {"poisson": {"rate": 2.0, "count": 20}, "input_tokens": {"fixed": 512},
                     "output_tokens": {"fixed": 32}},
        "replicas": [{"count": 1, "hardware": "H100-SXM", "model": "Llama-3.1-8B", "parallelism": {"tp": 1},
                      "strategies": {"attention": "dense"}}],
        "router": "round_robin",
        "scheduler": {"block_size": 16},
        "slo": {"ttft_ms": 1000},
        "seed": 0,
    },
}

class _Drop:
    """Marks a key the case deletes; its repr names it, so the case ids are the same in every process (pytest-xdist)."""

    def __repr__(self):
        return "DROP"


DROP = _Drop()


def _set(doc, path, value):
    node = doc
    for k in path[:-1]:
        node = node[k]
    if value is DROP:
        del node[path[-1]]
    else:
        node[path[-1]] = value


S = ("serving",)
R = S + ("requests",)
P = R + ("poisson",)
REP = S + ("replicas", 0)
SCH = S + ("scheduler",)

CASES = [
    (S, ["a", "list"], "serving"), (S, "text", "serving"), (S, 5, "serving"), (S, {}, "serving"),
    (S + ("bogus",), 1, "serving"),
    (R, DROP, "serving.requests"), (R, "mooncake", "serving.requests"), (R, [1, 2], "serving.requests"),
    (R + ("trace",), "mooncake_conversation", "serving.requests"),  # two kinds
    (P, DROP, "serving.requests"),  # no kind
    (P + ("rate",), DROP, "serving.requests.poisson.rate"), (P + ("count",), DROP, "serving.requests.poisson.count"),
    (P + ("rate",), -1, "serving.requests.poisson.rate"), (P + ("rate",), 0, "serving.requests.poisson.rate"),
    (P + ("rate",), "fast", "serving.requests.poisson.rate"), (P + ("rate",), True, "serving.requests.poisson.rate"),
    (P + ("rate",), float("inf"), "serving.requests.poisson.rate"),
    (P + ("rate",), float("nan"), "serving.requests.poisson.rate"),
    (P + ("count",), 0, "serving.requests.poisson.count"), (P + ("count",), -3, "serving.requests.poisson.count"),
    (P + ("count",), 2.5, "serving.requests.poisson.count"),
    (P + ("count",), 10**12, "serving.requests.poisson.count"),
    (P + ("burst",), 2, "serving.requests.poisson"),
    (R + ("input_tokens",), DROP, "serving.requests.input_tokens"),
    (R + ("input_tokens",), {"fixed": 0}, "serving.requests.input_tokens"),
    (R + ("input_tokens",), {"uniform": [50, 10]}, "serving.requests.input_tokens"),
    (R + ("input_tokens",), {"lognormal": {"mean": -5}}, "serving.requests.input_tokens"),
    (R + ("input_tokens",), {"lognormal": {"mean": 100, "cv": 0}}, "serving.requests.input_tokens"),
    (R + ("input_tokens",), {"zipf": 3}, "serving.requests.input_tokens"),
    (R + ("output_tokens",), "long", "serving.requests.output_tokens"),
    (R + ("limit",), 0, "serving.requests.limit"), (R + ("limit",), "ten", "serving.requests.limit"),
    (R + ("window_s",), [5, 1], "serving.requests.window_s"), (R + ("window_s",), [1], "serving.requests.window_s"),
    (R + ("window_s",), [-1, 5], "serving.requests.window_s"),
    (R + ("time_scale",), 0, "serving.requests.time_scale"), (R + ("rate_scale",), -2, "serving.requests.rate_scale"),
    (R + ("rate_scale",), "2x", "serving.requests.rate_scale"),
    (S + ("replicas",), [], "serving.replicas"), (S + ("replicas",), {"count": 1}, "serving.replicas"),
    (S + ("replicas",), "two", "serving.replicas"), (REP, "H100", "serving.replicas[0]"),
    (REP + ("count",), 0, "serving.replicas[0].count"), (REP + ("count",), -1, "serving.replicas[0].count"),
    (REP + ("count",), 1.5, "serving.replicas[0].count"), (REP + ("count",), 100000, "serving.replicas[0].count"),
    (REP + ("hardware",), "TPU-v9", "serving.replicas[0].hardware"),
    (REP + ("hardware",), 7, "serving.replicas[0].hardware"),
    (REP + ("model",), "GPT-7", "serving.replicas[0].model"),
    (REP + ("colour",), "red", "serving.replicas[0]"),
    (REP + ("parallelism",), {"tp": 0}, "serving.replicas[0].parallelism.tp"),
    (REP + ("parallelism",), {"tp": 3}, "serving.replicas[0]"),  # 32 heads do not split over 3
    (REP + ("parallelism",), {"tp": 64}, "serving.replicas[0]"),  # more devices than a node has
    (REP + ("parallelism",), {"tp": 4, "ep": 2}, "serving.replicas[0].parallelism.ep"),
    (REP + ("parallelism",), {"tp": 4, "attn_dp": 3}, "serving.replicas[0].parallelism.attn_dp"),
    (REP + ("parallelism",), {"pp": 2}, "serving.replicas[0].parallelism"),
    (REP + ("parallelism",), [1], "serving.replicas[0].parallelism"),
    (REP + ("strategies",), {"attention": "magic"}, "serving.replicas[0].strategies.attention"),
    (REP + ("strategies",), {"attention": ["dense", "nsa"]}, "serving.replicas[0].strategies.attention"),
    (REP + ("strategies",), {"kv_dtype": "fp3"}, "serving.replicas[0].strategies.kv_dtype"),
    (REP + ("strategies",), {"weight_dtype": "fp2"}, "serving.replicas[0].strategies.weight_dtype"),
    (REP + ("strategies",), {"speculation": {"eagle3": {"k": 0}}},
     "serving.replicas[0].strategies.speculation.eagle3.k"),
    (REP + ("strategies",), {"speculation": {"mtp": {"k": 1}}}, "serving.replicas[0]"),  # Llama has no MTP modules
    (REP + ("strategies",), {"flavor": "x"}, "serving.replicas[0].strategies"),
    (REP + ("role",), "both", "serving.replicas[0].role"),
    (REP + ("role",), "prefill", "serving.replicas"),  # a prefill pool without a decode pool
    (S + ("router",), "random", "serving.router"), (S + ("router",), 3, "serving.router"),
    (SCH + ("max_num_batched_tokens",), 0, "serving.scheduler.max_num_batched_tokens"),
    (SCH + ("max_num_seqs",), "many", "serving.scheduler.max_num_seqs"),
    (SCH + ("block_size",), 0, "serving.scheduler.block_size"),
    (SCH + ("enable_prefix_caching",), "yes", "serving.scheduler.enable_prefix_caching"),
    (SCH + ("gpu_memory_utilization",), 1.5, "serving.scheduler.gpu_memory_utilization"),
    (SCH + ("gpu_memory_utilization",), 0, "serving.scheduler.gpu_memory_utilization"),
    (SCH + ("mixed_launch",), "lazy", "serving.scheduler.mixed_launch"),
    (SCH + ("cache_unit_tokens",), 100, "serving.scheduler.cache_unit_tokens"),
    (SCH + ("long_prefill_token_threshold",), -1, "serving.scheduler.long_prefill_token_threshold"),
    (SCH + ("num_blocks",), -5, "serving.scheduler.num_blocks"),
    (SCH + ("num_blocks",), 1, "serving.replicas[0]"),  # no KV cache: caught before simulating
    (SCH + ("preemption",), "swap", "serving.scheduler"), (SCH, [16], "serving.scheduler"),
    (S + ("acceptance",), "oracle", "serving.acceptance"), (S + ("acceptance",), {"replay": []}, "serving.acceptance.replay"),
    (S + ("acceptance",), {"replay": "no_such_file.npz"}, "serving.acceptance.replay"),
    (S + ("acceptance",), {"replay": [1, -1]}, "serving.acceptance.replay"),
    (S + ("acceptance",), {"sample": 1}, "serving.acceptance"),
    (S + ("acceptance",), "trace", "serving.acceptance"),  # the scenario has no trace: section
    (S + ("step_cost",), {"decode_context": "median"}, "serving.step_cost.decode_context"),
    (S + ("step_cost",), {"host_floor_ms": -1}, "serving.step_cost.host_floor_ms"),
    (S + ("step_cost",), {"host_per_step_us": "x"}, "serving.step_cost.host_per_step_us"),
    (S + ("step_cost",), {"launch_us": 5}, "serving.step_cost"),
    (S + ("kv_transfer",), {"speed": 1}, "serving.kv_transfer"),
    (S + ("kv_transfer",), {"bandwidth_gbps": 0}, "serving.kv_transfer.bandwidth_gbps"),
    (S + ("kv_transfer",), {"latency_us": -1}, "serving.kv_transfer.latency_us"),
    (S + ("slo",), {"itl_ms": 5}, "serving.slo"), (S + ("slo",), {"ttft_ms": -1}, "serving.slo.ttft_ms"),
    (S + ("slo",), {"tpot_ms": "fast"}, "serving.slo.tpot_ms"), (S + ("slo",), 100, "serving.slo"),
    (S + ("seed",), -1, "serving.seed"), (S + ("seed",), "abc", "serving.seed"), (S + ("seed",), 1.5, "serving.seed"),
    (S + ("decode_run_steps",), -1, "serving.decode_run_steps"),
    (S + ("decode_run_steps",), "all", "serving.decode_run_steps"),
]


def _case_id(c):
    return ".".join(map(str, c[0][1:])) + "=" + repr(c[1])[:30]


def test_there_are_many_cases():
    assert len(CASES) >= 60


def _run(tmp_path, capsys, doc):
    f = tmp_path / "fuzz.yaml"
    f.write_text(yaml.safe_dump(doc, sort_keys=False))
    rc = main(["simulate", str(f), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    return rc, err, f


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_bad_serving_section_exits_2_with_one_line(case, tmp_path, capsys):
    path, value, field = case
    doc = copy.deepcopy(BASE)
    _set(doc, path, value)
    rc, err, f = _run(tmp_path, capsys, doc)
    assert rc == 2, err
    assert "Traceback" not in err
    assert err.strip().count("\n") == 0, err
    assert err.startswith("sparsesim: error: ")
    assert str(f) in err, err
    assert f"field '{field}" in err, err
    assert not (tmp_path / "out" / "fuzz" / "requests.csv").exists()


def test_two_request_kinds_with_a_trace_path_that_does_not_exist(tmp_path, capsys):
    doc = copy.deepcopy(BASE)
    doc["serving"]["requests"] = {"trace": "no/such/trace.jsonl"}
    rc, err, f = _run(tmp_path, capsys, doc)
    assert rc == 2 and "field 'serving.requests.trace'" in err and err.count("\n") == 1


def test_scenario_without_serving_section(tmp_path, capsys):
    doc = copy.deepcopy(BASE)
    del doc["serving"]
    rc, err, f = _run(tmp_path, capsys, doc)
    assert rc == 2 and "no serving: section" in err and err.count("\n") == 1


@pytest.mark.parametrize("argv", [["--requests", "0"], ["--rate-scale", "-1"], ["--rate-scale", "nan"],
                                  ["--seed", "-4"]])
def test_bad_command_line_values(argv, tmp_path, capsys):
    f = tmp_path / "ok.yaml"
    f.write_text(yaml.safe_dump(BASE))
    rc = main(["simulate", str(f), "--out", str(tmp_path)] + argv)
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err
