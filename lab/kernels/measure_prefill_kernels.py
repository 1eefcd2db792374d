"""Prefill rows of the two production attention kernels engines run on Hopper, measured on the lent H100:

  fa3_prefill  FlashAttention-3's own hopper/ forward (flash-attention @ 0251105a, the trimmed build of
               lab/kernels/build_fa3_binary.py) called as SGLang's fa3 backend calls it for an extend batch and
               vLLM's FLASH_ATTN backend for a chunked-prefill batch: flash_attn_with_kvcache over the paged cache
               with cu_seqlens_q / max_seqlen_q (the varlen path), cache_seqlens, a page table, causal, num_splits 0;
  fi_prefill   FlashInfer's FA2 paged prefill kernel (flashinfer-python 0.6.4, BatchPrefillWithPagedKVCacheWrapper,
               backend "fa2", planned WITHOUT a CUDA graph, as an engine plans a prefill batch), causal.

A row is a batch of B requests, each with P new query tokens (q_rows) after O cached tokens (prefix): its K/V cache
holds T = O + P tokens (context), the new tokens' K/V already written, as the engines append them before attention.
Causal is bottom-right aligned (query i sees keys 0 .. O + i). K/V pages of 16 tokens, read through a random page table
from pools far larger than the L2; call i reads through page table i % R with R copies spanning >= 128 MiB. fp8 rows:
FA3 takes q, K and V in float8_e4m3fn (output bf16); FlashInfer takes a bf16 q and e4m3 K/V.

Timing: the lab harness's CUDA-graph timer (harness.time_graph: calls back to back in a graph, a spin before each
timed replay). Every third shape's kernels are recorded (torch.profiler: name, grid, block, registers, duration).

`shapes()` imports without torch: lab/kernels/predict_prefill_kernels.py prices the same list before the run. The
role column says what each row is for, fixed before any row was measured: 'fit' = Llama-3.1-8B's heads (32 / 8),
'held_out' = other models' heads (Qwen2.5-7B 28 / 4, Llama-3.1-70B at TP 8: 8 / 1, Qwen2.5-14B 40 / 8).

    python3 measure_prefill_kernels.py --out DIR --parts fa3,fi [--pkg FA3_PKG_DIR] [--budget-s 200] [--smoke]
        [--grid first|blind2|blind3|blind4|blind5|scan6]
"""
from __future__ import annotations

import argparse
import csv
import datetime
import math
import os
import sys
import time

SCRIPT_VERSION = 6   # 6: --grid scan6 (SCAN6_*: FlashInfer's FA2 kernel across its plan's prefix steps, H200); 2: --grid blind2 (BLIND2_*: four other models' heads, shapes in no grid-1 row); 3: --grid blind3;
# 4: --grid blind4 (BLIND4_*: FlashInfer's split short prefills, its merge); 5: --grid blind5 (BLIND5_*: FA3 calls of
# several rounds of the persistent kernel, its longest-first schedule; run on the lent H200)
FA3_COMMIT = "0251105a2fb19d2957484b7f023cd8c115286ced"
HERE = os.path.dirname(os.path.abspath(__file__))
#: query / KV heads per GPU
HEADS = {"llama8b": (32, 8), "qwen7b": (28, 4), "llama70b_tp8": (8, 1), "qwen14b": (40, 8),
         # blind grid 2: Llama-3.1-70B at TP 4, Qwen2.5-32B at TP 2, Llama-3.2-3B, Qwen2.5-3B
         "llama70b_tp4": (16, 2), "qwen32b_tp2": (20, 4), "llama3b": (24, 8), "qwen3b": (16, 2),
         # blind grid 3: Llama-3.1-70B at TP 2, Qwen2.5-1.5B, Phi-3-medium, Yi-34B
         "llama70b_tp2": (32, 4), "qwen1_5b": (12, 2), "phi3_medium": (40, 10), "yi34b": (56, 8),
         # blind grid 4: Llama-3.1-8B at TP 2, Mistral-Small-24B (32 / 8) at TP 2, Qwen2.5-72B at TP 4
         "llama8b_tp2": (16, 4), "mistral24b_tp2": (16, 4), "qwen72b_tp4": (16, 2),
         # blind grid 5: Llama-3.1-8B at TP 4, Qwen2.5-14B at TP 2, Llama-3.1-405B at TP 8, Qwen2.5-32B, Mixtral-8x7B at TP 2
         "llama8b_tp4": (8, 2), "qwen14b_tp2": (20, 4), "llama405b_tp8": (16, 1), "qwen32b": (40, 8),
         "mixtral_tp2": (16, 4)}
