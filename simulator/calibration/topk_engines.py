"""A second production top-k engine (FlashInfer 0.6.4's top-k, kind topk_flashinfer) priced from its source before it
was measured, and the fourth blind set of SGLang's top-k, both on one grid of shapes measured in one device call
(lab/kernels/measure_topk_engines.py).

1. first look  every GRID4 shape priced for FlashInfer by simulator/kernels/topk_production.py (its dispatch, the
               filtered kernel's passes, the multi-CTA radix launch) with terms it does not have yet BORROWED from the
               fitted SGLang kind (iter, iter_l2, iter_l1, the barrier phase, fixed time: `first_look_eff`), and for
               SGLang by the model at main 5b35f90 (unchanged here); committed before the measurement
               (GRID4_PREDICTION).
2. fit         FlashInfer's own (iter_us, iter_l2_us, phase_us) by least squares on log time over FI_FIT only (named
               before the measurement: gaussian scores, rows 1 and 128, row lengths 8K / 32K / 128K / 512K: both of
               its kernels), the L1 iteration derived as SGLang's is (topk_production.sglang_iter_l1_us).
3. held out    every other FlashInfer row, by regime; every SGLang row of the grid is blind (none in a committed CSV
               except the FI_FIT shapes, which are left out of the SGLang table).
"""
from __future__ import annotations

from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from hwmodels.roofline import price
from hwmodels.spec import Efficiency, HardwareSpec
from simulator.calibration import fit_production_topk_gemm as F
from simulator.kernels import topk_flashinfer as FK
from simulator.kernels import topk_production as P
from simulator.kernels import topk_trtllm as TK

KIND = "topk_flashinfer"
CSV_KERNEL = {"sglang": "sgl_topk", "flashinfer": "fi_topk", "flashinfer_pt": "fi_topk_pt", "trtllm": "trt_topk",
              "trtllm_prefill": "trt_topk_pf", "trtllm_op": "trt_topk_op"}
#: FlashInfer's fit rows, named before its measurement
FI_FIT = {"dist": ("gaussian",), "rows": (1, 128), "n": (8192, 32768, 131072, 524288)}
#: the grid (score distribution, rows, row length): row lengths in none of the committed top-k CSVs (the FI_FIT shapes
#: aside); short rows of 2.7K-14.8K at decode rows 2-132 (the regime the third SGLang set missed: 32-132) and prefill,
#: 16K-32K rows (FlashInfer's filtered kernel up to its 32K switch), long rows 72K-900K at decode (FlashInfer's
#: multi-CTA radix kernel where rows <= n / 16384) and one long prefill launch; two odd lengths (FlashInfer's scalar
#: loads, VEC_SIZE = gcd(n, 4) = 1)
GRID4_SHORT_DECODE = ([("recorded", r, n) for r in (40, 72, 100, 132) for n in (2700, 5600, 9000, 13500)]
                      + [(d, r, n) for d in ("gaussian", "uniform") for r in (48, 120) for n in (3400, 8600, 12800)]
                      + [("recorded", r, n) for r in (2, 12) for n in (4800, 10500)]
                      + [(d, 6, n) for d in ("gaussian", "uniform") for n in (5800, 14800)]
                      + [("recorded", 16, 9001)])
GRID4_SHORT_PREFILL = ([("recorded", r, n) for r in (768, 2560) for n in (3900, 10400)]
                       + [(d, 1536, 7400) for d in ("gaussian", "uniform")])
GRID4_MID = [("recorded", r, n) for r in (1, 24, 96) for n in (20000, 28000)]
GRID4_LONG = ([("recorded", r, n) for r in (1, 2, 6, 12, 40) for n in (72000, 250000, 640000)]
              + [(d, r, n) for d in ("gaussian", "uniform") for r in (3, 20) for n in (180000, 900000)]
              + [("recorded", 2, 250001), ("recorded", 700, 70000)])
GRID4_FIT = [(d, r, n) for d in FI_FIT["dist"] for r in FI_FIT["rows"] for n in FI_FIT["n"]]
GRID4 = GRID4_SHORT_DECODE + GRID4_SHORT_PREFILL + GRID4_MID + GRID4_LONG + GRID4_FIT
GRID4_PREDICTION = "topk_engines_grid4_prediction_2026-11-27.csv"
GRID4_MEASURED = "topk_engines_nvidia-h100-80gb-hbm3_2026-11-27_grid4.csv"


def first_look_eff(hw: HardwareSpec, eff: Efficiency | None = None) -> Efficiency:
    """The device's efficiency with topk_flashinfer's terms borrowed from topk_sglang (ASSUMPTION for the first look:
    the same GPU's dependent-load round, L2 / L1 round, barrier phase and fixed time; FlashInfer's own structure is in
    topk_production)."""
    e = eff or hw.efficiency
    ks = "topk_sglang"

    def borrow(d):
        return {**d, KIND: d[ks]} if ks in d else dict(d)
    return replace(e, cta_slots={**e.cta_slots, KIND: P.CTA_SLOTS["flashinfer"]}, iter_s=borrow(e.iter_s),
                   iter_l2_s=borrow(e.iter_l2_s), iter_l1_s=borrow(e.iter_l1_s), fixed_s=borrow(e.fixed_s),
                   cta_fixed_s={**e.cta_fixed_s, KIND: 0.0}, sync_s=borrow(e.sync_s))


def eff_with(hw: HardwareSpec, x) -> Efficiency:
    """topk_flashinfer's terms x = (iter_us, iter_l2_us, phase_us); L1 iteration derived (sglang_iter_l1_us), fixed
    time SGLang's pinned one (fit_production_topk_gemm.FIXED_FROM)."""
    e = first_look_eff(hw)
    it, it_l2, ph = x
    l1 = P.sglang_iter_l1_us(it_l2, (e.l2_latency_s or 0.0) * 1e6)
    return replace(e, iter_s={**e.iter_s, KIND: it * 1e-6}, iter_l2_s={**e.iter_l2_s, KIND: it_l2 * 1e-6},
                   iter_l1_s={**e.iter_l1_s, KIND: l1 * 1e-6}, sync_s={**e.sync_s, KIND: ph * 1e-6},
                   fixed_s={**e.fixed_s, KIND: F.pinned_fixed_us(hw) * 1e-6})


class as_fitted:
    """Context manager: price as the terms fitted before grid 15 were fitted (topk_trtllm.PAIR_SHARES None: the
    assumed REG_RESIDENT share rule; hwmodels/roofline.py CHAIN_QUEUED_P_SHARED None: the one 1.5-knee; NARROW_REG
    off: eight narrow 256-thread CTAs a wave, the rule before grid 16; ONCHIP_JOB off: every job round on the load
    chain, the rule before the on-chip grid), restored on exit; every fit of those terms runs
    inside it, so shipping grid 15's and grid 16's rules refits nothing (no fit row is a narrow launch)."""

    def __enter__(self):
        import hwmodels.roofline as R

        self.old = (TK.PAIR_SHARES, R.CHAIN_QUEUED_P_SHARED, TK.NARROW_REG, TK.NARROW_PERCTA, TK.ONCHIP_JOB)
        TK.PAIR_SHARES, R.CHAIN_QUEUED_P_SHARED, TK.NARROW_REG, TK.NARROW_PERCTA, TK.ONCHIP_JOB = (None, None, False,
                                                                                                 None, False)
        return self

    def __exit__(self, *exc):
        import hwmodels.roofline as R

        TK.PAIR_SHARES, R.CHAIN_QUEUED_P_SHARED, TK.NARROW_REG, TK.NARROW_PERCTA, TK.ONCHIP_JOB = self.old
        return False


class trt_rules:
    """Context manager: price TensorRT-LLM's top-k under the given rules, each left as shipped where not given:
    `onchip_job` (topk_trtllm.ONCHIP_JOB), `pair_shares` (values merged into topk_trtllm.PAIR_SHARES_L2),
    `queue_p_shared` (hwmodels/roofline.py CHAIN_QUEUED_P_SHARED and topk_trtllm.QUEUE_P_SHARED), `narrow`
    (topk_trtllm.NARROW_PERCTA); everything restored on exit."""

    _KEEP = object()

    def __init__(self, onchip_job=None, pair_shares=None, queue_p_shared=_KEEP, narrow=None):
        self.onchip_job, self.pair_shares, self.queue_p, self.narrow = onchip_job, pair_shares, queue_p_shared, narrow

    def __enter__(self):
        import hwmodels.roofline as R

        self.old = (TK.ONCHIP_JOB, {k: dict(v) for k, v in TK.PAIR_SHARES_L2.items()}, R.CHAIN_QUEUED_P_SHARED,
                    TK.QUEUE_P_SHARED, TK.NARROW_PERCTA)
        if self.onchip_job is not None:
            TK.ONCHIP_JOB = self.onchip_job
        for k, v in (self.pair_shares or {}).items():
            TK.PAIR_SHARES_L2[k].update(v)
        if self.queue_p is not trt_rules._KEEP:
            R.CHAIN_QUEUED_P_SHARED = TK.QUEUE_P_SHARED = self.queue_p
        if self.narrow is not None:
            TK.NARROW_PERCTA = self.narrow
        return self

    def __exit__(self, *exc):
        import hwmodels.roofline as R

        TK.ONCHIP_JOB, shares, R.CHAIN_QUEUED_P_SHARED, TK.QUEUE_P_SHARED, TK.NARROW_PERCTA = self.old
        for k, v in shares.items():
            TK.PAIR_SHARES_L2[k].clear()
            TK.PAIR_SHARES_L2[k].update(v)
        return False


def before_onchip() -> trt_rules:
    """TensorRT-LLM's top-k as shipped before the on-chip grid (2026-11-29: every job round on the load chain,
    ONCHIP_JOB off; the pair shares and L2 term of grids 14-15, PAIR_SHARES_L2_BEFORE_ONCHIP; the sharper shared-SM
    knee 2.0; grid 22's narrow terms), as a trt_rules context: the committed prices of the grids judged before it are
    reproduced inside it."""
    return trt_rules(False, TK.PAIR_SHARES_L2_BEFORE_ONCHIP, TK.QUEUE_P_SHARED_CANDIDATE,
                     TK.NARROW_PERCTA_RANKW_CANDIDATE)


def _fitted_before_grid15(fit):
    """Run `fit` under as_fitted (the rules it was fitted with)."""
    import functools

    @functools.wraps(fit)
    def wrapped(*a, **k):
        with as_fitted():
            return fit(*a, **k)
    return wrapped


def frame(shapes) -> pd.DataFrame:
    """One row per (kernel, shape) with the pass statistics (fit_production_topk_gemm.topk_frame: FlashInfer's
    filtered kernel makes SGLang's passes, so both kernels share them) and FlashInfer's dispatch (`fi_path`)."""
    df = pd.DataFrame([{"family": "topk", "kernel": "sgl_topk", "dist": d, "rows": r, "n": n, "k": 2048}
                       for d, r, n in shapes])
    t = F.topk_frame(df)
    fi = t.copy()
    fi["kernel"] = CSV_KERNEL["flashinfer"]
    out = pd.concat([t, fi], ignore_index=True)
    out["fi_path"] = np.where(FK.filtered(out["rows"], out["n"]), "filtered", "radix")
    return out


def predict_us(t: pd.DataFrame, hw: HardwareSpec, eff: Efficiency) -> np.ndarray:
    """Each row's time (us, in-graph) by its kernel's model under `eff`."""
    from simulator.ops import OpBuilder

    out = np.full(len(t), np.nan)
    for kern, csv in CSV_KERNEL.items():
        m = (t["kernel"] == csv).to_numpy()
        if not m.any():
            continue
        s = t[m]
        b = OpBuilder(int(m.sum()))
        args = (s["rows"].to_numpy(float), s["n"].to_numpy(float), 2048.0, s["sweeps"].to_numpy(float),
                s["gathers"].to_numpy(float))
        kw = {"gather_iters": s["gather_iters"].to_numpy(float), "rounds": s["rounds"].to_numpy(float)}
        if kern in ("flashinfer", "flashinfer_pt"):
            FK.add_ops(b, *args, count=1.0, where=None, sms=float(hw.units), page_table=kern == "flashinfer_pt", **kw)
        elif kern == "trtllm":
            TK.add_ops(b, *args, count=1.0, where=None)
        else:
            P.add_topk_ops(b, kern, *args, **kw)
        ops = b.build()
        sec = price(ops, hw.with_efficiency(eff), "graph") - hw.launch_graph_s
        out[m] = np.bincount(ops.setting, weights=sec, minlength=int(m.sum())) * 1e6
    return out


def predict_grid4(hw: HardwareSpec, out: str | Path | None = None) -> pd.DataFrame:
    """GRID4 priced: SGLang by the device's committed terms, FlashInfer by its first look (`first_look_eff`)."""
    t = frame(GRID4)
    t["pred_us"] = predict_us(t, hw, first_look_eff(hw))
    res = t[F.SHAPE_KEYS + ["fi_path", "sweeps", "gathers", "gather_iters", "rounds", "pred_us"]]
    if out is not None:
        res.to_csv(out, index=False, float_format="%.4f")
    return res


def regime(rows, n) -> np.ndarray:
    """GRID4's regimes: row length (short <= 16,384, mid 16K-32K, long) x rows (decode 1-16, 32-132, prefill)."""
    rows, n = np.asarray(rows), np.asarray(n)
    ph = np.where(rows <= 16, "decode 1-16", np.where(rows <= 132, "decode 20-132", "prefill 700-2560"))
    ln = np.where(n <= 16384, "short rows", np.where(n <= 32768, "mid rows 20K-28K", "long rows"))
    return np.array([f"{a}, {b}" for a, b in zip(ln, ph)])


def fit_mask(t: pd.DataFrame) -> np.ndarray:
    return (t["dist"].isin(FI_FIT["dist"]) & t["rows"].isin(FI_FIT["rows"]) & t["n"].isin(FI_FIT["n"])).to_numpy()


def fit_flashinfer(t: pd.DataFrame, hw: HardwareSpec) -> dict:
    """(iter_us, iter_l2_us, phase_us) of topk_flashinfer by least squares on log time over the FI_FIT rows of the
    measured FlashInfer frame `t` (column median_us)."""
    from scipy.optimize import least_squares

    t = t[(t["kernel"] == CSV_KERNEL["flashinfer"]).to_numpy()]
    m = fit_mask(t)
    sub, y = t[m], np.log(t["median_us"].to_numpy(float)[m])
    r = least_squares(lambda x: np.log(np.maximum(predict_us(sub, hw, eff_with(hw, x)), 1e-3)) - y,
                      [0.35, 0.15, 0.5], bounds=([0.01, 0.01, 0.0], [5.0, 5.0, 50.0]))
    x = [round(float(v), 4) for v in r.x]
    return {"iter_us": x[0], "iter_l2_us": x[1], "phase_us": x[2], "fixed_us": round(F.pinned_fixed_us(hw), 4),
            "fit_rows": int(m.sum()), "rms_log_error": round(float(np.sqrt(np.mean(r.fun ** 2))), 4)}


def measured(pred_csv: str | Path | None = None, meas_csv: str | Path | None = None) -> pd.DataFrame:
    """The committed grid4 prediction joined to its measurement (one row per kernel x shape; `regime`, `fit` added)."""
    p = pd.read_csv(pred_csv or F.DATA_DIR / GRID4_PREDICTION)
    m = pd.read_csv(meas_csv or F.DATA_DIR / GRID4_MEASURED)
    out = p.merge(m[F.SHAPE_KEYS + ["median_us", "note"]], on=F.SHAPE_KEYS, how="inner")
    out["regime"] = regime(out["rows"], out["n"])
    out["fit"] = (out["kernel"] == CSV_KERNEL["flashinfer"]).to_numpy() & fit_mask(out)
    return out


def _errors(pred, meas, reg, tag: str) -> pd.DataFrame:
    e = 100.0 * (np.asarray(pred, float) / np.asarray(meas, float) - 1.0)
    d = pd.DataFrame({"regime": np.asarray(reg), "e": e})
    g = d.groupby("regime", sort=True)["e"]
    return pd.DataFrame({"n": g.size(), f"{tag}_med": g.apply(lambda v: np.median(np.abs(v))).round(1),
                         f"{tag}_p90": g.apply(lambda v: np.percentile(np.abs(v), 90)).round(1),
                         f"{tag}_signed": g.median().round(1)}).reset_index()


def goal(tab: pd.DataFrame, tag: str) -> pd.Series:
    """met: |error| median <= 10 % and p90 <= 25 %."""
    return np.where((tab[f"{tag}_med"] <= 10.0) & (tab[f"{tag}_p90"] <= 25.0), "met", "MISSED")


def flashinfer_accuracy(hw: HardwareSpec, by_dist: bool = False) -> tuple[pd.DataFrame, dict]:
    """FlashInfer's grid4 rows per regime x its kernel (filtered / radix): the committed first look (`first`, every
    row unseen: priced before measuring) and the terms fitted on FI_FIT (`fitted`; the fit rows listed apart, the rest
    held out). Returns (table, fitted terms)."""
    m = measured()
    t = m[m["kernel"] == CSV_KERNEL["flashinfer"]].reset_index(drop=True)
    x = fit_flashinfer(t, hw)
    t["pred_fit_us"] = predict_us(t, hw, eff_with(hw, (x["iter_us"], x["iter_l2_us"], x["phase_us"])))
    part = np.where(t["fit"], "fit", "held out")
    reg = [f"top-k flashinfer ({pa}): {r}, {p}" + (f", {d}" if by_dist else "")
           for pa, r, p, d in zip(part, t["regime"], t["fi_path"], t["dist"])]
    a = _errors(t["pred_us"], t["median_us"], reg, "first")
    b = _errors(t["pred_fit_us"], t["median_us"], reg, "fitted").drop(columns="n")
    tab = a.merge(b, on="regime")
    tab["goal"] = goal(tab, "fitted")
    return tab, x


def sglang_blind4_accuracy(by_dist: bool = False) -> pd.DataFrame:
    """SGLang's grid4 rows (the fourth blind set; every shape new) per regime: the model at main 5b35f90 (`main`,
    committed before measuring)."""
    m = measured()
    s = m[m["kernel"] == CSV_KERNEL["sglang"]].reset_index(drop=True)
    reg = [f"top-k sglang: {r}" + (f", {d}" if by_dist else "") for r, d in zip(s["regime"], s["dist"])]
    tab = _errors(s["pred_main_us"], s["median_us"], reg, "main")
    tab["goal"] = goal(tab, "main")
    return tab


def values_per_round_study(hw: HardwareSpec, values=(8.0, 4.0, 2.0, 1.0)) -> pd.DataFrame:
    """topk_flashinfer.VALUES_PER_ROUND's candidates, each refitted on FI_FIT alone: the fit rows' rms log error
    (the choice's criterion) and, for the record, the held-out rows' |error| median / p90 (LOOKED-AT once printed).
    Priced as it was made, before grid 7's stream floor (topk_flashinfer.STREAM_FLOOR_SHIPPED off: at 8 or 4 values a
    round the floor would bind on float4 rows too)."""
    keep, keep_floor = FK.VALUES_PER_ROUND, FK.STREAM_FLOOR_SHIPPED
    m = measured()
    t = m[m["kernel"] == CSV_KERNEL["flashinfer"]].reset_index(drop=True)
    out = []
    try:
        FK.STREAM_FLOOR_SHIPPED = None
        for v in values:
            FK.VALUES_PER_ROUND = float(v)
            x = fit_flashinfer(t, hw)
            e = 100.0 * (predict_us(t, hw, eff_with(hw, (x["iter_us"], x["iter_l2_us"], x["phase_us"])))
                         / t["median_us"].to_numpy(float) - 1.0)
            h = np.abs(e[~t["fit"].to_numpy()])
            out.append({"values_per_round": v, "fit_rms_log": x["rms_log_error"], "iter_us": x["iter_us"],
                        "iter_l2_us": x["iter_l2_us"], "phase_us": x["phase_us"],
                        "held_med": round(float(np.median(h)), 1), "held_p90": round(float(np.percentile(h, 90)), 1)})
    finally:
        FK.VALUES_PER_ROUND, FK.STREAM_FLOOR_SHIPPED = keep, keep_floor
    return pd.DataFrame(out)


def write_flashinfer(target: str, hw: HardwareSpec, out_dir: Path, meas_csv: str | Path | None = None
                     ) -> tuple[Path, dict]:
    """Fit topk_flashinfer on grid4's FI_FIT rows (fit_flashinfer) and merge its terms into out_dir/<target>.yaml:
    only topk_flashinfer's keys change (cta_slots, iter_us, iter_l2_us, iter_l1_us, fixed_us, cta_fixed_us, sync_us
    and production_kernels.topk_flashinfer); every other term is kept."""
    from hwmodels.yamlio import load_yaml
    from simulator.calibration import checks as C

    m = measured(meas_csv=meas_csv)
    x = fit_flashinfer(m[m["kernel"] == CSV_KERNEL["flashinfer"]].reset_index(drop=True), hw)
    x["iter_l1_us"] = round(P.sglang_iter_l1_us(x["iter_l2_us"], (hw.efficiency.l2_latency_s or 0.0) * 1e6), 4)
    x["fixed_from"] = f"fixed_us.{F.FIXED_FROM}"
    x["values_per_round"] = FK.VALUES_PER_ROUND
    x["fit_shapes"] = {k: list(v) for k, v in FI_FIT.items()}
    x["source"] = (f"simulator/calibration/topk_engines.py on {GRID4_MEASURED} (lab/kernels/measure_topk_engines.py): "
                   "FlashInfer 0.6.4's top-k (radix_topk_ragged_transform, fp32, k 2048)")
    p = Path(out_dir) / f"{target}.yaml"
    old = (load_yaml(p, "fitted efficiency file") or {}).get("production_kernels", {}) if p.exists() else {}
    own = {"cta_slots": {KIND: P.CTA_SLOTS["flashinfer"]}, "iter_us": {KIND: x["iter_us"]},
           "iter_l2_us": {KIND: x["iter_l2_us"]}, "iter_l1_us": {KIND: x["iter_l1_us"]},
           "fixed_us": {KIND: x["fixed_us"]}, "cta_fixed_us": {KIND: 0.0}, "sync_us": {KIND: x["phase_us"]},
           "production_kernels": dict(old) | {KIND: x}}
    doc = C.merge_into(p, own, {k: (KIND,) for k in own if k != "production_kernels"} | {"production_kernels": None})
    before = load_yaml(p, "fitted efficiency file") if p.exists() else {}
    for key in own:   # keep each table's key order (a changed term stays on its line; a new one goes last)
        if isinstance(doc.get(key), dict) and isinstance(before.get(key), dict):
            doc[key] = {k: doc[key][k] for k in before[key] if k in doc[key]} | {
                k: v for k, v in doc[key].items() if k not in before[key]}
    return C.write_checked(p, doc, ""), x



# --- grid 5: the first blind judgement of the shipped FlashInfer model (VALUES_PER_ROUND chosen on grid4), its
# page-table transform beside the ragged one, and TensorRT-LLM's indexer top-k priced from its source (read-only) ---
#: row lengths 2.1K-1M in none of the committed top-k CSVs; decode 1-256 rows and prefill 512-4096 rows; recorded scores
#: throughout, gaussian / uniform on a subset of each regime. FlashInfer dispatches filtered (n <= 32K or rows > n / 16K)
#: or multi-CTA radix (the decode long rows at rows <= n / 16K)
GRID5_DECODE_SHORT = ([("recorded", r, n) for r in (1, 3, 8, 16) for n in (2100, 6100, 15100)]
                      + [("recorded", r, n) for r in (64, 176, 256) for n in (3350, 11100)]
                      + [(d, r, n) for d in ("gaussian", "uniform") for r, n in ((5, 7750), (200, 12100))])
