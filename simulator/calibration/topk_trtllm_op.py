"""TensorRT-LLM's top-k as its engine runs it: the torch op's dispatch (simulator/kernels/topk_trtllm.py torch_op), priced
from its source before it was ever timed (the first look), and the kernel's own dispatch beside it at the same shapes.

TensorRT-LLM's DSA indexer calls `torch.ops.trtllm.indexer_topk_decode(logits, seq_lens, indices, next_n, topk)`, whose
C++ op (cpp/tensorrt_llm/thop/IndexerTopKOp.cpp @ 07339e94) passes splitWorkThreshold = 200,000 and no done counter:
below 200,000 columns every row is one CTA (where the kernel's adaptive tiers split rows <= 8 at >= 65,536), at or above
it the two-launch split (10 CTAs of 512 threads a row, then a 1024-thread merge launch; the kernel's tiers run rows
>= 128 as single CTAs and otherwise the fused split). The H100 grids 5-22 timed the kernel's tiers only (the launcher
lab/kernels/trt_topk_launch.cu's trt_topk_launch); this grid times both on the H200 (trt_topk_op_launch: the op's
tiers), 31 shapes in no committed top-k CSV:

- SINGLE_FEW: 1-8 rows of 74K-186K scores: one CTA a row under the op, the fused split under the kernel's tiers;
- SPLIT_FEW / SPLIT_MID: 1-16 / 17-127 rows of >= 200K: the op's two-launch split beside the kernel's fused split;
- SPLIT_MANY: 140-300 rows of >= 200K: the op's two-launch split, the kernel's tiers' single CTAs;
- CONTROLS: single CTAs under both (< 65,536 columns, or 9-63 rows below 200,000).

Prices: `pred_us` the product as committed (the op rows: the engine's dispatch, its two-launch merge priced from the
source with the fused merge's terms, add_merge_launch; the kernel rows: the shipped model), on the H200 (the H100-SXM's
top-k terms through unmeasured_kinds_from) and `pred_h100_us` on the H100-SXM for reference; written by
lab/kernels/predict_topk_trt_op.py to production_kernels/topk_trtllm_op_prediction_2026-11-28.csv before the call.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from hwmodels.spec import HardwareSpec
from simulator.calibration import fit_production_topk_gemm as F
from simulator.calibration import topk_engines as TE
from simulator.calibration import topk_trtllm_h200 as H
from simulator.kernels import topk_trtllm as TK

PREDICTION = "topk_trtllm_op_prediction_2026-11-28.csv"

SINGLE_FEW = ([("recorded", r, n) for r, n in ((1, 74000), (1, 165000), (2, 118000), (3, 186000), (4, 95000),
                                              (6, 140000), (8, 175000))]
              + [("gaussian", 5, 130000), ("uniform", 7, 82000)])
SPLIT_FEW = ([("recorded", r, n) for r, n in ((1, 240000), (1, 610000), (2, 430000), (4, 330000), (8, 780000),
                                             (12, 270000), (16, 515000))]
             + [("gaussian", 3, 950000), ("uniform", 6, 360000)])
SPLIT_MID = ([("recorded", r, n) for r, n in ((24, 230000), (40, 450000), (64, 350000), (96, 260000))]
             + [("gaussian", 50, 300000), ("uniform", 80, 220000)])
SPLIT_MANY = [("recorded", 140, 215000), ("recorded", 200, 280000), ("recorded", 300, 240000), ("gaussian", 180, 330000)]
CONTROLS = [("recorded", 2, 45000), ("recorded", 12, 60000), ("recorded", 40, 120000)]
SHAPES = SINGLE_FEW + SPLIT_FEW + SPLIT_MID + SPLIT_MANY + CONTROLS


#: the second op grid (priced after the first was judged, with the merge launch's waves mended and LONE_L2_ROUND
#: shipped): the two-launch split at 17-300 rows, part 1's 512-thread slices 2-20 per SM, 12 new shapes
SPLIT_BLIND = ([("recorded", r, n) for r, n in ((18, 260000), (30, 380000), (45, 240000), (56, 520000), (72, 300000),
                                               (110, 210000), (128, 260000), (160, 230000), (220, 250000),
                                               (260, 205000))]
               + [("gaussian", 36, 340000), ("uniform", 150, 280000)])
SPLIT_PREDICTION = "topk_trtllm_op_split_prediction_2026-11-28.csv"


def split_regime(rows, n, sms: float = 132.0) -> np.ndarray:
    """The second op grid's regimes (declared before the call): part 1's CTAs per SM, 2-3 / 4-8 / >= 9."""
    with TK.torch_op():
        c = TK.ctas_per_sm(np.asarray(rows, float), np.asarray(n, float), sms)
    return np.where(c <= 3, "two-launch split, part 1 at 2-3 CTAs per SM",
                    np.where(c <= 8, "two-launch split, part 1 at 4-8 CTAs per SM",
                             "two-launch split, part 1 at >= 9 CTAs per SM"))


def predict_split(hw: HardwareSpec) -> pd.DataFrame:
    """SPLIT_BLIND's op rows priced by the product as committed on `hw` (`pred_us`)."""
    t = TE._trtllm_frame(SPLIT_BLIND)
    t["kernel"] = TE.CSV_KERNEL["trtllm_op"]
    t["pred_us"] = TE.predict_trtllm(t, hw)
    t["regime"] = split_regime(t["rows"], t["n"], hw.units)
    return t[F.SHAPE_KEYS + ["regime", "pred_us"]]


