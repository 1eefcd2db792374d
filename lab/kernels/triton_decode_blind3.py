"""The third blind grid of the two Triton decode families and a K/V page-layout diagnosis, measured on the lent GPU in
one call:

  triton_vllm  vLLM's Triton unified attention (ext/vllm_unified_attention.py: vllm-project/vllm
               vllm/attention/ops/triton_unified_attention.py @ 001ceb3e98e7a19ebe33f542a368fa73bf6c76ad, a copy kept
               outside the repository, launched as lab/kernels/measure_triton_vllm_attention.py run_vllm does)
  sgl_triton   SGLang's Triton grouped decode kernel (ext/sgl_decode_attention.py: sgl-project/sglang 0.5.6
               python/sglang/srt/layers/attention/triton_ops/decode_attention.py, a copy kept outside the repository,
               launched as lab/kernels/measure_production_attention.py run_sgl_triton does)

Rows (column row_role):
  diagnosis  FIT / DIAGNOSIS rows, not blind: lone vLLM verification programs (Llama-3.1-8B heads 32/8, q 2, batch 1
             and 4; context 4096 / 32768 / 90000 (and 16384 / 65536 at batch 1); bf16, and fp8 at 90000; Qwen2.5-72B
             heads 64/8 bf16 at 90000) with the block table laid out four ways
             (column layout):
               perm     the harness's layout: the batch's pages randomly permuted over a pool of just the batch's pages
                        (R copies of the pool so that R x the K/V bytes >= 128 MiB, rotated call after call)
               inorder  the same pool, every sequence's pages contiguous and in order
               perm2m   the same pool, pages permuted only inside aligned 2 MiB windows (the same 2 MiB translation
                        pages as inorder, the DRAM order of perm inside each)
               pool24g  the batch's pages drawn at random from a 24 GiB pool (an engine's K/V pool is most of the GPU's
                        memory), R different draws rotated as the copies are
  blind      the third blind grid (blind3_shapes): shapes in none of the committed CSVs of either family, priced by
             main's model and the new one before this measurement (lab/kernels/predict_triton_decode_blind3.py)

    python3 triton_decode_blind3.py --out DIR [--budget-s 100] [--smoke] [--only diagnosis|blind]   (beside ext/)
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
SCRIPT_VERSION = "blind3"
VLLM_HEADS = {"llama8b": (32, 8), "llama70b_tp8": (8, 1), "qwen7b": (28, 4), "qwen72b": (64, 8)}
SGL_HEADS = {"llama8b": (32, 8), "llama70b": (64, 8), "qwen7b": (28, 4)}
PAGE = 16
POOL_BYTES = 24 << 30
LAYOUTS = ("perm", "inorder", "perm2m", "pool24g")


def _row(family, model, kv, b, q, t, role="blind", layout="perm"):
    heads = VLLM_HEADS if family == "triton_vllm" else SGL_HEADS
    hq, hkv = heads[model]
    return dict(family=family, model=model, heads=hq, kv_heads=hkv, head_dim=128, dtype=kv, batch=b, q_rows=q,
                context=t, page_size=PAGE if family == "triton_vllm" else 1, row_role=role, layout=layout)


def diagnosis_shapes() -> list[dict]:
    """The page-layout diagnosis (module docstring): fit / diagnosis rows, never blind."""
    rows = []
    for t in (90000, 32768, 4096):
        for b in (1, 4):
            for lay in LAYOUTS:
                rows.append(_row("triton_vllm", "llama8b", "bf16", b, 2, t, "diagnosis", lay))
    for lay in LAYOUTS:
        rows.append(_row("triton_vllm", "llama8b", "fp8", 1, 2, 90000, "diagnosis", lay))
    for t in (65536, 16384):
        for lay in LAYOUTS:
            rows.append(_row("triton_vllm", "llama8b", "bf16", 1, 2, t, "diagnosis", lay))
    for lay in ("perm", "inorder", "pool24g"):     # the G 8 binary (Qwen2.5-72B heads 64/8)
        rows.append(_row("triton_vllm", "qwen72b", "bf16", 1, 2, 90000, "diagnosis", lay))
    return rows


def blind3_shapes() -> list[dict]:
    """The third blind grid: the regimes main's model misses (lone verification programs at context 76K-110K, fp8
    decode at context <= 256, fp8 verification at batch 320-704 with two q blocks per sequence) and controls from
    regimes that pass, both families; contexts and batches in none of the committed grids."""
    V, S = "triton_vllm", "sgl_triton"
    r = []
    # lone verification programs, long contexts (batch 1-5, q 2-4), bf16 and fp8; lone decode controls
    for i, (m, kv, b, q, t) in enumerate((
            ("llama8b", "bf16", 1, 3, 80000), ("llama8b", "bf16", 3, 2, 110000), ("llama8b", "fp8", 4, 4, 96000),
            ("llama70b_tp8", "bf16", 3, 3, 76000), ("llama70b_tp8", "fp8", 1, 2, 110000),
            ("qwen7b", "bf16", 4, 2, 96000), ("qwen7b", "fp8", 3, 3, 80000), ("qwen72b", "bf16", 2, 4, 84000),
            ("qwen72b", "fp8", 1, 3, 96000), ("llama8b", "bf16", 2, 4, 44000), ("qwen72b", "bf16", 3, 2, 24000),
            ("llama70b_tp8", "bf16", 2, 2, 52000))):
        r.append(_row(V, m, kv, b, q, t))
    for m, kv, b, t in (("llama8b", "bf16", 3, 84000), ("qwen7b", "fp8", 4, 110000), ("qwen72b", "bf16", 1, 96000),
                        ("llama70b_tp8", "fp8", 2, 80000)):
        r.append(_row(V, m, kv, b, 1, t))
    # decode at context <= 256: fp8 (the regime that misses) and bf16 controls
    for m, kv, b, t in (("llama8b", "fp8", 1, 96), ("llama8b", "fp8", 40, 136), ("llama8b", "fp8", 640, 200),
                        ("llama70b_tp8", "fp8", 3, 48), ("llama70b_tp8", "fp8", 24, 200), ("llama70b_tp8", "fp8", 448, 96),
                        ("qwen7b", "fp8", 4, 200), ("qwen7b", "fp8", 256, 136), ("qwen72b", "fp8", 3, 136),
                        ("qwen72b", "fp8", 40, 48), ("llama8b", "bf16", 3, 136), ("qwen7b", "bf16", 40, 96),
                        ("qwen72b", "bf16", 640, 48)):
        r.append(_row(V, m, kv, b, 1, t))
    # verification at batch 320-704, two q blocks per sequence (q 3-4 of G 7 / 8 heads), fp8 and bf16 controls
    for m, kv, b, q, t in (("qwen72b", "fp8", 512, 3, 120), ("qwen72b", "fp8", 320, 4, 700), ("qwen72b", "fp8", 448, 3, 1800),
                           ("llama70b_tp8", "fp8", 640, 4, 3500), ("llama70b_tp8", "fp8", 448, 3, 136),
                           ("qwen7b", "fp8", 704, 3, 700), ("qwen7b", "fp8", 320, 4, 64), ("llama8b", "fp8", 512, 4, 1800),
                           ("qwen72b", "bf16", 448, 4, 700), ("llama70b_tp8", "bf16", 704, 3, 1800),
                           ("llama8b", "bf16", 320, 3, 120)):
        r.append(_row(V, m, kv, b, q, t))
    # controls from regimes that pass: middle contexts, mid batches
    for m, kv, b, q, t in (("llama8b", "bf16", 24, 1, 7000), ("qwen7b", "fp8", 56, 2, 2800), ("llama70b_tp8", "bf16", 10, 3, 9000),
                           ("qwen72b", "fp8", 24, 1, 1400), ("llama8b", "fp8", 96, 3, 3500), ("qwen7b", "bf16", 160, 1, 1400)):
        r.append(_row(V, m, kv, b, q, t))
    # sgl_triton (decode only): the same regimes
    for m, kv, b, t in (("llama8b", "bf16", 1, 96000), ("llama70b", "fp8", 3, 80000), ("qwen7b", "bf16", 4, 110000),
                        ("llama8b", "fp8", 2, 136), ("llama70b", "fp8", 40, 96), ("qwen7b", "fp8", 640, 200),
                        ("llama8b", "bf16", 448, 48), ("llama70b", "bf16", 3, 200), ("qwen7b", "bf16", 24, 7000),
                        ("llama8b", "fp8", 56, 2800), ("llama70b", "bf16", 160, 1400), ("qwen7b", "fp8", 10, 20000)):
        r.append(_row(S, m, kv, b, 1, t))
    return r


def run_vllm_layout(torch, mod, s, copies_for):
    """run_vllm (measure_triton_vllm_attention.py) with the block table laid out as s['layout'] says."""
    dev = "cuda"
    B, T, hq, hkv, d, q = s["batch"], s["context"], s["heads"], s["kv_heads"], s["head_dim"], s["q_rows"]
    fp8 = s["dtype"] == "fp8"
    kvd = torch.float8_e4m3fn if fp8 else torch.bfloat16
    pps = -(-T // PAGE)
    npages = B * pps
    page_bytes = PAGE * hkv * d * 2 * (1 if fp8 else 2)          # one block: K and V of 16 tokens
    kv_bytes = npages * page_bytes
    R = copies_for(kv_bytes)
    lay = s.get("layout", "perm")
    caches, bts = [], []
    if lay == "pool24g":
        pool = POOL_BYTES // page_bytes
        c = torch.empty((pool, 2, PAGE, hkv, d), device=dev, dtype=kvd)
        c.view(torch.uint8).zero_()
        kv = c.unbind(1)
        for _ in range(R):
            caches.append(kv)
            bts.append(torch.randperm(pool, device=dev)[:npages].to(torch.int32).view(B, pps))
    else:
        for _ in range(R):
            shape = (npages, 2, PAGE, hkv, d)
            c = torch.randn(shape, device=dev, dtype=torch.bfloat16).to(kvd) if kv_bytes <= (1 << 30) else \
                torch.empty(shape, device=dev, dtype=kvd).view(torch.uint8).zero_().view(kvd)
            caches.append(c.unbind(1))
        if lay == "perm":
            bt = torch.randperm(npages, device=dev, dtype=torch.int64)
        elif lay == "inorder":
            bt = torch.arange(npages, device=dev, dtype=torch.int64)
        elif lay == "perm2m":
            w = max(1, (2 << 20) // page_bytes)
            idx = torch.arange(npages, device=dev, dtype=torch.int64)
            key = (idx // w) * npages + torch.randperm(npages, device=dev, dtype=torch.int64) % npages
            bt = torch.argsort(key)
        else:
            raise ValueError(f"layout {lay!r}: allowed {LAYOUTS}")
        bts = [bt.to(torch.int32).view(B, pps)] * R
    cu = torch.arange(0, B + 1, device=dev, dtype=torch.int32) * q
    seq_lens = torch.full((B,), T, device=dev, dtype=torch.int32)
    qt = torch.randn((B * q, hq, d), device=dev, dtype=torch.bfloat16)
    out = torch.empty_like(qt)
    ks = torch.ones((B, hkv), device=dev, dtype=torch.float32)
    bufs = mod.segment_buffers(qt)
    path = []

    def fn(i):
        k, v = caches[i % R]
        path.append(mod.unified_attention(qt, k, v, out, cu, q, seq_lens, T, 1.0 / math.sqrt(d), bts[i % R], ks, ks,
                                          bufs=bufs))

    fn(0)
    torch.cuda.synchronize()
    return fn, R, path[-1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=100.0)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--only", default="", choices=("", "diagnosis", "blind"))
    ap.add_argument("--list", action="store_true", help="print the rows and exit (no GPU)")
    args = ap.parse_args()
    shp = [s for s in diagnosis_shapes() + blind3_shapes() if not args.only or s["row_role"] == args.only]
    # SGLang's kernel addresses the token-level K/V buffer with 32-bit offsets (triton_decode_blind2.py)
    shp = [s for s in shp if s["family"] != "sgl_triton" or s["batch"] * s["context"] * s["kv_heads"] * s["head_dim"]
           < 2 ** 31]
    if args.smoke:
        shp = shp[:2] + [s for s in shp if s["row_role"] == "blind"][:2] + \
            [s for s in shp if s["family"] == "sgl_triton"][:2]
    if args.list:
        for s in shp:
            print(s)
        print(len(shp), "rows")
        return
    t0 = time.time()
    os.makedirs(args.out, exist_ok=True)
    sys.path.insert(0, HERE)
    sys.path.insert(0, os.path.join(HERE, "ext"))
    import measure_production_attention as P
    import sgl_decode_attention as sgl
    import torch
    import triton
    import vllm_unified_attention as mod

    dev = torch.cuda.get_device_properties(0)
    meta = {"script_version": SCRIPT_VERSION, "date": datetime.date.today().isoformat(), "device": dev.name,
            "torch": torch.__version__, "cuda": torch.version.cuda, "triton": triton.__version__, "flashinfer": ""}
    log = open(os.path.join(args.out, "log.txt"), "a")

    def say(*a):
        msg = " ".join(str(x) for x in a)
        print(msg, flush=True)
        log.write(msg + "\n")
        log.flush()

    say("env", meta, "SMs", dev.multi_processor_count)
    cols = P.COLS + ["row_role", "layout"]
    fcsv = open(os.path.join(args.out, "triton_decode_blind3.csv"), "w", newline="")
    w = csv.DictWriter(fcsv, fieldnames=cols)
    w.writeheader()
    gcsv = open(os.path.join(args.out, "triton_decode_blind3_grids.csv"), "w", newline="")
    gw = csv.DictWriter(gcsv, fieldnames=["label", "kernel_name", "dur_us", "grid_x", "grid_y", "grid_z", "block_x",
                                          "block_y", "block_z", "regs", "smem"])
    gw.writeheader()
    done = fail = 0
    seen = set()
    for s in shp:
        if time.time() - t0 > args.budget_s:
            say(f"budget reached after {done} rows")
            break
        keep = {k: s.get(k, "") for k in cols if k in s}
        try:
            if s["family"] == "triton_vllm":
                fn, R, path = run_vllm_layout(torch, mod, s, P.copies_for)
                cfg = (s["family"], s["model"], s["dtype"], s["q_rows"], path)
            else:
                fn, R, path = P.run_sgl_triton(torch, sgl, s, dev.multi_processor_count)
                fn(0)
                torch.cuda.synchronize()
                cfg = (s["family"], s["model"], s["dtype"])
            med, p20, p80, calls = P.time_graph(torch, fn)
            if cfg not in seen:
                seen.add(cfg)
                lab = f"{s['family']}:{s['model']}:{s['dtype']}:q{s['q_rows']}:{path}:B{s['batch']}:T{s['context']}"
                for r in P.profile_one(torch, fn, lab):
                    gw.writerow(r)
                gcsv.flush()
            w.writerow({**meta, **keep, "kernel": path, "head_dim_v": s["head_dim"], "median_us": f"{med:.3f}",
                        "p20_us": f"{p20:.3f}", "p80_us": f"{p80:.3f}", "calls": calls, "kv_copies": R, "plan": path,
                        "note": ""})
            fcsv.flush()
            done += 1
            if s["row_role"] == "diagnosis":
                tiles = math.ceil(s["context"] / 32)
                say(f"diag {s['dtype']} B{s['batch']} T{s['context']} {s['layout']:8s} {med:9.1f} us "
                    f"{med / tiles:.3f} us/tile")
        except Exception as e:   # noqa: BLE001
            fail += 1
            w.writerow({**meta, **keep, "note": f"failed: {repr(e)[:300]}"})
            fcsv.flush()
            if fail <= 3:
                say(f"{s} failed: {repr(e)[:600]}")
                traceback.print_exc()
            if fail >= 6 and done == 0:
                say("giving up")
                break
        finally:
            fn = None
            torch.cuda.empty_cache()
    say(f"rows {done} failed {fail} of {len(shp)} in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