GRID5_DECODE_MID = ([("recorded", r, n) for r in (4, 50, 200) for n in (18100, 30500)]
                    + [(d, 30, 25100) for d in ("gaussian", "uniform")])
GRID5_DECODE_LONG = ([("recorded", r, n) for r in (1, 4, 16, 48) for n in (101000, 421000, 999000)]
                     + [("recorded", r, n) for r in (128, 256) for n in (61000, 151000)]
                     + [(d, r, n) for d in ("gaussian", "uniform") for r, n in ((2, 301000), (24, 801000), (160, 97000))])
GRID5_PREFILL = ([("recorded", r, n) for r in (512, 2048, 4096) for n in (2600, 9550)]
                 + [("recorded", r, n) for r in (1024, 3000) for n in (24100, 70100)]
                 + [(d, r, n) for d in ("gaussian", "uniform") for r, n in ((768, 5100), (1536, 40100))])
GRID5 = GRID5_DECODE_SHORT + GRID5_DECODE_MID + GRID5_DECODE_LONG + GRID5_PREFILL
GRID5_PREDICTION = "topk_engines_grid5_prediction_2026-11-27.csv"
GRID5_MEASURED = "topk_engines_nvidia-h100-80gb-hbm3_2026-11-27_grid5.csv"


def regime5(rows, n) -> np.ndarray:
    """GRID5's regimes: decode (rows <= 256) short (<= 16,384) / mid (16K-32K) / long rows, prefill (>= 512 rows)."""
    rows, n = np.asarray(rows), np.asarray(n)
    ph = np.where(rows <= 16, "decode 1-16", np.where(rows <= 256, "decode 24-256", "prefill 512-4096"))
    ln = np.where(n <= 16384, "short rows", np.where(n <= 32768, "mid rows 18K-31K", "long rows"))
    return np.array([f"{a}, {b}" for a, b in zip(ln, ph)])


def _trtllm_frame(shapes) -> pd.DataFrame:
    """One row per shape with TensorRT-LLM's pass statistics (topk_production.trtllm_row over the rows
    fit_production_topk_gemm.sample_rows draws; one wave: the expected slowest row, more: the mean row)."""
    out, cache = [], {}
    for d, r, n in shapes:
        if (d, n) not in cache:
            cache[(d, n)] = F.sampled_pass_stats("trtllm", d, int(n), 2048)
        st = cache[(d, n)]
        one_wave = r * TK.blocks_per_row(r, n) <= P.CTA_SLOTS["trtllm"] * 132
        row = {"family": "topk", "kernel": CSV_KERNEL["trtllm"], "dist": d, "rows": r, "n": n, "k": 2048}
        for c in P.STAT_NAMES:
            row[c] = P.expected_max(st["values"][c], r) if one_wave else st[f"{c}_mean"]
        out.append(row)
    return pd.DataFrame(out)


def frame5(shapes) -> pd.DataFrame:
    """GRID5's rows: SGLang, FlashInfer ragged and page-table (SGLang's passes, frame) and TensorRT-LLM."""
    t = frame(shapes)
    pt = t[t["kernel"] == CSV_KERNEL["flashinfer"]].copy()
    pt["kernel"] = CSV_KERNEL["flashinfer_pt"]
    tr = _trtllm_frame(shapes)
    tr["fi_path"] = ""
    return pd.concat([t, pt, tr], ignore_index=True)


def predict_grid5(hw: HardwareSpec, out: str | Path | None = None) -> pd.DataFrame:
    """GRID5 priced by the committed terms of the device (the shipped model: SGLang's, FlashInfer's fitted on grid4's
    FI_FIT with VALUES_PER_ROUND = 2, TensorRT-LLM's borrowed ones) and, for FlashInfer, also by the source's
    8 values per round refitted on FI_FIT (`pred_src_us`, the first look's structure with fitted terms)."""
    t = frame5(GRID5)
    t["pred_us"] = predict_us(t, hw, hw.efficiency)
    keep = FK.VALUES_PER_ROUND
    try:
        FK.VALUES_PER_ROUND = FK.SOURCE_VALUES_PER_ROUND
        m4 = measured()
        x = fit_flashinfer(m4[m4["kernel"] == CSV_KERNEL["flashinfer"]].reset_index(drop=True), hw)
        fi = t["kernel"].isin([CSV_KERNEL["flashinfer"], CSV_KERNEL["flashinfer_pt"]]).to_numpy()
        src = np.full(len(t), np.nan)
        src[fi] = predict_us(t[fi], hw, eff_with(hw, (x["iter_us"], x["iter_l2_us"], x["phase_us"])))
        t["pred_src_us"] = src
    finally:
        FK.VALUES_PER_ROUND = keep
    res = t[F.SHAPE_KEYS + ["fi_path", "sweeps", "gathers", "gather_iters", "rounds", "pred_us", "pred_src_us"]]
    if out is not None:
        res.to_csv(out, index=False, float_format="%.4f")
    return res



def measured5(pred_csv: str | Path | None = None, meas_csv: str | Path | None = None) -> pd.DataFrame:
    """The committed grid5 prediction joined to its measurement (one row per kernel x shape; `regime`, `wrong` =
    the measurement's selection check failed, its time kept)."""
    return _measured(pred_csv or F.DATA_DIR / GRID5_PREDICTION, meas_csv or F.DATA_DIR / GRID5_MEASURED, regime5)


def _measured(pred_csv: str | Path, meas_csv: str | Path, regime_of=None) -> pd.DataFrame:
    """A committed grid prediction joined to its measurement on F.SHAPE_KEYS (inner join); `regime` from
    `regime_of(rows, n)` where given (grids 7-9 carry it in the prediction); `wrong` = the measurement's selection
    check failed, its time kept."""
    p = pd.read_csv(pred_csv)
    m = pd.read_csv(meas_csv)
    out = p.merge(m[F.SHAPE_KEYS + ["median_us", "note"]], on=F.SHAPE_KEYS, how="inner")
    if regime_of is not None:
        out["regime"] = regime_of(out["rows"], out["n"])
    out["wrong"] = out["note"].fillna("").str.contains("WRONG").to_numpy()
    return out


def measured_latest(pred_name: str, glob: str, data_dir: str | Path = F.DATA_DIR) -> pd.DataFrame | None:
    """`_measured` of the committed prediction `pred_name` against the newest measurement matching `glob` in
    `data_dir` (None before one exists): the H200 TensorRT-LLM grids' loaders."""
    files = sorted(Path(data_dir).glob(glob))
    return None if not files else _measured(Path(data_dir) / pred_name, files[-1])


def _grid_accuracy(m: pd.DataFrame, grid: int, groups, trt_cols, shipped: str, by_dist: bool) -> pd.DataFrame:
    """A blind grid's |error| table per kernel group x regime (`m`: its measuredN). `groups`: (CSV kernel names,
    label) pairs; every group is priced by `pred_main_us` (tag `main`), the "trtllm" group also by each (column, tag)
    of `trt_cols`, its goal judged on tag `shipped` (the other groups': on `main`)."""
    tabs = []
    for kerns, lab in groups:
        t = m[m["kernel"].isin(kerns)].reset_index(drop=True)
        reg = [f"top-k {lab} grid{grid}: {r}" + (f", {d}" if by_dist else "") for r, d in zip(t["regime"], t["dist"])]
        a = _errors(t["pred_main_us"], t["median_us"], reg, "main")
        if lab == "trtllm":
            for col, tag in trt_cols:
                a = a.merge(_errors(t[col], t["median_us"], reg, tag).drop(columns="n"), on="regime")
            a["goal"] = goal(a, shipped)
        else:
            a["goal"] = goal(a, "main")
        tabs.append(a)
    return pd.concat(tabs, ignore_index=True)


_TRT_SGL = (((CSV_KERNEL["trtllm"],), "trtllm"), ((CSV_KERNEL["sglang"],), "sglang"))


GRID5_LABEL = {"sgl_topk": "sglang", "fi_topk": "flashinfer ragged", "fi_topk_pt": "flashinfer page-table",
               "trt_topk": "trtllm"}


def grid5_accuracy(kernel: str, by_dist: bool = False, col: str = "pred_us", tag: str = "shipped") -> pd.DataFrame:
    """One kernel's grid5 rows (CSV name) per regime (x FlashInfer's dispatch path where it has one): |error| median /
    p90 and signed median of the committed prediction column `col`, and the goal (median <= 10 %, p90 <= 25 %)."""
    m = measured5()
    t = m[m["kernel"] == kernel].reset_index(drop=True)
    path = t["fi_path"].fillna("").astype(str) if kernel.startswith("fi_") else pd.Series([""] * len(t))
    reg = [f"top-k {GRID5_LABEL[kernel]}: {r}" + (f", {pa}" if pa else "") + (f", {d}" if by_dist else "")
           for r, pa, d in zip(t["regime"], path, t["dist"])]
    tab = _errors(t[col], t["median_us"], reg, tag)
    tab["goal"] = goal(tab, tag)
    return tab


def page_table_cost() -> pd.DataFrame:
    """FlashInfer's page-table transform against its ragged transform on each grid5 shape: measured and predicted
    extra time (us) per FlashInfer dispatch path."""
    m = measured5()
    a = m[m["kernel"] == "fi_topk"].set_index(["dist", "rows", "n"])
    b = m[m["kernel"] == "fi_topk_pt"].set_index(["dist", "rows", "n"])
    j = a[["fi_path", "median_us", "pred_us"]].join(b[["median_us", "pred_us"]], rsuffix="_pt", how="inner")
    j["meas_extra_us"] = j["median_us_pt"] - j["median_us"]
    j["pred_extra_us"] = j["pred_us_pt"] - j["pred_us"]
    j["meas_extra_pct"] = 100.0 * j["meas_extra_us"] / j["median_us"]
    g = j.groupby("fi_path")
    return pd.DataFrame({"n": g.size(), "meas_extra_us_med": g["meas_extra_us"].median().round(2),
                         "meas_extra_pct_med": g["meas_extra_pct"].median().round(1),
                         "meas_extra_us_p90": g["meas_extra_us"].quantile(0.9).round(2),
                         "pred_extra_us_med": g["pred_extra_us"].median().round(2)}).reset_index()


if __name__ == "__main__":
    import argparse

    from hwmodels.spec import fitted_dirs, load_hardware

    ap = argparse.ArgumentParser(description="FlashInfer's top-k fit on grid4 and both engines' grid4 accuracy")
    ap.add_argument("--write", action="store_true", help="merge topk_flashinfer's fitted terms into the H100-SXM file")
    a = ap.parse_args()
    hw = load_hardware("H100-SXM")
    if a.write:
        print(write_flashinfer("H100-SXM", hw, fitted_dirs()[0]))
    pd.set_option("display.width", 250)
    print(values_per_round_study(hw).to_string(index=False))
    print(flashinfer_accuracy(hw)[0].to_string(index=False))
    print(sglang_blind4_accuracy().to_string(index=False))


# --- TensorRT-LLM's on-chip phases (topk_trtllm job model: block scans, final sort, block widths), fitted on TRT_FIT
# of grid 5 (named before fitting; grid 5's other TensorRT-LLM rows are LOOKED-AT: their first-look errors were seen),
# judged blind on GRID6 ---
#: grid 5's TensorRT-LLM fit rows: single-CTA decode, 1-16 rows, recorded scores at three lengths (63 / ~600 / ~800
#: staged items: the rank count and the radix sort) and gaussian / uniform at one (~40 / ~115 staged items)
TRT_FIT = (("recorded", 1, 2100), ("recorded", 1, 6100), ("recorded", 1, 15100), ("recorded", 16, 6100),
           ("gaussian", 5, 7750), ("uniform", 5, 7750))
TRT_JOB_START = {"scan": 2.0, "radix": 10.0, "rank": 0.02}


def trtllm_job_frame(shapes) -> pd.DataFrame:
    """_trtllm_frame plus each shape's on-chip phases per sampled row (topk_trtllm.launch_job_stats over the same
    sampled rows, `job`: a list of per-row dicts; priced one wave as the expected slowest row, more as the mean row:
    `one_wave`)."""
    t = _trtllm_frame(shapes)
    cache = {}
    jobs, one = [], []
    for d, r, n in shapes:
        if (d, r, n) not in cache:
            xs = F.sample_rows(d, n, F.sample_count(n))
            cache[(d, r, n)] = [TK.launch_job_stats(x, r) for x in xs]
        jobs.append(cache[(d, r, n)])
        one.append(bool(r * TK.blocks_per_row(r, n) * TK.block_threads(r, n) / TK.THREADS
                        <= P.CTA_SLOTS["trtllm"] * 132))
    t["job"], t["one_wave"] = jobs, one
    t["threads"] = TK.block_threads(t["rows"], t["n"])
    return t


def job_extra(t: pd.DataFrame, terms: dict) -> np.ndarray:
    """Each row's extra loop rounds (topk_trtllm.job_iters per sampled row; expected slowest of `rows` in one wave, else
    the mean)."""
    out = []
    for js, r, one in zip(t["job"], t["rows"], t["one_wave"]):
        v = [float(TK.job_iters(s, terms)) for s in js]
        out.append(P.expected_max(v, r) if one else float(np.mean(v)))
    return np.array(out)


def predict_trtllm_job(t: pd.DataFrame, hw: HardwareSpec, terms: dict) -> np.ndarray:
    """Each TensorRT-LLM row's time (us, in-graph) by the job model under the device's terms and `terms`."""
    from simulator.ops import OpBuilder

    b = OpBuilder(len(t))
    TK.add_job_ops(b, t["rows"].to_numpy(float), t["n"].to_numpy(float), 2048.0, t["sweeps"].to_numpy(float),
                   job_extra(t, terms))
    ops = b.build()
    sec = price(ops, hw, "graph") - hw.launch_graph_s
    return np.bincount(ops.setting, weights=sec, minlength=len(t)) * 1e6


def trt_fit_mask(t: pd.DataFrame) -> np.ndarray:
    keys = set(TRT_FIT)
    return np.array([(d, int(r), int(n)) in keys for d, r, n in zip(t["dist"], t["rows"], t["n"])])


@_fitted_before_grid15
def fit_trtllm_job(hw: HardwareSpec) -> dict:
    """(scan, radix, rank) of the job model by least squares on log time over grid 5's TRT_FIT rows only."""
    from scipy.optimize import least_squares

    m = measured5()
    m = m[(m["kernel"] == CSV_KERNEL["trtllm"]).to_numpy()].reset_index(drop=True)
    sub = m[trt_fit_mask(m)].reset_index(drop=True)
    j = trtllm_job_frame(list(zip(sub["dist"], sub["rows"].astype(int), sub["n"].astype(int))))
    y = np.log(sub["median_us"].to_numpy(float))
    names = ("scan", "radix", "rank")
    r = least_squares(lambda x: np.log(np.maximum(predict_trtllm_job(j, hw, dict(zip(names, x))), 1e-3)) - y,
                      [TRT_JOB_START[c] for c in names], bounds=([0.0, 0.0, 0.0], [50.0, 200.0, 5.0]))
    x = {c: round(float(v), 4) for c, v in zip(names, r.x)}
    return x | {"fit_rows": len(sub), "rms_log_error": round(float(np.sqrt(np.mean(r.fun ** 2))), 4),
                "iter_us": round(hw.efficiency.iter_s.get("topk_trtllm", 0.0) * 1e6, 4)}


#: grid 6: TensorRT-LLM decode rows (1-240 rows, 3.1K-720K columns: single CTA, split work at 512 / 1024 threads),
#: lengths and row counts in no committed top-k CSV; SGLang's rows of the same shapes are its controls
GRID6 = ([("recorded", r, n) for r, n in ((2, 4300), (2, 9800), (6, 3100), (6, 12700), (12, 5300), (12, 8400))]
         + [(d, r, n) for d in ("gaussian", "uniform") for r, n in ((3, 4700), (10, 13300))]
         + [("recorded", r, n) for r, n in ((32, 6700), (96, 4100), (160, 9300), (240, 14100))]
         + [(d, 120, 6700) for d in ("gaussian", "uniform")]
         + [("recorded", r, n) for r, n in ((10, 22300), (40, 27700), (150, 19700))] + [("gaussian", 80, 29300)]
         + [("recorded", r, n) for r, n in ((1, 160000), (2, 560000), (8, 88000), (8, 720000), (30, 260000),
                                            (100, 117000), (192, 80000))]
         + [(d, 6, 380000) for d in ("gaussian", "uniform")] + [("gaussian", 64, 247000)])
GRID6_PREDICTION = "topk_engines_grid6_prediction_2026-11-27.csv"
GRID6_MEASURED = "topk_engines_nvidia-h100-80gb-hbm3_2026-11-27_grid6.csv"


def regime6(rows, n) -> np.ndarray:
    """GRID6's regimes: short (<= 16,384) / mid (16K-32K) / long rows x decode 1-16 / 24-256 rows."""
    rows, n = np.asarray(rows), np.asarray(n)
    ph = np.where(rows <= 16, "decode 1-16", "decode 30-240")
    ln = np.where(n <= 16384, "short rows", np.where(n <= 32768, "mid rows 19K-30K", "long rows"))
    return np.array([f"{a}, {b}" for a, b in zip(ln, ph)])


def predict_grid6(hw: HardwareSpec, out: str | Path | None = None) -> tuple[pd.DataFrame, dict]:
    """GRID6 priced before measuring: SGLang (controls) and TensorRT-LLM by main's model (`pred_main_us`: the
    committed terms, TensorRT-LLM's borrowed) and TensorRT-LLM by the job model fitted on TRT_FIT (`pred_job_us`)."""
    x = fit_trtllm_job(hw)
    t = frame(GRID6)
    t = t[t["kernel"] == CSV_KERNEL["sglang"]].reset_index(drop=True)
    t["pred_main_us"] = predict_us(t, hw, hw.efficiency)
    t["pred_job_us"] = np.nan
    j = trtllm_job_frame(GRID6)
    j["pred_main_us"] = predict_us(j, hw, hw.efficiency)
    j["pred_job_us"] = predict_trtllm_job(j, hw, x)
    res = pd.concat([t, j], ignore_index=True)[F.SHAPE_KEYS + ["sweeps", "pred_main_us", "pred_job_us"]]
    if out is not None:
        res.to_csv(out, index=False, float_format="%.4f")
    return res, x


def measured6(pred_csv: str | Path | None = None, meas_csv: str | Path | None = None) -> pd.DataFrame:
    """The committed grid6 prediction joined to its measurement (`regime`, `wrong` = the selection check failed)."""
    return _measured(pred_csv or F.DATA_DIR / GRID6_PREDICTION, meas_csv or F.DATA_DIR / GRID6_MEASURED, regime6)


def grid6_accuracy(by_dist: bool = False) -> pd.DataFrame:
    """grid6 per kernel x regime, every row BLIND: TensorRT-LLM by main's model (`main`) and the job model (`job`),
    SGLang's controls by main's model; goal met on the shipped column (TensorRT-LLM: the job model's)."""
    return _grid_accuracy(measured6(), 6, _TRT_SGL, (("pred_job_us", "job"),), "job", by_dist)


# --- TensorRT-LLM's price (the product's: topk_trtllm.add_priced_ops), judged blind on GRID7 ---
_JOB_SAMPLES: dict = {}


#: whether a measured launch's recorded rows are sampled from the recorded score rows its harness drew them from
#: (lab/kernels/measure_production_kernels.py _row_sampler: the launch's row i resamples recorded row i mod 32, so a
#: launch of R < 32 rows holds rows 0..R-1 only): True = the samples cycle over min(R, 32) recorded rows; False = over
#: all 32 whatever R (the rule before: a 12-row launch priced with rows it never held)
HARNESS_BASES = False


def harness_bases(dist: str, rows: int) -> int | None:
    """The recorded score rows a measured launch of `rows` rows draws from (HARNESS_BASES), None = all."""
    if not HARNESS_BASES or dist != "recorded":
        return None
    return int(max(1, min(int(rows), len(F._recorded_rows()))))


def trtllm_samples(dist: str, rows: int, n: int, prefill: bool = False) -> list[dict]:
    """topk_trtllm.launch_job_stats over the rows fit_production_topk_gemm.sample_rows draws for (dist, n) (recorded
    rows from the score rows the harness's launch of `rows` rows draws from: harness_bases), at the launch of
    (rows, n) (the prefill entry's where `prefill`); cached."""
    nb, th = int(TK.blocks_per_row(rows, n, prefill)), int(TK.block_threads(rows, n, prefill))
    bases = harness_bases(dist, rows)
    key = (dist, nb, th, int(n), bool(TK._OP["on"]), bases)   # the torch op's split samples carry their merge apart
    if key not in _JOB_SAMPLES:
        _JOB_SAMPLES[key] = [TK.launch_job_stats(x, rows, nb=nb, th=th)
                             for x in F.sample_rows(dist, n, F.sample_count(n), bases=bases)]
    return _JOB_SAMPLES[key]


def predict_trtllm(t: pd.DataFrame, hw: HardwareSpec, terms: dict | None = None,
                   wide_round_cost: float | None = None, split_fixed: float | None = None,
                   later_share: float | None = None, pair_shares: dict | None = None) -> np.ndarray:
    """Each (dist, rows, n) row of `t` priced as the product prices TensorRT-LLM's top-k (topk_trtllm.add_priced_ops,
    the job model under `terms`, default the shipped topk_trtllm.JOB_TERMS; the prefill entry's launch where the row's
    kernel is CSV_KERNEL["trtllm_prefill"]; the torch op's dispatch, topk_trtllm.torch_op, where it is
    CSV_KERNEL["trtllm_op"], over a W-wide logits buffer where it is CSV_KERNEL["trtllm_op"] + "_w<W>") on the
    measurement's score rows (us, in-graph)."""
    from simulator.ops import OpBuilder

    b = OpBuilder(len(t))
    sms = float(hw.units)
    kern = t["kernel"] if "kernel" in t.columns else pd.Series([CSV_KERNEL["trtllm"]] * len(t))
    for i, (d, r, n, kk) in enumerate(zip(t["dist"], t["rows"].astype(int), t["n"].astype(int), kern)):
        pf = kk == CSV_KERNEL["trtllm_prefill"]
        op = str(kk).startswith(CSV_KERNEL["trtllm_op"])   # the engine's torch op; trt_topk_op_w<W>: a W-wide buffer
        width = int(str(kk).rsplit("_w", 1)[1]) if str(kk).startswith(CSV_KERNEL["trtllm_op"] + "_w") else None
        with TK.torch_op(width) if op else nullcontext():
            TK.add_priced_ops(b, r, n, 2048.0, sms, where=np.arange(len(t)) == i, prefill=pf,
                              samples_of=lambda rr, nn, d=d, pf=pf: trtllm_samples(d, rr, nn, pf), terms=terms,
                              wide_round_cost=wide_round_cost, split_fixed=split_fixed, later_share=later_share,
                              pair_shares=pair_shares, l2_bytes=hw.l2_bytes,
                              l2_curves=hw.efficiency.l2_sweep_hit or None)
    ops = b.build()
    sec = price(ops, hw, "graph") - hw.launch_graph_s
    return np.bincount(ops.setting, weights=sec, minlength=len(t)) * 1e6


