"""The harness's warm K/V at short calls, for the FlashInfer / FlashMLA / XQA families (lab/kernels/
measure_attention_cold.py): every shape timed by the campaign harness ('warm': R = min(16, ceil(128 MiB / K/V)) copies,
so a short call's copies stay in the 50 MB L2) and with the engine's state ('cold': K/V rotated over >= 128 MiB of
copies, no cap, the page table / plan / Q shared and warm). Prices committed before the measurement
(attention_cold_predictions.csv): main = main's model (no notion of the L2: the product's price for a cold row), new =
the harness's warm share (fit_production_attention harness_kv_l2_hit / harness_warm_launches) on warm rows and the
families' warm fit rows, refitted, hit 0 on cold rows. Regime goal: median <= 10 %, p90 <= 25 %."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from hwmodels import datafiles as DF
from simulator.calibration.scoreboard import BOARD, models_table

DATA = Path(__file__).resolve().parents[2] / "hwmodels" / "calibration" / "data" / "production_attention"
PRED = "attention_cold_predictions.csv"
GLOB = "attention_cold_nvidia-*.csv"
#: cold grid 2 (FlashInfer's tensor-core decode, fi_tc; measure_attention_cold.py --grid 2): priced once, by the shipped
#: model (pred_base_us = pred_new_us)
PRED2 = "attention_cold2_predictions.csv"
GLOB2 = "attention_cold2_nvidia-*.csv"
KEYS = ["family", "model", "dtype", "batch", "q_rows", "context", "role", "mode"]


def footprint_band(mb) -> np.ndarray:
    """The warm harness footprint (R x K/V, MB) in the bands named before the measurement."""
    mb = np.asarray(mb, dtype=float)
    return np.where(mb < 25, "<25 MB", np.where(mb < 50, "25-50 MB", np.where(mb < 128, "50-128 MB", ">=128 MiB")))


def load(data_dir: Path = DATA, glob: str = GLOB, pred: str = PRED) -> pd.DataFrame:
    """Measured rows joined with the committed prices (main_err_pct, new_err_pct); empty when either is missing.
    glob / pred: cold grid 1's (default) or grid 2's (GLOB2, PRED2)."""
    fs = sorted(p for p in DF.glob(Path(data_dir), glob) if "smi" not in p.name and DF.suffix(p) == ".csv")
    pf = DF.resolve(Path(data_dir) / pred)
    if not fs or not pf.is_file():
        return pd.DataFrame()
    m = pd.read_csv(fs[-1])
    m = m[np.isfinite(pd.to_numeric(m["median_us"], errors="coerce"))]
    p = pd.read_csv(pf)
    b = m.merge(p[KEYS + ["warm_footprint_mb", "pred_base_us", "pred_new_us", "base_commit", "model_commit"]],
                on=KEYS, how="inner")
    b["main_err_pct"] = (b["pred_base_us"] / b["median_us"] - 1.0) * 100.0
    b["new_err_pct"] = (b["pred_new_us"] / b["median_us"] - 1.0) * 100.0
    b["band"] = footprint_band(b["warm_footprint_mb"])
    b.attrs["file"] = fs[-1].name
    return b


def ratios(b: pd.DataFrame) -> pd.DataFrame:
    """cold / warm time per shape."""
    k = [c for c in KEYS if c != "mode"]
    w = b[b["mode"] == "warm"].set_index(k)[["median_us", "band"]]
    c = b[b["mode"] == "cold"].set_index(k)["median_us"]
    r = w.join(c.rename("cold_us"), how="inner").reset_index()
    r["ratio"] = r["cold_us"] / r["median_us"]
    return r


def attention_cold(fmt: dict | None = None) -> None:
    """Print the cold grid's tables and add its board rows."""
    fmt = fmt or {"index": False}
    b = load()
    if not len(b):
        return
    print(f"\nCOLD K/V GRID ({b.attrs['file']}: {b[b['mode'] == 'cold'].shape[0]} shapes, each warm (the campaign "
          "harness) and cold (K/V over >= 128 MiB of copies, metadata warm); prices committed before the measurement "
          f"({PRED}): main = {str(b['base_commit'].iloc[0])[:7]}, new = {str(b['model_commit'].iloc[0])[:7]} "
          "(harness warm share on warm rows and warm fit rows, refitted; hit 0 on cold rows)")
    r = ratios(b)
    t = r.groupby(["family", "band"])["ratio"].agg(["count", "median", "min", "max"]).reset_index()
    print("cold / warm time by the warm harness footprint (R x K/V):")
    print(t.round(3).to_string(**fmt))
    cold = b[b["mode"] == "cold"].reset_index(drop=True)
    print("cold rows (the engine's state), blind:")
    tc = models_table(cold, ("family",), ("main", "new"), ("main", "new"))
    print(tc.round(1).to_string(**fmt))
    from simulator.calibration.fit_production_attention import HARNESS_KV_L2

    shipped = "new" if HARNESS_KV_L2 else "main"   # the engine-state line beside each family's STANDING
    newer = _grid3_families()                       # families whose engine-state line is cold grid 3's now
    for lab in ("main", "new"):
        for fam, g in cold.groupby("family"):
            row = tc[tc["family"] == fam]
            BOARD.add(str(fam), "blind", f"cold K/V grid (engine state), {lab} model's committed prices",
                      g[f"{lab}_err_pct"], int((row[f"{lab}_goal"] == "met").sum()), len(row),
                      standing=lab == shipped and fam not in newer and f"{fam}, cold K/V (engine state)")
    print("cold rows by the warm harness footprint band (blind):")
    print(models_table(cold, ("family", "band"), ("main", "new"), ("main", "new")).round(1).to_string(**fmt))
    warm = b[b["mode"] == "warm"].reset_index(drop=True)
    print("warm rows (the campaign harness), blind:")
    print(models_table(warm, ("family",), ("main", "new"), ("main", "new")).round(1).to_string(**fmt))
    print("main's model is kept (fit_production_attention HARNESS_KV_L2 False): the candidate (new) lost on the cold rows "
          "of fi_decode, fi_mla and xqa; the controls (>= 128 MiB both ways) ran 1-2 % faster cold (the cold graph holds "
          ">= 64 calls, the warm one 8-50: its start is spread wider), so the ratios above understate the warm gain by "
          "about that much; FlashMLA's shapes are priced but not measured (its wheel does not fit the device carry)")
    attention_cold2(fmt)


