"""Block-scaled fp8 GEMM grid 9, BLIND: cuBLASLt's block path (torch._scaled_mm, 128 x 128 / 1 x 128 scales) at decode /
small M, split counts AND times of the shipped split rule (main: simulator.kernels.gemm_fp8.cublaslt_block_split,
CUBLASLT_SPLIT_RULE "tiles") and of the candidate read off all 83 recorded choices ("work": W = M x the cluster-padded
tiles; unsplit above W 960 or 48 padded tiles; 2 / 3 / 5 / 7 slices by K steps per slice > 20 and slices x W <= 1900).

cuBLASLt's heuristic is closed source (NVIDIA ships no source for it): its choice is modelled only from what the
profiler shows (the nvjet kernel names, _splitK_ or not, and the launched grids: CTAs / padded tiles = slices). The grid
(lab/kernels/predict_gemm_grid9.py; small-M projections of Llama-3 8B / 70B / 405B, Mistral-Large-2, Mixtral-8x22B,
Qwen3, DeepSeek-V3 / Kimi-K2, no (M, K, N) of any earlier CSV) was priced by both rules (the kind's terms as committed)
and committed before it was measured (09a8e20); one device call (lab/kernels/measure_deepgemm_gemm.py --tag grid9, H100
80GB HBM3, torch 2.11.0+cu130). Regimes are the candidate's split (fixed before the call) and M 68-128 controls.
"""
from __future__ import annotations

import numpy as np

from simulator.calibration import fit_production_topk_gemm as FP
from simulator.calibration.scoreboard import BOARD, add_table, models_table

PREDICTION_COMMIT = "09a8e20"
FAMILY = "block fp8 GEMM (DeepGEMM / cuBLASLt)"
#: the model that ships (its grid-9 rows hold cuBLASLt's STANDING marker): the candidate (2 of 4 regimes like main, lower
#: pooled median and p90: 7.2 / 17.2 % against 8.1 / 22.1 %)
SHIPPED = "cand"


def grid9_section() -> None:
    """Print grid 9's blind table (split counts and times, main vs the candidate rule) and add its board rows."""
    m = FP.cublaslt_grid9_errors()
    labels = list(FP.CUBLASLT_GRID9_MODELS.values())
    head = (f"\n== cuBLASLt block fp8 GEMM grid 9, BLIND (split counts AND times predicted before measuring, commit "
            f"{PREDICTION_COMMIT}: {FP.CUBLASLT_GRID9_PREDICTION}): torch._scaled_mm's block path at M 8-124, 8-64 "
            f"tiles, 16-224 K steps; main = the split rule shipped before grid 9 ('tiles'), cand = the rule read off 83 recorded choices "
            f"(gemm_fp8.CUBLASLT_SPLIT_RULE 'work'), the kind's terms as committed; shipped: {SHIPPED}")
    cublaslt_grid_report(m, labels, head, 9, None)   # cuBLASLt's STANDING marker moved to grid 10 (gemm_grid10.py)


def cublaslt_grid_report(m, labels: list, head: str, number: int, shipped: str | None) -> None:
    """Print a cuBLASLt split grid's blind table (`m`: cublaslt_grid_errors' rows; split counts named by main and the
    candidate, each row, per regime each model in `labels`) under `head`, and add its board rows; `shipped`: the label
    whose rows hold cuBLASLt's STANDING marker (None: a later grid holds it)."""
    fmt = {"float_format": lambda v: f"{v:.1f}", "index": False}
    if "median_us" not in m.columns:
        print(head + f": NOT MEASURED YET ({len(m)} rows)")
        return
    named = {c: int((m[c] == m["split_recorded"]).sum()) for c in ("split_main", "split_cand")}
    sides = {c: int(((m[c] > 1) == (m["split_recorded"] > 1)).sum()) for c in ("split_main", "split_cand")}
    print(head + f"; split counts named: main {named['split_main']} of {len(m)} ({sides['split_main']} split / "
          f"no-split decisions), cand {named['split_cand']} ({sides['split_cand']}); |error| median / p90 and "
          f"signed median, %")
    print(m[["rows", "k", "n", "padded_tiles", "ksteps", "split_recorded", "split_main", "split_cand", "median_us"]
            + [f"{lab}_err_pct" for lab in labels]].to_string(**fmt))
    tab = models_table(m, ["regime"], labels, labels)
    print(tab.to_string(**fmt))
    for lab in labels:
        mark = lab == shipped and "block fp8 GEMM: cuBLASLt"
        add_table(tab, "blind", f"cuBLASLt grid {number} (H100, decode / small M, split counts + times), {lab}",
                  goal=f"{lab}_goal", family=FAMILY, standing=mark)
        BOARD.add(FAMILY, "blind", f"cuBLASLt grid {number} pooled, {lab}", m[f"{lab}_err_pct"].to_numpy(np.float64),
                  standing=mark)
