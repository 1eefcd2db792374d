"""Measure what eager (HF-style) research engines spend outside the GPU: Quest's per-run prefill cost and the
host time per layer of an eager decode step. Self-contained; one call does both (each part in a fresh process).

    python3 lab/measure_eager_host.py --out DIR [--quick]          # on the GPU machine
    python3 lab/measure_eager_host.py --out DIR --device cpu --tiny # smoke test of the logic, any machine

Part 1, `prefill` (one fresh process per context, as mit-han-lab/Quest scripts/bench_efficiency_e2e.sh starts
one `python3 bench_textgen.py` per context): Quest's scripts/bench_textgen.py (@01c1623) times
`--iteration` prefills (default 10; the e2e script passes 5) and AVERAGES them with no warm-up pass; every
iteration starts with torch.cuda.empty_cache(), then perf_counter, torch.randn of the prompt's embeddings,
model(inputs_embeds=...), perf_counter. Quest's prefill path builds small index tensors on the device from
host lists at every layer (torch::tensor({0, n}, options) in quest/ops/csrc/batch_prefill.cu), a blocking
copy, so its timer waits for the GPU: this emulation synchronizes after the forward (and records the time
before that synchronize too). The model is HF transformers' LlamaForCausalLM with Llama-2-7B's shapes
(hidden 4096, 32 layers, 32 heads, MHA, FFN 11008, vocab 32000), fp16, weights left uninitialised (created on
the GPU without init kernels, as from_pretrained's copies launch none), SDPA attention, logits of every
position cast to fp32 as Quest's LlamaForCausalLM does. Written per iteration: wall time; then 3 more
iterations without empty_cache (the warm reference). What the per-run cost is made of: the first
iteration's one-time work (cuBLAS handles and workspaces, lazily loaded kernel modules, the allocator's first
cudaMallocs) averaged over the iterations, plus the re-allocation each empty_cache forces.

Part 2, `host`: one decode step of the same model at batch 1 (a DynamicCache of random K/V of T tokens), HF
eager style, and one step of a plain own-code decoder (F.linear projections, torch RMSNorm / RoPE ops, K/V
appended into a preallocated cache, SDPA: the structure of engines that write their own model code, e.g.
OmniServe or Quest's llama.py, before their kernel fusion). For each: the host time to enqueue one step while
the GPU is held busy by a spin kernel (torch.cuda._sleep: the host never waits for the device), the kernels
the step launches and their device time (torch.profiler), and the wall time of a synchronized step. Also the
host cost of one bare PyTorch op (x.add_(1) with the GPU held busy), the quantity the roofline's eager launch
cost is. Written: eager_host_<device>_<date>.csv.

Nothing here is fitted to a paper number; it changes no GPU setting. Host identity (CPU model) is recorded:
host times transfer to another host only through an assumption (the consumer says which).

Versions: v1 (2026-11-26, both parts): the HF step built cache_position with torch.tensor([pos]) and the own-code
layer its position / index tensors with torch.tensor(scalar), blocking host-to-device copies, so with the GPU held
busy those steps waited for the spin (`host_syncs` true) and their `host_us_*` columns are not host times (their
synchronized wall times, device times and kernel counts are valid). v2 builds those tensors on the device
(torch.full / a device counter), so nothing in a timed step blocks; `--parts host` runs the host part alone. v2 still
blocked: a 32-layer step launches 1,500-1,900 kernels, more than the launch queue holds while the GPU is busy. v3
times the host part on an 8-layer model (the same layer shapes).
"""
from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import time

LLAMA2_7B = dict(hidden_size=4096, intermediate_size=11008, num_hidden_layers=32, num_attention_heads=32,
                 num_key_value_heads=32, head_dim=128, vocab_size=32000, max_position_embeddings=32768,
                 rms_norm_eps=1e-5, tie_word_embeddings=False)
TINY = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=4, head_dim=16, vocab_size=256, max_position_embeddings=4096,
            rms_norm_eps=1e-5, tie_word_embeddings=False)
