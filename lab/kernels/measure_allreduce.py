"""Multi-GPU campaign: all-reduce of bf16 messages at decode sizes (1 KiB - 64 MiB) on the GPUs of one host, through
NCCL (torch.distributed, one process per GPU: eager calls timed behind a spin kernel, and CUDA-graph captured), a small
one-shot / two-shot peer-memory kernel (lab/kernels/ar_kernel.cu, compiled to ar_kernel.so and passed with --lib)
driven from one process with peer access, and PyTorch's symmetric-memory one-shot / two-shot all-reduce
(torch.ops.symm_mem, CUDA backend: peer pointers, NVLink multicast OFF).

    python lab/kernels/measure_allreduce.py --out DIR [--lib DIR] [--gpus 2] [--phases nccl,own,symm]
                                            [--phase-timeout 45] [--smoke]

Multicast stays off: NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1, NVSHMEM_DISABLE_NVLS=1 are forced for
this process and every process it starts (the lent machines' rule); no multimem op is called.

Robustness (the first version hung on a lent 4 x H100 for its whole 300-s limit and wrote nothing):
  - every phase runs in its own child process (subprocess, fresh interpreter), bounded by `--phase-timeout`: inside it
    faulthandler.dump_traceback_later(timeout, exit=True) prints every thread's stack and exits, and the parent kills
    the child's process group a few seconds later if it is still there; a hung phase loses only itself
  - progress is printed per phase, size and implementation (flushed), so the place of a hang is in the log
  - every measured row is appended to the CSV (and flushed) as soon as it is measured: a partial run returns data
  - phases in increasing order of risk: NCCL (eager first, then graphs), the own kernel, symmetric memory

Writes DIR/allreduce_<device>_x<N>_<date>.csv: one row per (impl, world, bytes): the median device time of one
all-reduce (max over the ranks / devices), p20 / p80 over the replays, the calls per replay and a note (WRONG SUM when
the result was not the sum). impl: nccl_eager (eager calls queued behind a spin kernel, so the events bracket device
time only), nccl_graph (the same calls captured in one CUDA graph), own_oneshot / own_twoshot, symm_oneshot /
symm_twoshot (graph-captured).

--smoke on a machine without CUDA runs the NCCL phase's code path with the gloo backend on CPU tensors (timings
meaningless, never committed) to check the phases, the timeouts and the CSV.
"""
from __future__ import annotations

import argparse
import csv
import datetime as dt
import faulthandler
import math
import os
import signal
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path

