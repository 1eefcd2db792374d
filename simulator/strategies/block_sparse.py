"""attention: quest | lserve | streaming — unified block-sparse attention (LServe, Yang et al. 2025;
Quest, Tang et al. 2024; DuoAttention-style streaming heads).

Source text: LServe = /work/shared/seeds/004_*.txt ("LServe: efficient long-sequence LLM serving with unified
sparse attention"). Section numbers below are that paper's.

Unified block sparsity (LServe sec. 3.1): a decode query iterates the KV cache page by page; a skipped page
costs nothing, so a kernel's time follows the number of pages it iterates. Every token count here is
therefore rounded up to whole pages of N_P tokens (the physical page size) before it becomes bytes.

Per device, per layer, one decode step (B sequences on this device, Hkv KV heads and Hq query heads on it,
head dim d, KV bytes per element kvb, T = KV length):
  streaming heads  a fraction f of the KV heads (LServe sec. 3.3: half of the heads, DuoAttention's gates)
                   keep `sink_pages` + `local_pages` pages (LServe Fig. 4(c): one sink block, two local
                   blocks): pages_s = min(ceil(T / N_P), sink_pages + local_pages) — constant in T.
  dense heads      the other (1 - f) Hkv heads. Without dynamic sparsity (`streaming`) they iterate all
                   ceil(T / N_P) pages; with it (`lserve`, `quest`) they iterate the K = ceil(budget / N_P)
                   pages the selector chose once T > budget (sec. 3.5; constant in T).
  attention        one fused kernel for both kinds of heads (sec. 3.6):
                   bytes = B * Hkv * [(1-f) pages_d + f pages_s] * N_P * 2 d * kvb / eff(N_P) + Q reads
                   flops = 4 * B * Hq * [(1-f) pages_d + f pages_s] * N_P * d
  eff(N_P)         the page-size effect on achieved bandwidth (LServe Table 1, QServe on A100): see
                   PAGE_TABLE_MS and page_bw_efficiency(); expressed as an effective-bytes factor because a
                   strategy may not read hardware numbers — only the roofline prices bytes.
  page selector    (sec. 3.5.2, Eq. 2) for every logical page of N_L tokens of a dense head it reads the
                   channel-wise key min and max (2 d values, stored in the page in the KV dtype, Fig. 7) and
                   scores it against each query head of the group: bytes = B * (1-f) Hkv * ceil(T/N_L) *
                   2 d * stat_bytes + Q, flops = 4 * B * (1-f) Hq * ceil(T/N_L) * d (two products, a max
                   and an add per channel). Linear in T. It runs once every `reuse_interval` steps (sec.
                   3.5.3, Reusable Page Selection), so its count per step is layers / reuse_interval.
  top-k            over the ceil(T / N_P) physical-page scores (max over their logical pages) of each dense
                   head: a 'topk' op reading the fp32 scores and writing K int32 indices, same count.
LServe's page selector as OmniServe implements it (public code, github.com/mit-han-lab/omniserve: kernels/
csrc/fused_attention/sparse_utils/KVPageSelector and omniserve/modeling/layers/decoding_attention.py):
  kernel           grid (query heads, batch), 256 threads, never split over the sequence ("multiblock_switch
                   = 1000000 ... never activate it in page selector"); streaming heads' CTAs return at once.
                   Each dense-head CTA walks all logical pages of its KV head: 16 threads per page (128 fp16
                   values = 16 x 16 B), 4 pages per thread per loop iteration (K_LOOP_UNROLL = 4), the page's
                   block found through the block table, then a __syncthreads and the q.max / q.min products:
                   serial_iters = ceil(T / N_L / (4 * 256 / (d / 8))) synchronous loop iterations, priced by
                   the roofline's loop floor (the measured paged-scan iteration time, lab/
                   measure_latency.py). The statistics are fp16 (`half *k_cache_stats_max_ptr`) whatever the
                   KV dtype; the query heads of a group re-read their KV head's statistics (L2 re-reads).
  after it         eager PyTorch in `dynamic_select_topk_pages`: a max over the logical pages of each
                   physical page, a top-k over the physical pages of EVERY query head, then ones_like, a
                   multiply, a cat and a cast to int32 (4 small kernels). torch.topk on rows this short is
                   one single-block select kernel plus a sort of its k results.
  attention        when the attended tokens reach `multiblock_switch` (2048, OmniServe's default) the decode
                   kernel runs multi-block and allocates its partial buffers with 4 torch::zeros per call.
                   Its grid is (query heads, batch, seq_len_tile): seq_len_tile = 256 threads / threads per
                   value (d x 2 B / 16 B: 16 at d = 128) CTAs split the attended tokens, each taking
                   ceil(ceil(T_att / 16) / N_P) x N_P of them (multi_block_grid_setup in
                   sparse_attention/decoderMaskedMultiheadAttention.cu); below the switch one CTA per query
                   head walks every attended token. A CTA walks its tokens in synchronous loop iterations
                   (decoderMaskedMultiheadAttentionTemplate.hpp): the K loop takes 256 / threads per key
                   (16 at d = 128) keys x K_LOOP_UNROLL 4 = 64 tokens per iteration, each behind a page-table
                   lookup; the V loop 256 / threads per value x V_LOOP_UNROLL 4 = 64 tokens; the logit-max
                   and normalization loops 256 tokens each:
                       serial_iters = 2 ceil(tokens_per_cta / 64) + 2 ceil(tokens_per_cta / 256)
                   priced by the roofline's loop floor (the calibrated paged-scan iteration time; ASSUMPTION:
                   an attention-loop iteration waits on its loads like the calibrated paged scan does). This
                   per-page latency is why a 8192-token budget costs more than its bytes (LServe Table 3
                   caption: 'up to 6 % slower than 4096'). With one CTA per query head, the Hq/Hkv query
                   heads of a GQA group each stream their KV head's pages: Hq/Hkv x the KV bytes, the
                   re-reads served by L2 as far as the layer's attended KV fits in it (the roofline's
                   reread_bytes / working_set rule, as for the selector: ASSUMPTION, the group's CTAs may
                   in practice share more through L2 when they run in step).
KV memory (separate caches, sec. 3.2): dense heads keep every token plus their key statistics (2 d values
per N_L tokens = 1/N_L of a token's K+V), streaming heads keep their sink + local pages:
  cached = (1-f) * C * (1 + 1/N_L) + f * min(C, (sink_pages + local_pages) * N_P)      (token equivalents)
Prefill (sec. 3.4): dense heads attend causally (P(P+1)/2 pairs), streaming heads to their sink + local
window (~P * min(P, window) pairs; the prefill window is `prefill_sink_tokens` + `prefill_local_tokens`,
128 + 8192 in OmniServe's LServe benchmark, scripts/lserve_benchmark/benchmark.sh --ctx-sink-token /
--ctx-local-token, not the decode window); a min/max pooling kernel writes the key statistics (sec. 5.3 'Context
Pooling'). KV quantization (KV8 / KV4 with scales and zeros) is the kv_dtype axis: its bytes per element
(simulator.precision.DTYPE_BYTES) enter kvb and stat_bytes.

Quest (Tang et al. 2024) is the baseline: no streaming heads, physical = logical page = 16, selection on
every step for every head, its key statistics in fp16, dense attention in the first `dense_layers` layers,
MHA only (LServe sec. 4.1: 'Quest only supports MHA models') — GQA and MLA models are refused.

paged is vLLM's PagedAttention decode as LServe's baseline ran it: dense attention over every page of N_P
tokens (vLLM's default block_size 16), no sparsity; with an fp8 KV cache vLLM 0.6.x cannot use its
FlashAttention-2 backend and decodes through the PagedAttention v1/v2 kernels (vllm/attention/selector.py:
'Cannot use FlashAttention-2 backend for FP8 KV cache' -> XFORMERS; v2 splits the sequence into partitions of
512 tokens, vllm/attention/ops/paged_attn.py _PARTITION_SIZE). Its page-size bandwidth efficiency is eff(N_P)
of LServe Table 1 (measured on QServe's paged kernel: applying it to vLLM's kernel is an ASSUMPTION; the
LServe reproduction shows the rows with eff = 1 beside).

Values a strategy does not take as parameters (Quest has no streaming heads and selects every step; the
streaming-heads value never selects pages) are class constants in FIXED with the reason, never defaults
hidden at the call site: `_v(name)` reads a parameter or a FIXED value and fails loudly for anything else.
Not modeled: the per-step update of the current page's min/max (2 d values per head, negligible), the
accuracy side of any budget.
"""
from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from simulator.combo import Combo
from simulator.ops import OpBuilder
from simulator.precision import ACT_BYTES, ACT_DTYPE
from simulator.strategies.base import AttentionStrategy, Param, StepShape, register
from simulator.strategies.dense import PREFILL_Q_TILE

