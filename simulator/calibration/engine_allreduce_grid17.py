"""Blind grid 17 of the engines' all-reduce kernels: 2 ranks ONLY, the H100 (2 x H100 NVLink), aimed at the two 2-rank
cells grid 16 missed on both H100 hosts (engine_allreduce_replicates REPLICATES[16]): TensorRT-LLM's Lamport one-shot,
plain, <= 64 KiB (the model ~0.4 us too slow on 3-5 us rows) and TensorRT-LLM's two-shot, plain, 2-8 MiB (~14 % too slow).

    main = the H100 as shipped (GRID16_H100_RULES: first_fill_extra 0.57, lamport_overlap 0.19)
    new  = the H100 + GRID17_H100_RULES: two engine-only 2-rank rules (hwmodels.roofline AR_LAMPORT_PHASE2,
           AR_TWOSHOT2_LINK; hwmodels.spec ENGINE_AR_RULES lamport_phase2 / twoshot2_link), fitted by fit_grid17_h100_rules
           on every LOOKED-AT H100 row at 2 ranks (every engine_allreduce_*h100* measurement: the campaign, grids 4-16 and
           their H100 replicates), nothing of grid 17
    alt  = GRID17_H100_ALT (named before measuring, NOT the shipping candidate): the Lamport pair fitted on the plain AND
           the + RMSNorm 2-rank Lamport rows

Source (flashinfer 0.6.4 include/flashinfer/comm/trtllm_allreduce_fusion.cuh @ f1e6fdcb):
  allreduce_fusion_kernel_oneshot_lamport: each vector is stored (posted st) into every rank's Lamport buffer, the
      previous call's buffer cleared, then the own buffer polled with ld.volatile until no -0.0 is left: no barrier, one
      ONE-WAY trip per call; the engines' phase_s was fitted with vLLM's pull one-shot (a load's round trip) on the same
      rows -> lamport_phase2: the 2-rank Lamport pays this share of phase_s (refitted together with lamport_overlap)
  allreduce_fusion_kernel_twoshot_sync: the input copied into the own comm buffer, Barrier::sync, then each rank loads
      its token slice from every rank's buffer and STORES the sum into every rank's buffer in the same loop, Barrier::sync,
      the sums read back locally: at 2 ranks one peer, its half loaded from the peer while the other half's sums are
      pushed to it, the two directions of the link busy at once -> twoshot2_link: the 2-rank TensorRT-LLM two-shot's link
      bytes at this share of the datasheet link rate, in place of the own kernel's max(link / ceiling, link / memory)

Shapes (tokens, hidden) in no earlier grid (earlier_shapes17 = grid 16's earlier_shapes16 + grid 16's shapes), every
implementation at 2 ranks (vLLM's one-shot, TensorRT-LLM's Lamport one-shot and two-shot, plain and + RMSNorm): 16 shapes
<= 64 KiB, 8 at 128 KiB-1 MiB, 14 at 2-8 MiB, 6 beyond 8 MiB (>= 6 rows per (implementation, regime) cell, 14-16 in the
two target cells). lab/kernels/measure_engine_allreduce.py v14 --grid blind17, lab/kernels/run_engine_allreduce_blind17.sh.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

BLIND17_SMALL = ((3, 4608), (4, 3072), (5, 2048), (9, 1280), (10, 1536), (12, 1024), (17, 1024), (3, 3584),
                 (4, 6144), (7, 1536), (20, 1280), (25, 1280), (31, 1024), (6, 4608), (23, 1280), (15, 1024))
BLIND17_MIDDLE = ((10, 5120), (33, 3072), (70, 2048), (58, 4096), (96, 3584), (37, 7168), (110, 4096), (62, 6144))
BLIND17_LARGE = ((134, 8192), (170, 6144), (210, 5120), (270, 4096), (335, 4096), (262, 6144), (318, 5120), (444, 4096),
                 (372, 7168), (425, 6144), (580, 5120), (760, 4096), (470, 8192), (990, 4096))
BLIND17_BEYOND = ((610, 8192), (860, 6144), (1100, 5120), (1500, 4096), (900, 8192), (1700, 4096))
BLIND17_SHAPES = BLIND17_SMALL + BLIND17_MIDDLE + BLIND17_LARGE + BLIND17_BEYOND
BLIND17_WORLD = 2
#: the committed prediction (H100-SXM only) and the measurement's glob
BLIND17_PRED_CSV = "engine_allreduce_blind17_prediction_H100-SXM_2026-11-28.csv"
BLIND17_MEAS_GLOB = "engine_allreduce_blind17_nvidia-h100*.csv"
#: main's commit (the H100 as shipped) the prediction prices
BLIND17_MAIN_COMMIT = "afb6b98"
#: the H100's candidate: fit_grid17_h100_rules() as committed before grid 17 was measured (grid 16's rules kept, the
#: Lamport overlap refitted with the new phase share)
GRID17_H100_RULES = {"first_fill_extra": 0.57, "lamport_overlap": 0.10, "lamport_phase2": 0.911, "twoshot2_link": 0.533}
#: the alternative named before measuring (NOT shipped whatever grid 17 says): the Lamport pair fitted on plain + RMSNorm
GRID17_H100_ALT = {"first_fill_extra": 0.57, "lamport_overlap": 0.143, "lamport_phase2": 0.944, "twoshot2_link": 0.533}
#: the file name parts that mark an H100 measurement of the engines' kernels (the looked-at rows)
H100_GLOB = "engine_allreduce_*h100*.csv*"


def earlier_shapes17() -> set:
    """Every (tokens, hidden) an earlier grid measured (campaign, blind 4, 6-16)."""
    from simulator.calibration import engine_allreduce_grid16 as G16

    return G16.earlier_shapes16() | set(G16.BLIND16_SHAPES) | set(G16.BLIND16_CONTROL)


def blind17_grid() -> pd.DataFrame:
    """Blind grid 17's rows: BLIND17_SHAPES at 2 ranks (lab/kernels/measure_engine_allreduce.py --grid blind17)."""
    from simulator.calibration import engine_allreduce as EA

    return EA.grid((BLIND17_WORLD,), list(BLIND17_SHAPES))


