"""Does an engine all-reduce cost more inside a decode step than back to back? (script version 4)

The engines' all-reduce terms are judged on graphs of back-to-back calls (measure_engine_allreduce.py, protocol B). A
tensor-parallel decode step interleaves them with row-parallel GEMMs: per layer o_proj (tokens x hidden/g . hidden/g x
hidden) -> all-reduce -> down_proj (tokens x ffn/g . ffn/g x hidden) -> all-reduce. This script times, per rank count g
and token count T, three CUDA graphs of L such layers (Llama-3.1-70B's hidden 8192, ffn 28672):
    step  GEMM, all-reduce, GEMM, all-reduce, ... (2L all-reduces)
    gemm  the same GEMMs alone
    ar    the same 2L all-reduces alone (back to back, as the kernel grids time them)
each replayed 21 times behind a barrier and a spin (lab/kernels/_timing.py replay_max_over_ranks, one replay = one step:
the max over ranks of the replay's time), for L = 8 and L = 32. extra(L) = step - gemm - ar holds what the parts' sum
misses: the ranks' start skew a step absorbs at its first all-reduce (once per replay) and a per-all-reduce cost
epsilon of interleaving (e.g. GEMMs ending at different times on different ranks, a cold flag line after a GEMM), so
    epsilon = (extra(32) - extra(8)) / (2 x (32 - 8)).
Version 2 adds two variants with a fixed-length spin kernel (torch.cuda._sleep, SLEEP_CYCLES cycles: the same work on
every rank, no data) in place of each GEMM: sstep (spin, all-reduce, spin, all-reduce, ...) and sleep (the spins alone),
so epsilon_spin = the same difference with spins. If epsilon_spin ~ epsilon, the cost is an all-reduce following any
kernel (its start no longer overlapping the previous all-reduce); if epsilon_spin ~ 0, it is the GEMMs ending at different
times on different ranks (the one-shot's start barrier waits for the slowest).
Version 3 adds gspin (GEMM, spin, GEMM, spin, ...: no all-reduce): epsilon_gspin = (gspin - gemm - sleep) per slot tells
a GEMM that runs slower next to another kind of kernel (its tail no longer overlapping the next GEMM) from a cost of the
all-reduce itself.
Version 4 adds --impl trtllm: TensorRT-LLM's all-reduce (flashinfer's trtllm_allreduce_fusion.cu, plain all-reduce
pattern, the workspace as measure_engine_allreduce.py builds it) in place of vLLM's, both its kernels per cell -- the
Lamport one-shot (allreduce_fusion_kernel_oneshot_lamport: no barrier, each rank pushes its data into every peer's
Lamport buffer and polls until every peer's has arrived) and the two-shot (_twoshot_sync; only where tokens > ranks) --
rows tagged by the `impl` column (vllm, trtllm_oneshot, trtllm_twoshot; the gemm variant once per cell, impl '-').
The model prices a step as the sum of its kernels (hwmodels.roofline, engine all-reduce terms from back-to-back grids):
it assumes epsilon = 0. Hypothesis written before the run: |epsilon| < 0.3 us a call at every (g, T).

The all-reduce is vLLM's custom all-reduce (flashinfer-python 0.6.4, vllm_custom_all_reduce.cuh, 36 CTAs; messages of
T x 8192 bf16 = 16 KiB, 256 KiB, 1 MiB: one-shot at 2 ranks, and at 4 ranks below 512 KiB, two-shot at 4 ranks and
1 MiB), set up as measure_engine_allreduce.py does (imported from beside this file). Writes $OUT/allreduce_in_step_<device>_<date>.csv; prints a table last.

Usage (from the repository root of the device copy, flashinfer on PYTHONPATH):
    python lab/kernels/measure_allreduce_in_step.py --out $OUT [--worlds 4,2] [--timeout 120]
"""
from __future__ import annotations

