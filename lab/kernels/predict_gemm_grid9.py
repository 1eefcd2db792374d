"""The ninth block-scaled fp8 GEMM grid: cuBLASLt (torch._scaled_mm's block path) only, BLIND. Writes the grid and the
committed predictions BEFORE it is measured (lab/kernels/measure_deepgemm_gemm.py measures it, tag grid9; a
cuBLASLt-only grid runs without DeepGEMM's build).

    python lab/kernels/predict_gemm_grid9.py OUT.csv GRID.csv

Shapes: small-M (decode) projections of Llama-3-8B / 70B / 405B, Mistral-Large-2, Mixtral-8x22B, Qwen3-32B,
DeepSeek-V3 / Kimi-K2 at TP 1-8 (M a multiple of 4, K / 128 a multiple of 4: where that path runs and is right), no
(M, K, N) of any committed CSV (checked), aimed at the split counts grid 8 missed (5 / 7 slices at 100-200 K steps,
M > 48 at 20 tiles, T 40-48 tiles at M <= 28) + unsplit and M 68-128 controls. Each row priced by this tree twice:
main (simulator.kernels.gemm_fp8.CUBLASLT_SPLIT_RULE "tiles", the shipped rule) and the candidate ("work": the rule
read off all 83 recorded choices), the kind's fitted terms as committed: columns split_main / split_cand,
pred_main_us / pred_cand_us; regime = the candidate's split (>= 3 slices, 2 slices, unsplit at M <= 64) or M 68-128
control, fixed before the measurement.
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

#: (M, K, N, model projection)
CUBLASLT = [
    (8, 14336, 4096, "Llama-3-8B down"), (12, 14336, 4096, "Llama-3-8B down"), (16, 14336, 4096, "Llama-3-8B down"),
    (20, 14336, 4096, "Llama-3-8B down"), (36, 14336, 4096, "Llama-3-8B down"),
    (8, 16384, 2304, "Llama-3-405B qkv TP8"), (16, 16384, 2304, "Llama-3-405B qkv TP8"),
    (24, 16384, 2304, "Llama-3-405B qkv TP8"), (32, 16384, 2304, "Llama-3-405B qkv TP8"),
    (56, 16384, 2304, "Llama-3-405B qkv TP8"),
    (8, 12288, 1792, "Mistral-Large-2 qkv TP8"), (40, 12288, 1792, "Mistral-Large-2 qkv TP8"),
    (60, 12288, 1792, "Mistral-Large-2 qkv TP8"),
    (12, 8192, 1280, "Llama-3-70B qkv TP8"), (36, 8192, 1280, "Llama-3-70B qkv TP8"),
    (56, 8192, 1280, "Llama-3-70B qkv TP8"),
    (8, 12800, 5120, "Qwen3-32B down TP2"), (16, 12800, 5120, "Qwen3-32B down TP2"),
    (24, 12800, 5120, "Qwen3-32B down TP2"), (32, 12800, 5120, "Qwen3-32B down TP2"),
    (8, 16384, 6144, "Mixtral-8x22B down"), (16, 16384, 6144, "Mixtral-8x22B down"),
    (28, 16384, 6144, "Mixtral-8x22B down"),
    (12, 8192, 6144, "Mixtral-8x22B down TP2"), (24, 8192, 6144, "Mixtral-8x22B down TP2"),
    (8, 25600, 5120, "Qwen3-32B down"), (12, 25600, 5120, "Qwen3-32B down"),
    (12, 18432, 1536, "probe: DeepSeek-V3 down K x q_a N"), (8, 25600, 1024, "probe: Qwen3-32B down K x N 1024"),
    (8, 16384, 6656, "Llama-3-405B gate/up TP8"), (8, 28672, 8192, "Llama-3-70B down"),
    (16, 3584, 8192, "Llama-3-70B down TP8"), (32, 2048, 4096, "Qwen3-235B o_proj TP4"),
    (12, 7168, 4096, "DeepSeek-V3 shared gate/up"), (24, 7168, 4608, "DeepSeek-V3 gate/up TP8"),
    (40, 7168, 4608, "DeepSeek-V3 gate/up TP8"), (8, 8192, 7168, "Kimi-K2 o_proj"),
    (24, 7168, 1536, "DeepSeek-V3 q_a"),
    # M 68-128 controls
    (68, 8192, 1280, "Llama-3-70B qkv TP8"), (76, 12288, 1792, "Mistral-Large-2 qkv TP8"),
    (100, 14336, 4096, "Llama-3-8B down"), (124, 16384, 2304, "Llama-3-405B qkv TP8"),
]
OWN_PREFIX = ("gemm_grid9", "cublaslt_block_grid9")

PRICE = """
import json, sys
import pandas as pd
sys.path.insert(0, sys.argv[1])
from hwmodels.spec import load_hardware
from simulator.calibration import fit_production_topk_gemm as F
from simulator.kernels import gemm_fp8 as G
G.CUBLASLT_SPLIT_RULE = sys.argv[2]
rows = json.loads(sys.stdin.read())
hw = load_hardware("H100-SXM")
df = pd.DataFrame([{"family": "gemm", "kernel": "fp8_block_cublaslt", "dist": "", "rows": m, "n": n, "k": k}
                   for m, k, n in rows])
