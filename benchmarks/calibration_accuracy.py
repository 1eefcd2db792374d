"""Calibration accuracy from the committed measurements and fitted files — no GPU needed.

For every committed measurement CSV (hwmodels/calibration/data/) this prints, per op kind, the median and
worst absolute percentage error of the roofline (with the committed fitted efficiencies) against the
measured kernels, split into the rows the fit used, the whole shape families held out of it, and rows
that were only predicted (other kernels run as cross-checks); then the end-to-end Llama-3.1-8B decode
step, measured under CUDA-graph replay vs simulated.

Targets (issue 3): held-out median <= 10 % per op kind, <= 5 % for GEMM and decode attention; end to end
within 10 %. Then the NCCL all-reduce / all-to-all measurements against the fitted interconnect terms,
the paged-scan loop (measure_latency.py) against the loop floor, and the single-CTA top-k kernels
(measure_topk_cta.py) against the committed topk parameters.

Last, issue 15's kernel model outside the bandwidth regime (measure_regimes.py, H100, CUDA-graph timing): per
op kind and regime, median / p90 / max absolute error on the HELD-OUT shape families. `round 1` = the model
committed after issue 15's first round, on its campaign (script version 2), as it printed then (stored:
hwmodels/calibration/data/regimes_round1_accuracy_*.csv; `pre15` = the model before issue 15, same rows);
`round 2` = round 2's model and fitted files on the script-version-3 campaign, as it printed then (stored:
regimes_round2_accuracy_*.csv); `round 3` = this model with the committed fitted files, on the newest campaign
(script version 4: graph samples that bracket device time only, a spin kernel before every replay: v1-v3 samples
included the host's graph launch, ~7-14 us per replay over 2-16 calls; plus the L2 bandwidth, torch's row reductions
over rows x length and small-M GEMMs with their launch grids). Goal: median <= 10 % and p90 <= 25 % per regime; the
HF step median within 3 %. Regimes marked `(new)` are held-out families the round-3 campaign added (not in the
issue's list). `--all` adds the fit and check rows. Then torch.topk's fitted terms (owned by fit-regimes since
round 2) on measure.py's topk rows, an independent campaign.

Last, the production attention kernel families (FlashInfer, SGLang's Triton kernel, FlashMLA measured on the H100;
FlashAttention-3/4, XQA, vLLM's Triton kernel priced from their sources with borrowed rates): held-out median / p90 per
family and regime and the first-look error of FlashInfer decode priced from its source before it was measured.

    python benchmarks/calibration_accuracy.py [--refit]
"""
from __future__ import annotations

import argparse

import numpy as np

from simulator.calibration import fit as F
from simulator.calibration import report as R
from simulator.calibration.scoreboard import BOARD
from simulator.calibration.scoreboard import add_pooled as _board
from simulator.calibration.scoreboard import add_table as _board_table
from simulator.calibration.scoreboard import models_table as _models_table


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--refit", action="store_true", help="fit afresh instead of reading the fitted files")
    ap.add_argument("--all", action="store_true", help="regimes table: also the fit and check rows")
    args = ap.parse_args()
    for data in F.latest_data_files():
        err, table, e2e, eff, meta, hw = R.evaluate(data, refit=args.refit)
        print(f"== {hw.name}: {data.name} ({len(err)} priced kernel measurements)")
        print(R.table_text(table))
        print("end to end (Llama-3.1-8B decode step, CUDA graph):")
        print(R.e2e_text(e2e))
        if not e2e.empty:
            print(f"max |error| end to end: {e2e['error_pct'].abs().max():.1f} %")
        print()
    links = sorted(F.DATA_DIR.glob("*_collectives_*.csv"))
    if links:
        from hwmodels.spec import load_hardware
        from simulator.calibration import fit_links as FL

        df = FL.load(links)
        hw = load_hardware("H200")
        eff = hw.efficiency
        x = (eff.fixed_s["collective"] * 1e6, eff.fixed_s["alltoall"] * 1e6, (eff.link_latency_s or 0) * 1e6,
             eff.memory["collective"], eff.memory["alltoall"])
        err = (FL.model_us(df, hw, x) / df["median_us"] - 1) * 100
        print(f"== NCCL collectives, H200 x2 / x4 ({len(df)} rows; committed link terms, all rows fitted): "
              f"median |error| {err.abs().median():.1f} %, worst {err.abs().max():.1f} %")

    from hwmodels.spec import load_hardware
    from simulator.calibration import fit_latency as FT
    from simulator.calibration import fit_topk_cta as FK

    fmt = {"float_format": lambda v: f"{v:.1f}", "index": False}
    for f in sorted(F.DATA_DIR.glob("latency_*.csv")):
        df = FT.load(f)
        hw = load_hardware(F.DEVICE_SPECS[df["device"].iloc[0]])
        print(f"\n== {hw.name}: {f.name}, paged-scan loop vs the loop floor "
              f"({hw.efficiency.loop_iter_s * 1e6:.2f} us per iteration)")
        print(FT.error_table(FT.check(df, hw)).to_string(**fmt))
    for f in sorted(F.DATA_DIR.glob("topk_cta_*.csv")):
        df = FK.load(f)
        hw = load_hardware(F.DEVICE_SPECS[df["device"].iloc[0]])
        print(f"\n== {hw.name}: {f.name}, single-CTA radix / GVR top-k vs the topk kind")
        print(FK.error_table(FK.check(df, hw, hw.efficiency, FK.module_consts())).to_string(**fmt))
    regimes(args.all)
    production_kernels()
    production_attention()
    production_indexer()
    production_indexer_blind2()
    production_indexer_blind3()
    production_indexer_blind4_cold()
    BOARD.print()