PAGE = 16
#: (B, P new tokens, O cached) of the fit model, and the subset the held-out models repeat
FRESH = [(1, 256, 0), (1, 1024, 0), (1, 4096, 0), (1, 16384, 0), (4, 512, 0), (4, 2048, 0), (16, 256, 0),
         (2, 8192, 0)]
CHUNKED = [(1, 512, 4096), (1, 2048, 16384), (1, 8192, 8192), (1, 2048, 65536), (1, 512, 32768), (2, 1024, 2048)]
HELD = [(1, 1024, 0), (1, 8192, 0), (4, 2048, 0), (16, 256, 0), (1, 2048, 16384), (1, 512, 32768), (2, 1024, 2048)]
FP8 = [(1, 4096, 0), (4, 1024, 0), (1, 2048, 16384), (1, 8192, 8192)]


#: blind grid 2 (--grid blind2): (B, P, O) in no grid-1 row, on four models none of grid 1 has; fp8 on two of them
BLIND2_FRESH = [(1, 384, 0), (1, 3000, 0), (2, 6000, 0), (8, 768, 0), (3, 1536, 0), (1, 12000, 0)]
BLIND2_CHUNKED = [(1, 768, 6144), (1, 3072, 24576), (2, 1536, 1000), (1, 4096, 40000), (4, 384, 8192)]
BLIND2_FP8 = [(1, 3000, 0), (8, 768, 0), (1, 12000, 0), (1, 3072, 24576), (4, 384, 8192)]


def blind2_shapes() -> list[dict]:
    """Blind grid 2, grouped by family then dtype; role 'blind' (priced and committed before it runs)."""
    out = []
    for fam in ("fa3_prefill", "fi_prefill"):
        def add(model, bpo, dtype="bf16"):
            hq, hkv = HEADS[model]
            for b, p, o in bpo:
                out.append(dict(family=fam, model=model, heads=hq, kv_heads=hkv, head_dim=128, dtype=dtype, batch=b,
                                q_rows=p, prefix=o, context=o + p, page_size=PAGE, causal=1, role="blind"))

        for m in ("llama70b_tp4", "qwen32b_tp2", "llama3b", "qwen3b"):
            add(m, BLIND2_FRESH + BLIND2_CHUNKED)
        for m in ("llama70b_tp4", "qwen32b_tp2"):
            add(m, BLIND2_FP8, "fp8")
    return out


#: blind grid 3 (--grid blind3): (B, P, O) in no earlier row, on four models no earlier grid has; fp8 on two of them
BLIND3_FRESH = [(1, 640, 0), (1, 5000, 0), (6, 1024, 0), (2, 2560, 0), (1, 20000, 0), (12, 320, 0)]
BLIND3_CHUNKED = [(1, 1024, 3000), (1, 2560, 12000), (3, 512, 4000), (1, 6000, 30000), (2, 256, 16000)]
BLIND3_FP8 = [(1, 5000, 0), (6, 1024, 0), (1, 20000, 0), (1, 2560, 12000), (2, 256, 16000)]


