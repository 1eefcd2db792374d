"""attention: dense — every query attends to the whole KV cache (FlashAttention / FlashDecoding / FlashMLA).

Decode (and verification with q query rows per sequence), per device, per layer:
  GQA/MHA  flops = 4 * B * q * Hq * T * d           (QK^T and PV, 2 flops per multiply-add)
           bytes = B * T * 2 * Hkv * d * kv_bytes    (K and V read once per sequence and KV head; the
                   Hq/Hkv query heads of a group share the load) + Q read + O written
  MLA      flops = 2 * B * q * H * T * (r + p) + 2 * B * q * H * T * r     (absorbed: scores over the
                   latent r=kv_lora_rank plus rope key p, values are the latent)
           bytes = B * T * (r + p) * kv_bytes        (one latent shared by all heads; with
                   mla_cache=separate_kv a separate value cache adds B * T * r * kv_bytes)
Parallel units: split-KV (FlashDecoding) chunks of `split_tokens` per (sequence, KV head) — or per
(sequence, 64-head tile) for MLA (FlashMLA's head tile) — plus a combine kernel when T > split_tokens.
The unit count is the continuous T / split_tokens (at least 1), not its ceiling: split-KV kernels divide
the KV range evenly over their splits, so a kernel's time follows the per-split chunk, which the
continuous count tracks without the saw-tooth a ceiling would add (and time stays monotone in T).

Prefill over a prompt of P tokens (causal): flops = 4 * B * Hq * d * P(P+1)/2 (MLA: heads of 192-wide
keys and 128-wide values, non-absorbed); bytes = Q, K, V read once and O written once (FlashAttention's
re-reads of K/V across query tiles are assumed to hit L2); units = B * Hq * max(1, P / 128) (continuous,
as for decode). A chunk of a chunked prefill (shape.kv_prefix = O cached tokens, shape.context =
O + P): P(P+1)/2 + P*O pairs, the prefix's K/V read once more (MLA: its expanded keys and values), units
over the chunk's P query tokens; without kv_prefix (O = 0) the whole-prompt cost above is unchanged.
"""
from __future__ import annotations

import numpy as np

from simulator.combo import AttentionLayout, Combo
from simulator.kernels.decode_attention import (
    COMBINE_KIND,
    FA2_CTAS_PER_SM,
    FP8_KV_KIND,
    ROWS_KIND,
    combine_layout,
    decode_layout,
    fa2_num_splits,
    reread_working_set,
)
from simulator.kernels.families import MLA_PREFILL_FAMILY, PREFILL_FAMILY
from simulator.layers import repeat_kv_ops
from simulator.ops import OpBuilder
from simulator.precision import ACT_BYTES, ACT_DTYPE
from simulator.strategies.base import AttentionStrategy, Param, StepShape, register

PREFILL_Q_TILE = 128  # FlashAttention-2 query tile (Dao 2023, sec. 3.1 block sizes); also FA3's default
#: production kernel families (simulator/kernels/families.py): FlashInfer, FlashAttention-3/4, FlashMLA, XQA, the
#: engines' Triton kernels, each priced from its plan rules and launch structure
PRODUCTION_FAMILIES = ("fi_decode", "fi_tc", "flashinfer", "fi_mla", "fa3", "fa4", "flashmla", "fa3_mla", "fa3_mla_vllm",
                       "fa3_mla_fp8cast", "fi_mla_fp8cast",
                       "xqa", "triton_sgl", "triton_vllm")


