"""attention: nsa — Native Sparse Attention (Yuan et al. 2025, "Native Sparse Attention: Hardware-Aligned
and Natively Trainable Sparse Attention", arXiv:2502.11089) on a GQA/MHA model.

Each query attends through three branches, merged by learned sigmoid gates (NSA eq. 5):
  compression  attention over compressed tokens: blocks of l tokens every d tokens, each mapped by a
               learnable MLP phi to one key and one value (NSA eq. 7); Nc = floor((T - l) / d) + 1 of them
               (0 when T < l; the same count SGLang's NSA layer uses, get_compressed_seqlens)
  selection    attention over the top-n blocks of l' tokens (n includes the fixed initial block and the
               two local blocks, NSA sec. 4.1); the block importance comes from the query's scores against
               the compressed keys (NSA eq. 8-10: summed over the query heads of a GQA group, so the
               heads of a group share one selection, and mapped from compression to selection blocks)
  window       attention over the last w tokens.
Defaults are NSA sec. 4.1's: l = 32, d = 16, l' = 64, n = 16, w = 512.

Per query row, KV head and layer (G = query heads per KV head, e = dk + dv, bytes b = KV dtype bytes):
  branch       KV bytes loaded (per_query)     FLOPs (all G heads)       writes (unfused)
  route        Nc dk b (compressed keys)       2 G Nc dk + 5 G Nc        scores Nsel x 4 B, indices n x 4 B
  compression  Nc e b                          2 G Nc e                  fp32 partial o + lse: G (dv + 1) 4 B
  selection    S e b, S = min(n l', T)         2 G S e                   G (dv + 1) 4 B
  window       W e b, W = min(w, T)            2 G W e                   G (dv + 1) 4 B
  merge        (reads the three partials and 3 gates per head, writes o in bf16)
(Nsel = ceil(T / l') selection blocks; with split-KV each split writes its own fp32 partial, and the merge
kernel reduces the splits of all branches and applies the gates.) With per-row launches (verify_kernel
per_query, the SSV document's naive path: "3 x K kernel launches, 2 x K intermediate HBM writes/reads") the
compress / select / window kernels run once per query row, each over 1/R of the work. The verify kernel
(simulator/strategies/verify_kernels.py) says how often each branch's KV is loaded when a sequence has
R > 1 query rows (speculative verification): per row (decoding-oriented / verify_kernel none), once for
all rows over the whole range (prefill-oriented), or once per group of C rows (SSV).

Kernels per layer (schedule none: the reference implementation's structure, fla-org/flash-linear-attention
fla/ops/nsa: parallel_nsa_compression, parallel_nsa_topk, parallel_nsa (selection), flash_attn sliding
window, gates combined afterwards): route_scores, route_topn, compress, select, window, merge = 6 kernels,
5 intermediate writes (scores, indices, three branch partials). The SSV document counts "3 kernels, 2 HBM
writes" per layer for the same baseline; its count leaves the routing and the merge out.
With a refresh/reuse schedule (simulator/strategies/schedules.py; SSV document "Refresh Layers" / "Reuse
Layers"): refresh layers run route_scores + route_topn + one partially fused kernel (the three branches
and the merge; its only intermediate input is the index list), reuse layers one fully fused kernel reading
the cached indices, no intermediate writes (split-KV partials, as for every kernel here, are combined by a
small kernel when the fused kernel splits).

Parallel units: split-KV chunks of `split_tokens` per (sequence, KV head, loading unit), continuous count
as in attention: dense (see its docstring). The NSA kernels pack the G query heads of a KV group into one
CTA (NSA sec. 3.4, "group-centric data loading").

New compressed tokens: one per d tokens appended; phi (ASSUMPTION: one linear map l dk -> dk for keys and
one for values per layer, shared by the KV heads: the NSA paper specifies "an MLP with intra-block
position encoding" without its size) reads the l tokens of the block; priced at R / d blocks per step.
Gates: a [rows, hidden] x [hidden, 3 heads] projection + sigmoid per layer (NSA eq. 5, "derived from input
features via an MLP and sigmoid activation"; ASSUMPTION: one linear layer).
Memory: NSA keeps the whole KV cache (selection may pick any block) plus the compressed keys/values,
1/d of the cache.
"""
from __future__ import annotations

