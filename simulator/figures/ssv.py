"""SSV reproduction (paper values: simulator/figures/ssv.yaml; scenario: scenarios/ssv_h100_pcie.yaml).

Configurations (the scenario's hardware/model/launch; attention nsa with its NSA sec. 4.1 defaults):
  AR NSA          speculation none
  naive SD+NSA    FIXED_SPECULATION + verify_kernel per_query (one launch per query row and branch: the
                  document's "3 x K kernel launches, 2 x K intermediate HBM writes") + schedule none
  SSV w/o plan    the offline-best tuple of the scenario's SSV space per context regime, kept fixed (the
                  document's planning baseline, "a fixed (offline best) strategy"); alternative: the default
                  tuple FIXED_SPECULATION + ssv(C 4, exact) + refresh_reuse(r 4)
  SSV full        the same ranking + online switching (simulator/adaptation.py)
  dense SD        attention dense + FIXED_SPECULATION (the comparison the document omits; a prediction)
Every speculative configuration runs over the same simulated prompts (acceptance per prompt uniform on
PROMPT_ALPHA, rounds drawn with Generator(SEED + prompt)); AR NSA is deterministic. The kernel rows compare the
configuration SSV runs (the offline-best tuple per context) with per_query under the same speculation.

Constants set here (none fitted to a value it is compared with; each unpublished one is varied in a printed
sensitivity line):
  FIXED_SPECULATION  eagle3 defaults: chain K = 4 (the document's worked example), acceptance 0.7 (document:
                     "EAGLE-3 achieves ~70% on typical tasks")
  PROMPT_ALPHA       ASSUMPTION: per-prompt acceptance uniform on [0.5, 0.9], centred on the document's 70 %
                     (its Table 2 "highly input-dependent" is not in the review); sensitivity [0.6, 0.8], [0.4, 1.0]
  EPS, WINDOW        ASSUMPTION: switch threshold 0.1 ("a user-configured threshold"), 8 rounds (no value
                     published); sensitivity eps 0.05 / 0.2, window 4 / 16
  sibling decay      ASSUMPTION of simulator.acceptance (0.5); sensitivity 0 / 1
  gamma              ASSUMPTION of verify_kernel ssv (0.7, the document's 50-90 %); sensitivity 0.5 / 0.9 (on the
                     C4-exact default tuple: approx mode, the offline-best, has no overlap input)
  N_PROMPTS, SEED    64 prompts, seed 0 (sampling only)
  REF_BATCH          1: the document states no batch size; batch 1 is the usual speculative-decoding setting,
                     chosen before comparing. The scenario's other batches appear as alternatives.
  runtime            the scenario's (CUDA graphs, fused kernels) for EVERY row, the 64K attention share included
                     (the document names no runtime; an earlier revision priced that one row in an HF eager
                     repeat_kv step because the target needed it: undone, that reading is an alternative)
  naive kernel       per_query with one launch per query row and branch: the document's "3 x K kernel launches"
                     for the decoding-oriented path; one launch per branch is shown beside
"""
from __future__ import annotations

from functools import cached_property

import numpy as np

from simulator import adaptation as ad
from simulator.combo import combo_refusal
from simulator.figures import Plot, Quantity, Value, evaluate, load_paper, reproduction
from simulator.figures import common as C
from simulator.strategies.verify_kernels import f_load, merged_blocks

FIXED_SPECULATION = "eagle3"
PROMPT_ALPHA = (0.5, 0.9)
ALPHA_RANGES = ((0.6, 0.8), (0.4, 1.0))
EPS = 0.1
WINDOW = 8
N_PROMPTS = 64
SEED = 0
REF_BATCH = 1
DECAYS = (0.0, 1.0)
CROSSOVER_GRID = (2048, 4096, 8192, 12288, 16384, 24576, 32768, 49152, 65536, 98304, 131072)


def needs(sc) -> str | None:
    m = sc.models[0]
    if m.mla:
        return f"a GQA/MHA model (NSA and EAGLE-3 are modeled for them; scenario's model {m.name} uses MLA)"
    if not any(s.name == "ssv" for s in sc.axes["verify_kernel"]):
        return "verify_kernel ssv in the strategy space (the tuples SSV ranks)"
    if not any(s.draft_tokens > 0 for s in sc.axes["speculation"]):
        return "a speculative value (e.g. eagle3) in the speculation axis"
    return None


