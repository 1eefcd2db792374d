"""The engine runtime profiles (simulator/engine/profiles/*.yaml) and the HF continuous-batching measurements they
cite: every entry carries exactly one provenance; the hf-cb measured numbers are what lab/serving/fit_host.py
fits from the committed profile runs; the vLLM-format result writer follows vLLM's definitions; the committed
result files are self-consistent. Torch-free (the lab scripts used here import numpy only)."""
from __future__ import annotations

import importlib
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from hwmodels.calibration import DATA_DIR

ROOT = Path(__file__).resolve().parents[1]
PROFILES = Path(importlib.import_module("simulator.engine").__file__).parent / "profiles"   # the installed package's
SERVING = ROOT / "lab" / "serving"
#: where the installed packages' data lie (site-packages, or the checkout): measured files under hwmodels/
PKG_ROOT = Path(importlib.import_module("hwmodels").__file__).resolve().parents[1]
DATA = DATA_DIR / "serving"
sys.path.insert(0, str(SERVING))
vllm_result = importlib.import_module("vllm_result")
fit_host = importlib.import_module("fit_host")

SECTIONS = {"defaults", "graphs", "overlap", "api_path", "sampler", "scheduler", "attention_backend", "host_time",
            "runtime"}
PROVENANCE = ("source", "measured", "assumed", "unknown")


def _entries(node, path=""):
    """(path, entry) for every mapping that holds a 'value'."""
    if isinstance(node, dict) and "value" in node:
        yield path, node
        return
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _entries(v, f"{path}.{k}" if path else k)


@pytest.mark.parametrize("f", sorted(PROFILES.glob("*.yaml")), ids=lambda p: p.name)
def test_every_profile_entry_has_one_provenance(f):
    doc = yaml.safe_load(f.read_text())
    assert {"engine", "version", "read_from"} <= set(doc)
    assert SECTIONS <= set(doc), f"{f.name}: missing sections {SECTIONS - set(doc)}"
    n = 0
    for path, e in _entries({k: doc[k] for k in SECTIONS}):
        n += 1
        prov = [p for p in PROVENANCE if p in e]
        assert len(prov) == 1, f"{f.name}: {path} has provenance {prov}"
        p = prov[0]
        if p == "source":
            assert {"repo", "file", "ref"} <= set(e["source"]), f"{f.name}: {path}"
        elif p == "measured":
            assert {"file", "script", "date", "gpu"} <= set(e["measured"]), f"{f.name}: {path}"
            assert (PKG_ROOT / e["measured"]["file"]).is_file(), f"{f.name}: {path}: {e['measured']['file']}"
            assert (ROOT / e["measured"]["script"]).is_file(), f"{f.name}: {path}"
        elif p == "assumed":
            assert e["assumed"] is True and e.get("reason"), f"{f.name}: {path}"
        else:
            assert e["unknown"] is True and e.get("needs") and e["value"] is None, f"{f.name}: {path}"
    assert n >= 15, f"{f.name}: only {n} entries"


def test_hf_cb_measured_terms_are_the_fit_of_the_committed_profile_runs():
    doc = yaml.safe_load((PROFILES / "hf-cb-5.17.yaml").read_text())["host_time"]
    path = lambda eng: str(DATA / f"serving_{eng}_steps_{fit_host.SLUG_DATE}.csv.gz")  # noqa: E731
    prof = fit_host.pool(*[fit_host.load_steps(path(e)) for e in fit_host.PROFILE])
    f = fit_host.fit(prof)
    got = json.loads(fit_host.yaml_block(f, fit_host.score(f, fit_host.load_steps(path(fit_host.VALIDATION)))))
    assert doc["pre_forward"]["value"] == got["pre_forward"]
    assert doc["update"]["value"] == got["update"]
    assert doc["gap_ms"]["value"] == got["gap_ms"]
    assert doc["device"]["value"] == got["device"]
    assert doc["launch_overlap"]["value"] == got["launch_overlap"]
    assert {k: v for k, v in doc["launch"]["value"].items() if not k.startswith("held_out")} == {
        f"{k}_ms": v for k, v in got["forward_launch_ms"].items()}
    assert doc["first_seen_shape"]["value"]["stalls_s"] == got["stalls_s"]
    # the fitted terms are physical: positive per-key host cost (Python index lists), positive Q x K device cost
    assert got["pre_forward"]["per_key_us"] > 0 and got["device"]["per_1e9_qk_ms"] > 0


