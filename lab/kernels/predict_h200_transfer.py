"""Price the H200 TRANSFER grid BEFORE it is measured: the production attention families, fitted on the H100-SXM alone,
on the lent H200 (same GH100 SXM5 die: 132 SMs, 1.98 GHz, 228 KiB shared memory per SM, 50 MB L2; HBM3e at 4.8 TB/s
against the H100's HBM3 at 3.35 TB/s: hwmodels/specs/H200.yaml).

The grid is the newest H100 blind grid of each family, the same shapes re-run on the H200 by the same measurement
scripts (the --grid flag of each, run_h200_transfer_device.sh): every plan column those CSVs record (FlashInfer's plan,
FA3's num_splits = 0: its own heuristic) depends on the SM count alone, the same on both chips. Three prices a row:

  pred_main_us   what the product charged on the H200 before unmeasured_kinds_from (main at f305da5): the H200's fitted
                 file names none of these families' kinds, so they ran at the uncalibrated defaults (compute and memory
                 shares 1.0, no per-CTA, per-iteration or fixed times)
  pred_new_us    this tree: the H200's fitted file takes the kinds it never measured from the H100-SXM's
                 (hwmodels/calibration/fitted/H200.yaml unmeasured_kinds_from; hwmodels.spec load_efficiency)
  pred_h100_us   the same model on the H100-SXM (the shapes' own chip; its error there is looked-at or blind per
                 family, benchmarks/results_calibration_accuracy.txt), beside h100_us, the H100 measurement

SHIP_RULE (fixed before the call): the borrowed kinds ship if, pooled over the grid, they meet more family x regime
cells (median <= 10 %, p90 <= 25 %) than main, or as many with a lower pooled median and p90 |error| (main's
defaults cannot be kept by choice: they are no calibration at all; the rule is there to say whether the borrowed
terms are a calibration of the H200 or only less wrong).

Part C (--part C, priced and committed after parts A and B were measured and judged, before C's own call; the same
rule): XQA blind grid 18 (FlashInfer's port of TensorRT-LLM's XQA, measure_xqa_attention.py --grid x18), FlashInfer's
MLA rows of MLA blind grid 6 (measure_production_attention.py --grid mla_blind6 --parts build,fi_mla) and FlashInfer's
top-k grid 12 (measure_topk_engines.py on topk_flashinfer_grid12_prediction_2026-11-27.csv's shapes, the ragged and the
page-table transform; priced by simulator.calibration.topk_flashinfer_grid12.predict with the shipped candidate's
terms) -> h200_transfer_c_predictions.csv.

Part D (--part D, priced after C was judged, before D's call): cuBLASLt's block-scaled fp8 GEMM grid 15 (torch's
_scaled_mm with 1 x 128 / 128 x 128 scales, measure_deepgemm_gemm.py --tag grid15 on the committed grid's (M, K, N);
priced by simulator.calibration.fit_production_topk_gemm.predict_gemm_us, the kind gemm_fp8_block_cublaslt) ->
h200_transfer_d_predictions.csv and the call's grid file h200_transfer_d_grid.csv.

Part E (--part E, 2026-11-28, priced and committed before its call; the families the H200 had never run): vLLM's
Triton unified attention (Triton decode blind grid 8: warm, cold and K/V-cold rows, triton_decode_blind8.py), SGLang's
Triton grouped decode kernel (sgl_triton blind grid 6, sgl_triton_blind6.py) and FlashMLA (MLA blind grid 7's flashmla
rows, measure_production_attention.py --grid mla_blind7 --parts flashmla). There is no "main" to beat: the product as
committed (pred_new_us, the H100-SXM's kinds through unmeasured_kinds_from) is judged as it stands, beside the H100
model on the H100's own measurement (pred_h100_us / h100_us); pred_main_us repeats pred_new_us. These rows become the
three families' H200 STANDING (declared before the call) -> h200_transfer_e_predictions.csv.

    python lab/kernels/predict_h200_transfer.py [--part C | D | E]   # writes h200_transfer[_c|_d|_e]_predictions.csv
"""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from hwmodels.spec import efficiency_from_dict, fitted_file, load_hardware  # noqa: E402
from hwmodels.yamlio import load_yaml  # noqa: E402
from simulator.calibration import fit_production_attention as FP  # noqa: E402
from simulator.calibration import prefill_kernels as PK  # noqa: E402

