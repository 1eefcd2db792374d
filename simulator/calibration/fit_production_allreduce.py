"""All-reduce at decode sizes measured by lab/kernels/measure_allreduce.py (2 and 4 x H100, NVLink, bf16, 1 KiB -
64 MiB): NCCL (kind collective), the engines' custom one-shot / two-shot peer-memory kernel (the project's ar_kernel.cu
with vLLM's structure: kinds allreduce_1shot / allreduce_2shot) and PyTorch's symmetric-memory one-shot / two-shot (the
same kinds, another implementation). Three steps, in this order:

1. first look  every shape priced by hwmodels.roofline with the terms the project had before the measurement.
               `first_look` writes those predictions; committed before the measurement was read. At 2 ranks: NCCL the
               H200-measured ring terms the H100 borrowed; custom kernels the source model of simulator/kernels/
               allreduce.py (barriers at the spec's link latency, the link's datasheet bandwidth, no fixed time). At 4
               ranks: the terms fitted on 2 x H100 alone (step 2 on the 2-rank rows).
2. fit         per kind, on FIT_IMPLS' rows at FIT_SIZES of FIT_WORLDS only (least squares on log time; the custom
               kinds on the OWN kernel's rows, the ring on NCCL's graph-captured rows: device time, what a CUDA-graph
               decode step pays):
                 fixed_us     the time at zero bytes beyond the barriers / ring steps (launch on the device, NCCL's
                              protocol)
                 link_eff     memory[kind]: achieved / datasheet NVLink bandwidth; for the custom kinds the rate at
                              which ONE peer's data arrives (at 2 ranks the whole rate)
                 sync_us      sync_us[kind]: the ring's time per step (2 (g-1) steps), or a custom barrier's added time
                              for each peer beyond the first
                 link_ceiling the custom kinds' rate for every peer's traffic together (achieved / datasheet)
               With rows of one rank count only, sync_us and link_ceiling cannot be told apart from fixed_us and
               link_eff: they are left out (0 / absent). Measured at 2 and 4 ranks: at 2 ranks a one-shot rank pulls
               its one peer's message at ~53 % of the datasheet link rate, at 4 ranks its three peers' at ~65 %
               together (the loads from several peers are in flight together), and each barrier takes ~0.7-0.9 us
               more per further peer; the ring's small-message time grows ~0.9 us per step.
3. held out    every other size of the fitted implementations, every size of PyTorch's symmetric-memory kernels
               (another implementation of the same structure, never fitted) and of NCCL's eager calls (timed behind a
               spin kernel: device time, never fitted), by size regime and rank count.
The ring's terms replace, for the H100 only, those simulator/calibration/fit_links.py fitted on the H200 (eager calls
timed back to back, so the host's ~30 us enqueue per call was in them); link_latency_us stays as fit_links left it (0)
and sync_us[collective] carries NCCL's per-step time. Beyond 4 ranks (TP8) every term is extrapolated: the barrier's
per-peer time and the ring's per-step time as linear in the peers / steps, the ceiling as reached (ASSUMPTIONS).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from hwmodels.roofline import ar_barrier_s, price
from hwmodels.spec import Efficiency, HardwareSpec

DATA_DIR = Path(__file__).resolve().parents[2] / "hwmodels" / "calibration" / "data" / "production_kernels"
IMPL_KIND = {"nccl_eager": "collective", "nccl_graph": "collective", "own_oneshot": "allreduce_1shot",
             "own_twoshot": "allreduce_2shot", "symm_oneshot": "allreduce_1shot", "symm_twoshot": "allreduce_2shot"}
#: the sizes and rank counts the fit sees (own kernel and NCCL graph only); every other size and every
#: symmetric-memory / NCCL-eager row is held out
FIT_SIZES = (4096, 1 << 20, 1 << 24)
FIT_WORLDS = (2, 4)
#: the campaigns (lab/kernels/measure_allreduce.py) the fit reads, by rank count
DATA = {2: "allreduce_nvidia-h100-80gb-hbm3_x2_2026-11-26.csv", 4: "allreduce_nvidia-h100-80gb-hbm3_x4_2026-11-26.csv"}
FIT_IMPLS = ("own_oneshot", "own_twoshot", "nccl_graph")
#: barriers an implementation has beyond its kind's (hwmodels.roofline AR_BARRIERS, the engines' sources): the
#: project's two-shot (lab/kernels/ar_kernel.cu) ends with a barrier so no rank leaves while others still read its
#: scratch, which vLLM's cross_device_reduce_2stage and TensorRT-LLM's twoshot_sync do not have; PyTorch's
#: symmetric-memory two-shot is priced as it was when its rows were first judged (the same three barriers)
EXTRA_BARRIERS = {"own_twoshot": 1.0, "symm_twoshot": 1.0}
CUSTOM_KINDS = ("allreduce_1shot", "allreduce_2shot")
SIZES = [1 << s for s in range(10, 27, 2)]


def own_kernel(hw: HardwareSpec) -> HardwareSpec:
    """`hw` without the engines' kernel terms (Efficiency.engine_ar): the project's own kernel and PyTorch's
    symmetric-memory kernels keep the grid-wide barriers these kinds' terms were fitted with."""
    from dataclasses import replace

    return hw.with_efficiency(replace(hw.efficiency, engine_ar={})) if hw.efficiency.engine_ar else hw


