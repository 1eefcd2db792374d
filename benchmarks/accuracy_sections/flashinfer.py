"""FlashInfer decode / tensor-core / verification kernels: the three check grids (fresh_fi*), the PDL probe, the
fi_decode blind grids 1-8 (with the per-CTA probe, fi_cta_probe_*_summary.csv) and the fi_tc blind grid, each
committed prediction (production_attention_fi*_predictions*.csv, priced before measuring) against its measurement in
hwmodels/calibration/data/production_attention/.
"""
from __future__ import annotations

import numpy as np

from hwmodels import datafiles as DF
from simulator.calibration.scoreboard import BOARD
from simulator.calibration.scoreboard import add_pooled as _board
from simulator.calibration.scoreboard import models_table as _models_table

from . import fi_tc_grid12, fi_tc_grid13, fi_tc_grid14
from .attention import context, now_err
from .mla import _blind_regimes


def flashinfer() -> None:
    """Print the FlashInfer sections in the report's order (nothing where no attention campaign is committed)."""
    c = context()
    if c is None:
        return
    FP, hw, fmt = c
    _fresh_fi(FP, fmt)
    _fresh_fi(FP, fmt, *FRESH_FI2)
    _fresh_fi3(FP, fmt)
    _fi_pdl_probe(FP)
    _fi_dec_blind(FP, hw, fmt)
    _fi_dec_blind(FP, hw, fmt, FI_DEC_BLIND2)
    _fi_dec_blind3(FP, hw, fmt)
    _fi_dec_blind4(FP, hw, fmt)
    _fi_dec_blind5(FP, hw, fmt)
    _fi_dec_blind6(FP, hw, fmt)
    _fi_cta_probe(FP, hw, fmt)
    _fi_dec_blind8(FP, hw, fmt)
    _fi_tc_blind(FP, hw, fmt)
    fi_tc_grid12.fi_tc_blind12(FP, hw, fmt)
    fi_tc_grid13.fi_tc_blind13(FP, hw, fmt)
    fi_tc_grid14.fi_tc_blind14(FP, hw, fmt)


#: the FlashInfer check grid (lab/kernels/measure_production_attention.py --grid fresh_fi): CUDA-core decode, tensor-core
#: decode and verification shapes in no earlier grid, priced BEFORE measuring by the model after the busiest-SM
#: crowding rule and by the model at 1081e97 (before it); both files committed before the device run
FRESH_FI_PRED = "production_attention_fresh_fi_predictions.csv"
FRESH_FI_BEFORE = "production_attention_fresh_fi_predictions_1081e97.csv"
FRESH_FI_GLOB = "production_attention_fresh_fi_nvidia*.csv"
FRESH_FI_TITLE = ("FLASHINFER CHECK SHAPES", "fi_decode / fi_tc / fi_verify at contexts 32-98304 and batches 1-384 in no "
                  "earlier grid")
#: the second FlashInfer check grid (--grid fresh_fi2): short-context tensor-core / verification shapes at large batch
#: and CUDA-core decode shapes at batch 1-7, priced BEFORE measuring by the model after the fp8 FA2 prefill tile chain
#: (per-warp fp8 fragment columns) and the CUDA-core decode's compounded latency / issue (roofline CHAIN_OVERLAP), and
#: by the model at a823ab8 (before them); both files committed before the device run
FRESH_FI2 = ("production_attention_fresh_fi2_predictions.csv", "production_attention_fresh_fi2_predictions_a823ab8.csv",
             "production_attention_fresh_fi2_nvidia*.csv",
             ("FLASHINFER CHECK SHAPES 2", "fi_decode at contexts 8-112 x batches 1-7 (+ page 64, batch 40 and middle "
              "controls), fi_tc / fi_verify at contexts 8-224 x batches 2-640 (+ middle controls), bf16 / fp8, in no "
              "earlier grid"))


#: what the second FlashInfer check grid shows where a regime misses (printed only while it misses)
FRESH_FI2_DIAGNOSIS = {
    ("fi_decode", "short (<=256)"): "T 8-112 at B 1-7: 14-44 % too slow (25 % median before), largest at one or two "
                                    "tiles (T 8: +25..44 %): the fixed part of a call (see the campaign's fi_decode "
                                    "short: programmatic dependent launch not modelled)",
    ("fi_tc", "short (<=256)"): "bf16 only (fp8 met): the per-wave CTA time at many waves, as on the campaign's rows",
    ("fi_tc", "middle"): "fp8 controls at B 20 (T 2048 / 8192) 11 % too fast, as before (11.2 %)",
    ("fi_verify", "short (<=256)"): "fp8 at B 2-5 (one 64-row Q tile, one 128-key tile per CTA, alone on its SM) "
                                    "21-38 % too slow (2-7 % before): the fp8 chain's 8 fragment columns priced at the "
                                    "column time fitted where 2 CTAs share each SM; bf16 at B 40-320 19-21 % too fast "
                                    "(as fi_tc bf16 short)",
}


def _fresh_fi(FP, fmt, pred=FRESH_FI_PRED, before=FRESH_FI_BEFORE, glob=FRESH_FI_GLOB, title=FRESH_FI_TITLE) -> None:
    """A FlashInfer check grid: per family, K/V dtype and regime, |error| of the committed predictions of both models."""
    import numpy as np

    from simulator.calibration.blind_grids import blind_errors

    FRESH_FI_PRED, FRESH_FI_BEFORE = pred, before
    m, name = blind_errors(FP, glob, FRESH_FI_PRED, FRESH_FI_BEFORE)
    if m is None:
        print(f"\n{title[0]}: not measured yet (" + FRESH_FI_PRED + " holds the predictions)")
        return
    print(f"\n{title[0]} ({title[1]}; BLIND: both predictions committed before measuring: new = the model at "
          f"{str(m['model_commit'].iloc[0])[:7]} ({FRESH_FI_PRED}), before = the model at "
          f"{str(m['before_commit'].iloc[0])[:7]} ({FRESH_FI_BEFORE}); measured {name}, {len(m)} of "
          f"{m.attrs['timed_of']} shapes timed)")
    t = _blind_regimes(m)
    print(t.to_string(**fmt))
    from hwmodels.spec import load_hardware

    hw = load_hardware("H100-SXM")
    m["err_now"] = now_err(FP, hw, m)
    for fam, x in m.groupby("family"):
        e, eb, en = x["err"].abs(), x["err_before"].abs(), x["err_now"].abs()
        print(f"  {fam}: {len(x)} shapes, median |error| {e.median():.1f} %, p90 {np.percentile(e, 90):.1f} % (before: "
              f"{eb.median():.1f} %, p90 {np.percentile(eb, 90):.1f} %); regimes met {int((t.loc[t.family == fam, 'goal'] == 'met').sum())} "
              f"of {int((t.family == fam).sum())} (before {int((t.loc[t.family == fam, 'before goal'] == 'met').sum())})")
        print(f"    with the shipped model (looked-at: revised after this grid was measured): median |error| "
              f"{en.median():.1f} %, p90 {np.percentile(en, 90):.1f} %")
    _board(m, "err", "blind", title[0].lower(), t)
    if pred == FRESH_FI2[0]:
        for (fam, ctx), why in FRESH_FI2_DIAGNOSIS.items():
            if ((t["family"] == fam) & (t["ctx_regime"] == ctx) & (t["goal"] == "MISSED")).any():
                print(f"  missed (check grid 2): {fam} {ctx}: {why}")


