"""Price the ninth CUDA-core decode blind grid on the H200 before it is measured.

The grid (lab/kernels/measure_production_attention.py --grid fi_dec_blind9) tests the merge path's per-item SM issue
(simulator/kernels/flashinfer.py FI_MERGE_PATH_SM_DECODE). Two models price every shape:

- main: the product as committed (the H200 with the H100-SXM's fitted FlashInfer decode terms, unmeasured_kinds_from);
- new: FI_MERGE_PATH_SM_DECODE on, the decode kinds' terms (attn_fi_decode, attn_fi_decode_fp8kv and the merge's
  per-state term) refitted with it on the H100-SXM's own fit rows (simulator/calibration/fit_production_attention.py
  fit), carried to the H200 the same way.

Both are also priced on the H100-SXM for reference. Each shape's regime comes from the plan the model reproduces
(FlashInfer's split: S partial states per request). Every shape is checked against the committed measurements first
(no (heads, K/V heads, dtype, batch, context, page) already measured). Writes
hwmodels/calibration/data/production_attention/production_attention_fi_dec_blind9_predictions.csv.

    python lab/kernels/predict_fi_dec_blind9.py
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
from simulator.calibration.fit import efficiency_with  # noqa: E402
from simulator.kernels import flashinfer as FI  # noqa: E402

OUT = FP.DATA_DIR / "production_attention_fi_dec_blind9_predictions.csv"
KEYS = ("heads", "kv_heads", "dtype", "batch", "context", "page_size")


def refit_terms(merge_path_sm: bool) -> dict[str, float]:
    """The decode groups' fitted terms (dotted keys) with FI_MERGE_PATH_SM_DECODE set so, on the H100-SXM's fit rows."""
    old = FI.FI_MERGE_PATH_SM_DECODE
    FI.FI_MERGE_PATH_SM_DECODE = merge_path_sm
    try:
        f, g = FP.latest(FP.DATA_DIR)
        df = FP.load(f)
        df = df[df["family"] == "fi_decode"].reset_index(drop=True)
        _, meta = FP.fit(df, load_hardware("H100-SXM"), pd.read_csv(g) if g is not None else None)
    finally:
        FI.FI_MERGE_PATH_SM_DECODE = old
    return {**meta["fi_decode"]["params"], **meta["fi_decode_fp8kv"]["params"]}


def price(shapes: pd.DataFrame, device: str, merge_path_sm: bool, terms: dict | None) -> np.ndarray:
    hw = load_hardware(device)
    eff = efficiency_with(hw.efficiency, terms) if terms else hw.efficiency
    old = FI.FI_MERGE_PATH_SM_DECODE
    FI.FI_MERGE_PATH_SM_DECODE = merge_path_sm
    try:
        ops = FP.build_ops(shapes, hw.units, float(hw.smem_per_unit_bytes or 233472))
        return np.round(FP.predict_us(ops, hw, eff, len(shapes)), 3)
    finally:
        FI.FI_MERGE_PATH_SM_DECODE = old


def committed_shapes() -> set[tuple]:
    """(heads, kv_heads, dtype, batch, context, page) of every committed fi_decode measurement."""
    return measured_shapes(FP.DATA_DIR, ("fi_decode",), KEYS)


def regime(S: float, dtype: str) -> str:
    if S <= 1:
        return "S = 1, copy path"
    if S == 2:
        return f"S = 2, {dtype}"
    return "S >= 3, middle"


def main() -> None:
    import measure_production_attention as M

    commit = head_or_exit(ROOT)
    shapes = pd.DataFrame(M.fi_dec_blind9_shapes("fi_decode"))
    seen = committed_shapes()
    again = [k for k in shapes[list(KEYS)].astype(str).itertuples(index=False) if tuple(k) in seen]
    if again:
        raise SystemExit(f"{len(again)} shapes already measured: {again[:5]}")
    kvb = np.where(shapes["dtype"] == "fp8", 1.0, 2.0)
    _, info = FI.fi_decode(*(shapes[c].to_numpy(float) for c in ("batch", "context", "heads", "kv_heads",
                                                                   "head_dim")), kvb,
                           shapes["page_size"].to_numpy(float), 132, 233472.0)
    shapes["splits"] = info["splits"]
    shapes["regime"] = [regime(s, d) for s, d in zip(shapes["splits"], shapes["dtype"])]
    new_terms = refit_terms(True)
    shapes["pred_main_us"] = price(shapes, "H200", False, None)
    shapes["pred_new_us"] = price(shapes, "H200", True, new_terms)
    shapes["pred_main_h100_us"] = price(shapes, "H100-SXM", False, None)
    shapes["pred_new_h100_us"] = price(shapes, "H100-SXM", True, new_terms)
    shapes["new_terms"] = ";".join(f"{k}={v:.6g}" for k, v in new_terms.items())
    shapes["model_commit"] = commit
    shapes.to_csv(OUT, index=False)
    print(f"{len(shapes)} shapes priced at {commit[:10]} -> {OUT}")
    print(shapes.groupby("regime")[["pred_main_us", "pred_new_us"]].median().round(2).to_string())
    mism = shapes[shapes["group"] != shapes["regime"]]
    if len(mism):
        print(f"{len(mism)} shapes whose plan differs from their intended group (the regime follows the plan):")
        print(mism[["model", "dtype", "batch", "context", "group", "splits"]].to_string(index=False))


if __name__ == "__main__":
    main()
