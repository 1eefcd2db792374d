"""Snapshot every user-visible output table (reproductions, runs, the sweep, serving simulations, the plan) into
one folder, or compare two snapshots file by file.

Used to prove that a refactoring changes no number: take a snapshot before, one after, and `--diff` them.

    python benchmarks/output_snapshot.py take DIR [--quick]     # runs the sparsesim on PATH; ~3-4 min
    python benchmarks/output_snapshot.py diff BEFORE AFTER     # byte-compares every CSV, prints what differs

Only CSV tables are compared (PNGs carry matplotlib metadata; reports carry timings). Columns that record wall
time (`wall_s`, `elapsed_s`, ...) are dropped before comparing, since they measure the machine, not the model.
"""
from __future__ import annotations

import argparse
import io
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

RUNS = ["quickstart", "ssv_h100_pcie", "ssv_traced", "gvr_b200", "gvr_traced", "specattn_rtx4090",
        "snapstream_sn40l", "lserve_a100"]
FIGURES = ["ssv", "gvr_topk", "specattn_throughput", "snapstream_sn40l", "lserve_a100"]
SIMULATIONS = [("serving_mooncake_h100", ["--requests", "3000"]), ("serving_disagg_h100", ["--requests", "1500"]),
               ("serving_poisson_h200", ["--requests", "3000"])]
WALL_COLUMNS = ("wall_s", "elapsed_s", "wall_time_s", "seconds_wall", "build_s", "simulated_s_per_wall_s")


def _commands(quick: bool) -> list[tuple[str, list[str]]]:
    cmds = [(f"run/{s}", ["sparsesim", "run", s, "--breakdown"]) for s in RUNS]
    cmds += [(f"figures/{f}", ["sparsesim", "figures", "run", f]) for f in FIGURES]
    cmds.append(("sweep/capacity_sweep", ["sparsesim", "sweep", "capacity_sweep"]))
    cmds += [(f"simulate/{s}", ["sparsesim", "simulate", s, *extra]) for s, extra in SIMULATIONS]
    cmds.append(("plan/plan_mooncake", ["sparsesim", "plan", "plan_mooncake", "--quick"]))
    if quick:
        cmds = [c for c in cmds if not c[0].startswith("plan/")]
    return cmds


def take(root: Path, quick: bool) -> int:
    root.mkdir(parents=True, exist_ok=True)
    failed = 0
    for label, cmd in _commands(quick):
        out = root / label
        out.mkdir(parents=True, exist_ok=True)
        t = time.time()
        r = subprocess.run([*cmd, "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        (out / "stdout.txt").write_text(r.stdout)
        status = "ok" if r.returncode == 0 else f"rc {r.returncode}"
        failed += r.returncode != 0
        print(f"[{status:>5} {time.time() - t:6.1f} s] {label}", flush=True)
    return 1 if failed else 0


def _table(path: Path) -> str:
    df = pd.read_csv(path)
    df = df.drop(columns=[c for c in df.columns if c in WALL_COLUMNS])
    buf = io.StringIO()
    df.to_csv(buf, index=False)
    return buf.getvalue()


def diff(before: Path, after: Path) -> int:
    a = {p.relative_to(before) for p in before.rglob("*.csv")}
    b = {p.relative_to(after) for p in after.rglob("*.csv")}
    bad = 0
    for rel in sorted(a - b):
        print(f"missing after: {rel}")
        bad += 1
    for rel in sorted(b - a):
        print(f"new after:     {rel}")
    same = 0
    for rel in sorted(a & b):
        x, y = _table(before / rel), _table(after / rel)
        if x == y:
            same += 1
            continue
        bad += 1
        xa, ya = x.splitlines(), y.splitlines()
        first = next((i for i, (u, v) in enumerate(zip(xa, ya)) if u != v), min(len(xa), len(ya)))
        print(f"DIFFERS:       {rel} ({len(xa)} vs {len(ya)} lines; first difference at line {first + 1})")
        if first < len(xa):
            print(f"    before: {xa[first][:200]}")
        if first < len(ya):
            print(f"    after:  {ya[first][:200]}")
    print(f"{same} tables identical, {bad} differ or are missing")
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="action", required=True)
    t = sub.add_parser("take")
    t.add_argument("dir")
    t.add_argument("--quick", action="store_true", help="skip the plan (the slowest, ~80 s)")
    d = sub.add_parser("diff")
    d.add_argument("before")
    d.add_argument("after")
    args = ap.parse_args()
    if args.action == "take":
        return take(Path(args.dir), args.quick)
    return diff(Path(args.before), Path(args.after))


if __name__ == "__main__":
    sys.exit(main())
