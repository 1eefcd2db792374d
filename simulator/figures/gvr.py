"""GVR top-k (NVIDIA TensorRT LLM tech blog, arXiv:2604.22312): the single-operator ablation, the 1.88x
average speedup on a 68,665-token row, parity on random data, and the end-to-end TPOT reductions on B200 x8
(DeepSeek-V3.2-Exp, batch 1, OSL 1K) at MTP 0/1/3 — plus predictions at 128K/256K and index_topk 512/1024.

Everything is priced by the roofline from the pass model of simulator/strategies/topk.py; nothing here is
fitted to the paper values (which live in gvr.yaml).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from hwmodels.roofline import price
from simulator.combo import Combo, make_combo
from simulator.figures import Reproduction, paper_values, reproduction
from simulator.ops import OpBuilder
from simulator.pricing import price_combo



def _combo(sc, topk, speculation="none", attention="dsa", model=None) -> Combo:
    wd = sc.weight_dtype[0]
    tp, ep, dp = sc.parallel[-1]
    return make_combo(sc.hardware[0], model or sc.models[0], kv_dtype=sc.kv_dtype[0],
                      weight_dtype=None if wd == "native" else wd, tp=tp, ep=ep, attn_dp=dp, launch=sc.launch,
                      kernels=sc.kernels, attention=attention, topk=topk, speculation=speculation)


def kernel_us(combo: Combo, length, rows=1.0, k=2048) -> np.ndarray:
    """Kernel time (launch excluded, as a profiler reports it) of one top-k over rows x length, in us."""
    length = np.atleast_1d(np.asarray(length, dtype=np.float64))
    b = OpBuilder(len(length))
    combo.topk.add_ops(b, combo, np.full(len(length), float(rows)), length, k, 1, "decode")
    ops = b.build()
    p = price(ops, combo.hardware, combo.launch, detail=True)
    return np.bincount(ops.setting, weights=p.time_s - p.launch_s, minlength=len(length)) * 1e6


def tpot_reduction_pct(sc, context, mtp: int, topk_gvr="gvr", model=None, attention="dsa") -> np.ndarray:
    spec = "none" if mtp == 0 else {"mtp": {"k": mtp}}
    context = np.atleast_1d(np.asarray(context, dtype=np.float64))
    ones = np.ones_like(context)
    out = sc.output_tokens[0] * ones
    r, _ = price_combo(_combo(sc, "radix", spec, attention, model), ones, context, out)
    g, _ = price_combo(_combo(sc, topk_gvr, spec, attention, model), ones, context, out)
    return 100.0 * (1.0 - g["tpot_ms"] / r["tpot_ms"])


@reproduction("gvr_topk")
def gvr_topk(sc) -> Reproduction:
    """GVR top-k (TensorRT-LLM): radix vs GVR kernel ablation, TPOT reduction under MTP on B200 x8, predictions."""
    pv = paper_values("gvr")
    tol = pv["tolerance_speedup"]["value"]
    n = pv["row_length"]["value"]
    rep = Reproduction(f"GVR top-k on {sc.hardware[0].name}: single operator (row of {n:,} fp32 logits, k = 2048, "
                       f"batch 1) and end-to-end TPOT ({sc.models[0].name}, TP{sc.parallel[-1][0]} EP{sc.parallel[-1][1]}, batch 1, "
                       f"OSL {sc.output_tokens[0]})")
    ab = pv["ablation_us"]
    radix = float(kernel_us(_combo(sc, "radix"), n)[0])
    rep.add("radix-select kernel", ab["radix"]["value"], radix, "us", "no preIdx", tol)
    cases = {
        "random": ({"gvr": {"preidx": "random"}}, "random preIdx (overlap k/N)"),
        "previous_l20_60": ({"gvr": {"overlap": ab["previous_l20_60"]["overlap"]}}, "prev-step top-k, overlap 44 %"),
        "previous_l0_1": ({"gvr": {"overlap": ab["previous_l0_1"]["overlap"]}}, "prev-step top-k, overlap 1.5 %"),
    }
    speed = {}
    for key, (value, note) in cases.items():
        t = float(kernel_us(_combo(sc, value), n)[0])
        speed[key] = radix / t
        rep.add(f"GVR kernel, {note}", ab[key]["value"], t, "us", "", tol)
    for key, (value, note) in cases.items():
        rep.add(f"speedup vs radix, {note}", ab["radix"]["value"] / ab[key]["value"], speed[key], "x", "", tol)
    band = pv["speedup"]["overlap_band"]["value"]
    band_speed = [radix / float(kernel_us(_combo(sc, {"gvr": {"overlap": a}}), n)[0]) for a in np.linspace(*band, 4)]
    # 9 layers: 2 low-overlap (L0-1) + 7 in the 35-50 % band (ASSUMPTION: Fig. 9's layer list is not given)
    avg = (2 * speed["previous_l0_1"] + 7 * float(np.mean(band_speed))) / 9
    rep.add("average single-operator speedup (9 layers)", pv["speedup"]["average"]["value"], avg, "x",
            "2 layers at 1.5 % + 7 at 35-50 % overlap", tol)
    per_layer = [speed["previous_l0_1"]] + band_speed
    rep.add("per-layer speedup, lowest", pv["speedup"]["per_layer_min"]["value"], min(per_layer), "x", "", tol)
    rep.add("per-layer speedup, highest", pv["speedup"]["per_layer_max"]["value"], max(per_layer), "x", "", tol)

    grid = np.unique(np.round(np.geomspace(4096, 199_999, 60)))
    # random data: the radix kernel's first (fp16, 11-bit) histogram step already isolates a threshold bin of
    # a few hundred items, so it stops after one step (measured: 2 sweeps at every length on N(0, 1) rows,
    # hwmodels/calibration/data/topk_cta_*.csv); real decode logits take the document's 3-4 passes (steps 2)
    rr = kernel_us(_combo(sc, {"radix": {"steps": 1}}), grid)
    gr = kernel_us(_combo(sc, {"gvr": {"preidx": "random", "min_length": 1024, "steps": 1}}), grid)
    slower = np.nonzero(gr > rr)[0]   # parity: the N from which on GVR(random preIdx) stays <= radix
    ok = len(slower) == 0 or slower[-1] < len(grid) - 1
    parity = float(grid[0] if len(slower) == 0 else grid[slower[-1] + 1]) if ok else float("nan")
    rr2 = kernel_us(_combo(sc, "radix"), grid)
    gr2 = kernel_us(_combo(sc, {"gvr": {"preidx": "random", "min_length": 1024}}), grid)
    slow2 = np.nonzero(gr2 > rr2)[0]
    p2 = grid[0] if len(slow2) == 0 else (grid[slow2[-1] + 1] if slow2[-1] < len(grid) - 1 else float("nan"))
    rep.notes.append(f"parity on random data: with the radix at one histogram step (what our kernel does on N(0, 1) "
                     f"rows) GVR with random preIdx never catches up (its ~4 secant passes + collect sweep cost more "
                     f"than radix's 2 sweeps); with the 2 steps of real logits it is faster from N = {p2:,.0f}. Our "
                     "own kernels on the H200 show no clean parity either (GVR-random / radix = 1.99x at 4K, 0.99x at "
                     "16K, 0.83x at 68,665, 1.38x at 196K: the pass count jumps between 3 and 6)")
    rep.add("parity row length, random data", pv["parity_length_random"]["value"], parity, "tokens",
            "N from which GVR(random preIdx) <= radix" if ok else
            f"no parity: GVR(random) is {gr[-1] / rr[-1]:.2f}x radix's time at N = {grid[-1]:,.0f}", tol)

    pts = pv["tolerance_tpot_points"]["value"]
    red = pv["tpot_reduction_pct"]
    out = sc.output_tokens[0]
    for bucket, prompt in (("64K", 65536), ("100K", 102400)):
        for mtp in (0, 1, 3):
            sim = float(tpot_reduction_pct(sc, prompt + out, mtp)[0])
            paper = red[bucket][f"mtp{mtp}"]
            rep.add(f"TPOT reduction {bucket}, MTP={mtp}", paper, sim, "%",
                    f"{sim - paper:+.2f} points (tolerance +-{pts} points)", pts / paper)
    # beyond the paper
    m = sc.models[0]
    whatif = replace(m, name=f"{m.name}-whatif-320K", max_context=327680)
    for prompt in (131072, 262144):
        mdl = whatif if prompt + out > m.max_context else None
        for mtp in (0, 3):
            sim = float(tpot_reduction_pct(sc, prompt + out, mtp, model=mdl)[0])
            rep.add(f"prediction: TPOT reduction {prompt // 1024}K, MTP={mtp}", None, sim, "%",
                    ("what-if max_context 320K; " if mdl else "")
                    + ("rows >= 200K take split-work radix: GVR falls back" if prompt >= 200_000 else ""))
    for k in (512, 1024):
        sim = float(tpot_reduction_pct(sc, 102400 + out, 0,
                                       topk_gvr={"gvr": {"supported_topk": [512, 1024, 2048]}},
                                       attention={"dsa": {"index_topk": k}})[0])
        rep.add(f"prediction: TPOT reduction 100K, MTP=0, index_topk={k}", None, sim, "%",
                "what-if: GVR enabled for this k")
    rep.notes += [
        "Pass model (simulator/strategies/topk.py): radix = 2 histogram steps x 2 sweeps with shared-atomic work; "
        "GVR = k predicted reads + S secant count sweeps + 1 collect sweep + in-smem refine, one CTA per row.",
        "S comes from a Monte Carlo of the secant search on Gaussian rows whose step-to-step correlation gives the "
        "stated raw overlap (overlap <= k/N means no information): S = 1 at 44 %, ~4 for random or 1.5 %.",
        "Absolute kernel times: B200 peaks scaled by the H200 calibration of the op kind topk_cta, fitted to our "
        "own single-CTA radix-select and GVR kernels measured on the H200 (hwmodels/calibration/measure_topk_cta.py, "
        "fit_topk_cta.py: 5 % / 9 % median error on the GVR / radix fit rows, 6-15 % held out), with three "
        "measured constants of those kernels (histogram atomic 9.4 and same-address atomic 6.5 flop-equivalents "
        "per element, GVR's work outside its sweeps 2.6e5 per row) - not fitted to TensorRT-LLM's kernels nor to "
        "any number of this table. On our own GVR at 2 sweeps the fit is 7-14 % fast; the rest of the 44 %-overlap "
        "miss is the pass count: the Gaussian Monte Carlo gives S = 1 where the document reports '1-2 "
        "iterations' on real decode data. Radix is priced at the document's upper '4 full-row passes' (2 steps).",
        "Layers 0-1 (1.5 % raw overlap, below the random baseline 2.9 %) are modeled like random preIdx; the real "
        "kernel is faster there (27.2 vs 30.9 us) because their shifted overlap / bounded score distribution "
        "still helps - information the raw overlap does not carry.",
        "TPOT: MTP drafts run the MTP module with dense MLA (speculative.py), the verify pass selects top-k for "
        "all K+1 rows (one CTA each, in parallel), so MTP dilutes the gain only through the rest of the round "
        "(Amdahl). The simulated step carries launch and all-reduce latency terms that do not grow with the "
        "MTP rows, which makes the dilution weaker than measured.",
    ]
    # the Amdahl denominator: the TPOT the document's own numbers imply vs the simulated one
    r64, _ = price_combo(_combo(sc, "radix"), [1.0], [65536.0 + out], [float(out)])
    sav = (59 * (ab["radix"]["value"] - ab["previous_l20_60"]["value"])
           + 2 * (ab["radix"]["value"] - ab["previous_l0_1"]["value"])) / 61.0
    implied = sc.models[0].layers * sav * 1e-3 / (red["64K"]["mtp0"] / 100.0)
    rep.notes.append(f"TPOT at 64K, MTP=0, radix: simulated {r64['tpot_ms'][0]:.1f} ms; the document implies about "
                     f"{implied:.1f} ms (its kernel saving {sav:.1f} us x {sc.models[0].layers} layers / 5.47 %). "
                     "Both the per-layer saving (our GVR at 44 % overlap is priced at one secant pass) and the shorter "
                     "simulated step push the simulated reductions up; the batch-1 TensorRT-LLM step evidently "
                     "holds ~9 ms of work (extra kernels, activation quantization for NVFP4, MoE routing) the op "
                     "table does not have")
    return rep
