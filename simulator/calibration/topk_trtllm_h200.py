"""TensorRT-LLM's indexer top-k on the H200: the H100's blind grid 22 re-run there, and a new-shape grid over the
family's launch regimes, both priced before the call by the product as committed.

Every term of the TensorRT-LLM top-k model (simulator/kernels/topk_trtllm.py: the decode dispatch's tiers, the job
model's pass costs, the narrow CTAs' per-CTA rule, the pair shares, the split merge) was fitted on the H100-SXM's grids
5-21. The H200's fitted file names none of the top-k op kinds, so the product prices them there with the H100-SXM's
terms (`unmeasured_kinds_from` in hwmodels/calibration/fitted/H200.yaml): same GH100 SM count (132) and 50 MiB L2, the
H200's own HBM3e bandwidth. Nothing of either grid was measured on an H200 before its prices were committed
(lab/kernels/predict_topk_trt_h200.py -> production_kernels/topk_trtllm_h200_prediction_2026-11-28.csv).

- **transfer rows** (`set == "transfer"`): GRID22's 36 rows (the H100's STANDING grid of the family, narrow 256-thread
  short rows at 9-20 CTAs per SM plus controls), the same (scores, rows, length) triples; the H100's measurement beside
  them gives the measured H200 / H100 ratio.
- **new rows** (`set == "new"`): 47 shapes in no committed top-k CSV over the dispatch's launch regimes (`regime`),
  declared as the family's H200 STANDING before the call: split decode launches at 1-8 and 9-127 rows (DSA decode at
  small batch and long context), single CTAs at few (<= 16) rows, single 512-thread CTAs over mid (12K-64K) and long
  (> 64K) rows at 17-700 rows, narrow 256-thread CTAs, and the prefill entry (one 512-thread CTA a row).

The measurement: lab/kernels/measure_topk_engines.py --trt-lib (TensorRT-LLM's kernels from a local transcription of
indexerTopK.cu @ 07339e94, built on the device from lab/kernels/trt_topk_launch.cu; never committed),
lab/kernels/run_topk_trt_h200_device.sh.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from hwmodels.spec import HardwareSpec
from simulator.calibration import fit_production_topk_gemm as F
from simulator.calibration import topk_engines as TE
from simulator.kernels import topk_trtllm as TK

PREDICTION = "topk_trtllm_h200_prediction_2026-11-28.csv"
#: the measurement's file glob (measure_topk_engines.py names it topk_engines_<device>_<date>_<tag>.csv)
MEASURED_GLOB = "topk_engines_nvidia-h200_*_trt_h200.csv"
REPLICATE_GLOB = "topk_engines_nvidia-h200_*_trt_h200_replicate.csv"

#: the new shapes by intended launch regime (checked against blocks_per_row / block_threads in `regime`); distances
#: from the H100 grids' shapes chosen by hand, none measured before (the predictor refuses a measured one)
NEW_SPLIT_FEW = ([("recorded", r, n) for r, n in ((1, 80000), (2, 150000), (4, 310000), (6, 520000), (8, 95000))]
                 + [("gaussian", 3, 760000), ("uniform", 5, 240000), ("recorded", 7, 980000)])
NEW_SPLIT_MANY = ([("recorded", r, n) for r, n in ((12, 260000), (20, 380000), (45, 560000), (70, 600000))]
                  + [("gaussian", 28, 230000), ("uniform", 60, 300000), ("recorded", 100, 560000)])
NEW_FEW_ROWS = ([("recorded", r, n) for r, n in ((1, 12000), (2, 40000), (4, 6300), (8, 24000), (12, 90000))]
                + [("gaussian", 16, 150000), ("uniform", 10, 60000)])
NEW_SINGLE_MID = ([("recorded", r, n) for r, n in ((40, 30000), (130, 45000), (260, 25000), (400, 60000))]
                  + [("gaussian", 560, 35000), ("uniform", 700, 20000)])
NEW_SINGLE_LONG = ([("recorded", r, n) for r, n in ((150, 180000), (220, 300000), (330, 95000), (480, 130000))]
                   + [("gaussian", 600, 250000), ("uniform", 60, 150000)])
NEW_NARROW = ([("recorded", r, n) for r, n in ((470, 10900), (700, 9000), (1200, 6000), (2000, 12000))]
              + [("gaussian", 3000, 8000), ("uniform", 1500, 30000), ("gaussian", 900, 10000)])
NEW_DECODE = NEW_SPLIT_FEW + NEW_SPLIT_MANY + NEW_FEW_ROWS + NEW_SINGLE_MID + NEW_SINGLE_LONG + NEW_NARROW
NEW_PREFILL = ([("recorded", r, n) for r, n in ((700, 150000), (1500, 90000), (800, 40000), (2000, 25000))]
               + [("gaussian", 1000, 8000), ("uniform", 3000, 5000)])


def regime(kernel, rows, n) -> np.ndarray:
    """The new grid's regimes (declared before the call), from the launch the product reads for each row: the prefill
    entry; split decode launches at 1-8 / 9-127 rows; single CTAs at <= 16 rows; narrow 256-thread CTAs; single
    512-thread CTAs over mid rows (<= 64K) / long rows (> 64K) at more than 16 rows."""
    kernel, rows, n = np.asarray(kernel), np.asarray(rows, float), np.asarray(n, float)
    pf = kernel == TE.CSV_KERNEL["trtllm_prefill"]
    split = TK.blocks_per_row(rows, n) > 1
    narrow = TK.block_threads(rows, n) < 512
    return np.where(pf, "prefill entry (one 512-thread CTA a row)",
                    np.where(split, np.where(rows <= 8, "split decode, 1-8 rows", "split decode, 9-127 rows"),
                             np.where(rows <= 16, "single CTA, <= 16 rows",
                                      np.where(narrow, "narrow 256-thread CTAs",
                                               np.where(n > 65536, "single 512-thread CTAs, long rows > 64K",
                                                        "single 512-thread CTAs, mid rows 12K-64K")))))


def frame() -> pd.DataFrame:
    """Both sets' rows (TensorRT-LLM's decode dispatch and prefill entry), `set` transfer / new."""
    tr = TE.grid22_frame()
    tr["set"] = "transfer"
    nw = TE.engines_frame(NEW_DECODE, NEW_PREFILL)
    nw["set"] = "new"
    return pd.concat([tr, nw], ignore_index=True)


def predict(hw: HardwareSpec, out: str | Path | None = None) -> pd.DataFrame:
    """Every row priced by the product as committed on `hw` (`pred_us`: TE.predict_trtllm, the shipped terms), its
    regime (new rows: `regime`; transfer rows: grid 22's, TE.regime22), launch columns; written to `out` if given."""
    t = frame()
    t["pred_us"] = TE.predict_trtllm(t, hw)
    s = t["set"].to_numpy()
    t["regime"] = np.where(s == "new", regime(t["kernel"], t["rows"], t["n"]),
                           TE.regime22(t["kernel"], t["rows"], t["n"], hw.units))
    pf = (t["kernel"] == TE.CSV_KERNEL["trtllm_prefill"]).to_numpy()
    t["blocks_per_row"] = np.where(pf, 1, TK.blocks_per_row(t["rows"], t["n"]))
    t["threads"] = np.where(pf, 512, TK.block_threads(t["rows"], t["n"]))
    t["ctas_per_sm"] = np.where(pf, np.ceil(t["rows"] / hw.units), TK.ctas_per_sm(t["rows"], t["n"], hw.units))
    res = t[F.SHAPE_KEYS + ["set", "regime", "blocks_per_row", "threads", "ctas_per_sm", "pred_us"]]
    if out is not None:
        res.to_csv(out, index=False, float_format="%.4f")
    return res


def measured(data_dir: Path = F.DATA_DIR, replicate: bool = False) -> pd.DataFrame | None:
    """The committed prediction joined to the H200's measurement (None before it exists); `h100_us` = the H100's own
    measurement of the transfer rows (grid 22's CSV), `wrong` = the selection check failed (time kept)."""
    out = TE.measured_latest(PREDICTION, REPLICATE_GLOB if replicate else MEASURED_GLOB, data_dir)
    if out is None:
        return None
    h1 = pd.read_csv(Path(data_dir) / TE.GRID22_MEASURED)[F.SHAPE_KEYS + ["median_us"]]
    out = out.merge(h1.rename(columns={"median_us": "h100_us"}), on=F.SHAPE_KEYS, how="left")
    return out


#: the second H200 grid of the kernel's own dispatch (priced after LONE_L2_ROUND and TWO_LAUNCH_LEAD_SHARE shipped, by
#: the product as committed): 4 new shapes in each of `regime`'s seven regimes; declared before its call as the kernel
#: dispatch's H200 STANDING
NEW2_DECODE = ([("recorded", r, n) for r, n in ((1, 67000), (3, 230000), (5, 88000), (7, 640000))]          # split 1-8
               + [("recorded", r, n) for r, n in ((10, 215000), (33, 330000), (58, 255000))]                  # split 9+
               + [("gaussian", 90, 600000)]
               + [("recorded", r, n) for r, n in ((2, 21000), (6, 52000), (11, 140000), (15, 35000))]          # <= 16
               + [("recorded", r, n) for r, n in ((26, 43000), (180, 27000), (350, 15500))]                    # mid
               + [("uniform", 95, 58000)]
               + [("recorded", r, n) for r, n in ((140, 75000), (45, 190000), (270, 110000))]                  # long
               + [("gaussian", 500, 85000)]
               + [("recorded", r, n) for r, n in ((520, 10200), (1350, 7700), (2200, 3300))]                   # narrow
               + [("uniform", 800, 9500)])
NEW2_PREFILL = [("recorded", r, n) for r, n in ((640, 66000), (1100, 21000), (2600, 12500))] + [("gaussian", 1800, 47000)]
PREDICTION2 = "topk_trtllm_h200_grid2_prediction_2026-11-28.csv"


def price_new(hw: HardwareSpec, decode, prefill) -> pd.DataFrame:
    """New rows of the kernel's own dispatch (`decode`) and its prefill entry (`prefill`) priced by the product as
    committed on `hw`, with their regime."""
    t = TE.engines_frame(decode, prefill)
    t["pred_us"] = TE.predict_trtllm(t, hw)
    t["regime"] = regime(t["kernel"], t["rows"], t["n"])
    return t[F.SHAPE_KEYS + ["regime", "pred_us"]]


def measured_grid(prediction: str, tag: str, data_dir: Path = F.DATA_DIR, replicate: bool = False
                  ) -> pd.DataFrame | None:
    """A grid's committed `prediction` joined to its H200 measurement (tag `tag`; None before it exists)."""
    return TE.measured_latest(prediction, f"topk_engines_nvidia-h200_*_{tag}{'_replicate' if replicate else ''}.csv",
                              data_dir)


def predict2(hw: HardwareSpec) -> pd.DataFrame:
    """NEW2's rows priced by the product as committed on `hw` (price_new)."""
    return price_new(hw, NEW2_DECODE, NEW2_PREFILL)


def measured2(data_dir: Path = F.DATA_DIR, replicate: bool = False) -> pd.DataFrame | None:
    """The second grid's committed prediction joined to its H200 measurement (None before it exists)."""
    return measured_grid(PREDICTION2, "trt_h200g2", data_dir, replicate)


#: the third H200 grid of the kernel's own dispatch (priced after STAGGERED_PARTNERS shipped, by the product as
#: committed): 4 new shapes in each of `regime`'s seven regimes; declared before its call as the kernel dispatch's H200
#: STANDING (the second grid was priced by the model before that rule)
NEW3_DECODE = ([("recorded", r, n) for r, n in ((2, 99500), (4, 170000), (6, 410000))] + [("gaussian", 8, 120000)]
               + [("recorded", r, n) for r, n in ((14, 240000), (27, 455000), (50, 290000))] + [("uniform", 80, 700000)]
               + [("recorded", r, n) for r, n in ((3, 17000), (9, 44000), (13, 8800))] + [("gaussian", 5, 30000)]
               + [("recorded", r, n) for r, n in ((60, 38000), (230, 16500), (470, 29000))] + [("gaussian", 320, 52000)]
               + [("recorded", r, n) for r, n in ((100, 130000), (250, 96000), (520, 170000))]
               + [("uniform", 180, 72000)]
               + [("recorded", r, n) for r, n in ((600, 8100), (1700, 5400), (2500, 11500))] + [("gaussian", 400, 11000)])
NEW3_PREFILL = [("recorded", r, n) for r, n in ((900, 28500), (1900, 11200), (3200, 21500))] + [("uniform", 1500, 60000)]
PREDICTION3 = "topk_trtllm_h200_grid3_prediction_2026-11-28.csv"


def predict3(hw: HardwareSpec) -> pd.DataFrame:
    """NEW3's rows priced by the product as committed on `hw` (price_new)."""
    return price_new(hw, NEW3_DECODE, NEW3_PREFILL)


def measured3(data_dir: Path = F.DATA_DIR, replicate: bool = False) -> pd.DataFrame | None:
    """The third grid's committed prediction joined to its H200 measurement (None before it exists)."""
    return measured_grid(PREDICTION3, "trt_h200g3", data_dir, replicate)


#: the fourth H200 grid of the kernel's own dispatch (priced by the product as committed after the on-chip rule
#: shipped, topk_trtllm.ONCHIP_JOB): 4 new shapes in each of `regime`'s seven regimes; declared before its call as the
#: kernel dispatch's H200 STANDING (the on-chip grid covered three of its regimes)
NEW4_DECODE = ([("recorded", r, n) for r, n in ((1, 105000), (3, 280000), (5, 160000))] + [("gaussian", 7, 230000)]
               + [("recorded", r, n) for r, n in ((11, 215000), (35, 335000), (95, 570000))] + [("uniform", 18, 420000)]
               + [("recorded", r, n) for r, n in ((2, 22000), (7, 52000), (15, 9500))] + [("gaussian", 4, 14000)]
               + [("recorded", r, n) for r, n in ((45, 27000), (150, 52000), (380, 19000))] + [("gaussian", 600, 33000)]
               + [("recorded", r, n) for r, n in ((70, 85000), (210, 140000), (360, 240000))]
               + [("uniform", 130, 110000)]
               + [("recorded", r, n) for r, n in ((520, 9800), (900, 7700), (1400, 10300))] + [("gaussian", 2200, 8600)])
NEW4_PREFILL = [("recorded", r, n) for r, n in ((800, 52000), (1300, 16800), (2400, 7400))] + [("gaussian", 1700, 26500)]
PREDICTION4 = "topk_trtllm_h200_grid4_prediction_2026-11-29.csv"


def predict4(hw: HardwareSpec) -> pd.DataFrame:
    """NEW4's rows priced by the product as committed on `hw` (price_new)."""
    return price_new(hw, NEW4_DECODE, NEW4_PREFILL)


def measured4(data_dir: Path = F.DATA_DIR, replicate: bool = False) -> pd.DataFrame | None:
    """The fourth grid's committed prediction joined to its H200 measurement (None before it exists)."""
    return measured_grid(PREDICTION4, "trt_h200g4", data_dir, replicate)
