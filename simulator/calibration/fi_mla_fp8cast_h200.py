"""SGLang's flashinfer_mla backend over an fp8 MLA cache on the H200 (family fi_mla_fp8cast, simulator/kernels/
families.py POOL_CAST_FAMILIES): its grid, priced before the call, and the join of the prices to the measurement
(lab/kernels/measure_fi_mla_fp8cast.py; run by lab/kernels/run_fi_mla_fp8cast_device.sh).

The family was read from the engine (sgl-project/sglang#35322's description of flashinfer_mla_backend.py: the layer's
whole pool cast to bf16 every layer of every step, then FlashInfer's MLA wrapper over the copy) and priced from its
parts, each judged before on its own: the cast (op kind cast, the fp8 pool grids of fa3_mla_fp8cast, 7.2 / 7.4 % blind)
and FlashInfer's MLA kernel on the H200 (the H100's terms, the H200 transfer grid: 3.9 / 8.5 %). Nothing is fitted
here. The grid's prices are its FIRST LOOK: pred_us = fi_mla_fp8cast; pred_main_us = what the product priced a user's
`kernel: fi_mla` over an fp8 cache at before the family (FlashInfer's own fp8 MLA kernel, no cast); the controls (cast 0:
the same call over a bf16 pool) price fi_mla over bf16 in both columns.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from simulator.calibration.fa3_sparse_mla_h200 import DATA_DIR, MLA_D, MLA_DV, joined

KEYS = ["batch", "heads", "context", "pool", "cast"]
PREDICTION = "fi_mla_fp8cast_h200_prediction_2026-11-29.csv"
#: (batch, heads, context, pool tokens, cast): DeepSeek-V3's 128 MLA heads at TP1 / DP attention, 64 / 32 / 16 at TP2 /
#: 4 / 8; pools of 131K-2.1M tokens (1.47M: DeepSeek-V3's fp8 pool a device at TP8 on the H200, simulator/memory.py);
#: cast 0 = the controls (a bf16 pool, no cast). Chosen before any fi_mla_fp8cast row was measured
SHAPES = ([(1, 16, 32768, 1048576, 1), (8, 16, 16384, 524288, 1), (32, 16, 4096, 1473200, 1),
           (128, 16, 2048, 786432, 1), (4, 128, 16384, 262144, 1), (16, 64, 8192, 1800000, 1),
           (2, 128, 65536, 131072, 1), (64, 32, 4096, 393216, 1), (1, 128, 8192, 2097152, 1),
           (48, 16, 8192, 600000, 1)]
          + [(8, 16, 16384, 524288, 0), (4, 128, 16384, 262144, 0), (128, 16, 2048, 786432, 0),
             (1, 16, 32768, 1048576, 0)])


def regime(pool, cast) -> np.ndarray:
    """The grid's regimes (declared before its call)."""
    return np.where(np.asarray(cast) == 0, "control: fi_mla over a bf16 pool",
                    np.where(np.asarray(pool) <= 524288, "decode, pool <= 512K tokens", "decode, pool > 512K tokens"))


def price_us(df: pd.DataFrame, hw, family: str) -> np.ndarray:
    """`family`'s price of every row (us a call, the harness's CUDA-graph timing): fi_mla_fp8cast = the pool's cast +
    FlashInfer's MLA call over the bf16 copy; fi_mla = FlashInfer's MLA kernel at the row's cache dtype (fp8 where
    cast 1, bf16 where cast 0). Page size 1 (SGLang's token pool)."""
    from simulator.calibration import fit_production_attention as FP
    from simulator.kernels.families import mla_launches
    from simulator.kernels.production import emit
    from simulator.ops import OpBuilder

    a = {c: df[c].to_numpy(float) for c in KEYS}
    n = len(df)
    kvb = np.where(a["cast"] > 0, 1.0, 2.0)
    b = OpBuilder(n)
    fam = family if family != "fi_mla_fp8cast" else None
    if fam is None:   # the controls (a bf16 pool) price fi_mla over bf16 in every column
        cast = a["cast"] > 0
        ls = mla_launches("fi_mla_fp8cast", a["batch"], np.ones(n), a["context"], a["heads"], MLA_DV, MLA_D, 1.0, 1.0,
                          hw.units, pool_tokens=np.where(cast, a["pool"], 0.0))
        emit(b, ls, hw.units)
    else:
        emit(b, mla_launches(fam, a["batch"], np.ones(n), a["context"], a["heads"], MLA_DV, MLA_D, kvb, 1.0,
                             hw.units), hw.units)
    return FP.predict_us(b.build(), hw, hw.efficiency, n)


