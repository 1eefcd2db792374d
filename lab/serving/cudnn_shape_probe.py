#!/usr/bin/env python3
"""Host time of torch SDPA calls by backend, for attention shapes new to the process vs already run.

    python lab/serving/cudnn_shape_probe.py        # on the GPU machine; CSV under $OUT (default /tmp)

The shape HF continuous batching's paged|sdpa decode passes: q [1, 32, Q=1, 128], k/v [1, 32, K, 128] (K/V repeated
per query head), a [1, 1, Q, K] additive bf16 mask. For each backend (cuDNN, efficient, math) and each of 24 K values
the process has not run: 32 calls in a row with that shape (one per layer of a step), each call's host time
(perf_counter around the call, no synchronization inside), then the same 32 again ("seen"). Prints per backend the
median host time of call 1 and of calls 2-32 on a new shape, and of all calls on a seen shape. The first K of each
backend also pays the backend's warm-up and is reported apart.
"""
import csv
import os
import statistics as st
import time

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

HEADS, HEAD_DIM, Q_ROWS, LAYERS, NEW_SHAPES, BASE_K = 32, 128, 1, 32, 24, 2048
BACKENDS = (("cudnn", SDPBackend.CUDNN_ATTENTION), ("efficient", SDPBackend.EFFICIENT_ATTENTION),
            ("math", SDPBackend.MATH))
CSV_NAME = "cudnn_shape_probe_nvidia-h100-80gb-hbm3_2026-11-26.csv"


def probe() -> list[dict]:
    rows = []
    q = torch.randn(1, HEADS, Q_ROWS, HEAD_DIM, device="cuda", dtype=torch.bfloat16)
    for b, (name, backend) in enumerate(BACKENDS):
        for j in range(NEW_SHAPES):
            K = BASE_K + 1000 * (1 + b) + j          # distinct K per backend: new to the process
            k = torch.randn(1, HEADS, K, HEAD_DIM, device="cuda", dtype=torch.bfloat16)
            v = torch.randn_like(k)
            mask = torch.zeros(1, 1, Q_ROWS, K, device="cuda", dtype=torch.bfloat16)
            torch.cuda.synchronize()
            for tag in ("new", "seen"):
                for layer in range(LAYERS):
                    t0 = time.perf_counter()
                    with sdpa_kernel([backend]):
                        torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
                    rows.append(dict(backend=name, K=K, pass_=tag, layer=layer,
                                     host_us=(time.perf_counter() - t0) * 1e6))
                torch.cuda.synchronize()
    return rows


def main() -> None:
    rows = probe()
    with open(os.path.join(os.environ.get("OUT", "/tmp"), CSV_NAME), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"torch {torch.__version__}, cudnn {torch.backends.cudnn.version()}, {torch.cuda.get_device_name()}")
    print("backend    new:call1_us  new:calls2-32_us  seen:all_us   (medians over 24 K values; K first seen = new)")
    for name, _ in BACKENDS:
        r = [x for x in rows if x["backend"] == name]
        later = [x for x in r if x["K"] != r[0]["K"]]
        c1 = st.median(x["host_us"] for x in later if x["pass_"] == "new" and x["layer"] == 0)
        c2 = st.median(x["host_us"] for x in later if x["pass_"] == "new" and x["layer"] > 0)
        seen = st.median(x["host_us"] for x in later if x["pass_"] == "seen")
        w0 = [x["host_us"] for x in r if x["K"] == r[0]["K"] and x["pass_"] == "new"][:2]
        print(f"{name:10s} {c1:12.1f} {c2:17.1f} {seen:12.1f}   (first K ever: {w0[0]:.0f}, {w0[1]:.0f} us)")


if __name__ == "__main__":
    main()
