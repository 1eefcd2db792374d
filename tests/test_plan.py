"""`sparsesim plan` (simulator.planning): the plan: section, prices, the analytic screen, the engine search,
costs, branch and bound, Dask, the CLI and its outputs (issue 13)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from hwmodels.errors import ScenarioError

TINY = {
    "name": "tiny-plan", "hardware": ["H100-SXM", "H200"], "model": "Llama-3.1-8B",
    "workload": {"batch": [1], "context": [4096], "output_tokens": 128},
    "strategies": {"attention": ["dense"], "parallelism": [{"tp": [1, 2]}]},
    "plan": {"workload": {"poisson": {"rate": 4.0, "count": 60}, "input_tokens": {"fixed": 2000},
                          "output_tokens": {"fixed": 128}},
             "slo": {"ttft_p90_ms": 1000, "tpot_p90_ms": 30}, "target": {"rate_req_s": 40},
             "search": {"tolerance": 0.25, "max_runs": 5, "keep": 2, "wave": 2}},
}


def _scenario(**plan_changes):
    from simulator.scenario import scenario_from_dict

    doc = {**TINY, "plan": {**TINY["plan"], **plan_changes}}
    return scenario_from_dict(doc, "<tiny-plan>")


@pytest.fixture(scope="module")
def tiny_result():
    from simulator.planning.study import run_plan

    return run_plan(_scenario())


# ---- the plan: section -------------------------------------------------------------------------------------
@pytest.mark.parametrize("change, field", [
    ({"colour": 1}, "plan"),
    ({"slo": {}}, "plan.slo"),
    ({"slo": {"ttft_p95_ms": 5}}, "plan.slo"),
    ({"slo": {"tpot_p90_ms": -1}}, "plan.slo.tpot_p90_ms"),
    ({"target": {"rate_req_s": 1, "budget_usd_per_hour": 9}}, "plan.target"),
    ({"prices": {"list": "nowhere"}}, "plan.prices.list"),
    ({"prices": {"override": {"H100-SXM": "cheap"}}}, "plan.prices.override.H100-SXM"),
    ({"workload": {"poisson": {"rate": 1}}}, "plan.workload.poisson.count"),
    ({"search": {"max_runs": 0}}, "plan.search.max_runs"),
    ({"engine": {"router": "random"}}, "plan.engine.router"),
])
def test_plan_section_errors_name_the_field(change, field):
    with pytest.raises(ScenarioError) as e:
        _scenario(**change)
    assert e.value.field == field, str(e.value)


def test_prices_file_is_sourced():
    from hwmodels.spec import list_hardware
    from simulator.planning.prices import price_lists, prices_for

    doc = price_lists()
    assert doc["default"] in doc["lists"]
    for name, lst in doc["lists"].items():
        assert lst["url"].startswith("https://") and len(str(lst["date"])) >= 7, name
        assert set(lst["usd_per_gpu_hour"]) <= set(list_hardware()), name
    p = prices_for(override={"H100-SXM": 2.5})
    assert p.of("H100-SXM") == 2.5 and "override" in p.source("H100-SXM")
    assert p.of("H200") == doc["lists"][doc["default"]]["usd_per_gpu_hour"]["H200"]


def test_missing_price_stops_with_the_device_named():
    from simulator.planning.study import run_plan
    from simulator.scenario import scenario_from_dict

    doc = {**TINY, "hardware": ["L40S"]}
    with pytest.raises(ScenarioError, match="no price for L40S"):
        run_plan(scenario_from_dict(doc, "<x>"))


# ---- workload statistics and the screen ----------------------------------------------------------------------
def test_uncached_tokens_with_a_perfect_prefix_cache():
    from simulator.planning.screen import uncached_tokens
    from simulator.traces.requests import RequestTrace

    # blocks of 100 tokens: request 2 shares request 1's first two blocks, request 3 shares one block
    t = RequestTrace(name="t", source="test", arrival_s=np.array([0.0, 1.0, 2.0]),
                     input_tokens=np.array([300, 350, 250]), output_tokens=np.array([10, 10, 10]),
                     hash_offsets=np.array([0, 3, 7, 10]), hash_ids=np.array([1, 2, 3, 1, 2, 9, 10, 1, 7, 8]),
                     block_tokens=100)
    assert uncached_tokens(t).tolist() == [300.0, 350.0 - 200.0, 250.0 - 100.0]


def test_screen_prunes_on_memory_and_on_slo():
    from simulator.combo import make_combo
    from simulator.planning.screen import Workload, screen
    from simulator.traces.requests import RequestTrace

    t = RequestTrace(name="t", source="test", arrival_s=np.arange(10.0), input_tokens=np.full(10, 4000),
                     output_tokens=np.full(10, 200))
    wl = Workload.of(t)
    assert wl.native_rate == pytest.approx(1.0) and wl.mean_input == 4000
    # DeepSeek-V3 (671B, fp8): 671e9 B / 8 GPUs = 78 GiB of weights per H100 > 0.9 x 80 GiB usable
    s = screen(make_combo("H100-SXM", "DeepSeek-V3", tp=8), wl, {})
    assert s.status == "memory" and "exceed the usable 72 GiB" in s.reason
    s = screen(make_combo("H100-SXM", "Llama-3.1-8B"), wl, {"tpot_p90_ms": 1.0})
    assert s.status == "slo" and "lone sequence" in s.reason
    ok = screen(make_combo("H100-SXM", "Llama-3.1-8B"), wl, {"tpot_p90_ms": 100.0})
    assert ok.ok and ok.max_batch > 10 and 0 < ok.rate_est < ok.rate_ub


# ---- the engine search and the costs -------------------------------------------------------------------------
def test_search_brackets_the_capacity(tiny_result):
    r = tiny_result
    ok = r.table[r.table["status"] == "ok"]
    assert len(ok) == 4
    for _, row in ok.iterrows():
        runs = r.runs[r.runs["id"] == row["id"]].sort_values("rate_req_s")
        assert 1 <= len(runs) <= 5 == r.plan.search.max_runs
        passed = runs[runs["passed"]]
        assert passed["rate_req_s"].max() == pytest.approx(row["capacity_req_s"])
        failed = runs[~runs["passed"]]
        if len(failed):   # every failing rate lies above every passing one (monotone in the rate)
            assert failed["rate_req_s"].min() > passed["rate_req_s"].max()
        # the run at capacity met both limits, and replayed enough requests to span 10 x the TTFT limit
        at = runs[runs["rate_req_s"] == passed["rate_req_s"].max()].iloc[0]
        assert at["sim_ttft_p90_ms"] <= 1000 and at["sim_tpot_p90_ms"] <= 30
        assert at["sim_requests"] - 1 >= 10.0 * at["rate_req_s"] * 0.95


def test_cost_arithmetic(tiny_result):
    from simulator.planning.prices import prices_for

    p = prices_for()
    w = tiny_result.winner
    # target 40 req/s: replicas = ceil(40 / capacity); GPUs = replicas x tp; USD/h = GPUs x price
    reps = math.ceil(40 / w["capacity_req_s"])
    assert w["replicas"] == reps and w["gpus"] == reps * w["gpus_per_replica"]
    assert w["usd_per_hour"] == pytest.approx(w["gpus"] * p.of(w["hardware"]))
    # per million output tokens at the target: USD/h / (40 req/s x 128 tokens x 3600 s) x 1e6
    assert w["usd_per_mtok"] == pytest.approx(w["usd_per_hour"] / (40 * 128 * 3600) * 1e6)
    ok = tiny_result.table[tiny_result.table["status"] == "ok"]
    assert list(ok["usd_per_hour"]) == sorted(ok["usd_per_hour"])


def test_branch_and_bound_prunes_what_cannot_win():
    """With H200 priced at $1000/GPU-h, its candidates' best case cannot beat the H100 ones: pruned on cost
    without an engine run (keep = 1: one verified candidate is enough)."""
    from simulator.planning.study import run_plan

    r = run_plan(_scenario(prices={"override": {"H200": 1000.0}}, search={"max_runs": 4, "keep": 1, "wave": 1}))
    h200 = r.table[r.table["hardware"] == "H200"]
    assert set(h200["status"]) == {"cost"} and (h200["engine_runs"] == 0).all()
    assert "best verified" in h200["reason"].iloc[0]
    assert r.winner["hardware"] == "H100-SXM"


def test_dask_plan_equals_serial(tiny_result, dask_client):
    from simulator.planning.study import run_plan

    dist = run_plan(_scenario(), client=dask_client)
    cols = ["id", "status", "capacity_req_s", "engine_runs", "usd_per_hour"]
    a, b = dist.table[cols], tiny_result.table[cols]
    assert a.astype(str).equals(b.astype(str))


# ---- the CLI and its files -----------------------------------------------------------------------------------
def test_plan_command_writes_the_report(tmp_path, capsys):
    import yaml

    from simulator.cli import main

    doc = {**TINY, "hardware": ["H100-SXM"], "strategies": {"attention": ["dense"], "parallelism": [{"tp": 1}]}}
    f = tmp_path / "tiny.yaml"
    f.write_text(yaml.safe_dump(doc))
    rc = main(["plan", str(f), "--out", str(tmp_path / "out"), "--quick"])
    out = capsys.readouterr().out
    assert rc == 0 and "winner: Llama-3.1-8B on H100-SXM" in out
    d = tmp_path / "out" / "tiny-plan"
    for name in ("ranked.csv", "ranked.parquet", "runs.csv", "report.md", "report.html", "pareto_throughput.png",
                 "pareto_cost.png"):
        assert (d / name).is_file(), name
    md = (d / "report.md").read_text()
    assert "## Winner: Llama-3.1-8B on H100-SXM" in md and "spheron" in md.lower()
    assert "<h2>" in (d / "report.html").read_text()


def test_plan_command_needs_a_plan_section(capsys):
    from simulator.cli import main

    assert main(["plan", "quickstart"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "plan" in err[0]


def test_report_warns_that_accuracy_is_not_modeled():
    from simulator.planning.report import _accuracy_caveat

    lossless = {"strategy": "dense+eagle3(k=4)", "kv_dtype": "bf16", "weight_dtype": "bf16"}
    assert _accuracy_caveat(lossless) == ""
    text = _accuracy_caveat({"strategy": "lserve+snapkv", "kv_dtype": "fp8", "weight_dtype": "bf16"})
    assert "`lserve`" in text and "`snapkv`" in text and "KV fp8" in text and "not modeled" in text
