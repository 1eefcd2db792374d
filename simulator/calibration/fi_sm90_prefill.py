"""FlashInfer's own Hopper prefill kernel (simulator/kernels/fi_sm90.py: the "fa3" backend that vLLM's FLASHINFER
backend and SGLang's flashinfer backends run on sm_90 at bf16), measured on the lent H200 by
lab/kernels/measure_fi_sm90_prefill.py (flashinfer-python 0.6.4 JIT-built there).

  grid 1 (the first look): priced before the call by lab/kernels/predict_fi_sm90_prefill.py ->
         fi_sm90_prefill_first_look.csv: pred_family_us = the family from source with FA3's binary's terms (nothing of
         this kernel measured), pred_product_us = what the product charged these calls before (the engines' FlashInfer
         prefill priced as FlashInfer's FA2 kernel, fi_tc; MLA rows: the dense strategy's generic op)

  fit    two things, chosen after grid 1's errors were seen (looked-at): a launch of at most one item per SM waits for
         its first Q / K / V tiles (fi_sm90.FI_SM90_LONE_TILE, the roofline's LONE_TILE_LOAD), and a head-dim-128 key
         tile at a per-path multiple of the first look's (FI_SM90_TILE_SCALE: ragged 0.955, paged 1.07, fitted on grid
         1's 'fit' rows, Llama-3.1-8B's heads)
  grid 2 (blind, 104 rows of other models in no grid-1 shape): main (the first look) and candidates A (the plan
         emulated up to 8 items per SM) and B (up to 64), priced and committed before the call
         (fi_sm90_prefill_blind2_predictions.csv, ship rule there): A 4.6 / 9.5 %, 6 of 6 regimes; B 5.0 / 10.0 %,
         6 of 6; main 6.6 / 14.6 %, 4 of 6; the FA2 reading 68.2 / 134.7 %, 0 of 6: A SHIPPED. The engine's form of it
         (the plan's span / mean emulated at full query tiles and the prefix's key-tile multiples, interpolated; the
         prefix counted continuously, so the engine's chunk surface stays smooth) was written after grid 2 (looked-at):
         it prices grid 2 at 4.4 / 9.5 %, within 6 points of the committed prices on every row

Regimes (fixed before grid 1 ran): call (ragged / paged / MLA ragged) x rounds of the persistent CTAs (one round: the
busiest CTA walks one item; several); goal median <= 10 %, p90 <= 25 %.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from hwmodels import datafiles as DF
from simulator.calibration import fit_production_attention as FP

DATA_DIR = FP.DATA_DIR
KEYS = ["family", "model", "heads", "batch", "q_rows", "prefix"]
#: (prediction file, measured glob) per grid
GRIDS = {1: ("fi_sm90_prefill_first_look.csv", "fi_sm90_prefill_nvidia-*.csv"),
         2: ("fi_sm90_prefill_blind2_predictions.csv", "fi_sm90_prefill_blind2_nvidia-*.csv")}


def items_busiest(df: pd.DataFrame, sms: int = 132) -> np.ndarray:
    """The plan's items on its busiest CTA for every row (simulator.kernels.fi_sm90)."""
    from simulator.kernels import fi_sm90 as S
    a = {c: df[c].to_numpy(float) for c in ("batch", "q_rows", "context", "heads", "kv_heads", "head_dim",
                                            "head_dim_v")}
    out = np.zeros(len(df))
    for paged in (False, True):
        m = (df["family"].astype(str) == "fi_sm90_paged").to_numpy() == paged
        if m.any():
            _, info = S.fi_sm90_prefill(*(a[c][m] for c in ("batch", "q_rows", "context", "heads", "kv_heads",
                                                             "head_dim", "head_dim_v")), sms, paged=paged)
            out[m] = info["items_busiest"]
    return out


def regime(df: pd.DataFrame, sms: int = 132) -> pd.Series:
    """call x rounds of the persistent CTAs (the grids' regimes, fixed before grid 1 ran)."""
    call = df["family"].astype(str).map({"fi_sm90_ragged": "ragged", "fi_sm90_paged": "paged",
                                         "fi_sm90_mla": "MLA ragged"})
    rounds = np.where(items_busiest(df, sms) <= 1.0, "one item per CTA", "several items per CTA")
    return call + ", " + pd.Series(rounds, index=df.index)


def now_us(df: pd.DataFrame, hw=None) -> np.ndarray:
    """The shipped model's price of every measured row (on the H200, where the grids ran)."""
    from hwmodels.spec import load_hardware
    return family_us(df, hw or load_hardware("H200"))


