"""Tokenizers built from a GGUF file's vocabulary (tokenizer.ggml.*), so a recording reads real text exactly as the
model was trained to see it. Two kinds, chosen by `tokenizer.ggml.model`:

  gpt2   byte-level BPE (GPT-2's scheme; SmolLM2). Text is first split by the pre-tokenizer named in
         `tokenizer.ggml.pre`, each piece's UTF-8 bytes are mapped to printable characters (GPT-2's byte <-> unicode
         table), then adjacent symbols are merged by the rank of `tokenizer.ggml.merges` (lowest rank first) until no
         listed merge applies. Pre-tokenizers (the regular expressions llama.cpp's src/llama-vocab.cpp applies for
         each pre type, commit 00ad355e009e83abf98f96a6ded7193b95763681, llm_tokenizer_bpe):
           gpt2     one expression: contractions | ' '? letters | ' '? numbers | ' '? other symbols | whitespace
           smollm   the same, after every digit is split off on its own (the Digits(individual_digits) step of
                    SmolLM2's tokenizer.json); llama.cpp groups smollm with starcoder, refact, command-r.
         Several expressions apply in turn, each splitting every piece into its matches and the gaps between them.
  llama  SentencePiece (Gemma 3): spaces become U+2581, then, starting from single characters, the adjacent pair
         whose concatenation is the vocabulary piece with the highest score is merged (ties: the leftmost), until
         no concatenation is a piece; a single character that is not a piece is written as its UTF-8 byte tokens
         <0xXX> (byte fallback; llama.cpp llm_tokenizer_spm, same file and commit).
Both first split the text on the vocabulary's user-defined tokens (token_type 4: Gemma's runs of spaces, tabs and
newlines, HTML tags), longest first, and never on control tokens (<bos>, <|im_start|>, ...): a document's
literal text is never turned into a control token (llama.cpp tokenizer_st_partition with parse_special false).

`encode(text)` adds BOS when `tokenizer.ggml.add_bos_token` says so. The recorder checks every encoding round-trips
(decode(encode(text)) == text) and tests/test_traces_gguf.py compares both tokenizers with Hugging Face's on real
text where transformers is installed.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from simulator.traces.requests import TraceError

SPM_SPACE = "\u2581"
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
#: pre type -> expressions applied in turn (llama.cpp src/llama-vocab.cpp, module docstring)
PRE_TYPES = {
    "gpt2": (GPT2_PATTERN,),
    "smollm": (r"\p{N}", GPT2_PATTERN),
    "starcoder": (r"\p{N}", GPT2_PATTERN),
    "refact": (r"\p{N}", GPT2_PATTERN),
}
TOKEN_NORMAL, TOKEN_UNKNOWN, TOKEN_CONTROL, TOKEN_USER_DEFINED, TOKEN_UNUSED, TOKEN_BYTE = 1, 2, 3, 4, 5, 6


def _regex():
    try:
        import regex  # noqa: PLC0415 - optional dependency (Unicode property classes)
    except ImportError:
        raise TraceError("a BPE tokenizer needs the `regex` package: pip install 'sparsesim[record]'") from None
    return regex


def byte_unicode_table() -> dict[int, str]:
    """GPT-2's byte -> printable character map: printable Latin-1 bytes map to themselves, the other 68 bytes to
    the characters from U+0100 on, in byte order."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def _split_user_defined(text: str, specials: list[str]) -> list[tuple[str, bool]]:
    """[(fragment, is_special)]: the text split on the special strings, longest first, leftmost occurrences."""
    parts: list[tuple[str, bool]] = [(text, False)]
    for sp in specials:
        out = []
        for frag, is_sp in parts:
            if is_sp or sp not in frag:
                out.append((frag, is_sp))
                continue
            pieces = frag.split(sp)
            for i, p in enumerate(pieces):
                if p:
                    out.append((p, False))
                if i < len(pieces) - 1:
                    out.append((sp, True))
        parts = out
    return parts


