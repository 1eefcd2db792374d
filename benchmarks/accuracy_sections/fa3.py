"""FlashAttention-3 (the fa3 family, measured through FA4-CuTe's sm_90 forward): the first look and held-out rows, and
the blind grid priced before and after the one-CTA-per-SM rules and the TMA kind (both prices committed before the
measurement), against the measurements in hwmodels/calibration/data/production_attention/ (fit_production_attention's
fa3 readers).
"""
from __future__ import annotations

import numpy as np

from simulator.calibration.scoreboard import BOARD
from simulator.calibration.scoreboard import add_pooled as _board
from simulator.calibration.scoreboard import models_table as _models_table

from . import fa3_binary, fa3_binary2, fa3_binary3
from .attention import context, first_look_line


def fa3() -> None:
    """Print the FlashAttention-3 sections (nothing where no attention campaign is committed)."""
    c = context()
    if c is None:
        return
    FP, hw, fmt = c
    _fa3(FP, hw, fmt)


#: what the fa3 measurement shows where a regime misses (printed only while it misses)
FA3_DIAGNOSIS = {
    "short (<=256)":
        "one-block CTAs by TMA (contiguous, page 128) at batch 16-256 are 12-25 % too fast: contiguous ones measure "
        "as slow as page-16 ones (T 16, B 64: 19.0 against 19.5 us) though the model gives them 1 dependent load "
        "instead of 3, and page 128 is slower still (22.9 us), likely its TMA box loading whole 128-row pages (64 KB "
        "of K/V per CTA at T 16, not priced); 8/1 heads at T 256, B 256-512 -14..-17 %",
    "contiguous / page 128":
        "see short (<=256); and few TMA CTAs on long chains (batch 2, context 2K-50K) +16..+31 %: with CTA_ALONE's "
        "overlap the refit (same fit rows) moved attn_fa3's per-block latency 0.38 -> 1.65 us against its turnover "
        "1.13 -> 0.20 us (nearly collinear on one-block rows), and attn_fa3_tma inherits that latency",
}


def _fa3(FP, hw, fmt) -> None:
    """The fa3 family measured through FA4-CuTe's sm_90 forward: the first look (the measured kernel's launch structure
    with the attn_fa3 terms then borrowed from FlashInfer's FA2 prefill kernel, priced before the measurement) and the
    held-out error after the fit (Llama-3.1-8B, q 1: page 16 middle regime and context <= 256 for attn_fa3, contiguous
    middle rows for attn_fa3_tma: fa3_fit_rows), then the blind grid; signed = predicted / measured - 1."""

    fa3 = FP.load_fa3(FP.DATA_DIR)
    if not len(fa3):
        return
    ev = FP.evaluate(fa3, hw, hw.efficiency)
    ev["layout"] = fa3["layout"].to_numpy()
    fl = FP.fa3_first_look(fa3, FP.DATA_DIR)
    f, rep, _ = FP.latest_fa3(FP.DATA_DIR)
    print(f"\n== {hw.name}: fa3 family measured through FA4-CuTe's sm_90 forward (flash-attn-4 4.0.0b36, "
          f"FlashAttentionForwardSm90; {f.name}{' + ' + rep.name if rep is not None else ''}: {len(fa3)} shapes, "
          "bf16, heads 32/8, 8/1, 28/4, q 1 / 4 / 8, pages 1 / 16 / 64 / 128 and contiguous; CUDA-graph timing, each "
          "shape the smaller median of two runs). Fit (fit_production_attention.fa3_fit_rows): attn_fa3 on Llama-3.1-8B, "
          "page 16, q 1, context 1024-16384 at batch <= 64 and context 16-256 at every batch (30 rows); attn_fa3_tma's "
          "block rate on Llama-3.1-8B contiguous, q 1, context 1024-16384, batch <= 64 (9 rows); everything else held "
          "out")
    if len(fl):
        commit = str(fl["model_commit"].iloc[0])[:10]
        for col, what in (("first_struct_err_pct", "the measured kernel's launch structure (fa3.fa4cute_sm90: no split, "
                           "one CTA per (m-block, KV head, request))"),
                          ("first_fa3_err_pct", "fa3 as the product priced it (FA3's split-KV plan and combine: a "
                           "different launch from the one measured, shown for reference only)")):
            first_look_line(f"FIRST LOOK ({FP.FA3_FIRST_LOOK_CSV}, priced at {commit} before the measurement, attn_fa3 "
                            f"terms borrowed from attn_fi_prefill), {what}", fl[col])
        tf = FP.accuracy(fl, by=("family", "phase", "ctx_regime", "batch_regime"), col="first_struct_err_pct", part=None)
        print(tf.to_string(**fmt))
        _board(fl, "first_struct_err_pct", "first look", "FA4-CuTe sm_90 campaign, before measuring", tf)
    print("held out after the fit (committed fitted file), by phase, layout and regime (LOOKED-AT: these rows' errors "
          "were seen under the earlier rules before the one-CTA-per-SM rules and the TMA kind were chosen):")
    t = FP.accuracy(ev, by=("family", "phase", "layout", "ctx_regime", "batch_regime"))
    print(t.to_string(**fmt))
    t2 = FP.accuracy(ev, by=("family", "phase", "ctx_regime", "batch_regime"))
    print("held out, pooled over layouts and heads:")
    print(t2.to_string(**fmt))
    e = ev[ev["part"] == "held-out"]["err_pct"]
    _board(ev[ev["part"] == "held-out"], "err_pct", "looked-at", "FA4-CuTe sm_90 campaign", t2)
    fit = ev[ev["part"] == "fit"]["err_pct"].abs()
    print(f"fa3 held out: {len(e)} shapes, median |error| {np.median(e.abs()):.1f} %, p90 {np.percentile(e.abs(), 90):.1f} "
          f"%, signed {np.median(e):+.1f} %; fit rows {len(fit)}, median |error| {np.median(fit):.1f} %; regimes met "
          f"{int((t['goal'] == 'met').sum())} of {len(t)}")
    _fa3_blind(FP, hw, fmt)
    fa3_binary.fa3_binary(fmt)
    fa3_binary2.fa3_binary2(fmt)
    fa3_binary3.fa3_binary3(fmt)
    missed = t[t["goal"] == "MISSED"]
    if (missed["ctx_regime"] == "short (<=256)").any():
        print(f"  missed: fa3 short (<=256): {FA3_DIAGNOSIS['short (<=256)']}")
    if missed["layout"].isin(["contiguous", "page 128"]).any():
        print(f"  missed: fa3 contiguous / page 128: {FA3_DIAGNOSIS['contiguous / page 128']}")


