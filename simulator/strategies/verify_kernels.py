"""verify_kernel: per_query | dense_union | ssv — how a speculative verification forward (query_rows > 1)
loads the KV blocks that a selecting attention (attention: nsa) picked for each of its query rows.

The attention strategy asks its combo's verify kernel for a `Loads` (what is loaded how often per
sequence and KV head, per layer) and prices its branch kernels from it (simulator/strategies/nsa.py).
With `verify_kernel: none` (or one query row) a selecting attention behaves like per_query.

Notation (per sequence, KV head and layer): R query rows (draft tokens + 1), n blocks of l' tokens selected
per row (S = n l' tokens, capped by the context T), Nc compressed tokens, W window tokens.

  per_query    decoding-oriented kernel (SSV document, "decoding-oriented kernel"): every row is a separate
               decode query and loads its own blocks, shared blocks are reloaded:
               selected tokens loaded R * S; compressed and window KV loaded R times; routing per row.
  dense_union  prefill-oriented kernel (SSV document, "prefill-oriented kernel ... loads the entire KV
               cache"): the R rows form one query tile that streams the whole range once: T tokens loaded,
               attention computed densely over T for every row (masked afterwards); compressed and window
               KV loaded once; routing keys loaded once for all rows.
  ssv          SSV's overlap-aware grouped kernel (SSV document, Algorithm 1): rows in traversal order are cut
               into groups of C (the last one may be smaller); one CTA group loads
                 exact:  the union of its rows' blocks, |I_merged(c)| = n (1 + (c - 1)(1 - gamma)) blocks
                         (document: "|I_merged| ~ n (1 + (C-1)(1-rho))"; 16 (1 + 3 * 0.3) = 30.4 for
                         C = 4, n = 16, rho = 0.7), capped by c n and by the blocks that exist;
                 approx: one representative row's n blocks, shared by the group; only that row is routed.
               Compressed and window KV are loaded once per group. Relative to per_query the selected-block
               traffic is f_load(C, gamma) = (1 + (C-1)(1-gamma)) / C (document, "Computing the Expected
               Verification Gain": 0.4375 at gamma 0.75, C 4). gamma is the adjacent-query block overlap
               for the traversal order (BFS, DFS, position-sorted), a parameter; with a scenario trace
               (combo.trace) the measured union ratio |I_merged| / n per (order, C) replaces the formula
               (simulator.traces statistic ssv.union_ratio; ssv.gamma_eff for a C it did not record).

On-chip footprint and spill (ssv). The grouped kernel streams the merged blocks through a `kv_stages`-deep
shared-memory pipeline of l'-token tiles and keeps, for every row of its group and every query head of
the GQA group, the query (dk bf16) and the running online-softmax state (dv fp32 accumulator + max +
sum): footprint = C G (2 dk + 4 (dv + 2)) + kv_stages l' (dk + dv) kv_bytes per CTA. (Holding the whole
merged set resident, as Algorithm 1's wording suggests, needs |I_merged| l' (dk + dv) kv_bytes >= 512 KiB
even for C = 1 at the NSA defaults, more than any GPU's shared memory per SM: a real kernel must stream.)
When the footprint exceeds the device's shared memory per SM, the group runs as p = ceil(footprint / smem)
sub-groups of C / p rows, each loading its own union: p |I_merged(C/p)| - |I_merged(C)| = (p - 1) n gamma
blocks (exact; approx: (p - 1) n) and (p - 1) extra loads of the compressed and window KV are re-read.
That is declared as op fields `onchip_bytes` / `spill_bytes` and judged by hwmodels.roofline, which alone
knows the device (strategies never read hardware numbers).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.combo import Combo
from simulator.precision import ACT_BYTES
from simulator.strategies.base import Param, ReplayInputs, VerifyKernelStrategy, register

ORDERS = ("bfs", "dfs", "position_sorted")

#: ASSUMPTION: double-buffered K/V tiles (FlashAttention-2/3 and Triton kernels pipeline 2+ stages).
KV_STAGES = 2


def f_load(C, gamma):
    """Selected-block traffic of a group of C rows relative to per-row loading (SSV document):
    f_load = (1 + (C - 1)(1 - gamma)) / C = 1/C + (1 - 1/C)(1 - gamma)."""
    C = np.asarray(C, dtype=np.float64)
    return (1.0 + (C - 1.0) * (1.0 - gamma)) / C


def merged_blocks(n, C, rho):
    """Expected |I_merged| of a group of C rows that each select n blocks with pairwise overlap rho
    (SSV document): n (1 + (C - 1)(1 - rho))."""
    return n * (1.0 + (np.asarray(C, dtype=np.float64) - 1.0) * (1.0 - rho))


@dataclass
class Loads:
    """What a verification (or decode) kernel loads, per sequence, KV head and layer (arrays per setting).

    units            loading units per sequence: rows (per_query), groups (ssv), 1 (dense_union)
    rows_per_unit    query rows one unit serves (for the on-chip footprint)
    sel_tokens       selected-branch tokens loaded, all units together
    sel_flop_tokens  tokens each row's selection attention computes over
    shared_loads     how often the compressed and the window KV are loaded
    route_rows       rows whose routing (scores + top-n) is computed
    route_loads      how often the compressed keys are loaded for routing
    onchip_bytes     footprint of one CTA (0 = not declared)
    spill_sel_tokens selected tokens re-read per extra pass (all units together)
    launches         separate launches of each unfused branch kernel per layer (per_query: one per row, the
                     SSV document's "3 x K kernel launches" of the naive path; others 1)
    """

    units: np.ndarray
    rows_per_unit: np.ndarray
    sel_tokens: np.ndarray
    sel_flop_tokens: np.ndarray
    shared_loads: np.ndarray
    route_rows: np.ndarray
    route_loads: np.ndarray
    onchip_bytes: np.ndarray | float = 0.0
    spill_sel_tokens: np.ndarray | float = 0.0
    launches: np.ndarray | float = 1.0


def per_query_loads(R, S, per_row_launches: bool = True) -> Loads:
    """Decoding-oriented loading: every row loads everything it needs itself; a decode kernel takes one
    query per sequence, so each row is its own launch of every branch kernel (per_row_launches)."""
    R = np.asarray(R, dtype=np.float64)
    return Loads(units=R, rows_per_unit=np.ones_like(R), sel_tokens=R * S, sel_flop_tokens=S + 0 * R,
                 shared_loads=R, route_rows=R, route_loads=R, launches=R if per_row_launches else 1.0)


def _is_gamma_map(v) -> bool:
    return (isinstance(v, dict) and set(v) == set(ORDERS)
            and all(isinstance(x, (int, float)) and not isinstance(x, bool) and 0 <= x <= 1 for x in v.values()))


@register
class NoVerifyKernel(VerifyKernelStrategy):
    name = "none"
    description = "no speculative verification kernel: each row loads its own selected blocks (as per_query)"
    array_combo = True  # array-safe hooks (docs/VECTOR_COMBOS.md)

    def loads(self, combo: Combo, R, S, T, n_blocks, block_tokens) -> Loads:
        return per_query_loads(R, S)


class _VerifyKernel(VerifyKernelStrategy):
    array_combo = True  # hooks accept array-valued combo.tp (docs/VECTOR_COMBOS.md)

    def refuse(self, combo: Combo) -> str | None:
        if combo.speculation.draft_tokens == 0:
            return f"verify_kernel '{self.name}' needs speculative decoding (speculation is {combo.speculation.name})"
        if not combo.attention.routes_blocks:
            return (f"verify_kernel '{self.name}' applies to attention whose rows load their own selected blocks "
                    f"(nsa); attention '{combo.attention.name}' loads one KV range for all rows")
        return None


@register
class PerQuery(_VerifyKernel):
    name = "per_query"
    description = "decoding-oriented: each verification row loads its own selected blocks (shared ones reloaded)"
    params = {
        "launch_per_row": Param(True, "SSV document 'Core Mechanism 2': for K verification queries the naive path "
                                      "issues '3 x K kernel launches (compression, selection, window for each "
                                      "position)' and '2 x K intermediate HBM writes/reads'; false = one launch of "
                                      "each branch kernel for all rows (an engine that batches the rows)",
                                lambda v: isinstance(v, bool), "true | false"),
    }

    def loads(self, combo: Combo, R, S, T, n_blocks, block_tokens) -> Loads:
        return per_query_loads(R, S, self.launch_per_row)


@register
class DenseUnion(_VerifyKernel):
    name = "dense_union"
    description = "prefill-oriented: the rows stream the whole KV range once (blocks no row selected included)"

    def loads(self, combo: Combo, R, S, T, n_blocks, block_tokens) -> Loads:
        R = np.asarray(R, dtype=np.float64)
        one = np.ones_like(R)
        return Loads(units=one, rows_per_unit=R, sel_tokens=T * one, sel_flop_tokens=T * one, shared_loads=one,
                     route_rows=R, route_loads=one)


@register
class SSVGrouped(_VerifyKernel):
    name = "ssv"
    array_params = ("group",)  # loads() is array-safe in C (docs/VECTOR_COMBOS.md)
    description = "SSV overlap-aware grouped kernel: groups of C rows load their merged (exact) or shared (approx) blocks once"
    params = {
        "group": Param(4, "SSV document's worked f_load example (C = 4)",
                       lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1, "an integer >= 1"),
        "mode": Param("exact", "SSV document Mode A (exact merged schedule; the only mode of strict precision)",
                      lambda v: v in ("exact", "approx"), "exact | approx"),
        "order": Param("position_sorted", "SSV document: position-sorted traversal places siblings next to each "
                                          "other ('this motivates position-sorted traversal')",
                       lambda v: v in ORDERS, " | ".join(ORDERS)),
        "overlap": Param({"bfs": 0.7, "dfs": 0.7, "position_sorted": 0.7},
                         "ASSUMPTION: SSV document Insight 1 measured adjacent-query overlap of 50-90 % (8K context); "
                         "0.7 is the midpoint and the document's |I_merged| example (rho = 0.7). No per-order "
                         "values are published, so all orders get the same gamma until traces supply them",
                         _is_gamma_map, "a mapping {bfs, dfs, position_sorted} -> overlap in [0, 1]"),
        "kv_stages": Param(KV_STAGES, "ASSUMPTION: double-buffered K/V tiles (FlashAttention-2/3 pipelines)",
                           lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1, "an integer >= 1"),
    }

    @property
    def gamma(self) -> float:
        return float(self.overlap[self.order])

    def refuse(self, combo: Combo) -> str | None:
        r = super().refuse(combo)
        if r:
            return r
        rows = combo.speculation.draft_tokens + 1
        if self.group > rows:
            return f"ssv group C = {self.group} is larger than the {rows} verification rows (draft tokens + 1)"
        if self.mode == "approx" and combo.attention.precision_class() == "strict":
            return "ssv mode 'approx' shares one row's blocks across the group: not allowed under strict precision"
        return None

    def label(self) -> str:
        parts = [f"C{self.group}", self.mode]
        if self.order != self.params["order"].default:
            parts.append(self.order)
        if self.overlap != self.params["overlap"].default:
            parts.append(f"g{self.gamma:g}")
        return "ssv(" + ",".join(parts) + ")"

    def union_ratio(self, combo, c: int) -> float | None:
        """|I_merged| / n of a group of c rows from the scenario's trace (ssv.union_ratio at this traversal
        order and C = c, mean over the model's layers mapped by relative depth), else None. A C the trace did
        not record uses its gamma_eff at the nearest recorded C in the formula."""
        ts = combo.trace
        if ts is None or c <= 1:
            return None
        orders = [str(o) for o in ts.coords.get("order", ())]
        if self.order not in orders:
            return None
        Cs = [int(x) for x in ts.coords.get("C", ())]
        if ts.has("ssv.union_ratio") and c in Cs:
            return float(np.mean(ts.per_layer("ssv.union_ratio", combo.model.layers, order=self.order, C=c)))
        if ts.has("ssv.gamma_eff") and Cs:
            near = min(Cs, key=lambda x: abs(x - c))
            g = float(np.mean(ts.per_layer("ssv.gamma_eff", combo.model.layers, order=self.order, C=near)))
            return 1.0 + (c - 1.0) * (1.0 - g)
        return None

    def trace_replay(self, combo) -> ReplayInputs | None:
        """Per-step replay of the group unions (simulator/engine/trace_replay.py): each step, every layer's
        selected-block loads take the mean of the union ratios |I_merged| / n of its groups of C rows (one per
        sequence and KV head and full group), drawn from the trace's ssv.union_ratio_samples at this traversal
        order and C (exactly for up to 16 groups, by the central limit theorem beyond); a last group of fewer rows
        keeps its mean. The selected branch's kernel time (op nsa.select) is taken as proportional to the union
        it loads (ASSUMPTION: its KV bytes dominate: the query and index bytes are ~1/(64 n) of them). Layers,
        sequences and heads draw independently (the statistics keep the distribution, not the step order)."""
        ts = combo.trace
        c = int(self.group)
        if (self.mode != "exact" or ts is None or not ts.has("ssv.union_ratio_samples") or c <= 1
                or self.order not in [str(o) for o in ts.coords.get("order", ())]
                or c not in [int(x) for x in ts.coords.get("C", ())]):
            return None
        full, rem = divmod(int(combo.speculation.draft_tokens) + 1, c)
        if full == 0:
            return None
        lm = ts.layer_map(combo.model.layers)
        samp = {int(j): ts.samples("ssv.union_ratio_samples", layer=int(j), order=self.order, C=c)
                for j in np.unique(lm)}
        if any(len(x) == 0 for x in samp.values()):
            return None
        rem_ratio = float(rem) if rem <= 1 else (self.union_ratio(combo, rem) or 1.0 + (rem - 1.0) * (1.0 - self.gamma))
        mean = np.array([samp[int(j)].mean() for j in lm])
        std = np.array([samp[int(j)].std() for j in lm])
        lens = np.array([len(samp[int(j)]) for j in lm])
        table = np.zeros((len(lm), int(lens.max())))
        for i, j in enumerate(lm):
            table[i, :lens[i]] = samp[int(j)]
        kv = float(np.max(combo.attn_kv_heads_dev))

        def expected(batch, ctx):  # noqa: ARG001
            return np.array([float((full * mean + rem_ratio).sum())])

        def draws(batch, ctx, n, rng):  # noqa: ARG001
            m = max(1, int(round(batch * kv * full)))
            if m <= 16:
                pick = (rng.random((len(lm), n, m)) * lens[:, None, None]).astype(np.int64)
                xbar = np.take_along_axis(table, pick.reshape(len(lm), -1), axis=1).reshape(len(lm), n, m).mean(axis=2)
            else:
                xbar = mean[:, None] + std[:, None] / np.sqrt(m) * rng.standard_normal((len(lm), n))
            return (full * xbar + rem_ratio).sum(axis=0)[:, None]

        return ReplayInputs(f"SSV group unions (ssv.union_ratio_samples, {self.order}, C {c})", ("nsa.select",),
                            np.array([1.0]), draws, expected)

    def input_source(self, combo) -> str:
        """Where the group unions come from (for reproduction tables)."""
        ts = combo.trace
        if self.mode == "approx":
            return "approx mode: one row's n blocks per group (no overlap input)"
        if self.union_ratio(combo, self.group) is not None:
            return (f"trace {ts.name} ({ts.source}): ssv.union_ratio, order {self.order}, C {self.group} "
                    f"(layers mapped by relative depth; ASSUMPTION: the trace's block fraction n/Nsel transfers)")
        return f"assumed: adjacent-query overlap gamma {self.gamma:g} ({self.order}; document 50-90 %)"

    def union_tokens(self, c, S, n_blocks, block_tokens, T, combo=None):
        """Expected selected tokens a group of c rows loads (exact: merged set; approx: one row's set)."""
        c = np.asarray(c, dtype=np.float64) * np.ones(np.shape(T))
        if self.mode == "approx":
            return np.where(c > 0, S, 0.0)
        blocks = merged_blocks(n_blocks, c, self.gamma)
        if combo is not None and combo.trace is not None:
            for cv in np.unique(c):
                r = self.union_ratio(combo, int(cv))
                if r is not None:
                    blocks = np.where(c == cv, n_blocks * r, blocks)
        exist = np.ceil(T / block_tokens)
        blocks = np.minimum(np.minimum(blocks, c * n_blocks), exist)
        return np.where(c > 0, np.minimum(blocks * block_tokens, np.maximum(T, S)), 0.0)

    def loads(self, combo: Combo, R, S, T, n_blocks, block_tokens) -> Loads:
        R = np.asarray(R, dtype=np.float64)
        C = self.group * 1.0  # float(group); an array of them in a sweep group (docs/VECTOR_COMBOS.md)
        full = np.floor(R / C)
        rem = R - full * C
        groups = full + (rem > 0)
        sel = (full * self.union_tokens(C, S, n_blocks, block_tokens, T, combo)
               + self.union_tokens(rem, S, n_blocks, block_tokens, T, combo))
        m = combo.model
        G = combo.attn_heads_dev / combo.attn_kv_heads_dev
        dk = dv = m.head_dim
        rows = np.minimum(R, C)
        onchip = rows * G * (ACT_BYTES * dk + 4.0 * (dv + 2)) + self.kv_stages * block_tokens * (dk + dv) * combo.kvbytes
        # re-read per extra pass (module docstring): the shared part of each group's union
        spill_sel = groups * np.where(self.mode == "approx", S, n_blocks * block_tokens * self.gamma)
        return Loads(units=groups, rows_per_unit=rows, sel_tokens=sel, sel_flop_tokens=S + 0 * R,
                     shared_loads=groups, route_rows=groups if self.mode == "approx" else R, route_loads=groups,
                     onchip_bytes=onchip, spill_sel_tokens=spill_sel)


def loads_for(combo, R, S, T, n_blocks, block_tokens) -> Loads:
    """The Loads of the combo's verify kernel (verify_kernel: none loads per row)."""
    return combo.verify_kernel.loads(combo, R, S, T, n_blocks, block_tokens)
