"""How many (hardware, model, batch, context) settings sparsesim prices per second on one core.

Target (issue 2): >= 100,000 settings/s. Each setting gets the full result row: decode step time, TPOT,
throughput, TTFT (a prefill pricing), KV bytes and maximum batch.

    python benchmarks/price_speed.py [--batches 64] [--contexts 24] [--repeat 3]
"""
from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from hwmodels.spec import list_hardware, load_hardware  # noqa: E402
from simulator.combo import make_combo  # noqa: E402
from simulator.model import list_models, load_model  # noqa: E402
from simulator.pricing import price_combo  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=64, help="batch sizes 1..N per combo")
    ap.add_argument("--contexts", type=int, default=24, help="contexts per combo, log-spaced 1K..model max")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    hws = [load_hardware(n) for n in list_hardware()]
    models = [load_model(n) for n in list_models()]
    combos = [make_combo(h, m) for h in hws for m in models]
    grids = {}
    for m in models:
        ctx = np.unique(np.geomspace(1024, m.max_context, args.contexts).astype(int))
        b, c = np.meshgrid(np.arange(1, args.batches + 1), ctx, indexing="ij")
        grids[m.name] = (b.ravel().astype(float), c.ravel().astype(float))
    n_settings = sum(len(grids[c.model.name][0]) for c in combos)
    best = float("inf")
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        for c in combos:
            b, ctx = grids[c.model.name]
            price_combo(c, b, ctx, np.full_like(b, 128.0))
        best = min(best, time.perf_counter() - t0)
    print(f"hardware specs: {len(hws)}, models: {len(models)}, strategy tuples: {len(combos)}")
    print(f"settings priced per pass: {n_settings:,} (full rows: step, TPOT, tokens/s, TTFT, KV, max batch)")
    print(f"best of {args.repeat} passes: {best:.3f} s  ->  {n_settings / best:,.0f} settings/s on one core "
          f"(target >= 100,000)")


if __name__ == "__main__":
    main()
