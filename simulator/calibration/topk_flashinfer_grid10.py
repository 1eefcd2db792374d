"""FlashInfer's top-k (kind topk_flashinfer), grid 10: the page-table lookups' L2 miss as a RAMP, and short rows.
Grid 9 (looked-at, with grids 5-8) left two misses: (1) the lookups of one- and two-wave decode launches start to miss
the L2 well below the shipped threshold (PT_MISS_CANDIDATE, 0.84 of the L2) and not at one size: grid 9's diagnosis,
a ramp over ~0.45-0.95 of the L2 of the launch's scores + page table (2 x rows x n x 4 B); (2) short rows
(2K < n <= 4K) priced +13-20 % high in BOTH transforms at one wave (so not the lookups).

Source (topk.cuh @ f1e6fdcb FilteredTopKUnifiedKernel): Stage 1 and the filter sweep are `#pragma unroll 2` loops
`for (base = tx * VEC_SIZE; base < aligned_length; base += BLOCK_SIZE * VEC_SIZE) score_vec.cast_load(&score[base])`:
a row of n <= 1024 x VEC scores gives each thread ONE vector load a sweep (then its <= VEC key atomics), where main
prices ceil(n / (1024 x VALUES_PER_ROUND)) = 2 dependent rounds for 2K < n <= 4K (float4). The per-row fixed work
(histogram clears, run_cumsum's 8 `__syncthreads()` a round, the output loop) is the same at every length and is what
the barrier phases already price.

The candidate (`cand`, named before the measurement): topk_flashinfer.PT_RAMP_CANDIDATE (the ramp; ramp_lo, ramp_hi,
miss_row_phases fitted together on every looked-at filtered pair of grids 5-9: fit_pt_ramp) with
topk_flashinfer.SHORT_SWEEP_CANDIDATE (a short row's sweep = short_sweep_iters iterations, fitted on the looked-at
filtered rows of grids 5-9 it applies to: fit_short). Main = the shipped model (PT_MISS_CANDIDATE at 0.84, no
short-row rule).
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
from simulator.kernels import topk_flashinfer as FK

#: the blind grid 10 (dist, rows, n): shapes in no committed top-k grid. RAMP: float4 rows (n = 0 mod 4) at decode
#: 96-256 (one and two waves) whose 2 x rows x n x 4 B run 0.30-1.20 of the L2; SHORT: 2K < n <= 4K at one and two
#: waves (and a float2 twin the short rule does not touch); TRIVIAL: n <= k (the kernel's copy path); controls:
#: decode 1-8 (radix and filtered), prefill.
FI_GRID10_RAMP = [("recorded", 96, 20484), ("recorded", 140, 17788), ("recorded", 180, 16388),
                  ("recorded", 124, 26428), ("recorded", 160, 22532), ("recorded", 120, 30036),
                  ("recorded", 150, 26216), ("recorded", 110, 38728), ("recorded", 200, 22940),
                  ("recorded", 170, 28912), ("recorded", 128, 38404), ("recorded", 130, 40328),
                  ("recorded", 240, 23212), ("recorded", 184, 32056), ("recorded", 210, 29648),
                  ("recorded", 100, 65540), ("recorded", 256, 28160), ("gaussian", 160, 49156)]
FI_GRID10_SHORT = [("recorded", 24, 2900), ("recorded", 100, 2564), ("recorded", 60, 3076), ("recorded", 130, 4092),
                   ("recorded", 200, 2308), ("recorded", 250, 3908), ("recorded", 180, 3332),
                   ("recorded", 120, 3002)]
FI_GRID10_TRIVIAL = [("recorded", 64, 1536), ("recorded", 200, 1996)]
FI_GRID10_CONTROL = [("recorded", 1, 70004), ("recorded", 4, 150004), ("recorded", 8, 24004),
                     ("recorded", 700, 12004), ("recorded", 1500, 3604)]
FI_GRID10 = FI_GRID10_RAMP + FI_GRID10_SHORT + FI_GRID10_TRIVIAL + FI_GRID10_CONTROL
FI_GRID10_PREDICTION = "topk_flashinfer_grid10_prediction_2026-11-27.csv"
FI_GRID10_MEASURED = "topk_engines_nvidia-h100-80gb-hbm3_2026-11-27_figrid10.csv"
KERNELS = G6.KERNELS
LABEL = G6.LABEL
#: the (ramp_lo, ramp_hi) pairs fit_pt_ramp tries
RAMP_GRID = [(round(lo, 2), round(hi, 2)) for lo in np.arange(0.30, 0.801, 0.05)
             for hi in np.arange(0.60, 1.301, 0.05) if hi > lo + 0.04]
#: the short_sweep_iters values fit_short tries
SHORT_GRID = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0)


def looked_at() -> pd.DataFrame:
    """Grids 4-9's measured FlashInfer rows (ragged and page-table) with `grid`."""
    m = G9.measured()[["kernel", "dist", "rows", "n", "median_us"]].copy()
    m["grid"] = 9
    return pd.concat([G9.looked_at(), m], ignore_index=True)


