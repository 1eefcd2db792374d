"""TensorRT-LLM's XQA kernels measured through FlashInfer's port: the first look, the blind grid, grids 5-9 and the
verification rules' fit rows, each committed prediction against its measurement in
hwmodels/calibration/data/production_attention/ (fit_production_attention's xqa readers).
"""
from __future__ import annotations

import numpy as np

from simulator.calibration.scoreboard import BOARD
from simulator.calibration.scoreboard import add_pooled as _board
from simulator.calibration.scoreboard import models_table as _models_table

from . import xqa_grid10, xqa_grid11, xqa_grid12, xqa_grid13, xqa_grid14, xqa_grid15, xqa_grid16, xqa_grid17, xqa_grid18
from .attention import context, family_campaign, first_look_line


def xqa() -> None:
    """Print the XQA sections in the report's order (nothing where no attention campaign is committed)."""
    c = context()
    if c is None:
        return
    FP, hw, fmt = c
    _xqa(FP, hw, fmt)
    _xqa_x7(FP, hw, fmt)
    _xqa_x8(FP, hw, fmt)
    _xqa_x9(FP, hw, fmt)
    xqa_grid10.xqa_x10(fmt)
    xqa_grid11.xqa_x11(fmt)
    xqa_grid12.xqa_x12(fmt)
    xqa_grid13.xqa_x13(fmt)
    xqa_grid14.xqa_x14(fmt)
    xqa_grid15.xqa_x15(fmt)
    xqa_grid16.xqa_x16(fmt)
    xqa_grid17.xqa_x17(fmt)
    xqa_grid18.xqa_x18(fmt)


def _xqa(FP, hw, fmt) -> None:
    """The xqa family (TensorRT-LLM's XQA kernels) measured through FlashInfer's port: the first look priced before the
    measurement ((a) the model at db3789c, (b) the port's structure with borrowed rates), the fit rows and the held-out
    error after the fit, per regime; signed = predicted / measured - 1."""

    r = family_campaign(FP, hw, FP.load_xqa, FP.latest_xqa, FP.xqa_first_look)
    if r is None:
        return
    xq, f, ev, fl = r
    print(f"\n== {hw.name}: xqa family (TensorRT-LLM's XQA kernels) measured through FlashInfer's port (flashinfer-python "
          f"0.6.4, csrc/xqa mha.cu for bf16 K/V, mha_sm90.cu GMMA for fp8 K/V; {f.name}: {len(xq)} shapes, heads "
          "32/8, 8/1, 28/4, q 1 / 2 / 4, pages 16 / 64; CUDA-graph timing). The port splits sequences by its own rule "
          "(TensorRT-LLM's standalone launcher), not computeMultiBlockCount: the product prices TensorRT-LLM's rule, "
          "the rows below the port's. Fit (fit_production_attention.xqa_fit_rows): attn_xqa (bf16) / attn_xqa_fp8kv "
          "(fp8) on Llama-3.1-8B, page 16, q 1, context 1024-16384 at batch <= 64 and context 16-256 at every batch "
          "(30 + 30 rows; fp8's short rows, dropped after the blind grid, are back with the GMMA kernel's per-CTA SM "
          "time, CTA_SERIAL_AFTER_FIRST); every other row is LOOKED-AT (never fitted, but seen under the earlier rules "
          "before mha.cu's one-CTA-per-SM rule (CTA_ALONE) and the per-wave CTA time were chosen): the blind grids "
          "below are the test")
    by = ("family", "phase", "kv", "ctx_regime", "batch_regime")
    if len(fl):
        commit = str(fl["model_commit"].iloc[0])[:10]
        for col, what in (("first_main_err_pct", "(a) the model at db3789c (TensorRT-LLM split, assumed 64-key tile "
                           "and 2 CTAs per SM, terms borrowed from attn_fi_decode)"),
                          ("first_struct_err_pct", "(b) the port's structure read from its source (its split, 256-key "
                           "mha.cu tiles at 2 CTAs per SM, the GMMA kernel for fp8 at an assumed 1), borrowed rates")):
            first_look_line(f"FIRST LOOK, blind ({FP.XQA_FIRST_LOOK_CSV}, priced at {commit} before the measurement), "
                            f"{what}", fl[col])
        ta = FP.accuracy(fl, by=by, col="first_main_err_pct", part=None)
        tb = FP.accuracy(fl, by=by, col="first_struct_err_pct", part=None)
        t = ta[list(by) + ["n"]].copy()
        for lab, x in (("a", ta), ("b", tb)):
            t[f"{lab}_median"], t[f"{lab}_p90"], t[f"{lab}_signed"] = x["median"], x["p90"], x["signed"]
        print("first look per regime ((a) / (b): |error| median, p90, signed median):")
        print(t.to_string(**fmt))
        _board(fl, "first_main_err_pct", "first look", "(a) TensorRT-LLM XQA from source, before measuring", ta)
    fit = ev[ev["part"] == "fit"]
    print(f"fit rows: {len(fit)}, median |error| {np.median(fit['err_pct'].abs()):.1f} %, max "
          f"{fit['err_pct'].abs().max():.1f} %")
    t = FP.accuracy(ev, by=by)
    print("LOOKED-AT rows after the fit (committed fitted file), per regime:")
    print(t.to_string(**fmt))
    e = ev[ev["part"] == "held-out"]["err_pct"]
    _board(ev[ev["part"] == "held-out"], "err_pct", "looked-at", "XQA campaign (FlashInfer's port)", t)
    print(f"xqa looked-at: {len(e)} shapes, median |error| {np.median(e.abs()):.1f} %, p90 "
          f"{np.percentile(e.abs(), 90):.1f} %, signed {np.median(e):+.1f} %; regimes met "
          f"{int((t['goal'] == 'met').sum())} of {len(t)}")
    _xqa_blind(FP, hw, fmt)
    _xqa_x5(FP, hw, fmt)
    _xqa_x6(FP, hw, fmt)


