"""Price the XQA grid (lab/kernels/measure_xqa_attention.py shapes()) BEFORE it is measured (the xqa family's first
look), each shape twice under the shipped H100 terms (hwmodels/calibration/fitted/H100-SXM.yaml):

  pred_main_us    (a) simulator/kernels/xqa.py as it was at db3789c (read from git): TensorRT-LLM's
                  computeMultiBlockCount, an assumed 64-key tile and 2 CTAs per SM, one kind attn_xqa for every K/V
                  dtype, terms borrowed from FlashInfer's CUDA-core decode kernel (attn_fi_decode)
  pred_struct_us  (b) the structure read from FlashInfer's port (simulator.kernels.xqa.xqa, split="port": the port's
                  split rule, mha.cu 256-key tiles at 2 CTAs per SM for bf16 K/V, the GMMA kernel mha_sm90.cu with
                  64-key tiles for fp8 K/V), rates still borrowed: attn_xqa <- attn_fi_decode (as shipped),
                  attn_xqa_fp8kv <- attn_fi_decode_fp8kv, cta_slots.attn_xqa_fp8kv = XQA_GMMA_SLOTS (ASSUMPTION)

Writes hwmodels/calibration/data/production_attention/xqa_first_look.csv with the commit of the code.

`--grid blind` prices measure_xqa_attention.blind_shapes() (the blind grid) BEFORE it is measured, twice with the
shipped fitted terms and the port's launch (simulator.calibration.fit_production_attention build_ops / predict_us, as
calibration_accuracy.py evaluates the campaign): pred_new_us with this checkout's committed model and pred_base_us with
the model of `--base` (a commit, extracted with git archive into a temporary folder and imported from there in a
subprocess), into xqa_blind_predictions.csv.

`--grid alone` does the same for measure_xqa_attention.alone_shapes() (bf16 K/V in many waves: the CTA_ALONE wave
rule's test), into xqa_alone_predictions.csv.

`--grid s6` does the same for measure_xqa_attention.s6_shapes() (the third blind grid: verification rows, lone fp8
calls, merged splits, with q 1 controls), into xqa_s6_predictions.csv.

`--grid x4` does the same for measure_xqa_attention.x4_shapes() (the fourth blind grid: one-tile bf16 CTAs in a few
waves over 1-4 slices of their tile, lone and many-wave fp8 calls, short mid-batch verification, with controls), into
xqa_x4_predictions.csv.

`--grid x5` does the same for measure_xqa_attention.x5_shapes() (the fifth blind grid: one-tile bf16 CTAs of 3-4 slices
in 2-8 waves, fp8 lone calls and one-tile many-wave calls, with controls), into xqa_x5_predictions.csv.

`--grid x6` does the same for measure_xqa_attention.x6_shapes() (the sixth blind grid: fp8 lone split and unsplit
multi-tile calls, fp8 multi-tile controls, bf16 one-tile CTAs in a few waves), into xqa_x6_predictions.csv.

`--grid x7` does the same for measure_xqa_attention.x7_shapes() (the seventh blind grid: bf16 / fp8 verification at q
2-8, fp8 decode in the middle at small batch, bf16 q 1 controls), into xqa_x7_predictions.csv.

`--grid x8` does the same for measure_xqa_attention.x8_shapes() (the eighth blind grid: fp8 verification at q 2-8 over
Llama and Qwen heads, short and middle, batch 1-256, with q 1 / bf16 controls), into xqa_x8_predictions.csv.

`--grid x9` does the same for measure_xqa_attention.x9_shapes() (the ninth blind grid: fp8 verification at q 2-4 over G 4 /
7 builds whose registers were profiled, full-model and tensor-parallel heads, short and middle, batch 2-200; bf16
verification and q 1 controls), into xqa_x9_predictions.csv.

`--grid x10` does the same for measure_xqa_attention.x10_shapes() (the tenth blind grid: fp8 / bf16 verification at G
5-7 and q 2-4, the middle at batch 3-16 for both kernels, controls from regimes met before), into
xqa_x10_predictions.csv.

`--grid x11` prices measure_xqa_attention.x11_blind() (the eleventh blind grid: the middle at batch 3-16, bf16 q 1 / 2 /
4 and fp8 q 1 / 2, with controls) BEFORE it is measured: pred_base_us with main's model (`--base`), pred_here_us with
this checkout's (main's plus the per-SM stream mechanism, no ceiling set: must equal base), pred_stream28_us with the
mechanism at the looked-at 28.5 GB/s per SM (X11_LOOKED_RATE), into xqa_x11_predictions.csv; `--grid x11 --after-fit`
prices it with the checkout's model once the ceilings were fitted on the scan, into xqa_x11_fitted_predictions.csv.

`--grid x12` prices measure_xqa_attention.x12_shapes() (the twelfth blind grid: few-CTA long-chain launches under
TensorRT-LLM's split, the bf16 and fp8 middle, fp8 verification at G 5 / 7, controls) BEFORE it is measured:
pred_base_us with main's model (`--base`), pred_cand_us with the per-SM stream ceiling candidate as fitted
(X12_CAND_COMMIT), pred_new_us with this checkout's terms plus the ceiling refitted by the committed procedure and the
GMMA kernel's unsplit walk (price_new_x12), pred_here_us with this checkout as committed (must equal base), into
xqa_x12_predictions.csv.

`--grid x13` prices measure_xqa_attention.x13_shapes() (the thirteenth blind grid: fp8 few-CTA long chains under
TensorRT-LLM's split, the fp8 middle, fp8 verification at G 4 / 7, bf16 controls) BEFORE it is measured: pred_base_us
with main's model (X13_BASE), pred_new_us with this checkout (the GMMA kernel's steady-state tiles), pred_here_off_us
with this checkout's steady-state tiles off (must equal base), into xqa_x13_predictions.csv (price_x13).

    python lab/kernels/predict_xqa_attention.py [--grid blind|alone|s6|x4|x5|x6|x7|x8|x9|x10|x11|x12|x13 --base COMMIT]
"""
from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
OUT = ROOT / "hwmodels/calibration/data/production_attention/xqa_first_look.csv"
MAIN_COMMIT = "db3789c"
BORROW = {"attn_xqa_fp8kv": "attn_fi_decode_fp8kv"}


