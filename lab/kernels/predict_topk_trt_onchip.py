"""Price TensorRT-LLM's top-k on-chip grid (simulator/calibration/topk_trtllm_onchip.py ONCHIP_GRID) BEFORE it is
measured on one H200: main (the product as committed) and the candidate (ONCHIP_CANDIDATE: the job's rounds at the L2
round whatever the sweeps' hit share, the co-resident, knee and narrow terms refitted under it). First re-runs the
candidate's fit (fit_onchip on the H100's named fit rows: it must give ONCHIP_CANDIDATE) and checks that no shape was
measured before. Declared before the call: the candidate ships if it meets more of the grid's regimes than main, a tie
by the lower pooled median |error|; the grid holds the H200 STANDING of the prefill entry, the engine's two-launch
split, the padded buffer and the kernel dispatch. Writes
hwmodels/calibration/data/production_kernels/topk_trtllm_onchip_prediction_2026-11-29.csv.

    python lab/kernels/predict_topk_trt_onchip.py [--no-fit]
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
from simulator.calibration import topk_trtllm_onchip as OC  # noqa: E402


def _close(a, b, tol=2e-3) -> bool:
    if isinstance(a, dict):
        return set(a) == set(b) and all(_close(a[k], b[k], tol) for k in a)
    return abs(float(a) - float(b)) <= tol * max(1.0, abs(float(b)))


def main() -> None:
    commit = head_or_exit(ROOT)
    again = [s for _, _, shapes in OC.ONCHIP_GRID for s in shapes if s in committed_topk()]
    if again:
        raise SystemExit(f"shapes already measured: {again}")
    if "--no-fit" not in sys.argv[1:]:
        fit = OC.fit_onchip(load_hardware("H100-SXM"))
        print("fit_onchip:", {k: v for k, v in fit.items() if k != "fits"})
        print("fits:", fit["fits"])
        for k in ("pair_shares", "queue_p_shared", "narrow"):
            if not _close(fit[k], OC.ONCHIP_CANDIDATE[k]):
                raise SystemExit(f"the fit gives {k} = {fit[k]}, the candidate has {OC.ONCHIP_CANDIDATE[k]}")
    res = OC.predict(load_hardware("H200"))
    res["model_commit"] = commit
    out = F.DATA_DIR / OC.PREDICTION
    res.to_csv(out, index=False, float_format="%.4f")
    print(f"{len(res)} rows priced at {commit[:10]} -> {out}")
    print(res[["kernel", "dist", "rows", "n", "regime", "pred_main_us", "pred_us"]].round(1).to_string(index=False))


if __name__ == "__main__":
    main()