#: grid 7: TensorRT-LLM at decode 1-511 rows and prefill-like 512-4096 rows, row lengths 2.9K-256K (single CTA, narrow
#: 256-thread CTAs, split work with its merge, 2-32 CTAs per SM), recorded and gaussian scores; lengths and row counts
#: in no committed top-k CSV; SGLang's rows of the same shapes are its controls
GRID7 = ([("recorded", r, n) for r, n in ((1, 3700), (4, 11900), (9, 7300), (3, 21300), (12, 45500))]
         + [("gaussian", r, n) for r, n in ((7, 5900), (14, 15700), (6, 38700))]
         + [("recorded", r, n) for r, n in ((1, 71000), (1, 255000), (2, 133000), (5, 244000), (8, 187000),
                                            (16, 256000), (11, 150000))]
         + [("gaussian", r, n) for r, n in ((3, 97000), (7, 201000))]
         + [("recorded", r, n) for r, n in ((24, 9100), (64, 2900), (100, 13900), (132, 6300), (40, 17900),
                                            (90, 52000), (20, 222000), (36, 131000), (70, 255000))]
         + [("gaussian", r, n) for r, n in ((48, 11300), (120, 26300), (56, 210000))]
         + [("recorded", r, n) for r, n in ((140, 4900), (300, 8700), (448, 12300), (400, 11000), (480, 9900),
                                            (168, 23900), (264, 41000), (144, 90000), (256, 181000))]
         + [("gaussian", r, n) for r, n in ((200, 3900), (380, 14900), (333, 19100), (210, 123000))]
         + [("recorded", r, n) for r, n in ((600, 3300), (1200, 6900), (2500, 12900), (4096, 4100), (768, 35000),
                                            (1800, 27000), (1100, 120000), (640, 250000), (4096, 150000))]
         + [("gaussian", r, n) for r, n in ((900, 8200), (3100, 15500), (2048, 60000), (1536, 90000))])
GRID7_PREDICTION = "topk_engines_grid7_prediction_2026-11-27.csv"
GRID7_MEASURED = "topk_engines_nvidia-h100-80gb-hbm3_2026-11-27_grid7.csv"


def regime7(rows, n) -> np.ndarray:
    """GRID7's regimes: short (<= 16,384) / mid (16K-64K) / long rows x decode 1-16 / 17-132 (at most one CTA per SM,
    split work aside) / 133-511 (several CTAs per SM) / prefill 512-4096 rows."""
    rows, n = np.asarray(rows), np.asarray(n)
    ph = np.where(rows <= 16, "decode 1-16", np.where(rows <= 132, "decode 17-132",
                                                        np.where(rows < 512, "decode 133-511", "prefill 512-4096")))
    ln = np.where(n <= 16384, "short rows", np.where(n <= 65536, "mid rows 16K-64K", "long rows"))
    return np.array([f"{a}, {b}" for a, b in zip(ln, ph)])


def predict_grid7(hw: HardwareSpec, main_csv: str | Path, out: str | Path | None = None) -> pd.DataFrame:
    """GRID7's TensorRT-LLM rows priced by this model (`pred_us`: topk_trtllm.add_priced_ops, the product's price on
    the measurement's score distribution) beside main's two prices read from `main_csv` (made by the model at main
    6648a5d: `pred_main_us` its product price, `pred_mainjob_us` its calibration-only job model; SGLang's controls
    `pred_main_us` only)."""
    mp = pd.read_csv(main_csv)
    t = frame(GRID7)
    t = t[t["kernel"] == CSV_KERNEL["sglang"]].reset_index(drop=True)
    t["pred_us"] = predict_us(t, hw, hw.efficiency)
    j = _trtllm_frame(GRID7)
    j["pred_us"] = predict_trtllm(j, hw)
    res = pd.concat([t, j], ignore_index=True)
    res["regime"] = regime7(res["rows"], res["n"])
    res["blocks_per_row"] = np.where(res["kernel"] == CSV_KERNEL["trtllm"], TK.blocks_per_row(res["rows"], res["n"]), 1)
    res["threads"] = np.where(res["kernel"] == CSV_KERNEL["trtllm"], TK.block_threads(res["rows"], res["n"]), 1024)
    res = res.merge(mp[F.SHAPE_KEYS + ["pred_main_us", "pred_mainjob_us"]], on=F.SHAPE_KEYS, how="left")
    res = res[F.SHAPE_KEYS + ["regime", "blocks_per_row", "threads", "sweeps", "pred_main_us", "pred_mainjob_us",
                              "pred_us"]]
    if out is not None:
        res.to_csv(out, index=False, float_format="%.4f")
    return res


def measured7(pred_csv: str | Path | None = None, meas_csv: str | Path | None = None) -> pd.DataFrame:
    """The committed grid7 prediction joined to its measurement (`wrong` = the selection check failed, time kept)."""
    return _measured(pred_csv or F.DATA_DIR / GRID7_PREDICTION, meas_csv or F.DATA_DIR / GRID7_MEASURED)


def grid7_accuracy(by_dist: bool = False) -> pd.DataFrame:
    """grid7 per kernel x regime, every row BLIND: TensorRT-LLM by main's product price (`main`), main's job model
    (`mainjob`) and this price (`new`, the shipped one: the goal is judged on it); SGLang's controls by main's model."""
    return _grid_accuracy(measured7(), 7, _TRT_SGL, (("pred_mainjob_us", "mainjob"), ("pred_us", "new")), "new",
                          by_dist)


# --- TensorRT-LLM's prefill entry, its split long decode rows and the closed load loop, judged blind on GRID8 ---
#: grid 8: TensorRT-LLM's prefill entry (invokeIndexerTopKPrefill: kernel trt_topk_pf) at 520-4000 rows of 2.5K-300K
#: columns, the same shapes through the decode dispatch (trt_topk: narrow 256-thread CTAs where it picks them), split
#: long decode rows (1-80 rows of 66K-730K: 10-32 CTAs per row, the done-counter merge) and single-CTA decode rows
#: (gaussian 300-360 rows among them); recorded and gaussian scores; no (scores, rows, length) of it in a committed top-k
#: CSV (some lengths recur at other row counts; tests/test_topk_engines.py checks); SGLang's rows of GRID8_SGL_CONTROLS
#: are its controls
GRID8_PREFILL = ([("recorded", r, n) for r, n in ((520, 4700), (700, 9300), (1000, 12100), (1400, 3500), (1900, 7900),
                                                  (2300, 14300), (3000, 5300), (3600, 11300), (4000, 2500))]
                 + [("gaussian", r, n) for r, n in ((1100, 6300), (2700, 10100))]
                 + [("recorded", r, n) for r, n in ((560, 22700), (850, 47000), (1300, 31500), (2200, 19900),
                                                    (3300, 40500))]
                 + [("gaussian", 1700, 25300)]
                 + [("recorded", r, n) for r, n in ((530, 300000), (760, 170000), (1000, 78000), (1600, 110000),
                                                    (2600, 72000), (3500, 95000))]
                 + [("gaussian", r, n) for r, n in ((1250, 140000), (2900, 66000))])
GRID8_SPLIT = ([("recorded", r, n) for r, n in ((1, 88000), (1, 410000), (1, 730000), (2, 98000), (2, 470000),
                                                (3, 160000), (4, 66500), (4, 520000), (6, 330000), (8, 115000),
                                                (8, 610000), (10, 235000), (13, 410000), (24, 290000), (45, 205000),
                                                (80, 560000))]
               + [("gaussian", r, n) for r, n in ((2, 300000), (5, 140000), (12, 270000))])
GRID8_DECODE = ([("recorded", r, n) for r, n in ((3, 9700), (50, 7700), (180, 12700), (350, 16900))]
                + [("gaussian", r, n) for r, n in ((360, 13100), (300, 21000))])
GRID8 = GRID8_PREFILL + GRID8_SPLIT + GRID8_DECODE
#: the shapes SGLang's kernel is timed at too (controls: its committed model, unchanged here)
GRID8_SGL_CONTROLS = (("recorded", 1, 88000), ("recorded", 8, 115000), ("recorded", 50, 7700), ("recorded", 180, 12700),
                      ("recorded", 700, 9300), ("recorded", 1300, 31500), ("recorded", 2, 98000),
                      ("recorded", 1000, 12100))
GRID8_PREDICTION = "topk_engines_grid8_prediction_2026-11-27.csv"
GRID8_MEASURED = "topk_engines_nvidia-h100-80gb-hbm3_2026-11-27_grid8.csv"


def engines_frame(decode: list, prefill: list | tuple = (), sgl_controls: list | tuple = ()) -> pd.DataFrame:
    """A grid's rows in one frame: SGLang at `sgl_controls`, TensorRT-LLM's decode dispatch at `decode`, its prefill
    entry at `prefill` (kernel trtllm_prefill), in that order; (scores, rows, length) triples each."""
    parts = []
    if len(sgl_controls):
        t = frame(list(sgl_controls))
        parts.append(t[t["kernel"] == CSV_KERNEL["sglang"]])
    parts.append(_trtllm_frame(decode))
    if len(prefill):
        pf = _trtllm_frame(list(prefill))
        pf["kernel"] = CSV_KERNEL["trtllm_prefill"]
        parts.append(pf)
    return pd.concat(parts, ignore_index=True)


def grid8_frame() -> pd.DataFrame:
    """GRID8's rows: TensorRT-LLM's decode dispatch at every shape, its prefill entry at GRID8_PREFILL's, SGLang at
    GRID8_SGL_CONTROLS (one row per kernel x shape; SGLang's with its pass statistics, `frame`)."""
    return engines_frame(GRID8, GRID8_PREFILL, GRID8_SGL_CONTROLS)


def regime8(kernel, rows, n) -> np.ndarray:
    """GRID8's regimes: the prefill entry short (<= 16,384) / mid (16K-64K) / long rows; the decode dispatch at the same
    prefill shapes (same split); split long decode rows 1-16 / 17-80 rows; single-CTA decode rows."""
    kernel, rows, n = np.asarray(kernel), np.asarray(rows), np.asarray(n)
    ln = np.where(n <= 16384, "short rows", np.where(n <= 65536, "mid rows 16K-64K", "long rows"))
    split = TK.blocks_per_row(rows, n) > 1
    out = np.where(kernel == CSV_KERNEL["trtllm_prefill"], np.char.add("prefill entry 520-4000 rows, ", ln),
                   np.where(rows >= 512, np.char.add("decode dispatch at 520-4000 rows, ", ln),
                            np.where(split, np.where(rows <= 16, "split long rows, decode 1-16",
                                                     "split long rows, decode 17-80"),
                                     "single-CTA decode 3-360 rows")))
    return out


def _price_mixed(t: pd.DataFrame, hw: HardwareSpec) -> np.ndarray:
    """Set `pred_us` on a grid frame mixing SGLang's controls (its committed model, predict_us) and TensorRT-LLM's
    rows (the product's price, predict_trtllm); returns the SGLang row mask."""
    sg = (t["kernel"] == CSV_KERNEL["sglang"]).to_numpy()
    t["pred_us"] = np.nan
    t.loc[sg, "pred_us"] = predict_us(t[sg].reset_index(drop=True), hw, hw.efficiency)
    t.loc[~sg, "pred_us"] = predict_trtllm(t[~sg].reset_index(drop=True), hw)
    return sg


def _beside_main(t: pd.DataFrame, main_csv: str | Path, out: str | Path | None) -> pd.DataFrame:
    """A priced grid frame (`pred_us`, regime, blocks_per_row, threads, sweeps) beside main's product price read from
    `main_csv` (`pred_main_us`, joined on F.SHAPE_KEYS), written to `out` when given: the committed prediction file of
    grids 9-11."""
    t = t.merge(pd.read_csv(main_csv)[F.SHAPE_KEYS + ["pred_main_us"]], on=F.SHAPE_KEYS, how="left")
    res = t[F.SHAPE_KEYS + ["regime", "blocks_per_row", "threads", "sweeps", "pred_main_us", "pred_us"]]
    if out is not None:
        res.to_csv(out, index=False, float_format="%.4f")
    return res


def predict_grid8(hw: HardwareSpec, main_csv: str | Path, out: str | Path | None = None) -> pd.DataFrame:
    """GRID8 priced by this model (`pred_us`: topk_trtllm.add_priced_ops, the prefill entry's launch for trt_topk_pf)
    beside main's product price read from `main_csv` (made by the model at main a6875d8, which has no prefill entry:
    `pred_main_us` prices trt_topk_pf rows with its decode dispatch, as main's product priced every prefill launch)."""
    mp = pd.read_csv(main_csv)
    t = grid8_frame()
    _price_mixed(t, hw)
    t["regime"] = regime8(t["kernel"], t["rows"], t["n"])
    pf = (t["kernel"] == CSV_KERNEL["trtllm_prefill"]).to_numpy()
    trt = (t["kernel"] == CSV_KERNEL["trtllm"]).to_numpy() | pf
    t["blocks_per_row"] = np.where(trt, TK.blocks_per_row(t["rows"], t["n"]), 1)
    t.loc[pf, "blocks_per_row"] = 1
    t["threads"] = np.where(pf, 512, np.where(trt, TK.block_threads(t["rows"], t["n"]), 1024))
    mk = mp[F.SHAPE_KEYS + ["pred_main_us"]]
    t = t.merge(mk, on=F.SHAPE_KEYS, how="left")
    dm = mk[mk["kernel"] == CSV_KERNEL["trtllm"]].drop(columns="kernel").rename(columns={"pred_main_us": "m2"})
    t = t.merge(dm, on=[c for c in F.SHAPE_KEYS if c != "kernel"], how="left")
    t["pred_main_us"] = np.where(pf, t["m2"], t["pred_main_us"])
    res = t[F.SHAPE_KEYS + ["regime", "blocks_per_row", "threads", "sweeps", "pred_main_us", "pred_us"]]
    if out is not None:
        res.to_csv(out, index=False, float_format="%.4f")
    return res


def measured8(pred_csv: str | Path | None = None, meas_csv: str | Path | None = None) -> pd.DataFrame:
    """The committed grid8 prediction joined to its measurement (`wrong` = the selection check failed, time kept)."""
    return _measured(pred_csv or F.DATA_DIR / GRID8_PREDICTION, meas_csv or F.DATA_DIR / GRID8_MEASURED)


def grid8_accuracy(by_dist: bool = False) -> pd.DataFrame:
    """grid8 per kernel x regime, every row BLIND: TensorRT-LLM (both entries) by main's product price (`main`) and
    this one (`new`: the goal is judged on it); SGLang's controls by its committed model (`main`)."""
    groups = (((CSV_KERNEL["trtllm_prefill"], CSV_KERNEL["trtllm"]), "trtllm"), ((CSV_KERNEL["sglang"],), "sglang"))
    return _grid_accuracy(measured8(), 8, groups, (("pred_us", "new"),), "new", by_dist)


# --- the 1024-thread round (topk_trtllm.WIDE_ROUND_COST), fitted on named rows, judged blind on GRID9 ---
#: the named fit rows of topk_trtllm.WIDE_ROUND_COST: every one-wave 1024-thread split launch measured in grids 6 and 8
#: (decode dispatch, slices >= 30,000 scores; LOOKED-AT before this fit). Grid 8's 80-row launch (three waves) is not
#: among them: the term is a lone CTA's round
TRT_WIDE_FIT = ((6, "recorded", 2, 560000), (6, "recorded", 8, 720000), (6, "gaussian", 6, 380000),
                (6, "uniform", 6, 380000), (8, "recorded", 1, 410000), (8, "recorded", 1, 730000),
                (8, "recorded", 4, 520000), (8, "recorded", 6, 330000), (8, "recorded", 8, 610000),
                (8, "recorded", 13, 410000), (8, "gaussian", 2, 300000))


def wide_fit_frame() -> pd.DataFrame:
    """TRT_WIDE_FIT's measured rows (decode dispatch) from the committed grid 6 / grid 8 CSVs."""
    out = []
    for g, f in ((6, measured6), (8, measured8)):
        m = f()
        m = m[m["kernel"] == CSV_KERNEL["trtllm"]]
        keys = {(d, r, n) for gg, d, r, n in TRT_WIDE_FIT if gg == g}
        out.append(m[[(d, int(r), int(n)) in keys for d, r, n in zip(m["dist"], m["rows"], m["n"])]])
    t = pd.concat(out, ignore_index=True)[F.SHAPE_KEYS + ["median_us"]]
    assert len(t) == len(TRT_WIDE_FIT), len(t)
    return t


def _fit_named(rows, tag: str) -> pd.DataFrame:
    """The measured decode-dispatch rows named by `rows` ((grid, dist, rows, n) tuples) from the committed grid 6-10 CSVs."""
    out = []
    for g, f in ((6, measured6), (8, measured8), (9, measured9), (10, measured10)):
        keys = {(d, r, n) for gg, d, r, n in rows if gg == g}
        if not keys:
            continue
        m = f()
        m = m[m["kernel"] == CSV_KERNEL["trtllm"]]
        out.append(m[[(d, int(r), int(n)) in keys for d, r, n in zip(m["dist"], m["rows"], m["n"])]])
    t = pd.concat(out, ignore_index=True)[F.SHAPE_KEYS + ["median_us"]]
    assert len(t) == len(rows), (tag, len(t))
    return t


def _fit_one(t: pd.DataFrame, hw: HardwareSpec, kw: str, x0: float, lo: float, hi: float) -> tuple[float, float]:
    """One term (predict_trtllm's keyword `kw`) by least squares on log time over the rows of t: (value, rms)."""
    from scipy.optimize import least_squares

    y = np.log(t["median_us"].to_numpy(float))
    r = least_squares(lambda x: np.log(np.maximum(predict_trtllm(t, hw, **{kw: float(x[0])}), 1e-3)) - y,
                      [x0], bounds=([lo], [hi]), diff_step=0.02, xtol=1e-3)
    return float(r.x[0]), float(np.sqrt(np.mean(r.fun ** 2)))


#: the named fit rows of topk_trtllm.SPLIT_FIXED_ROUNDS: grid 8's one-wave 512-thread split launches at 1-16 rows
#: (LOOKED-AT before this fit; round_cost 1, no other fitted term acts on their split path)
TRT_SPLIT_FIT = ((8, "recorded", 1, 88000), (8, "recorded", 2, 98000), (8, "recorded", 2, 470000),
                 (8, "recorded", 3, 160000), (8, "recorded", 8, 115000), (8, "recorded", 10, 235000),
                 (8, "gaussian", 5, 140000), (8, "gaussian", 12, 270000))


@_fitted_before_grid15
def fit_split_fixed(hw: HardwareSpec) -> dict:
    """topk_trtllm.SPLIT_FIXED_ROUNDS on TRT_SPLIT_FIT (JOB_TERMS fixed; 512-thread rows: WIDE_ROUND_COST does not
    act)."""
    v, rms = _fit_one(_fit_named(TRT_SPLIT_FIT, "split"), hw, "split_fixed", 15.0, 0.0, 80.0)
    return {"split_fixed_rounds": round(v, 2), "split_fit_rows": len(TRT_SPLIT_FIT),
            "split_rms_log_error": round(rms, 4)}


@_fitted_before_grid15
def fit_wide_round(hw: HardwareSpec) -> dict:
    """topk_trtllm.WIDE_ROUND_COST by least squares on log time over TRT_WIDE_FIT (JOB_TERMS and SPLIT_FIXED_ROUNDS
    fixed: TRT_FIT's and TRT_SPLIT_FIT's rows are 512-thread launches, where the term does not act; one-wave launches:
    LATER_CTA_SHARE does not act)."""
    v, rms = _fit_one(wide_fit_frame(), hw, "wide_round_cost", 2.0, 1.0, 4.0)
    return {"wide_round_cost": round(v, 4), "wide_fit_rows": len(TRT_WIDE_FIT), "wide_rms_log_error": round(rms, 4)}


@_fitted_before_grid15
def fit_later_share(hw: HardwareSpec) -> dict:
    """topk_trtllm.LATER_CTA_SHARE on TRT_WAVE_FIT (the other terms fixed at their shipped values)."""
    v, rms = _fit_one(_fit_named(TRT_WAVE_FIT, "wave"), hw, "later_share", 0.7, 0.1, 1.0)
    return {"later_cta_share": round(v, 3), "wave_fit_rows": len(TRT_WAVE_FIT), "wave_rms_log_error": round(rms, 4)}


#: grid 9: TensorRT-LLM's decode dispatch where its block width moves: split long rows whose slices run 1024-thread CTAs
#: (1-64 rows of 310K-960K: slices >= 30,000 scores) and 512-thread slices (controls), many short and mid rows through
#: the narrow 256-thread CTAs (520-3900 rows, useNarrowBlock) and one 512-thread short launch; recorded and gaussian
#: scores; no (scores, rows, length) of it in a committed top-k CSV (tests/test_topk_engines.py checks); SGLang's rows of
#: GRID9_SGL_CONTROLS are its controls
GRID9_WIDE = ([("recorded", r, n) for r, n in ((1, 350000), (1, 620000), (1, 900000), (2, 340000), (2, 650000),
                                               (3, 420000), (4, 380000), (4, 800000), (5, 310000), (7, 480000),
                                               (8, 440000), (8, 960000), (11, 360000), (16, 520000))]
              + [("gaussian", r, n) for r, n in ((1, 500000), (3, 450000), (9, 600000))]
              + [("recorded", r, n) for r, n in ((20, 330000), (32, 450000), (48, 380000), (64, 700000))]
              + [("gaussian", 40, 310000)])
GRID9_SPLIT512 = ([("recorded", r, n) for r, n in ((1, 150000), (3, 240000), (6, 130000), (12, 280000), (30, 210000),
                                                   (2, 420000))]
                  + [("gaussian", 4, 180000)])
GRID9_SHORT = ([("recorded", r, n) for r, n in ((520, 8900), (640, 11700), (800, 6400), (1150, 9800), (1500, 13200),
                                                (2000, 4400), (2400, 11000), (2800, 7300), (3400, 13600), (3900, 3000),
                                                (600, 14000))]
               + [("gaussian", r, n) for r, n in ((750, 10500), (1800, 8800), (3200, 5900))]
               + [("recorded", r, n) for r, n in ((1100, 24000), (2500, 33000))] + [("gaussian", 1400, 18500)])
GRID9 = GRID9_WIDE + GRID9_SPLIT512 + GRID9_SHORT
GRID9_SGL_CONTROLS = (("recorded", 1, 350000), ("recorded", 8, 440000), ("recorded", 32, 450000),
                      ("recorded", 520, 8900), ("recorded", 2000, 4400), ("recorded", 1150, 9800))
GRID9_PREDICTION = "topk_engines_grid9_prediction_2026-11-27.csv"
GRID9_MEASURED = "topk_engines_nvidia-h100-80gb-hbm3_2026-11-27_grid9.csv"


def grid9_frame() -> pd.DataFrame:
    """GRID9's rows: TensorRT-LLM's decode dispatch at every shape, SGLang at GRID9_SGL_CONTROLS."""
    return engines_frame(GRID9, (), GRID9_SGL_CONTROLS)


def regime9(kernel, rows, n) -> np.ndarray:
    """GRID9's regimes by the decode dispatch's block width: split rows with 1024-thread slices at 1-16 / 17-64 rows,
    with 512-thread slices; 256-thread (narrow) short (<= 16,384) / mid rows; one-CTA 512-thread short rows; SGLang's
    controls by its own split (short / long rows)."""
    kernel, rows, n = np.asarray(kernel), np.asarray(rows), np.asarray(n)
    th = TK.block_threads(rows, n)
    split = TK.blocks_per_row(rows, n) > 1
    ln = np.where(n <= 16384, "short rows", np.where(n <= 65536, "mid rows", "long rows"))
    trt = np.where(split, np.where(th > 512, np.where(rows <= 16, "split, 1024-thread slices, 1-16 rows",
                                                      "split, 1024-thread slices, 17-64 rows"),
                                   "split, 512-thread slices"),
                   np.char.add(np.where(th < 512, "256-thread CTAs 520-3900 rows, ", "512-thread CTAs, "), ln))
    return np.where(kernel == CSV_KERNEL["sglang"], np.char.add("controls, ", ln), trt)