def _kernel_s(c, b, ctx, out) -> np.ndarray:
    """The target's attention kernels per round (NSA branches, routing, merge; dense: attention + combine)."""
    t = C.op_times(c, b, C.mean_kv(ctx, out))
    return C.sum_ops(t, lambda k: not k.startswith("draft.") and (k.startswith("nsa.") or k.startswith("attention"))
                     and k not in ("nsa.gate_proj", "nsa.compress_kv"))


def _verify_s(c, b, ctx, out) -> np.ndarray:
    return C.sum_ops(C.op_times(c, b, C.mean_kv(ctx, out)), lambda k: not k.startswith("draft."))


def _share(c, b, ctx, out) -> float:
    t = C.op_times(c, b, C.mean_kv(ctx, out))
    attn = C.sum_ops(t, lambda k: not k.startswith("draft.") and (k.startswith("nsa.") or k.startswith("attention")))
    return float((attn / C.sum_ops(t, lambda k: True))[0])


class Ctx:
    """Configurations and memoized runs for one scenario."""

    def __init__(self, sc):
        self.sc, self.P = sc, load_paper("ssv")
        self.ctx = np.array(sc.context, dtype=np.float64)
        self.out = sc.output_tokens[0]
        nsa = C.scenario_value(sc, "attention", "nsa")
        self.nsa = nsa
        self.ar_nsa = C.combo(sc, label="AR NSA", attention=nsa)
        self.ar_dense = C.combo(sc, label="AR dense", attention="dense")
        self.naive = C.combo(sc, label="naive SD+NSA", attention=nsa, speculation=FIXED_SPECULATION,
                             verify_kernel="per_query")
        self.ssv_default = C.combo(sc, label="SSV default tuple", attention=nsa, speculation=FIXED_SPECULATION,
                                   verify_kernel="ssv", schedule="refresh_reuse")
        self.dense_sd = C.combo(sc, label="dense SD", attention="dense", speculation=FIXED_SPECULATION)
        self.batches = sorted(set(sc.batch) | {REF_BATCH})
        self._runs: dict = {}

    # ---- strategy space and its variants ---------------------------------------------------------------
    def space(self, decay=None, gamma=None) -> list[dict]:
        out = []
        for s in self.sc.axes["speculation"]:
            if s.draft_tokens == 0:
                continue
            s = C.with_params(s, sibling_decay=decay) if decay is not None else s
            for v in self.sc.axes["verify_kernel"]:
                if v.name != "ssv":
                    continue
                v = C.with_params(v, overlap={o: gamma for o in v.overlap}) if gamma is not None else v
                for h in self.sc.axes["schedule"]:
                    out.append({"speculation": s, "verify_kernel": v, "schedule": h})
        return out

    def fits(self, b) -> np.ndarray:
        return np.logical_and.reduce([C.price(c, b, self.ctx, self.out)["fits"]
                                      for c in (self.ar_nsa, self.naive, self.ssv_default)])

    def run(self, b=REF_BATCH, decay=None, gamma=None, arange=PROMPT_ALPHA, eps=EPS, window=WINDOW) -> dict:
        """Per context (those where batch b fits): relative throughputs of every configuration over AR NSA,
        planning gain, oracle gain, switches, the offline-best label."""
        key = (b, decay, gamma, arange, eps, window)
        if key in self._runs:
            return self._runs[key]
        ok = self.fits(b)
        cx = self.ctx[ok]
        ar = C.price(self.ar_nsa, b, cx, self.out)["tokens_per_s"]
        alphas = ad.sample_prompt_alphas(np.random.default_rng(SEED), N_PROMPTS, *arange)
        ranking, fixed_ranks = self._rank(b, decay, gamma, tuple(int(c) for c in cx))
        fixed = {name: np.array([ad.run_prompts(fr.by_regime[int(v)], alphas, self.out, SEED, adaptive=False)[0]
                                 for v in cx]) / ar for name, fr in fixed_ranks.items()}
        plans = [ad.planning_gain(ranking.by_regime[int(x)], alphas, self.out, SEED, eps, window) for x in cx]
        r = {"contexts": cx, "naive": fixed["naive"], "default": fixed["default"],
             "best": np.array([p.fixed_tokens_per_s for p in plans]) / ar,
             "full": np.array([p.adaptive_tokens_per_s for p in plans]) / ar,
             "gain": np.array([p.gain for p in plans]), "oracle": np.array([p.oracle_gain for p in plans]),
             "switches": [p.switches for p in plans], "best_combo": [ranking.by_regime[int(x)][0].combo for x in cx]}
        self._runs[key] = r
        return r

    def _rank(self, b, decay, gamma, regimes: tuple):
        """Offline ranking of the (variant) SSV space, and the one-tuple rankings of naive / default (cached)."""
        key = ("rank", b, decay, gamma, regimes)
        if key not in self._runs:
            ranking = ad.offline_rank(self.ar_nsa, self.space(decay, gamma), b, regimes=regimes,
                                      output_tokens=self.out)
            fixed = {}
            for name, c in (("naive", self.naive), ("default", self.ssv_default)):
                s = C.with_params(c.speculation, sibling_decay=decay) if decay is not None else c.speculation
                t = [{"speculation": s, "verify_kernel": c.verify_kernel, "schedule": c.schedule}]
                fixed[name] = ad.offline_rank(self.ar_nsa, t, b, regimes=regimes, output_tokens=self.out)
            self._runs[key] = (ranking, fixed)
        return self._runs[key]

    # ---- kernels ------------------------------------------------------------------------------------
    def kernel_speedups(self, b=REF_BATCH, gamma=None, schedule=False, launch_per_row=True, tuples=None):
        """Grouped kernel over per_query, per context, for the tuple SSV runs (its offline-best) or each tuple
        of `tuples`: schedule False = kernel only (schedule none), True = with the tuple's schedule."""
        r = self.run(b)
        combos = r["best_combo"] if tuples is None else None
        out = []
        for i, x in enumerate(r["contexts"]):
            for c in ([combos[i]] if tuples is None else tuples):
                if gamma is not None:
                    c = _replace(c, verify_kernel=C.with_params(c.verify_kernel, overlap={
                        o: gamma for o in c.verify_kernel.overlap}))
                g = c if schedule else _replace(c, schedule=C.scenario_value(self.sc, "schedule", "none"))
                nv = _replace(c, verify_kernel=C.with_params(C.scenario_value(self.sc, "verify_kernel", "per_query"),
                                                             launch_per_row=launch_per_row),
                              schedule=C.scenario_value(self.sc, "schedule", "none"))
                out.append(float(_kernel_s(nv, b, [x], self.out)[0] / _kernel_s(g, b, [x], self.out)[0]))
        return np.array(out)

    def refresh_gain(self, b=REF_BATCH, every: int | None = None) -> np.ndarray:
        """Kernel time with schedule none / with the tuple's schedule (or refresh_reuse every `every` layers)."""
        r = self.run(b)
        none = C.scenario_value(self.sc, "schedule", "none")
        out = []
        for c, x in zip(r["best_combo"], r["contexts"]):
            if every is not None:
                c = _replace(c, schedule=C.with_params(C.scenario_value(self.sc, "schedule", "refresh_reuse"),
                                                       refresh_every=every, layers=None))
            out.append(float(_kernel_s(_replace(c, schedule=none), b, [x], self.out)[0] / _kernel_s(c, b, [x], self.out)[0]))
        return np.array(out)

    def verify_speedup(self, b=REF_BATCH, default=False) -> np.ndarray:
        r = self.run(b)
        out = []
        for c, x in zip(r["best_combo"], r["contexts"]):
            c = self.ssv_default if default else c
            nv = self.naive if default else _replace(c, verify_kernel=self.naive.verify_kernel,
                                                     schedule=self.naive.schedule)
            out.append(float(_verify_s(nv, b, [x], self.out)[0] / _verify_s(c, b, [x], self.out)[0]))
        return np.array(out)

    @cached_property
    def all_ssv_tuples(self) -> list:
        out = []
        for t in self.space():
            c = _replace(self.ar_nsa, **t)
            if t["schedule"].name == "none" and not combo_refusal(c):
                out.append(c)
        return out


