"""vLLM's Triton unified attention (triton_vllm, run from a copy of its source) and SGLang's Triton decode kernel: the
first look, held-out rows and the Triton decode blind grids 1-6, each committed prediction against its measurement in
hwmodels/calibration/data/production_attention/ (fit_production_attention's triton readers;
triton_decode_blind4_shipped_refit_prices.csv freezes grid 4's refit prices).
"""
from __future__ import annotations

import numpy as np

from hwmodels import datafiles as DF
from simulator.calibration.scoreboard import BOARD
from simulator.calibration.scoreboard import add_pooled as _board
from simulator.calibration.scoreboard import models_table as _models_table

from . import sgl_triton_grid4, sgl_triton_grid6, triton_grid7, triton_grid8
from .attention import context, family_campaign, first_look_line, now_err


def triton() -> None:
    """Print the vLLM Triton decode sections (nothing where no attention campaign is committed)."""
    c = context()
    if c is None:
        return
    FP, hw, fmt = c
    _triton_vllm(FP, hw, fmt)


def vllm_blind_lines(b, t, labels, grid: int, what: dict | None = None, shipped: str | None = None) -> None:
    """Per model label of a triton_vllm blind grid (rows `b` with <label>_err_pct, regime table `t` with <label>_goal):
    its board row (`now` = the current model, looked-at; `what` names other labels' rows) and one line of pooled |error|
    median / p90, signed median and regimes met; `shipped`: the label that is the family's STANDING."""
    for lab in labels:
        e = b[f"{lab}_err_pct"]
        met = int((t[lab + "_goal"] == "met").sum())
        name = {"now": "the current model", **(what or {})}.get(lab, f"{lab} model's committed prices")
        BOARD.add("triton_vllm", "looked-at" if lab == "now" else "blind", f"Triton decode blind grid {grid}, {name}", e,
                  met, len(t), standing=lab == shipped)
        print(f"triton_vllm blind {grid}, {lab}: median |error| {np.median(e.abs()):.1f} %, p90 "
              f"{np.percentile(e.abs(), 90):.1f} %, signed {np.median(e):+.1f} %; regimes met {met} of {len(t)}")


