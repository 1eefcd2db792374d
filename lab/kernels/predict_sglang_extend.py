"""Price SGLang's flashinfer-backend extend with a cached prefix (lab/kernels/measure_sglang_extend.py shapes()) BEFORE it
is measured, on the H200 it runs on: pred_us = the product's price of the part (simulator/kernels/families.py
fi_prefill_launches('ragged'): FlashInfer's sm_90 kernel over the new tokens + its FA2 kernel, non-causal, over the
prefix (page size 1) + the merge, for part 'extend'; the FA2 launches alone for part 'prefix'). Nothing fitted.

    python lab/kernels/predict_sglang_extend.py   # -> hwmodels/calibration/data/production_attention/
                                                  #    sglang_extend_predictions.csv
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))
from measure_sglang_extend import shapes  # noqa: E402

from hwmodels.spec import load_hardware  # noqa: E402
from simulator.calibration import fit_production_attention as FP  # noqa: E402
from simulator.kernels import flashinfer as FI  # noqa: E402
from simulator.kernels.families import DEFAULT_SMEM_PER_SM, fi_prefill_launches  # noqa: E402
from simulator.kernels.production import emit  # noqa: E402
from simulator.ops import OpBuilder  # noqa: E402

OUT = ROOT / "hwmodels/calibration/data/production_attention/sglang_extend_predictions.csv"


def main() -> None:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    s = pd.DataFrame(shapes())
    hw = load_hardware("H200")
    a = {c: s[c].to_numpy(float) for c in ("batch", "q_rows", "context", "heads", "kv_heads", "prefix")}
    kvb = np.where(s["dtype"] == "fp8", 1.0, 2.0)
    pred = np.zeros(len(s))
    for part in ("extend", "prefix"):
        m = (s["part"] == part).to_numpy()
        b = OpBuilder(int(m.sum()))
        if part == "extend":
            ls = fi_prefill_launches("ragged", a["batch"][m], a["q_rows"][m], a["context"][m], a["heads"][m],
                                     a["kv_heads"][m], 128.0, kvb[m], 1.0, hw.units, None, "hopper")
        else:
            ls = FI.fi_tc(a["batch"][m], a["q_rows"][m], a["prefix"][m], a["heads"][m], a["kv_heads"][m], 128.0, kvb[m],
                          1.0, hw.units, DEFAULT_SMEM_PER_SM, cuda_graph=False, causal=np.zeros(int(m.sum()), bool))[0]
        emit(b, ls, hw.units)
        pred[m] = FP.predict_us(b.build(), hw, hw.efficiency, int(m.sum()))
    out = s.copy()
    out["pred_us"] = np.round(pred, 3)
    out["model_commit"] = commit
    out.to_csv(OUT, index=False)
    print(f"{len(out)} rows -> {OUT.relative_to(ROOT)} (model at {commit})")
    print(out[["part", "model", "dtype", "batch", "q_rows", "prefix", "pred_us"]].to_string())


if __name__ == "__main__":
    main()
