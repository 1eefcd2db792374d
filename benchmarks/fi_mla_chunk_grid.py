"""The engine's chunk surface for FlashInfer's MLA families (SGLang's flashinfer_mla backend, `kernel: fi_mla`) against
the exact price: the surface prices a prefill chunk over a cached prefix at every length up to 64 tokens and on a 2 %
geometric grid of lengths above (StrategyBase.chunk_grid_ratio: MLAPlan's causal greedy is replayed per shape, too slow
at every length), its prefixes refined to at most 160 points, linear between. Prints the set-up time of the engine's
cost model and the surface's |error| against simulator/kernels/flashinfer.py fi_mla_extend priced exactly at random
(chunk, prefix) pairs, for DeepSeek-V3 on 8 x H200 (16 heads a device) and under attention DP (128 heads).

    python benchmarks/fi_mla_chunk_grid.py
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simulator.combo import make_combo  # noqa: E402
from simulator.engine.sim import _cost_model  # noqa: E402
from simulator.strategies.base import parse_axis  # noqa: E402


def main() -> None:
    rng = np.random.default_rng(0)
    for tp, dp in ((8, 1), (8, 8)):
        att = parse_axis("attention", [{"dense": {"kernel": "fi_mla", "page_size": 1}}])[0]
        combo = make_combo("H200", "DeepSeek-V3", attention=att, tp=tp, attn_dp=dp)
        t0 = time.perf_counter()
        cost = _cost_model(combo, 8192, 64, "graph")
        setup = time.perf_counter() - t0
        c = rng.integers(1, 8193, 400).astype(float)
        o = rng.integers(0, 100_000, 400).astype(float)
        surf = np.array([cost.chunk_s(int(ci), int(oi)) for ci, oi in zip(c, o)])
        exact = cost.price_chunk_attention(c, o)
        err = np.abs(surf / exact - 1.0) * 100.0
        on_grid = np.isin(o, cost.o_grid)
        print(f"DeepSeek-V3 TP{tp} attention DP{dp}: cost model set up in {setup:.1f} s ({len(cost.o_grid)} prefix "
              f"points); chunk surface vs exact at 400 random (chunk 1-8192, prefix 0-100K): |error| median "
              f"{np.median(err):.2f} %, p90 {np.percentile(err, 90):.2f} %, max {err.max():.2f} % "
              f"({int(on_grid.sum())} on the prefix grid)")


if __name__ == "__main__":
    main()
