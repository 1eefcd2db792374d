#!/usr/bin/env python3
"""Measurement campaign: kernels outside the bandwidth regime, on one CUDA GPU.

    python3 lab/measure_regimes.py --out DIR [--only a,b] [--max-minutes 8.5]
    python3 lab/measure_regimes.py --out /tmp/x --device cpu --smoke   # debug the script

Writes DIR/regimes_<device-slug>_<date>.csv (one row per measurement) and, for the Hugging Face step, a
kernel profile DIR/regimes_hf_profile_<device-slug>_<date>.csv. It changes no GPU setting.

Families (`family` column; `kernel` names the implementation):
  decode_attn  one query row per sequence, K/V [B, Hkv, T, 128] bf16, over four corners (`corner`): short
               contexts (T 16-512, any batch), large batch x heads, few heads over long contexts (1-2 KV
               heads, T up to 1M), and the bandwidth-bound middle. Kernels: SDPA's cuDNN, FlashAttention-2
               (flash) and memory-efficient (efficient) backends with enable_gqa, FlexAttention (flex,
               torch.compile'd, a few shapes), and our Triton split-KV kernel (triton_splitkv) that splits
               the KV range with FlashAttention-2's heuristic (flash_api.cpp num_splits_heuristic, restated
               in `fa2_num_splits`; the split count used is in the `splits` column).
  verify_attn  q_rows 2-16 query rows per sequence over the whole cache (speculative verification), SDPA
               cuDNN / flash and triton_splitkv (the rows x group packed into one tile per KV head).
  fp8kv_attn   triton_splitkv reading K/V stored as float8_e4m3fn with a per-tensor scale (dequantized in
               the kernel) vs the same kernel on bf16, and the eager path: dequantize the whole cache to
               bf16 (one cast kernel per tensor) then SDPA cuDNN.
  gemm         x[M,K] @ W[K,N]: bf16 torch.matmul; fp8 torch._scaled_mm with a per-tensor scale
               (activation already fp8) and with per-token x per-channel (rowwise) scales; the per-token
               activation quantization as eager PyTorch (several kernels) and as one Triton kernel; and the
               whole path quantize + rowwise scaled_mm. Also `timing=cold` rows: one eager call after an L2
               flush, timed alone (host launch latency included).
  topk         torch.topk(sorted=True) over fp32 rows: 1-512 rows x 4K-1M columns, k 256 / 2048.
  indexer      a DSA-lightning-indexer-like Triton kernel at few query rows: logits[r, t] = sum_h w[r, h] *
               relu(q[r, h] . k[t]) over N keys (one key head, fp8 or bf16, d 128), heads 16/32/64, one program
               per (row, 64 keys): rows x N/64 programs, low parallelism at one row and short N.
  elementwise  Hugging Face transformers' LlamaRMSNorm and apply_rotary_pos_emb written as in
               modeling_llama (several eager kernels each) vs F.rms_norm, at decode shapes; `n_kernels` is
               the kernel count torch.profiler saw for one call.
  hf_step      transformers' LlamaForCausalLM with Llama-3.1-8B's config and random bf16 weights, SDPA
               attention, a StaticCache of T tokens (random K/V), one decode token per sequence: CUDA-graph
               replay (timing=graph) and one eager forward (timing=eager); a torch.profiler kernel list of
               one graph-free step goes to the profile CSV.
  launch, copy the graph gap of a 1-kernel node and the copy bandwidth of this GPU (reference).
  split_sweep  (v3) our Triton split-KV kernel with the split count forced to 1-64 at one query row, and
               `combine`: its combine kernel alone (B x Hq programs merging S fp32 partials): a split's cost.
  ew_kernel    (v3) single eager kernels on [M, 4096], M 1-32768: contiguous products, dtype casts (bf16 <-> fp32,
               fp8 <-> bf16, fp32 -> fp8), broadcast products (row scale, weight), row reductions, rotate_half's
               strided neg and cat, HF's repeat_kv expand copy.
  grids        (v3) one recorded call (torch.profiler / CUPTI) per shape of the decode backends, fp8 GEMMs (the
               CUTLASS rowwise tile is in the kernel name), eager quantization, fp8-KV dequantization and the HF
               modules: kernel names, durations, launch grids, registers, shared memory -> regimes_grids_*.csv.
Version 3 fixed the K / V input rotation (see SCRIPT_VERSION): v2's attention rows of 16-270 MB read part of
their K / V from L2; the short corner is measured in SHORT_PASSES passes (`pass` column).

Timing (`timing` column): `graph` = N calls captured back to back in one CUDA graph (rotating among input
sets carved from one large random pool, so K/V and weights are not L2-resident between calls when they are
larger than a few MiB), replayed; median over replays of (replay time / N): the kernel's device time plus
the graph's gap between nodes, what sparsesim's `launch: graph` prices. `cold` = one eager call after a
2 x L2 write (L2 flushed), events around the call: launch latency + device time of a lone call. `eager` =
one forward with events around it after a synchronize (host-bound pieces included). All inputs random
(never zeros). CPU (--device cpu): wall-clock timing, tiny shapes; numbers meaningless (script debugging).
Triton / FlexAttention / fp8 pieces are optional: a failure there writes a note row and the rest goes on.
"""
from __future__ import annotations

import argparse
import csv
import math
import os
import sys
import time
import traceback
import warnings

import harness
import torch
import torch.nn.functional as F
from harness import capture_graph, cupti_durations, replay_us, stats, time_cold, time_graph

SCRIPT_VERSION = 4
# 2: fp8kv_attn uses as many input sets as both K and V have (v1: IndexError)
# 3: K and V input sets never share memory (v2 handed V views of the same pool prefix as K: on some calls V was
#    K's own memory, read from L2 right after K, and call i's V was call i + 1's K, L2-hot when a set fits in L2;
#    so v2's attention rows of 16-270 MB K/V read part of their bytes from L2, up to 3.7 "TB/s"); a (K, V) rotation
#    spans KV_ROTATION_BYTES; the short corner is measured in SHORT_PASSES passes (column `pass`); new families
#    split_sweep, combine, ew_kernel and the launch-grid profile (a second CSV, regimes_grids_*.csv)
# 4: graph timing with a spin kernel before every timed replay and the call count from a first replay (time_graph:
#    v1-v3 samples included the host's graph launch, ~7-12 us per replay over 2-16 calls); new families l2_bw,
#    reduce_grid, gemm_small (+ their launch grids), the graph-replay overhead and the in-graph gap (reference)
COLUMNS = ["device", "sm_count", "l2_bytes", "torch_version", "triton_version", "transformers_version",
           "driver_version", "date", "script_version", "family", "corner", "kernel", "timing", "dtype",
           "batch", "heads", "kv_heads", "head_dim", "context", "q_rows", "m", "n", "k", "rows", "row_len",
           "topk_k", "splits", "n_kernels", "calls", "bytes_moved", "flops", "median_us", "p20_us", "p80_us",
           "repeats", "pass", "note"]
MiB, GiB = 1 << 20, 1 << 30

try:
    import triton
    import triton.language as tl
    HAVE_TRITON = True
except Exception:  # noqa: BLE001 - optional
    HAVE_TRITON = False


# ----------------------------------------------------------------------------------------------------
# environment, output, timing
# ----------------------------------------------------------------------------------------------------
class Env(harness.Env):
    """lab/harness.py's Env with this campaign's deadlines: the run's (--max-minutes) and the running family's."""

    family_deadline = float("inf")

    def __init__(self, device: str, smoke: bool, deadline: float):
        super().__init__(device, smoke=smoke)
        self.deadline = deadline

    def late(self) -> bool:
        return time.time() > min(self.deadline, self.family_deadline)


class Sink(harness.Sink):
    """The campaign's CSV (COLUMNS), one row per measurement."""

    def __init__(self, path: str, env: Env):
        super().__init__(path, COLUMNS, SCRIPT_VERSION, env.facts(COLUMNS))

    def emit(self, family, kernel, t=None, note="", **shape):
        row = dict(family=family, kernel=kernel, note=note, **shape)
        if t is not None:
            row.update(median_us=f"{t['median']:.3f}", p20_us=f"{t['p20']:.3f}", p80_us=f"{t['p80']:.3f}",
                       repeats=t["reps"], calls=t.get("calls", 1))
        self.write(row)
        tm = f"{t['median']:10.2f} us" if t is not None else "        --"
        shp = " ".join(f"{k}={v}" for k, v in shape.items() if v not in ("", None) and k not in ("bytes_moved", "flops"))
        print(f"[{family}] {kernel:<16} {shp:<90} {tm} {note}".rstrip(), flush=True)


