"""Warm and cold K/V at short calls: every shape of the cold grid (COLD_SHAPES) timed twice on the lent GPU, one CSV row
per (shape, mode):

- mode 'warm': the campaign's harness as it timed every committed row (lab/kernels/measure_production_attention.py
  copies_for, lab/kernels/measure_xqa_attention.py xqa_copies: R = min(16, ceil(128 MiB / K/V bytes)) copies of the
  K/V rotated, calls from a ~250 us target): where R x the K/V bytes < ~50 MB (the H100's L2) a call's K/V copy is
  still in the L2 from the previous graph replay.
- mode 'cold': the engine's state. Enough copies of the K/V to span >= 128 MiB (COLD_BYTES) with NO cap on the count,
  and the graph captures a whole multiple of the copies (measure_production_attention.cold_calls), so each call reads a
  copy last touched >= 128 MiB of K/V earlier (from HBM), while the page table / indptr / plan / Q / output (one of
  each, shared by every copy, as an engine step's layers share them) stay warm. Chosen over an L2-flush kernel between
  calls: a flush would also evict the step's metadata (which an engine's layers keep warm) and its own time would
  have to be subtracted from every call.

Families: FlashInfer's CUDA-core decode (fi_decode), its FA2 verification kernel (fi_verify), its MLA kernel (fi_mla),
FlashMLA (flashmla: listed and priced, not measured by default: its wheel does not fit the carry), the XQA port (xqa); short contexts 16-512 at batch 1-64 whose warm-harness footprint is < 50 MB, and controls whose
footprint is >= 128 MiB in both modes (they must agree). Runs from a copy with the two scripts and lab/harness.py beside
it (.dev/<folder>/):

    python3 measure_attention_cold.py --out DIR [--parts fi_decode,xqa,fi_verify,fi_mla] [--budget-s 200] [--list]
    python3 measure_attention_cold.py --out DIR --grid 2 [--budget-s 200]     # cold grid 2: fi_tc (script cold2)
    python3 measure_attention_cold.py --out DIR --grid 3 [--budget-s 200]     # cold grid 3: fi_tc, fi_verify (cold3)
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

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import measure_production_attention as mpa  # noqa: E402

SCRIPT_VERSION = "cold3"   # cold2: --grid 2 (FlashInfer's tensor-core decode, fi_tc); cold3: --grid 3; grid 1 unchanged
COLD_BYTES = 128 << 20
L2_BYTES = 50 << 20
#: (query heads, KV heads) of the models
HEADS = {"llama8b": (32, 8), "llama70b_tp8": (8, 1), "mla16": (16, 1), "mla128": (128, 1), "qwen7b": (28, 4)}


def _shape(family, model, dtype, b, t, q=1, role="short"):
    hq, hkv = HEADS[model]
    mla = family in ("flashmla", "fi_mla")
    return dict(family=family, model=model, heads=hq, kv_heads=hkv, head_dim=576 if mla else 128,
                head_dim_v=512 if mla else "", dtype=dtype, batch=b, q_rows=q, context=t,
                page_size={"flashmla": 64, "fi_mla": 1}.get(family, 16), role=role)


def kv_bytes(s) -> float:
    """One call's K/V bytes as the harness allocates them (whole pages)."""
    page = s["page_size"]
    pool = s["batch"] * math.ceil(s["context"] / page)
    if s["family"] in ("flashmla", "fi_mla"):
        return pool * page * 576 * 2.0
    return pool * page * s["kv_heads"] * s["head_dim"] * 2 * (1.0 if s["dtype"] == "fp8" else 2.0)


def warm_footprint(s) -> float:
    """R x K/V bytes of the campaign harness (R = min(16, ceil(128 MiB / K/V bytes)))."""
    kv = kv_bytes(s)
    return max(1, min(16, math.ceil((128 << 20) / max(kv, 1.0)))) * kv