def _fa3_blind(FP, hw, fmt) -> None:
    """The fa3 blind grid: shapes in none of the campaign's rows, priced with the model before and after the
    one-CTA-per-SM rules and the TMA kind (both prices committed before the measurement), then measured."""
    from pathlib import Path


    b = FP.load_fa3_blind(FP.DATA_DIR)
    if not len(b):
        return
    ev = FP.evaluate(b.drop(columns=[c for c in b.columns if c in ("phase", "kv", "ctx_regime", "batch_regime")]),
                     hw, hw.efficiency)
    b["now_err_pct"] = ev["err_pct"].to_numpy()
    print(f"BLIND ({Path(b.attrs['file']).name}: {len(b)} shapes in none of the campaign's rows; heads 32/8, 8/1, "
          "28/4, 64/8; q 1, 2, 3; page 16, contiguous, page 128), FIRST LOOK = prices committed before the "
          f"measurement ({FP.FA3_BLIND_PRED_CSV}): base = the model at {str(b['base_commit'].iloc[0])[:7]}, new = "
          f"the model at {str(b['model_commit'].iloc[0])[:7]}; now = the committed fitted file")
    t = _models_table(b, ("phase", "kv_path", "ctx_regime", "batch_regime"), ("base", "new", "now"), ("base", "new"))
    print(t.to_string(**fmt))
    BOARD.add("fa3", "blind", "fa3 blind grid (FA4-CuTe sm_90)", b["new_err_pct"], int((t["new_goal"] == "met").sum()),
              len(t))
    for c, lab in (("base_err_pct", "base"), ("new_err_pct", "new"), ("now_err_pct", "now")):
        e = b[c]
        print(f"fa3 blind, {lab}: median |error| {np.median(e.abs()):.1f} %, p90 {np.percentile(e.abs(), 90):.1f} %, "
              f"signed {np.median(e):+.1f} %" + (f"; regimes met {int((t[lab + '_goal'] == 'met').sum())} of {len(t)}"
                                                 if lab + "_goal" in t else ""))
