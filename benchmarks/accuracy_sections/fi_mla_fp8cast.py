"""SGLang's flashinfer_mla backend over an fp8 MLA cache on the H200 (simulator/calibration/fi_mla_fp8cast_h200.py;
1 x H200, 2026-11-29): the family read from the engine (the layer's whole pool cast to bf16 every step, then FlashInfer's
MLA kernel over the copy), priced before its one grid was measured: its FIRST LOOK is that grid, blind, and its STANDING.
"""
from __future__ import annotations

from accuracy_sections._blind_grid import measured_twice, pooled
from hwmodels.spec import load_hardware
from simulator.calibration import fi_mla_fp8cast_h200 as S
from simulator.calibration.scoreboard import BOARD, models_table

FAMILY = ("fi_mla_fp8cast: SGLang's flashinfer_mla backend over an fp8 MLA cache (the pool's bf16 cast + FlashInfer's "
          "MLA call), H200")


def fi_mla_fp8cast(fmt: dict | None = None) -> None:
    fmt = fmt or {"index": False, "float_format": lambda v: f"{v:.1f}"}
    got = measured_twice(lambda r: S.measured(replicate=r),
                         f"SGLang's flashinfer_mla over an fp8 MLA cache: not measured yet ({S.PREDICTION} holds the "
                         "prices)")
    if got is None:
        return
    m, rr = got
    m = m.rename(columns={"err_pct": "first_err_pct", "main_err_pct": "before_err_pct"})
    t = models_table(m, ("regime",), ("first", "before"), ("first", "before"))
    print(f"\n== SGLANG'S FLASHINFER_MLA BACKEND OVER AN FP8 MLA CACHE ON THE H200 ({len(m)} calls: its decode as the "
          "engine runs it with --attention-backend flashinfer --kv-cache-dtype fp8_e4m3 (the layer's WHOLE pool cast to "
          "bf16, get_key_buffer(layer_id).to(q.dtype), then FlashInfer 0.6.4's BatchMLAPagedAttentionWrapper over the "
          "copy, page 1), pools of 131K-2.1M tokens, 1-128 requests, 16-128 heads, 4 bf16-pool controls; "
          f"{S.PREDICTION}, commit {str(m['model_commit'].iloc[0])[:7]}, before the call; replicate run to run "
          f"{rr:.2f} %), BLIND: first = fi_mla_fp8cast's FIRST LOOK (from the engine's source: the cast as op kind cast "
          "+ fi_mla over bf16, the H100's terms on the H200; nothing fitted), before = what the product priced `kernel: "
          "fi_mla` over an fp8 cache at until now (FlashInfer's own fp8 MLA kernel, no cast); |model/measured - 1| "
          "median / p90, signed median, %")
    print(t.to_string(**fmt))
    judged = m[m["cast"] > 0]
    met = int((t[~t["regime"].str.startswith("control")]["first_goal"] == "met").sum())
    n_reg = int((~t["regime"].str.startswith("control")).sum())
    print(f"  first look (the cast calls): {pooled(judged['first_err_pct'])}, {met} of {n_reg}; before: "
          f"{pooled(judged['before_err_pct'])}; the controls (FlashInfer's MLA call alone, this harness): "
          f"{pooled(m[m['cast'] == 0]['first_err_pct'])}")
    hw = load_hardware("H200")
    share = 1.0 - S.price_us(judged.assign(cast=0), hw, "fi_mla_fp8cast") / judged["pred_us"].to_numpy(float)
    print(f"  the cast is {share.min() * 100:.0f}-{share.max() * 100:.0f} % of these calls as priced: the family's error "
          "is mostly the cast's (the fp8 pool grids of fa3_mla_fp8cast found the H200's cast ~7 % slower than the "
          "H100's terms price it)")
    BOARD.add(FAMILY, "first look", "fi_mla_fp8cast grid 1 (blind), from the engine's source",
              judged["first_err_pct"], met, n_reg)
    BOARD.add(FAMILY, "blind", "fi_mla_fp8cast grid 1, the family as priced before its call (shipped)",
              judged["first_err_pct"], met, n_reg, standing=True)
    BOARD.add(FAMILY, "blind", "fi_mla_fp8cast grid 1, FlashInfer's own fp8 kernel (the price before)",
              judged["before_err_pct"], int((t[~t["regime"].str.startswith("control")]["before_goal"] == "met").sum()),
              n_reg)


