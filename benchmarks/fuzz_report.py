"""Count how a `sparsesim` executable handles the generated bad inputs of tests/fuzz_cases.py.

    python benchmarks/fuzz_report.py                     # the sparsesim on PATH
    python benchmarks/fuzz_report.py --exe /path/to/venv/bin/sparsesim --jobs 2

Each case runs as its own process in a fresh folder (as a user would run it). Prints, per kind of input,
the number of inputs, tracebacks, unclear messages (exit 2 but not one line naming the file and field, or
another exit status), silently accepted bad inputs, and legal inputs refused; then the cases that were not
clean. Used for the before/after counts of the fuzzing work (an older checkout's executable works too: the
cases only use `run`, `hw`, `models`, `sweep`, `figures`, `strategies` and `scenarios`).
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.fuzz_cases import all_cases, classify  # noqa: E402


def kind_of(case) -> str:
    for t in ("param", "spec", "model", "cli"):
        if t in case.tags:
            return t
    return "scenario"


def run(case, exe: str):
    d = Path(tempfile.mkdtemp(prefix="fz-"))
    try:
        for rel, data in case.files.items():
            p = d / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
        r = subprocess.run([exe] + case.argv, cwd=d, capture_output=True, text=True, errors="replace", timeout=120)
        return classify(case, r.returncode, r.stderr, False)
    except subprocess.TimeoutExpired:
        return "unclear", "timed out after 120 s"
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--exe", default=shutil.which("sparsesim") or "sparsesim")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--limit", type=int, default=0, help="only the first N cases (0 = all)")
    args = ap.parse_args()
    cases = all_cases()
    if args.limit:
        cases = cases[:args.limit]
    with ThreadPoolExecutor(args.jobs) as ex:
        results = list(ex.map(lambda c: run(c, args.exe), cases))
    table: dict[str, Counter] = defaultdict(Counter)
    for c, (outcome, _) in zip(cases, results):
        table[kind_of(c)]["inputs"] += 1
        table[kind_of(c)][outcome] += 1
    cols = ["inputs", "clean", "ok", "traceback", "unclear", "accepted", "refused"]
    print(f"executable: {args.exe}")
    print(f"{'kind':<10}" + "".join(f"{c:>11}" for c in cols))
    total = Counter()
    for k in sorted(table):
        total.update(table[k])
        print(f"{k:<10}" + "".join(f"{table[k][c]:>11}" for c in cols))
    print(f"{'total':<10}" + "".join(f"{total[c]:>11}" for c in cols))
    print("\n(clean = exit 2 with one line naming the file and field; ok = a legal input that ran;"
          " accepted = a bad input that ran; refused = a legal input that was refused)")
    bad = [(c, o, w) for c, (o, w) in zip(cases, results) if o not in ("clean", "ok")]
    if bad:
        print(f"\n{len(bad)} cases not clean:")
        for c, o, w in bad:
            print(f"  {o:<9} {c.name}: {w[:150]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
