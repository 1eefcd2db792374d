"""Price the H200 verification grid (lab/kernels/measure_production_attention.py --grid fi_tc_h200) before it is measured.

FlashInfer's FA2 prefill kernel at 2-4 query rows (fi_verify), every (K/V dtype, context, batch) regime of the H200
transfer grid's verification rows with 4-7 new shapes each: that grid held one row in six of its eight regimes, and
its one miss (fp8 middle mid, -10.8 %) was one row. One model: the product as committed (the H100-SXM's fitted FA2
kinds on the H200, unmeasured_kinds_from), no candidate. Declared before the call: this grid becomes fi_verify's H200
STANDING whatever its result (the transfer grid's rows stay in the report as they were judged). Every shape is checked
against the committed measurements first. Writes
hwmodels/calibration/data/production_attention/production_attention_fi_tc_h200_predictions.csv (also the H100-SXM's
price of each shape, for reference).

    python lab/kernels/predict_fi_tc_h200.py
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "lab" / "kernels"))
sys.path.insert(0, str(ROOT / "lab"))

from _committed import head_or_exit, measured_shapes  # noqa: E402

from hwmodels.spec import load_hardware  # noqa: E402
from simulator.calibration import fit_production_attention as FP  # noqa: E402

OUT = FP.DATA_DIR / "production_attention_fi_tc_h200_predictions.csv"
KEYS = ("family", "heads", "kv_heads", "dtype", "batch", "q_rows", "context", "page_size")


def committed_shapes() -> set[tuple]:
    """KEYS of every committed fi_verify / fi_tc measurement (one kernel, two family names)."""
    return measured_shapes(FP.DATA_DIR, ("fi_verify", "fi_tc"), KEYS, as_family="fi_verify")


def price(shapes: pd.DataFrame, device: str) -> np.ndarray:
    hw = load_hardware(device)
    ops = FP.build_ops(shapes, hw.units, float(hw.smem_per_unit_bytes or 233472))
    return np.round(FP.predict_us(ops, hw, hw.efficiency, len(shapes)), 3)


def main() -> None:
    import measure_production_attention as M

    commit = head_or_exit(ROOT)
    shapes = pd.DataFrame(M.fi_tc_h200_shapes("fi_verify"))
    seen = committed_shapes()
    again = [k for k in shapes[list(KEYS)].astype(str).itertuples(index=False) if tuple(k) in seen]
    if again:
        raise SystemExit(f"{len(again)} shapes already measured: {again[:5]}")
    shapes["regime"] = (shapes["dtype"] + " " + pd.Series(FP.context_regime(shapes["context"])) + " "
                        + pd.Series(FP.batch_regime(shapes["batch"])))
    assert (shapes["regime"] == shapes["group"]).all(), "a shape outside its intended regime"
    shapes["pred_us"] = price(shapes, "H200")
    shapes["pred_h100_us"] = price(shapes, "H100-SXM")
    shapes["model_commit"] = commit
    shapes.to_csv(OUT, index=False)
    print(f"{len(shapes)} shapes priced at {commit[:10]} -> {OUT}")
    print(shapes.groupby("regime")[["pred_us", "pred_h100_us"]].median().round(2).to_string())


if __name__ == "__main__":
    main()
