"""The eighth block-scaled fp8 GEMM grid, BLIND for both libraries. Writes the grid and the committed predictions BEFORE
it is measured (lab/kernels/measure_deepgemm_gemm.py measures it, tag grid8).

    python lab/kernels/predict_gemm_grid8.py OUT_PREFIX MAIN_TREE BEFORE_TREE GRID.csv

cuBLASLt (torch._scaled_mm's block path; M a multiple of 4, K / 128 a multiple of 4, where that path runs and is
right): fresh decode / small-M shapes M 8-128 where the shipped split rule (simulator.kernels.gemm_fp8.
cublaslt_block_split, read off 38 recorded choices) prices 2 or 3 slices, where it prices none (M 32-64 past the tile
bounds, few K steps) and M 68-128 controls. Split counts AND times priced by the shipped model (MAIN_TREE: git archive
2bec4e2, the rule and the kind refitted under it) and by the model before it (BEFORE_TREE: git archive 08cf44f):
columns split_main / split_before, pred_main_us / pred_before_us.
DeepGEMM (fp8_gemm_nt, deepseek-ai/DeepGEMM 54e2261): one-wave K 128-1024 at (M, N) of no earlier scan (where the
pipeline's fill is partly exposed), the one-wave block_m 64 tiles at M 56-64 x N 4096-12288, controls (long-K one wave,
several waves at tiny and long K) and two fill7 repeats (drift). Priced by main's model (MAIN_TREE 2bec4e2: the linear
unfilled-stage rule) and by this checkout with the fill curve on (gemm_fp8.FILL_CURVE; its full fill and per-step
ratio fitted on the fill7 scans only by lab/kernels/fit_deepgemm_fill_curve.py, the kind's other terms as committed):
pred_main_us / pred_new_us; layout (block_m x block_n x cluster), waves, stages, ksteps.
No (kernel, M, K, N) of any committed CSV except the two marked repeats (checked). Out: OUT_PREFIX_cublaslt.csv,
OUT_PREFIX_deepgemm.csv; GRID.csv the measuring grid (kernel, rows, k, n).
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

#: cuBLASLt decode / small-M shapes (M, K, N)
CUBLASLT = [
    # the shipped rule prices a split (M <= 64, >= 48 K steps, <= 20 tiles or <= 44 at M <= 28)
    (8, 7168, 1536), (16, 6144, 2048), (24, 7680, 2560), (28, 8704, 4096), (12, 9216, 3584), (32, 7168, 1024),
    (48, 8192, 2048), (60, 10240, 1536), (64, 6144, 1280), (20, 14336, 2048), (8, 18432, 1024), (44, 6656, 2048),
    (16, 12288, 5120), (36, 6144, 2304), (52, 9216, 2560),
    # it prices none (M 32-64 past 20 tiles, > 44 tiles at M <= 28, < 48 K steps)
    (32, 6144, 4096), (40, 8192, 3584), (52, 7168, 4608), (12, 7168, 7168), (24, 4096, 1536), (8, 5120, 3072),
    (64, 7168, 2816), (56, 4608, 1024), (20, 6144, 7680),
    # M 68-128 (controls: no split priced by either rule)
    (72, 7168, 2048), (96, 6144, 1536), (128, 8192, 1024), (80, 16384, 2048), (112, 5120, 4096),
]
#: DeepGEMM shapes (M, K, N, regime)
DEEPGEMM = [
    # one wave, K 128-1024 at (M, N) of no earlier scan
    (16, 128, 3072, "one wave K<=1024"), (16, 384, 3072, "one wave K<=1024"), (16, 768, 3072, "one wave K<=1024"),
    (32, 256, 1536, "one wave K<=1024"), (32, 640, 1536, "one wave K<=1024"), (32, 1024, 1536, "one wave K<=1024"),
    (4, 128, 6144, "one wave K<=1024"), (4, 512, 6144, "one wave K<=1024"), (12, 256, 2560, "one wave K<=1024"),
    (12, 896, 2560, "one wave K<=1024"), (24, 384, 4096, "one wave K<=1024"), (40, 128, 2048, "one wave K<=1024"),
    (40, 640, 2048, "one wave K<=1024"),
    # one wave, block_m 64 tiles, M 56-64 x N 4096-12288
    (64, 256, 4096, "one wave block_m 64"), (64, 1024, 6144, "one wave block_m 64"),
    (64, 512, 7168, "one wave block_m 64"), (56, 1536, 8192, "one wave block_m 64"),
    (64, 768, 10240, "one wave block_m 64"), (64, 2048, 12288, "one wave block_m 64"),
    # controls
    (8, 4608, 2560, "control: one wave K>=1536"), (24, 6144, 4096, "control: one wave K>=1536"),
    (2048, 384, 5120, "control: several waves"), (1024, 5120, 4096, "control: prefill one wave"),
    # fill7 repeats (drift; not judged)
    (8, 512, 2048, "repeat fill7"), (64, 1024, 8192, "repeat fill7"),
]
MAIN_COMMIT, BEFORE_COMMIT = "2bec4e2", "08cf44f"
OWN_PREFIX = ("gemm_grid8", "cublaslt_block_grid8", "deepgemm_gemm_grid8")

PRICE_CL = """
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
us = F.predict_gemm_us(F.gemm_frame(df), hw, hw.efficiency)
print(json.dumps({"us": [float(x) for x in us], "split": [int(G.cublaslt_block_split(m, k, n)) for m, k, n in rows]}))
"""

PRICE_DG = """
import json, sys
from dataclasses import replace
import pandas as pd
sys.path.insert(0, sys.argv[1])
from hwmodels.spec import load_hardware
from simulator.calibration import fit_production_topk_gemm as F
from simulator.kernels import gemm_fp8 as G
rows = json.loads(sys.stdin.read())
hw = load_hardware("H100-SXM")
e = hw.efficiency
if len(sys.argv) > 2:   # the fill curve on: full fill (us), per-step ratio
    G.FILL_CURVE, G.FILL_STEP_RATIO = True, float(sys.argv[3])
    e = replace(e, sync_s={**e.sync_s, "gemm_fp8_block": float(sys.argv[2]) * 1e-6})