def blind3_shapes() -> list[dict]:
    """Blind grid 3 (as blind2_shapes)."""
    out = []
    for fam in ("fa3_prefill", "fi_prefill"):
        def add(model, bpo, dtype="bf16"):
            hq, hkv = HEADS[model]
            for b, p, o in bpo:
                out.append(dict(family=fam, model=model, heads=hq, kv_heads=hkv, head_dim=128, dtype=dtype, batch=b,
                                q_rows=p, prefix=o, context=o + p, page_size=PAGE, causal=1, role="blind"))

        for m in ("llama70b_tp2", "qwen1_5b", "phi3_medium", "yi34b"):
            add(m, BLIND3_FRESH + BLIND3_CHUNKED)
        for m in ("llama70b_tp2", "yi34b"):
            add(m, BLIND3_FP8, "fp8")
    return out


#: blind grid 4 (--grid blind4; FlashInfer only): short prefills that FlashInfer's plan splits over the KV (few query
#: tiles), so their merge runs over P x Hq items; on models of every earlier grid and new ones, shapes in no earlier row
BLIND4_FRESH = [(1, 192, 0), (1, 320, 0), (1, 448, 0), (1, 640, 0), (1, 896, 0), (2, 320, 0)]
BLIND4_CHUNKED = [(1, 320, 3000), (1, 640, 12000), (2, 192, 5000), (1, 896, 2000)]
BLIND4_FP8 = [(1, 320, 0), (1, 640, 0), (1, 320, 3000), (1, 640, 12000)]


def blind4_shapes() -> list[dict]:
    """Blind grid 4 (FlashInfer only), grouped by dtype."""
    out = []

    def add(model, bpo, dtype="bf16"):
        hq, hkv = HEADS[model]
        for b, p, o in bpo:
            out.append(dict(family="fi_prefill", model=model, heads=hq, kv_heads=hkv, head_dim=128, dtype=dtype, batch=b,
                            q_rows=p, prefix=o, context=o + p, page_size=PAGE, causal=1, role="blind"))

    for m in ("llama8b", "qwen7b", "llama70b_tp8", "llama8b_tp2", "qwen72b_tp4"):
        add(m, BLIND4_FRESH + BLIND4_CHUNKED)
    for m in ("llama8b", "qwen72b_tp4"):
        add(m, BLIND4_FP8, "fp8")
    return out


#: blind grid 5 (--grid blind5; FA3 only): calls of 1.3-3.7 rounds of the persistent kernel's 132 CTAs (its causal tiles
#: handed out longest first) on five models no earlier grid has; each row (B, rounds, O): P = the new tokens that give
#: about `rounds` x 132 m-blocks of 128 packed rows (P x Hq x B / (128 x 132)), rounded to 16; fp8 on two of them
BLIND5_ROWS = [(1, 1.3, 0), (1, 1.8, 0), (2, 2.2, 0), (1, 2.6, 0), (4, 3.1, 0), (1, 3.7, 0), (1, 1.5, 2048),
               (1, 2.4, 6000), (3, 1.9, 1000)]
BLIND5_FP8 = [(1, 1.8, 0), (2, 2.2, 0), (1, 3.7, 0), (1, 2.4, 6000)]


def blind5_shapes() -> list[dict]:
    """Blind grid 5 (FA3 only), grouped by dtype."""
    out = []

    def add(model, rows, dtype="bf16"):
        hq, hkv = HEADS[model]
        for b, r, o in rows:
            p = int(round(r * 128 * 132 / (hq * b) / 16.0)) * 16
            out.append(dict(family="fa3_prefill", model=model, heads=hq, kv_heads=hkv, head_dim=128, dtype=dtype,
                            batch=b, q_rows=p, prefix=o, context=o + p, page_size=PAGE, causal=1, role="blind"))

    for m in ("llama8b_tp4", "qwen14b_tp2", "llama405b_tp8", "qwen32b", "mixtral_tp2"):
        add(m, BLIND5_ROWS)
    for m in ("qwen14b_tp2", "qwen32b"):
        add(m, BLIND5_FP8, "fp8")
    return out


