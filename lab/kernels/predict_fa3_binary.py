"""Price the FA3-binary grid (lab/kernels/measure_fa3_binary.py shapes()) with the committed model BEFORE the binary
is measured (the first look of FlashAttention-3's own hopper/ forward): every shape priced under the shipped H100
terms (hwmodels/calibration/fitted/H100-SXM.yaml) twice:

  pred_fa3_us       the product's `fa3` kernel choice (simulator.kernels.families.gqa_launches("fa3", ...):
                    simulator.kernels.fa3.fa3, hopper/'s varlen split-KV plan, persistent launch, combine kernel);
                    fp8 rows with 1-byte K/V (the model keeps the bf16 tile)
  pred_unsplit_us   simulator.kernels.fa3.fa4cute_sm90 (one CTA per (m-block, KV head, request), no split, no
                    combine, the stand-in's launch structure the rates were fitted on): the comparator of the
                    num_splits = 1 rows

Writes hwmodels/calibration/data/production_attention/fa3_binary_first_look.csv with the commit of the code.

`--grid blind` prices measure_fa3_binary.blind_shapes() BEFORE they are measured with the product's fa3 choice twice:
pred_new_us with this checkout's committed model and pred_base_us with the model of `--base` (main's, extracted with
git archive into a temporary folder and imported there in a subprocess), into fa3_binary_blind_predictions.csv.

`--grid blind2` does the same for measure_fa3_binary.blind2_shapes() into fa3_binary_blind2_predictions.csv (base =
main's model at ea0997d, new = the persistent kernel's own kind, its scheduler loads and partial last round, the prepare
kernel's own terms).

`--grid blind3` does the same for measure_fa3_binary.blind3_shapes() into fa3_binary_blind3_predictions.csv (base =
main's model at 08cf44f, new = the binary's own streaming rate, per-block times of both builds and per-tile turnover).

    python lab/kernels/predict_fa3_binary.py [--grid blind --base 06e70f8 | --grid blind2 --base ea0997d |
                                              --grid blind3 --base 08cf44f]
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
OUT = ROOT / "hwmodels/calibration/data/production_attention/fa3_binary_first_look.csv"


def price(shapes: pd.DataFrame, which: str) -> np.ndarray:
    """Per-shape time (us) of one call under the committed model: which = 'fa3' (the product's choice) or 'unsplit'."""
    from hwmodels.roofline import price as roof
    from hwmodels.spec import load_hardware
    from simulator.kernels import fa3 as FA3
    from simulator.kernels.families import gqa_launches
    from simulator.kernels.production import emit
    from simulator.ops import OpBuilder

    hw = load_hardware("H100-SXM")
    b = OpBuilder(len(shapes))
    a = {c: shapes[c].to_numpy(float) for c in ("batch", "q_rows", "context", "heads", "kv_heads", "head_dim",
                                                "page_size")}
    kvb = np.where(shapes["dtype"].to_numpy() == "e4m3", 1.0, 2.0)
    args = (a["batch"], a["q_rows"], a["context"], a["heads"], a["kv_heads"], a["head_dim"], kvb, a["page_size"])
    if which == "fa3":
        launches = gqa_launches("fa3", *args, hw.units)
    else:
        launches, _ = FA3.fa4cute_sm90(*args, hw.units)
    emit(b, launches, hw.units)
    ops = b.build()
    t = roof(ops, hw, "graph")
    return np.bincount(ops.setting, weights=t, minlength=len(shapes)) * 1e6


BLIND_OUT = ROOT / "hwmodels/calibration/data/production_attention/fa3_binary_blind_predictions.csv"
BLIND2_OUT = ROOT / "hwmodels/calibration/data/production_attention/fa3_binary_blind2_predictions.csv"
BLIND3_OUT = ROOT / "hwmodels/calibration/data/production_attention/fa3_binary_blind3_predictions.csv"


def price_at(commit: str, shapes: pd.DataFrame) -> np.ndarray:
    """The product's fa3 prices of `shapes` under the model of `commit` (git archive of hwmodels / simulator into a
    temporary folder; this file's price() run there in a subprocess)."""
    import json
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        arc = subprocess.run(["git", "archive", commit, "hwmodels", "simulator"], cwd=ROOT, capture_output=True,
                             check=True).stdout
        subprocess.run(["tar", "-x", "-C", d], input=arc, check=True)
        code = ("import sys, json, pandas as pd; sys.path.insert(0, sys.argv[1]); sys.path.insert(1, sys.argv[2]);"
                "import hwmodels; assert hwmodels.__file__.startswith(sys.argv[1]), hwmodels.__file__;"
                "import predict_fa3_binary as P; s = pd.read_json(sys.stdin);"
                "print(json.dumps([float(x) for x in P.price(s, 'fa3')]))")
        r = subprocess.run([sys.executable, "-c", code, d, str(Path(__file__).resolve().parent)],
                           input=shapes.to_json(), capture_output=True, text=True, cwd=d)
        if r.returncode:
            raise SystemExit(r.stderr)
        return np.array(json.loads(r.stdout.strip().splitlines()[-1]))


def main() -> None:
    import argparse

    import measure_fa3_binary as M

    from hwmodels.spec import load_hardware
    from simulator.kernels import fa3 as FA3

    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "simulator", "hwmodels"], cwd=ROOT,
                           capture_output=True, text=True).stdout.strip()
    if dirty:
        raise SystemExit(f"uncommitted changes under simulator/ hwmodels/: commit the model first\n{dirty}")
    ap = argparse.ArgumentParser()
    ap.add_argument("--grid", choices=("first", "blind", "blind2", "blind3"), default="first")
    ap.add_argument("--base", default="06e70f8", help="the commit whose model prices pred_base_us (--grid blind)")
    args = ap.parse_args()
    if args.grid in ("blind", "blind2", "blind3"):
        base = subprocess.run(["git", "rev-parse", args.base], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
        shp = {"blind": M.blind_shapes, "blind2": M.blind2_shapes, "blind3": M.blind3_shapes}[args.grid]()
        out = {"blind": BLIND_OUT, "blind2": BLIND2_OUT, "blind3": BLIND3_OUT}[args.grid]
        s = pd.DataFrame(shp)
        s["pred_new_us"] = np.round(price(s, "fa3"), 3)
        s["pred_base_us"] = np.round(price_at(base, s[list(shp[0])]), 3)
        s["model_commit"], s["base_commit"] = commit, base
        s.to_csv(out, index=False)
        print(f"{len(s)} blind shapes priced at {commit[:10]} (new) and {base[:10]} (base) -> {out}")
        print(s.groupby(["tag", "dtype"])[["pred_new_us", "pred_base_us"]].median().to_string())
        return
    s = pd.DataFrame(M.shapes())
    s["pred_fa3_us"] = np.round(price(s, "fa3"), 3)
    s["pred_unsplit_us"] = np.round(price(s, "unsplit"), 3)
    sms = load_hardware("H100-SXM").units
    kvb = np.where(s["dtype"].to_numpy() == "e4m3", 1.0, 2.0)
    _, meta = FA3.fa3(s["batch"].to_numpy(float), s["q_rows"].to_numpy(float), s["context"].to_numpy(float),
                      s["heads"].to_numpy(float), s["kv_heads"].to_numpy(float), s["head_dim"].to_numpy(float), kvb,
                      s["page_size"].to_numpy(float), sms)
    s["model_splits"] = np.asarray(meta["splits"]).astype(int)
    s["model_commit"] = commit
    s.to_csv(OUT, index=False)
    print(f"{len(s)} shapes priced at {commit[:10]} -> {OUT}")
    print(s.groupby(["tag", "dtype", "num_splits"])[["pred_fa3_us", "pred_unsplit_us", "model_splits"]].median()
          .to_string())


if __name__ == "__main__":
    main()
