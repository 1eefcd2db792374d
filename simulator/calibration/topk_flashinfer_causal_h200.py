"""FlashInfer's top-k over whole causal prompts on the H200: the product's DSA prefill price judged on a third kernel.

SGLang's DSA top-k backend 'flashinfer' runs FlashInfer 0.6.4's ragged transform at prefill (topk_flashinfer.add_ops,
ragged; simulator/kernels/topk_production.py says which engine runs which). Over one sequence's chunk row i holds i + 1
keys. The product prices that launch as the DSA strategy prices every prefill top-k (simulator/strategies/dsa.py
prefill_topk_rows, PREFILL_TOPK_ROWS "causal": the P - k rows of more than k keys at their mean length; a row of <= k
keys selects them all, priced as free). Judged so far on TensorRT-LLM's prefill entry (its kernel model misses past the
L2) and SGLang's kernel (2 of 2, topk_sglang_h200.CAUSAL). Here FlashInfer's, priced before the call by the product as
committed (its H200 terms: the H100-SXM's, borrowed; the FlashInfer H200 grid met 14 of 14 with them), no candidate;
declared before the call: the grid is FlashInfer's causal-prompt H200 STANDING. Measured by
lab/kernels/measure_topk_engines.py kernel fi_topk_tri (lab/kernels/run_topk_fi_causal_h200_device.sh), row i's
length ceil((i + 1) n / R), offsets 0.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from hwmodels.spec import HardwareSpec
from simulator.calibration import fit_production_topk_gemm as F
from simulator.calibration import topk_engines as TE
from simulator.calibration import topk_flashinfer_grid7 as G7
from simulator.calibration import topk_flashinfer_grid12 as G12

#: whole causal prompts (R = P rows, the longest row P keys), P <= 32,768 (one indexer chunk); none of these P timed
#: before on any kernel
CAUSAL = [("recorded", p, p) for p in (4352, 6400, 7424, 8704, 10752, 13824, 19456, 26624)] + [("gaussian", 11776, 11776)]
KERNEL = "fi_topk_tri"
PREDICTION = "topk_flashinfer_h200_causal_prediction_2026-11-28.csv"


def regime(n) -> np.ndarray:
    """The grid's regimes (declared before the call): prompts of <= 8K / > 8K tokens."""
    return np.where(np.asarray(n, float) <= 8192, "causal prompt, P <= 8K", "causal prompt, P > 8K")


def predict(hw: HardwareSpec) -> pd.DataFrame:
    """CAUSAL priced as the product prices DSA prefill top-k with FlashInfer's ragged transform on `hw` (`pred_us`),
    with the (rows, n) the rule prices (`priced_rows`, `priced_n`) and FlashInfer's dispatch there (`fi_path`)."""
    from simulator.strategies.dsa import prefill_topk_rows

    out = []
    for d, r, n in CAUSAL:
        rows, length = prefill_topk_rows(1.0, np.array([float(n)]), 2048.0, "causal")
        t = G7.frame([(d, int(rows[0]), int(round(length[0])))], False, hw.units)
        t = t[t["kernel"] == TE.CSV_KERNEL["flashinfer"]].reset_index(drop=True)
        out.append({"family": "topk", "kernel": KERNEL, "dist": d, "rows": r, "n": n, "k": 2048,
                    "priced_rows": int(rows[0]), "priced_n": int(round(length[0])),
                    "fi_path": str(t["fi_path"].iloc[0]) if "fi_path" in t.columns else "",
                    "pred_us": float(G12.predict(t, hw)[0])})
    t = pd.DataFrame(out)
    t["regime"] = regime(t["n"])
    return t[F.SHAPE_KEYS + ["regime", "priced_rows", "priced_n", "fi_path", "pred_us"]]


def measured(data_dir: Path = F.DATA_DIR, replicate: bool = False) -> pd.DataFrame | None:
    """The committed prediction joined to its H200 measurement (None before it exists)."""
    return TE.measured_latest(PREDICTION, f"topk_engines_nvidia-h200_*_fi_causal{'_replicate' if replicate else ''}.csv",
                              data_dir)
