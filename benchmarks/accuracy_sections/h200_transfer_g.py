"""The H200 transfer grid, part G (simulator/calibration/h200_transfer.py load_part_g): DeepGEMM's block-scaled fp8 GEMM
(fp8_gemm_nt, the sm90 1D2D kernel; kind gemm_fp8_block), fitted on the H100-SXM alone, judged BLIND on the lent H200:
the H100's DeepGEMM rows of block grid 8 and of the decode-3 grid re-run there with DeepGEMM 54e2261 built on the device
(lab/kernels/run_h200_transfer_g_device.sh), every price committed before the call
(lab/kernels/predict_h200_deepgemm_gemm.py): new = the product as committed (the H100-SXM's terms through the H200's
unmeasured_kinds_from), h100 = the same model against the H100's own measurement. Declared before the call: each grid's
rows by its own regimes are the kind's two H200 STANDING rows (grid 8's fill7 repeats left out, as on the H100).
"""
from __future__ import annotations

import numpy as np

from simulator.calibration import h200_transfer as HT
from simulator.calibration.scoreboard import BOARD, models_table

LABELS = ("new", "h100")
#: grid -> the board's family label (the H100's rows are "block fp8 GEMM: DeepGEMM" / "... DeepGEMM decode")
FAMILY = {"grid8": "block fp8 GEMM: DeepGEMM, H200", "decode3": "block fp8 GEMM: DeepGEMM decode, H200"}
#: the grids whose H200 STANDING row a newer H200 blind grid holds (grid: the section that marks it)
MOVED_ON = {"decode3": "h200_dg_blind (the H200 DeepGEMM blind grid, 2026-11-28)"}


def h200_transfer_g(fmt: dict | None = None) -> None:
    """Print part G per grid and regime, the measured / modelled H200-over-H100 time, the replicate; add the two
    standing rows."""
    fmt = fmt or {"index": False, "float_format": lambda v: f"{v:.1f}"}
    b = HT.load_part_g()
    if not len(b):
        return
    c = b.iloc[0]
    print(f"\nTHE H200 TRANSFER GRID, PART G ({len(b)} rows of DeepGEMM's block fp8 GEMM: the H100's DeepGEMM rows of "
          f"block grid 8 and the decode-3 grid re-run on the {c['device']} with DeepGEMM 54e2261 built there; "
          f"{c['file']}), BLIND: priced before the call ({HT.PRED_G_CSV}, model at {str(c['model_commit'])[:7]}): new = "
          "the product as committed (the H100-SXM's terms on the H200), h100 = the same model against the H100's own "
          "measurement; |model/measured - 1| median / p90, signed median, %")
    for grid, x in b.groupby("grid", sort=False):
        x = x[~x["regime"].str.startswith("repeat")]
        t = models_table(x, ("regime",), LABELS, ("new",))
        print(f"-- {grid}:")
        print(t.to_string(**fmt))
        r, q = x["measured_ratio"], x["model_ratio"]
        e = x["new_err_pct"]
        met = int((t["new_goal"] == "met").sum())
        print(f"   H200 / H100 time: measured {r.median():.3f} [{r.min():.2f}, {r.max():.2f}], model {q.median():.3f} "
              f"[{q.min():.2f}, {q.max():.2f}]; median |error| {np.median(e.abs()):.1f} %, p90 "
              f"{np.percentile(e.abs(), 90):.1f} %, signed {np.median(e):+.1f} %; regimes met {met} of {len(t)}")
        BOARD.add(FAMILY[grid], "blind", f"H200 transfer grid part G, DeepGEMM {grid}, the product as committed", e, met,
                  len(t), standing=grid not in MOVED_ON)
    r = HT.load_part_g(replicate=True)
    if len(r):
        j = b.merge(r[["grid", *HT.GEMM_KEYS, "h200_us"]].rename(columns={"h200_us": "rep_us"}),
                    on=["grid", *HT.GEMM_KEYS], how="inner")
        d = (j["rep_us"] / j["h200_us"] - 1.0).abs() * 100.0
        rr = r[~r["regime"].str.startswith("repeat")]
        tr = models_table(rr, ("grid", "regime"), ("new",), ("new",))
        e = rr["new_err_pct"]
        print(f"the replicate ({len(r)} rows, the same script again on the same warm machine; run to run |difference| "
              f"median {d.median():.1f} %, p90 {np.percentile(d, 90):.1f} %): {np.median(e.abs()):.1f} / "
              f"{np.percentile(e.abs(), 90):.1f} %, regimes met {int((tr['new_goal'] == 'met').sum())} of {len(tr)}")
