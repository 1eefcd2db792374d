"""Scan 6 of the prefill rows (lab/kernels/measure_prefill_kernels.py --grid scan6, 1 x H200): FlashInfer's FA2
prefill kernel, bf16, chunks whose cached prefix walks across the FA2 plan's steps, priced before the call two ways
(lab/kernels/predict_prefill_scan6.py): the exact plan at each row's prefix, and the engine's form since 2026-11-28
(simulator/kernels/families.py fa2_prefix_interpolated: exact at the plan's steps, linear between, which the chunk
surface needs to build in seconds). The question, fixed before the call: which of the two does the kernel's time follow
across a step? Also printed: the engine's form against the exact one on the earlier prefill grids 1-4 (looked-at rows)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from hwmodels import datafiles as DF
from simulator.calibration.scoreboard import BOARD

DATA = Path(__file__).resolve().parents[2] / "hwmodels" / "calibration" / "data" / "production_attention"
KEYS = ["model", "batch", "q_rows", "prefix"]
LAB = {"exact": "the exact plan", "interp": "the engine's prefix interpolation"}


def load(data_dir: Path = DATA) -> pd.DataFrame:
    """The measured scan joined with its committed prices (<form>_err_pct, %); a scan id per (model, B, P, O range)."""
    fs = sorted(p for p in DF.glob(Path(data_dir), "prefill_kernels_scan6_nvidia-*.csv")
                if DF.suffix(p) == ".csv" and "_grids" not in p.name)
    pf = DF.resolve(Path(data_dir) / "prefill_kernels_scan6_predictions.csv")
    if not fs or not pf.is_file():
        return pd.DataFrame()
    m = pd.read_csv(fs[-1])
    p = pd.read_csv(pf, dtype={"model_commit": str})
    b = m.merge(p[KEYS + ["pred_exact_us", "pred_interp_us", "model_commit", "question"]], on=KEYS, how="inner")
    for k in LAB:
        b[f"{k}_err_pct"] = (b[f"pred_{k}_us"] / b["median_us"] - 1.0) * 100.0
    b = b.sort_values(["model", "batch", "q_rows", "prefix"]).reset_index(drop=True)
    step = b.groupby(["model", "batch", "q_rows"])["prefix"].diff()
    gap = step > step.groupby([b["model"], b["batch"], b["q_rows"]]).transform("min")   # a second scan of one shape
    b["scan"] = (b[["model", "batch", "q_rows"]].ne(b[["model", "batch", "q_rows"]].shift()).any(axis=1) | gap).cumsum()
    b.attrs["file"] = fs[-1].name
    return b


def steps(b: pd.DataFrame) -> pd.DataFrame:
    """Every neighbouring pair of rows of a scan across which the exact plan changes by >= 2 %: measured ratio (after /
    before) and each form's; regime 'split chunk growing' where the pair's prefix is above 16 x 128 tokens' worth of
    the plan's minimum chunk (the chunk grows with the prefix), else 'minimum chunk' (the plan adds a 128-token chunk)."""
    rows = []
    for _, g in b.groupby("scan"):
        g = g.reset_index(drop=True)
        for i in range(1, len(g)):
            r = g["pred_exact_us"][i] / g["pred_exact_us"][i - 1]
            if abs(r - 1.0) >= 0.02:
                rows.append({"model": g["model"][i], "B": g["batch"][i], "P": g["q_rows"][i],
                             "O before": g["prefix"][i - 1], "O after": g["prefix"][i],
                             "measured": g["median_us"][i] / g["median_us"][i - 1], "exact": r,
                             "interp": g["pred_interp_us"][i] / g["pred_interp_us"][i - 1],
                             "noisy": bool(g["p80_us"][i] / g["p20_us"][i] > 1.1)})
    return pd.DataFrame(rows)


