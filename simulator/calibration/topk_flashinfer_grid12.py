"""FlashInfer's top-k (kind topk_flashinfer), grid 12: the page-table lookups of launches of 3+ waves near the L2, and
the refinement gathers' sectors (full one-wave ragged launches). Grid 11 (looked-at, with grids 5-10) left two weak
corners (its diagnosis): launches of 3+ waves at ~0.6-1.5 of the L2 pay 11-15 us of lookups (page-table minus ragged
time) where the shipped model (PT_WAVE_CANDIDATE: grid 6's hit terms for 3+ waves) prices 5-11.6 us; full one-wave
launches (116-132 rows) of long rows run +11..+18 % (ragged) and +13..+22 % (page-table) too slow in the model.

Source (topk.cuh @ f1e6fdcb FilteredTopKUnifiedKernel, `dim3 grid(num_rows)`, 1024 threads, 128 KiB dynamic shared
memory: one CTA per SM):
  lookups  every CTA ends with the "Output phase" (`#pragma unroll 2`, `dst[base] = src_page_entry[idx]`: 2048
           dependent loads into its row's page table) and its SM starts the next row only after it retires, so a launch
           of w waves pays w lookup rounds per SM; past ~0.45 of the L2 the sweeps' streaming has evicted the page table
           (the rounds miss, PT_MISS_CANDIDATE's full price), past ~1.2-1.4 the launch streams its scores from HBM and
           its SMs drift apart (one SM's misses overlap the others' sweeps): topk_flashinfer.PT_WAVE3_CANDIDATE, the
           window FITTED on the looked-at 3+-wave pairs of grids 5-11 (fit_pt_wave3)
  gathers  each refinement round re-reads `score[idx]` (4 B) for the round's staged candidates, one bin's share of the
           row spread over it: neighbouring candidates share a 32-B sector, where main prices one sector a candidate;
           a full one-wave launch of rows past the L1 (n x 4 B > 92 KiB) is L2-bandwidth-bound in main's price (132 x
           (2 sweeps + ~29K gathers x 32 B) outlasts its chain), and its measured time follows the chain (the same n at
           100-118 rows is met): topk_flashinfer.GATHER_SECTOR_CANDIDATE, NOT fitted (sector / score width = 8)

The candidate (`cand`, named before the measurement): PT_WAVE3_CANDIDATE + GATHER_SECTOR_CANDIDATE (both parts priced
apart too: `pred_wave3_us`, `pred_gather_us`, not judged). Main = the shipped model (PT_WAVE_CANDIDATE +
SHORT_SWEEP_CANDIDATE, one sector a gathered candidate).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from hwmodels.spec import HardwareSpec
from simulator.calibration import fit_production_topk_gemm as F
from simulator.calibration import topk_engines as TE
from simulator.calibration import topk_flashinfer_grid6 as G6
from simulator.calibration import topk_flashinfer_grid7 as G7
from simulator.calibration import topk_flashinfer_grid9 as G9
from simulator.calibration import topk_flashinfer_grid10 as G10
from simulator.calibration import topk_flashinfer_grid11 as G11
from simulator.kernels import topk_flashinfer as FK

#: the blind grid 12 (dist, rows, n): shapes in no committed top-k grid, all n > 2048 (torch.topk's check needs
#: n >= k). THREE: launches of 3-5 waves (280-650 rows) at 0.6-1.45 of the L2 (2 x rows x n x 4 B); FULL: full one-wave
#: launches (120-132 rows), rows of 18K-64K scores (most past the L1's 92 KiB, two below it); controls: two waves of
#: long rows (the gather rule moves them), partial one-wave launches of long rows, decode 4-10, a radix row, 7-10 waves.
FI_GRID12_THREE = [("recorded", 280, 14044), ("recorded", 300, 16412), ("recorded", 320, 18732),
                   ("recorded", 350, 20516), ("recorded", 372, 24028), ("recorded", 404, 11236),
                   ("recorded", 436, 13612), ("recorded", 468, 16060), ("recorded", 500, 18924),
                   ("recorded", 540, 8196), ("recorded", 580, 10212), ("recorded", 620, 12636),
                   ("recorded", 650, 9308), ("recorded", 300, 26412), ("gaussian", 450, 14412)]
FI_GRID12_FULL = [("recorded", 132, 26004), ("recorded", 130, 31412), ("recorded", 128, 34108),
                  ("recorded", 124, 42716), ("recorded", 132, 46204), ("recorded", 120, 53612),
                  ("recorded", 126, 64012), ("recorded", 131, 28716), ("recorded", 129, 22012),
                  ("recorded", 132, 18404), ("gaussian", 132, 40012)]
FI_GRID12_CONTROL = [("recorded", 200, 33012), ("recorded", 160, 44012), ("recorded", 250, 26512),
                     ("recorded", 60, 52012), ("recorded", 90, 30412), ("recorded", 4, 48012),
                     ("recorded", 10, 16412), ("recorded", 2, 250004), ("recorded", 1300, 5012),
                     ("recorded", 900, 26012)]
FI_GRID12 = FI_GRID12_THREE + FI_GRID12_FULL + FI_GRID12_CONTROL
FI_GRID12_PREDICTION = "topk_flashinfer_grid12_prediction_2026-11-27.csv"
FI_GRID12_MEASURED = "topk_engines_nvidia-h100-80gb-hbm3_2026-11-27_figrid12.csv"
KERNELS = G6.KERNELS
LABEL = G6.LABEL
#: the (ramp3_lo, ramp3_hi, ramp3_w) values fit_pt_wave3 tries
WAVE3_GRID = [(round(lo, 2), round(hi, 2), w) for lo in np.arange(0.20, 1.201, 0.05) for hi in np.arange(0.80, 3.001, 0.1)
              for w in (0.1, 0.2, 0.3, 0.4, 0.5, 0.7, 1.0) if hi - lo >= w]
#: the committed prediction's columns (grid 10's launch columns and the two parts of the candidate)
COLUMNS = F.SHAPE_KEYS + ["fi_path", "regime", "waves", "vec", "set_l2", "sweeps", "gathers", "gather_iters", "rounds",
                          "pred_main_us", "pred_us", "pred_wave3_us", "pred_gather_us"]


def looked_at() -> pd.DataFrame:
    """Grids 4-11's measured FlashInfer rows (ragged and page-table) with `grid`."""
    m = G11.measured()[["kernel", "dist", "rows", "n", "median_us"]].copy()
    m["grid"] = 11
    return pd.concat([G11.looked_at(), m], ignore_index=True)


