"""The third small-M GEMM hold-out: bf16 and per-tensor fp8 GEMMs at the (K, N) of real models' decode layers, in none
of the earlier campaigns (production_kernels_*.csv), predicted and committed before they were measured.

Shapes (FRESH3_KN x FRESH3_M, both dtypes; lab/kernels/measure_production_kernels.py --grid fresh3 measures the same
lists, weights rotated past the L2): the weight GEMMs [M, K] x [K, N] of
    Llama-3.1-8B (hidden 4096, MLP 14336, 32 / 8 heads of 128) at TP 1 / 2 / 4 / 8: qkv, o, gate_up, down slices
    Llama-3.1-70B (hidden 8192, MLP 28672, 64 / 8 heads) at TP 1 / 2 / 4 / 8
    Qwen2.5-7B (hidden 3584, MLP 18944, 28 / 4 heads) at TP 1: qkv, down
    DeepSeek-V3 (hidden 7168, q_lora 1536, kv_lora 512, 128 heads, dense MLP 18432) at TP 4 / 8: q_b, kv_b, dense down
(the model configs' config.json fields; a (K, N) that two models share is listed once). M 1 / 12 / 48: one decode
row, a small and a mid batch (both M buckets of the selection rule; none of the earlier campaigns' M values 8 / 16 /
32 / 64 at 12 and 48).

Each shape is priced twice: by the current model (`predict`: the selection table where an entry covers the shape,
the structural rule of simulator.kernels.cublaslt.derive elsewhere) and by the model before the rule existed (the
same function run on that commit's checkout gives `pred_us` of the full-device fallback; `predict(..., rule=False)`
reproduces it). `covered` tells which of the two the shape is (1 = table entry, 0 = rule / fallback).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from hwmodels.spec import HardwareSpec
from simulator.calibration import fit_production_topk_gemm as FP

FRESH3_KN = [
    # Llama-3.1-8B: o TP1, gate_up TP1, qkv TP2, down TP2, qkv TP4, o TP4, gate_up TP4, down TP4, qkv TP8, o TP8,
    # down TP8
    (4096, 4096), (4096, 28672), (4096, 3072), (7168, 4096), (4096, 1536), (1024, 4096), (4096, 7168), (3584, 4096),
    (4096, 768), (512, 4096), (1792, 4096),
    # Llama-3.1-70B: qkv TP1, down TP1, o TP2, down TP2, qkv TP4, gate_up TP4, qkv TP8, o TP8, down TP8
    (8192, 10240), (28672, 8192), (4096, 8192), (14336, 8192), (8192, 2560), (8192, 14336), (8192, 1280),
    (1024, 8192), (3584, 8192),
    # Qwen2.5-7B: qkv TP1, down TP1
    (3584, 4608), (18944, 3584),
    # DeepSeek-V3: q_b TP8, dense-MLP down TP8, q_b TP4, kv_b TP4 (kv_b TP8 = Llama-8B's o TP8, 512 x 4096)
    (1536, 3072), (2304, 7168), (1536, 6144), (512, 8192),
]
FRESH3_M = [1, 12, 48]
KERNELS = ("bf16", "fp8_tensorwise")

#: the fourth small-M set (BLIND, predictions committed before lab/kernels/measure_gemm_graph_launch.py measured it,
#: CSV suffix _blind4): (K, N) of the decode layers of models in no earlier campaign. Qwen2.5-14B (hidden 5120, MLP
#: 13824, 40 / 8 heads of 128): qkv / o / gate_up / down at TP 1, qkv / o / down at TP 2, qkv / gate_up / down at TP 4;
#: Qwen2.5-32B (MLP 27648): down TP 1; Llama-3.2-3B (hidden 3072, MLP 8192, 24 / 8 heads): qkv / o / gate_up / down
#: TP 1; Mistral-Nemo-12B (hidden 5120, 32 heads of 128, MLP 14336): o / down TP 1. None in an earlier
#: production_kernels_*.csv. M 1 / 24 / 40 (none of the earlier M values).
BLIND4_KN = [(5120, 7168), (5120, 5120), (5120, 27648), (13824, 5120), (5120, 3584), (2560, 5120), (6912, 5120),
             (5120, 1792), (5120, 6912), (3456, 5120), (27648, 5120), (3072, 5120), (3072, 3072), (3072, 16384),
             (8192, 3072), (4096, 5120), (14336, 5120)]
BLIND4_M = [1, 24, 40]


def shapes(kn=None, ms=None) -> pd.DataFrame:
    """The hold-out's shapes in the measurement CSV's columns (no timings); kn / ms: another set's lists (BLIND4_*)."""
    return pd.DataFrame([{"family": "gemm", "kernel": kern, "dist": "", "rows": m, "n": n, "k": k}
                         for k, n in (kn or FRESH3_KN) for m in (ms or FRESH3_M) for kern in KERNELS])


