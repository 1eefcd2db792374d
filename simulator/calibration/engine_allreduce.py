"""The engines' own custom all-reduce kernels (flashinfer-python 0.6.4's JIT modules: vLLM's custom all-reduce and
TensorRT-LLM's all-reduce fusion, plain and with residual add + RMSNorm), priced from the committed H100 terms and the
source's structure (simulator/kernels/allreduce.py), then compared with lab/kernels/measure_engine_allreduce.py.

This module holds the family's LIVE code, what every grid uses:
    rows         `grid` (the rows the lab script measures for given ranks x (tokens, hidden); by default the first
                 campaign's: tokens 1-512 x hidden 4096 / 8192 bf16 plus 1024 / 2048 tokens at 8192, 8 KiB - 32 MiB),
                 `vllm_impl`, IMPL_KIND, DATA_DIR
    price        `predict_us` (the model as shipped), `predict_with` (hwmodels.roofline's module constants set; grid
                 13's and 14's rules off unless named: GRID13_RULES_OFF / GRID14_RULES_OFF), `with_device_rules` /
                 `without_device_rules` (a device's own engine_allreduce_rules), `with_engine_terms`, `price_in_tree`
                 (the model of an exported commit)
    first look   `first_look` writes the prediction of every row of the campaign's grid (PRED_CSV; 2 and 4 ranks),
                 committed BEFORE the measurement: the kinds' terms are those fit_production_allreduce.py fitted on the
                 project's own kernel (vLLM's structure) and NCCL; nothing of the engines' kernels was fitted
    compare      `blind_rows` / `blind6_rows` (one price / both committed prices joined to a measurement), `blind_table`
                 (signed error per implementation x size regime x ranks), `size_regime`, `trtllm_launch_columns`
    fit          `fit_engine_terms` / `write_engine_terms`: the engines' own terms (Efficiency.engine_ar: barrier,
                 phase, flag_store, norm; hwmodels.roofline ENGINE_AR_TERMS) on FIT_CSV, the 2 x H100 rows only (least
                 squares on log time); HELD_OUT_CSV (4 x H200, another device and host) is never read by the fit

Each blind grid's history (its shapes, prediction writer, candidate, fit, and the judgement in the comment above its
shapes) is a module of its own, which imports only this one and the grids before it:
    grid 4       engine_allreduce_grid4.py    4 ranks, the fitted engines' terms
    grid 6       engine_allreduce_grid6.py    no flag barrier in the Lamport one-shot, the fused RMSNorm's norm term
    grid 7       engine_allreduce_grid7.py    the Lamport one-shot's own push phase (not kept)
    grid 8       engine_allreduce_grid8.py    vLLM's two-shot in whole loop steps, the Lamport link ceiling (shipped)
    grid 9       engine_allreduce_grid9.py    the last loop step by its fill (shipped; GRID8_RULE is grid 8's)
    grid 10      engine_allreduce_grid10.py   TensorRT-LLM two-shot's local copies, RMSNorm by cluster (not shipped)
    grid 11      engine_allreduce_grid11.py   the same above 2 ranks, one- and two-shot (4 x H200; not shipped)
    grid 12      engine_allreduce_grid12.py   the H200's own engines' terms (h200_candidate, write_h200_engine_terms)
    grid 13      engine_allreduce_grid13.py   copies, RMSNorm by cluster, (g - 2) x peer (shipped); earlier_shapes
    grid 14      engine_allreduce_grid14.py   vLLM's first loop step by its fill, the 2-rank Lamport overlap
    grids 15-20  engine_allreduce_grid15.py ... engine_allreduce_grid20.py; engine_allreduce_h200.py (grid 14 priced
                 for the H200), engine_allreduce_replicates.py (the grids measured again on a second host)

Implementations (the campaign's impl column) and the kinds that price them:
    vllm_oneshot / vllm_twoshot        allreduce_1shot / allreduce_2shot (the kernel's own choice: one-shot at 2 ranks,
                                       at 4 ranks below 512 KiB)
    trtllm_ar_oneshot                  allreduce_1shot_lamport (push, no barrier)
    trtllm_ar_twoshot                  allreduce_2shot
    trtllm_arnorm_*                    the same + fused_epilogue_s (residual add + RMSNorm)
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from hwmodels.roofline import price
from hwmodels.spec import HardwareSpec

DATA_DIR = Path(__file__).resolve().parents[2] / "hwmodels" / "calibration" / "data" / "production_kernels"
TOKENS = (1, 4, 16, 64, 128, 256, 512)
HIDDENS = (4096, 8192)
LARGE = ((1024, 8192), (2048, 8192))
WORLDS = (2, 4)
IMPL_KIND = {"vllm_oneshot": "allreduce_1shot", "vllm_twoshot": "allreduce_2shot",
             "trtllm_ar_oneshot": "allreduce_1shot_lamport", "trtllm_ar_twoshot": "allreduce_2shot",
             "trtllm_arnorm_oneshot": "allreduce_1shot_lamport", "trtllm_arnorm_twoshot": "allreduce_2shot"}
PRED_CSV = "engine_allreduce_blind_H100-SXM_2026-11-26.csv"

#: the measurement the engines' own terms are fitted on (the device whose terms they are); the 4 x H200 campaign is
#: another device and another host and is held out entirely
FIT_CSV = "engine_allreduce_nvidia-h100-80gb-hbm3_x2_2026-11-27.csv"
HELD_OUT_CSV = "engine_allreduce_nvidia-h200_x4_2026-11-26.csv"
#: the engines' terms (Efficiency.engine_ar, microseconds): start, lower and upper bound of the fit
TERMS = {"barrier": (1.0, 0.0, 20.0), "phase": (3.0, 0.0, 20.0), "flag_store": (1.0, 0.0, 20.0),
         "norm": (1.0, 0.0, 20.0)}
#: hwmodels.roofline's grid-13 constants (shipped after blind grid 13 won: engine_allreduce_grid13.GRID13_CANDIDATE,
#: peer as a share of the H100's phase_s) at the values that turn them off: predict_with prices every earlier grid's
#: model with them
GRID13_RULES_OFF = {"AR_TWOSHOT_COPY": 0.0, "AR_NORM_CS1": 1.0, "AR_NORM_CSN": 1.0, "AR_PEER_SHARE": 0.0}
#: the values of grid 14's roofline constants that turn them off (main's model; predict_with prices earlier grids so;
#: engine_allreduce_grid14.GRID14_CANDIDATE holds grid 14's values, shipped as the devices' own engine_allreduce_rules)
GRID14_RULES_OFF = {"AR_FIRST_FILL_EXTRA": 0.0, "AR_LAMPORT_OVERLAP": 0.0}


def vllm_impl(world: int, nbytes: int) -> str:
    """vllm_custom_all_reduce.cuh CustomAllreduce::allreduce: one-shot at 2 ranks, below 512 KiB at <= 4 ranks, below
    256 KiB at <= 8; two-shot otherwise (full NVLink)."""
    one = world == 2 or (world <= 4 and nbytes < 512 * 1024) or (world <= 8 and nbytes < 256 * 1024)
    return "vllm_oneshot" if one else "vllm_twoshot"


def grid(worlds=WORLDS, shapes=None) -> pd.DataFrame:
    """Every row the campaign measures (the two-shot fusion kernel needs more tokens than ranks); `shapes` (tokens,
    hidden) default to the first campaign's."""
    rows = []
    shapes = [(t, h) for h in HIDDENS for t in TOKENS] + list(LARGE) if shapes is None else shapes
    for g in worlds:
        for t, h in shapes:
            nb = t * h * 2
            rows.append({"impl": vllm_impl(g, nb), "world": g, "tokens": t, "hidden": h, "bytes": nb})
            for p in ("ar", "arnorm"):
                rows.append({"impl": f"trtllm_{p}_oneshot", "world": g, "tokens": t, "hidden": h, "bytes": nb})
                if t > g:
                    rows.append({"impl": f"trtllm_{p}_twoshot", "world": g, "tokens": t, "hidden": h, "bytes": nb})
    return pd.DataFrame(rows)


