"""Block-scaled fp8 GEMM grid 10, BLIND: cuBLASLt's block path (torch._scaled_mm, 128 x 128 / 1 x 128 scales) at decode /
small M, split counts AND times of the split rule shipped after grid 9 (main: simulator.kernels.gemm_fp8
.cublaslt_block_split_work, "work"), of the candidate read off all 125 recorded choices ("slices": any slice count 2-16
with > 20 K steps per slice, <= 80 CTAs or one wave of 132 with long slices, a W budget growing with K; the W and tile
gates relax with K and M > 64 may split) with the kind's terms as committed, and of cand_refit ("slices" with the kind's
terms refitted under it on 199 earlier rows: fit_production_topk_gemm.CUBLASLT_GRID10_REFIT_TERMS, not shipped).

cuBLASLt's heuristic is closed source (NVIDIA ships no source for it): its choice is modelled only from what the
profiler shows (the nvjet kernel names, _splitK_ or not, and the launched grids: CTAs / padded tiles = slices). The grid
(lab/kernels/predict_gemm_grid10.py; small-M projections of Llama-3, DeepSeek-V3, Grok-1, Gemma-2-27B, Qwen2.5, Phi-3,
Yi-34B, Command-R + long-K probes, M 8-128, 8-64 padded tiles, 64-256 K steps, no (M, K, N) of any earlier CSV) was
priced by the three models and committed before it was measured (f099c09); one device call (lab/kernels/
measure_deepgemm_gemm.py --tag grid10, H100 80GB HBM3, torch 2.11.0+cu130). Regimes are the candidate's split (fixed
before the call) and M 72-128.
"""
from __future__ import annotations

from simulator.calibration import fit_production_topk_gemm as FP

from .gemm_grid9 import cublaslt_grid_report

PREDICTION_COMMIT = "f099c09"
FAMILY = "block fp8 GEMM (DeepGEMM / cuBLASLt)"
#: the model that shipped after grid 10 (cuBLASLt's STANDING marker moved to grid 11: gemm_grid11.py): the candidate
#: (3 of 4 regimes like main, lower pooled median and p90: 6.9 / 17.0 % against 8.8 / 53.3 %); cand_refit (5.6 / 14.6 %, 3 of 4) is not shipped
#: (fit_production_topk_gemm.CUBLASLT_GRID10_REFIT_TERMS says why)
SHIPPED = "cand"


def grid10_section() -> None:
    """Print grid 10's blind table (split counts and times, main vs the candidate rule and its refit) and add its board
    rows."""
    m = FP.cublaslt_grid10_errors()
    labels = list(FP.CUBLASLT_GRID10_MODELS.values())
    head = (f"\n== cuBLASLt block fp8 GEMM grid 10, BLIND (split counts AND times predicted before measuring, commit "
            f"{PREDICTION_COMMIT}: {FP.CUBLASLT_GRID10_PREDICTION}): torch._scaled_mm's block path at M 8-128, 8-64 "
            f"padded tiles, 64-256 K steps; main = the split rule shipped after grid 9 ('work'), cand = the rule read off "
            f"125 recorded choices (gemm_fp8.CUBLASLT_SPLIT_RULE 'slices'), the kind's terms as committed; cand_refit = "
            f"'slices' with the kind's terms refitted under it (not shipped); shipped: {SHIPPED}")
    cublaslt_grid_report(m, labels, head, 10, None)   # cuBLASLt's STANDING marker moved to grid 11 (gemm_grid11.py)