#: the third FlashInfer check grid (--grid fresh_fi3): contexts 20-200 and 300-2800 at batches 1-6 and 144-900, Llama-8B /
#: 70B / 70B-TP8 / Qwen2.5-7B heads, bf16 / fp8, decode q 1 and verification q 2-6; THREE price files committed before
#: the device run: the revised model (fp8 prefill columns shared by the busiest SM's CTAs, the fitted serial CTA time),
#: the same with PDL's pre-wait loads hidden (FI_PDL_GRAPH = True, refitted), and the model at main (db3789c)
FRESH_FI3 = ("production_attention_fresh_fi3_predictions.csv", "production_attention_fresh_fi3_predictions_db3789c.csv",
             "production_attention_fresh_fi3_nvidia*.csv", "production_attention_fresh_fi3_predictions_pdl.csv")


def _fresh_fi3(FP, fmt) -> None:
    """The third FlashInfer check grid: per family, K/V dtype and regime, |error| of the three committed price files
    (first look: all three were committed before the measurement)."""
    import numpy as np
    import pandas as pd

    from simulator.calibration.blind_grids import blind_errors

    pred, before, glob, pdl = FRESH_FI3
    m, name = blind_errors(FP, glob, pred, before)
    if m is None or not (DF.resolve(FP.DATA_DIR / pdl)).is_file():
        print("\nFLASHINFER CHECK SHAPES 3: not measured yet (" + pred + " holds the predictions)")
        return
    timed_of = m.attrs["timed_of"]
    keys = [k for k in FP.SHAPE_KEYS if k in m.columns]
    pp = pd.read_csv(DF.resolve(FP.DATA_DIR / pdl))
    for k in keys:
        if k not in ("family", "model", "dtype"):
            pp[k] = pd.to_numeric(pp[k], errors="coerce")
    m = m.merge(pp[keys + ["pred_us"]].rename(columns={"pred_us": "pdl_us"}), on=keys, how="inner")
    m["err_pdl"] = (m["pdl_us"] / m["median_us"] - 1.0) * 100.0
    print(f"\nFLASHINFER CHECK SHAPES 3 (fi_decode / fi_tc / fi_verify at contexts 20-200 and 300-2800 x batches 1-6 and "
          f"144-900, Llama-8B / 70B / 70B-TP8 (8 / 1 heads) / Qwen2.5-7B heads, bf16 / fp8, q 1-6, in no earlier grid; "
          f"BLIND: all three price files committed before measuring: new = the model at "
          f"{str(m['model_commit'].iloc[0])[:7]} ({pred}), new+PDL = the same with programmatic dependent launch's "
          f"pre-wait loads hidden ({pdl}), main = the model at {str(m['before_commit'].iloc[0])[:7]} ({before}); "
          f"measured {name}, {len(m)} of {timed_of} shapes timed)")
    rows = []
    for key, x in m.groupby(["family", "kv", "ctx_regime", "batch_regime"]):
        r = dict(zip(("family", "kv", "ctx_regime", "batch_regime"), key), n=len(x))
        for lab, col in (("new", "err"), ("new+PDL", "err_pdl"), ("main", "err_before")):
            e = x[col].abs()
            r[f"{lab} med"], r[f"{lab} p90"], r[f"{lab} sgn"] = e.median(), np.percentile(e, 90), x[col].median()
            r[f"{lab} goal"] = "met" if (e.median() <= 10.0 and np.percentile(e, 90) <= 25.0) else "MISSED"
        rows.append(r)
    t = pd.DataFrame(rows)
    print(t.to_string(**fmt))
    for lab, col in (("new", "err"), ("new+PDL", "err_pdl"), ("main", "err_before")):
        e = m[col].abs()
        print(f"  {lab}: median |error| {e.median():.1f} %, p90 {np.percentile(e, 90):.1f} %, signed "
              f"{m[col].median():+.1f} %; regimes met {int((t[f'{lab} goal'] == 'met').sum())} of {len(t)}; "
              + ", ".join(f"{fam} {x[col].abs().median():.1f} / {np.percentile(x[col].abs(), 90):.1f}"
                          for fam, x in m.groupby("family")))
    _board(m, "err", "blind", "flashinfer check shapes 3", t, goal="new goal")
    for (fam, ctx), why in FRESH_FI3_DIAGNOSIS.items():
        if ((t["family"] == fam) & (t["ctx_regime"] == ctx) & (t["new goal"] == "MISSED")).any():
            print(f"  missed (check grid 3): {fam} {ctx}: {why}")


def _fi_pdl_probe(FP) -> None:
    """lab/kernels/probe_fi_pdl.py's measurement: one call's time in the CUDA-graph chain with programmatic dependent
    launch on and off, a lone call (a graph of one call after a spin), and the captured graph's programmatic edges."""
    import pandas as pd

    fs = sorted(DF.glob(FP.DATA_DIR, "fi_pdl_probe_nvidia*.csv"))
    if not fs:
        return
    d = pd.read_csv(fs[-1])
    d = d[pd.to_numeric(d["chain_us"], errors="coerce").notna()]
    on, off = d[d["pdl"] == 1].set_index(["family", "model", "dtype", "batch", "context"]), \
        d[d["pdl"] == 0].set_index(["family", "model", "dtype", "batch", "context"])
    t = pd.DataFrame({"chain PDL on": on["chain_us"], "chain PDL off": off["chain_us"],
                      "saved": off["chain_us"] - on["chain_us"], "lone PDL on": on["lone_us"],
                      "lone - chain": on["lone_us"] - on["chain_us"], "kernels": on["kernels"],
                      "programmatic edges": on["prog_edges"].astype(str) + " of " + on["edges"].astype(str)}).reset_index()
    print(f"\nFLASHINFER PDL PROBE ({fs[-1].name}, lab/kernels/probe_fi_pdl.py; us per call): the CUDA-graph chain keeps "
          "the programmatic edges FlashInfer's enable_pdl launches create, and the chain with PDL on is faster; a lone "
          "call (a one-call graph after a spin) costs 2-3 us more than the same call in the chain")
    print(t.to_string(index=False, float_format=lambda v: f"{v:.2f}"))


