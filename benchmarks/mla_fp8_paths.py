"""What an fp8 MLA cache costs a DeepSeek-V3 decode step on Hopper in each engine's path, as the product prices it
(simulator/kernels/families.py, flashmla.py; measured on the H200: docs/KERNEL_FAMILIES.md):

  sglang fa3 (its default)   fa3_mla_fp8cast: the layer's WHOLE fp8 pool cast to bf16 every layer of every step, then
                             FA3's bf16 qv kernel (sglang flashattention_backend.py forward_decode); the pool is
                             SGLang's own (simulator/memory.py kv_pool_tokens under its kv_budget rule, the SGLang
                             profile's) unless pinned (--max-total-tokens)
  sglang flashinfer_mla      fi_mla_fp8cast: the same whole-pool cast, then FlashInfer's bf16 MLA kernel
                             (flashinfer_mla_backend.py, --attention-backend flashinfer; sglang#35322)
  sglang / vllm flashmla     FlashMLA's dense fp8 build (vLLM's FLASHMLA backend; SGLang's --attention-backend flashmla)
  flashinfer fp8 MLA         fi_mla at an fp8 cache: FlashInfer's own fp8 MLA kernel, no cast (what sglang#35322 proposes)
  bf16 cache                 fa3_mla over a bf16 cache (SGLang's and vLLM's default kernel; half the pool's tokens)

Prints the decode step (ms) of DeepSeek-V3 (fp8 weights) on 8 x H200 at TP8 per batch x context and path, the step
against the pool's size for one setting, and draws the latter (mla_fp8_paths.png beside this script, or --png PATH).
CPU only, a few seconds. The cast's price is judged on the fp8 pool grids (7.2 / 7.4 % blind) and on a third party's
step (sgl-project/sglang#35291: 0.226 ms a layer at a 131072-token pool on 8 x H200; priced 0.208).

    python benchmarks/mla_fp8_paths.py [--png PATH]
"""
from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from hwmodels.roofline import price
from simulator.combo import make_combo
from simulator.kernels.families import casts_pool
from simulator.memory import kv_pool_tokens
from simulator.pricing import decode_ops
from simulator.strategies.base import parse_axis

#: (label, kernel, page size, kv dtype, pinned pool tokens: 0 = the memory model's)
PATHS = (("sglang fa3 (default), SGLang's pool", "fa3_mla_fp8cast", 1, "fp8", 0),
         ("sglang fa3, --max-total-tokens 131072", "fa3_mla_fp8cast", 1, "fp8", 131072),
         ("sglang flashinfer_mla (--attention-backend flashinfer)", "fi_mla_fp8cast", 1, "fp8", 0),
         ("flashmla fp8 (vLLM; sglang --attention-backend flashmla)", "flashmla", 64, "fp8", 0),
         ("flashinfer's own fp8 MLA kernel (sglang#35322's proposal)", "fi_mla", 1, "fp8", 0),
         ("fa3_mla over a bf16 cache", "fa3_mla", 1, "bf16", 0))
BATCHES = (1, 32, 128)
CONTEXTS = (8192, 32768)


def combo(kernel: str, page: int, kv: str, pool: int):
    """The path's combo; SGLang's fa3 path sizes its pool by SGLang's rule (the SGLang profile's runtime.kv_budget)."""
    c = make_combo("H200", "DeepSeek-V3", kv_dtype=kv, tp=8, launch="graph", attention="dense", weight_dtype="fp8")
    if casts_pool(kernel):
        c = replace(c, kv_budget="sglang")
    return replace(c, attention=parse_axis("attention", [{"dense": {"kernel": kernel, "page_size": page,
                                                                    "pool_tokens": pool}}])[0])


def step_ms(c, batch: int, context: int) -> float:
    ops, _ = decode_ops(c, np.array([float(batch)]), np.array([float(context)]))
    return float(price(ops, c.hardware, "graph").sum()) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--png", type=Path, default=Path(__file__).with_name("mla_fp8_paths.png"))
    args = ap.parse_args()
    pool = float(kv_pool_tokens(combo("fa3_mla_fp8cast", 1, "fp8", 0)))
    rows = []
    for label, kernel, page, kv, pinned in PATHS:
        c = combo(kernel, page, kv, pinned)
        for b in BATCHES:
            for t in CONTEXTS:
                rows.append({"path": label, "batch": b, "context": t, "step_ms": step_ms(c, b, t)})
    tab = pd.DataFrame(rows).pivot_table(index="path", columns=["batch", "context"], values="step_ms", sort=False)
    vpool = float(kv_pool_tokens(make_combo("H200", "DeepSeek-V3", kv_dtype="fp8", tp=8, launch="graph",
                                            attention="dense", weight_dtype="fp8")))
    print(f"DeepSeek-V3 (fp8 weights) on 8 x H200, TP8: the decode step (ms) by path; SGLang's fp8 pool {pool:,.0f} "
          f"tokens a device (simulator/memory.py kv_budget_bytes, its mem_fraction_static rule; vLLM's rule would hold "
          f"{vpool:,.0f}; bf16: half)")
    print(tab.round(1).to_string())
    pools = np.array([16384, 32768, 65536, 131072, 262144, 524288, 1048576, pool])
    curve = {(f"{label.split(' (')[0]}, the pool pinned" if casts_pool(k) else label):
             [step_ms(combo(k, pg, kv, int(p) if casts_pool(k) else 0), 32, 8192) for p in pools]
             for label, k, pg, kv, pinned in PATHS if pinned == 0}
    print("\nthe step (ms) at batch 32 x 8K against the pool's size (tokens a device; only SGLang's fa3 and flashinfer_mla "
          "paths read it)")
    print(pd.DataFrame(curve, index=pools.astype(int)).round(1).to_string())
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    order = np.argsort(pools)
    styles = [("o", "-"), ("x", "--"), ("s", "-"), ("^", "--"), ("d", ":")]   # paths that coincide stay visible
    for (label, ys), (mk, ls) in zip(curve.items(), styles * 2):
        ax.plot(pools[order], np.asarray(ys)[order], marker=mk, ls=ls, label=label)
    top = max(max(ys) for ys in curve.values())
    ax.axvline(pool, color="grey", ls=":", lw=1)
    ax.text(pool, top, "SGLang's default pool ", fontsize=8, va="top", ha="right", color="grey")
    ax.axvline(131072, color="grey", ls="--", lw=0.8)
    ax.text(131072, top, " sglang#35291's pool", fontsize=8, va="top", color="grey")
    ax.set_xscale("log")
    ax.set_xlabel("KV pool a device (tokens)")
    ax.set_ylabel("decode step (ms), batch 32 x 8K")
    ax.set_title("DeepSeek-V3 on 8 x H200 (TP8): an fp8 MLA cache in each engine's path", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.png, dpi=110)
    print(f"\nwrote {args.png}")


if __name__ == "__main__":
    main()
