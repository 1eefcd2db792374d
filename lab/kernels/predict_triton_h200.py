"""Price the H200's vLLM Triton grid (lab/kernels/triton_decode_h200.py) BEFORE it is measured, by the product as
committed (the H100-SXM's triton_vllm terms on the H200; warm rows as the harness's, cold rows in the engine's state),
beside the same shapes priced on the H100-SXM (no H100 time). First checks that no shape is in any committed CSV of
either Triton family. Writes hwmodels/calibration/data/production_attention/triton_decode_h200_predictions.csv.

    python lab/kernels/predict_triton_h200.py
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from triton_blind_pricing import DATA, KEYS, committed_shapes  # noqa: E402

from hwmodels.spec import load_hardware  # noqa: E402
from simulator.calibration import fit_production_attention as FP  # noqa: E402

OUT = DATA / "triton_decode_h200_predictions.csv"


def main() -> None:
    import triton_decode_h200 as M

    s = pd.DataFrame(M.h200_shapes())
    old = committed_shapes()
    hit = s.merge(old.drop_duplicates(), on=list(KEYS), how="inner")
    if len(hit):
        raise SystemExit(f"{len(hit)} shapes already measured:\n{hit.to_string()}")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    for name, col in (("H200", "pred_us"), ("H100-SXM", "pred_h100_us")):
        hw = load_hardware(name)
        ops = FP.build_ops(s, hw.units, float(hw.smem_per_unit_bytes))
        s[col] = np.round(FP.predict_us(ops, hw, hw.efficiency, len(s)), 3)
    s["regime"] = FP.triton_blind8_regime(s)
    s["model_commit"] = commit
    s.to_csv(OUT, index=False)
    print(f"{len(s)} rows -> {OUT.relative_to(ROOT)} (model at {commit}); no shape in {len(old)} committed rows")
    print(s.groupby(["row_role", "regime"]).size().to_string())


if __name__ == "__main__":
    main()
