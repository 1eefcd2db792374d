"""The thirteenth xqa blind grid (lab/kernels/measure_xqa_attention.py --grid x13, one device call,
lab/kernels/run_xqa_x13_device.sh): fp8 (mha_sm90.cu, the GMMA kernel) few-CTA long chains as TensorRT-LLM's own
launcher splits them (the port's launcher handed the SM count that reproduces computeMultiBlockCount: one KV head per
sequence, Llama-3.1-70B / Qwen2.5-72B at TP 8, and two or four, Llama-3.1-8B at TP 4 / TP 2; batch 1-4, 19K-165K
tokens, 19-144 CTAs of 18-51 tiles), the fp8 middle (Llama-3.1-8B, batch 3-16, 80-128 CTAs of 28-72 tiles), fp8
verification at G 4 / 7 (q 2) and bf16 controls. Prices committed before the call (xqa_x13_predictions.csv): base =
main's model (2bec4e2); new = the GMMA kernel's steady-state tiles (simulator/kernels/xqa.py XQA_GMMA_STEADY_SHARE: the
tiles beyond the 2-deep K/V pipeline at 0.691 of the fitted iteration, fitted only on the x11 scan's fp8 rows and the
twelfth grid's fp8 few-CTA rows, LOOKED-AT) under the kind's loaded chain (hwmodels.roofline CHAIN_LOADED). SHIPPED:
new. The call's budget ran out after 23 of the 30 rows (not timed: two Qwen2.5-7B TP 4 verification rows and the five
bf16 controls, whose prices the new model does not move)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from simulator.calibration import fit_production_attention as FP
from simulator.calibration.scoreboard import BOARD, models_table, pooled_lines

X13_GLOB = "xqa_x13_nvidia*.csv"
X13_PRED_CSV = "xqa_x13_predictions.csv"
LABELS = ("base", "new")


def _regime(role: str, dtype: str, hkv: float) -> str:
    if role == "fewcta":
        heads = "1 KV head (TP 8)" if hkv <= 1 else "2-4 KV heads (Llama-3.1-8B TP 4 / 2)"
        return f"few-CTA long chain (TensorRT-LLM split), {heads}, {dtype}"
    return {"middle": f"middle, batch 3-16, {dtype}", "verify": f"verification G 4 / 7, {dtype}",
            "control": f"controls, {dtype}"}.get(role, f"{role}, {dtype}")


#: what the thirteenth grid shows where its regimes miss (printed while they miss)
X13_DIAGNOSIS = (
    "fp8 verification (q 2) one-tile CTAs in many waves (Llama-3.1-8B TP 2 batch 70 at 230 tokens) +18..+21 % under "
    "both models and Qwen2.5-7B TP 4 q 2 at batch 16 -12..-13 %: the steady-state tiles do not reach them (<= 4 tiles "
    "per CTA); the few-CTA rows at 136-187 CTAs (more than one per SM) -10..-11 %")


def load_x13(data_dir: Path = FP.DATA_DIR) -> pd.DataFrame:
    """The thirteenth grid's measured rows (failed rows dropped) joined with the committed prices on the shape and its
    role: base / new errors in %, regime = role x K/V dtype (x KV heads for the few-CTA rows); empty when either file
    is missing."""
    files = sorted(p for p in Path(data_dir).glob(X13_GLOB) if "_grids_" not in p.name and p.suffix == ".csv"
                   and not p.stem.endswith("_nvidia-smi"))
    pp = Path(data_dir) / X13_PRED_CSV
    if not files or not pp.is_file():
        return pd.DataFrame()
    df = pd.concat([FP.load(f) for f in files], ignore_index=True)
    df = df[df["note"] == ""].reset_index(drop=True)
    keys = list(FP.XQA_KEYS) + ["role"]
    out = FP.join_prices(df, pd.read_csv(pp), keys, {f"pred_{lab}_us": f"{lab}_err_pct" for lab in LABELS},
                         ("model_commit", "base_commit"))
    out["regime"] = [_regime(r, d, h) for r, d, h in zip(out["role"], out["dtype"], out["kv_heads"])]
    out.attrs["file"] = " + ".join(f.name for f in files)
    return out


def xqa_x13(fmt: dict) -> None:
    """Print the thirteenth grid's table (per regime, per model) and its few-CTA rows; add base (main's) and new (the
    shipped model, standing) to the board."""
    b = load_x13()
    if not len(b):
        return
    print(f"BLIND thirteenth xqa grid ({b.attrs['file']}: {len(b)} of 30 page-16 shapes in no earlier grid measured, "
          "priced before the call, xqa_x13_predictions.csv): base = the model at "
          f"{str(b['base_commit'].iloc[0])[:7]} (main); new = the model at {str(b['model_commit'].iloc[0])[:7]} "
          "(SHIPPED): the GMMA kernel's tiles beyond its 2-deep K/V pipeline at XQA_GMMA_STEADY_SHARE 0.691 of the "
          "fitted iteration under the loaded chain (fitted only on the x11 scan's fp8 rows and the twelfth grid's fp8 "
          "few-CTA rows, looked-at)")
    t = models_table(b, ("regime",), LABELS, LABELS)
    print(t.to_string(**fmt))
    pooled_lines(b, t, LABELS, "xqa thirteenth blind grid")
    BOARD.add("xqa", "blind", "xqa thirteenth blind grid, main's model (committed prices)", b["base_err_pct"],
              int((t["base_goal"] == "met").sum()), len(t))
    BOARD.add("xqa", "blind", "xqa thirteenth blind grid, the shipped model (GMMA steady-state tiles)", b["new_err_pct"],
              int((t["new_goal"] == "met").sum()), len(t), standing=True)
    if (t["new_goal"] == "MISSED").any():
        print(f"  missed: xqa (thirteenth blind grid): {X13_DIAGNOSIS}")
    few = b[b["role"] == "fewcta"]
    if len(few):
        print("thirteenth xqa grid, the few-CTA long-chain rows (TensorRT-LLM's split; split_sms handed to the port):")
        print(few[["model", "dtype", "batch", "context", "split_sms", "median_us", "pred_base_us", "pred_new_us",
                   "base_err_pct", "new_err_pct"]].to_string(**fmt))