def predict_grid9(hw: HardwareSpec, main_csv: str | Path, out: str | Path | None = None) -> pd.DataFrame:
    """GRID9 priced by this model (`pred_us`: topk_trtllm.add_priced_ops with WIDE_ROUND_COST and NARROW_SORT_SHARE)
    beside main's product price read from `main_csv` (`pred_main_us`, made by the model at main ca60389 with
    lab/kernels/price_topk_grid9_main.py)."""
    t = grid9_frame()
    sg = _price_mixed(t, hw)
    t["regime"] = regime9(t["kernel"], t["rows"], t["n"])
    t["blocks_per_row"] = np.where(sg, 1, TK.blocks_per_row(t["rows"], t["n"]))
    t["threads"] = np.where(sg, 1024, TK.block_threads(t["rows"], t["n"]))
    return _beside_main(t, main_csv, out)


def measured9(pred_csv: str | Path | None = None, meas_csv: str | Path | None = None) -> pd.DataFrame:
    """The committed grid9 prediction joined to its measurement (`wrong` = the selection check failed, time kept)."""
    return _measured(pred_csv or F.DATA_DIR / GRID9_PREDICTION, meas_csv or F.DATA_DIR / GRID9_MEASURED)


def grid9_accuracy(by_dist: bool = False) -> pd.DataFrame:
    """grid9 per kernel x regime, every row BLIND: TensorRT-LLM by main's product price (`main`, ca60389) and this one
    (`new`: the goal is judged on it); SGLang's controls by its committed model (`main`)."""
    return _grid_accuracy(measured9(), 9, _TRT_SGL, (("pred_us", "new"),), "new", by_dist)


def trtllm_record(hw: HardwareSpec) -> dict:
    """production_kernels.topk_trtllm of the fitted file: the job model's terms (fit_trtllm_job on TRT_FIT, shipped as
    topk_trtllm.JOB_TERMS) and where the rest of the kind's terms come from."""
    x = (fit_trtllm_job(hw) | fit_split_fixed(hw) | fit_wide_round(hw) | fit_later_share(hw) | fit_pair_shares(hw)
         | fit_pair_l2(hw) | fit_queue_p_shared(hw))
    from hwmodels import roofline as R

    return x | {"fit_shapes": [f"{d}, {r} rows x {n}" for d, r, n in TRT_FIT],
                "split_fit_shapes": [f"grid {g}: {d}, {r} rows x {n}" for g, d, r, n in TRT_SPLIT_FIT],
                "wide_fit_shapes": [f"grid {g}: {d}, {r} rows x {n}" for g, d, r, n in TRT_WIDE_FIT],
                "wave_fit_shapes": [f"grid {g}: {d}, {r} rows x {n}" for g, d, r, n in TRT_WAVE_FIT],
                "pair_fit_shapes": [f"{k} {d}, {r} rows x {n}" for k, d, r, n in TRT_PAIR_FIT],
                "pair_l2_fit_shapes": ([f"grid {g}: {k} {d}, {r} rows x {n}" for k, d, r, n, g in TRT_PAIR_L2_FIT]
                                       + [f"L2 scan: {k} {d}, {r} rows x {n}" for k, d, r, n in TRT_PAIR_L2_SCAN]),
                "narrow_sort_share": TK.NARROW_SORT_SHARE, "wide_alone": TK.WIDE_ALONE,
                "reg_resident": TK.REG_RESIDENT, "reg_ctas": TK.REG_CTAS,
                "serial_phases": list(TK.SERIAL_PHASES),
                "chain_queued_p": R.CHAIN_QUEUED_P, "handshake_rounds": TK.HANDSHAKE_ROUNDS,
                "source": (f"simulator/calibration/topk_engines.py fit_trtllm_job on {GRID5_MEASURED} (TensorRT-LLM "
                           "indexerTopK.cu @ 07339e94, decode kernels, fp32, k 2048): scan / radix / rank in loop "
                           "rounds of iter_us[topk_trtllm], shipped as simulator/kernels/topk_trtllm.JOB_TERMS; "
                           "cta_slots from the source (512 threads, ~24 KiB); iter_us, iter_l2_us, fixed_us and one "
                           "barrier phase as cta_fixed_us borrowed from topk_sglang (the fit is in units of them); "
                           "priced with the kind's closed load loop (hwmodels/roofline.py CHAIN_QUEUED, exponent "
                           "chain_queued_p) and the split path's handshake (topk_trtllm.HANDSHAKE_ROUNDS); "
                           "wide_round_cost (a 1024-thread CTA's sweep round in 512-thread rounds, shipped as "
                           "topk_trtllm.WIDE_ROUND_COST) by fit_wide_round on the named TRT_WIDE_FIT rows of grids 6 "
                           "and 8, after split_fixed_rounds (the split path's once-per-row stretch, "
                           "topk_trtllm.SPLIT_FIXED_ROUNDS) by fit_split_fixed on TRT_SPLIT_FIT (grid 8's one-wave "
                           "512-thread split launches); later_cta_share (topk_trtllm.LATER_CTA_SHARE: a later lone "
                           "1024-thread CTA's share of a first one's rounds) by fit_later_share on TRT_WAVE_FIT (grids "
                           "8-10's multi-wave 1024-thread split launches); narrow_sort_share: a 256-thread CTA's radix sort serializes 256 / 512 of the fitted "
                           "one; wide_alone: a 1024-thread CTA (64 registers a thread) fills an SM's register file, "
                           "one per SM; reg_resident / reg_ctas: 512-thread CTAs (47-64 registers a thread, ptxas) "
                           "two per SM, each SM's other CTAs at (c - 1) / reg_ctas of their sweeps and job (the assumed rule, "
                           "shipped up to grid 14); pair_<path>_sweep_share / pair_<path>_job_share: the measured alternative, groups "
                           "of reg_ctas each group's other CTAs adding those shares (topk_trtllm.PAIR_SHARES_CANDIDATE, "
                           f"NOT shipped: it lost a regime on grid 13; by fit_pair_shares on the named TRT_PAIR_FIT scan, "
                           f"{PAIR_SCAN_MEASURED}, each path on its own rows); pair_l2_share / pair_l2_prefill_share: "
                           "a paired single CTA's L2-hit sweep rounds and job at that share, decode dispatch / prefill "
                           "entry (topk_trtllm.PAIR_L2_SHARE, PAIR_SHARES_L2: it tied main's regimes alone on "
                           "grid 14; by fit_pair_l2 on the named TRT_PAIR_L2_FIT rows of grids 12-13 and the "
                           f"TRT_PAIR_L2_SCAN scan, {PAIR_L2_SCAN_MEASURED}, each entry on its own rows); "
                           "queue_p_shared: the closed load loop's knee where an SM keeps >= 2 CTAs resident "
                           "(hwmodels/roofline.py CHAIN_QUEUED_P_SHARED = topk_trtllm.QUEUE_P_SHARED) by "
                           "fit_queue_p_shared, scanned over grids 11-14's looked-at rows (narrow launches aside) "
                           "with PAIR_SHARES_L2; SHIPPED after grid 15 with PAIR_SHARES = PAIR_SHARES_L2 (6 of 7 "
                           "regimes, main's rule 2 of 7); every term above was fitted under the rule before grid 15 "
                           "(as_fitted) and is not refitted; "
                           f"judged blind on {GRID7_MEASURED}, {GRID8_MEASURED}, {GRID9_MEASURED}, {GRID10_MEASURED}, "
                           f"{GRID11_MEASURED}, {GRID12_MEASURED}, {GRID13_MEASURED}, {GRID14_MEASURED} and "
                           f"{GRID15_MEASURED}")}


def write_trtllm(target: str, hw: HardwareSpec, out_dir: Path) -> Path:
    """Merge production_kernels.topk_trtllm (trtllm_record) into out_dir/<target>.yaml; nothing else changes."""
    from hwmodels.yamlio import load_yaml
    from simulator.calibration import checks as C

    p = Path(out_dir) / f"{target}.yaml"
    old = (load_yaml(p, "fitted efficiency file") or {}).get("production_kernels", {}) if p.exists() else {}
    doc = C.merge_into(p, {"production_kernels": dict(old) | {"topk_trtllm": trtllm_record(hw)}},
                       {"production_kernels": None})
    return C.write_checked(p, doc, "")


# --- a 1024-thread CTA alone on its SM (topk_trtllm.WIDE_ALONE), judged blind on GRID10 ---
#: grid 10: TensorRT-LLM's decode dispatch in split launches whose 1024-thread CTAs outnumber the SMs (17-120 rows of
#: 310K-880K scores: 2-4 waves of one CTA per SM, a few at 5-10), one-wave 1024-thread launches (1-13 rows) and
#: multi-wave 512-thread split launches as controls; recorded and gaussian scores; no (scores, rows, length) of it in a
#: committed top-k CSV (tests/test_topk_engines.py checks); SGLang's rows of GRID10_SGL_CONTROLS are its controls
GRID10_WIDE_MULTI = ([("recorded", r, n) for r, n in ((17, 340000), (19, 610000), (22, 420000), (25, 880000),
                                                      (28, 360000), (30, 520000), (34, 310000), (37, 690000),
                                                      (41, 400000), (45, 330000), (50, 560000), (66, 600000),
                                                      (96, 540000), (120, 580000))]
                     + [("gaussian", r, n) for r, n in ((24, 470000), (36, 390000), (44, 620000), (52, 350000))])
GRID10_WIDE_ONE = ([("recorded", r, n) for r, n in ((1, 480000), (3, 700000), (6, 540000), (10, 390000),
                                                    (13, 600000))])
GRID10_SPLIT512 = (("recorded", 30, 250000), ("recorded", 60, 220000))
GRID10 = GRID10_WIDE_MULTI + GRID10_WIDE_ONE + list(GRID10_SPLIT512)
GRID10_SGL_CONTROLS = (("recorded", 17, 340000), ("recorded", 41, 400000), ("recorded", 1, 480000),
                       ("recorded", 120, 580000))
#: the named fit rows of topk_trtllm.LATER_CTA_SHARE: every multi-wave 1024-thread split launch of grids 8-10 (more
#: 1024-thread CTAs than SMs; LOOKED-AT before this fit)
TRT_WAVE_FIT = ((8, "recorded", 80, 560000), (9, "recorded", 16, 520000), (9, "recorded", 20, 330000),
                (9, "recorded", 32, 450000), (9, "recorded", 48, 380000), (9, "recorded", 64, 700000),
                (9, "gaussian", 40, 310000)) + tuple((10,) + s for s in GRID10_WIDE_MULTI)
GRID10_PREDICTION = "topk_engines_grid10_prediction_2026-11-27.csv"
GRID10_MEASURED = "topk_engines_nvidia-h100-80gb-hbm3_2026-11-27_grid10.csv"


def grid10_frame() -> pd.DataFrame:
    """GRID10's rows: TensorRT-LLM's decode dispatch at every shape, SGLang at GRID10_SGL_CONTROLS."""
    return engines_frame(GRID10, (), GRID10_SGL_CONTROLS)


def regime10(kernel, rows, n) -> np.ndarray:
    """GRID10's regimes: 1024-thread split launches by waves of one CTA per SM (one, 2-4, 5-10), 512-thread split
    launches; SGLang's controls."""
    kernel, rows, n = np.asarray(kernel), np.asarray(rows), np.asarray(n)
    th = TK.block_threads(rows, n)
    w = np.ceil(rows * TK.blocks_per_row(rows, n) / 132.0)
    trt = np.where(th > 512, np.where(w <= 1, "split, 1024-thread CTAs, one wave",
                                      np.where(w <= 4, "split, 1024-thread CTAs, 2-4 waves",
                                               "split, 1024-thread CTAs, 5-10 waves")),
                   "split, 512-thread CTAs, several waves")
    return np.where(kernel == CSV_KERNEL["sglang"], "controls, long rows", trt)


def predict_grid10(hw: HardwareSpec, main_csv: str | Path, out: str | Path | None = None) -> pd.DataFrame:
    """GRID10 priced by this model (`pred_us`: topk_trtllm.add_priced_ops with WIDE_ALONE) beside main's product price
    read from `main_csv` (`pred_main_us`, made by the model at main 46789a6 with lab/kernels/price_topk_grid10_main.py)."""
    t = grid10_frame()
    sg = _price_mixed(t, hw)
    t["regime"] = regime10(t["kernel"], t["rows"], t["n"])
    t["blocks_per_row"] = np.where(sg, 1, TK.blocks_per_row(t["rows"], t["n"]))
    t["threads"] = np.where(sg, 1024, TK.block_threads(t["rows"], t["n"]))
    return _beside_main(t, main_csv, out)


def measured10(pred_csv: str | Path | None = None, meas_csv: str | Path | None = None) -> pd.DataFrame:
    """The committed grid10 prediction joined to its measurement (`wrong` = the selection check failed, time kept)."""
    p = pd.read_csv(pred_csv or F.DATA_DIR / GRID10_PREDICTION)
    m = pd.read_csv(meas_csv or F.DATA_DIR / GRID10_MEASURED)
    out = p.merge(m[F.SHAPE_KEYS + ["median_us", "note"]], on=F.SHAPE_KEYS, how="inner")
    out["wrong"] = out["note"].fillna("").str.contains("WRONG").to_numpy()
    return out


def grid10_accuracy(by_dist: bool = False) -> pd.DataFrame:
    """grid10 per kernel x regime, every row BLIND: TensorRT-LLM by main's product price (`main`, 46789a6) and this one
    (`new`: the goal is judged on it); SGLang's controls by its committed model (`main`)."""
    return _grid_accuracy(measured10(), 10, _TRT_SGL, (("pred_us", "new"),), "new", by_dist)


# --- the split path's fixed stretch and the later lone CTAs' share (topk_trtllm.SPLIT_FIXED_ROUNDS, LATER_CTA_SHARE),
# fitted on named rows (TRT_SPLIT_FIT, TRT_WAVE_FIT; WIDE_ROUND_COST refitted), judged blind on GRID11 ---
#: grid 11: TensorRT-LLM's decode dispatch in 1024-thread split launches over 1-10 waves of one CTA per SM (1-127
#: rows of 315K-820K), 512-thread split launches (1-63 rows, slices < 30,000), its prefill entry at mid rows (620-2800
#: rows of 21K-52K: trt_topk_pf) and narrow short rows (256-thread CTAs); recorded and gaussian scores; no (scores,
#: rows, length) of it in a committed top-k CSV (tests/test_topk_engines.py checks); SGLang's rows of
#: GRID11_SGL_CONTROLS are its controls
GRID11_WIDE = ([("recorded", r, n) for r, n in ((5, 430000), (9, 330000), (12, 770000), (14, 650000), (18, 315000),
                                               (21, 740000), (26, 450000), (29, 820000), (33, 370000), (39, 560000),
                                               (47, 420000), (55, 660000), (63, 350000), (70, 540000), (85, 600000),
                                               (110, 560000), (127, 720000))]
               + [("gaussian", r, n) for r, n in ((23, 500000), (42, 710000), (58, 380000))])
GRID11_SPLIT512 = ([("recorded", r, n) for r, n in ((1, 135000), (4, 200000), (7, 95000), (2, 440000), (4, 410000),
                                                   (9, 210000), (15, 260000), (27, 240000), (40, 205000),
                                                   (50, 280000), (63, 230000))]
                   + [("gaussian", 20, 230000)])
GRID11_PREFILL_MID = ([("recorded", r, n) for r, n in ((620, 28000), (950, 37000), (1450, 21000), (2000, 52000),
                                                       (2800, 26500))]
                      + [("gaussian", 1200, 44000)])
GRID11_NARROW = ([("recorded", r, n) for r, n in ((450, 11500), (1300, 7100), (2100, 12800), (3700, 5600))]
                 + [("gaussian", 950, 9400)])
GRID11 = GRID11_WIDE + GRID11_SPLIT512 + GRID11_NARROW
GRID11_SGL_CONTROLS = (("recorded", 14, 650000), ("recorded", 47, 420000), ("recorded", 127, 720000),
                       ("recorded", 9, 210000), ("recorded", 1, 135000), ("recorded", 1300, 7100),
                       ("recorded", 2100, 12800), ("recorded", 620, 28000))
GRID11_PREDICTION = "topk_engines_grid11_prediction_2026-11-27.csv"
GRID11_MEASURED = "topk_engines_nvidia-h100-80gb-hbm3_2026-11-27_grid11.csv"


def grid11_frame() -> pd.DataFrame:
    """GRID11's rows: TensorRT-LLM's decode dispatch at GRID11's shapes, its prefill entry at GRID11_PREFILL_MID's,
    SGLang at GRID11_SGL_CONTROLS."""
    return engines_frame(GRID11, GRID11_PREFILL_MID, GRID11_SGL_CONTROLS)


def regime11(kernel, rows, n) -> np.ndarray:
    """GRID11's regimes: 1024-thread split launches by waves of one CTA per SM (one, 2-4, 5-10), 512-thread split
    launches, the prefill entry at mid rows, narrow short rows; SGLang's controls (split / short-row launches)."""
    kernel, rows, n = np.asarray(kernel), np.asarray(rows), np.asarray(n)
    pf = kernel == CSV_KERNEL["trtllm_prefill"]
    th = TK.block_threads(rows, n)
    nb = TK.blocks_per_row(rows, n)
    w = np.ceil(rows * nb / 132.0)
    trt = np.where(pf, "prefill entry, mid rows 16K-64K",
                   np.where(nb <= 1, "narrow 256-thread CTAs, short rows",
                            np.where(th > 512, np.where(w <= 1, "split, 1024-thread CTAs, one wave",
                                                        np.where(w <= 4, "split, 1024-thread CTAs, 2-4 waves",
                                                                 "split, 1024-thread CTAs, 5-10 waves")),
                                     "split, 512-thread CTAs")))
    sg = np.where(n > 65536, "controls, long rows", "controls, short / mid rows")
    return np.where(kernel == CSV_KERNEL["sglang"], sg, trt)


def predict_grid11(hw: HardwareSpec, main_csv: str | Path, out: str | Path | None = None) -> pd.DataFrame:
    """GRID11 priced by this model (`pred_us`: topk_trtllm.add_priced_ops with SPLIT_FIXED_ROUNDS, LATER_CTA_SHARE and
    the refitted WIDE_ROUND_COST; the prefill entry's launch for trt_topk_pf) beside main's product price read from
    `main_csv` (`pred_main_us`, made by the model at main 06e70f8 with lab/kernels/price_topk_grid11_main.py)."""
    t = grid11_frame()
    _price_mixed(t, hw)
    t["regime"] = regime11(t["kernel"], t["rows"], t["n"])
    sg = (t["kernel"] == CSV_KERNEL["sglang"]).to_numpy()
    pf = (t["kernel"] == CSV_KERNEL["trtllm_prefill"]).to_numpy()
    t["blocks_per_row"] = np.where(sg | pf, 1, TK.blocks_per_row(t["rows"], t["n"]))
    t["threads"] = np.where(sg, 1024, np.where(pf, 512, TK.block_threads(t["rows"], t["n"])))
    return _beside_main(t, main_csv, out)


def measured11(pred_csv: str | Path | None = None, meas_csv: str | Path | None = None) -> pd.DataFrame:
    """The committed grid11 prediction joined to its measurement (`wrong` = the selection check failed, time kept)."""
    return measured10(pred_csv or F.DATA_DIR / GRID11_PREDICTION, meas_csv or F.DATA_DIR / GRID11_MEASURED)


def grid11_accuracy(by_dist: bool = False) -> pd.DataFrame:
    """grid11 per kernel x regime, every row BLIND: TensorRT-LLM (both entries) by main's product price (`main`,
    06e70f8) and this one (`new`); SGLang's controls by its committed model (`main`)."""
    groups = (((CSV_KERNEL["trtllm"], CSV_KERNEL["trtllm_prefill"]), "trtllm"), ((CSV_KERNEL["sglang"],), "sglang"))
    return _grid_accuracy(measured11(), 11, groups, (("pred_us", "new"),), "new", by_dist)


# --- the register-limited residency of the kind's 512-thread CTAs (topk_trtllm.REG_RESIDENT, REG_CTAS), judged blind
# on GRID12 ---
#: grid 12: TensorRT-LLM's decode dispatch in 512-thread split launches of 2-5 CTAs per SM (14-59 rows of 205K-295K:
#: slices < 30,000), single 512-thread CTAs at 150-400 decode rows, its prefill entry at mid rows (540-3000 rows of
#: 17K-62K: trt_topk_pf) and at long / short rows (controls of what the rule also moves), narrow 256-thread short rows and
#: multi-wave 1024-thread split launches (controls of what it does not move); recorded and gaussian scores; no (rows,
#: length) of it in a committed top-k CSV (tests/test_topk_engines.py checks); SGLang's rows of GRID12_SGL_CONTROLS are
#: its controls
GRID12_SPLIT512 = ([("recorded", r, n) for r, n in ((14, 215000), (17, 265000), (22, 245000), (25, 205000),
                                                   (31, 285000), (36, 225000), (43, 260000), (48, 215000),
                                                   (54, 295000), (59, 250000))]
                   + [("gaussian", r, n) for r, n in ((33, 270000), (46, 240000))])
GRID12_SINGLE512 = [("recorded", r, n) for r, n in ((200, 30000), (400, 55000), (150, 120000))]
GRID12_NARROW = [("recorded", 1700, 8800), ("gaussian", 600, 11800)]
GRID12_WIDE = [("recorded", 44, 480000), ("recorded", 75, 650000)]
GRID12_PREFILL = ([("recorded", r, n) for r, n in ((700, 18000), (1050, 24000), (1600, 33000), (2400, 17000),
                                                   (850, 58000), (1300, 46000), (3000, 22000), (540, 41000),
                                                   (900, 95000), (1500, 160000), (2600, 4000))]
                  + [("gaussian", r, n) for r, n in ((1900, 30000), (800, 62000))])
GRID12 = GRID12_SPLIT512 + GRID12_SINGLE512 + GRID12_NARROW + GRID12_WIDE
GRID12_SGL_CONTROLS = (("recorded", 31, 285000), ("recorded", 48, 215000), ("recorded", 75, 650000),
                       ("recorded", 1050, 24000), ("recorded", 1600, 33000), ("recorded", 1700, 8800))
GRID12_PREDICTION = "topk_engines_grid12_prediction_2026-11-27.csv"
GRID12_MEASURED = "topk_engines_nvidia-h100-80gb-hbm3_2026-11-27_grid12.csv"


def grid12_frame() -> pd.DataFrame:
    """GRID12's rows: TensorRT-LLM's decode dispatch at GRID12's shapes, its prefill entry at GRID12_PREFILL's, SGLang
    at GRID12_SGL_CONTROLS."""
    return engines_frame(GRID12, GRID12_PREFILL, GRID12_SGL_CONTROLS)