def predict_us(df: pd.DataFrame, hw: HardwareSpec, flags: bool = True) -> np.ndarray:
    """Device microseconds per row (impl, world, tokens, hidden, bytes): the kind's roofline price less the graph launch
    gap, plus the fused epilogue for the arnorm rows; with `flags` the TensorRT-LLM two-shot rows also pay their
    barrier-flag stores (simulator/kernels/allreduce.py, a rule added after the measurement was read; the blind CSV
    was priced without it). vLLM's rows declare its 36 CTAs (hwmodels.roofline prices its two-shot in whole loop
    steps, shipped after blind grid 8)."""
    from simulator.kernels.allreduce import VLLM_CTAS, trtllm_cluster_size, trtllm_twoshot_flag_steps
    from simulator.ops import OpBuilder

    b = OpBuilder(len(df))
    kinds = df["impl"].map(IMPL_KIND).to_numpy()
    steps = np.zeros(len(df))
    if flags:
        two = df["impl"].str.startswith("trtllm").to_numpy() & df["impl"].str.endswith("twoshot").to_numpy()
        steps = np.where(two, trtllm_twoshot_flag_steps(df["tokens"], df["hidden"], df["world"], int(hw.units)), 0.0)

    # the fused epilogue's extra read + write as the layers declare it (bytes_written = 2 x message: roofline prices
    # it as fused_epilogue_s, and with the engines' terms its serialized RMSNorms at norm_s)
    written = np.where(df["impl"].str.startswith("trtllm_arnorm"), 2.0, 0.0) * df["bytes"].to_numpy(float)
    units = np.where(df["impl"].str.startswith("vllm").to_numpy(), float(VLLM_CTAS), 0.0)
    # TensorRT-LLM's rows declare the fusion kernel's cluster (the fused RMSNorm's share: hwmodels.roofline AR_NORM_CS1 /
    # AR_NORM_CSN, shipped after blind grid 13)
    cluster = np.zeros(len(df))
    trt = df["impl"].str.startswith("trtllm").to_numpy()
    if trt.any():
        one = df["impl"].str.endswith("oneshot").to_numpy()
        t, h, g = df["tokens"].to_numpy(float), df["hidden"].to_numpy(float), df["world"].to_numpy(float)
        for o in (True, False):
            mm = trt & (one == o)
            if mm.any():
                cluster[mm] = trtllm_cluster_size(t[mm], h[mm], g[mm], o, int(hw.units))
    for kind in np.unique(kinds):
        m = kinds == kind
        b.add("ar", kind, bytes_read=df["bytes"].to_numpy(float), bytes_written=written, dtype="bf16",
              devices=df["world"].to_numpy(float), sync_steps=steps, parallel_units=units, cluster_ctas=cluster,
              where=m)
    ops = b.build()
    s = np.bincount(ops.setting, weights=price(ops, hw, "graph") - hw.launch_graph_s, minlength=len(df))
    return s * 1e6


