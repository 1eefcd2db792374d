"""Speed and peak memory of the discrete-event serving engine (simulator/engine), before and after, in one run.

    python benchmarks/des_speed.py --before DIR          # DIR: a checkout of the engine to compare against
    python benchmarks/des_speed.py --before DIR --million 200000 --skip simpy

Each case runs in its own Python process (PYTHONPATH = the tree under test), so each reports its own peak RSS:
setup (cost tables, priced by simulating the first request), the simulation's wall and CPU seconds, events
(a step, or a run of identical decode steps) per CPU second, requests per CPU second. Cases:

1. mooncake   the whole Mooncake conversation trace (12,031 requests, one hour) on serving_mooncake_h100
              (4 x H100-SXM Llama-3.1-8B). Goal: < 1 s.
2. million    N Poisson requests at 48 req/s with Azure-conversation lengths on 8 x H100-SXM Llama-3.1-8B
              (least-outstanding-tokens routing), ~5.8 simulated hours for 1M. Goal: 1M in < 15 s on one core.
3. fa3_70b     400 Poisson requests at 2 req/s with Azure-conversation lengths on one 8 x H200 Llama-3.1-70B replica
              (TP8) with FlashAttention-3 (vLLM's kernel on Hopper): the production prefill family's chunk surface,
              whose set-up was ~45 s while it was priced whole. Goal: setup < 5 s.
4. each shipped sparse serving scenario (serving_dsa_gvr_b200, serving_nsa_ssv_h100, serving_lserve_quest_a100,
   serving_specattn_a100, serving_snapkv_streaming_h100), full. Goal: < 30 s and < 2 GB each.

Columns: before (DIR), after (this tree, serving.event_loop: heap, the default) and, for the Mooncake hour unless
skipped, after with the simpy reference loop (serving.event_loop: simpy; identical results). The host is shared: wall time can
exceed CPU time when other processes run; the CPU time is the single-core figure.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TREE = HERE.parent
SPARSE = ["serving_dsa_gvr_b200", "serving_nsa_ssv_h100", "serving_lserve_quest_a100", "serving_specattn_a100",
          "serving_snapkv_streaming_h100"]


# ---- the child: one case in this process -----------------------------------------------------------------------
def _config(case: str, million: int):
    from simulator.engine.api import load_source
    from simulator.scenario import load_scenario

    if case == "mooncake":
        cfg = load_scenario("serving_mooncake_h100").serving
        return cfg, load_source(cfg.source, cfg.seed)
    if case == "million":
        from simulator.engine.config import parse_serving_section

        doc = {"hardware": "H100-SXM", "model": "Llama-3.1-8B", "runtime": {"launch": "graph"}}
        cfg = parse_serving_section({
            "requests": {"poisson": {"rate": 48.0, "count": million},
                         "input_tokens": {"empirical": "azure_conv", "column": "input"},
                         "output_tokens": {"empirical": "azure_conv", "column": "output"}},
            "replicas": [{"count": 8}], "router": "least_outstanding_tokens", "slo": {"ttft_ms": 1000, "tpot_ms": 50},
        }, "<des_speed>", Path("."), doc)
        return cfg, load_source(cfg.source, 0)
    if case == "fa3_70b":
        from simulator.engine.config import parse_serving_section

        doc = {"hardware": "H200", "model": "Llama-3.1-70B", "runtime": {"launch": "graph"}}
        cfg = parse_serving_section({
            "engine": "vllm-v1",
            "requests": {"poisson": {"rate": 2.0, "count": 400},
                         "input_tokens": {"empirical": "azure_conv", "column": "input"},
                         "output_tokens": {"empirical": "azure_conv", "column": "output"}},
            "replicas": [{"count": 1, "parallelism": {"tp": 8},
                          "strategies": {"attention": {"dense": {"kernel": "fa3"}}, "kv_dtype": "bf16"}}],
            "slo": {"ttft_ms": 2000, "tpot_ms": 50},
        }, "<des_speed>", Path("."), doc)
        return cfg, load_source(cfg.source, 0)
    # a sparse scenario, by path (a tree from before may not ship it)
    cfg = load_scenario(str(TREE / "scenarios" / f"{case}.yaml")).serving
    return cfg, load_source(cfg.source, cfg.seed)


def child(case: str, million: int, loop: str) -> dict:
    from dataclasses import replace

    from simulator.engine.api import simulate

    out = {"case": case}
    try:
        t0 = time.perf_counter()
        cfg, trace = _config(case, million)
        if loop == "simpy":
            cfg = replace(cfg, event_loop="simpy")
        simulate(cfg, trace.head(1))   # the cost tables (memoized for the run below)
        out["setup_s"] = time.perf_counter() - t0
        c0 = time.process_time()
        w0 = time.perf_counter()
        res = simulate(cfg, trace, record_steps=True)
        out.update(wall_s=time.perf_counter() - w0, cpu_s=time.process_time() - c0, requests=len(trace),
                   events=res.stats.events, steps=res.stats.steps, sim_s=res.stats.sim_end_s,
                   finished=int(res.summary["finished"]))
    except Exception as e:   # noqa: BLE001 - reported as the case's result
        out["error"] = f"{type(e).__name__}: {str(e)[:160]}"
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


# ---- the parent: every case in a fresh process per tree ---------------------------------------------------------
def run_case(tree: Path, case: str, million: int, loop: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    p = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", case, "--million", str(million),
                        "--loop", loop], env=env, capture_output=True, text=True)
    for line in reversed(p.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return {"case": case, "error": (p.stderr.strip().splitlines() or ["no output"])[-1][:160]}


def cell(r: dict) -> str:
    if "error" in r:
        return f"FAILED ({r['error']}; peak {r.get('peak_rss_mb', float('nan')):,.0f} MB)"
    return (f"setup {r['setup_s']:.1f} s, sim {r['cpu_s']:.2f} s CPU ({r['wall_s']:.2f} s wall), "
            f"{r['requests'] / r['cpu_s']:,.0f} req/CPU s, {r['events'] / r['cpu_s']:,.0f} events/CPU s, "
            f"peak {r['peak_rss_mb']:,.0f} MB")


def ratio(b: dict, a: dict, key: str) -> str:
    if "error" in b or "error" in a:
        return "n/a"
    return f"{b[key] / a[key]:.2f}x"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", type=Path, help="a checkout of the engine before (e.g. a git worktree of main)")
    ap.add_argument("--million", type=int, default=1_000_000, metavar="N", help="requests of the generated run")
    ap.add_argument("--skip", nargs="*", default=[], help="cases to skip: mooncake million fa3_70b sparse simpy")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--loop", default="heap", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.million, args.loop)))
        return
    cases = [c for c in ("mooncake", "million", "fa3_70b") if c not in args.skip]
    if "sparse" not in args.skip:
        cases += SPARSE
    print(f"des_speed {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: before = {args.before}, after = {TREE}; "
          f"million = {args.million:,}; {os.cpu_count()} CPUs (shared)", flush=True)
    for case in cases:
        b = run_case(args.before, case, args.million, "heap") if args.before else None
        a = run_case(TREE, case, args.million, "heap")
        print(f"{case}:", flush=True)
        if b is not None:
            print(f"    before          {cell(b)}")
        print(f"    after (heap)    {cell(a)}")
        if b is not None:
            print(f"    before / after  sim CPU {ratio(b, a, 'cpu_s')}, setup {ratio(b, a, 'setup_s')}, "
                  f"peak RSS {ratio(b, a, 'peak_rss_mb')}")
        if "simpy" not in args.skip and case == "mooncake":
            s = run_case(TREE, case, args.million, "simpy")
            print(f"    after (simpy)   {cell(s)}")
            print(f"    simpy / heap    sim CPU {ratio(s, a, 'cpu_s')}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