def regime12(kernel, rows, n) -> np.ndarray:
    """GRID12's regimes: 512-thread split launches of several CTAs per SM, single 512-thread CTAs at > 132 rows, the
    prefill entry at mid rows (16K-64K) and at long / short rows, narrow 256-thread short rows, multi-wave 1024-thread
    split launches; SGLang's controls (long / short-mid rows)."""
    kernel, rows, n = np.asarray(kernel), np.asarray(rows), np.asarray(n)
    pf = kernel == CSV_KERNEL["trtllm_prefill"]
    th = TK.block_threads(rows, n)
    nb = TK.blocks_per_row(rows, n)
    trt = np.where(pf, np.where((n >= 16000) & (n <= 64000), "prefill entry, mid rows 16K-64K",
                                "prefill entry, long / short rows"),
                   np.where(th > 512, "split, 1024-thread CTAs, several waves",
                            np.where(th < 512, "narrow 256-thread CTAs, short rows",
                                     np.where(nb > 1, "split, 512-thread CTAs, 2-5 per SM",
                                              "single 512-thread CTAs, 150-400 rows"))))
    sg = np.where(n > 65536, "controls, long rows", "controls, short / mid rows")
    return np.where(kernel == CSV_KERNEL["sglang"], sg, trt)


def predict_grid12(hw: HardwareSpec, main_csv: str | Path, out: str | Path | None = None) -> pd.DataFrame:
    """GRID12 priced by this model (`pred_us`: topk_trtllm.add_priced_ops with REG_RESIDENT; the prefill entry's launch
    for trt_topk_pf) beside main's product price read from `main_csv` (`pred_main_us`, made by the model at main
    ea0997d with lab/kernels/price_topk_grid12_main.py)."""
    mp = pd.read_csv(main_csv)
    t = grid12_frame()
    _price_mixed(t, hw)
    t["regime"] = regime12(t["kernel"], t["rows"], t["n"])
    sg = (t["kernel"] == CSV_KERNEL["sglang"]).to_numpy()
    pf = (t["kernel"] == CSV_KERNEL["trtllm_prefill"]).to_numpy()
    t["blocks_per_row"] = np.where(sg | pf, 1, TK.blocks_per_row(t["rows"], t["n"]))
    t["threads"] = np.where(sg, 1024, np.where(pf, 512, TK.block_threads(t["rows"], t["n"])))
    t = t.merge(mp[F.SHAPE_KEYS + ["pred_main_us"]], on=F.SHAPE_KEYS, how="left")
    res = t[F.SHAPE_KEYS + ["regime", "blocks_per_row", "threads", "sweeps", "pred_main_us", "pred_us"]]
    if out is not None:
        res.to_csv(out, index=False, float_format="%.4f")
    return res


def measured12(pred_csv: str | Path | None = None, meas_csv: str | Path | None = None) -> pd.DataFrame:
    """The committed grid12 prediction joined to its measurement (`wrong` = the selection check failed, time kept)."""
    return measured10(pred_csv or F.DATA_DIR / GRID12_PREDICTION, meas_csv or F.DATA_DIR / GRID12_MEASURED)


def grid12_accuracy(by_dist: bool = False) -> pd.DataFrame:
    """grid12 per kernel x regime, every row BLIND: TensorRT-LLM (both entries) by main ea0997d's product price
    (`main`) and this one (`new`); SGLang's controls by its committed model (`main`)."""
    groups = (((CSV_KERNEL["trtllm"], CSV_KERNEL["trtllm_prefill"]), "trtllm"), ((CSV_KERNEL["sglang"],), "sglang"))
    return _grid_accuracy(measured12(), 12, groups, (("pred_us", "new"),), "new", by_dist)


# --- the co-resident share of the kind's 512-thread CTAs (topk_trtllm.PAIR_SHARES), fitted on a named scan ---
#: the named fit rows of topk_trtllm.PAIR_SHARES, measured in their own device call (a scan where one variable moves:
#: the 512-thread CTAs an SM runs over the launch, ctas_per_sm): the decode dispatch's single CTAs (topKPerRowDecode<512>,
#: 47 registers: two resident per SM) and the prefill entry's (topKPerRowPrefill<512>, 51) at fixed row lengths 55K /
#: 120K / 250K with 132 / 264 / 396 / 528 / 1020 rows (1, 2, 3, 4, 8 CTAs on the busiest SM; 1020 < 1024 rows keeps
#: the decode CTAs 512-thread, useNarrowBlock), and 512-thread split launches (topKPerRowDecodeFused<512>, 64
#: registers; slices < 30,000 scores) of 32-63 rows x 200K-290K (3-5 CTAs per SM); recorded and gaussian scores
#: (kernel, dist, rows, n)
_SCAN_SINGLE = ([("recorded", r, n) for n in (55000, 120000, 250000) for r in (132, 264, 396, 528, 1020)]
                + [("gaussian", r, n) for n in (55000, 250000) for r in (132, 264, 528, 1020)])
TRT_PAIR_FIT = ([("trt_topk", d, r, n) for d, r, n in _SCAN_SINGLE]
                + [("trt_topk_pf", d, r, n) for d, r, n in _SCAN_SINGLE]
                + [("trt_topk", "recorded", r, n) for n in (200000, 245000, 290000) for r in (32, 40, 48, 56, 63)]
                + [("trt_topk", "gaussian", r, 260000) for r in (36, 52, 63)])
PAIR_SCAN_SHAPES = "topk_engines_pairscan_shapes_2026-11-27.csv"
PAIR_SCAN_MEASURED = "topk_engines_nvidia-h100-80gb-hbm3_2026-11-27_pairscan.csv"


def pair_scan_frame() -> pd.DataFrame:
    """TRT_PAIR_FIT as a frame (F.SHAPE_KEYS: family, kernel, dist, rows, n, k), the device script's shape list."""
    return pd.DataFrame([{"family": "topk", "kernel": k, "dist": d, "rows": r, "n": n, "k": 2048}
                         for k, d, r, n in TRT_PAIR_FIT])


def pair_scan_measured() -> pd.DataFrame:
    """TRT_PAIR_FIT's measured rows (the committed scan CSV), in TRT_PAIR_FIT's order."""
    m = pd.read_csv(F.DATA_DIR / PAIR_SCAN_MEASURED)
    t = pair_scan_frame().merge(m[F.SHAPE_KEYS + ["median_us"]], on=F.SHAPE_KEYS, how="left")
    assert t["median_us"].notna().all() and len(t) == len(TRT_PAIR_FIT), len(t)
    return t


@_fitted_before_grid15
def fit_pair_shares(hw: HardwareSpec) -> dict:
    """topk_trtllm.PAIR_SHARES (a co-resident 512-thread CTA's share of its sweep rounds and of its on-chip job, per
    path: the single-CTA decode / prefill launches and the split launches) by least squares on log time over
    TRT_PAIR_FIT's rows of that path (every other term fixed at its shipped value)."""
    from scipy.optimize import least_squares

    t0 = pair_scan_measured()
    split = (TK.blocks_per_row(t0["rows"], t0["n"]) > 1) & (t0["kernel"] == CSV_KERNEL["trtllm"]).to_numpy()
    out: dict = {}
    for path, m in (("single", ~split), ("split", split)):
        t = t0[m].reset_index(drop=True)
        y = np.log(t["median_us"].to_numpy(float))

        def res(x, t=t, y=y, path=path):
            ps = {p: {"sweep": 0.0, "job": 0.0} for p in ("single", "split")}
            ps[path] = {"sweep": float(x[0]), "job": float(x[1])}
            return np.log(np.maximum(predict_trtllm(t, hw, pair_shares=ps), 1e-3)) - y
        r = least_squares(res, [0.3, 0.8], bounds=([0.0, 0.0], [1.5, 1.5]), diff_step=0.02, xtol=1e-3)
        out[f"pair_{path}_sweep_share"] = round(float(r.x[0]), 3)
        out[f"pair_{path}_job_share"] = round(float(r.x[1]), 3)
        out[f"pair_{path}_fit_rows"] = int(m.sum())
        out[f"pair_{path}_rms_log_error"] = round(float(np.sqrt(np.mean(r.fun ** 2))), 4)
    return out


# --- the co-resident share fitted on TRT_PAIR_FIT (topk_trtllm.PAIR_SHARES), judged blind on GRID13 ---
#: grid 13: TensorRT-LLM's decode dispatch with single 512-thread CTAs at 180-850 rows (2-7 CTAs per SM; long rows
#: 75K-300K and mid rows 21K-48K), 512-thread split launches of 2-5 CTAs per SM (19-61 rows of 205K-280K), its prefill
#: entry at long rows (> 64K: 600-2200 rows) and mid rows (controls), narrow 256-thread short rows and multi-wave
#: 1024-thread split launches (controls of what the share does not move); recorded and gaussian scores; no (scores,
#: rows, length) of it in a committed top-k CSV (tests/test_topk_engines.py checks); SGLang's rows of
#: GRID13_SGL_CONTROLS are its controls
GRID13_SINGLE512 = ([("recorded", r, n) for r, n in ((180, 75000), (300, 140000), (350, 42000), (450, 95000),
                                                    (600, 200000), (700, 38000), (850, 160000), (240, 300000),
                                                    (250, 25000), (420, 21000), (520, 33000))]
                    + [("gaussian", r, n) for r, n in ((330, 85000), (760, 130000))])
GRID13_SPLIT512 = ([("recorded", r, n) for r, n in ((19, 230000), (28, 275000), (34, 205000), (38, 255000),
                                                   (45, 280000), (51, 225000), (61, 265000))]
                   + [("gaussian", r, n) for r, n in ((26, 250000), (57, 215000))])
GRID13_NARROW = ([("recorded", r, n) for r, n in ((900, 10500), (1500, 6600), (2500, 9200))]
                 + [("gaussian", 1100, 7800)])
GRID13_WIDE = [("recorded", 36, 530000), ("recorded", 90, 560000)]
GRID13_PREFILL = ([("recorded", r, n) for r, n in ((700, 80000), (1100, 130000), (1800, 70000), (2200, 110000),
                                                   (600, 210000), (800, 26000), (1250, 48000), (2000, 35000))]
                  + [("gaussian", r, n) for r, n in ((1400, 90000), (1600, 20000))])
GRID13 = GRID13_SINGLE512 + GRID13_SPLIT512 + GRID13_NARROW + GRID13_WIDE
GRID13_SGL_CONTROLS = (("recorded", 45, 280000), ("recorded", 36, 530000), ("recorded", 450, 95000),
                       ("recorded", 800, 26000), ("recorded", 1500, 6600), ("recorded", 2000, 35000))
GRID13_PREDICTION = "topk_engines_grid13_prediction_2026-11-27.csv"
GRID13_MEASURED = "topk_engines_nvidia-h100-80gb-hbm3_2026-11-27_grid13.csv"


def grid13_frame() -> pd.DataFrame:
    """GRID13's rows: TensorRT-LLM's decode dispatch at GRID13's shapes, its prefill entry at GRID13_PREFILL's, SGLang
    at GRID13_SGL_CONTROLS."""
    return engines_frame(GRID13, GRID13_PREFILL, GRID13_SGL_CONTROLS)


def regime13(kernel, rows, n) -> np.ndarray:
    """GRID13's regimes: single 512-thread decode CTAs at > 132 rows (long rows > 64K / mid rows), 512-thread split
    launches of several CTAs per SM, the prefill entry at long rows (> 64K) and mid rows (16K-64K), narrow 256-thread
    short rows, multi-wave 1024-thread split launches; SGLang's controls (long / short-mid rows)."""
    kernel, rows, n = np.asarray(kernel), np.asarray(rows), np.asarray(n)
    pf = kernel == CSV_KERNEL["trtllm_prefill"]
    th = TK.block_threads(rows, n)
    nb = TK.blocks_per_row(rows, n)
    trt = np.where(pf, np.where(n > 65536, "prefill entry, long rows > 64K", "prefill entry, mid rows 16K-64K"),
                   np.where(th > 512, "split, 1024-thread CTAs, several waves",
                            np.where(th < 512, "narrow 256-thread CTAs, short rows",
                                     np.where(nb > 1, "split, 512-thread CTAs, 2-5 per SM",
                                              np.where(n > 65536, "single 512-thread CTAs, long rows > 64K",
                                                       "single 512-thread CTAs, mid rows 21K-48K")))))
    sg = np.where(n > 65536, "controls, long rows", "controls, short / mid rows")
    return np.where(kernel == CSV_KERNEL["sglang"], sg, trt)


def predict_grid13(hw: HardwareSpec, main_csv: str | Path, out: str | Path | None = None) -> pd.DataFrame:
    """GRID13 priced by this model (`pred_us`: topk_trtllm.add_priced_ops with PAIR_SHARES; the prefill entry's launch
    for trt_topk_pf) beside main's product price read from `main_csv` (`pred_main_us`, made by the model at main
    08cf44f with lab/kernels/price_topk_grid13_main.py)."""
    t = grid13_frame()
    _price_mixed(t, hw)
    t["regime"] = regime13(t["kernel"], t["rows"], t["n"])
    sg = (t["kernel"] == CSV_KERNEL["sglang"]).to_numpy()
    pf = (t["kernel"] == CSV_KERNEL["trtllm_prefill"]).to_numpy()
    t["blocks_per_row"] = np.where(sg | pf, 1, TK.blocks_per_row(t["rows"], t["n"]))
    t["threads"] = np.where(sg, 1024, np.where(pf, 512, TK.block_threads(t["rows"], t["n"])))
    return _beside_main(t, main_csv, out)


def measured13(pred_csv: str | Path | None = None, meas_csv: str | Path | None = None) -> pd.DataFrame:
    """The committed grid13 prediction joined to its measurement (`wrong` = the selection check failed, time kept)."""
    return measured10(pred_csv or F.DATA_DIR / GRID13_PREDICTION, meas_csv or F.DATA_DIR / GRID13_MEASURED)


def grid13_accuracy(by_dist: bool = False) -> pd.DataFrame:
    """grid13 per kernel x regime, every row BLIND: TensorRT-LLM (both entries) by main 08cf44f's product price
    (`main`) and this one (`new`); SGLang's controls by its committed model (`main`)."""
    groups = (((CSV_KERNEL["trtllm"], CSV_KERNEL["trtllm_prefill"]), "trtllm"), ((CSV_KERNEL["sglang"],), "sglang"))
    return _grid_accuracy(measured13(), 13, groups, (("pred_us", "new"),), "new", by_dist)


# --- the co-resident single CTAs' L2-hit share (topk_trtllm.PAIR_L2_SHARE), fitted on named rows, judged on GRID14 ---
#: the named fit rows of topk_trtllm.PAIR_L2_SHARE (measured before, LOOKED-AT, named as fit rows before any new
#: measurement): grid 13's single 512-thread CTAs at mid rows 21K-48K, the decode dispatch (5) and the prefill entry (4),
#: whose rows in flight fit the L2 (the candidate shares priced them -28..-10 % fast), and grid 12's decode 200 x 30K
#: (kernel, dist, rows, n, grid)
TRT_PAIR_L2_FIT = ([("trt_topk", "recorded", r, n, 13) for r, n in ((350, 42000), (700, 38000), (250, 25000),
                                                                  (420, 21000), (520, 33000))]
                   + [("trt_topk_pf", "recorded", r, n, 13) for r, n in ((800, 26000), (1250, 48000), (2000, 35000))]
                   + [("trt_topk_pf", "gaussian", 1600, 20000, 13), ("trt_topk", "recorded", 200, 30000, 12)])

#: more named fit rows of PAIR_L2_SHARE, measured in their own device call AFTER being named here (a scan where the rows
#: in flight cross the L2: single 512-thread CTAs of the decode dispatch and the prefill entry at 20K / 32K / 45K x 132 /
#: 264 / 396 / 528 / 1020 rows = 1-8 CTAs per SM, recorded scores, and gaussian 264 / 528 x 32K; rows in flight 21-48
#: MB): (kernel, dist, rows, n)
_L2_SCAN = ([("recorded", r, n) for n in (20000, 32000, 45000) for r in (132, 264, 396, 528, 1020)]
            + [("gaussian", r, 32000) for r in (264, 528)])
TRT_PAIR_L2_SCAN = ([("trt_topk", d, r, n) for d, r, n in _L2_SCAN]
                    + [("trt_topk_pf", d, r, n) for d, r, n in _L2_SCAN])
PAIR_L2_SCAN_MEASURED = "topk_engines_nvidia-h100-80gb-hbm3_2026-11-27_pairl2scan.csv"


def pair_l2_scan_frame() -> pd.DataFrame:
    """TRT_PAIR_L2_SCAN as a frame (F.SHAPE_KEYS), the device script's shape list."""
    return pd.DataFrame([{"family": "topk", "kernel": k, "dist": d, "rows": r, "n": n, "k": 2048}
                         for k, d, r, n in TRT_PAIR_L2_SCAN])


def pair_l2_fit_measured(with_scan: bool = True) -> pd.DataFrame:
    """TRT_PAIR_L2_FIT's measured rows (grid 13's and grid 12's committed CSVs), in its order, then TRT_PAIR_L2_SCAN's
    (grid 0) where its CSV is committed and `with_scan`."""
    ms = {13: measured13(), 12: measured12()}
    rows = []
    for k, d, r, n, g in TRT_PAIR_L2_FIT:
        m = ms[g]
        hit = m[(m["kernel"] == k) & (m["dist"] == d) & (m["rows"] == r) & (m["n"] == n)]
        assert len(hit) == 1, (k, d, r, n, g)
        rows.append({"family": "topk", "kernel": k, "dist": d, "rows": r, "n": n, "k": 2048, "grid": g,
                     "median_us": float(hit["median_us"].iloc[0])})
    out = pd.DataFrame(rows)
    if with_scan and (F.DATA_DIR / PAIR_L2_SCAN_MEASURED).is_file():
        m = pd.read_csv(F.DATA_DIR / PAIR_L2_SCAN_MEASURED)
        sc = pair_l2_scan_frame().merge(m[F.SHAPE_KEYS + ["median_us"]], on=F.SHAPE_KEYS, how="left")
        assert sc["median_us"].notna().all(), int(sc["median_us"].isna().sum())
        out = pd.concat([out, sc.assign(grid=0)], ignore_index=True)
    return out


@_fitted_before_grid15
def fit_pair_l2(hw: HardwareSpec, with_scan: bool = True) -> dict:
    """topk_trtllm.PAIR_L2_SHARE / PAIR_L2_SHARE_PREFILL (the L2-hit share of a co-resident single CTA's sweep rounds and
    job, the decode dispatch's and the prefill entry's, each on its own TRT_PAIR_L2_FIT rows) by least squares on log
    time (every other term at its shipped value, the candidate's pair shares), bounded 0..1."""
    from scipy.optimize import least_squares

    t0 = pair_l2_fit_measured(with_scan)
    out: dict = {}
    for key, kern in (("l2_sweep", CSV_KERNEL["trtllm"]), ("l2_sweep_prefill", CSV_KERNEL["trtllm_prefill"])):
        t = t0[t0["kernel"] == kern].reset_index(drop=True)
        y = np.log(t["median_us"].to_numpy(float))

        def res(x, t=t, y=y, key=key):
            ps = {p: dict(v) for p, v in TK.PAIR_SHARES_L2.items()}
            ps["single"][key] = float(x[0])
            return np.log(np.maximum(predict_trtllm(t, hw, pair_shares=ps), 1e-3)) - y
        r = least_squares(res, [0.5], bounds=([0.0], [1.0]), diff_step=0.02, xtol=1e-4)
        tag = "pair_l2" + ("_prefill" if "prefill" in key else "")
        out[f"{tag}_share"] = round(float(r.x[0]), 3)
        out[f"{tag}_fit_rows"] = int(len(t))
        out[f"{tag}_rms_log_error"] = round(float(np.sqrt(np.mean(r.fun ** 2))), 4)
        out[f"{tag}_rms_log_error_at_0"] = round(float(np.sqrt(np.mean(res([0.0]) ** 2))), 4)
    return out


#: grid 14: TensorRT-LLM's decode dispatch with single 512-thread CTAs at mid rows 16K-60K (the L2 term's regime: rows
#: in flight inside or across the L2) and long rows 64K-300K, 160-900 rows (2-7 CTAs per SM), 512-thread split launches
#: (22-63 rows x 210K-295K), its prefill entry at long rows (> 64K) and mid rows; recorded and gaussian scores; no (scores,
#: rows, length) of it in a committed top-k CSV (tests/test_topk_engines.py checks); SGLang's rows of
#: GRID14_SGL_CONTROLS are its controls
GRID14_SINGLE_MID = ([("recorded", r, n) for r, n in ((160, 47000), (230, 36000), (300, 28000), (380, 18000),
                                                     (460, 52000), (500, 24000), (610, 31000), (680, 17000),
                                                     (790, 44000), (880, 27000))]
                     + [("gaussian", r, n) for r, n in ((240, 40000), (560, 22000))])
GRID14_SINGLE_LONG = ([("recorded", r, n) for r, n in ((200, 110000), (370, 70000), (510, 180000), (640, 90000),
                                                      (720, 240000), (900, 68000))]
                      + [("gaussian", 280, 150000)])
GRID14_SPLIT512 = ([("recorded", r, n) for r, n in ((22, 240000), (31, 215000), (42, 295000), (48, 210000),
                                                   (55, 250000))]
                   + [("gaussian", 63, 235000)])
GRID14_PREFILL = ([("recorded", r, n) for r, n in ((650, 100000), (1300, 75000), (1900, 150000), (900, 30000),
                                                   (1700, 42000))]
                  + [("gaussian", 2600, 19000)])
GRID14 = GRID14_SINGLE_MID + GRID14_SINGLE_LONG + GRID14_SPLIT512
GRID14_SGL_CONTROLS = (("recorded", 40, 240000), ("recorded", 300, 28000), ("recorded", 900, 68000),
                       ("recorded", 680, 17000), ("recorded", 1700, 42000), ("recorded", 2600, 19000))
GRID14_PREDICTION = "topk_engines_grid14_prediction_2026-11-27.csv"
GRID14_MEASURED = "topk_engines_nvidia-h100-80gb-hbm3_2026-11-27_grid14.csv"


def grid14_frame() -> pd.DataFrame:
    """GRID14's rows: TensorRT-LLM's decode dispatch at GRID14's shapes, its prefill entry at GRID14_PREFILL's, SGLang
    at GRID14_SGL_CONTROLS."""
    return engines_frame(GRID14, GRID14_PREFILL, GRID14_SGL_CONTROLS)


def regime14(kernel, rows, n) -> np.ndarray:
    """GRID14's regimes: single 512-thread decode CTAs at 2-7 per SM (mid rows 16K-64K / long rows > 64K), 512-thread
    split launches, the prefill entry at long rows (> 64K) and mid rows; SGLang's controls (long / short-mid rows)."""
    kernel, rows, n = np.asarray(kernel), np.asarray(rows), np.asarray(n)
    pf = kernel == CSV_KERNEL["trtllm_prefill"]
    nb = TK.blocks_per_row(rows, n)
    trt = np.where(pf, np.where(n > 65536, "prefill entry, long rows > 64K", "prefill entry, mid rows 16K-64K"),
                   np.where(nb > 1, "split, 512-thread CTAs, 2-5 per SM",
                            np.where(n > 65536, "single 512-thread CTAs, long rows > 64K",
                                     "single 512-thread CTAs, mid rows 16K-64K")))
    sg = np.where(n > 65536, "controls, long rows", "controls, short / mid rows")
    return np.where(kernel == CSV_KERNEL["sglang"], sg, trt)