DATA = ROOT / "hwmodels/calibration/data/production_attention"
OUT = DATA / "h200_transfer_predictions.csv"
MAIN_COMMIT = "f305da5"
#: (part, the H100 CSV whose shapes the H200 re-runs, how its rows are priced, the measurement call that re-runs it)
GRIDS = (
    ("fa3_decode", "fa3_binary_blind3_nvidia-h100-80gb-hbm3_2026-11-27.csv", "fa3_binary",
     "measure_fa3_binary.py --grid blind3"),
    ("prefill3", "prefill_kernels_blind3_nvidia-h100-80gb-hbm3_2026-11-28.csv", "prefill",
     "measure_prefill_kernels.py --grid blind3"),
    ("prefill4", "prefill_kernels_blind4_nvidia-h100-80gb-hbm3_2026-11-28.csv", "prefill",
     "measure_prefill_kernels.py --grid blind4"),
    ("fi_dec8", "production_attention_fi_dec_blind8_nvidia-h100-80gb-hbm3_2026-11-27.csv", "production",
     "measure_production_attention.py --grid fi_dec_blind8"),
    ("fi_tc14", "production_attention_fi_tc_blind14_nvidia-h100-80gb-hbm3_2026-11-27.csv", "production",
     "measure_production_attention.py --grid fi_tc_blind14"),
)
OUT_C = DATA / "h200_transfer_c_predictions.csv"
OUT_D = DATA / "h200_transfer_d_predictions.csv"
GRID_D = DATA / "h200_transfer_d_grid.csv"
TOPK_DATA = ROOT / "hwmodels/calibration/data/production_kernels"
GRIDS_C = (
    ("xqa18", "xqa_x18_nvidia-h100-80gb-hbm3_2026-11-27.csv", "production", "measure_xqa_attention.py --grid x18"),
    ("fi_mla6", "production_attention_mla_blind6_nvidia-h100-80gb-hbm3_2026-11-27.csv", "production",
     "measure_production_attention.py --grid mla_blind6 --parts build,fi_mla"),
    ("fi_topk12", "topk_engines_nvidia-h100-80gb-hbm3_2026-11-27_figrid12.csv", "topk_fi",
     "measure_topk_engines.py --shapes topk_flashinfer_grid12_prediction_2026-11-27.csv --page-table"),
)
#: the columns that name a row (its shape), per pricing route
KEYS = {"fa3_binary": ["family", "model", "dtype", "heads", "kv_heads", "head_dim", "batch", "q_rows", "context",
                       "page_size", "num_splits", "tag"],
        "prefill": ["family", "model", "dtype", "heads", "kv_heads", "head_dim", "batch", "q_rows", "prefix",
                    "context", "page_size"],
        "production": ["family", "model", "dtype", "heads", "kv_heads", "head_dim", "batch", "q_rows", "context",
                       "page_size"],
        "xqa": ["family", "kernel", "model", "dtype", "heads", "kv_heads", "head_dim", "batch", "q_rows", "context",
                "page_size", "split_sms", "role", "pdl"],
        "topk_fi": ["family", "kernel", "dist", "rows", "n", "k"],
        "gemm_block": ["kernel", "rows", "k", "n"]}
OUT_E = DATA / "h200_transfer_e_predictions.csv"
GRIDS_E = (
    ("triton8", "triton_decode_blind8_nvidia-h100-80gb-hbm3_2026-11-27.csv", "production", "triton_decode_blind8.py"),
    ("sgl6", "sgl_triton_blind6_nvidia-h100-80gb-hbm3_2026-11-27.csv", "production", "sgl_triton_blind6.py"),
    ("flashmla7", "production_attention_mla_blind7_nvidia-h100-80gb-hbm3_2026-11-27.csv", "production",
     "measure_production_attention.py --grid mla_blind7 --parts flashmla"),
)
GRIDS_D = (("cublaslt15", "gemm_grid15_nvidia-h100-80gb-hbm3_2026-11-27.csv", "gemm_block",
            "measure_deepgemm_gemm.py --grid h200_transfer_d_grid.csv --tag grid15"),)