def op_regime(rows, n) -> np.ndarray:
    """The op rows' regimes (declared before the call), from the op's launch: one CTA a row at 1-8 rows where the kernel's
    tiers split (65,536-199,999 columns); the two-launch split at 1-16 / 17-127 / >= 128 rows; single CTAs both
    dispatches agree on (controls)."""
    rows, n = np.asarray(rows, float), np.asarray(n, float)
    split = n >= TK.OP_SPLIT
    return np.where(split, np.where(rows <= 16, "two-launch split, 1-16 rows",
                                    np.where(rows < 128, "two-launch split, 17-127 rows",
                                             "two-launch split, >= 128 rows")),
                    np.where((rows <= 8) & (n >= 65536), "single CTA where the kernel splits, 1-8 rows",
                             "single CTA under both (controls)"))


def frame() -> pd.DataFrame:
    """Every shape twice: the op (CSV kernel trt_topk_op) and the kernel's own dispatch (trt_topk)."""
    t = TE._trtllm_frame(SHAPES)
    op = t.copy()
    op["kernel"] = TE.CSV_KERNEL["trtllm_op"]
    return pd.concat([op, t], ignore_index=True)


def predict(hw: HardwareSpec) -> pd.DataFrame:
    """Both kernels' rows priced by the product as committed on `hw` (`pred_us`), their regimes (op rows: op_regime;
    kernel rows: the H200 grid's regime) and each launch's blocks per row and threads."""
    t = frame()
    t["pred_us"] = TE.predict_trtllm(t, hw)
    op = (t["kernel"] == TE.CSV_KERNEL["trtllm_op"]).to_numpy()
    t["regime"] = np.where(op, op_regime(t["rows"], t["n"]), H.regime(t["kernel"], t["rows"], t["n"]))
    with TK.torch_op():
        nb_op, th_op = TK.blocks_per_row(t["rows"], t["n"]), TK.block_threads(t["rows"], t["n"])
    t["blocks_per_row"] = np.where(op, nb_op, TK.blocks_per_row(t["rows"], t["n"]))
    t["threads"] = np.where(op, th_op, TK.block_threads(t["rows"], t["n"]))
    return t[F.SHAPE_KEYS + ["regime", "blocks_per_row", "threads", "pred_us"]]


#: grid -> (prediction file, measurement tag): the first op grid, the second (SPLIT_BLIND), the third (LEAD_BLIND)
GRIDS = {"first": (PREDICTION, "trt_op"), "split": (SPLIT_PREDICTION, "trt_opsplit"),
         "lead": ("topk_trtllm_op_lead_prediction_2026-11-28.csv", "trt_oplead"),
         "width": ("topk_trtllm_op_width_prediction_2026-11-28.csv", "trt_opwidth")}


def measured(data_dir: Path = F.DATA_DIR, replicate: bool = False, split: bool = False,
             grid: str | None = None) -> pd.DataFrame | None:
    """The committed prediction joined to the H200's measurement (None before it exists); `wrong` = the selection
    check failed (time kept); `grid` a GRIDS key (`split`: the second op grid; default the first)."""
    pred, tag = GRIDS[grid or ("split" if split else "first")]
    return TE.measured_latest(pred, f"topk_engines_nvidia-h200_*_{tag}{'_replicate' if replicate else ''}.csv", data_dir)


#: the scan of fit_lead_share (the candidate is its best value)
LEAD_SCAN = (1.0, 0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.65, 0.6, 0.5)


def lead_fit_rows(data_dir: Path = F.DATA_DIR) -> pd.DataFrame:
    """The looked-at two-launch rows at >= 3 CTAs per SM of part 1: the first op grid's op rows at >= 200,000 columns
    and the second op grid's (both measured on the H200 before the candidate was formed)."""
    a = measured(data_dir)
    a = a[(a["kernel"] == TE.CSV_KERNEL["trtllm_op"]) & (a["n"] >= TK.OP_SPLIT)]
    t = pd.concat([a, measured(data_dir, split=True)], ignore_index=True)[F.SHAPE_KEYS + ["median_us"]]
    with TK.torch_op():
        c = TK.ctas_per_sm(t["rows"].to_numpy(float), t["n"].to_numpy(float), 132.0)
    return t[c >= 3].reset_index(drop=True)


def fit_lead_share(hw: HardwareSpec, scan=LEAD_SCAN) -> dict:
    """TK.TWO_LAUNCH_LEAD_SHARE by its scan's rms log error on lead_fit_rows (priced on `hw`); restored after."""
    t = lead_fit_rows()
    old = TK.TWO_LAUNCH_LEAD_SHARE
    rms = {}
    try:
        for v in scan:
            TK.TWO_LAUNCH_LEAD_SHARE = float(v)
            rms[float(v)] = float(np.sqrt(np.mean(np.log(TE.predict_trtllm(t, hw) / t["median_us"].to_numpy()) ** 2)))
    finally:
        TK.TWO_LAUNCH_LEAD_SHARE = old
    return {"rms": rms, "value": min(rms, key=rms.get), "rows": len(t)}


