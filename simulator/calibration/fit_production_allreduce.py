"""All-reduce at decode sizes measured by lab/kernels/measure_allreduce.py (2 x H100, NVLink, bf16, 1 KiB - 64 MiB):
NCCL (kind collective), the engines' custom one-shot / two-shot peer-memory kernel (the project's ar_kernel.cu with
vLLM's structure: kinds allreduce_1shot / allreduce_2shot) and PyTorch's symmetric-memory one-shot / two-shot (the same
kinds, another implementation). Three steps, in this order:

1. first look  every shape priced by hwmodels.roofline with the terms the project had before the measurement (NCCL:
               the H200-measured ring terms the H100 borrows; custom kernels: the source model of simulator/kernels/
               allreduce.py, barriers at the spec's link latency, the link's datasheet bandwidth, no fixed time).
               `first_look` writes those predictions; committed before the measurement was read.
2. fit         per kind two terms, fitted on FIT_SIZES only (least squares on log time): fixed_us (the time at zero
               bytes beyond the spec-latency barriers: launch on the device, barriers, NCCL's protocol) and the link
               efficiency (memory[kind]: achieved / datasheet NVLink bandwidth). The custom kinds on the OWN kernel's
               rows, the ring (kind collective) on NCCL's graph-captured rows (device time: what a CUDA-graph decode
               step pays).
3. held out    every other size of the fitted implementations, every size of PyTorch's symmetric-memory kernels
               (another implementation of the same structure, never fitted) and of NCCL's eager calls (timed behind a
               spin kernel: device time, never fitted), by size regime.
The ring's terms replace, for the H100 only, those simulator/calibration/fit_links.py fitted on the H200 (eager calls
timed back to back, so the host's ~30 us enqueue per call was in them). At 2 ranks the per-step latency cannot be told
apart from the fixed time: link_latency_us stays as fit_links left it (0) and fixed_us[collective] carries both, so
the ring's time does not grow with the rank count at small messages (an ASSUMPTION beyond 2 ranks; the H200 fit over
2 and 4 ranks also found no growth).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from hwmodels.roofline import price
from hwmodels.spec import Efficiency, HardwareSpec

DATA_DIR = Path(__file__).resolve().parents[2] / "hwmodels" / "calibration" / "data" / "production_kernels"
IMPL_KIND = {"nccl_eager": "collective", "nccl_graph": "collective", "own_oneshot": "allreduce_1shot",
             "own_twoshot": "allreduce_2shot", "symm_oneshot": "allreduce_1shot", "symm_twoshot": "allreduce_2shot"}
#: the sizes the fit sees (own kernel only); every other size and every symmetric-memory row is held out
FIT_SIZES = (4096, 1 << 20, 1 << 24)
FIT_IMPLS = ("own_oneshot", "own_twoshot", "nccl_graph")
CUSTOM_KINDS = ("allreduce_1shot", "allreduce_2shot")
SIZES = [1 << s for s in range(10, 27, 2)]


def predict_us(df: pd.DataFrame, hw: HardwareSpec, eff: Efficiency | None = None) -> np.ndarray:
    """Device microseconds of one all-reduce per row (columns impl, world, bytes): the roofline's price less the graph
    launch gap (the measurements bracket device time only)."""
    from simulator.ops import OpBuilder

    h = hw if eff is None else hw.with_efficiency(eff)
    b = OpBuilder(len(df))
    kinds = df["impl"].map(IMPL_KIND).to_numpy()
    nbytes = df["bytes"].to_numpy(float)
    world = df["world"].to_numpy(float)
    for kind in np.unique(kinds):
        m = kinds == kind
        b.add("ar", kind, bytes_read=nbytes, dtype="bf16", devices=world, where=m)
    ops = b.build()
    s = price(ops, h, "graph") - h.launch_graph_s
    return np.bincount(ops.setting, weights=s, minlength=len(df)) * 1e6


def size_regime(nbytes) -> np.ndarray:
    n = np.asarray(nbytes, float)
    return np.where(n <= 64 * 1024, "small (<=64 KiB)", np.where(n <= 4 * 1024 * 1024, "middle (256 KiB-4 MiB)",
                                                                  "large (>=16 MiB)"))


FIRST_LOOK_X2 = ("first look: NCCL = committed collective terms (fit_links, H200-measured, borrowed); custom = "
                 "simulator/kernels/allreduce.py: barriers at the spec's link latency, datasheet link bandwidth")


def first_look(hw: HardwareSpec, world: int, out: str | Path, impls=tuple(IMPL_KIND),
               note: str = FIRST_LOOK_X2) -> pd.DataFrame:
    """Predictions of every (impl, size) of the campaign from the committed terms (module docstring, step 1); `note`
    says which terms those were (the model column)."""
    df = pd.DataFrame([{"impl": i, "world": world, "bytes": s} for i in impls for s in SIZES])
    df["kind"] = df["impl"].map(IMPL_KIND)
    df["pred_us"] = np.round(predict_us(df, hw), 3)
    df["device"] = hw.name
    df["model"] = note
    df.to_csv(out, index=False)
    return df


def eff_with(hw: HardwareSpec, x: dict) -> Efficiency:
    """The device's efficiency with the custom kinds' terms x = {kind: (fixed_us, link_eff)}."""
    from dataclasses import replace

    e = hw.efficiency
    return replace(e, fixed_s={**e.fixed_s, **{k: v[0] * 1e-6 for k, v in x.items()}},
                   memory={**e.memory, **{k: v[1] for k, v in x.items()}})


def fit(df: pd.DataFrame, hw: HardwareSpec) -> dict:
    """Per kind: fixed_us and link efficiency on FIT_IMPLS' FIT_SIZES rows (module docstring, step 2)."""
    from scipy.optimize import least_squares

    out = {}
    for impl in FIT_IMPLS:
        kind = IMPL_KIND[impl]
        sub = df[(df["impl"] == impl) & df["bytes"].isin(FIT_SIZES)]
        if sub.empty:
            continue
        y = np.log(sub["median_us"].to_numpy(float))

        def resid(x, sub=sub, kind=kind, y=y):
            return np.log(np.maximum(predict_us(sub, hw, eff_with(hw, {kind: (x[0], x[1])})), 1e-3)) - y
        r = least_squares(resid, [3.0, 0.7], bounds=([0.0, 0.05], [100.0, 1.5]))
        out[kind] = {"fixed_us": round(float(r.x[0]), 4), "link_eff": round(float(r.x[1]), 4), "fit_rows": len(sub),
                     "fit_impl": impl, "rms_log_error": round(float(np.sqrt(np.mean(r.fun ** 2))), 4)}
    return out


