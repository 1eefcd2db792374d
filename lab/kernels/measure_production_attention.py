"""Measure production decode / verification attention kernels on the lent GPU (CUDA-graph timing), one CSV row per
shape: FlashInfer's CUDA-core decode, its tensor-core (FA2 prefill) decode and verification, its MLA kernel, SGLang's
Triton grouped decode kernel, FlashMLA (when its wheel loads). Launch grids, registers and shared memory of one call per
configuration come from torch.profiler (a second CSV).

Runs from a copy outside the repository with the kernels' packages carried as wheels (flashinfer-python 0.6.4 and its
small dependencies, sgl-flash-mla) and SGLang's Triton kernel file copied beside it (ext/sgl_decode_attention.py,
never committed). Timing: fn(i) runs one call on K/V copy i % R (R copies so that R x the K/V bytes >= 128 MiB: every
call reads its cache from HBM, as a decode layer does); calls are captured back to back in a CUDA graph, a spin kernel
runs before every timed replay (the events bracket device time only), the median of the replays / calls is one call's
time including the graph's gap between kernels (what the model prices as a graph launch).

    python3 measure_production_attention.py --out DIR [--parts build,fi_decode,...] [--grid campaign|fresh]
                                            [--budget-s 520] [--smoke]

--grid fresh measures a second grid of shapes that is in none of the campaign's rows (contexts 24 / 48 / 96 / 192 /
384 / 768 / 3072 / 12288 / 49152, batches 2 / 8 / 32 / 128 / 512, the same head configurations, dtypes and page
sizes): the honest test of a model whose rules were revised after the campaign's rows were looked at. Its predictions
are written and committed BEFORE it is measured (lab/kernels/predict_fresh_production_attention.py). --grid mla_merge
(FlashInfer MLA shapes split into 2-4 pieces), --grid fresh_fi (FlashInfer decode / tensor-core / verification
shapes in none of the other grids, FI_DEC_*), --grid fresh_fi2 (a second such grid at short contexts, FI2_*) and --grid
fresh_fi3 (a third, FI3_*) are checks of the same kind; --grid fi_dec_blind (FIDB_*) and --grid fi_dec_blind2
(FIDB2_*), --grid fi_dec_blind3 (FIDB3_*, with the fp8 lone-CTA fit rows) and --grid fi_dec_blind4 (FIDB4_*) and --grid fi_dec_blind5
(FIDB5_*) and --grid fi_dec_blind6 (FIDB6_*) are the CUDA-core decode kernel's
blind grids; --grid fi_tc_blind (FITB_*) the tensor-core (FA2 prefill) kernel's.
"""
from __future__ import annotations

import argparse
import csv
import datetime
import math
import os
import sys
import time
import traceback

SCRIPT_VERSION = 3
HERE = os.path.dirname(os.path.abspath(__file__))
#: (B, T) grid of decode rows: context 16 -> 256K, batch 1 -> 1024, at most 4 M cached tokens per call
T_GRID = (16, 64, 256, 1024, 4096, 16384, 65536, 262144)
B_GRID = (1, 4, 16, 64, 256, 1024)
MAX_TOKENS = 1 << 22
#: heads (query, KV) of the models measured: Llama-3.1-8B, Llama-3.1-70B (TP1 shapes), Qwen2.5-7B (28 / 4)
HEADS = {"llama8b": (32, 8), "llama70b": (64, 8), "qwen7b": (28, 4), "llama70b_tp8": (8, 1),
         # the sixth decode blind grid's tensor-parallel shards (Llama-3.1-70B at TP 2 / 4, Llama-3.1-8B at TP 2): the
         # CUDA-core decode kernel is compiled for groups 1, 2, 3, 4, 8 only, so Qwen2.5-7B (28 / 4) and -32B (40 / 8)
         # are not CUDA-core decode shapes
         "llama70b_tp2": (32, 4), "llama70b_tp4": (16, 2), "llama8b_tp2": (16, 4),
         # the tile-rate scan's one-KV-head shard (Llama-3.1-8B's group of 4: one CTA per request and Q tile)
         "g4kv1": (4, 1)}


def bt_grid(max_tokens=MAX_TOKENS, ts=T_GRID, bs=B_GRID):
    return [(b, t) for t in ts for b in bs if b * t <= max_tokens]


def decode_rows(family, model, kv, ts, bs, max_tokens, q=1, page=16, **extra) -> list[dict]:
    """One row per (context, batch) of ts x bs with batch x context <= max_tokens: `model`'s heads (HEADS), head dim 128,
    K/V dtype `kv`, `q` query rows, page size `page`, and the `extra` columns (a grid's regime label)."""
    hq, hkv = HEADS[model]
    return [dict(family=family, model=model, heads=hq, kv_heads=hkv, head_dim=128, dtype=kv, batch=b, q_rows=q,
                 context=t, page_size=page, **extra) for t in ts for b in bs if b * t <= max_tokens]



SUB_GRID = [(b, t) for t in (16, 256, 4096, 65536) for b in (1, 16, 256) if b * t <= MAX_TOKENS]
VERIFY_GRID = [(b, t) for t in (64, 256, 1024, 4096, 16384, 65536) for b in (1, 4, 16, 64, 256) if b * t <= MAX_TOKENS]
#: the fresh grid (--grid fresh): no (context, batch) of it is in the campaign's grids above
FRESH_T = (24, 48, 96, 192, 384, 768, 3072, 12288, 49152)
FRESH_B = (2, 8, 32, 128, 512)
FRESH_MAX_TOKENS = 1 << 21
FRESH_SUB_T, FRESH_SUB_B = (48, 384, 3072), (2, 32, 512)
FRESH_VERIFY_T, FRESH_VERIFY_B = (48, 192, 768, 3072, 12288), (2, 8, 32, 128)


#: the MLA merge grid (--grid mla_merge, fi_mla only): (heads, batch, context) that FlashInfer's MLAPlan splits into 2-4
#: pieces per (request, row tile), with 2-16 serial merge row iterations per merge CTA; none in the campaign's or the
#: fresh grid's rows
MLA_MERGE = ([(128, b, t) for b, t in ((1, 40), (1, 100), (3, 72), (5, 900), (6, 100), (6, 200), (6, 640), (12, 72),
                                       (12, 320), (12, 2000), (20, 900), (20, 2600), (24, 520), (24, 5000), (40, 320),
                                       (40, 2000), (48, 640), (48, 5000))]
             + [(16, b, t) for b, t in ((1, 40), (1, 100), (3, 72), (6, 200), (12, 100), (12, 640), (20, 160),
                                        (20, 2000), (24, 40), (40, 900), (40, 5000), (48, 1300), (80, 320), (80, 2600),
                                        (96, 900), (96, 5000))])


#: the FRESH MLA / Triton grid (--grid fresh_mla; parts fi_mla, flashmla, sgl_triton): batches in none of the campaign's
#: (1, 4, 16, 64, 256, 1024), the fresh grid's (2, 8, 32, 128, 512) or the MLA merge grid's rows, so no shape of it was
#: measured before: many requests per SM at short and middle contexts (the large-batch corner where the MLA kernels walk
#: several requests per CTA and SGLang's grid carries idle programs) and small batches at short and middle contexts
FRESH_MLA_BT = ([(b, t) for b in (96, 192, 384, 768) for t in (16, 32, 128, 320, 640, 2048)]
                + [(b, t) for b in (3, 10, 40) for t in (32, 160, 1536, 6144)])
FRESH_MLA_SGL_BT = [(b, t) for b in (192, 384, 768) for t in (16, 32, 128, 512)]
FRESH_MLA_SGL_SMALL = [(b, t) for b in (3, 10, 40) for t in (1536, 6144)]


#: the MLA per-request / per-item FIT grid (--grid mla_fit2; parts fi_mla, flashmla): the middle regime with several
#: requests per FlashMLA part and work items per FlashInfer MLA cluster (batch 160-480 at context 1152-3840, 16 and 128
#: heads), shapes in none of the earlier grids; these rows are FITTED (simulator/calibration/fit_production_attention.py)
MLA_FIT2_BT = [(b, t) for b in (160, 320, 480) for t in (1152, 2304, 3840)]
#: the MLA BLIND grid (--grid mla_blind2; parts fi_mla, flashmla): shapes in none of the earlier MLA rows nor the fit
#: grid above, priced and committed before they were measured: many requests at short contexts (batch 200-900 at
#: context 24-400) and few requests at long contexts (batch 3-40 at context 5000-60000), heads 16 / 32 / 128
MLA_BLIND2_BT = ([(b, t) for b in (200, 500, 900) for t in (24, 100, 400)]
                 + [(b, t) for b in (3, 12, 40) for t in (5000, 20000, 60000)])

#: the third MLA BLIND grid (--grid mla_blind3; parts fi_mla, flashmla): DeepSeek-V3's 128 MLA heads at tensor-parallel
#: 1 / 2 / 4 / 8 (128 / 64 / 32 / 16 heads per GPU), shapes in none of the earlier MLA grids, priced and committed before
#: they were measured: short contexts at mid and large batch (one partial 64-token stage per work item, several items
#: per FlashInfer cluster), a few small batches, the middle, and long contexts (80K-128K) at batch 2-6
MLA_BLIND3_HEADS = (16, 32, 64, 128)
MLA_BLIND3_BT = ([(80, 20), (160, 56), (320, 40), (640, 20), (640, 144), (48, 240), (1, 120)]
                 + [(24, 700), (112, 1800), (280, 3000), (6, 30000)]
                 + [(2, 80000), (6, 131072)])

#: the fourth MLA BLIND grid (--grid mla_blind4; parts fi_mla, flashmla): DeepSeek-V3's 128 and Kimi-K2's 64 MLA heads at
#: tensor-parallel 1-8 (128 / 64 / 32 / 16 / 8 heads per GPU), shapes in none of the earlier MLA grids, priced and
#: committed before they were measured: middle contexts at large batch whose FlashInfer MLA items leave a last partial
#: round (the tail round), short contexts at batch 64 (one item per cluster / request per FlashMLA part), and controls
#: (middle mid batch, short large batch, small batch, a long context)
MLA_BLIND4_HEADS = (8, 16, 32, 64, 128)
MLA_BLIND4_BT = ([(256, 2500), (300, 1600), (420, 3300), (360, 1200)]
                 + [(64, 24), (64, 72), (64, 176)]
                 + [(96, 2600), (48, 5200), (300, 48), (8, 3000), (2, 70000)])

#: the fifth MLA BLIND grid (--grid mla_blind5; parts fi_mla, flashmla): DeepSeek-V3's 128 MLA heads at tensor-parallel
#: 1 / 2 / 4 / 8 (128 / 64 / 32 / 16 heads per GPU), the test of FlashInfer MLA's per-item first-stage fill
#: (simulator/kernels/flashinfer.py FI_MLA_FILL_RATE_SM): short contexts (16-240 tokens: one partial 64-token stage to
#: four stages per item) at batch 1-256, and controls (middle contexts 480-2000 at batch 8-200); every (batch, context)
#: in none of the committed CSVs' rows (checked when priced), priced and committed before it was measured
MLA_BLIND5_HEADS = (16, 32, 64, 128)
MLA_BLIND5_BT = ([(64, 40), (48, 120), (96, 88), (128, 200), (24, 16), (256, 32), (256, 152), (4, 56), (12, 232),
                  (1, 24)]
                 + [(32, 640), (160, 480), (8, 2000), (200, 1008)])

#: the sixth MLA BLIND grid (--grid mla_blind6; parts fi_mla, flashmla): DeepSeek-V3's 128 MLA heads at tensor-parallel
#: 1 / 2 / 4 / 8 (128 / 64 / 32 / 16 heads per GPU), the test of the small-batch short-context rules (FlashInfer MLA's
#: per-row merge link, simulator/kernels/flashinfer.py FI_MLA_MERGE_ROW_LINKS; FlashMLA's PDL combine and out-of-bound
#: V zero-fill, simulator/kernels/flashmla.py FM_COMBINE_PDL, FM_OOB_TOKEN_S): batch 1-28 at context 36-448 (whole and
#: partial last blocks, split and unsplit FlashInfer MLA calls), and controls (a middle context at mid batch, a short
#: context at batch 192); every (batch, context) in none of the committed CSVs' rows (checked when priced), priced and
#: committed before it was measured; measured with the same Q every replay (Q in L2, as an engine's step leaves it:
#: the absorbed-Q GEMM / concatenation writes Q just before the call) and again with a fresh Q (--fresh-q)
MLA_BLIND6_HEADS = (16, 32, 64, 128)
MLA_BLIND6_BT = ([(1, 48), (2, 248), (3, 128), (5, 104), (6, 448), (8, 36), (10, 320), (16, 112), (20, 40), (28, 264)]
                 + [(48, 1280), (192, 72)])

