"""FlashMLA's sparse decode (DeepSeek-V3.2's DSA attention as SGLang runs it on Hopper) against the product's price:
the first H200 grid.

The DSA strategy (simulator/strategies/dsa.py decode_ops) prices the sparse MLA of a decode step with the generic
`attention` kind (absorbed MLA over T = min(N, k) gathered latent entries, one op plus a combine where it splits; its
split size an ASSUMPTION until calibrated) and its heads per device, H / TP, as they are. The kernel that runs it in
SGLang on SM90 is FlashMLA's sparse decode (sgl_flash_mla 1.0.0's frozen csrc_legacy kernels, V3.2 KV format, 656
bytes a token): query heads 64 or 128 only (SGLang pads fewer to 64), the scheduler's split of each row's k indices
over the SMs, a combine. This grid times that kernel (lab/kernels/measure_flashmla_sparse.py; cold K/V, the engine's
state, and warm) at DeepSeek-V3.2's decode shapes on the H200 and prices each shape as the product does today (no
candidate): the FIRST LOOK of the product's DSA attention against the kernel users run, committed before the call.
The shapes: TP 1 / 2 / 8 (128 / 64 / 16 heads a GPU, the kernel at 128 / 64 / 64), batch 1-128, s_q 1 (plain decode)
and 2 (one MTP draft), context 8K and 64K, k 2048.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from hwmodels.roofline import price
from hwmodels.spec import HardwareSpec
from simulator.calibration import fit_production_topk_gemm as F

MODEL = "DeepSeek-V3.2-Exp"
TOPK = 2048
PREDICTION = "flashmla_sparse_h200_prediction_2026-11-28.csv"
#: (tp, batch, s_q, context)
SHAPES = [(tp, b, sq, n) for tp in (1, 2, 8) for b in (1, 4, 16, 32, 64, 128) for sq in (1, 2) for n in (8192, 65536)]


def kernel_heads(tp: int) -> int:
    """The query heads the kernel runs at TP `tp`: DeepSeek-V3.2's 128 / tp, padded up to 64 (the kernel takes 64 or
    128: SGLang pads)."""
    return max(64, 128 // int(tp))


def regime(tp, batch) -> np.ndarray:
    """The grid's regimes (declared before the call): the kernel's heads (128 / 64 / 64 padded from 16) x batch
    (<= 16 / >= 32)."""
    tp, batch = np.asarray(tp), np.asarray(batch)
    h = np.where(tp == 1, "128 heads (TP1)", np.where(tp == 2, "64 heads (TP2)", "16 heads padded to 64 (TP8)"))
    return np.array([f"{a}, batch {'<= 16' if b <= 16 else '>= 32'}" for a, b in zip(h, batch)])


def product_us(hw: HardwareSpec, tp: int, batch: int, s_q: int, context: int) -> float:
    """The product's price of one layer's sparse MLA (the DSA strategy's `attention` and `attention_combine` ops) for
    one decode step of `batch` sequences with `s_q` query rows each (s_q 2: one MTP draft) at `context`, in us."""
    from dataclasses import replace

    from simulator.combo import make_combo
    from simulator.pricing import decode_ops
    from simulator.strategies.base import parse_axis

    c = make_combo(hw.name, MODEL, kv_dtype="fp8", tp=int(tp), launch="graph", attention="dense")
    spec = "none" if s_q == 1 else {"mtp": {"k": int(s_q) - 1}}
    c = replace(c, attention=parse_axis("attention", ["dsa"])[0], topk=parse_axis("topk", ["radix"])[0],
                speculation=parse_axis("speculation", [spec])[0])
    ops, _ = decode_ops(c, np.array([float(batch)]), np.array([float(context)]))
    names = np.asarray(ops.names, dtype=object)[ops.name_id]
    sec = price(ops, hw, "graph") - hw.launch_graph_s * (ops.count if hasattr(ops, "count") else 1.0)
    keep = np.isin(names, ["attention", "attention_combine"])
    # per layer: the target model's layers (an MTP draft module's own layer aside: count > 1 rows only)
    per = sec[keep] / np.maximum(ops.count[keep], 1.0)
    return float(per[ops.count[keep] > 1].sum() * 1e6)


def frame() -> pd.DataFrame:
    rows = []
    for tp, b, sq, n in SHAPES:
        rows.append({"tp": tp, "batch": b, "s_q": sq, "heads": kernel_heads(tp), "heads_dev": 128 // tp, "topk": TOPK,
                     "context": n})
    t = pd.DataFrame(rows)
    t["regime"] = regime(t["tp"], t["batch"])
    return t


def predict(hw: HardwareSpec) -> pd.DataFrame:
    """Every shape priced as the product prices DSA decode attention today (`pred_us`, per layer)."""
    t = frame()
    t["pred_us"] = [product_us(hw, tp, b, sq, n) for tp, b, sq, n in zip(t["tp"], t["batch"], t["s_q"], t["context"])]
    return t


def measured(kernel: str = "fmla_sparse", data_dir: Path = F.DATA_DIR) -> pd.DataFrame | None:
    """The committed prediction joined to the newest H200 measurement of `kernel` (None before it exists)."""
    files = sorted(Path(data_dir).glob("flashmla_sparse_nvidia-h200_*_grid1.csv"))
    if not files:
        return None
    p = pd.read_csv(Path(data_dir) / PREDICTION)
    m = pd.read_csv(files[-1])
    m = m[m["kernel"] == kernel]
    return p.merge(m[["batch", "s_q", "heads", "topk", "context", "median_us", "note"]],
                   on=["batch", "s_q", "heads", "topk", "context"], how="inner")
