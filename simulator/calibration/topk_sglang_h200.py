"""SGLang's DSA top-k on the H200: the H100's fifth blind set (grid 5) re-run there, and new shapes over its regimes,
both priced before the call by the product as committed.

Every term of SGLang's top-k model (simulator/kernels/topk_production.py: one 1024-thread CTA a row, two full sweeps,
refinement rounds over the staged threshold bin, the L2 sweep curves) was fitted on the H100-SXM. The H200's fitted file
names no top-k kind, so the product prices them there with the H100-SXM's terms (`unmeasured_kinds_from` in
hwmodels/calibration/fitted/H200.yaml): the same GH100 SM count (132) and 50 MiB L2, the H200's own HBM3e bandwidth.
Nothing of this grid was measured on an H200 before its prices were committed (lab/kernels/predict_topk_sgl_h200.py ->
production_kernels/topk_sglang_h200_prediction_2026-11-28.csv).

- **transfer rows** (`set == "transfer"`): grid 5's 66 shapes (the H100's STANDING set of the family: decode 1-256 rows
  and prefill 512-4096 rows over 2.1K-1M scores, recorded / gaussian / uniform), the same (scores, rows, length)
  triples; the H100's measurement beside them gives the measured H200 / H100 ratio.
- **new rows** (`set == "new"`): 36 shapes in no committed top-k CSV, 4 in each of grid 5's nine regimes (`regime5`:
  short / mid / long rows x decode 1-16 / decode 24-256 / prefill 512-4096), declared as the family's H200 STANDING
  before the call.

The measurement: lab/kernels/measure_topk_engines.py --lib (SGLang's kernel from a local transcription of
sgl-kernel/csrc/elementwise/topk.cu, built on the device; never committed), lab/kernels/run_topk_sgl_h200_device.sh.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from hwmodels.spec import HardwareSpec
from simulator.calibration import fit_production_topk_gemm as F
from simulator.calibration import topk_engines as TE

PREDICTION = "topk_sglang_h200_prediction_2026-11-28.csv"
#: the measurement's file globs (measure_topk_engines.py names it topk_engines_<device>_<date>_<tag>.csv)
MEASURED_GLOB = "topk_engines_nvidia-h200_*_sgl_h200.csv"
REPLICATE_GLOB = "topk_engines_nvidia-h200_*_sgl_h200_replicate.csv"
KERNEL = "sgl_topk"

#: the new shapes, 4 per regime5 regime (lengths and row counts chosen by hand away from the H100 grids' shapes; the
#: predictor refuses one measured before)
NEW = [
    # short rows (<= 16K), decode 1-16
    ("recorded", 2, 5200), ("recorded", 7, 13300), ("gaussian", 12, 3900), ("uniform", 5, 10400),
    # short rows, decode 24-256
    ("recorded", 40, 8200), ("recorded", 130, 4700), ("recorded", 220, 14700), ("gaussian", 96, 11900),
    # short rows, prefill 512-4096
    ("recorded", 700, 6800), ("recorded", 1800, 12600), ("recorded", 3300, 3400), ("uniform", 1200, 8800),
    # mid rows (16K-32K), decode 1-16
    ("recorded", 1, 22500), ("recorded", 6, 29500), ("recorded", 14, 17600), ("gaussian", 3, 26800),
    # mid rows, decode 24-256
    ("recorded", 28, 20700), ("recorded", 110, 27300), ("recorded", 240, 18900), ("uniform", 70, 31200),
    # mid rows, prefill
    ("recorded", 600, 23300), ("recorded", 1400, 19500), ("recorded", 2600, 28200), ("gaussian", 3800, 17300),
    # long rows (> 32K), decode 1-16
    ("recorded", 2, 64500), ("recorded", 5, 205000), ("recorded", 11, 530000), ("uniform", 8, 131000),
    # long rows, decode 24-256
    ("recorded", 36, 88500), ("recorded", 90, 47300), ("recorded", 180, 162000), ("gaussian", 60, 360000),
    # long rows, prefill
    ("recorded", 560, 120500), ("recorded", 1300, 42700), ("recorded", 2300, 60500), ("uniform", 900, 36900),
]


def frame() -> pd.DataFrame:
    """Both sets' SGLang rows (TE.frame's pass statistics; FlashInfer's twin rows dropped), `set` transfer / new."""
    parts = []
    for name, shapes in (("transfer", TE.GRID5), ("new", NEW)):
        t = TE.frame(shapes)
        t = t[t["kernel"] == KERNEL].copy()
        t["set"] = name
        parts.append(t)
    return pd.concat(parts, ignore_index=True)