def with_engine_terms(hw: HardwareSpec, terms: dict) -> HardwareSpec:
    """`hw` with the engines' kernel terms {barrier, phase, flag_store, norm} (microseconds) as Efficiency.engine_ar."""
    from dataclasses import replace

    return hw.with_efficiency(replace(hw.efficiency, engine_ar={f"{k}_s": float(v) * 1e-6 for k, v in terms.items()}))


def fit_engine_terms(meas: pd.DataFrame, hw: HardwareSpec) -> dict:
    """The engines' kernel terms (TERMS: one per-CTA flag barrier, the zero-byte time beyond it, one further
    TensorRT-LLM flag store, one serialized fused RMSNorm), least squares on log time over every row of `meas` (not
    WRONG); the link terms stay the own kernel's (fit_production_allreduce.py). Priced without blind grid 13's rules
    (predict_with(..., {})), as the committed terms were fitted."""
    from scipy.optimize import least_squares

    m = meas[~meas["note"].astype("string").fillna("").str.contains("WRONG")].reset_index(drop=True)
    y = np.log(m["median_us"].to_numpy(float))
    names = list(TERMS)

    def resid(x):
        return np.log(np.maximum(predict_with(m, with_engine_terms(hw, dict(zip(names, x))), {}), 1e-3)) - y
    r = least_squares(resid, [TERMS[n][0] for n in names], bounds=([TERMS[n][1] for n in names],
                                                                    [TERMS[n][2] for n in names]))
    return {**{n: round(float(v), 4) for n, v in zip(names, r.x)}, "fit_rows": len(m),
            "rms_log_error": round(float(np.sqrt(np.mean(r.fun ** 2))), 4)}


