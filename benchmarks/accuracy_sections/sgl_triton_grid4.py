"""SGLang's Triton decode kernel (sgl_triton), blind grid 4 (lab/kernels/sgl_triton_blind4.py): 44 shapes in none of
the committed rows (bf16 long contexts at batch 1-40, bf16 middle contexts at batch 2-320, fp8 short contexts at batch
6-600, controls; heads 32/8, 64/8, 28/4) and 6 diagnosis rows (lone programs of four head layouts), measured in one
device call. Prices committed before the measurement (sgl_triton_blind4_predictions.csv): base = main's model, new =
the bf16 kind's K/V stream at attn_fa2's measured rate and the stage-1 / stage-2 constants at 0, refitted on the
family's fit rows (fit_production_attention SGL_MEMORY_FROM, SGL_FIXED_ZERO). Regime goal: median <= 10 %, p90 <= 25 %."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from hwmodels import datafiles as DF
from simulator.calibration import fit_production_attention as FP
from simulator.calibration.scoreboard import BOARD, models_table

PRED = "sgl_triton_blind4_predictions.csv"
GLOB = "sgl_triton_blind4_nvidia*.csv"
KEYS = ("family", "model", "dtype", "heads", "kv_heads", "head_dim", "batch", "q_rows", "context", "page_size", "row_role")
#: the model the product ships for this family, and so the grid's STANDING row ("base" = main's model, "new")
SHIPPED = "new"
#: what the grid shows where its regimes miss under the shipped model (printed while they miss)
DIAGNOSIS = ("see docs/KNOWN_GAPS.md, SGLang's Triton decode kernel")


def _measured(data_dir: Path, glob: str = GLOB) -> pd.DataFrame:
    """The newest measured file of `glob`; with its repeat (the same rows timed again in the same call, the file's stem
    + "_repeat" after the grid's name) each row's time is the smaller of the two medians (the rule of the fa3 family's
    repeat, fit_production_attention.load_fa3: interference only adds time; first_us keeps the first run's median)."""
    fs = sorted(p for p in DF.glob(Path(data_dir), glob) if "_grids" not in p.name and "smi" not in p.name
                and "_repeat" not in p.name)
    if not fs:
        return pd.DataFrame()
    d = FP.load(fs[-1])
    d["first_us"] = d["median_us"]
    rep = DF.resolve(fs[-1].with_name(DF.name(fs[-1]).replace("_nvidia", "_repeat_nvidia", 1)))
    if rep.is_file():
        r = FP.load(rep)
        k = ["model", "dtype", "batch", "context", "row_role"]
        d = d.merge(r[k + ["median_us"]].rename(columns={"median_us": "repeat_us"}), on=k, how="left")
        d["median_us"] = np.fmin(d["median_us"], d["repeat_us"])
    d.attrs["file"] = fs[-1].name
    return d


def load(data_dir: Path = FP.DATA_DIR) -> pd.DataFrame:
    """The measured rows (blind and diagnosis) joined with both committed prices (base_err_pct, new_err_pct), with
    regime labels; empty when either is missing."""
    m = _measured(data_dir)
    pf = DF.resolve(Path(data_dir) / PRED)
    if not len(m) or not pf.is_file():
        return pd.DataFrame()
    out = FP.join_prices(m, pd.read_csv(pf), list(KEYS), FP.BLIND_ERRORS, ("model_commit", "base_commit"))
    out.attrs["file"] = m.attrs["file"]
    return out


def section(data_dir: Path, fmt: dict) -> None:
    """Print blind grid 4's regime table, the diagnosis rows, and add the board rows (the shipped model's row is the
    family's STANDING)."""
    b = load(data_dir)
    if not len(b):
        return
    blind = b[b["row_role"] == "blind"].reset_index(drop=True)
    print(f"\nSGL_TRITON BLIND 4 ({b.attrs['file']}: {len(blind)} sgl_triton shapes in none of the committed rows: bf16 "
          "long contexts at batch 1-40, bf16 middle at batch 2-320, fp8 short at batch 6-600, controls; heads 32/8, "
          f"64/8, 28/4), prices committed before the measurement ({PRED}): base = main's model "
          f"({str(b['base_commit'].iloc[0])[:7]}), new = {str(b['model_commit'].iloc[0])[:7]} (the bf16 kind's K/V "
          "stream at attn_fa2's measured rate, stage-1 / stage-2 constants 0, refitted on the fit rows)")
    by = ("kv", "ctx_regime", "batch_regime")
    t = models_table(blind, by, ("base", "new"), ("base", "new"))
    print(t.round(1).to_string(**fmt))
    for lab in ("base", "new"):
        e = blind[f"{lab}_err_pct"]
        met = int((t[lab + "_goal"] == "met").sum())
        name = {"base": "main's model", "new": "the new model"}[lab]
        BOARD.add("sgl_triton", "blind", f"sgl_triton blind grid 4, {name}'s committed prices", e, met, len(t),
                  standing=lab == SHIPPED)
        print(f"sgl_triton blind 4, {lab}: median |error| {np.median(e.abs()):.1f} %, p90 "
              f"{np.percentile(e.abs(), 90):.1f} %, signed {np.median(e):+.1f} %; regimes met {met} of {len(t)}")
    if (t[SHIPPED + "_goal"] == "MISSED").any():
        print(f"  missed (sgl_triton blind 4): {DIAGNOSIS}")
    d = b[b["row_role"] == "diagnosis"].reset_index(drop=True)
    if len(d):
        d = d.assign(G=d["heads"] / d["kv_heads"], us_per_tile=d["median_us"] / np.ceil(d["context"] / 8.0 / 32.0))
        print("diagnosis (not blind, not fitted): lone programs, batch 2, context 65536 (8 splits of 256 32-key tiles, "
              "at most one program per SM), by head layout; us_per_tile = median / 256:")
        print(d[["model", "heads", "kv_heads", "G", "dtype", "median_us", "us_per_tile", "base_err_pct",
                 "new_err_pct"]].round(2).to_string(**fmt))
