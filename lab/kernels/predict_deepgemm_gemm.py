"""The blind block-scaled fp8 GEMM grid (DeepGEMM's fp8_gemm_nt and cuBLASLt's block path on the same shapes): write
the grid with two committed predictions BEFORE it is measured (lab/kernels/measure_deepgemm_gemm.py measures it).

    python lab/kernels/predict_deepgemm_gemm.py OUT.csv

Shapes: (K, N) of DeepSeek-V3's and Qwen3-32B's linear layers, M through decode and prefill (GRID_KN / DECODE_M /
PREFILL_M below), none in a committed production_kernels CSV (checked). Columns:
    pred_main_us   the model at main 5b35f90: both kernels priced as kind gemm_fp8_block (DeepGEMM's tile walk,
                   simulator/kernels/gemm_fp8.py add_block_gemm, terms fitted on cuBLASLt's 4 fit rows)
    pred_new_us    deepgemm rows: the same (DeepGEMM's model is not changed before its first measurement); cublaslt
                   rows: kind gemm_fp8_block_cublaslt (128 x 128 tiles, split-K at decode + splitKreduce:
                   add_block_gemm_cublaslt, its chain terms fitted on the same 4 fit rows)
Both in-graph (one graph launch per kernel kept: what the CUDA-graph timer measures).
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from hwmodels.spec import load_hardware  # noqa: E402
from simulator.calibration import fit_production_topk_gemm as F  # noqa: E402
from simulator.kernels import gemm_fp8 as G  # noqa: E402

#: (K, N) of [M, K] x [N, K]^T weight GEMMs (block scales need multiples of 128): DeepSeek-V3 (hidden 7168; config.json
#: of deepseek-ai/DeepSeek-V3) q_a_proj (7168 -> 1536), kv_b_proj TP1 (512 -> 128 heads x 256), dense MLP gate_up TP8
#: (7168 -> 2 x 18432 / 8) and down TP8 (2304 -> 7168), down TP1 (18432 -> 7168), gate_up TP1 (7168 -> 36864);
#: Qwen3-32B (hidden 5120, 64 query / 8 KV heads of 128, intermediate 25600) qkv TP8 (5120 -> 1280), down TP4
#: (6400 -> 5120)
GRID_KN = [(7168, 1536), (512, 32768), (7168, 4608), (2304, 7168), (18432, 7168), (7168, 36864), (5120, 1280),
           (6400, 5120)]
DECODE_M = (1, 6, 16, 36, 60)
PREFILL_M = (640, 1280, 2560, 3584, 4096)
KERNELS = ("deepgemm", "cublaslt")


def grid(seen: set | None = None) -> list[tuple[str, int, int, int]]:
    """(kernel, M, K, N): per (K, N) three decode and two prefill M, walked through DECODE_M / PREFILL_M from a per-pair
    offset and skipping any (M, K, N) in `seen` (default: every committed shape), each through both kernels."""
    seen = committed_shapes() if seen is None else seen
    out = []
    for j, (k, n) in enumerate(GRID_KN):
        ms = []
        for ladder, want in ((DECODE_M, 3), (PREFILL_M, 2)):
            walk = [ladder[(j + 2 * t) % len(ladder)] for t in range(len(ladder))]
            walk = list(dict.fromkeys(walk))   # each value once, in walking order
            ms += [m for m in walk if (m, k, n) not in seen][:want]
        out += [(kern, m, k, n) for m in ms for kern in KERNELS]
    return out


def regime(kernel, rows) -> np.ndarray:
    return np.array([f"{k}: {'decode M<=64' if m <= 64 else 'prefill M>=640'}" for k, m in zip(kernel, rows)])


#: this grid's own files (its prediction and measurement), left out of the committed shapes it must avoid
OWN_PREFIX = "deepgemm_gemm_blind"


def committed_shapes() -> set[tuple[int, int, int]]:
    """(M, K, N) of every GEMM row in a committed production_kernels CSV (any kernel; this grid's files aside)."""
    seen = set()
    for f in [*F.DATA_DIR.glob("*.csv"), *F.DATA_DIR.glob("*.csv.gz")]:   # plain or committed gzip-compressed
        if f.name.startswith(OWN_PREFIX):
            continue
        d = pd.read_csv(f)
        if {"rows", "k", "n"} <= set(d.columns) and ("family" not in d.columns or (d["family"] == "gemm").any()):
            if "family" in d.columns:
                d = d[d["family"] == "gemm"]
            seen |= set(zip(d["rows"].astype(int), d["k"].astype(int), d["n"].astype(int)))
    return seen


def predict(hw=None) -> pd.DataFrame:
    hw = hw or load_hardware("H100-SXM")
    df = pd.DataFrame([{"family": "gemm", "kernel": kern, "dist": "", "rows": m, "n": n, "k": k}
                       for kern, m, k, n in grid()])
    g = F.gemm_frame(df)
    main = g.copy()
    main["kernel"] = "fp8_block"
    new = g.copy()
    new["kernel"] = np.where(g["kernel"] == "cublaslt", "fp8_block_cublaslt", "fp8_block")
    out = df[["kernel", "rows", "k", "n"]].copy()
    out["pred_main_us"] = F.predict_gemm_us(main, hw, hw.efficiency)
    out["pred_new_us"] = F.predict_gemm_us(new, hw, hw.efficiency)
    out["cublaslt_split"] = np.where(out["kernel"] == "cublaslt",
                                     G.cublaslt_block_split(out["rows"], out["k"], out["n"]), np.nan)
    out["dg_block_m_n_cluster"] = ["x".join(str(v) for v in G.block_layout(float(m), n, k, hw.units))
                                   for m, k, n in zip(out["rows"], out["k"], out["n"])]
    out["regime"] = regime(out["kernel"], out["rows"])
    return out


def main():
    out = Path(sys.argv[1])
    p = predict()
    clash = {(m, k, n) for m, k, n in zip(p["rows"], p["k"], p["n"])} & committed_shapes()
    if clash:
        raise SystemExit(f"shapes already in a committed CSV: {sorted(clash)}")
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    dirty = subprocess.run(["git", "status", "--porcelain", "simulator", "hwmodels"], cwd=ROOT, capture_output=True,
                           text=True).stdout.strip()
    print(f"pricing code at {head.strip()}{' + uncommitted changes' if dirty else ''}; {len(p)} rows")
    p.to_csv(out, index=False, float_format="%.4f")
    print(p.groupby("regime")[["pred_main_us", "pred_new_us"]].median())


if __name__ == "__main__":
    main()
