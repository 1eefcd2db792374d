"""FlashMLA's dense MLA decode over an fp8 cache on the H200: the kernel vLLM 0.33 runs for DeepSeek-V3 / R1 with
kv_cache_dtype fp8 on SM90 (its FLASHMLA backend -> vllm-project/FlashMLA's sm90 dense_fp8 extension, deepseek-ai/
FlashMLA PR #54's kernel: fp8 q and cache, pages of 64; FLASH_ATTN_MLA refuses fp8), measured through sgl_flash_mla
1.0.0's _C_legacy (lab/kernels/measure_flashmla_dense.py), bf16 rows beside it as the control the `flashmla` family's
terms were fitted on.

The FIRST LOOK of the fp8 kernel (priced before the call): the `flashmla` family (simulator/kernels/flashmla.py: the
bf16 kernel's split plan and fitted terms) at fp8 K/V bytes, what the vLLM profile prices (`mla_fp8: flashmla`).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from simulator.calibration import fit_production_topk_gemm as F

DATA_DIR = F.DATA_DIR
KEYS = ["batch", "s_q", "heads", "context", "kv"]
PREDICTION = "flashmla_dense_fp8_h200_prediction_2026-11-29.csv"
#: (batch, s_q, heads, context, kv): vLLM's MLA decode at TP8 (16 heads) and at 128 heads (TP1 / DP attention), MTP
#: verification rows (s_q 2), bf16 controls
SHAPES = ([(b, sq, h, c, "fp8") for b, sq, h, c in ((1, 1, 16, 32768), (8, 1, 16, 16384), (32, 1, 16, 8192),
                                                     (128, 1, 16, 4096), (256, 1, 16, 2048), (16, 2, 16, 16384))]
          + [(b, sq, h, c, "fp8") for b, sq, h, c in ((1, 1, 128, 65536), (8, 1, 128, 16384), (64, 1, 128, 4096),
                                                      (4, 2, 128, 32768))]
          + [(b, sq, h, c, "bf16") for b, sq, h, c in ((1, 1, 16, 32768), (32, 1, 16, 8192), (8, 1, 128, 16384),
                                                       (64, 1, 128, 4096))])


def regime(kv, heads) -> np.ndarray:
    """The grid's regimes (declared before its call)."""
    return np.array([("fp8" if k == "fp8" else "bf16 control") + (", 16 heads" if h <= 16 else ", 128 heads")
                     for k, h in zip(kv, heads)])


def family_us(df: pd.DataFrame, hw) -> np.ndarray:
    """The `flashmla` family's price of every row (us a call, the harness's CUDA-graph timing), K/V at the row's
    bytes (fp8 1, bf16 2)."""
    from simulator.calibration import fit_production_attention as FP
    from simulator.kernels.families import mla_launches
    from simulator.kernels.production import emit
    from simulator.ops import OpBuilder

    a = {c: df[c].to_numpy(float) for c in ("batch", "s_q", "heads", "context")}
    kvb = np.where(df["kv"].to_numpy() == "fp8", 1.0, 2.0)
    out = np.zeros(len(df))
    for k in np.unique(kvb):
        sel = kvb == k
        b = OpBuilder(int(sel.sum()))
        emit(b, mla_launches("flashmla", a["batch"][sel], a["s_q"][sel], a["context"][sel], a["heads"][sel], 512.0,
                             64.0, float(k), 64.0, hw.units), hw.units)
        out[sel] = FP.predict_us(b.build(), hw, hw.efficiency, int(sel.sum()))
    return out


def predict(hw) -> pd.DataFrame:
    """The grid priced before its call: pred_us (the `flashmla` family at the row's K/V bytes: the first look of the
    fp8 kernel, and the bf16 controls' transfer price)."""
    t = pd.DataFrame([dict(zip(KEYS, s)) for s in SHAPES])
    t["regime"] = regime(t["kv"], t["heads"])
    t["pred_us"] = family_us(t, hw)
    return t


def measured(tag: str = "fp8", data_dir: Path = DATA_DIR, replicate: bool = False,
             prediction: str = PREDICTION) -> pd.DataFrame | None:
    """A committed prediction (`prediction`) joined to its newest H200 measurement of the cold pools (kernel fmla_dense;
    fa3_sparse_mla_h200.joined: err_pct / main_err_pct signed)."""
    from simulator.calibration.fa3_sparse_mla_h200 import joined
    return joined(prediction, "flashmla_dense", tag, "fmla_dense", KEYS, data_dir, replicate)


#: the spans scan (LOOKED-AT: a fit set): fp8 and bf16 at the same shapes, every kernel of the call timed on its own
PREDICTION2 = "flashmla_dense_fp8_h200_scan_prediction_2026-11-29.csv"
SHAPES2 = [(b, 1, h, c, kv) for b, h, c in ((1, 16, 131072), (2, 16, 32768), (4, 16, 65536), (1, 128, 16384),
                                             (16, 16, 8192), (96, 128, 2048), (160, 16, 4096))
           for kv in ("fp8", "bf16")]


