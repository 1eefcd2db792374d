#!/usr/bin/env python3
"""Hugging Face transformers' built-in continuous batching, driven by the harness's timed arrivals.

    python lab/serving/hf_cb.py --out DIR            # defaults: 0.1 and 0.3 req/s, Azure slice; ~5 min
    python lab/serving/hf_cb.py --out /tmp/h --smoke      # CPU, tiny model

LlamaForCausalLM built from the shape of a simulator model file (default Llama-3.1-8B), random bf16 weights,
run by ``model.init_continuous_batching`` (transformers.generation.continuous_batching) with the settings
written to the config JSON (default: ``paged|sdpa`` attention, block 256, ``max_batch_tokens`` 8192, FIFO
scheduler, CUDA graphs and async batching as transformers decides for that attention: off, since it needs a
mask; greedy, no EOS, so every request generates exactly its output length). Requests are submitted with
``add_request`` at their arrival times (workloads.py: the same generators as run_server.py); their
per-token timestamps (``record_timestamps``) give first-token and finish times. Each step of the background
generation thread is recorded by wrapping ``ContinuousBatchProcessor.prepare_next_batch`` /
``update_batch`` and ``ContinuousBatchingManager._generation_step``: the scheduled requests with their query
tokens and KV prefix, and the host times of scheduling + input/mask preparation, forward + sampling +
device-to-host copy, and the request update. HF_CB_MODEL.md describes what it does and how the
simulator can (and cannot) express it.

Writes serving_hf_{requests,steps,config}_<gpu>_<date>.csv/json into --out (records.py).
"""
from __future__ import annotations

import argparse
import datetime as dt
import math
import os
import platform
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
try:
    import simulator  # noqa: F401
except ImportError:
    sys.path.insert(1, ROOT)

import driver  # noqa: E402
import numpy as np  # noqa: E402
import records  # noqa: E402
import workloads  # noqa: E402

SCRIPT_VERSION = 1
DEFAULT_RATES = "0.1,0.3"


class StepRecorder:
    """Class-level wrappers around the CB internals (they run in the generation thread)."""

    def __init__(self):
        self.rows = []
        self.workload = "none"
        self.t0 = time.perf_counter()
        self.pending = None
        self.k = 0
        self.lock = threading.Lock()

    def install(self):
        from transformers.generation.continuous_batching import continuous_api as ca

        rec = self
        bp, mgr = ca.ContinuousBatchProcessor, ca.ContinuousBatchingManager
        orig_prep, orig_upd, orig_gen = bp.prepare_next_batch, bp.update_batch, mgr._generation_step

        def prepare_next_batch(self_):
            t0 = time.perf_counter()
            r = orig_prep(self_)
            t1 = time.perf_counter()
            if r:
                fs = self_.inputs_and_outputs.requests_in_batch
                q = [int(f.query_length) for f in fs]
                past = [int(f.state.position_offset) - int(f.query_length) for f in fs]
                rec.pending = {"t0": t0, "t1": t1, "q": q, "past": past,
                               "running": len(self_.scheduler.active_requests),
                               "waiting": len(self_.scheduler.waiting_requests),
                               "blocks": int(self_.cache.num_blocks - self_.cache.get_num_free_blocks())}
            return r

        def _generation_step(self_):
            orig_gen(self_)
            if rec.pending is not None:
                rec.pending["t2"] = time.perf_counter()

        def update_batch(self_):
            orig_upd(self_)
            t3 = time.perf_counter()
            p = rec.pending
            if p is None or "t2" not in p:
                return
            rec.pending = None
            q, past = np.asarray(p["q"]), np.asarray(p["past"])
            st = driver.StepIn(list(range(len(q))), past, q, [])
            row = {"workload": rec.workload, "step": rec.k, "t_start_s": p["t0"] - rec.t0, "sched_s": p["t1"] - p["t0"],
                   "prep_s": 0.0, "launch_s": p["t2"] - p["t1"], "sync_s": 0.0, "update_s": t3 - p["t2"],
                   "wall_s": t3 - p["t0"], "gpu_s": math.nan, "path": "eager", "rows": len(q), "padded": len(q),
                   "tokens": int(q.sum()), "running": p["running"], "waiting": p["waiting"],
                   "kv_blocks_used": p["blocks"]}
            row.update(driver.composition(st))
            with rec.lock:
                rec.rows.append(row)
                rec.k += 1

        bp.prepare_next_batch = prepare_next_batch
        bp.update_batch = update_batch
        mgr._generation_step = _generation_step