FAMILY_EXTEND = ("fi_mla extend over a cached prefix: SGLang's flashinfer_mla paged branch (the absorbed MLA wrapper at "
                 "causal prompt rows, bf16 or fp8 pool), H200")


def fi_mla_extend(fmt: dict | None = None) -> None:
    """SGLang's flashinfer_mla extend over a cached prefix: grid 1 (the generic op's first look, then the absorbed form
    built on it: looked-at), grid 2 (blind: the absorbed form against main's generic op; with grid 1 the fit rows of the
    causal MLAPlan's stage share) and grid 3 (blind: the causal MLAPlan, fi_mla_extend3)."""
    fmt = fmt or {"index": False, "float_format": lambda v: f"{v:.1f}"}
    got = measured_twice(lambda r: S.measured_extend(replicate=r),
                         f"SGLang's flashinfer_mla extend: not measured yet ({S.PREDICTION_EXTEND} holds the prices)")
    if got is None:
        return
    g1, rr = got
    hw = load_hardware("H200")
    g1 = g1.rename(columns={"err_pct": "first_err_pct"})
    for model in ("absorbed", "structure", "causal"):
        g1[f"{model}_err_pct"] = (S.extend_model_us(g1, hw, model) / g1["median_us"] - 1.0) * 100.0
    models = ("first", "absorbed", "structure", "causal")
    t1 = models_table(g1, ("regime",), models, models)
    print(f"\n== SGLANG'S FLASHINFER_MLA EXTEND OVER A CACHED PREFIX ON THE H200, GRID 1 ({len(g1)} prompts: the paged "
          "branch of forward_extend, FlashInfer 0.6.4's BatchMLAPagedAttentionWrapper planned causal at 256-4096 new "
          "rows a request over 2K-32K cached tokens, 16-128 heads, over an fp8 pool after the whole-pool cast or over a "
          f"bf16 pool; {S.PREDICTION_EXTEND}, commit {str(g1['model_commit'].iloc[0])[:7]}, before the call; replicate "
          f"run to run {rr:.2f} %): first = the product's price then (the dense strategy's generic op, the expanded MHA "
          "form: no FlashInfer MLA prefill model), absorbed = the generic op with the absorbed pair's work "
          "(families.MLA_ABSORBED_EXTEND, built after this grid: LOOKED-AT); structure = FlashInfer's causal MLAPlan "
          "with the decode fit's terms alone (flashinfer.py fi_mla_extend, built after grids 1-2 were seen, nothing "
          "fitted), causal = the same with its stage share FITTED on grids 1-2 (LOOKED-AT); |model/measured - 1| "
          "median / p90, signed median, %")
    print(t1.to_string(**fmt))
    bf = g1[g1["cast"] == 0]
    ratio = (bf["median_us"] / bf["pred_us"]).to_numpy(float)
    print(f"  the bf16 pool's calls take {ratio.min():.2f}-{ratio.max():.2f} x the generic op's price: the engine's "
          "absorbed kernel does (512 + 64 + 512) / (192 + 128) = 3.4 x the expanded form's work a (query, key) pair")
    BOARD.add(FAMILY_EXTEND, "first look", "fi_mla extend grid 1, the generic op (the product's price before)",
              g1["first_err_pct"], int((t1["first_goal"] == "met").sum()), len(t1))
    BOARD.add(FAMILY_EXTEND, "looked-at", "fi_mla extend grid 1, the absorbed extend (built on it)",
              g1["absorbed_err_pct"], int((t1["absorbed_goal"] == "met").sum()), len(t1))
    BOARD.add(FAMILY_EXTEND, "looked-at", "fi_mla extend grid 1, the causal MLAPlan (its stage share fitted on it)",
              g1["causal_err_pct"], int((t1["causal_goal"] == "met").sum()), len(t1))
    got = measured_twice(lambda r: S.measured_extend2(replicate=r),
                         f"fi_mla extend grid 2: not measured yet ({S.PREDICTION_EXTEND2} holds the prices)")
    if got is None:
        return
    g2, rr2 = got
    g2 = g2.rename(columns={"err_pct": "absorbed_err_pct"})
    for model in ("structure", "causal"):
        g2[f"{model}_err_pct"] = (S.extend_model_us(g2, hw, model) / g2["median_us"] - 1.0) * 100.0
    models = ("absorbed", "main", "structure", "causal")
    t2 = models_table(g2, ("regime",), models, models)
    ma, mm = int((t2["absorbed_goal"] == "met").sum()), int((t2["main_goal"] == "met").sum())
    print(f"\n== SGLANG'S FLASHINFER_MLA EXTEND, GRID 2 ({len(g2)} new prompts: 512-8192 new rows over 2K-64K cached "
          f"tokens, 16-128 heads, bf16 and fp8 pools; {S.PREDICTION_EXTEND2}, commit "
          f"{str(g2['model_commit'].iloc[0])[:7]}, before the call; replicate run to run {rr2:.2f} %), BLIND: absorbed "
          "= families.MLA_ABSORBED_EXTEND, main = the generic op's expanded form; declared before the call: the absorbed "
          "form ships if it meets more regimes; structure / causal as on grid 1 (LOOKED-AT: built after this grid was "
          "seen); |model/measured - 1| median / p90, signed median, %")
    print(t2.to_string(**fmt))
    print(f"  absorbed: {pooled(g2['absorbed_err_pct'])}, {ma} of {len(t2)}; main: {pooled(g2['main_err_pct'])}, {mm} of "
          f"{len(t2)}: {'SHIPPED' if ma > mm else 'NOT shipped'} (families.MLA_ABSORBED_EXTEND)")
    print("  the absorbed form's miss: a short extend (1 x 512 rows, 16 heads) +91 %: the generic op parallelizes over "
          "query tiles x heads (64 CTAs here), while FlashInfer's MLA plan splits the prefix's keys over every SM "
          f"(kv_len_limit); the causal plan there: {g2['causal_err_pct'].iloc[int(g2['absorbed_err_pct'].abs().argmax())]:+.1f} %")
    BOARD.add(FAMILY_EXTEND, "blind", "fi_mla extend grid 2, the absorbed extend (shipped then)", g2["absorbed_err_pct"],
              ma, len(t2))
    BOARD.add(FAMILY_EXTEND, "blind", "fi_mla extend grid 2, main's generic op", g2["main_err_pct"], mm, len(t2))
    BOARD.add(FAMILY_EXTEND, "looked-at", "fi_mla extend grid 2, the causal MLAPlan (its stage share fitted on it)",
              g2["causal_err_pct"], int((t2["causal_goal"] == "met").sum()), len(t2))
    fi_mla_extend3(fmt)