def _replace(c, **kw):
    from dataclasses import replace

    return replace(c, **kw)


def _per(v) -> str:
    return "per context " + ", ".join(f"{x:.2f}" for x in v)


# ---- quantities ---------------------------------------------------------------------------------------------
def _e2e_rows(x: Ctx) -> list[Quantity]:
    cfg = f"{x.sc.hardware[0].name}, {x.sc.models[0].name} + nsa, batch {REF_BATCH}, {x.out} output tokens"
    others = [b for b in x.batches if b != REF_BATCH]

    def alts(field, agg):
        return {f"B={b}": agg(x.run(b)[field]) for b in others}

    def sens(field, agg):
        return {
            "sibling decay (ASSUMPTION 0.5)": {f"{d:g}": agg(x.run(decay=d)[field]) for d in DECAYS},
            "prompt acceptance range (ASSUMPTION [0.5, 0.9])": {f"[{a:g}, {b:g}]": agg(x.run(arange=(a, b))[field])
                                                                 for a, b in ALPHA_RANGES}}

    def naive():
        r = x.run()
        a = {**alts("naive", C.gmean), "one launch per branch for all rows": _naive_batched(x)}
        return Value(C.gmean(r["naive"]), note=_per(r["naive"]), alternatives=a,
                     reading="the document counts '3 x K kernel launches' for the naive path: per-row launches",
                     sensitivity={"prompt acceptance range (ASSUMPTION [0.5, 0.9])": {
                         f"[{a:g}, {b:g}]": C.gmean(x.run(arange=(a, b))["naive"]) for a, b in ALPHA_RANGES}})

    def no_plan():
        r = x.run()
        return Value(C.gmean(r["best"]), note=_per(r["best"]),
                     alternatives={**alts("best", C.gmean), "default tuple (chain K=4, C4 exact, r4)":
                                   C.gmean(r["default"])},
                     reading="the document's planning baseline is 'a fixed (offline best) strategy'",
                     sensitivity=sens("best", C.gmean))

    def full():
        r = x.run()
        return Value(float(r["full"].max()), note=_per(r["full"]),
                     alternatives={**alts("full", np.max), "geo-mean over contexts": C.gmean(r["full"])},
                     reading="'up to 3.49x': the maximum over the contexts", sensitivity=sens("full", np.max))

    def gain():
        r = x.run()
        s = sens("gain", np.mean)
        s["switch threshold eps (ASSUMPTION 0.1)"] = {f"{e:g}": float(np.mean(x.run(eps=e)["gain"])) for e in (0.05, 0.2)}
        s["estimator window (ASSUMPTION 8 rounds)"] = {f"{w}": float(np.mean(x.run(window=w)["gain"])) for w in (4, 16)}
        return Value(float(np.mean(r["gain"])), note=_per(r["gain"]) + f"; {sum(r['switches'])} switches over "
                     f"{N_PROMPTS * len(r['contexts'])} prompts",
                     alternatives={**alts("gain", np.mean), "oracle (best tuple at each prompt's true alpha)":
                                   float(np.mean(r["oracle"]))}, sensitivity=s)
    return [
        Quantity("AR NSA relative throughput", lambda: 1.0, paper="ar_nsa_relative", unit="x", config=cfg),
        Quantity("naive SD+NSA / AR NSA, geo-mean over contexts", naive, paper="naive_sd_nsa_relative", unit="x",
                 config=cfg),
        Quantity("SSV w/o planning (fixed offline-best) / AR NSA, geo-mean", no_plan, paper="ssv_no_planning_relative",
                 unit="x", config=cfg),
        Quantity("SSV full / AR NSA, max over contexts", full, paper="ssv_full_relative_max", unit="x", config=cfg),
        Quantity("planning gain (online vs fixed offline-best), mean over contexts", gain, paper="planning_gain",
                 config=cfg),
        Quantity("planning gain per prompt type (Table 2)", None, paper="per_prompt_planning_gains"),
    ]


