#!/usr/bin/env python3
"""GPU calibration campaign for sparsesim (the "thin set").

Measures, on whatever CUDA GPU it runs on, the handful of kernel families the
analytic model needs: memory copy/reduce ceilings, bf16 (and fp8) GEMMs at the
projection shapes of a few Llama models, dense GQA decode attention through
SDPA, page-sparse (gathered) attention, torch.topk, small elementwise ops,
kernel launch overhead (eager vs CUDA graph) and one full Llama-3.1-8B-shaped
decode step (eager and graph-replayed).

Writes one CSV per run, ``<device-slug>_<YYYY-MM-DD>.csv``, one row per
measurement; columns are described in README.md beside this file.

Usage (on the GPU machine):

    python3 lab/measure.py --out OUTDIR
    python3 lab/measure.py --out OUTDIR --quick
    python3 lab/measure.py --out OUTDIR --only gemm,topk

Only torch is needed.  ``--device cpu`` runs the code paths on the CPU with
wall-clock timing and a scaled-down decode model; it exists to debug the
script, its numbers mean nothing.

Timing: each measurement is warmed up, then timed with CUDA events.  Before
each timed sample a short spin kernel (torch.cuda._sleep) keeps the GPU busy
while the host enqueues the sample, so samples measure back-to-back GPU time
and not host launch latency (the ``launch`` and ``e2e_decode`` families measure
host-side costs on purpose and do not use the spin).  A sample holds
``inner_calls`` calls when one call is short (rows report the per-call time).
When one input set would fit in L2, calls rotate among ``rotation_sets``
independent random input sets.  Never zeros: all data is random.
"""
from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
import time
import traceback
import warnings

import harness
import torch
import torch.nn.functional as F
from harness import Bencher, Env, quantile, replay_times

SCRIPT_VERSION = 1

COLUMNS = [
    # run / device metadata (identical on every row)
    "device", "sm_count", "l2_bytes", "gpu_mem_bytes", "torch_version", "cuda_version",
    "driver_version", "date", "script_version",
    # what was measured
    "family", "op_kind", "dtype", "backend",
    # shape parameters (empty where not applicable)
    "m", "n", "k", "batch", "heads", "kv_heads", "head_dim", "context", "q_rows",
    "pages", "page_size", "selected_tokens", "row_len", "topk_k", "bytes", "layers", "n_kernels",
    # analytic work counts
    "bytes_moved", "flops",
    # timing (microseconds, per call)
    "median_us", "p20_us", "p80_us", "repeats", "inner_calls", "rotation_sets",
    # derived
    "achieved_gbps", "achieved_tflops",
    "note",
]

MiB = 1 << 20
GiB = 1 << 30
ROTATE_TARGET_BYTES = 256 * MiB   # rotate input sets until this many bytes are touched (> 4x L2)


# ----------------------------------------------------------------------------
# output (the row format of this campaign; the CSV sink, Env and timers are lab/harness.py's)
# ----------------------------------------------------------------------------

class Sink(harness.Sink):
    """The campaign's CSV (COLUMNS), one row per measurement, with its achieved GB/s and TFLOP/s."""

    def __init__(self, path: str, env: Env):
        super().__init__(path, COLUMNS, SCRIPT_VERSION, env.facts(COLUMNS))

    def emit(self, family, op_kind, dtype="", *, shape=None, bytes_moved=None, flops=None,
             t=None, backend="", note=""):
        row = dict(family=family, op_kind=op_kind, dtype=_dtname(dtype), backend=backend, note=note)
        if shape:
            for k_, v_ in shape.items():
                if k_ not in COLUMNS:
                    raise KeyError(k_)
                row[k_] = v_
        if bytes_moved is not None:
            row["bytes_moved"] = int(bytes_moved)
        if flops is not None:
            row["flops"] = int(flops)
        if t is not None:
            row.update(median_us=f"{t['median']:.3f}", p20_us=f"{t['p20']:.3f}", p80_us=f"{t['p80']:.3f}",
                       repeats=t["reps"], inner_calls=t["inner"], rotation_sets=t.get("nrot", 1))
            if bytes_moved:
                row["achieved_gbps"] = f"{bytes_moved / t['median'] / 1e3:.2f}"
            if flops:
                row["achieved_tflops"] = f"{flops / t['median'] / 1e6:.3f}"
        row = self.write(row)
        shp = " ".join(f"{k_}={v_}" for k_, v_ in (shape or {}).items())
        tm = f"{t['median']:10.2f} us" if t is not None else "        -- "
        extra = ""
        if row.get("achieved_gbps"):
            extra += f" {float(row['achieved_gbps']):8.1f} GB/s"
        if row.get("achieved_tflops"):
            extra += f" {float(row['achieved_tflops']):7.1f} TF/s"
        print(f"[{family}] {op_kind:<16} {row['dtype']:<6} {shp:<60} {tm}{extra} {backend} {note}".rstrip(),
              flush=True)
        return row


def _dtname(dt) -> str:
    if isinstance(dt, torch.dtype):
        return {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32",
                torch.float64: "fp64"}.get(dt, str(dt).replace("torch.", ""))
    return str(dt)


# ----------------------------------------------------------------------------
# timing helpers of this campaign
# ----------------------------------------------------------------------------

def nrot_for(set_bytes: int, cap: int = 16) -> int:
    return int(max(1, min(cap, math.ceil(ROTATE_TARGET_BYTES / max(set_bytes, 1)))))


def rnd(shape, dtype, dev, std=1.0):
    t = torch.empty(shape, dtype=dtype, device=dev)
    t.normal_(0.0, std)
    return t


class Budget:
    """Soft time budget for one family."""

    def __init__(self, seconds: float, deadline: float):
        self.t0 = time.perf_counter()
        self.end = min(self.t0 + seconds, deadline)
        self.skipped = 0

    def over(self) -> bool:
        if time.perf_counter() > self.end:
            self.skipped += 1
            return True
        return False


