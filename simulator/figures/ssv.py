"""SSV reproduction (paper values: simulator/figures/ssv.yaml; scenario: scenarios/ssv_h100_pcie.yaml).

Configurations (all on the scenario's hardware/model, attention nsa with NSA sec. 4.1 defaults):
  AR NSA          speculation none
  naive SD+NSA    FIXED_SPECULATION + verify_kernel per_query + schedule none (document: "decoding-oriented
                  kernels, per-query execution, no overlap exploitation")
  SSV, no plan    FIXED_SPECULATION + verify_kernel ssv (defaults: C 4, exact, position-sorted, gamma 0.7)
                  + schedule refresh_reuse (default r = 4)
  SSV full        offline-ranked best tuple of the scenario's SSV space per context regime + online switching
                  (simulator/ssv_planner.py)
  dense SD        attention dense + FIXED_SPECULATION (the comparison the paper omitted)
Every speculative configuration is run over the same simulated prompts (acceptance per prompt uniform on
PROMPT_ALPHA, rounds drawn with Generator(SEED + prompt)); AR NSA is deterministic.

Constants set here (none is fitted to a value it is compared with):
  FIXED_SPECULATION  eagle3 defaults: chain K = 4 (document's worked example), acceptance 0.7 (document:
                     "EAGLE-3 achieves ~70% on typical tasks")
  PROMPT_ALPHA       ASSUMPTION: per-prompt acceptance uniform on [0.5, 0.9], centred on the document's 70 %;
                     the paper's Table 2 says acceptance is "highly input-dependent" but the review gives no
                     distribution
  EPS, WINDOW        ASSUMPTION: switch threshold 0.1 (document: "a user-configured threshold"), running mean
                     over 8 rounds (no value published)
  N_PROMPTS, SEED    64 prompts, seed 0 (sampling only)
  REF_BATCH          1: the paper states no batch size; batch 1 is the usual speculative-decoding setting.
                     Every batch of the scenario is printed too.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from hwmodels.roofline import price
from simulator import ssv_planner as sp
from simulator.figures import Reproduction, paper_values, reproduction
from simulator.planner import combo_refusal, combos
from simulator.pricing import decode_ops, price_combo
from simulator.strategies.base import parse_axis

FIXED_SPECULATION = "eagle3"
PROMPT_ALPHA = (0.5, 0.9)
EPS = 0.1
WINDOW = 8
N_PROMPTS = 64
SEED = 0
REF_BATCH = 1
TOL = 0.15
CROSSOVER_GRID = (2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152, 65536, 98304, 131072)
ATTN_SHARE_TARGET = 0.972


def _one(axis, value):
    [s] = parse_axis(axis, [value])
    return s


def _template(sc):
    """A Combo with the scenario's hardware, model, dtypes, TP and launch mode (first of each)."""
    return next(iter(combos(sc)))


def configs(sc) -> dict:
    """The named configurations as Combos."""
    base = _template(sc)
    nsa = next((a for a in sc.axes["attention"] if a.name == "nsa"), None) or _one("attention", "nsa")
    spec = _one("speculation", FIXED_SPECULATION)
    none = {a: _one(a, "none") for a in ("speculation", "verify_kernel", "schedule")}
    return {
        "ar_nsa": replace(base, attention=nsa, **none),
        "ar_dense": replace(base, attention=_one("attention", "dense"), **none),
        "naive": replace(base, attention=nsa, speculation=spec, verify_kernel=_one("verify_kernel", "per_query"),
                         schedule=none["schedule"]),
        "ssv_np": replace(base, attention=nsa, speculation=spec, verify_kernel=_one("verify_kernel", "ssv"),
                          schedule=_one("schedule", "refresh_reuse")),
        "dense_sd": replace(base, attention=_one("attention", "dense"), speculation=spec,
                            verify_kernel=none["verify_kernel"], schedule=none["schedule"]),
    }


def ssv_space(sc) -> list[dict]:
    """The scenario's SSV strategy tuples: speculative x ssv kernels x schedules."""
    out = []
    for s in sc.axes["speculation"]:
        if s.name == "none":
            continue
        for v in sc.axes["verify_kernel"]:
            if v.name != "ssv":
                continue
            for h in sc.axes["schedule"]:
                out.append({"speculation": s, "verify_kernel": v, "schedule": h})
    return out


def _price(combo, batch, context, out):
    n = len(context)
    cols, _ = price_combo(combo, np.full(n, float(batch)), np.asarray(context, dtype=np.float64), np.full(n, float(out)))
    return cols


