"""Measure FlashAttention's CuTe-DSL Hopper forward (flash-attn-4 4.0.0b36, flash_attn/cute, FlashAttentionForwardSm90)
on the lent H100: decode (q = 1) and verification (q = 4 / 8, causal) rows over a paged or contiguous bf16 K/V cache,
the measured stand-in of the `fa3` family (simulator/kernels/data/attention_families.yaml says how far it stands for
the FA3 binary engines ship). One CSV row per shape, plus torch.profiler launch records (name, grid, block, registers,
shared memory) of one call per configuration.

What the interface launches on sm_90 (flash_attn/cute/interface.py _flash_attn_fwd, read before measuring): tiles
from _tile_size_fwd_sm90 (128 x 128 at head dim 128), PackGQA when G > 1, NO split-KV ("SplitKV not supported on SM
9.0": num_splits must be 1, so there is no combine kernel), SingleTileScheduler (one CTA per (m-block, KV head,
request), not persistent), paged K/V by TMA only when page_size == tile_n (128), else by cp.async (paged_kv.py).
fp8 is SM100-only in FA4-CuTe ("FP8 is only supported on SM100"): bf16 only.

Timing: the lab harness's CUDA-graph timer (lab/harness.py time_graph, as lab/kernels/_timing.py uses it). K/V live
in one pool per call shape far larger than L2; call i reads through page table / pool offset i % R, R copies so that
R x the K/V bytes >= 128 MiB: every call reads its cache from HBM (as the campaign does).

    python3 measure_fa4cute_attention.py --out DIR [--budget-s 200] [--smoke] [--grid campaign|blind]

`shapes()` / `blind_shapes()` are importable without torch: lab/kernels/predict_fa4cute_attention.py prices the same
lists before the run. `--grid blind` (script version 2) measures blind_shapes(): shapes in none of the campaign's rows
(contexts 24-240 and 320-3000 at batches 2-12 and 96-900, K/V by TMA at 2000-50000, Llama-3.1-70B's 64 / 8 heads,
verification at q 2 and 3), priced with the model before they are measured.
"""
from __future__ import annotations

import argparse
import csv
import datetime
import math
import os
import sys
import time

SCRIPT_VERSION = 2
HERE = os.path.dirname(os.path.abspath(__file__))
#: heads (query, KV): Llama-3.1-8B, Llama-3.1-70B at tensor parallel 8, Qwen2.5-7B
HEADS = {"llama8b": (32, 8), "llama70b_tp8": (8, 1), "qwen7b": (28, 4), "llama70b": (64, 8)}
T_GRID = (16, 64, 256, 1024, 4096, 16384, 65536, 131072)
B_GRID = (1, 4, 16, 64, 256, 512)
MAX_TOKENS = 1 << 22
VERIFY_T = (64, 256, 1024, 4096, 16384, 65536)
VERIFY_B = (1, 4, 16, 64, 256)
SUB_T = (16, 256, 1024, 4096, 16384, 65536)
SUB_B = (1, 16, 64, 256)


def _bt(ts, bs, max_tokens=MAX_TOKENS):
    return [(b, t) for t in ts for b in bs if b * t <= max_tokens]


def shapes() -> list[dict]:
    """Every shape, in measuring order (the main decode grid first, so a budget cut loses the side grids)."""
    out = []

    def add(model, page, bts, q=1, tag=""):
        hq, hkv = HEADS[model]
        for b, t in bts:
            out.append(dict(family="fa3", kernel="fa4cute_sm90", model=model, heads=hq, kv_heads=hkv, head_dim=128,
                            dtype="bf16", batch=b, q_rows=q, context=t, page_size=page, causal=int(q > 1), tag=tag))

    add("llama8b", 16, _bt(T_GRID, B_GRID))
    add("llama70b_tp8", 16, _bt(T_GRID, B_GRID))
    add("qwen7b", 16, _bt(T_GRID, B_GRID))
    add("llama8b", 16, _bt(VERIFY_T, VERIFY_B), q=4)
    add("llama8b", 16, _bt(VERIFY_T, VERIFY_B), q=8)
    add("llama70b_tp8", 16, _bt(VERIFY_T, VERIFY_B), q=4)
    add("llama8b", 128, _bt(SUB_T, SUB_B))          # page == tile_n: the TMA page path
    add("llama8b", 0, _bt(SUB_T, SUB_B))            # contiguous K/V (no page table)
    add("llama8b", 64, _bt((256, 4096, 65536), (1, 16, 256)))
    add("llama8b", 1, _bt((256, 4096, 16384), (1, 16, 256), 1 << 21))
    return out


