"""Price the blind H200 grid of TensorRT-LLM's lone-CTA L2 round before it is measured
(simulator/calibration/topk_trtllm_lone.py): 28 new shapes of the torch op's dispatch (what TensorRT-LLM's engine runs),
main = the product as committed (LONE_L2_ROUND 1.0), candidate = LONE_L2_ROUND_CANDIDATE (fitted on the looked-at lone
rows; the fit is re-run here and must give the committed candidate). Declared before the call: the candidate ships if it
meets more of the grid's regimes than main (a tie: the lower pooled median |error|), and the grid becomes the op path's
H200 STANDING whichever model ships. Writes hwmodels/calibration/data/production_kernels/
topk_trtllm_lone_prediction_2026-11-28.csv.

    python lab/kernels/predict_topk_trt_lone.py
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
from simulator.calibration import topk_trtllm_lone as L  # noqa: E402
from simulator.kernels import topk_trtllm as TK  # noqa: E402

OUT = F.DATA_DIR / L.PREDICTION


def main() -> None:
    commit = head_or_exit(ROOT)
    again = [s for s in L.BLIND if s in committed_topk()]
    if again:
        raise SystemExit(f"shapes already measured: {again}")
    assert len(set(L.BLIND)) == len(L.BLIND)
    fit = L.fit()
    print(f"fit on {fit['rows']} looked-at lone rows: rms log error {fit['rms']}")
    if fit["value"] != TK.LONE_L2_ROUND_CANDIDATE:
        raise SystemExit(f"the fit gives {fit['value']}, the committed candidate is {TK.LONE_L2_ROUND_CANDIDATE}")
    res = L.predict_blind(load_hardware("H200"), TK.LONE_L2_ROUND_CANDIDATE)
    res["model_commit"] = commit
    res.to_csv(OUT, index=False, float_format="%.4f")
    print(f"{len(res)} rows priced at {commit[:10]} -> {OUT}")
    print(res.groupby("regime")[["pred_main_us", "pred_us"]].agg(["size", "median"]).round(2).to_string())


if __name__ == "__main__":
    main()
