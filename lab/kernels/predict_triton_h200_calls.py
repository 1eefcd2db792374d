"""Price the H200's second vLLM Triton grid (lab/kernels/triton_decode_h200_calls.py) BEFORE it is measured, and fix
each warm row's graph call count (the `calls` column the device script reads). Three models, all on the H200:
  pred_main_us   the product as committed: the warm K/V footprint R copies x the K/V (TV_HARNESS_CALLS False)
  pred_us        candidate A: the footprint min(calls, R) x the K/V (TV_HARNESS_CALLS True), the committed terms; an
                 engine's price (cold rows, kv_l2_hit 0) does not move
  pred_refit_us  candidate B: A with the family's terms refitted under it (fit_triton_vllm on the committed H100 fit
                 rows, their recorded calls), which moves the engine's prices too
Declared before the call: A ships over main if it meets more of the warm rows' regimes (row_role blind: lone 2D,
short decode, verify, control; a tie by the lower pooled median); B ships over A only if it meets more regimes of the
warm and cold rows together (a tie keeps A: B moves every engine price of the family). The blind rows are vLLM
Triton's H200 warm STANDING, the cold rows its engine-state STANDING; blind_many and recheck rows are not judged.
First checks that no new shape is in any committed CSV of either Triton family.

    python lab/kernels/predict_triton_h200_calls.py
"""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from triton_blind_pricing import KEYS, committed_shapes  # noqa: E402

from hwmodels.spec import load_hardware  # noqa: E402
from simulator.calibration import fit_production_attention as FP  # noqa: E402
from simulator.calibration.checks import efficiency_with  # noqa: E402

#: the harness's own call count (lab/harness.py time_graph via measure_production_attention.time_graph): one replay
#: spans ~250 us, 2..128 calls
TARGET_US, MAX_CALLS = 250.0, 128


def refit_terms() -> dict:
    """The triton_vllm terms refitted with the graph's calls in the warm footprint (candidate B)."""
    hw = load_hardware("H100-SXM")
    tv = FP.load_triton_vllm()
    _, tg = FP.latest_triton_vllm()
    old = FP.TV_HARNESS_CALLS, FP.TV_FIT_HARNESS_CALLS
    FP.TV_HARNESS_CALLS = FP.TV_FIT_HARNESS_CALLS = True
    try:
        _, meta = FP.fit_triton_vllm(tv, hw, hw.efficiency, pd.read_csv(tg))
    finally:
        FP.TV_HARNESS_CALLS, FP.TV_FIT_HARNESS_CALLS = old
    return meta["params"]


def price(s: pd.DataFrame, calls_rule: bool, terms: dict | None = None) -> np.ndarray:
    hw = load_hardware("H200")
    eff = efficiency_with(hw.efficiency, terms) if terms else hw.efficiency
    old = FP.TV_HARNESS_CALLS
    FP.TV_HARNESS_CALLS = calls_rule
    try:
        ops = FP.build_ops(s, hw.units, float(hw.smem_per_unit_bytes))
        return np.round(FP.predict_us(ops, hw, eff, len(s)), 3)
    finally:
        FP.TV_HARNESS_CALLS = old


def main() -> None:
    import triton_decode_h200_calls as M

    new = pd.DataFrame(M.grid_shapes())
    old = committed_shapes()
    hit = new.drop(columns="calls", errors="ignore").merge(old.drop_duplicates(), on=list(KEYS), how="inner")
    if len(hit):
        raise SystemExit(f"{len(hit)} shapes already measured:\n{hit.to_string()}")
    s = pd.concat([pd.DataFrame(M.recheck_shapes()), new], ignore_index=True)
    role = s["row_role"].to_numpy()
    s["priced_as"] = np.where(role == "recheck", "blind", np.where(role == "recheck_cold", "cold", role))
    frame = s.assign(row_role=s["priced_as"], calls=np.nan)
    main_us = price(frame, False)
    warm = s["priced_as"].isin(["blind", "blind_many"]).to_numpy()
    own = np.array([min(MAX_CALLS, max(2, math.ceil(TARGET_US / p))) for p in main_us], float)
    s["calls"] = np.where(warm, np.where(s["calls"].notna(), s["calls"], own), np.nan)
    frame["calls"] = s["calls"]
    terms = refit_terms()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    s["pred_main_us"] = main_us
    s["pred_us"] = price(frame, True)
    s["pred_refit_us"] = price(frame, True, terms)
    s["regime"] = FP.triton_blind8_regime(s)
    s["model_commit"] = commit
    s["refit_terms"] = json.dumps({k: round(v, 4) for k, v in terms.items()})
    out = FP.DATA_DIR / "triton_decode_h200_calls_predictions.csv"
    s.to_csv(out, index=False)
    print(f"{len(s)} rows -> {out.relative_to(ROOT)} (model at {commit}); no new shape in {len(old)} committed rows")
    print("refit terms (B):", {k: round(v, 4) for k, v in terms.items()})
    print(s.groupby(["row_role", "regime"]).size().to_string())


if __name__ == "__main__":
    main()
