"""Price the fourth Triton decode blind grid (lab/kernels/triton_decode_blind4.py blind4_shapes()) and the two fit sets
measured in the same call (fp8_fit_shapes(), lone_shapes(): fit rows, not blind) BEFORE they are measured, each shape
twice:

  pred_base_us  the model at BASE_COMMIT (main's model): its code and fitted file, run from `git archive` of that
                commit in a temporary folder (fit_production_attention build_ops / predict_us)
  pred_new_us   the model at this commit (the shipped fitted file)

First checks that no blind shape is in any committed CSV of the family (same heads, K/V dtype, batch, query rows and
context). Writes hwmodels/calibration/data/production_attention/triton_decode_blind4_predictions.csv with both
commits.

    python lab/kernels/predict_triton_decode_blind4.py
"""
from __future__ import annotations

import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
DATA = ROOT / "hwmodels/calibration/data/production_attention"
OUT = DATA / "triton_decode_blind4_predictions.csv"
BASE_COMMIT = "8b74743"
KEYS = ("family", "heads", "kv_heads", "dtype", "batch", "q_rows", "context")

PRICE = """
import sys, pandas as pd
from dataclasses import replace
from hwmodels.spec import load_hardware
from simulator.calibration import fit_production_attention as FP
s = pd.read_csv(sys.argv[1])
hw = load_hardware("H100-SXM")
ops = FP.build_ops(s, hw.units, float(hw.smem_per_unit_bytes or 233472))
s["pred_us"] = FP.predict_us(ops, hw, hw.efficiency, len(s))
s[["pred_us"]].to_csv(sys.argv[2], index=False)
"""


def committed_shapes() -> pd.DataFrame:
    """Every committed measured row of either family (shape keys only)."""
    out = []
    for p in sorted(DATA.glob("*.csv")):
        if "_grids" in p.name or "predictions" in p.name or "first_look" in p.name:
            continue
        try:
            d = pd.read_csv(p, usecols=lambda c: c in KEYS)
        except (ValueError, pd.errors.ParserError):
            continue
        if not set(KEYS) <= set(d.columns):
            continue
        out.append(d[d["family"].isin(["triton_vllm", "sgl_triton"])])
    d = pd.concat(out, ignore_index=True)
    d["q_rows"] = d["q_rows"].fillna(1)
    return d


def price_at(shapes: pd.DataFrame, commit: str | None) -> np.ndarray:
    with tempfile.TemporaryDirectory() as tmp:
        root = ROOT
        if commit is not None:
            tar = subprocess.run(["git", "archive", commit], cwd=ROOT, capture_output=True, check=True).stdout
            tarfile.open(fileobj=BytesIO(tar)).extractall(tmp)
            root = Path(tmp)
        src, dst = Path(tmp) / "shapes_in.csv", Path(tmp) / "prices_out.csv"
        shapes.to_csv(src, index=False)
        subprocess.run([sys.executable, "-c", PRICE, str(src), str(dst)], cwd=root, check=True,
                       env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})
        return pd.read_csv(dst)["pred_us"].to_numpy()


def main() -> None:
    import triton_decode_blind4 as M

    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "simulator", "hwmodels"], cwd=ROOT,
                           capture_output=True, text=True).stdout.strip()
    if dirty:
        raise SystemExit(f"uncommitted changes under simulator/ hwmodels/: commit the model first\n{dirty}")
    s = pd.DataFrame(M.all_shapes())
    old = committed_shapes()
    hit = s[s["row_role"] == "blind"].merge(old.drop_duplicates(), on=list(KEYS), how="inner")
    if len(hit):
        raise SystemExit(f"{len(hit)} shapes already measured:\n{hit.to_string()}")
    s["pred_base_us"] = np.round(price_at(s, BASE_COMMIT), 3)
    s["pred_new_us"] = np.round(price_at(s, None), 3)
    s["base_commit"] = BASE_COMMIT
    s["model_commit"] = commit
    s.to_csv(OUT, index=False)
    print(f"{len(s)} shapes priced at {commit[:10]} (base {BASE_COMMIT}), none in {len(old)} committed rows -> {OUT}")
    print(s.groupby(["row_role", "family", "dtype", "q_rows"])[["pred_base_us", "pred_new_us"]].median().to_string())


if __name__ == "__main__":
    main()
