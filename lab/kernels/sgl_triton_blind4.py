"""The fourth blind grid of SGLang's Triton decode kernel (sgl_triton, "sgl_triton blind grid 4") and a few
diagnosis rows, measured on the lent GPU in one call.

  sgl_triton  SGLang's Triton grouped decode kernel (ext/sgl_decode_attention.py: sgl-project/sglang 0.5.6
              python/sglang/srt/layers/attention/triton_ops/decode_attention.py, a copy kept outside the repository,
              launched as lab/kernels/measure_production_attention.py run_sgl_triton does: one token-level K / V buffer
              per copy, a random token permutation as kv_indices, num_kv_splits from get_num_kv_splits_triton on the
              host, max_kv_splits 8), each row timed in a CUDA graph (measure_production_attention.time_graph), the
              first row of every (heads, K/V dtype) profiled for its launch grid

Rows (column row_role):
  blind      the grid (blind4_shapes): 44 shapes in none of the committed CSVs, priced BEFORE this measurement by main's
             model and the revised one (lab/kernels/sgl_triton_blind4_predict.py): bf16 long contexts (>= 64K) at batch
             1-40 and middle contexts at batch 2-288 (the regimes main's model prices slow), fp8 short contexts at batch
             24-600, and controls from regimes that pass; heads 32/8 (Llama-3.1-8B), 64/8 (Llama-3.1-70B at TP 1),
             28/4 (Qwen2.5-7B)
  diagnosis  NOT blind, not fitted: lone programs (batch 2, context 65536, at most one per SM) of four head layouts
             that separate the GQA group from the KV-head count (32/8 G 4, 16/4 G 4, 28/4 G 7, 56/8 G 7), bf16 and
             fp8: whether the faster lone chain of Qwen2.5-7B's heads (28/4) follows the compiled group or the K/V
             row of a token (Hkv x 256 bytes)

    python3 sgl_triton_blind4.py --out DIR [--budget-s 100] [--smoke] [--list]   (beside ext/)
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
SCRIPT_VERSION = "sgl_blind4"
#: the stem of the CSVs the call writes (sgl_triton_blind5.py reuses this runner)
OUT_STEM = "sgl_triton_blind4"
HEADS = {"llama8b": (32, 8), "llama70b": (64, 8), "qwen7b": (28, 4), "g4h4": (16, 4), "g7h8": (56, 8)}


def _row(model, kv, b, t, role="blind"):
    hq, hkv = HEADS[model]
    return dict(family="sgl_triton", model=model, heads=hq, kv_heads=hkv, head_dim=128, dtype=kv, batch=b, q_rows=1,
                context=t, page_size=1, row_role=role)


def blind4_shapes() -> list[dict]:
    """The fourth grid (module docstring): (model, K/V dtype, batch, context)."""
    rows = (
        # bf16 long (>= 64K), batch <= 16: lone programs, one or two per SM
        ("llama8b", "bf16", 3, 72000), ("llama8b", "bf16", 6, 80000), ("llama70b", "bf16", 2, 100000),
        ("llama70b", "bf16", 12, 66000), ("qwen7b", "bf16", 1, 150000), ("qwen7b", "bf16", 3, 88000),
        ("qwen7b", "bf16", 8, 76000), ("qwen7b", "bf16", 16, 68000),
        # bf16 long, batch 17-255: bandwidth-bound launches
        ("llama8b", "bf16", 24, 68000), ("llama70b", "bf16", 20, 72000), ("qwen7b", "bf16", 32, 66000),
        ("qwen7b", "bf16", 40, 80000),
        # bf16 middle, batch <= 16
        ("llama8b", "bf16", 5, 9000), ("llama8b", "bf16", 12, 2200), ("llama70b", "bf16", 3, 24000),
        ("qwen7b", "bf16", 6, 12000), ("qwen7b", "bf16", 14, 3500), ("qwen7b", "bf16", 2, 40000),
        # bf16 middle, batch 17-255
        ("llama8b", "bf16", 40, 10000), ("llama8b", "bf16", 96, 1800), ("llama70b", "bf16", 56, 5500),
        ("llama70b", "bf16", 160, 2600), ("qwen7b", "bf16", 36, 14000), ("qwen7b", "bf16", 72, 6500),
        # bf16 middle, batch >= 256
        ("llama8b", "bf16", 320, 1100), ("qwen7b", "bf16", 288, 3000),
        # bf16 short (controls)
        ("llama8b", "bf16", 7, 200), ("llama70b", "bf16", 80, 120), ("qwen7b", "bf16", 400, 88),
        # fp8 short, batch 17-255 (main's model -5 % median, p90 17 %)
        ("llama8b", "fp8", 72, 40), ("llama8b", "fp8", 144, 112), ("llama70b", "fp8", 48, 232),
        ("llama70b", "fp8", 200, 24), ("qwen7b", "fp8", 96, 168), ("qwen7b", "fp8", 176, 56),
        # fp8 short, batch >= 256 and <= 16 (controls)
        ("llama8b", "fp8", 320, 80), ("qwen7b", "fp8", 600, 144), ("llama70b", "fp8", 6, 176),
        # fp8 middle / long (controls)
        ("llama8b", "fp8", 9, 7000), ("qwen7b", "fp8", 28, 30000), ("llama70b", "fp8", 64, 9000),
        ("llama8b", "fp8", 3, 120000), ("qwen7b", "fp8", 12, 100000), ("llama70b", "fp8", 24, 70000),
    )
    return [_row(m, kv, b, t) for m, kv, b, t in rows]


def diagnosis_shapes() -> list[dict]:
    """Lone programs of four head layouts (module docstring): diagnosis rows, not blind, not fitted."""
    r = [_row(m, "bf16", 2, 65536, "diagnosis") for m in ("llama8b", "g4h4", "qwen7b", "g7h8")]
    r += [_row(m, "fp8", 2, 65536, "diagnosis") for m in ("g4h4", "g7h8")]
    return r


def shapes() -> list[dict]:
    """Every row of the call, in measuring order: the blind grid first, then the diagnosis rows. SGLang's kernel
    addresses the token-level K/V buffer with 32-bit element offsets (triton_decode_blind2.py): no row may reach 2^31."""
    out = blind4_shapes() + diagnosis_shapes()
    for s in out:
        assert s["batch"] * s["context"] * s["kv_heads"] * s["head_dim"] < 2 ** 31, s
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=100.0)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--list", action="store_true", help="print the rows and exit (no GPU)")
    args = ap.parse_args()
    shp = shapes()
    if args.smoke:
        shp = shp[:2] + shp[-1:]
    if args.list:
        for s in shp:
            print(s)
        print(len(shp), "rows")
        return
    t0 = time.time()
    os.makedirs(args.out, exist_ok=True)
    sys.path.insert(0, HERE)
    sys.path.insert(0, os.path.join(HERE, "ext"))
    import measure_production_attention as P
    import sgl_decode_attention as sgl
    import torch
    import triton

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
    cols = P.COLS + ["row_role"]
    fcsv = open(os.path.join(args.out, f"{OUT_STEM}.csv"), "w", newline="")
    w = csv.DictWriter(fcsv, fieldnames=cols)
    w.writeheader()
    gcsv = open(os.path.join(args.out, f"{OUT_STEM}_grids.csv"), "w", newline="")
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
            fn, R, path = P.run_sgl_triton(torch, sgl, s, dev.multi_processor_count)
            fn(0)
            torch.cuda.synchronize()
            med, p20, p80, calls = P.time_graph(torch, fn)
            cfg = (s["model"], s["dtype"])
            if cfg not in seen:
                seen.add(cfg)
                lab = f"sgl_triton:{s['model']}:{s['dtype']}:q1:{path}:B{s['batch']}:T{s['context']}"
                for r in P.profile_one(torch, fn, lab):
                    gw.writerow(r)
                gcsv.flush()
            w.writerow({**meta, **keep, "kernel": path, "head_dim_v": s["head_dim"], "median_us": f"{med:.3f}",
                        "p20_us": f"{p20:.3f}", "p80_us": f"{p80:.3f}", "calls": calls, "kv_copies": R, "plan": path,
                        "note": ""})
            fcsv.flush()
            done += 1
            say(f"{s['row_role']:9s} {s['model']:8s} {s['dtype']} B{s['batch']} T{s['context']} {path} {med:9.2f} us")
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
