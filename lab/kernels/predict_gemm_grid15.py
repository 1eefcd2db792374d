"""The fifteenth block-scaled fp8 GEMM grid: cuBLASLt (torch._scaled_mm's block path) only, BLIND, drawn by helper
s24gm after grid 14. Writes the grid and the committed predictions BEFORE it is measured
(lab/kernels/measure_deepgemm_gemm.py measures it, tag grid15).

    python lab/kernels/predict_gemm_grid15.py OUT.csv GRID.csv

Why: grid 14 timed only its K % 512 == 0 rows (torch._scaled_mm's block path gives wrong results at other K: the
grid 14 readme), so prefill at 4 K steps held 5 rows and one-wave prefill 2; both were off under the shipped model
(the kind's turnover hidden across waves, CTA_FIXED_HIDDEN): 4-K-step prefill +4..+11 %, growing with the number of
waves (tiles per CTA: 14 waves +4 %, 47 waves +11 %), one-wave prefill -6 / -10 %. On the looked-at multi-wave rows of
grids 4-14 the sign turns with K: 4 K steps +4..+13 %, 8 K steps +1..+3, >= 28 K steps -3..-9 %, i.e. a later tile's
turnover costs less than the kind's cta_fixed (a persistent nvjet 128x128_128x6 CTA prefetches the next tile's 6
stages during the epilogue) and a later wave's K step more than the kind's iter (fitted mostly on one-wave decode).
Candidate `cand`: the kind in hwmodels.roofline.CTA_FIXED_HIDDEN_SHARE with (share, step) = CUBLASLT_GRID15_CAND_SHARE
(a later tile's turnover share x cta_fixed, the later waves' K steps at step x iter; one wave priced as main), the
two fitted by least squares on log time over the 66 looked-at multi-wave rows of grids 4-14 (the kind's fit rows +
grid 14) with the committed terms (CUBLASLT_GRID15_CAND_TERMS): rms log error 0.054 -> 0.033 on those rows. Grid 15 has
K % 512 == 0 ONLY (asserted here): prefill at 4 and 8 K steps over N 2048-32768, one-wave prefill, decode unsplit
and split (M 8-64) controls. Each row priced under the shipped split rule ("workspace"): `pred_main_us` (main: the
kind's terms and structure as committed) and `pred_cand_us`.
Declared before the measurement: cand ships only if it meets more regimes than main (or as many with a lower pooled
median AND p90), common13's rule.
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
from gemm_grid_pricing import check_block_shapes, code_state, regime_mismatches, run_price  # noqa: E402

#: regime -> (M, K, N); K % 512 == 0 in every row (check); a decode row's regime is checked against the shipped split rule
GRID = {
    "prefill 4 K steps": [(4096, 512, 2048), (7680, 512, 2048), (2560, 512, 6144), (5120, 512, 8192),
                          (1024, 512, 12288), (2304, 512, 16384), (4608, 512, 20480), (768, 512, 28672),
                          (2816, 512, 32768), (8192, 512, 10240)],
    "prefill 8 K steps": [(6144, 1024, 2048), (3584, 1024, 5120), (1792, 1024, 9216), (4608, 1024, 14336),
                          (1536, 1024, 18432), (2560, 1024, 24576), (1024, 1024, 32768), (7168, 1024, 12288)],
    "prefill one wave": [(256, 2048, 8192), (384, 1536, 5120), (640, 4096, 3072), (1024, 1024, 2048),
                         (768, 3072, 2816), (512, 2560, 4096), (896, 512, 2304)],
    "decode unsplit M 8-64": [(64, 7168, 2304), (32, 5120, 12288), (48, 10240, 6144), (16, 14336, 16384),
                              (24, 3072, 7680), (40, 20480, 4096)],
    "decode split M 8-64": [(8, 8192, 4096), (16, 12288, 2048), (32, 7168, 3072), (24, 18432, 1536),
                            (64, 6144, 1536), (12, 24576, 5120)],
}

OWN_PREFIX = ("gemm_grid15", "cublaslt_block_grid15")

PRICE = """
import json, sys
import pandas as pd
sys.path.insert(0, sys.argv[1])
from hwmodels import roofline as R
from hwmodels.spec import load_hardware
from simulator.calibration import fit_production_topk_gemm as F
from simulator.kernels import gemm_fp8 as G
rows = json.loads(sys.stdin.read())
hw = load_hardware("H100-SXM")
terms, share = json.loads(sys.argv[2]), json.loads(sys.argv[3])
eff = hw.efficiency if terms == "committed" else F.block_cublaslt_eff_with(hw, terms)
if share is not None:
    R.CTA_FIXED_HIDDEN_SHARE = {R.KIND_CODE[F.CUBLASLT_BLOCK_KIND]: tuple(float(x) for x in share)}
