"""The eighth blind grid of vLLM's Triton unified attention, measured on the lent GPU in one call (triton_vllm only:
ext/vllm_unified_attention.py, a copy of vllm-project/vllm vllm/attention/ops/triton_unified_attention.py
@ 001ceb3e98e7a19ebe33f542a368fa73bf6c76ad kept outside the repository, launched as lab/kernels/triton_decode_blind3.py
run_vllm_layout does with the harness's page layout "perm").

Every shape (blind8_shapes(), chosen and committed before the measurement, in none of the committed CSVs) is timed in
up to three states, each priced before the measurement by main's model and the new one
(lab/kernels/predict_triton_decode_blind8.py):
  row_role "blind"   the family's harness (measure_production_attention.time_graph: the call captured back to back,
                     R = min(16, ceil(128 MiB / K/V bytes)) K/V copies rotated: a short call's K/V stays in the L2)
  row_role "cold"    the engine's state: each call preceded in the graph by a read of a 96 MiB buffer (FLUSH_BYTES, a
                     sum over its rows), timed as (flush + call) - (flush alone): the call finds its metadata, block
                     table, K/V and code out of the L2, as an engine's layer does after the other layers' weights and
                     K/V passed the L2
  row_role "kvcold"  the other attention families' cold option (measure_production_attention --cold): K/V copies
                     spanning >= 128 MiB with no cap on their count, the graph holding a whole multiple of them
                     (cold_calls), the block table / metadata / code shared and warm: only the K/V cold
                     (the controls are not timed so: their K/V spans >= 128 MiB in the harness already)
and a probe (row_role "probe"): the tiny elementwise kernel (an add on 256 floats) alone and after the flush, the cold
launch of a trivial kernel (diagnosis).

    python3 triton_decode_blind8.py --out DIR [--budget-s 110] [--smoke] [--list]   (beside ext/ and the blind3 script)
"""
from __future__ import annotations

import argparse
import csv
import math
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import triton_decode_blind3 as B3  # noqa: E402

SCRIPT_VERSION = "blind8"
V = "triton_vllm"
FLUSH_BYTES = 96 << 20
KVCOLD_BYTES = 128 << 20


def _row(model, kv, b, q, t, role="blind"):
    return B3._row(V, model, kv, b, q, t, role, "perm")


#: (model, K/V dtype, batch, query rows, context) per regime, named before the measurement
LONE_2D = (("llama8b", "bf16", 1, 2, 1700), ("llama8b", "fp8", 1, 3, 2300), ("llama70b_tp8", "bf16", 1, 4, 780),
           ("llama70b_tp8", "fp8", 1, 2, 1210), ("qwen72b", "bf16", 1, 3, 2050), ("qwen72b", "fp8", 1, 2, 370),
           ("qwen7b", "bf16", 1, 2, 560), ("qwen7b", "fp8", 1, 5, 1490), ("llama70b_tp8", "bf16", 1, 6, 2450),
           ("llama8b", "bf16", 1, 4, 950))
SHORT_DECODE = (("llama8b", "bf16", 1, 1, 310), ("llama8b", "fp8", 3, 1, 130), ("llama8b", "bf16", 8, 1, 60),
                ("llama8b", "bf16", 24, 1, 200), ("llama8b", "fp8", 64, 1, 90), ("qwen7b", "bf16", 2, 1, 470),
                ("qwen7b", "fp8", 16, 1, 36), ("qwen72b", "bf16", 4, 1, 250), ("qwen72b", "fp8", 12, 1, 140),
                ("llama70b_tp8", "bf16", 1, 1, 380), ("llama70b_tp8", "fp8", 40, 1, 70),
                ("llama70b_tp8", "bf16", 64, 1, 450), ("qwen7b", "bf16", 48, 1, 24))
VERIFY = (("llama8b", "bf16", 8, 2, 140), ("llama8b", "fp8", 12, 4, 60), ("qwen7b", "bf16", 5, 3, 290),
          ("qwen7b", "fp8", 10, 2, 520), ("qwen72b", "bf16", 7, 4, 96), ("qwen72b", "fp8", 3, 5, 360),
          ("llama70b_tp8", "bf16", 14, 3, 230), ("llama70b_tp8", "fp8", 9, 6, 150), ("llama8b", "bf16", 2, 6, 680),
          ("qwen7b", "bf16", 16, 2, 44), ("qwen72b", "bf16", 4, 2, 600), ("llama70b_tp8", "fp8", 3, 2, 34))
CONTROL = (("llama8b", "bf16", 32, 1, 2700), ("qwen7b", "fp8", 24, 3, 1900), ("qwen72b", "bf16", 48, 1, 3100),
           ("llama70b_tp8", "fp8", 80, 2, 2200), ("llama8b", "fp8", 16, 2, 4500), ("qwen7b", "bf16", 56, 1, 1400))


def blind8_shapes() -> list[dict]:
    """The eighth blind grid's shapes (module docstring), regimes in this order: lone 2D programs of one sequence
    (q 2-6, 10-80 tiles), short decode (q 1, context 24-470, batch 1-64), verification (q 2-6 of 2-16 sequences,
    context 34-680), controls (middle contexts, batch 16-80)."""
    return [_row(*s) for s in (*LONE_2D, *SHORT_DECODE, *VERIFY, *CONTROL)]


