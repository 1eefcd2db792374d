"""Engine speed and effect of the per-step trace replay (serving.trace_replay, simulator/engine/trace_replay.py).

    python benchmarks/trace_replay_speed.py [SCENARIO] [--requests N]

Runs a traced serving scenario (default serving_ssv_traced_h100) with serving.trace_replay: mean and per_step
(seeds 0 and 1), and prints per run: host wall and CPU seconds of the whole simulation (cost surfaces included),
the CPU seconds spent inside the replay (its part-time rows, factor sequences and per-run slices, timed by wrapping
Cursor.run_delta), engine events and steps, p50/p99 TPOT and goodput. The host is shared: the CPU time is the
single-core figure.
"""
from __future__ import annotations

import argparse
import time
from dataclasses import replace

from simulator.engine import trace_replay as TR
from simulator.engine.api import load_source, simulate
from simulator.scenario import load_scenario

_SPENT = [0.0]


def _timed(fn):
    def wrap(*a, **k):
        t = time.process_time()
        try:
            return fn(*a, **k)
        finally:
            _SPENT[0] += time.process_time() - t
    return wrap


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario", nargs="?", default="serving_ssv_traced_h100")
    ap.add_argument("--requests", type=int, default=None)
    args = ap.parse_args()
    sc = load_scenario(args.scenario)
    cfg = sc.serving
    TR.Cursor.run_delta = _timed(TR.Cursor.run_delta)
    print(f"{sc.name}: trace {cfg.groups[0].combo.trace.name}; {cfg.groups[0].label}")
    print(f"{'mode':<10}{'seed':>5}{'wall s':>8}{'cpu s':>7}{'replay cpu':>11}{'events':>8}{'steps':>7}"
          f"{'TPOT p50':>10}{'TPOT p99':>10}{'goodput':>9}")
    for seed in (0, 1):
        trace = load_source(cfg.source, seed, requests=args.requests)
        for mode in ("mean", "per_step"):
            _SPENT[0] = 0.0
            t, c = time.perf_counter(), time.process_time()
            res = simulate(replace(cfg, trace_replay=mode), trace, seed=seed)
            wall, cpu = time.perf_counter() - t, time.process_time() - c
            s = res.summary
            print(f"{mode:<10}{seed:>5}{wall:>8.2f}{cpu:>7.2f}{_SPENT[0]:>11.3f}{res.stats.events:>8,}"
                  f"{res.stats.steps:>7,}{s['tpot_p50_ms']:>10.4f}{s['tpot_p99_ms']:>10.4f}{s['goodput_req_s']:>9.4f}")
    for line in res.notes:
        if line.startswith("trace replay"):
            print(line)


if __name__ == "__main__":
    main()