#: the blind grid: contexts and batches in none of shapes()' rows
BLIND_SHORT_T = (24, 100, 240)
BLIND_MID_T = (320, 1500, 3000)
BLIND_B = (2, 12, 96, 400, 900)
BLIND_VERIFY_T = (48, 200, 700, 3000)
BLIND_VERIFY_B = (6, 96, 400)
BLIND_TMA_T = (2000, 8000, 32768, 50000)
BLIND_TMA_B = (2, 12, 96)


def blind_shapes() -> list[dict]:
    """The blind grid, in measuring order (decode on the cp.async page walk first, then K/V by TMA, then verification),
    tagged `blind`."""
    out = []

    def add(model, page, bts, q=1):
        hq, hkv = HEADS[model]
        for b, t in bts:
            out.append(dict(family="fa3", kernel="fa4cute_sm90", model=model, heads=hq, kv_heads=hkv, head_dim=128,
                            dtype="bf16", batch=b, q_rows=q, context=t, page_size=page, causal=int(q > 1),
                            tag="blind"))

    for model in ("llama8b", "llama70b_tp8", "qwen7b", "llama70b"):
        add(model, 16, _bt(BLIND_SHORT_T + BLIND_MID_T, BLIND_B))
    for model in ("llama8b", "llama70b"):
        for page in (0, 128):
            add(model, page, _bt(BLIND_TMA_T, BLIND_TMA_B))
    for model in ("llama8b", "llama70b"):
        for q in (2, 3):
            add(model, 16, _bt(BLIND_VERIFY_T, BLIND_VERIFY_B), q=q)
    return out


def copies_for(nbytes: float) -> int:
    return int(max(1, min(16, math.ceil((128 << 20) / max(nbytes, 1.0)))))