#: scan 6 (--grid scan6; FlashInfer FA2 only, bf16, run on the H200): chunks of P new tokens whose cached prefix O walks
#: across the steps of the FA2 plan (scheduler.cuh PrefillSplitQOKVIndptr): (model, B, P, O start, O stop, O step). The
#: model's exact plan steps there by a key tile of the longest CTA's chain (every n x 64 tokens of prefix, n = the plan's
#: KV chunks) or by a KV chunk (every 128 tokens while the chunk sits at its minimum); the engine's form
#: (simulator/kernels/families.py fa2_prefix_interpolated) is linear between the steps. Which of the two the kernel's time
#: follows is what the scan is for (priced both ways before the call: prefill_kernels_scan6_predictions.csv)
SCAN6 = [("llama8b", 1, 64, 5952, 8320, 64), ("llama70b_tp8", 1, 40, 21760, 29120, 320), ("llama8b", 1, 64, 256, 2368, 64),
         ("llama8b", 2, 48, 7936, 10368, 128), ("qwen7b", 1, 200, 4992, 7680, 96)]


def scan6_shapes() -> list[dict]:
    """Scan 6 (FlashInfer only, bf16), the scans interleaved so that a partial run covers each of them."""
    scans = []
    for model, b, p, o0, o1, step in SCAN6:
        hq, hkv = HEADS[model]
        scans.append([dict(family="fi_prefill", model=model, heads=hq, kv_heads=hkv, head_dim=128, dtype="bf16",
                           batch=b, q_rows=p, prefix=o, context=o + p, page_size=PAGE, causal=1, role="scan")
                      for o in range(o0, o1, step)])
    out = []
    for i in range(max(len(x) for x in scans)):
        out += [x[i] for x in scans if i < len(x)]
    return out


def shapes() -> list[dict]:
    """Every row, grouped by family then dtype (each group one kernel build)."""
    out = []
    for fam in ("fa3_prefill", "fi_prefill"):
        def add(model, bpo, dtype="bf16"):
            hq, hkv = HEADS[model]
            for b, p, o in bpo:
                out.append(dict(family=fam, model=model, heads=hq, kv_heads=hkv, head_dim=128, dtype=dtype, batch=b,
                                q_rows=p, prefix=o, context=o + p, page_size=PAGE, causal=1,
                                role="fit" if model == "llama8b" else "held_out"))

        add("llama8b", FRESH + CHUNKED)
        for m in ("qwen7b", "llama70b_tp8", "qwen14b"):
            add(m, HELD)
        add("llama8b", FP8, "fp8")
        add("qwen7b", FP8[:3], "fp8")
    return out


COLS = ["script_version", "date", "device", "driver", "torch", "cuda", "library", "family", "model", "dtype", "heads",
        "kv_heads", "head_dim", "batch", "q_rows", "prefix", "context", "page_size", "causal", "role", "median_us",
        "p20_us", "p80_us", "calls", "kv_copies", "note"]


