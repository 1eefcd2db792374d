"""kv_policy: streamingllm | snapkv | snapstream — KV-cache compression to a fixed token budget.

Source text: SnapStream = /work/shared/seeds/003_*.txt ("SnapStream: Efficient Long Sequence Decoding on
Dataflow Accelerators"); StreamingLLM = Xiao et al. 2024 (attention sinks); SnapKV = Li et al. 2024.

What each policy keeps (hooks of simulator.strategies.base.KVPolicyStrategy):
  streamingllm  sink tokens + a window of recent tokens (ring buffer): budget = sink + recent
  snapkv        at prefill, the observation window's attention (summed over the window, average-pooled with
                a 1-D kernel) picks the top-K prefix tokens; budget = max_capacity (window included)
  snapstream    SnapKV at prefill over the eviction candidates between the sinks and the recent window,
                then StreamingLLM's ring buffer at decode: budget = sink + recent + top-K (SnapStream sec. 3)
  cached_tokens(C)   = min(C, budget)        (the fixed budget is what raises the maximum batch)
  attended_tokens(T) = min(T, budget)        (the decode kernel reads the budget, not the context)
SnapKV as modeled is a fixed budget too: the tokens generated after the one-time compression are not
counted (the hook sees only the KV length); with output << budget the error is output / budget.

Prefill overhead (prefill_ops; per device, per layer, prompt of P tokens, one sequence; H query heads on
the device, key width dk: MLA's expanded 192-wide prefill keys, GQA's head_dim over Hkv KV heads):
  snapkv_scores   the recomputed W = softmax(Q_obs K_evict^T / sqrt d) summed over the window (SnapStream
                  sec. 3.2.2, Eq. 1 and 3): flops 2 H L_obs E dk + 5 H L_obs E (scale, exp, normalize, sum),
                  reads the E candidate keys and the L_obs queries, writes H x E fp32 column sums
  snapkv_pool     avg-pool (kernel k, stride 1): k flops per score, reads/writes the H x E scores
  snapkv_topk     top-K over E per KV head (MLA: one index set for the shared latent, scores summed over heads)
  snapkv_gather   gathers the K chosen tokens' cached K/V (or latent): reads and writes K tokens
  ring_buffer     (streamingllm, snapstream) SnapStream Listing 3: the sink slice + two gathers of `recent`
                  tokens (Range 1 and 2), a select: reads sink + 2 recent tokens, writes sink + recent
Decode update (`decode_update`):
  ring    one scatter of the new token at the ring index (SnapStream Eq. 4 / Listing 5) — the same in-place
          KV write the body already prices (rope_kv_write): nothing extra.
  naive   SnapStream Listing 2: each step slices sink / top-K / recent and concatenates them with the new
          token into a new cache: a full copy of the compressed cache per layer (decode_ops, kind 'copy'),
          and on a static-graph dataflow device those slices are on-chip buffers of the whole compressed
          K and V of the device's sequences (onchip_bytes): batch_dev x budget x (K + V elements per token
          per layer) x KV bytes — MLA: K = latent + rope key (576), V = latent (512), as Listing 2 keeps keys
          and values as two tensors. The planner refuses settings whose buffers exceed the device's on-chip
          memory (simulator.combo.onchip_overflow).
Ring-buffer index arithmetic of the paper's listings: ring_buffer_index (Listing 5), prefill_ring_ranges
(Listing 3) and ring_buffer_positions (which token each slot holds) — exact integer functions, tested.
"""
from __future__ import annotations

import math

import numpy as np

from simulator.combo import Combo
from simulator.ops import OpBuilder
from simulator.precision import ACT_BYTES, ACT_DTYPE
from simulator.strategies.base import KVPolicyStrategy, Param, StepShape, register
from simulator.strategies.dense import PREFILL_Q_TILE


# ---- the paper's index arithmetic --------------------------------------------------------------------
def ring_buffer_index(decode_length: int, sink: int, recent: int) -> int:
    """Slot written by the token at position `decode_length` (SnapStream Listing 5, lines 12-16):
    positions below `sink` go to their own slot; later ones rotate through the `recent` slots after the sinks."""
    if decode_length < sink:
        return decode_length
    return (decode_length - sink + recent) % recent + sink


