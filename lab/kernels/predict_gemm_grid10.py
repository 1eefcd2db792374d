"""The tenth block-scaled fp8 GEMM grid: cuBLASLt (torch._scaled_mm's block path) only, BLIND. Writes the grid and the
committed predictions BEFORE it is measured (lab/kernels/measure_deepgemm_gemm.py measures it, tag grid10; a
cuBLASLt-only grid runs without DeepGEMM's build).

    python lab/kernels/predict_gemm_grid10.py OUT.csv GRID.csv

Shapes: small-M (decode) projections of Llama-3 8B / 70B / 405B, DeepSeek-V3, Grok-1, Gemma-2-27B, Qwen2.5-14B / 32B,
Phi-3-medium, Yi-34B, Command-R at TP 1-4 + small-tile probes (M a multiple of 4, K / 128 a multiple of 4), no (M, K, N)
of any committed CSV (checked), aimed at what grid 9 missed: 4 / 6 / 9+ slices at 100-256 K steps, 36-64 padded tiles
at long K, and M 72-128 (W <= ~1300) + unsplit controls. Each row priced by this tree three times: main
(simulator.kernels.gemm_fp8.CUBLASLT_SPLIT_RULE "work", shipped), the candidate ("slices": the rule read off all 125
recorded choices) with the kind's terms as committed, and cand_refit ("slices" with the kind's terms refitted under it
on its 56 named fit rows + the 143 timed cuBLASLt rows of the block grid, grids 4 / 5 / 8 / 9 and fill7: REFIT_TERMS,
all measured before this grid): columns split_main / split_cand, pred_main_us / pred_cand_us / pred_cand_refit_us;
regime = the candidate's split (>= 3 slices, 2 slices, unsplit at M <= 64) or M 72-128, fixed before the measurement.
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from gemm_grid_pricing import code_state, committed_grids, run_price  # noqa: E402

#: (compute, memory, fixed_us, cta_fixed_us, iter_us) of gemm_fp8_block_cublaslt refitted under "slices"
#: (fit_production_topk_gemm.fit_block_cublaslt with CUBLASLT_FIT_SPLIT_RULE "slices" on cublaslt_fit_frame(None) + the
#: cuBLASLt rows of deepgemm_gemm_{blind,grid4,grid5,fill7}_* and gemm_grid{8,9}_*: 199 rows, rms log error 0.063)
REFIT_TERMS = [1.0, 0.8135, 0.0, 1.0713, 0.3784]

#: (M, K, N, model projection)
CUBLASLT = [
    (8, 14336, 8192, "Llama-3-70B down TP2"), (16, 14336, 8192, "Llama-3-70B down TP2"),
    (24, 14336, 4096, "Llama-3-8B down"), (28, 14336, 4096, "Llama-3-8B down"), (44, 14336, 4096, "Llama-3-8B down"),
    (64, 14336, 4096, "Llama-3-8B down"),
    (8, 18432, 7168, "DeepSeek-V3 down"), (16, 18432, 7168, "DeepSeek-V3 down"), (24, 18432, 7168, "DeepSeek-V3 down"),
    (8, 32768, 6144, "Grok-1 down"), (16, 32768, 6144, "Grok-1 down"), (32, 32768, 6144, "Grok-1 down"),
    (8, 18432, 4608, "Gemma-2-27B down TP2"), (20, 18432, 4608, "Gemma-2-27B down TP2"),
    (40, 18432, 4608, "Gemma-2-27B down TP2"),
    (12, 13824, 5120, "Qwen2.5-14B down"), (20, 13824, 5120, "Qwen2.5-14B down"), (48, 13824, 5120, "Qwen2.5-14B down"),
    (8, 27648, 5120, "Qwen2.5-32B down"), (16, 27648, 5120, "Qwen2.5-32B down"), (28, 27648, 5120, "Qwen2.5-32B down"),
    (12, 17920, 5120, "Phi-3-medium down"), (24, 17920, 5120, "Phi-3-medium down"),
    (8, 20480, 7168, "Yi-34B down"), (20, 10240, 7168, "Yi-34B down TP2"),
    (8, 22528, 8192, "Command-R down"), (16, 11264, 8192, "Command-R down TP2"),
    (16, 16384, 4608, "Llama-3-405B qkv TP4"), (36, 16384, 4608, "Llama-3-405B qkv TP4"),
    (8, 20480, 1536, "probe: K 20480 x N 1536"), (20, 24576, 2048, "probe: K 24576 x N 2048"),
    (12, 30720, 768, "probe: K 30720 x N 768"), (16, 32768, 1280, "probe: K 32768 x N 1280"),
    # M 72-128
    (72, 8192, 1280, "Llama-3-70B qkv TP8"), (80, 8192, 1280, "Llama-3-70B qkv TP8"),
    (76, 16384, 1024, "probe: K 16384 x N 1024"), (100, 20480, 768, "probe: K 20480 x N 768"),
    (120, 12288, 1024, "probe: K 12288 x N 1024"), (128, 24576, 1024, "probe: K 24576 x N 1024"),
    (88, 16384, 2048, "probe: K 16384 x N 2048"), (112, 32768, 1536, "probe: K 32768 x N 1536"),
    (72, 14336, 4096, "Llama-3-8B down"), (96, 14336, 4096, "Llama-3-8B down"),
]

OWN_PREFIX = ("gemm_grid10", "cublaslt_block_grid10")

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
eff = F.block_cublaslt_eff_with(hw, json.loads(sys.argv[3])) if len(sys.argv) > 3 else hw.efficiency
df = pd.DataFrame([{"family": "gemm", "kernel": "fp8_block_cublaslt", "dist": "", "rows": m, "n": n, "k": k}
                   for m, k, n in rows])
us = F.predict_gemm_us(F.gemm_frame(df), hw, eff)
print(json.dumps({"us": [float(x) for x in us], "split": [int(G.cublaslt_block_split(m, k, n)) for m, k, n in rows]}))
"""


