"""The seventh block-scaled fp8 GEMM campaign, first call: FIT rows of DeepGEMM's pipeline fill and a fresh set of
cuBLASLt decode shapes whose split-K choice is recorded. Writes the grid (and the cuBLASLt split predictions) BEFORE the
measurement (lab/kernels/measure_deepgemm_gemm.py measures it, tag fill7).

    python lab/kernels/predict_deepgemm_gemm_fill7.py GRID.csv SPLIT_PREDICTION.csv
    python lab/kernels/predict_deepgemm_gemm_fill7.py --prices OUT.csv MAIN_TREE

--prices (written AFTER the measurement, from the split rules committed before it): the cuBLASLt rows' times priced by
main's model (MAIN_TREE: git archive 08cf44f, the rule before and its terms) and by this checkout (the read-off rule,
the kind refitted under it on its own named fit rows; no row of this set fitted); columns pred_main_us, pred_new_us.

DeepGEMM rows (all NAMED FIT ROWS of kind gemm_fp8_block, fitted after this call, never judged as held out): K scans at
fixed (M, N), one wave of tiles each (M 8 x N 2048: 16 x 16 tiles, 16 stages; M 64 x N 8192: 64 x 64 tiles, 13
stages; M 4 x N 4096: 16 x 32 tiles, 16 stages), from one K step to past the stage count, so the K loop whose loads
all fit in the pipeline's stages (the producer never waits for a freed stage: sm90_fp8_gemm_1d2d.cuh @ 54e2261, the
TMA warp's empty_barriers wait) is seen against the steady state; + several-wave rows at K 512-1024.
cuBLASLt rows (torch._scaled_mm block path; M a multiple of 4, K / 128 a multiple of 4: where that path runs and is
right): decode M 8-64 at 8-48 output tiles and 32-128 K steps, (M, K, N) in no committed CSV; their launched kernels
(names, grids) go to the run's _notes file. Split predictions: `split_main` (the shipped rule,
simulator.kernels.gemm_fp8.cublaslt_block_split) and `split_readoff` (READOFF below: a rule read off all 38 choices
recorded at M <= 128 so far, LOOKED-AT: it reproduces 35 of them, the shipped rule 22).
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from gemm_grid_pricing import code_state, committed_grids, run_price  # noqa: E402

#: (M, N) -> K values of the one-wave fill scans
SCANS = {
    (8, 2048): (128, 256, 384, 512, 768, 1024, 1280, 1536, 2048, 2560, 3072),
    (64, 8192): (128, 256, 512, 768, 1024, 1280, 1536, 1792, 2048, 2560),
    (4, 4096): (128, 384, 640, 1024, 1792),
}
#: several waves at K 512-1024: (M, K, N)
SEVERAL = [(2048, 512, 6144), (1024, 768, 6144), (4096, 1024, 4096), (512, 640, 16384), (1536, 896, 8192),
           (3072, 768, 3072)]
#: cuBLASLt decode shapes: (M, K, N)
CUBLASLT = [(8, 6144, 1024), (48, 6144, 2560), (12, 4096, 2048), (20, 7168, 2560), (56, 7168, 2560), (16, 7168, 3072),
            (40, 7168, 3072), (28, 10240, 2048), (24, 8192, 5120), (36, 8192, 5120), (12, 6144, 5632),
            (20, 7168, 6144), (64, 12288, 1536), (8, 16384, 2048), (32, 9216, 1024), (44, 5120, 2560)]
OWN_PREFIX = ("deepgemm_gemm_fill7", "cublaslt_block_split7")


def readoff_split(m: int, k: int, n: int) -> int:
    """READOFF: cuBLASLt's block split-K count as read off the 38 choices recorded at M <= 128 (grids 4, 5 and the first
    block grid's _notes files; LOOKED-AT): no split above M 64 or below 48 K steps; split where the 128 x 128 output
    tiles are <= 20, or <= 44 at M <= 28; 2 slices up to 56 K steps, 3 above."""
    tiles = math.ceil(m / 128) * math.ceil(n / 128)
    ks = math.ceil(k / 128)
    if m > 64 or ks < 48 or not (tiles <= 20 or (m <= 28 and tiles <= 44)):
        return 1
    return 2 if ks <= 56 else 3


def grid() -> list[tuple[str, int, int, int]]:
    rows = [("deepgemm", m, k, n) for (m, n), ks in SCANS.items() for k in ks]
    rows += [("deepgemm", m, k, n) for m, k, n in SEVERAL]
    return rows + [("cublaslt", m, k, n) for m, k, n in CUBLASLT]


PRICE = """
import json, sys
import pandas as pd
sys.path.insert(0, sys.argv[1])
from hwmodels.spec import load_hardware
from simulator.calibration import fit_production_topk_gemm as F
rows = json.loads(sys.stdin.read())
hw = load_hardware("H100-SXM")
df = pd.DataFrame([{"family": "gemm", "kernel": "fp8_block_cublaslt", "dist": "", "rows": m, "n": n, "k": k}
                   for m, k, n in rows])
