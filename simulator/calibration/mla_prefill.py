"""MLA prefill through FlashAttention-3 (vLLM's MLA backends on Hopper: flash_attn_varlen_func over DeepSeek's
non-absorbed heads, Q / K of 192, V of 128, contiguous, causal), measured on the lent H200 with FA3's own hopper/ binary
built with its hdim 192 x 128 forward (lab/kernels/measure_mla_prefill.py, run_mla_prefill_device.sh).

  grid 1 (the first look, 50 rows): priced before the call (lab/kernels/predict_mla_prefill.py ->
         mla_prefill_first_look.csv): the product's generic op and FA3's launches from source (simulator/kernels/
         families.py mla_prefill_launches; a 192 x 128 block's time = the measured d = 128 block's x (192 + 128) / 256)
  fit    the block multiple on grid 1's 50 rows (looked-at: fit_block, the rms log error over a 0.001 scan): 1.106,
         simulator.kernels.fa3.FA3_MLA_BLOCK
  grid 2 (blind, 48 rows in no grid-1 shape): main (from source) and the candidate priced and committed before its call
         (mla_prefill_blind2_predictions.csv), ship rule fixed there: the candidate 7.0 / 16.7 %, 4 of 4 regimes,
         against main's 11.9 / 23.4 %, 1 of 4: SHIPPED. FA3's longest-first schedule (fa3.FA3_PREFILL_LPT, judged on
         GQA rows by prefill blind grid 5) shipped after it: with it grid 2 prices at 6.6 / 17.0 %, 4 of 4 (looked-at);
         grid 1 refitted under it would give 1.118 (not adopted: the judged 1.106 stays)

Regimes: fresh (O = 0) / chunked (O > 0) x heads per GPU (>= 64 / <= 32); goal median <= 10 %, p90 <= 25 %.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from hwmodels import datafiles as DF
from simulator.calibration import fit_production_attention as FP

DATA_DIR = FP.DATA_DIR
KEYS = ["model", "heads", "batch", "q_rows", "prefix"]
#: (prediction file, measured glob) per grid
GRIDS = {1: ("mla_prefill_first_look.csv", "mla_prefill_nvidia-*.csv"),
         2: ("mla_prefill_blind2_predictions.csv", "mla_prefill_blind2_nvidia-*.csv")}
#: the scan fit_block walks (multiples of the d = 128 block)
SCAN = np.round(np.arange(1.0, 1.2001, 0.001), 3)


def regime(df: pd.DataFrame) -> pd.Series:
    """fresh / chunked x heads per GPU, the grids' regimes (fixed before grid 1 ran)."""
    return pd.Series(np.where(df["prefix"] > 0, "chunked (O > 0)", "fresh (O = 0)"), index=df.index) + ", " + \
        pd.Series(np.where(df["heads"] >= 64, ">= 64 heads", "<= 32 heads"), index=df.index)


def join_grid(pred: str, glob: str, keys: list[str], pred_cols: list[str], data_dir: Path = DATA_DIR) -> pd.DataFrame:
    """A grid's newest measured file (`glob`, support files left out) joined on `keys` with its committed prices
    (`pred`: the `pred_cols` and every pred_<label>_us, model_commit, main_commit, ship_rule column), with
    <label>_err_pct for every pred_<label>_us; empty when either file is missing."""
    fs = sorted(p for p in DF.glob(Path(data_dir), glob)
                if not any(x in p.name for x in ("_grids", "_env", "_build", "_clocks")))
    pf = DF.resolve(Path(data_dir) / pred)
    if not fs or not pf.is_file():
        return pd.DataFrame()
    m = pd.read_csv(fs[-1])
    m = m[np.isfinite(pd.to_numeric(m["median_us"], errors="coerce"))]
    p = pd.read_csv(pf, dtype={"model_commit": str, "main_commit": str})
    cols = [c for c in p.columns if c.startswith("pred_") or c in ("model_commit", "main_commit", "ship_rule")]
    b = p[keys + pred_cols + cols].merge(m[keys + ["median_us", "device", "note"]], on=keys, how="inner")
    for c in cols:
        if c.startswith("pred_"):
            b[c[5:-3] + "_err_pct"] = (b[c] / b["median_us"] - 1.0) * 100.0
    b.attrs["file"] = fs[-1].name
    return b


def measured(grid: int, data_dir: Path = DATA_DIR) -> pd.DataFrame:
    """Grid `grid`'s measured rows joined with its committed prices (join_grid)."""
    pred, glob = GRIDS[grid]
    return join_grid(pred, glob, KEYS, ["regime"], data_dir)


def family_us(df: pd.DataFrame, hw, block="shipped") -> np.ndarray:
    """FA3's MLA prefill price of every row on `hw` with FA3_MLA_BLOCK = `block` ("shipped": as committed; None: the
    work ratio (d + dv) / 256, the first look's)."""
    from simulator.kernels import fa3 as F
    from simulator.kernels.families import mla_prefill_launches
    from simulator.kernels.production import emit
    from simulator.ops import OpBuilder
    before = F.FA3_MLA_BLOCK
    if block != "shipped":
        F.FA3_MLA_BLOCK = None if block is None else float(block)
    try:
        b = OpBuilder(len(df))
        a = {c: df[c].to_numpy(float) for c in ("batch", "q_rows", "context", "heads")}
        emit(b, mla_prefill_launches("flashmla", a["batch"], a["q_rows"], a["context"], a["heads"], 192.0, 128.0,
                                     hw.units), hw.units)
        return FP.predict_us(b.build(), hw, hw.efficiency, len(df))
    finally:
        F.FA3_MLA_BLOCK = before


def fit_block(hw=None, data_dir: Path = DATA_DIR) -> tuple[float, float]:
    """(the 192 x 128 block's multiple of the d = 128 block, its rms log error) fitted on grid 1's measured rows (all
    50, looked-at) by a scan of SCAN on the H200 (the device they ran on), under the FA3 model as it stands (the shipped
    1.106 was fitted with fa3.FA3_PREFILL_LPT off)."""
    from hwmodels.spec import load_hardware
    hw = hw or load_hardware("H200")
    m = measured(1, data_dir)
    m = m.assign(context=m["q_rows"] + m["prefix"])
    best = (None, np.inf)
    for s in SCAN:
        r = float(np.sqrt(np.mean(np.log(family_us(m, hw, s) / m["median_us"].to_numpy()) ** 2)))
        if r < best[1] - 1e-12:
            best = (float(s), r)
    return best
