"""The production attention campaign (hwmodels/calibration/data/production_attention/, fit_production_attention.latest):
held-out / looked-at |error| per family and regime, the fresh shapes measured after the fit; at the end the first look
(FlashInfer decode priced from its source before any measurement), torch SDPA's short-context check and the family
table. context() hands the campaign's fit module, H100 and print format to the family sections (mla, flashinfer, fa3,
xqa, triton).
"""
from __future__ import annotations

import functools

import numpy as np

from hwmodels import datafiles as DF
from simulator.calibration.scoreboard import add_pooled as _board

#: what the held-out data show about each production-kernel regime that misses (printed only while it misses)
PRODUCTION_DIAGNOSIS = {
    ("fi_decode", "short (<=256)"):
        "bf16 small batch met since the lone CTA's 8-key iteration is fitted on the lone-CTA fit rows (0.49 us, "
        "fit_production_attention FI_LONE_FIT_GLOB; was 0.71 us, a crowded middle-row value) and the decode call hides "
        "PDL's pre-wait loads (FI_DECODE_PDL; MEASURED in effect in the graph chain: lab/kernels/probe_fi_pdl.py); mid "
        "batch (B 8-64) met since the decode call's CTA launch is priced on the busiest SM of the decode kernel and on "
        "its merge (FI_DECODE_CTA_LAUNCH_SHARE: -20 % before); fp8 small batch p90 37 % (the fp8 lone iteration, 1.63 us, "
        "at Llama-8B's 1-2 CTAs per SM), large batch p90 31 %",
    ("fi_decode", "middle"):
        "fp8 large batch (B >= 256, 2-11 waves) +14.5 % (was +16 %): issue-bound (the fp8 kernel's compute term alone is "
        "within a few % of the measured time) and compounded with its chain; bf16 met since HBM is a ceiling of the "
        "compounded chain and issue (roofline CHAIN_OVERLAP_BW_CEILING) at attn_fa2's measured 2.86 TB/s (MEMORY_FROM)",
    ("fi_decode", "long (>=64K)"): "fp8 small batch +10.5 %: the compounded chain and issue of the fp8 kind (no "
                                   "lone-CTA fit rows for fp8)",
    ("fi_tc", "long (>=64K)"): "fp8 mid batch (2 shapes) +12.8 % (was +9.2 %): the per-column fp8 chain at 64-row "
                               "tiles of long chains",
    ("fi_tc", "short (<=256)"):
        "met since the FA2 prefill CTA carries a serial time co-resident CTAs do not overlap (cta_serial_us 0.89 us, "
        "fitted on the fp8 kind's fit rows, the bf16 kind takes it): bf16 T 16-64 at B >= 256 were 16 % too fast (a "
        "one-tile CTA's time per wave ~7 us with 2 CTAs per SM, ~5.8 us alone)",
    ("fi_verify", "short (<=256)"): "met since the fp8 fragment columns are shared by the busiest SM's CTAs (a lone CTA "
                                    "takes k / slots of the column time) and the serial CTA time (fi_tc short)",
    ("sgl_triton", "short (<=256)"):
        "with the two-stage pipeline's prologue (a one-iteration program = 3 + 2 dependent loads, no steady-state "
        "tile), idle programs at one L2 hit per wave and fp8 its own kind, every regime is within 10 % median",
    ("fi_mla", "short (<=256)"):
        "mid batch only (B 64, one item per cluster): T 16 / 64 +2 / +13 % at 16 heads and +21 / +32 % at 128 "
        "heads, T 256 +6 % (with the per-item first-stage fill, FI_MLA_FILL_RATE_SM, looked-at: 13.7 -> 9.5 % "
        "median, p90 31.9 -> 26.8 %): the one-stage item's Q and output tiles (8-9 MB each at 128 heads) priced at the kind's DRAM rate "
        "in the body, though the harness's Q stays in L2 between graph replays (Q as L2 hits was tried on the fit "
        "rows: short large batch then 16 % too fast). Large batch met since the per-item epilogue is on the CTA's "
        "chain (hwmodels/roofline.py CTA_FIXED_HIDDEN: write_o, then __syncthreads before the next item's loads, "
        "mla_hopper.cuh @ f1e6fdcb), 12.8 -> 6.4 % median. A partial last stage discounted by its tokens was scanned "
        "on the fit rows and rejected (simulator/kernels/flashinfer.py FI_MLA_PARTIAL_STAGE_SHARE)",
    ("fi_mla", "long (>=64K)"):
        "met since the stages' tensor work is priced on the per-stage chain, not as a compute term of the body "
        "(hwmodels/roofline.py CHAIN_TENSOR): 128 heads at B 16 T 65536 and B 4 T 262144 were +32 %",
    ("flashmla", "short (<=256)"):
        "mid batch (B 64, one request per part): 16 heads T 16 / 64 / 256 -13 / -11 / -14 % and 128 heads T 16 / 64 "
        "+17 / +21 % (before the PDL combine and the out-of-bound V fill, simulator/kernels/flashmla.py "
        "FM_COMBINE_PDL / FM_OOB_TOKEN_S: median 5.8 %, p90 29.3 %, 128 heads +25 / +34 %): the measured time grows "
        "from B 4 to B 64 at one request per part (16 heads T 16: 6.8 -> 9.4 us) more than the model's (the same "
        "per-part chain; only the bytes grow), and 128 heads' two head blocks per request cost less than priced. With the "
        "next request's Q tile exposed per request after a part's first (splitkv_mla.cuh @ 9241ae3: launch_q_copy("
        "batch_idx + 1) after the last block, barrier_Q waited before the next QK^T; one round trip + the tile's bytes "
        "at 42.5 GB/s per SM, scanned on the fit rows) 128 heads at B >= 256 went from 10-21 % too fast to within 8 %"
}

