"""Measure FlashAttention-3's own hopper/ forward binary (flash-attention @ 0251105a, built for sm_90a by
lab/kernels/build_fa3_binary.py: hdim 128, bf16 + fp8 e4m3, paged / split / PackGQA, combine and prepare-scheduler
kernels) on the lent H100: paged decode (q = 1) and verification (q = 2-4, causal) rows through
flash_attn_interface.flash_attn_with_kvcache with a page table and cache_seqlens (seqused_k: the varlen path with
FA3's dynamic split plan, flash_prepare_scheduler.cu), as vLLM's FLASH_ATTN backend and SGLang's fa3 backend call it.

Each shape is timed with num_splits=0 (FA3's own heuristic, as engines call it); the split-regime subset (tag
`split`) is also timed with num_splits=1 (row column num_splits = 1) to separate the split plan from the per-tile
rates. fp8 rows: q, K and V in float8_e4m3fn (FA3's fp8 forward takes all three in e4m3; output bf16).

Timing: the lab harness's CUDA-graph timer (harness.time_graph, as measure_fa4cute_attention.py). K/V live in one
pool per dtype far larger than L2; call i reads through page table i % R, R copies so that R x the K/V bytes >=
128 MiB: every call reads its cache from HBM.

    python3 measure_fa3_binary.py --pkg DIR --out DIR [--budget-s 200] [--smoke] [--grid first|blind|blind2|blind3]
        [--stride K]

`shapes()` is importable without torch: lab/kernels/predict_fa3_binary.py prices the same list before the run.
"""
from __future__ import annotations

import argparse
import csv
import datetime
import math
import os
import sys
import time

SCRIPT_VERSION = 4   # 2: --grid blind; 3: --grid blind2; 4: --grid blind3, --stride
FA3_COMMIT = "0251105a2fb19d2957484b7f023cd8c115286ced"
CUTLASS_COMMIT = "7127592069c2fe01b041e174ba4345ef9b279671"
HERE = os.path.dirname(os.path.abspath(__file__))
#: heads (query, KV) per GPU: Llama-3.1-8B, Qwen2.5-14B (40/8), Qwen2.5-7B (28/4), at tensor parallel 1 and 2
HEADS = {"llama8b": (32, 8), "llama8b_tp2": (16, 4), "qwen14b": (40, 8), "qwen14b_tp2": (20, 4),
         "qwen7b": (28, 4), "qwen7b_tp2": (14, 2), "llama70b_tp8": (8, 1)}
MAX_TOKENS_X_HKV = 8 << 22      # B x T x Hkv <= 32 Mi: K + V of one shape <= 16 GiB in bf16


def shapes() -> list[dict]:
    """Every shape, in measuring order (the split regime and the main decode grid first)."""
    out = []

    def add(model, bts, q=1, page=16, dtype="bf16", tag="", splits=(0,)):
        hq, hkv = HEADS[model]
        for b, t in bts:
            if b * t * hkv > MAX_TOKENS_X_HKV:
                continue
            for ns in splits:
                out.append(dict(family="fa3", kernel="fa3_hopper", model=model, heads=hq, kv_heads=hkv, head_dim=128,
                                dtype=dtype, batch=b, q_rows=q, context=t, page_size=page, causal=int(q > 1),
                                num_splits=ns, tag=tag))

    # split regime: few requests x KV heads at long context (num_splits_heuristic splits), heuristic and unsplit
    add("llama8b", [(b, t) for t in (4096, 32768, 131072) for b in (1, 2, 4, 8)], tag="split", splits=(0, 1))
    add("qwen7b", [(b, t) for t in (8192, 65536) for b in (1, 4)], tag="split", splits=(0, 1))
    add("llama8b_tp2", [(b, t) for t in (16384, 131072) for b in (1, 8)], tag="split", splits=(0, 1))
    add("qwen7b_tp2", [(1, 32768), (4, 131072)], tag="split", splits=(0, 1))
    # many-wave regime and middle contexts
    add("llama8b", [(b, t) for t in (1024, 4096, 16384) for b in (32, 128, 512)], tag="waves")
    add("qwen14b", [(b, t) for t in (2048, 8192) for b in (16, 64, 256)], tag="waves")
    add("qwen7b", [(b, t) for t in (1024, 8192) for b in (64, 512)], tag="waves")
    add("qwen14b_tp2", [(32, 32768), (128, 4096), (512, 1024)], tag="waves")
    add("llama8b_tp2", [(64, 8192), (256, 2048)], tag="waves")
    # short contexts
    add("llama8b", [(b, t) for t in (64, 256) for b in (1, 16, 128, 512)], tag="short")
    add("qwen7b_tp2", [(8, 64), (256, 256)], tag="short")
    # page 64
    add("llama8b", [(1, 32768), (4, 131072), (16, 1024), (128, 4096), (512, 256)], page=64, tag="page64")
    add("qwen14b", [(2, 65536), (64, 8192)], page=64, tag="page64")
    # verification (q 2-4, causal)
    for q in (2, 3, 4):
        add("llama8b", [(1, 32768), (8, 4096), (64, 2048), (256, 1024)], q=q, tag="verify")
    add("qwen14b", [(4, 16384), (128, 2048)], q=4, tag="verify")
    # fp8 e4m3 (q, K, V)
    add("llama8b", [(1, 131072), (4, 32768), (32, 4096), (256, 1024), (512, 8192), (128, 256)], dtype="e4m3",
        tag="fp8")
    add("llama8b", [(1, 32768), (64, 4096)], dtype="e4m3", tag="fp8", splits=(1,))
    add("qwen14b", [(2, 65536), (128, 2048)], dtype="e4m3", tag="fp8")
    add("llama8b", [(8, 4096), (64, 2048)], q=4, dtype="e4m3", tag="fp8")
    # controls: shapes of the FA4-CuTe campaign (fa3_fa4cute_nvidia-h100-80gb-hbm3_2026-11-26.csv)
    add("llama8b", [(256, 16), (1, 65536), (64, 4096), (16, 1024), (4, 16384), (512, 64)], tag="control_fa4cute")
    return out