def fi_mla_extend3(fmt: dict) -> None:
    """Extend grid 3 (blind): FlashInfer's causal MLAPlan against its decode-terms structure and main's absorbed op."""
    got = measured_twice(lambda r: S.measured_extend3(replicate=r),
                         f"fi_mla extend grid 3: not measured yet ({S.PREDICTION_EXTEND3} holds the prices)")
    if got is None:
        return
    g3, rr3 = got
    g3 = g3.rename(columns={"err_pct": "causal_err_pct"})
    g3["structure_err_pct"] = (g3["pred_struct_us"] / g3["median_us"] - 1.0) * 100.0
    models = ("causal", "structure", "main")
    t3 = models_table(g3, ("regime",), models, models)
    met = {m: int((t3[f"{m}_goal"] == "met").sum()) for m in models}
    med = {m: float(g3[f"{m}_err_pct"].abs().median()) for m in models}
    ships = met["causal"] > met["main"] or (met["causal"] == met["main"] and med["causal"] < med["main"])
    print(f"\n== SGLANG'S FLASHINFER_MLA EXTEND, GRID 3 ({len(g3)} new prompts: 128-4096 new rows over 1K-64K cached "
          f"tokens, batch 1-8, 16-128 heads, bf16 and fp8 pools; {S.PREDICTION_EXTEND3}, commit "
          f"{str(g3['model_commit'].iloc[0])[:7]}, before the call; replicate run to run {rr3:.2f} %), BLIND: causal = "
          "FlashInfer's MLAPlan planned causal (flashinfer.py fi_mla_extend: the decode call's kernel terms on the causal "
          "plan, its stage share fitted on grids 1-2), structure = the same plan at the decode fit's stage time (the "
          "source's structure alone), main = the absorbed generic op; declared before the call: the causal plan ships if "
          "it meets more regimes than main, or as many with a lower pooled median; |model/measured - 1| median / p90, "
          "signed median, %")
    print(t3.to_string(**fmt))
    print(f"  causal: {pooled(g3['causal_err_pct'])}, {met['causal']} of {len(t3)}; structure: "
          f"{pooled(g3['structure_err_pct'])}, {met['structure']} of {len(t3)}; main: {pooled(g3['main_err_pct'])}, "
          f"{met['main']} of {len(t3)}: {'SHIPPED' if ships else 'NOT shipped'} (families.FI_MLA_CAUSAL_EXTEND)")
    BOARD.add(FAMILY_EXTEND, "first look", "fi_mla extend grid 3, the causal MLAPlan's structure (decode terms alone)",
              g3["structure_err_pct"], met["structure"], len(t3))
    BOARD.add(FAMILY_EXTEND, "blind", "fi_mla extend grid 3, the causal MLAPlan (shipped)" if ships else
              "fi_mla extend grid 3, the causal MLAPlan (not shipped)", g3["causal_err_pct"], met["causal"], len(t3),
              standing=ships)
    BOARD.add(FAMILY_EXTEND, "blind", "fi_mla extend grid 3, main's absorbed generic op", g3["main_err_pct"],
              met["main"], len(t3), standing=not ships)