class Pool:
    """One large random buffer; `views(nbytes, dtype, shape)` hands out up to `n` disjoint views of it so that
    back-to-back calls read different memory (a fresh tensor when one set does not fit)."""

    def __init__(self, env: Env, nbytes: int):
        self.env, self.nbytes = env, nbytes
        self.buf = None
        self._alloc()
        self.extra = []

    def _alloc(self):
        self.buf = torch.empty(self.nbytes // 2, dtype=torch.bfloat16, device=self.env.device)
        self.buf.normal_()

    def sets(self, shape, dtype=torch.bfloat16, want: int = 16, distinct_bytes: int = 192 * MiB):
        if self.buf is None:  # freed for the HF model (fam_hf_step); families after it get it back
            self._alloc()
        numel = math.prod(shape)
        esz = torch.tensor([], dtype=dtype).element_size()
        nbytes = numel * esz
        n = int(max(1, min(want, math.ceil(distinct_bytes / max(nbytes, 1)))))
        per = (nbytes + 255) // 256 * 256
        if per * n <= self.buf.numel() * 2 and dtype in (torch.bfloat16, torch.float16):
            flat = self.buf.view(torch.uint8)
            return [flat[i * per:i * per + nbytes].view(dtype).view(shape) for i in range(n)]
        out = []
        for _ in range(min(n, 2)):
            t = torch.empty(shape, dtype=torch.float32 if dtype not in (torch.bfloat16, torch.float16) else dtype,
                            device=self.env.device)
            t.normal_()
            out.append(t.to(dtype))
        return out


def _err(ex) -> str:
    msg = str(ex).strip().splitlines()[0][:150] if str(ex).strip() else ""
    return f"{type(ex).__name__}: {msg}"


def _sdpa_ctx(name):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    be = {"cudnn": "CUDNN_ATTENTION", "flash": "FLASH_ATTENTION", "efficient": "EFFICIENT_ATTENTION",
          "math": "MATH"}[name]
    return sdpa_kernel([getattr(SDPBackend, be)])


# ----------------------------------------------------------------------------------------------------
# Triton kernels (optional)
# ----------------------------------------------------------------------------------------------------
def fa2_num_splits(batch_nheads_mblocks: int, num_sms: int, num_n_blocks: int, max_splits: int = 128) -> int:
    """FlashAttention-2's split count (Dao-AILab/flash-attention csrc/flash_attn/flash_api.cpp,
    num_splits_heuristic; set_params_splitkv passes num_SMs * 2 and block_n = 128 for head dim 128): one
    split when the (batch x heads x m-blocks) CTAs fill 80 % of the SMs; otherwise the smallest eligible
    split count whose wave efficiency n_waves / ceil(n_waves) is >= 85 % of the best."""
    if batch_nheads_mblocks >= 0.8 * num_sms:
        return 1
    max_splits = min(max_splits, num_sms, num_n_blocks)
    cd = lambda a, b: (a + b - 1) // b  # noqa: E731
    eligible = lambda s: s == 1 or cd(num_n_blocks, s) != cd(num_n_blocks, s - 1)  # noqa: E731
    eff = []
    for s in range(1, max_splits + 1):
        if not eligible(s):
            eff.append(0.0)
            continue
        w = batch_nheads_mblocks * s / num_sms
        eff.append(w / math.ceil(w))
    best = max(eff) if eff else 1.0
    for s in range(1, max_splits + 1):
        if eligible(s) and eff[s - 1] >= 0.85 * best:
            return s
    return 1


if HAVE_TRITON:
    @triton.jit
    def _splitkv_fwd(Q, K, V, O, M_out, L_out, scale, kv_scale, T, S, chunk,
                     sqb, sqh, skb, skh, skt, sob, soh, sos,
                     G: tl.constexpr, R: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     D: tl.constexpr, SPLIT: tl.constexpr, FP8: tl.constexpr, CDT: tl.constexpr):
        # one program = (batch b, KV head h, split s); its BLOCK_M rows are the R query rows x G heads of the group
        pid_bh = tl.program_id(0)
        s = tl.program_id(1)
        b = pid_bh // (skb // skh)   # skb // skh = Hkv (contiguous [B, Hkv, T, D])
        h = pid_bh % (skb // skh)
        rows = tl.arange(0, BLOCK_M)
        g = rows % G
        r = rows // G
        rmask = rows < G * R
        d = tl.arange(0, D)
        # Q layout [B, Hq, R, D] contiguous: head = h * G + g
        q_ptr = Q + b * sqb + (h * G + g)[:, None] * sqh + r[:, None] * D + d[None, :]
        q = tl.load(q_ptr, mask=rmask[:, None], other=0.0)
        q = (q.to(tl.float32) * (scale * kv_scale)).to(CDT)
        lo = s * chunk
        m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
        l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
        acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
        n = tl.arange(0, BLOCK_N)
        kbase = K + b * skb + h * skh
        vbase = V + b * skb + h * skh
        for start in range(0, chunk, BLOCK_N):   # chunk is a multiple of BLOCK_N; tokens past T are masked
            t = lo + start + n
            tmask = t < T
            k = tl.load(kbase + t[:, None] * skt + d[None, :], mask=tmask[:, None], other=0.0)
            v = tl.load(vbase + t[:, None] * skt + d[None, :], mask=tmask[:, None], other=0.0)
            if FP8:
                k = k.to(CDT)
                v = v.to(CDT)
            qk = tl.dot(q, tl.trans(k))
            qk = tl.where(tmask[None, :], qk, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(qk, 1))
            p = tl.exp(qk - m_new[:, None])
            alpha = tl.exp(m_i - m_new)
            l_i = l_i * alpha + tl.sum(p, 1)
            acc = acc * alpha[:, None] + tl.dot(p.to(CDT), v)
            m_i = m_new
        if FP8:
            acc = acc * kv_scale
        heads = h * G + g
        if SPLIT:
            o_ptr = O + b * sob + heads[:, None] * soh + s * sos + r[:, None] * D + d[None, :]
            tl.store(o_ptr, acc, mask=rmask[:, None])
            ml = (b * (sob // soh) + heads) * S * R + s * R + r   # sob // soh = Hq
            tl.store(M_out + ml, m_i, mask=rmask)
            tl.store(L_out + ml, l_i, mask=rmask)
        else:
            o_ptr = O + b * sob + heads[:, None] * soh + r[:, None] * D + d[None, :]
            tl.store(o_ptr, (acc / l_i[:, None]).to(O.dtype.element_ty), mask=rmask[:, None])

    @triton.jit
    def _splitkv_combine(Op, M_in, L_in, O, S, R, D: tl.constexpr, BLOCK_S: tl.constexpr):
        # one program per (b, head, row): merge S partial outputs by their log-sum-exp
        pid = tl.program_id(0)
        bh = pid // R
        r = pid % R
        s = tl.arange(0, BLOCK_S)
        smask = s < S
        m = tl.load(M_in + bh * S * R + s * R + r, mask=smask, other=float("-inf"))
        lsum = tl.load(L_in + bh * S * R + s * R + r, mask=smask, other=0.0)
        mmax = tl.max(m, 0)
        w = tl.where(smask, tl.exp(m - mmax), 0.0)
        denom = tl.sum(w * lsum, 0)
        d = tl.arange(0, D)
        o = tl.load(Op + bh * S * R * D + s[:, None] * R * D + r * D + d[None, :], mask=smask[:, None], other=0.0)
        out = tl.sum(o * w[:, None], 0) / denom
        tl.store(O + bh * R * D + r * D + d, out.to(O.dtype.element_ty))

    @triton.jit
    def _indexer_fwd(Q, W, K, Out, N, Hi: tl.constexpr, D: tl.constexpr, BLOCK_N: tl.constexpr, FP8: tl.constexpr):
        # one program = (query row r, BLOCK_N keys): logits[r, t] = sum_h w[r, h] * relu(q[r, h] . k[t])
        r = tl.program_id(0)
        blk = tl.program_id(1)
        h = tl.arange(0, Hi)
        d = tl.arange(0, D)
        q = tl.load(Q + r * Hi * D + h[:, None] * D + d[None, :])
        w = tl.load(W + r * Hi + h).to(tl.float32)
        t = blk * BLOCK_N + tl.arange(0, BLOCK_N)
        tmask = t < N
        k = tl.load(K + t[:, None] * D + d[None, :], mask=tmask[:, None], other=0.0)
        if FP8:
            k = k.to(tl.bfloat16)
        s = tl.dot(q, tl.trans(k))                    # [Hi, BLOCK_N]
        s = tl.maximum(s, 0.0) * w[:, None]
        tl.store(Out + r * N + t, tl.sum(s, 0), mask=tmask)

    @triton.jit
    def _quant_rowwise(X, Y, Sc, K, BLOCK: tl.constexpr):
        # per-token fp8 quantization in one kernel: amax over the row, scale = amax / 448, y = x / scale
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        amax = tl.zeros([BLOCK], dtype=tl.float32)
        for start in range(0, K, BLOCK):
            x = tl.load(X + row * K + start + offs, mask=start + offs < K, other=0.0).to(tl.float32)
            amax = tl.maximum(amax, tl.abs(x))
        sc = tl.maximum(tl.max(amax, 0), 1e-12) / 448.0
        tl.store(Sc + row, sc)
        for start in range(0, K, BLOCK):
            x = tl.load(X + row * K + start + offs, mask=start + offs < K, other=0.0).to(tl.float32)
            tl.store(Y + row * K + start + offs, (x / sc).to(tl.float8e4nv), mask=start + offs < K)


def triton_splitkv(q, k, v, num_sms, kv_scale=1.0, splits=None, block_n=64):
    """Our split-KV decode / verification attention. q [B, Hq, R, D]; k, v [B, Hkv, T, D] (bf16 or fp8).
    Splits: FlashAttention-2's heuristic over (B x Hkv) CTAs, 2 x SMs, 128-token blocks (flash_api.cpp)."""
    B, Hq, R, D = q.shape
    Hkv, T = k.shape[1], k.shape[2]
    G = Hq // Hkv
    if splits is None:
        mblocks = max(1, math.ceil(R * G / 64))
        splits = fa2_num_splits(B * Hkv * mblocks, 2 * num_sms, math.ceil(T / 128))
    chunk = math.ceil(T / splits / block_n) * block_n
    S = math.ceil(T / chunk)
    BLOCK_M = max(16, triton.next_power_of_2(G * R))
    fp8 = k.dtype not in (torch.bfloat16, torch.float32)
    cdt = tl.float32 if q.dtype == torch.float32 else tl.bfloat16   # float32: the CPU interpreter's test path
    out = torch.empty((B, Hq, R, D), dtype=q.dtype, device=q.device)
    grid = (B * Hkv, S)
    if S == 1:
        _splitkv_fwd[grid](q, k, v, out, out, out, 1.0 / math.sqrt(D), kv_scale, T, 1, chunk,
                           q.stride(0), q.stride(1), k.stride(0), k.stride(1), k.stride(2),
                           out.stride(0), out.stride(1), 0,
                           G=G, R=R, BLOCK_M=BLOCK_M, BLOCK_N=block_n, D=D, SPLIT=False, FP8=fp8, CDT=cdt,
                           num_warps=4 if BLOCK_M <= 32 else 8)
        return out, 1
    part = torch.empty((B, Hq, S, R, D), dtype=torch.float32, device=q.device)
    ms = torch.empty((B, Hq, S, R), dtype=torch.float32, device=q.device)
    ls = torch.empty_like(ms)
    _splitkv_fwd[grid](q, k, v, part, ms, ls, 1.0 / math.sqrt(D), kv_scale, T, S, chunk,
                       q.stride(0), q.stride(1), k.stride(0), k.stride(1), k.stride(2),
                       part.stride(0), part.stride(1), part.stride(2),
                       G=G, R=R, BLOCK_M=BLOCK_M, BLOCK_N=block_n, D=D, SPLIT=True, FP8=fp8, CDT=cdt,
                       num_warps=4 if BLOCK_M <= 32 else 8)
    _splitkv_combine[(B * Hq * R,)](part, ms, ls, out, S, R, D=D, BLOCK_S=max(2, triton.next_power_of_2(S)),
                                    num_warps=4)
    return out, S


def reference_attn(q, k, v, kv_scale=1.0):
    B, Hq, R, D = q.shape
    Hkv = k.shape[1]
    kk = k.float().repeat_interleave(Hq // Hkv, 1) * kv_scale
    vv = v.float().repeat_interleave(Hq // Hkv, 1) * kv_scale
    p = torch.softmax(q.float() @ kk.transpose(-1, -2) / math.sqrt(D), -1)
    return p @ vv


# ----------------------------------------------------------------------------------------------------
# attention families
# ----------------------------------------------------------------------------------------------------
D = 128
HEADS = {"32/8": (32, 8), "8/1": (8, 1), "32/32": (32, 32), "16/2": (16, 2), "64/8": (64, 8), "1/1": (1, 1)}


def decode_grid(env: Env):
    """(corner, heads key, B, T) of the decode_attn family."""
    if env.smoke:
        return [("short", "32/8", 2, 32), ("fewheads", "8/1", 1, 512), ("middle", "16/2", 1, 256)]
    g = []
    for hk in ("32/8", "16/2", "64/8"):
        for B in (1, 8, 64, 256):
            for T in (16, 64, 128, 256, 512, 1024):   # v3: + 128, 1024 (more split points)
                g.append(("short", hk, B, T))
    for hk in ("32/32", "32/8", "64/8"):
        for B in (128, 256, 512):
            for T in (512, 1024, 2048):
                g.append(("large_batch_heads", hk, B, T))
    for hk in ("8/1", "1/1", "16/2"):
        for T in (16384, 65536, 262144, 1048576):
            g.append(("fewheads", hk, 1, T))
        g.append(("fewheads", hk, 4, 65536))
    for hk in ("32/8", "64/8", "8/1"):
        for B in (1, 4, 16):
            for T in (4096, 32768):
                g.append(("middle", hk, B, T))
    return g


#: v3: bytes one rotation of (K, V) input sets spans before a set is read again: 5 x the H100's 50 MiB L2, so a set
#: larger than ~1 MiB comes from HBM on every call (smaller ones stay L2-resident: those rows are latency-bound)
KV_ROTATION_BYTES = 256 * MiB
#: v3: the short-context corner is measured this many times, in passes separated by the rest of the grid (column
#: `pass`); v2 showed isolated 7-16 us rows among ~4 us neighbours, at one shape for every kernel at once
SHORT_PASSES = 3


def _kv(env, pool, B, Hkv, T, dtype=torch.bfloat16):
    """(K sets, V sets): n disjoint pairs of [B, Hkv, T, D] views of the pool (K and V never share memory), n such
    that a rotation spans KV_ROTATION_BYTES (at most 32 pairs); two fresh tensors when they do not fit the pool."""
    shape = (B, Hkv, T, D)
    nbytes = math.prod(shape) * 2
    n = int(max(1, min(32, math.ceil(KV_ROTATION_BYTES / (2 * nbytes)))))
    sets = pool.sets(shape, want=2 * n, distinct_bytes=2 * n * nbytes)
    if len(sets) < 2:  # pragma: no cover - pool.sets returns 2n views or 2 fresh tensors
        sets = sets + [sets[0].clone()]
    return sets[0::2], sets[1::2]


def decode_schedule(env, passes: int = SHORT_PASSES):
    """(pass, corner, heads key, B, T): the whole grid once (pass 0), then the short corner again, passes - 1 times."""
    g = decode_grid(env)
    out = [(0,) + x for x in g]
    for p in range(1, passes if not env.smoke else min(passes, 2)):
        out += [(p,) + x for x in g if x[0] == "short"]
    return out


def fam_decode_attn(env, sink, pool, only_kernels=None):
    kernels = only_kernels or ["cudnn", "flash", "efficient", "triton_splitkv"]
    flex_budget = [0.0]
    for pss, corner, hk, B, T in decode_schedule(env, 1 if only_kernels == ["flex"] else SHORT_PASSES):
        if env.late():
            sink.emit("decode_attn", "skipped", note="deadline", corner=corner)
            return
        Hq, Hkv = HEADS[hk]
        kv_bytes = 2 * B * Hkv * T * D * 2
        if kv_bytes > 12 * GiB:
            continue
        ks, vs = _kv(env, pool, B, Hkv, T)
        nq = max(len(ks), 1)
        qs = [torch.randn((B, Hq, 1, D), dtype=torch.bfloat16, device=env.device) for _ in range(nq)]
        shape = dict(corner=corner, batch=B, heads=Hq, kv_heads=Hkv, head_dim=D, context=T, q_rows=1, dtype="bf16",
                     bytes_moved=kv_bytes, flops=4 * B * Hq * T * D, **{"pass": pss})
        for kern in kernels:
            try:
                if kern == "triton_splitkv":
                    if not HAVE_TRITON or not env.cuda:
                        raise RuntimeError("Triton unavailable on this device")
                    _, S = triton_splitkv(qs[0], ks[0], vs[0], env.sm_count)
                    ref = reference_attn(qs[0][:1], ks[0][:1], vs[0][:1]) if T <= 65536 and pss == 0 else None
                    if ref is not None:
                        got = triton_splitkv(qs[0][:1], ks[0][:1], vs[0][:1], env.sm_count,
                                             splits=S)[0].float()
                        rel = ((got - ref).norm() / ref.norm()).item()
                        if not rel < 2e-2:
                            raise RuntimeError(f"wrong result: rel err {rel:.3g}")
                    t = time_graph(env, lambda i: triton_splitkv(qs[i % nq], ks[i % len(ks)], vs[i % len(vs)],
                                                                 env.sm_count, splits=S))
                    sink.emit("decode_attn", kern, t, timing="graph", splits=S, **shape)
                elif kern == "flex":
                    wanted = (corner == "fewheads" or (corner == "short" and hk == "32/8" and T == 512 and B in (1, 64))
                              or (corner == "middle" and hk == "32/8" and B == 4))
                    if flex_budget[0] > 100 or not wanted:
                        continue
                    t0 = time.time()
                    from torch.nn.attention.flex_attention import flex_attention
                    fx = torch.compile(flex_attention, dynamic=False)
                    fx(qs[0], ks[0], vs[0], enable_gqa=True)
                    t = time_graph(env, lambda i: fx(qs[i % nq], ks[i % len(ks)], vs[i % len(vs)], enable_gqa=True))
                    flex_budget[0] += time.time() - t0
                    sink.emit("decode_attn", kern, t, timing="graph",
                              splits=max(1, env.sm_count // (B * Hkv) * 2), note="splits from flex_decoding get_split_k",
                              **shape)
                else:
                    note = ""
                    kk, vv = ks, vs
                    with _sdpa_ctx(kern):
                        try:
                            F.scaled_dot_product_attention(qs[0], ks[0], vs[0], enable_gqa=True)
                        except Exception:  # noqa: BLE001 - a backend without GQA: expand K/V outside the timing
                            if Hq == Hkv or kv_bytes * Hq // Hkv > 4 * GiB:
                                raise
                            kk = [ks[0].repeat_interleave(Hq // Hkv, 1)]
                            vv = [vs[0].repeat_interleave(Hq // Hkv, 1)]
                            note = "K/V expanded to every query head outside the timing (backend without GQA)"
                        t = time_graph(env, lambda i: F.scaled_dot_product_attention(
                            qs[i % nq], kk[i % len(kk)], vv[i % len(vv)], enable_gqa=True))
                    sink.emit("decode_attn", kern, t, timing="graph", note=note, **shape)
            except Exception as ex:  # noqa: BLE001
                sink.emit("decode_attn", kern, note=f"unavailable: {_err(ex)}", **shape)
        del ks, vs, qs


def fam_flex_attn(env, sink, pool):
    """FlexAttention decode (torch.compile'd flex_attention, one compile per shape): a few shapes of the grid."""
    if not env.cuda:
        sink.emit("decode_attn", "flex", note="unavailable: FlexAttention timing needs CUDA")
        return
    fam_decode_attn(env, sink, pool, only_kernels=["flex"])


def fam_verify_attn(env, sink, pool):
    grid = [(hk, B, R, T) for hk in ("32/8", "64/8") for B in (1, 4, 16, 64) for R in (2, 3, 4, 8, 16)
            for T in (8192, 32768) if not (B == 64 and T == 32768)]
    if env.smoke:
        grid = [("32/8", 1, 4, 256), ("64/8", 2, 3, 128)]
    for hk, B, R, T in grid:
        if env.late():
            sink.emit("verify_attn", "skipped", note="deadline")
            return
        Hq, Hkv = HEADS[hk]
        ks, vs = _kv(env, pool, B, Hkv, T)
        qs = [torch.randn((B, Hq, R, D), dtype=torch.bfloat16, device=env.device) for _ in range(len(ks))]
        shape = dict(corner="verify", batch=B, heads=Hq, kv_heads=Hkv, head_dim=D, context=T, q_rows=R, dtype="bf16",
                     bytes_moved=2 * B * Hkv * T * D * 2, flops=4 * B * Hq * R * T * D)
        for kern in ("cudnn", "flash", "triton_splitkv"):
            try:
                if kern == "triton_splitkv":
                    if not HAVE_TRITON or not env.cuda:
                        raise RuntimeError("Triton unavailable on this device")
                    _, S = triton_splitkv(qs[0], ks[0], vs[0], env.sm_count)
                    ref = reference_attn(qs[0][:1], ks[0][:1], vs[0][:1])
                    rel = ((triton_splitkv(qs[0][:1], ks[0][:1], vs[0][:1], env.sm_count, splits=S)[0].float() - ref).norm()
                           / ref.norm()).item()
                    if not rel < 2e-2:
                        raise RuntimeError(f"wrong result: rel err {rel:.3g}")
                    t = time_graph(env, lambda i: triton_splitkv(qs[i % len(qs)], ks[i % len(ks)], vs[i % len(vs)],
                                                                 env.sm_count, splits=S))
                    sink.emit("verify_attn", kern, t, timing="graph", splits=S, **shape)
                else:
                    with _sdpa_ctx(kern):
                        F.scaled_dot_product_attention(qs[0], ks[0], vs[0], enable_gqa=True)
                        t = time_graph(env, lambda i: F.scaled_dot_product_attention(
                            qs[i % len(qs)], ks[i % len(ks)], vs[i % len(vs)], enable_gqa=True))
                    sink.emit("verify_attn", kern, t, timing="graph", **shape)
            except Exception as ex:  # noqa: BLE001
                sink.emit("verify_attn", kern, note=f"unavailable: {_err(ex)}", **shape)
        del ks, vs, qs


def fam_fp8kv_attn(env, sink, pool):
    grid = [(hk, B, T) for hk in ("32/8", "8/1", "64/8") for B in (1, 8, 64) for T in (1024, 8192, 65536)
            if 2 * B * HEADS[hk][1] * T * D * 2 <= 8 * GiB]
    if env.smoke:
        grid = [("32/8", 2, 256)]
    f8 = getattr(torch, "float8_e4m3fn", None)
    for hk, B, T in grid:
        if env.late():
            sink.emit("fp8kv_attn", "skipped", note="deadline")
            return
        Hq, Hkv = HEADS[hk]
        ks, vs = _kv(env, pool, B, Hkv, T)
        n = min(len(ks), len(vs), 32)   # v3: 32 (v2: 8 pairs, L2-resident below ~3 MiB a set)
        qs = [torch.randn((B, Hq, 1, D), dtype=torch.bfloat16, device=env.device) for _ in range(n)]
        base = dict(corner="fp8kv", batch=B, heads=Hq, kv_heads=Hkv, head_dim=D, context=T, q_rows=1)
        try:
            if f8 is None:
                raise RuntimeError("no float8_e4m3fn in this torch")
            k8 = [(ks[i] * 0.5).to(f8) for i in range(n)]
            v8 = [(vs[i] * 0.5).to(f8) for i in range(n)]
        except Exception as ex:  # noqa: BLE001
            sink.emit("fp8kv_attn", "cast", note=f"unavailable: {_err(ex)}", **base)
            continue
        for kern, kk, vv, dt, sc in (("triton_splitkv", ks, vs, "bf16", 1.0), ("triton_splitkv", k8, v8, "fp8", 2.0)):
            try:
                if not HAVE_TRITON or not env.cuda:
                    raise RuntimeError("Triton unavailable on this device")
                _, S = triton_splitkv(qs[0], kk[0], vv[0], env.sm_count, kv_scale=sc)
                ref = reference_attn(qs[0][:1], kk[0][:1], vv[0][:1], kv_scale=sc)
                got = triton_splitkv(qs[0][:1], kk[0][:1], vv[0][:1], env.sm_count, kv_scale=sc, splits=S)[0].float()
                rel = ((got - ref).norm() / ref.norm()).item()
                if not rel < 3e-2:
                    raise RuntimeError(f"wrong result: rel err {rel:.3g}")
                t = time_graph(env, lambda i: triton_splitkv(qs[i % n], kk[i % n], vv[i % n], env.sm_count, kv_scale=sc,
                                                             splits=S))
                sink.emit("fp8kv_attn", kern, t, timing="graph", splits=S, dtype=dt,
                          bytes_moved=2 * B * Hkv * T * D * (1 if dt == "fp8" else 2), **base)
            except Exception as ex:  # noqa: BLE001
                sink.emit("fp8kv_attn", kern, note=f"unavailable: {_err(ex)}", dtype=dt, **base)
        try:  # eager: dequantize the whole cache (one cast + scale per tensor), then SDPA cuDNN
            def deq(i):
                kb = k8[i % n].to(torch.bfloat16) * 2.0
                vb = v8[i % n].to(torch.bfloat16) * 2.0
                return F.scaled_dot_product_attention(qs[i % n], kb, vb, enable_gqa=True)
            with _sdpa_ctx("cudnn"):
                t = time_graph(env, deq)
            sink.emit("fp8kv_attn", "dequant+cudnn", t, timing="graph", dtype="fp8", n_kernels=5,
                      note="k.to(bf16)*s, v.to(bf16)*s (4 elementwise kernels) + SDPA cuDNN",
                      bytes_moved=2 * B * Hkv * T * D * 1, **base)
        except Exception as ex:  # noqa: BLE001
            sink.emit("fp8kv_attn", "dequant+cudnn", note=f"unavailable: {_err(ex)}", dtype="fp8", **base)
        del ks, vs, qs, k8, v8


# ----------------------------------------------------------------------------------------------------
# GEMMs, fp8
# ----------------------------------------------------------------------------------------------------
GEMM_SHAPES = [("qkv", 4096, 6144), ("gate_up", 4096, 28672), ("down", 14336, 4096), ("70b_tp8_qkv", 8192, 1280),
               ("o", 4096, 4096)]
GEMM_M = [1, 4, 16, 64, 128, 256, 512, 1024, 2048, 4096]   # v3: + 128, 512, 2048 (rowwise tile choice)


def _quant_eager(x):
    amax = x.abs().amax(dim=-1, keepdim=True).float()
    sc = amax.clamp(min=1e-12) / 448.0
    return (x / sc).clamp(-448.0, 448.0).to(torch.float8_e4m3fn), sc


def _quant_triton(x):
    M, K = x.shape
    y = torch.empty((M, K), dtype=torch.float8_e4m3fn, device=x.device)
    sc = torch.empty((M, 1), dtype=torch.float32, device=x.device)
    _quant_rowwise[(M,)](x, y, sc, K, BLOCK=1024, num_warps=4)
    return y, sc


def fam_gemm(env, sink, pool):
    shapes, ms = (GEMM_SHAPES, GEMM_M) if not env.smoke else ([("tiny", 256, 512)], [1, 16])
    f8 = getattr(torch, "float8_e4m3fn", None)
    for name, K, N in shapes:
        ws = pool.sets((K, N), want=8)
        nw = len(ws)
        w8t = []
        if f8 is not None:
            try:
                w8t = [(w.t().contiguous() * 0.05).to(f8).t() for w in ws]   # column-major fp8 [K, N] (v3: all sets)
            except Exception:  # noqa: BLE001
                w8t = []
        sb = torch.rand((1, N), dtype=torch.float32, device=env.device) * 0.01 + 0.001
        one = torch.ones((), dtype=torch.float32, device=env.device)
        for M in ms:
            if env.late():
                sink.emit("gemm", "skipped", note="deadline")
                return
            xs = [torch.randn((M, K), dtype=torch.bfloat16, device=env.device) for _ in range(4)]
            base = dict(corner=name, m=M, n=N, k=K)
            cases = [("bf16", "bf16", lambda i: xs[i % 4] @ ws[i % nw], 2 * (M * K + K * N + M * N))]
            if w8t and env.cuda:
                x8 = [(x * 0.1).to(f8) for x in xs]
                sa = torch.rand((M, 1), dtype=torch.float32, device=env.device) * 0.01 + 0.001
                nw8 = len(w8t)
                cases += [
                    ("fp8_tensorwise", "fp8", lambda i: torch._scaled_mm(x8[i % 4], w8t[i % nw8], scale_a=one,
                                                                         scale_b=one, out_dtype=torch.bfloat16),
                     M * K + K * N + 2 * M * N),
                    ("fp8_rowwise", "fp8", lambda i: torch._scaled_mm(x8[i % 4], w8t[i % nw8], scale_a=sa, scale_b=sb,
                                                                      out_dtype=torch.bfloat16),
                     M * K + K * N + 2 * M * N + 4 * (M + N)),
                    ("quant_eager", "fp8", lambda i: _quant_eager(xs[i % 4]), 3 * M * K + 4 * M),
                    ("quant+fp8_rowwise_eager", "fp8", lambda i: _mm_rowwise(_quant_eager(xs[i % 4]), w8t[i % nw8], sb),
                     M * K * 2 + K * N + 2 * M * N)]
                if HAVE_TRITON:
                    cases += [("quant_triton", "fp8", lambda i: _quant_triton(xs[i % 4]), 3 * M * K + 4 * M),
                              ("quant+fp8_rowwise_triton", "fp8", lambda i: _mm_rowwise(_quant_triton(xs[i % 4]),
                                                                                         w8t[i % nw8], sb),
                               M * K * 2 + K * N + 2 * M * N)]
            for kern, dt, fn, nbytes in cases:
                try:
                    t = time_graph(env, fn, n_sets=4)
                    sink.emit("gemm", kern, t, timing="graph", dtype=dt, bytes_moved=nbytes, flops=2 * M * N * K,
                              **base)
                    if kern in ("bf16", "fp8_rowwise") and M in (1, 16) and name in ("qkv", "down", "o"):
                        tc = time_cold(env, fn)
                        sink.emit("gemm", kern, tc, timing="cold", dtype=dt, bytes_moved=nbytes,
                                  flops=2 * M * N * K, **base)
                except Exception as ex:  # noqa: BLE001
                    sink.emit("gemm", kern, note=f"unavailable: {_err(ex)}", dtype=dt, **base)
        del ws, w8t


def _mm_rowwise(pair, w, sb):
    x8, sc = pair
    return torch._scaled_mm(x8, w, scale_a=sc, scale_b=sb, out_dtype=torch.bfloat16)


# ----------------------------------------------------------------------------------------------------
# top-k, indexer
# ----------------------------------------------------------------------------------------------------
def fam_topk(env, sink, pool):
    lens, rows, ks = (4096, 16384, 65536, 262144, 1048576), (1, 2, 8, 32, 128, 512), (256, 2048)
    if env.smoke:
        lens, rows, ks = (4096,), (1, 4), (256,)
    for L in lens:
        for R in rows:
            if R * L > 2 ** 27:
                continue
            if env.late():
                sink.emit("topk", "skipped", note="deadline")
                return
            n = int(max(1, min(8, math.ceil(256 * MiB / (R * L * 4)))))
            xs = [torch.randn((R, L), dtype=torch.float32, device=env.device) for _ in range(n)]
            for kk in ks:
                try:
                    t = time_graph(env, lambda i: torch.topk(xs[i % n], kk, dim=-1), n_sets=n)
                    sink.emit("topk", "torch.topk", t, timing="graph", dtype="fp32", rows=R, row_len=L, topk_k=kk,
                              bytes_moved=R * L * 4)
                except Exception as ex:  # noqa: BLE001
                    sink.emit("topk", "torch.topk", note=f"unavailable: {_err(ex)}", rows=R, row_len=L, topk_k=kk)
            del xs


def fam_indexer(env, sink, pool):
    grid = [(Hi, R, N) for Hi in (16, 32, 64) for R in (1, 2, 4, 16) for N in (2048, 8192, 32768, 131072)]
    if env.smoke:
        grid = [(16, 1, 256)]
    f8 = getattr(torch, "float8_e4m3fn", None)
    for Hi, R, N in grid:
        if env.late():
            sink.emit("indexer", "skipped", note="deadline")
            return
        n = 8
        qs = [torch.randn((R, Hi, D), dtype=torch.bfloat16, device=env.device) for _ in range(n)]
        wts = [torch.rand((R, Hi), dtype=torch.float32, device=env.device) for _ in range(n)]
        kb = pool.sets((N, D), want=n)
        nk = len(kb)
        base = dict(corner=f"heads{Hi}", rows=R, heads=Hi, kv_heads=1, head_dim=D, row_len=N,
                    flops=2 * R * N * Hi * D + 3 * R * N * Hi)
        variants = [("bf16", kb)]
        if f8 is not None and env.cuda:
            variants.append(("fp8", [x.to(f8) for x in kb]))
        for dt, keys in variants:
            try:
                if not HAVE_TRITON or not env.cuda:
                    raise RuntimeError("Triton unavailable on this device")
                def run(i, keys=keys):
                    out = torch.empty((R, N), dtype=torch.float32, device=env.device)
                    _indexer_fwd[(R, triton.cdiv(N, 64))](qs[i % n], wts[i % n], keys[i % nk], out, N, Hi=Hi, D=D,
                                                           BLOCK_N=64, FP8=dt == "fp8", num_warps=4)
                    return out
                ref = (torch.relu(qs[0].float() @ keys[0].float().T) * wts[0].float()[:, :, None]).sum(1)
                rel = ((run(0) - ref).norm() / ref.norm()).item()
                if not rel < 2e-2:
                    raise RuntimeError(f"wrong result: rel err {rel:.3g}")
                t = time_graph(env, run)
                sink.emit("indexer", "triton_indexer", t, timing="graph", dtype=dt, splits=R * math.ceil(N / 64),
                          bytes_moved=N * D * (1 if dt == "fp8" else 2) + R * N * 4, **base)
            except Exception as ex:  # noqa: BLE001
                sink.emit("indexer", "triton_indexer", note=f"unavailable: {_err(ex)}", dtype=dt, **base)
        if Hi == 64 and R in (1, 4):  # eager reference: matmul, relu, weight, sum over heads (4 kernels)
            try:
                t = time_graph(env, lambda i: (torch.relu(qs[i % n] @ kb[i % nk].T) * wts[i % n][:, :, None]).sum(1))
                sink.emit("indexer", "eager_torch", t, timing="graph", dtype="bf16", n_kernels=4,
                          bytes_moved=N * D * 2 + R * N * 4, **base)
            except Exception as ex:  # noqa: BLE001
                sink.emit("indexer", "eager_torch", note=f"unavailable: {_err(ex)}", **base)
        del qs, kb


# ----------------------------------------------------------------------------------------------------
# v3: the cost of a split (forced split counts, the combine kernel alone)
# ----------------------------------------------------------------------------------------------------
def fam_split_sweep(env, sink, pool):
    """Our Triton split-KV kernel at one query row with the split count FORCED (1-64; `splits` = what was launched)
    rather than FA2's rule, and its combine kernel timed alone (family `combine`: B x Hq programs merging S fp32
    partial outputs of D values and their log-sum-exp): what splitting costs, measured directly."""
    grid = [("32/8", B, T) for B in (1, 8) for T in (512, 2048, 8192, 32768)] + [("16/2", 1, 2048), ("16/2", 1, 32768)]
    splits = (1, 2, 4, 8, 16, 32, 64)
    if env.smoke:
        grid, splits = [("32/8", 1, 256)], (1, 2)
    if not HAVE_TRITON or not (env.cuda or os.environ.get("TRITON_INTERPRET") == "1"):
        sink.emit("split_sweep", "triton_splitkv", note="unavailable: Triton unavailable on this device")
        return
    dt = torch.bfloat16 if env.cuda else torch.float32
    for hk, B, T in grid:
        Hq, Hkv = HEADS[hk]
        ks, vs = _kv(env, pool, B, Hkv, T)
        if not env.cuda:
            ks, vs = [k.float() for k in ks[:2]], [v.float() for v in vs[:2]]
        nq = len(ks)
        qs = [torch.randn((B, Hq, 1, D), dtype=dt, device=env.device) for _ in range(nq)]
        for S in splits:
            if env.late():
                sink.emit("split_sweep", "skipped", note="deadline")
                return
            if S > math.ceil(T / 64):
                continue
            try:
                _, got = triton_splitkv(qs[0], ks[0], vs[0], env.sm_count, splits=S)
                t = time_graph(env, lambda i, S=S: triton_splitkv(qs[i % nq], ks[i % nq], vs[i % nq], env.sm_count,
                                                                   splits=S))
                sink.emit("split_sweep", "triton_splitkv", t, timing="graph", corner="forced_splits", batch=B,
                          heads=Hq, kv_heads=Hkv, head_dim=D, context=T, q_rows=1, dtype="bf16", splits=got,
                          bytes_moved=2 * B * Hkv * T * D * 2, flops=4 * B * Hq * T * D,
                          note=f"splits forced to {S}")
            except Exception as ex:  # noqa: BLE001
                sink.emit("split_sweep", "triton_splitkv", note=f"unavailable: {_err(ex)}", batch=B, context=T,
                          splits=S)
        del ks, vs, qs
    bhs, ss = ((32, 256, 2048), (2, 4, 8, 16, 32, 64, 128)) if not env.smoke else ((4,), (2, 4))
    for BH in bhs:
        for S in ss:
            if env.late():
                return
            try:
                part = torch.randn((BH, S, 1, D), dtype=torch.float32, device=env.device)
                ms = torch.randn((BH, S, 1), dtype=torch.float32, device=env.device)
                ls = torch.rand((BH, S, 1), dtype=torch.float32, device=env.device) + 0.5
                out = torch.empty((BH, 1, D), dtype=dt, device=env.device)
                run = lambda i, S=S, part=part, ms=ms, ls=ls, out=out: _splitkv_combine[(BH,)](  # noqa: E731
                    part, ms, ls, out, S, 1, D=D, BLOCK_S=max(2, triton.next_power_of_2(S)), num_warps=4)
                t = time_graph(env, run)
                sink.emit("combine", "triton_combine", t, timing="graph", batch=BH, heads=1, head_dim=D, q_rows=1,
                          splits=S, dtype="fp32", bytes_moved=BH * S * (D + 2) * 4 + BH * D * 2,
                          note="B x Hq programs, partials written just before (L2-resident when they fit)")
            except Exception as ex:  # noqa: BLE001
                sink.emit("combine", "triton_combine", note=f"unavailable: {_err(ex)}", batch=BH, splits=S)


# ----------------------------------------------------------------------------------------------------
# v3: single eager PyTorch kernels (the pieces of HF modules, eager fp8 quantization and KV dequantization)
# ----------------------------------------------------------------------------------------------------
EW_K = 4096


def _ew_cases(env, M, K, f8):
    """(kernel, inputs builder, call on the inputs, bytes read + written, input dtype): one eager kernel each, on
    [M, K] (K = 4096)."""
    dev = env.device
    bf, f32 = torch.bfloat16, torch.float32
    n = M * K
    cases = [("vec_mul_bf16", lambda: _two(dev, (M, K), bf), lambda a: a[0] * a[1], 6 * n, "bf16"),
             ("cast_bf16_fp32", lambda: [torch.randn((M, K), dtype=bf, device=dev)], lambda a: a[0].float(), 6 * n,
              "bf16"),
             ("cast_fp32_bf16", lambda: [torch.randn((M, K), dtype=f32, device=dev)], lambda a: a[0].to(bf), 6 * n,
              "fp32"),
             ("bcast_rowscale_bf16_fp32", lambda: [torch.randn((M, K), dtype=bf, device=dev),
                                                   torch.rand((M, 1), dtype=f32, device=dev) + 0.5],
              lambda a: a[0] / a[1], 6 * n, "bf16"),
             ("bcast_rowscale_fp32", lambda: [torch.randn((M, K), dtype=f32, device=dev),
                                              torch.rand((M, 1), dtype=f32, device=dev) + 0.5],
              lambda a: a[0] * a[1], 8 * n, "fp32"),
             ("bcast_weight_bf16", lambda: [torch.randn((K,), dtype=bf, device=dev),
                                            torch.randn((M, K), dtype=bf, device=dev)],
              lambda a: a[0] * a[1], 4 * n, "bf16"),
             ("reduce_amax_bf16", lambda: [torch.randn((M, K), dtype=bf, device=dev)],
              lambda a: a[0].amax(dim=-1, keepdim=True), 2 * n, "bf16"),
             ("reduce_mean_fp32", lambda: [torch.randn((M, K), dtype=f32, device=dev)],
              lambda a: a[0].mean(-1, keepdim=True), 4 * n, "fp32"),
             ("neg_slice_bf16", lambda: [torch.randn((M * K // 128, 128), dtype=bf, device=dev)],
              lambda a: -a[0][..., 64:], 2 * n, "bf16"),
             ("cat_halves_bf16", lambda: [torch.randn((M * K // 128, 128), dtype=bf, device=dev)],
              lambda a: torch.cat((a[0][..., 64:], a[0][..., :64]), dim=-1), 4 * n, "bf16")]
    if f8 is not None and env.cuda:
        cases += [("cast_fp8_bf16", lambda: [(torch.randn((M, K), dtype=bf, device=dev) * 0.5).to(f8)],
                   lambda a: a[0].to(bf), 3 * n, "fp8"),
                  ("cast_bf16_fp8", lambda: [torch.randn((M, K), dtype=bf, device=dev) * 0.5],
                   lambda a: a[0].to(f8), 3 * n, "bf16"),
                  ("cast_fp32_fp8", lambda: [torch.randn((M, K), dtype=f32, device=dev) * 0.5],
                   lambda a: a[0].to(f8), 5 * n, "fp32")]
    return cases


def _two(dev, shape, dt):
    return [torch.randn(shape, dtype=dt, device=dev), torch.randn(shape, dtype=dt, device=dev)]


def fam_ew_kernels(env, sink, pool):
    """One eager kernel per row (graph-timed) on [M, 4096] for M = 1 ... 32768: contiguous (vectorized) products,
    dtype casts (bf16 <-> fp32, fp8 <-> bf16, fp32 -> fp8), broadcast products (a row scale [M, 1], a weight [K]:
    TensorIterator's non-vectorized elementwise_kernel), row reductions, the strided neg and cat of rotate_half,
    and HF's repeat_kv (expand + reshape of [B, 8, T, 128] to 32 heads). Inputs rotate over sets spanning >= 256
    MiB when one is larger than 1 MiB (HBM-resident, as a KV cache); smaller ones stay L2-resident (as the
    activations a decode step has just written)."""
    f8 = getattr(torch, "float8_e4m3fn", None)
    Ms = (1, 8, 64, 512, 4096, 32768) if not env.smoke else (1, 4)
    K = EW_K if not env.smoke else 256
    for M in Ms:
        for kern, make, call, nbytes, dt in _ew_cases(env, M, K, f8):
            if env.late():
                sink.emit("ew_kernel", "skipped", note="deadline")
                return
            try:
                one = sum(x.numel() * x.element_size() for x in make())
                nset = int(min(16, math.ceil(256 * MiB / one))) if one > MiB else 1
                sets = [make() for _ in range(nset)]
                t = time_graph(env, lambda i, sets=sets, call=call: call(sets[i % len(sets)]))
                sink.emit("ew_kernel", kern, t, timing="graph", dtype=dt, m=M, n=K, bytes_moved=nbytes,
                          n_kernels=count_kernels(env, lambda: call(sets[0])) if M in (1, 4096) else "")
                del sets
            except Exception as ex:  # noqa: BLE001
                sink.emit("ew_kernel", kern, note=f"unavailable: {_err(ex)}", m=M, n=K, dtype=dt)
    # HF repeat_kv: hidden_states[:, :, None, :, :].expand(B, Hkv, G, T, D).reshape(B, Hkv * G, T, D)
    Hkv, G = (8, 4) if not env.smoke else (2, 2)
    for BT in ((16, 256, 4096, 65536, 262144) if not env.smoke else (16, 64)):
        try:
            shape = (1, Hkv, BT, D)
            one = math.prod(shape) * 2
            nset = int(min(16, math.ceil(256 * MiB / one))) if one > MiB else 1
            sets = [torch.randn(shape, dtype=torch.bfloat16, device=env.device) for _ in range(nset)]
            fn = lambda i, sets=sets: sets[i % len(sets)][:, :, None].expand(1, Hkv, G, BT, D).reshape(1, Hkv * G, BT, D)  # noqa: E731
            t = time_graph(env, fn)
            sink.emit("ew_kernel", "repeat_kv", t, timing="graph", dtype="bf16", batch=1, kv_heads=Hkv, heads=Hkv * G,
                      head_dim=D, context=BT, bytes_moved=one * (1 + G), n_kernels=count_kernels(env, lambda: fn(0)))
            del sets
        except Exception as ex:  # noqa: BLE001
            sink.emit("ew_kernel", "repeat_kv", note=f"unavailable: {_err(ex)}", context=BT)


# ----------------------------------------------------------------------------------------------------
# v3: launch grids (torch.profiler / CUPTI): what each library kernel launches, its registers and shared memory
# ----------------------------------------------------------------------------------------------------
GRID_COLUMNS = ["device", "sm_count", "torch_version", "triton_version", "driver_version", "date", "script_version",
                "family", "label", "kernel", "corner", "batch", "heads", "kv_heads", "head_dim", "context", "q_rows",
                "m", "n", "k", "dtype", "kernel_name", "dur_us", "grid_x", "grid_y", "grid_z", "block_x", "block_y",
                "block_z", "regs", "smem", "blocks_per_sm", "warps_per_sm", "occupancy_pct"]


class GridSink(harness.Sink):
    """The launch-grid CSV (GRID_COLUMNS), one row per kernel record; keys outside the columns are left out."""

    def __init__(self, path, env):
        super().__init__(path, GRID_COLUMNS, SCRIPT_VERSION, env.facts(GRID_COLUMNS), extras="ignore")

    def emit(self, row):
        self.write(row)


def trace_kernels(env, calls):
    """Run each (label, fn) of `calls` once under torch.profiler (after two calls outside it: cuDNN plans, Triton
    compiles) and return [(label, kernel record)] from its chrome trace: name, duration, grid, block, registers per
    thread, shared memory, blocks / warps per SM, estimated occupancy (CUPTI's kernel records as Kineto writes them).
    A kernel belongs to the label whose record_function range holds its launch (matched by correlation id)."""
    import json
    import tempfile

    from torch.profiler import ProfilerActivity, profile, record_function
    for _, fn in calls:
        fn()
        fn()
    env.sync()
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if env.cuda else [])
    with profile(activities=acts) as prof:
        for label, fn in calls:
            with record_function(f"grid::{label}"):
                fn()
            env.sync()
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path) as f:
            doc = json.load(f)
    finally:
        os.remove(path)
    return parse_trace(doc)


def parse_trace(doc):
    """[(label, kernel record dict)] of a Kineto chrome trace (see trace_kernels)."""
    evs = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
    ann = sorted((float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)), str(e["name"])[6:]) for e in evs
                 if e.get("ph") == "X" and str(e.get("name", "")).startswith("grid::"))
    launch = {}
    for e in evs:
        a = e.get("args") or {}
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in a:
            launch[a["correlation"]] = float(e["ts"])
    out = []
    for e in evs:
        if e.get("cat") != "kernel":
            continue
        a = e.get("args") or {}
        ts = launch.get(a.get("correlation"))
        if ts is None:
            continue
        lab = next((lb for s, t, lb in ann if s <= ts <= t), None)
        if lab is None:
            continue
        g = list(a.get("grid", [""] * 3)) + [""] * 3
        bl = list(a.get("block", [""] * 3)) + [""] * 3
        out.append((lab, {"kernel_name": str(e.get("name", ""))[:240], "dur_us": e.get("dur", ""),
                          "grid_x": g[0], "grid_y": g[1], "grid_z": g[2], "block_x": bl[0], "block_y": bl[1],
                          "block_z": bl[2], "regs": a.get("registers per thread", ""),
                          "smem": a.get("shared memory", ""), "blocks_per_sm": a.get("blocks per SM", ""),
                          "warps_per_sm": a.get("warps per SM", ""),
                          "occupancy_pct": a.get("est. achieved occupancy %", "")}))
    return out


def grid_shapes(env):
    """(corner, heads key, B, q_rows, T) whose launches are recorded."""
    if env.smoke:
        return [("short", "32/8", 1, 1, 64), ("verify", "32/8", 1, 4, 64)]
    s = [("short", "32/8", B, 1, T) for B, T in ((1, 64), (1, 256), (1, 512), (1, 1024), (8, 256), (8, 512),
                                                    (64, 512), (256, 64))]
    s += [("short", "16/2", 1, 1, 512), ("short", "64/8", 1, 1, 512), ("short", "64/8", 8, 1, 256)]
    s += [("middle", "32/8", B, 1, T) for B, T in ((1, 4096), (4, 4096), (16, 4096), (1, 32768), (4, 32768))]
    s += [("middle", "64/8", 1, 1, 4096), ("middle", "8/1", 16, 1, 4096), ("middle", "8/1", 1, 1, 32768)]
    s += [("large_batch_heads", "32/32", 128, 1, 512), ("large_batch_heads", "32/8", 512, 1, 1024)]
    s += [("fewheads", hk, B, 1, T) for hk, B, T in (("8/1", 1, 16384), ("8/1", 1, 262144), ("8/1", 4, 65536),
                                                     ("1/1", 1, 65536), ("16/2", 1, 65536), ("16/2", 1, 1048576))]
    s += [("verify", "32/8", B, R, 8192) for B, R in ((1, 2), (1, 4), (1, 8), (1, 16), (16, 4))]
    s += [("verify", "64/8", 1, 4, 8192)]
    return s


def fam_grids(env, sink, pool, path):
    """Launch grids of the decode-attention backends (SDPA cuDNN / flash / efficient, our Triton kernel), the fp8
    GEMMs (rowwise CUTLASS: its tile shape is in the kernel name; tensorwise cuBLASLt), eager quantization, fp8-KV
    dequantization and the HF modules: one recorded call each (regimes_grids_*.csv)."""
    gs = GridSink(path, env)
    f8 = getattr(torch, "float8_e4m3fn", None)
    try:
        for kern in ("cudnn", "flash", "efficient", "triton_splitkv"):
            if env.late():
                break
            calls, meta = [], {}
            for corner, hk, B, R, T in grid_shapes(env):
                Hq, Hkv = HEADS[hk]
                if 2 * B * Hkv * T * D * 2 > 4 * GiB:
                    continue
                k = pool.sets((B, Hkv, T, D), want=1)[0]
                v = torch.randn_like(k) if not env.cuda else pool.sets((B, Hkv, T, D), want=2,
                                                                      distinct_bytes=2 * k.numel() * 2)[-1]
                q = torch.randn((B, Hq, R, D), dtype=torch.bfloat16, device=env.device)
                if kern == "efficient" and Hq != Hkv:
                    if 2 * B * Hq * T * D * 2 > 4 * GiB:
                        continue
                    k, v = k.repeat_interleave(Hq // Hkv, 1), v.repeat_interleave(Hq // Hkv, 1)
                label = f"{kern}:{corner}:{hk}:{B}:{R}:{T}"
                meta[label] = dict(family="decode_grid", kernel=kern, corner=corner, batch=B, heads=Hq, kv_heads=Hkv,
                                   head_dim=D, context=T, q_rows=R, dtype="bf16")
                if kern == "triton_splitkv":
                    if not HAVE_TRITON or not env.cuda:
                        continue
                    calls.append((label, lambda q=q, k=k, v=v: triton_splitkv(q, k, v, env.sm_count)))
                else:
                    def sd(q=q, k=k, v=v, kern=kern):
                        with _sdpa_ctx(kern):
                            return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
                    try:
                        sd()
                    except Exception:  # noqa: BLE001 - a backend that cannot run this shape
                        continue
                    calls.append((label, sd))
            _emit_trace(env, gs, calls, meta)
        if f8 is not None and env.cuda and not env.late():
            calls, meta = [], {}
            for name, K, N in GEMM_SHAPES:
                w8 = (torch.randn((N, K), dtype=torch.bfloat16, device=env.device) * 0.05).to(f8).t()
                sb = torch.rand((1, N), dtype=torch.float32, device=env.device) * 0.01 + 0.001
                one = torch.ones((), dtype=torch.float32, device=env.device)
                for M in (1, 16, 64, 128, 256, 512, 1024, 4096):
                    x = torch.randn((M, K), dtype=torch.bfloat16, device=env.device)
                    x8 = (x * 0.1).to(f8)
                    sa = torch.rand((M, 1), dtype=torch.float32, device=env.device) * 0.01 + 0.001
                    for kern, fn in (("fp8_rowwise", lambda x8=x8, w8=w8, sa=sa, sb=sb: torch._scaled_mm(
                                         x8, w8, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)),
                                     ("fp8_tensorwise", lambda x8=x8, w8=w8: torch._scaled_mm(
                                         x8, w8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)),
                                     ("quant_eager", lambda x=x: _quant_eager(x))):
                        if kern == "quant_eager" and (name != "qkv" or M not in (1, 1024)):
                            continue
                        if kern == "fp8_tensorwise" and M not in (1, 64, 1024):
                            continue
                        label = f"{kern}:{name}:{M}"
                        meta[label] = dict(family="gemm_grid", kernel=kern, corner=name, m=M, n=N, k=K, dtype="fp8")
                        calls.append((label, fn))
            # fp8-KV dequantization before cuDNN (fp8kv_attn's eager path) and the HF modules (structure)
            k8 = (torch.randn((8, 8, 8192, D), dtype=torch.bfloat16, device=env.device) * 0.5).to(f8)
            q = torch.randn((8, 32, 1, D), dtype=torch.bfloat16, device=env.device)

            def deq(k8=k8, q=q):
                with _sdpa_ctx("cudnn"):
                    return F.scaled_dot_product_attention(q, k8.to(torch.bfloat16) * 2.0, k8.to(torch.bfloat16) * 2.0,
                                                          enable_gqa=True)
            meta["dequant+cudnn:8:8192"] = dict(family="fp8kv_grid", kernel="dequant+cudnn", batch=8, heads=32,
                                                kv_heads=8, head_dim=D, context=8192, q_rows=1, dtype="fp8")
            calls.append(("dequant+cudnn:8:8192", deq))
            for B in (1, 8, 64):
                x = torch.randn((B, 4096), dtype=torch.bfloat16, device=env.device)
                w = torch.rand(4096, dtype=torch.bfloat16, device=env.device) + 0.5
                qh = torch.randn((B, 32, 1, D), dtype=torch.bfloat16, device=env.device)
                kh = torch.randn((B, 8, 1, D), dtype=torch.bfloat16, device=env.device)
                cos = torch.randn((B, 1, D), dtype=torch.bfloat16, device=env.device)
                sin = torch.randn((B, 1, D), dtype=torch.bfloat16, device=env.device)
                for kern, fn in (("hf_rmsnorm", lambda x=x, w=w: hf_rmsnorm(x, w)),
                                 ("hf_rope", lambda qh=qh, kh=kh, cos=cos, sin=sin: hf_rope(qh, kh, cos, sin))):
                    label = f"{kern}:{B}"
                    meta[label] = dict(family="hf_grid", kernel=kern, batch=B, n=4096, dtype="bf16")
                    calls.append((label, fn))
            _emit_trace(env, gs, calls, meta)
        if not env.late():   # v4: the reduction grid and the small-M GEMMs
            extra = grid_extra_calls(env)
            _emit_trace(env, gs, [(lab, fn) for lab, fn, _ in extra], {lab: m for lab, _, m in extra})
    finally:
        gs.close()
    print(f"wrote {path} ({gs.n} kernel records)")
    sink.emit("grids", "profile", note=f"{gs.n} kernel records in {os.path.basename(path)}")


def _emit_trace(env, gs, calls, meta):
    if not calls:
        return
    try:
        recs = trace_kernels(env, calls)
    except Exception as ex:  # noqa: BLE001
        gs.emit({"family": "error", "kernel_name": f"trace failed: {_err(ex)}"})
        return
    for label, rec in recs:
        gs.emit({**meta.get(label, {}), "label": label, **rec})


# ----------------------------------------------------------------------------------------------------
# HF-style elementwise modules and the HF decode step
# ----------------------------------------------------------------------------------------------------
def hf_rmsnorm(x, w, eps=1e-5):
    """transformers modeling_llama LlamaRMSNorm.forward (5.17), verbatim structure."""
    input_dtype = x.dtype
    h = x.to(torch.float32)
    variance = h.pow(2).mean(-1, keepdim=True)
    h = h * torch.rsqrt(variance + eps)
    return w * h.to(input_dtype)


def hf_rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def hf_rope(q, k, cos, sin):
    """transformers apply_rotary_pos_emb (unsqueeze_dim=1)."""
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return (q * cos) + (hf_rotate_half(q) * sin), (k * cos) + (hf_rotate_half(k) * sin)


def count_kernels(env, fn) -> int | str:
    if not env.cuda:
        return ""
    try:
        from torch.profiler import ProfilerActivity, profile
        fn()
        env.sync()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn()
            env.sync()
        return sum(1 for e in prof.events() if e.device_type.name == "CUDA" and "Memcpy" not in e.name
                   and "Memset" not in e.name)
    except Exception:  # noqa: BLE001
        return ""


def fam_elementwise(env, sink, pool):
    Bs = (1, 2, 4, 8, 16, 32, 64, 256) if not env.smoke else (1, 4)   # v3: + 2, 4, 16, 32
    H = 4096 if not env.smoke else 256
    for B in Bs:
        xs = [torch.randn((B, H), dtype=torch.bfloat16, device=env.device) for _ in range(8)]
        w = torch.rand(H, dtype=torch.bfloat16, device=env.device) + 0.5
        for kern, fn in (("hf_rmsnorm", lambda i: hf_rmsnorm(xs[i % 8], w)),
                         ("F.rms_norm", lambda i: F.rms_norm(xs[i % 8], (H,), w, 1e-5))):
            try:
                t = time_graph(env, fn)
                sink.emit("elementwise", kern, t, timing="graph", dtype="bf16", batch=B, n=H,
                          n_kernels=count_kernels(env, lambda: fn(0)), bytes_moved=2 * B * H * 2)
            except Exception as ex:  # noqa: BLE001
                sink.emit("elementwise", kern, note=f"unavailable: {_err(ex)}", batch=B, n=H)
        Hq, Hkv = (32, 8) if not env.smoke else (4, 2)
        qs = [torch.randn((B, Hq, 1, D), dtype=torch.bfloat16, device=env.device) for _ in range(8)]
        kq = [torch.randn((B, Hkv, 1, D), dtype=torch.bfloat16, device=env.device) for _ in range(8)]
        cos = torch.randn((B, 1, D), dtype=torch.bfloat16, device=env.device)
        sin = torch.randn((B, 1, D), dtype=torch.bfloat16, device=env.device)
        fn = lambda i: hf_rope(qs[i % 8], kq[i % 8], cos, sin)  # noqa: E731
        try:
            t = time_graph(env, fn)
            sink.emit("elementwise", "hf_rope", t, timing="graph", dtype="bf16", batch=B, heads=Hq, kv_heads=Hkv,
                      head_dim=D, n_kernels=count_kernels(env, lambda: fn(0)),
                      bytes_moved=2 * B * (Hq + Hkv) * D * 2)
        except Exception as ex:  # noqa: BLE001
            sink.emit("elementwise", "hf_rope", note=f"unavailable: {_err(ex)}", batch=B)
        del xs, qs, kq


def fam_hf_step(env, sink, pool, profile_path):
    try:
        import transformers
        from transformers import LlamaConfig, LlamaForCausalLM, StaticCache
    except Exception as ex:  # noqa: BLE001
        sink.emit("hf_step", "transformers", note=f"unavailable: {_err(ex)}")
        return
    if env.cuda and not env.smoke:
        cfg = LlamaConfig(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                          num_key_value_heads=8, head_dim=128, vocab_size=128256, max_position_embeddings=131072,
                          rope_theta=500000.0, rms_norm_eps=1e-5, tie_word_embeddings=False)
        cases = [(1, 512), (1, 2048), (1, 8192), (8, 2048), (8, 8192), (32, 2048)]
    else:
        cfg = LlamaConfig(hidden_size=256, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
                          num_key_value_heads=2, head_dim=64, vocab_size=1000, max_position_embeddings=4096)
        cases = [(1, 64), (2, 128)]
    pool.buf = None  # free the attention pool: the 8B model needs the memory
    if env.cuda:
        torch.cuda.empty_cache()
    torch.manual_seed(0)
    with torch.device(env.device):
        model = LlamaForCausalLM(cfg).to(torch.bfloat16)
    model.eval()
    if hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation("sdpa")
    Hkv, Dh = cfg.num_key_value_heads, cfg.head_dim
    shape0 = dict(heads=cfg.num_attention_heads, kv_heads=Hkv, head_dim=Dh, dtype="bf16", q_rows=1,
                  note=f"transformers {transformers.__version__} LlamaForCausalLM, sdpa, StaticCache")
    for B, T in cases:
        if env.late():
            sink.emit("hf_step", "skipped", note="deadline")
            break
        shape = dict(batch=B, context=T, **shape0)
        try:
            cache = StaticCache(config=cfg, max_cache_len=T + 16)
            ids = torch.randint(0, cfg.vocab_size, (B, 1), device=env.device)
            pos = torch.tensor([T], device=env.device)
            with torch.no_grad():
                model(input_ids=ids, past_key_values=cache, cache_position=pos, use_cache=True)  # lazy init
                for lay in cache.layers:
                    lay.keys.normal_()
                    lay.values.normal_()
                step = lambda: model(input_ids=ids, past_key_values=cache, cache_position=pos, use_cache=True)  # noqa: E731
                for _ in range(2):
                    step()
                env.sync()
                # eager: events around one forward after a synchronize (host-bound parts included)
                xs = []
                for _ in range(5 if not env.smoke else 2):
                    env.sync()
                    if env.cuda:
                        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                        a.record()
                        step()
                        b.record()
                        b.synchronize()
                        xs.append(a.elapsed_time(b) * 1000.0)
                    else:
                        t0 = time.perf_counter()
                        step()
                        xs.append((time.perf_counter() - t0) * 1e6)
                sink.emit("hf_step", "hf_llama", stats(xs, 1), timing="eager", **shape)
                if env.cuda:
                    try:
                        t = time_graph(env, lambda i: step(), target_us=1.0, reps=10, max_calls=1)
                        nk = count_kernels(env, step) if (B, T) == (1, 2048) else ""
                        sink.emit("hf_step", "hf_llama", t, timing="graph", n_kernels=nk, **shape)
                    except Exception as ex:  # noqa: BLE001
                        sink.emit("hf_step", "hf_llama", timing="graph", note=f"graph capture failed: {_err(ex)}",
                                  batch=B, context=T)
                if (B, T) == (1, 2048) or (env.smoke and B == 1):
                    _profile_step(env, step, profile_path)
            del cache
        except Exception as ex:  # noqa: BLE001
            sink.emit("hf_step", "hf_llama", note=f"unavailable: {_err(ex)}", batch=B, context=T)
            traceback.print_exc()
        if env.cuda:
            torch.cuda.empty_cache()
    del model


def _profile_step(env, step, path):
    """Kernel names, calls and GPU time of one eager step (torch.profiler) -> CSV."""
    if not env.cuda:
        return
    try:
        from torch.profiler import ProfilerActivity, profile
        with torch.no_grad(), profile(activities=[ProfilerActivity.CUDA]) as prof:
            step()
            env.sync()
        agg = {}
        for e in prof.events():
            if e.device_type.name != "CUDA":
                continue
            a = agg.setdefault(e.name, [0, 0.0])
            a[0] += 1
            a[1] += e.device_time_total if hasattr(e, "device_time_total") else e.cuda_time_total
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["kernel", "calls", "gpu_us_total"])
            for name, (c, us) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
                w.writerow([name[:300], c, f"{us:.2f}"])
        print(f"wrote {path} ({len(agg)} kernel names, {sum(v[0] for v in agg.values())} calls)")
    except Exception as ex:  # noqa: BLE001
        print(f"profile failed: {_err(ex)}")


# ----------------------------------------------------------------------------------------------------
# reference: launch gap, copy bandwidth
# ----------------------------------------------------------------------------------------------------
def _scaled(t: dict, n: float) -> dict:
    return {**t, "median": t["median"] / n, "p20": t["p20"] / n, "p80": t["p80"] / n}


def fam_reference(env, sink, pool):
    """The graph node time of a tiny kernel, the copy bandwidth and (v4) what one graph replay costs beyond its nodes
    (graph_replay_spin / _nospin: N x.add_(1) nodes, whole replay, with and without the spin kernel before it: the
    difference is the host-launch time v1-v3 samples included) and the gap between kernels inside a graph of HF
    modules (hf_chain_graph: per-kernel replay time of 16 x (LlamaRMSNorm + apply_rotary_pos_emb) at one row;
    hf_chain_cupti: the mean CUPTI duration of the same kernels run eagerly: the difference is the in-graph gap)."""
    x = torch.randn(1, device=env.device)
    t = time_graph(env, lambda i: x.add_(1.0), target_us=1000.0, max_calls=1000)
    sink.emit("launch", "graph_node_1elem", t, timing="graph", n_kernels=t["calls"],
              note="x.add_(1) on one element: graph gap + tiny kernel")
    n = (256 * MiB if env.cuda else 4 * MiB) // 2
    src = torch.randn(n, dtype=torch.bfloat16, device=env.device)
    dst = torch.empty_like(src)
    t = time_graph(env, lambda i: dst.copy_(src))
    sink.emit("copy", "copy_", t, timing="graph", dtype="bf16", bytes_moved=4 * n)
    del src, dst
    if env.cuda:
        for N in (1, 4, 16, 64, 256):
            g = capture_graph(env, lambda i: x.add_(1.0), N)
            for spin in (True, False):
                xs = []
                for _ in range(9):
                    if not spin:
                        env.sync()
                    xs.append(replay_us(env, g, spin))
                sink.emit("launch", "graph_replay_spin" if spin else "graph_replay_nospin", stats(xs, 1),
                          timing="graph", n_kernels=N, note="whole replay of N x.add_(1) nodes; spin: events bracket "
                          "device time only; nospin (v1-v3 timing): the host's graph launch included")
            del g
    H = 4096 if not env.smoke else 256
    xb = torch.randn((1, H), dtype=torch.bfloat16, device=env.device)
    w = torch.rand(H, dtype=torch.bfloat16, device=env.device) + 0.5
    Hq, Hkv = (32, 8) if not env.smoke else (4, 2)
    qh = torch.randn((1, Hq, 1, D), dtype=torch.bfloat16, device=env.device)
    kh = torch.randn((1, Hkv, 1, D), dtype=torch.bfloat16, device=env.device)
    cos = torch.randn((1, 1, D), dtype=torch.bfloat16, device=env.device)
    sin = torch.randn((1, 1, D), dtype=torch.bfloat16, device=env.device)

    def chain():
        for _ in range(16):
            hf_rmsnorm(xb, w)
            hf_rope(qh, kh, cos, sin)
    try:
        nk, dur = cupti_durations(env, chain) if env.cuda else (0, 0.0)
        t = time_graph(env, lambda i: chain(), target_us=1.0, reps=9, max_calls=1)
        if nk:
            sink.emit("launch", "hf_chain_graph", _scaled(t, nk), timing="graph", n_kernels=nk, batch=1,
                      note="per kernel: replay of 16 x (LlamaRMSNorm + apply_rotary_pos_emb) at one row / kernels")
            sink.emit("launch", "hf_chain_cupti", {"median": dur / nk, "p20": dur / nk, "p80": dur / nk, "reps": 1,
                                                   "calls": 1}, timing="eager", n_kernels=nk, batch=1,
                      note="mean CUPTI duration of the same kernels (one eager run under torch.profiler)")
    except Exception as ex:  # noqa: BLE001
        sink.emit("launch", "hf_chain_graph", note=f"unavailable: {_err(ex)}")


# ----------------------------------------------------------------------------------------------------
# v4: L2 bandwidth, row reductions over rows x length, small-M GEMMs (with their launch grids in fam_grids)
# ----------------------------------------------------------------------------------------------------
L2_SIZES_MIB = (1, 2, 4, 8, 12, 16, 24, 32, 40, 48, 64, 128)


def fam_l2_bw(env, sink, pool):
    """x.sum() over one fp32 buffer of S MiB read by every call (L2-resident while it fits: sum_resident) and over
    input sets rotated through >= 256 MiB (from HBM: sum_rotated), and dst.copy_(src) of S/2 MiB each way on one pair
    (copy_resident): the L2 bandwidth a full-occupancy streaming kernel reaches, and where it falls to HBM's."""
    sizes = L2_SIZES_MIB if not env.smoke else (1, 2)
    for S in sizes:
        if env.late():
            sink.emit("l2_bw", "skipped", note="deadline")
            return
        n = S * MiB // 4
        try:
            x = torch.randn(n, dtype=torch.float32, device=env.device)
            t = time_graph(env, lambda i: x.sum())
            sink.emit("l2_bw", "sum_resident", t, timing="graph", dtype="fp32", n=n, bytes_moved=S * MiB,
                      note="one buffer every call")
            nset = int(min(256, math.ceil(256 / S)))
            xs = [x] + [torch.randn(n, dtype=torch.float32, device=env.device) for _ in range(nset - 1)]
            t = time_graph(env, lambda i: xs[i % nset].sum())
            sink.emit("l2_bw", "sum_rotated", t, timing="graph", dtype="fp32", n=n, bytes_moved=S * MiB,
                      note=f"{nset} sets rotated")
            del xs
            src = x[: n // 2]
            dst = torch.empty_like(src)
            t = time_graph(env, lambda i: dst.copy_(src))
            sink.emit("l2_bw", "copy_resident", t, timing="graph", dtype="fp32", n=n // 2, bytes_moved=S * MiB,
                      note="read S/2 + write S/2 MiB, one pair every call")
            del x, src, dst
        except Exception as ex:  # noqa: BLE001
            sink.emit("l2_bw", "sum_resident", note=f"unavailable: {_err(ex)}", n=n)


REDUCE_L = (1024, 4096, 14336)
REDUCE_R = (1, 2, 4, 8, 16, 32, 64, 128, 256, 1024, 4096, 16384)


def _reduce_cases(env, R, L):
    bf, f32 = torch.bfloat16, torch.float32
    return [("amax_bf16", bf, lambda a: a.amax(dim=-1, keepdim=True)),
            ("mean_fp32", f32, lambda a: a.mean(-1, keepdim=True))]


def fam_reduce_grid(env, sink, pool):
    """Row reductions x.amax(-1) (bf16) and x.mean(-1) (fp32) over [R, L]: torch's reduce_kernel whose launch
    configuration (Reduce.cuh setReduceConfig) changes with the row count and length; inputs of <= 1 MiB stay
    L2-resident (as the activations a decode step has just written), larger ones rotate over >= 256 MiB."""
    Ls, Rs = (REDUCE_L, REDUCE_R) if not env.smoke else ((256,), (1, 8))
    for L in Ls:
        for R in Rs:
            for kern, dt, call in _reduce_cases(env, R, L):
                if env.late():
                    sink.emit("reduce_grid", "skipped", note="deadline")
                    return
                try:
                    esz = torch.tensor([], dtype=dt).element_size()
                    one = R * L * esz
                    nset = int(min(16, math.ceil(256 * MiB / one))) if one > MiB else 1
                    sets = [torch.randn((R, L), dtype=torch.float32, device=env.device).to(dt) for _ in range(nset)]
                    t = time_graph(env, lambda i, sets=sets, call=call: call(sets[i % len(sets)]))
                    sink.emit("reduce_grid", kern, t, timing="graph", dtype="bf16" if dt == torch.bfloat16 else "fp32",
                              m=R, n=L, rows=R, row_len=L, bytes_moved=one,
                              note="L2-resident" if nset == 1 else f"{nset} sets rotated")
                    del sets
                except Exception as ex:  # noqa: BLE001
                    sink.emit("reduce_grid", kern, note=f"unavailable: {_err(ex)}", rows=R, row_len=L)


SMALL_M = (1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256)
SMALL_SHAPES = [("qkv", 4096, 6144), ("o", 4096, 4096), ("kv", 4096, 1024), ("gate", 4096, 14336),
                ("down", 14336, 4096), ("70b_tp8_qkv", 8192, 1280)]


def _small_gemm_cases(env, K, N, f8):
    """(kernel, dtype, builder(M, xs, ws) -> fn(i)) of the small-M GEMM family: bf16 F.linear (nn.Linear's layout,
    W [N, K] row-major: cuBLAS TN), fp8 torch._scaled_mm tensorwise / rowwise on W^T column-major."""
    cases = [("bf16_linear", "bf16")]
    if f8 is not None and env.cuda:
        cases += [("fp8_tensorwise", "fp8"), ("fp8_rowwise", "fp8")]
    return cases


def fam_gemm_small(env, sink, pool):
    """v4: GEMMs at small M (1-256) over the projection shapes of Llama-3.1-8B (q/k/v fused and k / v alone, o, gate or
    up alone, down) and Llama-3.1-70B / TP 8 (qkv): where cuBLAS / cuBLASLt choose their kernel (tile, split-K) by M;
    the launches are recorded in fam_grids (family gemm_small_grid)."""
    shapes, ms = (SMALL_SHAPES, SMALL_M) if not env.smoke else ([("tiny", 256, 512)], (1, 8))
    f8 = getattr(torch, "float8_e4m3fn", None)
    for name, K, N in shapes:
        ws = pool.sets((N, K), want=8)
        nw = len(ws)
        w8 = []
        if f8 is not None and env.cuda:
            w8 = [(w * 0.05).to(f8).t() for w in ws]
        sb = torch.rand((1, N), dtype=torch.float32, device=env.device) * 0.01 + 0.001
        one = torch.ones((), dtype=torch.float32, device=env.device)
        for M in ms:
            if env.late():
                sink.emit("gemm_small", "skipped", note="deadline")
                return
            xs = [torch.randn((M, K), dtype=torch.bfloat16, device=env.device) for _ in range(4)]
            x8 = [(x * 0.1).to(f8) for x in xs] if w8 else []
            sa = torch.rand((M, 1), dtype=torch.float32, device=env.device) * 0.01 + 0.001
            fns = {"bf16_linear": lambda i: F.linear(xs[i % 4], ws[i % nw])}
            if w8:
                fns["fp8_tensorwise"] = lambda i: torch._scaled_mm(x8[i % 4], w8[i % nw], scale_a=one, scale_b=one,
                                                                   out_dtype=torch.bfloat16)
                fns["fp8_rowwise"] = lambda i: torch._scaled_mm(x8[i % 4], w8[i % nw], scale_a=sa, scale_b=sb,
                                                                out_dtype=torch.bfloat16)
            for kern, dt in _small_gemm_cases(env, K, N, f8):
                wb = 2 if dt == "bf16" else 1
                try:
                    t = time_graph(env, fns[kern], n_sets=4)
                    sink.emit("gemm_small", kern, t, timing="graph", dtype=dt, corner=name, m=M, n=N, k=K,
                              bytes_moved=K * N * wb + M * K * wb + 2 * M * N, flops=2 * M * N * K)
                except Exception as ex:  # noqa: BLE001
                    sink.emit("gemm_small", kern, note=f"unavailable: {_err(ex)}", dtype=dt, corner=name, m=M, n=N, k=K)
            del xs, x8
        del ws, w8


def grid_extra_calls(env):
    """v4: (label, fn, meta) of the reduction grid and the small-M GEMMs, one recorded call each (fam_grids)."""
    out = []
    Ls, Rs = (REDUCE_L, REDUCE_R) if not env.smoke else ((256,), (1, 8))
    for L in Ls:
        for R in Rs:
            for kern, dt, call in _reduce_cases(env, R, L):
                a = torch.randn((R, L), dtype=torch.float32, device=env.device).to(dt)
                out.append((f"reduce:{kern}:{R}:{L}", lambda a=a, call=call: call(a),
                            dict(family="reduce_grid", kernel=kern, m=R, n=L, dtype=str(dt).replace("torch.", ""))))
    if not env.cuda:
        return out
    f8 = getattr(torch, "float8_e4m3fn", None)
    if HAVE_TRITON and f8 is not None:   # the Triton kernels' registers / shared memory (their resident CTAs)
        for hk, B, T in (("32/8", 8, 8192), ("8/1", 1, 65536), ("64/8", 1, 32768)):
            Hq, Hkv = HEADS[hk]
            k8 = (torch.randn((B, Hkv, T, D), dtype=torch.bfloat16, device=env.device) * 0.5).to(f8)
            v8 = (torch.randn((B, Hkv, T, D), dtype=torch.bfloat16, device=env.device) * 0.5).to(f8)
            q = torch.randn((B, Hq, 1, D), dtype=torch.bfloat16, device=env.device)
            out.append((f"fp8kv:triton_splitkv:{hk}:{B}:{T}", lambda q=q, k8=k8, v8=v8: triton_splitkv(
                q, k8, v8, env.sm_count, kv_scale=2.0), dict(family="fp8kv_grid", kernel="triton_splitkv", batch=B,
                                                         heads=Hq, kv_heads=Hkv, head_dim=D, context=T, q_rows=1,
                                                         dtype="fp8")))
        for M, K in ((1, 4096), (64, 14336), (1024, 4096)):
            x = torch.randn((M, K), dtype=torch.bfloat16, device=env.device)
            out.append((f"quant_triton:{M}:{K}", lambda x=x: _quant_triton(x),
                        dict(family="gemm_grid", kernel="quant_triton", m=M, k=K, dtype="fp8")))
        for Hi, R, N, dt in ((16, 1, 8192, "fp8"), (64, 4, 32768, "fp8"), (32, 1, 8192, "bf16")):
            qi = torch.randn((R, Hi, D), dtype=torch.bfloat16, device=env.device)
            wi = torch.rand((R, Hi), dtype=torch.float32, device=env.device)
            ki = torch.randn((N, D), dtype=torch.bfloat16, device=env.device)
            ki = ki.to(f8) if dt == "fp8" else ki

            def idx(qi=qi, wi=wi, ki=ki, R=R, N=N, Hi=Hi, dt=dt):
                o = torch.empty((R, N), dtype=torch.float32, device=env.device)
                _indexer_fwd[(R, triton.cdiv(N, 64))](qi, wi, ki, o, N, Hi=Hi, D=D, BLOCK_N=64, FP8=dt == "fp8",
                                                       num_warps=4)
                return o
            out.append((f"indexer:{Hi}:{R}:{N}:{dt}", idx, dict(family="indexer_grid", kernel="triton_indexer",
                                                                m=R, heads=Hi, n=N, head_dim=D, dtype=dt)))
    one = torch.ones((), dtype=torch.float32, device=env.device)
    for name, K, N in (SMALL_SHAPES if not env.smoke else [("tiny", 256, 512)]):
        w = torch.randn((N, K), dtype=torch.bfloat16, device=env.device)
        w8 = (w * 0.05).to(f8).t() if f8 is not None else None
        sb = torch.rand((1, N), dtype=torch.float32, device=env.device) * 0.01 + 0.001
        for M in SMALL_M:
            x = torch.randn((M, K), dtype=torch.bfloat16, device=env.device)
            meta = dict(family="gemm_small_grid", corner=name, m=M, n=N, k=K)
            out.append((f"gemm_small:bf16_linear:{name}:{M}", lambda x=x, w=w: F.linear(x, w),
                        {**meta, "kernel": "bf16_linear", "dtype": "bf16"}))
            if w8 is not None:
                x8 = (x * 0.1).to(f8)
                sa = torch.rand((M, 1), dtype=torch.float32, device=env.device) * 0.01 + 0.001
                out.append((f"gemm_small:fp8_tensorwise:{name}:{M}", lambda x8=x8, w8=w8: torch._scaled_mm(
                    x8, w8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16),
                    {**meta, "kernel": "fp8_tensorwise", "dtype": "fp8"}))
                out.append((f"gemm_small:fp8_rowwise:{name}:{M}", lambda x8=x8, w8=w8, sa=sa, sb=sb: torch._scaled_mm(
                    x8, w8, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16),
                    {**meta, "kernel": "fp8_rowwise", "dtype": "fp8"}))
    return out


#: name -> (function, time budget in seconds on an H100); the order is the run order (hf_step frees the pool; the
#: families after it allocate it again). v4: the small, cheap families and the HF step first, FlexAttention last
FAMILIES = {"reference": (fam_reference, 10), "gemm_small": (fam_gemm_small, 30), "reduce_grid": (fam_reduce_grid, 20),
            "l2_bw": (fam_l2_bw, 15), "ew_kernel": (fam_ew_kernels, 25), "elementwise": (fam_elementwise, 15),
            "hf_step": (fam_hf_step, 60), "gemm": (fam_gemm, 30), "decode_attn": (fam_decode_attn, 150),
            "split_sweep": (fam_split_sweep, 20), "verify_attn": (fam_verify_attn, 50),
            "fp8kv_attn": (fam_fp8kv_attn, 35), "topk": (fam_topk, 15), "indexer": (fam_indexer, 20),
            "grids": (fam_grids, 90), "flex_attn": (fam_flex_attn, 60)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default="", help="comma-separated families: " + ",".join(FAMILIES))
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--smoke", action="store_true", help="tiny shapes (script debugging)")
    ap.add_argument("--max-minutes", type=float, default=8.3)
    args = ap.parse_args(argv)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        sys.exit("CUDA not available (use --device cpu --smoke to debug the script)")
    warnings.filterwarnings("ignore")
    try:  # FlexAttention compiles one kernel per shape: allow more recompiles than the default 8
        import importlib
        dyn = importlib.import_module("torch._dynamo")
        for name in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit"):
            if hasattr(dyn.config, name):
                setattr(dyn.config, name, 256)
    except Exception:  # noqa: BLE001
        pass
    t_start = time.time()
    env = Env(args.device, args.smoke or not args.device.startswith("cuda"), t_start + args.max_minutes * 60)
    torch.manual_seed(0)
    if env.cuda:
        torch.backends.cuda.matmul.allow_tf32 = False
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, f"regimes_{env.slug}_{env.date}.csv")
    prof = os.path.join(args.out, f"regimes_hf_profile_{env.slug}_{env.date}.csv")
    grids = os.path.join(args.out, f"regimes_grids_{env.slug}_{env.date}.csv")
    sink = Sink(path, env)
    print(f"device={env.name} sms={env.sm_count} l2={env.l2_bytes} torch={torch.__version__} triton="
          f"{sink.base['triton_version']} transformers={sink.base['transformers_version']} -> {path}", flush=True)
    pool = Pool(env, 4 * GiB if env.cuda else 64 * MiB)
    names = [n for n in args.only.split(",") if n] or list(FAMILIES)
    bad = [n for n in names if n not in FAMILIES]
    if bad:
        sys.exit(f"unknown families {bad}; known: {', '.join(FAMILIES)}")
    counts = {}
    for name in names:
        t0 = time.time()
        fn, budget = FAMILIES[name]
        env.family_deadline = t0 + budget * (1.0 if env.cuda else 10.0)
        print(f"--- {name} (budget {budget} s) ---", flush=True)
        n0 = sink.n
        try:
            with torch.no_grad():
                if name == "hf_step":
                    fam_hf_step(env, sink, pool, prof)
                elif name == "grids":
                    fam_grids(env, sink, pool, grids)
                else:
                    fn(env, sink, pool)
        except Exception as ex:  # noqa: BLE001
            traceback.print_exc()
            sink.emit(name, "error", note=f"family aborted: {_err(ex)}")
        if env.cuda:
            torch.cuda.empty_cache()
        counts[name] = (sink.n - n0, time.time() - t0)
        print(f"--- {name} done in {time.time() - t0:.1f} s ---", flush=True)
    sink.close()
    print("\nfamily        rows  seconds")
    for name, (n, sec) in counts.items():
        print(f"{name:<12} {n:5d} {sec:8.1f}")
    print(f"total {time.time() - t_start:.1f} s, {sink.n} rows -> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
