"""Blind grid 13 of the engines' all-reduce kernels: TensorRT-LLM's two-shot copies above 2 ranks, the fused RMSNorm by
cluster size and (g - 2) x peer per serialized peer wait (predict_grid13, GRID13_CANDIDATE; shipped:
hwmodels.roofline holds it, engine_allreduce.GRID13_RULES_OFF turns it off); earlier_shapes (every shape of the
campaign and grids 4, 6-12) (moved unchanged from engine_allreduce.py, whose live code it imports; the grid's record
is the comment above its shapes). `python -m simulator.calibration.engine_allreduce_grid13 MODEL_COMMIT` writes its
prediction.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from hwmodels.spec import HardwareSpec
from simulator.calibration.engine_allreduce import (
    DATA_DIR,
    FIT_CSV,
    HIDDENS,
    IMPL_KIND,
    LARGE,
    TOKENS,
    grid,
    predict_with,
    size_regime,
    trtllm_launch_columns,
)
from simulator.calibration.engine_allreduce_grid4 import BLIND4_HIDDENS, BLIND4_TOKENS
from simulator.calibration.engine_allreduce_grid6 import BLIND6_EXTRA, BLIND6_HIDDENS, BLIND6_TOKENS
from simulator.calibration.engine_allreduce_grid7 import BLIND7_SHAPES
from simulator.calibration.engine_allreduce_grid8 import BLIND8_CONTROL, BLIND8_SHAPES
from simulator.calibration.engine_allreduce_grid9 import BLIND9_CONTROL, BLIND9_SHAPES
from simulator.calibration.engine_allreduce_grid10 import BLIND10_CONTROL, BLIND10_SHAPES
from simulator.calibration.engine_allreduce_grid11 import (
    BLIND11_CONTROL,
    BLIND11_SHAPES,
    GRID11_FIT_GLOBS,
    predict_grid11,
)
from simulator.calibration.engine_allreduce_grid12 import BLIND12_CONTROL, BLIND12_MEAS_GLOB, BLIND12_SHAPES

#: blind grid 13 (4 x H100; 4 ranks AND 2 ranks, >= 4 rows in every (implementation, ranks, size regime) cell, (tokens,
#: hidden) in no earlier grid: small 5-64 KiB, middle across vLLM's 512 KiB one-/two-shot switch, large 1-8 MiB where
#: TensorRT-LLM's 4-rank two-shot is 10-11 % too fast in every earlier grid; the 2-rank shapes repeat grid 12's missed
#: 2-rank cells): main = the H100 model at BLIND13_MAIN_COMMIT (predict_us), candidate = GRID13_CANDIDATE (predict_grid13),
#: fitted by fit_grid13_terms on the H100 rows of grids <= 12 only (grid13_fit_rows: all looked-at); both committed in
#: BLIND13_PRED_CSV (8525dba) before lab/kernels/run_engine_allreduce_blind13.sh measured them (one 4 x H100 call, 108 s,
#: 210 rows, 0 wrong sums). The candidate met 25 of 31 regimes against main's 22 (pooled 4.7 / 16.3 % against 5.4 /
#: 17.1 %) and SHIPPED: hwmodels.roofline AR_TWOSHOT_COPY / AR_NORM_CS1 / AR_NORM_CSN / AR_PEER_SHARE hold it, predict_us
#: prices it; predict_with(df, hw, {}) prices the model before it (GRID13_RULES_OFF)
BLIND13_SHAPES = ((9, 3072), (11, 2048), (14, 1024), (18, 1536), (10, 2560), (12, 2048),
                  (20, 3072), (37, 2048), (44, 3584), (29, 5120), (52, 4096),
                  (68, 4096), (78, 4096), (46, 7168), (100, 5120), (59, 6144),
                  (142, 4096), (184, 4096), (226, 5120), (316, 4096), (260, 6144), (390, 5120), (470, 4096),
                  (330, 7168), (620, 4096), (430, 8192), (500, 7168))
BLIND13_CONTROL = ((9, 3072), (11, 2048), (14, 1024), (18, 1536),
                   (20, 3072), (44, 3584), (52, 4096), (78, 4096), (100, 5120),
                   (142, 4096), (226, 5120), (316, 4096), (390, 5120), (430, 8192), (620, 4096))
BLIND13_PRED_CSV = "engine_allreduce_blind13_prediction_H100-SXM_2026-11-27.csv.gz"
BLIND13_MEAS_GLOB = "engine_allreduce_blind13_nvidia*.csv"
BLIND13_MAIN_COMMIT = "753b5c0"
#: the H100 rows grid 13's candidate is fitted on (all measured and looked at before grid 13): the 2 x H100 campaign and
#: blind grids 4, 6, 7, 8, 9, 10 and 12 (grid 11 ran on 4 x H200 and is not read)
GRID13_FIT_GLOBS = (FIT_CSV,) + GRID11_FIT_GLOBS + (BLIND12_MEAS_GLOB,)
#: serialized peer waits per call (ENGINE_AR_BARRIERS + AR_PHASES) of each implementation that pays grid 13's `peer` term:
#: vLLM's two-shot pays none (its loop-step terms AR_WAVE_SKIP / AR_FILL_SLOPE were fitted on 4-rank rows only and hold
#: its 4-rank waits already)
GRID13_WAITS = {"vllm_oneshot": 3.0, "vllm_twoshot": 0.0, "trtllm_ar_oneshot": 1.0, "trtllm_arnorm_oneshot": 1.0,
                "trtllm_ar_twoshot": 4.0, "trtllm_arnorm_twoshot": 4.0}
#: blind grid 13's candidate (fit_grid13_terms, us / shares): grid 11's rules judged on the H100 for the first time (copy:
#: TensorRT-LLM's two-shot's serialized local copies above 2 ranks; norm_cs1 / norm_csn: the fused RMSNorm by the fusion
#: kernel's cluster size) + `peer` (us): each serialized peer wait (a flag barrier or a peer-data phase: GRID13_WAITS)
#: waits on the slowest of g - 1 peers, not one: (g - 2) x peer more per wait (vllm_custom_all_reduce.cuh
#: multi_gpu_barrier: thread i < ngpus stores / polls peer i's flag, the CTA waits on all of them; the Lamport one-shot
#: polls until every rank's slice arrived). Every 4-rank size regime of the earlier H100 grids was priced 5-10 % too fast
GRID13_CANDIDATE = {"copy": 1.42, "norm_cs1": 0.36, "norm_csn": 1.07, "peer": 0.145}
#: the terms that price main's model through predict_grid13
GRID13_MAIN = {"copy": 0.0, "norm_cs1": 1.0, "norm_csn": 1.0, "peer": 0.0}


def predict_grid13(df: pd.DataFrame, hw: HardwareSpec, terms: dict = GRID13_CANDIDATE) -> np.ndarray:
    """predict_grid11 (copy, norm_cs1, norm_csn) plus `peer` us x (g - 2) x GRID13_WAITS[impl] per row (grid 13's
    candidate; GRID13_MAIN prices predict_us itself)."""
    p = predict_grid11(df, hw, {k: terms[k] for k in ("copy", "norm_cs1", "norm_csn")})
    if not len(df):
        return p
    g = df["world"].to_numpy(float)
    waits = df["impl"].map(GRID13_WAITS).fillna(0.0).to_numpy(float)
    return p + float(terms["peer"]) * np.maximum(g - 2.0, 0.0) * waits


def grid13_fit_rows() -> pd.DataFrame:
    """The H100 rows of GRID13_FIT_GLOBS (2 and 4 ranks, every implementation, not WRONG): what fit_grid13_terms may read."""
    from hwmodels import datafiles as DF

    fr = [pd.read_csv(DF.glob(DATA_DIR, g)[-1] if "*" in g else DATA_DIR / g) for g in GRID13_FIT_GLOBS]
    m = pd.concat(fr, ignore_index=True)
    m = m[m["device"].astype(str).str.contains("H100") & ~m["note"].astype("string").fillna("").str.contains("WRONG")]
    return m.reset_index(drop=True)


def fit_grid13_terms(hw: HardwareSpec) -> dict:
    """Blind grid 13's candidate: copy, norm_cs1, norm_csn, peer together, bounded least squares on log time over
    grid13_fit_rows. Returns the fitted values rounded as GRID13_CANDIDATE holds them."""
    from scipy.optimize import least_squares

    v = grid13_fit_rows()
    y = np.log(v["median_us"].to_numpy(float))
    names = ("copy", "norm_cs1", "norm_csn", "peer")
    r = least_squares(lambda x: np.log(predict_grid13(v, hw, dict(zip(names, x)))) - y, [0.0, 1.0, 1.0, 0.0],
                      bounds=([0.0] * 4, [5.0, 3.0, 3.0, 10.0]))
    out = {n: round(float(x), 2 if n != "peer" else 3) for n, x in zip(names, r.x)}
    return {**out, "rows": len(v), "rms_log_error": round(float(np.sqrt(np.mean(r.fun ** 2))), 4)}


def blind13_grid() -> pd.DataFrame:
    """Blind grid 13's rows: BLIND13_SHAPES at 4 ranks and BLIND13_CONTROL at 2 ranks, every implementation the lab script
    runs (lab/kernels/measure_engine_allreduce.py --grid blind13)."""
    return pd.concat([grid((4,), list(BLIND13_SHAPES)), grid((2,), list(BLIND13_CONTROL))], ignore_index=True)


def earlier_shapes() -> set:
    """Every (tokens, hidden) an earlier grid measured (campaign, blind 4 and 6-12): grid 13's shapes must be in none."""
    s = {(t, h) for h in HIDDENS for t in TOKENS} | set(LARGE)
    s |= {(t, h) for h in BLIND4_HIDDENS for t in BLIND4_TOKENS} | {(t, h) for h in BLIND6_HIDDENS for t in BLIND6_TOKENS}
    s |= set(BLIND6_EXTRA) | set(BLIND7_SHAPES)
    for a in (BLIND8_SHAPES, BLIND8_CONTROL, BLIND9_SHAPES, BLIND9_CONTROL, BLIND10_SHAPES, BLIND10_CONTROL,
              BLIND11_SHAPES, BLIND11_CONTROL, BLIND12_SHAPES, BLIND12_CONTROL):
        s |= set(a)
    return s


