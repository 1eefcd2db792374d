"""Measure causal prefill attention (the compute-bound side of attention) on one CUDA GPU.

    python3 lab/measure_prefill_attn.py --out DIR [--quick]

The decode-attention family of measure.py is bandwidth-bound, so it cannot pin how much of the tensor-core
peak an attention kernel reaches; prefill attention over long prompts is compute-bound and does. This
campaign times torch SDPA with is_causal=True (bf16, head dim 128) through each backend that runs it
(cuDNN, FlashAttention-2, memory-efficient), for GQA (32 query / 8 KV heads, enable_gqa) and MHA (32 / 32),
batch 1 and 4, prompts of 1K-32K tokens. It changes no clock or GPU setting.

Writes DIR/prefill_attn_<device-slug>_<date>.csv: backend, batch, heads, kv_heads, head_dim, seq, the
causal flops (4 * B * Hq * d * P (P + 1) / 2, the count simulator/strategies/dense.py prices), the bytes
(Q, K, V read once, O written once) and median / p20 / p80 GPU time per call (CUDA events around 10
back-to-back calls after warm-up, 7 samples). `sparsesim calibrate fit-prefill CSV --device NAME` reads it.
"""
from __future__ import annotations

import argparse
import datetime as dt
import statistics

from harness import driver_version, write_rows

SCRIPT_VERSION = 1
COLUMNS = ["device", "sm_count", "torch_version", "cuda_version", "driver_version", "date", "script_version",
           "backend", "batch", "heads", "kv_heads", "head_dim", "seq", "flops", "bytes_moved", "median_us",
           "p20_us", "p80_us", "repeats", "achieved_tflops", "note"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)

    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(0)
    drv = driver_version()
    env = {"device": props.name, "sm_count": props.multi_processor_count, "torch_version": torch.__version__,
           "cuda_version": torch.version.cuda, "driver_version": drv, "date": dt.date.today().isoformat(),
           "script_version": SCRIPT_VERSION}
    backends = [("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION),
                ("efficient", SDPBackend.EFFICIENT_ATTENTION)]
    D = 128
    seqs = [1024, 2048, 4096, 8192, 16384, 32768] if not args.quick else [2048, 8192]
    cfgs = [(1, 32, 8), (1, 32, 32), (4, 32, 8)] if not args.quick else [(1, 32, 8)]
    gen = torch.Generator(device=dev)
    gen.manual_seed(0)
    rows = []
    for B, hq, hkv in cfgs:
        for P in seqs:
            if B * P > 65536:
                continue
            q = torch.randn((B, hq, P, D), device=dev, dtype=torch.bfloat16, generator=gen)
            k = torch.randn((B, hkv, P, D), device=dev, dtype=torch.bfloat16, generator=gen)
            v = torch.randn((B, hkv, P, D), device=dev, dtype=torch.bfloat16, generator=gen)
            gqa = hq != hkv
            flops = 4.0 * B * hq * D * P * (P + 1) / 2.0
            nbytes = 2.0 * (2 * B * hq * P * D + 2 * B * hkv * P * D)
            for name, be in backends:
                def call():
                    with sdpa_kernel([be]):
                        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)
                try:
                    call()
                    torch.cuda.synchronize()
                except Exception as ex:  # noqa: BLE001 - a backend that cannot run this shape
                    rows.append({**env, "backend": name, "batch": B, "heads": hq, "kv_heads": hkv, "head_dim": D,
                                 "seq": P, "note": f"unavailable: {type(ex).__name__}: {str(ex)[:100]}"})
                    continue
                for _ in range(3):
                    call()
                samples = []
                for _ in range(7):
                    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    a.record()
                    for _ in range(10):
                        call()
                    b.record()
                    b.synchronize()
                    samples.append(a.elapsed_time(b) * 1e3 / 10)
                samples.sort()
                med = statistics.median(samples)
                q5 = statistics.quantiles(samples, n=5)
                rows.append({**env, "backend": name, "batch": B, "heads": hq, "kv_heads": hkv, "head_dim": D, "seq": P,
                             "flops": flops, "bytes_moved": nbytes, "median_us": med, "p20_us": q5[0],
                             "p80_us": q5[3], "repeats": 7, "achieved_tflops": flops / med / 1e6,
                             "note": "is_causal=True" + (", enable_gqa" if gqa else "")})
                print(f"{name:9s} B={B} {hq}/{hkv} P={P:6d} {med:10.1f} us {flops / med / 1e6:7.1f} TFLOP/s",
                      flush=True)
            del q, k, v
    write_rows(args.out, "prefill_attn", env["device"], env["date"], COLUMNS, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
