"""Measure NCCL collectives between the GPUs of one machine: all-reduce and all-to-all of bf16 messages.

Run on a machine with >= 2 CUDA GPUs (it changes no clock or GPU setting and leaves NVLink multicast off):

    python lab/measure_collectives.py --out DIR [--gpus N] [--quick]

Writes DIR/<device-slug>_x<N>_collectives_<date>.csv with one row per (op, message bytes): the median
time per collective over timed batches (CUDA events around `--inner` back-to-back collectives, after
warm-up), p20/p80, and the versions. `bytes` is the message size per GPU (the all-reduced tensor, or the
all-to-all input). The fit (`sparsesim calibrate fit-links CSV`) turns these into link bandwidth and
per-step latency for hwmodels.roofline's ring all-reduce and all-to-all formulas.
"""
from __future__ import annotations

import argparse
import csv
import datetime as dt
import os
import statistics
import subprocess

from harness import device_slug, driver_version

SCRIPT_VERSION = 1
SIZES_KIB = [8, 32, 128, 512, 2048, 8192, 32768, 131072, 262144]


def _worker(rank: int, world: int, port: int, args, out_rows):
    import torch
    import torch.distributed as dist

    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")  # keep NVLink multicast off (device README)
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    sizes = SIZES_KIB[:4] if args.quick else SIZES_KIB
    rows = []
    for op in ("all_reduce", "all_to_all"):
        for kib in sizes:
            n = kib * 1024 // 2
            n -= n % world
            x = torch.randn(n, device="cuda", dtype=torch.bfloat16)
            y = torch.empty_like(x)

            def run():
                if op == "all_reduce":
                    dist.all_reduce(x)
                else:
                    dist.all_to_all_single(y, x)

            for _ in range(5):
                run()
            torch.cuda.synchronize()
            dist.barrier()
            inner = args.inner if kib <= 8192 else max(2, args.inner // 4)
            samples = []
            for _ in range(args.repeats):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                for _ in range(inner):
                    run()
                end.record()
                end.synchronize()
                samples.append(start.elapsed_time(end) * 1e3 / inner)
            dist.barrier()
            if rank == 0:
                q = statistics.quantiles(samples, n=10)
                rows.append({"op": op, "bytes": n * 2, "median_us": statistics.median(samples),
                             "p20_us": q[1], "p80_us": q[7], "repeats": args.repeats, "inner": inner})
            del x, y
    if rank == 0:
        out_rows.extend(rows)
    dist.destroy_process_group()


def main() -> None:
    import torch
    import torch.multiprocessing as mp

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--gpus", type=int, default=0, help="GPUs to use (default: all)")
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--inner", type=int, default=20)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    world = args.gpus or torch.cuda.device_count()
    if world < 2:
        raise SystemExit("needs at least 2 GPUs")
    mgr = mp.Manager()
    rows = mgr.list()
    port = 29500 + os.getpid() % 1000
    mp.spawn(_worker, args=(world, port, args, rows), nprocs=world, join=True)
    name = torch.cuda.get_device_name(0)
    driver = driver_version()
    topo = ""
    try:
        topo = subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True, timeout=20).stdout
    except Exception:  # noqa: BLE001
        pass
    date = dt.date.today().isoformat()
    slug = device_slug(name)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, f"{slug}_x{world}_collectives_{date}.csv")
    meta = {"device": name, "gpus": world, "torch_version": torch.__version__,
            "nccl_version": ".".join(map(str, torch.cuda.nccl.version())), "driver_version": driver,
            "date": date, "script_version": SCRIPT_VERSION}
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(meta) + ["op", "bytes", "median_us", "p20_us", "p80_us", "repeats",
                                                       "inner"])
        w.writeheader()
        for r in rows:
            w.writerow({**meta, **r})
    with open(os.path.join(args.out, f"{slug}_x{world}_topology.txt"), "w") as f:
        f.write(topo)
    print(f"wrote {path}")
    print(f"{'op':<11} {'bytes':>11} {'median us':>10} {'GB/s (bytes/t)':>15}")
    for r in rows:
        print(f"{r['op']:<11} {r['bytes']:>11} {r['median_us']:>10.2f} {r['bytes'] / r['median_us'] / 1e3:>15.1f}")


if __name__ == "__main__":
    main()
