"""How fast sparsesim prices real sweeps: strategy tuples through `planner.evaluate`, result table built.

Three synthetic sweeps (scenario dicts below; every setting gets its full result row — step time, TPOT,
throughput, TTFT from a prefill pricing, KV bytes, max batch, fits, SLO flag — in one pandas DataFrame):

  dense   3 GPUs (H100-SXM, H200, B200) x KV {bf16, fp8} x weights {native, fp8} x TP {1, 2, 4, 8}
          x 2,084 dense `split_tokens` values (16..2099) = 100,032 tuples, each at 10 contexts (4K..128K),
          batch 1, 256 output tokens: 1,000,320 rows (the sweep of the speed review, reviews/aesthetics_speed.md
          B.4, where it took 421.6 s and 7.6 GiB)
  ssv     NSA (top_n x window) + EAGLE-3 chains/trees (k x acceptance) + verify kernels (per_query, dense_union,
          ssv C x mode) + schedules (none, refresh_every 1/2/4/8) x KV x TP on H100-SXM and H200, Llama-3.1-8B,
          batch {1, 8} x 5 contexts
  draft   Llama-2-7B with a TinyLlama-1.1B draft model (k 1..8 x acceptance 0.5..0.9, plus no speculation)
          x dense split_tokens x KV x weights x TP on 4 GPUs, batch {1, 4, 16} x 5 contexts

Each measurement runs in a fresh child process (so peak RSS is that sweep's own) and prints wall time
(scenario load + enumeration + pricing + result table; medians over `--repeat` runs), tuples/s, settings/s
(settings = rows of the result table) and the child's peak RSS (ru_maxrss).

    python benchmarks/price_speed.py                       # all three sweeps at full size, 3 runs each
    python benchmarks/price_speed.py --sweeps dense --scale 0.1 --repeat 1
    python benchmarks/price_speed.py --parquet DIR         # also time the streamed-Parquet path (no table kept)
    python benchmarks/price_speed.py --workers 2           # also time the sweep on a 2-worker Dask LocalCluster

`--scale s` shrinks each sweep's largest list (split_tokens, or the EAGLE-3 k list / draft acceptance
list) to about s of its length, for quick runs and for timing code too slow to run at full size.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

CONTEXTS_DENSE = [4096, 6144, 8192, 12288, 16384, 24576, 32768, 65536, 98304, 131072]


def _shrink(values: list, scale: float) -> list:
    n = max(1, round(len(values) * scale))
    if n >= len(values):
        return values
    step = len(values) / n
    return [values[int(i * step)] for i in range(n)]


def scenario_doc(kind: str, scale: float = 1.0) -> dict:
    """The scenario mapping of one benchmark sweep."""
    if kind == "dense":
        return {
            "name": "bench-dense", "hardware": ["H100-SXM", "H200", "B200"], "model": "Llama-3.1-8B",
            "workload": {"batch": [1], "context": CONTEXTS_DENSE, "output_tokens": 256},
            "strategies": {"attention": [{"dense": {"split_tokens": _shrink(list(range(16, 2100)), scale)}}],
                           "kv_dtype": ["bf16", "fp8"], "weight_dtype": ["native", "fp8"],
                           "parallelism": [{"tp": [1, 2, 4, 8]}]},
            "objective": {"rank_by": "tokens_per_s", "slo": {"tpot_ms": 50}}, "outputs": ["csv"],
        }
    if kind == "ssv":
        return {
            "name": "bench-ssv", "hardware": ["H100-SXM", "H200"], "model": "Llama-3.1-8B",
            "workload": {"batch": [1, 8], "context": [8192, 16384, 32768, 65536, 131072], "output_tokens": 256},
            "strategies": {
                "attention": [{"nsa": {"top_n": [8, 16, 32], "window": [256, 512]}}],
                "speculation": [{"eagle3": {"k": _shrink([2, 3, 4, 5, 6, 7, 8], scale),
                                            "acceptance": [0.6, 0.7, 0.8]}},
                                {"eagle3": {"tree": {"branch": 3, "depth": 3, "nodes": 12},
                                            "acceptance": [0.6, 0.7, 0.8]}}],
                "verify_kernel": ["per_query", "dense_union", {"ssv": {"group": [2, 4, 8], "mode": ["exact", "approx"]}}],
                "schedule": ["none", {"refresh_reuse": {"refresh_every": [1, 2, 4, 8]}}],
                "kv_dtype": ["bf16", "fp8"], "parallelism": [{"tp": [1, 2]}]},
            "objective": {"rank_by": "tokens_per_s", "slo": {"tpot_ms": 50}}, "outputs": ["csv"],
        }
    if kind == "draft":
        return {
            "name": "bench-draft", "hardware": ["H100-SXM", "H200", "A100-80GB", "L40S"], "model": "Llama-2-7B",
            "workload": {"batch": [1, 4, 16], "context": [1024, 1536, 2048, 3072, 4096], "output_tokens": 256},
            "strategies": {
                "attention": [{"dense": {"split_tokens": [64, 128, 256, 512]}}],
                "speculation": ["none", {"draft_model": {"model": "TinyLlama-1.1B", "k": [1, 2, 3, 4, 5, 6, 7, 8],
                                                         "acceptance": _shrink([0.5, 0.6, 0.7, 0.8, 0.9], scale)}}],
                "kv_dtype": ["fp16", "fp8"], "weight_dtype": ["native", "fp8"], "parallelism": [{"tp": [1, 2, 4]}]},
            "objective": {"rank_by": "tokens_per_s", "slo": {"tpot_ms": 50}}, "outputs": ["csv"],
        }
    raise ValueError(kind)


def _child(kind: str, scale: float, parquet: str | None, workers: int) -> None:
    """One measurement in this (fresh) process: print a JSON line."""
    import resource

    t0 = time.perf_counter()
    from simulator import planner
    from simulator.scenario import scenario_from_dict

    sc = scenario_from_dict(scenario_doc(kind, scale), f"<bench {kind}>")
    t_load = time.perf_counter()
    rows = 0
    if parquet:
        res = planner.evaluate(sc, parquet=os.path.join(parquet, f"{kind}.parquet"))
        rows = res.rows
    elif workers:
        from simulator import parallel

        with parallel.client(workers=workers) as cl:
            t_load = time.perf_counter()
            res = planner.evaluate(sc, client=cl)
            rows = len(res.results)
    else:
        res = planner.evaluate(sc)
        rows = len(res.results)
    t1 = time.perf_counter()
    n_tuples = sum(1 for _ in planner.combos(sc))
    ru = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"kind": kind, "tuples": n_tuples, "rows": rows, "skipped": res.n_skipped,
                      "wall_s": t1 - t0, "evaluate_s": t1 - t_load, "cpu_s": ru.ru_utime + ru.ru_stime,
                      "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sweeps", default="dense,ssv,draft", help="comma-separated: dense, ssv, draft")
    ap.add_argument("--scale", type=float, default=1.0, help="shrink each sweep's longest list to this share")
    ap.add_argument("--repeat", type=int, default=3, help="runs per sweep (fresh process each); medians printed")
    ap.add_argument("--parquet", metavar="DIR", help="also time planner.evaluate(parquet=...) writing into DIR")
    ap.add_argument("--workers", type=int, default=0, help="also time a Dask LocalCluster of N workers")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--child-mode", default="table", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(args.child, args.scale, args.parquet if args.child_mode == "parquet" else None,
               args.workers if args.child_mode == "dask" else 0)
        return
    modes = ["table"] + (["parquet"] if args.parquet else []) + (["dask"] if args.workers else [])
    print(f"{'sweep':6s} {'path':8s} {'tuples':>8s} {'rows':>10s} {'wall s':>8s} {'cpu s':>7s} {'tuples/s':>10s} "
          f"{'settings/s':>11s} {'peak RSS':>9s}   runs (wall s)")
    for kind in args.sweeps.split(","):
        for mode in modes:
            runs = []
            for _ in range(args.repeat):
                cmd = [sys.executable, __file__, "--child", kind, "--scale", str(args.scale), "--child-mode", mode,
                       "--workers", str(args.workers)] + (["--parquet", args.parquet] if args.parquet else [])
                out = subprocess.run(cmd, capture_output=True, text=True)
                if out.returncode:
                    sys.exit(f"{kind}/{mode} failed:\n{out.stderr[-3000:]}")
                runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
            wall = statistics.median(r["wall_s"] for r in runs)
            rss = statistics.median(r["rss_mib"] for r in runs)
            cpu = statistics.median(r["cpu_s"] for r in runs)
            r0 = runs[0]
            print(f"{kind:6s} {mode:8s} {r0['tuples']:8,d} {r0['rows']:10,d} {wall:8.2f} {cpu:7.2f} "
                  f"{r0['tuples'] / wall:10,.0f} "
                  f"{r0['rows'] / wall:11,.0f} {rss:6.0f} MiB   "
                  + ", ".join(f"{r['wall_s']:.2f}" for r in runs), flush=True)
    print("wall = scenario load + enumeration + refusals + pricing + result table (median of the runs); cpu = "
          "user + system CPU seconds of the measuring process (imports included; with Dask: the client only); "
          "settings = result rows; peak RSS of the measuring process")


if __name__ == "__main__":
    main()
