"""What the Triton decode blind-grid pricing scripts (predict_triton_decode_blind2-6.py) share: the committed shapes
of both Triton families (to check a new grid's shapes were never measured) and a grid priced twice, by the model at a
base commit (its code and fitted file from `git archive` in a temporary folder) and by this tree's model, written with
both commits before the grid is measured (price_variant: once more by a variant commit)."""
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
DATA = ROOT / "hwmodels/calibration/data/production_attention"
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
    for p in sorted([*DATA.glob("*.csv"), *DATA.glob("*.csv.gz")]):   # plain or committed gzip-compressed
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


def price_grid(s: pd.DataFrame, out: Path, base_commit: str, blind: pd.Series | None, group: list[str]) -> None:
    """Refuse a dirty model tree or a `blind` shape already measured, price `s` at `base_commit` and at this tree
    (pred_base_us, pred_new_us, both commits beside them), write `out` and print the medians by `group`."""
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "simulator", "hwmodels"], cwd=ROOT,
                           capture_output=True, text=True).stdout.strip()
    if dirty:
        raise SystemExit(f"uncommitted changes under simulator/ hwmodels/: commit the model first\n{dirty}")
    old = committed_shapes()
    hit = (s if blind is None else s[blind]).merge(old.drop_duplicates(), on=list(KEYS), how="inner")
    if len(hit):
        raise SystemExit(f"{len(hit)} shapes already measured:\n{hit.to_string()}")
    s["pred_base_us"] = np.round(price_at(s, base_commit), 3)
    s["pred_new_us"] = np.round(price_at(s, None), 3)
    s["base_commit"] = base_commit
    s["model_commit"] = commit
    s.to_csv(out, index=False)
    print(f"{len(s)} shapes priced at {commit[:10]} (base {base_commit}), none in {len(old)} committed rows -> {out}")
    print(s.groupby(group)[["pred_base_us", "pred_new_us"]].median().to_string())


def price_variant(shapes: pd.DataFrame, out: Path, v1_commit: str) -> None:
    """Price `shapes` (the grid's shape rows, before price_grid's columns) once more by the model at `v1_commit` (a
    variant), insert it after pred_new_us as pred_v1_us with the commit in v1_commit, rewrite `out` (price_grid's file)
    and print the three medians by K/V dtype and query rows."""
    out_df = pd.read_csv(out)
    out_df.insert(out_df.columns.get_loc("pred_new_us") + 1, "pred_v1_us", price_at(shapes, v1_commit).round(3))
    out_df["v1_commit"] = v1_commit
    out_df.to_csv(out, index=False)
    print(out_df.groupby(["dtype", "q_rows"])[["pred_base_us", "pred_v1_us", "pred_new_us"]].median().to_string())