#: what the third FlashInfer check grid shows where a regime misses (printed only while it misses)
FRESH_FI3_DIAGNOSIS = {
    ("fi_decode", "short (<=256)"):
        "B 1-6 at T 20-200 +25 % median in bf16 (Llama-70B at TP8, one KV head: +36..48 %), +15 % in fp8, the same "
        "with the model at main: the lone CTA's iteration (~0.45 us measured at one KV head vs the fitted 0.71 us) "
        "and programmatic dependent launch, which the probe shows in effect in the graph chain (0.45-1.0 us per "
        "call); priced as hidden pre-wait loads (new+PDL) bf16 short small is 15.5 %; fp8 at B 144-480 (1 shape "
        "each) 17-19 % too fast, as on the campaign's rows",
    ("fi_decode", "middle"): "bf16 B 144-480 (no split, several waves) +16.5 %, as on the campaign's rows (the "
                             "bandwidth-bound body and the issue term compounded)",
    ("fi_tc", "short (<=256)"): "fp8 at B 144 (T 20: one 16-row tile, 1152 CTAs in 4.4 waves) +17 %: two serial CTA "
                                "times per wave of two co-resident CTAs where the measured wave costs less (main: -4 "
                                "%); bf16 met in every regime (main: 17 / 14 % too fast at large / mid batch)",
    ("fi_verify", "short (<=256)"): "bf16 at B 144 (q 2-6, 64-row tiles) 14-20 % too fast: the one-tile 64-row CTA's "
                                    "per-wave time (main: -25 %); fp8 B 144 T 28 +24 % (one shape of two)",
}


# ---------------------------------------------------------------------------------------------------------------------
# the CUDA-core decode kernel's blind grids (fi_dec_blind, fi_dec_blind2)
# ---------------------------------------------------------------------------------------------------------------------
#: lab/kernels/measure_production_attention.py --grid fi_dec_blind (FIDB_*): 123 fi_decode shapes in none of the earlier
#: grids (contexts 12-4096, batches 1-448, heads 32/8, 64/8, 8/1, 28/4, bf16 / fp8, pages 16 / 1 / 64), priced BEFORE
#: measuring by main (65f5d1f) and by the first revision (HBM a ceiling of the compounded chain and issue, attn_fa2's
#: memory efficiency, PDL for the decode call: be6c3b8, recorded as 81cf8a8); both files committed before the device run.
#: Its Llama-70B-TP8 middle-context rows then became the lone-CTA fit rows (fit_production_attention FI_LONE_FIT_GLOB):
#: the grid is looked-at for the shipped model
FI_DEC_BLIND = ("production_attention_fi_dec_blind_predictions.csv",
                "production_attention_fi_dec_blind_predictions_65f5d1f.csv",
                "production_attention_fi_dec_blind_nvidia*.csv", None, "fi_decode blind grid")
#: --grid fi_dec_blind2 (FIDB2_*): 76 fi_decode shapes in none of the earlier grids (contexts 10-2200, batches 1-384,
#: heads 32/8, 64/8, 8/1, bf16 / fp8, pages 16 / 64), the test of the shipped model (the first revision refitted with
#: the lone-CTA fit rows: cbda9c3, recorded as b5e14ec), priced with main (65f5d1f) and the first revision (be6c3b8),
#: all three files committed before the device run
FI_DEC_BLIND2 = ("production_attention_fi_dec_blind2_predictions.csv",
                 "production_attention_fi_dec_blind2_predictions_65f5d1f.csv",
                 "production_attention_fi_dec_blind2_nvidia*.csv",
                 "production_attention_fi_dec_blind2_predictions_be6c3b8.csv", "fi_decode blind grid 2")
#: what the blind grids show where a regime of the shipped model misses (printed only while it misses)
FI_DEC_BLIND_DIAGNOSIS = {
    "short (<=256)":
        "mid batch (B 20-48) -8..-36 % (main -10 %): with the lone CTA's iteration fitted (0.49 us) the crowded "
        "one-wave short calls are priced on the busiest SM's issue alone, which they exceed; Llama-70B fp8 (the G = 8 "
        "fp8 kernel) +50..+178 % in the models priced before its registers were measured (72: 7 slots; looked-at "
        "since); Llama-8B fp8 at B 1-6 +8..+18 %",
    "middle":
        "fp8 B 192-448 +6..+15 % (issue-bound: the fp8 kernel's compute term alone is near the measured time); "
        "Llama-70B bf16 (9-slot kernel) at B 160-320 +13..+18 %; fp8 B 6 at 1400 -16 %",
}


#: the columns that name a CUDA-core decode shape in a grid's prediction file
DEC_KEYS = ("heads", "kv_heads", "dtype", "batch", "context", "page_size")


def _measured(FP, grid: tuple, title: str, note: str = " holds the predictions"):
    """(a blind grid's committed prices joined to its measurement, the measurement's name) for grid = (prediction file,
    main's prediction file, ..., measured glob); (None, None) after saying the grid is not measured yet."""
    from simulator.calibration.blind_grids import blind_errors

    m, name = blind_errors(FP, grid[-1], grid[0], grid[1])
    if m is None:
        print(f"\n{title}: not measured yet ({grid[0]}{note})")
    return m, name


def _with_groups(FP, m, pred: str, extra: tuple = ()):
    """The rows `m` with the grid's group (its regime) from its prediction file, joined on DEC_KEYS (and `extra`)."""
    import pandas as pd

    keys = list(DEC_KEYS + extra)
    return m.merge(pd.read_csv(DF.resolve(FP.DATA_DIR / pred))[keys + ["group"]], on=keys, how="left")


def _grouped(FP, m, pred: str, hw=None, extra: tuple = ()):
    """The rows `m` of a blind grid with its group (from `pred`, see _with_groups) as the regime, main's and the new
    model's committed errors as main_err_pct / new_err_pct and, given `hw`, the committed fitted file's (now_err_pct)."""
    m = _with_groups(FP, m, pred, extra)
    if hw is not None:
        m["now_err_pct"] = now_err(FP, hw, m)
    m["main_err_pct"], m["new_err_pct"], m["regime"] = m["err_before"], m["err"], m["group"]
    return m


def _missed(t, diagnosis: dict, cols: tuple, goal: str, label: str) -> None:
    """Print each diagnosis {regime key (one value per column of `cols`, or one value): why} whose regime misses."""
    for key, why in diagnosis.items():
        key = key if isinstance(key, tuple) else (key,)
        hit = t[goal] == "MISSED"
        for c, v in zip(cols, key):
            hit &= t[c] == v
        if hit.any():
            print(f"  missed ({label}): {' '.join(key)}: {why}")


