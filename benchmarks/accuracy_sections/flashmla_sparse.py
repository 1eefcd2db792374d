"""FlashMLA's sparse decode on the H200 (simulator/calibration/flashmla_sparse_h200.py; 1 x H200, 2026-11-28): the kernel
DeepSeek-V3.2's DSA attention runs in SGLang on Hopper, timed through sgl_flash_mla 1.0.0's frozen SM90 extension
against the product's DSA attention price. Grid 1 (48 shapes): the product as it was, the FIRST LOOK of its DSA
attention (the generic attention kind over the heads a device holds). Grid 2 (24 new shapes): the query heads padded
to the kernel's 64-head CTAs (dsa pad_heads, read from its source after grid 1) against main, both priced before the
call; the candidate won and SHIPPED. Grid 3 (22 new shapes): the kernel as its scheduler's busiest part (dsa
sparse_kernel flashmla: tiles, request segments, the combine; terms fitted on grid 1 alone) against main (grid 2's
shipped model); it won and SHIPPED. The SPANS campaign (56 shapes, LOOKED-AT) timed each kernel of the call on its own:
the combine's exposed tail was 8-10 us where every request splits 32 ways, priced 1.3-3.4 us. Grid 4 (39 new shapes):
the combine as FlashMLA's combine kernel (COMBINE_CHAIN) with the tile terms refitted on the spans, against main; it
won and SHIPPED; grid 4 holds the STANDING.
"""
from __future__ import annotations

import numpy as np

from accuracy_sections._blind_grid import pooled, replicate_pct
from accuracy_sections.topk_trt_h200 import _main_vs_cand
from simulator.calibration import flashmla_sparse_h200 as S
from simulator.calibration.scoreboard import BOARD, models_table

FAMILY = "flashmla sparse decode (DSA attention), H200"
FAMILY_PREFILL = "flashmla sparse prefill (DSA attention), H200"
FAMILY_FLAT = "flashmla sparse decode kernel, SGLang's flattened decode rows, H200"
FAMILY_LAYOUTS = "flashmla sparse decode kernel, rows sharing a sequence / one request, H200"
FAMILY_ROWS = "flashmla sparse prefill kernel over decode rows (TensorRT-LLM's DSA generation), H200"
FAMILY_MTP = "flashmla sparse decode kernel, MTP rows re-reading the previous row's keys, H200"


