"""One-GPU measurement of what the L2 delivers to a kernel that reads with wide loads: the roofline's L2 bound
(hwmodels/roofline.py, Efficiency.l2_bw_bytes_s) is x.sum()'s streaming rate over an L2-resident buffer (5.60 TB/s on
the H100-SXM and the H200), while DeepGEMM's paged indexer drew up to 7.4 TB/s through the H200's L2 (the MTP rows
grid 3's diagnostic rows, simulator/calibration/indexer_mtp_h200.py). This campaign times, over one fp32 buffer of S
bytes read by every call (L2-resident while S fits; back to back in a CUDA graph):

  sum           x.sum() (PyTorch's reduction, the project's l2_bw probe)
  wide_P_G      a Triton kernel of G programs, each reading its slice of the buffer P times in 16-byte vector loads of
                BLOCK fp32 values a step (a grid-stride loop), summing into one value a program: the buffer's bytes x P
                per call, so the slope over P is the L2's rate without the launch and the first touch

and the same kernels over S well past the L2 (HBM). The L2's rate is the slope of one pass's time over the L2-resident
sizes (8-32 MiB: the buffer read by the call before, the launch and fixed time in the intercept); a program's later
passes re-read its own slice, which its SM's L1 holds where it fits (8-16 MiB at 4-8 programs an SM): those rows time
the L1, not the L2. Timing: lab/kernels/_timing.py (CUDA-graph replays after a spin kernel). First run 2026-11-29 on
1 x H200, twice (hwmodels/calibration/data/production_kernels/l2_wide_nvidia-h200_2026-11-29*.csv): one pass over
8-32 MiB slopes at 5.59 / 5.73 TB/s for x.sum() (the committed 5.60) and 8.03 / 8.04 TB/s for the wide kernel at 8
programs an SM (6.86 / 7.44 at 4).

    python lab/kernels/measure_l2_wide.py --out DIR [--smoke]

Writes DIR/l2_wide_<device>_<date>.csv (kernel, size_mib, passes, programs, median_us, bytes).
"""
from __future__ import annotations

import argparse
import csv
import datetime as dt
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _timing as T  # noqa: E402

MiB = 1 << 20
SIZES_MIB = (8, 16, 24, 32, 512)
PASSES = (1, 2, 4, 8)
PROGRAMS_PER_SM = (4, 8)
BLOCK = 2048


@triton.jit
def _wide_read(x_ptr, out_ptr, n, passes, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for _ in range(passes):
        for start in range(pid * BLOCK, n, nprog * BLOCK):
            offs = start + tl.arange(0, BLOCK)
            acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + pid, tl.sum(acc, axis=0))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--smoke", action="store_true")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    dev = torch.cuda.get_device_name(0)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    tag = dev.lower().replace(" ", "-")
    path = out / f"l2_wide_{tag}_{dt.date.today().isoformat()}.csv"
    sizes = SIZES_MIB[:2] if args.smoke else SIZES_MIB
    rows = []
    for s in sizes:
        n = s * MiB // 4
        x = torch.rand(n, device="cuda", dtype=torch.float32)
        st = T.time_graph(lambda i, x=x: x.sum())
        rows.append({"kernel": "sum", "size_mib": s, "passes": 1, "programs": 0, "median_us": st["median"],
                     "bytes": s * MiB})
        print(f"sum {s} MiB {st['median']:.2f} us", flush=True)
        for per in PROGRAMS_PER_SM:
            g = per * sms
            o = torch.empty(g, device="cuda", dtype=torch.float32)
            for p in PASSES:
                _wide_read[(g,)](x, o, n, p, BLOCK=BLOCK)   # compile outside the graph
                ref = float(x.sum()) * p
                assert abs(float(o.sum()) / ref - 1.0) < 1e-3, (s, p, float(o.sum()), ref)
                st = T.time_graph(lambda i, x=x, o=o, g=g, p=p: _wide_read[(g,)](x, o, n, p, BLOCK=BLOCK))
                rows.append({"kernel": f"wide_{per}", "size_mib": s, "passes": p, "programs": g,
                             "median_us": st["median"], "bytes": s * MiB * p})
                print(f"wide {per}/SM {s} MiB x{p} {st['median']:.2f} us", flush=True)
        del x
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]) + ["device", "date"])
        w.writeheader()
        for r in rows:
            w.writerow({**r, "device": dev, "date": dt.date.today().isoformat()})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