def pairs3(sms: float = 132.0) -> pd.DataFrame:
    """The looked-at filtered shapes (grids 5-11) of 3+ waves with both transforms measured: ragged `median_us`,
    page-table `pt_us`."""
    m = looked_at()
    m = m[m["grid"] >= 5]
    key = ["grid", "dist", "rows", "n"]
    a = m[m["kernel"] == TE.CSV_KERNEL["flashinfer"]].set_index(key)[["median_us"]]
    b = m[m["kernel"] == TE.CSV_KERNEL["flashinfer_pt"]].set_index(key)[["median_us"]].rename(
        columns={"median_us": "pt_us"})
    j = a.join(b, how="inner").reset_index()
    keep = np.asarray(FK.filtered(j["rows"], j["n"])) & (np.ceil(j["rows"] / sms) > 2.0) & (j["n"] > 2048)
    return j[keep].reset_index(drop=True)


def fit_pt_wave3(hw: HardwareSpec, grid=WAVE3_GRID) -> dict:
    """PT_WAVE3_CANDIDATE's window (ramp3_lo, ramp3_hi, ramp3_w): the triple of `grid` with the least rms relative error
    of waves x pt_lookup_phases x sync[topk_flashinfer] against the page-table minus ragged time (relative to the
    page-table time) over every looked-at filtered 3+-wave pair of grids 5-11; `rms_main` = the shipped terms'."""
    j = pairs3(hw.units)
    rows, n = j["rows"].to_numpy(float), j["n"].to_numpy(float)
    waves = np.ceil(rows / hw.units)
    d = (j["pt_us"] - j["median_us"]).to_numpy(float)
    pt = j["pt_us"].to_numpy(float)
    phase = hw.efficiency.sync_s[TE.KIND] * 1e6

    def rms(terms):
        return float(np.sqrt(np.mean(((waves * FK.pt_lookup_phases(rows, n, terms, hw.units) * phase - d) / pt) ** 2)))
    best = min(grid, key=lambda p: rms({**FK.PT_WAVE_CANDIDATE, "ramp3_lo": p[0], "ramp3_hi": p[1], "ramp3_w": p[2]}))
    out = {"ramp3_lo": best[0], "ramp3_hi": best[1], "ramp3_w": best[2]}
    out["rms_rel_error"] = round(rms({**FK.PT_WAVE_CANDIDATE, **out}), 4)
    out["rms_main"] = round(rms(FK.PT_WAVE_CANDIDATE), 4)
    out["fit_rows"] = len(j)
    return out