def write(data_csv: str | Path, target: str, hw: HardwareSpec, out_dir: Path) -> tuple[Path, dict]:
    """Fit the custom kinds and merge their terms into out_dir/<target>.yaml (other terms kept)."""
    from simulator.calibration import checks as C

    df = pd.read_csv(data_csv)
    f = fit(df, hw)
    own = {"fixed_us": {k: v["fixed_us"] for k, v in f.items()}, "memory": {k: v["link_eff"] for k, v in f.items()},
           "production_allreduce": {
               "source": f"simulator/calibration/fit_production_allreduce.py on {Path(data_csv).name} (lab/kernels/"
                         "measure_allreduce.py): the project's one-shot / two-shot peer-memory kernel (vLLM's "
                         "structure, lab/kernels/ar_kernel.cu) and NCCL's ring (graph-captured, device time) on 2 GPUs "
                         "over NVLink; memory = achieved / datasheet link bandwidth, fixed_us = the zero-byte time "
                         "beyond the spec-latency barriers; collective replaces the H200-borrowed fit_links terms",
               "fit_sizes": list(FIT_SIZES), "terms": f}}
    p = Path(out_dir) / f"{target}.yaml"
    doc = C.merge_into(p, own, {"fixed_us": tuple(f), "memory": tuple(f), "production_allreduce": None})
    return C.write_checked(p, doc, ""), f


def accuracy(data_csv: str | Path, first_look_csv: str | Path | None, hw: HardwareSpec) -> pd.DataFrame:
    """Per implementation and size regime: measured median, first look and fitted (committed terms) median |error|."""
    df = pd.read_csv(data_csv)
    df = df[df["median_us"].notna()].reset_index(drop=True)
    df["fitted_us"] = predict_us(df, hw)
    if first_look_csv is not None and Path(first_look_csv).exists():
        fl = pd.read_csv(first_look_csv)[["impl", "world", "bytes", "pred_us"]]
        df = df.merge(fl, on=["impl", "world", "bytes"], how="left")
    else:
        df["pred_us"] = np.nan
    df["regime"] = size_regime(df["bytes"])
    fitted_row = df["impl"].isin(FIT_IMPLS) & df["bytes"].isin(FIT_SIZES)
    df["part"] = np.where(fitted_row, "fit", "held-out")
    rows = []
    for (impl, reg, part), s in df.groupby(["impl", "regime", "part"], sort=False):
        m = s["median_us"].to_numpy(float)
        fl = np.abs(s["pred_us"].to_numpy(float) / m - 1.0) * 100.0
        ft = (s["fitted_us"].to_numpy(float) / m - 1.0) * 100.0
        rows.append({"impl": impl, "size_regime": reg, "part": part, "n": len(s),
                     "measured_us": f"{m.min():.1f}-{m.max():.1f}",
                     "first_look_med": round(float(np.nanmedian(fl)), 1) if np.isfinite(fl).any() else np.nan,
                     "fitted_med": round(float(np.median(np.abs(ft))), 1),
                     "fitted_p90": round(float(np.quantile(np.abs(ft), 0.9)), 1),
                     "fitted_signed": round(float(np.median(ft)), 1)})
    return pd.DataFrame(rows)


def main(argv=None) -> None:
    """python -m simulator.calibration.fit_production_allreduce [--write]: the accuracy table (first look, then the
    committed terms); --write refits and merges the terms into hwmodels/calibration/fitted/H100-SXM.yaml first."""
    import argparse

    from hwmodels.spec import fitted_dirs, load_hardware

    ap = argparse.ArgumentParser(description=main.__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args(argv)
    data = DATA_DIR / "allreduce_nvidia-h100-80gb-hbm3_x2_2026-11-26.csv"
    first = DATA_DIR / "allreduce_first_look_nvidia-h100-80gb-hbm3_x2_2026-11-26.csv"
    if args.write:
        path, terms = write(data, "H100-SXM", load_hardware("H100-SXM"), fitted_dirs()[0])
        print(f"wrote {path}: {terms}\n(run again without --write for the accuracy of the written terms)")
        return
    with pd.option_context("display.width", 200):
        print(accuracy(data, first, load_hardware("H100-SXM")).to_string(index=False))


if __name__ == "__main__":
    main()
