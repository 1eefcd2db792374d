"""Audit (CPU only): per attention family timed by the production-attention harnesses, how many committed FIT rows had
a harness footprint (R x one call's K/V bytes, R = min(16, ceil(128 MiB / K/V)) copies rotated) under the H100's
50 MB L2, and the share of their K/V loads the vLLM Triton family's rule says hit in the L2
(simulator.calibration.fit_production_attention harness_kv_l2_hit). Prints one line per family:
fit rows, rows < 50 MB, rows < 25 MB (all hit), mean hit share over the fit rows.

    python lab/kernels/audit_harness_l2.py
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from simulator.calibration import fit_production_attention as FP


def kv_bytes(df: pd.DataFrame) -> np.ndarray:
    out = np.zeros(len(df))
    kvb = np.where(df["dtype"].astype(str).to_numpy() == "fp8", 1.0, 2.0)
    for f in df["family"].unique():
        sel = (df["family"] == f).to_numpy()
        page = df["page_size"].fillna(1).to_numpy(float)
        page = np.where(page > 0, page, 1.0)
        out[sel] = FP.harness_kv_bytes(f, df["batch"].to_numpy(float), df["context"].to_numpy(float),
                                       df["kv_heads"].to_numpy(float), df["head_dim"].to_numpy(float), kvb,
                                       page)[sel]
    return out


def fit_tables() -> dict[str, pd.DataFrame]:
    """family -> its committed fit rows (as the fitters select them)."""
    f, _ = FP.latest(FP.DATA_DIR)
    camp = FP.load(f)
    camp = pd.concat([camp, FP.load_mla_fit(), FP.load_fi_lone_fit()], ignore_index=True)
    camp = camp[FP.fit_rows(camp)]
    out = {fam: camp[camp["family"] == fam] for fam in ("fi_decode", "fi_tc", "fi_verify", "fi_mla", "flashmla",
                                                          "sgl_triton")}
    xq = FP.load_xqa()
    out["xqa"] = xq[FP.xqa_fit_rows(xq)] if len(xq) else xq
    fa = FP.load_fa3()
    if len(fa):
        a, b = FP.fa3_fit_rows(fa)
        out["fa3 (stand-in, not refitted here)"] = fa[a | b]
    return out


def main() -> None:
    print(f"{'family':36s} {'fit rows':>8s} {'<50 MB':>7s} {'<25 MB':>7s} {'mean hit':>8s}  by kv dtype (rows <50 MB)")
    for fam, d in fit_tables().items():
        if not len(d):
            continue
        kv = kv_bytes(d)
        foot = np.clip(np.ceil((128 << 20) / np.maximum(kv, 1.0)), 1, 16) * kv
        hit = FP.harness_kv_l2_hit(kv)
        lt = foot < FP.TV_HARNESS_L2_BYTES
        by = ", ".join(f"{k} {int((lt & (d['dtype'].to_numpy() == k)).sum())}" for k in sorted(d["dtype"].unique()))
        print(f"{fam:36s} {len(d):8d} {int(lt.sum()):7d} {int((foot <= FP.TV_HARNESS_L2_BYTES / 2).sum()):7d} "
              f"{hit.mean():8.2f}  {by}")


if __name__ == "__main__":
    main()
