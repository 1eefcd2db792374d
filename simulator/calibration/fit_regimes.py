"""Fit and check the kernel model outside the bandwidth regime (issue 15) on measure_regimes.py CSVs.

Every measured row is turned into the Op rows the simulator itself emits for that kernel (decode attention
through `attention: dense` with `kernel: <family>`, GEMMs through simulator.layers, torch.topk through the
topk strategy's dispatch-following ops, the indexer through the DSA strategy's indexer op, the HF step
through simulator.pricing with `kernels: unfused`), priced by hwmodels.roofline under CUDA-graph launches
(`timing=graph` rows: device time + the graph's gap, which is what they measure) and compared with the
measured median.

Fitted per op kind on its fit rows only; WHOLE shape families are held out of every fit and reported:
  decode attention (attn_<family>)  fitted on head configs 32/8, 8/1, 32/32, 1/1; held out: 16/2 and 64/8
                                    (every corner: short contexts, large batch x heads, few heads over long
                                    contexts, the bandwidth-bound middle); verification rows (q_rows 2-16)
                                    fitted on 32/8 and held out on 64/8; fp8-KV rows are never fitted
                                    (the bf16 kernel's terms predict them: same iterations, half the bytes)
  gemm fp8                          fitted on the qkv / gate_up / down shapes; held out: o (4096 x 4096) and
                                    70b_tp8_qkv (8192 x 1280)
  torch.topk                        fitted on rows 1 / 8 / 32 / 512; held out: rows 2 and 128
  indexer                           fitted on 16 and 64 heads; held out: 32 heads
  hf_step                           never fitted: the HF Llama step is priced from the other kinds' terms
Parameters per attention family: memory efficiency, iteration time of one CTA's K/V tile (`iter_us`),
resident CTAs per SM (`cta_slots`), per-wave CTA fixed time (`cta_fixed_us`), per-kernel fixed time;
compute efficiency from the verification rows.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from hwmodels.errors import SparsesimError
from hwmodels.roofline import price
from hwmodels.spec import Efficiency, HardwareSpec
from simulator.calibration import checks as C
from simulator.combo import TargetFacts

#: measured kernel -> dense `kernel` family
KERNEL_FAMILY = {"cudnn": "cudnn", "flash": "fa2", "efficient": "memeff", "triton_splitkv": "triton_splitkv",
                 "flex": "flex"}
HELD_OUT_HEADS = {(16, 2), (64, 8)}
REQUIRED = ("device", "family", "kernel", "timing", "median_us")
NUMERIC = ("batch", "heads", "kv_heads", "head_dim", "context", "q_rows", "m", "n", "k", "rows", "row_len",
           "topk_k", "splits", "n_kernels", "calls")


def load(path: str | Path) -> pd.DataFrame:
    """Read a measure_regimes.py CSV strictly; rows without a time (unavailable kernels, with a note) dropped."""
    df, untimed = C.read_csv(path, REQUIRED, "a measure_regimes.py CSV")
    df = C.numeric(df, NUMERIC)
    for c in ("family", "kernel", "timing", "corner", "dtype", "note"):
        if c in df.columns:
            df[c] = df[c].fillna("").astype(str)
        else:
            df[c] = ""
    df.attrs["file"] = str(path)
    df.attrs["untimed"] = untimed
    return df


class _AttnCombo:
    """The Combo fields dense decode accounting reads, for one bare attention kernel."""

    class _Model:
        mla = None

    def __init__(self, heads: float, kv_heads: float, head_dim: float, kvbytes: float, sms: int):
        self.model = self._Model()
        self.model.head_dim = head_dim
        self.attn_heads_dev, self.attn_kv_heads_dev = heads, kv_heads
        self.attn_dp, self.kvbytes = 1, kvbytes
        self.target = TargetFacts(architecture="hopper", sm_count=sms, l2_bytes=None)


class _Masked:
    def __init__(self, b, mask):
        self.b, self.mask, self.n = b, mask, b.n

    def add(self, *a, where=None, **kw):
        m = self.mask if where is None else (self.mask & np.broadcast_to(np.asarray(where, bool), self.mask.shape))
        self.b.add(*a, where=m, **kw)


def attention_ops(b, df: pd.DataFrame, sel: np.ndarray, family: str | None, sms: int) -> None:
    """Decode / verification attention rows `sel` through `attention: dense` (`kernel: family`, or the
    generic model when family is None), one combo per (heads, kv heads, head dim, kv bytes) group."""
    from simulator.strategies.base import StepShape
    from simulator.strategies.dense import DenseAttention

    if not sel.any():
        return
    kern = DenseAttention(kernel=family or "generic", gqa_packing="decode_only")
    kvb = np.where(df["dtype"].to_numpy() == "fp8", 1.0, 2.0)
    keys = sorted({(h, k, d, kb) for h, k, d, kb, s in zip(df["heads"], df["kv_heads"], df["head_dim"], kvb, sel)
                   if s})
    for h, k, d, kb in keys:
        g = sel & (df["heads"].to_numpy() == h) & (df["kv_heads"].to_numpy() == k) & (df["head_dim"].to_numpy() == d) \
            & (kvb == kb)
        shape = StepShape(batch=np.where(g, df["batch"], 1.0), query_rows=np.where(g, df["q_rows"].fillna(1), 1.0),
                          context=np.where(g, df["context"], 1.0), extra={"layers": 1.0})
        kern.decode_ops(_Masked(b, g), _AttnCombo(float(h), float(k), float(d), float(kb), sms), shape)


def predict_us(ops, hw: HardwareSpec, eff: Efficiency) -> np.ndarray:
    t = price(ops, hw.with_efficiency(eff), "graph")
    return np.bincount(ops.setting, weights=t, minlength=ops.n_settings) * 1e6


def family_rows(df: pd.DataFrame) -> dict[str, np.ndarray]:
    fam, kern, timing = df["family"].to_numpy(), df["kernel"].to_numpy(), df["timing"].to_numpy()
    graph = timing == "graph"
    out = {}
    for k, f in KERNEL_FAMILY.items():
        out[f"decode:{f}"] = graph & (fam == "decode_attn") & (kern == k)
        out[f"verify:{f}"] = graph & (fam == "verify_attn") & (kern == k)
    out["fp8kv:triton_splitkv"] = graph & (fam == "fp8kv_attn") & (kern == "triton_splitkv")
    return out


def held_out(df: pd.DataFrame) -> np.ndarray:
    hk = list(zip(df["heads"].fillna(0).astype(int), df["kv_heads"].fillna(0).astype(int)))
    heads_out = np.array([x in HELD_OUT_HEADS for x in hk])
    fam = df["family"].to_numpy()
    att = np.isin(fam, ["decode_attn", "verify_attn"])
    verify_out = (fam == "verify_attn") & (df["heads"].to_numpy() == 64)
    return (att & heads_out) | verify_out | (fam == "fp8kv_attn")


def hw_for(df: pd.DataFrame, device: str | None) -> HardwareSpec:
    from hwmodels.calibration import DEVICE_SPECS

    name = device or DEVICE_SPECS.get(str(df["device"].iloc[0]))
    if name is None:
        raise SparsesimError(f"measured device {df['device'].iloc[0]!r} has no spec mapping; pass --device NAME",
                             file=df.attrs.get("file"))
    return C.datasheet_spec(name)