def _fi_dec_blind(FP, hw, fmt, grid=FI_DEC_BLIND) -> None:
    """A CUDA-core decode blind grid: per K/V dtype and regime, |error| of the committed price files (main's, the new
    model's, and for the second grid the first revision's; all committed before measuring) and of the committed
    fitted file (now)."""
    from simulator.calibration.blind_grids import _shapes, blind_errors

    pred, before, glob, rev1, title = grid
    m, name = blind_errors(FP, glob, pred, before)
    if m is None:
        print(f"\n{title.upper()}: not measured yet ({pred} holds the predictions)")
        return
    labels, timed_of = ["main", "new"], m.attrs["timed_of"]
    if rev1 is not None:
        keys = [k for k in FP.SHAPE_KEYS if k in m.columns]
        r1 = _shapes(DF.resolve(FP.DATA_DIR / rev1), keys)
        m = m.merge(r1[keys + ["pred_us"]].rename(columns={"pred_us": "rev1_us"}), on=keys, how="inner")
        m["rev1_err_pct"] = (m["rev1_us"] / m["median_us"] - 1.0) * 100.0
        labels = ["main", "rev1", "new"]
    m["now_err_pct"] = now_err(FP, hw, m)
    m["main_err_pct"], m["new_err_pct"] = m["err_before"], m["err"]
    print(f"\n{title.upper()} (FlashInfer CUDA-core decode, {len(m)} of {timed_of} shapes timed, {name}; "
          f"BLIND: main = the model at {str(m['before_commit'].iloc[0])[:7]} ({before}), "
          + (f"rev1 = the first revision at be6c3b8 ({rev1}), " if rev1 else "")
          + f"new = the model at {str(m['model_commit'].iloc[0])[:7]} ({pred}), all committed before measuring; now = "
          "the committed fitted file" + ("" if rev1 else "; the grid's Llama-70B-TP8 rows at 520 / 1800 tokens are "
                                         "the shipped fit's lone-CTA fit rows: looked-at for it") + ")")
    t = _models_table(m, ("kv", "ctx_regime", "batch_regime"), labels + ["now"], labels)
    print(t.to_string(**fmt))
    for lab in labels + ["now"]:
        e = m[f"{lab}_err_pct"]
        print(f"  {lab}: median |error| {np.median(e.abs()):.1f} %, p90 {np.percentile(e.abs(), 90):.1f} %, signed "
              f"{np.median(e):+.1f} %" + (f"; regimes met {int((t[lab + '_goal'] == 'met').sum())} of {len(t)}"
                                          if lab + "_goal" in t else ""))
    for lab in labels:
        BOARD.add("fi_decode", "blind", f"{title}, {lab} model's committed prices", m[f"{lab}_err_pct"],
                  int((t[f"{lab}_goal"] == "met").sum()), len(t))
    if rev1 is not None:
        _missed(t, FI_DEC_BLIND_DIAGNOSIS, ("ctx_regime",), "new_goal", title)


# ---------------------------------------------------------------------------------------------------------------------
# the CUDA-core decode kernel's third blind grid (fi_dec_blind3) and its fp8 lone-CTA fit rows
# ---------------------------------------------------------------------------------------------------------------------
#: --grid fi_dec_blind3 (FIDB3_*): 78 fi_decode shapes in none of the earlier grids (contexts 20-5000, batches 1-256;
#: fp8 K/V of Llama-3.1-8B / 70B, i.e. the group-4 and group-8 fp8 kernels; Llama-70B bf16 at large and short middle
#: batches; Llama-8B bf16 short middle batches; controls), priced BEFORE measuring by main (c61edea) and by the new model
#: (ccc1bd7, recorded as 22b9890: the group-8 fp8 kernel's MEASURED registers, 72, 7 resident CTAs instead of 64
#: assumed, 8), both files
#: committed before the device run; plus 10 fp8 LONE-CTA FIT rows (Llama-70B-TP8 fp8, 520 / 1800 tokens, batch 1-5),
#: left out of the blind table. now = the committed fitted file: the new model refitted with those fit rows (the rule
#: that they join the fit was committed with the new model, before the run; its prices were computed after the run,
#: from the fit rows only)
FI_DEC_BLIND3 = ("production_attention_fi_dec_blind3_predictions.csv",
                 "production_attention_fi_dec_blind3_predictions_c61edea.csv",
                 "production_attention_fi_dec_blind3_nvidia*.csv")
#: what the third grid shows where the shipped model misses (printed only while that regime misses)
FI_DEC_BLIND3_DIAGNOSIS = {
    ("bf16", "short (<=256)"):
        "middle batch (B 12-36) -7..-35 % in every model (Llama-70B -24 % median): crowded one-wave short calls "
        "(100-290 CTAs) exceed the busiest SM's issue; a serial per-CTA time tried on the fit rows (SERIAL_KINDS) "
        "moved the shared group's prefill terms and was not shipped",
    ("fp8", "short (<=256)"):
        "Llama-8B fp8 B 2-4 at 52-184 tokens +18..+31 % with the fp8 lone iteration (1.60 us), B 28-56 at 20 "
        "tokens -19..-29 %; Llama-70B fp8 (G 8, 72 registers measured) short middle batch -13 % median",
    ("fp8", "middle"):
        "Llama-8B fp8 B 128-256 +12..+23 % (issue-bound; main the same)",
    ("bf16", "middle"):
        "Llama-70B bf16 (9-slot kernel) at B 256 +18..+20 % (B 128 +1..+4 %)",
}


def _fi_dec_grid_summary(m, t, grid: int, labels, blind, shipped: str | None = None) -> None:
    """Print each model label's pooled |error| median / p90, signed median and regimes met on a fi_decode blind grid
    (rows `m` with <label>_err_pct, regime table `t` with <label>_goal), and add the `blind` labels' committed prices to
    the board (none with blind = ()); `shipped`: the label of the shipped model on the family's newest blind grid (its
    STANDING row)."""
    for lab in labels:
        e = m[f"{lab}_err_pct"]
        print(f"  {lab}: median |error| {np.median(e.abs()):.1f} %, p90 {np.percentile(e.abs(), 90):.1f} %, signed "
              f"{np.median(e):+.1f} %; regimes met {int((t[lab + '_goal'] == 'met').sum())} of {len(t)}")
    for lab in blind:
        BOARD.add("fi_decode", "blind", f"fi_decode blind grid {grid}, {lab} model's committed prices",
                  m[f"{lab}_err_pct"], int((t[f"{lab}_goal"] == "met").sum()), len(t), standing=lab == shipped)


