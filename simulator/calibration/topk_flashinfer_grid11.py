"""FlashInfer's top-k (kind topk_flashinfer), grid 11: the page-table lookups of one- and two-wave launches by their
own terms. Grid 10 (looked-at, with grids 5-9) left the page-table long rows at decode 24-256 missed (9.4 / 29.8 %);
its diagnosis (measured page-table minus ragged time): the lookups' L2 miss shows in TWO-wave launches from ~0.4 of the
L2 (0.38: 1.5 us, 0.45-0.60: 2.1-2.5, 0.70-0.75: 4.3-4.7, 0.85-1.10: 8.3-9.5), while one-wave launches pay 0.4-1.4 us
up to ~0.85 of the L2 (whatever their rows) and ~2.2 us at 1.0, where grid 6's hit terms (per CTA of the wave) price
3.9-5 us.

Source (topk.cuh @ f1e6fdcb FilteredTopKUnifiedKernel, launch `dim3 grid(num_rows)`, 1024 threads, 128 KiB dynamic
shared memory: one CTA per SM): the "Output phase" `#pragma unroll 2` loop `dst[base] = src_page_entry[idx]` is the
last work of each CTA; a one-wave launch's CTAs reach it together after ALL rows' sweeps, so their lookups overlap each
other (one dependent round a wave, its length set by the row's page-table span, not by the CTA count); a second wave
starts as first-wave CTAs retire, its sweeps streaming the second half of the scores through the L2 the page table
shares.

The candidate (`cand`, named before the measurement): topk_flashinfer.PT_WAVE_CANDIDATE (fit_pt_wave). Main = the
shipped model (PT_RAMP_CANDIDATE + SHORT_SWEEP_CANDIDATE). The ragged transform's prices are the same in both.
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
from simulator.kernels import topk_flashinfer as FK

#: the blind grid 11 (dist, rows, n): shapes in no committed top-k grid, all n > 2048 (torch.topk's check needs
#: n >= k). ONE: one-wave decode launches (24-132 rows) at 0.3-1.2 of the L2 (2 x rows x n x 4 B); TWO: two-wave
#: launches (133-264 rows) at 0.3-1.2; controls: decode 1-16 (filtered), a radix row, 3+ waves, prefill.
FI_GRID11_ONE = [("recorded", 36, 54612), ("recorded", 72, 27308), ("recorded", 104, 22688), ("recorded", 56, 46812),
                 ("recorded", 116, 25428), ("recorded", 88, 37236), ("recorded", 126, 29128), ("recorded", 44, 89372),
                 ("recorded", 106, 39572), ("recorded", 132, 35748), ("recorded", 76, 69036),
                 ("recorded", 118, 49992), ("recorded", 92, 71236), ("recorded", 122, 59076),
                 ("gaussian", 112, 46812), ("recorded", 68, 11572)]
FI_GRID11_TWO = [("recorded", 196, 10028), ("recorded", 236, 9996), ("recorded", 148, 17716), ("recorded", 220, 13404),
                 ("recorded", 164, 19980), ("recorded", 252, 14308), ("recorded", 144, 27304),
                 ("recorded", 186, 23260), ("recorded", 228, 20124), ("recorded", 158, 31116),
                 ("recorded", 206, 25448), ("recorded", 262, 22508), ("recorded", 174, 37660),
                 ("recorded", 248, 28540), ("gaussian", 232, 25428), ("recorded", 214, 5516)]
FI_GRID11_CONTROL = [("recorded", 2, 36004), ("recorded", 12, 44404), ("recorded", 6, 9004), ("recorded", 3, 120004),
                     ("recorded", 340, 17204), ("recorded", 1100, 6004)]
FI_GRID11 = FI_GRID11_ONE + FI_GRID11_TWO + FI_GRID11_CONTROL
FI_GRID11_PREDICTION = "topk_flashinfer_grid11_prediction_2026-11-27.csv"
FI_GRID11_MEASURED = "topk_engines_nvidia-h100-80gb-hbm3_2026-11-27_figrid11.csv"
KERNELS = G6.KERNELS
LABEL = G6.LABEL
_LO = np.arange(0.20, 1.201, 0.05)
#: the (lo, hi) values fit_pt_wave tries (one wave: ramp1; two waves: ramp)
WAVE_RAMP_GRID = [(round(lo, 2), round(hi, 2)) for lo in _LO for hi in np.arange(0.40, 1.801, 0.05) if hi > lo + 0.04]


def looked_at() -> pd.DataFrame:
    """Grids 4-10's measured FlashInfer rows (ragged and page-table) with `grid`."""
    m = G10.measured()[["kernel", "dist", "rows", "n", "median_us"]].copy()
    m["grid"] = 10
    return pd.concat([G10.looked_at(), m], ignore_index=True)


