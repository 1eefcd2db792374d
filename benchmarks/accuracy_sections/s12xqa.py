"""The tenth xqa blind grid (lab/kernels/measure_xqa_attention.py --grid x10): fp8 / bf16 verification at G 5-7 and q
2-4, the middle (context 600-9000) at batch 3-16 for both kernels, controls from regimes met before; every shape priced
and committed before it was measured (xqa_x10_predictions.csv): base = main's model, new = the GMMA verification
build's prologue loads in the waves of its own residency (simulator.kernels.production.emit), stream = an experiment
beside it, not shipped (mha.cu's per-SM K/V stream rate read from one looked-at row:
lab/kernels/predict_xqa_attention.py XQA_STREAM_PER_SM)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from simulator.calibration import fit_production_attention as FP
from simulator.calibration.scoreboard import BOARD, models_table

X10_GLOB = "xqa_x10_nvidia*.csv"
X10_PRED_CSV = "xqa_x10_predictions.csv"
LABELS = ("base", "new", "stream")


def load_x10(data_dir: Path = FP.DATA_DIR):
    """The tenth grid's measured rows joined with its committed prices (base / new / stream errors in %, regime labels);
    empty when either is missing."""
    fs = sorted(p for p in Path(data_dir).glob(X10_GLOB) if "_grids_" not in p.name
                and not p.stem.endswith("_nvidia-smi"))
    pp = Path(data_dir) / X10_PRED_CSV
    if not fs or not pp.is_file():
        return None
    import pandas as pd

    df = FP.load(fs[-1])
    out = FP.join_prices(df, pd.read_csv(pp), list(FP.XQA_KEYS),
                         {"pred_new_us": "new_err_pct", "pred_base_us": "base_err_pct",
                          "pred_stream_us": "stream_err_pct"}, ("model_commit", "base_commit"))
    out.attrs["file"] = str(fs[-1])
    return out


def xqa_x10(fmt: dict) -> None:
    """Print the tenth grid's tables (per regime; per build and context; moved vs same) and add base / new to the
    board as blind rows."""
    b = load_x10()
    if b is None or not len(b):
        return
    print(f"BLIND tenth xqa grid ({Path(b.attrs['file']).name}: {len(b)} page-16 shapes in none of the earlier rows; "
          "fp8 verification at G 5 / 6 / 7 x q 2-4 (Qwen2.5-14B, Qwen2.5-1.5B, Qwen2.5-7B, Yi-34B heads), most at more CTAs "
          "than the SMs hold at the build's residency; bf16 verification at G 5-7; the middle at batch 3-16 for both "
          "kernels; controls from regimes met before), prices committed before the measurement "
          f"({X10_PRED_CSV}): base = the model at {str(b['base_commit'].iloc[0])[:7]} (main), new = the model at "
          f"{str(b['model_commit'].iloc[0])[:7]} (the GMMA verification build's prologue loads recur in the waves of "
          "its own residency); stream = an experiment, NOT shipped (mha.cu's per-SM K/V stream rate, 28.5 GB/s read "
          "from one looked-at row)")
    keys = ("phase", "kv", "ctx_regime", "batch_regime")
    t = models_table(b, keys, LABELS, LABELS)
    print(t.to_string(**fmt))
    for lab in LABELS:
        e = b[f"{lab}_err_pct"]
        print(f"xqa tenth blind grid, {lab}: median |error| {np.median(e.abs()):.1f} %, p90 "
              f"{np.percentile(e.abs(), 90):.1f} %, signed {np.median(e):+.1f} %; regimes met "
              f"{int((t[lab + '_goal'] == 'met').sum())} of {len(t)}")
    for lab in ("base", "new"):
        BOARD.add("xqa", "blind", f"xqa tenth blind grid, {lab} model's committed prices", b[f"{lab}_err_pct"],
                  int((t[lab + "_goal"] == "met").sum()), len(t))
    b["build"] = (b["dtype"] + " q" + b["q_rows"].astype(int).astype(str) + " G"
                  + (b["heads"] // b["kv_heads"]).astype(int).astype(str))
    print("tenth xqa grid per build (K/V, query rows, query heads per KV head) and context regime:")
    print(models_table(b, ("build", "ctx_regime"), LABELS, LABELS).to_string(**fmt))
    b["moved"] = (b["pred_new_us"] != b["pred_base_us"]).map({True: "moved", False: "same"})
    print("tenth xqa grid, the rows whose price the new model moves against the rest:")
    print(models_table(b, ("moved",), LABELS, LABELS).to_string(**fmt))