def copies_for(nbytes: float) -> int:
    return int(max(1, min(16, math.ceil((128 << 20) / max(nbytes, 1.0)))))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--parts", default="fa3,fi")
    ap.add_argument("--pkg", default="", help="folder holding flash_attn_3/_C.abi3.so and flash_attn_interface.py")
    ap.add_argument("--budget-s", type=float, default=200.0)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--grid", choices=("first", "blind2", "blind3", "blind4", "blind5", "scan6"), default="first")
    args = ap.parse_args()
    t0 = time.time()
    os.makedirs(args.out, exist_ok=True)
    import torch
    sys.path.insert(0, os.path.dirname(HERE))   # lab/harness.py in the repository
    sys.path.insert(0, HERE)
    import harness
    from measure_production_attention import import_flashinfer, profile_one

    log = open(os.path.join(args.out, "log.txt"), "a")

    def say(*a):
        msg = " ".join(str(x) for x in a)
        print(msg, flush=True)
        log.write(msg + "\n")
        log.flush()

    parts = set(args.parts.split(","))
    fa3_fn, fi = None, None
    lib = []
    if "fa3" in parts:
        sys.path.insert(0, args.pkg)
        from flash_attn_interface import flash_attn_with_kvcache as fa3_fn
        lib.append(f"flash-attention {FA3_COMMIT[:10]}")
    if "fi" in parts:
        fi, note = import_flashinfer()
        lib.append(f"flashinfer {fi.__version__}")
        if note:
            say(note)
    dev = torch.cuda.get_device_properties(0)
    meta = {"script_version": SCRIPT_VERSION, "date": datetime.datetime.now(datetime.timezone.utc).date().isoformat(),
            "device": dev.name, "driver": harness.driver_version(), "torch": torch.__version__,
            "cuda": torch.version.cuda, "library": "; ".join(lib)}
    say("env", meta, "SMs", dev.multi_processor_count)
    env = harness.Env("cuda:0")
    POOL = 1 << 32 if not args.smoke else 1 << 26      # elements per pool (bf16: 8 GiB each for K and V)
    pools = {}
    g = torch.Generator(device="cuda")
    g.manual_seed(0)
    for dt, tdt, n in (("bf16", torch.bfloat16, POOL), ("fp8", torch.float8_e4m3fn, POOL)):
        kv = []
        for _ in range(2):
            p = torch.empty(n, dtype=tdt, device="cuda")
            for i in range(0, n, 1 << 28):
                m = min(1 << 28, n - i)
                p[i:i + m] = torch.randn(m, device="cuda", generator=g, dtype=torch.float32).mul_(0.5).to(tdt)
            kv.append(p)
        pools[dt] = kv
    ws = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    say(f"pools filled in {time.time() - t0:.1f} s")

    def build(s):
        B, P, O, T, hq, hkv, d = (s["batch"], s["q_rows"], s["prefix"], s["context"], s["heads"], s["kv_heads"],
                                  s["head_dim"])
        dt = s["dtype"]
        kdt = torch.bfloat16 if dt == "bf16" else torch.float8_e4m3fn
        kpool, vpool = pools[dt]
        per_page = PAGE * hkv * d
        npages = kpool.numel() // per_page
        kc = kpool[: npages * per_page].view(npages, PAGE, hkv, d)
        vc = vpool[: npages * per_page].view(npages, PAGE, hkv, d)
        NP = (T + PAGE - 1) // PAGE
        R = copies_for(B * T * hkv * d * (2 if dt == "bf16" else 1) * 2)
        perm = torch.randperm(npages, device="cuda")
        tables = [perm[r * B * NP:(r + 1) * B * NP].to(torch.int32).view(B, NP).contiguous() for r in range(R)]
        qo = torch.arange(0, B + 1, device="cuda", dtype=torch.int32) * P
        scale = 1.0 / math.sqrt(d)
        res = {}
        if s["family"] == "fa3_prefill":
            qt = torch.randn((B * P, hq, d), device="cuda", dtype=torch.bfloat16).to(kdt)
            seq = torch.full((B,), T, device="cuda", dtype=torch.int32)

            def fn(i):
                res["o"] = fa3_fn(qt, kc, vc, cache_seqlens=seq, page_table=tables[i % R], cu_seqlens_q=qo,
                                  max_seqlen_q=P, causal=True, num_splits=0, softmax_scale=scale)
        else:
            qt = torch.randn((B * P, hq, d), device="cuda", dtype=torch.bfloat16)
            out = torch.empty_like(qt)
            kv_indptr = torch.arange(0, B + 1, device="cuda", dtype=torch.int32) * NP
            last = torch.full((B,), T - (NP - 1) * PAGE, device="cuda", dtype=torch.int32)
            wrappers = []
            for r in range(R):   # one wrapper per page-table copy (the plan keeps the indices tensor it is given);
                # every copy has the same shape, so they share the workspace and plan alike
                w = fi.BatchPrefillWithPagedKVCacheWrapper(ws, "NHD", backend="fa2")
                w.plan(qo, kv_indptr, tables[r].flatten(), last, hq, hkv, d, PAGE, causal=True,
                       q_data_type=torch.bfloat16, kv_data_type=kdt, sm_scale=scale)
                wrappers.append(w)
            res["plan"] = str(list(getattr(wrappers[0], "_plan_info", []))[:16])

            def fn(i):
                wrappers[i % R].run(qt, (kc, vc), out=out)
                res["o"] = out

        def check():
            fn(0)
            o = res["o"]
            o = (o[0] if isinstance(o, tuple) else o).float().view(B, P, hq, d)
            errs = []
            for b in range(B):
                pt = tables[0][b].long()
                kk = kc[pt].flatten(0, 1)[:T].float().transpose(0, 1).repeat_interleave(hq // hkv, 0)
                vv = vc[pt].flatten(0, 1)[:T].float().transpose(0, 1).repeat_interleave(hq // hkv, 0)
                qq = qt[b * P:(b + 1) * P].float().transpose(0, 1)
                sc = qq @ kk.transpose(-1, -2) * scale
                qi = torch.arange(P, device="cuda")[:, None] + O
                sc = sc.masked_fill(torch.arange(T, device="cuda")[None, :] > qi, float("-inf"))
                ref = (sc.softmax(-1) @ vv).transpose(0, 1)
                errs.append(float((o[b] - ref).norm() / ref.norm()))
            return max(errs)

        return fn, R, check, res

    pre = "prefill_kernels" if args.grid == "first" else f"prefill_kernels_{args.grid}"
    rows_path = os.path.join(args.out, pre + ".csv")
    fcsv = open(rows_path, "w", newline="")
    w = csv.DictWriter(fcsv, fieldnames=COLS)
    w.writeheader()
    gcsv = open(os.path.join(args.out, pre + "_grids.csv"), "w", newline="")
    gw = csv.DictWriter(gcsv, fieldnames=["label", "kernel_name", "dur_us", "grid_x", "grid_y", "grid_z", "block_x",
                                          "block_y", "block_z", "regs", "smem"])
    gw.writeheader()
    fam_of = {"fa3": "fa3_prefill", "fi": "fi_prefill"}
    grid = {"first": shapes, "blind2": blind2_shapes, "blind3": blind3_shapes, "blind4": blind4_shapes,
            "blind5": blind5_shapes, "scan6": scan6_shapes}[args.grid]()
    shp = [s for s in grid if s["family"] in {fam_of[p] for p in parts if p in fam_of}]
    if args.smoke:
        shp = [s for s in shp if s["batch"] * s["context"] <= 4096][:4]
    done, fail = 0, 0
    for k, s in enumerate(shp):
        if time.time() - t0 > args.budget_s:
            say(f"budget reached after {done} rows")
            break
        try:
            fn, R, check, res = build(s)
            note = ""
            if s["batch"] * s["q_rows"] * s["context"] * s["heads"] <= (1 << 27):
                try:
                    note = f"rel_err={check():.2e}"
                except Exception as e:   # noqa: BLE001  (the reference, not the kernel)
                    note = f"check not run: {repr(e)[:60]}"
            med = harness.time_graph(env, fn, target_us=250.0, reps=5, max_calls=64)
            if res.get("plan"):
                note = (note + " plan=" + res["plan"]).strip()
            if k % 3 == 0 or s["dtype"] == "fp8":
                lab = (f"{s['family']}:{s['model']}:{s['dtype']}:B{s['batch']}:P{s['q_rows']}:O{s['prefix']}")
                for r in profile_one(torch, fn, lab):
                    gw.writerow(r)
                gcsv.flush()
            w.writerow({**meta, **{c: s[c] for c in s if c in COLS}, "median_us": f"{med['median']:.3f}",
                        "p20_us": f"{med['p20']:.3f}", "p80_us": f"{med['p80']:.3f}", "calls": med["calls"],
                        "kv_copies": R, "note": note})
            fcsv.flush()
            done += 1
            say(f"{s['family']} {s['model']} {s['dtype']} B{s['batch']} P{s['q_rows']} O{s['prefix']}: "
                f"{med['median']:.1f} us {note[:40]}")
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
