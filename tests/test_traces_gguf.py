"""The GGUF path of the trace recorder: the reader against tiny GGUF files written here with gguf-py's writer, the
tokenizers on small vocabularies, the forward on tiny random models (against a plain per-token reference, KV-cache
consistency, tree rows, the sliding window), a tiny end-to-end recording, and every bad input (one line, exit 2).
Skipped when the optional `gguf` package is not installed (pip install 'sparsesim[record]')."""
from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")
pytest.importorskip("regex")

from simulator.traces.gguf_file import open_gguf  # noqa: E402
from simulator.traces.gguf_forward import GGUFModel, KVCache  # noqa: E402
from simulator.traces.gguf_tokenizer import GGUFTokenizer, byte_unicode_table  # noqa: E402
from simulator.traces.requests import TraceError  # noqa: E402

QT = gguf.GGMLQuantizationType
ROOT = Path(__file__).resolve().parents[1]


# ---- tiny GGUF writers -------------------------------------------------------------------------------------------
def _bpe_vocab():
    b2u = byte_unicode_table()
    toks = [b2u[b] for b in range(256)]
    merges = ["Ġ t", "h e", "Ġt he", "i n", "Ġ a"]
    toks += ["Ġt", "he", "Ġthe", "in", "Ġa", "<|endoftext|>"]
    ttype = [1] * (len(toks) - 1) + [3]
    return toks, ttype, merges


def _spm_vocab():
    toks = ["<pad>", "<eos>", "<bos>", "<unk>"] + [f"<0x{b:02X}>" for b in range(256)]
    pieces = {"▁": -1.0, "t": -2.0, "h": -2.0, "e": -2.0, "c": -2.0, "a": -2.0, "▁t": -3.0, "he": -4.0,
              "▁the": -5.0, "at": -6.0, "▁c": -7.0, "▁cat": -8.0, "  ": 0.0}
    toks += list(pieces)
    scores = [-1000.0] * 4 + [0.0] * 256 + list(pieces.values())
    ttype = [3, 3, 3, 2] + [6] * 256 + [1] * (len(pieces) - 1) + [4]
    return toks, scores, ttype