PREFILL_COLS = ["device", "cpu", "torch_version", "transformers_version", "cuda_module_loading", "date", "part",
                "context", "iterations", "iteration", "phase", "wall_s", "host_return_s", "note"]
SCRIPT_VERSION = 3
HOST_COLS = ["device", "cpu", "torch_version", "transformers_version", "date", "script_version", "style", "attn", "batch",
             "context", "layers", "host_us_step", "host_syncs", "kernels_step", "device_us_step", "wall_us_step",
             "host_us_layer", "kernels_layer", "device_us_layer", "note"]


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def _env(torch, transformers, device) -> dict:
    name = torch.cuda.get_device_properties(0).name if device == "cuda" else "cpu"
    return {"device": name, "cpu": _cpu(), "torch_version": torch.__version__,
            "transformers_version": transformers.__version__,
            "cuda_module_loading": os.environ.get("CUDA_MODULE_LOADING", "(unset: PyTorch sets LAZY)"),
            "date": dt.date.today().isoformat()}


def _sync(torch, device):
    if device == "cuda":
        torch.cuda.synchronize()


def _model(torch, shapes, device):
    """LlamaForCausalLM of `shapes`, fp16 (fp32 on cpu), weights created uninitialised on the device."""
    import transformers
    from transformers import LlamaConfig, LlamaForCausalLM

    dtype = torch.float16 if device == "cuda" else torch.float32
    cfg = LlamaConfig(**shapes)
    torch.set_default_dtype(dtype)
    try:
        from transformers.modeling_utils import no_init_weights
    except ImportError:  # pragma: no cover - older/newer layouts
        from transformers.initialization import no_init_weights
    with torch.device(device), no_init_weights():
        model = LlamaForCausalLM(cfg)
    model = model.to(dtype).eval()
    if hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation("sdpa")
    else:
        model.config._attn_implementation = "sdpa"
    return model, cfg, transformers


# ---- part 1: Quest's bench_textgen.py prefill loop --------------------------------------------------------
def part_prefill(args) -> list[dict]:
    t0 = time.perf_counter()
    import torch
    t_import = time.perf_counter() - t0
    model, cfg, transformers = _model(torch, TINY if args.tiny else LLAMA2_7B, args.device)
    env = _env(torch, transformers, args.device)
    dtype = next(model.parameters()).dtype
    T, H = args.context, cfg.hidden_size
    rows = []

    def one(empty: bool):
        if empty and args.device == "cuda":
            torch.cuda.empty_cache()                    # bench_textgen.py: "clear cuda cache" each iteration
        with torch.inference_mode():
            ts = time.perf_counter()
            h = torch.randn(1, T, H, dtype=dtype, device=args.device)
            out = model(inputs_embeds=h, use_cache=False)
            out.logits.float()                          # Quest's LlamaForCausalLM: logits = logits.float()
            tr = time.perf_counter()
            _sync(torch, args.device)                   # Quest's per-layer blocking index copies
            te = time.perf_counter()
        del out, h
        return te - ts, tr - ts

    for i in range(args.iterations):
        w, r = one(True)
        rows.append({**env, "part": "prefill", "context": T, "iterations": args.iterations, "iteration": i,
                     "phase": "script (empty_cache first)", "wall_s": w, "host_return_s": r,
                     "note": f"fresh process; import torch {t_import:.2f} s before model build"})
        print(f"prefill T={T} it {i}: {w * 1e3:9.2f} ms (returned after {r * 1e3:.2f} ms)", flush=True)
    for i in range(3):
        w, r = one(False)
        rows.append({**env, "part": "prefill", "context": T, "iterations": args.iterations, "iteration": i,
                     "phase": "warm, no empty_cache", "wall_s": w, "host_return_s": r, "note": "reference"})
        print(f"prefill T={T} warm {i}: {w * 1e3:9.2f} ms", flush=True)
    return rows


# ---- part 2: host time of eager decode steps ----------------------------------------------------------------
def _busy(torch, device, ms: float):
    """Hold the GPU busy for about `ms` so the host never waits for it (a spin kernel)."""
    if device == "cuda":
        torch.cuda._sleep(int(ms * 1.98e6))             # ~1.98 GHz SM clock: cycles per ms (approximate)


