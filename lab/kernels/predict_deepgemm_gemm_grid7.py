"""The seventh block-scaled fp8 GEMM grid: DeepGEMM fp8_gemm_nt (deepseek-ai/DeepGEMM 54e2261, SM90 1D2D kernel) where one
wave of tiles walks a K loop shorter than the pipeline's stages (decode at K 256-512: the pipeline fill the per-wave CTA
time holds is partly not exposed, simulator.kernels.gemm_fp8.UNFILLED_STAGES), several-wave tile walks at K 640-1024,
with controls: several-wave tiny K, long-K prefill, long-K decode and one-wave K 640-1024 decode. Writes the grid with
the committed predictions BEFORE it is measured (lab/kernels/measure_deepgemm_gemm.py measures it; no cuBLASLt row).

    python lab/kernels/predict_deepgemm_gemm_grid7.py OUT.csv MAIN_TREE [GRID.csv]

MAIN_TREE: an export of main's tree at MAIN_COMMIT (git archive 08cf44f | tar -x -C MAIN_TREE): main's model prices the
grid with main's code and fitted terms; this checkout prices the new model (the unfilled-stage rule, the kind's terms
refitted on its 91 named fit rows: the 59 before + the fill7 scans). No (M, K, N) of any committed CSV (checked).
Columns: pred_main_us, pred_new_us (in-graph: one graph launch kept, what the CUDA-graph timer measures), layout
(block_m x block_n x cluster, block_layout), waves (ceil(tiles / 132)), unfilled (stages the K loop leaves unfilled),
regime, layer.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from gemm_grid_pricing import code_state, committed_grids, run_price  # noqa: E402

#: (K, N, layer) -> M. DeepSeek-V3 (hidden 7168, q_lora 1536, kv_lora 512, wkv_b 128 heads x 256 per kv_lora row),
#: Qwen3 / Llama-style layers (config.json); one-wave decode rows have <= 132 tiles of DeepGEMM's own layout
DEEPGEMM = {
    # tiny K <= 512, one wave (the rule's target)
    (512, 4096, "DeepSeek-V3 wkv_b TP8 (kv_lora 512 -> 16 x 256)"): (1, 40),
    (512, 8192, "DeepSeek-V3 wkv_b TP4"): (8,),
    (512, 6144, "kv_lora 512 -> 6144"): (16,),
    (512, 3072, "kv_lora 512 -> 3072"): (28,),
    (512, 1536, "kv_lora 512 -> 1536"): (4,),
    (384, 8192, "tiny K 384 -> 8192"): (6,),
    (384, 3072, "tiny K 384 -> 3072"): (20,),
    (384, 6144, "tiny K 384 -> 6144"): (48,),
    (384, 1024, "tiny K 384 -> 1024"): (2,),
    (256, 2048, "tiny K 256 -> 2048"): (12,),
    (256, 6144, "tiny K 256 -> 6144"): (24,),
    (256, 3072, "tiny K 256 -> 3072"): (64,),
    (256, 8192, "tiny K 256 -> 8192"): (2,),
    (512, 12288, "kv_lora 512 -> 12288"): (1,),
    # K 640-1024, several waves
    (640, 4096, "K 640 -> 4096"): (2048,),
    (768, 5120, "K 768 -> 5120"): (1024,),
    (768, 8192, "K 768 -> 8192"): (4096,),
    (896, 2048, "K 896 -> 2048"): (6144,),
    (1024, 3072, "K 1024 -> 3072"): (3072,),
    (1024, 5120, "K 1024 -> 5120"): (2048,),
    (640, 12288, "K 640 -> 12288"): (1024,),
    (1024, 1536, "K 1024 -> 1536"): (8192,),
    (896, 6144, "K 896 -> 6144"): (1536,),
    (768, 16384, "K 768 -> 16384"): (512,),
    # tiny K <= 512, several waves (controls)
    (512, 4096, "DeepSeek-V3 wkv_b TP8 prefill"): (3072,),
    (256, 6144, "tiny K 256 -> 6144 prefill"): (2048,),
    (384, 16384, "tiny K 384 -> 16384 prefill"): (1024,),
    (512, 32768, "DeepSeek-V3 wkv_b TP1 (kv_lora 512 -> 128 x 256)"): (512,),
    # long K prefill (controls)
    (7168, 2048, "DeepSeek-V3 hidden -> 2048"): (2048,),
    (4096, 6144, "K 4096 -> 6144"): (1536,),
    (2048, 4096, "K 2048 -> 4096"): (4096,),
    # long-K decode, one wave (controls)
    (7168, 3072, "DeepSeek-V3 hidden -> 3072"): (8,),
    (4096, 4096, "K 4096 -> 4096"): (32,),
    (2560, 2048, "K 2560 -> 2048"): (4,),
    (1536, 2560, "DeepSeek-V3 q_lora 1536 -> 2560"): (16,),
    (5120, 6144, "Qwen3-32B hidden -> 6144"): (12,),
    # K 640-1024, one wave (controls)
    (768, 4096, "K 768 -> 4096"): (16,),
    (1024, 2048, "K 1024 -> 2048"): (4,),
    (640, 6144, "K 640 -> 6144"): (32,),
    (896, 3072, "K 896 -> 3072"): (8,),
}
MAIN_COMMIT = "08cf44f"
OWN_PREFIX = "deepgemm_gemm_grid7"
SMS = 132


def grid() -> list[tuple[str, int, int, int, str]]:
    """(kernel, M, K, N, layer) of the grid."""
    return [("deepgemm", m, k, n, name.strip()) for (k, n, name), ms in DEEPGEMM.items() for m in ms]


def regime(m: int, k: int, waves: int) -> str:
    """The grid's regimes: the rule's target (one wave, K <= 512), the several-wave K 640-1024 rows, the controls."""
    if waves > 1 and k <= 512:
        return "tiny K<=512, several waves (control)"
    if waves > 1 and k <= 1024:
        return "K 640-1024, several waves"
    if waves > 1:
        return "K>=1536, several waves (control)"
    if k <= 512:
        return "tiny K<=512, one wave"
    return "K 640-1024, one wave (control)" if k <= 1024 else "K>=1536, one wave (control)"


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
st = [int(G._stages(float(m), n, k, a, b)) for (c, m, k, n), (a, b, _) in zip(rows, lay)]
unf = [max(s - int(-(-k // 128)), 0) for (c, m, k, n), s in zip(rows, st)]
print(json.dumps({"us": [float(x) for x in p], "layout": ["x".join(str(v) for v in x) for x in lay], "waves": waves,
                  "unfilled": unf}))
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
                      "layout": nw["layout"], "waves": nw["waves"], "unfilled": nw["unfilled"],
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
