"""What the block-scaled fp8 GEMM grid pricing scripts (predict_deepgemm_gemm_decode2/3.py,
predict_deepgemm_gemm_grid4.py, predict_cublaslt_block_grid5.py) share: the committed CSVs a new grid's shapes are
checked against, a grid priced by a model tree in a subprocess (the script's PRICE program run with that tree first on
sys.path and as its working folder), and the state of this tree's model code named beside the prices."""
from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]


def committed_grids(skip: str | tuple[str, ...], need: tuple[str, ...] = ("rows", "k", "n")) -> Iterator[pd.DataFrame]:
    """The committed CSVs (production_kernels, lab/kernels grids) a grid named by the file-name prefix(es) `skip` was
    drawn against, holding the columns `need`, their rows with a non-numeric `rows` dropped. Once the grid's own files
    are committed (listed in data_order.txt), only files committed BEFORE its first one count: a later grid that reuses
    its shapes does not make it look measured already. A grid not committed yet is checked against every CSV but its own."""
    from data_order import committed_before

    from simulator.calibration import fit_production_topk_gemm as F

    files = [*F.DATA_DIR.glob("*.csv"), *F.DATA_DIR.glob("*.csv.gz"), *(ROOT / "lab" / "kernels").glob("*.csv")]
    for f in committed_before(skip, files):
        d = pd.read_csv(f)
        if set(need) <= set(d.columns):
            yield d[pd.to_numeric(d["rows"], errors="coerce").notna()]


def check_block_shapes(rows: list[tuple[int, int, int]], own_prefix: str | tuple[str, ...], k_multiple: int = 512) -> None:
    """A block-scaled fp8 GEMM grid's (M, K, N) rows: none measured for either block kernel (cuBLASLt, DeepGEMM) or an
    unnamed one in the CSVs committed before the grid (committed_grids), M % 4 == 0, K % k_multiple == 0 (512: torch's
    block path gives wrong results elsewhere, grid 14's readme; grid 14 drew with 128), N % 128 == 0, no duplicates;
    SystemExit naming what fails."""
    seen = set()
    for d in committed_grids(own_prefix):
        kern = d["kernel"].astype(str) if "kernel" in d.columns else pd.Series("?", index=d.index)
        kern = kern.replace({"fp8_block": "deepgemm", "fp8_block_cublaslt": "cublaslt"})
        seen |= set(zip(kern, d["rows"].astype(int), d["k"].astype(int), d["n"].astype(int)))
    clash = [r for r in rows if ("cublaslt", *r) in seen or ("deepgemm", *r) in seen or ("?", *r) in seen]
    bad = [r for r in rows if r[0] % 4 or r[1] % k_multiple or r[2] % 128]
    if clash or bad or len(set(rows)) != len(rows):
        raise SystemExit(f"clash {clash}; bad {bad}; duplicates {len(rows) - len(set(rows))}")


def run_price(script: str, tree: Path, rows, extra: tuple[str, ...] = (), echo_stderr: bool = False) -> dict:
    """Run the pricing program `script` with the model at `tree` (argv: tree, then `extra`) on `rows` (JSON on stdin);
    its stdout is one JSON object. `echo_stderr` prints what it wrote to stderr."""
    r = subprocess.run([sys.executable, "-c", script, str(tree)] + list(extra), input=json.dumps(rows),
                       capture_output=True, text=True, cwd=tree, check=True)
    if echo_stderr and r.stderr.strip():
        print(r.stderr.strip())
    return json.loads(r.stdout)


def code_state() -> tuple[str, bool]:
    """This tree's short HEAD and whether simulator/ or hwmodels/ hold uncommitted changes."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    dirty = subprocess.run(["git", "status", "--porcelain", "simulator", "hwmodels"], cwd=ROOT, capture_output=True,
                           text=True).stdout.strip()
    return head.strip(), bool(dirty)


def regime_mismatches(rows, splits, waves, ksteps, regimes) -> list:
    """The (M, K, N) rows whose split / waves / K steps are not their regime's (the block grids' regime names: 'decode
    split' rows split, other decode rows unsplit, decode rows one wave; 'prefill one wave' one wave, other prefill rows
    several, prefill rows unsplit; 'prefill <n> K steps' n K steps)."""
    wrong = [r for r, s, reg in zip(rows, splits, regimes)
             if reg.startswith("decode") and (s > 1) != reg.startswith("decode split")]
    wrong += [r for r, w, s, reg in zip(rows, waves, splits, regimes) if reg.startswith("prefill")
              and ((w == 1) != (reg == "prefill one wave") or s > 1)]
    wrong += [r for r, w, reg in zip(rows, waves, regimes) if reg.startswith("decode") and w > 1]
    wrong += [r for r, ks, reg in zip(rows, ksteps, regimes) if reg.startswith("prefill ")
              and reg[8].isdigit() and ks != int(reg.split()[1])]
    return wrong
