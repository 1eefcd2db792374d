"""Price FlashMLA's dense decode over an fp8 cache (and bf16 controls) BEFORE it is measured
(simulator/calibration/flashmla_dense_h200.py: the `flashmla` family at fp8 bytes, the vLLM profile's mla_fp8 price).
Writes hwmodels/calibration/data/production_kernels/flashmla_dense_fp8_h200_prediction_2026-11-29.csv with the model's
commit.

--scan: the spans scan (SHAPES2: fp8 and bf16 at the same shapes, a fit set), flashmla_dense_fp8_h200_scan_prediction_
2026-11-29.csv.

--grid2: grid 2 (SHAPES3, blind): the product's fp8 price against the fp8 candidate (the fp8 extension's combine + the
fitted terms), flashmla_dense_fp8_h200_grid2_prediction_2026-11-29.csv.

    python lab/kernels/predict_flashmla_dense.py [--scan | --grid2]
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _committed import head_or_exit  # noqa: E402

from hwmodels.spec import load_hardware  # noqa: E402
from simulator.calibration import flashmla_dense_h200 as S  # noqa: E402


def main() -> None:
    commit = head_or_exit(ROOT)
    flag = next((a for a in sys.argv[1:] if a in ("--scan", "--grid2")), "")
    pricer, name = {"--scan": (S.predict2, S.PREDICTION2), "--grid2": (S.predict3, S.PREDICTION3),
                    "": (S.predict, S.PREDICTION)}[flag]
    res = pricer(load_hardware("H200"))
    res["model_commit"] = commit
    res.to_csv(S.DATA_DIR / name, index=False, float_format="%.4f")
    print(f"{len(res)} rows priced at {commit[:10]} -> {S.DATA_DIR / name}")
    print(res.groupby("regime")["pred_us"].median().round(2).to_string())


if __name__ == "__main__":
    main()