def blind_shapes() -> list[dict]:
    """The blind grid (script version 2): shapes in none of shapes()' rows, priced with main's model and the model
    with hopper/'s prepare kernel and always-launched combine before they are measured: short contexts (16-512) at
    batch 1-384, the split regime at middle contexts (2K-24K, batch 1-12), a few many-wave controls, verification
    q 2 and fp8."""
    out = []

    def add(model, bts, q=1, page=16, dtype="bf16", tag=""):
        hq, hkv = HEADS[model]
        for b, t in bts:
            out.append(dict(family="fa3", kernel="fa3_hopper", model=model, heads=hq, kv_heads=hkv, head_dim=128,
                            dtype=dtype, batch=b, q_rows=q, context=t, page_size=page, causal=int(q > 1),
                            num_splits=0, tag=tag))

    add("llama8b", [(b, t) for t in (32, 128, 512) for b in (1, 2, 8, 48, 384)], tag="b_short")
    add("qwen14b", [(b, t) for t in (96, 384) for b in (1, 24, 200)], tag="b_short")
    add("qwen7b_tp2", [(3, 160), (96, 48)], tag="b_short")
    add("llama8b", [(b, t) for t in (2048, 8192, 24576) for b in (1, 3, 6, 12)], tag="b_split")
    add("qwen14b_tp2", [(1, 6144), (5, 12288)], tag="b_split")
    add("qwen7b", [(2, 3072), (6, 20000)], tag="b_split")
    add("llama8b", [(24, 2048), (96, 6144), (320, 1536)], tag="b_waves")
    add("qwen14b", [(48, 3000), (160, 768)], tag="b_waves")
    add("llama8b", [(2, 12288), (24, 1024), (160, 384)], q=2, tag="b_verify")
    add("llama8b", [(2, 8192), (12, 512), (96, 2048)], dtype="e4m3", tag="b_fp8")
    return out