#: the seventh MLA BLIND grid (--grid mla_blind7; part flashmla): DeepSeek-V3's 128 MLA heads at tensor-parallel
#: 1 / 2 / 4 / 8 (128 / 64 / 32 / 16 heads per GPU), FlashMLA where get_mla_metadata gives each part ONE request (or one
#: piece of one): long contexts (2.3K-24K) at batch 2-64, short contexts (40-176 tokens: one to three 64-token blocks) at
#: batch 24-88, and controls (several requests per part: B 240 T 700, B 416 T 56); the test of the padded-MMA rule
#: (simulator/kernels/flashmla.py FM_MMA_PADDED); every (batch, context) in none of the committed CSVs' rows (checked
#: when priced), priced and committed before it was measured, same Q every replay
MLA_BLIND7_HEADS = (16, 32, 64, 128)
#: the H200's FlashMLA grid (--grid mla_h200; part flashmla; lab/kernels/predict_mla_h200.py prices it before the call):
#: DeepSeek-V3's MLA heads at TP 1-8 on the lent H200, weighted to the regime part E missed there (short contexts at
#: mid batch: one to four 64-token blocks, one request per part) with the other three regimes as controls; every
#: (heads, batch, context) in none of the committed CSVs' flashmla rows (checked when priced), same Q every replay
MLA_H200_HEADS = (16, 32, 64, 128)
MLA_H200_BT = ([(20, 88), (32, 200), (44, 152), (72, 120), (100, 64), (160, 232), (200, 40)]
               + [(300, 100), (480, 52)] + [(4, 5000), (12, 1800)] + [(40, 3000), (96, 1100)])
MLA_BLIND7_BT = ([(2, 24000), (10, 14000), (14, 3400), (28, 2300), (64, 9000)]
                 + [(24, 56), (36, 136), (56, 176), (88, 40)]
                 + [(240, 700), (416, 56)])

#: the FlashInfer check grid (--grid fresh_fi: fi_decode, fi_tc, fi_verify only): contexts and batches in none of the
#: campaign's, the fresh grid's or the MLA merge grid's rows, over the regimes the CUDA-core decode rules were revised
#: for (short and middle contexts at small, mid and large batch, bf16 and fp8 K/V) and some they already met
FI_DEC_T, FI_DEC_B = (32, 80, 160, 640, 1536, 6144, 24576, 98304), (1, 3, 6, 12, 24, 48, 96, 384)
FI_CHECK_MAX_TOKENS = 1 << 21


def fresh_fi_shapes(part: str) -> list[dict]:
    """The shapes of one part of the FlashInfer check grid (FI_DEC_*)."""
    out = []

    def add(family, model, kv, page, ts, bs, q=1):
        out.extend(decode_rows(family, model, kv, ts, bs, FI_CHECK_MAX_TOKENS, q=q, page=page))

    if part == "fi_decode":
        add("fi_decode", "llama8b", "bf16", 16, FI_DEC_T, FI_DEC_B)
        add("fi_decode", "llama70b", "bf16", 16, (32, 160, 1536, 6144, 24576), (3, 12, 48, 384))
        add("fi_decode", "llama8b", "fp8", 16, (32, 80, 160, 640, 1536, 6144, 24576), (1, 6, 24, 96, 384))
        add("fi_decode", "llama8b", "bf16", 1, (80, 1536), (3, 48))
        add("fi_decode", "llama8b", "bf16", 64, (80, 1536), (3, 48))
    elif part == "fi_tc":
        add("fi_tc", "llama8b", "bf16", 16, (32, 80, 160, 1536, 6144), (3, 24, 96, 384))
        add("fi_tc", "llama8b", "fp8", 16, (32, 80, 160, 1536, 6144), (3, 24, 96, 384))
        add("fi_tc", "qwen7b", "bf16", 16, (32, 160, 1536), (12, 384))
    elif part == "fi_verify":
        add("fi_verify", "llama8b", "bf16", 16, (80, 640, 6144), (3, 24, 192), q=4)
        add("fi_verify", "llama8b", "fp8", 16, (80, 640, 6144), (3, 24, 192), q=4)
    return out


#: the second FlashInfer check grid (--grid fresh_fi2: fi_decode, fi_tc, fi_verify only): contexts 8 / 40 / 56 / 112 /
#: 224 and batches in none of the earlier grids' rows, over the regimes the fp8 FA2 prefill tile chain and the CUDA-core
#: decode's latency / issue rule were revised for (tensor-core and verification rows at T <= 224 x B 32-640, bf16 and
#: fp8; decode rows at T <= 112 x B 1-7), with middle-context controls (T 2048 / 8192 at B 2 / 20)
FI2_CTRL_T, FI2_CTRL_B = (2048, 8192), (2, 20)


def fresh_fi2_shapes(part: str) -> list[dict]:
    """The shapes of one part of the second FlashInfer check grid (FI2_*)."""
    out = []

    def add(family, model, kv, page, ts, bs, q=1):
        hq, hkv = HEADS[model]
        for t in ts:
            for b in bs:
                out.append(dict(family=family, model=model, heads=hq, kv_heads=hkv, head_dim=128, dtype=kv,
                                batch=b, q_rows=q, context=t, page_size=page))

    if part == "fi_decode":
        for kv in ("bf16", "fp8"):
            add("fi_decode", "llama8b", kv, 16, (8, 40, 56, 112), (1, 2, 5, 7))
            add("fi_decode", "llama8b", kv, 16, FI2_CTRL_T, FI2_CTRL_B)
        add("fi_decode", "llama70b", "bf16", 16, (8, 40, 56, 112), (1, 2, 5))
        add("fi_decode", "llama8b", "bf16", 64, (40, 112), (2, 5))
        add("fi_decode", "llama8b", "bf16", 16, (40, 112), (40,))
    elif part == "fi_tc":
        for kv in ("bf16", "fp8"):
            add("fi_tc", "llama8b", kv, 16, (8, 40, 112, 224), (40, 160, 320, 640))
            add("fi_tc", "qwen7b", kv, 16, (40, 224), (160, 640))
            add("fi_tc", "llama8b", kv, 16, FI2_CTRL_T, FI2_CTRL_B)
        add("fi_tc", "llama70b", "fp8", 16, (8, 112), (48, 320))
    elif part == "fi_verify":
        for kv in ("bf16", "fp8"):
            add("fi_verify", "llama8b", kv, 16, (40, 112, 224), (2, 5, 40, 160, 320), q=4)
    return out


#: the third FlashInfer check grid (--grid fresh_fi3: fi_decode, fi_tc, fi_verify only): contexts 20 / 28 / 72 / 136 /
#: 200 / 300 / 1200 / 2800, in none of the earlier grids' rows, at batches 1-6 and 144-900, with Llama-3.1-70B's heads
#: at TP8 (8 query heads, 1 KV head) beside Llama-3.1-8B / 70B and Qwen2.5-7B, bf16 / fp8, decode q 1 and verification q
#: 2 / 3 / 4 / 6: the regimes of the lone short decode call (PDL), the one-tile FA2 prefill CTA at many waves, and the
#: lone fp8 prefill CTA
FI3_SHORT, FI3_MID, FI3_SMALL_B, FI3_LARGE_B = (20, 72, 136, 200), (300, 1200, 2800), (1, 3, 6), (144, 480, 900)
FI3_MAX_TOKENS = 1 << 20


def fresh_fi3_shapes(part: str) -> list[dict]:
    """The shapes of one part of the third FlashInfer check grid (FI3_*)."""
    out = []

    def add(family, model, kv, ts, bs, q=1, page=16):
        out.extend(decode_rows(family, model, kv, ts, bs, FI3_MAX_TOKENS, q=q, page=page))

    if part == "fi_decode":
        add("fi_decode", "llama8b", "bf16", (20, 28) + FI3_SHORT[1:], FI3_SMALL_B)
        add("fi_decode", "llama8b", "fp8", FI3_SHORT[:3], FI3_SMALL_B)
        add("fi_decode", "llama70b", "bf16", (20, 72, 200), FI3_SMALL_B)
        add("fi_decode", "llama70b_tp8", "bf16", (20, 72, 200), FI3_SMALL_B)
        add("fi_decode", "llama8b", "bf16", FI3_MID, FI3_SMALL_B)
        add("fi_decode", "llama8b", "bf16", (28, 136, 300, 1200), FI3_LARGE_B)
        add("fi_decode", "llama8b", "fp8", (28, 300), FI3_LARGE_B[:2])
    elif part == "fi_tc":
        add("fi_tc", "llama8b", "bf16", FI3_SHORT, (3,) + FI3_LARGE_B)
        add("fi_tc", "llama8b", "fp8", (20, 136), (3,) + FI3_LARGE_B)
        add("fi_tc", "qwen7b", "bf16", (28, 200), (144, 900))
        add("fi_tc", "llama70b_tp8", "bf16", (28, 136), (144, 900))
        add("fi_tc", "llama8b", "bf16", FI3_MID, (6, 144))
    elif part == "fi_verify":
        add("fi_verify", "llama8b", "bf16", (20, 72, 200), (3, 144, 480), q=3)
        add("fi_verify", "llama8b", "bf16", (28, 136), (6, 144), q=6)
        add("fi_verify", "llama8b", "fp8", (20, 72, 200), FI3_SMALL_B, q=4)
        add("fi_verify", "llama8b", "fp8", (28, 136), (144, 480), q=4)
        add("fi_verify", "llama8b", "bf16", (72, 300, 1200), (3, 144), q=2)
        add("fi_verify", "qwen7b", "bf16", (72, 200), (6, 144), q=4)
    return out


#: the FlashInfer CUDA-core decode blind grid (--grid fi_dec_blind: fi_decode only): contexts 12 / 36 / 88 / 120 / 176 /
#: 232 / 520 / 880 / 1800 / 3600 and batches 1-7, 24 / 40, 160-448 in none of the earlier grids' rows, Llama-3.1-8B /
#: 70B / 70B-TP8 (8 / 1) / Qwen2.5-7B (28 / 4) heads, bf16 / fp8 K/V, page 16 (a few 1 / 64): the short small-batch
#: calls (the lone CTA, programmatic dependent launch), the middle contexts at large batch (several waves, bandwidth
#: against issue), the short mid-batch fp8 / 70B calls, and controls from regimes that pass
FIDB_SHORT, FIDB_MID = (12, 36, 88, 120, 176, 232), (520, 880, 1800, 3600)
FIDB_MAX_TOKENS = 1 << 20


def fi_dec_blind_shapes(part: str) -> list[dict]:
    """The shapes of the FlashInfer CUDA-core decode blind grid (FIDB_*)."""
    out = []
    if part != "fi_decode":
        return out

    def add(model, kv, ts, bs, page=16):
        out.extend(decode_rows("fi_decode", model, kv, ts, bs, FIDB_MAX_TOKENS, page=page))

    add("llama8b", "bf16", (12, 36, 88, 176, 232), (1, 2, 5, 7))
    add("llama70b_tp8", "bf16", (12, 36, 88, 120, 232, 520, 1800), (1, 2, 5))
    add("llama70b", "bf16", (12, 36, 120, 232), (1, 5))
    add("llama70b", "bf16", (36, 120), (24, 40))
    add("llama8b", "fp8", (12, 88, 176), (1, 5))
    add("llama8b", "fp8", (36, 120), (24, 40))
    add("llama8b", "fp8", (36, 232), (2, 7))
    add("llama8b", "bf16", (12, 88), (24, 40))
    add("llama70b", "fp8", (36, 120), (24, 40))
    add("llama8b", "bf16", FIDB_MID, (160, 320, 448))
    add("llama70b", "bf16", (520, 1800), (160, 320))
    add("llama8b", "fp8", (520, 1800), (160, 320, 448))
    add("llama8b", "bf16", (36, 176), (320,))
    add("llama8b", "fp8", (88,), (320,))
    add("llama8b", "bf16", (880, 3600), (2, 24))
    add("llama70b", "bf16", (1800,), (2, 40))
    add("llama8b", "fp8", (880, 3600), (2, 24))
    add("llama8b", "bf16", (36, 880), (2, 160), page=1)
    add("llama8b", "bf16", (88, 1800), (5, 160), page=64)
    add("qwen7b", "bf16", (120, 880), (5, 160))
    add("llama8b", "bf16", (4096,), (3, 7))
    add("llama8b", "fp8", (4096,), (3,))
    return out


