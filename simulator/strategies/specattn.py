"""attention: specattn — SpecAttn (Shah, CMU): the draft model's attention picks which of the target's KV
entries the verification pass attends to.

Per speculative round (gamma = the draft's k draft steps; target layers m, draft layers n; context L; B
sequences), the ops this strategy adds to the target's verification forward:
  specattn.draft_weights  the draft materializes its attention probabilities for the mapped draft layers:
                          per draft step and mapped layer, Hd heads x L probabilities written (fp16) and
                          read back to average over heads into one fp32 row of L (the paper's A^d_i in R^L)
                          -> count = gamma x mapped draft layers; the draft's own forwards are priced by
                          speculation: draft_model
  specattn.topp_search    sorting-free top-p (Algorithm 2): per target layer, one kernel over the gamma rows
                          of its mapped draft layer; each row is read once and `iterations` binary-search
                          steps (10, the paper's footnote 1) each sum the mass above a threshold
                          (flops = gamma B L iterations x 3)
  specattn.mask_csr       union of the gamma selections and conversion to the sparse (CSR / block) format
                          FlashInfer's BlockSparseAttention takes: read gamma B L mask bytes, write the kept
                          indices (4 B each, one per `chunk` tokens) and the row pointer
  specattn.plan_copy      FlashInfer's plan(): host-built index arrays copied to the device, one per layer
  attention               verification over the kept fraction (1 - kv_reduction) of the KV for the sparse
                          layers (dense pricing over the kept tokens), full attention for the first
                          `full_layers` layers (paper sec. 4.1: the first 2 layers use full attention)
Those three mask ops run per target layer except the full ones (Algorithm 1, lines 19-23).

kv_reduction: Table 1 (PG-19): 44.3 % (p = 0.99), 68.8 % (0.97), 78.4 % (0.95); Table 2 (gov_report
throughput run): 71.89 % at p = 0.97. Left null, it is interpolated in p from Table 1.
The layer mapping (simulator/dtw.py) is offline; it only decides which draft layers are materialized: at most
min(n, m - full_layers) distinct draft layers (`mapped_draft_layers`, default all the draft's layers, an upper
bound — the paper's Fig. 2 mapping is not given as numbers).
"""
from __future__ import annotations

import numpy as np

from simulator.precision import ACT_BYTES
from simulator.strategies.base import AttentionStrategy, Param, StepShape, register

#: SpecAttn Table 1 (PG-19, 2048 tokens): p -> KV-cache reduction
TABLE1_REDUCTION = {0.95: 0.784, 0.97: 0.688, 0.99: 0.443}


def reduction_for(p: float) -> float:
    ps = sorted(TABLE1_REDUCTION)
    return float(np.interp(p, ps, [TABLE1_REDUCTION[x] for x in ps]))


def _dense():
    from simulator.strategies.base import registry

    return registry()["attention"]["dense"]()


@register
class SpecAttn(AttentionStrategy):
    name = "specattn"
    description = "SpecAttn: draft attention (KL/DTW-mapped layers, sorting-free top-p) prunes the target's KV"
    params = {
        "p": Param(0.97, "SpecAttn Table 2 throughput run: p = 0.97", lambda v: isinstance(v, (int, float)) and 0 < v <= 1,
                   "a probability in (0, 1]"),
        "kv_reduction": Param(None, "null: interpolated in p from SpecAttn Table 1 (44.3 / 68.8 / 78.4 % at "
                                    "p = 0.99 / 0.97 / 0.95)",
                              lambda v: v is None or (isinstance(v, (int, float)) and 0 <= v < 1),
                              "null or the fraction of KV entries skipped, in [0, 1)"),
        "iterations": Param(10, "SpecAttn footnote 1: the implementation uses a fixed 10 iterations",
                            lambda v: isinstance(v, int) and v >= 1, "a positive integer"),
        "full_layers": Param(2, "SpecAttn sec. 4.1: the first 2 layers use full attention",
                             lambda v: isinstance(v, int) and v >= 0, "a non-negative integer"),
        "chunk": Param(16, "SpecAttn sec. 4.1: chunk size 16 (as Quest)", lambda v: isinstance(v, int) and v >= 1,
                       "a positive integer (tokens per sparse block)"),
        "mapped_draft_layers": Param(None, "null: every draft layer (upper bound; the Fig. 2 mapping is not "
                                           "given numerically)", lambda v: v is None or (isinstance(v, int) and v >= 1),
                                     "null or a positive integer"),
    }

    def keep(self) -> float:
        r = self.kv_reduction if self.kv_reduction is not None else reduction_for(self.p)
        return 1.0 - float(r)

    def refuse(self, combo):
        spec = combo.speculation
        if spec.name != "draft_model":
            return ("attention 'specattn' takes its token selection from a draft model's attention: it needs "
                    f"speculation 'draft_model' (got '{spec.name}')")
        if combo.model.mla:
            return "attention 'specattn' is modeled for GQA/MHA targets only (not MLA)"
        if self.full_layers >= combo.model.layers:
            return f"full_layers={self.full_layers} leaves no sparse layer in {combo.model.name}"
        return None

    def _draft(self, combo):
        spec = combo.speculation
        return spec.draft_combo(combo), spec.k if spec.tree is None else spec.draft_tokens

    def mask_ops(self, b, combo, shape) -> None:
        """The per-round mask generation (see the module docstring)."""
        dc, gamma = self._draft(combo)
        d = dc.model
        B, L = shape.batch, shape.context
        sparse_layers = combo.model.layers - self.full_layers
        mapped = min(d.layers, sparse_layers) if self.mapped_draft_layers is None else min(
            self.mapped_draft_layers, d.layers)
        Hd = d.heads
        b.add("specattn.draft_weights", "elementwise", flops=B * Hd * L,
              bytes_read=B * Hd * L * ACT_BYTES, bytes_written=B * Hd * L * ACT_BYTES + B * L * 4.0,
              parallel_units=B * Hd, dtype="fp32", count=gamma * mapped)
        rows = B * gamma
        b.add("specattn.topp_search", "topk", flops=rows * L * self.iterations * 3.0, bytes_read=rows * L * 4.0,
              bytes_written=rows * L * 1.0, parallel_units=rows, dtype="fp32", count=sparse_layers)
        kept = B * L * self.keep() / self.chunk
        b.add("specattn.mask_csr", "elementwise", flops=rows * L, bytes_read=rows * L * 1.0,
              bytes_written=kept * 4.0 + (B + 1) * 4.0, parallel_units=B, dtype="fp32", count=sparse_layers)
        b.add("specattn.plan_copy", "copy", bytes_read=kept * 4.0, bytes_written=kept * 4.0,
              parallel_units=B, dtype="fp32", count=sparse_layers)

    def decode_ops(self, b, combo, shape) -> None:
        dense = _dense()
        sparse_layers = combo.model.layers - self.full_layers
        if self.full_layers:
            full = StepShape(shape.batch, shape.query_rows, shape.context, shape.phase,
                             {**shape.extra, "layers": self.full_layers})
            dense.decode_ops(b, combo, full)
        kept = np.maximum(1.0, shape.context * self.keep())
        sparse = StepShape(shape.batch, shape.query_rows, kept, shape.phase, {**shape.extra, "layers": sparse_layers})
        from simulator.ops import ScopedBuilder

        dense.decode_ops(ScopedBuilder(b, "sparse_"), combo, sparse)
        self.mask_ops(b, combo, shape)

    def prefill_ops(self, b, combo, shape) -> None:
        _dense().prefill_ops(b, combo, shape)