def blind13_prediction(hw: HardwareSpec, out: str | Path, model_commit: str) -> pd.DataFrame:
    """Write blind grid 13's prediction BEFORE it is measured: pred_main_us = main's H100 model (predict_us, the model at
    BLIND13_MAIN_COMMIT, unchanged on this branch), pred_new_us = GRID13_CANDIDATE (predict_grid13); plus the fusion
    kernel's launch config of each TensorRT-LLM row."""
    df = blind13_grid()
    df["kind"] = df["impl"].map(IMPL_KIND)
    df["pred_main_us"] = np.round(predict_with(df, hw, {}), 3)
    df["pred_new_us"] = np.round(predict_grid13(df, hw, GRID13_CANDIDATE), 3)
    trtllm_launch_columns(df, int(hw.units), tokens_per_cluster=False)
    df["regime"] = size_regime(df["bytes"])
    df["device"] = hw.name
    df["main_model"] = f"the H100 model at {BLIND13_MAIN_COMMIT} (predict_us)"
    df["new_model"] = (f"the model at {model_commit}: predict_grid13 {GRID13_CANDIDATE} (copy above 2 ranks, RMSNorm by "
                       "cluster size, (g - 2) x peer per serialized peer wait; fitted on grids <= 12's H100 rows only)")
    df.to_csv(out, index=False)
    return df


def main() -> None:  # pragma: no cover - writes the committed prediction
    """`python -m simulator.calibration.engine_allreduce_grid13 MODEL_COMMIT` writes blind grid 13's prediction."""
    import sys

    from hwmodels.spec import load_hardware
    df = blind13_prediction(load_hardware("H100-SXM"), DATA_DIR / BLIND13_PRED_CSV, sys.argv[1])
    print(df.groupby(["impl", "world", "regime"])[["pred_main_us", "pred_new_us"]].agg(["size", "median"]).round(2))


if __name__ == "__main__":
    main()