def flashmla_sparse(fmt: dict | None = None) -> None:
    fmt = fmt or {"index": False, "float_format": lambda v: f"{v:.1f}"}
    m = S.measured()
    if m is None:
        print(f"\nFlashMLA sparse decode grid 1: not measured yet ({S.PREDICTION} holds the prices)")
        return
    w = S.measured("fmla_sparse_warm")
    m["first_err_pct"] = (m["pred_us"] / m["median_us"] - 1.0) * 100.0
    m["warm_err_pct"] = (m["pred_us"].to_numpy() / w["median_us"].to_numpy() - 1.0) * 100.0
    t = models_table(m, ("regime",), ("first", "warm"), ("first",))
    met = int((t["first_goal"] == "met").sum())
    print(f"\n== FLASHMLA'S SPARSE DECODE ON THE H200, GRID 1 ({len(m)} rows: DeepSeek-V3.2's decode at TP 1 / 2 / 8, batch "
          f"1-128, s_q 1-2, context 8K / 64K, k 2048; the kernel at 128 / 64 / 64 heads, TP8's 16 padded; {S.PREDICTION}, "
          f"commit {str(m['model_commit'].iloc[0])[:7]}, before the call), the FIRST LOOK of the product's DSA attention "
          "(the generic attention kind over the heads a device holds); cold K/V (the engine's state; warm beside it); "
          "|model/measured - 1| median / p90, signed median, %")
    print(t.to_string(**fmt))
    print(f"  {pooled(m['first_err_pct'])}; regimes met {met} of {len(t)}; the kernel's measured time is the same at TP2 "
          "and TP8 (64-head CTAs: 16 heads padded), where the product charged a quarter of the work (-44..-57 %); 128 "
          "heads at batch >= 32 +33 %; the scheduler's tiles (ceil(b (k / 64 + 5) / parts) + 5, from the source) order "
          "the measured times at ~2.35 us a tile (128 heads, 2-CTA clusters) and ~3 us (64 heads): looked-at, not used")
    BOARD.add(FAMILY, "first look", "grid 1, the product's DSA attention then (unpadded heads)", m["first_err_pct"],
              met, len(t))
    g = S.measured2()
    if g is None:
        print(f"\nFlashMLA sparse decode grid 2: not measured yet ({S.PREDICTION2} holds the prices)")
        return
    rr = replicate_pct(g, S.measured2(replicate=True))
    _main_vs_cand(
        g, fmt, f"\n== FLASHMLA'S SPARSE DECODE, GRID 2 ({len(g)} new shapes at TP 1 / 2 / 4 / 8, batch 2-96, s_q 1-4; "
        f"{S.PREDICTION2}, commit {str(g['model_commit'].iloc[0])[:7]}, before the call; replicate run to run {rr:.2f} "
        "%): main = the DSA strategy as shipped then (pad_heads 0), cand = pad_heads 64 (the kernel takes 64 or 128 "
        "query heads: fewer are padded); declared before the call: the candidate ships if it meets more regimes, a tie "
        "by the lower pooled median; the grid holds FlashMLA sparse decode's H200 STANDING; |model/measured - 1| median "
        "/ p90, signed median, %", "SHIPPED (simulator/strategies/dsa.py pad_heads default 64); the STANDING moved to grid 3",
        ("  still off: padded heads at batch >= 24 -10 % (the generic kind's per-entry rate, not the kernel's tiles); "
         "128 heads at batch 48 x s_q 4 +34 % (as grid 1's large batches)",), FAMILY,
        ("grid 2, main (unpadded heads)", "grid 2, pad_heads 64 (shipped)"), standing=False)
    print(f"  cold against warm K/V on grid 1: {float(np.median(w['median_us'].to_numpy() / m['median_us'].to_numpy())):.3f} "
          "median (the gathered entries barely touch the L2)")
    g3 = S.measured3()
    if g3 is None:
        print(f"\nFlashMLA sparse decode grid 3: not measured yet ({S.PREDICTION3} holds the prices)")
        return
    rr3 = replicate_pct(g3, S.measured3(replicate=True))
    _main_vs_cand(
        g3, fmt, f"\n== FLASHMLA'S SPARSE DECODE, GRID 3 ({len(g3)} new shapes at TP 1 / 2 / 4 / 8, batch 3-160, s_q 1-4; "
        f"{S.PREDICTION3}, commit {str(g3['model_commit'].iloc[0])[:7]}, before the call; replicate run to run {rr3:.2f} "
        "%): main = grid 2's shipped model (the generic kind, heads padded), cand = the kernel as its scheduler's "
        f"busiest part (sparse_kernel flashmla; terms fitted on grid 1 alone: {g3['terms'].iloc[0]}); declared before "
        "the call: the candidate ships if it meets more regimes, a tie by the lower pooled median; the grid holds "
        "FlashMLA sparse decode's H200 STANDING; |model/measured - 1| median / p90, signed median, %",
        "SHIPPED (dsa sparse_kernel flashmla; the terms in H200.yaml and, as the H200's, H100-SXM.yaml)",
        ("  still off: padded heads at batch <= 16 +12 % (6 x s_q 2 +12 %, TP4 5 x s_q 2 +24 %, 9 x 1 +15 %: the split "
         "requests' combine and short segments); the STANDING moved to grid 4",), FAMILY,
        ("grid 3, main (generic kind, heads padded)", "grid 3, the scheduler's tile chain (shipped)"), standing=False)
    _spans(fmt)
    _prefill(fmt)