def regime(m: int, split_cand: int) -> str:
    if m > 64:
        return "M 72-128"
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
    mp = run_price(PRICE, ROOT, [list(r) for r in rows], extra=("work",))
    cp = run_price(PRICE, ROOT, [list(r) for r in rows], extra=("slices",))
    rp = run_price(PRICE, ROOT, [list(r) for r in rows], extra=("slices", json.dumps(REFIT_TERMS)))
    c = pd.DataFrame({"kernel": "cublaslt", "rows": [r[0] for r in rows], "k": [r[1] for r in rows],
                      "n": [r[2] for r in rows], "model": [x[3] for x in CUBLASLT],
                      "tiles": [math.ceil(m / 128) * math.ceil(n / 128) for m, k, n in rows],
                      "padded_tiles": [math.ceil(m / 128) * math.ceil(math.ceil(n / 128) / 4) * 4 for m, k, n in rows],
                      "ksteps": [math.ceil(k / 128) for m, k, n in rows],
                      "split_main": mp["split"], "split_cand": cp["split"],
                      "pred_main_us": mp["us"], "pred_cand_us": cp["us"],
                      "pred_cand_refit_us": rp["us"]})
    c["regime"] = [regime(m, s) for m, s in zip(c["rows"], c["split_cand"])]
    c.to_csv(out, index=False, float_format="%.4f")
    pd.DataFrame({"kernel": "cublaslt", "rows": c["rows"], "k": c["k"], "n": c["n"]}).to_csv(grid_csv, index=False)
    print(f"priced by this tree at {head}{' + uncommitted changes' if dirty else ''}: main (rule work), "
          f"candidate (rule slices) and cand_refit (slices, REFIT_TERMS)")
    print(c.to_string())


if __name__ == "__main__":
    main()
