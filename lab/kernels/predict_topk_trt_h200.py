"""Price the H200 TensorRT-LLM top-k grid before it is measured (simulator/calibration/topk_trtllm_h200.py).

The product as committed prices every row (the H100-SXM's fitted top-k terms on the H200 through
unmeasured_kinds_from); no candidate. Declared before the call: the new rows become TensorRT-LLM top-k's H200 STANDING
whatever their result; the transfer rows (grid 22's shapes) are judged beside the H100's own measurement of them.
The new shapes are checked against every committed top-k measurement first. Writes
hwmodels/calibration/data/production_kernels/topk_trtllm_h200_prediction_2026-11-28.csv (the H100-SXM's prices too,
`pred_h100_us`, for reference); lab/kernels/measure_topk_engines.py --shapes --only-listed reads it.

    python lab/kernels/predict_topk_trt_h200.py [--grid2 | --grid3 | --grid4]

--grid2: the second grid of the kernel's own dispatch (topk_trtllm_h200.NEW2_DECODE / NEW2_PREFILL, 28 new shapes, 4 a
regime), priced by the product as committed after LONE_L2_ROUND and TWO_LAUNCH_LEAD_SHARE shipped; declared before its
call as the kernel dispatch's H200 STANDING. Writes production_kernels/topk_trtllm_h200_grid2_prediction_2026-11-28.csv.

--grid3: the third grid (topk_trtllm_h200.NEW3_DECODE / NEW3_PREFILL, 28 new shapes, 4 a regime), priced by the product
as committed after STAGGERED_PARTNERS shipped; declared before its call as the kernel dispatch's H200 STANDING. Writes
production_kernels/topk_trtllm_h200_grid3_prediction_2026-11-28.csv.

--grid4: the fourth grid (topk_trtllm_h200.NEW4_DECODE / NEW4_PREFILL, 28 new shapes, 4 a regime), priced by the product
as committed after the on-chip rule shipped (topk_trtllm.ONCHIP_JOB); declared before its call as the kernel dispatch's
H200 STANDING. Writes production_kernels/topk_trtllm_h200_grid4_prediction_2026-11-29.csv.
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
from simulator.calibration import topk_engines as TE  # noqa: E402
from simulator.calibration import topk_trtllm_h200 as H  # noqa: E402

OUT = F.DATA_DIR / H.PREDICTION


def main() -> None:
    commit = head_or_exit(ROOT)
    for flag, new, pricer, name in (("--grid2", H.NEW2_DECODE + H.NEW2_PREFILL, H.predict2, H.PREDICTION2),
                                    ("--grid3", H.NEW3_DECODE + H.NEW3_PREFILL, H.predict3, H.PREDICTION3),
                                    ("--grid4", H.NEW4_DECODE + H.NEW4_PREFILL, H.predict4, H.PREDICTION4)):
        if flag not in sys.argv[1:]:
            continue
        again = [s for s in new if s in committed_topk()]
        if again:
            raise SystemExit(f"new shapes already measured: {again}")
        res = pricer(load_hardware("H200"))
        res["model_commit"] = commit
        res.to_csv(F.DATA_DIR / name, index=False, float_format="%.4f")
        print(f"{len(res)} rows priced at {commit[:10]} -> {F.DATA_DIR / name}")
        print(res.groupby("regime")["pred_us"].agg(["size", "median"]).round(2).to_string())
        return
    new = H.NEW_DECODE + H.NEW_PREFILL
    again = [s for s in new if s in committed_topk()]
    if again:
        raise SystemExit(f"new shapes already measured: {again}")
    assert len(set(H.NEW_DECODE)) == len(H.NEW_DECODE) and len(set(H.NEW_PREFILL)) == len(H.NEW_PREFILL)
    assert all(n > 2048 for _, _, n in new)
    h200, h100 = load_hardware("H200"), load_hardware("H100-SXM")
    res = H.predict(h200)
    res["pred_h100_us"] = TE.predict_trtllm(res, h100)
    res["model_commit"] = commit
    res.to_csv(OUT, index=False, float_format="%.4f")
    print(f"{len(res)} rows priced at {commit[:10]} -> {OUT}")
    print(res.groupby(["set", "regime"])[["pred_us", "pred_h100_us"]].agg(["size", "median"]).round(2).to_string())


if __name__ == "__main__":
    main()