def _xqa_grid(FP, hw, fmt, grid: str, name: str, caption, models: tuple, diagnosis: str,
              keys: tuple = ("phase", "kv", "ctx_regime", "batch_regime"), now_board: str = ""):
    """One xqa grid measured after its prices were committed (FP.load_xqa_blind(grid)): base / new = the committed
    prices of the two models, now = the committed fitted file (priced here) where `models` names it. Prints the caption
    (caption(b)), the per-regime table, the pooled figures per model and the diagnosis while new misses a regime; adds
    the two blind models to the board (and now, as looked-at, under now_board). Returns (rows, table) or None."""

    b = FP.load_xqa_blind(FP.DATA_DIR, grid=grid)
    if not len(b):
        return None
    if "now" in models:
        ev = FP.evaluate(b.drop(columns=[c for c in b.columns if c in ("phase", "kv", "ctx_regime", "batch_regime")]),
                         hw, hw.efficiency)
        b["now_err_pct"] = ev["err_pct"].to_numpy()
    print(caption(b))
    t = _models_table(b, keys, models, models)
    print(t.to_string(**fmt))
    for lab in ("base", "new"):
        BOARD.add("xqa", "blind", f"xqa {name}, {lab} model's committed prices", b[f"{lab}_err_pct"],
                  int((t[lab + "_goal"] == "met").sum()), len(t))
    if now_board:
        BOARD.add("xqa", "looked-at", now_board, b["now_err_pct"], int((t["now_goal"] == "met").sum()), len(t))
    for lab in models:
        e = b[f"{lab}_err_pct"]
        print(f"xqa {name}, {lab}: median |error| {np.median(e.abs()):.1f} %, p90 {np.percentile(e.abs(), 90):.1f} %, "
              f"signed {np.median(e):+.1f} %; regimes met {int((t[lab + '_goal'] == 'met').sum())} of {len(t)}")
    if (t["new_goal"] == "MISSED").any():
        print(f"  missed: xqa ({name}): {diagnosis}")
    return b, t


