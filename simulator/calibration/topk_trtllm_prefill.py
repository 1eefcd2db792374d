"""TensorRT-LLM's top-k prefill entry over a causal prompt, as the product prices DSA prefill: the blind H200 grid.

The DSA indexer of TensorRT-LLM selects each prompt token's top-k keys with `indexer_topk_prefill` (one 512-thread CTA
per row, rows [cu_seqlen_ks, cu_seqlen_ke): row i of a prompt holds i + 1 keys). The product's DSA strategy
(simulator/strategies/dsa.py prefill_ops) prices that launch as `rows` = B x P rows of the MEAN length, max(P / 2, 1),
every row alike: an approximation never judged (every earlier top-k grid timed rows of one length each). This grid
times the entry over whole causal prompts (R = P rows, row i ending at i + 1; lab/kernels/measure_topk_engines.py kernel
trt_topk_pf_tri), priced before the call (lab/kernels/predict_topk_trt_prefill.py ->
production_kernels/topk_trtllm_prefill_prediction_2026-11-28.csv) by main (the mean-length rule) and the candidate read
from the kernel's source before any timing (dsa.py PREFILL_TOPK_ROWS "causal": only the rows of more than k keys, at
their mean length). Declared before the call: the candidate ships if it meets more regimes (a tie: the lower pooled
median |error|); the grid is the DSA prefill top-k rule's H200 standing.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from hwmodels.spec import HardwareSpec
from simulator.calibration import fit_production_topk_gemm as F
from simulator.calibration import topk_engines as TE
from simulator.strategies.dsa import prefill_topk_rows

KERNEL = "trt_topk_pf_tri"
PREDICTION = "topk_trtllm_prefill_prediction_2026-11-28.csv"
#: whole causal prompts of P tokens (rows = P, the longest row P scores); P <= 32,768: one indexer chunk
#: (DSAtrtllmAttentionMetadata's indexer_max_chunk_size default), so one launch a prompt, as the product prices it
SHAPES = ([("recorded", p, p) for p in (3072, 6144, 12288, 24576, 32768)] + [("gaussian", 16384, 16384)])


def regime(n) -> np.ndarray:
    """The grid's regimes (declared before the call): prompts of <= 8K / > 8K tokens."""
    return np.where(np.asarray(n, float) <= 8192, "causal prompt, P <= 8K", "causal prompt, P > 8K")


def _priced(t: pd.DataFrame, hw: HardwareSpec, rule: str) -> np.ndarray:
    """Each causal prompt (rows = P, n = P) priced as the product prices DSA prefill top-k under `rule`
    (simulator/strategies/dsa.py prefill_topk_rows): the prefill entry at those rows and that length."""
    rows, n = prefill_topk_rows(1.0, t["n"].to_numpy(float), 2048.0, rule)
    m = t.copy()
    m["kernel"] = TE.CSV_KERNEL["trtllm_prefill"]
    m["rows"], m["n"] = np.maximum(rows, 1.0).astype(int), np.round(n).astype(int)
    return TE.predict_trtllm(m, hw)


def predict(hw: HardwareSpec) -> pd.DataFrame:
    """SHAPES priced by main (`pred_main_us`: PREFILL_TOPK_ROWS "mean", shipped then) and the candidate (`pred_us`:
    "causal", shipped after this grid),
    on `hw`; `kernel` is the measurement's name (trt_topk_pf_tri)."""
    t = TE._trtllm_frame(SHAPES)
    t["pred_main_us"] = _priced(t, hw, "mean")
    t["pred_us"] = _priced(t, hw, "causal")
    t["kernel"] = KERNEL
    t["regime"] = regime(t["n"])
    return t[F.SHAPE_KEYS + ["regime", "pred_main_us", "pred_us"]]


def measured(data_dir: Path = F.DATA_DIR, replicate: bool = False) -> pd.DataFrame | None:
    """The committed prediction joined to its H200 measurement (None before it exists)."""
    return TE.measured_latest(PREDICTION, f"topk_engines_nvidia-h200_*_trt_pftri{'_replicate' if replicate else ''}.csv",
                              data_dir)


#: the scan of fit_prefill_lead
LEAD_SCAN = (1.0, 0.95, 0.9, 0.85, 0.8, 0.75)


def lead_fit_rows(data_dir: Path = F.DATA_DIR) -> pd.DataFrame:
    """The looked-at prefill-entry rows (trt_topk_pf, rows of one length) at >= 3 CTAs per SM of every committed
    TensorRT-LLM grid (the pair scans aside), `device` the fitted file that prices them."""
    parts = []
    for f in sorted(Path(data_dir).glob("topk_engines_nvidia-h*.csv")):
        if "replicate" in f.name or "scan" in f.name:
            continue
        d = pd.read_csv(f)
        d = d[d["kernel"] == TE.CSV_KERNEL["trtllm_prefill"]].copy()
        d["device"] = "H200" if "h200" in f.name else "H100-SXM"
        parts.append(d)
    t = pd.concat(parts, ignore_index=True).drop_duplicates(["device"] + F.SHAPE_KEYS)
    return t[np.ceil(t["rows"] / 132.0) >= 3].reset_index(drop=True)