def _triton_vllm(FP, hw, fmt) -> None:
    """The triton_vllm family (vLLM's Triton unified attention, run from a copy of its source): the first look priced
    before the measurement ((a) the model at f5528fc, (b) the source's structure with rates borrowed from triton_sgl),
    the fit rows and the error after the fit on the rest, per regime; signed = predicted / measured - 1."""
    import numpy as np

    r = family_campaign(FP, hw, FP.load_triton_vllm, FP.latest_triton_vllm, FP.triton_vllm_first_look)
    if r is None:
        return
    tv, f, ev, fl = r
    print(f"\n== {hw.name}: triton_vllm family (vLLM's Triton unified attention, vllm/attention/ops/"
          f"triton_unified_attention.py @ 001ceb3e run from a copy of its source, Triton 3.6.0; {f.name}: {len(tv)} "
          "shapes, heads 32/8, 8/1, 28/4, head dim 128, page 16, q 1 / 2 / 4, bf16 / fp8 K/V; CUDA-graph timing). Fit: "
          "attn_triton_vllm (+ reduce_segments) on bf16, attn_triton_vllm_fp8kv on fp8 rows of Llama-3.1-8B decode, "
          "context 1024-16384, batch <= 64 (chosen before the measurement); everything else not fitted")
    by = ("family", "phase", "kv", "ctx_regime", "batch_regime")
    if len(fl):
        commit = str(fl["model_commit"].iloc[0])[:10]
        for col, what, lab in (("first_main_err_pct", "(a) the model at f5528fc (3D iff B <= 128 // Hkv, every program "
                                "working, one kind, triton_sgl's terms)", "(a) model at f5528fc"),
                               ("first_struct_err_pct", "(b) the structure read from the source (3D / 2D rule, idle "
                                "programs, search and metadata loads, fp8 kind), triton_sgl's terms",
                                "(b) source structure, borrowed rates")):
            first_look_line(f"FIRST LOOK, blind ({FP.TV_FIRST_LOOK_CSV}, priced at {commit} before the measurement), "
                            f"{what}", fl[col])
            t1 = FP.accuracy(fl, by=by, col=col, part=None)
            _board(fl.assign(family="triton_vllm"), col, "first look", lab, t1)
        ta = FP.accuracy(fl, by=by, col="first_main_err_pct", part=None)
        tb = FP.accuracy(fl, by=by, col="first_struct_err_pct", part=None)
        t = ta[list(by) + ["n"]].copy()
        for lab, x in (("a", ta), ("b", tb)):
            t[f"{lab}_median"], t[f"{lab}_p90"], t[f"{lab}_signed"] = x["median"], x["p90"], x["signed"]
        print("first look per regime ((a) / (b): |error| median, p90, signed median):")
        print(t.to_string(**fmt))
    fit = ev[ev["part"] == "fit"]
    print(f"fit rows: {len(fit)}, median |error| {np.median(fit['err_pct'].abs()):.1f} %, max "
          f"{fit['err_pct'].abs().max():.1f} %")
    t = FP.accuracy(ev, by=by)
    print("after the fit (committed fitted file), per regime: LOOKED-AT rows (never fitted; three rules were revised "
          "after errors on them were seen: the tensor-core work of the padded BLOCK_M x TILE tiles after the first "
          f"fit ({TV_FIRST_FIT}), the iteration as a lone chain plus the SM's shared issue (roofline CHAIN_ISSUE) "
          f"after the second ({TV_SECOND_FIT}), and after the third ({TV_THIRD_FIT}) the occupancy of the binary "
          "compiled for the GQA group, the prologue's metadata loads and idle programs as L2 hits, and the chain's "
          "queueing share of the HBM time (chain_queue); later, with these rows' short-context errors and the launch "
          "profiles' per-kernel times known, a program tail per wave (cta_fixed_us: the last tile's work and the "
          "epilogue, one fitted value for both dtypes) and reduce_segments' segment slots in one round of loads, "
          "tested on blind grid 5; then, with blind grid 5's errors known, the family's rows priced with the gap "
          "between the harness's back-to-back nodes measured from the launch profiles (TV_HARNESS_GAP_US) in place "
          "of the device's launch_graph, refitted, tested on blind grid 6):")
    print(t.to_string(**fmt))
    e = ev[ev["part"] == "held-out"]
    print(f"triton_vllm not fitted: {len(e)} shapes, median |error| {np.median(e['err_pct'].abs()):.1f} %, p90 "
          f"{np.percentile(e['err_pct'].abs(), 90):.1f} %, signed {np.median(e['err_pct']):+.1f} %; regimes met "
          f"{int((t['goal'] == 'met').sum())} of {len(t)}")
    _board(e, "err_pct", "looked-at", f"triton_vllm grid, {len(e)} shapes not fitted", t)
    if (t["goal"] == "MISSED").any():
        print(f"  missed: triton_vllm: {TV_DIAGNOSIS}")
    _triton_vllm_blind(FP, fmt)
    _triton_decode_blind2(FP, fmt)
    _triton_decode_blind3(FP, hw, fmt)
    _triton_decode_blind4(FP, hw, fmt)
    _triton_decode_blind5(FP, hw, fmt)
    _triton_decode_blind6(FP, hw, fmt)
    sgl_triton_grid4.section(FP.DATA_DIR, fmt)
    sgl_triton_grid6.section(FP.DATA_DIR, fmt)
    triton_grid7.section(FP.DATA_DIR, fmt)
    triton_grid8.section(FP.DATA_DIR, fmt)


TD_BLIND4_REFIT_PRICES = "triton_decode_blind4_shipped_refit_prices.csv"


