"""`sparsesim compare`: result files the engine itself wrote come back with ~0 error, the committed real HF-CB run
parses and is compared, the host-time fit recovers a host time it did not see, bad files stop with one line."""
import json
import math
from pathlib import Path

import numpy as np
import pytest

from hwmodels.calibration import DATA_DIR  # noqa: E402
from simulator.benchmark_results import read_result
from simulator.benchmark_results.vllm_json import write_result
from simulator.cli import main

ROOT = Path(__file__).resolve().parents[1]
REAL = DATA_DIR / "serving/vllm_format/hfval_cc4_in2k_nvidia-h100-80gb-hbm3_2026-11-26.json"   # installed package
SMALL = ["serving.requests.closed_loop.count=8", "serving.requests.input_tokens.fixed=512",
         "serving.requests.output_tokens.fixed=12"]


def _engine_result(tmp_path, extra=(), closed=True, name="self.json", launch_s=None):
    """A vLLM result file written from a simulation of the shipped HF-CB scenario (small); launch_s: the profile's
    host launch replaced by this value."""
    from simulator.benchmark_results.fit_host import _with_value
    from simulator.engine.api import load_source, simulate
    from simulator.scenario import load_scenario

    sets = SMALL + list(extra)
    if not closed:
        sets += ["serving.requests={poisson: {rate: 4.0, count: 8}, input_tokens: {fixed: 512}, "
                 "output_tokens: {uniform: [4, 16]}}"]
    sc = load_scenario("serving_hf_cb_h100", sets)
    cfg = sc.serving if launch_s is None else _with_value(sc.serving, "launch", launch_s)
    res = simulate(cfg, load_source(cfg.source, 0), seed=0)
    doc = write_result(res.requests, request_rate=None if closed else 4.0,
                       max_concurrency=cfg.source.concurrency if closed else None, label="self")
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return p, doc


def _run(capsys, *argv):
    rc = main(list(map(str, argv)))
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


@pytest.mark.parametrize("closed", [True, False])
def test_engine_output_compares_to_itself(tmp_path, capsys, closed, monkeypatch):
    p, _ = _engine_result(tmp_path, closed=closed)
    monkeypatch.setenv("SPARSESIM_PROGRESS_EVERY_S", "0.0001")     # a progress line at every update, unless quiet
    rc, out, err = _run(capsys, "compare", p, "--scenario", "serving_hf_cb_h100", "--out", tmp_path / "o", "--json")
    assert rc == 0, err
    assert "elapsed" not in err                                     # progress is quiet under --json
    d = json.loads(out)                                   # stdout: one JSON object, nothing else
    assert d["workload"].startswith("closed loop of 4" if closed else "8 requests arriving at their measured")
    for r in d["rows"]:
        if r["metric"] in ("ttft", "tpot", "e2e") or (r["metric"] == "itl" and r["stat"] == "mean"):
            assert abs(r["error"]) < 1e-6, r
    for k in ("ttft", "tpot", "e2e"):
        assert d["per_request_abs_error"][k]["p90"] < 1e-6
    files = {Path(f).name for f in d["files"]}
    assert {"compare.csv", "requests.csv", "requests.jsonl", "compare_cdf.png", "compare_scatter.png"} <= files


def test_sglang_and_csv_readers_give_the_same_run(tmp_path):
    p, doc = _engine_result(tmp_path)
    sg = {k: doc[k] for k in ("input_lens", "output_lens", "ttfts", "itls", "errors", "request_rate",
                              "max_concurrency", "duration")}
    sg["backend"] = "sglang"
    other = dict(sg, max_concurrency=None, request_rate=1.0)
    (tmp_path / "sg.jsonl").write_text(json.dumps(other) + "\n" + json.dumps(sg) + "\n")
    rows = ["input_tokens,output_tokens,start_s,ttft_ms,e2e_s"] + [
        f"{i},{o},{s},{t * 1e3},{e}" for i, o, s, t, e in zip(doc["input_lens"], doc["output_lens"], doc["start_times"],
                                                             doc["ttfts"], doc["latencies"])]
    (tmp_path / "req.csv").write_text("\n".join(rows) + "\n")
    a = read_result(p)
    b = read_result(tmp_path / "sg.jsonl")          # the last run of the file
    c = read_result(tmp_path / "req.csv")
    assert (a.format, b.format, c.format) == ("vllm", "sglang", "csv")
    assert b.max_concurrency == 4 and read_result(tmp_path / "sg.jsonl", run_index=0).max_concurrency is None
    for r in (b, c):
        assert np.array_equal(a.input_tokens, r.input_tokens)
        assert np.allclose(a.ttft_s, r.ttft_s) and np.allclose(a.e2e_s, r.e2e_s, rtol=1e-9)   # sglang: ttft + sum(itls)


