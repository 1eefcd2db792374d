#!/usr/bin/env python3
"""Separate micro-measurements of the serving harness's parts (none of them is a serving run).

    python lab/serving/measure_parts.py --out DIR --date 2026-11-22     # ~40 s on an H100
    python lab/serving/measure_parts.py --out /tmp/p --smoke           # CPU, tiny model

benchmarks/des_validation.py prices the own server's steps (model_torch.py) with the simulator's mechanisms;
the values those mechanisms need beyond the device's calibrated fit come from here, never from the compared
TTFT / TPOT. One CSV, ``serving_parts_<gpu>_<date>.csv``, one row per measurement (columns PART_COLUMNS):

* ``inventory``  torch.profiler kernel list of ONE forward of the harness's model (model_torch.PagedLlama) for
  a pure-decode batch called as the CUDA graph calls it (max_seqlen_q = 1, max_seqlen_k = the capture's
  max_model_len) and for an eager mixed step (decode rows + a prefill chunk): every device kernel / copy with
  its count per forward and mean duration. Checks the `kernels: unfused` table (simulator/layers.py) and the
  kernels FlashAttention-2's varlen call adds.
* ``host``       the host time to issue one eager forward (Executor's launch span: H2D copies, metadata,
  every op of the forward; the device is idle at the start and faster than the host at these shapes, so the
  span is the host's own rate), repeated: with the inventory's device-op count it gives the harness's host cost
  per eager kernel (the engine's `step_cost.launch_eager_us`).
* ``attn_decode`` torch's FlashAttention-2 varlen call as the harness's decode graph makes it (GQA group
  swapped into the query rows, split-KV count from max_seqlen_k; `seqused_k` per row) over uniform and mixed
  per-row contexts, split count fixed by max_seqlen_k = 16384 (the graph) or the batch's longest row (eager):
  device time per call, back-to-back (CUDA events around N calls queued behind a spin kernel), K/V rotated
  over the 32 layers' caches so they come from HBM as in a forward.
* ``attn_mixed``  the same call with a prefill chunk in the batch (max_seqlen_q > 1: no GQA swap, no split):
  chunks alone at several (tokens, cached prefix) (FlashAttention-2's varlen prefill rate) and with decode
  rows beside them (each decode row runs a 128-query tile per query head).
* ``step``        whole steps through the harness's own paths (Executor.run: decode batches replay the captured
  CUDA graph of the smallest size >= the batch, vLLM's capture sizes; steps with a prefill chunk run eagerly):
  decode batches over a grid of batch sizes and equal or mixed per-row contexts (context 1 = almost no attention),
  and mixed steps (a chunk beside decode rows): the decode attention in place, between the layers' GEMMs.

Timed configurations run in a shuffled order, twice (the median is kept), after a warm-up that brings the clocks
up, so a slow phase of the host or the GPU does not land on one family of shapes.

Nothing here changes a GPU setting.
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

SCRIPT_VERSION = 2   # 2: configurations in shuffled order, two passes (median), a clock warm-up, in-situ graph steps grid
PART_COLUMNS = ["device", "torch_version", "date", "script_version", "part", "name", "rows", "ctx", "ctx_max",
                "ctx_sum", "chunk", "prefix", "n_dec", "max_k", "kernel", "count", "device_us", "host_us", "reps",
                "note"]
GRAPH_MAX_K = 16384      # run_server.py --max-model-len default: the max_seqlen_k the decode graphs were captured with


def _ctx_desc(ctx) -> str:
    vals, cnt = np.unique(np.asarray(ctx), return_counts=True)
    return " ".join(f"{int(c)}x{int(v)}" for v, c in zip(vals[::-1], cnt[::-1]))


class Timer:
    """Back-to-back device time per call: a spin kernel holds the GPU while the host queues `n` calls, then CUDA
    events around them (CPU: wall time)."""

    def __init__(self, torch, cuda: bool):
        self.t, self.cuda = torch, cuda

    def per_call_us(self, fn, n: int = 20, reps: int = 3) -> float:
        t = self.t
        fn()
        if self.cuda:
            t.cuda.synchronize()
        out = []
        for _ in range(reps):
            if self.cuda:
                a, b = t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)
                t.cuda._sleep(int(3e6))
                a.record()
                for _ in range(n):
                    fn()
                b.record()
                b.synchronize()
                out.append(a.elapsed_time(b) * 1e3 / n)
            else:
                t0 = time.perf_counter()
                for _ in range(n):
                    fn()
                out.append((time.perf_counter() - t0) * 1e6 / n)
        return float(np.median(out))


def attn_fn(mt, torch, cuda, m, rows_q, ctx, max_k, layer_cycle):
    """A closure calling the harness's attention on a fresh layer's cache each call: rows_q query tokens per
    request (1 = decode), ctx = KV length per request after the step, max_k = max_seqlen_k passed."""
    dev = m.dev
    s = m.s
    Hq, D = s["heads"], s["head_dim"]
    starts, pos = [], mt.NULL_SLOT_TOKENS
    for c in ctx:
        starts.append(pos)
        pos += -(-int(c) // 16) * 16
    if pos > m.arena_tokens:
        raise ValueError(f"arena too small: {pos} > {m.arena_tokens}")
    cu_q = torch.tensor(np.concatenate([[0], np.cumsum(rows_q)]), dtype=torch.int32, device=dev)
    cu_s = torch.tensor(starts + [starts[-1] + int(ctx[-1])], dtype=torch.int32, device=dev)
    seq = torch.tensor(np.asarray(ctx, dtype=np.int64), dtype=torch.int32, device=dev)
    q = torch.randn((int(np.sum(rows_q)), Hq, D), device=dev, dtype=m.dtype)
    k = [0]
    if cuda:
        def call():
            li = k[0] % layer_cycle
            k[0] += 1
            return mt._flash(q, m.kv[li, 0], m.kv[li, 1], cu_q, cu_s, int(max(rows_q)), int(max_k), seq)
    else:
        host = (np.concatenate([[0], np.cumsum(rows_q)]), np.asarray(ctx), np.asarray(starts))
        att = mt.make_attn("sdpa_loop", None, s, host_meta=host)

        def call():
            li = k[0] % layer_cycle
            k[0] += 1
            return att(li, q, m.kv[li, 0], m.kv[li, 1])
    return call


def profile_kernels(torch, cuda, fn, reps: int = 3):
    """{kernel name: (count per call, mean device us)} of fn() under torch.profiler (CPU: op names, CPU time)."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    if cuda:
        torch.cuda.synchronize()
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=acts) as prof:
        for _ in range(reps):
            fn()
        if cuda:
            torch.cuda.synchronize()
    out = {}
    for e in prof.key_averages():
        if cuda:
            dtype = str(getattr(e, "device_type", ""))
            dev_t = getattr(e, "self_device_time_total", None)
            if dev_t is None:
                dev_t = getattr(e, "self_cuda_time_total", 0.0)
            if "CUDA" not in dtype or not dev_t:
                continue
            out[e.key] = (e.count / reps, dev_t / max(e.count, 1))
        else:
            if e.key.startswith("aten::") and e.count:
                out[e.key] = (e.count / reps, e.self_cpu_time_total / max(e.count, 1))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--date", default=dt.date.today().isoformat())
    ap.add_argument("--smoke", action="store_true", help="CPU, tiny model: tests the script (numbers mean nothing)")
    ap.add_argument("--host-reps", type=int, default=60)
    a = ap.parse_args(argv)
    t_start = time.perf_counter()
    log = lambda s: print(s, flush=True)  # noqa: E731
    import model_torch as mt
    import records
    import torch
    from driver import StepIn

    cuda = not a.smoke and torch.cuda.is_available()
    if not a.smoke and not cuda:
        sys.exit("CUDA not available (use --smoke for a CPU test run)")
    dev = "cuda" if cuda else "cpu"
    shape = mt.TINY if a.smoke else mt.LLAMA31_8B
    gpu = torch.cuda.get_device_name(0) if cuda else "cpu-smoke"
    env = {"device": gpu, "torch_version": torch.__version__, "date": a.date, "script_version": SCRIPT_VERSION}
    rows: list[dict] = []
    rng = np.random.default_rng(0)

    def add(**kw):
        rows.append({**env, **kw})

    m = mt.PagedLlama(shape, dev, torch.bfloat16, seed=0)
    arena = 300_000 if cuda else 40_000
    max_len = GRAPH_MAX_K if cuda else 2048
    m.alloc_kv(arena, max_len)
    if cuda:
        torch.cuda.synchronize()
    backend = "fa_seqused" if cuda else "sdpa_loop"
    log(f"device {gpu}; torch {torch.__version__}; shape {shape}; arena {arena} tokens; backend {backend}; "
        f"built in {time.perf_counter() - t_start:.1f} s")
    L = shape["layers"]
    timer = Timer(torch, cuda)
    ex_eager = mt.Executor(m, backend, [], use_graphs=False)

    def step_in(dctx, chunks):
        """StepIn of decode rows (KV length after the step) and chunks [(tokens, prefix)], slots packed."""
        ids, comp, new, tabs = [], [], [], []
        pos = mt.NULL_SLOT_TOKENS
        for i, c in enumerate(dctx):
            ids.append(f"d{i}")
            comp.append(c - 1)
            new.append(1)
            tabs.append([pos])
            pos += -(-int(c) // 16) * 16
        for j, (t, p) in enumerate(chunks):
            ids.append(f"p{j}")
            comp.append(p)
            new.append(t)
            tabs.append([pos])
            pos += -(-int(t + p) // 16) * 16
        return StepIn(ids, np.asarray(comp, dtype=np.int64), np.asarray(new, dtype=np.int64), tabs)

    # ---- 1. kernel inventory of one forward --------------------------------------------------------------------
    def graph_like_forward(dctx):
        """One forward as the decode graph runs it (eager here, so the profiler sees every kernel): max_q 1,
        max_k = the capture's max_model_len."""
        st = step_in(dctx, [])
        p = ex_eager._pack(st)
        n = p["n"]
        t64 = torch.from_numpy(np.concatenate([p["toks"], p["pos"], p["slots"], p["last"]])).to(dev)
        cu_s = np.concatenate([p["starts"], p["starts"][-1:] + p["ctx"][-1:]])
        t32 = torch.from_numpy(np.concatenate([p["cu_q"], cu_s, p["ctx"]]).astype(np.int32)).to(dev)
        T = p["T"]
        meta = mt.AttnMeta(t32[:n + 1], t32[n + 1:2 * n + 2], t32[2 * n + 2:3 * n + 2], 1, max_len)
        if cuda:
            attn = mt.make_attn("fa_seqused", meta, shape)
        else:
            attn = mt.make_attn("sdpa_loop", None, shape, host_meta=(p["cu_q"], p["ctx"], p["starts"]))

        def f():
            with torch.no_grad():
                return m.forward(t64[:T], t64[T:2 * T], t64[2 * T:3 * T], t64[3 * T:3 * T + n], attn)
        return f

    inv_cfgs = [("graph_decode_b4_c1024", lambda: graph_like_forward([1024] * 4), 4, [1024] * 4, []),
                ("eager_mixed_b4_c1024_p256", None, 5, [1024] * 4, [(256, 0)]),
                ("eager_prefill_p512", None, 1, [], [(512, 0)])]
    if a.smoke:
        inv_cfgs = [("graph_decode_b4_c100", lambda: graph_like_forward([100] * 4), 4, [100] * 4, []),
                    ("eager_mixed_b2_c100_p40", None, 3, [100] * 2, [(40, 0)])]
    n_ops = {}
    for name, mk, nrows, dctx, chunks in inv_cfgs:
        if mk is None:
            st = step_in(dctx, chunks)
            f = (lambda st=st: ex_eager.run(st))  # noqa: E731
        else:
            f = mk()
        ks = profile_kernels(torch, cuda, f)
        tot = sum(c for c, _ in ks.values())
        n_ops[name] = tot
        for kname, (cnt, us) in sorted(ks.items(), key=lambda kv: -kv[1][0] * kv[1][1]):
            add(part="inventory", name=name, rows=nrows, ctx=_ctx_desc(dctx) if dctx else "", n_dec=len(dctx),
                chunk=sum(c for c, _ in chunks), kernel=kname[:160], count=cnt, device_us=us, reps=3)
        add(part="inventory", name=name, rows=nrows, kernel="TOTAL", count=tot,
            device_us=sum(c * u for c, u in ks.values()), reps=3, note="device ops per forward, their summed time")
        log(f"inventory {name}: {tot:.0f} device ops per forward, {sum(c * u for c, u in ks.values()):.0f} us")

    # ---- 2. host issue time of eager forwards -------------------------------------------------------------------
    host_cfgs = [("eager_mixed_b1_c64_p16", [64], [(16, 0)]), ("eager_prefill_p16", [], [(16, 0)])]
    if a.smoke:
        host_cfgs = host_cfgs[:1]
    for name, dctx, chunks in host_cfgs:
        st = step_in(dctx, chunks)
        # its own device-op count (the profiler's): the launches the host issues
        ks = profile_kernels(torch, cuda, lambda st=st: ex_eager.run(st))
        nk = sum(c for c, _ in ks.values())
        add(part="inventory", name=name, rows=st.n, ctx=_ctx_desc(dctx) if dctx else "", n_dec=len(dctx),
            chunk=sum(c for c, _ in chunks), kernel="TOTAL", count=nk,
            device_us=sum(c * u for c, u in ks.values()), reps=3, note="device ops per forward, their summed time")
        spans = []
        for r in range(a.host_reps + 3):
            _ids, tm = ex_eager.run(st)
            if r < 3:
                continue
            spans.append((tm.t_launch_end - tm.t_prep_end, tm.gpu_s, tm.t_end - tm.t_launch_end))
            add(part="host", name=name, rows=st.n, n_dec=len(dctx), chunk=sum(c for c, _ in chunks),
                kernel="launch_span", count=nk, host_us=(tm.t_launch_end - tm.t_prep_end) * 1e6,
                device_us=tm.gpu_s * 1e6, reps=1, note=f"rep {r - 3}; sync after launch "
                f"{(tm.t_end - tm.t_launch_end) * 1e6:.0f} us")
            if r % 10 == 0:
                time.sleep(0.05)    # spread the repeats over time (the host's speed drifts)
        sp = np.asarray(spans)
        log(f"host {name}: {nk:.0f} device ops, launch span p50 {np.median(sp[:, 0]) * 1e3:.2f} ms (p10 "
            f"{np.percentile(sp[:, 0], 10) * 1e3:.2f}, p90 {np.percentile(sp[:, 0], 90) * 1e3:.2f}) = "
            f"{np.median(sp[:, 0]) * 1e6 / nk:.1f} us per device op; device span p50 {np.median(sp[:, 1]) * 1e3:.2f} ms")

    # ---- 3. decode attention as the graph calls it ------------------------------------------------------------
    if cuda:
        uni_B = [1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256]
        uni_T = [128, 512, 1024, 2048, 4096, 8192, 16384]
        het = [(B, tl, nl) for B in (4, 8, 16, 24, 32, 48, 64, 128, 256) for tl in (2048, 8192, 16384)
               for nl in (1, 4) if nl < B]
        short = 256
    else:
        uni_B, uni_T, het, short = [1, 4], [64, 256], [(4, 512, 1)], 32
    cfgs = []
    for B in uni_B:
        for T in uni_T:
            if B * T <= 270_000:
                cfgs.append(([T] * B, GRAPH_MAX_K if cuda else max_len))
    for B, tl, nl in het:
        ctx = [tl] * nl + [short] * (B - nl)
        if sum(ctx) <= 270_000:
            cfgs.append((ctx, GRAPH_MAX_K if cuda else max_len))
    for B in ([1, 8, 16, 32] if cuda else [1]):       # eager calls: the split count from the batch's own longest row
        for T in ([1024, 4096] if cuda else [64]):
            cfgs.append(([T] * B, T))
    t0 = time.perf_counter()
    warm_up(torch, cuda, m)
    res: dict = {}
    for _pass in range(2):
        for i in rng.permutation(len(cfgs)):
            ctx, mk = cfgs[i]
            fn = attn_fn(mt, torch, cuda, m, [1] * len(ctx), ctx, mk, L)
            res.setdefault(i, []).append(timer.per_call_us(fn))
    for i, (ctx, mk) in enumerate(cfgs):
        us = res[i]
        add(part="attn_decode", name=f"B{len(ctx)} {_ctx_desc(ctx)} maxk{mk}", rows=len(ctx), ctx=_ctx_desc(ctx),
            ctx_max=max(ctx), ctx_sum=sum(ctx), n_dec=len(ctx), max_k=mk, kernel="call", count=1,
            device_us=float(np.median(us)), reps=3 * len(us), note="per call: copies + split kernel + combine (CUDA "
            "events, back-to-back); passes " + " ".join(f"{u:.1f}" for u in us))
    # per-kernel split of a few calls (copies, the main kernel, the combine)
    for ctx, mk in ([([1024] * 4, GRAPH_MAX_K), ([1024] * 32, GRAPH_MAX_K), ([8192] + [256] * 31, GRAPH_MAX_K),
                     ([4096] * 8, GRAPH_MAX_K)] if cuda else [([64] * 4, max_len)]):
        ks = profile_kernels(torch, cuda, attn_fn(mt, torch, cuda, m, [1] * len(ctx), ctx, mk, L), reps=5)
        for kname, (cnt, us) in ks.items():
            add(part="attn_decode_kernels", name=f"B{len(ctx)} {_ctx_desc(ctx)} maxk{mk}", rows=len(ctx),
                ctx=_ctx_desc(ctx), ctx_max=max(ctx), ctx_sum=sum(ctx), n_dec=len(ctx), max_k=mk, kernel=kname[:160],
                count=cnt, device_us=us, reps=5)
    log(f"attn_decode: {len(cfgs)} configurations in {time.perf_counter() - t0:.1f} s")

    # ---- 4. the same call with a prefill chunk in the batch ---------------------------------------------------
    if cuda:
        mixed = [(c, o, nd, T) for (c, o) in ((128, 0), (512, 0), (1024, 0), (2048, 0), (4096, 0), (8192, 0),
                                              (1024, 4096), (2048, 4096), (512, 8192), (4096, 4096))
                 for (nd, T) in ((0, 0),)]
        mixed += [(512, 0, nd, T) for nd in (1, 8, 32, 64) for T in (1024, 4096)]
        mixed += [(2048, 0, 32, 1024), (128, 0, 64, 1024), (128, 0, 8, 4096), (1024, 0, 16, 2048)]
    else:
        mixed = [(40, 0, 0, 0), (40, 20, 2, 64)]
    t0 = time.perf_counter()
    res = {}
    for _pass in range(2):
        for i in rng.permutation(len(mixed)):
            c, o, nd, T = mixed[i]
            fn = attn_fn(mt, torch, cuda, m, [1] * nd + [c], [T] * nd + [c + o], max([T] * nd + [c + o]), L)
            res.setdefault(i, []).append(timer.per_call_us(fn, n=10))
    for i, (c, o, nd, T) in enumerate(mixed):
        ctx = [T] * nd + [c + o]
        us = res[i]
        add(part="attn_mixed", name=f"chunk{c}:{o} + {nd}x{T}", rows=nd + 1, ctx=_ctx_desc([T] * nd) if nd else "",
            ctx_max=max(ctx), ctx_sum=T * nd, chunk=c, prefix=o, n_dec=nd, max_k=max(ctx), kernel="call", count=1,
            device_us=float(np.median(us)), reps=3 * len(us), note="per call (CUDA events, back-to-back); passes "
            + " ".join(f"{u:.1f}" for u in us))
    log(f"attn_mixed: {len(mixed)} configurations in {time.perf_counter() - t0:.1f} s")

    # ---- 5. whole steps through the harness's paths ---------------------------------------------------------------
    caps = mt.vllm_capture_sizes(256) if cuda else []
    ex = mt.Executor(m, backend, caps, use_graphs=cuda)
    ex.capture(log)
    if cuda:
        steps = []
        for B in (1, 2, 4, 8, 12, 16, 20, 24, 32, 40, 48, 64, 96, 128, 192, 256):
            for T in (1, 256, 1024, 2048, 4096, 8192):
                if B * T <= 270_000:
                    steps.append(([T] * B, []))
        for B in (4, 8, 16, 24, 32, 48, 64, 128):
            for tl, nl in ((4096, 1), (16384, 1), (4096, 4), (16384, 4)):
                if nl < B:
                    steps.append(([tl] * nl + [512] * (B - nl), []))
        for c in (128, 512, 1024, 2048, 4096):
            for nd in (0, 8, 32):
                steps.append(([1024] * nd, [(c, 0)]))
        steps += [([2048] * 16, [(1024, 2048)]), ([], [(2048, 6144)]), ([1024] * 64, [(256, 0)])]
    else:
        steps = [([1] * 2, []), ([64] * 2, []), ([64] * 2, [(40, 0)])]
    warm_up(torch, cuda, m)
    t0 = time.perf_counter()
    res = {}
    for _pass in range(2):
        for i in rng.permutation(len(steps)):
            dctx, chunks = steps[i]
            st = step_in(dctx, chunks)
            for r in range(8):
                _ids, tm = ex.run(st)
                if r >= 2:
                    res.setdefault(i, []).append((tm.gpu_s, tm.t_end - tm.t_prep_end, tm.padded, tm.path,
                                                  tm.t_launch_end - tm.t_prep_end))
            for rid in st.req_ids:
                ex.forget(rid)
    for i, (dctx, chunks) in enumerate(steps):
        g = res[i]
        dev = np.asarray([x[0] for x in g])
        host = np.asarray([x[1] for x in g])
        st = step_in(dctx, chunks)
        nm = (f"{g[0][3]} B{len(dctx)} {_ctx_desc(dctx)}" if dctx else f"{g[0][3]}") + \
            "".join(f" +chunk{c}:{o}" for c, o in chunks)
        add(part="step", name=nm, rows=st.n, ctx=_ctx_desc(dctx) if dctx else "", ctx_max=max(dctx) if dctx else "",
            ctx_sum=sum(dctx), chunk=sum(c for c, _ in chunks), prefix=sum(o for _, o in chunks), n_dec=len(dctx),
            max_k=max_len, kernel=g[0][3], count=int(g[0][2]), device_us=float(np.median(dev) * 1e6),
            host_us=float(np.median(host) * 1e6), reps=len(g),
            note=f"device span (CUDA events) p10 {np.percentile(dev, 10) * 1e6:.0f} p90 {np.percentile(dev, 90) * 1e6:.0f}"
                 f" us; host_us = inputs ready to ids on host; count = graph size replayed (eager: rows); launch span "
                 f"p50 {np.median([x[4] for x in g]) * 1e6:.0f} us")
    log(f"steps: {len(steps)} configurations in {time.perf_counter() - t0:.1f} s")

    path = os.path.join(a.out, f"serving_parts_{records.slug(gpu)}_{a.date}.csv")
    records.write_csv(path, PART_COLUMNS, rows)
    log(f"wrote {path} ({len(rows)} rows) in {time.perf_counter() - t_start:.1f} s")
    # a short table last
    dec = [r for r in rows if r["part"] == "attn_decode" and r["max_k"] == (GRAPH_MAX_K if cuda else max_len)]
    log(f"{'decode attention call (graph split)':<44} {'us':>8}")
    for r in dec[:: max(1, len(dec) // 12)]:
        log(f"{r['name']:<44} {r['device_us']:8.1f}")
    for r in rows[:: max(1, len(rows) // 400)]:
        if r["part"] == "step":
            log(f"{r['name']:<52} {r['device_us'] / 1e3:8.2f} ms")
    return 0


def warm_up(torch, cuda, m, seconds: float = 0.4) -> None:
    """Bring the GPU clocks up before timing: bf16 GEMMs for `seconds`."""
    if not cuda:
        return
    x = torch.randn((4096, 4096), device=m.dev, dtype=m.dtype)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(20):
            x = (x @ x).clamp_(-1, 1)
        torch.cuda.synchronize()


if __name__ == "__main__":
    raise SystemExit(main())