import numpy as np

from simulator.combo import Combo
from simulator.layers import gemm
from simulator.ops import OpBuilder
from simulator.precision import ACT_BYTES, ACT_DTYPE
from simulator.strategies.base import AttentionStrategy, Param, StepShape, register
from simulator.strategies.verify_kernels import Loads, loads_for

NSA_SEC41 = "NSA paper (Yuan et al. 2025, arXiv:2502.11089) sec. 4.1 pretraining setup"
FP32 = 4.0
IDX_BYTES = 4.0  # int32 block indices


def _pos_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 1


@register
class NativeSparseAttention(AttentionStrategy):
    name = "nsa"
    description = "Native Sparse Attention: compression + top-n block selection + sliding window, gated"
    routes_blocks = True
    decode_cost_per_row = True   # selected tokens min(top_n x block, N), window min(w, N) per row
    array_combo = True                  # array-safe hooks (docs/VECTOR_COMBOS.md)
    array_params = ("top_n", "window")
    params = {
        "block": Param(32, f"{NSA_SEC41}: compression block size l = 32", _pos_int, "an integer >= 1"),
        "stride": Param(16, f"{NSA_SEC41}: sliding stride d = 16", _pos_int, "an integer >= 1"),
        "select_block": Param(64, f"{NSA_SEC41}: selected block size l' = 64", _pos_int, "an integer >= 1"),
        "top_n": Param(16, f"{NSA_SEC41}: selected block count n = 16 (incl. 1 initial and 2 local blocks)",
                       _pos_int, "an integer >= 1"),
        "window": Param(512, f"{NSA_SEC41}: sliding window w = 512", _pos_int, "an integer >= 1"),
        "split_tokens": Param(256, "ASSUMPTION (as attention: dense): split-KV chunk of 256 tokens per CTA",
                              lambda v: _pos_int(v) and v >= 16, "an integer >= 16"),
        "precision": Param("approximate",
                           "SSV document 'Precision Classes': approximate allows SSV's approx (shared-index) "
                           "mode and reuse layers; strict keeps exact per-query, per-layer NSA semantics",
                           lambda v: v in ("strict", "approximate"), "strict | approximate"),
    }

    def model_problem(self, model):
        if model.mla:
            return f"nsa is modeled for GQA/MHA models; {model.name} uses MLA"
        return None

    def param_problem(self):
        if self.stride > self.block:
            return "stride", f"stride d = {self.stride} larger than the compression block l = {self.block} skips tokens"
        return None

    def refuse(self, combo: Combo) -> str | None:
        if combo.kv_policy.name != "full":
            return f"nsa selects from the whole KV cache; kv_policy '{combo.kv_policy.name}' evicts tokens"
        return None

    def precision_class(self) -> str:
        return "strict" if self.values["precision"] == "strict" else "approximate"

    def label(self) -> str:
        changed = {k: v for k, v in self.values.items() if v != self.params[k].default}
        if not changed:
            return self.name
        short = {"block": "l", "stride": "d", "select_block": "l'", "top_n": "n", "window": "w"}
        return self.name + "(" + ",".join(f"{short.get(k, k)}={v}" for k, v in changed.items()) + ")"

    # ---- sizes --------------------------------------------------------------------------------------
    def sizes(self, T):
        """Per sequence and KV head at context T: compressed tokens Nc, selection blocks Nsel, selected
        tokens S, window tokens W, selected blocks n_eff."""
        T = np.asarray(T, dtype=np.float64)
        Nc = np.where(T >= self.block, np.floor((T - self.block) / self.stride) + 1.0, 0.0)
        Nsel = np.ceil(T / self.select_block)
        n_eff = np.minimum(self.top_n * 1.0, Nsel)
        S = np.minimum(n_eff * self.select_block, T)
        W = np.minimum(self.window * 1.0, T)
        return Nc, Nsel, S, W, n_eff

    def loads(self, combo, R, T) -> Loads:
        Nc, Nsel, S, W, n_eff = self.sizes(T)
        return loads_for(combo, R, S, T, n_eff, float(self.select_block))

    def branch_table(self, combo, R, T) -> dict:
        """Per-branch KV bytes loaded, FLOPs and intermediate bytes written per sequence and layer (all KV
        heads of one device), for R query rows at context T (scalars). For tests and reports."""
        m = combo.model
        Hq, Hkv = combo.attn_heads_dev, combo.attn_kv_heads_dev
        G, dk, dv, b = Hq / Hkv, m.head_dim, m.head_dim, combo.kvbytes
        e = dk + dv
        Nc, Nsel, S, W, n_eff = (float(x) for x in self.sizes(T))
        ld = self.loads(combo, np.array([float(R)]), np.array([float(T)]))
        f = {k: float(np.asarray(getattr(ld, k)).ravel()[0]) for k in ("units", "sel_tokens", "sel_flop_tokens",
                                                                         "shared_loads", "route_rows", "route_loads")}
        part = G * (dv + 1) * FP32
        return {
            "route": {"kv_bytes": Hkv * f["route_loads"] * Nc * dk * b,
                      "flops": Hkv * f["route_rows"] * G * Nc * (2 * dk + 5),
                      "writes": Hkv * f["route_rows"] * (Nsel * FP32 + n_eff * IDX_BYTES)},
            "compression": {"kv_bytes": Hkv * f["shared_loads"] * Nc * e * b, "flops": Hkv * R * 2 * G * Nc * e,
                            "writes": Hkv * R * part},
            "selection": {"kv_bytes": Hkv * f["sel_tokens"] * e * b,
                          "flops": Hkv * R * 2 * G * f["sel_flop_tokens"] * e, "writes": Hkv * R * part},
            "window": {"kv_bytes": Hkv * f["shared_loads"] * W * e * b, "flops": Hkv * R * 2 * G * W * e,
                       "writes": Hkv * R * part},
        }

    # ---- decode / verification ----------------------------------------------------------------------
    def decode_ops(self, b: OpBuilder, combo: Combo, shape: StepShape) -> None:
        m = combo.model
        B, R, T = shape.batch / combo.attn_dp, shape.query_rows, shape.context
        L = shape.layers
        Hq, Hkv = combo.attn_heads_dev, combo.attn_kv_heads_dev
        dk, dv, kvb = m.head_dim, m.head_dim, combo.kvbytes
        e = dk + dv
        Nc, Nsel, S, W, n_eff = self.sizes(T)
        ld = self.loads(combo, R, T)
        BH = B * Hkv  # (sequence, KV head) pairs on this device
        rowsH = B * R * Hq  # (row, query head) pairs
        q_bytes = rowsH * dk * ACT_BYTES
        out_bf16 = rowsH * dv * ACT_BYTES
        part = rowsH * (dv + 1) * FP32  # one fp32 partial output + lse per (row, head)
        st = float(self.split_tokens)
        onchip = ld.onchip_bytes

        def splits(tokens):
            return np.maximum(1.0, tokens / st)

        # per-branch tokens loaded per (sequence, KV head), all loading units together
        cmp_tok, sel_tok, win_tok = ld.shared_loads * Nc, ld.sel_tokens, ld.shared_loads * W
        cmp_flops = 2.0 * rowsH * Nc * e
        sel_flops = 2.0 * rowsH * ld.sel_flop_tokens * e
        win_flops = 2.0 * rowsH * W * e
        units = np.maximum(ld.units, 1.0)
        # spill (verify_kernels docstring): per extra pass each unit re-reads the shared part of its blocks
        # (declared only where the kernel declares a footprint)
        has = np.asarray(onchip, dtype=np.float64) > 0
        spill_cmp = has * BH * ld.units * Nc * e * kvb
        spill_win = has * BH * ld.units * W * e * kvb
        spill_sel = has * BH * ld.spill_sel_tokens * e * kvb
        spill_route = has * BH * ld.route_loads * Nc * dk * kvb

        # amortized compression of newly completed blocks (phi) and the gate projection: every layer
        b.add("nsa.compress_kv", "gemm", flops=BH * 2.0 * self.block * dk * (dk + dv),
              bytes_read=BH * self.block * e * kvb, bytes_written=BH * e * kvb, dtype=ACT_DTYPE,
              count=L * R / self.stride)
        gemm(b, "nsa.gate_proj", combo, B * combo.attn_dp * R, m.hidden, 3 * combo.heads_dev, L,
             weight_bytes=ACT_BYTES, dtype=ACT_DTYPE)

        sched = combo.schedule
        refreshed = sched.refresh_layers(m.layers)
        refresh = None if refreshed is None else refreshed * 1.0 * L / m.layers
        n_route = L if refresh is None else refresh
        # routing: scores of the routed rows against the compressed keys (split over the compressed
        # range; head-summed and mapped to selection blocks in-kernel, NSA eq. 9-10), then top-n
        rr = B * ld.route_rows
        b.add("nsa.route_scores", "attention", flops=rr * Hq * Nc * (2.0 * dk + 5.0),
              bytes_read=BH * ld.route_loads * Nc * dk * kvb + rr * Hq * dk * ACT_BYTES,
              bytes_written=rr * Hkv * Nsel * FP32, parallel_units=BH * ld.route_loads * splits(Nc), dtype=ACT_DTYPE,
              count=n_route, onchip_bytes=onchip, spill_bytes=spill_route)
        b.add("nsa.route_topn", "topk", flops=rr * Hkv * Nsel * np.log2(np.maximum(self.top_n, 2)) ** 2,
              bytes_read=rr * Hkv * Nsel * FP32, bytes_written=rr * Hkv * n_eff * IDX_BYTES,
              parallel_units=rr * Hkv, dtype="fp32", count=n_route)
        idx_read = B * R * Hkv * n_eff * IDX_BYTES  # every row's (or its representative's) indices
        gates = rowsH * 3 * ACT_BYTES

        if refresh is None:
            # unfused branch kernels, each with its own split-KV partials, merged by one kernel; a decoding-
            # oriented verify kernel launches each branch once per query row (Loads.launches: the SSV
            # document's "3 x K kernel launches"), each launch doing 1/launches of the work
            sc, ss, sw = splits(cmp_tok / units), splits(sel_tok / units), splits(win_tok / units)
            nl = np.maximum(np.asarray(ld.launches, dtype=np.float64), 1.0)
            b.add("nsa.compress", "attention", flops=cmp_flops / nl,
                  bytes_read=(BH * cmp_tok * e * kvb + sc * q_bytes) / nl, bytes_written=sc * part / nl,
                  parallel_units=BH * units * sc / nl, dtype=ACT_DTYPE, count=L * nl, onchip_bytes=onchip,
                  spill_bytes=spill_cmp / nl)
            b.add("nsa.select", "attention", flops=sel_flops / nl,
                  bytes_read=(BH * sel_tok * e * kvb + ss * q_bytes + idx_read) / nl, bytes_written=ss * part / nl,
                  parallel_units=BH * units * ss / nl, dtype=ACT_DTYPE, count=L * nl, onchip_bytes=onchip,
                  spill_bytes=spill_sel / nl)
            b.add("nsa.window", "attention", flops=win_flops / nl,
                  bytes_read=(BH * win_tok * e * kvb + sw * q_bytes) / nl, bytes_written=sw * part / nl,
                  parallel_units=BH * units * sw / nl, dtype=ACT_DTYPE, count=L * nl, onchip_bytes=onchip,
                  spill_bytes=spill_win / nl)
            partials = (sc + ss + sw) * part
            b.add("nsa.merge", "elementwise", flops=5.0 * rowsH * dv * (sc + ss + sw),
                  bytes_read=partials + gates, bytes_written=out_bf16, dtype="fp32", count=L)
            return

        # refresh/reuse: one fused kernel per layer (refresh layers: 'partial fusion' after routing)
        tok = (cmp_tok + sel_tok + win_tok) / units  # tokens one unit streams
        sf = splits(tok)
        split = sf > 1.0
        fused_bytes = BH * (cmp_tok + sel_tok + win_tok) * e * kvb + sf * q_bytes + idx_read + gates
        fused_out = np.where(split, sf * part, out_bf16)
        fused_flops = cmp_flops + sel_flops + win_flops + 3.0 * rowsH * dv
        spill = spill_cmp + spill_sel + spill_win
        b.add("nsa.fused_refresh", "attention", flops=fused_flops, bytes_read=fused_bytes, bytes_written=fused_out,
              parallel_units=BH * units * sf, dtype=ACT_DTYPE, count=refresh, onchip_bytes=onchip, spill_bytes=spill)
        b.add("nsa.fused_reuse", "attention", flops=fused_flops, bytes_read=fused_bytes, bytes_written=fused_out,
              parallel_units=BH * units * sf, dtype=ACT_DTYPE, count=L - refresh, onchip_bytes=onchip,
              spill_bytes=spill, where=np.broadcast_to(L - refresh > 0, (b.n,)))
        b.add("nsa.fused_combine", "elementwise", flops=3.0 * rowsH * dv * sf, bytes_read=sf * part,
              bytes_written=out_bf16, dtype="fp32", count=L, where=split)

    # ---- prefill ------------------------------------------------------------------------------------
    def prefill_ops(self, b: OpBuilder, combo: Combo, shape: StepShape) -> None:
        """Prefill of P tokens: position t sees Nc(t) compressed tokens, min(n l', t) selected and
        min(w, t) window tokens. FLOPs use the averages over t in [0, P]; bytes read Q, K, V once and write
        O once (re-reads of selected blocks across query positions assumed to hit L2, as for dense
        prefill) plus the compressed KV and the routing indices."""
        m = combo.model
        B, P = shape.batch, shape.context
        L = shape.layers
        H, Hkv, d = combo.prefill_heads_dev, combo.prefill_kv_heads_dev, m.head_dim
        e = 2 * d

        def mean_min(a):  # mean of min(a, t) for t uniform on [0, P]
            return np.where(a < P, a - a * a / (2.0 * np.maximum(P, 1.0)), P / 2.0)

        Nc_mean = np.maximum(0.0, (P - self.block) / self.stride + 1.0) / 2.0
        sel = mean_min(self.top_n * self.select_block * 1.0)
        win = mean_min(self.window * 1.0)
        pairs = B * P * H
        b.add("nsa.prefill_route", "attention", flops=pairs * Nc_mean * (2.0 * d + 5.0),
              bytes_read=B * P * H * d * ACT_BYTES + B * Nc_mean * 2 * Hkv * d * combo.kvbytes,
              bytes_written=B * P * Hkv * self.top_n * IDX_BYTES,
              parallel_units=B * H * np.maximum(1.0, P / 128.0), dtype=ACT_DTYPE, count=L)
        io = B * P * (2 * H * d * ACT_BYTES + 2 * Hkv * d * combo.kvbytes)
        b.add("nsa.prefill_attn", "attention", flops=2.0 * pairs * (Nc_mean + sel + win) * e + 3.0 * pairs * d,
              bytes_read=io * 0.5 + B * Nc_mean * 2 * Hkv * e * combo.kvbytes, bytes_written=io * 0.5,
              parallel_units=B * H * np.maximum(1.0, P / 128.0), dtype=ACT_DTYPE, count=L)
        b.add("nsa.compress_kv", "gemm", flops=B * Hkv * (P / self.stride) * 2.0 * self.block * d * e,
              bytes_read=B * Hkv * P * e * combo.kvbytes, bytes_written=B * Hkv * (P / self.stride) * e * combo.kvbytes,
              dtype=ACT_DTYPE, count=L)
        gemm(b, "nsa.gate_proj", combo, B * P, m.hidden, 3 * H, L, weight_bytes=ACT_BYTES, dtype=ACT_DTYPE)

    # ---- memory -------------------------------------------------------------------------------------
    def extra_kv_bytes_per_token(self, combo: Combo) -> float:
        """Compressed keys and values: one per d tokens."""
        return combo.model.kv_bytes_per_token(combo.kv_dtype) * combo.kv_fraction_dev / self.stride

    def extra_weight_bytes(self, combo: Combo) -> float:
        """phi (keys and values: 2 x l dk x dk per layer) and the gate projection (hidden x 3 heads per
        layer), bf16 (ASSUMPTIONS in the module docstring)."""
        m = combo.model
        phi = 2 * self.block * m.head_dim * m.head_dim
        gate = m.hidden * 3 * m.heads
        return m.layers * (phi + gate) * ACT_BYTES / combo.tp
