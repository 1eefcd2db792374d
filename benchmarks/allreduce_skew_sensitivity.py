"""How much a decode step's price hinges on the all-reduce timing assumption (prints a table; CPU only, a few seconds).

The engines' all-reduce terms are judged on back-to-back kernel times (protocol B: 21 replays x 40 calls,
simulator/calibration/engine_allreduce_grid21.py), which carry the timing harness's rank skew spread over 40 calls:
about 0.8 us a call (s = 31-36 us a replay / 40). Protocol A (10 calls above 1 MiB) carried about 3 us. A serving step's
all-reduce waits out whatever skew the ranks bring to it (their compute since the previous collective, host launch
jitter); that skew was never measured inside a serving step. This script prices one decode step of tensor-parallel
models with the engines' own all-reduce and adds a per-call wait `delta` to every all-reduce to show what the step price
would move by:
    delta 0.8 us   the skew protocol B leaves in each measured call (the model's terms carry it)
    delta 3 us     protocol A's share above 1 MiB (the terms fitted before grid 22 carried about this)
    delta 10 us    an assumed serving-step skew (not measured; a third of a replay's skew on every call)
Measured since (simulator/calibration/allreduce_in_step.py, 4 x H200): an all-reduce after a row-parallel GEMM costs
0-2.7 us more than back to back (median 1.5 us on Llama-3.1-70B's shapes, 0.8 us on the blind 8B / 32B shapes), which the
H200 now prices as 0.0479 x sqrt(g - 1) x the preceding GEMM's memory time (engine_allreduce_rules.after_gemm_share,
the step-2 grid; its step_ms below includes it; the H100 has no such term).
Rows: model x TP x engine x device x batch at 4,096 tokens of context. Columns: the step's price (ms), its all-reduce
calls and their priced share, and the step's relative change for each delta.

Run: python benchmarks/allreduce_skew_sensitivity.py
"""
from __future__ import annotations

import numpy as np
import pandas as pd

DELTAS_US = (0.8, 3.0, 10.0)
CASES = (("Llama-3.1-70B", 4), ("Llama-3.1-70B", 8), ("Llama-3.1-8B", 2))
ENGINES = ("vllm-v1", "trtllm")
DEVICES = ("H100-SXM", "H200")
BATCHES = (1, 16, 64)
CONTEXT = 4096.0


def step_rows() -> pd.DataFrame:
    """One row per (model, TP, engine, device, batch): the decode step's priced time, its all-reduce calls and their time."""
    from hwmodels.roofline import price
    from hwmodels.spec import load_hardware
    from simulator.combo import make_combo
    from simulator.engine.runtime import load_profile
    from simulator.pricing import decode_ops

    rows = []
    for model, tp in CASES:
        for engine in ENGINES:
            prof = load_profile(engine)
            for dev in DEVICES:
                hw = load_hardware(dev)
                c = prof.apply_collectives(make_combo(dev, model, tp=tp, attention="dense"))
                batch = np.array(BATCHES, float)
                ops, _ = decode_ops(c, batch, np.full(len(batch), CONTEXT))
                t = np.asarray(price(ops, hw, launch="graph"), float)    # seconds per row, its count included
                names = np.asarray(ops.names)[ops.name_id].astype(str)
                ar = np.char.startswith(names, "allreduce")
                step = np.bincount(ops.setting, weights=t, minlength=ops.n_settings)
                n_ar = np.bincount(ops.setting, weights=np.where(ar, ops.count, 0.0), minlength=ops.n_settings)
                t_ar = np.bincount(ops.setting, weights=np.where(ar, t, 0.0), minlength=ops.n_settings)
                for i, b in enumerate(BATCHES):
                    rows.append({"model": model, "tp": tp, "engine": engine, "device": dev, "batch": b,
                                 "step_ms": 1e3 * step[i], "ar_calls": n_ar[i], "ar_share_%": 100 * t_ar[i] / step[i],
                                 **{f"+{d:g}us_%": 100 * n_ar[i] * d * 1e-6 / step[i] for d in DELTAS_US}})
    return pd.DataFrame(rows)


def main() -> None:
    t = step_rows()
    print(__doc__.split("\n\n")[0])
    with pd.option_context("display.width", 200):
        print(t.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    for d in DELTAS_US:
        c = t[f"+{d:g}us_%"]
        print(f"delta {d:g} us a call: the step moves by {c.min():.2f}-{c.max():.2f} % (median {c.median():.2f} %)")


if __name__ == "__main__":
    main()