def _fi_dec_blind3(FP, hw, fmt) -> None:
    """The third CUDA-core decode blind grid: per K/V dtype and regime, |error| of main's and the new model's committed
    prices and of the committed fitted file (now); the fp8 lone-CTA fit rows are shown apart."""
    pred, before, _ = FI_DEC_BLIND3
    m, name = _measured(FP, FI_DEC_BLIND3, "FI_DECODE BLIND GRID 3")
    if m is None:
        return
    fit = FP._is_fi_lone_fit(m)
    m["now_err_pct"] = now_err(FP, hw, m)
    m["main_err_pct"], m["new_err_pct"] = m["err_before"], m["err"]
    f, b = m[fit], m[~fit].reset_index(drop=True)
    print(f"\nFI_DECODE BLIND GRID 3 (FlashInfer CUDA-core decode, {len(b)} blind shapes + {len(f)} fp8 lone-CTA fit "
          f"rows of {m.attrs['timed_of']} timed, {name}; BLIND: main = the model at "
          f"{str(b['before_commit'].iloc[0])[:7]} ({before}), new = the model at {str(b['model_commit'].iloc[0])[:7]} "
          f"({pred}), both committed before measuring; now = the current model and fitted file, LOOKED-AT: first the new "
          "model refitted with the fp8 lone-CTA fit rows (rule committed before the run, priced after it from fit rows "
          "only: 9.0 / 25.0 %, 5 of 10 regimes), since then rules chosen with these rows' errors known (the CTA launch "
          "share of blind grid 4)")
    labels = ["main", "new", "now"]
    t = _models_table(b, ("kv", "ctx_regime", "batch_regime"), labels, labels)
    print(t.to_string(**fmt))
    _fi_dec_grid_summary(b, t, 3, labels, ("main", "new"))
    if len(f):
        for lab in ("main", "now"):
            e = f[f"{lab}_err_pct"]
            print(f"  fp8 lone-CTA fit rows ({len(f)}), {lab}: median |error| {np.median(e.abs()):.1f} %, signed "
                  f"{np.median(e):+.1f} %")
    BOARD.add("fi_decode", "looked-at", "fi_decode blind grid 3, the current model (later rules chosen with its errors "
              "known)", b["now_err_pct"], int((t["now_goal"] == "met").sum()), len(t))
    _missed(t, FI_DEC_BLIND3_DIAGNOSIS, ("kv", "ctx_regime"), "now_goal", "fi_decode blind grid 3")

# ---------------------------------------------------------------------------------------------------------------------
# the CUDA-core decode kernel's fourth blind grid (fi_dec_blind4): the CTA launch share and the 9- / 7-slot dispatch
# ---------------------------------------------------------------------------------------------------------------------
#: --grid fi_dec_blind4 (FIDB4_*): 83 fi_decode shapes in none of the earlier grids (crowded one-wave short calls at
#: B 14-58, 24-248 tokens; fp8 many-wave middle calls at B 176-416; Llama-3.1-70B bf16 at B 192 / 320; controls), priced
#: BEFORE measuring by main (5b35f90), by the new model (133661d: the decode call's CTA launch, 0.47 of a DRAM load per CTA
#: after an SM's first, measured from the launch profiles' merge kernels; the 9- / 7-slot dispatch rule, with no probe at
#: those residencies yet) and by alt (the same with the fit rows' scan optimum, 1.5); all three files committed before
#: the device run. now = the current model (looked-at): first the new model refitted once the dispatch probe at 9 and 7
#: CTAs per SM (run in the same call, after the grid) was committed (7.9 / 14.4 %, 9 of 10 regimes, from the probe and the
#: fit rows only), since then the staggered-wave rule chosen with these rows' errors known
FI_DEC_BLIND4 = ("production_attention_fi_dec_blind4_predictions.csv",
                 "production_attention_fi_dec_blind4_predictions_5b35f90.csv",
                 "production_attention_fi_dec_blind4_predictions_cta1.5.csv",
                 "production_attention_fi_dec_blind4_nvidia*.csv")
#: what the fourth grid shows where the shipped model misses (printed only while that regime misses)
FI_DEC_BLIND4_DIAGNOSIS = {
    ("fp8", "middle"):
        "Llama-8B fp8 B 176-416 at 700-3000 tokens +8..+16 % (main +9..+17 %; Llama-70B fp8 +2..+8 %): issue-bound, "
        "the compute term alone is "
        "within a few % of the measured time and its compounding with the lone CTA's chain adds the rest; taking the "
        "CTA's own issue out of the compounded chain was tried on the fit rows and rejected (rms 0.076 -> 0.088)",
    ("bf16", "short (<=256)"):
        "Llama-70B bf16 B 14-44 at 60-100 tokens -15..-21 % with the probed 9-slot dispatch; Llama-8B bf16 B 44-58 "
        "at 168-248 tokens -12..-17 %",
    ("bf16", "middle"):
        "Llama-70B bf16 (9-slot kernel) at B 192 / 320 +15..+20 % before the 9-slot dispatch probe",
}


def _fi_dec_blind4(FP, hw, fmt) -> None:
    """The fourth CUDA-core decode blind grid: per K/V dtype and regime, |error| of main's, the new model's and alt's
    committed prices and of the committed fitted file (now)."""
    from simulator.calibration.blind_grids import blind_errors

    pred, before, alt, glob = FI_DEC_BLIND4
    m, name = blind_errors(FP, glob, pred, before)
    a, _ = blind_errors(FP, glob, alt, before)
    if m is None or a is None:
        print(f"\nFI_DECODE BLIND GRID 4: not measured yet ({pred} holds the predictions)")
        return
    m["now_err_pct"] = now_err(FP, hw, m)
    m["main_err_pct"], m["new_err_pct"] = m["err_before"], m["err"]
    keys = [k for k in FP.SHAPE_KEYS if k in m.columns]
    m = m.merge(a[keys + ["err"]].rename(columns={"err": "alt_err_pct"}), on=keys, how="left")
    print(f"\nFI_DECODE BLIND GRID 4 (FlashInfer CUDA-core decode, {len(m)} blind shapes of {m.attrs.get('timed_of', len(m))} "
          f"timed, {name}; BLIND: main = the model at {str(m['before_commit'].iloc[0])[:7]} ({before}), new = the model "
          f"at {str(m['model_commit'].iloc[0])[:7]} ({pred}: the decode call's CTA launch, share 0.47 measured from the "
          f"merge kernels' launch profiles), alt = new with the fit rows' scan optimum 1.5 ({alt}), all committed before "
          "measuring; now = the current model and fitted file, LOOKED-AT: first the new model refitted with the 9- / "
          "7-slot dispatch probe of the same call (rule committed before the run, priced after it from the probe and the "
          "fit rows only: 7.9 / 14.4 %, 9 of 10 regimes), since then a rule chosen with these rows' errors known (later "
          "waves out of step, roofline CHAIN_OVERLAP_STAGGERED)")
    labels = ["main", "new", "alt", "now"]
    t = _models_table(m, ("kv", "ctx_regime", "batch_regime"), labels, labels)
    print(t.to_string(**fmt))
    _fi_dec_grid_summary(m, t, 4, labels, ("main", "new", "alt"))
    BOARD.add("fi_decode", "looked-at", "fi_decode blind grid 4, the current model (a later rule chosen with its "
              "errors known)", m["now_err_pct"], int((t["now_goal"] == "met").sum()), len(t))
    _missed(t, FI_DEC_BLIND4_DIAGNOSIS, ("kv", "ctx_regime"), "now_goal", "fi_decode blind grid 4")