def _naive_batched(x: Ctx) -> float:
    c = _replace(x.naive, verify_kernel=C.with_params(x.naive.verify_kernel, launch_per_row=False))
    r = x.run()
    cx = r["contexts"]
    alphas = ad.sample_prompt_alphas(np.random.default_rng(SEED), N_PROMPTS, *PROMPT_ALPHA)
    ar = C.price(x.ar_nsa, REF_BATCH, cx, x.out)["tokens_per_s"]
    t = [{"speculation": c.speculation, "verify_kernel": c.verify_kernel, "schedule": c.schedule}]
    fr = ad.offline_rank(x.ar_nsa, t, REF_BATCH, regimes=[int(v) for v in cx], output_tokens=x.out)
    return C.gmean(np.array([ad.run_prompts(fr.by_regime[int(v)], alphas, x.out, SEED, adaptive=False)[0]
                             for v in cx]) / ar)


def _kernel_rows(x: Ctx) -> list[Quantity]:
    cfg = "the tuple SSV runs (offline-best per context) vs per_query with the same speculation, attention kernels"

    def speed(agg, label):
        def metric():
            v = x.kernel_speedups()
            allv = x.kernel_speedups(tuples=x.all_ssv_tuples)
            return Value(agg(v), note=_per(v), alternatives={
                "with refresh/reuse (full SSV)": agg(x.kernel_speedups(schedule=True)),
                "over every ssv tuple of the scenario": agg(allv),
                "naive with one launch per branch": agg(x.kernel_speedups(launch_per_row=False)),
                **{f"B={b}": agg(x.kernel_speedups(b)) for b in x.batches if b != REF_BATCH},
                **{f"C4-exact default tuple at overlap gamma {g:g} (document 50-90 %)": agg(
                    x.kernel_speedups(gamma=g, tuples=[x.ssv_default])) for g in (0.5, 0.7, 0.9)}},
                reading=f"the document's {label} is the overlap-aware kernel alone over 8K-64K, on the tuple SSV "
                        "runs (its approx mode has no overlap input, so the overlap varies another tuple: alternatives)",
                inputs=x.run()["best_combo"][0].verify_kernel.input_source(x.run()["best_combo"][0])
                if x.run()["best_combo"][0].verify_kernel.name == "ssv" else "")
        return metric

    def rr():
        v = x.refresh_gain()
        return Value(C.gmean(v), note=_per(v) + " (kernel time, schedule none / the tuple's schedule)",
                     sensitivity={"refresh interval (ASSUMPTION r = 4: 'several consecutive layers')": {
                         f"r={e}": C.gmean(x.refresh_gain(every=e)) for e in (2, 8)}})

    def vs():
        v = x.verify_speedup()
        return Value(C.gmean(v), note=_per(v), alternatives={"default tuple vs naive K=4": C.gmean(
            x.verify_speedup(default=True))})
    return [
        Quantity("grouped kernel speedup over naive, min over contexts", speed(np.min, "2.1x"),
                 paper="kernel_speedup_min", unit="x", config=cfg),
        Quantity("grouped kernel speedup over naive, max over contexts", speed(np.max, "6.86x"),
                 paper="kernel_speedup_max", unit="x", config=cfg),
        Quantity("refresh/reuse additional kernel speedup, geo-mean", rr, paper="refresh_reuse_additional", unit="x"),
        Quantity("verification-stage speedup (target forward), geo-mean", vs, paper="verification_stage_speedup",
                 unit="x"),
        Quantity("f_load(C=4, gamma=0.75) (document formula)", lambda: float(f_load(4, 0.75)), paper="f_load_075"),
        Quantity("|I_merged|(n=16, C=4, rho=0.7) (document formula)", lambda: float(merged_blocks(16, 4, 0.7)),
                 paper="merged_blocks_07", unit="blocks"),
    ]


