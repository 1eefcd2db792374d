"""vLLM's Triton unified attention, blind grid 8 (lab/kernels/triton_decode_blind8.py): lone 2D programs of one
sequence, short decode at batch 1-64, verification q 2-6, controls, each timed warm by the family's harness (row_role
"blind"), in the engine's state (the L2 flushed before every call: "cold") and, but the controls, with only the K/V cold
("kvcold": K/V copies over >= 128 MiB, the metadata, block table and code warm). Prices committed before the
measurement (triton_decode_blind8_predictions.csv): main = main's model (its engine price, no K/V in the L2, for cold
and kvcold rows), new = the engine's state (triton_vllm engine=True) and the harness's hot tiles saved per tile
(Launch.saved_loads), v1 = new without the launch's cold code / parameter loads. Regime goal: median <= 10 %,
p90 <= 25 %."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from simulator.calibration import fit_production_attention as FP
from simulator.calibration.scoreboard import BOARD, models_table

KEYS = FP.TD_BLIND8_KEYS
LABELS = ("main", "new", "v1")
#: the model the family ships (judged on this grid: see docs/KNOWN_GAPS.md): its rows carry the STANDING markers
SHIPPED = "new"
COLD_STANDING = "triton_vllm, cold (engine state)"


def section(data_dir: Path, fmt: dict) -> None:
    """Print blind grid 8's tables and add its board rows."""
    b = FP.load_triton_decode_blind8(data_dir)
    if not len(b):
        return
    c0 = b.iloc[0]
    blind = b[b["row_role"] == "blind"].reset_index(drop=True)
    print(f"\nBLIND 8 ({b.attrs['file']}: {len(blind)} triton_vllm shapes in none of the committed rows: lone 2D programs "
          "of one sequence, short decode at batch 1-64, verification q 2-6, controls; prices committed before the "
          f"measurement ({FP.TD_BLIND8_PRED}): main = main's model ({str(c0['base_commit'])[:7]}), new = "
          f"{str(c0['model_commit'])[:7]} (the engine's state; the harness's hot K/V tiles saved per tile), v1 = "
          f"{str(c0['v1_commit'])[:7]} (new without the launch's cold code / parameter loads). Warm (the harness):")
    t = models_table(blind, ("regime",), ("main", "new"), ("main", "new"))
    print(t.round(1).to_string(**fmt))
    from .triton import vllm_blind_lines

    vllm_blind_lines(blind, t, ("main", "new"), 8, shipped=SHIPPED)
    cold = b[b["row_role"] == "cold"].reset_index(drop=True)
    if len(cold):
        print("the same shapes in the engine's state (the L2 flushed before every call: (flush + call) - flush); main "
              "prices them with no K/V in the L2 (its engine price), new / v1 in the engine's state (triton_vllm "
              "engine=True):")
        tc = models_table(cold, ("regime",), LABELS, LABELS)
        print(tc.round(1).to_string(**fmt))
        for lab in LABELS:
            e = cold[f"{lab}_err_pct"]
            met = int((tc[lab + "_goal"] == "met").sum())
            BOARD.add("triton_vllm", "blind", f"Triton decode blind grid 8, cold (engine state), {lab} model's "
                      "committed prices", e, met, len(tc), standing=lab == SHIPPED and COLD_STANDING)
            print(f"triton_vllm blind 8 cold, {lab}: median |error| {np.median(e.abs()):.1f} %, p90 "
                  f"{np.percentile(e.abs(), 90):.1f} %, signed {np.median(e):+.1f} %; regimes met {met} of {len(tc)}")
    kvc = b[b["row_role"] == "kvcold"].reset_index(drop=True)
    if len(kvc):
        print("the same shapes with only the K/V cold (copies over >= 128 MiB; metadata, block table and code warm; "
              "diagnosis: main and new price them alike, no K/V in the L2 and the rest warm):")
        print(models_table(kvc, ("regime",), ("new",), ("new",)).round(1).to_string(**fmt))
    w = blind.set_index(KEYS[:-1])["median_us"]
    for role, x in (("cold", cold), ("kvcold", kvc)):
        if not len(x):
            continue
        r = (x.set_index(KEYS[:-1])["median_us"] / w).dropna()
        d = (x.set_index(KEYS[:-1])["median_us"] - w).dropna()
        print(f"{role} / harness time: median {r.median():.3f} (min {r.min():.3f}, max {r.max():.3f}); {role} - harness:"
              f" median {d.median():.2f} us over {len(r)} shapes")
    if b.attrs["probe"]:
        print(f"probe, a tiny elementwise kernel (an add on 256 floats) alone: {b.attrs['probe']} (diagnosis)")