def test_real_hf_cb_run_parses_and_is_compared(tmp_path, capsys):
    run = read_result(REAL)
    assert len(run) == 20 and run.max_concurrency == 4 and math.isinf(run.request_rate) and run.itl_s is not None
    rc, out, err = _run(capsys, "compare", REAL, "--scenario", "serving_hf_cb_h100", "--out", tmp_path, "--html")
    assert rc == 0, err
    from tests.test_html_report import check_self_contained

    check_self_contained(tmp_path / "compare_serving_hf_cb_h100" / "report.html", 4,
                         ["Measured vs simulated", "Per request", "measured run: ", "workload: closed loop of 4",
                          "Per-op breakdown of a step", "calibration: H100-SXM"])
    for line in ("ttft p50 (ms)", "tpot p90 (ms)", "itl p99 (ms)", "e2e mean (ms)", "output_throughput (tok/s)",
                 "goodput (req/s)", "closed loop of 4 in flight"):
        assert line in out
    # the measured column is the file's own vLLM statistics, recomputed
    doc = json.loads(REAL.read_text())
    row = next(x for x in out.splitlines() if x.startswith("ttft p50 (ms)"))
    assert f"{doc['p50_ttft_ms']:,.1f}" in row


def test_fit_host_recovers_a_host_time_it_did_not_see(tmp_path, capsys):
    """A run generated with a 40 ms host launch; the shipped profile says 92 ms; the fit on half the run finds ~40 ms
    and the held-out half's TPOT error falls."""
    p, _ = _engine_result(tmp_path, extra=["serving.requests.closed_loop.count=12"], launch_s=0.040)
    out_yaml = tmp_path / "fitted.yaml"
    rc, out, err = _run(capsys, "compare", p, "--scenario", "serving_hf_cb_h100", "--out", tmp_path / "o",
                        "--fit-host", out_yaml, "--set", "serving.requests.closed_loop.count=12", "--json")
    assert rc == 0, err
    d = json.loads(out)
    assert abs(d["fit_host"]["value_ms"] - 40.0) < 1.0
    held = {(r["metric"], r["stat"]): r["error"] for r in d["fit_host"]["held_out"]}
    assert abs(held[("tpot", "p50")]) < 0.03
    assert "--fit-host: wrote" in err and str(out_yaml) in err          # never silent
    from simulator.engine.runtime import load_profile

    prof = load_profile(str(out_yaml))
    assert abs(prof.launch.median_s() - 0.040) < 0.002
    assert any("sparsesim compare --fit-host" in s for _, s in prof.sources)


def _bad(tmp_path, capsys, text, name="bad.json"):
    p = tmp_path / name
    p.write_text(text)
    rc, out, err = _run(capsys, "compare", p, "--scenario", "serving_hf_cb_h100", "--out", tmp_path / "o")
    assert rc == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and str(p) in lines[0], err
    return lines[0]