#: the third op grid: the two-launch split at 3-31 CTAs per SM of part 1 (and two controls at 2), 14 new shapes, priced
#: by main (TWO_LAUNCH_LEAD_SHARE None, shipped) and the candidate (TWO_LAUNCH_LEAD_SHARE_CANDIDATE) before the call
LEAD_BLIND = ([("recorded", r, n) for r, n in ((34, 290000), (48, 410000), (62, 230000), (85, 270000), (100, 350000),
                                              (120, 240000), (175, 260000), (240, 215000), (320, 225000),
                                              (400, 205000), (20, 300000), (26, 460000))]
              + [("gaussian", 90, 250000), ("uniform", 200, 240000)])


def lead_regime(rows, n, sms: float = 132.0) -> np.ndarray:
    """The third op grid's regimes (declared before the call): part 1's CTAs per SM <= 2 (controls: the candidate
    changes nothing there) / 3-8 / >= 9."""
    with TK.torch_op():
        c = TK.ctas_per_sm(np.asarray(rows, float), np.asarray(n, float), sms)
    return np.where(c <= 2, "controls: part 1 at <= 2 CTAs per SM",
                    np.where(c <= 8, "two-launch split, part 1 at 3-8 CTAs per SM",
                             "two-launch split, part 1 at >= 9 CTAs per SM"))


def predict_lead(hw: HardwareSpec, value: float) -> pd.DataFrame:
    """LEAD_BLIND's op rows priced by main (`pred_main_us`: TWO_LAUNCH_LEAD_SHARE as shipped) and the candidate
    (`pred_us`: `value`) on `hw`."""
    t = TE._trtllm_frame(LEAD_BLIND)
    t["kernel"] = TE.CSV_KERNEL["trtllm_op"]
    t["regime"] = lead_regime(t["rows"], t["n"], hw.units)
    old = TK.TWO_LAUNCH_LEAD_SHARE
    try:
        t["pred_main_us"] = TE.predict_trtllm(t, hw)
        TK.TWO_LAUNCH_LEAD_SHARE = float(value)
        t["pred_us"] = TE.predict_trtllm(t, hw)
    finally:
        TK.TWO_LAUNCH_LEAD_SHARE = old
    return t[F.SHAPE_KEYS + ["regime", "pred_main_us", "pred_us"]]


#: the padded-buffer grid (priced after the lead share shipped, by the product as committed): the torch op over a logits
#: buffer wider than the rows' live scores, as the engine's indexer allocates it (its width, not the live length, sets
#: the op's split): (scores, rows, live length, buffer width); none of these (rows, length) was timed before
WIDTH_BLIND = ([("recorded", r, n, 262144) for r, n in ((1, 31000), (2, 65000), (4, 120000), (8, 180000), (16, 50000),
                                                        (32, 90000), (64, 20000))]
               + [("recorded", r, n, 163840) for r, n in ((3, 110000), (12, 150000), (48, 45000))]
               + [("recorded", 5, 215000, 262144)])


def width_frame() -> pd.DataFrame:
    """WIDTH_BLIND's rows: kernel trt_topk_op_w<width> (topk_engines.predict_trtllm reads the width from the name)."""
    t = TE._trtllm_frame([(d, r, n) for d, r, n, _ in WIDTH_BLIND])
    t["kernel"] = [f"{TE.CSV_KERNEL['trtllm_op']}_w{w}" for *_, w in WIDTH_BLIND]
    t["width"] = [w for *_, w in WIDTH_BLIND]
    return t


def width_regime(n, width) -> np.ndarray:
    """The padded grid's regimes (declared before the call): the two-launch split over live rows below 200,000 (a
    buffer >= 200,000 wide: where the unpadded op runs single CTAs), single CTAs in a buffer below it, and a control
    (live rows >= 200,000: the unpadded launch)."""
    n, width = np.asarray(n, float), np.asarray(width, float)
    return np.where(width < TK.OP_SPLIT, "single CTAs in a 163,840-wide buffer",
                    np.where(n < TK.OP_SPLIT, "two-launch split over live rows < 200K (a 262,144-wide buffer)",
                             "control: live rows >= 200K"))


def predict_width(hw: HardwareSpec) -> pd.DataFrame:
    """WIDTH_BLIND priced by the product as committed on `hw` (`pred_us`) beside the same rows unpadded
    (`pred_unpadded_us`: the op over a buffer as wide as the rows)."""
    t = width_frame()
    t["pred_us"] = TE.predict_trtllm(t, hw)
    u = t.copy()
    u["kernel"] = TE.CSV_KERNEL["trtllm_op"]
    t["pred_unpadded_us"] = TE.predict_trtllm(u, hw)
    t["regime"] = width_regime(t["n"], t["width"])
    return t[F.SHAPE_KEYS + ["width", "regime", "pred_us", "pred_unpadded_us"]]

