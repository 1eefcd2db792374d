#!/usr/bin/env python3
"""Blind per-request predictions of HF continuous batching with SDPA's cuDNN backend off, written BEFORE the runs exist.

    python benchmarks/hf_eff_blind_predict.py [--out CSV]

The engine profile `hf-cb-efficient` (simulator/engine/profiles/hf-cb-5.17-sdpa-efficient.yaml) was fitted on the
PROFILE steps of `lab/serving/hf_cb_runtime.py --sdpa-backend efficient` only. This script simulates the held-out
workloads of the next device call from their REQUEST SPECS alone (lab/serving/hf_cb_runtime.py validation_runs():
closed loop at C with fixed lengths; Poisson arrivals drawn from the spec's seed), no measured timing of them, and
writes each request's predicted TTFT / TPOT / E2E / queueing (launch = the profile's median, and drawn per step from
its distribution, seed 0). benchmarks/des_validation.py later scores the committed CSV against the measured runs.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lab" / "serving"))

#: the workloads of the validation call (hf_cb_runtime.py run names), chosen before any efficient-backend run
RUNS = ("cc1_in2k", "cc4_in2k", "cc1_in8k", "cc16_in2k", "poisson_0.75_in2k", "poisson_1.5_in2k",
        "poisson_4_in2k")
#: the harness's settings in every run (hf_cb_runtime.py defaults; the profile run's config JSON records them)
SCHED = {"max_num_batched_tokens": 8192, "max_num_seqs": 1024, "block_size": 256, "num_blocks": 1200,
         "enable_prefix_caching": False, "mixed_launch": "eager"}
ENGINE = "hf-cb-efficient"
#: the measuring client's reaction between a finish and the next submission (benchmarks/des_validation.py
#: HF_CLIENT_THINK_S: hf_cb_runtime.py drive() polls every 2 ms)
THINK_S = 1e-3


def spec_of(name: str) -> dict:
    from hf_cb_runtime import validation_runs

    return next(r for r in validation_runs(False) if r["name"] == name)


def trace_of(run: dict):
    from hf_cb_runtime import poisson_arrivals

    from simulator.traces.requests import RequestTrace

    n = run["n"]
    arr = np.zeros(n) if run["kind"] == "closed" else poisson_arrivals(run["rate"], n, run["seed"])
    return RequestTrace(name=run["name"], source="spec", arrival_s=np.asarray(arr, dtype=np.float64),
                        input_tokens=np.full(n, run["in"], dtype=np.int64),
                        output_tokens=np.full(n, run["out"], dtype=np.int64))


def config(mode: str):
    from simulator.engine.config import parse_serving_section

    doc = {"hardware": ["H100-SXM"], "model": "Llama-3.1-8B",
           "strategies": {"attention": {"dense": {"gqa_expand": "repeat_kv"}}},
           "runtime": {"launch": "eager", "kernels": "hf"}}
    section = {"requests": {"poisson": {"rate": 1.0, "count": 1}, "input_tokens": {"fixed": 16},
                            "output_tokens": {"fixed": 16}},
               "replicas": [{"count": 1}], "scheduler": dict(SCHED), "decode_run_steps": 0,
               "step_cost": {"host_launch": mode}, "engine": ENGINE}
    return parse_serving_section(section, file="<hf_eff_blind_predict>", base=ROOT, scenario=doc)


def predict(name: str, mode: str) -> list[dict]:
    from simulator.engine.api import simulate, with_concurrency

    run = spec_of(name)
    cfg = config(mode)
    if run["kind"] == "closed":
        cfg = with_concurrency(cfg, run["C"], think_s=THINK_S)
    res = simulate(cfg, trace_of(run), seed=0)
    df = res.requests
    out = []
    for i in range(run["n"]):
        out.append({"workload": name, "rid": i, "mode": mode, "input_tokens": run["in"], "output_tokens": run["out"],
                    "ttft_s": float(df["ttft_s"].iloc[i]), "tpot_s": float(df["tpot_s"].iloc[i]),
                    "e2e_s": float(df["e2e_s"].iloc[i]), "queue_s": float(df["queue_s"].iloc[i])})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--out", default="")
    a = ap.parse_args(argv)
    import pandas as pd

    rows = []
    for name in RUNS:
        for mode in ("median", "sample"):
            rows += predict(name, mode)
    df = pd.DataFrame(rows)
    for (w, m), g in df.groupby(["workload", "mode"], sort=False):
        print(f"{w:<20} {m:<7} n {len(g):>3}  TTFT p50 {g.ttft_s.median() * 1e3:8.1f} ms p90 "
              f"{g.ttft_s.quantile(0.9) * 1e3:8.1f}  TPOT p50 {g.tpot_s.median() * 1e3:7.1f} ms p90 "
              f"{g.tpot_s.quantile(0.9) * 1e3:7.1f}  queue p50 {g.queue_s.median() * 1e3:8.1f} ms")
    if a.out:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True).stdout.strip()
        with open(a.out, "w") as f:
            f.write(f"# blind prediction (no measured run of these workloads existed): engine {ENGINE}, "
                    f"benchmarks/hf_eff_blind_predict.py at commit {head} (+ working tree), profile fitted on "
                    "serving_hfeffprof_steps_nvidia-h100-80gb-hbm3_2026-11-27.csv.gz only\n")
            df.to_csv(f, index=False, float_format="%.6g")
        print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