def predict_grid14(hw: HardwareSpec, out: str | Path | None = None) -> pd.DataFrame:
    """GRID14 priced three ways: `pred_main_us` main 2bec4e2's product price (topk_trtllm.PAIR_SHARES None: the assumed
    REG_RESIDENT rule; the same code path, checked against main's checkout by lab/kernels/price_topk_grid14_main.py),
    `pred_cand_us` the measured pair shares alone (PAIR_SHARES_CANDIDATE), `pred_us` the candidate with the L2 term
    (PAIR_SHARES_L2); SGLang's controls by its committed model in all three."""
    t = grid14_frame()
    sg = _price_mixed(t, hw)
    t["pred_main_us"] = t["pred_us"]
    tr = t[~sg].reset_index(drop=True)
    for col, ps in (("pred_cand_us", TK.PAIR_SHARES_CANDIDATE), ("pred_us", TK.PAIR_SHARES_L2)):
        t[col] = t["pred_main_us"]
        t.loc[~sg, col] = predict_trtllm(tr, hw, pair_shares=ps)
    t["regime"] = regime14(t["kernel"], t["rows"], t["n"])
    pf = (t["kernel"] == CSV_KERNEL["trtllm_prefill"]).to_numpy()
    t["blocks_per_row"] = np.where(sg | pf, 1, TK.blocks_per_row(t["rows"], t["n"]))
    t["threads"] = np.where(sg, 1024, np.where(pf, 512, TK.block_threads(t["rows"], t["n"])))
    t["ctas_per_sm"] = np.where(sg, np.ceil(t["rows"] / hw.units), TK.ctas_per_sm(t["rows"], t["n"], hw.units, False))
    t.loc[pf, "ctas_per_sm"] = np.ceil(t.loc[pf, "rows"] / hw.units)
    res = t[F.SHAPE_KEYS + ["regime", "blocks_per_row", "threads", "ctas_per_sm", "sweeps", "pred_main_us",
                            "pred_cand_us", "pred_us"]]
    if out is not None:
        res.to_csv(out, index=False, float_format="%.4f")
    return res


def measured14(pred_csv: str | Path | None = None, meas_csv: str | Path | None = None) -> pd.DataFrame:
    """The committed grid14 prediction joined to its measurement (`wrong` = the selection check failed, time kept)."""
    return measured10(pred_csv or F.DATA_DIR / GRID14_PREDICTION, meas_csv or F.DATA_DIR / GRID14_MEASURED)


def grid14_accuracy(by_dist: bool = False, shipped: str = "main") -> pd.DataFrame:
    """grid14 per kernel x regime, every row BLIND: TensorRT-LLM (both entries) by main 2bec4e2's product price
    (`main`), the measured pair shares alone (`cand`) and with the L2 term (`l2`); SGLang's controls by its committed
    model (`main`); the goal judged on the `shipped` tag."""
    groups = (((CSV_KERNEL["trtllm"], CSV_KERNEL["trtllm_prefill"]), "trtllm"), ((CSV_KERNEL["sglang"],), "sglang"))
    return _grid_accuracy(measured14(), 14, groups, (("pred_cand_us", "cand"), ("pred_us", "l2")), shipped, by_dist)


# --- the sharper closed-loop knee where an SM keeps two or more CTAs resident (hwmodels/roofline.py
# CHAIN_QUEUED_P_SHARED; topk_trtllm.QUEUE_P_SHARED_CANDIDATE), fitted on looked-at rows, judged on GRID15 ---
#: the looked-at rows QUEUE_P_SHARED_CANDIDATE is fitted on: every TensorRT-LLM row of grids 11-14 (both entries)
#: but the narrow 256-thread launches (a regime the knee does not address), measured before, named as fit rows
QUEUE_P_FIT_GRIDS = (11, 12, 13, 14)
#: the exponents scanned (the shipped CHAIN_QUEUED_P = 1.5 first)
QUEUE_P_SCAN = (1.5, 1.75, 2.0, 2.25, 2.5, 3.0, 4.0, 6.0)


class queue_p_shared:
    """Context manager: price with hwmodels.roofline.CHAIN_QUEUED_P_SHARED = `p` (None = the shipped rule), restored
    on exit."""

    def __init__(self, p: float | None):
        self.p = p

    def __enter__(self):
        import hwmodels.roofline as R

        self.old = R.CHAIN_QUEUED_P_SHARED
        R.CHAIN_QUEUED_P_SHARED = self.p
        return self

    def __exit__(self, *exc):
        import hwmodels.roofline as R

        R.CHAIN_QUEUED_P_SHARED = self.old
        return False


def queue_p_fit_rows() -> pd.DataFrame:
    """QUEUE_P_FIT_GRIDS' measured TensorRT-LLM rows, narrow 256-thread launches left out (`grid` added)."""
    ms = {11: measured11, 12: measured12, 13: measured13, 14: measured14}
    parts = []
    for g in QUEUE_P_FIT_GRIDS:
        m = ms[g]()
        m = m[m["kernel"].isin((CSV_KERNEL["trtllm"], CSV_KERNEL["trtllm_prefill"]))].copy()
        pf = (m["kernel"] == CSV_KERNEL["trtllm_prefill"]).to_numpy()
        narrow = ~pf & (TK.block_threads(m["rows"], m["n"]) < TK.THREADS)
        parts.append(m[~narrow].assign(grid=g)[F.SHAPE_KEYS + ["grid", "median_us"]])
    return pd.concat(parts, ignore_index=True)


def fit_queue_p_shared(hw: HardwareSpec, scan=QUEUE_P_SCAN) -> dict:
    """topk_trtllm.QUEUE_P_SHARED_CANDIDATE: the scanned exponent of least rms log error over queue_p_fit_rows, priced
    with the measured pair shares and the L2 term (PAIR_SHARES_L2); every other term at its shipped value."""
    t = queue_p_fit_rows()
    y = np.log(t["median_us"].to_numpy(float))
    rms = {}
    for p in scan:
        with queue_p_shared(p):
            rms[p] = float(np.sqrt(np.mean((np.log(predict_trtllm(t, hw, pair_shares=TK.PAIR_SHARES_L2)) - y) ** 2)))
    best = min(rms, key=rms.get)
    return {"queue_p_shared": best, "queue_p_fit_rows": int(len(t)),
            "queue_p_rms_log_error": round(rms[best], 4), "queue_p_rms_log_error_at_1_5": round(rms[1.5], 4)}


#: grid 15: TensorRT-LLM's four regimes still missed after grid 14 and controls: single 512-thread decode CTAs at long
#: rows (> 64K) at 2-7 CTAs per SM, at mid rows (16K-64K) with an odd count of CTAs per SM (3 / 5 / 7) and, as a
#: control, an even one, narrow 256-thread short rows (520-3000 rows of 6K-11K), the prefill entry at long rows (> 64K)
#: and, as a control, mid rows, split launches of 512- and 1024-thread slices as controls; recorded and gaussian scores;
#: no (scores, rows, length) of it in a committed top-k CSV (tests/test_topk_engines.py checks). No SGLang rows (its
#: .so was not rebuilt this session)
GRID15_SINGLE_LONG = ([("recorded", r, n) for r, n in ((170, 260000), (250, 90000), (410, 125000), (350, 200000),
                                                      (560, 78000), (700, 105000), (830, 72000))]
                      + [("gaussian", 450, 170000)])
GRID15_SINGLE_MID_ODD = ([("recorded", r, n) for r, n in ((330, 19000), (290, 33000), (620, 23000), (600, 45000),
                                                         (900, 26000), (850, 35000))]
                         + [("gaussian", 310, 26000)])
GRID15_SINGLE_MID_EVEN = [("recorded", r, n) for r, n in ((470, 30000), (255, 50000), (760, 40000))]
GRID15_NARROW = ([("recorded", r, n) for r, n in ((520, 9000), (800, 8000), (1150, 6000), (1800, 10000), (3000, 7500))]
                 + [("gaussian", r, n) for r, n in ((700, 10000), (1400, 11000))])
GRID15_SPLIT = [("recorded", r, n) for r, n in ((35, 220000), (52, 270000), (40, 600000), (16, 700000))]
GRID15_PREFILL = ([("recorded", r, n) for r, n in ((500, 120000), (1000, 85000), (1600, 68000), (2400, 100000),
                                                   (750, 190000))]
                  + [("gaussian", 1200, 110000)] + [("recorded", r, n) for r, n in ((800, 36000), (1500, 25000))])
GRID15 = GRID15_SINGLE_LONG + GRID15_SINGLE_MID_ODD + GRID15_SINGLE_MID_EVEN + GRID15_NARROW + GRID15_SPLIT
GRID15_PREDICTION = "topk_engines_grid15_prediction_2026-11-27.csv"
GRID15_MEASURED = "topk_engines_nvidia-h100-80gb-hbm3_2026-11-27_grid15.csv"


def grid15_frame() -> pd.DataFrame:
    """GRID15's rows: TensorRT-LLM's decode dispatch at GRID15's shapes, its prefill entry at GRID15_PREFILL's."""
    return engines_frame(GRID15, GRID15_PREFILL)


def regime15(kernel, rows, n, sms: float = 132.0) -> np.ndarray:
    """GRID15's regimes: single 512-thread decode CTAs at long rows (> 64K) / mid rows with an odd / even count of CTAs
    per SM, narrow 256-thread short rows, the prefill entry at long (> 64K) / mid rows, split launches (controls)."""
    kernel, rows, n = np.asarray(kernel), np.asarray(rows), np.asarray(n)
    pf = kernel == CSV_KERNEL["trtllm_prefill"]
    th = TK.block_threads(rows, n)
    nb = TK.blocks_per_row(rows, n)
    odd = np.ceil(rows / sms) % 2 == 1
    return np.where(pf, np.where(n > 65536, "prefill entry, long rows > 64K", "prefill entry, mid rows (control)"),
                    np.where(nb > 1, "split launches, 512- / 1024-thread slices (controls)",
                             np.where(th < 512, "narrow 256-thread CTAs, short rows",
                                      np.where(n > 65536, "single 512-thread CTAs, long rows > 64K",
                                               np.where(odd, "single 512-thread CTAs, mid rows, odd CTAs per SM",
                                                        "single 512-thread CTAs, mid rows, even CTAs per SM "
                                                        "(control)")))))


def _launch_columns(t: pd.DataFrame, hw: HardwareSpec, regime, prices: list, out: str | Path | None) -> pd.DataFrame:
    """A priced TensorRT-LLM grid (grids 15-18): its regime (`regime(kernel, rows, n, sms)`), each launch's blocks per
    row, threads and CTAs per SM (the prefill entry: one 512-thread CTA a row), the shape keys and the `prices`
    columns; written to `out` when given."""
    t["regime"] = regime(t["kernel"], t["rows"], t["n"], hw.units)
    pf = (t["kernel"] == CSV_KERNEL["trtllm_prefill"]).to_numpy()
    t["blocks_per_row"] = np.where(pf, 1, TK.blocks_per_row(t["rows"], t["n"]))
    t["threads"] = np.where(pf, 512, TK.block_threads(t["rows"], t["n"]))
    t["ctas_per_sm"] = np.where(pf, np.ceil(t["rows"] / hw.units), TK.ctas_per_sm(t["rows"], t["n"], hw.units, False))
    res = t[F.SHAPE_KEYS + ["regime", "blocks_per_row", "threads", "ctas_per_sm", "sweeps"] + list(prices)]
    if out is not None:
        res.to_csv(out, index=False, float_format="%.4f")
    return res


def predict_grid15(hw: HardwareSpec, out: str | Path | None = None) -> pd.DataFrame:
    """GRID15 priced three ways: `pred_main_us` main 8c86417's product price (PAIR_SHARES None, CHAIN_QUEUED_P_SHARED
    None), `pred_q_us` main's rule with the sharper knee alone (QUEUE_P_SHARED_CANDIDATE), `pred_us` THE candidate: the
    measured pair shares with the L2 term (PAIR_SHARES_L2) and the sharper knee."""
    t = grid15_frame()
    with as_fitted():
        t["pred_main_us"] = predict_trtllm(t, hw)
        with queue_p_shared(TK.QUEUE_P_SHARED_CANDIDATE):
            t["pred_q_us"] = predict_trtllm(t, hw)
    # the candidate as it was before grid 16's narrow rules (NARROW_REG off, no shares, no per-CTA rule)
    with queue_p_shared(TK.QUEUE_P_SHARED_CANDIDATE), narrow_rule(False, None):
        t["pred_us"] = predict_trtllm(t, hw, pair_shares=TK.PAIR_SHARES_L2)
    return _launch_columns(t, hw, regime15, ["pred_main_us", "pred_q_us", "pred_us"], out)


def measured15(pred_csv: str | Path | None = None, meas_csv: str | Path | None = None) -> pd.DataFrame:
    """The committed grid15 prediction joined to its measurement (`wrong` = the selection check failed, time kept)."""
    return measured10(pred_csv or F.DATA_DIR / GRID15_PREDICTION, meas_csv or F.DATA_DIR / GRID15_MEASURED)


def grid15_accuracy(by_dist: bool = False, shipped: str = "main") -> pd.DataFrame:
    """grid15 per regime, every row BLIND: TensorRT-LLM (both entries) by main 8c86417's product price (`main`), main's
    rule with the sharper knee (`q`) and the candidate (`cand`: pair shares + L2 term + sharper knee); the goal judged on
    the `shipped` tag."""
    groups = (((CSV_KERNEL["trtllm"], CSV_KERNEL["trtllm_prefill"]), "trtllm"),)
    return _grid_accuracy(measured15(), 15, groups, (("pred_q_us", "q"), ("pred_us", "cand")), shipped, by_dist)


# --- the narrow 256-thread launches (useNarrowBlock: topKPerRowDecode<256>) at their register residency, judged on
# GRID16 (topk_trtllm.NARROW_REG, NARROW_SHARES) ---
class narrow_rule:
    """Context manager: price the narrow 256-thread launches with topk_trtllm.NARROW_REG = `reg` and NARROW_SHARES =
    `shares` (None = the shipped rule's), restored on exit."""

    def __init__(self, reg: bool, shares: dict | None = None):
        self.reg, self.shares = reg, shares

    def __enter__(self):
        self.old = (TK.NARROW_REG, TK.NARROW_SHARES, TK.NARROW_PERCTA)
        TK.NARROW_REG, TK.NARROW_SHARES, TK.NARROW_PERCTA = self.reg, self.shares, None   # grid 16's rules: no per-CTA
        return self

    def __exit__(self, *exc):
        TK.NARROW_REG, TK.NARROW_SHARES, TK.NARROW_PERCTA = self.old
        return False


#: the looked-at narrow rows: every measured TensorRT-LLM decode row of grids 5-15 that the dispatch runs as narrow
#: 256-thread CTAs (useNarrowBlock; 73 rows), the only rows topk_trtllm.NARROW_SHARES_CANDIDATE is fitted on
NARROW_FIT_GRIDS = ("grid5", "grid7", "grid8", "grid9", "grid11", "grid12", "grid13", "grid15")


def narrow_fit_rows() -> pd.DataFrame:
    """NARROW_FIT_GRIDS' measured narrow 256-thread decode rows (`grid` added), from the committed CSVs."""
    parts = []
    for g in NARROW_FIT_GRIDS:
        m = pd.read_csv(F.DATA_DIR / f"topk_engines_nvidia-h100-80gb-hbm3_2026-11-27_{g}.csv")
        m = m[m["kernel"] == CSV_KERNEL["trtllm"]]
        m = m[TK.block_threads(m["rows"], m["n"]) < TK.THREADS]
        parts.append(m.assign(grid=g)[F.SHAPE_KEYS + ["grid", "median_us"]])
    return pd.concat(parts, ignore_index=True)


def fit_narrow_shares(hw: HardwareSpec) -> dict:
    """topk_trtllm.NARROW_SHARES_CANDIDATE: the co-resident narrow CTAs' sweep and job shares (NARROW_REG on) by least
    squares on log time over narrow_fit_rows, bounded 0..1; every other term at its shipped value."""
    from scipy.optimize import least_squares

    t = narrow_fit_rows()
    y = np.log(t["median_us"].to_numpy(float))

    def res(x):
        with narrow_rule(True, {"sweep": float(x[0]), "job": float(x[1])}):
            return np.log(np.maximum(predict_trtllm(t, hw), 1e-3)) - y
    r = least_squares(res, [0.3, 0.3], bounds=([0.0, 0.0], [1.0, 1.0]), diff_step=0.02, xtol=1e-4)
    return {"narrow_sweep_share": round(float(r.x[0]), 3), "narrow_job_share": round(float(r.x[1]), 3),
            "narrow_fit_rows": int(len(t)), "narrow_rms_log_error": round(float(np.sqrt(np.mean(r.fun ** 2))), 4)}


#: grid 16: TensorRT-LLM's narrow 256-thread decode launches over short rows (4.3K-15K scores, 360-2950 rows: 3-23 CTAs
#: per SM), recorded, gaussian and uniform scores, split at 8 CTAs per SM (<= 1056 rows: at most two register groups of
#: four per SM); controls in met regimes: single 512-thread CTAs at mid and long rows, a split launch, the prefill entry
#: at mid rows; no (scores, rows, length) of it in a committed top-k CSV (tests/test_topk_engines.py checks)
GRID16_NARROW = ([("recorded", r, n) for r, n in ((360, 12000), (430, 10800), (560, 8500), (610, 7400), (680, 6500),
                                                 (770, 9600), (860, 5500), (980, 4600), (1060, 11200), (1250, 5200),
                                                 (1350, 8300), (1600, 15000), (1750, 4300), (2050, 6200),
                                                 (2300, 10400), (2700, 13800), (2950, 4900))]
                 + [("gaussian", r, n) for r, n in ((400, 11400), (520, 8600), (820, 7000), (1000, 5100), (1200, 9900),
                                                    (1650, 12500), (2200, 7700), (2800, 5800))]
                 + [("uniform", r, n) for r, n in ((640, 9200), (1450, 6800), (2500, 11800))])
GRID16_CONTROLS = [("recorded", r, n) for r, n in ((340, 27000), (580, 41000), (300, 160000), (44, 230000))]
GRID16_PREFILL = [("recorded", 1100, 30000)]
GRID16 = GRID16_NARROW + GRID16_CONTROLS
GRID16_PREDICTION = "topk_engines_grid16_prediction_2026-11-27.csv"
GRID16_MEASURED = "topk_engines_nvidia-h100-80gb-hbm3_2026-11-27_grid16.csv"


def grid16_frame() -> pd.DataFrame:
    """GRID16's rows: TensorRT-LLM's decode dispatch at GRID16's shapes, its prefill entry at GRID16_PREFILL's."""
    return engines_frame(GRID16, GRID16_PREFILL)


def regime16(kernel, rows, n, sms: float = 132.0) -> np.ndarray:
    """GRID16's regimes: narrow 256-thread CTAs over short rows at <= 8 / > 8 CTAs per SM; controls (single 512-thread
    CTAs, split launches, the prefill entry)."""
    kernel, rows, n = np.asarray(kernel), np.asarray(rows), np.asarray(n)
    pf = kernel == CSV_KERNEL["trtllm_prefill"]
    th = TK.block_threads(rows, n)
    few = np.ceil(rows / sms) <= 8
    return np.where(pf | (th >= TK.THREADS), "controls: single 512-thread CTAs, split launch, prefill entry",
                    np.where(few, "narrow 256-thread CTAs, short rows, <= 8 CTAs per SM",
                             "narrow 256-thread CTAs, short rows, > 8 CTAs per SM"))


def predict_grid16(hw: HardwareSpec, out: str | Path | None = None) -> pd.DataFrame:
    """GRID16 priced three ways: `pred_main_us` main 60b5b38's product price (the shipped narrow rule: NARROW_REG off),
    `pred_us` THE candidate (NARROW_REG on: four narrow CTAs per SM by their registers, nothing fitted), `pred_sh_us`
    the candidate with NARROW_SHARES_CANDIDATE (fitted on narrow_fit_rows; reported, not the shipping candidate)."""
    t = grid16_frame()
    with narrow_rule(False, None):
        t["pred_main_us"] = predict_trtllm(t, hw)
    with narrow_rule(True, None):
        t["pred_us"] = predict_trtllm(t, hw)
    with narrow_rule(True, TK.NARROW_SHARES_CANDIDATE):
        t["pred_sh_us"] = predict_trtllm(t, hw)
    return _launch_columns(t, hw, regime16, ["pred_main_us", "pred_us", "pred_sh_us"], out)


def measured16(pred_csv: str | Path | None = None, meas_csv: str | Path | None = None) -> pd.DataFrame:
    """The committed grid16 prediction joined to its measurement (`wrong` = the selection check failed, time kept)."""
    return measured10(pred_csv or F.DATA_DIR / GRID16_PREDICTION, meas_csv or F.DATA_DIR / GRID16_MEASURED)


def grid16_accuracy(by_dist: bool = False, shipped: str = "main") -> pd.DataFrame:
    """grid16 per regime, every row BLIND: TensorRT-LLM (both entries) by main 60b5b38's product price (`main`), the
    candidate (`cand`: NARROW_REG) and the candidate with the fitted shares (`sh`); the goal judged on `shipped`."""
    groups = (((CSV_KERNEL["trtllm"], CSV_KERNEL["trtllm_prefill"]), "trtllm"),)
    return _grid_accuracy(measured16(), 16, groups, (("pred_us", "cand"), ("pred_sh_us", "sh")), shipped, by_dist)


# --- the narrow 256-thread launches priced per CTA (topk_trtllm.NARROW_PERCTA), judged on GRID17 ---
class narrow_percta:
    """Context manager: price the narrow 256-thread launches with topk_trtllm.NARROW_PERCTA = `rule` (None = the
    shipped rule), restored on exit."""

    def __init__(self, rule: dict | None):
        self.rule = rule

    def __enter__(self):
        self.old = (TK.NARROW_PERCTA, TK.NARROW_ADDITIVE)
        TK.NARROW_PERCTA, TK.NARROW_ADDITIVE = self.rule, False   # grid 17's rules: through the knee
        return self

    def __exit__(self, *exc):
        TK.NARROW_PERCTA, TK.NARROW_ADDITIVE = self.old
        return False


#: the looked-at narrow rows for the per-CTA rule: every measured narrow 256-thread decode row of grids 5-16 (grid 16
#: measured before grid 17 was designed), the only rows topk_trtllm.NARROW_PERCTA_CANDIDATE is fitted on
NARROW_PERCTA_FIT_GRIDS = NARROW_FIT_GRIDS + ("grid16",)


def narrow_percta_fit_rows() -> pd.DataFrame:
    """NARROW_PERCTA_FIT_GRIDS' measured narrow 256-thread decode rows (`grid` added), from the committed CSVs."""
    parts = []
    for g in NARROW_PERCTA_FIT_GRIDS:
        m = pd.read_csv(F.DATA_DIR / f"topk_engines_nvidia-h100-80gb-hbm3_2026-11-27_{g}.csv")
        m = m[m["kernel"] == CSV_KERNEL["trtllm"]]
        m = m[TK.block_threads(m["rows"], m["n"]) < TK.THREADS]
        parts.append(m.assign(grid=g)[F.SHAPE_KEYS + ["grid", "median_us"]])
    return pd.concat(parts, ignore_index=True)


def fit_narrow_percta(hw: HardwareSpec, short: float = 16384.0) -> dict:
    """topk_trtllm.NARROW_PERCTA_CANDIDATE: the narrow CTA's round, block-scan round, BlockRadixSort and all-pairs rank
    terms (per-CTA rule) by least squares on log time over narrow_percta_fit_rows at short rows (n <= `short`); every
    other term at its shipped value."""
    from scipy.optimize import least_squares

    t = narrow_percta_fit_rows()
    t = t[t["n"] <= short].reset_index(drop=True)
    y = np.log(t["median_us"].to_numpy(float))
    names = ("round", "scan", "radix", "rank")

    def res(x):
        with narrow_percta(dict(zip(names, map(float, x)))):
            return np.log(np.maximum(predict_trtllm(t, hw), 1e-3)) - y
    r = least_squares(res, [0.31, 0.18, 12.0, 0.031], bounds=([0.0] * 4, [4.0, 4.0, 80.0, 1.0]), diff_step=0.02,
                      xtol=1e-4)
    return {f"narrow_{k}": round(float(v), 4) for k, v in zip(names, r.x)} | {
        "narrow_fit_rows": int(len(t)), "narrow_rms_log_error": round(float(np.sqrt(np.mean(r.fun ** 2))), 4)}


