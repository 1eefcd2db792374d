"""Multi-GPU campaign: all-reduce of bf16 messages at decode sizes (1 KB - 64 MB) on 2 and 4 GPUs of one host, through
NCCL (torch.distributed, CUDA-graph captured and eager), PyTorch's symmetric-memory one-shot / two-shot all-reduce
(torch.ops.symm_mem, NVLink multicast OFF), and a small one-shot / two-shot peer-memory kernel (lab/kernels/
ar_kernel.cu, compiled to ar_kernel.so and passed with --lib) driven from one process.

    python lab/kernels/measure_allreduce.py --out DIR [--lib DIR] [--gpus 4] [--smoke]

Multicast stays off: NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1, NVSHMEM_DISABLE_NVLS=1 are forced for
this process and its workers (the lent machines' rule). Writes DIR/allreduce_<device>_x<N>_<date>.csv: one row per
(impl, world, bytes), the median device time of one all-reduce (max over the ranks), p20/p80 over replays.

STATUS: its one run on the lent 4 x H100 (2026-11-26) hung until the 300-s limit and wrote nothing (the results are
logged, not printed, so the hang's place is unknown: the NCCL workers' graph capture or symmetric-memory rendezvous are
the likely suspects). Before another run, print progress per phase and bound each worker phase by its own timeout.
"""
from __future__ import annotations

import argparse
import csv
import ctypes
import datetime as dt
import math
import os
import statistics
import sys
import traceback
from pathlib import Path

for _k, _v in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"), ("NVSHMEM_DISABLE_NVLS", "1")):
    os.environ[_k] = _v

import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _timing as T  # noqa: E402

SCRIPT_VERSION = 1
SIZES = [1 << s for s in range(10, 27, 2)]   # 1 KiB .. 64 MiB, x4
REPS = 5
BLOCK_LIMIT, THREADS = 36, 512                # vLLM CustomAllreduce::allreduce defaults (block_limit 36, 512 threads)
FIELDS = ["impl", "world", "bytes", "median_us", "p20_us", "p80_us", "calls", "note", "device", "torch", "cuda",
          "nccl", "driver", "date", "script_version"]


#: measurements go to a log file, not the console: the model's predictions are committed before anyone reads them
LOG: list = []


def _log(row) -> None:
    LOG.append(row)


def _calls(nbytes: int) -> int:
    return 40 if nbytes <= (1 << 20) else (10 if nbytes <= (1 << 24) else 4)


