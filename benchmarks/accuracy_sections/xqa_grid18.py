"""The eighteenth xqa blind grid (lab/kernels/measure_xqa_attention.py --grid x18, one device call,
lab/kernels/run_xqa_x18_device.sh): mha.cu's verification build (q 2, 32 rows per CTA) BELOW HALF THE SMs (8-64 unsplit
CTAs, the launcher handed 1 SM) over 1-40 tiles against q 1 twins at the same CTAs and tiles, and q 2 controls at 104-144
CTAs. Prices committed before the call (xqa_x18_predictions.csv, commit 2aa985e): base = main's model (f9af03b:
XQA_SPEC_TILE_SHARE 0.0481); new = the candidate simulator.kernels.xqa.XQA_SPEC_STREAM_SHARE 0.246 (the verification
build's per-SM stream time x 1.246, XQA_SPEC_TILE_SHARE 0), fitted only on the 44 looked-at bf16 q 2 chain rows of grids
10-17. SHIPPED: new (4 of 4 regimes against 3, pooled 6.1 / 11.3 % against 6.2 / 16.6 %). The regime is the row's role."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from simulator.calibration import fit_production_attention as FP
from simulator.calibration.scoreboard import BOARD, models_table, pooled_lines

LABELS = ("base", "new")
#: each row role's regime name (measure_xqa_attention.X18_ROWS)
ROLES = {"q2_half": "q 2 below half the SMs: 8-64 CTAs, 2-40 tiles", "q2_one": "q 2 one tile: 32-60 CTAs",
         "q1": "q 1 twins (same CTAs and tiles)", "control": "controls: q 2 at 104-144 CTAs"}
#: the model shipped on this grid: "base" (main's, XQA_SPEC_TILE_SHARE 0.0481) or "new" (the candidate)
SHIPPED = "new"
#: what the eighteenth grid shows where its regimes miss (printed while they miss)
X18_DIAGNOSIS = (
    "the q 2 / q 1 twins measure 1.18-1.28 at 8-64 CTAs over 1-40 tiles (the premium is per tile, whatever the chain's "
    "length, and the one-tile rows show it too: 1.24-1.28); one row, 48 CTAs of 5 tiles (T 1250, B 6), measured 1.68 "
    "(31.9 us, p20 / p80 30.2 / 33.1 us against its twin's tight 19.1 us): both models miss it by -33..-38 %. The 56-CTA "
    "two-tile row (T 340) -24 % under both: the short chain's fixed part, where the q 1 twin also runs -19 %")


def load_x18(data_dir: Path = FP.DATA_DIR) -> pd.DataFrame:
    """The eighteenth grid's measured rows joined with the committed prices (FP.load_xqa_x18): base / new errors in %,
    regime = the role's name; empty when either file is missing."""
    out = FP.load_xqa_x18(data_dir)
    if not len(out):
        return out
    out["regime"] = [ROLES.get(r, r) for r in out["role"]]
    return out


def xqa_x18(fmt: dict) -> None:
    """Print the eighteenth grid's table (per regime, per model), every row; add base (main's) and new (the candidate) to
    the board, the shipped one's rows as the STANDING line of the family's bf16 kernel (mha.cu)."""
    b = load_x18()
    if not len(b):
        return
    print(f"BLIND eighteenth xqa grid ({b.attrs['file']}: {len(b)} page-16 shapes in no earlier grid, priced before the "
          "call, xqa_x18_predictions.csv): base = the model at "
          f"{str(b['base_commit'].iloc[0])[:7]} (main, XQA_SPEC_TILE_SHARE 0.0481); new = the model at "
          f"{str(b['model_commit'].iloc[0])[:7]} with XQA_SPEC_STREAM_SHARE 0.246 (mha.cu verification's per-SM stream "
          "time x 1.246, the tile share 0), fitted only on 44 looked-at bf16 q 2 rows of grids 10-17; SHIPPED: "
          f"{SHIPPED}")
    t = models_table(b, ("regime",), LABELS, LABELS)
    print(t.to_string(**fmt))
    pooled_lines(b, t, LABELS, "xqa eighteenth blind grid")
    names = {"base": "main's model (committed prices)", "new": "the candidate XQA_SPEC_STREAM_SHARE (committed prices)"}
    for lab in LABELS:
        BOARD.add("xqa", "blind", f"xqa eighteenth blind grid, {names[lab]}" + (" (shipped)" if lab == SHIPPED else
                                                                                 " (not shipped)"),
                  b[f"{lab}_err_pct"], int((t[f"{lab}_goal"] == "met").sum()), len(t))
    BOARD.add("xqa", "blind", "xqa eighteenth blind grid, bf16 rows, the shipped model", b[f"{SHIPPED}_err_pct"],
              int((t[f"{SHIPPED}_goal"] == "met").sum()), len(t), standing="xqa, bf16 K/V (mha.cu)")
    if (t[f"{SHIPPED}_goal"] == "MISSED").any():
        print(f"  missed: xqa (eighteenth blind grid): {X18_DIAGNOSIS}")
    else:
        print(f"  still off (regimes met): xqa (eighteenth blind grid): {X18_DIAGNOSIS}")
    cols = ["model", "dtype", "q_rows", "batch", "context", "split_sms", "role", "median_us", "pred_base_us",
            "pred_new_us", "base_err_pct", "new_err_pct"]
    print("eighteenth xqa grid, every row:")
    print(b[cols].to_string(**fmt))