def prefill_ring_ranges(input_length: int, sink: int, recent: int) -> tuple[int, int, int]:
    """(range1_lhb, range2_lhb, select_offset) of the prefill ring-buffer construction (SnapStream Listing 3,
    lines 13-21): ring slot j holds token range2_lhb + j when j <= select_offset, else range1_lhb + j."""
    factor = (input_length - sink + recent) // recent
    range2 = max(factor * recent + sink - recent, sink)
    range1 = max(range2 - recent, sink)
    return range1, range2, input_length - range2


def ring_buffer_positions(input_length: int, sink: int, recent: int) -> list[int]:
    """Token position held by each of the `recent` ring slots after prefill of `input_length` tokens
    (Listing 3, lines 22-33). Positions >= input_length are padding (Range 2 reaches past the prompt)."""
    r1, r2, off = prefill_ring_ranges(input_length, sink, recent)
    return [(r2 + j) if j <= off else (r1 + j) for j in range(recent)]


def _pos_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 1


def _odd_int(v) -> bool:
    """An odd pooling kernel: SnapKV pools with stride 1 and padding kernel // 2, which keeps the score row's length
    only for odd sizes."""
    return _pos_int(v) and v % 2 == 1


def _nonneg_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


DECODE_UPDATE = Param("ring", "SnapStream sec. 3.2.1: the ring buffer (Listing 5); 'naive' = Listing 2's concatenation",
                      lambda v: v in ("ring", "naive"), "ring | naive")