# ----------------------------------------------------------------------------
# SDPA backend handling
# ----------------------------------------------------------------------------

try:
    from torch.nn.attention import SDPBackend, sdpa_kernel
    _HAVE_SDPA_KERNEL = True
except Exception:  # noqa: BLE001
    _HAVE_SDPA_KERNEL = False


def _probe_gqa() -> bool:
    try:
        q = torch.randn(1, 4, 1, 8)
        kv = torch.randn(1, 2, 3, 8)
        F.scaled_dot_product_attention(q, kv, kv, enable_gqa=True)
        return True
    except Exception:  # noqa: BLE001
        return False


_HAVE_GQA = _probe_gqa()


def _err(ex) -> str:
    msg = str(ex).strip().splitlines()[0][:160] if str(ex).strip() else ""
    return f"{type(ex).__name__}: {msg}"


def _backend_list():
    if not _HAVE_SDPA_KERNEL:
        return [("default", None)]
    out = [("flash", SDPBackend.FLASH_ATTENTION)]
    if hasattr(SDPBackend, "CUDNN_ATTENTION"):
        out.append(("cudnn", SDPBackend.CUDNN_ATTENTION))
    out.append(("efficient", SDPBackend.EFFICIENT_ATTENTION))
    out.append(("math", SDPBackend.MATH))
    return out


def _ctx(be):
    if be is None or not _HAVE_SDPA_KERNEL:
        return contextlib.nullcontext()
    return sdpa_kernel([be])


def _sdpa(q, k, v, gqa_mode):
    """gqa_mode: 'native' (enable_gqa=True) or 'none' (Hq==Hkv, or k/v pre-repeated)."""
    if gqa_mode == "native":
        return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    return F.scaled_dot_product_attention(q, k, v)


def sdpa_gqa(q, k, v, be, gqa_mode):
    with _ctx(be):
        return _sdpa(q, k, v, gqa_mode)


def probe_sdpa(q, k, v, be, env):
    """Returns gqa_mode that works with this backend, or (None, error)."""
    hq, hkv = q.shape[1], k.shape[1]
    modes = ["none"] if hq == hkv else (["native"] if _HAVE_GQA else [])
    for mode in modes:
        try:
            sdpa_gqa(q, k, v, be, mode)
            env.sync()
            return mode, ""
        except Exception as ex:  # noqa: BLE001
            err = f"{type(ex).__name__}: {str(ex).splitlines()[0][:120] if str(ex) else ''}"
            continue
    return None, (err if modes else "enable_gqa unsupported")


# ----------------------------------------------------------------------------
# families
# ----------------------------------------------------------------------------

def fam_launch(env, sink, bench, args, budget):
    dev = env.device
    x = rnd((1,), torch.float32, dev)
    n = 100 if args.quick else 1000
    reps = 5 if args.quick else 15
    for _ in range(50):
        x.add_(1)
    env.sync()
    # eager: wall clock per kernel, host-bound
    walls = []
    for _ in range(reps):
        env.sync()
        t0 = time.perf_counter()
        for _ in range(n):
            x.add_(1)
        env.sync()
        walls.append((time.perf_counter() - t0) * 1e6 / n)
    t = dict(median=quantile(walls, 0.5), p20=quantile(walls, 0.2), p80=quantile(walls, 0.8), reps=reps,
             inner=n)
    sink.emit("launch", "launch_eager", torch.float32, shape={"n_kernels": n}, t=t,
              backend="eager x.add_(1) 1 elem",
              note="wall clock per kernel over a loop of n launches (host launch-bound)")
    if not env.cuda:
        return
    # graph: capture n kernels, replay; time per kernel
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            x.add_(1)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(n):
            x.add_(1)
    g1 = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g1):
        x.add_(1)
    for _ in range(3):
        g.replay()
        g1.replay()
    env.sync()
    ev_times, wall_times = replay_times(g, reps, env, per=n)
    one_times = []
    for _ in range(reps * 4):
        env.sync()
        t0 = time.perf_counter()
        g1.replay()
        env.sync()
        one_times.append((time.perf_counter() - t0) * 1e6)
    q = lambda xs, r=reps, i=n: dict(median=quantile(xs, .5), p20=quantile(xs, .2), p80=quantile(xs, .8),
                                     reps=r, inner=i)
    sink.emit("launch", "launch_graph", torch.float32, shape={"n_kernels": n}, t=q(ev_times),
              backend="cuda graph replay", note="GPU time per kernel inside one replayed graph (CUDA events)")
    sink.emit("launch", "launch_graph_wall", torch.float32, shape={"n_kernels": n},
              t=q(wall_times), backend="cuda graph replay",
              note="wall clock per kernel incl. replay call and sync")
    sink.emit("launch", "graph_replay_1", torch.float32, shape={"n_kernels": 1},
              t=q(one_times, reps * 4, 1), backend="cuda graph replay",
              note="wall clock of replaying a 1-kernel graph + synchronize (fixed replay cost)")
    # eager GPU-side spacing: spin first so the queue fills, then events around n launches
    if bench.has_sleep:
        gaps = []
        for _ in range(reps):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda._sleep(int(n * 12 * bench.cycles_per_us))
            a.record()
            for _ in range(n):
                x.add_(1)
            b.record()
            b.synchronize()
            gaps.append(a.elapsed_time(b) * 1000.0 / n)
        sink.emit("launch", "eager_gpu_back2back", torch.float32, shape={"n_kernels": n},
                  t=q(gaps), backend="eager, queue pre-filled",
                  note="GPU time per tiny kernel when host runs ahead (kernel + inter-kernel gap)")