def predict(hw: HardwareSpec, out: str | Path | None = None) -> pd.DataFrame:
    """Every row priced by the product as committed on `hw` (`pred_us`: TE.predict_us under the device's own
    efficiency, the terms the product prices SGLang's top-k with), its regime (TE.regime5) and the pass statistics;
    written to `out` if given."""
    t = frame()
    t["pred_us"] = TE.predict_us(t, hw, hw.efficiency)
    t["regime"] = TE.regime5(t["rows"], t["n"])
    res = t[F.SHAPE_KEYS + ["set", "regime", "sweeps", "gathers", "gather_iters", "rounds", "pred_us"]]
    if out is not None:
        res.to_csv(out, index=False, float_format="%.4f")
    return res


def measured(data_dir: Path = F.DATA_DIR, replicate: bool = False) -> pd.DataFrame | None:
    """The committed prediction joined to the H200's measurement (None before it exists); `h100_us` = the H100's own
    measurement of the transfer rows (grid 5's CSV), `wrong` = the selection check failed (time kept)."""
    out = TE.measured_latest(PREDICTION, REPLICATE_GLOB if replicate else MEASURED_GLOB, data_dir)
    if out is None:
        return None
    h1 = pd.read_csv(Path(data_dir) / TE.GRID5_MEASURED)
    h1 = h1[h1["kernel"] == KERNEL][F.SHAPE_KEYS + ["median_us"]]
    return out.merge(h1.rename(columns={"median_us": "h100_us"}), on=F.SHAPE_KEYS, how="left")


def regime_sets() -> dict:
    """{set: the regimes its rows fall in}, for the predictor's check that every new regime holds four rows."""
    t = frame()
    reg = TE.regime5(t["rows"], t["n"])
    return {s: pd.Series(reg[(t["set"] == s).to_numpy()]).value_counts().to_dict() for s in ("transfer", "new")}


def wave_count(rows, sms: float = 132.0) -> np.ndarray:
    """One 1024-thread CTA a row, one per SM (128 KiB of shared memory): the launch's waves."""
    return np.ceil(np.asarray(rows, float) / sms)


#: the H200's own fit rows for SGLang's terms: the shapes fit_production_topk_gemm.FIT_TOPK names on the H100 (gaussian
#: rows, 1 and 128 rows, measure_production_kernels.TOPK_DECODE's lengths), re-measured on the H200 so that its
#: iter_us / iter_l2_us / phase_us can be fitted there as they were on the H100 (fit_production_topk_gemm.fit_topk)
FIT_SHAPES = [("gaussian", r, n) for r in (1, 128) for n in (4096, 16384, 65536, 262144, 1048576)]
FIT_PREDICTION = "topk_sglang_h200_fit_prediction_2026-11-28.csv"
FIT_GLOB = "topk_engines_nvidia-h200_*_sgl_h200fit.csv"


def fit_frame(hw: HardwareSpec) -> pd.DataFrame:
    """FIT_SHAPES as a shape list for the measurement (kernel sgl_topk), priced by the product as committed on `hw`
    (`pred_us`, for reference: these rows are fit rows, never judged)."""
    t = TE.frame(FIT_SHAPES)
    t = t[t["kernel"] == KERNEL].reset_index(drop=True)
    t["pred_us"] = TE.predict_us(t, hw, hw.efficiency)
    t["regime"] = "fit rows (FIT_TOPK's shapes)"
    return t[F.SHAPE_KEYS + ["regime", "pred_us"]]


def fit_h200(data_dir: Path = F.DATA_DIR) -> dict | None:
    """SGLang's terms fitted on the H200's own FIT_SHAPES measurement (fit_production_topk_gemm.fit_topk, the H100's
    procedure: iter_us, iter_l2_us, phase_us by least squares on log time, fixed_us pinned to the H200's own topk_cta);
    None before the rows are measured."""
    from hwmodels.spec import load_hardware

    files = sorted(Path(data_dir).glob(FIT_GLOB))
    if not files:
        return None
    m = pd.read_csv(files[-1])
    m = m[m["kernel"] == KERNEL]
    t = F.topk_frame(m)
    return F.fit_topk(t, load_hardware("H200"))


