"""The fifth block-scaled fp8 GEMM grid: cuBLASLt's block path (torch._scaled_mm, 1 x 128 / 128 x 128 scales) at decode
M 8-128, the shapes where its split-K choice decides the time: write the grid with the committed predictions BEFORE it
is measured (lab/kernels/measure_deepgemm_gemm.py measures it; no DeepGEMM row).

    python lab/kernels/predict_cublaslt_block_grid5.py OUT.csv GRID.csv TREE_MAIN TREE_GRID4

TREE_MAIN / TREE_GRID4: exports of main's tree at c460edb and of this branch at ebfa529 (the model grid 4 judged:
the kind refitted on its 60 named fit rows, the split rule before); this checkout prices the new one. Shapes: M a
multiple of 4 and K / 128 a multiple of 4 (the block path runs only there: grid 4), (K, N) of DeepSeek-V3 / Qwen3 /
Llama-style layers with 6-44 output tiles and 32-128 K steps, no (M, K, N) of any committed cuBLASLt / block row.
Columns: pred_main_us (c460edb), pred_g4_us (ebfa529), pred_new_us (this checkout: the split rule read off all 32
recorded choices, cuBLASLt's kind refitted under it on the same 60 rows); split_g4 / split_new: the split counts the
two rules price. All in-graph (one graph launch per kernel kept).
"""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from gemm_grid_pricing import code_state, committed_grids, run_price  # noqa: E402

#: (K, N, layer) -> M
GRID = {
    (7168, 1024, "DeepSeek-V3 hidden -> 1024 (8 tiles)"): (8, 40, 128),
    (8192, 1536, "Qwen3-235B-A22B-like o_proj half (12 tiles)"): (16, 52, 96),
    (14336, 1280, "Llama-style down, N 1280 (10 tiles)"): (24,),
    (10240, 768, "K 10240 -> 768 (6 tiles, 80 K steps)"): (12,),
    (6144, 1536, "K 6144 -> 1536 (12 tiles, 48 K steps)"): (16,),
    (4096, 1024, "Qwen3 hidden 4096 -> 1024 (8 tiles)"): (32,),
    (7168, 2048, "DeepSeek-V3 hidden -> 2048 (16 tiles)"): (8, 48),
    (8192, 3072, "K 8192 -> 3072 (24 tiles)"): (20, 64),
    (7168, 4608, "DeepSeek-V3 dense gate_up TP8 (36 tiles)"): (32,),
    (12288, 4096, "K 12288 -> 4096 (32 tiles, 96 K steps)"): (12, 44),
    (16384, 2560, "K 16384 -> 2560 (20 tiles, 128 K steps)"): (28,),
    (7168, 5632, "DeepSeek-V3 hidden -> 5632 (44 tiles)"): (16,),
    (10240, 6144, "K 10240 -> 6144 (48 tiles)"): (24,),
}
#: this grid's own files: its predictions and grid (cublaslt_block_grid5_*) and its measurement (deepgemm_gemm_grid5_*)
OWN_PREFIX = ("cublaslt_block_grid5", "deepgemm_gemm_grid5")


def grid() -> list[tuple[str, int, int, int, str]]:
    return [("cublaslt", m, k, n, name) for (k, n, name), ms in GRID.items() for m in ms]


def regime(m: int, k: int, n: int) -> str:
    from simulator.kernels import gemm_fp8 as G

    if m > 64:
        return "decode M 96-128 (control)"
    return "decode M<=64, split priced" if G.cublaslt_block_split(m, k, n) > 1 else "decode M<=64, unsplit priced"


def committed_shapes() -> set[tuple[int, int, int]]:
    """(M, K, N) of every cuBLASLt block row (kernel cublaslt, fp8_block or fp8_block_cublaslt) of any committed CSV
    with rows / k / n columns, this grid's own files aside."""
    seen = set()
    for d in committed_grids(OWN_PREFIX, ("rows", "k", "n", "kernel")):
        d = d[d["kernel"].isin(["cublaslt", "fp8_block", "fp8_block_cublaslt"])]
        seen |= set(zip(d["rows"].astype(int), d["k"].astype(int), d["n"].astype(int)))
    return seen


PRICE = """
import json, sys
import pandas as pd
sys.path.insert(0, sys.argv[1])
from hwmodels.spec import load_hardware
from simulator.calibration import fit_production_topk_gemm as F
from simulator.kernels import gemm_fp8 as G
rows = json.loads(sys.stdin.read())
hw = load_hardware("H100-SXM")
df = pd.DataFrame([{"family": "gemm", "kernel": "fp8_block_cublaslt", "dist": "", "rows": m, "n": n, "k": k}
                   for m, k, n in rows])
p = F.predict_gemm_us(F.gemm_frame(df), hw, hw.efficiency)
print(json.dumps({"us": [float(x) for x in p], "split": [float(G.cublaslt_block_split(m, k, n)) for m, k, n in rows]}))
"""


def main():
    out, grid_csv, t_main, t_g4 = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4])
    rows = grid()
    bad = [r for r in rows if r[1] % 4 or (r[2] // 128) % 4]
    clash = [r for r in rows if r[1:4] in committed_shapes()]
    if bad or clash:
        raise SystemExit(f"not runnable {bad} / already committed {clash}")
    shapes = [r[1:4] for r in rows]
    mp, g4, nw = run_price(PRICE, t_main, shapes), run_price(PRICE, t_g4, shapes), run_price(PRICE, ROOT, shapes)
    p = pd.DataFrame({"kernel": "cublaslt", "rows": [r[1] for r in rows], "k": [r[2] for r in rows],
                      "n": [r[3] for r in rows], "pred_main_us": mp["us"], "pred_g4_us": g4["us"],
                      "pred_new_us": nw["us"], "split_g4": g4["split"], "split_new": nw["split"],
                      "regime": [regime(m, k, n) for _, m, k, n, _ in rows], "layer": [r[4] for r in rows]})
    head, dirty = code_state()
    print(f"main c460edb, g4 ebfa529, new: pricing code at {head}{' + uncommitted' if dirty else ''}; "
          f"{len(p)} rows")
    p.to_csv(out, index=False, float_format="%.4f")
    p[["kernel", "rows", "k", "n"]].to_csv(grid_csv, index=False)
    print(p.to_string())


if __name__ == "__main__":
    main()
