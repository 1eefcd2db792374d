#!/usr/bin/env python3
"""What a kernel costs inside a CUDA graph next to *other* kernels, on one CUDA GPU.

    python3 lab/measure_graph_chains.py --out DIR [--no-hf]
    python3 lab/measure_graph_chains.py --out /tmp/x --device cpu   # debug the script

Why: measure_regimes.py times every kernel as N copies of itself back to back in one graph. A real decode step is a
chain of different kernels: GEMMs (cuBLASLt nvjet kernels, thread-block clusters, ~200 KB of shared memory), cuDNN
attention, and many small PyTorch kernels (no shared memory). This campaign measures graphs whose nodes are
sequences of such kernels and compares each with the same kernels timed alone:

  chains       one graph per sequence (`chain`), replayed after a spin kernel (the events bracket device time only;
               measure_regimes.py time_graph); `graph_us` = median replay time over REPS replays, `nodes` = the
               kernels one replay runs (CUPTI), `prof_dur_us` = the sum of those kernels' CUPTI durations in one
               profiled replay, `prof_span_us` = first kernel start to last kernel end of that replay.
               Kernels: t0-t7 eight different small eager kernels on a [1, 4096] tensor (add, mul, neg, abs, clamp,
               up-cast copy, rsqrt, row sum: the size of an HF decode step's norm / rotary kernels at batch 1);
               gA = F.linear [1, 4096] x [4096, 4096]^T bf16 (o_proj shape), gB = [1024, 4096] (k_proj shape:
               cuBLASLt split-K + its reduce kernel), weights rotating over 8 copies (256 / 64 MiB: from HBM);
               attn = SDPA cuDNN decode, 32 heads / 8 KV heads, T 2048, K/V rotating over 8 sets.
  trace        every kernel of one profiled replay (name, start, duration; µs) of the HF Llama-3.1-8B decode step
               (B 1, T 2048: measure_regimes.py fam_hf_step's model and cache) and of a few chains: the gaps
               between consecutive kernels, by kernel pair.

  context      (--context, version 4) graphs of t0 after ONE large kernel (does one GEMM raise every later gap?),
               t0 alternating with kernels of other kinds (FlashAttention-2 and memory-efficient SDPA: no thread-block
               clusters; a 64 MiB copy: long, no shared memory; a Triton GEMM with ~128 KB of shared memory), the eager
               quantization chain next to an o_proj GEMM, and the same kernels issued eagerly with the queue
               pre-filled (`eager:*`: GPU time per call; measure.py's timing of its elementwise / GEMM rows).
  --trace-hf-all  the kernel trace of the HF step at every shape, not only B 1, T 2048.
  quant_step   (--quant-step, version 5) measure_regimes.py's eager per-token fp8 quantization (_quant_eager, 8 kernels)
               of [M, K] activations where a decode step runs it: after a GEMM that streams 32 MiB of weights (o_proj
               shape, 8 rotating copies: the L2 is swept between two quantizations, as by a step's weights). Graph A
               = n x (GEMM, quant), graph B = n x GEMM; `graph_us` of row quant_step:K<k>:M<m> = (A - B) / n, the
               quantization's in-step cost; the medians of A and B are a_us and b_us.
               With it, repeat_kv:B<b>:T<t>: transformers' repeat_kv (expand + reshape of a [B, 8, T + 16, 128]
               bf16 cache slab to 32 heads) alone, 4 calls per graph over 2 rotating slabs: its time per call at
               equal element counts (B 1 / T 65536, B 8 / T 8192, B 32 / T 2048) and at the HF step's other shapes.
  repeat_kv grid  (--repeat-kv-grid, version 6) what repeat_kv's time per element depends on (v5: 5 % apart at equal
               element counts). Rows rkv:B<b>:T<t>:kv<h>:rep<r>:hd<d>:<how>:off<o> (time per call, 4 calls per graph
               over 2 rotating source slabs): B x T at fixed B*T (65536 and 16384 token rows; T + 16 as in the HF
               step), the group size rep (2 / 4 / 8 query heads per KV head), the head dim, and `how` = hf
               (transformers' expand + reshape: a clone into a fresh block of the graph's pool) or copy (the same
               kernel, copy_ of the expanded view into a preallocated buffer at byte offset o of a larger one: does
               the physical placement of source and output matter?). `nodes` and `kernel` name what CUPTI saw.

Writes DIR/graph_chains_<device-slug>_<date>.csv and DIR/graph_trace_<device-slug>_<date>.csv. Changes no GPU
setting.
"""
from __future__ import annotations

