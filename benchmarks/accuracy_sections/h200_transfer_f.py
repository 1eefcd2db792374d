"""The H200 transfer grid, part F (simulator/calibration/h200_transfer.py load_part_f): DeepGEMM's DSA-indexer kernels,
fitted on the H100-SXM alone, judged BLIND on the lent H200 -- the H100's blind grids 4 (cold keys: the indexer's
STANDING grid) and 3 (warm and cold decode, prefill) re-run there with DeepGEMM 54e2261 built on the device
(lab/kernels/run_h200_transfer_f_device.sh), every price committed before the call (lab/kernels/predict_h200_indexer.py):

  new    the product as committed (the H200 takes the indexer kinds from the H100-SXM's fitted file)
  h100   the same model on the H100-SXM against the H100's own measurement of the same shapes (reference)

Declared before the call: grid 4's blind rows by its regimes are the indexer's H200 STANDING; grid 3's rows are shown
beside them (board rows, not the standing). The second run, on the same warm machine right after, is the replicate.
"""
from __future__ import annotations

import numpy as np

from simulator.calibration import h200_transfer as HT
from simulator.calibration.scoreboard import BOARD, models_table

LABELS = ("new", "h100")


def h200_transfer_f(fmt: dict | None = None) -> None:
    """Print part F's tables (grid 4 by set and regime, grid 3 by regime), the measured / modelled H200-over-H100 time,
    the replicate, and add the board rows (grid 4's blind rows: the indexer's H200 STANDING)."""
    fmt = fmt or {"index": False, "float_format": lambda v: f"{v:.1f}"}
    b = HT.load_part_f()
    if not len(b):
        return
    c = b.iloc[0]
    print(f"\nTHE H200 TRANSFER GRID, PART F ({len(b)} rows of DeepGEMM's DSA indexer: the H100's blind grids 4 (cold "
          f"keys) and 3 (warm / cold decode, prefill) re-run on the {c['device']} with DeepGEMM 54e2261 built there; "
          f"files h200_transfer_indexer{{4,3}}_nvidia-h200_*.csv), BLIND: priced before the call ({HT.PRED_F_CSV}, "
          f"model at {str(c['model_commit'])[:7]}): new = the product as committed (the H100-SXM's indexer terms on the "
          "H200), h100 = the same model against the H100's own measurement; |model/measured - 1| median / p90, signed "
          "median, %")
    for grid, what in ((4, "grid 4 (its blind rows: the indexer's H200 STANDING; control = warm8 rows, fit = the H100's "
                           "cold fit rows)"), (3, "grid 3 (warm8 and cold decode / verification, ragged prefill)")):
        x = b[b["grid"] == grid]
        if not len(x):
            continue
        t = models_table(x, ("set", "regime"), LABELS, ("new",))
        print(f"-- {what}:")
        print(t.to_string(**fmt))
        r, q = x["measured_ratio"], x["model_ratio"]
        print(f"   H200 / H100 time of the same shapes: measured {r.median():.3f} [{r.min():.2f}, {r.max():.2f}], model "
              f"{q.median():.3f} [{q.min():.2f}, {q.max():.2f}]")
        blind = x[x["set"] == "blind"]
        tb = t[t["set"] == "blind"]
        e = blind["new_err_pct"]
        met = int((tb["new_goal"] == "met").sum())
        print(f"   blind rows: median |error| {np.median(e.abs()):.1f} %, p90 {np.percentile(e.abs(), 90):.1f} %, signed "
              f"{np.median(e):+.1f} %; regimes met {met} of {len(tb)}")
        if grid == 4:
            BOARD.add("indexer_dg, H200", "blind", "H200 transfer grid part F, DeepGEMM indexer grid 4 (cold keys), the "
                      "product as committed", e, met, len(tb), standing=True)
        else:
            BOARD.add("indexer_dg warm / prefill, H200", "blind", "H200 transfer grid part F, DeepGEMM indexer grid 3, "
                      "the product as committed", e, met, len(tb))
    r = HT.load_part_f(replicate=True)
    if len(r):
        j = b.merge(r[["grid", *HT.INDEXER_KEYS, "h200_us"]].rename(columns={"h200_us": "rep_us"}),
                    on=["grid", *HT.INDEXER_KEYS], how="inner")
        d = (j["rep_us"] / j["h200_us"] - 1.0).abs() * 100.0
        rb = r[r["set"] == "blind"]
        tr = models_table(rb, ("grid", "regime"), ("new",), ("new",))
        e = rb["new_err_pct"]
        print(f"the replicate ({len(r)} rows, the same script again on the same warm machine; run to run |difference| "
              f"median {d.median():.1f} %, p90 {np.percentile(d, 90):.1f} %): blind rows {np.median(e.abs()):.1f} / "
              f"{np.percentile(e.abs(), 90):.1f} %, regimes met {int((tr['new_goal'] == 'met').sum())} of {len(tr)}")
