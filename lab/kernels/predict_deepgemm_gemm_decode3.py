"""The third DeepGEMM block-scaled fp8 GEMM grid (decode M 1-128 + prefill controls; DeepGEMM's fp8_gemm_nt only):
write the grid with the committed predictions BEFORE it is measured (lab/kernels/measure_deepgemm_gemm.py measures it).

    python lab/kernels/predict_deepgemm_gemm_decode3.py OUT.csv MAIN_TREE

MAIN_TREE: an export of main's tree at MAIN_COMMIT (git archive 6648a5d | tar -x -C MAIN_TREE), so main's model prices
the grid with main's code and fitted terms. Shapes: (K, N) of DeepSeek-V3 / Kimi-K2 / Qwen3 linear layers (GRID_KN)
not in any committed CSV, three decode M each (DECODE_M, walked from a per-pair offset) and five prefill controls
(PREFILL); no (M, K, N) in any committed CSV (checked). Columns:
    pred_main_us    main's model (6648a5d: the tile-aware K step, terms fitted on the 6 DeepGEMM fit rows)
    pred_new_us     this branch, the model it ships: the same K step, terms refitted on the 6 fit rows + the 53
                    decode-2 rows (named fit rows, LOOKED-AT before), the per-wave CTA time freed
    pred_promo_us   a second candidate, not shipped unless it wins: pred_new's refit + the promotion FMAs on each K
                    step (simulator/kernels/gemm_fp8.py PROMOTION), its terms refitted on the same 59 rows
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

#: (K, N, layer): [M, K] x [N, K]^T weight GEMMs, K and N multiples of 128, no (K, N) in any committed CSV (checked).
#: DeepSeek-V3 / Kimi-K2 (config.json of deepseek-ai/DeepSeek-V3 and moonshotai/Kimi-K2-Instruct: hidden 7168,
#: q_lora_rank 1536, kv_lora_rank 512, qk_nope 128 + rope 64, v 128; 128 heads (V3) / 64 heads (K2);
#: moe_intermediate 2048, dense intermediate 18432); Qwen3-235B-A22B (hidden 4096, moe_intermediate 1536);
#: Qwen3-30B-A3B (hidden 2048, moe_intermediate 768); Qwen3-14B (hidden 5120, 40 / 8 heads of 128, intermediate 17408);
#: Qwen3-4B (hidden 2560, 32 / 8 heads of 128, intermediate 9728)
GRID_KN = [
    (4096, 384, "Qwen3-235B-A22B expert gate_up TP8"),
    (2048, 1536, "Qwen3-30B-A3B expert gate_up TP1"),
    (2432, 1280, "Qwen3-4B down TP4, half N (like)"),
    (512, 2048, "Kimi-K2 kv_b_proj TP8"),
    (384, 4096, "Qwen3-235B-A22B expert down TP4"),
    (256, 7168, "Kimi-K2 expert down TP8"),
    (1024, 7168, "DeepSeek-V3 o_proj TP16"),
    (1536, 4096, "Qwen3-235B-A22B expert down TP1"),
    (1536, 12288, "Kimi-K2 q_b_proj TP1"),
    (2560, 6144, "Qwen3-4B qkv TP1"),
    (2176, 5120, "Qwen3-14B down TP8"),
    (4096, 2560, "Qwen3-4B o_proj TP1"),
    (4608, 7168, "DeepSeek-V3 dense down TP4"),
    (5120, 4352, "Qwen3-14B gate_up TP8"),
    (7168, 9216, "DeepSeek-V3 dense gate_up TP4"),
    (5120, 8704, "Qwen3-14B gate_up TP4"),
]
DECODE_M = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128)
#: prefill controls: (K, N) index into GRID_KN -> M
PREFILL = {1: 4096, 7: 256, 11: 1024, 14: 512, 15: 2048}
MAIN_COMMIT = "6648a5d"
OWN_PREFIX = "deepgemm_gemm_decode3"
#: grids drawn after this one (each checked its own shapes against the CSVs committed before it): their files are not
#: what this grid was drawn against (grids 6 and 7 and the fill7 scans reuse some of its (K, N) at other M)
#: (and FlashInfer's top-k grid 10, whose rows / k / n columns hold k 2048 at n = a decode-3 N: a top-k row, not a GEMM)
LATER_PREFIXES = ("deepgemm_gemm_grid6", "deepgemm_gemm_fill7", "cublaslt_block_split7", "deepgemm_gemm_grid7",
                  "gemm_grid8", "topk_flashinfer_grid10", "gemm_grid14")


def grid() -> list[tuple[int, int, int]]:
    """(M, K, N): per (K, N) three decode M (DECODE_M from offset 5 j, stride 5) + the prefill controls, none already
    committed."""
    seen = committed_shapes()
    out = []
    for j, (k, n, _) in enumerate(GRID_KN):
        walk = [DECODE_M[(5 * j + 5 * t) % len(DECODE_M)] for t in range(len(DECODE_M))]
        ms = sorted([m for m in dict.fromkeys(walk) if (m, k, n) not in seen][:3])
        if j in PREFILL and (PREFILL[j], k, n) not in seen:
            ms.append(PREFILL[j])
        out += [(m, k, n) for m in ms]
    return out


def regime(m, n) -> str:
    if m > 128:
        return "prefill M>=256 (control)"
    return "decode M<=128, N<=1536" if n <= 1536 else "decode M<=128, N>=2048"


def committed_shapes() -> set[tuple[int, int, int]]:
    """(M, K, N) of every row of any committed CSV with rows / k / n columns (production_kernels, lab/kernels grids),
    this grid's own files aside."""
    seen = set()
    for d in committed_grids((OWN_PREFIX,) + LATER_PREFIXES):
        seen |= set(zip(d["rows"].astype(int), d["k"].astype(int), d["n"].astype(int)))
    return seen