def all_shapes() -> list[dict]:
    """Every timed row: the blind grid warm, then in the engine's state (cold), then K/V-cold (not the controls)."""
    b = blind8_shapes()
    cold = [{**s, "row_role": "cold"} for s in b]
    kvcold = [{**s, "row_role": "kvcold"} for s in b[:-len(CONTROL)]]
    return b + cold + kvcold


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=110.0)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--list", action="store_true", help="print the rows and exit (no GPU)")
    args = ap.parse_args()
    shp = all_shapes()
    if args.smoke:
        shp = [shp[0], shp[15], shp[41], shp[41 + 15], shp[82], shp[82 + 15]]
    if args.list:
        for s in shp:
            print(s)
        print(len(shp), "rows")
        return
    t0 = time.time()
    os.makedirs(args.out, exist_ok=True)
    sys.path.insert(0, os.path.join(HERE, "ext"))
    import datetime

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

    say("env", meta, "SMs", dev.multi_processor_count, "L2", getattr(dev, "L2_cache_size", ""))
    cols = P.COLS + ["row_role", "layout", "flush_us"]
    fcsv = open(os.path.join(args.out, "triton_decode_blind8.csv"), "w", newline="")
    w = csv.DictWriter(fcsv, fieldnames=cols, extrasaction="ignore")
    w.writeheader()
    gcsv = open(os.path.join(args.out, "triton_decode_blind8_grids.csv"), "w", newline="")
    gw = csv.DictWriter(gcsv, fieldnames=["label", "kernel_name", "dur_us", "grid_x", "grid_y", "grid_z", "block_x",
                                          "block_y", "block_z", "regs", "smem"])
    gw.writeheader()
    fbuf = torch.randn((48, FLUSH_BYTES // 96), device="cuda", dtype=torch.bfloat16)
    fout = torch.empty((FLUSH_BYTES // 96,), device="cuda", dtype=torch.bfloat16)
    small = torch.zeros((256,), device="cuda", dtype=torch.float32)

    def flush(i):
        torch.sum(fbuf, dim=0, out=fout)

    def add(i):
        small.add_(1.0)

    def flush_add(i):
        flush(i)
        add(i)

    flush_us = P.time_graph(torch, flush)[0]
    add_us = P.time_graph(torch, add)[0]
    add_cold = P.time_graph(torch, flush_add)[0] - flush_us
    say(f"flush {flush_us:.2f} us/call, add {add_us:.2f} us/call, add after the flush {add_cold:.2f} us/call")
    w.writerow({**meta, "family": V, "model": "add256", "row_role": "probe", "median_us": f"{add_us:.3f}",
                "flush_us": f"{flush_us:.3f}", "note": f"add alone; after the flush: {add_cold:.3f} us"})

    def kv_copies(nbytes):
        return int(max(2, math.ceil(KVCOLD_BYTES / max(nbytes, 1.0))))

    done = fail = 0
    seen = set()
    for s in shp:
        if time.time() - t0 > args.budget_s:
            say(f"budget reached after {done} rows")
            break
        role = s["row_role"]
        keep = {k: s.get(k, "") for k in cols if k in s}
        fn = None
        try:
            extra = {}
            if role == "kvcold":
                fn, R, path = B3.run_vllm_layout(torch, mod, s, kv_copies)
                med, p20, p80, calls = P.time_graph(torch, fn, target_us=1e12, max_calls=P.cold_calls(R))
            else:
                fn, R, path = B3.run_vllm_layout(torch, mod, s, P.copies_for)
                if role in ("cold", "recheck_cold"):
                    def both(i, fn=fn):
                        flush(i)
                        fn(i)
                    tot, p20, p80, calls = P.time_graph(torch, both)
                    med, p20, p80 = tot - flush_us, p20 - flush_us, p80 - flush_us
                    extra = {"flush_us": f"{flush_us:.3f}"}
                elif s.get("calls"):   # a call count fixed before the call (triton_decode_h200_calls.py)
                    med, p20, p80, calls = P.time_graph(torch, fn, target_us=1e12, max_calls=int(s["calls"]))
                else:
                    med, p20, p80, calls = P.time_graph(torch, fn)
            cfg = (s["model"], s["dtype"], path)
            if role == "blind" and cfg not in seen:
                seen.add(cfg)
                lab = f"{V}:{s['model']}:{s['dtype']}:q{s['q_rows']}:{path}:B{s['batch']}:T{s['context']}"
                for r in P.profile_one(torch, fn, lab):
                    gw.writerow(r)
                gcsv.flush()
            w.writerow({**meta, **keep, **extra, "kernel": path, "head_dim_v": s["head_dim"], "median_us": f"{med:.3f}",
                        "p20_us": f"{p20:.3f}", "p80_us": f"{p80:.3f}", "calls": calls, "kv_copies": R, "plan": path,
                        "note": ""})
            fcsv.flush()
            done += 1
            say(f"{role:6s} {s['model']:12s} {s['dtype']} B{s['batch']} q{s['q_rows']} T{s['context']} {path} "
                f"{med:9.2f} us R{R} n{calls}")
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
