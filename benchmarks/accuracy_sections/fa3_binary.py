"""FlashAttention-3's own hopper/ forward binary (flash-attention @ 0251105a, built for sm_90a from source by
lab/kernels/build_fa3_binary.py) against the `fa3` model priced BEFORE the binary was measured (first look).

Predictions: hwmodels/calibration/data/production_attention/fa3_binary_first_look.csv (lab/kernels/
predict_fa3_binary.py, committed before the device call: pred_fa3_us = the product's fa3 choice, pred_unsplit_us =
the same rates with one CTA per (m-block, KV head, request), no split). Measurements: fa3_binary_<device>_<date>.csv
(lab/kernels/measure_fa3_binary.py: num_splits = 0, FA3's own heuristic as engines call it; the split subset also at
num_splits = 1). The first-look rows were then LOOKED AT: hopper/'s prepare kernel and always-launched combine
(simulator/kernels/fa3.py) were added after their errors and the binary's kernel records were seen. Blind grid:
fa3_binary_blind_predictions.csv (50 shapes in none of the first look's rows, priced with main's model = base and
the model with those launches = new, both committed before the measurement fa3_binary_blind_<device>_<date>.csv).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from hwmodels import datafiles as DF
from simulator.calibration.scoreboard import BOARD, models_table

DATA = Path(__file__).resolve().parents[2] / "hwmodels/calibration/data/production_attention"
PRED_CSV = DF.resolve(DATA / "fa3_binary_first_look.csv")
KEYS = ["model", "dtype", "heads", "kv_heads", "head_dim", "batch", "q_rows", "context", "page_size", "num_splits"]


def load() -> pd.DataFrame:
    """The first-look prices joined with the newest measured CSV (rows that ran); empty when either is missing."""
    meas = sorted(f for f in DF.glob(DATA, "fa3_binary_nvidia-*.csv") if "_grids" not in f.name and "_repeat" not in f.name)
    if not PRED_CSV.exists() or not meas:
        return pd.DataFrame()
    p = pd.read_csv(PRED_CSV).drop_duplicates(KEYS)
    m = pd.read_csv(meas[-1]).drop_duplicates(KEYS)
    m = m[m["median_us"].notna()]
    b = p.merge(m[KEYS + ["median_us", "device", "date", "torch", "cuda", "flash_attn_commit"]], on=KEYS)
    b.attrs["file"] = meas[-1].name
    b["phase"] = np.where(b["q_rows"] > 1, "verify", "decode")
    b["ctx"] = pd.cut(b["context"], [0, 256, 16384, np.inf], labels=["short <=256", "middle <=16K", "long >16K"])
    b["bat"] = np.where(b["batch"] <= 8, "small B<=8", "large B>8")
    b["plan"] = np.where(b["num_splits"] == 1, "forced 1", np.where(b["model_splits"] > 1, "split", "unsplit"))
    b["fa3_err_pct"] = (b["pred_fa3_us"] / b["median_us"] - 1.0) * 100.0
    b["unsplit_err_pct"] = (b["pred_unsplit_us"] / b["median_us"] - 1.0) * 100.0
    return b


BLIND_PRED_CSV = DF.resolve(DATA / "fa3_binary_blind_predictions.csv")


def load_blind() -> pd.DataFrame:
    """The blind grid's two committed prices joined with its measurement; empty when either is missing."""
    meas = sorted(DF.glob(DATA, "fa3_binary_blind_nvidia-*.csv"))
    meas = [f for f in meas if "_grids" not in f.name]
    if not BLIND_PRED_CSV.exists() or not meas:
        return pd.DataFrame()
    p = pd.read_csv(BLIND_PRED_CSV)
    m = pd.read_csv(meas[-1])
    b = p.merge(m[m["median_us"].notna()][KEYS + ["median_us"]], on=KEYS)
    b.attrs["file"] = meas[-1].name
    b["phase"] = np.where(b["q_rows"] > 1, "verify", "decode")
    b["ctx"] = pd.cut(b["context"], [0, 256, 16384, np.inf], labels=["short <=256", "middle <=16K", "long >16K"])
    b["bat"] = np.where(b["batch"] <= 8, "small B<=8", "large B>8")
    for lab in ("base", "new"):
        b[f"{lab}_err_pct"] = (b[f"pred_{lab}_us"] / b["median_us"] - 1.0) * 100.0
    return b


