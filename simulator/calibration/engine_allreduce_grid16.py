"""Blind grid 16 of the engines' all-reduce kernels (4 x H100 or 4 x H200, whichever the lender gives; 4 AND 2 ranks):
grid 14's two not-shipped rules (engine_allreduce_grid14.GRID14_CANDIDATE: vLLM's two-shot in ONE loop step priced by its fill,
AR_FIRST_FILL_EXTRA; the 2-rank Lamport one-shot's phase / transfer overlap, AR_LAMPORT_OVERLAP) as PER-DEVICE values
(the fitted file's `engine_allreduce_rules`, hwmodels.spec ENGINE_AR_RULES), judged against each device as shipped.

    H100   main = the H100 as shipped (grid 13's rules; grid 14's off), new = the H100 + GRID14_CANDIDATE's values, fitted
           on looked-at H100 rows only (engine_allreduce_grid14.fit_grid14_terms; committed 85d8fc2, before grid 14 ran)
    H200   main = the H200 as shipped (GRID15_H200_CANDIDATE, grid 13's rules on), new = the H200 + GRID16_H200_RULES:
           the same two rules fitted by the same 1-D least squares on every LOOKED-AT 4 x H200 row (the campaign, grid
           11's two runs, grid 14's three runs, grid 15), the H200's shipped terms held

Both devices' prices are committed (BLIND16_PRED_CSV) before lab/kernels/run_engine_allreduce_blind16.sh measures: one
call, the device script picks the grid by the GPUs it finds (on H100s it first runs grid 14, whose H100 prices were
committed at 85d8fc2: the H100 judgement of GRID14_CANDIDATE grid 14 never had).

Shapes (tokens, hidden) in no earlier grid (earlier_shapes16); >= 5 rows in every (implementation, ranks, size regime)
cell, >= 7 in the cells the shipped models miss (vLLM's two-shot at 4 ranks, 512 KiB-1 MiB: one loop step; vLLM's one-shot
at <= 64 KiB; the 2-rank Lamport one-shot at 128 KiB-1 MiB).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from hwmodels.spec import HardwareSpec

BLIND16_SHAPES = ((11, 2560), (8, 2560), (14, 2048), (6, 2560), (24, 1024), (15, 1536), (16, 1280),
                  (11, 4096), (21, 3072), (30, 2560), (39, 4096), (27, 5120), (60, 2048),
                  (80, 4096), (92, 5120), (44, 7168), (58, 6144), (39, 8192), (150, 3072), (250, 2048),
                  (200, 5120), (160, 8192), (380, 4096), (480, 6144), (700, 5120), (1000, 3584), (500, 8192))
BLIND16_CONTROL = ((11, 2560), (8, 2560), (14, 2048), (24, 1024), (15, 1536),
                   (21, 3072), (30, 2560), (39, 4096), (60, 2048), (80, 4096), (44, 7168), (150, 3072),
                   (200, 5120), (160, 8192), (380, 4096), (480, 6144), (700, 5120), (500, 8192))
#: the committed prediction, one file for both devices (column `device`: H100-SXM / H200)
BLIND16_PRED_CSV = "engine_allreduce_blind16_prediction_2026-11-27.csv"
BLIND16_MEAS_GLOB = "engine_allreduce_blind16_nvidia*.csv"
#: main's commit (both devices as shipped) the prediction prices
BLIND16_MAIN_COMMIT = "4ee4cbc"
#: the H100's candidate: grid 14's rules at GRID14_CANDIDATE's values (engine_allreduce_grid14.fit_grid14_terms, H100 rows only)
GRID16_H100_RULES = {"first_fill_extra": 0.57, "lamport_overlap": 0.19}
#: the H200's candidate: fit_grid16_h200_rules on h200_looked_at_rows16 (42 vLLM two-shot one-step rows, 242 2-rank Lamport
#: rows), as committed before grid 16 was measured
GRID16_H200_RULES = {"first_fill_extra": 0.66, "lamport_overlap": 0.11}
#: the grid-15 measurement the H200's fit may read besides engine_allreduce_grid15.H200_LOOKED_AT
GRID15_MEAS = "engine_allreduce_blind15_nvidia-h200_x4_2026-11-27.csv"


def earlier_shapes16() -> set:
    """Every (tokens, hidden) an earlier grid measured (campaign, blind 4, 6-15)."""
    from simulator.calibration import engine_allreduce_grid15 as G15

    return G15.earlier_shapes15() | set(G15.BLIND15_SHAPES) | set(G15.BLIND15_CONTROL)


def blind16_grid() -> pd.DataFrame:
    """Blind grid 16's rows: BLIND16_SHAPES at 4 ranks, BLIND16_CONTROL at 2 (lab/kernels/measure_engine_allreduce.py
    --grid blind16)."""
    from simulator.calibration import engine_allreduce as EA

    return pd.concat([EA.grid((4,), list(BLIND16_SHAPES)), EA.grid((2,), list(BLIND16_CONTROL))], ignore_index=True)


def with_rules(hw: HardwareSpec, rules: dict) -> HardwareSpec:
    """`hw` with its engine_ar_rules replaced by `rules` (engine_allreduce.with_device_rules)."""
    from simulator.calibration.engine_allreduce import with_device_rules

    return with_device_rules(hw, rules)


def predict(df: pd.DataFrame, hw: HardwareSpec) -> np.ndarray:
    """The shipped structure (grid 13's rules on, grid 14's module constants 0) with hw's own engine_ar_rules."""
    from simulator.calibration import engine_allreduce as EA

    return EA.predict_us(df, hw)


