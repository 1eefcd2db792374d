#!/usr/bin/env python3
"""HF transformers' continuous batching measured step by step: profile runs (to fit host time) and held-out
validation runs (Poisson, fixed concurrency, a Mooncake slice), kept in separate files.

    python lab/serving/hf_cb_runtime.py --out DIR --phases profile,validate --runs all     # on an H100
    python lab/serving/hf_cb_runtime.py --out /tmp/h --smoke                               # CPU, tiny model

The model is LlamaForCausalLM of a simulator model's shape (default Llama-3.1-8B) with random bf16 weights
(nothing is downloaded), served by ``model.init_continuous_batching`` with the harness's usual settings
(``paged|sdpa``, block 256, ``max_batch_tokens`` 8192, FIFO scheduler, CUDA graphs / async batching as transformers
decides: off for a mask-needing attention; greedy, no EOS: every request generates exactly ``max_new_tokens``).

Every step of the engine's generation thread is timed by wrapping its methods (class-level, so nothing in
transformers is edited): ``prepare_next_batch`` (whose ``schedule_batch`` part is timed apart: the FIFO
scheduler; the rest is the input lists, the block-diagonal mask and the host-to-device copies), the batch
processor's ``_generation_step`` (``get_model_kwargs``; ``ModelRunner.compute_batch`` = the eager forward +
sampling as the host issues it, bracketed by CUDA events on the compute stream; ``retrieve_device_outputs`` = the
wait for the device) and ``update_batch`` (request bookkeeping, outputs). Per step the content is recorded:
requests, decode rows and their contexts, prefill chunks ``tokens:prefix``, query tokens Q, keys K (the sum over
requests of prefix + new tokens: what ``read_index`` gathers and the mask spans), new requests (first chunk),
first tokens, finished requests, whether Q, K and (Q, K) were seen before in this process, and the caching
allocator's new segments (``cudaMalloc`` calls) and retries during the step.

Profile runs (``--phases profile``) drive controlled compositions through the same engine: a decode ladder
(B = 1..64 requests at a few contexts, each B grown by submitting more requests, so the steps that add them are
prefill chunks beside B decodes), single chunks of several sizes beside 1 / 8 / 32 decodes (a 1-token request
per chunk), and prefills alone. For each profile step the same forward is replayed once more behind a GPU sleep
long enough to cover its launch, which times the device work alone (``gpu_busy_s``; ``busy_ok`` = the sleep
outlasted the launch). A torch.profiler kernel table of one decode and one mixed replay goes into the config.

Validation runs (``--phases validate``) are never used for fitting: closed loop (C in flight, the next request
submitted when one finishes), Poisson arrivals and a Mooncake-trace slice; per request the submit time and every
token's time. Each run is also written as vLLM's ``--save-result --save-detailed`` JSON (vllm_result.py).

Output (one folder; the device tool returns few files, so ``--tar`` packs them into one archive):
  serving_hfprof_{steps,config}_<gpu>_<date>.{csv.gz,json}          profile steps, settings, kernel tables
  serving_hfval_{requests,steps,config}_<gpu>_<date>.{csv,csv.gz,json}  validation requests (token times) and steps
  vllm/hfval_<run>_<gpu>_<date>.json                                 one vLLM-format result per validation run
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import sys
import tarfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
try:
    import simulator  # noqa: F401
except ImportError:
    sys.path.insert(1, ROOT)

import numpy as np  # noqa: E402
import records  # noqa: E402
import vllm_result  # noqa: E402

SCRIPT_VERSION = 2

# --sdpa-backend: which torch SDPA backends may run paged|sdpa's attention (torch.backends.cuda.enable_*_sdp, process
# wide, set before the engine starts). "default" leaves torch's choice (cuDNN on Hopper for HF's masked shapes);
# "efficient" turns cuDNN and flash off (flash takes no mask anyway), so the memory-efficient kernel runs the masked
# call and math stays the fallback for a shape it rejects (the config JSON records torch's choice per shape).
SDPA_BACKENDS = {"default": {},
                 "cudnn": {"enable_flash_sdp": False, "enable_mem_efficient_sdp": False, "enable_math_sdp": True,
                           "enable_cudnn_sdp": True},
                 "efficient": {"enable_cudnn_sdp": False, "enable_flash_sdp": False, "enable_mem_efficient_sdp": True,
                               "enable_math_sdp": True},
                 "math": {"enable_cudnn_sdp": False, "enable_flash_sdp": False, "enable_mem_efficient_sdp": False,
                          "enable_math_sdp": True}}

STEP_COLUMNS = ["workload", "step", "t_start_s", "gap_s", "sched_s", "prep_s", "kwargs_s", "launch_s", "sync_s",
                "update_s", "wall_s", "gpu_span_s", "gpu_busy_s", "busy_ok", "replay_launch_s", "replay_sleep_s", "rows", "tokens", "keys", "q_x_k",
                "n_decode", "decode_ctx_sum", "decode_ctx", "prefill_chunks", "n_prefill", "prefill_tokens",
                "new_reqs", "first_tokens", "finished", "running", "waiting", "kv_blocks_used", "seen_q", "seen_k",
                "seen_qk", "seg_alloc", "alloc_retries", "probe_s"]
REQUEST_COLUMNS = ["workload", "rid", "kind", "arrival_s", "submit_s", "admitted_s", "first_token_s", "finish_s",
                   "input_tokens", "output_tokens", "generated", "wave0", "token_times_ms"]


# ----------------------------------------------------------------------------------------------------------------
# workloads (pure: the simulator can rebuild them from the config JSON)
# ----------------------------------------------------------------------------------------------------------------
def validation_runs(smoke: bool) -> list[dict]:
    """The held-out runs in the order they are run (the most informative first, the costliest last)."""
    if smoke:
        return [{"name": "cc2_in64", "kind": "closed", "C": 2, "n": 4, "in": 64, "out": 4},
                {"name": "poisson_4", "kind": "poisson", "rate": 4.0, "n": 6, "in": 48, "out": 4, "seed": 1},
                {"name": "mooncake", "kind": "mooncake", "start_s": 0.0, "window_s": 2.0, "rate_scale": 1.0,
                 "max_in": 200, "max_out": 4}]
    return [
        {"name": "cc1_in2k", "kind": "closed", "C": 1, "n": 10, "in": 2048, "out": 32},
        {"name": "cc4_in2k", "kind": "closed", "C": 4, "n": 20, "in": 2048, "out": 64},
        {"name": "cc16_in2k", "kind": "closed", "C": 16, "n": 48, "in": 2048, "out": 64},
        {"name": "cc1_in8k", "kind": "closed", "C": 1, "n": 6, "in": 8192, "out": 32},
        {"name": "cc1_in16k", "kind": "closed", "C": 1, "n": 5, "in": 16000, "out": 32},
        {"name": "poisson_0.25_in2k", "kind": "poisson", "rate": 0.25, "n": 10, "in": 2048, "out": 64, "seed": 11},
        {"name": "poisson_0.75_in2k", "kind": "poisson", "rate": 0.75, "n": 30, "in": 2048, "out": 64, "seed": 12},
        {"name": "mooncake", "kind": "mooncake", "start_s": 600.0, "window_s": 5.0, "rate_scale": 0.1,
         "max_in": 16000, "max_out": 64},
        {"name": "cc4_in8k", "kind": "closed", "C": 4, "n": 12, "in": 8192, "out": 64},
        {"name": "poisson_1.5_in2k", "kind": "poisson", "rate": 1.5, "n": 45, "in": 2048, "out": 64, "seed": 13},
        {"name": "cc2_in16k", "kind": "closed", "C": 2, "n": 6, "in": 16000, "out": 32},
        {"name": "cc64_in2k", "kind": "closed", "C": 64, "n": 96, "in": 2048, "out": 32},
        # added for the SDPA-without-cuDNN runs: an overloaded Poisson level (the hf-cb-efficient profile, fitted on
        # its profile steps only, predicts a median queueing of ~1.5 s here; chosen before any such run existed)
        {"name": "poisson_4_in2k", "kind": "poisson", "rate": 4.0, "n": 45, "in": 2048, "out": 64, "seed": 14},
    ]


def poisson_arrivals(rate: float, n: int, seed: int) -> np.ndarray:
    """Exponential gaps at `rate` (first arrival at its first gap), numpy default_rng(seed)."""
    return np.cumsum(np.random.default_rng(seed).exponential(1.0 / rate, n))


def mooncake_slice(start_s, window_s, rate_scale, max_in, max_out):
    """(arrival_s, input, output) of a window of the shipped Mooncake conversation trace, arrivals x 1/rate_scale,
    outputs capped at max_out, prompts cut to max_in (counted)."""
    from simulator.traces.requests import load_requests

    t = load_requests("mooncake_conversation").window(start_s, start_s + window_s).scaled(rate_scale=rate_scale)
    out = np.minimum(t.output_tokens.astype(np.int64), max_out)
    out = np.maximum(out, 2)
    inp = np.minimum(t.input_tokens.astype(np.int64), max_in)
    return t.arrival_s.astype(np.float64), np.maximum(inp, 1), out, int((t.input_tokens > max_in).sum())


def profile_plan(smoke: bool) -> list[dict]:
    """Controlled compositions: ladder (context L, batch sizes), chunk probes (B decodes at L, chunk sizes), prefill
    alone (prompt sizes). Each item is run by `run_profile_item`."""
    if smoke:
        return [{"kind": "ladder", "L": 64, "Bs": [1, 2, 4], "steps": 3},
                {"kind": "chunks", "B": 2, "L": 64, "P": [16, 100], "reps": 2},
                {"kind": "prefill", "P": [50, 300], "reps": 1}]
    return [
        {"kind": "prefill", "P": [128, 1024, 4096, 8192, 16000], "reps": 2},
        {"kind": "ladder", "L": 512, "Bs": [1, 2, 4, 8, 16, 32, 64], "steps": 6},
        {"kind": "ladder", "L": 2048, "Bs": [1, 4, 16, 32], "steps": 6},
        {"kind": "chunks", "B": 1, "L": 2048, "P": [64, 512, 2048, 8000], "reps": 2},
        {"kind": "chunks", "B": 8, "L": 2048, "P": [64, 512, 2048, 8000], "reps": 2},
        {"kind": "chunks", "B": 32, "L": 2048, "P": [64, 512, 2048], "reps": 2},
        {"kind": "ladder", "L": 8192, "Bs": [1, 4, 8], "steps": 6},
    ]


# ----------------------------------------------------------------------------------------------------------------
# the step tracer (runs in the engine's generation thread)
# ----------------------------------------------------------------------------------------------------------------
class StepTracer:
    def __init__(self, torch, cuda: bool):
        self.torch = torch
        self.cuda = cuda
        self.rows: list[dict] = []
        self.lock = threading.Lock()
        self.workload = "none"
        self.t0 = time.perf_counter()
        self.replay = False            # profile runs: time the device work alone once more
        self.kernel_tables: dict = {}
        self.want: tuple | None = None     # (label, predicate on the step's q list): profile that step's replay
        self.replay_max_span_s = 0.6       # longer steps are device-bound: their in-situ span is the device time
        self.k = 0
        self.seen_q: set = set()
        self.seen_k: set = set()
        self.seen_qk: set = set()
        self.cur: dict | None = None
        self.last_end = None
        self.mem0 = self._mem()
        self.in_replay = False
        self.spin_cycles_per_us = 1980.0
        self.probe_n = 0                   # --host-probe: launches of the per-step host-speed probe (0: off)
        self._probe_x = None
        self._probe_s = math.nan

    def host_probe(self) -> float:
        """The per-step host-speed probe (host_speed_probe.py's 'add' probe, shorter): `probe_n` in-place adds on a
        256-element CUDA tensor, the launch loop timed alone (no synchronize: the kernels are tiny and the GPU is
        idle between steps). Runs in the gap before a step, so the step's gap_s includes it."""
        if self._probe_x is None:
            self._probe_x = self.torch.zeros(256, device="cuda")
        x = self._probe_x
        t = time.perf_counter()
        for _ in range(self.probe_n):
            x.add_(1.0)
        return time.perf_counter() - t

    def _mem(self):
        if not self.cuda:
            return (0, 0)
        s = self.torch.cuda.memory_stats()
        return (int(s.get("segment.all.allocated", 0)), int(s.get("num_alloc_retries", 0)))

    def reset_counter(self, name: str):
        with self.lock:
            self.workload = name
            self.k = 0

    def install(self):
        from transformers.generation.continuous_batching import continuous_api as ca
        from transformers.generation.continuous_batching import model_runner as mr
        from transformers.generation.continuous_batching import scheduler as sc

        tr = self
        bp = ca.ContinuousBatchProcessor
        o_prep, o_upd, o_gen = bp.prepare_next_batch, bp.update_batch, bp._generation_step
        o_sched = sc.FIFOScheduler.schedule_batch
        o_comp = mr.ModelRunner.compute_batch
        torch = self.torch

        def schedule_batch(self_, *a, **kw):
            t = time.perf_counter()
            r = o_sched(self_, *a, **kw)
            if tr.cur is not None:
                tr.cur["sched_s"] += time.perf_counter() - t
            return r

        def prepare_next_batch(self_):
            if tr.probe_n and tr.cuda and not tr.in_replay:
                tr._probe_s = tr.host_probe()
            t0 = time.perf_counter()
            tr.cur = {"t0": t0, "sched_s": 0.0, "probe_s": tr._probe_s}
            r = o_prep(self_)
            t1 = time.perf_counter()
            if not r:
                tr.cur = None
                return r
            io = self_.inputs_and_outputs
            fs = list(io.requests_in_batch)
            q = [int(f.query_length) for f in fs]
            past = [int(f.state.position_offset) - int(f.query_length) for f in fs]
            tr.cur.update({"t1": t1, "q": q, "past": past, "states": [f.state for f in fs],
                           "has_new": [bool(f.has_new_token) for f in fs],
                           "gen_before": [int(f.state.generated_len()) for f in fs],
                           "running": len(self_.scheduler.active_requests),
                           "waiting": len(self_.scheduler.waiting_requests),
                           "blocks": int(self_.cache.num_blocks - self_.cache.get_num_free_blocks())})
            return r

        def compute_batch(self_, model, batch_data):
            if tr.in_replay or tr.cur is None:
                return o_comp(self_, model, batch_data)
            stream = self_.inputs_and_outputs.compute_stream
            c = tr.cur
            c["model"], c["batch"], c["runner"] = model, batch_data, self_
            if stream is not None:
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record(stream)
            c["tc0"] = time.perf_counter()
            r = o_comp(self_, model, batch_data)
            c["tc1"] = time.perf_counter()
            if stream is not None:
                e1.record(stream)
                c["ev"] = (e0, e1)
            return r

        def _generation_step(self_, model):
            c = tr.cur
            if c is not None:
                c["tg0"] = time.perf_counter()
            o_gen(self_, model)
            if c is None:
                return
            c["tg1"] = time.perf_counter()
            if "ev" in c:
                c["gpu_span_s"] = c["ev"][0].elapsed_time(c["ev"][1]) * 1e-3
            if tr.replay and tr.cuda and "batch" in c and c.get("gpu_span_s", 0.0) < tr.replay_max_span_s:
                c["gpu_busy_s"], c["busy_ok"], c["replay_launch_s"], c["replay_sleep_s"] = tr._replay(
                    c, self_.inputs_and_outputs.compute_stream)

        def update_batch(self_):
            c = tr.cur
            tu0 = time.perf_counter()
            o_upd(self_)
            tu1 = time.perf_counter()
            if c is None or "tg1" not in c:
                return
            tr.cur = None
            tr._record(c, tu0, tu1)

        sc.FIFOScheduler.schedule_batch = schedule_batch
        bp.prepare_next_batch = prepare_next_batch
        mr.ModelRunner.compute_batch = compute_batch
        bp._generation_step = _generation_step
        bp.update_batch = update_batch

    def _replay(self, c, stream):
        """The same forward again behind a GPU sleep that outlasts its launch: CUDA events then bracket device work
        only. Re-running writes the same K/V to the same slots and the same token to the output buffer."""
        torch = self.torch
        launch_s = c["tc1"] - c["tc0"]
        sleep_us = 1.5 * launch_s * 1e6 + 20000.0
        self.in_replay = True
        try:
            stream.synchronize()
            prof = None
            label = None
            if self.want is not None and self.want[1](c["q"]):
                label = self.want[0]
                self.want = None
                try:
                    prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA])
                    prof.__enter__()
                except Exception as ex:  # noqa: BLE001 - the kernel table is informational
                    self.kernel_tables[label] = {"error": f"{type(ex).__name__}: {str(ex)[:120]}"}
                    prof = None
            with torch.cuda.stream(stream):
                torch.cuda._sleep(int(sleep_us * self.spin_cycles_per_us))
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record(stream)
            tl0 = time.perf_counter()
            c["runner"].compute_batch(c["model"], c["batch"])
            with torch.cuda.stream(stream):
                e1.record(stream)
            tl1 = time.perf_counter()
            ok = not e0.query()   # the sleep still ran when the whole forward had been issued
            stream.synchronize()
            if prof is not None:
                try:
                    prof.__exit__(None, None, None)
                    self.kernel_tables[label] = kernel_table(prof, c)
                except Exception as ex:  # noqa: BLE001 - the kernel table is informational
                    self.kernel_tables[label] = {"error": f"{type(ex).__name__}: {str(ex)[:120]}"}
            return e0.elapsed_time(e1) * 1e-3, int(ok), tl1 - tl0, sleep_us * 1e-6
        finally:
            self.in_replay = False

    def _record(self, c, tu0, tu1):
        q = np.asarray(c["q"], dtype=np.int64)
        past = np.asarray(c["past"], dtype=np.int64)
        dec = q == 1
        keys = int((past + q).sum())
        Q = int(q.sum())
        chunks = [f"{int(n)}:{int(p)}" for n, p in zip(q[~dec], past[~dec])]
        dctx = (past[dec] + 1).astype(np.int64)
        fin = sum(1 for s in c["states"] if int(s.status) == 3)    # RequestStatus.FINISHED = 3 in 5.17
        first = sum(1 for s, hn, g in zip(c["states"], c["has_new"], c["gen_before"]) if hn and g == 0)
        new = int((past == 0).sum())
        mem = self._mem()
        t0 = c["t0"]
        prep = c["t1"] - t0 - c["sched_s"]
        kw = c.get("tc0", c["tg1"]) - c["tg0"]
        launch = c.get("tc1", c["tg1"]) - c.get("tc0", c["tg0"])
        sync = c["tg1"] - c.get("tc1", c["tg0"])
        upd = tu1 - tu0
        row = {"workload": self.workload, "step": self.k, "t_start_s": t0 - self.t0,
               "gap_s": (t0 - self.last_end) if self.last_end is not None else math.nan,
               "sched_s": c["sched_s"], "prep_s": prep, "kwargs_s": kw, "launch_s": launch, "sync_s": sync,
               "update_s": upd, "wall_s": c["sched_s"] + prep + kw + launch + sync + upd,
               "gpu_span_s": c.get("gpu_span_s", math.nan), "gpu_busy_s": c.get("gpu_busy_s", math.nan),
               "busy_ok": c.get("busy_ok", ""), "replay_launch_s": c.get("replay_launch_s", math.nan),
               "replay_sleep_s": c.get("replay_sleep_s", math.nan), "rows": len(q), "tokens": Q, "keys": keys, "q_x_k": Q * keys,
               "n_decode": int(dec.sum()), "decode_ctx_sum": int(dctx.sum()),
               "decode_ctx": " ".join(map(str, dctx.tolist())), "prefill_chunks": " ".join(chunks),
               "n_prefill": int((~dec).sum()), "prefill_tokens": int(q[~dec].sum()), "new_reqs": new,
               "first_tokens": first, "finished": fin, "running": c["running"], "waiting": c["waiting"],
               "kv_blocks_used": c["blocks"], "seen_q": int(Q in self.seen_q), "seen_k": int(keys in self.seen_k),
               "seen_qk": int((Q, keys) in self.seen_qk), "seg_alloc": mem[0] - self.mem0[0],
               "alloc_retries": mem[1] - self.mem0[1], "probe_s": c.get("probe_s", math.nan)}
        self.seen_q.add(Q)
        self.seen_k.add(keys)
        self.seen_qk.add((Q, keys))
        self.mem0 = mem
        self.last_end = tu1
        with self.lock:
            self.rows.append(row)
            self.k += 1

    def steps_of(self, name):
        with self.lock:
            return sum(1 for r in self.rows if r["workload"] == name)