MULTICAST_OFF = (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"), ("NVSHMEM_DISABLE_NVLS", "1"))
for _k, _v in MULTICAST_OFF:
    os.environ[_k] = _v
os.environ.setdefault("TORCH_SYMMMEM", "CUDA")   # peer-pointer backend (no NVSHMEM)

SCRIPT_VERSION = 3
SIZES = [1 << s for s in range(10, 27, 2)]   # 1 KiB .. 64 MiB, x4
REPS = 7
BLOCK_LIMIT, THREADS = 36, 512                # vLLM CustomAllreduce::allreduce defaults (block_limit 36, 512 threads)
FIELDS = ["impl", "world", "bytes", "median_us", "p20_us", "p80_us", "calls", "note", "device", "torch", "cuda",
          "nccl", "driver", "date", "script_version"]
PHASES = ("nccl", "own", "symm")


def _calls(nbytes: int) -> int:
    return 40 if nbytes <= (1 << 20) else (10 if nbytes <= (1 << 24) else 4)


def _say(tag: str, msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')} {tag}] {msg}", flush=True)


def _arm(seconds: float) -> None:
    """Dump every thread's stack and exit if this process is still running after `seconds`."""
    faulthandler.dump_traceback_later(max(1.0, seconds), exit=True)


class Sink:
    """Appends rows to the campaign CSV as they are measured (header written by the parent)."""

    def __init__(self, path: Path, meta: dict):
        self.path, self.meta = path, meta

    def put(self, row: dict) -> None:
        with open(self.path, "a", newline="") as f:
            csv.DictWriter(f, fieldnames=FIELDS).writerow({**row, **self.meta})
            f.flush()
        _say("row", f"{row['impl']:12s} world {row['world']} bytes {row['bytes']:>9d}: {row['median_us']:9.2f} us "
                    f"(p20 {row['p20_us']:.2f}, p80 {row['p80_us']:.2f}, {row['calls']} calls) {row['note']}")


def _row(impl, world, nbytes, xs, calls, note="") -> dict:
    xs = sorted(xs)
    return {"impl": impl, "world": world, "bytes": nbytes, "median_us": round(statistics.median(xs), 3),
            "p20_us": round(xs[len(xs) // 5], 3), "p80_us": round(xs[(4 * len(xs)) // 5], 3), "calls": calls,
            "note": note}


# ---- phase nccl: torch.distributed, one process per GPU -----------------------------------------------------------

def _graph_us(fn, x, calls: int, warmup: int, barrier_before_capture: bool) -> list:
    """One all-reduce's device time (us) per replay of a CUDA graph of `calls` back-to-back fn(x) calls, max over the
    ranks, REPS replays after one discarded: fn(x) runs `warmup` times on a side stream first (NCCL and symmetric memory
    set up their buffers outside capture), each replay starts behind a barrier and a spin kernel, CUDA events
    bracket it."""
    import torch
    import torch.distributed as dist
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import _timing as T

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(warmup):
            fn(x)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    if barrier_before_capture:
        dist.barrier()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, capture_error_mode="thread_local"):
        for _ in range(calls):
            fn(x)
    torch.cuda.synchronize()
    xs = T.replay_max_over_ranks(g, calls, REPS)
    del g
    return xs


def _nccl_worker(rank: int, world: int, port: int, smoke: bool, csv_path: str, meta: dict, timeout: float):
    _arm(timeout)
    import torch
    import torch.distributed as dist
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import _timing as T

    tag = f"nccl r{rank}"
    cuda = torch.cuda.is_available() and not smoke
    if cuda:
        torch.cuda.set_device(rank)
    _say(tag, "init_process_group")
    kw = {"device_id": torch.device(f"cuda:{rank}")} if cuda else {}
    dist.init_process_group("nccl" if cuda else "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world, **kw)
    dev = f"cuda:{rank}" if cuda else "cpu"
    sink = Sink(Path(csv_path), meta) if rank == 0 else None
    sizes = SIZES[:3] if smoke else SIZES

    def ev_pair():
        return torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def reduce_max(v: float) -> float:
        t = torch.tensor([v], device=dev)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return float(t.item())

    def eager_spin(x, calls):
        """calls back to back behind a spin kernel long enough for the host to queue them all: device time only."""
        xs = []
        for rep in range(REPS + 1):
            dist.barrier()
            if cuda:
                torch.cuda.synchronize()
                torch.cuda._sleep(int(max(1500.0, 40.0 * calls) * T.SPIN_CYCLES_PER_US))
                a, b = ev_pair()
                a.record()
                for _ in range(calls):
                    dist.all_reduce(x)
                b.record()
                b.synchronize()
                us = a.elapsed_time(b) * 1000.0 / calls
            else:
                t0 = time.perf_counter()
                for _ in range(calls):
                    dist.all_reduce(x)
                us = (time.perf_counter() - t0) * 1e6 / calls
            us = reduce_max(us)
            if rep:
                xs.append(us)
        return xs

    for mode in ("eager", "graph"):
        if mode == "graph" and not cuda:
            continue
        for nbytes in sizes:
            calls = _calls(nbytes)
            x = torch.ones(nbytes // 2, dtype=torch.bfloat16 if cuda else torch.float32, device=dev)
            _say(tag, f"{mode} bytes {nbytes} calls {calls}")
            try:
                xs = (eager_spin(x, calls) if mode == "eager"
                      else _graph_us(dist.all_reduce, x, calls, warmup=3, barrier_before_capture=False))
                # correctness: one call on fresh ones sums to world
                y = torch.ones(nbytes // 2, dtype=x.dtype, device=dev)
                dist.all_reduce(y)
                ok = bool(torch.all(y == world).item())
                if sink:
                    sink.put(_row(f"nccl_{mode}", world, nbytes, xs, calls, "" if ok else "WRONG SUM"))
            except Exception as e:  # noqa: BLE001
                _say(tag, f"{mode} bytes {nbytes}: {type(e).__name__}: {str(e)[:300]}")
                if mode == "graph":
                    break
            del x
    _say(tag, "done; destroying the group")
    dist.barrier()
    dist.destroy_process_group()
    faulthandler.cancel_dump_traceback_later()


# ---- phase symm: PyTorch symmetric memory (CUDA backend, peer pointers, no multicast) -------------------------------

def _symm_worker(rank: int, world: int, port: int, smoke: bool, csv_path: str, meta: dict, timeout: float):
    _arm(timeout)
    import torch
    import torch.distributed as dist
    import torch.distributed._symmetric_memory as symm
    sys.path.insert(0, str(Path(__file__).resolve().parent))

    tag = f"symm r{rank}"
    torch.cuda.set_device(rank)
    _say(tag, f"init_process_group (TORCH_SYMMMEM={os.environ.get('TORCH_SYMMMEM')})")
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            device_id=torch.device(f"cuda:{rank}"))
    gname = dist.group.WORLD.group_name
    if hasattr(symm, "enable_symm_mem_for_group"):
        try:
            symm.enable_symm_mem_for_group(gname)
        except Exception as e:  # noqa: BLE001
            _say(tag, f"enable_symm_mem_for_group: {e!r}")
    sink = Sink(Path(csv_path), meta) if rank == 0 else None
    sizes = SIZES[:3] if smoke else SIZES
    ops = {"symm_oneshot": lambda t: torch.ops.symm_mem.one_shot_all_reduce(t, "sum", gname),
           "symm_twoshot": lambda t: torch.ops.symm_mem.two_shot_all_reduce_(t, "sum", gname)}
    dead = set()
    for nbytes in sizes:
        calls = _calls(nbytes)
        _say(tag, f"bytes {nbytes}: symmetric allocation + rendezvous")
        try:
            sx = symm.empty(nbytes // 2, dtype=torch.bfloat16, device=f"cuda:{rank}")
            symm.rendezvous(sx, group=gname)
        except Exception as e:  # noqa: BLE001
            _say(tag, f"rendezvous failed at {nbytes}: {type(e).__name__}: {str(e)[:300]}")
            break
        for name, fn in ops.items():
            if name in dead:
                continue
            _say(tag, f"{name} bytes {nbytes}")
            try:
                sx.fill_(1.0)
                torch.cuda.synchronize()
                dist.barrier()
                out = fn(sx)
                torch.cuda.synchronize()
                res = sx if out is None else out
                ok = bool(torch.all(res == world).item())
                xs = _graph_us(fn, sx, calls, warmup=1, barrier_before_capture=True)
                if sink:
                    sink.put(_row(name, world, nbytes, xs, calls, "" if ok else "WRONG SUM"))
            except Exception as e:  # noqa: BLE001
                _say(tag, f"{name} bytes {nbytes}: {type(e).__name__}: {str(e)[:300]}")
                dead.add(name)
                torch.cuda.synchronize()
        del sx
    _say(tag, "done")
    dist.barrier()
    dist.destroy_process_group()
    faulthandler.cancel_dump_traceback_later()


def _spawn_phase(target, world: int, smoke: bool, csv_path: Path, meta: dict, timeout: float) -> None:
    import torch.multiprocessing as mp
    ctx = mp.get_context("spawn")
    port = 29500 + (os.getpid() * 7 + hash(target.__name__)) % 2000
    procs = [ctx.Process(target=target, args=(r, world, port, smoke, str(csv_path), meta, timeout)) for r in range(world)]
    for p in procs:
        p.start()
    deadline = time.time() + timeout + 4.0
    for p in procs:
        p.join(timeout=max(0.1, deadline - time.time()))
    for p in procs:
        if p.is_alive():
            _say("phase", f"worker {p.pid} still alive after the phase timeout: killed")
            p.kill()
            p.join(2.0)


# ---- phase own: the project's one-shot / two-shot peer-memory kernel, one process driving every GPU ---------------

def _own_phase(lib: Path, world: int, smoke: bool, csv_path: Path, meta: dict, timeout: float) -> None:
    import ctypes

    import torch
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import _timing as T

    tag = "own"
    sink = Sink(csv_path, meta)
    so = None
    for name in ("ar_kernel.so", "ar_kernel_static.so"):   # linked to the shared cudart (torch's), else static
        try:
            so = ctypes.CDLL(str((lib / name).resolve()))
            _say(tag, f"loaded {name}")
            break
        except OSError as e:
            _say(tag, f"{name}: {e}")
    if so is None:
        raise RuntimeError("no ar_kernel library could be loaded")
    so.ar_launch.restype = ctypes.c_int
    so.ar_launch.argtypes = [ctypes.c_int] * 4 + [ctypes.c_void_p] * 4 + [ctypes.c_longlong, ctypes.c_int, ctypes.c_void_p]
    so.ar_enable_peer.restype = ctypes.c_int
    for d in range(world):
        torch.zeros(1, device=f"cuda:{d}")   # create the primary contexts through torch first
    for d in range(world):
        for p in range(world):
            if d != p:
                rc = so.ar_enable_peer(d, p)
                _say(tag, f"peer access {d}->{p}: rc {rc}")
                if rc:
                    raise RuntimeError(f"peer access {d}->{p}: rc {rc}")
    arr = ctypes.c_void_p * 8
    cap_streams = [torch.cuda.Stream(device=r) for r in range(world)]
    for nbytes in (SIZES[:3] if smoke else SIZES):
        n16 = nbytes // 16
        gen = torch.Generator().manual_seed(nbytes)
        host = [torch.randint(-4, 5, (nbytes // 2,), generator=gen).to(torch.bfloat16) for _ in range(world)]
        want = torch.stack([h.float() for h in host]).sum(0).to(torch.bfloat16)
        ins = [host[r].to(f"cuda:{r}") for r in range(world)]
        outs = [torch.full_like(x, float("nan")) for x in ins]
        tmps = [torch.empty(nbytes // 2, dtype=torch.bfloat16, device=f"cuda:{r}") for r in range(world)]
        sigs = [torch.zeros(1024, dtype=torch.uint8, device=f"cuda:{r}") for r in range(world)]
        pin = arr(*[x.data_ptr() for x in ins]), arr(*[x.data_ptr() for x in tmps]), arr(*[x.data_ptr() for x in sigs])
        blocks = max(1, min(BLOCK_LIMIT, math.ceil(n16 / THREADS)))
        for two in (0, 1):
            name = "own_twoshot" if two else "own_oneshot"
            calls = _calls(nbytes)
            _say(tag, f"{name} bytes {nbytes} blocks {blocks}")
            try:
                # one eager call per device (correctness), then a graph of `calls` per device
                for r in range(world):
                    with torch.cuda.device(r):
                        rc = so.ar_launch(r, two, world, r, pin[0], pin[1], pin[2], outs[r].data_ptr(), n16, blocks,
                                          torch.cuda.current_stream().cuda_stream)
                        if rc:
                            raise RuntimeError(f"launch rc {rc}")
                for r in range(world):
                    torch.cuda.synchronize(r)
                ok = all(bool(torch.equal(outs[r].cpu(), want)) for r in range(world))
                graphs = []
                for r in range(world):
                    with torch.cuda.device(r):
                        g = torch.cuda.CUDAGraph()
                        # a capture stream of this device: torch.cuda.graph's default capture stream is made once, on
                        # the first device that captures, and capturing device r's launches on it fails
                        with torch.cuda.graph(g, stream=cap_streams[r], capture_error_mode="relaxed"):
                            for _ in range(calls):
                                rc = so.ar_launch(r, two, world, r, pin[0], pin[1], pin[2], outs[r].data_ptr(), n16,
                                                  blocks, torch.cuda.current_stream().cuda_stream)
                                if rc:
                                    raise RuntimeError(f"launch rc {rc}")
                        graphs.append(g)
                xs = []
                for rep in range(REPS + 1):
                    evs = []
                    for r in range(world):
                        with torch.cuda.device(r):
                            T.spin(300.0)
                            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                            a.record()
                            graphs[r].replay()
                            b.record()
                            evs.append((a, b))
                    for _, b in evs:
                        b.synchronize()
                    if rep:
                        xs.append(max(a.elapsed_time(b) * 1000.0 / calls for a, b in evs))
                sink.put(_row(name, world, nbytes, xs, calls, "" if ok else "WRONG SUM"))
                del graphs
            except Exception as e:  # noqa: BLE001
                _say(tag, f"{name} bytes {nbytes}: {e!r}")
                traceback.print_exc()
                return   # a failed capture can leave a stream capturing: nothing after it on this device is sound
        del ins, outs, tmps, sigs
        for r in range(world):
            torch.cuda.synchronize(r)


# ---- driver -------------------------------------------------------------------------------------------------------

def _meta() -> dict:
    import torch
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import _timing as T
    v = T.versions()
    try:
        nccl = ".".join(str(x) for x in torch.cuda.nccl.version())
    except Exception:  # noqa: BLE001
        nccl = "-"
    return {"device": v["device"], "torch": v["torch"], "cuda": v["cuda"], "nccl": nccl, "driver": v["driver"],
            "date": dt.date.today().isoformat(), "script_version": SCRIPT_VERSION}


def run_phase(args) -> None:
    """Child-process entry: one phase (module docstring)."""
    import json
    meta = json.loads(args.meta)
    csv_path = Path(args.csv)
    _arm(args.phase_timeout + 8.0)
    _say(args.phase, f"start (timeout {args.phase_timeout:.0f} s)")
    if args.phase == "nccl":
        _spawn_phase(_nccl_worker, args.gpus, args.smoke, csv_path, meta, args.phase_timeout)
    elif args.phase == "symm":
        _spawn_phase(_symm_worker, args.gpus, args.smoke, csv_path, meta, args.phase_timeout)
    elif args.phase == "own":
        _own_phase(Path(args.lib), args.gpus, args.smoke, csv_path, meta, args.phase_timeout)
    _say(args.phase, "end")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--lib", type=Path, default=None)
    ap.add_argument("--gpus", type=int, default=None)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--phases", default=",".join(PHASES))
    ap.add_argument("--phase-timeout", type=float, default=45.0)
    ap.add_argument("--phase", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--csv", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--meta", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.phase:
        run_phase(args)
        return
    import json

    import torch
    args.out.mkdir(parents=True, exist_ok=True)
    cuda = torch.cuda.is_available()
    gpus = args.gpus or (torch.cuda.device_count() if cuda else 2)
    meta = _meta()
    _say("main", f"{meta}, gpus {gpus}, phases {args.phases}, phase timeout {args.phase_timeout:.0f} s")
    if gpus < 2:
        _say("main", "needs >= 2 GPUs")
        return
    slug = meta["device"].lower().replace(" ", "-").replace("(", "").replace(")", "")
    csv_path = args.out / f"allreduce_{slug}_x{gpus}_{meta['date']}.csv"
    with open(csv_path, "w", newline="") as f:
        csv.DictWriter(f, fieldnames=FIELDS).writeheader()
    for phase in [p for p in args.phases.split(",") if p]:
        if phase not in PHASES:
            raise SystemExit(f"unknown phase {phase!r}; allowed: {', '.join(PHASES)}")
        if phase in ("own", "symm") and not cuda:
            _say("main", f"phase {phase}: needs CUDA, skipped")
            continue
        if phase == "own" and args.lib is None:
            _say("main", "phase own: no --lib, skipped")
            continue
        cmd = [sys.executable, __file__, "--out", str(args.out), "--phase", phase, "--csv", str(csv_path),
               "--meta", json.dumps(meta), "--gpus", str(gpus), "--phase-timeout", str(args.phase_timeout)]
        if args.lib is not None:
            cmd += ["--lib", str(args.lib)]
        if args.smoke:
            cmd.append("--smoke")
        t0 = time.time()
        p = subprocess.Popen(cmd, start_new_session=True)
        try:
            rc = p.wait(timeout=args.phase_timeout + 12.0)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            rc = "killed"
        _say("main", f"phase {phase}: rc {rc} after {time.time() - t0:.1f} s")
    with open(csv_path) as f:
        n = sum(1 for _ in f) - 1
    _say("main", f"wrote {csv_path} ({n} rows)")


if __name__ == "__main__":
    main()
