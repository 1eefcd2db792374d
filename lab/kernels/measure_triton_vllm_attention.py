"""Measure vLLM's Triton unified attention (decode and verification rows) on the lent GPU, CUDA-graph timing, one CSV
row per shape, and one launch profile (grid, block, registers, shared memory from torch.profiler) per configuration.

The kernel runs from a copy kept outside the repository (ext/vllm_unified_attention.py beside this script on the
device: vllm-project/vllm vllm/attention/ops/triton_unified_attention.py @ 001ceb3e98e7a19ebe33f542a368fa73bf6c76ad,
measured, never committed), launched as vLLM's TRITON_ATTN backend launches it (vllm/v1/attention/backends/
triton_attn.py at the same commit): K/V cache (blocks, 2, 16, Hkv, d) unbound into K and V, fp8 K/V as
float8_e4m3fn with per-layer scales, bf16 query, cu_seqlens_q / seq_lens int32, a block table of randomly permuted
pages. Timing: the harness of measure_production_attention.py (R K/V copies so that R x the K/V bytes >= 128 MiB,
calls captured back to back in a CUDA graph, a spin before every timed replay, median of the replays); every
configuration's Triton JIT is compiled by an untimed call before timing.

    python3 measure_triton_vllm_attention.py --out DIR [--budget-s 100] [--smoke] [--grid blind]

--grid blind: a second grid in none of the first grid's shapes (blind_shapes), priced and committed before it is
measured (lab/kernels/predict_triton_vllm_blind.py); its CSVs are named triton_vllm_blind_*.
"""
from __future__ import annotations

import argparse
import csv
import datetime
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT_VERSION = 2
#: heads (query, KV), head dim 128: Llama-3.1-8B, Llama-3.1-70B at TP8, Qwen2.5-7B
HEADS = {"llama8b": (32, 8), "llama70b_tp8": (8, 1), "qwen7b": (28, 4), "qwen72b": (64, 8)}
PAGE = 16
MAX_TOKENS = 1 << 22


def shapes() -> list[dict]:
    """The grid, the fit set first (Llama-3.1-8B decode, context 1K-16K, batch <= 64, bf16 and fp8: chosen before any
    row was measured), then the held-out rows."""
    rows, seen = [], set()

    def add(model, kv, ts, bs, q=1):
        hq, hkv = HEADS[model]
        for t in ts:
            for b in bs:
                key = (model, kv, q, b, t)
                if b * t > MAX_TOKENS or key in seen:
                    continue
                seen.add(key)
                rows.append(dict(family="triton_vllm", model=model, heads=hq, kv_heads=hkv, head_dim=128, dtype=kv,
                                 batch=b, q_rows=q, context=t, page_size=PAGE))

    for kv in ("bf16", "fp8"):                                       # the fit set
        add("llama8b", kv, (1024, 4096, 16384), (1, 4, 8, 16, 64))
    n_fit = len(rows)
    add("llama8b", "bf16", (16, 256, 2048, 65536, 131072), (1, 16, 64, 256, 512))   # held out: Llama-3.1-8B
    add("llama8b", "bf16", (1024, 4096, 16384), (256, 512))
    add("llama8b", "bf16", (1024, 8192), (12, 13, 14))               # the 3D / 2D switch (13 -> 3D, 14 -> 2D)
    add("llama8b", "fp8", (16, 256, 2048, 65536), (1, 16, 256))
    add("llama8b", "fp8", (4096,), (512,))
    for model in ("llama70b_tp8", "qwen7b"):                          # held out: other heads, decode
        add(model, "bf16", (16, 256, 4096, 16384, 131072), (1, 16, 64, 512))
        add(model, "fp8", (16, 256, 4096, 65536), (1, 16, 256))
    for model in ("llama8b", "llama70b_tp8", "qwen7b"):              # held out: verification rows
        for q in (2, 4):
            add(model, "bf16", (256, 4096, 65536), (1, 16, 256), q=q)
        add(model, "fp8", (256, 65536), (1, 256), q=4)
    # held-out rows round-robin over (model, K/V dtype, query rows), so that a budget cut shortens every group
    rank, count = [], {}
    for r in rows[n_fit:]:
        g = (r["model"], r["dtype"], r["q_rows"])
        rank.append(count.get(g, 0))
        count[g] = rank[-1] + 1
    held = [r for _, r in sorted(zip(rank, rows[n_fit:], strict=True), key=lambda x: x[0])]
    return rows[:n_fit] + held


#: the blind grid's contexts and batches per regime (none in shapes())
BLIND_CTX = ((40, 120, 200), (600, 1500, 3000, 6000), (20000, 48000, 100000))
BLIND_BATCH = ((1, 2, 3), (10, 24, 40), (150, 300, 700))