def pairs() -> pd.DataFrame:
    """The looked-at filtered shapes (grids 5-9) with both transforms measured: ragged `median_us`, page-table `pt_us`."""
    m = looked_at()
    m = m[m["grid"] >= 5]
    key = ["grid", "dist", "rows", "n"]
    a = m[m["kernel"] == TE.CSV_KERNEL["flashinfer"]].set_index(key)[["median_us"]]
    b = m[m["kernel"] == TE.CSV_KERNEL["flashinfer_pt"]].set_index(key)[["median_us"]].rename(
        columns={"median_us": "pt_us"})
    j = a.join(b, how="inner").reset_index()
    return j[np.asarray(FK.filtered(j["rows"], j["n"]))].reset_index(drop=True)


def fit_pt_ramp(hw: HardwareSpec, grid=RAMP_GRID) -> dict:
    """PT_RAMP_CANDIDATE's ramp_lo, ramp_hi and miss_row_phases: for each (lo, hi) of `grid`, miss_row_phases by least
    squares over EVERY looked-at filtered pair of grids 5-9 (waves x pt_lookup_phases x sync[topk_flashinfer] against
    page-table minus ragged time, relative to the page-table time; the residual is linear in miss_row_phases, so the
    bounded least squares is closed-form, clipped to [0, 1]); the least rms wins."""
    j = pairs()
    rows, n = j["rows"].to_numpy(float), j["n"].to_numpy(float)
    waves = np.maximum(np.ceil(rows / hw.units), 1.0)
    d = (j["pt_us"] - j["median_us"]).to_numpy(float)
    pt = j["pt_us"].to_numpy(float)
    phase = hw.efficiency.sync_s[TE.KIND] * 1e6
    best = None
    for lo, hi in grid:
        base = {**FK.PT_RAMP_CANDIDATE, "ramp_lo": lo, "ramp_hi": hi}

        def resid(x, base=base):
            return (waves * FK.pt_lookup_phases(rows, n, {**base, "miss_row_phases": x}, hw.units) * phase - d) / pt
        a = resid(0.0)
        b = resid(1.0) - a
        x = float(np.clip(-np.dot(a, b) / max(float(np.dot(b, b)), 1e-30), 0.0, 1.0))
        rms = float(np.sqrt(np.mean(resid(x) ** 2)))
        if best is None or rms < best["rms_rel_error"] - 1e-12:
            best = {"ramp_lo": float(lo), "ramp_hi": float(hi), "miss_row_phases": round(x, 4), "rms_rel_error": rms}
    best["rms_rel_error"] = round(best["rms_rel_error"], 4)
    best["fit_rows"] = len(j)
    return best


def predict(t: pd.DataFrame, hw: HardwareSpec, pt_lookup: dict | None = None, short: dict | None = None) -> np.ndarray:
    """Each row's time (us) by topk_engines.predict_us with the lookups `pt_lookup` (None: shipped) and the short-row
    rule `short` (None: shipped; {}: none)."""
    keep = FK.SHORT_SWEEP_SHIPPED
    try:
        FK.SHORT_SWEEP_SHIPPED = keep if short is None else (short or None)
        return G6.predict(t, hw, pt_lookup)
    finally:
        FK.SHORT_SWEEP_SHIPPED = keep


def short_rows(t: pd.DataFrame, short: dict = FK.SHORT_SWEEP_CANDIDATE) -> np.ndarray:
    """True where the filtered kernel's short-row rule `short` applies (2K < n <= 1024 x VEC x max_loads)."""
    n = t["n"].to_numpy(float)
    return (np.asarray(FK.filtered(t["rows"], n)) & (n > 2048)
            & (n <= FK.THREADS * FK.vec_width(n) * short["max_loads"]))


def fit_short(hw: HardwareSpec, values=SHORT_GRID) -> dict:
    """SHORT_SWEEP_CANDIDATE's short_sweep_iters: the value of `values` with the least rms log error over the looked-at
    filtered rows of grids 5-9 (both transforms) the rule applies to, the lookups at PT_RAMP_CANDIDATE."""
    m = looked_at()
    m = m[(m["grid"] >= 5) & m["kernel"].isin(KERNELS)]
    m = m[short_rows(m)].reset_index(drop=True)
    t = G7.frame(sorted({(d, int(r), int(v)) for d, r, v in zip(m["dist"], m["rows"], m["n"])}), False, hw.units)
    t = t.merge(m[["kernel", "dist", "rows", "n", "median_us"]], on=["kernel", "dist", "rows", "n"])
    out = {}
    for v in values:
        p = predict(t, hw, FK.PT_RAMP_CANDIDATE, {**FK.SHORT_SWEEP_CANDIDATE, "short_sweep_iters": v})
        out[v] = float(np.sqrt(np.mean(np.log(p / t["median_us"].to_numpy(float)) ** 2)))
    best = min(out, key=out.get)
    return {"short_sweep_iters": best, "rms_log": {k: round(x, 4) for k, x in out.items()}, "fit_rows": len(t)}