def _host_and_device(torch, device, step, n_host=8, busy_ms=300.0):
    """(median host enqueue us, syncs?, kernels, device us, median synchronized wall us) of step()."""
    for _ in range(3):
        step()
    _sync(torch, device)
    host = []
    for _ in range(n_host):
        _busy(torch, device, busy_ms)
        t0 = time.perf_counter()
        step()
        host.append((time.perf_counter() - t0) * 1e6)
        _sync(torch, device)
    syncs = device == "cuda" and max(host) > 0.8 * busy_ms * 1e3
    walls = []
    for _ in range(n_host):
        _sync(torch, device)
        t0 = time.perf_counter()
        step()
        _sync(torch, device)
        walls.append((time.perf_counter() - t0) * 1e6)
    kernels, dev_us = float("nan"), float("nan")
    if device == "cuda":
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            step()
            _sync(torch, device)
        ev = [e for e in prof.events() if getattr(e, "device_type", None) is not None
              and "cuda" in str(e.device_type).lower()]
        kernels = float(len(ev))
        dev_us = float(sum(getattr(e, "device_time", 0.0) or getattr(e, "cuda_time", 0.0) for e in ev))
    return statistics.median(host), syncs, kernels, dev_us, statistics.median(walls)


class PlainLayer:
    """One decoder layer written as an engine's own model code: linear projections, RMSNorm and RoPE as torch
    ops, K/V appended into a preallocated cache with index_copy_, SDPA over the cache (batch 1)."""

    def __init__(self, torch, cfg, T, device, dtype):
        import torch.nn.functional as F

        self.t, self.F, self.cfg = torch, F, cfg
        h, f, d, n = cfg.hidden_size, cfg.intermediate_size, cfg.head_dim, cfg.num_attention_heads
        e = lambda *s: torch.empty(*s, device=device, dtype=dtype)   # noqa: E731
        self.w = {"qkv": e(3 * n * d, h), "o": e(h, n * d), "gu": e(2 * f, h), "down": e(h, f),
                  "n1": e(h).fill_(1.0), "n2": e(h).fill_(1.0)}
        self.k = torch.randn(1, n, T + 64, d, device=device, dtype=dtype)
        self.v = torch.randn(1, n, T + 64, d, device=device, dtype=dtype)
        self.pos = T
        inv = 1.0 / (10000 ** (torch.arange(0, d, 2, device=device, dtype=torch.float32) / d))
        self.inv = inv

    def norm(self, x, w):
        t = self.t
        v = x.float().pow(2).mean(-1, keepdim=True)
        return (x.float() * t.rsqrt(v + 1e-5)).to(x.dtype) * w

    def rope(self, x, pos):
        t = self.t
        ang = pos * self.inv
        c, s = t.cos(ang).to(x.dtype), t.sin(ang).to(x.dtype)
        x1, x2 = x[..., ::2], x[..., 1::2]
        return t.stack((x1 * c - x2 * s, x1 * s + x2 * c), -1).flatten(-2)

    def __call__(self, x):
        t, F, cfg = self.t, self.F, self.cfg
        n, d = cfg.num_attention_heads, cfg.head_dim
        r = x
        qkv = F.linear(self.norm(x, self.w["n1"]), self.w["qkv"]).view(1, 1, 3, n, d)
        q, k, v = (qkv[:, :, i].transpose(1, 2) for i in range(3))
        pos = t.full((), float(self.pos), device=x.device)          # v2: no blocking copy
        q, k = self.rope(q, pos), self.rope(k, pos)
        idx = t.full((1,), self.pos, device=x.device, dtype=t.long)
        self.k.index_copy_(2, idx, k)
        self.v.index_copy_(2, idx, v)
        a = F.scaled_dot_product_attention(q, self.k[:, :, :self.pos + 1], self.v[:, :, :self.pos + 1])
        x = r + F.linear(a.transpose(1, 2).reshape(1, 1, n * d), self.w["o"])
        g, u = F.linear(self.norm(x, self.w["n2"]), self.w["gu"]).chunk(2, -1)
        return x + F.linear(F.silu(g) * u, self.w["down"])