def _triton_decode_blind4(FP, hw, fmt) -> None:
    """The fourth blind grid of vLLM's Triton unified attention and the two fit sets measured in the same call
    (FP.load_triton_decode_blind4; lab/kernels/triton_decode_blind4.py), all chosen and committed before it. Three
    models priced on the blind rows: main = main's model (committed prices), new = the lone iteration of the G 8 2D bf16
    binary (VLLM_ITER_BY_G from the committed lone rows; committed prices), now = the shipped model: the refit whose
    rule was committed before the measurement (the fp8 fit set and the G 4 lone rows join the family's fit rows,
    VLLM_ITER_BY_G := FP.lone_iter_ratios()), priced after it. Regime goal: median <= 10 %, p90 <= 25 %."""
    from pathlib import Path

    import numpy as np
    import pandas as pd

    b = FP.load_triton_decode_blind4(FP.DATA_DIR)
    if not len(b):
        return
    by = ("phase", "kv", "ctx_regime", "batch_regime")

    b = b.rename(columns={"base_err_pct": "main_err_pct"})
    b["now_err_pct"] = now_err(FP, hw, b)
    keys = [k for k in FP.SHAPE_KEYS if k in b.columns]
    frozen = DF.resolve(FP.DATA_DIR / TD_BLIND4_REFIT_PRICES)
    if frozen.exists():
        r = pd.read_csv(frozen, comment="#")
        attrs = dict(b.attrs)
        b = b.merge(r[keys + ["refit_us"]], on=keys, how="left")
        b.attrs.update(attrs)
        b["refit_err_pct"] = (b["refit_us"] / b["median_us"] - 1.0) * 100.0
    else:
        b["refit_err_pct"] = b["now_err_pct"]
    labels = ["main", "new", "refit", "now"]
    print(f"\nBLIND 4 ({Path(b.attrs['file']).name}: {len(b)} triton_vllm shapes in none of the committed rows: fp8 "
          "one-tile decode at batch >= 256, lone tiles of the G 8 binaries, decode at context >= 80K batch <= 3, "
          "verification at context 2800-9000 batch 10-56, controls; heads 32/8, 8/1, 28/4, 64/8), prices committed "
          f"before the measurement ({FP.TD_BLIND4_PRED_CSV}): main = main's model ({str(b['base_commit'].iloc[0])[:7]}), "
          f"new = the model at {str(b['model_commit'].iloc[0])[:7]} (the G 8 2D bf16 binary's lone iteration, "
          "VLLM_ITER_BY_G), refit = the shipped refit (its rule committed before the measurement: the fp8 fit set and "
          "the G 4 lone rows measured in the same call join the fit rows, VLLM_ITER_BY_G = lone_iter_ratios(); "
          f"priced after, from fit rows only; its prices frozen in {TD_BLIND4_REFIT_PRICES}), now = the current model "
          "(looked-at where it differs from refit: a later change was made with these rows' errors known)")
    t = _models_table(b, by, labels, labels)
    print(t.to_string(**fmt))
    moved = bool((b["now_err_pct"] - b["refit_err_pct"]).abs().max() > 0.05)
    vllm_blind_lines(b, t, [lab for lab in labels if lab != "now" or moved], 4,
                     {"refit": "shipped refit's frozen prices (rule committed before)"})
    f = FP.load_triton_decode_blind4(FP.DATA_DIR, role="fit_fp8")
    if len(f):
        f = f.rename(columns={"base_err_pct": "main_err_pct"})
        f["now_err_pct"] = now_err(FP, hw, f)
        print(f"fp8 fit set ({len(f)} Llama-3.1-8B fp8 rows, fit rows of the shipped model), per regime (main = "
              "main's model, which did not fit them):")
        print(_models_table(f, by, ["main", "now"], []).round(1).to_string(**fmt))
    lo = FP.load_triton_decode_blind4(FP.DATA_DIR, role="fit_lone")
    if len(lo):
        lo["G"] = np.floor(lo["heads"] / lo["kv_heads"]).astype(int)
        lo["kernel"] = np.where(lo["q_rows"] > 1, "2D", "3D")
        lo = lo.rename(columns={"base_err_pct": "main_err_pct"})
        lo["now_err_pct"] = now_err(FP, hw, lo)
        piv = lo.pivot_table(index=["kernel", "dtype", "context"], columns="G", values="median_us")
        print("lone programs (batch 1, fit rows: G 4's join the fit, the others give VLLM_ITER_BY_G), measured us by GQA "
              f"group G; lone_iter_ratios: {FP.lone_iter_ratios()}")
        print(piv.round(1).to_string())
        g = lo.groupby(["kernel", "dtype", "G"])[["main_err_pct", "now_err_pct"]].median().round(1)
        print("median signed error of the lone rows, main's model / shipped:")
        print(g.to_string())