def predict_us(df: pd.DataFrame, hw: HardwareSpec, eff: Efficiency | None = None) -> np.ndarray:
    """Device microseconds of one all-reduce per row (columns impl, world, bytes): the roofline's price less the graph
    launch gap (the measurements bracket device time only)."""
    from simulator.ops import OpBuilder

    h = own_kernel(hw if eff is None else hw.with_efficiency(eff))
    b = OpBuilder(len(df))
    kinds = df["impl"].map(IMPL_KIND).to_numpy()
    nbytes = df["bytes"].to_numpy(float)
    world = df["world"].to_numpy(float)
    for kind in np.unique(kinds):
        m = kinds == kind
        b.add("ar", kind, bytes_read=nbytes, dtype="bf16", devices=world, where=m)
    ops = b.build()
    s = price(ops, h, "graph") - h.launch_graph_s
    out = np.bincount(ops.setting, weights=s, minlength=len(df))
    extra = df["impl"].map(EXTRA_BARRIERS).fillna(0.0).to_numpy(float)
    if extra.any():
        out = out + extra * ar_barrier_s(h, "allreduce_2shot", world)
    return out * 1e6


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
    """The device's efficiency with the terms x = {kind: {fixed_us, link_eff[, sync_us][, link_ceiling]}}."""
    from dataclasses import replace

    e = hw.efficiency
    return replace(e, fixed_s={**e.fixed_s, **{k: v["fixed_us"] * 1e-6 for k, v in x.items()}},
                   memory={**e.memory, **{k: v["link_eff"] for k, v in x.items()}},
                   sync_s={**e.sync_s, **{k: v.get("sync_us", 0.0) * 1e-6 for k, v in x.items()}},
                   link_ceiling={**{k: c for k, c in e.link_ceiling.items() if k not in x},
                                 **{k: v["link_ceiling"] for k, v in x.items() if "link_ceiling" in v}})