def part_host(args) -> list[dict]:
    import torch
    # 8 layers: a step must launch fewer kernels than the device's launch queue holds (~1,000), or the host blocks
    # on a full queue while the GPU is held busy (v2 showed it at 32 layers); host time per layer does not
    # depend on the layer count
    shapes = TINY if args.tiny else {**LLAMA2_7B, "num_hidden_layers": 8}
    model, cfg, transformers = _model(torch, shapes, args.device)
    env = _env(torch, transformers, args.device)
    dtype = next(model.parameters()).dtype
    L, rows = cfg.num_hidden_layers, []

    def emit(style, attn, T, res, note):
        h, s, k, d, w = res
        rows.append({**env, "script_version": SCRIPT_VERSION, "style": style, "attn": attn, "batch": 1, "context": T,
                     "layers": L,
                     "host_us_step": h, "host_syncs": s, "kernels_step": k, "device_us_step": d, "wall_us_step": w,
                     "host_us_layer": h / L, "kernels_layer": k / L, "device_us_layer": d / L, "note": note})
        print(f"{style:22s} {attn:6s} T={T:6d}: host {h:9.1f} us/step ({h / L:7.1f}/layer, syncs {s}), "
              f"{k:5.0f} kernels, device {d:9.1f} us, wall {w:9.1f} us", flush=True)

    # the bare op: what the roofline's eager launch cost stands for
    x = torch.zeros(1, device=args.device)
    res = _host_and_device(torch, args.device, lambda: [x.add_(1) for _ in range(200)])
    rows.append({**env, "script_version": SCRIPT_VERSION, "style": "bare x.add_(1)", "attn": "-", "batch": 1,
                 "context": 0, "layers": 200,
                 "host_us_step": res[0], "host_syncs": res[1], "kernels_step": res[2], "device_us_step": res[3],
                 "wall_us_step": res[4], "host_us_layer": res[0] / 200, "kernels_layer": res[2] / 200,
                 "device_us_layer": res[3] / 200, "note": "200 ops per 'step'; per-op values in *_layer"})
    print(f"bare op: host {res[0] / 200:.2f} us per op", flush=True)
    from transformers import DynamicCache

    for T in args.contexts:
        for attn in ("sdpa", "eager"):
            if hasattr(model, "set_attn_implementation"):
                model.set_attn_implementation(attn)
            else:
                model.config._attn_implementation = attn
            try:
                cache = DynamicCache(config=cfg)
            except TypeError:
                cache = DynamicCache()
            Hkv, D = cfg.num_key_value_heads, cfg.head_dim
            for li in range(L):
                cache.update(torch.randn((1, Hkv, T, D), device=args.device, dtype=dtype),
                             torch.randn((1, Hkv, T, D), device=args.device, dtype=dtype), li)
            ids = torch.randint(0, cfg.vocab_size, (1, 1), device=args.device)
            pos = [T]

            def step():
                with torch.inference_mode():   # v2: position tensors made on the device (no blocking copy)
                    model(input_ids=ids, past_key_values=cache, use_cache=True,
                          position_ids=torch.full((1, 1), pos[0], device=args.device),
                          cache_position=torch.full((1,), pos[0], device=args.device, dtype=torch.long))
                pos[0] += 1
            emit("HF transformers", attn, T, _host_and_device(torch, args.device, step),
                 "LlamaForCausalLM forward, DynamicCache (grows by one token per step)")
            cache = None  # noqa: F841 - free it before the next context
        layers = [PlainLayer(torch, cfg, T, args.device, dtype) for _ in range(L)]
        emb = torch.empty(cfg.vocab_size, cfg.hidden_size, device=args.device, dtype=dtype)
        head = torch.empty(cfg.vocab_size, cfg.hidden_size, device=args.device, dtype=dtype)

        def plain():
            with torch.inference_mode():
                h = emb[ids[0]].view(1, 1, -1)
                for ly in layers:
                    h = ly(h)
                torch.nn.functional.linear(h, head).argmax(-1)
        emit("plain own-code layer", "sdpa", T, _host_and_device(torch, args.device, plain),
             "own decoder code (class PlainLayer), K/V cache preallocated, position fixed")
        layers.clear()
        if args.device == "cuda":
            torch.cuda.empty_cache()
    return rows