def _triton_decode_blind5(FP, hw, fmt) -> None:
    """The fifth blind grid of vLLM's Triton unified attention (FP.load_triton_decode_blind5; lab/kernels/
    triton_decode_blind5.py): short contexts (16-256) at batch 1-480, bf16 / fp8, decode and verification, and
    middle-context controls, none in any committed row. Three models' prices committed before the measurement: main =
    main's model, v1 = a program tail (the last tile's work, the epilogue's stores) per wave fitted per K/V dtype and
    reduce_segments' slots loaded in one round, new = one tail for both dtypes refitted jointly; now = the current model
    (looked-at where it differs from new). Regime goal: median <= 10 %, p90 <= 25 %."""
    from pathlib import Path

    b = FP.load_triton_decode_blind5(FP.DATA_DIR)
    if not len(b):
        return
    by = ("phase", "kv", "ctx_regime", "batch_regime")
    b["now_err_pct"] = now_err(FP, hw, b)
    b = b.rename(columns={"base_err_pct": "main_err_pct"})
    labels = ["main", "v1", "new"]
    moved = bool((b["now_err_pct"] - b["new_err_pct"]).abs().max() > 0.05)
    print(f"\nBLIND 5 ({Path(b.attrs['file']).name}: {len(b)} triton_vllm shapes in none of the committed rows: "
          "short contexts 16-256 at batch 1-480, bf16 and fp8 K/V, q 1-4, heads 32/8, 28/4, 64/8, 8/1, and 10 controls "
          f"at context 1100-9800), prices committed before the measurement ({FP.TD_BLIND5_PRED_CSV}): main = main's "
          f"model ({str(b['base_commit'].iloc[0])[:7]}), v1 = {str(b['v1_commit'].iloc[0])[:7] if 'v1_commit' in b else 'v1'}"
          " (a program tail per wave, fitted per K/V dtype; reduce_segments' slots in one round), new = the model at "
          f"{str(b['model_commit'].iloc[0])[:7]} (one tail for both dtypes, refitted jointly)"
          + (", now = the current model (looked-at)" if moved else ""))
    cols = labels + (["now"] if moved else [])
    t = _models_table(b, by, cols, cols)
    print(t.round(1).to_string(**fmt))
    vllm_blind_lines(b, t, cols, 5)


