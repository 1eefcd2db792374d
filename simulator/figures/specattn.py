"""SpecAttn (Shah, CMU): Table 2 throughput on one RTX 4090 (TinyLlama-1.1B drafting for Llama-2-7B, 2048-token
sequences, 10 % prefill / 90 % decode), the mask-generation and block-sparse kernel speedups (Figs. 3-4), the
(k, alpha) surface that reaches Table 2, and beyond the paper: where SpecAttn overtakes dense speculation.

What is published and what is not (paper values in specattn.yaml; nothing is fitted):
  runtime        HF transformers in an eager PyTorch loop (the scenario's launch eager, kernels unfused); each kernel
                 costs at least the MEASURED host time per kernel of an HF decode step (lab/measure_eager_host.py:
                 2.4x a bare op on the same host) on the median lent host (ASSUMPTION, range over the lent hosts).
  published      hardware, models, sequence length and split, p = 0.97 and its KV reduction 71.89 % (an input),
                 full attention in the first 2 layers, chunk 16, 10 top-p iterations, FlashInfer's
                 BlockSparseAttention (whose host-side plan() the strategy prices: simulator/strategies/specattn.py).
  not published  the draft length gamma (k) and the acceptance alpha. The rows use the scenario's k and the
                 draft_model default alpha 0.7 (ASSUMPTION), and the reproduction prints the whole (k, alpha)
                 surface instead of one point: tokens/s = tokens per round(alpha, k) / round time(k), the round
                 time priced once per k (alpha changes only how many tokens a round yields), with the alpha each
                 k needs to reach Table 2's SD and SpecAttn rows (inverse readings, not inputs).
  from a trace   with a scenario `trace:` that recorded a draft / target pair: its acceptance (spec.accept_rate)
                 is marked on the surface, its DTW layer map sets the materialized draft layers and its kept
                 fraction the sparsity (simulator/strategies/specattn.py); tables say which inputs came from it.
"""
from __future__ import annotations

from dataclasses import replace
from functools import cached_property

import numpy as np

from hwmodels.roofline import price as price_ops
from simulator.acceptance import chain_tokens_per_round
from simulator.figures import Plot, Quantity, Value, evaluate, load_paper, reproduction
from simulator.figures import common as C
from simulator.ops import OpBuilder
from simulator.strategies.base import registry

K_GRID = (1, 2, 3, 4, 5, 6, 8)
ALPHA_GRID = np.round(np.arange(0.50, 0.99, 0.02), 2)
CROSS_GRID = (2048, 4096, 8192, 16384, 32768, 65536, 131072)


def needs(sc) -> str | None:
    names = {a: [s.name for s in sc.axes.get(a, [])] for a in ("attention", "speculation")}
    if "specattn" not in names["attention"] or "draft_model" not in names["speculation"]:
        return "attention 'specattn' and speculation 'draft_model' among its strategies"
    return None


