"""TensorRT-LLM's top-k with the job's on-chip rounds off the load chain: the candidate and its blind H200 grid.

The job model (simulator/kernels/topk_trtllm.py) counts a CTA's on-chip work (the block scans between __syncthreads,
the threshold bin's BlockRadixSort or all-pairs rank: shape_terms' `job`) in the kind's loop rounds, and the roofline
prices every round of the op's chain at the iteration time its sweeps' L2 hit share gives (Efficiency.iter_s /
iter_l2_s, interpolated). JOB_TERMS were fitted on launches whose scores stay in the L2 (grid 5's TRT_FIT: 1-16
rows), so a job round costs an L2 round there; once a launch's scores pass the L2 the same shared-memory rounds are
charged at the HBM round (0.554 against 0.296 us a 512-thread round: 1.9x), work that never leaves the SM. The terms
fitted later on launches past the L2 (the co-resident CTAs' shares, the L2 term, the sharper knee, the narrow CTAs'
per-CTA terms) then absorbed that charge. The candidate (ONCHIP_CANDIDATE) prices the job's rounds as the op's
`l1_iters` at the kind's L2 round whatever the hit share (topk_trtllm.ONCHIP_JOB; the device's iter_l1[topk_trtllm]
= its iter_l2) and refits, under it and in the order they were first fitted, each of those terms on its own named
fit rows (all H100, all looked-at before): fit_onchip. On the fit rows, rms log error: the single CTAs' pair shares
0.0556 (fitted job share 0.20, was 0), the split CTAs' 0.0683, the L2 term 0.0865 / 0.0868 (decode / prefill), the
shared-SM knee 0.0766 at p = 1.5, i.e. no sharper knee than a lone CTA's (was 2.0), the narrow launches 0.0673.
On every looked-at TensorRT-LLM row (no H200 row is a fit row): H100 826 rows 5.5 / 14.7 -> 4.9 / 12.6 % (median /
p90), H200 326 rows 5.3 / 13.5 -> 4.3 / 11.0 %, the H200's causal prompts (stagger grid) 16.0 / 25.9 -> 9.5 / 14.0 %.
Judged on ONCHIP_GRID (new shapes on one H200, both prices committed before the call); declared before the call:
the candidate ships if it meets more of the grid's regimes than main, a tie by the lower pooled median |error|; the
grid holds the H200 STANDING of TensorRT-LLM's prefill entry (causal prompts, rows of one length), the engine's
two-launch split, the padded buffer and the kernel dispatch, whichever ships.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd

from hwmodels.spec import HardwareSpec
from simulator.calibration import fit_production_topk_gemm as F
from simulator.calibration import topk_engines as TE
from simulator.kernels import topk_trtllm as TK

#: the candidate: the job's rounds on-chip and the terms refitted under it (fit_onchip on the H100's named fit rows)
ONCHIP_CANDIDATE = {
    "pair_shares": {"single": {"sweep": 0.0, "job": 0.202, "l2_sweep": 0.546, "l2_sweep_prefill": 0.519},
                    "split": {"sweep": 0.611, "job": 0.621, "l2_sweep": 0.0}},
    "queue_p_shared": 1.5,
    "narrow": {"first": -20.1266, "first_radix": -25.5584, "first_rankw": 0.1539, "round": 0.3673, "scan": 0.6978,
               "radix": 18.1708, "rank": 0.0204, "out_set": 1.0},
}


def onchip_hw(hw: HardwareSpec) -> HardwareSpec:
    """`hw` with iter_l1[topk_trtllm] = its iter_l2[topk_trtllm]: the job's rounds (the op's l1_iters) at the L2 round."""
    e = hw.efficiency
    it = e.iter_l2_s.get("topk_trtllm", e.iter_s.get("topk_trtllm"))
    return hw.with_efficiency(dataclasses.replace(e, iter_l1_s={**e.iter_l1_s, "topk_trtllm": it}))


def onchip(settings: dict | None = None) -> TE.trt_rules:
    """A context (topk_engines.trt_rules) pricing TensorRT-LLM's top-k under `settings` (default ONCHIP_CANDIDATE;
    keys absent keep the shipped value): ONCHIP_JOB on, the pair shares, the shared-SM knee and the narrow CTAs'
    terms; everything restored on exit. Price with onchip_hw(hw)."""
    s = ONCHIP_CANDIDATE if settings is None else settings
    return TE.trt_rules(True, s.get("pair_shares"), s.get("queue_p_shared", TE.trt_rules._KEEP), s.get("narrow"))


def fit_onchip(hw: HardwareSpec) -> dict:
    """The candidate's terms refitted under ONCHIP_JOB on `hw` (the H100-SXM, whose rows they were fitted on), each on
    its own named fit rows in the order first fitted: topk_engines.fit_pair_shares (TRT_PAIR_FIT scan), fit_pair_l2
    (TRT_PAIR_L2_FIT + scan), fit_queue_p_shared (grids 11-14), fit_narrow_conflict("rankw", out_set 1) (grids 5-21's
    narrow rows). Returns ONCHIP_CANDIDATE's keys plus each fit's rows and rms log error (`fits`)."""
    h = onchip_hw(hw)
    out: dict = {"fits": {}}
    with onchip({}):
        ps = TE.fit_pair_shares(h)
        TK.PAIR_SHARES_L2["single"].update(sweep=ps["pair_single_sweep_share"], job=ps["pair_single_job_share"])
        TK.PAIR_SHARES_L2["split"].update(sweep=ps["pair_split_sweep_share"], job=ps["pair_split_job_share"])
        l2 = TE.fit_pair_l2(h)
        TK.PAIR_SHARES_L2["single"].update(l2_sweep=l2["pair_l2_share"], l2_sweep_prefill=l2["pair_l2_prefill_share"])
        q = TE.fit_queue_p_shared(h)
        import hwmodels.roofline as R

        R.CHAIN_QUEUED_P_SHARED = q["queue_p_shared"]
        n = TE.fit_narrow_conflict(h, "rankw", out_set=1.0, start=TE.NARROW_RANKW_START)
        out["pair_shares"] = {k: dict(v) for k, v in TK.PAIR_SHARES_L2.items()}
    out["queue_p_shared"] = q["queue_p_shared"]
    out["narrow"] = {k: v for k, v in n.items() if k not in ("fit_rows", "rms_log_error")}
    out["fits"] = {"pair": ps, "l2": l2, "queue_p": q, "narrow": {"rows": n["fit_rows"], "rms": n["rms_log_error"]}}
    return out


# ---- the blind grid -------------------------------------------------------------------------------------------------
#: (regime, kernel, shapes): new shapes on one H200, four to six a regime; kernels as lab/kernels/measure_topk_engines.py
#: names them (trt_topk_pf_tri: a whole causal prompt, priced as DSA prefill prices it; trt_topk_op_w<W>: the torch op
#: over a W-wide buffer)
ONCHIP_GRID = (
    ("causal prompts", "trt_topk_pf_tri", [("recorded", p, p) for p in (6656, 9728, 12800, 17408, 23552)]
     + [("gaussian", 9216, 9216)]),
    ("prefill entry, 4-12 CTAs per SM", "trt_topk_pf",
     [("recorded", 700, 9500), ("recorded", 1020, 26000), ("recorded", 1400, 4300), ("gaussian", 900, 14500),
      ("uniform", 1250, 7900)]),
    ("prefill entry, > 12 CTAs per SM, rows <= 16K", "trt_topk_pf",
     [("recorded", 1900, 3700), ("recorded", 2350, 5600), ("recorded", 3050, 9300), ("recorded", 3500, 12600),
      ("gaussian", 2800, 4800), ("uniform", 2100, 10800)]),
    ("prefill entry, > 12 CTAs per SM, rows > 16K", "trt_topk_pf",
     [("recorded", 1750, 29000), ("recorded", 2600, 21000), ("gaussian", 2200, 41000), ("uniform", 1900, 17500)]),
    ("two-launch split, part 1 at <= 2 CTAs per SM", "trt_topk_op",
     [("recorded", 15, 330000), ("recorded", 22, 250000), ("recorded", 25, 520000), ("gaussian", 19, 280000)]),
    ("two-launch split, part 1 at 3-8 CTAs per SM", "trt_topk_op",
     [("recorded", 30, 410000), ("recorded", 55, 230000), ("recorded", 78, 310000), ("gaussian", 66, 260000)]),
    ("two-launch split, part 1 at >= 9 CTAs per SM", "trt_topk_op",
     [("recorded", 130, 220000), ("recorded", 190, 270000), ("recorded", 280, 205000), ("uniform", 150, 240000)]),
    ("single CTAs in a 163,840-wide buffer", "trt_topk_op_w163840",
     [("recorded", 6, 95000), ("recorded", 16, 130000), ("recorded", 36, 70000), ("gaussian", 10, 120000)]),
    ("two-launch split over live rows < 200K (a 262,144-wide buffer)", "trt_topk_op_w262144",
     [("recorded", 3, 75000), ("recorded", 11, 165000), ("gaussian", 24, 60000), ("recorded", 9, 240000)]),
    ("decode single 512-thread CTAs, 4-8 CTAs per SM", "trt_topk",
     [("recorded", 480, 26000), ("recorded", 760, 15500), ("gaussian", 600, 38000), ("recorded", 950, 58000)]),
    ("narrow 256-thread CTAs, short rows, > 8 CTAs per SM", "trt_topk",
     [("recorded", 1200, 5200), ("recorded", 1750, 3900), ("gaussian", 1500, 6400), ("uniform", 2300, 4400)]),
    ("controls: decode dispatch, <= 3 CTAs per SM", "trt_topk",
     [("recorded", 150, 30000), ("recorded", 260, 90000), ("gaussian", 300, 20000)]),
)
#: each regime's board family (the STANDING rows the grid holds)
FAMILY_OF = {
    "causal prompts": "top-k trtllm (prefill entry: causal prompts as DSA prefill prices them, rows of one length), H200",
    "prefill entry, 4-12 CTAs per SM":
        "top-k trtllm (prefill entry: causal prompts as DSA prefill prices them, rows of one length), H200",
    "prefill entry, > 12 CTAs per SM, rows <= 16K":
        "top-k trtllm (prefill entry: causal prompts as DSA prefill prices them, rows of one length), H200",
    "prefill entry, > 12 CTAs per SM, rows > 16K":
        "top-k trtllm (prefill entry: causal prompts as DSA prefill prices them, rows of one length), H200",
    "two-launch split, part 1 at <= 2 CTAs per SM": "top-k trtllm (engine's two-launch split, >= 17 rows), H200",
    "two-launch split, part 1 at 3-8 CTAs per SM": "top-k trtllm (engine's two-launch split, >= 17 rows), H200",
    "two-launch split, part 1 at >= 9 CTAs per SM": "top-k trtllm (engine's two-launch split, >= 17 rows), H200",
    "single CTAs in a 163,840-wide buffer": "top-k trtllm (engine's torch op, a padded logits buffer), H200",
    "two-launch split over live rows < 200K (a 262,144-wide buffer)":
        "top-k trtllm (engine's torch op, a padded logits buffer), H200",
    "decode single 512-thread CTAs, 4-8 CTAs per SM": "top-k trtllm (kernel dispatch), H200",
    "narrow 256-thread CTAs, short rows, > 8 CTAs per SM": "top-k trtllm (kernel dispatch), H200",
    "controls: decode dispatch, <= 3 CTAs per SM": "top-k trtllm (kernel dispatch), H200",
}
PREDICTION = "topk_trtllm_onchip_prediction_2026-11-29.csv"
TAG = "trt_onchip"


def frame() -> pd.DataFrame:
    """ONCHIP_GRID's rows (dist, rows, n, kernel, regime), with the pass statistics _trtllm_frame gives."""
    parts = []
    for reg, kern, shapes in ONCHIP_GRID:
        t = TE._trtllm_frame(shapes)
        t["kernel"], t["regime"] = kern, reg
        parts.append(t)
    return pd.concat(parts, ignore_index=True)


