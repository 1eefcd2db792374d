"""FlashInfer's top-k (kind topk_flashinfer), grid 9: the page-table lookups' L2-miss threshold. Grid 8 (looked-at,
with grids 5-7) showed the shipped PT_MISS_CANDIDATE's threshold (l2_miss_at 0.84 of the L2, taken over from the stream
floor's sweep-hit curves) too high for the lookups: two-wave mid decode rows whose scores and page table
(2 x rows x n x 4 B) hold 38-44 MB already pay 7-10 us of lookups (200 x 25,470 7.6 us, 210 x 26,030 9.9 us,
250 x 24,410 9.8 us), priced as L2 hits (~1 us). Every grid-8 row was float2 (n = 2 mod 4), so grid 9 tests the
threshold on float4 rows (n = 0 mod 4), with a few float2 rows whose scores fit the L2 and controls.

Source (topk.cuh @ f1e6fdcb FilteredTopKUnifiedKernel, "Output phase": `dst[base] = src_page_entry[idx]`, 2048 dependent
loads a CTA into the row's page table, after the sweeps that streamed the row's scores): the lookups hit only where the
page table survived the launch's score stream in the L2. The L2 is not one 50 MiB pool to a load: the H100's L2 is two
partitions and a line's home is one of them; the set that stays resident under a streaming sweep is below the nominal
capacity, so the lookups (read last, after the whole set streamed through) can miss before the sweeps' own re-reads
do (the stream floor's 0.84). ASSUMPTION: one threshold of the launch's set, below the sweeps'.

The candidate (`cand`, named before the measurement): topk_flashinfer.PT_MISS9_CANDIDATE = PT_MISS_CANDIDATE with
l2_miss_at and miss_row_phases re-fitted together (fit_pt_miss9: a grid over l2_miss_at, least squares for
miss_row_phases at each, on every looked-at filtered pair of grids 5-8: page-table minus ragged time against the
lookups' price, relative to the page-table time). Everything else is main's (grid 6's statistics, grid 7's stream floor,
grid 6's lookup terms below the threshold and past 2 waves). Main = the shipped PT_MISS_CANDIDATE (0.84).
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
from simulator.calibration import topk_flashinfer_grid8 as G8
from simulator.kernels import topk_flashinfer as FK

#: the blind grid 9 (dist, rows, n): row lengths in no committed top-k grid. THRESHOLD: float4 rows (n = 0 mod 4) at
#: decode 90-260 (one and two waves) whose 2 x rows x n x 4 B run 0.63-0.92 of the L2, between the candidate's and
#: main's thresholds and on both sides; LONG: one-wave long rows past the L2; FLOAT2: n = 2 mod 4 rows whose scores
#: fit the L2 (with a float4 twin); controls: short rows, decode 1-16, the radix kernel, prefill.
FI_GRID9_THRESHOLD = [("recorded", 140, 32996), ("recorded", 170, 27996), ("recorded", 190, 25996),
                      ("recorded", 220, 22996), ("recorded", 160, 32496), ("recorded", 244, 21496),
                      ("recorded", 200, 26996), ("recorded", 180, 30996), ("recorded", 236, 24996),
                      ("gaussian", 210, 23996), ("recorded", 260, 16996), ("recorded", 150, 19996),
                      ("recorded", 120, 39996), ("recorded", 100, 51996), ("recorded", 128, 44996),
                      ("recorded", 90, 63996)]
FI_GRID9_LONG = [("recorded", 120, 75996), ("recorded", 80, 99996)]
FI_GRID9_FLOAT2 = [("recorded", 64, 20002), ("recorded", 64, 19996), ("recorded", 100, 30006),
                   ("recorded", 32, 16002)]
FI_GRID9_CONTROL = [("recorded", 64, 3596), ("recorded", 200, 5996), ("recorded", 1, 19992),
                    ("recorded", 16, 39996), ("recorded", 800, 23996), ("recorded", 4, 199996)]
FI_GRID9 = FI_GRID9_THRESHOLD + FI_GRID9_LONG + FI_GRID9_FLOAT2 + FI_GRID9_CONTROL
FI_GRID9_PREDICTION = "topk_flashinfer_grid9_prediction_2026-11-27.csv"
FI_GRID9_MEASURED = "topk_engines_nvidia-h100-80gb-hbm3_2026-11-27_figrid9.csv"
KERNELS = G6.KERNELS
LABEL = G6.LABEL
#: the l2_miss_at values fit_pt_miss9 tries
L2_MISS_GRID = np.round(np.arange(0.55, 0.951, 0.01), 2)


def looked_at() -> pd.DataFrame:
    """Grids 4-8's measured FlashInfer rows (ragged and page-table) with `grid`."""
    m = G8.measured()[["kernel", "dist", "rows", "n", "median_us"]].copy()
    m["grid"] = 8
    return pd.concat([G8.looked_at(), m], ignore_index=True)


def pairs() -> pd.DataFrame:
    """The looked-at filtered shapes (grids 5-8) with both transforms measured: ragged `median_us`, page-table
    `pt_us`, `grid`."""
    m = looked_at()
    key = ["grid", "dist", "rows", "n"]
    a = m[m["kernel"] == TE.CSV_KERNEL["flashinfer"]].set_index(key)[["median_us"]]
    b = m[m["kernel"] == TE.CSV_KERNEL["flashinfer_pt"]].set_index(key)[["median_us"]].rename(
        columns={"median_us": "pt_us"})
    j = a.join(b, how="inner").reset_index()
    return j[np.asarray(FK.filtered(j["rows"], j["n"]))].reset_index(drop=True)


