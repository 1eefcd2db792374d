"""The twelfth xqa blind grid (lab/kernels/measure_xqa_attention.py --grid x12, two device calls: the second timed the
rows the first call's budget did not reach, --skip-measured): few-CTA long-chain
launches as TensorRT-LLM's own launcher splits them (the port's launcher handed the SM count that reproduces
computeMultiBlockCount: one or two KV heads per sequence at batch 1-3 and 16K-180K tokens, 21-66 CTAs; Llama-3.1-8B at
batch 1-2 and 80K-150K tokens), the bf16 middle at 72-120 CTAs, the fp8 middle, fp8 verification at G 5 / 7 and
controls, plus four diagnostic rows timed with programmatic dependent launch off. Prices committed before the call
(xqa_x12_predictions.csv): base = main's model (08cf44f); cand = the per-SM stream ceiling candidate as fitted (e4c53d3:
49.51 GB/s per SM with the attn_xqa terms refitted); new = main's terms plus the ceiling refitted by the committed
procedure under them (50.58 GB/s) and the GMMA kernel's unsplit walk (XQA_GMMA_UNSPLIT_SHARE, fitted only on the x11
scan's fp8 rows). SHIPPED: new's ceiling (hwmodels.roofline.SM_STREAM_CEILING, main's terms kept); not its unsplit
GMMA walk (XQA_GMMA_UNSPLIT off, decided when the first call had not reached its regime: the split fp8 long chains it
leaves at the fitted iteration ran 14-19 % faster than priced; the second call then found it worse on fp8 verification
at G 5 / 7 and no better on the fp8 middle). shipped = that model's committed prices:
new's for bf16 rows, base's for fp8 rows (new moves an fp8 row only through the unsplit walk)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from simulator.calibration import fit_production_attention as FP
from simulator.calibration.scoreboard import BOARD, models_table, pooled_lines

X12_GLOB = "xqa_x12_nvidia*.csv"
X12_PRED_CSV = "xqa_x12_predictions.csv"
LABELS = ("base", "cand", "new")
#: the labels of the tables: the priced models and the shipped one (built from their committed prices, load_x12)
TABLE_LABELS = LABELS + ("shipped",)
#: each row role's regime name (measure_xqa_attention.X12_ROWS)
ROLES = {"fewcta": "few-CTA long chain (TensorRT-LLM split)", "longmany": "long chain, many CTAs (TensorRT-LLM split)",
         "middle": "middle, batch 2-15", "verify": "verification G 5 / 7", "control": "controls"}


#: what the twelfth grid shows where its regimes miss (printed while they miss)
X12_DIAGNOSIS = (
    "fp8 (GMMA) few-CTA long chains under TensorRT-LLM's split run 14-19 % faster than every model prices them (21-42 "
    "tiles per CTA: the fitted per-tile iteration, 0.85 us, is too slow for split long chains as for the unsplit scan's, "
    "so the unsplit-walk hypothesis, a split walk at the fitted iteration, is refuted); the bf16 middle at 72-112 CTAs "
    "still runs 2.5-7 us longer than priced (-2..-15 %), about half of it with programmatic dependent launch on (the PDL-off "
    "diagnostics run 1-2.5 us faster); Llama-3.1-8B bf16 at batch 1 and 150K tokens (384 CTAs in 3 waves) +13 %")


def load_x12(data_dir: Path = FP.DATA_DIR) -> pd.DataFrame:
    """The twelfth grid's measured rows (failed rows dropped) joined with the committed prices on the shape, its role and
    its PDL setting: base / cand / new errors in %, regime = role x K/V dtype; empty when either file is missing."""
    files = sorted(p for p in Path(data_dir).glob(X12_GLOB) if "_grids_" not in p.name and p.suffix == ".csv"
                   and not p.stem.endswith("_nvidia-smi"))
    pp = Path(data_dir) / X12_PRED_CSV
    if not files or not pp.is_file():
        return pd.DataFrame()
    # the first call's rows and, where its budget ran out, a later call's rest (--skip-measured): each row once
    df = pd.concat([FP.load(f) for f in files], ignore_index=True)
    df = df[df["note"] == ""].reset_index(drop=True)
    keys = list(FP.XQA_KEYS) + ["role", "pdl"]
    out = FP.join_prices(df, pd.read_csv(pp), keys, {f"pred_{lab}_us": f"{lab}_err_pct" for lab in LABELS},
                         ("model_commit", "base_commit", "cand_commit"))
    out["regime"] = [f"{ROLES.get(r, r)}, {d}" for r, d in zip(out["role"], out["dtype"])]
    fp8 = out["dtype"].to_numpy() == "fp8"
    out["pred_shipped_us"] = np.where(fp8, out["pred_base_us"], out["pred_new_us"])
    out["shipped_err_pct"] = np.where(fp8, out["base_err_pct"], out["new_err_pct"])
    out.attrs["file"] = " + ".join(f.name for f in files)
    return out


def pdl_table(b: pd.DataFrame) -> pd.DataFrame:
    """The diagnostic pairs: each PDL-off row beside its PDL-on twin (the same shape), measured us and the ratio."""
    off = b[b["role"] == "nopdl"]
    on = b[(b["role"] == "middle") & (b["pdl"] == 1)]
    keys = list(FP.XQA_KEYS)
    m = off[keys + ["median_us", "pred_base_us"]].merge(on[keys + ["median_us"]], on=keys, suffixes=("_off", "_on"))
    m["off_over_on"] = m["median_us_off"] / m["median_us_on"]
    return m[["dtype", "q_rows", "context", "batch", "median_us_on", "median_us_off", "off_over_on", "pred_base_us"]]


def xqa_x12(fmt: dict) -> None:
    """Print the twelfth grid's tables (per regime, per model) and the PDL diagnostics; add base (main's, shipped), cand
    and new to the board."""
    b = load_x12()
    if not len(b):
        return
    blind = b[b["role"] != "nopdl"].reset_index(drop=True)
    print(f"BLIND twelfth xqa grid ({Path(b.attrs['file']).name}: {len(blind)} page-16 shapes in no earlier grid, "
          "priced before the call, xqa_x12_predictions.csv): base = the model at "
          f"{str(blind['base_commit'].iloc[0])[:7]} (main); cand = the per-SM stream ceiling candidate as fitted (model at "
          f"{str(blind['cand_commit'].iloc[0])[:7]}: 49.51 GB/s per SM, attn_xqa terms refitted); new = the model at "
          f"{str(blind['model_commit'].iloc[0])[:7]} with the ceiling refitted by the committed procedure under main's "
          "terms (50.58 GB/s per SM) and the GMMA kernel's unsplit walk (XQA_GMMA_UNSPLIT_SHARE 0.773, fitted only on "
          "the x11 scan's fp8 rows)")
    print("shipped = the model as shipped (new's per-SM stream ceiling, 50.58 GB/s, on main's terms; the unsplit GMMA "
          "walk off): new's committed price for bf16 rows, base's for fp8 rows")
    t = models_table(blind, ("regime",), TABLE_LABELS, TABLE_LABELS)
    print(t.to_string(**fmt))
    pooled_lines(blind, t, TABLE_LABELS, "xqa twelfth blind grid")
    BOARD.add("xqa", "blind", "xqa twelfth blind grid, main's model (committed prices)", blind["base_err_pct"],
              int((t["base_goal"] == "met").sum()), len(t))
    BOARD.add("xqa", "blind", "xqa twelfth blind grid, the stream ceiling candidate as fitted (not shipped)",
              blind["cand_err_pct"], int((t["cand_goal"] == "met").sum()), len(t))
    BOARD.add("xqa", "blind", "xqa twelfth blind grid, the new model (committed prices)", blind["new_err_pct"],
              int((t["new_goal"] == "met").sum()), len(t))
    BOARD.add("xqa", "blind", "xqa twelfth blind grid, the shipped model (new's ceiling, main's fp8)",
              blind["shipped_err_pct"], int((t["shipped_goal"] == "met").sum()), len(t))
    # the bf16 rows' own line (the thirteenth grid moved only fp8); the family's bf16 STANDING line moved to the
    # fourteenth grid (xqa_grid14: mha.cu's late CTAs shipped)
    bf = blind["dtype"].to_numpy() == "bf16"
    tb = t[t["regime"].str.endswith(", bf16")]
    BOARD.add("xqa", "blind", "xqa twelfth blind grid, bf16 rows, the shipped model (the thirteenth moved only fp8)",
              blind.loc[bf, "shipped_err_pct"], int((tb["shipped_goal"] == "met").sum()), len(tb))
    if (t["shipped_goal"] == "MISSED").any():
        print(f"  missed: xqa (twelfth blind grid): {X12_DIAGNOSIS}")
    few = blind[blind["role"] == "fewcta"]
    if len(few):
        print("twelfth xqa grid, the few-CTA long-chain rows (TensorRT-LLM's split; split_sms handed to the port):")
        print(few[["model", "dtype", "batch", "context", "split_sms", "median_us", "pred_base_us", "pred_cand_us",
                   "pred_new_us", "base_err_pct", "cand_err_pct", "new_err_pct"]].to_string(**fmt))
    p = pdl_table(b)
    if len(p):
        print("twelfth xqa grid, diagnostics (not blind): the same middle shapes timed with programmatic dependent launch "
              "off (xqa_wrapper enable_pdl) beside the grid's PDL-on rows")
        print(p.to_string(**fmt))