def _bandwidth_sizes(env, args) -> list[int]:
    """Buffer sizes of the bandwidth-ceiling families (copy, reduce): 16 MiB .. 4 GiB."""
    if args.quick or not env.cuda:
        return [16 * MiB, 64 * MiB]
    return [16 * MiB, 64 * MiB, 256 * MiB, GiB, 4 * GiB]


def fam_copy(env, sink, bench, args, budget):
    dev = env.device
    for nbytes in _bandwidth_sizes(env, args):
        if budget.over():
            continue
        n = nbytes // 2
        nrot = nrot_for(2 * nbytes)
        srcs = [rnd((n,), torch.bfloat16, dev) for _ in range(nrot)]
        dsts = [torch.empty_like(srcs[0]) for _ in range(nrot)]
        t = bench.run(lambda i: dsts[i % nrot].copy_(srcs[i % nrot]), nrot)
        sink.emit("copy", "d2d_copy", torch.bfloat16, shape={"bytes": nbytes}, bytes_moved=2 * nbytes, t=t,
                  backend="tensor.copy_", note="bytes_moved = read + write")
        del srcs, dsts
        env.free()


def fam_reduce(env, sink, bench, args, budget):
    dev = env.device
    for nbytes in _bandwidth_sizes(env, args):
        if budget.over():
            continue
        n = nbytes // 4
        nrot = nrot_for(nbytes)
        srcs = [rnd((n,), torch.float32, dev) for _ in range(nrot)]
        t = bench.run(lambda i: srcs[i % nrot].sum(), nrot)
        sink.emit("reduce", "sum", torch.float32, shape={"bytes": nbytes}, bytes_moved=nbytes, flops=n, t=t,
                  backend="tensor.sum (full reduction)", note="read-only")
        del srcs
        env.free()


GEMM_SHAPES = [  # (model, name, K, N)
    ("llama3.1-8b", "qkv", 4096, 6144), ("llama3.1-8b", "o", 4096, 4096),
    ("llama3.1-8b", "gate_up", 4096, 28672), ("llama3.1-8b", "down", 14336, 4096),
    ("llama3.1-8b", "lm_head", 4096, 128256),
    ("llama3.1-70b-tp8", "qkv", 8192, 1280), ("llama3.1-70b-tp8", "o", 1024, 8192),
    ("llama3.1-70b-tp8", "gate_up", 8192, 7168), ("llama3.1-70b-tp8", "down", 3584, 8192),
    ("llama2-7b", "qkv", 4096, 12288), ("llama2-7b", "o", 4096, 4096),
    ("llama2-7b", "gate_up", 4096, 22016), ("llama2-7b", "down", 11008, 4096),
    ("tinyllama", "qkv", 2048, 2560), ("tinyllama", "o", 2048, 2048),
    ("tinyllama", "gate_up", 2048, 11264), ("tinyllama", "down", 5632, 2048),
]
GEMM_M = [1, 2, 4, 8, 16, 32, 64, 128, 512, 2048, 8192]


def fam_gemm(env, sink, bench, args, budget):
    dev = env.device
    dt = torch.bfloat16
    shapes = GEMM_SHAPES
    ms = GEMM_M
    if args.quick:
        shapes = [GEMM_SHAPES[0], GEMM_SHAPES[13]]
        ms = [1, 128, 2048] if env.cuda else [1, 16]
    for model, name, K, N in shapes:
        w_bytes = K * N * 2
        nrot = nrot_for(w_bytes, cap=8)
        ws = [rnd((K, N), dt, dev, 0.02) for _ in range(nrot)]
        for M in ms:
            if budget.over():
                continue
            xs = [rnd((M, K), dt, dev) for _ in range(nrot)]
            outs = [torch.empty((M, N), dtype=dt, device=dev) for _ in range(nrot)]
            try:
                t = bench.run(lambda i: torch.matmul(xs[i % nrot], ws[i % nrot], out=outs[i % nrot]), nrot,
                              budget_s=0.05)
            except Exception as ex:  # noqa: BLE001
                sink.emit("gemm", "matmul", dt, shape={"m": M, "n": N, "k": K}, note=f"error: {_err(ex)}")
                continue
            sink.emit("gemm", "matmul", dt, shape={"m": M, "n": N, "k": K},
                      bytes_moved=2 * (M * K + K * N + M * N), flops=2 * M * N * K, t=t,
                      backend="torch.matmul (cuBLAS)", note=f"{model} {name}")
            del xs, outs
        del ws
        env.free()
    fp8_gemm(env, sink, bench, args, budget)