import argparse
import csv
import datetime as _dt
import json
import os
import statistics
import sys
import tempfile
import time

import torch
import torch.nn.functional as F
from harness import device_slug, spin

SCRIPT_VERSION = 6   # 2: the HF step at six shapes after spins of 150 / 2000 / 20000 us; 3: --spin-check;
#                      4: --context (which kernels raise the gaps of a whole graph; eager vs graph) and --trace-hf-all;
#                      5: --quant-step (the eager fp8 quantization's cost inside a graph that streams weights);
#                      6: --repeat-kv-grid (what repeat_kv's time per element depends on)
REPS = 15
SPIN_CYCLES_PER_US, SPIN_US = 2000, 200.0


def _spin(cuda: bool, us: float = SPIN_US) -> None:
    spin(cuda, us, SPIN_CYCLES_PER_US)


def _sync(cuda: bool) -> None:
    if cuda:
        torch.cuda.synchronize()


def capture(cuda: bool, seq):
    """A CUDA graph of the callables in `seq`, in order (None on CPU)."""
    for f in seq[: min(len(seq), 16)]:
        f()
    _sync(cuda)
    if not cuda:
        return None
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for f in seq[: min(len(seq), 16)]:
            f()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for f in seq:
            f()
    g.replay()
    _sync(cuda)
    return g


def replay_us(cuda: bool, g, seq, spin: float = SPIN_US, eager: bool = False) -> list[float]:
    """REPS timed replays of graph `g` (or, eager=True, of the calls in `seq` issued one by one), each after a spin
    of `spin` us; device time in us (wall clock on the CPU)."""
    xs = []
    for _ in range(REPS):
        if not cuda:
            t0 = time.perf_counter()
            for f in seq:
                f()
            xs.append((time.perf_counter() - t0) * 1e6)
            continue
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        _spin(cuda, spin)
        a.record()
        if eager:
            for f in seq:
                f()
        else:
            g.replay()
        b.record()
        b.synchronize()
        xs.append(a.elapsed_time(b) * 1000.0)
    return xs