def write_tiny(path: Path, arch: str = "llama", *, layers: int = 2, d: int = 32, heads: int = 4, kv: int = 2,
               hd: int = 8, ffn: int = 64, ctx: int = 512, window: int = 4, seed: int = 0, quant: str = "F32",
               extra_type=None) -> dict[str, np.ndarray]:
    """A tiny random model in GGUF; returns the float32 weights written (numpy layout [out, in])."""
    rng = np.random.default_rng(seed)
    w = gguf.GGUFWriter(str(path), arch)
    if arch == "llama":
        toks, ttype, merges = _bpe_vocab()
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre("smollm")
        w.add_token_list(toks)
        w.add_token_types(ttype)
        w.add_token_merges(merges)
        w.add_add_bos_token(False)
    else:
        toks, scores, ttype = _spm_vocab()
        w.add_tokenizer_model("llama")
        w.add_token_list(toks)
        w.add_token_scores(scores)
        w.add_token_types(ttype)
        w.add_bos_token_id(2)
        w.add_add_bos_token(True)
        w.add_add_space_prefix(False)
        w.add_sliding_window(window)
        w.add_key_length(hd)
        w.add_value_length(hd)
    V = len(toks)
    w.add_block_count(layers)
    w.add_context_length(ctx)
    w.add_embedding_length(d)
    w.add_feed_forward_length(ffn)
    w.add_head_count(heads)
    w.add_head_count_kv(kv)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_freq_base(10000.0 if arch == "llama" else 1e6)
    out = {}

    def put(name, arr, q="F32"):
        arr = np.asarray(arr, np.float32)
        out[name] = arr
        if q == "F32":
            w.add_tensor(name, arr)
        else:
            qt = getattr(QT, q)
            data = gguf.quants.quantize(arr, qt)
            w.add_tensor(name, data, raw_dtype=qt)

    put("token_embd.weight", rng.normal(0, 1, (V, d)), quant)
    put("output_norm.weight", 1 + 0.1 * rng.normal(size=d))
    for i in range(layers):
        p = f"blk.{i}."
        put(p + "attn_norm.weight", 1 + 0.1 * rng.normal(size=d))
        put(p + "attn_q.weight", rng.normal(0, d ** -0.5, (heads * hd, d)), quant)
        put(p + "attn_k.weight", rng.normal(0, d ** -0.5, (kv * hd, d)), quant)
        put(p + "attn_v.weight", rng.normal(0, d ** -0.5, (kv * hd, d)), quant)
        put(p + "attn_output.weight", rng.normal(0, (heads * hd) ** -0.5, (d, heads * hd)), quant)
        put(p + "ffn_norm.weight", 1 + 0.1 * rng.normal(size=d))
        put(p + "ffn_gate.weight", rng.normal(0, d ** -0.5, (ffn, d)), quant)
        put(p + "ffn_up.weight", rng.normal(0, d ** -0.5, (ffn, d)), quant)
        put(p + "ffn_down.weight", rng.normal(0, ffn ** -0.5, (d, ffn)), quant)
        if arch == "gemma3":
            put(p + "attn_q_norm.weight", 1 + 0.1 * rng.normal(size=hd))
            put(p + "attn_k_norm.weight", 1 + 0.1 * rng.normal(size=hd))
            put(p + "post_attention_norm.weight", 1 + 0.1 * rng.normal(size=d))
            put(p + "post_ffw_norm.weight", 1 + 0.1 * rng.normal(size=d))
    if extra_type is not None:   # a tensor of another quantization type, written as raw bytes
        qt = getattr(QT, extra_type)
        bs, ts = gguf.GGML_QUANT_SIZES[qt]
        w.add_tensor("extra.weight", np.zeros((2, 64 // bs * ts), np.uint8), raw_dtype=qt)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return out


# ---- a plain reference forward (one token at a time, full recomputation) -------------------------------------
def reference_logits(W: dict, cfg, tokens: list[int]) -> np.ndarray:
    H, Hkv, hd = cfg.heads, cfg.kv_heads, cfg.head_dim

    def rms(x, g):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + cfg.eps) * g

    def rope(x, pos, base, neox):
        half = hd // 2
        inv = base ** (-np.arange(half) * 2.0 / hd)
        out = np.empty_like(x)
        for t in range(x.shape[0]):
            c, s = np.cos(pos[t] * inv), np.sin(pos[t] * inv)
            for h in range(x.shape[1]):
                v = x[t, h]
                if neox:
                    a, b = v[:half], v[half:]
                    out[t, h] = np.concatenate([a * c - b * s, a * s + b * c])
                else:
                    a, b = v[0::2], v[1::2]
                    out[t, h, 0::2], out[t, h, 1::2] = a * c - b * s, a * s + b * c
        return out

    T = len(tokens)
    x = W["token_embd.weight"][tokens].astype(np.float64) * cfg.embed_scale
    pos = np.arange(T)
    neox = cfg.rope_style == "neox"
    for i in range(cfg.layers):
        p = f"blk.{i}."
        h = rms(x, W[p + "attn_norm.weight"])
        q = (h @ W[p + "attn_q.weight"].T).reshape(T, H, hd)
        k = (h @ W[p + "attn_k.weight"].T).reshape(T, Hkv, hd)
        v = (h @ W[p + "attn_v.weight"].T).reshape(T, Hkv, hd)
        if cfg.qk_norm:
            q, k = rms(q, W[p + "attn_q_norm.weight"]), rms(k, W[p + "attn_k_norm.weight"])
        q, k = rope(q, pos, cfg.rope_base[i], neox), rope(k, pos, cfg.rope_base[i], neox)
        o = np.zeros((T, H, hd))
        for t in range(T):
            for hh in range(H):
                kv = hh // (H // Hkv)
                lo = 0 if cfg.window[i] is None else max(0, t - cfg.window[i] + 1)
                s = k[lo:t + 1, kv] @ q[t, hh] * cfg.q_scale
                a = np.exp(s - s.max())
                o[t, hh] = (a / a.sum()) @ v[lo:t + 1, kv]
        a = o.reshape(T, H * hd) @ W[p + "attn_output.weight"].T
        if cfg.sandwich_norm:
            a = rms(a, W[p + "post_attention_norm.weight"])
        x = x + a
        h = rms(x, W[p + "ffn_norm.weight"])
        g = h @ W[p + "ffn_gate.weight"].T
        act = g / (1 + np.exp(-g)) if cfg.act == "silu" else \
            0.5 * g * (1 + np.tanh(math.sqrt(2 / math.pi) * (g + 0.044715 * g ** 3)))
        f = (act * (h @ W[p + "ffn_up.weight"].T)) @ W[p + "ffn_down.weight"].T
        if cfg.sandwich_norm:
            f = rms(f, W[p + "post_ffw_norm.weight"])
        x = x + f
    return rms(x, W["output_norm.weight"]) @ W["token_embd.weight"].T


# ---- reader --------------------------------------------------------------------------------------------------
def test_reader_reads_metadata_and_dequantizes(tmp_path):
    f = tmp_path / "m.gguf"
    W = write_tiny(f, quant="Q8_0")
    g = open_gguf(f)
    assert g.arch == "llama" and g.key("block_count") == 2 and g.key("tokenizer.ggml.pre") == "smollm"
    assert g.tensor_types["blk.0.attn_q.weight"] == "Q8_0" and g.tensor_types["blk.0.attn_norm.weight"] == "F32"
    np.testing.assert_array_equal(g.tensor("blk.1.ffn_norm.weight"), W["blk.1.ffn_norm.weight"])
    q = g.tensor("blk.0.attn_q.weight")
    assert q.shape == W["blk.0.attn_q.weight"].shape
    # Q8_0: 32-value blocks, one scale each: error at most half a step of the block's max / 127
    err = np.abs(q - W["blk.0.attn_q.weight"]).max()
    assert 0 < err <= np.abs(W["blk.0.attn_q.weight"]).max() / 127 * 0.51 + 1e-6


@pytest.mark.parametrize("quant", ["Q4_0", "Q4_1", "Q5_0"])
def test_reader_dequantizes_4_and_5_bit_types(tmp_path, quant):
    f = tmp_path / "m.gguf"
    W = write_tiny(f, quant=quant)
    a, b = open_gguf(f).tensor("blk.0.ffn_up.weight"), W["blk.0.ffn_up.weight"]
    steps = {"Q4_0": 8, "Q4_1": 15, "Q5_0": 16}[quant]
    assert np.abs(a - b).max() <= 2 * np.abs(b).max() / steps


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "simulator.cli", "trace", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd or ROOT, timeout=120)


def test_bad_gguf_files_are_refused_with_one_line(tmp_path):
    good = tmp_path / "good.gguf"
    write_tiny(good)
    raw = good.read_bytes()
    cases = {}
    (tmp_path / "magic.gguf").write_bytes(b"XXXX" + raw[4:])
    cases["magic.gguf"] = "not a GGUF file"
    (tmp_path / "trunc.gguf").write_bytes(raw[: len(raw) - 200])
    cases["trunc.gguf"] = "truncated"
    (tmp_path / "header.gguf").write_bytes(raw[:40])
    cases["header.gguf"] = "truncated"
    write_tiny(tmp_path / "iq.gguf", extra_type="IQ4_NL")
    cases["iq.gguf"] = "quantization type IQ4_NL"
    qwen = tmp_path / "qwen.gguf"
    write_tiny(qwen)
    data = qwen.read_bytes().replace(b"llama", b"qwen2", 1)       # general.architecture, same length
    qwen.write_bytes(data)
    cases["qwen.gguf"] = "architecture"
    for name, want in cases.items():
        with pytest.raises(TraceError) as e:
            open_gguf(tmp_path / name)
        assert name in str(e.value) and want in str(e.value), str(e.value)
    r = _cli("record", "--gguf", tmp_path / "trunc.gguf", "--check")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "trunc.gguf" in r.stderr, r.stderr


def test_context_longer_than_the_model_is_refused_and_nothing_is_written(tmp_path):
    f = tmp_path / "m.gguf"
    write_tiny(f, ctx=512)
    out = tmp_path / "out"
    r = _cli("record", "--gguf", f, "--contexts", "600", "--out", out)
    assert r.returncode == 2 and "longer than the model's 512" in r.stderr and "m.gguf" in r.stderr, r.stderr
    assert not out.exists()


# ---- tokenizers ----------------------------------------------------------------------------------------------
def test_bpe_tokenizer_merges_by_rank_splits_digits_and_round_trips(tmp_path):
    f = tmp_path / "m.gguf"
    write_tiny(f)
    tk = GGUFTokenizer.from_gguf(open_gguf(f))
    ids = tk.encode("the in a 12")
    assert [tk.tokens[i] for i in ids] == ["t", "he", "Ġ", "in", "Ġa", "Ġ", "1", "2"]
    assert [tk.tokens[i] for i in tk.encode(" the")] == ["Ġthe"]
    for text in ("the in a 12", "naïve — ünïcode\n\n  x", "<|endoftext|> stays text"):
        assert tk.decode(tk.encode(text)) == text
    assert tk.vocab["<|endoftext|>"] not in tk.encode("<|endoftext|>")      # a control token is never parsed


def test_spm_tokenizer_merges_by_score_splits_user_defined_and_falls_back_to_bytes(tmp_path):
    f = tmp_path / "m.gguf"
    write_tiny(f, arch="gemma3", layers=2)
    tk = GGUFTokenizer.from_gguf(open_gguf(f))
    ids = tk.encode(" the cat  é")
    assert ids[0] == 2                                                          # BOS
    assert [tk.tokens[i] for i in ids[1:]] == ["▁the", "▁cat", "  ", "<0xC3>", "<0xA9>"]
    assert tk.decode(ids) == " the cat  é"


# ---- forward -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("arch", ["llama", "gemma3"])
def test_forward_matches_a_plain_reference_and_its_own_cache(tmp_path, arch):
    f = tmp_path / "m.gguf"
    layers = 7 if arch == "gemma3" else 2                                       # gemma: layer 5 global, others local
    W = write_tiny(f, arch=arch, layers=layers, window=4)
    m = GGUFModel(open_gguf(f))
    if arch == "gemma3":
        assert m.cfg.window == [4, 4, 4, 4, 4, None, 4] and m.cfg.rope_base[5] != m.cfg.rope_base[0]
    toks = list(np.random.default_rng(1).integers(0, m.cfg.vocab, 11))
    ref = reference_logits(W, m.cfg, toks)
    cache = KVCache(m.cfg, 32)
    lg = m.prefill(toks[:7], cache, chunk=3, logit_positions=range(7))
    for t in range(7, 11):                                                      # decode one row at a time
        lg[t] = m.forward([toks[t]], [t], cache, commit=True).logits[0]
    got = np.stack([lg[t] for t in range(11)])
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
    # tree rows (two branches off position 7) equal each branch run as a causal chain
    cache.n = 7
    r = m.forward([toks[7], toks[8], toks[9]], [7, 8, 8], cache,
                  anc=np.array([[1, 0, 0], [1, 1, 0], [1, 0, 1]], bool))
    np.testing.assert_allclose(r.logits[1], ref[8], rtol=1e-4, atol=1e-4)
    alt = reference_logits(W, m.cfg, toks[:8] + [toks[9]])[8]
    np.testing.assert_allclose(r.logits[2], alt, rtol=1e-4, atol=1e-4)


def test_sliding_window_layers_forget_tokens_beyond_their_reach(tmp_path):
    f = tmp_path / "m.gguf"
    write_tiny(f, arch="gemma3", layers=2, window=4)                           # both layers local (il % 6 < 5)
    m = GGUFModel(open_gguf(f))
    toks = list(np.random.default_rng(2).integers(0, m.cfg.vocab, 12))
    other = [((toks[0] + 5) % m.cfg.vocab)] + toks[1:]

    def last(ts):
        c = KVCache(m.cfg, 16)
        return m.prefill(ts, c, logit_positions=[len(ts) - 1])[len(ts) - 1]

    # two layers of window 4 reach 2 * 3 = 6 positions back: position 11 cannot see token 0, position 6 can
    np.testing.assert_array_equal(last(toks), last(other))
    assert not np.allclose(last(toks[:7]), last(other[:7]))


def test_trace_layer_list_must_match_its_layer_count(tmp_path):
    from simulator.traces.format import write_trace

    tr = _tiny_recording(tmp_path)
    tr.meta["model"]["layer_ids"] = tr.meta["model"]["layer_ids"][:-1]
    with pytest.raises(TraceError, match="layer count does not match"):
        write_trace(tmp_path / "bad.npz", tr)


_REC = {}


def _tiny_recording(tmp_path):
    """A real end-to-end recording of a tiny random Gemma-3 model (7 layers: global layer 5) on a small text."""
    from simulator.traces.gguf_record import Text, model_meta, record_gguf

    if "tr" not in _REC:
        f = tmp_path / "g.gguf"
        write_tiny(f, arch="gemma3", layers=7, window=8, ctx=512)
        g = open_gguf(f)
        m, tk = GGUFModel(g), GGUFTokenizer.from_gguf(g)
        words = np.random.default_rng(3).choice(["the", "cat", "a", "tac", "het"], 400)
        txt = " ".join(words)
        text = Text("tiny", txt, [str(f)], "0" * 64, "test", "test")
        trs, san = record_gguf(m, tk, [text], [320], steps=3, model_meta=model_meta(m, f, "test"), log=lambda s: None)
        _REC["tr"] = trs[320]
    import copy

    return copy.deepcopy(_REC["tr"])


def test_tiny_recording_holds_the_global_layers_and_every_policy(tmp_path):
    from simulator.traces.analysis import compute_stats
    from simulator.traces.format import read_trace, write_trace

    tr = _tiny_recording(tmp_path)
    assert tr.meta["model"]["layer_ids"] == [5] and tr.meta["model"]["model_layers"] == 7
    assert tr.layers == 1 and tr.steps == 3 and set(tr.selections) >= {"topk", "nsa", "nsa_tree", "quest", "lserve"}
    assert tr.meta["texts"][0]["name"] == "tiny" and tr.meta["source_model"]["sha256"]
    p = write_trace(tmp_path / "t.npz", tr)
    back = read_trace(p)
    ts = compute_stats(back)
    assert ts.has("spec.accept_rate") and ts.has("specattn.kl") and ts.has("snapkv.recall")
    assert ts.layer_depths is not None and ts.layer_depths[0] == pytest.approx(5 / 6)


def test_trace_info_shows_the_provenance_of_a_pretrained_recording(tmp_path, capsys):
    from simulator.cli import main
    from simulator.traces.format import write_trace

    p = write_trace(tmp_path / "tiny_rec.npz", _tiny_recording(tmp_path))
    assert main(["trace", "info", str(p)]) == 0
    out = capsys.readouterr().out
    assert "model file  g.gguf" in out and "SHA-256" in out and "text        tiny" in out
    assert "model layers [5] of 7" in out and "perplexity" in out