def _spans(fmt: dict) -> None:
    """The SPANS campaign (looked-at: each kernel on its own) and grid 4 (blind, the STANDING)."""
    sp = S.measured_spans()
    if sp is None:
        print(f"\nFlashMLA sparse SPANS campaign: not measured yet ({S.SPANS_PREDICTION} holds the prices)")
        return
    rep = S.measured_spans(replicate=True)
    rr = float(np.median(np.abs(rep["call_us"].to_numpy() / sp["call_us"].to_numpy() - 1.0)) * 100.0)
    split = sp[sp["pred_combine_us"] > 0]
    many = sp[(sp["heads"] == 64) & (sp["s_q"] == 1) & (sp["batch"] <= 3)]
    print(f"\n== FLASHMLA'S SPARSE DECODE, THE SPANS CAMPAIGN ({len(sp)} shapes: batch 1-192 at 64 heads s_q 1-2, 1-128 at "
          f"128 heads, and grid 3's shapes; {S.SPANS_PREDICTION}, commit {str(sp['model_commit'].iloc[0])[:7]}, before "
          f"the call; 24 eager calls a shape under the profiler, replicate run to run {rr:.2f} % on the call), "
          "LOOKED-AT: each kernel of the call on its own against the product's two ops as shipped then; us")
    print(f"  the call, eager against the graph-timed: {float(np.median(sp['call_us'] / sp['median_us'])):.3f} median")
    print(f"  the combine's exposed tail (its end - the sparse kernel's end): {many['combine_tail_us'].min():.1f}-"
          f"{many['combine_tail_us'].max():.1f} us where every request splits 32 ways (batch 1-3 at 64 heads, s_q 1), priced "
          f"{many['pred_combine_us'].min():.1f}-{many['pred_combine_us'].max():.1f}; over the split calls "
          f"{float(np.median(split['combine_tail_us'])):.1f} us median against {float(np.median(split['pred_combine_us'])):.1f}")
    print(f"  the sparse kernel there: {many['sparse_us'].min():.1f}-{many['sparse_us'].max():.1f} us, priced "
          f"{many['pred_attention_us'].min():.1f}-{many['pred_attention_us'].max():.1f} (grid 1's fit gave a request "
          "segment 5.1 us that the kernel does not spend: the combine's time was booked to the segments)")
    g = S.measured4()
    if g is None:
        print(f"\nFlashMLA sparse decode grid 4: not measured yet ({S.PREDICTION4} holds the prices)")
        return
    rr4 = replicate_pct(g, S.measured4(replicate=True))
    _main_vs_cand(
        g, fmt, f"\n== FLASHMLA'S SPARSE DECODE, GRID 4 ({len(g)} new (heads, batch, s_q) at TP 1 / 2 / 4 / 8, batch "
        f"1-250, s_q 1-4; {S.PREDICTION4}, commit {str(g['model_commit'].iloc[0])[:7]}, before the call; replicate run "
        f"to run {rr4:.2f} %): main = grid 3's shipped model (the tile chain on grid 1's terms, the combine as its "
        "partials' bytes), cand = the combine as FlashMLA's combine kernel (COMBINE_CHAIN: the dense family's launch "
        f"and terms, nothing refitted) + the tile terms refitted on the SPANS campaign's kernel spans ({g['terms'].iloc[0]}); "
        "declared before the call: the candidate ships if it meets more regimes, a tie by the lower pooled median; the "
        "grid holds FlashMLA sparse decode's H200 STANDING; |model/measured - 1| median / p90, signed median, %",
        "SHIPPED by the tie rule (flashmla_sparse.COMBINE_CHAIN; the spans-fitted terms in H200.yaml and, as the H200's, "
        "H100-SXM.yaml)", _grid4_notes(), FAMILY,
        ("grid 4, main (grid 1's terms, the combine as bytes)", "grid 4, the combine's chain + spans-fitted tiles (shipped)"))
    _layouts(fmt)