def candidate_eff(hw: HardwareSpec):
    """The H200 efficiency with SGLang's own terms (fit_h200 on FIT_SHAPES: iter_us, iter_l2_us, phase_us; fixed_us the
    H200's own topk_cta; fit_production_topk_gemm.topk_eff_with) in place of the H100-SXM's borrowed ones."""
    x = fit_h200()
    if x is None:
        raise ValueError("the H200's SGLang fit rows are not measured yet")
    return F.topk_eff_with(hw, (x["iter_us"], x["iter_l2_us"], x["phase_us"]))


#: the second H200 SGLang grid: 36 new shapes, 4 in each of grid 5's nine regimes, priced before its call by main (the
#: H100-SXM's borrowed terms, as shipped) and the candidate (candidate_eff: the H200's own terms from FIT_SHAPES);
#: declared before the call: the candidate ships if it meets more regimes, a tie by the lower pooled median |error|;
#: the grid holds SGLang top-k's H200 STANDING
NEW2 = [
    ("recorded", 1, 3300), ("recorded", 4, 9100), ("gaussian", 10, 14200), ("uniform", 15, 6300),
    ("recorded", 24, 12800), ("recorded", 75, 3700), ("recorded", 170, 7100), ("uniform", 250, 15200),
    ("recorded", 520, 10300), ("recorded", 1100, 4400), ("recorded", 2800, 15400), ("gaussian", 1600, 7700),
    ("recorded", 2, 31700), ("recorded", 9, 19800), ("recorded", 16, 25600), ("uniform", 4, 17800),
    ("recorded", 33, 24800), ("recorded", 150, 30100), ("recorded", 205, 22700), ("gaussian", 120, 19200),
    ("recorded", 800, 26100), ("recorded", 2000, 17700), ("recorded", 3500, 31000), ("uniform", 1000, 22900),
    ("recorded", 1, 380000), ("recorded", 3, 96000), ("recorded", 12, 255000), ("gaussian", 7, 700000),
    ("recorded", 64, 330000), ("recorded", 140, 73000), ("recorded", 256, 118000), ("uniform", 45, 560000),
    ("recorded", 640, 83000), ("recorded", 1700, 50500), ("recorded", 2200, 140000), ("gaussian", 1250, 39800),
]
PREDICTION2 = "topk_sglang_h200_grid2_prediction_2026-11-28.csv"


def predict2(hw: HardwareSpec) -> pd.DataFrame:
    """NEW2 priced by main (`pred_main_us`: hw as shipped) and the candidate (`pred_us`: candidate_eff)."""
    t = TE.frame(NEW2)
    t = t[t["kernel"] == KERNEL].reset_index(drop=True)
    t["pred_main_us"] = TE.predict_us(t, hw, hw.efficiency)
    t["pred_us"] = TE.predict_us(t, hw, candidate_eff(hw))
    t["regime"] = TE.regime5(t["rows"], t["n"])
    return t[F.SHAPE_KEYS + ["regime", "sweeps", "gathers", "gather_iters", "rounds", "pred_main_us", "pred_us"]]


def measured2(data_dir: Path = F.DATA_DIR, replicate: bool = False) -> pd.DataFrame | None:
    """The second grid's committed prediction joined to its H200 measurement (None before it exists)."""
    return TE.measured_latest(PREDICTION2, f"topk_engines_nvidia-h200_*_sgl_h200g2{'_replicate' if replicate else ''}.csv",
                              data_dir)


