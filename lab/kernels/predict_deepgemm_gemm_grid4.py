"""The fourth block-scaled fp8 GEMM grid (cuBLASLt's block path through torch._scaled_mm at M 1-4096, DeepGEMM prefill
M 256-4096 on 1- and 2-CTA clusters, decode controls): write the grid with the committed predictions BEFORE it is
measured (lab/kernels/measure_deepgemm_gemm.py measures it).

    python lab/kernels/predict_deepgemm_gemm_grid4.py OUT.csv MAIN_TREE [GRID.csv]

MAIN_TREE: an export of main's tree at MAIN_COMMIT (git archive c460edb | tar -x -C MAIN_TREE), so main's model prices
the grid with main's code and fitted terms; GRID.csv (optional): the measuring script's grid (kernel, rows, k, n).
Shapes: (K, N) of DeepSeek-V3 / Qwen3 linear layers (CUBLASLT_KN, DEEPGEMM), none of them an (M, K, N) of any
committed CSV for its kernel (checked). Columns:
    pred_main_us    main's model (c460edb: DeepGEMM's tile-aware K step fitted on its 59 named fit rows; cuBLASLt's
                    kind fitted on 4 rows)
    pred_new_us     this branch: DeepGEMM's runtime-predicated scale_b promotion (gemm_fp8.RUNTIME_SFB) fitted with the
                    kind's terms on the same 59 rows; cuBLASLt's kind refitted on its named fit rows (60)
    layout          DeepGEMM rows: block_m x block_n x cluster (block_layout); runtime_sfb: 1 where that tile's
                    promotion is run-time predicated (gemm_fp8.runtime_sfb)
    split           cuBLASLt rows: the split-K count the model prices (cublaslt_block_split)
Both in-graph (one graph launch per kernel kept: what the CUDA-graph timer measures). K / 128 not a multiple of 4 on
the cuBLASLt rows (K 768 / 2304 / 2432 / 3200): the measuring script passes scales whose leading dimension is padded to
a multiple of 4 (16 bytes) there, the plain layout having returned wrong values at K 2304 / 6400 before.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from gemm_grid_pricing import code_state, committed_grids, run_price  # noqa: E402

#: cuBLASLt rows: (K, N, layer) -> M. DeepSeek-V3 (hidden 7168, q_lora 1536, kv_lora 512, 128 heads of 128 + 64 rope,
#: moe_intermediate 2048, dense 18432), Qwen3-32B (hidden 5120, intermediate 25600, 64 / 8 heads of 128), Qwen3-4B
#: (hidden 2560, intermediate 9728), Qwen3-30B-A3B (hidden 2048, moe_intermediate 768), Qwen3-235B-A22B (hidden 4096,
#: 64 / 4 heads): config.json of each model
CUBLASLT_KN = {
    (7168, 4096, "DeepSeek-V3 expert gate_up x2 / shared gate_up"): (2, 24, 64, 1024, 4096),
    (2048, 7168, "DeepSeek-V3 o_proj TP8 / expert down"): (1, 12, 48, 2048),
    (2304, 7168, "DeepSeek-V3 dense down TP8 (K / 128 = 18)"): (4, 32, 768),
    (3200, 5120, "Qwen3-32B down TP8 (K / 128 = 25)"): (8, 40, 3072),
    (2432, 2560, "Qwen3-4B down TP4 (K / 128 = 19)"): (2, 16, 1536),
    (768, 2048, "Qwen3-30B-A3B expert down (K / 128 = 6)"): (4, 56, 4096),
    (8192, 4096, "Qwen3-235B-A22B o_proj TP1"): (6, 28, 512),
    (1536, 3072, "DeepSeek-V3 q_b_proj TP8"): (3, 20, 2560),
    (4096, 9216, "Qwen3-235B-A22B qkv TP1"): (10, 36, 1280),
}
#: DeepGEMM rows: (K, N, layer) -> M. Prefill M 256-4096 where block_layout picks a runtime-predicated tile (block_n 112
#: / 144 / 80) on 1- and 2-CTA clusters, tiles of block_n 96 / 128 / 192 as controls, tiny K (256-512), and decode
#: controls at M 1-48
DEEPGEMM = {
    (7168, 4608, "DeepSeek-V3 dense gate_up TP8 (2 x 18432 / 8)"): (2, 12, 512, 1024),
    (4096, 7168, "hidden 4096 -> 7168 (like a Qwen3 / DeepSeek-V3 projection)"): (4, 48, 2048),
    (7168, 2304, "DeepSeek-V3 hidden -> 2304 (like q_a 1536 + kv_a 576, padded)"): (256, 2048),
    (1536, 9216, "DeepSeek-V3 q_lora 1536 -> 48 heads x 192"): (512,),
    (6144, 7168, "K 6144 -> DeepSeek-V3 hidden"): (1024,),
    (4096, 3584, "Qwen3-235B-A22B hidden -> 3584"): (4096,),
    (7168, 1792, "DeepSeek-V3 hidden -> 1792"): (2048,),
    (7168, 3584, "DeepSeek-V3 hidden -> 3584"): (512,),
    (2560, 7168, "Qwen3-4B hidden 2560 -> 7168"): (256,),
    (5120, 3072, "Qwen3-32B hidden 5120 -> 3072"): (1, 1024, 4096),
    (2048, 4096, "Qwen3-235B-A22B o_proj TP4 (64 x 128 / 4 -> 4096)"): (32, 1024),
    (7168, 6144, "DeepSeek-V3 hidden -> 6144"): (2048,),
    (4096, 11264, "Qwen3-235B-A22B hidden -> 11264"): (512,),
    (5120, 5632, "Qwen3-32B hidden -> 5632"): (256,),
    (7168, 2816, "DeepSeek-V3 hidden -> 2816"): (2048,),
    (256, 4096, "tiny K 256 -> 4096"): (2048,),
    (512, 7168, "DeepSeek-V3 kv_lora 512 -> 7168 (tiny K)"): (1024,),
    (384, 9216, "tiny K 384 -> 9216"): (512,),
}
MAIN_COMMIT = "c460edb"
OWN_PREFIX = "deepgemm_gemm_grid4"


def grid() -> list[tuple[str, int, int, int, str]]:
    """(kernel, M, K, N, layer) of the grid."""
    out = [("cublaslt", m, k, n, name) for (k, n, name), ms in CUBLASLT_KN.items() for m in ms]
    out += [("deepgemm", m, k, n, name) for (k, n, name), ms in DEEPGEMM.items() for m in ms]
    return out


def regime(kernel: str, m: int, k: int, rsfb: bool) -> str:
    if kernel == "cublaslt":
        return "cublaslt: decode M<=64" if m <= 64 else ("cublaslt: mid M 96-1024" if m <= 1024 else
                                                          "cublaslt: prefill M>=1280")
    if m <= 64:
        return "deepgemm: decode M<=64 (control)"
    if k <= 512:
        return "deepgemm: prefill tiny K<=512"
    return "deepgemm: prefill, runtime scale_b tile" if rsfb else "deepgemm: prefill, other tiles (control)"


def committed_shapes() -> set[tuple[str, int, int, int]]:
    """(kernel, M, K, N) of every row of any committed CSV with rows / k / n columns (production_kernels, lab/kernels
    grids), this grid's own files aside; the kernel column as written there (deepgemm / cublaslt / fp8_block ...)."""
    seen = set()
    for d in committed_grids(OWN_PREFIX):
        kern = d["kernel"].astype(str) if "kernel" in d.columns else pd.Series("?", index=d.index)
        seen |= set(zip(kern, d["rows"].astype(int), d["k"].astype(int), d["n"].astype(int)))
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
kern = {"deepgemm": "fp8_block", "cublaslt": "fp8_block_cublaslt"}
df = pd.DataFrame([{"family": "gemm", "kernel": kern[c], "dist": "", "rows": m, "n": n, "k": k} for c, m, k, n in rows])
p = F.predict_gemm_us(F.gemm_frame(df), hw, hw.efficiency)
lay = ["x".join(str(v) for v in G.block_layout(float(m), n, k, hw.units)) for c, m, k, n in rows]
split = [float(G.cublaslt_block_split(m, k, n)) for c, m, k, n in rows]
print(json.dumps({"us": [float(x) for x in p], "layout": lay, "split": split}))
"""


def main():
    from simulator.kernels import gemm_fp8 as G

    out, main_tree = Path(sys.argv[1]), Path(sys.argv[2])
    rows = grid()
    seen = committed_shapes()
    alias = {"deepgemm": ("deepgemm",), "cublaslt": ("cublaslt", "fp8_block")}
    clash = [r for r in rows if any((a, r[1], r[2], r[3]) in seen for a in alias[r[0]])]
    if clash:
        raise SystemExit(f"shapes already in a committed CSV: {clash}")
    shapes = [r[:4] for r in rows]
    mp, nw = run_price(PRICE, main_tree, shapes), run_price(PRICE, ROOT, shapes)
    bn = [int(x.split("x")[1]) for x in nw["layout"]]
    rs = [bool(G.runtime_sfb(b)) and c == "deepgemm" for b, (c, *_) in zip(bn, rows)]
    p = pd.DataFrame({"kernel": [r[0] for r in rows], "rows": [r[1] for r in rows], "k": [r[2] for r in rows],
                      "n": [r[3] for r in rows], "pred_main_us": mp["us"], "pred_new_us": nw["us"],
                      "layout": [x if c == "deepgemm" else "" for x, (c, *_) in zip(nw["layout"], rows)],
                      "runtime_sfb": [int(x) for x in rs],
                      "split": [s if c == "cublaslt" else "" for s, (c, *_) in zip(nw["split"], rows)],
                      "regime": [regime(c, m, k, x) for (c, m, k, n, _), x in zip(rows, rs)],
                      "layer": [r[4] for r in rows]})
    head, dirty = code_state()
    print(f"main {MAIN_COMMIT}; new: pricing code at {head}{' + uncommitted changes' if dirty else ''}; "
          f"{len(p)} rows")
    p.to_csv(out, index=False, float_format="%.4f")
    if len(sys.argv) > 3:
        p[["kernel", "rows", "k", "n"]].to_csv(sys.argv[3], index=False)
    print(p.groupby("regime")[["pred_main_us", "pred_new_us"]].median())
    print(p.to_string())


if __name__ == "__main__":
    main()
