"""HBM read / write / copy bandwidth of plain PyTorch kernels on one GPU (evidence for a written-bytes efficiency: the
FlashMLA short-context rows at 128 heads move half their bytes as output stores).

    python3 probe_hbm_rw.py --out DIR      -> DIR/hbm_rw.csv (op, bytes moved, median us, GB/s)

read: x.sum() over a 1 GiB bf16 buffer (reads 1 GiB); write: x.fill_(1) (writes 1 GiB); copy: y.copy_(x) (reads and
writes 1 GiB each). CUDA events over 20 back-to-back calls after 3 warm-ups; the buffers are 20x the L2.
"""
from __future__ import annotations

import argparse
import csv
import os
import statistics


def main() -> None:
    import torch

    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    n = 1 << 29                                   # bf16 elements: 1 GiB
    x = torch.ones(n, dtype=torch.bfloat16, device="cuda")
    y = torch.empty_like(x)
    ops = {"read": (lambda: x.sum(), n * 2), "write": (lambda: x.fill_(1.0), n * 2),
           "copy": (lambda: y.copy_(x), n * 4)}
    rows = []
    for name, (fn, moved) in ops.items():
        for _ in range(3):
            fn()
        ts = []
        for _ in range(20):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            ts.append(a.elapsed_time(b) * 1e3)
        med = statistics.median(ts)
        rows.append({"op": name, "bytes": moved, "median_us": round(med, 2), "gb_s": round(moved / med / 1e3, 1),
                     "device": torch.cuda.get_device_name(0), "torch": torch.__version__})
        print(rows[-1], flush=True)
    with open(os.path.join(args.out, "hbm_rw.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    main()
