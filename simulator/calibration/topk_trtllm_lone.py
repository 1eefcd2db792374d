"""TensorRT-LLM's lone-CTA L2 round (simulator/kernels/topk_trtllm.py LONE_L2_ROUND): its fit on the looked-at lone rows
and the blind H200 grid that judges it.

The rows: every committed TensorRT-LLM decode row (the kernel's own dispatch, trt_topk, and the torch op's, trt_topk_op)
whose launch keeps one 512-thread CTA per SM (ctas_per_sm <= 1) in the single tier or the op's two-launch part 1, on
the H100 (grids 5-22) and the H200 (the H200 grid and the torch-op grid of 2026-11-28): all LOOKED-AT before the
candidate was formed (their pattern, -20 % at 60K-190K scores where the rows stay in the L2, is what it answers).
`fit` scans LONE_L2_ROUND on them (least squares on log time). The blind grid (`BLIND`, 28 new shapes, the op's dispatch:
what TensorRT-LLM's engine runs) prices main (LONE_L2_ROUND = 1, shipped) and the candidate before the call
(lab/kernels/predict_topk_trt_lone.py -> production_kernels/topk_trtllm_lone_prediction_2026-11-28.csv).
"""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd

from hwmodels.spec import HardwareSpec, load_hardware
from simulator.calibration import fit_production_topk_gemm as F
from simulator.calibration import topk_engines as TE
from simulator.kernels import topk_trtllm as TK

#: the committed measurements the fit reads (device kind -> file globs; the replicates left out)
FIT_GLOBS = {"H100-SXM": ("topk_engines_nvidia-h100-80gb-hbm3_2026-11-27_grid*.csv",),
             "H200": ("topk_engines_nvidia-h200_2026-11-28_trt_h200.csv", "topk_engines_nvidia-h200_2026-11-28_trt_op.csv")}
SCAN = (1.0, 1.1, 1.2, 1.25, 1.3, 1.35, 1.4, 1.45, 1.5, 1.6, 1.8)
PREDICTION = "topk_trtllm_lone_prediction_2026-11-28.csv"
MEASURED_GLOB = "topk_engines_nvidia-h200_*_trt_lone.csv"
REPLICATE_GLOB = "topk_engines_nvidia-h200_*_trt_lone_replicate.csv"


@contextmanager
def lone_round(value: float):
    """Price with TK.LONE_L2_ROUND = value, restored on exit."""
    old = TK.LONE_L2_ROUND
    TK.LONE_L2_ROUND = float(value)
    try:
        yield
    finally:
        TK.LONE_L2_ROUND = old