def main_module():
    """simulator/kernels/xqa.py as committed at MAIN_COMMIT."""
    src = subprocess.run(["git", "show", f"{MAIN_COMMIT}:simulator/kernels/xqa.py"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    m = types.ModuleType("xqa_main")
    exec(compile(src, f"xqa.py@{MAIN_COMMIT}", "exec"), m.__dict__)   # noqa: S102 - the repository's own file
    return m


def borrowed_efficiency(hw):
    """The shipped terms plus the fp8 GMMA kind's borrowed ones (module docstring)."""
    from simulator.calibration.fit import efficiency_with
    from simulator.kernels import xqa as XQ

    eff = hw.efficiency
    up = {}
    for k, src in BORROW.items():
        up[f"memory.{k}"] = eff.memory[src]
        up[f"compute.{k}"] = eff.compute[src]
        for part, d_ in (("fixed_us", eff.fixed_s), ("iter_us", eff.iter_s), ("cta_fixed_us", eff.cta_fixed_s),
                         ("sync_us", eff.sync_s)):
            up[f"{part}.{k}"] = d_.get(src, 0.0) * 1e6
    up["cta_slots.attn_xqa_fp8kv"] = XQ.XQA_GMMA_SLOTS
    up["cta_slots.attn_xqa"] = XQ.XQA_SLOTS
    return efficiency_with(eff, up)


def price(shapes: pd.DataFrame, how: str) -> np.ndarray:
    from dataclasses import replace

    from hwmodels.roofline import price as roof
    from hwmodels.spec import load_hardware
    from simulator.kernels import xqa as XQ
    from simulator.kernels.production import emit
    from simulator.ops import OpBuilder

    hw = load_hardware("H100-SXM")
    b = OpBuilder(len(shapes))
    a = {c: shapes[c].to_numpy(float) for c in ("batch", "q_rows", "context", "heads", "kv_heads", "head_dim",
                                                "page_size")}
    kvb = np.where(shapes["dtype"].to_numpy() == "fp8", 1.0, 2.0)
    args = (a["batch"], a["q_rows"], a["context"], a["heads"], a["kv_heads"], a["head_dim"], kvb)
    if how == "main":
        launches, _ = main_module().xqa(*args, hw.units)
    else:
        launches, _ = XQ.xqa(*args, hw.units, a["page_size"], split="port")
        hw = replace(hw, efficiency=borrowed_efficiency(hw))
    emit(b, launches, hw.units)
    ops = b.build()
    t = roof(ops, hw, "graph")
    return np.bincount(ops.setting, weights=t, minlength=len(shapes)) * 1e6


BLIND_OUT = ROOT / "hwmodels/calibration/data/production_attention/xqa_blind_predictions.csv"
ALONE_OUT = ROOT / "hwmodels/calibration/data/production_attention/xqa_alone_predictions.csv"
S6_OUT = ROOT / "hwmodels/calibration/data/production_attention/xqa_s6_predictions.csv"
X4_OUT = ROOT / "hwmodels/calibration/data/production_attention/xqa_x4_predictions.csv"
X5_OUT = ROOT / "hwmodels/calibration/data/production_attention/xqa_x5_predictions.csv"
X6_OUT = ROOT / "hwmodels/calibration/data/production_attention/xqa_x6_predictions.csv"
X7_OUT = ROOT / "hwmodels/calibration/data/production_attention/xqa_x7_predictions.csv"
X8_OUT = ROOT / "hwmodels/calibration/data/production_attention/xqa_x8_predictions.csv"
X9_OUT = ROOT / "hwmodels/calibration/data/production_attention/xqa_x9_predictions.csv"
X10_OUT = ROOT / "hwmodels/calibration/data/production_attention/xqa_x10_predictions.csv"
X11_OUT = ROOT / "hwmodels/calibration/data/production_attention/xqa_x11_predictions.csv"
#: the eleventh grid's prices by the model whose per-SM stream ceilings were fitted on the scan after the call (the
#: procedure, fit_production_attention.xqa_stream_per_sm, committed before it): `--grid x11 --after-fit`
X11_FIT_OUT = ROOT / "hwmodels/calibration/data/production_attention/xqa_x11_fitted_predictions.csv"
#: the experiment's looked-at rate (XQA_STREAM_PER_SM below) priced through the committed mechanism
#: (hwmodels.roofline.SM_STREAM_CEILING) before the call: the eleventh grid's pred_stream28_us
X11_LOOKED_RATE = 28.5e9
X12_OUT = ROOT / "hwmodels/calibration/data/production_attention/xqa_x12_predictions.csv"
#: the commit whose model is the per-SM stream ceiling candidate AS FITTED (hwmodels.roofline.SM_STREAM_CEILING
#: 49.51 GB/s for attn_xqa shipped there, with the attn_xqa terms, XQA_ROW_SHARE and LOCKSTEP_SHARE refitted with it)
X12_CAND_COMMIT = "e4c53d3"


def price_new_x12(shapes: pd.DataFrame) -> tuple[np.ndarray, dict, float]:
    """The twelfth grid's new model: this checkout's committed terms plus (a) mha.cu's per-SM stream ceiling fitted by
    the committed procedure (fit_production_attention.xqa_stream_per_sm, the x11 scan's bf16 rows) under these terms,
    no other term refitted, and (b) the GMMA kernel's unsplit walk at XQA_GMMA_UNSPLIT_SHARE (fitted only on the x11
    scan's fp8 rows, fit_production_attention.xqa_gmma_unsplit_share; must equal the committed constant). Returns
    (prices in us, the ceilings used, the share refitted now); the module constants are restored."""
    from hwmodels import roofline as RF
    from hwmodels.spec import load_hardware
    from simulator.calibration import fit_production_attention as FP
    from simulator.kernels import xqa as XQ

    hw = load_hardware("H100-SXM")
    x11 = FP.load_xqa_x11()
    share = FP.xqa_gmma_unsplit_share(x11, hw)[0]
    rate = FP.xqa_stream_per_sm(x11, hw)["attn_xqa"][0]
    keep = (dict(RF.SM_STREAM_CEILING), XQ.XQA_GMMA_UNSPLIT)
    try:
        RF.SM_STREAM_CEILING = {"attn_xqa": float(rate)}
        XQ.XQA_GMMA_UNSPLIT = True
        return price_fitted(shapes), dict(RF.SM_STREAM_CEILING), share
    finally:
        RF.SM_STREAM_CEILING, XQ.XQA_GMMA_UNSPLIT = keep


def price_fitted(shapes: pd.DataFrame) -> np.ndarray:
    """Each shape's time (us) under the shipped fitted terms, the port's launch (fit_production_attention)."""
    from hwmodels.spec import load_hardware
    from simulator.calibration import fit_production_attention as FP

    hw = load_hardware("H100-SXM")
    ops = FP.build_ops(shapes, hw.units, float(hw.smem_per_unit_bytes or 233472))
    return FP.predict_us(ops, hw, hw.efficiency, len(shapes))


#: an EXPERIMENT priced beside the tenth grid, not the shipped model: mha.cu's one CTA per SM streams its K/V at no
#: more than a per-SM rate, so a bf16 launch of fewer CTAs than ~0.8 x the SMs cannot reach the chip's fitted HBM rate
#: (the middle at batch 4-12 misses -13..-21 % at 80 CTAs, within 10 % at 96-128). The rate is LOOKED-AT, not fitted
#: (no fit row runs fewer than 128 CTAs of more than one tile): Llama-3.1-8B bf16 B 12 T 50000 of
#: xqa_blind_nvidia-h100-80gb-hbm3_2026-11-27.csv, 96 CTAs of 196 tiles, 0.8995 ms: 28.5 GB/s per SM
XQA_STREAM_PER_SM = 28.5e9


def stream_ceiling_us(shapes: pd.DataFrame) -> np.ndarray:
    """The experiment's floor (XQA_STREAM_PER_SM) for bf16 K/V: ceil(CTAs / SMs) CTAs on one SM, each streaming its
    K/V bytes at the per-SM rate, plus the kind's fixed time and the 3 prologue loads; 0 for fp8 (not tested)."""
    from hwmodels.spec import load_hardware
    from simulator.kernels import xqa as XQ

    hw = load_hardware("H100-SXM")
    a = {c: shapes[c].to_numpy(float) for c in ("batch", "q_rows", "context", "heads", "kv_heads", "head_dim",
                                                "page_size")}
    kvb = np.where(shapes["dtype"].to_numpy() == "fp8", 1.0, 2.0)
    _, info = XQ.xqa(a["batch"], a["q_rows"], a["context"], a["heads"], a["kv_heads"], a["head_dim"], kvb, hw.units,
                     a["page_size"], split="port")
    kv = a["batch"] * a["context"] * a["kv_heads"] * 2.0 * a["head_dim"] * kvb * info["blocks"]
    per_sm = np.ceil(info["ctas"] / hw.units)
    eff = hw.efficiency
    t = (per_sm * kv / info["ctas"] / XQA_STREAM_PER_SM + eff.fixed_s["attn_xqa"]
         + XQ.XQA_PROLOGUE_LOADS * eff.sync_s["attn_xqa"]) * 1e6
    return np.where(kvb < 2.0, 0.0, t)


def price_at(commit: str, shapes: pd.DataFrame) -> np.ndarray:
    """price_fitted with the model (hwmodels/, simulator/) as committed at `commit`."""
    import json
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        arc = subprocess.run(["git", "archive", commit, "hwmodels", "simulator"], cwd=ROOT, capture_output=True,
                             check=True).stdout
        subprocess.run(["tar", "-x", "-C", d], input=arc, check=True)
        code = ("import sys, json, pandas as pd; sys.path.insert(0, sys.argv[1]); sys.path.insert(1, sys.argv[2]);"
                "import hwmodels; assert hwmodels.__file__.startswith(sys.argv[1]), hwmodels.__file__;"
                "import predict_xqa_attention as P; s = pd.read_json(sys.stdin);"
                "print(json.dumps([float(x) for x in P.price_fitted(s)]))")
        r = subprocess.run([sys.executable, "-c", code, d, str(Path(__file__).resolve().parent)],
                           input=shapes.to_json(), capture_output=True, text=True, cwd=d)
        if r.returncode:
            raise SystemExit(r.stderr)
        return np.array(json.loads(r.stdout.strip().splitlines()[-1]))


X13_OUT = ROOT / "hwmodels/calibration/data/production_attention/xqa_x13_predictions.csv"
#: main's model when the thirteenth grid was priced
X13_BASE = "2bec4e2"


def price_x13(M, commit: str, base_ref: str) -> None:
    """--grid x13: the thirteenth blind grid priced by main's model (pred_base_us, the model at --base, default
    X13_BASE), the new model (pred_new_us: this checkout, the GMMA kernel's steady-state tiles at the share
    fit_production_attention.xqa_gmma_steady_share fits on its named rows, under the kind's loaded chain) and this
    checkout with both off (pred_here_off_us: must equal main's)."""
    from hwmodels.spec import load_hardware
    from simulator.calibration import fit_production_attention as FP
    from simulator.kernels import xqa as XQ

    if not XQ.XQA_GMMA_STEADY:
        raise SystemExit("the checkout must price the new model with XQA_GMMA_STEADY on")
    hw = load_hardware("H100-SXM")
    share = FP.xqa_gmma_steady_share(FP.load_xqa_x11(), FP.load_xqa_x12(), hw)[0]
    if abs(share - XQ.XQA_GMMA_STEADY_SHARE) > 5e-4:
        raise SystemExit(f"XQA_GMMA_STEADY_SHARE {XQ.XQA_GMMA_STEADY_SHARE} is not the fitted {share:.4f}")
    base = subprocess.run(["git", "rev-parse", base_ref if base_ref != "29e0e49" else X13_BASE], cwd=ROOT,
                          capture_output=True, text=True, check=True).stdout.strip()
    s = pd.DataFrame(M.x13_shapes())
    cols = [c for c in s.columns if c != "role"]
    s["pred_new_us"] = np.round(price_fitted(s[cols]), 3)
    from hwmodels import roofline as RF

    keep = RF.CHAIN_LOADED
    try:   # the steady-state tiles and the kind's loaded chain off: main's model
        XQ.XQA_GMMA_STEADY = False
        RF.CHAIN_LOADED = tuple(k for k in keep if k != RF.KIND_CODE["attn_xqa_fp8kv"])
        s["pred_here_off_us"] = np.round(price_fitted(s[cols]), 3)
    finally:
        XQ.XQA_GMMA_STEADY, RF.CHAIN_LOADED = True, keep
    s["pred_base_us"] = np.round(price_at(base, s[cols]), 3)
    s["model_commit"], s["base_commit"], s["new_steady_share"] = commit, base, XQ.XQA_GMMA_STEADY_SHARE
    s.to_csv(X13_OUT, index=False)
    print(f"{len(s)} x13 shapes priced: base {base[:10]}, new {commit[:10]} (steady share "
          f"{XQ.XQA_GMMA_STEADY_SHARE}) -> {X13_OUT}")
    print("max |here off - base| / base:", float(np.max(np.abs(s["pred_here_off_us"] / s["pred_base_us"] - 1.0))))


X14_OUT = ROOT / "hwmodels/calibration/data/production_attention/xqa_x14_predictions.csv"
#: main's model when the fourteenth grid was priced
X14_BASE = "8c86417"


def price_x14(M, commit: str) -> None:
    """--grid x14: the fourteenth blind grid priced by main's model (pred_base_us, the model at X14_BASE), the candidate
    (pred_new_us: this checkout with simulator.kernels.xqa.XQA_LATE on at the XQA_LATE_LOADS that
    fit_production_attention.xqa_late_loads fits on its named rows) and this checkout as committed, the rule off
    (pred_here_off_us: must equal main's)."""
    from hwmodels.spec import load_hardware
    from simulator.calibration import fit_production_attention as FP
    from simulator.kernels import xqa as XQ

    hw = load_hardware("H100-SXM")
    # the candidate as priced before the call: every launch of the regime, one-tile CTAs included (XQA_LATE_MIN_TILES
    # 1; the shipped 2 was chosen after the call and leaves this grid's prices unchanged)
    keep_min = XQ.XQA_LATE_MIN_TILES
    XQ.XQA_LATE_MIN_TILES = 1.0
    try:
        _price_x14(M, commit, hw, FP, XQ)
    finally:
        XQ.XQA_LATE_MIN_TILES = keep_min


def _price_x14(M, commit, hw, FP, XQ) -> None:
    loads = FP.xqa_late_loads(FP.load_xqa_x10(), FP.load_xqa_x11(), FP.load_xqa_x12(), hw)[0]
    if abs(loads - XQ.XQA_LATE_LOADS_HARD) > 0.01:
        raise SystemExit(f"XQA_LATE_LOADS_HARD {XQ.XQA_LATE_LOADS_HARD} is not the fitted {loads:.3f}")
    base = subprocess.run(["git", "rev-parse", X14_BASE], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()
    s = pd.DataFrame(M.x14_shapes())
    s["split_sms"] = pd.to_numeric(s["split_sms"], errors="coerce")
    cols = [c for c in s.columns if c != "role"]
    keep = XQ.XQA_LATE
    try:
        XQ.XQA_LATE = True
        s["pred_new_us"] = np.round(price_fitted(s[cols]), 3)
        XQ.XQA_LATE = False
        s["pred_here_off_us"] = np.round(price_fitted(s[cols]), 3)
    finally:
        XQ.XQA_LATE = keep
    s["pred_base_us"] = np.round(price_at(base, s[cols]), 3)
    s["model_commit"], s["base_commit"], s["new_late_loads"] = commit, base, XQ.XQA_LATE_LOADS
    s.to_csv(X14_OUT, index=False)
    print(f"{len(s)} x14 shapes priced: base {base[:10]}, new {commit[:10]} (late loads {XQ.XQA_LATE_LOADS}) -> {X14_OUT}")
    print("max |here off - base| / base:", float(np.max(np.abs(s["pred_here_off_us"] / s["pred_base_us"] - 1.0))))


X15_OUT = ROOT / "hwmodels/calibration/data/production_attention/xqa_x15_predictions.csv"
#: main's model when the fifteenth grid was priced
X15_BASE = "60b5b38"


def price_x15(M, commit: str) -> None:
    """--grid x15: the fifteenth blind grid priced by main's model (pred_base_us, the model at X15_BASE), the candidate
    (pred_new_us: this checkout with hwmodels.roofline.SM_STREAM_TAIL = SM_STREAM_TAIL_CANDIDATE: mha.cu's per-SM
    stream ceiling wave by wave, the last wave's CTAs starting SM_STREAM_TAIL_HEAD of a wave early) and this checkout
    with the candidate off (pred_here_off_us: must equal main's)."""
    from hwmodels import roofline as RF

    base = subprocess.run(["git", "rev-parse", X15_BASE], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()
    s = pd.DataFrame(M.x15_shapes())
    s["split_sms"] = pd.to_numeric(s["split_sms"], errors="coerce")
    cols = [c for c in s.columns if c != "role"]
    keep = RF.SM_STREAM_TAIL
    try:
        RF.SM_STREAM_TAIL = RF.SM_STREAM_TAIL_CANDIDATE
        s["pred_new_us"] = np.round(price_fitted(s[cols]), 3)
        RF.SM_STREAM_TAIL = ()
        s["pred_here_off_us"] = np.round(price_fitted(s[cols]), 3)
    finally:
        RF.SM_STREAM_TAIL = keep
    s["pred_base_us"] = np.round(price_at(base, s[cols]), 3)
    s["model_commit"], s["base_commit"], s["new_tail_head"] = commit, base, RF.SM_STREAM_TAIL_HEAD
    s.to_csv(X15_OUT, index=False)
    print(f"{len(s)} x15 shapes priced: base {base[:10]}, new {commit[:10]} (tail head {RF.SM_STREAM_TAIL_HEAD}) -> "
          f"{X15_OUT}")
    print("max |here off - base| / base:", float(np.max(np.abs(s["pred_here_off_us"] / s["pred_base_us"] - 1.0))))


X16_OUT = ROOT / "hwmodels/calibration/data/production_attention/xqa_x16_predictions.csv"
#: main's model when the sixteenth grid was priced
X16_BASE = "c073267"


def price_x16(M, commit: str) -> None:
    """--grid x16: the sixteenth blind grid priced by main's model (pred_base_us, the model at X16_BASE), the candidate
    (pred_new_us: this checkout with hwmodels.roofline.SM_STREAM_SOFT = SM_STREAM_SOFT_CANDIDATE at SM_STREAM_SOFT_P and
    simulator.kernels.xqa.XQA_LATE_LOADS = XQA_LATE_LOADS_SOFT, the pair fit_production_attention.xqa_soft_knee fits on
    its looked-at rows) and this checkout with the candidate off (pred_here_off_us: must equal main's)."""
    from hwmodels import roofline as RF
    from hwmodels.spec import load_hardware
    from simulator.calibration import fit_production_attention as FP
    from simulator.kernels import xqa as XQ

    hw = load_hardware("H100-SXM")
    p, loads, _, rms, rms0, n = FP.xqa_soft_knee(FP.xqa_soft_fit_rows(), hw)
    if abs(p - RF.SM_STREAM_SOFT_P) > 1e-6 or abs(loads - XQ.XQA_LATE_LOADS_SOFT) > 0.01:
        raise SystemExit(f"committed p {RF.SM_STREAM_SOFT_P} / loads {XQ.XQA_LATE_LOADS_SOFT} are not the fitted "
                         f"{p} / {loads:.3f}")
    base = subprocess.run(["git", "rev-parse", X16_BASE], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()
    s = pd.DataFrame(M.x16_shapes())
    s["split_sms"] = pd.to_numeric(s["split_sms"], errors="coerce")
    cols = [c for c in s.columns if c != "role"]
    keep = (RF.SM_STREAM_SOFT, XQ.XQA_LATE_LOADS)
    try:
        RF.SM_STREAM_SOFT, XQ.XQA_LATE_LOADS = RF.SM_STREAM_SOFT_CANDIDATE, XQ.XQA_LATE_LOADS_SOFT
        s["pred_new_us"] = np.round(price_fitted(s[cols]), 3)
        RF.SM_STREAM_SOFT, XQ.XQA_LATE_LOADS = (), XQ.XQA_LATE_LOADS_HARD
        s["pred_here_off_us"] = np.round(price_fitted(s[cols]), 3)
    finally:
        RF.SM_STREAM_SOFT, XQ.XQA_LATE_LOADS = keep
    s["pred_base_us"] = np.round(price_at(base, s[cols]), 3)
    s["model_commit"], s["base_commit"] = commit, base
    s["new_soft_p"], s["new_late_loads"] = RF.SM_STREAM_SOFT_P, XQ.XQA_LATE_LOADS_SOFT
    s.to_csv(X16_OUT, index=False)
    print(f"{len(s)} x16 shapes priced: base {base[:10]}, new {commit[:10]} (p {RF.SM_STREAM_SOFT_P}, loads "
          f"{XQ.XQA_LATE_LOADS_SOFT}; fit rms {rms:.4f} vs committed {rms0:.4f} on {n} rows) -> {X16_OUT}")
    print("max |here off - base| / base:", float(np.max(np.abs(s["pred_here_off_us"] / s["pred_base_us"] - 1.0))))



X17_OUT = ROOT / "hwmodels/calibration/data/production_attention/xqa_x17_predictions.csv"
#: main's model when the seventeenth grid was priced
X17_BASE = "922980a"


def price_x17(M, commit: str) -> None:
    """--grid x17: the seventeenth blind grid priced by main's model (pred_base_us, the model at X17_BASE), the candidate
    (pred_new_us: this checkout with simulator.kernels.xqa.XQA_SPEC_TILE_SHARE = XQA_SPEC_TILE_SHARE_CANDIDATE, the share
    fit_production_attention.xqa_spec_tile_share fits on its looked-at rows) and this checkout with the candidate off
    (pred_here_off_us: must equal main's)."""
    from hwmodels.spec import load_hardware
    from simulator.calibration import fit_production_attention as FP
    from simulator.kernels import xqa as XQ

    hw = load_hardware("H100-SXM")
    share, rms, rms0, n = FP.xqa_spec_tile_share(FP.xqa_spec_tile_fit_rows(), hw)
    if abs(share - XQ.XQA_SPEC_TILE_SHARE_CANDIDATE) > 1e-3:
        raise SystemExit(f"committed share {XQ.XQA_SPEC_TILE_SHARE_CANDIDATE} is not the fitted {share:.4f}")
    base = subprocess.run(["git", "rev-parse", X17_BASE], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()
    s = pd.DataFrame(M.x17_shapes())
    s["split_sms"] = pd.to_numeric(s["split_sms"], errors="coerce")
    cols = [c for c in s.columns if c != "role"]
    keep = XQ.XQA_SPEC_TILE_SHARE
    try:
        XQ.XQA_SPEC_TILE_SHARE = XQ.XQA_SPEC_TILE_SHARE_CANDIDATE
        s["pred_new_us"] = np.round(price_fitted(s[cols]), 3)
        XQ.XQA_SPEC_TILE_SHARE = 0.0
        s["pred_here_off_us"] = np.round(price_fitted(s[cols]), 3)
    finally:
        XQ.XQA_SPEC_TILE_SHARE = keep
    s["pred_base_us"] = np.round(price_at(base, s[cols]), 3)
    s["model_commit"], s["base_commit"], s["new_spec_tile_share"] = commit, base, XQ.XQA_SPEC_TILE_SHARE_CANDIDATE
    s.to_csv(X17_OUT, index=False)
    print(f"{len(s)} x17 shapes priced: base {base[:10]}, new {commit[:10]} (share {XQ.XQA_SPEC_TILE_SHARE_CANDIDATE}; "
          f"fit rms {rms:.4f} vs {rms0:.4f} at 0 on {n} rows) -> {X17_OUT}")
    print("max |here off - base| / base:", float(np.max(np.abs(s["pred_here_off_us"] / s["pred_base_us"] - 1.0))))


X18_OUT = ROOT / "hwmodels/calibration/data/production_attention/xqa_x18_predictions.csv"
#: main's model when the eighteenth grid was priced
X18_BASE = "f9af03b"


def price_x18(M, commit: str) -> None:
    """--grid x18: the eighteenth blind grid priced by main's model (pred_base_us, the model at X18_BASE), the candidate
    (pred_new_us: this checkout with simulator.kernels.xqa.XQA_SPEC_STREAM_SHARE = XQA_SPEC_STREAM_SHARE_CANDIDATE and
    XQA_SPEC_TILE_SHARE 0, the share fit_production_attention.xqa_spec_stream_share fits on its looked-at rows) and this
    checkout with the candidate off (pred_here_off_us: must equal main's)."""
    from hwmodels.spec import load_hardware
    from simulator.calibration import fit_production_attention as FP
    from simulator.kernels import xqa as XQ

    hw = load_hardware("H100-SXM")
    share, rms, rms0, n = FP.xqa_spec_stream_share(FP.xqa_spec_stream_fit_rows(), hw)
    if abs(share - XQ.XQA_SPEC_STREAM_SHARE_CANDIDATE) > 1e-3:
        raise SystemExit(f"committed share {XQ.XQA_SPEC_STREAM_SHARE_CANDIDATE} is not the fitted {share:.4f}")
    base = subprocess.run(["git", "rev-parse", X18_BASE], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()
    s = pd.DataFrame(M.x18_shapes())
    s["split_sms"] = pd.to_numeric(s["split_sms"], errors="coerce")
    cols = [c for c in s.columns if c != "role"]
    keep = (XQ.XQA_SPEC_TILE_SHARE, XQ.XQA_SPEC_STREAM_SHARE)
    try:
        XQ.XQA_SPEC_TILE_SHARE, XQ.XQA_SPEC_STREAM_SHARE = 0.0, XQ.XQA_SPEC_STREAM_SHARE_CANDIDATE
        s["pred_new_us"] = np.round(price_fitted(s[cols]), 3)
        XQ.XQA_SPEC_TILE_SHARE, XQ.XQA_SPEC_STREAM_SHARE = keep[0], 0.0
        s["pred_here_off_us"] = np.round(price_fitted(s[cols]), 3)
    finally:
        XQ.XQA_SPEC_TILE_SHARE, XQ.XQA_SPEC_STREAM_SHARE = keep
    s["pred_base_us"] = np.round(price_at(base, s[cols]), 3)
    s["model_commit"], s["base_commit"] = commit, base
    s["new_spec_stream_share"] = XQ.XQA_SPEC_STREAM_SHARE_CANDIDATE
    s.to_csv(X18_OUT, index=False)
    print(f"{len(s)} x18 shapes priced: base {base[:10]}, new {commit[:10]} (share {XQ.XQA_SPEC_STREAM_SHARE_CANDIDATE}; "
          f"fit rms {rms:.4f} vs main's {rms0:.4f} on {n} rows) -> {X18_OUT}")
    print("max |here off - base| / base:", float(np.max(np.abs(s["pred_here_off_us"] / s["pred_base_us"] - 1.0))))


def main() -> None:
    import argparse

    import measure_xqa_attention as M

    ap = argparse.ArgumentParser()
    ap.add_argument("--grid", choices=("campaign", "blind", "alone", "s6", "x4", "x5", "x6", "x7", "x8", "x9", "x10",
                                       "x11", "x12", "x13", "x14", "x15", "x16", "x17", "x18"), default="campaign")
    ap.add_argument("--after-fit", action="store_true",
                    help="--grid x11: price the grid with this checkout's (fitted) model into X11_FIT_OUT")
    ap.add_argument("--base", default="29e0e49", help="the commit whose model prices pred_base_us (--grid blind)")
    args = ap.parse_args()

    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "simulator", "hwmodels/calibration/fitted",
                            "hwmodels/opkinds.py"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    if dirty:
        raise SystemExit(f"uncommitted changes under simulator/ hwmodels/: commit the model first\n{dirty}")
    if args.grid == "x14":
        price_x14(M, commit)
    if args.grid == "x15":
        price_x15(M, commit)
        return
    if args.grid == "x16":
        price_x16(M, commit)
        return
    if args.grid == "x17":
        price_x17(M, commit)
    if args.grid == "x18":
        price_x18(M, commit)
        return
    if args.grid == "x13":
        price_x13(M, commit, args.base)
        return
    if args.grid == "x12":
        from hwmodels import roofline as RF
        from simulator.kernels import xqa as XQ

        if XQ.XQA_GMMA_UNSPLIT:
            raise SystemExit("the checkout must price main's model with XQA_GMMA_UNSPLIT off")
        base = subprocess.run(["git", "rev-parse", args.base], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
        cand = subprocess.run(["git", "rev-parse", X12_CAND_COMMIT], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
        s = pd.DataFrame(M.x12_shapes())
        cols = [c for c in s.columns if c != "role"]
        keep = dict(RF.SM_STREAM_CEILING)
        try:   # main's model: no ceiling (the ceiling shipped after this grid was measured)
            RF.SM_STREAM_CEILING = {}
            s["pred_here_us"] = np.round(price_fitted(s[cols]), 3)
        finally:
            RF.SM_STREAM_CEILING = keep
        new, ceil, share = price_new_x12(s[cols])
        if abs(share - XQ.XQA_GMMA_UNSPLIT_SHARE) > 5e-4:
            raise SystemExit(f"XQA_GMMA_UNSPLIT_SHARE {XQ.XQA_GMMA_UNSPLIT_SHARE} is not the fitted {share:.4f}")
        s["pred_new_us"] = np.round(new, 3)
        s["pred_base_us"] = np.round(price_at(base, s[cols]), 3)
        s["pred_cand_us"] = np.round(price_at(cand, s[cols]), 3)
        s["model_commit"], s["base_commit"], s["cand_commit"] = commit, base, cand
        s["new_ceiling_gbs"] = round(ceil["attn_xqa"] / 1e9, 3)
        s["new_unsplit_share"] = XQ.XQA_GMMA_UNSPLIT_SHARE
        s.to_csv(X12_OUT, index=False)
        print(f"{len(s)} x12 shapes priced: base {base[:10]}, candidate {cand[:10]}, new {commit[:10]} (ceiling "
              f"{ceil['attn_xqa'] / 1e9:.2f} GB/s per SM, unsplit GMMA share {XQ.XQA_GMMA_UNSPLIT_SHARE}) -> {X12_OUT}")
        print("max |here - base| / base:", float(np.max(np.abs(s["pred_here_us"] / s["pred_base_us"] - 1.0))))
        return
    if args.grid == "x11":
        s = pd.DataFrame(M.x11_blind())
        if args.after_fit:
            from hwmodels import roofline as RF

            s["pred_new_us"] = np.round(price_fitted(s), 3)
            s["model_commit"] = commit
            s["ceilings"] = str(RF.SM_STREAM_CEILING)
            s.to_csv(X11_FIT_OUT, index=False)
            print(f"{len(s)} x11 shapes priced at {commit[:10]} (fitted: {RF.SM_STREAM_CEILING}) -> {X11_FIT_OUT}")
            return
        from hwmodels import roofline as RF

        base = subprocess.run(["git", "rev-parse", args.base], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
        cols = list(M.x11_blind()[0])
        if RF.SM_STREAM_CEILING:
            raise SystemExit("the checkout already ships a stream ceiling: price the grid before the fit")
        s["pred_here_us"] = np.round(price_fitted(s), 3)
        keep = dict(RF.SM_STREAM_CEILING)
        try:
            RF.SM_STREAM_CEILING = {"attn_xqa": X11_LOOKED_RATE}
            s["pred_stream28_us"] = np.round(price_fitted(s), 3)
        finally:
            RF.SM_STREAM_CEILING = keep
        s["pred_base_us"] = np.round(price_at(base, s[cols]), 3)
        s["model_commit"], s["base_commit"] = commit, base
        s.to_csv(X11_OUT, index=False)
        print(f"{len(s)} x11 shapes priced at {commit[:10]} (here, stream28) and {base[:10]} (base) -> {X11_OUT}")
        print("max |here - base| / base:", float(np.max(np.abs(s["pred_here_us"] / s["pred_base_us"] - 1.0))))
        return
    if args.grid in ("blind", "alone", "s6", "x4", "x5", "x6", "x7", "x8", "x9", "x10"):
        base = subprocess.run(["git", "rev-parse", args.base], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
        shp, out = {"blind": (M.blind_shapes(), BLIND_OUT), "alone": (M.alone_shapes(), ALONE_OUT),
                    "s6": (M.s6_shapes(), S6_OUT), "x4": (M.x4_shapes(), X4_OUT),
                    "x5": (M.x5_shapes(), X5_OUT), "x6": (M.x6_shapes(), X6_OUT),
                    "x7": (M.x7_shapes(), X7_OUT), "x8": (M.x8_shapes(), X8_OUT),
                    "x9": (M.x9_shapes(), X9_OUT), "x10": (M.x10_shapes(), X10_OUT)}[args.grid]
        s = pd.DataFrame(shp)
        s["pred_new_us"] = np.round(price_fitted(s), 3)
        s["pred_base_us"] = np.round(price_at(base, s[list(shp[0])]), 3)
        if args.grid == "x10":   # the experiment beside the candidate (XQA_STREAM_PER_SM; not shipped)
            s["pred_stream_us"] = np.round(np.maximum(s["pred_new_us"], stream_ceiling_us(s[list(shp[0])])), 3)
        s["model_commit"], s["base_commit"] = commit, base
        s.to_csv(out, index=False)
        print(f"{len(s)} {args.grid} shapes priced at {commit[:10]} (new) and {base[:10]} (base) -> {out}")
        print(s.groupby(["model", "dtype", "q_rows", "page_size"])[["pred_new_us", "pred_base_us"]].median().to_string())
        return
    s = pd.DataFrame(M.shapes())
    s["pred_main_us"] = np.round(price(s, "main"), 3)
    s["pred_struct_us"] = np.round(price(s, "struct"), 3)
    s["model_commit"] = commit
    s.to_csv(OUT, index=False)
    print(f"{len(s)} shapes priced at {commit[:10]} -> {OUT}")
    print(s.groupby(["model", "dtype", "q_rows", "page_size"])[["pred_main_us", "pred_struct_us"]].median().to_string())


if __name__ == "__main__":
    main()