def attention_cold2(fmt: dict | None = None) -> None:
    """Cold grid 2 (fi_tc): cold / warm ratios, the shipped model's blind error on cold rows (the engine state's STANDING
    line beside fi_tc's) and on warm rows."""
    fmt = fmt or {"index": False}
    b = load(glob=GLOB2, pred=PRED2)
    if not len(b):
        return
    print(f"\nCOLD K/V GRID 2 ({b.attrs['file']}: FlashInfer's tensor-core decode, {b[b['mode'] == 'cold'].shape[0]} "
          f"shapes warm and cold; priced before the measurement by the shipped model at "
          f"{str(b['model_commit'].iloc[0])[:7]}, one price for both modes)")
    r = ratios(b)
    print("cold / warm time by the warm harness footprint (R x K/V):")
    print(r.groupby(["family", "band"])["ratio"].agg(["count", "median", "min", "max"]).reset_index().round(3)
          .to_string(**fmt))
    print("the fp8 rows' miss, diagnosed on them and on the looked-at warm fit rows: a short fp8 call (batch 1-24, "
          "context 16-650) is priced flat at 12.7-13.1 us while it measures 12.6 -> 14.8 us as the context grows (the bf16 "
          "kind follows the growth); not refitted")
    for mode in ("cold", "warm"):
        g = b[b["mode"] == mode].reset_index(drop=True)
        t = models_table(g, ("family", "dtype"), ("main",), ("main",))
        print(f"{mode} rows ({'the engine state' if mode == 'cold' else 'the campaign harness'}), blind, by K/V dtype:")
        print(t.round(1).to_string(**fmt))
        # regimes: bf16 / fp8 K/V (the issue's), so the fp8 short calls' miss counts on its own
        BOARD.add("fi_tc", "blind", f"cold K/V grid 2, {mode} rows, the shipped model's committed prices",
                  g["main_err_pct"], int((t["main_goal"] == "met").sum()), len(t),
                  standing=mode == "cold" and "fi_tc" not in _grid3_families() and "fi_tc, cold K/V (engine state)")
    attention_cold3(fmt)


def _grid3_families() -> tuple:
    """The families cold grid 3 measured once it is committed (their engine-state STANDING line is grid 3's)."""
    from simulator.calibration import fi_tc_fp8_grid3 as G3

    return ("fi_tc", "fi_verify") if len(G3.load()) else ()