def h100_looked_at_rows(world: int = 2, data_dir: Path | None = None, names=None, exclude: str = "blind17") -> pd.DataFrame:
    """Every measured H100 row of the engines' kernels at `world` ranks (H100_GLOB, predictions and grid 17 left out,
    WRONG rows dropped; `exclude`: the grid whose files are left out), with the file it came from. The glob also finds files committed after a grid's prediction
    (later grids, replicates): `names` (file names, e.g. lab/kernels/data_order.py committed_before(the grid's files))
    keeps only those, which is how a grid's fit is reproduced on exactly the rows it saw."""
    from hwmodels import datafiles as DF
    from simulator.calibration import engine_allreduce as EA

    d = EA.DATA_DIR if data_dir is None else data_dir
    parts = []
    for p in DF.glob(d, H100_GLOB):
        name = Path(p).name
        if "prediction" in name or exclude in name or (names is not None and name not in names):
            continue
        m = pd.read_csv(p)
        if "median_us" not in m:
            continue
        parts.append(m.assign(file=name))
    v = pd.concat(parts, ignore_index=True)
    v = v[~v["note"].astype("string").fillna("").str.contains("WRONG") & v["impl"].isin(list(EA.IMPL_KIND))]
    return v[v["world"] == world].reset_index(drop=True)


def fit_grid17_h100_rules(rows: pd.DataFrame | None = None) -> dict:
    """GRID17_H100_RULES from the looked-at 2-rank H100 rows, the H100's shipped terms and grid 16's rules held:
    twoshot2_link by a bounded 1-D least squares on log time over the plain TensorRT-LLM two-shot rows >= 1 MiB (where
    the link dominates); (lamport_overlap, lamport_phase2) together (L-BFGS-B, both in [0, 1]) over the plain Lamport
    one-shot rows (the variant whose cell missed; ALT: plain + RMSNorm)."""
    from scipy.optimize import minimize, minimize_scalar

    from hwmodels.spec import load_hardware
    from simulator.calibration.engine_allreduce_grid16 import with_rules

    h = load_hardware("H100-SXM")
    base = dict(h.efficiency.engine_ar_rules)
    v = h100_looked_at_rows() if rows is None else rows
    two = v[(v["impl"] == "trtllm_ar_twoshot") & (v["bytes"] >= 1 << 20)].reset_index(drop=True)
    y = np.log(two["median_us"].to_numpy(float))
    r = minimize_scalar(lambda x: float(np.sum((np.log(predict(two, with_rules(h, {**base, "twoshot2_link": x}))) - y)
                                               ** 2)), bounds=(0.3, 1.0), method="bounded", options={"xatol": 1e-4})
    out = {**base, "twoshot2_link": round(float(r.x), 3)}
    alt = dict(out)
    for dst, impls in ((out, ("trtllm_ar_oneshot",)), (alt, ("trtllm_ar_oneshot", "trtllm_arnorm_oneshot"))):
        lam = v[v["impl"].isin(impls)].reset_index(drop=True)
        y = np.log(lam["median_us"].to_numpy(float))

        def f(x, lam=lam, y=y):
            rr = {**base, "lamport_overlap": x[0], "lamport_phase2": x[1]}
            return float(np.sum((np.log(predict(lam, with_rules(h, rr))) - y) ** 2))
        q = minimize(f, [base.get("lamport_overlap", 0.0), 0.95], bounds=[(0.0, 1.0), (0.0, 1.0)], method="L-BFGS-B")
        dst["lamport_overlap"], dst["lamport_phase2"] = round(float(q.x[0]), 3), round(float(q.x[1]), 3)
    return {"new": out, "alt": alt, "twoshot_rows": len(two),
            "lamport_rows": int((v["impl"] == "trtllm_ar_oneshot").sum()),
            "lamport_alt_rows": int(v["impl"].isin(["trtllm_ar_oneshot", "trtllm_arnorm_oneshot"]).sum())}