def blind_shapes() -> list[dict]:
    """The blind grid: heads 32/8, 8/1, 28/4 and Qwen2.5-72B's 64/8 (head dim 128), bf16 and fp8 K/V; for every
    (model, K/V dtype, query rows) group every (context class, batch class) cell, the context and batch of a cell
    picked round-robin over the group (two picks per cell at q = 1, one at q = 2 or 3, alternating), skipping
    B x T > MAX_TOKENS (then the cell's smallest batch)."""
    rows, seen = [], set()
    gi = 0
    for model in ("llama8b", "llama70b_tp8", "qwen7b", "qwen72b"):
        hq, hkv = HEADS[model]
        for kv in ("bf16", "fp8"):
            for qv in ("1", "23"):
                picks = 2 if qv == "1" else 1
                for ri, cs in enumerate(BLIND_CTX):
                    for bi, bs in enumerate(BLIND_BATCH):
                        for j in range(picks):
                            t = cs[(gi + bi + 2 * j) % len(cs)]
                            b = bs[(gi + ri + j) % len(bs)]
                            if b * t > MAX_TOKENS:
                                b = bs[0]
                            if b * t > MAX_TOKENS:
                                t = cs[0]
                            if b * t > MAX_TOKENS:
                                continue
                            q = 1 if qv == "1" else 2 + (ri + bi + gi) % 2
                            key = (model, kv, q, b, t)
                            if key in seen:
                                continue
                            seen.add(key)
                            rows.append(dict(family="triton_vllm", model=model, heads=hq, kv_heads=hkv, head_dim=128,
                                             dtype=kv, batch=b, q_rows=q, context=t, page_size=PAGE))
                gi += 1
    return rows


def run_vllm(torch, mod, s):
    import math

    from measure_production_attention import copies_for

    dev = "cuda"
    B, T, hq, hkv, d, q = s["batch"], s["context"], s["heads"], s["kv_heads"], s["head_dim"], s["q_rows"]
    fp8 = s["dtype"] == "fp8"
    kvd = torch.float8_e4m3fn if fp8 else torch.bfloat16
    pages_per_seq = -(-T // PAGE)
    npages = B * pages_per_seq
    kv_bytes = npages * PAGE * hkv * d * 2 * (1 if fp8 else 2)
    R = copies_for(kv_bytes)
    caches = []
    for _ in range(R):
        shape = (npages, 2, PAGE, hkv, d)
        c = torch.randn(shape, device=dev, dtype=torch.bfloat16).to(kvd) if kv_bytes <= (1 << 30) else \
            torch.empty(shape, device=dev, dtype=kvd)
        caches.append(c.unbind(1))
    bt = torch.randperm(npages, device=dev, dtype=torch.int64).to(torch.int32).view(B, pages_per_seq)
    cu = torch.arange(0, B + 1, device=dev, dtype=torch.int32) * q
    seq_lens = torch.full((B,), T, device=dev, dtype=torch.int32)
    qt = torch.randn((B * q, hq, d), device=dev, dtype=torch.bfloat16)
    out = torch.empty_like(qt)
    ks = torch.ones((B, hkv), device=dev, dtype=torch.float32)
    bufs = mod.segment_buffers(qt)
    path = []

    def fn(i):
        k, v = caches[i % R]
        path.append(mod.unified_attention(qt, k, v, out, cu, q, seq_lens, T, 1.0 / math.sqrt(d), bt, ks, ks,
                                          bufs=bufs))

    fn(0)                       # compile this configuration's kernels before timing
    torch.cuda.synchronize()
    return fn, R, path[-1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=100.0)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--grid", default="main", choices=("main", "blind"))
    args = ap.parse_args()
    t0 = time.time()
    os.makedirs(args.out, exist_ok=True)
    sys.path.insert(0, HERE)
    sys.path.insert(0, os.path.join(HERE, "ext"))
    import measure_production_attention as P
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
    fcsv = open(os.path.join(args.out, "triton_vllm_blind.csv" if args.grid == "blind" else "triton_vllm_attention.csv"), "w", newline="")
    w = csv.DictWriter(fcsv, fieldnames=P.COLS)
    w.writeheader()
    gcsv = open(os.path.join(args.out, "triton_vllm_blind_grids.csv" if args.grid == "blind" else "triton_vllm_attention_grids.csv"), "w", newline="")
    gw = csv.DictWriter(gcsv, fieldnames=["label", "kernel_name", "dur_us", "grid_x", "grid_y", "grid_z", "block_x",
                                          "block_y", "block_z", "regs", "smem"])
    gw.writeheader()
    shp = blind_shapes() if args.grid == "blind" else shapes()
    shp = shp[:4] if args.smoke else shp
    done = fail = 0
    seen = set()
    for s in shp:
        if time.time() - t0 > args.budget_s:
            say(f"budget reached after {done} rows")
            break
        try:
            fn, R, path = run_vllm(torch, mod, s)
            med, p20, p80, calls = P.time_graph(torch, fn)
            cfg = (s["model"], s["dtype"], s["q_rows"], path)
            if cfg not in seen:
                seen.add(cfg)
                lab = f"triton_vllm:{s['model']}:{s['dtype']}:q{s['q_rows']}:{path}:B{s['batch']}:T{s['context']}"
                for r in P.profile_one(torch, fn, lab):
                    gw.writerow(r)
                gcsv.flush()
            w.writerow({**meta, **{k: s.get(k, "") for k in P.COLS if k in s}, "kernel": path,
                        "head_dim_v": s["head_dim"], "median_us": f"{med:.3f}", "p20_us": f"{p20:.3f}",
                        "p80_us": f"{p80:.3f}", "calls": calls, "kv_copies": R, "plan": path, "note": ""})
            fcsv.flush()
            done += 1
        except Exception as e:   # noqa: BLE001
            fail += 1
            w.writerow({**meta, **{k: s.get(k, "") for k in P.COLS if k in s}, "note": f"failed: {repr(e)[:300]}"})
            fcsv.flush()
            if fail <= 3:
                say(f"{s} failed: {repr(e)[:600]}")
                traceback.print_exc()
            if fail >= 6 and done == 0:
                say("giving up")
                break
        finally:
            torch.cuda.empty_cache()
    say(f"rows {done} failed {fail} of {len(shp)} in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