def _triton_decode_blind6(FP, hw, fmt) -> None:
    """The sixth blind grid of vLLM's Triton unified attention (FP.load_triton_decode_blind6; lab/kernels/
    triton_decode_blind6.py): verification (q 2-4) of 1-8 sequences at contexts 12-252, 2D one-tile decode at batch
    160-600, controls; none in any committed row. Three models' prices committed before the measurement: main = main's
    model, new = the family's rows priced with the harness's measured node gap (TV_HARNESS_GAP_US) and refitted, v1 =
    that gap and the program tail once per launch; now = the current model (looked-at where it differs from new). Then
    the K/V extent diagnosis (committed shapes in the harness's pool and in a 24 GiB one). Regime goal: median <= 10 %,
    p90 <= 25 %."""
    from pathlib import Path

    b = FP.load_triton_decode_blind6(FP.DATA_DIR)
    if not len(b):
        return
    b["now_err_pct"] = now_err(FP, hw, b)
    b = b.rename(columns={"base_err_pct": "main_err_pct"})
    moved = bool((b["now_err_pct"] - b["new_err_pct"]).abs().max() > 0.05)
    print(f"\nBLIND 6 ({Path(b.attrs['file']).name}: {len(b)} triton_vllm shapes in none of the committed rows: "
          "verification q 2-4 of 1-8 sequences at context 12-252, 2D one-tile decode at batch 160-600, 11 controls; "
          f"prices committed before the measurement ({FP.TD_BLIND6_PRED_CSV}): main = main's model "
          f"({str(b['base_commit'].iloc[0])[:7]}), v1 = {str(b['v1_commit'].iloc[0])[:7]} (the harness's node gap, "
          f"the program tail once per launch), new = {str(b['model_commit'].iloc[0])[:7]} (the harness's node gap, the "
          "tail per wave)" + (", now = the current model (looked-at)" if moved else ""))
    cols = ["main", "v1", "new"] + (["now"] if moved else [])
    t = _models_table(b, ("grid6_regime",), cols, cols)
    print(t.round(1).to_string(**fmt))
    vllm_blind_lines(b, t, cols, 6)
    d = FP.load_triton_decode_blind6(FP.DATA_DIR, role="diagnosis")
    if len(d):
        k = ["model", "dtype", "batch", "q_rows", "context"]
        p = d.pivot_table(index=k, columns="layout", values="median_us").reset_index()
        print("K/V extent diagnosis (committed shapes timed again; us): the harness's pool of the batch's pages (perm), "
              "pages drawn from a 24 GiB pool (pool24g), in order (inorder)")
        print(p.round(2).to_string(**fmt))


def _triton_vllm_blind(FP, fmt) -> None:
    """The triton_vllm blind grid: shapes in none of the first grid's rows, priced by the model before (base: one
    iteration time per kind) and after (new: the lone program's chain plus the SM's shared issue, roofline
    CHAIN_ISSUE) the revision, both prices committed before the measurement. Regime goal: median <= 10 %, p90 <= 25 %."""
    from pathlib import Path

    import numpy as np

    b = FP.load_triton_vllm_blind(FP.DATA_DIR)
    if not len(b):
        return
    print(f"BLIND ({Path(b.attrs['file']).name}: {len(b)} shapes in none of the first grid's rows; contexts 40-200, "
          "600-6000, 20K-100K; batches 1-3, 10-40, 150-700; heads 32/8, 8/1, 28/4, 64/8; bf16 and fp8 K/V; q 1, 2, 3), "
          f"prices committed before the measurement ({FP.TV_BLIND_PRED_CSV}): base = the model at "
          f"{str(b['base_commit'].iloc[0])[:7]} (one iteration time per kind), new = the model at "
          f"{str(b['model_commit'].iloc[0])[:7]} (lone chain + the SM's shared issue, CHAIN_ISSUE; the model then)")
    t = _models_table(b, ("phase", "kv", "ctx_regime", "batch_regime"), ("base", "new"), ("base", "new"))
    print(t.to_string(**fmt))
    for c, lab in (("base_err_pct", "base"), ("new_err_pct", "new")):
        e = b[c]
        met = int((t[lab + "_goal"] == "met").sum())
        BOARD.add("triton_vllm", "blind", f"triton_vllm blind grid, {lab} model's committed prices", e, met, len(t))
        print(f"triton_vllm blind, {lab}: median |error| {np.median(e.abs()):.1f} %, p90 "
              f"{np.percentile(e.abs(), 90):.1f} %, signed {np.median(e):+.1f} %; regimes met {met} of {len(t)}")
    if (t["new_goal"] == "MISSED").any():
        print(f"  missed: triton_vllm (blind): {TV_BLIND_DIAGNOSIS}")


#: the first fit (tensor-core work charged as 2 B q Hq T 2d flops), before the looked-at revision: its error on the
#: rows not fitted (the verification rows came out 1.2-2.4x too slow: the fitted compute rate went to its bound)
TV_FIRST_FIT = ("first fit: 145 shapes, median |error| 17.8 %, p90 62.8 %, 1 of 21 regimes met; verification middle / short "
                "at batch >= 256 +142 % / +117 %")