#: LServe Table 1 (QServe on one A100, Llama-3-8B architecture, batch 32): decode step time in ms at
#: sequence lengths 512 and 8192 for page sizes 16, 32, 64, 128.
PAGE_TABLE_MS = {16: (11.0, 77.1), 32: (10.7, 63.0), 64: (10.5, 51.0), 128: (10.5, 50.6)}

#: OmniServe page selector (KVPageSelectorTemplate.hpp): 256 threads per CTA, K_LOOP_UNROLL = 4 without
#: shared-memory preload; a thread loads 16 B (8 fp16) of a page's max and min vectors.
SELECTOR_THREADS = 256
SELECTOR_UNROLL = 4
#: OmniServe single_query_attention (fused_attention.cpp): max_seq_len_tile = 100 in multi-block mode
OMNISERVE_MAX_SEQ_LEN_TILE = 100
#: OmniServe decode attention (sparse_attention/decoderMaskedMultiheadAttention[Template].{cu,hpp}): 256
#: threads per CTA; K_LOOP_UNROLL = 4 (no shared-memory preload) and V_LOOP_UNROLL = 4; a thread loads 16 B
#: of a key / value (fp16 queries: threads per key = threads per value = d x 2 / 16, keys capped at 32)
ATTN_THREADS = 256
ATTN_K_UNROLL = 4
ATTN_V_UNROLL = 4