def pairs(max_waves: float = 2.0, sms: float = 132.0) -> pd.DataFrame:
    """The looked-at filtered shapes (grids 5-10) of at most `max_waves` waves with both transforms measured: ragged
    `median_us`, page-table `pt_us`."""
    m = looked_at()
    m = m[m["grid"] >= 5]
    key = ["grid", "dist", "rows", "n"]
    a = m[m["kernel"] == TE.CSV_KERNEL["flashinfer"]].set_index(key)[["median_us"]]
    b = m[m["kernel"] == TE.CSV_KERNEL["flashinfer_pt"]].set_index(key)[["median_us"]].rename(
        columns={"median_us": "pt_us"})
    j = a.join(b, how="inner").reset_index()
    keep = np.asarray(FK.filtered(j["rows"], j["n"])) & (np.ceil(j["rows"] / sms) <= max_waves)
    return j[keep].reset_index(drop=True)


def fit_pt_wave(hw: HardwareSpec, grid=WAVE_RAMP_GRID) -> dict:
    """PT_WAVE_CANDIDATE's terms: the one-wave pairs pick (ramp1_lo, ramp1_hi), the two-wave pairs (ramp_lo, ramp_hi),
    each from `grid`; for each pair of pairs base_wave_phases, base_kscore_phases and miss_row_phases by least squares
    over every looked-at filtered pair of grids 5-10 of <= 2 waves (waves x pt_lookup_phases x sync[topk_flashinfer]
    against page-table minus ragged time, relative to the page-table time; linear in the three, clipped at 0), done
    separately per ramp then jointly at the two best ramps; the least rms wins."""
    j = pairs(2.0, hw.units)
    rows, n = j["rows"].to_numpy(float), j["n"].to_numpy(float)
    waves = np.maximum(np.ceil(rows / hw.units), 1.0)
    d = (j["pt_us"] - j["median_us"]).to_numpy(float)
    pt = j["pt_us"].to_numpy(float)
    phase = hw.efficiency.sync_s[TE.KIND] * 1e6
    names = ("base_wave_phases", "base_kscore_phases", "miss_row_phases")

    def solve(lo1, hi1, lo2, hi2, sel):
        base = {**FK.PT_WAVE_CANDIDATE, "ramp1_lo": lo1, "ramp1_hi": hi1, "ramp_lo": lo2, "ramp_hi": hi2}

        def model(x):
            return waves * FK.pt_lookup_phases(rows, n, {**base, **dict(zip(names, x))}, hw.units) * phase / pt
        c = model((0.0, 0.0, 0.0))
        A = np.stack([model(e) - c for e in np.eye(3)], axis=1)
        x = np.linalg.lstsq(A[sel], (d / pt - c)[sel], rcond=None)[0]
        x = np.clip(x, 0.0, None)
        return x, float(np.sqrt(np.mean((model(x) - d / pt)[sel] ** 2)))

    one = waves <= 1.0
    best1 = min(grid, key=lambda p: solve(p[0], p[1], 0.4, 0.9, one)[1])
    best2 = min(grid, key=lambda p: solve(best1[0], best1[1], p[0], p[1], ~one)[1])
    x, rms = solve(best1[0], best1[1], best2[0], best2[1], np.ones(len(j), bool))
    out = {"ramp1_lo": best1[0], "ramp1_hi": best1[1], "ramp_lo": best2[0], "ramp_hi": best2[1]}
    out.update({k: round(float(v), 4) for k, v in zip(names, x)})
    out["rms_rel_error"] = round(rms, 4)
    out["fit_rows"] = len(j)
    return out