#: what the fresh shapes (predicted before measuring) show where a regime misses
FRESH_DIAGNOSIS = {
    ("fi_decode", "short (<=256)"): "as on the campaign's rows (fi_decode short): the lone-CTA tile time at T <= 64 "
                                    "and B <= 4 (the committed prediction predates the busiest-SM crowding rule; the "
                                    "FlashInfer check grid below is its blind test)",
    ("fi_decode", "middle"): "middle small / large batch 13-17 % in the committed prediction: one fitted iteration "
                             "time for few and many working CTAs; the busiest-SM crowding rule (after this grid was "
                             "looked at) gives small batch 8.2 / 14.5 % on these rows; large batch stays ~14 % (see "
                             "the campaign's fi_decode middle)",
    ("fi_mla", "short (<=256)"): "split shapes of 128 heads (2 pieces, a merge CTA of 32-43 rows: 8-11 merge rounds) "
                                 "+48..98 % in the committed prediction (a merge round then priced as one 64-token "
                                 "stage, an ASSUMPTION); with the merge priced from mla.cuh (a chain of L2-latency "
                                 "loads, the MLA merge shapes below are its blind test) these shapes are looked-at: "
                                 "short small batch 30.6 -> 11.4 % median, mid batch 16.1 -> 19.8 % (unsplit shapes "
                                 "15-33 % too slow: see the campaign's fi_mla short)",
    ("fi_mla", "middle"): "as fi_mla short: split 128-head shapes at T 384 (+48 %, 8-11 merge rounds) in the committed "
                          "prediction; with the merge priced from mla.cuh the middle regimes are within 9 % p90 "
                          "(looked-at)",
    ("fi_tc", "short (<=256)"): "as on the campaign's rows (fi_tc short): the FA2 prefill kernel's per-wave CTA time at "
                                "many waves, 19 % too fast in bf16, 29 % in fp8",
    ("fi_verify", "short (<=256)"): "as fi_tc short (p90 only: 2 of 12 shapes)",
    ("flashmla", "short (<=256)"): "as on the campaign's rows (flashmla short): 128 heads at B 512, 13-18 % too fast",
    ("sgl_triton", "short (<=256)"): "bf16 at B >= 128: the idle programs' waves (as on the campaign's rows); fp8 "
                                     "within 7 %",
    ("sgl_triton", "middle"): "bf16 B 512 T 384 +19 % (as short); fp8 small batch T 3072-49152 +11 % median (p90 30 %): "
                              "fp8 rows use the bf16 kind's fitted terms",
}


#: families whose rules were revised after the campaign's held-out rows had been looked at, and what was revised
LOOKED_AT = {"fi_decode": "looked-at", "fi_mla": "looked-at", "flashmla": "looked-at", "sgl_triton": "looked-at",
             "fi_tc": "looked-at",
             "fi_verify": "looked-at"}