def _xqa_blind(FP, hw, fmt) -> None:
    """The xqa grids priced before they were measured, in the order they were made: the blind grid (base = before / new =
    after mha.cu's one-CTA-per-SM rule and the new fit set), the CTA_ALONE grid (the overlap rule of
    hwmodels.roofline CTA_ALONE: a wave's fills and turnovers on one SM's serial path, overlapping the other SMs'
    streaming), the third grid (mha.cu's exposed last tile at 16 / 32 rows, the verification mask load, each kernel's
    merge walk) and the fourth (the one-tile gemm1 walk); now = the committed fitted file. Regime goal: median <= 10 %,
    p90 <= 25 %."""
    from pathlib import Path


    def base_new(b):
        return (f"base = the model at {str(b['base_commit'].iloc[0])[:7]}, new = the model at "
                f"{str(b['model_commit'].iloc[0])[:7]}")

    _xqa_grid(FP, hw, fmt, "blind", "blind grid", lambda b: (
        f"BLIND ({Path(b.attrs['file']).name}: {len(b)} shapes in none of the campaign's rows; contexts 24-240, "
        "700-3000, 20K-100K; batches 2-12, 48-900; heads 32/8, 8/1, 28/4, 64/8; bf16 and fp8 K/V; q 1, 2, 4; pages "
        f"16 / 32 / 64), FIRST LOOK = prices committed before the measurement ({FP.XQA_BLIND_PRED_CSV}): {base_new(b)}; "
        "now = the committed fitted file, LOOKED-AT (chosen after these errors: new for bf16, base's fp8 terms)"),
        ("base", "new", "now"), XQA_DIAGNOSIS, now_board="xqa blind grid, the shipped terms (chosen after it)")
    _xqa_grid(FP, hw, fmt, "alone", "CTA_ALONE grid", lambda b: (
        f"BLIND CTA_ALONE grid ({Path(b.attrs['file']).name}: {len(b)} bf16 shapes in none of the earlier rows; "
        "contexts 100-250 and 300-900 at batches 200-1000, controls at batch 2-16; heads 32/8, 28/4, 64/8; pages 16 / "
        f"64; q 1 and 2), prices committed before the measurement ({FP.XQA_ALONE_PRED_CSV}): {base_new(b)} (CTA_ALONE "
        "overlap rule, refitted on the unchanged fit rows)"),
        ("base", "new"), XQA_ALONE_DIAGNOSIS, keys=("phase", "ctx_regime", "batch_regime"))
    _xqa_grid(FP, hw, fmt, "s6", "third blind grid", lambda b: (
        f"BLIND third xqa grid ({Path(b.attrs['file']).name}: {len(b)} page-16 shapes in none of the earlier rows; "
        "q 1 / 2 / 4, bf16 / fp8 K/V, heads 32/8, 64/8, 8/1, 28/4, contexts 40-70000, batches 1-768), prices "
        f"committed before the measurement ({FP.XQA_S6_PRED_CSV}): {base_new(b)} (base: main's model; "
        "mha.cu's exposed last tile at 16 / 32 rows, the verification mask load, each kernel's merge walk; refitted "
        "on the unchanged fit rows); now = the committed fitted file"),
        ("base", "new", "now"), XQA_S6_DIAGNOSIS)
    a = FP.load_xqa_blind(FP.DATA_DIR, grid="alone")
    if len(a):   # the CTA_ALONE grid under the committed fitted file (LOOKED-AT: its errors were seen before this model)
        ev = FP.evaluate(a.drop(columns=[c for c in a.columns if c in ("phase", "kv", "ctx_regime", "batch_regime")]),
                         hw, hw.efficiency)
        a["now_err_pct"] = ev["err_pct"].to_numpy()
        ta = _models_table(a, ("phase", "ctx_regime", "batch_regime"), ("now",), ("now",))
        e = a["now_err_pct"]
        print(f"xqa CTA_ALONE grid, now (the committed fitted file, LOOKED-AT): median |error| {np.median(e.abs()):.1f} "
              f"%, p90 {np.percentile(e.abs(), 90):.1f} %, signed {np.median(e):+.1f} %; regimes met "
              f"{int((ta['now_goal'] == 'met').sum())} of {len(ta)}")
    _xqa_grid(FP, hw, fmt, "x4", "fourth blind grid", lambda b: (
        f"BLIND fourth xqa grid ({Path(b.attrs['file']).name}: {len(b)} page-16 shapes in none of the earlier rows; "
        "bf16 one-tile CTAs at contexts 90-330 in 1-10 waves, fp8 lone calls and one-tile many-wave calls, short "
        f"mid-batch verification, controls), prices committed before the measurement ({FP.XQA_X4_PRED_CSV}): "
        f"{base_new(b)} (base: main's model; mha.cu's one-tile gemm1 walk: one more dependent load past "
        "2 slices; refitted on the unchanged fit rows); now = the committed fitted file"),
        ("base", "new", "now"), XQA_X4_DIAGNOSIS)
def _xqa_x5(FP, hw, fmt) -> None:
    """The fifth xqa grid (lab/kernels/measure_xqa_attention.py --grid x5), priced before it was measured: base = main's
    model, new = mha.cu's lock-step waves (hwmodels.roofline CTA_LOCKSTEP) and the GMMA kernel's per-CTA SM time
    (CTA_SERIAL_AFTER_FIRST) with its short fit rows; now = the committed fitted file."""
    from pathlib import Path

    _xqa_grid(FP, hw, fmt, "x5", "fifth blind grid", lambda b: (
        f"BLIND fifth xqa grid ({Path(b.attrs['file']).name}: {len(b)} page-16 q-1 shapes in none of the earlier rows; "
        "bf16 one-tile CTAs of 3-4 slices (contexts 160-245) in 2-8 waves, controls in 1 and 20-40 waves, of 1-2 "
        "slices and in the middle; fp8 lone calls at contexts 35-165 and one-tile fp8 CTAs in 7-31 waves, multi-tile "
        f"controls), prices committed before the measurement ({FP.XQA_X5_PRED_CSV}): base = the model at "
        f"{str(b['base_commit'].iloc[0])[:7]} (main), new = the model at {str(b['model_commit'].iloc[0])[:7]} "
        "(mha.cu's lock-step waves, CTA_LOCKSTEP; the GMMA kernel's SM time per CTA past the first on its SM beside "
        "the K/V stream, CTA_SERIAL_AFTER_FIRST, fitted with its short rows); now = the committed fitted file"),
        ("base", "new", "now"), XQA_X5_DIAGNOSIS)