def family_us(df: pd.DataFrame, hw) -> np.ndarray:
    """The family's price of every row on `hw` (simulator.kernels.fi_sm90.fi_sm90_prefill)."""
    from simulator.kernels import fi_sm90 as S
    from simulator.kernels.production import emit
    from simulator.ops import MaskedBuilder, OpBuilder
    b = OpBuilder(len(df))
    a = {c: df[c].to_numpy(float) for c in ("batch", "q_rows", "context", "heads", "kv_heads", "head_dim",
                                            "head_dim_v")}
    for paged in (False, True):
        m = (df["family"].astype(str) == "fi_sm90_paged").to_numpy() == paged
        if not m.any():
            continue
        ones = np.where(m, 1.0, 0.0)
        args = [np.where(m, a[c], 1.0) for c in ("batch", "q_rows", "context", "heads", "kv_heads")]
        dq = np.where(m, a["head_dim"], 128.0)
        dv = np.where(m, a["head_dim_v"], 128.0)
        launches, _ = S.fi_sm90_prefill(*args, dq, dv, hw.units, paged=paged)
        emit(MaskedBuilder(b, ones > 0), launches, hw.units)
    return FP.predict_us(b.build(), hw, hw.efficiency, len(df))


def product_us(df: pd.DataFrame, hw) -> np.ndarray:
    """What the product charged these calls before the family: GQA rows as FlashInfer's FA2 prefill (fi_tc, eager
    plan, causal: simulator/kernels/families.py gqa_prefill_launches('flashinfer'), the engines' FlashInfer prefill
    as the product read them until now), MLA rows as the dense strategy's generic op."""
    from simulator.calibration import prefill_kernels as PK
    from simulator.kernels.families import gqa_prefill_launches
    from simulator.kernels.production import emit
    from simulator.model import load_model
    from simulator.ops import OpBuilder
    out = np.zeros(len(df))
    mla = (df["family"].astype(str) == "fi_sm90_mla").to_numpy()
    if mla.any():
        sub = df[mla].reset_index(drop=True)
        out[mla] = PK.product_us(sub.assign(kv_heads=sub["heads"]), hw, mla=load_model("DeepSeek-V3").mla)
    if (~mla).any():
        sub = df[~mla].reset_index(drop=True)
        b = OpBuilder(len(sub))
        a = {c: sub[c].to_numpy(float) for c in ("batch", "q_rows", "context", "heads", "kv_heads", "head_dim")}
        emit(b, gqa_prefill_launches("flashinfer", a["batch"], a["q_rows"], a["context"], a["heads"], a["kv_heads"],
                                     a["head_dim"], np.full(len(sub), 2.0), 16.0, hw.units,
                                     getattr(hw, "smem_per_sm", None)), hw.units)
        out[~mla] = FP.predict_us(b.build(), hw, hw.efficiency, len(sub))
    return out


def measured(grid: int, data_dir: Path = DATA_DIR) -> pd.DataFrame:
    """Grid `grid`'s measured rows joined with its committed prices (<label>_err_pct for every pred_<label>_us;
    simulator.calibration.mla_prefill.join_grid); empty when either file is missing."""
    from simulator.calibration.mla_prefill import join_grid
    pred, glob = GRIDS[grid]
    return join_grid(pred, glob, KEYS, ["kv_heads", "head_dim", "head_dim_v", "context", "regime", "role"], data_dir)


#: SGLang's flashinfer-backend extend with a cached prefix (lab/kernels/measure_sglang_extend.py): the composition the
#: product prices (simulator/kernels/families.py fi_prefill_launches('ragged')), priced before the call
EXTEND = ("sglang_extend_predictions.csv", "sglang_extend_nvidia-*.csv")


def sglang_extend(data_dir: Path = DATA_DIR) -> pd.DataFrame:
    """The extend rows (part 'extend': the whole sequence; 'prefix': its FA2 prefix call alone) joined with their
    committed prices (err_pct); empty when either file is missing."""
    fs = sorted(p for p in DF.glob(Path(data_dir), EXTEND[1]) if "_env" not in p.name)
    pf = DF.resolve(Path(data_dir) / EXTEND[0])
    if not fs or not pf.is_file():
        return pd.DataFrame()
    m = pd.read_csv(fs[-1])
    m = m[np.isfinite(pd.to_numeric(m["median_us"], errors="coerce"))]
    p = pd.read_csv(pf, dtype={"model_commit": str})
    k = ["part", "model", "dtype", "batch", "q_rows", "prefix"]
    b = p.merge(m[k + ["median_us", "device"]], on=k, how="inner")
    b["err_pct"] = (b["pred_us"] / b["median_us"] - 1.0) * 100.0
    b.attrs["file"] = fs[-1].name
    return b
