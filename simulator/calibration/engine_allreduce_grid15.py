"""Blind grid 15 of the engines' all-reduce kernels, for the H200 (4 x H200; 4 AND 2 ranks): the H200 as shipped (its own
engines' terms GRID12_CANDIDATE + the H100's custom-kind link terms, grid 13's rules on) against GRID15_H200_CANDIDATE, the
same structure with the four engines' terms AND the custom kinds' link terms (memory / link_ceiling of allreduce_1shot and
allreduce_2shot: the H200's NVLink measured, not the H100's) refitted on every LOOKED-AT 4 x H200 row (H200_LOOKED_AT: the
campaign, grid 11's two runs, grid 14's three runs). Everything it changes is a key of H200.yaml (hwmodels.roofline's
module constants, shared with the H100, are untouched), so the H100's prices cannot move.

Grid 14's not-shipped rules (engine_allreduce_grid14.GRID14_CANDIDATE: AR_FIRST_FILL_EXTRA, AR_LAMPORT_OVERLAP) are module
constants of hwmodels.roofline, not per device: an H200-only candidate cannot carry them without a per-device key, so
this candidate leaves them off (grid 14's section and the device script's H100 fallback judge them on the H100).

Shapes (tokens, hidden) in no earlier grid (earlier_shapes15); >= 4 rows in every (implementation, ranks, size regime)
cell, >= 5 in the cells the shipped H200 misses on grid 14's runs (TensorRT-LLM two-shot and vLLM one-shot at 2 ranks,
2-8 MiB; vLLM one-shot at 2 ranks <= 64 KiB; vLLM two-shot at 4 ranks, 512 KiB-1 MiB).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from hwmodels.spec import HardwareSpec

#: every 4 x H200 row measured and looked at before grid 15 (engine_allreduce.DATA_DIR)
H200_LOOKED_AT = ("engine_allreduce_nvidia-h200_x4_2026-11-26.csv",
                  "engine_allreduce_blind11_nvidia-h200_x4_2026-11-27.csv",
                  "engine_allreduce_blind11rep2_nvidia-h200_x4_2026-11-27.csv",
                  "engine_allreduce_blind14_nvidia-h200_x4_2026-11-27.csv",
                  "engine_allreduce_blind14rep2_nvidia-h200_x4_2026-11-27.csv",
                  "engine_allreduce_blind14rep3_nvidia-h200_x4_2026-11-27.csv")
#: the custom kinds whose link terms (memory = one peer's rate, link_ceiling = every peer's together) the candidate refits
LINK_KINDS = ("allreduce_1shot", "allreduce_2shot")
#: parameter -> (start, lower, upper): the engines' terms (us) and the link shares
PARAMS = {"barrier": (0.70, 0.0, 20.0), "phase": (3.50, 0.0, 20.0), "flag_store": (1.04, 0.0, 20.0),
          "norm": (1.63, 0.0, 20.0),
          "memory.allreduce_1shot": (0.7, 0.2, 1.5), "memory.allreduce_2shot": (0.7, 0.2, 1.5),
          "link_ceiling.allreduce_1shot": (0.66, 0.2, 1.5), "link_ceiling.allreduce_2shot": (0.58, 0.2, 1.5)}
#: grid 15's H200 candidate: fit_grid15_h200 (bounded least squares on log time over h200_looked_at_rows, the shipped
#: structure: predict_us with grid 13's rules on, grid 14's off), as committed before grid 15 was measured
GRID15_H200_CANDIDATE = {"barrier": 0.5473, "phase": 3.5762, "flag_store": 1.0235, "norm": 1.5991,
                         "memory.allreduce_1shot": 0.5741, "memory.allreduce_2shot": 0.8213,
                         "link_ceiling.allreduce_1shot": 0.6638, "link_ceiling.allreduce_2shot": 0.5968}

BLIND15_SHAPES = ((5, 3072), (11, 1536), (3, 7168), (21, 1280), (25, 1024), (9, 3584),
                  (31, 3072), (47, 4096), (29, 7168), (57, 2048),
                  (75, 4096), (85, 4096), (55, 6144), (95, 5120), (62, 7168), (49, 8192),
                  (145, 5120), (190, 5120), (270, 6144), (350, 5120), (480, 4096), (310, 7168), (400, 8192), (510, 6144))
BLIND15_CONTROL = ((5, 3072), (11, 1536), (3, 7168), (21, 1280), (25, 1024), (9, 3584),
                   (31, 3072), (47, 4096), (75, 4096), (95, 5120), (49, 8192),
                   (145, 5120), (190, 5120), (270, 6144), (350, 5120), (480, 4096), (310, 7168), (400, 8192))
BLIND15_PRED_CSV = "engine_allreduce_blind15_prediction_H200_2026-11-27.csv"
BLIND15_MEAS_GLOB = "engine_allreduce_blind15_nvidia*.csv"
#: main's commit (the H200 as shipped) the prediction prices
BLIND15_MAIN_COMMIT = "7f96efc"


def earlier_shapes15() -> set:
    """Every (tokens, hidden) an earlier grid measured (campaign, blind 4, 6-14)."""
    from simulator.calibration import engine_allreduce_grid13 as G13
    from simulator.calibration import engine_allreduce_grid14 as G14

    s = G13.earlier_shapes()
    for a in (G13.BLIND13_SHAPES, G13.BLIND13_CONTROL, G14.BLIND14_SHAPES, G14.BLIND14_CONTROL):
        s |= set(a)
    return s


def blind15_grid() -> pd.DataFrame:
    """Blind grid 15's rows: BLIND15_SHAPES at 4 ranks, BLIND15_CONTROL at 2 (lab/kernels/measure_engine_allreduce.py
    --grid blind15)."""
    from simulator.calibration import engine_allreduce as EA

    return pd.concat([EA.grid((4,), list(BLIND15_SHAPES)), EA.grid((2,), list(BLIND15_CONTROL))], ignore_index=True)


def h200_looked_at_rows(data_dir: Path | None = None) -> pd.DataFrame:
    """The H200 rows of H200_LOOKED_AT (device H200, not WRONG): all the candidate may read."""
    from hwmodels import datafiles as DF
    from simulator.calibration.engine_allreduce import DATA_DIR

    d = DATA_DIR if data_dir is None else data_dir
    m = pd.concat([pd.read_csv(DF.resolve(d / f)) for f in H200_LOOKED_AT], ignore_index=True)
    m = m[m["device"].astype(str).str.contains("H200") & ~m["note"].astype("string").fillna("").str.contains("WRONG")]
    return m.reset_index(drop=True)


def with_grid15_terms(hw: HardwareSpec, p: dict) -> HardwareSpec:
    """`hw` with the engines' terms and the custom kinds' link shares of `p` (PARAMS' names)."""
    from dataclasses import replace

    from simulator.calibration import engine_allreduce as EA

    e = hw.efficiency
    mem = {**e.memory, **{k: float(p[f"memory.{k}"]) for k in LINK_KINDS}}
    ceil = {**e.link_ceiling, **{k: float(p[f"link_ceiling.{k}"]) for k in LINK_KINDS}}
    h = hw.with_efficiency(replace(e, memory=mem, link_ceiling=ceil))
    return EA.with_engine_terms(h, {k: p[k] for k in EA.TERMS})


def predict_shipped(df: pd.DataFrame, hw: HardwareSpec) -> np.ndarray:
    """The shipped structure: predict_us with grid 13's rules on and grid 14's off (as main prices today)."""
    from simulator.calibration import engine_allreduce as EA
    from simulator.calibration import engine_allreduce_grid14 as G14

    return G14.predict_grid14(df, hw, EA.GRID14_RULES_OFF)


def fit_grid15_h200(rows: pd.DataFrame | None = None) -> dict:
    """GRID15_H200_CANDIDATE: every PARAMS term together, bounded least squares on log time over h200_looked_at_rows."""
    from scipy.optimize import least_squares

    from hwmodels.spec import load_hardware

    h200 = load_hardware("H200")
    v = h200_looked_at_rows() if rows is None else rows
    y = np.log(v["median_us"].to_numpy(float))
    names = list(PARAMS)

    def resid(x):
        return np.log(np.maximum(predict_shipped(v, with_grid15_terms(h200, dict(zip(names, x)))), 1e-3)) - y
    r = least_squares(resid, [PARAMS[n][0] for n in names], bounds=([PARAMS[n][1] for n in names],
                                                                     [PARAMS[n][2] for n in names]))
    return {**{n: round(float(x), 4) for n, x in zip(names, r.x)}, "fit_rows": len(v),
            "rms_log_error": round(float(np.sqrt(np.mean(r.fun ** 2))), 4)}


def grid15_candidate(hw: HardwareSpec | None = None, p: dict | None = None) -> HardwareSpec:
    from hwmodels.spec import load_hardware

    return with_grid15_terms(load_hardware("H200") if hw is None else hw, GRID15_H200_CANDIDATE if p is None else p)


def blind15_prediction(out: str | Path, model_commit: str) -> pd.DataFrame:
    """Write blind grid 15's prediction BEFORE it is measured: pred_main_us = the H200 as shipped (BLIND15_MAIN_COMMIT),
    pred_new_us = GRID15_H200_CANDIDATE; pred_h100_us = the H100 as shipped (not scored)."""
    from hwmodels.spec import load_hardware
    from simulator.calibration import engine_allreduce as EA

    h200, h100 = load_hardware("H200"), load_hardware("H100-SXM")
    df = blind15_grid()
    df["kind"] = df["impl"].map(EA.IMPL_KIND)
    df["pred_main_us"] = np.round(predict_shipped(df, h200), 3)
    df["pred_new_us"] = np.round(predict_shipped(df, grid15_candidate(h200)), 3)
    df["pred_h100_us"] = np.round(predict_shipped(df, h100), 3)
    EA.trtllm_launch_columns(df, int(h200.units), tokens_per_cluster=False)
    df["regime"] = EA.size_regime(df["bytes"])
    df["device"] = h200.name
    df["main_model"] = f"the H200 as shipped at {BLIND15_MAIN_COMMIT} (predict_us)"
    df["new_model"] = (f"the model at {model_commit}: the H200 with GRID15_H200_CANDIDATE {GRID15_H200_CANDIDATE} "
                       "(engines' terms + custom kinds' link shares refitted on the looked-at 4 x H200 rows)")
    df.to_csv(out, index=False)
    return df


def write_h200_grid15_terms(out_dir: Path, target: str = "H200") -> tuple[Path, dict]:
    """Merge GRID15_H200_CANDIDATE into out_dir/<target>.yaml ONLY: engine_allreduce_us, memory / link_ceiling of
    LINK_KINDS, and the record under engine_allreduce (other keys kept)."""
    from simulator.calibration import checks as C
    from simulator.calibration import engine_allreduce as EA

    c = GRID15_H200_CANDIDATE
    doc = {"engine_allreduce_us": {n: c[n] for n in EA.TERMS},
           "memory": {k: c[f"memory.{k}"] for k in LINK_KINDS},
           "link_ceiling": {k: c[f"link_ceiling.{k}"] for k in LINK_KINDS},
           "engine_allreduce": {
               "source": "simulator/calibration/engine_allreduce_grid15.py write_h200_grid15_terms: GRID15_H200_CANDIDATE "
                         f"(fit_grid15_h200 on {', '.join(H200_LOOKED_AT)}: every looked-at 4 x H200 row, the shipped "
                         "structure, grid 13's rules on): the engines' terms and the custom kinds' memory / link_ceiling "
                         "of the H200's own NVLink; judged on blind grid 15 (4 x H200)",
               "links_from": "H200",
               "terms": dict(c)}}
    p = Path(out_dir) / f"{target}.yaml"
    merged = C.merge_into(p, doc, {"engine_allreduce_us": None, "engine_allreduce": None,
                                   "memory": LINK_KINDS, "link_ceiling": LINK_KINDS})
    return C.write_checked(p, merged, ""), c
