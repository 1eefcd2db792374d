"""Measure TensorRT-LLM's XQA kernels through FlashInfer's port (flashinfer-python 0.6.4, flashinfer/xqa.py and
flashinfer/data/csrc/xqa) on the lent GPU: decode rows (one query row) and verification rows (q = 2, 4: the port's
SPEC_DEC build with a causal draft mask), bf16 K/V (mha.cu) and fp8 K/V (mha_sm90.cu, the GMMA kernel), paged K/V
(NHD, random page order). One CSV row per shape, CUDA-graph timing as measure_production_attention.py (the shared
harness's time_graph: calls captured back to back, a spin before every timed replay; R copies of the cache so that the
copies together are >= 128 MiB and every call reads its K/V from HBM), plus the launch profile of one call per
configuration (torch.profiler: grid, block, registers, shared memory).

The module of each configuration (K/V dtype, page size, query heads per KV head, query rows) is the port's JIT build
(flashinfer/jit/xqa.py gen_xqa_module's sources and flags, sm_90a); a prebuilt copy (so/xqa_<kv>_g<G>_p<page>_q<q>.so
beside the script, built with the same nvcc flags off the device) is loaded with tvm_ffi when present, else the port's
JIT builds it. The call is the port's `xqa_wrapper` with the arguments flashinfer.xqa.xqa passes (run_sm90_fp8_mha =
fp8 K/V on compute capability 9, enable_pdl on, no sinks, no sliding window, scales 1).

    python3 measure_xqa_attention.py --out DIR [--build] [--budget-s 170] [--smoke] [--grid blind|alone|s6|x4|x5|x6|x7|x8|x9|x10|x11|x12|x13|x14|x15|x15d|x16|x17|x18|lock]

--build JIT-builds every configuration's module first in one parallel ninja run (flashinfer.jit.core.build_jit_specs;
MAX_JOBS sets the parallelism). flashinfer is imported with measure_production_attention.import_flashinfer (stand-ins
for the Blackwell-only packages its __init__ imports), from a copy beside this script when run outside the repository.

The shapes (`shapes()`) were fixed, and priced by lab/kernels/predict_xqa_attention.py, before any was measured.
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

SCRIPT_VERSION = 2
HERE = os.path.dirname(os.path.abspath(__file__))
#: models' (query heads, KV heads): Llama-3.1-8B, Llama-3.1-70B at tensor-parallel 8, Qwen2.5-7B
HEADS = {"llama8b": (32, 8), "llama70b_tp8": (8, 1), "qwen7b": (28, 4)}
T_GRID = (16, 64, 256, 1024, 4096, 16384, 65536, 131072)
B_GRID = (1, 4, 16, 64, 256, 512)
SUB_T, SUB_B = (16, 256, 4096, 65536), (1, 16, 256)
VERIFY_T, VERIFY_B = (64, 1024, 16384, 65536), (1, 16, 64, 256)
#: at most this many bytes of K + V per call (one copy), and at most MAX_TOKENS cached tokens
MAX_KV_BYTES, MAX_TOKENS = 8 << 30, 1 << 24
D = 128


def _fits(model, kv, b, t):
    hq, hkv = HEADS[model]
    kvb = 1 if kv == "fp8" else 2
    return b * t <= MAX_TOKENS and b * t * hkv * D * 2 * kvb <= MAX_KV_BYTES


def shapes() -> list[dict]:
    """Every shape, in measuring order: the fit set's configuration first (Llama-3.1-8B, page 16, decode)."""
    out = []

    def add(model, kv, page, ts, bs, q=1):
        hq, hkv = HEADS[model]
        for t in ts:
            for b in bs:
                if _fits(model, kv, b, t):
                    out.append({"family": "xqa", "model": model, "dtype": kv, "heads": hq, "kv_heads": hkv,
                                "head_dim": D, "batch": b, "q_rows": q, "context": t, "page_size": page})

    for kv in ("bf16", "fp8"):
        add("llama8b", kv, 16, T_GRID, B_GRID)
    for q in (4, 2):
        for kv in ("bf16", "fp8"):
            add("llama8b", kv, 16, VERIFY_T, VERIFY_B, q=q)
    for kv in ("bf16", "fp8"):
        add("llama70b_tp8", kv, 16, tuple(t for t in T_GRID if t != 64), B_GRID)
    for kv in ("bf16", "fp8"):
        add("qwen7b", kv, 16, SUB_T, SUB_B)
    for kv in ("bf16", "fp8"):
        add("llama8b", kv, 64, SUB_T, SUB_B)
    return out


#: the blind grid: shapes in none of the campaign's rows (contexts, batches and one head layout and page size it never timed;
#: q 3 is left out only to keep the JIT build short), fixed and priced (lab/kernels/predict_xqa_attention.py
#: --grid blind) before it was measured
BLIND_HEADS = {**HEADS, "llama70b_64_8": (64, 8)}


def blind_shapes() -> list[dict]:
    """The blind grid, in measuring order (module docstring of BLIND_HEADS)."""
    out = []

    def add(model, kv, page, ts, bs, q=1):
        hq, hkv = BLIND_HEADS[model]
        for t in ts:
            for b in bs:
                if _fits(model, kv, b, t) if model in HEADS else (b * t <= MAX_TOKENS
                                                                   and b * t * hkv * D * 2 * (1 if kv == "fp8" else 2)
                                                                   <= MAX_KV_BYTES):
                    out.append({"family": "xqa", "model": model, "dtype": kv, "heads": hq, "kv_heads": hkv,
                                "head_dim": D, "batch": b, "q_rows": q, "context": t, "page_size": page})

    for kv in ("bf16", "fp8"):
        add("llama8b", kv, 16, (24, 240, 700, 3000, 50000), (2, 12, 48, 400, 900))
    for kv in ("bf16", "fp8"):
        add("llama70b_64_8", kv, 32, (100, 1500, 20000), (6, 160))
    for kv in ("bf16", "fp8"):
        add("llama70b_tp8", kv, 64, (200, 2000, 100000), (4, 48, 900))
    for kv in ("bf16", "fp8"):
        add("qwen7b", kv, 16, (100, 1500, 30000), (8, 200))
    for q in (2, 4):
        for kv in ("bf16", "fp8"):
            add("llama8b", kv, 16, (200, 2500, 40000), (3, 48, 300), q=q)
    return out


#: the CTA_ALONE grid: bf16 K/V only (mha.cu, the kind whose one resident CTA per SM the wave rule of
#: hwmodels.roofline CTA_ALONE prices), short contexts (100-250: one 256-key tile per CTA; 300-900: a few tiles) in many
#: waves (batch 200-1000) with controls in one wave (batch 2-16), at contexts and batches in none of the campaign's or the
#: blind grid's rows; three head layouts (32/8, 28/4, 64/8), pages 16 / 64, q 1 and 2. Fixed and priced with the model at
#: the base commit and the candidate model (lab/kernels/predict_xqa_attention.py --grid alone) before it was measured
def alone_shapes() -> list[dict]:
    """The CTA_ALONE grid, in measuring order (comment above)."""
    out = []

    def add(model, page, ts, bs, q=1):
        hq, hkv = BLIND_HEADS[model]
        for t in ts:
            for b in bs:
                out.append({"family": "xqa", "model": model, "dtype": "bf16", "heads": hq, "kv_heads": hkv,
                            "head_dim": D, "batch": b, "q_rows": q, "context": t, "page_size": page})

    add("llama8b", 16, (100, 150, 250, 300, 500, 900), (4, 16, 200, 500, 1000))
    add("qwen7b", 16, (130, 600), (8, 300, 800))
    add("llama70b_64_8", 64, (180, 400), (6, 250, 600))
    add("llama8b", 64, (120, 800), (2, 350, 1000))
    add("llama8b", 16, (110, 450), (3, 220, 700), q=2)
    return out


#: the third blind grid: shapes in none of the campaign's, the blind grid's or the CTA_ALONE grid's rows, page 16 only (one
#: module per K/V dtype, head layout and query rows), over the regimes the model's rules of verification rows (q 2 / 4:
#: mha.cu's 32-row CTA and its exposed last tile), lone fp8 calls and merged splits address, with q 1 controls in every
#: regime; fixed and priced (lab/kernels/predict_xqa_attention.py --grid s6) with the model at the base commit and the
#: candidate before it was measured
S6_HEADS = {**BLIND_HEADS, "llama70b_64_8": (64, 8)}


def s6_shapes() -> list[dict]:
    """The third blind grid, in measuring order (comment above)."""
    out = []

    def add(model, kv, ts, bs, q=1):
        hq, hkv = S6_HEADS[model]
        for t in ts:
            for b in bs:
                if b * t <= MAX_TOKENS and b * t * hkv * D * 2 * (1 if kv == "fp8" else 2) <= MAX_KV_BYTES:
                    out.append({"family": "xqa", "model": model, "dtype": kv, "heads": hq, "kv_heads": hkv,
                                "head_dim": D, "batch": b, "q_rows": q, "context": t, "page_size": 16})

    # verification rows first (the regime the model's change is for), then the q 1 controls
    add("llama8b", "bf16", (40, 170, 350, 1300, 24000), (1, 24, 160), q=2)
    add("llama8b", "bf16", (40, 170), (384,), q=2)
    add("llama8b", "bf16", (40, 170, 1300), (5, 96, 384), q=4)
    add("llama8b", "fp8", (40, 170, 1300, 24000), (1, 24, 160), q=2)
    add("llama8b", "fp8", (40, 1300), (5, 96), q=4)
    for kv in ("bf16", "fp8"):
        add("llama8b", kv, (40, 170, 1300, 6000), (2, 10, 96, 768))
        add("llama8b", kv, (24000,), (5, 96))
        add("llama8b", kv, (70000,), (2,))
    add("llama70b_64_8", "bf16", (60, 350, 6000), (3, 200))
    add("llama70b_64_8", "bf16", (60, 1300), (3, 120), q=2)
    add("llama70b_64_8", "fp8", (60, 350, 6000), (3, 200))
    for kv in ("bf16", "fp8"):
        add("llama70b_tp8", kv, (40, 1300), (5, 768))
        add("llama70b_tp8", kv, (70000,), (10,))
        add("qwen7b", kv, (170, 6000), (2, 160))
    return out


