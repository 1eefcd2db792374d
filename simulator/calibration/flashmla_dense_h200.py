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


def measured(tag: str = "fp8", data_dir: Path = DATA_DIR, replicate: bool = False) -> pd.DataFrame | None:
    """The committed prediction joined to its newest H200 measurement (cold pools: kernel fmla_dense), err_pct signed."""
    suffix = f"_{tag}_replicate.csv" if replicate else f"_{tag}.csv"
    fs = sorted(Path(data_dir).glob(f"flashmla_dense_nvidia-h200_*{suffix}"))
    pf = Path(data_dir) / PREDICTION
    if not fs or not pf.is_file():
        return None
    m = pd.read_csv(fs[-1])
    m = m[m["kernel"] == "fmla_dense"]
    t = pd.read_csv(pf).merge(m[KEYS + ["median_us", "note"]], on=KEYS)
    t["err_pct"] = (t["pred_us"] / t["median_us"] - 1.0) * 100.0
    return t


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
