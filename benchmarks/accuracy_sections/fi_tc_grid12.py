"""The tensor-core (FA2 prefill) kernel's tile-rate scan and its blind grid (fi_tc / fi_verify at short contexts).

The scan (lab/kernels/measure_production_attention.py --grid fi_tc_scan12: one CTA per request and KV head, split-KV
off, q 1-32 x context 16-1024 in KV-tile steps, + 2-132 CTAs) holds the FIT rows of the bf16 tile chain's two rates
(simulator/kernels/flashinfer.py FI_TC_TILE_RATE_SM, FI_TC_WARP_MMA_FLOPS), fitted by lab/kernels/fit_fi_tc_tile_rates.py.
The blind grid (--grid fi_tc_blind12) was priced by main's model before it was measured; the new model's prices come
from the fit procedure committed before the measurement but were computed after it (see the caption).
"""
from __future__ import annotations

from simulator.calibration.scoreboard import BOARD, models_table

#: (new model's prices, main's prices (committed before measuring), the measured blind grid)
FI_TC_BLIND12 = ("production_attention_fi_tc_blind12_predictions.csv",
                 "production_attention_fi_tc_blind12_predictions_06e70f8.csv",
                 "production_attention_fi_tc_blind12_nvidia*.csv")
#: the scan's per-configuration slopes and the fitted rates (lab/kernels/fit_fi_tc_tile_rates.py --out)
FI_TC_SCAN12_RATES = "production_attention_fi_tc_scan12_rates.csv"


def fi_tc_grid_rows(FP, hw, grid: tuple, number: int):
    """A fi_tc blind grid's measured rows joined to both committed prices (`grid` = (prediction, main's prediction,
    measured glob)), with each shape's group, main / new / now (the committed fitted file) errors in %; (rows, file
    name), or None (a line printed) before the measurement exists."""
    import pandas as pd

    from simulator.calibration.blind_grids import blind_errors

    pred, before, glob = grid
    m, name = blind_errors(FP, glob, pred, before)
    if m is None:
        print(f"\nFI_TC BLIND GRID {number}: not measured yet ({before} holds main's prices)")
        return None
    keys = ["family", "heads", "kv_heads", "dtype", "batch", "q_rows", "context", "page_size"]
    grp = pd.read_csv(FP.DATA_DIR / before)[keys + ["group"]]
    m = m.merge(grp, on=keys, how="left")
    ops = FP.build_ops(m, hw.units, float(hw.smem_per_unit_bytes or 233472))
    m["now_err_pct"] = (FP.predict_us(ops, hw, hw.efficiency, len(m)) / m["median_us"] - 1.0) * 100.0
    m["main_err_pct"], m["new_err_pct"] = m["err_before"], m["err"]
    return m, name


def fi_tc_verify_grid_report(FP, hw, fmt, grid: tuple, number: int, head, descs: dict, ships: bool) -> None:
    """A fi_verify blind grid's report (grids 13, 14): its rows (fi_tc_grid_rows) with regime = K/V dtype x context x
    batch, `head(m, name, before, pred)`'s title, per shape group and per regime the |error| of main's and the new
    model's committed prices and of the committed fitted file (now), each model's pooled line, and the board rows of
    main and new (`descs`: label -> description); `ships`: the new model's row is fi_verify's STANDING row."""
    import numpy as np

    pred, before, _ = grid
    r = fi_tc_grid_rows(FP, hw, grid, number)
    if r is None:
        return
    m, name = r
    m["regime"] = m["kv"] + " " + m["ctx_regime"] + " " + m["batch_regime"]
    print(head(m, name, before, pred))
    labels = ["main", "new", "now"]
    g = models_table(m.assign(regime=m["group"]), ("regime",), labels, labels)
    print("per shape group:")
    print(g.to_string(**fmt))
    t = models_table(m, ("regime",), labels, labels)
    print("per regime:")
    print(t.to_string(**fmt))
    for lab in labels:
        e = m[f"{lab}_err_pct"]
        print(f"  {lab}: median |error| {np.median(e.abs()):.1f} %, p90 {np.percentile(e.abs(), 90):.1f} %, signed "
              f"{np.median(e):+.1f} %; regimes met {int((t[lab + '_goal'] == 'met').sum())} of {len(t)}")
    for lab, desc in descs.items():
        BOARD.add("fi_verify", "blind", f"fi_tc blind grid {number}, {desc}", m[f"{lab}_err_pct"],
                  int((t[f"{lab}_goal"] == "met").sum()), len(t), standing=ships and lab == "new")


def fi_tc_blind12(FP, hw, fmt) -> None:
    """Print the tile-rate scan's slopes (FIT rows) and the blind grid's per-regime |error| of main's and the new
    model's prices and of the committed fitted file (now); add the board rows."""
    import pandas as pd


    rates = FP.DATA_DIR / FI_TC_SCAN12_RATES
    if rates.is_file():
        r = pd.read_csv(rates)
        print(f"\nFI_TC TILE-RATE SCAN (FIT rows, {FI_TC_SCAN12_RATES}): one tile's time on a CTA's chain (us, slope "
              "of the median on the KV tiles walked; one CTA per SM) beside the fitted chain step "
              f"2 x (load + bytes / {r['fitted_tile_rate_sm'].iloc[0] / 1e9:.1f} GB/s) + warp FLOPs / "
              f"{r['fitted_warp_mma_flops'].iloc[0] / 1e12:.2f} TFLOP/s; fitted on the one-CTA rows only")
        print(r[["batch", "q_rows", "ctq", "tile_kv", "n", "slope_us", "model_slope_us", "fit_row"]]
              .to_string(**{**fmt, "float_format": lambda v: f"{v:.3f}"}))
    pred, before, _ = FI_TC_BLIND12
    r = fi_tc_grid_rows(FP, hw, FI_TC_BLIND12, 12)
    if r is None:
        return
    m, name = r
    m["regime"] = m["group"]
    print(f"\nFI_TC BLIND GRID 12 (FlashInfer verification and tensor-core decode at short contexts; {len(m)} shapes of "
          f"{m.attrs.get('timed_of', len(m))} timed, {name}): main = the model at 06e70f8, priced BEFORE measuring "
          f"({before}: BLIND); new = the scanned tile rates ({pred}, model {str(m['model_commit'].iloc[0])[:7]}): its "
          "fit procedure was committed before the measurement, but the rates were fitted on the scan measured in the "
          "same call and priced after it, so its column is LOOKED-AT, not blind; now = the committed fitted file")
    labels = ["main", "new", "now"]
    t = models_table(m, ("regime",), labels, labels)
    print(t.to_string(**fmt))
    from .flashinfer import _fi_dec_grid_summary

    _fi_dec_grid_summary(m, t, None, labels, ())   # the pooled line of each model (its board rows follow, per family)
    for fam in ("fi_tc", "fi_verify"):
        x = m[m["family"] == fam]
        tt = t[t["regime"].isin(set(x["regime"]))]
        BOARD.add(fam, "blind", "fi_tc blind grid 12, main model's committed prices", x["main_err_pct"],
                  int((tt["main_goal"] == "met").sum()), len(tt), standing=fam == "fi_tc")   # fi_verify: grid 13
        BOARD.add(fam, "looked-at", "fi_tc blind grid 12, scanned tile rates", x["new_err_pct"],
                  int((tt["new_goal"] == "met").sum()), len(tt))