import argparse
import csv
import datetime as dt
import faulthandler
import os
import statistics as st
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]
SCRIPT_VERSION = 4
#: the spin kernel's length (cycles; ~10 us at 1.98 GHz)
SLEEP_CYCLES = 20000
HIDDEN, FFN = 8192, 28672
TOKENS = (1, 16, 64)
LAYERS = (8, 32)
REPS = 21
#: the variants that run the all-reduce
AR_VARIANTS = ("step", "ar", "sstep")
FIELDS = ("device", "world", "hidden", "ffn", "tokens", "layers", "variant", "n_allreduce", "median_us", "p20_us",
          "p80_us", "reps", "note", "script_version", "date", "impl")


def _q(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(q * (len(xs) - 1))))]


def _trtllm_all_reduce(M, torch, world, rank):
    """TensorRT-LLM's fusion kernel set up as measure_engine_allreduce._trtllm sets it up; returns ar(y, o, oneshot)."""
    mod = M.fusion_module()
    elems = M.MAX_BYTES // 2
    comm_size = world * elems * 2                           # lamport_comm_size (bf16)
    buf = M._shared(-(-world * elems * 2 // (1 << 21)) * (1 << 21), fill=0)
    flags = M._shared(1 << 21, fill=0)
    lam = M._shared(-(-3 * comm_size // (1 << 21)) * (1 << 21), fill=-32768)   # -0.0 in 16-bit halves
    local = torch.tensor([0, 0, 0, comm_size, 0], dtype=torch.int32, device="cuda")
    ws = torch.tensor(buf + flags + lam + [local.data_ptr()], dtype=torch.int64, device="cuda")

    def ar(y, o, oneshot):
        t, h = y.shape
        mod.trtllm_allreduce_fusion(y, world, rank, t, h, ws, False, oneshot, True, True, 0, o, None, None, None, None,
                                    None, None, None, None, None)
    return ar, local


def _worker(rank, world, port, out_csv, timeout, dims=((HIDDEN, FFN),), tokens=TOKENS, layer_counts=LAYERS,
            variants=("step", "gemm", "ar", "sstep", "sleep", "gspin"), impl="vllm"):
    faulthandler.dump_traceback_later(timeout, exit=True)
    import _timing as T
    import measure_engine_allreduce as M
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            device_id=torch.device(f"cuda:{rank}"))
    torch.zeros(1, device="cuda")
    if impl == "vllm":
        mod = M.vllm_module()
        meta_ptrs = M._shared(int(mod.meta_size()) + M.MAX_BYTES, fill=0)
        rank_data = torch.empty(8 << 20, dtype=torch.uint8, device="cuda")
        fa = mod.init_custom_ar(meta_ptrs, rank_data, rank, True)
        reg = M._shared(M.MAX_BYTES, fill=None)
        mod.register_buffer(fa, reg)
    else:
        trt_ar, _keep = _trtllm_all_reduce(M, torch, world, rank)
        dist.barrier()
    dev = torch.cuda.get_device_name()
    gen = torch.Generator(device="cuda").manual_seed(1234 + rank)

    def reg_graph():
        hd, off = mod.get_graph_buffer_ipc_meta(fa)
        got = [None] * world
        dist.all_gather_object(got, (list(hd), list(off)))
        mod.register_graph_buffers(fa, [g[0] for g in got], [g[1] for g in got])

    def all_reduce(y, o, kern):
        if kern == "vllm":
            mod.all_reduce(fa, y, o, 0, 0, M.VLLM_CTAS)
        else:
            trt_ar(y, o, kern == "trtllm_oneshot")

    def one(x_w_y_o, layers, variant, kern="vllm"):
        """The variant's graph of `layers` layers, replayed: per-replay microseconds (max over ranks) and a note."""
        torch.cuda.synchronize()
        dist.barrier()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=torch.cuda.Stream(), capture_error_mode="thread_local"):
            for _ in range(layers):
                for x, w, y, o in x_w_y_o:
                    if variant in ("step", "gemm", "gspin"):
                        torch.matmul(x, w, out=y)
                    if variant in ("sstep", "sleep", "gspin"):
                        torch.cuda._sleep(SLEEP_CYCLES)
                    if variant in AR_VARIANTS:
                        all_reduce(y, o, kern)
        torch.cuda.synchronize()
        if variant in AR_VARIANTS and kern == "vllm":
            reg_graph()
        xs = T.replay_max_over_ranks(g, 1, REPS)
        note = ""
        if variant in AR_VARIANTS:
            _, _, y, o = x_w_y_o[-1]
            ref = y.float()
            dist.all_reduce(ref)
            note = "" if M._all_ok(bool(torch.allclose(o.float(), ref, rtol=2e-2, atol=2e-2))) else "WRONG"
        del g
        return xs, note

    for hidden, ffn in dims:
        ka, kb = hidden // world, ffn // world
        wa = (torch.randn(ka, hidden, device="cuda", generator=gen) * 0.02).to(torch.bfloat16)
        wb = (torch.randn(kb, hidden, device="cuda", generator=gen) * 0.02).to(torch.bfloat16)
        for t in tokens:
            xa = torch.randn(t, ka, device="cuda", generator=gen).to(torch.bfloat16)
            xb = torch.randn(t, kb, device="cuda", generator=gen).to(torch.bfloat16)
            ya = torch.empty(t, hidden, device="cuda", dtype=torch.bfloat16)
            yb, oa, ob = torch.empty_like(ya), torch.empty_like(ya), torch.empty_like(ya)
            torch.matmul(xa, wa, out=ya)
            torch.matmul(xb, wb, out=yb)
            kerns = ["vllm"] if impl == "vllm" else ["trtllm_oneshot"] + (["trtllm_twoshot"] if t > world else [])
            runs = [(layers, variant, k) for layers in layer_counts for variant in variants
                    for k in (kerns if variant in AR_VARIANTS or impl == "vllm" else ["-"])]
            for layers, variant, kern in runs:
                try:
                    xs, note = one(((xa, wa, ya, oa), (xb, wb, yb, ob)), layers, variant, kern)
                except Exception as e:  # noqa: BLE001
                    print(f"[r{rank}] g{world} H{hidden} T{t} L{layers} {variant}: {type(e).__name__}: "
                          f"{str(e)[:300]}", flush=True)
                    xs, note = [float("nan")], "ERROR"
                if rank == 0:
                    row = {"device": dev, "world": world, "hidden": hidden, "ffn": ffn, "tokens": t,
                           "layers": layers, "variant": variant,
                           "n_allreduce": 2 * layers if variant in AR_VARIANTS else 0,
                           "median_us": round(st.median(xs), 3), "p20_us": round(_q(xs, 0.2), 3),
                           "p80_us": round(_q(xs, 0.8), 3), "reps": len(xs), "note": note,
                           "script_version": SCRIPT_VERSION, "date": dt.date.today().isoformat(),
                           "impl": kern}
                    with open(out_csv, "a", newline="") as f:
                        csv.DictWriter(f, fieldnames=FIELDS).writerow(row)
                    print(f"g{world} H{hidden} T{t:3d} L{layers:2d} {variant:5s} {kern:14s} {row['median_us']:9.2f} us "
                          f"{note}", flush=True)
    if impl == "vllm":
        mod.dispose(fa)
    torch.cuda.synchronize()
    dist.barrier()
    dist.destroy_process_group()
    faulthandler.cancel_dump_traceback_later()


def summary(out_csv: str) -> None:
    """extra(L) = whole - parts at the smallest and largest L, and the slope per slot, per (world, hidden, tokens,
    all-reduce kernel): eps = step - gemm - ar (the all-reduce after a GEMM), eps_spin = sstep - sleep - ar, eps_gspin =
    gspin - gemm - sleep (the parts without an all-reduce are looked up under the kernel, else under '-')."""
    rows = [r for r in csv.DictReader(open(out_csv)) if r["note"] != "ERROR"]
    v = {(int(r["world"]), int(r["hidden"]), int(r["tokens"]), int(r["layers"]), r["variant"], r.get("impl") or "vllm"):
         float(r["median_us"]) for r in rows}

    def get(g, h, t, L, var, k):
        return v[(g, h, t, L, var, k)] if (g, h, t, L, var, k) in v else v[(g, h, t, L, var, "-")]

    est = {"eps": ("step", "gemm", "ar"), "eps_spin": ("sstep", "sleep", "ar"), "eps_gspin": ("gspin", "gemm", "sleep")}
    print("world hidden tokens kernel          L_lo L_hi  step_hi  gemm_hi   ar_hi    eps  eps_spin  eps_gspin   (us; eps "
          "per slot)")
    cells = sorted({(k[0], k[1], k[2], k[5]) for k in v if k[5] != "-"}, key=lambda k: (-k[0], k[1], k[2], k[3]))
    for g, h, t, kern in cells:
        ls = sorted({k[3] for k in v if k[:3] == (g, h, t)})
        lo, hi = ls[0], ls[-1]
        out = []
        for whole, a, b in est.values():
            try:
                ex = [get(g, h, t, L, whole, kern) - get(g, h, t, L, a, kern) - get(g, h, t, L, b, kern) for L in (lo, hi)]
                out.append(f"{(ex[1] - ex[0]) / (2 * (hi - lo)):+8.3f}" if hi > lo else "       -")
            except KeyError:
                out.append("       -")
        parts = []
        for k in ("step", "gemm", "ar"):
            try:
                parts.append(f"{get(g, h, t, hi, k, kern):8.1f}")
            except KeyError:
                parts.append(f"{float('nan'):8.1f}")
        print(f"{g:5d} {h:6d} {t:6d} {kern:15s} {lo:5d} {hi:4d} {' '.join(parts)} " + "  ".join(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--worlds", default="4,2")
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--dims", default=f"{HIDDEN}:{FFN}", help="hidden:ffn[,hidden:ffn...]")
    ap.add_argument("--tokens", default=",".join(map(str, TOKENS)))
    ap.add_argument("--layers", default=",".join(map(str, LAYERS)))
    ap.add_argument("--variants", default="step,gemm,ar,sstep,sleep,gspin")
    ap.add_argument("--tag", default="", help="inserted in the CSV name")
    ap.add_argument("--impl", default="vllm", choices=("vllm", "trtllm"),
                    help="vLLM's custom all-reduce, or TensorRT-LLM's (both its kernels per cell)")
    args = ap.parse_args()
    dims = tuple(tuple(int(x) for x in d.split(":")) for d in args.dims.split(","))
    tokens = tuple(int(x) for x in args.tokens.split(","))
    layer_counts = tuple(int(x) for x in args.layers.split(","))
    variants = tuple(args.variants.split(","))
    args.out.mkdir(parents=True, exist_ok=True)
    import torch
    import torch.multiprocessing as mp
    slug = torch.cuda.get_device_name().lower().replace(" ", "-")
    out_csv = str(args.out / f"allreduce_in_step{args.tag}_{slug}_{dt.date.today().isoformat()}.csv")
    with open(out_csv, "w", newline="") as f:
        csv.DictWriter(f, fieldnames=FIELDS).writeheader()
    ctx = mp.get_context("spawn")
    port = 29700 + os.getpid() % 1000
    for world in [int(w) for w in args.worlds.split(",")]:
        port += 7
        t0 = time.time()
        procs = [ctx.Process(target=_worker, args=(r, world, port, out_csv, args.timeout, dims, tokens, layer_counts,
                                                   variants, args.impl)) for r in range(world)]
        for p in procs:
            p.start()
        deadline = time.time() + args.timeout + 5
        for p in procs:
            p.join(timeout=max(0.1, deadline - time.time()))
        for p in procs:
            if p.is_alive():
                p.kill()
        print(f"world {world}: {time.time() - t0:.1f} s", flush=True)
    summary(out_csv)


if __name__ == "__main__":
    main()
