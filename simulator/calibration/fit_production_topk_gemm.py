"""Production kernels measured by lab/kernels/measure_production_kernels.py (H100): SGLang's radix top-k (kind
topk_sglang) and fp8 GEMMs (per-tensor gemm_fp8, per-row gemm_fp8_rowwise: the kinds fitted before on other shapes;
block-scaled gemm_fp8_block: new). Three steps, in this order:

1. first look  every measured shape priced from the kernels' source structure alone (simulator/kernels/
               topk_production.py, gemm_fp8.py) with rates the project had before these measurements: the top-k
               kind's loop round = the measured dependent-load latency (DRAM / L2 pointer chase of the device's fitted
               latency block), resident CTAs from the source; the block GEMM with the per-row fp8 kernel's fitted terms.
               `first_look` writes those predictions (committed before the measurements were read).
2. fit         the new kind's terms (loop round from DRAM / L2, per-launch fixed time, per-wave CTA time) fitted on
               FIT_TOPK / FIT_GEMM shapes only (least squares on log time).
3. held out    every other shape judged with the fitted terms, by regime (top-k: decode rows 1-128 / prefill rows 1024;
               distributions gaussian (fit) / recorded / uniform; GEMM: per-tensor / per-row / block, decode M <= 64 /
               prefill M >= 256).

Score distributions per top-k shape come from the same recipe the measurement used (recorded rows resampled with
fp16 dither, gaussian, uniform): `sample_rows` draws sample_count(n) rows on the CPU and the kernels' pass models count
their sweeps and gathers (the slowest row of a one-wave launch sets its time; the mean otherwise).
"""
from __future__ import annotations

import functools
import math
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from hwmodels.roofline import price
from hwmodels.spec import Efficiency, HardwareSpec
from simulator.kernels import cublaslt as CL
from simulator.kernels import gemm_fp8 as G
from simulator.kernels import topk_production as P
from simulator.shipped import traces_dir

DATA_DIR = Path(__file__).resolve().parents[2] / "hwmodels" / "calibration" / "data" / "production_kernels"
SAMPLE_ROWS = 8
#: sampled values per (distribution, length) for the pass statistics: a one-wave launch lasts as long as its slowest
#: row, the expected largest of up to 132 rows (expected_max), which 8 sampled rows cannot estimate where a row's round
#: count is a rare value (gaussian rows of 4096: 0 refinement rounds in ~40 % of rows, 3 in ~6 %, so 128 rows almost
#: surely hold a 3-round row that 8 samples rarely show). Short rows get up to SAMPLE_ROWS_MAX rows, long rows at least
#: SAMPLE_ROWS, within SAMPLE_VALUES values in all (the pass model's CPU time)
SAMPLE_ROWS_MAX = 64
SAMPLE_VALUES = 1 << 22