def blind2_shapes() -> list[dict]:
    """Blind grid 2 (script version 3): shapes in neither shapes() nor blind_shapes(), priced with main's model and
    the model with the persistent kernel's own kind (scheduler loads per tile, the partial last round, the prepare
    kernel's own terms) before they are measured: tiny calls (batch <= 8, context <= 200), short contexts at batch
    32-512, the split regime at middle contexts (batch 2-12), fp8, and controls (many waves, long split, q 2-3)."""
    out = []

    def add(model, bts, q=1, page=16, dtype="bf16", tag=""):
        hq, hkv = HEADS[model]
        for b, t in bts:
            out.append(dict(family="fa3", kernel="fa3_hopper", model=model, heads=hq, kv_heads=hkv, head_dim=128,
                            dtype=dtype, batch=b, q_rows=q, context=t, page_size=page, causal=int(q > 1),
                            num_splits=0, tag=tag))

    add("llama8b", [(1, 20), (4, 48), (6, 96), (3, 112)], tag="c_tiny")
    add("qwen14b", [(2, 64), (5, 128)], tag="c_tiny")
    add("qwen7b", [(1, 80), (7, 24)], tag="c_tiny")
    add("llama8b_tp2", [(4, 100)], tag="c_tiny")
    add("qwen14b_tp2", [(2, 200)], tag="c_tiny")
    add("llama8b", [(32, 48), (64, 160), (160, 64), (256, 96), (448, 40), (512, 200)], tag="c_short")
    add("qwen14b", [(40, 64), (96, 128), (320, 48)], tag="c_short")
    add("qwen7b", [(72, 192), (480, 96)], tag="c_short")
    add("qwen7b_tp2", [(192, 64)], tag="c_short")
    add("llama8b_tp2", [(128, 112)], tag="c_short")
    add("llama8b", [(2, 5120), (5, 3584), (7, 10240), (9, 6144), (10, 16000), (11, 2560)], tag="c_split")
    add("qwen7b", [(3, 12000), (8, 7168)], tag="c_split")
    add("qwen14b", [(4, 9000), (6, 4608)], tag="c_split")
    add("qwen14b_tp2", [(10, 3072)], tag="c_split")
    add("llama8b_tp2", [(7, 20480)], tag="c_split")
    add("llama8b", [(1, 72), (6, 6144), (40, 128), (300, 96), (10, 3000)], dtype="e4m3", tag="c_fp8")
    add("qwen14b", [(3, 16384)], dtype="e4m3", tag="c_fp8")
    add("llama8b", [(64, 3072), (200, 2048), (1, 49152), (3, 65536)], tag="c_control")
    add("qwen14b", [(24, 12288)], tag="c_control")
    add("qwen7b", [(256, 3000)], tag="c_control")
    add("llama8b", [(4, 6000)], q=2, tag="c_control")
    add("llama8b", [(96, 650)], q=3, tag="c_control")
    return out


def blind3_shapes() -> list[dict]:
    """Blind grid 3 (script version 4): shapes in none of the earlier grids (shapes(), blind_shapes(), blind2_shapes()),
    priced with main's model and the model with the binary's own streaming rate, per-block times and per-tile turnover
    before they are measured: short contexts at batch 24-640 (several one-block tiles per CTA), tiny calls, middle and
    long contexts at small and large batch, verification q 2-6, fp8, page 64, the GQA of Llama-3.1-8B (32/8),
    Llama-3.1-70B at tensor parallel 8 (8/1) and Qwen2.5 (28/4, 40/8)."""
    out = []

    def add(model, bts, q=1, page=16, dtype="bf16", tag=""):
        hq, hkv = HEADS[model]
        for b, t in bts:
            out.append(dict(family="fa3", kernel="fa3_hopper", model=model, heads=hq, kv_heads=hkv, head_dim=128,
                            dtype=dtype, batch=b, q_rows=q, context=t, page_size=page, causal=int(q > 1),
                            num_splits=0, tag=tag))

    add("llama8b", [(24, 72), (80, 56), (208, 40), (352, 88), (416, 24), (640, 48)], tag="d_short")
    add("qwen7b", [(120, 80), (400, 36)], tag="d_short")
    add("llama70b_tp8", [(512, 96), (1024, 64), (256, 232)], tag="d_short")
    add("qwen14b", [(272, 60)], tag="d_short")
    add("llama8b", [(3, 40), (7, 180)], tag="d_tiny")
    add("llama70b_tp8", [(2, 150), (8, 56)], tag="d_tiny")
    add("qwen7b", [(5, 240)], tag="d_tiny")
    add("llama8b", [(20, 1536), (48, 5000), (112, 2500)], tag="d_middle")
    add("llama70b_tp8", [(16, 3500), (96, 6000), (300, 1800)], tag="d_middle")
    add("qwen14b", [(36, 4000)], tag="d_middle")
    add("qwen7b", [(80, 2200)], tag="d_middle")
    add("llama8b", [(1, 90000), (3, 40000), (14, 20000)], tag="d_long")
    add("llama70b_tp8", [(1, 100000), (4, 60000), (10, 30000)], tag="d_long")
    add("qwen7b", [(2, 28000)], tag="d_long")
    add("qwen14b", [(5, 45000)], tag="d_long")
    add("llama8b", [(3, 6000), (48, 500)], q=2, tag="d_verify")
    add("llama8b", [(12, 3000), (160, 200)], q=4, tag="d_verify")
    add("llama70b_tp8", [(64, 2000), (6, 20000)], q=3, tag="d_verify")
    add("qwen7b", [(40, 900)], q=6, tag="d_verify")
    add("llama70b_tp8", [(200, 300)], q=5, tag="d_verify")
    add("llama8b", [(16, 160), (384, 64), (6, 24000), (80, 3500)], dtype="e4m3", tag="d_fp8")
    add("llama70b_tp8", [(128, 1200), (2, 70000)], dtype="e4m3", tag="d_fp8")
    add("qwen7b", [(240, 640)], dtype="e4m3", tag="d_fp8")
    add("llama8b", [(24, 2000)], q=3, dtype="e4m3", tag="d_fp8")
    add("llama8b", [(2, 52000), (40, 3000), (300, 128)], page=64, tag="d_page64")
    add("llama70b_tp8", [(160, 1500), (12, 16000)], page=64, tag="d_page64")
    add("qwen7b", [(96, 400)], q=2, page=64, tag="d_page64")
    add("llama8b", [(48, 1000)], q=1, page=64, dtype="e4m3", tag="d_page64")
    return out