def cold_shapes() -> list[dict]:
    """The cold grid, grouped by kernel module (shapes in none of the committed CSVs: odd contexts / batches)."""
    out = []

    def add(family, model, dtype, bts, q=1, role="short"):
        out.extend(_shape(family, model, dtype, b, t, q, role) for b, t in bts)

    # CUDA-core decode: Llama-3.1-8B (group 4) bf16 / fp8, Llama-3.1-70B at TP8 (one KV head) bf16
    add("fi_decode", "llama8b", "bf16", [(1, 22), (1, 100), (1, 270), (1, 500), (2, 180), (4, 50), (4, 150), (8, 30),
                                         (8, 90), (16, 40), (32, 18), (64, 12)])
    add("fi_decode", "llama8b", "fp8", [(1, 420), (4, 300), (16, 70), (48, 26)])
    add("fi_decode", "llama70b_tp8", "bf16", [(1, 500), (8, 330), (32, 120), (64, 70)])
    add("fi_decode", "llama8b", "bf16", [(16, 520), (40, 300)], role="control")
    # FA2 verification at 4 query rows: Llama-3.1-8B bf16
    add("fi_verify", "llama8b", "bf16", [(1, 36), (1, 210), (1, 490), (2, 260), (4, 70), (4, 170), (12, 44), (24, 20)],
        q=4)
    add("fi_verify", "llama8b", "bf16", [(16, 530), (60, 280)], q=4, role="control")
    # FlashMLA: DeepSeek-V3's 128 heads at TP8 (16) and TP1 (128), page 64
    for m in ("mla16", "mla128"):
        add("flashmla", m, "bf16", [(1, 70), (1, 500), (4, 140), (8, 260), (24, 60), (64, 36)])
    add("flashmla", "mla16", "bf16", [(64, 520)], role="control")
    add("flashmla", "mla128", "bf16", [(60, 560)], role="control")
    # FlashInfer's MLA kernel (page 1) at the same shapes (the FlashMLA wheel and the FlashInfer wheel together exceed
    # what one device call may carry beside the repository)
    for m in ("mla16", "mla128"):
        add("fi_mla", m, "bf16", [(1, 70), (1, 500), (4, 140), (8, 260), (24, 60), (64, 36)])
    add("fi_mla", "mla16", "bf16", [(64, 520)], role="control")
    add("fi_mla", "mla128", "bf16", [(60, 560)], role="control")
    # the XQA port: Llama-3.1-8B bf16, decode (one module)
    add("xqa", "llama8b", "bf16", [(1, 24), (1, 130), (1, 410), (2, 300), (4, 60), (4, 190), (8, 100), (16, 34),
                                   (32, 20)])
    add("xqa", "llama8b", "bf16", [(16, 540), (64, 260)], role="control")
    return out


def cold_shapes2() -> list[dict]:
    """Cold grid 2: FlashInfer's tensor-core decode (fi_tc: BatchDecodeWithPagedKVCacheWrapper(use_tensor_cores=True),
    the prefill kernel at one query row; SGLang's decode kernel for GQA groups >= 4), page 16, short contexts whose warm
    harness footprint is < 50 MB (both bands), Llama-3.1-8B bf16 / fp8 and Qwen2.5-7B bf16, and controls >= 128 MiB
    both ways. Shapes in no committed fi_tc CSV (checked by predict_attention_cold.py --grid 2)."""
    out = []

    def add(model, dtype, bts, role="short"):
        out.extend(_shape("fi_tc", model, dtype, b, t, 1, role) for b, t in bts)

    add("llama8b", "bf16", [(1, 28), (1, 190), (1, 460), (2, 120), (3, 230), (4, 90), (6, 60), (10, 40), (20, 26),
                            (40, 14), (4, 130), (2, 330)])
    add("llama8b", "fp8", [(1, 610), (5, 150), (24, 30), (12, 100)])
    add("qwen7b", "bf16", [(1, 650), (7, 80), (30, 22), (12, 100)])
    add("llama8b", "bf16", [(24, 420)], role="control")
    add("qwen7b", "bf16", [(64, 170)], role="control")
    return out