class _FixedBudget(KVPolicyStrategy):
    """A cache capped at `budget()` tokens."""

    has_ring = False

    def budget(self) -> int:
        raise NotImplementedError

    def cached_tokens(self, combo: Combo, context: np.ndarray) -> np.ndarray:
        return np.minimum(np.asarray(context, dtype=np.float64), float(self.budget()))

    def attended_tokens(self, combo: Combo, kv_len: np.ndarray) -> np.ndarray:
        return np.minimum(np.asarray(kv_len, dtype=np.float64), float(self.budget()))

    # ---- shapes --------------------------------------------------------------------------------------
    @staticmethod
    def _kv_tok_prefill(combo) -> float:
        """Cached bytes of one token of one layer on one device in the prefill layout (prefill_kv_heads_dev); an MLA
        cache kept as separate key and value latents (attention dense mla_cache=separate_kv) moves both."""
        m = combo.model
        frac = 1.0 if m.mla else combo.prefill_kv_heads_dev / m.kv_heads
        base = m.kv_elements_per_token_layer() * frac * combo.kvbytes
        if m.mla:
            # the attention's extra cache bytes per token (all layers, this device's share) -> per layer, per sequence
            base += combo.attention.extra_kv_bytes_per_token(combo) / (m.layers * combo.kv_fraction_dev)
        return base

    @staticmethod
    def _kv_elems_decode_kv_tensors(combo) -> float:
        """K + V elements of one token of one layer on a device that holds the sequence, in the attention's
        cache layout (MLA: the shared latent + rope key, plus the latent again as values when the attention
        keeps keys and values as two tensors, mla_cache separate_kv)."""
        m = combo.model
        if m.mla:
            sep = getattr(combo.attention, "values", {}).get("mla_cache") == "separate_kv"
            return (m.mla.kv_lora_rank + m.mla.qk_rope_head_dim) + (m.mla.kv_lora_rank if sep else 0.0)
        return 2.0 * combo.attn_kv_heads_dev * m.head_dim

    # ---- decode update -------------------------------------------------------------------------------
    @property
    def decode_cost_per_row(self) -> bool:
        # the naive update rebuilds the cache only of rows whose context reached the budget: a mask per row
        return self.values.get("decode_update", "ring") == "naive"

    def decode_ops(self, b: OpBuilder, combo: Combo, shape: StepShape) -> None:
        if self.values.get("decode_update", "ring") != "naive":
            return None
        B = shape.batch / combo.attn_dp
        nbytes = B * shape.context * self._kv_elems_decode_kv_tensors(combo) * combo.kvbytes
        # Listing 2 lines 24-32: slices + concatenation rebuild the whole compressed cache every step
        b.add("kv_concat_update", "copy", bytes_read=nbytes, bytes_written=nbytes, dtype=ACT_DTYPE,
              count=shape.layers, where=shape.context >= self.budget())

    def onchip_bytes(self, combo: Combo, batch: np.ndarray, context: np.ndarray):
        if self.values.get("decode_update", "ring") != "naive":
            return 0.0
        batch_dev = np.ceil(np.asarray(batch, dtype=np.float64) / combo.attn_dp)
        # the static graph allocates the compressed cache's full length whatever the context
        return batch_dev * self.budget() * self._kv_elems_decode_kv_tensors(combo) * combo.kvbytes

    # ---- prefill -------------------------------------------------------------------------------------
    def _ring_ops(self, b, combo, shape, sink: int, recent: int) -> None:
        kv = self._kv_tok_prefill(combo)
        B = shape.batch
        b.add("ring_buffer", "gather", bytes_read=B * (sink + 2.0 * recent) * kv,
              bytes_written=B * (sink + recent) * kv, dtype=ACT_DTYPE, count=shape.layers)

    def _snapkv_ops(self, b, combo, shape, evict: np.ndarray, topk: int, window: int, kernel: int) -> None:
        m = combo.model
        B, layers = shape.batch, shape.layers
        H = combo.prefill_heads_dev
        E = np.maximum(np.asarray(evict, dtype=np.float64), 0.0)
        K = np.minimum(E, float(topk))
        on = E > 0
        if m.mla:
            dk = m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim
            key_bytes_tok = H * dk * ACT_BYTES       # expanded per-head prefill keys
            sel_heads = 1.0                          # one index set for the shared latent
        else:
            dk = m.head_dim
            key_bytes_tok = combo.prefill_kv_heads_dev * dk * combo.kvbytes
            sel_heads = float(combo.prefill_kv_heads_dev)
        W = float(window)
        b.add("snapkv_scores", "attention", flops=2.0 * B * H * W * E * dk + 5.0 * B * H * W * E,
              bytes_read=B * E * key_bytes_tok + B * W * H * dk * ACT_BYTES, bytes_written=B * H * E * 4.0,
              parallel_units=B * H * np.maximum(1.0, E / PREFILL_Q_TILE), dtype=ACT_DTYPE, count=layers, where=on)
        b.add("snapkv_pool", "elementwise", flops=float(kernel) * B * H * E, bytes_read=B * H * E * 4.0,
              bytes_written=B * H * E * 4.0, dtype="fp32", count=layers, where=on)
        b.add("snapkv_topk", "topk", flops=2.0 * B * H * E, bytes_read=B * H * E * 4.0,
              bytes_written=B * sel_heads * K * 4.0, dtype="fp32", count=layers, where=on)
        kv = self._kv_tok_prefill(combo)
        b.add("snapkv_gather", "gather", bytes_read=B * K * (kv + sel_heads * 4.0), bytes_written=B * K * kv,
              dtype=ACT_DTYPE, count=layers, where=on)


@register
class StreamingLLM(_FixedBudget):
    name = "streamingllm"
    description = "StreamingLLM: attention sinks + a ring buffer of recent tokens"
    has_ring = True
    params = {
        "sink_tokens": Param(4, "StreamingLLM (Xiao et al. 2024): four initial tokens as attention sinks",
                             _nonneg_int, "an integer >= 0"),
        "recent_tokens": Param(4092, "ASSUMPTION: a 4096-token cache (4 sinks + 4092 recent), the same budget as "
                                     "LServe's default token budget, for comparability", _pos_int, "an integer >= 1"),
        "decode_update": DECODE_UPDATE,
    }

    def budget(self) -> int:
        return self.sink_tokens + self.recent_tokens

    def prefill_ops(self, b: OpBuilder, combo: Combo, shape: StepShape) -> None:
        self._ring_ops(b, combo, shape, self.sink_tokens, self.recent_tokens)


