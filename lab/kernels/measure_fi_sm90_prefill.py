"""Prefill rows of FlashInfer's own Hopper kernel (its "fa3" backend, include/flashinfer/attention/hopper/,
flashinfer-python 0.6.4 JIT-built on the device), as the engines' FlashInfer backends run it on sm_90 with a bf16 K/V
cache (simulator/kernels/fi_sm90.py says where each engine calls it):

  fi_sm90_ragged  BatchPrefillWithRaggedKVCacheWrapper(ws, "NHD", backend="fa3"): contiguous K / V of every request back
                  to back (kv_indptr), causal; SGLang's flashinfer backend's new tokens of an extend batch
  fi_sm90_paged   BatchPrefillWithPagedKVCacheWrapper(ws, "NHD", backend="fa3"): pages of 16 tokens through a random
                  page table, causal; vLLM's FLASHINFER backend's chunked prefill (backend "auto" resolves to "fa3" on
                  sm_90 at bf16)
  fi_sm90_mla     the ragged wrapper at head_dim_qk 192 / head_dim_vo 128, query heads = KV heads (DeepSeek's
                  non-absorbed prefill heads at TP 1-8): SGLang's flashinfer MLA backend's prefix-free extend

Each wrapper is planned once per shape WITHOUT a CUDA graph (as an engine plans a prefill batch), then its run() is timed
by the lab harness's CUDA-graph timer (harness.time_graph: calls back to back in a graph, a spin before each timed
replay). A row is B requests of P new tokens (q_rows) after O cached ones (prefix), T = O + P keys each; causal bottom-
right aligned. Cold K/V: call i reads K/V copy (ragged) or page table (paged) i % R, R copies spanning >= 256 MiB.
Every third shape's kernels are recorded (torch.profiler: name, grid, block, registers, duration); a reference check
(fp32 softmax attention) on rows small enough.

`shapes()` imports without torch: lab/kernels/predict_fi_sm90_prefill.py prices the same list before the run. The role
column, fixed before any row was measured: 'fit' = Llama-3.1-8B's heads (32 / 8) at head dim 128, 'held_out' = the
other models' heads and every MLA row.

    python3 measure_fi_sm90_prefill.py --out DIR [--budget-s 300] [--smoke] [--grid first|blind2] [--parts ragged,paged,mla]
"""
from __future__ import annotations

import argparse
import csv
import datetime
import math
import os
import sys
import time

SCRIPT_VERSION = 2   # 2: --grid blind2 (BLIND2_*)
HERE = os.path.dirname(os.path.abspath(__file__))
PAGE = 16
#: query / KV heads per GPU
HEADS = {"llama8b": (32, 8), "qwen7b": (28, 4), "llama70b_tp8": (8, 1), "qwen14b": (40, 8),
         "dsv3_tp8": (16, 16), "dsv3_tp4": (32, 32), "dsv3_tp2": (64, 64), "dsv3_tp1": (128, 128),
         # blind grid 2: Llama-3.2-3B, Qwen2.5-32B at TP 2, Llama-3.1-70B at TP 4, Yi-34B; Kimi-K2 (64 heads) at TP 1 / 4
         "llama3b": (24, 8), "qwen32b_tp2": (20, 4), "llama70b_tp4": (16, 2), "yi34b": (56, 8),
         "kimik2_tp1": (64, 64), "kimik2_tp4": (16, 16)}
#: grid 1 (B, P) of the ragged rows (O = 0: SGLang's ragged call holds only the new tokens) and (B, P, O) of the paged
RAGGED_FIT = [(1, 256), (1, 640), (1, 1024), (1, 4096), (1, 16384), (4, 512), (4, 2048), (16, 256), (2, 8192),
              (8, 1000)]
RAGGED_HELD = [(1, 1024), (1, 8192), (4, 2048), (16, 256), (3, 700)]
PAGED_FIT = [(1, 640, 0), (1, 4096, 0), (4, 1024, 0), (1, 512, 4096), (1, 2048, 16384), (1, 8192, 8192),
             (1, 2048, 65536), (2, 1024, 2048), (1, 512, 32768)]