def own_kernel_phase(lib: Path, gpus: int, rows: list, smoke: bool):
    so = ctypes.CDLL(str((lib / "ar_kernel.so").resolve()))
    so.ar_launch.restype = ctypes.c_int
    so.ar_launch.argtypes = [ctypes.c_int] * 4 + [ctypes.c_void_p] * 4 + [ctypes.c_longlong, ctypes.c_int, ctypes.c_void_p]
    for d in range(gpus):
        for p in range(gpus):
            if d != p:
                rc = so.ar_enable_peer(d, p)
                if rc:
                    raise RuntimeError(f"peer access {d}->{p}: rc {rc}")
    for world in (2, 4):
        if world > gpus:
            continue
        for nbytes in (SIZES[:3] if smoke else SIZES):
            n16 = nbytes // 16
            ins = [torch.ones(nbytes // 2, dtype=torch.bfloat16, device=f"cuda:{r}") for r in range(world)]
            outs = [torch.empty_like(x) for x in ins]
            tmps = [torch.empty(nbytes // 2, dtype=torch.bfloat16, device=f"cuda:{r}") for r in range(world)]
            sigs = [torch.zeros(1024, dtype=torch.uint8, device=f"cuda:{r}") for r in range(world)]
            arr = ctypes.c_void_p * 8
            pin = arr(*[x.data_ptr() for x in ins]), arr(*[x.data_ptr() for x in tmps]), arr(*[x.data_ptr() for x in sigs])
            blocks = max(1, min(BLOCK_LIMIT, math.ceil(n16 / THREADS)))
            for two in (0, 1):
                calls = _calls(nbytes)
                graphs = []
                try:
                    for r in range(world):
                        with torch.cuda.device(r):
                            g = torch.cuda.CUDAGraph()
                            with torch.cuda.graph(g, capture_error_mode="relaxed"):
                                for _ in range(calls):
                                    rc = so.ar_launch(r, two, world, r, pin[0], pin[1], pin[2], outs[r].data_ptr(), n16,
                                                      blocks, torch.cuda.current_stream().cuda_stream)
                                    if rc:
                                        raise RuntimeError(f"launch rc {rc}")
                            graphs.append(g)
                    samples = []
                    for rep in range(REPS + 1):
                        evs = []
                        for r in range(world):
                            with torch.cuda.device(r):
                                T.spin(200.0)
                                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                                a.record()
                                graphs[r].replay()
                                b.record()
                                evs.append((a, b))
                        for _, b in evs:
                            b.synchronize()
                        t = max(a.elapsed_time(b) * 1000.0 / calls for a, b in evs)
                        if rep:
                            samples.append(t)
                    ok = all(bool(torch.all(outs[r] == world).item()) for r in range(world))
                    samples.sort()
                    rows.append({"impl": "own_twoshot" if two else "own_oneshot", "world": world, "bytes": nbytes,
                                 "median_us": statistics.median(samples), "p20_us": samples[0], "p80_us": samples[-1],
                                 "calls": calls, "note": "" if ok else "WRONG SUM"})
                    _log(rows[-1])
                except Exception as e:  # noqa: BLE001
                    print(f"own kernel world {world} bytes {nbytes} two {two}: {e!r}", flush=True)
                    traceback.print_exc()
                del graphs
            del ins, outs, tmps, sigs
            torch.cuda.synchronize()


def _worker(rank: int, world: int, port: int, smoke: bool, q):
    import torch.distributed as dist
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            device_id=torch.device(f"cuda:{rank}"))
    groups = {world: dist.group.WORLD}
    if world >= 4:
        groups[2] = dist.new_group([0, 1])
    out = []
    sizes = SIZES[:3] if smoke else SIZES

    def timed(fn, calls, group, members):
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            fn()
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        with torch.cuda.graph(g):
            for _ in range(calls):
                fn()
        xs = []
        for rep in range(REPS + 1):
            dist.barrier(group=group, device_ids=[rank])
            torch.cuda.synchronize()
            T.spin(300.0)
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            g.replay()
            b.record()
            b.synchronize()
            t = torch.tensor([a.elapsed_time(b) * 1000.0 / calls], device="cuda")
            dist.all_reduce(t, op=dist.ReduceOp.MAX, group=group)
            if rep:
                xs.append(float(t.item()))
        del g
        return sorted(xs)

    def eager(fn, calls, group):
        xs = []
        for rep in range(REPS + 1):
            dist.barrier(group=group, device_ids=[rank])
            torch.cuda.synchronize()
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            for _ in range(calls):
                fn()
            b.record()
            b.synchronize()
            t = torch.tensor([a.elapsed_time(b) * 1000.0 / calls], device="cuda")
            dist.all_reduce(t, op=dist.ReduceOp.MAX, group=group)
            if rep:
                xs.append(float(t.item()))
        return sorted(xs)

    symm = None
    try:
        import torch.distributed._symmetric_memory as symm_mem
        symm = symm_mem
    except Exception as e:  # noqa: BLE001
        if rank == 0:
            print(f"symmetric memory unavailable: {e!r}", flush=True)
    for w, group in sorted(groups.items()):
        members = list(range(w))
        if rank not in members:
            continue
        gname = group.group_name
        for nbytes in sizes:
            calls = _calls(nbytes)
            x = torch.ones(nbytes // 2, dtype=torch.bfloat16, device="cuda")
            impls = {"nccl_graph": (lambda x=x: dist.all_reduce(x, group=group), "graph"),
                     "nccl_eager": (lambda x=x: dist.all_reduce(x, group=group), "eager")}
            if symm is not None:
                try:
                    sx = symm.empty(nbytes // 2, dtype=torch.bfloat16, device=f"cuda:{rank}")
                    symm.rendezvous(sx, group=gname)
                    sx.fill_(1.0)
                    impls["symm_oneshot"] = (lambda: torch.ops.symm_mem.one_shot_all_reduce(sx, "sum", gname), "graph")
                    if nbytes // 2 >= 8 * w:
                        impls["symm_twoshot"] = (lambda: torch.ops.symm_mem.two_shot_all_reduce_(sx, "sum", gname),
                                                 "graph")
                except Exception as e:  # noqa: BLE001
                    if rank == 0:
                        print(f"symm_mem world {w} bytes {nbytes}: {e!r}", flush=True)
            for name, (fn, mode) in impls.items():
                try:
                    xs = timed(fn, calls, group, members) if mode == "graph" else eager(fn, calls, group)
                    if rank == 0:
                        out.append({"impl": name, "world": w, "bytes": nbytes, "median_us": statistics.median(xs),
                                    "p20_us": xs[0], "p80_us": xs[-1], "calls": calls, "note": ""})
                        _log(out[-1])
                except Exception as e:  # noqa: BLE001
                    if rank == 0:
                        print(f"{name} world {w} bytes {nbytes}: {type(e).__name__}: {str(e)[:200]}", flush=True)
                    # a failed graph capture can leave the group unusable: give up on this impl for larger sizes
                    if mode == "graph" and name.startswith("symm"):
                        symm = None
                        break
            del x
    if rank == 0:
        q.put(out)
    dist.barrier(device_ids=[rank])
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--lib", type=Path, default=None)
    ap.add_argument("--gpus", type=int, default=None)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--skip-own", action="store_true")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    v = T.versions()
    gpus = args.gpus or torch.cuda.device_count()
    print(f"versions {v}, gpus {gpus}", flush=True)
    if gpus < 2:
        print("needs >= 2 GPUs")
        return
    rows: list = []
    import torch.multiprocessing as mp
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    port = 29500 + os.getpid() % 1000
    procs = [ctx.Process(target=_worker, args=(r, gpus, port, args.smoke, q)) for r in range(gpus)]
    for p in procs:
        p.start()
    try:
        rows.extend(q.get(timeout=400))
    except Exception as e:  # noqa: BLE001
        print(f"workers returned nothing: {e!r}", flush=True)
    for p in procs:
        p.join(timeout=60)
    write_csv(args.out, v, gpus, rows)
    if args.lib is not None and not args.skip_own:
        try:
            own_kernel_phase(args.lib, gpus, rows, args.smoke)
        except Exception as e:  # noqa: BLE001
            print(f"own kernel phase: {e!r}", flush=True)
            traceback.print_exc()
    write_csv(args.out, v, gpus, rows)


def write_csv(out: Path, v: dict, gpus: int, rows: list) -> None:
    nccl = ".".join(str(x) for x in torch.cuda.nccl.version())
    slug = v["device"].lower().replace(" ", "-")
    path = out / f"allreduce_{slug}_x{gpus}_{dt.date.today().isoformat()}.csv"
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        for r in rows:
            w.writerow({**r, "device": v["device"], "torch": v["torch"], "cuda": v["cuda"], "nccl": nccl,
                        "driver": v["driver"], "date": dt.date.today().isoformat(), "script_version": SCRIPT_VERSION})
    print(f"wrote {path} ({len(rows)} rows)")


if __name__ == "__main__":
    main()
