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
  specattn.plan_*         FlashInfer's BlockSparseAttentionWrapper.plan() runs on the HOST once per sparse layer
                          per round (flashinfer/sparse.py @ b15947096, 2025-09-14, the version current when the
                          paper appeared; unchanged in @ fb28d72): `indices.max().item()` (a reduction kernel,
                          then a device-to-host read that waits for the device to drain), `torch.full(...,
                          device)` for the last-page lengths (a kernel), `qo_indptr_host.to(device)` (a host-to-
                          device copy), `indptr.to("cpu")` (a second device-to-host copy, synchronous), then the
                          C++ DecodePlan / PrefillPlan (include/flashinfer/attention/scheduler.cuh), which ends in
                          a cudaMemcpyAsync of the plan into the int workspace: per layer 2 kernels
                          (plan_kernels), 2 host-to-device copies (plan_h2d) and 2 device-to-host reads
                          (plan_d2h). Each is priced as an op by the roofline (eager: at least the host's launch
                          cost). The drain itself (the host waits for all queued work, then issues the plan and
                          the layer's kernels while the device idles) is the host time those ops carry; a
                          roofline term for a host sync is a known gap (docs/KNOWN_GAPS.md).
  attention               verification over the kept fraction (1 - kv_reduction) of the KV for the sparse
                          layers (dense pricing over the kept tokens), full attention for the first
                          `full_layers` layers (paper sec. 4.1: the first 2 layers use full attention)
Those three mask ops run per target layer except the full ones (Algorithm 1, lines 19-23).

kv_reduction: Table 1 (PG-19): 44.3 % (p = 0.99), 68.8 % (0.97), 78.4 % (0.95); Table 2 (gov_report
throughput run): 71.89 % at p = 0.97. Left null, it is interpolated in p from Table 1.
The layer mapping (paper sec. 3.3, appendix B) is offline; it only decides which draft layers are
materialized (specattn.draft_weights' count): mapped_layers(combo) =
  - `mapped_draft_layers` when the scenario sets it;
  - else, with a trace that recorded draft and target attention (combo.trace has `specattn.kl`): the distinct
    draft layers of simulator.dtw.monotonic_dtw(-KL) over the sparse target layers (the paper's Algorithm 3 on
    S = -KL, Eq. 4), rescaled to the combo's draft depth when the trace's draft model has another depth
    (ASSUMPTION: the mapped share of draft layers carries over);
  - else every draft layer, min(n, m - full_layers): an upper bound (the paper's Fig. 2 map is not printed).
kept fraction: `kv_reduction` when set; else the trace's `specattn.kept_fraction` at the strategy's p (mean over
target layers) when recorded; else Table 1 interpolated in p.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from simulator.combo import Combo
from simulator.dtw import monotonic_dtw
from simulator.ops import OpBuilder, ScopedBuilder
from simulator.precision import ACT_BYTES
from simulator.strategies.base import AttentionStrategy, Param, StepShape, register, registry

#: SpecAttn Table 1 (PG-19, 2048 tokens): p -> KV-cache reduction
TABLE1_REDUCTION = {0.95: 0.784, 0.97: 0.688, 0.99: 0.443}


def reduction_for(p: float) -> float:
    ps = sorted(TABLE1_REDUCTION)
    return float(np.interp(p, ps, [TABLE1_REDUCTION[x] for x in ps]))


def trace_layer_map(ts) -> np.ndarray:
    """The draft layer of every target layer of the trace: monotonic DTW (paper Algorithm 3) on S = -KL
    (`specattn.kl`, axes draft_layer x target_layer)."""
    kl = np.asarray(ts.get("specattn.kl"), dtype=np.float64)
    return monotonic_dtw(-kl)[0]


def trace_mapped_layers(ts, dense_share: float) -> tuple[int, int]:
    """(distinct draft layers the trace's map uses over its sparse target layers, the trace's draft layers);
    the first round(dense_share x target layers) target layers use full attention and need no draft layer."""
    mapping = trace_layer_map(ts)
    skip = int(round(dense_share * len(mapping)))
    used = len(set(mapping[skip:].tolist())) if skip < len(mapping) else 0
    return used, int(np.asarray(ts.get("specattn.kl")).shape[0])


def _dense():
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

    def keep(self, combo=None) -> float:
        """Kept fraction of the KV (module docstring: parameter, trace, Table 1)."""
        if self.kv_reduction is not None:
            return 1.0 - float(self.kv_reduction)
        ts = None if combo is None else combo.trace
        if ts is not None and ts.has("specattn.kept_fraction") and self.p in ts.coords.get("p", ()):
            return float(np.nanmean(ts.select("specattn.kept_fraction", p=self.p)))
        return 1.0 - reduction_for(self.p)

    def mapped_layers(self, combo) -> int:
        """Draft layers whose attention is materialized (module docstring)."""
        d = combo.speculation.draft_combo(combo).model
        sparse = combo.model.layers - self.full_layers
        if self.mapped_draft_layers is not None:
            return min(self.mapped_draft_layers, d.layers)
        ts = combo.trace
        if ts is not None and ts.has("specattn.kl"):
            used, trace_draft = trace_mapped_layers(ts, self.full_layers / combo.model.layers)
            return max(1, min(d.layers, round(used * d.layers / trace_draft)))
        return min(d.layers, sparse)

    def refuse(self, combo: Combo) -> str | None:
        spec = combo.speculation
        if spec.name != "draft_model":
            return ("attention 'specattn' takes its token selection from a draft model's attention: it needs "
                    f"speculation 'draft_model' (got '{spec.name}')")
        return None

    def model_problem(self, model):
        if model.mla:
            return "attention 'specattn' is modeled for GQA/MHA targets only (not MLA)"
        return None

    def param_model_problem(self, model):
        if self.full_layers >= model.layers:
            return "full_layers", f"full_layers={self.full_layers} leaves no sparse layer in {model.name}"
        return None

    def _draft(self, combo):
        spec = combo.speculation
        return spec.draft_combo(combo), spec.k if spec.tree is None else spec.draft_tokens

    def mask_ops(self, b: OpBuilder, combo: Combo, shape: StepShape) -> None:
        """The per-round mask generation (see the module docstring)."""
        dc, gamma = self._draft(combo)
        d = dc.model
        B, L = shape.batch, shape.context
        sparse_layers = combo.model.layers - self.full_layers
        mapped = self.mapped_layers(combo)
        Hd = d.heads
        b.add("specattn.draft_weights", "elementwise", flops=B * Hd * L,
              bytes_read=B * Hd * L * ACT_BYTES, bytes_written=B * Hd * L * ACT_BYTES + B * L * 4.0,
              parallel_units=B * Hd, dtype="fp32", count=gamma * mapped)
        rows = B * gamma
        b.add("specattn.topp_search", "topk", flops=rows * L * self.iterations * 3.0, bytes_read=rows * L * 4.0,
              bytes_written=rows * L * 1.0, parallel_units=rows, dtype="fp32", count=sparse_layers)
        kept = B * L * self.keep(combo) / self.chunk
        b.add("specattn.mask_csr", "elementwise", flops=rows * L, bytes_read=rows * L * 1.0,
              bytes_written=kept * 4.0 + (B + 1) * 4.0, parallel_units=B, dtype="fp32", count=sparse_layers)
        # FlashInfer plan() on the host (module docstring): indices.max() and torch.full kernels, two small
        # host-to-device copies (qo_indptr, the plan info), two device-to-host reads (.item(), indptr.to("cpu"))
        b.add("specattn.plan_kernels", "elementwise", flops=kept, bytes_read=kept * 4.0, bytes_written=B * 4.0,
              parallel_units=1, dtype="fp32", count=2.0 * sparse_layers)
        b.add("specattn.plan_h2d", "copy", bytes_read=(B + 1) * 4.0 + 1024.0, bytes_written=(B + 1) * 4.0 + 1024.0,
              parallel_units=1, dtype="fp32", count=2.0 * sparse_layers)
        b.add("specattn.plan_d2h", "copy", bytes_read=(B + 1) * 4.0, bytes_written=(B + 1) * 4.0,
              parallel_units=1, dtype="fp32", count=2.0 * sparse_layers)

    @property
    def prices_kv_prefix(self) -> bool:
        return True   # its prefill is dense attention's (prefill_ops below)

    def decode_ops(self, b: OpBuilder, combo: Combo, shape: StepShape) -> None:
        dense = _dense()
        sparse_layers = combo.model.layers - self.full_layers
        if self.full_layers:
            dense.decode_ops(b, combo, replace(shape, layers=self.full_layers))
        kept = np.maximum(1.0, shape.context * self.keep(combo))
        sparse = replace(shape, context=kept, layers=sparse_layers)
        dense.decode_ops(ScopedBuilder(b, "sparse_"), combo, sparse)
        self.mask_ops(b, combo, shape)

    def prefill_ops(self, b: OpBuilder, combo: Combo, shape: StepShape) -> None:
        _dense().prefill_ops(b, combo, shape)