def op_times(combo, batch, context, out) -> dict:
    """Seconds per op name (all settings): the decode round at the mean KV length, as pricing does."""
    ctx = np.asarray(context, dtype=np.float64)
    n = len(ctx)
    ops, _ = decode_ops(combo, np.full(n, float(batch)), ctx - (out + 1.0) / 2.0)
    t = price(ops, combo.hardware, combo.launch)
    names = np.asarray(ops.names, dtype=object)[ops.name_id]
    res = {}
    for nm in np.unique(names):
        sel = names == nm
        res[nm] = np.bincount(ops.setting[sel], weights=t[sel], minlength=n)
    return res


def attention_kernel_s(combo, batch, context, out) -> np.ndarray:
    """Time of the target's attention kernels per round (NSA branch kernels, routing, merge; dense: attention
    + combine), without projections, gates, compression of new blocks, or drafting."""
    t = op_times(combo, batch, context, out)
    skip = ("nsa.gate_proj", "nsa.compress_kv")
    keys = [k for k in t if not k.startswith("draft.") and (k.startswith("nsa.") or k.startswith("attention"))
            and k not in skip]
    return sum(t[k] for k in keys)


def verify_forward_s(combo, batch, context, out) -> np.ndarray:
    """Time of the target's verification forward (everything but drafting)."""
    t = op_times(combo, batch, context, out)
    return sum(v for k, v in t.items() if not k.startswith("draft."))


def attention_share(combo, batch, context, out) -> np.ndarray:
    t = op_times(combo, batch, context, out)
    tot = sum(t.values())
    attn = sum(v for k, v in t.items() if (k.startswith("nsa.") or k.startswith("attention"))
               and not k.startswith("draft."))
    return attn / tot


def _gmean(x) -> float:
    x = np.asarray(x, dtype=np.float64)
    return float(np.exp(np.log(x).mean()))


def crossover(sc, batch: int) -> tuple[float | None, np.ndarray, np.ndarray]:
    """Smallest context of CROSSOVER_GRID from which SSV (no planning) beats dense SD at every larger
    context that fits; also the two throughputs over the grid (nan where the batch does not fit)."""
    cf = configs(sc)
    grid = np.array([c for c in CROSSOVER_GRID if c <= sc.models[0].max_context], dtype=np.float64)
    out = sc.output_tokens[0]
    a = _price(cf["ssv_np"], batch, grid, out)
    d = _price(cf["dense_sd"], batch, grid, out)
    ssv = np.where(a["fits"], a["tokens_per_s"], np.nan)
    den = np.where(d["fits"], d["tokens_per_s"], np.nan)
    wins = ssv > den
    cross = None
    for i in range(len(grid)):
        ok = ~np.isnan(ssv[i:]) & ~np.isnan(den[i:])
        if ok.any() and wins[i:][ok].all():
            cross = float(grid[i])
            break
    return cross, ssv, den