def fit_pt_miss9(hw: HardwareSpec, values=L2_MISS_GRID) -> dict:
    """PT_MISS9_CANDIDATE's l2_miss_at and miss_row_phases: for each l2_miss_at of `values`, miss_row_phases by least
    squares over EVERY looked-at filtered pair (waves x pt_lookup_phases x sync[topk_flashinfer] against page-table minus
    ragged time, relative to the page-table time); the pair with the least rms wins (ties: the higher threshold)."""
    from scipy.optimize import least_squares

    j = pairs()
    rows, n = j["rows"].to_numpy(float), j["n"].to_numpy(float)
    waves = np.maximum(np.ceil(rows / hw.units), 1.0)
    d = (j["pt_us"] - j["median_us"]).to_numpy(float)
    pt = j["pt_us"].to_numpy(float)
    phase = hw.efficiency.sync_s[TE.KIND] * 1e6
    best = None
    for at in values:
        base = {**FK.PT_MISS_CANDIDATE, "l2_miss_at": float(at)}

        def resid(x, base=base):
            return (waves * FK.pt_lookup_phases(rows, n, {**base, "miss_row_phases": x[0]}, hw.units) * phase - d) / pt
        r = least_squares(resid, [0.02], bounds=([0.0], [1.0]))
        rms = float(np.sqrt(np.mean(r.fun ** 2)))
        if best is None or rms < best["rms_rel_error"] - 1e-12:
            best = {"l2_miss_at": float(at), "miss_row_phases": round(float(r.x[0]), 4), "rms_rel_error": rms}
    best["rms_rel_error"] = round(best["rms_rel_error"], 4)
    best["fit_rows"] = len(j)
    return best


def regime(kernel, rows, n, path) -> np.ndarray:
    """FI_GRID9's regimes: transform x topk_engines.regime5 (row length x decode / prefill rows) x dispatch path."""
    lab = [LABEL[k] for k in np.asarray(kernel)]
    return np.array([f"top-k {a} grid9: {r}, {p}" for a, r, p in zip(lab, TE.regime5(rows, n), np.asarray(path))])


def predict_grid9(hw: HardwareSpec, out: str | Path | None = None) -> pd.DataFrame:
    """FI_GRID9 priced two ways on grid 6's statistics and grid 7's stream floor: `pred_main_us` main's model (the
    shipped lookups, PT_LOOKUP_SHIPPED = PT_MISS_CANDIDATE), `pred_us` the candidate (PT_MISS9_CANDIDATE)."""
    t = G7.frame(FI_GRID9, False, hw.units)
    t["pred_main_us"] = G6.predict(t, hw, None)
    t["pred_us"] = G6.predict(t, hw, FK.PT_MISS9_CANDIDATE)
    t["regime"] = regime(t["kernel"], t["rows"], t["n"], t["fi_path"])
    t["waves"] = np.where(t["fi_path"] == "filtered", np.ceil(t["rows"] / hw.units), 1)
    t["vec"] = FK.vec_width(t["n"])
    t["set_l2"] = 2.0 * t["rows"] * t["n"] * 4.0 / FK.STREAM_FLOOR_L2_BYTES
    res = t[F.SHAPE_KEYS + ["fi_path", "regime", "waves", "vec", "set_l2", "sweeps", "gathers", "gather_iters",
                            "rounds", "pred_main_us", "pred_us"]]
    if out is not None:
        res.to_csv(out, index=False, float_format="%.4f")
    return res


def prediction(path: str | Path | None = None) -> pd.DataFrame:
    """The committed FI_GRID9 prediction (one row per transform x shape)."""
    return pd.read_csv(path or F.DATA_DIR / FI_GRID9_PREDICTION)


def measured(pred_csv: str | Path | None = None, meas_csv: str | Path | None = None) -> pd.DataFrame:
    """The committed prediction joined to its measurement (`wrong` = the selection check failed, time kept)."""
    return TE._measured(pred_csv or F.DATA_DIR / FI_GRID9_PREDICTION, meas_csv or F.DATA_DIR / FI_GRID9_MEASURED)


def accuracy(m: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per transform x regime, every row BLIND: |error| median / p90 and signed median of main's price (`main`) and
    the candidate's (`cand`); goal columns (median <= 10 %, p90 <= 25 %)."""
    return two_model_accuracy(measured() if m is None else m)


def two_model_accuracy(m: pd.DataFrame) -> pd.DataFrame:
    """A FlashInfer top-k grid's joined rows (pred_main_us, pred_us, median_us, regime) per regime: |error| median /
    p90 and signed median of main's price (`main`) and the candidate's (`cand`), and their goal columns (grids 9-11)."""
    tab = TE._errors(m["pred_main_us"], m["median_us"], m["regime"], "main")
    tab = tab.merge(TE._errors(m["pred_us"], m["median_us"], m["regime"], "cand").drop(columns="n"), on="regime")
    for tag in ("main", "cand"):
        tab[f"goal_{tag}"] = TE.goal(tab, tag)
    return tab


pooled = G6.pooled


if __name__ == "__main__":
    import argparse

    from hwmodels.spec import load_hardware

    ap = argparse.ArgumentParser(description="FlashInfer top-k grid 9: refit the lookups' L2 threshold, price the grid")
    ap.add_argument("--out", default=None, help="write the grid 9 prediction CSV here")
    a = ap.parse_args()
    hw = load_hardware("H100-SXM")
    print(fit_pt_miss9(hw))
    pd.set_option("display.width", 250)
    print(predict_grid9(hw, a.out).to_string(index=False))