def attention_cold3(fmt: dict | None = None) -> None:
    """Cold grid 3 (fi_tc and fi_verify, bf16 and fp8): main's and the candidate's blind errors per regime on the cold
    rows, the rule's outcome, the replicate, and the engine-state STANDING lines of both families (the shipped model)."""
    import pandas as pd

    from hwmodels import datafiles as DF
    from simulator.calibration import fi_tc_fp8_grid3 as G3

    fmt = fmt or {"index": False}
    b = G3.load()
    r = G3.judge(b)
    if r is None:
        return
    print(f"\nCOLD K/V GRID 3 ({b.attrs['file']}: fi_tc and fi_verify, bf16 and fp8, {r['n']} cold shapes + controls; "
          f"priced before the measurement by main {G3.PRED_BASE} and by the candidate {G3.CAND_COMMIT} -- the fp8 "
          "decode tile's exposed load at one CTA per SM, the fit rerun under it; regimes family x K/V dtype on the "
          "cold rows)")
    with pd.option_context("display.width", 200):
        print(r["regimes"].round(1).to_string(**fmt))
    pm, pn = r["pooled"]["main"], r["pooled"]["new"]
    print(f"  regimes met: main {r['met']['main']}, candidate {r['met']['new']} of {len(r['regimes'])}; pooled cold "
          f"main {pm[0]:.1f} / {pm[1]:.1f} %, candidate {pn[0]:.1f} / {pn[1]:.1f} %: "
          f"{'SHIPPED (the rule: more regimes met)' if r['ship'] else 'main stays'}")
    rep = sorted(p for p in DF.glob(G3._data_dir(None), "attention_cold3rep2_nvidia-*.csv") if DF.suffix(p) == ".csv")
    if rep:
        rb = pd.read_csv(rep[-1]).merge(pd.read_csv(DF.resolve(G3._data_dir(None) / G3.PRED))[
            G3.KEYS + ["pred_base_us", "pred_new_us"]], on=G3.KEYS)
        rb["main_err_pct"] = (rb["pred_base_us"] / rb["median_us"] - 1.0) * 100.0
        rb["new_err_pct"] = (rb["pred_new_us"] / rb["median_us"] - 1.0) * 100.0
        rr = G3.judge(rb)
        print(f"  replicate (same call): main {rr['met']['main']}, candidate {rr['met']['new']} regimes; pooled "
              f"{rr['pooled']['main'][0]:.1f} / {rr['pooled']['main'][1]:.1f} -> {rr['pooled']['new'][0]:.1f} / "
              f"{rr['pooled']['new'][1]:.1f} %")
    ctrl = b[(b["mode"] == "cold") & (b["role"] == "control")]
    print("  controls (not in the regimes): " + "; ".join(
        f"{m} {d} {int(bb)} x {int(t)}: main {e1:+.1f} %, candidate {e2:+.1f} %" for m, d, bb, t, e1, e2 in
        zip(ctrl["model"], ctrl["dtype"], ctrl["batch"], ctrl["context"], ctrl["main_err_pct"], ctrl["new_err_pct"])))
    warm = b[(b["mode"] == "warm") & (b["role"] != "control")].assign(mode="cold")   # judge() reads 'cold' rows
    rw = G3.judge(warm)
    print(f"  warm rows (the campaign harness), by the same regimes: main {rw['met']['main']}, candidate "
          f"{rw['met']['new']}; pooled {rw['pooled']['main'][0]:.1f} / {rw['pooled']['main'][1]:.1f} -> "
          f"{rw['pooled']['new'][0]:.1f} / {rw['pooled']['new'][1]:.1f} %")
    for lab in ("main", "new"):
        BOARD.add("fi_tc + fi_verify", "blind", f"cold K/V grid 3, warm rows (the harness), {lab} model's committed "
                  "prices", warm[f"{lab}_err_pct"], int(rw["regimes"][f"{lab}_met"].sum()), len(rw["regimes"]))
    from simulator.kernels.flashinfer import FI_TC_FP8_LONE_TILE

    shipped = "new" if FI_TC_FP8_LONE_TILE else "main"
    cold = b[(b["mode"] == "cold") & (b["role"] != "control")]
    reg = r["regimes"]
    for lab in ("main", "new"):
        for fam, g in cold.groupby("family"):
            rf = reg[reg["family"] == fam]
            BOARD.add(str(fam), "blind", f"cold K/V grid 3 (engine state), {lab} model's committed prices",
                      g[f"{lab}_err_pct"], int(rf[f"{lab}_met"].sum()), len(rf),
                      standing=lab == shipped and f"{fam}, cold K/V (engine state)")
