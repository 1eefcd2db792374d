"""The twelfth block-scaled fp8 GEMM grid: cuBLASLt (torch._scaled_mm's block path) only, BLIND. Writes the grid and the
committed predictions BEFORE it is measured (lab/kernels/measure_deepgemm_gemm.py measures it, tag grid12; a
cuBLASLt-only grid runs without DeepGEMM's build).

    python lab/kernels/predict_gemm_grid12.py OUT.csv GRID.csv

Shapes: aimed at what grid 11 missed (unsplit long-K rows over-priced by 11-15 %): 12 rows at M 16-64, 11 at M 68-128 and
10 at M 132-256 that the shipped split rule ("workspace") keeps unsplit (2 slices' fp32 partials >= 1 MiB) at 64-256 K
steps; 8 split controls at M 8-56 (3-10 slices, 76-248 K steps); 3 diagnostic rows at M 8 / 12 whose 80-128 padded tiles
keep them unsplit by the tile gate (grid 11's M 8 x 72 tiles ran a persistent split-K there). M a multiple of 4, K of
512, N of 128, no (M, K, N) of any committed CSV (checked). Each row priced by this tree twice, both under the shipped
split rule: main (the kind's terms as committed: fitted on 60 rows under the "tiles" rule) and the candidate (the
kind's terms refitted by its writer under "workspace" on 266 recorded rows, grids 4-11:
simulator.calibration.fit_production_topk_gemm.CUBLASLT_GRID12_CAND_TERMS): columns split (the rule's count),
pred_main_us / pred_cand_us; regime fixed before the measurement.
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
from gemm_grid_pricing import check_block_shapes, code_state, run_price  # noqa: E402

#: regime -> (M, K, N)
GRID = {
    "M<=64 unsplit": [(64, 8192, 2048), (60, 12288, 2560), (56, 16384, 3072), (48, 20480, 3072), (44, 24576, 3072),
                      (40, 28672, 4096), (36, 32768, 4096), (32, 10240, 4608), (28, 14336, 5120), (24, 18432, 6144),
                      (20, 22528, 7168), (16, 26624, 8192)],
    "M 65-128 unsplit": [(128, 9216, 1024), (124, 13312, 1152), (116, 17408, 1280), (108, 21504, 1536),
                         (96, 25600, 1536), (88, 29696, 1664), (80, 11776, 1792), (72, 15872, 2048), (68, 19968, 2304),
                         (100, 31232, 2560), (120, 8704, 1920)],
    "M 129-256 unsplit": [(256, 9728, 512), (240, 13824, 640), (224, 17920, 768), (208, 22016, 640), (192, 26112, 768),
                          (176, 30208, 896), (160, 12800, 1024), (144, 16896, 1024), (132, 20992, 1152),
                          (200, 24064, 1280)],
    "M<=64 split": [(8, 18944, 2048), (16, 23040, 1536), (24, 27136, 1024), (32, 31744, 768), (40, 12800, 1280),
                    (48, 17920, 1024), (12, 9728, 3072), (56, 21504, 768)],
    "M<=12 tile-gated (diagnostic)": [(12, 30720, 11264), (8, 11264, 16384), (8, 16384, 10240)],
}

OWN_PREFIX = ("gemm_grid12", "cublaslt_block_grid12")

PRICE = """
import json, sys
import pandas as pd
sys.path.insert(0, sys.argv[1])
from hwmodels.spec import load_hardware
from simulator.calibration import fit_production_topk_gemm as F
from simulator.kernels import gemm_fp8 as G
rows = json.loads(sys.stdin.read())
hw = load_hardware("H100-SXM")
eff = hw.efficiency if sys.argv[2] == "committed" else F.block_cublaslt_eff_with(hw, json.loads(sys.argv[2]))
df = pd.DataFrame([{"family": "gemm", "kernel": "fp8_block_cublaslt", "dist": "", "rows": m, "n": n, "k": k}
                   for m, k, n in rows])
us = F.predict_gemm_us(F.gemm_frame(df), hw, eff)
print(json.dumps({"us": [float(x) for x in us], "split": [int(G.cublaslt_block_split(m, k, n)) for m, k, n in rows],
                  "rule": G.CUBLASLT_SPLIT_RULE}))
"""


def grid() -> list[tuple[int, int, int, str]]:
    """(M, K, N, regime) in the committed order."""
    return [(m, k, n, reg) for reg, rows in GRID.items() for m, k, n in rows]


def check(rows: list[tuple[int, int, int]]) -> None:
    """gemm_grid_pricing.check_block_shapes (K % 512)."""
    check_block_shapes(rows, OWN_PREFIX, 512)


def main():
    from simulator.calibration import fit_production_topk_gemm as F

    out, grid_csv = (Path(a) for a in sys.argv[1:3])
    g = grid()
    rows = [(m, k, n) for m, k, n, _ in g]
    check(rows)
    head, dirty = code_state()
    mp = run_price(PRICE, ROOT, [list(r) for r in rows], extra=("committed",))
    cp = run_price(PRICE, ROOT, [list(r) for r in rows], extra=(json.dumps(list(F.CUBLASLT_GRID12_CAND_TERMS)),))
    assert mp["rule"] == cp["rule"] == "workspace" and mp["split"] == cp["split"]
    c = pd.DataFrame({"kernel": "cublaslt", "rows": [r[0] for r in rows], "k": [r[1] for r in rows],
                      "n": [r[2] for r in rows],
                      "tiles": [math.ceil(m / 128) * math.ceil(n / 128) for m, k, n in rows],
                      "padded_tiles": [math.ceil(m / 128) * math.ceil(math.ceil(n / 128) / 4) * 4 for m, k, n in rows],
                      "ksteps": [math.ceil(k / 128) for m, k, n in rows],
                      "split_main": mp["split"], "split_cand": cp["split"],
                      "pred_main_us": mp["us"], "pred_cand_us": cp["us"], "regime": [x[3] for x in g]})
    want = {"M<=64 split": True}
    wrong = [r for r, s, reg in zip(rows, c["split_main"], c["regime"]) if (s > 1) != want.get(reg, False)]
    if wrong:
        raise SystemExit(f"rows whose split is not their regime's: {wrong}")
    c.to_csv(out, index=False, float_format="%.4f")
    pd.DataFrame({"kernel": "cublaslt", "rows": c["rows"], "k": c["k"], "n": c["n"]}).to_csv(grid_csv, index=False)
    print(f"priced by this tree at {head}{' + uncommitted changes' if dirty else ''}: main (the kind's terms as "
          f"committed) and the candidate (CUBLASLT_GRID12_CAND_TERMS {F.CUBLASLT_GRID12_CAND_TERMS}), both under the "
          f"shipped split rule 'workspace'")
    print(c.to_string())


if __name__ == "__main__":
    main()