def prefill_scan6(fmt: dict | None = None) -> None:
    fmt = fmt or {"index": False, "float_format": lambda v: f"{v:.3f}"}
    b = load()
    if not len(b):
        return
    r0 = b.iloc[0]
    print(f"\nPREFILL SCAN 6 ({b.attrs['file']}: {len(b)} rows, FlashInfer's FA2 prefill, bf16, {r0['device']}; priced "
          f"before the call at {r0['model_commit']}: exact = {LAB['exact']}, interp = {LAB['interp']}, the engine's form "
          f"since 2026-11-28). Question fixed before the call: {r0['question']}. |model/measured - 1| median / p90, "
          "signed median, % per scan")
    out = []
    for _, g in b.groupby("scan"):
        x = g.iloc[0]
        row = {"scan": f"{x['model']} B{x['batch']} P{x['q_rows']} O {g['prefix'].min()}-{g['prefix'].max()}",
               "n": len(g)}
        for k in LAB:
            e = g[f"{k}_err_pct"]
            row[k] = f"{e.abs().median():.1f} / {e.abs().quantile(0.9):.1f} ({e.median():+.1f})"
        out.append(row)
    print(pd.DataFrame(out).to_string(index=False))
    for k, lab in LAB.items():
        e = b[f"{k}_err_pct"]
        print(f"  {lab}: {e.abs().median():.1f} / {e.abs().quantile(0.9):.1f} % (signed {e.median():+.1f}), "
              f"scans met {sum(int(g[f'{k}_err_pct'].abs().median() <= 10 and g[f'{k}_err_pct'].abs().quantile(0.9) <= 25) for _, g in b.groupby('scan'))} of {b['scan'].nunique()}")
        BOARD.add("fi prefill (FA2 steps)", "blind", f"prefill scan 6 (H200), {lab}", e,
                  sum(int(g[f"{k}_err_pct"].abs().median() <= 10 and g[f"{k}_err_pct"].abs().quantile(0.9) <= 25)
                      for _, g in b.groupby("scan")), int(b["scan"].nunique()))
    s = steps(b)
    if len(s):
        print("the exact plan's steps (>= 2 % between neighbouring rows): measured after / before against each form's")
        print(s.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
        grow = s[(s["O before"] >= 2048) & ~s["noisy"]]
        if len(grow):
            print(f"  where the split plan's chunk grows (O >= 2048; {len(grow)} steps, noisy rows left out): "
                  f"measured step {np.median(grow['measured']):.3f} median, exact {np.median(grow['exact']):.3f}, "
                  f"interp {np.median(grow['interp']):.3f}; |measured - form| median: exact "
                  f"{np.median(np.abs(grow['measured'] - grow['exact'])):.3f}, interp "
                  f"{np.median(np.abs(grow['measured'] - grow['interp'])):.3f}")
    _engine_form_on_grids()


def _engine_form_on_grids() -> None:
    """The engine's form against the exact plan on the FlashInfer rows of prefill grids 1-4 (rows seen before)."""
    from accuracy_sections.prefill_kernels import load as load_grid
    from simulator.calibration.prefill_kernels import engine_fi_us

    parts = []
    for g in ("", "_blind2", "_blind3", "_blind4"):
        b = load_grid(g)
        if len(b):
            parts.append(b[b["family"] == "fi_prefill"].reset_index(drop=True))
    if not parts:
        return
    b = pd.concat(parts, ignore_index=True)
    ex, ip = engine_fi_us(b, interpolated=False), engine_fi_us(b, interpolated=True)
    m = b["median_us"].to_numpy()
    moved = np.abs(ip / ex - 1.0) > 1e-9
    e_ex, e_ip = np.abs(ex / m - 1.0) * 100.0, np.abs(ip / m - 1.0) * 100.0
    print(f"the engine's form on the FlashInfer rows of prefill grids 1-4 (H100, {len(b)} rows, looked-at; {int(moved.sum())} "
          f"rows off a plan step move, by {np.median(np.abs(ip / ex - 1.0)[moved]) * 100:.3f} % median, "
          f"{np.max(np.abs(ip / ex - 1.0)) * 100:.2f} % at most): exact {np.median(e_ex):.1f} / {np.percentile(e_ex, 90):.1f} %, "
          f"interpolated {np.median(e_ip):.1f} / {np.percentile(e_ip, 90):.1f} %")