def committed_kn() -> set[tuple[int, int]]:
    return {(k, n) for _, k, n in committed_shapes()}


PRICE = """
import json, sys
import numpy as np, pandas as pd
sys.path.insert(0, sys.argv[1])
from hwmodels.spec import load_hardware
from simulator.calibration import fit_production_topk_gemm as F
from simulator.kernels import gemm_fp8 as G
rows = json.loads(sys.stdin.read())
hw = load_hardware("H100-SXM")
eff = hw.efficiency
if len(sys.argv) > 2 and sys.argv[2] == "promo":   # the promotion candidate, refitted on the same fit rows
    G.PROMOTION = True
    bk = F.fit_block(F.deepgemm_fit_frame(F.DATA_DIR / F.DEEPGEMM_FIT_CSV), hw)
    eff = F.block_eff_with(hw, [bk[t] for t in F.BLOCK_TERMS])
    print(json.dumps(bk), file=sys.stderr)
df = pd.DataFrame([{"family": "gemm", "kernel": "fp8_block", "dist": "", "rows": m, "n": n, "k": k} for m, k, n in rows])
p = F.predict_gemm_us(F.gemm_frame(df), hw, eff)
lay = ["x".join(str(v) for v in G.block_layout(float(m), n, k, hw.units)) for m, k, n in rows]
print(json.dumps({"us": [float(x) for x in p], "layout": lay}))
"""


def price(tree: Path, rows, variant: str = "") -> dict:
    return run_price(PRICE, tree, rows, (variant,) if variant else (), echo_stderr=True)


def main():
    out, main_tree = Path(sys.argv[1]), Path(sys.argv[2])
    old_kn = committed_kn() & {(k, n) for k, n, _ in GRID_KN}
    if old_kn:
        raise SystemExit(f"(K, N) already in a committed CSV: {sorted(old_kn)}")
    rows = grid()
    clash = set(rows) & committed_shapes()
    if clash:
        raise SystemExit(f"shapes already in a committed CSV: {sorted(clash)}")
    mp, nw, pr = price(main_tree, rows), price(ROOT, rows), price(ROOT, rows, "promo")
    layer = {(k, n): name for k, n, name in GRID_KN}
    p = pd.DataFrame({"kernel": "deepgemm", "rows": [m for m, _, _ in rows], "k": [k for _, k, _ in rows],
                      "n": [n for _, _, n in rows], "pred_main_us": mp["us"], "pred_new_us": nw["us"],
                      "pred_promo_us": pr["us"], "layout_main": mp["layout"], "layout_new": nw["layout"],
                      "regime": [regime(m, n) for m, _, n in rows], "layer": [layer[(k, n)] for _, k, n in rows]})
    head, dirty = code_state()
    print(f"main {MAIN_COMMIT}; new: pricing code at {head}{' + uncommitted changes' if dirty else ''}; "
          f"{len(p)} rows")
    p.to_csv(out, index=False, float_format="%.4f")
    print(p.groupby("regime")[["pred_main_us", "pred_new_us", "pred_promo_us"]].median())
    print(p.to_string())


if __name__ == "__main__":
    main()