def fit(df: pd.DataFrame, hw: HardwareSpec) -> dict:
    """Per kind: fixed_us, link efficiency and (rows of several rank counts) sync_us and, custom kinds, link_ceiling,
    on FIT_IMPLS' rows at FIT_SIZES and FIT_WORLDS (module docstring, step 2)."""
    from scipy.optimize import least_squares

    out = {}
    for impl in FIT_IMPLS:
        kind = IMPL_KIND[impl]
        sub = df[(df["impl"] == impl) & df["bytes"].isin(FIT_SIZES) & df["world"].isin(FIT_WORLDS)]
        if sub.empty:
            continue
        names = ["fixed_us", "link_eff"]
        if sub["world"].nunique() > 1:
            names += ["sync_us"] + (["link_ceiling"] if kind in CUSTOM_KINDS else [])
        # start with the ceiling above the one-peer rate: where they are equal the one-peer term has no gradient
        x0 = {"fixed_us": 3.0, "link_eff": 0.5, "sync_us": 0.5, "link_ceiling": 0.7}
        lo = {"fixed_us": 0.0, "link_eff": 0.05, "sync_us": 0.0, "link_ceiling": 0.05}
        hi = {"fixed_us": 100.0, "link_eff": 1.2, "sync_us": 20.0, "link_ceiling": 1.2}
        y = np.log(sub["median_us"].to_numpy(float))

        def resid(x, sub=sub, kind=kind, y=y, names=names):
            terms = {kind: dict(zip(names, x))}
            return np.log(np.maximum(predict_us(sub, hw, eff_with(hw, terms)), 1e-3)) - y
        r = least_squares(resid, [x0[n] for n in names], bounds=([lo[n] for n in names], [hi[n] for n in names]))
        out[kind] = {**{n: round(float(v), 4) for n, v in zip(names, r.x)}, "fit_rows": len(sub), "fit_impl": impl,
                     "fit_worlds": sorted(int(w) for w in sub["world"].unique()),
                     "rms_log_error": round(float(np.sqrt(np.mean(r.fun ** 2))), 4)}
    return out


def campaign(worlds=FIT_WORLDS) -> pd.DataFrame:
    """The committed campaigns of `worlds` ranks, one frame."""
    return pd.concat([pd.read_csv(DATA_DIR / DATA[w]) for w in worlds], ignore_index=True)


def write(df: pd.DataFrame, target: str, hw: HardwareSpec, out_dir: Path) -> tuple[Path, dict]:
    """Fit the all-reduce kinds on the campaign rows `df` and merge their terms into out_dir/<target>.yaml (other
    terms kept)."""
    from simulator.calibration import checks as C

    f = fit(df, hw)
    src = sorted(DATA[int(w)] for w in df["world"].unique() if int(w) in DATA)
    own = {"fixed_us": {k: v["fixed_us"] for k, v in f.items()}, "memory": {k: v["link_eff"] for k, v in f.items()},
           "sync_us": {k: v.get("sync_us", 0.0) for k, v in f.items()},
           "link_ceiling": {k: v["link_ceiling"] for k, v in f.items() if "link_ceiling" in v},
           "production_allreduce": {
               "source": f"simulator/calibration/fit_production_allreduce.py on {', '.join(src)} (lab/kernels/"
                         "measure_allreduce.py): the project's one-shot / two-shot peer-memory kernel (vLLM's "
                         "structure, lab/kernels/ar_kernel.cu) and NCCL's ring (graph-captured, device time) on 2 and "
                         "4 GPUs over NVLink; memory = achieved / datasheet link bandwidth (custom kinds: one peer's "
                         "rate), link_ceiling = every peer's traffic together, fixed_us = the zero-byte time beyond "
                         "the barriers / ring steps, sync_us = the ring's time per step or a barrier's time per "
                         "further peer; collective replaces the H200-borrowed fit_links terms",
               "fit_sizes": list(FIT_SIZES), "fit_worlds": list(FIT_WORLDS), "terms": f}}
    if not own["link_ceiling"]:
        del own["link_ceiling"]
    p = Path(out_dir) / f"{target}.yaml"
    doc = C.merge_into(p, own, {"fixed_us": tuple(f), "memory": tuple(f), "sync_us": tuple(f),
                                "link_ceiling": tuple(k for k in f if k in CUSTOM_KINDS),
                                "production_allreduce": None})
    return C.write_checked(p, doc, ""), f