def fit_prefill_lead(scan=LEAD_SCAN) -> dict:
    """TK.PREFILL_LEAD_SHARE by its scan's rms log error on lead_fit_rows (each on its own device), under the pair rule
    it was fitted with (STAGGERED_PARTNERS off, as before the stagger grid); both restored after."""
    from hwmodels.spec import load_hardware
    from simulator.kernels import topk_trtllm as TK

    t = lead_fit_rows()
    old, stag = TK.PREFILL_LEAD_SHARE, TK.STAGGERED_PARTNERS
    TK.STAGGERED_PARTNERS = False
    rms = {}
    try:
        for v in scan:
            TK.PREFILL_LEAD_SHARE = float(v)
            p = np.zeros(len(t))
            for dev in t["device"].unique():
                m = (t["device"] == dev).to_numpy()
                p[m] = TE.predict_trtllm(t[m].reset_index(drop=True), load_hardware(dev))
            rms[float(v)] = float(np.sqrt(np.mean(np.log(p / t["median_us"].to_numpy()) ** 2)))
    finally:
        TK.PREFILL_LEAD_SHARE, TK.STAGGERED_PARTNERS = old, stag
    return {"rms": rms, "value": min(rms, key=rms.get), "rows": len(t)}


#: the prefill lead share's blind grid: the prefill entry over rows of one length at 7-24 CTAs per SM and over four
#: more causal prompts, none timed before; main = PREFILL_LEAD_SHARE None (shipped), cand = the fitted value
BLIND_UNIFORM = ([("recorded", r, n) for r, n in ((1250, 4200), (1750, 9800), (2350, 6600), (3100, 13300),
                                                  (950, 17500), (2800, 2900))]
                 + [("gaussian", 2100, 8800), ("uniform", 1600, 11000)])
BLIND_CAUSAL = [("recorded", p, p) for p in (4608, 10240, 20480, 28672)]
PREDICTION2 = "topk_trtllm_prefill_lead_prediction_2026-11-28.csv"


def predict_blind(hw: HardwareSpec, value: float) -> pd.DataFrame:
    """BLIND_UNIFORM (kernel trt_topk_pf) and BLIND_CAUSAL (trt_topk_pf_tri, priced as DSA prefill prices them) by main
    (`pred_main_us`: PREFILL_LEAD_SHARE as shipped) and the candidate (`pred_us`: `value`) on `hw`."""
    from simulator.kernels import topk_trtllm as TK

    u = TE._trtllm_frame(BLIND_UNIFORM)
    u["kernel"] = TE.CSV_KERNEL["trtllm_prefill"]
    c = TE._trtllm_frame(BLIND_CAUSAL)
    old = TK.PREFILL_LEAD_SHARE
    try:
        out = {}
        for col, v in (("pred_main_us", old), ("pred_us", float(value))):
            TK.PREFILL_LEAD_SHARE = v
            out[col] = np.concatenate([TE.predict_trtllm(u, hw), _priced(c, hw, "causal")])
    finally:
        TK.PREFILL_LEAD_SHARE = old
    c["kernel"] = KERNEL
    t = pd.concat([u, c], ignore_index=True)
    for col, v in out.items():
        t[col] = v
    t["regime"] = np.where(t["kernel"] == KERNEL, "causal prompts", "rows of one length, >= 7 CTAs per SM")
    return t[F.SHAPE_KEYS + ["regime", "pred_main_us", "pred_us"]]


def measured2(data_dir: Path = F.DATA_DIR, replicate: bool = False) -> pd.DataFrame | None:
    """The lead-share grid's committed prediction joined to its H200 measurement (None before it exists)."""
    return TE.measured_latest(PREDICTION2, f"topk_engines_nvidia-h200_*_trt_pflead{'_replicate' if replicate else ''}.csv",
                              data_dir)



#: the prefill stagger grid (topk_trtllm.STAGGERED_CANDIDATE against main, both priced before the call): new shapes
#: none timed before, by regime (stagger_regime); `scan` rows (the prefill entry at 2,640 rows, 20 CTAs per SM, over
#: sets of 0.6-2.4 x the L2) are priced too but named fit rows for a later rule, not judged
STAGGER_PF_MID_C = ([("recorded", r, n) for r, n in ((640, 7600), (880, 15800), (1150, 33000), (1460, 5700))]
                    + [("gaussian", 760, 11800), ("uniform", 1300, 21000)])
STAGGER_PF_MANY_SHORT = ([("recorded", r, n) for r, n in ((1720, 3300), (2150, 6200), (2900, 8700), (3700, 14600))]
                         + [("gaussian", 2500, 5200), ("uniform", 3300, 7300)])
STAGGER_PF_MANY_LONG = ([("recorded", r, n) for r, n in ((1800, 24500), (2450, 47000), (3400, 19000))]
                        + [("gaussian", 2000, 36000)])
