"""Price the prefill rows of lab/kernels/measure_prefill_kernels.py shapes() BEFORE they are measured (the first look),
three ways, all from this tree's committed model on the H100-SXM's fitted file:

  pred_product_us  what the product charges today for any kernel choice: simulator/strategies/dense.py
                   layout_prefill_ops (one 'attention' op: causal pairs P(P+1)/2 + P x O, Q/K/V/O once + the prefix's
                   K/V, B x Hq x P / 128 units; compute.attention fitted on cuDNN's prefill, simulator/calibration/
                   fit_prefill.py)
  pred_family_us   the family's own launch code as it stands (written for decode / verification rows): fa3_prefill ->
                   simulator.kernels.fa3.fa3 (kind attn_fa3: the binary's persistent kernel, its prepare and combine),
                   fi_prefill -> simulator.kernels.flashinfer.fi_tc with cuda_graph=False (an engine's eager prefill
                   plan); neither skips the causal mask's empty tiles (every query tile walks the whole context)
  pred_family_causal_us  the same launches with the work a causal call really does, read from the sources before the
                   measurement (prefill.cuh @ FI_COMMIT num_iterations; hopper/ @ FA3_COMMIT mainloop n_block_max /
                   block_mn.h get_n_block_min_max): each query tile walks the keys up to its last row's diagonal

Writes hwmodels/calibration/data/production_attention/prefill_kernels_first_look.csv with the commit.

    python lab/kernels/predict_prefill_kernels.py
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))
from measure_prefill_kernels import shapes  # noqa: E402

from simulator.calibration import prefill_kernels as PK  # noqa: E402

OUT = ROOT / "hwmodels/calibration/data/production_attention/prefill_kernels_first_look.csv"


def main() -> None:
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "simulator", "hwmodels"], cwd=ROOT,
                           capture_output=True, text=True).stdout.strip()
    if dirty:
        raise SystemExit(f"uncommitted changes under simulator/ hwmodels/: commit the model first\n{dirty}")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    s = pd.DataFrame(shapes())
    s["pred_product_us"] = PK.product_us(s).round(3)
    s["pred_family_us"] = PK.family_us(s, causal=False).round(3)
    s["pred_family_causal_us"] = PK.family_us(s, causal=True).round(3)
    s["model_commit"] = commit
    s.to_csv(OUT, index=False)
    print(f"{len(s)} shapes priced at {commit} -> {OUT}")
    print(s.groupby(["family", "dtype", "role"])[["pred_product_us", "pred_family_us",
                                                  "pred_family_causal_us"]].median().to_string())


if __name__ == "__main__":
    main()