def price(t: pd.DataFrame, hw: HardwareSpec) -> np.ndarray:
    """The grid's rows as the product prices them: causal prompts through DSA prefill's "causal" rows rule
    (topk_trtllm_prefill._priced), the rest by their kernel (topk_engines.predict_trtllm)."""
    from simulator.calibration import topk_trtllm_prefill as TP

    out = np.full(len(t), np.nan)
    tri = (t["kernel"] == TP.KERNEL).to_numpy()
    if tri.any():
        out[tri] = TP._priced(t[tri].reset_index(drop=True), hw, "causal")
    if (~tri).any():
        out[~tri] = TE.predict_trtllm(t[~tri].reset_index(drop=True), hw)
    return out


def predict(hw: HardwareSpec) -> pd.DataFrame:
    """The grid priced by main (`pred_main_us`, the product as committed) and the candidate (`pred_us`, under
    onchip() on onchip_hw(hw))."""
    t = frame()
    t["pred_main_us"] = price(t, hw)
    with onchip():
        t["pred_us"] = price(t, onchip_hw(hw))
    return t[F.SHAPE_KEYS + ["regime", "pred_main_us", "pred_us"]]


def measured(data_dir: Path = F.DATA_DIR, replicate: bool = False) -> pd.DataFrame | None:
    """The committed prediction joined to its H200 measurement (None before it exists)."""
    return TE.measured_latest(PREDICTION, f"topk_engines_nvidia-h200_*_{TAG}{'_replicate' if replicate else ''}.csv",
                              data_dir)
