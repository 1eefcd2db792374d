"""Price the vLLM Triton unified-attention grid (lab/kernels/measure_triton_vllm_attention.py shapes()) BEFORE it is
measured (the triton_vllm family's first look), each shape twice under the shipped H100 terms
(hwmodels/calibration/fitted/H100-SXM.yaml):

  pred_main_us    (a) simulator/kernels/triton_engines.py as it was at f5528fc (read from git): 3D iff
                  B <= 128 // Hkv, every grid program working, one kind attn_triton_vllm for every K/V dtype, terms
                  borrowed from SGLang's Triton kernel (attn_triton_sgl)
  pred_struct_us  (b) the structure read from the source at 001ceb3e (simulator.kernels.triton_engines.triton_vllm:
                  3D iff ((B x q) // BLOCK_Q + B) x Hkv <= 128 and q = 1, idle q blocks and segments, the search and
                  metadata loads, the pipeline prologue), rates still borrowed: attn_triton_vllm <- attn_triton_sgl,
                  attn_triton_vllm_fp8kv <- attn_triton_sgl_fp8kv, attn_combine_triton_vllm <- attn_combine_triton_sgl

Writes hwmodels/calibration/data/production_attention/triton_vllm_first_look.csv with the commit of the code.

    python lab/kernels/predict_triton_vllm_attention.py
"""
from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
OUT = ROOT / "hwmodels/calibration/data/production_attention/triton_vllm_first_look.csv"
MAIN_COMMIT = "f5528fc"


def main_module():
    """simulator/kernels/triton_engines.py as committed at MAIN_COMMIT."""
    src = subprocess.run(["git", "show", f"{MAIN_COMMIT}:simulator/kernels/triton_engines.py"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    m = types.ModuleType("triton_engines_main")
    exec(compile(src, f"triton_engines.py@{MAIN_COMMIT}", "exec"), m.__dict__)   # noqa: S102 - the repository's own file
    return m


def price(shapes: pd.DataFrame, how: str) -> np.ndarray:
    from hwmodels.roofline import price as roof
    from hwmodels.spec import load_hardware
    from simulator.kernels import triton_engines as TE
    from simulator.kernels.families import DEFAULT_SMEM_PER_SM
    from simulator.kernels.production import emit
    from simulator.ops import OpBuilder

    hw = load_hardware("H100-SXM")
    b = OpBuilder(len(shapes))
    a = {c: shapes[c].to_numpy(float) for c in ("batch", "q_rows", "context", "heads", "kv_heads", "head_dim")}
    kvb = np.where(shapes["dtype"].to_numpy() == "fp8", 1.0, 2.0)
    args = (a["batch"], a["q_rows"], a["context"], a["heads"], a["kv_heads"], a["head_dim"], kvb, hw.units,
            DEFAULT_SMEM_PER_SM)
    mod = main_module() if how == "main" else TE
    launches, _ = mod.triton_vllm(*args)
    emit(b, launches, hw.units)
    ops = b.build()
    t = roof(ops, hw, "graph")
    return np.bincount(ops.setting, weights=t, minlength=len(shapes)) * 1e6


def main() -> None:
    import measure_triton_vllm_attention as M

    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "simulator", "hwmodels/calibration/fitted",
                            "hwmodels/opkinds.py"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    if dirty:
        raise SystemExit(f"uncommitted changes under simulator/ hwmodels/: commit the model first\n{dirty}")
    s = pd.DataFrame(M.shapes())
    s["pred_main_us"] = np.round(price(s, "main"), 3)
    s["pred_struct_us"] = np.round(price(s, "struct"), 3)
    s["model_commit"] = commit
    s.to_csv(OUT, index=False)
    print(f"{len(s)} shapes priced at {commit[:10]} -> {OUT}")
    print(s.groupby(["model", "dtype", "q_rows"])[["pred_main_us", "pred_struct_us"]].median().to_string())


if __name__ == "__main__":
    main()