#: grid 17: TensorRT-LLM's narrow 256-thread decode launches over short rows (4.4K-12.3K scores, 380-3800 rows: 3-29
#: CTAs per SM), recorded, gaussian and uniform scores, split at 8 CTAs per SM; controls in met regimes: single
#: 512-thread CTAs at mid and long rows, split launches, the prefill entry at mid rows; no (scores, rows, length) of it in
#: a committed top-k CSV (tests/test_topk_engines.py checks)
GRID17_NARROW = ([("recorded", r, n) for r, n in ((380, 11600), (460, 10200), (540, 9700), (590, 8100), (660, 7100),
                                                 (720, 8900), (790, 6800), (880, 5900), (940, 7900), (1030, 4900),
                                                 (1120, 8600), (1280, 12300), (1420, 5600), (1550, 9400), (1700, 6600),
                                                 (1950, 11900), (2150, 5200), (2450, 8000), (2650, 4700), (3100, 9800),
                                                 (3350, 6900), (3800, 4400))]
                 + [("gaussian", r, n) for r, n in ((420, 10900), (700, 7300), (960, 5300), (1180, 10600), (1900, 6400),
                                                    (2600, 12100), (3300, 5400))]
                 + [("uniform", r, n) for r, n in ((560, 9900), (900, 6100), (1350, 11200), (2000, 8700), (3000, 6000))])
GRID17_CONTROLS = [("recorded", r, n) for r, n in ((320, 33000), (260, 140000), (50, 240000), (27, 310000))]
GRID17_PREFILL = [("recorded", 1300, 26000)]
GRID17 = GRID17_NARROW + GRID17_CONTROLS
GRID17_PREDICTION = "topk_engines_grid17_prediction_2026-11-27.csv"
GRID17_MEASURED = "topk_engines_nvidia-h100-80gb-hbm3_2026-11-27_grid17.csv"


def grid17_frame() -> pd.DataFrame:
    """GRID17's rows: TensorRT-LLM's decode dispatch at GRID17's shapes, its prefill entry at GRID17_PREFILL's."""
    return engines_frame(GRID17, GRID17_PREFILL)


def regime17(kernel, rows, n, sms: float = 132.0) -> np.ndarray:
    """GRID17's regimes: the narrow short-row regimes of grid 16 (regime16)."""
    return regime16(kernel, rows, n, sms)


def predict_grid17(hw: HardwareSpec, out: str | Path | None = None) -> pd.DataFrame:
    """GRID17 priced two ways: `pred_main_us` main de97b41's product price (the shipped rule: NARROW_REG, no per-CTA
    rule), `pred_us` THE candidate (NARROW_PERCTA = NARROW_PERCTA_CANDIDATE, fitted on narrow_percta_fit_rows)."""
    t = grid17_frame()
    with narrow_percta(None):
        t["pred_main_us"] = predict_trtllm(t, hw)
    with narrow_percta(TK.NARROW_PERCTA_CANDIDATE):
        t["pred_us"] = predict_trtllm(t, hw)
    return _launch_columns(t, hw, regime17, ["pred_main_us", "pred_us"], out)


def measured17(pred_csv: str | Path | None = None, meas_csv: str | Path | None = None) -> pd.DataFrame:
    """The committed grid17 prediction joined to its measurement (`wrong` = the selection check failed, time kept)."""
    return measured10(pred_csv or F.DATA_DIR / GRID17_PREDICTION, meas_csv or F.DATA_DIR / GRID17_MEASURED)


def grid17_accuracy(by_dist: bool = False, shipped: str = "main") -> pd.DataFrame:
    """grid17 per regime, every row BLIND: TensorRT-LLM (both entries) by main de97b41's product price (`main`) and the
    candidate (`cand`: NARROW_PERCTA); the goal judged on `shipped`."""
    groups = (((CSV_KERNEL["trtllm"], CSV_KERNEL["trtllm_prefill"]), "trtllm"),)
    return _grid_accuracy(measured17(), 17, groups, (("pred_us", "cand"),), shipped, by_dist)


# --- the narrow short-row launches priced additively (topk_trtllm.NARROW_ADDITIVE: the per-CTA chain alone, no
# closed-loop knee), judged on GRID18 ---
class narrow_additive:
    """Context manager: price the narrow short-row launches with topk_trtllm.NARROW_ADDITIVE = `on`, NARROW_PERCTA =
    `rule` (None in `rule` = keep the shipped NARROW_PERCTA) and NARROW_ADD_BOUNDED = `bounded` (grid 19's repaired
    re-read credit; False = grid 18's candidate as judged), restored on exit."""

    def __init__(self, on: bool, rule: dict | None = None, bounded: bool = False):
        self.on, self.rule, self.bounded = on, rule, bounded

    def __enter__(self):
        self.old = (TK.NARROW_ADDITIVE, TK.NARROW_PERCTA, TK.NARROW_ADD_BOUNDED)
        TK.NARROW_ADDITIVE, TK.NARROW_ADD_BOUNDED = self.on, self.bounded
        if self.rule is not None:
            TK.NARROW_PERCTA = self.rule
        return self

    def __exit__(self, *exc):
        TK.NARROW_ADDITIVE, TK.NARROW_PERCTA, TK.NARROW_ADD_BOUNDED = self.old
        return False


#: the looked-at narrow rows for the additive rule: every measured narrow 256-thread decode row of grids 5-17 (grid 17
#: measured before grid 18 was designed), the only rows topk_trtllm.NARROW_PERCTA_ADD_CANDIDATE is fitted on
NARROW_ADD_FIT_GRIDS = NARROW_PERCTA_FIT_GRIDS + ("grid17",)


def narrow_add_fit_rows(short: float = 16384.0) -> pd.DataFrame:
    """NARROW_ADD_FIT_GRIDS' measured narrow 256-thread decode rows at short rows (n <= `short`; `grid` added)."""
    parts = []
    for g in NARROW_ADD_FIT_GRIDS:
        m = pd.read_csv(F.DATA_DIR / f"topk_engines_nvidia-h100-80gb-hbm3_2026-11-27_{g}.csv")
        m = m[m["kernel"] == CSV_KERNEL["trtllm"]]
        m = m[(TK.block_threads(m["rows"], m["n"]) < TK.THREADS) & (m["n"] <= short)]
        parts.append(m.assign(grid=g)[F.SHAPE_KEYS + ["grid", "median_us"]])
    return pd.concat(parts, ignore_index=True)


def fit_narrow_additive(hw: HardwareSpec) -> dict:
    """topk_trtllm.NARROW_PERCTA_ADD_CANDIDATE: the per-CTA rule's round, block-scan round, BlockRadixSort and all-pairs
    rank terms with NARROW_ADDITIVE on, by least squares on log time over narrow_add_fit_rows; every other term at its
    shipped value (each row's radix / rank counts are its own scores' pass statistics: trtllm_samples)."""
    from scipy.optimize import least_squares

    t = narrow_add_fit_rows()
    y = np.log(t["median_us"].to_numpy(float))
    names = ("round", "scan", "radix", "rank")

    def res(x):
        with narrow_additive(True, dict(zip(names, map(float, x)))):
            return np.log(np.maximum(predict_trtllm(t, hw), 1e-3)) - y
    r = least_squares(res, [0.38, 0.1, 11.6, 0.048], bounds=([0.0] * 4, [4.0, 4.0, 80.0, 1.0]), diff_step=0.02,
                      xtol=1e-4)
    return {f"narrow_{k}": round(float(v), 4) for k, v in zip(names, r.x)} | {
        "narrow_fit_rows": int(len(t)), "narrow_rms_log_error": round(float(np.sqrt(np.mean(r.fun ** 2))), 4)}


#: grid 18: TensorRT-LLM's narrow 256-thread decode launches over short rows (4.5K-15.5K scores, 400-4000 rows: 4-31
#: CTAs per SM), recorded, gaussian and uniform scores, split at 8 CTAs per SM; controls in met regimes: single
#: 512-thread CTAs at mid and long rows, split launches, the prefill entry at mid rows; no (scores, rows, length) of it in
#: a committed top-k CSV (tests/test_topk_engines.py checks)
GRID18_NARROW = ([("recorded", r, n) for r, n in ((410, 11100), (500, 9000), (620, 7600), (750, 6200), (850, 10500),
                                                 (1000, 5000), (1090, 13500), (1300, 7300), (1500, 4500), (1800, 9100),
                                                 (2100, 14500), (2350, 6300), (2750, 10100), (3200, 5700), (3600, 8300),
                                                 (4000, 4800))]
                 + [("gaussian", r, n) for r, n in ((450, 9800), (680, 12000), (920, 4700), (1150, 8200), (1600, 15500),
                                                    (2250, 5600), (2900, 9300), (3500, 7100))]
                 + [("uniform", r, n) for r, n in ((520, 10400), (780, 5800), (1050, 12800), (1400, 7800), (1850, 5300),
                                                   (2400, 13200), (3400, 6500))])
GRID18_CONTROLS = [("recorded", r, n) for r, n in ((300, 38000), (240, 120000), (40, 260000), (20, 280000))]
GRID18_PREFILL = [("recorded", 1200, 28000)]
GRID18 = GRID18_NARROW + GRID18_CONTROLS
GRID18_PREDICTION = "topk_engines_grid18_prediction_2026-11-27.csv"
GRID18_MEASURED = "topk_engines_nvidia-h100-80gb-hbm3_2026-11-27_grid18.csv"


def grid18_frame() -> pd.DataFrame:
    """GRID18's rows: TensorRT-LLM's decode dispatch at GRID18's shapes, its prefill entry at GRID18_PREFILL's."""
    return engines_frame(GRID18, GRID18_PREFILL)


def regime18(kernel, rows, n, sms: float = 132.0) -> np.ndarray:
    """GRID18's regimes: the narrow short-row regimes of grid 16 (regime16)."""
    return regime16(kernel, rows, n, sms)


def predict_grid18(hw: HardwareSpec, out: str | Path | None = None) -> pd.DataFrame:
    """GRID18 priced two ways: `pred_main_us` main 922980a's product price (the shipped NARROW_PERCTA through the
    closed-loop knee), `pred_us` THE candidate (NARROW_ADDITIVE with NARROW_PERCTA_ADD_CANDIDATE, fitted on
    narrow_add_fit_rows)."""
    t = grid18_frame()
    with narrow_additive(False, TK.NARROW_PERCTA_CANDIDATE):
        t["pred_main_us"] = predict_trtllm(t, hw)
    with narrow_additive(True, TK.NARROW_PERCTA_ADD_CANDIDATE):
        t["pred_us"] = predict_trtllm(t, hw)
    return _launch_columns(t, hw, regime18, ["pred_main_us", "pred_us"], out)


def measured18(pred_csv: str | Path | None = None, meas_csv: str | Path | None = None) -> pd.DataFrame:
    """The committed grid18 prediction joined to its measurement (`wrong` = the selection check failed, time kept)."""
    return measured10(pred_csv or F.DATA_DIR / GRID18_PREDICTION, meas_csv or F.DATA_DIR / GRID18_MEASURED)


def grid18_accuracy(by_dist: bool = False, shipped: str = "main") -> pd.DataFrame:
    """grid18 per regime, every row BLIND: TensorRT-LLM (both entries) by main 922980a's product price (`main`) and the
    candidate (`cand`: NARROW_ADDITIVE); the goal judged on `shipped`."""
    groups = (((CSV_KERNEL["trtllm"], CSV_KERNEL["trtllm_prefill"]), "trtllm"),)
    return _grid_accuracy(measured18(), 18, groups, (("pred_us", "cand"),), shipped, by_dist)


# --- grid 19: the additive candidate REPAIRED (topk_trtllm.NARROW_ADD_BOUNDED: the re-read credit scaled with the bytes
# it re-reads and bounded by them), refitted on the looked-at narrow rows of grids 5-18, judged on GRID19 ---
#: the looked-at narrow rows for the repaired rule: every measured narrow 256-thread short-row decode row of grids 5-18
#: (grid 18 measured before grid 19 was designed), the only rows topk_trtllm.NARROW_PERCTA_BOUNDED_CANDIDATE is fitted on
NARROW_BOUNDED_FIT_GRIDS = NARROW_ADD_FIT_GRIDS + ("grid18",)


def narrow_bounded_fit_rows(short: float = 16384.0) -> pd.DataFrame:
    """NARROW_BOUNDED_FIT_GRIDS' measured narrow 256-thread decode rows at short rows (n <= `short`; `grid` added)."""
    parts = []
    for g in NARROW_BOUNDED_FIT_GRIDS:
        m = pd.read_csv(F.DATA_DIR / f"topk_engines_nvidia-h100-80gb-hbm3_2026-11-27_{g}.csv")
        m = m[m["kernel"] == CSV_KERNEL["trtllm"]]
        m = m[(TK.block_threads(m["rows"], m["n"]) < TK.THREADS) & (m["n"] <= short)]
        parts.append(m.assign(grid=g)[F.SHAPE_KEYS + ["grid", "median_us"]])
    return pd.concat(parts, ignore_index=True)


def fit_narrow_bounded(hw: HardwareSpec) -> dict:
    """topk_trtllm.NARROW_PERCTA_BOUNDED_CANDIDATE: the per-CTA rule's round, block-scan round, BlockRadixSort and
    all-pairs rank terms with NARROW_ADDITIVE and NARROW_ADD_BOUNDED on, by least squares on log time over
    narrow_bounded_fit_rows; every other term at its shipped value."""
    from scipy.optimize import least_squares

    t = narrow_bounded_fit_rows()
    y = np.log(t["median_us"].to_numpy(float))
    names = ("round", "scan", "radix", "rank")

    def res(x):
        with narrow_additive(True, dict(zip(names, map(float, x))), bounded=True):
            return np.log(np.maximum(predict_trtllm(t, hw), 1e-3)) - y
    r = least_squares(res, [0.6, 0.05, 20.0, 0.05], bounds=([0.0] * 4, [4.0, 4.0, 80.0, 1.0]), diff_step=0.02,
                      xtol=1e-4)
    return {f"narrow_{k}": round(float(v), 4) for k, v in zip(names, r.x)} | {
        "narrow_fit_rows": int(len(t)), "narrow_rms_log_error": round(float(np.sqrt(np.mean(r.fun ** 2))), 4)}


#: grid 19: TensorRT-LLM's narrow 256-thread decode launches over short rows (4.0K-14.0K scores, 370-2080 rows: 3-16
#: CTAs per SM; 1-2 CTAs per SM hold no narrow launch: useNarrowBlock needs >= 256 rows and rows x n >= 4 Mi scores
#: below n 12,288, i.e. > 341 rows), weighted to <= 8 CTAs per SM (the regime grid 18 missed), recorded, gaussian and
#: uniform scores; controls in met regimes: a single 512-thread CTA at a mid and a long row, a split launch, the prefill
#: entry at mid rows; no (scores, rows, length) of it in a committed top-k CSV (tests/test_topk_engines.py checks)
GRID19_NARROW = ([("recorded", r, n) for r, n in ((370, 11800), (440, 10300), (510, 8800), (570, 9600), (640, 7000),
                                                 (710, 11000), (770, 6000), (830, 8400), (900, 5100), (980, 10800),
                                                 (1040, 4300), (1100, 7700), (1250, 5000), (1400, 11500), (1620, 4000),
                                                 (1880, 9600), (2080, 6300))]
                 + [("gaussian", r, n) for r, n in ((400, 11200), (600, 7500), (750, 9900), (870, 5600), (1010, 6900),
                                                    (1200, 13000), (1500, 8300), (1990, 4500))]
                 + [("uniform", r, n) for r, n in ((480, 9200), (690, 6400), (820, 11400), (960, 4700), (1320, 6700),
                                                   (1720, 14000))])
GRID19_CONTROLS = [("recorded", r, n) for r, n in ((330, 35000), (250, 105000), (36, 245000))]
GRID19_PREFILL = [("recorded", 1150, 31000)]
GRID19 = GRID19_NARROW + GRID19_CONTROLS
GRID19_PREDICTION = "topk_engines_grid19_prediction_2026-11-27.csv"
GRID19_MEASURED = "topk_engines_nvidia-h100-80gb-hbm3_2026-11-27_grid19.csv"


def grid19_frame() -> pd.DataFrame:
    """GRID19's rows: TensorRT-LLM's decode dispatch at GRID19's shapes, its prefill entry at GRID19_PREFILL's."""
    return engines_frame(GRID19, GRID19_PREFILL)


def regime19(kernel, rows, n, sms: float = 132.0) -> np.ndarray:
    """GRID19's regimes: the narrow short-row regimes of grid 16 (regime16)."""
    return regime16(kernel, rows, n, sms)


def predict_grid19(hw: HardwareSpec, out: str | Path | None = None) -> pd.DataFrame:
    """GRID19 priced two ways: `pred_main_us` main f9af03b's product price (the shipped NARROW_PERCTA through the
    closed-loop knee), `pred_us` THE candidate (NARROW_ADDITIVE with the bounded re-read credit, NARROW_ADD_BOUNDED, and
    NARROW_PERCTA_BOUNDED_CANDIDATE, fitted on narrow_bounded_fit_rows)."""
    t = grid19_frame()
    with narrow_additive(False, TK.NARROW_PERCTA_CANDIDATE):
        t["pred_main_us"] = predict_trtllm(t, hw)
    with narrow_additive(True, TK.NARROW_PERCTA_BOUNDED_CANDIDATE, bounded=True):
        t["pred_us"] = predict_trtllm(t, hw)
    return _launch_columns(t, hw, regime19, ["pred_main_us", "pred_us"], out)


def measured19(pred_csv: str | Path | None = None, meas_csv: str | Path | None = None) -> pd.DataFrame:
    """The committed grid19 prediction joined to its measurement (`wrong` = the selection check failed, time kept)."""
    return measured10(pred_csv or F.DATA_DIR / GRID19_PREDICTION, meas_csv or F.DATA_DIR / GRID19_MEASURED)


def grid19_accuracy(by_dist: bool = False, shipped: str = "main") -> pd.DataFrame:
    """grid19 per regime, every row BLIND: TensorRT-LLM (both entries) by main f9af03b's product price (`main`) and the
    repaired candidate (`cand`: NARROW_ADDITIVE + NARROW_ADD_BOUNDED); the goal judged on `shipped`."""
    groups = (((CSV_KERNEL["trtllm"], CSV_KERNEL["trtllm_prefill"]), "trtllm"),)
    return _grid_accuracy(measured19(), 19, groups, (("pred_us", "cand"),), shipped, by_dist)


# --- grid 20: the narrow per-CTA rule's FIRST CTA part read from its pass statistics (topk_trtllm.NARROW_PERCTA's
# optional first / first_scan / first_radix / first_rank keys), refitted on grids 5-19's looked-at narrow rows ---
#: the looked-at narrow rows for the first-CTA rule: every measured narrow 256-thread short-row decode row of grids 5-19
#: (grid 19 measured before grid 20 was designed), the only rows NARROW_PERCTA_FIRST_CANDIDATE is fitted on
NARROW_FIRST_FIT_GRIDS = NARROW_BOUNDED_FIT_GRIDS + ("grid19",)
#: the forms tried (every one fitted on the same rows; chosen by leave-one-grid-out error over grids 16-19, looked-at):
#: "slope" refits the per-CTA terms alone (main's form), "flat" adds a constant first part, "rank" a first part in the
#: staged items, "kind" one in the block-scan rounds and radix-sort share (THE candidate)
NARROW_FIRST_FORMS = {"slope": (), "flat": ("first",), "rank": ("first", "first_rank"),
                      "kind": ("first", "first_scan", "first_radix")}
_SLOPE = ("round", "scan", "radix", "rank")


def narrow_first_fit_rows(short: float = 16384.0) -> pd.DataFrame:
    """NARROW_FIRST_FIT_GRIDS' measured narrow 256-thread decode rows at short rows (n <= `short`; `grid` added)."""
    parts = []
    for g in NARROW_FIRST_FIT_GRIDS:
        m = pd.read_csv(F.DATA_DIR / f"topk_engines_nvidia-h100-80gb-hbm3_2026-11-27_{g}.csv")
        m = m[m["kernel"] == CSV_KERNEL["trtllm"]]
        m = m[(TK.block_threads(m["rows"], m["n"]) < TK.THREADS) & (m["n"] <= short)]
        parts.append(m.assign(grid=g)[F.SHAPE_KEYS + ["grid", "median_us"]])
    return pd.concat(parts, ignore_index=True)


def narrow_features(t: pd.DataFrame, sms: float = 132.0) -> pd.DataFrame:
    """Per narrow short decode row of `t`: what topk_trtllm.shape_terms's NARROW_PERCTA branch reads from its own scores'
    samples (trtllm_samples): the lone CTA's job at JOB_TERMS (`slowest`), CTAs per SM `c`, waves `w`, mean sweeps and
    the mean pass statistics (scan_rounds, radix, rank_items)."""
    rows = []
    for d, r, n in zip(t["dist"], t["rows"].astype(int), t["n"].astype(int)):
        smp = trtllm_samples(d, r, n)
        one = TK.launch_waves(r, n, sms) <= 1.0
        v = np.array([float(TK.job_iters(s, TK.JOB_TERMS)) for s in smp])
        rows.append({"slowest": P.expected_max(v, r) if one else float(v.mean()),
                     "c": float(TK.ctas_per_sm(r, n, sms)), "w": float(TK.launch_waves(r, n, sms))}
                    | {k: float(np.mean([s.get(k, 0.0) for s in smp]))
                       for k in ("sweeps", "scan_rounds", "radix", "rank_items", "conflict", "rank_work")})
    return pd.DataFrame(rows)


def narrow_price_fast(t: pd.DataFrame, f: pd.DataFrame, hw: HardwareSpec, rule: dict) -> np.ndarray:
    """predict_trtllm of narrow short decode rows under NARROW_PERCTA = `rule` (through the knee, NARROW_ADDITIVE off)
    in one vectorized add_job_ops from their narrow_features `f` (the fit's pricer; tests check it against
    predict_trtllm)."""
    from simulator.ops import OpBuilder

    per = (rule["scan"] * f["scan_rounds"] + rule["radix"] * f["radix"] + rule["rank"] * f["rank_items"]
           + float(rule.get("rankw", 0.0)) * f["rank_work"])
    first = sum(float(rule.get(f"first{key}", 0.0)) * (f[st] if st else 1.0) for key, st in TK.FIRST_STATS)
    job = (f["slowest"] + first + (f["c"] - 1.0) * (per + float(rule.get("later", 0.0)))) / f["w"]
    b = OpBuilder(len(t))
    TK.add_job_ops(b, t["rows"].to_numpy(float), t["n"].to_numpy(float), 2048.0, f["sweeps"].to_numpy(float),
                   job.to_numpy(float), merge_sweeps=np.zeros(len(t)), merge_waves=f["w"].to_numpy(float),
                   sweep_scale=((1.0 + (f["c"] - 1.0) * (rule["round"] + float(rule.get("round_conflict", 0.0))
                                                         * (f["conflict"] - 1.0))) / f["w"]).to_numpy(float),
                   out_set=float(rule.get("out_set", 0.0)))
    ops = b.build()
    sec = price(ops, hw, "graph") - hw.launch_graph_s
    return np.bincount(ops.setting, weights=sec, minlength=len(t)) * 1e6


