"""Count how a `sparsesim` executable handles generated bad (and borderline-good) inputs.

    python benchmarks/fuzz_report.py                     # the class cases (tests/fuzz_classes.py), sparsesim on PATH
    python benchmarks/fuzz_report.py --set fields        # the field-by-field cases of tests/fuzz_cases.py
    python benchmarks/fuzz_report.py --set all --exe /path/to/venv/bin/sparsesim --jobs 2
    python benchmarks/fuzz_report.py --only size,trace   # some classes only

Each case runs as its own process in a fresh folder (as a user would run it), under a memory cap (`ulimit -v`,
--mem-gib, default 4 GiB: a run that needs more is counted as `memcap`, never allowed to take a shared machine's
memory) and with TMPDIR inside that folder (a temporary folder left behind counts as `leftover`). Prints, per
kind of input, the number of inputs and outcomes:
  clean      a bad input refused as it should: exit 2 with one line naming the file (and field); or exit 3 where
             nothing can fit
  ok         a legal input that ran (and printed no NaN; a warning or progress line where one is expected)
  traceback  a Python traceback
  unclear    exit 2 but not one line naming the file and field, or another exit status
  accepted   a bad input that ran, or a file rewritten / written where nothing may be
  refused    a legal input that was refused
  memcap     the run hit the memory cap
  leftover   the run left a temporary folder behind
then the cases that were not clean. Used for the before/after counts of robustness work (an older checkout's
executable works too).
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.fuzz_cases import all_cases, classify  # noqa: E402
from tests.fuzz_classes import CLASSES, class_cases, classify_class  # noqa: E402

COLUMNS = ["inputs", "clean", "ok", "traceback", "unclear", "accepted", "refused", "memcap", "leftover"]


def kind_of(case) -> str:
    if getattr(case, "cls", ""):
        return case.cls
    for t in ("param", "spec", "model", "cli"):
        if t in case.tags:
            return t
    return "scenario"


def _cap(mem_bytes: int):
    def f():
        resource.setrlimit(resource.RLIMIT_AS, (mem_bytes, mem_bytes))
    return f


def run(case, exe: str, mem_bytes: int):
    d = Path(tempfile.mkdtemp(prefix="fz-"))
    tmp = d / ".tmp"
    tmp.mkdir()
    kept = {}
    try:
        for rel, data in case.files.items():
            p = d / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
        for rel, target in getattr(case, "links", {}).items():
            (d / rel).parent.mkdir(parents=True, exist_ok=True)
            os.symlink(target, d / rel)
        for rel in getattr(case, "keep", []):
            kept[rel] = (d / rel).read_bytes()
        env = dict(os.environ, TMPDIR=str(tmp), **getattr(case, "env", {}))
        env.setdefault("OMP_NUM_THREADS", "1")
        timeout = getattr(case, "timeout", 120)
        try:
            r = subprocess.run([exe] + case.argv, cwd=d, capture_output=True, text=True, errors="replace",
                               timeout=timeout, env=env, preexec_fn=_cap(mem_bytes))
        except subprocess.TimeoutExpired:
            return "unclear", f"timed out after {timeout} s"
        if hasattr(case, "cls"):
            outcome, why = classify_class(case, r.returncode, r.stdout, r.stderr, d, kept)
        else:
            outcome, why = classify(case, r.returncode, r.stderr, False)
        left = [p.name for p in tmp.iterdir()]
        if outcome in ("clean", "ok") and left:
            return "leftover", f"left {left[:3]} in TMPDIR"
        return outcome, why
    finally:
        for rel in getattr(case, "absent", []):   # never leave what a faulty run wrote outside its folder
            p = Path(rel)
            if p.is_absolute() and p.exists():
                shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink()
        shutil.rmtree(d, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--exe", default=shutil.which("sparsesim") or "sparsesim")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--set", choices=["classes", "fields", "all"], default="classes")
    ap.add_argument("--only", default="", help=f"comma-separated classes ({', '.join(CLASSES)})")
    ap.add_argument("--mem-gib", type=float, default=4.0, help="memory cap per case (ulimit -v), GiB")
    ap.add_argument("--limit", type=int, default=0, help="only the first N cases (0 = all)")
    args = ap.parse_args()
    cases = []
    if args.set in ("classes", "all"):
        cases += class_cases(tuple(x for x in args.only.split(",") if x) or CLASSES)
    if args.set in ("fields", "all"):
        cases += all_cases()
    if args.limit:
        cases = cases[:args.limit]
    mem = int(args.mem_gib * 2**30)
    with ThreadPoolExecutor(args.jobs) as ex:
        results = list(ex.map(lambda c: run(c, args.exe, mem), cases))
    table: dict[str, Counter] = defaultdict(Counter)
    for c, (outcome, _) in zip(cases, results):
        table[kind_of(c)]["inputs"] += 1
        table[kind_of(c)][outcome] += 1
    print(f"executable: {args.exe}; memory cap {args.mem_gib:g} GiB per case")
    print(f"{'kind':<11}" + "".join(f"{c:>10}" for c in COLUMNS))
    total = Counter()
    for k in sorted(table):
        total.update(table[k])
        print(f"{k:<11}" + "".join(f"{table[k][c]:>10}" for c in COLUMNS))
    print(f"{'total':<11}" + "".join(f"{total[c]:>10}" for c in COLUMNS))
    print("\n(clean = a bad input refused as it should; ok = a legal input that ran; accepted = a bad input that ran or "
          "a file written where none may be; refused = a legal input refused; memcap = past the memory cap; "
          "leftover = a temporary folder left behind)")
    bad = [(c, o, w) for c, (o, w) in zip(cases, results) if o not in ("clean", "ok")]
    if bad:
        print(f"\n{len(bad)} cases not clean:")
        for c, o, w in bad:
            print(f"  {o:<9} {c.name}: {w[:150]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