def _layouts(fmt: dict) -> None:
    """Grids 5 and 6: the kernel at the engines' row layouts (blind)."""
    g = S.measured5()
    if g is None:
        print(f"\nFlashMLA sparse grid 5: not measured yet ({S.PREDICTION5} holds the prices)")
        return
    rr = replicate_pct(g, S.measured5(replicate=True))
    g["shipped_err_pct"] = (g["pred_us"] / g["median_us"] - 1.0) * 100.0
    t = models_table(g, ("regime",), ("shipped",), ("shipped",))
    print(f"\n== FLASHMLA'S SPARSE DECODE KERNEL AT THE ENGINES' ROW LAYOUTS, GRID 5 ({len(g)} shapes: SGLang flattens "
          "every query row into a request of one row (its decode, verification and, on Hopper, prefill rows); vLLM's "
          "fp8 path below 32 heads passes the step's rows as one request; "
          f"{S.PREDICTION5}, commit {str(g['model_commit'].iloc[0])[:7]}, before the call; replicate run to run {rr:.2f} "
          "%), BLIND: the product as committed (the kernel priced at the layout, kernel_us); the flattened decode rows "
          "are their layout's STANDING; |model/measured - 1| median / p90, signed median, %")
    print(t.to_string(**fmt))
    met = int((t["shipped_goal"] == "met").sum())
    print(f"  {pooled(g['shipped_err_pct'])}; regimes met {met} of {len(t)}; the prompt rows (every row indexing one "
          "sequence) and the one-request rows (this grid's rows of one request index one sequence too) ran 29-32 % "
          "faster than priced at 64 heads, 8.5 % at 128: their gathers re-read the sequence from the L2, which the "
          "price read from HBM (SHARED_ROWS_L2, judged on grid 6)")
    flat = g[g["regime"].str.startswith("flattened rows (SGLang decode")]
    tf = t[t["regime"].str.startswith("flattened rows (SGLang decode")]
    BOARD.add(FAMILY_FLAT, "blind", "grid 5, the product as committed", flat["shipped_err_pct"],
              int((tf["shipped_goal"] == "met").sum()), len(tf), standing=True)
    BOARD.add(FAMILY_LAYOUTS, "blind", "grid 5, every gather from HBM",
              g.loc[~g.index.isin(flat.index), "shipped_err_pct"], met - len(tf), len(t) - len(tf))
    g6 = S.measured6()
    if g6 is None:
        print(f"\nFlashMLA sparse grid 6: not measured yet ({S.PREDICTION6} holds the prices)")
        return
    rr6 = replicate_pct(g6, S.measured6(replicate=True))
    _main_vs_cand(
        g6, fmt, f"\n== FLASHMLA'S SPARSE DECODE KERNEL, GRID 6 ({len(g6)} new shapes: rows indexing one sequence of "
        "2.5K-164K tokens (inside and past the L2), one request of 12-700 rows of distinct sequences; "
        f"{S.PREDICTION6}, commit {str(g6['model_commit'].iloc[0])[:7]}, before the call; replicate run to run "
        f"{rr6:.2f} %): main = the product as shipped (every gather from HBM), cand = SHARED_ROWS_L2 (the gathers past "
        "a shared sequence's distinct tokens re-read it from the L2; the tile chain at the kinds' iter_l2 for the share "
        f"that hits, fitted on grid 5's prefill rows, LOOKED-AT: {g6['terms'].iloc[0]}); declared before the call: the "
        "candidate ships if it meets more regimes, a tie by the lower pooled median; the grid holds these layouts' "
        "STANDING; |model/measured - 1| median / p90, signed median, %",
        "SHIPPED (flashmla_sparse.SHARED_ROWS_L2; iter_l2 in H200.yaml and, as the H200's, H100-SXM.yaml)",
        ("  still off: rows of one sequence past the L2 -5 % (the roofline's hit share min(1, L2 / working set) a little "
         "generous for random gathers); one request of distinct sequences' rows +4.6 % (the shipped cold tile)",),
        FAMILY_LAYOUTS, ("grid 6, main (every gather from HBM)", "grid 6, SHARED_ROWS_L2 (shipped)"))
    _rows(fmt)