class Ctx:
    """Memoized pricing shared by the rows (one scenario)."""

    def __init__(self, sc, host_ratio: float = 1.0):
        self.sc, self.host_ratio = sc, host_ratio
        self.spec = C.scenario_value(sc, "speculation", "draft_model")
        self.sa = C.scenario_value(sc, "attention", "specattn")
        self.context = float(sc.context[0])
        self.out = float(sc.output_tokens[0])

    def combos(self, k=None, hardware=None, model=None):
        spec = self.spec if k is None else registry()["speculation"]["draft_model"](
            **{**self.spec.values, "k": int(k)})
        kw = {"tp": 1, **({} if hardware is None else {"hardware": hardware}), **({} if model is None else {"model": model})}
        cs = (C.combo(self.sc, label="no speculation", **kw), C.combo(self.sc, label="SD", speculation=spec, **kw),
              C.combo(self.sc, label="SpecAttn", attention=self.sa, speculation=spec, **kw))
        # HF transformers in an eager loop: each kernel costs at least the MEASURED host time per kernel of an
        # HF decode step (lab/measure_eager_host.py), times the host-transfer ratio (an ASSUMPTION)
        return tuple(C.with_eager_host(c, "hf", self.host_ratio) for c in cs)

    @cached_property
    def hosts(self) -> dict[str, "Ctx"]:
        return {k: Ctx(self.sc, r) for k, r in C.host_ratio_range().items()}

    def tok_s(self, c, context=None) -> np.ndarray:
        ctx = np.atleast_1d(self.context if context is None else np.asarray(context, float))
        out = np.maximum(1.0, np.round(ctx * self.out / self.context))
        return C.price(c, 1.0, ctx, out)["tokens_per_s"]

    @cached_property
    def point(self) -> dict[str, float]:
        return {n: float(self.tok_s(c)[0]) for n, c in zip(("none", "sd", "sa"), self.combos())}

    @cached_property
    def round_s(self) -> dict[int, tuple[float, float]]:
        """k -> (SD round seconds, SpecAttn round seconds) at the scenario's context."""
        out = {}
        for k in K_GRID:
            _, sd, sa = self.combos(k)
            r = [C.price(c, 1.0, self.context, self.out) for c in (sd, sa)]
            out[k] = tuple(float(x["step_ms"][0]) * 1e-3 for x in r)
        return out

    def surface(self, which: int) -> np.ndarray:
        """tokens/s over K_GRID x ALPHA_GRID for SD (which = 0) or SpecAttn (1)."""
        return np.array([[chain_tokens_per_round(a, k) / self.round_s[k][which] for a in ALPHA_GRID] for k in K_GRID])

    def alpha_needed(self, k: int, tok_s: float, which: int) -> float:
        """Acceptance at which draft length k reaches `tok_s` (NaN if even alpha = 1 does not)."""
        need = tok_s * self.round_s[k][which]
        if chain_tokens_per_round(1.0, k) < need:
            return float("nan")
        lo, hi = 0.0, 1.0
        for _ in range(40):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if chain_tokens_per_round(mid, k) < need else (lo, mid)
        return 0.5 * (lo + hi)

    @cached_property
    def trace_alpha(self) -> float | None:
        ts = self.sc.trace
        return ts.scalar("spec.accept_rate") if ts is not None and ts.has("spec.accept_rate") else None


# ---- kernel-level rows (Figs. 3 and 4) --------------------------------------------------------------------------
FIG3_LENGTHS = (1024, 2048, 4096, 8192)


def fig3_speedups(x: Ctx) -> np.ndarray:
    """Mask generation of one target layer, PyTorch sort-based top-p (torch.sort, cumsum, compare, scatter) over
    the sorting-free 10-iteration search, at the KV sizes of Fig. 3 (gamma rows of fp32 attention each)."""
    _, _, sa = x.combos()
    gamma = float(x.spec.k)
    L = np.asarray(FIG3_LENGTHS, dtype=np.float64)
    n = len(L)
    srt = OpBuilder(n)
    registry()["topk"]["sort"]().add_ops(srt, sa, gamma, L, L, 1.0, "decode")
    for name in ("cumsum", "compare", "scatter_mask"):
        srt.add(f"topp_{name}", "elementwise", flops=gamma * L, bytes_read=gamma * L * 4.0,
                bytes_written=gamma * L * 4.0, dtype="fp32")
    free = OpBuilder(n)
    free.add("specattn.topp_search", "topk", flops=gamma * L * sa.attention.iterations * 3.0,
             bytes_read=gamma * L * 4.0, bytes_written=gamma * L, parallel_units=gamma, dtype="fp32")
    t = [np.bincount(b.build().setting, weights=price_ops(b.build(), sa.hardware, "eager"), minlength=n)
         for b in (srt, free)]
    return t[0] / t[1]


def fig4_speedup(x: Ctx) -> Value:
    """Attention kernel time per layer of the verification pass at the scenario's context, p = 1.0 (dense) over
    p = 0.97 (the kept fraction), kernel time only (a kernel benchmark)."""
    _, sd, sa = x.combos()
    kv = C.mean_kv(x.context, x.out)
    td, ts = C.op_times(sd, 1.0, kv, launch=False), C.op_times(sa, 1.0, kv, launch=False)
    dense = float(C.sum_ops(td, lambda k: k in ("attention", "attention_combine"))[0]) / sd.model.layers
    sparse_layers = sa.model.layers - sa.attention.full_layers
    sparse = float(C.sum_ops(ts, lambda k: k.startswith("sparse_attention"))[0]) / sparse_layers
    return Value(dense / sparse, note=f"bounded by 1 / kept fraction = {1 / sa.attention.keep(sa):.2f}x")


