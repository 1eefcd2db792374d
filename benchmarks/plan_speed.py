"""Wall time and peak memory of `sparsesim plan`, before and after, in one run.

    python benchmarks/plan_speed.py --before DIR [--quick] [--scenario plan_mooncake] [--profile FILE]

Runs `sparsesim plan SCENARIO` (full, or `--quick`) in a fresh process per tree (PYTHONPATH = the tree), with
its output piped (as a script would run it), and prints wall seconds, CPU seconds (the process and its Dask
workers, if any), peak RSS, the engine runs and candidates it reports, and the before / after ratios. Goal for the
full plan_mooncake: < 60 s wall on 2 cores, < 1 GiB peak. `--profile FILE` also runs the after tree once under
cProfile and prints the 25 functions with the most cumulative time.
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TREE = Path(__file__).resolve().parent.parent


def run(tree: Path, scenario: str, quick: bool) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    code = ("import resource, sys; from simulator.cli import main; rc = main(sys.argv[1:]); "
            "print('PEAK_RSS_KB', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "
            "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); sys.exit(rc)")
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-c", code, "plan", scenario, "--out", out] + (["--quick"] if quick else [])
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        p = subprocess.run(cmd, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    m = re.search(r"PEAK_RSS_KB (\d+) (\d+)", p.stderr)
    peak = max(int(m.group(1)), int(m.group(2))) / 1024 if m else float("nan")
    runs = re.search(r"([\d,]+) engine runs", p.stdout + p.stderr)
    cands = re.search(r"([\d,]+) candidates", p.stdout + p.stderr)
    return {"rc": p.returncode, "wall_s": wall, "cpu_s": (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime),
            "peak_mb": peak, "runs": runs.group(1) if runs else "?", "cands": cands.group(1) if cands else "?",
            "err": p.stderr.strip().splitlines()[-2:] if p.returncode else []}


def line(label: str, r: dict) -> str:
    s = (f"{label:<8} rc {r['rc']}, {r['wall_s']:.1f} s wall, {r['cpu_s']:.1f} s CPU, peak {r['peak_mb']:,.0f} MB, "
         f"{r['runs']} engine runs, {r['cands']} candidates")
    return s + (f"  ({' | '.join(r['err'])})" if r["err"] else "")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", type=Path, required=True, help="a checkout of the planner before")
    ap.add_argument("--scenario", default="plan_mooncake")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--profile", type=Path, help="also profile the after tree into this file")
    args = ap.parse_args()
    print(f"plan_speed {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: sparsesim plan {args.scenario}"
          f"{' --quick' if args.quick else ''}; before = {args.before}, after = {TREE}; {os.cpu_count()} CPUs (shared)")
    b = run(args.before, args.scenario, args.quick)
    print(line("before", b), flush=True)
    a = run(TREE, args.scenario, args.quick)
    print(line("after", a), flush=True)
    print(f"before / after: wall {b['wall_s'] / a['wall_s']:.2f}x, CPU {b['cpu_s'] / a['cpu_s']:.2f}x, "
          f"peak {b['peak_mb'] / a['peak_mb']:.2f}x")
    if args.profile:
        env = dict(os.environ, PYTHONPATH=str(TREE))
        with tempfile.TemporaryDirectory() as out:
            subprocess.run([sys.executable, "-m", "cProfile", "-o", str(args.profile), "-m", "simulator.cli", "plan",
                            args.scenario, "--out", out] + (["--quick"] if args.quick else []),
                           env=env, capture_output=True)
        import pstats

        pstats.Stats(str(args.profile)).sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()
