"""The fourteenth xqa blind grid (lab/kernels/measure_xqa_attention.py --grid x14, one device call,
lab/kernels/run_xqa_x14_device.sh): the bf16 (mha.cu) middle at 48-160 CTAs (Llama-3.1-8B heads, batch 6-20, 1K-8.5K
tokens, q 1 / 2): one partial wave of 72-104 CTAs, 112-128 CTAs, 48-64 unsplit CTAs (the launcher handed 1 SM) and two
waves of 136-160 CTAs, with bf16 controls and a few fp8 rows. Prices committed before the call
(xqa_x14_predictions.csv): base = main's model (8c86417); new = the candidate XQA_LATE (simulator/kernels/xqa.py: under
programmatic dependent launch the next call's CTAs take the SMs a one-partial-wave launch leaves idle, and the rest, when
it holds more than half the SMs, start late; XQA_LATE_LOADS 18.01 dependent loads x min(1, 54.9 / CTAs), fitted only on
the tenth to twelfth grids' bf16 PDL-on rows, looked-at). SHIPPED: new (5 of 6 regimes, 3.1 / 11.7 %; main's 4 of 6,
7.8 / 16.4 %). The regime is the row's role x K/V dtype."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from simulator.calibration import fit_production_attention as FP
from simulator.calibration.scoreboard import BOARD, models_table, pooled_lines

LABELS = ("base", "new")
#: each row role's regime name (measure_xqa_attention.X14_ROWS)
ROLES = {"mid72": "middle, one partial wave of 72-104 CTAs", "mid112": "middle, 112-128 CTAs",
         "mid48": "middle, 48-64 unsplit CTAs", "mid136": "middle, two waves of 136-160 CTAs",
         "control": "controls", "fp8": "fp8 rows (GMMA)"}
#: the model shipped on this grid: "base" (main's, XQA_LATE off) or "new" (the candidate, XQA_LATE on)
SHIPPED = "new"
#: what the fourteenth grid shows where its regimes miss (printed while they miss)
X14_DIAGNOSIS = (
    "bf16 launches of two waves (136-160 CTAs: a full wave and 4-28 CTAs) run 9-16 % longer than both models price (the "
    "rule prices late CTAs only in one partial wave; the eleventh grid's 136-CTA scan rows -12..-18 % too); below half "
    "the SMs (48-64 unsplit CTAs) the extra time is there as well at short chains (batch 7 at 1800 tokens -18.8 %), "
    "against the rule's cut-off at SMs / 2; q 2 rows stay -5..-8 %")


def load_x14(data_dir: Path = FP.DATA_DIR) -> pd.DataFrame:
    """The fourteenth grid's measured rows joined with the committed prices (FP.load_xqa_x14): base / new errors in %,
    regime = role x K/V dtype; empty when either file is missing."""
    out = FP.load_xqa_x14(data_dir)
    if not len(out):
        return out
    out["regime"] = [f"{ROLES.get(r, r)}, {d}" if r != "fp8" else ROLES[r] for r, d in zip(out["role"], out["dtype"])]
    return out


def xqa_x14(fmt: dict) -> None:
    """Print the fourteenth grid's table (per regime, per model); add base (main's) and new (the candidate) to the board,
    the shipped one's bf16 rows (the STANDING line of mha.cu is the fifteenth grid's since)."""
    b = load_x14()
    if not len(b):
        return
    print(f"BLIND fourteenth xqa grid ({b.attrs['file']}: {len(b)} page-16 shapes in no earlier grid, priced before the "
          "call, xqa_x14_predictions.csv): base = the model at "
          f"{str(b['base_commit'].iloc[0])[:7]} (main); new = the model at {str(b['model_commit'].iloc[0])[:7]} with "
          "XQA_LATE on (mha.cu's late CTAs under PDL, 18.01 loads x min(1, 54.9 / CTAs) on a one-partial-wave launch of "
          f"more CTAs than half the SMs; fitted only on the tenth to twelfth grids' bf16 rows, looked-at); SHIPPED: {SHIPPED}")
    t = models_table(b, ("regime",), LABELS, LABELS)
    print(t.to_string(**fmt))
    pooled_lines(b, t, LABELS, "xqa fourteenth blind grid")
    names = {"base": "main's model (committed prices)", "new": "the candidate XQA_LATE (committed prices)"}
    for lab in LABELS:
        BOARD.add("xqa", "blind", f"xqa fourteenth blind grid, {names[lab]}" + (" (shipped)" if lab == SHIPPED else
                                                                                 " (not shipped)"),
                  b[f"{lab}_err_pct"], int((t[f"{lab}_goal"] == "met").sum()), len(t))
    bf = (b["dtype"] == "bf16").to_numpy()
    tb = t[t["regime"].str.endswith(", bf16")]
    BOARD.add("xqa", "blind", "xqa fourteenth blind grid, bf16 rows, the shipped model", b.loc[bf, f"{SHIPPED}_err_pct"],
              int((tb[f"{SHIPPED}_goal"] == "met").sum()), len(tb))   # STANDING: the fifteenth grid (xqa_grid15)
    if (t[f"{SHIPPED}_goal"] == "MISSED").any():
        print(f"  missed: xqa (fourteenth blind grid): {X14_DIAGNOSIS}")
    cols = ["model", "dtype", "q_rows", "batch", "context", "split_sms", "role", "median_us", "pred_base_us",
            "pred_new_us", "base_err_pct", "new_err_pct"]
    print("fourteenth xqa grid, every row:")
    print(b[cols].to_string(**fmt))