def fp8_gemm(env, sink, bench, args, budget):
    dev = env.device
    f8 = getattr(torch, "float8_e4m3fn", None)
    if not env.cuda or f8 is None or not hasattr(torch, "_scaled_mm"):
        sink.emit("gemm", "scaled_mm_fp8", "fp8_e4m3", note="skipped: torch._scaled_mm / float8 not available "
                  "(or not on CUDA)")
        return
    shapes = GEMM_SHAPES[:5] if not args.quick else GEMM_SHAPES[:1]
    ms = [1, 16, 128, 2048, 8192] if not args.quick else [16, 2048]
    one = torch.tensor(1.0, device=dev, dtype=torch.float32)
    for model, name, K, N in shapes:
        nrot = nrot_for(K * N, cap=8)
        # b must be column-major: store [N, K] row-major and pass its transpose
        ws = [rnd((N, K), torch.bfloat16, dev).to(f8).t() for _ in range(nrot)]
        for M in ms:
            if budget.over():
                continue
            xs = [rnd((M, K), torch.bfloat16, dev).to(f8) for _ in range(nrot)]
            shape = {"m": M, "n": N, "k": K}
            try:
                torch._scaled_mm(xs[0], ws[0], scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
                env.sync()
            except Exception as ex:  # noqa: BLE001
                sink.emit("gemm", "scaled_mm_fp8", "fp8_e4m3", shape=shape,
                          note=f"skipped: {type(ex).__name__}: {str(ex).splitlines()[0][:150] if str(ex) else ''}")
                continue
            t = bench.run(lambda i: torch._scaled_mm(xs[i % nrot], ws[i % nrot], scale_a=one, scale_b=one,
                                                     out_dtype=torch.bfloat16), nrot, budget_s=0.05)
            sink.emit("gemm", "scaled_mm_fp8", "fp8_e4m3", shape=shape,
                      bytes_moved=M * K + K * N + 2 * M * N, flops=2 * M * N * K, t=t,
                      backend="torch._scaled_mm tensorwise scale, bf16 out", note=f"{model} {name}")
            del xs
        del ws
        env.free()


def fam_decode_attn(env, sink, bench, args, budget):
    dev = env.device
    dt = torch.bfloat16
    D = 128
    head_cfgs = [(32, 8), (64, 8), (32, 32)]
    Bs = [1, 4, 16, 64]
    Ts = [1024, 4096, 16384, 32768, 65536, 131072]
    qrs = [1, 4, 8, 16]
    backends = _backend_list()
    if args.quick:
        head_cfgs, Bs, Ts, qrs = [(32, 8)], [1, 16], [4096, 32768], [1, 8]
    if not env.cuda:
        Bs, Ts = [1], [1024]
    kv_limit = args.kv_limit_gb * GiB
    reported = set()
    for hkv in sorted({h for _, h in head_cfgs}):
        for B in Bs:
            for T in Ts:
                kv_bytes = 2 * B * hkv * T * D * 2
                if kv_bytes > kv_limit:
                    continue
                if budget.over():
                    continue
                nrot = nrot_for(kv_bytes)
                try:
                    ks = [rnd((B, hkv, T, D), dt, dev) for _ in range(nrot)]
                    vs = [rnd((B, hkv, T, D), dt, dev) for _ in range(nrot)]
                except torch.cuda.OutOfMemoryError:
                    env.free()
                    sink.emit("decode_attn", "sdpa", dt, shape={"batch": B, "kv_heads": hkv, "context": T},
                              note="skipped: out of memory allocating KV")
                    continue
                for hq, hkv2 in head_cfgs:
                    if hkv2 != hkv:
                        continue
                    for qr in qrs:
                        if budget.over():
                            continue
                        qs = [rnd((B, hq, qr, D), dt, dev) for _ in range(nrot)]
                        shape = {"batch": B, "heads": hq, "kv_heads": hkv, "head_dim": D, "context": T,
                                 "q_rows": qr}
                        nbytes = kv_bytes + 2 * (2 * B * hq * qr * D)
                        flops = 4 * B * hq * qr * T * D
                        any_ok = False
                        for bname, be in backends:
                            if bname == "math" and any_ok:
                                continue  # math only as a last resort
                            mode, err = probe_sdpa(qs[0], ks[0], vs[0], be, env)
                            if mode is None:
                                key = (bname, hq != hkv, qr)
                                if bname != "math" and key not in reported:
                                    reported.add(key)
                                    sink.emit("decode_attn", "sdpa", dt, shape=shape, backend=bname,
                                              note=f"unavailable (reported once per backend/gqa/q_rows): {err}")
                                continue
                            try:
                                with _ctx(be):
                                    t = bench.run(lambda i: _sdpa(qs[i % nrot], ks[i % nrot], vs[i % nrot], mode),
                                                  nrot, budget_s=0.03)
                            except Exception as ex:  # noqa: BLE001
                                sink.emit("decode_attn", "sdpa", dt, shape=shape, backend=bname,
                                          note=f"error: {_err(ex)}")
                                env.free()
                                continue
                            any_ok = True
                            sink.emit("decode_attn", "sdpa", dt, shape=shape, bytes_moved=nbytes, flops=flops, t=t,
                                      backend=f"{bname}+gqa_{mode}",
                                      note="non-causal over the whole cache" if qr > 1 else "decode")
                        if not any_ok and hq != hkv:
                            # fall back: repeat KV outside the timed region
                            rep = hq // hkv
                            if kv_bytes * rep * nrot + kv_bytes * nrot < env.mem_free() * 0.8:
                                kr = ks[0].repeat_interleave(rep, dim=1)
                                vr = vs[0].repeat_interleave(rep, dim=1)
                                for bname, be in backends:
                                    mode, err = probe_sdpa(qs[0], kr, vr, be, env)
                                    if mode is None:
                                        continue
                                    with _ctx(be):
                                        t = bench.run(lambda i: _sdpa(qs[i % nrot], kr, vr, mode), 1, budget_s=0.03)
                                    sink.emit("decode_attn", "sdpa", dt, shape=shape, bytes_moved=nbytes,
                                              flops=flops, t=t, backend=f"{bname}+repeat_kv",
                                              note="KV repeated to Hq outside timing; kernel reads Hq/Hkv x bytes")
                                    break
                                del kr, vr
                        del qs
                del ks, vs
                env.free()


def fam_paged_attn(env, sink, bench, args, budget):
    dev = env.device
    dt = torch.bfloat16
    D, hq, hkv = 128, 32, 8
    Bs = [1, 8, 32]
    Ts = [32768, 131072]
    budgets = [1024, 2048, 4096]
    page_sizes = [16, 64]
    layouts = ["per_head", "per_batch"]
    if args.quick:
        Bs, Ts, budgets, page_sizes = [1, 8], [32768], [2048], [16, 64]
    if not env.cuda:
        Bs, Ts, budgets, page_sizes = [1], [4096], [512], [16]
    n_idx = 4
    gen = torch.Generator(device="cpu")
    gen.manual_seed(0)
    for layout in layouts:
        for T in Ts:
            for B in Bs:
                if budget.over():
                    continue
                cache_bytes = 2 * B * hkv * T * D * 2
                if cache_bytes > args.kv_limit_gb * GiB:
                    continue
                ncopies = int(max(1, min(4, math.ceil(512 * MiB / cache_bytes))))
                # per_head: [B, Hkv, T, D] (pages of one head contiguous)
                # per_batch: [B, T, Hkv, D] (a page holds all kv heads, vLLM-like)
                cshape = (B, hkv, T, D) if layout == "per_head" else (B, T, hkv, D)
                try:
                    kc = [rnd(cshape, dt, dev) for _ in range(ncopies)]
                    vc = [rnd(cshape, dt, dev) for _ in range(ncopies)]
                except torch.cuda.OutOfMemoryError:
                    env.free()
                    continue
                for ps in page_sizes:
                    NP = T // ps
                    row = ps * D if layout == "per_head" else ps * hkv * D
                    kflat = [c.view(-1, row) for c in kc]
                    vflat = [c.view(-1, row) for c in vc]
                    for S in budgets:
                        if budget.over():
                            continue
                        P = S // ps
                        # index sets: random distinct pages per (b, h) or per b
                        idxs = []
                        for _ in range(n_idx):
                            if layout == "per_head":
                                sel = torch.rand(B * hkv, NP, generator=gen).argsort(dim=1)[:, :P].sort(dim=1).values
                                base = (torch.arange(B * hkv) * NP).unsqueeze(1)
                            else:
                                sel = torch.rand(B, NP, generator=gen).argsort(dim=1)[:, :P].sort(dim=1).values
                                base = (torch.arange(B) * NP).unsqueeze(1)
                            idxs.append((sel + base).reshape(-1).to(dev))
                        nrot = n_idx * ncopies
                        gk = [torch.empty((idxs[0].numel(), row), dtype=dt, device=dev) for _ in range(nrot)]
                        gv = [torch.empty_like(gk[0]) for _ in range(nrot)]

                        def gather(i):
                            j = i % nrot
                            c, ix = j % ncopies, j // ncopies
                            torch.index_select(kflat[c], 0, idxs[ix], out=gk[j])
                            torch.index_select(vflat[c], 0, idxs[ix], out=gv[j])

                        def kv_view(j):
                            if layout == "per_head":
                                return gk[j].view(B, hkv, S, D), gv[j].view(B, hkv, S, D)
                            return (gk[j].view(B, S, hkv, D).transpose(1, 2),
                                    gv[j].view(B, S, hkv, D).transpose(1, 2))

                        for j in range(nrot):
                            gather(j)
                        qs = [rnd((B, hq, 1, D), dt, dev) for _ in range(nrot)]
                        k0, v0 = kv_view(0)
                        chosen = None
                        for bname, be in _backend_list():
                            mode, err = probe_sdpa(qs[0], k0, v0, be, env)
                            if mode is not None:
                                chosen = (bname, be, mode)
                                break
                        shape = {"batch": B, "heads": hq, "kv_heads": hkv, "head_dim": D, "context": T,
                                 "q_rows": 1, "pages": P, "page_size": ps, "selected_tokens": S}
                        sel_bytes = 2 * B * hkv * S * D * 2
                        idx_bytes = idxs[0].numel() * 8 * 2  # K and V gathers each read the index list
                        q_bytes = 2 * B * hq * D * 2  # q in + out
                        flops = 4 * B * hq * S * D
                        tg = bench.run(gather, nrot, budget_s=0.03)
                        sink.emit("paged_attn", "gather", dt, shape=shape, bytes_moved=2 * sel_bytes + idx_bytes,
                                  t=tg, backend="torch.index_select x2 (K,V)",
                                  note=f"layout={layout}; bytes = selected KV read + written + indices")
                        if chosen is None:
                            sink.emit("paged_attn", "attn_gathered", dt, shape=shape,
                                      note="skipped: no SDPA backend ran on gathered KV")
                        else:
                            bname, be, mode = chosen

                            def attn(i):
                                k_, v_ = kv_view(i % nrot)
                                return _sdpa(qs[i % nrot], k_, v_, mode)

                            def both(i):
                                gather(i)
                                return attn(i)

                            with _ctx(be):
                                ta = bench.run(attn, nrot, budget_s=0.03)
                            sink.emit("paged_attn", "attn_gathered", dt, shape=shape, bytes_moved=sel_bytes + q_bytes,
                                      flops=flops, t=ta, backend=f"{bname}+gqa_{mode}", note=f"layout={layout}")
                            with _ctx(be):
                                tb = bench.run(both, nrot, budget_s=0.03)
                            sink.emit("paged_attn", "gather+attn", dt, shape=shape,
                                      bytes_moved=sel_bytes + idx_bytes // 2 + q_bytes, flops=flops, t=tb,
                                      backend=f"index_select + {bname}+gqa_{mode}",
                                      note=f"layout={layout}; bytes = fused minimum (selected KV read once)")
                        del gk, gv, qs, idxs
                        env.free()
                del kc, vc, kflat, vflat
                env.free()


def fam_topk(env, sink, bench, args, budget):
    dev = env.device
    lens = [8192, 16384, 32768, 65536, 131072, 262144]
    ks = [512, 2048]
    rows = [1, 4, 16, 64, 128]
    dts = [torch.float32, torch.bfloat16]
    if args.quick:
        lens, rows = [65536, 131072], [1, 16]
    if not env.cuda:
        lens, rows = [8192], [1, 4]
    for dt in dts:
        esz = torch.tensor([], dtype=dt).element_size()
        for L in lens:
            for R in rows:
                nrot = nrot_for(R * L * esz)
                xs = [rnd((R, L), dt, dev) for _ in range(nrot)]
                for kk in ks:
                    if budget.over():
                        continue
                    t = bench.run(lambda i: torch.topk(xs[i % nrot], kk, dim=-1), nrot, budget_s=0.03)
                    sink.emit("topk", "topk", dt, shape={"batch": R, "row_len": L, "topk_k": kk},
                              bytes_moved=R * L * esz + R * kk * (esz + 8), t=t, backend="torch.topk sorted=True",
                              note="batch = rows; out = values + int64 indices")
                del xs
                env.free()


def fam_elementwise(env, sink, bench, args, budget):
    dev = env.device
    dt = torch.bfloat16
    Bs = [1, 16, 64, 256, 1024, 4096, 16384]
    if args.quick or not env.cuda:
        Bs = [1, 1024]
    have_rms = hasattr(F, "rms_norm")
    for B in Bs:
        if budget.over():
            continue
        F_ = 14336
        nrot = nrot_for(3 * B * F_ * 2)
        gs = [rnd((B, F_), dt, dev) for _ in range(nrot)]
        us = [rnd((B, F_), dt, dev) for _ in range(nrot)]
        t = bench.run(lambda i: F.silu(gs[i % nrot]) * us[i % nrot], nrot, budget_s=0.03)
        sink.emit("elementwise", "silu_mul", dt, shape={"batch": B, "n": F_}, bytes_moved=3 * B * F_ * 2,
                  flops=5 * B * F_, t=t, backend="eager F.silu(g)*u (2 kernels)",
                  note="bytes = fused minimum (g,u read, out written)")
        del gs, us
        for H in (4096, 14336):
            nrot = nrot_for(2 * B * H * 2)
            xs = [rnd((B, H), dt, dev) for _ in range(nrot)]
            w = rnd((H,), dt, dev)
            if have_rms:
                fn = lambda i: F.rms_norm(xs[i % nrot], (H,), w, 1e-5)  # noqa: E731
                be = "F.rms_norm"
            else:
                fn = lambda i: (xs[i % nrot].float() * torch.rsqrt(  # noqa: E731
                    xs[i % nrot].float().pow(2).mean(-1, keepdim=True) + 1e-5)).to(dt) * w
                be = "manual rmsnorm (eager)"
            t = bench.run(fn, nrot, budget_s=0.03)
            sink.emit("elementwise", "rmsnorm", dt, shape={"batch": B, "n": H}, bytes_moved=2 * B * H * 2 + H * 2,
                      flops=4 * B * H, t=t, backend=be, note="bytes = fused minimum")
            del xs
        env.free()
    if budget.over():
        return
    nbytes = GiB if (env.cuda and not args.quick) else 64 * MiB
    n = nbytes // 2
    a, b = rnd((n,), dt, dev), rnd((n,), dt, dev)
    c = torch.empty_like(a)
    t = bench.run(lambda i: torch.add(a, b, out=c), 1, budget_s=0.05)
    sink.emit("elementwise", "add", dt, shape={"bytes": nbytes}, bytes_moved=3 * nbytes, flops=n, t=t,
              backend="torch.add(out=)", note="bytes param = one operand; moved = 2 reads + 1 write")
    del a, b, c
    env.free()


# ----------------------------------------------------------------------------
# end-to-end decode step, Llama-3.1-8B shaped
# ----------------------------------------------------------------------------

LLAMA31_8B = dict(layers=32, hidden=4096, heads=32, kv_heads=8, head_dim=128, ffn=14336, vocab=128256)
TINY = dict(layers=2, hidden=256, heads=4, kv_heads=2, head_dim=64, ffn=512, vocab=1000)


class DecodeModel:
    """Random-weight Llama-style decoder, one token per sequence per step."""

    def __init__(self, cfg, dev, dtype=torch.bfloat16):
        self.cfg = cfg
        self.dev = dev
        self.dtype = dtype
        H, Hq, Hkv, D, Fd, V = (cfg["hidden"], cfg["heads"], cfg["kv_heads"], cfg["head_dim"], cfg["ffn"],
                                cfg["vocab"])
        std = 0.02
        self.embed = rnd((V, H), dtype, dev, std)
        self.layers = []
        for _ in range(cfg["layers"]):
            self.layers.append(dict(
                attn_norm=1.0 + rnd((H,), dtype, dev, 0.01),
                wqkv=rnd((H, (Hq + 2 * Hkv) * D), dtype, dev, std),
                wo=rnd((Hq * D, H), dtype, dev, std),
                mlp_norm=1.0 + rnd((H,), dtype, dev, 0.01),
                wgu=rnd((H, 2 * Fd), dtype, dev, std),
                wd=rnd((Fd, H), dtype, dev, std),
            ))
        self.final_norm = 1.0 + rnd((H,), dtype, dev, 0.01)
        self.lm_head = rnd((H, V), dtype, dev, std)
        self.param_count = (2 * V * H + 2 * H + cfg["layers"] * (
            2 * H + H * (Hq + 2 * Hkv) * D + Hq * D * H + 3 * H * Fd))

    @staticmethod
    def norm(x, w):
        if hasattr(F, "rms_norm"):
            return F.rms_norm(x, (x.shape[-1],), w, 1e-5)
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5)).to(x.dtype) * w

    @staticmethod
    def rope(x, cos, sin):
        half = x.shape[-1] // 2
        x1, x2 = x[..., :half], x[..., half:]
        return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)

    def alloc_cache(self, B, T):
        """KV cache with T filled (random) positions plus the slot the new token writes (index T)."""
        c = self.cfg
        cache = torch.empty((c["layers"], 2, B, c["kv_heads"], T + 1, c["head_dim"]), dtype=self.dtype,
                            device=self.dev)
        cache.normal_()
        return cache

    def rope_tables(self, pos):
        D = self.cfg["head_dim"]
        inv = 1.0 / (500000.0 ** (torch.arange(0, D, 2, dtype=torch.float64) / D))
        ang = pos * inv
        return (torch.cos(ang).to(self.dtype).to(self.dev), torch.sin(ang).to(self.dtype).to(self.dev))

    def step(self, tokens, cache, pos, cos, sin):
        c = self.cfg
        B = tokens.shape[0]
        Hq, Hkv, D = c["heads"], c["kv_heads"], c["head_dim"]
        x = self.embed.index_select(0, tokens)                       # [B, H]
        for li, L in enumerate(self.layers):
            h = self.norm(x, L["attn_norm"])
            qkv = h @ L["wqkv"]                                     # [B, (Hq+2Hkv)D]
            q, k, v = qkv.split([Hq * D, Hkv * D, Hkv * D], dim=-1)
            q = self.rope(q.view(B, Hq, 1, D), cos, sin)
            k = self.rope(k.view(B, Hkv, 1, D), cos, sin)
            kc, vc = cache[li, 0], cache[li, 1]                      # [B, Hkv, T+1, D]
            kc[:, :, pos:pos + 1].copy_(k)
            vc[:, :, pos:pos + 1].copy_(v.view(B, Hkv, 1, D))
            o = F.scaled_dot_product_attention(q, kc, vc, enable_gqa=True) if Hq != Hkv else \
                F.scaled_dot_product_attention(q, kc, vc)            # [B, Hq, 1, D]
            x = x + o.reshape(B, Hq * D) @ L["wo"]
            h = self.norm(x, L["mlp_norm"])
            g, u = (h @ L["wgu"]).chunk(2, dim=-1)
            x = x + (F.silu(g) * u) @ L["wd"]
        return self.norm(x, self.final_norm) @ self.lm_head          # [B, V] logits