LOOKED_AT_WHY = {
    "fi_decode": "the tiles' issue priced on the busiest SM of the measured block dispatch (fi_decode_crowding); "
                 "fixed_us 0 (FIXED_ZERO); latency chain and issue compounded (roofline CHAIN_OVERLAP), HBM a ceiling of "
                 "it (CHAIN_OVERLAP_BW_CEILING), memory efficiency from attn_fa2 (MEMORY_FROM), PDL for the decode call "
                 "(FI_DECODE_PDL), the CTA launch on the busiest SM of the decode kernel and its merge "
                 "(FI_DECODE_CTA_LAUNCH_SHARE), the 9- / 7-slot kernels' probed dispatch (FI_DISPATCH_PROBED_SLOTS), "
                 "only the first wave compounding chain and issue (CHAIN_OVERLAP_STAGGERED), a later wave's CTAs waiting for "
                 "their first tile (CHAIN_OVERLAP_WAVE_FILL), the decode launches' own residency for the wave count "
                 "(FI_DECODE_OWN_RESIDENCY)",
    "fi_mla": "one cooperative launch with the merge in-kernel, replayed MLAPlan heap, per-item chain, the merge as "
              "a serial chain of loads (L2 hit + st.merge, link share scanned on the fit rows)",
    "flashmla": "replayed scheduler, per-request store wait, whole 64-token blocks, combine on every call",
    "sgl_triton": "Triton two-stage pipeline prologue, idle programs' load an L2 hit, fp8 K/V its own kind; idle splits "
                  "in the last wave's free slots and a wave priced as vLLM's Triton kernel's (roofline CHAIN_ISSUE with "
                  "a fitted chain_queue); the bf16 kind's K/V stream at attn_fa2's rate (SGL_MEMORY_FROM), both "
                  "kernels' constants 0 (SGL_FIXED_ZERO); the GQA-group-7 binary's measured lone chain (SGL_ITER_BY_G)",
    "fi_tc": "epilogues hidden under the body but the last wave's (CTA_FIXED_HIDDEN); fixed_us 0 (FIXED_ZERO); fp8 "
             "chain = per-warp fp8 fragment columns (NUM_MMA_KV), shared by the busiest SM's CTAs (k / slots); a serial "
             "CTA time co-resident CTAs do not overlap (cta_serial_us, fitted on the fp8 fit rows, bf16 takes it)",
    "fi_verify": "as fi_tc",
}


def _fresh(FP, hw, fmt) -> None:
    """The fresh grid: shapes in none of the campaign's rows, priced by the committed model BEFORE they were measured
    (FP.fresh_errors); per family and regime median / p90 / signed |error| and the goal."""
    import numpy as np

    fr, commit = FP.fresh_errors(FP.DATA_DIR)
    if not len(fr):
        print("\nfresh shapes: not measured yet (" + FP.FRESH_PREDICTIONS_CSV + " holds the predictions)")
        return
    src = sorted(DF.glob(FP.DATA_DIR, FP.FRESH_GLOB))[-1].name
    print(f"\nFRESH SHAPES (predicted before measuring, commit {commit[:10]}; {FP.FRESH_PREDICTIONS_CSV} vs {src}: "
          f"{len(fr)} shapes, contexts 24-49152 x batches 2-512, none in the campaign). Goal: median <= 10 %, p90 <= 25 %")
    t = FP.accuracy(fr, part="fresh")
    print(t.to_string(**fmt))
    pooled = FP.accuracy(fr, by=("family",), part="fresh")
    old, old_commit = FP.fresh_errors(FP.DATA_DIR, FP.FRESH_EARLIER_CSV)
    if len(old):
        po = FP.accuracy(old, by=("family",), part="fresh").set_index("family")
        pooled["before median"] = [po["median"].get(f, np.nan) for f in pooled["family"]]
        pooled["before p90"] = [po["p90"].get(f, np.nan) for f in pooled["family"]]
        to = FP.accuracy(old, part="fresh")
    print("pooled fresh per family" + (f" (before = the same shapes priced by the model at {old_commit}, whose rules "
                                       "predate the fresh grid: also blind)" if len(old) else "") + ":")
    print(pooled.to_string(**fmt))
    _board(fr, "err_pct", "blind", "fresh grid (contexts 24-49K)", t)
    e = fr["err_pct"].abs()
    print(f"fresh regimes met: {int((t['goal'] == 'met').sum())} of {len(t)}; all fresh shapes: median |error| "
          f"{np.median(e):.1f} %, p90 {np.percentile(e, 90):.1f} %, median signed {np.median(fr['err_pct']):+.1f} %")
    if len(old):
        eo = old["err_pct"].abs()
        print(f"  before ({old_commit}): regimes met {int((to['goal'] == 'met').sum())} of {len(to)}; median |error| "
              f"{np.median(eo):.1f} %, p90 {np.percentile(eo, 90):.1f} %")
    for fam, ctx in sorted({(r.family, r.ctx_regime) for r in t.itertuples() if r.goal == "MISSED"}):
        why = FRESH_DIAGNOSIS.get((fam, ctx))
        if why:
            print(f"  missed (fresh): {fam} {ctx}: {why}")
    now = FP.evaluate(fr.drop(columns=[c for c in fr.columns if c in ("pred_us", "err_pct", "part", "phase", "kv",
                                                                       "ctx_regime", "batch_regime")]), hw,
                      hw.efficiency)
    d = np.abs(now["pred_us"].to_numpy() / fr["pred_us"].to_numpy() - 1.0)
    if np.nanmax(d) > 1e-3:
        e2 = now["err_pct"].abs()
        print(f"  the shipped model now (changed since {commit[:10]}): median |error| {np.median(e2):.1f} %, "
              f"p90 {np.percentile(e2, 90):.1f} % on the same shapes (not a blind test)")