us = F.predict_gemm_us(F.gemm_frame(df), hw, hw.efficiency)
print(json.dumps({"us": [float(x) for x in us], "split": [int(G.cublaslt_block_split(m, k, n)) for m, k, n in rows]}))
"""


def regime(m: int, split_cand: int) -> str:
    if m > 64:
        return "M 68-128 (control)"
    return {1: "unsplit, M<=64"}.get(split_cand, "2 slices" if split_cand == 2 else ">=3 slices")


def main():
    out, grid_csv = (Path(a) for a in sys.argv[1:3])
    seen = set()
    for d in committed_grids(OWN_PREFIX):
        kern = d["kernel"].astype(str) if "kernel" in d.columns else pd.Series("?", index=d.index)
        kern = kern.replace({"fp8_block": "deepgemm", "fp8_block_cublaslt": "cublaslt"})
        seen |= set(zip(kern, d["rows"].astype(int), d["k"].astype(int), d["n"].astype(int)))
    rows = [(m, k, n) for m, k, n, _ in CUBLASLT]
    clash = [r for r in rows if ("cublaslt", *r) in seen or ("fp8_block", *r) in seen]
    bad = [r for r in rows if r[0] % 4 or r[1] % 512 or r[2] % 128]
    if clash or bad or len(set(rows)) != len(rows):
        raise SystemExit(f"clash {clash}; bad {bad}; duplicates {len(rows) - len(set(rows))}")
    head, dirty = code_state()
    mp = run_price(PRICE, ROOT, [list(r) for r in rows], extra=("tiles",))
    cp = run_price(PRICE, ROOT, [list(r) for r in rows], extra=("work",))
    c = pd.DataFrame({"kernel": "cublaslt", "rows": [r[0] for r in rows], "k": [r[1] for r in rows],
                      "n": [r[2] for r in rows], "model": [x[3] for x in CUBLASLT],
                      "tiles": [math.ceil(m / 128) * math.ceil(n / 128) for m, k, n in rows],
                      "padded_tiles": [math.ceil(m / 128) * math.ceil(math.ceil(n / 128) / 4) * 4 for m, k, n in rows],
                      "ksteps": [math.ceil(k / 128) for m, k, n in rows],
                      "split_main": mp["split"], "split_cand": cp["split"],
                      "pred_main_us": mp["us"], "pred_cand_us": cp["us"]})
    c["regime"] = [regime(m, s) for m, s in zip(c["rows"], c["split_cand"])]
    c.to_csv(out, index=False, float_format="%.4f")
    pd.DataFrame({"kernel": "cublaslt", "rows": c["rows"], "k": c["k"], "n": c["n"]}).to_csv(grid_csv, index=False)
    print(f"priced by this tree at {head}{' + uncommitted changes' if dirty else ''}: main (rule tiles) and "
          f"candidate (rule work)")
    print(c.to_string())


if __name__ == "__main__":
    main()
