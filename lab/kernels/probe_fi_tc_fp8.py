"""Where a short fp8 call of FlashInfer's tensor-core decode spends its time (LOOKED-AT diagnosis, not a blind grid).

Cold grid 2 (measure_attention_cold.py --grid 2) found short fp8 fi_tc calls (batch 1-24, context 16-650) priced flat at
12.7-13.1 us while they measure 12.6 -> 14.8 us as the context grows; the committed warm fit rows show the same. This
probe times a ladder of contexts at batch 1 / 4 / 16 for bf16 and fp8 K/V (Llama-3.1-8B's 32 / 8 heads, Qwen2.5-7B's
28 / 4), each shape by the campaign's harness (measure_production_attention.run_fi_paged with use_tensor_cores, warm
K/V rotation, CUDA-graph plan: the rows' protocol) AND by torch.profiler's kernel records of one call (the prefill
kernel's and the merge kernel's durations, grids, registers), so the growth can be placed in one kernel or the other and
read against the plan's KV chunk. Writes $OUT/fi_tc_fp8_probe.csv (timings) and $OUT/fi_tc_fp8_probe_grids.csv (kernel
records), script version probe1.

    python lab/kernels/probe_fi_tc_fp8.py --out DIR [--budget-s 150] [--list]
"""
from __future__ import annotations

import argparse
import csv
import datetime
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import measure_production_attention as mpa  # noqa: E402

SCRIPT_VERSION = "probe1"
HEADS = {"llama8b": (32, 8), "qwen7b": (28, 4)}


def shapes() -> list[dict]:
    out = []

    def add(model, dtype, bts):
        hq, hkv = HEADS[model]
        out.extend(dict(family="fi_tc", model=model, heads=hq, kv_heads=hkv, head_dim=128, dtype=dtype, batch=b,
                        q_rows=1, context=t, page_size=16) for b, t in bts)

    ladder = [(1, t) for t in (16, 64, 128, 192, 256, 384, 512, 768, 1024)] + [(4, 64), (4, 256), (4, 512),
                                                                              (16, 64), (16, 256)]
    for dt in ("fp8", "bf16"):
        add("llama8b", dt, ladder)
        add("qwen7b", dt, [(1, 16), (1, 256), (1, 650), (8, 384), (16, 256)])
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=150.0)
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args()
    shp = shapes()
    if args.list:
        for s in shp:
            print(s["model"], s["dtype"], s["batch"], s["context"])
        print(len(shp), "shapes")
        return
    import torch
    t0 = time.time()
    os.makedirs(args.out, exist_ok=True)
    fi, note = mpa.import_flashinfer()
    dev = torch.cuda.get_device_properties(0)
    meta = {"script_version": SCRIPT_VERSION, "date": datetime.date.today().isoformat(), "device": dev.name,
            "flashinfer": fi.__version__}
    print("env", meta, note, flush=True)
    ws = torch.zeros(1 << 30, dtype=torch.uint8, device="cuda")
    cols = ["script_version", "date", "device", "flashinfer", "family", "model", "dtype", "heads", "kv_heads", "batch",
            "context", "page_size", "median_us", "p20_us", "p80_us", "calls", "kv_copies", "plan", "note"]
    f = open(os.path.join(args.out, "fi_tc_fp8_probe.csv"), "w", newline="")
    w = csv.DictWriter(f, fieldnames=cols)
    w.writeheader()
    g = open(os.path.join(args.out, "fi_tc_fp8_probe_grids.csv"), "w", newline="")
    gw = None
    done = 0
    for s in shp:
        if time.time() - t0 > args.budget_s:
            print(f"budget reached after {done} shapes", flush=True)
            break
        row = {**meta, **{k: s[k] for k in cols if k in s}}
        try:
            fn, R, plan = mpa.run_fi_paged(torch, fi, s, ws, True, False)
            med, p20, p80, calls = mpa.time_graph(torch, fn)
            row.update(median_us=f"{med:.3f}", p20_us=f"{p20:.3f}", p80_us=f"{p80:.3f}", calls=calls, kv_copies=R,
                       plan=plan, note="")
            lab = f"fi_tc:{s['model']}:{s['dtype']}:p16:q1:B{s['batch']}:T{s['context']}"
            for r in mpa.profile_one(torch, fn, lab):
                if gw is None:
                    gw = csv.DictWriter(g, fieldnames=list(r))
                    gw.writeheader()
                gw.writerow(r)
            g.flush()
            done += 1
            print(f"{s['model']:8s} {s['dtype']:5s} B{s['batch']:3d} T{s['context']:5d} {med:8.3f} us", flush=True)
        except Exception as e:   # noqa: BLE001
            row["note"] = f"failed: {repr(e)[:300]}"
            print(row["note"], flush=True)
        w.writerow(row)
        f.flush()
        torch.cuda.empty_cache()
    print(f"{done} of {len(shp)} shapes; total {time.time() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    main()