COLS = ["script_version", "date", "device", "driver", "torch", "cuda", "flash_attn_4", "cutlass_dsl", "family", "kernel",
        "model", "dtype", "heads", "kv_heads", "head_dim", "batch", "q_rows", "context", "page_size", "causal", "tag",
        "median_us", "p20_us", "p80_us", "calls", "kv_copies", "note"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=200.0)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--grid", choices=("campaign", "blind"), default="campaign")
    args = ap.parse_args()
    t0 = time.time()
    os.makedirs(args.out, exist_ok=True)
    import torch
    sys.path.insert(0, HERE)
    sys.path.insert(0, os.path.dirname(HERE))
    from importlib.metadata import version

    import harness
    from flash_attn.cute import interface as fai

    log = open(os.path.join(args.out, "log.txt"), "a")

    def say(*a):
        msg = " ".join(str(x) for x in a)
        print(msg, flush=True)
        log.write(msg + "\n")
        log.flush()

    dev = torch.cuda.get_device_properties(0)
    meta = {"script_version": SCRIPT_VERSION, "date": datetime.datetime.now(datetime.timezone.utc).date().isoformat(),
            "device": dev.name, "driver": harness.driver_version(), "torch": torch.__version__,
            "cuda": torch.version.cuda, "flash_attn_4": version("flash-attn-4"),
            "cutlass_dsl": version("nvidia-cutlass-dsl")}
    say("env", meta, "SMs", dev.multi_processor_count, "cc", torch.cuda.get_device_capability(0))
    env = harness.Env("cuda:0")
    # one K and one V pool of 8 Gi bf16 elements each (16 GiB each): every shape views its cache inside them
    POOL = 1 << 33 if not args.smoke else 1 << 28
    kpool = torch.empty(POOL, dtype=torch.bfloat16, device="cuda")
    vpool = torch.empty(POOL, dtype=torch.bfloat16, device="cuda")
    g = torch.Generator(device="cuda")
    g.manual_seed(0)
    for p in (kpool, vpool):
        for i in range(0, POOL, 1 << 30):
            p[i:i + (1 << 30)].normal_(0.0, 0.5, generator=g)
    torch.cuda.synchronize()
    say(f"pools filled in {time.time() - t0:.1f} s")

    def build(s):
        B, T, hq, hkv, d, page, q = (s["batch"], s["context"], s["heads"], s["kv_heads"], s["head_dim"],
                                     s["page_size"], s["q_rows"])
        kv_bytes = B * T * hkv * d * 2 * 2
        R = copies_for(kv_bytes)
        qt = torch.randn((B, q, hq, d), device="cuda", dtype=torch.bfloat16)
        out = torch.empty_like(qt)
        sets = []
        if page > 0:
            P = (T + page - 1) // page
            per_page = page * hkv * d
            npages = POOL // per_page
            kc = kpool[: npages * per_page].view(npages, page, hkv, d)
            vc = vpool[: npages * per_page].view(npages, page, hkv, d)
            seqused = torch.full((B,), T, device="cuda", dtype=torch.int32)
            for r in range(R):
                if R * B * P <= npages:
                    if r == 0:
                        perm = torch.randperm(npages, device="cuda")[: R * B * P]
                    pt = perm[r * B * P:(r + 1) * B * P]
                else:
                    pt = torch.randint(0, npages, (B * P,), device="cuda")
                sets.append((kc, vc, pt.to(torch.int32).view(B, P).contiguous(), seqused))
        else:
            per = B * T * hkv * d
            if R * per > POOL:
                R = max(1, POOL // per)
            for r in range(R):
                sets.append((kpool[r * per:(r + 1) * per].view(B, T, hkv, d),
                             vpool[r * per:(r + 1) * per].view(B, T, hkv, d), None, None))
        causal = bool(s["causal"])

        def fn(i):
            kc, vc, pt, su = sets[i % len(sets)]
            fai._flash_attn_fwd(qt, kc, vc, page_table=pt, seqused_k=su, causal=causal, num_splits=1, out=out,
                                softmax_scale=1.0 / math.sqrt(d))

        def check():
            kc, vc, pt, su = sets[0]
            fn(0)
            if pt is not None:
                kk = kc[pt.long()].flatten(1, 2)[:, :T]
                vv = vc[pt.long()].flatten(1, 2)[:, :T]
            else:
                kk, vv = kc, vc
            qq = qt.float().transpose(1, 2)
            G = hq // hkv
            kf = kk.float().transpose(1, 2).repeat_interleave(G, 1)
            vf = vv.float().transpose(1, 2).repeat_interleave(G, 1)
            sc = qq @ kf.transpose(-1, -2) / math.sqrt(d)
            if causal:
                qi = torch.arange(q, device="cuda")[:, None] + (T - q)
                ki = torch.arange(T, device="cuda")[None, :]
                sc = sc.masked_fill(ki > qi, float("-inf"))
            ref = (sc.softmax(-1) @ vf).transpose(1, 2)
            return float((out.float() - ref).norm() / ref.norm())

        return fn, len(sets), check

    rows_path = os.path.join(args.out, "fa4cute.csv")
    grids_path = os.path.join(args.out, "fa4cute_grids.csv")
    fcsv = open(rows_path, "w", newline="")
    w = csv.DictWriter(fcsv, fieldnames=COLS)
    w.writeheader()
    gcsv = open(grids_path, "w", newline="")
    gw = csv.DictWriter(gcsv, fieldnames=["label", "kernel_name", "dur_us", "grid_x", "grid_y", "grid_z", "block_x",
                                          "block_y", "block_z", "regs", "smem"])
    gw.writeheader()
    sys.path.insert(0, HERE)
    from measure_production_attention import profile_one

    shp = shapes() if args.grid == "campaign" else blind_shapes()
    if args.smoke:
        shp = shp[:3]
    seen, done, fail, compiled = set(), 0, 0, 0
    for s in shp:
        if time.time() - t0 > args.budget_s:
            say(f"budget reached after {done} rows")
            break
        try:
            fn, R, check = build(s)
            cfg = (s["heads"] // s["kv_heads"], s["page_size"] if s["page_size"] in (0, 128) else "cp", s["causal"])
            note = ""
            if cfg not in seen:
                tc = time.time()
                fn(0)
                torch.cuda.synchronize()
                compiled += 1
                say(f"compiled {cfg} in {time.time() - tc:.1f} s")
            if cfg not in seen and s["batch"] * s["context"] <= (1 << 16):
                note = f"rel_err={check():.2e}"
                say(s["model"], s["page_size"], s["q_rows"], s["batch"], s["context"], note)
            med = harness.time_graph(env, fn, target_us=250.0, reps=5, max_calls=128)
            key = (cfg, s["model"], s["page_size"], s["q_rows"])
            if key not in seen or (s["batch"], s["context"]) in ((256, 16), (1, 65536), (64, 4096)):
                lab = f"fa4cute:{s['model']}:p{s['page_size']}:q{s['q_rows']}:B{s['batch']}:T{s['context']}"
                for r in profile_one(torch, fn, lab):
                    gw.writerow(r)
                gcsv.flush()
            seen.add(cfg)
            seen.add(key)
            w.writerow({**meta, **{k: s[k] for k in s if k in COLS}, "median_us": f"{med['median']:.3f}",
                        "p20_us": f"{med['p20']:.3f}", "p80_us": f"{med['p80']:.3f}", "calls": med["calls"],
                        "kv_copies": R, "note": note})
            fcsv.flush()
            done += 1
        except Exception as e:   # noqa: BLE001
            fail += 1
            w.writerow({**meta, **{k: s[k] for k in s if k in COLS}, "note": f"failed: {repr(e)[:300]}"})
            fcsv.flush()
            if fail <= 4:
                say(f"{s} failed: {repr(e)[:800]}")
            if fail >= 8 and done == 0:
                say("giving up")
                break
        finally:
            torch.cuda.empty_cache()
    say(f"rows {done} failed {fail} compiled {compiled} total {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
