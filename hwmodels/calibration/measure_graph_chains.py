#!/usr/bin/env python3
"""What a kernel costs inside a CUDA graph next to *other* kernels (issue 15 round 5), on one CUDA GPU.

    python3 hwmodels/calibration/measure_graph_chains.py --out DIR [--no-hf]
    python3 hwmodels/calibration/measure_graph_chains.py --out /tmp/x --device cpu   # debug the script

Why: measure_regimes.py times every kernel as N copies of itself back to back in one graph. A real decode step is a
chain of different kernels: GEMMs (cuBLASLt nvjet kernels, thread-block clusters, ~200 KB of shared memory), cuDNN
attention, and many small PyTorch kernels (no shared memory). This campaign measures graphs whose nodes are
sequences of such kernels and compares each with the same kernels timed alone:

  chains       one graph per sequence (`chain`), replayed after a spin kernel (the events bracket device time only;
               measure_regimes.py time_graph); `graph_us` = median replay time over REPS replays, `nodes` = the
               kernels one replay runs (CUPTI), `prof_dur_us` = the sum of those kernels' CUPTI durations in one
               profiled replay, `prof_span_us` = first kernel start to last kernel end of that replay.
               Kernels: t0-t7 eight different small eager kernels on a [1, 4096] tensor (add, mul, neg, abs, clamp,
               up-cast copy, rsqrt, row sum: the size of an HF decode step's norm / rotary kernels at batch 1);
               gA = F.linear [1, 4096] x [4096, 4096]^T bf16 (o_proj shape), gB = [1024, 4096] (k_proj shape:
               cuBLASLt split-K + its reduce kernel), weights rotating over 8 copies (256 / 64 MiB: from HBM);
               attn = SDPA cuDNN decode, 32 heads / 8 KV heads, T 2048, K/V rotating over 8 sets.
  trace        every kernel of one profiled replay (name, start, duration; µs) of the HF Llama-3.1-8B decode step
               (B 1, T 2048: measure_regimes.py fam_hf_step's model and cache) and of a few chains: the gaps
               between consecutive kernels, by kernel pair.

Writes DIR/graph_chains_<device-slug>_<date>.csv and DIR/graph_trace_<device-slug>_<date>.csv. Changes no GPU
setting.
"""
from __future__ import annotations

import argparse
import csv
import datetime as _dt
import json
import os
import statistics
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

SCRIPT_VERSION = 3   # 2: the HF step at six shapes after spins of 150 / 2000 / 20000 us; 3: --spin-check
REPS = 15
SPIN_CYCLES_PER_US, SPIN_US = 2000, 200.0


def _spin(cuda: bool, us: float = SPIN_US) -> None:
    if cuda and hasattr(torch.cuda, "_sleep"):
        torch.cuda._sleep(int(us * SPIN_CYCLES_PER_US))


def _sync(cuda: bool) -> None:
    if cuda:
        torch.cuda.synchronize()


def capture(cuda: bool, seq):
    """A CUDA graph of the callables in `seq`, in order (None on CPU)."""
    for f in seq[: min(len(seq), 16)]:
        f()
    _sync(cuda)
    if not cuda:
        return None
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for f in seq[: min(len(seq), 16)]:
            f()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for f in seq:
            f()
    g.replay()
    _sync(cuda)
    return g


def replay_us(cuda: bool, g, seq, spin: float = SPIN_US) -> list[float]:
    xs = []
    for _ in range(REPS):
        if not cuda:
            t0 = time.perf_counter()
            for f in seq:
                f()
            xs.append((time.perf_counter() - t0) * 1e6)
            continue
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        _spin(cuda, spin)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        xs.append(a.elapsed_time(b) * 1000.0)
    return xs