def _share_rows(x: Ctx) -> list[Quantity]:
    from simulator.strategies.base import registry

    c64 = np.array([65536.0])
    hf = _replace(x.ar_dense, attention=registry()["attention"]["dense"](gqa_expand="repeat_kv"))

    def mb(c):
        return int(C.price(c, 1, c64, x.out)["max_batch"][0])

    def share():
        alts = {}
        for label, c in (("dense", x.ar_dense), ("nsa", x.ar_nsa), ("dense + HF repeat_kv", hf)):
            for lm in ("graph", "eager"):
                for b in sorted({1, mb(c)}):
                    if b >= 1 and not (label == "dense" and lm == x.sc.launch and b == REF_BATCH):
                        alts[f"{label}, B={b}, {lm}"] = _share(_replace(c, launch=lm), b, c64, x.out)
        return Value(_share(x.ar_dense, REF_BATCH, c64, x.out), alternatives=alts,
                     reading="priced like every other SSV row: the scenario's runtime and the reference batch; the "
                             "document names neither for this sentence, and dense attention is what its 'load the "
                             "entire cache' motivation describes")
    return [Quantity(f"attention share of a decode step at 64K: dense, B={REF_BATCH}, the scenario's runtime", share,
                     paper="attention_share_64k", config=f"{x.sc.hardware[0].name}, Llama-3.1-8B dense (the "
                     f"document's model), 64K context, {x.sc.launch} launches, {x.sc.kernels} kernels")]


