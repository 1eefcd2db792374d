"""The GPU side of the serving harness: a Llama-shaped decoder with random bf16 weights, a paged KV cache and
an executor that runs one engine step (a token-packed batch of decode rows and prefill chunks) the way
production engines do (vLLM v1's GPU model runner is the pattern):

* **One forward per step over all scheduled tokens.** The tokens of every scheduled request are packed into
  one row block ``[T, hidden]`` (decode rows contribute 1 token, prefill chunks their chunk); every weight GEMM
  runs once over the T rows. Logits are computed only for the last token of each scheduled request (vLLM's
  ``logits_indices``), then greedy argmax; the sampled ids are copied to the host every step (a sync, as in
  every engine that streams tokens).
* **Kernels.** Plain PyTorch ops with the structure of ``lab/measure.py``'s ``DecodeModel``
  (the reference step the calibrated model reproduces with ``runtime: {kernels: unfused}``): ``F.rms_norm``,
  fused QKV and gate/up GEMMs ``x @ W``, RoPE as 7 eager kernels each for q and k, KV written with
  ``index_copy_`` through a slot mapping (2 kernels), SiLU and product (2), two residual adds.
* **KV cache in slots of one arena.** Each layer's K and V live in one arena ``[tokens, kv_heads, head_dim]``;
  a request gets one contiguous slot of ``prompt + output`` tokens (first fit, rounded up to 16) when it is
  first scheduled and gives it back when it finishes or is preempted; tokens 0..15 are a null slot. (torch
  2.11's FlashAttention has no block table, so pages cannot be read in place; a slot is read in place.) The
  scheduler still does its own block accounting (its ``num_blocks`` covers the arena), so admission and
  preemption follow the simulator's policy; the slot only places the K/V.
* **Attention:** FlashAttention-2 through ``torch.ops.aten._flash_attention_forward`` in its varlen form
  (``fa_seqused``): queries packed, ``cu_seqlens_k[i]`` = the start of request i's slot, ``seqused_k[i]`` = its
  KV length after the step; one kernel per layer for the whole mixed batch, causal aligned bottom-right so a
  chunk sees its prefix, GQA native; it reads exactly the K/V each request attends to. If that form is not
  available, ``fa_gather`` copies each request's K/V into a packed buffer first (one ``index_select`` per layer
  for K and V: extra bytes, logged in the config) and runs the plain varlen kernel, eagerly. On the CPU
  (``--smoke``) ``sdpa_loop`` runs SDPA per request; its timings mean nothing.
* **CUDA graphs for decode-only steps,** one per batch size in ``capture_sizes`` (vLLM's default list: 1, 2,
  4, then multiples of 8 up to ``max_num_seqs``); a decode batch of n rows replays the graph of the smallest
  captured size >= n; padding rows write to the null slot and attend one token of it. Steps with a
  prefill chunk, and decode batches beyond the largest captured size, run eagerly.
* **KV cache size** as vLLM sizes it: ``gpu_memory_utilization`` (0.90) of the device memory, less weights,
  less the activation peak of a profiling forward of ``max_num_batched_tokens`` tokens, less a reserve for
  graphs (``ASSUMPTION``: 2 GiB, checked after capture and reported), divided by the bytes of one token.

* **Async scheduling** (``Executor.launch`` / ``wait``, driver.serve_async): a step is launched without waiting
  for the previous one; a decode row whose last token is the previous step's (still on the device) gets its input
  token from the previous step's sampled ids on the device (one ``index_select`` + ``index_copy_`` into the
  step's token buffer, indices sent with the inputs: no host round trip, as vLLM v1's GPU model runner takes
  the previous step's sampled token ids for async scheduling); every step's ids go to a pinned host buffer by a
  non-blocking copy behind its forward and the host waits on that copy's event. Host input mirrors, id buffers
  and events form a ring of ``ASYNC_RING`` so that no buffer is refilled while a queued copy may still read it.

Nothing here decides what runs: the scheduler (``simulator.engine.scheduler``, driven by ``driver.py``) does.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from sched_adapter import NULL_SLOT_TOKENS, SlotArena  # noqa: F401 - re-exported for run_server

GiB = 1 << 30

#: Llama-3.1-8B shape (simulator/models/Llama-3.1-8B.yaml, from the HF config); run_server.py reads the YAML
#: and passes the same numbers, this is the fallback when the simulator package cannot be imported.
LLAMA31_8B = dict(layers=32, hidden=4096, heads=32, kv_heads=8, head_dim=128, ffn=14336, vocab=128256,
                  rope_theta=500000.0)
#: a tiny shape for CPU smoke tests (numbers mean nothing)
TINY = dict(layers=2, hidden=256, heads=4, kv_heads=2, head_dim=64, ffn=512, vocab=1000, rope_theta=500000.0)


def vllm_capture_sizes(max_num_seqs: int) -> list[int]:
    """vLLM's default CUDA-graph capture sizes (vllm/config: [1, 2, 4] + range(8, 256, 8) + range(256, max, 16)),
    cut at max_num_seqs."""
    sizes = [1, 2, 4] + list(range(8, 256, 8)) + list(range(256, max_num_seqs + 1, 16))
    sizes = sorted({s for s in sizes if s <= max_num_seqs} | {max_num_seqs})
    return sizes


@dataclass
class StepTiming:
    path: str            # graph | eager
    padded: int          # graph batch size replayed (== n for eager)
    t_prep_end: float    # host clock when the inputs were on their way to the device
    t_launch_end: float  # host clock when the forward was enqueued (graph replayed / last eager kernel issued)
    t_end: float         # host clock when the sampled ids were on the host
    gpu_s: float         # CUDA-event span of the step on the device (H2D copy to argmax); wall span on CPU
    gpu_gap_s: float = math.nan   # async: device time from the previous step's end to this step's start
    fed: int = 0                  # async: decode rows whose input token was taken from the device


#: async scheduling: most rows a step may hold (its sampled ids live in device / pinned buffers of this size)
ASYNC_MAX_ROWS = 8192
#: async scheduling: ring of per-step buffers (host mirrors, ids, events): a step's host mirror is refilled two
#: launches later, after the host waited for it; events of three consecutive steps are alive at once
ASYNC_RING = 3


class PagedLlama:
    """Random-weight Llama-style decoder over a paged KV cache; one instance per run."""

    def __init__(self, shape: dict, device: str = "cuda", dtype=torch.bfloat16, seed: int = 0):
        self.s = dict(shape)
        self.dev = torch.device(device)
        self.cuda = self.dev.type == "cuda"
        self.dtype = dtype
        g = torch.Generator(device=self.dev)
        g.manual_seed(seed)
        s = self.s
        H, Hq, Hkv, D, Fd, V = s["hidden"], s["heads"], s["kv_heads"], s["head_dim"], s["ffn"], s["vocab"]

        def rnd(*shp, std=0.02):
            t = torch.empty(shp, dtype=dtype, device=self.dev)
            t.normal_(0.0, std, generator=g)
            return t

        self.embed = rnd(V, H)
        self.layers = []
        for _ in range(s["layers"]):
            self.layers.append(dict(
                attn_norm=1.0 + rnd(H, std=0.01), wqkv=rnd(H, (Hq + 2 * Hkv) * D), wo=rnd(Hq * D, H),
                mlp_norm=1.0 + rnd(H, std=0.01), wgu=rnd(H, 2 * Fd), wd=rnd(Fd, H)))
        self.final_norm = 1.0 + rnd(H, std=0.01)
        self.lm_head = rnd(H, V)
        self.weight_bytes = sum(t.numel() * t.element_size() for t in self._tensors())
        self.kv = None

    def _tensors(self):
        yield self.embed
        yield self.final_norm
        yield self.lm_head
        for L in self.layers:
            yield from L.values()

    # ---- KV cache ----------------------------------------------------------------------------------------------
    def token_bytes(self) -> int:
        """KV bytes of one token over all layers (K and V)."""
        s = self.s
        return s["layers"] * 2 * s["kv_heads"] * s["head_dim"] * torch.tensor([], dtype=self.dtype).element_size()

    def alloc_kv(self, arena_tokens: int, max_model_len: int) -> None:
        s = self.s
        self.arena_tokens = arena_tokens
        self.max_model_len = max_model_len
        self.kv = None
        self.kv = torch.zeros((s["layers"], 2, arena_tokens, s["kv_heads"], s["head_dim"]), dtype=self.dtype,
                              device=self.dev)
        D = s["head_dim"]
        inv = 1.0 / (s["rope_theta"] ** (torch.arange(0, D, 2, dtype=torch.float64) / D))
        ang = torch.arange(max_model_len + 1, dtype=torch.float64)[:, None] * inv[None, :]
        self.cos_t = torch.cos(ang).to(self.dtype).to(self.dev)
        self.sin_t = torch.sin(ang).to(self.dtype).to(self.dev)

    # ---- the forward -------------------------------------------------------------------------------------------
    @staticmethod
    def _norm(x, w):
        return F.rms_norm(x, (x.shape[-1],), w, 1e-5)

    @staticmethod
    def _rope(x, cos, sin):
        half = x.shape[-1] // 2
        x1, x2 = x[..., :half], x[..., half:]
        return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)

    def forward(self, tokens, positions, slots, logits_idx, attn) -> torch.Tensor:
        """tokens/positions/slots: [T] int64; logits_idx [N] int64; attn(layer, q, kc, vc) -> [T, Hq, D].
        Returns the argmax ids [N] (int64, on the device)."""
        s = self.s
        T = tokens.shape[0]
        Hq, Hkv, D = s["heads"], s["kv_heads"], s["head_dim"]
        x = self.embed.index_select(0, tokens)
        cos = self.cos_t.index_select(0, positions).unsqueeze(1)   # [T, 1, D/2]
        sin = self.sin_t.index_select(0, positions).unsqueeze(1)
        for li, L in enumerate(self.layers):
            h = self._norm(x, L["attn_norm"])
            qkv = h @ L["wqkv"]
            q, k, v = qkv.split([Hq * D, Hkv * D, Hkv * D], dim=-1)
            q = self._rope(q.view(T, Hq, D), cos, sin)
            k = self._rope(k.view(T, Hkv, D), cos, sin)
            kc = self.kv[li, 0]
            vc = self.kv[li, 1]
            kc.index_copy_(0, slots, k)
            vc.index_copy_(0, slots, v.view(T, Hkv, D))
            o = attn(li, q, kc, vc)
            x = x + o.reshape(T, Hq * D) @ L["wo"]
            h = self._norm(x, L["mlp_norm"])
            g_, u = (h @ L["wgu"]).chunk(2, dim=-1)
            x = x + (F.silu(g_) * u) @ L["wd"]
        xs = x.index_select(0, logits_idx)
        logits = (self._norm(xs, self.final_norm) @ self.lm_head).float()
        return torch.argmax(logits, dim=-1)


# ---- attention backends ------------------------------------------------------------------------------------------
def _flash(q, k, v, cu_q, cu_k, max_q, max_k, seqused=None):
    if seqused is not None:
        out = torch.ops.aten._flash_attention_forward(q, k, v, cu_q, cu_k, max_q, max_k, 0.0, True, False,
                                                      seqused_k=seqused)
    else:
        out = torch.ops.aten._flash_attention_forward(q, k, v, cu_q, cu_k, max_q, max_k, 0.0, True, False)
    return out[0]


class AttnMeta:
    """Per-step attention metadata on the device (int32 where FlashAttention wants it). fa_seqused: cu_k holds
    the slot starts (N+1 entries, the last one unused), seqused the KV lengths; fa_gather: cu_k = cumsum of
    the KV lengths over the packed gathered K/V, gather_idx the arena rows to gather."""

    def __init__(self, cu_q, cu_k, seqused, max_q, max_k, gather_idx=None):
        self.cu_q, self.cu_k, self.seqused = cu_q, cu_k, seqused
        self.max_q, self.max_k, self.gather_idx = max_q, max_k, gather_idx


def make_attn(backend: str, meta, shape: dict, host_meta=None):
    """attn(layer, q [T,Hq,D], kc/vc [arena, Hkv, D]) for one step."""
    if backend == "fa_seqused":
        def attn(li, q, kc, vc):
            return _flash(q, kc, vc, meta.cu_q, meta.cu_k, meta.max_q, meta.max_k, meta.seqused)
        return attn
    if backend == "fa_gather":
        def attn(li, q, kc, vc):
            return _flash(q, kc.index_select(0, meta.gather_idx), vc.index_select(0, meta.gather_idx), meta.cu_q,
                          meta.cu_k, meta.max_q, meta.max_k)
        return attn
    if backend == "sdpa_loop":   # CPU smoke / last resort: one SDPA per request on its slot
        cu_q, ctx, starts = host_meta

        def attn(li, q, kc, vc):
            outs = []
            for i in range(len(ctx)):
                a, b = int(cu_q[i]), int(cu_q[i + 1])
                s0, nk = int(starts[i]), int(ctx[i])
                kk = kc[s0:s0 + nk].transpose(0, 1).unsqueeze(0)
                vv = vc[s0:s0 + nk].transpose(0, 1).unsqueeze(0)
                qq = q[a:b].transpose(0, 1).unsqueeze(0)
                nq = b - a
                mask = (torch.arange(nk, device=q.device)[None, :] <=
                        (nk - nq + torch.arange(nq, device=q.device))[:, None])
                o = F.scaled_dot_product_attention(qq, kk, vv, attn_mask=mask, enable_gqa=True)
                outs.append(o[0].transpose(0, 1))
            return torch.cat(outs, 0)
        return attn
    raise ValueError(f"unknown attention backend {backend!r}")


def probe_attention(dev, shape: dict) -> tuple[str, list[str]]:
    """Pick the first attention backend that runs and matches an fp32 reference on a mixed batch whose slots
    are out of order in the arena. Returns (backend, log lines)."""
    log = []
    dev = torch.device(dev)
    if dev.type != "cuda":
        return "sdpa_loop", ["cpu: sdpa_loop (per-request SDPA; timings meaningless)"]
    Hq, Hkv, D = shape["heads"], shape["kv_heads"], shape["head_dim"]
    g = torch.Generator(device=dev)
    g.manual_seed(1)
    arena = 4096
    kc = torch.randn((arena, Hkv, D), device=dev, dtype=torch.bfloat16, generator=g)
    vc = torch.randn((arena, Hkv, D), device=dev, dtype=torch.bfloat16, generator=g)
    ctx = [300, 257, 700]          # KV length of each request after this step
    nq = [1, 1, 130]               # two decode rows and a prefill chunk
    starts = [2000, 16, 1024]      # slots out of order
    cu_q = torch.tensor(np.concatenate([[0], np.cumsum(nq)]), dtype=torch.int32, device=dev)
    cu_s = torch.tensor(starts + [starts[-1] + ctx[-1]], dtype=torch.int32, device=dev)
    cu_k = torch.tensor(np.concatenate([[0], np.cumsum(ctx)]), dtype=torch.int32, device=dev)
    seq = torch.tensor(ctx, dtype=torch.int32, device=dev)
    q = torch.randn((sum(nq), Hq, D), device=dev, dtype=torch.bfloat16, generator=g)
    ref = []
    for i in range(3):
        a, b = int(cu_q[i]), int(cu_q[i + 1])
        kk = kc[starts[i]:starts[i] + ctx[i]].float().repeat_interleave(Hq // Hkv, 1).transpose(0, 1)
        vv = vc[starts[i]:starts[i] + ctx[i]].float().repeat_interleave(Hq // Hkv, 1).transpose(0, 1)
        qq = q[a:b].float().transpose(0, 1)
        s_ = qq @ kk.transpose(1, 2) / math.sqrt(D)
        m = torch.arange(ctx[i], device=dev)[None, :] <= (ctx[i] - nq[i] + torch.arange(nq[i], device=dev))[:, None]
        s_ = s_.masked_fill(~m, float("-inf"))
        ref.append((s_.softmax(-1) @ vv).transpose(0, 1))
    ref = torch.cat(ref, 0)

    def check(name, fn):
        try:
            out = fn()
            torch.cuda.synchronize()
            err = ((out.float() - ref).norm() / ref.norm()).item()
            ok = math.isfinite(err) and err < 2e-2
            log.append(f"{name}: rel err {err:.2e} {'ok' if ok else 'WRONG'}")
            return ok
        except Exception as ex:  # noqa: BLE001 - a probe
            log.append(f"{name}: {type(ex).__name__}: {' '.join(str(ex).split())[:300]}")
            return False

    if check("fa_seqused", lambda: _flash(q, kc, vc, cu_q, cu_s, max(nq), max(ctx), seq)):
        return "fa_seqused", log
    gi = torch.cat([torch.arange(s0, s0 + c, device=dev) for s0, c in zip(starts, ctx)])
    if check("fa_gather", lambda: _flash(q, kc.index_select(0, gi), vc.index_select(0, gi), cu_q, cu_k, max(nq),
                                         max(ctx))):
        return "fa_gather", log
    return "sdpa_loop", log


# ---- the executor ------------------------------------------------------------------------------------------------
class Executor:
    """Runs steps: builds the packed inputs on the host (numpy), one H2D copy per dtype, then a graph replay
    (decode-only batches up to the largest capture size, fa_seqused only) or an eager forward.
    A step's ``block_tables[i]`` holds ``[slot_start]`` of request i (the adapter places requests)."""

    def __init__(self, model: PagedLlama, backend: str, capture_sizes: list[int], use_graphs: bool = True):
        self.m = model
        self.backend = backend
        self.cuda = model.cuda
        self.use_graphs = use_graphs and self.cuda and backend == "fa_seqused" and bool(capture_sizes)
        self.capture_sizes = sorted(capture_sizes) if self.use_graphs else []
        self.graphs: dict = {}
        self.last_token: dict = {}
        self.graph_pool_bytes = 0
        dev = model.dev
        if self.cuda:
            self.ev0 = torch.cuda.Event(enable_timing=True)
            self.ev1 = torch.cuda.Event(enable_timing=True)
        if self.use_graphs:
            B = self.capture_sizes[-1]
            self.gB = B
            # one int64 block (tokens | positions | slots | logits_idx) and one int32 block
            # (cu_q | cu_k | seqused), each filled by one H2D copy per step
            self.g64 = torch.zeros(4 * B, dtype=torch.int64, device=dev)
            self.g32 = torch.zeros(3 * B + 2, dtype=torch.int32, device=dev)
            self.h64 = torch.zeros(4 * B, dtype=torch.int64).pin_memory()
            self.h32 = torch.zeros(3 * B + 2, dtype=torch.int32).pin_memory()
            self.gout = torch.zeros(B, dtype=torch.int64, device=dev)

    # -- host-side packing ------------------------------------------------------------------------------------
    def _pack(self, st):
        m = self.m
        n, T = st.n, st.tokens
        cu_q = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(st.num_new, out=cu_q[1:])
        ctx = st.num_computed + st.num_new
        starts = np.fromiter((b[0] for b in st.block_tables), dtype=np.int64, count=n)
        req_of_tok = np.repeat(np.arange(n), st.num_new)
        pos = np.arange(T, dtype=np.int64) - cu_q[:-1][req_of_tok] + st.num_computed[req_of_tok]
        slots = starts[req_of_tok] + pos
        # prompt tokens: a deterministic hash of (request, position); decode rows feed back the last sampled id
        rid_num = np.fromiter(((hash(r) & 0xFFFF) for r in st.req_ids), dtype=np.int64, count=n)
        toks = (pos * 2654435761 + rid_num[req_of_tok] * 97) % m.s["vocab"]
        last = cu_q[1:] - 1
        lt = self.last_token
        for i, r in enumerate(st.req_ids):
            if st.num_new[i] == 1:
                v = lt.get(r)
                if v is not None:
                    toks[last[i]] = v
        return dict(n=n, T=T, cu_q=cu_q, ctx=ctx, starts=starts, pos=pos, slots=slots, toks=toks, last=last)

    # -- eager path -------------------------------------------------------------------------------------------
    def _eager(self, st, p):
        dev = self.m.dev
        n = p["n"]
        t64, t32, gidx = self._eager_inputs(p)
        t_prep_end = time.perf_counter()
        if self.cuda:
            self.ev0.record()
            d64 = t64.to(dev, non_blocking=True)
            d32 = t32.to(dev, non_blocking=True) if t32 is not None else None
        else:
            d64, d32 = t64, t32
        out = self._eager_forward(st, p, d64, d32, gidx)
        if self.cuda:
            self.ev1.record()
        t_launch_end = time.perf_counter()
        ids = out.cpu().numpy()
        t_end = time.perf_counter()
        gpu_s = self.ev0.elapsed_time(self.ev1) / 1e3 if self.cuda else t_end - t_prep_end
        return ids, StepTiming("eager", n, t_prep_end, t_launch_end, t_end, gpu_s)

    def _eager_forward(self, st, p, d64, d32, gidx):
        m, dev = self.m, self.m.dev
        n, T = p["n"], p["T"]
        toks, pos, slots, lidx = d64[:T], d64[T:2 * T], d64[2 * T:3 * T], d64[3 * T:3 * T + n]
        if self.backend == "sdpa_loop":
            attn = make_attn("sdpa_loop", None, m.s, host_meta=(p["cu_q"], p["ctx"], p["starts"]))
        else:
            meta = AttnMeta(d32[:n + 1], d32[n + 1:2 * n + 2], d32[2 * n + 2:3 * n + 2], int(st.num_new.max()),
                            int(p["ctx"].max()), gather_idx=gidx.to(dev, non_blocking=True) if gidx is not None else None)
            attn = make_attn(self.backend, meta, m.s)
        return m.forward(toks, pos, slots, lidx, attn)

    def _eager_inputs(self, p):
        n = p["n"]
        t64 = torch.from_numpy(np.concatenate([p["toks"], p["pos"], p["slots"], p["last"]]))
        t32 = gidx = None
        if self.backend == "fa_seqused":
            cu_s = np.concatenate([p["starts"], p["starts"][-1:] + p["ctx"][-1:]])
            t32 = torch.from_numpy(np.concatenate([p["cu_q"], cu_s, p["ctx"]]).astype(np.int32))
        elif self.backend == "fa_gather":
            cu_k = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(p["ctx"], out=cu_k[1:])
            t32 = torch.from_numpy(np.concatenate([p["cu_q"], cu_k, p["ctx"]]).astype(np.int32))
            ridx = np.repeat(np.arange(n), p["ctx"])
            gidx = torch.from_numpy(p["starts"][ridx] + np.arange(int(cu_k[-1])) - cu_k[:-1][ridx])
        return t64, t32, gidx

    # -- graph path -------------------------------------------------------------------------------------------
    def _graph_views(self, B):
        gB, g64, g32 = self.gB, self.g64, self.g32
        toks, pos, slots, lidx = g64[:B], g64[gB:gB + B], g64[2 * gB:2 * gB + B], g64[3 * gB:3 * gB + B]
        cu_q = g32[:B + 1]
        cu_k = g32[gB + 1:gB + 2 + B]
        seq = g32[2 * gB + 2:2 * gB + 2 + B]
        return toks, pos, slots, lidx, AttnMeta(cu_q, cu_k, seq, 1, self.m.max_model_len)

    def _fill_graph_host(self, p, B, h64=None, h32=None):
        """Write step p (n rows) into the pinned host mirror for a graph of size B (rows n..B padded: they
        write to and attend one token of the null slot)."""
        gB, n = self.gB, p["n"]
        h64 = (self.h64 if h64 is None else h64).numpy()
        h32 = (self.h32 if h32 is None else h32).numpy()
        h64[:n] = p["toks"]
        h64[n:B] = 0
        h64[gB:gB + n] = p["pos"]
        h64[gB + n:gB + B] = 0
        h64[2 * gB:2 * gB + n] = p["slots"]
        h64[2 * gB + n:2 * gB + B] = 0
        h64[3 * gB:3 * gB + B] = np.arange(B)
        h32[:B + 1] = np.arange(B + 1)
        o = gB + 1
        h32[o:o + n] = p["starts"]
        h32[o + n:o + B + 1] = 0
        o = 2 * gB + 2
        h32[o:o + n] = p["ctx"]
        h32[o + n:o + B] = 1

    def capture(self, log=print) -> float:
        """Capture one graph per capture size (warm-up forwards first). Returns seconds spent."""
        if not self.use_graphs:
            return 0.0
        t0 = time.perf_counter()
        m = self.m
        free0 = torch.cuda.mem_get_info()[0]
        self.pool = torch.cuda.graph_pool_handle()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        for B in sorted(self.capture_sizes, reverse=True):   # largest first: the pool is sized once
            toks, pos, slots, lidx, meta = self._graph_views(B)
            fake = dict(n=0, toks=np.zeros(0, np.int64), pos=np.zeros(0, np.int64), slots=np.zeros(0, np.int64),
                        starts=np.zeros(0, np.int64), ctx=np.zeros(0, np.int64))
            self._fill_graph_host(fake, B)
            self.g64.copy_(self.h64)
            self.g32.copy_(self.h32)
            attn = make_attn("fa_seqused", meta, m.s)
            with torch.cuda.stream(s):
                for _ in range(2):
                    m.forward(toks, pos, slots, lidx, attn)
            torch.cuda.current_stream().wait_stream(s)
            torch.cuda.synchronize()
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, pool=self.pool):
                out = m.forward(toks, pos, slots, lidx, attn)
                self.gout[:B].copy_(out)
            self.graphs[B] = g
        torch.cuda.synchronize()
        self.graph_pool_bytes = max(0, free0 - torch.cuda.mem_get_info()[0])
        dt = time.perf_counter() - t0
        log(f"captured {len(self.graphs)} decode graphs ({self.capture_sizes[0]}..{self.capture_sizes[-1]}) in "
            f"{dt:.1f} s, {self.graph_pool_bytes / GiB:.2f} GiB")
        return dt

    def _graph(self, p, B):
        self._fill_graph_host(p, B)
        t_prep_end = time.perf_counter()
        self.ev0.record()
        self.g64.copy_(self.h64, non_blocking=True)
        self.g32.copy_(self.h32, non_blocking=True)
        self.graphs[B].replay()
        self.ev1.record()
        t_launch_end = time.perf_counter()
        ids = self.gout[:p["n"]].cpu().numpy()
        t_end = time.perf_counter()
        return ids, StepTiming("graph", B, t_prep_end, t_launch_end, t_end, self.ev0.elapsed_time(self.ev1) / 1e3)

    # -- public -----------------------------------------------------------------------------------------------
    def graph_size_for(self, n: int):
        for B in self.capture_sizes:
            if B >= n:
                return B
        return None

    @torch.no_grad()
    def run(self, st):
        p = self._pack(st)
        B = self.graph_size_for(st.n) if (self.use_graphs and st.decode_only) else None
        if B is not None:
            ids, tm = self._graph(p, B)
        else:
            ids, tm = self._eager(st, p)
        lt = self.last_token
        for r, t in zip(st.req_ids, ids.tolist()):
            lt[r] = t
        return ids, tm

    def forget(self, req_id) -> None:
        self.last_token.pop(req_id, None)

    # -- async scheduling: launch now, collect later -----------------------------------------------------------
    def _async_setup(self):
        dev, pin = self.m.dev, self.cuda
        R = ASYNC_MAX_ROWS
        self.dprev = torch.zeros(R, dtype=torch.int64, device=dev)    # the last launched step's ids, on the device
        self.a_out = [torch.zeros(R, dtype=torch.int64, pin_memory=pin) for _ in range(ASYNC_RING)]
        self.a_feed = [torch.zeros(2 * R, dtype=torch.int64, pin_memory=pin) for _ in range(ASYNC_RING)]
        if self.use_graphs:
            self.a_h64 = [self.h64] + [torch.zeros_like(self.h64).pin_memory() for _ in range(ASYNC_RING - 1)]
            self.a_h32 = [self.h32] + [torch.zeros_like(self.h32).pin_memory() for _ in range(ASYNC_RING - 1)]
        if self.cuda:
            self.a_ev = [[torch.cuda.Event(enable_timing=True) for _ in range(3)] for _ in range(ASYNC_RING)]
        self.a_k = 0
        self.a_inflight = None     # {req_id: row} of the last launched step, until it is waited for
        self.a_last = None         # handle of the last launched step
        self.a_prevk = None        # ring slot of the step launched before (its end event gives the device gap)

    @torch.no_grad()
    def launch(self, st) -> dict:
        """Pack and launch step `st` without waiting for the step in flight; returns a handle for wait()."""
        if not hasattr(self, "a_out"):
            self._async_setup()
        k = self.a_k
        self.a_k = (k + 1) % ASYNC_RING
        p = self._pack(st)
        n = p["n"]
        if n > ASYNC_MAX_ROWS:
            raise RuntimeError(f"async step of {n} rows > ASYNC_MAX_ROWS {ASYNC_MAX_ROWS}")
        inf = self.a_inflight or {}
        dst, src = [], []
        if inf:
            for i, r in enumerate(st.req_ids):
                if st.num_new[i] == 1 and r in inf:
                    dst.append(int(p["last"][i]))
                    src.append(inf[r])
        m_ = len(dst)
        if m_:
            fb = self.a_feed[k]
            fb[:m_] = torch.as_tensor(dst, dtype=torch.int64)
            fb[m_:2 * m_] = torch.as_tensor(src, dtype=torch.int64)
        B = self.graph_size_for(st.n) if (self.use_graphs and st.decode_only) else None
        ev = self.a_ev[k] if self.cuda else None
        dev = self.m.dev
        if B is not None:
            h64, h32 = self.a_h64[k], self.a_h32[k]
            self._fill_graph_host(p, B, h64, h32)
            t_prep_end = time.perf_counter()
            ev[0].record()
            self.g64.copy_(h64, non_blocking=True)
            self.g32.copy_(h32, non_blocking=True)
            if m_:
                f = self.a_feed[k][:2 * m_].to(dev, non_blocking=True)
                self.g64.index_copy_(0, f[:m_], self.dprev.index_select(0, f[m_:]))
            self.graphs[B].replay()
            out = self.gout[:n]
            path, padded = "graph", B
        else:
            t64, t32, gidx = self._eager_inputs(p)
            t_prep_end = time.perf_counter()
            if self.cuda:
                ev[0].record()
                d64 = t64.to(dev, non_blocking=True)
                d32 = t32.to(dev, non_blocking=True) if t32 is not None else None
            else:
                d64, d32 = t64, t32
            if m_:
                f = self.a_feed[k][:2 * m_].to(dev, non_blocking=True)
                d64.index_copy_(0, f[:m_], self.dprev.index_select(0, f[m_:]))
            out = self._eager_forward(st, p, d64, d32, gidx)
            path, padded = "eager", n
        if self.cuda:
            ev[1].record()
        self.dprev[:n].copy_(out)
        self.a_out[k][:n].copy_(out, non_blocking=self.cuda)
        if self.cuda:
            ev[2].record()
        t_launch_end = time.perf_counter()
        h = {"k": k, "req_ids": list(st.req_ids), "n": n, "path": path, "padded": padded, "t_prep_end": t_prep_end,
             "t_launch_end": t_launch_end, "fed": m_, "prevk": self.a_prevk}
        self.a_prevk = k
        self.a_inflight = {r: i for i, r in enumerate(st.req_ids)}
        self.a_last = h
        return h

    def wait(self, h):
        """Wait for a launched step's ids (a blocking wait on its copy's event); returns (ids, StepTiming)."""
        k = h["k"]
        if self.cuda:
            ev = self.a_ev[k]
            ev[2].synchronize()
        t_end = time.perf_counter()
        ids = self.a_out[k][:h["n"]].numpy().copy()
        if self.cuda:
            gpu_s = ev[0].elapsed_time(ev[1]) / 1e3
            pk = h["prevk"]
            gap = self.a_ev[pk][1].elapsed_time(ev[0]) / 1e3 if pk is not None else math.nan
        else:
            gpu_s = h["t_launch_end"] - h["t_prep_end"]
            gap = math.nan
        lt = self.last_token
        for r, t in zip(h["req_ids"], ids.tolist()):
            lt[r] = t
        if self.a_last is h:      # nothing launched after it: the next step feeds from the host
            self.a_inflight = None
            self.a_last = None
        return ids, StepTiming(h["path"], h["padded"], h["t_prep_end"], h["t_launch_end"], t_end, gpu_s, gap,
                               h["fed"])