def sample_count(n: int) -> int:
    """Rows sampled for the pass statistics of rows of length n (SAMPLE_ROWS_MAX, SAMPLE_VALUES)."""
    return int(max(SAMPLE_ROWS, min(SAMPLE_ROWS_MAX, SAMPLE_VALUES // max(int(n), 1))))
#: the shapes the fit sees; everything else is held out
FIT_TOPK = {"dist": ("gaussian",), "rows": (1, 128)}
FIT_GEMM = {"m": (1, 64, 1024), "kn": ((4096, 6144), (14336, 4096), (7168, 576))}
CSV_NAME = {"sglang": "sgl_topk"}
TOPK_TERMS = ("iter_us", "iter_l2_us", "phase_us")


@functools.lru_cache(maxsize=1)
def _recorded_rows() -> tuple[np.ndarray, ...]:
    """The recorded score rows (read once; read-only: sample_rows draws from them)."""
    z = np.load(traces_dir() / "attention" / "codegqa_16k_h100_2026-11-22.npz")
    rows = z["measure.gvr_rows"].astype(np.float32)
    out = tuple(r[~np.isnan(r)] for r in rows)
    for r in out:
        r.setflags(write=False)
    return out


def sample_rows(dist: str, n: int, count: int, seed: int = 0, bases: int | None = None) -> list[np.ndarray]:
    """`count` rows of length n drawn as lab/kernels/measure_production_kernels.py draws them; recorded rows cycle
    over the first `bases` recorded score rows (default all of them: the harness's row i of a launch resamples
    recorded row i mod their count, so a launch of R rows holds rows 0..R-1 only)."""
    rng = np.random.default_rng(seed)
    out = []
    rec = _recorded_rows() if dist == "recorded" else None
    for i in range(count):
        if dist == "gaussian":
            out.append(rng.standard_normal(n).astype(np.float32))
        elif dist == "uniform":
            out.append(rng.random(n).astype(np.float32))
        else:
            base = rec[i % min(len(rec), bases or len(rec))]
            v = base[rng.integers(0, len(base), n)] * (1.0 + rng.uniform(-1.0, 1.0, n) * 2.0 ** -11)
            out.append(v.astype(np.float32))
    return out


@functools.lru_cache(maxsize=None)
def sampled_pass_stats(kernel: str, dist: str, n: int, k: int = 2048) -> dict:
    """topk_production.pass_stats of `kernel` over the rows sample_rows(dist, n, sample_count(n)) draws (seed 0),
    memoized: the same (kernel, dist, n, k) always draws the same rows, and every fit, grid and test asks again.
    The per-row arrays are read-only (a caller that wrote into them would change every later caller's)."""
    st = P.pass_stats(kernel, sample_rows(dist, int(n), sample_count(int(n))), int(k))
    for v in st["values"].values():
        v.setflags(write=False)
    return st


def load(path: str | Path) -> pd.DataFrame:
    df = pd.read_csv(path)
    return df


def topk_frame(df: pd.DataFrame, kernel: str = "sglang") -> pd.DataFrame:
    """The measured rows of one top-k kernel with their pass statistics (module docstring)."""
    t = df[(df["family"] == "topk") & (df["kernel"] == CSV_NAME[kernel])].copy().reset_index(drop=True)
    cache: dict = {}
    cols = {c: [] for c in P.STAT_NAMES}
    for _, r in t.iterrows():
        key = (r["dist"], int(r["n"]))
        if key not in cache:
            cache[key] = sampled_pass_stats(kernel, r["dist"], int(r["n"]), int(r["k"]))
        st = cache[key]
        one_wave = r["rows"] <= P.CTA_SLOTS[kernel] * 132
        for c in cols:   # one wave: its slowest row (the expected largest of `rows` rows); more: the average row
            cols[c].append(P.expected_max(st["values"][c], r["rows"]) if one_wave else st[f"{c}_mean"])
    for c, v in cols.items():
        t[c] = v
    return t


def topk_regime(t: pd.DataFrame) -> pd.Series:
    phase = np.where(t["rows"] >= 1024, "prefill rows 1024", "decode rows 1-128")
    return pd.Series([f"top-k sglang: {p}, {d}" for p, d in zip(phase, t["dist"])], index=t.index)


def topk_fit_mask(t: pd.DataFrame) -> np.ndarray:
    return (t["dist"].isin(FIT_TOPK["dist"]) & t["rows"].isin(FIT_TOPK["rows"])).to_numpy()


def predict_topk_us(t: pd.DataFrame, hw: HardwareSpec, eff: Efficiency, kernel: str = "sglang") -> np.ndarray:
    from simulator.ops import OpBuilder

    b = OpBuilder(len(t))
    P.add_topk_ops(b, kernel, t["rows"].to_numpy(float), t["n"].to_numpy(float), 2048.0, t["sweeps"].to_numpy(float),
                   t["gathers"].to_numpy(float), gather_iters=t["gather_iters"].to_numpy(float) if "gather_iters" in t
                   else None, rounds=t["rounds"].to_numpy(float) if "rounds" in t else None)
    ops = b.build()
    s = price(ops, hw.with_efficiency(eff), "graph") - hw.launch_graph_s
    return np.bincount(ops.setting, weights=s, minlength=len(t)) * 1e6


def first_look_eff(hw: HardwareSpec, kind: str = "topk_sglang", kernel: str = "sglang") -> Efficiency:
    """Source-only terms: one resident CTA per SM (SGLang) / 4 (TensorRT-LLM), a loop round = one dependent load
    (the device's measured DRAM latency; its L2 latency for reads that hit), no fixed time beyond the launch."""
    e = hw.efficiency
    return replace(e, cta_slots={**e.cta_slots, kind: P.CTA_SLOTS[kernel]},
                   iter_s={**e.iter_s, kind: e.dram_latency_s or 0.35e-6},
                   iter_l2_s={**e.iter_l2_s, kind: e.l2_latency_s or 0.15e-6},
                   fixed_s={**e.fixed_s, kind: 0.0}, cta_fixed_s={**e.cta_fixed_s, kind: 0.0},
                   sync_s={**e.sync_s, kind: 0.0})


#: the kernel-level fixed time of topk_sglang is NOT fitted: the fit rows (FIT_TOPK: rows 1 and 128 <= 132 SMs) are all
#: one wave, where a per-kernel and a per-wave constant cannot be told apart. It is taken from the device's fitted
#: single-CTA radix top-k kind (fixed_us[topk_cta], fit_topk_cta.py on the project's own topk_cta campaign: a one-CTA
#: radix select timed the same way, in CUDA graphs), and everything else the fit finds per row is per CTA, paid by every
#: wave (the barrier phases, SGL_PHASES, and the load rounds)
FIXED_FROM = "topk_cta"


def pinned_fixed_us(hw: HardwareSpec) -> float:
    return float(hw.efficiency.fixed_s.get(FIXED_FROM, 0.0)) * 1e6


def topk_eff_with(hw: HardwareSpec, x, kind: str = "topk_sglang", kernel: str = "sglang") -> Efficiency:
    """Efficiency with the top-k terms x = (iter_us, iter_l2_us, phase_us); fixed = pinned_fixed_us, no cta_fixed."""
    e = first_look_eff(hw, kind, kernel)
    it, it_l2, ph = x
    l1 = {kind: P.sglang_iter_l1_us(it_l2, (e.l2_latency_s or 0.0) * 1e6) * 1e-6} if kernel == "sglang" else {}
    return replace(e, iter_s={**e.iter_s, kind: it * 1e-6}, iter_l2_s={**e.iter_l2_s, kind: it_l2 * 1e-6},
                   fixed_s={**e.fixed_s, kind: pinned_fixed_us(hw) * 1e-6}, cta_fixed_s={**e.cta_fixed_s, kind: 0.0},
                   sync_s={**e.sync_s, kind: ph * 1e-6}, iter_l1_s={**e.iter_l1_s, **l1})


def fit_topk(t: pd.DataFrame, hw: HardwareSpec) -> dict:
    """iter_us, iter_l2_us (a load round from DRAM / L2) and phase_us (one barrier phase of a CTA, SGL_PHASES) by least
    squares on log time over the FIT_TOPK rows; fixed_us pinned (FIXED_FROM), cta_fixed_us 0."""
    from scipy.optimize import least_squares

    m = topk_fit_mask(t)
    y = np.log(t["median_us"].to_numpy(float)[m])
    sub = t[m]

    def resid(x):
        return np.log(np.maximum(predict_topk_us(sub, hw, topk_eff_with(hw, x)), 1e-3)) - y
    r = least_squares(resid, [0.35, 0.15, 0.5], bounds=([0.01, 0.01, 0.0], [5.0, 5.0, 50.0]))
    return {k: round(float(v), 4) for k, v in zip(TOPK_TERMS, r.x)} | {
        "fixed_us": round(pinned_fixed_us(hw), 4), "fixed_from": f"fixed_us.{FIXED_FROM}", "cta_fixed_us": 0.0,
        "fit_rows": int(m.sum()), "rms_log_error": round(float(np.sqrt(np.mean(r.fun ** 2))), 4)}


# ---- GEMMs --------------------------------------------------------------------------------------------------------

GEMM_KIND = {"fp8_tensorwise": "gemm_fp8", "fp8_rowwise": "gemm_fp8_rowwise", "fp8_block": "gemm_fp8_block",
             "fp8_block_cublaslt": "gemm_fp8_block_cublaslt", "bf16": "gemm"}
BLOCK_TERMS = ("compute", "memory", "fixed_us", "cta_fixed_us", "iter_us")
#: the measured kernels cuBLASLt's small-M selection table (simulator/kernels/data/cublaslt_small_m.yaml) covers
SMALL_M_DTYPE = {"fp8_tensorwise": "fp8", "bf16": "bf16"}


def gemm_frame(df: pd.DataFrame) -> pd.DataFrame:
    g = df[df["family"] == "gemm"].copy().reset_index(drop=True)
    g = g.rename(columns={"rows": "m", "k": "kk"})
    g["K"] = g["kk"].astype(float)
    g["N"] = g["n"].astype(float)
    return g


def gemm_regime(g: pd.DataFrame) -> pd.Series:
    ph = np.where(g["m"] >= 256, "prefill M>=256", "decode M<=64")
    return pd.Series([f"GEMM {k}: {p}" for k, p in zip(g["kernel"], ph)], index=g.index)


def gemm_fit_mask(g: pd.DataFrame) -> np.ndarray:
    kn = list(zip(g["K"].astype(int), g["N"].astype(int)))
    return (g["m"].isin(FIT_GEMM["m"]).to_numpy() & np.array([x in FIT_GEMM["kn"] for x in kn]))


def _block_step_args(hw: HardwareSpec, eff: Efficiency, tile_step: bool | None = None,
                     runtime_sfb_steps: float | None = None) -> dict:
    """DeepGEMM's K step as latency + the tile's WGMMA time (simulator.kernels.gemm_fp8.TILE_STEP): the kind's iter
    time and the device's dense fp8 peak; {} (every K step one iteration) when tile_step (default TILE_STEP) is off or
    the kind has none."""
    lat = eff.iter_s.get("gemm_fp8_block", 0.0)
    if not (G.TILE_STEP if tile_step is None else tile_step) or not lat:
        return {}
    args = {"step_lat_s": lat, "fp8_flops_s": hw.peak_flops["fp8"]}
    if runtime_sfb_steps is not None:   # a trial value (fit_block); default: the module's fitted constant
        args["runtime_sfb_steps"] = runtime_sfb_steps
    if G.PROMOTION and hw.peak_flops.get("fp32"):
        args["fp32_flops_s"] = hw.peak_flops["fp32"]
    return args


def predict_gemm_us(g: pd.DataFrame, hw: HardwareSpec, eff: Efficiency, rule: bool = True,
                    launch_convention: str = "graph", tile_step: bool | None = None,
                    runtime_sfb_steps: float | None = None, small_m: bool = True) -> np.ndarray:
    """Each measured GEMM as the model emits it: bf16 (kind gemm), per-tensor / per-row fp8 (simulator.layers.fp8_gemm,
    the split-K reduce included), block-scaled (simulator.kernels.gemm_fp8). Small-M bf16 / per-tensor fp8: cuBLASLt's
    selection table, and where no entry covers the shape its structural rule (simulator.kernels.cublaslt.derive;
    rule=False: the full-device fallback instead). tile_step: DeepGEMM's K step with the tile's WGMMA time (default
    simulator.kernels.gemm_fp8.TILE_STEP; False: the tile-blind step). small_m=False: no small-M kernel model at all,
    every bf16 / per-tensor row one kernel filling the device, as the serving op model prices them while its
    cuBLASLt switch is off (simulator.kernels.cublaslt.priced_on)."""
    from simulator.layers import fp8_gemm
    from simulator.ops import OpBuilder

    out = np.zeros(len(g))
    for kern in g["kernel"].unique():
        idx = np.flatnonzero((g["kernel"] == kern).to_numpy())
        sub = g.iloc[idx]
        m, K, N = sub["m"].to_numpy(float), sub["K"].to_numpy(float), sub["N"].to_numpy(float)
        if kern in ("fp8_block", "fp8_block_cublaslt"):
            for j in range(len(sub)):
                bj = OpBuilder(1)
                if kern == "fp8_block":   # DeepGEMM's tile walk (kind gemm_fp8_block)
                    G.add_block_gemm(bj, "g", np.array([m[j]]), K[j], N[j], 1.0, hw.units,
                                     **_block_step_args(hw, eff, tile_step, runtime_sfb_steps))
                else:                     # cuBLASLt's 128 x 128 tiles + split-K (kind gemm_fp8_block_cublaslt)
                    G.add_block_gemm_cublaslt(bj, "g", np.array([m[j]]), K[j], N[j], 1.0)
                ops = bj.build()
                out[idx[j]] = (price(ops, hw.with_efficiency(eff), "graph").sum()
                               - (hw.launch_graph_s if launch_convention == "device" else 0.0)) * 1e6
            continue
        for j in range(len(sub)):
            bj = OpBuilder(1)
            small = small_m and kern in SMALL_M_DTYPE and (
                CL.select(SMALL_M_DTYPE[kern], m[j], K[j], N[j]) is not None
                or (rule and CL.derive(SMALL_M_DTYPE[kern], m[j], K[j], N[j]) is not None))
            if small:
                # cuBLASLt's small-M selection (simulator.kernels.cublaslt): its CTAs + the split-K reduce
                CL.add_gemm(bj, "g", GEMM_KIND[kern], SMALL_M_DTYPE[kern], np.array([m[j]]), K[j], N[j],
                            1.0 if kern != "bf16" else 2.0, 1.0 if kern != "bf16" else 2.0, 1.0, rule=rule)
            elif kern == "bf16":   # simulator.layers.gemm's bf16 op
                bj.add("g", "gemm", flops=2.0 * m[j] * K[j] * N[j], bytes_read=K[j] * N[j] * 2.0 + m[j] * K[j] * 2.0,
                       bytes_written=m[j] * N[j] * 2.0, dtype="bf16")
            else:
                fp8_gemm(bj, "g", np.array([m[j]]), K[j], N[j], 1.0, 1.0, kind=GEMM_KIND[kern])
            ops = bj.build()
            t = price(ops, hw.with_efficiency(eff), "graph")
            # small-M rows: the in-graph price, launches kept (simulator.calibration.fit_cublaslt_rule.graph_price_us:
            # the chain's terms were fitted so; the measured per-call graph time holds the gaps between the kernels);
            # the others: device time, one launch per kernel subtracted (the full-device fits' convention)
            drop = 0 if (small and eff.wave_fixed_s) or launch_convention == "graph" else len(t)
            out[idx[j]] = (t.sum() - drop * hw.launch_graph_s) * 1e6
    return out


def block_first_look_eff(hw: HardwareSpec) -> Efficiency:
    """The block kind priced with the per-row fp8 kernel's fitted terms (same tile walk, one CTA per SM)."""
    e = hw.efficiency
    src = "gemm_fp8_rowwise"
    return replace(e, compute={**e.compute, "gemm_fp8_block": e.compute[src]},
                   memory={**e.memory, "gemm_fp8_block": e.memory[src]},
                   fixed_s={**e.fixed_s, "gemm_fp8_block": e.fixed_s.get(src, 0.0)},
                   cta_slots={**e.cta_slots, "gemm_fp8_block": 1.0},
                   cta_fixed_s={**e.cta_fixed_s, "gemm_fp8_block": e.cta_fixed_s.get(src, 0.0)},
                   iter_s={**e.iter_s, "gemm_fp8_block": e.iter_s.get(src, 0.0) or 1e-9})


def block_eff_with(hw: HardwareSpec, x, unfilled_stage_us: float = 0.0) -> Efficiency:
    """The block kind's terms x = (compute, memory, fixed_us, cta_fixed_us, iter_us) and its per-unfilled-stage time
    (sync_us; simulator.kernels.gemm_fp8.UNFILLED_STAGES) on the first-look efficiency."""
    e = block_first_look_eff(hw)
    c, mem, fx, cf, it = x
    k = "gemm_fp8_block"
    return replace(e, compute={**e.compute, k: c}, memory={**e.memory, k: mem}, fixed_s={**e.fixed_s, k: fx * 1e-6},
                   cta_fixed_s={**e.cta_fixed_s, k: cf * 1e-6}, iter_s={**e.iter_s, k: it * 1e-6},
                   sync_s={**e.sync_s, k: unfilled_stage_us * 1e-6})


#: the block kind's per-kernel fixed time is PINNED at 0, not fitted: its rows are priced in-graph (predict_gemm_us,
#: launch kept), so the gap between two graph nodes is the one launch_graph term every op pays, and the persistent
#: kernel's own start / drain is its per-wave CTA time (cta_fixed); with the launch subtracted (the convention before)
#: the fitted fixed_us (2.19 us) held the measured graph gap and the serving step added launch_graph on top of it. The
#: fit rows are 4 shapes, so four free terms is the most they can carry (a free fixed_us fitted to 0.006 us there)
BLOCK_FIXED_US = 0.0
#: with the tile's WGMMA time on each K step's chain (simulator.kernels.gemm_fp8.TILE_STEP) the body's compute term
#: counts the same tensor work a second time, at the device rate: PINNED at the datasheet peak (1.0; the chain, not the
#: body, carries the MMAs), not fitted (freed, the 6 fit rows drive it to its 1.5 bound, i.e. out of the model)
BLOCK_COMPUTE_TILE_STEP = 1.0


def fit_block(g: pd.DataFrame, hw: HardwareSpec, tile_step: bool | None = None, x0: list[float] | None = None,
              fill_x0: list[float] | None = None) -> dict:
    """compute, memory, cta_fixed_us, iter_us of gemm_fp8_block by least squares on log time over its FIT_GEMM rows,
    priced in-graph (launch kept, as the serving step prices it); fixed_us pinned (BLOCK_FIXED_US); tile_step (default
    simulator.kernels.gemm_fp8.TILE_STEP): the K step with the tile's WGMMA time, compute then pinned too. x0: the
    start of the free terms (default: fixed values; a test starts at the committed terms, the fit's fixed point);
    fill_x0: the fill curve's start (fit_fill_curve), where gemm_fp8.FILL_CURVE is on and g has the fill7 column."""
    from scipy.optimize import least_squares

    named = g["fit"].fillna(False).to_numpy(bool) if "fit" in g.columns else gemm_fit_mask(g)
    sel = (g["kernel"] == "fp8_block").to_numpy() & named
    sub = g[sel]
    y = np.log(sub["median_us"].to_numpy(float))

    tile_step = G.TILE_STEP if tile_step is None else tile_step
    x0_given = x0
    if tile_step:   # the tensor work is on the K-step chain at peak: compute pinned (BLOCK_COMPUTE_TILE_STEP)
        def full(x):
            return [BLOCK_COMPUTE_TILE_STEP, x[0], BLOCK_FIXED_US, x[1], x[2]]
        x0, lo, hi = [0.8, 2.0, 0.3], [0.05, 0.0, 0.001], [1.5, 50.0, 5.0]
    else:
        def full(x):
            return [x[0], x[1], BLOCK_FIXED_US, x[2], x[3]]
        x0, lo, hi = [0.8, 0.8, 2.0, 0.3], [0.05, 0.05, 0.0, 0.001], [1.5, 1.5, 50.0, 5.0]
    # the runtime-predicated promotion's extra step latencies (simulator.kernels.gemm_fp8.RUNTIME_SFB): one more free
    # term, the last of x; 0 (no term) when the rule is off or the step is tile-blind
    free_sfb = bool(tile_step and G.RUNTIME_SFB)
    n_base = len(x0)
    if free_sfb:
        x0, lo, hi = x0 + [0.5], lo + [0.0], hi + [10.0]
    # the time of a pipeline stage a short K loop leaves unfilled (simulator.kernels.gemm_fp8.UNFILLED_STAGES): one
    # more free term, the last of x; 0 (no term) when the rule is off
    free_fill = bool(G.UNFILLED_STAGES)
    if free_fill:
        x0, lo, hi = x0 + [0.05], lo + [0.0], hi + [1.0]

    if x0_given is not None:
        x0 = list(x0_given)

    def sfb_of(x):
        return x[n_base] if free_sfb else 0.0

    def fill_of(x):
        return x[-1] if free_fill else 0.0

    def resid(x):
        return np.log(np.maximum(predict_gemm_us(sub, hw, block_eff_with(hw, full(x), fill_of(x)),
                                                 tile_step=tile_step, runtime_sfb_steps=sfb_of(x)), 1e-3)) - y
    curve, G.FILL_CURVE = G.FILL_CURVE, False   # the terms are fitted under the linear unfilled-stage rule
    try:
        r = least_squares(resid, x0, bounds=(lo, hi))
    finally:
        G.FILL_CURVE = curve
    pinned = {"compute_pinned": "BLOCK_COMPUTE_TILE_STEP (the WGMMA time is on the K-step chain at peak)"} \
        if tile_step else {}
    out = {k: round(float(v), 4) for k, v in zip(BLOCK_TERMS, full(r.x))} | {
        "fixed_us_pinned": "BLOCK_FIXED_US (in-graph pricing: the graph gap is launch_graph)"} | pinned | {
        "runtime_sfb_steps": round(float(sfb_of(r.x)), 4),
        "unfilled_stage_us": round(float(fill_of(r.x)), 4),
        "fit_rows": int(sel.sum()), "rms_log_error": round(float(np.sqrt(np.mean(r.fun ** 2))), 4)}
    if free_fill and curve and "fill7" in g.columns:   # the fill curve replaces the linear rule (gemm_fp8.FILL_CURVE)
        fc = fit_fill_curve(g[g["fill7"].fillna(False).to_numpy(bool)].reset_index(drop=True), hw,
                            block_eff_with(hw, full(r.x)), sfb_of(r.x), x0=fill_x0)
        out |= fc | {"fill_curve_note": "the kind's other terms fitted under the linear rule on the named fit rows, "
                                        "then the fill curve (sync_us = fill_us, FILL_STEP_RATIO) on the fill7 rows"}
    return out


def fill_curve_us(g: pd.DataFrame, hw: HardwareSpec, eff: Efficiency, fill_us: float, ratio: float,
                  runtime_sfb_steps: float | None = None) -> np.ndarray:
    """g's DeepGEMM rows priced with the fill curve on (gemm_fp8.FILL_CURVE: full fill fill_us as the kind's sync_us,
    per-step ratio `ratio`), eff's other terms."""
    e = replace(eff, sync_s={**eff.sync_s, "gemm_fp8_block": fill_us * 1e-6})
    old = (G.FILL_CURVE, G.FILL_STEP_RATIO)
    G.FILL_CURVE, G.FILL_STEP_RATIO = True, ratio
    try:
        return predict_gemm_us(g, hw, e, runtime_sfb_steps=runtime_sfb_steps)
    finally:
        G.FILL_CURVE, G.FILL_STEP_RATIO = old


def fit_fill_curve(g: pd.DataFrame, hw: HardwareSpec, eff: Efficiency, runtime_sfb_steps: float | None = None,
                   x0: list[float] | None = None) -> dict:
    """The fill curve's full fill (fill_us) and per-step ratio (fill_step_ratio; simulator.kernels.gemm_fp8.FILL_CURVE)
    by least squares on log time over g's rows (the fill7 K scans), eff's other terms held; x0: the start (default
    1.2 us, 0.8)."""
    from scipy.optimize import least_squares

    y = np.log(g["median_us"].to_numpy(float))

    def resid(x):
        return np.log(np.maximum(fill_curve_us(g, hw, eff, x[0], x[1], runtime_sfb_steps), 1e-3)) - y
    r = least_squares(resid, x0 or [1.2, 0.8], bounds=([0.0, 0.3], [5.0, 0.999]))
    return {"fill_us": round(float(r.x[0]), 4), "fill_step_ratio": round(float(r.x[1]), 4),
            "fill_curve_fit_rows": len(g), "fill_curve_rms_log_error": round(float(np.sqrt(np.mean(r.fun ** 2))), 4)}


def error_table(pred, meas, regime: pd.Series, fit: np.ndarray) -> pd.DataFrame:
    err = (np.asarray(pred) / np.asarray(meas) - 1.0) * 100.0
    d = pd.DataFrame({"regime": regime.to_numpy(), "part": np.where(fit, "fit", "held-out"), "err": err})
    rows = []
    for (reg, part), s in d.groupby(["regime", "part"]):
        a = s["err"].abs()
        rows.append({"regime": reg, "part": part, "n": len(s), "median_abs_pct": round(a.median(), 1),
                     "p90_abs_pct": round(a.quantile(0.9), 1), "median_signed_pct": round(s["err"].median(), 1)})
    return pd.DataFrame(rows)


def first_look(shapes_csv: str | Path, hw: HardwareSpec, out: str | Path) -> pd.DataFrame:
    """Price every measured shape from the source structure alone (module docstring, step 1) and write the predictions.
    Reads only the shape columns of `shapes_csv` (the timings are not loaded)."""
    cols = ["family", "kernel", "dist", "rows", "n", "k", "device", "date"]
    df = pd.read_csv(shapes_csv, usecols=cols)
    df["median_us"] = np.nan
    t = topk_frame(df)
    t["pred_us"] = predict_topk_us(t, hw, first_look_eff(hw))
    g = gemm_frame(df)
    g = g[g["kernel"] != "bf16"].reset_index(drop=True)
    eff = block_first_look_eff(hw)
    g["pred_us"] = predict_gemm_us(g, hw, eff)
    res = pd.concat([t[["family", "kernel", "dist", "rows", "n", "k", "sweeps", "gathers", "pred_us"]],
                     g.rename(columns={"m": "rows", "kk": "k"})[["family", "kernel", "dist", "rows", "n", "k",
                                                                  "pred_us"]]], ignore_index=True)
    res["model"] = "first look: source structure; top-k loop round = measured load latency, block GEMM = rowwise terms"
    res.to_csv(out, index=False, float_format="%.4f")
    return res


#: the fresh hold-out: shapes in none of the committed rows (lab/kernels/measure_production_kernels.py --grid fresh
#: measures the same lists); predictions written by `predict_fresh` and committed before the measurement
FRESH_TOPK = [(d, r, n) for d in ("gaussian", "recorded", "uniform") for r in (2, 8, 32, 256, 512)
              for n in (8192, 32768, 131072, 524288)]
FRESH_GEMM = [(kern, m, k, n) for kern in ("bf16", "fp8_tensorwise", "fp8_rowwise") for m in (1, 16, 64)
              for k, n in [(7168, x) for x in (256, 512, 1024, 1536, 2304)] + [(2048, 576), (4096, 576)]]


def fresh_shapes() -> pd.DataFrame:
    """The fresh hold-out's shapes in the measurement CSV's columns (no timings)."""
    rows = [{"family": "topk", "kernel": "sgl_topk", "dist": d, "rows": r, "n": n, "k": 2048} for d, r, n in FRESH_TOPK]
    rows += [{"family": "gemm", "kernel": kern, "dist": "", "rows": m, "n": n, "k": k} for kern, m, k, n in FRESH_GEMM]
    return pd.DataFrame(rows)


def predict_fresh(hw: HardwareSpec, out: str | Path | None = None) -> pd.DataFrame:
    """The model's time for every fresh shape with the device's committed terms (hw.efficiency), written to `out`."""
    df = fresh_shapes()
    t = topk_frame(df)
    t["pred_us"] = predict_topk_us(t, hw, hw.efficiency)
    g = gemm_frame(df)
    g["pred_us"] = predict_gemm_us(g, hw, hw.efficiency)
    res = pd.concat([t[["family", "kernel", "dist", "rows", "n", "k", "sweeps", "gathers", "pred_us"]],
                     g.rename(columns={"m": "rows", "kk": "k"})[["family", "kernel", "dist", "rows", "n", "k",
                                                                  "pred_us"]]], ignore_index=True)
    if out is not None:
        res.to_csv(out, index=False, float_format="%.4f")
    return res


#: the blind top-k set (lab/kernels/measure_production_kernels.py --grid topk_blind measures the same list, BLIND_TOPK):
#: SGLang's kernel at row lengths in none of the earlier grids, decode rows 1-64, multi-wave rows 160-2048, prefill rows
#: 1536 / 4096, all three distributions; priced by this model and by the model before its barrier-phase rules (commit
#: 1081e97), both committed before the measurement (`predict_topk_blind`)
BLIND_TOPK_SHAPES = ([(r, n) for r in (1, 6, 24, 64) for n in (3072, 12288, 49152, 196608, 786432)]
                     + [(r, n) for r in (160, 400, 1000, 2048) for n in (6144, 24576, 98304)]
                     + [(r, 393216) for r in (400, 2048)]
                     + [(r, n) for r in (1536, 4096) for n in (3072, 12288, 49152)])
BLIND_TOPK = [(d, r, n) for d in ("recorded", "gaussian", "uniform") for r, n in BLIND_TOPK_SHAPES]
BLIND_PREDICTION = "production_kernels_topk_blind_prediction_2026-11-26.csv"


#: the blind set's prefill rows (rows 2048 belong to the multi-wave grid)
BLIND_PREFILL_ROWS = (1536, 4096)


def blind_regime(rows) -> np.ndarray:
    rows = np.asarray(rows)
    return np.where(rows <= 64, "decode rows 1-64", np.where(np.isin(rows, BLIND_PREFILL_ROWS),
                                                              "prefill rows 1536 / 4096", "multi-wave rows 160-2048"))


def _price_topk_shapes(shapes, hw: HardwareSpec, out: str | Path | None) -> pd.DataFrame:
    """SGLang top-k shapes [(score distribution, rows, row length)] at k 2048 priced with the device's committed terms
    (`pred_us`), written to `out`."""
    df = pd.DataFrame([{"family": "topk", "kernel": "sgl_topk", "dist": d, "rows": r, "n": n, "k": 2048}
                       for d, r, n in shapes])
    t = topk_frame(df)
    t["pred_us"] = predict_topk_us(t, hw, hw.efficiency)
    res = t[SHAPE_KEYS + ["sweeps", "gathers", "gather_iters", "rounds", "pred_us"]]
    if out is not None:
        res.to_csv(out, index=False, float_format="%.4f")
    return res


def predict_topk_blind(hw: HardwareSpec, out: str | Path | None = None) -> pd.DataFrame:
    """This model's time for every blind top-k shape with the device's committed terms, written to `out`."""
    return _price_topk_shapes(BLIND_TOPK, hw, out)


def blind_accuracy(pred_csv: str | Path, meas_csv: str | Path, hw: HardwareSpec | None = None) -> pd.DataFrame:
    """Per regime x distribution, the committed predictions of the blind top-k set (this model: `pred_us`; the model
    before the barrier-phase rules: `pred_1081e97_us`) against their measurement; every row held out. With `hw`, also
    the device's current terms (`now_*`): LOOKED-AT, the L2 hit curve replaced the all-or-nothing rule after these
    rows' L2-edge errors were seen."""
    m = _predicted_and_measured(pred_csv, meas_csv)
    reg = pd.Series([f"top-k sglang: {g}, {d}" for g, d in zip(blind_regime(m["rows"]), m["dist"])])
    meas = m["median_us"].astype(float)
    none = np.zeros(len(m), bool)
    new = error_table(m["pred_us"].astype(float), meas, reg, none).drop(columns="part")
    old = error_table(m["pred_1081e97_us"].astype(float), meas, reg, none).drop(columns=["part", "n"]).rename(
        columns={"median_abs_pct": "1081e97_med", "p90_abs_pct": "1081e97_p90", "median_signed_pct": "1081e97_signed"})
    tab = new.merge(old, on="regime")
    if hw is not None:
        now = predict_topk_blind(hw).rename(columns={"pred_us": "now_us"})
        cur = m.merge(now[SHAPE_KEYS + ["now_us"]], on=SHAPE_KEYS, how="left")["now_us"].astype(float)
        t2 = error_table(cur, meas, reg, none).drop(columns=["part", "n"]).rename(
            columns={"median_abs_pct": "now_med", "p90_abs_pct": "now_p90", "median_signed_pct": "now_signed"})
        tab = tab.merge(t2, on="regime")
    return tab


#: the second blind top-k set (lab/kernels/measure_production_kernels.py --grid topk_blind2 measures the same list):
#: SGLang's kernel at row lengths in none of the earlier grids, every distribution; the L2's edge (score tensors of
#: 38-56 MiB at one wave, rows 32 / 64 / 128; rows in flight of 38-57 MiB over several waves, rows 300 / 1200) and
#: short rows (2.5K-14K scores at decode rows 1 / 8 / 40 and prefill rows 1024 / 3072). Priced before the measurement
#: by the model at db3789c, by this model (the L2 hit curve of regimes v4, then the one measured in the same call before
#: the top-k rows were read) and by an L1 variant (rejected on this set): BLIND2_MODELS, `blind2_accuracy`
BLIND2_EDGE_ONE_WAVE = [(r, n) for r, ns in ((32, (311296, 360448, 409600, 458752)),
                                             (64, (155648, 180224, 204800, 229376)),
                                             (128, (77824, 90112, 102400, 114688))) for n in ns]
BLIND2_EDGE_WAVES = [(r, n) for r in (300, 1200) for n in (75776, 88064, 100352, 112640)]
BLIND2_SHORT_DECODE = [(r, n) for r in (1, 8, 40) for n in (2560, 5120, 10240, 14336)]
BLIND2_SHORT_PREFILL = [(r, n) for r in (1024, 3072) for n in (2560, 7168, 14336)]
BLIND2_TOPK = [(d, r, n) for d in ("recorded", "gaussian", "uniform")
               for r, n in BLIND2_EDGE_ONE_WAVE + BLIND2_EDGE_WAVES + BLIND2_SHORT_DECODE + BLIND2_SHORT_PREFILL]
BLIND2_PREDICTION = "production_kernels_topk_blind2_prediction_2026-11-27.csv"


def blind2_regime(rows, n) -> np.ndarray:
    """The second blind set's regimes (BLIND2_TOPK's four groups)."""
    rows, n = np.asarray(rows), np.asarray(n)
    return np.where(n <= 16384, np.where(rows <= 64, "short rows, decode 1-40", "short rows, prefill 1024 / 3072"),
                    np.where(rows <= 132, "L2 edge, one wave (tensor 38-56 MiB)",
                             "L2 edge, waves (rows in flight 38-57 MiB)"))


BLIND2_FINE_CURVE = "production_kernels_topk_blind2_prediction_fine_curve_2026-11-27.csv"
BLIND2_MODELS = {"pred_db3789c_us": "db3789c", "pred_us": "coarse", "pred_curve_us": "fine", "pred_l1_us": "L1"}


def predict_topk_blind2(hw: HardwareSpec, out: str | Path | None = None) -> pd.DataFrame:
    """The device's committed model's time for every second-blind shape (`pred_us`), written to `out`. The committed
    predictions were made with it before the measurement: at 425564a (coarse L2 curve; with the L1 variant
    `pred_l1_us`, whose code that commit holds) and at 8366ada (the fine curve, `pred_curve_us`)."""
    return _price_topk_shapes(BLIND2_TOPK, hw, out)


def blind2_accuracy(pred_csv: str | Path, meas_csv: str | Path, by_dist: bool = True) -> pd.DataFrame:
    """Per regime (x distribution), the committed predictions of the second blind set against their measurement:
    db3789c_* = the model at main db3789c, coarse_* = this model with the regimes-v4 L2 curve (the primary prediction,
    commit 425564a), fine_* = with the L2 curve measured in the same call (commit 8366ada, before the top-k timings were
    read), L1_* = the rejected L1 variant (425564a). Every row held out."""
    m = _predicted_and_measured(pred_csv, meas_csv)
    reg = blind2_regime(m["rows"], m["n"])
    reg = pd.Series([f"top-k sglang: {g}, {d}" for g, d in zip(reg, m["dist"])] if by_dist else
                    [f"top-k sglang: {g}" for g in reg])
    meas = m["median_us"].astype(float)
    none = np.zeros(len(m), bool)
    tab = None
    for col, tag in BLIND2_MODELS.items():
        e = error_table(m[col].astype(float), meas, reg, none).drop(columns="part")
        e = e.rename(columns={"median_abs_pct": f"{tag}_med", "p90_abs_pct": f"{tag}_p90",
                              "median_signed_pct": f"{tag}_signed"})
        tab = e if tab is None else tab.merge(e.drop(columns="n"), on="regime")
    return tab


#: the third blind top-k set (lab/kernels/measure_production_kernels.py --grid topk_blind3 measures the same list):
#: SGLang's kernel (k = 2048, a compile-time constant of topk.cu) at row lengths in none of the earlier grids, chosen
#: for the regime the second set missed (short rows of 2.2K-15.5K at decode, rows 1-256, on the recorded scores) with
#: controls: long decode rows, prefill row counts, and gaussian / uniform rows. Priced before the measurement by the
#: model at main 65f5d1f and by this model (`predict_topk_blind3`, BLIND3_MODELS)
BLIND3_SHORT = (2200, 2900, 3700, 4500, 6000, 7700, 9500, 11800, 15500)
BLIND3_TOPK = ([("recorded", r, n) for r in (1, 4, 16, 64, 256) for n in BLIND3_SHORT]
               + [("recorded", r, n) for r in (8, 32) for n in (2500, 5200, 13000)]
               + [("recorded", 132, n) for n in (3300, 8200, 14000)] + [("recorded", 200, n) for n in (4000, 12000)]
               + [("recorded", r, n) for r in (1, 16, 100) for n in (30000, 120000, 500000, 1000000)]
               + [("recorded", r, n) for r in (512, 2048) for n in (2900, 6000, 11800, 30000)]
               + [("recorded", 4096, n) for n in (4500, 9500)]
               + [(d, r, n) for d in ("gaussian", "uniform") for r in (1, 16, 64) for n in (3700, 9500)]
               + [(d, 2048, 6000) for d in ("gaussian", "uniform")] + [(d, 16, 120000) for d in ("gaussian", "uniform")])
BLIND3_PREDICTION = "production_kernels_topk_blind3_prediction_2026-11-27.csv"
#: the committed predictions' columns: the model at main 65f5d1f, this model, and two variants judged beside it (not
#: shipped; each refitted on FIT_TOPK alone): without the L1 gathers (topk_production.SGL_L1_BYTES), and without the
#: histogram sweep's remainder rounds (SGL_HIST_UNROLL)
BLIND3_MODELS = {"pred_main_us": "main", "pred_us": "new", "pred_nol1_us": "noL1", "pred_norem_us": "norem"}


def blind3_regime(rows, n) -> np.ndarray:
    """The third blind set's regimes: row length (short <= 16,384) x rows (decode 1-16, one wave of 32-132, two waves
    of 200-256, prefill >= 512)."""
    rows, n = np.asarray(rows), np.asarray(n)
    short = np.where(rows <= 16, "short rows, decode 1-16", np.where(rows <= 132, "short rows, decode 32-132",
                     np.where(rows <= 256, "short rows, decode 200-256", "short rows, prefill 512-4096")))
    return np.where(n <= 16384, short, np.where(rows <= 132, "long rows, decode 1-100", "long rows, prefill"))


def _variant_us(t: pd.DataFrame, hw: HardwareSpec, x, remainder: bool = True, l1: bool = True) -> np.ndarray:
    """SGLang's time with the top-k terms x (iter, iter_l2, phase) as this model prices it, or a variant: the histogram
    sweep as ceil(n / 4096) rounds (remainder=False: before SGL_HIST_UNROLL) and / or no gathers from the L1
    (l1=False: before SGL_L1_BYTES)."""
    from simulator.ops import OpBuilder

    n = t["n"].to_numpy(float)
    b = OpBuilder(len(t))
    P.add_topk_ops(b, "sglang", t["rows"].to_numpy(float), n, 2048.0, t["sweeps"].to_numpy(float),
                   t["gathers"].to_numpy(float), gather_iters=t["gather_iters"].to_numpy(float),
                   rounds=t["rounds"].to_numpy(float))
    ops = b.build()
    if not remainder:
        live = t["sweeps"].to_numpy(float) > 0
        ops.serial_iters[:] = ops.serial_iters - np.where(live, P.sglang_histogram_rounds(n) - np.ceil(n / 4096), 0.0)
    if not l1:
        ops.l1_iters[:] = 0.0
    s = price(ops, hw.with_efficiency(topk_eff_with(hw, x)), "graph") - hw.launch_graph_s
    return np.bincount(ops.setting, weights=s, minlength=len(t)) * 1e6


def fit_topk_variant(t: pd.DataFrame, hw: HardwareSpec, remainder: bool = True, l1: bool = True) -> list[float]:
    """(iter_us, iter_l2_us, phase_us) of a variant (`_variant_us`), least squares on log time over FIT_TOPK only."""
    from scipy.optimize import least_squares

    m = topk_fit_mask(t)
    sub, y = t[m], np.log(t["median_us"].to_numpy(float)[m])
    r = least_squares(lambda x: np.log(np.maximum(_variant_us(sub, hw, x, remainder, l1), 1e-3)) - y,
                      [0.35, 0.15, 0.5], bounds=([0.01, 0.01, 0.0], [5.0, 5.0, 50.0]))
    return [float(v) for v in r.x]


def predict_topk_blind3(hw: HardwareSpec, committed_csv: str | Path, out: str | Path | None = None) -> pd.DataFrame:
    """This model's time for every third-blind shape with the device's committed terms (`pred_us`), and the two
    variants' (BLIND3_MODELS; each refitted on committed_csv's FIT_TOPK rows alone), written to `out` (`pred_main_us`
    is added by the caller from a `git archive` of main)."""
    t = _price_topk_shapes(BLIND3_TOPK, hw, None).copy()
    fit_rows = topk_frame(load(committed_csv))
    t["pred_nol1_us"] = _variant_us(t, hw, fit_topk_variant(fit_rows, hw, l1=False), l1=False)
    t["pred_norem_us"] = _variant_us(t, hw, fit_topk_variant(fit_rows, hw, remainder=False), remainder=False)
    if out is not None:
        t.to_csv(out, index=False, float_format="%.4f")
    return t


def blind3_accuracy(pred_csv: str | Path, meas_csv: str | Path, by_dist: bool = True,
                    hw: HardwareSpec | None = None) -> pd.DataFrame:
    """Per regime (x distribution), the committed predictions of the third blind set against their measurement, one
    column group per model of BLIND3_MODELS; every row held out. With `hw`, also the device's current model (`now`:
    LOOKED-AT, the gathers of an L1-resident row stopped counting as L2 / HBM bytes after this measurement was read)."""
    m = _predicted_and_measured(pred_csv, meas_csv)
    if hw is not None:
        t = topk_frame(m[SHAPE_KEYS + ["median_us"]])
        m["pred_now_us"] = predict_topk_us(t, hw, hw.efficiency)
    reg = blind3_regime(m["rows"], m["n"])
    reg = pd.Series([f"top-k sglang: {g}, {d}" for g, d in zip(reg, m["dist"])] if by_dist else
                    [f"top-k sglang: {g}" for g in reg])
    meas = m["median_us"].astype(float)
    none = np.zeros(len(m), bool)
    tab = None
    for col, tag in (BLIND3_MODELS | {"pred_now_us": "now"}).items():
        if col not in m:
            continue
        e = error_table(m[col].astype(float), meas, reg, none).drop(columns="part")
        e = e.rename(columns={"median_abs_pct": f"{tag}_med", "p90_abs_pct": f"{tag}_p90",
                              "median_signed_pct": f"{tag}_signed"})
        tab = e if tab is None else tab.merge(e.drop(columns="n"), on="regime")
    return tab


#: the columns that name one measured shape of the campaign CSVs
SHAPE_KEYS = ["family", "kernel", "dist", "rows", "n", "k"]


def _predicted_and_measured(pred_csv: str | Path, meas_csv: str | Path) -> pd.DataFrame:
    """The committed predictions joined with their measurements on the shape columns (shapes in both only)."""
    pr = pd.read_csv(pred_csv, keep_default_na=False)
    me = pd.read_csv(meas_csv, keep_default_na=False)
    for d in (pr, me):
        d["dist"] = d["dist"].astype(str)
    return pr.merge(me[SHAPE_KEYS + ["median_us"]], on=SHAPE_KEYS, how="inner")


def fresh_accuracy(pred_csv: str | Path, meas_csv: str | Path, hw: HardwareSpec | None = None) -> pd.DataFrame:
    """Per regime, the committed predictions of the fresh shapes against their measurement (every row held out); with
    `hw`, also the error of the device's current terms (`now_*`: looked-at where a rule changed after the measurement)."""
    m = _predicted_and_measured(pred_csv, meas_csv)
    reg = pd.Series(np.where(m["family"] == "topk",
                             [f"top-k sglang: {'decode rows 2-32' if r <= 32 else 'multi-wave rows 256-512'}, {d}"
                              for r, d in zip(m["rows"], m["dist"])],
                             [f"GEMM {k}: decode M<=64, {'K 7168, N 256-2304' if kk == 7168 else 'N 576, K 2048-4096'}"
                              for k, kk in zip(m["kernel"], m["k"])]))
    meas = m["median_us"].astype(float)
    none = np.zeros(len(m), bool)
    tab = error_table(m["pred_us"].astype(float), meas, reg, none).drop(columns="part")
    if hw is not None:
        now = predict_fresh(hw).rename(columns={"pred_us": "now_us"})
        now["dist"] = now["dist"].fillna("").astype(str)
        cur = m.merge(now[SHAPE_KEYS + ["now_us"]], on=SHAPE_KEYS, how="left")["now_us"]
        t2 = error_table(cur, meas, reg, none).drop(columns=["part", "n"]).rename(
            columns={"median_abs_pct": "now_med", "p90_abs_pct": "now_p90", "median_signed_pct": "now_signed"})
        tab = tab.merge(t2, on="regime")
    return tab


#: the second GEMM hold-out (lab/kernels/measure_production_kernels.py --grid fresh2 measures the same lists): bf16 and
#: per-tensor fp8 at shapes in no earlier campaign; predictions written by `predict_fresh2`, committed before measuring
FRESH2_GEMM = [(kern, m, k, n) for kern in ("bf16", "fp8_tensorwise") for m in (1, 8, 32, 64)
               for k, n in [(k, n) for k in (7168, 5120) for n in (384, 768, 1280, 3072)]
               + [(k, n) for n in (576, 1024) for k in (1536, 3072, 6144)]]


def small_m_covered(g: pd.DataFrame) -> np.ndarray:
    """Rows cuBLASLt's small-M selection table covers (the others are priced by the full-device fallback)."""
    return np.array([k in SMALL_M_DTYPE and CL.select(SMALL_M_DTYPE[k], m, K, N) is not None
                     for k, m, K, N in zip(g["kernel"], g["m"], g["K"], g["N"])], bool)


def predict_fresh2(hw: HardwareSpec, out: str | Path | None = None) -> pd.DataFrame:
    """The model's time for every second-hold-out GEMM with the device's committed terms, and whether the selection
    table covers it (`covered`), written to `out`."""
    df = pd.DataFrame([{"family": "gemm", "kernel": kern, "dist": "", "rows": m, "n": n, "k": k}
                       for kern, m, k, n in FRESH2_GEMM])
    g = gemm_frame(df)
    g["pred_us"] = predict_gemm_us(g, hw, hw.efficiency)
    g["covered"] = small_m_covered(g).astype(int)
    res = g.rename(columns={"m": "rows", "kk": "k"})[["family", "kernel", "dist", "rows", "n", "k", "covered",
                                                       "pred_us"]]
    if out is not None:
        res.to_csv(out, index=False, float_format="%.4f")
    return res


def fresh2_accuracy(pred_csv: str | Path, meas_csv: str | Path) -> pd.DataFrame:
    """Per regime (kernel x covered by the selection table or not), the committed predictions of the second hold-out
    against their measurement (every row held out, predicted before it was measured)."""
    m = _predicted_and_measured(pred_csv, meas_csv)
    reg = pd.Series([f"GEMM {k}: decode M<=64, {'selection table' if c else 'fallback (not in the table)'}"
                     for k, c in zip(m["kernel"], m["covered"].astype(int))])
    return error_table(m["pred_us"].astype(float), m["median_us"].astype(float), reg,
                       np.zeros(len(m), bool)).drop(columns="part")


def write(data_csv: str | Path, target: str, hw: HardwareSpec, out_dir: Path) -> tuple[Path, dict, dict]:
    """Fit the top-k (SGLang) and block-scaled GEMM kinds on their fit shapes and merge their terms into
    out_dir/<target>.yaml (other terms kept): write_topk, write_block_deepgemm (gemm_fp8_block on DeepGEMM's own rows,
    DEEPGEMM_FIT_CSV), then write_block_cublaslt on data_csv's torch._scaled_mm rows (each changes only its own keys)."""
    _, tk = write_topk(data_csv, target, hw, out_dir)
    _, bk = write_block_deepgemm(DATA_DIR / DEEPGEMM_FIT_CSV, target, hw, out_dir)
    p, _ = write_block_cublaslt(data_csv, target, hw, out_dir)
    return p, tk, bk


def write_topk(data_csv: str | Path, target: str, hw: HardwareSpec, out_dir: Path) -> tuple[Path, dict]:
    """Fit the top-k kinds alone (fit_topk on data_csv's FIT_TOPK rows) and merge their terms into out_dir/<target>.yaml:
    only the top-k keys change (the GEMM terms and the rest of the production_kernels block are kept)."""
    from hwmodels.yamlio import load_yaml
    from simulator.calibration import checks as C

    tk = fit_topk(topk_frame(load(data_csv)), hw)
    # the L1 gather iteration is derived from the fitted L2 one (topk_production.sglang_iter_l1_us), not fitted
    tk["iter_l1_us"] = round(P.sglang_iter_l1_us(tk["iter_l2_us"], (hw.efficiency.l2_latency_s or 0.0) * 1e6), 4)
    tk["iter_l1_from"] = (f"iter_l2_us - latency.l2_us + {P.SGL_L1_LATENCY_US} us (an L1 hit, ASSUMPTION: "
                          f"topk_production.SGL_L1_LATENCY_US)")
    ks, kt = "topk_sglang", "topk_trtllm"
    p = Path(out_dir) / f"{target}.yaml"
    old = (load_yaml(p, "fitted efficiency file") or {}).get("production_kernels", {}) if p.exists() else {}
    block = dict(old) | {
        "topk_sglang": tk,
        # TensorRT-LLM's record (its job model's terms) is written by topk_engines.write_trtllm: kept as it is
        "topk_trtllm": old.get("topk_trtllm", "written by simulator/calibration/topk_engines.py write_trtllm")}
    block.setdefault("fit_shapes", {})["topk"] = {k: list(v) for k, v in FIT_TOPK.items()}
    # TensorRT-LLM's top-k was not measured: its resident CTAs come from its source, its loop round and fixed times are
    # SGLang's (ASSUMPTION: the same dependent-load round per iteration; its float4 loads move 4x the values per round)
    own = {"cta_slots": {ks: P.CTA_SLOTS["sglang"], kt: P.CTA_SLOTS["trtllm"]},
           "iter_us": {ks: tk["iter_us"], kt: tk["iter_us"]}, "iter_l2_us": {ks: tk["iter_l2_us"], kt: tk["iter_l2_us"]},
           "fixed_us": {ks: tk["fixed_us"], kt: tk["fixed_us"]},
           "cta_fixed_us": {ks: 0.0, kt: tk["phase_us"]}, "sync_us": {ks: tk["phase_us"]},
           "iter_l1_us": {ks: tk["iter_l1_us"]}, "production_kernels": block}
    doc = C.merge_into(p, own, {"cta_slots": (ks, kt), "iter_us": (ks, kt), "iter_l2_us": (ks, kt),
                                "fixed_us": (ks, kt), "cta_fixed_us": (ks, kt), "sync_us": (ks,), "iter_l1_us": (ks,),
                                "production_kernels": None})
    before = load_yaml(p, "fitted efficiency file") if p.exists() else {}
    for key in own:   # keep each table's key order (a changed term stays on its line; a new one goes last)
        if isinstance(doc.get(key), dict) and isinstance(before.get(key), dict):
            doc[key] = {k: doc[key][k] for k in before[key] if k in doc[key]} | {
                k: v for k, v in doc[key].items() if k not in before[key]}
    return C.write_checked(p, doc, ""), tk


def _campaign_frames(data_csv: str | Path, first_look_csv: str | Path, gemm_csv: str | Path | None = None):
    """The campaign's top-k rows and non-bf16 GEMM rows, each with the first look's committed price (pred_us, NaN
    where the first look has no row) and its regime: (t, its regimes, g, its regimes). gemm_csv: take the GEMM rows
    from that campaign instead (e.g. the _rotated one)."""
    df = load(data_csv)
    fl = pd.read_csv(first_look_csv)
    if gemm_csv is not None:
        dg = load(gemm_csv)
        df = pd.concat([df[df["family"] != "gemm"], dg[dg["family"] == "gemm"]], ignore_index=True)
    t = topk_frame(df)
    keys = ["kernel", "dist", "rows", "n"]
    t["pred_us"] = t[keys].merge(fl[keys + ["pred_us"]], on=keys, how="left")["pred_us"].to_numpy()
    g = gemm_frame(df)
    g = g[g["kernel"] != "bf16"].reset_index(drop=True)
    gk = ["kernel", "rows", "n", "k"]
    g["pred_us"] = g.rename(columns={"m": "rows", "kk": "k"})[gk].merge(
        fl[fl["family"] == "gemm"][gk + ["pred_us"]], on=gk, how="left")["pred_us"].to_numpy()
    return t, topk_regime(t), g, gemm_regime(g)


def first_look_errors(data_csv: str | Path, first_look_csv: str | Path) -> pd.DataFrame:
    """Every campaign row the first look priced (committed before the measurement, from the source alone): its regime
    (`top-k sglang: ...`, `GEMM <kernel>: ...`) and signed error err_pct = first-look price / measured - 1, in %."""
    t, rt, g, rg = _campaign_frames(data_csv, first_look_csv)
    out = pd.DataFrame({"regime": np.concatenate([rt.to_numpy(), rg.to_numpy()]),
                        "err_pct": np.concatenate([(t["pred_us"] / t["median_us"] - 1.0).to_numpy(),
                                                   (g["pred_us"] / g["median_us"] - 1.0).to_numpy()]) * 100.0})
    return out[np.isfinite(out["err_pct"])].reset_index(drop=True)


def accuracy(data_csv: str | Path, first_look_csv: str | Path, hw: HardwareSpec,
             gemm_csv: str | Path | None = None) -> pd.DataFrame:
    """Per regime: the first look's error (the committed predictions) and the held-out error of the fitted file's
    terms (fit rows listed apart). gemm_csv: take the GEMM rows from that campaign instead (e.g. the _rotated one,
    weights rotated past the L2; the terms stay those fitted on data_csv's rows)."""
    t, reg_t, g, reg_g = _campaign_frames(data_csv, first_look_csv, gemm_csv)
    fl_cols = ["regime", "first_look_med", "first_look_p90", "first_look_signed"]
    ren = {"median_abs_pct": "first_look_med", "p90_abs_pct": "first_look_p90", "median_signed_pct": "first_look_signed"}
    out = []
    first = error_table(t["pred_us"], t["median_us"], reg_t, np.zeros(len(t), bool)).rename(columns=ren)
    held = error_table(predict_topk_us(t, hw, hw.efficiency), t["median_us"], reg_t, topk_fit_mask(t))
    out.append(held.merge(first[fl_cols], on="regime", how="left"))
    # fit rows: the block kind's FIT_GEMM rows (the small-M chain of bf16 / per-tensor fp8 is fitted on another
    # campaign, simulator/calibration/fit_cublaslt_rule.py: every row here is held out for it)
    fit = gemm_fit_mask(g) & (g["kernel"] == "fp8_block").to_numpy()
    first = error_table(g["pred_us"], g["median_us"], reg_g, np.zeros(len(g), bool)).rename(columns=ren)
    # the campaign's block rows are torch._scaled_mm's, i.e. cuBLASLt's block kernel: priced by its own kind
    held = error_table(predict_gemm_us(as_cublaslt_block(g), hw, hw.efficiency), g["median_us"], reg_g, fit)
    out.append(held.merge(first[fl_cols], on="regime", how="left"))
    res = pd.concat(out, ignore_index=True)
    res.loc[res["part"] == "fit", ["first_look_med", "first_look_p90", "first_look_signed"]] = np.nan
    return res


# ---- the fifth GEMM set: fp8 per-tensor / per-row / block scales, decode to prefill (blind) -------------------------

#: (K, N) of real weight GEMMs [M, K] x [K, N] (the layer, the tensor-parallel degree): Llama-3.1-8B gate_up TP2, down
#: TP4, o TP4, down TP1; Llama-3.1-70B qkv TP8, gate_up TP4, o TP2, down TP8, gate_up TP2, down TP1; Qwen2.5-7B qkv,
#: down TP2; Qwen2.5-72B down TP1 and gate_up TP8 (N 7392: not a multiple of 128, per-tensor / per-row only); DeepSeek-V3
#: dense gate_up TP8, q_a, q_b TP8, kv_b TP8, dense down TP8, o TP1
BLIND5_KN = [(4096, 14336), (3584, 4096), (1024, 4096), (14336, 4096), (8192, 1280), (8192, 14336), (4096, 8192),
             (3584, 8192), (8192, 28672), (28672, 8192), (3584, 4608), (9472, 3584), (29568, 8192), (7168, 4608),
             (7168, 1536), (1536, 3072), (512, 4096), (2304, 7168), (16384, 7168), (8192, 7392)]
#: M per regime, none measured before (the earlier campaigns: M 1 / 8 / 12 / 16 / 24 / 32 / 40 / 48 / 64 / 256 / 1024 /
#: 4096). cuBLASLt has no block-scaled kernel at M 1 (CUBLAS_STATUS_NOT_SUPPORTED in the committed campaigns), so the
#: block kind's decode rows start at M 8
BLIND5_M = {"decode M<=64": (2, 4, 20, 28, 56), "mid M 96-768": (96, 128, 192, 384, 512, 768),
            "prefill M>=1536": (1536, 2048, 3072, 6144, 8192)}
BLIND5_M_BLOCK_DECODE = (8, 20, 28, 56)
BLIND5_KINDS = ("fp8_tensorwise", "fp8_rowwise", "fp8_block")
BLIND5_PER_REGIME = 11
BLIND5_PREDICTION = "production_kernels_blind5_prediction_2026-11-27.csv"


def blind5_shapes() -> list[tuple[str, int, int, int]]:
    """The fifth GEMM set: per kind and regime BLIND5_PER_REGIME (kernel, M, K, N), the (K, N) list walked from a
    per-kind offset and M cycled through the regime's values (block: K and N multiples of 128)."""
    out = []
    for ki, kern in enumerate(BLIND5_KINDS):
        kns = [kn for kn in BLIND5_KN if kern != "fp8_block" or (kn[0] % 128 == 0 and kn[1] % 128 == 0)]
        for ri, (reg, ms) in enumerate(BLIND5_M.items()):
            if kern == "fp8_block" and reg.startswith("decode"):
                ms = BLIND5_M_BLOCK_DECODE
            for j in range(BLIND5_PER_REGIME):
                k, n = kns[(7 * ki + 3 * ri + j) % len(kns)]
                out.append((kern, int(ms[(j + ki) % len(ms)]), k, n))
    return out


def blind5_regime(kernel, rows) -> np.ndarray:
    rows = np.asarray(rows)
    ph = np.where(rows <= 64, "decode M<=64", np.where(rows <= 768, "mid M 96-768", "prefill M>=1536"))
    return np.array([f"GEMM {k}: {p}" for k, p in zip(np.asarray(kernel), ph)])


def predict_blind5(hw: HardwareSpec, eff: Efficiency | None = None, launch_convention: str = "graph") -> pd.DataFrame:
    """Every fifth-set shape priced with `eff` (default: the device's committed terms): `pred_us`."""
    df = pd.DataFrame([{"family": "gemm", "kernel": kern, "dist": "", "rows": m, "n": n, "k": k}
                       for kern, m, k, n in blind5_shapes()])
    g = gemm_frame(df)
    g["pred_us"] = predict_gemm_us(g, hw, eff or hw.efficiency, launch_convention=launch_convention)
    return g.rename(columns={"m": "rows", "kk": "k"})[SHAPE_KEYS + ["pred_us"]]


def write_block(data_csv: str | Path, target: str, hw: HardwareSpec, out_dir: Path, frame=None) -> tuple[Path, dict]:
    """Fit the block-scaled GEMM kind alone (fit_block on data_csv's FIT_GEMM rows, priced in-graph) and merge its terms
    into out_dir/<target>.yaml: only gemm_fp8_block's keys change (the top-k terms and the rest are kept). frame: how
    data_csv is read into a gemm frame (default: a production_kernels campaign CSV)."""
    from hwmodels.yamlio import load_yaml
    from simulator.calibration import checks as C

    g = frame(data_csv) if frame is not None else gemm_frame(load(data_csv))
    bk = fit_block(g[g["kernel"] != "bf16"].reset_index(drop=True), hw)
    kb = "gemm_fp8_block"
    p = Path(out_dir) / f"{target}.yaml"
    old = (load_yaml(p, "fitted efficiency file") or {}).get("production_kernels", {}) if p.exists() else {}
    block = dict(old) | {kb: bk}
    block.setdefault("fit_shapes", {})[kb] = {"m": list(FIT_GEMM["m"]), "kn": [list(x) for x in FIT_GEMM["kn"]]}
    if "fit" in g.columns:   # named fit rows beyond FIT_GEMM (deepgemm_fit_frame)
        block["fit_shapes"][kb]["named_fit_csvs"] = list(DEEPGEMM_NAMED_FIT_CSVS)
    own = {"cta_slots": {kb: 1.0}, "iter_us": {kb: bk["iter_us"]}, "fixed_us": {kb: bk["fixed_us"]},
           "cta_fixed_us": {kb: bk["cta_fixed_us"]}, "compute": {kb: bk["compute"]}, "memory": {kb: bk["memory"]},
           "production_kernels": block}
    keys = {"cta_slots": (kb,), "iter_us": (kb,), "fixed_us": (kb,), "cta_fixed_us": (kb,), "compute": (kb,),
            "memory": (kb,), "production_kernels": None}
    if bk.get("fill_us"):   # the full fill is the kind's sync_us (gemm_fp8.FILL_CURVE)
        own["sync_us"], keys["sync_us"] = {kb: bk["fill_us"]}, (kb,)
    elif bk.get("unfilled_stage_us"):   # the unfilled-stage time is the kind's sync_us (gemm_fp8.UNFILLED_STAGES)
        own["sync_us"], keys["sync_us"] = {kb: bk["unfilled_stage_us"]}, (kb,)
    doc = C.merge_into(p, own, keys)
    before = load_yaml(p, "fitted efficiency file") if p.exists() else {}
    for key in own:   # keep each table's key order (a changed term stays on its line)
        if isinstance(doc.get(key), dict) and isinstance(before.get(key), dict):
            doc[key] = {k: doc[key][k] for k in before[key] if k in doc[key]} | {
                k: v for k, v in doc[key].items() if k not in before[key]}
    return C.write_checked(p, doc, ""), bk


BLIND5_MEASURED = "production_kernels_nvidia-h100-80gb-hbm3_2026-11-27_blind5.csv"
#: the fifth set's committed models: column -> label (production_kernels_blind5_prediction_2026-11-27_notes.txt)
BLIND5_MODELS = {"pred_main_us": "65f5d1f", "pred_us": "in-graph"}


def blind5_accuracy(pred_csv: str | Path | None = None, meas_csv: str | Path | None = None) -> pd.DataFrame:
    """Per regime (kind x decode / mid / prefill), each committed model's |error| median / p90 and signed median on the
    fifth GEMM set (every row blind: priced and committed before it was measured)."""
    m = _predicted_and_measured(pred_csv or DATA_DIR / BLIND5_PREDICTION, meas_csv or DATA_DIR / BLIND5_MEASURED)
    reg = pd.Series(blind5_regime(m["kernel"], m["rows"]))
    meas = m["median_us"].astype(float)
    tab = None
    for col, tag in BLIND5_MODELS.items():
        e = error_table(m[col].astype(float), meas, reg, np.zeros(len(m), bool)).drop(columns="part").rename(
            columns={"median_abs_pct": f"{tag}_med", "p90_abs_pct": f"{tag}_p90", "median_signed_pct": f"{tag}_signed"})
        tab = e if tab is None else tab.merge(e.drop(columns="n"), on="regime")
    return tab


# ---- cuBLASLt's block-scaled kernel: its own kind (gemm_fp8_block_cublaslt) ------------------------------------------

CUBLASLT_BLOCK_KIND = "gemm_fp8_block_cublaslt"


def block_cublaslt_eff_with(hw: HardwareSpec, x) -> Efficiency:
    """hw's terms with gemm_fp8_block_cublaslt's set to x = (compute, memory, fixed_us, cta_fixed_us, iter_us), one CTA
    resident per SM (218 KB of shared memory: the blind5 notes' kernels)."""
    e = hw.efficiency
    c, mem, fx, cf, it = x
    k = CUBLASLT_BLOCK_KIND
    return replace(e, compute={**e.compute, k: c}, memory={**e.memory, k: mem}, fixed_s={**e.fixed_s, k: fx * 1e-6},
                   cta_slots={**e.cta_slots, k: 1.0}, cta_fixed_s={**e.cta_fixed_s, k: cf * 1e-6},
                   iter_s={**e.iter_s, k: it * 1e-6})


#: named fit rows of gemm_fp8_block_cublaslt beside the 4 FIT_GEMM rows: torch._scaled_mm's block path timed in the
#: block-scaled fp8 grid (deepgemm_gemm_blind_*: its cublaslt rows) and the fifth GEMM set (its fp8_block rows), both
#: measured blind for earlier models and LOOKED-AT since (the split-K rule was read off their kernel names); named as fit
#: rows before the cuBLASLt rows of the block fp8 grid 4 (deepgemm_gemm_grid4_*) were measured. The 4 FIT_GEMM rows alone
#: ran the per-step time to its bound (iter_us 0.001): decode over-priced at large K, under-priced at small K
CUBLASLT_NAMED_FIT_GRID4 = (("deepgemm_gemm_blind_nvidia-h100-80gb-hbm3_2026-11-27.csv", "cublaslt"),
                            ("production_kernels_nvidia-h100-80gb-hbm3_2026-11-27_blind5.csv", "fp8_block"))

#: grid 12's candidate fit rows (shipped after grid 12 as CUBLASLT_NAMED_FIT): CUBLASLT_NAMED_FIT_GRID4 + every
#: timed cuBLASLt row of the block grids 4 / 5, fill7 and grids 8-11 (all measured blind for earlier models, LOOKED-AT
#: since; grid 11's workspace control gemm_grid11ws_* is left out: another workspace), fitted by write_block_cublaslt
#: under the shipped split rule ("workspace": CUBLASLT_GRID12_RULE) on the 4 FIT_GEMM rows of
#: production_kernels_nvidia-h100-80gb-hbm3_2026-11-26.csv
CUBLASLT_NAMED_FIT_GRID12 = CUBLASLT_NAMED_FIT_GRID4 + tuple(
    (f, "cublaslt") for f in ("deepgemm_gemm_grid4_nvidia-h100-80gb-hbm3_2026-11-27.csv",
                              "deepgemm_gemm_grid5_nvidia-h100-80gb-hbm3_2026-11-27.csv",
                              "deepgemm_gemm_fill7_nvidia-h100-80gb-hbm3_2026-11-27.csv",
                              "gemm_grid8_nvidia-h100-80gb-hbm3_2026-11-27.csv",
                              "gemm_grid9_nvidia-h100-80gb-hbm3_2026-11-27.csv",
                              "gemm_grid10_nvidia-h100-80gb-hbm3_2026-11-27.csv",
                              "gemm_grid11_nvidia-h100-80gb-hbm3_2026-11-27.csv"))
CUBLASLT_GRID12_RULE = "workspace"
#: what that writer call gives (compute, memory, fixed_us, cta_fixed_us, iter_us; 266 fit rows, rms log error 0.0599):
#: write_block_cublaslt(DATA_DIR / "production_kernels_nvidia-h100-80gb-hbm3_2026-11-26.csv", "H100-SXM",
#: load_hardware("H100-SXM"), <a copy of hwmodels/calibration/fitted>, named=CUBLASLT_NAMED_FIT_GRID12,
#: rule=CUBLASLT_GRID12_RULE); the terms then committed: CUBLASLT_TERMS_BEFORE_GRID12
CUBLASLT_GRID12_CAND_TERMS = (1.0, 0.8192, 0.0, 1.486, 0.3623)
#: the kind's terms before grid 12 (main on grid 12; what grids 9-11 judged the split rules with): 60 rows under "tiles"
CUBLASLT_TERMS_BEFORE_GRID12 = (1.0, 0.8425, 0.0, 1.095, 0.3879)
#: the kind's fit rows: grid 12 (44 shapes, BLIND, predictions committed in fa98159 before one device call;
#: benchmarks/accuracy_sections/gemm_grid12.py) judged the refit 6.6 / 8.2 % pooled, 5 of 5 regimes, against the terms
#: before (the 60 CUBLASLT_NAMED_FIT_GRID4 + FIT_GEMM rows under "tiles") 11.8 / 14.6 %, 2 of 5: the refit SHIPS
CUBLASLT_NAMED_FIT = CUBLASLT_NAMED_FIT_GRID12


def cublaslt_fit_frame(data_csv: str | Path | None = None, named: tuple | None = None) -> pd.DataFrame:
    """gemm_fp8_block_cublaslt's fit rows (kernel fp8_block_cublaslt, column fit = True): data_csv's FIT_GEMM block
    rows (a production_kernels campaign CSV; None: none) + every timed row of `named` (default CUBLASLT_NAMED_FIT)."""
    parts = []
    if data_csv is not None:
        g = gemm_frame(load(data_csv))
        g = g[(g["kernel"] == "fp8_block").to_numpy() & gemm_fit_mask(g)]
        parts.append(g)
    for name, kern in (CUBLASLT_NAMED_FIT if named is None else named):
        d = pd.read_csv(DATA_DIR / name)
        if "family" not in d.columns:   # a measure_deepgemm_gemm.py CSV
            d["family"], d["dist"] = "gemm", ""
        d = d[(d["family"] == "gemm") & (d["kernel"] == kern) & pd.to_numeric(d["median_us"], errors="coerce").notna()]
        parts.append(gemm_frame(d.assign(median_us=d["median_us"].astype(float))))
    g = pd.concat(parts, ignore_index=True)
    g["kernel"], g["fit"] = "fp8_block_cublaslt", True
    return g.reset_index(drop=True)


#: the split rule gemm_fp8_block_cublaslt's committed terms are fitted under: "workspace" (the rule shipped after grid 11)
#: since grid 12 (CUBLASLT_GRID12_RULE; before: "tiles", the rule before grid 9, with which grids 9-11 judged the rules
#: "work", "slices", "workspace"; grid 10's refit on more rows under "slices": CUBLASLT_GRID10_REFIT_TERMS, not shipped);
#: change this only with a fresh blind grid
CUBLASLT_FIT_SPLIT_RULE = CUBLASLT_GRID12_RULE


#: whether gemm_fp8_block_cublaslt's committed terms are fitted with the kind's per-tile turnover hidden across waves
#: (hwmodels.roofline.CTA_FIXED_HIDDEN, shipped after grid 14): False, the additive form (max(body, chain) + waves x
#: cta_fixed) they were fitted under at grid 12; the structure ships with those terms, as the split rules shipped with
#: terms fitted under an earlier rule (CUBLASLT_FIT_SPLIT_RULE). The refit under the hidden form
#: (CUBLASLT_GRID14_CAND_TERMS) met fewer of grid 14's regimes; change this only with a fresh blind grid
CUBLASLT_FIT_TURNOVER_HIDDEN = False


def fit_block_cublaslt(g: pd.DataFrame, hw: HardwareSpec, x0: list[float] | None = None, rule: str | None = None,
                       named: tuple | None = None, hidden: bool | None = None) -> dict:
    """compute, memory, cta_fixed_us and iter_us of gemm_fp8_block_cublaslt by least squares on log time over its fit
    rows (cublaslt_fit_frame: kernel fp8_block_cublaslt, fit True), priced in-graph with cuBLASLt's structure
    (simulator.kernels.gemm_fp8.add_block_gemm_cublaslt); compute bounded by the datasheet peak (1.0); fixed_us pinned
    (BLOCK_FIXED_US, the same reason as fit_block). x0: the start (compute, memory, cta_fixed_us, iter_us; default the
    fixed start the committed terms were fitted from; a test starts at the committed terms to check they are the fit's
    fixed point). The rows are priced under `rule` (default CUBLASLT_FIT_SPLIT_RULE, the split rule the committed terms
    were fitted under), whatever rule the kernel model ships, and with the turnover hidden or not (`hidden`, default
    CUBLASLT_FIT_TURNOVER_HIDDEN), whatever hwmodels.roofline ships; `named` (default CUBLASLT_NAMED_FIT) is only
    recorded."""
    from scipy.optimize import least_squares

    from simulator.kernels import gemm_fp8 as G

    sub = g[(g["kernel"] == "fp8_block_cublaslt").to_numpy() & g["fit"].fillna(False).to_numpy(bool)].copy()
    y = np.log(sub["median_us"].to_numpy(float))

    def full(x):
        return [x[0], x[1], BLOCK_FIXED_US, x[2], x[3]]

    def resid(x):
        return np.log(np.maximum(predict_gemm_us(sub, hw, block_cublaslt_eff_with(hw, full(x))), 1e-3)) - y
    shipped, G.CUBLASLT_SPLIT_RULE = G.CUBLASLT_SPLIT_RULE, (CUBLASLT_FIT_SPLIT_RULE if rule is None else rule)
    turnover = cublaslt_turnover_hidden(CUBLASLT_FIT_TURNOVER_HIDDEN if hidden is None else hidden)
    try:
        r = least_squares(resid, [0.8, 0.8, 1.0, 0.3] if x0 is None else x0,
                          bounds=([0.05, 0.05, 0.0, 0.001], [1.0, 1.5, 50.0, 5.0]))
    finally:
        G.CUBLASLT_SPLIT_RULE = shipped
        _restore_hidden(turnover)
    return {k: round(float(v), 4) for k, v in zip(BLOCK_TERMS, full(r.x))} | {
        "fixed_us_pinned": "BLOCK_FIXED_US (in-graph pricing: the graph gap is launch_graph)",
        "named_fit_csvs": [f"{n} ({k} rows)" for n, k in (CUBLASLT_NAMED_FIT if named is None else named)],
        "split_rule": CUBLASLT_FIT_SPLIT_RULE if rule is None else rule, "fit_rows": len(sub),
        "rms_log_error": round(float(np.sqrt(np.mean(r.fun ** 2))), 4)}


def write_block_cublaslt(data_csv: str | Path, target: str, hw: HardwareSpec, out_dir: Path, named: tuple | None = None,
                         rule: str | None = None) -> tuple[Path, dict]:
    """Fit gemm_fp8_block_cublaslt alone (fit_block_cublaslt on data_csv's FIT_GEMM block rows + the timed rows of
    `named`, default CUBLASLT_NAMED_FIT, priced under `rule`, default CUBLASLT_FIT_SPLIT_RULE) and merge its terms into
    out_dir/<target>.yaml: only that kind's keys are added (every other term, gemm_fp8_block's included, is kept)."""
    from hwmodels.yamlio import load_yaml
    from simulator.calibration import checks as C

    bk = fit_block_cublaslt(cublaslt_fit_frame(data_csv, named), hw, rule=rule, named=named)
    kb = CUBLASLT_BLOCK_KIND
    p = Path(out_dir) / f"{target}.yaml"
    before = load_yaml(p, "fitted efficiency file") if p.exists() else {}
    old = (before or {}).get("production_kernels", {})
    block = dict(old) | {kb: bk}
    block["fit_shapes"] = dict(block.get("fit_shapes", {})) | {
        kb: {"m": list(FIT_GEMM["m"]), "kn": [list(x) for x in FIT_GEMM["kn"]]}}
    own = {"cta_slots": {kb: 1.0}, "iter_us": {kb: bk["iter_us"]}, "fixed_us": {kb: bk["fixed_us"]},
           "cta_fixed_us": {kb: bk["cta_fixed_us"]}, "compute": {kb: bk["compute"]}, "memory": {kb: bk["memory"]},
           "production_kernels": block}
    doc = C.merge_into(p, own, {"cta_slots": (kb,), "iter_us": (kb,), "fixed_us": (kb,), "cta_fixed_us": (kb,),
                                "compute": (kb,), "memory": (kb,), "production_kernels": None})
    for key in own:   # keep each table's key order (the new kind goes last)
        if isinstance(doc.get(key), dict) and isinstance(before.get(key), dict):
            doc[key] = {k: doc[key][k] for k in before[key] if k in doc[key]} | {
                k: v for k, v in doc[key].items() if k not in before[key]}
    return C.write_checked(p, doc, ""), bk


def as_cublaslt_block(g: pd.DataFrame) -> pd.DataFrame:
    """g with its torch._scaled_mm block rows (kernel fp8_block) relabelled fp8_block_cublaslt, so predict_gemm_us prices
    them as cuBLASLt's kernel (kind gemm_fp8_block_cublaslt) rather than DeepGEMM's tile walk."""
    out = g.copy()
    out["kernel"] = out["kernel"].replace({"fp8_block": "fp8_block_cublaslt"})
    return out


# ---- DeepGEMM's own kernel: gemm_fp8_block fitted on its FIT_GEMM shapes ------------------------------------------

#: DeepGEMM fp8_gemm_nt (deepseek-ai/DeepGEMM 54e2261, 1D2D kernel) timed at the block kind's FIT_GEMM shapes (M 1 / 64 /
#: 1024 x the two (K, N) with N a multiple of 128), weights rotated past the L2 (lab/kernels/measure_deepgemm_gemm.py
#: --tag fit, lab/kernels/deepgemm_gemm_fit_grid.csv)
DEEPGEMM_FIT_CSV = "deepgemm_gemm_fit_nvidia-h100-80gb-hbm3_2026-11-27.csv"


def deepgemm_frame(path: str | Path) -> pd.DataFrame:
    """A measure_deepgemm_gemm.py CSV as a gemm frame: the timed DeepGEMM rows, kernel fp8_block (kind gemm_fp8_block)."""
    d = pd.read_csv(path)
    d = d[(d["kernel"] == "deepgemm") & pd.to_numeric(d["median_us"], errors="coerce").notna()].copy()
    d["family"], d["dist"], d["kernel"] = "gemm", "", "fp8_block"
    d["median_us"] = d["median_us"].astype(float)
    return gemm_frame(d).reset_index(drop=True)


#: named fit rows added to the FIT_GEMM rows: the decode-2 grid (53 rows, M 1-2048 over 16 DeepSeek-V3 / Qwen3 (K, N)),
#: measured blind for the models of 56e805c / aa5ca0b and then LOOKED-AT while the tile-aware K step was judged; named
#: as fit rows before the decode-3 grid was measured. The 6 FIT_GEMM rows alone (two (K, N), M 1 / 64 / 1024) pinned the
#: per-wave CTA time at 0 and put the persistent kernel's start / drain (~2-3 us at decode) into the per-step latency:
#: narrow-N decode over-priced, wide-N decode and prefill under-priced. And the fill7 rows (32 DeepGEMM rows, named as
#: fit rows before they were measured: lab/kernels/predict_deepgemm_gemm_fill7.py): one-wave K scans from 1 K step to
#: past the stage count at M 8 x N 2048, M 64 x N 8192, M 4 x N 4096, + 6 several-wave rows at K 512-1024, which carry
#: the unfilled-stage time (simulator.kernels.gemm_fp8.UNFILLED_STAGES)
DEEPGEMM_NAMED_FIT_CSVS = ("deepgemm_gemm_decode2_nvidia-h100-80gb-hbm3_2026-11-27.csv",
                           "deepgemm_gemm_fill7_nvidia-h100-80gb-hbm3_2026-11-27.csv")


#: the fill7 K scans: the fill curve's only fit rows (simulator.kernels.gemm_fp8.FILL_CURVE; fit_fill_curve)
DEEPGEMM_FILL7_CSV = "deepgemm_gemm_fill7_nvidia-h100-80gb-hbm3_2026-11-27.csv"


def deepgemm_fit_frame(data_csv: str | Path) -> pd.DataFrame:
    """The block kind's fit rows: data_csv's FIT_GEMM rows + every timed row of DEEPGEMM_NAMED_FIT_CSVS (column fit;
    column fill7: the rows of DEEPGEMM_FILL7_CSV)."""
    g = deepgemm_frame(data_csv)
    g["fit"] = gemm_fit_mask(g)
    named = [deepgemm_frame(Path(data_csv).parent / f).assign(fit=True, fill7=f == DEEPGEMM_FILL7_CSV)
             for f in DEEPGEMM_NAMED_FIT_CSVS]
    return pd.concat([g, *named], ignore_index=True)


def write_block_deepgemm(data_csv: str | Path, target: str, hw: HardwareSpec, out_dir: Path) -> tuple[Path, dict]:
    """Fit gemm_fp8_block (fit_block: compute, memory, cta_fixed_us, iter_us; fixed_us pinned) on DeepGEMM's own FIT_GEMM
    rows (data_csv: DEEPGEMM_FIT_CSV) + the named fit rows (DEEPGEMM_NAMED_FIT_CSVS) and merge its terms into
    out_dir/<target>.yaml (write_block's keys, nothing else)."""
    return write_block(data_csv, target, hw, out_dir, frame=deepgemm_fit_frame)


# --- cuBLASLt's fresh split-K set (split counts predicted before the measurement; the cuBLASLt block fp8 rule) ---
#: the fresh decode set's committed split predictions, the two models' prices (after the measurement), its measurement
#: and the _notes file of the launched kernels (their grids give the recorded split counts)
CUBLASLT_SPLIT7_PREDICTION = "cublaslt_block_split7_prediction_2026-11-27.csv"
CUBLASLT_SPLIT7_PRICES = "cublaslt_block_split7_prices_675b516_2026-11-27.csv"
CUBLASLT_SPLIT7_MEASURED = "deepgemm_gemm_fill7_nvidia-h100-80gb-hbm3_2026-11-27.csv"
CUBLASLT_SPLIT7_NOTES = "deepgemm_gemm_fill7_nvidia-h100-80gb-hbm3_2026-11-27_notes.txt"
#: the price columns of the fresh split set and their labels (main = the rule before, new = the rule read off the
#: recorded choices, shipped)
CUBLASLT_SPLIT7_MODELS = {"pred_main_us": "main", "pred_new_us": "new"}


def cublaslt_recorded_splits(notes: str) -> dict[tuple[int, int, int], int]:
    """(M, K, N) -> the split-K count of the cuBLASLt kernel the _notes file recorded: CTAs / 128 x 128 output tiles of
    a _splitK_ kernel, 1 for the others. The tiles are counted as launched: at decode cuBLASLt's 4 x 1 cluster pads the
    N tiles to a multiple of 4 (M 36 x N 1280 unsplit: 10 tiles, 12 CTAs), so M 12 x N 768's 24 split CTAs are 3
    slices of 8 padded tiles (the count read as round(24 / 6) = 4 before) and M 24 x N 1280's 60 are 5 of 12 (6
    before); rows whose padded tiles are not a whole number of clusters keep the plain count. Above M 128 cuBLASLt runs a
    4 x 2 cluster (grid [8, CTAs / 8, 1]: grid 11's _notes), padded the same way (M 256 x N 384's 16 CTAs are 2 slices of
    2 x 4 padded tiles)."""
    out = {}
    for line in notes.splitlines():
        mt = re.search(r"kernels cublaslt \(M (\d+), K (\d+), N (\d+)[^)]*\): (nvjet\S*) grid \[(\d+), (\d+), (\d+)\]",
                       line)
        if mt:
            m, k, n = (int(mt.group(i)) for i in (1, 2, 3))
            ctas = int(mt.group(5)) * int(mt.group(6)) * int(mt.group(7))
            tiles = math.ceil(m / 128) * math.ceil(n / 128)
            padded = math.ceil(m / 128) * math.ceil(math.ceil(n / 128) / 4) * 4
            if ctas % padded == 0 and int(mt.group(5)) in (4, 8):   # 4 x 1 or 4 x 2 clusters (M > 128: grid 11)
                tiles = padded
            out[(m, k, n)] = round(ctas / tiles) if "_splitK_" in mt.group(4) else 1
    return out


def cublaslt_split7_errors(models: dict | None = None) -> pd.DataFrame:
    """The fresh cuBLASLt split set's 16 rows: recorded split, the committed predictions (split_main, split_readoff),
    the models' times (priced after the measurement: `models` maps a price column to a label, default main / new) and
    their signed errors (%)."""
    from hwmodels import datafiles as DF

    p = pd.read_csv(DATA_DIR / CUBLASLT_SPLIT7_PREDICTION).merge(pd.read_csv(DATA_DIR / CUBLASLT_SPLIT7_PRICES),
                                                         on=["kernel", "rows", "k", "n"])
    rec = cublaslt_recorded_splits(DF.read_text(DATA_DIR / CUBLASLT_SPLIT7_NOTES))
    p["split_recorded"] = [rec[(m, k, n)] for m, k, n in zip(p["rows"], p["k"], p["n"])]
    me = pd.read_csv(DATA_DIR / CUBLASLT_SPLIT7_MEASURED)
    m = p.merge(me[me["kernel"] == "cublaslt"][["rows", "k", "n", "median_us"]], on=["rows", "k", "n"])
    for col, lab in (models or CUBLASLT_SPLIT7_MODELS).items():
        m[f"{lab}_err_pct"] = (m[col] / m["median_us"].astype(float) - 1.0) * 100.0
    return m


# --- cuBLASLt block fp8 grid 9 (split counts and times of main and the candidate split rule, committed before) ---
#: grid 9's committed prediction (lab/kernels/predict_gemm_grid9.py at 6cf7e30, committed in 09a8e20 before the
#: device call), its measurement (lab/kernels/measure_deepgemm_gemm.py --tag grid9) and the measurement's _notes file
CUBLASLT_GRID9_PREDICTION = "gemm_grid9_prediction_6cf7e30_2026-11-27_cublaslt.csv"
CUBLASLT_GRID9_MEASURED_GLOB = "gemm_grid9_nvidia-h100-80gb-hbm3_*.csv"
#: price column -> label: main = the shipped split rule (gemm_fp8.CUBLASLT_SPLIT_RULE "tiles"), cand = the rule read off
#: all 83 recorded choices ("work")
CUBLASLT_GRID9_MODELS = {"pred_main_us": "main", "pred_cand_us": "cand"}


def cublaslt_grid9_errors() -> pd.DataFrame:
    """Grid 9's 42 rows (cublaslt_grid_errors on CUBLASLT_GRID9_*): the committed prediction (split_main / split_cand,
    pred_main_us / pred_cand_us, regime), the measured median_us, split_recorded (the _notes file's count; 0 where not
    recorded) and each model's signed error (%); the prediction alone (no median_us column) before the measurement
    exists."""
    return cublaslt_grid_errors(CUBLASLT_GRID9_PREDICTION, CUBLASLT_GRID9_MEASURED_GLOB, CUBLASLT_GRID9_MODELS)


# --- cuBLASLt block fp8 grid 10 (split counts and times of main, the candidate rule and its refit, committed before) ---
#: grid 10's committed prediction (lab/kernels/predict_gemm_grid10.py at 83bdd87, committed in f099c09 before the device
#: call), its measurement (lab/kernels/measure_deepgemm_gemm.py --tag grid10) and the measurement's _notes file
CUBLASLT_GRID10_PREDICTION = "gemm_grid10_prediction_83bdd87_2026-11-27_cublaslt.csv"
CUBLASLT_GRID10_MEASURED_GLOB = "gemm_grid10_nvidia-h100-80gb-hbm3_*.csv"
#: price column -> label: main = the shipped split rule ("work"), cand = the rule read off all 125 recorded choices
#: ("slices") with the kind's terms as committed, cand_refit = "slices" with the kind's terms refitted under it
#: (lab/kernels/predict_gemm_grid10.py REFIT_TERMS)
CUBLASLT_GRID10_MODELS = {"pred_main_us": "main", "pred_cand_us": "cand", "pred_cand_refit_us": "cand_refit"}
#: cand_refit's terms (compute, memory, fixed_us, cta_fixed_us, iter_us), NOT SHIPPED: gemm_fp8_block_cublaslt refitted
#: under "slices" (fit_block_cublaslt, CUBLASLT_FIT_SPLIT_RULE "slices") on cublaslt_fit_frame(None) + the 143 timed
#: cuBLASLt rows of deepgemm_gemm_{blind,grid4,grid5,fill7}_* and gemm_grid{8,9}_* (199 rows, rms log error 0.063).
#: Grid 10: 5.6 / 14.6 % pooled, 3 of 4 regimes (cand 6.9 / 17.0, 3 of 4); not shipped because write_block_cublaslt fits
#: a different frame (data_csv's FIT_GEMM rows + CUBLASLT_NAMED_FIT), so the YAML it writes would not be these judged
#: terms: adopting them means naming these grids in CUBLASLT_NAMED_FIT and judging the writer's terms on a fresh grid
CUBLASLT_GRID10_REFIT_TERMS = (1.0, 0.8135, 0.0, 1.0713, 0.3784)


def cublaslt_grid_errors(prediction: str, measured_glob: str, models: dict) -> pd.DataFrame:
    """A cuBLASLt grid's rows: the committed prediction, the measured median_us, split_recorded (the _notes file's
    count; 0 where not recorded) and each model's signed error (%) (`models`: price column -> label); the prediction
    alone (no median_us column) before the measurement exists."""
    from hwmodels import datafiles as DF

    p = pd.read_csv(DATA_DIR / prediction)
    files = DF.glob(DATA_DIR, measured_glob)
    if not files:
        return p
    me = pd.read_csv(files[-1])
    me = me[(me["kernel"] == "cublaslt") & pd.to_numeric(me["median_us"], errors="coerce").notna()].copy()
    me["median_us"] = me["median_us"].astype(float)
    m = p.merge(me[["rows", "k", "n", "median_us"]], on=["rows", "k", "n"])
    for col, lab in models.items():
        m[f"{lab}_err_pct"] = (m[col] / m["median_us"] - 1.0) * 100.0
    notes = DF.glob(DATA_DIR, measured_glob.replace(".csv", "_notes.txt"))
    rec = cublaslt_recorded_splits(DF.read_text(notes[-1])) if notes else {}
    m["split_recorded"] = [rec.get((a, b, c), 0) for a, b, c in zip(m["rows"], m["k"], m["n"])]
    return m


def cublaslt_grid10_errors() -> pd.DataFrame:
    """Grid 10's 43 rows (cublaslt_grid_errors on CUBLASLT_GRID10_*): split_main / split_cand, the three models' prices
    and signed errors, median_us, split_recorded, regime."""
    return cublaslt_grid_errors(CUBLASLT_GRID10_PREDICTION, CUBLASLT_GRID10_MEASURED_GLOB, CUBLASLT_GRID10_MODELS)


# --- cuBLASLt block fp8 grid 11 (split counts and times of main "slices" and the candidate "workspace", committed before) ---
#: grid 11's committed prediction (lab/kernels/predict_gemm_grid11.py at 1b51571, committed before the device call), its
#: measurement (lab/kernels/measure_deepgemm_gemm.py --tag grid11) and the measurement's _notes file
CUBLASLT_GRID11_PREDICTION = "gemm_grid11_prediction_1b51571_2026-11-27_cublaslt.csv"
CUBLASLT_GRID11_MEASURED_GLOB = "gemm_grid11_nvidia-h100-80gb-hbm3_*.csv"
#: price column -> label: main = the split rule shipped after grid 10 ("slices"), cand = the rule read off all 168
#: recorded choices ("workspace": c x M x N x 4 bytes < 1 MiB), both with the kind's terms as committed
CUBLASLT_GRID11_MODELS = {"pred_main_us": "main", "pred_cand_us": "cand"}


def cublaslt_grid11_errors() -> pd.DataFrame:
    """Grid 11's rows (cublaslt_grid_errors on CUBLASLT_GRID11_*): split_main / split_cand, both models' prices and
    signed errors, median_us, split_recorded, regime; the prediction alone before the measurement exists."""
    return cublaslt_grid_errors(CUBLASLT_GRID11_PREDICTION, CUBLASLT_GRID11_MEASURED_GLOB, CUBLASLT_GRID11_MODELS)


# --- cuBLASLt block fp8 grid 12 (main's and the refitted candidate's times under "workspace", committed before) ---
#: grid 12's committed prediction (lab/kernels/predict_gemm_grid12.py at 103e80c, committed in fa98159 before the device
#: call), its measurement (lab/kernels/measure_deepgemm_gemm.py --tag grid12) and the measurement's _notes file
CUBLASLT_GRID12_PREDICTION = "gemm_grid12_prediction_103e80c_2026-11-27_cublaslt.csv"
CUBLASLT_GRID12_MEASURED_GLOB = "gemm_grid12_nvidia-h100-80gb-hbm3_*.csv"
#: price column -> label: main = the kind's terms as committed, cand = CUBLASLT_GRID12_CAND_TERMS (both "workspace")
CUBLASLT_GRID12_MODELS = {"pred_main_us": "main", "pred_cand_us": "cand"}


def cublaslt_grid12_errors() -> pd.DataFrame:
    """Grid 12's rows (cublaslt_grid_errors on CUBLASLT_GRID12_*): split_main / split_cand, both models' prices and
    signed errors, median_us, split_recorded, regime; the prediction alone before the measurement exists."""
    return cublaslt_grid_errors(CUBLASLT_GRID12_PREDICTION, CUBLASLT_GRID12_MEASURED_GLOB, CUBLASLT_GRID12_MODELS)


# --- cuBLASLt block fp8 grid 13 (the lead's prefill check of grid 12's refit: shipped terms vs the terms before) ---
#: grid 13's committed prediction (lab/kernels/predict_gemm_grid13.py at d5cd4ca, committed in be3bfcf before the device
#: call), its measurement (lab/kernels/measure_deepgemm_gemm.py --tag grid13, H100 80GB HBM3) and its _notes file
CUBLASLT_GRID13_PREDICTION = "gemm_grid13_prediction_d5cd4ca_2026-11-27_cublaslt.csv"
CUBLASLT_GRID13_MEASURED_GLOB = "gemm_grid13_nvidia-h100-80gb-hbm3_*.csv"
#: price column -> label: main = the kind's terms as committed (grid 12's refit, shipped), before =
#: CUBLASLT_TERMS_BEFORE_GRID12 (both under "workspace")
CUBLASLT_GRID13_MODELS = {"pred_main_us": "main", "pred_before_us": "before"}


def cublaslt_grid13_errors() -> pd.DataFrame:
    """Grid 13's 26 rows (cublaslt_grid_errors on CUBLASLT_GRID13_*): split_main, both term sets' prices and signed
    errors, median_us, split_recorded, regime (prefill at few / many K steps, decode unsplit / split)."""
    return cublaslt_grid_errors(CUBLASLT_GRID13_PREDICTION, CUBLASLT_GRID13_MEASURED_GLOB, CUBLASLT_GRID13_MODELS)



# --- cuBLASLt block fp8 grid 14 (s23gm: the per-tile turnover hidden across waves; main vs two candidates) ---
#: grid 14's candidate fit rows: CUBLASLT_NAMED_FIT_GRID12 + the timed cuBLASLt rows of grids 12 and 13 (all measured
#: blind for earlier models, LOOKED-AT since): the looked-at grids 4-13
CUBLASLT_NAMED_FIT_GRID14 = CUBLASLT_NAMED_FIT_GRID12 + tuple(
    (f, "cublaslt") for f in ("gemm_grid12_nvidia-h100-80gb-hbm3_2026-11-27.csv",
                              "gemm_grid13_nvidia-h100-80gb-hbm3_2026-11-27.csv"))
#: grid 14's refit candidate (compute, memory, fixed_us, cta_fixed_us, iter_us; 336 fit rows, rms log error 0.0554):
#: fit_block_cublaslt(cublaslt_fit_frame(DATA_DIR / "production_kernels_nvidia-h100-80gb-hbm3_2026-11-26.csv",
#: CUBLASLT_NAMED_FIT_GRID14), load_hardware("H100-SXM"), named=CUBLASLT_NAMED_FIT_GRID14, hidden=True), i.e. what
#: write_block_cublaslt would give with CUBLASLT_NAMED_FIT = CUBLASLT_NAMED_FIT_GRID14 and CUBLASLT_FIT_TURNOVER_HIDDEN
#: True. NOT SHIPPED: grid 14 (BLIND, 23 timed rows) 2.9 / 13.0 % pooled, 4 of 5 regimes (4-K-step prefill +14 %),
#: against main 2.9 / 27.2 %, 4 of 5, and `hidden` (the structure with the committed terms, SHIPPED) 2.3 / 9.9 %, 5 of 5
CUBLASLT_GRID14_CAND_TERMS = (1.0, 0.8193, 0.0, 1.6721, 0.3542)


def cublaslt_turnover_hidden(on: bool = True) -> tuple:
    """Put gemm_fp8_block_cublaslt in (on) or take it out of hwmodels.roofline.CTA_FIXED_HIDDEN (every wave's
    per-tile turnover but the last's on the tile chain, not added to the body); returns the tuple before, to restore."""
    from hwmodels import roofline as R

    before = R.CTA_FIXED_HIDDEN
    code = R.KIND_CODE[CUBLASLT_BLOCK_KIND]
    R.CTA_FIXED_HIDDEN = tuple(c for c in before if c != code) + ((code,) if on else ())
    return before


#: grid 14's committed prediction (lab/kernels/predict_gemm_grid14.py at aa9cfad, committed in 476f60e before the device
#: call), its measurement (lab/kernels/measure_deepgemm_gemm.py --tag grid14, H100 80GB HBM3) and its _notes file
CUBLASLT_GRID14_PREDICTION = "gemm_grid14_prediction_aa9cfad_2026-11-27_cublaslt.csv"
CUBLASLT_GRID14_MEASURED_GLOB = "gemm_grid14_nvidia-h100-80gb-hbm3_*.csv"
#: price column -> label: main = the kind's terms and structure as committed, hidden = the turnover in CTA_FIXED_HIDDEN
#: with the committed terms, cand = hidden + CUBLASLT_GRID14_CAND_TERMS (all under "workspace")
CUBLASLT_GRID14_MODELS = {"pred_main_us": "main", "pred_hidden_us": "hidden", "pred_cand_us": "cand"}


def cublaslt_grid14_errors() -> pd.DataFrame:
    """Grid 14's 35 rows (cublaslt_grid_errors on CUBLASLT_GRID14_*): split_main, waves, the three models' prices and
    signed errors, median_us, split_recorded, regime; the prediction alone before the measurement exists."""
    return cublaslt_grid_errors(CUBLASLT_GRID14_PREDICTION, CUBLASLT_GRID14_MEASURED_GLOB, CUBLASLT_GRID14_MODELS)


# --- cuBLASLt block fp8 grid 15 (s24gm: a later tile's turnover share and K-step factor; main vs one candidate) ---
#: grid 15's candidate fit rows: CUBLASLT_NAMED_FIT_GRID14 + grid 14's timed rows (measured blind, LOOKED-AT since)
CUBLASLT_NAMED_FIT_GRID15 = CUBLASLT_NAMED_FIT_GRID14 + (("gemm_grid14_nvidia-h100-80gb-hbm3_2026-11-27.csv", "cublaslt"),)
#: grid 15's candidate: the kind's committed terms (compute, memory, fixed_us, cta_fixed_us, iter_us) ...
CUBLASLT_GRID15_CAND_TERMS = (1.0, 0.8192, 0.0, 1.486, 0.3623)
#: ... with hwmodels.roofline.CTA_FIXED_HIDDEN_SHARE[gemm_fp8_block_cublaslt] = (share, step): a later tile's turnover
#: share x cta_fixed on the tile chain, the later waves' K steps at step x iter. Fitted (scipy least_squares on log time,
#: start (0.8, 1.05)) on the 66 multi-wave rows (ceil(tiles x split / 132) > 1) of cublaslt_fit_frame(DATA_DIR /
#: "production_kernels_nvidia-h100-80gb-hbm3_2026-11-26.csv", CUBLASLT_NAMED_FIT_GRID15) with the committed terms:
#: rms log error 0.0544 -> 0.0334 (4 K steps signed +5.7 -> -0.3 %, >= 20 K steps -4.5 / -5.4 -> +0.5 / -0.4 %)
#: NOT SHIPPED: grid 15 (BLIND, 37 rows) 4.6 / 12.0 % pooled, 5 of 5 regimes, against main 6.7 / 11.8 %, 5 of 5: as many
#: regimes, a lower median but a higher p90 (common13's rule wants both lower); 4-K-step prefill 4.4 / 13.4 % (main
#: 8.1 / 12.0): it fixes the many-wave rows (+10..+12 -> +3..+5 %) and widens the few-wave ones (-8..-13 -> -13..-17 %)
CUBLASLT_GRID15_CAND_SHARE = (0.7851, 1.0856)


def cublaslt_hidden_share(share: tuple[float, float] | None) -> dict:
    """Set hwmodels.roofline.CTA_FIXED_HIDDEN_SHARE's gemm_fp8_block_cublaslt entry to `share` ((share, step); None:
    no entry); returns the dict before, to restore (R.CTA_FIXED_HIDDEN_SHARE = before)."""
    from hwmodels import roofline as R

    before = dict(R.CTA_FIXED_HIDDEN_SHARE)
    code = R.KIND_CODE[CUBLASLT_BLOCK_KIND]
    now = {c: v for c, v in before.items() if c != code}
    if share is not None:
        now[code] = (float(share[0]), float(share[1]))
    R.CTA_FIXED_HIDDEN_SHARE = now
    return before


#: grid 15's committed prediction (lab/kernels/predict_gemm_grid15.py at ad4e27f, committed in 7292576 before the device
#: call), its measurement (lab/kernels/measure_deepgemm_gemm.py --tag grid15, H100 80GB HBM3) and its _notes file
CUBLASLT_GRID15_PREDICTION = "gemm_grid15_prediction_ad4e27f_2026-11-27_cublaslt.csv"
CUBLASLT_GRID15_MEASURED_GLOB = "gemm_grid15_nvidia-h100-80gb-hbm3_*.csv"
#: price column -> label: main = the kind's terms and structure as committed (CTA_FIXED_HIDDEN, shipped after grid 14),
#: cand = main + CTA_FIXED_HIDDEN_SHARE CUBLASLT_GRID15_CAND_SHARE (both under "workspace")
CUBLASLT_GRID15_MODELS = {"pred_main_us": "main", "pred_cand_us": "cand"}


def cublaslt_grid15_errors() -> pd.DataFrame:
    """Grid 15's 37 rows (cublaslt_grid_errors on CUBLASLT_GRID15_*): split_main, waves, both models' prices and signed
    errors, median_us, split_recorded, regime; the prediction alone before the measurement exists."""
    return cublaslt_grid_errors(CUBLASLT_GRID15_PREDICTION, CUBLASLT_GRID15_MEASURED_GLOB, CUBLASLT_GRID15_MODELS)


def _restore_hidden(before: tuple) -> None:
    """Put hwmodels.roofline.CTA_FIXED_HIDDEN back to `before` (what cublaslt_turnover_hidden returned)."""
    from hwmodels import roofline as R

    R.CTA_FIXED_HIDDEN = before
