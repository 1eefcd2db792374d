#!/usr/bin/env python3
"""`sparsesim compare` on every committed real run (hwmodels/calibration/data/serving/vllm_format: HF transformers'
continuous batching on an H100, 2026-11-26, in vLLM's --save-result format), under the shipped serving_hf_cb_h100
scenario: the error of the simulated p50 TTFT / TPOT / E2E and output throughput, as shipped (the hf-cb profile's
92 ms median launch) and, per run, after `--fit-host` (the host launch fitted on the run's first half, the errors on
its other half: held out).

    python benchmarks/compare_real_runs.py [--no-fit]

The profile's own launch distribution was measured on other runs (serving_hfprof*), never on these; each fit sees
only the first half of its own run.
"""
from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    from simulator.benchmark_results import read_result, shipped_results
    from simulator.benchmark_results.fit_host import fit_host
    from simulator.benchmark_results.replay import error_rows, measured_stats, replay, simulated_stats
    from simulator.scenario import load_scenario

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--no-fit", action="store_true")
    a = ap.parse_args()
    cfg = load_scenario("serving_hf_cb_h100").serving
    e = lambda x: "    -" if not math.isfinite(x) else f"{x:+5.0%}"  # noqa: E731
    print(f"{'run':<26} {'n':>3} {'workload':<13} | shipped profile: {'TTFT':>5} {'TPOT':>5} {'E2E':>5} {'tok/s':>5} |"
          + ("" if a.no_fit else f" fit launch | held out, shipped -> fitted: {'TTFT':>13} {'TPOT':>13} {'E2E':>13}")
          + " | wall")
    tmp = Path(tempfile.mkdtemp(prefix="compare_real_"))
    for stem, path in shipped_results().items():
        t0 = time.perf_counter()
        run = read_result(path)
        res, how = replay(run, cfg)
        r = {(x["metric"], x["stat"]): x["error"] for x in error_rows(measured_stats(run), simulated_stats(res))}
        wl = (f"C={run.max_concurrency}" if run.max_concurrency and math.isinf(run.request_rate) else
              f"{run.request_rate:.2f}/s")
        line = (f"{run.label or stem:<26} {int(run.ok.sum()):>3} {wl:<13} | {'':16} {e(r[('ttft', 'p50')])} "
                f"{e(r[('tpot', 'p50')])} {e(r[('e2e', 'p50')])} {e(r[('output_throughput', '')])} |")
        if not a.no_fit:
            if run.ok.sum() >= 4:
                f = fit_host(run, cfg, str(tmp / f"{stem}.yaml"))
                h = {(x["metric"], x["stat"]): x["error"] for x in f.held_rows}
                b = {(x["metric"], x["stat"]): x["error"] for x in f.base_rows}
                line += f" {f.value_s * 1e3:7.1f} ms | {'':26}" + " ".join(
                    f"{e(b[(m, 'p50')])} -> {e(h[(m, 'p50')])}" for m in ("ttft", "tpot", "e2e"))
            else:
                line += f" {'-':>10} | {'(too few requests to split)':>27}"
        print(line + f" | {time.perf_counter() - t0:4.1f} s", flush=True)
    print("errors: simulated / measured - 1 of the p50 (output throughput: of the rate); TTFT, TPOT, E2E as vLLM defines "
          "them; 'held out': the run's second half (in send order), in a replay of the whole run, under the shipped profile and "
          "under the launch fitted on the first half's TPOT (0 ms: the op model alone is already slower than the first "
          "half)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