def _xqa_x6(FP, hw, fmt) -> None:
    """The lock-step W-sweep (FIT rows of hwmodels.roofline LOCKSTEP_SHARE: per slice count, t(W) and its increments,
    the share each slice count alone would fit) and the sixth xqa grid (lab/kernels/measure_xqa_attention.py --grid
    x6), priced before it was measured: base = main's model, new = a split sequence's scratch-store release before the
    semaphore (simulator/kernels/xqa.py XQA_RELEASE_LOADS), refitted; now = the committed fitted file (LOCKSTEP_SHARE
    fitted on the sweep, measured in the same call: LOOKED-AT on this grid)."""
    from pathlib import Path

    from hwmodels import roofline as RF

    d = FP.load_xqa_lock(FP.DATA_DIR)
    if len(d):
        ops = FP.build_ops(d, hw.units, float(hw.smem_per_unit_bytes or 233472))
        keep = RF.LOCKSTEP_SHARE
        try:
            RF.LOCKSTEP_SHARE = 1.0
            one = FP.predict_us(ops, hw, hw.efficiency, len(d))
        finally:
            RF.LOCKSTEP_SHARE = keep
        now = FP.predict_us(ops, hw, hw.efficiency, len(d))
        t = d[["context", "batch"]].copy()
        t["W"] = np.ceil(d["batch"] * d["kv_heads"] / hw.units).astype(int)
        t["measured_us"] = d["median_us"]
        t["increment_us"] = d.groupby("context")["median_us"].diff().round(2)
        t["share1_err"] = np.round((one / d["median_us"] - 1.0) * 100.0, 1)
        t["fitted_err"] = np.round((now / d["median_us"] - 1.0) * 100.0, 1)
        print(f"\nLOCK-STEP W-SWEEP, FIT rows of LOCKSTEP_SHARE ({Path(d.attrs['file']).name}: bf16 one-tile mha.cu CTAs "
              "of Llama-3.1-8B, W = 1..8 nearly full waves at 1-4 filled 64-key slices, contexts 60 / 120 / 180 / 240); "
              f"share1 = the share assumed before (1) under the committed other terms, fitted = the committed share {keep:g}; error %")
        print(t.to_string(**fmt))
        per = []
        for T in sorted(d["context"].unique()):
            sh, _ = FP.xqa_lockstep_share(d[d["context"] == T].reset_index(drop=True), hw, bounds=(0.0, 6.0))
            per.append(f"context {T}: {sh:.2f}")
        e1, e2 = np.log(one / d["median_us"]), np.log(now / d["median_us"])
        print(f"xqa lock-step sweep: rms log error {np.sqrt(np.mean(e1 ** 2)):.3f} at share 1 -> "
              f"{np.sqrt(np.mean(e2 ** 2)):.3f} at {keep:g}; the share each slice count alone fits: {', '.join(per)}")
    _xqa_grid(FP, hw, fmt, "x6", "sixth blind grid", lambda b: (
        f"BLIND sixth xqa grid ({Path(b.attrs['file']).name}: {len(b)} page-16 q-1 shapes in none of the earlier rows; "
        "fp8 lone calls split into 2-4 sub-sequences, unsplit lone calls of 2-4 tiles, fp8 multi-tile CTAs in a few "
        "and many waves, bf16 one-tile CTAs in 2-6 waves, a bf16 split lone call, middle controls), prices committed "
        f"before the measurement ({FP.XQA_X6_PRED_CSV}): base = the model at {str(b['base_commit'].iloc[0])[:7]} "
        f"(main), new = the model at {str(b['model_commit'].iloc[0])[:7]} (a split sequence's scratch stores released "
        "before the semaphore: one more dependent load, refitted); now = the committed fitted file (LOCKSTEP_SHARE "
        "fitted on the W-sweep of the same call, chosen after these errors were seen: LOOKED-AT)"),
        ("base", "new", "now"), XQA_X6_DIAGNOSIS,
        now_board="xqa sixth grid, the shipped terms (lock-step share fitted on the W-sweep after it)")


def _priced_with(FP, hw, d, name: str, value: float):
    """(the rows `d` priced in us with simulator.kernels.xqa.<name> set to `value` (the rule before), and priced
    now)."""
    from simulator.kernels import xqa as XQ

    keep = getattr(XQ, name)
    try:
        setattr(XQ, name, value)
        before = FP.predict_us(FP.build_ops(d, hw.units, FP._smem(hw)), hw, hw.efficiency, len(d))
    finally:
        setattr(XQ, name, keep)
    return before, FP.predict_us(FP.build_ops(d, hw.units, FP._smem(hw)), hw, hw.efficiency, len(d))