def kernel_table(prof, c) -> dict:
    """Device kernels of one replayed forward: count, total device time, and the 25 largest by time."""
    agg: dict = {}
    for e in prof.events():
        dev = getattr(e, "device_type", None)
        if dev is None or "CUDA" not in str(dev):
            continue
        t = float(getattr(e, "device_time", 0.0) or getattr(e, "cuda_time", 0.0) or 0.0)
        a = agg.setdefault(e.name, [0, 0.0])
        a[0] += 1
        a[1] += t
    top = sorted(agg.items(), key=lambda kv: -kv[1][1])[:25]
    return {"q": c["q"], "past": c["past"], "kernels": int(sum(v[0] for v in agg.values())),
            "device_us": float(sum(v[1] for v in agg.values())),
            "top": [{"name": k[:160], "count": v[0], "us": round(v[1], 1)} for k, v in top]}


# ----------------------------------------------------------------------------------------------------------------
# driving the engine
# ----------------------------------------------------------------------------------------------------------------
class Client:
    """Submits requests and collects their results (the main thread; the engine runs in its own thread)."""

    def __init__(self, manager, vocab: int, seed: int):
        self.m = manager
        self.vocab = vocab
        self.rng = np.random.default_rng(seed)
        self.res: dict = {}
        self.n = 0

    def submit(self, rid: str, n_in: int, n_out: int) -> float:
        ids = self.rng.integers(0, self.vocab, int(n_in)).tolist()
        t = time.perf_counter()
        self.m.add_request(ids, request_id=rid, max_new_tokens=int(n_out), streaming=False, record_timestamps=True)
        return t

    def poll(self, timeout: float) -> list:
        out = []
        r = self.m.get_result(timeout=timeout) if timeout > 0 else self.m.get_result(timeout=0.0001)
        while r is not None:
            if r.is_finished():
                out.append(r)
            r = self.m.get_result(timeout=0.0001)
        return out