#: the second fit (one iteration time per kind whatever the programs per SM), before the CHAIN_ISSUE revision
TV_SECOND_FIT = ("second fit: 145 shapes, median |error| 12.1 %, p90 32.3 %, 4 of 21 regimes met; long single-program "
                 "chains and one-KV-head grids +15..+60 %")
#: the third fit (lone chain plus the SM's shared issue, every prologue load at the DRAM latency, one occupancy per
#: kind), before the revision of the occupancy, the L2-hit prologue and the chain's queueing share
TV_THIRD_FIT = ("third fit: 145 shapes, median |error| 7.3 %, p90 34.0 %, 13 of 21 regimes met; short contexts +10..+35 %, "
                "bf16 verification at batch <= 16 +11..+33 %")
#: what the measurement shows where regimes miss (printed only while they miss)
TV_DIAGNOSIS = ("a program's iteration is its lone chain plus one issue share per program co-resident on its SM plus "
                "the fitted share of the launch's HBM time its loads queue behind (roofline CHAIN_ISSUE, chain_queue); "
                "every program pays its tail once per wave (the last tile's work and the epilogue, cta_fixed_us, one "
                "value for both dtypes), reduce_segments one round of segment loads; the lone chains pinned by the "
                "lone fit rows, the lone iteration per compiled GQA binary measured (VLLM_ITER_BY_G); the rows priced "
                "with the harness's measured node gap (TV_HARNESS_GAP_US); what misses: lone verification programs "
                "of 2-8 tiles (batch <= 16, context <= 256) +18..+20 %: their tiles take 1.05-1.10 us (bf16) where "
                "the lone long programs the chain is fitted on take 1.34-1.47 us, and the same shapes with their pages "
                "drawn from a 24 GiB pool run as fast (blind grid 6's diagnosis: not the pool's extent); bf16 "
                "one-tile decode at batch >= 256 +12 %: the tail charged per wave of 4-5 co-resident programs; fp8 "
                "lone long decode +9 %; verification at context 1K-16K batch <= 16, p90 29 %")
#: what the blind grid shows where regimes miss (printed only while they miss)
TV_BLIND_DIAGNOSIS = ("short contexts (40-200) are priced +14 % (median signed): one-tile programs whose "
                      "prologue loads hit in L2; verification at q 3 of 64/8 heads (two q blocks of one sequence, the "
                      "second re-reading its K / V from L2) +28..+72 % at batch >= 40: the shared issue is charged "
                      "for both q blocks' tiles while measured 1.2 us per wave-iteration is below a lone chain; few "
                      "programs of one KV head (8/1, batch <= 3) at context 600-3000 +28..+41 %")

#: what the second Triton decode blind grid shows where regimes miss (printed only while they miss)
TD_BLIND2_DIAGNOSIS = (
    "triton_vllm: lone verification programs at context 90000 (batch 1-5) -17..-27 %: one program's chain walks its "
    "32-key tiles at 1.3-1.5 us each at T 90000 against 1.12 us at T 4096 (measured), not in the model (a K/V pool of "
    "gigabytes of randomly permuted pages: address translation is the suspect, not measured); fp8 decode at context "
    "<= 256 -15..-21 %: the fp8 kind's fitted constant (0.9 us) is below the bf16 kind's (2.7 us) that the same 3D + "
    "reduce launches pay; bf16 one-tile programs at batch <= 5 +11 % and verification at context 72 +35 % (2-5 "
    "sequences, q 3-4: the constant again); fp8 verification at batch 384-768 (q 3-4, two q blocks per sequence of "
    "64/8 and 8/1 heads) -15..-22 %: memory-bound launches whose second q block re-reads its K / V from L2, traffic "
    "the model does not count; sgl_triton: bf16 long contexts at batch 32-59 +13 % (as main's model)")


