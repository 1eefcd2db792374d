"""The H200 transfer grid (simulator/calibration/h200_transfer.py): the production attention families, every term fitted
on the H100-SXM, judged BLIND on the lent H200 (the newest H100 blind grid of each family re-run there; priced and
committed before the call by lab/kernels/predict_h200_transfer.py).

  main   what the product charged on the H200 before (f305da5): the H200's fitted file named none of these kinds, so
         they ran at the uncalibrated defaults
  new    the H200's fitted file with unmeasured_kinds_from: H100-SXM (shipped): the H100's terms, the H200's bandwidth
  h100   the same model on the H100-SXM against the H100's own measurement of the same shapes (for reference: fitted,
         looked-at or blind there as benchmarks/results_calibration_accuracy.txt says per family)

Each family keeps its H100 grid's regimes; goal median <= 10 %, p90 <= 25 %. A family a newer H200 blind grid judged
(MOVED_ON) holds its H200 STANDING row there.
"""
from __future__ import annotations

import numpy as np

from simulator.calibration import h200_transfer as HT
from simulator.calibration.scoreboard import BOARD, models_table

#: the families whose H200 STANDING row a newer H200 blind grid holds (family: the section that marks it)
MOVED_ON = {"fi_decode": "fi_dec_blind9 (the ninth decode blind grid, 2026-11-28)",
            "block fp8 GEMM: cuBLASLt": "gemm_grid16 (cuBLASLt block grid 16 on the H200, 2026-11-28)",
            "fi_verify": "fi_tc_h200 (the H200 verification grid, 2026-11-28)",
            "top-k flashinfer ragged": "topk_fi_h200 (the H200 FlashInfer top-k grid, 2026-11-28)",
            "top-k flashinfer page-table": "topk_fi_h200 (the H200 FlashInfer top-k grid, 2026-11-28)"}


def h200_transfer(fmt: dict | None = None) -> None:
    """Print the grid per family and regime and the measured / modelled H200-over-H100 time ratio per part; add each
    family's main and new rows to the board (new: the family's H200 STANDING row)."""
    fmt = fmt or {"index": False, "float_format": lambda v: f"{v:.1f}"}
    b = HT.load()
    if not len(b):
        return
    b["regime"] = b["family_label"] + ": " + b["regime"]
    commits = ", ".join(f"{part} {str(c)[:7]}" for part, c in b.groupby("part", sort=False)["model_commit"].first()
                        .items())
    wrong = int(b["wrong"].fillna(False).astype(bool).sum()) if "wrong" in b.columns else 0
    print(f"\nTHE H200 TRANSFER GRID ({len(b)} rows of the newest H100 blind grids of FA3 decode, FA3 / "
          "FlashInfer prefill, FlashInfer CUDA-core decode and verification (parts A, B), XQA, FlashInfer MLA and "
          "FlashInfer top-k (part C, priced after A and B were judged) and cuBLASLt's block fp8 GEMM grid 15 (part D, "
          f"after C), re-run on the {b['device'].iloc[0]}; files h200_transfer_*_nvidia-h200_*.csv), BLIND: every "
          f"price committed before its call ({HT.PRED_CSV}, {HT.PRED_C_CSV}, {HT.PRED_D_CSV}; models at {commits}): "
          "main = the product on the H200 before (the production kinds at the uncalibrated defaults, "
          f"{b['main_commit'].iloc[0]}), new = the kinds the H200 never measured taken from the H100-SXM's fitted "
          "file (unmeasured_kinds_from, shipped), h100 = the same model against the H100's own measurement of the "
          f"same shapes; {wrong} top-k rows marked WRONG SELECTION, time kept (the same 14 as on the H100); "
          "|model/measured - 1| median / p90, signed median, %")
    t = models_table(b, ("regime",), HT.LABELS, HT.LABELS)
    print(t.to_string(**fmt))
    print("H200 / H100 time of the same shapes, median [min, max], measured against the model's (new / h100 price):")
    for part, g in b.groupby("part", sort=False):
        r, q = g["measured_ratio"], g["model_ratio"]
        print(f"  {part:10s} n {len(g):3d}: measured {r.median():.3f} [{r.min():.2f}, {r.max():.2f}], model "
              f"{q.median():.3f} [{q.min():.2f}, {q.max():.2f}]")
    fam = t["regime"].map(dict(zip(b["regime"], b["family_label"])))
    for f, g in b.groupby("family_label", sort=False):
        tt = t[fam == f]
        for lab, what in (("main", "the product before (uncalibrated defaults)"),
                          ("new", "the H100-SXM's terms (unmeasured_kinds_from, shipped)")):
            BOARD.add(f"{f}, H200", "blind", f"H200 transfer grid, {what}", g[f"{lab}_err_pct"],
                      int((tt[f"{lab}_goal"] == "met").sum()), len(tt), standing=lab == "new" and f not in MOVED_ON)
    for lab in HT.LABELS:
        e = b[f"{lab}_err_pct"]
        print(f"  {lab}: median |error| {np.median(e.abs()):.1f} %, p90 {np.percentile(e.abs(), 90):.1f} %, signed "
              f"{np.median(e):+.1f} %; regimes met {int((t[lab + '_goal'] == 'met').sum())} of {len(t)}")
    r = HT.load(replicate=True)
    if len(r):
        r["regime"] = r["family_label"] + ": " + r["regime"]
        tr = models_table(r, ("regime",), ("new",), ("new",))
        famr = tr["regime"].map(dict(zip(r["regime"], r["family_label"])))
        print(f"the replicate ({len(r)} rows: parts A and B again on a second H200 lease, XQA and MLA again on the same "
              "warm machine), the shipped model (new), per family: median / p90 %, regimes met:")
        for f, g in r.groupby("family_label", sort=False):
            tt = tr[famr == f]
            e = g["new_err_pct"]
            print(f"  {f:28s} n {len(g):3d}: {np.median(e.abs()):4.1f} / {np.percentile(e.abs(), 90):4.1f}, "
                  f"{int((tt['new_goal'] == 'met').sum())} of {len(tt)}")
        e = r["new_err_pct"]
        print(f"  all: {np.median(e.abs()):.1f} / {np.percentile(e.abs(), 90):.1f} %, regimes met "
              f"{int((tr['new_goal'] == 'met').sum())} of {len(tr)}")
