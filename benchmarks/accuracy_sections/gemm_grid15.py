"""Block-scaled fp8 GEMM grid 15, BLIND (drawn by helper s24gm after grid 14), cuBLASLt only, every K a multiple of 512
(grid 14's other K failed torch._scaled_mm's check): prefill at 4 and 8 K steps over N 2048-32768 (4-44 waves), one-wave
prefill (7 rows), decode unsplit and split controls (M 8-64, 6 each). Models: `main` (the kind's terms and structure as
committed: the turnover hidden across waves, CTA_FIXED_HIDDEN, shipped after grid 14) and `cand` (main + a later
tile's turnover share and K-step factor, hwmodels.roofline.CTA_FIXED_HIDDEN_SHARE = CUBLASLT_GRID15_CAND_SHARE, fitted on
the 66 looked-at multi-wave rows of grids 4-14; one wave priced as main). 37 shapes in no earlier CSV
(lab/kernels/predict_gemm_grid15.py), priced by both, committed before one device call (7292576;
lab/kernels/measure_deepgemm_gemm.py --tag grid15, H100 80GB HBM3, 14.5 s); all 37 timed, every split count named.

Result: both meet 5 of 5 regimes; pooled median / p90 main 6.7 / 11.8 %, cand 4.6 / 12.0 %: as many regimes, a lower
median but a higher p90, so by common13's rule (declared in the prediction script) cand does NOT ship; main keeps the
STANDING marker (its grid-15 rows). The 4-K-step error is linear in the waves under main (4 waves -13 %, 8 -2 %, 18-20
+7..+8 %, 39-44 +10..+12 %): the steady per-tile time is shorter than the kind's cta_fixed + 4 iter (~2.5 vs 2.9 us) and
a per-kernel start / drain (~5 us) is missing; cand shortens the slope (+3..+5 % at 39-44 waves) but adds nothing to the
intercept (4-6 waves -13..-17 %). One-wave prefill is under-priced (-7 % signed, 6 of 7 rows), decode unsplit M 16 x
N 16384 at 112 K steps -13 %.
"""
from __future__ import annotations

import numpy as np

from simulator.calibration import fit_production_topk_gemm as FP
from simulator.calibration.scoreboard import BOARD, add_table, models_table

PREDICTION_COMMIT = "7292576"
FAMILY = "block fp8 GEMM (DeepGEMM / cuBLASLt)"
#: the model that ships (its grid-15 rows hold cuBLASLt's STANDING marker): main, the candidate does not
SHIPPED = "main"


def grid15_section() -> None:
    """Print grid 15's blind table (main, cand) and add its board rows."""
    m = FP.cublaslt_grid15_errors()
    labels = list(FP.CUBLASLT_GRID15_MODELS.values())
    head = (f"\n== cuBLASLt block fp8 GEMM grid 15, BLIND (times predicted before measuring, commit {PREDICTION_COMMIT}: "
            f"{FP.CUBLASLT_GRID15_PREDICTION}): K % 512 == 0 only; prefill M 256-8192 at 4 and 8 K steps over N "
            f"2048-32768, one-wave prefill + decode controls; main = the kind's terms and structure as committed "
            f"(CTA_FIXED_HIDDEN), cand = main + CTA_FIXED_HIDDEN_SHARE {FP.CUBLASLT_GRID15_CAND_SHARE} (a later tile's "
            f"turnover share, the later waves' K-step factor); both under 'workspace'; shipped: {SHIPPED}")
    if "median_us" not in m.columns:
        print(head + f": NOT MEASURED YET ({len(m)} rows)")
        return
    fmt = {"float_format": lambda v: f"{v:.1f}", "index": False}
    named = int((m["split_main"] == m["split_recorded"]).sum())
    print(head + f"; {len(m)} of 37 rows timed; split counts named {named} of {len(m)}; |error| median / p90 and "
          f"signed median, %")
    print(m[["rows", "k", "n", "ksteps", "waves", "split_recorded", "split_main", "median_us"]
            + [f"{lab}_err_pct" for lab in labels]].to_string(**fmt))
    tab = models_table(m, ["regime"], labels, labels)
    print(tab.to_string(**fmt))
    for lab in labels:
        mark = lab == SHIPPED and "block fp8 GEMM: cuBLASLt"
        add_table(tab, "blind", f"cuBLASLt grid 15 (H100, K % 512 prefill + decode controls), {lab}",
                  goal=f"{lab}_goal", family=FAMILY, standing=mark)
        BOARD.add(FAMILY, "blind", f"cuBLASLt grid 15 pooled, {lab}", m[f"{lab}_err_pct"].to_numpy(np.float64),
                  standing=mark)