@register
class SnapKV(_FixedBudget):
    name = "snapkv"
    description = "SnapKV: observation-window attention, pooled, picks the top-K prompt tokens once at prefill"
    params = {
        "window": Param(32, "SnapKV (Li et al. 2024): observation window of 32 tokens", _pos_int, "an integer >= 1"),
        "kernel": Param(7, "SnapKV (Li et al. 2024): pooling kernel size 7", _odd_int, "an odd integer >= 1"),
        "max_capacity": Param(4096, "SnapKV (Li et al. 2024): max_capacity_prompt 4096 in its LongBench runs",
                              _pos_int, "an integer >= 1 (tokens kept, window included)"),
    }

    def budget(self) -> int:
        return self.max_capacity

    def param_problem(self):
        if self.window >= self.max_capacity:
            return "window", f"window {self.window} must be smaller than max_capacity {self.max_capacity}"
        return None

    def prefill_ops(self, b: OpBuilder, combo: Combo, shape: StepShape) -> None:
        P = shape.context
        self._snapkv_ops(b, combo, shape, np.where(P > self.max_capacity, P - self.window, 0.0),
                         self.max_capacity - self.window, self.window, self.kernel)


@register
class SnapStream(_FixedBudget):
    name = "snapstream"
    description = "SnapStream: SnapKV at prefill + StreamingLLM ring buffer at decode, fixed sink+recent+top-K"
    has_ring = True
    params = {
        "budget_tokens": Param(32768, "SnapStream Tables 2 and 5: SnapStream-32k, a fixed 32K KV cache",
                               _pos_int, "an integer >= 1 (sink + recent + top-K)"),
        "sink_tokens": Param(4, "StreamingLLM's four attention sinks (SnapStream builds on it, sec. 2.5); the "
                                "paper does not state its split", _nonneg_int, "an integer >= 0"),
        "recent_tokens": Param(4096, "ASSUMPTION: the paper does not state the recent window for DeepSeek-R1; it "
                                     "only sizes the prefill ring-buffer gathers (the budget fixes decode cost)",
                               _pos_int, "an integer >= 1"),
        "window": Param(32, "ASSUMPTION: SnapKV's default observation window (32, Li et al. 2024); SnapStream does "
                            "not state its window, and its Table 4 share of the SnapKV kernel (2.52 %) implies a "
                            "window of thousands (the SnapStream reproduction prints the sensitivity)", _pos_int,
                        "an integer >= 1"),
        "kernel": Param(7, "SnapKV default pooling kernel (7); SnapStream does not state it", _odd_int,
                        "an odd integer >= 1 (SnapKV's pooling)"),
        "decode_update": DECODE_UPDATE,
    }

    def budget(self) -> int:
        return self.budget_tokens

    @property
    def topk_tokens(self) -> int:
        return self.budget_tokens - self.sink_tokens - self.recent_tokens

    def param_problem(self):
        if self.topk_tokens < 0:
            return ("recent_tokens", f"sink {self.sink_tokens} + recent {self.recent_tokens} exceed the budget "
                                     f"{self.budget_tokens}")
        return None

    def prefill_ops(self, b: OpBuilder, combo: Combo, shape: StepShape) -> None:
        P = shape.context
        self._ring_ops(b, combo, shape, self.sink_tokens, self.recent_tokens)
        # eviction candidates: between the sinks and the recent window (sec. 3.2.2)
        self._snapkv_ops(b, combo, shape, P - self.sink_tokens - self.recent_tokens, self.topk_tokens,
                         self.window, self.kernel)


def max_batch_ratio(full_context: float, budget: float) -> float:
    """Capacity gain of a fixed budget when KV dominates free memory: context / min(context, budget)."""
    return full_context / min(full_context, budget) if budget > 0 else math.inf