def _prediction_rows(x: Ctx) -> list[Quantity]:
    def vs_dense():
        cx = x.ctx
        s = C.price(x.ssv_default, REF_BATCH, cx, x.out)["tokens_per_s"]
        d = C.price(x.dense_sd, REF_BATCH, cx, x.out)["tokens_per_s"]
        return Value(C.gmean(s / d), note=_per(s / d) + "; same draft chain, NSA + SSV kernels vs dense attention")
    return [Quantity("prediction: SSV (default tuple) / dense SD (EAGLE-3 + dense), geo-mean", vs_dense, unit="x",
                     figure="predictions")]


def _trace_rows(x: Ctx) -> list[Quantity]:
    """With a scenario trace: the default exact tuple's selected-block load (f_load = grouped / per-row selected
    tokens at 64K) from the trace's group unions, beside the formula at the assumed gamma."""
    if x.sc.trace is None:
        return []

    def f(c) -> float:
        R, T = np.array([c.speculation.draft_tokens + 1.0]), np.array([65536.0])
        ld = c.attention.loads(c, R, T)
        per = c.attention.loads(_replace(c, verify_kernel=x.naive.verify_kernel), R, T)
        return float(ld.sel_tokens[0] / per.sel_tokens[0])

    def metric():
        c = x.ssv_default
        return Value(f(c), alternatives={"without the trace (formula, gamma 0.7)": f(_replace(c, trace=None))},
                     inputs=c.verify_kernel.input_source(c), note="chain K=4: a group of 4 rows + 1")
    return [Quantity("prediction: f_load of the default tuple (C4 exact, position-sorted) at 64K", metric,
                     figure="trace inputs")]


def _crossover(x: Ctx, b: int) -> str:
    grid = np.array([c for c in CROSSOVER_GRID if c <= x.sc.models[0].max_context], dtype=np.float64)
    a = C.price(x.ssv_default, b, grid, x.out)
    d = C.price(x.dense_sd, b, grid, x.out)
    ok = a["fits"] & d["fits"]
    wins = (a["tokens_per_s"] > d["tokens_per_s"]) | ~ok
    cross = next((int(grid[i]) for i in range(len(grid)) if wins[i:].all() and ok[i:].any()), None)
    return (f"B={b}: SSV (default tuple) vs dense SD tokens/s (NSA's sparsity beyond the document's 64K: accuracy "
            "there unknown) " + ", ".join(
        f"{int(c) // 1024}K {p:,.0f}/{q:,.0f}" for c, p, q, f in zip(grid, a["tokens_per_s"], d["tokens_per_s"], ok)
        if f) + f"; SSV wins from {cross:,} tokens" if cross else "; SSV never wins in the grid")


