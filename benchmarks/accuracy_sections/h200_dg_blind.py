"""DeepGEMM's block fp8 GEMM on the H200, a BLIND grid (lab/kernels/predict_h200_dg_blind.py; 45 (M, K, N) in no
committed CSV, the decode-3 grid's regimes), priced before the call by main (the H100's terms, as the H200 borrows
them) and by CAND_H200 (the kind's memory share, per-wave CTA time and K-step latency refitted on part G's 78 looked-at
H200 rows). SHIP_RULE (fixed before the call): the candidate ships if it meets more regimes than main, or as many with
a lower pooled median and p90 |error|. The grid is the DeepGEMM decode family's newest H200 blind grid: its shipped
model's row carries the STANDING marker (part G's decode-3 row gives it up: h200_transfer_g.MOVED_ON).
"""
from __future__ import annotations

import numpy as np

from simulator.calibration import h200_transfer as HT
from simulator.calibration.scoreboard import BOARD, models_table

LABELS = ("main", "cand")
FAMILY = "block fp8 GEMM: DeepGEMM decode, H200"


def shipped(t, b) -> str:
    """The ship rule (module docstring) applied to the grid's table `t` and rows `b`."""
    met = {lab: int((t[f"{lab}_goal"] == "met").sum()) for lab in LABELS}
    med = {lab: float(np.median(b[f"{lab}_err_pct"].abs())) for lab in LABELS}
    p90 = {lab: float(np.percentile(b[f"{lab}_err_pct"].abs(), 90)) for lab in LABELS}
    wins = met["cand"] > met["main"] or (met["cand"] == met["main"] and med["cand"] < med["main"]
                                         and p90["cand"] < p90["main"])
    return "cand" if wins else "main"


def h200_dg_blind(fmt: dict | None = None) -> None:
    fmt = fmt or {"index": False, "float_format": lambda v: f"{v:.1f}"}
    b = HT.load_dg_blind()
    if not len(b):
        return
    t = models_table(b, ("regime",), LABELS, LABELS)
    ship = shipped(t, b)
    print(f"\n== DeepGEMM block fp8 GEMM on the {b['device'].iloc[0]}, BLIND grid ({len(b)} shapes in no committed CSV; "
          f"{HT.PRED_DG_BLIND_CSV}, commit {str(b['model_commit'].iloc[0])[:7]}, before the call; measured "
          f"{b['file'].iloc[0]}): main = the H100's terms as the H200 borrows them, cand = CAND_H200 (memory, "
          "cta_fixed, iter refitted on part G's looked-at rows); ship rule fixed before: more regimes met, or as many "
          f"with a lower pooled median and p90 -> {'the CANDIDATE ships' if ship == 'cand' else 'main stays (NOT shipped)'}"
          "; |model/measured - 1| median / p90, signed median, %")
    print(t.to_string(**fmt))
    for lab in LABELS:
        e = b[f"{lab}_err_pct"]
        met = int((t[f"{lab}_goal"] == "met").sum())
        print(f"  {lab}: median |error| {np.median(e.abs()):.1f} %, p90 {np.percentile(e.abs(), 90):.1f} %, signed "
              f"{np.median(e):+.1f} %; regimes met {met} of {len(t)}")
        what = "the H100's terms (shipped)" if lab == "main" else "CAND_H200, refitted on part G"
        BOARD.add(FAMILY, "blind", f"H200 DeepGEMM blind grid, {what}" + ("" if lab == ship else " (not shipped)"),
                  e, met, len(t), standing=lab == ship)
    r = HT.load_dg_blind(replicate=True)
    if len(r):
        tr = models_table(r, ("regime",), LABELS, LABELS)
        j = b.merge(r[[*HT.GEMM_KEYS, "h200_us"]].rename(columns={"h200_us": "rep_us"}), on=HT.GEMM_KEYS)
        d = (j["rep_us"] / j["h200_us"] - 1.0).abs() * 100.0
        print(f"  the replicate (the same script again on the same warm machine; run to run |difference| median "
              f"{d.median():.1f} %, p90 {np.percentile(d, 90):.1f} %): " + ", ".join(
                  f"{lab} {np.median(r[f'{lab}_err_pct'].abs()):.1f} / {np.percentile(r[f'{lab}_err_pct'].abs(), 90):.1f}"
                  f" %, {int((tr[f'{lab}_goal'] == 'met').sum())} of {len(tr)}" for lab in LABELS))
