"""The seventh blind grid of vLLM's Triton unified attention, measured on the lent GPU in one call (triton_vllm only:
ext/vllm_unified_attention.py, a copy of vllm-project/vllm vllm/attention/ops/triton_unified_attention.py
@ 001ceb3e98e7a19ebe33f542a368fa73bf6c76ad kept outside the repository, launched as lab/kernels/triton_decode_blind3.py
run_vllm_layout does with the harness's page layout "perm").

Rows, chosen and committed before the measurement:
  row_role "blind" (blind7_shapes()): lone short programs (one or a few programs, 2D verification of one sequence of
    1 or 8 KV heads, 3D decode of one sequence), verification q 2-6 of 1-6 sequences at contexts 40-2600, and controls
    (middle-context decode / verification of 16-96 sequences); timed by the harness (measure_production_attention
    .time_graph: the call captured back to back, the K/V copies rotated: copies_for), priced before by main's model
    and the new one (lab/kernels/predict_triton_decode_blind7.py).
  row_role "cold" (the same shapes, the first COLD_N of them): each call preceded in the graph by a read of a 96 MiB
    buffer (a sum over its rows, FLUSH), timed as (flush + call) - (flush alone): the call with its K/V and block table
    out of the L2, as an engine's layer finds them (diagnosis, never fitted).
  row_role "gap" (GAP_SHAPES): a graph of the call back to back (N x call), of a tiny elementwise kernel (N x add on
    256 elements) and of the two alternating (N x (call + add)), each per call, with the kernels' profiled spans: the
    cost of this kernel's node inside a graph of other kernels against the harness's back-to-back gap.

    python3 triton_decode_blind7.py --out DIR [--budget-s 150] [--smoke] [--list]   (beside ext/ and the blind3 script)
"""
from __future__ import annotations

import argparse
import csv
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import triton_decode_blind3 as B3  # noqa: E402

SCRIPT_VERSION = "blind7"
V = "triton_vllm"
COLD_N = 30
FLUSH_BYTES = 96 << 20


def _row(model, kv, b, q, t, role="blind"):
    return B3._row(V, model, kv, b, q, t, role, "perm")


def blind7_shapes() -> list[dict]:
    """The seventh blind grid (module docstring); contexts in none of the committed grids."""
    r = []
    # (a) lone short programs: one sequence, 2D verification (1 or 8 programs of 2-190 tiles), 3D decode (one segment)
    for m, kv, b, q, t in (("llama70b_tp8", "bf16", 1, 2, 330), ("llama70b_tp8", "bf16", 1, 3, 1450),
                           ("llama70b_tp8", "fp8", 1, 2, 710), ("llama70b_tp8", "fp8", 1, 4, 2600),
                           ("llama70b_tp8", "bf16", 1, 5, 90), ("qwen72b", "bf16", 1, 2, 610),
                           ("qwen72b", "fp8", 1, 3, 1170), ("llama8b", "bf16", 1, 2, 890), ("llama8b", "fp8", 1, 2, 430),
                           ("qwen7b", "bf16", 1, 3, 1330), ("llama70b_tp8", "bf16", 1, 1, 170),
                           ("llama8b", "bf16", 1, 1, 230), ("qwen72b", "fp8", 1, 1, 150)):
        r.append(_row(m, kv, b, q, t))
    # (b) verification q 2-6 of 1-6 sequences at short / middle-short contexts (the 2D kernel)
    for m, kv, b, q, t in (("llama8b", "bf16", 2, 2, 46), ("llama8b", "bf16", 4, 3, 210), ("llama8b", "bf16", 6, 5, 150),
                           ("llama8b", "fp8", 3, 6, 98), ("llama8b", "fp8", 5, 2, 330), ("qwen7b", "bf16", 2, 5, 66),
                           ("qwen7b", "bf16", 3, 2, 410), ("qwen7b", "fp8", 6, 3, 126), ("qwen7b", "fp8", 4, 4, 54),
                           ("qwen72b", "bf16", 3, 2, 178), ("qwen72b", "bf16", 5, 6, 74), ("qwen72b", "fp8", 2, 4, 242),
                           ("qwen72b", "fp8", 6, 2, 530), ("llama70b_tp8", "bf16", 2, 6, 110),
                           ("llama70b_tp8", "bf16", 5, 2, 650), ("llama70b_tp8", "fp8", 4, 3, 186),
                           ("llama70b_tp8", "fp8", 6, 5, 42), ("llama8b", "bf16", 5, 4, 1010),
                           ("qwen72b", "bf16", 2, 3, 1530), ("qwen7b", "fp8", 1, 6, 222)):
        r.append(_row(m, kv, b, q, t))
    # (c) controls: middle-context decode and verification of 16-96 sequences (large K/V, regimes met before)
    for m, kv, b, q, t in (("llama8b", "bf16", 24, 1, 3300), ("llama8b", "fp8", 40, 2, 2100),
                           ("qwen7b", "bf16", 16, 1, 7300), ("qwen72b", "bf16", 32, 3, 2900),
                           ("llama70b_tp8", "bf16", 96, 2, 1900), ("qwen72b", "fp8", 20, 1, 5100),
                           ("llama8b", "bf16", 64, 4, 1250), ("qwen7b", "fp8", 48, 2, 3700)):
        r.append(_row(m, kv, b, q, t))
    return r