def quantiles(xs: list[float]) -> dict:
    """graph_us (median), p20_us, p80_us of replay times."""
    s = sorted(xs)
    return dict(graph_us=statistics.median(xs), p20_us=s[len(s) // 5], p80_us=s[(4 * len(s)) // 5])


def profile_kernels(cuda: bool, g) -> list[tuple[str, float, float]]:
    """(name, start us, duration us) of every kernel of one graph replay, from CUPTI (torch.profiler's trace)."""
    if not cuda:
        return []
    from torch.profiler import ProfilerActivity, profile
    g.replay()
    _sync(cuda)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        _spin(cuda, 50.0)
        g.replay()
        _sync(cuda)
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    prof.export_chrome_trace(path)
    with open(path) as f:
        ev = json.load(f).get("traceEvents", [])
    os.remove(path)
    ks = [(e["name"], float(e["ts"]), float(e["dur"])) for e in ev
          if e.get("cat") == "kernel" and not any(x in e.get("name", "").lower() for x in ("sleep", "spin_kernel"))]
    return sorted(ks, key=lambda k: k[1])


def short(name: str) -> str:
    n = name.replace("void ", "")
    for key in ("nvjet", "splitKreduce", "cudnn", "lean_reduction", "reduce_kernel", "CatArrayBatchedCopy",
                "index_elementwise", "elementwise_kernel_with_index"):
        if key in n:
            return n.split("(")[0][:90]
    if "Functor" in n or "functor" in n.lower():
        for part in n.split("at::native::")[1:]:
            if "Functor" in part or "kernel_cuda" in part or "_kernel" in part:
                return ("ew:" + part.split("<")[0].split("(")[0])[:90]
    return n.split("(")[0][:90]


class Setup:
    def __init__(self, dev: str):
        self.cuda = dev == "cuda"
        d, bf = dev, torch.bfloat16
        torch.manual_seed(0)
        H = 4096 if self.cuda else 256
        self.H = H
        x = torch.randn(1, H, device=d, dtype=bf)
        xf = torch.randn(1, H, device=d, dtype=torch.float32).abs() + 0.1
        o = [torch.empty(1, H, device=d, dtype=bf) for _ in range(6)]
        of = [torch.empty(1, H, device=d, dtype=torch.float32) for _ in range(2)]
        os_ = torch.empty(1, device=d, dtype=torch.float32)
        self.x = x
        self.tiny = [
            lambda: torch.add(x, 1, out=o[0]),
            lambda: torch.mul(x, 2, out=o[1]),
            lambda: torch.neg(x, out=o[2]),
            lambda: torch.abs(x, out=o[3]),
            lambda: torch.clamp(x, -1, 1, out=o[4]),
            lambda: of[0].copy_(x),
            lambda: torch.rsqrt(xf, out=of[1]),
            lambda: torch.sum(xf, dim=-1, out=os_),
        ]
        self.inplace = lambda: x.add_(0)
        nrot = 8 if self.cuda else 2
        N2 = 1024 if self.cuda else 64
        self.WA = [torch.randn(H, H, device=d, dtype=bf) * 0.02 for _ in range(nrot)]
        self.WB = [torch.randn(N2, H, device=d, dtype=bf) * 0.02 for _ in range(nrot)]
        self.ia = 0
        self.ib = 0
        T = 2048 if self.cuda else 64
        Hq, Hkv, D = (32, 8, 128) if self.cuda else (4, 2, 32)
        self.q = torch.randn(1, Hq, 1, D, device=d, dtype=bf)
        self.kv = [(torch.randn(1, Hkv, T, D, device=d, dtype=bf), torch.randn(1, Hkv, T, D, device=d, dtype=bf))
                   for _ in range(nrot)]
        self.ik = 0
        self.nrot = nrot
        big = (32 << 20) if self.cuda else (1 << 16)      # 64 MiB of bf16 (from HBM: no L2 reuse)
        bsrc, bdst = torch.randn(big, device=d, dtype=bf), torch.empty(big, device=d, dtype=bf)
        self.bigcopy = lambda: bdst.copy_(bsrc)

        def quant():   # measure_regimes.py _quant_eager on [1, H]: 8 kernels
            sc = x.abs().amax(-1, keepdim=True).float().clamp(min=1e-12).div(448.0)
            y = (x / sc).clamp(-448.0, 448.0)
            return y.to(torch.float8_e4m3fn) if hasattr(torch, "float8_e4m3fn") else y
        self.quant = quant

    def gA(self):
        self.ia = (self.ia + 1) % self.nrot
        w = self.WA[self.ia]
        return lambda: F.linear(self.x, w)

    def gB(self):
        self.ib = (self.ib + 1) % self.nrot
        w = self.WB[self.ib]
        return lambda: F.linear(self.x, w)

    def attn(self, backend: str = "cudnn"):
        """SDPA decode over the next K/V set: cuDNN (GQA native), or FlashAttention-2 / memory-efficient (K/V
        expanded to the query heads once, outside the graph: those backends take no enable_gqa here)."""
        self.ik = (self.ik + 1) % self.nrot
        k, v = self.kv[self.ik]
        q = self.q
        if backend != "cudnn":
            r = q.shape[1] // k.shape[1]
            k, v = k.repeat_interleave(r, 1).contiguous(), v.repeat_interleave(r, 1).contiguous()

        def f():
            try:
                from torch.nn.attention import SDPBackend, sdpa_kernel
                be = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION,
                      "efficient": SDPBackend.EFFICIENT_ATTENTION}[backend]
                with sdpa_kernel(be):
                    return F.scaled_dot_product_attention(q, k, v, enable_gqa=backend == "cudnn")
            except Exception:  # noqa: BLE001  (CPU / no cuDNN: the math backend)
                return F.scaled_dot_product_attention(q, k.repeat_interleave(q.shape[1] // k.shape[1], 1),
                                                      v.repeat_interleave(q.shape[1] // v.shape[1], 1))
        return f


def chains(s: Setup) -> dict[str, list]:
    """chain name -> the sequence of callables one graph runs."""
    t = s.tiny
    out = {}
    for i in range(len(t)):
        out[f"same:t{i}"] = [t[i]] * 128
    out["same:inplace"] = [s.inplace] * 128
    out["cycle:t0-t7"] = t * 16
    out["alt:t0,t1"] = [t[0], t[1]] * 64
    out["same:gA"] = [s.gA() for _ in range(48)]
    out["same:gB"] = [s.gB() for _ in range(48)]
    out["same:attn"] = [s.attn() for _ in range(48)]
    out["alt:gA,t0"] = [f for _ in range(48) for f in (s.gA(), t[0])]
    out["alt:gA,t0-t3"] = [f for _ in range(32) for f in (s.gA(), t[0], t[1], t[2], t[3])]
    out["alt:gA,t0-t7"] = [f for _ in range(24) for f in (s.gA(), *t)]
    out["alt:gA,gB"] = [f for _ in range(32) for f in (s.gA(), s.gB())]
    out["alt:gB,t0"] = [f for _ in range(48) for f in (s.gB(), t[0])]
    out["alt:attn,t0"] = [f for _ in range(48) for f in (s.attn(), t[0])]
    out["alt:attn,gA"] = [f for _ in range(32) for f in (s.attn(), s.gA())]
    quant = s.quant
    out["chain:quant_eager"] = [quant] * 16
    out["chain:quant_eager_x32"] = [quant] * 32
    out["chain:quant_eager_x128"] = [quant] * 128
    out["alt:gA,attn,t0-t3"] = [f for _ in range(24) for f in (s.gA(), s.attn(), t[0], t[1], t[2], t[3])]
    return out


def _triton_mm():
    """A Triton bf16 GEMM [1024, 1024] x [1024, 1024] with 128 x 128 x 64 tiles over 4 stages (~128 KB of shared
    memory per CTA, no clusters), or None where Triton is missing."""
    try:
        import triton
        import triton.language as tl
    except Exception:  # noqa: BLE001
        return None

    @triton.jit
    def mm(a, b, c, K: tl.constexpr, N: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        pm, pn = tl.program_id(0), tl.program_id(1)
        rm = pm * BM + tl.arange(0, BM)
        rn = pn * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            x = tl.load(a + rm[:, None] * K + (k + rk)[None, :])
            y = tl.load(b + (k + rk)[:, None] * N + rn[None, :])
            acc += tl.dot(x, y)
        tl.store(c + rm[:, None] * N + rn[None, :], acc.to(tl.bfloat16))

    n = 1024
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
    return lambda: mm[(n // 128, n // 128)](a, b, c, n, n, 128, 128, 64, num_stages=4, num_warps=8)


def context_chains(s: Setup) -> dict[str, list]:
    """(version 4) which kernels raise the gaps of a whole graph: t0 after one large kernel, t0 next to kernels of
    other kinds, and the eager quantization chain next to a GEMM."""
    t0 = s.tiny[0]
    out = {"first:gA,t0x127": [s.gA()] + [t0] * 127, "first:attn,t0x127": [s.attn()] + [t0] * 127,
           "alt:fa2,t0": [f for _ in range(48) for f in (s.attn("flash"), t0)],
           "alt:memeff,t0": [f for _ in range(48) for f in (s.attn("efficient"), t0)],
           "alt:bigcopy,t0": [f for _ in range(48) for f in (s.bigcopy, t0)],
           "alt:gA,quant": [f for _ in range(16) for f in (s.gA(), s.quant)]}
    mm = _triton_mm() if s.cuda else None
    if mm is not None:
        out["alt:tri_mm,t0"] = [f for _ in range(48) for f in (mm, t0)]
        out["same:tri_mm"] = [mm] * 48
    out["same:bigcopy"] = [s.bigcopy] * 48
    out["same:fa2"] = [s.attn("flash") for _ in range(48)]
    out["same:memeff"] = [s.attn("efficient") for _ in range(48)]
    return out


def eager_rows(s: Setup, meta: dict) -> list[dict]:
    """(version 4) the same kernels issued eagerly after a spin long enough for the host to enqueue them all (the GPU
    runs them back to back: measure.py's timing of its single-kernel rows): GPU time per call."""
    seqs = {"eager:t0": [s.tiny[0]] * 128, "eager:cycle:t0-t7": s.tiny * 16, "eager:gA": [s.gA() for _ in range(48)],
            "eager:alt:gA,t0": [f for _ in range(48) for f in (s.gA(), s.tiny[0])],
            "eager:chain:quant_eager": [s.quant] * 16}
    rows = []
    for name, seq in seqs.items():
        for f in seq[:16]:
            f()
        _sync(s.cuda)
        xs = replay_us(s.cuda, None, seq, spin=5000.0, eager=True)
        rows.append(dict(meta, chain=name, calls=len(seq), **quantiles(xs)))
        print(f"{name:24s} calls {len(seq):4d} eager {statistics.median(xs):9.2f} us", flush=True)
    return rows


QUANT_STEP_SHAPES = tuple((k, m) for k in (4096, 8192) for m in (1, 4, 16, 64, 128, 256, 512, 1024, 2048, 4096))


def quant_step_rows(s: Setup, meta: dict) -> list[dict]:
    """(version 5) the eager quantization's in-step cost per [M, K] (module docstring, quant_step)."""
    dev = "cuda" if s.cuda else "cpu"
    shapes = QUANT_STEP_SHAPES if s.cuda else ((256, 1), (256, 64))
    rows = []
    for K, M in shapes:
        xs = [torch.randn(M, K, device=dev, dtype=torch.bfloat16) for _ in range(4)]

        def q(i):
            x = xs[i % 4]

            def f():
                sc = x.abs().amax(-1, keepdim=True).float().clamp(min=1e-12).div(448.0)
                y = (x / sc).clamp(-448.0, 448.0)
                return y.to(torch.float8_e4m3fn) if hasattr(torch, "float8_e4m3fn") else y
            return f
        n = 16 if M * K <= (1 << 20) else (8 if M * K <= (1 << 23) else 4)
        gemms = [s.gA() for _ in range(n)]
        seq_a = [f for i in range(n) for f in (gemms[i], q(i))]
        ga, gb = capture(s.cuda, seq_a), capture(s.cuda, gemms)
        a = statistics.median(replay_us(s.cuda, ga, seq_a, 3000.0))
        b = statistics.median(replay_us(s.cuda, gb, gemms, 3000.0))
        rows.append(dict(meta, chain=f"quant_step:K{K}:M{M}", calls=n, graph_us=(a - b) / n, a_us=a, b_us=b))
        print(f"quant_step K {K:5d} M {M:5d}: n {n:2d}  A {a:9.2f}  B {b:9.2f}  in-step quant {(a - b) / n:8.3f} us",
              flush=True)
        del ga, gb, xs
    return rows


REPEAT_KV_SHAPES = ((1, 65536), (8, 8192), (32, 2048), (8, 2048), (1, 8192), (1, 2048))


def repeat_kv_rows(s: Setup, meta: dict) -> list[dict]:
    """(version 5) transformers' repeat_kv alone at the HF step's shapes (module docstring, quant_step)."""
    dev = "cuda" if s.cuda else "cpu"
    shapes = REPEAT_KV_SHAPES if s.cuda else ((1, 64), (2, 32))
    rows = []
    for B, T in shapes:
        srcs = [torch.randn(B, 8, T + 16, 128, device=dev, dtype=torch.bfloat16) for _ in range(2)]

        def rk(x):
            b, h, t, d = x.shape
            return lambda: x[:, :, None, :, :].expand(b, h, 4, t, d).reshape(b, h * 4, t, d)
        seq = [rk(srcs[i % 2]) for i in range(4)]
        g = capture(s.cuda, seq)
        xs = replay_us(s.cuda, g, seq, 3000.0)
        rows.append(dict(meta, chain=f"repeat_kv:B{B}:T{T}", calls=4, **{k: v / 4 for k, v in quantiles(xs).items()}))
        print(f"repeat_kv B {B:3d} T {T:6d}: {rows[-1]['graph_us']:9.2f} us per call", flush=True)
        del g, srcs
        if s.cuda:
            torch.cuda.empty_cache()
    return rows


#: (B, T) at 65536 and 16384 token rows (B * T), then the HF step's other shapes' neighbours
RKV_BT = tuple((b, 65536 // b) for b in (1, 2, 4, 8, 16, 32, 64, 128)) + tuple((b, 16384 // b) for b in (1, 2, 4, 8, 16,
                                                                                                   32, 64))
#: (B, T, kv, rep, hd): group size and head dim at three shapes of 268 M output elements (rep 4, hd 128)
RKV_VARIANTS = tuple((b, t, kv, rep, hd) for (b, t) in ((1, 65536), (8, 8192), (32, 2048))
                     for (kv, rep, hd) in ((16, 2, 128), (4, 8, 128), (8, 4, 64), (8, 4, 256)))
#: byte offsets (source, output) of the preallocated buffers: 0, one 64 KiB granule, half a 2 MiB page, a page + 4 KiB
RKV_OFFSETS = ((0, 0), (65536, 65536), (1 << 20, 0), (0, 1 << 20), ((2 << 20) + 4096, (2 << 20) + 4096))


def _rkv_case(s: Setup, meta: dict, B: int, T: int, kv: int, rep: int, hd: int, how: str, off=(0, 0)) -> dict:
    """One rkv row (module docstring, repeat_kv grid): 4 calls per graph over 2 source slabs."""
    dev = "cuda" if s.cuda else "cpu"
    t = T + 16
    n_src, n_out = B * kv * t * hd, B * kv * rep * t * hd
    bf = torch.bfloat16
    pad_s, pad_o = off[0] // 2, off[1] // 2
    bufs = [torch.randn(pad_s + n_src, device=dev, dtype=bf) for _ in range(2)]
    srcs = [b_[pad_s:].view(B, kv, t, hd) for b_ in bufs]
    outb = [torch.empty(pad_o + n_out, device=dev, dtype=bf) for _ in range(2)] if how == "copy" else []
    outs = [o_[pad_o:].view(B, kv, rep, t, hd) for o_ in outb]

    def call(i):
        x = srcs[i % 2]
        if how == "hf":
            return lambda: x[:, :, None, :, :].expand(B, kv, rep, t, hd).reshape(B, kv * rep, t, hd)
        o = outs[i % 2]
        return lambda: o.copy_(x[:, :, None, :, :].expand(B, kv, rep, t, hd))
    seq = [call(i) for i in range(4)]
    g = capture(s.cuda, seq)
    xs = replay_us(s.cuda, g, seq, 3000.0)
    ks = profile_kernels(s.cuda, g)
    row = dict(meta, chain=f"rkv:B{B}:T{T}:kv{kv}:rep{rep}:hd{hd}:{how}:off{off[0]}-{off[1]}", calls=4, nodes=len(ks),
               kernel=short(ks[0][0]) if ks else "", prof_dur_us=sum(k[2] for k in ks) / 4 if ks else float("nan"),
               elements=n_out, **{k: v / 4 for k, v in quantiles(xs).items()})
    print(f"{row['chain']:52s} {row['graph_us']:9.2f} us per call  {row['graph_us'] * 1e6 / n_out:7.4f} ps/element  "
          f"nodes {len(ks)}", flush=True)
    del g, bufs, srcs, outb, outs
    if s.cuda:
        torch.cuda.empty_cache()
    return row


def repeat_kv_grid_rows(s: Setup, meta: dict) -> list[dict]:
    """(version 6) the repeat_kv grid (module docstring)."""
    if not s.cuda:
        return [_rkv_case(s, meta, 2, 32, 2, 4, 16, how) for how in ("hf", "copy")]
    rows = [_rkv_case(s, meta, B, T, 8, 4, 128, "hf") for B, T in RKV_BT]
    rows += [_rkv_case(s, meta, B, T, kv, rep, hd, "hf") for B, T, kv, rep, hd in RKV_VARIANTS]
    for B, T in ((8, 8192), (32, 2048), (1, 65536)):
        rows += [_rkv_case(s, meta, B, T, 8, 4, 128, "copy", off) for off in RKV_OFFSETS]
    # repeatability: the first shapes again, last
    rows += [_rkv_case(s, meta, B, T, 8, 4, 128, "hf") for B, T in RKV_BT[:4]]
    return rows


TRACED_CONTEXT = ("first:gA,t0x127", "first:attn,t0x127", "alt:fa2,t0", "alt:memeff,t0", "alt:bigcopy,t0",
                  "alt:gA,quant", "alt:tri_mm,t0")
TRACED = ("chain:quant_eager", "same:t0", "cycle:t0-t7", "same:gA", "alt:gA,t0", "alt:gA,t0-t3", "same:gB", "alt:gB,t0", "alt:attn,t0")


HF_SHAPES = ((1, 512), (1, 2048), (1, 8192), (8, 2048), (8, 8192), (32, 2048))   # measure_regimes.py fam_hf_step
#: spins (us) before the timed replay: measure_regimes.py v4 used 150 us; a graph of ~1,800 nodes may take the host
#: longer than that to launch, and the start event then waits for the launch (host time leaks into the sample)
HF_SPINS = (150.0, 2000.0, 20000.0)


def hf_model(cuda: bool):
    """measure_regimes.py fam_hf_step's model (a smaller config on CPU): (model, config)."""
    from transformers import LlamaConfig, LlamaForCausalLM
    if cuda:
        cfg = LlamaConfig(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                          num_key_value_heads=8, head_dim=128, vocab_size=128256, max_position_embeddings=131072,
                          rope_theta=500000.0, rms_norm_eps=1e-5, tie_word_embeddings=False)
    else:
        cfg = LlamaConfig(hidden_size=256, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
                          num_key_value_heads=2, head_dim=64, vocab_size=1000, max_position_embeddings=4096)
    dev = "cuda" if cuda else "cpu"
    torch.manual_seed(0)
    with torch.device(dev):
        model = LlamaForCausalLM(cfg).to(torch.bfloat16)
    model.eval()
    if hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation("sdpa")
    return model, cfg


def hf_step(cuda: bool, model, cfg, B: int, T: int):
    """One decode step of `model` over a StaticCache of T random tokens (fam_hf_step's), B sequences."""
    from transformers import StaticCache
    dev = "cuda" if cuda else "cpu"
    cache = StaticCache(config=cfg, max_cache_len=T + 16)
    ids = torch.randint(0, cfg.vocab_size, (B, 1), device=dev)
    pos = torch.tensor([T], device=dev)
    with torch.no_grad():
        model(input_ids=ids, past_key_values=cache, cache_position=pos, use_cache=True)
        for lay in cache.layers:
            lay.keys.normal_()
            lay.values.normal_()

    def step():
        with torch.no_grad():
            return model(input_ids=ids, past_key_values=cache, cache_position=pos, use_cache=True)
    return step, cache


def hf_rows(cuda: bool, meta: dict, trace: list, trace_all: bool = False) -> list[dict]:
    """The HF step at HF_SHAPES: graph replay time after each spin of HF_SPINS, the host's time in g.replay(), and
    one profiled replay (CUPTI kernel durations and first-start-to-last-end span; the kernel trace at B 1, T 2048)."""
    model, cfg = hf_model(cuda)
    shapes = HF_SHAPES if cuda else ((1, 64), (2, 128))
    rows = []
    for B, T in shapes:
        label = f"hf_llama8b_B{B}_T{T}"
        step, cache = hf_step(cuda, model, cfg, B, T)
        g = capture(cuda, [step])
        if cuda:
            host = []
            for _ in range(5):
                torch.cuda.synchronize()
                _spin(cuda, 50000.0)
                t0 = time.perf_counter()
                g.replay()
                host.append((time.perf_counter() - t0) * 1e6)
                torch.cuda.synchronize()
            for spin in HF_SPINS:
                xs = replay_us(cuda, g, [step], spin)
                rows.append(dict(meta, chain=f"{label}:spin{int(spin)}", calls=1, **quantiles(xs),
                                 host_launch_us=statistics.median(host)))
                print(f"{label} spin {spin:7.0f} us: graph {statistics.median(xs):9.1f} us (p20 {rows[-1]['p20_us']:.1f}"
                      f", p80 {rows[-1]['p80_us']:.1f}); host in g.replay() {statistics.median(host):.1f} us", flush=True)
        else:
            xs = replay_us(cuda, g, [step])
            rows.append(dict(meta, chain=f"{label}:cpu", calls=1, graph_us=statistics.median(xs)))
        ks = profile_kernels(cuda, g)
        span = (ks[-1][1] + ks[-1][2] - ks[0][1]) if ks else float("nan")
        rows.append(dict(meta, chain=f"{label}:profiled", calls=1, nodes=len(ks), prof_dur_us=sum(k[2] for k in ks),
                         prof_span_us=span))
        print(f"{label}: {len(ks)} kernels, CUPTI duration sum {rows[-1]['prof_dur_us']:.1f} us, span {span:.1f} us",
              flush=True)
        if trace_all or (B, T) == (1, 2048):
            trace += [dict(meta, graph=label, i=i, kernel=short(n), ts_us=ts, dur_us=du)
                      for i, (n, ts, du) in enumerate(ks)]
        del g, cache, step
        if cuda:
            torch.cuda.empty_cache()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--no-hf", action="store_true")
    ap.add_argument("--only-hf", action="store_true", help="skip the chains (script version 2: the HF step alone)")
    ap.add_argument("--spin-check", action="store_true",
                    help="(version 3) a few chains of 128-1024 nodes replayed after spins of 150 / 2000 / 20000 us")
    ap.add_argument("--context", action="store_true",
                    help="(version 4) only the context chains and the eager timings (no HF step unless --trace-hf-all)")
    ap.add_argument("--trace-hf-all", action="store_true", help="(version 4) trace the HF step at every shape")
    ap.add_argument("--quant-step", action="store_true", help="(version 5) only the quant_step rows")
    ap.add_argument("--repeat-kv-grid", action="store_true", help="(version 6) only the repeat_kv grid")
    args = ap.parse_args()
    cuda = args.device == "cuda"
    os.makedirs(args.out, exist_ok=True)
    name = torch.cuda.get_device_name() if cuda else "cpu"
    slug = device_slug(name)
    date = _dt.date.today().isoformat()
    meta = dict(device=name, torch_version=torch.__version__, date=date, script_version=SCRIPT_VERSION)
    cpath = os.path.join(args.out, f"graph_chains_{slug}_{date}.csv")
    tpath = os.path.join(args.out, f"graph_trace_{slug}_{date}.csv")
    s = Setup(args.device)
    rows, trace = [], []
    SPIN_CHECK = ("same:t0", "cycle:t0-t7", "alt:gA,t0-t3", "chain:quant_eager", "chain:quant_eager_x32",
                  "chain:quant_eager_x128")
    if args.spin_check:
        for chain, seq in chains(s).items():
            if chain not in SPIN_CHECK:
                continue
            g = capture(cuda, seq)
            for spin in HF_SPINS:
                xs = replay_us(cuda, g, seq, spin)
                rows.append(dict(meta, chain=f"{chain}:spin{int(spin)}", calls=len(seq), **quantiles(xs)))
                print(f"{chain:24s} spin {spin:7.0f}: graph {statistics.median(xs):9.2f} us", flush=True)
            del g
    only = args.only_hf or args.spin_check or args.quant_step or args.repeat_kv_grid
    todo = {} if only else (context_chains(s) if args.context else chains(s))
    for chain, seq in todo.items():
        g = capture(cuda, seq)
        # version 4: the context chains after a 2-ms spin (v1's 200 us let the host's launch of GEMM nodes leak in)
        xs = replay_us(cuda, g, seq, 2000.0 if args.context else SPIN_US)
        ks = profile_kernels(cuda, g)
        span = (ks[-1][1] + ks[-1][2] - ks[0][1]) if ks else float("nan")
        rows.append(dict(meta, chain=chain, calls=len(seq), nodes=len(ks), **quantiles(xs),
                         prof_dur_us=sum(k[2] for k in ks), prof_span_us=span))
        if chain in TRACED or chain in TRACED_CONTEXT:
            trace += [dict(meta, graph=chain, i=i, kernel=short(n), ts_us=ts, dur_us=du) for i, (n, ts, du) in
                      enumerate(ks)]
        print(f"{chain:22s} calls {len(seq):4d} nodes {len(ks):4d} graph {statistics.median(xs):9.2f} us  "
              f"per node {statistics.median(xs) / max(len(ks), 1):6.3f}  CUPTI dur sum {rows[-1]['prof_dur_us']:9.2f}",
              flush=True)
        del g
    if args.context:
        rows += eager_rows(s, meta)
    if args.quant_step:
        rows += quant_step_rows(s, meta) + repeat_kv_rows(s, meta)
    if args.repeat_kv_grid:
        rows += repeat_kv_grid_rows(s, meta)
    if not args.no_hf and not args.quant_step and not args.repeat_kv_grid and (args.trace_hf_all or not args.context):
        try:
            rows += hf_rows(cuda, meta, trace, args.trace_hf_all)
        except Exception as ex:  # noqa: BLE001
            print(f"hf step failed: {type(ex).__name__}: {ex}", file=sys.stderr)
    cols = ["device", "torch_version", "date", "script_version", "chain", "calls", "nodes", "graph_us", "p20_us",
            "p80_us", "prof_dur_us", "prof_span_us", "host_launch_us", "a_us", "b_us", "elements", "kernel"]
    with open(cpath, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.3f}" if isinstance(v, float) else v) for k, v in r.items()})
    with open(tpath, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["device", "date", "script_version", "graph", "i", "kernel", "ts_us",
                                          "dur_us"], extrasaction="ignore")
        w.writeheader()
        for r in trace:
            w.writerow({k: (f"{v:.3f}" if isinstance(v, float) else v) for k, v in r.items()})
    print(f"wrote {cpath} ({len(rows)} rows) and {tpath} ({len(trace)} kernels)")


if __name__ == "__main__":
    main()
