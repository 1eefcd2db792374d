#!/usr/bin/env python3
"""Serving-level calibration on one GPU: a small continuous-batching server driven by timed arrivals.

    python lab/serving/run_server.py --out DIR                     # defaults below, ~5 min on an H100
    python lab/serving/run_server.py --out DIR --rates 2,6,10 --duration 40 --azure none
    python lab/serving/run_server.py --out /tmp/s --smoke          # CPU, tiny model, ~20 s (both schedulings)
    python lab/serving/run_server.py --out DIR --async-scheduling  # vLLM-v1-style async scheduling
    python lab/serving/run_server.py --out DIR --compare-async --rates 4,10 --closed-loop 32,400 --duration 30

It builds a model of the shape of a simulator model file (default Llama-3.1-8B) with random bf16 weights
(nothing is downloaded), runs the simulator's own scheduler (simulator.engine.scheduler, the vLLM-v1-like
policy the simulator models) for its batching decisions, and executes each step on the GPU as model_torch.py
describes (token-packed forward, FlashAttention-2 paged varlen attention, CUDA graphs for decode-only steps).
Arrivals are replayed in real time (driver.py): Poisson levels and a rescaled slice of the Azure
conversation trace (workloads.py). Before the load levels it times a fixed set of controlled steps
(workload 'calib': decode batches, prefill chunks, mixed steps) with the same code path, which separates the
device time of a step from the harness's host overhead (input packing, launch, sync).

Writes three files into --out (records.py says what is in each):
serving_own_{requests,steps,config}_<gpu>_<date>.csv/json. benchmarks/des_validation.py replays them in the
simulator. It changes no GPU setting.

--async-scheduling runs the loop of driver.serve_async (the next step scheduled, packed and launched while the
previous one is on the GPU; decode input tokens fed from the previous step's ids on the device) and adds the
columns driver.ASYNC_COLUMNS; the files are then serving_ownasync_*. --compare-async runs every level twice in one
process, synchronous then async (same requests), into serving_ownsync_* and serving_ownasync_*. Before the levels,
a run with async scheduling checks that device-fed decode steps sample the same ids as host-fed ones.
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import math
import os
import platform
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
try:
    import simulator  # noqa: F401
except ImportError:  # run from a clone without `pip install`: the repository root is the package root
    sys.path.insert(1, ROOT)

import driver  # noqa: E402
import numpy as np  # noqa: E402
import records  # noqa: E402
import workloads  # noqa: E402

SCRIPT_VERSION = 2   # 2: --async-scheduling, --compare-async, --closed-loop, --engine-tag
DEFAULT_RATES = "2,6,10,14,16"


def model_shape(name: str) -> dict:
    from simulator.model import load_model

    m = load_model(name)
    return dict(layers=m.layers, hidden=m.hidden, heads=m.heads, kv_heads=m.kv_heads, head_dim=m.head_dim,
                ffn=m.ffn, vocab=m.vocab, rope_theta=500000.0)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__)
    ap.add_argument("--out", required=True, help="output folder")
    ap.add_argument("--rates", default=DEFAULT_RATES, help=f"Poisson rates, requests/s (default {DEFAULT_RATES})")
    ap.add_argument("--duration", type=float, default=40.0, help="seconds of arrivals per Poisson level (default 40)")
    ap.add_argument("--azure", default="600,60,1.6",
                    help="Azure conversation slice START,WINDOW,RATE_SCALE in trace seconds (default 600,60,1.6: "
                         "the trace's 10th minute, arrivals 1.6x faster); 'none' to skip")
    ap.add_argument("--drain", type=float, default=25.0, help="seconds after the last arrival before a level is cut")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--model", default="Llama-3.1-8B", help="simulator model name or YAML path (shape only)")
    ap.add_argument("--block-size", type=int, default=16, help="the scheduler's KV block size (vLLM default 16); "
                    "the K/V themselves live in per-request slots of one arena (model_torch.py)")
    ap.add_argument("--max-num-batched-tokens", type=int, default=8192, help="token budget per step (vLLM default "
                    "on >= 70 GiB GPUs: 8192)")
    ap.add_argument("--max-num-seqs", type=int, default=1024, help="running requests cap (vLLM default on >= 70 GiB "
                    "GPUs: 1024)")
    ap.add_argument("--max-capture", type=int, default=512, help="largest CUDA-graph batch (vLLM default 512)")
    ap.add_argument("--max-model-len", type=int, default=16384)
    ap.add_argument("--gpu-memory-utilization", type=float, default=0.90, help="vLLM's default 0.9")
    ap.add_argument("--graph-reserve-gib", type=float, default=2.0,
                    help="memory kept back for CUDA graphs when sizing the KV cache (ASSUMPTION, default 2)")
    ap.add_argument("--no-prefix-caching", action="store_true")
    ap.add_argument("--no-graphs", action="store_true", help="run decode steps eagerly too")
    ap.add_argument("--no-calib", action="store_true", help="skip the controlled-step calibration")
    ap.add_argument("--max-minutes", type=float, default=8.0, help="start no new load level after this")
    ap.add_argument("--async-scheduling", action="store_true",
                    help="schedule, pack and launch step N+1 while step N runs (vLLM v1 async scheduling)")
    ap.add_argument("--compare-async", action="store_true",
                    help="run every level synchronously and then with async scheduling (two sets of files)")
    ap.add_argument("--closed-loop", default="",
                    help="C,N: add a closed-loop level of N requests, C in flight (cut at --duration + --drain)")
    ap.add_argument("--engine-tag", default="",
                    help="file name engine (default own; ownasync with --async-scheduling; --compare-async: TAG + "
                         "sync / async, TAG default own)")
    ap.add_argument("--date", default=dt.date.today().isoformat())
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--smoke", action="store_true", help="CPU, tiny model, short levels: tests the script")
    a = ap.parse_args(argv)
    if a.smoke:
        a.device = "cpu"
        if a.rates == DEFAULT_RATES:
            a.rates = "3,6"
        a.duration = min(a.duration, 3.0)
        if not a.closed_loop:
            a.closed_loop = "4,12"
        a.drain = min(a.drain, 5.0)
        a.max_model_len = min(a.max_model_len, 2048)
        a.max_num_batched_tokens = min(a.max_num_batched_tokens, 512)
        if a.azure == "600,60,1.6":
            a.azure = "600,12,1.0"
    return a


def calib_compositions(smoke: bool):
    """(name, decode contexts, prefill chunks [(tokens, prefix)]) of the controlled steps."""
    if smoke:
        return [("decode_b4_c100", [100] * 4, []), ("prefill_200", [], [(200, 0)]),
                ("mixed_b2_c100_p120", [100] * 2, [(120, 0)])]
    out = []
    for b in (1, 8, 32, 64, 128, 256):
        out.append((f"decode_b{b}_c1024", [1024] * b, []))
    for b in (1, 32):
        out.append((f"decode_b{b}_c4096", [4096] * b, []))
    for t in (128, 512, 2048, 8192):
        out.append((f"prefill_{t}", [], [(t, 0)]))
    out.append(("prefill_2048_prefix4096", [], [(2048, 4096)]))
    out.append(("mixed_b1_c1024_p512", [1024], [(512, 0)]))
    out.append(("mixed_b32_c1024_p2048", [1024] * 32, [(2048, 0)]))
    out.append(("mixed_b64_c1024_p128", [1024] * 64, [(128, 0)]))
    return out


def run_calib(ex, arena_tokens, smoke, reps, log):
    """Time each controlled composition `reps` times through Executor.run (graph or eager as in serving).
    Requests get distinct slots spread over the arena (so K/V reads do not hit L2 more than in serving)."""
    import model_torch as mt

    rows = []
    nxt = [mt.NULL_SLOT_TOKENS]

    def place(n):
        if nxt[0] + n > arena_tokens:
            nxt[0] = mt.NULL_SLOT_TOKENS
        a = nxt[0]
        nxt[0] += -(-n // 16) * 16
        return [a]

    k = 0
    for name, dctx, chunks in calib_compositions(smoke):
        rid = [f"calib{k}_{i}" for i in range(len(dctx) + len(chunks))]
        comp = [c - 1 for c in dctx] + [p for _, p in chunks]
        new = [1] * len(dctx) + [t for t, _ in chunks]
        tables = [place(c + n) for c, n in zip(comp, new)]
        st = driver.StepIn(rid, np.asarray(comp, dtype=np.int64), np.asarray(new, dtype=np.int64), tables)
        for rep in range(reps + 2):
            t0 = time.perf_counter()
            _ids, tm = ex.run(st)
            if rep < 2:
                continue
            row = {"workload": "calib", "step": k, "t_start_s": 0.0, "sched_s": 0.0, "prep_s": tm.t_prep_end - t0,
                   "launch_s": tm.t_launch_end - tm.t_prep_end, "sync_s": tm.t_end - tm.t_launch_end,
                   "update_s": 0.0, "wall_s": tm.t_end - t0, "gpu_s": tm.gpu_s, "path": tm.path, "rows": st.n,
                   "padded": tm.padded, "tokens": st.tokens, "running": 0, "waiting": 0, "kv_blocks_used": 0}
            row.update(driver.composition(st))
            rows.append(row)
            k += 1
        for r in rid:
            ex.forget(r)
        last = rows[-reps:]
        log(f"  calib {name:<26} {tm.path:<5} wall {np.median([r['wall_s'] for r in last]) * 1e3:8.2f} ms  "
            f"device {np.median([r['gpu_s'] for r in last]) * 1e3:8.2f} ms  host prep "
            f"{np.median([r['prep_s'] for r in last]) * 1e3:6.3f} ms")
    return rows


def main(argv=None) -> int:
    a = parse_args(argv)
    t_start = time.perf_counter()
    log = lambda s: print(s, flush=True)  # noqa: E731
    import model_torch as mt
    import torch
    from sched_adapter import SchedAdapter

    from simulator.engine.scheduler import SchedulerConfig

    dev = torch.device(a.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        sys.exit("CUDA not available (use --smoke for a CPU test run)")
    shape = mt.TINY if a.smoke else model_shape(a.model)
    rates = [float(x) for x in a.rates.split(",") if x.strip()]
    azure = None if a.azure.strip().lower() == "none" else tuple(float(x) for x in a.azure.split(","))
    scale_len = 0.05 if a.smoke else 1.0
    wls = workloads.build(rates, a.duration, a.seed, azure, a.max_model_len, scale_len)
    if a.closed_loop:
        c_, n_ = (int(x) for x in a.closed_loop.split(","))
        wls.append(workloads.closed_loop_level(c_, n_, a.duration, a.seed + 500, a.max_model_len, scale_len))
    if a.smoke:
        modes = [False, True]
    elif a.compare_async:
        modes = [False, True]
    else:
        modes = [bool(a.async_scheduling)]
    gpu = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu-smoke"
    log(f"device {gpu}; torch {torch.__version__}; model {a.model if not a.smoke else 'TINY'} {shape}")
    for w in wls:
        log(f"workload {w.name}: {len(w)} requests over {w.arrival_s[-1]:.1f} s, prompt mean "
            f"{w.input_tokens.mean():.0f}, output mean {w.output_tokens.mean():.0f}")

    torch.manual_seed(a.seed)
    t0 = time.perf_counter()
    m = mt.PagedLlama(shape, a.device, torch.bfloat16, seed=a.seed)
    if dev.type == "cuda":
        torch.cuda.synchronize()
    log(f"weights {m.weight_bytes / 2**30:.2f} GiB built in {time.perf_counter() - t0:.1f} s")
    backend, plog = mt.probe_attention(dev, shape)
    for line in plog:
        log(f"attention probe: {line}")
    log(f"attention backend: {backend}")

    # ---- KV cache size (vLLM-style profile run of one max_num_batched_tokens chunk) ----------------------
    tb = m.token_bytes()
    T = a.max_num_batched_tokens
    m.alloc_kv(T + mt.NULL_SLOT_TOKENS, a.max_model_len)
    ex0 = mt.Executor(m, backend, [], use_graphs=False)
    st = driver.StepIn(["profile"], np.asarray([0]), np.asarray([T]), [[mt.NULL_SLOT_TOKENS]])
    if dev.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    ex0.run(st)
    if dev.type == "cuda":
        torch.cuda.synchronize()
        act_peak = torch.cuda.max_memory_allocated() - base
        total = torch.cuda.get_device_properties(dev).total_memory
        m.kv = None
        torch.cuda.empty_cache()
        kv_bytes = a.gpu_memory_utilization * total - m.weight_bytes - act_peak - a.graph_reserve_gib * 2**30
        num_blocks = int(kv_bytes // (tb * a.block_size))
    else:
        act_peak, total, num_blocks = 0, 0, 1024
    del ex0
    arena_tokens = num_blocks * a.block_size
    m.alloc_kv(arena_tokens, a.max_model_len)
    log(f"KV cache: {arena_tokens} tokens ({arena_tokens * tb / 2**30:.1f} GiB) = {num_blocks} scheduler blocks of "
        f"{a.block_size}; activation peak {act_peak / 2**30:.2f} GiB")

    caps = [] if a.no_graphs else mt.vllm_capture_sizes(min(a.max_num_seqs, a.max_capture))
    ex = mt.Executor(m, backend, caps, use_graphs=not a.no_graphs)
    cap_s = ex.capture(log)

    calib_rows = [] if a.no_calib else run_calib(ex, arena_tokens, a.smoke, 3 if a.smoke else 10, log)
    feed_check = None
    if True in modes:
        try:
            feed_check = async_feed_check(ex, arena_tokens, shape, log)
        except Exception as ex_:  # noqa: BLE001 - recorded in the config; the levels still run
            if a.smoke:
                raise
            feed_check = {"ok": False, "error": f"{type(ex_).__name__}: {ex_}"}
            log(f"async feed check FAILED: {feed_check['error']}")

    sched_cfg = SchedulerConfig(num_blocks=num_blocks, block_size=a.block_size,
                                max_num_batched_tokens=a.max_num_batched_tokens, max_num_seqs=a.max_num_seqs,
                                enable_prefix_caching=not a.no_prefix_caching)
    # warm-up level (not recorded): a few requests through the whole path, in every mode run
    for mode in modes:
        warm = workloads.poisson_level(rates[0], 2.0 if not a.smoke else 1.0, a.seed + 1000, a.max_model_len,
                                       scale_len)
        warm.name = "warmup"
        driver.serve(warm, SchedAdapter(sched_cfg, mt.SlotArena(arena_tokens), async_scheduling=mode), ex,
                     drain_s=10.0, log=log, async_scheduling=mode)

    res = {mode: ([], list(calib_rows) if mode == modes[0] else [], []) for mode in modes}
    deadline = t_start + a.max_minutes * 60
    for w in wls:
        late = time.perf_counter() > deadline   # a level runs in every mode or in none
        for mode in modes:   # the same requests in each mode, one after the other
            all_reqs, all_steps, summaries = res[mode]
            if late:
                log(f"[{w.name}] skipped: --max-minutes reached")
                summaries.append({"workload": w.name, "skipped": "max-minutes reached"})
                continue
            ad = SchedAdapter(sched_cfg, mt.SlotArena(arena_tokens), async_scheduling=mode)
            try:
                reqs, steps, summ = driver.serve(w, ad, ex, drain_s=a.drain, log=log, async_scheduling=mode)
            except Exception as ex_:  # noqa: BLE001 - keep the other mode's and levels' data; say what broke
                import traceback

                log(f"[{w.name}] async={mode} FAILED: {type(ex_).__name__}: {ex_}\n{traceback.format_exc()}")
                summaries.append({"workload": w.name, "skipped": f"failed: {type(ex_).__name__}: {ex_}"})
                if a.smoke:
                    raise
                ex.a_inflight = ex.a_last = None
                continue
            summ.update(driver.latency_stats(reqs))
            summ["async_scheduling"] = mode
            if mode:
                summ["skipped_finishing"] = ad.skipped
            st_ = [s for s in steps]
            if st_:
                host = np.asarray([s["sched_s"] + s["prep_s"] + s["update_s"] for s in st_])
                summ["host_per_step_ms_p50"] = float(np.median(host) * 1e3)
                summ["graph_steps"] = sum(s["path"] == "graph" for s in st_)
                summ["step_wall_ms_p50"] = float(np.median(np.diff([s["t_start_s"] for s in st_])) * 1e3) \
                    if len(st_) > 1 else math.nan
                summ["gpu_ms_p50"] = float(np.median([s["gpu_s"] for s in st_]) * 1e3)
            summ["meta"] = w.meta
            summaries.append(summ)
            all_reqs += reqs
            all_steps += steps

    for mode in modes:
        all_reqs, all_steps, summaries = res[mode]
        if a.engine_tag and len(modes) == 1:
            engine = a.engine_tag
        elif len(modes) == 2:
            engine = (a.engine_tag or "own") + ("async" if mode else "sync")
        else:
            engine = "ownasync" if mode else "own"
        write_run(a, argv, engine, mode, gpu, torch, shape, m, backend, plog, tb, num_blocks, arena_tokens, act_peak,
                  total, ex, caps, cap_s, sched_cfg, wls, summaries, all_reqs, all_steps, feed_check, t_start, log)
    log(f"total {time.perf_counter() - t_start:.1f} s")
    return 0


def write_run(a, argv, engine, mode, gpu, torch, shape, m, backend, plog, tb, num_blocks, arena_tokens, act_peak,
              total, ex, caps, cap_s, sched_cfg, wls, summaries, all_reqs, all_steps, feed_check, t_start, log):
    dev = torch.device(a.device)
    p = records.paths(a.out, engine, gpu, a.date)
    records.write_csv(p["requests"], driver.REQUEST_COLUMNS, all_reqs)
    records.write_csv(p["steps"], driver.ASYNC_STEP_COLUMNS if mode else driver.STEP_COLUMNS, all_steps)
    cfg = {
        "engine": engine, "script": "lab/serving/run_server.py", "script_version": SCRIPT_VERSION,
        "argv": sys.argv[1:] if argv is None else list(argv), "date": a.date, "gpu": gpu,
        "torch_version": torch.__version__, "cuda_version": torch.version.cuda or "", "python": platform.python_version(),
        "model": "TINY" if a.smoke else a.model, "shape": shape, "dtype": "bf16", "weights_bytes": m.weight_bytes,
        "attention_backend": backend, "attention_probe": plog, "kv_token_bytes": tb, "num_blocks": num_blocks,
        "arena_tokens": arena_tokens, "kv_layout": "per-request contiguous slots (prompt + output tokens) in one arena",
        "block_size": a.block_size, "max_model_len": a.max_model_len, "activation_peak_bytes": act_peak,
        "gpu_total_bytes": total, "gpu_memory_utilization": a.gpu_memory_utilization,
        "graph_reserve_gib": a.graph_reserve_gib, "graph_pool_bytes": ex.graph_pool_bytes, "capture_sizes": caps,
        "capture_s": cap_s, "graph_padding": "decode-only batch of n rows replays the smallest captured size >= n",
        "scheduler": dataclasses.asdict(sched_cfg), "scheduler_module": "simulator.engine.scheduler",
        "kernels": "plain PyTorch (measure.py DecodeModel structure): runtime kernels=unfused; decode-only steps "
                   "launch=graph, steps with a prefill chunk launch=eager",
        "logits": "last token of each scheduled request (vLLM logits_indices); greedy argmax; ids copied to host "
                  "every step",
        "workloads": [w.meta | {"name": w.name} for w in wls], "summaries": summaries, "drain_s": a.drain,
        "wall_s": time.perf_counter() - t_start,
    }
    if mode:
        cfg["async_scheduling"] = {
            "on": True, "loop": "lab/serving/driver.py serve_async: one step in flight; the next scheduled, packed "
                                "and launched before the wait for the previous step's ids",
            "placeholders": "lab/serving/sched_adapter.py (vLLM AsyncScheduler's output placeholders)",
            "feed": "decode input tokens from the previous step's ids on the device (model_torch.Executor.launch)",
            "feed_check": feed_check}
    if dev.type == "cuda":
        sys.path.insert(1, os.path.dirname(HERE))  # lab/, for harness.py
        from harness import driver_version

        cfg["driver_version"] = driver_version()
    records.write_config(p["config"], cfg)
    for k_, v in p.items():
        log(f"wrote {v}")
    log("")
    log(f"{engine}: {'workload':<14} {'req':>5} {'done':>5} {'TTFT p50':>9} {'p90':>8} {'TPOT p50':>9} {'p90':>8} "
        f"{'steps':>6} {'host/step':>9} {'cycle p50':>9} {'gpu p50':>8}")
    for s in summaries:
        if "skipped" in s:
            log(f"{engine}: {s['workload']:<14} skipped")
            continue
        log(f"{engine}: {s['workload']:<14} {s['requests']:>5} {s['finished']:>5} {s['ttft_p50_s'] * 1e3:8.1f}m "
            f"{s['ttft_p90_s'] * 1e3:7.1f}m {s['tpot_p50_s'] * 1e3:8.2f}m {s['tpot_p90_s'] * 1e3:7.2f}m "
            f"{s['steps']:>6} {s.get('host_per_step_ms_p50', math.nan):8.3f}m "
            f"{s.get('step_wall_ms_p50', math.nan):8.3f}m {s.get('gpu_ms_p50', math.nan):7.3f}m")


def async_feed_check(ex, arena_tokens: int, shape: dict, log) -> dict:
    """Two requests through a prefill step and four decode steps, once host-fed (Executor.run, each step waited
    for) and once with async scheduling (each decode step launched before the previous one was waited for, its
    input tokens taken from the previous step's ids on the device): the sampled ids must agree."""
    import model_torch as mt

    base = mt.NULL_SLOT_TOKENS
    slots = [[base], [base + 256]]
    prompts = [40, 57]

    def steps(rids):
        yield driver.StepIn(rids, np.zeros(2, np.int64), np.asarray(prompts, np.int64), slots)
        for j in range(4):
            yield driver.StepIn(rids, np.asarray([p_ + j for p_ in prompts], np.int64), np.ones(2, np.int64), slots)

    rs = ["fc_a", "fc_b"]
    sync_ids = [ex.run(st)[0].tolist() for st in steps(rs)]
    for r in rs:
        ex.forget(r)
    hs, async_ids = [], []
    for st in steps(rs):
        hs.append(ex.launch(st))
        if len(hs) > 1:
            async_ids.append(ex.wait(hs[-2])[0].tolist())
    async_ids.append(ex.wait(hs[-1])[0].tolist())
    fed = [h["fed"] for h in hs]
    for r in rs:
        ex.forget(r)
    ok = sync_ids == async_ids and sum(fed) == 8
    log(f"async feed check: host-fed {sync_ids} device-fed {async_ids} rows fed {fed}: {'ok' if ok else 'DIFFERENT'}")
    if not ok:
        raise RuntimeError("async scheduling feeds different decode tokens than the synchronous loop")
    return {"sync_ids": sync_ids, "async_ids": async_ids, "fed_rows": fed, "ok": ok}


if __name__ == "__main__":
    raise SystemExit(main())