def main_h200():
    """The H200 as main priced it: its fitted file as written, without the kinds unmeasured_kinds_from adds."""
    hw = load_hardware("H200")
    raw = load_yaml(fitted_file("H200"), "fitted efficiency file")
    raw = {k: v for k, v in raw.items() if k != "unmeasured_kinds_from"}
    return replace(hw, efficiency=efficiency_from_dict(raw, str(fitted_file("H200"))))


def price(route: str, df: pd.DataFrame, hw) -> np.ndarray:
    """In-graph device time of every row (the timing harness's measurement) as the model prices it on `hw`."""
    df = df.reset_index(drop=True)
    if route == "gemm_block":
        from simulator.calibration import fit_production_topk_gemm as F
        f = pd.DataFrame({"family": "gemm", "kernel": "fp8_block_cublaslt", "dist": "", "rows": df["rows"],
                          "n": df["n"], "k": df["k"]})
        return F.predict_gemm_us(F.gemm_frame(f), hw, hw.efficiency)
    if route == "topk_fi":
        from simulator.calibration import topk_flashinfer_grid7 as G7
        from simulator.calibration import topk_flashinfer_grid12 as G12
        from simulator.kernels import topk_flashinfer as FK
        t = G7.frame(G12.FI_GRID12, False, hw.units)
        t = df[KEYS["topk_fi"]].merge(t.drop(columns=[c for c in ("k",) if c in t.columns]),
                                      on=["family", "kernel", "dist", "rows", "n"], how="left")
        return G12.predict(t, hw, FK.PT_WAVE3_CANDIDATE, FK.GATHER_SECTOR_CANDIDATE)
    if route == "prefill":
        return PK.family_us(df, causal=True, hw=hw)
    if route == "fa3_binary":
        ops = FP.fa3_binary_ops(df, hw.units)
    else:
        ops = FP.build_ops(df, hw.units, hw.smem_per_unit_bytes)
    return FP.predict_us(ops, hw, hw.efficiency, len(df))


def main() -> None:
    import argparse
    import subprocess
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", choices=("AB", "C", "D", "E"), default="AB")
    args = ap.parse_args()
    grids, out_csv = {"AB": (GRIDS, OUT), "C": (GRIDS_C, OUT_C), "D": (GRIDS_D, OUT_D), "E": (GRIDS_E, OUT_E)}[args.part]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    hws = {"main": main_h200(), "new": load_hardware("H200"), "h100": load_hardware("H100-SXM")}
    if args.part == "E":
        hws["main"] = hws["new"]
    out = []
    for part, csv, route, call in grids:
        df = pd.read_csv((TOPK_DATA if route in ("topk_fi", "gemm_block") else DATA) / csv)
        if route == "gemm_block":
            df = df[df["kernel"] == "cublaslt"].reset_index(drop=True)
            df[["kernel", "rows", "k", "n"]].to_csv(GRID_D, index=False)
        if part == "fi_mla6":
            df = df[df["family"] == "fi_mla"].reset_index(drop=True)
        if "row_role" in df.columns:
            df = df[df["row_role"] != "probe"].reset_index(drop=True)
        key = "xqa" if part == "xqa18" else route
        rows = df[KEYS[key] + [c for c in ("row_role", "layout") if c in df.columns]].copy()
        rows.insert(0, "part", part)
        rows["h100_us"] = df["median_us"].to_numpy()
        for name, hw in hws.items():
            rows[f"pred_{name}_us"] = np.round(price(route, df, hw), 3)
        rows["measured_by"] = call
        out.append(rows)
    res = pd.concat(out, ignore_index=True)
    res["main_commit"] = commit if args.part == "E" else MAIN_COMMIT
    res["model_commit"] = commit
    res.to_csv(out_csv, index=False)
    print(f"{len(res)} rows -> {out_csv.relative_to(ROOT)} (model at {commit})")
    for part, g in res.groupby("part", sort=False):
        e = (g["pred_h100_us"] / g["h100_us"] - 1) * 100
        print(f"{part:10s} {len(g):4d} rows; H100 model / H100 measured |err| median {e.abs().median():5.1f} %, "
              f"H200 new / H100 price median {np.median(g['pred_new_us'] / g['pred_h100_us']):.3f}, "
              f"H200 main / new median {np.median(g['pred_main_us'] / g['pred_new_us']):.3f}")


if __name__ == "__main__":
    main()
