"""The fifth blind grid of vLLM's Triton unified attention, measured on the lent GPU in one call (triton_vllm only:
ext/vllm_unified_attention.py, a copy of vllm-project/vllm vllm/attention/ops/triton_unified_attention.py
@ 001ceb3e98e7a19ebe33f542a368fa73bf6c76ad kept outside the repository, launched as lab/kernels/triton_decode_blind3.py
run_vllm_layout does with the harness's page layout "perm").

Rows (column row_role "blind"), chosen and committed before the measurement (blind5_shapes()): short contexts
(16-256: one- to eight-tile programs, the 3D kernel's one-tile segments and the 2D kernel's short rows) at batch 1-512,
bf16 and fp8 K/V, decode (q 1) and verification (q 2-4), heads 32/8, 28/4, 64/8, 8/1, plus controls at middle
contexts; shapes in none of the committed CSVs, priced by main's model and the new one before this measurement
(lab/kernels/predict_triton_decode_blind5.py).

    python3 triton_decode_blind5.py --out DIR [--budget-s 70] [--smoke] [--list]   (beside ext/ and the blind3 script)
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
sys.path.insert(0, HERE)
import triton_decode_blind3 as B3  # noqa: E402

SCRIPT_VERSION = "blind5"
V = "triton_vllm"


def _row(model, kv, b, q, t, role="blind"):
    return B3._row(V, model, kv, b, q, t, role, "perm")


def blind5_shapes() -> list[dict]:
    """The fifth blind grid (module docstring); contexts / batches in none of the committed grids."""
    r = []
    # (a) decode, short contexts, batch 1-6 (the 3D kernel's one-tile segments)
    for m, kv, b, t in (("llama8b", "bf16", 1, 24), ("qwen7b", "bf16", 1, 184), ("qwen72b", "bf16", 2, 104),
                        ("llama70b_tp8", "bf16", 4, 248), ("llama8b", "bf16", 6, 88), ("llama8b", "fp8", 1, 216),
                        ("qwen7b", "fp8", 2, 24), ("qwen72b", "fp8", 1, 248), ("llama70b_tp8", "fp8", 6, 152),
                        ("qwen7b", "fp8", 4, 104)):
        r.append(_row(m, kv, b, 1, t))
    # (b) decode, short contexts, batch 12-80 (3D with idle programs, or 2D one- to eight-tile programs)
    for m, kv, b, t in (("llama8b", "bf16", 12, 24), ("qwen7b", "bf16", 28, 216), ("qwen72b", "bf16", 80, 24),
                        ("llama70b_tp8", "bf16", 28, 24), ("llama8b", "bf16", 80, 104), ("llama8b", "fp8", 12, 184),
                        ("qwen7b", "fp8", 80, 24), ("qwen72b", "fp8", 28, 88), ("llama70b_tp8", "fp8", 80, 248),
                        ("llama8b", "fp8", 28, 32)):
        r.append(_row(m, kv, b, 1, t))
    # (c) decode, short contexts, batch 176-512 (the 2D kernel, several waves)
    for m, kv, b, t in (("llama8b", "bf16", 176, 24), ("qwen7b", "bf16", 352, 104), ("qwen72b", "bf16", 480, 32),
                        ("llama70b_tp8", "bf16", 352, 184), ("llama8b", "bf16", 480, 216), ("llama8b", "fp8", 176, 88),
                        ("qwen7b", "fp8", 480, 24), ("qwen72b", "fp8", 176, 216), ("llama70b_tp8", "fp8", 480, 32),
                        ("qwen7b", "fp8", 176, 248)):
        r.append(_row(m, kv, b, 1, t))
    # (d) verification, short contexts (the 2D kernel), batch 1-480, q 2-4
    for m, kv, b, q, t in (("llama8b", "bf16", 1, 2, 24), ("qwen7b", "bf16", 2, 3, 184), ("qwen72b", "bf16", 6, 2, 88),
                           ("llama70b_tp8", "bf16", 1, 4, 104), ("llama8b", "fp8", 2, 4, 216),
                           ("qwen7b", "fp8", 1, 2, 32), ("qwen72b", "fp8", 4, 3, 248), ("llama8b", "bf16", 28, 3, 104),
                           ("qwen7b", "fp8", 80, 2, 216), ("llama70b_tp8", "fp8", 28, 3, 24),
                           ("llama8b", "bf16", 176, 2, 184), ("qwen72b", "fp8", 352, 2, 24),
                           ("llama70b_tp8", "bf16", 480, 4, 88), ("llama8b", "fp8", 480, 3, 32)):
        r.append(_row(m, kv, b, q, t))
    # (e) controls at middle contexts (regimes that pass)
    for m, kv, b, q, t in (("llama8b", "bf16", 6, 1, 3400), ("qwen7b", "fp8", 28, 1, 2200),
                           ("qwen72b", "bf16", 12, 1, 7400), ("llama70b_tp8", "fp8", 80, 1, 1800),
                           ("llama8b", "fp8", 176, 1, 1400), ("qwen7b", "bf16", 2, 2, 5400),
                           ("llama8b", "bf16", 28, 3, 2600), ("qwen72b", "fp8", 6, 4, 4400),
                           ("llama70b_tp8", "bf16", 1, 1, 9800), ("qwen7b", "bf16", 352, 1, 1100)):
        r.append(_row(m, kv, b, q, t))
    return r


def all_shapes() -> list[dict]:
    return blind5_shapes()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=70.0)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--list", action="store_true", help="print the rows and exit (no GPU)")
    args = ap.parse_args()
    shp = all_shapes()
    if args.smoke:
        shp = shp[:2] + shp[-1:]
    if args.list:
        for s in shp:
            print(s)
        print(len(shp), "rows")
        return
    t0 = time.time()
    os.makedirs(args.out, exist_ok=True)
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
    cols = P.COLS + ["row_role", "layout"]
    fcsv = open(os.path.join(args.out, "triton_decode_blind5.csv"), "w", newline="")
    w = csv.DictWriter(fcsv, fieldnames=cols)
    w.writeheader()
    gcsv = open(os.path.join(args.out, "triton_decode_blind5_grids.csv"), "w", newline="")
    gw = csv.DictWriter(gcsv, fieldnames=["label", "kernel_name", "dur_us", "grid_x", "grid_y", "grid_z", "block_x",
                                          "block_y", "block_z", "regs", "smem"])
    gw.writeheader()
    done = fail = 0
    seen = set()
    for s in shp:
        if time.time() - t0 > args.budget_s:
            say(f"budget reached after {done} rows")
            break
        keep = {k: s.get(k, "") for k in cols if k in s}
        fn = None
        try:
            fn, R, path = B3.run_vllm_layout(torch, mod, s, P.copies_for)
            cfg = (s["model"], s["dtype"], path)
            med, p20, p80, calls = P.time_graph(torch, fn)
            if cfg not in seen:
                seen.add(cfg)
                lab = f"{V}:{s['model']}:{s['dtype']}:q{s['q_rows']}:{path}:B{s['batch']}:T{s['context']}"
                for r in P.profile_one(torch, fn, lab):
                    gw.writerow(r)
                gcsv.flush()
            w.writerow({**meta, **keep, "kernel": path, "head_dim_v": s["head_dim"], "median_us": f"{med:.3f}",
                        "p20_us": f"{p20:.3f}", "p80_us": f"{p80:.3f}", "calls": calls, "kv_copies": R, "plan": path,
                        "note": ""})
            fcsv.flush()
            done += 1
            say(f"{s['model']:12s} {s['dtype']} B{s['batch']} q{s['q_rows']} T{s['context']} {path} {med:9.2f} us")
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