def predict(t: pd.DataFrame, hw: HardwareSpec, pt_lookup: dict | None = None) -> np.ndarray:
    """Each row's time (us) by topk_engines.predict_us with the lookups `pt_lookup` (None: shipped), the shipped
    short-row rule."""
    return G6.predict(t, hw, pt_lookup)


def regime(kernel, rows, n, path) -> np.ndarray:
    """FI_GRID11's regimes: transform x waves (decode 1-16 / one wave 24-132 / two waves 133-264 / 3+ waves) x the
    launch's L2 share (2 x rows x n x 4 B: below / from 0.6 of the L2) x path."""
    lab = [LABEL[k] for k in np.asarray(kernel)]
    rows, n = np.asarray(rows, float), np.asarray(n, float)
    s = 2.0 * rows * n * 4.0 / FK.STREAM_FLOOR_L2_BYTES
    ph = np.where(rows <= 16, "decode 1-16", np.where(rows <= 132, "one wave 24-132", np.where(
        rows <= 264, "two waves 133-264", "3+ waves")))
    share = np.where(rows <= 16, "", np.where(s < 0.6, ", set < 0.6 L2", ", set >= 0.6 L2"))
    share = np.where(rows > 264, "", share)
    return np.array([f"top-k {a} grid11: {b}{c}, {p}" for a, b, c, p in zip(lab, ph, share, np.asarray(path))])


def predict_grid11(hw: HardwareSpec, out: str | Path | None = None) -> pd.DataFrame:
    """FI_GRID11 priced two ways: `pred_main_us` main b118817's model (PT_RAMP_CANDIDATE + SHORT_SWEEP_CANDIDATE),
    `pred_us` the candidate (PT_WAVE_CANDIDATE + SHORT_SWEEP_CANDIDATE)."""
    t = G7.frame(FI_GRID11, False, hw.units)
    t["pred_main_us"] = predict(t, hw, FK.PT_RAMP_CANDIDATE)
    t["pred_us"] = predict(t, hw, FK.PT_WAVE_CANDIDATE)
    t["fi_path"] = G10.path_of(t)
    t["regime"] = regime(t["kernel"], t["rows"], t["n"], t["fi_path"])
    return G10.launch_columns(t, hw, out)


def prediction(path: str | Path | None = None) -> pd.DataFrame:
    """The committed FI_GRID11 prediction (one row per transform x shape)."""
    return pd.read_csv(path or F.DATA_DIR / FI_GRID11_PREDICTION)


def measured(pred_csv: str | Path | None = None, meas_csv: str | Path | None = None) -> pd.DataFrame:
    """The committed prediction joined to its measurement (`wrong` = the selection check failed, time kept)."""
    return TE._measured(pred_csv or F.DATA_DIR / FI_GRID11_PREDICTION, meas_csv or F.DATA_DIR / FI_GRID11_MEASURED)


def accuracy(m: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per transform x regime, every row BLIND: |error| median / p90 and signed median of main's price (`main`) and
    the candidate's (`cand`); goal columns (median <= 10 %, p90 <= 25 %)."""
    return G9.two_model_accuracy(measured() if m is None else m)


pooled = G6.pooled


if __name__ == "__main__":
    import argparse

    from hwmodels.spec import load_hardware

    ap = argparse.ArgumentParser(description="FlashInfer top-k grid 11: fit the per-wave lookups, price the grid")
    ap.add_argument("--out", default=None, help="write the grid 11 prediction CSV here")
    ap.add_argument("--fit", action="store_true", help="print the fit first")
    a = ap.parse_args()
    hw = load_hardware("H100-SXM")
    if a.fit:
        print(fit_pt_wave(hw))
    pd.set_option("display.width", 250)
    print(predict_grid11(hw, a.out).to_string(index=False))
