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