def write_engine_terms(hw: HardwareSpec, out_dir: Path, target: str = "H100-SXM") -> tuple[Path, dict]:
    """Fit the engines' terms on FIT_CSV and merge them into out_dir/<target>.yaml (engine_allreduce_us, with the
    fit's record under engine_allreduce; other terms kept)."""
    from simulator.calibration import checks as C
    from simulator.calibration.fit_production_allreduce import own_kernel

    f = fit_engine_terms(pd.read_csv(DATA_DIR / FIT_CSV), own_kernel(hw))
    doc = {"engine_allreduce_us": {n: f[n] for n in TERMS},
           "engine_allreduce": {
               "source": f"simulator/calibration/engine_allreduce.py fit_engine_terms on {FIT_CSV} (lab/kernels/"
                         "measure_engine_allreduce.py, flashinfer-python 0.6.4 JIT: vLLM's custom all-reduce and "
                         "TensorRT-LLM's all-reduce fusion, plain and + RMSNorm, 2 x H100 NVLink): barrier = one "
                         "per-CTA flag barrier (rank-count independent; none in the Lamport one-shot), phase = "
                         "one serialized peer-data phase (one-shot 1, two-shot 2; replaces the own kernel's fixed_us), "
                         "flag_store = each further release store of TensorRT-LLM's "
                         "Barrier::sync loop, norm = one serialized RMSNorm of the fused epilogue (one-shot 1, two-shot "
                         "g); the link terms stay the own kernel's (production_allreduce); "
                         f"{HELD_OUT_CSV} (another device and host) held out",
               "terms": f}}
    p = Path(out_dir) / f"{target}.yaml"
    merged = C.merge_into(p, doc, {"engine_allreduce_us": None, "engine_allreduce": None})
    return C.write_checked(p, merged, ""), f


def size_regime(nbytes) -> np.ndarray:
    n = np.asarray(nbytes, float)
    return np.where(n <= 64 * 1024, "a small (8-64 KiB)",
                    np.where(n <= 1024 * 1024, "b middle (128 KiB-1 MiB)",
                             np.where(n <= 8 * 1024 * 1024, "c large (2-8 MiB)", "d beyond the cap (16-32 MiB)")))


def first_look(hw: HardwareSpec, out: str | Path, note: str) -> pd.DataFrame:
    df = grid()
    df["kind"] = df["impl"].map(IMPL_KIND)
    df["pred_us"] = np.round(predict_us(df, hw, flags=False), 3)
    df["device"] = hw.name
    df["model"] = note
    df.to_csv(out, index=False)
    return df


def with_device_rules(hw: HardwareSpec, rules: dict) -> HardwareSpec:
    """`hw` with its own engine_allreduce_rules (Efficiency.engine_ar_rules; hwmodels.spec ENGINE_AR_RULES keys) replaced
    by `rules`."""
    from dataclasses import replace

    return hw.with_efficiency(replace(hw.efficiency, engine_ar_rules={k: float(v) for k, v in rules.items()}))


