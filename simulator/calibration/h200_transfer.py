"""The H200 transfer grid: the production attention families, every term fitted on the H100-SXM, judged on the H200.

The H200's fitted file names none of these families' op kinds (they were measured on the H100-SXM alone), so until
2026-11-28 the product priced them there at the uncalibrated defaults (shares 1.0, no per-CTA or per-iteration times).
`unmeasured_kinds_from` (hwmodels/calibration/fitted/H200.yaml; hwmodels.spec load_efficiency) now fills them from the
H100-SXM's file: same GH100 SM, the H200's own HBM3e bandwidth. The grid re-runs the newest H100 blind grid of each
family on the lent H200 with the same scripts and flags (lab/kernels/run_h200_transfer_device.sh), priced before the
call (lab/kernels/predict_h200_transfer.py -> h200_transfer_predictions.csv: pred_main_us = the product before,
pred_new_us = the borrowed kinds, pred_h100_us = the same model on the H100-SXM beside the H100's measurement).

Part C (priced after A and B were judged, before its own call: h200_transfer_c_predictions.csv) re-runs XQA blind grid
18 (FlashInfer's port), FlashInfer MLA's rows of MLA blind grid 6 and FlashInfer top-k grid 12 (ragged and page-table).

Part D (h200_transfer_d_predictions.csv, priced after C was judged) re-runs cuBLASLt's block-scaled fp8 GEMM grid 15.

Part E (h200_transfer_e_predictions.csv, priced before its call on 2026-11-28) re-runs the three families the H200 had
never run: vLLM's Triton unified attention (Triton decode blind grid 8: warm, cold and K/V-cold rows), SGLang's Triton
decode kernel (sgl_triton blind grid 6) and FlashMLA (MLA blind grid 7). It has no "main": the product as committed
(pred_new_us) is judged, beside the H100 model on the H100's own measurement; it is loaded apart (`load(parts=PARTS_E)`,
benchmarks/accuracy_sections/h200_transfer_e.py).

Part F (h200_transfer_f_predictions.csv in production_kernels/, priced before its call on 2026-11-28) re-runs DeepGEMM's
DSA-indexer grids 4 (cold keys, the indexer's STANDING grid) and 3 (warm and cold decode, prefill), DeepGEMM 54e2261
built on the device (`load_part_f`).

Each part keeps the regimes its H100 grid was judged by (benchmarks/accuracy_sections: FA3 blind grid 3's shape groups,
the prefill grids' K/V dtype x fresh / chunked, fi_decode grid 8's groups, fi_verify grid 14's and MLA grid 6's K/V
dtype x context x batch, XQA grid 18's row roles, top-k grid 12's transform x launch, cuBLASLt grid 15's regimes); the
regimes were fixed before this grid ran. Where a part ran twice on the warm machine (XQA, MLA), the first call is judged
and the second is its `_replicate`.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from hwmodels import datafiles as DF
from simulator.calibration import fit_production_attention as FP

DATA_DIR = FP.DATA_DIR
PRED_CSV = "h200_transfer_predictions.csv"
PRED_C_CSV = "h200_transfer_c_predictions.csv"
PRED_D_CSV = "h200_transfer_d_predictions.csv"
PRED_E_CSV = "h200_transfer_e_predictions.csv"
_PROD_KEYS = ["family", "model", "dtype", "heads", "kv_heads", "head_dim", "batch", "q_rows", "context", "page_size"]
#: cuBLASLt grid 15's committed H100 prediction (its `regime` column: the grid's regimes)
GRID15_PRED = Path(__file__).resolve().parents[2] / "hwmodels/calibration/data/production_kernels" / \
    "gemm_grid15_prediction_ad4e27f_2026-11-27_cublaslt.csv"
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
    "xqa18": ("h200_transfer_xqa18_nvidia-h200_*.csv",
              ["family", "kernel", "model", "dtype", "heads", "kv_heads", "head_dim", "batch", "q_rows", "context",
               "page_size", "split_sms", "role", "pdl"]),
    "fi_mla6": ("h200_transfer_fi_mla6_nvidia-h200_*.csv",
                ["family", "model", "dtype", "heads", "kv_heads", "head_dim", "batch", "q_rows", "context",
                 "page_size"]),
    "fi_topk12": ("h200_transfer_fi_topk12_nvidia-h200_*.csv", ["family", "kernel", "dist", "rows", "n", "k"]),
    "cublaslt15": ("h200_transfer_cublaslt15_nvidia-h200_*.csv", ["kernel", "rows", "k", "n"]),
    "triton8": ("h200_transfer_triton8_nvidia-h200_*.csv", _PROD_KEYS + ["row_role", "layout"]),
    "sgl6": ("h200_transfer_sgl6_nvidia-h200_*.csv", _PROD_KEYS),
    "flashmla7": ("h200_transfer_flashmla7_nvidia-h200_*.csv", _PROD_KEYS),
}
#: the parts priced in the second prediction file
PARTS_C = ("xqa18", "fi_mla6", "fi_topk12")
#: the parts priced in the fifth (part E), judged apart from the rest
PARTS_E = ("triton8", "sgl6", "flashmla7")
#: sgl_triton blind grid 6's committed H100 prediction (its `group` column: the grid's regimes)
SGL6_PRED = "sgl_triton_blind6_predictions.csv"
#: XQA grid 18's row roles (benchmarks/accuracy_sections/xqa_grid18.py ROLES, its regimes on the H100)
XQA_ROLES = {"q2_half": "q 2 below half the SMs: 8-64 CTAs, 2-40 tiles", "q2_one": "q 2 one tile: 32-60 CTAs",
             "q1": "q 1 twins (same CTAs and tiles)", "control": "controls: q 2 at 104-144 CTAs"}
#: FA3 blind grid 3's shape groups (benchmarks/accuracy_sections/fa3_binary3.py REGIME, its regimes on the H100)
FA3_REGIME = {"d_short": "short T<=232 B 24-1024", "d_tiny": "tiny B<=8 T<=240", "d_middle": "middle T 1.5K-6K",
              "d_long": "long T 20K-100K B<=14", "d_verify": "verification q 2-6", "d_fp8": "fp8 e4m3",
              "d_page64": "page 64"}
#: the report's family label of each measured family
FAMILY = {"fa3": "fa3", "fa3_prefill": "fa3 prefill", "fi_prefill": "fi prefill", "fi_decode": "fi_decode",
          "fi_verify": "fi_verify", "xqa": "xqa", "fi_mla": "fi_mla", "topk": "top-k flashinfer",
          "gemm": "block fp8 GEMM: cuBLASLt", "triton_vllm": "triton_vllm", "sgl_triton": "sgl_triton",
          "flashmla": "flashmla"}
#: triton8's row roles other than the harness's warm rows: their family labels (the H100 grid's, cold = the engine's
#: state; K/V cold is a diagnosis there and here)
TRITON_ROLE_LABEL = {"cold": "triton_vllm, cold (engine state)", "kvcold": "triton_vllm, K/V cold (diagnosis)"}
LABELS = ("main", "new", "h100")


def _measured(part: str, data_dir: Path, replicate: bool = False) -> pd.DataFrame | None:
    glob, _ = PARTS[part]
    if replicate:
        glob = glob.replace("_*.csv", "_*_replicate.csv")
    fs = sorted(p for p in DF.glob(Path(data_dir), glob)
                if not any(x in p.name for x in ("_grids", "_shape_times", "_notes"))
                and ("_replicate" in p.name) == replicate)
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
    if part == "cublaslt15":
        g = pd.read_csv(DF.resolve(GRID15_PRED))[["rows", "k", "n", "regime"]]
        return pd.Series(j[["rows", "k", "n"]].merge(g, on=["rows", "k", "n"], how="left")["regime"].to_numpy(),
                         index=j.index)
    if part == "xqa18":
        return j["role"].map(XQA_ROLES).fillna(j["role"])
    if part == "fi_topk12":
        from simulator.calibration import topk_flashinfer_grid7 as G7
        from simulator.calibration import topk_flashinfer_grid12 as G12
        f = j[["kernel", "dist", "rows", "n"]].merge(G7.frame(G12.FI_GRID12, False, 132)[
            ["kernel", "dist", "rows", "n", "fi_path"]], on=["kernel", "dist", "rows", "n"], how="left")
        r = pd.Series(G12.regime(f["kernel"], f["rows"], f["n"], f["fi_path"]), index=j.index)
        return r.str.split(": ", n=1).str[-1]          # the transform is the family label's
    if part == "triton8":
        return pd.Series(FP.triton_blind8_regime(j), index=j.index)
    if part == "sgl6":
        g = pd.read_csv(DF.resolve(Path(data_dir) / SGL6_PRED))[_PROD_KEYS + ["group"]].drop_duplicates(_PROD_KEYS)
        return pd.Series(j[_PROD_KEYS].merge(g, on=_PROD_KEYS, how="left")["group"].fillna("other").to_numpy(),
                         index=j.index)
    if part == "fi_dec8":
        keys = [k for k in PARTS["fi_dec8"][1] if k in j.columns]
        g = j[keys].merge(_dec8_groups(data_dir), on=keys, how="left")["group"]
        return pd.Series(g.to_numpy(), index=j.index).fillna("other")
    lab = FP.regime_labels(j)
    return pd.Series((lab["kv"] + " " + lab["ctx_regime"] + " " + lab["batch_regime"]).to_numpy(), index=j.index)


def _pred_file(part: str) -> str:
    """The prediction file that priced `part`."""
    if part in PARTS_E:
        return PRED_E_CSV
    return PRED_D_CSV if part == "cublaslt15" else PRED_C_CSV if part in PARTS_C else PRED_CSV


def load(data_dir: Path = DATA_DIR, replicate: bool = False, parts: tuple[str, ...] | None = None) -> pd.DataFrame:
    """Every measured H200 row joined with its committed prices: part, family, regime, h200_us, h100_us, pred_<label>_us
    and <label>_err_pct (main / new against the H200, h100 against the H100's own measurement); empty before the
    measurement is committed. `replicate`: the parts' `_replicate` files instead (parts A and B again on a second lease,
    XQA, MLA and part E again on the same warm machine). `parts`: which parts (default: all but part E's)."""
    parts = tuple(p for p in PARTS if p not in PARTS_E) if parts is None else parts
    preds = {}
    for name in (PRED_CSV, PRED_C_CSV, PRED_D_CSV, PRED_E_CSV):
        pf = DF.resolve(Path(data_dir) / name)
        if pf.is_file():
            preds[name] = pd.read_csv(pf, dtype={"model_commit": str, "main_commit": str})
    out = []
    for part in parts:
        keys = PARTS[part][1]
        pred = preds.get(_pred_file(part))
        m = _measured(part, data_dir, replicate)
        if m is None or pred is None:
            continue
        p = pred[pred["part"] == part].dropna(axis=1, how="all")
        j = p.merge(m[keys + ["median_us", "device"]].rename(columns={"median_us": "h200_us"}), on=keys,
                    how="inner")
        if not len(j):
            continue
        j["regime"] = regimes(part, j, data_dir).to_numpy()
        j["file"] = m.attrs["file"]
        if "note" in m.columns:
            note = j[keys].merge(m[keys + ["note"]], on=keys, how="left")["note"]
            j["wrong"] = note.astype(object).where(note.notna(), "").astype(str).str.contains("WRONG").to_numpy()
        out.append(j)
    if not out:
        return pd.DataFrame()
    b = pd.concat(out, ignore_index=True)
    b["family"] = b["family"].fillna("gemm") if "family" in b.columns else "gemm"
    b["family_label"] = b["family"].map(FAMILY).fillna(b["family"])
    if "kernel" in b.columns:
        b.loc[b["kernel"] == "fi_topk", "family_label"] = "top-k flashinfer ragged"
        b.loc[b["kernel"] == "fi_topk_pt", "family_label"] = "top-k flashinfer page-table"
    if "row_role" in b.columns:
        role = b["row_role"].map(TRITON_ROLE_LABEL)
        b.loc[role.notna() & (b["family"] == "triton_vllm"), "family_label"] = role
    for lab in ("main", "new"):
        b[f"{lab}_err_pct"] = (b[f"pred_{lab}_us"] / b["h200_us"] - 1.0) * 100.0
    b["h100_err_pct"] = (b["pred_h100_us"] / b["h100_us"] - 1.0) * 100.0
    b["measured_ratio"] = b["h200_us"] / b["h100_us"]
    b["model_ratio"] = b["pred_new_us"] / b["pred_h100_us"]
    return b


#: part F: the indexer's prediction file and measurements (production_kernels/), the columns that name a row
KERNEL_DIR = Path(__file__).resolve().parents[2] / "hwmodels/calibration/data/production_kernels"
PRED_F_CSV = "h200_transfer_f_predictions.csv"
INDEXER_KEYS = ["part", "batch", "context", "next_n", "rows", "keys", "rotation"]


def load_part_f(data_dir: Path = KERNEL_DIR, replicate: bool = False) -> pd.DataFrame:
    """Part F's measured H200 rows (grids 4 and 3) joined with the prices committed before the call: grid, set, regime
    (grid 4's regimes; grid 3's by rotation and part), h200_us, h100_us, pred_new_us / new_err_pct (the product on the
    H200), pred_h100_us / h100_err_pct (the same model against the H100's own measurement), measured_ratio,
    model_ratio; empty before the measurement is committed."""
    from simulator.calibration import fit_deepgemm_indexer as FI

    pf = DF.resolve(Path(data_dir) / PRED_F_CSV)
    if not pf.is_file():
        return pd.DataFrame()
    pred = pd.read_csv(pf, keep_default_na=False, na_values=[""], dtype={"model_commit": str})
    pred["rotation"] = pred["rotation"].fillna("").astype(str)
    out = []
    for grid in (4, 3):
        fs = [p for p in DF.glob(Path(data_dir), f"h200_transfer_indexer{grid}_nvidia-h200_*.csv")
              if DF.stem(p).endswith("_replicate") == replicate]
        if not fs:
            continue
        m = FI.load(sorted(fs)[-1])
        m["rotation"] = m["rotation"].fillna("").astype(str)
        j = pred[pred["grid"] == grid].merge(
            m[INDEXER_KEYS + ["median_us", "device"]].rename(columns={"median_us": "h200_us"}), on=INDEXER_KEYS,
            how="inner")
        j["file"] = sorted(fs)[-1].name
        out.append(j)
    if not out:
        return pd.DataFrame()
    b = pd.concat(out, ignore_index=True)
    g4 = b["grid"] == 4
    b["regime"] = np.where(g4, FI.blind4_regime(b), np.where(b["part"] == "prefill", "prefill many-row",
                                                             "decode / verify [" + b["rotation"] + "]"))
    b["new_err_pct"] = (b["pred_new_us"] / b["h200_us"] - 1.0) * 100.0
    b["h100_err_pct"] = (b["pred_h100_us"] / b["h100_us"] - 1.0) * 100.0
    b["measured_ratio"] = b["h200_us"] / b["h100_us"]
    b["model_ratio"] = b["pred_new_us"] / b["pred_h100_us"]
    return b


def _joined(data_dir: Path, pred_name: str, glob: str, keys: list[str], replicate: bool, keep=None) -> pd.DataFrame:
    """A newer H200 grid's prices committed before its call (pred_name) joined on `keys` with its newest measurement
    (`glob`; the `_replicate` file when `replicate`): timed rows only (and those `keep(m)` selects), median_us as h200_us,
    the device and the measurement's file name; empty while either file is missing."""
    pf = DF.resolve(Path(data_dir) / pred_name)
    fs = sorted(p for p in DF.glob(Path(data_dir), glob)
                if DF.stem(p).endswith("_replicate") == replicate and "_grids" not in p.name)
    if not pf.is_file() or not fs:
        return pd.DataFrame()
    pred = pd.read_csv(pf, dtype={"model_commit": str})
    m = pd.read_csv(fs[-1])
    m = m[pd.to_numeric(m["median_us"], errors="coerce").notna()].copy()
    if keep is not None:
        m = m[keep(m)]
    m["median_us"] = m["median_us"].astype(float)
    b = pred.merge(m[keys + ["median_us", "device"]].rename(columns={"median_us": "h200_us"}), on=keys, how="inner")
    b["file"] = fs[-1].name
    return b


#: part G: DeepGEMM's block-scaled fp8 GEMM (production_kernels/), its prediction file and measurements
PRED_G_CSV = "h200_transfer_g_predictions.csv"
GEMM_KEYS = ["rows", "k", "n"]


def load_part_g(data_dir: Path = KERNEL_DIR, replicate: bool = False) -> pd.DataFrame:
    """Part G's measured H200 rows (DeepGEMM's rows of block grid 8 and of the decode-3 grid) joined with the prices
    committed before the call: grid, regime (each grid's own; grid 8's fill7 repeats keep 'repeat ...'), h200_us,
    h100_us, new / h100 _err_pct, measured_ratio, model_ratio; empty before the measurement is committed."""
    b = _joined(data_dir, PRED_G_CSV, "h200_transfer_deepgemm_gemm_nvidia-h200_*.csv", GEMM_KEYS, replicate,
                lambda m: m["kernel"] == "deepgemm")
    if not len(b):
        return b
    b["new_err_pct"] = (b["pred_new_us"] / b["h200_us"] - 1.0) * 100.0
    b["h100_err_pct"] = (b["pred_h100_us"] / b["h100_us"] - 1.0) * 100.0
    b["measured_ratio"] = b["h200_us"] / b["h100_us"]
    b["model_ratio"] = b["pred_new_us"] / b["pred_h100_us"]
    return b


#: the blind follow-up of part G (lab/kernels/predict_h200_dg_blind.py): DeepGEMM's block GEMM at new (M, K, N)
PRED_DG_BLIND_CSV = "h200_dg_blind_predictions.csv"


def load_dg_blind(data_dir: Path = KERNEL_DIR, replicate: bool = False) -> pd.DataFrame:
    """The H200's DeepGEMM block-GEMM blind grid: its measured rows joined with the prices committed before the call
    (main = the H100's terms as the H200 borrows them, cand = CAND_H200, the kind refitted on part G's rows): regime,
    h200_us, main / cand _err_pct; empty before the measurement is committed."""
    b = _joined(data_dir, PRED_DG_BLIND_CSV, "h200_dg_blind_nvidia-h200_*.csv", GEMM_KEYS, replicate,
                lambda m: m["kernel"] == "deepgemm")
    if not len(b):
        return b
    for lab in ("main", "cand"):
        b[f"{lab}_err_pct"] = (b[f"pred_{lab}_us"] / b["h200_us"] - 1.0) * 100.0
    return b


#: the H200's FlashMLA grid (lab/kernels/predict_mla_h200.py; production_attention/): no model change, the standing
PRED_MLA_H200_CSV = "production_attention_mla_h200_predictions.csv"


def load_mla_h200(data_dir: Path = DATA_DIR, replicate: bool = False) -> pd.DataFrame:
    """The H200's FlashMLA grid's measured rows joined with the product's prices committed before the call (pred_us, and
    pred_h100_us: the same shapes priced on the H100-SXM, no H100 time): regime, h200_us, new_err_pct; empty before
    the measurement is committed."""
    b = _joined(data_dir, PRED_MLA_H200_CSV, "production_attention_mla_h200_nvidia-h200_*.csv",
                ["family", "heads", "batch", "context"], replicate)
    if not len(b):
        return b
    b["new_err_pct"] = (b["pred_us"] / b["h200_us"] - 1.0) * 100.0
    return b


#: the H200's vLLM Triton grid (lab/kernels/predict_triton_h200.py; production_attention/): no model change, the standing
PRED_TRITON_H200_CSV = "triton_decode_h200_predictions.csv"
TRITON_KEYS = ["family", "heads", "kv_heads", "dtype", "batch", "q_rows", "context", "row_role"]


def load_triton_h200(data_dir: Path = DATA_DIR, replicate: bool = False) -> pd.DataFrame:
    """The H200's vLLM Triton grid's measured rows (warm = row_role blind, cold = the engine's state) joined with the
    product's prices committed before the call: regime (Triton grid 8's), h200_us, new_err_pct; empty before the
    measurement is committed."""
    b = _joined(data_dir, PRED_TRITON_H200_CSV, "triton_decode_h200_nvidia-h200_*.csv", TRITON_KEYS, replicate,
                lambda m: m["row_role"] != "probe")
    if not len(b):
        return b
    b["new_err_pct"] = (b["pred_us"] / b["h200_us"] - 1.0) * 100.0
    return b


PRED_TRITON_H200_CALLS_CSV = "triton_decode_h200_calls_predictions.csv"
#: the second grid's models: column of committed prices -> the report's name
TRITON_CALLS_MODELS = {"pred_main_us": "main", "pred_us": "A", "pred_refit_us": "B"}


def load_triton_h200_calls(data_dir: Path = DATA_DIR, replicate: bool = False) -> pd.DataFrame:
    """The H200's second vLLM Triton grid (lab/kernels/triton_decode_h200_calls.py: each warm row's graph call count
    fixed in the committed prediction) joined with its three models' committed prices: <model>_err_pct for main, A
    (TV_HARNESS_CALLS, shipped) and B (A + the refit, not shipped), the measured call count (`calls_measured`, which
    must equal the committed one on warm rows); empty before the measurement is committed."""
    b = _joined(data_dir, PRED_TRITON_H200_CALLS_CSV, "triton_decode_h200_calls_nvidia-h200_*.csv", TRITON_KEYS,
                replicate, lambda m: m["row_role"] != "probe")
    if not len(b):
        return b
    fs = sorted(p for p in DF.glob(Path(data_dir), "triton_decode_h200_calls_nvidia-h200_*.csv")
                if DF.stem(p).endswith("_replicate") == replicate)
    m = pd.read_csv(fs[-1])
    b = b.merge(m[TRITON_KEYS + ["calls"]].rename(columns={"calls": "calls_measured"}), on=TRITON_KEYS, how="left")
    for col, name in TRITON_CALLS_MODELS.items():
        b[f"{name}_err_pct"] = (b[col] / b["h200_us"] - 1.0) * 100.0
    first = load_triton_h200(data_dir)   # the re-timed rows' committed times (first_us)
    if len(first):
        role = b["row_role"].map({"recheck": "blind", "recheck_cold": "cold"})
        keys = [k for k in TRITON_KEYS if k != "row_role"]
        f = first[TRITON_KEYS + ["h200_us"]].rename(columns={"h200_us": "first_us", "row_role": "first_role"})
        b = b.assign(first_role=role).merge(f, on=keys + ["first_role"], how="left").drop(columns="first_role")
    return b
