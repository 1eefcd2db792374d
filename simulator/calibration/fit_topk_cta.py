"""Fit the op kind 'topk_cta' to measured single-CTA top-k kernels (measure_topk_cta.py).

DSA decode ranks each row of indexer logits in ONE thread block (TensorRT-LLM indexer_topk_decode; the
GVR document), a different kernel class from torch.topk's multi-kernel radix select (op kind 'topk',
fitted by fit.py), so the op kind 'topk_cta' is calibrated on kernels of that class: our own radix-select and
Guess-Verify-Refine kernels (lab/topk_cta_kernels.cu), one CTA of 512 threads per row,
timed on the device with the number of full-row sweeps each launch actually made (a launch lasts as long
as its slowest row: `sweeps_max` in the note).

Each measured row is priced with the same pass model the strategies use (simulator/strategies/topk.py:
`radix_work` with steps = sweeps / 2, `gvr_work` with phase-2 passes = sweeps - 1), one CTA per row,
every sweep's block-wide reduction a synchronized phase (`sync_steps`), and the logits served from L2
when they fit (the indexer kernel wrote them just before: `reread_bytes` / `working_set`; 'cold' rows
read the first sweep from DRAM).

Fitted on: rows 1 and 64, k = 2048, 512 threads, both kernels, hot and cold, normal and 'narrow'
logits. Parameters: compute.topk_cta (instruction rate of the sweeps, as a fraction of the SM's fp32
rate), fixed_us, sync_us, saturation and memory of topk_cta (the DRAM reads of cold launches), and
two constants of the kernels' structure that topk.py carries over: the relative cost of a shared-memory
histogram atomic (`hist_flops`, flop-equivalents per element: HIST_ATOMIC_FLOPS) and GVR's work outside
its row sweeps (`gvr_fixed_flops` per row: P1's scattered reads, P3's prefix sums, P4's refinement:
GVR_FIXED_FLOPS). GVR's synchronized phases outside its passes count as GVR_EXTRA_PHASES = 3, not fitted.
Held out: 4, 16, 132 and 264 rows; k = 512 and 1024; 1024 threads and single-load variants are reported
separately (another kernel configuration).

Refusal bound (`check_result`): the held-out rows (row counts and k) of each kernel: median |error| <= 20 %,
p90 <= 60 % (committed H100 / H200: 5.5-14.9 % medians, p90 47 % from the 132 / 264-row launches), plus the physical ranges of
simulator.calibration.checks for the five efficiency terms.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from hwmodels import datafiles as DF
from hwmodels.errors import SparsesimError
from hwmodels.roofline import price
from hwmodels.spec import Efficiency, HardwareSpec
from simulator.calibration import checks as C
from simulator.calibration.fit import efficiency_with
from simulator.calibration.report import group_error_table as error_table  # noqa: F401 - used as FK.error_table

#: efficiency parameters of op kind topk_cta: (name, start, lower, upper)
PARAMS = [("compute.topk_cta", 0.3, 0.005, 1.0), ("fixed_us.topk_cta", 5.0, 0.0, 100.0),
          ("sync_us.topk_cta", 0.5, 0.0, 20.0), ("saturation.topk_cta", 0.5, 0.02, 8.0),
          ("memory.topk_cta", 0.8, 0.05, 1.0)]
#: constants of the kernels' structure, flop-equivalents (simulator/strategies/topk.py carries them):
#: shared-histogram atomic per element, GVR's work outside its sweeps per row, same-address atomic per
#: selected element
CONSTS = [("hist_flops", 16.0, 0.5, 256.0), ("gvr_fixed_flops", 2e5, 0.0, 1e7), ("serial_flops", 64.0, 0.0, 2048.0)]


def module_consts() -> tuple[float, float, float]:
    """The constants as simulator/strategies/topk.py prices them."""
    from simulator.strategies import topk as T

    return T.HIST_ATOMIC_FLOPS, T.GVR_FIXED_FLOPS, T.SERIAL_ATOMIC_FLOPS


def load(path: str | Path) -> pd.DataFrame:
    """Read a measure_topk_cta.py CSV strictly; keeps the radix / gvr rows checked exact (correct == 1)."""
    need = ("kernel", "rows", "row_len", "topk_k", "sweeps_mean", "median_us", "cache", "threads", "note", "correct")
    df, _ = C.read_csv(path, need, "a measure_topk_cta.py CSV")
    kern = df["kernel"].astype(str).str.strip()
    ours = (kern.isin(["radix", "gvr"]) & (df["correct"].astype(str).str.strip() == "1")).to_numpy()
    if not ours.any():
        raise C.CalibrationError("has no radix / gvr rows checked exact (correct == 1)", file=str(path))
    C.positive_columns(df, ours, ("rows", "row_len", "topk_k", "sweeps_mean", "threads"), str(path), "radix/gvr")
    df = C.numeric(df[ours].reset_index(drop=True), ("rows", "row_len", "topk_k", "sweeps_mean", "threads"))
    df["kernel"] = df["kernel"].astype(str).str.strip()
    df["cache"] = df["cache"].astype(str).str.strip()
    note = df["note"].fillna("").astype(str)
    smax = note.str.extract(r"sweeps_max=(\d+)")[0].astype(float)
    df["sweeps_launch"] = np.where(df["rows"] > 1, smax.fillna(df["sweeps_mean"]), df["sweeps_mean"])
    df["dist"] = note.str.extract(r"dist=(\w+)")[0].fillna("normal")
    df["variant"] = np.where(note.str.contains("unroll=1"), "unroll1", "default")
    df.attrs["file"] = str(path)
    return df


def fit_mask(df: pd.DataFrame) -> np.ndarray:
    return (df["rows"].isin([1, 64]) & (df["topk_k"] == 2048) & (df["threads"] == 512)
            & (df["variant"] == "default")).to_numpy()


def build_ops(df: pd.DataFrame, hist_flops: float, gvr_fixed_flops: float, serial_flops: float):
    from simulator.ops import OpBuilder
    from simulator.strategies import topk as T

    n = len(df)
    b = OpBuilder(n)
    rows = df["rows"].to_numpy(float)
    N = df["row_len"].to_numpy(float)
    k = df["topk_k"].to_numpy(float)
    sw = df["sweeps_launch"].to_numpy(float)
    radix = (df["kernel"] == "radix").to_numpy()
    cold = (df["cache"] == "cold").to_numpy()
    ws = rows * N * T.SCORE_BYTES
    rd, wr, fl = T.radix_work(N, k, sw / 2.0, hist_flops=hist_flops, serial_flops=serial_flops)
    # hot: every sweep re-reads logits the previous kernel left in L2; cold: the first sweep comes from DRAM
    rr = np.where(cold, rd - N * T.SCORE_BYTES, rd)
    b.add("radix", "topk_cta", flops=rows * fl, bytes_read=rows * rd, bytes_written=rows * wr, parallel_units=rows,
          reread_bytes=rows * rr, working_set=ws, sync_steps=sw, dtype="fp32", where=radix)
    w = T.gvr_work(N, k, np.maximum(sw - 1.0, 1.0), hist_flops=hist_flops, fixed_flops=gvr_fixed_flops)
    grd = sum(v[0] for v in w.values())
    gwr = sum(v[1] for v in w.values())
    gfl = sum(v[2] for v in w.values())
    sweep_bytes = w["verify"][0] + w["collect"][0]
    grr = np.where(cold, sweep_bytes - N * T.SCORE_BYTES, sweep_bytes)
    b.add("gvr", "topk_cta", flops=rows * gfl, bytes_read=rows * grd, bytes_written=rows * gwr, parallel_units=rows,
          reread_bytes=rows * grr, working_set=ws, sync_steps=np.maximum(sw - 1.0, 1.0) + T.GVR_EXTRA_PHASES,
          dtype="fp32",
          where=~radix)
    return b.build()


def predict_us(df: pd.DataFrame, hw: HardwareSpec, eff: Efficiency, hist_flops: float,
               gvr_fixed_flops: float, serial_flops: float) -> np.ndarray:
    ops = build_ops(df, hist_flops, gvr_fixed_flops, serial_flops)
    t = price(ops, hw.with_efficiency(eff), "graph") - hw.launch_graph_s
    return np.bincount(ops.setting, weights=t, minlength=len(df)) * 1e6


def fit(df: pd.DataFrame, hw: HardwareSpec, consts: tuple[float, float, float] | None = None
        ) -> tuple[Efficiency, tuple[float, float, float], dict]:
    """Fit the topk_cta efficiencies, and the kernel constants too unless `consts` fixes them (the CLI fits
    all jointly to report the constants, then refits the efficiencies with the constants topk.py uses, so
    that what is written is consistent with what the strategies price)."""
    rows = fit_mask(df)
    if rows.sum() < 6:
        raise SparsesimError(f"needs >= 6 fit rows (rows 1/64, k 2048, 512 threads); found {int(rows.sum())}",
                             file=df.attrs.get("file"))
    spec = PARAMS + ([] if consts is not None else CONSTS)
    names = [p[0] for p in spec]
    x0 = np.array([p[1] for p in spec])
    lo = np.array([p[2] for p in spec])
    hi = np.array([p[3] for p in spec])
    sub = df[rows].reset_index(drop=True)
    meas = sub["median_us"].to_numpy(float)
    base = hw.efficiency
    ne = len(PARAMS)

    def split(x):
        return efficiency_with(base, dict(zip(names[:ne], x[:ne]))), (tuple(x[ne:]) if consts is None else consts)

    def resid(x):
        eff, c = split(x)
        return np.log(predict_us(sub, hw, eff, *c) / meas)

    r = least_squares(resid, x0, bounds=(lo, hi), x_scale="jac")
    eff, c = split(r.x)
    meta = {"rows": int(rows.sum()), "params": {n: float(v) for n, v in zip(names, r.x)},
            "rms_log_error": float(np.sqrt(np.mean(r.fun ** 2)))}
    return eff, tuple(float(v) for v in c), meta


def check(df: pd.DataFrame, hw: HardwareSpec, eff: Efficiency, kernel_consts: tuple[float, float, float]
          ) -> pd.DataFrame:
    pred = predict_us(df, hw, eff, *kernel_consts)
    fm = fit_mask(df)
    group = np.where(fm, "fit: rows 1/64, k 2048",
                     np.where(df["variant"] != "default", "variant: one 16-B load per thread",
                              np.where(df["threads"] != 512, "variant: 1024 threads",
                                       np.where(df["topk_k"] != 2048, "held out: k 512/1024",
                                                "held out: rows 4/16/132/264"))))
    group = np.char.add(np.char.add(group.astype(str), " / "), df["kernel"].to_numpy().astype(str))
    return df.assign(predicted_us=pred, error_pct=(pred / df["median_us"] - 1) * 100, group=group)




def check_result(meta: dict, chk: pd.DataFrame, file: str) -> None:
    """Refuse unphysical terms or held-out rows beyond their bound (module docstring)."""
    C.check_physical(meta["params"] if "params" in meta else {}, file)
    held = chk[chk["group"].astype(str).str.startswith("held out")]
    if held.empty:
        raise C.CalibrationError("no held-out rows (rows 4/16/132/264 or k 512/1024) to check the fit on", file=file)
    for kern, g in held.groupby("kernel"):
        e = g["error_pct"].abs().to_numpy(float)
        med, p90 = float(np.median(e)), float(np.percentile(e, 90))
        if not (med <= 20.0 and p90 <= 60.0):
            raise C.CalibrationError(f"the topk_cta fit misses its bound on held-out {kern} rows: median |error| "
                                     f"{med:.3g} % (bound 20 %), p90 {p90:.3g} % (bound 60 %); nothing was written",
                                     file=file)


def write(eff: Efficiency, kernel_consts: tuple[float, float, float], meta: dict, target: str, data_file: str,
          measured_on: str, table: pd.DataFrame, out_dir: Path) -> Path:
    """Merge the topk_cta parameters into out_dir/<target>.yaml; note where they came from."""
    p = Path(out_dir) / f"{target}.yaml"
    own: dict = {part: {"topk_cta": round(field["topk_cta"], 4)}
                 for part, field in (("compute", eff.compute), ("memory", eff.memory), ("saturation", eff.saturation))}
    own["fixed_us"] = {"topk_cta": round(eff.fixed_s["topk_cta"] * 1e6, 3)}
    own["sync_us"] = {"topk_cta": round(eff.sync_s["topk_cta"] * 1e6, 3)}
    borrowed = "" if measured_on == target else f" (measured on {measured_on}: borrowed)"
    own["topk_cta"] = {
        "source": f"simulator/calibration/fit_topk_cta.py on {DF.name(data_file)}{borrowed}: single-CTA radix / "
                  "GVR top-k kernels (op kind topk_cta)",
        "kernel_constants_priced": {"hist_flops": kernel_consts[0], "gvr_fixed_flops": kernel_consts[1],
                                    "serial_flops": kernel_consts[2]},
        "fit": {k: (round(v, 4) if isinstance(v, float) else v) for k, v in meta.items() if k != "params"},
        "params": {k: round(v, 4) for k, v in meta["params"].items()},
        "errors_pct": [{k: (round(v, 2) if isinstance(v, float) else (int(v) if isinstance(v, np.integer) else v))
                        for k, v in r.items()} for r in table.to_dict("records")],
    }
    if not p.exists():
        own["source"] = f"top-k fit for {target}"
    owned = {part: ("topk_cta",) for part in ("compute", "memory", "saturation", "fixed_us", "sync_us")}
    owned["topk_cta"] = None
    return C.write_checked(p, C.merge_into(p, own, owned), "")