def _rows(fmt: dict) -> None:
    """TensorRT-LLM's DSA generation on Hopper: decode rows through the sparse prefill kernel (first look, grid 2)."""
    m = S.measured_rows()
    if m is None:
        print(f"\nFlashMLA sparse rows grid: not measured yet ({S.ROWS_PREDICTION} holds the prices)")
        return
    rr = replicate_pct(m, S.measured_rows(replicate=True))
    m["first_err_pct"] = (m["pred_us"] / m["median_us"] - 1.0) * 100.0
    t = models_table(m, ("regime",), ("first",), ("first",))
    met = int((t["first_goal"] == "met").sum())
    print(f"\n== TENSORRT-LLM'S DSA GENERATION ON THE H200, ROWS GRID 1 ({len(m)} shapes: every decode row a row of "
          "FlashMLA's sparse PREFILL kernel over a bf16 cache, as tensorrt_llm/_torch/modules/attention.py runs it on "
          "SM90; 1-700 rows of distinct sequences at 64 and 128 heads; "
          f"{S.ROWS_PREDICTION}, commit {str(m['model_commit'].iloc[0])[:7]}, before the call; replicate run to run "
          f"{rr:.2f} %), the FIRST LOOK (the product's sparse prefill op over the rows: the generic attention kind); "
          "|model/measured - 1| median / p90, signed median, %")
    print(t.to_string(**fmt))
    print(f"  {pooled(m['first_err_pct'])}; regimes met {met} of {len(t)}; a lone row takes ~55 us (one CTA's "
          "tensor work at ~5 TFLOP/s an SM), 132 rows of 64 heads 99.5 us (the HBM shared: ~3.1 TB/s of 1,152-byte "
          "gathers); the generic op gave every wave 70 us")
    BOARD.add(FAMILY_ROWS, "first look", "rows grid 1, the sparse prefill's generic op over the rows", m["first_err_pct"],
              met, len(t))
    g = S.measured_rows("rows2", S.ROWS_PREDICTION2)
    if g is None:
        print(f"\nFlashMLA sparse rows grid 2: not measured yet ({S.ROWS_PREDICTION2} holds the prices)")
        return
    rr2 = replicate_pct(g, S.measured_rows("rows2", S.ROWS_PREDICTION2, replicate=True))
    _main_vs_cand(
        g, fmt, f"\n== TENSORRT-LLM'S DSA GENERATION ON THE H200, ROWS GRID 2 ({len(g)} new shapes at TP 1 / 2 / 4 / 8, "
        f"2-1,500 rows; {S.ROWS_PREDICTION2}, commit {str(g['model_commit'].iloc[0])[:7]}, before the call; replicate "
        f"run to run {rr2:.2f} %): main = the first look's op, cand = the rows kind attn_flashmla_sparse_fwd (a CTA per "
        "(64 heads, row), one an SM, its compute, its share of the HBM and a per-SM stream ceiling, the pair's second "
        f"CTA re-reading from the L2; fitted on rows grid 1, LOOKED-AT: {g['terms'].iloc[0]}); declared before the "
        "call: the candidate ships if it meets more regimes, a tie by the lower pooled median; the grid holds the "
        "path's STANDING; |model/measured - 1| median / p90, signed median, %",
        "SHIPPED (dsa.SPARSE_FWD_ROWS_KIND; the kind's terms in H200.yaml and, as the H200's, H100-SXM.yaml)",
        ("  still off: 1,000-1,500 rows of short contexts +15 % (many waves stream faster than the fitted share)",),
        FAMILY_ROWS, ("rows grid 2, main (the first look's op)", "rows grid 2, the rows kind (shipped)"))
    _mtp(fmt)


def _mtp(fmt: dict) -> None:
    """The MTP rows grid: a request's consecutive rows keep a share of the previous row's keys (blind)."""
    g = S.measured_mtp()
    if g is None:
        print(f"\nFlashMLA sparse MTP rows grid: not measured yet ({S.MTP_PREDICTION} holds the prices)")
        return
    rr = replicate_pct(g, S.measured_mtp(replicate=True))
    _main_vs_cand(
        g, fmt, f"\n== FLASHMLA'S SPARSE DECODE KERNEL, THE MTP ROWS GRID ({len(g)} new (heads, batch, s_q), s_q 2-4, each "
        "row after a request's first keeping 0.44 or 0.80 of the previous row's keys, controls at 0; "
        f"{S.MTP_PREDICTION}, commit {str(g['model_commit'].iloc[0])[:7]}, before the call; replicate run to run "
        f"{rr:.2f} %): main = the product as shipped (every row's gathers from HBM), cand = dsa row_overlap at the "
        "grid's overlap (the rows' re-reads priced by SHARED_ROWS_L2 and grid 5's iter_l2, no term fitted); declared "
        "before the call: the candidate ships if it meets more regimes, a tie by the lower pooled median; the grid holds "
        "the MTP rows' STANDING; |model/measured - 1| median / p90, signed median, %",
        "SHIPPED by the tie rule (dsa row_overlap, default ROW_OVERLAP_DEFAULT 0.43: the GVR document's recorded "
        "adjacent-step overlap, layer-weighted, an ASSUMPTION)",
        ("  still off: rows keeping 0.80 of the keys -3.5 % (the roofline's hit share a little generous), a lone "
         "64-head request of 3 rows +5 %",), FAMILY_MTP,
        ("MTP rows grid, main (no re-reads)", "MTP rows grid, row_overlap (shipped)"))


