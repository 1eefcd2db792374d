"""The thirteenth block-scaled fp8 GEMM grid: cuBLASLt (torch._scaled_mm's block path) only, BLIND, drawn by the lead
after grid 12's refit shipped. Writes the grid and the committed predictions BEFORE it is measured
(lab/kernels/measure_deepgemm_gemm.py measures it, tag grid13).

    python lab/kernels/predict_gemm_grid13.py OUT.csv GRID.csv

Why: grid 12 shipped the kind's terms refitted under the "workspace" split rule (fixed time per CTA 1.095 -> 1.486 us,
per K step 0.3879 -> 0.3623 us) on decode / small-M rows alone; on the looked-at prefill rows of the first block grid the
refit moved from met to missed (K 512 x N 32768 rows +12 -> +28 %, long-K prefill -4..-9 %). Grid 13 judges that
regime blind: prefill M 640-4096 at few K steps (4-16) and at long K (32-144 steps), plus decode controls (unsplit
M 24-124, split M 8-48). Each row priced by this tree twice under the shipped split rule: `pred_main_us` the kind's
terms as committed (grid 12's refit, shipped) and `pred_before_us` the terms before grid 12
(simulator.calibration.fit_production_topk_gemm.CUBLASLT_TERMS_BEFORE_GRID12); regime fixed before the measurement.
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
    "prefill M>=640, K steps <= 16": [(640, 512, 30720), (768, 1024, 22528), (1024, 512, 26624), (1280, 1536, 14336),
                                      (1536, 2048, 10240), (2048, 1024, 12288), (3072, 512, 9216), (4096, 1536, 5632)],
    "prefill M>=640, K steps >= 32": [(640, 7680, 5632), (896, 12800, 3584), (1152, 5120, 7680), (1792, 9728, 2816),
                                      (2304, 18432, 1792), (2816, 4608, 4352), (3584, 6656, 2304), (4096, 4096, 3328)],
    "decode unsplit M 24-124": [(124, 7680, 2944), (100, 11264, 2432), (76, 15360, 3456), (52, 6656, 5376),
                                (36, 9216, 6656), (24, 13312, 8704)],
    "decode split M 8-48": [(8, 14848, 2432), (20, 8704, 1408), (32, 19968, 896), (48, 10752, 1152)],
}

OWN_PREFIX = ("gemm_grid13", "cublaslt_block_grid13")

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
    bp = run_price(PRICE, ROOT, [list(r) for r in rows], extra=(json.dumps(list(F.CUBLASLT_TERMS_BEFORE_GRID12)),))
    assert mp["rule"] == bp["rule"] == "workspace" and mp["split"] == bp["split"]
    c = pd.DataFrame({"kernel": "cublaslt", "rows": [r[0] for r in rows], "k": [r[1] for r in rows],
                      "n": [r[2] for r in rows],
                      "tiles": [math.ceil(m / 128) * math.ceil(n / 128) for m, k, n in rows],
                      "ksteps": [math.ceil(k / 128) for m, k, n in rows],
                      "split_main": mp["split"], "pred_main_us": mp["us"], "pred_before_us": bp["us"],
                      "regime": [x[3] for x in g]})
    wrong = [r for r, s, reg in zip(rows, c["split_main"], c["regime"]) if (s > 1) != reg.startswith("decode split")]
    if wrong:
        raise SystemExit(f"rows whose split is not their regime's: {wrong}")
    c.to_csv(out, index=False, float_format="%.4f")
    pd.DataFrame({"kernel": "cublaslt", "rows": c["rows"], "k": c["k"], "n": c["n"]}).to_csv(grid_csv, index=False)
    print(f"priced by this tree at {head}{' + uncommitted changes' if dirty else ''}: main (the kind's terms as "
          f"committed: grid 12's refit) and before (CUBLASLT_TERMS_BEFORE_GRID12 {F.CUBLASLT_TERMS_BEFORE_GRID12}), "
          f"both under the shipped split rule 'workspace'")
    print(c.to_string())


if __name__ == "__main__":
    main()