def without_device_rules(hw: HardwareSpec) -> HardwareSpec:
    """`hw` without its own engine_allreduce_rules (shipped after blind grid 16): the earlier grids' predictors set the
    rules through hwmodels.roofline's module constants, which a device's own values override."""
    return with_device_rules(hw, {}) if hw.efficiency.engine_ar_rules else hw


def predict_with(df: pd.DataFrame, hw: HardwareSpec, terms: dict) -> np.ndarray:
    """predict_us with hwmodels.roofline's module constants `terms` ({name: value}, e.g. engine_allreduce_grid9.
    GRID9_CANDIDATE) in place; blind grid 13's rules (GRID13_RULES_OFF: every earlier grid's models were priced without
    them) are off unless `terms` names them, so predict_with(df, hw, {}) prices the model as it stood before grid 13
    (engine_allreduce_grid13.BLIND13_MAIN_COMMIT)."""
    from contextlib import ExitStack
    from unittest import mock

    import hwmodels.roofline as R

    with ExitStack() as st:
        for k, v in {**GRID13_RULES_OFF, **GRID14_RULES_OFF, **terms}.items():
            st.enter_context(mock.patch.object(R, k, float(v)))
        return predict_us(df, without_device_rules(hw))


def trtllm_launch_columns(df: pd.DataFrame, sms: int, tokens_per_cluster: bool = True) -> None:
    """Add the TensorRT-LLM fusion kernel's launch config to its rows of a prediction frame (in place): trt_ctas
    (simulator.kernels.allreduce.trtllm_grid), trt_cluster_size, and (grids 10-11) the tokens each cluster takes."""
    from simulator.kernels.allreduce import trtllm_cluster_size, trtllm_grid

    tr = df["impl"].str.startswith("trtllm").to_numpy()
    one = df["impl"].str.endswith("oneshot").to_numpy()
    for o in (True, False):
        m = tr & (one == o)
        if not m.any():
            continue
        d = df[m]
        ctas = trtllm_grid(d["tokens"], d["hidden"], d["world"], o, sms)
        cs = trtllm_cluster_size(d["tokens"], d["hidden"], d["world"], o, sms)
        df.loc[m, "trt_ctas"] = ctas
        df.loc[m, "trt_cluster_size"] = cs
        if tokens_per_cluster:
            cn = d["tokens"].to_numpy(float) if o else np.ceil(d["tokens"].to_numpy(float) / d["world"].to_numpy(float))
            df.loc[m, "trt_tokens_per_cluster"] = np.ceil(cn / np.maximum(ctas / cs, 1.0))


def _price_both(df: pd.DataFrame, hw: HardwareSpec, main_tree: str | Path) -> pd.DataFrame:
    """A blind grid's rows with their kind and both prices (us, 3 decimals): pred_main_us by the exported tree
    `main_tree` (price_in_tree), pred_new_us by this model."""
    df["kind"] = df["impl"].map(IMPL_KIND)
    df["pred_main_us"] = np.round(price_in_tree(df, main_tree), 3)
    df["pred_new_us"] = np.round(predict_us(df, hw), 3)
    return df


def _write_prediction(df: pd.DataFrame, hw: HardwareSpec, out: str | Path, main_commit: str, model_commit: str,
                      new_what: str) -> pd.DataFrame:
    """Label a blind prediction (device, both models: main's commit, this model's commit, terms and `new_what`, its
    structure) and write it to `out`."""
    df["device"] = hw.name
    df["main_model"] = f"the model at {main_commit} (engines' terms fitted on {FIT_CSV})"
    terms = {k: round(v * 1e6, 4) for k, v in hw.efficiency.engine_ar.items()}
    df["new_model"] = f"the model at {model_commit}: engines' terms (us) {terms} refitted on {FIT_CSV} only{new_what}"
    df.to_csv(out, index=False)
    return df


