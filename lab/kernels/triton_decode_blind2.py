"""The second blind grid of the two Triton decode families, measured on the lent GPU in one call:

  triton_vllm  vLLM's Triton unified attention (ext/vllm_unified_attention.py: vllm-project/vllm
               vllm/attention/ops/triton_unified_attention.py @ 001ceb3e98e7a19ebe33f542a368fa73bf6c76ad, a copy kept
               outside the repository, launched as lab/kernels/measure_triton_vllm_attention.py run_vllm does)
  sgl_triton   SGLang's Triton grouped decode kernel (ext/sgl_decode_attention.py: sgl-project/sglang 0.5.6
               python/sglang/srt/layers/attention/triton_ops/decode_attention.py, a copy kept outside the repository,
               launched as lab/kernels/measure_production_attention.py run_sgl_triton does)

Shapes (blind2_shapes): contexts, batches and query rows in none of the committed CSVs' rows of either family
(checked by lab/kernels/predict_triton_decode_blind2.py before pricing): per (heads, K/V dtype) every (context class,
batch class) cell, one shape each, the context and batch of a cell picked round-robin; triton_vllm at q 1 (decode) and
q 2 / 3 / 4 (verification, rotating over the cells), sgl_triton at q 1. Timing: measure_production_attention.py's
CUDA-graph harness (time_graph, copies_for), one launch profile (torch.profiler) per configuration.

    python3 triton_decode_blind2.py --out DIR [--budget-s 100] [--smoke] [--family F]     (on the device, beside ext/)
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
SCRIPT_VERSION = "blind2"
#: heads (query, KV), head dim 128: Llama-3.1-8B, Llama-3.1-70B at TP8, Qwen2.5-7B, Qwen2.5-72B / Llama-3.1-70B at TP1
VLLM_HEADS = {"llama8b": (32, 8), "llama70b_tp8": (8, 1), "qwen7b": (28, 4), "qwen72b": (64, 8)}
SGL_HEADS = {"llama8b": (32, 8), "llama70b": (64, 8), "qwen7b": (28, 4)}
PAGE = 16
MAX_TOKENS = 1 << 22
#: context classes (short <= 256, middle, long >= 64K) and batch classes (small, mid, large); none of these contexts
#: and few of these batches are in any committed grid of the two families
CTX = ((56, 72, 160, 240), (448, 900, 2500, 5000, 12000, 32000), (70000, 90000))
BATCH = ((1, 2, 5), (20, 32, 48, 96), (128, 200, 384, 768))


def _cells(family, heads, models, dtypes, qmode, gi0=0):
    rows, gi = [], gi0
    for model in models:
        hq, hkv = heads[model]
        for kv in dtypes:
            for ri, cs in enumerate(CTX):
                for bi, bs in enumerate(BATCH):
                    t = cs[(gi + 2 * bi + ri) % len(cs)]
                    b = bs[(gi + ri + 3 * bi) % len(bs)]
                    while b * t > MAX_TOKENS and b > bs[0]:
                        b = bs[bs.index(b) - 1]
                    if b * t > MAX_TOKENS:
                        b = max(1, MAX_TOKENS // t)
                    q = 1 if qmode == "decode" else 2 + (gi + ri + bi) % 3
                    rows.append(dict(family=family, model=model, heads=hq, kv_heads=hkv, head_dim=128, dtype=kv,
                                     batch=b, q_rows=q, context=t, page_size=PAGE if family == "triton_vllm" else 1))
            gi += 1
    return rows


def blind2_shapes() -> list[dict]:
    """The grid (module docstring): 144 triton_vllm shapes (4 heads x 2 dtypes x decode / verification x 9 cells),
    54 sgl_triton shapes (3 heads x 2 dtypes x 9 cells)."""
    rows = _cells("triton_vllm", VLLM_HEADS, tuple(VLLM_HEADS), ("bf16", "fp8"), "decode")
    rows += _cells("triton_vllm", VLLM_HEADS, tuple(VLLM_HEADS), ("bf16", "fp8"), "verify", 1)
    rows += _cells("sgl_triton", SGL_HEADS, tuple(SGL_HEADS), ("bf16", "fp8"), "decode", 2)
    seen, out = set(), []
    for r in rows:
        k = tuple(r[c] for c in ("family", "model", "dtype", "batch", "q_rows", "context"))
        if k not in seen:
            seen.add(k)
            out.append(r)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=100.0)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--family", default="", help="measure only this family's shapes")
    args = ap.parse_args()
    t0 = time.time()
    os.makedirs(args.out, exist_ok=True)
    sys.path.insert(0, HERE)
    sys.path.insert(0, os.path.join(HERE, "ext"))
    import measure_production_attention as P
    import measure_triton_vllm_attention as V
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
    fcsv = open(os.path.join(args.out, "triton_decode_blind2.csv"), "w", newline="")
    w = csv.DictWriter(fcsv, fieldnames=P.COLS)
    w.writeheader()
    gcsv = open(os.path.join(args.out, "triton_decode_blind2_grids.csv"), "w", newline="")
    gw = csv.DictWriter(gcsv, fieldnames=["label", "kernel_name", "dur_us", "grid_x", "grid_y", "grid_z", "block_x",
                                          "block_y", "block_z", "regs", "smem"])
    gw.writeheader()
    shp = [s for s in blind2_shapes() if not args.family or s["family"] == args.family]
    # SGLang's kernel addresses the token-level K/V buffer with 32-bit offsets: B x T x Hkv x d must stay under 2^31
    # elements (the first run's B 48 x T 70000 x 8 x 128 hit an illegal address); such shapes are not measured
    shp = [s for s in shp if s["family"] != "sgl_triton" or s["batch"] * s["context"] * s["kv_heads"] * s["head_dim"]
           < 2 ** 31]
    shp = [s for s in shp if s["family"] == "triton_vllm"][:3] + [s for s in shp if s["family"] == "sgl_triton"][:3] \
        if args.smoke else shp
    done = fail = 0
    seen = set()
    for s in shp:
        if time.time() - t0 > args.budget_s:
            say(f"budget reached after {done} rows")
            break
        try:
            if s["family"] == "triton_vllm":
                fn, R, path = V.run_vllm(torch, mod, s)
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
