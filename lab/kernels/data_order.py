"""The order in which the measured / predicted CSVs (and their notes) new grids are checked against were first committed.

A blind grid is drawn from shapes in no CSV committed BEFORE it (gemm_grid_pricing.committed_grids). A later grid may
reuse an older grid's shapes (a control, a replicate), so an older grid's novelty test must not look at files committed
after that grid: this manifest says which those are, instead of per-script lists of later file names.

    python lab/kernels/data_order.py --write     # after committing new CSVs under DIRS (the test says when)

data_order.txt holds one line per logical file name (hwmodels.datafiles.name: a CSV later stored as .csv.gz keeps its
first commit): `<position> <commit> <folder>/<name>`, position = the index of the commit that first added the file in
`git log --reverse --date-order` (commit time order, parents first), so files added by one commit share a position.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: the folders whose CSVs gemm_grid_pricing.committed_grids reads (relative to the repository root)
DIRS = ("hwmodels/calibration/data/production_kernels", "lab/kernels")
MANIFEST = Path(__file__).resolve().parent / "data_order.txt"
SUFFIXES = (".csv", ".csv.gz", ".txt", ".txt.gz")   # measurements, predictions and their notes


def _logical(path: str) -> str:
    return path[:-3] if path.endswith(".gz") else path


def from_git(root: Path = ROOT) -> list[tuple[int, str, str]]:
    """(position, short commit, logical path) of every CSV under DIRS at its first adding commit, in commit order;
    position = the commit's index in `git log --reverse --date-order` (every commit, merges too). A file that only a
    merge commit added (moved there while resolving the merge) takes the merge's position."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout

    index = {c: i for i, c in enumerate(git("log", "--reverse", "--date-order", "--format=%h").split())}
    seen: dict[str, tuple[int, str, str]] = {}
    for merges in ((), ("-m", "--first-parent")):
        commit = ""
        for line in git("log", "--reverse", "--date-order", "--no-renames", "--diff-filter=A", "--name-only",
                        "--format=@%h", *merges, "--", *DIRS).splitlines():
            if line.startswith("@"):
                commit = line[1:]
            elif line.endswith(SUFFIXES) and Path(line).parent.as_posix() in DIRS and Path(line).name != MANIFEST.name:
                f = _logical(line)
                seen.setdefault(f, (index[commit], commit, f))
    return sorted(seen.values())


def write(root: Path = ROOT) -> Path:
    """Rewrite MANIFEST from git (from_git)."""
    rows = from_git(root)
    MANIFEST.write_text("".join(f"{p} {c} {f}\n" for p, c, f in rows))
    return MANIFEST


def positions(path: Path = MANIFEST) -> dict[str, int]:
    """Logical file NAME -> position of its first commit (MANIFEST)."""
    out = {}
    for line in path.read_text().splitlines():
        p, _, f = line.split(" ", 2)
        out[Path(f).name] = int(p)
    return out


def committed_before(prefix: str | tuple[str, ...], files) -> list[Path]:
    """The `files` (paths) committed before the first file whose logical name starts with `prefix` (a grid's own
    files): what that grid was drawn against. A grid not committed yet: every file but its own. A file the manifest
    does not list counts as later."""
    prefix = (prefix,) if isinstance(prefix, str) else tuple(prefix)
    order = positions()
    own = [p for n, p in order.items() if n.startswith(prefix)]
    out = []
    for f in map(Path, files):
        n = _logical(f.name)
        if n.startswith(prefix) or (own and order.get(n, float("inf")) >= min(own)):
            continue
        out.append(f)
    return out


def listed_csvs(root: Path = ROOT) -> set[str]:
    """Logical names of the data files (CSVs and their text notes) present under DIRS now, this manifest aside; the
    production_kernels folder is read where the package has it (an installed package's data, as CI runs the tests
    from a copy of lab/ and tests/ without the source tree)."""
    from simulator.calibration.fit_production_topk_gemm import DATA_DIR

    folders = [DATA_DIR if d == DIRS[0] else root / d for d in DIRS]
    return {_logical(p.name) for d in folders for s in SUFFIXES for p in d.glob("*" + s)} - {MANIFEST.name}


if __name__ == "__main__":
    if "--write" in sys.argv[1:]:
        print(f"wrote {write()} ({len(positions())} files)")
    else:
        missing = sorted(listed_csvs() - set(positions()))
        print("\n".join(missing) if missing else "data_order.txt lists every CSV")
