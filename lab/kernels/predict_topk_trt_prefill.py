"""Price the causal-prompt prefill top-k grid before it is measured (simulator/calibration/topk_trtllm_prefill.py): the
product's price of TensorRT-LLM's prefill entry over whole causal prompts (rows of the mean length), on the H200.
Declared before the call: the grid is the DSA prefill top-k approximation's H200 standing. Writes
hwmodels/calibration/data/production_kernels/topk_trtllm_prefill_prediction_2026-11-28.csv.

    python lab/kernels/predict_topk_trt_prefill.py
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _committed import head_or_exit  # noqa: E402
from predict_topk_fi_h200 import committed_topk  # noqa: E402

from hwmodels.spec import load_hardware  # noqa: E402
from simulator.calibration import fit_production_topk_gemm as F  # noqa: E402
from simulator.calibration import topk_trtllm_prefill as PF  # noqa: E402


def main() -> None:
    commit = head_or_exit(ROOT)
    again = [s for s in PF.SHAPES if s in committed_topk()]
    if again:
        raise SystemExit(f"shapes already measured: {again}")
    res = PF.predict(load_hardware("H200"))
    res["model_commit"] = commit
    out = F.DATA_DIR / PF.PREDICTION
    res.to_csv(out, index=False, float_format="%.4f")
    print(f"{len(res)} rows priced at {commit[:10]} -> {out}")
    print(res[["dist", "rows", "n", "regime", "pred_us"]].round(1).to_string(index=False))


if __name__ == "__main__":
    main()
