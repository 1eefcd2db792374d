"""speculation: draft_model | eagle3 | mtp — speculative decoding with a chain of K drafts or a draft tree.

A round = drafting (the drafter's forwards, priced like any model: its own projections, MLP, attention
over its own KV cache of the whole context, LM head) + one verification forward of the target with
`K + 1` query rows per sequence (chain) or `nodes + 1` (tree: every node is a query row, plus the last
accepted token) — GEMMs at M = batch x rows. Tokens per round come from simulator.acceptance.
TPOT = (draft + verify time) / tokens per round; throughput = batch x tokens per round / round time.

Drafters:
  draft_model  a separate shipped model (e.g. TinyLlama-1.1B for Llama-2-7B), replicated on every TP rank
               (TP 1), dense attention over its own KV cache. It must share the target's vocabulary.
  eagle3       an EAGLE-3 head: one decoder layer of the target's shape on the target's fused low/mid/high
               features (an fc 3h -> h per round), with its own one-layer KV cache and a reduced draft
               vocabulary (draft_vocab, 32000 in the released EAGLE-3 Llama-3.1-8B head's config), under
               the target's TP. Trees are drafted level by level: one forward per level over its frontier.
  mtp          DeepSeek multi-token prediction: per draft token one MTP module = eh_proj (2h -> h) + one
               MoE decoder layer + the shared LM head (full vocabulary), under the target's TP; K > modules
               reuses the module recurrently (as SGLang/vLLM do for num_speculative_tokens > 1).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from hwmodels.errors import SparsesimError
from simulator.acceptance import (
    SIBLING_DECAY,
    TreeShape,
    accept_length_dist,
    chain_tokens_per_round,
    lengths_tokens_per_round,
    per_position,
    tree_tokens_per_round,
)
from simulator.combo import Combo
from simulator.layers import body_ops, gemm
from simulator.memory import model_weight_bytes
from simulator.model import list_models, load_model
from simulator.ops import OpBuilder, ScopedBuilder
from simulator.precision import ACT_BYTES
from simulator.strategies.base import Param, RoundPlan, SpeculationStrategy, StepShape, register, registry

#: EAGLE-3 draft vocabulary: `draft_vocab_size: 32000` in the released EAGLE-3 head for Llama-3.1-8B-Instruct
#: (HF yuhuili/EAGLE3-LLaMA3.1-Instruct-8B config.json).
EAGLE3_DRAFT_VOCAB = 32000


def _is_prob(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 1


def _is_probs(v) -> bool:
    return v is None or (isinstance(v, list) and bool(v) and all(_is_prob(x) for x in v))


#: Most draft nodes one round may verify (the pruned tree's size, or the full tree's sum of branch^level without a
#: node budget). ASSUMPTION, a bound of work, not a published limit: published draft trees verify tens to a few
#: hundred nodes per round (EAGLE-2: 60; Medusa: 64); 2048 leaves room for what-if studies while the node
#: enumeration (simulator.acceptance) and a verification forward of batch x (nodes + 1) rows stay bounded.
MAX_TREE_NODES = 2048


def tree_size(branch: int, depth: int, nodes: int) -> int:
    """Draft nodes a tree verifies per round: the node budget, or the full tree's sum of branch^level (counted
    only up to MAX_TREE_NODES + 1: the exact size of a huge tree is never needed)."""
    full, width = 0, 1
    for _ in range(depth):
        width *= branch
        full += width
        if full > MAX_TREE_NODES:
            break
    return min(full, nodes) if nodes else full


def _is_tree(v) -> bool:
    if v is None:
        return True
    return (isinstance(v, dict) and set(v) <= {"branch", "depth", "nodes"} and {"branch", "depth"} <= set(v)
            and all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in v.values())
            and 1 <= v["branch"] <= MAX_TREE_NODES and 1 <= v["depth"] <= 64
            and tree_size(v["branch"], v["depth"], v.get("nodes", 0)) <= MAX_TREE_NODES)


def _loadable_model(v) -> bool:
    """A draft model name or path that loads (checked when the scenario is read, not when it is priced)."""
    if not isinstance(v, str) or not v.strip():
        return False
    try:
        load_model(v)
    except SparsesimError:
        return False
    return True


def _is_dist(v) -> bool:
    return v is None or (isinstance(v, list) and len(v) >= 2 and _is_probs(v) and abs(sum(v) - 1.0) < 1e-6)


COMMON_PARAMS = {
    "k": Param(4, "SSV document's worked example (K = 4)", lambda v: isinstance(v, int) and 1 <= v <= 64,
               "an integer 1..64 (chain length; ignored when a tree is given)"),
    "tree": Param(None, "no tree: a chain of k drafts", _is_tree,
                  f"null or {{branch: b, depth: d (1..64), nodes: budget (0 = unpruned)}} verifying at most "
                  f"{MAX_TREE_NODES} nodes per round (the budget, or b + b^2 + ... + b^d unpruned: a bound of work)"),
    "per_position": Param(None, "not given: `acceptance` at every position", _is_probs,
                          "null or a list of conditional acceptance probabilities, one per draft position "
                          "(chain) or per tree level", list_valued=True),
    "accept_lengths": Param(None, "not given: use `acceptance`", _is_dist,
                            "null or P(L = 0..K accepted drafts), summing to 1", list_valued=True),
    "sibling_decay": Param(SIBLING_DECAY, "ASSUMPTION (simulator.acceptance): trees only; the conditional match "
                                          "of the draft's rank-r candidate decays by this factor per rank",
                           _is_prob, "a number in [0, 1] (1: every sibling as likely as the first; 0: worthless)"),
}


class _Speculative(SpeculationStrategy):
    """Shared round arithmetic; subclasses say how one draft forward is priced."""

    array_combo = True  # hooks accept array-valued combo.tp (docs/VECTOR_COMBOS.md)

    def tree_shape(self) -> TreeShape | None:
        t = self.tree
        if t is None:
            return None
        # the draft's confidence ranking that a node budget keeps: at the configured acceptance
        a = self.acceptance if self.per_position is None else tuple(self.per_position)
        return TreeShape(t["branch"], t["depth"], t.get("nodes", 0), alpha=a, decay=self.sibling_decay)

    @property
    def draft_tokens(self) -> int:
        """Draft nodes verified per round (chain: k; tree: its pruned size)."""
        t = self.tree_shape()
        return self.k if t is None else t.size

    def accept_length_pmf(self) -> np.ndarray:
        """P(L = j accepted drafts), j = 0..levels: the given distribution, or the chain's / tree's
        acceptance model (simulator.acceptance)."""
        if self.accept_lengths is not None:
            p = np.asarray(self.accept_lengths, dtype=np.float64)
            return p / p.sum()
        alpha = self.acceptance if self.per_position is None else self.per_position
        t = self.tree_shape()
        mass = np.cumprod(per_position(alpha, self.k)) if t is None else t.level_mass(alpha)
        return accept_length_dist(mass)

    def tokens_per_round(self) -> float:
        if self.accept_lengths is not None:
            return lengths_tokens_per_round(self.accept_lengths)
        t = self.tree_shape()
        alpha = self.acceptance if self.per_position is None else self.per_position
        if t is None:
            return chain_tokens_per_round(alpha, self.k)
        return tree_tokens_per_round(alpha, t)

    def chain_length(self) -> int:
        return int(self.k)

    def acceptance_hat(self) -> float:
        return float(self.acceptance)

    def draft_levels(self) -> list[int]:
        """Rows per sequence of each sequential draft forward: chain k x 1; tree one per level over the
        frontier (the root, then each level's nodes except the last)."""
        t = self.tree_shape()
        if t is None:
            return [1] * self.k
        w = t.widths()
        return [1] + w[:-1]

    def param_problem(self):
        pp = self.per_position
        if pp is not None and self.tree is not None and len(pp) != len(self.tree_shape().widths()):
            return "per_position", f"lists {len(pp)} values for a tree of {len(self.tree_shape().widths())} levels"
        if pp is not None and self.tree is None and len(pp) != self.k:
            return "per_position", f"lists {len(pp)} values for k = {self.k} (one per draft position)"
        if self.accept_lengths is not None and self.tree is None and len(self.accept_lengths) != self.k + 1:
            return ("accept_lengths", f"lists {len(self.accept_lengths)} values; k = {self.k} needs k + 1 = "
                                      f"{self.k + 1} probabilities (0..k accepted drafts)")
        return None

    # --- drafting cost ------------------------------------------------------------------------------
    def draft_combo(self, combo: Combo) -> Combo:
        raise NotImplementedError

    def add_round_extras(self, b: OpBuilder, combo: Combo, shape: StepShape) -> None:
        """Per-round ops besides the draft forwards (e.g. EAGLE-3's feature fusion)."""
        return None

    def round_plan(self, combo: Combo, batch: np.ndarray, context: np.ndarray) -> RoundPlan:
        tokens = self.tokens_per_round()
        rows = self.draft_tokens + 1
        dc = self.draft_combo(combo)

        def add_draft(b, c, shape: StepShape):
            self.add_round_extras(b, c, shape)
            for level, width in enumerate(self.draft_levels()):
                sb = ScopedBuilder(b, "draft.")
                q = np.full(b.n, float(width))
                r = shape.batch * q
                body_ops(sb, dc, r, r, "decode", lambda bb, layers, q=q: dc.attention.decode_ops(bb, dc, StepShape(
                    batch=shape.batch, query_rows=q, context=shape.context, phase="decode", layers=layers)))

        return RoundPlan(query_rows=rows, tokens_per_round=tokens, add_draft_ops=add_draft)

    def prefill_draft_ops(self, b: OpBuilder, combo: Combo, prompt: np.ndarray) -> None:
        dc = self.draft_combo(combo)
        ones = np.ones(b.n)
        body_ops(ScopedBuilder(b, "draft."), dc, prompt, ones, "prefill", lambda bb, layers: dc.attention.prefill_ops(
            bb, dc, StepShape(batch=ones, query_rows=prompt, context=prompt, phase="prefill", layers=layers)))

    def extra_weight_bytes(self, combo: Combo) -> float:
        return model_weight_bytes(self.draft_combo(combo))

    def extra_kv_bytes_per_token(self, combo: Combo) -> float:
        dc = self.draft_combo(combo)
        return dc.model.kv_bytes_per_token(dc.kv_dtype) * dc.kv_fraction_dev


def _dense(combo):
    return registry()["attention"]["dense"]()


@register
class DraftModel(_Speculative):
    name = "draft_model"
    description = "a separate small draft model proposes K tokens (or a tree), the target verifies them"
    params = {
        "model": Param("TinyLlama-1.1B", "SpecAttn paper: TinyLlama-1.1B drafts for Llama-2-7B",
                       lambda v: _loadable_model(v), f"a shipped model name ({', '.join(list_models())}) or a path "
                       "to a model YAML file (relative: from the scenario's folder)", path_valued=True),
        "acceptance": Param(0.7, "ASSUMPTION: per-position acceptance 0.7 (typical of small draft models; "
                                 "set it from measurements)", _is_prob, "a probability in [0, 1]"),
        **COMMON_PARAMS,
    }

    def draft_model(self):
        return load_model(self.model)

    def param_model_problem(self, model):
        d = self.draft_model()
        if d.vocab != model.vocab:
            return ("model", f"draft model {d.name} (vocab {d.vocab}) does not share {model.name}'s tokenizer "
                             f"(vocab {model.vocab})")
        return None

    def draft_combo(self, combo: Combo) -> Combo:
        d = self.draft_model()
        return replace(combo, model=d, tp=1, weight_dtype=d.dtype, attention=_dense(combo))


@register
class Eagle3(_Speculative):
    name = "eagle3"
    description = "an EAGLE-3 head (one decoder layer on the target's features) drafts a chain or a tree"
    params = {
        "acceptance": Param(0.7, "SSV document: 'EAGLE-3 achieves ~70% on typical tasks'", _is_prob,
                            "a probability in [0, 1] (every position / tree level)"),
        "draft_vocab": Param(EAGLE3_DRAFT_VOCAB, "EAGLE-3 Llama-3.1-8B head config: draft_vocab_size 32000",
                             lambda v: isinstance(v, int) and v > 0, "a positive integer"),
        **COMMON_PARAMS,
    }

    def model_problem(self, model):
        if model.mla:
            return "an EAGLE-3 head for MLA models is not modeled; use speculation 'mtp' for DeepSeek models"
        return None

    def draft_combo(self, combo: Combo) -> Combo:
        m = combo.model
        head = replace(m, name=f"{m.name}-EAGLE3", layers=1, vocab=self.draft_vocab, tie_embeddings=False,
                       moe=None, mtp_modules=0, dsa_indexer=None)
        return replace(combo, model=head, weight_dtype="bf16", attention=_dense(combo))

    def add_round_extras(self, b: OpBuilder, combo: Combo, shape: StepShape) -> None:
        # fuse the target's low/mid/high hidden states of each verified token: [rows, 3h] @ [3h, h]
        h = combo.model.hidden
        gemm(ScopedBuilder(b, "draft."), "eagle3_fc", combo, shape.batch * shape.query_rows, 3 * h, h, 1.0,
             weight_bytes=ACT_BYTES, dtype="bf16")

    def extra_weight_bytes(self, combo: Combo) -> float:
        h = combo.model.hidden
        # the head's layer + its LM head, minus the embedding it shares with the target, plus the fc
        dc = self.draft_combo(combo)
        shared_embedding = dc.model.vocab * h * ACT_BYTES / dc.tp
        return model_weight_bytes(dc) - shared_embedding + 3 * h * h * ACT_BYTES / combo.tp


@register
class MultiTokenPrediction(_Speculative):
    name = "mtp"
    description = "DeepSeek MTP modules draft K tokens; the main model verifies them"
    params = {
        "acceptance": Param(0.8, "SnapStream sec. 5: 80% MTP acceptance (DeepSeek-V3 report: 85-90% for the "
                                 "second token)", _is_prob, "a probability in [0, 1]"),
        **{**COMMON_PARAMS, "k": Param(1, "DeepSeek-V3 ships one MTP module (num_nextn_predict_layers = 1)",
                                       lambda v: isinstance(v, int) and 1 <= v <= 16, "an integer 1..16")},
    }

    def model_problem(self, model):
        if not model.mtp_modules:
            return f"{model.name} has no MTP modules"
        return None

    def param_problem(self):
        if self.tree is not None:
            return "tree", "MTP drafts a chain; a tree is not supported"
        return super().param_problem()

    def draft_combo(self, combo: Combo) -> Combo:
        m = combo.model
        moe = replace(m.moe, first_dense_layers=0) if m.moe else None
        if combo.attention.selects_tokens and m.dsa_indexer is not None:
            # DeepSeek-V3.2's MTP module is a decoder layer of the model's own architecture, so it runs DSA
            # (indexer + top-k + sparse MLA) too. ASSUMPTION: its top-k takes the production radix path (the GVR
            # document describes preIdx plumbing for the main model's indexer_topk_decode only).
            module = replace(m, name=f"{m.name}-MTP", layers=1, moe=moe, mtp_modules=0)
            return replace(combo, model=module, topk=registry()["topk"]["radix"]())
        module = replace(m, name=f"{m.name}-MTP", layers=1, moe=moe, mtp_modules=0, dsa_indexer=None)
        return replace(combo, model=module, attention=_dense(combo))

    def add_round_extras(self, b: OpBuilder, combo: Combo, shape: StepShape) -> None:
        # eh_proj of each draft step: [B, 2h] @ [2h, h] (norms of the two inputs are elementwise, small)
        h = combo.model.hidden
        gemm(ScopedBuilder(b, "draft.", count_factor=self.k), "mtp_eh_proj", combo, shape.batch, 2 * h, h, 1.0)

    def extra_weight_bytes(self, combo: Combo) -> float:
        # the module's decoder layer and eh_proj; embedding and LM head are shared with the main model
        return combo.model.mtp_params() * combo.wbytes / combo.tp