@functools.cache
def _campaign():
    """(campaign file, its rows, the H100) of the production attention campaign, or None where none is committed."""
    from hwmodels.spec import load_hardware
    from simulator.calibration import fit_production_attention as FP

    f, _ = FP.latest(FP.DATA_DIR)
    if f is None:
        return None
    return f, FP.load(f), load_hardware("H100-SXM")


def context():
    """(fit_production_attention, the H100, the tables' print format) that the family sections judge with, or None
    where no attention campaign is committed (then no attention section prints)."""
    from simulator.calibration import fit_production_attention as FP

    c = _campaign()
    return None if c is None else (FP, c[2], FMT)


def now_err(FP, hw, rows):
    """Signed % error (predicted / measured - 1) of the current model with the committed fitted file on `rows`."""
    ops = FP.build_ops(rows, hw.units, FP._smem(hw))
    return (FP.predict_us(ops, hw, hw.efficiency, len(rows)) / rows["median_us"] - 1.0) * 100.0


def family_campaign(FP, hw, load, latest, first_look):
    """(rows, the newest campaign file, the current model's evaluation, the first-look rows) of an attention family
    measured in its own campaign (load / latest / first_look: its FP readers), or None while it is not measured."""
    rows = load(FP.DATA_DIR)
    if not len(rows):
        return None
    f, _ = latest(FP.DATA_DIR)
    return rows, f, FP.evaluate(rows, hw, hw.efficiency), first_look(rows, FP.DATA_DIR)


def first_look_line(head: str, e) -> None:
    """Print `head` and the pooled first-look errors `e` (signed %): |error| median / p90 and the signed median."""
    import numpy as np

    print(f"{head}: median |error| {np.median(e.abs()):.1f} %, p90 {np.percentile(e.abs(), 90):.1f} %, median signed "
          f"{np.median(e):+.1f} %")


#: how every attention table prints
FMT = {"float_format": lambda v: f"{v:.1f}", "index": False}