def fit_narrow_first(hw: HardwareSpec, form: str = "kind", t: pd.DataFrame | None = None,
                     f: pd.DataFrame | None = None) -> dict:
    """NARROW_PERCTA_FIRST_CANDIDATE (form "kind"; NARROW_FIRST_FORMS): the first CTA's part and the per-CTA terms by
    least squares on log time over narrow_first_fit_rows (or `t`), through the knee, every other term shipped."""
    from scipy.optimize import least_squares

    t = narrow_first_fit_rows() if t is None else t.reset_index(drop=True)
    f = narrow_features(t, float(hw.units)) if f is None else f.reset_index(drop=True)
    y = np.log(t["median_us"].to_numpy(float))
    names = NARROW_FIRST_FORMS[form] + _SLOPE
    start = {"first": 10.0, "first_scan": 0.0, "first_radix": 0.0, "first_rank": 0.0} | TK.NARROW_PERCTA_CANDIDATE

    def res(x):
        return np.log(np.maximum(narrow_price_fast(t, f, hw, dict(zip(names, map(float, x)))), 1e-3)) - y
    lo = [-200.0 if k.startswith("first") else 0.0 for k in names]
    hi = [400.0 if k.startswith("first") else 80.0 for k in names]
    r = least_squares(res, [start[k] for k in names], bounds=(lo, hi), diff_step=0.02, xtol=1e-6)
    return {k: round(float(v), 4) for k, v in zip(names, r.x)} | {
        "fit_rows": int(len(t)), "rms_log_error": round(float(np.sqrt(np.mean(r.fun ** 2))), 4)}


def narrow_first_logo(hw: HardwareSpec, grids=("grid16", "grid17", "grid18", "grid19")) -> pd.DataFrame:
    """Each NARROW_FIRST_FORMS form fitted on narrow_first_fit_rows less one grid, priced on that grid: |error| median
    / p90 and signed median (%) per form x held-out grid (how the candidate's form was chosen; all rows looked-at)."""
    t = narrow_first_fit_rows()
    f = narrow_features(t, float(hw.units))
    out = []
    for form in NARROW_FIRST_FORMS:
        for g in grids:
            tr = (t["grid"] != g).to_numpy()
            rule = fit_narrow_first(hw, form, t[tr], f[tr])
            e = (narrow_price_fast(t[~tr].reset_index(drop=True), f[~tr].reset_index(drop=True), hw, rule)
                 / t.loc[~tr, "median_us"].to_numpy(float) - 1.0) * 100.0
            out.append({"form": form, "held_out": g, "rows": int((~tr).sum()), "median": np.median(np.abs(e)),
                        "p90": np.quantile(np.abs(e), 0.9), "signed": np.median(e)})
    return pd.DataFrame(out)


#: grid 20: TensorRT-LLM's narrow 256-thread decode launches over short rows (4.4K-12.2K scores, 350-2040 rows: 3-16
#: CTAs per SM), recorded, gaussian and uniform scores (uniform weighted up: the kind grid 19 missed both ways), split at
#: 8 CTAs per SM; controls in met regimes: a single 512-thread CTA at a mid and a long row, a split launch, the prefill
#: entry at mid rows; no (scores, rows, length) of it in a committed top-k CSV (tests/test_topk_engines.py checks)
GRID20_NARROW = ([("recorded", r, n) for r, n in ((350, 12200), (420, 11300), (495, 9300), (585, 8300), (650, 7800),
                                                 (735, 6900), (810, 9100), (890, 6600), (945, 4700), (1070, 8100),
                                                 (1180, 5300), (1330, 9900), (1560, 6100), (1840, 4900))]
                 + [("gaussian", r, n) for r, n in ((380, 11900), (560, 9400), (725, 6100), (915, 8700), (1080, 4400),
                                                    (1380, 10300), (1680, 5900), (2040, 8100))]
                 + [("uniform", r, n) for r, n in ((430, 10600), (530, 8200), (705, 7200), (860, 5200), (1010, 10100),
                                                   (1240, 6200), (1610, 9600), (1960, 5000), (2030, 7400))])
GRID20_CONTROLS = [("recorded", r, n) for r, n in ((315, 37000), (270, 115000), (33, 255000))]
GRID20_PREFILL = [("recorded", 1220, 29500)]
GRID20 = GRID20_NARROW + GRID20_CONTROLS
GRID20_PREDICTION = "topk_engines_grid20_prediction_2026-11-27.csv"
GRID20_MEASURED = "topk_engines_nvidia-h100-80gb-hbm3_2026-11-27_grid20.csv"


def grid20_frame() -> pd.DataFrame:
    """GRID20's rows: TensorRT-LLM's decode dispatch at GRID20's shapes, its prefill entry at GRID20_PREFILL's."""
    return engines_frame(GRID20, GRID20_PREFILL)


def regime20(kernel, rows, n, sms: float = 132.0) -> np.ndarray:
    """GRID20's regimes: the narrow short-row regimes of grid 16 (regime16)."""
    return regime16(kernel, rows, n, sms)


def predict_grid20(hw: HardwareSpec, out: str | Path | None = None) -> pd.DataFrame:
    """GRID20 priced three ways: `pred_main_us` main b118817's product price (grid 17's NARROW_PERCTA through the
    closed-loop knee), `pred_us` THE candidate (NARROW_PERCTA = NARROW_PERCTA_FIRST_CANDIDATE: the first CTA's part in
    its block-scan rounds and radix-sort share, the per-CTA slope refitted; fit_narrow_first "kind"), `pred_rank_us`
    the first part in its staged items (NARROW_PERCTA_FIRST_RANK; reported, not the shipping candidate)."""
    t = grid20_frame()
    with narrow_additive(False, TK.NARROW_PERCTA_CANDIDATE):
        t["pred_main_us"] = predict_trtllm(t, hw)
    with narrow_additive(False, TK.NARROW_PERCTA_FIRST_CANDIDATE):
        t["pred_us"] = predict_trtllm(t, hw)
    with narrow_additive(False, TK.NARROW_PERCTA_FIRST_RANK):
        t["pred_rank_us"] = predict_trtllm(t, hw)
    return _launch_columns(t, hw, regime20, ["pred_main_us", "pred_us", "pred_rank_us"], out)


def measured20(pred_csv: str | Path | None = None, meas_csv: str | Path | None = None) -> pd.DataFrame:
    """The committed grid20 prediction joined to its measurement (`wrong` = the selection check failed, time kept)."""
    return measured10(pred_csv or F.DATA_DIR / GRID20_PREDICTION, meas_csv or F.DATA_DIR / GRID20_MEASURED)


def grid20_accuracy(by_dist: bool = False, shipped: str = "main") -> pd.DataFrame:
    """grid20 per regime, every row BLIND: TensorRT-LLM (both entries) by main b118817's product price (`main`), the
    candidate (`cand`: the first CTA's part by score kind) and the staged-items variant (`rank`); the goal judged on
    `shipped`."""
    groups = (((CSV_KERNEL["trtllm"], CSV_KERNEL["trtllm_prefill"]), "trtllm"),)
    return _grid_accuracy(measured20(), 20, groups, (("pred_us", "cand"), ("pred_rank_us", "rank")), shipped, by_dist)


#: grid 21's candidate fit: grids 5-20's narrow short rows (all looked-at; grid 20 measured and read before)
NARROW_LATER_FIT_GRIDS = NARROW_FIRST_FIT_GRIDS + ("grid20",)
#: the forms tried for grid 21 (each fitted on NARROW_LATER_FIT_GRIDS' rows, with or without out_set): "kind" grid 20's
#: form (THE candidate's, with out_set 1: TK.NARROW_PERCTA_OUTSET_CANDIDATE), "later" it with a fixed part per later CTA
NARROW_LATER_FORMS = {"kind": NARROW_FIRST_FORMS["kind"], "later": NARROW_FIRST_FORMS["kind"] + ("later",)}


def narrow_later_fit_rows(short: float = 16384.0) -> pd.DataFrame:
    """NARROW_LATER_FIT_GRIDS' measured narrow 256-thread decode rows at short rows (n <= `short`; `grid` added)."""
    parts = []
    for g in NARROW_LATER_FIT_GRIDS:
        m = pd.read_csv(F.DATA_DIR / f"topk_engines_nvidia-h100-80gb-hbm3_2026-11-27_{g}.csv")
        m = m[m["kernel"] == CSV_KERNEL["trtllm"]]
        m = m[(TK.block_threads(m["rows"], m["n"]) < TK.THREADS) & (m["n"] <= short)]
        parts.append(m.assign(grid=g)[F.SHAPE_KEYS + ["grid", "median_us"]])
    return pd.concat(parts, ignore_index=True)


def fit_narrow_later(hw: HardwareSpec, form: str = "kind", t: pd.DataFrame | None = None,
                     f: pd.DataFrame | None = None, out_set: float = 0.0) -> dict:
    """TK.NARROW_PERCTA_OUTSET_CANDIDATE (form "kind", out_set 1.0): the form's terms of NARROW_LATER_FORMS (the first
    CTA's part, the fixed part per later CTA for "later", the per-CTA slope) by least squares on log time over
    narrow_later_fit_rows (or `t`) with the output indices' share `out_set` of the L2 set fixed (topk_trtllm.
    narrow_out_set; 0 = none), through the knee, every other term shipped."""
    from scipy.optimize import least_squares

    t = narrow_later_fit_rows() if t is None else t.reset_index(drop=True)
    f = narrow_features(t, float(hw.units)) if f is None else f.reset_index(drop=True)
    y = np.log(t["median_us"].to_numpy(float))
    names = NARROW_LATER_FORMS[form] + _SLOPE
    start = {"later": 5.0} | TK.NARROW_PERCTA_FIRST_CANDIDATE
    fixed = {"out_set": out_set} if out_set else {}

    def res(x):
        return np.log(np.maximum(narrow_price_fast(t, f, hw, dict(zip(names, map(float, x))) | fixed), 1e-3)) - y
    lo = [-200.0 if k.startswith("first") else 0.0 for k in names]
    hi = [400.0 if k.startswith("first") else 80.0 for k in names]
    r = least_squares(res, [start[k] for k in names], bounds=(lo, hi), diff_step=0.02, xtol=1e-6)
    return {k: round(float(v), 4) for k, v in zip(names, r.x)} | fixed | {
        "fit_rows": int(len(t)), "rms_log_error": round(float(np.sqrt(np.mean(r.fun ** 2))), 4)}


#: grid 21: TensorRT-LLM's narrow 256-thread decode launches over short rows, 22 above 8 CTAs per SM (1120-2630 rows:
#: 9-20 CTAs per SM; 2.6K-13.5K scores, most 2.6K-6.4K: the short rows grid 20 ran -19..-26 % fast) and 10 at 6-8,
#: recorded / gaussian / uniform, their scores 0.34-2.2 of the L2 (11 in the band where the candidate's output indices
#: push the set past the "first" curve's edge); controls: single 512-thread CTAs at a mid and a long row, a split
#: launch, the prefill entry; no (scores, rows, length) of it in a committed top-k CSV (tests/test_topk_engines.py)
GRID21_NARROW = ([("recorded", r, n) for r, n in ((680, 7700), (880, 5400), (1010, 9700), (1050, 4250), (1120, 4100),
                                                 (1290, 3500), (1470, 5600), (1650, 2900), (1790, 4400), (1930, 7300),
                                                 (2110, 3100), (2270, 5100), (2450, 2600), (2600, 9800))]
                 + [("gaussian", r, n) for r, n in ((760, 10700), (990, 6300), (1180, 6400), (1420, 3300), (1720, 5400),
                                                    (2010, 2700), (2330, 4200), (2560, 11500))]
                 + [("uniform", r, n) for r, n in ((720, 8900), (940, 4700), (970, 10300), (1030, 11600), (1240, 13500),
                                                   (1540, 4600), (1870, 3600), (2180, 6800), (2390, 2800), (2630, 3900))])
GRID21_CONTROLS = [("recorded", r, n) for r, n in ((345, 31000), (285, 98000), (38, 250000))]
GRID21_PREFILL = [("recorded", 1260, 27500)]
GRID21 = GRID21_NARROW + GRID21_CONTROLS
GRID21_PREDICTION = "topk_engines_grid21_prediction_2026-11-27.csv"
GRID21_MEASURED = "topk_engines_nvidia-h100-80gb-hbm3_2026-11-27_grid21.csv"


def grid21_frame() -> pd.DataFrame:
    """GRID21's rows: TensorRT-LLM's decode dispatch at GRID21's shapes, its prefill entry at GRID21_PREFILL's."""
    return engines_frame(GRID21, GRID21_PREFILL)


def regime21(kernel, rows, n, sms: float = 132.0) -> np.ndarray:
    """GRID21's regimes: the narrow short-row regimes of grid 16 (regime16)."""
    return regime16(kernel, rows, n, sms)


def predict_grid21(hw: HardwareSpec, out: str | Path | None = None) -> pd.DataFrame:
    """GRID21 priced two ways: `pred_main_us` main 753b5c0's product price (grid 20's NARROW_PERCTA_FIRST_CANDIDATE),
    `pred_us` THE candidate (NARROW_PERCTA = TK.NARROW_PERCTA_OUTSET_CANDIDATE: the output indices in the narrow
    launch's L2 set, its terms refitted; fit_narrow_later "kind", out_set 1.0)."""
    t = grid21_frame()
    with narrow_additive(False, TK.NARROW_PERCTA_FIRST_CANDIDATE):
        t["pred_main_us"] = predict_trtllm(t, hw)
    with narrow_additive(False, TK.NARROW_PERCTA_OUTSET_CANDIDATE):
        t["pred_us"] = predict_trtllm(t, hw)
    return _launch_columns(t, hw, regime21, ["pred_main_us", "pred_us"], out)


def measured21(pred_csv: str | Path | None = None, meas_csv: str | Path | None = None) -> pd.DataFrame:
    """The committed grid21 prediction joined to its measurement (`wrong` = the selection check failed, time kept)."""
    return measured10(pred_csv or F.DATA_DIR / GRID21_PREDICTION, meas_csv or F.DATA_DIR / GRID21_MEASURED)


def grid21_accuracy(by_dist: bool = False, shipped: str = "main") -> pd.DataFrame:
    """grid21 per regime, every row BLIND: TensorRT-LLM (both entries) by main 753b5c0's product price (`main`) and the
    output-indices-in-the-L2-set candidate (`cand`); the goal judged on `shipped`."""
    groups = (((CSV_KERNEL["trtllm"], CSV_KERNEL["trtllm_prefill"]), "trtllm"),)
    return _grid_accuracy(measured21(), 21, groups, (("pred_us", "cand"),), shipped, by_dist)


# --- grid 22: the narrow short-row launch's first-CTA part read from its step-0 histogram's atomic conflict
# (topk_trtllm.hist_conflict) instead of its block-scan rounds, refitted on grids 5-21's looked-at narrow rows ---
#: grid 22's candidate fit: grids 5-21's narrow short rows (all looked-at; grid 21 measured and read before)
NARROW_CONFLICT_FIT_GRIDS = NARROW_LATER_FIT_GRIDS + ("grid21",)
#: the forms tried for grid 22 (each fitted on NARROW_CONFLICT_FIT_GRIDS' rows): "kind" grid 20's form (main's, refitted),
#: "conflict" its first-CTA part in the histogram conflict instead of the block-scan rounds (THE candidate),
#: "conflict_round" that plus later CTAs' sweep rounds dearer with the conflict, "kind_round" grid 20's form plus that
NARROW_CONFLICT_FORMS = {"kind": ("first", "first_scan", "first_radix"),
                         "conflict": ("first", "first_conflict", "first_radix"),
                         "conflict_round": ("first", "first_conflict", "first_radix", "round_conflict"),
                         "kind_round": ("first", "first_scan", "first_radix", "round_conflict"),
                         "conflict_rankw": ("first", "first_conflict", "first_radix", "first_rankw"),
                         "conflict_rankw_only": ("first", "first_conflict", "first_rankw"),
                         "rankw": ("first", "first_radix", "first_rankw"),
                         "rankw_slope": ("first", "first_radix", "first_rankw", "rankw")}


def narrow_conflict_fit_rows(short: float = 16384.0, grids: tuple | None = None) -> pd.DataFrame:
    """NARROW_CONFLICT_FIT_GRIDS' (or `grids`') measured narrow 256-thread decode rows at short rows (n <= `short`)."""
    parts = []
    for g in grids or NARROW_CONFLICT_FIT_GRIDS:
        m = pd.read_csv(F.DATA_DIR / f"topk_engines_nvidia-h100-80gb-hbm3_2026-11-27_{g}.csv")
        m = m[m["kernel"] == CSV_KERNEL["trtllm"]]
        m = m[(TK.block_threads(m["rows"], m["n"]) < TK.THREADS) & (m["n"] <= short)]
        parts.append(m.assign(grid=g)[F.SHAPE_KEYS + ["grid", "median_us"]])
    return pd.concat(parts, ignore_index=True)


def fit_narrow_conflict(hw: HardwareSpec, form: str = "conflict", t: pd.DataFrame | None = None,
                        f: pd.DataFrame | None = None, out_set: float = 0.0, start: dict | None = None) -> dict:
    """TK.NARROW_PERCTA_CONFLICT_CANDIDATE (form "conflict"): the form's terms of NARROW_CONFLICT_FORMS and the per-CTA
    slope by least squares on log time over narrow_conflict_fit_rows (or `t`), the output indices' share `out_set`
    of the L2 set fixed (0 = none), through the knee, every other term shipped."""
    from scipy.optimize import least_squares

    t = narrow_conflict_fit_rows() if t is None else t.reset_index(drop=True)
    f = narrow_features(t, float(hw.units)) if f is None else f.reset_index(drop=True)
    y = np.log(t["median_us"].to_numpy(float))
    names = NARROW_CONFLICT_FORMS[form] + _SLOPE
    start = ({"first_conflict": 20.0, "round_conflict": 0.05, "first_rankw": 0.05, "rankw": 0.001}
             | TK.NARROW_PERCTA_FIRST_CANDIDATE | (start or {}))
    fixed = {"out_set": out_set} if out_set else {}

    def res(x):
        return np.log(np.maximum(narrow_price_fast(t, f, hw, dict(zip(names, map(float, x))) | fixed), 1e-3)) - y
    lo = [-300.0 if k.startswith("first") else (-0.2 if k == "round_conflict" else 0.0) for k in names]
    hi = [400.0 if k.startswith("first") else 80.0 for k in names]
    r = least_squares(res, [start[k] for k in names], bounds=(lo, hi), diff_step=0.02, xtol=1e-6)
    return {k: round(float(v), 4) for k, v in zip(names, r.x)} | fixed | {
        "fit_rows": int(len(t)), "rms_log_error": round(float(np.sqrt(np.mean(r.fun ** 2))), 4)}


#: the start of fit_narrow_conflict's "rankw" fits (the least squares falls into a far minimum, rms ~0.6, from grid 20's
#: terms; this start is the "conflict_rankw" fit's, rounded)
NARROW_RANKW_START = {"first": -13.0, "first_radix": -21.0, "first_rankw": 0.25, "round": 0.39, "scan": 0.7,
                      "radix": 8.0, "rank": 0.001}

#: grid 22: TensorRT-LLM's narrow 256-thread decode launches over short rows, all above 8 CTAs per SM (1070-2610 rows:
#: 9-20 CTAs per SM; 2.55K-5.95K scores, 18 of 32 at <= 3.5K: the shortest rows grid 21 ran 1.2-2x fast), recorded /
#: gaussian / uniform, their scores 0.32-1.13 of the L2 (13 at 0.5-0.8); controls: single 512-thread CTAs at a mid and a
#: long row, a split launch, the prefill entry; no (scores, rows, length) of it in a committed top-k CSV
GRID22_NARROW = ([("recorded", r, n) for r, n in ((1690, 2550), (2170, 2650), (1860, 2750), (2290, 2850), (2570, 3050),
                                                 (1490, 3150), (1290, 3350), (2020, 3450), (1610, 3750), (2440, 4150),
                                                 (1380, 4650), (2520, 5900))]
                 + [("gaussian", r, n) for r, n in ((1780, 2600), (1540, 2750), (2250, 2900), (1830, 3150), (2610, 3250),
                                                    (1270, 3650), (1950, 4050), (1130, 4550), (1660, 5050), (2180, 5750))]
                 + [("uniform", r, n) for r, n in ((1650, 2650), (2060, 2700), (1640, 2950), (2500, 3150), (1350, 3400),
                                                   (1780, 3850), (2370, 4450), (1070, 5150), (1450, 5650), (2100, 5950))])
GRID22_CONTROLS = [("recorded", r, n) for r, n in ((330, 36000), (270, 120000), (44, 210000))]
GRID22_PREFILL = [("recorded", 1180, 31500)]
GRID22 = GRID22_NARROW + GRID22_CONTROLS
GRID22_PREDICTION = "topk_engines_grid22_prediction_2026-11-27.csv"
GRID22_MEASURED = "topk_engines_nvidia-h100-80gb-hbm3_2026-11-27_grid22.csv"


def grid22_frame() -> pd.DataFrame:
    """GRID22's rows: TensorRT-LLM's decode dispatch at GRID22's shapes, its prefill entry at GRID22_PREFILL's."""
    return engines_frame(GRID22, GRID22_PREFILL)


def regime22(kernel, rows, n, sms: float = 132.0) -> np.ndarray:
    """GRID22's regimes: the narrow short-row regimes of grid 16 (regime16; every narrow row is above 8 CTAs per SM)."""
    return regime16(kernel, rows, n, sms)


def predict_grid22(hw: HardwareSpec, out: str | Path | None = None) -> pd.DataFrame:
    """GRID22 priced three ways: `pred_main_us` main 9addb67's product price (grid 20's NARROW_PERCTA_FIRST_CANDIDATE),
    `pred_us` THE candidate (TK.NARROW_PERCTA_RANKW_CANDIDATE: the first CTA's part in its threshold-bin sort's work,
    the output indices in the L2 set), `pred_noset_us` the same form without the indices (TK.NARROW_PERCTA_RANKW_NOSET)."""
    t = grid22_frame()
    for col, rule in (("pred_main_us", TK.NARROW_PERCTA_FIRST_CANDIDATE), ("pred_us", TK.NARROW_PERCTA_RANKW_CANDIDATE),
                      ("pred_noset_us", TK.NARROW_PERCTA_RANKW_NOSET)):
        with narrow_additive(False, rule):
            t[col] = predict_trtllm(t, hw)
    return _launch_columns(t, hw, regime22, ["pred_main_us", "pred_us", "pred_noset_us"], out)


def measured22(pred_csv: str | Path | None = None, meas_csv: str | Path | None = None) -> pd.DataFrame:
    """The committed grid22 prediction joined to its measurement (`wrong` = the selection check failed, time kept)."""
    return measured10(pred_csv or F.DATA_DIR / GRID22_PREDICTION, meas_csv or F.DATA_DIR / GRID22_MEASURED)


def grid22_accuracy(by_dist: bool = False, shipped: str = "main") -> pd.DataFrame:
    """grid22 per regime, every row BLIND: TensorRT-LLM (both entries) by main 9addb67's product price (`main`), the
    threshold-bin-sort candidate (`cand`) and it without the output indices in the set (`noset`); goal on `shipped`."""
    groups = (((CSV_KERNEL["trtllm"], CSV_KERNEL["trtllm_prefill"]), "trtllm"),)
    return _grid_accuracy(measured22(), 22, groups, (("pred_us", "cand"), ("pred_noset_us", "noset")), shipped, by_dist)
