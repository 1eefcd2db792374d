"""The engine's chunk surface at tile-aligned chunk lengths (simulator/engine/step_cost.py CHUNK_ALIGN) against the
surface priced at every length: the |error| of chunk(c, o) at random (chunk, prefix) pairs and at the Mooncake hour's
own lookups, and the seconds its columns take, per model and attention kernel; then the Mooncake hour
(serving_mooncake_h100, 12,031 requests) simulated with each step, its summary beside the exact surface's.

    python benchmarks/chunk_surface_aligned.py            # ~6 minutes on 2 cores
    python benchmarks/chunk_surface_aligned.py --quick    # the pairs only, two cases

Both surfaces share the prefix grid (linear in o between its points), so the error printed is the c interpolation's
alone. The steps compared: 0 (every length, the reference), 16 (shipped), 64, 128; each prices, besides its grid,
every length inside a segment whose slope matches neither unit step beside it (step_cost._unaligned_jumps), so a
coarser step is as exact but flags more segments (key-tile edges of o + c fall inside them) and costs more.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simulator.combo import make_combo  # noqa: E402
from simulator.engine import step_cost  # noqa: E402
from simulator.strategies.base import parse_axis  # noqa: E402

CASES = [  # device, model, kernel, tp: GQA groups 4 / 8 / 3, MLA heads packed into the query tile, the generic op
    ("H100-SXM", "Llama-3.1-8B", "fa3", 1),
    ("H200", "Llama-3.1-70B", "fa3", 8),
    ("H100-SXM", "Llama-3.1-8B", "flashinfer", 1),
    ("H100-SXM", "Minitron-4B", "fa3", 1),
    ("H100-SXM", "Minitron-4B", "flashinfer", 1),
    ("H200", "DeepSeek-V3", "fa3_mla", 8),
    ("H200", "DeepSeek-V3", "flashmla", 8),
    ("H100-SXM", "Llama-3.1-8B", "triton_vllm", 1),
    ("H100-SXM", "Llama-3.1-8B", "generic", 1),
]
STEPS = (16, 64, 128)


def cost_model(align: int, hw: str, model: str, kernel: str, tp: int) -> step_cost.StepCostModel:
    step_cost.CHUNK_ALIGN = align
    att = parse_axis("attention", [{"dense": {"kernel": kernel}}])[0]
    return step_cost.StepCostModel(make_combo(hw, model, attention=att, tp=tp), 8192, 64, mixed_launch="graph")


def pairs_error(cases, steps, n: int, look: np.ndarray | None = None) -> None:
    rng = np.random.default_rng(0)
    print(f"chunk(c, o) against every length priced: {n} random pairs (c 1-8192, o 0-120K)"
          + (f" + {n} of the Mooncake hour's lookups" if look is not None else "") + "; |error| %")
    print(f"{'case':44s} {'step':>4s} {'median':>7s} {'p90':>7s} {'p99':>7s} {'max':>7s} {'signed':>8s} "
          f"{'col ms':>7s} {'exact ms':>8s}")
    for hw, model, kernel, tp in cases:
        c = rng.integers(1, 8193, n)
        o = rng.integers(0, 120_000, n)
        pr = np.stack([c, o], 1)
        if look is not None and model == "Llama-3.1-8B":
            pr = np.concatenate([pr, look[rng.choice(len(look), n, replace=False)].astype(int)])
        ex = cost_model(0, hw, model, kernel, tp)
        e = np.array([ex.chunk_s(int(ci), int(oi)) for ci, oi in pr])
        ch = ex.chunks
        ex_ms = 1e3 * ch.build_s / max(ch.built, 1) if ch is not None else float("nan")
        for s in steps:
            al = cost_model(s, hw, model, kernel, tp)
            a = np.array([al.chunk_s(int(ci), int(oi)) for ci, oi in pr])
            ok = e > 0
            r = a[ok] / e[ok] - 1.0
            err = np.abs(r) * 100.0
            ch = al.chunks
            ms = 1e3 * ch.build_s / max(ch.built, 1) if ch is not None else float("nan")
            label = f"{hw} {model} {kernel} TP{tp}"
            print(f"{label:44s} {s:4d} {np.median(err):7.4f} {np.quantile(err, .9):7.4f} {np.quantile(err, .99):7.4f} "
                  f"{err.max():7.3f} {100 * r.mean():+8.4f} {ms:7.1f} {ex_ms:8.1f}", flush=True)
    step_cost.CHUNK_ALIGN = 16


def mooncake(steps) -> np.ndarray:
    """The hour at each step; returns the (c, o) lookups the exact surface's run made."""
    from simulator.engine.api import load_source, simulate
    from simulator.scenario import load_scenario
    keys = ("ttft_p50_ms", "ttft_p90_ms", "ttft_p99_ms", "tpot_p50_ms", "tpot_p90_ms", "tpot_p99_ms", "goodput_req_s",
            "slo_attainment")
    print("\nthe Mooncake hour (serving_mooncake_h100, 12,031 requests, 4 x H100-SXM Llama-3.1-8B, vLLM's fa3):")
    print(f"{'step':>4s} {'sim CPU s':>9s} {'columns s':>9s} " + " ".join(f"{k:>14s}" for k in keys))
    base = None
    seen: list = []
    at = step_cost.ChunkSurface.at
    for s in (0, steps[0]):
        if s == 0:
            def record(self, c, o, _at=at):
                seen.append((c, o))
                return _at(self, c, o)
            step_cost.ChunkSurface.at = record
        else:
            step_cost.ChunkSurface.at = at
        step_cost.CHUNK_ALIGN = s
        from simulator.engine import sim as sim_mod
        sim_mod._COST_CACHE.clear()
        cfg = load_scenario("serving_mooncake_h100").serving
        trace = load_source(cfg.source, cfg.seed)
        simulate(cfg, trace.head(1))
        c0 = time.process_time()
        res = simulate(cfg, trace)
        cpu = time.process_time() - c0
        built = [m for _, m in sim_mod._COST_CACHE.values()]
        col_s = sum(m.chunks.build_s for m in built if m.chunks is not None)
        v = [res.summary[k] for k in keys]
        if base is None:
            base = v
        cells = " ".join(f"{x:9.4f}" + (f"{100 * (x / b - 1):+5.2f}" if s else "      ") for x, b in zip(v, base))
        print(f"{s:4d} {cpu:9.2f} {col_s:9.2f} {cells}", flush=True)
    step_cost.ChunkSurface.at = at
    step_cost.CHUNK_ALIGN = 16
    return np.array(seen, dtype=np.float64)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    print(f"# benchmarks/chunk_surface_aligned.py, {time.strftime('%Y-%m-%d')}, 2 cores, no GPU")
    if args.quick:
        pairs_error(CASES[:2], (16,), 300)
        return
    look = mooncake(STEPS)
    print()
    pairs_error(CASES, STEPS, 1500, look)


if __name__ == "__main__":
    main()
