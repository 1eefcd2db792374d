"""Blind grid 11 of the engines' all-reduce kernels: grid 10's copies above 2 ranks only and the fused RMSNorm by
cluster size, one- and two-shot (predict_grid11, GRID11_CANDIDATE; run on 4 x H200, not shipped);
BLIND11_REPLICATE_CSV is its second run (moved unchanged from engine_allreduce.py, whose live code it imports; the
grid's record is the comment above its shapes). `python -m simulator.calibration.engine_allreduce_grid11
MODEL_COMMIT` writes its prediction.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from hwmodels.spec import HardwareSpec
from simulator.calibration.engine_allreduce import (
    DATA_DIR,
    IMPL_KIND,
    _write_prediction,
    grid,
    predict_with,
    size_regime,
    trtllm_launch_columns,
)
from simulator.calibration.engine_allreduce_grid10 import GRID10_FIT_GLOBS

#: blind grid 11 (4 ranks AND 2 ranks, >= 4 rows in every (implementation, ranks, size regime) cell; token counts in none
#: of the earlier grids; hidden 1024 / 1536 for the small messages (a one-CTA cluster: trtllm_cluster_size), TensorRT-LLM's
#: two-shot at 132 CTAs in clusters of 4 (tokens 131), vLLM's one- and two-shot across the middle regime): main = the
#: model at BLIND11_MAIN_COMMIT (grid 9's, the standing one), candidate = GRID11_CANDIDATE (predict_grid11), fitted by
#: fit_grid11_terms on grids 4, 6, 7, 8, 9 and 10's rows only (10's are looked-at); both committed in BLIND11_PRED_CSV
#: (7984042) before lab/kernels/run_engine_allreduce_blind11.sh measured them. The one 4-GPU call asked for 4 x H100 and
#: ran on 4 x H200 (the lender's substitute; 210 rows, 0 wrong sums): the H100 model is judged there ACROSS devices.
#: Main 11.8 / 39.7 %, 12 of 31 regimes; candidate 12.5 / 39.7 %, 11 of 31: NOT shipped (predict_us prices main's model;
#: GRID11_CANDIDATE is the record of the discarded one). The family's STANDING stays on grid 10 (4 x H100)
GRID11_FIT_GLOBS = GRID10_FIT_GLOBS + ("engine_allreduce_blind10_nvidia*.csv",)
BLIND11_SHAPES = ((19, 1536), (21, 1536), (23, 1024), (27, 1024), (29, 1024), (15, 2048),
                  (25, 4096), (37, 4096), (45, 4096), (61, 4096), (39, 5120),
                  (67, 4096), (93, 4096), (115, 4096), (75, 6144), (47, 8192),
                  (131, 4096), (155, 4096), (211, 5120), (247, 4096), (333, 4096), (371, 5120), (505, 4096),
                  (745, 4096), (1023, 4096), (277, 8192), (163, 7168))
BLIND11_CONTROL = ((19, 1536), (23, 1024), (15, 2048), (27, 1024),
                   (31, 2048), (25, 4096), (45, 4096), (93, 4096), (47, 8192), (67, 4096),
                   (131, 4096), (247, 4096), (505, 4096), (1023, 4096), (163, 7168))
BLIND11_PRED_CSV = "engine_allreduce_blind11_prediction_H100-SXM_2026-11-27.csv.gz"
BLIND11_MEAS_GLOB = "engine_allreduce_blind11_nvidia*.csv"
BLIND11_MAIN_COMMIT = "f9af03b"
#: grid 11 measured a second time by the lead (the same script, .dev copy of run_engine_allreduce_blind11.sh, another
#: 4 x H100 request served by another 4 x H200 host, 2026-11-27; named so that BLIND11_MEAS_GLOB does not take it):
#: how far two hosts of one kind disagree, the floor under any model's error on these rows
BLIND11_REPLICATE_CSV = "engine_allreduce_blind11rep2_nvidia-h200_x4_2026-11-27.csv"
#: blind grid 11's candidate (fit_grid11_terms): copy = grid 10's serialized local copies of TensorRT-LLM's two-shot, now
#: only above 2 ranks (at 2 ranks the one-peer link bound already covers them: grid 10's 2-rank controls, looked-at);
#: norm_cs1 / norm_csn = the share of the fused RMSNorm's `norm` term a call pays with ONE CTA a cluster (no
#: cluster.sync in FusedOp::rms_norm) / with more, for the Lamport one-shot AND the two-shot (launcher's cluster size)
GRID11_CANDIDATE = {"copy": 1.93, "norm_cs1": 0.28, "norm_csn": 1.18}
#: the terms that price main's model through predict_grid11 (no copy, the norm term at any cluster size)
GRID11_MAIN = {"copy": 0.0, "norm_cs1": 1.0, "norm_csn": 1.0}


def predict_grid11(df: pd.DataFrame, hw: HardwareSpec, terms: dict = GRID11_CANDIDATE) -> np.ndarray:
    """predict_us with blind grid 11's candidate terms (GRID11_CANDIDATE; GRID11_MAIN prices predict_us itself), read from
    flashinfer 0.6.4 include/flashinfer/comm/trtllm_allreduce_fusion.cuh @ f1e6fdcb: allreduce_fusion_kernel_twoshot_sync
    copies the input into its own comm buffer before the first Barrier::sync and reads the sums back + writes the output
    after the last (`copy` x 2 x message at the elementwise HBM rate, serialized with the link phases, above 2 ranks
    only); allreduce_fusion_kernel_launcher's cluster size (trtllm_cluster_size, one-shot: one cluster per token, two-shot:
    per token of a rank's share) decides whether FusedOp::rms_norm runs its two cluster.sync: the serialized RMSNorms
    (one-shot 1, two-shot g) pay `norm_cs1` of the norm term with one CTA a cluster, `norm_csn` with more."""
    from simulator.kernels.allreduce import trtllm_cluster_size

    base = predict_with(df, hw, {}) if len(df) else np.zeros(0)
    if not len(df):
        return base
    impl = df["impl"].astype(str)
    trt = impl.str.startswith("trtllm").to_numpy()
    two = trt & impl.str.endswith("twoshot").to_numpy()
    one = trt & impl.str.endswith("oneshot").to_numpy()
    nrm = impl.str.startswith("trtllm_arnorm").to_numpy()
    g = df["world"].to_numpy(float)
    hbm = hw.hbm_bw_bytes_s * hw.efficiency.memory["elementwise"]
    copy = np.where(two & (g > 2.0), float(terms["copy"]) * 2.0 * df["bytes"].to_numpy(float) / hbm * 1e6, 0.0)
    cs = np.where(one, trtllm_cluster_size(df["tokens"], df["hidden"], df["world"], True, int(hw.units)),
                  trtllm_cluster_size(df["tokens"], df["hidden"], df["world"], False, int(hw.units)))
    norm_us = (hw.efficiency.engine_ar or {}).get("norm_s", 0.0) * 1e6
    share = np.where(cs == 1, float(terms["norm_cs1"]), float(terms["norm_csn"]))
    nn = np.where(two, g, 1.0)
    dnorm = np.where(nrm, (share - 1.0) * nn * norm_us, 0.0)
    return base + copy + dnorm


def grid11_fit_rows() -> pd.DataFrame:
    """The 2- and 4-rank TensorRT-LLM rows of blind grids 4, 6, 7, 8, 9 and 10 (GRID11_FIT_GLOBS; not WRONG) whose price
    the candidate's terms move (two-shot, plain and + RMSNorm; + RMSNorm one-shot): what fit_grid11_terms may read."""
    from hwmodels import datafiles as DF

    m = pd.concat([pd.read_csv(DF.glob(DATA_DIR, g)[-1]) for g in GRID11_FIT_GLOBS], ignore_index=True)
    m = m[~m["note"].astype("string").fillna("").str.contains("WRONG")]
    i = m["impl"].astype(str)
    m = m[(i.str.startswith("trtllm") & i.str.endswith("twoshot")) | (i == "trtllm_arnorm_oneshot")]
    return m.reset_index(drop=True)