def predict(df: pd.DataFrame, hw) -> np.ndarray:
    from simulator.calibration import engine_allreduce as EA

    return EA.predict_us(df, hw)


def candidates() -> dict:
    """name -> the H100 as priced: main (as shipped), new (GRID17_H100_RULES), alt (GRID17_H100_ALT)."""
    from hwmodels.spec import load_hardware
    from simulator.calibration.engine_allreduce_grid16 import with_rules

    h = load_hardware("H100-SXM")
    return {"main": h, "new": with_rules(h, GRID17_H100_RULES), "alt": with_rules(h, GRID17_H100_ALT)}


def blind17_prediction(out: str | Path, model_commit: str) -> pd.DataFrame:
    """Write blind grid 17's prediction BEFORE it is measured: pred_main_us (the H100 as shipped at BLIND17_MAIN_COMMIT),
    pred_new_us (GRID17_H100_RULES, the shipping candidate), pred_alt_us (GRID17_H100_ALT, named, not shipped)."""
    from simulator.calibration import engine_allreduce as EA

    c = candidates()
    df = blind17_grid()
    df["kind"] = df["impl"].map(EA.IMPL_KIND)
    for n in ("main", "new", "alt"):
        df[f"pred_{n}_us"] = np.round(predict(df, c[n]), 3)
    EA.trtllm_launch_columns(df, int(c["main"].units), tokens_per_cluster=False)
    df["regime"] = EA.size_regime(df["bytes"])
    df["device"] = "H100-SXM"
    df["main_model"] = f"the H100-SXM as shipped at {BLIND17_MAIN_COMMIT}"
    df["new_model"] = f"the model at {model_commit}: the H100-SXM with engine_allreduce_rules {GRID17_H100_RULES}"
    df["alt_model"] = f"the model at {model_commit}: the H100-SXM with engine_allreduce_rules {GRID17_H100_ALT} (not shipped)"
    df.to_csv(out, index=False)
    return df


def write_rules(out_dir: Path, rules: dict, source: str) -> Path:
    """Merge `rules` into out_dir/H100-SXM.yaml as engine_allreduce_rules ONLY (engine_allreduce_grid16.write_rules)."""
    from simulator.calibration.engine_allreduce_grid16 import write_rules as w16

    return w16(out_dir, "H100-SXM", rules, source)


#: the shipped rules' source line in H100-SXM.yaml (engine_allreduce_rules_source)
GRID17_SOURCE = ("simulator/calibration/engine_allreduce_grid17.py write_rules: GRID17_H100_RULES (grid 16's "
                 "first_fill_extra kept; lamport_overlap + lamport_phase2 and twoshot2_link by fit_grid17_h100_rules on "
                 "every looked-at 2-rank H100 row, committed 220293f before grid 17 ran), judged blind on 2 x H100 "
                 "(2026-11-28 00:11 UTC, 220 rows, 2 ranks only): 18 of 20 regimes against main's 17 (pooled 4.9 / 13.0 % "
                 "against 5.8 / 14.3 %)")


def ship_grid17(out_dir: Path | None = None) -> Path:
    """Write GRID17_H100_RULES into the fitted H100-SXM.yaml (engine_allreduce_rules only), as shipped after grid 17."""
    d = Path(__file__).resolve().parents[2] / "hwmodels" / "calibration" / "fitted" if out_dir is None else Path(out_dir)
    return write_rules(d, GRID17_H100_RULES, GRID17_SOURCE)
