"""SGLang's flashinfer-backend extend with a cached prefix, timed as the backend runs it on Hopper
(python/sglang/srt/layers/attention/flashinfer_backend.py @ 0005834c forward_extend, flashinfer-python 0.6.4 JIT-built on
the device): the chunk's new tokens through BatchPrefillWithRaggedKVCacheWrapper(backend "auto": FlashInfer's own sm_90
kernel) over their own fresh bf16 K / V, causal, returning the LSE; the cached prefix through
BatchPrefillWithPagedKVCacheWrapper(backend "fa2"), page size 1 (SGLang's token pool), non-causal, returning the LSE;
then flashinfer.merge_state. Each wrapper planned once per shape without a CUDA graph.

A row is B requests of P new tokens after O cached ones; the prefix's K / V in a token pool of >= 2 GiB per K and V,
read through a random permutation of token slots (call i through copy i % R of the index list, R copies spanning
>= 256 MiB of K / V). Timing: the lab harness's CUDA-graph timer (harness.time_graph) of the whole sequence
(part 'extend'), and of the paged prefix call alone (part 'prefix', a diagnosis of the composition). bf16 and fp8 (e4m3)
caches (the new tokens' K / V stay bf16, as SGLang passes the layer's fresh k, v to the ragged call).

`shapes()` imports without torch: lab/kernels/predict_sglang_extend.py prices the same rows before the run.

    python3 measure_sglang_extend.py --out DIR [--budget-s 200] [--smoke]
"""
from __future__ import annotations

import argparse
import csv
import datetime
import math
import os
import sys
import time

SCRIPT_VERSION = 1
HERE = os.path.dirname(os.path.abspath(__file__))
HEADS = {"llama8b": (32, 8), "qwen7b": (28, 4), "llama70b_tp8": (8, 1), "yi34b": (56, 8)}
#: (B, P new tokens, O cached): SGLang chunked prefill (chunks of up to 8192 after earlier chunks) and radix-cache hits
ROWS = [(1, 512, 4096), (1, 2048, 8192), (1, 8192, 8192), (2, 1024, 3000), (4, 256, 2048), (1, 1024, 30000),
        (1, 4096, 12000), (3, 640, 1500)]
FP8_ROWS = [(1, 2048, 8192), (2, 1024, 3000), (1, 1024, 30000)]
COLS = ["script_version", "date", "device", "driver", "torch", "cuda", "library", "part", "model", "dtype", "heads",
        "kv_heads", "head_dim", "batch", "q_rows", "prefix", "context", "page_size", "median_us", "p20_us", "p80_us",
        "calls", "kv_copies", "note"]