def fam_e2e_decode(env, sink, bench, args, budget):
    dev = env.device
    cfg = LLAMA31_8B if env.cuda else TINY
    cases = [(1, 8192), (1, 32768), (1, 131072), (8, 8192), (8, 32768), (16, 16384), (32, 8192), (64, 4096)]
    if args.quick:
        cases = [(1, 4096), (8, 8192)]
    if not env.cuda:
        cases = [(1, 256), (4, 128)]
    try:
        model = DecodeModel(cfg, dev)
    except torch.cuda.OutOfMemoryError:
        env.free()
        sink.emit("e2e_decode", "decode_step", torch.bfloat16, note="skipped: weights do not fit")
        return
    w_bytes = model.param_count * 2
    kv_tok = 2 * cfg["layers"] * cfg["kv_heads"] * cfg["head_dim"] * 2   # bytes per token, all layers
    shape_note = "llama3.1-8b shape" if env.cuda else "TINY debug shape"
    for B, T in cases:
        if budget.over():
            continue
        shape = {"batch": B, "context": T, "heads": cfg["heads"], "kv_heads": cfg["kv_heads"],
                 "head_dim": cfg["head_dim"], "layers": cfg["layers"], "n": cfg["hidden"], "q_rows": 1}
        need = kv_tok * B * (T + 1)
        if need > env.mem_free() - 6 * GiB:
            sink.emit("e2e_decode", "decode_step", torch.bfloat16, shape=shape,
                      note=f"skipped: KV {need / GiB:.1f} GiB does not fit next to weights")
            continue
        # bytes: all weights once (embedding: only B rows), KV read (T+1 positions), new KV written
        bytes_moved = (w_bytes - model.embed.numel() * 2 + B * cfg["hidden"] * 2) + kv_tok * B * (T + 1)
        linear_params = model.param_count - model.embed.numel()
        flops = 2 * B * linear_params + cfg["layers"] * 4 * B * cfg["heads"] * (T + 1) * cfg["head_dim"]
        try:
            cache = model.alloc_cache(B, T)
            tokens = torch.randint(0, cfg["vocab"], (B,), device=dev)
            cos, sin = model.rope_tables(T)
            with torch.no_grad():
                # eager
                for _ in range(3):
                    out = model.step(tokens, cache, T, cos, sin)
                env.sync()
                assert torch.isfinite(out.float()).all().item(), "non-finite logits"
                reps = 3 if (args.quick or not env.cuda) else 8
                times = []
                for _ in range(reps):
                    env.sync()
                    t0 = time.perf_counter()
                    model.step(tokens, cache, T, cos, sin)
                    env.sync()
                    times.append((time.perf_counter() - t0) * 1e6)
                t = dict(median=quantile(times, .5), p20=quantile(times, .2), p80=quantile(times, .8),
                         reps=reps, inner=1)
                sink.emit("e2e_decode", "decode_step_eager", torch.bfloat16, shape=shape, bytes_moved=bytes_moved,
                          flops=flops, t=t, backend="eager torch, SDPA default dispatch",
                          note=f"{shape_note}; wall clock incl. host launch; one token for each of B sequences")
                if env.cuda:
                    s = torch.cuda.Stream()
                    s.wait_stream(torch.cuda.current_stream())
                    with torch.cuda.stream(s):
                        for _ in range(2):
                            model.step(tokens, cache, T, cos, sin)
                    torch.cuda.current_stream().wait_stream(s)
                    g = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(g):
                        static_out = model.step(tokens, cache, T, cos, sin)
                    for _ in range(3):
                        g.replay()
                    env.sync()
                    reps = 5 if args.quick else 15
                    gt, wall = replay_times(g, reps, env)
                    assert torch.isfinite(static_out.float()).all().item(), "non-finite logits (graph)"
                    t = dict(median=quantile(gt, .5), p20=quantile(gt, .2), p80=quantile(gt, .8), reps=reps,
                             inner=1)
                    wall_note = f"; wall median {quantile(wall, .5):.1f} us"
                    sink.emit("e2e_decode", "decode_step_graph", torch.bfloat16, shape=shape,
                              bytes_moved=bytes_moved, flops=flops, t=t,
                              backend="CUDA graph replay, SDPA default dispatch",
                              note=f"{shape_note}; CUDA events around replay{wall_note}")
                    del g, static_out
        except torch.cuda.OutOfMemoryError:
            sink.emit("e2e_decode", "decode_step", torch.bfloat16, shape=shape, note="skipped: out of memory")
        finally:
            cache = None
            env.free()
    del model
    env.free()