def _grid4_notes() -> tuple:
    """Grid 4's per-kernel check: its spans against the candidate's two ops (blind, the kernels timed in the same call)."""
    g = S.measured_spans(tag="grid4", prediction=S.PREDICTION4)
    if g is None:
        return ()
    att = (g["cand_attention_us"] / g["sparse_us"] - 1.0) * 100.0
    sp = g[g["cand_combine_us"] > 0]
    comb = (sp["cand_combine_us"] / sp["combine_tail_us"] - 1.0) * 100.0
    return (f"  per kernel (the same call's spans): the sparse kernel {pooled(att)}; the combine's exposed tail "
            f"{pooled(comb)} over the {len(sp)} split calls (the chain prices the 2-3-split large batches' combine "
            "+20..+45 %: a few us; the dense family's terms, not refitted)",)


def _prefill(fmt: dict) -> None:
    """FlashMLA's sparse prefill: the product's first look, then the kernel's structure from source, blind."""
    p1 = S.measured_prefill()
    if p1 is None:
        print(f"\nFlashMLA sparse prefill grid 1: not measured yet ({S.PREFILL_PREDICTION} holds the prices)")
        return
    p1["first_err_pct"] = (p1["pred_us"] / p1["median_us"] - 1.0) * 100.0
    t = models_table(p1, ("regime",), ("first",), ("first",))
    met = int((t["first_goal"] == "met").sum())
    print(f"\n== FLASHMLA'S SPARSE PREFILL ON THE H200, GRID 1 ({len(p1)} prompts of 2K-32K at TP 1 / 2 / 8: "
          f"flash_mla_sparse_fwd over one causal prompt, every row's k = 2048 indices, the first k rows' -1 entries "
          f"masked; {S.PREFILL_PREDICTION}, commit {str(p1['model_commit'].iloc[0])[:7]}, before the call), the FIRST "
          "LOOK of the product's DSA prefill attention (the generic kind over sum_i min(i, k) pairs at the heads a "
          "device holds); |model/measured - 1| median / p90, signed median, %")
    print(t.to_string(**fmt))
    print(f"  {pooled(p1['first_err_pct'])}; regimes met {met} of {len(t)}; the kernel runs ~475-640 TFLOP/s counting "
          "every row's k entries at the padded heads (the engine passes no topk_length: the -1 entries are masked, not "
          "skipped); the generic op gave the launch heads x P / 128 / 64 parallel units, a handful of CTAs")
    BOARD.add(FAMILY_PREFILL, "first look", "prefill grid 1, the product's DSA prefill attention then",
              p1["first_err_pct"], met, len(t))
    p2 = S.measured_prefill2()
    if p2 is None:
        print(f"\nFlashMLA sparse prefill grid 2: not measured yet ({S.PREFILL_PREDICTION2} holds the prices)")
        return
    rr = replicate_pct(p2, S.measured_prefill2(replicate=True))
    _main_vs_cand(
        p2, fmt, f"\n== FLASHMLA'S SPARSE PREFILL, GRID 2 ({len(p2)} new prompts of 2.5K-29K at TP 1 / 2 / 4 / 8; "
        f"{S.PREFILL_PREDICTION2}, commit {str(p2['model_commit'].iloc[0])[:7]}, before the call; replicate run to run "
        f"{rr:.2f} %): main = the generic kind (as shipped then), cand = sparse_prefill flashmla (every row's k tiles at "
        "the padded heads, a CTA per (64 heads, row): read from the kernel's source, no constant fitted; LOOKED-AT on "
        "grid 1); declared before the call: the candidate ships if it meets more regimes, a tie by the lower pooled "
        "median; the grid holds FlashMLA sparse prefill's H200 STANDING; |model/measured - 1| median / p90, signed "
        "median, %", "SHIPPED (dsa sparse_prefill flashmla)",
        ("  still off: short prompts of 3K-6K +10..+11 % at TP8 (a guess, not tested: the launch's first wave)",),
        FAMILY_PREFILL,
        ("prefill grid 2, main (generic kind)", "prefill grid 2, sparse_prefill flashmla (shipped)"))