def write_h200(out_dir: Path | None = None) -> tuple[Path, dict]:
    """SGLang top-k's H200 terms (fit_h200) merged into out_dir/H200.yaml (default: the shipped fitted files), as
    fit_production_topk_gemm.write_topk writes the H100's: iter_us, iter_l2_us, one barrier phase as sync_us, fixed_us
    from the H200's own topk_cta, one resident CTA, iter_l1_us derived; the kind topk_sglang only (TensorRT-LLM's
    top-k keeps the H100-SXM's borrowed terms, judged on its own H200 grids), and the fit's record under
    production_kernels.topk_sglang. Naming the kind in H200.yaml ends its borrowing (hwmodels.spec
    unmeasured_kinds_from)."""
    from hwmodels.spec import fitted_dirs, load_hardware
    from hwmodels.yamlio import load_yaml
    from simulator.calibration import checks as C
    from simulator.kernels import topk_production as P

    tk = fit_h200()
    if tk is None:
        raise ValueError("the H200's SGLang fit rows are not measured yet")
    hw = load_hardware("H200")
    tk["iter_l1_us"] = round(P.sglang_iter_l1_us(tk["iter_l2_us"], (hw.efficiency.l2_latency_s or 0.0) * 1e6), 4)
    tk["iter_l1_from"] = (f"iter_l2_us - latency.l2_us + {P.SGL_L1_LATENCY_US} us (an L1 hit, ASSUMPTION: "
                          f"topk_production.SGL_L1_LATENCY_US)")
    tk["data"] = sorted(Path(F.DATA_DIR).glob(FIT_GLOB))[-1].name
    tk["judged"] = (f"the second H200 SGLang grid ({PREDICTION2}): 9 of 9 regimes, 4.9 / 10.7 % against the H100-SXM's "
                    "borrowed terms' 9 of 9, 5.0 / 12.2 % (shipped by the declared tie rule)")
    ks = "topk_sglang"
    p = Path(out_dir or fitted_dirs()[0]) / "H200.yaml"
    old = (load_yaml(p, "fitted efficiency file") or {}).get("production_kernels", {}) if p.exists() else {}
    own = {"cta_slots": {ks: P.CTA_SLOTS["sglang"]}, "iter_us": {ks: tk["iter_us"]},
           "iter_l2_us": {ks: tk["iter_l2_us"]}, "fixed_us": {ks: tk["fixed_us"]}, "cta_fixed_us": {ks: 0.0},
           "sync_us": {ks: tk["phase_us"]}, "iter_l1_us": {ks: tk["iter_l1_us"]},
           "production_kernels": dict(old) | {ks: tk}}
    doc = C.merge_into(p, own, {"cta_slots": (ks,), "iter_us": (ks,), "iter_l2_us": (ks,), "fixed_us": (ks,),
                                "cta_fixed_us": (ks,), "sync_us": (ks,), "iter_l1_us": (ks,),
                                "production_kernels": None})
    return C.write_checked(p, doc, ""), tk


#: SGLang's top-k over whole causal prompts on the H200 (kernel sgl_topk_tri: its kernel with row i's length i + 1,
#: as its DSA prefill passes one sequence's chunk), priced before the call as the product prices DSA prefill top-k
#: (simulator/strategies/dsa.py prefill_topk_rows, PREFILL_TOPK_ROWS "causal": the P - k rows of more than k keys at
#: their mean length; rows of <= k keys are the kernel's early-return copy), on the H200's own SGLang terms. No
#: candidate; declared before the call: the grid is SGLang's causal-prompt H200 STANDING (the rule's only judgement
#: outside TensorRT-LLM's prefill entry). P <= 32,768: one indexer chunk
CAUSAL = [("recorded", p, p) for p in (3584, 5632, 7168, 9216, 11264, 15360, 22528, 30720)] + [("gaussian", 13312, 13312)]
CAUSAL_KERNEL = "sgl_topk_tri"
CAUSAL_PREDICTION = "topk_sglang_h200_causal_prediction_2026-11-28.csv"


def causal_regime(n) -> np.ndarray:
    """The causal grid's regimes (declared before the call): prompts of <= 8K / > 8K tokens."""
    return np.where(np.asarray(n, float) <= 8192, "causal prompt, P <= 8K", "causal prompt, P > 8K")


def predict_causal(hw: HardwareSpec) -> pd.DataFrame:
    """CAUSAL priced as the product prices DSA prefill top-k with SGLang's kernel on `hw` (`pred_us`), with the
    (rows, n) the rule prices (`priced_rows`, `priced_n`)."""
    from simulator.strategies.dsa import prefill_topk_rows

    out = []
    for d, r, n in CAUSAL:
        rows, length = prefill_topk_rows(1.0, np.array([float(n)]), 2048.0, "causal")
        t = TE.frame([(d, int(rows[0]), int(round(length[0])))])
        t = t[t["kernel"] == KERNEL].reset_index(drop=True)
        out.append({"family": "topk", "kernel": CAUSAL_KERNEL, "dist": d, "rows": r, "n": n, "k": 2048,
                    "priced_rows": int(rows[0]), "priced_n": int(round(length[0])),
                    "pred_us": float(TE.predict_us(t, hw, hw.efficiency)[0])})
    t = pd.DataFrame(out)
    t["regime"] = causal_regime(t["n"])
    return t[F.SHAPE_KEYS + ["regime", "priced_rows", "priced_n", "pred_us"]]


def measured_causal(data_dir: Path = F.DATA_DIR, replicate: bool = False) -> pd.DataFrame | None:
    """The causal grid's committed prediction joined to its H200 measurement (None before it exists)."""
    return TE.measured_latest(CAUSAL_PREDICTION,
                              f"topk_engines_nvidia-h200_*_sgl_causal{'_replicate' if replicate else ''}.csv", data_dir)
