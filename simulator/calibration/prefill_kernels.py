"""Prefill rows of the production attention kernels (lab/kernels/measure_prefill_kernels.py: FlashAttention-3's hopper/
binary and FlashInfer's FA2 paged prefill, causal, B requests of P new tokens after O cached ones) priced by the model.

  product_us   what the product charges for a prefill chunk today, whatever kernel the user picks: the dense
               strategy's one 'attention' op (simulator/strategies/dense.py layout_prefill_ops; compute.attention
               fitted on cuDNN's prefill, simulator/calibration/fit_prefill.py)
  family_us    the family's own launches (simulator.kernels.fa3.fa3 / simulator.kernels.flashinfer.fi_tc with an eager
               plan), causal=False: as written for decode / verification (every query tile walks every key);
               causal=True: each query tile's keys bounded by its diagonal (production.causal_tile_blocks)

Every price is the in-graph device time the timing harness measures (fit_production_attention.predict_us) on the
H100-SXM's fitted file.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from hwmodels.spec import HardwareSpec, load_hardware
from simulator.calibration import fit_production_attention as FP
from simulator.combo import AttentionLayout, TargetFacts
from simulator.kernels import fa3 as FA3
from simulator.kernels import flashinfer as FI
from simulator.kernels.production import emit
from simulator.ops import MaskedBuilder, OpBuilder
from simulator.strategies.base import StepShape
from simulator.strategies.dense import DenseAttention

DEVICE = "H100-SXM"


def _hw(hw: HardwareSpec | None) -> HardwareSpec:
    return hw if hw is not None else load_hardware(DEVICE)


def _kvb(df: pd.DataFrame) -> np.ndarray:
    return np.where(df["dtype"].astype(str).isin(["fp8", "e4m3"]).to_numpy(), 1.0, 2.0)


def product_us(df: pd.DataFrame, hw: HardwareSpec | None = None, mla=None) -> np.ndarray:
    """The dense strategy's prefill op for each row (B prompts, P = q_rows new tokens after `prefix` cached ones); `mla`:
    the model's MLA dimensions (simulator.model.MLA) for MLA rows (lab/kernels/predict_mla_prefill.py), None = GQA."""
    hw = _hw(hw)
    b = OpBuilder(len(df))
    kvb = _kvb(df)
    kern = DenseAttention()
    for (h, kv, d, kb), g in df.assign(kvb=kvb).groupby(["heads", "kv_heads", "head_dim", "kvb"]):
        mask = np.zeros(len(df), bool)
        mask[g.index.to_numpy()] = True
        ones = np.ones(len(df))
        shape = StepShape(batch=np.where(mask, df["batch"], 1.0).astype(float), query_rows=ones,
                          context=np.where(mask, df["context"], 1.0).astype(float), phase="prefill", layers=1.0,
                          kv_prefix=np.where(mask, df["prefix"], 0.0).astype(float))
        lay = AttentionLayout.one_device(int(h), int(kv), int(d), float(kb), TargetFacts("hopper", 0, None))
        if mla is not None:
            lay = replace(lay, mla=mla)
        kern.layout_prefill_ops(MaskedBuilder(b, mask), lay, shape)
    return FP.predict_us(b.build(), hw, hw.efficiency, len(df))


def family_launches(df: pd.DataFrame, sms: int, smem_per_sm: float, causal: bool):
    """(fa3 rows' launches, FlashInfer rows' launches) of every row, each masked to its family."""
    a = {c: df[c].to_numpy(float) for c in ("batch", "q_rows", "context", "heads", "kv_heads", "head_dim",
                                            "page_size")}
    kvb = _kvb(df)
    fam = df["family"].astype(str).to_numpy()
    args = (a["batch"], a["q_rows"], a["context"], a["heads"], a["kv_heads"], a["head_dim"], kvb, a["page_size"])
    cz = np.full(len(df), bool(causal))
    fa, _ = FA3.fa3(*args, sms, causal=cz)
    fi, _ = FI.fi_tc(*args, sms, smem_per_sm, cuda_graph=False, causal=cz)
    return [(fam == "fa3_prefill", fa), (fam == "fi_prefill", fi)]


def family_us(df: pd.DataFrame, causal: bool, hw: HardwareSpec | None = None) -> np.ndarray:
    """Each row priced by its family's launches (module docstring)."""
    hw = _hw(hw)
    sms = int(hw.units)
    smem = float(hw.smem_per_unit_bytes or 233472)
    b = OpBuilder(len(df))
    for sel, launches in family_launches(df, sms, smem, causal):
        if sel.any():
            emit(MaskedBuilder(b, sel), launches, sms)
    return FP.predict_us(b.build(), hw, hw.efficiency, len(df))


def engine_fi_us(df: pd.DataFrame, interpolated: bool = True, hw: HardwareSpec | None = None) -> np.ndarray:
    """Each FlashInfer FA2 prefill row (family fi_prefill) priced as the engine prices a chunk through that kernel
    (simulator/kernels/families.py fi_prefill_launches('fa2')): interpolated = the cached prefix counted continuously
    between the plan's exact prices at its key-tile steps (families.fa2_prefix_interpolated, the product's form);
    False = the exact plan at the row's own prefix (family_us with the causal bound). Other rows: NaN."""
    from simulator.kernels import families as FAM

    hw = _hw(hw)
    sms = int(hw.units)
    smem = float(hw.smem_per_unit_bytes or 233472)
    a = {c: df[c].to_numpy(float) for c in ("batch", "q_rows", "context", "heads", "kv_heads", "head_dim",
                                            "page_size")}
    sel = df["family"].astype(str).to_numpy() == "fi_prefill"
    out = np.full(len(df), np.nan)
    if not sel.any():
        return out
    b = OpBuilder(len(df))
    keep = FAM.FA2_PREFIX_INTERPOLATED
    try:
        FAM.FA2_PREFIX_INTERPOLATED = bool(interpolated)
        for d in np.unique(a["head_dim"][sel]):
            for pg in np.unique(a["page_size"][sel]):
                m = sel & (a["head_dim"] == d) & (a["page_size"] == pg)
                if not m.any():
                    continue
                ls = FAM.fi_prefill_launches("fa2", a["batch"], a["q_rows"], a["context"], a["heads"], a["kv_heads"],
                                             float(d), _kvb(df), float(pg), sms, smem, architecture=hw.architecture)
                emit(MaskedBuilder(b, m), ls, sms)
    finally:
        FAM.FA2_PREFIX_INTERPOLATED = keep
    out[sel] = FP.predict_us(b.build(), hw, hw.efficiency, len(df))[sel]
    return out