@reproduction("ssv")
def ssv_reproduction(sc) -> Reproduction:
    """SSV (arXiv:2605.19893): relative throughputs, kernel/verification speedups, planning gain, 64K attention share, dense SD comparison."""
    pv = paper_values("ssv")["values"]
    P = {k: v["value"] for k, v in pv.items()}
    cf = configs(sc)
    for k, c in cf.items():
        r = combo_refusal(c)
        if r:
            raise ValueError(f"ssv reproduction: configuration {k} refused: {r}")
    ctx = np.array(sc.context, dtype=np.float64)
    out = sc.output_tokens[0]
    rep = Reproduction(title=f"SSV reproduction: {sc.models[0].name} + nsa on {sc.hardware[0].name}, contexts "
                             + ", ".join(f"{int(c) // 1024}K" for c in ctx) + f", {out} output tokens")
    alphas = sp.sample_prompt_alphas(np.random.default_rng(SEED), N_PROMPTS, *PROMPT_ALPHA)
    space = ssv_space(sc)

    batches = sorted(set(sc.batch) | {REF_BATCH})
    for b in batches:
        ar = _price(cf["ar_nsa"], b, ctx, out)
        fits = ar["fits"] & _price(cf["ssv_np"], b, ctx, out)["fits"] & _price(cf["naive"], b, ctx, out)["fits"]
        if not fits.any():
            rep.notes.append(f"B={b}: does not fit at any context; skipped")
            continue
        cx = ctx[fits]
        ar_tps = ar["tokens_per_s"][fits]
        ranking = sp.offline_rank(cf["ar_nsa"], space, b, regimes=[int(c) for c in cx], output_tokens=out)
        naive_r, ssvnp_r, full_r, gains, best = [], [], [], [], []
        for i, c in enumerate(cx):
            fixed_cands = {k: sp.offline_rank(cf["ar_nsa"], [{"speculation": cf[k].speculation,
                                                              "verify_kernel": cf[k].verify_kernel,
                                                              "schedule": cf[k].schedule}], b, [int(c)], out)
                           .by_regime[int(c)] for k in ("naive", "ssv_np")}
            nv, _ = sp.run_prompts(fixed_cands["naive"], alphas, out, SEED, adaptive=False)
            np_, _ = sp.run_prompts(fixed_cands["ssv_np"], alphas, out, SEED, adaptive=False)
            cands = ranking.by_regime[int(c)]
            pg = sp.planning_gain(cands, alphas, out, SEED, EPS, WINDOW)
            naive_r.append(nv / ar_tps[i])
            ssvnp_r.append(np_ / ar_tps[i])
            full_r.append(pg.adaptive_tokens_per_s / ar_tps[i])
            gains.append(pg.gain)
            best.append(f"{int(c) // 1024}K: {cands[0].label} ({pg.switches} switches / {pg.prompts} prompts)")
        tag = f"B={b}"
        ref = " (reference batch)" if b == REF_BATCH else ""
        rng_txt = lambda v: f"per context {', '.join(f'{x:.2f}' for x in v)}"  # noqa: E731
        rep.add(f"AR NSA relative throughput, {tag}", P["ar_nsa_relative"], 1.0, "x", "baseline by definition", TOL)
        rep.add(f"naive SD+NSA / AR NSA, {tag}, geo-mean{ref}", P["naive_sd_nsa_relative"], _gmean(naive_r), "x",
                rng_txt(naive_r), TOL)
        rep.add(f"SSV w/o planning / AR NSA, {tag}, geo-mean{ref}", P["ssv_no_planning_relative"], _gmean(ssvnp_r),
                "x", rng_txt(ssvnp_r), TOL)
        rep.add(f"SSV full / AR NSA, {tag}, max over contexts{ref}", P["ssv_full_relative_max"], max(full_r), "x",
                rng_txt(full_r), TOL)
        rep.add(f"planning gain (online vs fixed offline-best), {tag}, mean{ref}", P["planning_gain"],
                float(np.mean(gains)), "", rng_txt(gains), TOL)
        rep.notes.append(f"{tag} offline-best SSV tuples: " + "; ".join(best))

        # kernel speedups: SSV grouped kernels (schedule none) vs per_query, same speculation
        ks = []
        for t in space:
            if t["schedule"].name != "none":
                continue
            g = replace(cf["ar_nsa"], **t)
            nv = replace(g, verify_kernel=_one("verify_kernel", "per_query"))
            if combo_refusal(g) or combo_refusal(nv):
                continue
            ks.append(attention_kernel_s(nv, b, cx, out) / attention_kernel_s(g, b, cx, out))
        if ks:
            ks = np.concatenate(ks)
            rep.add(f"grouped kernel speedup over naive, min, {tag}", P["kernel_speedup_min"], float(ks.min()), "x",
                    "over the scenario's ssv kernels x contexts (schedule none)", TOL)
            rep.add(f"grouped kernel speedup over naive, max, {tag}", P["kernel_speedup_max"], float(ks.max()), "x",
                    "over the scenario's ssv kernels x contexts (schedule none)", TOL)
        vs = verify_forward_s(cf["naive"], b, cx, out) / verify_forward_s(cf["ssv_np"], b, cx, out)
        rep.add(f"verification-stage speedup (target forward), {tag}, geo-mean{ref}", P["verification_stage_speedup"],
                _gmean(vs), "x", rng_txt(vs), TOL)

        # the comparison the paper omitted
        d = _price(cf["dense_sd"], b, cx, out)
        s = _price(cf["ssv_np"], b, cx, out)
        ratio = s["tokens_per_s"] / d["tokens_per_s"]
        rep.add(f"SSV (no planning) / dense SD (EAGLE-3 + dense), {tag}", None, _gmean(ratio), "x", rng_txt(ratio))
        cross, ssv_g, den_g = crossover(sc, b)
        rep.notes.append(f"{tag} dense SD vs SSV (no planning), tokens/s over contexts "
                         + ", ".join(f"{int(c) // 1024}K {x:,.0f}/{y:,.0f}" for c, x, y in
                                     zip([c for c in CROSSOVER_GRID if c <= sc.models[0].max_context], ssv_g, den_g)
                                     if not (np.isnan(x) or np.isnan(y)))
                         + " (SSV/dense SD); SSV wins from "
                         + (f"{int(cross)} tokens" if cross else "no context in the grid"))

    # attention share of a decode step at 64K
    c64 = np.array([65536.0])
    for key, label in (("ar_dense", "dense"), ("ar_nsa", "nsa")):
        combo = cf[key]
        mb = int(_price(combo, 1, c64, out)["max_batch"][0])
        share1 = float(attention_share(combo, 1, c64, out)[0])
        rep.add(f"attention share of an AR step at 64K, {label}, B=1", P["attention_share_64k"], share1, "",
                f"max batch that fits: {mb}", TOL)
        if mb >= 1:
            best = max((float(attention_share(replace(combo, launch=lm), mb, c64, out)[0]), lm)
                       for lm in ("graph", "eager"))
            rep.add(f"attention share at 64K, {label}, largest batch that fits (B={mb}, {best[1]})",
                    P["attention_share_64k"], best[0], "", "the most attention-bound setting that fits", TOL)
        need = None
        for bb in (2 ** np.arange(0, 14)).astype(float):
            if attention_share(combo, bb, c64, out)[0] >= ATTN_SHARE_TARGET:
                need = int(bb)
                break
        rep.notes.append(f"attention share 97.2 % at 64K ({label}): needs batch "
                         + (f">= {need}" if need else "> 8192") + f" on {sc.hardware[0].name}; only {mb} fit(s) in memory")
    # measured: an HF transformers eager decode step of this model shape on an H100 at 64K
    # (hwmodels/calibration/measure_hf_decode.py; benchmarks/hf_decode_check.py compares it with the model)
    from hwmodels.calibration.fit import DATA_DIR
    for f in sorted(DATA_DIR.glob("hf_decode_nvidia*.csv")):
        import pandas as pd

        m = pd.read_csv(f)
        m = m[(m["attn_implementation"] == "eager") & (m["context"] == 65536) & m["median_ms"].notna()]
        if len(m):
            rep.notes.append("measured (" + f.name + "): HF transformers eager decode step of a Llama-3.1-8B-shaped "
                             "model at 64K, " + ", ".join(f"B={int(r.batch)} {r.median_ms:.0f} ms"
                                                          for r in m.itertuples())
                             + "; the step grows ~linearly with B while the attention-free work stays a few ms, "
                             "i.e. attention is >= 95 % of the step at B=4: the document's 97.2 % is the share "
                             "of an HF-style eager step, not of an engine's fused one")
    # the setting that agrees: HF transformers' GQA path (repeat_kv copies K/V out to all 32 query heads)
    from simulator.strategies.base import registry as _registry
    hf = replace(cf["ar_dense"], attention=_registry()["attention"]["dense"](gqa_expand="repeat_kv"))
    mb_hf = int(_price(hf, 1, c64, out)["max_batch"][0])
    for bb, lm in ((1, "graph"), (mb_hf, "eager")):
        if bb >= 1:
            sh = float(attention_share(replace(hf, launch=lm), bb, c64, out)[0])
            rep.add(f"attention share at 64K, dense with HF repeat_kv, B={bb} ({lm})", P["attention_share_64k"], sh,
                    "", "K/V expanded to every query head before SDPA" + (" (largest batch that fits)"
                                                                          if bb == mb_hf else ""), TOL)
    # why the relative numbers depend on the batch: how much of an AR NSA step is weight streaming
    for b in batches:
        t = op_times(cf["ar_nsa"], b, c64, out)
        tot = sum(v[0] for v in t.values())
        gemm = sum(v[0] for k, v in t.items() if not k.startswith("nsa.") and not k.startswith("attention")
                   and k not in ("sampling",))
        rep.notes.append(f"B={b}, 64K: an AR NSA step is {tot * 1e3:.2f} ms, {gemm / tot:.0%} of it outside "
                         f"attention (weight-streaming GEMMs, norms, launches): the verification rows of "
                         "speculative decoding are nearly free there, so naive SD+NSA gains close to its tokens "
                         "per round and the grouped kernel changes little end to end; the paper's ~1.6x naive "
                         "SD+NSA and 97.2 % attention share point to a step dominated by attention")
    rep.notes.append("planning gain: the offline-best tuple stays the best (or within noise of it) for prompt "
                     f"acceptance in [{PROMPT_ALPHA[0]}, {PROMPT_ALPHA[1]}], so online switching changes little; the "
                     "gain needs prompts whose acceptance flips the ranking (tests: alpha 0.05 switches to one "
                     "draft). Approx mode and reuse layers are priced without any acceptance loss (no published "
                     "number), which favours them in the ranking; switch cost is not modeled")
    rep.notes.append("constants and assumptions: simulator/figures/ssv.py docstring; NSA/SSV parameters: "
                     "simulator/strategies/{nsa,verify_kernels,schedules}.py")
    return rep