def production_indexer() -> None:
    """DeepGEMM's DSA-indexer kernels (lab/kernels/measure_deepgemm_indexer.py, sgl-deep-gemm 0.2.5): first look (a)
    the model before any measurement and (b) the structure re-read from 0.2.5 at borrowed rates, both blind
    (deepgemm_indexer_first_look_h100.csv, committed before measuring); then the fitted kinds (indexer_dg,
    indexer_dg_prefill) on their fit rows and on the held-out rows, per regime."""
    from hwmodels.spec import load_hardware
    from simulator.calibration import fit_deepgemm_indexer as FI

    meas = FI.latest_csv()
    fl = FI.DATA_DIR / "deepgemm_indexer_first_look_h100.csv"
    if not fl.is_file():
        return
    if meas is None:
        d = FI.load(fl)
        r = (d["pred_struct_us"] / d["pred_main_us"] - 1.0) * 100.0
        print(f"\n== DeepGEMM DSA-indexer kernels: NOT MEASURED (sgl-deep-gemm 0.2.5's _C.so does not run on the lent "
              f"machine's PyTorch; docs/KNOWN_GAPS.md). First look {fl.name} ({len(d)} shapes, committed before any "
              f"measurement): (b) the 0.2.5 structure vs (a) the model before it, median change "
              f"{r[d['part'] == 'decode'].median():+.1f} % decode, {r[d['part'] == 'prefill'].median():+.1f} % prefill; "
              f"kinds indexer_dg / indexer_dg_prefill carry gemm_fp8_block's terms (borrowed)")
        return
    hw = load_hardware("H100-SXM")
    tab = FI.accuracy(meas, fl, hw)
    tab["goal"] = np.where(tab["set"] == "fit", "", np.where(
        (tab["median_abs_pct"] <= 10) & (tab["p90_abs_pct"] <= 25), "met", "MISSED"))
    print(f"\n== {hw.name}: DeepGEMM DSA-indexer kernels ({meas.name}; first look {fl.name}, predicted before the "
          f"measurement; fitted kinds on fit rows {FI.FIT_DECODE} (decode) / {FI.FIT_PREFILL} (prefill) and held-out "
          f"rows, never fitted but LOOKED-AT since the paged kernel's structure was re-read after their errors (the "
          f"second grid below is its blind test); |model / measured - 1| in %; goal median <= 10 %, p90 <= 25 %)")
    print(tab.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    fl_a = tab[tab["model"].str.startswith("first look (a)")].copy()
    fl_a["goal"] = np.where((fl_a["median_abs_pct"] <= 10) & (fl_a["p90_abs_pct"] <= 25), "met", "MISSED")
    _board_table(fl_a, "first look", "DeepGEMM indexer grid, (a) from source before measuring", family="indexer_dg")
    # never fitted, but the paged kernel's structure (CHAIN_TENSOR, CHAIN_PREFETCHED, the derived item latency) was
    # chosen after these rows' errors had been seen: looked-at; the second grid below is the blind test
    _board_table(tab[(tab["model"] == "fitted kinds") & (tab["set"] == "held out")], "looked-at",
                 "DeepGEMM indexer grid, fitted kinds (not fitted; rule chosen after seeing them)", family="indexer_dg")


def _indexer_regime_table(d, sets, labels, signed: str = "signed", miss: str = "MISSED"):
    """Per set and regime of an indexer grid's merged rows `d` (columns set, regime, median_us, pred_<label>_us): n and,
    per model label, |error| median / p90, signed median and the goal (median <= 10 %, p90 <= 25 %)."""
    import pandas as pd

    out = []
    for tag in sets:
        x = d[d["set"] == tag]
        for reg, g in x.groupby("regime"):
            row = {"set": tag, "regime": reg, "n": len(g)}
            for lab in labels:
                e = (g[f"pred_{lab}_us"] / g["median_us"] - 1.0) * 100.0
                row |= {f"{lab}_med": e.abs().median(), f"{lab}_p90": np.quantile(e.abs(), 0.9),
                        f"{lab}_{signed}": e.median(),
                        f"{lab}_goal": "met" if e.abs().median() <= 10 and np.quantile(e.abs(), 0.9) <= 25 else miss}
            out.append(row)
    return pd.DataFrame(out)


def production_indexer_blind2() -> None:
    """DeepGEMM's DSA-indexer kernels, second grid (lab/kernels/predict_deepgemm_indexer_blind.py): shapes in no
    earlier measurement, priced by main's model (c61edea) and by the model with the paged kernel's structure re-read
    (CHAIN_TENSOR, CHAIN_PREFETCHED, one item's dependent-load latency) and committed BEFORE one device call measured
    them; per regime |error| median / p90 / signed median, each model's committed prices; `replicate` rows repeat the
    first grid's shapes (not blind) and print apart."""

    from simulator.calibration import fit_deepgemm_indexer as FI

    preds = sorted(FI.DATA_DIR.glob("deepgemm_indexer_blind2_predictions_*.csv"))
    meas = sorted(FI.DATA_DIR.glob("deepgemm_indexer_blind2_nvidia-*.csv"))
    if not preds or not meas:
        return
    p, m = FI.load(preds[-1]), FI.load(meas[-1])
    key = ["part", "batch", "context", "next_n", "rows", "keys"]
    d = m[key + ["median_us"]].merge(p, on=key, how="inner")
    d["regime"] = FI.regime(d).to_numpy()
    t = _indexer_regime_table(d, ("blind", "replicate"), ("main", "new"))
    print(f"\n== H100-SXM: DeepGEMM DSA-indexer kernels, BLIND grid 2 ({meas[-1].name}; prices committed before the "
          f"measurement in {preds[-1].name}: main = c61edea's model, new = the paged kernel's structure re-read; "
          f"|model / measured - 1| in %, signed + = the model too slow; goal median <= 10 %, p90 <= 25 %)")
    print(t.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    b = d[d["set"] == "blind"]
    tb = t[t["set"] == "blind"]
    for lab, col in (("main c61edea", "pred_main_us"), ("new", "pred_new_us")):
        short = lab.split()[0]
        BOARD.add("indexer_dg", "blind", f"DeepGEMM indexer blind grid 2, {lab} model's committed prices",
                  (b[col] / b["median_us"] - 1.0) * 100.0, int((tb[f"{short}_goal"] == "met").sum()), len(tb))


def production_indexer_blind3() -> None:
    """DeepGEMM's DSA-indexer kernels, third grid (lab/kernels/predict_deepgemm_indexer_blind3.py): shapes in no
    earlier measurement, weighted to verification next_n 2 and prefill with few query blocks per CTA, priced by main's
    model (5b35f90) and by the model with the verification tail and the prefill chain derived from the source
    (simulator/calibration/fit_deepgemm_indexer.py verify_row_tail_us, PREFILL_HELD) and committed BEFORE one device
    call measured them. Small-batch decode shapes are measured twice: with the earlier grids' 8-table key rotation
    (warm8: their pages fit the L2) and with one fresh table per call over a 400 MB pool (cold: a decode step's
    layers each read their own keys); regimes of cold rows carry '[cold]'. `replicate` rows repeat grid-2 shapes (not
    blind). Then the cold / warm8 ratio per shape measured both ways."""
    import pandas as pd

    from simulator.calibration import fit_deepgemm_indexer as FI

    preds = sorted(FI.DATA_DIR.glob("deepgemm_indexer_blind3_predictions_*.csv"))
    meas = sorted(FI.DATA_DIR.glob("deepgemm_indexer_blind3_nvidia-*.csv"))
    if not preds or not meas:
        return
    p, m = FI.load(preds[-1]), FI.load(meas[-1])
    for x in (p, m):
        x["rotation"] = x["rotation"].fillna("").astype(str)
    key = ["part", "batch", "context", "next_n", "rows", "keys", "rotation"]
    d = m[key + ["median_us"]].merge(p, on=key, how="inner")
    d["regime"] = FI.regime(d).to_numpy() + np.where(d["rotation"] == "cold", " [cold]", "")
    t = _indexer_regime_table(d, ("blind", "replicate"), ("main", "new"))
    print(f"\n== H100-SXM: DeepGEMM DSA-indexer kernels, BLIND grid 3 ({meas[-1].name}; prices committed before the "
          f"measurement in {preds[-1].name}: main = 5b35f90's model, new = verification tail + prefill chain from the "
          f"source; |model / measured - 1| in %, signed + = the model too slow; goal median <= 10 %, p90 <= 25 %)")
    print(t.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    dec = d[d["part"] == "decode"]
    w = dec[dec["rotation"] == "warm8"].set_index(["batch", "context", "next_n"])["median_us"]
    c = dec[dec["rotation"] == "cold"].set_index(["batch", "context", "next_n"])["median_us"]
    both = pd.concat({"warm8_us": w, "cold_us": c}, axis=1).dropna()
    if len(both):
        both["cold_minus_warm_us"] = both["cold_us"] - both["warm8_us"]
        both["cold_vs_warm_pct"] = (both["cold_us"] / both["warm8_us"] - 1.0) * 100.0
        print("\nthe same decode shapes, keys rotated past the L2 (cold) vs the earlier grids' 8-table rotation (warm8):")
        print(both.reset_index().to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    b = d[d["set"] == "blind"]
    tb = t[t["set"] == "blind"]
    for lab, col in (("main 5b35f90", "pred_main_us"), ("new", "pred_new_us")):
        short = lab.split()[0]
        BOARD.add("indexer_dg", "blind", f"DeepGEMM indexer blind grid 3, {lab} model's committed prices",
                  (b[col] / b["median_us"] - 1.0) * 100.0, int((tb[f"{short}_goal"] == "met").sum()), len(tb))


def _indexer_blind4_regime(d) -> "np.ndarray":
    """Grid 4's regimes: verification next_n 2, else batch <= 4 / 5-32 / > 32 x context <= 8K / longer (batch > 32
    pooled), the rotation in brackets."""
    b, c = d["batch"].to_numpy(), d["context"].to_numpy()
    bat = np.where(b <= 4, "batch 1-4", np.where(b <= 32, "batch 5-32", "batch 33-128"))
    ctx = np.where(b > 32, "", np.where(c <= 8192, ", ctx <= 8K", ", ctx > 8K"))
    lab = np.where(d["next_n"].to_numpy() >= 2, "verify next_n 2", "decode " + bat.astype(object) + ctx.astype(object))
    return lab.astype(object) + " [" + d["rotation"].astype(str).to_numpy().astype(object) + "]"


def production_indexer_blind4_cold() -> None:
    """DeepGEMM's paged DSA-indexer kernel on keys that are not in L2 (the engine's case; kind indexer_dg_cold,
    hwmodels/roofline.py CHAIN_COLD_HEAD), fourth grid (lab/kernels/predict_deepgemm_indexer_blind4.py): decode shapes in
    no earlier measurement, measured with rotation cold (one fresh block table per call over a 400 MB pool), a few
    warm8 controls, and the batch-16 fit rows measured cold (set `fit`, fitted after the measurement, not blind).
    Priced BEFORE the one device call by main's model (8b74743: every row as indexer_dg) and by the cold kind with its
    terms derived from indexer_dg's (`new`, committed); `refit` = this tree's model, the cold kind's memory and
    fixed_us fitted on the cold fit rows after the measurement (its blind-row errors are NOT blind: computed after
    the rows were measured, though nothing was fitted on them). Grid 3's cold rows were looked at while the rule was
    chosen (their errors under this tree's model are printed apart)."""

    from hwmodels.spec import load_hardware
    from simulator.calibration import fit_deepgemm_indexer as FI

    preds = sorted(FI.DATA_DIR.glob("deepgemm_indexer_blind4_predictions_*.csv"))
    meas = sorted(FI.DATA_DIR.glob("deepgemm_indexer_blind4_nvidia-*.csv"))
    if not preds or not meas:
        return
    hw = load_hardware("H100-SXM")
    p, m = FI.load(preds[-1]), FI.load(meas[-1])
    key = ["part", "batch", "context", "next_n", "rows", "keys", "rotation"]
    d = m[key + ["median_us"]].merge(p, on=key, how="inner")
    d["pred_refit_us"] = FI.predict_us(d, hw, hw.efficiency)
    d["regime"] = _indexer_blind4_regime(d)
    goal = "goal median <= 10 %, p90 <= 25 %"
    t = _indexer_regime_table(d, ("blind", "control", "fit"), ("main", "new", "refit"), signed="sgn", miss="MISS")
    print(f"\n== H100-SXM: DeepGEMM paged indexer on cold keys, BLIND grid 4 ({meas[-1].name}; prices committed before "
          f"the measurement in {preds[-1].name}: main = 8b74743's model (indexer_dg), new = indexer_dg_cold derived "
          f"from indexer_dg's terms; refit = the cold kind fitted on the cold fit rows AFTER the measurement, not blind; "
          f"|model / measured - 1| in %, signed + = the model too slow; {goal})")
    print(t.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    b = d[d["set"] == "blind"]
    print("pooled blind rows (n = %d): " % len(b) + ", ".join(
        f"{lab} {np.median(np.abs(e)):.1f} / {np.quantile(np.abs(e), 0.9):.1f} % (signed {np.median(e):+.1f})"
        for lab in ("main", "new", "refit") for e in [(b[f"pred_{lab}_us"] / b["median_us"] - 1.0) * 100.0]))
    g3 = sorted(FI.DATA_DIR.glob("deepgemm_indexer_blind3_nvidia-*.csv"))
    if g3:
        c3 = FI.load(g3[-1])
        c3 = c3[(c3["part"] == "decode") & (c3["rotation"] == "cold")].reset_index(drop=True)
        e3 = (FI.predict_us(c3, hw, hw.efficiency) / c3["median_us"] - 1.0) * 100.0
        print(f"grid 3's cold rows (LOOKED-AT while choosing the cold rule; n = {len(c3)}), this tree's model: "
              f"{e3.abs().median():.1f} / {np.quantile(e3.abs(), 0.9):.1f} % (signed {e3.median():+.1f})")
    tb = t[t["set"] == "blind"]
    for lab, short in (("main 8b74743", "main"), ("new (derived cold kind)", "new")):
        BOARD.add("indexer_dg", "blind", f"DeepGEMM indexer blind grid 4 (cold keys), {lab} model's committed prices",
                  (b[f"pred_{short}_us"] / b["median_us"] - 1.0) * 100.0, int((tb[f"{short}_goal"] == "met").sum()),
                  len(tb))


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
                  "a fitted chain_queue)",
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
    src = sorted(FP.DATA_DIR.glob(FP.FRESH_GLOB))[-1].name
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


#: the MLA merge grid (lab/kernels/measure_production_attention.py --grid mla_merge): FlashInfer MLA shapes split into
#: 2-4 pieces, priced BEFORE measuring by the merge rule (commit of its predictions file) and by the model before it
MLA_MERGE_PRED = "production_attention_mla_merge_predictions.csv"
MLA_MERGE_BEFORE = "production_attention_mla_merge_predictions_a01d4c1.csv"
MLA_MERGE_GLOB = "production_attention_mla_merge_nvidia*.csv"


def _mla_merge(FP, fmt) -> None:
    """The MLA merge grid: per heads and merge row iterations, the committed predictions' |error| (and the model's
    before the merge rule, also committed before measuring)."""
    import numpy as np
    import pandas as pd

    from simulator.kernels import flashinfer as FI

    ms = sorted(FP.DATA_DIR.glob(MLA_MERGE_GLOB))
    pp, pb = FP.DATA_DIR / MLA_MERGE_PRED, FP.DATA_DIR / MLA_MERGE_BEFORE
    if not ms or not pp.is_file():
        print("\nMLA merge shapes: not measured yet (" + MLA_MERGE_PRED + " holds the predictions)")
        return
    meas = FP.load(ms[-1])
    keys = ["family", "model", "heads", "batch", "context"]
    m = meas.merge(pd.read_csv(pp)[keys + ["pred_us", "model_commit"]], on=keys, how="inner")
    if pb.is_file():
        m = m.merge(pd.read_csv(pb)[keys + ["pred_us"]].rename(columns={"pred_us": "before_us"}), on=keys, how="left")
    pl = FI.fi_mla_plan(m["batch"].to_numpy(float), 1.0, m["context"].to_numpy(float), m["heads"].to_numpy(float),
                        132)
    m["pieces"], m["iters"] = pl["per_tile"], pl["merge_iters"]
    m["err"] = (m["pred_us"] / m["median_us"] - 1.0) * 100.0
    m["err_before"] = (m["before_us"] / m["median_us"] - 1.0) * 100.0
    m["merge iters"] = np.where(m["iters"] <= 4, "2-4", np.where(m["iters"] <= 8, "5-8", "11-16"))
    print(f"\nMLA MERGE SHAPES (FlashInfer MLA split into 2-4 pieces, 16 / 128 heads, contexts 40-5000, batches 1-96, none "
          f"in the campaign's or the fresh grid's rows; predicted before measuring, commit "
          f"{str(m['model_commit'].iloc[0])[:10]}: {MLA_MERGE_PRED} vs {ms[-1].name}, {len(m)} shapes). before = the "
          f"model at a01d4c1 (a merge round priced as one 64-token stage), also committed before measuring")
    rows = []
    for (h, it), x in m.groupby(["heads", "merge iters"], sort=False):
        e, eb = x["err"].abs(), x["err_before"].abs()
        rows.append({"heads": int(h), "merge iters": it, "n": len(x), "median": e.median(),
                     "p90": np.percentile(e, 90), "signed": x["err"].median(), "before median": eb.median(),
                     "before p90": np.percentile(eb, 90), "before signed": x["err_before"].median()})
    t = pd.DataFrame(rows)
    t = t.iloc[np.lexsort((t["merge iters"].str.split("-").str[0].astype(int), t["heads"]))]
    t["goal"] = np.where((t["median"] <= 10.0) & (t["p90"] <= 25.0), "met", "MISSED")
    print(t.to_string(**fmt))
    e, eb = m["err"].abs(), m["err_before"].abs()
    print(f"all MLA merge shapes: median |error| {e.median():.1f} %, p90 {np.percentile(e, 90):.1f} %, median signed "
          f"{m['err'].median():+.1f} % (before: {eb.median():.1f} %, p90 {np.percentile(eb, 90):.1f} %, signed "
          f"{m['err_before'].median():+.1f} %)")


#: the fresh MLA / Triton grid (lab/kernels/measure_production_attention.py --grid fresh_mla): FlashMLA, FlashInfer MLA and
#: SGLang Triton shapes at batches no earlier grid measured, priced BEFORE measuring by the revised rules (commit of its
#: predictions file) and by the model at 1081e97 (before them), both files committed before the device run
FRESH_MLA_PRED = "production_attention_fresh_mla_predictions.csv"
#: what the fresh MLA / Triton shapes show where a regime misses (printed only while it misses)
FRESH_MLA_DIAGNOSIS = {
    ("fi_mla", "middle"): "B 40-192 at T 320-2048, 1-3 items per cluster, 12 % too fast (1081e97: 6.5 %): with the "
                          "merge link at 0.65 of a DRAM load the refit moved the per-item epilogue to 0, and these "
                          "shapes walk several items per cluster; the shipped model (per-item epilogue fitted on the MLA "
                          "fit rows, on the CTA's chain; looked-at): its pooled error is the line above",
    ("fi_mla", "short (<=256)"): "unsplit shapes within 10 % (1081e97: 16-17 % too slow), but 16 heads at B 768, T "
                                 "16 / 32 (6 items per cluster) are 28-30 % too fast (1081e97: 5-7 %): the per-item "
                                 "epilogue the campaign's fit rows cannot identify. The shipped model fits it on the MLA "
                                 "fit rows (3.13 us per item; looked-at here), then the per-item epilogue on the CTA's "
                                 "chain (CTA_FIXED_HIDDEN, the third MLA blind grid's test): see the shipped model's "
                                 "line above",
    ("sgl_triton", "middle"): "bf16 T 512 at B 192-768 (one split of 16 iterations, 5-9 waves) 11-16 % too slow, and "
                              "B 40 T 6144 15 % too fast: the fitted tile time of the one- and two-wave fit shapes",
    ("sgl_triton", "short (<=256)"): "fp8: two shapes timed with a wide spread (B 384 T 16: p20 58.7 / p80 77.6 us, "
                                     "median 71.3 us, above B 384 T 32's 46.9 us; B 192 T 128: 53.7 / 71.4 us) are "
                                     "24-47 % under the measured median (1081e97: 29-39 %); the other fp8 short "
                                     "shapes 5-17 % too fast",
}
FRESH_MLA_BEFORE = "production_attention_fresh_mla_predictions_1081e97.csv"
FRESH_MLA_GLOB = "production_attention_fresh_mla_nvidia*.csv"


def _blind_regimes(m):
    """Per family, K/V dtype, context and batch regime of a blind grid (simulator.calibration.blind_grids): |error|
    median / p90 and signed median of the revised model's committed prices and of the model before, each against
    the goal (median <= 10 %, p90 <= 25 %)."""
    import numpy as np
    import pandas as pd

    rows = []
    for key, x in m.groupby(["family", "kv", "ctx_regime", "batch_regime"]):
        e, eb = x["err"].abs(), x["err_before"].abs()
        rows.append({**dict(zip(("family", "kv", "ctx_regime", "batch_regime"), key)), "n": len(x),
                     "median": e.median(), "p90": np.percentile(e, 90), "signed": x["err"].median(),
                     "before median": eb.median(), "before p90": np.percentile(eb, 90),
                     "before signed": x["err_before"].median()})
    t = pd.DataFrame(rows)
    t["goal"] = np.where((t["median"] <= 10.0) & (t["p90"] <= 25.0), "met", "MISSED")
    t["before goal"] = np.where((t["before median"] <= 10.0) & (t["before p90"] <= 25.0), "met", "MISSED")
    return t


def fresh_mla_errors(FP):
    """The fresh_mla grid measured, joined with both committed predictions (simulator.calibration.blind_grids)."""
    from simulator.calibration.blind_grids import blind_errors
    return blind_errors(FP, FRESH_MLA_GLOB, FRESH_MLA_PRED, FRESH_MLA_BEFORE)


def _fresh_mla(FP, fmt) -> None:
    """The fresh_mla grid: per family, KV dtype and regime, the committed predictions' |error| and the 1081e97 model's."""
    import numpy as np

    m, name = fresh_mla_errors(FP)
    if m is None:
        print("\nfresh MLA / Triton shapes: not measured yet (" + FRESH_MLA_PRED + " holds the predictions)")
        return
    print(f"\nFRESH MLA / TRITON SHAPES (BLIND: FlashMLA and FlashInfer MLA at 16 / 128 heads, batches 3-768, contexts "
          f"16-6144; SGLang Triton bf16 / fp8 at batches 3-768; none in any earlier grid; predicted before measuring, "
          f"commit {str(m['model_commit'].iloc[0])[:10]}: {FRESH_MLA_PRED} vs {name}, {len(m)} shapes). before = the "
          "model at 1081e97 on the same shapes, also committed before measuring. Goal: median <= 10 %, p90 <= 25 %")
    t = _blind_regimes(m)
    print(t.to_string(**fmt))
    for fam, x in m.groupby("family"):
        e, eb = x["err"].abs(), x["err_before"].abs()
        print(f"  {fam}: median |error| {e.median():.1f} %, p90 {np.percentile(e, 90):.1f} % (1081e97: "
              f"{eb.median():.1f} %, p90 {np.percentile(eb, 90):.1f} %)")
    _board(m, "err", "blind", "fresh MLA / Triton grid", t)
    print(f"fresh MLA / Triton regimes met: {int((t['goal'] == 'met').sum())} of {len(t)} (1081e97: "
          f"{int((t['before goal'] == 'met').sum())})")
    from hwmodels.spec import load_hardware
    ev = FP.evaluate(m[[c for c in m.columns if c not in ("pred_us", "err_pct")]], load_hardware("H100-SXM"),
                     load_hardware("H100-SXM").efficiency)
    for fam in ("fi_mla", "flashmla"):
        e = ev.loc[ev["family"] == fam, "err_pct"].abs()
        if len(e):
            print(f"  {fam}: the shipped model now (changed since; looked-at): median |error| {e.median():.1f} %, p90 "
                  f"{np.percentile(e, 90):.1f} %")
    for (fam, ctx), why in FRESH_MLA_DIAGNOSIS.items():
        if ((t["family"] == fam) & (t["ctx_regime"] == ctx) & (t["goal"] == "MISSED")).any():
            print(f"  missed (fresh MLA): {fam} {ctx}: {why}")


#: the MLA per-request / per-item grids (lab/kernels/measure_production_attention.py --grid mla_fit2 / mla_blind2): the
#: fit rows (several requests per FlashMLA part / items per FlashInfer MLA cluster, fitted) and the BLIND grid, priced
#: before measuring by the model at 29e0e49 (before) and by the per-request / per-item structure at its prior rate
#: (42.5 GB/s per SM, terms refit on the campaign's fit rows only); both files committed before the device run
MLA_FIT2_GLOB = "production_attention_mla_fit2_nvidia*.csv"
MLA_BLIND2_PRED = "production_attention_mla_blind2_predictions.csv"
MLA_BLIND2_BEFORE = "production_attention_mla_blind2_predictions_29e0e49.csv"
MLA_BLIND2_GLOB = "production_attention_mla_blind2_nvidia*.csv"


def _mla_blind2(FP, hw, fmt) -> None:
    """The MLA fit2 rows (fitted: their error with the committed terms) and the blind2 grid: per family and regime the
    committed blind predictions (prior rate; the model at 29e0e49) and the committed fitted file priced after the refit
    on the fit2 rows (held out: never fitted, but priced after the blind errors were seen)."""
    import numpy as np

    from simulator.calibration.blind_grids import blind_errors

    fs = sorted(p for p in FP.DATA_DIR.glob(MLA_FIT2_GLOB) if "_grids" not in p.name)
    if fs:
        fr = FP.evaluate(FP.load(fs[-1]), hw, hw.efficiency)
        print(f"\nMLA FIT ROWS (FITTED: {fs[-1].name}, FlashMLA page 64 / FlashInfer MLA page 1, 16 / 128 heads, batch "
              "160-480 x context 1152-3840, 4-15 requests per FlashMLA part, 2-12 items per FlashInfer MLA cluster), "
              "error with the committed terms:")
        for (fam, h), x in fr.groupby(["family", "heads"]):
            e = x["err_pct"]
            print(f"  {fam} {int(h)} heads: n {len(x)}, median |error| {e.abs().median():.1f} %, max {e.abs().max():.1f} %,"
                  f" signed median {e.median():+.1f} %")
    m, name = blind_errors(FP, MLA_BLIND2_GLOB, MLA_BLIND2_PRED, MLA_BLIND2_BEFORE)
    if m is None:
        print("\nMLA blind shapes: not measured yet (" + MLA_BLIND2_PRED + " holds the predictions)")
        return
    # a blind shape measured in an earlier grid is not blind (fi_mla 16 heads B 40 T 5000 is one of the MLA merge
    # grid's rows): left out
    keys = ["family", "model", "batch", "context"]
    seen = set()
    for f in FP.DATA_DIR.glob("production_attention_*nvidia*.csv"):
        if not any(t in f.name for t in ("_grids", "mla_fit2", "mla_blind2")):
            seen |= set(map(tuple, FP.load(f)[keys].astype({"batch": float, "context": float}).to_numpy().tolist()))
    old = np.array([k in seen for k in map(tuple, m[keys].astype({"batch": float, "context": float}).to_numpy()
                                             .tolist())], dtype=bool)
    if old.any():
        print(f"\n(MLA blind grid: {int(old.sum())} shape(s) also in an earlier grid, left out: "
              + ", ".join(f"{r.family} {r.model} B {int(r.batch)} T {int(r.context)}" for r in m[old].itertuples()) + ")")
    m = m[~old].reset_index(drop=True)
    ev = FP.evaluate(m[[c for c in m.columns if c not in ("pred_us", "err_pct")]], hw, hw.efficiency)
    m["err_refit"] = ev["err_pct"].to_numpy()
    print(f"\nMLA BLIND SHAPES (FlashMLA and FlashInfer MLA at 16 / 32 / 128 heads, batches 200-900 x contexts 24-400 "
          f"and batches 3-40 x contexts 5000-60000, in no earlier MLA grid; {name}, {len(m)} shapes). BLIND = priced "
          f"and committed before measuring: this model's per-request Q tile / per-item store at the prior 42.5 GB/s "
          f"per SM (commit {str(m['model_commit'].iloc[0])[:10]}) and before = the model at 29e0e49; refit = the "
          "committed fitted file (rates scanned and terms fitted on the campaign's middle rows + the MLA fit rows: "
          "held out, not blind, and looked-at: FlashMLA's Q tile was moved to requests 2..R of a part and FlashInfer MLA's "
          "bytes term dropped for a fitted per-item epilogue after these errors were seen). Goal: median <= 10 %, "
          "p90 <= 25 %")
    t = _blind_regimes(m)
    rf = m.groupby(["family", "kv", "ctx_regime", "batch_regime"])["err_refit"]
    t["refit median"] = rf.apply(lambda e: e.abs().median()).to_numpy()
    t["refit p90"] = rf.apply(lambda e: np.percentile(e.abs(), 90)).to_numpy()
    t["refit goal"] = np.where((t["refit median"] <= 10.0) & (t["refit p90"] <= 25.0), "met", "MISSED")
    print(t.drop(columns=["kv"]).to_string(**fmt))
    for fam, x in m.groupby("family"):
        e, eb, er = x["err"].abs(), x["err_before"].abs(), x["err_refit"].abs()
        print(f"  {fam}: blind median |error| {e.median():.1f} %, p90 {np.percentile(e, 90):.1f} % (29e0e49: "
              f"{eb.median():.1f} %, p90 {np.percentile(eb, 90):.1f} %; refit {er.median():.1f} %, p90 "
              f"{np.percentile(er, 90):.1f} %)")
    _board(m, "err", "blind", "MLA blind grid 2 (requests per part, items per cluster)", t)
    _board(m, "err_refit", "looked-at", "MLA blind grid 2, the shipped refit", t, goal="refit goal")
    print(f"MLA blind regimes met: {int((t['goal'] == 'met').sum())} of {len(t)} (29e0e49: "
          f"{int((t['before goal'] == 'met').sum())}; refit: {int((t['refit goal'] == 'met').sum())})")


#: the third MLA blind grid (lab/kernels/measure_production_attention.py --grid mla_blind3): DeepSeek-V3's 128 MLA heads
#: at tensor-parallel 1 / 2 / 4 / 8 (128 / 64 / 32 / 16 heads), FlashInfer MLA and FlashMLA, batch 1-640 x context
#: 20-131072, in no earlier grid; priced and committed BEFORE measuring by the revised FlashInfer MLA rules (per-item
#: epilogue on the CTA's chain, the stages' tensor work on the per-stage chain), by the model at 65f5d1f (before) and by
#: two alternatives refitted the same way (tensor_body: the compute term kept; partial0.4: a partial last stage at 0.4 +
#: 0.6 x its tokens / 64 of a stage, which the fit rows' scan rejects). FlashMLA's model did not change (its prices are
#: the same in every file)
MLA_BLIND3_PRED = "production_attention_mla_blind3_predictions.csv"
MLA_BLIND3_BEFORE = "production_attention_mla_blind3_predictions_65f5d1f.csv"
MLA_BLIND3_VARIANTS = {"tensor_body": "production_attention_mla_blind3_predictions_tensor_body.csv",
                       "partial0.4": "production_attention_mla_blind3_predictions_partial0.4.csv"}
MLA_BLIND3_GLOB = "production_attention_mla_blind3_nvidia*.csv"
#: what the third MLA blind grid shows where a regime of the shipped rules misses (printed only while it misses)
MLA_BLIND3_DIAGNOSIS = {
    ("fi_mla", "middle", "large (>=256)"): "16-64 heads at B 280 T 3000 13 % too fast (128 heads +9 %): 3-5 "
                                           "items per cluster, bandwidth-bound; without the compute term the body is "
                                           "the bytes alone at the refitted rate (the tensor_body alternative, which "
                                           "keeps the compute term, gives -13 / -11 / -4 % at 16 / 32 / 64 heads)",
}


def _mla_blind3(FP, fmt) -> None:
    """The third MLA blind grid: per family and regime the committed prices of the revised rules, of the model at
    65f5d1f and of the two alternatives, each against the goal (median <= 10 %, p90 <= 25 %)."""
    import numpy as np
    import pandas as pd

    from simulator.calibration.blind_grids import blind_errors

    m, name = blind_errors(FP, MLA_BLIND3_GLOB, MLA_BLIND3_PRED, MLA_BLIND3_BEFORE)
    if m is None:
        print("\nMLA blind grid 3: not measured yet (" + MLA_BLIND3_PRED + " holds the predictions)")
        return
    keys = ["family", "heads", "batch", "context"]
    for v, f in MLA_BLIND3_VARIANTS.items():
        p = pd.read_csv(FP.DATA_DIR / f)[keys + ["pred_us"]].rename(columns={"pred_us": "pred_" + v})
        m = m.merge(p, on=keys, how="left")
        m["err_" + v] = (m["pred_" + v] / m["median_us"] - 1.0) * 100.0
    print(f"\nMLA BLIND GRID 3 (BLIND: DeepSeek-V3's MLA heads at TP 1-8 = 128 / 64 / 32 / 16 heads, FlashInfer MLA "
          f"and FlashMLA, batch 1-640 x context 20-131072, in no earlier grid; {name}, {len(m)} shapes). Priced and "
          f"committed before measuring: the revised FlashInfer MLA rules (commit {str(m['model_commit'].iloc[0])[:10]}"
          "), before = the model at 65f5d1f, and two alternatives (tensor_body: compute term kept; partial0.4: a "
          "partial last stage discounted). FlashMLA unchanged. Goal: median <= 10 %, p90 <= 25 %")
    t = _blind_regimes(m)
    for v in MLA_BLIND3_VARIANTS:
        g = m.groupby(["family", "kv", "ctx_regime", "batch_regime"])["err_" + v]
        t[v + " median"] = g.apply(lambda e: e.abs().median()).to_numpy()
        t[v + " p90"] = g.apply(lambda e: np.percentile(e.abs(), 90)).to_numpy()
    print(t.drop(columns=["kv"]).to_string(**fmt))
    for fam, x in m.groupby("family"):
        e, eb = x["err"].abs(), x["err_before"].abs()
        alt = "; ".join(f"{v} {x['err_' + v].abs().median():.1f} %, p90 {np.percentile(x['err_' + v].abs(), 90):.1f} %"
                        for v in MLA_BLIND3_VARIANTS)
        print(f"  {fam}: blind median |error| {e.median():.1f} %, p90 {np.percentile(e, 90):.1f} % (65f5d1f: "
              f"{eb.median():.1f} %, p90 {np.percentile(eb, 90):.1f} %; {alt})")
    _board(m, "err", "blind", "MLA blind grid 3 (DeepSeek-V3 heads at TP 1-8)", t)
    print(f"MLA blind grid 3 regimes met: {int((t['goal'] == 'met').sum())} of {len(t)} (65f5d1f: "
          f"{int((t['before goal'] == 'met').sum())})")
    for (fam, ctx, bat), why in MLA_BLIND3_DIAGNOSIS.items():
        if ((t["family"] == fam) & (t["ctx_regime"] == ctx) & (t["batch_regime"] == bat) & (t["goal"] == "MISSED")).any():
            print(f"  missed (MLA blind 3): {fam} {ctx} {bat}: {why}")

#: the fourth MLA blind grid (lab/kernels/measure_production_attention.py --grid mla_blind4, run_mla_blind4_device.sh):
#: DeepSeek-V3's 128 and Kimi-K2's 64 MLA heads at TP 1-8 (8-128 heads), in no earlier grid, priced and committed
#: BEFORE measuring by the model with FlashInfer MLA's tail round (hwmodels/roofline.py TAIL_ROUND_KINDS), by main's
#: model at 8b74743 and by two alternatives (tail_unsplit: the tail round for unsplit calls only; q_l2: both families'
#: Q as an L2 re-read); the batch-64 / 300 short shapes were also timed with a fresh Q per replay (--fresh-q)
MLA_BLIND4_PRED = "production_attention_mla_blind4_predictions.csv"
MLA_BLIND4_BEFORE = "production_attention_mla_blind4_predictions_8b74743.csv"
MLA_BLIND4_VARIANTS = {"tail_unsplit": "production_attention_mla_blind4_predictions_tail_unsplit.csv",
                       "q_l2": "production_attention_mla_blind4_predictions_q_l2.csv"}
MLA_BLIND4_GLOB = "production_attention_mla_blind4_nvidia*.csv"
MLA_BLIND4_FRESHQ_GLOB = "production_attention_mla_blind4_freshq_nvidia*.csv"
#: what the fourth MLA blind grid shows where a regime misses (printed only while it misses)
MLA_BLIND4_DIAGNOSIS = {
    ("fi_mla", "short (<=256)", "mid (64)"): "128 heads at B 64 T 24 / 72 / 176 +37 / +23 / +18 % and T 24 at 8-64 "
                                             "heads +17..19 %: the grid's Q (9.4 MB at 128 heads) stays in L2 between "
                                             "graph replays; timed with a fresh Q per replay the same calls are 3-32 % "
                                             "slower and the model (Q from DRAM) is within -9..+7 % of them at 16-128 "
                                             "heads (the table below); main's model misses the same shapes (+15..37 %)",
    ("fi_mla", "short (<=256)", "large (>=256)"): "B 300 T 48 (3 rounds of one-stage items): 8 / 16 heads +13 / +9 %, "
                                                  "64 / 128 heads -12 / -10 % (main's model: +10 / +6 %, -11 / -8 %): "
                                                  "the refit's per-item CTA time (3.28 -> 3.62 us) moved the median "
                                                  "from 8.1 to 10.3 %",
}


def _mla_blind4(FP, fmt) -> None:
    """The fourth MLA blind grid: per family and regime the committed prices of the tail-round model, of main's model
    at 8b74743 and of the two alternatives against the goal (median <= 10 %, p90 <= 25 %); then the short shapes
    timed with the same Q every replay (the grid) and with a fresh Q per replay."""
    import numpy as np
    import pandas as pd

    from simulator.calibration.blind_grids import blind_errors

    m, name = blind_errors(FP, MLA_BLIND4_GLOB, MLA_BLIND4_PRED, MLA_BLIND4_BEFORE)
    if m is None:
        print("\nMLA blind grid 4: not measured yet (" + MLA_BLIND4_PRED + " holds the predictions)")
        return
    keys = ["family", "heads", "batch", "context"]
    for v, f in MLA_BLIND4_VARIANTS.items():
        p = pd.read_csv(FP.DATA_DIR / f)[keys + ["pred_us"]].rename(columns={"pred_us": "pred_" + v})
        m = m.merge(p, on=keys, how="left")
        m["err_" + v] = (m["pred_" + v] / m["median_us"] - 1.0) * 100.0
    print(f"\nMLA BLIND GRID 4 (BLIND: DeepSeek-V3's 128 and Kimi-K2's 64 MLA heads at TP 1-8 = 8-128 heads, "
          f"FlashInfer MLA and FlashMLA, batch 2-420 x context 24-70000, in no earlier grid; {name}, {len(m)} shapes). "
          f"Priced and committed before measuring: the tail-round model (commit {str(m['model_commit'].iloc[0])[:10]}"
          f"), before = main's model at {str(m['before_commit'].iloc[0])[:7]}, and two alternatives (tail_unsplit: "
          "the tail round for unsplit calls only; q_l2: Q as an L2 re-read). Goal: median <= 10 %, p90 <= 25 %. "
          "SHIPPED: main's model (the tail round switched off, roofline TAIL_ROUND_KINDS = ()): the tail-round model met "
          "fewer regimes (it fixes the middle regimes it was built for and loses the short ones)")
    t = _blind_regimes(m)
    for v in MLA_BLIND4_VARIANTS:
        g = m.groupby(["family", "kv", "ctx_regime", "batch_regime"])["err_" + v]
        t[v + " median"] = g.apply(lambda e: e.abs().median()).to_numpy()
        t[v + " p90"] = g.apply(lambda e: np.percentile(e.abs(), 90)).to_numpy()
    print(t.drop(columns=["kv"]).to_string(**fmt))
    for fam, x in m.groupby("family"):
        e, eb = x["err"].abs(), x["err_before"].abs()
        alt = "; ".join(f"{v} {x['err_' + v].abs().median():.1f} %, p90 {np.percentile(x['err_' + v].abs(), 90):.1f} %"
                        for v in MLA_BLIND4_VARIANTS)
        print(f"  {fam}: blind median |error| {e.median():.1f} %, p90 {np.percentile(e, 90):.1f} % (8b74743: "
              f"{eb.median():.1f} %, p90 {np.percentile(eb, 90):.1f} %; {alt})")
    _board(m, "err", "blind", "MLA blind grid 4, tail-round model's committed prices (not shipped)", t)
    _board(m, "err_before", "blind", "MLA blind grid 4, main 8b74743 model's committed prices (shipped)", t,
           goal="before goal")
    print(f"MLA blind grid 4 regimes met: {int((t['goal'] == 'met').sum())} of {len(t)} (8b74743: "
          f"{int((t['before goal'] == 'met').sum())})")
    for (fam, ctx, bat), why in MLA_BLIND4_DIAGNOSIS.items():
        if ((t["family"] == fam) & (t["ctx_regime"] == ctx) & (t["batch_regime"] == bat) & (t["goal"] == "MISSED")).any():
            print(f"  missed (MLA blind 4): {fam} {ctx} {bat}: {why}")
    fq = sorted(p for p in FP.DATA_DIR.glob(MLA_BLIND4_FRESHQ_GLOB) if "_grids" not in p.name)
    if not fq:
        return
    q = FP.load(fq[-1])[keys + ["median_us"]].rename(columns={"median_us": "fresh_q_us"})
    q = m.merge(q, on=keys, how="inner")
    q["fresh/same"] = q["fresh_q_us"] / q["median_us"]
    q["err_fresh"] = (q["pred_us"] / q["fresh_q_us"] - 1.0) * 100.0
    q["q_l2 err"] = q["err_q_l2"]
    print(f"  the short shapes timed twice ({fq[-1].name}): the same Q every replay (the grid: Q stays in L2 when it "
          "fits) and a fresh Q per replay (rotated with the K/V copies: as an engine's Q that the L2 no longer holds); "
          "err = the tail-round model (Q from DRAM) against the grid's time, err_fresh against the fresh-Q time, q_l2 err = "
          "the q_l2 alternative against the grid's time")
    cols = keys + ["median_us", "fresh_q_us", "fresh/same", "err", "err_fresh", "q_l2 err"]
    print(q[cols].sort_values(keys).to_string(index=False, float_format=lambda v: f"{v:.2f}"))


#: the fifth MLA blind grid (lab/kernels/measure_production_attention.py --grid mla_blind5, run_mla_blind5_device.sh):
#: DeepSeek-V3's 128 MLA heads at TP 1-8 (16-128 heads), short contexts 16-240 at batch 1-256 and middle controls, in no
#: earlier grid, priced and committed BEFORE measuring by the model with FlashInfer MLA's per-item first-stage fill
#: (simulator/kernels/flashinfer.py FI_MLA_FILL_RATE_SM, 42.5 GB/s per SM), by main's model at 6648a5d and by two
#: alternatives (fill21 / fill30: the fill at 21.4 / 30 GB/s per SM); FlashMLA unchanged (same prices in every file).
#: The batch 24-256 short shapes were also timed with a fresh Q per replay (--fresh-q)
MLA_BLIND5_PRED = "production_attention_mla_blind5_predictions.csv"
MLA_BLIND5_BEFORE = "production_attention_mla_blind5_predictions_6648a5d.csv"
MLA_BLIND5_VARIANTS = {"fill21": "production_attention_mla_blind5_predictions_fill21.csv",
                       "fill30": "production_attention_mla_blind5_predictions_fill30.csv"}
MLA_BLIND5_GLOB = "production_attention_mla_blind5_nvidia*.csv"
MLA_BLIND5_FRESHQ_GLOB = "production_attention_mla_blind5_freshq_nvidia*.csv"
#: which model the fifth MLA blind grid's board rows call shipped (set from the blind result, see KNOWN_GAPS)
MLA_BLIND5_SHIPPED = "fill"


def _mla_blind5(FP, fmt) -> None:
    """The fifth MLA blind grid: per family and regime the committed prices of the first-stage fill model, of main's
    model at 6648a5d and of the two alternative fill rates against the goal (median <= 10 %, p90 <= 25 %); then the
    short shapes timed with a fresh Q per replay."""
    import numpy as np
    import pandas as pd

    from simulator.calibration.blind_grids import blind_errors

    m, name = blind_errors(FP, MLA_BLIND5_GLOB, MLA_BLIND5_PRED, MLA_BLIND5_BEFORE)
    if m is None:
        print("\nMLA blind grid 5: not measured yet (" + MLA_BLIND5_PRED + " holds the predictions)")
        return
    keys = ["family", "heads", "batch", "context"]
    for v, f in MLA_BLIND5_VARIANTS.items():
        p = pd.read_csv(FP.DATA_DIR / f)[keys + ["pred_us"]].rename(columns={"pred_us": "pred_" + v})
        m = m.merge(p, on=keys, how="left")
        m["err_" + v] = (m["pred_" + v] / m["median_us"] - 1.0) * 100.0
    print(f"\nMLA BLIND GRID 5 (BLIND: DeepSeek-V3's MLA heads at TP 1-8 = 16-128 heads, FlashInfer MLA and FlashMLA, "
          f"batch 1-256 x context 16-240 + middle controls (480-2000), in no earlier grid; {name}, {len(m)} shapes). "
          f"Priced and committed before measuring: the first-stage fill model (commit "
          f"{str(m['model_commit'].iloc[0])[:10]}, FI_MLA_FILL_RATE_SM 42.5 GB/s per SM), before = main's model at "
          f"{str(m['before_commit'].iloc[0])[:7]}, and fill21 / fill30 (the fill at 21.4 / 30 GB/s per SM). FlashMLA "
          "is priced alike by all. Goal: median <= 10 %, p90 <= 25 %")
    t = _blind_regimes(m)
    for v in MLA_BLIND5_VARIANTS:
        g = m.groupby(["family", "kv", "ctx_regime", "batch_regime"])["err_" + v]
        t[v + " median"] = g.apply(lambda e: e.abs().median()).to_numpy()
        t[v + " p90"] = g.apply(lambda e: np.percentile(e.abs(), 90)).to_numpy()
    print(t.drop(columns=["kv"]).to_string(**fmt))
    for fam, x in m.groupby("family"):
        e, eb = x["err"].abs(), x["err_before"].abs()
        alt = "; ".join(f"{v} {x['err_' + v].abs().median():.1f} %, p90 {np.percentile(x['err_' + v].abs(), 90):.1f} %"
                        for v in MLA_BLIND5_VARIANTS)
        print(f"  {fam}: blind median |error| {e.median():.1f} %, p90 {np.percentile(e, 90):.1f} % (6648a5d: "
              f"{eb.median():.1f} %, p90 {np.percentile(eb, 90):.1f} %; {alt})")
    # FlashMLA is priced alike by both models: one board row for it; FlashInfer MLA's two models side by side
    ship = MLA_BLIND5_SHIPPED == "fill"
    fi = m["family"] == "fi_mla"
    _board(m[fi], "err", "blind", "MLA blind grid 5, first-stage fill model's committed prices"
           + (" (shipped)" if ship else " (not shipped)"), t)
    _board(m[fi], "err_before", "blind", "MLA blind grid 5, main 6648a5d model's committed prices"
           + (" (not shipped)" if ship else " (shipped)"), t, goal="before goal")
    _board(m[~fi], "err", "blind", "MLA blind grid 5, committed prices (FlashMLA unchanged)", t)
    print(f"MLA blind grid 5 regimes met: {int((t['goal'] == 'met').sum())} of {len(t)} (6648a5d: "
          f"{int((t['before goal'] == 'met').sum())})")
    fq = sorted(p for p in FP.DATA_DIR.glob(MLA_BLIND5_FRESHQ_GLOB) if "_grids" not in p.name)
    if not fq:
        return
    q = FP.load(fq[-1])[keys + ["median_us"]].rename(columns={"median_us": "fresh_q_us"})
    q = m.merge(q, on=keys, how="inner")
    q["fresh/same"] = q["fresh_q_us"] / q["median_us"]
    q["err_fresh"] = (q["pred_us"] / q["fresh_q_us"] - 1.0) * 100.0
    q["before err_fresh"] = (q["before_us"] / q["fresh_q_us"] - 1.0) * 100.0
    print(f"  the short shapes timed twice ({fq[-1].name}): the same Q every replay (the grid) and a fresh Q per "
          "replay; err / err_fresh = the fill model against each, before = main's model")
    cols = keys + ["median_us", "fresh_q_us", "fresh/same", "err", "err_fresh", "err_before", "before err_fresh"]
    print(q[cols].sort_values(keys).to_string(index=False, float_format=lambda v: f"{v:.2f}"))



#: the sixth MLA blind grid (lab/kernels/measure_production_attention.py --grid mla_blind6, run_mla_blind6_device.sh):
#: DeepSeek-V3's 128 MLA heads at TP 1-8 (16-128 heads), batch 1-28 at context 36-448 and two controls (B 48 T 1280,
#: B 192 T 72), in no earlier grid, priced and committed BEFORE measuring by the small-batch model (FlashInfer MLA's
#: per-row merge link FI_MLA_MERGE_ROW_LINKS; FlashMLA's PDL combine FM_COMBINE_PDL and out-of-bound V zero-fill
#: FM_OOB_TOKEN_S), by main's model at cbe4f0b and by oob15 (the zero-fill at 15 ns per token). Every shape was timed
#: with the same Q every replay (the grid: an engine's Q is written by the kernel just before the call, so it is in L2)
#: and again with a fresh Q per replay (--fresh-q)
MLA_BLIND6_PRED = "production_attention_mla_blind6_predictions.csv"
MLA_BLIND6_BEFORE = "production_attention_mla_blind6_predictions_cbe4f0b.csv"
MLA_BLIND6_VARIANTS = {"oob15": "production_attention_mla_blind6_predictions_oob15.csv"}
MLA_BLIND6_GLOB = "production_attention_mla_blind6_nvidia*.csv"
MLA_BLIND6_FRESHQ_GLOB = "production_attention_mla_blind6_freshq_nvidia*.csv"
#: which model the sixth MLA blind grid's board rows call shipped (set from the blind result, see KNOWN_GAPS)
MLA_BLIND6_SHIPPED = "small_batch"


def _mla_blind6(FP, fmt) -> None:
    """The sixth MLA blind grid: per family and regime the committed prices of the small-batch model, of main's model
    at cbe4f0b and of oob15 against the goal (median <= 10 %, p90 <= 25 %), against the same-Q times (the grid) and
    the fresh-Q times."""
    import numpy as np
    import pandas as pd

    from simulator.calibration.blind_grids import blind_errors

    m, name = blind_errors(FP, MLA_BLIND6_GLOB, MLA_BLIND6_PRED, MLA_BLIND6_BEFORE)
    if m is None:
        print("\nMLA blind grid 6: not measured yet (" + MLA_BLIND6_PRED + " holds the predictions)")
        return
    keys = ["family", "heads", "batch", "context"]
    for v, f in MLA_BLIND6_VARIANTS.items():
        p = pd.read_csv(FP.DATA_DIR / f)[keys + ["pred_us"]].rename(columns={"pred_us": "pred_" + v})
        m = m.merge(p, on=keys, how="left")
        m["err_" + v] = (m["pred_" + v] / m["median_us"] - 1.0) * 100.0
    print(f"\nMLA BLIND GRID 6 (BLIND: DeepSeek-V3's MLA heads at TP 1-8 = 16-128 heads, FlashInfer MLA and FlashMLA, "
          f"batch 1-28 x context 36-448 + controls (B 48 T 1280, B 192 T 72), in no earlier grid; {name}, {len(m)} "
          f"shapes, the same Q every replay). Priced and committed before measuring: the small-batch model (commit "
          f"{str(m['model_commit'].iloc[0])[:10]}: FlashInfer MLA one more merge link per row iteration; FlashMLA's "
          f"combine under PDL and the out-of-bound V zero-fill at 8.8 ns per token), before = main's model at "
          f"{str(m['before_commit'].iloc[0])[:7]}, and oob15 (the zero-fill at 15 ns per token). The small-batch rules "
          "were chosen with the fifth grid's and the campaign's small-batch short rows seen (looked-at there; these "
          "shapes are blind). Goal: median <= 10 %, p90 <= 25 %")
    t = _blind_regimes(m)
    for v in MLA_BLIND6_VARIANTS:
        g = m.groupby(["family", "kv", "ctx_regime", "batch_regime"])["err_" + v]
        t[v + " median"] = g.apply(lambda e: e.abs().median()).to_numpy()
        t[v + " p90"] = g.apply(lambda e: np.percentile(e.abs(), 90)).to_numpy()
    print(t.drop(columns=["kv"]).to_string(**fmt))
    for fam, x in m.groupby("family"):
        e, eb = x["err"].abs(), x["err_before"].abs()
        alt = "; ".join(f"{v} {x['err_' + v].abs().median():.1f} %, p90 {np.percentile(x['err_' + v].abs(), 90):.1f} %"
                        for v in MLA_BLIND6_VARIANTS)
        print(f"  {fam}: blind median |error| {e.median():.1f} %, p90 {np.percentile(e, 90):.1f} % (cbe4f0b: "
              f"{eb.median():.1f} %, p90 {np.percentile(eb, 90):.1f} %; {alt})")
    ship = MLA_BLIND6_SHIPPED == "small_batch"
    _board(m, "err", "blind", "MLA blind grid 6, small-batch model's committed prices"
           + (" (shipped)" if ship else " (not shipped)"), t)
    _board(m, "err_before", "blind", "MLA blind grid 6, main cbe4f0b model's committed prices"
           + (" (not shipped)" if ship else " (shipped)"), t, goal="before goal")
    print(f"MLA blind grid 6 regimes met: {int((t['goal'] == 'met').sum())} of {len(t)} (cbe4f0b: "
          f"{int((t['before goal'] == 'met').sum())})")
    fq = sorted(p for p in FP.DATA_DIR.glob(MLA_BLIND6_FRESHQ_GLOB) if "_grids" not in p.name)
    if not fq:
        return
    q = FP.load(fq[-1])[keys + ["median_us"]].rename(columns={"median_us": "fresh_q_us"})
    q = m.merge(q, on=keys, how="inner")
    q["fresh/same"] = q["fresh_q_us"] / q["median_us"]
    q["err"] = (q["pred_us"] / q["fresh_q_us"] - 1.0) * 100.0
    q["err_before"] = (q["before_us"] / q["fresh_q_us"] - 1.0) * 100.0
    tq = _blind_regimes(q)
    print(f"  the same shapes timed with a fresh Q per replay ({fq[-1].name}, {len(q)} shapes; fresh / same time: median "
          f"{q['fresh/same'].median():.3f}, max {q['fresh/same'].max():.3f}): the committed prices against those times")
    print(tq.drop(columns=["kv"]).to_string(**fmt))
    _board(q, "err", "blind", "MLA blind grid 6 fresh-Q times, small-batch model's committed prices", tq)
    _board(q, "err_before", "blind", "MLA blind grid 6 fresh-Q times, main cbe4f0b model's committed prices", tq,
           goal="before goal")

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
    ops = FP.build_ops(m, hw.units, float(hw.smem_per_unit_bytes or 233472))
    m["err_now"] = (FP.predict_us(ops, hw, hw.efficiency, len(m)) / m["median_us"] - 1.0) * 100.0
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
    if m is None or not (FP.DATA_DIR / pdl).is_file():
        print("\nFLASHINFER CHECK SHAPES 3: not measured yet (" + pred + " holds the predictions)")
        return
    timed_of = m.attrs["timed_of"]
    keys = [k for k in FP.SHAPE_KEYS if k in m.columns]
    pp = pd.read_csv(FP.DATA_DIR / pdl)
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

    fs = sorted(FP.DATA_DIR.glob("fi_pdl_probe_nvidia*.csv"))
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
        r1 = _shapes(FP.DATA_DIR / rev1, keys)
        m = m.merge(r1[keys + ["pred_us"]].rename(columns={"pred_us": "rev1_us"}), on=keys, how="inner")
        m["rev1_err_pct"] = (m["rev1_us"] / m["median_us"] - 1.0) * 100.0
        labels = ["main", "rev1", "new"]
    ops = FP.build_ops(m, hw.units, float(hw.smem_per_unit_bytes or 233472))
    m["now_err_pct"] = (FP.predict_us(ops, hw, hw.efficiency, len(m)) / m["median_us"] - 1.0) * 100.0
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
        for ctx, why in FI_DEC_BLIND_DIAGNOSIS.items():
            if ((t["ctx_regime"] == ctx) & (t["new_goal"] == "MISSED")).any():
                print(f"  missed ({title}): {ctx}: {why}")


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


def _fi_dec_grid_summary(m, t, grid: int, labels, blind) -> None:
    """Print each model label's pooled |error| median / p90, signed median and regimes met on a fi_decode blind grid
    (rows `m` with <label>_err_pct, regime table `t` with <label>_goal), and add the `blind` labels' committed prices to
    the board."""
    for lab in labels:
        e = m[f"{lab}_err_pct"]
        print(f"  {lab}: median |error| {np.median(e.abs()):.1f} %, p90 {np.percentile(e.abs(), 90):.1f} %, signed "
              f"{np.median(e):+.1f} %; regimes met {int((t[lab + '_goal'] == 'met').sum())} of {len(t)}")
    for lab in blind:
        BOARD.add("fi_decode", "blind", f"fi_decode blind grid {grid}, {lab} model's committed prices",
                  m[f"{lab}_err_pct"], int((t[f"{lab}_goal"] == "met").sum()), len(t))


def _fi_dec_blind3(FP, hw, fmt) -> None:
    """The third CUDA-core decode blind grid: per K/V dtype and regime, |error| of main's and the new model's committed
    prices and of the committed fitted file (now); the fp8 lone-CTA fit rows are shown apart."""
    from simulator.calibration.blind_grids import blind_errors

    pred, before, glob = FI_DEC_BLIND3
    m, name = blind_errors(FP, glob, pred, before)
    if m is None:
        print(f"\nFI_DECODE BLIND GRID 3: not measured yet ({pred} holds the predictions)")
        return
    fit = FP._is_fi_lone_fit(m)
    ops = FP.build_ops(m, hw.units, float(hw.smem_per_unit_bytes or 233472))
    m["now_err_pct"] = (FP.predict_us(ops, hw, hw.efficiency, len(m)) / m["median_us"] - 1.0) * 100.0
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
    for (kv, ctx), why in FI_DEC_BLIND3_DIAGNOSIS.items():
        if ((t["kv"] == kv) & (t["ctx_regime"] == ctx) & (t["now_goal"] == "MISSED")).any():
            print(f"  missed (fi_decode blind grid 3): {kv} {ctx}: {why}")

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
    ops = FP.build_ops(m, hw.units, float(hw.smem_per_unit_bytes or 233472))
    m["now_err_pct"] = (FP.predict_us(ops, hw, hw.efficiency, len(m)) / m["median_us"] - 1.0) * 100.0
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
    for (kv, ctx), why in FI_DEC_BLIND4_DIAGNOSIS.items():
        if ((t["kv"] == kv) & (t["ctx_regime"] == ctx) & (t["now_goal"] == "MISSED")).any():
            print(f"  missed (fi_decode blind grid 4): {kv} {ctx}: {why}")


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
    from simulator.calibration.blind_grids import blind_errors

    pred, before, glob = FI_DEC_BLIND5
    m, name = blind_errors(FP, glob, pred, before)
    if m is None:
        print(f"\nFI_DECODE BLIND GRID 5: not measured yet ({pred} holds the predictions)")
        return
    ops = FP.build_ops(m, hw.units, float(hw.smem_per_unit_bytes or 233472))
    m["now_err_pct"] = (FP.predict_us(ops, hw, hw.efficiency, len(m)) / m["median_us"] - 1.0) * 100.0
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
    for reg, why in FI_DEC_BLIND5_DIAGNOSIS.items():
        if ((t["regime"] == reg) & (t["now_goal"] == "MISSED")).any():
            print(f"  missed (fi_decode blind grid 5): {reg}: {why}")


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
    import pandas as pd

    from simulator.calibration.blind_grids import blind_errors

    pred, before, glob = FI_DEC_BLIND6
    m, name = blind_errors(FP, glob, pred, before)
    if m is None:
        print(f"\nFI_DECODE BLIND GRID 6: not measured yet ({pred} holds the predictions)")
        return
    keys = ["heads", "kv_heads", "dtype", "batch", "context", "page_size"]
    grp = pd.read_csv(FP.DATA_DIR / pred)[keys + ["group"]]
    m = m.merge(grp, on=keys, how="left")
    ops = FP.build_ops(m, hw.units, float(hw.smem_per_unit_bytes or 233472))
    m["now_err_pct"] = (FP.predict_us(ops, hw, hw.efficiency, len(m)) / m["median_us"] - 1.0) * 100.0
    m["main_err_pct"], m["new_err_pct"] = m["err_before"], m["err"]
    m["regime"] = m["group"]
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
    for reg, why in FI_DEC_BLIND6_DIAGNOSIS.items():
        if ((t["regime"] == reg) & (t["now_goal"] == "MISSED")).any():
            print(f"  missed (fi_decode blind grid 6): {reg}: {why}")


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

    path = FP.DATA_DIR / FI_CTA_PROBE
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
    from simulator.calibration.blind_grids import blind_errors

    pred, before, glob = FI_DEC_BLIND7
    m, name = blind_errors(FP, glob, pred, before)
    if m is None:
        print(f"\nFI_DECODE BLIND GRID 7: not measured yet ({pred}: the candidate FI_GRAPH_PLACEMENT on; "
              f"{before}: main; both committed before any measurement; lab/kernels/measure_production_attention.py "
              "--grid fi_dec_blind7)")
        return
    keys = ["heads", "kv_heads", "dtype", "batch", "context", "page_size"]
    m = m.merge(pd.read_csv(FP.DATA_DIR / pred)[keys + ["group"]], on=keys, how="left")
    m["main_err_pct"], m["new_err_pct"], m["regime"] = m["err_before"], m["err"], m["group"]
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
    import pandas as pd

    from simulator.calibration.blind_grids import blind_errors

    pred, before, glob = FI_DEC_BLIND8
    m, name = blind_errors(FP, glob, pred, before)
    if m is None:
        print(f"\nFI_DECODE BLIND GRID 8: not measured yet ({pred}: the candidate; {before}: main; "
              "lab/kernels/measure_production_attention.py --grid fi_dec_blind8)")
        return
    keys = ["heads", "kv_heads", "dtype", "batch", "context", "page_size"]
    m = m.merge(pd.read_csv(FP.DATA_DIR / pred)[keys + ["group"]], on=keys, how="left")
    ops = FP.build_ops(m, hw.units, float(hw.smem_per_unit_bytes or 233472))
    m["now_err_pct"] = (FP.predict_us(ops, hw, hw.efficiency, len(m)) / m["median_us"] - 1.0) * 100.0
    m["main_err_pct"], m["new_err_pct"], m["regime"] = m["err_before"], m["err"], m["group"]
    print(f"\nFI_DECODE BLIND GRID 8 (FlashInfer CUDA-core decode, {len(m)} blind shapes of "
          f"{m.attrs.get('timed_of', len(m))} timed, {name}; BLIND: main = the model at "
          f"{str(m['before_commit'].iloc[0])[:7]} ({before}), new = {str(m['model_commit'].iloc[0])[:7]} with the "
          f"decode chain's loaded latency (CHAIN_LOADED) and the merge path's per-item reloads (FI_MERGE_ITEM_RELOADS) "
          f"({pred}), both committed before measuring; now = the committed fitted file, looked-at)")
    labels = ["main", "new", "now"]
    t = _models_table(m, ("regime",), labels, labels)
    print(t.to_string(**fmt))
    _fi_dec_grid_summary(m, t, 8, labels, ["main", "new"])


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
    import pandas as pd

    from simulator.calibration.blind_grids import blind_errors

    pred, before, glob = FI_TC_BLIND
    m, name = blind_errors(FP, glob, pred, before)
    if m is None:
        print(f"\nFI_TC BLIND GRID: not measured yet ({pred} holds the predictions)")
        return
    keys = ["family", "heads", "kv_heads", "dtype", "batch", "q_rows", "context", "page_size"]
    grp = pd.read_csv(FP.DATA_DIR / pred)[keys + ["group"]]
    m = m.merge(grp, on=keys, how="left")
    ops = FP.build_ops(m, hw.units, float(hw.smem_per_unit_bytes or 233472))
    m["now_err_pct"] = (FP.predict_us(ops, hw, hw.efficiency, len(m)) / m["median_us"] - 1.0) * 100.0
    m["main_err_pct"], m["new_err_pct"] = m["err_before"], m["err"]
    m["regime"] = m["group"]
    print(f"\nFI_TC BLIND GRID (FlashInfer tensor-core decode and verification, FA2 prefill kernel; {len(m)} blind shapes "
          f"of {m.attrs.get('timed_of', len(m))} timed, {name}; BLIND: main = the model at "
          f"{str(m['before_commit'].iloc[0])[:7]} ({before}), new = the model at {str(m['model_commit'].iloc[0])[:7]} "
          f"({pred}: bf16 tile waits and MMAs on the CTA's chain, FI_TC_BF16_TILE_WAITS, chosen on looked-at rows of the "
          "earlier check grids), both committed before measuring; now = the committed fitted file)")
    labels = ["main", "new", "now"]
    t = _models_table(m, ("regime",), labels, labels)
    print(t.to_string(**fmt))
    for lab in labels:
        e = m[f"{lab}_err_pct"]
        print(f"  {lab}: median |error| {np.median(e.abs()):.1f} %, p90 {np.percentile(e.abs(), 90):.1f} %, signed "
              f"{np.median(e):+.1f} %; regimes met {int((t[lab + '_goal'] == 'met').sum())} of {len(t)}")
    for fam in ("fi_tc", "fi_verify"):
        x = m[m["family"] == fam]
        tt = t[t["regime"].isin(set(x["regime"]))]
        for lab in ("main", "new"):
            BOARD.add(fam, "blind", f"fi_tc blind grid, {lab} model's committed prices", x[f"{lab}_err_pct"],
                      int((tt[f"{lab}_goal"] == "met").sum()), len(tt))


def production_attention() -> None:
    """Production attention kernel families (simulator/kernels, fit_production_attention.py) on their H100 campaign: held-out
    |error| per family and regime with the committed fitted file, the first look priced from the sources before the
    measurement, and how far each never-measured family is trusted."""
    import numpy as np
    import pandas as pd

    from hwmodels.spec import load_hardware
    from simulator.calibration import fit_production_attention as FP
    from simulator.kernels.families import family_table

    f, _ = FP.latest(FP.DATA_DIR)
    if f is None:
        return
    df = FP.load(f)
    hw = load_hardware("H100-SXM")
    ev = FP.evaluate(df, hw, hw.efficiency)
    print(f"\n== {hw.name}: production attention kernels ({f.name}: {len(df)} timed shapes, CUDA-graph timing). Fit on "
          "the middle regime only (context 1024-16384, batch <= 64, page 16, q 4 for verification, Llama-3.1-8B / 70B "
          "and MLA heads); everything else is held out (Qwen 28/4 heads, pages 1 / 64, q 8, fp8 Triton rows, short, "
          "long, large batch). Goal: median <= 10 %, p90 <= 25 % per regime")
    t = FP.accuracy(ev)
    t.insert(5, "rows", [LOOKED_AT.get(f, "held-out") for f in t["family"]])
    fmt = {"float_format": lambda v: f"{v:.1f}", "index": False}
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
    _mla_merge(FP, fmt)
    _fresh_mla(FP, fmt)
    _mla_blind2(FP, hw, fmt)
    _mla_blind3(FP, fmt)
    _mla_blind4(FP, fmt)
    _mla_blind5(FP, fmt)
    _mla_blind6(FP, fmt)
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
    _fa3(FP, hw, fmt)
    _xqa(FP, hw, fmt)
    _xqa_x7(FP, hw, fmt)
    _xqa_x8(FP, hw, fmt)
    _xqa_x9(FP, hw, fmt)
    _triton_vllm(FP, hw, fmt)
    fl = FP.first_look_errors(df, FP.DATA_DIR)
    if len(fl):
        e = fl["first_look_err_pct"].abs()
        print(f"\nFIRST LOOK: FlashInfer decode priced from its source alone before any measurement "
              f"({FP.FIRST_LOOK_CSV}: terms borrowed from the attn_fa2 fit), {len(fl)} shapes: median |error| "
              f"{np.median(e):.1f} %, p90 {np.percentile(e, 90):.1f} %, median signed {np.median(fl['first_look_err_pct']):+.1f} %")
        tf = FP.accuracy(fl, by=("family", "kv", "ctx_regime", "batch_regime"), col="first_look_err_pct", part=None)
        print(tf.to_string(**fmt))
        _board(fl, "first_look_err_pct", "first look", "campaign, priced from source before measuring", tf)
    sdpa = sorted(FP.DATA_DIR.glob("production_attention_sdpa_nvidia*.csv"))
    if sdpa:
        _sdpa_check(sdpa[-1], hw)
    tab = family_table()
    rows = [{"family": k, "measured": str(v.get("measured", ""))[:60], "kernel": v["kernel"][:70]} for k, v in tab.items()]
    print("\nfamilies and what was measured (simulator/kernels/data/attention_families.yaml):")
    print(pd.DataFrame(rows).to_string(index=False))


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


def _xqa(FP, hw, fmt) -> None:
    """The xqa family (TensorRT-LLM's XQA kernels) measured through FlashInfer's port: the first look priced before the
    measurement ((a) the model at db3789c, (b) the port's structure with borrowed rates), the fit rows and the held-out
    error after the fit, per regime; signed = predicted / measured - 1."""
    import numpy as np

    xq = FP.load_xqa(FP.DATA_DIR)
    if not len(xq):
        return
    f, _ = FP.latest_xqa(FP.DATA_DIR)
    ev = FP.evaluate(xq, hw, hw.efficiency)
    fl = FP.xqa_first_look(xq, FP.DATA_DIR)
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
            e = fl[col]
            print(f"FIRST LOOK, blind ({FP.XQA_FIRST_LOOK_CSV}, priced at {commit} before the measurement), {what}: "
                  f"median |error| {np.median(e.abs()):.1f} %, p90 {np.percentile(e.abs(), 90):.1f} %, median signed "
                  f"{np.median(e):+.1f} %")
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
    import numpy as np

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

    import numpy as np

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

    import numpy as np

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


def _xqa_x7(FP, hw, fmt) -> None:
    """mha.cu's verification row share (simulator/kernels/xqa.py XQA_ROW_SHARE): its FIT rows (xqa_verify_fit_rows,
    share 1 = the rule before against the fitted share), then the seventh xqa grid (lab/kernels/measure_xqa_attention.py
    --grid x7: bf16 / fp8 verification at q 2-8, fp8 decode in the middle at batch 2-14, bf16 q 1 controls), priced
    before it was measured: base = main's model, new = the row share; per regime and per query rows."""
    from pathlib import Path

    import numpy as np

    from simulator.kernels import xqa as XQ

    xq = FP.load_xqa(FP.DATA_DIR)
    if len(xq):
        d = xq[FP.xqa_verify_fit_rows(xq)].reset_index(drop=True)
        keep = XQ.XQA_ROW_SHARE
        try:
            XQ.XQA_ROW_SHARE = 1.0
            one = FP.predict_us(FP.build_ops(d, hw.units, float(hw.smem_per_unit_bytes or 233472)), hw, hw.efficiency,
                                len(d))
        finally:
            XQ.XQA_ROW_SHARE = keep
        now = FP.predict_us(FP.build_ops(d, hw.units, float(hw.smem_per_unit_bytes or 233472)), hw, hw.efficiency,
                            len(d))
        e1, e2 = np.log(one / d["median_us"]), np.log(now / d["median_us"])
        print(f"\nXQA VERIFICATION ROW SHARE, FIT rows (xqa_verify_fit_rows: {len(d)} bf16 q 2 / q 4 rows of Llama-3.1-8B, "
              "page 16, context <= 256 at every batch and 1024-16384 at batch <= 64; LOOKED-AT before the rule): rms log "
              f"error {np.sqrt(np.mean(e1 ** 2)):.3f} at share 1 (every part of the 32-row tile doubles) -> "
              f"{np.sqrt(np.mean(e2 ** 2)):.3f} at the fitted {keep:g}; |error| median "
              f"{np.median(np.abs(one / d['median_us'] - 1)) * 100:.1f} -> {np.median(np.abs(now / d['median_us'] - 1)) * 100:.1f} %")
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

    import numpy as np

    from simulator.kernels import xqa as XQ

    xq = FP.load_xqa(FP.DATA_DIR)
    if len(xq):
        d = xq[FP.xqa_gmma_verify_fit_rows(xq)].reset_index(drop=True)
        keep = XQ.XQA_GMMA_COL_SHARE
        try:
            XQ.XQA_GMMA_COL_SHARE = 0.0
            zero = FP.predict_us(FP.build_ops(d, hw.units, float(hw.smem_per_unit_bytes or 233472)), hw,
                                 hw.efficiency, len(d))
        finally:
            XQ.XQA_GMMA_COL_SHARE = keep
        now = FP.predict_us(FP.build_ops(d, hw.units, float(hw.smem_per_unit_bytes or 233472)), hw, hw.efficiency,
                            len(d))
        e0, e1 = np.log(zero / d["median_us"]), np.log(now / d["median_us"])
        print(f"\nXQA GMMA VERIFICATION COLUMNS, FIT rows (xqa_gmma_verify_fit_rows: {len(d)} fp8 q 2 / q 4 rows of "
              "Llama-3.1-8B, page 16, every context and batch of the campaign; LOOKED-AT before the rule): rms log error "
              f"{np.sqrt(np.mean(e0 ** 2)):.3f} at share 0 (the verification CTA priced as the decode CTA) -> "
              f"{np.sqrt(np.mean(e1 ** 2)):.3f} at the fitted {keep:g}; |error| median "
              f"{np.median(np.abs(zero / d['median_us'] - 1)) * 100:.1f} -> "
              f"{np.median(np.abs(now / d['median_us'] - 1)) * 100:.1f} %")
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


def _triton_vllm(FP, hw, fmt) -> None:
    """The triton_vllm family (vLLM's Triton unified attention, run from a copy of its source): the first look priced
    before the measurement ((a) the model at f5528fc, (b) the source's structure with rates borrowed from triton_sgl),
    the fit rows and the error after the fit on the rest, per regime; signed = predicted / measured - 1."""
    import numpy as np

    tv = FP.load_triton_vllm(FP.DATA_DIR)
    if not len(tv):
        return
    f, _ = FP.latest_triton_vllm(FP.DATA_DIR)
    ev = FP.evaluate(tv, hw, hw.efficiency)
    fl = FP.triton_vllm_first_look(tv, FP.DATA_DIR)
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
            e = fl[col]
            print(f"FIRST LOOK, blind ({FP.TV_FIRST_LOOK_CSV}, priced at {commit} before the measurement), {what}: "
                  f"median |error| {np.median(e.abs()):.1f} %, p90 {np.percentile(e.abs(), 90):.1f} %, median signed "
                  f"{np.median(e):+.1f} %")
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

    def now(df):
        ops = FP.build_ops(df, hw.units, FP._smem(hw))
        return (FP.predict_us(ops, hw, hw.efficiency, len(df)) / df["median_us"] - 1.0) * 100.0

    b = b.rename(columns={"base_err_pct": "main_err_pct"})
    b["now_err_pct"] = now(b)
    keys = [k for k in FP.SHAPE_KEYS if k in b.columns]
    frozen = FP.DATA_DIR / TD_BLIND4_REFIT_PRICES
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
    for lab in labels:
        e = b[f"{lab}_err_pct"]
        met = int((t[lab + "_goal"] == "met").sum())
        if lab == "now" and not moved:
            continue
        what = {"refit": "shipped refit's frozen prices (rule committed before)",
                "now": "the current model"}.get(lab, f"{lab} model's committed prices")
        BOARD.add("triton_vllm", "looked-at" if lab == "now" else "blind", f"Triton decode blind grid 4, {what}", e,
                  met, len(t))
        print(f"triton_vllm blind 4, {lab}: median |error| {np.median(e.abs()):.1f} %, p90 "
              f"{np.percentile(e.abs(), 90):.1f} %, signed {np.median(e):+.1f} %; regimes met {met} of {len(t)}")
    f = FP.load_triton_decode_blind4(FP.DATA_DIR, role="fit_fp8")
    if len(f):
        f = f.rename(columns={"base_err_pct": "main_err_pct"})
        f["now_err_pct"] = now(f)
        print(f"fp8 fit set ({len(f)} Llama-3.1-8B fp8 rows, fit rows of the shipped model), per regime (main = "
              "main's model, which did not fit them):")
        print(_models_table(f, by, ["main", "now"], []).round(1).to_string(**fmt))
    lo = FP.load_triton_decode_blind4(FP.DATA_DIR, role="fit_lone")
    if len(lo):
        lo["G"] = np.floor(lo["heads"] / lo["kv_heads"]).astype(int)
        lo["kernel"] = np.where(lo["q_rows"] > 1, "2D", "3D")
        lo = lo.rename(columns={"base_err_pct": "main_err_pct"})
        lo["now_err_pct"] = now(lo)
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
    ops = FP.build_ops(b, hw.units, FP._smem(hw))
    b["now_err_pct"] = (FP.predict_us(ops, hw, hw.efficiency, len(b)) / b["median_us"] - 1.0) * 100.0
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
    for lab in cols:
        e = b[f"{lab}_err_pct"]
        met = int((t[lab + "_goal"] == "met").sum())
        what = "the current model" if lab == "now" else f"{lab} model's committed prices"
        BOARD.add("triton_vllm", "looked-at" if lab == "now" else "blind", f"Triton decode blind grid 5, {what}", e,
                  met, len(t))
        print(f"triton_vllm blind 5, {lab}: median |error| {np.median(e.abs()):.1f} %, p90 "
              f"{np.percentile(e.abs(), 90):.1f} %, signed {np.median(e):+.1f} %; regimes met {met} of {len(t)}")


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
    ops = FP.build_ops(b, hw.units, FP._smem(hw))
    b["now_err_pct"] = (FP.predict_us(ops, hw, hw.efficiency, len(b)) / b["median_us"] - 1.0) * 100.0
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
    for lab in cols:
        e = b[f"{lab}_err_pct"]
        met = int((t[lab + "_goal"] == "met").sum())
        what = "the current model" if lab == "now" else f"{lab} model's committed prices"
        BOARD.add("triton_vllm", "looked-at" if lab == "now" else "blind", f"Triton decode blind grid 6, {what}", e,
                  met, len(t))
        print(f"triton_vllm blind 6, {lab}: median |error| {np.median(e.abs()):.1f} %, p90 "
              f"{np.percentile(e.abs(), 90):.1f} %, signed {np.median(e):+.1f} %; regimes met {met} of {len(t)}")
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


def _triton_decode_blind2(FP, fmt) -> None:
    """The second blind grid of the two Triton decode families (FP.load_triton_decode_blind2: triton_vllm q 1-4 and
    sgl_triton q 1, shapes in none of the committed rows), priced before the measurement by the model at the branch
    point (base) and by the revised model (new: occupancy per compiled GQA group, L2-hit prologue and idle programs,
    the chain's queueing share of the HBM time; sgl_triton priced as vLLM's Triton kernel), both prices committed.
    Regime goal: median <= 10 %, p90 <= 25 %."""
    from pathlib import Path

    import numpy as np

    b = FP.load_triton_decode_blind2(FP.DATA_DIR)
    if not len(b):
        return
    print(f"\nBLIND 2 ({Path(b.attrs['file']).name}: {len(b)} shapes in none of the committed rows of either family: "
          "triton_vllm (vLLM's Triton unified attention @ 001ceb3e) at q 1 / 2 / 3 / 4 and sgl_triton (SGLang's Triton "
          "decode, sglang 0.5.6) at q 1; contexts 56-90000, batches 1-768, heads 32/8, 8/1, 28/4, 64/8, bf16 and fp8 "
          f"K/V), prices committed before the measurement ({FP.TD_BLIND2_PRED_CSV}): base = the model at "
          f"{str(b['base_commit'].iloc[0])[:7]} (the branch point), new = the model at "
          f"{str(b['model_commit'].iloc[0])[:7]} (the shipped model)")
    t = _models_table(b, ("family", "phase", "kv", "ctx_regime", "batch_regime"), ("base", "new"), ("base", "new"))
    print(t.to_string(**fmt))
    for fam, g in b.groupby("family"):
        tt = t[t["family"] == fam]
        for c, lab in (("base_err_pct", "base"), ("new_err_pct", "new")):
            e = g[c]
            met = int((tt[lab + "_goal"] == "met").sum())
            BOARD.add(str(fam), "blind", f"Triton decode blind grid 2, {lab} model's committed prices", e, met, len(tt))
            print(f"{fam} blind 2, {lab}: median |error| {np.median(e.abs()):.1f} %, p90 "
                  f"{np.percentile(e.abs(), 90):.1f} %, signed {np.median(e):+.1f} %; regimes met {met} of {len(tt)}")
    if (t["new_goal"] == "MISSED").any():
        print(f"  missed (blind 2): {TD_BLIND2_DIAGNOSIS}")


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
        ops = FP.build_ops(d, hw.units, FP._smem(hw))
        d["now_err_pct"] = (FP.predict_us(ops, hw, hw.efficiency, len(d)) / d["median_us"] - 1.0) * 100.0
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
    t = _models_table(b, ("family", "phase", "kv", "ctx_regime", "batch_regime"), ("base", "new"), ("base", "new"))
    print(t.to_string(**fmt))
    for fam, g in b.groupby("family"):
        tt = t[t["family"] == fam]
        for c, lab in (("base_err_pct", "base"), ("new_err_pct", "new")):
            e = g[c]
            met = int((tt[lab + "_goal"] == "met").sum())
            BOARD.add(str(fam), "blind", f"Triton decode blind grid 3, {lab} model's committed prices", e, met, len(tt))
            print(f"{fam} blind 3, {lab}: median |error| {np.median(e.abs()):.1f} %, p90 "
                  f"{np.percentile(e.abs(), 90):.1f} %, signed {np.median(e):+.1f} %; regimes met {met} of {len(tt)}")
    if (t["new_goal"] == "MISSED").any():
        print(f"  missed (blind 3): {TD_BLIND3_DIAGNOSIS}")
    v = b[b["family"] == "triton_vllm"].reset_index(drop=True)
    ops = FP.build_ops(v, hw.units, FP._smem(hw))
    v["now_err_pct"] = (FP.predict_us(ops, hw, hw.efficiency, len(v)) / v["median_us"] - 1.0) * 100.0
    tn = FP.accuracy(v, by=("family", "phase", "kv", "ctx_regime", "batch_regime"), col="now_err_pct", part=None)
    print("triton_vllm blind grid 3 under the shipped model (new + the lone-program fit rows, refitted AFTER this "
          "measurement: LOOKED-AT):")
    print(tn.to_string(**fmt))
    met = int((tn["goal"] == "met").sum())
    e = v["now_err_pct"]
    BOARD.add("triton_vllm", "looked-at", "Triton decode blind grid 3, shipped model (refitted after it)", e, met, len(tn))
    print(f"triton_vllm blind 3, shipped (looked-at): median |error| {np.median(e.abs()):.1f} %, p90 "
          f"{np.percentile(e.abs(), 90):.1f} %, signed {np.median(e):+.1f} %; regimes met {met} of {len(tn)}")


def _fa3(FP, hw, fmt) -> None:
    """The fa3 family measured through FA4-CuTe's sm_90 forward: the first look (the measured kernel's launch structure
    with the attn_fa3 terms then borrowed from FlashInfer's FA2 prefill kernel, priced before the measurement) and the
    held-out error after the fit (Llama-3.1-8B, q 1: page 16 middle regime and context <= 256 for attn_fa3, contiguous
    middle rows for attn_fa3_tma: fa3_fit_rows), then the blind grid; signed = predicted / measured - 1."""
    import numpy as np

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
            e = fl[col]
            print(f"FIRST LOOK ({FP.FA3_FIRST_LOOK_CSV}, priced at {commit} before the measurement, attn_fa3 terms "
                  f"borrowed from attn_fi_prefill), {what}: median |error| {np.median(e.abs()):.1f} %, p90 "
                  f"{np.percentile(e.abs(), 90):.1f} %, median signed {np.median(e):+.1f} %")
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
    missed = t[t["goal"] == "MISSED"]
    if (missed["ctx_regime"] == "short (<=256)").any():
        print(f"  missed: fa3 short (<=256): {FA3_DIAGNOSIS['short (<=256)']}")
    if missed["layout"].isin(["contiguous", "page 128"]).any():
        print(f"  missed: fa3 contiguous / page 128: {FA3_DIAGNOSIS['contiguous / page 128']}")


def _fa3_blind(FP, hw, fmt) -> None:
    """The fa3 blind grid: shapes in none of the campaign's rows, priced with the model before and after the
    one-CTA-per-SM rules and the TMA kind (both prices committed before the measurement), then measured."""
    from pathlib import Path

    import numpy as np

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


def _newest_regimes() -> list:
    """The newest measure_regimes.py CSV per device (highest script_version)."""
    import pandas as pd

    best: dict = {}
    for f in sorted(F.DATA_DIR.glob("regimes_nvidia*.csv")):
        if "_hf_profile_" in f.name or "_grids_" in f.name or "_round" in f.name:
            continue
        head = pd.read_csv(f, nrows=1)
        dev, ver = str(head["device"].iloc[0]), int(head["script_version"].iloc[0])
        if dev not in best or ver > best[dev][0]:
            best[dev] = (ver, f)
    return [f for _, f in best.values()]


#: what the held-out data show about each regime the model still misses (issue 15 rounds 3-4, from the v4 campaign's
#: rows, grids and HF profile); printed only while the regime misses
MISS_DIAGNOSIS = {
    "HF Llama-3.1-8B step (CUDA graph)":
        "check that the step was timed after a spin longer than the host's launch of its ~1,750-node graph "
        "(0.8-1.5 ms on the lent H100: measure_graph_chains.py --only-hf) and that its repeat_kv copies (kind "
        "copy_broadcast, most of the step at B >= 8, T >= 8192) are priced with their broadcast terms (printed below)",
    "fp8 GEMM: fp8_tensorwise":
        "cuBLASLt splits K (and adds a reduce kernel) for some shapes only: 9-18 % too slow where it does not split, "
        "4-15 % too fast where it does; the split choice is not predictable from the fitted shapes",
    "small-M GEMM: fp8_tensorwise": "as fp8 GEMM: fp8_tensorwise (cuBLASLt's split-K choice)",
}


def regimes(show_all: bool) -> None:
    from dataclasses import replace

    import numpy as np
    import pandas as pd

    from hwmodels.spec import load_efficiency
    from simulator.calibration import fit_regimes as FR

    for f in _newest_regimes():
        df = FR.load(f)
        hw = FR.hw_for(df, None)
        eff = load_efficiency(hw.name)
        hw = replace(hw, launch_graph_s=eff.launch_graph_s or hw.launch_graph_s)
        ev = FR.evaluate(df, hw, eff)
        parts = ("held-out", "fit", "check") if show_all else ("held-out",)
        new = FR.accuracy_table(ev, parts).rename(columns={"n": "r3 n", "med": "r3 med", "p90": "r3 p90",
                                                           "max": "r3 max"})
        dev = f.name.split("_")[1]
        table = new
        r2f = sorted(F.DATA_DIR.glob(f"regimes_round2_accuracy_{dev}_*.csv"))
        if r2f:
            r2 = pd.read_csv(r2f[0]).rename(columns={"n": "r2 n", "round2_med": "r2 med", "round2_p90": "r2 p90",
                                                     "round2_max": "r2 max"}).assign(part="held-out")
            table = r2[["regime", "part", "r2 n", "r2 med", "r2 p90", "r2 max"]].merge(table, on=["regime", "part"],
                                                                                      how="outer")
        r1f = sorted(F.DATA_DIR.glob(f"regimes_round1_accuracy_{dev}_*.csv"))
        if r1f:
            r1 = pd.read_csv(r1f[0]).rename(columns={"n": "r1 n", "round1_med": "r1 med", "round1_p90": "r1 p90",
                                                     "round1_max": "r1 max", "pre15_med": "pre15 med"})
            r1 = r1[["regime", "pre15 med", "r1 n", "r1 med", "r1 p90", "r1 max"]].assign(part="held-out")
            table = r1.merge(table, on=["regime", "part"], how="outer")
        issue = set(pd.read_csv(r2f[0])["regime"]) if r2f else set()
        if issue:
            table["regime"] = [r if (r in issue or p != "held-out") else f"{r} (new)"
                               for r, p in zip(table["regime"], table["part"])]
        table = table.sort_values(["part", "regime"]).reset_index(drop=True)
        cols = ["regime", "part", "pre15 med", "r1 n", "r1 med", "r1 p90", "r1 max", "r2 n", "r2 med", "r2 p90",
                "r2 max", "r3 n", "r3 med", "r3 p90", "r3 max", "goal"]
        table = table[[c for c in cols if c in table.columns]]
        print(f"\n== {hw.name}: kernel model outside the bandwidth regime (issue 15), CUDA-graph timing; |error| % per "
              f"regime, {'all rows' if show_all else 'held-out shape families'}; round 1 = "
              f"{r1f[0].name if r1f else '-'} (v2 campaign), round 2 = {r2f[0].name if r2f else '-'} (v3 campaign), "
              f"r3 = now (rounds 3-7): {f.name}"
              + (f", HF step re-timed in {df.attrs['hf_step_remeasured']}" if df.attrs.get("hf_step_remeasured") else "")
              + (f", repeat_kv grid {df.attrs['repeat_kv_grid']}" if df.attrs.get("repeat_kv_grid") else ""))
        txt = table.copy()
        for c in txt.columns:
            if c.endswith(("med", "p90", "max")):
                txt[c] = txt[c].map(lambda v: "" if not np.isfinite(v) else f"{v:.1f}")
            if c.endswith(" n"):
                txt[c] = txt[c].map(lambda v: "" if not np.isfinite(v) else f"{int(v)}")
        txt["goal"] = txt["goal"].fillna("(no round-3 rows)")
        print(txt.to_string(index=False))
        held = table[(table["part"] == "held-out") & table["goal"].notna()]
        is_new = held["regime"].str.endswith(" (new)")
        old, added = held[~is_new], held[is_new]
        print(f"goal (median <= 10 %, p90 <= 25 %; HF step <= 3 %): {int((old['goal'] == 'met').sum())} of {len(old)} "
              f"issue regimes met now (round 2: 25 of 35); new held-out regimes: {int((added['goal'] == 'met').sum())}"
              f" of {len(added)}")
        for r in held.loc[held["goal"] == "MISSED", "regime"]:
            why = MISS_DIAGNOSIS.get(r.removesuffix(" (new)"))
            print(f"  missed: {r}: {why or 'no diagnosis recorded'}")
        _context_lines(df, ev, f)
    _topk_check()
    _topk_trtllm_grid7_table()
    _topk_trtllm_grid8_table()
    _topk_trtllm_grid9_table()
    _topk_trtllm_grid10_table()
    from accuracy_sections import s12tk
    s12tk.topk_trtllm_grid11()


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


def _context_lines(df, ev, path) -> None:
    """What the timing context does to two regimes (measure_graph_chains.py v4 / v5): the eager quantization's
    micro-benchmark rows (warm code) against the model's in-step price; the HF step's largest error and its repeat_kv
    copies (v6 grid)."""
    import numpy as np

    q = ev[(ev["kernel"] == "quant_eager") & (ev["part"] == "held-out")]
    if "median_us_warm" in q.columns and q["median_us_warm"].notna().any():
        q = q[q["median_us_warm"].notna()]
        e = (q["after_us"] / q["median_us_warm"] - 1).abs() * 100
        r = q["median_us"] / q["median_us_warm"]
        print(f"  fp8 GEMM: quant_eager is compared with its in-step time ({df.attrs.get('quant_in_step')}: after a GEMM "
              f"that sweeps the L2, minus that GEMM), the timing the model prices. In a step the same {len(q)} held-out "
              f"shapes take {r.min():.2f}-{r.max():.2f}x the time of the 8 kernels timed as a graph of nothing else "
              f"(warm code: 0.26-0.29 us between kernels, against 0.42-0.45 us in a step); the model against that "
              f"micro-benchmark: median {e.median():.1f} %, p90 {np.percentile(e, 90):.1f} %")
    hf = ev[ev["family"] == "hf_step"]
    if len(hf):
        w = hf.loc[hf["after_err_pct"].abs().idxmax()]
        print(f"  HF step: {int((hf['after_err_pct'].abs() <= 3).sum())} of {len(hf)} shapes within 3 %; largest error "
              f"B {int(w['batch'])} T {int(w['context'])}: {w['after_err_pct']:+.1f} %")
    rk = ev[(ev["kernel"] == "repeat_kv") & ev["corner"].astype(str).str.startswith("grid")]
    if len(rk):
        per = rk["median_us"] / (rk["batch"] * rk["heads"] * rk["context"] * rk["head_dim"]) * 1e6
        pb = per[rk["median_us"] > 100]
        print(f"  repeat_kv (kind copy_broadcast, {df.attrs.get('repeat_kv_grid')}): {pb.min():.2f}-{pb.max():.2f} ps "
              f"per element written over {len(pb)} shapes of > 100 us (one rate, kind copy_strided until round 6, "
              f"priced them all alike); the broadcast terms (load latency: the copies of a source row in flight "
              f"together, a row near the L2's size) give {_err_txt(rk[rk['part'] == 'fit'])} on the fit shapes and "
              f"{_err_txt(rk[rk['part'] == 'held-out'])} at the HF step's (B, T)")


def _err_txt(g) -> str:
    """'median / max |error| % (n rows)' of evaluated rows."""
    import numpy as np

    e = g["after_err_pct"].abs()
    return f"median {np.median(e):.1f} % / max {e.max():.1f} % ({len(e)} rows)" if len(e) else "no rows"


def _topk_check() -> None:
    """fit-regimes' torch.topk terms on measure.py's topk rows (an independent campaign)."""
    import numpy as np

    from hwmodels.roofline import price
    from hwmodels.spec import load_hardware
    from simulator.ops import OpBuilder
    from simulator.strategies.topk import torch_topk_dispatch_ops

    for data in F.latest_data_files():
        df = F.load_measurements(data)
        df = df[df["family"] == "topk"].reset_index(drop=True)
        if df.empty:
            continue
        hw = load_hardware(F.DEVICE_SPECS[df["device"].iloc[0]])
        b = OpBuilder(len(df))
        torch_topk_dispatch_ops(b, df["batch"].to_numpy(float), df["row_len"].to_numpy(float), 4.0,
                                df["topk_k"].to_numpy(float), None)
        ops = b.build()
        pred = np.bincount(ops.setting, weights=price(ops, hw, "graph"), minlength=len(df)) * 1e6
        e = np.abs(pred / df["median_us"].to_numpy(float) - 1) * 100
        print(f"torch.topk terms of {hw.name} (fit-regimes, H100 regimes rows) on {data.name}'s {len(df)} topk rows: "
              f"median |error| {np.median(e):.1f} %, p90 {np.percentile(e, 90):.1f} %, max {e.max():.1f} %")


def production_kernels() -> None:
    """Production kernels modelled from their sources (simulator/kernels/topk_production.py, gemm_fp8.py), measured
    by lab/kernels/measure_production_kernels.py: per regime the held-out error of the fitted terms and the first-look
    error of the source-only model (its predictions were committed before the measurements were read)."""
    from hwmodels.spec import load_hardware
    from simulator.calibration import fit_production_topk_gemm as FP

    for f in sorted(FP.DATA_DIR.glob("production_kernels_nvidia*.csv")):
        if "_first_look_" in f.name or f.stem.endswith(("_rotated", "_fresh")):
            continue
        fl = f.with_name(f.name.replace("production_kernels_", "production_kernels_first_look_"))
        if not fl.is_file():
            continue
        hw = load_hardware("H100-SXM")
        tab = FP.accuracy(f, fl, hw)
        tab["goal"] = np.where(tab["part"] == "fit", "",
                               np.where((tab["median_abs_pct"] <= 10) & (tab["p90_abs_pct"] <= 25), "met", "MISSED"))
        print(f"\n== {hw.name}: {f.name}, production kernels from source (first look = source only, before the "
              f"measurements; held-out = fitted terms on shapes the fit did not see; goal median <= 10 %, p90 <= 25 %)"
              f"\n   top-k held-out rows are LOOKED-AT: the multi-sweep L2 rule (hwmodels.roofline SWEEP_REREAD, now the "
              f"measured hit curve Efficiency.l2_sweep_hit) and the loads in flight per sweep (topk_production."
              f"SGL_LOADS_IN_FLIGHT), then the per-wave barrier phases and per-round gather loops (SGL_PHASES, "
              f"SGL_GATHER_ROUNDS) were added after these rows were seen (the fit still sees FIT_TOPK only); the two "
              f"blind top-k tables below are the unseen checks")
        print(tab.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
        held = tab[tab["part"] != "fit"]
        topk = held["regime"].str.startswith("top-k")
        _board_table(held[topk], "looked-at", "production kernels campaign")
        _board_table(held[~topk], "held out", "production kernels campaign")
        rot = f.with_name(f.stem + "_rotated.csv")
        if rot.is_file():
            tab = FP.accuracy(f, fl, hw, gemm_csv=rot)
            tab = tab[tab["regime"].str.startswith("GEMM")].copy()
            tab["goal"] = np.where(tab["part"] == "fit", "", np.where(
                (tab["median_abs_pct"] <= 10) & (tab["p90_abs_pct"] <= 25), "met", "MISSED"))
            print(f"\n== {hw.name}: the GEMM rows re-measured with weights rotated past the L2 ({rot.name}; the rows "
                  f"above re-read weights < 50 MB from the L2); same terms, same first look")
            print(tab.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
            _fp8_rotated_board(tab)
        _fresh_table(f, hw)
        _fresh2_table(f)
        _topk_blind_table(f, hw)
        _topk_blind2_table()
        _topk_blind3_table()
        _topk_engines_grid4_table()
        _topk_engines_grid5_table()
        _topk_trtllm_grid6_table(hw)
        _fresh3_table(f)
        _blind4_table(f)
        _blind5_table()
        _deepgemm_gemm_blind_table()
        _deepgemm_gemm_decode2_table()
        _deepgemm_gemm_decode3_table()
        _block_fp8_grid4_table()
    production_allreduce()


#: the commit that holds the fresh shapes' predictions, made before they were measured
FRESH_PREDICTION_COMMIT = "f54b834"


def _fresh_table(f, hw) -> None:
    """Fresh shapes (in none of the committed rows), predicted and committed before they were measured: per regime
    the committed prediction's error (goal judged on it) and the current terms' (looked-at where a rule changed since)."""
    from simulator.calibration import fit_production_topk_gemm as FP

    meas = f.with_name(f.stem + "_fresh.csv")
    pred = sorted(FP.DATA_DIR.glob("production_kernels_fresh_prediction_*.csv"))
    if not meas.is_file() or not pred:
        return
    tab = FP.fresh_accuracy(pred[-1], meas, hw)
    tab["goal"] = np.where((tab["median_abs_pct"] <= 10) & (tab["p90_abs_pct"] <= 25), "met", "MISSED")
    print(f"\n== {hw.name}: fresh shapes (predicted before measuring, commit {FRESH_PREDICTION_COMMIT}: {pred[-1].name}; "
          f"measured {meas.name}; GEMM weights rotated past the L2). median/p90/signed = the committed prediction "
          f"(goal median <= 10 %, p90 <= 25 %); now_* = the current terms, LOOKED-AT for top-k (SGLang's loads in "
          f"flight per sweep, read from its SASS, and its per-wave barrier phases were added after this measurement) and "
          f"for the bf16 / per-tensor fp8 GEMMs (cuBLASLt's small-M selection table, simulator/kernels/data/"
          f"cublaslt_small_m.yaml, and its rule were read off this measurement's kernel names, and the K-step time "
          f"iter_us[gemm|gemm_fp8] FITTED on its times: for those rows now_* is in-sample)")
    print(tab.to_string(index=False, float_format=lambda v: f"{v:.1f}"))


#: the commit that holds the second GEMM hold-out's predictions, made before it was measured
FRESH2_PREDICTION_COMMIT = "98bc0e3"


def _fresh2_table(f) -> None:
    """The second GEMM hold-out (bf16 / per-tensor fp8 at shapes in no earlier campaign), predicted and committed
    before it was measured: per regime (covered by cuBLASLt's small-M selection table or priced by the fallback)."""
    from simulator.calibration import fit_production_topk_gemm as FP

    meas = f.with_name(f.stem + "_fresh2.csv")
    pred = sorted(FP.DATA_DIR.glob("production_kernels_fresh2_prediction_*.csv"))
    if not meas.is_file() or not pred:
        return
    tab = FP.fresh2_accuracy(pred[-1], meas)
    tab["goal"] = np.where((tab["median_abs_pct"] <= 10) & (tab["p90_abs_pct"] <= 25), "met", "MISSED")
    print(f"\n== second GEMM hold-out (predicted before measuring, commit {FRESH2_PREDICTION_COMMIT}: {pred[-1].name}; "
          f"measured {meas.name}; weights rotated past the L2; every row held out from that model; the current chain "
          f"terms and tile-count split cut are FITTED on these rows since): selection table = the shape is "
          f"inside an observed entry of simulator/kernels/data/cublaslt_small_m.yaml, fallback = full-device pricing")
    print(tab.to_string(index=False, float_format=lambda v: f"{v:.1f}"))


#: the commit that holds the blind top-k set's predictions (this model and the 1081e97 model), made before measuring
TOPK_BLIND_PREDICTION_COMMIT = "3b34e0f"
#: what the blind top-k measurement shows about the regimes that miss (printed under the table)
TOPK_BLIND_DIAGNOSIS = (
    "misses: (1) rows x length x 4 B at 48-50 MiB (64 x 196608, and the 132 rows in flight of 98304-long rows): the "
    "all-or-nothing L2 rule (SWEEP_REREAD, capacity = the 50 MiB L2) called them hits, the kernel runs at HBM speed "
    "(-35 to -41 %); the rule is now the measured hit curve (now_*, looked-at); (2) rows of 3072-12288 scores (decode "
    "and prefill): +10 to +40 %, still over (second blind set below); (3) one-wave rows of 786432: +5 to +19 %, the load "
    "round at long rows is shorter than the fitted one")


def _topk_blind_table(f, hw) -> None:
    """The blind top-k set (SGLang's kernel, 120 shapes in none of the earlier grids), priced by this model and by the
    model at 1081e97 before it was measured: per regime x distribution, every row held out; now_* = the current terms
    (looked-at)."""
    from simulator.calibration import fit_production_topk_gemm as FP

    meas = f.with_name(f.stem + "_topk_blind.csv")
    pred = FP.DATA_DIR / FP.BLIND_PREDICTION
    if not meas.is_file() or not pred.is_file():
        return
    tab = FP.blind_accuracy(pred, meas, hw)
    tab["goal"] = np.where((tab["median_abs_pct"] <= 10) & (tab["p90_abs_pct"] <= 25), "met", "MISSED")
    print(f"\n== blind top-k set (predicted before measuring, commit {TOPK_BLIND_PREDICTION_COMMIT}: {pred.name}; measured "
          f"{meas.name}; every row held out): median/p90/signed = this model's committed prediction (goal median <= "
          f"10 %, p90 <= 25 %), 1081e97_* = the model before the per-wave barrier phases, priced from that commit; "
          f"now_* = the current model, LOOKED-AT: its L2 hit curve (hwmodels.roofline SWEEP_REREAD, Efficiency."
          f"l2_sweep_hit) replaced the all-or-nothing rule after these rows' L2-edge errors were seen")
    print(tab.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    _board_table(tab, "blind", "blind top-k set (120)")
    print("   " + TOPK_BLIND_DIAGNOSIS)


#: the commits that hold the second blind top-k set's predictions: the db3789c / coarse-curve / L1-variant ones, then
#: the fine-curve one (priced with the L2 curve measured in the same call, before its top-k rows were read)
TOPK_BLIND2_PREDICTION_COMMITS = ("425564a", "8366ada")
#: what the second blind set shows (printed under its tables)
TOPK_BLIND2_DIAGNOSIS = (
    "the L2 edge is partial and earlier than the nominal 50 MiB: the measured curves (a re-read tensor hits to 40 MiB, "
    "gone by 44; rows re-swept in flight fade from ~30 to ~46 MiB) take the one-wave edge rows from -29 % (db3789c) to "
    "+6 % signed; short rows (2.5K-14K scores) stay +10 to +37 % slow at decode (the fixed per-round barrier phase, "
    "fitted on gaussian rows, is too long for them; no candidate-dependent or L1 term fitted on FIT_TOPK alone fixed it: "
    "the L1 variant is rejected here)")


def _topk_blind2_table() -> None:
    """The second blind top-k set (SGLang's kernel, 114 shapes around the L2's edge and at short rows), priced by the
    model at db3789c, by this model (coarse and fine L2 curves) and by its L1 variant before its top-k rows were read:
    per regime, then per regime x distribution, every row held out."""
    from simulator.calibration import fit_production_topk_gemm as FP

    meas = sorted(FP.DATA_DIR.glob("production_kernels_nvidia*_topk_blind2.csv"))
    pred = FP.DATA_DIR / FP.BLIND2_FINE_CURVE
    if not meas or not pred.is_file():
        return
    print(f"\n== second blind top-k set (predicted before measuring, commits {' / '.join(TOPK_BLIND2_PREDICTION_COMMITS)}: "
          f"{pred.name}; measured {meas[-1].name}; every row held out; |error| median / p90 and signed median, %): "
          f"db3789c = the model at main db3789c (all-or-nothing L2 rule); coarse = this model with the regimes-v4 L2 "
          f"curve (the primary prediction); fine = with the L2 curve measured in the same call (lab/kernels/"
          f"measure_l2_sweep.py), priced before the top-k rows were read; L1 = the L1 variant (rejected); goal on fine")
    for by in (False, True):
        tab = FP.blind2_accuracy(pred, meas[-1], by_dist=by)
        tab["goal"] = np.where((tab["fine_med"] <= 10) & (tab["fine_p90"] <= 25), "met", "MISSED")
        print(tab.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
        if by:
            _board_table(tab, "blind", "second blind top-k set (114)", family="top-k sglang")
    print("   " + TOPK_BLIND2_DIAGNOSIS)


#: the commit that holds the third blind top-k set's predictions (main 65f5d1f's model, this model, two variants)
TOPK_BLIND3_PREDICTION_COMMIT = "3bf7b4e"


def _topk_blind3_table() -> None:
    """The third blind top-k set (SGLang's kernel, 94 shapes, short decode rows on the recorded scores emphasised),
    priced before its measurement by the model at main 65f5d1f, by this model and by two variants (without the L1
    gathers, without the histogram sweep's remainder rounds): per regime, then per regime x distribution; every row
    held out. The goal and the board are on this model's (`new`) committed prediction."""
    from hwmodels.spec import load_hardware
    from simulator.calibration import fit_production_topk_gemm as FP

    meas = sorted(FP.DATA_DIR.glob("production_kernels_nvidia*_topk_blind3.csv"))
    pred = FP.DATA_DIR / FP.BLIND3_PREDICTION
    if not meas or not pred.is_file():
        print(f"\n== third blind top-k set: not measured yet ({pred.name} holds the predictions)")
        return
    print(f"\n== third blind top-k set (predicted before measuring, commit {TOPK_BLIND3_PREDICTION_COMMIT}: {pred.name}; "
          f"measured {meas[-1].name}; every row held out; |error| median / p90 and signed median, %): main = the model "
          f"at main 65f5d1f; new = this model (64-row pass statistics, the histogram sweep's remainder rounds, gathers "
          f"of a row within the CTA's L1); noL1 / norem = the variants without the L1 gathers / the remainder rounds "
          f"(each refitted on FIT_TOPK alone; not shipped); now = the current model, LOOKED-AT (the gathers of a row "
          f"within the CTA's L1 stopped counting as L2 bytes after these rows were read: the 132-row launches, +38-44 "
          f"% in new, were bound by them); goal on new")
    hw = load_hardware("H100-SXM")
    for by in (False, True):
        tab = FP.blind3_accuracy(pred, meas[-1], by_dist=by, hw=hw)
        tab["goal"] = np.where((tab["new_med"] <= 10) & (tab["new_p90"] <= 25), "met", "MISSED")
        print(tab.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
        if by:
            _board_table(tab, "blind", "third blind top-k set (94)", family="top-k sglang")


#: the commit that holds grid4's predictions (FlashInfer's first look, SGLang's fourth blind set), made before measuring
TOPK_GRID4_PREDICTION_COMMIT = "0c2a274"


def _topk_engines_grid4_table() -> None:
    """grid4 (simulator/calibration/topk_engines.py): SGLang's fourth blind top-k set (82 new shapes, priced by the
    model at main 5b35f90 before measuring) and FlashInfer 0.6.4's top-k (kind topk_flashinfer) on the same shapes:
    its first look (source structure, SGLang's terms borrowed; committed before measuring) and its terms fitted on
    FI_FIT (8 rows) with the rest held out, LOOKED-AT for the filtered sweeps' values-per-round choice."""
    from hwmodels.spec import load_hardware
    from simulator.calibration import topk_engines as TE

    if not (TE.F.DATA_DIR / TE.GRID4_MEASURED).is_file():
        print(f"\n== top-k grid4: not measured yet ({TE.GRID4_PREDICTION} holds the predictions)")
        return
    hw = load_hardware("H100-SXM")
    fmt = {"index": False, "float_format": lambda v: f"{v:.1f}"}
    print(f"\n== fourth blind top-k set, SGLang (grid4: predicted before measuring, commit "
          f"{TOPK_GRID4_PREDICTION_COMMIT}: {TE.GRID4_PREDICTION}; measured {TE.GRID4_MEASURED}; every row blind: the "
          f"model at main 5b35f90, which holds the third set's looked-at 'now' rules); |error| median / p90, signed "
          f"median, %; 17 rows of the grid (both kernels, long recorded / uniform rows) are marked WRONG SELECTION by "
          f"the measurement (more than 16,384 scores tie in the threshold bin; the kernel's time is kept)")
    for by in (False, True):
        print(TE.sglang_blind4_accuracy(by_dist=by).to_string(**fmt))
    m = TE.measured()
    s = m[m["kernel"] == "sgl_topk"]
    e = 100.0 * (s["pred_main_us"] / s["median_us"] - 1.0)
    t = TE.sglang_blind4_accuracy()
    BOARD.add("top-k sglang", "blind", "fourth blind top-k set (82), main 5b35f90's committed prices", e,
              int((t["goal"] == "met").sum()), len(t))
    tab, x = TE.flashinfer_accuracy(hw)
    print(f"\n== FlashInfer 0.6.4 top-k on grid4 (kind topk_flashinfer; radix_topk_ragged_transform, fp32, k 2048): "
          f"first = the first look committed before measuring (commit {TOPK_GRID4_PREDICTION_COMMIT}; topk.cuh's "
          f"structure, SGLang's fitted terms borrowed, the filtered sweeps at the source's float4 x unroll-2 = 8 scores "
          f"per thread per round); fitted = terms fitted on FI_FIT alone (gaussian, rows 1 / 128, n 8K / 32K / 128K / "
          f"512K: iter {x['iter_us']}, iter_l2 {x['iter_l2_us']}, phase {x['phase_us']} us; rms log {x['rms_log_error']})"
          f" with the filtered sweeps at 2 scores per round, the value of 8 / 4 / 2 / 1 with the least FI_FIT error, "
          f"chosen after every value's held-out errors were printed: the held-out rows are LOOKED-AT; goal on fitted")
    print(tab.to_string(**fmt))
    print(TE.values_per_round_study(hw).to_string(index=False))
    fi = m[m["kernel"] == "fi_topk"].reset_index(drop=True)
    first = tab[~tab["regime"].str.contains(r"\(fit\)")]
    BOARD.add("top-k flashinfer", "first look", "grid4 (82), source structure + SGLang's terms, committed prices",
              100.0 * (fi["pred_us"] / fi["median_us"] - 1.0),
              int(((first["first_med"] <= 10) & (first["first_p90"] <= 25)).sum()), len(first))
    held = fi[~fi["fit"]]
    e = 100.0 * (TE.predict_us(held, hw, hw.efficiency) / held["median_us"].to_numpy(float) - 1.0)
    BOARD.add("top-k flashinfer", "looked-at", "grid4 held out (74), FI_FIT terms, values-per-round chosen after",
              e, int((first["goal"] == "met").sum()), len(first))


#: the commit that holds grid5's predictions (shipped SGLang / FlashInfer models, FlashInfer's page-table transform and
#: TensorRT-LLM's first look), made before grid5 was measured
TOPK_GRID5_PREDICTION_COMMIT = "569348b"


def _topk_engines_grid5_table() -> None:
    """grid5 (simulator/calibration/topk_engines.py GRID5, 66 new shapes): the first blind judgement of the shipped
    FlashInfer model (its 2 values per round were chosen on grid4), SGLang's fifth blind set, FlashInfer's page-table
    transform (first look) and TensorRT-LLM's indexer top-k (first look, terms borrowed), all priced and committed
    before the measurement."""
    from simulator.calibration import topk_engines as TE

    if not (TE.F.DATA_DIR / TE.GRID5_MEASURED).is_file():
        print(f"\n== top-k grid5: not measured yet ({TE.GRID5_PREDICTION} holds the predictions)")
        return
    fmt = {"index": False, "float_format": lambda v: f"{v:.1f}"}
    m = TE.measured5()
    print(f"\n== top-k grid5 (66 new shapes: decode 1-256 / prefill 512-4096 rows, n 2.1K-999K; predicted before "
          f"measuring, commit {TOPK_GRID5_PREDICTION_COMMIT}: {TE.GRID5_PREDICTION}; measured {TE.GRID5_MEASURED}); "
          f"every row BLIND: shipped = the model at main 8b74743 (FlashInfer's 2 values per round, chosen on grid4, "
          f"judged blind here for the first time); src = FlashInfer at the source's 8 values per round with its terms "
          f"refitted on grid4's FI_FIT (the alternative); {int(m['wrong'].sum())} rows marked WRONG SELECTION by the "
          f"measurement (ties in the threshold bin; time kept); |error| median / p90, signed median, %")
    for kern in ("sgl_topk", "fi_topk", "fi_topk_pt", "trt_topk"):
        if not (m["kernel"] == kern).any():
            continue
        tab = TE.grid5_accuracy(kern)
        if kern.startswith("fi_"):
            alt = TE.grid5_accuracy(kern, col="pred_src_us", tag="src").drop(columns=["n", "goal"])
            tab = tab.merge(alt, on="regime")
        print(tab.to_string(**fmt))
        t = m[m["kernel"] == kern]
        stage = "blind" if kern in ("sgl_topk", "fi_topk") else "first look"
        what = {"sgl_topk": "fifth blind top-k set (66), main 8b74743's committed prices",
                "fi_topk": "grid5 (66), shipped model (2 values per round) committed prices",
                "fi_topk_pt": "grid5 page-table transform (66), source model committed prices",
                "trt_topk": "grid5 (66), indexerTopK.cu structure + SGLang's terms, committed prices"}[kern]
        BOARD.add(f"top-k {TE.GRID5_LABEL[kern]}", stage, what, 100.0 * (t["pred_us"] / t["median_us"] - 1.0),
                  int((tab["goal"] == "met").sum()), len(tab))
    if (m["kernel"] == "fi_topk_pt").any():
        print("FlashInfer's page-table transform minus its ragged transform (us; per dispatch path):")
        print(TE.page_table_cost().to_string(index=False))

#: the commit that holds top-k grid 6's predictions (main's model and TensorRT-LLM's job model), made before measuring
TOPK_GRID6_PREDICTION_COMMIT = "154e798"


def _topk_trtllm_grid6_table(hw) -> None:
    """TensorRT-LLM's indexer top-k job model (simulator/kernels/topk_trtllm.py: block-scan rounds per step, the final
    sort of the threshold bin, the 256 / 1024-thread widths; 3 constants fitted on grid 5's TRT_FIT rows): grid 5's
    rows (fit / looked-at) and the blind grid 6 (30 decode shapes, SGLang's as controls), both models committed before
    measuring."""
    from simulator.calibration import topk_engines as TE

    if not (TE.F.DATA_DIR / TE.GRID5_MEASURED).is_file():
        return
    fmt = {"index": False, "float_format": lambda v: f"{v:.1f}"}
    x = TE.fit_trtllm_job(hw)
    m = TE.measured5()
    t = m[m["kernel"] == TE.CSV_KERNEL["trtllm"]].reset_index(drop=True)
    j = TE.trtllm_job_frame(list(zip(t["dist"], t["rows"].astype(int), t["n"].astype(int))))
    t["pred_job_us"] = TE.predict_trtllm_job(j, hw, x)
    fit = TE.trt_fit_mask(t)
    reg = [f"top-k trtllm grid5 ({'fit' if f else 'looked-at'}): {r}" for f, r in zip(fit, t["regime"])]
    tab = TE._errors(t["pred_us"], t["median_us"], reg, "main").merge(
        TE._errors(t["pred_job_us"], t["median_us"], reg, "job").drop(columns="n"), on="regime")
    tab["goal"] = TE.goal(tab, "job")
    print(f"\n== top-k TensorRT-LLM job model (indexerTopK.cu @ 07339e94: block-scan rounds per step, rank count <= 512 "
          f"staged items / BlockRadixSort above, 256 / 1024-thread widths) fitted on grid5's TRT_FIT ({x['fit_rows']} "
          f"rows, rms log {x['rms_log_error']}): scan {x['scan']}, radix {x['radix']}, rank {x['rank']} loop rounds of "
          f"iter_us {x['iter_us']} us; grid5's other rows are LOOKED-AT (their first-look errors were seen); main = "
          f"main's model (SGLang's terms borrowed), job = the job model; |error| median / p90, signed median, %")
    print(tab.to_string(**fmt))
    e = 100.0 * (t["pred_job_us"] / t["median_us"] - 1.0)
    BOARD.add("top-k trtllm", "looked-at", "grid5 (60 not fitted), job model fitted on TRT_FIT", e[~fit],
              int((tab["goal"][~tab["regime"].str.contains("(fit)", regex=False)] == "met").sum()),
              int((~tab["regime"].str.contains("(fit)", regex=False)).sum()))
    if not (TE.F.DATA_DIR / TE.GRID6_MEASURED).is_file():
        print(f"top-k grid6: not measured yet ({TE.GRID6_PREDICTION} holds the predictions)")
        return
    g = TE.grid6_accuracy()
    m6 = TE.measured6()
    print(f"\n== top-k grid6 (30 new decode shapes, 1-240 rows, 3.1K-720K columns; predicted before measuring, commit "
          f"{TOPK_GRID6_PREDICTION_COMMIT}: {TE.GRID6_PREDICTION}; measured {TE.GRID6_MEASURED}); every row BLIND: "
          f"main = main's model, job = TensorRT-LLM's job model (goal judged on it; SGLang's controls on main's); "
          f"{int(m6['wrong'].sum())} rows marked WRONG SELECTION (threshold-bin ties, time kept); |error| median / p90, "
          f"signed median, %")
    print(g.to_string(**fmt))
    _topk_grid_board(m6, g, (
        (("trt_topk",), "trtllm", "pred_job_us", "job", "grid6 (30), job model's committed prices"),
        (("trt_topk",), "trtllm", "pred_main_us", "main", "grid6 (30), main's model's committed prices"),
        (("sgl_topk",), "sglang", "pred_main_us", "main", "grid6 controls (30), main's committed prices")))


def _topk_grid_board(m, g, lines) -> None:
    """The BOARD rows of a blind top-k grid (`m`: TE.measuredN, `g`: TE.gridN_accuracy): per (CSV kernels, label,
    prediction column, accuracy tag, caption) the signed errors of that column over the kernels' rows and the label's
    regimes met on the tag's median / p90 (<= 10 % / <= 25 %)."""
    for kerns, lab, col, tag, what in lines:
        s = m[m["kernel"].isin(kerns)]
        gg = g[g["regime"].str.startswith(f"top-k {lab} ")]
        met = int(((gg[f"{tag}_med"] <= 10.0) & (gg[f"{tag}_p90"] <= 25.0)).sum())
        BOARD.add(f"top-k {lab}", "blind", what, 100.0 * (s[col] / s["median_us"] - 1.0), met, len(gg))


def _topk_trtllm_grid8_table() -> None:
    """TensorRT-LLM's top-k on the blind grid 8 (50 new shapes, 75 TensorRT-LLM rows: its prefill entry and its decode
    dispatch at 520-4000 rows, split long decode rows, single-CTA decode rows; 8 SGLang controls): main a6875d8's
    product price beside this one (the prefill entry's launch, the kind's closed load loop, the split path's handshake),
    both committed before measuring."""
    import numpy as np

    from simulator.calibration import topk_engines as TE

    commit = "ea62d27"   # the commit that holds the grid 8 predictions
    if not (TE.F.DATA_DIR / TE.GRID8_MEASURED).is_file():
        return
    g = TE.grid8_accuracy()
    m8 = TE.measured8()
    print(f"\n== top-k grid8 (50 new shapes: TensorRT-LLM's prefill entry and decode dispatch at 520-4000 rows x 2.5K-300K, "
          f"split long decode rows 1-80 x 88K-730K, single-CTA decode rows; predicted before measuring, commit {commit}: "
          f"{TE.GRID8_PREDICTION}; measured {TE.GRID8_MEASURED}); every row BLIND: main = main a6875d8's product price "
          f"(the decode dispatch for every row: it had no prefill entry), new = the product's price now (goal judged on "
          f"it; SGLang's controls on main's); the closed-loop exponent was chosen with grids 5-7 LOOKED-AT; "
          f"{int(m8['wrong'].sum())} SGLang rows marked WRONG SELECTION (threshold-bin ties, time kept); |error| "
          f"median / p90, signed median, %")
    print(g.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    trt = m8["kernel"].isin(["trt_topk", "trt_topk_pf"])
    _topk_grid_board(m8, g, (
        (("trt_topk", "trt_topk_pf"), "trtllm", "pred_us", "new", "grid8 (75), the product's price, committed"),
        (("trt_topk", "trt_topk_pf"), "trtllm", "pred_main_us", "main", "grid8 (75), main a6875d8's price, committed"),
        (("sgl_topk",), "sglang", "pred_main_us", "main", "grid8 controls (8), main's committed prices")))
    pf = m8[m8["kernel"] == "trt_topk_pf"]
    e_pf = 100.0 * (pf["pred_us"] / pf["median_us"] - 1.0)
    print(f"  TensorRT-LLM rows in all: {int(trt.sum())}; the prefill entry (25, the launch the product's prefill phase "
          f"prices now): |error| median {np.median(np.abs(e_pf)):.1f} %, p90 {np.percentile(np.abs(e_pf), 90):.1f} %")


def _topk_trtllm_grid9_table() -> None:
    """TensorRT-LLM's top-k on the blind grid 9 (46 new decode-dispatch shapes where the block width moves: split rows
    with 1024- and 512-thread slices at 1-64 rows, short / mid rows through the narrow 256-thread CTAs at 520-3900
    rows; 6 SGLang controls): main ca60389's product price beside this one (a 1024-thread round costs
    topk_trtllm.WIDE_ROUND_COST 512-thread rounds, a narrow CTA's radix sort serializes 256 / 512 of the fitted one),
    both committed before measuring."""
    import numpy as np

    from simulator.calibration import topk_engines as TE

    commit = "dfce53b"   # the commit that holds the grid 9 predictions
    if not (TE.F.DATA_DIR / TE.GRID9_MEASURED).is_file():
        return
    g = TE.grid9_accuracy()
    m9 = TE.measured9()
    print(f"\n== top-k grid9 (46 new shapes of TensorRT-LLM's decode dispatch: split rows with 1024- / 512-thread slices "
          f"at 1-64 rows x 130K-960K, 520-3900 short / mid rows through 256-thread CTAs; predicted before measuring, "
          f"commit {commit}: {TE.GRID9_PREDICTION}; measured {TE.GRID9_MEASURED}); every row BLIND: main = main "
          f"ca60389's product price, new = the product's price now (goal judged on it; SGLang's controls on main's); "
          f"WIDE_ROUND_COST fitted on the named TRT_WIDE_FIT rows (grids 6 and 8), the narrow sort share chosen with "
          f"grids 7-8 LOOKED-AT; {int(m9['wrong'].sum())} rows WRONG SELECTION; |error| median / p90, signed median, %")
    print(g.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    _topk_grid_board(m9, g, (
        (("trt_topk",), "trtllm", "pred_us", "new", "grid9 (46), the product's price, committed"),
        (("trt_topk",), "trtllm", "pred_main_us", "main", "grid9 (46), main ca60389's price, committed"),
        (("sgl_topk",), "sglang", "pred_main_us", "main", "grid9 controls (6), main's committed prices")))
    trt = m9[m9["kernel"] == "trt_topk"]
    for c, lab in (("pred_main_us", "main ca60389"), ("pred_us", "now")):
        e = 100.0 * (trt[c] / trt["median_us"] - 1.0)
        print(f"  TensorRT-LLM, all 46 rows, {lab}: |error| median {np.median(np.abs(e)):.1f} %, p90 "
              f"{np.percentile(np.abs(e), 90):.1f} %, signed median {np.median(e):+.1f} %")


def _topk_trtllm_grid10_table() -> None:
    """TensorRT-LLM's top-k on the blind grid 10 (25 new decode-dispatch shapes: split launches whose 1024-thread CTAs
    outnumber the SMs at 17-120 rows, one-wave 1024-thread and multi-wave 512-thread split launches as controls; 4
    SGLang controls): main 46789a6's product price beside this one (a 1024-thread CTA alone on its SM,
    topk_trtllm.WIDE_ALONE), both committed before measuring."""
    import numpy as np

    from simulator.calibration import topk_engines as TE

    commit = "b5b2d41"   # the commit that holds the grid 10 predictions
    if not (TE.F.DATA_DIR / TE.GRID10_MEASURED).is_file():
        return
    g = TE.grid10_accuracy()
    m = TE.measured10()
    print(f"\n== top-k grid10 (25 new shapes of TensorRT-LLM's decode dispatch: 1024-thread split launches at 17-120 "
          f"rows x 310K-880K over 2-10 waves of one CTA per SM, one-wave and 512-thread controls; predicted before "
          f"measuring, commit {commit}: {TE.GRID10_PREDICTION}; measured {TE.GRID10_MEASURED}); every row BLIND: main "
          f"= main 46789a6's product price, new = the product's price now (goal judged on it; SGLang's controls on "
          f"main's); WIDE_ALONE chosen from the source (64 registers x 1024 threads) with grids 8-9's multi-wave rows "
          f"LOOKED-AT, nothing refitted; {int(m['wrong'].sum())} rows WRONG SELECTION; |error| median / p90, signed "
          f"median, %")
    print(g.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    for kern, lab, col, tag, what in (
            ("trt_topk", "trtllm", "pred_us", "new", "grid10 (25), the product's price, committed"),
            ("trt_topk", "trtllm", "pred_main_us", "main", "grid10 (25), main 46789a6's price, committed"),
            ("sgl_topk", "sglang", "pred_main_us", "main", "grid10 controls (4), main's committed prices")):
        t = m[m["kernel"] == kern]
        gg = g[g["regime"].str.startswith(f"top-k {lab} ")]
        met = int(((gg[f"{tag}_med"] <= 10.0) & (gg[f"{tag}_p90"] <= 25.0)).sum())
        BOARD.add(f"top-k {lab}", "blind", what, 100.0 * (t[col] / t["median_us"] - 1.0), met, len(gg))
    trt = m[m["kernel"] == "trt_topk"]
    for c, lab in (("pred_main_us", "main 46789a6"), ("pred_us", "now")):
        e = 100.0 * (trt[c] / trt["median_us"] - 1.0)
        print(f"  TensorRT-LLM, all 25 rows, {lab}: |error| median {np.median(np.abs(e)):.1f} %, p90 "
              f"{np.percentile(np.abs(e), 90):.1f} %, signed median {np.median(e):+.1f} %")


def _topk_trtllm_grid7_table() -> None:
    """TensorRT-LLM's top-k as the product prices it (simulator/kernels/topk_trtllm.py add_priced_ops: the job model,
    the split path's slice / merge steps, co-resident CTAs' scans and sorts serialized per SM) on the blind grid 7
    (55 new shapes, decode 1-511 / prefill 512-4096 rows, SGLang's as controls), beside main 6648a5d's product price and
    its calibration-only job model, all three committed before measuring."""
    from simulator.calibration import topk_engines as TE

    commit = "c11b82f"   # the commit that holds the grid 7 predictions
    if not (TE.F.DATA_DIR / TE.GRID7_MEASURED).is_file():
        return
    g = TE.grid7_accuracy()
    m7 = TE.measured7()
    print(f"\n== top-k grid7 (55 new shapes, decode 1-511 / prefill 512-4096 rows, 2.9K-256K columns; predicted before "
          f"measuring, commit {commit}: {TE.GRID7_PREDICTION}; measured {TE.GRID7_MEASURED}); every row BLIND: main = "
          f"main 6648a5d's product price (SGLang's terms borrowed), mainjob = its calibration-only job model, new = "
          f"the product's price now (goal judged on it; SGLang's controls on main's); {int(m7['wrong'].sum())} rows "
          f"marked WRONG SELECTION (threshold-bin ties, time kept); two SGLang controls (recorded 1 x 3,700, 64 x 2,900) "
          f"repeat third-blind-set shapes; |error| median / p90, signed median, %")
    print(g.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    _topk_grid_board(m7, g, (
        (("trt_topk",), "trtllm", "pred_us", "new", "grid7 (55), the product's price, committed prices"),
        (("trt_topk",), "trtllm", "pred_mainjob_us", "mainjob", "grid7 (55), main 6648a5d's job model, committed"),
        (("trt_topk",), "trtllm", "pred_main_us", "main", "grid7 (55), main 6648a5d's product price, committed"),
        (("sgl_topk",), "sglang", "pred_main_us", "main", "grid7 controls (55), main's committed prices")))


#: the commit that holds the third GEMM hold-out's predictions (this model and the model before the small-M rule)
FRESH3_PREDICTION_COMMIT = "9f00390"


def _fresh3_table(f) -> None:
    """The third GEMM hold-out (bf16 / per-tensor fp8 at 26 real models' decode-layer (K, N) x M 1 / 12 / 48), predicted
    and committed before it was measured by two models: `rule` = cuBLASLt's selection table where it covers the shape,
    its structural rule elsewhere, both priced as a K-step chain; `before` = the model at 1081e97 (the table with a
    per-CTA stream rate, full-device pricing outside it)."""
    from simulator.calibration import small_m_gemm_holdout as H

    meas = f.with_name(f.stem + "_fresh3.csv")
    d = meas.parent
    pred, base = (d / "production_kernels_fresh3_prediction_2026-11-26.csv",
                  d / "production_kernels_fresh3_prediction_1081e97_2026-11-26.csv")
    if not (meas.is_file() and pred.is_file() and base.is_file()):
        return
    tab = H.accuracy(pred, base, meas)
    tab["goal"] = np.where((tab["rule_med"] <= 10) & (tab["rule_p90"] <= 25), "met", "MISSED")
    print(f"\n== third GEMM hold-out, real decode-layer shapes (predicted before measuring, commit "
          f"{FRESH3_PREDICTION_COMMIT}: {pred.name} = the small-M rule + K-step chain, {base.name} = the model at "
          f"1081e97; measured {meas.name}; weights rotated past the L2; every row held out from both; the current "
          f"chain terms and tile-count split cut are FITTED on these rows since: the fourth set below judges them); "
          f"|error| median / p90 and "
          f"signed median, %; selection table = inside an observed entry of cublaslt_small_m.yaml")
    print(tab.to_string(index=False, float_format=lambda v: f"{v:.1f}"))


#: the commit that holds the fourth GEMM set's predictions (made before it was measured)
BLIND4_PREDICTION_COMMIT = "35f0ab1"


def _blind4_table(f) -> None:
    """The fourth small-M GEMM set (bf16 / per-tensor fp8 at 17 decode-layer (K, N) of Qwen2.5-14B / 32B, Llama-3.2-3B
    and Mistral-Nemo-12B x M 1 / 24 / 40), BLIND: `tile` = the committed predictions of the tile-count split rule with
    the chain terms of that commit, `db3789c` = the model before it (both made before the measurement); `now` = the
    current terms (the chain refitted on the in-graph price after this set was measured, on the three earlier
    campaigns only: held out, not blind). Then how often each model's split choice matches the profiler's."""
    import os
    import tempfile

    from hwmodels.spec import load_hardware
    from simulator.calibration import small_m_gemm_holdout as H

    d = f.parent
    meas = d / f.name.replace("2026-11-26", "2026-11-27").replace(".csv", "_blind4.csv")
    pred, base = (d / "production_kernels_blind4_prediction_2026-11-27.csv",
                  d / "production_kernels_blind4_prediction_db3789c_2026-11-27.csv")
    if not (meas.is_file() and pred.is_file() and base.is_file()):
        return
    tab = H.accuracy(pred, base, meas, "M<=64 (M 1/24/40)", ("tile", "db3789c"))
    with tempfile.TemporaryDirectory() as tmp:
        now_csv = os.path.join(tmp, "now.csv")
        H.predict(load_hardware("H100-SXM"), out=now_csv, blind4=True)
        now = H.accuracy(now_csv, pred, meas, "M<=64 (M 1/24/40)", ("now", "tile"))
    tab = tab.merge(now[["regime", "now_med", "now_p90", "now_signed"]], on="regime")
    tab["goal"] = np.where((tab["tile_med"] <= 10) & (tab["tile_p90"] <= 25), "met", "MISSED")
    _board_table(tab, "blind", "fourth small-M GEMM set (102)")
    print(f"\n== fourth GEMM set, BLIND: decode layers of Qwen2.5-14B (TP 1-4), Qwen2.5-32B, Llama-3.2-3B, Mistral-Nemo-12B "
          f"(predicted before measuring, commit {BLIND4_PREDICTION_COMMIT}: tile = {pred.name}, db3789c = {base.name}; "
          f"measured {meas.name}); now = the current terms (held out, fitted after the measurement without these rows); "
          f"|error| median / p90 and signed median, %; goal judged on the blind first look")
    print(tab.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    notes = meas.with_name(meas.stem + "_notes.txt")
    for tag, ch in (("tile", pred.with_name(pred.stem + "_choices.csv")),
                    ("db3789c", base.with_name(base.stem + "_choices.csv"))):
        if notes.is_file() and ch.is_file():
            a = H.split_agreement(ch, notes)
            print(f"  split-K choice, {tag}: " + "; ".join(
                f"{r.kernel} {r.agree} of {r.shapes} agree (observed {r.observed_split} split, predicted "
                f"{r.predicted_split})" for r in a.itertuples()))


# ---- fp8 GEMMs: the campaign's rows with weights rotated past the L2, and the fifth (blind) set ----------------------

def _fp8_rotated_board(tab) -> None:
    """The campaign's per-tensor / per-row / block GEMM rows re-measured with their weights rotated past the L2, on the
    summary board beside the first campaign's rows. In that first campaign every timed graph re-read one weight: the
    decode rows of weights < 50 MB (K 4096 x N 6144, 1536 x 24576, 2048 x 7168, 7168 x 576) timed L2 reads (per-tensor
    M 1, K 4096, N 6144: 8.3 us there, 12.0 us rotated), which a serving step, reading each layer's weights once, never
    sees and the model does not price: its decode misses (per-tensor +22 %, block +12 % signed) are those rows."""
    held = tab[tab["part"] != "fit"]
    _board_table(held, "held out", "production kernels campaign, weights rotated past the L2")


#: the commit that holds the fifth GEMM set's predictions (made before it was measured)
BLIND5_PREDICTION_COMMIT = "e6f4e44"


def _blind5_table() -> None:
    """The fifth GEMM set, BLIND: fp8 per-tensor / per-row / block scales at 99 shapes (decode M 2-56, mid M 96-768,
    prefill M 1536-8192; the (K, N) of Llama-3.1-8B / 70B, Qwen2.5-7B / 72B and DeepSeek-V3 layers at TP 1-8), priced by
    the model at 65f5d1f and by the in-graph model (every row priced with its launch, gemm_fp8_block refitted under it),
    both committed before the measurement; goal judged on the in-graph model (the one shipped)."""
    from simulator.calibration import fit_production_topk_gemm as FP

    pred, meas = FP.DATA_DIR / FP.BLIND5_PREDICTION, FP.DATA_DIR / FP.BLIND5_MEASURED
    if not (pred.is_file() and meas.is_file()):
        return
    tab = FP.blind5_accuracy(pred, meas)
    for tag in FP.BLIND5_MODELS.values():
        tab[f"{tag}_goal"] = np.where((tab[f"{tag}_med"] <= 10) & (tab[f"{tag}_p90"] <= 25), "met", "MISSED")
    _board_table(tab, "blind", "fifth fp8 GEMM set (99), in-graph model", goal="in-graph_goal")
    _board_table(tab, "blind", "fifth fp8 GEMM set (99), model at 65f5d1f", goal="65f5d1f_goal")
    print(f"\n== fifth GEMM set, BLIND: fp8 per-tensor / per-row / 1x128-128x128 block scales (torch._scaled_mm, "
          f"cuBLASLt), decode M 2-56, mid M 96-768, prefill M 1536-8192 at the (K, N) of Llama-3.1-8B / 70B, Qwen2.5-7B / "
          f"72B, DeepSeek-V3 layers (TP 1-8) (predicted before measuring, commit {BLIND5_PREDICTION_COMMIT}: {pred.name}; "
          f"measured {meas.name}; weights rotated past the L2; every row blind); 65f5d1f = the model at main 65f5d1f "
          f"(one graph launch subtracted per full-device kernel), in-graph = every row priced with its launch, the block "
          f"kind refitted under it on its 4 fit rows; |error| median / p90 and signed median, %")
    print(tab.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    print("  block decode misses: cuBLASLt's block-scaled kernel (nvjet ..._Ablk128_Bvec128, one 128 x 128 tile per CTA) "
          "splits K at decode where its tiles are few (K 7168 x N 1536 and K 14336 x N 4096 at M 28, K 8192 x N 1280 at "
          "M 56: _splitK_ kernels + splitKreduce, +37 to +67 %); the block model is DeepGEMM's tile walk, which never "
          "splits K (kernels in the _notes file)")


def production_allreduce() -> None:
    """All-reduce at decode sizes (lab/kernels/measure_allreduce.py, 2 and 4 x H100): per rank count, the first look
    (the terms before that measurement: at 2 ranks NCCL's borrowed from the H200 eager fit and the custom kernels from
    source, at 4 ranks the terms fitted on 2 ranks alone) and the committed terms (fitted on 4 KiB / 1 MiB / 16 MiB at 2
    and 4 ranks), per implementation and size regime, fit rows apart from held-out rows (symmetric memory and NCCL eager
    never fitted); then the 2-rank campaign rerun on the 4-GPU host, every row held out."""
    from hwmodels.spec import load_hardware
    from simulator.calibration import fit_production_allreduce as FA

    hw = load_hardware("H100-SXM")
    for f in sorted(FA.DATA_DIR.glob("allreduce_nvidia*.csv")):
        if "_first_look_" in f.name:
            continue
        fl = f.with_name(f.name.replace("allreduce_", "allreduce_first_look_", 1))
        tab = FA.accuracy(f, fl if fl.is_file() else None, hw)
        tab["goal"] = np.where(tab["part"] == "fit", "",
                               np.where((tab["fitted_med"] <= 10) & (tab["fitted_p90"] <= 25), "met", "MISSED"))
        x4 = "_x4_" in f.name
        first = ("the terms fitted on 2 ranks alone, priced before this measurement: every row held out from them"
                 if x4 else "terms before the measurement")
        print(f"\n== {hw.name}: {f.name}, all-reduce (first look = {first}; fitted = committed terms; goal median "
              f"<= 10 %, p90 <= 25 % on held-out rows)")
        print(tab.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
        if x4 and fl.is_file():
            print(f"-- first look at 4 ranks per implementation and size regime, every row ({fl.name}; "
                  f"the fitted terms' structure was chosen after these rows were read)")
            print(FA.first_look_accuracy(f, fl).to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    for f in sorted(FA.DATA_DIR.glob("allreduce_check_*.csv")):
        tab = FA.accuracy(f, None, hw, fitted=False).drop(columns=["first_look_med", "first_look_p90"])
        print(f"\n== {hw.name}: {f.name}, all-reduce at 2 ranks rerun on GPUs 0-1 of the 4-GPU host (never fitted; "
              f"committed terms)")
        print(tab.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    engine_allreduce_blind()
    engine_allreduce_blind4()
    engine_allreduce_blind4_now()
    engine_allreduce_blind6()
    engine_allreduce_blind7()


#: the commit that holds the engine all-reduce prediction (engine_allreduce.PRED_CSV), made before the measurement
ENGINE_AR_PREDICTION_COMMIT = "72e4cc9"


def engine_allreduce_blind() -> None:
    """The engines' own all-reduce kernels (flashinfer-python 0.6.4: vLLM's custom all-reduce, TensorRT-LLM's fusion
    plain and with residual + RMSNorm; lab/kernels/measure_engine_allreduce.py), signed error (model / measured - 1)
    per implementation x size regime x ranks: `blind` = the prediction committed before the measurement (H100 terms
    fitted on the project's own kernel + the source's structure; nothing of these kernels fitted), `now` = the current
    model: the engines' own terms (Efficiency.engine_ar) FITTED on the 2 x H100 rows (fit rows there; the 4 x H200 rows
    held out: another device and host, priced with the H100-SXM terms)."""
    import pandas as pd

    from hwmodels.spec import load_hardware
    from simulator.calibration import engine_allreduce as EA

    meas_f = sorted(EA.DATA_DIR.glob("engine_allreduce_nvidia*.csv"))
    pred_f = EA.DATA_DIR / EA.PRED_CSV
    if not meas_f or not pred_f.is_file():
        return
    hw = load_hardware("H100-SXM")
    for f in meas_f:
        meas = pd.read_csv(f)
        pred = pd.read_csv(pred_f)
        blind = EA.blind_table(pred, meas)
        cur = pred.drop(columns=["pred_us"]).copy()
        cur["pred_us"] = EA.predict_us(cur, hw)
        now = EA.blind_table(cur, meas)
        tab = blind[["impl", "world", "regime", "n", "meas_us"]].copy()
        tab["regime"] = tab["regime"].str[2:]
        for name, t in (("blind", blind), ("now", now)):
            tab[f"{name}_med%"] = 100 * t["median"]
            tab[f"{name}_lo%"] = 100 * t["lo"]
            tab[f"{name}_hi%"] = 100 * t["hi"]
        dev, gpus = meas["device"].iloc[0], int(meas["world"].max())
        where = (f"{dev} x{gpus} ({f.name}; 2-rank rows on GPUs 0-1 of the same host), priced with the H100-SXM "
                 "terms (the lent machine was H200s: same NVLink 4 x 18, same SM count); HELD OUT of the engines' fit" if
                 "H200" in dev else
                 f"{dev} x{gpus} ({f.name}; the device the terms were fitted on; the same committed predictions, "
                 "measured the day after on another lent host); the engines' terms were FITTED on these rows (now = "
                 "fit error)")
        print(f"\n== engines' all-reduce kernels on {where}: blind = {pred_f.name} (commit "
              f"{ENGINE_AR_PREDICTION_COMMIT}, before measuring), now = current model; signed model/measured - 1; "
              f"{blind.attrs['wrong']} rows marked WRONG left out")
        print(tab.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
        for name, t in (("blind", EA.blind_rows(pred, meas)), ("now", EA.blind_rows(cur, meas))):
            e = t["err"].abs()
            print(f"   {name}: all {len(t)} rows |error| median {100 * e.median():.1f} %, p90 {100 * e.quantile(0.9):.1f} %"
                  f"; signed median {100 * t['err'].median():+.1f} %")


#: the commit that holds the blind 4-rank prediction (engine_allreduce.BLIND4_PRED_CSV), made before the measurement
ENGINE_AR_BLIND4_COMMIT = "012b9ed"


def _regime_errors(df, part: str) -> list[dict]:
    """Per implementation x size regime of blind_rows' frame: n, measured median, |error| median and p90, signed."""
    rows = []
    for (impl, reg), t in df.groupby(["impl", "regime"]):
        e = 100 * t["err"]
        rows.append({"part": part, "impl": impl, "regime": reg[2:], "n": len(t),
                     "meas_us": t["median_us"].median(), "med%": e.abs().median(), "p90%": e.abs().quantile(0.9),
                     "signed%": e.median()})
    return rows


def engine_allreduce_blind4() -> None:
    """The engines' all-reduce kernels with their fitted terms (Efficiency.engine_ar, simulator/calibration/
    engine_allreduce.py fit_engine_terms on the 2 x H100 rows only), per part: the fit rows, the 4 x H200 rows (held
    out: another device and host, priced with the H100-SXM terms) and the BLIND 4 x H100 rows (4 ranks, shapes in no
    earlier campaign; prediction committed before the measurement): |error| median, p90 and signed median per
    implementation x size regime."""
    import pandas as pd

    from hwmodels.spec import load_hardware
    from simulator.calibration import engine_allreduce as EA
    from simulator.calibration.fit_production_allreduce import own_kernel

    blind_f = sorted(EA.DATA_DIR.glob("engine_allreduce_blind4_nvidia*.csv"))
    pred_f = EA.DATA_DIR / EA.BLIND4_PRED_CSV
    if not blind_f or not pred_f.is_file():
        return
    hw = load_hardware("H100-SXM")
    rows, totals = [], []
    for part, f in (("fit 2xH100", EA.DATA_DIR / EA.FIT_CSV), ("held-out 4xH200", EA.DATA_DIR / EA.HELD_OUT_CSV)):
        meas = pd.read_csv(f)
        cur = EA.grid().assign(pred_us=lambda d: EA.predict_us(d, hw))
        r = EA.blind_rows(cur, meas)
        rows += _regime_errors(r, part)
        totals.append((part, r))
    meas = pd.read_csv(blind_f[-1])
    r = EA.blind_rows(pd.read_csv(pred_f), meas)
    rows += _regime_errors(r, "BLIND 4xH100")
    totals.append(("BLIND 4xH100", r))
    for part, stage in (("held-out 4xH200", "held out"), ("BLIND 4xH100", "blind")):
        t = pd.DataFrame([x for x in rows if x["part"] == part])
        ok = (t["med%"] <= 10) & (t["p90%"] <= 25)
        BOARD.add("engines' all-reduce", stage, f"{part} (vLLM / TensorRT-LLM kernels)",
                  100 * dict(totals)[part]["err"], int(ok.sum()), len(t))
    old = EA.blind4_grid().assign(pred_us=lambda d: EA.predict_us(d, own_kernel(hw)))
    totals.append(("BLIND rows, own-kernel terms", EA.blind_rows(old, meas)))
    print(f"\n== engines' all-reduce kernels, fitted terms {hw.efficiency.engine_ar} (fit_engine_terms on {EA.FIT_CSV} "
          f"only): fit rows, held-out H200 rows, BLIND rows ({blind_f[-1].name}, 4 ranks, tokens "
          f"{list(EA.BLIND4_TOKENS)} x hidden {list(EA.BLIND4_HIDDENS)}; prediction {pred_f.name}, commit "
          f"{ENGINE_AR_BLIND4_COMMIT}, before measuring); |model/measured - 1| median / p90, signed median")
    print(pd.DataFrame(rows).to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    for part, t in totals:
        e = t["err"].abs()
        print(f"   {part}: {len(t)} rows |error| median {100 * e.median():.1f} %, p90 {100 * e.quantile(0.9):.1f} %; "
              f"signed median {100 * t['err'].median():+.1f} %; {t.attrs['wrong']} WRONG left out")


def engine_allreduce_blind4_now() -> None:
    """The 4 x H100 blind4 rows priced by the current model (the per-kernel structure: no flag barrier in the Lamport
    one-shot, the fused RMSNorm's norm term, terms refitted on the 2 x H100 rows): LOOKED-AT, since these rows were
    measured before the rule and seen after it was fixed (nothing was chosen on them; the blind figure stays the
    committed prediction's, above)."""
    import pandas as pd

    from hwmodels.spec import load_hardware
    from simulator.calibration import engine_allreduce as EA

    blind_f = sorted(EA.DATA_DIR.glob("engine_allreduce_blind4_nvidia*.csv"))
    if not blind_f:
        return
    hw = load_hardware("H100-SXM")
    r = EA.blind_rows(EA.blind4_grid().assign(pred_us=lambda d: EA.predict_us(d, hw)), pd.read_csv(blind_f[-1]))
    t = pd.DataFrame(_regime_errors(r, "now"))
    met = int(((t["med%"] <= 10) & (t["p90%"] <= 25)).sum())
    e = 100 * r["err"]
    print(f"   BLIND 4xH100 rows, current model (LOOKED-AT: seen after the per-kernel rule was fixed): {len(r)} rows "
          f"|error| median {e.abs().median():.1f} %, p90 {e.abs().quantile(0.9):.1f} %; signed median "
          f"{e.median():+.1f} %; regimes met {met} of {len(t)}")
    BOARD.add("engines' all-reduce", "looked-at", "BLIND 4xH100 rows, current model (after the rule)", e, met, len(t))


#: the commit that holds the blind6 prediction (engine_allreduce.BLIND6_PRED_CSV), made before the measurement
ENGINE_AR_BLIND6_COMMIT = "ba55d34"


def engine_allreduce_blind6(data_dir=None) -> None:
    """The engines' all-reduce BLIND grid 6 (simulator/calibration/engine_allreduce.py BLIND6_*: 2 and 4 ranks, tokens
    3-640 x hidden 3072 / 6144 + 1280 x 6144, shapes in no earlier campaign; lab/kernels/measure_engine_allreduce.py
    --grid blind6 on a 4-GPU host, lab/kernels/run_engine_allreduce_blind6.sh), priced before the measurement by the
    model at 65f5d1f (main) and by the per-kernel-structure model (new: no flag barrier in the Lamport one-shot, the
    fused RMSNorm's serialized reductions, terms refitted on the 2 x H100 rows), both committed in BLIND6_PRED_CSV:
    per implementation x ranks x size regime n, |error| median / p90 and signed median of each, regimes met (median
    <= 10 %, p90 <= 25 %). 'not measured yet' until the measured CSV (BLIND6_MEAS_GLOB) is committed beside it."""
    from simulator.calibration import engine_allreduce as EA

    d = EA.DATA_DIR if data_dir is None else data_dir
    pred_f = d / EA.BLIND6_PRED_CSV
    meas_f = sorted(d.glob(EA.BLIND6_MEAS_GLOB))
    head = (f"\n== engines' all-reduce kernels, BLIND grid 6 (2 and 4 ranks, tokens {list(EA.BLIND6_TOKENS)} x hidden "
            f"{list(EA.BLIND6_HIDDENS)} + {list(EA.BLIND6_EXTRA)}; prediction {pred_f.name}, commit "
            f"{ENGINE_AR_BLIND6_COMMIT}, before measuring: main = the model at {EA.BLIND6_MAIN_COMMIT}, new = the "
            "per-kernel structure)")
    _engine_allreduce_blind_table(6, d, pred_f, meas_f, head)


def _engine_allreduce_blind_table(grid: int, d, pred_f, meas_f: list, head: str) -> None:
    """The table, totals and BOARD rows of the engines' all-reduce blind grid `grid` (6 or 7; both score
    EA.blind6_rows): `pred_f` its committed prediction, `meas_f` the measured CSVs in `d` (the last one is scored),
    `head` its caption; 'not measured yet' while either is missing."""
    import pandas as pd

    from simulator.calibration import engine_allreduce as EA

    if not pred_f.is_file() or not meas_f:
        print(head + f": not measured yet (expected {d.name}/engine_allreduce_blind{grid}_<device>_<date>.csv)")
        return
    meas = pd.read_csv(meas_f[-1])
    r = EA.blind6_rows(pd.read_csv(pred_f), meas)
    if not len(r):
        print(head + f": {meas_f[-1].name} holds no row of the grid")
        return
    print(head + f" measured {meas_f[-1].name} ({meas['device'].iloc[0]}); |model/measured - 1| median / p90, signed "
          f"median, %; {r.attrs['wrong']} rows marked WRONG left out")
    rows = []
    for (impl, g, reg), t in r.groupby(["impl", "world", "regime"]):
        row = {"impl": impl, "world": g, "regime": reg[2:], "n": len(t), "meas_us": t["median_us"].median()}
        for m in ("main", "new"):
            e = 100 * t[f"err_{m}"]
            row.update({f"{m}_med": e.abs().median(), f"{m}_p90": e.abs().quantile(0.9), f"{m}_signed": e.median()})
            row[f"{m}_goal"] = "met" if row[f"{m}_med"] <= 10 and row[f"{m}_p90"] <= 25 else "MISSED"
        rows.append(row)
    tab = pd.DataFrame(rows)
    print(tab.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    for m in ("main", "new"):
        e = 100 * r[f"err_{m}"]
        met = int((tab[f"{m}_goal"] == "met").sum())
        print(f"   {m}: {len(r)} rows |error| median {e.abs().median():.1f} %, p90 {e.abs().quantile(0.9):.1f} %; signed "
              f"median {e.median():+.1f} %; regimes met {met} of {len(tab)}")
        BOARD.add("engines' all-reduce", "blind", f"BLIND grid {grid}, 2+4 ranks ({m} model's committed prices)", e, met,
                  len(tab))


#: the commit that holds blind grid 7's prediction (engine_allreduce.BLIND7_PRED_CSV), made before the measurement
ENGINE_AR_BLIND7_COMMIT = "ea4904a"


def engine_allreduce_blind7(data_dir=None) -> None:
    """The engines' all-reduce BLIND grid 7 (simulator/calibration/engine_allreduce.py BLIND7_*: 2 and 4 ranks, hidden
    4096 / 5120 / 7168 / 8192 at token counts in no earlier grid, an 18.75 MiB control; lab/kernels/
    run_engine_allreduce_blind7.sh on a 4-GPU host), priced before the measurement by main's model (BLIND7_MAIN_COMMIT)
    and the new one (the Lamport one-shot's own push phase, robust refit on the 2 x H100 rows), both committed in
    BLIND7_PRED_CSV: per implementation x ranks x size regime n, |error| median / p90 and signed median of each,
    regimes met (median <= 10 %, p90 <= 25 %); the BOARD rows of both. 'not measured yet' until the measured CSV
    (BLIND7_MEAS_GLOB) is committed beside it."""
    from simulator.calibration import engine_allreduce as EA

    d = EA.DATA_DIR if data_dir is None else data_dir
    pred_f = d / EA.BLIND7_PRED_CSV
    meas_f = sorted(d.glob(EA.BLIND7_MEAS_GLOB))
    head = (f"\n== engines' all-reduce kernels, BLIND grid 7 (2 and 4 ranks, (tokens, hidden) {list(EA.BLIND7_SHAPES)}; "
            f"prediction {pred_f.name}, commit {ENGINE_AR_BLIND7_COMMIT}, before measuring: main = the model at "
            f"{EA.BLIND7_MAIN_COMMIT} (kept), new = the Lamport one-shot's own push phase, robust refit (lost blind, "
            "not shipped))")
    _engine_allreduce_blind_table(7, d, pred_f, meas_f, head)


# ---- block-scaled fp8 GEMMs: DeepGEMM's own kernel and cuBLASLt's, one blind grid ---------------------------------

#: the commit that holds the DeepGEMM / cuBLASLt block grid's predictions (main 5b35f90's model and the new cuBLASLt
#: kind), made before it was measured; the pricing code is d3c34ca (the prediction file's name)
DEEPGEMM_GEMM_PREDICTION_COMMIT = "6447593"
DEEPGEMM_GEMM_PREDICTION = "deepgemm_gemm_blind_prediction_d3c34ca_2026-11-27.csv"
DEEPGEMM_GEMM_MEASURED = "deepgemm_gemm_blind_nvidia-h100-80gb-hbm3_2026-11-27.csv"


def deepgemm_gemm_blind_errors():
    """(joined rows, per-regime table) of the DeepGEMM / cuBLASLt block grid: per regime (kernel x decode / prefill) n,
    |error| median / p90 and signed median of main's model and the new one, and each one's goal (median <= 10 %,
    p90 <= 25 %). Rows that were not timed (a failed check, cuBLASLt's unsupported M 1) are left out. None if the
    measurement is not committed."""
    import pandas as pd

    from hwmodels.spec import load_hardware
    from simulator.calibration import fit_production_topk_gemm as FP

    pred, meas = FP.DATA_DIR / DEEPGEMM_GEMM_PREDICTION, FP.DATA_DIR / DEEPGEMM_GEMM_MEASURED
    if not (pred.is_file() and meas.is_file()):
        return None, None
    pr = pd.read_csv(pred)
    me = pd.read_csv(meas)
    me = me[pd.to_numeric(me["median_us"], errors="coerce").notna()]
    m = pr.merge(me[["kernel", "rows", "k", "n", "median_us"]], on=["kernel", "rows", "k", "n"], how="inner")
    # now = the current terms (LOOKED-AT: gemm_fp8_block was refitted on DeepGEMM's own fit rows after these errors
    # were seen; no row of this grid is fitted)
    hw = load_hardware("H100-SXM")
    g = FP.gemm_frame(m.assign(family="gemm", dist=""))
    g["kernel"] = np.where(g["kernel"] == "cublaslt", "fp8_block_cublaslt", "fp8_block")
    m["pred_now_us"] = FP.predict_gemm_us(g, hw, hw.efficiency)
    rows = []
    for reg, x in m.groupby("regime"):
        r = {"regime": reg, "n": len(x)}
        for col, tag in (("pred_main_us", "main"), ("pred_new_us", "new"), ("pred_now_us", "now")):
            e = (x[col] / x["median_us"] - 1.0) * 100.0
            r |= {f"{tag}_med": e.abs().median(), f"{tag}_p90": e.abs().quantile(0.9), f"{tag}_signed": e.median()}
            r[f"{tag}_goal"] = "met" if r[f"{tag}_med"] <= 10 and r[f"{tag}_p90"] <= 25 else "MISSED"
        rows.append(r)
    return m, pd.DataFrame(rows)


def _deepgemm_gemm_blind_table() -> None:
    """The block-scaled fp8 GEMM grid measured through DeepGEMM's fp8_gemm_nt (the kernel main's block model is read
    from) and cuBLASLt (torch._scaled_mm) on the same shapes, BLIND for both models."""
    from simulator.calibration import fit_production_topk_gemm as FP

    m, tab = deepgemm_gemm_blind_errors()
    if tab is None:
        return
    _board_table(tab, "blind", "block fp8 GEMM: DeepGEMM vs cuBLASLt grid, new model", goal="new_goal",
                 family="block fp8 GEMM (DeepGEMM / cuBLASLt)")
    _board_table(tab, "blind", "block fp8 GEMM: DeepGEMM vs cuBLASLt grid, model at 5b35f90", goal="main_goal",
                 family="block fp8 GEMM (DeepGEMM / cuBLASLt)")
    print(f"\n== block-scaled fp8 GEMM grid, BLIND: DeepGEMM fp8_gemm_nt (deepseek-ai/DeepGEMM 54e2261, 1D2D kernel, "
          f"host code built on the device) and cuBLASLt (torch._scaled_mm) on the same shapes: (K, N) of DeepSeek-V3 / "
          f"Qwen3-32B layers, M 1-60 and 640-4096 (predicted before measuring, commit {DEEPGEMM_GEMM_PREDICTION_COMMIT}: "
          f"{DEEPGEMM_GEMM_PREDICTION}; measured {DEEPGEMM_GEMM_MEASURED}; weights rotated past the L2); main = the "
          f"model at 5b35f90 (kind gemm_fp8_block for both libraries), new = cuBLASLt rows priced by kind "
          f"gemm_fp8_block_cublaslt (split-K rule read off the fifth set's kernel names: those rows are looked-at), "
          f"DeepGEMM rows unchanged; now = the current terms, LOOKED-AT (gemm_fp8_block refitted on DeepGEMM's own "
          f"fit rows, {FP.DEEPGEMM_FIT_CSV}, after these errors were seen; no row of this grid fitted); "
          f"|error| median / p90 and signed median, %. cuBLASLt rows missing: M 1 / 6 unsupported "
          f"(CUBLAS_STATUS_NOT_SUPPORTED), K 2304 / 6400 failed the reference check (K / 128 not a multiple of 4: "
          f"torch._scaled_mm's block path returned wrong values, rel. error 0.2 and 4e3), so not timed")
    print(tab.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    notes = FP.DATA_DIR / DEEPGEMM_GEMM_MEASURED.replace(".csv", "_notes.txt")
    if notes.is_file():
        split = {}
        for line in notes.read_text().splitlines():
            if line.startswith("kernels cublaslt (M "):
                mm, kk, nn = (int(v) for v in line.split("(M ")[1].split(")")[0].replace("K ", "").replace(
                    "N ", "").split(", "))
                split[(mm, kk, nn)] = "_splitK_" in line or "splitKreduce" in line
        c = m[m["kernel"] == "cublaslt"]
        obs = np.array([split.get((int(a), int(b), int(d)), False) for a, b, d in zip(c["rows"], c["k"], c["n"])])
        pred = c["cublaslt_split"].to_numpy() > 1
        print(f"  cuBLASLt split-K choice: {int((obs == pred).sum())} of {len(c)} agree (observed {int(obs.sum())} "
              f"split, predicted {int(pred.sum())})")


# ---- DeepGEMM block-scaled fp8 GEMM, second grid (decode-weighted): the tile-aware K step -------------------------

#: the commit that holds the decode-2 grid's predictions (main 56e805c's model and the tile-aware K step's), made before
#: any of it was measured; the new model's pricing code is aa5ca0b (the prediction file's name)
DEEPGEMM_DECODE2_PREDICTION_COMMIT = "7d80493"
DEEPGEMM_DECODE2_PREDICTION = "deepgemm_gemm_decode2_prediction_aa5ca0b_2026-11-27.csv"
#: the measurement's name (lab/kernels/run_deepgemm_gemm_device.sh OUT lab/kernels/deepgemm_gemm_decode2_grid.csv 14
#: decode2); the section prints the blind table and adds its board rows once this file is committed
DEEPGEMM_DECODE2_MEASURED_GLOB = "deepgemm_gemm_decode2_nvidia-*.csv"


def deepgemm_decode2_errors():
    """(predictions joined to the measurement or None, per-regime table or None) of the decode-2 grid: per regime n,
    |error| median / p90, signed median and goal (median <= 10 %, p90 <= 25 %) of main's model (56e805c) and the
    tile-aware K step (aa5ca0b), both committed before measuring (block_grid4_errors on this grid's files)."""
    return block_grid4_errors(DEEPGEMM_DECODE2_PREDICTION, DEEPGEMM_DECODE2_MEASURED_GLOB,
                              {"pred_main_us": ("main", ""), "pred_new_us": ("new", "")})


def _deepgemm_gemm_decode2_table() -> None:
    """DeepGEMM's fp8_gemm_nt on a second, decode-weighted grid (16 DeepSeek-V3 / Qwen3 (K, N), M 1-64, 5 prefill
    controls), BLIND for both models: main's tile-blind K step and the tile-aware one (a K step = the fitted latency +
    the tile's WGMMA time at the fp8 peak, simulator/kernels/gemm_fp8.py TILE_STEP)."""
    m, tab = deepgemm_decode2_errors()
    head = (f"\n== DeepGEMM block fp8 GEMM, decode-2 grid (predicted before measuring, commit "
            f"{DEEPGEMM_DECODE2_PREDICTION_COMMIT}: {DEEPGEMM_DECODE2_PREDICTION}; main = the model at 56e805c, "
            f"new = the tile-aware K step, terms fitted on the 6 DeepGEMM fit rows only)")
    if tab is None:
        med = m.groupby("regime")[["pred_main_us", "pred_new_us"]].median()
        print(head + f": NOT MEASURED YET ({len(m)} rows); predicted medians, us:")
        print(med.to_string(float_format=lambda v: f"{v:.2f}"))
        return
    _board_table(tab, "blind", "DeepGEMM block fp8 GEMM decode-2 grid, tile-aware K step", goal="new_goal",
                 family="block fp8 GEMM (DeepGEMM / cuBLASLt)")
    _board_table(tab, "blind", "DeepGEMM block fp8 GEMM decode-2 grid, model at 56e805c", goal="main_goal",
                 family="block fp8 GEMM (DeepGEMM / cuBLASLt)")
    print(head + f"; |error| median / p90 and signed median, %, {len(m)} timed rows")
    print(tab.to_string(index=False, float_format=lambda v: f"{v:.1f}"))


# ---- DeepGEMM block-scaled fp8 GEMM, third grid (decode M 1-128): the refit on the decode-2 rows ----------------------

#: the commit that holds the decode-3 grid's predictions (main 6648a5d's model, the refit bbe3701 and the promotion
#: candidate), made before any of it was measured
DEEPGEMM_DECODE3_PREDICTION_COMMIT = "51bd5d3"
DEEPGEMM_DECODE3_PREDICTION = "deepgemm_gemm_decode3_prediction_bbe3701_2026-11-27.csv"
#: lab/kernels/run_deepgemm_gemm_device.sh OUT lab/kernels/deepgemm_gemm_decode3_grid.csv 14 decode3
DEEPGEMM_DECODE3_MEASURED_GLOB = "deepgemm_gemm_decode3_nvidia-*.csv"
#: prediction column -> (label, board caption)
DEEPGEMM_DECODE3_MODELS = {
    "pred_main_us": ("main", "DeepGEMM block fp8 GEMM decode-3 grid, model at 6648a5d"),
    "pred_new_us": ("new", "DeepGEMM block fp8 GEMM decode-3 grid, refit on decode-2 rows (shipped)"),
    "pred_promo_us": ("promo", "DeepGEMM block fp8 GEMM decode-3 grid, + promotion FMAs (not shipped)"),
}


def deepgemm_decode3_errors():
    """(predictions joined to the measurement or None, per-regime table or None) of the decode-3 grid: per regime n,
    |error| median / p90, signed median and goal (median <= 10 %, p90 <= 25 %) of each committed model
    (DEEPGEMM_DECODE3_MODELS), all priced before measuring (block_grid4_errors on this grid's files)."""
    return block_grid4_errors(DEEPGEMM_DECODE3_PREDICTION, DEEPGEMM_DECODE3_MEASURED_GLOB, DEEPGEMM_DECODE3_MODELS)


def _deepgemm_gemm_decode3_table() -> None:
    """DeepGEMM's fp8_gemm_nt on a third grid (16 new DeepSeek-V3 / Kimi-K2 / Qwen3 (K, N), M 1-128, 5 prefill
    controls M 256-4096), BLIND for every model: main's (6648a5d: the tile-aware K step fitted on the 6 fit rows), the
    refit that ships (the same K step, terms fitted on the 6 fit rows + the 53 decode-2 rows, the per-wave CTA time
    free) and a promotion-FMA candidate."""
    m, tab = deepgemm_decode3_errors()
    head = (f"\n== DeepGEMM block fp8 GEMM, decode-3 grid (predicted before measuring, commit "
            f"{DEEPGEMM_DECODE3_PREDICTION_COMMIT}: {DEEPGEMM_DECODE3_PREDICTION}; main = the model at 6648a5d, "
            f"new = terms refitted on the 6 fit rows + the decode-2 rows (looked-at, now fit rows), promo = new + the "
            f"promotion FMAs per K step)")
    if tab is None:
        med = m.groupby("regime")[[c for c in DEEPGEMM_DECODE3_MODELS]].median()
        print(head + f": NOT MEASURED YET ({len(m)} rows); predicted medians, us:")
        print(med.to_string(float_format=lambda v: f"{v:.2f}"))
        return
    for col, (tag, caption) in DEEPGEMM_DECODE3_MODELS.items():
        _board_table(tab, "blind", caption, goal=f"{tag}_goal", family="block fp8 GEMM (DeepGEMM / cuBLASLt)")
    print(head + f"; |error| median / p90 and signed median, %, {len(m)} timed rows")
    print(tab.to_string(index=False, float_format=lambda v: f"{v:.1f}"))


# ---- block-scaled fp8 GEMM grid 4: cuBLASLt's block path M 1-4096, DeepGEMM prefill on 1- / 2-CTA clusters ------------

#: the commit that holds grid 4's predictions (main c460edb's model and 388fd6e's), made before it was measured
BLOCK_GRID4_PREDICTION_COMMIT = "66e9eae"
BLOCK_GRID4_PREDICTION = "deepgemm_gemm_grid4_prediction_388fd6e_2026-11-27.csv"
#: lab/kernels/run_deepgemm_gemm_device.sh OUT lab/kernels/deepgemm_gemm_grid4_grid.csv 14 grid4
BLOCK_GRID4_MEASURED_GLOB = "deepgemm_gemm_grid4_nvidia-*.csv"
#: prediction column -> (label, board caption)
BLOCK_GRID4_MODELS = {
    "pred_main_us": ("main", "block fp8 GEMM grid 4 (cuBLASLt M 12-4096, DeepGEMM prefill), model at c460edb"),
    "pred_new_us": ("new", "block fp8 GEMM grid 4, runtime scale_b promotion + cuBLASLt refit (shipped)"),
}


def block_grid4_errors(prediction: str = BLOCK_GRID4_PREDICTION, measured_glob: str = BLOCK_GRID4_MEASURED_GLOB,
                       models: dict | None = None):
    """(predictions joined to the measurement, per-regime table or None) of grid 4 (or, with its arguments, grid 5 and
    the DeepGEMM decode-2 / decode-3 grids):
    per regime n, |error| median / p90, signed median and goal (median <= 10 %, p90 <= 25 %) of each committed model
    (BLOCK_GRID4_MODELS), all priced before measuring; the untimed rows (cuBLASLt's block path unsupported or wrong
    there) are left out."""
    import pandas as pd

    from simulator.calibration import fit_production_topk_gemm as FP

    models = models or BLOCK_GRID4_MODELS
    pr = pd.read_csv(FP.DATA_DIR / prediction)
    meas = sorted(FP.DATA_DIR.glob(measured_glob))
    if not meas:
        return pr, None
    me = pd.read_csv(meas[-1])
    me = me[pd.to_numeric(me["median_us"], errors="coerce").notna()]
    m = pr.merge(me[["kernel", "rows", "k", "n", "median_us"]], on=["kernel", "rows", "k", "n"], how="inner")
    rows = []
    for reg, x in m.groupby("regime"):
        r = {"regime": reg, "n": len(x)}
        for col, (tag, _) in models.items():
            e = (x[col] / x["median_us"] - 1.0) * 100.0
            r |= {f"{tag}_med": e.abs().median(), f"{tag}_p90": e.abs().quantile(0.9), f"{tag}_signed": e.median()}
            r[f"{tag}_goal"] = "met" if r[f"{tag}_med"] <= 10 and r[f"{tag}_p90"] <= 25 else "MISSED"
        rows.append(r)
    return m, pd.DataFrame(rows)


#: grid 5: cuBLASLt's block path at decode, where its split-K choice decides (lab/kernels/predict_cublaslt_block_grid5.py;
#: the commit holding its predictions, made before it was measured)
BLOCK_GRID5_PREDICTION_COMMIT = "0e0cafc"
BLOCK_GRID5_PREDICTION = "cublaslt_block_grid5_prediction_cc8d66a_2026-11-27.csv"
#: lab/kernels/run_deepgemm_gemm_device.sh OUT lab/kernels/cublaslt_block_grid5_grid.csv 0 grid5
BLOCK_GRID5_MEASURED_GLOB = "deepgemm_gemm_grid5_nvidia-*.csv"
BLOCK_GRID5_MODELS = {
    "pred_main_us": ("main", "cuBLASLt block grid 5 (decode split-K), model at c460edb"),
    "pred_g4_us": ("g4", "cuBLASLt block grid 5, grid 4's model (refit, split rule kept: shipped)"),
    "pred_new_us": ("new", "cuBLASLt block grid 5, split rule read off 32 kernel names (not shipped)"),
}


def _block_fp8_grid4_table() -> None:
    """Block-scaled fp8 GEMM grid 4, BLIND for both models: main's (c460edb) and the one that ships (DeepGEMM's
    runtime-predicated scale_b promotion, simulator/kernels/gemm_fp8.py RUNTIME_SFB, fitted on the kind's 59 named fit
    rows; cuBLASLt's block kind refitted on its 60 named fit rows); the untimed cuBLASLt rows counted."""
    import pandas as pd

    from simulator.calibration import fit_production_topk_gemm as FP

    m, tab = block_grid4_errors()
    head = (f"\n== block-scaled fp8 GEMM grid 4, BLIND (predicted before measuring, commit "
            f"{BLOCK_GRID4_PREDICTION_COMMIT}: {BLOCK_GRID4_PREDICTION}): cuBLASLt's block path (torch._scaled_mm) at "
            f"M 1-4096 (timed: M 12-4096) and DeepGEMM fp8_gemm_nt prefill M 256-4096 on 1- / 2-CTA clusters over DeepSeek-V3 / Qwen3 "
            f"(K, N), weights rotated past the L2; main = the model at c460edb, new = DeepGEMM's runtime-predicated "
            f"scale_b promotion (block_n 80 / 112 / 144 tiles, sm90_fp8_gemm_1d2d.cuh @ 54e2261) fitted on the "
            f"kind's 59 named fit rows + cuBLASLt's kind refitted on its 60 named fit rows (no row of this grid "
            f"fitted); DeepGEMM's printed configs match block_layout on all 27 rows")
    if tab is None:
        med = m.groupby("regime")[[c for c in BLOCK_GRID4_MODELS]].median()
        print(head + f": NOT MEASURED YET ({len(m)} rows); predicted medians, us:")
        print(med.to_string(float_format=lambda v: f"{v:.2f}"))
        return
    for col, (tag, caption) in BLOCK_GRID4_MODELS.items():
        _board_table(tab, "blind", caption, goal=f"{tag}_goal", family="block fp8 GEMM (DeepGEMM / cuBLASLt)")
    me = pd.read_csv(sorted(FP.DATA_DIR.glob(BLOCK_GRID4_MEASURED_GLOB))[-1])
    cl = me[me["kernel"] == "cublaslt"]
    untimed = cl[pd.to_numeric(cl["median_us"], errors="coerce").isna()]
    m4 = untimed[untimed["rows"] % 4 != 0]
    k4 = untimed[(untimed["rows"] % 4 == 0) & ((untimed["k"] // 128) % 4 != 0)]
    print(head + f"; |error| median / p90 and signed median, %, {len(m)} timed rows")
    print(tab.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    print(f"  cuBLASLt rows not timed: {len(untimed)} of {len(cl)}: M not a multiple of 4 ({len(m4)}: "
          f"CUBLAS_STATUS_NOT_SUPPORTED; scales with a 16-byte padded leading dimension are refused by torch), "
          f"K / 128 not a multiple of 4 ({len(k4)}: wrong values, rel. error 0.09-26)")
    big = m[(m["kernel"] == "cublaslt") & ((m["pred_new_us"] / m["median_us"] - 1.0).abs() > 0.25)]
    if len(big):
        print("  cuBLASLt decode misses (split-K taken where the model prices none: kernel names in the _notes file): "
              + ", ".join(f"M {r.rows} K {r.k} N {r.n} {100 * (r.pred_new_us / r.median_us - 1):+.0f} %"
                          for r in big.itertuples()))
    # grid 5: cuBLASLt decode, the split rule read off the recorded names (grid 4's among them: looked-at) judged blind
    m5, tab5 = block_grid4_errors(BLOCK_GRID5_PREDICTION, BLOCK_GRID5_MEASURED_GLOB, BLOCK_GRID5_MODELS)
    head5 = (f"\n== cuBLASLt block fp8 GEMM grid 5, BLIND (predicted before measuring, commit "
             f"{BLOCK_GRID5_PREDICTION_COMMIT}: {BLOCK_GRID5_PREDICTION}): torch._scaled_mm's block path at decode M "
             f"8-128, 6-48 tiles, 32-128 K steps; main = c460edb, g4 = grid 4's model (ebfa529: the kind refitted, "
             f"the split rule before), new = the split rule read off 32 recorded kernel choices (grid 4's included: "
             f"LOOKED-AT rule, these rows blind), the kind refitted under it on the same 60 named fit rows; it lost "
             f"(split counts 9 of 20 against 8 of 20, errors no better), so g4's model ships")
    if tab5 is None:
        print(head5 + f": NOT MEASURED YET ({len(m5)} rows)")
        return
    for col, (tag, caption) in BLOCK_GRID5_MODELS.items():
        _board_table(tab5, "blind", caption, goal=f"{tag}_goal", family="block fp8 GEMM (DeepGEMM / cuBLASLt)")
    print(head5 + f"; |error| median / p90 and signed median, %, {len(m5)} timed rows")
    print(tab5.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    notes = sorted(FP.DATA_DIR.glob(BLOCK_GRID5_MEASURED_GLOB.replace(".csv", "_notes.txt")))
    if notes:
        import re

        obs = {}
        for line in notes[-1].read_text().splitlines():
            mt = re.match(r"kernels cublaslt \(M (\d+), K (\d+), N (\d+)[^)]*\): (\S+) grid \[(\d+), (\d+),", line)
            if mt:
                mm, kk, nn, gx, gy = (int(mt.group(i)) for i in (1, 2, 3, 5, 6))
                cl = re.search(r"_(\d)x(\d)_", mt.group(4))
                c = int(cl.group(1)) * int(cl.group(2))
                tiles = -(-mm // 128) * -(-nn // 128)
                obs[(mm, kk, nn)] = round(gx * gy / (-(-tiles // c) * c)) if "_splitK_" in mt.group(4) else 1
        for col in ("split_g4", "split_new"):
            agree = sum(obs.get((r.rows, r.k, r.n)) == getattr(r, col) for r in m5.itertuples())
            print(f"  split count, {col[6:]} rule: {agree} of {len(obs)} recorded kernels agree")


if __name__ == "__main__":
    main()