#: the second CUDA-core decode blind grid (--grid fi_dec_blind2: fi_decode only), the test of the model fitted with the
#: first grid's lone-CTA rows: contexts 10 / 44 / 68 / 104 / 144 / 216 / 456 / 1400 / 2200 and batches 1 / 3 / 6, 20 / 48,
#: 192 / 384 in none of the earlier grids' rows, Llama-3.1-8B / 70B / 70B-TP8 heads, bf16 / fp8, page 16 (a few 64)
FIDB2_MAX_TOKENS = 1 << 20


def fi_dec_blind2_shapes(part: str) -> list[dict]:
    """The shapes of the second CUDA-core decode blind grid (FIDB2_*)."""
    out = []
    if part != "fi_decode":
        return out

    def add(model, kv, ts, bs, page=16):
        out.extend(decode_rows("fi_decode", model, kv, ts, bs, FIDB2_MAX_TOKENS, page=page))

    add("llama8b", "bf16", (10, 44, 104, 216), (1, 3, 6))
    add("llama70b_tp8", "bf16", (10, 68, 144, 1400), (1, 3, 6))
    add("llama70b", "bf16", (10, 68, 144), (1, 6))
    add("llama8b", "fp8", (10, 68, 216), (1, 6))
    add("llama8b", "bf16", (44, 144), (20, 48))
    add("llama70b", "bf16", (68,), (20, 48))
    add("llama8b", "fp8", (68,), (20, 48))
    add("llama8b", "bf16", (456, 1400, 2200), (192, 384))
    add("llama70b", "bf16", (1400,), (192,))
    add("llama8b", "fp8", (456, 2200), (192, 384))
    add("llama8b", "bf16", (104,), (384,))
    add("llama8b", "bf16", (1400, 2200), (3, 20))
    add("llama8b", "fp8", (1400,), (6, 48))
    add("llama8b", "bf16", (68, 1400), (6, 192), page=64)
    add("llama8b", "fp8", (44, 144), (3,))
    add("llama8b", "bf16", (10, 104), (20, 48))
    add("llama70b", "fp8", (68,), (6, 20))
    add("llama70b_tp8", "bf16", (216, 456), (2,))
    return out


#: the third CUDA-core decode blind grid (--grid fi_dec_blind3: fi_decode only), the test of the model with the fp8
#: group-8 kernel's measured registers (72: 7 resident CTAs) and the fp8 lone-CTA fit rows: contexts 20 / 52 / 80 / 184 /
#: 300 / 640 / 1200 / 2600 / 5000 and batches 2 / 4 / 12 / 28 / 36 / 56 / 128 / 256 in none of the earlier grids' rows,
#: fp8 K/V of Llama-3.1-8B / 70B (group 4 / 8), Llama-3.1-70B bf16 at large and short middle batches, Llama-3.1-8B bf16
#: short middle batches, a few controls; plus the fp8 LONE-CTA FIT rows (Llama-3.1-70B-TP8 heads, one KV head, contexts
#: 520 / 1800, batch 1-5, page 16: 5-75 CTAs each alone on its SM, as the bf16 rows of --grid fi_dec_blind)
FIDB3_MAX_TOKENS = 1 << 20


def fi_dec_blind3_shapes(part: str) -> list[dict]:
    """The shapes of the third CUDA-core decode blind grid (FIDB3_*) and the fp8 lone-CTA fit rows."""
    out = []
    if part != "fi_decode":
        return out

    def add(model, kv, ts, bs, page=16):
        out.extend(decode_rows("fi_decode", model, kv, ts, bs, FIDB3_MAX_TOKENS, page=page))

    add("llama70b_tp8", "fp8", (520, 1800), (1, 2, 3, 4, 5))      # the fp8 lone-CTA fit rows
    add("llama8b", "fp8", (20, 52, 184), (2, 4))
    add("llama8b", "fp8", (20, 80, 184), (12, 28, 56))
    add("llama8b", "fp8", (640, 1200, 2600), (128, 256))
    add("llama8b", "fp8", (1200, 5000), (4, 12))
    add("llama70b", "fp8", (20, 52, 184), (1, 4))
    add("llama70b", "fp8", (20, 80, 184), (12, 28))
    add("llama70b", "fp8", (640, 2600), (4, 28))
    add("llama70b", "fp8", (640, 1200), (128, 256))
    add("llama70b_tp8", "fp8", (20, 184), (2, 4))
    add("llama70b", "bf16", (640, 1200, 2600), (128, 256))
    add("llama70b", "bf16", (20, 80, 184), (12, 28))
    add("llama8b", "bf16", (20, 52, 80, 184), (28, 36))
    add("llama8b", "bf16", (300,), (12,))
    add("llama8b", "bf16", (1200, 5000), (4, 12))
    add("llama8b", "bf16", (640, 2600), (256,))
    add("llama8b", "bf16", (52, 184), (4,))
    return out


#: the fourth CUDA-core decode blind grid (--grid fi_dec_blind4: fi_decode only), the test of the CTA launch share
#: (simulator/kernels/flashinfer.py FI_DECODE_CTA_LAUNCH_SHARE) and of the 9- / 7-slot dispatch rule: crowded one-wave
#: short calls (contexts 24-248, batches 14-58; Llama-3.1-8B and 70B heads, bf16 and fp8 K/V), the issue-bound fp8
#: many-wave middle calls (B 176-416 at 700-3000 tokens), Llama-3.1-70B bf16 (the 9-slot kernel) at B 192 / 320, and
#: controls (short small batch, middle small / mid batch, short and middle large batch, one-KV-head lone CTAs); every
#: (heads, K/V, batch, context) in none of the earlier grids' rows (checked against the committed CSVs when priced)
FIDB4_MAX_TOKENS = 1_300_000


def fi_dec_blind4_shapes(part: str) -> list[dict]:
    """The shapes of the fourth CUDA-core decode blind grid (FIDB4_*)."""
    out = []
    if part != "fi_decode":
        return out

    def add(model, kv, ts, bs, page=16):
        out.extend(decode_rows("fi_decode", model, kv, ts, bs, FIDB4_MAX_TOKENS, page=page))

    add("llama8b", "bf16", (24, 60, 100, 168, 248), (14, 22, 34, 44, 58))     # crowded one-wave short calls
    add("llama70b", "bf16", (24, 60, 100, 168), (14, 30, 44))
    add("llama8b", "fp8", (24, 100, 248), (14, 34, 52))
    add("llama70b", "fp8", (60, 168), (22, 44))
    add("llama8b", "fp8", (700, 1500, 3000), (176, 288, 416))                 # issue-bound fp8 many-wave middle
    add("llama70b", "fp8", (900, 2000), (176, 320))
    add("llama70b", "bf16", (500, 900, 2000), (192, 320))                     # the 9-slot kernel, several waves
    add("llama8b", "bf16", (26, 150), (3, 5))                                 # controls
    add("llama8b", "bf16", (3300, 7000), (6, 40))
    add("llama8b", "bf16", (136,), (300,))
    add("llama8b", "bf16", (1100,), (300,))
    add("llama70b_tp8", "bf16", (90, 600), (2, 4))
    return out


#: the fifth CUDA-core decode blind grid (--grid fi_dec_blind5: fi_decode only), the test of the staggered later waves
#: (hwmodels/roofline.py CHAIN_OVERLAP_STAGGERED): many-wave middle calls (fp8 K/V, Llama-3.1-8B and 70B heads, B 200-352
#: at 1000-2400 tokens; bf16 at B 200-480), many-wave short fp8 calls (B 320-640 at 48-120 tokens, where the rule prices
#: less), the crowded one-wave short calls that miss (Llama-3.1-70B bf16 B 18-38 at 72-120 tokens, Llama-3.1-8B bf16
#: B 48-62 at 184-216 tokens) and controls (one-wave middle and short calls); every (heads, K/V, batch, context) in none
#: of the earlier grids' rows (checked against the committed CSVs when priced)
FIDB5_MAX_TOKENS = 1_300_000


def fi_dec_blind5_shapes(part: str) -> list[dict]:
    """The shapes of the fifth CUDA-core decode blind grid (FIDB5_*)."""
    out = []
    if part != "fi_decode":
        return out

    def add(model, kv, ts, bs, page=16):
        out.extend(decode_rows("fi_decode", model, kv, ts, bs, FIDB5_MAX_TOKENS, page=page))

    add("llama8b", "fp8", (1000, 2200), (200, 352))                           # fp8 many-wave middle
    add("llama8b", "fp8", (450,), (240, 500))
    add("llama70b", "fp8", (1300,), (240, 400))
    add("llama8b", "bf16", (800, 1800), (200, 480))                           # bf16 many-wave middle
    add("llama70b", "bf16", (1400,), (256,))
    add("llama8b", "fp8", (48, 120), (320, 640))                              # fp8 many-wave short
    add("llama70b", "bf16", (72, 120), (18, 38))                              # crowded one-wave short calls that miss
    add("llama8b", "bf16", (184, 216), (48, 62))
    add("llama8b", "bf16", (44, 132), (18, 42))                               # controls: one-wave short
    add("llama8b", "fp8", (72, 200), (20, 44))
    add("llama8b", "bf16", (2300,), (8, 46))                                  # controls: one-wave middle
    add("llama8b", "fp8", (4000,), (20, 60))
    add("llama70b", "fp8", (1700,), (10, 36))
    return out


#: the sixth CUDA-core decode blind grid (--grid fi_dec_blind6: fi_decode only), the test of the CTA launch in every wave
#: of a many-wave launch and of the decode launches' own residency for the wave count (simulator/kernels/flashinfer.py
#: FI_DECODE_CTA_LAUNCH_EVERY_WAVE, FI_DECODE_OWN_RESIDENCY): many-wave short calls (fp8 and bf16, Llama-3.1-8B at TP 1
#: / 2, Llama-3.1-70B at TP 2 / 4), the crowded one-wave short calls of the 9-slot kernel (Llama-3.1-70B bf16 at TP 1 /
#: 2 / 4, B 16-150 at 56-136 tokens) and a few just past 8 x 132 CTAs (where the wave count depends on the residency),
#: the S = 2 Llama-3.1-8B bf16 calls at 176-240 tokens that fill nearly every SM, and controls from met regimes; every
#: (heads, K/V, batch, context, page) in none of the earlier grids' rows (checked against the committed CSVs when priced)
FIDB6_MAX_TOKENS = 1_300_000


