"""vLLM's Triton unified attention, blind grid 7 (lab/kernels/triton_decode_blind7.py): lone short programs,
verification q 2-6 of 1-6 sequences, controls, timed by the family's harness (row_role "blind"); the first 30 shapes
again with the L2 flushed before every call ("cold"); the graph-gap probe ("gap"). Prices committed before the
measurement (triton_decode_blind7_predictions.csv): main = main's model, new = the harness's K/V copies in the L2
(fit_production_attention tv_harness_kv_l2_hit) and the refit. Regime goal: median <= 10 %, p90 <= 25 %."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from hwmodels import datafiles as DF
from simulator.calibration.scoreboard import models_table

PRED = "triton_decode_blind7_predictions.csv"
GLOB = "triton_decode_blind7_nvidia-*.csv"
KEYS = ["model", "dtype", "batch", "q_rows", "context", "row_role"]


def blind7_regime(df: pd.DataFrame) -> np.ndarray:
    """The seventh grid's regimes, named before the measurement: 'lone B=1' (one sequence, context <= 2600),
    'verify B 2-6' (q 2-6, batch 2-6), else 'control' (batch >= 16, middle contexts)."""
    q, b, t = (df[c].to_numpy(float) for c in ("q_rows", "batch", "context"))
    return np.where((b == 1) & (t <= 2600), "lone B=1", np.where((q > 1) & (b <= 6), "verify B 2-6", "control"))


def load(data_dir: Path) -> pd.DataFrame:
    """The measured rows joined with the committed prices (main_err_pct, new_err_pct), with regime labels; empty when
    either is missing."""
    fs = sorted(p for p in DF.glob(Path(data_dir), GLOB) if "_grids" not in p.name and "smi" not in p.name)
    pf = DF.resolve(Path(data_dir) / PRED)
    if not fs or not pf.is_file():
        return pd.DataFrame()
    m = pd.read_csv(fs[-1])
    m = m[np.isfinite(pd.to_numeric(m["median_us"], errors="coerce"))]
    p = pd.read_csv(pf)
    b = m.merge(p[KEYS + ["pred_base_us", "pred_new_us", "base_commit", "model_commit"]], on=KEYS, how="inner")
    b["main_err_pct"] = (b["pred_base_us"] / b["median_us"] - 1.0) * 100.0
    b["new_err_pct"] = (b["pred_new_us"] / b["median_us"] - 1.0) * 100.0
    b["regime"] = blind7_regime(b)
    b.attrs["file"] = fs[-1].name
    return b


def section(data_dir: Path, fmt: dict) -> None:
    """Print blind grid 7's tables and add its board rows."""
    b = load(data_dir)
    if not len(b):
        return
    blind = b[b["row_role"] == "blind"].reset_index(drop=True)
    print(f"\nBLIND 7 ({b.attrs['file']}: {len(blind)} triton_vllm shapes in none of the committed rows: lone short "
          "programs of one sequence, verification q 2-6 of 1-6 sequences, controls; prices committed before the "
          f"measurement ({PRED}): main = main's model ({str(b['base_commit'].iloc[0])[:7]}), new = "
          f"{str(b['model_commit'].iloc[0])[:7]} (the harness's K/V copies in the L2, tv_harness_kv_l2_hit, chosen "
          "with earlier grids' rows seen; refit on the fit rows)")
    t = models_table(blind, ("regime",), ("main", "new"), ("main", "new"))
    print(t.round(1).to_string(**fmt))
    from .triton import vllm_blind_lines

    vllm_blind_lines(blind, t, ("main", "new"), 7)   # the STANDING marker: grid 8 (triton_grid8)
    cold = b[b["row_role"] == "cold"].reset_index(drop=True)
    if len(cold):
        print("the same shapes with the L2 flushed before every call (cold: (flush + call) - flush; an engine's layer "
              "finds its K/V in DRAM); main prices them as harness rows, new with no K/V in the L2 (diagnosis):")
        tc = models_table(cold, ("regime",), ("main", "new"), ("main", "new"))
        print(tc.round(1).to_string(**fmt))
        w = blind.set_index(KEYS[:-1])["median_us"]
        c = cold.set_index(KEYS[:-1])["median_us"]
        r = (c / w).dropna()
        print(f"cold / harness time: median {r.median():.3f}, min {r.min():.3f}, max {r.max():.3f} over {len(r)} shapes")
    g = b[b["row_role"] == "gap"]
    if len(g):
        g = g.assign(node_b2b=g["median_us"] - g["span_us"], node_mixed=g["mix_us"] - g["add_us"] - g["span_us"])
        print("graph gap probe (us per call): back to back (median_us), tiny add alone (add_us), alternating "
              "call + add (mix_us), the call's profiled span; node_b2b = median - span, node_mixed = mix - add - span")
        print(g[["model", "dtype", "batch", "q_rows", "context", "median_us", "add_us", "add_span_us", "mix_us",
                 "span_us", "node_b2b", "node_mixed"]].round(2).to_string(**fmt))
