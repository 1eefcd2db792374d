"""MLA prefill rows of FlashAttention-3's own hopper/ forward (flash-attention @ 0251105a, built by
lab/kernels/build_fa3_binary.py --mla: its hdim 128 instantiations plus the hdim 192 x 128 ones), as vLLM's MLA backends
prefill DeepSeek-style models on Hopper: flash_attn_varlen_func over contiguous, non-absorbed heads (Q and K of 192 =
128 nope + 64 rope, V of 128), bf16, causal (bottom-right aligned: a request's P new queries see its O cached keys and
their own prefix), num_splits 1 (the interface's default).

A row is B requests of P new tokens (q_rows) after O cached ones (prefix): K / V of T = O + P tokens each, packed back to
back (cu_seqlens). Call i reads K / V copy i % R, R copies spanning >= 256 MiB (far beyond the 50 MB L2); Q and the output
are one buffer. Timing: the lab harness's CUDA-graph timer (harness.time_graph). Every third shape's kernels are recorded
(torch.profiler). A reference check (fp32 softmax attention) on rows small enough.

`shapes()` imports without torch: lab/kernels/predict_mla_prefill.py prices the same list before the run. Heads per GPU:
DeepSeek-V3 / R1 (128 heads) at TP 1, 2, 4, 8 = 128, 64, 32, 16; Kimi-K2 (64 heads) at TP 1 and 4 = 64, 16.

`--grid blind2` (script version 2): BLIND2_* shapes, none of them in grid 1, for the candidate judged after it (the
library built by grid 1's call is carried: run_mla_prefill_blind2_device.sh).

    python3 measure_mla_prefill.py --out DIR --pkg FA3_PKG_DIR [--budget-s 200] [--smoke] [--grid first|blind2]
"""
from __future__ import annotations

import argparse
import csv
import datetime
import math
import os
import sys
import time

SCRIPT_VERSION = 2   # 2: --grid blind2
FA3_COMMIT = "0251105a2fb19d2957484b7f023cd8c115286ced"
HERE = os.path.dirname(os.path.abspath(__file__))
D_QK, D_V = 192, 128
#: model label -> heads per GPU
HEADS = {"dsv3_tp1": 128, "dsv3_tp2": 64, "dsv3_tp4": 32, "dsv3_tp8": 16, "kimik2_tp1": 64, "kimik2_tp4": 16}
#: (B, P new tokens, O cached), fixed before the run
FRESH = [(1, 512, 0), (1, 2048, 0), (1, 8192, 0), (1, 16384, 0), (4, 1024, 0), (2, 4096, 0)]
CHUNKED = [(1, 2048, 8192), (1, 1024, 30000), (1, 4096, 4096), (2, 512, 6000)]
#: Kimi-K2's rows: (B, P, O) in none of DeepSeek-V3's (the same head dims: another model's shapes, not its heads)
SUBSET = [(1, 3000, 0), (3, 1536, 0), (8, 384, 0), (1, 6000, 2000), (1, 768, 12000)]
#: blind grid 2 (--grid blind2): (B, P, O) in no grid-1 row, on the same four DeepSeek-V3 head counts
BLIND2_FRESH = [(1, 1536, 0), (1, 3072, 0), (1, 12000, 0), (2, 6000, 0), (6, 768, 0), (16, 256, 0), (1, 24000, 0)]
BLIND2_CHUNKED = [(1, 1536, 2000), (1, 3000, 16000), (1, 512, 60000), (3, 1024, 3000), (1, 8192, 24576)]
COLS = ["script_version", "date", "device", "driver", "torch", "cuda", "library", "family", "model", "dtype", "heads",
        "kv_heads", "head_dim", "head_dim_v", "batch", "q_rows", "prefix", "context", "causal", "num_splits",
        "median_us", "p20_us", "p80_us", "calls", "kv_copies", "note"]


def shapes() -> list[dict]:
    """The grid: DeepSeek-V3's heads at TP 1-8 on every (B, P, O) of FRESH + CHUNKED, Kimi-K2's at TP 1 and 4 on
    SUBSET."""
    out = []
    for model, h in HEADS.items():
        for B, P, O in (FRESH + CHUNKED if model.startswith("dsv3") else SUBSET):
            out.append(dict(family="fa3_mla_prefill", model=model, dtype="bf16", heads=h, kv_heads=h, head_dim=D_QK,
                            head_dim_v=D_V, batch=B, q_rows=P, prefix=O, context=O + P, causal=1, num_splits=1,
                            regime=("fresh (O = 0)" if O == 0 else "chunked (O > 0)") + ", "
                            + (">= 64 heads" if h >= 64 else "<= 32 heads")))
    return out