def round_breakdown(x: Ctx) -> dict[str, float]:
    """Per round of SpecAttn at the scenario's point: mask generation (device ops), the host-side plan() ops,
    and the target attention it saves against SD (ms)."""
    _, sd, sa = x.combos()
    kv = C.mean_kv(x.context, x.out)
    ta, tb = C.op_times(sa, 1.0, kv), C.op_times(sd, 1.0, kv)
    plan = float(C.sum_ops(ta, lambda k: k.startswith("specattn.plan_"))[0]) * 1e3
    mask = float(C.sum_ops(ta, lambda k: k.startswith("specattn."))[0]) * 1e3 - plan
    att_sd = float(C.sum_ops(tb, lambda k: k.startswith("attention") and not k.startswith("draft"))[0])
    att_sa = float(C.sum_ops(ta, lambda k: "attention" in k and not k.startswith("draft"))[0])
    return {"mask": mask, "plan": plan, "saved": (att_sd - att_sa) * 1e3}


def crossover(x: Ctx, hw: str) -> Value:
    """Smallest context of CROSS_GRID where SpecAttn >= SD on `hw` (what-if target with a 128K context)."""
    m = x.sc.models[0]
    whatif = replace(m, name=f"{m.name}-whatif-128K", max_context=131072)
    _, sd, sa = x.combos(hardware=hw, model=whatif)
    a, b = x.tok_s(sd, CROSS_GRID), x.tok_s(sa, CROSS_GRID)
    better = np.nonzero(b >= a)[0]
    ratios = {f"{c // 1024}K": float(r) for c, r in zip(CROSS_GRID, b / a)}
    if not len(better):
        return Value(float("nan"), alternatives=ratios, note="SpecAttn never overtakes SD up to 128K")
    fits = bool(C.price(sa, 1.0, float(CROSS_GRID[better[0]]), 1.0)["fits"][0])
    return Value(float(CROSS_GRID[better[0]]), alternatives=ratios,
                 note=("fits" if fits else "does NOT fit") + " in memory at batch 1; the p = 0.97 sparsity measured "
                      "at 2K (Table 1/2) is assumed at every context: accuracy there is unknown")


# ---- rows ----------------------------------------------------------------------------------------------------------
def _assumed(x: Ctx) -> str:
    src = f"trace {x.sc.trace.name}: alpha {x.trace_alpha:.2f} (marked on the surface)" if x.trace_alpha else ""
    return "; ".join(s for s in (f"assumed: k = {x.spec.k}, alpha = {x.spec.acceptance} (not published)", src) if s)


HOST_SENS = "ASSUMPTION the paper's host runs eager code like the median lent host (range: the lent hosts measured)"


def table2_rows(x: Ctx) -> list[Quantity]:
    cfg = (f"{x.sc.hardware[0].name}, {x.sc.models[0].name} + {x.spec.model} draft, {int(x.context)} tokens "
           f"({int(x.out)} generated), batch 1, {x.sc.launch} launches, {x.sc.kernels} kernels")

    def sens(which: str):
        col = {"sd": 0, "sa": 1}[which]
        k0 = int(x.spec.k)
        i = list(K_GRID).index(k0) if k0 in K_GRID else None
        by_alpha = {} if i is None else {f"alpha {a:.2f}": float(x.surface(col)[i, j]) for j, a in enumerate(
            ALPHA_GRID) if round(a * 100) % 10 == 0}
        by_k = {f"k {k}": float(chain_tokens_per_round(x.spec.acceptance, k) / x.round_s[k][col]) for k in K_GRID}
        return {f"ASSUMPTION acceptance (k = {k0})": by_alpha, "ASSUMPTION draft length (alpha as assumed)": by_k,
                HOST_SENS: {k: h.point[which] for k, h in x.hosts.items()}}
    return [
        Quantity("tokens/s, no speculation", lambda: Value(x.point["none"], sensitivity={HOST_SENS: {
            k: h.point["none"] for k, h in x.hosts.items()}}, inputs="eager host time per kernel measured (HF decode)"),
                 paper="tps_no_spec", unit="tok/s", config=cfg),
        Quantity("tokens/s, SD (full attention)", lambda: Value(x.point["sd"], sensitivity=sens("sd"),
                                                                inputs=_assumed(x)),
                 paper="tps_sd", unit="tok/s", config=cfg),
        Quantity("tokens/s, SpecAttn p = 0.97", lambda: Value(x.point["sa"], sensitivity=sens("sa"),
                                                              inputs=_assumed(x)),
                 paper="tps_specattn", unit="tok/s", config=cfg + ", FlashInfer plan() per sparse layer per round"),
        Quantity("SpecAttn / SD throughput (independent of the acceptance)", lambda: Value(
            x.point["sa"] / x.point["sd"], note="the same at every acceptance: both rows yield the same tokens per "
            "round, so the ratio is their round times' inverse ratio"),
            paper="ratio_specattn_sd", unit="x", config=cfg),
        Quantity("KV reduction (input)", lambda: 100.0 * (1.0 - x.combos()[2].attention.keep(x.combos()[2])),
                 paper="kv_reduction", unit="%"),
    ]