df = pd.DataFrame([{"family": "gemm", "kernel": "fp8_block", "dist": "", "rows": m, "n": n, "k": k} for m, k, n in rows])
us = F.predict_gemm_us(F.gemm_frame(df), hw, e)
lay = [G.block_layout(float(m), n, k, hw.units) for m, k, n in rows]
st = [int(G._stages(float(m), n, k, a, b)) for (m, k, n), (a, b, _) in zip(rows, lay)]
waves = [int(-(-(-(-m // a) * -(-n // b)) // hw.units)) for (m, k, n), (a, b, _) in zip(rows, lay)]
print(json.dumps({"us": [float(x) for x in us], "layout": ["x".join(str(v) for v in x) for x in lay], "stages": st,
                  "waves": waves}))
"""


def cl_regime(m: int, split_main: int) -> str:
    if m > 64:
        return "M 68-128 (control)"
    return "split priced (shipped rule)" if split_main > 1 else "no split priced, M<=64"


def main():
    from fit_deepgemm_fill_curve import fit

    prefix, main_tree, before_tree, grid_csv = (Path(a) for a in sys.argv[1:5])
    seen = set()
    for d in committed_grids(OWN_PREFIX):
        kern = d["kernel"].astype(str) if "kernel" in d.columns else pd.Series("?", index=d.index)
        kern = kern.replace({"fp8_block": "deepgemm", "fp8_block_cublaslt": "cublaslt"})
        seen |= set(zip(kern, d["rows"].astype(int), d["k"].astype(int), d["n"].astype(int)))
    rows = [("cublaslt", m, k, n) for m, k, n in CUBLASLT] + [("deepgemm", m, k, n) for m, k, n, _ in DEEPGEMM]
    repeats = {("deepgemm", m, k, n) for m, k, n, r in DEEPGEMM if r.startswith("repeat")}
    clash = [r for r in rows if r in seen and r not in repeats]
    missing = [r for r in repeats if r not in seen]
    bad = [r for r in rows if r[0] == "cublaslt" and (r[1] % 4 or (r[2] // 128) % 4 or r[2] % 128)]
    if clash or missing or bad or len(set(rows)) != len(rows):
        raise SystemExit(f"clash {clash}; repeats not committed {missing}; bad cuBLASLt {bad}")
    head, dirty = code_state()
    state = f"{head}{' + uncommitted changes' if dirty else ''}"

    cl = [list(x) for x in CUBLASLT]
    mp, bp = run_price(PRICE_CL, main_tree, cl), run_price(PRICE_CL, before_tree, cl)
    c = pd.DataFrame({"kernel": "cublaslt", "rows": [r[0] for r in cl], "k": [r[1] for r in cl],
                      "n": [r[2] for r in cl],
                      "tiles": [math.ceil(m / 128) * math.ceil(n / 128) for m, k, n in cl],
                      "ksteps": [math.ceil(k / 128) for m, k, n in cl],
                      "split_main": mp["split"], "split_before": bp["split"],
                      "pred_main_us": mp["us"], "pred_before_us": bp["us"]})
    c["regime"] = [cl_regime(m, s) for m, s in zip(c["rows"], c["split_main"])]
    c.to_csv(Path(f"{prefix}_cublaslt.csv"), index=False, float_format="%.4f")

    f = fit()
    dg = [[m, k, n] for m, k, n, _ in DEEPGEMM]
    mp = run_price(PRICE_DG, main_tree, dg)
    nw = run_price(PRICE_DG, ROOT, dg, extra=(str(f["fill_us"]), str(f["fill_step_ratio"])))
    d = pd.DataFrame({"kernel": "deepgemm", "rows": [r[0] for r in dg], "k": [r[1] for r in dg],
                      "n": [r[2] for r in dg], "pred_main_us": mp["us"], "pred_new_us": nw["us"],
                      "layout": nw["layout"], "waves": nw["waves"], "stages": nw["stages"],
                      "ksteps": [math.ceil(k / 128) for m, k, n in dg], "regime": [r[3] for r in DEEPGEMM]})
    d.to_csv(Path(f"{prefix}_deepgemm.csv"), index=False, float_format="%.4f")
    pd.DataFrame(rows, columns=["kernel", "rows", "k", "n"]).to_csv(grid_csv, index=False)
    print(f"main {MAIN_COMMIT}, before {BEFORE_COMMIT}, new (DeepGEMM fill curve): this tree at {state}; "
          f"fill curve fitted on fill7 only: {f}")
    print(c.to_string())
    d["ratio"] = d["pred_new_us"] / d["pred_main_us"]
    print(d.to_string())


if __name__ == "__main__":
    main()