def _share_fit_rows(FP, hw, rows_of, name: str, value: float):
    """A verification rule's FIT rows (`rows_of` of the xqa campaign) priced with simulator.kernels.xqa.<name> at
    `value` (the rule before) and now: (rows, the fitted value, rms log error before / now, |error| median % before /
    now), or None without the campaign."""
    from simulator.kernels import xqa as XQ

    xq = FP.load_xqa(FP.DATA_DIR)
    if not len(xq):
        return None
    d = xq[rows_of(xq)].reset_index(drop=True)
    before, now = _priced_with(FP, hw, d, name, value)
    rms = [np.sqrt(np.mean(np.log(p / d["median_us"]) ** 2)) for p in (before, now)]
    med = [np.median(np.abs(p / d["median_us"] - 1)) * 100 for p in (before, now)]
    return len(d), getattr(XQ, name), rms, med


def _xqa_x7(FP, hw, fmt) -> None:
    """mha.cu's verification row share (simulator/kernels/xqa.py XQA_ROW_SHARE): its FIT rows (xqa_verify_fit_rows,
    share 1 = the rule before against the fitted share), then the seventh xqa grid (lab/kernels/measure_xqa_attention.py
    --grid x7: bf16 / fp8 verification at q 2-8, fp8 decode in the middle at batch 2-14, bf16 q 1 controls), priced
    before it was measured: base = main's model, new = the row share; per regime and per query rows."""
    from pathlib import Path

    fit = _share_fit_rows(FP, hw, FP.xqa_verify_fit_rows, "XQA_ROW_SHARE", 1.0)
    if fit is not None:
        n, keep, rms, med = fit
        print(f"\nXQA VERIFICATION ROW SHARE, FIT rows (xqa_verify_fit_rows: {n} bf16 q 2 / q 4 rows of Llama-3.1-8B, "
              "page 16, context <= 256 at every batch and 1024-16384 at batch <= 64; LOOKED-AT before the rule): rms log "
              f"error {rms[0]:.3f} at share 1 (every part of the 32-row tile doubles) -> {rms[1]:.3f} at the fitted "
              f"{keep:g}; |error| median {med[0]:.1f} -> {med[1]:.1f} %")
    r = _xqa_grid(FP, hw, fmt, "x7", "seventh blind grid", lambda b: (
        f"BLIND seventh xqa grid ({Path(b.attrs['file']).name}: {len(b)} page-16 shapes in none of the earlier rows; bf16 "
        "verification q 2 / 3 / 4 / 8 at 4, 7 and 8 query heads per KV head, short and middle; fp8 verification q 2 / 4 "
        "/ 8 (8 / 16 / 32 GMMA columns); fp8 decode in the middle at batch 2-14; bf16 q 1 controls), prices committed "
        f"before the measurement ({FP.XQA_X7_PRED_CSV}): base = the model at {str(b['base_commit'].iloc[0])[:7]} "
        f"(main), new = the model at {str(b['model_commit'].iloc[0])[:7]} (mha.cu's verification tile: only "
        "XQA_ROW_SHARE of it grows with its second 16-row block; fp8 priced alike by both)"),
        ("base", "new"), XQA_X7_DIAGNOSIS)
    if r is not None:
        b, _ = r
        b["q"] = b["q_rows"].astype(int)
        t = _models_table(b, ("kv", "q", "ctx_regime"), ("base", "new"), ("base", "new"))
        print("seventh xqa grid per K/V type, query rows and context regime:")
        print(t.to_string(**fmt))