def predict2(hw) -> pd.DataFrame:
    """The spans scan priced as the first grid (predict)."""
    t = pd.DataFrame([dict(zip(KEYS, s)) for s in SHAPES2])
    t["regime"] = regime(t["kv"], t["heads"])
    t["pred_us"] = family_us(t, hw)
    return t


def measured_scan(data_dir: Path = DATA_DIR) -> pd.DataFrame | None:
    """The spans scan's committed prices joined to its measurement (measured) and spans (main_us, tail_us)."""
    t = measured("scan", data_dir, prediction=PREDICTION2)
    sp = sorted(Path(data_dir).glob("flashmla_dense_nvidia-h200_*_scan_spans.csv"))
    if t is None or not sp:
        return None
    return t.merge(pd.read_csv(sp[-1])[KEYS + ["main_us", "tail_us"]], on=KEYS)


def _with_fp8(terms: dict | None):
    """A context manager setting flashmla's fp8 candidate (FM_FP8_DENSE_COMBINE, FM_FP8_COMBINE_SPLIT_ITERS,
    FM_FP8_MMA_SCALE) from `terms` ({"combine": bool, "split_iters": x, "mma": y}; None: as committed)."""
    from contextlib import contextmanager

    from simulator.kernels import flashmla as FM

    @contextmanager
    def cm():
        before = (FM.FM_FP8_DENSE_COMBINE, FM.FM_FP8_COMBINE_SPLIT_ITERS, FM.FM_FP8_MMA_SCALE)
        if terms is not None:
            FM.FM_FP8_DENSE_COMBINE = bool(terms["combine"])
            FM.FM_FP8_COMBINE_SPLIT_ITERS, FM.FM_FP8_MMA_SCALE = float(terms["split_iters"]), float(terms["mma"])
        try:
            yield
        finally:
            FM.FM_FP8_DENSE_COMBINE, FM.FM_FP8_COMBINE_SPLIT_ITERS, FM.FM_FP8_MMA_SCALE = before
    return cm()


def fit_fp8_terms(hw=None) -> dict:
    """FM_FP8_COMBINE_SPLIT_ITERS and FM_FP8_MMA_SCALE under the fp8 combine's structure, by least squares on log time
    over the fp8 calls of the spans scan and of the first grid (LOOKED-AT: both measured and seen)."""
    from scipy.optimize import least_squares

    from hwmodels.spec import load_hardware

    hw = hw or load_hardware("H200")
    rows = pd.concat([measured_scan(), measured()], ignore_index=True)
    rows = rows[rows["kv"] == "fp8"].reset_index(drop=True)
    y = np.log(rows["median_us"].to_numpy(float))

    def res(v):
        with _with_fp8({"combine": True, "split_iters": v[0], "mma": v[1]}):
            return np.log(family_us(rows, hw)) - y
    r = least_squares(res, x0=[0.08, 1.0], bounds=([0.0, 0.3], [2.0, 3.0]))
    return {"split_iters": round(float(r.x[0]), 4), "mma": round(float(r.x[1]), 4),
            "rms_log": round(float(np.sqrt(np.mean(r.fun ** 2))), 4), "n": int(len(y))}


#: the fp8 candidate (committed before grid 2): the fp8 extension's combine (source) + fit_fp8_terms' constants
FP8_CANDIDATE = {"combine": True, "split_iters": 0.0821, "mma": 1.2172}
FP8_MAIN = {"combine": False, "split_iters": 0.0821, "mma": 1.2172}
PREDICTION3 = "flashmla_dense_fp8_h200_grid2_prediction_2026-11-29.csv"
#: grid 2 (blind: no earlier shape): fp8 calls at 16 / 128 heads, 1-200 requests, MTP rows
SHAPES3 = ([(b, sq, 16, c, "fp8") for b, sq, c in ((1, 1, 65536), (3, 1, 24576), (12, 1, 12288), (64, 1, 4096),
                                                   (200, 1, 3072), (6, 2, 32768))]
           + [(b, sq, 128, c, "fp8") for b, sq, c in ((1, 1, 32768), (2, 1, 65536), (24, 1, 8192), (48, 1, 2048),
                                                      (3, 2, 16384))])


def predict3(hw) -> pd.DataFrame:
    """Grid 2 priced before its call: pred_main_us (FP8_MAIN: the bf16 kernel at fp8 bytes, as the product prices vLLM's
    fp8 calls) and pred_us (FP8_CANDIDATE). Ship rule (declared here): the candidate ships if it meets more regimes,
    a tie by the lower pooled median."""
    t = pd.DataFrame([dict(zip(KEYS, s)) for s in SHAPES3])
    t["regime"] = regime(t["kv"], t["heads"])
    with _with_fp8(FP8_MAIN):
        t["pred_main_us"] = family_us(t, hw)
    with _with_fp8(FP8_CANDIDATE):
        t["pred_us"] = family_us(t, hw)
    t["ship_rule"] = "candidate (pred_us) ships if it meets more regimes than main (pred_main_us); a tie by the lower pooled median"
    return t