def test_bad_result_files_stop_with_one_line(tmp_path, capsys):
    good = json.loads(REAL.read_text())
    text = REAL.read_text()
    assert "not valid JSON" in _bad(tmp_path, capsys, text[: len(text) // 2])              # truncated
    assert "JSON list" in _bad(tmp_path, capsys, "[1, 2, 3]")                              # foreign
    assert "input_lens" in _bad(tmp_path, capsys, json.dumps({"name": "x", "hardware": "y"}))
    assert "--save-detailed" in _bad(tmp_path, capsys, json.dumps({k: v for k, v in good.items()
                                                                    if not isinstance(v, list)}))
    assert "'ttfts'" in _bad(tmp_path, capsys, json.dumps(dict(good, ttfts=good["ttfts"][:-1])))   # lengths
    assert "'output_lens'" in _bad(tmp_path, capsys, json.dumps({k: v for k, v in good.items() if k != "output_lens"}))
    neg = list(good["latencies"])
    neg[3] = -1.0
    assert "'latencies'" in _bad(tmp_path, capsys, json.dumps(dict(good, latencies=neg)))
    nan = list(good["ttfts"])
    nan[5] = float("nan")
    assert "'ttfts'" in _bad(tmp_path, capsys, json.dumps(dict(good, ttfts=nan)))
    assert "'itls'" in _bad(tmp_path, capsys, json.dumps(dict(good, itls=[[-0.1]] + good["itls"][1:])))
    assert "'request_rate'" in _bad(tmp_path, capsys, json.dumps(dict(good, request_rate=-2)))
    assert "e2e_s" in _bad(tmp_path, capsys, "input_tokens,output_tokens,ttft_s\n10,5,0.1\n", "r.csv")
    assert "line 2" in _bad(tmp_path, capsys, json.dumps({"input_lens": [1]}) + "\n{\"a\": ", "r.jsonl")


def test_set_overrides_the_raw_scenario(capsys):
    from simulator.scenario import load_scenario

    sc = load_scenario("serving_hf_cb_h100", ["serving.scheduler.max_num_seqs=64", "serving.replicas.0.count=2",
                                              "serving.slo={ttft_ms: 500}"])
    assert sc.serving.scheduler["max_num_seqs"] == 64 and sc.serving.n_replicas == 2
    assert sc.serving.slo == {"ttft_ms": 500.0}
    for sets, what in ((["nosuch.key=1"], "no key 'nosuch'"), (["serving.replicas.5.count=2"], "out of range"),
                       (["serving.scheduler.max_num_seqs=many"], "max_num_seqs"),
                       (["serving.scheduler.no_such_knob=1"], "no_such_knob"), (["serving.scheduler"], "PATH=VALUE"),
                       (["model.x=1"], "not a mapping or list")):
        rc = main(["simulate", "serving_hf_cb_h100", "--out", "/nonexistent/never", *sum([["--set", s] for s in sets], [])])
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and len(err) == 1 and what in err[0], (sets, err)


def test_speculative_config_and_vllm_knobs():
    import argparse

    from hwmodels.errors import ScenarioError
    from simulator.vllm_knobs import apply_knobs, speculation_from_config

    assert speculation_from_config('{"method": "mtp", "num_speculative_tokens": 3}') == {"mtp": {"k": 3}}
    assert speculation_from_config('{"method": "eagle", "num_speculative_tokens": 2}') == {"eagle3": {"k": 2}}
    for bad in ('{"method": "ngram", "num_speculative_tokens": 3}', '{"method": "mtp"}', "mtp", '{"method": "mtp", '
                '"num_speculative_tokens": 3, "x": 1}'):
        with pytest.raises(ScenarioError):
            speculation_from_config(bad)
    ns = argparse.Namespace(max_num_seqs=32, block_size=32, enable_prefix_caching=False, enable_chunked_prefill=None,
                            speculative_config='{"method": "mtp", "num_speculative_tokens": 2}')
    doc = apply_knobs({"serving": {"replicas": [{"count": 1}]}}, ns)
    assert doc["serving"]["scheduler"] == {"max_num_seqs": 32, "block_size": 32, "enable_prefix_caching": False}
    assert doc["serving"]["replicas"][0]["strategies"]["speculation"] == {"mtp": {"k": 2}}
    with pytest.raises(ScenarioError):
        apply_knobs({"serving": {}}, argparse.Namespace(enable_chunked_prefill=False))


def test_json_on_every_command(capsys):
    """--json: one JSON object on stdout and nothing else, for a command without its own summary too, and for an
    error (exit 2); every command's --help documents it with the exit statuses."""
    rc, out, err = _run(capsys, "hw", "show", "H100-SXM", "--json")
    d = json.loads(out)
    assert rc == 0 and d["exit_status"] == 0 and "H100-SXM" in d["text"] and "H100-SXM" in err
    rc, out, err = _run(capsys, "run", "quickstart", "--set", "workload.batch=abc", "--json")
    d = json.loads(out)
    assert rc == 2 and d["exit_status"] == 2 and "workload.batch" in d["error"] and len(err.strip().splitlines()) == 1
    from simulator.cli import build_parser

    p = build_parser()
    sub = next(a for a in p._actions if a.dest == "command")
    for name, cmd in sub.choices.items():
        assert "--json" in cmd._option_string_actions and "exit status: 0 ok; 2 bad input" in cmd.epilog, name
