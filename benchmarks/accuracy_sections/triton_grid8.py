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
import pandas as pd

from hwmodels import datafiles as DF
from simulator.calibration.scoreboard import BOARD, models_table

PRED = "triton_decode_blind8_predictions.csv"
GLOB = "triton_decode_blind8_nvidia-*.csv"
KEYS = ["model", "dtype", "batch", "q_rows", "context", "row_role"]
LABELS = ("main", "new", "v1")
#: the model the family ships (judged on this grid: see docs/KNOWN_GAPS.md): its rows carry the STANDING markers
SHIPPED = "new"
COLD_STANDING = "triton_vllm, cold (engine state)"


def blind8_regime(df: pd.DataFrame) -> np.ndarray:
    """The eighth grid's regimes, named before the measurement: 'lone 2D' (one sequence, q >= 2), 'short decode'
    (q 1, context <= 512), 'verify' (q >= 2 of 2-16 sequences, context <= 700), else 'control'."""
    q, b, t = (df[c].to_numpy(float) for c in ("q_rows", "batch", "context"))
    return np.where((b == 1) & (q > 1), "lone 2D", np.where((q == 1) & (t <= 512), "short decode",
                    np.where((q > 1) & (t <= 700), "verify", "control")))


def load(data_dir: Path) -> pd.DataFrame:
    """The measured rows joined with the committed prices (<label>_err_pct), with regime labels; empty when either is
    missing."""
    fs = sorted(p for p in DF.glob(Path(data_dir), GLOB) if "_grids" not in p.name and "smi" not in p.name)
    pf = DF.resolve(Path(data_dir) / PRED)
    if not fs or not pf.is_file():
        return pd.DataFrame()
    m = pd.read_csv(fs[-1])
    probe = m[m["row_role"] == "probe"]
    m = m[np.isfinite(pd.to_numeric(m["median_us"], errors="coerce")) & (m["row_role"] != "probe")]
    p = pd.read_csv(pf)
    b = m.merge(p[KEYS + [f"pred_{x}_us" for x in ("base", "new", "v1")] + ["base_commit", "model_commit", "v1_commit"]],
                on=KEYS, how="inner")
    b["main_err_pct"] = (b["pred_base_us"] / b["median_us"] - 1.0) * 100.0
    for lab in ("new", "v1"):
        b[f"{lab}_err_pct"] = (b[f"pred_{lab}_us"] / b["median_us"] - 1.0) * 100.0
    b["regime"] = blind8_regime(b)
    b.attrs["file"] = fs[-1].name
    b.attrs["probe"] = (f"{float(probe['median_us'].iloc[0]):.2f} us per call; {probe['note'].iloc[0]}"
                        if len(probe) else "")
    return b


def section(data_dir: Path, fmt: dict) -> None:
    """Print blind grid 8's tables and add its board rows."""
    b = load(data_dir)
    if not len(b):
        return
    c0 = b.iloc[0]
    blind = b[b["row_role"] == "blind"].reset_index(drop=True)
    print(f"\nBLIND 8 ({b.attrs['file']}: {len(blind)} triton_vllm shapes in none of the committed rows: lone 2D programs "
          "of one sequence, short decode at batch 1-64, verification q 2-6, controls; prices committed before the "
          f"measurement ({PRED}): main = main's model ({str(c0['base_commit'])[:7]}), new = "
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