def fi_dec_blind6_shapes(part: str) -> list[dict]:
    """The shapes of the sixth CUDA-core decode blind grid (FIDB6_*), each with its regime label (`group`)."""
    out = []
    if part != "fi_decode":
        return out

    def add(group, model, kv, ts, bs, page=16):
        out.extend(decode_rows("fi_decode", model, kv, ts, bs, FIDB6_MAX_TOKENS, page=page, group=group))

    add("fp8 many-wave short", "llama8b", "fp8", (40, 64, 100, 140), (288, 448, 800))
    add("fp8 many-wave short", "llama8b_tp2", "fp8", (56, 112), (600, 1000))
    add("fp8 many-wave short", "llama70b_tp2", "fp8", (52, 92), (400, 700))
    add("bf16 many-wave short", "llama8b", "bf16", (44, 100), (310, 700))
    add("bf16 many-wave short", "llama70b_tp4", "bf16", (84,), (800, 1400))
    add("70B bf16 one-wave short", "llama70b", "bf16", (56, 88, 136), (16, 26, 46))
    add("70B bf16 one-wave short", "llama70b_tp2", "bf16", (64, 104), (40, 80))
    add("70B bf16 one-wave short", "llama70b_tp4", "bf16", (76, 124), (70, 150))
    add("9-slot past 8 per SM", "llama70b", "bf16", (44, 92), (136, 146))
    add("8B bf16 S = 2 crowded", "llama8b", "bf16", (176, 204, 240), (42, 52, 60))
    add("8B bf16 S = 2 crowded", "llama8b_tp2", "bf16", (196, 236), (100, 120))
    add("control: one-wave middle", "llama8b", "bf16", (1550, 2950), (7, 22))
    add("control: one-wave middle", "llama70b", "fp8", (2000,), (12,))
    add("control: many-wave middle", "llama8b", "fp8", (1200,), (260,))
    add("control: many-wave middle", "llama8b", "bf16", (1000,), (300,))
    add("control: one-wave short", "llama8b", "bf16", (38, 118), (3, 6))
    add("control: one-wave short", "llama8b", "fp8", (94,), (3, 10))
    add("control: long", "llama8b", "bf16", (69000,), (3,))
    return out


#: the seventh CUDA-core decode blind grid (--grid fi_dec_blind7: fi_decode only, bf16 + a few fp8 controls), the test
#: of the CUDA-graph grids' measured placement (simulator/kernels/flashinfer.py FI_GRAPH_PLACEMENT: the (594, 2) grid of
#: Llama-3.1-70B at TP 4, 9 per SM, and the (264, 4) grid of Llama-3.1-8B at TP 2, 8 per SM, as the CTA probe's
#: launches placed them) at batches and contexts the probe did not run; the crowded S = 2 Llama-3.1-8B calls at TP 1
#: (the (132, 8) grid: the candidate leaves them as they are, a check of what still misses); controls from met regimes.
#: Every (heads, K/V, batch, context, page) in none of the committed CSVs (checked when priced)
FIDB7_MAX_TOKENS = 1_300_000


def fi_dec_blind7_shapes(part: str) -> list[dict]:
    """The shapes of the seventh CUDA-core decode blind grid (FIDB7_*), each with its regime label (`group`)."""
    out = []
    if part != "fi_decode":
        return out

    def add(group, model, kv, ts, bs, page=16):
        out.extend(decode_rows("fi_decode", model, kv, ts, bs, FIDB7_MAX_TOKENS, page=page, group=group))

    add("70B TP4 graph grid (594, 2)", "llama70b_tp4", "bf16", (68, 108), (90, 130, 170, 230))
    add("70B TP4 graph grid (594, 2)", "llama70b_tp4", "bf16", (92,), (120, 190))
    add("8B TP2 graph grid (264, 4)", "llama8b_tp2", "bf16", (184, 228), (20, 45, 70))
    add("8B TP2 graph grid (264, 4)", "llama8b_tp2", "bf16", (100,), (40, 90, 150))
    add("8B bf16 S = 2 crowded", "llama8b", "bf16", (168, 220), (24, 36, 48, 64))
    add("control", "llama8b", "bf16", (90,), (4,))
    add("control", "llama8b", "bf16", (1450,), (20,))
    add("control", "llama8b", "bf16", (60,), (500,))
    add("control", "llama8b", "fp8", (1100,), (200,))
    add("control", "llama70b", "bf16", (70,), (30,))
    add("control", "llama70b_tp2", "bf16", (80,), (60,))
    # on the candidate's grids, from regimes main meets (one-wave short at a low busiest count, middle context)
    add("control on the graph grids", "llama70b_tp4", "bf16", (100,), (40,))
    add("control on the graph grids", "llama8b_tp2", "bf16", (2000,), (8,))
#: the eighth CUDA-core decode blind grid (--grid fi_dec_blind8: fi_decode only), the test of the decode chain's loaded
#: latency (hwmodels/roofline.py CHAIN_LOADED: the dependent-load iteration grows with the launch's device-wide HBM
#: traffic) and the merge path's per-item reloads (simulator/kernels/flashinfer.py FI_MERGE_ITEM_RELOADS): crowded S = 2
#: calls (every request split in two chunks, nearly every SM at the kernel's residency) of Llama-3.1-8B bf16 and fp8 K/V
#: at TP 1 and 2, 150-260 tokens, B 20-126, and controls from met regimes. Every (heads, K/V, batch, context, page) in
#: none of the committed CSVs (checked when priced)
FIDB8_MAX_TOKENS = 1_300_000


def fi_dec_blind8_shapes(part: str) -> list[dict]:
    """The shapes of the eighth CUDA-core decode blind grid (FIDB8_*), each with its regime label (`group`)."""
    out = []
    if part != "fi_decode":
        return out

    def add(group, model, kv, ts, bs, page=16):
        out.extend(decode_rows("fi_decode", model, kv, ts, bs, FIDB8_MAX_TOKENS, page=page, group=group))

    add("8B bf16 S = 2 crowded", "llama8b", "bf16", (156, 196, 252), (30, 44, 58))
    add("8B TP2 bf16 S = 2 crowded", "llama8b_tp2", "bf16", (164, 212, 256), (56, 86, 126))
    add("8B fp8 S = 2 crowded", "llama8b", "fp8", (160, 232), (26, 36, 46))
    add("8B TP2 fp8 S = 2 crowded", "llama8b_tp2", "fp8", (180, 244), (54, 76, 96))
    add("control", "llama8b", "bf16", (100,), (40,))
    add("control", "llama8b", "bf16", (2900,), (14,))
    add("control", "llama8b", "fp8", (900,), (24,))
    add("control", "llama8b_tp2", "bf16", (80,), (400,))
    add("control", "llama70b", "bf16", (150,), (20,))
    add("control", "llama70b_tp2", "bf16", (200,), (50,))
    add("control", "llama8b", "bf16", (330,), (30,))
    add("control", "llama8b", "fp8", (40,), (500,))
    return out


#: the ninth CUDA-core decode blind grid (--grid fi_dec_blind9: fi_decode only, run on an H200), the test of the merge
#: path's per-item SM issue (simulator/kernels/flashinfer.py FI_MERGE_PATH_SM_DECODE): calls whose requests split in two
#: chunks at 140-250 tokens with most SMs at the kernel's residency (bf16 and fp8 K/V, five head layouts), calls split
#: in 3-22 chunks at 420-3,100 tokens, and one-state (copy path) controls at <= 128 tokens. Every (heads, K/V, batch,
#: context, page) in none of the committed CSVs (checked when priced: lab/kernels/predict_fi_dec_blind9.py)
FIDB9_MAX_TOKENS = 1_300_000


def fi_dec_blind9_shapes(part: str) -> list[dict]:
    """The shapes of the ninth CUDA-core decode blind grid (FIDB9_*), each with its intended regime (`group`)."""
    out = []
    if part != "fi_decode":
        return out

    def add(group, model, kv, ts, bs, page=16):
        out.extend(decode_rows("fi_decode", model, kv, ts, bs, FIDB9_MAX_TOKENS, page=page, group=group))

    add("S = 2, bf16", "llama8b", "bf16", (140, 180, 236), (36, 52))
    add("S = 2, bf16", "llama70b_tp2", "bf16", (150, 228), (40, 64))
    add("S = 2, bf16", "llama70b", "bf16", (170,), (18, 26))
    add("S = 2, bf16", "llama8b_tp2", "bf16", (200,), (70, 110))
    add("S = 2, bf16", "llama70b_tp4", "bf16", (140, 240), (90, 150))
    add("S = 2, fp8", "llama8b", "fp8", (150, 210), (32, 50))
    add("S = 2, fp8", "llama8b_tp2", "fp8", (170, 250), (64, 88))
    add("S = 2, fp8", "llama70b_tp2", "fp8", (190,), (48,))
    add("S >= 3, middle", "llama8b", "bf16", (420, 700, 1300, 2600), (8, 16))
    add("S >= 3, middle", "llama70b", "bf16", (600, 1800), (6, 12))
    add("S >= 3, middle", "llama70b_tp2", "fp8", (900, 3100), (10, 20))
    add("S >= 3, middle", "llama8b", "fp8", (520, 1500), (12,))
    add("S = 1, copy path", "llama8b", "bf16", (60, 110), (40, 120))
    add("S = 1, copy path", "llama70b", "bf16", (90,), (24, 60))
    add("S = 1, copy path", "llama8b_tp2", "bf16", (100,), (300,))
    add("S = 1, copy path", "llama8b", "fp8", (50,), (200,))
    return out


#: the tensor-core (FA2 prefill) blind grid (--grid fi_tc_blind: fi_tc and fi_verify only), the test of the bf16 K/V
#: tile chain (simulator/kernels/flashinfer.py FI_TC_BF16_TILE_WAITS: every tile after a CTA's first waits on its K and
#: V loads and issues its MMAs on the CTA's chain): tensor-core decode (q 1) and verification (q 2-8) at contexts
#: 26-248 and batches 3-500, bf16 and fp8 K/V, Llama-3.1-8B heads and Llama-3.1-70B's at TP 2 / 4, one KV tile to four
#: per CTA, one wave to many (most at 66-140 tokens: 128-row Q tiles over 2-3 64-key tiles, where the rule moves the
#: price most), + controls from met regimes (small batch, middle contexts); every (heads, K/V, batch, q,
#: context, page) in none of the earlier grids' rows (checked against the committed CSVs when priced). Each shape's
#: regime label is its `group`. B x q <= 800 (B 480 x q 3 overflowed FlashInfer's 1 GiB workspace on the third check
#: grid)
FITB_MAX_ROWS_Q = 800


def fi_tc_blind_shapes(part: str) -> list[dict]:
    """The shapes of the tensor-core blind grid (FITB_*), each with its regime label (`group`)."""
    out = []

    def add(group, model, kv, ts, bs, q=1):
        hq, hkv = HEADS[model]
        for t in ts:
            for b in bs:
                if b * q <= FITB_MAX_ROWS_Q:
                    out.append(dict(family=part, model=model, heads=hq, kv_heads=hkv, head_dim=128, dtype=kv,
                                    batch=b, q_rows=q, context=t, page_size=16, group=group))

    if part == "fi_verify":   # first: the regimes the rule moves most (128-row Q tiles, 2-4 KV tiles, little body)
        add("verify bf16 short many-wave", "llama8b", "bf16", (68, 90, 130), (80, 240), q=2)
        add("verify bf16 short many-wave", "llama8b", "bf16", (76, 140), (56, 180), q=3)
        add("verify bf16 short many-wave", "llama8b", "bf16", (70, 152), (36, 100, 180), q=4)
        add("verify bf16 short many-wave", "llama70b_tp2", "bf16", (66, 248), (48, 150), q=3)
        add("verify bf16 short many-wave", "llama70b_tp4", "bf16", (74,), (320,), q=2)
        add("verify bf16 short many-wave", "llama8b", "bf16", (84,), (40, 96), q=8)
        add("verify bf16 short one-wave", "llama8b", "bf16", (100, 210), (10, 20), q=4)
        add("verify fp8 short", "llama8b", "fp8", (44, 152), (36, 120), q=4)
        add("control: verify small batch", "llama8b", "bf16", (44,), (3,), q=4)
        add("control: verify small batch", "llama8b", "fp8", (104,), (3,), q=4)
        add("control: verify middle", "llama8b", "bf16", (2500,), (10,), q=4)
        add("control: verify middle", "llama8b", "fp8", (5000,), (4,), q=4)
    elif part == "fi_tc":
        add("tc bf16 short many-tile", "llama8b", "bf16", (152, 248), (56, 176, 416))
        add("tc bf16 short one-tile", "llama8b", "bf16", (44,), (56, 416))
        add("tc bf16 short many-tile", "llama70b_tp2", "bf16", (130, 232), (80, 300))
        add("tc bf16 short one-tile", "llama70b_tp2", "bf16", (60,), (300,))
        add("tc bf16 short many-tile", "llama70b_tp4", "bf16", (184,), (200, 500))
        add("tc fp8 short", "llama8b", "fp8", (26, 184), (88, 260))
        add("tc fp8 short", "llama70b_tp2", "fp8", (84,), (176,))
        add("control: tc small batch", "llama8b", "bf16", (60,), (3,))
        add("control: tc middle", "llama8b", "bf16", (3000,), (12,))
        add("control: tc middle", "llama8b", "fp8", (1800,), (20,))
    return out