# ---------------------------------------------------------------------------------------------------------------------
# the CUDA-core decode kernel's fifth blind grid (fi_dec_blind5): only a launch's first wave compounds chain and issue
# ---------------------------------------------------------------------------------------------------------------------
#: --grid fi_dec_blind5 (FIDB5_*): 39 fi_decode shapes in none of the earlier grids, priced BEFORE measuring by main
#: (the model at 8b74743, priced from an exported tree) and by new (35f814e: hwmodels/roofline.py CHAIN_OVERLAP_STAGGERED,
#: the later waves' CTAs out of phase, refitted), both files committed before the device run
FI_DEC_BLIND5 = ("production_attention_fi_dec_blind5_predictions.csv",
                 "production_attention_fi_dec_blind5_predictions_8b74743.csv",
                 "production_attention_fi_dec_blind5_nvidia*.csv")

#: what the fifth grid shows where the shipped model misses (printed only while that regime misses)
FI_DEC_BLIND5_DIAGNOSIS = {
    "fp8 many-wave short":
        "Llama-8B fp8 B 320-640 at 48-120 tokens -9..-16 % (main -10..+1 %): 3-8 tiles per CTA, so the compounded "
        "chain main charged every wave stood in for a per-CTA time of many-wave launches that no term prices (the "
        "campaign's 16-token fp8 rows at B 256 / 1024 -29..-34 % under main too). Looked at after the run, not "
        "shipped: the measured CTA launch share (0.47 of a load) for every CTA after an SM's first in later waves too "
        "meets it (7.2 / 8.5 %) with the fit rows unchanged, but a later-wave CTA's launch overlaps the SM's other "
        "CTAs, so the rule has no source argument yet",
    "70B bf16 one-wave short (missed)":
        "Llama-70B bf16 (9-slot kernel) B 18-38 at 72-120 tokens -15..-20 %, as in grid 4 (-15..-21 % at 60-100): "
        "the probed 9-slot dispatch puts 2-4 CTAs on the busiest SM, and the chain plus issue of so few CTAs is short "
        "of the measured time; not closed",
    "8B bf16 B 48-62 at 184-216 (missed)":
        "Llama-8B bf16 S = 2 calls whose 700-1000 CTAs fill nearly every SM's 8 slots: -13..-18 % (grid 4: -12..-17 % at "
        "168-248); measured time grows ~5 us from B 14 to B 58 at a constant busiest-SM count (8), the model's only "
        "through the merge (+2 us); compounding HBM in the first wave (tried) raised the bf16 fit rows' rms 0.072 -> "
        "0.088; not closed",
}


def fi_dec_blind5_regime(model: str, dtype: str, batch: float, context: float) -> str:
    """The fifth decode blind grid's regime of one shape (the groups FIDB5_* was built from)."""
    if batch >= 200 and context >= 450:
        return f"{dtype} many-wave middle"
    if dtype == "fp8" and batch >= 320:
        return "fp8 many-wave short"
    if model == "llama70b" and dtype == "bf16" and context <= 256:
        return "70B bf16 one-wave short (missed)"
    if model == "llama8b" and dtype == "bf16" and batch >= 48 and 184 <= context <= 216:
        return "8B bf16 B 48-62 at 184-216 (missed)"
    return f"control: one-wave {'short' if context <= 256 else 'middle'}"


def _fi_dec_blind5(FP, hw, fmt) -> None:
    """The fifth CUDA-core decode blind grid: per regime, |error| of main's and the new model's committed prices and of
    the committed fitted file (now)."""
    pred, before, _ = FI_DEC_BLIND5
    m, name = _measured(FP, FI_DEC_BLIND5, "FI_DECODE BLIND GRID 5")
    if m is None:
        return
    m["now_err_pct"] = now_err(FP, hw, m)
    m["main_err_pct"], m["new_err_pct"] = m["err_before"], m["err"]
    m["regime"] = [fi_dec_blind5_regime(*r) for r in m[["model", "dtype", "batch", "context"]].itertuples(index=False)]
    print(f"\nFI_DECODE BLIND GRID 5 (FlashInfer CUDA-core decode, {len(m)} blind shapes of "
          f"{m.attrs.get('timed_of', len(m))} timed, {name}; BLIND: main = the model at "
          f"{str(m['before_commit'].iloc[0])[:7]} ({before}), new = the model at {str(m['model_commit'].iloc[0])[:7]} "
          f"({pred}: only a launch's first wave compounds the latency chain with the SM's issue, roofline "
          "CHAIN_OVERLAP_STAGGERED), both committed before measuring; now = the committed fitted file, LOOKED-AT since "
          "a later rule was chosen with these rows' errors known: a later wave's CTAs waiting for their first tile, "
          "roofline CHAIN_OVERLAP_WAVE_FILL)")
    labels = ["main", "new", "now"]
    t = _models_table(m, ("regime",), labels, labels)
    print(t.to_string(**fmt))
    _fi_dec_grid_summary(m, t, 5, labels, ("main", "new"))
    _missed(t, FI_DEC_BLIND5_DIAGNOSIS, ("regime",), "now_goal", "fi_decode blind grid 5")


FI_DEC_BLIND6 = ("production_attention_fi_dec_blind6_predictions.csv",
                 "production_attention_fi_dec_blind6_predictions_6648a5d.csv",
                 "production_attention_fi_dec_blind6_nvidia*.csv")

#: what the sixth grid shows where the shipped model misses (printed only while that regime misses)
FI_DEC_BLIND6_DIAGNOSIS = {
    "8B bf16 S = 2 crowded":
        "Llama-8B bf16 S = 2 calls at 176-240 tokens, B 42-60 (TP 1) and B 100-120 (TP 2, 4 KV heads): -11..-22 % in "
        "both models (grids 4 / 5: -12..-18 %), growing with B at a constant busiest-SM count (8): the SM clock stayed at "
        "1980 MHz and the board under 170 W through every shape (the call's nvidia-smi log), so it is not a clock drop; "
        "not closed. The CTA probe (FI_DECODE CTA PROBE below): from B 14 to 60 at 204 tokens the decode's last CTA ends "
        "2.8 us later (model flat) as the device-wide K/V traffic rises 0.5 -> 1.8 TB/s, and the S = 2 merge's run grows "
        "3.1 us (model 2.0). Within the met Llama-70B one-wave short regime the misses are S = 2 at 136 tokens (B 26, "
        "-17 %) and TP 4 at B 150 (S = 1: 300 CTAs of the (594, 2) CUDA-graph grid priced at an even 3 per SM, where the "
        "probe measured 4 on the busiest SM: -19..-21 %, -3 % with the measured count; B 70 at 2 per SM meets)",
    "control: one-wave short":
        "Llama-8B fp8 B 3 / 10 at 94 tokens +31..+33 % in both models: the known fp8 small-batch overshoot (the fp8 "
        "lone iteration, 1.63 us, charged where 1-2 CTAs share an SM; campaign fp8 short small p90 37 %), a control "
        "chosen from the wrong side of that line; the bf16 controls meet (|error| <= 4.5 %)",
}