def shapes() -> list[dict]:
    out = []
    for m, (hq, hkv) in HEADS.items():
        for dt, rows in (("bf16", ROWS), ("fp8", FP8_ROWS if m in ("llama8b", "yi34b") else [])):
            for b, p, o in rows:
                for part in ("extend", "prefix"):
                    out.append(dict(part=part, model=m, dtype=dt, heads=hq, kv_heads=hkv, head_dim=128, batch=b,
                                    q_rows=p, prefix=o, context=o + p, page_size=1))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=200.0)
    ap.add_argument("--smoke", action="store_true")
    args = ap.parse_args()
    t0 = time.time()
    os.makedirs(args.out, exist_ok=True)
    import torch
    sys.path.insert(0, os.path.dirname(HERE))
    sys.path.insert(0, HERE)
    import harness
    from measure_production_attention import import_flashinfer

    fi, _ = import_flashinfer()
    log = open(os.path.join(args.out, "log.txt"), "a")

    def say(*a):
        msg = " ".join(str(x) for x in a)
        print(msg, flush=True)
        log.write(msg + "\n")
        log.flush()

    dev = torch.cuda.get_device_properties(0)
    meta = {"script_version": SCRIPT_VERSION, "date": datetime.datetime.now(datetime.timezone.utc).date().isoformat(),
            "device": dev.name, "driver": harness.driver_version(), "torch": torch.__version__,
            "cuda": torch.version.cuda, "library": f"flashinfer {fi.__version__} (ragged auto + paged fa2 + merge_state)"}
    say("env", meta)
    env = harness.Env("cuda:0")
    ws = torch.empty(512 << 20, dtype=torch.uint8, device="cuda")
    g = torch.Generator(device="cuda")
    g.manual_seed(0)
    pools = {}

    def pool(hkv, dt):
        if (hkv, dt) not in pools:
            pools.clear()
            torch.cuda.empty_cache()
            n = (1 << 30) // (hkv * 128)
            kdt = torch.bfloat16 if dt == "bf16" else torch.float8_e4m3fn
            kc = torch.randn((n, 1, hkv, 128), device="cuda", dtype=torch.bfloat16, generator=g).to(kdt)
            vc = torch.randn((n, 1, hkv, 128), device="cuda", dtype=torch.bfloat16, generator=g).to(kdt)
            pools[(hkv, dt)] = (kc, vc)
        return pools[(hkv, dt)]

    f = open(os.path.join(args.out, "sglang_extend.csv"), "w", newline="")
    w = csv.DictWriter(f, fieldnames=COLS)
    w.writeheader()
    shp = shapes()
    if args.smoke:
        shp = shp[:4]
    done = fail = 0
    for s in shp:
        if time.time() - t0 > args.budget_s:
            say(f"budget reached after {done} rows")
            break
        try:
            B, P, O, hq, hkv, dt = s["batch"], s["q_rows"], s["prefix"], s["heads"], s["kv_heads"], s["dtype"]
            kc, vc = pool(hkv, dt)
            kdt = kc.dtype
            scale = 1.0 / math.sqrt(128)
            q = torch.randn((B * P, hq, 128), device="cuda", dtype=torch.bfloat16, generator=g)
            k = torch.randn((B * P, hkv, 128), device="cuda", dtype=torch.bfloat16, generator=g)
            v = torch.randn((B * P, hkv, 128), device="cuda", dtype=torch.bfloat16, generator=g)
            qo = torch.arange(0, B + 1, device="cuda", dtype=torch.int32) * P
            rag = fi.BatchPrefillWithRaggedKVCacheWrapper(ws, "NHD", backend="auto")
            rag.plan(qo, qo, hq, hkv, 128, causal=True, q_data_type=torch.bfloat16, kv_data_type=torch.bfloat16,
                     sm_scale=scale)
            R = int(max(1, min(16, math.ceil((256 << 20) / (B * O * hkv * 128 * kc.element_size() * 2)))))
            perm = torch.randperm(kc.shape[0], device="cuda")
            kv_indptr = torch.arange(0, B + 1, device="cuda", dtype=torch.int32) * O
            last = torch.ones(B, device="cuda", dtype=torch.int32)
            pws = []
            for r in range(R):
                pw = fi.BatchPrefillWithPagedKVCacheWrapper(ws, "NHD", backend="fa2")
                pw.plan(qo, kv_indptr, perm[r * B * O:(r + 1) * B * O].to(torch.int32), last, hq, hkv, 128, 1,
                        causal=False, q_data_type=torch.bfloat16, kv_data_type=kdt, sm_scale=scale)
                pws.append(pw)
            res = {}

            def extend(i):
                o1, s1 = rag.run(q, k, v, return_lse=True)
                o2, s2 = pws[i % R].run(q, (kc, vc), return_lse=True)
                res["o"] = fi.merge_state(o1, s1, o2, s2)[0]

            def prefix(i):
                res["o"] = pws[i % R].run(q, (kc, vc), return_lse=True)[0]

            fn = extend if s["part"] == "extend" else prefix
            med = harness.time_graph(env, fn, target_us=250.0, reps=5, max_calls=64)
            w.writerow({**meta, **{c: s[c] for c in s if c in COLS}, "median_us": f"{med['median']:.3f}",
                        "p20_us": f"{med['p20']:.3f}", "p80_us": f"{med['p80']:.3f}", "calls": med["calls"],
                        "kv_copies": R, "note": ""})
            f.flush()
            done += 1
            say(f"{s['part']} {s['model']} {dt} B{B} P{P} O{O}: {med['median']:.1f} us")
        except Exception as e:   # noqa: BLE001
            fail += 1
            w.writerow({**meta, **{c: s[c] for c in s if c in COLS}, "note": f"failed: {repr(e)[:300]}"})
            f.flush()
            if fail <= 3:
                say(f"{s} failed: {repr(e)[:600]}")
            if fail >= 6 and done == 0:
                break
        finally:
            torch.cuda.empty_cache()
    say(f"rows {done} failed {fail} total {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