GAP_SHAPES = (("llama8b", "bf16", 1, 1, 230), ("llama8b", "bf16", 4, 3, 210), ("llama70b_tp8", "bf16", 1, 2, 330),
              ("llama8b", "bf16", 24, 1, 3300))


def all_shapes() -> list[dict]:
    b = blind7_shapes()
    cold = [{**s, "row_role": "cold"} for s in b[:COLD_N]]
    gap = [{**_row(*g), "row_role": "gap"} for g in GAP_SHAPES]
    return b + gap + cold


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=150.0)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--list", action="store_true", help="print the rows and exit (no GPU)")
    args = ap.parse_args()
    shp = all_shapes()
    if args.smoke:
        shp = shp[:2] + [s for s in shp if s["row_role"] == "gap"][:1] + shp[-1:]
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
    cols = P.COLS + ["row_role", "layout", "flush_us", "add_us", "mix_us", "span_us", "add_span_us"]
    fcsv = open(os.path.join(args.out, "triton_decode_blind7.csv"), "w", newline="")
    w = csv.DictWriter(fcsv, fieldnames=cols)
    w.writeheader()
    gcsv = open(os.path.join(args.out, "triton_decode_blind7_grids.csv"), "w", newline="")
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

    flush_us = P.time_graph(torch, flush)[0]
    add_us = P.time_graph(torch, add)[0]
    add_span = sum(float(r["dur_us"]) for r in P.profile_one(torch, add, "add"))
    say(f"flush {flush_us:.2f} us/call, add {add_us:.2f} us/call (span {add_span:.2f})")
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
            fn, R, path = B3.run_vllm_layout(torch, mod, s, P.copies_for)
            extra = {}
            if role == "cold":
                def both(i, fn=fn):
                    flush(i)
                    fn(i)
                tot, p20, p80, calls = P.time_graph(torch, both)
                med, p20, p80 = tot - flush_us, p20 - flush_us, p80 - flush_us
                extra = {"flush_us": f"{flush_us:.3f}"}
            else:
                med, p20, p80, calls = P.time_graph(torch, fn)
            cfg = (s["model"], s["dtype"], path)
            if role == "blind" and cfg not in seen or role == "gap":
                seen.add(cfg)
                lab = f"{V}:{s['model']}:{s['dtype']}:q{s['q_rows']}:{path}:B{s['batch']}:T{s['context']}"
                recs = P.profile_one(torch, fn, lab)
                for r in recs:
                    gw.writerow(r)
                gcsv.flush()
                if role == "gap":
                    def mix(i, fn=fn):
                        fn(i)
                        add(i)
                    mix_us = P.time_graph(torch, mix)[0]
                    extra = {"add_us": f"{add_us:.3f}", "mix_us": f"{mix_us:.3f}", "add_span_us": f"{add_span:.3f}",
                             "span_us": f"{sum(float(r['dur_us']) for r in recs):.3f}"}
            w.writerow({**meta, **keep, **extra, "kernel": path, "head_dim_v": s["head_dim"], "median_us": f"{med:.3f}",
                        "p20_us": f"{p20:.3f}", "p80_us": f"{p80:.3f}", "calls": calls, "kv_copies": R, "plan": path,
                        "note": ""})
            fcsv.flush()
            done += 1
            say(f"{role:6s} {s['model']:12s} {s['dtype']} B{s['batch']} q{s['q_rows']} T{s['context']} {path} "
                f"{med:9.2f} us {extra}")
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