@dataclass
class GGUFTokenizer:
    kind: str                      # 'gpt2' | 'llama'
    tokens: list[str]
    token_type: list[int]
    bos_id: int | None
    eos_id: int | None
    add_bos: bool
    pre: str = ""
    merges: dict[tuple[str, str], int] = field(default_factory=dict)
    scores: list[float] = field(default_factory=list)
    add_space_prefix: bool = False
    file: str = ""

    def __post_init__(self):
        self.vocab = {t: i for i, t in enumerate(self.tokens)}
        self.user_defined = sorted({t for t, ty in zip(self.tokens, self.token_type) if ty == TOKEN_USER_DEFINED and t},
                                   key=len, reverse=True)
        self._cache: dict[str, list[int]] = {}
        if self.kind == "gpt2":
            rx = _regex()
            self._pre = [rx.compile(p) for p in PRE_TYPES[self.pre]]
            self._b2u = byte_unicode_table()
            self._u2b = {u: b for b, u in self._b2u.items()}
        else:
            self._byte_tok = {}
            for i, (t, ty) in enumerate(zip(self.tokens, self.token_type)):
                if ty == TOKEN_BYTE and len(t) == 6 and t.startswith("<0x") and t.endswith(">"):
                    self._byte_tok[int(t[3:5], 16)] = i
            if len(self._byte_tok) != 256:
                raise TraceError(f"SentencePiece vocabulary has {len(self._byte_tok)} byte tokens <0xXX>, expected "
                                 "256 (byte fallback)", file=self.file)

    # ---- construction ---------------------------------------------------------------------------------------
    @classmethod
    def from_gguf(cls, g) -> "GGUFTokenizer":
        f = str(g.path)
        kind = g.meta.get("tokenizer.ggml.model")
        toks = g.meta.get("tokenizer.ggml.tokens")
        if not isinstance(toks, list) or not toks:
            raise TraceError("lacks tokenizer.ggml.tokens (no vocabulary)", file=f)
        ttype = list(g.meta.get("tokenizer.ggml.token_type") or [TOKEN_NORMAL] * len(toks))
        if len(ttype) != len(toks):
            raise TraceError(f"tokenizer.ggml.token_type has {len(ttype)} entries for {len(toks)} tokens", file=f)
        common = dict(tokens=[str(t) for t in toks], token_type=[int(x) for x in ttype],
                      bos_id=g.meta.get("tokenizer.ggml.bos_token_id"), eos_id=g.meta.get("tokenizer.ggml.eos_token_id"),
                      add_bos=bool(g.meta.get("tokenizer.ggml.add_bos_token", False)), file=f)
        if kind == "gpt2":
            pre = str(g.meta.get("tokenizer.ggml.pre", "gpt2"))
            if pre not in PRE_TYPES:
                raise TraceError(f"BPE pre-tokenizer {pre!r} is not supported; supported: {', '.join(PRE_TYPES)}",
                                 file=f, field="tokenizer.ggml.pre")
            merges = g.meta.get("tokenizer.ggml.merges")
            if not isinstance(merges, list) or not merges:
                raise TraceError("a gpt2 (BPE) vocabulary needs tokenizer.ggml.merges", file=f)
            ranks = {}
            for r, m in enumerate(merges):
                a, sep, b = str(m).partition(" ")
                if not sep:
                    raise TraceError(f"merge {r} {m!r} is not 'left right'", file=f, field="tokenizer.ggml.merges")
                ranks.setdefault((a, b), r)
            return cls(kind="gpt2", pre=pre, merges=ranks, **common)
        if kind == "llama":
            scores = g.meta.get("tokenizer.ggml.scores")
            if not isinstance(scores, list) or len(scores) != len(toks):
                raise TraceError("a SentencePiece (llama) vocabulary needs one tokenizer.ggml.scores per token",
                                 file=f)
            return cls(kind="llama", scores=[float(s) for s in scores],
                       add_space_prefix=bool(g.meta.get("tokenizer.ggml.add_space_prefix", True)), **common)
        raise TraceError(f"tokenizer model {kind!r} is not supported (gpt2 BPE and llama SentencePiece are)", file=f,
                         field="tokenizer.ggml.model")

    # ---- encoding -------------------------------------------------------------------------------------------
    def encode(self, text: str, add_bos: bool | None = None) -> list[int]:
        out: list[int] = []
        if (self.add_bos if add_bos is None else add_bos) and self.bos_id is not None:
            out.append(int(self.bos_id))
        first = True
        for frag, special in _split_user_defined(text, self.user_defined):
            if special:
                out.append(self.vocab[frag])
            elif self.kind == "gpt2":
                out += self._bpe_text(frag)
            else:
                s = frag.replace(" ", SPM_SPACE)
                if first and self.add_space_prefix:
                    s = SPM_SPACE + s
                out += self._spm(s)
            first = False
        return out

    def _bpe_text(self, text: str) -> list[int]:
        pieces = [text]
        for rx in self._pre:
            nxt = []
            for p in pieces:
                pos = 0
                for m in rx.finditer(p):
                    if m.start() > pos:
                        nxt.append(p[pos:m.start()])
                    if m.end() > m.start():
                        nxt.append(m.group())
                    pos = m.end()
                if pos < len(p):
                    nxt.append(p[pos:])
            pieces = nxt
        out = []
        for p in pieces:
            ids = self._cache.get(p)
            if ids is None:
                ids = self._bpe_word("".join(self._b2u[b] for b in p.encode("utf-8")))
                if len(self._cache) < 200_000:
                    self._cache[p] = ids
            out += ids
        return out

    def _bpe_word(self, word: str) -> list[int]:
        syms = list(word)
        while len(syms) > 1:
            best, at = None, -1
            for i in range(len(syms) - 1):
                r = self.merges.get((syms[i], syms[i + 1]))
                if r is not None and (best is None or r < best):
                    best, at = r, i
            if best is None:
                break
            a, b = syms[at], syms[at + 1]
            merged, i = [], 0
            while i < len(syms):            # merge every occurrence of the best pair, left to right
                if i < len(syms) - 1 and syms[i] == a and syms[i + 1] == b:
                    merged.append(a + b)
                    i += 2
                else:
                    merged.append(syms[i])
                    i += 1
            syms = merged
        try:
            return [self.vocab[s] for s in syms]
        except KeyError as e:
            raise TraceError(f"BPE produced the symbol {e.args[0]!r} that is not in the vocabulary", file=self.file) \
                from None

    def _spm(self, s: str) -> list[int]:
        if not s:
            return []
        n = len(s)
        start = list(range(n))
        length = [1] * n
        prev = list(range(-1, n - 1))
        nxt = list(range(1, n + 1))
        nxt[-1] = -1
        heap: list[tuple[float, int, int, int]] = []
        vocab, scores = self.vocab, self.scores

        def add(left: int, right: int) -> None:
            if left < 0 or right < 0:
                return
            text = s[start[left]:start[left] + length[left] + length[right]]
            tid = vocab.get(text)
            if tid is None:
                return
            heapq.heappush(heap, (-scores[tid], left, right, len(text)))

        for i in range(1, n):
            add(i - 1, i)
        while heap:
            _, left, right, size = heapq.heappop(heap)
            if length[left] == 0 or length[right] == 0 or length[left] + length[right] != size:
                continue
            length[left] += length[right]
            length[right] = 0
            nxt[left] = nxt[right]
            if nxt[right] >= 0:
                prev[nxt[right]] = left
            add(prev[left], left)
            add(left, nxt[left])
        out: list[int] = []
        i = 0
        while i != -1:   # every merge made a vocabulary piece: a symbol is a piece or one character (-> bytes)
            text = s[start[i]:start[i] + length[i]]
            tid = vocab.get(text)
            if tid is not None:
                out.append(tid)
            else:
                out.extend(self._byte_tok[b] for b in text.encode("utf-8"))
            i = nxt[i]
        return out

    # ---- decoding -------------------------------------------------------------------------------------------
    def decode(self, ids) -> str:
        buf = bytearray()
        for i in ids:
            i = int(i)
            ty = self.token_type[i]
            if ty == TOKEN_CONTROL or ty == TOKEN_UNKNOWN:
                continue
            t = self.tokens[i]
            if self.kind == "gpt2":
                if ty == TOKEN_USER_DEFINED:
                    buf += t.encode("utf-8")
                else:
                    buf += bytes(self._u2b[c] for c in t)
            elif ty == TOKEN_BYTE:
                buf.append(int(t[3:5], 16))
            else:
                buf += t.replace(SPM_SPACE, " ").encode("utf-8")
        text = buf.decode("utf-8", errors="replace")
        if self.kind == "llama" and self.add_space_prefix and text.startswith(" "):
            text = text[1:]
        return text
