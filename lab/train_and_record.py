#!/usr/bin/env python3
"""Train a small long-context decoder (RoPE + GQA, byte-level) and a smaller draft sibling on the Python
source files of the machine's installed packages, then record attention/top-k traces at several contexts
with sparsesim's recorder. ONE command: the weights never leave the machine (they are not shipped).

    PYTHONPATH=. python3 lab/train_and_record.py --out $OUT            # the GPU run
    PYTHONPATH=. python3 lab/train_and_record.py --out /tmp/x --smoke  # CPU check, ~1 minute

What it writes into --out (names carry the date and the GPU's short name):
    codegqa_{4k,8k,16k}_<gpu>_<date>.npz   traces (simulator/traces/format.py), source "recorded"
    loss_<gpu>_<date>.csv / .png           training loss of the target and the draft (nats per byte)
    config_<gpu>_<date>.json               model and training configuration, corpus, throughput, eval loss
    (the caller tees stdout to log_<gpu>_<date>.txt)

Provenance of every choice (see also traces/README.md):
  * data: the *.py files under the interpreter's site-packages (torch, transformers, jax, numpy, ...),
    ordered by SHA-1 of their path; a file whose path hash is 0 mod 50 is held out (prompts, eval loss).
    Bytes are tokens (vocab 256): no tokenizer to ship.
  * target: d 512, 8 layers, 8 query heads sharing 2 KV heads (GQA 4:1), head_dim 64, SwiGLU 1536, RMSNorm,
    RoPE theta 1e5 (rotate-half), tied embedding: ~25M parameters. draft: d 256, 4 layers, 4 heads / 1 KV head,
    SwiGLU 768: ~3M parameters. ASSUMPTION: sizes chosen to train in ~5 minutes on one H100.
  * training: AdamW (0.9, 0.95), lr 1e-3 (draft 2e-3), weight decay 0.1, warmup 100 steps, cosine to 10 % by the
    wall-clock budget, 128K tokens per step, bf16 autocast; context 8192 for the first 85 % of the budget,
    then 16384 (a context extension, so the 16K recording is in range). Both models see the same batches.
  * recording: held-out source concatenated into prompts; decode with temperature 0.8 (ASSUMPTION) in fp32;
    every step: the policies of simulator/traces/recorder.py, a greedy chain of K = 4 draft tokens verified
    by the target (accepted length), a draft tree of branching 3/2/1 (15 nodes) verified by the target
    (NSA rows for SSV, accepted depth), the draft's attention for SpecAttn.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import site
import sys
import time
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
try:
    from simulator.traces.format import write_trace  # noqa: E402
    from simulator.traces.recorder import RecordConfig, StepRecorder  # noqa: E402
except Exception:  # noqa: BLE001 - a parallel edit elsewhere in the package must not sink a one-shot GPU run:
    # the recorder needs only numpy and hwmodels.errors.SparsesimError; stub the latter and retry
    import types

    for mod in [m for m in sys.modules if m == "hwmodels" or m.startswith(("hwmodels.", "simulator"))]:
        del sys.modules[mod]
    _hw, _err = types.ModuleType("hwmodels"), types.ModuleType("hwmodels.errors")

    class SparsesimError(Exception):
        def __init__(self, message, *, file=None, field=None):
            self.file, self.field = file, field
            super().__init__(": ".join(str(x) for x in (file, field and f"field '{field}'", message) if x))

    _err.SparsesimError = SparsesimError
    _hw.errors = _err
    _hw.__path__ = []
    sys.modules["hwmodels"], sys.modules["hwmodels.errors"] = _hw, _err
    print("note: hwmodels failed to import; using a stub SparsesimError", flush=True)
    from simulator.traces.format import write_trace  # noqa: E402
    from simulator.traces.recorder import RecordConfig, StepRecorder  # noqa: E402

DATE = "2026-11-22"


@dataclass
class ModelCfg:
    d: int
    layers: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int = 256
    theta: float = 1e5
    max_pos: int = 16384 + 256

    @property
    def hd(self) -> int:
        return self.d // self.heads


class RMSNorm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.w = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5).to(x.dtype) * self.w


class Block(nn.Module):
    def __init__(self, c: ModelCfg):
        super().__init__()
        self.n1, self.n2 = RMSNorm(c.d), RMSNorm(c.d)
        self.wq = nn.Linear(c.d, c.heads * c.hd, bias=False)
        self.wk = nn.Linear(c.d, c.kv_heads * c.hd, bias=False)
        self.wv = nn.Linear(c.d, c.kv_heads * c.hd, bias=False)
        self.wo = nn.Linear(c.heads * c.hd, c.d, bias=False)
        self.w1 = nn.Linear(c.d, c.ffn, bias=False)
        self.w3 = nn.Linear(c.d, c.ffn, bias=False)
        self.w2 = nn.Linear(c.ffn, c.d, bias=False)


class Model(nn.Module):
    def __init__(self, c: ModelCfg):
        super().__init__()
        self.c = c
        self.emb = nn.Embedding(c.vocab, c.d)
        self.blocks = nn.ModuleList(Block(c) for _ in range(c.layers))
        self.norm = RMSNorm(c.d)
        inv = 1.0 / (c.theta ** (torch.arange(0, c.hd, 2).float() / c.hd))
        ang = torch.arange(c.max_pos).float()[:, None] * inv[None, :]
        self.register_buffer("cos", torch.cat([ang.cos(), ang.cos()], -1), persistent=False)
        self.register_buffer("sin", torch.cat([ang.sin(), ang.sin()], -1), persistent=False)
        for n, p in self.named_parameters():
            if p.dim() == 2:
                nn.init.normal_(p, std=0.02 / (math.sqrt(2 * c.layers) if n.endswith(("wo.weight", "w2.weight")) else 1))

    def params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def rope(self, x, pos):
        """x [..., T, hd] at positions pos [T] (rotate-half convention)."""
        cos, sin = self.cos[pos].to(x.dtype), self.sin[pos].to(x.dtype)
        h = x.shape[-1] // 2
        rot = torch.cat([-x[..., h:], x[..., :h]], -1)
        return x * cos + rot * sin

    def forward(self, idx):
        """Training forward: idx [B, T] -> logits [B, T, vocab] (causal, flash SDPA)."""
        c = self.c
        B, T = idx.shape
        pos = torch.arange(T, device=idx.device)
        x = self.emb(idx)
        G = c.heads // c.kv_heads
        for b in self.blocks:
            h = b.n1(x)
            q = b.wq(h).view(B, T, c.heads, c.hd).transpose(1, 2)
            k = b.wk(h).view(B, T, c.kv_heads, c.hd).transpose(1, 2)
            v = b.wv(h).view(B, T, c.kv_heads, c.hd).transpose(1, 2)
            q, k = self.rope(q, pos), self.rope(k, pos)
            k, v = k.repeat_interleave(G, 1), v.repeat_interleave(G, 1)
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + b.wo(o.transpose(1, 2).reshape(B, T, c.d))
            h = b.n2(x)
            x = x + b.w2(F.silu(b.w1(h)) * b.w3(h))
        return F.linear(self.norm(x), self.emb.weight)


class Cache:
    def __init__(self, m: Model, T: int, device):
        c = m.c
        self.k = torch.zeros(c.layers, c.kv_heads, T, c.hd, device=device)
        self.v = torch.zeros_like(self.k)
        self.n = 0


@torch.no_grad()
def prefill(m: Model, cache: Cache, tokens: torch.Tensor, obs: int):
    """Fill the cache with the prompt; return (last logits [vocab], SnapKV votes [L, Hkv, P]): the summed
    attention of the last `obs` prompt tokens over the prompt (causal), per KV head (group-summed)."""
    c = m.c
    P = len(tokens)
    G = c.heads // c.kv_heads
    pos = torch.arange(P, device=tokens.device)
    x = m.emb(tokens)[None]
    votes = torch.zeros(c.layers, c.kv_heads, P, device=tokens.device)
    W = min(obs, P)
    for i, b in enumerate(m.blocks):
        h = b.n1(x)
        q = m.rope(b.wq(h).view(1, P, c.heads, c.hd).transpose(1, 2), pos)
        k = m.rope(b.wk(h).view(1, P, c.kv_heads, c.hd).transpose(1, 2), pos)
        v = b.wv(h).view(1, P, c.kv_heads, c.hd).transpose(1, 2)
        cache.k[i, :, :P], cache.v[i, :, :P] = k[0], v[0]
        o = F.scaled_dot_product_attention(q, k.repeat_interleave(G, 1), v.repeat_interleave(G, 1), is_causal=True)
        qo = q[0, :, P - W:]                                                         # [H, W, hd]
        s = (qo.reshape(c.kv_heads, G * W, c.hd) @ k[0].transpose(1, 2)) / math.sqrt(c.hd)   # [Hkv, G*W, P]
        allowed = torch.arange(P, device=s.device)[None, :] <= torch.arange(P - W, P, device=s.device)[:, None]
        s = s.view(c.kv_heads, G, W, P).masked_fill(~allowed, float("-inf"))
        votes[i] = s.softmax(-1).sum((1, 2))
        x = x + b.wo(o.transpose(1, 2).reshape(1, P, c.d))
        h = b.n2(x)
        x = x + b.w2(F.silu(b.w1(h)) * b.w3(h))
    cache.n = P
    return F.linear(m.norm(x[0, -1]), m.emb.weight), votes


@torch.no_grad()
def rows(m: Model, cache: Cache, tokens: torch.Tensor, parents: list[int], commit: bool, want_probs=False):
    """R new rows after the cache; row r attends to the cache and to its ancestors (parents, -1 = the cache's
    end). Returns (logits [R, vocab], qs [L] of [R, Hkv, G, hd], probs [L] of [Hkv, G, R, n+R] or None)."""
    c = m.c
    R, n = len(tokens), cache.n
    G = c.heads // c.kv_heads
    depth = [0] * R
    anc = torch.eye(R, dtype=torch.bool)
    for r, p in enumerate(parents):
        if p >= 0:
            depth[r] = depth[p] + 1
            anc[r] |= anc[p]
    dev = tokens.device
    pos = torch.tensor(depth, device=dev) + n
    mask = torch.cat([torch.ones(R, n, dtype=torch.bool), anc], 1).to(dev)          # [R, n+R]
    x = m.emb(tokens)
    qs, probs = [], []
    for i, b in enumerate(m.blocks):
        h = b.n1(x)
        q = m.rope(b.wq(h).view(R, c.heads, c.hd).transpose(0, 1), pos)           # [H, R, hd]
        k = m.rope(b.wk(h).view(R, c.kv_heads, c.hd).transpose(0, 1), pos)        # [Hkv, R, hd]
        v = b.wv(h).view(R, c.kv_heads, c.hd).transpose(0, 1)
        K = torch.cat([cache.k[i, :, :n], k], 1)
        V = torch.cat([cache.v[i, :, :n], v], 1)
        qg = q.view(c.kv_heads, G, R, c.hd)
        s = (qg.reshape(c.kv_heads, G * R, c.hd) @ K.transpose(1, 2)).view(c.kv_heads, G, R, n + R) / math.sqrt(c.hd)
        p = s.masked_fill(~mask, float("-inf")).softmax(-1)
        o = (p.view(c.kv_heads, G * R, n + R) @ V).view(c.kv_heads, G, R, c.hd)
        x = x + b.wo(o.permute(2, 0, 1, 3).reshape(R, c.d))
        h = b.n2(x)
        x = x + b.w2(F.silu(b.w1(h)) * b.w3(h))
        qs.append(qg.permute(2, 0, 1, 3))                                           # [R, Hkv, G, hd]
        if want_probs:
            probs.append(p)
        if commit:
            cache.k[i, :, n:n + R], cache.v[i, :, n:n + R] = k, v
    if commit:
        cache.n = n + R
    return F.linear(m.norm(x), m.emb.weight), qs, (probs if want_probs else None)


def nsa_imp(q, K, block):
    """q [R, Hkv, G, hd], K [Hkv, T, hd] -> [R, Hkv, T // block] (recorder.nsa_importance in torch)."""
    Hkv, T, hd = K.shape
    nbc = T // block
    if nbc == 0:
        return torch.zeros(q.shape[0], Hkv, 0, device=K.device)
    Kc = K[:, :nbc * block].view(Hkv, nbc, block, hd).mean(2)
    s = torch.einsum("rkgd,kbd->rkgb", q, Kc) / math.sqrt(hd)
    return s.softmax(-1).sum(2)


def page_sc(q, K, page):
    """q [1, Hkv, G, hd], K [Hkv, T, hd] -> [Hkv, ceil(T/page)] (recorder.page_scores in torch)."""
    Hkv, T, hd = K.shape
    npg = -(-T // page)
    pad = npg * page - T
    Kp = torch.cat([K, K[:, -1:].expand(Hkv, pad, hd)], 1) if pad else K
    Kp = Kp.view(Hkv, npg, page, hd)
    kmax, kmin = Kp.amax(2), Kp.amin(2)
    qq = q[0][:, :, None, :]                                                          # [Hkv, G, 1, hd]
    s = torch.maximum(qq * kmax[:, None], qq * kmin[:, None]).sum(-1)                # [Hkv, G, npg]
    return s.amax(1)


# ---- corpus ---------------------------------------------------------------------------------------------
def corpus(max_bytes: int, time_budget: float, log):
    roots = []
    for p in list(site.getsitepackages()) + [p for p in sys.path if p.endswith("site-packages")]:
        if os.path.isdir(p) and p not in roots:
            roots.append(p)
    files = []
    for r in roots:
        for dp, _, fs in os.walk(r):
            files += [os.path.join(dp, f) for f in fs if f.endswith(".py")]
    files = sorted(set(files), key=lambda f: hashlib.sha1(f.encode()).hexdigest())
    train, held = [], []
    nb = nh = 0
    t0 = time.time()
    for f in files:
        if nb >= max_bytes or time.time() - t0 > time_budget:
            break
        try:
            with open(f, "rb") as fh:
                data = fh.read(2_000_000)
        except OSError:
            continue
        rel = os.path.relpath(f, roots[0]).encode()
        chunk = b"# file: " + rel + b"\n" + data + b"\n\n"
        if int(hashlib.sha1(f.encode()).hexdigest(), 16) % 50 == 0:
            held.append(chunk)
            nh += len(chunk)
        else:
            train.append(chunk)
            nb += len(chunk)
    log(f"corpus: {len(files)} .py files under {roots}; read {len(train)} train files ({nb / 1e6:.1f} MB), "
        f"{len(held)} held-out ({nh / 1e6:.1f} MB) in {time.time() - t0:.1f} s")
    return b"".join(train), b"".join(held), {"roots": roots, "files_seen": len(files), "train_files": len(train),
                                               "train_bytes": nb, "heldout_files": len(held), "heldout_bytes": nh}


# ---- training -------------------------------------------------------------------------------------------
def train(models, data, args, log, dev):
    opts = [torch.optim.AdamW(m.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=0.1,
                              **({"fused": True} if dev.type == "cuda" else {})) for m, lr in models]
    N = len(data)
    hist = []
    t0 = time.time()
    step = 0
    tokens = 0
    while True:
        el = time.time() - t0
        if el >= args.train_s:
            break
        frac = el / args.train_s
        T = args.ctx if frac < args.ext_frac else args.ctx_ext
        B = max(1, args.tokens_per_step // T)
        idx = torch.randint(0, N - T - 1, (B,), device=dev)
        seq = data[idx[:, None] + torch.arange(T + 1, device=dev)[None, :]].long()
        x, y = seq[:, :-1], seq[:, 1:]
        warm = min(1.0, (step + 1) / args.warmup)
        decay = 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, frac)))
        losses = []
        for (m, lr), opt in zip(models, opts):
            for g in opt.param_groups:
                g["lr"] = lr * warm * decay
            with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=dev.type == "cuda"):
                logits = m(x)
            loss = F.cross_entropy(logits.float().view(-1, logits.shape[-1]), y.reshape(-1))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            losses.append(loss.detach())
        tokens += B * T
        step += 1
        if step % args.log_every == 0 or step == 1:
            lv = [float(v) for v in losses]
            el = time.time() - t0
            hist.append({"step": step, "elapsed_s": round(el, 2), "tokens": tokens, "context": T,
                         "loss_target": lv[0], "loss_draft": lv[1], "lr": models[0][1] * warm * decay,
                         "tokens_per_s": tokens / max(el, 1e-9)})
            log(f"step {step:5d}  {el:6.1f}s  ctx {T}  tokens {tokens / 1e6:7.1f}M  loss {lv[0]:.4f} / draft {lv[1]:.4f}"
                f"  ({tokens / max(el, 1e-9) / 1e3:.0f}K tok/s)")
    return hist, step, tokens, time.time() - t0


