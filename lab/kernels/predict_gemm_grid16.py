"""The sixteenth block-scaled fp8 GEMM grid: cuBLASLt (torch._scaled_mm's block path) only, BLIND, on the H200. Writes the
grid and its committed prices BEFORE it is measured (lab/kernels/measure_deepgemm_gemm.py measures it, tag grid16).

    python lab/kernels/predict_gemm_grid16.py OUT.csv GRID.csv

Why: on the H200 transfer grid (grid 15's shapes re-run on the H200) the one-wave prefill rows ran 12 % faster than
the model (-7 % on the H100), the model giving the H200 an 8-13 % gain its HBM does not give these calls (measured
H200 / H100 0.95-0.99). Candidate `new`: the last wave's output tiles stored after the main loop with nothing to overlap
them, at the L2's measured rate (hwmodels/roofline.py EPILOGUE_EXPOSED, op column epilogue_bytes from
simulator/kernels/gemm_fp8.py add_block_gemm_cublaslt; no fitted constant: the tile's bytes from the kernel's 128 x
128 tile, the rate the device's measured L2 bandwidth). LOOKED-AT when chosen: grids 8-15 and the H200 transfer rows
(the transfer grid 5.9 / 12.8 -> 4.8 / 8.9 %, its one-wave rows -12.3 -> -5.4 % signed; grid 15 6.7 / 11.8 -> 4.2 /
11.1 %; the other grids within 0.5 points). Every row priced on the H200 by main (the shipped model) and new, and on
the H100-SXM by both for reference. K % 512 == 0 in every row (torch's block path is wrong at other K: grid 14's
readme). Declared before the measurement: new ships only if it meets more regimes than main (or as many with a lower
pooled median AND p90).
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _committed import head_or_exit  # noqa: E402
from gemm_grid_pricing import check_block_shapes, regime_mismatches  # noqa: E402

#: regime -> (M, K, N)
GRID = {
    "prefill 4 K steps": [(2816, 512, 4608), (6144, 512, 3072), (1536, 512, 12288), (3584, 512, 7168),
                          (896, 512, 24576), (5632, 512, 5120)],
    "prefill 8 K steps": [(2048, 1024, 8192), (5120, 1024, 3072), (1280, 1024, 16384), (3328, 1024, 6144),
                          (768, 1024, 26624)],
    "prefill one wave": [(1152, 1024, 1792), (256, 3072, 7680), (384, 2560, 5376), (512, 1536, 3840),
                         (768, 4608, 2560), (1280, 512, 1536), (640, 6144, 3072), (896, 2048, 2304),
                         (1664, 1024, 1280), (256, 7168, 8192)],
    "decode unsplit M 8-64": [(56, 4096, 6144), (28, 8192, 9728), (40, 6144, 14336), (16, 3584, 12288),
                              (64, 2048, 10240)],
    "decode split M 8-64": [(8, 14336, 2048), (16, 10240, 3072), (48, 16384, 1024), (32, 9216, 2560),
                            (20, 20480, 1536)],
}
OWN_PREFIX = ("gemm_grid16", "cublaslt_block_grid16")
KIND = "gemm_fp8_block_cublaslt"


def grid() -> list[tuple[int, int, int, str]]:
    return [(m, k, n, reg) for reg, rows in GRID.items() for m, k, n in rows]


def price(rows, device: str, epilogue: bool) -> np.ndarray:
    import hwmodels.roofline as R
    from hwmodels.spec import load_hardware
    from simulator.calibration import fit_production_topk_gemm as F

    old = R.EPILOGUE_EXPOSED
    R.EPILOGUE_EXPOSED = (KIND,) if epilogue else ()
    try:
        hw = load_hardware(device)
        df = pd.DataFrame([{"family": "gemm", "kernel": "fp8_block_cublaslt", "dist": "", "rows": m, "n": n, "k": k}
                           for m, k, n in rows])
        return np.round(F.predict_gemm_us(F.gemm_frame(df), hw, hw.efficiency), 4)
    finally:
        R.EPILOGUE_EXPOSED = old


def main():
    from simulator.kernels import gemm_fp8 as G

    # main = the model as committed at d554dfb (EPILOGUE_EXPOSED off), new = on: both set explicitly below (price)
    out, grid_csv = (Path(a) for a in sys.argv[1:3])
    commit = head_or_exit(ROOT)
    g = grid()
    rows = [(m, k, n) for m, k, n, _ in g]
    assert all(k % 512 == 0 and n % 128 == 0 for _, k, n in rows), "every K a multiple of 512, every N of 128"
    check_block_shapes(rows, OWN_PREFIX, 512)
    split = [int(G.cublaslt_block_split(m, k, n)) for m, k, n in rows]
    c = pd.DataFrame({"kernel": "cublaslt", "rows": [r[0] for r in rows], "k": [r[1] for r in rows],
                      "n": [r[2] for r in rows],
                      "tiles": [math.ceil(m / 128) * math.ceil(n / 128) for m, k, n in rows],
                      "ksteps": [math.ceil(k / 128) for m, k, n in rows],
                      "waves": [math.ceil(math.ceil(m / 128) * math.ceil(n / 128) * s / 132)
                                for (m, k, n), s in zip(rows, split)],
                      "split_main": split, "regime": [x[3] for x in g]})
    wrong = regime_mismatches(rows, c["split_main"], c["waves"], c["ksteps"], c["regime"])
    if wrong:
        raise SystemExit(f"rows whose split / waves / K steps are not their regime's: {wrong}")
    c["pred_main_us"] = price(rows, "H200", False)
    c["pred_new_us"] = price(rows, "H200", True)
    c["pred_main_h100_us"] = price(rows, "H100-SXM", False)
    c["pred_new_h100_us"] = price(rows, "H100-SXM", True)
    c["model_commit"] = commit
    c.to_csv(out, index=False, float_format="%.4f")
    pd.DataFrame({"kernel": "cublaslt", "rows": c["rows"], "k": c["k"], "n": c["n"]}).to_csv(grid_csv, index=False)
    print(f"priced at {commit[:10]} on the H200 (main: EPILOGUE_EXPOSED off, new: on) and the H100-SXM")
    print(c.groupby("regime")[["pred_main_us", "pred_new_us", "pred_main_h100_us", "pred_new_h100_us"]].median()
          .round(2).to_string())


if __name__ == "__main__":
    main()