#: the tensor-core (FA2 prefill) tile-rate SCAN (--grid fi_tc_scan12: part fi_verify; FIT rows of the bf16 tile chain's
#: two rates, simulator/kernels/flashinfer.py FI_TC_TILE_RATE_SM and FI_TC_WARP_MMA_FLOPS): ONE variable at a time,
#: one KV head and one request per CTA (heads 4 / 1, FlashInfer's plan with split-KV disabled, so a CTA walks the whole
#: context): (1) one CTA (batch 1), q rows 1, 2, 4, 8, 16, 32 (CTA_TILE_Q 16, 16, 16, 64, 64, 128), context 16 then
#: whole KV tiles up to 1024 (128-key tiles at 16 / 64 rows, 64-key at 128); (2) the same at 2 .. 132 CTAs (batch 2 ..
#: 132, every CTA on its own SM) at three contexts, q 4 and 32 (does the per-SM rate hold when many SMs load at once)
FTS12_Q = (1, 2, 4, 8, 16, 32)
FTS12_CTAS = (2, 8, 33, 66, 132)


def fi_tc_scan12_shapes(part: str) -> list[dict]:
    """The shapes of the tile-rate scan (FTS12_*); `nosplit` = the plan's disable_split_kv, `group` = the scan row."""
    out = []
    if part != "fi_verify":
        return out
    hq, hkv = HEADS["g4kv1"]

    def add(group, b, q, t, kv="bf16"):
        out.append(dict(family="fi_verify", model="g4kv1", heads=hq, kv_heads=hkv, head_dim=128, dtype=kv, batch=b,
                        q_rows=q, context=t, page_size=16, nosplit=True, group=group))

    for q in FTS12_Q:
        tile = 64 if q * 4 > 64 else 128
        ts = [16] + [tile * k for k in range(1, 1024 // tile + 1)]
        if tile == 64:      # 64-key tiles: every tile to 512, then every other one
            ts = [t for t in ts if t <= 512 or t % 128 == 0]
        for t in ts:
            add(f"scan one CTA q{q}", 1, q, t)
    for q in (4, 32):
        for b in FTS12_CTAS:
            for t in (128, 1024):
                add(f"scan {b} CTAs q{q}", b, q, t)
    return out


#: the twelfth tensor-core BLIND grid (--grid fi_tc_blind12: fi_verify then fi_tc), the test of the bf16 tile chain's
#: scanned rates: verification (q 2-8) at short contexts 32-768 and batches 1-256, bf16 and fp8 K/V, Llama-3.1-8B heads
#: and Llama-3.1-70B's at TP 2 / 4, a few tensor-core decode rows, + 8 controls from met regimes (middle contexts);
#: every (heads, K/V, batch, q, context, page) in none of the committed CSVs' rows (checked when priced); B x q <= 800
def fi_tc_blind12_shapes(part: str) -> list[dict]:
    """The shapes of the twelfth tensor-core blind grid, each with its regime label (`group`)."""
    out = []

    def add(group, model, kv, ts, bs, q=1):
        hq, hkv = HEADS[model]
        for t in ts:
            for b in bs:
                if b * q <= FITB_MAX_ROWS_Q:
                    out.append(dict(family=part, model=model, heads=hq, kv_heads=hkv, head_dim=128, dtype=kv,
                                    batch=b, q_rows=q, context=t, page_size=16, group=group))

    if part == "fi_verify":
        add("verify bf16 short small batch", "llama8b", "bf16", (48, 230, 610), (1, 5), q=3)
        add("verify bf16 short small batch", "llama8b", "bf16", (130, 450), (2,), q=6)
        add("verify bf16 short mid batch", "llama8b", "bf16", (90, 300, 700), (24, 64), q=2)
        add("verify bf16 short mid batch", "llama8b", "bf16", (60, 400), (40,), q=5)
        add("verify bf16 short mid batch", "llama8b", "bf16", (170,), (16, 48), q=8)
        add("verify bf16 short mid batch", "llama70b_tp2", "bf16", (110, 380), (8, 96), q=3)
        add("verify bf16 short large batch", "llama8b", "bf16", (34, 160, 510), (128, 200), q=4)
        add("verify bf16 short large batch", "llama8b", "bf16", (260,), (256,), q=2)
        add("verify fp8 short", "llama8b", "fp8", (56, 270, 740), (3, 60), q=4)
        add("verify fp8 short", "llama8b", "fp8", (180,), (150,), q=2)
        add("control: verify middle", "llama8b", "bf16", (3500,), (6,), q=4)
        add("control: verify middle", "llama8b", "fp8", (2200,), (8,), q=4)
        add("control: verify middle", "llama8b", "bf16", (1500,), (30,), q=2)
        add("control: verify middle", "llama70b_tp4", "bf16", (1200,), (20,), q=3)
    elif part == "fi_tc":
        add("tc bf16 short", "llama8b", "bf16", (42, 350, 690), (2, 220))
        add("control: tc middle", "llama8b", "bf16", (2600,), (16,))
        add("control: tc middle", "llama8b", "fp8", (1400,), (40,))
        add("control: tc middle", "llama70b_tp2", "bf16", (1800,), (24,))
        add("control: tc middle", "llama8b", "bf16", (4200,), (4,))
    return out


#: the thirteenth tensor-core BLIND grid (--grid fi_tc_blind13: fi_verify only), the test of the bf16 tile chain's shared
#: MMA issue (simulator/kernels/flashinfer.py FI_TC_MMA_SHARED): verification (q 2-5) at short contexts 44-460 and
#: batches 44-400 (several CTAs per SM, 1-7 KV tiles each), middle contexts 700-1600 at batches 10-44, bf16 and fp8 K/V,
#: Llama-3.1-8B / Qwen2.5-7B heads and Llama-3.1-70B's at TP 2 / 4, + 7 controls from met regimes (small batch, middle
#: large batch); every (heads, K/V, batch, q, context, page) in none of the committed CSVs' rows (checked when priced);
#: B x q <= 800
def fi_tc_blind13_shapes(part: str) -> list[dict]:
    """The shapes of the thirteenth tensor-core blind grid, each with its regime label (`group`)."""
    out = []
    if part != "fi_verify":
        return out

    def add(group, model, kv, ts, bs, q):
        hq, hkv = HEADS[model]
        for t in ts:
            for b in bs:
                if b * q <= FITB_MAX_ROWS_Q:
                    out.append(dict(family=part, model=model, heads=hq, kv_heads=hkv, head_dim=128, dtype=kv,
                                    batch=b, q_rows=q, context=t, page_size=16, group=group))

    add("verify bf16 short mid batch", "llama8b", "bf16", (44, 150, 330), (52, 112), q=3)
    add("verify bf16 short mid batch", "llama8b", "bf16", (96, 236), (88, 150), q=5)
    add("verify bf16 short mid batch", "qwen7b", "bf16", (64, 200), (72, 136), q=4)
    add("verify bf16 short mid batch", "llama70b_tp2", "bf16", (120, 420), (170,), q=2)
    add("verify bf16 short large batch", "llama8b", "bf16", (50, 180, 380), (300, 384), q=2)
    add("verify bf16 short large batch", "llama8b", "bf16", (100, 240), (264,), q=3)
    add("verify bf16 short large batch", "llama70b_tp4", "bf16", (90, 310), (400,), q=2)
    add("verify bf16 middle mid batch", "llama8b", "bf16", (700, 1600), (12, 44), q=4)
    add("verify bf16 middle mid batch", "llama70b_tp2", "bf16", (900,), (28,), q=3)
    add("verify fp8 short mid / large batch", "llama8b", "fp8", (52, 210, 460), (44, 140), q=4)
    add("verify fp8 short mid / large batch", "llama8b", "fp8", (88, 250), (320,), q=2)
    add("verify fp8 middle mid batch", "llama8b", "fp8", (1300,), (10, 36), q=3)
    add("control: verify short small batch", "llama8b", "bf16", (150,), (3,), q=4)
    add("control: verify short small batch", "llama8b", "fp8", (90,), (6,), q=3)
    add("control: verify middle small batch", "llama8b", "bf16", (2400,), (4,), q=4)
    add("control: verify middle small batch", "qwen7b", "bf16", (1100,), (2,), q=2)
    add("control: verify middle large batch", "llama8b", "bf16", (700,), (300,), q=2)
    add("control: verify middle large batch", "llama8b", "fp8", (600,), (260,), q=3)
    add("control: verify middle large batch", "llama70b_tp2", "bf16", (520,), (270,), q=2)
    return out


#: the fourteenth tensor-core BLIND grid (--grid fi_tc_blind14: fi_verify only), the test of the last partial wave's own
#: occupancy (simulator/kernels/flashinfer.py FI_TC_LAST_WAVE_SHARE) and of the merge's item reloads
#: (FI_TC_MERGE_AS_DECODE): verification (q 2-4) at middle contexts 560-2000 and batch 18-104 where the plan leaves
#: 265-396 working CTAs (a second wave of <= 132 CTAs, 2 per SM) or splits the KV in 2 (Qwen2.5-7B / Llama-3.1-70B
#: TP 2 at B 18-30), fp8 one- to two-tile shapes (36-120 tokens) at batch 38-180, + 6 controls from met regimes; every
#: (heads, K/V, batch, q, context, page) in none of the committed CSVs' rows (checked when priced); B x q <= 800
def fi_tc_blind14_shapes(part: str) -> list[dict]:
    """The shapes of the fourteenth tensor-core blind grid, each with its regime label (`group`)."""
    out = []
    if part != "fi_verify":
        return out

    def add(group, model, kv, ts, bs, q):
        hq, hkv = HEADS[model]
        for t in ts:
            for b in bs:
                if b * q <= FITB_MAX_ROWS_Q:
                    out.append(dict(family=part, model=model, heads=hq, kv_heads=hkv, head_dim=128, dtype=kv,
                                    batch=b, q_rows=q, context=t, page_size=16, group=group))

    add("verify bf16 middle, partial last wave", "llama8b", "bf16", (560, 1100, 1900), (36, 46), q=3)
    add("verify bf16 middle, partial last wave", "llama8b", "bf16", (850, 1400), (40,), q=4)
    add("verify bf16 middle, partial last wave", "qwen7b", "bf16", (620, 1250), (76, 90), q=4)
    add("verify bf16 middle, partial last wave", "llama70b_tp2", "bf16", (760, 1500), (80,), q=2)
    add("verify bf16 middle, partial last wave", "llama70b_tp2", "bf16", (980,), (74,), q=3)
    add("verify bf16 middle, KV split in 2", "qwen7b", "bf16", (800, 1700), (22, 30), q=3)
    add("verify bf16 middle, KV split in 2", "llama70b_tp2", "bf16", (650, 1350), (18, 26), q=4)
    add("verify bf16 middle, one wave", "llama8b", "bf16", (1000,), (20, 28), q=2)
    add("verify fp8 short, one or two tiles", "llama8b", "fp8", (36, 100), (38, 46, 104), q=4)
    add("verify fp8 short, one or two tiles", "llama8b", "fp8", (60,), (180,), q=2)
    add("verify fp8 short, one or two tiles", "qwen7b", "fp8", (120,), (80,), q=4)
    add("control: verify bf16 short large batch", "llama8b", "bf16", (140,), (330,), q=2)
    add("control: verify bf16 middle small batch", "llama8b", "bf16", (1850,), (7,), q=4)
    add("control: verify bf16 middle large batch", "llama8b", "bf16", (620,), (350,), q=2)
    add("control: verify fp8 middle large batch", "llama8b", "fp8", (900,), (280,), q=2)
    add("control: verify fp8 middle mid batch", "llama8b", "fp8", (1150,), (44,), q=3)
    add("control: verify bf16 short mid batch", "llama8b", "bf16", (170,), (120,), q=3)
    return out


#: the H200's own verification grid (--grid fi_tc_h200: fi_verify only, run on an H200): FlashInfer's FA2 prefill kernel
#: at 2-4 query rows, every (K/V dtype, context, batch) regime of the H200 transfer grid's verification rows with 4-7
#: shapes each (that grid held 1 row in six of its eight regimes), Llama-3.1-8B, Qwen2.5-7B and Llama-3.1-70B at TP 2.
#: Every (heads, K/V, batch, q, context, page) in none of the committed CSVs (checked when priced:
#: lab/kernels/predict_fi_tc_h200.py)
def fi_tc_h200_shapes(part: str) -> list[dict]:
    """The shapes of the H200 verification grid, each with its intended regime (`group`)."""
    out = []
    if part != "fi_verify":
        return out

    def add(group, model, kv, ts, bs, q):
        hq, hkv = HEADS[model]
        for t in ts:
            for b in bs:
                if b * q <= FITB_MAX_ROWS_Q:
                    out.append(dict(family=part, model=model, heads=hq, kv_heads=hkv, head_dim=128, dtype=kv,
                                    batch=b, q_rows=q, context=t, page_size=16, group=group))

    add("fp8 middle mid (64)", "llama8b", "fp8", (1250, 2100), (40, 52), q=3)
    add("fp8 middle mid (64)", "qwen7b", "fp8", (1400,), (36, 60), q=4)
    add("fp8 middle mid (64)", "llama70b_tp2", "fp8", (1700,), (48,), q=2)
    add("fp8 middle large (>=256)", "llama8b", "fp8", (700, 1000), (260, 300), q=2)
    add("fp8 short (<=256) mid (64)", "llama8b", "fp8", (90, 200), (50, 70), q=4)
    add("fp8 short (<=256) mid (64)", "qwen7b", "fp8", (150,), (96,), q=3)
    add("bf16 middle mid (64)", "llama8b", "bf16", (700, 1600), (34, 50), q=3)
    add("bf16 middle mid (64)", "qwen7b", "bf16", (900,), (70,), q=4)
    add("bf16 middle mid (64)", "llama70b_tp2", "bf16", (1200,), (60,), q=2)
    add("bf16 middle small (<=16)", "llama8b", "bf16", (2400, 4000), (6, 12), q=4)
    add("bf16 middle large (>=256)", "llama8b", "bf16", (560, 800), (300, 380), q=2)
    add("bf16 short (<=256) large (>=256)", "llama8b", "bf16", (120, 200), (300, 390), q=2)
    add("bf16 short (<=256) mid (64)", "llama8b", "bf16", (150, 230), (64, 100), q=3)
    return out


def grids(grid: str) -> dict:
    """The (batch, context) lists of one grid: 'campaign' (the 2026-11-26 campaign) or 'fresh'."""
    if grid == "campaign":
        return {"bt": bt_grid(), "bt_half": bt_grid(MAX_TOKENS // 2), "bt_1m": bt_grid(1 << 20), "sub": SUB_GRID,
                "verify": VERIFY_GRID}
    if grid == "fresh":
        return {"bt": bt_grid(FRESH_MAX_TOKENS, FRESH_T, FRESH_B),
                "bt_half": bt_grid(FRESH_MAX_TOKENS // 2, FRESH_T, FRESH_B),
                "bt_1m": bt_grid(1 << 20, FRESH_T, FRESH_B),
                "sub": [(b, t) for t in FRESH_SUB_T for b in FRESH_SUB_B],
                "verify": [(b, t) for t in FRESH_VERIFY_T for b in FRESH_VERIFY_B]}
    raise ValueError(f"unknown grid {grid!r} (campaign, fresh)")


def shapes(part: str, grid: str = "campaign") -> list[dict]:
    """Every shape a part measures (the first-look script prices the FlashInfer decode ones before any measurement;
    the fresh-grid predictions are priced from the same list)."""
    out = []
    if grid == "fresh_fi":
        return fresh_fi_shapes(part)
    if grid == "fresh_fi2":
        return fresh_fi2_shapes(part)
    if grid == "fresh_fi3":
        return fresh_fi3_shapes(part)
    if grid == "fi_dec_blind":
        return fi_dec_blind_shapes(part)
    if grid == "fi_dec_blind2":
        return fi_dec_blind2_shapes(part)
    if grid == "fi_dec_blind3":
        return fi_dec_blind3_shapes(part)
    if grid == "fi_dec_blind4":
        return fi_dec_blind4_shapes(part)
    if grid == "fi_dec_blind5":
        return fi_dec_blind5_shapes(part)
    if grid == "fi_dec_blind6":
        return fi_dec_blind6_shapes(part)
    if grid == "fi_dec_blind7":
        return fi_dec_blind7_shapes(part)
    if grid == "fi_dec_blind8":
        return fi_dec_blind8_shapes(part)
    if grid == "fi_dec_blind9":
        return fi_dec_blind9_shapes(part)
    if grid == "fi_tc_blind":
        return fi_tc_blind_shapes(part)
    if grid == "fi_tc_scan12":
        return fi_tc_scan12_shapes(part)
    if grid == "fi_tc_blind12":
        return fi_tc_blind12_shapes(part)
    if grid == "fi_tc_blind13":
        return fi_tc_blind13_shapes(part)
    if grid == "fi_tc_h200":
        return fi_tc_h200_shapes(part)
    if grid == "fi_tc_blind14":
        return fi_tc_blind14_shapes(part)
    if grid == "mla_merge":
        if part != "fi_mla":
            return []
        return [dict(family="fi_mla", model=f"mla{h}", heads=h, kv_heads=1, head_dim=576, head_dim_v=512, dtype="bf16",
                     batch=b, q_rows=1, context=t, page_size=1) for h, b, t in MLA_MERGE]
    if grid == "mla_h200":   # FlashMLA only (MLA_H200_*)
        if part != "flashmla":
            return []
        return [dict(family=part, model=f"mla{h}", heads=h, kv_heads=1, head_dim=576, head_dim_v=512, dtype="bf16",
                     batch=b, q_rows=1, context=t, page_size=64) for h in MLA_H200_HEADS for b, t in MLA_H200_BT]
    if grid == "mla_blind7":   # FlashMLA only (MLA_BLIND7_*)
        if part != "flashmla":
            return []
        return [dict(family=part, model=f"mla{h}", heads=h, kv_heads=1, head_dim=576, head_dim_v=512, dtype="bf16",
                     batch=b, q_rows=1, context=t, page_size=64) for h in MLA_BLIND7_HEADS for b, t in MLA_BLIND7_BT]
    if grid in ("mla_fit2", "mla_blind2", "mla_blind3", "mla_blind4", "mla_blind5", "mla_blind6"):
        if part not in ("fi_mla", "flashmla"):
            return []
        bts, heads = {"mla_fit2": (MLA_FIT2_BT, (16, 128)), "mla_blind2": (MLA_BLIND2_BT, (16, 32, 128)),
                      "mla_blind3": (MLA_BLIND3_BT, MLA_BLIND3_HEADS),
                      "mla_blind4": (MLA_BLIND4_BT, MLA_BLIND4_HEADS),
                      "mla_blind5": (MLA_BLIND5_BT, MLA_BLIND5_HEADS),
                      "mla_blind6": (MLA_BLIND6_BT, MLA_BLIND6_HEADS)}[grid]
        return [dict(family=part, model=f"mla{h}", heads=h, kv_heads=1, head_dim=576, head_dim_v=512, dtype="bf16",
                     batch=b, q_rows=1, context=t, page_size=64 if part == "flashmla" else 1)
                for h in heads for b, t in bts]
    if grid == "fresh_mla":
        if part in ("fi_mla", "flashmla"):
            return [dict(family=part, model=f"mla{h}", heads=h, kv_heads=1, head_dim=576, head_dim_v=512, dtype="bf16",
                         batch=b, q_rows=1, context=t, page_size=64 if part == "flashmla" else 1)
                    for h in (16, 128) for b, t in FRESH_MLA_BT]
        if part == "sgl_triton":
            rows = []
            for model, kv, bts in (("llama8b", "bf16", FRESH_MLA_SGL_BT + FRESH_MLA_SGL_SMALL),
                                   ("llama8b", "fp8", FRESH_MLA_SGL_BT + FRESH_MLA_SGL_SMALL),
                                   ("llama70b", "bf16", FRESH_MLA_SGL_BT)):
                hq, hkv = HEADS[model]
                rows += [dict(family="sgl_triton", model=model, heads=hq, kv_heads=hkv, head_dim=128, dtype=kv, batch=b,
                              q_rows=1, context=t, page_size=1) for b, t in bts]
            return rows
        return []
    gr = grids(grid)
    if grid == "fresh" and part in ("fi_tc_big", "sdpa_short"):
        return []

    def add(family, model, kv, page, bts, q=1, **kw):
        hq, hkv = HEADS[model]
        for b, t in bts:
            out.append(dict(family=family, model=model, heads=hq, kv_heads=hkv, head_dim=128, dtype=kv, batch=b,
                            q_rows=q, context=t, page_size=page, **kw))

    if part == "fi_decode":      # CUDA-core decode: group sizes 4 and 8 (7 is not compiled)
        add("fi_decode", "llama8b", "bf16", 16, gr["bt"])
        add("fi_decode", "llama70b", "bf16", 16, gr["bt"])
        add("fi_decode", "llama8b", "fp8", 16, gr["bt"])
        add("fi_decode", "llama8b", "bf16", 1, gr["sub"])
        add("fi_decode", "llama8b", "bf16", 64, gr["sub"])
    elif part == "fi_tc":        # tensor-core decode (the FA2 prefill kernel at one row per sequence)
        add("fi_tc", "llama8b", "bf16", 16, gr["bt"])
        add("fi_tc", "llama70b", "bf16", 16, gr["bt"])
        add("fi_tc", "qwen7b", "bf16", 16, gr["bt"])
        add("fi_tc", "llama8b", "fp8", 16, gr["bt"])
        add("fi_tc", "qwen7b", "fp8", 16, gr["bt"])
        add("fi_tc", "llama8b", "bf16", 1, gr["sub"])
        add("fi_tc", "llama8b", "bf16", 64, gr["sub"])
    elif part == "fi_tc_big":   # the rows of fi_tc whose CUDA-graph plan needs more than 256 MiB of workspace
        add("fi_tc", "llama8b", "bf16", 16, [(1024, t) for t in (16, 64, 256, 1024, 4096)])
        add("fi_tc", "llama70b", "bf16", 16, [(1024, t) for t in (16, 64, 256, 1024, 4096)])
        add("fi_tc", "qwen7b", "bf16", 16, [(1024, t) for t in (16, 64, 256, 1024, 4096)])
        add("fi_tc", "llama8b", "fp8", 16, [(1024, t) for t in (16, 64, 256, 1024, 4096)])
        add("fi_tc", "qwen7b", "fp8", 16, [(1024, t) for t in (16, 64, 256, 1024, 4096)])
    elif part == "fi_verify":    # verification rows through BatchPrefillWithPagedKVCacheWrapper(backend fa2), causal
        add("fi_verify", "llama8b", "bf16", 16, gr["verify"], q=4)
        add("fi_verify", "llama8b", "bf16", 16, gr["verify"], q=8)
        add("fi_verify", "llama70b", "bf16", 16, gr["verify"], q=4)
        add("fi_verify", "llama8b", "fp8", 16, gr["verify"], q=4)
    elif part == "sgl_triton":   # SGLang's Triton grouped decode kernel (token-level page table)
        # at most 1 M tokens: the kernel indexes its token pool with 32-bit offsets (kv_loc x 1024 elements)
        add("sgl_triton", "llama8b", "bf16", 1, gr["bt_1m"])
        add("sgl_triton", "llama70b", "bf16", 1, gr["bt_1m"])
        add("sgl_triton", "llama8b", "fp8", 1, gr["bt_1m"])
    elif part == "sdpa_short":   # PyTorch SDPA (cuDNN, FlashAttention-2) at the per-sequence corner, contiguous K/V
        for kern in ("cudnn", "flash"):
            for b, t in [(1, 16)] + [(b, t) for t in (16, 64, 256) for b in (64, 256, 1024)]:
                out.append(dict(family="sdpa", kernel=kern, model="llama8b", heads=32, kv_heads=8, head_dim=128,
                                dtype="bf16", batch=b, q_rows=1, context=t, page_size=0))
    elif part in ("fi_mla", "flashmla"):   # MLA 512 + 64, DeepSeek-V3 heads at TP8 (16) and TP1 (128)
        for h in (16, 128):
            for b, t in gr["bt_half"]:
                out.append(dict(family=part, model=f"mla{h}", heads=h, kv_heads=1, head_dim=576, head_dim_v=512,
                                dtype="bf16", batch=b, q_rows=1, context=t, page_size=64 if part == "flashmla" else 1))
    return out


# ------------------------------------------------------------------------------------------------------------------
# timing
# ------------------------------------------------------------------------------------------------------------------
_ENV = []


def time_graph(torch, fn, target_us=250.0, reps=5, max_calls=128):
    """(median, p20, p80, calls) of one call's device time: the shared harness's CUDA-graph timer (lab/harness.py
    time_graph: calls captured back to back, a spin before every timed replay) with this campaign's defaults."""
    sys.path.insert(0, os.path.dirname(HERE))   # lab/, for the shared harness
    sys.path.insert(0, HERE)                    # or a copy beside this script (run from outside the repository)
    import harness

    if not _ENV:
        _ENV.append(harness.Env(f"cuda:{torch.cuda.current_device()}"))
    r = harness.time_graph(_ENV[0], fn, target_us=target_us, reps=reps, max_calls=max_calls)
    return r["median"], r["p20"], r["p80"], r["calls"]


#: --fresh-q (MLA parts): a Q (and FlashInfer MLA output) per K/V copy, rotated with it, so no replay finds its Q in L2
FRESH_Q = False
#: --only-bt B:T,... keeps only those (batch, context) shapes of the grid (e.g. the short batch-64 shapes for --fresh-q)
ONLY_BT: set = set()


#: --cold (the engine's state: K/V cold, the step's metadata warm): 0 = the campaign's rotation (at most 16 copies, so a
#: short call's copies can stay in the 50 MB L2: those rows time a WARM K/V); else the bytes the rotated K/V copies
#: span at least, with NO cap on the copy count, and the graph captures a whole multiple of the copies (cold_calls), so
#: every call reads a copy last touched >= COLD_BYTES of K/V ago (from HBM) while the page table / indptr / plan /
#: Q / output, one for every copy, stay in L2 as they do across an engine step's layers
COLD_BYTES = 0


def copies_for(nbytes: float) -> int:
    if COLD_BYTES:
        return int(max(2, math.ceil(COLD_BYTES / max(nbytes, 1.0))))
    return int(max(1, min(16, math.ceil((128 << 20) / max(nbytes, 1.0)))))


def cold_calls(R: int, at_least: int = 64) -> int:
    """Calls per captured graph under --cold: the smallest multiple of the R copies that is >= at_least."""
    return int(R * max(1, math.ceil(at_least / R)))


# ------------------------------------------------------------------------------------------------------------------
# kernels
# ------------------------------------------------------------------------------------------------------------------
def import_flashinfer():
    """flashinfer, with import-time stand-ins for the CuTe-DSL / cuda-python packages its __init__ imports for
    Blackwell kernels never called here (they are not carried: ~100 MB)."""
    try:
        import flashinfer
        return flashinfer, ""
    except ImportError as e:
        missing = str(e)
    import importlib.abc
    import importlib.machinery
    import types
    from unittest import mock

    class _Stub(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        roots = ("cutlass", "cuda.bindings", "cuda.bench", "cuda_tile")

        def find_spec(self, name, path=None, target=None):
            if any(name == r or name.startswith(r + ".") for r in self.roots):
                return importlib.machinery.ModuleSpec(name, self, is_package=True)
            return None

        def create_module(self, spec):
            m = mock.MagicMock(name=spec.name)
            m.__path__, m.__spec__, m.__name__ = [], spec, spec.name
            return m

        def exec_module(self, module):
            pass

    sys.meta_path.insert(0, _Stub())
    for k in [k for k in sys.modules if k.startswith("flashinfer")]:
        del sys.modules[k]
    _ = types
    import flashinfer
    return flashinfer, f"stubbed imports after: {missing}"


def kv_dtype(torch, name):
    return torch.float8_e4m3fn if name == "fp8" else torch.bfloat16


def _pages(torch, B, T, page, copies_total_pages, device):
    P = (T + page - 1) // page
    idx = torch.randperm(copies_total_pages, device=device, dtype=torch.int64)[: B * P].to(torch.int32)
    indptr = torch.arange(0, B + 1, device=device, dtype=torch.int32) * P
    last = torch.full((B,), T - (P - 1) * page, device=device, dtype=torch.int32)
    return P, idx, indptr, last


def run_fi_paged(torch, fi, s, ws, tc: bool, verify: bool):
    """FlashInfer decode (CUDA-core / tensor-core) or verification over a paged cache, CUDA-graph plan (engines')."""
    dev = "cuda"
    B, T, hq, hkv, d, page, q = s["batch"], s["context"], s["heads"], s["kv_heads"], s["head_dim"], s["page_size"], \
        s["q_rows"]
    kvd = kv_dtype(torch, s["dtype"])
    P = (T + page - 1) // page
    pool = B * P
    kv_bytes = pool * page * hkv * d * 2 * (1 if s["dtype"] == "fp8" else 2)
    R = copies_for(kv_bytes)
    caches = []
    for _ in range(R):
        kc = torch.empty((pool, page, hkv, d), device=dev, dtype=torch.bfloat16).normal_(0, 0.5).to(kvd) \
            if kv_bytes <= (1 << 30) else torch.empty((pool, page, hkv, d), device=dev, dtype=kvd)
        vc = torch.empty_like(kc)
        caches.append((kc, vc))
    P_, idx, indptr, last = _pages(torch, B, T, page, pool, dev)
    qt = torch.randn((B * q, hq, d), device=dev, dtype=torch.bfloat16)
    out = torch.empty_like(qt)
    if verify and s.get("nosplit"):    # the tile-rate scan: no CUDA-graph padding, split-KV off (one CTA per request)
        qo = torch.arange(0, B + 1, device=dev, dtype=torch.int32) * q
        w = fi.BatchPrefillWithPagedKVCacheWrapper(ws, "NHD", backend="fa2")
        w.plan(qo, indptr, idx, last, hq, hkv, d, page, causal=True, q_data_type=torch.bfloat16, kv_data_type=kvd,
               disable_split_kv=True)
    elif verify:
        qo = torch.arange(0, B + 1, device=dev, dtype=torch.int32) * q
        w = fi.BatchPrefillWithPagedKVCacheWrapper(ws, "NHD", use_cuda_graph=True, qo_indptr_buf=qo,
                                                   paged_kv_indptr_buf=indptr, paged_kv_indices_buf=idx,
                                                   paged_kv_last_page_len_buf=last, backend="fa2")
        w.plan(qo, indptr, idx, last, hq, hkv, d, page, causal=True, q_data_type=torch.bfloat16, kv_data_type=kvd)
    else:
        w = fi.BatchDecodeWithPagedKVCacheWrapper(ws, "NHD", use_cuda_graph=True, use_tensor_cores=tc,
                                                  paged_kv_indptr_buffer=indptr, paged_kv_indices_buffer=idx,
                                                  paged_kv_last_page_len_buffer=last)
        w.plan(indptr, idx, last, hq, hkv, d, page, q_data_type=torch.bfloat16, kv_data_type=kvd)

    def fn(i):
        w.run(qt, caches[i % R], out=out)

    plan = getattr(w, "_plan_info", None)
    return fn, R, str(list(plan)[:16]) if plan is not None else ""


def run_fi_mla(torch, fi, s, ws):
    dev = "cuda"
    B, T, H, page = s["batch"], s["context"], s["heads"], s["page_size"]
    P = (T + page - 1) // page
    pool = B * P
    R = copies_for(pool * page * 576 * 2)
    caches = [(torch.randn((pool, page, 512), device=dev, dtype=torch.bfloat16),
               torch.randn((pool, page, 64), device=dev, dtype=torch.bfloat16)) for _ in range(R)]
    _, idx, indptr, _ = _pages(torch, B, T, page, pool, dev)
    qo = torch.arange(0, B + 1, device=dev, dtype=torch.int32)
    kv_len = torch.full((B,), T, device=dev, dtype=torch.int32)
    # FRESH_Q: one Q (and output) per K/V copy, so every replay reads a Q the L2 does not hold (a Q the previous
    # kernel did not just write); else one Q for every replay (stays in L2 between graph replays when it fits)
    nq = R if FRESH_Q else 1
    qns = [torch.randn((B, H, 512), device=dev, dtype=torch.bfloat16) for _ in range(nq)]
    qps = [torch.randn((B, H, 64), device=dev, dtype=torch.bfloat16) for _ in range(nq)]
    outs = [torch.empty_like(qns[0]) for _ in range(nq)]
    w = fi.mla.BatchMLAPagedAttentionWrapper(ws, use_cuda_graph=True, qo_indptr=qo, kv_indptr=indptr, kv_indices=idx,
                                             kv_len_arr=kv_len, backend="auto")
    w.plan(qo, indptr, idx, kv_len, H, 512, 64, page, False, 1.0 / math.sqrt(576), torch.bfloat16, torch.bfloat16)

    def fn(i):
        j = i % nq
        w.run(qns[j], qps[j], caches[i % R][0], caches[i % R][1], out=outs[j])

    return fn, R, getattr(w, "_backend", "")


def run_flashmla(torch, fm, s):
    dev = "cuda"
    B, T, H, page = s["batch"], s["context"], s["heads"], s["page_size"]
    P = (T + page - 1) // page
    pool = B * P
    R = copies_for(pool * page * 576 * 2)
    caches = [torch.randn((pool, page, 1, 576), device=dev, dtype=torch.bfloat16) for _ in range(R)]
    bt = torch.randperm(pool, device=dev, dtype=torch.int64)[: B * P].to(torch.int32).view(B, P)
    lens = torch.full((B,), T, device=dev, dtype=torch.int32)
    qts = [torch.randn((B, 1, H, 576), device=dev, dtype=torch.bfloat16) for _ in range(R if FRESH_Q else 1)]
    meta, _ = fm.get_mla_metadata()   # filled by the first (eager) call, reused by every later one, as per layer

    def fn(i):
        fm.flash_mla_with_kvcache(qts[i % len(qts)], caches[i % R], bt, lens, 512, meta, causal=True, use_legacy=True)

    return fn, R, ""


def run_sdpa(torch, s):
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    B, T, hq, hkv, d = s["batch"], s["context"], s["heads"], s["kv_heads"], s["head_dim"]
    R = copies_for(B * T * hkv * d * 4)
    ks = [torch.randn((B, hkv, T, d), device="cuda", dtype=torch.bfloat16) for _ in range(R)]
    vs = [torch.randn_like(k) for k in ks]
    q = torch.randn((B, hq, 1, d), device="cuda", dtype=torch.bfloat16)
    be = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}[s["kernel"]]

    def fn(i):
        with sdpa_kernel([be]):
            F.scaled_dot_product_attention(q, ks[i % R], vs[i % R], enable_gqa=True)

    return fn, R, ""


def sgl_num_kv_splits(lens, heads, kv_heads, max_splits, cores):
    """SGLang's get_num_kv_splits_triton (triton_backend.py), on the host (same arithmetic)."""
    mx, mn = max(lens), min(lens)
    if mx * 8 < mn * 10:
        mn = mx
    s1 = min(-(-mx // mn), max_splits)
    c1 = -(-mx // s1)
    ext = int(cores * max(math.log2(mx / 64.0), 1.0))
    g = heads // kv_heads
    grid = len(lens) * (heads if g == 1 else -(-heads // min(16, g)))
    s2 = min(-(-ext // grid), max_splits)
    c2 = -(-mx // s2)
    return [max(-(-t // c1), -(-t // c2)) for t in lens]


def run_sgl_triton(torch, mod, s, cores):
    dev = "cuda"
    B, T, hq, hkv, d = s["batch"], s["context"], s["heads"], s["kv_heads"], s["head_dim"]
    kvd = kv_dtype(torch, s["dtype"])
    ntok = B * T
    kv_bytes = ntok * hkv * d * 2 * (1 if s["dtype"] == "fp8" else 2)
    R = copies_for(kv_bytes)
    caches = []
    for _ in range(R):
        kb = torch.randn((ntok, hkv, d), device=dev, dtype=torch.bfloat16).to(kvd) if kv_bytes <= (1 << 30) else \
            torch.empty((ntok, hkv, d), device=dev, dtype=kvd)
        caches.append((kb, torch.empty_like(kb)))
    idx = torch.randperm(ntok, device=dev, dtype=torch.int64).to(torch.int32)
    indptr = torch.arange(0, B + 1, device=dev, dtype=torch.int32) * T
    max_splits = 8
    splits = torch.tensor(sgl_num_kv_splits([T] * B, hq, hkv, max_splits, cores), device=dev, dtype=torch.int32)
    qt = torch.randn((B, hq, d), device=dev, dtype=torch.bfloat16)
    o = torch.empty_like(qt)
    logits = torch.empty((B, hq, max_splits, d), device=dev, dtype=torch.float32)
    lse = torch.empty((B, hq, max_splits), device=dev, dtype=torch.float32)

    def fn(i):
        k, v = caches[i % R]
        mod.decode_attention_fwd(qt, k, v, o, indptr, idx, logits, lse, splits, max_splits, 1.0 / math.sqrt(d))

    return fn, R, f"num_kv_splits={int(splits[0])}"


# ------------------------------------------------------------------------------------------------------------------
def profile_one(torch, fn, label):
    """Kernel records (name, grid, block, registers, shared memory, duration) of one call, from torch.profiler."""
    from torch.profiler import ProfilerActivity, profile

    fn(0)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn(1)
        torch.cuda.synchronize()
    import json
    import tempfile
    path = tempfile.mktemp(suffix=".json")
    prof.export_chrome_trace(path)
    with open(path) as f:
        doc = json.load(f)
    os.remove(path)
    rows = []
    for e in doc.get("traceEvents", []):
        if e.get("cat") != "kernel":
            continue
        a = e.get("args") or {}
        g = list(a.get("grid", [""] * 3)) + [""] * 3
        bl = list(a.get("block", [""] * 3)) + [""] * 3
        rows.append({"label": label, "kernel_name": str(e.get("name", ""))[:200], "dur_us": e.get("dur", ""),
                     "grid_x": g[0], "grid_y": g[1], "grid_z": g[2], "block_x": bl[0], "block_y": bl[1],
                     "block_z": bl[2], "regs": a.get("registers per thread", ""), "smem": a.get("shared memory", "")})
    return rows


COLS = ["script_version", "date", "device", "torch", "cuda", "flashinfer", "triton", "family", "kernel", "model", "dtype",
        "heads",
        "kv_heads", "head_dim", "head_dim_v", "batch", "q_rows", "context", "page_size", "median_us", "p20_us",
        "p80_us", "calls", "kv_copies", "plan", "note"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--parts", default="build,fi_decode,fi_tc,sgl_triton,fi_verify,fi_mla,flashmla")
    ap.add_argument("--budget-s", type=float, default=520.0)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--tag", default="")
    ap.add_argument("--fresh-q", action="store_true", help="MLA parts: rotate Q (and output) copies with the K/V copies")
    ap.add_argument("--only-bt", default="", help="keep only these batch:context shapes, comma-separated")
    ap.add_argument("--grid", default="campaign", choices=("campaign", "fresh", "mla_merge", "fresh_mla", "fresh_fi",
                                                               "fresh_fi2", "fresh_fi3", "mla_fit2", "mla_blind2",
                                                               "mla_blind3", "mla_blind4", "mla_blind5", "mla_blind6", "mla_blind7", "mla_h200",
                                                               "fi_dec_blind",
                                                               "fi_dec_blind2", "fi_dec_blind3", "fi_dec_blind4",
                                                               "fi_dec_blind5", "fi_dec_blind6", "fi_dec_blind7",
                                                               "fi_dec_blind8", "fi_dec_blind9", "fi_tc_blind",
                                                               "fi_tc_scan12",
                                                               "fi_tc_blind12", "fi_tc_blind13", "fi_tc_blind14",
                                                               "fi_tc_h200"))
    args = ap.parse_args()
    global FRESH_Q
    FRESH_Q = bool(args.fresh_q)
    ONLY_BT.update(tuple(int(v) for v in x.split(":")) for x in args.only_bt.split(",") if x)
    t0 = time.time()
    os.makedirs(args.out, exist_ok=True)
    import torch
    import triton

    parts = args.parts.split(",")
    dev = torch.cuda.get_device_properties(0)
    cores = dev.multi_processor_count
    meta = {"script_version": f"{SCRIPT_VERSION}{'' if args.grid == 'campaign' else '-' + args.grid}", "date": datetime.date.today().isoformat(), "device": dev.name,
            "torch": torch.__version__, "cuda": torch.version.cuda, "triton": triton.__version__}
    log = open(os.path.join(args.out, f"log{args.tag}.txt"), "a")

    def say(*a):
        msg = " ".join(str(x) for x in a)
        print(msg, flush=True)
        log.write(msg + "\n")
        log.flush()

    fi = None
    try:
        fi, note = import_flashinfer()
        meta["flashinfer"] = fi.__version__
        say("flashinfer", fi.__version__, note)
    except Exception as e:   # noqa: BLE001
        meta["flashinfer"] = ""
        say("flashinfer import failed:", repr(e)[:400])
    say("env", meta, "SMs", cores, "L2", getattr(dev, "L2_cache_size", ""))
    if fi is not None and "build" in parts:
        t = time.time()
        try:
            from flashinfer.jit import attention as A
            from flashinfer.jit.core import build_jit_specs
            bf, f8, i32 = torch.bfloat16, torch.float8_e4m3fn, torch.int32
            specs = [A.gen_batch_decode_module(bf, bf, bf, i32, 128, 128, 0, False, False),
                     A.gen_batch_decode_module(bf, f8, bf, i32, 128, 128, 0, False, False),
                     A.gen_batch_prefill_module("fa2", bf, bf, bf, i32, 128, 128, 0, False, False, False),
                     A.gen_batch_prefill_module("fa2", bf, f8, bf, i32, 128, 128, 0, False, False, False),
                     A.gen_batch_mla_module("fa3", bf, bf, bf, i32, 512, 64, False)]
            if not {"fi_decode", "fi_tc", "fi_verify"} & set(parts):   # no FlashInfer decode part: the MLA module only
                specs = specs[-1:]
            elif not {"fi_tc", "fi_verify", "fi_mla"} & set(parts):   # CUDA-core decode only: its two modules
                specs = specs[:2]
            elif "fi_mla" not in parts:        # no MLA module
                specs = specs[:-1]
            build_jit_specs(specs, verbose=False)
            say(f"built {len(specs)} JIT modules in {time.time() - t:.0f} s")
        except Exception as e:   # noqa: BLE001
            say("JIT build failed:", repr(e)[:2000])
            traceback.print_exc()
    rows_path = os.path.join(args.out, f"production_attention{args.tag}.csv")
    grids_path = os.path.join(args.out, f"production_attention_grids{args.tag}.csv")
    new = not os.path.exists(rows_path)
    fcsv = open(rows_path, "a", newline="")
    w = csv.DictWriter(fcsv, fieldnames=COLS)
    if new:
        w.writeheader()
    gcsv = open(grids_path, "a", newline="")
    gw = csv.DictWriter(gcsv, fieldnames=["label", "kernel_name", "dur_us", "grid_x", "grid_y", "grid_z", "block_x",
                                          "block_y", "block_z", "regs", "smem"])
    if new:
        gw.writeheader()
    ws = torch.zeros(1 << 30, dtype=torch.uint8, device="cuda")
    sgl = fm = None
    if "sgl_triton" in parts:
        try:
            sys.path.insert(0, os.path.join(HERE, "ext"))
            import sgl_decode_attention as sgl
        except Exception as e:   # noqa: BLE001
            say("sglang kernel import failed:", repr(e)[:400])
    if "flashmla" in parts:
        try:
            import flash_mla as fm
        except Exception as e:   # noqa: BLE001
            say("flash_mla import failed:", repr(e)[:600])
    summary = []
    for part in [p for p in parts if p != "build"]:
        shp = shapes(part, args.grid)
        if ONLY_BT:
            shp = [x for x in shp if (x["batch"], x["context"]) in ONLY_BT]
        if args.smoke:
            shp = shp[:2]
        done = fail = 0
        seen_cfg = set()
        tp = time.time()
        for s in shp:
            if time.time() - t0 > args.budget_s:
                say(f"budget reached in {part} after {done} rows")
                break
            try:
                if part in ("fi_decode", "fi_tc", "fi_tc_big", "fi_verify"):
                    if fi is None:
                        raise RuntimeError("no flashinfer")
                    fn, R, plan = run_fi_paged(torch, fi, s, ws, part != "fi_decode", part == "fi_verify")
                elif part == "fi_mla":
                    if fi is None:
                        raise RuntimeError("no flashinfer")
                    fn, R, plan = run_fi_mla(torch, fi, s, ws)
                elif part == "flashmla":
                    if fm is None:
                        raise RuntimeError("no flash_mla")
                    fn, R, plan = run_flashmla(torch, fm, s)
                elif part == "sdpa_short":
                    fn, R, plan = run_sdpa(torch, s)
                elif part == "sgl_triton":
                    if sgl is None:
                        raise RuntimeError("no sglang kernel")
                    fn, R, plan = run_sgl_triton(torch, sgl, s, cores)
                else:
                    raise RuntimeError(f"unknown part {part}")
                t_a = time.time()
                med, p20, p80, calls = time_graph(torch, fn)
                if os.environ.get("SHAPE_TIMES"):   # wall-clock span of each shape's timing (to line up a clock log)
                    with open(os.environ["SHAPE_TIMES"], "a") as tf:
                        tf.write(f"{t_a:.3f},{time.time():.3f},{part},{s['model']},{s['dtype']},{s['batch']},"
                                 f"{s['context']},{s['page_size']}\n")
                cfg = (part, s.get("kernel", ""), s["model"], s["dtype"], s["page_size"], s["q_rows"])
                if cfg not in seen_cfg or (s["batch"], s["context"]) in ((256, 16), (1, 65536)):
                    seen_cfg.add(cfg)
                    lab = (f"{part}:{s.get('kernel', '')}{s['model']}:{s['dtype']}:p{s['page_size']}:q{s['q_rows']}:"
                           f"B{s['batch']}:T{s['context']}")
                    for r in profile_one(torch, fn, lab):
                        gw.writerow(r)
                    gcsv.flush()
                w.writerow({**meta, **{k: s.get(k, "") for k in COLS if k in s}, "median_us": f"{med:.3f}",
                            "p20_us": f"{p20:.3f}", "p80_us": f"{p80:.3f}", "calls": calls, "kv_copies": R,
                            "plan": plan, "note": ("fresh_q" if FRESH_Q else "") + ("nosplit" if s.get("nosplit") else "")})
                fcsv.flush()
                done += 1
            except Exception as e:   # noqa: BLE001
                fail += 1
                w.writerow({**meta, **{k: s.get(k, "") for k in COLS if k in s}, "note": f"failed: {repr(e)[:300]}"})
                fcsv.flush()
                if fail <= 3:
                    say(f"{part} {s} failed: {repr(e)[:600]}")
                if fail >= 6 and done == 0:
                    say(f"giving up {part}")
                    break
            finally:
                torch.cuda.empty_cache()
        summary.append((part, done, fail, time.time() - tp))
    say("part        rows  failed  seconds")
    for p, d, f, sec in summary:
        say(f"{p:11s} {d:5d} {f:7d} {sec:8.0f}")
    say(f"total {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
