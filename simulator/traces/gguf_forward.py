"""A dense float32 numpy forward of a Llama- or Gemma-3-architecture decoder read from a GGUF file
(simulator.traces.gguf_file), with a KV cache, for recording attention traces on a CPU.

Every architectural number comes from the file's metadata ({arch}.block_count, embedding_length,
feed_forward_length, attention.head_count / head_count_kv, attention.key_length, rope.freq_base,
rope.dimension_count, attention.layer_norm_rms_epsilon, attention.sliding_window, context_length). What the
metadata does not say is the architecture's fixed semantics, taken from llama.cpp (github.com/ggml-org/llama.cpp):

  llama   (src/models/llama.cpp; src/llama-model.cpp commit a5410f046c01d01330c8a42f13b64a211fedf2c3,
          llama_model_rope_type: LLM_ARCH_LLAMA -> LLAMA_ROPE_TYPE_NORM)
          x = embedding[token]; per layer: h = RMSNorm(x) * attn_norm; q, k, v = h Wq, h Wk, h Wv;
          RoPE on q and k rotating CONSECUTIVE pairs (x[2i], x[2i+1]) by pos * base^(-2i/n_rot) (GGUF stores
          llama's q/k rows permuted for this pairing; attention scores equal transformers' rotate-half form);
          attention softmax(q k / sqrt(head_dim)) over the causal prefix, query head h reading KV head
          h // (heads / kv_heads); x += attn Wo; x += W_down(silu(h W_gate) * h W_up) with h = RMSNorm(x) * ffn_norm;
          logits = RMSNorm(x) * output_norm . output (output.weight, or the token embedding when the file has
          none: tied embeddings).
  gemma3  (src/models/gemma3.cpp commit 569a0092b98e73bd222490441234144e52afd2ef; hyperparameters
          llama-model.cpp llama_load_hparams_gemma3; swa layers llama-hparams.cpp commit
          8b1d44b90c2a985c6eee4583cc10e6897a9ff8b8 set_swa_pattern)
          x = embedding[token] * sqrt(embedding_length); per layer: q, k, v as above with head_dim =
          attention.key_length; q and k each RMS-normalized per head (attn_q_norm, attn_k_norm); RoPE rotating
          pairs offset by n_rot/2 (LLAMA_ROPE_TYPE_NEOX); q scaled by 1/sqrt(key_length) (f_attention_scale for
          every size but 27B); sliding-window layers: every layer il with il % 6 < 5 (set_swa_pattern(6)) sees keys
          with q_pos - k_pos < attention.sliding_window (LLAMA_SWA_TYPE_STANDARD) and uses RoPE base 10000
          (rope_freq_base_train_swa); the other layers are global (causal over everything) with
          rope.freq_base; attention output RMS-normalized (post_attention_norm) before the residual add; FFN
          W_down(gelu_tanh(h W_gate) * h W_up), RMS-normalized (post_ffw_norm) before its residual add; final
          RMSNorm and the tied embedding; no final logit soft-capping (the file has no
          final_logit_softcapping key, and llama.cpp applies none for Gemma 3).
          Gemma's RMSNorm multiplies by (1 + w); llama.cpp's converter stores w + 1 in the file
          (convert_hf_to_gguf.py Gemma3Model, norm_shift 1.0), so every norm here multiplies by the stored weight.
RMSNorm(x) = x / sqrt(mean(x^2) + eps). RoPE angles are computed in float64 (ggml and transformers use float32,
a difference below 1e-3 rad at 32K positions).

This forward is checked against transformers' (the same GGUF dequantized by the same gguf-py code) by
simulator/traces/gguf_record.py's `reference_check`, whose results are recorded in traces/README.md.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from simulator.traces.requests import TraceError

#: Gemma 3 constants llama.cpp fixes in code (llama_load_hparams_gemma3): one global layer per 6, local RoPE base
GEMMA3_SWA_PATTERN = 6
GEMMA3_LOCAL_ROPE_BASE = 10000.0


@dataclass
class LMConfig:
    """The architecture of one GGUF model (module docstring). `window[l]` is None for a global layer."""

    arch: str
    name: str
    layers: int
    d_model: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    vocab: int
    eps: float
    max_context: int
    rope_base: list[float]
    rope_dims: int
    rope_style: str                 # 'norm' (consecutive pairs) | 'neox' (pairs offset by rope_dims / 2)
    window: list[int | None]
    q_scale: float
    embed_scale: float
    qk_norm: bool
    sandwich_norm: bool
    act: str                        # 'silu' | 'gelu_tanh'
    tied: bool
    params: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def global_layers(self) -> list[int]:
        return [i for i, w in enumerate(self.window) if w is None]

    @property
    def group(self) -> int:
        return self.heads // self.kv_heads

    @classmethod
    def from_gguf(cls, g) -> "LMConfig":
        f = str(g.path)

        def pint(key):
            v = g.key(key)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise TraceError(f"metadata {g.arch}.{key} must be a positive integer, got {v!r}", file=f)
            return int(v)

        L, d, H = pint("block_count"), pint("embedding_length"), pint("attention.head_count")
        Hkv = pint("attention.head_count_kv") if f"{g.arch}.attention.head_count_kv" in g.meta else H
        if H % Hkv:
            raise TraceError(f"head_count {H} is not a multiple of head_count_kv {Hkv}", file=f)
        hd = int(g.key("attention.key_length", d // H))
        if int(g.key("attention.value_length", hd)) != hd:
            raise TraceError("key_length != value_length is not supported", file=f)
        eps = float(g.key("attention.layer_norm_rms_epsilon"))
        base = float(g.key("rope.freq_base", 10000.0))
        rdim = int(g.key("rope.dimension_count", hd))
        if rdim != hd:
            raise TraceError(f"partial RoPE (rope.dimension_count {rdim} of head dim {hd}) is not supported", file=f)
        if g.key("rope.scaling.type", "none") not in ("none", None):
            raise TraceError(f"RoPE scaling {g.key('rope.scaling.type')!r} is not supported", file=f)
        emb = g.tensor_shapes.get("token_embd.weight")
        if emb is None or emb[0] != d:
            raise TraceError(f"token_embd.weight must have ggml shape [{d}, vocab], got {emb}", file=f)
        ctx = pint("context_length")
        tied = not g.has_tensor("output.weight")
        params = sum(int(np.prod(s)) for s in g.tensor_shapes.values())
        common = dict(name=str(g.meta.get("general.name", g.path.stem)), layers=L, d_model=d, heads=H, kv_heads=Hkv,
                      head_dim=hd, ffn=pint("feed_forward_length"), vocab=int(emb[1]), eps=eps, max_context=ctx,
                      rope_dims=rdim, tied=tied, params=params)
        if g.arch == "llama":
            return cls(arch="llama", rope_base=[base] * L, rope_style="norm", window=[None] * L,
                       q_scale=1.0 / math.sqrt(hd), embed_scale=1.0, qk_norm=False, sandwich_norm=False, act="silu",
                       **common)
        if g.arch == "gemma3":
            sw = g.key("attention.sliding_window", 0)
            window = [int(sw) if (sw and il % GEMMA3_SWA_PATTERN < GEMMA3_SWA_PATTERN - 1) else None
                      for il in range(L)]
            rb = [GEMMA3_LOCAL_ROPE_BASE if w is not None else base for w in window]
            if g.key("final_logit_softcapping", None) or g.key("attn_logit_softcapping", None):
                raise TraceError("logit soft-capping is not implemented (Gemma 3 has none)", file=f)
            return cls(arch="gemma3", rope_base=rb, rope_style="neox", window=window, q_scale=1.0 / math.sqrt(hd),
                       embed_scale=math.sqrt(d), qk_norm=True, sandwich_norm=True, act="gelu_tanh", **common)
        raise TraceError(f"architecture {g.arch!r} is not supported", file=f)


def _rms(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    return (x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)) * w


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


def _silu(x: np.ndarray) -> np.ndarray:
    return x / (1.0 + np.exp(-x))


class KVCache:
    """Rotated keys and values per layer: k[l] [Hkv, capacity, d]; positions 0..n-1 committed."""

    def __init__(self, cfg: LMConfig, capacity: int):
        self.k = [np.zeros((cfg.kv_heads, capacity, cfg.head_dim), np.float32) for _ in range(cfg.layers)]
        self.v = [np.zeros((cfg.kv_heads, capacity, cfg.head_dim), np.float32) for _ in range(cfg.layers)]
        self.n = 0
        self.capacity = capacity


@dataclass
class RowsOut:
    """What one forward of R rows returns: logits of the requested rows, per layer the rows' queries (rotated and
    scaled so that q . k / sqrt(head_dim) is the model's attention logit) and, for requested rows, the GQA-group
    attention (mean over a KV head's query heads) over the cache then the rows."""

    logits: np.ndarray | None
    q: list[np.ndarray | None]          # [L] of [R, H, d] (None for a skipped layer)
    probs: list[np.ndarray | None]      # [L] of [len(prob_rows), Hkv, n + R] (None for skipped layers)


class GGUFModel:
    """Weights (float32, dequantized once) and the forward (module docstring)."""

    def __init__(self, g, cfg: LMConfig | None = None):
        self.g = g
        self.cfg = cfg or LMConfig.from_gguf(g)
        c = self.cfg
        self.embd = g.tensor("token_embd.weight")                       # [V, d]
        self.out = self.embd if c.tied else g.tensor("output.weight")
        self.out_norm = g.tensor("output_norm.weight")
        self.lw = []
        for i in range(c.layers):
            p = f"blk.{i}."
            w = {k: g.tensor(p + k + ".weight") for k in ("attn_norm", "attn_q", "attn_k", "attn_v", "attn_output",
                                                           "ffn_norm", "ffn_gate", "ffn_up", "ffn_down")}
            if c.qk_norm:
                w["attn_q_norm"] = g.tensor(p + "attn_q_norm.weight")
                w["attn_k_norm"] = g.tensor(p + "attn_k_norm.weight")
            if c.sandwich_norm:
                w["post_attention_norm"] = g.tensor(p + "post_attention_norm.weight")
                w["post_ffw_norm"] = g.tensor(p + "post_ffw_norm.weight")
            want = {"attn_q": (c.heads * c.head_dim, c.d_model), "attn_k": (c.kv_heads * c.head_dim, c.d_model),
                    "attn_v": (c.kv_heads * c.head_dim, c.d_model), "attn_output": (c.d_model, c.heads * c.head_dim),
                    "ffn_gate": (c.ffn, c.d_model), "ffn_up": (c.ffn, c.d_model), "ffn_down": (c.d_model, c.ffn)}
            for k, shp in want.items():
                if w[k].shape != shp:
                    raise TraceError(f"tensor {p + k}.weight has shape {w[k].shape[::-1]} (ggml order), expected "
                                     f"{shp[::-1]} from the metadata", file=str(g.path))
            w["wq_t"] = np.ascontiguousarray(w.pop("attn_q").T)
            w["wk_t"] = np.ascontiguousarray(w.pop("attn_k").T)
            w["wv_t"] = np.ascontiguousarray(w.pop("attn_v").T)
            w["wo_t"] = np.ascontiguousarray(w.pop("attn_output").T)
            w["wg_t"] = np.ascontiguousarray(w.pop("ffn_gate").T)
            w["wu_t"] = np.ascontiguousarray(w.pop("ffn_up").T)
            w["wd_t"] = np.ascontiguousarray(w.pop("ffn_down").T)
            self.lw.append(w)
        half = c.rope_dims // 2
        self._inv = {b: b ** (-np.arange(half, dtype=np.float64) * 2.0 / c.rope_dims) for b in set(c.rope_base)}

    # ---- pieces ---------------------------------------------------------------------------------------------
    def _rope(self, x: np.ndarray, pos: np.ndarray, base: float) -> np.ndarray:
        """x [R, heads, d] rotated at positions pos [R]."""
        ang = pos.astype(np.float64)[:, None] * self._inv[base][None, :]          # [R, d/2]
        cos = np.cos(ang).astype(np.float32)[:, None, :]
        sin = np.sin(ang).astype(np.float32)[:, None, :]
        if self.cfg.rope_style == "norm":
            a, b = x[..., 0::2], x[..., 1::2]
            out = np.empty_like(x)
            out[..., 0::2] = a * cos - b * sin
            out[..., 1::2] = a * sin + b * cos
            return out
        h = x.shape[-1] // 2
        a, b = x[..., :h], x[..., h:]
        return np.concatenate([a * cos - b * sin, a * sin + b * cos], axis=-1)

    def embed(self, tokens) -> np.ndarray:
        t = np.asarray(tokens, np.int64)
        if t.size and (t.min() < 0 or t.max() >= self.cfg.vocab):
            raise TraceError(f"token id outside [0, {self.cfg.vocab})", file=str(self.g.path))
        return self.embd[t] * np.float32(self.cfg.embed_scale)

    def logits(self, x: np.ndarray) -> np.ndarray:
        return _rms(x, self.out_norm, self.cfg.eps) @ self.out.T

    # ---- forward ----------------------------------------------------------------------------------------------
    def forward(self, tokens, positions, cache: KVCache, *, anc: np.ndarray | None = None, commit: bool = False,
                skip: frozenset[int] | set[int] = frozenset(), prob_rows=(), want_q: bool = False,
                logit_rows=None, capture_q=None) -> RowsOut:
        """Run R new rows (token ids at `positions`) against the cache's n committed positions.

        anc [R, R] bool: row r attends to row c (default: causal among the rows, c <= r). commit: append the rows'
        K/V to the cache (rows must then be the next positions n..n+R-1, causal). skip: layers passed through
        (a layer-skipping draft; it reads the target's cache for the prefix, self-speculative decoding).
        prob_rows: rows whose GQA-group attention is returned. logit_rows: rows whose logits are returned (None:
        all, () none). capture_q: callable(layer, q [R, H, d]) for every computed layer."""
        c = self.cfg
        pos = np.asarray(positions, np.int64)
        R = len(pos)
        n = cache.n
        if commit and (not np.array_equal(pos, np.arange(n, n + R)) or n + R > cache.capacity):
            raise ValueError("commit needs rows at the next free positions within the cache's capacity")
        if anc is None:
            anc = np.tril(np.ones((R, R), bool))
        x = self.embed(tokens)
        G, Hkv, d = c.group, c.kv_heads, c.head_dim
        prob_rows = list(prob_rows)
        qs: list[np.ndarray | None] = [None] * c.layers
        probs: list[np.ndarray | None] = [None] * c.layers
        for li in range(c.layers):
            if li in skip:
                continue
            w = self.lw[li]
            h = _rms(x, w["attn_norm"], c.eps)
            q = (h @ w["wq_t"]).reshape(R, c.heads, d)
            k = (h @ w["wk_t"]).reshape(R, Hkv, d)
            v = (h @ w["wv_t"]).reshape(R, Hkv, d)
            if c.qk_norm:
                q = _rms(q, w["attn_q_norm"], c.eps)
                k = _rms(k, w["attn_k_norm"], c.eps)
            base = c.rope_base[li]
            q = self._rope(q, pos, base) * np.float32(c.q_scale * math.sqrt(d))   # so that q.k/sqrt(d) = the logit
            k = self._rope(k, pos, base)
            if want_q:
                qs[li] = q
            if capture_q is not None:
                capture_q(li, q)
            win = c.window[li]
            lo = 0 if win is None else max(0, int(pos.min()) - win + 1)
            lo = min(lo, n)
            Kc, Vc = cache.k[li][:, lo:n], cache.v[li][:, lo:n]                     # [Hkv, m, d]
            qg = q.reshape(R, Hkv, G, d).transpose(1, 2, 0, 3).reshape(Hkv, G * R, d) / np.float32(math.sqrt(d))
            kr = np.ascontiguousarray(k.transpose(1, 0, 2))                         # [Hkv, R, d]
            vr = np.ascontiguousarray(v.transpose(1, 0, 2))
            sc = np.matmul(qg, Kc.transpose(0, 2, 1))                               # [Hkv, G R, m]
            sr = np.matmul(qg, kr.transpose(0, 2, 1))                               # [Hkv, G R, R]
            mask_r = np.tile(anc, (G, 1))                                           # [G R, R]
            if win is not None:
                qp = np.tile(pos, G)
                kpos_c = np.arange(lo, n)
                mask_c = (qp[:, None] - kpos_c[None, :]) < win
                mask_r = mask_r & ((qp[:, None] - pos[None, :]) < win)
                sc = np.where(mask_c[None], sc, -np.inf)
            sr = np.where(mask_r[None], sr, -np.inf)
            mx = np.maximum(sc.max(axis=-1) if sc.shape[-1] else -np.inf, sr.max(axis=-1))[..., None]
            ec = np.exp(sc - mx)
            er = np.exp(sr - mx)
            den = ec.sum(-1, keepdims=True) + er.sum(-1, keepdims=True)
            o = (np.matmul(ec, Vc) + np.matmul(er, vr)) / den                        # [Hkv, G R, d]
            if prob_rows:
                pr = np.concatenate([np.zeros((Hkv, G * R, lo), np.float32), ec, er], -1) / den
                pr = pr.reshape(Hkv, G, R, n + R)[:, :, prob_rows].mean(axis=1)        # [Hkv, rows, n + R]
                probs[li] = pr.transpose(1, 0, 2)
            o = o.reshape(Hkv, G, R, d).transpose(2, 0, 1, 3).reshape(R, c.heads * d)
            a = o @ w["wo_t"]
            if c.sandwich_norm:
                a = _rms(a, w["post_attention_norm"], c.eps)
            x = x + a
            h = _rms(x, w["ffn_norm"], c.eps)
            gt = h @ w["wg_t"]
            f = ((_silu(gt) if c.act == "silu" else _gelu_tanh(gt)) * (h @ w["wu_t"])) @ w["wd_t"]
            if c.sandwich_norm:
                f = _rms(f, w["post_ffw_norm"], c.eps)
            x = x + f
            if commit:
                cache.k[li][:, n:n + R] = kr
                cache.v[li][:, n:n + R] = vr
        if commit:
            cache.n = n + R
        if logit_rows is None:
            lg = self.logits(x)
        elif len(logit_rows):
            lg = self.logits(x[list(logit_rows)])
        else:
            lg = None
        return RowsOut(lg, qs, probs)

    def prefill(self, tokens, cache: KVCache, *, chunk: int = 256, logit_positions=(), capture_q=None,
                progress=None) -> dict[int, np.ndarray]:
        """Append `tokens` to the cache in causal chunks; return {position: logits} for `logit_positions`.
        capture_q(layer, positions [R], q [R, H, d]) sees every chunk's queries."""
        want = set(int(p) for p in logit_positions)
        out: dict[int, np.ndarray] = {}
        toks = np.asarray(tokens, np.int64)
        i = 0
        while i < len(toks):
            j = min(len(toks), i + chunk)
            pos = np.arange(cache.n, cache.n + (j - i))
            rows = [r for r, p in enumerate(pos) if int(p) in want]
            cb = None if capture_q is None else (lambda li, q, pos=pos: capture_q(li, pos, q))
            r = self.forward(toks[i:j], pos, cache, commit=True, logit_rows=rows, capture_q=cb)
            for k_, rr in enumerate(rows):
                out[int(pos[rr])] = r.logits[k_]
            if progress is not None:
                progress(j - i)
            i = j
        return out