def blind2_shapes() -> list[dict]:
    """Blind grid 2: DeepSeek-V3's heads at TP 1-8 on BLIND2_FRESH + BLIND2_CHUNKED."""
    out = []
    for model, h in HEADS.items():
        if not model.startswith("dsv3"):
            continue
        for B, P, O in BLIND2_FRESH + BLIND2_CHUNKED:
            out.append(dict(family="fa3_mla_prefill", model=model, dtype="bf16", heads=h, kv_heads=h, head_dim=D_QK,
                            head_dim_v=D_V, batch=B, q_rows=P, prefix=O, context=O + P, causal=1, num_splits=1,
                            regime=("fresh (O = 0)" if O == 0 else "chunked (O > 0)") + ", "
                            + (">= 64 heads" if h >= 64 else "<= 32 heads")))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--pkg", required=True, help="folder holding flash_attn_3/_C.abi3.so and flash_attn_interface.py")
    ap.add_argument("--budget-s", type=float, default=200.0)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--grid", choices=("first", "blind2"), default="first")
    args = ap.parse_args()
    t0 = time.time()
    os.makedirs(args.out, exist_ok=True)
    import torch
    sys.path.insert(0, os.path.dirname(HERE))   # lab/harness.py
    sys.path.insert(0, HERE)
    sys.path.insert(0, args.pkg)
    import harness
    from flash_attn_interface import flash_attn_varlen_func as fa3_fn
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
            "cuda": torch.version.cuda, "library": f"flash-attention {FA3_COMMIT[:10]} (hdim 128 + 192 x 128)"}
    say("env", meta, "SMs", dev.multi_processor_count)
    env = harness.Env("cuda:0")
    pre = "mla_prefill" if args.grid == "first" else f"mla_prefill_{args.grid}"
    rows_path = os.path.join(args.out, pre + ".csv")
    fcsv = open(rows_path, "w", newline="")
    w = csv.DictWriter(fcsv, fieldnames=COLS)
    w.writeheader()
    gcsv = open(os.path.join(args.out, pre + "_grids.csv"), "w", newline="")
    gw = csv.DictWriter(gcsv, fieldnames=["label", "kernel_name", "dur_us", "grid_x", "grid_y", "grid_z", "block_x",
                                          "block_y", "block_z", "regs", "smem"])
    gw.writeheader()
    shp = shapes() if args.grid == "first" else blind2_shapes()
    if args.smoke:
        shp = [s for s in shp if s["context"] <= 2048][:3]
    done, fail = 0, 0
    g = torch.Generator(device="cuda")
    g.manual_seed(0)
    for k, s in enumerate(shp):
        if time.time() - t0 > args.budget_s:
            say(f"budget reached after {done} rows")
            break
        try:
            B, P, O, T, H = s["batch"], s["q_rows"], s["prefix"], s["context"], s["heads"]
            kv_bytes = B * T * H * (D_QK + D_V) * 2
            R = int(max(1, min(8, math.ceil((256 << 20) / kv_bytes))))
            q = torch.randn((B * P, H, D_QK), device="cuda", dtype=torch.bfloat16, generator=g)
            ks = [torch.randn((B * T, H, D_QK), device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(R)]
            vs = [torch.randn((B * T, H, D_V), device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(R)]
            cq = torch.arange(0, B + 1, device="cuda", dtype=torch.int32) * P
            ck = torch.arange(0, B + 1, device="cuda", dtype=torch.int32) * T
            scale = 1.0 / math.sqrt(D_QK)
            res = {}

            def fn(i, q=q, ks=ks, vs=vs, cq=cq, ck=ck, P=P, T=T, R=R):
                res["o"] = fa3_fn(q, ks[i % R], vs[i % R], cq, ck, P, T, softmax_scale=scale, causal=True,
                                  num_splits=1)

            note = ""
            if B * P * T * H <= (1 << 27):
                fn(0)
                o = res["o"]
                o = (o[0] if isinstance(o, tuple) else o).float()
                errs = []
                for b in range(B):
                    qq = q[b * P:(b + 1) * P].float().transpose(0, 1)
                    kk = ks[0][b * T:(b + 1) * T].float().transpose(0, 1)
                    vv = vs[0][b * T:(b + 1) * T].float().transpose(0, 1)
                    sc = qq @ kk.transpose(-1, -2) * scale
                    qi = torch.arange(P, device="cuda")[:, None] + O
                    sc = sc.masked_fill(torch.arange(T, device="cuda")[None, :] > qi, float("-inf"))
                    ref = (sc.softmax(-1) @ vv).transpose(0, 1)
                    errs.append(float((o[b * P:(b + 1) * P] - ref).norm() / ref.norm()))
                note = f"rel_err={max(errs):.2e}"
            med = harness.time_graph(env, fn, target_us=250.0, reps=5, max_calls=64)
            if k % 3 == 0:
                lab = f"{s['family']}:{s['model']}:B{B}:P{P}:O{O}"
                for r in profile_one(torch, fn, lab):
                    gw.writerow(r)
                gcsv.flush()
            w.writerow({**meta, **{c: s[c] for c in s if c in COLS}, "median_us": f"{med['median']:.3f}",
                        "p20_us": f"{med['p20']:.3f}", "p80_us": f"{med['p80']:.3f}", "calls": med["calls"],
                        "kv_copies": R, "note": note})
            fcsv.flush()
            done += 1
            say(f"{s['model']} H{H} B{B} P{P} O{O}: {med['median']:.1f} us {note}")
        except Exception as e:   # noqa: BLE001
            fail += 1
            w.writerow({**meta, **{c: s[c] for c in s if c in COLS}, "note": f"failed: {repr(e)[:300]}"})
            fcsv.flush()
            if fail <= 4:
                say(f"{s} failed: {repr(e)[:800]}")
            if fail >= 6 and done == 0:
                say("giving up")
                break
        finally:
            torch.cuda.empty_cache()
    say(f"rows {done} failed {fail} total {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