PAGED_HELD = [(1, 1024, 0), (4, 2048, 0), (1, 2048, 16384), (1, 512, 32768), (2, 1024, 2048)]
MLA_ROWS = [(1, 512), (1, 2048), (1, 8192), (4, 1024), (2, 4096), (1, 16384)]
COLS = ["script_version", "date", "device", "driver", "torch", "cuda", "library", "family", "model", "dtype", "heads",
        "kv_heads", "head_dim", "head_dim_v", "batch", "q_rows", "prefix", "context", "page_size", "causal", "role",
        "median_us", "p20_us", "p80_us", "calls", "kv_copies", "note"]


def _row(family, model, b, p, o, role, d=128, dv=128):
    hq, hkv = HEADS[model]
    return dict(family=family, model=model, dtype="bf16", heads=hq, kv_heads=hkv, head_dim=d, head_dim_v=dv, batch=b,
                q_rows=p, prefix=o, context=o + p, page_size=PAGE if family == "fi_sm90_paged" else 0, causal=1,
                role=role)


def shapes() -> list[dict]:
    """Grid 1 (the first look), grouped by kernel module: head dim 128 (ragged, paged), then 192 / 128."""
    out = []
    for b, p in RAGGED_FIT:
        out.append(_row("fi_sm90_ragged", "llama8b", b, p, 0, "fit"))
    for m in ("qwen7b", "llama70b_tp8", "qwen14b"):
        for b, p in RAGGED_HELD:
            out.append(_row("fi_sm90_ragged", m, b, p, 0, "held_out"))
    for b, p, o in PAGED_FIT:
        out.append(_row("fi_sm90_paged", "llama8b", b, p, o, "fit"))
    for m in ("qwen7b", "llama70b_tp8", "qwen14b"):
        for b, p, o in PAGED_HELD:
            out.append(_row("fi_sm90_paged", m, b, p, o, "held_out"))
    for m in ("dsv3_tp8", "dsv3_tp4", "dsv3_tp2", "dsv3_tp1"):
        for b, p in MLA_ROWS:
            out.append(_row("fi_sm90_mla", m, b, p, 0, "held_out", 192, 128))
    return out


#: blind grid 2 (--grid blind2): (B, P[, O]) in no grid-1 row, on models grid 1 does not have (DeepSeek-V3's heads
#: at TP 8 / 2 on new shapes); the short rows give every regime's one-item-per-CTA calls
BLIND2_RAGGED = [(1, 384), (1, 896), (1, 1536), (2, 3000), (1, 6000), (6, 768), (12, 320), (1, 12000), (3, 1280)]
BLIND2_PAGED = [(1, 384, 0), (1, 1200, 0), (1, 768, 6144), (1, 3072, 24576), (2, 1536, 1000), (1, 4096, 40000),
                (4, 384, 8192), (2, 640, 12000), (1, 256, 20000)]
BLIND2_MLA = [(1, 384), (1, 768), (1, 1536), (1, 3072), (2, 6000), (6, 768), (1, 12000), (3, 640)]