STAGGER_PF_FEW = [("recorded", 300, 9000), ("recorded", 160, 40000)]
STAGGER_CAUSAL = [("recorded", p, p) for p in (5120, 8192, 14336, 18432)]
STAGGER_DECODE = ([("recorded", r, n) for r, n in ((430, 13500), (560, 24000), (700, 48000), (930, 19500))]
                  + [("gaussian", 650, 16500), ("uniform", 820, 35000)])
STAGGER_DECODE_FEW = [("recorded", 290, 22000), ("recorded", 200, 70000)]
STAGGER_SCAN = ([("recorded", 2640, n) for n in (3100, 3900, 4600, 5300, 6100, 7100, 8300, 9900, 12100)]
                + [("gaussian", 2640, n) for n in (3900, 6100, 9900)])
PREDICTION3 = "topk_trtllm_prefill_stagger_prediction_2026-11-28.csv"


def stagger_regime(kernel, rows, n, sms: float = 132.0) -> np.ndarray:
    """The stagger grid's regimes (declared before the call), by the launch each row gets: the prefill entry at 4-12
    CTAs per SM, at > 12 over rows of <= 16K / > 16K scores, causal prompts (DSA prefill's price), the decode
    dispatch's single 512-thread CTAs at 4-8 CTAs per SM, and controls at <= 3 CTAs per SM (main and the candidate
    price them alike)."""
    kernel, rows, n = np.asarray(kernel), np.asarray(rows, float), np.asarray(n, float)
    c = np.ceil(rows / sms)
    pf = kernel == TE.CSV_KERNEL["trtllm_prefill"]
    return np.where(kernel == KERNEL, "causal prompts",
                    np.where(c <= 3, "controls, <= 3 CTAs per SM",
                             np.where(~pf, "decode single 512-thread CTAs, 4-8 CTAs per SM",
                                      np.where(c <= 12, "prefill entry, 4-12 CTAs per SM",
                                               np.where(n <= 16384, "prefill entry, > 12 CTAs per SM, rows <= 16K",
                                                        "prefill entry, > 12 CTAs per SM, rows > 16K")))))


def stagger_frame() -> pd.DataFrame:
    """Every row of the stagger grid with its kernel (trt_topk_pf / trt_topk_pf_tri / trt_topk) and `set` (grid /
    scan)."""
    parts = []
    for shapes, kern, name in ((STAGGER_PF_MID_C + STAGGER_PF_MANY_SHORT + STAGGER_PF_MANY_LONG + STAGGER_PF_FEW,
                                TE.CSV_KERNEL["trtllm_prefill"], "grid"),
                               (STAGGER_CAUSAL, KERNEL, "grid"),
                               (STAGGER_DECODE + STAGGER_DECODE_FEW, TE.CSV_KERNEL["trtllm"], "grid"),
                               (STAGGER_SCAN, TE.CSV_KERNEL["trtllm_prefill"], "scan")):
        t = TE._trtllm_frame(shapes)
        t["kernel"] = kern
        t["set"] = name
        parts.append(t)
    return pd.concat(parts, ignore_index=True)


def _price_grid(t: pd.DataFrame, hw: HardwareSpec) -> np.ndarray:
    """The stagger grid's rows priced as the product prices them: causal prompts through DSA prefill's rule
    ("causal"), the rest as their kernel (TE.predict_trtllm)."""
    out = np.zeros(len(t))
    cz = (t["kernel"] == KERNEL).to_numpy()
    if cz.any():
        out[cz] = _priced(t[cz].reset_index(drop=True), hw, "causal")
    if (~cz).any():
        out[~cz] = TE.predict_trtllm(t[~cz].reset_index(drop=True), hw)
    return out


def predict_stagger(hw: HardwareSpec) -> pd.DataFrame:
    """The stagger grid priced by main (`pred_main_us`: the model as shipped) and the candidate (`pred_us`:
    topk_trtllm.STAGGERED_CANDIDATE's settings) on `hw`."""
    from simulator.kernels import topk_trtllm as TK

    t = stagger_frame()
    t["pred_main_us"] = _price_grid(t, hw)
    old = {k: getattr(TK, k) for k in TK.STAGGERED_CANDIDATE}
    try:
        for k, v in TK.STAGGERED_CANDIDATE.items():
            setattr(TK, k, v)
        t["pred_us"] = _price_grid(t, hw)
    finally:
        for k, v in old.items():
            setattr(TK, k, v)
    t["regime"] = np.where(t["set"] == "scan", "scan (fit rows, not judged)",
                           stagger_regime(t["kernel"], t["rows"], t["n"], hw.units))
    return t[F.SHAPE_KEYS + ["set", "regime", "pred_main_us", "pred_us"]]


def measured3(data_dir: Path = F.DATA_DIR, replicate: bool = False) -> pd.DataFrame | None:
    """The stagger grid's committed prediction joined to its H200 measurement (None before it exists)."""
    return TE.measured_latest(PREDICTION3,
                              f"topk_engines_nvidia-h200_*_trt_pfstag{'_replicate' if replicate else ''}.csv", data_dir)
