"""One-GPU measurement of the L2's edge for re-scanned sets: how much of a set of S bytes that is read again in the same
address order still comes from the L2, for S around the L2's capacity (24 -> 64 MiB in 2 MiB steps, with anchors well
inside (8-20 MiB) and well past it (80-128 MiB)). Two reuse patterns, the two a multi-sweep top-k makes
(simulator/kernels/topk_production.py):

  sum_resident / sum_rotated   x.sum() over one fp32 buffer of S bytes read by every call (back to back in a CUDA
                               graph: call i + 1 re-reads what call i read; the first sweep of a top-k re-reading the
                               tensor the kernel before it wrote), and over sets rotated through >= 2 x L2 + S (every
                               read from HBM): lab/measure_regimes.py's l2_bw family, on a finer size grid
  resweep_1 / resweep_3        one kernel of `units` CTAs (one per SM, 1024 threads each), CTA j sweeping its own row
                               of S / units bytes 1 or 3 times in address order (the input rotated past the L2, so the
                               first sweep streams from HBM): between two touches of a value every CTA reads its own
                               row once, so the reuse distance is S (a top-k's later sweeps of the rows in flight)

The hit fraction each implies is computed on the CPU (simulator/calibration/fit_l2_sweep_hit.py). Timing:
lab/kernels/_timing.py (CUDA-graph replays after a spin kernel).

    python lab/kernels/measure_l2_sweep.py --out DIR [--smoke]

Writes DIR/l2_sweep_<device>_<date>.csv.
"""
from __future__ import annotations

import argparse
import csv
import datetime as dt
import math
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _timing as T  # noqa: E402

SCRIPT_VERSION = 1
MiB = 1 << 20
L2_BYTES = 50 * MiB   # H100 SXM's L2 (the lent H100 reports 50 MiB)
SIZES_MIB = (8, 12, 16, 20) + tuple(range(24, 65, 2)) + (80, 96, 128)

try:
    import triton
    import triton.language as tl

    @triton.jit
    def _resweep(x_ptr, out_ptr, n, sweeps, BLOCK: tl.constexpr):
        """CTA `row` sums its row of n fp32 values `sweeps` times, in address order."""
        row = tl.program_id(0)
        base = x_ptr + row.to(tl.int64) * n
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for _ in range(sweeps):
            for off in range(0, n, BLOCK):
                idx = off + tl.arange(0, BLOCK)
                acc += tl.load(base + idx, mask=idx < n, other=0.0)
        tl.store(out_ptr + row, tl.sum(acc, axis=0))
except Exception:  # noqa: BLE001 - no Triton: the resweep pattern is skipped
    triton = None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--smoke", action="store_true")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    v = T.versions()
    slug = v["device"].lower().replace(" ", "-")
    path = args.out / f"l2_sweep_{slug}_{dt.date.today().isoformat()}.csv"
    fields = ["pattern", "set_mib", "sweeps", "units", "median_us", "p20_us", "p80_us", "calls", "note", "device",
              "torch", "cuda", "driver", "date", "script_version"]
    f = open(path, "w", newline="")
    w = csv.DictWriter(f, fieldnames=fields)
    w.writeheader()
    dev = "cuda" if T.cuda() else "cpu"
    units = torch.cuda.get_device_properties(0).multi_processor_count if T.cuda() else 4

    def emit(pattern, S, sweeps, st, note=""):
        w.writerow({"pattern": pattern, "set_mib": S, "sweeps": sweeps, "units": units,
                    "median_us": round(st["median"], 4), "p20_us": round(st["p20"], 4), "p80_us": round(st["p80"], 4),
                    "calls": st["calls"], "note": note, "device": v["device"], "torch": v["torch"], "cuda": v["cuda"],
                    "driver": v["driver"], "date": dt.date.today().isoformat(), "script_version": SCRIPT_VERSION})
        f.flush()
        print(f"{pattern:13s} S {S:4d} MiB sweeps {sweeps}: {st['median']:9.3f} us", flush=True)

    sizes = (8, 48) if args.smoke else SIZES_MIB
    for S in sizes:
        n = S * MiB // 4
        nset = max(2, math.ceil((2 * L2_BYTES + S * MiB) / (S * MiB)))
        xs = [torch.randn(n, dtype=torch.float32, device=dev) for _ in range(nset)]
        x = xs[0]
        emit("sum_resident", S, 1, T.time_graph(lambda i, x=x: x.sum()), "one buffer every call")
        emit("sum_rotated", S, 1, T.time_graph(lambda i, xs=xs, m=nset: xs[i % m].sum()), f"{nset} sets rotated")
        if triton is not None and T.cuda():
            row = n // units
            out = torch.empty(units, dtype=torch.float32, device=dev)
            for sw in (1, 3):
                def run(i, xs=xs, m=nset, sw=sw, row=row, out=out):
                    _resweep[(units,)](xs[i % m], out, row, sw, BLOCK=4096, num_warps=32)
                try:
                    emit(f"resweep_{sw}", S, sw, T.time_graph(run),
                         f"{units} CTAs x {row} fp32, {nset} sets rotated")
                except Exception as e:  # noqa: BLE001 - recorded, the rest goes on
                    print(f"resweep S {S} sweeps {sw}: {e!r}", flush=True)
        del xs, x
        if T.cuda():
            torch.cuda.empty_cache()
    f.close()
    print(f"wrote {path}")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