def serve_hf(manager, w, rec: StepRecorder, vocab: int, drain_s: float, rng, log):
    n = len(w)
    arr = w.arrival_s
    first = np.full(n, math.nan)
    fin = np.full(n, math.nan)
    enq = np.full(n, math.nan)
    t0 = time.perf_counter()
    rec.t0 = t0
    rec.workload = w.name
    stop_at = arr[-1] + drain_s
    nxt = done = 0
    while done < n:
        now = time.perf_counter() - t0
        while nxt < n and arr[nxt] <= now:
            ids = rng.integers(0, vocab, int(w.input_tokens[nxt])).tolist()
            manager.add_request(ids, request_id=f"{w.name}:{nxt}", max_new_tokens=int(w.output_tokens[nxt]),
                                streaming=False, record_timestamps=True)
            enq[nxt] = time.perf_counter() - t0
            nxt += 1
        if now > stop_at:
            break
        wait = 0.05 if nxt >= n else max(0.0, min(0.05, arr[nxt] - now))
        res = manager.get_result(timeout=wait) if wait > 0 else None
        while res is not None:
            if res.is_finished():
                i = int(str(res.request_id).split(":")[1])
                ts = res.timestamps or []
                if ts:
                    first[i] = ts[0] - t0
                fin[i] = (res.lifespan[1] if res.lifespan[1] > 0 else (ts[-1] if ts else time.perf_counter())) - t0
                done += 1
            res = manager.get_result(timeout=0.0001) if done < n else None
    if done < n:   # cut: cancel what is left and let the loop go idle
        for i in range(n):
            if math.isnan(fin[i]) and i < nxt:
                manager.cancel_request(f"{w.name}:{i}")
        time.sleep(1.0)
        while manager.get_result(timeout=0.2) is not None:
            pass
    reqs = [{"workload": w.name, "rid": i, "arrival_s": float(arr[i]), "enqueue_s": enq[i], "first_token_s": first[i],
             "finish_s": fin[i], "input_tokens": int(w.input_tokens[i]), "output_tokens": int(w.output_tokens[i]),
             "preemptions": 0} for i in range(n)]
    summ = {"workload": w.name, "requests": n, "admitted": nxt, "finished": done, "unfinished": n - done,
            "wall_s": time.perf_counter() - t0}
    log(f"[hf {w.name}] {done}/{n} finished in {summ['wall_s']:.1f} s")
    return reqs, summ


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--out", required=True)
    ap.add_argument("--rates", default=DEFAULT_RATES)
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--azure", default="600,5,0.08", help="START,WINDOW,RATE_SCALE or none")
    ap.add_argument("--drain", type=float, default=50.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--model", default="Llama-3.1-8B")
    ap.add_argument("--attn", default="sdpa", help="attention implementation before CB adds 'paged|' (default sdpa)")
    ap.add_argument("--block-size", type=int, default=256)
    ap.add_argument("--max-batch-tokens", type=int, default=8192)
    ap.add_argument("--num-blocks", type=int, default=0, help="0 = transformers sizes the cache from free memory")
    ap.add_argument("--cuda-graphs", default="auto", help="auto (transformers decides) | on | off")
    ap.add_argument("--max-model-len", type=int, default=16384)
    ap.add_argument("--max-minutes", type=float, default=8.0)
    ap.add_argument("--date", default=dt.date.today().isoformat())
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args(argv)
    t_start = time.perf_counter()
    log = lambda s: print(s, flush=True)  # noqa: E731

    import torch
    import transformers
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM
    from transformers.generation.configuration_utils import ContinuousBatchingConfig

    if a.smoke:
        shape = dict(layers=2, hidden=256, heads=4, kv_heads=2, head_dim=64, ffn=512, vocab=1000)
        dev = "cpu"
        if a.rates == DEFAULT_RATES:
            a.rates = "3"
        a.duration, a.drain, a.max_model_len = min(a.duration, 3.0), min(a.drain, 10.0), min(a.max_model_len, 2048)
        if a.azure == "600,5,0.08":
            a.azure = "none"
        a.max_batch_tokens = min(a.max_batch_tokens, 512)
        if a.num_blocks == 0:
            a.num_blocks = 64
    else:
        from run_server import model_shape

        shape = model_shape(a.model)
        dev = "cuda"
    scale_len = 0.05 if a.smoke else 1.0
    rates = [float(x) for x in a.rates.split(",") if x.strip()]
    azure = None if a.azure.strip().lower() == "none" else tuple(float(x) for x in a.azure.split(","))
    wls = workloads.build(rates, a.duration, a.seed, azure, a.max_model_len, scale_len)
    cfg = LlamaConfig(hidden_size=shape["hidden"], intermediate_size=shape["ffn"], num_hidden_layers=shape["layers"],
                      num_attention_heads=shape["heads"], num_key_value_heads=shape["kv_heads"],
                      head_dim=shape["head_dim"], vocab_size=shape["vocab"], max_position_embeddings=131072,
                      rope_theta=500000.0, rms_norm_eps=1e-5, tie_word_embeddings=False)
    cfg._attn_implementation = a.attn
    torch.manual_seed(a.seed)
    t0 = time.perf_counter()
    with torch.device(dev):
        model = LlamaForCausalLM(cfg).to(torch.bfloat16)
    model.eval()
    if hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation(a.attn)
    gpu = torch.cuda.get_device_name(0) if dev == "cuda" else "cpu-smoke"
    log(f"device {gpu}; torch {torch.__version__}; transformers {transformers.__version__}; model built in "
        f"{time.perf_counter() - t0:.1f} s")
    avail = {}
    try:
        from transformers.utils.import_utils import is_flash_attn_2_available, is_flash_attn_3_available

        avail = {"flash_attn_2": bool(is_flash_attn_2_available()), "flash_attn_3": bool(is_flash_attn_3_available())}
    except Exception as ex:  # noqa: BLE001
        avail = {"error": str(ex)[:120]}
    log(f"flash attention packages available: {avail}")

    gen = GenerationConfig(max_new_tokens=16, do_sample=False, eos_token_id=-1, pad_token_id=0)
    kw = dict(block_size=a.block_size, max_batch_tokens=a.max_batch_tokens, scheduler_type="fifo")
    if a.num_blocks:
        kw["num_blocks"] = a.num_blocks
    if a.cuda_graphs != "auto":
        kw["use_cuda_graph"] = a.cuda_graphs == "on"
    cbc = ContinuousBatchingConfig(**kw)
    rec = StepRecorder()
    rec.install()
    manager = model.init_continuous_batching(generation_config=gen, continuous_batching_config=cbc)
    if not getattr(manager, "warmed_up", True):
        try:
            manager.warmup()
        except Exception as ex:  # noqa: BLE001 - warm-up only pre-captures graphs
            log(f"warmup: {type(ex).__name__}: {str(ex)[:120]}")
    manager.start()
    while manager.batch_processor is None:
        time.sleep(0.05)
    bp = manager.batch_processor
    rcfg = manager.continuous_batching_config
    hf_info = {"attn_implementation": model.config._attn_implementation, "num_blocks": int(bp.cache.num_blocks),
               "block_size": int(bp.cache.block_size), "max_batch_tokens": int(bp.cache.max_batch_tokens),
               "use_cuda_graph": str(rcfg.use_cuda_graph), "use_async_batching": bool(rcfg.use_async_batching),
               "scheduler": type(bp.scheduler).__name__, "safety_margin": float(bp.scheduler.safety_margin),
               "max_requests_per_batch": int(rcfg.max_requests_per_batch),
               "allow_block_sharing": bool(rcfg.allow_block_sharing),
               "max_blocks_per_request": int(rcfg.max_blocks_per_request),
               "max_memory_percent": float(rcfg.max_memory_percent or 0)}
    log(f"HF CB: {hf_info}")
    rng = np.random.default_rng(a.seed)
    # warm-up (not recorded)
    warm = workloads.poisson_level(rates[0], 2.0, a.seed + 1000, a.max_model_len, scale_len)
    warm.name = "warmup"
    serve_hf(manager, warm, rec, shape["vocab"], 30.0, rng, log)
    rec.rows.clear()
    rec.k = 0
    all_reqs, summaries = [], []
    deadline = t_start + a.max_minutes * 60
    for w in wls:
        if time.perf_counter() > deadline:
            summaries.append({"workload": w.name, "skipped": "max-minutes reached"})
            log(f"[hf {w.name}] skipped: --max-minutes reached")
            continue
        reqs, summ = serve_hf(manager, w, rec, shape["vocab"], a.drain, rng, log)
        summ.update(driver.latency_stats(reqs))
        summ["meta"] = w.meta
        summaries.append(summ)
        all_reqs += reqs
    manager.stop(block=True, timeout=30)
    p = records.paths(a.out, "hf", gpu, a.date)
    records.write_csv(p["requests"], driver.REQUEST_COLUMNS, all_reqs)
    with rec.lock:
        steps = [r for r in rec.rows if r["workload"] != "warmup"]
    records.write_csv(p["steps"], driver.STEP_COLUMNS, steps)
    out = {"engine": "hf", "script": "lab/serving/hf_cb.py", "script_version": SCRIPT_VERSION,
           "argv": sys.argv[1:] if argv is None else list(argv), "date": a.date, "gpu": gpu,
           "torch_version": torch.__version__, "transformers_version": transformers.__version__,
           "python": platform.python_version(), "model": "TINY" if a.smoke else a.model, "shape": shape,
           "dtype": "bf16", "hf": hf_info, "flash_available": avail, "block_size": hf_info["block_size"],
           "num_blocks": hf_info["num_blocks"], "max_model_len": a.max_model_len,
           "scheduler": {"max_num_batched_tokens": hf_info["max_batch_tokens"], "block_size": hf_info["block_size"],
                         "num_blocks": hf_info["num_blocks"], "policy": "transformers FIFOScheduler"},
           "workloads": [w.meta | {"name": w.name} for w in wls], "summaries": summaries, "drain_s": a.drain,
           "wall_s": time.perf_counter() - t_start}
    records.write_config(p["config"], out)
    for v in p.values():
        log(f"wrote {v}")
    log("")
    log(f"{'hf workload':<14} {'req':>5} {'done':>5} {'TTFT p50':>9} {'p90':>8} {'TPOT p50':>9} {'p90':>8}")
    for s in summaries:
        if "skipped" in s:
            log(f"{s['workload']:<14} skipped")
            continue
        log(f"{s['workload']:<14} {s['requests']:>5} {s['finished']:>5} {s['ttft_p50_s'] * 1e3:8.1f}m "
            f"{s['ttft_p90_s'] * 1e3:7.1f}m {s['tpot_p50_s'] * 1e3:8.2f}m {s['tpot_p90_s'] * 1e3:7.2f}m")
    if steps:
        w_ = np.asarray([s["wall_s"] for s in steps])
        dec = [s for s in steps if s["n_decode"] == s["rows"]]
        log(f"steps {len(steps)}: median {np.median(w_) * 1e3:.1f} ms; decode-only {len(dec)} median "
            f"{np.median([s['wall_s'] for s in dec]) * 1e3 if dec else math.nan:.1f} ms")
    log(f"total {time.perf_counter() - t_start:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
