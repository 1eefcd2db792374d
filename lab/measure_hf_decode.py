"""Measure one Hugging Face transformers decode step of a Llama-3.1-8B-shaped model at long context.

    python3 lab/measure_hf_decode.py --out DIR [--quick]

Why: research systems (the SSV document's among them, by its 97.2 % attention share at 64K) run models
through HF transformers in eager PyTorch. This times that path on the GPU so the simulator's pricing of it
(`runtime: {launch: eager, kernels: unfused}` with `dense: {gqa_expand: repeat_kv}` or native GQA) can be
checked against a real step: benchmarks/hf_decode_check.py compares them. Nothing is fitted to it.

The model is LlamaForCausalLM with Llama-3.1-8B's config (hidden 4096, 32 layers, 32 query / 8 KV heads,
FFN 14336, vocab 128256), random bf16 weights. The KV cache of T tokens is filled with random values
(a prefill of 64K tokens through eager attention would not fit), in HF's default DynamicCache, so each
step appends one token per layer the way `generate()` does. For each attention implementation
('eager': repeat_kv + matmul + softmax + matmul; 'sdpa': torch SDPA, HF decides whether to pass
enable_gqa or repeat K/V first), batch B and context T: the median GPU time of one forward of B new tokens
(CUDA events, 5 samples after 2 warm-up steps), and a context-16 step of the same batch as the
attention-free reference. Writes DIR/hf_decode_<device-slug>_<date>.csv. It changes no GPU setting.
"""
from __future__ import annotations

import argparse
import csv
import datetime as dt
import os
import statistics

from harness import device_slug, driver_version, write_rows

SCRIPT_VERSION = 1
COLUMNS = ["device", "torch_version", "transformers_version", "driver_version", "date", "script_version",
           "attn_implementation", "batch", "context", "median_ms", "p20_ms", "p80_ms", "repeats", "note"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--profile", action="store_true",
                    help="also profile one eager step at B=1, 64K and write its kernels (name, calls, GPU time)")
    args = ap.parse_args(argv)

    import torch
    import transformers
    from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM

    drv = driver_version()
    env = {"device": torch.cuda.get_device_properties(0).name, "torch_version": torch.__version__,
           "transformers_version": transformers.__version__, "driver_version": drv,
           "date": dt.date.today().isoformat(), "script_version": SCRIPT_VERSION}
    cfg = LlamaConfig(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                      num_key_value_heads=8, head_dim=128, vocab_size=128256, max_position_embeddings=131072,
                      rope_theta=500000.0, rms_norm_eps=1e-5, tie_word_embeddings=False)
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = LlamaForCausalLM(cfg).to(torch.bfloat16)
    model.eval()
    L, Hkv, D = cfg.num_hidden_layers, cfg.num_key_value_heads, 128
    cases = [(1, 8192), (1, 32768), (1, 65536), (2, 65536), (4, 65536)] if not args.quick else [(1, 8192)]
    rows = []
    for impl in ("eager", "sdpa"):
        if hasattr(model, "set_attn_implementation"):
            model.set_attn_implementation(impl)
        else:
            model.config._attn_implementation = impl
        for B, T in [(b, 16) for b in sorted({b for b, _ in cases})] + cases:
            try:
                try:
                    cache = DynamicCache(config=cfg)
                except TypeError:
                    cache = DynamicCache()
                for li in range(L):
                    k = torch.randn((B, Hkv, T, D), device="cuda", dtype=torch.bfloat16)
                    v = torch.randn((B, Hkv, T, D), device="cuda", dtype=torch.bfloat16)
                    cache.update(k, v, li)
                del k, v
                pos = T
                ids = torch.randint(0, cfg.vocab_size, (B, 1), device="cuda")

                def step():
                    nonlocal pos
                    with torch.no_grad():
                        model(input_ids=ids, past_key_values=cache, use_cache=True,
                              position_ids=torch.full((B, 1), pos, device="cuda"),
                              cache_position=torch.tensor([pos], device="cuda"))
                    pos += 1

                for _ in range(2):
                    step()
                torch.cuda.synchronize()
                samples = []
                for _ in range(5):
                    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    a.record()
                    step()
                    b.record()
                    b.synchronize()
                    samples.append(a.elapsed_time(b))
                samples.sort()
                q = statistics.quantiles(samples, n=5)
                rows.append({**env, "attn_implementation": impl, "batch": B, "context": T,
                             "median_ms": statistics.median(samples), "p20_ms": q[0], "p80_ms": q[3], "repeats": 5,
                             "note": "DynamicCache of random K/V; one forward of B new tokens, eager PyTorch"})
                print(f"{impl:5s} B={B} T={T:6d} {statistics.median(samples):8.2f} ms", flush=True)
            except torch.cuda.OutOfMemoryError:
                rows.append({**env, "attn_implementation": impl, "batch": B, "context": T,
                             "note": "skipped: out of memory"})
                print(f"{impl:5s} B={B} T={T:6d} OOM", flush=True)
            finally:
                cache = None
                torch.cuda.empty_cache()
    if args.profile:
        _profile(model, cfg, args.out, device_slug(env["device"]), env)
    write_rows(args.out, "hf_decode", env["device"], env["date"], COLUMNS, rows)
    return 0


def _profile(model, cfg, out, slug, env) -> None:
    """Kernel table of one eager decode step at B=1, 64K (torch.profiler, CUDA activities)."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    from transformers import DynamicCache

    if hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation("eager")
    else:
        model.config._attn_implementation = "eager"
    T = 65536
    try:
        cache = DynamicCache(config=cfg)
    except TypeError:
        cache = DynamicCache()
    for li in range(cfg.num_hidden_layers):
        cache.update(torch.randn((1, 8, T, 128), device="cuda", dtype=torch.bfloat16),
                     torch.randn((1, 8, T, 128), device="cuda", dtype=torch.bfloat16), li)
    ids = torch.randint(0, cfg.vocab_size, (1, 1), device="cuda")
    with torch.no_grad():
        for pos in (T, T + 1):
            model(input_ids=ids, past_key_values=cache, use_cache=True, position_ids=torch.full((1, 1), pos, device="cuda"),
                  cache_position=torch.tensor([pos], device="cuda"))
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            model(input_ids=ids, past_key_values=cache, use_cache=True,
                  position_ids=torch.full((1, 1), T + 2, device="cuda"), cache_position=torch.tensor([T + 2], device="cuda"))
            torch.cuda.synchronize()
    rows = []
    for e in prof.key_averages():
        t = getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0.0)
        if t:
            rows.append((e.key, e.count, t))
    rows.sort(key=lambda r: -r[2])
    path = os.path.join(out, f"hf_decode_profile_{slug}_{env['date']}.csv")
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["kernel", "calls", "gpu_us_total", "note"])
        for k, c, t in rows:
            w.writerow([k[:200], c, round(t, 1), "eager, B=1, context 65536, one decode step"])
    print(f"profile: {sum(r[2] for r in rows) / 1e3:.1f} ms of GPU time in {sum(r[1] for r in rows)} kernel calls")
    for k, c, t in rows[:15]:
        print(f"  {t / 1e3:8.2f} ms  {c:5d}  {k[:110]}")


if __name__ == "__main__":
    raise SystemExit(main())
