"""The H200 FlashInfer top-k grid (lab/kernels/predict_topk_fi_h200.py, measured by lab/kernels/run_topk_fi_h200_device.sh,
1 x H200, 2026-11-28): FlashInfer 0.6.4's ragged and page-table top-k transforms (k 2048) at 32 new (dist, rows, n)
shapes over grid 12's launch regimes, 4-7 per regime (the H200 transfer grid held 1-3 in most), priced before the call
by the product as committed (the H100-SXM's top-k terms on the H200), no candidate. Declared before the call: this grid
holds both transforms' H200 STANDING whatever its result. Rows whose selection check failed (threshold-bin ties, as on
the H100) keep their time and are counted.
"""
from __future__ import annotations

import numpy as np

from accuracy_sections._blind_grid import blind_grid
from simulator.calibration import fit_production_topk_gemm as F
from simulator.calibration import topk_engines as TE
from simulator.calibration import topk_flashinfer_causal_h200 as C
from simulator.calibration.scoreboard import BOARD, models_table

PRED = "topk_flashinfer_h200_prediction_2026-11-28.csv"
MEAS = "topk_engines_nvidia-h200_2026-11-28_fi_h200.csv"
FAMILY = {"fi_topk": "top-k flashinfer ragged, H200", "fi_topk_pt": "top-k flashinfer page-table, H200"}
FAMILY_CAUSAL = "top-k flashinfer ragged (causal prompts as DSA prefill prices them), H200"


def topk_fi_h200(fmt: dict | None = None) -> None:
    fmt = fmt or {"index": False, "float_format": lambda v: f"{v:.1f}"}
    if not ((F.DATA_DIR / PRED).is_file() and (F.DATA_DIR / MEAS).is_file()):
        print(f"\nH200 FlashInfer top-k grid: not measured yet ({PRED} holds the prices)")
        return
    m = TE._measured(F.DATA_DIR / PRED, F.DATA_DIR / MEAS)
    m["shipped_err_pct"] = (m["pred_us"].astype(float) / m["median_us"].astype(float) - 1.0) * 100.0
    wrong = int(m["wrong"].sum()) if "wrong" in m.columns else 0
    print(f"\n== THE H200 FLASHINFER TOP-K GRID ({len(m)} rows: 32 new shapes x the ragged and page-table transforms over "
          f"grid 12's launch regimes; {PRED}, commit {str(m['model_commit'].iloc[0])[:7]}, before the call; measured "
          f"{MEAS}), BLIND: the product as committed (the H100-SXM's top-k terms on the H200); both transforms' H200 "
          f"STANDING (declared before the call); {wrong} rows WRONG SELECTION (threshold-bin ties, time kept); "
          "|model/measured - 1| median / p90, signed median, %")
    t = models_table(m, ("regime",), ("shipped",), ("shipped",))
    print(t.to_string(**fmt))
    for k, fam in FAMILY.items():
        g = m[m["kernel"] == k]
        tt = t[t["regime"].isin(set(g["regime"]))]
        e = g["shipped_err_pct"].to_numpy(np.float64)
        met = int((tt["shipped_goal"] == "met").sum())
        print(f"  {fam}: median |error| {np.median(np.abs(e)):.1f} %, p90 {np.percentile(np.abs(e), 90):.1f} %, signed "
              f"{np.median(e):+.1f} %; regimes met {met} of {len(tt)}")
        BOARD.add(fam, "blind", "H200 FlashInfer top-k grid, the product as committed", e, met, len(tt), standing=True)
    print("  still off: the two-wave rows of 140 x 30K scores +18..+20 % (both transforms; 180-264 rows within -7..+10 %)")


def topk_fi_h200_causal(fmt: dict | None = None) -> None:
    """FlashInfer's ragged transform over whole causal prompts, priced by the DSA strategy's causal rows rule, blind."""
    fmt = fmt or {"index": False, "float_format": lambda v: f"{v:.1f}"}
    c = C.measured()
    if c is None:
        print(f"\nthe H200 FlashInfer causal-prompt grid: not measured yet ({C.PREDICTION} holds the prices)")
        return
    blind_grid(
        c, C.measured(replicate=True), fmt,
        lambda rr: (f"\n== FLASHINFER'S TOP-K OVER WHOLE CAUSAL PROMPTS ON THE H200 ({len(c)} prompts of 4.3K-27K tokens: "
                    f"its ragged transform with row i's length i + 1, FilteredTopKUnifiedKernel in every launch (the "
                    f"notes file); {C.PREDICTION}, commit {str(c['model_commit'].iloc[0])[:7]}, before the call; "
                    f"replicate run to run {rr:.2f} %), BLIND: the product's DSA prefill price (PREFILL_TOPK_ROWS "
                    "'causal') on the H200's borrowed FlashInfer terms; FlashInfer's causal-prompt H200 STANDING "
                    "(declared before the call); |model/measured - 1| median / p90, signed median, %"),
        FAMILY_CAUSAL, "the H200 FlashInfer causal-prompt grid, the product as committed",
        notes=("  the shortest prompt, 4,352, -11 % (SGLang's shortest, 3,584, -8 %): a guess, not tested: their 2,048 "
               "rows of <= k keys, priced free, each still take a CTA",))