def _fi_dec_blind6(FP, hw, fmt) -> None:
    """The sixth CUDA-core decode blind grid: per regime (the grid's groups, FIDB6_*), |error| of main's and the new
    model's committed prices and of the committed fitted file (now)."""

    pred, before, _ = FI_DEC_BLIND6
    m, name = _measured(FP, FI_DEC_BLIND6, "FI_DECODE BLIND GRID 6")
    if m is None:
        return
    m = _grouped(FP, m, pred, hw)
    print(f"\nFI_DECODE BLIND GRID 6 (FlashInfer CUDA-core decode, {len(m)} blind shapes of "
          f"{m.attrs.get('timed_of', len(m))} timed, {name}; Llama-3.1-8B at TP 1 / 2, Llama-3.1-70B at TP 1 / 2 / 4; "
          f"BLIND: main = the model at {str(m['before_commit'].iloc[0])[:7]} ({before}), new = the model at "
          f"{str(m['model_commit'].iloc[0])[:7]} ({pred}: a later wave's CTAs wait for their first tile, roofline "
          "CHAIN_OVERLAP_WAVE_FILL, chosen on looked-at rows of earlier grids; the decode launches' own residency for "
          "the wave count, FI_DECODE_OWN_RESIDENCY), both committed before measuring; now = the committed fitted file)")
    labels = ["main", "new", "now"]
    t = _models_table(m, ("regime",), labels, labels)
    print(t.to_string(**fmt))
    _fi_dec_grid_summary(m, t, 6, labels, ("main", "new"))
    _missed(t, FI_DEC_BLIND6_DIAGNOSIS, ("regime",), "now_goal", "fi_decode blind grid 6")


#: the CUDA-core decode CTA probe (lab/kernels/probe_fi_decode_ctas.py: per-CTA globaltimer / clock64 / %smid records
#: from an instrumented JIT build of FlashInfer 0.6.4's decode and merge kernels, H100 2026-11-27): not a blind grid, a
#: diagnosis of the two regimes grids 4-6 miss (rows LOOKED-AT: most are grid 6's shapes)
FI_CTA_PROBE = "fi_cta_probe_nvidia-h100-80gb-hbm3_2026-11-27_summary.csv"
#: the seventh CUDA-core decode blind grid: the test of the CUDA-graph grids' probed placement (FI_GRAPH_PLACEMENT,
#: shipped on after this grid) priced before any measurement: (candidate's prices, main's prices, measured glob)
FI_DEC_BLIND7 = ("production_attention_fi_dec_blind7_predictions.csv",
                 "production_attention_fi_dec_blind7_predictions_d4aa094.csv",
                 "production_attention_fi_dec_blind7_nvidia*.csv")


def _fi_cta_probe(FP, hw, fmt) -> None:
    """Where the CUDA-core decode call's time goes, CTA by CTA (FI_CTA_PROBE): per shape the measured split (the decode
    kernel's last CTA end, the merge's launch gap after it and its run after the PDL wait) against the model's two
    launches, the busiest SM's CTAs measured against the model's (fi_decode_crowding), and the model re-priced with the
    measured busiest-SM count (a what-if on looked-at rows, not a test)."""
    from dataclasses import replace

    import numpy as np
    import pandas as pd

    from hwmodels.roofline import price
    from simulator.kernels import flashinfer as FI
    from simulator.kernels.production import emit
    from simulator.ops import MaskedBuilder, OpBuilder

    path = DF.resolve(FP.DATA_DIR / FI_CTA_PROBE)
    if not path.is_file():
        return
    s = pd.read_csv(path)
    s = s[np.isfinite(pd.to_numeric(s["graph_us"], errors="coerce"))].reset_index(drop=True)
    hw2 = hw.with_efficiency(hw.efficiency)
    smem = float(hw.smem_per_unit_bytes or 233472)
    ev = {}
    for tag, busiest in (("model", None), ("whatif", s["busiest_sm_ctas"].to_numpy(float))):
        b = OpBuilder(len(s))
        launches, info = FI.fi_decode(s["batch"].to_numpy(float), s["context"].to_numpy(float),
                                      s["heads"].to_numpy(float), s["kv_heads"].to_numpy(float), 128.0, 2.0, 16.0,
                                      hw.units, smem, busiest=busiest)
        emit(MaskedBuilder(b, np.ones(len(s), dtype=bool)), launches, hw.units)
        ops = b.build()
        t = price(ops, replace(hw2, launch_graph_s=hw.efficiency.launch_graph_s or hw.launch_graph_s), "graph") * 1e6
        names = np.asarray(ops.names)[ops.name_id]
        ev[tag] = {n: np.bincount(ops.setting[names == n], weights=t[names == n], minlength=len(s))
                   for n in ("attention", "attention_merge")}
        if tag == "model":
            s["S"], s["model_k"] = info["splits"], info["busiest_sm_ctas"]
    g = s["graph_us"].to_numpy(float)
    model = ev["model"]["attention"] + ev["model"]["attention_merge"]
    whatif = ev["whatif"]["attention"] + ev["whatif"]["attention_merge"]
    out = pd.DataFrame({
        "shape": s["label"], "S": s["S"], "meas_us": g, "model_us": model, "err_%": (model / g - 1) * 100,
        "k_meas": s["busiest_sm_ctas"], "k_model": s["model_k"],
        "dec_end": s["valid_end_us_max"], "dec_model": ev["model"]["attention"],
        "gap": s["merge_wait_us_min"] - s["valid_end_us_max"], "merge_run": s["merge_run_us_max"],
        "merge_model": ev["model"]["attention_merge"], "items": s["merge_items_max"],
        "whatif_%": (whatif / g - 1) * 100})
    print(f"\nFI_DECODE CTA PROBE ({path.name}: {len(s)} calls of an instrumented FlashInfer 0.6.4 build, graph times "
          "within -2.2..+0.7 % of uninstrumented; LOOKED-AT rows, a diagnosis, not a test). us from the decode's first "
          "CTA: dec_end = its last working CTA's end, gap = the merge's launch after it (PDL wait), merge_run = the "
          "merge's slowest CTA after the wait; k = working CTAs on the busiest SM; whatif_% = the model with k_meas")
    print(out.to_string(**fmt))
    c = out[out["shape"].str.startswith("llama8b:") & out["shape"].str.endswith(":T204")]
    if len(c) >= 2:
        lo, hi = c.iloc[0], c.iloc[-1]
        print(f"  8B bf16 S = 2 at a constant k = 8: from {lo['shape']} to {hi['shape']} the call grows "
              f"{hi['meas_us'] - lo['meas_us']:.1f} us (model {hi['model_us'] - lo['model_us']:.1f}): the decode's "
              f"last CTA {hi['dec_end'] - lo['dec_end']:+.1f} us (model {hi['dec_model'] - lo['dec_model']:+.1f}), the "
              f"merge's run {hi['merge_run'] - lo['merge_run']:+.1f} us (model {hi['merge_model'] - lo['merge_model']:+.1f}), "
              f"the launch gap {hi['gap'] - lo['gap']:+.1f}")
    b = out[out["k_meas"] != out["k_model"]]
    if len(b):
        print(f"  busiest SM measured above the model's (unprobed CUDA-graph grids (594, 2) at 9 per SM, (264, 4) at 8): "
              f"{len(b)} calls, |error| median {np.median(np.abs(b['err_%'])):.1f} % -> "
              f"{np.median(np.abs(b['whatif_%'])):.1f} % with the measured k")
    # the seventh blind grid (the candidate FI_GRAPH_PLACEMENT against main's model), once measured
    pred, before, _ = FI_DEC_BLIND7
    m, name = _measured(FP, FI_DEC_BLIND7, "FI_DECODE BLIND GRID 7", f": the candidate FI_GRAPH_PLACEMENT on; {before}: "
                        "main; both committed before any measurement; lab/kernels/measure_production_attention.py "
                        "--grid fi_dec_blind7")
    if m is None:
        return
    m = _grouped(FP, m, pred)
    print(f"\nFI_DECODE BLIND GRID 7 (FlashInfer CUDA-core decode, {len(m)} blind shapes of "
          f"{m.attrs.get('timed_of', len(m))} timed, {name}; BLIND: main = the model at "
          f"{str(m['before_commit'].iloc[0])[:7]} ({before}), new = {str(m['model_commit'].iloc[0])[:7]} with the "
          f"CUDA-graph grids' probed placement (FI_GRAPH_PLACEMENT) ({pred}), both committed before measuring)")
    labels = ["main", "new"]
    t = _models_table(m, ("regime",), labels, labels)
    print(t.to_string(**fmt))
    _fi_dec_grid_summary(m, t, 7, labels, labels)