def fa3_binary(fmt) -> None:
    """Print the first-look and blind tables of the FA3 binary per regime and add them to the summary board."""
    b = load()
    if not len(b):
        return
    from hwmodels.spec import load_hardware

    b["pred_now_us"] = _price_now(b, load_hardware("H100-SXM"))
    b["now_err_pct"] = (b["pred_now_us"] / b["median_us"] - 1.0) * 100.0
    r0 = b.iloc[0]
    print(f"\nFA3 BINARY ({b.attrs['file']}: {len(b)} rows; {r0['device']}, torch {r0['torch']}, CUDA {r0['cuda']}, "
          f"flash-attention {str(r0['flash_attn_commit'])[:8]}), FIRST LOOK = prices committed before the binary ran "
          f"({PRED_CSV.name}, model at {str(b['model_commit'].iloc[0])[:7]}): fa3 = the product's fa3 choice "
          "(hopper/'s split plan, persistent, combine); unsplit = one CTA per (m-block, KV head, request), no split "
          "(the stand-in's structure); plan: the model's split decision, 'forced 1' = rows run with num_splits = 1")
    t = models_table(b, ("dtype", "phase", "plan", "ctx", "bat"), ("fa3", "now", "unsplit"), ("fa3", "now"))
    print(t.to_string(**fmt))
    heur = b[b["num_splits"] == 0]
    BOARD.add("fa3", "first look", "FA3 binary (hopper/ @ 0251105a), num_splits 0", heur["fa3_err_pct"],
              int((t[t["plan"] != "forced 1"]["fa3_goal"] == "met").sum()), int((t["plan"] != "forced 1").sum()))
    for lab, x in (("num_splits 0 (heuristic)", heur), ("num_splits 1", b[b["num_splits"] == 1])):
        for c in ("fa3", "unsplit"):
            e = x[f"{c}_err_pct"]
            if len(e):
                print(f"fa3 binary {lab}, {c}: n {len(e)}, median |error| {np.median(e.abs()):.1f} %, p90 "
                      f"{np.percentile(e.abs(), 90):.1f} %, signed {np.median(e):+.1f} %")
    e = heur["now_err_pct"]
    print(f"fa3 binary num_splits 0, now (LOOKED-AT: the launches were added after these rows were seen): n {len(e)}, "
          f"median |error| {np.median(e.abs()):.1f} %, p90 {np.percentile(e.abs(), 90):.1f} %, signed {np.median(e):+.1f} %")
    BOARD.add("fa3", "looked-at", "FA3 binary first-look grid, num_splits 0", e)
    bl = load_blind()
    if not len(bl):
        return
    print(f"FA3 BINARY BLIND ({bl.attrs['file']}: {len(bl)} shapes in none of the first look's rows: context 32-512 "
          "at batch 1-384, the split regime at 2K-24K / batch 1-12, many-wave controls, verification q 2, fp8), both "
          f"prices committed before the measurement ({BLIND_PRED_CSV.name}): base = main's model at "
          f"{str(bl['base_commit'].iloc[0])[:7]}, new = with hopper/'s prepare kernel and always-launched combine at "
          f"{str(bl['model_commit'].iloc[0])[:7]}")
    tb = models_table(bl, ("dtype", "phase", "ctx", "bat"), ("base", "new"), ("base", "new"))
    print(tb.to_string(**fmt))
    BOARD.add("fa3", "blind", "FA3 binary blind grid (hopper/ @ 0251105a)", bl["new_err_pct"],
              int((tb["new_goal"] == "met").sum()), len(tb))
    for lab in ("base", "new"):
        e = bl[f"{lab}_err_pct"]
        print(f"fa3 binary blind, {lab}: median |error| {np.median(e.abs()):.1f} %, p90 "
              f"{np.percentile(e.abs(), 90):.1f} %, signed {np.median(e):+.1f} %; regimes met "
              f"{int((tb[lab + '_goal'] == 'met').sum())} of {len(tb)}")


def _price_now(b: pd.DataFrame, hw) -> np.ndarray:
    """The product's fa3 price of each row under the committed model (us)."""
    from hwmodels.roofline import price as roof
    from simulator.kernels.families import gqa_launches
    from simulator.kernels.production import emit
    from simulator.ops import OpBuilder

    ob = OpBuilder(len(b))
    a = {c: b[c].to_numpy(float) for c in ("batch", "q_rows", "context", "heads", "kv_heads", "head_dim", "page_size")}
    kvb = np.where(b["dtype"].to_numpy() == "e4m3", 1.0, 2.0)
    emit(ob, gqa_launches("fa3", a["batch"], a["q_rows"], a["context"], a["heads"], a["kv_heads"], a["head_dim"], kvb,
                          a["page_size"], hw.units), hw.units)
    ops = ob.build()
    return np.bincount(ops.setting, weights=roof(ops, hw, "graph"), minlength=len(b)) * 1e6