@register
class DenseAttention(AttentionStrategy):
    name = "dense"
    description = "full attention over the whole KV cache (FlashAttention / FlashDecoding / FlashMLA)"
    array_combo = True                 # hooks are array-safe (docs/VECTOR_COMBOS.md)
    array_params = ("split_tokens",)
    params = {
        "split_tokens": Param(
            256, "ASSUMPTION (kernel: generic): FlashDecoding-style split-KV chunk; 256 tokens per "
                 "CTA lets one 8-KV-head sequence fill ~130 SMs at 4K context",
            lambda v: isinstance(v, int) and v >= 16, "an integer >= 16"),
        "gqa_packing": Param(
            "always", "FlashInfer and FlashAttention-3 pack the query heads of a GQA group (and all query rows "
                      "of a sequence) into one CTA that loads K/V once. 'decode_only' is FlashAttention-2 as "
                      "called by torch SDPA: packed for one query row, but with several rows every query head "
                      "streams K/V itself (measured: hwmodels/calibration/data, decode_attn q_rows > 1)",
            lambda v: v in ("always", "decode_only"), "always | decode_only"),
        "gqa_expand": Param(
            "native", "native: the kernel reads each KV head once for its query-head group (FlashAttention / "
                      "FlashInfer / SDPA with enable_gqa). repeat_kv: HF transformers' GQA path (modeling_llama "
                      "`repeat_kv`, used before eager and SDPA attention when SDPA's enable_gqa is not taken) "
                      "copies K and V out to every query head first: a copy kernel reading Hkv and writing Hq "
                      "heads per layer, and an attention kernel that streams Hq heads; the expanded layer is a "
                      "transient of Hq/Hkv x one layer's K/V per token",
            lambda v: v in ("native", "repeat_kv"), "native | repeat_kv (GQA models)"),
        "mla_cache": Param(
            "latent", "latent: one cache of kv_lora_rank + rope key per token shared by keys and values "
                      "(FlashMLA / SGLang / vLLM absorbed MLA). separate_kv: a key cache (latent + rope key) and "
                      "a value cache (latent) kept as two tensors, as the SnapStream SN40L implementation does "
                      "(SnapStream sec. 2.3 and Listings 2-5 treat key and value caches separately)",
            lambda v: v in ("latent", "separate_kv"), "latent | separate_kv (MLA models only)"),
        # --- kernel model (calibration helper, issue 15): how the decode kernel parallelizes ---
        "kernel": Param(
            "generic", "generic: the calibrated continuous split-KV model above (split_tokens per CTA, op kind "
                       "'attention'). A named family prices the decode kernel as that kernel launches it: its CTAs "
                       "per batch x KV head x split from the family's split heuristic, each CTA's chain of K/V tiles, "
                       "waves of resident CTAs (simulator/kernels/decode_attention.py: fa2 = FlashAttention-2 / SDPA flash, "
                       "triton_splitkv = our Triton kernel with FA2's split rule, flex = FlexAttention, cudnn = cuDNN "
                       "SDPA, memeff = memory-efficient SDPA without split-KV); calibrated by "
                       "lab/measure_regimes.py (H100). Production kernels (simulator/kernels/families.py, "
                       "plan rules read from each source, data/attention_families.yaml): fi_decode / fi_tc = FlashInfer "
                       "0.6.4 CUDA-core / tensor-core paged decode (fi_tc also prices verification rows), flashinfer = "
                       "SGLang's choice between them, fi_mla = FlashInfer's MLA kernel, flashmla = FlashMLA (MLA; at "
                       "an fp8 cache its dense fp8 build, vLLM's path, with that build's own combine), "
                       "fa3_mla / fa3_mla_vllm = FlashAttention-3's hdim 64 x 512 qv kernel over the paged latent "
                       "as SGLang's fa3 backend / vLLM's FLASH_ATTN_MLA call it (MLA on Hopper with a bf16 cache), "
                       "fa3_mla_fp8cast = SGLang's fa3 backend over an fp8 MLA cache (the layer's whole pool cast to "
                       "bf16 every step, then fa3_mla: pool_tokens below; measured on the H200), fi_mla_fp8cast = "
                       "SGLang's flashinfer_mla backend over an fp8 MLA cache (the same cast, then fi_mla over the bf16 "
                       "copy; read from the engine), "
                       "triton_sgl = SGLang's Triton decode (all MEASURED on the H100: lab/kernels/"
                       "measure_production_attention.py); xqa = TensorRT-LLM XQA (its kernels MEASURED through "
                       "FlashInfer's port, TensorRT-LLM's multi-block split read from its source); fa3 / fa4 = "
                       "FlashAttention-3 / -4 (vLLM, SGLang), triton_vllm = vLLM's Triton unified attention (its "
                       "kernel file MEASURED, run from a copy of its source)",
            lambda v: v in ("generic", "fa2", "triton_splitkv", "flex", "cudnn", "memeff") + PRODUCTION_FAMILIES,
            "generic | fa2 | triton_splitkv | flex | cudnn | memeff | " + " | ".join(PRODUCTION_FAMILIES)),
        # --- production kernels (simulator/kernels/families.py): the page size of their paged K/V cache ---
        "page_size": Param(
            16, "tokens per page of the paged K/V cache the production kernel families read (kernel: fi_decode, fi_tc, "
                "flashinfer, fi_mla, fa3, fa4, flashmla, xqa, triton_sgl, triton_vllm): vLLM's default block size is 16, "
                "SGLang's token-level pool is 1, FlashMLA's 64; it sets FlashInfer's smallest KV chunk (128 / page pages) "
                "and so its split count",
            lambda v: isinstance(v, int) and 1 <= v <= 4096, "an integer in [1, 4096]"),
        # --- the KV pool a family that touches its whole pool each step reads (kernel: fa3_mla_fp8cast) ---
        "pool_tokens": Param(
            0, "tokens of a device's KV pool, as the engine sizes it: SGLang's max_total_num_tokens (--max-total-tokens), "
               "what kernels fa3_mla_fp8cast and fi_mla_fp8cast (SGLang's fa3 and flashinfer_mla backends over an fp8 "
               "MLA cache) cast to bf16 whole on every "
               "layer of every step; 0 = the memory model's pool (simulator/memory.py kv_pool_tokens: the memory left "
               "after weights and workspace over a token's KV bytes)",
            lambda v: isinstance(v, int) and v >= 0, "an integer >= 0"),
        # --- how an engine's FlashInfer backend runs a prefill chunk (simulator/kernels/families.py FI_PREFILL_MODES) ---
        "flashinfer_prefill": Param(
            "paged", "how the FlashInfer GQA families (kernel: fi_decode, fi_tc, flashinfer) prefill a chunk, as the "
                     "engine's FlashInfer backend calls it: paged = BatchPrefillWithPagedKVCacheWrapper with FlashInfer's "
                     "default backend 'auto' (vLLM's FLASHINFER): FlashInfer's own sm_90 kernel on Hopper at bf16 K/V "
                     "(simulator/kernels/fi_sm90.py, measured on the H200), its FA2 kernel otherwise; ragged = SGLang's "
                     "flashinfer backend: the new tokens through the ragged wrapper (the sm_90 kernel on Hopper), a cached "
                     "prefix through the FA2 paged wrapper, merged; fa2 = FlashInfer's FA2 kernel for every chunk (a "
                     "backend forced to fa2). The engine profiles set it (simulator/kernels/data/"
                     "engine_attention_defaults.yaml). fi_mla (SGLang only) always prefills as SGLang does: a "
                     "prefix-free chunk through the ragged sm_90 kernel at 192 / 128 on Hopper, a chunk with a prefix "
                     "by the generic op",
            lambda v: v in ("paged", "ragged", "fa2"), "paged | ragged | fa2"),
        # --- how FlashAttention-2 is called (serving-validation helper, issue 12; see _fa2_varlen_decode_ops) ---
        "fa2_call": Param(
            "sdpa", "sdpa: FlashAttention-2 as SDPA calls it (kernel: fa2 above). varlen: torch's varlen "
                    "_flash_attention_forward over a token-packed batch, as vLLM-v1-style engines and our serving "
                    "harness (lab/serving/model_torch.py) call it: split-KV only for batches of one "
                    "query row per sequence (GQA group swapped into the rows, 3 copy kernels), otherwise the "
                    "unsplit forward kernel with one CTA per (sequence, query head, 128 query rows) even for a decode "
                    "row beside a prefill chunk; every CTA iteration computes a whole 128x64 (64x128 split) tile "
                    "(flash_api.cpp mha_varlen_fwd, flash_fwd_launch_template.h; MEASURED: hwmodels/calibration/data/"
                    "serving/serving_parts_*.csv). Needs kernel: fa2",
            lambda v: v in ("sdpa", "varlen"), "sdpa | varlen"),
        "fa2_graph_max_k": Param(
            0, "max_seqlen_k FlashAttention-2's split heuristic sees in a pure decode step (fa2_call: varlen): 0 = "
               "the batch's longest context (an eager call); N = a CUDA graph captured with max_seqlen_k = N, whose "
               "split count is then fixed by the captured batch size (our harness: max_model_len = 16384)",
            lambda v: isinstance(v, int) and 0 <= v <= 1 << 24, "an integer in [0, 16777216]"),
    }

    def label(self) -> str:
        """The changed parameters (Strategy.label), and for a FlashInfer GQA family always its prefill call, default
        or not (which FlashInfer prefill kernel a run priced is not otherwise visible in a summary)."""
        out = super().label()
        if self.kernel in ("fi_decode", "fi_tc", "flashinfer") and "flashinfer_prefill=" not in out:
            extra = f"flashinfer_prefill={self.flashinfer_prefill}"
            out = out[:-1] + "," + extra + ")" if out.endswith(")") else f"{out}({extra})"
        return out

    def param_model_problem(self, model):
        if self.gqa_expand == "repeat_kv" and model.mla:
            return "gqa_expand", f"gqa_expand=repeat_kv applies to GQA/MHA models; {model.name} uses MLA"
        if self.mla_cache != "latent" and not model.mla:
            return "mla_cache", f"mla_cache={self.mla_cache} applies to MLA models only; {model.name} is not one"
        if self.kernel in PRODUCTION_FAMILIES:   # MLA vs GQA kernels (simulator/kernels/families.py)
            from simulator.kernels.families import MLA_FAMILIES, refuse

            if (self.kernel in MLA_FAMILIES) != bool(model.mla):
                return "kernel", f"{refuse(self.kernel, None, mla=bool(model.mla))} ({model.name})"
            if self.gqa_expand != "native":
                return "gqa_expand", f"kernel={self.kernel} reads the paged cache natively (gqa_expand: native)"
            return None
        if self.kernel != "generic" and model.mla:
            return ("kernel", f"kernel={self.kernel} is a GQA/MHA decode kernel family; {model.name} uses MLA "
                              "(kernel: generic)")
        return None

    def refuse(self, combo: Combo) -> str | None:
        if self.kernel in ("fa3_mla", "fa3_mla_vllm"):   # FlashAttention-3's qv kernels: Hopper, bf16 / fp16 only
            if combo.target.architecture != "hopper":
                return (f"kernel={self.kernel}: FlashAttention-3's hdim 64 x 512 qv kernels are Hopper's (sm_90a); this "
                        f"device is {combo.target.architecture}: use kernel flashmla or fi_mla")
            if combo.kv_dtype not in ("bf16", "fp16"):
                return (f"kernel={self.kernel} reads a bf16 cache (hopper/ HasQv needs !Is_FP8; vLLM's FLASH_ATTN_MLA "
                        f"refuses an fp8 cache and falls to FLASHMLA); kv_dtype is {combo.kv_dtype}: use kernel flashmla")
        if self.kernel in PRODUCTION_FAMILIES and not combo.model.mla:
            # the group size a device's kernel sees (KV heads replicate when TP exceeds them)
            from simulator.kernels.families import refuse

            G = np.asarray(combo.attn_heads_dev, dtype=float) / np.asarray(combo.attn_kv_heads_dev)
            why = refuse(self.kernel, G, mla=False)
            return f"{why} ({combo.model.name})" if why else None
        return None

    def param_problem(self):
        if self.fa2_call == "varlen" and (self.kernel != "fa2" or self.gqa_expand != "native"):
            return ("fa2_call", "fa2_call=varlen prices FlashAttention-2's varlen call: it needs kernel: fa2 and "
                                "gqa_expand: native")
        return None

    def extra_kv_bytes_per_token(self, combo: Combo) -> float:
        """A separate value cache adds kv_lora_rank values per token per layer (MLA, separate_kv); repeat_kv
        holds one layer's K and V expanded to every query head while that layer runs (a per-token transient)."""
        m = combo.model
        if self.mla_cache == "separate_kv" and m.mla:
            return m.layers * m.mla.kv_lora_rank * combo.kvbytes * combo.kv_fraction_dev
        if self.gqa_expand == "repeat_kv" and not m.mla:
            return 2.0 * combo.attn_heads_dev * m.head_dim * combo.kvbytes
        return 0.0

    @property
    def reads_ctx_max(self) -> bool:
        return self.fa2_call == "varlen"   # the varlen call's longest row (_fa2_varlen_decode_ops)

    @property
    def reads_mixed(self) -> bool:
        return self.fa2_call == "varlen"   # decode rows beside a chunk take the unswapped path

    @property
    def prices_kv_prefix(self) -> bool:
        return True

    #: the chunk grid of the engine (StrategyBase.chunk_grid_ratio) for FlashInfer's MLA families on Hopper, whose
    #: chunks over a cached prefix replay MLAPlan's causal greedy (simulator/kernels/flashinfer.py fi_mla_extend: up to
    #: one numpy round per 66-132 pieces, thousands of pieces at 8K-token chunks): 2 % steps. Its error against the
    #: exact price at every length: benchmarks/fi_mla_chunk_grid.py
    FI_MLA_CHUNK_GRID_RATIO = 1.02

    def chunk_grid_ratio(self, combo) -> float:
        from simulator.kernels.families import FI_MLA_CAUSAL_EXTEND, MLA_ABSORBED_EXTEND
        lay = self._layout(combo)
        if (lay.mla and FI_MLA_CAUSAL_EXTEND and self.kernel in MLA_ABSORBED_EXTEND
                and lay.target.architecture == "hopper"):
            return self.FI_MLA_CHUNK_GRID_RATIO
        return 0.0

    def decode_ops(self, b: OpBuilder, combo: Combo, shape: StepShape) -> None:
        self.layout_decode_ops(b, self._layout(combo), shape)

    def prefill_ops(self, b: OpBuilder, combo: Combo, shape: StepShape) -> None:
        self.layout_prefill_ops(b, self._layout(combo), shape)

    def _layout(self, combo: Combo) -> AttentionLayout:
        """The tuple's attention layout, with the device's KV pool (simulator/memory.py kv_pool_tokens) where the kernel
        family touches its whole pool each step (families.POOL_CAST_FAMILIES: fa3_mla_fp8cast, fi_mla_fp8cast)."""
        from dataclasses import replace

        from simulator.kernels.families import casts_pool
        from simulator.memory import kv_pool_tokens
        lay = combo.attn_layout
        if casts_pool(self.kernel) and not self.pool_tokens:
            lay = replace(lay, kv_pool_tokens=kv_pool_tokens(combo))
        return lay

    def layout_decode_ops(self, b: OpBuilder, lay: AttentionLayout, shape: StepShape) -> None:
        """decode_ops for an attention layout (a tuple's, or a bare kernel's in fitting)."""
        # under attention DP a device runs the kernel for its 1/attn_dp share of the sequences
        B, q, T = shape.batch / lay.attn_dp, shape.query_rows, shape.context
        kvb = lay.kvbytes
        if self.kernel in PRODUCTION_FAMILIES:   # a production kernel family (simulator/kernels/families.py)
            self._production_decode_ops(b, lay, shape, B, q, T, kvb)
            return
        splits = np.maximum(1.0, T / self.split_tokens)  # even split of the KV range (see docstring)
        split = T > self.split_tokens
        if lay.mla:
            a = lay.mla
            lat = a.kv_lora_rank + a.qk_rope_head_dim
            H = lay.attn_heads_dev
            flops = 2.0 * B * q * H * T * (lat + a.kv_lora_rank)
            # the key cache (latent + rope key), plus the value cache when it is a separate tensor
            kv_read = B * T * (lat + (a.kv_lora_rank if self.mla_cache == "separate_kv" else 0)) * kvb
            q_bytes = B * q * H * lat * ACT_BYTES
            out = B * q * H * a.kv_lora_rank
            heads_rows = B * q * H
            units = B * splits * np.ceil(H * q / 64.0)
        else:
            Hq, Hkv, d = lay.attn_heads_dev, lay.attn_kv_heads_dev, lay.head_dim
            flops = 4.0 * B * q * Hq * T * d
            # K/V streams: one per KV head when the group is packed, one per query head otherwise
            streams = np.where((q > 1) & (self.gqa_packing == "decode_only"), Hq, Hkv)
            if self.gqa_expand == "repeat_kv" and np.any(Hq > Hkv):
                # repeat_kv copies K and V to every query head, then the kernel streams all Hq heads
                expand = Hq > Hkv
                # HF's expand + reshape: a broadcast copy of K and of V per layer (simulator.layers.repeat_kv_ops)
                repeat_kv_ops(b, "attention_repeat_kv", B, T, Hq, Hkv, d, kvb, shape.layers, where=expand)
                streams = np.where(expand, np.full(np.shape(T), 1.0) * Hq, streams)
            if self.fa2_call == "varlen":  # FlashAttention-2's varlen call (below)
                self._fa2_varlen_decode_ops(b, lay, shape, B, q, T, Hq, Hkv, d, kvb)
                return
            if self.kernel != "generic":  # a named kernel family (simulator/kernels/decode_attention.py)
                # after repeat_kv the kernel sees Hq KV heads (MHA)
                hkv = np.where(self.gqa_expand == "repeat_kv", Hq, Hkv) * np.ones_like(np.asarray(T, dtype=float))
                self._family_decode_ops(b, lay, shape, B, q, T, Hq, hkv, d, kvb, flops)
                return
            kv_read = B * T * 2.0 * streams * d * kvb
            q_bytes = B * q * Hq * d * ACT_BYTES
            out = B * q * Hq * d
            heads_rows = B * q * Hq
            units = B * streams * splits
        count = shape.layers
        # with split-KV, each split reads the queries and writes an fp32 partial output and one fp32
        # log-sum-exp per (row, head)
        partials = splits * (out + heads_rows) * 4.0
        b.add("attention", "attention", flops=flops, bytes_read=kv_read + splits * q_bytes,
              bytes_written=np.where(split, partials, out * ACT_BYTES), parallel_units=units,
              dtype=ACT_DTYPE, count=count)
        # ... which a second, small kernel merges
        b.add("attention_combine", "elementwise", flops=3.0 * out * splits, bytes_read=partials,
              bytes_written=out * ACT_BYTES, dtype="fp32", count=count, where=split)

    def _production_decode_ops(self, b, lay, shape, B, q, T, kvb) -> None:
        """Decode / verification attention as a production kernel launches it (simulator/kernels/families.py): the
        family's plan rules give its CTAs, waves, serial K/V tiles, the dependent loads before each CTA's first tile
        (the per-sequence cost) and its merge kernel; the op kinds carry the family's fitted terms."""
        from simulator.kernels.families import gqa_launches, mla_launches
        from simulator.kernels.production import emit

        t = lay.target
        sms = t.sm_count
        one = np.ones(np.broadcast(B, q, T).shape)
        if lay.mla:
            a = lay.mla
            launches = mla_launches(self.kernel, B * one, q * one, T * one, lay.attn_heads_dev * one,
                                    float(a.kv_lora_rank), float(a.qk_rope_head_dim), kvb, float(self.page_size), sms,
                                    pool_tokens=self.pool_tokens or lay.kv_pool_tokens)
        else:
            launches = gqa_launches(self.kernel, B * one, q * one, T * one, lay.attn_heads_dev * one,
                                    lay.attn_kv_heads_dev * one, float(lay.head_dim), kvb * one, float(self.page_size),
                                    sms, getattr(t, "smem_per_sm", None))
        emit(b, launches, sms, count=shape.layers)

    def _production_prefill_ops(self, b, lay, shape) -> None:
        """A prefill chunk (P new tokens after kv_prefix cached ones, B prompts) as the production family's prefill
        kernel launches it (simulator/kernels/families.py gqa_prefill_launches: the causal bound on each query tile's
        keys; judged on the prefill rows of FA3's binary and FlashInfer's FA2 kernel, docs/KERNEL_FAMILIES.md)."""
        from simulator.kernels.families import gqa_prefill_launches
        from simulator.kernels.production import emit

        t = lay.target
        sms = t.sm_count
        one = np.ones(np.broadcast(shape.batch, shape.context, shape.kv_prefix).shape)
        T = np.asarray(shape.context, dtype=np.float64) * one
        P = np.maximum(T - np.asarray(shape.kv_prefix, dtype=np.float64) * one, 1.0)
        launches = gqa_prefill_launches(self.kernel, np.asarray(shape.batch, dtype=np.float64) * one, P, T,
                                        lay.heads_dev * one, lay.kv_heads_dev * one, float(lay.head_dim),
                                        lay.kvbytes * one, float(self.page_size), sms, getattr(t, "smem_per_sm", None),
                                        flashinfer_prefill=self.flashinfer_prefill, architecture=t.architecture)
        emit(b, launches, sms, count=shape.layers)

    def _production_mla_prefill_ops(self, b, lay, shape) -> None:
        """An MLA prefill chunk as the engines behind an MLA decode family prefill it on Hopper (simulator/kernels/
        families.py MLA_PREFILL_FAMILY: FlashAttention-3's varlen forward over the expanded heads, d_qk / d_v; FlashInfer's
        ragged sm_90 kernel for a prefix-free chunk); the chunks no modelled kernel covers (mla_prefill_covered) keep the
        generic op, after the whole pool's bf16 cast where the family makes one there (fi_mla_fp8cast: SGLang's paged
        extend over a cached prefix reads the cast pool)."""
        from simulator.kernels.families import (
            MLA_ABSORBED_EXTEND,
            MLA_PREFILL_FAMILY,
            casts_pool,
            mla_prefill_covered,
            mla_prefill_launches,
            pool_cast_launch,
        )
        from simulator.kernels.production import emit
        from simulator.ops import MaskedBuilder

        a, sms = lay.mla, lay.target.sm_count
        one = np.ones(np.broadcast(shape.batch, shape.context, shape.kv_prefix).shape)
        T = np.asarray(shape.context, dtype=np.float64) * one
        P = np.maximum(T - np.asarray(shape.kv_prefix, dtype=np.float64) * one, 1.0)
        covered = mla_prefill_covered(self.kernel, T, P)
        if casts_pool(self.kernel) and MLA_PREFILL_FAMILY.get(self.kernel) == "fi_sm90" and not np.all(covered):
            emit(b, [pool_cast_launch(self.pool_tokens or lay.kv_pool_tokens, float(a.kv_lora_rank),
                                      float(a.qk_rope_head_dim), one.shape, where=~covered)], sms, count=shape.layers)
        if not np.any(covered):
            self._generic_prefill_ops(b, lay, shape, absorbed=self.kernel in MLA_ABSORBED_EXTEND)
            return
        launches = mla_prefill_launches(self.kernel, np.asarray(shape.batch, dtype=np.float64) * one, P, T,
                                        lay.heads_dev * one, float(a.qk_nope_head_dim + a.qk_rope_head_dim),
                                        float(a.v_head_dim), sms, float(a.kv_lora_rank), float(a.qk_rope_head_dim),
                                        pool_tokens=self.pool_tokens or lay.kv_pool_tokens, kvb=lay.kvbytes)
        if np.all(covered):
            emit(b, launches, sms, count=shape.layers)
            return
        mask = np.broadcast_to(covered, (b.n,)) if covered.size in (1, b.n) else covered
        emit(MaskedBuilder(b, mask), launches, sms, count=shape.layers)
        self._generic_prefill_ops(MaskedBuilder(b, ~mask), lay, shape, absorbed=self.kernel in MLA_ABSORBED_EXTEND)

    def _family_decode_ops(self, b, lay, shape, B, q, T, Hq, Hkv, d, kvb, flops) -> None:
        """Decode attention as a named kernel family launches it (simulator/kernels/decode_attention.py): CTAs from the
        family's split heuristic on the target's SM count, each CTA's serial K/V tiles, partial outputs and a
        combine kernel when it splits. Op kind = the family's (its own calibrated occupancy, iteration time,
        per-wave and per-kernel fixed times)."""
        kind, ctas, splits, iters, streams, comb_iters = decode_layout(self.kernel, B, q, Hq, Hkv, T,
                                                                       lay.target.sm_count)
        rows_kind = ROWS_KIND.get(self.kernel, kind)
        count = shape.layers
        out = B * q * Hq * d
        split = splits > 1
        partials = splits * (out + B * q * Hq) * 4.0
        kv_once = B * T * 2.0 * Hkv * d * kvb
        kv_read = B * T * 2.0 * streams * d * kvb
        # heads of a GQA group that stream the group's K/V again re-read it, from L2 while it fits
        ws = np.where(kv_read > kv_once, reread_working_set(self.kernel, B, Hkv, T, d, kvb, splits=splits), 0.0)
        pairs = ((kind, q <= 1), (rows_kind, q > 1)) if rows_kind != kind else ((kind, None),)
        if self.kernel in FP8_KV_KIND:   # K/V stored in fp8: another kernel, its own kind (decode_attention.FP8_KV_KIND)
            fp8 = np.asarray(kvb) < 2.0
            both = lambda w, m: m if w is None else (w & m)  # noqa: E731
            pairs = tuple((k_, both(w_, ~fp8)) for k_, w_ in pairs) + \
                tuple((FP8_KV_KIND[self.kernel], both(w_, fp8)) for _, w_ in pairs)
        for k_, w_ in pairs:
            b.add("attention", k_, flops=flops, bytes_read=kv_read + splits * B * q * Hq * d * ACT_BYTES,
                  bytes_written=np.where(split, partials, out * ACT_BYTES), parallel_units=ctas,
                  serial_iters=iters, reread_bytes=kv_read - kv_once, working_set=ws, dtype=ACT_DTYPE, count=count,
                  where=w_)
        # the family's own combine kernel (its CTAs and serial split loads: decode_attention.combine_layout)
        comb_ctas, _ = combine_layout(self.kernel, B, q, Hq, splits)
        b.add("attention_combine", COMBINE_KIND.get(self.kernel, kind), flops=3.0 * out * splits, bytes_read=partials,
              bytes_written=out * ACT_BYTES, parallel_units=comb_ctas, serial_iters=comb_iters, dtype="fp32",
              count=count, where=split)

    def layout_prefill_ops(self, b: OpBuilder, lay: AttentionLayout, shape: StepShape) -> None:
        """prefill_ops for an attention layout (a tuple's, or a bare kernel's in fitting)."""
        if self.fa2_call == "varlen":
            self._fa2_varlen_prefill_ops(b, lay, shape)
            return
        if self.kernel in PREFILL_FAMILY and not lay.mla:   # a production family's own prefill kernel
            self._production_prefill_ops(b, lay, shape)
            return
        if lay.mla and self.kernel in MLA_PREFILL_FAMILY and lay.target.architecture == "hopper":
            self._production_mla_prefill_ops(b, lay, shape)
            return
        self._generic_prefill_ops(b, lay, shape)

    def _generic_prefill_ops(self, b, lay: AttentionLayout, shape: StepShape, absorbed: bool = False) -> None:
        """The calibrated generic prefill op: one 'attention' op of the chunk's causal pairs (fitted on cuDNN's
        prefill, simulator/calibration/fit_prefill.py). MLA: the expanded MHA form (d_qk + d_v a pair a head), or with
        `absorbed` the latent form an engine's absorbed kernel runs at prompt rows (families.MLA_ABSORBED_EXTEND:
        d_ckv + d_kpe + d_ckv a pair a head, one bf16 latent a cached token shared by the heads)."""
        B, P = shape.batch, shape.context  # one prompt's heads: the layout's heads_dev (Combo.prefill_heads_dev)
        # a chunk of a chunked prefill: P - O new tokens after O cached ones (engine steps set kv_prefix)
        O = shape.kv_prefix
        P = P - O
        pairs = P * (P + 1) / 2.0 + P * O  # causal (query, key) pairs per head
        H = lay.heads_dev
        if lay.mla and absorbed:
            a = lay.mla
            lat = a.kv_lora_rank + a.qk_rope_head_dim
            flops = 2.0 * B * H * pairs * (lat + a.kv_lora_rank)
            io = B * P * H * (lat + a.kv_lora_rank) * ACT_BYTES      # q (latent + rope) and o (latent) of every row
            prefix = B * (O + P) * lat * ACT_BYTES                   # the latent of every key, read once
        elif lay.mla:
            a = lay.mla
            dk, dv = a.qk_nope_head_dim + a.qk_rope_head_dim, a.v_head_dim
            flops = 2.0 * B * H * pairs * (dk + dv)
            io = B * P * H * (2 * dk + 2 * dv) * ACT_BYTES
            prefix = B * O * H * (dk + dv) * ACT_BYTES  # the prefix's expanded keys and values
        else:
            d, Hkv = lay.head_dim, lay.kv_heads_dev
            flops = 4.0 * B * H * pairs * d
            io = B * P * (2 * H * d * ACT_BYTES + 2 * Hkv * d * lay.kvbytes)
            prefix = B * O * 2 * Hkv * d * lay.kvbytes  # the cached prefix's keys and values
        b.add("attention", "attention", flops=flops, bytes_read=io * 0.5 + prefix, bytes_written=io * 0.5,
              parallel_units=B * H * np.maximum(1.0, P / PREFILL_Q_TILE), dtype=ACT_DTYPE,
              count=shape.layers)

    # --- FlashAttention-2's varlen call (fa2_call: varlen; serving-validation helper, issue 12) ---------------------
    # One launch of torch.ops.aten._flash_attention_forward over a token-packed batch (flash_api.cpp mha_varlen_fwd):
    # * one query row per sequence and Hq > Hkv (a pure decode step): the GQA group is swapped into the query rows
    #   (3 copy kernels: q in, out, q_padded) and the split count comes from FlashAttention-2's heuristic on
    #   B * Hkv CTAs and max_seqlen_k (fa2_graph_max_k, or the longest row); S > 1 runs the split-KV kernel (64 x 128
    #   tiles) and a combine kernel, S = 1 the forward kernel (128 x 64 tiles);
    # * anything else (a decode row beside a prefill chunk, verification rows, MHA): no swap, no split: the forward
    #   kernel, one CTA per (sequence, query head, 128 query rows), each walking its keys in 64-key tiles.
    # Every iteration computes a whole tile (QK^T and PV over kBlockM x kBlockN x d) whatever rows are valid: the op's
    # flops are tile flops. A CTA's iterations are its serial chain (serial_iters: the mean CTA's). FlashAttention-2
    # assumes 2 resident CTAs per SM (flash_api.cpp: num_SMs * 2); its grid runs the heads last, so when the CTAs
    # fill more than one wave of 2 x SMs, the longest row's (StepShape.ctx_max, default the mean) last CTA
    # starts near the end and runs its excess tiles (longest - mean) alone after the others: each such tile is one
    # serialized phase of the kernel (sync_steps, priced at sync_s[attn_fa2], the lone CTA's iteration). In one
    # wave every CTA starts at once: the chain is the longest CTA's (serial_iters = its tiles). The roofline (kind
    # attn_fa2, waves of cta_slots per SM) prices max(tile compute, bytes, waves x chain x iter_s) + fixed + the tail
    # + waves x cta_fixed.
    FA2_FWD_M, FA2_SPLIT_M = 128.0, 64.0   # query rows per tile: forward kernel / split-KV kernel (d <= 128, sm90)

    @staticmethod
    def _fa2_fwd_n(d):
        """Keys per tile of the forward kernel: run_mha_fwd_hdim64 128 x 128, hdim128/256 128 x 64 (sm90)."""
        return np.where(np.asarray(d) <= 64, 128.0, 64.0)

    @staticmethod
    def _fa2_split_n(d):
        """Keys per tile of the split-KV kernel (set_params_splitkv block_n): 256 / 128 / 64 for d <= 64 / 128 / more."""
        d = np.asarray(d)
        return np.where(d <= 64, 256.0, np.where(d <= 128, 128.0, 64.0))

    def _fa2_chain_op(self, b, lay, name, ctas, mean_it, max_it, flops, bytes_read, bytes_written, count,
                      where=None):
        slots = float(FA2_CTAS_PER_SM * lay.target.sm_count)
        waves = np.maximum(np.ceil(ctas / slots), 1.0)
        longest = np.maximum(max_it, mean_it)
        one_wave = waves <= 1.0
        b.add(name, "attn_fa2", flops=flops, bytes_read=bytes_read, bytes_written=bytes_written,
              parallel_units=np.maximum(ctas, 1.0), serial_iters=np.where(one_wave, longest, mean_it),
              sync_steps=np.where(one_wave, 0.0, longest - mean_it), dtype=ACT_DTYPE, count=count, where=where)

    def _fa2_varlen_decode_ops(self, b, lay, shape, B, q, T, Hq, Hkv, d, kvb) -> None:
        count = shape.layers
        shp = np.broadcast(B, q, T, Hq, Hkv).shape
        one = np.ones(shp)
        B, q, T, Hq, Hkv = B * one, q * one, T * one, Hq * one, Hkv * one
        Tmax = np.maximum(np.asarray(T if shape.ctx_max is None else shape.ctx_max, dtype=np.float64) * one, T)
        G = Hq / Hkv
        swapped = (q <= 1) & (G > 1) & (not shape.mixed)
        sms = lay.target.sm_count
        kv_tok = 2.0 * Hkv * d * kvb                                   # K and V bytes of one cached token
        qo = 2.0 * B * q * Hq * d * ACT_BYTES                          # Q read, O written
        # split count (swapped path only): FlashAttention-2's heuristic on 2 x SMs
        maxk = float(self.fa2_graph_max_k) if self.fa2_graph_max_k > 0 else Tmax
        nsp = self._fa2_split_n(d)
        S = np.where(swapped, fa2_num_splits(B * Hkv * np.ceil(G / self.FA2_SPLIT_M), FA2_CTAS_PER_SM * sms,
                                             np.ceil(maxk / nsp) * one), 1.0)
        split = S > 1
        nf = self._fa2_fwd_n(d)
        # forward kernel: CTAs per (sequence, head group) and 64-key tiles; swapped: the Hkv heads, G rows each
        f_ctas = np.where(swapped, B * Hkv * np.ceil(G / self.FA2_FWD_M), B * Hq * np.ceil(q / self.FA2_FWD_M))
        # the mean CTA's tiles continuous (over rows of different lengths the partial last tiles average out, and a
        # price that jumps every 64 tokens of the MEAN context would defeat the engine's grids); the longest exact
        f_mean, f_max = T / nf, np.ceil(Tmax / nf)
        # split-KV kernel: B * Hkv * S CTAs; each split walks ceil(ceil(T / 128) / S) 128-key tiles
        s_rows = B * Hkv * np.ceil(G / self.FA2_SPLIT_M)
        s_ctas = s_rows * S
        s_mean = T / nsp / S
        s_max = np.ceil(np.ceil(Tmax / nsp) / S)
        tile_f = np.where(split, 4.0 * self.FA2_SPLIT_M * nsp * d, 4.0 * self.FA2_FWD_M * nf * d)
        ctas = np.where(split, s_ctas, f_ctas)
        tiles = ctas * np.where(split, s_mean, f_mean)
        # a CTA's chain in units of the forward kernel's 64-key iteration: a lone CTA streams its K/V at its own
        # rate, so a split-KV iteration over 128 keys is two such units (MEASURED: serving_parts_*.csv, steps with one
        # long row beside short ones take about twice as long per split tile as per forward tile)
        unit = np.where(split, nsp / nf, 1.0)
        mean_it = np.where(split, s_mean, f_mean) * unit
        max_it = np.where(split, s_max, f_max) * unit
        partials = np.where(split, S * B * q * Hq * (d + 1.0) * 4.0, 0.0)
        self._fa2_chain_op(b, lay, "attention", ctas, mean_it, max_it, tiles * tile_f,
                           B * T * kv_tok + qo / 2.0, np.where(split, partials, qo / 2.0), count)
        # the swapped path's copies (q reshaped / transposed in, out and q_padded back) and the split combine
        b.add("attention_swap_copy", "copy", bytes_read=qo / 2.0, bytes_written=qo / 2.0, dtype=ACT_DTYPE,
              count=3.0 * count * one, where=swapped)
        b.add("attention_combine", "copy", flops=3.0 * B * q * Hq * d * S, bytes_read=partials,
              bytes_written=qo / 2.0, dtype="fp32", count=count, where=split)

    def _fa2_varlen_prefill_ops(self, b, lay, shape) -> None:
        """A prefill chunk of P tokens after O cached ones in the forward kernel: M = ceil(P / 128) query tiles per
        head, tile j walks keys 0 .. O + min(128 (j + 1), P) in 64-key tiles (causal, bottom-right aligned)."""
        if lay.mla:  # refused; kept for safety
            raise ValueError("fa2_call=varlen on an MLA model")
        B, ctx = shape.batch, shape.context
        O = np.asarray(shape.kv_prefix, dtype=np.float64)
        P = ctx - O
        H, Hkv, d = lay.heads_dev, lay.kv_heads_dev, lay.head_dim
        nf = self._fa2_fwd_n(d)
        M = np.maximum(np.ceil(P / self.FA2_FWD_M), 1.0)
        # sum over the query tiles of their key tiles: tiles 0 .. M-2 cover O + 128 (j + 1) keys, the last O + P
        # (the cached prefix counted continuously, O / 64 tiles: its partial last tile is at most one per query tile,
        # and a cost that jumps every 64 prefix tokens would defeat the engine's interpolation in the prefix)
        per_head = (M - 1.0) * (O / nf) + (M - 1.0) * M / 2.0 * (self.FA2_FWD_M / nf) + np.ceil(P / nf) + O / nf
        ctas = B * H * M
        io = B * P * (2 * H * d * ACT_BYTES + 2 * Hkv * d * lay.kvbytes)
        prefix = B * O * 2 * Hkv * d * lay.kvbytes
        self._fa2_chain_op(b, lay, "attention", ctas, per_head / M, np.ceil(P / nf) + O / nf,
                           B * H * per_head * 4.0 * self.FA2_FWD_M * nf * d, io * 0.5 + prefix, io * 0.5,
                           shape.layers)