def blind2_shapes() -> list[dict]:
    """Blind grid 2 (role 'blind': priced and committed before it runs), grouped by kernel module."""
    out = []
    for m in ("llama3b", "qwen32b_tp2", "llama70b_tp4", "yi34b"):
        for b, p in BLIND2_RAGGED:
            out.append(_row("fi_sm90_ragged", m, b, p, 0, "blind"))
    for m in ("llama3b", "qwen32b_tp2", "llama70b_tp4", "yi34b"):
        for b, p, o in BLIND2_PAGED:
            out.append(_row("fi_sm90_paged", m, b, p, o, "blind"))
    for m in ("kimik2_tp1", "kimik2_tp4", "dsv3_tp8", "dsv3_tp2"):
        for b, p in BLIND2_MLA:
            out.append(_row("fi_sm90_mla", m, b, p, 0, "blind", 192, 128))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=300.0)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--grid", choices=("first", "blind2"), default="first")
    ap.add_argument("--parts", default="ragged,paged,mla")
    args = ap.parse_args()
    t0 = time.time()
    os.makedirs(args.out, exist_ok=True)
    import torch
    sys.path.insert(0, os.path.dirname(HERE))   # lab/harness.py
    sys.path.insert(0, HERE)
    import harness
    from measure_production_attention import import_flashinfer, profile_one

    fi, fi_note = import_flashinfer()
    log = open(os.path.join(args.out, "log.txt"), "a")

    def say(*a):
        msg = " ".join(str(x) for x in a)
        print(msg, flush=True)
        log.write(msg + "\n")
        log.flush()

    if fi_note:
        say(fi_note)
    dev = torch.cuda.get_device_properties(0)
    meta = {"script_version": SCRIPT_VERSION, "date": datetime.datetime.now(datetime.timezone.utc).date().isoformat(),
            "device": dev.name, "driver": harness.driver_version(), "torch": torch.__version__,
            "cuda": torch.version.cuda, "library": f"flashinfer {fi.__version__} (backend fa3, sm_90a JIT)"}
    say("env", meta, "SMs", dev.multi_processor_count)
    env = harness.Env("cuda:0")
    ws = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    g = torch.Generator(device="cuda")
    g.manual_seed(0)
    pool = {}

    def paged_pool(hkv, d):
        """One K and one V pool of 16-token pages, >= 4 GiB each, reused by every paged row of these heads."""
        key = (hkv, d)
        if key not in pool:
            pool.clear()
            torch.cuda.empty_cache()
            per_page = PAGE * hkv * d
            n = (1 << 31) // per_page
            kc = torch.randn((n, PAGE, hkv, d), device="cuda", dtype=torch.bfloat16, generator=g)
            vc = torch.randn((n, PAGE, hkv, d), device="cuda", dtype=torch.bfloat16, generator=g)
            pool[key] = (kc, vc)
        return pool[key]

    def build(s):
        B, P, O, T, hq, hkv, d, dv = (s["batch"], s["q_rows"], s["prefix"], s["context"], s["heads"], s["kv_heads"],
                                      s["head_dim"], s["head_dim_v"])
        scale = 1.0 / math.sqrt(d)
        qo = torch.arange(0, B + 1, device="cuda", dtype=torch.int32) * P
        q = torch.randn((B * P, hq, d), device="cuda", dtype=torch.bfloat16, generator=g)
        res = {}
        if s["family"] == "fi_sm90_paged":
            kc, vc = paged_pool(hkv, d)
            npages = kc.shape[0]
            NP = (T + PAGE - 1) // PAGE
            R = int(max(1, min(16, math.ceil((256 << 20) / (B * T * hkv * d * 2 * 2)))))
            perm = torch.randperm(npages, device="cuda")
            tables = [perm[r * B * NP:(r + 1) * B * NP].to(torch.int32).view(B, NP).contiguous() for r in range(R)]
            kv_indptr = torch.arange(0, B + 1, device="cuda", dtype=torch.int32) * NP
            last = torch.full((B,), T - (NP - 1) * PAGE, device="cuda", dtype=torch.int32)
            out = torch.empty((B * P, hq, dv), device="cuda", dtype=torch.bfloat16)
            wrappers = []
            for r in range(R):
                w = fi.BatchPrefillWithPagedKVCacheWrapper(ws, "NHD", backend="fa3")
                w.plan(qo, kv_indptr, tables[r].flatten(), last, hq, hkv, d, PAGE, causal=True,
                       q_data_type=torch.bfloat16, kv_data_type=torch.bfloat16, sm_scale=scale)
                wrappers.append(w)

            def fn(i):
                wrappers[i % R].run(q, (kc, vc), out=out)
                res["o"] = out

            def kv_of(b):
                pt = tables[0][b].long()
                return kc[pt].flatten(0, 1)[:T], vc[pt].flatten(0, 1)[:T]
        else:
            R = int(max(1, min(8, math.ceil((256 << 20) / (B * T * hkv * (d + dv) * 2)))))
            ks = [torch.randn((B * T, hkv, d), device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(R)]
            vs = [torch.randn((B * T, hkv, dv), device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(R)]
            kv_indptr = torch.arange(0, B + 1, device="cuda", dtype=torch.int32) * T
            out = torch.empty((B * P, hq, dv), device="cuda", dtype=torch.bfloat16)
            w = fi.BatchPrefillWithRaggedKVCacheWrapper(ws, "NHD", backend="fa3")
            w.plan(qo, kv_indptr, hq, hkv, d, head_dim_vo=dv, causal=True, q_data_type=torch.bfloat16,
                   kv_data_type=torch.bfloat16, sm_scale=scale)

            def fn(i):
                w.run(q, ks[i % R], vs[i % R], out=out)
                res["o"] = out

            def kv_of(b):
                return ks[0][b * T:(b + 1) * T], vs[0][b * T:(b + 1) * T]

        def check():
            fn(0)
            o = res["o"].float()
            errs = []
            for b in range(B):
                kk, vv = kv_of(b)
                kk = kk.float().transpose(0, 1).repeat_interleave(hq // hkv, 0)
                vv = vv.float().transpose(0, 1).repeat_interleave(hq // hkv, 0)
                qq = q[b * P:(b + 1) * P].float().transpose(0, 1)
                sc = qq @ kk.transpose(-1, -2) * scale
                qi = torch.arange(P, device="cuda")[:, None] + O
                sc = sc.masked_fill(torch.arange(T, device="cuda")[None, :] > qi, float("-inf"))
                ref = (sc.softmax(-1) @ vv).transpose(0, 1)
                errs.append(float((o[b * P:(b + 1) * P] - ref).norm() / ref.norm()))
            return max(errs)

        return fn, R, check

    pre = "fi_sm90_prefill" if args.grid == "first" else f"fi_sm90_prefill_{args.grid}"
    fcsv = open(os.path.join(args.out, pre + ".csv"), "w", newline="")
    w = csv.DictWriter(fcsv, fieldnames=COLS)
    w.writeheader()
    gcsv = open(os.path.join(args.out, pre + "_grids.csv"), "w", newline="")
    gw = csv.DictWriter(gcsv, fieldnames=["label", "kernel_name", "dur_us", "grid_x", "grid_y", "grid_z", "block_x",
                                          "block_y", "block_z", "regs", "smem"])
    gw.writeheader()
    parts = {"fi_sm90_" + p for p in args.parts.split(",")}
    shp = [s for s in (shapes() if args.grid == "first" else blind2_shapes()) if s["family"] in parts]
    if args.smoke:
        shp = [s for s in shp if s["batch"] * s["context"] <= 2048][:3]
    done, fail = 0, 0
    for k, s in enumerate(shp):
        if time.time() - t0 > args.budget_s:
            say(f"budget reached after {done} rows")
            break
        try:
            fn, R, check = build(s)
            note = ""
            if s["batch"] * s["q_rows"] * s["context"] * s["heads"] <= (1 << 27):
                try:
                    note = f"rel_err={check():.2e}"
                except Exception as e:   # noqa: BLE001  (the reference, not the kernel)
                    note = f"check not run: {repr(e)[:60]}"
            med = harness.time_graph(env, fn, target_us=250.0, reps=5, max_calls=64)
            if k % 3 == 0:
                lab = f"{s['family']}:{s['model']}:B{s['batch']}:P{s['q_rows']}:O{s['prefix']}"
                for r in profile_one(torch, fn, lab):
                    gw.writerow(r)
                gcsv.flush()
            w.writerow({**meta, **{c: s[c] for c in s if c in COLS}, "median_us": f"{med['median']:.3f}",
                        "p20_us": f"{med['p20']:.3f}", "p80_us": f"{med['p80']:.3f}", "calls": med["calls"],
                        "kv_copies": R, "note": note})
            fcsv.flush()
            done += 1
            say(f"{s['family']} {s['model']} B{s['batch']} P{s['q_rows']} O{s['prefix']}: {med['median']:.1f} us {note}")
        except Exception as e:   # noqa: BLE001
            fail += 1
            w.writerow({**meta, **{c: s[c] for c in s if c in COLS}, "note": f"failed: {repr(e)[:300]}"})
            fcsv.flush()
            if fail <= 4:
                say(f"{s} failed: {repr(e)[:800]}")
            if fail >= 8 and done == 0:
                say("giving up")
                break
        finally:
            torch.cuda.empty_cache()
    say(f"rows {done} failed {fail} total {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
