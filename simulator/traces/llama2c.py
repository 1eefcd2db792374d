"""A numpy forward pass of llama2.c-format decoders (Karpathy's llama2.c `run.c` layout), used to record
attention traces on a CPU (traces/models/stories260K: 260K parameters, 5 layers, 8 query heads sharing 4 KV
heads, head_dim 8, 512-token context).

File layout (llama2.c `run.c` read_checkpoint / memory_map_weights; traces/models/stories260K/README.md):
seven little-endian int32 (dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len; a negative
vocab_size means an unshared classifier follows), then float32 row-major: token embedding [vocab][dim],
rms_att [L][dim], wq [L][dim][dim], wk [L][kv_dim][dim], wv [L][kv_dim][dim], wo [L][dim][dim], rms_ffn
[L][dim], w1 [L][hidden][dim], w2 [L][dim][hidden], w3 [L][hidden][dim], rms_final [dim], two legacy RoPE
tables (seq_len * head_size / 2 each, skipped), then wcls [vocab][dim] only when unshared.
Arithmetic as run.c: RMSNorm eps 1e-5, RoPE on consecutive pairs (x[2i], x[2i+1]) with theta 10000 and
frequency 1/10000^(2i/head_size), SwiGLU FFN w2(silu(w1 x) * w3 x), GQA head h uses KV head h // (n_heads /
n_kv_heads).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from simulator.traces.requests import TraceError

HEADER = 7


@dataclass
class Llama2cModel:
    dim: int
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    vocab: int
    seq_len: int
    emb: np.ndarray
    rms_att: np.ndarray
    wq: np.ndarray
    wk: np.ndarray
    wv: np.ndarray
    wo: np.ndarray
    rms_ffn: np.ndarray
    w1: np.ndarray
    w2: np.ndarray
    w3: np.ndarray
    rms_final: np.ndarray
    wcls: np.ndarray
    name: str = "llama2c"

    @property
    def head_dim(self) -> int:
        return self.dim // self.heads

    @property
    def params(self) -> int:
        n = sum(a.size for a in (self.emb, self.rms_att, self.wq, self.wk, self.wv, self.wo, self.rms_ffn, self.w1,
                                 self.w2, self.w3, self.rms_final))
        return int(n + (0 if self.wcls is self.emb else self.wcls.size))


#: largest llama2.c checkpoint read (bytes): the recorder runs these models in numpy on the CPU, so the few-MB
#: tinyllamas checkpoints (stories260K: 1 MB) are what it is for; 2 GiB is a 500M-parameter fp32 model
MAX_CHECKPOINT_BYTES = 2 * 2**30


def load_llama2c(path: str | Path, name: str | None = None) -> Llama2cModel:
    """Read a llama2.c checkpoint (legacy version-0 format); TraceError for anything malformed."""
    path = Path(path)
    f = str(path)
    from hwmodels.errors import SparsesimError
    from hwmodels.yamlio import read_bytes

    try:   # capped: a device file reports size 0 and never ends
        raw = read_bytes(path, "llama2.c checkpoint", MAX_CHECKPOINT_BYTES)
    except SparsesimError as e:
        raise TraceError(str(e).removeprefix(f"{f}: "), file=f) from None
    if len(raw) < HEADER * 4:
        raise TraceError("too short for a llama2.c header (7 int32)", file=f)
    dim, hidden, L, H, Hkv, vocab, seq = (int(x) for x in np.frombuffer(raw[:28], dtype="<i4"))
    shared = vocab > 0
    vocab = abs(vocab)
    if min(dim, hidden, L, H, Hkv, vocab, seq) < 1 or dim % H or H % Hkv or dim > 65536 or L > 1024:
        raise TraceError(f"implausible header dim={dim} hidden={hidden} layers={L} heads={H} kv_heads={Hkv} "
                         f"vocab={vocab} seq_len={seq}", file=f)
    hd = dim // H
    kv = Hkv * hd
    sizes = [("emb", (vocab, dim)), ("rms_att", (L, dim)), ("wq", (L, dim, dim)), ("wk", (L, kv, dim)),
             ("wv", (L, kv, dim)), ("wo", (L, dim, dim)), ("rms_ffn", (L, dim)), ("w1", (L, hidden, dim)),
             ("w2", (L, dim, hidden)), ("w3", (L, hidden, dim)), ("rms_final", (dim,)),
             ("rope", (seq * hd // 2 * 2,))]
    if not shared:
        sizes.append(("wcls", (vocab, dim)))
    need = sum(int(np.prod(s)) for _, s in sizes)
    data = np.frombuffer(raw, dtype="<f4", offset=28)
    if data.size != need:
        raise TraceError(f"holds {data.size} floats after the header; the header implies {need}", file=f)
    out, off = {}, 0
    for key, shape in sizes:
        n = int(np.prod(shape))
        out[key] = data[off:off + n].reshape(shape).astype(np.float32)
        off += n
    wcls = out.pop("wcls", out["emb"])
    out.pop("rope")
    return Llama2cModel(dim=dim, hidden=hidden, layers=L, heads=H, kv_heads=Hkv, vocab=vocab, seq_len=seq,
                        wcls=wcls, name=name or path.stem, **out)


def rmsnorm(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + 1e-5) * w


def rope(x: np.ndarray, pos: np.ndarray, hd: int) -> np.ndarray:
    """Rotate consecutive pairs of x [..., rows, heads, hd] at positions pos [rows] (run.c)."""
    i = np.arange(0, hd, 2)
    freq = 1.0 / (10000.0 ** (i / hd))
    ang = np.asarray(pos, dtype=np.float64)[:, None] * freq[None, :]            # [rows, hd/2]
    c = np.cos(ang).astype(np.float32)[:, None, :]
    s = np.sin(ang).astype(np.float32)[:, None, :]
    x0, x1 = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = x0 * c - x1 * s
    out[..., 1::2] = x0 * s + x1 * c
    return out


class KVCache:
    """Post-RoPE keys and values per layer: k[l] [kv_heads, T, hd]."""

    def __init__(self, m: Llama2cModel):
        self.m = m
        self.k = [np.zeros((m.kv_heads, 0, m.head_dim), np.float32) for _ in range(m.layers)]
        self.v = [np.zeros((m.kv_heads, 0, m.head_dim), np.float32) for _ in range(m.layers)]

    @property
    def length(self) -> int:
        return self.k[0].shape[1]


def forward_rows(m: Llama2cModel, cache: KVCache, tokens, parents, *, commit: bool):
    """Run R new rows. Row r is at position T + depth(r) and attends to the whole cache (T tokens) plus its
    ancestors among the rows (parents[r] = an earlier row, or -1 = directly after the cache) and itself.

    Returns (logits [R, vocab], qs) where qs[l] = post-RoPE queries [R, heads, hd] of layer l and probs[l] =
    attention probabilities [R, heads, T + R] (columns T.. are the rows; masked ones 0). With commit=True
    the rows must form a chain (parents r-1) and are appended to the cache."""
    tokens = np.asarray(tokens, dtype=np.int64)
    parents = np.asarray(parents, dtype=np.int64)
    R, T = len(tokens), cache.length
    depth = np.zeros(R, np.int64)
    anc = np.eye(R, dtype=bool)
    for r in range(R):
        p = parents[r]
        if p >= 0:
            depth[r] = depth[p] + 1
            anc[r] |= anc[p]
    pos = T + depth
    hd, H, Hkv = m.head_dim, m.heads, m.kv_heads
    G = H // Hkv
    x = m.emb[tokens].astype(np.float32)
    qs, probs = [], []
    mask = np.concatenate([np.ones((R, T), bool), anc], axis=1)                 # [R, T + R]
    for layer in range(m.layers):
        xb = rmsnorm(x, m.rms_att[layer])
        q = (xb @ m.wq[layer].T).reshape(R, H, hd)
        k = (xb @ m.wk[layer].T).reshape(R, Hkv, hd)
        v = (xb @ m.wv[layer].T).reshape(R, Hkv, hd)
        q = rope(q, pos, hd)
        k = rope(k, pos, hd)
        K = np.concatenate([cache.k[layer], k.transpose(1, 0, 2)], axis=1)      # [Hkv, T+R, hd]
        V = np.concatenate([cache.v[layer], v.transpose(1, 0, 2)], axis=1)
        Kh = np.repeat(K, G, axis=0)                                              # [H, T+R, hd]
        Vh = np.repeat(V, G, axis=0)
        s = np.einsum("rhd,htd->rht", q, Kh) / np.sqrt(hd)
        s = np.where(mask[:, None, :], s, -np.inf)
        s = s - s.max(axis=-1, keepdims=True)
        p = np.exp(s)
        p /= p.sum(axis=-1, keepdims=True)
        o = np.einsum("rht,htd->rhd", p, Vh).reshape(R, H * hd)
        x = x + o @ m.wo[layer].T
        xb = rmsnorm(x, m.rms_ffn[layer])
        h1 = xb @ m.w1[layer].T
        h3 = xb @ m.w3[layer].T
        x = x + ((h1 / (1.0 + np.exp(-h1))) * h3) @ m.w2[layer].T
        qs.append(q)
        probs.append(p)
        if commit:
            cache.k[layer] = K
            cache.v[layer] = V
    x = rmsnorm(x, m.rms_final)
    if commit and not np.array_equal(parents, np.arange(R) - 1):
        raise ValueError("only a chain of rows can be committed to the cache")
    return x @ m.wcls.T, qs, probs


def sample(logits: np.ndarray, rng: np.random.Generator, temperature: float = 1.0) -> int:
    if temperature <= 0:
        return int(np.argmax(logits))
    z = logits / temperature
    z = np.exp(z - z.max())
    return int(rng.choice(len(z), p=z / z.sum()))