def accuracy(data_csv: str | Path, first_look_csv: str | Path | None, hw: HardwareSpec,
             fitted: bool = True) -> pd.DataFrame:
    """Per implementation and size regime: measured median, first look and fitted (committed terms) |error|; fit rows
    apart (fitted=False: a campaign the fit never read, every row held out)."""
    df = pd.read_csv(data_csv)
    df = df[df["median_us"].notna()].reset_index(drop=True)
    df["fitted_us"] = predict_us(df, hw)
    if first_look_csv is not None and Path(first_look_csv).exists():
        fl = pd.read_csv(first_look_csv)[["impl", "world", "bytes", "pred_us"]]
        df = df.merge(fl, on=["impl", "world", "bytes"], how="left")
    else:
        df["pred_us"] = np.nan
    df["regime"] = size_regime(df["bytes"])
    fitted_row = df["impl"].isin(FIT_IMPLS) & df["bytes"].isin(FIT_SIZES) & df["world"].isin(FIT_WORLDS) & fitted
    df["part"] = np.where(fitted_row, "fit", "held-out")
    rows = []
    for (impl, reg, part), s in df.groupby(["impl", "regime", "part"], sort=False):
        m = s["median_us"].to_numpy(float)
        fl = np.abs(s["pred_us"].to_numpy(float) / m - 1.0) * 100.0
        ft = (s["fitted_us"].to_numpy(float) / m - 1.0) * 100.0
        rows.append({"impl": impl, "size_regime": reg, "part": part, "n": len(s),
                     "measured_us": f"{m.min():.1f}-{m.max():.1f}",
                     "first_look_med": round(float(np.nanmedian(fl)), 1) if np.isfinite(fl).any() else np.nan,
                     "first_look_p90": round(float(np.nanquantile(fl, 0.9)), 1) if np.isfinite(fl).any() else np.nan,
                     "fitted_med": round(float(np.median(np.abs(ft))), 1),
                     "fitted_p90": round(float(np.quantile(np.abs(ft), 0.9)), 1),
                     "fitted_signed": round(float(np.median(ft)), 1)})
    return pd.DataFrame(rows)


def first_look_accuracy(data_csv: str | Path, first_look_csv: str | Path) -> pd.DataFrame:
    """Per implementation and size regime, every row held out: the first look's |error| (median, p90) and signed
    median against the measurement."""
    df = pd.read_csv(data_csv).merge(pd.read_csv(first_look_csv)[["impl", "world", "bytes", "pred_us"]],
                                     on=["impl", "world", "bytes"], how="inner")
    df["err"] = (df["pred_us"] / df["median_us"] - 1.0) * 100.0
    df["regime"] = size_regime(df["bytes"])
    return (df.groupby(["impl", "regime"], sort=False)["err"]
            .agg(n="size", first_look_med=lambda v: np.median(np.abs(v)), first_look_p90=lambda v: np.quantile(
                np.abs(v), 0.9), first_look_signed="median").round(1).reset_index()
            .rename(columns={"regime": "size_regime"}))


def main(argv=None) -> None:
    """python -m simulator.calibration.fit_production_allreduce [--write]: the accuracy tables (first look, then the
    committed terms) per rank count; --write refits and merges the terms into hwmodels/calibration/fitted/
    H100-SXM.yaml first."""
    import argparse

    from hwmodels.spec import fitted_dirs, load_hardware

    ap = argparse.ArgumentParser(description=main.__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args(argv)
    if args.write:
        path, terms = write(campaign(), "H100-SXM", load_hardware("H100-SXM"), fitted_dirs()[0])
        print(f"wrote {path}: {terms}\n(run again without --write for the accuracy of the written terms)")
        return
    hw = load_hardware("H100-SXM")
    with pd.option_context("display.width", 200):
        for w, name in DATA.items():
            first = DATA_DIR / name.replace("allreduce_", "allreduce_first_look_", 1)
            print(f"== {w} ranks: {name}")
            print(accuracy(DATA_DIR / name, first, hw).to_string(index=False))


if __name__ == "__main__":
    main()