def predict(hw) -> pd.DataFrame:
    """The grid priced before its call (module docstring)."""
    t = pd.DataFrame([dict(zip(KEYS, s)) for s in SHAPES])
    t["regime"] = regime(t["pool"], t["cast"])
    t["pred_us"] = price_us(t, hw, "fi_mla_fp8cast")
    t["pred_main_us"] = price_us(t, hw, "fi_mla")
    return t


def _both_kernels(prediction: str, tag: str, keys: list, data_dir: Path, replicate: bool) -> pd.DataFrame | None:
    """A grid's committed prices joined to its newest H200 measurement of both kernels the harness names (the calls
    over an fp8 pool, fi_mla_fp8cast, and over a bf16 one, fi_mla_bf16pool), None before either exists."""
    parts = [joined(prediction, "fi_mla_fp8cast", tag, k, keys, data_dir, replicate)
             for k in ("fi_mla_fp8cast", "fi_mla_bf16pool")]
    parts = [p for p in parts if p is not None and len(p)]
    return pd.concat(parts, ignore_index=True) if parts else None


def measured(tag: str = "grid1", data_dir: Path = DATA_DIR, replicate: bool = False) -> pd.DataFrame | None:
    """The decode grid joined to its measurement (_both_kernels)."""
    return _both_kernels(PREDICTION, tag, KEYS, data_dir, replicate)


# ---------------------------------------------------------------------------------------------------------------------
# the extend over a cached prefix (SGLang's paged branch of forward_extend: the MLA wrapper at causal prompt rows)
# ---------------------------------------------------------------------------------------------------------------------
EXTEND_KEYS = ["batch", "s_q", "context", "heads", "pool", "cast"]
PREDICTION_EXTEND = "fi_mla_extend_h200_prediction_2026-11-29.csv"
#: (batch, s_q new tokens, cached prefix, heads, pool tokens, cast): SGLang's flashinfer_mla extend over a radix-cache
#: hit, the wrapper planned causal at s_q rows a request over prefix + s_q keys; cast 1 over an fp8 pool (the whole
#: pool cast first), cast 0 over a bf16 pool. The product prices the attention of such a chunk by the dense strategy's
#: generic op (no FlashInfer MLA prefill model): this grid is that fallback's first look, not a family's
EXTEND_SHAPES = [(1, 1024, 8192, 16, 524288, 1), (2, 512, 16384, 16, 1048576, 1), (1, 2048, 4096, 128, 262144, 1),
                 (4, 256, 2048, 16, 1473200, 1), (1, 4096, 32768, 16, 786432, 1),
                 (1, 1024, 8192, 16, 524288, 0), (1, 2048, 4096, 128, 262144, 0), (2, 512, 16384, 16, 1048576, 0),
                 (1, 4096, 32768, 16, 786432, 0)]