def drive(client: Client, tracer: StepTracer, run: dict, arrivals, inputs, outputs, closed_c: int | None,
          deadline_s: float, log) -> tuple[list[dict], float]:
    """Open loop (arrivals given) or closed loop (closed_c in flight). Returns request rows and the duration."""
    name = run["name"]
    n = len(inputs)
    tracer.reset_counter(name)
    t0 = time.perf_counter()
    tracer.t0 = t0
    sub = np.full(n, math.nan)
    arr = np.full(n, math.nan) if arrivals is None else np.asarray(arrivals, dtype=np.float64)
    results: dict = {}
    nxt = 0
    inflight = 0
    while len(results) < n:
        now = time.perf_counter() - t0
        if closed_c is None:
            while nxt < n and arr[nxt] <= now:
                sub[nxt] = client.submit(f"{name}:{nxt}", inputs[nxt], outputs[nxt]) - t0
                nxt += 1
        else:
            while nxt < n and inflight < closed_c:
                sub[nxt] = client.submit(f"{name}:{nxt}", inputs[nxt], outputs[nxt]) - t0
                arr[nxt] = sub[nxt]
                nxt += 1
                inflight += 1
        if now > deadline_s:
            log(f"[{name}] cut at {now:.1f} s: {len(results)}/{n} finished, {nxt} submitted")
            for i in range(nxt):
                if f"{name}:{i}" not in results:
                    client.m.cancel_request(f"{name}:{i}")
            time.sleep(0.5)
            client.poll(0.2)
            break
        wait = 0.002 if closed_c is not None else (0.01 if nxt >= n else max(0.0, min(0.01, arr[nxt] - now)))
        for r in client.poll(wait):
            if str(r.request_id).startswith(f"{name}:") and str(r.request_id) not in results:
                results[str(r.request_id)] = r
                inflight -= 1
    dur = time.perf_counter() - t0
    rows = []
    for i in range(n):
        r = results.get(f"{name}:{i}")
        ts = list(r.timestamps or []) if r is not None else []
        ok = r is not None and r.error is None and len(ts) > 0
        rows.append({"workload": name, "rid": i, "kind": run["kind"], "arrival_s": arr[i], "submit_s": sub[i],
                     "admitted_s": (r.lifespan[0] - t0) if ok and r.lifespan[0] > 0 else math.nan,
                     "first_token_s": (ts[0] - t0) if ok else math.nan, "finish_s": (ts[-1] - t0) if ok else math.nan,
                     "input_tokens": int(inputs[i]), "output_tokens": int(outputs[i]),
                     "generated": len(r.generated_tokens) if ok else 0,
                     "wave0": int(closed_c is not None and i < closed_c),
                     "token_times_ms": " ".join(f"{(x - t0) * 1e3:.3f}" for x in ts) if ok else "",
                     "_abs_times": ts if ok else [], "_abs_submit": sub[i] + t0})
    log(f"[{name}] {sum(1 for r in rows if r['first_token_s'] == r['first_token_s'])}/{n} finished in {dur:.1f} s, "
        f"{tracer.steps_of(name)} steps")
    return rows, dur


