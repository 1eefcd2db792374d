"""Fit the compute efficiency of attention kernels to causal prefill measurements (measure_prefill_attn.py).

Decode attention (measure.py's decode_attn family) is bandwidth-bound, so its fit leaves
compute.attention at the bound it starts from; long causal prefills are compute-bound and pin it. Each
row is priced as simulator/strategies/dense.py prices prefill (flops 4 B Hq d P(P+1)/2, Q/K/V read and O
written once, B Hq P/128 CTAs) with the device's fitted attention memory efficiency and fixed time, and
`compute.attention` is the one parameter fitted.

Fitted on the cuDNN rows (the backend whose Hopper kernels are closest to what engines run there:
FlashAttention-3 / FlashInfer; measure.py's decode fit uses cuDNN too) of prompts >= 4096 tokens;
shorter prompts and the FlashAttention-2 / memory-efficient backends are reported as checks (other
kernels: FA2 reaches ~55 % of cuDNN's rate on Hopper). The value goes into
calibration/fitted/<device>.yaml as compute.attention, with a `prefill_attn` block saying where it came
from; `sparsesim calibrate fit` never refits it (decode rows cannot identify it) and keeps it in the file.
The fit starts from the datasheet (uncalibrated memory efficiency and fixed time of attention): a long
causal prefill is compute-bound, so those terms move the fitted value by well under 1 %.

Refusal bound (`check_result`): the fit rows' median |error| <= 15 % and p90 <= 30 % (committed H100 / H200:
2.8 / 3.5 % median), and compute.attention in (0, 1.2] (checks.check_physical).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from hwmodels import datafiles as DF
from hwmodels.errors import SparsesimError
from hwmodels.roofline import price
from hwmodels.spec import HardwareSpec
from simulator.calibration import checks as C
from simulator.calibration.fit import efficiency_with
from simulator.combo import AttentionLayout, TargetFacts
from simulator.ops import MaskedBuilder, OpBuilder
from simulator.strategies.base import StepShape
from simulator.strategies.dense import DenseAttention

FIT_BACKEND = "cudnn"
FIT_MIN_SEQ = 4096


def load(path: str | Path) -> pd.DataFrame:
    """Read a measure_prefill_attn.py CSV strictly (one line per malformed file)."""
    need = ("backend", "batch", "heads", "kv_heads", "head_dim", "seq", "median_us")
    df, _ = C.read_csv(path, need, "a measure_prefill_attn.py CSV")
    C.positive_columns(df, np.ones(len(df), bool), need[1:6], str(path), "prefill")
    df = C.numeric(df, need[1:6])
    df["backend"] = df["backend"].astype(str).str.strip()
    df.attrs["file"] = str(path)
    return df


def fit_mask(df: pd.DataFrame) -> np.ndarray:
    return ((df["backend"] == FIT_BACKEND) & (df["seq"] >= FIT_MIN_SEQ)).to_numpy()


def predict_us(df: pd.DataFrame, hw: HardwareSpec, eff) -> np.ndarray:
    b = OpBuilder(len(df))
    kern = DenseAttention()
    for (h, kv, d), g in df.groupby(["heads", "kv_heads", "head_dim"]):
        mask = np.zeros(len(df), bool)
        mask[g.index.to_numpy()] = True
        shape = StepShape(batch=np.where(mask, df["batch"], 1.0).astype(float), query_rows=np.ones(len(df)),
                          context=np.where(mask, df["seq"], 1.0).astype(float), phase="prefill",
                          layers=1.0)
        # a bare bf16 kernel (prefill reads no device facts)
        lay = AttentionLayout.one_device(int(h), int(kv), int(d), 2.0, TargetFacts("hopper", 0, None))
        kern.layout_prefill_ops(MaskedBuilder(b, mask), lay, shape)
    ops = b.build()
    t = price(ops, hw.with_efficiency(eff), "graph") - hw.launch_graph_s
    return np.bincount(ops.setting, weights=t, minlength=len(df)) * 1e6


def fit(df: pd.DataFrame, hw: HardwareSpec) -> tuple[float, pd.DataFrame]:
    rows = fit_mask(df)
    if rows.sum() < 3:
        raise SparsesimError(f"needs >= 3 {FIT_BACKEND} rows with seq >= {FIT_MIN_SEQ}; found {int(rows.sum())}",
                             file=df.attrs.get("file"))
    sub = df[rows].reset_index(drop=True)
    meas = sub["median_us"].to_numpy(float)
    base = hw.efficiency

    def resid(x):
        return np.log(predict_us(sub, hw, efficiency_with(base, {"compute.attention": x[0]})) / meas)

    r = least_squares(resid, np.array([0.6]), bounds=([0.05], [1.0]))
    c = float(r.x[0])
    pred = predict_us(df, hw, efficiency_with(base, {"compute.attention": c}))
    group = np.where(rows, f"fit: {FIT_BACKEND}, prompts >= {FIT_MIN_SEQ}",
                     np.where(df["backend"] == FIT_BACKEND, f"check: {FIT_BACKEND}, prompts < {FIT_MIN_SEQ}",
                              "check: " + df["backend"].astype(str) + " (another kernel)"))
    chk = df.assign(predicted_us=pred, error_pct=(pred / df["median_us"] - 1) * 100, group=group)
    return c, chk


def check_result(compute: float, chk: pd.DataFrame, file: str) -> None:
    """Refuse an unphysical value or fit rows beyond their bound (module docstring)."""
    C.check_physical({"compute.attention": compute}, file)
    e = chk[chk["group"].astype(str).str.startswith("fit")]["error_pct"].abs().to_numpy(float)
    med, p90 = float(np.median(e)), float(np.percentile(e, 90))
    if not (med <= 15.0 and p90 <= 30.0):
        raise C.CalibrationError(f"the prefill fit misses its bound: median |error| {med:.3g} % (bound 15 %), p90 "
                                 f"{p90:.3g} % (bound 30 %); nothing was written", file=file)


def write(compute: float, target: str, data_file: str, measured_on: str, table: pd.DataFrame,
          out_dir: Path) -> Path:
    p = Path(out_dir) / f"{target}.yaml"
    borrowed = "" if measured_on == target else f" (measured on {measured_on}: borrowed)"
    own = {"compute": {"attention": round(compute, 4)}, "prefill_attn": {
        "source": f"simulator/calibration/fit_prefill.py on {DF.name(data_file)}{borrowed}: compute.attention "
                  f"from causal prefill ({FIT_BACKEND}, prompts >= {FIT_MIN_SEQ})",
        "compute_attention": round(compute, 4),
        "errors_pct": table.to_dict("records"),
    }}
    if not p.exists():
        own["source"] = f"prefill fit for {target}"
    return C.write_checked(p, C.merge_into(p, own, {"compute": ("attention",), "prefill_attn": None}), "")