def test_hf_cb_efficient_terms_are_the_fit_of_its_profile_run_only():
    # SDPA without cuDNN (hf_cb_runtime.py --sdpa-backend efficient): fitted on its profile steps, no validation step
    doc = yaml.safe_load((PROFILES / "hf-cb-5.17-sdpa-efficient.yaml").read_text())["host_time"]
    prof = fit_host.load_steps(str(DATA / "serving_hfeffprof_steps_nvidia-h100-80gb-hbm3_2026-11-27.csv.gz"))
    assert all(w.startswith("prof") for w in set(prof["workload"]))
    got = json.loads(fit_host.yaml_block(fit_host.fit(prof), {}))
    for k in ("pre_forward", "update", "gap_ms", "device", "launch_overlap"):
        assert doc[k]["value"] == got[k], k
    assert {k: v for k, v in doc["launch"]["value"].items()} == {f"{k}_ms": v for k, v in got["forward_launch_ms"].items()}
    assert doc["first_seen_shape"]["value"]["stalls_s"] == got["stalls_s"] == []
    cfg = json.loads((DATA / "serving_hfeffprof_config_nvidia-h100-80gb-hbm3_2026-11-27.json").read_text())
    assert cfg["sdpa_backend"] == "efficient" and set(cfg["sdpa_backends_enabled"]["choice"].values()) == {"efficient"}


def test_profile_and_validation_runs_are_separate():
    for eng in fit_host.PROFILE:
        wl = set(fit_host.load_steps(str(DATA / f"serving_{eng}_steps_{fit_host.SLUG_DATE}.csv.gz"))["workload"])
        assert all(w.startswith("prof") for w in wl), wl
    val = fit_host.load_steps(str(DATA / f"serving_{fit_host.VALIDATION}_steps_{fit_host.SLUG_DATE}.csv.gz"))
    assert not any(w.startswith("prof") for w in set(val["workload"]))


def test_vllm_result_follows_vllm_definitions():
    # two requests: start 10.0 s, tokens at +0.5, +0.6, +0.8 (3 tokens); start 10.2 s, tokens at +0.3, +0.4;
    # one failed request (no tokens)
    reqs = [{"start_time": 10.0, "input_len": 100, "output_len": 3, "token_times": [10.5, 10.6, 10.8]},
            {"start_time": 10.2, "input_len": 50, "output_len": 2, "token_times": [10.5, 10.6]},
            {"start_time": 10.3, "input_len": 70, "output_len": 0, "token_times": []}]
    r = vllm_result.vllm_result(reqs, duration_s=2.0, request_rate=None, max_concurrency=2, label="t", model_id="m",
                                date="20260101-000000")
    assert r["completed"] == 2 and r["failed"] == 1 and r["request_rate"] == "inf" and r["max_concurrency"] == 2
    assert r["ttfts"] == pytest.approx([0.5, 0.3, 0.0])
    assert r["itls"][0] == pytest.approx([0.1, 0.2]) and r["itls"][2] == []
    assert r["latencies"] == pytest.approx([0.8, 0.4, 0.0])
    assert r["output_lens"] == [3, 2, 0] and r["total_input_tokens"] == 150 and r["total_output_tokens"] == 5
    assert r["errors"][0] == "" and r["errors"][2]
    # TPOT = (latency - ttft) / (output - 1): 0.15 s and 0.1 s; ITLs pooled: 0.1, 0.2, 0.1
    assert r["mean_tpot_ms"] == pytest.approx(125.0) and r["median_itl_ms"] == pytest.approx(100.0)
    assert r["mean_ttft_ms"] == pytest.approx(400.0) and r["p99_e2el_ms"] == pytest.approx(0.8 * 1000 - 4, abs=0.5)
    assert r["request_throughput"] == pytest.approx(1.0) and r["output_throughput"] == pytest.approx(2.5)
    assert r["max_concurrent_requests"] == 2 and r["max_output_tokens_per_s"] == 5.0


def test_committed_vllm_format_results_are_consistent():
    files = sorted((DATA / "vllm_format").glob("hfval_*.json"))
    cfg = json.loads((DATA / f"serving_hfval_config_{fit_host.SLUG_DATE}.json").read_text())
    assert len(files) == len(cfg["runs"]) == 12
    for f in files:
        r = json.loads(f.read_text())
        n = r["num_prompts"]
        for k in ("input_lens", "output_lens", "ttfts", "itls", "latencies", "start_times", "errors"):
            assert len(r[k]) == n, (f.name, k)
        assert r["completed"] + r["failed"] == n
        ok = [i for i in range(n) if not r["errors"][i]]
        assert all(r["ttfts"][i] > 0 and len(r["itls"][i]) == r["output_lens"][i] - 1 for i in ok), f.name
        e2e = [r["latencies"][i] for i in ok]
        assert r["median_e2el_ms"] == pytest.approx(float(np.median(e2e)) * 1e3)
        assert (r["request_rate"] == "inf") == (r["max_concurrency"] is not None), f.name
        assert not math.isnan(r["mean_itl_ms"])
