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

    python lab/kernels/predict_fa3_binary.py
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


def main() -> None:
    import measure_fa3_binary as M
    from simulator.kernels import fa3 as FA3
    from hwmodels.spec import load_hardware

    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "simulator", "hwmodels"], cwd=ROOT,
                           capture_output=True, text=True).stdout.strip()
    if dirty:
        raise SystemExit(f"uncommitted changes under simulator/ hwmodels/: commit the model first\n{dirty}")
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