def path_of(t: pd.DataFrame) -> np.ndarray:
    """The dispatch path, the filtered kernel's copy path (n <= k) named apart."""
    return np.where(t["n"].to_numpy(float) <= 2048, "copy n <= k", t["fi_path"].to_numpy(str))


def regime(kernel, rows, n, path) -> np.ndarray:
    """FI_GRID10's regimes: transform x row length (short 2K-4K / 4K-16K, mid, long) x decode / prefill x path."""
    lab = [LABEL[k] for k in np.asarray(kernel)]
    rows, n = np.asarray(rows, float), np.asarray(n, float)
    ph = np.where(rows <= 16, "decode 1-16", np.where(rows <= 256, "decode 24-256", "prefill 512-4096"))
    ln = np.where(n <= 4096, "short rows <= 4K", np.where(n <= 16384, "short rows 4K-16K",
                                                          np.where(n <= 32768, "mid rows 16K-32K", "long rows")))
    return np.array([f"top-k {a} grid10: {b}, {c}, {p}" for a, b, c, p in zip(lab, ln, ph, np.asarray(path))])


def predict_grid10(hw: HardwareSpec, out: str | Path | None = None) -> pd.DataFrame:
    """FI_GRID10 priced two ways on grid 6's statistics and grid 7's stream floor: `pred_main_us` main f9af03b's model
    (PT_MISS_CANDIDATE's lookups, no short-row rule), `pred_us` the candidate (PT_RAMP_CANDIDATE + SHORT_SWEEP_CANDIDATE)."""
    t = G7.frame(FI_GRID10, False, hw.units)
    t["pred_main_us"] = predict(t, hw, FK.PT_MISS_CANDIDATE, {})
    t["pred_us"] = predict(t, hw, FK.PT_RAMP_CANDIDATE, FK.SHORT_SWEEP_CANDIDATE)
    t["fi_path"] = path_of(t)
    t["regime"] = regime(t["kernel"], t["rows"], t["n"], t["fi_path"])
    return launch_columns(t, hw, out)


def launch_columns(t: pd.DataFrame, hw: HardwareSpec, out: str | Path | None, extra: tuple[str, ...] = ()) -> pd.DataFrame:
    """A priced grid frame's committed columns (grids 10-12): waves (filtered and copy paths by rows / SMs, radix one),
    load width, the score + page-table set over the L2, the pass statistics, both prices and the `extra` columns (a
    grid's further prices); written to `out`."""
    t["waves"] = np.where(t["fi_path"] != "radix", np.ceil(t["rows"] / hw.units), 1)
    t["vec"] = FK.vec_width(t["n"])
    t["set_l2"] = 2.0 * t["rows"] * t["n"] * 4.0 / FK.STREAM_FLOOR_L2_BYTES
    res = t[F.SHAPE_KEYS + ["fi_path", "regime", "waves", "vec", "set_l2", "sweeps", "gathers", "gather_iters",
                            "rounds", "pred_main_us", "pred_us", *extra]]
    if out is not None:
        res.to_csv(out, index=False, float_format="%.4f")
    return res


def prediction(path: str | Path | None = None) -> pd.DataFrame:
    """The committed FI_GRID10 prediction (one row per transform x shape)."""
    return pd.read_csv(path or F.DATA_DIR / FI_GRID10_PREDICTION)


def measured(pred_csv: str | Path | None = None, meas_csv: str | Path | None = None) -> pd.DataFrame:
    """The committed prediction joined to its measurement (`wrong` = the selection check failed, time kept)."""
    return TE._measured(pred_csv or F.DATA_DIR / FI_GRID10_PREDICTION, meas_csv or F.DATA_DIR / FI_GRID10_MEASURED)


def accuracy(m: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per transform x regime, every row BLIND: |error| median / p90 and signed median of main's price (`main`) and
    the candidate's (`cand`); goal columns (median <= 10 %, p90 <= 25 %)."""
    return G9.two_model_accuracy(measured() if m is None else m)


pooled = G6.pooled


if __name__ == "__main__":
    import argparse

    from hwmodels.spec import load_hardware

    ap = argparse.ArgumentParser(description="FlashInfer top-k grid 10: fit the ramp and the short rule, price the grid")
    ap.add_argument("--out", default=None, help="write the grid 10 prediction CSV here")
    ap.add_argument("--fit", action="store_true", help="print the fits first")
    a = ap.parse_args()
    hw = load_hardware("H100-SXM")
    if a.fit:
        print(fit_pt_ramp(hw))
        print(fit_short(hw))
    pd.set_option("display.width", 250)
    print(predict_grid10(hw, a.out).to_string(index=False))