def price_in_tree(df: pd.DataFrame, tree: str | Path) -> np.ndarray:
    """predict_us of `df` as the code and fitted files in `tree` (an exported commit, e.g. `git archive 65f5d1f`) price
    it, in a separate interpreter whose imports resolve to that tree first."""
    import os
    import subprocess
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "in.csv", Path(tmp) / "out.csv"
        df[["impl", "world", "tokens", "hidden", "bytes"]].to_csv(src, index=False)
        code = ("import sys, pandas as pd, hwmodels\n"
                "from hwmodels.spec import load_hardware\n"
                "from simulator.calibration.engine_allreduce import predict_us\n"
                "assert hwmodels.__file__.startswith(sys.argv[3]), hwmodels.__file__\n"
                "d = pd.read_csv(sys.argv[1])\n"
                "d.assign(pred_us=predict_us(d, load_hardware('H100-SXM'))).to_csv(sys.argv[2], index=False)\n")
        tree = str(Path(tree).resolve())
        env = {**os.environ, "PYTHONPATH": tree}
        subprocess.run([sys.executable, "-c", code, str(src), str(dst), tree], cwd=tree, env=env, check=True)
        return pd.read_csv(dst)["pred_us"].to_numpy(float)


def blind6_rows(pred: pd.DataFrame, meas: pd.DataFrame) -> pd.DataFrame:
    """blind_rows of both committed prices: err_main, err_new (model / measured - 1), the regime, the measured time."""
    a = blind_rows(pred.rename(columns={"pred_main_us": "pred_us"}), meas).rename(columns={"err": "err_main"})
    b = blind_rows(pred.rename(columns={"pred_new_us": "pred_us"}), meas)
    a["err_new"] = b["err"].to_numpy()
    a.attrs["wrong"] = b.attrs["wrong"]
    return a


def blind_rows(pred: pd.DataFrame, meas: pd.DataFrame) -> pd.DataFrame:
    """pred (impl, world, tokens, hidden, bytes, pred_us) joined to the measured rows, with err = pred / measured - 1
    and the size regime; rows the measurement marked WRONG are left out (counted in attrs['wrong'])."""
    key = ["impl", "world", "tokens", "hidden"]
    m = meas.copy()
    m["note"] = m["note"].astype("string").fillna("")
    df = pred.merge(m[key + ["median_us", "note"]], on=key, how="inner")
    bad = df["note"].str.contains("WRONG")
    df = df[~bad].copy()
    df["err"] = df["pred_us"] / df["median_us"] - 1.0
    df["regime"] = size_regime(df["bytes"])
    df.attrs["wrong"] = int(bad.sum())
    return df


def blind_table(pred: pd.DataFrame, meas: pd.DataFrame) -> pd.DataFrame:
    """Signed error per implementation x size regime x ranks: median, min, max of pred / measured - 1 (blind_rows)."""
    df = blind_rows(pred, meas)
    out = (df.groupby(["impl", "world", "regime"])
           .agg(n=("err", "size"), meas_us=("median_us", "median"), pred_us=("pred_us", "median"),
                median=("err", "median"), lo=("err", "min"), hi=("err", "max")).reset_index())
    out.attrs["wrong"] = df.attrs["wrong"]
    return out


def main() -> None:  # pragma: no cover - writes the committed first-look CSV (see write_engine_terms for the fit)
    """`python -m simulator.calibration.engine_allreduce` writes the first look (each blind grid's prediction:
    `python -m simulator.calibration.engine_allreduce_gridN ...`, N = 6-14)."""
    from hwmodels.spec import load_hardware
    hw = load_hardware("H100-SXM")
    note = ("blind: committed H100 terms (fit_production_allreduce.py, own kernel + NCCL) + flashinfer-0.6.4 source "
            "rules (AR_BARRIERS, Lamport one-shot, fused epilogue); nothing of these kernels fitted")
    df = first_look(hw, DATA_DIR / PRED_CSV, note)
    print(df.groupby(["impl", "world"])["pred_us"].describe()[["count", "min", "50%", "max"]].round(2))


if __name__ == "__main__":
    main()