def copies_for(nbytes: float) -> int:
    return int(max(1, min(16, math.ceil((128 << 20) / max(nbytes, 1.0)))))


COLS = ["script_version", "date", "device", "driver", "torch", "cuda", "flash_attn_commit", "cutlass_commit", "family",
        "kernel", "model", "dtype", "heads", "kv_heads", "head_dim", "batch", "q_rows", "context", "page_size", "causal",
        "num_splits", "tag", "median_us", "p20_us", "p80_us", "calls", "kv_copies", "note"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=200.0)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--grid", choices=("first", "blind", "blind2", "blind3"), default="first")
    ap.add_argument("--stride", type=int, default=1, help="measure every STRIDE-th shape of the grid (a repeat)")
    ap.add_argument("--pkg", required=True, help="folder holding flash_attn_3/_C.abi3.so and flash_attn_interface.py")
    args = ap.parse_args()
    t0 = time.time()
    os.makedirs(args.out, exist_ok=True)
    import torch
    sys.path.insert(0, args.pkg)
    sys.path.insert(0, os.path.dirname(HERE))   # lab/harness.py in the repository
    sys.path.insert(0, HERE)
    import harness
    from flash_attn_interface import flash_attn_with_kvcache
    from measure_production_attention import profile_one

    log = open(os.path.join(args.out, "log.txt"), "a")

    def say(*a):
        msg = " ".join(str(x) for x in a)
        print(msg, flush=True)
        log.write(msg + "\n")
        log.flush()

    dev = torch.cuda.get_device_properties(0)
    meta = {"script_version": SCRIPT_VERSION, "date": datetime.datetime.now(datetime.timezone.utc).date().isoformat(),
            "device": dev.name, "driver": harness.driver_version(), "torch": torch.__version__,
            "cuda": torch.version.cuda, "flash_attn_commit": FA3_COMMIT, "cutlass_commit": CUTLASS_COMMIT}
    say("env", meta, "SMs", dev.multi_processor_count)
    env = harness.Env("cuda:0")
    POOL = 1 << 33 if not args.smoke else 1 << 28     # elements per pool (bf16: 16 GiB each for K and V)
    pools = {}
    g = torch.Generator(device="cuda")
    g.manual_seed(0)
    for dt, tdt, n in (("bf16", torch.bfloat16, POOL), ("e4m3", torch.float8_e4m3fn, POOL // 2)):
        kv = []
        for _ in range(2):
            p = torch.empty(n, dtype=tdt, device="cuda")
            for i in range(0, n, 1 << 28):
                m = min(1 << 28, n - i)
                p[i:i + m] = torch.randn(m, device="cuda", generator=g, dtype=torch.float32).mul_(0.5).to(tdt)
            kv.append(p)
        pools[dt] = kv
    torch.cuda.synchronize()
    say(f"pools filled in {time.time() - t0:.1f} s")

    def build(s):
        B, T, hq, hkv, d, page, q = (s["batch"], s["context"], s["heads"], s["kv_heads"], s["head_dim"],
                                     s["page_size"], s["q_rows"])
        dt = s["dtype"]
        tdt = torch.bfloat16 if dt == "bf16" else torch.float8_e4m3fn
        kpool, vpool = pools[dt]
        esz = 2 if dt == "bf16" else 1
        R = copies_for(B * T * hkv * d * esz * 2)
        qt = torch.randn((B, q, hq, d), device="cuda", dtype=torch.bfloat16).to(tdt)
        P = (T + page - 1) // page
        per_page = page * hkv * d
        npages = kpool.numel() // per_page
        kc = kpool[: npages * per_page].view(npages, page, hkv, d)
        vc = vpool[: npages * per_page].view(npages, page, hkv, d)
        seqused = torch.full((B,), T, device="cuda", dtype=torch.int32)
        sets = []
        for r in range(R):
            if R * B * P <= npages:
                if r == 0:
                    perm = torch.randperm(npages, device="cuda")[: R * B * P]
                pt = perm[r * B * P:(r + 1) * B * P]
            else:
                pt = torch.randint(0, npages, (B * P,), device="cuda")
            sets.append(pt.to(torch.int32).view(B, P).contiguous())
        causal = bool(s["causal"])
        ns = int(s["num_splits"])
        res = {}

        def fn(i):
            res["o"] = flash_attn_with_kvcache(qt, kc, vc, cache_seqlens=seqused, page_table=sets[i % len(sets)],
                                               causal=causal, num_splits=ns, softmax_scale=1.0 / math.sqrt(d))

        def check():
            fn(0)
            o = res["o"]
            o = o[0] if isinstance(o, tuple) else o
            pt = sets[0]
            kk = kc[pt.long()].flatten(1, 2)[:, :T].float()
            vv = vc[pt.long()].flatten(1, 2)[:, :T].float()
            qq = qt.float().transpose(1, 2)
            G = hq // hkv
            kf = kk.transpose(1, 2).repeat_interleave(G, 1)
            vf = vv.transpose(1, 2).repeat_interleave(G, 1)
            sc = qq @ kf.transpose(-1, -2) / math.sqrt(d)
            if causal:
                qi = torch.arange(q, device="cuda")[:, None] + (T - q)
                ki = torch.arange(T, device="cuda")[None, :]
                sc = sc.masked_fill(ki > qi, float("-inf"))
            ref = (sc.softmax(-1) @ vf).transpose(1, 2)
            return float((o.float() - ref).norm() / ref.norm())

        return fn, len(sets), check

    pre = {"first": "fa3_binary", "blind": "fa3_binary_blind", "blind2": "fa3_binary_blind2",
           "blind3": "fa3_binary_blind3"}[args.grid]
    rows_path = os.path.join(args.out, pre + ".csv")
    grids_path = os.path.join(args.out, pre + "_grids.csv")
    fcsv = open(rows_path, "w", newline="")
    w = csv.DictWriter(fcsv, fieldnames=COLS)
    w.writeheader()
    gcsv = open(grids_path, "w", newline="")
    gw = csv.DictWriter(gcsv, fieldnames=["label", "kernel_name", "dur_us", "grid_x", "grid_y", "grid_z", "block_x",
                                          "block_y", "block_z", "regs", "smem"])
    gw.writeheader()
    shp = {"first": shapes, "blind": blind_shapes, "blind2": blind2_shapes, "blind3": blind3_shapes}[args.grid]()
    shp = shp[::max(args.stride, 1)]
    if args.smoke:
        shp = shp[:2] + [s for s in shp if s["dtype"] == "e4m3"][:1]
    done, fail = 0, 0
    for k, s in enumerate(shp):
        if time.time() - t0 > args.budget_s:
            say(f"budget reached after {done} rows")
            break
        try:
            fn, R, check = build(s)
            note = ""
            if s["batch"] * s["context"] <= (1 << 16) or (s["batch"] == 1 and s["context"] <= 32768):
                note = f"rel_err={check():.2e}"
            med = harness.time_graph(env, fn, target_us=250.0, reps=5, max_calls=128)
            if k % 3 == 0 or s["tag"] in ("split", "fp8"):
                lab = (f"fa3:{s['model']}:{s['dtype']}:p{s['page_size']}:q{s['q_rows']}:B{s['batch']}:T{s['context']}"
                       f":ns{s['num_splits']}")
                for r in profile_one(torch, fn, lab):
                    gw.writerow(r)
                gcsv.flush()
            w.writerow({**meta, **{c: s[c] for c in s if c in COLS}, "median_us": f"{med['median']:.3f}",
                        "p20_us": f"{med['p20']:.3f}", "p80_us": f"{med['p80']:.3f}", "calls": med["calls"],
                        "kv_copies": R, "note": note})
            fcsv.flush()
            done += 1
            if done % 10 == 0:
                say(f"{done} rows, {time.time() - t0:.0f} s; last {s['model']} B{s['batch']} T{s['context']} "
                    f"{med['median']:.2f} us {note}")
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