# ---------------------------------------------------------------------------------------------------------------------
# the eighth CUDA-core decode blind grid (fi_dec_blind8): the chain's loaded latency and the merge path's reloads
# ---------------------------------------------------------------------------------------------------------------------
#: --grid fi_dec_blind8: 38 fi_decode shapes in none of the committed CSVs (crowded S = 2 calls of Llama-3.1-8B bf16 /
#: fp8 K/V at TP 1 / 2, 156-256 tokens, B 26-126, + 8 controls), priced BEFORE measuring by main (ca60389, an exported
#: tree) and by the new model (hwmodels/roofline.py CHAIN_LOADED, simulator/kernels/flashinfer.py FI_MERGE_ITEM_RELOADS;
#: the model at 12037d8), both files committed before the device run
FI_DEC_BLIND8 = ("production_attention_fi_dec_blind8_predictions.csv",
                 "production_attention_fi_dec_blind8_predictions_ca60389.csv",
                 "production_attention_fi_dec_blind8_nvidia*.csv")


def _fi_dec_blind8(FP, hw, fmt) -> None:
    """The eighth CUDA-core decode blind grid: per regime, |error| of main's and the new model's committed prices, and
    of the committed fitted file (now: the shipped model refitted; looked-at once measured)."""

    pred, before, _ = FI_DEC_BLIND8
    m, name = _measured(FP, FI_DEC_BLIND8, "FI_DECODE BLIND GRID 8", f": the candidate; {before}: main; "
                        "lab/kernels/measure_production_attention.py --grid fi_dec_blind8")
    if m is None:
        return
    m = _grouped(FP, m, pred, hw)
    print(f"\nFI_DECODE BLIND GRID 8 (FlashInfer CUDA-core decode, {len(m)} blind shapes of "
          f"{m.attrs.get('timed_of', len(m))} timed, {name}; BLIND: main = the model at "
          f"{str(m['before_commit'].iloc[0])[:7]} ({before}), new = {str(m['model_commit'].iloc[0])[:7]} with the "
          f"decode chain's loaded latency (CHAIN_LOADED) and the merge path's per-item reloads (FI_MERGE_ITEM_RELOADS) "
          f"({pred}), both committed before measuring; now = the committed fitted file, looked-at)")
    labels = ["main", "new", "now"]
    t = _models_table(m, ("regime",), labels, labels)
    print(t.to_string(**fmt))
    _fi_dec_grid_summary(m, t, 8, labels, ["main", "new"], shipped="new")


# ---------------------------------------------------------------------------------------------------------------------
# the tensor-core (FA2 prefill) kernel's blind grid (fi_tc_blind): the bf16 tile waits
# ---------------------------------------------------------------------------------------------------------------------
#: --grid fi_tc_blind (FITB_*): 58 fi_tc / fi_verify shapes in none of the earlier grids (contexts 26-248 at batches 3-500,
#: q 1-8, Llama-3.1-8B and Llama-3.1-70B at TP 2 / 4, bf16 / fp8, + middle / small-batch controls), priced BEFORE
#: measuring by main (c460edb, an exported tree) and by the new model (simulator/kernels/flashinfer.py
#: FI_TC_BF16_TILE_WAITS: a bf16 CTA's tiles after its first wait on their K and V loads and issue their MMAs on its
#: chain), both files committed before the device run
FI_TC_BLIND = ("production_attention_fi_tc_blind_predictions.csv",
               "production_attention_fi_tc_blind_predictions_c460edb.csv",
               "production_attention_fi_tc_blind_nvidia*.csv")


def _fi_tc_blind(FP, hw, fmt) -> None:
    """The tensor-core (FA2 prefill) blind grid: per regime (the grid's groups, FITB_*), |error| of main's and the new
    model's committed prices and of the committed fitted file (now)."""

    pred, before, _ = FI_TC_BLIND
    m, name = _measured(FP, FI_TC_BLIND, "FI_TC BLIND GRID")
    if m is None:
        return
    m = _grouped(FP, m, pred, hw, ("family", "q_rows"))
    print(f"\nFI_TC BLIND GRID (FlashInfer tensor-core decode and verification, FA2 prefill kernel; {len(m)} blind shapes "
          f"of {m.attrs.get('timed_of', len(m))} timed, {name}; BLIND: main = the model at "
          f"{str(m['before_commit'].iloc[0])[:7]} ({before}), new = the model at {str(m['model_commit'].iloc[0])[:7]} "
          f"({pred}: bf16 tile waits and MMAs on the CTA's chain, FI_TC_BF16_TILE_WAITS, chosen on looked-at rows of the "
          "earlier check grids), both committed before measuring; now = the committed fitted file)")
    labels = ["main", "new", "now"]
    t = _models_table(m, ("regime",), labels, labels)
    print(t.to_string(**fmt))
    _fi_dec_grid_summary(m, t, None, labels, ())
    for fam in ("fi_tc", "fi_verify"):
        x = m[m["family"] == fam]
        tt = t[t["regime"].isin(set(x["regime"]))]
        for lab in ("main", "new"):
            BOARD.add(fam, "blind", f"fi_tc blind grid, {lab} model's committed prices", x[f"{lab}_err_pct"],
                      int((tt[f"{lab}_goal"] == "met").sum()), len(tt))
