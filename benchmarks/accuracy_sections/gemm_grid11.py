"""Block-scaled fp8 GEMM grid 11, BLIND: cuBLASLt's block path (torch._scaled_mm, 128 x 128 / 1 x 128 scales) at small M,
split counts AND times of the split rule shipped after grid 10 (main: simulator.kernels.gemm_fp8
.cublaslt_block_split_slices, "slices") and of the candidate read off all 168 recorded choices ("workspace": the W = M x
padded tiles gates replaced by one bound, c slices' fp32 partials c x M x N x 4 bytes < 1 MiB), both with the kind's terms
as committed.

cuBLASLt's heuristic is closed source (NVIDIA ships no source for it): its choice is modelled only from what the
profiler shows (the nvjet kernel names, _splitK_ or not, and the launched grids: CTAs / cluster-padded tiles = slices).
The grid (lab/kernels/predict_gemm_grid11.py: 18 rows at M 68-128 and 11 at M 136-256 with 4-16 padded tiles at 64-256 K
steps, + 14 controls at M 8-64, no (M, K, N) of any earlier CSV) was priced by both rules and committed before it was
measured (d34a52c); one device call (lab/kernels/measure_deepgemm_gemm.py --tag grid11, H100 80GB HBM3, torch
2.11.0+cu130), which also timed a workspace control (gemm_grid11ws_*: 6 rows rerun with CUBLASLT_WORKSPACE_SIZE=32768
split, not judged). Regimes (fixed before the call): M 65-128, M 129-256, and at M <= 64 the candidate's split.
"""
from __future__ import annotations

from simulator.calibration import fit_production_topk_gemm as FP

from .gemm_grid9 import cublaslt_grid_report

PREDICTION_COMMIT = "d34a52c"
FAMILY = "block fp8 GEMM (DeepGEMM / cuBLASLt)"
#: the model that shipped after grid 11: the candidate (3 of 4 regimes against main's 1, pooled 8.2 / 13.4 % against
#: 11.2 / 90.1 %); cuBLASLt's STANDING marker moved to grid 12 (gemm_grid12.SHIPPED)
SHIPPED = "cand"


def grid11_section() -> None:
    """Print grid 11's blind table (split counts and times, main vs the candidate rule) and add its board rows."""
    m = FP.cublaslt_grid11_errors()
    labels = list(FP.CUBLASLT_GRID11_MODELS.values())
    head = (f"\n== cuBLASLt block fp8 GEMM grid 11, BLIND (split counts AND times predicted before measuring, commit "
            f"{PREDICTION_COMMIT}: {FP.CUBLASLT_GRID11_PREDICTION}): torch._scaled_mm's block path at M 8-256, 4-72 "
            f"padded tiles, 32-256 K steps, weighted to M 68-256 at 4-16 padded tiles; main = the split rule shipped "
            f"after grid 10 ('slices'), cand = the rule read off 168 recorded choices (gemm_fp8.CUBLASLT_SPLIT_RULE "
            f"'workspace': c x M x N x 4 B < 1 MiB), the kind's terms as committed; shipped: {SHIPPED}")
    cublaslt_grid_report(m, labels, head, 11, None)   # cuBLASLt's STANDING marker moved to grid 12 (gemm_grid12.py)