def inverse_rows(x: Ctx) -> list[Quantity]:
    """The acceptance each draft length needs to reach Table 2 (inverse readings of the surface, not inputs)."""
    P = load_paper("specattn")
    rows = []
    for which, key, lab in ((0, "tps_sd", "SD"), (1, "tps_specattn", "SpecAttn")):
        def m(which=which, key=key):
            a = {f"k {k}": x.alpha_needed(k, P.value(key), which) for k in K_GRID}
            k0 = int(x.spec.k)
            v = a.get(f"k {k0}", float("nan"))
            return Value(v, alternatives={k: val for k, val in a.items() if k != f"k {k0}"},
                         note="inverse: the acceptance at which the model reaches the printed tokens/s, not an input")
        rows.append(Quantity(f"acceptance needed for Table 2's {lab} at k = {x.spec.k}", m, kind="prediction"))

    def consistency():
        k = int(x.spec.k)
        a = x.alpha_needed(k, P.value("tps_sd"), 0)
        sa = chain_tokens_per_round(a, k) / x.round_s[k][1] if np.isfinite(a) else float("nan")
        return Value(sa, note=f"at alpha {a:.3f}, where the model's SD gives Table 2's {P.value('tps_sd')}: SpecAttn's "
                              f"per-round overhead vs the printed {P.value('tps_specattn')}")
    rows.append(Quantity(f"SpecAttn tokens/s at the acceptance that gives Table 2's SD (k = {x.spec.k})", consistency,
                         kind="prediction", unit="tok/s"))
    if x.trace_alpha is not None:
        rows.append(Quantity("SD tokens/s at the trace's acceptance", lambda: Value(
            chain_tokens_per_round(x.trace_alpha, int(x.spec.k)) / x.round_s[int(x.spec.k)][0],
            inputs=f"trace {x.sc.trace.name}: spec.accept_rate {x.trace_alpha:.3f}"), kind="prediction", unit="tok/s"))
    return rows


def kernel_rows(x: Ctx) -> list[Quantity]:
    br = {}

    def b(key):
        if not br:
            br.update(round_breakdown(x))
        return br[key]
    return [
        Quantity("Fig. 3 sorting-free vs sort-based mask generation, min over 1K-8K", lambda: Value(
            float(fig3_speedups(x).min()), alternatives={f"{L // 1024}K": float(s) for L, s in
                                                         zip(FIG3_LENGTHS, fig3_speedups(x))}),
                 paper="fig3_sortfree_speedup", unit="x", config="one target layer, gamma rows, eager"),
        Quantity("Fig. 4 block-sparse attention p = 0.97 vs p = 1.0, 2K", lambda: fig4_speedup(x),
                 paper="fig4_blocksparse_speedup", unit="x", config="attention kernel per layer, kernel time only"),
        Quantity("per round: mask generation on the device", lambda: b("mask"), kind="prediction", unit="ms",
                 note="draft attention weights + top-p search + CSR, 30 sparse layers"),
        Quantity("per round: FlashInfer plan() host ops", lambda: b("plan"), kind="prediction", unit="ms",
                 note="2 kernels + 2 H2D + 2 D2H per sparse layer (flashinfer/sparse.py)"),
        Quantity("per round: target attention saved vs SD", lambda: b("saved"), kind="prediction", unit="ms"),
    ]


