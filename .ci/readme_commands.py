"""Run every command of the README's command table (rows `| `sparsesim ...` | ... |`) from a given folder,
as a new user would after `pip install .`; fail on the first non-zero exit status. Commands that write go to
the folder given with --cwd (a temporary folder in CI)."""
from __future__ import annotations

import argparse
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path


def commands(readme: Path) -> list[str]:
    out = []
    for line in readme.read_text().splitlines():
        m = re.match(r"^\|\s*`((?:sparsesim|python -m simulator)[^`]*)`\s*\|", line)
        if m:
            out.append(m.group(1))
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("readme")
    ap.add_argument("--cwd", required=True)
    args = ap.parse_args()
    cmds = commands(Path(args.readme))
    if not cmds:
        print("no commands found in the README's command table", file=sys.stderr)
        return 1
    for c in cmds:
        t = time.time()
        r = subprocess.run(shlex.split(c), cwd=args.cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        print(f"[{'ok' if r.returncode == 0 else 'FAIL'} {time.time() - t:5.1f} s] {c}")
        if r.returncode != 0:
            print(r.stderr[-2000:], file=sys.stderr)
            return 1
    print(f"{len(cmds)} README commands ran")
    return 0


if __name__ == "__main__":
    sys.exit(main())