@torch.no_grad()
def eval_loss(m, held, T, batches, dev):
    N = len(held)
    if N < T + 2:
        return float("nan")
    g = torch.Generator(device="cpu").manual_seed(0)
    tot = 0.0
    for _ in range(batches):
        i = int(torch.randint(0, N - T - 1, (1,), generator=g))
        seq = held[i:i + T + 1].long()[None]
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=dev.type == "cuda"):
            lg = m(seq[:, :-1])
        tot += float(F.cross_entropy(lg.float().view(-1, lg.shape[-1]), seq[0, 1:]))
    return tot / batches


# ---- recording ------------------------------------------------------------------------------------------
TREE = (-1, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 5, 6, 7, 8, 9)   # root + 3/2/1 tree (15 nodes)
CHAIN_K = 4


def rec_config(N: int, smoke: bool) -> RecordConfig:
    """Policy parameters at context N (traces/README.md): k tiers N/128, N/32, N/8; NSA l' 64, n 16, 1 initial +
    2 local blocks (NSA paper defaults, SSV's 8K setting); LServe N_L 16 / N_P 64 at a budget of N/16 (LServe
    Table 6: 4096 of 64K); SnapKV window 32, pool 7 (SnapKV defaults), budgets P/16..P/4, recent P/16;
    StreamingLLM 4 sinks + N/8 window; GVR rows every 32 steps (k = N/8, C = 3k: at 16K exactly GVR's 2048 /
    6144)."""
    P = N - 64
    blk, nl, npg = (64, 16, 64) if not smoke else (16, 4, 16)
    return RecordConfig(topk_tiers=(N // 128, N // 32, N // 8), nsa_block=blk, nsa_top_n=16, nsa_initial=1,
                        nsa_local=2, page_logical=nl, page_physical=npg, page_budget=N // 16, sink=4, window=N // 8,
                        snap_obs=32, snap_pool=7, snap_budgets=(P // 16, P // 8, P // 4), snap_recent=P // 16,
                        step_lags=16, layer_lags=4, gvr_every=32 if not smoke else 4, gvr_max_steps=2,
                        local_tokens=64, sink_tokens=4, tree_parent=TREE, chain_k=CHAIN_K)


def _tree_tokens(draft, dcache, dlogits):
    """Draft tree 3/2/1 from the draft's next-token logits: (tokens [15], parents, cumulative log-probs)."""
    toks, parents, score = [], [], []
    level = [(-1, dlogits, 0.0)]
    for b in (3, 2, 1):
        new = []
        for par, lg, s0 in level:
            lp = lg.float().log_softmax(-1)
            v, ix = lp.topk(b)
            for t, lv in zip(ix.tolist(), v.tolist()):
                toks.append(t)
                parents.append(par)
                score.append(s0 + lv)
                new.append(len(toks) - 1)
        if b != 1:
            tl, _, _ = rows(draft, dcache, torch.tensor(toks, device=dlogits.device), parents, commit=False)
            level = [(i, tl[i], score[i]) for i in new]
    return toks, parents, score


@torch.no_grad()
def record(target, draft, held: bytes, N: int, seqs: int, steps: int, args, dev, log, name: str, tinfo, dinfo):
    cfg = rec_config(N, args.smoke)
    P = N - steps
    c = target.c
    meta_t = {"name": "codegqa-25M" if not args.smoke else "codegqa-smoke", "layers": c.layers, "heads": c.heads,
              "kv_heads": c.kv_heads, "head_dim": c.hd, "params": target.params(), "max_context": args.ctx_ext,
              "notes": tinfo}
    dc = draft.c
    meta_d = {"name": "codegqa-draft", "layers": dc.layers, "heads": dc.heads, "kv_heads": dc.kv_heads,
              "head_dim": dc.hd, "params": draft.params(), "notes": dinfo}
    rec = StepRecorder(cfg, meta_t, meta_d)
    rng = np.random.default_rng(args.seed + N)
    gen = torch.Generator(device=dev).manual_seed(args.seed + N)
    accs = []
    t0 = time.time()
    for sq in range(seqs):
        start = int(rng.integers(0, max(1, len(held) - P - 1)))
        prompt = torch.tensor(np.frombuffer(held[start:start + P], dtype=np.uint8).astype(np.int64), device=dev)
        if len(prompt) < P:
            raise RuntimeError(f"held-out corpus too small for a {P}-token prompt")
        tc, dcch = Cache(target, N + 32, dev), Cache(draft, N + 32, dev)
        tl, votes = prefill(target, tc, prompt[:-1], cfg.snap_obs)
        dl, _ = prefill(draft, dcch, prompt[:-1], cfg.snap_obs)
        rec.begin_sequence(P, torch.cat([votes, torch.zeros_like(votes[..., :1])], -1).cpu().numpy())
        tok = prompt[-1:]
        for _ in range(steps):
            lg, qs, pr = rows(target, tc, tok, [-1], commit=True, want_probs=True)
            dlg, _, dpr = rows(draft, dcch, tok, [-1], commit=True, want_probs=True)
            T = tc.n
            probs = torch.stack([p[:, :, 0].mean(1) for p in pr])                     # [L, Hkv, T]
            dprobs = torch.stack([p[:, :, 0].mean(1) for p in dpr])                   # [Ld, Hkvd, T]
            nsa = torch.stack([nsa_imp(q, tc.k[i, :, :T], cfg.nsa_block)[0] for i, q in enumerate(qs)])
            pages = torch.stack([page_sc(q, tc.k[i, :, :T], cfg.page_logical) for i, q in enumerate(qs)])
            # acceptance: greedy chain of K draft tokens, verified greedily by the target
            a0 = int(lg[0].argmax())
            chain = [int(dlg[0].argmax())]
            for _ in range(CHAIN_K - 1):
                l2, _, _ = rows(draft, dcch, torch.tensor(chain[-1:], device=dev), [-1], commit=True)
                chain.append(int(l2[0].argmax()))
            dcch.n -= CHAIN_K - 1
            vl, _, _ = rows(target, tc, torch.tensor(chain, device=dev), list(range(-1, CHAIN_K - 1)), commit=False)
            want = [a0] + vl.argmax(-1).tolist()
            acc = 0
            while acc < CHAIN_K and chain[acc] == want[acc]:
                acc += 1
            # draft tree 3/2/1, verified by the target: NSA rows (SSV) and accepted depth
            toks, parents, score = _tree_tokens(draft, dcch, dlg[0])
            tlg, tq, _ = rows(target, tc, torch.tensor(toks, device=dev), parents, commit=False)
            tree = torch.stack([torch.cat([nsa[i][None], nsa_imp(tq[i], tc.k[i, :, :T], cfg.nsa_block)], 0)
                                for i in range(c.layers)])                             # [L, Q, Hkv, nbc]
            targ = tlg.argmax(-1).tolist()
            depth, node, cur = 0, -1, a0
            while True:
                kids = [i for i, p in enumerate(parents) if p == node and toks[i] == cur]
                if not kids:
                    break
                node = kids[0]
                depth += 1
                cur = targ[node]
            rec.step(probs.double().cpu().numpy(), nsa.double().cpu().numpy(), pages.double().cpu().numpy(),
                     tree_nsa_imp=tree.double().cpu().numpy(), tree_score=np.array([0.0] + score),
                     draft_probs=dprobs.double().cpu().numpy(), accepted=acc, tree_accepted=depth)
            accs.append(acc)
            tok = torch.multinomial((lg[0].float() / args.temperature).softmax(-1), 1, generator=gen)
    log(f"recorded {name}: {seqs} x {steps} steps at {N} tokens in {time.time() - t0:.1f} s; mean accepted "
        f"{np.mean(accs):.2f} of {CHAIN_K}")
    tr = rec.finish(name=name, source="recorded", script="lab/train_and_record.py", seed=args.seed,
                    how=(f"codegqa target ({target.params():,} parameters) and draft ({draft.params():,}) trained "
                         f"{args.train_s:.0f} s on site-packages Python source (bytes), recorded {seqs} held-out "
                         f"prompts of {P} bytes + {steps} decode steps at temperature {args.temperature}; chain "
                         f"K={CHAIN_K} and tree 3/2/1 drafted by the draft, verified greedily by the target"),
                    provenance=("trained and recorded in one run by lab/train_and_record.py on "
                                f"{args.device_name} on {DATE}; data: the machine's installed Python packages' "
                                "source (their own licenses; only attention indices and statistics are shipped, no "
                                "text); weights not kept"), device=args.device_name, date=DATE)
    return tr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--smoke", action="store_true", help="tiny CPU-sized run of every code path")
    ap.add_argument("--check", action="store_true", help="CPU: a tiny model through the REAL recording settings "
                                                         "(4K and 8K contexts, a few steps)")
    ap.add_argument("--train-s", type=float, default=300.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    dev = torch.device("cuda" if torch.cuda.is_available() and not (args.smoke or args.check) else "cpu")
    args.device_name = torch.cuda.get_device_name(0) if dev.type == "cuda" else "cpu"
    gpu = "h100" if "H100" in args.device_name else "h200" if "H200" in args.device_name else \
        ("cpu" if dev.type == "cpu" else args.device_name.split()[-1].lower())
    T0 = time.time()

    def log(msg):
        print(f"[{time.time() - T0:7.1f}s] {msg}", flush=True)

    torch.manual_seed(args.seed)
    if args.smoke:
        tcfg = ModelCfg(d=64, layers=3, heads=4, kv_heads=2, ffn=128, max_pos=1024 + 256)
        dcfg = ModelCfg(d=32, layers=2, heads=2, kv_heads=1, ffn=64, max_pos=1024 + 256)
        args.ctx, args.ctx_ext, args.ext_frac = 256, 512, 0.7
        args.tokens_per_step, args.warmup, args.log_every = 4096, 5, 5
        args.train_s = min(args.train_s, 20.0)
        contexts = [(256, 1, 12), (512, 1, 12)]
        max_bytes, read_s = 3_000_000, 20
    elif args.check:
        tcfg = ModelCfg(d=64, layers=8, heads=8, kv_heads=2, ffn=128)
        dcfg = ModelCfg(d=32, layers=4, heads=4, kv_heads=1, ffn=64)
        args.ctx, args.ctx_ext, args.ext_frac = 256, 512, 0.7
        args.tokens_per_step, args.warmup, args.log_every = 4096, 5, 5
        args.train_s = min(args.train_s, 5.0)
        contexts = [(4096, 1, 40), (8192, 2, 3)]
        max_bytes, read_s = 20_000_000, 20
    else:
        tcfg = ModelCfg(d=512, layers=8, heads=8, kv_heads=2, ffn=1536)
        dcfg = ModelCfg(d=256, layers=4, heads=4, kv_heads=1, ffn=768)
        args.ctx, args.ctx_ext, args.ext_frac = 8192, 16384, 0.85
        args.tokens_per_step, args.warmup, args.log_every = 131072, 100, 25
        contexts = [(4096, 2, 128), (8192, 2, 96), (16384, 2, 64)]
        max_bytes, read_s = 600_000_000, 45
    args.temperature = 0.8
    log(f"device {args.device_name}; torch {torch.__version__}; numpy {np.__version__}")
    train_b, held_b, cinfo = corpus(max_bytes, read_s, log)
    data = torch.tensor(np.frombuffer(train_b, dtype=np.uint8), device=dev)
    held = torch.tensor(np.frombuffer(held_b, dtype=np.uint8), device=dev)
    target, draft = Model(tcfg).to(dev), Model(dcfg).to(dev)
    log(f"target {target.params():,} parameters, draft {draft.params():,}")
    hist, steps, tokens, train_s = train([(target, 1e-3), (draft, 2e-3)], data, args, log, dev)
    ev = {}
    for T in (args.ctx, args.ctx_ext):
        ev[f"target_{T}"] = eval_loss(target, held, T, 4, dev)
        ev[f"draft_{T}"] = eval_loss(draft, held, T, 4, dev)
    log(f"trained {steps} steps, {tokens / 1e6:.1f}M tokens in {train_s:.0f} s; held-out loss (nats/byte) {ev}")
    tag = f"{gpu}_{DATE}"
    import csv

    with open(out / f"loss_{tag}.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(hist[0]))
        w.writeheader()
        w.writerows(hist)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 4))
        ax.plot([h["tokens"] / 1e6 for h in hist], [h["loss_target"] for h in hist], label=f"target ({target.params() / 1e6:.1f}M)")
        ax.plot([h["tokens"] / 1e6 for h in hist], [h["loss_draft"] for h in hist], label=f"draft ({draft.params() / 1e6:.1f}M)")
        ext = [h["tokens"] / 1e6 for h in hist if h["context"] == args.ctx_ext]
        if ext:
            ax.axvline(ext[0], color="grey", ls=":", label=f"context {args.ctx} -> {args.ctx_ext}")
        ax.set(xlabel="training tokens (M bytes)", ylabel="loss (nats / byte)", ylim=(0, 4),
               title=f"codegqa on site-packages Python source, {args.device_name}")
        ax.legend()
        fig.tight_layout()
        fig.savefig(out / f"loss_{tag}.png", dpi=110)
        plt.close(fig)
    except Exception as e:  # noqa: BLE001 - a missing plot must not cost the traces
        log(f"loss plot failed: {e}")
    target.float().eval()
    draft.float().eval()
    tinfo = (f"byte-level RoPE+GQA decoder d{tcfg.d} L{tcfg.layers} H{tcfg.heads}/{tcfg.kv_heads}, trained {train_s:.0f} s "
             f"({tokens / 1e6:.0f}M bytes) on site-packages Python source; held-out loss {ev.get(f'target_{args.ctx}', float('nan')):.3f} nats/byte")
    dinfo = f"d{dcfg.d} L{dcfg.layers} H{dcfg.heads}/{dcfg.kv_heads}, trained on the same batches"
    conf = {"date": DATE, "device": args.device_name, "torch": torch.__version__, "target": asdict(tcfg),
            "draft": asdict(dcfg), "target_params": target.params(), "draft_params": draft.params(),
            "train": {"seconds": train_s, "steps": steps, "tokens": tokens, "ctx": args.ctx, "ctx_ext": args.ctx_ext,
                      "ext_frac": args.ext_frac, "tokens_per_step": args.tokens_per_step, "lr": [1e-3, 2e-3],
                      "warmup": args.warmup, "betas": [0.9, 0.95], "weight_decay": 0.1, "clip": 1.0},
            "eval_loss_nats_per_byte": ev, "corpus": cinfo, "contexts": contexts, "temperature": args.temperature,
            "seed": args.seed, "traces": {}}
    summary = []
    for N, seqs, st in contexts:
        name = f"codegqa_{N // 1024}k_{tag}" if N >= 1024 else f"codegqa_{N}_{tag}"
        try:
            tr = record(target, draft, held_b, N, seqs, st, args, dev, log, name, tinfo, dinfo)
            p = write_trace(out / f"{name}.npz", tr)
            conf["traces"][name] = {"bytes": p.stat().st_size, "steps": tr.steps}
            acc = tr.accepted
            summary.append((name, tr.steps, p.stat().st_size / 1e6, float(np.mean(acc)) if acc is not None else float("nan")))
            log(f"wrote {p} ({p.stat().st_size / 1e6:.2f} MB)")
        except Exception:  # noqa: BLE001 - keep the other contexts
            log(f"recording at {N} FAILED:\n{traceback.format_exc()}")
        with open(out / f"config_{tag}.json", "w") as fh:
            json.dump(conf, fh, indent=1)
    log("summary: trace, steps, MB, mean accepted of 4")
    for row in summary:
        print(f"  {row[0]:<32} {row[1]:5d} {row[2]:7.2f} {row[3]:5.2f}")
    print(f"train {train_s:.0f} s, {tokens / 1e6:.0f}M tokens, eval {ev}; total {time.time() - T0:.0f} s")


if __name__ == "__main__":
    main()