def _notes(x: Ctx) -> list:
    P = x.P

    def inconsistent():
        a, b, g = P.value("ssv_full_relative_max"), P.value("ssv_no_planning_relative"), P.value("planning_gain")
        return (f"the document's own numbers disagree: SSV full / SSV w/o planning = {a}/{b} = {a / b:.3f}, but its "
                f"planning gain is {g:.1%} ({b} x {1 + g:.3f} = {b * (1 + g):.2f}; {a} / {1 + g:.3f} = "
                f"{a / (1 + g):.2f}): no model can hit the 2.4, 3.49 and 33.2 % rows together")

    def weights():
        t = C.op_times(x.ar_nsa, REF_BATCH, C.mean_kv([65536.0], x.out))
        tot = C.sum_ops(t, lambda k: True)[0]
        attn = C.sum_ops(t, lambda k: k.startswith("nsa.") or k.startswith("attention"))[0]
        return (f"B={REF_BATCH}, 64K: an AR NSA step is {tot * 1e3:.2f} ms, {1 - attn / tot:.0%} of it outside attention "
                "(weight-streaming GEMMs at batch 1): extra verification rows are nearly free, so speculation gains "
                "close to its tokens per round")

    def trees():
        r = x.run()
        parts = []
        for c in {id(c): c for c in r["best_combo"]}.values():
            s = c.speculation
            t = s.tree_shape()
            tok = ad.Candidate(combo=c, label="", round_s=1.0, batch=1.0, alpha_hat=s.acceptance_hat()).tokens(
                [0.5, 0.7, 0.9])
            parts.append(f"{c.strategy_label()}: " + (f"tree levels {t.widths()}, " if t else "")
                         + "tokens/round at alpha .5/.7/.9 = " + "/".join(f"{v:.2f}" for v in tok))
        return "offline-best tuples: " + "; ".join(parts) + f" ({sum(r['switches'])} online switches)"

    def hf():
        import pandas as pd

        from hwmodels.calibration import DATA_DIR

        out = []
        for f in sorted(DATA_DIR.glob("hf_decode_nvidia*.csv")):
            m = pd.read_csv(f)
            m = m[(m["attn_implementation"] == "eager") & (m["context"] == 65536) & m["median_ms"].notna()]
            if len(m):
                out.append(f"measured ({f.name}): HF eager decode at 64K, " + ", ".join(
                    f"B={int(r.batch)} {r.median_ms:.0f} ms" for r in m.itertuples())
                    + " (grows ~linearly with B: an attention-bound step)")
        return "; ".join(out) or "no HF decode measurement shipped"

    def planner():
        r = x.run()
        cands = ad.offline_rank(x.ar_nsa, x.space(), REF_BATCH, regimes=[int(r["contexts"][-1])],
                                output_tokens=x.out).by_regime[int(r["contexts"][-1])]
        a = cands[0].alpha_hat
        g = ad.planning_gain(cands, np.full(16, a), x.out, SEED, EPS, WINDOW)
        return (f"planner at the profiled acceptance (16 prompts at alpha = alpha_hat = {a:g}, "
                f"{int(r['contexts'][-1]) // 1024}K): gain {g.gain:+.3f}, {g.switches / 16:.2f} switches per prompt "
                f"(a well-behaved estimator stays near 0); over U{list(PROMPT_ALPHA)} even an oracle that knows each "
                f"prompt's acceptance gains only {float(np.mean(r['oracle'])):.1%} with this scenario's tuples")

    def kernel_shape():
        """Why the modeled kernel speedup falls with context (the document's rises 2.1x -> 6.86x at 64K)."""
        r = x.run()
        i0, i1 = 0, len(r["contexts"]) - 1
        parts = []
        for i in (i0, i1):
            c = r["best_combo"][i]
            nv = _replace(c, verify_kernel=C.scenario_value(x.sc, "verify_kernel", "per_query"),
                          schedule=C.scenario_value(x.sc, "schedule", "none"))
            kv = C.mean_kv([r["contexts"][i]], x.out)
            t, d = C.op_times(nv, REF_BATCH, kv), C.op_times(nv, REF_BATCH, kv, launch=False)
            keep = lambda k: k.startswith("nsa.") and k not in ("nsa.gate_proj", "nsa.compress_kv")  # noqa: E731
            tot = float(C.sum_ops(t, keep)[0])
            scan = float(C.sum_ops(d, lambda k: k in ("nsa.compress", "nsa.route_scores"))[0])
            parts.append(f"{int(r['contexts'][i]) // 1024}K: naive {tot * 1e3:.1f} ms per step, of which the "
                         f"context-proportional scans (compressed KV and routing keys, reloaded per row) "
                         f"{scan / tot:.0%}")
        b = x.kernel_speedups(launch_per_row=False)
        return ("kernel speedup shape (not fixed): with one launch of every branch per query row (the document's "
                "'3 x K kernel launches') the naive path is a count of launch-floor-bound kernels whatever the "
                "context (" + "; ".join(parts) + "), so the speedup is a launch-count ratio that falls as the "
                "grouped kernel's context-proportional work grows; one launch per branch for all rows (off-the-shelf "
                f"NSA kernels' grid over query positions) gives {b[0]:.2f}x -> {b[-1]:.2f}x, rising as the document "
                "says but to half its 6.86x. The document's 2.1x at the short end and its 3 x K launches are "
                "incompatible under any per-kernel floor of a few microseconds (39 launches per layer against 5)")

    def inputs():
        c = x.ssv_default
        return (f"inputs: group unions {c.verify_kernel.input_source(c)}; acceptance assumed "
                f"(eagle3 {c.speculation.acceptance_hat():g}, prompts U{list(PROMPT_ALPHA)})")
    return [inconsistent, weights, trees, planner, kernel_shape, hf, inputs] + [
        lambda b=b: _crossover(x, b) for b in x.batches]