def _base_new_grid(b, grid: int, diagnosis: str, fmt, shipped: dict | None = None) -> None:
    """Print the per-family / phase / regime table of a Triton decode blind grid's base and new committed
    prices (rows `b`), one pooled line per family and price, their board rows, and the diagnosis while a regime of the
    new model misses; `shipped`: family -> the label of the shipped model where this is its newest blind grid."""
    import numpy as np

    t = _models_table(b, ("family", "phase", "kv", "ctx_regime", "batch_regime"), ("base", "new"), ("base", "new"))
    print(t.to_string(**fmt))
    for fam, g in b.groupby("family"):
        tt = t[t["family"] == fam]
        for c, lab in (("base_err_pct", "base"), ("new_err_pct", "new")):
            e = g[c]
            met = int((tt[lab + "_goal"] == "met").sum())
            BOARD.add(str(fam), "blind", f"Triton decode blind grid {grid}, {lab} model's committed prices", e, met,
                      len(tt), standing=(shipped or {}).get(fam) == lab)
            print(f"{fam} blind {grid}, {lab}: median |error| {np.median(e.abs()):.1f} %, p90 "
                  f"{np.percentile(e.abs(), 90):.1f} %, signed {np.median(e):+.1f} %; regimes met {met} of {len(tt)}")
    if (t["new_goal"] == "MISSED").any():
        print(f"  missed (blind {grid}): {diagnosis}")


def _triton_decode_blind2(FP, fmt) -> None:
    """The second blind grid of the two Triton decode families (FP.load_triton_decode_blind2: triton_vllm q 1-4 and
    sgl_triton q 1, shapes in none of the committed rows), priced before the measurement by the model at the branch
    point (base) and by the revised model (new: occupancy per compiled GQA group, L2-hit prologue and idle programs,
    the chain's queueing share of the HBM time; sgl_triton priced as vLLM's Triton kernel), both prices committed.
    Regime goal: median <= 10 %, p90 <= 25 %."""
    from pathlib import Path


    b = FP.load_triton_decode_blind2(FP.DATA_DIR)
    if not len(b):
        return
    print(f"\nBLIND 2 ({Path(b.attrs['file']).name}: {len(b)} shapes in none of the committed rows of either family: "
          "triton_vllm (vLLM's Triton unified attention @ 001ceb3e) at q 1 / 2 / 3 / 4 and sgl_triton (SGLang's Triton "
          "decode, sglang 0.5.6) at q 1; contexts 56-90000, batches 1-768, heads 32/8, 8/1, 28/4, 64/8, bf16 and fp8 "
          f"K/V), prices committed before the measurement ({FP.TD_BLIND2_PRED_CSV}): base = the model at "
          f"{str(b['base_commit'].iloc[0])[:7]} (the branch point), new = the model at "
          f"{str(b['model_commit'].iloc[0])[:7]} (the shipped model)")
    _base_new_grid(b, 2, TD_BLIND2_DIAGNOSIS, fmt)


#: what the third Triton decode blind grid shows where regimes miss under the committed new model (printed only while
#: they miss)
TD_BLIND3_DIAGNOSIS = (
    "triton_vllm: lone verification programs at context 24K-110K (batch 1-5) -15 % (as the diagnosis rows: the lone "
    "2D program's 32-key tile takes 1.29-1.36 us at every context whatever the page layout; the decode fit rows had "
    "put part of it into the queueing share; the shipped refit takes the diagnosis rows as fit rows); decode at "
    "context >= 80K, batch <= 3 +10..+23 % (the 3D kernel's lone segments); fp8 decode at context <= 256, batch 24-40 "
    "-14 % median; verification at context 2800-9000, batch 10-56 (Qwen2.5-7B fp8 q 2, Llama-3.1-70B TP8 bf16 q 3) "
    "-22..-24 %; sgl_triton (model unchanged): bf16 decode of Qwen2.5-7B heads at batch 4 x context 110000 +37 % and "
    "batch 24 x context 7000 +14 %")