def predict(t: pd.DataFrame, hw: HardwareSpec, pt_lookup: dict | None = None, gather: dict | None = None) -> np.ndarray:
    """Each row's time (us) by topk_engines.predict_us with the lookups `pt_lookup` (None: shipped) and the gather
    sector rule `gather` (None: shipped; {}: none), the shipped short-row rule and stream floor."""
    keep = FK.GATHER_SECTOR_SHIPPED
    try:
        FK.GATHER_SECTOR_SHIPPED = keep if gather is None else (gather or None)
        return G6.predict(t, hw, pt_lookup)
    finally:
        FK.GATHER_SECTOR_SHIPPED = keep


def regime(kernel, rows, n, path, sms: float = 132.0) -> np.ndarray:
    """FI_GRID12's regimes: transform x launch (decode 1-16 / one wave 24-115 / full one wave 116-132 / two waves /
    3-5 waves at 0.4-1.6 of the L2 (2 x rows x n x 4 B) / other 3+ waves) x path."""
    lab = [LABEL[k] for k in np.asarray(kernel)]
    rows, n = np.asarray(rows, float), np.asarray(n, float)
    s = 2.0 * rows * n * 4.0 / FK.STREAM_FLOOR_L2_BYTES
    w = np.ceil(rows / sms)
    near = (w >= 3) & (w <= 5) & (s >= 0.4) & (s <= 1.6)
    ph = np.where(rows <= 16, "decode 1-16", np.where(rows <= 115, "one wave 24-115", np.where(
        rows <= sms, "full one wave 116-132", np.where(w <= 2, "two waves 133-264", np.where(
            near, "3-5 waves at 0.4-1.6 L2", "other 3+ waves")))))
    return np.array([f"top-k {a} grid12: {b}, {p}" for a, b, p in zip(lab, ph, np.asarray(path))])


def predict_grid12(hw: HardwareSpec, out: str | Path | None = None) -> pd.DataFrame:
    """FI_GRID12 priced: `pred_main_us` main 753b5c0's model (PT_WAVE_CANDIDATE, one sector a gathered candidate),
    `pred_us` the candidate (PT_WAVE3_CANDIDATE + GATHER_SECTOR_CANDIDATE), its parts `pred_wave3_us` and
    `pred_gather_us` (not judged); written to `out`."""
    t = G7.frame(FI_GRID12, False, hw.units)
    t["pred_main_us"] = predict(t, hw, FK.PT_WAVE_CANDIDATE, {})
    t["pred_us"] = predict(t, hw, FK.PT_WAVE3_CANDIDATE, FK.GATHER_SECTOR_CANDIDATE)
    t["pred_wave3_us"] = predict(t, hw, FK.PT_WAVE3_CANDIDATE, {})
    t["pred_gather_us"] = predict(t, hw, FK.PT_WAVE_CANDIDATE, FK.GATHER_SECTOR_CANDIDATE)
    t["fi_path"] = G10.path_of(t)
    t["regime"] = regime(t["kernel"], t["rows"], t["n"], t["fi_path"], hw.units)
    return G10.launch_columns(t, hw, out, extra=("pred_wave3_us", "pred_gather_us"))


def prediction(path: str | Path | None = None) -> pd.DataFrame:
    """The committed FI_GRID12 prediction (one row per transform x shape)."""
    return pd.read_csv(path or F.DATA_DIR / FI_GRID12_PREDICTION)


def measured(pred_csv: str | Path | None = None, meas_csv: str | Path | None = None) -> pd.DataFrame:
    """The committed prediction joined to its measurement (`wrong` = the selection check failed, time kept)."""
    return TE._measured(pred_csv or F.DATA_DIR / FI_GRID12_PREDICTION, meas_csv or F.DATA_DIR / FI_GRID12_MEASURED)


def accuracy(m: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per transform x regime, every row BLIND: |error| median / p90 and signed median of main's price (`main`) and
    the candidate's (`cand`); goal columns (median <= 10 %, p90 <= 25 %)."""
    return G9.two_model_accuracy(measured() if m is None else m)


pooled = G6.pooled


if __name__ == "__main__":
    import argparse

    from hwmodels.spec import load_hardware

    ap = argparse.ArgumentParser(description="FlashInfer top-k grid 12: fit the 3+-wave lookup window, price the grid")
    ap.add_argument("--out", default=None, help="write the grid 12 prediction CSV here")
    ap.add_argument("--fit", action="store_true", help="print the fit first")
    a = ap.parse_args()
    hw = load_hardware("H100-SXM")
    if a.fit:
        print(fit_pt_wave3(hw))
    pd.set_option("display.width", 250)
    print(predict_grid12(hw, a.out).to_string(index=False))