def quantiles(xs: list[float]) -> dict:
    """graph_us (median), p20_us, p80_us of replay times."""
    s = sorted(xs)
    return dict(graph_us=statistics.median(xs), p20_us=s[len(s) // 5], p80_us=s[(4 * len(s)) // 5])


def profile_kernels(cuda: bool, g) -> list[tuple[str, float, float]]:
    """(name, start us, duration us) of every kernel of one graph replay, from CUPTI (torch.profiler's trace)."""
    if not cuda:
        return []
    from torch.profiler import ProfilerActivity, profile
    g.replay()
    _sync(cuda)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        _spin(cuda, 50.0)
        g.replay()
        _sync(cuda)
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    prof.export_chrome_trace(path)
    with open(path) as f:
        ev = json.load(f).get("traceEvents", [])
    os.remove(path)
    ks = [(e["name"], float(e["ts"]), float(e["dur"])) for e in ev
          if e.get("cat") == "kernel" and not any(x in e.get("name", "").lower() for x in ("sleep", "spin_kernel"))]
    return sorted(ks, key=lambda k: k[1])


def short(name: str) -> str:
    n = name.replace("void ", "")
    for key in ("nvjet", "splitKreduce", "cudnn", "lean_reduction", "reduce_kernel", "CatArrayBatchedCopy",
                "index_elementwise", "elementwise_kernel_with_index"):
        if key in n:
            return n.split("(")[0][:90]
    if "Functor" in n or "functor" in n.lower():
        for part in n.split("at::native::")[1:]:
            if "Functor" in part or "kernel_cuda" in part or "_kernel" in part:
                return ("ew:" + part.split("<")[0].split("(")[0])[:90]
    return n.split("(")[0][:90]


class Setup:
    def __init__(self, dev: str):
        self.cuda = dev == "cuda"
        d, bf = dev, torch.bfloat16
        torch.manual_seed(0)
        H = 4096 if self.cuda else 256
        self.H = H
        x = torch.randn(1, H, device=d, dtype=bf)
        xf = torch.randn(1, H, device=d, dtype=torch.float32).abs() + 0.1
        o = [torch.empty(1, H, device=d, dtype=bf) for _ in range(6)]
        of = [torch.empty(1, H, device=d, dtype=torch.float32) for _ in range(2)]
        os_ = torch.empty(1, device=d, dtype=torch.float32)
        self.x = x
        self.tiny = [
            lambda: torch.add(x, 1, out=o[0]),
            lambda: torch.mul(x, 2, out=o[1]),
            lambda: torch.neg(x, out=o[2]),
            lambda: torch.abs(x, out=o[3]),
            lambda: torch.clamp(x, -1, 1, out=o[4]),
            lambda: of[0].copy_(x),
            lambda: torch.rsqrt(xf, out=of[1]),
            lambda: torch.sum(xf, dim=-1, out=os_),
        ]
        self.inplace = lambda: x.add_(0)
        nrot = 8 if self.cuda else 2
        N2 = 1024 if self.cuda else 64
        self.WA = [torch.randn(H, H, device=d, dtype=bf) * 0.02 for _ in range(nrot)]
        self.WB = [torch.randn(N2, H, device=d, dtype=bf) * 0.02 for _ in range(nrot)]
        self.ia = 0
        self.ib = 0
        T = 2048 if self.cuda else 64
        Hq, Hkv, D = (32, 8, 128) if self.cuda else (4, 2, 32)
        self.q = torch.randn(1, Hq, 1, D, device=d, dtype=bf)
        self.kv = [(torch.randn(1, Hkv, T, D, device=d, dtype=bf), torch.randn(1, Hkv, T, D, device=d, dtype=bf))
                   for _ in range(nrot)]
        self.ik = 0
        self.nrot = nrot

    def gA(self):
        self.ia = (self.ia + 1) % self.nrot
        w = self.WA[self.ia]
        return lambda: F.linear(self.x, w)

    def gB(self):
        self.ib = (self.ib + 1) % self.nrot
        w = self.WB[self.ib]
        return lambda: F.linear(self.x, w)

    def attn(self):
        self.ik = (self.ik + 1) % self.nrot
        k, v = self.kv[self.ik]
        q = self.q

        def f():
            try:
                from torch.nn.attention import SDPBackend, sdpa_kernel
                with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                    return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
            except Exception:  # noqa: BLE001  (CPU / no cuDNN: the math backend)
                return F.scaled_dot_product_attention(q, k.repeat_interleave(q.shape[1] // k.shape[1], 1),
                                                      v.repeat_interleave(q.shape[1] // v.shape[1], 1))
        return f


def chains(s: Setup) -> dict[str, list]:
    """chain name -> the sequence of callables one graph runs."""
    t = s.tiny
    out = {}
    for i in range(len(t)):
        out[f"same:t{i}"] = [t[i]] * 128
    out["same:inplace"] = [s.inplace] * 128
    out["cycle:t0-t7"] = t * 16
    out["alt:t0,t1"] = [t[0], t[1]] * 64
    out["same:gA"] = [s.gA() for _ in range(48)]
    out["same:gB"] = [s.gB() for _ in range(48)]
    out["same:attn"] = [s.attn() for _ in range(48)]
    out["alt:gA,t0"] = [f for _ in range(48) for f in (s.gA(), t[0])]
    out["alt:gA,t0-t3"] = [f for _ in range(32) for f in (s.gA(), t[0], t[1], t[2], t[3])]
    out["alt:gA,t0-t7"] = [f for _ in range(24) for f in (s.gA(), *t)]
    out["alt:gA,gB"] = [f for _ in range(32) for f in (s.gA(), s.gB())]
    out["alt:gB,t0"] = [f for _ in range(48) for f in (s.gB(), t[0])]
    out["alt:attn,t0"] = [f for _ in range(48) for f in (s.attn(), t[0])]
    out["alt:attn,gA"] = [f for _ in range(32) for f in (s.attn(), s.gA())]
    x = s.x

    def quant():   # measure_regimes.py _quant_eager on [1, H]: 8 kernels
        sc = x.abs().amax(-1, keepdim=True).float().clamp(min=1e-12).div(448.0)
        return (x / sc).clamp(-448.0, 448.0).to(torch.float8_e4m3fn) if hasattr(torch, "float8_e4m3fn") else x / sc
    out["chain:quant_eager"] = [quant] * 16
    out["chain:quant_eager_x32"] = [quant] * 32
    out["chain:quant_eager_x128"] = [quant] * 128
    out["alt:gA,attn,t0-t3"] = [f for _ in range(24) for f in (s.gA(), s.attn(), t[0], t[1], t[2], t[3])]
    return out


TRACED = ("chain:quant_eager", "same:t0", "cycle:t0-t7", "same:gA", "alt:gA,t0", "alt:gA,t0-t3", "same:gB", "alt:gB,t0", "alt:attn,t0")


HF_SHAPES = ((1, 512), (1, 2048), (1, 8192), (8, 2048), (8, 8192), (32, 2048))   # measure_regimes.py fam_hf_step
#: spins (us) before the timed replay: measure_regimes.py v4 used 150 us; a graph of ~1,800 nodes may take the host
#: longer than that to launch, and the start event then waits for the launch (host time leaks into the sample)
HF_SPINS = (150.0, 2000.0, 20000.0)


def hf_model(cuda: bool):
    """measure_regimes.py fam_hf_step's model (a smaller config on CPU): (model, config)."""
    from transformers import LlamaConfig, LlamaForCausalLM
    if cuda:
        cfg = LlamaConfig(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                          num_key_value_heads=8, head_dim=128, vocab_size=128256, max_position_embeddings=131072,
                          rope_theta=500000.0, rms_norm_eps=1e-5, tie_word_embeddings=False)
    else:
        cfg = LlamaConfig(hidden_size=256, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
                          num_key_value_heads=2, head_dim=64, vocab_size=1000, max_position_embeddings=4096)
    dev = "cuda" if cuda else "cpu"
    torch.manual_seed(0)
    with torch.device(dev):
        model = LlamaForCausalLM(cfg).to(torch.bfloat16)
    model.eval()
    if hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation("sdpa")
    return model, cfg


def hf_step(cuda: bool, model, cfg, B: int, T: int):
    """One decode step of `model` over a StaticCache of T random tokens (fam_hf_step's), B sequences."""
    from transformers import StaticCache
    dev = "cuda" if cuda else "cpu"
    cache = StaticCache(config=cfg, max_cache_len=T + 16)
    ids = torch.randint(0, cfg.vocab_size, (B, 1), device=dev)
    pos = torch.tensor([T], device=dev)
    with torch.no_grad():
        model(input_ids=ids, past_key_values=cache, cache_position=pos, use_cache=True)
        for lay in cache.layers:
            lay.keys.normal_()
            lay.values.normal_()

    def step():
        with torch.no_grad():
            return model(input_ids=ids, past_key_values=cache, cache_position=pos, use_cache=True)
    return step, cache


def hf_rows(cuda: bool, meta: dict, trace: list) -> list[dict]:
    """The HF step at HF_SHAPES: graph replay time after each spin of HF_SPINS, the host's time in g.replay(), and
    one profiled replay (CUPTI kernel durations and first-start-to-last-end span; the kernel trace at B 1, T 2048)."""
    model, cfg = hf_model(cuda)
    shapes = HF_SHAPES if cuda else ((1, 64), (2, 128))
    rows = []
    for B, T in shapes:
        label = f"hf_llama8b_B{B}_T{T}"
        step, cache = hf_step(cuda, model, cfg, B, T)
        g = capture(cuda, [step])
        if cuda:
            host = []
            for _ in range(5):
                torch.cuda.synchronize()
                _spin(cuda, 50000.0)
                t0 = time.perf_counter()
                g.replay()
                host.append((time.perf_counter() - t0) * 1e6)
                torch.cuda.synchronize()
            for spin in HF_SPINS:
                xs = replay_us(cuda, g, [step], spin)
                rows.append(dict(meta, chain=f"{label}:spin{int(spin)}", calls=1, **quantiles(xs),
                                 host_launch_us=statistics.median(host)))
                print(f"{label} spin {spin:7.0f} us: graph {statistics.median(xs):9.1f} us (p20 {rows[-1]['p20_us']:.1f}"
                      f", p80 {rows[-1]['p80_us']:.1f}); host in g.replay() {statistics.median(host):.1f} us", flush=True)
        else:
            xs = replay_us(cuda, g, [step])
            rows.append(dict(meta, chain=f"{label}:cpu", calls=1, graph_us=statistics.median(xs)))
        ks = profile_kernels(cuda, g)
        span = (ks[-1][1] + ks[-1][2] - ks[0][1]) if ks else float("nan")
        rows.append(dict(meta, chain=f"{label}:profiled", calls=1, nodes=len(ks), prof_dur_us=sum(k[2] for k in ks),
                         prof_span_us=span))
        print(f"{label}: {len(ks)} kernels, CUPTI duration sum {rows[-1]['prof_dur_us']:.1f} us, span {span:.1f} us",
              flush=True)
        if (B, T) == (1, 2048):
            trace += [dict(meta, graph=label, i=i, kernel=short(n), ts_us=ts, dur_us=du)
                      for i, (n, ts, du) in enumerate(ks)]
        del g, cache, step
        if cuda:
            torch.cuda.empty_cache()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--no-hf", action="store_true")
    ap.add_argument("--only-hf", action="store_true", help="skip the chains (script version 2: the HF step alone)")
    ap.add_argument("--spin-check", action="store_true",
                    help="(version 3) a few chains of 128-1024 nodes replayed after spins of 150 / 2000 / 20000 us")
    args = ap.parse_args()
    cuda = args.device == "cuda"
    os.makedirs(args.out, exist_ok=True)
    name = torch.cuda.get_device_name() if cuda else "cpu"
    slug = name.lower().replace(" ", "-")
    date = _dt.date.today().isoformat()
    meta = dict(device=name, torch_version=torch.__version__, date=date, script_version=SCRIPT_VERSION)
    cpath = os.path.join(args.out, f"graph_chains_{slug}_{date}.csv")
    tpath = os.path.join(args.out, f"graph_trace_{slug}_{date}.csv")
    s = Setup(args.device)
    rows, trace = [], []
    SPIN_CHECK = ("same:t0", "cycle:t0-t7", "alt:gA,t0-t3", "chain:quant_eager", "chain:quant_eager_x32",
                  "chain:quant_eager_x128")
    if args.spin_check:
        for chain, seq in chains(s).items():
            if chain not in SPIN_CHECK:
                continue
            g = capture(cuda, seq)
            for spin in HF_SPINS:
                xs = replay_us(cuda, g, seq, spin)
                rows.append(dict(meta, chain=f"{chain}:spin{int(spin)}", calls=len(seq), **quantiles(xs)))
                print(f"{chain:24s} spin {spin:7.0f}: graph {statistics.median(xs):9.2f} us", flush=True)
            del g
    for chain, seq in ({} if (args.only_hf or args.spin_check) else chains(s)).items():
        g = capture(cuda, seq)
        xs = replay_us(cuda, g, seq)
        ks = profile_kernels(cuda, g)
        span = (ks[-1][1] + ks[-1][2] - ks[0][1]) if ks else float("nan")
        rows.append(dict(meta, chain=chain, calls=len(seq), nodes=len(ks), **quantiles(xs),
                         prof_dur_us=sum(k[2] for k in ks), prof_span_us=span))
        if chain in TRACED:
            trace += [dict(meta, graph=chain, i=i, kernel=short(n), ts_us=ts, dur_us=du) for i, (n, ts, du) in
                      enumerate(ks)]
        print(f"{chain:22s} calls {len(seq):4d} nodes {len(ks):4d} graph {statistics.median(xs):9.2f} us  "
              f"per node {statistics.median(xs) / max(len(ks), 1):6.3f}  CUPTI dur sum {rows[-1]['prof_dur_us']:9.2f}",
              flush=True)
        del g
    if not args.no_hf:
        try:
            rows += hf_rows(cuda, meta, trace)
        except Exception as ex:  # noqa: BLE001
            print(f"hf step failed: {type(ex).__name__}: {ex}", file=sys.stderr)
    cols = ["device", "torch_version", "date", "script_version", "chain", "calls", "nodes", "graph_us", "p20_us",
            "p80_us", "prof_dur_us", "prof_span_us", "host_launch_us"]
    with open(cpath, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.3f}" if isinstance(v, float) else v) for k, v in r.items()})
    with open(tpath, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["device", "date", "script_version", "graph", "i", "kernel", "ts_us",
                                          "dur_us"], extrasaction="ignore")
        w.writeheader()
        for r in trace:
            w.writerow({k: (f"{v:.3f}" if isinstance(v, float) else v) for k, v in r.items()})
    print(f"wrote {cpath} ({len(rows)} rows) and {tpath} ({len(trace)} kernels)")


if __name__ == "__main__":
    main()
