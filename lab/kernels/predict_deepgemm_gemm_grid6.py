"""The sixth block-scaled fp8 GEMM grid: DeepGEMM fp8_gemm_nt (deepseek-ai/DeepGEMM 54e2261, SM90 1D2D kernel) where the
persistent kernel walks several waves of tiles over a short K loop (K 256-1024: DeepSeek-V3's kv_lora 512 -> wkv_b,
Qwen3-30B-A3B's expert down K 768, ...), where a later tile's turnover overlaps the byte stream (hwmodels/roofline.py
CTA_FIXED_HIDDEN, kind gemm_fp8_block), with controls: long-K prefill, one-wave tiny-K decode (the rule does not touch
one wave) and long-K decode. Writes the grid with the committed predictions BEFORE it is measured
(lab/kernels/measure_deepgemm_gemm.py measures it; no cuBLASLt row).

    python lab/kernels/predict_deepgemm_gemm_grid6.py OUT.csv MAIN_TREE [GRID.csv]

MAIN_TREE: an export of main's tree at MAIN_COMMIT (git archive 06e70f8 | tar -x -C MAIN_TREE): main's model prices the
grid with main's code and fitted terms; this checkout prices the new model (the per-wave turnover hidden but the last
wave's, the kind's terms refitted on its 59 named fit rows). No (M, K, N) of any committed CSV (checked). Columns:
pred_main_us, pred_new_us (in-graph: one graph launch kept, what the CUDA-graph timer measures), layout (block_m x
block_n x cluster, block_layout), waves (ceil(tiles / 132)), regime, layer.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from gemm_grid_pricing import code_state, committed_grids, run_price  # noqa: E402

#: (K, N, layer) -> M. DeepSeek-V3 (hidden 7168, q_lora 1536, kv_lora 512, 128 heads x (128 nope + 128 v) = 32768 for
#: wkv_b, moe_intermediate 2048), Qwen3-30B-A3B (hidden 2048, moe_intermediate 768), Qwen3-32B (hidden 5120): config.json
DEEPGEMM = {
    # tiny K <= 512, several waves
    (512, 4096, "DeepSeek-V3 wkv_b TP8 (kv_lora 512 -> 16 x 256)"): (12, 1024, 4096, 8192),
    (512, 8192, "DeepSeek-V3 wkv_b TP4 (kv_lora 512 -> 32 x 256)"): (24, 1536, 3072),
    (512, 16384, "DeepSeek-V3 wkv_b TP2 (kv_lora 512 -> 64 x 256)"): (4, 512, 2048),
    (512, 24576, "kv_lora 512 -> 24576"): (20,),
    (256, 8192, "tiny K 256 -> 8192"): (1024, 4096),
    (256, 16384, "tiny K 256 -> 16384"): (512,),
    (384, 6144, "tiny K 384 -> 6144"): (2048,),
    (384, 12288, "tiny K 384 -> 12288"): (1024,),
    (384, 32768, "tiny K 384 -> 32768"): (8,),
    (512, 2048, "kv_lora 512 -> 2048"): (8192,),
    (256, 4096, "tiny K 256 -> 4096 "): (6144,),
    (384, 24576, "tiny K 384 -> 24576"): (256,),
    (512, 12288, "kv_lora 512 -> 12288"): (768,),
    # small K 640-1024, several waves
    (768, 2048, "Qwen3-30B-A3B expert down (moe_intermediate 768)"): (4096, 8192),
    (768, 4096, "K 768 -> 4096"): (2048,),
    (1024, 7168, "K 1024 -> DeepSeek-V3 hidden"): (1024, 4096),
    (640, 5120, "K 640 -> Qwen3-32B hidden"): (2048,),
    (896, 4096, "K 896 -> 4096"): (3072,),
    (1024, 14336, "K 1024 -> 14336"): (512,),
    (1024, 2048, "K 1024 -> 2048"): (8192,),
    (640, 8192, "K 640 -> 8192"): (1024,),
    # long K prefill (controls)
    (1536, 24576, "DeepSeek-V3 q_b TP1 (q_lora 1536 -> 128 x 192)"): (1536,),
    (1536, 6144, "DeepSeek-V3 q_b TP4"): (4096,),
    (2048, 7168, "DeepSeek-V3 expert down"): (2560,),
    (4096, 4096, "K 4096 -> 4096"): (3072,),
    (7168, 1536, "DeepSeek-V3 hidden -> q_lora 1536"): (4096,),
    (5120, 10240, "Qwen3-32B hidden -> 10240"): (1024,),
    (1536, 2048, "K 1536 -> 2048"): (8192,),
    # one-wave tiny-K decode (controls: one wave, the rule does not apply)
    (256, 4096, "tiny K 256 -> 4096"): (2, 40),
    (384, 2048, "tiny K 384 -> 2048"): (32,),
    (512, 1024, "kv_lora 512 -> 1024"): (16,),
    (256, 12288, "tiny K 256 -> 12288"): (4,),
    # long-K decode (controls)
    (1536, 6144, "DeepSeek-V3 q_b TP4 "): (2, 32),
    (4096, 2560, "K 4096 -> 2560"): (16,),
    (2048, 5120, "K 2048 -> 5120"): (40,),
    (5120, 1024, "Qwen3-32B hidden -> 1024"): (1,),
    (3072, 7168, "K 3072 -> DeepSeek-V3 hidden"): (24,),
}
MAIN_COMMIT = "06e70f8"
OWN_PREFIX = "deepgemm_gemm_grid6"
SMS = 132


def grid() -> list[tuple[str, int, int, int, str]]:
    """(kernel, M, K, N, layer) of the grid."""
    return [("deepgemm", m, k, n, name.strip()) for (k, n, name), ms in DEEPGEMM.items() for m in ms]


def regime(m: int, k: int, waves: int) -> str:
    """The grid's regimes: the rule's target (several waves, K <= 1024) and the controls."""
    if waves > 1 and k <= 512:
        return "tiny K<=512, several waves"
    if waves > 1 and k <= 1024:
        return "K 640-1024, several waves"
    if waves > 1:
        return "K>=1536, several waves (control)"
    return "tiny K<=512, one wave (control)" if k <= 512 else "K>=1536, one wave (control)"


def committed_shapes() -> set[tuple[str, int, int, int]]:
    """(kernel, M, K, N) of every row of any committed CSV with rows / k / n columns, this grid's own files aside."""
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
df = pd.DataFrame([{"family": "gemm", "kernel": "fp8_block", "dist": "", "rows": m, "n": n, "k": k} for c, m, k, n in rows])
p = F.predict_gemm_us(F.gemm_frame(df), hw, hw.efficiency)
lay = [G.block_layout(float(m), n, k, hw.units) for c, m, k, n in rows]
waves = [int(-(-(-(-m // a) * -(-n // b)) // hw.units)) for (c, m, k, n), (a, b, _) in zip(rows, lay)]
print(json.dumps({"us": [float(x) for x in p], "layout": ["x".join(str(v) for v in x) for x in lay], "waves": waves}))
"""


def main():
    out, main_tree = Path(sys.argv[1]), Path(sys.argv[2])
    rows = grid()
    seen = committed_shapes()
    clash = [r for r in rows if any((a, r[1], r[2], r[3]) in seen for a in ("deepgemm", "fp8_block"))]
    dup = len(set(r[1:4] for r in rows)) != len(rows)
    if clash or dup:
        raise SystemExit(f"shapes already in a committed CSV: {clash} (duplicates in the grid: {dup})")
    shapes = [r[:4] for r in rows]
    mp, nw = run_price(PRICE, main_tree, shapes), run_price(PRICE, ROOT, shapes)
    p = pd.DataFrame({"kernel": "deepgemm", "rows": [r[1] for r in rows], "k": [r[2] for r in rows],
                      "n": [r[3] for r in rows], "pred_main_us": mp["us"], "pred_new_us": nw["us"],
                      "layout": nw["layout"], "waves": nw["waves"],
                      "regime": [regime(m, k, w) for (_, m, k, _, _), w in zip(rows, nw["waves"])],
                      "layer": [r[4] for r in rows]})
    head, dirty = code_state()
    print(f"main {MAIN_COMMIT}; new: pricing code at {head}{' + uncommitted changes' if dirty else ''}; "
          f"{len(p)} rows")
    p.to_csv(out, index=False, float_format="%.4f")
    if len(sys.argv) > 3:
        p[["kernel", "rows", "k", "n"]].to_csv(sys.argv[3], index=False)
    p["ratio"] = p["pred_new_us"] / p["pred_main_us"]
    print(p.groupby("regime")[["pred_main_us", "pred_new_us", "ratio"]].median())
    print(p.drop(columns="layer").to_string())


if __name__ == "__main__":
    main()
