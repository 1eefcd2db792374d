"""Price the vLLM Triton unified-attention blind grid (lab/kernels/measure_triton_vllm_attention.py blind_shapes())
BEFORE it is measured, each shape twice:

  pred_base_us  the model at BASE_COMMIT: its fitted file (hwmodels/calibration/fitted/H100-SXM.yaml read from git)
                and its roofline (one iteration time per kind, max(body, chain): hwmodels.roofline CHAIN_ISSUE empty)
  pred_new_us   the model at this commit: the lone program's chain plus the SM's shared issue (hwmodels.roofline
                CHAIN_ISSUE), refitted on the same fit rows (fit_production_attention.fit_triton_vllm)

Writes hwmodels/calibration/data/production_attention/triton_vllm_blind_predictions.csv with both commits.

    python lab/kernels/predict_triton_vllm_blind.py
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
OUT = ROOT / "hwmodels/calibration/data/production_attention/triton_vllm_blind_predictions.csv"
BASE_COMMIT = "bd4adb3"


def price(shapes: pd.DataFrame, base: bool) -> np.ndarray:
    import hwmodels.roofline as R
    from hwmodels.spec import load_hardware
    from simulator.kernels import triton_engines as TE
    from simulator.kernels.families import DEFAULT_SMEM_PER_SM
    from simulator.kernels.production import emit
    from simulator.ops import OpBuilder

    keep_issue, keep_env = R.CHAIN_ISSUE, os.environ.get("SPARSESIM_FITTED_DIR")
    with tempfile.TemporaryDirectory() as tmp:
        if base:
            src = subprocess.run(["git", "show", f"{BASE_COMMIT}:hwmodels/calibration/fitted/H100-SXM.yaml"], cwd=ROOT,
                                 capture_output=True, text=True, check=True).stdout
            (Path(tmp) / "H100-SXM.yaml").write_text(src)
            os.environ["SPARSESIM_FITTED_DIR"] = tmp
            R.CHAIN_ISSUE = ()
        try:
            hw = load_hardware("H100-SXM")
            b = OpBuilder(len(shapes))
            a = {c: shapes[c].to_numpy(float) for c in ("batch", "q_rows", "context", "heads", "kv_heads", "head_dim")}
            kvb = np.where(shapes["dtype"].to_numpy() == "fp8", 1.0, 2.0)
            launches, _ = TE.triton_vllm(a["batch"], a["q_rows"], a["context"], a["heads"], a["kv_heads"],
                                         a["head_dim"], kvb, hw.units, DEFAULT_SMEM_PER_SM)
            emit(b, launches, hw.units)
            ops = b.build()
            t = R.price(ops, hw, "graph")
        finally:
            R.CHAIN_ISSUE = keep_issue
            if keep_env is None:
                os.environ.pop("SPARSESIM_FITTED_DIR", None)
            else:
                os.environ["SPARSESIM_FITTED_DIR"] = keep_env
    return np.bincount(ops.setting, weights=t, minlength=len(shapes)) * 1e6


def main() -> None:
    import measure_triton_vllm_attention as M

    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "simulator", "hwmodels"], cwd=ROOT,
                           capture_output=True, text=True).stdout.strip()
    if dirty:
        raise SystemExit(f"uncommitted changes under simulator/ hwmodels/: commit the model first\n{dirty}")
    s = pd.DataFrame(M.blind_shapes())
    s["pred_base_us"] = np.round(price(s, base=True), 3)
    s["pred_new_us"] = np.round(price(s, base=False), 3)
    s["base_commit"] = BASE_COMMIT
    s["model_commit"] = commit
    s.to_csv(OUT, index=False)
    print(f"{len(s)} shapes priced at {commit[:10]} (base {BASE_COMMIT}) -> {OUT}")
    print(s.groupby(["model", "dtype", "q_rows"])[["pred_base_us", "pred_new_us"]].median().to_string())


if __name__ == "__main__":
    main()
