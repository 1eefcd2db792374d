"""Record attention/top-k traces from a pretrained GGUF model (simulator.traces.gguf_forward) reading real text,
and check the model is sane first (greedy continuation, perplexity, agreement with transformers).

One recording = several sequences, each a real text read from the machine (TEXTS; the trace's meta.texts says
which file, its SHA-256 and licence). For every sequence the text's first P_max = max(contexts) - steps tokens are
prefilled ONCE; a trace at context N reads the prompt P = N - steps (the same text's first P tokens: the keys
and queries of a causal model at positions < P do not depend on what follows), then decodes `steps` tokens
sampled from the model (temperature 1, numpy Generator(seed)), recording at every step what each policy of
simulator.traces.recorder would select on the dense model's attention. Contexts are decoded longest first so
that a shorter context's decode overwrites only cache positions the longer one no longer needs.

Which layers a trace holds. Sparse attention applies to the layers that attend over the whole context. A Llama
model's layers all do; Gemma 3's sliding-window layers attend to their last `sliding_window` (512) tokens only and
stay dense in every policy (a window of 512 is already smaller than any budget recorded), so a Gemma trace
records its GLOBAL layers (meta.model.layer_ids: 5, 11, 17 of 18) and every statistic is over those.

Speculation. The draft is the model itself with some layers skipped (self-speculative decoding, Zhang et al.
2023 "Draft & Verify"; the draft reads the target's KV cache for the verified prefix): layers l with L/4 <= l <
3L/4, l odd and not a global layer of Gemma (ASSUMPTION: a fixed rule, not the paper's Bayesian layer search; it
drafts worse than a trained EAGLE head). Every step the draft drafts a 3/2/1 tree (15 nodes, its top-3 / top-2 /
top-1 children) that the target verifies in one forward: its rows give SSV's per-row NSA selections, its accepted
depth is recorded, and its leftmost path (the draft's top-1 at each depth) is the greedy chain of K = 3 draft
tokens whose greedily accepted length is `spec.accepted` (the chain's verification is part of the tree's, so it
costs no extra forward). The draft's own attention on its layers gives SpecAttn's KL and top-p statistics.

Speed. The forward is numpy float32; on a machine whose cores are shared, run it with OPENBLAS_NUM_THREADS=1: on
two shared cores (2026-11-26) a 15-row SmolLM2 forward took 9.5-18.6 s with OpenBLAS's two threads (small
matrix products spin-waiting) and 0.8 s with one, and a 512-token prefill chunk 35 s against 19 s.

Policies at context N (`record_config`): token top-k tiers N/128, N/32, N/8 plus DSA's absolute k = 2048 (when
2048 < N); NSA blocks of 64 tokens, top-16 with 1 initial + 2 local forced (NSA defaults; SSV's 8K setting);
Quest/LServe logical pages 16, physical 64, budget N/16; StreamingLLM 4 sinks + N/8 window; SnapKV observation
window 32, pool 7, budgets P/16, P/8, P/4, recent P/16; full score rows for GVR replay every 16 steps (at most 2
steps a trace) with the previous step's top-k at k = min(2048, largest tier) (GVR's kernel setting 2048 / C 6144
where the context allows), capacity 3k, when 3k < N. The DSA tier k = 2048 is recorded where it is at most N/8
(16K and 32K); at 2K-8K DSA's 2048 would keep 25-100 % of the context (and, with SmolLM2's 90 KV-head rows a
step, would triple the trace's size).
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from simulator.traces.format import AttentionTrace
from simulator.traces.recorder import RecordConfig, StepRecorder, nsa_importance, page_scores
from simulator.traces.requests import TraceError

TREE_BRANCHING = (3, 2, 1)
TREE_PARENT = (-1, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 5, 6, 7, 8, 9)
CHAIN_K = 3
DSA_K = 2048   # DeepSeek-V3.2's indexer top-k (tokens), seed document 001 GVR
GVR_K = 2048   # TensorRT-LLM's GVR kernel setting k 2048 / capacity 6144 (seed document 001)
PPL_EVERY = 64


# ---- texts --------------------------------------------------------------------------------------------------
@dataclass
class Text:
    name: str
    text: str
    files: list[str]
    sha256: str
    licence: str
    kind: str

    def meta(self, tokens: int) -> dict:
        return {"name": self.name, "files": self.files, "sha256": self.sha256, "chars": len(self.text),
                "tokens_read": int(tokens), "licence": self.licence, "kind": self.kind}


def _read(paths: list[Path]) -> str:
    return "\n\n".join(p.read_text(encoding="utf-8", errors="replace") for p in paths)


def builtin_texts() -> dict[str, callable]:
    """Long real texts that exist offline on this kind of machine (name -> loader). Each loader raises TraceError
    when its file is absent."""
    import sysconfig

    def seeds():
        d = Path("/work/shared/seeds")
        files = sorted(d.glob("*.txt"))
        if not files:
            raise TraceError("the seed documents are not on this machine", file=str(d))
        return files, "the project's seed documents (paper reviews), concatenated in file order", "prose"

    def pydecimal():
        p = Path(sysconfig.get_paths()["stdlib"]) / "_pydecimal.py"
        return [p], f"CPython {sys.version.split()[0]} standard library (PSF License)", "python"

    def sqlite_h():
        return [Path("/usr/include/sqlite3.h")], "SQLite amalgamation header (public domain)", "c"

    def gpl3():
        return [Path("/usr/share/common-licenses/GPL-3")], "GNU GPL v3 licence text (verbatim copying permitted)", \
            "licence"

    return {"seeds": seeds, "pydecimal": pydecimal, "sqlite3h": sqlite_h, "gpl3": gpl3}


def load_text(spec: str) -> Text:
    """A builtin text name (builtin_texts) or a path to a UTF-8 file."""
    table = builtin_texts()
    if spec in table:
        files, lic, kind = table[spec]()
        name = spec
    else:
        files, lic, kind, name = [Path(spec)], "see the file", "user", Path(spec).name
    for p in files:
        if not Path(p).is_file():
            raise TraceError("text file not found", file=str(p))
    text = _read(files)
    h = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return Text(name=name, text=text, files=[str(p) for p in files], sha256=h, licence=lic, kind=kind)


# ---- configuration --------------------------------------------------------------------------------------------
def record_config(N: int, steps: int) -> RecordConfig:
    """Policy parameters at context N (module docstring)."""
    P = N - steps
    tiers = sorted({N // 128, N // 32, N // 8} | ({DSA_K} if DSA_K <= N // 8 else set()))
    gk = min(GVR_K, tiers[-1])
    cfg = RecordConfig(topk_tiers=tuple(tiers), nsa_block=64, nsa_top_n=16, nsa_initial=1, nsa_local=2,
                       page_logical=16, page_physical=64, page_budget=N // 16, sink=4, window=N // 8, snap_obs=32,
                       snap_pool=7, snap_budgets=(P // 16, P // 8, P // 4), snap_recent=P // 16, step_lags=16,
                       layer_lags=4, gvr_every=16 if 3 * gk < N else 0, gvr_max_steps=2,
                       gvr_k=gk if 3 * gk < N else None, local_tokens=64, sink_tokens=4,
                       tree_parent=TREE_PARENT, chain_k=CHAIN_K)
    return cfg


def draft_skip_layers(cfg) -> frozenset[int]:
    L = cfg.layers
    glob = set(cfg.global_layers) if cfg.arch == "gemma3" else set()
    return frozenset(i for i in range(L // 4, (3 * L) // 4) if i % 2 == 1 and i not in glob)


def trace_layers(cfg) -> list[int]:
    """Model layers a trace records: the layers that attend over the whole context (module docstring)."""
    return cfg.global_layers


# ---- helpers --------------------------------------------------------------------------------------------------
def _log_softmax(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def _sample(logits: np.ndarray, rng: np.random.Generator, temperature: float) -> int:
    if temperature <= 0:
        return int(np.argmax(logits))
    lp = _log_softmax(np.asarray(logits, np.float64) / temperature)
    p = np.exp(lp)
    return int(rng.choice(len(p), p=p / p.sum()))


def _tree_anc(parents: list[int]) -> np.ndarray:
    Q = len(parents)
    anc = np.eye(Q, dtype=bool)
    for i in range(Q):
        p = parents[i]
        while p >= 0:
            anc[i, p] = True
            p = parents[p]
    return anc


def _depths(parents: list[int]) -> np.ndarray:
    d = np.zeros(len(parents), np.int64)
    for i, p in enumerate(parents):
        d[i] = 0 if p < 0 else d[p] + 1
    return d


class _Progress:
    def __init__(self, total: int, desc: str, enabled: bool):
        self.bar = None
        if enabled and sys.stderr.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=desc, unit="tok")

    def __call__(self, n: int) -> None:
        if self.bar is not None:
            self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


# ---- recording ------------------------------------------------------------------------------------------------
def record_gguf(model, tokenizer, texts: list[Text], contexts: list[int], *, steps: int = 32, seed: int = 0,
                temperature: float = 1.0, model_meta: dict, name_for=lambda N: f"trace_{N}", progress: bool = False,
                date: str | None = None, log=print) -> tuple[dict[int, AttentionTrace], dict]:
    """Record one trace per context (module docstring). Returns ({N: trace}, sanity) where sanity holds the
    prefill perplexity by position bucket per text."""
    from simulator.traces.gguf_forward import KVCache

    cfg = model.cfg
    contexts = sorted(set(int(n) for n in contexts), reverse=True)
    if not contexts:
        raise TraceError("no context to record")
    if contexts[0] > cfg.max_context:
        raise TraceError(f"context {contexts[0]:,} is longer than the model's {cfg.max_context:,} "
                         f"({cfg.arch}.context_length)", file=str(model.g.path))
    if contexts[-1] - steps < 256:
        raise TraceError(f"context {contexts[-1]} leaves a prompt shorter than 256 tokens after {steps} steps")
    layers = trace_layers(cfg)
    skip = draft_skip_layers(cfg)
    draft_layers = [i for i in layers if i not in skip]
    Lt, Hkv, G = len(layers), cfg.kv_heads, cfg.group
    model_meta = dict(model_meta)
    provenance = model_meta.pop("provenance", "")
    source_model = model_meta.pop("source_model", None)
    tmeta = dict(model_meta)
    tmeta.update({"layers": Lt, "heads": cfg.heads, "kv_heads": Hkv, "head_dim": cfg.head_dim, "layer_ids": layers,
                  "model_layers": cfg.layers})
    dmeta = {"name": f"{model_meta['name']} self-draft (skips layers {sorted(skip)})", "layers": len(draft_layers),
             "heads": cfg.heads, "kv_heads": Hkv, "head_dim": cfg.head_dim, "params": int(model_meta["params"]),
             "skipped_layers": sorted(skip), "layer_ids": draft_layers,
             "notes": "self-speculative draft: the target with these layers skipped, reading the target's KV cache"}
    recs = {N: StepRecorder(record_config(N, steps), tmeta, dmeta) for N in contexts}
    for N, r in recs.items():
        r.cfg.notes = {"context": N}
    rng = np.random.default_rng(seed)
    P_max = contexts[0] - steps
    sanity: dict = {"perplexity": {}, "accepted_mean": {}}
    accepted: dict[int, list[int]] = {N: [] for N in contexts}
    for ti, text in enumerate(texts):
        ids = tokenizer.encode(text.text)
        if tokenizer.decode(ids) != text.text:
            raise TraceError(f"the tokenizer does not round-trip text {text.name!r}", file=text.files[0])
        if len(ids) < P_max + 1:
            raise TraceError(f"text {text.name!r} has {len(ids):,} tokens; the {contexts[0]:,}-token context "
                             f"needs at least {P_max + 1:,}", file=text.files[0])
        cache = KVCache(cfg, contexts[0] + 32)
        prompts = {N: N - steps for N in contexts}
        obs = {N: np.zeros((Lt, 32, cfg.heads, cfg.head_dim), np.float32) for N in contexts}
        want_pos = {}
        for N, P in prompts.items():
            for j, p in enumerate(range(P - 32, P)):
                want_pos.setdefault(p, []).append((N, j))
        lmap = {li: i for i, li in enumerate(layers)}

        def capture(li, pos, q, want_pos=want_pos, obs=obs, lmap=lmap):
            if li not in lmap:
                return
            for r, p in enumerate(pos):
                for N, j in want_pos.get(int(p), ()):
                    obs[N][lmap[li], j] = q[r]

        ppl_pos = list(range(PPL_EVERY - 1, P_max - 1, PPL_EVERY))
        bar = _Progress(P_max, f"prefill {text.name}", progress)
        lg = model.prefill(ids[:P_max], cache, chunk=512, logit_positions=ppl_pos, capture_q=capture, progress=bar)
        bar.close()
        nll = {p: -float(_log_softmax(lg[p])[ids[p + 1]]) for p in ppl_pos}
        buckets = {}
        for lo, hi in ((0, 1024), (1024, 4096), (4096, 8192), (8192, 16384), (16384, 32768), (32768, 1 << 30)):
            v = [nll[p] for p in ppl_pos if lo <= p < hi]
            if v:
                buckets[f"{lo}-{min(hi, P_max)}"] = round(float(math.exp(np.mean(v))), 3)
        sanity["perplexity"][text.name] = buckets
        log(f"  {_dt.datetime.now():%H:%M:%S} {text.name}: {len(ids):,} tokens, prefill {P_max:,}; perplexity by "
            f"position {buckets}")
        for N in contexts:
            P = prompts[N]
            cache.n = P
            rec = recs[N]
            # SnapKV votes: the observation window's attention over the prompt, summed over the window (group sum)
            votes = np.zeros((Lt, Hkv, P))
            qpos = np.arange(P - 32, P)
            for i, li in enumerate(layers):
                K = cache.k[li][:, :P]
                qg = obs[N][i].reshape(32, Hkv, G, cfg.head_dim)
                s = np.einsum("wkgd,ktd->wkgt", qg, K) / math.sqrt(cfg.head_dim)
                s = np.where(np.arange(P)[None, None, None, :] <= qpos[:, None, None, None], s, -np.inf)
                p = np.exp(s - s.max(-1, keepdims=True))
                p /= p.sum(-1, keepdims=True)
                votes[i] = p.sum(axis=(0, 2))
            rec.begin_sequence(P, votes)
            tok = ids[P]
            bar = _Progress(steps, f"decode {text.name} @ {N:,}", progress)
            for _ in range(steps):
                lg0 = _step(model, cache, rec, tok, layers, draft_layers, skip, accepted[N])
                tok = _sample(lg0, rng, temperature)
                bar(1)
            bar.close()
            log(f"    {_dt.datetime.now():%H:%M:%S} context {N:,}: {steps} decode steps, mean accepted {np.mean(accepted[N][-steps:]):.2f} of "
                f"{CHAIN_K}")
    day = date or _dt.date.today().isoformat()
    traces = {}
    for N, rec in recs.items():
        sanity["accepted_mean"][N] = float(np.mean(accepted[N]))
        how = (f"{len(texts)} real texts ({', '.join(t.name for t in texts)}); prompt = a text's first {N - steps:,} "
               f"tokens, then {steps} decode steps sampled from the model at temperature {temperature}; chain K="
               f"{CHAIN_K} and tree 3/2/1 drafted by the self-speculative draft (layers {sorted(skip)} skipped), "
               "verified greedily by the target")
        extra = {"texts": [t.meta(N - steps) for t in texts], "sanity": {"perplexity": sanity["perplexity"]}}
        if source_model:
            extra["source_model"] = source_model
        tr = rec.finish(name=name_for(N), source="recorded", script="simulator/traces/gguf_record.py:record_gguf",
                        how=how, seed=seed, provenance=provenance, device="cpu (numpy)", date=day, extra_meta=extra)
        traces[N] = tr
    return traces, sanity


def _step(model, cache, rec: StepRecorder, tok: int, layers: list[int], draft_layers: list[int], skip, acc_log):
    """One decode step at the cache's position n: the draft's row of the current token, the target's row
    (committed), the 3/2/1 tree drafted by the draft and its target verification rows; feeds the StepRecorder and
    returns the target's logits. The greedy chain is the tree's leftmost path (the draft's top-1 at each depth),
    so its verification is part of the tree's: K = 3 (module docstring)."""
    n = cache.n
    # draft row of the current token (before the target commits it: it reads cache[:n] + itself)
    dr = model.forward([tok], [n], cache, skip=skip, prob_rows=[0], logit_rows=[0])
    dprobs = np.stack([dr.probs[li][0] for li in draft_layers])                   # [Ld, Hkv, n + 1]
    # the target's decode row, committed
    tr = model.forward([tok], [n], cache, commit=True, prob_rows=[0], want_q=True, logit_rows=[0])
    T = n + 1
    lg = tr.logits[0]
    probs = np.stack([tr.probs[li][0] for li in layers])                           # [Lt, Hkv, T]
    c = rec.cfg
    qs = [tr.q[li] for li in layers]
    nsa = np.stack([nsa_importance(q, cache.k[li][:, :T], c.nsa_block)[0] for q, li in zip(qs, layers)])
    pages = np.stack([page_scores(q, cache.k[li][:, :T], c.page_logical)[0] for q, li in zip(qs, layers)])
    # tree 3/2/1 drafted by the draft (top-b children by the draft's log-probabilities; the draft reads the
    # target's cache, which now holds the current token)
    toks, parents, score = [], [], []
    level = [(-1, dr.logits[0], 0.0)]
    for depth, b in enumerate(TREE_BRANCHING):
        new = []
        for par, lgt, s0 in level:
            lp = _log_softmax(lgt)
            for t in np.argsort(-lp)[:b]:
                toks.append(int(t))
                parents.append(par)
                score.append(s0 + float(lp[t]))
                new.append(len(toks) - 1)
        if depth < len(TREE_BRANCHING) - 1:
            pos = T + _depths(parents)
            r = model.forward(toks, pos, cache, anc=_tree_anc(parents), skip=skip, logit_rows=new)
            level = [(i, r.logits[j], score[i]) for j, i in enumerate(new)]
    pos = T + _depths(parents)
    tt = model.forward(toks, pos, cache, anc=_tree_anc(parents), want_q=True)
    tree = np.stack([np.concatenate([nsa[i][None], nsa_importance(tt.q[li], cache.k[li][:, :T], c.nsa_block)], 0)
                     for i, li in enumerate(layers)])                                 # [Lt, Q, Hkv, nbc]
    targ = np.argmax(tt.logits, axis=-1)
    a0 = int(np.argmax(lg))
    # greedy chain = the leftmost path (nodes 0, its first child, that node's first child), verified greedily
    chain, node = [], -1
    for _ in range(CHAIN_K):
        node = next(i for i, p in enumerate(parents) if p == node)
        chain.append(node)
    want = [a0] + [int(targ[i]) for i in chain[:-1]]
    acc = 0
    while acc < CHAIN_K and toks[chain[acc]] == want[acc]:
        acc += 1
    acc_log.append(acc)
    depth, node, cur = 0, -1, a0
    while True:
        kids = [i for i, p in enumerate(parents) if p == node and toks[i] == cur]
        if not kids:
            break
        node = kids[0]
        depth += 1
        cur = int(targ[node])
    rec.step(probs, nsa, pages, tree_nsa_imp=tree, tree_score=np.array([0.0] + score), draft_probs=dprobs,
             accepted=acc, tree_accepted=depth)
    return lg


# ---- loading and sanity -----------------------------------------------------------------------------------------
def load_model(spec: str):
    """(GGUFModel, GGUFTokenizer, path, origin) for a .gguf path or an installed package's name."""
    from simulator.traces.gguf_file import open_gguf, resolve_gguf
    from simulator.traces.gguf_forward import GGUFModel
    from simulator.traces.gguf_tokenizer import GGUFTokenizer

    path, origin = resolve_gguf(spec)
    g = open_gguf(path)
    tok = GGUFTokenizer.from_gguf(g)
    return GGUFModel(g), tok, path, origin


def model_meta(model, path: Path, origin: str) -> dict:
    """meta.model fields (plus provenance and source_model) of a recording from this GGUF file."""
    from collections import Counter

    from simulator.traces.gguf_file import sha256_file

    cfg = model.cfg
    digest = sha256_file(path)
    quant = dict(Counter(model.g.tensor_types.values()))
    lic = model.g.meta.get("general.license", "not stated in the file")
    notes = (f"{cfg.arch}, {cfg.layers} layers ({len(cfg.global_layers)} global), d {cfg.d_model}, {cfg.heads} query / "
             f"{cfg.kv_heads} KV heads of {cfg.head_dim}, vocab {cfg.vocab}, context {cfg.max_context}; weights "
             f"{quant} dequantized to float32; licence (general.license): {lic}")
    return {"name": cfg.name, "params": int(cfg.params), "max_context": int(cfg.max_context), "notes": notes,
            "arch": cfg.arch, "quantization": quant,
            "sliding_window": next((w for w in cfg.window if w is not None), None),
            "provenance": f"{origin}; GGUF file {path.name} SHA-256 {digest}",
            "source_model": {"origin": origin, "file": path.name, "sha256": digest, "bytes": path.stat().st_size,
                             "licence": lic}}


def sanity_check(model, tok, text: Text, *, prompt_tokens: int = 256, continue_tokens: int = 32,
                 ppl_tokens: int = 1024) -> list[str]:
    """Lines: a greedy continuation of the text, the perplexity of its first `ppl_tokens` tokens, and (when
    transformers and torch are importable) the largest logit difference to transformers' forward of the same
    GGUF file on the first 256 tokens."""
    from simulator.traces.gguf_forward import KVCache

    ids = tok.encode(text.text)
    lines = [f"model {model.cfg.name}: {model.cfg.arch}, {model.cfg.layers} layers, text {text.name} "
             f"({len(ids):,} tokens, round-trip {'ok' if tok.decode(ids) == text.text else 'FAILS'})"]
    n = min(ppl_tokens, len(ids) - 1)
    cache = KVCache(model.cfg, n + continue_tokens + 8)
    lg = model.prefill(ids[:n], cache, logit_positions=range(n))
    nll = [-float(_log_softmax(lg[p])[ids[p + 1]]) for p in range(n - 1)]
    lines.append(f"perplexity of the first {n:,} tokens: {math.exp(np.mean(nll)):.2f} "
                 f"(positions 0-127: {math.exp(np.mean(nll[:128])):.2f}, last half: "
                 f"{math.exp(np.mean(nll[n // 2:])):.2f})")
    P = min(prompt_tokens, n)
    cache.n = P
    cur = ids[P]
    out = []
    for _ in range(continue_tokens):
        r = model.forward([cur], [cache.n], cache, commit=True, logit_rows=[0])
        cur = int(np.argmax(r.logits[0]))
        out.append(cur)
    lines.append("greedy continuation (prompt tail | continuation):")
    lines.append("  ..." + tok.decode(ids[max(0, P - 40):P + 1]).replace("\n", "\\n") + " | "
                 + tok.decode(out).replace("\n", "\\n"))
    lines += reference_check(model, ids[:256])
    return lines


def reference_check(model, ids: list[int]) -> list[str]:
    """Our forward's logits beside transformers' (same GGUF, dequantized by the same gguf-py) on `ids`."""
    try:
        import torch
        from transformers import AutoModelForCausalLM
    except ImportError:
        return ["reference check skipped: transformers and torch are not installed"]
    from simulator.traces.gguf_forward import KVCache

    path = model.g.path
    hf = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32)
    hf.eval()
    with torch.no_grad():
        ref = hf(torch.tensor([ids])).logits[0].numpy().astype(np.float64)
    cache = KVCache(model.cfg, len(ids) + 1)
    lg = model.prefill(ids, cache, logit_positions=range(len(ids)))
    mine = np.stack([lg[i] for i in range(len(ids))]).astype(np.float64)
    d = np.abs(mine - ref)
    pm, pr = np.exp(_log_softmax(mine)), np.exp(_log_softmax(ref))
    import transformers

    return [f"transformers {transformers.__version__} / torch {torch.__version__} (float32, CPU) on {len(ids)} "
            f"tokens: max |logit difference| {d.max():.2e} (largest |logit| {np.abs(ref).max():.1f}), max |probability "
            f"difference| {np.abs(pm - pr).max():.2e}, argmax agreement {(mine.argmax(-1) == ref.argmax(-1)).mean():.3f}"]