def _triton_decode_blind3(FP, hw, fmt) -> None:
    """The third blind grid of the two Triton decode families and the K/V page-layout diagnosis measured with it
    (FP.load_triton_decode_blind3; lab/kernels/triton_decode_blind3.py). The diagnosis rows (lone vLLM verification
    programs with the block table permuted, in order, permuted inside 2 MiB windows, or drawn from a 24 GiB pool) are
    fit rows, not blind: the shipped fit takes the Llama-3.1-8B bf16 ones (FP.load_triton_vllm_lone_fit). The grid was
    priced before the measurement by main's model (base) and the revised model (new: the per-launch constant on
    reduce_segments, shared by bf16 and fp8 3D launches, none on the 2D kernel; a second q block's K / V re-read as L2
    traffic), both prices committed; the shipped model (new + the lone fit rows, refitted after the measurement) is
    LOOKED-AT on these rows. Regime goal: median <= 10 %, p90 <= 25 %."""
    from pathlib import Path

    import numpy as np

    b = FP.load_triton_decode_blind3(FP.DATA_DIR)
    if not len(b):
        return
    d = FP.load_triton_decode_blind3(FP.DATA_DIR, role="diagnosis")
    if len(d):
        d = d.assign(us_per_tile=d["median_us"] / np.ceil(d["context"] / 32.0))
        piv = d.pivot_table(index=["model", "dtype", "batch", "context"], columns="layout", values="us_per_tile")
        d["now_err_pct"] = now_err(FP, hw, d)
        piv["spread_pct"] = (piv.max(axis=1) / piv.min(axis=1) - 1.0) * 100.0
        piv["shipped_err_pct"] = d.groupby(["model", "dtype", "batch", "context"])["now_err_pct"].median()
        print(f"\nPAGE-LAYOUT DIAGNOSIS (fit rows, not blind; {Path(b.attrs['file']).name}, row_role diagnosis): lone "
              "vLLM verification programs (q 2, the 2D kernel), us per 32-key tile by block-table layout (perm = the "
              "harness's random pages over the batch's pool, inorder, perm2m = permuted inside 2 MiB windows, "
              "pool24g = drawn from a 24 GiB pool); spread = largest / smallest - 1; shipped_err = the shipped "
              "model's median error (Llama-3.1-8B bf16 rows are its fit rows):")
        print(piv.round(3).to_string())
    print(f"\nBLIND 3 ({Path(b.attrs['file']).name}: {len(b)} shapes in none of the committed rows of either family: "
          "triton_vllm at q 1-4 (lone verification at context 24K-110K, fp8 decode at context <= 256, verification "
          "of two q blocks per sequence at batch 320-704, controls) and sgl_triton at q 1; heads 32/8, 8/1, 28/4, "
          f"64/8, bf16 and fp8 K/V), prices committed before the measurement ({FP.TD_BLIND3_PRED_CSV}): base = "
          f"main's model ({str(b['base_commit'].iloc[0])[:7]}), new = the model at {str(b['model_commit'].iloc[0])[:7]} "
          "(the per-launch constant on reduce_segments, shared by dtype; the second q block's re-read as L2 traffic)")
    _base_new_grid(b, 3, TD_BLIND3_DIAGNOSIS, fmt)
    v = b[b["family"] == "triton_vllm"].reset_index(drop=True)
    v["now_err_pct"] = now_err(FP, hw, v)
    tn = FP.accuracy(v, by=("family", "phase", "kv", "ctx_regime", "batch_regime"), col="now_err_pct", part=None)
    print("triton_vllm blind grid 3 under the shipped model (new + the lone-program fit rows, refitted AFTER this "
          "measurement: LOOKED-AT):")
    print(tn.to_string(**fmt))
    met = int((tn["goal"] == "met").sum())
    e = v["now_err_pct"]
    BOARD.add("triton_vllm", "looked-at", "Triton decode blind grid 3, shipped model (refitted after it)", e, met, len(tn))
    print(f"triton_vllm blind 3, shipped (looked-at): median |error| {np.median(e.abs()):.1f} %, p90 "
          f"{np.percentile(e.abs(), 90):.1f} %, signed {np.median(e):+.1f} %; regimes met {met} of {len(tn)}")