def page_bw_efficiency(page: int) -> float:
    """Achieved-bandwidth factor of a paged decode-attention kernel with `page` tokens per page, relative
    to page >= 128, from LServe Table 1: the attention part of a step is (t(8192) - t(512)) (the 512-token
    step is taken as the attention-free floor: GEMMs, norms, launches), and
        eff(P) = (t128(8192) - t128(512)) / (tP(8192) - tP(512))
    -> 16: 0.607, 32: 0.767, 64: 0.990, 128: 1.0. Linear in log2(page) between the table's sizes; pages
    above 128 take 1.0 and pages below 16 take eff(16) (the table measures nothing smaller).
    These are measurements of QServe's kernel, not of any number this module is compared against."""
    ref = PAGE_TABLE_MS[128][1] - PAGE_TABLE_MS[128][0]
    sizes = sorted(PAGE_TABLE_MS)
    effs = [ref / (PAGE_TABLE_MS[p][1] - PAGE_TABLE_MS[p][0]) for p in sizes]
    return float(np.interp(math.log2(page), [math.log2(p) for p in sizes], effs))


def omniserve_attention_iters(attended, head_dim: int, page: int, multiblock_switch: int):
    """(serial loop iterations per CTA, CTAs per (sequence, query head)) of OmniServe's decode attention
    kernel for `attended` tokens (array): see the module docstring (multi_block_grid_setup; K / V loops)."""
    T = np.asarray(attended, dtype=np.float64)
    per_value = max(1, head_dim * ACT_BYTES // 16)
    per_key = min(32, per_value)
    tiles = ATTN_THREADS // per_value
    multi = T >= multiblock_switch
    per_cta = np.where(multi, np.ceil(np.ceil(T / tiles) / page) * page, T)
    k_iter = ATTN_THREADS // per_key * ATTN_K_UNROLL
    v_iter = ATTN_THREADS // per_value * ATTN_V_UNROLL
    iters = np.ceil(per_cta / k_iter) + np.ceil(per_cta / v_iter) + 2.0 * np.ceil(per_cta / ATTN_THREADS)
    return iters, np.where(multi, float(tiles), 1.0)


def _pos_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 1


def _frac(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and 0.0 <= v <= 1.0


class _UnifiedBlockSparse(AttentionStrategy):
    """Shared decode / prefill accounting; subclasses fix which sparsity they use (see module doc)."""

    dynamic: ClassVar[bool] = True             # dense heads select pages once T > budget
    decode_cost_per_row = True                 # selected pages min(pages, budget), streaming heads min(T, window)
    #: the page selector walks each row's logical pages on that row's own CTAs (serial_iters per row), and it, the
    #: page top-k and its fix-ups run only on rows with more pages than the budget; the partial-buffer zeroing and the
    #: split combine only on rows long enough to split: each launch lasts as long as the longest row that runs it
    decode_longest_row_ops: ClassVar[tuple[str, ...]] = ("page_", "attention_partials_zero", "attention_combine")
    stats_in_kv_dtype: ClassVar[bool] = False  # key min/max in fp16 (OmniServe's selector reads `half`; Quest)
    #: values this strategy does not take as parameters: name -> (value, why). "page" as a value means "the
    #: physical page" (a selector that scores whole pages).
    FIXED: ClassVar[dict[str, tuple[Any, str]]] = {}

    def _v(self, name: str):
        """A parameter's value, or the strategy's FIXED value for it; anything else is a bug (no hidden default)."""
        if name in self.params:
            return self.values[name]
        if name in self.FIXED:
            v = self.FIXED[name][0]
            return self.phys_page if v == "page" else v
        raise KeyError(f"attention '{self.name}' has neither a parameter nor a FIXED value {name!r}")

    @property
    def omniserve_kernels(self) -> bool:
        """OmniServe's decode attention (and page selector) launch structure (module docstring), else split-KV."""
        return self._v("kernel") == "omniserve"

    @property
    def phys_page(self) -> int:
        return self._v("page")

    @property
    def logical_page(self) -> int:
        return self._v("logical_page")

    @property
    def stream_frac(self) -> float:
        return float(self._v("streaming_fraction"))

    @property
    def stream_pages(self) -> int:
        return self._v("sink_pages") + self._v("local_pages")

    @property
    def budget_pages(self) -> int:
        return math.ceil(self._v("token_budget") / self.phys_page)

    @property
    def prefill_window(self) -> float:
        """Tokens a streaming head attends to in prefill (sink + local window)."""
        return float(self._v("prefill_sink_tokens") + self._v("prefill_local_tokens"))

    def model_problem(self, model):
        if model.mla:
            return f"attention '{self.name}': block-sparse paged attention over MLA latents is not modeled ({model.name})"
        return None

    def param_problem(self):
        if self.logical_page > self.phys_page or self.phys_page % self.logical_page:
            return ("page", f"the physical page ({self.phys_page}) must be a multiple of the logical page "
                            f"({self.logical_page}) (LServe sec. 3.5.2: N_P = g * N_L)")
        return None

    # ---- token / page counts -------------------------------------------------------------------------
    def pages(self, T: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(pages a dense head iterates, pages a streaming head iterates, selection active) for KV length T."""
        all_pages = np.ceil(np.asarray(T, dtype=np.float64) / self.phys_page)
        if not self.dynamic:
            return all_pages, np.minimum(all_pages, float(self.stream_pages)), np.zeros(np.shape(T), bool)
        active = T > self.budget_pages * self.phys_page
        dense = np.where(active, float(self.budget_pages), all_pages)
        stream = np.minimum(all_pages, float(self.stream_pages))
        return dense, stream, active

    def cached_tokens(self, combo: Combo, context: np.ndarray) -> np.ndarray:
        C = np.asarray(context, dtype=np.float64)
        f = self.stream_frac
        # 2 d statistics per logical page per dense head, i.e. 1/N_L of a token's K + V, in their own dtype
        ratio = 1.0 if self.stats_in_kv_dtype else ACT_BYTES / combo.kvbytes
        stats = ratio / self.logical_page if self.dynamic else 0.0
        return (1.0 - f) * C * (1.0 + stats) + f * np.minimum(C, self.stream_pages * self.phys_page)

    # ---- decode -------------------------------------------------------------------------------------
    def _dense_layers(self, combo) -> int:
        return 0

    def decode_ops(self, b: OpBuilder, combo: Combo, shape: StepShape) -> None:
        m = combo.model
        B, q, T = shape.batch / combo.attn_dp, shape.query_rows, shape.context
        Hq, Hkv, d = combo.attn_heads_dev, combo.attn_kv_heads_dev, m.head_dim
        group = Hq / Hkv
        kvb = combo.kvbytes
        f = self.stream_frac
        P = self.phys_page
        layers = shape.layers
        n_dense_layers = min(self._dense_layers(combo), layers)
        sparse_layers = layers - n_dense_layers
        eff = page_bw_efficiency(P)
        split_tokens = self._v("split_tokens")

        pages_d, pages_s, active = self.pages(T)
        head_pages = (1.0 - f) * pages_d + f * pages_s          # mean pages per KV head
        tokens = head_pages * P
        # tokens a dense head's kernel walks: the selected pages, or the whole (not page-rounded) context
        attended = np.where(active, pages_d * P, np.minimum(T, pages_d * P))
        q_bytes = B * q * Hq * d * ACT_BYTES
        out = B * q * Hq * d
        if self.omniserve_kernels:
            # OmniServe's MMHA-derived kernel: (query head, sequence, tile) CTAs, each a synchronous page loop
            iters, splits = omniserve_attention_iters(attended, d, P, self._v("multiblock_switch"))
            units = B * q * Hq * splits
        else:
            iters = 0.0
            splits = np.maximum(1.0, pages_d * P / split_tokens)
            units = B * Hkv * splits
        partials = splits * (out + B * q * Hq) * 4.0
        split = splits > 1.0
        kv_bytes = B * Hkv * tokens * 2.0 * d * kvb / eff
        # OmniServe's grid runs one CTA per QUERY head: the group's query heads each stream their KV head's pages
        # (re-reads served by L2 as far as the layer's KV fits in it, the roofline's reread/working-set rule)
        streams = group if self.omniserve_kernels else 1.0
        b.add("attention", "attention", flops=4.0 * B * q * Hq * tokens * d,
              bytes_read=streams * kv_bytes + splits * q_bytes, reread_bytes=(streams - 1.0) * kv_bytes,
              working_set=kv_bytes, bytes_written=np.where(split, partials, out * ACT_BYTES), parallel_units=units,
              serial_iters=iters, dtype=ACT_DTYPE, count=sparse_layers)
        b.add("attention_combine", "elementwise", flops=3.0 * out * splits, bytes_read=partials,
              bytes_written=out * ACT_BYTES, dtype="fp32", count=sparse_layers, where=split)
        if n_dense_layers:
            # Quest keeps the first layers dense: every page of every head
            full = np.ceil(T / P) * P
            sp = np.maximum(1.0, full / split_tokens)
            b.add("attention_dense_layers", "attention", flops=4.0 * B * q * Hq * full * d,
                  bytes_read=B * Hkv * full * 2.0 * d * kvb / eff + sp * q_bytes,
                  bytes_written=sp * (out + B * q * Hq) * 4.0, parallel_units=B * Hkv * sp, dtype=ACT_DTYPE,
                  count=n_dense_layers)
        if self.omniserve_kernels:
            # multi-block decode attention: 4 torch::zeros for its partial buffers on every call
            mb = attended >= self._v("multiblock_switch")
            tiles = float(OMNISERVE_MAX_SEQ_LEN_TILE)
            b.add("attention_partials_zero", "elementwise",
                  bytes_written=(tiles * B * Hq * d * ACT_BYTES + 2 * B * Hq * tiles * 4.0 + B * Hq * 4.0) / 4.0,
                  dtype="fp32", count=4.0 * sparse_layers, where=mb)
        if self.dynamic:
            self._selector_ops(b, combo, shape, sparse_layers, active)

    def _selector_ops(self, b, combo, shape, sparse_layers, active) -> None:
        """The page selector over every logical page of the dense heads, once per reuse interval, and what
        follows it (module docstring: generic, or OmniServe's kernel and its PyTorch top-k)."""
        m = combo.model
        B, q, T = shape.batch / combo.attn_dp, shape.query_rows, shape.context
        Hq, Hkv, d = combo.attn_heads_dev, combo.attn_kv_heads_dev, m.head_dim
        group, kvb, f, P = Hq / Hkv, combo.kvbytes, self.stream_frac, self.phys_page
        split_tokens = self._v("split_tokens")
        reuse = self._v("reuse_interval")
        sel_count = sparse_layers / reuse
        NL = self.logical_page
        n_logical = np.ceil(T / NL)
        n_phys = np.ceil(T / P)
        Hd, Hqd = (1.0 - f) * Hkv, (1.0 - f) * Hq
        sb = kvb if self.stats_in_kv_dtype else ACT_BYTES
        stats = B * Hd * n_logical * 2.0 * d * sb
        if not self.omniserve_kernels:
            b.add("page_selector", "attention", flops=4.0 * B * q * Hqd * n_logical * d,
                  bytes_read=stats + B * q * Hqd * d * ACT_BYTES, bytes_written=B * Hd * n_phys * 4.0,
                  parallel_units=B * np.maximum(Hd, 1.0) * np.maximum(1.0, n_logical * NL / split_tokens),
                  dtype="fp32", count=sel_count, where=active)
            b.add("page_topk", "topk", flops=2.0 * B * Hd * n_phys, bytes_read=B * Hd * n_phys * 4.0,
                  bytes_written=B * Hd * self.budget_pages * 4.0, parallel_units=B * np.maximum(Hd, 1.0),
                  dtype="fp32", count=sel_count, where=active)
            return
        # OmniServe: one CTA per (query head, sequence); the group's query heads re-read the statistics
        pages_per_iter = SELECTOR_UNROLL * SELECTOR_THREADS / max(1.0, d * ACT_BYTES / 16.0)
        ctas = B * q * np.maximum(Hqd, 1.0)
        b.add("page_selector", "attention", flops=4.0 * B * q * Hqd * n_logical * d,
              bytes_read=q * group * stats + B * q * Hqd * d * ACT_BYTES,
              reread_bytes=(q * group - 1.0) * stats, working_set=stats,
              bytes_written=B * q * Hq * n_logical * ACT_BYTES, parallel_units=ctas,
              serial_iters=np.ceil(n_logical / pages_per_iter), dtype="fp32", count=sel_count, where=active)
        rows = B * q * Hq
        b.add("page_stats_max", "elementwise", flops=rows * n_logical, bytes_read=rows * n_logical * ACT_BYTES,
              bytes_written=rows * n_phys * ACT_BYTES, dtype="fp32", count=sel_count, where=active)
        # torch.topk over each row of physical-page scores (one block per row for slices this short), then
        # its sort of the k results (sorted=True, the default)
        kk = float(self.budget_pages - 1)
        b.add("page_topk", "topk", flops=2.0 * rows * n_phys, bytes_read=rows * n_phys * ACT_BYTES,
              bytes_written=rows * kk * 12.0, parallel_units=rows, dtype="fp32", count=sel_count, where=active)
        b.add("page_topk_sort", "elementwise", bytes_read=rows * kk * 12.0, bytes_written=rows * kk * 12.0,
              dtype="fp32", count=sel_count, where=active)
        small = rows * self.budget_pages * 8.0
        b.add("page_index_fixup", "elementwise", bytes_read=small, bytes_written=small, dtype="fp32",
              count=4.0 * sel_count, where=active)

    # ---- prefill ------------------------------------------------------------------------------------
    def prefill_ops(self, b: OpBuilder, combo: Combo, shape: StepShape) -> None:
        m = combo.model
        B, Pn = shape.batch, shape.context
        H, Hkv, d = combo.prefill_heads_dev, combo.prefill_kv_heads_dev, m.head_dim
        f = self.stream_frac
        window = self.prefill_window
        pairs = (1.0 - f) * Pn * (Pn + 1) / 2.0 + f * Pn * np.minimum(Pn, window)
        io = B * Pn * (2 * H * d * ACT_BYTES + 2 * Hkv * d * combo.kvbytes)
        layers = shape.layers
        b.add("attention", "attention", flops=4.0 * B * H * pairs * d, bytes_read=io * 0.5, bytes_written=io * 0.5,
              parallel_units=B * H * np.maximum(1.0, Pn / PREFILL_Q_TILE), dtype=ACT_DTYPE, count=layers)
        if self.dynamic:
            # min/max pooling of the dense heads' keys into per-logical-page statistics
            Hd = (1.0 - f) * Hkv
            sb = combo.kvbytes if self.stats_in_kv_dtype else ACT_BYTES
            b.add("key_stats_pooling", "elementwise", flops=2.0 * B * Hd * Pn * d,
                  bytes_read=B * Hd * Pn * d * combo.kvbytes,
                  bytes_written=B * Hd * np.ceil(Pn / self.logical_page) * 2.0 * d * sb, dtype="fp32",
                  count=layers)


COMMON = {
    "split_tokens": Param(256, "same split-KV chunk as attention 'dense' (ASSUMPTION until calibrated); OmniServe's "
                               "kernel splits by its own rule (module docstring) and ignores it",
                          lambda v: isinstance(v, int) and v >= 16, "an integer >= 16"),
}
KERNEL_PARAM = {
    "kernel": Param("split_kv", "split_kv: a FlashDecoding-style split-KV kernel over KV heads (vLLM, FlashInfer). "
                                "omniserve: OmniServe's MMHA-derived kernel (what LServe's own dense / static-only "
                                "ablations run: sec. 5.4-5.5), with its per-CTA page loop and zero-filled partials",
                    lambda v: v in ("split_kv", "omniserve"), "split_kv | omniserve"),
    "multiblock_switch": Param(2048, "OmniServe engine/arg_utils.py default multiblock_switch = 2048: the "
                                     "omniserve kernel runs multi-block from this many attended tokens",
                               _pos_int, "an integer >= 1 (tokens)"),
}
_BENCH = ("OmniServe scripts/lserve_benchmark/benchmark.sh (the artifact script LServe's appendix A.5.2 runs; "
          "github.com/mit-han-lab/omniserve @ 02b2925)")
STREAMING_PARAMS = {
    "streaming_fraction": Param(0.5, "LServe sec. 4.2 / 5.4: half of the attention heads are streaming heads "
                                     "(DuoAttention gates, sec. 3.3)", _frac, "a fraction in [0, 1]"),
    "sink_pages": Param(2, f"{_BENCH}: --dec-sink-token 128 = 2 pages of 64 (LServe Fig. 4(c) draws one sink block "
                           "as an illustration)", _pos_int, "an integer >= 1"),
    "local_pages": Param(4, f"{_BENCH}: --dec-local-token 256 = 4 pages of 64 (Fig. 4(c) draws two)", _pos_int,
                         "an integer >= 1"),
    "prefill_sink_tokens": Param(128, f"{_BENCH}: --ctx-sink-token 128 (streaming heads in prefill)", _pos_int,
                                 "an integer >= 1 (tokens)"),
    "prefill_local_tokens": Param(8192, f"{_BENCH}: --ctx-local-token 8192 (streaming heads in prefill)", _pos_int,
                                  "an integer >= 1 (tokens)"),
}
PAGE_PARAM = {"page": Param(64, "LServe Table 1 / sec. 5.2: physical page of 64 tokens (the smallest page "
                                "without QServe's slowdown)", lambda v: _pos_int(v) and v >= 8,
                            "an integer >= 8 (tokens per physical page)")}
_NO_SELECTION = {
    "logical_page": ("page", "no page selection: statistics (if any) per physical page"),
    "token_budget": (None, "no dynamic sparsity"),
    "reuse_interval": (1, "no page selection"),
}
_NO_STREAMING = {
    "streaming_fraction": (0.0, "no streaming heads"),
    "sink_pages": (0, "no streaming heads"),
    "local_pages": (0, "no streaming heads"),
    "prefill_sink_tokens": (0, "no streaming heads"),
    "prefill_local_tokens": (0, "no streaming heads"),
}


@register
class StreamingHeads(_UnifiedBlockSparse):
    name = "streaming"
    description = ("static sparsity: a fraction of the heads are streaming heads (sink + local pages), the rest "
                   "dense (DuoAttention / LServe without page selection)")
    dynamic = False
    params = {**PAGE_PARAM, **STREAMING_PARAMS, **KERNEL_PARAM, **COMMON}
    FIXED = dict(_NO_SELECTION)


@register
class PagedDense(_UnifiedBlockSparse):
    name = "paged"
    description = ("dense attention over a paged KV cache (vLLM PagedAttention, block size 16) with the page-size "
                   "bandwidth efficiency of LServe Table 1")
    dynamic = False
    decode_cost_per_row = False   # every page of every row: linear in the context (up to page rounding)
    params = {
        "page": Param(16, "vLLM EngineArgs --block-size default 16 (vLLM 0.6.x, the LServe baseline's version)",
                      lambda v: _pos_int(v) and v >= 8, "an integer >= 8 (tokens per block)"),
        "split_tokens": Param(512, "vLLM paged_attention_v2: _PARTITION_SIZE = 512 (vllm/attention/ops/paged_attn.py)",
                              lambda v: isinstance(v, int) and v >= 16, "an integer >= 16"),
        **KERNEL_PARAM,
    }
    FIXED = {**_NO_SELECTION, **_NO_STREAMING}


@register
class LServe(_UnifiedBlockSparse):
    name = "lserve"
    description = "LServe: streaming heads + hierarchical, reusable page selection for the dense heads"
    FIXED = {"kernel": ("omniserve", "LServe runs OmniServe's kernels (github.com/mit-han-lab/omniserve)")}
    params = {
        **PAGE_PARAM,
        "logical_page": Param(16, "LServe sec. 3.5.2 / 5.2: min/max statistics work for pages <= 16 tokens; "
                                  "Fig. 13 compares against Quest's granularity of 16", _pos_int,
                              "an integer >= 1 dividing `page`"),
        "token_budget": Param(4096, "LServe sec. 4.2: token budget 4096 for dynamic sparsity", _pos_int,
                              "an integer >= 1 (tokens each dense head attends after selection)"),
        "reuse_interval": Param(4, "LServe sec. 5.3 / Table 6: reuse interval 4 by default", _pos_int,
                                "an integer >= 1 (decode steps sharing one page selection)"),
        "multiblock_switch": KERNEL_PARAM["multiblock_switch"],
        **STREAMING_PARAMS,
        **COMMON,
    }


@register
class Quest(_UnifiedBlockSparse):
    name = "quest"
    description = "Quest: query-aware page selection (min/max key statistics) every step, page 16, MHA only"
    stats_in_kv_dtype = False
    params = {
        "page": Param(16, "Quest (Tang et al. 2024) page size 16; LServe sec. 3.5.1", lambda v: _pos_int(v) and v >= 8,
                      "an integer >= 8"),
        "token_budget": Param(4096, "ASSUMPTION: the same 4096-token budget as LServe's comparison (LServe "
                                    "Table 5 does not state Quest's budget; Quest's scripts/bench_textgen.py "
                                    "defaults to 256 and bench_efficiency_e2e.sh sweeps 512-4096)", _pos_int,
                              "an integer >= 1"),
        "dense_layers": Param(2, "Quest sec. 4 (evaluation setup): Quest is not applied to the first two layers",
                              lambda v: isinstance(v, int) and v >= 0, "an integer >= 0"),
        **COMMON,
    }
    FIXED = {
        **_NO_STREAMING,
        "logical_page": ("page", "Quest scores whole pages (its page is the selection granularity)"),
        "reuse_interval": (1, "Quest selects pages for every query, at every decode step (Quest sec. 3)"),
        "kernel": ("split_kv", "Quest's FlashInfer-based decode kernels (github.com/mit-han-lab/Quest kernels/)"),
    }

    def _dense_layers(self, combo) -> int:
        return self.dense_layers

    def model_problem(self, model):
        m = model
        if m.mla or m.kv_heads != m.heads:
            return (f"attention 'quest' supports MHA models only (LServe sec. 4.1 and Table 5: 'Quest does not "
                    f"support GQA'); {m.name} has {m.kv_heads} KV heads for {m.heads} query heads"
                    + (" (MLA)" if m.mla else ""))
        return super().model_problem(model)