def fit_grid11_terms(hw: HardwareSpec) -> dict:
    """Blind grid 11's candidate: copy, norm_cs1, norm_csn together, bounded least squares on log time over
    grid11_fit_rows. Returns the fitted values rounded as GRID11_CANDIDATE holds them."""
    from scipy.optimize import least_squares

    v = grid11_fit_rows()
    y = np.log(v["median_us"].to_numpy(float))
    r = least_squares(lambda x: np.log(predict_grid11(v, hw, {"copy": x[0], "norm_cs1": x[1], "norm_csn": x[2]})) - y,
                      [0.0, 1.0, 1.0], bounds=([0.0, 0.0, 0.0], [5.0, 3.0, 3.0]))
    return {"copy": round(float(r.x[0]), 2), "norm_cs1": round(float(r.x[1]), 2), "norm_csn": round(float(r.x[2]), 2),
            "rows": len(v), "rms_log_error": round(float(np.sqrt(np.mean(r.fun ** 2))), 4)}


def blind11_grid() -> pd.DataFrame:
    """Blind grid 11's rows: BLIND11_SHAPES at 4 ranks and BLIND11_CONTROL at 2 ranks, every implementation the lab script
    runs (lab/kernels/measure_engine_allreduce.py --grid blind11)."""
    return pd.concat([grid((4,), list(BLIND11_SHAPES)), grid((2,), list(BLIND11_CONTROL))], ignore_index=True)


def blind11_prediction(hw: HardwareSpec, out: str | Path, model_commit: str) -> pd.DataFrame:
    """Write blind grid 11's prediction BEFORE it is measured: pred_main_us = main's model (predict_us: the model at
    BLIND11_MAIN_COMMIT, unchanged on this branch), pred_new_us = GRID11_CANDIDATE (predict_grid11); plus the fusion
    kernel's launch config of each TensorRT-LLM row (CTAs, CTAs a cluster, tokens a cluster)."""
    df = blind11_grid()
    df["kind"] = df["impl"].map(IMPL_KIND)
    df["pred_main_us"] = np.round(predict_with(df, hw, {}), 3)
    df["pred_new_us"] = np.round(predict_grid11(df, hw, GRID11_CANDIDATE), 3)
    trtllm_launch_columns(df, int(hw.units))
    df["regime"] = size_regime(df["bytes"])
    return _write_prediction(df, hw, out, BLIND11_MAIN_COMMIT, model_commit,
                             f"; TensorRT-LLM's two-shot's local copies above 2 ranks and the fused RMSNorm by cluster "
                             f"size, one- and two-shot {GRID11_CANDIDATE} (fitted on grids 4, 6-10's rows)")


def main() -> None:  # pragma: no cover - writes the committed prediction
    """`python -m simulator.calibration.engine_allreduce_grid11 MODEL_COMMIT` writes blind grid 11's prediction."""
    import sys

    from hwmodels.spec import load_hardware
    df = blind11_prediction(load_hardware("H100-SXM"), DATA_DIR / BLIND11_PRED_CSV, sys.argv[1])
    print(df.groupby(["impl", "world", "regime"])[["pred_main_us", "pred_new_us"]].agg(["size", "median"]).round(2))


if __name__ == "__main__":
    main()
