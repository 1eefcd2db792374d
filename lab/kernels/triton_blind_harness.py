"""The device side the Triton decode blind-grid scripts (triton_decode_blind4/5/6.py) share: one call's measurement of
a committed shape list with vLLM's Triton unified attention (ext/vllm_unified_attention.py, launched as
triton_decode_blind3.py run_vllm_layout does), each row timed in a CUDA graph (measure_production_attention.time_graph)
and the first row of every (model, K/V dtype, kernel path) profiled for its launch grid. Writes OUT/<stem>.csv (the
rows, measure_production_attention.COLS + row_role, layout), OUT/<stem>_grids.csv and OUT/log.txt; runs on the lent
GPU only (torch, triton and the ext/ copy are imported inside run_grid)."""
from __future__ import annotations

import csv
import datetime
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import triton_decode_blind3 as B3  # noqa: E402

V = "triton_vllm"


def say_row(say, s, path, med) -> None:
    """The default line per measured row: shape, kernel path and median."""
    say(f"{s['model']:12s} {s['dtype']} B{s['batch']} q{s['q_rows']} T{s['context']} {path} {med:9.2f} us")


def run_grid(shp: list[dict], out: str, budget_s: float, script_version: str, stem: str, report=say_row):
    """Measure `shp` into `out` (module docstring) until `budget_s` seconds have passed since the call began;
    `report(say, s, path, med)` logs each measured row. Returns the log function `say` for the caller's epilogue."""
    t0 = time.time()
    os.makedirs(out, exist_ok=True)
    sys.path.insert(0, os.path.join(HERE, "ext"))
    import measure_production_attention as P
    import torch
    import triton
    import vllm_unified_attention as mod

    dev = torch.cuda.get_device_properties(0)
    meta = {"script_version": script_version, "date": datetime.date.today().isoformat(), "device": dev.name,
            "torch": torch.__version__, "cuda": torch.version.cuda, "triton": triton.__version__, "flashinfer": ""}
    log = open(os.path.join(out, "log.txt"), "a")

    def say(*a):
        msg = " ".join(str(x) for x in a)
        print(msg, flush=True)
        log.write(msg + "\n")
        log.flush()

    say("env", meta, "SMs", dev.multi_processor_count)
    cols = P.COLS + ["row_role", "layout"]
    fcsv = open(os.path.join(out, f"{stem}.csv"), "w", newline="")
    w = csv.DictWriter(fcsv, fieldnames=cols)
    w.writeheader()
    gcsv = open(os.path.join(out, f"{stem}_grids.csv"), "w", newline="")
    gw = csv.DictWriter(gcsv, fieldnames=["label", "kernel_name", "dur_us", "grid_x", "grid_y", "grid_z", "block_x",
                                          "block_y", "block_z", "regs", "smem"])
    gw.writeheader()
    done = fail = 0
    seen = set()
    for s in shp:
        if time.time() - t0 > budget_s:
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
            report(say, s, path, med)
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
    return say
