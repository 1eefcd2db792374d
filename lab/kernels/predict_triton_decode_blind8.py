"""Price the eighth Triton decode blind grid (lab/kernels/triton_decode_blind8.py all_shapes(): lone 2D programs,
short decode at batch 1-64, verification q 2-6, controls; each warm (row_role "blind", the harness), in the engine's
state ("cold": the L2 flushed before every call) and K/V-cold ("kvcold": K/V copies over >= 128 MiB, metadata warm))
BEFORE it is measured:

  pred_base_us  the model at BASE_COMMIT (main's model): its code and fitted file, run from `git archive` of that
                commit in a temporary folder; warm rows as harness rows (its K/V copies' L2 share), cold and kvcold
                rows as its engine price (no K/V in the L2: main's model has no other notion of the engine's state)
  pred_new_us   the model at this commit: warm rows as harness rows (the hot tiles' saving no longer clipped at the
                prologue: Launch.saved_loads), cold rows in the engine's state (triton_vllm engine=True: metadata,
                block table and code out of the L2), kvcold rows with no K/V hit and the rest warm (engine=False)
  pred_v1_us    the same model at V1_COMMIT: the engine's state without the launch's cold code / parameter loads
                (VLLM_COLD_LAUNCH_LOADS 0: only the kernel's own metadata and block-table loads cold), a variant

First checks that no blind shape is in any committed CSV of the family (same heads, K/V dtype, batch, query rows and
context) and that the model tree is committed. Writes
hwmodels/calibration/data/production_attention/triton_decode_blind8_predictions.csv with the commits.

    python lab/kernels/predict_triton_decode_blind8.py V1_COMMIT
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from triton_blind_pricing import DATA, KEYS, ROOT, committed_shapes, price_at  # noqa: E402

OUT = DATA / "triton_decode_blind8_predictions.csv"
BASE_COMMIT = "08cf44f"


def main() -> None:
    import triton_decode_blind8 as M

    v1 = sys.argv[1]
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
    base = s.assign(row_role=np.where(s["row_role"] == "kvcold", "cold", s["row_role"]))
    s["pred_base_us"] = np.round(price_at(base, BASE_COMMIT), 3)
    s["pred_new_us"] = np.round(price_at(s, None), 3)
    s["pred_v1_us"] = np.round(price_at(s, v1), 3)
    s["base_commit"], s["model_commit"], s["v1_commit"] = BASE_COMMIT, commit, v1
    s.to_csv(OUT, index=False)
    print(f"{len(s)} rows priced at {commit[:10]} (base {BASE_COMMIT}, v1 {v1}), no blind shape in {len(old)} "
          f"committed rows -> {OUT}")
    print(s.groupby(["row_role", "q_rows"])[["pred_base_us", "pred_new_us", "pred_v1_us"]].median().to_string())


if __name__ == "__main__":
    main()
