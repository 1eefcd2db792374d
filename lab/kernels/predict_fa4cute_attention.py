"""Price the FA4-CuTe sm_90 grid (lab/kernels/measure_fa4cute_attention.py) with the committed model BEFORE it is
measured (the first look of the fa3 family): each shape priced twice under the shipped H100 terms
(hwmodels/calibration/fitted/H100-SXM.yaml, attn_fa3 borrowed from FlashInfer's measured FA2 prefill kernel):

  pred_fa3_us       simulator.kernels.fa3.fa3 as the product prices the call (FA3's varlen split-KV plan, combine)
  pred_struct_us    simulator.kernels.fa3.fa4cute_sm90: what the measured kernel launches (no split, one CTA per
                    (m-block, KV head, request)), with the same borrowed attn_fa3 terms

Writes hwmodels/calibration/data/production_attention/fa3_fa4cute_first_look.csv with the commit of the code.

`--grid blind` prices measure_fa4cute_attention.blind_shapes() (the blind grid) with the measured kernel's launch
structure (fa4cute_sm90) twice, BEFORE it is measured: pred_new_us with this checkout's committed model and
pred_base_us with the model of `--base` (a commit, extracted with git archive into a temporary folder and imported
from there in a subprocess), into fa3_fa4cute_blind_predictions.csv.

    python lab/kernels/predict_fa4cute_attention.py [--grid blind --base COMMIT]
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
OUT = ROOT / "hwmodels/calibration/data/production_attention/fa3_fa4cute_first_look.csv"


def price(shapes: pd.DataFrame, fn_name: str) -> np.ndarray:
    from hwmodels.roofline import price as roof
    from hwmodels.spec import load_hardware
    from simulator.kernels import fa3 as FA3
    from simulator.kernels.production import emit
    from simulator.ops import OpBuilder

    hw = load_hardware("H100-SXM")
    b = OpBuilder(len(shapes))
    a = {c: shapes[c].to_numpy(float) for c in ("batch", "q_rows", "context", "heads", "kv_heads", "head_dim",
                                                "page_size")}
    args = (a["batch"], a["q_rows"], a["context"], a["heads"], a["kv_heads"], a["head_dim"], 2.0)
    if fn_name == "fa3":
        launches, _ = FA3.fa3(*args, np.maximum(a["page_size"], 1.0), hw.units)
    else:
        launches, _ = FA3.fa4cute_sm90(*args, a["page_size"], hw.units)
    emit(b, launches, hw.units)
    ops = b.build()
    t = roof(ops, hw, "graph")
    return np.bincount(ops.setting, weights=t, minlength=len(shapes)) * 1e6


BLIND_OUT = ROOT / "hwmodels/calibration/data/production_attention/fa3_fa4cute_blind_predictions.csv"


def price_at(commit: str, shapes: pd.DataFrame) -> np.ndarray:
    """fa4cute_sm90 prices of `shapes` under the model of `commit` (git archive into a temporary folder; this file's
    price() run there in a subprocess, importing that commit's hwmodels / simulator)."""
    import json
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        arc = subprocess.run(["git", "archive", commit, "hwmodels", "simulator"], cwd=ROOT, capture_output=True,
                             check=True).stdout
        subprocess.run(["tar", "-x", "-C", d], input=arc, check=True)
        code = ("import sys, json, pandas as pd; sys.path.insert(0, sys.argv[1]); sys.path.insert(1, sys.argv[2]);"
                "import hwmodels; assert hwmodels.__file__.startswith(sys.argv[1]), hwmodels.__file__;"
                "import predict_fa4cute_attention as P; s = pd.read_json(sys.stdin);"
                "print(json.dumps([float(x) for x in P.price(s, 'fa4cute_sm90')]))")
        r = subprocess.run([sys.executable, "-c", code, d, str(Path(__file__).resolve().parent)],
                           input=shapes.to_json(), capture_output=True, text=True, cwd=d)
        if r.returncode:
            raise SystemExit(r.stderr)
        return np.array(json.loads(r.stdout.strip().splitlines()[-1]))


def main() -> None:
    import argparse

    import measure_fa4cute_attention as M

    ap = argparse.ArgumentParser()
    ap.add_argument("--grid", choices=("campaign", "blind"), default="campaign")
    ap.add_argument("--base", default="db3789c", help="the commit whose model prices pred_base_us (--grid blind)")
    args = ap.parse_args()
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "simulator", "hwmodels"], cwd=ROOT,
                           capture_output=True, text=True).stdout.strip()
    if dirty:
        raise SystemExit(f"uncommitted changes under simulator/ hwmodels/: commit the model first\n{dirty}")
    if args.grid == "blind":
        base = subprocess.run(["git", "rev-parse", args.base], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
        s = pd.DataFrame(M.blind_shapes())
        s["pred_new_us"] = np.round(price(s, "fa4cute_sm90"), 3)
        s["pred_base_us"] = np.round(price_at(base, s[list(M.blind_shapes()[0])]), 3)
        s["model_commit"], s["base_commit"] = commit, base
        s.to_csv(BLIND_OUT, index=False)
        print(f"{len(s)} blind shapes priced at {commit[:10]} (new) and {base[:10]} (base) -> {BLIND_OUT}")
        print(s.groupby(["model", "q_rows", "page_size"])[["pred_new_us", "pred_base_us"]].median().to_string())
        return
    s = pd.DataFrame(M.shapes())
    s["pred_fa3_us"] = np.round(price(s, "fa3"), 3)
    s["pred_struct_us"] = np.round(price(s, "fa4cute_sm90"), 3)
    s["model_commit"] = commit
    s.to_csv(OUT, index=False)
    print(f"{len(s)} shapes priced at {commit[:10]} -> {OUT}")
    print(s.groupby(["model", "q_rows", "page_size"])[["pred_fa3_us", "pred_struct_us"]].median().to_string())


if __name__ == "__main__":
    main()