def _launch(t: pd.DataFrame, sms: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(blocks per row, threads, CTAs per SM) of each row under its own dispatch (trt_topk_op: the torch op's)."""
    op = (t["kernel"] == TE.CSV_KERNEL["trtllm_op"]).to_numpy()
    r, n = t["rows"].to_numpy(float), t["n"].to_numpy(float)
    with TK.torch_op():
        nbo, tho, co = TK.blocks_per_row(r, n), TK.block_threads(r, n), TK.ctas_per_sm(r, n, sms)
    return (np.where(op, nbo, TK.blocks_per_row(r, n)), np.where(op, tho, TK.block_threads(r, n)),
            np.where(op, co, TK.ctas_per_sm(r, n, sms)))


def lone_mask(t: pd.DataFrame, sms: float) -> np.ndarray:
    """Rows whose launch is lone 512-thread CTAs of the single tier or the op's two-launch part 1."""
    nb, th, c = _launch(t, sms)
    op = (t["kernel"] == TE.CSV_KERNEL["trtllm_op"]).to_numpy()
    return (c <= 1) & (th == TK.THREADS) & ((nb == 1) | op) & t["kernel"].isin(
        [TE.CSV_KERNEL["trtllm"], TE.CSV_KERNEL["trtllm_op"]]).to_numpy()


def fit_rows(data_dir: Path = F.DATA_DIR) -> pd.DataFrame:
    """The looked-at lone rows (`device` the fitted file that prices them), one per (device, kernel, shape)."""
    parts = []
    for dev, globs in FIT_GLOBS.items():
        for g in globs:
            for f in sorted(Path(data_dir).glob(g)):
                if "replicate" in f.name:
                    continue
                d = pd.read_csv(f)
                d = d[d["kernel"].isin([TE.CSV_KERNEL["trtllm"], TE.CSV_KERNEL["trtllm_op"]])].copy()
                d["device"] = dev
                parts.append(d)
    t = pd.concat(parts, ignore_index=True).drop_duplicates(["device"] + F.SHAPE_KEYS).reset_index(drop=True)
    return t[lone_mask(t, 132.0)].reset_index(drop=True)


def price(t: pd.DataFrame, value: float | None = None) -> np.ndarray:
    """Each row's product price on its own device (us) at LONE_L2_ROUND = value (None: as shipped)."""
    out = np.zeros(len(t))
    for dev in t["device"].unique():
        m = (t["device"] == dev).to_numpy()
        with lone_round(TK.LONE_L2_ROUND if value is None else value):
            out[m] = TE.predict_trtllm(t[m].reset_index(drop=True), load_hardware(dev))
    return out


def fit(t: pd.DataFrame | None = None, scan=SCAN) -> dict:
    """The scan's rms log error on the fit rows per value, and the best value (`value`)."""
    t = fit_rows() if t is None else t
    meas = t["median_us"].to_numpy(float)
    rms = {float(v): float(np.sqrt(np.mean(np.log(price(t, v) / meas) ** 2))) for v in scan}
    return {"rms": rms, "value": min(rms, key=rms.get), "rows": len(t)}


#: the blind grid: the torch op (what TensorRT-LLM's engine runs) at 28 new shapes; intended launch per group
BLIND_LONE_SHORT = [("recorded", 3, 14500), ("recorded", 20, 19000), ("gaussian", 60, 16500), ("uniform", 110, 23000)]
BLIND_LONE_MID = ([("recorded", r, n) for r, n in ((1, 33000), (5, 41000), (16, 52000), (70, 28000), (120, 36000))]
                  + [("gaussian", 9, 47000), ("uniform", 32, 57000)])
BLIND_LONE_LONG = ([("recorded", r, n) for r, n in ((1, 68000), (2, 99000), (6, 155000), (10, 125000), (24, 180000),
                                                    (48, 78000), (90, 110000))]
                   + [("gaussian", 4, 170000), ("uniform", 14, 135000)])
BLIND_LONE_SPLIT = [("recorded", 1, 310000), ("recorded", 3, 560000), ("recorded", 8, 225000), ("gaussian", 12, 410000)]
BLIND_CONTROLS = [("recorded", 180, 40000), ("recorded", 240, 88000), ("recorded", 110, 190000),
                  ("recorded", 60, 700000)]
BLIND = BLIND_LONE_SHORT + BLIND_LONE_MID + BLIND_LONE_LONG + BLIND_LONE_SPLIT + BLIND_CONTROLS


def blind_regime(rows, n, sms: float = 132.0) -> np.ndarray:
    """The blind grid's regimes (declared before the call), from the op's launch: lone single CTAs over short (<= 24K)
    / mid (24K-64K) / long (64K-200K) rows, the two-launch part 1 of lone slices, and controls (launches the candidate
    leaves alone or nearly: more than one CTA per SM, or a set beyond the L2)."""
    t = pd.DataFrame({"kernel": TE.CSV_KERNEL["trtllm_op"], "rows": np.asarray(rows), "n": np.asarray(n)})
    lone = lone_mask(t, sms)
    big = t["rows"].to_numpy(float) * t["n"].to_numpy(float) * 4.0 > 50 * 2 ** 20
    n = t["n"].to_numpy(float)
    return np.where(~lone | big, "controls: > 1 CTA per SM, or a set beyond the L2",
                    np.where(n >= TK.OP_SPLIT, "lone two-launch part 1 (1-13 rows >= 200K)",
                             np.where(n <= 24000, "lone single CTAs, rows <= 24K",
                                      np.where(n <= 64000, "lone single CTAs, rows 24K-64K",
                                               "lone single CTAs, rows 64K-200K"))))


def predict_blind(hw: HardwareSpec, value: float) -> pd.DataFrame:
    """BLIND priced by main (`pred_main_us`: LONE_L2_ROUND as shipped) and the candidate (`pred_us`: `value`) on `hw`."""
    t = TE._trtllm_frame(BLIND)
    t["kernel"] = TE.CSV_KERNEL["trtllm_op"]
    t["device"] = hw.name if hasattr(hw, "name") else "H200"
    t["regime"] = blind_regime(t["rows"], t["n"], hw.units)
    with lone_round(1.0):
        t["pred_main_us"] = TE.predict_trtllm(t, hw)
    with lone_round(value):
        t["pred_us"] = TE.predict_trtllm(t, hw)
    return t[F.SHAPE_KEYS + ["regime", "pred_main_us", "pred_us"]]


def measured(data_dir: Path = F.DATA_DIR, replicate: bool = False) -> pd.DataFrame | None:
    """The committed blind prediction joined to its H200 measurement (None before it exists)."""
    return TE.measured_latest(PREDICTION, REPLICATE_GLOB if replicate else MEASURED_GLOB, data_dir)