print(json.dumps({"us": [float(x) for x in F.predict_gemm_us(F.gemm_frame(df), hw, hw.efficiency)]}))
"""


def prices(out: Path, main_tree: Path) -> None:
    """The cuBLASLt rows priced by main's model and by this checkout's (module docstring, --prices)."""
    rows = [list(x) for x in CUBLASLT]
    mp, nw = run_price(PRICE, main_tree, rows), run_price(PRICE, ROOT, rows)
    p = pd.DataFrame({"kernel": "cublaslt", "rows": [r[0] for r in rows], "k": [r[1] for r in rows],
                      "n": [r[2] for r in rows], "pred_main_us": mp["us"], "pred_new_us": nw["us"]})
    head, dirty = code_state()
    print(f"main 08cf44f, new {head}{' + uncommitted changes' if dirty else ''}: priced after the measurement")
    p.to_csv(out, index=False, float_format="%.4f")
    print(p.to_string())


def main():
    from simulator.kernels import gemm_fp8 as G

    if sys.argv[1] == "--prices":
        prices(Path(sys.argv[2]), Path(sys.argv[3]))
        return
    out, pred = Path(sys.argv[1]), Path(sys.argv[2])
    rows = grid()
    seen = set()
    for d in committed_grids(OWN_PREFIX):
        kern = d["kernel"].astype(str) if "kernel" in d.columns else pd.Series("?", index=d.index)
        seen |= set(zip(kern.replace({"fp8_block": "deepgemm"}), d["rows"].astype(int), d["k"].astype(int),
                        d["n"].astype(int)))
    clash = [r for r in rows if r in seen or (r[0] == "cublaslt" and any(
        (a, *r[1:]) in seen for a in ("fp8_block", "fp8_block_cublaslt")))]
    if clash or len(set(rows)) != len(rows):
        raise SystemExit(f"shapes already in a committed CSV: {clash}")
    bad = [r for r in rows if r[0] == "cublaslt" and (r[1] % 4 or (r[2] // 128) % 4)]
    if bad:
        raise SystemExit(f"cuBLASLt block rows where that path cannot run right: {bad}")
    pd.DataFrame(rows, columns=["kernel", "rows", "k", "n"]).to_csv(out, index=False)
    c = [r for r in rows if r[0] == "cublaslt"]
    p = pd.DataFrame({"kernel": "cublaslt", "rows": [r[1] for r in c], "k": [r[2] for r in c], "n": [r[3] for r in c],
                      "tiles": [math.ceil(m / 128) * math.ceil(n / 128) for _, m, k, n in c],
                      "ksteps": [math.ceil(k / 128) for _, m, k, n in c],
                      "split_main": [int(G.cublaslt_block_split(m, k, n)) for _, m, k, n in c],
                      "split_readoff": [readoff_split(m, k, n) for _, m, k, n in c]})
    head, dirty = code_state()
    print(f"split_main: the rule at {head}{' + uncommitted changes' if dirty else ''}; {len(rows)} grid rows, "
          f"{len(p)} cuBLASLt")
    p.to_csv(pred, index=False)
    print(p.to_string())


if __name__ == "__main__":
    main()
