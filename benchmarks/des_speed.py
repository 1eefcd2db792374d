"""Speed and step-price accuracy of the discrete-event serving engine (simulator/engine).

    python benchmarks/des_speed.py                 # everything (the 1M-request run takes a few minutes)
    python benchmarks/des_speed.py --skip-1m       # Mooncake replay and the interpolation error only
    python benchmarks/des_speed.py --million 200000    # a smaller generated run

Prints, for each run: setup time (cost surfaces), host wall and CPU seconds of the simulation itself,
simulated seconds per wall second, engine events per second (an event is one step, or one run of identical
decode steps), decode/prefill steps per second.

1. The whole Mooncake conversation trace (12,031 requests, one hour) on the shipped scenario
   serving_mooncake_h100 (4 x H100-SXM Llama-3.1-8B; the replicas are busy ~95 % of the time and keep up:
   queueing p50 well below a second). Goal: < 10 s on one core.
2. A generated run of 1,000,000 requests: Poisson arrivals at 48 req/s with Azure-conversation lengths on
   8 x H100-SXM Llama-3.1-8B replicas (least-outstanding-tokens routing), about 5.8 simulated hours.
   Goal: minutes.
3. Step-price interpolation error: steps sampled from the Mooncake run (every 20th event of each replica),
   and random compositions for other strategy tuples, priced from the surfaces and directly
   (StepCostModel.direct_step_s: every op group priced at the step's own values); median / p99 / max
   relative error.
The host is shared: wall time can exceed CPU time when other processes run; the CPU time is the
single-core figure.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from simulator.combo import make_combo
from simulator.engine.api import load_source, simulate
from simulator.engine.config import parse_serving_section
from simulator.engine.step_cost import Composition, StepCostModel
from simulator.scenario import load_scenario


def run_line(label: str, res, setup_s: float, cpu_s: float) -> str:
    s = res.summary
    st = res.stats
    return (f"{label}: {s['requests']:,} requests, {st.sim_end_s:,.0f} simulated s; setup {setup_s:.2f} s; "
            f"simulation {res.wall_s:.2f} s wall, {cpu_s:.2f} s CPU; {st.sim_end_s / res.wall_s:,.0f} simulated s "
            f"per wall s ({st.sim_end_s / cpu_s:,.0f} per CPU s); {st.events:,} events ({st.events / cpu_s:,.0f}/CPU s), "
            f"{st.steps:,} steps ({st.steps / cpu_s:,.0f}/CPU s)")


def timed(cfg, trace, **kw):
    t0 = time.perf_counter()
    c0 = time.process_time()
    res = simulate(cfg, trace, **kw)
    return res, time.process_time() - c0, time.perf_counter() - t0


def setup_time(cfg, trace) -> float:
    """Build the cost surfaces (memoized afterwards) by simulating one request."""
    t0 = time.perf_counter()
    simulate(cfg, trace.head(1))
    return time.perf_counter() - t0


def mooncake() -> tuple:
    sc = load_scenario("serving_mooncake_h100")
    cfg = sc.serving
    trace = load_source(cfg.source, cfg.seed)
    setup = setup_time(cfg, trace)
    res, cpu, _ = timed(cfg, trace, sample_every=20)
    print(run_line("Mooncake conversation, 4 x H100-SXM", res, setup, cpu))
    s = res.summary
    print(f"    throughput {s['throughput_req_s']:.2f} req/s, TTFT p50/p99 {s['ttft_p50_ms']:.0f}/{s['ttft_p99_ms']:.0f} ms, "
          f"TPOT p50/p99 {s['tpot_p50_ms']:.1f}/{s['tpot_p99_ms']:.1f} ms, queueing p50 {s['queue_p50_ms']:.0f} ms, "
          f"busy {s['busy_fraction']:.2f}, prefix hits {s['prefix_hit_rate']:.3f}")
    res2, cpu2, _ = timed(cfg, trace, record_steps=False)
    print(f"    same run without the time series: {res2.wall_s:.2f} s wall, {cpu2:.2f} s CPU")
    return res, cfg


def million(n: int) -> None:
    doc = {"hardware": "H100-SXM", "model": "Llama-3.1-8B", "runtime": {"launch": "graph"}}
    cfg = parse_serving_section({
        "requests": {"poisson": {"rate": 48.0, "count": n},
                     "input_tokens": {"empirical": "azure_conv", "column": "input"},
                     "output_tokens": {"empirical": "azure_conv", "column": "output"}},
        "replicas": [{"count": 8}], "router": "least_outstanding_tokens", "slo": {"ttft_ms": 1000, "tpot_ms": 50},
    }, "<des_speed>", Path("."), doc)
    trace = load_source(cfg.source, 0)
    setup = setup_time(cfg, trace)
    res, cpu, _ = timed(cfg, trace, progress=True)
    print(run_line("generated Poisson, 8 x H100-SXM", res, setup, cpu))
    s = res.summary
    print(f"    throughput {s['throughput_req_s']:.2f} req/s, TTFT p50/p99 {s['ttft_p50_ms']:.0f}/{s['ttft_p99_ms']:.0f} ms, "
          f"TPOT p50/p99 {s['tpot_p50_ms']:.1f}/{s['tpot_p99_ms']:.1f} ms, busy {s['busy_fraction']:.2f}")


def err_line(label: str, errs) -> str:
    e = np.abs(np.asarray(errs))
    return (f"  {label:<44} n={len(e):5d}  median {np.median(e):.1e}  p99 {np.percentile(e, 99):.1e}  "
            f"max {e.max():.1e}")


def interpolation(res_mooncake) -> None:
    print("step-price interpolation error (surfaces vs direct pricing of the same composition, relative):")
    eng = res_mooncake.engine
    cost = eng.groups[0].cost
    samples = [c for g, c, _ in eng.plan_samples if g == 0]
    errs = [cost.step_s(c) / cost.direct_step_s(c) - 1 for c in samples]
    mixed = [e for e, c in zip(errs, samples) if c.chunks]
    dec = [e for e, c in zip(errs, samples) if not c.chunks]
    print(err_line("Mooncake steps, Llama-3.1-8B H100 (all)", errs))
    print(err_line("  of which decode-only", dec))
    print(err_line("  of which with a prefill chunk", mixed))
    rng = np.random.default_rng(0)
    for label, hw, model, kw in (
            ("Llama-3.1-8B H100 EAGLE-3 k=4", "H100-SXM", "Llama-3.1-8B", {"speculation": {"eagle3": {"k": 4}}}),
            ("Llama-3.1-70B H200 TP4 fp8 KV", "H200", "Llama-3.1-70B", {"tp": 4, "kv_dtype": "fp8"}),
            ("DeepSeek-V3 H200 TP8 (MLA, MoE)", "H200", "DeepSeek-V3", {"tp": 8}),
            ("Llama-3.1-8B H100 SnapKV", "H100-SXM", "Llama-3.1-8B", {"kv_policy": "snapkv"}),
            ("Llama-3-8B-1048k A100 LServe (by difference)", "A100-80GB", "Llama-3-8B-Gradient-1048k",
             {"attention": "lserve"}),
    ):
        c = make_combo(hw, model, **kw)
        t0 = time.perf_counter()
        m = StepCostModel(c, 8192, 512)
        build = time.perf_counter() - t0
        q = m.query_rows
        errs = []
        for _ in range(300):
            nd = int(rng.integers(0, min(512, 8192 // q)))
            T = float(np.exp(rng.uniform(0, np.log(min(m.max_context, 120000)))))
            ch = []
            if nd == 0 or rng.random() < 0.5:
                o = int(np.exp(rng.uniform(0, np.log(min(m.max_context, 100000))))) if rng.random() < 0.7 else 0
                cc = int(rng.integers(1, 8192 - nd * q + 1))
                ch = [(cc, o)]
            comp = Composition(total_tokens=nd * q + sum(x for x, _ in ch), logit_rows=nd * q + len(ch), n_decode=nd,
                               decode_ctx_sum=nd * T, chunks=tuple(ch), completes=tuple(x + o for x, o in ch))
            errs.append(m.step_s(comp) / m.direct_step_s(comp) - 1)
        print(err_line(f"{label} (build {build:.1f} s)", errs))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--skip-1m", action="store_true", help="skip the 1M-request generated run")
    ap.add_argument("--million", type=int, default=1_000_000, metavar="N", help="requests of the generated run")
    args = ap.parse_args()
    res, _ = mooncake()
    interpolation(res)
    if not args.skip_1m:
        million(args.million)


if __name__ == "__main__":
    main()