def wait_idle(manager, tracer, timeout=30.0):
    """Until the engine has no active or waiting request (the scheduler is read from this thread: counts only)."""
    t = time.perf_counter()
    while time.perf_counter() - t < timeout:
        bp = manager.batch_processor
        if bp is not None and not bp.scheduler.has_pending_requests():
            return True
        time.sleep(0.01)
    return False


def run_profile_item(client: Client, tracer: StepTracer, item: dict, idx: int, log) -> None:
    """One controlled composition (see profile_plan). Requests that must keep decoding get a long output and are
    cancelled at the end."""
    mgr = client.m
    name = f"prof{idx}_{item['kind']}"
    tracer.reset_counter(name)
    tracer.t0 = time.perf_counter()
    LONG = 100000

    def wait_steps(k, timeout=60.0):
        s0 = tracer.steps_of(name)
        t = time.perf_counter()
        while tracer.steps_of(name) < s0 + k and time.perf_counter() - t < timeout:
            client.poll(0.002)

    def wait_all_decoding(ids, timeout=120.0):
        t = time.perf_counter()
        while time.perf_counter() - t < timeout:
            bp = mgr.batch_processor
            act = bp.scheduler.active_requests
            if all(i in act and act[i].generated_len() >= 1 for i in ids) and not bp.scheduler.waiting_requests:
                return
            client.poll(0.002)

    def finish(ids):
        for i in ids:
            mgr.cancel_request(i)
        wait_idle(mgr, tracer)
        client.poll(0.05)

    if item["kind"] == "prefill":
        for rep in range(item["reps"]):
            for p in item["P"]:
                rid = f"{name}:p{p}:{rep}"
                if rep == 1 and p in (1024, 8192) and tracer.cuda:
                    tracer.want = (f"prefill_P{p}", lambda q, p=p: max(q) == p)
                client.submit(rid, p, 1)
                t = time.perf_counter()
                while not client.poll(0.002) and time.perf_counter() - t < 60:
                    pass
                wait_idle(mgr, tracer)
    elif item["kind"] == "ladder":
        ids: list = []
        L = item["L"]
        for B in item["Bs"]:
            while len(ids) < B:
                rid = f"{name}:L{L}:{len(ids)}"
                client.submit(rid, L, LONG)
                ids.append(rid)
            wait_all_decoding(ids)
            if B in (1, 8, 32) and tracer.cuda:
                tracer.want = (f"decode_L{L}_B{B}", lambda q: max(q) == 1)
            wait_steps(item["steps"])
        finish(ids)
    elif item["kind"] == "chunks":
        ids = []
        for j in range(item["B"]):
            rid = f"{name}:dec{j}"
            client.submit(rid, item["L"], LONG)
            ids.append(rid)
        wait_all_decoding(ids)
        wait_steps(2)
        for rep in range(item["reps"]):
            for p in item["P"]:
                rid = f"{name}:chunk{p}:{rep}"
                if rep == 0 and p in (512, 2048, 8000) and tracer.cuda:
                    tracer.want = (f"mixed_B{item['B']}_L{item['L']}_P{p}", lambda q, p=p: max(q) == p)
                client.submit(rid, p, 1)
                t = time.perf_counter()
                while not client.poll(0.002) and time.perf_counter() - t < 60:
                    pass
                wait_steps(2)
        finish(ids)
    log(f"[{name}] {item} -> {tracer.steps_of(name)} steps")