def trace_rows(x: Ctx) -> list[Quantity]:
    ts = x.sc.trace
    if ts is None:
        return []
    src = f"trace {ts.name} ({ts.source})"
    rows = []
    if ts.has("specattn.kl"):
        from simulator.strategies.specattn import trace_layer_map

        rows.append(Quantity("trace: DTW layer map, distinct draft layers", lambda: Value(
            float(len(set(trace_layer_map(ts).tolist()))), inputs=src,
            note=f"monotonic DTW on -KL over {np.asarray(ts.get('specattn.kl')).shape} (draft x target layers)"),
            kind="prediction", unit="layers"))
    if ts.has("spec.accept_rate"):
        rows.append(Quantity("trace: draft acceptance", lambda: Value(ts.scalar("spec.accept_rate"), inputs=src),
                             kind="prediction"))
    return rows


def beyond_rows(x: Ctx) -> list[Quantity]:
    return [Quantity(f"beyond: context where SpecAttn >= SD, {hw}", lambda hw=hw: crossover(x, hw), unit="tokens",
                     kind="prediction", config="what-if target with max_context 128K; TinyLlama's 2K limit ignored")
            for hw in (x.sc.hardware[0].name, "H100-SXM")]


def _plot_surface(x: Ctx):
    def draw(path):
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        P = load_paper("specattn")
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), sharey=True)
        for ax, which, key, lab in ((axes[0], 0, "tps_sd", "SD (full attention)"),
                                    (axes[1], 1, "tps_specattn", "SpecAttn p = 0.97")):
            S = x.surface(which)
            im = ax.pcolormesh(ALPHA_GRID, K_GRID, S, shading="nearest", cmap="viridis")
            cs = ax.contour(ALPHA_GRID, K_GRID, S, levels=[P.value(key)], colors="w", linewidths=2)
            ax.clabel(cs, fmt=lambda v: f"Table 2: {v:.2f}", fontsize=8)
            ax.plot([x.spec.acceptance], [x.spec.k], "r*", ms=12, label="assumed point")
            if x.trace_alpha is not None:
                ax.axvline(x.trace_alpha, color="orange", ls="--", label="trace acceptance")
            ax.set_xlabel("acceptance alpha")
            ax.set_title(f"{lab}: tokens/s")
            fig.colorbar(im, ax=ax)
        axes[0].set_ylabel("draft length k")
        axes[0].legend(fontsize=8, loc="lower left")
        fig.suptitle(f"SpecAttn Table 2 on {x.sc.hardware[0].name}: the (k, alpha) points that reach the printed "
                     "tokens/s (white)")
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
    return Plot("k_alpha_surface", draw)


def notes(x: Ctx) -> list:
    def plan():
        b = round_breakdown(x)
        return (f"per round at {int(x.context)} tokens: mask generation {b['mask']:.2f} ms + FlashInfer plan() on the "
                f"host {b['plan']:.2f} ms against {b['saved']:.2f} ms of target attention saved")
    return [plan,
            "FlashInfer's plan() per sparse layer per round (flashinfer/sparse.py BlockSparseAttentionWrapper.plan @ "
            "b15947096): indices.max().item() and indptr.to('cpu') are device-to-host reads that drain the queue; "
            "the model prices them as ops at the eager launch cost (a host-sync term is a known gap: "
            "docs/KNOWN_GAPS.md)",
            "absolute tokens/s: RTX-4090 peaks scaled by the H100 calibration, plain-PyTorch kernel counts (kernels: "
            "unfused), each kernel at least the host time per kernel measured for an HF transformers decode step "
            f"({C.eager_host_us()['hf']:.1f} us: {C.eager_host_us()['factor_hf']:.2f}x a bare op, on the median lent host; "
            "the RTX-4090 host was not measured: sensitivity)"]


@reproduction("specattn_throughput", needs=needs)
def specattn_throughput(sc):
    """SpecAttn (Shah, CMU) Table 2 on RTX-4090 with the (k, alpha) surface, Figs. 3-4, crossover predictions."""
    x = Ctx(sc)
    rows = table2_rows(x) + inverse_rows(x) + kernel_rows(x) + trace_rows(x) + beyond_rows(x)
    return evaluate("specattn_throughput", f"SpecAttn (Shah, CMU) Table 2 on {sc.hardware[0].name}: {sc.models[0].name} "
                    f"with {x.spec.model} drafting", rows, load_paper("specattn"), notes(x), plots=[_plot_surface(x)])
