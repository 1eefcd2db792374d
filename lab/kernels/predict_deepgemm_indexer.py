"""Price the grid of lab/kernels/measure_deepgemm_indexer.py BEFORE it is measured (first look), two ways:

  pred_main_us       (a) the model as committed before any DeepGEMM indexer measurement (simulator/strategies/dsa.py
                     add_deepgemm_paged_logits / add_deepgemm_prefill_logits: kind gemm_fp8_block). Its prefill op
                     takes a whole causal prompt; for a chunk of S rows after K - S earlier keys the same rule is
                     evaluated on the chunk's ranges (query block j walks ceil((K - S + 2 (j + 1)) / 256) key blocks,
                     critical path = the mean over query blocks x ceil(query blocks / SMs) waves)
  pred_struct_us     (b) the structure read from sgl-deep-gemm 0.2.5 (simulator/calibration/fit_deepgemm_indexer.py:
                     the busiest persistent CTA's key blocks in prefill) at the same borrowed rates (borrowed_eff)
  pred_meta_us       (b) the schedule-metadata kernel as one small launch

Writes hwmodels/calibration/data/production_kernels/deepgemm_indexer_first_look_h100.csv with the model's commit; the
file is committed before the device run.

    python lab/kernels/predict_deepgemm_indexer.py [--out PATH]
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import measure_deepgemm_indexer as campaign  # noqa: E402  (the grids; torch not needed)

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "hwmodels/calibration/data/production_kernels/deepgemm_indexer_first_look_h100.csv"


def shapes() -> pd.DataFrame:
    rows = [{"part": "decode", "batch": b, "context": c, "next_n": n, "rows": b * n, "keys": c}
            for b, c, n in campaign.GRID_DECODE]
    rows += [{"part": "prefill", "batch": 1, "context": k, "next_n": 0, "rows": s, "keys": k}
             for s, k in campaign.GRID_PREFILL]
    return pd.DataFrame(rows)


def main_model_us(df: pd.DataFrame, hw) -> np.ndarray:
    """(a): dsa.py's DeepGEMM indexer ops as committed (kind gemm_fp8_block at its fitted terms)."""
    import inspect

    from hwmodels.roofline import price
    from simulator.kernels import indexer as X
    from simulator.ops import OpBuilder
    from simulator.strategies import dsa

    if "sms" in inspect.signature(dsa.add_deepgemm_prefill_logits).parameters:
        raise SystemExit("(a) is the model before the 0.2.5 re-read: run with PYTHONPATH at a checkout of db3789c "
                         "(the committed CSV holds it)")
    H, D = 64, 128
    out = np.zeros(len(df))
    for i, r in enumerate(df.itertuples()):
        b = OpBuilder(1)
        if r.part == "decode":
            dsa.add_deepgemm_paged_logits(b, float(r.batch), float(r.next_n), float(r.context), H, D, 1.0, hw.units)
        elif r.rows == r.keys:
            dsa.add_deepgemm_prefill_logits(b, 1.0, float(r.rows), H, D, 1.0)
        else:   # the same rule on the chunk's ranges
            bq = X.BLOCK_QH // H
            nq = int(np.ceil(r.rows / bq))
            past = r.keys - r.rows
            blocks = np.ceil((past + np.minimum((np.arange(nq) + 1) * bq, r.rows)) / X.BLOCK_KV_PREFILL)
            fb = 2.0 * bq * H * D * X.BLOCK_KV_PREFILL + 3.0 * bq * H * X.BLOCK_KV_PREFILL
            pairs = r.rows * past + r.rows * (r.rows + 1) / 2.0
            b.add("indexer_logits", "gemm_fp8_block", flops=blocks.sum() * fb,
                  bytes_read=r.keys * (D + 4.0) + r.rows * H * D, bytes_written=pairs * 4.0, parallel_units=nq,
                  serial_iters=blocks.sum() / nq * X.ITERS_PER_PREFILL_BLOCK, dtype="fp8", count=1.0)
        out[i] = (price(b.build(), hw, "graph").sum() - hw.launch_graph_s) * 1e6
    return out


def main() -> None:
    from hwmodels.spec import load_hardware
    from simulator.calibration import fit_deepgemm_indexer as F

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    hw = load_hardware("H100-SXM")
    df = shapes()
    df["pred_main_us"] = np.round(main_model_us(df, hw), 3)
    df["pred_struct_us"] = np.round(F.predict_us(df, hw, F.borrowed_eff(hw)), 3)
    df["pred_meta_us"] = np.where(df["part"] == "decode", np.round(F.predict_meta_us(df, hw), 3), np.nan)
    df["model_commit"] = commit
    df.to_csv(args.out, index=False)
    print(df.to_string(index=False))
    print("wrote", args.out)


if __name__ == "__main__":
    main()
