"""Block-scaled fp8 GEMM grid 12, BLIND: cuBLASLt's block path (torch._scaled_mm, 128 x 128 / 1 x 128 scales) at small M,
rows the shipped split rule ("workspace", shipped after grid 11) keeps unsplit at 64-256 K steps, times of the kind's
terms as committed (main: fitted on 60 rows under the "tiles" rule) and of the candidate (the same kind's terms refitted
by its writer, fit_production_topk_gemm.write_block_cublaslt, under "workspace" on 266 recorded rows of grids 4-11:
CUBLASLT_GRID12_CAND_TERMS), both under "workspace".

The grid (lab/kernels/predict_gemm_grid12.py: 12 unsplit rows at M 16-64, 11 at M 68-128, 10 at M 132-256, 8 split
controls at M 8-56, 3 diagnostic tile-gated rows at M 8-12 with 80-128 padded tiles, no (M, K, N) of any earlier CSV) was
priced by both and committed before it was measured (fa98159); one device call (lab/kernels/measure_deepgemm_gemm.py
--tag grid12, H100 80GB HBM3). Regimes fixed before the call.
"""
from __future__ import annotations

from simulator.calibration import fit_production_topk_gemm as FP

from .gemm_grid9 import cublaslt_grid_report

PREDICTION_COMMIT = "fa98159"
FAMILY = "block fp8 GEMM (DeepGEMM / cuBLASLt)"
#: the model that ships (its grid-12 rows hold cuBLASLt's STANDING marker): the candidate (5 of 5 regimes against main's 2,
#: pooled 6.6 / 8.2 % against 11.8 / 14.6 %); the kind's fitted terms are its terms since (write_block_cublaslt)
SHIPPED = "cand"


def grid12_section() -> None:
    """Print grid 12's blind table (split counts and times, main vs the refitted candidate) and add its board rows."""
    m = FP.cublaslt_grid12_errors()
    labels = list(FP.CUBLASLT_GRID12_MODELS.values())
    head = (f"\n== cuBLASLt block fp8 GEMM grid 12, BLIND (times predicted before measuring, commit {PREDICTION_COMMIT}: "
            f"{FP.CUBLASLT_GRID12_PREDICTION}): torch._scaled_mm's block path at M 8-256, 64-256 K steps, weighted to "
            f"rows the 'workspace' rule keeps unsplit; main = the kind's terms as committed, cand = the terms refitted "
            f"under 'workspace' on grids 4-11 ({FP.CUBLASLT_GRID12_CAND_TERMS}); shipped: {SHIPPED}")
    cublaslt_grid_report(m, labels, head, 12, None)   # cuBLASLt's STANDING marker moved to grid 13 (gemm_grid13.py)