def campaign() -> None:
    """Production attention kernel families (simulator/kernels, fit_production_attention.py) on their H100 campaign: held-out
    |error| per family and regime with the committed fitted file, then the fresh shapes measured after it; the family
    sections (mla, flashinfer, fa3, xqa, triton) follow, then first_look()."""
    from simulator.calibration import fit_production_attention as FP

    if _campaign() is None:
        return
    f, df, hw = _campaign()
    ev = FP.evaluate(df, hw, hw.efficiency)
    print(f"\n== {hw.name}: production attention kernels ({f.name}: {len(df)} timed shapes, CUDA-graph timing). Fit on "
          "the middle regime only (context 1024-16384, batch <= 64, page 16, q 4 for verification, Llama-3.1-8B / 70B "
          "and MLA heads); everything else is held out (Qwen 28/4 heads, pages 1 / 64, q 8, fp8 Triton rows, short, "
          "long, large batch). Goal: median <= 10 %, p90 <= 25 % per regime")
    t = FP.accuracy(ev)
    t.insert(5, "rows", [LOOKED_AT.get(f, "held-out") for f in t["family"]])
    fmt = FMT
    print("rows: held-out = never fitted and not looked at before the family's rules were set; looked-at = never fitted, "
          "but the family's rules were revised after these rows' errors had been seen (" +
          "; ".join(f"{k}: {LOOKED_AT_WHY[k]}" for k in sorted(LOOKED_AT)) + "): the fresh shapes below are the test")
    print(t.to_string(**fmt))
    pooled = FP.accuracy(ev, by=("family",))
    print("pooled held-out / looked-at per family:")
    print(pooled.to_string(**fmt))
    print(f"regimes met: {int((t['goal'] == 'met').sum())} of {len(t)}")
    for fam, x in ev[ev["part"] == "held-out"].groupby("family"):
        _board(x, "err_pct", "looked-at" if fam in LOOKED_AT else "held out", f"campaign, {len(df)} shapes", t)
    for fam, ctx in sorted({(r.family, r.ctx_regime) for r in t.itertuples() if r.goal == "MISSED"}):
        why = PRODUCTION_DIAGNOSIS.get((fam, ctx))
        if why:
            print(f"  missed: {fam} {ctx}: {why}")
    _fresh(FP, hw, fmt)


def first_look() -> None:
    """After the family sections: the first look (FlashInfer decode priced from its source before any measurement),
    torch SDPA's check and the table of families and what was measured."""
    import pandas as pd

    from simulator.calibration import fit_production_attention as FP
    from simulator.kernels.families import family_table

    if _campaign() is None:
        return
    f, df, hw = _campaign()
    fmt = FMT
    fl = FP.first_look_errors(df, FP.DATA_DIR)
    if len(fl):
        e = fl["first_look_err_pct"].abs()
        print(f"\nFIRST LOOK: FlashInfer decode priced from its source alone before any measurement "
              f"({FP.FIRST_LOOK_CSV}: terms borrowed from the attn_fa2 fit), {len(fl)} shapes: median |error| "
              f"{np.median(e):.1f} %, p90 {np.percentile(e, 90):.1f} %, median signed {np.median(fl['first_look_err_pct']):+.1f} %")
        tf = FP.accuracy(fl, by=("family", "kv", "ctx_regime", "batch_regime"), col="first_look_err_pct", part=None)
        print(tf.to_string(**fmt))
        _board(fl, "first_look_err_pct", "first look", "campaign, priced from source before measuring", tf)
    sdpa = sorted(DF.glob(FP.DATA_DIR, "production_attention_sdpa_nvidia*.csv"))
    if sdpa:
        _sdpa_check(sdpa[-1], hw)
    tab = family_table()
    rows = [{"family": k, "measured": str(v.get("measured", ""))[:60], "kernel": v["kernel"][:70]} for k, v in tab.items()]
    print("\nfamilies and what was measured (simulator/kernels/data/attention_families.yaml):")
    print(pd.DataFrame(rows).to_string(index=False))


def _sdpa_check(path, hw) -> None:
    """PyTorch SDPA's cuDNN and FlashAttention-2 decode kernels at the per-sequence corner (context 16-256, batch
    64-1024; measure_production_attention.py part sdpa_short), priced by their existing families (decode_attention.py,
    terms of the regimes fit): never fitted on these rows."""
    import numpy as np
    import pandas as pd

    from simulator.calibration import fit_regimes as FR
    from simulator.ops import OpBuilder

    d = pd.read_csv(path)
    d = d[np.isfinite(pd.to_numeric(d["median_us"], errors="coerce"))].reset_index(drop=True)
    b = OpBuilder(len(d))
    for k, fam in (("cudnn", "cudnn"), ("flash", "fa2")):
        FR.attention_ops(b, d.assign(dtype="bf16"), (d["kernel"] == k).to_numpy(), fam, hw.units)
    pred = FR.predict_us(b.build(), hw, hw.efficiency)
    e = (pred / d["median_us"].to_numpy(float) - 1) * 100
    parts = []
    for k in ("cudnn", "flash"):
        m = (d["kernel"] == k).to_numpy()
        parts.append(f"{k}: median |error| {np.median(np.abs(e[m])):.1f} %, max {np.abs(e[m]).max():.1f} % ({m.sum()} rows)")
    print(f"check, never fitted: SDPA decode at context 16-256 x batch 64-1024 ({path.name}) by the existing cudnn / fa2 "
          f"families: " + "; ".join(parts))