#: the fourth blind grid: shapes in none of the campaign's, the blind, CTA_ALONE or third grids' rows, page 16 only, over
#: the regimes the third grid missed (one-tile bf16 CTAs in a few waves at contexts 110-350, q 1 and q 2, sweeping the
#: 64-key slices a short tile fills; lone fp8 calls; one-tile fp8 CTAs in many waves; short bf16 decode at mid batch;
#: short fp8 verification at mid batch) with controls from regimes that pass; fixed and priced
#: (lab/kernels/predict_xqa_attention.py --grid x4) with main's model and the candidate before it was measured
def x4_shapes() -> list[dict]:
    """The fourth blind grid, in measuring order (comment above)."""
    out = []

    def add(model, kv, ts, bs, q=1):
        hq, hkv = S6_HEADS[model]
        for t in ts:
            for b in bs:
                if b * t <= MAX_TOKENS and b * t * hkv * D * 2 * (1 if kv == "fp8" else 2) <= MAX_KV_BYTES:
                    out.append({"family": "xqa", "model": model, "dtype": kv, "heads": hq, "kv_heads": hkv,
                                "head_dim": D, "batch": b, "q_rows": q, "context": t, "page_size": 16})

    # (1) bf16 one-tile CTAs in a few waves: 1-4 slices of the last tile, q 1 and q 2
    add("llama8b", "bf16", (90, 140, 200, 230), (6, 20, 40, 70, 130))
    add("llama8b", "bf16", (280, 330), (20, 70))
    add("llama8b", "bf16", (140, 230, 330), (12, 50), q=2)
    add("qwen7b", "bf16", (140, 220), (30, 90))
    add("llama70b_64_8", "bf16", (120, 220), (12, 60))
    add("llama70b_tp8", "bf16", (150, 230), (100, 300))
    # (2) fp8 lone calls and one-tile fp8 CTAs in many waves
    add("llama8b", "fp8", (30, 90, 200), (1, 3, 14))
    add("llama8b", "fp8", (30, 60), (600, 1000))
    add("qwen7b", "fp8", (50,), (1, 700))
    add("llama70b_tp8", "fp8", (120,), (2, 1200))
    # (3) fp8 short verification at mid batch
    add("llama8b", "fp8", (90, 200), (30, 110), q=2)
    # controls: middle and long contexts, large batches
    for kv in ("bf16", "fp8"):
        add("llama8b", kv, (2200,), (7, 60))
        add("llama8b", kv, (9000,), (3,))
    add("llama8b", "bf16", (45,), (300, 900))
    return out


#: the fifth blind grid: shapes in none of the earlier grids' rows, page 16, q 1, four modules (bf16 / fp8 K/V at 4 and 8
#: query heads per KV head): (1) bf16 one-tile CTAs of 3-4 64-key slices (contexts 150-250) in 2-8 waves, the regime
#: the fourth grid missed, with controls in one wave, in >= 19 waves, of 1-2 slices in a few waves and in the middle;
#: (2) fp8 (GMMA) lone calls at contexts 30-170 and one-tile fp8 CTAs in many waves, with multi-tile controls; fixed and
#: priced (lab/kernels/predict_xqa_attention.py --grid x5) with main's model and the candidate before it was measured
def x5_shapes() -> list[dict]:
    """The fifth blind grid, in measuring order (comment above)."""
    out = []

    def add(model, kv, ts, bs, q=1):
        hq, hkv = S6_HEADS[model]
        for t in ts:
            for b in bs:
                if b * t <= MAX_TOKENS and b * t * hkv * D * 2 * (1 if kv == "fp8" else 2) <= MAX_KV_BYTES:
                    out.append({"family": "xqa", "model": model, "dtype": kv, "heads": hq, "kv_heads": hkv,
                                "head_dim": D, "batch": b, "q_rows": q, "context": t, "page_size": 16})

    # (1) bf16 one-tile CTAs of 3-4 slices in 2-8 waves (8 CTAs per sequence: waves = ceil(8 B / 132))
    add("llama8b", "bf16", (160, 185, 215, 245), (18, 35, 60, 90, 120))
    add("llama70b_tp8", "bf16", (175,), (200, 500))
    add("llama70b_64_8", "bf16", (205,), (45, 100))
    # controls: one wave, >= 19 waves, 1-2 slices in a few waves, the middle
    add("llama8b", "bf16", (195,), (10,))
    add("llama8b", "bf16", (170, 225), (330, 650))
    add("llama8b", "bf16", (75, 110), (50, 100))
    add("llama8b", "bf16", (3000,), (24,))
    # (2) fp8 lone calls (one CTA per SM or fewer) at contexts 30-170
    add("llama8b", "fp8", (35, 110, 165), (2, 9))
    add("llama70b_tp8", "fp8", (45, 150), (4, 40))
    # fp8 one-tile CTAs (context <= 64) in many waves (3 CTAs per SM: waves = ceil(CTAs / 396))
    add("llama8b", "fp8", (28, 50), (450, 800, 1500))
    add("llama70b_tp8", "fp8", (60,), (2500, 6000))
    # controls: multi-tile fp8 CTAs in a few and many waves, the middle
    add("llama8b", "fp8", (180,), (120, 300))
    add("llama8b", "fp8", (3000,), (20,))
    return out


#: the sixth blind grid: shapes in none of the earlier grids' rows, page 16, q 1: (1) fp8 (GMMA) lone calls split into
#: 2-4 sub-sequences (the merge's path: its scratch stores' release before the semaphore), unsplit lone calls of 2-4
#: tiles, fp8 multi-tile CTAs in a few and many waves; (2) bf16 one-tile CTAs in 2-6 waves, a bf16 split lone call;
#: controls in the middle. Fixed and priced (lab/kernels/predict_xqa_attention.py --grid x6) with main's model and the
#: candidate before it was measured
def x6_shapes() -> list[dict]:
    """The sixth blind grid, in measuring order (comment above)."""
    out = []

    def add(model, kv, ts, bs, q=1):
        hq, hkv = S6_HEADS[model]
        for t in ts:
            for b in bs:
                out.append({"family": "xqa", "model": model, "dtype": kv, "heads": hq, "kv_heads": hkv,
                            "head_dim": D, "batch": b, "q_rows": q, "context": t, "page_size": 16})

    # (1) fp8 lone split calls (2-4 sub-sequences of one tile or two), unsplit lone calls of 2-4 tiles
    add("llama8b", "fp8", (100, 140, 230), (1, 3))
    add("qwen7b", "fp8", (130,), (2, 5))
    add("llama70b_tp8", "fp8", (180,), (6, 30))
    add("llama8b", "fp8", (130, 240), (11,))
    # fp8 multi-tile CTAs in a few and many waves, the middle
    add("llama8b", "fp8", (210, 400), (150, 260))
    add("llama8b", "fp8", (2500,), (30,))
    # (2) bf16 one-tile CTAs in 2-6 waves, a split lone call, the middle
    add("llama8b", "bf16", (175,), (25, 55, 75))
    add("qwen7b", "bf16", (200,), (40, 110))
    add("llama8b", "bf16", (600,), (2,))
    add("llama8b", "bf16", (2000,), (16,))
    return out


#: the seventh blind grid: shapes in none of the earlier grids' rows, page 16: (1) bf16 verification (mha.cu's SPEC_DEC
#: build, 32 padded rows per CTA) at q 2 / 3 / 4 / 8 over 4, 7 and 8 query heads per KV head, short contexts (one-tile
#: CTAs of 1-4 slices, lone and in 1-25 waves) and the middle at small and mid batch; (2) fp8 verification (the GMMA
#: kernel's SPEC_Q_SEQ_LEN build, 8 / 16 / 32 columns) short and middle; (3) fp8 decode in the middle at batch 2-14;
#: (4) bf16 q 1 controls. Fixed and priced (lab/kernels/predict_xqa_attention.py --grid x7) with main's model and the
#: candidate before it was measured
def x7_shapes() -> list[dict]:
    """The seventh blind grid, in measuring order (comment above): grouped by JIT module."""
    out = []

    def add(model, kv, ts, bs, q=1):
        hq, hkv = S6_HEADS[model]
        for t in ts:
            for b in bs:
                if b * t <= MAX_TOKENS and b * t * hkv * D * 2 * (1 if kv == "fp8" else 2) <= MAX_KV_BYTES:
                    out.append({"family": "xqa", "model": model, "dtype": kv, "heads": hq, "kv_heads": hkv,
                                "head_dim": D, "batch": b, "q_rows": q, "context": t, "page_size": 16})

    # (1) bf16 verification: q 2 at 4 query heads per KV head, short (1, 3, 4 slices; lone, 3 and 11 waves) and middle
    add("llama8b", "bf16", (50, 130, 210), (2, 40, 180), q=2)
    add("llama8b", "bf16", (600,), (2, 12), q=2)
    add("llama8b", "bf16", (2200,), (12, 60), q=2)
    # q 4 and q 8 (16 and 32 valid rows of the 32)
    add("llama8b", "bf16", (90, 170), (6, 120), q=4)
    add("llama8b", "bf16", (4500,), (4, 30), q=4)
    add("llama8b", "bf16", (150,), (4, 70), q=8)
    add("llama8b", "bf16", (240,), (30,), q=8)
    # 7 query heads per KV head at q 3 (21 rows), 8 per KV head at q 4 (32 rows; 8 and 1 KV heads)
    add("qwen7b", "bf16", (100,), (10, 90), q=3)
    add("qwen7b", "bf16", (1500,), (8,), q=3)
    add("llama70b_64_8", "bf16", (120,), (20, 200), q=4)
    add("llama70b_tp8", "bf16", (80,), (64, 400), q=4)
    # (4) bf16 q 1 controls: one-tile CTAs in a few waves, the middle at small and mid batch
    add("llama8b", "bf16", (140,), (90,))
    add("llama8b", "bf16", (900,), (40,))
    add("llama8b", "bf16", (2600,), (6,))
    # (2) fp8 verification: q 2 (8 columns), q 4 (16), q 8 (32) short, lone and in many waves; the middle
    add("llama8b", "fp8", (50, 130, 210), (2, 180), q=2)
    add("llama8b", "fp8", (1800,), (10,), q=2)
    add("llama8b", "fp8", (70, 160), (3, 80, 300), q=4)
    add("llama8b", "fp8", (800, 3000), (3, 20), q=4)
    add("llama8b", "fp8", (110,), (5, 150), q=8)
    # (3) fp8 decode in the middle at batch 2-14
    add("llama8b", "fp8", (750, 1500, 5000), (2, 7, 14))
    return out


