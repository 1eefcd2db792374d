"""Price the H200's FlashMLA grid BEFORE it is measured (lab/kernels/measure_production_attention.py --grid mla_h200
--parts flashmla, run by lab/kernels/run_h200_transfer_e_device.sh with GRID=mla_h200): 52 rows of DeepSeek-V3's MLA
heads at TP 1-8, weighted to the regime part E of the H200 transfer grid missed (short contexts <= 256 at mid batch:
10.4 / 19.5 %, -10.4 % signed, 16 rows), with the family's other regimes as controls. No model change: the product as
committed (the H100-SXM's flashmla terms on the H200) is priced; the question, fixed before the call, is whether part
E's short-context miss holds on 28 new short mid-batch rows. Declared before the call: these rows, by the family's
regimes (K/V dtype x context x batch), are FlashMLA's H200 STANDING, whatever they show.

First checks that no (heads, batch, context) is in any committed flashmla row. Writes
hwmodels/calibration/data/production_attention/production_attention_mla_h200_predictions.csv.

    python lab/kernels/predict_mla_h200.py
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from hwmodels.spec import load_hardware  # noqa: E402
from simulator.calibration import fit_production_attention as FP  # noqa: E402

DATA = ROOT / "hwmodels/calibration/data/production_attention"
OUT = DATA / "production_attention_mla_h200_predictions.csv"
KEYS = ["heads", "batch", "context"]


def committed_flashmla() -> set[tuple]:
    seen = set()
    for p in sorted([*DATA.glob("*.csv"), *DATA.glob("*.csv.gz")]):
        if "_grids" in p.name or "prediction" in p.name or "first_look" in p.name or "mla_h200" in p.name:
            continue
        try:
            d = pd.read_csv(p, usecols=lambda c: c in ("family", *KEYS))
        except (ValueError, pd.errors.ParserError):
            continue
        if not {"family", *KEYS} <= set(d.columns):
            continue
        d = d[d["family"] == "flashmla"]
        seen |= set(zip(d["heads"].astype(int), d["batch"].astype(int), d["context"].astype(int)))
    return seen


def main() -> None:
    import measure_production_attention as M

    s = pd.DataFrame(M.shapes("flashmla", "mla_h200"))
    hit = set(zip(s["heads"], s["batch"], s["context"])) & committed_flashmla()
    if hit:
        raise SystemExit(f"{len(hit)} shapes already measured: {sorted(hit)}")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    out = s.copy()
    for name, col in (("H200", "pred_us"), ("H100-SXM", "pred_h100_us")):
        hw = load_hardware(name)
        ops = FP.build_ops(s, hw.units, float(hw.smem_per_unit_bytes))
        out[col] = np.round(FP.predict_us(ops, hw, hw.efficiency, len(s)), 3)
    lab = FP.regime_labels(out)
    out["regime"] = (lab["kv"] + " " + lab["ctx_regime"] + " " + lab["batch_regime"]).to_numpy()
    out["model_commit"] = commit
    out.to_csv(OUT, index=False)
    print(f"{len(out)} rows -> {OUT.relative_to(ROOT)} (model at {commit}); none in a committed flashmla row")
    print(out.groupby("regime").size().to_string())


if __name__ == "__main__":
    main()