def cold_shapes3() -> list[dict]:
    """Cold grid 3: the blind grid of the fp8 decode tile's exposed load (hwmodels.roofline LONE_TILE_LOAD on branch
    cand-lone-tile) against main: FlashInfer's tensor-core decode (fi_tc) bf16 and fp8 K/V and its verification kernel
    (fi_verify, q 2-3) bf16 and fp8, Llama-3.1-8B (32 / 8 heads), Qwen2.5-7B (28 / 4) and Llama-3.1-70B at TP 8 (8 / 1),
    page 16, batch 1-96, context 20-900: launches of a few CTAs, about one per SM and two per SM; two controls. Shapes
    in no committed CSV (checked by predict_attention_cold.py --grid 3)."""
    out = []

    def add(family, model, dtype, bts, q=1, role="short"):
        out.extend(_shape(family, model, dtype, b, t, q, role) for b, t in bts)

    add("fi_tc", "llama8b", "fp8", [(2, 300), (3, 170), (6, 90), (8, 140), (12, 60), (20, 40), (1, 900), (48, 20)])
    add("fi_tc", "qwen7b", "fp8", [(2, 500), (10, 120), (24, 50), (40, 30)])
    add("fi_tc", "llama70b_tp8", "fp8", [(4, 400), (32, 90), (96, 40)])
    add("fi_tc", "llama8b", "bf16", [(2, 420), (5, 110), (14, 70), (28, 28)])
    add("fi_tc", "qwen7b", "bf16", [(3, 300), (18, 60)])
    add("fi_tc", "llama70b_tp8", "bf16", [(16, 200), (64, 60)])
    add("fi_verify", "llama8b", "bf16", [(2, 200), (6, 80), (16, 40)], q=3)
    add("fi_verify", "llama8b", "fp8", [(3, 150), (10, 60)], q=3)
    add("fi_verify", "llama8b", "fp8", [(4, 300)], q=2)
    add("fi_verify", "qwen7b", "fp8", [(6, 100)], q=2)
    add("fi_tc", "llama8b", "fp8", [(36, 700)], role="control")
    add("fi_tc", "qwen7b", "bf16", [(56, 330)], role="control")
    return out


