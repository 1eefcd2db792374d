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
as for decode). A chunk of a chunked prefill (shape.extra["kv_prefix"] = O cached tokens, shape.context =
O + P): P(P+1)/2 + P*O pairs, the prefix's K/V read once more (MLA: its expanded keys and values), units
over the chunk's P query tokens; without kv_prefix (O = 0) the whole-prompt cost above is unchanged.
"""
from __future__ import annotations

import numpy as np

from simulator.precision import ACT_BYTES, ACT_DTYPE
from simulator.strategies.base import AttentionStrategy, Param, register

PREFILL_Q_TILE = 128  # FlashAttention-2 query tile (Dao 2023, sec. 3.1 block sizes); also FA3's default


@register
class DenseAttention(AttentionStrategy):
    name = "dense"
    description = "full attention over the whole KV cache (FlashAttention / FlashDecoding / FlashMLA)"
    array_combo = True                 # hooks are array-safe (notes/VECTOR_COMBOS.md)
    array_params = ("split_tokens",)
    params = {
        "split_tokens": Param(
            256, "ASSUMPTION until calibrated (issue 3): FlashDecoding-style split-KV chunk; 256 tokens per "
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
                      "(seeds/003 sec. 2.3 and Listings 2-5 treat key and value caches separately)",
            lambda v: v in ("latent", "separate_kv"), "latent | separate_kv (MLA models only)"),
        # --- kernel model (calibration helper, issue 15): how the decode kernel parallelizes ---
        "kernel": Param(
            "generic", "generic: the calibrated continuous split-KV model above (split_tokens per CTA, op kind "
                       "'attention'). A named family prices the decode kernel as that kernel launches it: its CTAs "
                       "per batch x KV head x split from the family's split heuristic, each CTA's chain of K/V tiles, "
                       "waves of resident CTAs (simulator/decode_kernels.py: fa2 = FlashAttention-2 / SDPA flash, "
                       "triton_splitkv = our Triton kernel with FA2's split rule, flex = FlexAttention, cudnn = cuDNN "
                       "SDPA, memeff = memory-efficient SDPA without split-KV); calibrated by "
                       "hwmodels/calibration/measure_regimes.py (H100)",
            lambda v: v in ("generic", "fa2", "triton_splitkv", "flex", "cudnn", "memeff"),
            "generic | fa2 | triton_splitkv | flex | cudnn | memeff"),
    }

    def refuse(self, combo):
        if self.gqa_expand == "repeat_kv" and combo.model.mla:
            return f"gqa_expand=repeat_kv applies to GQA/MHA models; {combo.model.name} uses MLA"
        if self.mla_cache != "latent" and not combo.model.mla:
            return f"mla_cache={self.mla_cache} applies to MLA models only; {combo.model.name} is not one"
        if self.kernel != "generic" and combo.model.mla:
            return f"kernel={self.kernel} is a GQA/MHA decode kernel family; {combo.model.name} uses MLA (kernel: generic)"
        return None

    def extra_kv_bytes_per_token(self, combo) -> float:
        """A separate value cache adds kv_lora_rank values per token per layer (MLA, separate_kv); repeat_kv
        holds one layer's K and V expanded to every query head while that layer runs (a per-token transient)."""
        m = combo.model
        if self.mla_cache == "separate_kv" and m.mla:
            return m.layers * m.mla.kv_lora_rank * combo.kvbytes * combo.kv_fraction_dev
        if self.gqa_expand == "repeat_kv" and not m.mla:
            return 2.0 * combo.attn_heads_dev * m.head_dim * combo.kvbytes
        return 0.0

    def decode_ops(self, b, combo, shape) -> None:
        m = combo.model
        # under attention DP a device runs the kernel for its 1/attn_dp share of the sequences
        B, q, T = shape.batch / combo.attn_dp, shape.query_rows, shape.context
        kvb = combo.kvbytes
        splits = np.maximum(1.0, T / self.split_tokens)  # even split of the KV range (see docstring)
        split = T > self.split_tokens
        if m.mla:
            a = m.mla
            lat = a.kv_lora_rank + a.qk_rope_head_dim
            H = combo.attn_heads_dev
            flops = 2.0 * B * q * H * T * (lat + a.kv_lora_rank)
            # the key cache (latent + rope key), plus the value cache when it is a separate tensor
            kv_read = B * T * (lat + (a.kv_lora_rank if self.mla_cache == "separate_kv" else 0)) * kvb
            q_bytes = B * q * H * lat * ACT_BYTES
            out = B * q * H * a.kv_lora_rank
            heads_rows = B * q * H
            units = B * splits * np.ceil(H * q / 64.0)
        else:
            Hq, Hkv, d = combo.attn_heads_dev, combo.attn_kv_heads_dev, m.head_dim
            flops = 4.0 * B * q * Hq * T * d
            # K/V streams: one per KV head when the group is packed, one per query head otherwise
            streams = np.where((q > 1) & (self.gqa_packing == "decode_only"), Hq, Hkv)
            if self.gqa_expand == "repeat_kv" and np.any(Hq > Hkv):
                # repeat_kv copies K and V to every query head, then the kernel streams all Hq heads
                expand = Hq > Hkv
                # kind copy_strided (calibration helper, issue 15): HF's expand + reshape is a broadcast copy
                b.add("attention_repeat_kv", "copy_strided", bytes_read=B * T * 2.0 * Hkv * d * kvb,
                      bytes_written=B * T * 2.0 * Hq * d * kvb, dtype=ACT_DTYPE, count=shape.extra["layers"],
                      where=expand)
                streams = np.where(expand, np.full(np.shape(T), 1.0) * Hq, streams)
            if self.kernel != "generic":  # a named kernel family (simulator/decode_kernels.py)
                # after repeat_kv the kernel sees Hq KV heads (MHA)
                hkv = np.where(self.gqa_expand == "repeat_kv", Hq, Hkv) * np.ones_like(np.asarray(T, dtype=float))
                self._family_decode_ops(b, combo, shape, B, q, T, Hq, hkv, d, kvb, flops)
                return
            kv_read = B * T * 2.0 * streams * d * kvb
            q_bytes = B * q * Hq * d * ACT_BYTES
            out = B * q * Hq * d
            heads_rows = B * q * Hq
            units = B * streams * splits
        count = shape.extra["layers"]
        # with split-KV, each split reads the queries and writes an fp32 partial output and one fp32
        # log-sum-exp per (row, head)
        partials = splits * (out + heads_rows) * 4.0
        b.add("attention", "attention", flops=flops, bytes_read=kv_read + splits * q_bytes,
              bytes_written=np.where(split, partials, out * ACT_BYTES), parallel_units=units,
              dtype=ACT_DTYPE, count=count)
        # ... which a second, small kernel merges
        b.add("attention_combine", "elementwise", flops=3.0 * out * splits, bytes_read=partials,
              bytes_written=out * ACT_BYTES, dtype="fp32", count=count, where=split)

    def _family_decode_ops(self, b, combo, shape, B, q, T, Hq, Hkv, d, kvb, flops) -> None:
        """Decode attention as a named kernel family launches it (simulator/decode_kernels.py): CTAs from the
        family's split heuristic on the target's SM count, each CTA's serial K/V tiles, partial outputs and a
        combine kernel when it splits. Op kind = the family's (its own calibrated occupancy, iteration time,
        per-wave and per-kernel fixed times)."""
        from simulator.decode_kernels import ROWS_KIND, decode_layout, reread_working_set

        kind, ctas, splits, iters, streams, comb_iters = decode_layout(self.kernel, B, q, Hq, Hkv, T,
                                                                       combo.target.sm_count)
        rows_kind = ROWS_KIND.get(self.kernel, kind)
        count = shape.extra["layers"]
        out = B * q * Hq * d
        split = splits > 1
        partials = splits * (out + B * q * Hq) * 4.0
        kv_once = B * T * 2.0 * Hkv * d * kvb
        kv_read = B * T * 2.0 * streams * d * kvb
        # heads of a GQA group that stream the group's K/V again re-read it, from L2 while it fits
        ws = np.where(kv_read > kv_once, reread_working_set(self.kernel, B, Hkv, T, d, kvb), 0.0)
        for k_, w_ in ((kind, q <= 1), (rows_kind, q > 1)) if rows_kind != kind else ((kind, None),):
            b.add("attention", k_, flops=flops, bytes_read=kv_read + splits * B * q * Hq * d * ACT_BYTES,
                  bytes_written=np.where(split, partials, out * ACT_BYTES), parallel_units=ctas,
                  serial_iters=iters, reread_bytes=kv_read - kv_once, working_set=ws, dtype=ACT_DTYPE, count=count,
                  where=w_)
        b.add("attention_combine", kind, flops=3.0 * out * splits, bytes_read=partials, bytes_written=out * ACT_BYTES,
              parallel_units=np.maximum(1.0, np.ceil(B * q * Hq / 64.0)), serial_iters=comb_iters, dtype="fp32",
              count=count, where=split)

    def prefill_ops(self, b, combo, shape) -> None:
        m = combo.model
        B, P = shape.batch, shape.context  # prefill runs one prompt on the whole TP group (no attention DP)
        # a chunk of a chunked prefill: P - O new tokens after O cached ones (engine steps set kv_prefix)
        O = shape.extra.get("kv_prefix", 0.0)
        P = P - O
        pairs = P * (P + 1) / 2.0 + P * O  # causal (query, key) pairs per head
        H = combo.heads_dev
        if m.mla:
            a = m.mla
            dk, dv = a.qk_nope_head_dim + a.qk_rope_head_dim, a.v_head_dim
            flops = 2.0 * B * H * pairs * (dk + dv)
            io = B * P * H * (2 * dk + 2 * dv) * ACT_BYTES
            prefix = B * O * H * (dk + dv) * ACT_BYTES  # the prefix's expanded keys and values
        else:
            d, Hkv = m.head_dim, combo.kv_heads_dev
            flops = 4.0 * B * H * pairs * d
            io = B * P * (2 * H * d * ACT_BYTES + 2 * Hkv * d * combo.kvbytes)
            prefix = B * O * 2 * Hkv * d * combo.kvbytes  # the cached prefix's keys and values
        b.add("attention", "attention", flops=flops, bytes_read=io * 0.5 + prefix, bytes_written=io * 0.5,
              parallel_units=B * H * np.maximum(1.0, P / PREFILL_Q_TILE), dtype=ACT_DTYPE,
              count=shape.extra["layers"])