def _plot(x: Ctx) -> Plot:
    def draw(path):
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        r = x.run()
        labels = ["AR NSA", "naive SD+NSA", "SSV w/o plan", "SSV full"]
        paper = [1.0, 1.6, 2.4, 3.49]
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
        ax = axes[0]
        pos = np.arange(4)
        ax.bar(pos - 0.2, paper, 0.4, color="#bdbdbd", edgecolor="k", label="paper (Fig. 6)")
        for j, (ctx, col) in enumerate(zip(r["contexts"], plt.cm.viridis(np.linspace(0.1, 0.9, len(r["contexts"]))))):
            vals = [1.0, r["naive"][j], r["best"][j], r["full"][j]]
            ax.bar(pos + 0.2 + (j - len(r["contexts"]) / 2) * 0.4 / len(r["contexts"]), vals,
                   0.4 / len(r["contexts"]), color=col, label=f"simulated {int(ctx) // 1024}K")
        ax.set_xticks(pos)
        ax.set_xticklabels(labels, fontsize=8)
        ax.set_ylabel("throughput relative to AR NSA")
        ax.set_title(f"End to end, batch {REF_BATCH}")
        ax.legend(fontsize=7)
        ax = axes[1]
        ks = x.kernel_speedups()
        ax.plot(r["contexts"], ks, "o-", label="grouped kernel (kernel only)")
        ax.plot(r["contexts"], x.kernel_speedups(schedule=True), "s-", label="+ refresh/reuse")
        ax.axhspan(2.1, 6.86, color="#bdbdbd", alpha=0.4, label="paper range 2.1-6.86x")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("context")
        ax.set_ylabel("speedup over naive per-query kernel")
        ax.set_title("Kernel speedup (paper Fig. 6)")
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
    return Plot("fig6_throughput_and_kernels", draw)


@reproduction("ssv", needs=needs)
def ssv_reproduction(sc):
    """SSV (arXiv:2605.19893): relative throughputs, kernel/verification speedups, planning gain, 64K attention share, dense SD comparison."""
    x = Ctx(sc)
    title = (f"SSV reproduction: {sc.models[0].name} + nsa on {sc.hardware[0].name}, contexts "
             + ", ".join(f"{int(c) // 1024}K" for c in x.ctx) + f", {x.out} output tokens, batch {REF_BATCH}")
    rows = _e2e_rows(x) + _kernel_rows(x) + _share_rows(x) + _prediction_rows(x) + _trace_rows(x)
    return evaluate("ssv", title, rows, x.P, _notes(x), plots=[_plot(x)])