def _write(out, prefix, env_device, cols, rows) -> str:
    os.makedirs(out, exist_ok=True)
    slug = env_device.lower().replace(" ", "-")
    path = os.path.join(out, f"{prefix}_{slug}_{dt.date.today().isoformat()}.csv")
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        for r in rows:
            w.writerow({c: r.get(c, "") for c in cols})
    print(f"wrote {path} ({len(rows)} rows)")
    return path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--tiny", action="store_true", help="tiny model shapes (smoke test)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--part", choices=("prefill", "host"), help="(internal) run one part in this process")
    ap.add_argument("--context", type=int, default=4096)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--contexts", type=int, nargs="+", default=[4096])
    ap.add_argument("--parts", nargs="+", choices=("prefill", "host"), default=["prefill", "host"])
    args = ap.parse_args(argv)
    if args.part:
        rows = part_prefill(args) if args.part == "prefill" else part_host(args)
        print("ROWS " + json.dumps(rows, default=str), flush=True)
        return 0
    base = [sys.executable, os.path.abspath(__file__), "--out", args.out, "--device", args.device] + (
        ["--tiny"] if args.tiny else [])
    runs = [("prefill", ["--context", str(c), "--iterations", "10"]) for c in ((4096,) if args.quick or args.tiny
                                                                               else (4096, 16384))]
    runs.append(("host", ["--contexts", *(["256"] if args.tiny else ["4096"])]))
    runs = [r for r in runs if r[0] in args.parts]
    out = {"prefill": [], "host": []}
    for part, extra in runs:
        t0 = time.perf_counter()
        p = subprocess.run(base + ["--part", part] + extra, capture_output=True, text=True)
        sys.stdout.write(p.stdout.split("ROWS ")[0])
        if p.returncode != 0:
            sys.stdout.write(p.stderr[-3000:])
            print(f"part {part} {extra} failed (rc {p.returncode})")
            continue
        rows = json.loads(p.stdout.split("ROWS ", 1)[1])
        for r in rows:
            r["note"] = (r.get("note", "") + f"; process wall {time.perf_counter() - t0:.1f} s").lstrip("; ")
        out[part] += rows
        print(f"[{part} {' '.join(extra)}: {time.perf_counter() - t0:.1f} s]", flush=True)
    dev = (out["prefill"] or out["host"] or [{"device": "unknown"}])[0]["device"]
    if out["prefill"]:
        _write(args.out, "quest_prefill_runs", dev, PREFILL_COLS, out["prefill"])
    if out["host"]:
        _write(args.out, f"eager_host_v{SCRIPT_VERSION}", dev, HOST_COLS, out["host"])
    _summary(out)
    return 0


def _summary(out) -> None:
    """The short table printed last: per-run fixed prefill cost and host time per layer."""
    by = {}
    for r in out["prefill"]:
        by.setdefault(r["context"], {}).setdefault(r["phase"], []).append(float(r["wall_s"]))
    for T, ph in sorted(by.items()):
        s, w = ph.get("script (empty_cache first)", []), ph.get("warm, no empty_cache", [])
        if s and w:
            ref = statistics.median(w)
            print(f"SUMMARY prefill T={T}: script mean {statistics.mean(s) * 1e3:.1f} ms (first {s[0] * 1e3:.1f}, "
                  f"rest median {statistics.median(s[1:]) * 1e3:.1f}), warm {ref * 1e3:.1f} ms -> per-run excess "
                  f"{(statistics.mean(s) - ref) * 1e3:.1f} ms over {len(s)} iterations")
    for r in out["host"]:
        print(f"SUMMARY host {r['style']:22s} {r['attn']:6s}: {float(r['host_us_layer']):7.1f} us/layer host, "
              f"{float(r['kernels_layer']):5.1f} kernels/layer, {float(r['device_us_layer']):7.1f} us/layer device")


if __name__ == "__main__":
    raise SystemExit(main())