df = pd.DataFrame([{"family": "gemm", "kernel": "fp8_block_cublaslt", "dist": "", "rows": m, "n": n, "k": k}
                   for m, k, n in rows])
us = F.predict_gemm_us(F.gemm_frame(df), hw, eff)
print(json.dumps({"us": [float(x) for x in us], "split": [int(G.cublaslt_block_split(m, k, n)) for m, k, n in rows],
                  "rule": G.CUBLASLT_SPLIT_RULE, "hidden": R.KIND_CODE[F.CUBLASLT_BLOCK_KIND] in R.CTA_FIXED_HIDDEN,
                  "share": R.CTA_FIXED_HIDDEN_SHARE.get(R.KIND_CODE[F.CUBLASLT_BLOCK_KIND])}))
"""


def grid() -> list[tuple[int, int, int, str]]:
    """(M, K, N, regime) in the committed order."""
    return [(m, k, n, reg) for reg, rows in GRID.items() for m, k, n in rows]


def check(rows: list[tuple[int, int, int]]) -> None:
    """K % 512 == 0 asserted first; then gemm_grid_pricing.check_block_shapes."""
    assert all(k % 512 == 0 for _, k, _ in rows), "every K a multiple of 512"
    check_block_shapes(rows, OWN_PREFIX, 512)


def main():
    from simulator.calibration import fit_production_topk_gemm as F

    out, grid_csv = (Path(a) for a in sys.argv[1:3])
    g = grid()
    rows = [(m, k, n) for m, k, n, _ in g]
    check(rows)
    head, dirty = code_state()
    cand = json.dumps(list(F.CUBLASLT_GRID15_CAND_TERMS))
    mp = run_price(PRICE, ROOT, [list(r) for r in rows], extra=('"committed"', "null"))
    cp = run_price(PRICE, ROOT, [list(r) for r in rows], extra=(cand, json.dumps(list(F.CUBLASLT_GRID15_CAND_SHARE))))
    assert mp["rule"] == cp["rule"] == "workspace" and mp["split"] == cp["split"]
    assert mp["hidden"] and cp["hidden"] and mp["share"] is None and tuple(cp["share"]) == F.CUBLASLT_GRID15_CAND_SHARE
    c = pd.DataFrame({"kernel": "cublaslt", "rows": [r[0] for r in rows], "k": [r[1] for r in rows],
                      "n": [r[2] for r in rows],
                      "tiles": [math.ceil(m / 128) * math.ceil(n / 128) for m, k, n in rows],
                      "ksteps": [math.ceil(k / 128) for m, k, n in rows],
                      "waves": [math.ceil(math.ceil(m / 128) * math.ceil(n / 128) * s / 132)
                                for (m, k, n), s in zip(rows, mp["split"])],
                      "split_main": mp["split"], "pred_main_us": mp["us"], "pred_cand_us": cp["us"],
                      "regime": [x[3] for x in g]})
    wrong = regime_mismatches(rows, c["split_main"], c["waves"], c["ksteps"], c["regime"])
    if wrong:
        raise SystemExit(f"rows whose split / waves / K steps are not their regime's: {wrong}")
    c.to_csv(out, index=False, float_format="%.4f")
    pd.DataFrame({"kernel": "cublaslt", "rows": c["rows"], "k": c["k"], "n": c["n"]}).to_csv(grid_csv, index=False)
    print(f"priced by this tree at {head}{' + uncommitted changes' if dirty else ''}: main (the kind's terms and "
          f"structure as committed: CTA_FIXED_HIDDEN, no share), cand (CUBLASLT_GRID15_CAND_TERMS "
          f"{F.CUBLASLT_GRID15_CAND_TERMS}, CTA_FIXED_HIDDEN_SHARE {F.CUBLASLT_GRID15_CAND_SHARE}), both under the "
          f"split rule 'workspace'")
    print(c.to_string())


if __name__ == "__main__":
    main()