def _xqa_x8(FP, hw, fmt) -> None:
    """The GMMA kernel's verification columns (simulator/kernels/xqa.py XQA_GMMA_COL_SHARE, XQA_GMMA_WIDE_SLOTS): its FIT
    rows (xqa_gmma_verify_fit_rows, share 0 = the rule before against the fitted share), then the eighth xqa grid
    (lab/kernels/measure_xqa_attention.py --grid x8: fp8 verification at q 2-8 over Llama and Qwen heads, short and
    middle, batch 1-256; fp8 / bf16 controls), priced before it was measured: base = main's model, new = the column
    share; per regime and per heads / query rows."""
    from pathlib import Path

    fit = _share_fit_rows(FP, hw, FP.xqa_gmma_verify_fit_rows, "XQA_GMMA_COL_SHARE", 0.0)
    if fit is not None:
        n, keep, rms, med = fit
        print(f"\nXQA GMMA VERIFICATION COLUMNS, FIT rows (xqa_gmma_verify_fit_rows: {n} fp8 q 2 / q 4 rows of "
              "Llama-3.1-8B, page 16, every context and batch of the campaign; LOOKED-AT before the rule): rms log error "
              f"{rms[0]:.3f} at share 0 (the verification CTA priced as the decode CTA) -> {rms[1]:.3f} at the fitted "
              f"{keep:g}; |error| median {med[0]:.1f} -> {med[1]:.1f} %")
    r = _xqa_grid(FP, hw, fmt, "x8", "eighth blind grid", lambda b: (
        f"BLIND eighth xqa grid ({Path(b.attrs['file']).name}: {len(b)} page-16 shapes in none of the earlier rows; fp8 "
        "verification q 2 / 3 / 4 / 8 at Llama-3.1-8B heads (8 / 12 / 16 / 32 query heads per CTA) and q 2 / 4 at "
        "Qwen2.5-7B heads (14 / 28), short and middle, batch 1-256; fp8 q 1 and bf16 q 1 / 2 controls), prices "
        f"committed before the measurement ({FP.XQA_X8_PRED_CSV}): base = the model at "
        f"{str(b['base_commit'].iloc[0])[:7]} (main), new = the model at {str(b['model_commit'].iloc[0])[:7]} (the "
        "GMMA verification CTA: XQA_GMMA_COL_SHARE of its SM time per 8 query heads beyond G, 2 resident CTAs at 32 "
        "columns)"), ("base", "new"), XQA_X8_DIAGNOSIS)
    if r is not None:
        b, _ = r
        b["q"] = b["q_rows"].astype(int)
        b["heads"] = b["model"]
        t = _models_table(b, ("kv", "heads", "q", "ctx_regime"), ("base", "new"), ("base", "new"))
        print("eighth xqa grid per K/V type, heads, query rows and context regime:")
        print(t.to_string(**fmt))