# ----------------------------------------------------------------------------------------------------------------
def sdpa_choice(torch, shape) -> dict:
    """torch's own choice of SDPA backend (torch._fused_sdp_choice) for the call paged|sdpa makes: bf16 q/k/v of
    [1, heads, Q, head_dim] / [1, heads, K, head_dim] (K/V already repeated per query head) and a [1, 1, Q, K]
    slice of a wider bf16 bias buffer, for a decode-like and a chunk-like shape."""
    out = {}
    names = {-1: "error", 0: "math", 1: "flash", 2: "efficient", 3: "cudnn", 4: "overrideable"}
    for q_len, k_len in ((8, 8192), (2048, 16384)):
        h, d = shape["heads"], shape["head_dim"]
        q = torch.randn(1, h, q_len, d, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(1, h, k_len, d, device="cuda", dtype=torch.bfloat16)
        buf = torch.zeros(1, 1, q_len, k_len + 4096 + 8, device="cuda", dtype=torch.bfloat16)
        m = buf[..., :q_len, :k_len]
        try:
            c = int(torch._fused_sdp_choice(q, k, k, m, 0.0, False))
            out[f"Q{q_len}_K{k_len}"] = names.get(c, str(c))
        except Exception as ex:  # noqa: BLE001 - informational
            out[f"Q{q_len}_K{k_len}"] = f"{type(ex).__name__}: {str(ex)[:80]}"
        del q, k, buf, m
    torch.cuda.empty_cache()
    return out


def build(a, log):
    import torch
    import transformers
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM
    from transformers.generation.configuration_utils import ContinuousBatchingConfig

    if a.smoke:
        shape = dict(layers=2, hidden=256, heads=4, kv_heads=2, head_dim=64, ffn=512, vocab=1000)
        dev = "cpu"
    else:
        from run_server import model_shape

        shape = model_shape(a.model)
        dev = "cuda"
    cfg = LlamaConfig(hidden_size=shape["hidden"], intermediate_size=shape["ffn"], num_hidden_layers=shape["layers"],
                      num_attention_heads=shape["heads"], num_key_value_heads=shape["kv_heads"],
                      head_dim=shape["head_dim"], vocab_size=shape["vocab"], max_position_embeddings=131072,
                      rope_theta=500000.0, rms_norm_eps=1e-5, tie_word_embeddings=False)
    cfg._attn_implementation = a.attn
    for fn, on in SDPA_BACKENDS[a.sdpa_backend].items():
        f = getattr(torch.backends.cuda, fn, None)
        if f is None:
            raise SystemExit(f"--sdpa-backend {a.sdpa_backend}: torch.backends.cuda.{fn} missing in torch {torch.__version__}")
        f(on)
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
    gen = GenerationConfig(max_new_tokens=16, do_sample=False, eos_token_id=-1, pad_token_id=0)
    kw = dict(block_size=a.block_size, max_batch_tokens=a.max_batch_tokens, scheduler_type="fifo")
    if a.num_blocks:
        kw["num_blocks"] = a.num_blocks
    cbc = ContinuousBatchingConfig(**kw)
    tracer = StepTracer(torch, dev == "cuda")
    tracer.install()
    manager = model.init_continuous_batching(generation_config=gen, continuous_batching_config=cbc)
    manager.start()
    while manager.batch_processor is None:
        time.sleep(0.05)
    bp = manager.batch_processor
    rcfg = manager.continuous_batching_config
    info = {"attn_implementation": model.config._attn_implementation, "num_blocks": int(bp.cache.num_blocks),
            "block_size": int(bp.cache.block_size), "max_batch_tokens": int(bp.cache.max_batch_tokens),
            "use_cuda_graph": str(rcfg.use_cuda_graph), "use_async_batching": bool(rcfg.use_async_batching),
            "scheduler": type(bp.scheduler).__name__, "safety_margin": float(bp.scheduler.safety_margin),
            "max_requests_per_batch": int(rcfg.max_requests_per_batch),
            "allow_block_sharing": bool(rcfg.allow_block_sharing),
            "max_blocks_per_request": int(rcfg.max_blocks_per_request)}
    sdpa = {"requested": a.sdpa_backend, "set": SDPA_BACKENDS[a.sdpa_backend]}
    if dev == "cuda":
        for k in ("flash_sdp_enabled", "mem_efficient_sdp_enabled", "cudnn_sdp_enabled", "math_sdp_enabled"):
            f = getattr(torch.backends.cuda, k, None)
            sdpa[k] = bool(f()) if f else None
        sdpa["choice"] = sdpa_choice(torch, shape)
    log(f"HF CB: {info}; sdpa backends enabled: {sdpa}")
    versions = {"torch": torch.__version__, "transformers": transformers.__version__,
                "cuda": getattr(torch.version, "cuda", None), "python": platform.python_version()}
    return manager, tracer, shape, gpu, info, sdpa, versions


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--out", required=True)
    ap.add_argument("--phases", default="profile,validate")
    ap.add_argument("--runs", default="all", help="validation run names (comma list) or 'all'")
    ap.add_argument("--skip-runs", default="", help="validation run names to skip")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--model", default="Llama-3.1-8B")
    ap.add_argument("--attn", default="sdpa")
    ap.add_argument("--block-size", type=int, default=256)
    ap.add_argument("--max-batch-tokens", type=int, default=8192)
    ap.add_argument("--num-blocks", type=int, default=1200, help="KV blocks (0 = transformers sizes the cache)")
    ap.add_argument("--run-cap-s", type=float, default=90.0, help="a validation run is cut after this")
    ap.add_argument("--max-minutes", type=float, default=8.0, help="start no new run after this")
    ap.add_argument("--tag", default="", help="suffix of the output names (parts of one campaign)")
    ap.add_argument("--date", default=dt.date.today().isoformat())
    ap.add_argument("--tar", default="", help="also pack every output into this .tar.gz")
    ap.add_argument("--pin", default="", help="CPU ids for os.sched_setaffinity before the engine starts "
                    "(its threads inherit them), e.g. '3'")
    ap.add_argument("--host-probe", type=int, default=0, help="launches of a per-step host-speed probe timed in "
                    "the gap before every step (probe_s; 0: off); e.g. 128")
    ap.add_argument("--sdpa-backend", default="default", choices=sorted(SDPA_BACKENDS),
                    help="torch SDPA backends allowed for paged|sdpa (set before the engine starts; default: torch's "
                    "choice, cuDNN on Hopper; efficient: cuDNN and flash off)")
    ap.add_argument("--name", default="hf", help="engine part of the output names: serving_<name>{prof,val}<tag>_*, "
                    "e.g. hfeff for a run with --sdpa-backend efficient")
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args(argv)
    if a.pin:
        os.sched_setaffinity(0, {int(x) for x in a.pin.split(",")})
    t_start = time.perf_counter()
    log_lines: list[str] = []

    def log(s):
        print(s, flush=True)
        log_lines.append(s)

    if a.smoke:
        a.num_blocks = min(a.num_blocks, 64)
        a.max_batch_tokens = min(a.max_batch_tokens, 256)
        a.block_size = min(a.block_size, 32)
        a.run_cap_s = min(a.run_cap_s, 20.0)
    manager, tracer, shape, gpu, info, sdpa, versions = build(a, log)
    client = Client(manager, shape["vocab"], a.seed)
    tracer.probe_n = int(a.host_probe)
    phases = [p.strip() for p in a.phases.split(",") if p.strip()]
    deadline = t_start + a.max_minutes * 60
    slug = records.slug(gpu)
    tag = a.tag
    written = []
    base = {"script": "lab/serving/hf_cb_runtime.py", "script_version": SCRIPT_VERSION, "date": a.date, "gpu": gpu,
            "versions": versions, "model": "TINY" if a.smoke else a.model, "shape": shape, "dtype": "bf16",
            "weights": "random (torch default init), nothing downloaded", "hf": info, "sdpa_backends_enabled": sdpa,
            "argv": sys.argv[1:] if argv is None else list(argv), "affinity": sorted(os.sched_getaffinity(0)),
            "cpu_count": os.cpu_count(), "host_probe_launches": int(a.host_probe),
            "sdpa_backend": a.sdpa_backend,
            "client": "in-process driver thread: "
            "add_request / get_result, no HTTP, no tokenizer (token ids drawn uniformly), no detokenization"}

    # warm-up (not recorded): one short request through the whole path
    tracer.reset_counter("warmup")
    client.submit("warmup:0", 32, 4)
    t = time.perf_counter()
    while not client.poll(0.01) and time.perf_counter() - t < 120:
        pass
    wait_idle(manager, tracer)
    with tracer.lock:
        tracer.rows.clear()

    if "profile" in phases:
        tracer.replay = tracer.cuda
        plan = profile_plan(a.smoke)
        for idx, item in enumerate(plan):
            if time.perf_counter() > deadline:
                log(f"profile item {idx} skipped: --max-minutes")
                continue
            run_profile_item(client, tracer, item, idx, log)
        tracer.replay = False
        with tracer.lock:
            prof_rows = [r for r in tracer.rows if r["workload"].startswith("prof")]
            tracer.rows.clear()
        p = records.paths(a.out, f"{a.name}prof{tag}", gpu, a.date)
        written.append(records.write_csv(p["steps"], STEP_COLUMNS, prof_rows))
        cfgp = dict(base, phase="profile", plan=profile_plan(a.smoke), kernel_tables=tracer.kernel_tables,
                    steps=len(prof_rows), wall_s=time.perf_counter() - t_start)
        written.append(records.write_config(p["config"], cfgp))
        log(f"profile: {len(prof_rows)} steps")
        pack(a.tar, a.out, written)

    if "validate" in phases:
        runs = validation_runs(a.smoke)
        if a.runs != "all":
            keep = {x.strip() for x in a.runs.split(",")}
            runs = [r for r in runs if r["name"] in keep]
        skip = {x.strip() for x in a.skip_runs.split(",") if x.strip()}
        runs = [r for r in runs if r["name"] not in skip]
        all_req, all_steps, summaries = [], [], []
        pv = records.paths(a.out, f"{a.name}val{tag}", gpu, a.date)

        def flush_validation():
            """Cumulative files after every run (a run cut by the command's time limit keeps the earlier ones)."""
            records.write_csv(pv["requests"], REQUEST_COLUMNS, all_req)
            records.write_csv(pv["steps"], STEP_COLUMNS, all_steps)
            records.write_config(pv["config"], dict(base, phase="validate", runs=summaries, run_cap_s=a.run_cap_s,
                                                    wall_s=time.perf_counter() - t_start))
            for v in pv.values():
                if v not in written:
                    written.append(v)
            pack(a.tar, a.out, written)

        vdir = os.path.join(a.out, "vllm")
        os.makedirs(vdir, exist_ok=True)
        for run in runs:
            if time.perf_counter() > deadline:
                summaries.append({"name": run["name"], "skipped": "max-minutes"})
                log(f"[{run['name']}] skipped: --max-minutes")
                continue
            meta = dict(run)
            if run["kind"] == "closed":
                inp = np.full(run["n"], run["in"])
                out = np.full(run["n"], run["out"])
                rows, dur = drive(client, tracer, run, None, inp, out, run["C"], a.run_cap_s, log)
                rate, conc = None, run["C"]
            elif run["kind"] == "poisson":
                arrv = poisson_arrivals(run["rate"], run["n"], run["seed"])
                meta["arrival_s"] = arrv.round(6).tolist()
                inp = np.full(run["n"], run["in"])
                out = np.full(run["n"], run["out"])
                rows, dur = drive(client, tracer, run, arrv, inp, out, None, arrv[-1] + a.run_cap_s / 2, log)
                rate, conc = run["rate"], None
            else:
                arrv, inp, out, cut = mooncake_slice(run["start_s"], run["window_s"], run["rate_scale"],
                                                     run["max_in"], run["max_out"])
                meta.update({"n": len(arrv), "prompts_cut": cut, "arrival_s": arrv.round(6).tolist(),
                             "input_tokens": inp.tolist(), "output_tokens": out.tolist()})
                rows, dur = drive(client, tracer, run, arrv, inp, out, None, arrv[-1] + a.run_cap_s / 2, log)
                rate, conc = len(arrv) / max(arrv[-1], 1e-9), None
            wait_idle(manager, tracer, 60)
            vreq = [{"start_time": r["_abs_submit"], "input_len": r["input_tokens"], "output_len": r["generated"],
                     "token_times": r["_abs_times"]} for r in rows]
            res = vllm_result.vllm_result(
                vreq, duration_s=dur, request_rate=rate, max_concurrency=conc, label=f"{a.name}val{tag}_{run['name']}",
                model_id=f"{'TINY' if a.smoke else a.model} (random bf16 weights)",
                metadata={"gpu": gpu, "torch": versions["torch"], "transformers": versions["transformers"],
                          "harness": "lab/serving/hf_cb_runtime.py", "workload": json.dumps(
                              {k: v for k, v in meta.items() if k not in ("arrival_s", "input_tokens",
                                                                          "output_tokens")})})
            fn = os.path.join(vdir, f"{a.name}val{tag}_{run['name']}_{slug}_{a.date}.json")
            with open(fn, "w") as f:
                json.dump(res, f)
            written.append(fn)
            for r in rows:
                r.pop("_abs_times")
                r.pop("_abs_submit")
            all_req += rows
            with tracer.lock:
                st = [r for r in tracer.rows if r["workload"] == run["name"]]
                tracer.rows = [r for r in tracer.rows if r["workload"] != run["name"]]
            all_steps += st
            s = {"name": run["name"], "duration_s": dur, "completed": res["completed"], "failed": res["failed"],
                 "steps": len(st), "median_ttft_ms": res["median_ttft_ms"], "p90_ttft_ms": res["p90_ttft_ms"],
                 "median_tpot_ms": res["median_tpot_ms"], "p90_tpot_ms": res["p90_tpot_ms"],
                 "median_itl_ms": res["median_itl_ms"]}
            s["workload"] = meta
            summaries.append(s)
            flush_validation()
        flush_validation()
        log("")
        log(f"{'run':<20} {'done':>5} {'dur s':>6} {'steps':>6} {'TTFT p50':>9} {'p90':>8} {'TPOT p50':>9} {'p90':>8}")
        for s in summaries:
            if "skipped" in s:
                log(f"{s['name']:<20} skipped")
                continue
            log(f"{s['name']:<20} {s['completed']:>5} {s['duration_s']:6.1f} {s['steps']:>6} "
                f"{s['median_ttft_ms']:8.1f}m {s['p90_ttft_ms']:7.1f}m {s['median_tpot_ms']:8.2f}m "
                f"{s['p90_tpot_ms']:7.2f}m")
    manager.stop(block=True, timeout=30)
    log(f"total {time.perf_counter() - t_start:.1f} s")
    logf = os.path.join(a.out, f"serving_{a.name}rt{tag}_log_{slug}_{a.date}.txt")
    with open(logf, "w") as f:
        f.write("\n".join(log_lines) + "\n")
    written.append(logf)
    pack(a.tar, a.out, written)
    return 0


def pack(tar: str, out: str, files: list[str]) -> None:
    if not tar:
        return
    tmp = tar + ".part"
    with tarfile.open(tmp, "w:gz") as tf:
        for w in files:
            if os.path.exists(w):
                tf.add(w, arcname=os.path.relpath(w, out))
    os.replace(tmp, tar)


if __name__ == "__main__":
    raise SystemExit(main())