def extend_us(df: pd.DataFrame, hw) -> np.ndarray:
    """The product's price of one layer's extend (us): DeepSeek-V3 at the row's heads a device (tp = 128 / heads), the
    dense strategy's prefill ops for s_q new tokens after context - s_q cached ones, kernel fi_mla_fp8cast over an fp8
    pool (pinned to the row's pool) or fi_mla over a bf16 one, one layer."""
    from dataclasses import replace as dc_replace

    from simulator.calibration import fit_production_attention as FP
    from simulator.combo import make_combo
    from simulator.ops import OpBuilder
    from simulator.strategies.base import StepShape, parse_axis

    out = np.zeros(len(df))
    for i, r in enumerate(df.itertuples(index=False)):
        kv, kernel = ("fp8", "fi_mla_fp8cast") if r.cast else ("bf16", "fi_mla")
        c = make_combo(hw, "DeepSeek-V3", kv_dtype=kv, tp=int(128 // r.heads), launch="graph", attention="dense",
                       weight_dtype="fp8")
        c = dc_replace(c, attention=parse_axis("attention", [{"dense": {"kernel": kernel, "page_size": 1,
                                                                        "pool_tokens": int(r.pool)}}])[0])
        b = OpBuilder(1)
        shape = StepShape(batch=np.array([float(r.batch)]), query_rows=np.array([float(r.s_q)]),
                          context=np.array([float(r.context)]), phase="prefill", layers=1,
                          kv_prefix=np.array([float(r.context - r.s_q)]))
        c.attention.prefill_ops(b, c, shape)
        out[i] = FP.predict_us(b.build(), hw, hw.efficiency, 1)[0]
    return out


def _extend_frame(shapes) -> pd.DataFrame:
    """An extend grid's rows from its (batch, s_q, prefix, heads, pool, cast) tuples, with their regime."""
    t = pd.DataFrame([{"batch": b, "s_q": p, "context": o + p, "heads": h, "pool": pool, "cast": cast, "prefix": o}
                      for b, p, o, h, pool, cast in shapes])
    t["regime"] = np.where(t["cast"] > 0, "extend over a cached prefix, fp8 pool (cast)",
                           "extend over a cached prefix, bf16 pool")
    return t


#: the extend's models, as each grid priced them: the generic op's expanded MHA form (grid 1's first look), its absorbed
#: form (families.MLA_ABSORBED_EXTEND: grid 2), FlashInfer's causal MLAPlan at the decode fit's stage time (the source's
#: structure alone) and with its fitted stage share (flashinfer.py FI_MLA_EXTEND_STAGE_SHARE: grid 3)
EXTEND_MODELS = ("expanded", "absorbed", "structure", "causal")


def extend_model_us(df: pd.DataFrame, hw, model: str) -> np.ndarray:
    """extend_us under one of EXTEND_MODELS (the module switches set for the call, restored after)."""
    from simulator.kernels import families as FAM
    from simulator.kernels import flashinfer as FI

    if model not in EXTEND_MODELS:
        raise ValueError(f"unknown extend model {model!r}: one of {EXTEND_MODELS}")
    before = FAM.MLA_ABSORBED_EXTEND, FAM.FI_MLA_CAUSAL_EXTEND, FI.FI_MLA_EXTEND_STAGE_SHARE
    try:
        FAM.FI_MLA_CAUSAL_EXTEND = model in ("structure", "causal")
        if model == "expanded":
            FAM.MLA_ABSORBED_EXTEND = ()
        if model == "structure":
            FI.FI_MLA_EXTEND_STAGE_SHARE = 1.0
        return extend_us(df, hw)
    finally:
        FAM.MLA_ABSORBED_EXTEND, FAM.FI_MLA_CAUSAL_EXTEND, FI.FI_MLA_EXTEND_STAGE_SHARE = before


def predict_extend(hw) -> pd.DataFrame:
    """The extend grid priced before its call (EXTEND_SHAPES' comment): pred_us = the product as committed then (the
    generic op's expanded form)."""
    t = _extend_frame(EXTEND_SHAPES)
    t["pred_us"] = extend_model_us(t, hw, "expanded")
    return t


def measured_extend(tag: str = "extend1", data_dir: Path = DATA_DIR, replicate: bool = False) -> pd.DataFrame | None:
    """The extend grid joined to its measurement (_both_kernels)."""
    return _both_kernels(PREDICTION_EXTEND, tag, EXTEND_KEYS, data_dir, replicate)


#: extend grid 2 (blind): new shapes, priced by the absorbed extend (families.MLA_ABSORBED_EXTEND, built after grid 1:
#: looked-at there) and by main's generic op (the expanded MHA form). Declared before the call: the absorbed form ships
#: if it meets more of the grid's two regimes than main; the grid holds the STANDING of these rows
EXTEND_SHAPES2 = [(1, 512, 4096, 16, 393216, 0), (1, 8192, 8192, 16, 1048576, 0), (2, 2048, 16384, 32, 524288, 0),
                  (1, 1024, 65536, 64, 262144, 0), (3, 768, 6144, 128, 131072, 0),
                  (1, 3072, 24576, 16, 600000, 1), (2, 1024, 2048, 64, 900000, 1), (1, 6144, 12288, 32, 1200000, 1),
                  (1, 512, 49152, 128, 200000, 1)]
PREDICTION_EXTEND2 = "fi_mla_extend_h200_grid2_prediction_2026-11-29.csv"


def predict_extend2(hw) -> pd.DataFrame:
    """Extend grid 2 priced before its call: pred_us = the absorbed extend (the code as committed), pred_main_us = the
    generic op's expanded MHA form (MLA_ABSORBED_EXTEND emptied: the product before)."""
    t = _extend_frame(EXTEND_SHAPES2)
    t["pred_us"] = extend_model_us(t, hw, "absorbed")
    t["pred_main_us"] = extend_model_us(t, hw, "expanded")
    return t


def measured_extend2(data_dir: Path = DATA_DIR, replicate: bool = False) -> pd.DataFrame | None:
    """Extend grid 2 joined to its measurement (_both_kernels)."""
    return _both_kernels(PREDICTION_EXTEND2, "extend2", EXTEND_KEYS, data_dir, replicate)


#: extend grid 3 (blind): new shapes (short extends over short and long prefixes, batch 1-8, 16-128 heads), priced by
#: FlashInfer's causal MLAPlan (simulator/kernels/flashinfer.py fi_mla_extend, its stage share FITTED on extend grids 1
#: and 2), beside the same plan with the decode terms alone (the source's structure, share 1.0) and main's absorbed
#: generic op (families.FI_MLA_CAUSAL_EXTEND off). Declared before the call: the causal plan ships if it meets more of
#: the grid's two regimes than main's, or as many with a lower pooled median |error|
EXTEND_SHAPES3 = [(1, 256, 2048, 16, 262144, 0), (1, 128, 16384, 16, 262144, 0), (4, 256, 1024, 32, 300000, 0),
                  (1, 768, 3072, 64, 200000, 0), (8, 128, 4096, 16, 400000, 0), (1, 2048, 2048, 16, 150000, 0),
                  (2, 4096, 8192, 16, 500000, 0), (1, 256, 32768, 128, 100000, 0), (8, 512, 2048, 32, 300000, 0),
                  (1, 1536, 12288, 32, 700000, 1), (4, 512, 8192, 16, 500000, 1), (1, 256, 1024, 64, 131072, 1),
                  (2, 128, 65536, 16, 262144, 1), (1, 4096, 4096, 128, 120000, 1)]
PREDICTION_EXTEND3 = "fi_mla_extend_h200_grid3_prediction_2026-11-29.csv"


def predict_extend3(hw) -> pd.DataFrame:
    """Extend grid 3 priced before its call: pred_us = the causal plan (the code as committed), pred_struct_us = the
    same plan at the decode fit's stage time (FI_MLA_EXTEND_STAGE_SHARE 1.0), pred_main_us = the absorbed generic op
    (families.FI_MLA_CAUSAL_EXTEND off: the product before)."""
    t = _extend_frame(EXTEND_SHAPES3)
    t["pred_us"] = extend_model_us(t, hw, "causal")
    t["pred_struct_us"] = extend_model_us(t, hw, "structure")
    t["pred_main_us"] = extend_model_us(t, hw, "absorbed")
    return t


def measured_extend3(data_dir: Path = DATA_DIR, replicate: bool = False) -> pd.DataFrame | None:
    """Extend grid 3 joined to its measurement (_both_kernels)."""
    return _both_kernels(PREDICTION_EXTEND3, "extend3", EXTEND_KEYS, data_dir, replicate)


# ---------------------------------------------------------------------------------------------------------------------
# FlashInfer's MLA decode where the plan's pieces straddle the clusters (bf16 pool: the harness's control path)
# ---------------------------------------------------------------------------------------------------------------------
#: (batch, heads, context, pool tokens, cast 0): 16 heads (DeepSeek-V3 at TP8), batches whose MLAPlan cuts the requests
#: into just fewer or just more pieces than the 132 clusters (simulator/kernels/flashinfer.py fi_mla_plan: at 8K, 44
#: requests make 132 pieces, one a cluster; 48 make 144, so 12 clusters walk two): the model prices 48 x 8K (197 us)
#: above 64 x 8K (159 us). Chosen from those prices, before any of these calls was measured
BOUNDARY_SHAPES = ([(b, 16, 8192, 600000, 0) for b in (16, 24, 32, 36, 40, 44, 48, 56, 64, 96)]
                   + [(48, 16, t, 600000, 0) for t in (2048, 4096, 6144, 12288)])
PREDICTION_BOUNDARY = "fi_mla_boundary_h200_prediction_2026-11-29.csv"


def predict_boundary(hw) -> pd.DataFrame:
    """The boundary grid priced before its call: pred_us = fi_mla over a bf16 pool as committed (the model's plan, the
    H100's terms on the H200), with the plan's pieces and the busiest cluster's items beside it."""
    from simulator.kernels import flashinfer as FI

    t = pd.DataFrame(BOUNDARY_SHAPES, columns=KEYS)
    t["regime"] = "decode, the plan's pieces straddling the clusters (bf16 pool)"
    t["pred_us"] = price_us(t, hw, "fi_mla")
    pl = FI.fi_mla_plan(t["batch"].to_numpy(float), 1.0, t["context"].to_numpy(float), t["heads"].to_numpy(float),
                        hw.units)
    t["pieces"], t["busiest_items"] = pl["pieces"], pl["items"]
    return t


def measured_boundary(data_dir: Path = DATA_DIR, replicate: bool = False) -> pd.DataFrame | None:
    """The boundary grid joined to its measurement (_both_kernels)."""
    return _both_kernels(PREDICTION_BOUNDARY, "boundary", KEYS, data_dir, replicate)
