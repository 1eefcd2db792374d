#!/usr/bin/env python3
"""Host time of torch SDPA calls by backend, for attention shapes new to the process vs already run.

The shape HF continuous batching's paged|sdpa decode passes: q [1, 32, Q, 128], k/v [1, 32, K, 128] (K/V repeated per
query head), a [1, 1, Q, K] additive bf16 mask. For each backend (cuDNN, efficient, math) and each K of a fresh list:
32 calls in a row with that shape (one per layer of a step), each call's host time (perf_counter around the call,
no sync inside), then the same 32 again ("seen"). Prints per backend: host us of call 1 / calls 2-32 on a new shape,
and of all 32 on a seen shape.
"""
import csv, os, sys, time
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

out = os.environ.get("OUT", "/tmp")
dev = "cuda"
H, D, Q = 32, 128, 1
rows = []
backends = [("cudnn", SDPBackend.CUDNN_ATTENTION), ("efficient", SDPBackend.EFFICIENT_ATTENTION), ("math", SDPBackend.MATH)]
q = torch.randn(1, H, Q, D, device=dev, dtype=torch.bfloat16)
base_k = 2048
for name, be in backends:
    for j in range(24):
        K = base_k + 1000 * (1 + [b[0] for b in backends].index(name)) + j   # distinct K per backend: new to the process
        k = torch.randn(1, H, K, D, device=dev, dtype=torch.bfloat16)
        v = torch.randn_like(k)
        m = torch.zeros(1, 1, Q, K, device=dev, dtype=torch.bfloat16)
        torch.cuda.synchronize()
        for rep, tag in ((0, "new"), (1, "seen")):
            for layer in range(32):
                t0 = time.perf_counter()
                with sdpa_kernel([be]):
                    o = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m)
                t1 = time.perf_counter()
                rows.append(dict(backend=name, K=K, pass_=tag, layer=layer, host_us=(t1 - t0) * 1e6))
            torch.cuda.synchronize()
with open(os.path.join(out, "cudnn_shape_probe_nvidia-h100-80gb-hbm3_2026-11-26.csv"), "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0]))
    w.writeheader(); w.writerows(rows)
import statistics as st
print(f"torch {torch.__version__}, cudnn {torch.backends.cudnn.version()}, {torch.cuda.get_device_name()}")
print("backend    new:call1_us  new:calls2-32_us  seen:all_us   (medians over 24 K values; K first seen = new)")
for name, _ in backends:
    r = [x for x in rows if x["backend"] == name]
    j = [x for x in r if x["K"] != r[0]["K"]] or r     # first K also pays backend warm-up: reported apart
    c1 = st.median(x["host_us"] for x in j if x["pass_"] == "new" and x["layer"] == 0)
    c2 = st.median(x["host_us"] for x in j if x["pass_"] == "new" and x["layer"] > 0)
    s = st.median(x["host_us"] for x in j if x["pass_"] == "seen")
    w0 = [x["host_us"] for x in r if x["K"] == r[0]["K"] and x["pass_"] == "new"][:2]
    print(f"{name:10s} {c1:12.1f} {c2:17.1f} {s:12.1f}   (first K ever: {w0[0]:.0f}, {w0[1]:.0f} us)")