# ----------------------------------------------------------------------------
# driver
# ----------------------------------------------------------------------------

FAMILIES = {  # name: (function, budget seconds on an H100)
    "launch": (fam_launch, 15),
    "copy": (fam_copy, 20),
    "reduce": (fam_reduce, 15),
    "elementwise": (fam_elementwise, 20),
    "gemm": (fam_gemm, 80),
    "topk": (fam_topk, 35),
    "decode_attn": (fam_decode_attn, 110),
    "paged_attn": (fam_paged_attn, 60),
    "e2e_decode": (fam_e2e_decode, 80),
}


def summarize(rows):
    print("\n=== summary ===")
    print(f"{'family':<12} {'op_kind':<20} {'rows':>5} {'GB/s min':>10} {'GB/s max':>10} {'TF/s min':>9} "
          f"{'TF/s max':>9} {'us min':>10} {'us max':>10}")
    groups = {}
    for r in rows:
        groups.setdefault((r["family"], r["op_kind"]), []).append(r)
    for (fam, op), rs in groups.items():
        gb = [float(r["achieved_gbps"]) for r in rs if r.get("achieved_gbps")]
        tf = [float(r["achieved_tflops"]) for r in rs if r.get("achieved_tflops")]
        us = [float(r["median_us"]) for r in rs if r.get("median_us")]
        f = lambda xs, fn, w, p: f"{fn(xs):{w}.{p}f}" if xs else " " * (w - 1) + "-"  # noqa: E731
        print(f"{fam:<12} {op:<20} {len(rs):>5} {f(gb, min, 10, 1)} {f(gb, max, 10, 1)} {f(tf, min, 9, 2)} "
              f"{f(tf, max, 9, 2)} {f(us, min, 10, 2)} {f(us, max, 10, 1)}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "hwmodels",
                                                  "calibration", "data"),
                    help="output folder for the CSV (default: the committed data, hwmodels/calibration/data/)")
    ap.add_argument("--only", default="", help="comma-separated families: " + ",".join(FAMILIES))
    ap.add_argument("--quick", action="store_true", help="tiny subset of every family (smoke test)")
    ap.add_argument("--device", default="cuda", help="cuda (default) or cpu (debug only)")
    ap.add_argument("--budget-scale", type=float, default=1.0, help="scale every family's time budget")
    ap.add_argument("--max-minutes", type=float, default=8.5, help="hard stop for starting new measurements")
    ap.add_argument("--kv-limit-gb", type=float, default=16.0, help="largest K+V (GiB) for attention families")
    args = ap.parse_args(argv)

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        sys.exit("CUDA not available (use --device cpu for a debug run)")
    env = Env(args.device)
    # SDPA warns (once per call site and message) why a disabled/unsuitable backend was not used; the
    # CSV records which backend ran, so keep the log readable
    warnings.filterwarnings("ignore", message=".*fused kernels require.*")
    warnings.filterwarnings("ignore", message=".*(Flash|Memory efficient|CuDNN|cuDNN).*")
    warnings.filterwarnings("ignore", message=".*[Ee]xpected query, key.*")
    torch.manual_seed(0)
    if env.cuda:
        torch.cuda.manual_seed(0)
        torch.backends.cuda.matmul.allow_tf32 = False
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, f"{env.slug}_{env.date}{'_quick' if args.quick else ''}.csv")
    sink = Sink(path, env)
    bench = Bencher(env)
    print(f"device={env.name} sms={env.sm_count} l2={env.l2_bytes} mem={env.mem_bytes} torch={torch.__version__} "
          f"cuda={torch.version.cuda} driver={env.driver} gqa={_HAVE_GQA} sleep={bench.has_sleep}", flush=True)
    print(f"writing {path}", flush=True)

    names = [n.strip() for n in args.only.split(",") if n.strip()] or list(FAMILIES)
    bad = [n for n in names if n not in FAMILIES]
    if bad:
        sys.exit(f"unknown families {bad}; known: {list(FAMILIES)}")
    t_start = time.perf_counter()
    deadline = t_start + args.max_minutes * 60
    fam_times = {}
    for name in names:
        fn, secs = FAMILIES[name]
        b = Budget(secs * args.budget_scale * (0.5 if args.quick else 1.0), deadline)
        t0 = time.perf_counter()
        print(f"--- {name} (budget {b.end - b.t0:.0f} s) ---", flush=True)
        if time.perf_counter() > deadline:
            sink.emit(name, "skipped", note="skipped: run deadline (--max-minutes) reached")
            continue
        try:
            with torch.no_grad():
                fn(env, sink, bench, args, b)
        except Exception as ex:  # noqa: BLE001
            traceback.print_exc()
            sink.emit(name, "error", note=f"family aborted: {type(ex).__name__}: "
                      f"{str(ex).splitlines()[0][:200] if str(ex) else ''}")
            env.free()
        if b.skipped:
            sink.emit(name, "skipped", note=f"budget exhausted: {b.skipped} measurements skipped")
        fam_times[name] = time.perf_counter() - t0
        print(f"--- {name} done in {fam_times[name]:.1f} s ---", flush=True)
    sink.close()
    summarize(sink.rows)
    print("family seconds: " + ", ".join(f"{k}={v:.1f}" for k, v in fam_times.items()))
    print(f"total {time.perf_counter() - t_start:.1f} s; {len(sink.rows)} rows -> {path}")


if __name__ == "__main__":
    main()