COLS = ["script_version", "date", "device", "torch", "cuda", "flashinfer", "family", "kernel", "model", "dtype", "heads",
        "kv_heads", "head_dim", "head_dim_v", "batch", "q_rows", "context", "page_size", "role", "mode", "median_us",
        "p20_us", "p80_us", "calls", "kv_copies", "kv_bytes", "footprint_bytes", "note"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--parts", default="fi_decode,xqa,fi_verify,fi_mla")
    ap.add_argument("--budget-s", type=float, default=200.0)
    ap.add_argument("--list", action="store_true", help="print the grid and exit (no GPU)")
    ap.add_argument("--grid", type=int, default=1, choices=(1, 2, 3),
                    help="1: cold_shapes(), 2: cold_shapes2() (fi_tc), 3: cold_shapes3() (fi_tc, fi_verify)")
    args = ap.parse_args()
    parts = {1: args.parts.split(","), 2: ["fi_tc"], 3: ["fi_tc", "fi_verify"]}[args.grid]
    grid = {1: cold_shapes, 2: cold_shapes2, 3: cold_shapes3}[args.grid]()
    shp = sorted((s for s in grid if s["family"] in parts), key=lambda s: parts.index(s["family"]))
    if args.list:
        for s in shp:
            print(s["family"], s["model"], s["dtype"], s["batch"], s["context"], s["q_rows"], s["role"],
                  f"{warm_footprint(s) / 1e6:.1f} MB")
        print(len(shp), "shapes")
        return
    t0 = time.time()
    os.makedirs(args.out, exist_ok=True)
    import measure_xqa_attention as mxa
    import torch
    log = open(os.path.join(args.out, "log.txt"), "a")

    def say(*a):
        msg = " ".join(str(x) for x in a)
        print(msg, flush=True)
        log.write(msg + "\n")
        log.flush()

    fi, note = mpa.import_flashinfer()
    dev = torch.cuda.get_device_properties(0)
    sms = dev.multi_processor_count
    meta = {"script_version": SCRIPT_VERSION, "date": datetime.date.today().isoformat(), "device": dev.name,
            "torch": torch.__version__, "cuda": torch.version.cuda, "flashinfer": fi.__version__}
    say("env", meta, "SMs", sms, "L2", getattr(dev, "L2_cache_size", ""), note)
    # every JIT module in one parallel build
    t = time.time()
    try:
        from flashinfer.jit import attention as A
        from flashinfer.jit.core import build_jit_specs
        from flashinfer.jit.xqa import gen_xqa_module
        bf, f8, i32 = torch.bfloat16, torch.float8_e4m3fn, torch.int32
        specs = []
        if "fi_decode" in parts:
            specs += [A.gen_batch_decode_module(bf, bf, bf, i32, 128, 128, 0, False, False),
                      A.gen_batch_decode_module(bf, f8, bf, i32, 128, 128, 0, False, False)]
        if "fi_verify" in parts or "fi_tc" in parts:
            specs.append(A.gen_batch_prefill_module("fa2", bf, bf, bf, i32, 128, 128, 0, False, False, False))
        if "fi_mla" in parts:
            specs.append(A.gen_batch_mla_module("fa3", bf, bf, bf, i32, 512, 64, False))
        seen = set()
        for s in shp:
            if s["family"] == "xqa" and mxa.module_name(s) not in seen:
                seen.add(mxa.module_name(s))
                kvd = f8 if s["dtype"] == "fp8" else bf
                specs.append(gen_xqa_module(bf, kvd, s["page_size"], 128, s["heads"] // s["kv_heads"], False, bf,
                                            s["q_rows"]))
        build_jit_specs(specs, verbose=False)
        say(f"built {len(specs)} JIT modules in {time.time() - t:.0f} s")
    except Exception as e:   # noqa: BLE001
        say("JIT build failed:", repr(e)[:2000])
        traceback.print_exc()
    fm = None
    if "flashmla" in parts:
        try:
            import flash_mla as fm
        except Exception as e:   # noqa: BLE001
            say("flash_mla import failed:", repr(e)[:600])
    sys.path.insert(0, os.path.dirname(HERE))
    import harness
    env = harness.Env("cuda:0")
    ws = torch.zeros(1 << 30, dtype=torch.uint8, device="cuda")
    sem = torch.zeros(1 << 22, dtype=torch.int32, device="cuda")
    xws = torch.zeros(256 << 20, dtype=torch.uint8, device="cuda")
    fcsv = open(os.path.join(args.out, "attention_cold.csv"), "w", newline="")
    w = csv.DictWriter(fcsv, fieldnames=COLS)
    w.writeheader()
    done = fail = 0
    for s in shp:
        if time.time() - t0 > args.budget_s:
            say(f"budget reached after {done} rows")
            break
        for mode in ("warm", "cold"):
            mpa.COLD_BYTES = COLD_BYTES if mode == "cold" else 0
            kern = ""
            try:
                f = s["family"]
                if f in ("fi_decode", "fi_verify", "fi_tc"):
                    fn, R, _ = mpa.run_fi_paged(torch, fi, s, ws, f != "fi_decode", f == "fi_verify")
                elif f == "fi_mla":
                    fn, R, _ = mpa.run_fi_mla(torch, fi, s, ws)
                elif f == "flashmla":
                    if fm is None:
                        raise RuntimeError("no flash_mla")
                    fn, R, _ = mpa.run_flashmla(torch, fm, s)
                elif f == "xqa":
                    kern = mxa.module_name(s)
                    fn, R = mxa.run_xqa(torch, mxa.load_module(torch, s, say), s, sms, sem, xws)
                else:
                    raise RuntimeError(f"unknown family {f}")
                if mode == "cold":
                    n = mpa.cold_calls(R)
                    r = harness.time_graph(env, fn, target_us=1e12, reps=5, max_calls=n)
                else:
                    r = harness.time_graph(env, fn, target_us=250.0, reps=5, max_calls=128)
                kv = kv_bytes(s)
                w.writerow({**meta, **{k: s.get(k, "") for k in COLS if k in s}, "kernel": kern, "mode": mode,
                            "median_us": f"{r['median']:.3f}", "p20_us": f"{r['p20']:.3f}",
                            "p80_us": f"{r['p80']:.3f}", "calls": r["calls"], "kv_copies": R, "kv_bytes": int(kv),
                            "footprint_bytes": int(min(R, r["calls"]) * kv), "note": ""})
                done += 1
            except Exception as e:   # noqa: BLE001
                fail += 1
                w.writerow({**meta, **{k: s.get(k, "") for k in COLS if k in s}, "mode": mode,
                            "note": f"failed: {repr(e)[:300]}"})
                if fail <= 4:
                    say(f"{mode} {s} failed: {repr(e)[:800]}")
                    traceback.print_exc()
            finally:
                fcsv.flush()
                torch.cuda.empty_cache()
    mpa.COLD_BYTES = 0
    say(f"rows {done} failed {fail} of {2 * len(shp)}; total {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
