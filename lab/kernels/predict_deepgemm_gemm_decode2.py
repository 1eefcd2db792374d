"""The second DeepGEMM block-scaled fp8 GEMM grid, decode-weighted (DeepGEMM's fp8_gemm_nt only): write the grid with
two committed predictions BEFORE it is measured (lab/kernels/measure_deepgemm_gemm.py measures it).

    python lab/kernels/predict_deepgemm_gemm_decode2.py OUT.csv MAIN_TREE

MAIN_TREE: an export of main's tree at the commit named in the output (git archive 56e805c | tar -x -C MAIN_TREE), so
main's model prices the grid with main's code and fitted terms. Shapes: (K, N) of DeepSeek-V3 / Qwen3 linear layers
(GRID_KN), three decode M each (DECODE_M, walked from a per-pair offset) and two prefill M for five of them (controls);
none in any committed CSV (production_kernels/*.csv, lab/kernels/*.csv: checked). Columns:
    pred_main_us   main's model (56e805c: kind gemm_fp8_block, every K step one tile-blind iteration of the fitted
                   iter_us, the layout heuristic's float re-implementation)
    pred_new_us    this branch: DeepGEMM's layout heuristic as sm90.hpp computes it (integer cycle counts, both cluster
                   orientations) and a K step = fitted latency + the tile's WGMMA time at the fp8 peak
                   (simulator/kernels/gemm_fp8.py TILE_STEP), terms refitted on the same 6 DeepGEMM fit rows only
Both in-graph (one graph launch per kernel kept: what the CUDA-graph timer measures).
"""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from gemm_grid_pricing import code_state, committed_grids, run_price  # noqa: E402

#: (K, N, layer): [M, K] x [N, K]^T weight GEMMs with K, N multiples of 128 (block scales). DeepSeek-V3 (config.json of
#: deepseek-ai/DeepSeek-V3: hidden 7168, q_lora_rank 1536, 128 heads, qk_nope 128 + rope 64, v 128, moe_intermediate
#: 2048, one shared expert, dense intermediate 18432); Qwen3-32B (hidden 5120, 64 / 8 heads of 128, intermediate
#: 25600); Qwen3-235B-A22B (hidden 4096, 64 / 4 heads of 128); Qwen3-30B-A3B (hidden 2048, 32 / 4 heads of 128);
#: Qwen3-8B (hidden 4096, 32 / 8 heads of 128, intermediate 12288)
GRID_KN = [
    (7168, 512, "DeepSeek-V3 shared expert gate_up TP8"),
    (7168, 1024, "DeepSeek-V3 shared expert gate_up TP4"),
    (1536, 1536, "DeepSeek-V3 q_b_proj TP16"),
    (4096, 1280, "Qwen3-235B-A22B qkv TP8"),
    (2048, 1280, "Qwen3-30B-A3B qkv TP4"),
    (4096, 1536, "Qwen3-8B qkv TP4"),
    (7168, 2304, "DeepSeek-V3 dense gate_up TP16"),
    (1536, 3072, "DeepSeek-V3 q_b_proj TP8"),
    (5120, 3200, "Qwen3-32B gate_up TP16"),
    (4096, 2304, "Qwen3-235B-A22B qkv TP4"),
    (2048, 7168, "DeepSeek-V3 o_proj TP8"),
    (9216, 7168, "DeepSeek-V3 dense down TP2"),
    (4096, 5120, "Qwen3-32B o_proj TP2"),
    (1536, 6144, "DeepSeek-V3 q_b_proj TP4"),
    (3200, 5120, "Qwen3-32B down TP8"),
    (12288, 4096, "Qwen3-8B down TP1"),
]
DECODE_M = (1, 2, 4, 8, 12, 16, 24, 32, 48, 64)
#: prefill controls: (K, N) index into GRID_KN -> M
PREFILL = {0: 1024, 3: 2048, 6: 512, 11: 1024, 13: 2048}
MAIN_COMMIT = "56e805c"


def grid() -> list[tuple[int, int, int]]:
    """(M, K, N): per (K, N) three decode M (DECODE_M from offset 3 j, stride 3) + the prefill controls, none already
    committed."""
    seen = committed_shapes()
    out = []
    for j, (k, n, _) in enumerate(GRID_KN):
        walk = [DECODE_M[(3 * j + 3 * t + (t > 2)) % len(DECODE_M)] for t in range(len(DECODE_M))]
        ms = [m for m in dict.fromkeys(walk) if (m, k, n) not in seen][:3]
        if j in PREFILL and (PREFILL[j], k, n) not in seen:
            ms.append(PREFILL[j])
        out += [(m, k, n) for m in ms]
    return out


def regime(m, n) -> str:
    if m > 64:
        return "prefill M>=512 (control)"
    return "decode M<=64, N<=1536" if n <= 1536 else "decode M<=64, N>=2048"


OWN_PREFIX = "deepgemm_gemm_decode2"


def committed_shapes() -> set[tuple[int, int, int]]:
    """(M, K, N) of every row of the committed CSVs with rows / k / n columns this grid was drawn against
    (gemm_grid_pricing.committed_grids: the ones committed before it, lab/kernels/data_order.txt)."""
    seen = set()
    for d in committed_grids(OWN_PREFIX):
        seen |= set(zip(d["rows"].astype(int), d["k"].astype(int), d["n"].astype(int)))
    return seen


PRICE = """
import json, sys
import numpy as np, pandas as pd
sys.path.insert(0, sys.argv[1])
from hwmodels.spec import load_hardware
from simulator.calibration import fit_production_topk_gemm as F
from simulator.kernels import gemm_fp8 as G
rows = json.loads(sys.stdin.read())
hw = load_hardware("H100-SXM")
df = pd.DataFrame([{"family": "gemm", "kernel": "fp8_block", "dist": "", "rows": m, "n": n, "k": k} for m, k, n in rows])
p = F.predict_gemm_us(F.gemm_frame(df), hw, hw.efficiency)
lay = ["x".join(str(v) for v in G.block_layout(float(m), n, k, hw.units)) for m, k, n in rows]
print(json.dumps({"us": [float(x) for x in p], "layout": lay}))
"""


def main():
    out, main_tree = Path(sys.argv[1]), Path(sys.argv[2])
    rows = grid()
    clash = set(rows) & committed_shapes()
    if clash:
        raise SystemExit(f"shapes already in a committed CSV: {sorted(clash)}")
    mp, nw = run_price(PRICE, main_tree, rows), run_price(PRICE, ROOT, rows)
    layer = {(k, n): name for k, n, name in GRID_KN}
    p = pd.DataFrame({"kernel": "deepgemm", "rows": [m for m, _, _ in rows], "k": [k for _, k, _ in rows],
                      "n": [n for _, _, n in rows], "pred_main_us": mp["us"], "pred_new_us": nw["us"],
                      "layout_main": mp["layout"], "layout_new": nw["layout"],
                      "regime": [regime(m, n) for m, _, n in rows], "layer": [layer[(k, n)] for _, k, n in rows]})
    head, dirty = code_state()
    print(f"main {MAIN_COMMIT}; new: pricing code at {head}{' + uncommitted changes' if dirty else ''}; "
          f"{len(p)} rows")
    p.to_csv(out, index=False, float_format="%.4f")
    print(p.groupby("regime")[["pred_main_us", "pred_new_us"]].median())
    print(p.to_string())


if __name__ == "__main__":
    main()