#: the lock-step sweep (FIT / DIAGNOSIS rows, not blind): bf16 one-tile CTAs of Llama-3.1-8B (8 KV heads, one CTA per
#: (sequence, KV head): 8 B CTAs, one per SM) at B = floor(132 W / 8), W = 1..8 nearly full waves, at 1, 2, 3 and 4
#: 64-key slices of the tile (contexts 60 / 120 / 180 / 240): the increments t(W) - t(W - 1) measure what each wave
#: adds, against hwmodels.roofline CTA_LOCKSTEP's (H(W) - 1) waves' loads on the serial path
LOCK_T, LOCK_B = (60, 120, 180, 240), tuple(132 * w // 8 for w in range(1, 9))


def lock_shapes() -> list[dict]:
    """The lock-step sweep (comment above)."""
    hq, hkv = HEADS["llama8b"]
    return [{"family": "xqa", "model": "llama8b", "dtype": "bf16", "heads": hq, "kv_heads": hkv, "head_dim": D,
             "batch": b, "q_rows": 1, "context": t, "page_size": 16} for t in LOCK_T for b in LOCK_B]


def module_name(s) -> str:
    return f"xqa_{s['dtype']}_g{s['heads'] // s['kv_heads']}_p{s['page_size']}_q{s['q_rows']}"


_MODS: dict = {}


def load_module(torch, s, say):
    name = module_name(s)
    if name in _MODS:
        return _MODS[name]
    t = time.time()
    path = os.path.join(HERE, "so", name + ".so")
    if os.path.isfile(path):
        import tvm_ffi
        mod, how = tvm_ffi.load_module(path), "prebuilt"
    else:
        from flashinfer.jit.xqa import gen_xqa_module
        kvd = torch.float8_e4m3fn if s["dtype"] == "fp8" else torch.bfloat16
        mod = gen_xqa_module(torch.bfloat16, kvd, s["page_size"], D, s["heads"] // s["kv_heads"], False,
                             torch.bfloat16, s["q_rows"]).build_and_load()
        how = "JIT"
    say(f"module {name}: {how} in {time.time() - t:.1f} s")
    _MODS[name] = mod
    return mod


def build_all(torch, shp, say) -> None:
    """The port's JIT modules of every configuration in `shp`, built in one parallel run."""
    from flashinfer.jit.core import build_jit_specs
    from flashinfer.jit.xqa import gen_xqa_module

    t = time.time()
    specs, seen = [], set()
    for s in shp:
        name = module_name(s)
        if name in seen or os.path.isfile(os.path.join(HERE, "so", name + ".so")):
            continue
        seen.add(name)
        kvd = torch.float8_e4m3fn if s["dtype"] == "fp8" else torch.bfloat16
        specs.append(gen_xqa_module(torch.bfloat16, kvd, s["page_size"], D, s["heads"] // s["kv_heads"], False,
                                    torch.bfloat16, s["q_rows"]))
    build_jit_specs(specs, verbose=False)
    say(f"built {len(specs)} XQA JIT modules in {time.time() - t:.0f} s")


def xqa_copies(kv_bytes: float) -> int:
    """Cache copies the timing rotates over: at most 16 (so that they span >= 128 MiB where one call's cache is >= 8 MiB;
    a shorter call's copies can stay in the 50 MB L2), or, under measure_production_attention.COLD_BYTES (--cold of
    lab/kernels/measure_attention_cold.py), enough copies to span that many bytes, with no cap."""
    try:
        import measure_production_attention as mpa
    except ImportError:
        mpa = None
    if mpa is not None and mpa.COLD_BYTES:
        return mpa.copies_for(kv_bytes)
    return int(max(1, min(16, math.ceil((128 << 20) / max(kv_bytes, 1.0)))))


def run_xqa(torch, mod, s, sms, sem, ws):
    """fn(i) for one shape: the port's xqa_wrapper on cache copy i % R (programmatic dependent launch on unless the
    shape's `pdl` is 0)."""
    dev = "cuda"
    B, T, hq, hkv, page, q = s["batch"], s["context"], s["heads"], s["kv_heads"], s["page_size"], s["q_rows"]
    fp8 = s["dtype"] == "fp8"
    kvd = torch.float8_e4m3fn if fp8 else torch.bfloat16
    P = (T + page - 1) // page
    pool = B * P
    kv_bytes = pool * page * hkv * D * 2 * (1 if fp8 else 2)
    R = xqa_copies(kv_bytes)
    caches = []
    for _ in range(R):
        kc = torch.empty((pool, page, hkv, D), device=dev, dtype=torch.bfloat16).normal_(0, 0.5).to(kvd)
        vc = torch.empty_like(kc).copy_(kc)
        caches.append((kc, vc))
    table = torch.randperm(pool, device=dev, dtype=torch.int64).to(torch.int32).view(B, P).contiguous()
    lens = torch.full((B, 1), T, device=dev, dtype=torch.int32)      # read as uint32
    if q > 1:
        qt = torch.randn((B, 1, q, hq, D), device=dev, dtype=torch.bfloat16)
        rows = torch.tensor([(1 << (i + 1)) - 1 for i in range(q)], device=dev, dtype=torch.int32)
        mask = rows.view(1, q, 1).expand(B, q, 1).contiguous()        # one 32-bit word per row, read as uint32
    else:
        qt = torch.randn((B, 1, hq, D), device=dev, dtype=torch.bfloat16)
        mask = None
    out = torch.empty_like(qt)
    pdl = bool(int(s.get("pdl", 1)))

    def fn(i):
        kc, vc = caches[i % R]
        mod.xqa_wrapper(fp8, sms, hkv, 0, 1.0, None, out, 1.0, qt, None, kc, vc, table, P * page, lens, B, 1.0,
                        None, q, mask, sem, ws, pdl)

    return fn, R


def profile_one(torch, fn, label):
    """Kernel records (name, grid, block, registers, shared memory, duration) of one call, from torch.profiler."""
    import json
    import tempfile

    from torch.profiler import ProfilerActivity, profile

    fn(0)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn(1)
        torch.cuda.synchronize()
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


COLS = ["script_version", "date", "device", "torch", "cuda", "flashinfer", "family", "kernel", "model", "dtype", "heads",
        "kv_heads", "head_dim", "batch", "q_rows", "context", "page_size", "median_us", "p20_us", "p80_us", "calls",
        "kv_copies", "note"]


#: the eighth blind grid: fp8 verification (the GMMA kernel's SPEC_Q_SEQ_LEN build) at q 2 / 3 / 4 / 8 over Llama-3.1-8B
#: (4 query heads per KV head: 8 / 12 / 16 / 32 valid columns, 8 / 16 / 16 / 32 padded) and Qwen2.5-7B heads (7 per KV
#: head: q 2 = 14 valid of 16, q 4 = 28 of 32), short and middle contexts, batch 1-256, with fp8 / bf16 q 1 and bf16 q 2
#: controls; shapes in none of the earlier grids' rows, page 16. Fixed and priced (lab/kernels/predict_xqa_attention.py
#: --grid x8) with main's model and the candidate before it was measured
def x8_shapes() -> list[dict]:
    """The eighth blind grid, in measuring order (comment above): grouped by JIT module."""
    out = []

    def add(model, kv, ts, bs, q=1):
        hq, hkv = S6_HEADS[model]
        for t in ts:
            for b in bs:
                if b * t <= MAX_TOKENS and b * t * hkv * D * 2 * (1 if kv == "fp8" else 2) <= MAX_KV_BYTES:
                    out.append({"family": "xqa", "model": model, "dtype": kv, "heads": hq, "kv_heads": hkv,
                                "head_dim": D, "batch": b, "q_rows": q, "context": t, "page_size": 16})

    # fp8 verification, Llama heads: q 2 (8 columns), q 3 (12 of 16), q 4 (16), q 8 (32), lone, mid and many waves
    add("llama8b", "fp8", (45, 300), (1, 24, 256), q=2)
    add("llama8b", "fp8", (1200,), (6,), q=2)
    add("llama8b", "fp8", (90, 450), (2, 50, 220), q=3)
    add("llama8b", "fp8", (2400,), (4,), q=3)
    add("llama8b", "fp8", (120,), (1, 36, 128), q=4)
    add("llama8b", "fp8", (700,), (9, 70), q=4)
    add("llama8b", "fp8", (60, 250), (2, 40, 100), q=8)
    add("llama8b", "fp8", (1600,), (6,), q=8)
    # fp8 verification, Qwen heads: q 2 (14 of 16 columns), q 4 (28 of 32)
    add("qwen7b", "fp8", (80, 350), (1, 30, 200), q=2)
    add("qwen7b", "fp8", (75, 900), (3, 48, 160), q=4)
    # controls: fp8 q 1 (Llama, Qwen), bf16 q 1 and q 2 (Llama)
    add("llama8b", "fp8", (110,), (100,))
    add("llama8b", "fp8", (2100,), (8,))
    add("qwen7b", "fp8", (330,), (64,))
    add("llama8b", "bf16", (150,), (50,))
    add("llama8b", "bf16", (1350,), (10,))
    add("llama8b", "bf16", (380,), (20,), q=2)
    add("llama8b", "bf16", (60,), (200,), q=2)
    return out


#: the ninth blind grid's heads: S6_HEADS plus tensor-parallel shards (the per-GPU heads of Llama-3.1-8B at TP 2: 16 / 4,
#: Qwen2.5-7B at TP 2: 14 / 2 and TP 4: 7 / 1; the same G, so the same JIT build, as the full models)
X9_HEADS = {**S6_HEADS, "llama8b_tp2": (16, 4), "qwen7b_tp2": (14, 2), "qwen7b_tp4": (7, 1)}


#: the ninth blind grid: fp8 verification (the GMMA kernel's SPEC_Q_SEQ_LEN build) at q 2-4 and G 4 / 7 only at builds
#: whose registers were profiled (simulator/kernels/xqa.py XQA_GMMA_REGS: q 3 x G 4 at 60 registers, q 2 x G 7 at 66
#: and q 4 x G 7 at 100, where the residency from the registers differs from the launch-bounds rule; q 2 / 4 x G 4 at
#: 42 / 56, where it does not), over full-model and tensor-parallel heads, short and middle, batch 2-200; bf16
#: verification (mha.cu, 227 registers: 1 per SM under every rule) at q 2 x G 4 and q 3 x G 7; fp8 / bf16 q 1
#: controls. Page 16; shapes in none of the earlier grids' rows. Fixed and priced (lab/kernels/predict_xqa_attention.py
#: --grid x9) with main's model and the candidate before it was measured
def x9_shapes() -> list[dict]:
    """The ninth blind grid, in measuring order (comment above): grouped by JIT module."""
    out = []

    def add(model, kv, ts, bs, q=1):
        hq, hkv = X9_HEADS[model]
        for t in ts:
            for b in bs:
                if b * t <= MAX_TOKENS and b * t * hkv * D * 2 * (1 if kv == "fp8" else 2) <= MAX_KV_BYTES:
                    out.append({"family": "xqa", "model": model, "dtype": kv, "heads": hq, "kv_heads": hkv,
                                "head_dim": D, "batch": b, "q_rows": q, "context": t, "page_size": 16})

    # fp8 verification where the registers change the residency: q 3 x G 4 (60: 2 per SM), q 2 x G 7 (66: 2),
    # q 4 x G 7 (100: 1); most rows at more CTAs than the SMs hold at the lower residency (B x Hkv > 132-264), a few
    # lone / small-batch calls (one wave under every residency)
    add("llama8b", "fp8", (70,), (8, 45, 100, 200), q=3)
    add("llama8b", "fp8", (600,), (40, 120), q=3)
    add("llama8b", "fp8", (1500,), (5,), q=3)
    add("llama8b_tp2", "fp8", (200,), (80, 200), q=3)
    add("llama8b_tp2", "fp8", (900,), (90,), q=3)
    add("qwen7b", "fp8", (110,), (90, 170), q=2)
    add("qwen7b", "fp8", (700,), (80, 150), q=2)
    add("qwen7b", "fp8", (2000,), (4,), q=2)
    add("qwen7b_tp2", "fp8", (60,), (180,), q=2)
    add("qwen7b_tp2", "fp8", (1100,), (160,), q=2)
    add("qwen7b", "fp8", (55,), (6, 40, 70, 150), q=4)
    add("qwen7b", "fp8", (1300,), (45, 100), q=4)
    add("qwen7b_tp4", "fp8", (160,), (200,), q=4)
    add("qwen7b_tp4", "fp8", (3000,), (8,), q=4)
    add("qwen7b_tp2", "fp8", (100,), (140,), q=4)
    add("qwen7b_tp2", "fp8", (800,), (90,), q=4)
    # fp8 verification where it does not: q 2 / 4 x G 4 (42 / 56: 3 per SM)
    add("llama8b", "fp8", (140,), (70,), q=2)
    add("llama8b", "fp8", (1700,), (12,), q=2)
    add("llama8b_tp2", "fp8", (80,), (90,), q=4)
    add("llama8b_tp2", "fp8", (2500,), (6,), q=4)
    add("llama8b", "fp8", (800,), (40,), q=4)
    # bf16 verification (mha.cu: 1 per SM under both models)
    add("llama8b", "bf16", (170,), (45,), q=2)
    add("llama8b_tp2", "bf16", (1900,), (7,), q=2)
    add("llama8b", "bf16", (600,), (16,), q=2)
    add("qwen7b", "bf16", (95,), (25,), q=3)
    add("qwen7b_tp2", "bf16", (300,), (60,), q=3)
    add("qwen7b", "bf16", (1250,), (9,), q=3)
    # controls: fp8 q 1 (Llama, Qwen), bf16 q 1 (Llama)
    add("llama8b", "fp8", (260,), (35,))
    add("llama8b_tp2", "fp8", (1800,), (6,))
    add("qwen7b", "fp8", (150,), (120,))
    add("qwen7b_tp2", "fp8", (2200,), (5,))
    add("llama8b", "bf16", (210,), (40,))
    add("llama8b_tp2", "bf16", (90,), (180,))
    return out


#: the tenth blind grid's heads: X9_HEADS plus G 5 (Qwen2.5-14B: 40 query / 8 KV heads) and G 6 (Qwen2.5-1.5B: 12 / 2)
#: and G 7 at 8 KV heads (Yi-34B: 56 / 8)
X10_HEADS = {**X9_HEADS, "qwen14b": (40, 8), "qwen1p5b": (12, 2), "yi34b": (56, 8)}


#: the tenth blind grid: fp8 verification (the GMMA kernel's SPEC_Q_SEQ_LEN build) at G 5-7 and q 2-4, the builds whose
#: residency (profiled registers, or the launch bounds' 2 at 17-32 columns) is below the kind's 3 and those where it is
#: not, short at mid batch (most at more CTAs than the SMs hold at the build's residency, where its waves outnumber the
#: decode build's) and middle at small / mid batch; bf16 verification (mha.cu) at G 5-7; the middle (context
#: 600-9000) at batch 3-16 for both kernels at q 1; controls from regimes met before (fp8 q 2 x G 4, bf16 q 1 / q 2 short,
#: fp8 q 1 middle at mid batch). Page 16; shapes in none of the earlier grids' rows. Fixed and priced
#: (lab/kernels/predict_xqa_attention.py --grid x10) with main's model and the candidate before it was measured
def x10_shapes() -> list[dict]:
    """The tenth blind grid, in measuring order (comment above): grouped by JIT module."""
    out = []

    def add(model, kv, ts, bs, q=1):
        hq, hkv = X10_HEADS[model]
        for t in ts:
            for b in bs:
                if b * t <= MAX_TOKENS and b * t * hkv * D * 2 * (1 if kv == "fp8" else 2) <= MAX_KV_BYTES:
                    out.append({"family": "xqa", "model": model, "dtype": kv, "heads": hq, "kv_heads": hkv,
                                "head_dim": D, "batch": b, "q_rows": q, "context": t, "page_size": 16})

    # fp8 verification at G 7 (profiled: q 2 = 66 registers, 2 per SM; q 4 = 100, 1 per SM; q 3 unprofiled: 21 columns,
    # the launch bounds' 2)
    add("qwen7b", "fp8", (65,), (85, 180), q=2)
    add("qwen7b", "fp8", (230,), (35,), q=2)
    add("qwen7b", "fp8", (950,), (7, 75), q=2)
    add("yi34b", "fp8", (120,), (45,), q=2)
    add("qwen7b", "fp8", (85,), (25, 110), q=4)
    add("qwen7b", "fp8", (190,), (65,), q=4)
    add("qwen7b", "fp8", (1150,), (5, 45), q=4)
    add("yi34b", "fp8", (70,), (30,), q=4)
    add("qwen7b", "fp8", (95,), (80, 140), q=3)
    add("qwen7b", "fp8", (1400,), (6,), q=3)
    # fp8 verification at G 5 (q 2: 10 columns, 3 per SM; q 4: 20, the launch bounds' 2) and G 6 (q 3: 18, 2; q 4: 24, 2)
    add("qwen14b", "fp8", (75,), (40,), q=2)
    add("qwen14b", "fp8", (1250,), (9,), q=2)
    add("qwen14b", "fp8", (105,), (40, 70), q=4)
    add("qwen14b", "fp8", (850,), (11,), q=4)
    add("qwen1p5b", "fp8", (90,), (150,), q=3)
    add("qwen1p5b", "fp8", (1700,), (13,), q=3)
    add("qwen1p5b", "fp8", (140,), (170,), q=4)
    add("qwen1p5b", "fp8", (2300,), (10,), q=4)
    # bf16 verification at G 5-7 (mha.cu: 32 rows, 1 per SM under both models)
    add("qwen14b", "bf16", (115,), (35,), q=2)
    add("qwen14b", "bf16", (1050,), (8,), q=2)
    add("qwen7b", "bf16", (210,), (45,), q=4)
    add("qwen7b", "bf16", (1600,), (5,), q=4)
    add("qwen1p5b", "bf16", (750,), (14,), q=3)
    # the middle at batch 3-16, q 1, both kernels
    add("llama8b", "bf16", (1150,), (9, 11), q=1)
    add("llama8b", "bf16", (2700,), (5, 13), q=1)
    add("llama8b", "bf16", (4700,), (3, 10), q=1)
    add("qwen7b", "bf16", (1900,), (12,), q=1)
    add("llama8b", "fp8", (1150,), (9, 11), q=1)
    add("llama8b", "fp8", (4700,), (3, 10), q=1)
    add("qwen7b", "fp8", (2700,), (13,), q=1)
    # controls from regimes met before: fp8 q 2 x G 4 short / middle, bf16 q 1 / q 2 short at mid batch, fp8 q 1 middle
    # at mid batch
    add("llama8b", "fp8", (110,), (85,), q=2)
    add("llama8b", "fp8", (1450,), (20,), q=2)
    add("llama8b", "bf16", (145,), (75,), q=1)
    add("llama8b", "bf16", (230,), (30,), q=1)
    add("llama8b", "bf16", (155,), (55,), q=2)
    add("llama8b", "fp8", (900,), (60,), q=1)
    add("llama8b", "fp8", (95,), (150,), q=1)
    add("llama8b", "bf16", (1250,), (70,), q=1)
    return out


#: the per-SM stream scan (fit rows of hwmodels.roofline.SM_STREAM_CEILING, named before the call:
#: simulator.calibration.fit_production_attention.xqa_stream_fit_rows): one variable moves, the number of CTAs, at a fixed
#: long chain per CTA. The launcher is handed 1 SM (xqa_wrapper's multiProcessorCount, which only its split reads:
#: flashinfer-python 0.6.4 csrc/xqa/mha.cu launchMHAFlashInfer, mha_sm90.cu launchHopperF8MHAFlashInfer), so every
#: (sequence, KV head) is one unsplit CTA: batch B x 8 KV heads (Llama-3.1-8B heads, G 4) = 8 .. 400 CTAs of
#: 16384 keys (64 mha.cu tiles; 256 GMMA tiles), bf16 K/V at q 1 / 2 / 4 and fp8 K/V at q 1, plus bf16 q 1 at 4096 keys
X11_SCAN_T = 16384
X11_SCAN = {("bf16", 1): (1, 2, 4, 6, 8, 9, 10, 11, 12, 13, 14, 16, 17, 24, 33),
            ("bf16", 2): (1, 4, 8, 10, 12, 14, 16, 17, 33),
            ("bf16", 4): (1, 8, 11, 16, 33),
            ("fp8", 1): (1, 4, 8, 12, 16, 24, 33, 50)}
X11_SCAN_SHORT = (2, 9, 12, 16)


def x11_scan_shapes(kv, q) -> list[dict]:
    """The stream scan's rows of one build (comment above)."""
    hq, hkv = X9_HEADS["llama8b"]
    row = {"family": "xqa", "model": "llama8b", "dtype": kv, "heads": hq, "kv_heads": hkv, "head_dim": D,
           "q_rows": q, "page_size": 16, "split_sms": 1}
    out = [{**row, "batch": b, "context": X11_SCAN_T} for b in X11_SCAN.get((kv, q), ())]
    if (kv, q) == ("bf16", 1):
        out += [{**row, "batch": b, "context": 4096} for b in X11_SCAN_SHORT]
    return out


#: the eleventh blind grid: the middle (context 700-8000) at batch 3-16 for bf16 (mha.cu) at q 1 / 2 / 4 and fp8
#: (mha_sm90.cu) at q 1 / 2, over Llama-3.1-8B heads (8 KV heads: 24-128 CTAs under the port's split) and its
#: tensor-parallel-2 heads (4 KV heads), plus controls: the tenth grid's shapes its call did not reach (fp8 q 1 middle at
#: batch 3-11; fp8 q 2 / bf16 q 1 / bf16 q 2 short and middle at mid batch). Page 16; G 4 builds only (5 JIT modules,
#: shared with the scan). Priced with main's model (lab/kernels/predict_xqa_attention.py --grid x11) before it was
#: measured
def x11_shapes(kv, q) -> list[dict]:
    """The eleventh blind grid's rows of one build (comment above), blind rows first, then the controls."""
    out = []

    def add(model, pairs):
        hq, hkv = X9_HEADS[model]
        for t, b in pairs:
            out.append({"family": "xqa", "model": model, "dtype": kv, "heads": hq, "kv_heads": hkv, "head_dim": D,
                        "batch": b, "q_rows": q, "context": t, "page_size": 16})

    if (kv, q) == ("bf16", 1):
        add("llama8b", ((1300, 9), (3800, 9), (2100, 10), (900, 11), (3300, 11), (5200, 12), (7000, 13), (1700, 14),
                        (6100, 16), (2500, 3), (4100, 6)))
        add("llama8b_tp2", ((1500, 9), (4400, 14)))
        add("llama8b", ((145, 75), (230, 30), (1250, 70)))                       # controls
    elif (kv, q) == ("bf16", 2):
        add("llama8b", ((1400, 9), (2300, 10), (3500, 11), (5600, 12), (7400, 14), (2700, 5)))
        add("llama8b", ((155, 55),))                                             # control
    elif (kv, q) == ("bf16", 4):
        add("llama8b", ((1800, 9), (3000, 11), (4600, 13), (6400, 10), (1250, 4)))
    elif (kv, q) == ("fp8", 1):
        add("llama8b", ((1600, 9), (2400, 12), (3600, 14), (6600, 5), (5000, 16)))
        add("llama8b", ((1150, 9), (1150, 11), (4700, 3), (4700, 10), (900, 60), (95, 150)))   # controls
    elif (kv, q) == ("fp8", 2):
        add("llama8b", ((1900, 10), (3100, 13), (5400, 6), (8000, 4)))
        add("llama8b", ((110, 85), (1450, 20)))                                  # controls
    return out


#: the x11 call's builds, in measuring order (each: the scan's rows, then the blind grid's)
X11_BUILDS = (("bf16", 1), ("bf16", 2), ("fp8", 1), ("bf16", 4), ("fp8", 2))


def x11_all() -> list[dict]:
    """The x11 call: per build, the stream scan's rows (split_sms 1), then the eleventh blind grid's."""
    return [r for kv, q in X11_BUILDS for r in x11_scan_shapes(kv, q) + x11_shapes(kv, q)]


def x11_blind() -> list[dict]:
    """The eleventh blind grid alone (what predict_xqa_attention.py --grid x11 prices)."""
    return [r for kv, q in X11_BUILDS for r in x11_shapes(kv, q)]


#: the twelfth blind grid's heads: X10_HEADS plus Llama-3.1-8B at tensor-parallel 4 (8 query / 2 KV heads)
X12_HEADS = {**X10_HEADS, "llama8b_tp4": (8, 2)}
#: the SMs of the device the grid's TensorRT-LLM splits are computed for (the H100 SXM's 132)
X12_SMS = 132


def trtllm_multi_block(B, T, hkv, sms=X12_SMS) -> int:
    """TensorRT-LLM's computeMultiBlockCount (cpp/tensorrt_llm/kernels/decoderMaskedMultiheadAttention/
    decoderXQAImplCommon.h, as simulator/kernels/xqa.py xqa_multi_block reads it): T // 512, at most round(sqrt(8 mb)),
    scaled down when B x Hkv x mb / SMs exceeds 8 waves; at least 1."""
    mb = T // 512
    mb = max(min(mb, int(math.floor(math.sqrt(mb * 8.0) + 0.5))), 1)
    adj = B * hkv * mb / float(sms) / 8.0
    if adj > 1.0:
        mb = int(math.floor(mb / adj))
    return max(mb, 1)


def port_sub_seqs(B, T, hkv, sms, fp8, page=16) -> int:
    """The port's split (simulator/kernels/xqa.py port_split) for a launcher handed `sms` SMs."""
    bh = max(B * hkv, 1)
    max_t = -(-T // page) * page
    if fp8:
        return min(max(1, int(math.floor((3 * sms // bh) * 0.25 + 0.5))), -(-max_t // 64))
    return min(max(1, sms // bh), -(-max_t // 256))


def trtllm_split_sms(B, T, hkv, fp8, page=16) -> int:
    """The smallest SM count that makes the port's launcher split every (sequence, KV head) into TensorRT-LLM's
    computeMultiBlockCount sub-sequences (so the port launches the CTAs TensorRT-LLM's launcher would)."""
    want = trtllm_multi_block(B, T, hkv)
    for s in range(1, 4 * X12_SMS * max(B * hkv, 1)):
        if port_sub_seqs(B, T, hkv, s, fp8, page) == want:
            return s
    raise ValueError(f"no SM count gives {want} sub-sequences at B {B} T {T} Hkv {hkv}")


#: the twelfth blind grid: (1) few-CTA long-chain launches as TensorRT-LLM's own launcher splits them (the port's
#: launcher handed the SM count that reproduces computeMultiBlockCount, split_sms): one KV head per sequence
#: (Llama-3.1-70B at tensor-parallel 8) or two (Llama-3.1-8B at tensor-parallel 4) at batch 1-3 and 16K-180K tokens,
#: 18-66 CTAs of 4-15 tiles (mha.cu) / 20-70 (mha_sm90.cu), bf16 and fp8 K/V, where hwmodels.roofline's per-SM stream
#: ceiling binds for mha.cu, and Llama-3.1-8B at batch 1-2 and 80K-150K tokens (384-560 CTAs); (2) the bf16 middle
#: at 72-120 CTAs (Llama-3.1-8B, batch 6-14, the port's split); (3) the fp8 middle (batch 2-15, unsplit and split);
#: (4) fp8 verification at G 5 / 7 (Qwen2.5-14B, Qwen2.5-7B, Yi-34B heads, q 2 / 4); (5) controls from regimes met
#: before. Page 16; shapes in none of the earlier grids' rows. Fixed and priced (lab/kernels/predict_xqa_attention.py
#: --grid x12) with main's model, the stream-ceiling candidate as fitted and the new model before it was measured.
#: Rows: (model, dtype, q, context, batch, role, trtllm split)
X12_ROWS = (
    # (1) few-CTA long-chain launches, TensorRT-LLM's split
    ("llama70b_tp8", "bf16", 1, 28000, 1, "fewcta", True), ("llama70b_tp8", "bf16", 1, 56000, 1, "fewcta", True),
    ("llama70b_tp8", "bf16", 1, 90000, 1, "fewcta", True), ("llama70b_tp8", "bf16", 1, 120000, 1, "fewcta", True),
    ("llama70b_tp8", "bf16", 1, 180000, 1, "fewcta", True), ("llama70b_tp8", "bf16", 1, 20000, 2, "fewcta", True),
    ("llama70b_tp8", "bf16", 1, 36000, 2, "fewcta", True), ("llama70b_tp8", "bf16", 1, 16000, 3, "fewcta", True),
    ("llama70b_tp8", "fp8", 1, 40000, 1, "fewcta", True), ("llama70b_tp8", "fp8", 1, 110000, 1, "fewcta", True),
    ("llama70b_tp8", "fp8", 1, 28000, 2, "fewcta", True),
    ("llama8b_tp4", "bf16", 1, 26000, 1, "fewcta", True), ("llama8b_tp4", "fp8", 1, 70000, 1, "fewcta", True),
    ("llama8b", "bf16", 1, 150000, 1, "longmany", True), ("llama8b", "fp8", 1, 80000, 2, "longmany", True),
    # (2) the bf16 middle at 72-120 CTAs
    ("llama8b", "bf16", 1, 2600, 9, "middle", False), ("llama8b", "bf16", 1, 4300, 10, "middle", False),
    ("llama8b", "bf16", 1, 1500, 11, "middle", False), ("llama8b", "bf16", 1, 3400, 12, "middle", False),
    ("llama8b", "bf16", 1, 2000, 13, "middle", False), ("llama8b", "bf16", 1, 5900, 14, "middle", False),
    ("llama8b", "bf16", 1, 2900, 6, "middle", False),
    ("llama8b", "bf16", 2, 1700, 10, "middle", False), ("llama8b", "bf16", 2, 4000, 13, "middle", False),
    # diagnostics (not blind rows): three of the bf16 middle shapes and one fp8 middle shape again with programmatic
    # dependent launch off (xqa_wrapper's enable_pdl; every other row runs it on, as flashinfer.xqa does): mha.cu calls
    # preExit (griddepcontrol.launch_dependents) right after its barrier init, so the next call's CTAs may take the SMs
    # a launch of fewer CTAs than SMs leaves idle and wait there (acqBulk)
    ("llama8b", "bf16", 1, 2600, 9, "nopdl", False), ("llama8b", "bf16", 1, 1500, 11, "nopdl", False),
    ("llama8b", "bf16", 1, 5900, 14, "nopdl", False), ("llama8b", "fp8", 1, 3000, 9, "nopdl", False),
    # (3) the fp8 middle
    ("llama8b", "fp8", 1, 3000, 9, "middle", False), ("llama8b", "fp8", 1, 5300, 11, "middle", False),
    ("llama8b", "fp8", 1, 2200, 13, "middle", False), ("llama8b", "fp8", 1, 1300, 15, "middle", False),
    ("llama8b", "fp8", 1, 3800, 5, "middle", False), ("llama8b", "fp8", 1, 12000, 2, "middle", False),
    ("llama8b", "fp8", 2, 2500, 11, "middle", False), ("llama8b", "fp8", 2, 3900, 14, "middle", False),
    # (4) fp8 verification at G 5 / 7
    ("qwen14b", "fp8", 2, 140, 35, "verify", False), ("qwen14b", "fp8", 2, 1100, 10, "verify", False),
    ("qwen7b", "fp8", 2, 180, 55, "verify", False), ("qwen7b", "fp8", 4, 110, 30, "verify", False),
    ("yi34b", "fp8", 2, 260, 30, "verify", False),
    # (5) controls
    ("llama8b", "bf16", 1, 190, 40, "control", False), ("llama8b", "bf16", 1, 1100, 60, "control", False),
    ("llama8b", "bf16", 2, 140, 65, "control", False), ("llama8b", "bf16", 1, 20000, 2, "control", False),
    ("llama8b", "fp8", 1, 130, 100, "control", False), ("llama8b", "fp8", 1, 1700, 48, "control", False),
    ("llama8b", "fp8", 2, 240, 60, "control", False),
)
#: the x12 call's builds in measuring order (the few-CTA builds first)
X12_BUILD_ORDER = ("xqa_bf16_g8_p16_q1", "xqa_fp8_g8_p16_q1", "xqa_bf16_g4_p16_q1", "xqa_fp8_g4_p16_q1",
                   "xqa_bf16_g4_p16_q2", "xqa_fp8_g4_p16_q2", "xqa_fp8_g5_p16_q2", "xqa_fp8_g7_p16_q2",
                   "xqa_fp8_g7_p16_q4")


#: the keys a measured row is matched on by --skip-measured
SKIP_KEYS = ("model", "dtype", "batch", "q_rows", "context", "role", "pdl")


def x12_shapes() -> list[dict]:
    """The twelfth blind grid (X12_ROWS), in measuring order (X12_BUILD_ORDER, then the table's order): split_sms set
    where TensorRT-LLM's split is reproduced, empty (the device's SMs) where the port's own split runs."""
    out = []
    for model, kv, q, t, b, role, trt in X12_ROWS:
        hq, hkv = X12_HEADS[model]
        out.append({"family": "xqa", "model": model, "dtype": kv, "heads": hq, "kv_heads": hkv, "head_dim": D,
                    "batch": b, "q_rows": q, "context": t, "page_size": 16, "role": role, "pdl": int(role != "nopdl"),
                    "split_sms": trtllm_split_sms(b, t, hkv, kv == "fp8") if trt else None})
    order = {n: i for i, n in enumerate(X12_BUILD_ORDER)}
    return sorted(out, key=lambda s: order.get(module_name(s), len(order)))


#: the thirteenth blind grid: (1) fp8 (mha_sm90.cu) few-CTA long chains under TensorRT-LLM's split (the port's
#: launcher handed split_sms): one KV head per sequence (Llama-3.1-70B and Qwen2.5-72B at tensor-parallel 8: 8/1 heads;
#: Qwen2.5-72B has Llama-3.1-70B's 64/8 heads, so the same build), two (Llama-3.1-8B at TP 4) and four (Llama-3.1-8B at TP 2), batch 1-4,
#: 12K-170K tokens; (2) the fp8 middle (Llama-3.1-8B, batch 3-16, the port's split); (3) fp8 verification at G 4 / 7
#: (Llama-3.1-8B TP 2, Qwen2.5-7B TP 4: q 2), short and middle; (4) bf16 controls (a few-CTA long chain and the middle
#: and short regimes met before). Page 16; shapes in none of the earlier grids' rows. Fixed and priced
#: (lab/kernels/predict_xqa_attention.py --grid x13) with main's model and the new model before it was measured.
#: Rows: (model, dtype, q, context, batch, role, trtllm split)
X13_HEADS = {**X12_HEADS, "qwen72b_tp8": (8, 1)}
X13_ROWS = (
    # (1) fp8 few-CTA long chains, TensorRT-LLM's split
    ("llama70b_tp8", "fp8", 1, 23000, 1, "fewcta", True), ("llama70b_tp8", "fp8", 1, 67000, 1, "fewcta", True),
    ("llama70b_tp8", "fp8", 1, 165000, 1, "fewcta", True), ("llama70b_tp8", "fp8", 1, 47000, 2, "fewcta", True),
    ("llama70b_tp8", "fp8", 1, 19000, 3, "fewcta", True), ("llama70b_tp8", "fp8", 1, 33000, 4, "fewcta", True),
    ("qwen72b_tp8", "fp8", 1, 31000, 1, "fewcta", True), ("qwen72b_tp8", "fp8", 1, 95000, 2, "fewcta", True),
    ("llama8b_tp4", "fp8", 1, 27000, 1, "fewcta", True), ("llama8b_tp4", "fp8", 1, 130000, 1, "fewcta", True),
    ("llama8b_tp4", "fp8", 1, 43000, 2, "fewcta", True),
    ("llama8b_tp2", "fp8", 1, 37000, 1, "fewcta", True), ("llama8b_tp2", "fp8", 1, 21000, 2, "fewcta", True),
    # (2) the fp8 middle (the port's split)
    ("llama8b", "fp8", 1, 4600, 10, "middle", False), ("llama8b", "fp8", 1, 2700, 12, "middle", False),
    ("llama8b", "fp8", 1, 6100, 4, "middle", False), ("llama8b", "fp8", 1, 9300, 3, "middle", False),
    ("llama8b", "fp8", 1, 1900, 16, "middle", False), ("llama8b", "fp8", 1, 3500, 7, "middle", False),
    # (3) fp8 verification at G 4 / 7
    ("llama8b_tp2", "fp8", 2, 850, 20, "verify", False), ("llama8b_tp2", "fp8", 2, 4200, 6, "verify", False),
    ("llama8b_tp2", "fp8", 2, 230, 70, "verify", False),
    ("qwen7b_tp4", "fp8", 2, 1300, 16, "verify", False), ("qwen7b_tp4", "fp8", 2, 5200, 4, "verify", False),
    ("qwen7b_tp4", "fp8", 2, 170, 90, "verify", False),
    # (4) bf16 controls
    ("llama8b_tp4", "bf16", 1, 61000, 1, "fewcta", True), ("llama8b_tp4", "bf16", 1, 33000, 2, "fewcta", True),
    ("llama8b", "bf16", 1, 950, 30, "control", False), ("llama8b", "bf16", 1, 210, 90, "control", False),
    ("llama8b", "bf16", 1, 7700, 4, "control", False),
)
#: the x13 call's builds in measuring order (the fp8 few-CTA builds first)
X13_BUILD_ORDER = ("xqa_fp8_g8_p16_q1", "xqa_fp8_g4_p16_q1", "xqa_fp8_g4_p16_q2",
                   "xqa_fp8_g7_p16_q2", "xqa_bf16_g4_p16_q1")


def x13_shapes() -> list[dict]:
    """The thirteenth blind grid (X13_ROWS), in measuring order (X13_BUILD_ORDER, then the table's order): split_sms set
    where TensorRT-LLM's split is reproduced, empty (the device's SMs) where the port's own split runs."""
    out = []
    for model, kv, q, t, b, role, trt in X13_ROWS:
        hq, hkv = X13_HEADS[model]
        out.append({"family": "xqa", "model": model, "dtype": kv, "heads": hq, "kv_heads": hkv, "head_dim": D,
                    "batch": b, "q_rows": q, "context": t, "page_size": 16, "role": role, "pdl": 1,
                    "split_sms": trtllm_split_sms(b, t, hkv, kv == "fp8") if trt else None})
    order = {n: i for i, n in enumerate(X13_BUILD_ORDER)}
    return sorted(out, key=lambda s: order.get(module_name(s), len(order)))


#: the fourteenth blind grid (helper s17xqa): the bf16 (mha.cu) middle at 48-160 CTAs, Llama-3.1-8B heads, page 16:
#: (1) one partial wave of 72-104 CTAs (batch 9-13, the port's split: unsplit) and (2) 112-128 CTAs (batch 14-16
#: unsplit; batch 6-8 split in 2), q 1 and q 2, where the open miss is; (3) 48-64 CTAs (batch 6-8, the launcher handed 1
#: SM: unsplit, fewer CTAs than half the SMs) and (4) 136-160 CTAs (two waves): the candidate's cut-offs; (5) bf16
#: controls (many-wave short, a few-CTA long chain under TensorRT-LLM's split); (6) a few fp8 rows (the GMMA kernel at
#: 88-160 CTAs and a long few-CTA chain). Shapes in none of the earlier grids' rows. Fixed and priced
#: (lab/kernels/predict_xqa_attention.py --grid x14) with main's model and the candidate (simulator/kernels/xqa.py
#: XQA_LATE) before it was measured. Rows: (model, dtype, q, context, batch, role, split: None = the port's own
#: split, "trt" = TensorRT-LLM's split through split_sms, an int = that SM count handed to the launcher)
X14_ROWS = (
    # (1) 72-104 CTAs, one partial wave
    ("llama8b", "bf16", 1, 3100, 9, "mid72", None), ("llama8b", "bf16", 1, 6500, 9, "mid72", None),
    ("llama8b", "bf16", 1, 1250, 10, "mid72", None), ("llama8b", "bf16", 1, 2400, 11, "mid72", None),
    ("llama8b", "bf16", 1, 5000, 11, "mid72", None), ("llama8b", "bf16", 1, 1000, 12, "mid72", None),
    ("llama8b", "bf16", 1, 2700, 12, "mid72", None), ("llama8b", "bf16", 1, 1400, 13, "mid72", None),
    ("llama8b", "bf16", 1, 3700, 13, "mid72", None),
    ("llama8b", "bf16", 2, 2200, 9, "mid72", None), ("llama8b", "bf16", 2, 1300, 11, "mid72", None),
    ("llama8b", "bf16", 1, 8500, 10, "mid72", None),
    # (2) 112-128 CTAs
    ("llama8b", "bf16", 1, 3200, 14, "mid112", None), ("llama8b", "bf16", 1, 1200, 15, "mid112", None),
    ("llama8b", "bf16", 1, 4500, 15, "mid112", None), ("llama8b", "bf16", 1, 2200, 16, "mid112", None),
    ("llama8b", "bf16", 1, 2200, 7, "mid112", None), ("llama8b", "bf16", 1, 3300, 8, "mid112", None),
    ("llama8b", "bf16", 2, 2600, 14, "mid112", None),
    # (3) 48-64 CTAs, unsplit (the launcher handed 1 SM)
    ("llama8b", "bf16", 1, 3000, 6, "mid48", 1), ("llama8b", "bf16", 1, 1800, 7, "mid48", 1),
    ("llama8b", "bf16", 1, 5500, 8, "mid48", 1),
    # (4) 136-160 CTAs, two waves
    ("llama8b", "bf16", 1, 2500, 17, "mid136", None), ("llama8b", "bf16", 1, 1500, 18, "mid136", None),
    ("llama8b", "bf16", 1, 3000, 20, "mid136", None),
    # (5) bf16 controls
    ("llama8b", "bf16", 1, 300, 48, "control", None), ("llama8b", "bf16", 1, 700, 64, "control", None),
    ("llama8b_tp4", "bf16", 1, 45000, 1, "control", "trt"), ("llama8b", "bf16", 1, 3500, 6, "mid72", None),
    # (6) fp8 rows
    ("llama8b", "fp8", 1, 9000, 4, "fp8", None), ("llama8b", "fp8", 1, 2600, 16, "fp8", None),
    ("llama8b", "fp8", 1, 1700, 11, "fp8", None), ("llama8b", "fp8", 1, 900, 20, "fp8", None),
    ("llama8b_tp4", "fp8", 1, 50000, 1, "fp8", "trt"),
)
#: the x14 call's builds in measuring order (the bf16 middle first)
X14_BUILD_ORDER = ("xqa_bf16_g4_p16_q1", "xqa_bf16_g4_p16_q2", "xqa_fp8_g4_p16_q1")


def x14_shapes() -> list[dict]:
    """The fourteenth blind grid (X14_ROWS), in measuring order (X14_BUILD_ORDER, then the table's order)."""
    out = []
    for model, kv, q, t, b, role, split in X14_ROWS:
        hq, hkv = X13_HEADS[model]
        ssms = trtllm_split_sms(b, t, hkv, kv == "fp8") if split == "trt" else split
        out.append({"family": "xqa", "model": model, "dtype": kv, "heads": hq, "kv_heads": hkv, "head_dim": D,
                    "batch": b, "q_rows": q, "context": t, "page_size": 16, "role": role, "pdl": 1,
                    "split_sms": ssms})
    order = {n: i for i, n in enumerate(X14_BUILD_ORDER)}
    return sorted(out, key=lambda s: order.get(module_name(s), len(order)))


#: the fifteenth blind grid (helper s18xqa): the bf16 (mha.cu) launches the fourteenth grid missed, page 16: (1) two waves
#: of 136-200 CTAs (Llama-3.1-8B heads at batch 17-25 and Llama-3.1-8B at TP 2 (16 / 4 heads, the same G 4 build) at batch
#: 35-47, the port's split: unsplit; q 1 and q 2; two TensorRT-LLM splits of one sequence into 18 / 21 sub-sequences:
#: 144 / 168 CTAs); (2) below half the SMs at short chains (batch 4-8, the launcher handed 1 SM: 32-64 unsplit CTAs of
#: 3-11 tiles); (3) controls (one partial wave, 112-128 CTAs, 240 / 320 CTAs); (4) diagnostics, NOT blind rows: three
#: fourteenth-grid shapes again with programmatic dependent launch off (role nopdl). Shapes in none of the earlier
#: grids' rows. Fixed and priced (lab/kernels/predict_xqa_attention.py --grid x15) with main's model and the candidate
#: (hwmodels.roofline SM_STREAM_TAIL) before it was measured. Rows: (model, dtype, q, context, batch, role, split) as
#: X14_ROWS
X15_ROWS = (
    # (1) two waves, 136-200 CTAs
    ("llama8b", "bf16", 1, 4200, 17, "two136", None), ("llama8b", "bf16", 1, 2800, 18, "two136", None),
    ("llama8b", "bf16", 1, 1900, 19, "two136", None), ("llama8b", "bf16", 1, 5200, 19, "two136", None),
    ("llama8b", "bf16", 1, 1300, 20, "two136", None), ("llama8b", "bf16", 1, 3600, 21, "two136", None),
    ("llama8b", "bf16", 1, 2300, 22, "two136", None), ("llama8b", "bf16", 1, 1600, 23, "two136", None),
    ("llama8b", "bf16", 1, 4100, 24, "two136", None), ("llama8b", "bf16", 1, 2700, 25, "two136", None),
    ("llama8b_tp2", "bf16", 1, 3300, 35, "two136", None), ("llama8b_tp2", "bf16", 1, 2000, 41, "two136", None),
    ("llama8b_tp2", "bf16", 1, 4600, 47, "two136", None),
    ("llama8b", "bf16", 1, 20000, 1, "two136", "trt"), ("llama8b", "bf16", 1, 29000, 1, "two136", "trt"),
    ("llama8b", "bf16", 2, 2100, 18, "two136", None), ("llama8b", "bf16", 2, 1500, 21, "two136", None),
    ("llama8b", "bf16", 2, 3900, 23, "two136", None),
    # (2) below half the SMs, short chains (unsplit: the launcher handed 1 SM)
    ("llama8b", "bf16", 1, 900, 5, "below", 1), ("llama8b", "bf16", 1, 1400, 6, "below", 1),
    ("llama8b", "bf16", 1, 700, 7, "below", 1), ("llama8b", "bf16", 1, 1100, 8, "below", 1),
    ("llama8b", "bf16", 1, 2000, 4, "below", 1), ("llama8b", "bf16", 1, 2600, 7, "below", 1),
    # (3) controls
    ("llama8b", "bf16", 1, 2900, 10, "control", None), ("llama8b", "bf16", 1, 4400, 12, "control", None),
    ("llama8b", "bf16", 1, 2600, 15, "control", None), ("llama8b", "bf16", 1, 1200, 30, "control", None),
    ("llama8b", "bf16", 1, 1000, 40, "control", None),
    # (4) diagnostics (not blind): fourteenth-grid shapes with enable_pdl off
    ("llama8b", "bf16", 1, 2500, 17, "nopdl", None), ("llama8b", "bf16", 1, 3000, 20, "nopdl", None),
    ("llama8b", "bf16", 1, 1800, 7, "nopdl", 1),
)
#: the x15 call's builds in measuring order
X15_BUILD_ORDER = ("xqa_bf16_g4_p16_q1", "xqa_bf16_g4_p16_q2")


def x15_shapes() -> list[dict]:
    """The fifteenth blind grid (X15_ROWS), in measuring order (X15_BUILD_ORDER, then the table's order); pdl 0 for
    the nopdl diagnostics."""
    out = []
    for model, kv, q, t, b, role, split in X15_ROWS:
        hq, hkv = X13_HEADS[model] if model in X13_HEADS else X9_HEADS[model]
        ssms = trtllm_split_sms(b, t, hkv, kv == "fp8") if split == "trt" else split
        out.append({"family": "xqa", "model": model, "dtype": kv, "heads": hq, "kv_heads": hkv, "head_dim": D,
                    "batch": b, "q_rows": q, "context": t, "page_size": 16, "role": role, "pdl": int(role != "nopdl"),
                    "split_sms": ssms})
    order = {n: i for i, n in enumerate(X15_BUILD_ORDER)}
    return sorted(out, key=lambda s: order.get(module_name(s), len(order)))


#: a diagnostic scan after the fifteenth grid's call (NOT blind, LOOKED-AT: its below-half rows missed -5..-20 %): bf16
#: Llama-3.1-8B unsplit CTAs (the launcher handed 1 SM) at a fixed short chain, 8 -> 128 CTAs (batch 1-16) at 1100 and
#: 2600 tokens: does the extra time grow with the launch's CTAs (its own HBM traffic) or stay per CTA
X15D_ROWS = tuple(("llama8b", "bf16", 1, t, b, "scan", 1) for t in (1100, 2600) for b in (1, 2, 4, 6, 8, 10, 12, 14, 16))


def x15d_shapes() -> list[dict]:
    """The diagnostic scan X15D_ROWS (enable_pdl on)."""
    hq, hkv = X13_HEADS["llama8b"]
    return [{"family": "xqa", "model": m, "dtype": kv, "heads": hq, "kv_heads": hkv, "head_dim": D, "batch": b,
             "q_rows": q, "context": t, "page_size": 16, "role": role, "pdl": 1, "split_sms": split}
            for m, kv, q, t, b, role, split in X15D_ROWS]


#: the sixteenth blind grid (helper s19xqa): bf16 (mha.cu) launches through the crossover of the per-SM stream rate and
#: the chip's HBM rate, page 16, G 4 builds only (Llama-3.1-8B heads and its TP-2 heads): (1) knee: below half the SMs,
#: 24-64 unsplit CTAs (the launcher handed 1 SM) of 3-20 tiles, q 1; (2) middle: one partial wave of 72-128 CTAs (the
#: port's split leaves them unsplit), 3-20 tiles, q 1; (3) q 2: 40-104 CTAs and one two-wave row; (4) controls: two
#: waves of 144-192 CTAs, q 1; (5) fp8 controls (mha_sm90.cu, the port's split). Shapes in none of the earlier grids'
#: rows. Fixed and priced (lab/kernels/predict_xqa_attention.py --grid x16) with main's model and the candidate
#: (hwmodels.roofline SM_STREAM_SOFT with XQA_LATE_LOADS refitted jointly) before it was measured. Rows: (model, dtype,
#: q, context, batch, role, split) as X15_ROWS
X16_ROWS = (
    # (1) knee: 24-64 unsplit CTAs, q 1
    ("llama8b", "bf16", 1, 3700, 3, "knee", 1), ("llama8b", "bf16", 1, 1500, 3, "knee", 1),
    ("llama8b", "bf16", 1, 1250, 4, "knee", 1), ("llama8b", "bf16", 1, 2250, 5, "knee", 1),
    ("llama8b", "bf16", 1, 4900, 5, "knee", 1), ("llama8b", "bf16", 1, 850, 6, "knee", 1),
    ("llama8b", "bf16", 1, 3100, 6, "knee", 1), ("llama8b", "bf16", 1, 1750, 7, "knee", 1),
    ("llama8b", "bf16", 1, 4300, 7, "knee", 1), ("llama8b", "bf16", 1, 650, 8, "knee", 1),
    ("llama8b", "bf16", 1, 3450, 8, "knee", 1),
    ("llama8b_tp2", "bf16", 1, 2900, 9, "knee", 1), ("llama8b_tp2", "bf16", 1, 1900, 11, "knee", 1),
    ("llama8b_tp2", "bf16", 1, 1200, 13, "knee", 1), ("llama8b_tp2", "bf16", 1, 3900, 15, "knee", 1),
    # (2) middle: one partial wave of 72-128 CTAs, q 1
    ("llama8b", "bf16", 1, 2400, 9, "middle", None), ("llama8b", "bf16", 1, 1550, 10, "middle", None),
    ("llama8b", "bf16", 1, 3500, 11, "middle", None), ("llama8b", "bf16", 1, 950, 12, "middle", None),
    ("llama8b", "bf16", 1, 2050, 13, "middle", None), ("llama8b", "bf16", 1, 4700, 14, "middle", None),
    ("llama8b", "bf16", 1, 1650, 16, "middle", None),
    ("llama8b_tp2", "bf16", 1, 2700, 21, "middle", None), ("llama8b_tp2", "bf16", 1, 1350, 27, "middle", None),
    # (3) q 2
    ("llama8b", "bf16", 2, 1800, 5, "q2", 1), ("llama8b", "bf16", 2, 2700, 7, "q2", 1),
    ("llama8b", "bf16", 2, 1300, 10, "q2", None), ("llama8b", "bf16", 2, 3200, 13, "q2", None),
    ("llama8b_tp2", "bf16", 2, 2200, 23, "q2", None), ("llama8b", "bf16", 2, 1700, 19, "q2", None),
    # (4) controls: two waves, q 1
    ("llama8b", "bf16", 1, 3400, 18, "control", None), ("llama8b", "bf16", 1, 2500, 21, "control", None),
    ("llama8b", "bf16", 1, 1450, 24, "control", None), ("llama8b_tp2", "bf16", 1, 2800, 37, "control", None),
    # (5) fp8 controls (mha_sm90.cu)
    ("llama8b", "fp8", 1, 2300, 6, "fp8", None), ("llama8b", "fp8", 1, 1700, 12, "fp8", None),
    ("llama8b", "fp8", 1, 3600, 20, "fp8", None), ("llama8b", "fp8", 1, 5300, 4, "fp8", None),
)
#: the x16 call's builds in measuring order
X16_BUILD_ORDER = ("xqa_bf16_g4_p16_q1", "xqa_bf16_g4_p16_q2", "xqa_fp8_g4_p16_q1")


def x16_shapes() -> list[dict]:
    """The sixteenth blind grid (X16_ROWS), in measuring order (X16_BUILD_ORDER, then the table's order), pdl on."""
    out = []
    for model, kv, q, t, b, role, split in X16_ROWS:
        hq, hkv = X13_HEADS[model] if model in X13_HEADS else X9_HEADS[model]
        out.append({"family": "xqa", "model": model, "dtype": kv, "heads": hq, "kv_heads": hkv, "head_dim": D,
                    "batch": b, "q_rows": q, "context": t, "page_size": 16, "role": role, "pdl": 1,
                    "split_sms": split})
    order = {n: i for i, n in enumerate(X16_BUILD_ORDER)}
    return sorted(out, key=lambda s: order.get(module_name(s), len(order)))


#: the seventeenth blind grid (helper s20xqa): mha.cu's verification build (q 2, 32 rows per CTA) over long chains
#: against q 1 twins at the same CTAs (same model, batch, context, split: the launcher handed 1 SM, unsplit CTAs =
#: batch x KV heads), 24-152 CTAs over 2-39 tiles, page 16, G 4 builds only (Llama-3.1-8B heads and its TP-2 heads);
#: controls: q 2 one-tile launches (the candidate leaves them as main prices them). Shapes in none of the earlier grids'
#: rows. Fixed and priced (lab/kernels/predict_xqa_attention.py --grid x17) with main's model and the candidate
#: (simulator.kernels.xqa XQA_SPEC_TILE_SHARE) before it was measured. Rows: (model, dtype, q, context, batch, role,
#: split) as X15_ROWS; role q2_half (below half the SMs), q2_wave (one partial wave), q2_two (two waves), q1 (the twins),
#: control
X17_TWINS = (
    ("llama8b", 2950, 3, "half"), ("llama8b", 9800, 4, "half"), ("llama8b", 480, 5, "half"),
    ("llama8b", 5600, 6, "half"), ("llama8b_tp2", 1350, 13, "half"), ("llama8b", 7400, 7, "half"),
    ("llama8b", 1050, 8, "half"),
    ("llama8b", 3300, 9, "wave"), ("llama8b", 760, 11, "wave"), ("llama8b", 6100, 12, "wave"),
    ("llama8b_tp2", 2350, 27, "wave"), ("llama8b", 4050, 15, "wave"),
    ("llama8b", 1900, 17, "two"), ("llama8b", 3700, 19, "two"),
)
X17_ROWS = tuple(r for m, t, b, reg in X17_TWINS
                 for r in ((m, "bf16", 2, t, b, f"q2_{reg}", 1), (m, "bf16", 1, t, b, "q1", 1))) + (
    ("llama8b", "bf16", 2, 200, 10, "control", 1), ("llama8b", "bf16", 2, 170, 16, "control", 1),
)
#: the x17 call's builds in measuring order
X17_BUILD_ORDER = ("xqa_bf16_g4_p16_q1", "xqa_bf16_g4_p16_q2")


def x17_shapes() -> list[dict]:
    """The seventeenth blind grid (X17_ROWS), in measuring order (X17_BUILD_ORDER, then the table's order), pdl on."""
    out = []
    for model, kv, q, t, b, role, split in X17_ROWS:
        hq, hkv = X13_HEADS[model] if model in X13_HEADS else X9_HEADS[model]
        out.append({"family": "xqa", "model": model, "dtype": kv, "heads": hq, "kv_heads": hkv, "head_dim": D,
                    "batch": b, "q_rows": q, "context": t, "page_size": 16, "role": role, "pdl": 1,
                    "split_sms": split})
    order = {n: i for i, n in enumerate(X17_BUILD_ORDER)}
    return sorted(out, key=lambda s: order.get(module_name(s), len(order)))


#: the eighteenth blind grid (helper s21xqa): mha.cu's verification build (q 2) BELOW HALF THE SMs (8-64 unsplit CTAs,
#: the launcher handed 1 SM) over 1-40 tiles against q 1 twins at the same CTAs and tiles, and q 2 controls at 104-144
#: CTAs; page 16, G 4 builds only (Llama-3.1-8B heads and its TP-2 heads). Shapes in none of the earlier grids' rows.
#: Fixed and priced (lab/kernels/predict_xqa_attention.py --grid x18) with main's model and the candidate
#: (simulator.kernels.xqa XQA_SPEC_STREAM_SHARE) before it was measured. Rows as X17_ROWS; role q2_half (2-40 tiles
#: below half the SMs), q2_one (one tile below half the SMs), q1 (the twins), control (q 2 at >= 100 CTAs)
X18_TWINS = (
    ("llama8b", 6900, 1, "half"), ("llama8b_tp2", 2200, 3, "half"), ("llama8b", 10100, 2, "half"),
    ("llama8b_tp2", 620, 5, "half"), ("llama8b", 4400, 3, "half"), ("llama8b_tp2", 1700, 9, "half"),
    ("llama8b", 8300, 5, "half"), ("llama8b_tp2", 3100, 11, "half"), ("llama8b", 1250, 6, "half"),
    ("llama8b", 340, 7, "half"), ("llama8b", 2650, 8, "half"),
    ("llama8b", 210, 4, "one"), ("llama8b_tp2", 150, 15, "one"),
)
X18_ROWS = tuple(r for m, t, b, reg in X18_TWINS
                 for r in ((m, "bf16", 2, t, b, f"q2_{reg}", 1), (m, "bf16", 1, t, b, "q1", 1))) + (
    ("llama8b", "bf16", 2, 2750, 13, "control", 1), ("llama8b_tp2", "bf16", 2, 5300, 30, "control", 1),
    ("llama8b", "bf16", 2, 1450, 18, "control", 1),
)
#: the x18 call's builds in measuring order
X18_BUILD_ORDER = ("xqa_bf16_g4_p16_q1", "xqa_bf16_g4_p16_q2")


def x18_shapes() -> list[dict]:
    """The eighteenth blind grid (X18_ROWS), in measuring order (X18_BUILD_ORDER, then the table's order), pdl on."""
    out = []
    for model, kv, q, t, b, role, split in X18_ROWS:
        hq, hkv = X13_HEADS[model] if model in X13_HEADS else X9_HEADS[model]
        out.append({"family": "xqa", "model": model, "dtype": kv, "heads": hq, "kv_heads": hkv, "head_dim": D,
                    "batch": b, "q_rows": q, "context": t, "page_size": 16, "role": role, "pdl": 1,
                    "split_sms": split})
    order = {n: i for i, n in enumerate(X18_BUILD_ORDER)}
    return sorted(out, key=lambda s: order.get(module_name(s), len(order)))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=170.0)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--build", action="store_true")
    ap.add_argument("--skip-measured", default="",
                    help="a measured CSV of this grid: its rows (shape, role, pdl) are left out (e.g. the x12 rows a "
                         "first call's budget measured, so a second call times the rest)")
    ap.add_argument("--grid", choices=("campaign", "blind", "alone", "s6", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11",
                                       "x12", "x13", "x14", "x15", "x15d", "x16", "x17", "x18", "lock"),
                    default="campaign")
    args = ap.parse_args()
    t0 = time.time()
    os.makedirs(args.out, exist_ok=True)
    import torch

    sys.path.insert(0, os.path.dirname(HERE))   # lab/, for the shared harness
    sys.path.insert(0, HERE)                    # or a copy beside this script
    import harness

    env = harness.Env("cuda:0")
    dev = torch.cuda.get_device_properties(0)
    sms = dev.multi_processor_count
    log = open(os.path.join(args.out, "log.txt"), "a")

    def say(*a):
        msg = " ".join(str(x) for x in a)
        print(msg, flush=True)
        log.write(msg + "\n")
        log.flush()

    try:
        from measure_production_attention import import_flashinfer
        flashinfer, note = import_flashinfer()
        fiv = flashinfer.__version__
        say("flashinfer", fiv, note)
    except Exception as e:   # noqa: BLE001
        fiv = ""
        say("flashinfer import failed (prebuilt modules only):", repr(e)[:300])
    meta = {"script_version": SCRIPT_VERSION, "date": datetime.date.today().isoformat(), "device": dev.name,
            "torch": torch.__version__, "cuda": torch.version.cuda, "flashinfer": fiv}
    say("env", meta, "SMs", sms)
    fcsv = open(os.path.join(args.out, "xqa_attention.csv"), "w", newline="")
    # the x11 scan hands the launcher 1 SM; the x12 grid hands it TensorRT-LLM's split (and labels each row's role)
    cols = COLS + ["split_sms"] if args.grid == "x11" else COLS + ["split_sms", "role", "pdl"] if args.grid in ("x12", "x13", "x14", "x15", "x15d", "x16", "x17", "x18") else COLS
    w = csv.DictWriter(fcsv, fieldnames=cols)
    w.writeheader()
    gcsv = open(os.path.join(args.out, "xqa_attention_grids.csv"), "w", newline="")
    gw = csv.DictWriter(gcsv, fieldnames=["label", "kernel_name", "dur_us", "grid_x", "grid_y", "grid_z", "block_x",
                                          "block_y", "block_z", "regs", "smem"])
    gw.writeheader()
    sem = torch.zeros(1 << 22, dtype=torch.int32, device="cuda")
    ws = torch.zeros(256 << 20, dtype=torch.uint8, device="cuda")
    shp = {"blind": blind_shapes, "alone": alone_shapes, "s6": s6_shapes, "x4": x4_shapes,
           "x5": x5_shapes, "x6": x6_shapes, "x7": x7_shapes, "x8": x8_shapes,
           "x9": x9_shapes, "x10": x10_shapes, "x11": x11_all, "x12": x12_shapes, "x13": x13_shapes, "x14": x14_shapes,
           "x15": x15_shapes, "x15d": x15d_shapes, "x16": x16_shapes, "x17": x17_shapes, "x18": x18_shapes, "lock": lock_shapes}.get(args.grid, shapes)()
    if args.skip_measured:
        with open(args.skip_measured, newline="") as f:
            got = {tuple(str(r[k]) for k in SKIP_KEYS) for r in csv.DictReader(f) if not r.get("note")}
        n0 = len(shp)
        shp = [s for s in shp if tuple(str(s[k]) for k in SKIP_KEYS) not in got]
        say(f"--skip-measured: {n0 - len(shp)} rows already measured, {len(shp)} to time")
    if args.smoke:
        seen, sm = set(), []
        for s in shp:
            if module_name(s) not in seen:
                seen.add(module_name(s))
                sm.append(s)
        shp = sm
    if args.build and fiv:
        try:
            build_all(torch, shp, say)
        except Exception as e:   # noqa: BLE001
            say("JIT build failed:", repr(e)[:3000])
            traceback.print_exc()
    done = fail = 0
    seen_cfg, bad_cfg = set(), {}
    for s in shp:
        if time.time() - t0 > args.budget_s:
            say(f"budget reached after {done} rows")
            break
        name = module_name(s)
        if bad_cfg.get(name, 0) >= 2:
            continue
        try:
            mod = load_module(torch, s, say)
            fn, R = run_xqa(torch, mod, s, int(s.get("split_sms") or sms), sem, ws)
            r = harness.time_graph(env, fn, target_us=250.0, reps=5, max_calls=128)
            lab = f"{name}:{s['model']}:B{s['batch']}:T{s['context']}"
            if name not in seen_cfg or (s["batch"], s["context"]) in ((256, 16), (1, 65536), (16, 4096)):
                seen_cfg.add(name)
                for row in profile_one(torch, fn, lab):
                    gw.writerow(row)
                gcsv.flush()
            w.writerow({**meta, **{k: s[k] for k in cols if k in s}, "kernel": name, "median_us": f"{r['median']:.3f}",
                        "p20_us": f"{r['p20']:.3f}", "p80_us": f"{r['p80']:.3f}", "calls": r["calls"],
                        "kv_copies": R, "note": ""})
            fcsv.flush()
            done += 1
        except Exception as e:   # noqa: BLE001
            fail += 1
            bad_cfg[name] = bad_cfg.get(name, 0) + 1
            w.writerow({**meta, **{k: s[k] for k in cols if k in s}, "kernel": name,
                        "note": f"failed: {repr(e)[:300]}"})
            fcsv.flush()
            if fail <= 4:
                say(f"{s} failed: {repr(e)[:800]}")
                traceback.print_exc()
        finally:
            torch.cuda.empty_cache()
    say(f"rows {done} failed {fail} of {len(shp)}; total {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
