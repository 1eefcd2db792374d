"""The H200 transfer grid: the production attention families, every term fitted on the H100-SXM, judged on the H200.

The H200's fitted file names none of these families' op kinds (they were measured on the H100-SXM alone), so until
2026-11-28 the product priced them there at the uncalibrated defaults (shares 1.0, no per-CTA or per-iteration times).
`unmeasured_kinds_from` (hwmodels/calibration/fitted/H200.yaml; hwmodels.spec load_efficiency) now fills them from the
H100-SXM's file: same GH100 SM, the H200's own HBM3e bandwidth. The grid re-runs the newest H100 blind grid of each
family on the lent H200 with the same scripts and flags (lab/kernels/run_h200_transfer_device.sh), priced before the
call (lab/kernels/predict_h200_transfer.py -> h200_transfer_predictions.csv: pred_main_us = the product before,
pred_new_us = the borrowed kinds, pred_h100_us = the same model on the H100-SXM beside the H100's measurement).

Each part keeps the regimes its H100 grid was judged by (benchmarks/accuracy_sections: FA3 blind grid 3's shape groups,
the prefill grids' K/V dtype x fresh / chunked, fi_decode grid 8's groups, fi_verify grid 14's K/V dtype x context x
batch); the regimes were fixed before this grid ran.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from hwmodels import datafiles as DF
from simulator.calibration import fit_production_attention as FP

DATA_DIR = FP.DATA_DIR
PRED_CSV = "h200_transfer_predictions.csv"
#: part -> (the H200 measurement's glob, the columns that name a row, the family label of the report)
PARTS = {
    "fa3_decode": ("h200_transfer_fa3_decode_nvidia-h200_*.csv",
                   ["family", "model", "dtype", "heads", "kv_heads", "head_dim", "batch", "q_rows", "context",
                    "page_size", "num_splits", "tag"]),
    "prefill3": ("h200_transfer_prefill3_nvidia-h200_*.csv",
                 ["family", "model", "dtype", "heads", "kv_heads", "head_dim", "batch", "q_rows", "prefix", "context",
                  "page_size"]),
    "prefill4": ("h200_transfer_prefill4_nvidia-h200_*.csv",
                 ["family", "model", "dtype", "heads", "kv_heads", "head_dim", "batch", "q_rows", "prefix", "context",
                  "page_size"]),
    "fi_dec8": ("h200_transfer_fi_dec8_nvidia-h200_*.csv",
                ["family", "model", "dtype", "heads", "kv_heads", "head_dim", "batch", "q_rows", "context",
                 "page_size"]),
    "fi_tc14": ("h200_transfer_fi_tc14_nvidia-h200_*.csv",
                ["family", "model", "dtype", "heads", "kv_heads", "head_dim", "batch", "q_rows", "context",
                 "page_size"]),
}
#: FA3 blind grid 3's shape groups (benchmarks/accuracy_sections/fa3_binary3.py REGIME, its regimes on the H100)
FA3_REGIME = {"d_short": "short T<=232 B 24-1024", "d_tiny": "tiny B<=8 T<=240", "d_middle": "middle T 1.5K-6K",
              "d_long": "long T 20K-100K B<=14", "d_verify": "verification q 2-6", "d_fp8": "fp8 e4m3",
              "d_page64": "page 64"}
#: the report's family label of each measured family
FAMILY = {"fa3": "fa3", "fa3_prefill": "fa3 prefill", "fi_prefill": "fi prefill", "fi_decode": "fi_decode",
          "fi_verify": "fi_verify"}
LABELS = ("main", "new", "h100")


def _measured(part: str, data_dir: Path) -> pd.DataFrame | None:
    glob, _ = PARTS[part]
    fs = sorted(p for p in DF.glob(Path(data_dir), glob) if "_grids" not in p.name and "_shape_times" not in p.name)
    if not fs:
        return None
    m = pd.read_csv(fs[-1])
    m = m[np.isfinite(pd.to_numeric(m["median_us"], errors="coerce"))].copy()
    m.attrs["file"] = fs[-1].name
    return m


def _dec8_groups(data_dir: Path) -> pd.DataFrame:
    """fi_decode blind grid 8's shape groups (its regimes on the H100), from that grid's committed prices."""
    p = pd.read_csv(DF.resolve(Path(data_dir) / "production_attention_fi_dec_blind8_predictions.csv"))
    keys = [k for k in PARTS["fi_dec8"][1] if k in p.columns]
    return p[keys + ["group"]].drop_duplicates(keys)


def regimes(part: str, j: pd.DataFrame, data_dir: Path) -> pd.Series:
    """Each row's regime, as its H100 grid was judged (module docstring)."""
    if part == "fa3_decode":
        return j["tag"].map(FA3_REGIME).fillna(j["tag"])
    if part.startswith("prefill"):
        return j["dtype"] + ", " + np.where(j["prefix"] > 0, "chunked (O > 0)", "fresh (O = 0)")
    if part == "fi_dec8":
        keys = [k for k in PARTS["fi_dec8"][1] if k in j.columns]
        g = j[keys].merge(_dec8_groups(data_dir), on=keys, how="left")["group"]
        return pd.Series(g.to_numpy(), index=j.index).fillna("other")
    lab = FP.regime_labels(j)
    return pd.Series((lab["kv"] + " " + lab["ctx_regime"] + " " + lab["batch_regime"]).to_numpy(), index=j.index)


def load(data_dir: Path = DATA_DIR) -> pd.DataFrame:
    """Every measured H200 row joined with its committed prices: part, family, regime, h200_us, h100_us, pred_<label>_us
    and <label>_err_pct (main / new against the H200, h100 against the H100's own measurement); empty before the
    measurement is committed."""
    pf = DF.resolve(Path(data_dir) / PRED_CSV)
    if not pf.is_file():
        return pd.DataFrame()
    pred = pd.read_csv(pf, dtype={"model_commit": str, "main_commit": str})
    out = []
    for part, (_, keys) in PARTS.items():
        m = _measured(part, data_dir)
        if m is None:
            continue
        p = pred[pred["part"] == part].dropna(axis=1, how="all")
        j = p.merge(m[keys + ["median_us", "device"]].rename(columns={"median_us": "h200_us"}), on=keys,
                    how="inner")
        if not len(j):
            continue
        j["regime"] = regimes(part, j, data_dir).to_numpy()
        j["file"] = m.attrs["file"]
        out.append(j)
    if not out:
        return pd.DataFrame()
    b = pd.concat(out, ignore_index=True)
    b["family_label"] = b["family"].map(FAMILY).fillna(b["family"])
    for lab in ("main", "new"):
        b[f"{lab}_err_pct"] = (b[f"pred_{lab}_us"] / b["h200_us"] - 1.0) * 100.0
    b["h100_err_pct"] = (b["pred_h100_us"] / b["h100_us"] - 1.0) * 100.0
    b["measured_ratio"] = b["h200_us"] / b["h100_us"]
    b["model_ratio"] = b["pred_new_us"] / b["pred_h100_us"]
    return b