def _xqa_x9(FP, hw, fmt) -> None:
    """The GMMA kernel's verification residency from its measured registers (simulator/kernels/xqa.py XQA_GMMA_REGS,
    gmma_resident): the ninth xqa grid (lab/kernels/measure_xqa_attention.py --grid x9: fp8 verification at q 2-4 over
    G 4 / 7 builds whose registers were profiled, full-model and tensor-parallel heads, short and middle, batch 2-200;
    bf16 verification and q 1 controls), priced before it was measured: base = main's model (residency from the launch
    bounds), new = the residency from the registers; per regime, per build (K/V, q, G) and for the rows whose price
    the rule moves."""
    from pathlib import Path

    r = _xqa_grid(FP, hw, fmt, "x9", "ninth blind grid", lambda b: (
        f"BLIND ninth xqa grid ({Path(b.attrs['file']).name}: {len(b)} page-16 shapes in none of the earlier rows; fp8 "
        "verification at q 3 x G 4 (60 registers), q 2 x G 7 (66) and q 4 x G 7 (100), where the registers change the "
        "residency, and q 2 / 4 x G 4 (42 / 56), where they do not, over Llama-3.1-8B / Qwen2.5-7B heads and their TP 2 "
        "/ TP 4 shards, short and middle, batch 2-200; bf16 verification (q 2 x G 4, q 3 x G 7) and fp8 / bf16 q 1 "
        f"controls), prices committed before the measurement ({FP.XQA_X9_PRED_CSV}): base = the model at "
        f"{str(b['base_commit'].iloc[0])[:7]} (main: the launch-bounds residency), new = the model at "
        f"{str(b['model_commit'].iloc[0])[:7]} (the residency from the profiled registers, XQA_GMMA_REGS; the table "
        "was read from the earlier grids' launch profiles, looked-at; this grid's profile reproduced every entry)"),
        ("base", "new"), XQA_X9_DIAGNOSIS)
    if r is not None:
        b, _ = r
        b["build"] = (b["dtype"] + " q" + b["q_rows"].astype(int).astype(str) + " G"
                      + (b["heads"] // b["kv_heads"]).astype(int).astype(str))
        b["moved"] = (b["pred_new_us"] != b["pred_base_us"]).map({True: "moved", False: "same"})
        print("ninth xqa grid per build (K/V, query rows, query heads per KV head) and context regime:")
        print(_models_table(b, ("build", "ctx_regime"), ("base", "new"), ("base", "new")).to_string(**fmt))
        print("ninth xqa grid, the rows whose price the register rule moves against the rest:")
        print(_models_table(b, ("moved",), ("base", "new"), ("base", "new")).to_string(**fmt))


#: what the ninth blind grid shows where its regimes miss (printed only while they miss)
XQA_X9_DIAGNOSIS = (
    "the residency from the registers brings the moved rows from 26.8 / 42.0 % to 16.0 / 29.0 % (median / p90; Qwen q 4 "
    "in the middle -39..-44 % -> -10..-13 %, Llama q 3 short in many waves -14..-30 % -> -6..-15 %) but the fp8 "
    "short verification at mid batch still runs slow under the new model at G 7 (Qwen q 4 at T 55-100, batch 40-150: "
    "-25..-37 %; q 2 at T 60-110: -14..-26 %): the per-CTA SM time of the wide builds grows more than the column share "
    "(fitted at G 4) prices. The middle at mid batch (T 600-1100, batch 40-160) -15..-24 % under both models: the "
    "split CTAs there are fewer than the SMs hold at either residency, so the rule cannot move them; the small-batch "
    "middle (Llama TP 2 q 4 T 2500 B 6: -64 % under both, p20 / p80 31 / 44 us; Qwen TP 4 q 4 T 3000 B 8 -20 %) is the "
    "multi-tile verification chain of the eighth grid. bf16 verification (unchanged) -13..-25 % in the middle and at "
    "q 3 x G 7 T 300 B 60")


#: what the eighth blind grid shows where its regimes miss (printed only while they miss)
XQA_X8_DIAGNOSIS = (
    "the new model halves the short-context fp8 verification misses (Llama q 8: main -25..-44 %, new -15..0 %) but the "
    "GMMA kernel's residency is set by its registers, which grow with the columns beyond what the rule reads: the launch "
    "profile (xqa_x8_grids_*.csv) shows 60 registers at Llama q 3 (12 heads: 2 CTAs per SM, not 3), 66 at Qwen q 2 (14: "
    "2) and 100 at Qwen q 4 (28: 1 per SM): Qwen q 4 -21..-43 % and Llama q 3 in many waves -25 %, the middle at mid "
    "batch (a CTA per SM fewer doubles the waves) -13..-43 % under both models. Multi-tile CTAs at small batch in the "
    "middle (Llama q 8 T 1600 B 6 -21 %, Qwen q 2 / 4 lone calls -17..-21 %): the per-tile chain grows with the columns "
    "too, which the campaign fit rows did not show (a per-tile share fitted on them went to 0). The bf16 q 1 control "
    "at T 1350 B 10 -20.5 % (the small-batch middle miss of the seventh grid)")


#: what the seventh blind grid shows where its regimes miss (printed only while they miss)
XQA_X7_DIAGNOSIS = (
    "bf16 short verification (one-tile mha.cu CTAs of 32 rows) within 10 % but at 7-8 query heads per KV head and 1 "
    "KV head in many waves (+11..+16 %: qwen T 100 B 90, 64/8 T 120 B 20 / 200, 8/1 T 80 B 400; main +19..+28 %) and "
    "q 4 at 4 per KV head T 90 B 120 (+11 %); the middle at batch 4-12 (T 600-4500) -9..-19 % under both models (new 1-3 "
    "points lower), the q 1 control T 2600 B 6 -12.6 % alike: a small-batch middle miss not specific to the rows. fp8 "
    "(GMMA, unchanged: both models price its verification CTA as the decode CTA plus fp8 flops) -6..-23 % at 8 columns "
    "(q 2), -9..-18 % at 16 (q 4), -22 / -39 % at 32 (q 8): the miss grows with the GMMA's column count N (the gemm0 "
    "accumulator, the column max and sum, gemm1's N x 128 output and its epilogue are per column; the Q load and "
    "conversion per row), which the model does not see; the roofline's per-CTA SM time (cta_serial) has no per-op "
    "scale for it. fp8 decode in the middle at batch 2-14 met (4.0 / 7.7 %)")


#: what the sixth blind grid shows where its regimes miss (printed only while they miss)
XQA_X6_DIAGNOSIS = (
    "fp8 lone calls split into 2-4 sub-sequences: main -9..-17 %, new -3..-12 % (the release load adds ~0.28 us of the "
    "0.4-0.8 us main's model is short; the rest, about one more round trip at batch 1-6, is not in the source's count "
    "as read: the merge's barrier init and CTA barriers, the last CTA's arrival); unsplit lone calls of 2-4 tiles "
    "+7..+10 % (the middle-fitted per-tile page walk is slower than a lone CTA's); fp8 CTAs of 4 tiles in 4-6 waves (T "
    "210, B 150-260) -9..-11 % under both models (the GMMA kernel's multi-tile CTAs in a few waves)")


#: what the fifth blind grid shows where its regimes miss (printed only while they miss)
XQA_X5_DIAGNOSIS = (
    "bf16 one-tile CTAs of 3-4 slices in 2-8 waves are met (24 rows: main -14.3 % signed median, p90 18.8 %; new -6.8 "
    "%, p90 11.1 %), the 4-wave rows still -8..-13 %; the one control in one wave (T 195, B 10) -12 % under both "
    "models. fp8 lone calls (small batch): one-tile calls within 5 % (main +23..+28 %), but a lone call split into 2-3 "
    "sub-sequences (T 110-165, B 2-4: the merge) -13..-19 % and an unsplit one of 2-3 tiles (T 110-165, B 9) +12..+16 "
    "%: the fitted fixed time fell 0.88 -> 0.10 us when the one-tile rows joined the fit, and the split call's merge "
    "walk does not make up the difference")


#: what the fourth blind grid shows where its regimes miss (printed only while they miss)
XQA_X4_DIAGNOSIS = (
    "the gemm1 walk moved every bf16 one-tile row of 3-4 slices by +3..+5 points (short mid batch -15.4 -> -11.7 % "
    "signed), but one-tile CTAs of 3-4 slices in 2-8 waves stay -12..-20 % (one wave and >= 19 waves within 10 %): a "
    "few waves of these CTAs cost ~1-2 us per wave more than the serial path (load latency + fill + MMAs + walk + "
    "turnover) and than the same CTAs in many waves; a share of each wave's tile load on the serial path (all SMs "
    "loading at once) was tried and REJECTED by the fit rows (rms 0.058 -> 0.061-0.137). Two-tile bf16 CTAs at T "
    "280-330, B 12-70 (q 1 and q 2) -11..-26 % (middle mid batch; T 280 B 20 measured 32.0 us, p20 31.4 / p80 37.2, "
    "against 19.1 us at T 330: a suspect row, -58 %). fp8 (GMMA) unchanged by this model: lone calls at T 30-90 "
    "+21..+30 %, one-tile CTAs in 22-61 waves at T 30 -32 %")


#: what the third blind grid shows where its regimes miss (printed only while they miss)
XQA_S6_DIAGNOSIS = (
    "bf16 one-tile CTAs in a few waves at T 170-350 (B 24-160: -7..-26 %, q 1 and q 2 alike, main's model too): a wave's "
    "time grows with the 64-key warp slices a short tile fills (SHORT_SEQ_OPT: 2 at T 100, 3 at T 150-170, 4 at T 250; "
    "~0.85 us per slice and wave on the CTA_ALONE grid), which the serial path (load latency + fill + MMAs + turnover) "
    "does not see; q 2 / 4 at T 40 (one slice) +6..+14 %. fp8 (GMMA) lone calls (T 40-170, B <= 24) +15..+29 % (main's "
    "+32..+46 %): the merge walk moved the fixed time 1.45 -> 0.88 us, the rest is the first-tile path of a lone CTA; "
    "one-tile fp8 CTAs in many waves (T 40, B 768) -26 %. qwen7b fp8 T 6000 B 2 measured 88.9 us (2 calls, p20 66 / p80 "
    "94 us) against 18-67 us for its neighbours: a suspect row both models miss by -87 %")


#: what the xqa measurement shows where the short-context regimes miss (printed only while they miss)
XQA_DIAGNOSIS = (
    "bf16 (mha.cu, one CTA per SM, CTA_ALONE): q 2 / 4 one-tile CTAs -18..-31 % at every batch (the multi-row CTA "
    "costs more than the q 1 tile plus its rows' flops; the one-tile many-wave q 1 rows, +38..+42 % before CTA_ALONE's "
    "overlap, are within 10 % with it, looked-at here, blind on the CTA_ALONE grid below). "
    "fp8 (GMMA, 3 CTAs per SM): one shared set of terms does not serve lone calls, one-tile many-wave rows and the "
    "middle: the middle fit's fixed time (1.45 us) and 3 dependent loads over-price a lone CTA (+43 % at T 24, B <= "
    "12, ~3.1 us measured) while one-tile CTAs in many waves are under-priced (-33..-37 % at T 24, B >= 400); a "
    "per-wave term fitted with them displaced the per-tile page walk the middle needs (blind: fp8 median 9.3 -> 15.6 %)")


#: what the CTA_ALONE grid shows where its regimes miss (printed only while they miss)
XQA_ALONE_DIAGNOSIS = (
    "q 2 (verification, one row per regime): -13..-21 % at every batch, controls included (T 110, B 3 / 220 / 700; "
    "T 450, B 3): the two-row CTA costs more than the priced q 1 tile plus one more row's flops, in one wave as in "
    "many, so not the wave rule. The one-tile CTAs in many waves at T 100-150 are now priced by one SM's serial path "
    "(fill + chain + turnover), which does not grow with the keys: 72 us at T 100 and T 150 (B 200) against 72 / 85 "
    "us measured (-15 % at T 150): the K/V stream and the turnover overlap only in part")