def predict(hw: HardwareSpec, rule: bool = True, out: str | Path | None = None, blind4: bool = False) -> pd.DataFrame:
    """The model's time for every shape (blind4: the BLIND4_* set) with the device's committed terms; `covered` = a
    selection-table entry covers it. Written to `out` when given."""
    g = FP.gemm_frame(shapes(BLIND4_KN, BLIND4_M) if blind4 else shapes())
    g["pred_us"] = FP.predict_gemm_us(g, hw, hw.efficiency, rule=rule)
    g["covered"] = FP.small_m_covered(g).astype(int)
    res = g.rename(columns={"m": "rows", "kk": "k"})[FP.SHAPE_KEYS + ["covered", "pred_us"]]
    if out is not None:
        res.to_csv(out, index=False, float_format="%.4f")
    return res


def accuracy(pred_csv: str | Path, base_csv: str | Path, meas_csv: str | Path, m_label: str = "M<=48",
             tags: tuple[str, str] = ("rule", "before")) -> pd.DataFrame:
    """Per kernel x (selection table | rule), the committed predictions of the current model (`pred_csv`) and of the
    model before the rule (`base_csv`) against the measurement: median / p90 |error| and median signed error, %
    (columns named by `tags`)."""
    cur = FP._predicted_and_measured(pred_csv, meas_csv)
    base = pd.read_csv(base_csv, keep_default_na=False).rename(columns={"pred_us": "base_us"})
    base["dist"] = base["dist"].astype(str)
    m = cur.merge(base[FP.SHAPE_KEYS + ["base_us"]], on=FP.SHAPE_KEYS, how="inner")
    meas = m["median_us"].astype(float)
    rows = []
    for (kern, cov), x in m.groupby(["kernel", "covered"]):
        y = meas[x.index]
        row = {"regime": f"GEMM {kern}: decode {m_label}, {'selection table' if cov else 'not in the table'}",
               "n": len(x)}
        for tag, col in ((tags[0], "pred_us"), (tags[1], "base_us")):
            e = (x[col].astype(float) / y - 1.0) * 100.0
            row.update({f"{tag}_med": float(np.median(np.abs(e))), f"{tag}_p90": float(np.percentile(np.abs(e), 90)),
                        f"{tag}_signed": float(np.median(e))})
        rows.append(row)
    return pd.DataFrame(rows)


def split_agreement(choices_csv: str | Path, notes: str | Path) -> pd.DataFrame:
    """Per kernel: of the shapes in `choices_csv` (a model's predicted split_k per shape), how many the profiler's
    kernel list in `notes` (a splitKreduce kernel or not) agrees with."""
    from simulator.calibration import fit_cublaslt_rule as R

    obs = {(("fp8_tensorwise" if o["dtype"] == "fp8" else "bf16"), o["m"], o["k"], o["n"]): o["split"]
           for o in R.observations(notes)}
    ch = pd.read_csv(choices_csv)
    ch["observed"] = [obs.get((k, int(m), int(kk), int(n))) for k, m, kk, n in
                      zip(ch["kernel"], ch["rows"], ch["k"], ch["n"])]
    ch = ch[ch["observed"].notna()]
    ok = (ch["split_k"] > 0) == ch["observed"].astype(bool)
    return pd.DataFrame([{"kernel": k, "shapes": int(len(x)), "agree": int(ok[x.index].sum()),
                          "observed_split": int(x["observed"].astype(bool).sum()),
                          "predicted_split": int((x["split_k"] > 0).sum())} for k, x in ch.groupby("kernel")])