def h200_looked_at_rows16() -> pd.DataFrame:
    """Every looked-at 4 x H200 row before grid 16: engine_allreduce_grid15.H200_LOOKED_AT + grid 15 (not WRONG)."""
    from hwmodels import datafiles as DF
    from simulator.calibration import engine_allreduce_grid15 as G15
    from simulator.calibration.engine_allreduce import DATA_DIR

    g15 = pd.read_csv(DF.resolve(DATA_DIR / GRID15_MEAS))
    g15 = g15[~g15["note"].astype("string").fillna("").str.contains("WRONG")]
    return pd.concat([G15.h200_looked_at_rows(), g15], ignore_index=True)


def fit_grid16_h200_rules() -> dict:
    """GRID16_H200_RULES: each rule by a bounded 1-D least squares on log time over its own rows of h200_looked_at_rows16
    (first_fill_extra: the 4-rank vLLM two-shot rows in one loop step; lamport_overlap: the 2-rank Lamport one-shot rows,
    plain and + RMSNorm), the other off, the H200's shipped terms held (engine_allreduce_grid14.fit_grid14_terms on H200 rows)."""
    from scipy.optimize import minimize_scalar

    from hwmodels.spec import load_hardware
    from simulator.kernels.allreduce import vllm_twoshot_waves

    h200 = load_hardware("H200")
    v = h200_looked_at_rows16()
    two = v[(v["impl"] == "vllm_twoshot") & (v["world"] == 4)]
    two = two[vllm_twoshot_waves(two["bytes"], two["world"]) <= 1.0].reset_index(drop=True)
    lam = v[v["impl"].str.startswith("trtllm") & v["impl"].str.endswith("oneshot") & (v["world"] == 2)]
    lam = lam.reset_index(drop=True)
    out = {}
    for name, rows in (("first_fill_extra", two), ("lamport_overlap", lam)):
        y = np.log(rows["median_us"].to_numpy(float))
        r = minimize_scalar(lambda x: float(np.sum((np.log(predict(rows, with_rules(h200, {name: x}))) - y) ** 2)),
                            bounds=(0.0, 1.0), method="bounded", options={"xatol": 1e-4})
        out[name] = round(float(r.x), 2)
        out[f"{name}_rows"] = len(rows)
    return out


def candidates() -> dict[str, tuple[HardwareSpec, HardwareSpec]]:
    """device name -> (main: the device as shipped, new: the device with its grid-16 rules)."""
    from hwmodels.spec import load_hardware

    h100, h200 = load_hardware("H100-SXM"), load_hardware("H200")
    return {"H100-SXM": (h100, with_rules(h100, GRID16_H100_RULES)),
            "H200": (h200, with_rules(h200, GRID16_H200_RULES))}


def blind16_prediction(out: str | Path, model_commit: str) -> pd.DataFrame:
    """Write blind grid 16's prediction BEFORE it is measured: every row once per device (H100-SXM, H200), pred_main_us =
    the device as shipped at BLIND16_MAIN_COMMIT, pred_new_us = the device with its grid-16 rules."""
    from simulator.calibration import engine_allreduce as EA

    parts = []
    for name, (main, new) in candidates().items():
        df = blind16_grid()
        df["kind"] = df["impl"].map(EA.IMPL_KIND)
        df["pred_main_us"] = np.round(predict(df, main), 3)
        df["pred_new_us"] = np.round(predict(df, new), 3)
        EA.trtllm_launch_columns(df, int(main.units), tokens_per_cluster=False)
        df["regime"] = EA.size_regime(df["bytes"])
        df["device"] = name
        rules = GRID16_H100_RULES if name == "H100-SXM" else GRID16_H200_RULES
        df["main_model"] = f"the {name} as shipped at {BLIND16_MAIN_COMMIT}"
        df["new_model"] = f"the model at {model_commit}: the {name} with engine_allreduce_rules {rules}"
        parts.append(df)
    df = pd.concat(parts, ignore_index=True)
    df.to_csv(out, index=False)
    return df


def write_rules(out_dir: Path, target: str, rules: dict, source: str) -> Path:
    """Merge `rules` into out_dir/<target>.yaml as `engine_allreduce_rules` ONLY (other keys kept), with its source
    under engine_allreduce_rules_source."""
    from simulator.calibration import checks as C

    p = Path(out_dir) / f"{target}.yaml"
    doc = {"engine_allreduce_rules": {k: float(v) for k, v in rules.items()}, "engine_allreduce_rules_source": source}
    merged = C.merge_into(p, doc, {"engine_allreduce_rules": None, "engine_allreduce_rules_source": None})
    return C.write_checked(p, merged, "")
