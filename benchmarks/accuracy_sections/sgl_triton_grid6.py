"""SGLang's Triton decode kernel (sgl_triton), blind grid 6 (lab/kernels/sgl_triton_blind6.py): 39 shapes in none of
the committed rows, measured in one device call and repeated in the same call as far as its budget went (28 rows; a
row's time the smaller of its two runs): bf16 long contexts at 2-4 programs per SM of GQA groups 2-8 (heads 32/16
Gemma-2-27B, 24/8 Llama-3.2-3B, 40/8 Qwen2.5-14B / 32B, 20/4 Qwen2.5-14B at TP 2, 12/2 Qwen2.5-1.5B, 28/4 Qwen2.5-7B,
56/8 Yi-34B, 32/8 Mistral-7B, 64/8 Llama-3.1-70B, 32/4 Yi-6B), bf16 middle contexts and fp8 of groups 2, 3, 5, 6, fp8
short contexts (<= 1024) at batch <= 6, controls. Prices committed before the measurement
(sgl_triton_blind6_predictions.csv): base = main's model, new = the lone chains of the group 2 / 3 / 5 / 6 binaries
(simulator/kernels/triton_engines.py SGL_ITER_BY_G) and the co-resident programs' issue hidden in the lone chain with
a knee against the HBM stream (hwmodels.roofline CHAIN_ISSUE_HIDDEN_P), both fitted on the sixth campaign's fit rows
(lab/kernels/sgl_triton_fit6.py, named before their call). Regimes: the grid's own labels (column `group`). Regime
goal: median <= 10 %, p90 <= 25 %."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from hwmodels import datafiles as DF
from simulator.calibration import fit_production_attention as FP
from simulator.calibration.scoreboard import BOARD, models_table

from .sgl_triton_grid4 import KEYS, _measured

PRED = "sgl_triton_blind6_predictions.csv"
GLOB = "sgl_triton_blind6_nvidia*.csv"
#: the label of the grid's prices that the product ships (its STANDING row: the shipped model's newest blind grid)
SHIPPED = "new"
#: what the grid shows where the shipped model still misses (printed while a regime misses)
DIAGNOSIS = (
    "bf16 long contexts at 2-4 programs per SM +5..+12 % (signed median +7 %): the knee's exponent was fitted on one "
    "binary's scan (group 4 at 65536 / 16384 tokens); fp8 short rows of the group 3 binary +15 %: its lone fp8 ratio "
    "(1.24, measured on a 256-tile chain) is applied to a 4-tile chain")


def load(data_dir: Path = FP.DATA_DIR) -> pd.DataFrame:
    """Grid 6's measured rows (the smaller of the call's two runs) joined with the prices committed before its call
    (base_err_pct, new_err_pct) and the grid's regime labels (`group`); empty when either is missing."""
    m = _measured(data_dir, GLOB)
    pf = DF.resolve(Path(data_dir) / PRED)
    if not len(m) or not pf.is_file():
        return pd.DataFrame()
    prices = pd.read_csv(pf)
    out = FP.join_prices(m, prices, list(KEYS), dict(FP.BLIND_ERRORS), ("model_commit", "base_commit", "group"))
    out.attrs["file"] = m.attrs["file"]
    return out


def section(data_dir: Path, fmt: dict) -> None:
    """Print blind grid 6's regime table (by the grid's regime labels and by GQA group) and add its board rows (the
    shipped model's row is the family's STANDING)."""
    b = load(data_dir)
    if not len(b):
        return
    print(f"\nSGL_TRITON BLIND 6 ({b.attrs['file']}: {len(b)} sgl_triton shapes in none of the committed rows: bf16 "
          "long contexts at 2-4 programs per SM of GQA groups 2-8, bf16 middle and fp8 of groups 2 / 3 / 5 / 6, fp8 "
          f"short at batch <= 6, controls), prices committed before the measurement ({PRED}): base = main's model "
          f"({str(b['base_commit'].iloc[0])[:7]}), new = {str(b['model_commit'].iloc[0])[:7]} (the group 2 / 3 / 5 / "
          "6 binaries' lone chains, SGL_ITER_BY_G; the co-resident programs' issue hidden in the lone chain with a knee "
          "against the HBM stream, CHAIN_ISSUE_HIDDEN_P; fitted on lab/kernels/sgl_triton_fit6.py's rows)")
    t = models_table(b, ("group",), ("base", "new"), ("base", "new"))
    print(t.round(1).to_string(**fmt))
    names = {"base": "main's model's committed prices", "new": "the shipped model's committed prices"}
    for lab in ("base", "new"):
        e = b[f"{lab}_err_pct"]
        met = int((t[lab + "_goal"] == "met").sum())
        BOARD.add("sgl_triton", "blind", f"sgl_triton blind grid 6, {names[lab]}", e, met, len(t),
                  standing=lab == SHIPPED)
        print(f"sgl_triton blind 6, {lab}: median |error| {np.median(e.abs()):.1f} %, p90 "
              f"{np.percentile(e.abs(), 90):.1f} %, signed {np.median(e):+.1f} %; regimes met {met} of {len(t)}")
    g = b.assign(G=(b["heads"] / b["kv_heads"]).astype(int))
    print("by GQA group (|error| median, signed median, n):")
    print(g.groupby("G").agg(n=("new_err_pct", "size"), base_med=("base_err_pct", lambda x: x.abs().median()),
                             base_sgn=("base_err_pct", "median"), new_med=("new_err_pct", lambda x: x.abs().median()),
                             new_sgn=("new_err_pct", "median")).round(1).to_string())
    if (t[SHIPPED + "_goal"] == "MISSED").any():
        print(f"  missed (sgl_triton blind 6): {DIAGNOSIS}")
    elif len(b):
        print(f"  still off (sgl_triton blind 6, every regime met): {DIAGNOSIS}")