FAMILY_BOUNDARY = ("fi_mla decode where MLAPlan's pieces straddle the clusters (FlashInfer's MLA wrapper, bf16 pool, 16 "
                   "heads), H200")


def fi_mla_boundary(fmt: dict | None = None) -> None:
    """FlashInfer's MLA decode at batches whose plan cuts the requests into just fewer or just more pieces than the
    clusters (the busiest cluster walks one piece or two): one blind grid, priced by the model as committed."""
    fmt = fmt or {"index": False, "float_format": lambda v: f"{v:.1f}"}
    got = measured_twice(lambda r: S.measured_boundary(replicate=r),
                         f"fi_mla boundary grid: not measured yet ({S.PREDICTION_BOUNDARY} holds the prices)")
    if got is None:
        return
    m, rr = got
    m = m.rename(columns={"err_pct": "model_err_pct"})
    t = models_table(m, ("regime",), ("model",), ("model",))
    met = int((t["model_goal"] == "met").sum())
    print(f"\n== FLASHINFER'S MLA DECODE WHERE THE PLAN'S PIECES STRADDLE THE CLUSTERS ON THE H200 ({len(m)} calls of "
          f"{len(S.BOUNDARY_SHAPES)} planned: 16-64 requests of 8K and 48 of 2K-12K at 16 heads over a bf16 pool, "
          "FlashInfer 0.6.4, page 1; 96 x 8K did not fit the grid's 600K-token pool and was not timed; "
          f"{S.PREDICTION_BOUNDARY}, commit {str(m['model_commit'].iloc[0])[:7]}, before the call; replicate run to run "
          f"{rr:.2f} %), BLIND: model = fi_mla as committed (MLAPlan replayed: 44 x 8K makes 132 pieces, one a "
          "cluster; 48 x 8K makes 144, twelve clusters walk two, so 48 x 8K is priced above 64 x 8K); |model/measured "
          "- 1| median / p90, signed median, %")
    print(t.to_string(**fmt))
    cols = ["batch", "context", "pieces", "busiest_items", "pred_us", "median_us", "model_err_pct"]
    print(m[cols].to_string(**fmt))
    big = m[(m["batch"] == 48) & (m["context"] == 8192)]["median_us"].iloc[0]
    more = m[(m["batch"] == 64) & (m["context"] == 8192)]["median_us"].iloc[0]
    print(f"  measured: 48 x 8K {big:.1f} us, 64 x 8K {more:.1f} us (the plan's two-piece clusters, as priced); "
          "the two-piece rows drift slow as the pieces grow (48 x 6K-12K +8..+12 %): the busiest clusters' second "
          "piece runs while the rest of the chip is idle, at the whole chip's per-stage time")
    BOARD.add(FAMILY_BOUNDARY, "blind", "fi_mla boundary grid, the model as committed", m["model_err_pct"], met,
              len(t), standing=True)
