"""Fit and judge the production attention families (simulator/kernels: FlashInfer, SGLang's Triton kernel, FlashMLA)
on lab/kernels/measure_production_attention.py CSVs, and price them from their sources alone (the first look).

Every measured row becomes the launches its family module returns (simulator.kernels.production.Launch: the
kernel's CTAs and waves from the plan rules of the source, each CTA's serial K/V tiles, the dependent loads before its
first tile, the merge kernel), priced by hwmodels.roofline under CUDA-graph launches, compared with the measured
median. Resident CTAs per SM come from the measured launch profile (registers, threads, shared memory of each kernel:
the `..._grids` CSV beside the data) where one exists, else from the source's threads and shared memory with assumed
registers (the family module's constants).

Held out BY REGIME, per family and KV dtype: the fit uses only the middle regime (1024 <= context <= 16384 tokens and
batch <= 64, page size 16 for the paged families, one query row; verification rows fit on the same contexts at q = 4);
every other row is held out: short contexts (<= 256) at every batch, long contexts (>= 65536), large batches (>= 256),
other page sizes, q = 8 (the MLA families also fit their mla_fit2 rows, MLA_FIT_GLOB: batch 160-480 at context
1152-3840, several requests per FlashMLA part and items per FlashInfer MLA cluster, which identify the per-request and
per-item terms), other head counts (Llama-3.1-70B's 64 / 8 and Qwen's 28 / 4 are never fitted: the terms fitted
on Llama-3.1-8B's 32 / 8 price them). Parameters per kind: memory efficiency (>= 0.5), iteration time of one K/V tile,
per-kernel fixed time (at most FIXED_US_MAX), a per-wave CTA time for the kernels whose source ends a CTA in a cross-warp
merge (EPILOGUE_KINDS), compute efficiency; NOT fitted: the latency of each dependent load of a CTA's prologue
(sync_us = the device's measured DRAM latency, latency.dram_us): the per-sequence term is the source's load count x
that latency, not a free per-sequence constant.

First look (`borrowed`): the kinds' terms copied from the closest family of the existing H100 fit (FlashAttention-2
split-KV, kind attn_fa2, and its combine kernel), sync_us = the measured DRAM latency, resident CTAs from the source.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from hwmodels import datafiles as DF
from hwmodels.roofline import CHAIN_TENSOR, KIND_CODE, price
from hwmodels.spec import Efficiency, HardwareSpec
from simulator.calibration.fit import efficiency_with
from simulator.kernels import fa3 as FA3
from simulator.kernels import flashinfer as FI
from simulator.kernels import flashmla as FM
from simulator.kernels import triton_engines as TE
from simulator.kernels import xqa as XQ
from simulator.kernels.production import emit
from simulator.ops import MaskedBuilder, OpBuilder

#: the campaign's CSVs, the first look and the launch profiles (hwmodels/calibration/data/production_attention/)
DATA_DIR = Path(__file__).resolve().parents[2] / "hwmodels" / "calibration" / "data" / "production_attention"
DATA_GLOB = "production_attention_nvidia*.csv"
#: measured family -> (op kinds it fits, the family whose fitted terms a never-measured one borrows)
FAMILY_KINDS = {
    "fi_decode": ("attn_fi_decode", "attn_fi_decode_fp8kv", "attn_combine_fi"),
    "fi_tc": ("attn_fi_prefill", "attn_fi_prefill_fp8kv", "attn_combine_fi"),
    "fi_verify": ("attn_fi_prefill", "attn_fi_prefill_fp8kv", "attn_combine_fi"),
    "fi_mla": ("attn_fi_mla",),
    "flashmla": ("attn_flashmla", "attn_combine_flashmla"),
    "sgl_triton": ("attn_triton_sgl", "attn_triton_sgl_fp8kv", "attn_combine_triton_sgl"),
}
#: kinds never measured here -> the measured kind whose fitted terms they borrow (simulator/kernels/data/
#: attention_families.yaml says why)
BORROWED = {"attn_fa3": "attn_fi_prefill", "attn_fa4": "attn_fi_prefill", "attn_combine_fa3": "attn_combine_fi",
            "attn_xqa": "attn_fi_decode", "attn_xqa_fp8kv": "attn_fi_decode_fp8kv", "attn_triton_vllm": "attn_triton_sgl",
            "attn_triton_vllm_fp8kv": "attn_triton_sgl_fp8kv", "attn_combine_triton_vllm": "attn_combine_triton_sgl"}
#: first look: each new kind borrows the terms of this kind of the existing H100 fit
FIRST_LOOK_FROM = {"attn_fi_decode": "attn_fa2", "attn_fi_decode_fp8kv": "attn_fa2", "attn_fi_prefill": "attn_fa2",
                   "attn_fi_prefill_fp8kv": "attn_fa2", "attn_combine_fi": "attn_combine_fa2"}
NUMERIC = ("heads", "kv_heads", "head_dim", "head_dim_v", "batch", "q_rows", "context", "page_size", "median_us")


def load(path) -> pd.DataFrame:
    """A campaign CSV: timed rows only (failed rows dropped, their count in attrs['failed'])."""
    df = pd.read_csv(path)
    for c in NUMERIC:
        if c in df.columns:
            df[c] = pd.to_numeric(df[c], errors="coerce")
    bad = ~np.isfinite(df["median_us"].to_numpy(float))
    out = df[~bad].reset_index(drop=True)
    for c in ("family", "model", "dtype", "note"):
        out[c] = out[c].astype(object).fillna("").astype(str)
    out.attrs["file"] = str(path)
    out.attrs["failed"] = int(bad.sum())
    return out


def _col(df, c, sel, default=1.0):
    return np.where(sel, df[c].fillna(default).to_numpy(float), default)


def build_ops(df: pd.DataFrame, sms: int, smem_per_sm: float, regs: dict | None = None):
    """Op table of every row (one setting per row) as its family module launches it."""
    b = OpBuilder(len(df))
    fam = df["family"].to_numpy()
    kvb_all = np.where(df["dtype"].to_numpy() == "fp8", 1.0, 2.0)
    regs = regs or {}
    for f in ("fi_decode", "fi_tc", "fi_verify", "fi_mla", "flashmla", "sgl_triton", "fa3", "xqa", "triton_vllm"):
        sel = fam == f
        if not sel.any():
            continue
        B, q, T, Hq, Hkv, d, page = (_col(df, c, sel) for c in ("batch", "q_rows", "context", "heads", "kv_heads",
                                                                 "head_dim", "page_size"))
        kvb = np.where(sel, kvb_all, 2.0)
        mb = MaskedBuilder(b, sel)
        if f == "fi_decode":
            launches, _ = FI.fi_decode(B, T, Hq, Hkv, d, kvb, page, sms, smem_per_sm, regs=regs.get("attn_fi_decode"))
        elif f in ("fi_tc", "fi_verify"):
            launches, _ = FI.fi_tc(B, q, T, Hq, Hkv, d, kvb, page, sms, smem_per_sm)
        elif f == "fi_mla":
            launches, _ = FI.fi_mla(B, q, T, Hq, 512.0, 64.0, kvb, page, sms)
        elif f == "flashmla":
            launches, _ = FM.flashmla(B, q, T, Hq, 512.0, 64.0, kvb, sms)
        elif f == "xqa":    # the measured stand-in: FlashInfer's port, its own split rule
            # the SM count the launcher was handed (the stream scan hands it 1: unsplit CTAs), else the device's
            ssms = _col(df, "split_sms", sel, float(sms)) if "split_sms" in df.columns else None
            launches, _ = XQ.xqa(B, q, T, Hq, Hkv, d, kvb, sms, page, split="port", split_sms=ssms)
        elif f == "triton_vllm":   # the harness's K/V copies in the L2 (tv_harness_kv_l2_hit) and its warm
            # metadata (engine=False); rows timed with the L2 flushed before every call (row_role "cold") in the
            # engine's state (engine=True: nothing in the L2); rows whose K/V copies span >= 128 MiB (row_role
            # "kvcold": the metadata and code warm) with no K/V hit
            role = df["row_role"].astype(str).to_numpy() if "row_role" in df.columns else np.full(len(df), "")
            hot = ~np.isin(role, ("cold", "kvcold"))
            launches, _ = TE.triton_vllm(B, q, T, Hq, Hkv, d, kvb, sms, smem_per_sm,
                                         kv_l2_hit=np.where(sel & hot, tv_harness_kv_l2_hit(
                                             B, T, Hkv, d, kvb, _col(df, "calls", sel, np.inf)
                                             if "calls" in df.columns else None), 0.0),
                                         engine=role == "cold")
        elif f == "fa3":    # the measured stand-in: FA4-CuTe's sm_90 forward (page 0: contiguous K/V)
            launches, _ = FA3.fa4cute_sm90(B, q, T, Hq, Hkv, d, kvb, np.where(sel, df["page_size"].fillna(0)
                                                                               .to_numpy(float), 16.0), sms)
        else:
            launches, _ = TE.triton_sgl(B, T, Hq, Hkv, d, kvb, sms, smem_per_sm)
        if HARNESS_KV_L2 and f in HARNESS_KV_L2_FAMILIES:
            hit = np.where(sel & _warm_rows(df), harness_kv_l2_hit(harness_kv_bytes(f, B, T, Hkv, d, kvb, page)), 0.0)
            launches = harness_warm_launches(launches, hit, harness_kv_bytes(f, B, T, Hkv, d, kvb, page))
        emit(mb, launches, sms)
    return b.build()


# ---------------------------------------------------------------------------------------------------------------------
# the timing harness's warm K/V (every family timed by lab/kernels/measure_production_attention.py or
# measure_xqa_attention.py: R = min(16, ceil(128 MiB / K/V bytes)) copies rotated through the CUDA graph)
# ---------------------------------------------------------------------------------------------------------------------
#: whether harness rows of HARNESS_KV_L2_FAMILIES are priced with the share of their K/V the L2 still holds from the
#: previous replay (harness_kv_l2_hit, harness_warm_launches); False = every K/V load from DRAM (the model before).
#: An engine's layer reads its K/V cold (the step's weights and other layers' K/V evict it): the product prices hit 0;
#: only the fit / evaluation of harness rows uses the hit. Rows timed with the cold option (column `mode` == 'cold',
#: lab/kernels/measure_attention_cold.py, or `row_role` == 'cold') pay no hit.
#: OFF (main's model kept): the cold K/V grid (2026-11-27, attention_cold_nvidia-h100-80gb-hbm3_2026-11-27.csv) measured
#: these kernels' warm harness rows only 0-7 % faster than cold ones (cold / warm median at footprint < 25 MB: fi_decode
#: 1.07, fi_verify 1.06, fi_mla 1.02, xqa 1.00), and the rule refitted (True here, commit ca6580b) priced the cold rows
#: worse than main's model in three of four families (fi_decode |error| median / p90 8.7 / 42.6 % vs 7.0 / 16.9 %,
#: fi_mla 7.8 / 12.6 vs 3.5 / 7.5, xqa 6.4 / 15.2 vs 3.2 / 8.7; fi_verify 4.1 / 9.6 vs 5.2 / 8.7): the Triton family's
#: per-tile L2 saving does not carry over to kernels that prefetch their K/V tiles (cp.async / TMA pipelines)
HARNESS_KV_L2 = False
#: the families the rule covers (triton_vllm has its own, tv_harness_kv_l2_hit; fa3 is fitted elsewhere)
HARNESS_KV_L2_FAMILIES = ("fi_decode", "fi_tc", "fi_verify", "fi_mla", "flashmla", "xqa")
#: the share of a DRAM-latency K/V wait an L2 hit saves: 1 - the measured L2 / DRAM latency ratio (the vLLM Triton
#: family's VLLM_KV_L2_HIT_SAVING_SHARE, simulator.kernels.triton_engines)
HARNESS_HIT_SAVING_SHARE = TE.VLLM_KV_L2_HIT_SAVING_SHARE


def _warm_rows(df: pd.DataFrame) -> np.ndarray:
    warm = np.ones(len(df), bool)
    for c in ("mode", "row_role"):
        if c in df.columns:
            warm &= (df[c].astype(str) != "cold").to_numpy()
    return warm


def harness_kv_bytes(fam: str, B, T, Hkv, d, kvb, page):
    """One call's K/V bytes as the harness allocates them: whole pages (MLA: 576 bf16 values per token)."""
    page = np.maximum(np.asarray(page, dtype=np.float64), 1.0)
    tokens = np.asarray(B, dtype=np.float64) * np.ceil(np.asarray(T, dtype=np.float64) / page) * page
    if fam in ("fi_mla", "flashmla"):
        return tokens * 576.0 * 2.0
    return tokens * np.asarray(Hkv, dtype=np.float64) * np.asarray(d, dtype=np.float64) * 2.0 * np.asarray(kvb, dtype=np.float64)


def harness_kv_l2_hit(kv_bytes):
    """The share of a harness row's K/V loads that hit in the L2: the vLLM Triton family's rule
    (tv_harness_kv_l2_hit) on any family's K/V bytes: footprint R x K/V (R = min(16, ceil(128 MiB / K/V))); all hit at
    most half the L2 (25 MB), none at the whole L2 (50 MB) or more, linear between. An ASSUMPTION carried over from the
    Triton family (its looked-at rows); the cold grid (lab/kernels/measure_attention_cold.py) tests it on these
    families."""
    kv = np.asarray(kv_bytes, dtype=np.float64)
    copies = np.clip(np.ceil(TV_HARNESS_COPY_BYTES / np.maximum(kv, 1.0)), 1.0, TV_HARNESS_MAX_COPIES)
    return np.clip((TV_HARNESS_L2_BYTES - copies * kv) / (TV_HARNESS_L2_BYTES / 2.0), 0.0, 1.0)


def harness_warm_launches(launches, hit, kv_bytes):
    """The launches of harness rows whose K/V the L2 holds (share `hit`): the attention launch (every launch but a
    combine kernel) reads hit x the K/V bytes from the L2 instead of HBM (off the bandwidth term), and each of its
    dependent K/V waits (the prologue's first tile and every serial tile iteration, priced as a DRAM-latency chain)
    costs the L2's latency: a share HARNESS_HIT_SAVING_SHARE x hit comes off the prologue's first load and off the
    serial iterations. ASSUMPTION (the Triton family's structure, VLLM_KV_L2_HIT_SAVING_SHARE, applied to kernels whose
    per-tile iteration is fitted): judged on the cold grid."""
    hit = np.asarray(hit, dtype=np.float64)
    if not np.any(hit > 0):
        return launches
    save = HARNESS_HIT_SAVING_SHARE * hit
    out = []
    for ln in launches:
        if ln.kind.startswith("attn_combine"):
            out.append(ln)
            continue
        pro = np.asarray(ln.prologue_loads, dtype=np.float64)
        out.append(replace(ln, bytes_read=np.maximum(np.asarray(ln.bytes_read, dtype=np.float64) - hit * kv_bytes, 0.0),
                           prologue_loads=np.where(pro >= 1.0, pro - save, pro),
                           serial_iters=np.asarray(ln.serial_iters, dtype=np.float64) * (1.0 - save)))
    return out


def predict_us(ops, hw: HardwareSpec, eff: Efficiency, n: int) -> np.ndarray:
    """Microseconds per setting of the measured harness: every op at its in-graph price; the vLLM Triton family's
    launches pay the gap measured between that harness's back-to-back nodes (TV_HARNESS_GAP_US) in place of the
    device's graph node cost (launch_graph)."""
    hw2 = replace(hw.with_efficiency(eff), launch_graph_s=eff.launch_graph_s or hw.launch_graph_s)
    t = price(ops, hw2, "graph")
    if TV_HARNESS_GAP_US is not None:
        tv = np.isin(ops.kind, [KIND_CODE[k] for k in TV_KINDS])
        t = np.where(tv, t - hw2.launch_graph_s + TV_HARNESS_GAP_US * 1e-6, t)
    return np.bincount(ops.setting, weights=t, minlength=n) * 1e6


# ---------------------------------------------------------------------------------------------------------------------
# regimes and the hold-out
# ---------------------------------------------------------------------------------------------------------------------
def context_regime(T):
    T = np.asarray(T, dtype=float)
    return np.where(T <= 256, "short (<=256)", np.where(T >= 65536, "long (>=64K)", "middle"))


def batch_regime(B):
    B = np.asarray(B, dtype=float)
    return np.where(B <= 16, "small (<=16)", np.where(B >= 256, "large (>=256)", "mid (64)"))


#: the MLA kernels' per-request / per-item fit rows (lab/kernels/measure_production_attention.py --grid mla_fit2: the
#: middle regime with several requests per FlashMLA part and items per FlashInfer MLA cluster, batch 160-480 at context
#: 1152-3840, 16 and 128 heads), fitted with the campaign's middle rows of the same families (fit adds them)
MLA_FIT_GLOB = "production_attention_mla_fit2_nvidia*.csv"


def load_mla_fit(data_dir: Path = DATA_DIR) -> pd.DataFrame:
    """The newest mla_fit2 measurement (empty when none)."""
    fs = sorted(p for p in DF.glob(Path(data_dir), MLA_FIT_GLOB) if "_grids_" not in p.name and "_nvidia-smi" not in p.name
                and DF.suffix(p) == ".csv")
    return load(fs[-1]) if fs else pd.DataFrame()


#: the CUDA-core decode kernel's LONE-CTA fit rows: the fi_dec_blind measurement's Llama-3.1-70B-at-TP8 rows (8 query
#: heads, ONE KV head: the launch grid is (padded batch, 1), which the dispatcher spreads one CTA per SM, MEASURED for the
#: flat (1056, 1) grid, simulator/kernels/flashinfer.py FI_PLACEMENT_CSV) at middle contexts (520 and 1800 tokens, batch
#: 1-5, page 16: 5-75 CTAs of 128-token chunks, 16 tiles each, each alone on its SM). They identify the lone CTA's
#: iteration (the chain term, iter_us), which the campaign's fit rows cannot: there the busiest SM's issue and the chain
#: are compounded at 4-9 CTAs per SM, except Llama-3.1-70B at batch 1-4 whose 9-slot kernel's dispatch is not probed.
#: These rows were measured as part of that blind grid and looked at before being made fit rows: the grid's other rows
#: are looked-at for the model fitted on them, and the second decode blind grid (fi_dec_blind2) is its test
FI_LONE_FIT_GLOB = "production_attention_fi_dec_blind_nvidia*.csv"
#: ... and the fp8 K/V kernel's lone-CTA fit rows, measured for that purpose (not looked at before being made fit rows)
#: in the same device call as the third decode blind grid (lab/kernels/measure_production_attention.py --grid
#: fi_dec_blind3): Llama-3.1-70B-TP8 heads (group 8, one KV head) with fp8 K/V at 520 and 1800 tokens, batch 1-5, page
#: 16: 5-75 CTAs of 128-token chunks, each alone on its SM. They identify the fp8 kind's lone iteration, which its
#: campaign fit rows (4-6 CTAs per SM) cannot
FI_LONE_FP8_FIT_GLOB = "production_attention_fi_dec_blind3_nvidia*.csv"


def load_fi_lone_fit(data_dir: Path = DATA_DIR) -> pd.DataFrame:
    """The lone-CTA fit rows of the CUDA-core decode kernel (FI_LONE_FIT_GLOB, FI_LONE_FP8_FIT_GLOB; empty when not
    measured)."""
    parts = []
    for glob in (FI_LONE_FIT_GLOB, FI_LONE_FP8_FIT_GLOB):
        fs = sorted(p for p in DF.glob(Path(data_dir), glob) if "_grids_" not in p.name and DF.suffix(p) == ".csv")
        if fs:
            d = load(fs[-1])
            parts.append(d[_is_fi_lone_fit(d)])
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def _is_fi_lone_fit(df: pd.DataFrame) -> np.ndarray:
    if "script_version" not in df.columns:
        return np.zeros(len(df), bool)
    sv = df["script_version"].astype(str)
    lone = ((df["family"].to_numpy() == "fi_decode") & (df["kv_heads"].to_numpy(float) == 1.0)
            & (df["context"].to_numpy(float) >= 512) & (df["page_size"].to_numpy(float) == 16))
    return lone & (sv.str.endswith("fi_dec_blind").to_numpy()
                   | (sv.str.endswith("fi_dec_blind3").to_numpy() & (df["dtype"].astype(str).to_numpy() == "fp8")))


def _is_mla_fit(df: pd.DataFrame) -> np.ndarray:
    if "script_version" not in df.columns:
        return np.zeros(len(df), bool)
    return df["script_version"].astype(str).str.endswith("mla_fit2").to_numpy()


def fit_rows(df: pd.DataFrame) -> np.ndarray:
    """The middle regime of Llama-3.1-8B's heads (module docstring), the MLA per-request fit rows (MLA_FIT_GLOB) and
    the CUDA-core decode kernel's lone-CTA rows (FI_LONE_FIT_GLOB)."""
    T, B = df["context"].to_numpy(float), df["batch"].to_numpy(float)
    fam, q = df["family"].to_numpy(), df["q_rows"].fillna(1).to_numpy(float)
    page = df["page_size"].fillna(1).to_numpy(float)
    mid = (T >= 1024) & (T <= 16384) & (B <= 64)
    std_page = np.where(np.isin(fam, ["fi_decode", "fi_tc", "fi_verify", "fa3", "xqa"]), page == 16, True)
    heads_fit = np.isin(df["model"].to_numpy(), ["llama8b", "llama70b", "mla16", "mla128"])
    q_fit = np.where(fam == "fi_verify", q == 4, q <= 1)
    return (mid & std_page & heads_fit & q_fit) | _is_mla_fit(df) | _is_fi_lone_fit(df)


def regime_labels(df: pd.DataFrame) -> pd.DataFrame:
    fam = df["family"].to_numpy()
    q = df["q_rows"].fillna(1).to_numpy(float) if "q_rows" in df.columns else np.ones(len(df))
    phase = np.where((fam == "fi_verify") | (np.isin(fam, ["fa3", "xqa", "triton_vllm"]) & (q > 1)), "verify", "decode")
    return pd.DataFrame({"family": fam, "phase": phase, "kv": df["dtype"].to_numpy(),
                         "ctx_regime": context_regime(df["context"]),
                         "batch_regime": batch_regime(df["batch"])})


# ---------------------------------------------------------------------------------------------------------------------
# first look and fit
# ---------------------------------------------------------------------------------------------------------------------
def source_slots(sms: int, smem_per_sm: float) -> dict[str, float]:
    """Resident CTAs per SM of each kind from the family modules' source geometry (typical shapes)."""
    _, info = FI.fi_decode(1.0, 4096.0, 32.0, 8.0, 128.0, 2.0, 16.0, sms, smem_per_sm)
    _, info8 = FI.fi_decode(1.0, 4096.0, 32.0, 8.0, 128.0, 1.0, 16.0, sms, smem_per_sm)
    _, tc = FI.fi_tc(1.0, 1.0, 4096.0, 32.0, 8.0, 128.0, 2.0, 16.0, sms, smem_per_sm)
    merge = FI._merge(np.array([1024.0]), 1.0, 32.0, 128.0, 2.0, sms, smem_per_sm, None)
    _, sgl = TE.triton_sgl(1.0, 4096.0, 32.0, 8.0, 128.0, 2.0, sms, smem_per_sm)
    return {"attn_fi_decode": float(np.ravel(info["slots"])[0]), "attn_fi_decode_fp8kv": float(np.ravel(info8["slots"])[0]),
            "attn_fi_prefill": float(np.ravel(tc["slots"])[0]), "attn_fi_prefill_fp8kv": float(np.ravel(tc["slots"])[0]),
            "attn_combine_fi": float(np.ravel(merge.slots)[0]), "attn_fi_mla": 1.0, "attn_flashmla": 1.0,
            "attn_combine_flashmla": 8.0, "attn_triton_sgl": float(np.ravel(sgl["slots"])[0]),
            "attn_triton_sgl_fp8kv": float(np.ravel(sgl["slots"])[0]),
            "attn_combine_triton_sgl": 16.0}


def borrowed_efficiency(hw: HardwareSpec) -> Efficiency:
    """The first look's terms (module docstring): every FlashInfer kind copies its closest family's fitted terms."""
    eff = hw.efficiency
    up = {}
    for k, src in FIRST_LOOK_FROM.items():
        up[f"memory.{k}"] = eff.memory[src]
        up[f"compute.{k}"] = eff.compute[src]
        up[f"fixed_us.{k}"] = eff.fixed_s.get(src, 0.0) * 1e6
        up[f"iter_us.{k}"] = eff.iter_s.get(src, 0.0) * 1e6
        up[f"cta_fixed_us.{k}"] = eff.cta_fixed_s.get(src, 0.0) * 1e6
        up[f"sync_us.{k}"] = (eff.dram_latency_s or 0.35e-6) * 1e6
    for k, v in source_slots(hw.units, float(hw.smem_per_unit_bytes or 233472)).items():
        if k in FIRST_LOOK_FROM:
            up[f"cta_slots.{k}"] = v
    return efficiency_with(eff, up)


def measured_slots(grids: pd.DataFrame, smem_per_sm: float) -> dict[str, tuple[float, str]]:
    """kind -> (resident CTAs per SM, how) from the launch profile (kernel names -> kinds)."""
    from simulator.calibration.fit_regimes import occupancy

    if grids is None or grids.empty:
        return {}
    name = grids["kernel_name"].astype(str)
    lab = grids["label"].astype(str)
    fp8 = lab.str.contains(":fp8:")
    kinds = np.full(len(grids), "", dtype=object)
    kinds[name.str.contains("BatchDecodeWithPagedKVCacheKernel") & ~fp8] = "attn_fi_decode"
    kinds[name.str.contains("BatchDecodeWithPagedKVCacheKernel") & fp8] = "attn_fi_decode_fp8kv"
    kinds[name.str.contains("BatchPrefillWithPagedKVCacheKernel") & ~fp8] = "attn_fi_prefill"
    kinds[name.str.contains("BatchPrefillWithPagedKVCacheKernel") & fp8] = "attn_fi_prefill_fp8kv"
    kinds[name.str.contains("MergeStates")] = "attn_combine_fi"
    kinds[name.str.contains("_fwd_grouped_kernel_stage1") & ~fp8] = "attn_triton_sgl"
    kinds[name.str.contains("_fwd_grouped_kernel_stage1") & fp8] = "attn_triton_sgl_fp8kv"
    kinds[name.str.contains("_fwd_kernel_stage2")] = "attn_combine_triton_sgl"
    kinds[lab.str.startswith("fi_mla") & name.str.contains("MLA|Mla|mla", regex=True)
          & ~name.str.contains("Merge")] = "attn_fi_mla"
    kinds[lab.str.startswith("flashmla") & name.str.contains("flash_fwd|splitkv|mla", case=False, regex=True)
          & ~name.str.contains("combine", case=False)] = "attn_flashmla"
    kinds[lab.str.startswith("flashmla") & name.str.contains("combine", case=False)] = "attn_combine_flashmla"
    kinds[name.str.contains("FlashAttentionForwardSm90")] = "attn_fa3"
    threads = (pd.to_numeric(grids["block_x"], errors="coerce").fillna(1) * pd.to_numeric(grids["block_y"], errors="coerce")
               .fillna(1) * pd.to_numeric(grids["block_z"], errors="coerce").fillna(1)).to_numpy(float)
    regs = pd.to_numeric(grids["regs"], errors="coerce").fillna(0).to_numpy(float)
    smem = pd.to_numeric(grids["smem"], errors="coerce").fillna(0).to_numpy(float)
    occ = occupancy(regs, smem, threads, smem_per_sm)
    out = {}
    for k in sorted(set(kinds) - {""}):
        m = kinds == k
        vals, counts = np.unique(occ[m], return_counts=True)
        v = float(vals[np.argmax(counts)])
        i = int(np.flatnonzero(m & (occ == v))[0])
        out[k] = (max(v, 1.0), f"{int(m.sum())} launches; {int(regs[i])} registers x {int(threads[i])} threads, "
                               f"{int(smem[i])} B shared memory -> {v:g} per SM")
    return out


#: upper bound of a production kernel's per-kernel fixed time (us): ASSUMPTION from the committed H100 fit, where the
#: decode-attention kernels' fixed_us are 0-3.0 us (attn_fa2 0.0, attn_cudnn 0.0, attn_triton 0.94, attn_triton_fp8kv
#: 3.0) and the combine kernels' 0.4-3.1 us
FIXED_US_MAX = 3.0


#: kinds whose CTA ends in a cross-warp merge of its partial output through shared memory before the store (FA2 prefill
#: kernel: threadblock_sync_mdo_states over 4 KV warps at a 16-row tile, prefill.cuh; the MLA kernels' two-warpgroup
#: epilogue): a per-wave CTA time of their own (cta_fixed_us). The CUDA-core / Triton decode kernels end in one store
#: (decode.cuh sync_state over bdz <= 2 warps; SGLang stage 1): no such term, a CTA's time outside its loop is its
#: prologue's dependent loads
EPILOGUE_KINDS = ("attn_fi_mla", "attn_flashmla")
#: kinds whose per-wave CTA time the fit shapes (1-2 waves) cannot identify and that take it from the closest family
#: of the committed regimes fit instead: FlashInfer's FA2 prefill kernel ends its CTAs as FlashAttention-2's split-KV
#: kernel does (the 4 KV warps' partial outputs merged through shared memory, then the fp32 partial output and its
#: log-sum-exp written: prefill.cuh threadblock_sync_mdo_states / write_o_reg_gmem, FlashAttention-2
#: flash_fwd_kernel.h compute_attn_1rowblock_splitkv), MEASURED there as cta_fixed_us.attn_fa2 per wave. The roofline
#: prices it as the FA2 prefill kernel runs it (hwmodels.roofline.CTA_FIXED_HIDDEN): every wave's epilogue but the last
#: is hidden under the bandwidth-bound body. Fitting it instead on the one-tile many-wave shapes (context 16, batch >=
#: 256, where it would be identifiable) gives 5.8 us, and the one-wave short shapes then miss (fi_tc bf16 short small
#: batch 3.6 -> 14.5 %): one per-wave constant does not serve both, so the borrowed value stays
CTA_FIXED_FROM = {"attn_fi_prefill": "attn_fa2", "attn_fi_prefill_fp8kv": "attn_fa2"}
#: kinds whose HBM efficiency is NOT fitted but taken from another kind of the regimes fit: the CUDA-core decode
#: kernel's fit rows (batch <= 64, one wave) are issue- and latency-bound, so its memory efficiency went to the fit's
#: bound (1.0 bf16, 0.5 fp8) and priced the many-wave large-batch launches, which stream K / V at the device's rate,
#: at whatever the bound gave. FlashAttention-2's split-KV decode kernel (attn_fa2, fitted by the regimes fit on
#: streaming shapes where the rate is identifiable: 0.8534 of the datasheet, 2.86 TB/s) is the same access pattern
#: (every K / V byte once, 16-byte vector loads, several CTAs per SM)
MEMORY_FROM = {"attn_fi_decode": "attn_fa2", "attn_fi_decode_fp8kv": "attn_fa2"}


#: kinds whose per-kernel fixed time (ramp and tail) is NOT fitted but 0 (ASSUMPTION): FlashInfer's decode, prefill and
#: merge kernels. Their fit rows cannot separate a per-kernel constant from the tile chain (every small-batch middle row
#: walks the same 128-token chunks): fitted, it went to the bound FIXED_US_MAX (2.1-3.0 us on the decode and merge
#: kinds once the busiest SM's crowding priced the decode tiles' issue, simulator/kernels/flashinfer.py
#: fi_decode_crowding) and the chains lost what it took. The ramp of a graph node is in the measured gap between
#: graph nodes (launch_graph_us, which every launch pays); FlashAttention-2's decode kernel, fitted by the regimes fit on
#: shapes where the constant is identifiable, came out at 0.0007 us (fixed_us.attn_fa2), though its combine kernel at
#: 3.1 us (attn_combine_fa2). Cost on the fit rows: rms log error fi_decode 0.073 -> 0.077, fp8 0.093 -> 0.100,
#: prefill 0.065 -> 0.064, prefill fp8 0.110 -> 0.110
#: vLLM's Triton 2D / 3D kernels likewise: every fit row with a short chain runs the 3D kernel and reduce_segments
#: together (the 2D fit rows walk 32-512 tiles), so the two kernels' constants are one; fitted on the main kinds it
#: went to 2.1-3.0 us once the prologue's metadata loads were priced as L2 hits, and the 2D kernel, which has no reduce,
#: paid it (2D one-tile rows, LOOKED-AT: +31..+44 %). The constant is fitted on reduce_segments
#: (fixed_us.attn_combine_triton_vllm), as the regimes fit found FlashAttention-2's split-KV decode at ~0 and its combine
#: at 3.1 us
FIXED_ZERO = ("attn_fi_decode", "attn_fi_decode_fp8kv", "attn_fi_prefill", "attn_fi_prefill_fp8kv", "attn_combine_fi")
#: SGLang's Triton decode kernel (sgl_triton; simulator/kernels/triton_engines.py triton_sgl): its stage-1 programs
#: read every K / V byte of their split once, 32 scattered 256-byte token rows per tile (decode_attention.py
#: _fwd_grouped_kernel_stage1, sglang 0.5.6), so a launch of many programs streams K / V as FlashAttention-2's split-KV
#: decode kernel does; its bf16 fit rows (batch <= 64, context 1K-16K, 1-3 waves) are chain-bound but for two and
#: cannot identify the rate: fitted, memory.attn_triton_sgl went to 0.784 (2.63 TB/s) while the launches that do
#: stream (context 32K-70K at batch 48-128, LOOKED-AT rows of the second Triton decode blind grid) draw 2.9-2.96 TB/s.
#: The bf16 kind takes attn_fa2's measured rate (0.8534 of the datasheet, 2.86 TB/s; MEMORY_FROM); the fp8 kind keeps
#: its own fitted rate (its streaming launches run at 1.85 TB/s of fp8 bytes: the in-loop conversion, not HBM, bounds
#: them). With the rate fixed the fit rows cannot identify a per-kernel constant of stage 1 or stage 2 either: fitted,
#: they went to 0.59 / 0.60 us and traded against the chain (the one-tile rows at batch <= 16, LOOKED-AT, +16 %); both
#: are 0 as main's fit had found them (FIXED_ZERO)
SGL_MEMORY_FROM = {"attn_triton_sgl": "attn_fa2"}
SGL_FIXED_ZERO = ("attn_triton_sgl", "attn_triton_sgl_fp8kv", "attn_combine_triton_sgl")
MEMORY_FROM = {**MEMORY_FROM, **SGL_MEMORY_FROM}
FIXED_ZERO = FIXED_ZERO + SGL_FIXED_ZERO
#: the co-resident scan and lone rows of SGLang's Triton kernel (lab/kernels/sgl_triton_fit6.py: FIT rows, named before
#: their measurement): the fit rows of hwmodels.roofline CHAIN_ISSUE_HIDDEN_P (sgl_coresident_p_scan) and of
#: simulator/kernels/triton_engines.py SGL_ITER_BY_G (groups 2, 3, 5, 6)
SGL_FIT6_CSV = "sgl_triton_fit6_nvidia-h100-80gb-hbm3_2026-11-27.csv"
#: the knee exponents sgl_coresident_p_scan tries
SGL_P_GRID = tuple(np.arange(2.0, 10.01, 0.5))


def sgl_coresident_p_scan(df: pd.DataFrame, hw: HardwareSpec, data_dir: Path = DATA_DIR) -> list[tuple[float, float]]:
    """(p, rms log error) of hwmodels.roofline CHAIN_ISSUE_HIDDEN_P's bf16 exponent over SGL_P_GRID, on the bf16 fit
    rows of the family (fit_rows of `df`, the shipped terms) and the bf16 rows of the group-4 binary in SGL_FIT6_CSV
    (the co-resident scan, batch 1-8 x 65536 and 16384, and its lone row): the shipped value is the minimum (4.5 on
    the campaign's fit rows and the sixth campaign's scan, 36 rows; main's form, chain + every program's issue +
    chain_queue x memory, 0.0694 there)."""
    from hwmodels import roofline as RL
    f6 = load(DF.resolve(Path(data_dir) / SGL_FIT6_CSV))
    f6 = f6[(f6["dtype"] == "bf16") & (f6["model"] == "llama8b")]
    fr = df[fit_rows(df) & (df["family"] == "sgl_triton") & (df["dtype"] == "bf16")]
    rows = pd.concat([fr, f6], ignore_index=True)
    smem = float(hw.smem_per_unit_bytes or 233472)
    ops = build_ops(rows, hw.units, smem)
    meas = rows["median_us"].to_numpy(float)
    code = RL.KIND_CODE["attn_triton_sgl"]
    saved = dict(RL.CHAIN_ISSUE_HIDDEN_P)
    out = []
    try:
        for p_ in SGL_P_GRID:
            RL.CHAIN_ISSUE_HIDDEN_P[code] = float(p_)
            e = np.log(predict_us(ops, hw, hw.efficiency, len(rows)) / meas)
            out.append((float(p_), float(np.sqrt(np.mean(e ** 2)))))
    finally:
        RL.CHAIN_ISSUE_HIDDEN_P.clear()
        RL.CHAIN_ISSUE_HIDDEN_P.update(saved)
    return out
#: kinds with a fitted per-CTA time that co-resident CTAs do not overlap (cta_serial_us: hwmodels.roofline prices
#: ceil(CTAs / SMs) x it, so a CTA sharing its SM pays it twice per wave, a lone CTA once): FlashInfer's FA2 prefill
#: kernel with fp8 K/V, whose fit rows run 1 to 4 CTAs per SM (batch 1-16 split into 64-512 CTAs, batch 64 at 512 and
#: more); the bf16 kind's fit rows cannot identify it (fitted, it goes to 0 while the one-tile many-wave shapes stay
#: 15 % too fast) and it takes the fp8 kind's value (CTA_SERIAL_FROM)
SERIAL_KINDS = ("attn_fi_prefill_fp8kv",)
#: kinds whose cta_serial_us is the one fitted for another kind of the same kernel: the FA2 prefill kernel's CTA outside
#: its K/V loop (prefill.cuh BatchPrefillWithPagedKVCacheKernel: block_valid_mask, request / tile indices, the kv length,
#: Q to shared memory, the page offsets; after the loop threadblock_sync_mdo_states, transform_output, write_o_reg_gmem
#: and the log-sum-exp) is the same code for bf16 and fp8 K/V: only the loop's fragment loads differ
CTA_SERIAL_FROM = {"attn_fi_prefill": "attn_fi_prefill_fp8kv"}


#: kinds whose per-step chain time is NOT fitted but the device's MEASURED DRAM latency (the fit's sync_us): FlashInfer's
#: FA2 prefill kernel with bf16 K/V, whose chain is counted in dependent-load units (simulator/kernels/flashinfer.py
#: FI_TC_BF16_TILE_WAITS, fi_tc_bf16_steps). Fitted as a free step per tile it went to its lower bound (0.005 us): on the
#: fit rows (middle contexts, B <= 64) a CTA's tiles are under the bandwidth-bound body
TILE_WAIT_KINDS = ("attn_fi_prefill",)


def _params(kind: str, dram_us: float, tensor: bool) -> list[tuple]:
    # fixed_us (a kernel's ramp and tail) is bounded by FIXED_US_MAX: at the fit shapes a free per-kernel constant
    # trades against the tile chain (every small-batch middle row walks the same 16-tile chunks); FIXED_ZERO kinds
    # have none
    p = [] if kind in MEMORY_FROM else [(f"memory.{kind}", 0.85, 0.5, 1.0)]
    if not (kind in TILE_WAIT_KINDS and FI.FI_TC_BF16_TILE_WAITS):
        p.append((f"iter_us.{kind}", 0.3, 0.005, 20.0))
    if kind not in FIXED_ZERO:
        p.append((f"fixed_us.{kind}", 1.0, 0.0, FIXED_US_MAX))
    if kind in EPILOGUE_KINDS:
        p.append((f"cta_fixed_us.{kind}", 0.5, 0.0, 20.0))
    if kind in SERIAL_KINDS:
        p.append((f"cta_serial_us.{kind}", 0.5, 0.0, 10.0))
    if tensor:
        p.append((f"compute.{kind}", 0.3, 0.02, 1.0))
    return p


#: kinds without a compute term (hwmodels.roofline CHAIN_TENSOR: their tensor work is on the per-stage chain)
CHAIN_TENSOR_KINDS = tuple(k for k, c in KIND_CODE.items() if c in CHAIN_TENSOR)


#: fit groups, in order: (name, families whose fit rows it uses, kinds' parameters, combine kind fitted with it)
FIT_GROUPS = (("fi_decode", ("fi_decode",), ("attn_fi_decode",), "attn_combine_fi"),
              ("fi_decode_fp8kv", ("fi_decode",), ("attn_fi_decode_fp8kv",), None),
              ("fi_prefill_fp8kv", ("fi_tc", "fi_verify"), ("attn_fi_prefill_fp8kv",), None),
              ("fi_prefill", ("fi_tc", "fi_verify"), ("attn_fi_prefill",), None),
              ("fi_mla", ("fi_mla",), ("attn_fi_mla",), None),
              ("flashmla", ("flashmla",), ("attn_flashmla",), "attn_combine_flashmla"),
              ("triton_sgl", ("sgl_triton",), ("attn_triton_sgl",), "attn_combine_triton_sgl"),
              ("triton_sgl_fp8kv", ("sgl_triton",), ("attn_triton_sgl_fp8kv",), None))


#: further starting points of a group's least squares (group: ((dotted term, start), ...)): the fi_mla group's
#: rms log error has two basins in its per-stage time (iter_us ~0.5 us with the per-item terms large, ~2.3 us with them
#: small); from the default start 0.3 us it can end in the worse one when a per-item term is added
#: (FI_MLA_FILL_RATE_SM). Both starts are solved and the smaller rms log error is kept
EXTRA_STARTS = {"fi_mla": (("iter_us.attn_fi_mla", 2.0),)}


#: the fits run without hwmodels.roofline CHAIN_ISSUE_HIDDEN_P (SGLang's Triton kernel's co-resident knee): the knee's
#: exponent was fitted on its own named rows (sgl_coresident_p_scan) with every other term as committed, and the sixth
#: sgl_triton blind grid priced that model, so `--write` reproduces the shipped terms only with the knee held off
SGL_FIT_WITHOUT_KNEE = True


def fit(df: pd.DataFrame, hw: HardwareSpec, grids: pd.DataFrame | None = None, fa3: pd.DataFrame | None = None,
        fa3_grids: pd.DataFrame | None = None, xqa: pd.DataFrame | None = None,
        xqa_grids: pd.DataFrame | None = None, tv: pd.DataFrame | None = None,
        tv_grids: pd.DataFrame | None = None) -> tuple[Efficiency, dict]:
    """_fit_groups with SGLang's co-resident knee held off (SGL_FIT_WITHOUT_KNEE)."""
    from hwmodels import roofline as RL

    keep = dict(RL.CHAIN_ISSUE_HIDDEN_P)
    if SGL_FIT_WITHOUT_KNEE:
        RL.CHAIN_ISSUE_HIDDEN_P.clear()
    try:
        return _fit_groups(df, hw, grids, fa3, fa3_grids, xqa, xqa_grids, tv, tv_grids)
    finally:
        RL.CHAIN_ISSUE_HIDDEN_P.clear()
        RL.CHAIN_ISSUE_HIDDEN_P.update(keep)


def _fit_groups(df: pd.DataFrame, hw: HardwareSpec, grids: pd.DataFrame | None = None,
                fa3: pd.DataFrame | None = None, fa3_grids: pd.DataFrame | None = None,
                xqa: pd.DataFrame | None = None, xqa_grids: pd.DataFrame | None = None,
                tv: pd.DataFrame | None = None, tv_grids: pd.DataFrame | None = None) -> tuple[Efficiency, dict]:
    """Fit every group on its fit rows (least squares on log(predicted / measured)); kinds without fit rows keep
    the first look's borrowed terms; with the fa3 measurement (load_fa3) attn_fa3 is fitted on its own rows
    (fit_fa3) and attn_fa4 borrows it. Returns the Efficiency and metadata (rows, parameters, rms log error)."""
    smem = float(hw.smem_per_unit_bytes or 233472)
    eff = borrowed_efficiency(hw)
    meta: dict = {"measured": {}}
    slots = measured_slots(grids, smem)
    up = {f"cta_slots.{k}": v for k, v in source_slots(hw.units, smem).items()}
    for k, (v, how) in slots.items():
        up[f"cta_slots.{k}"] = v
        meta["measured"][f"cta_slots.{k}"] = how
    for k in ("attn_fi_decode", "attn_fi_decode_fp8kv", "attn_triton_sgl", "attn_triton_sgl_fp8kv"):
        up[f"cta_fixed_us.{k}"] = 0.0
    for k in FIXED_ZERO:
        up[f"fixed_us.{k}"] = 0.0
        meta["measured"][f"fixed_us.{k}"] = "0 (FIXED_ZERO: not identifiable on the fit rows; ASSUMPTION)"
    for k, src in CTA_FIXED_FROM.items():
        up[f"cta_fixed_us.{k}"] = hw.efficiency.cta_fixed_s.get(src, 0.0) * 1e6
        meta["measured"][f"cta_fixed_us.{k}"] = f"cta_fixed_us.{src} of the regimes fit (CTA_FIXED_FROM)"
    for k, src in MEMORY_FROM.items():
        up[f"memory.{k}"] = hw.efficiency.memory[src]
        meta["measured"][f"memory.{k}"] = f"memory.{src} of the regimes fit (MEMORY_FROM)"
    # the prologue's dependent loads: one measured DRAM round trip each (not fitted: the per-sequence cost is the
    # source's load count x the device's pointer-chase latency, hwmodels/calibration/fitted latency.dram_us)
    dram_us = (hw.efficiency.dram_latency_s or 0.35e-6) * 1e6
    for k in own_kinds():
        up[f"sync_us.{k}"] = dram_us
    if FI.FI_TC_BF16_TILE_WAITS:   # the bf16 prefill kind's chain in dependent-load units (TILE_WAIT_KINDS)
        for k in TILE_WAIT_KINDS:
            up[f"iter_us.{k}"] = dram_us
            meta["measured"][f"iter_us.{k}"] = "the device's measured DRAM latency (TILE_WAIT_KINDS)"
    # combine kinds: their per-split load starts at the L2 latency (they read partial outputs just written)
    l2 = (hw.efficiency.l2_latency_s or 0.143e-6) * 1e6
    for k in ("attn_combine_fi", "attn_combine_flashmla", "attn_combine_triton_sgl"):
        up[f"iter_us.{k}"] = l2
        up[f"memory.{k}"] = 0.8
        up[f"sync_us.{k}"] = (hw.efficiency.dram_latency_s or 0.35e-6) * 1e6
    eff = efficiency_with(eff, up)
    # the MLA families also fit their per-request / per-item rows (MLA_FIT_GLOB)
    mla = load_mla_fit()
    if len(mla) and df["family"].isin(["fi_mla", "flashmla"]).any() and not _is_mla_fit(df).any():
        mla = mla[mla["family"].isin(df["family"].unique())]
        df = pd.concat([df, mla], ignore_index=True)
        meta["mla_fit_rows"] = int(len(mla))
    lone = load_fi_lone_fit()   # the CUDA-core decode kernel's lone-CTA rows (FI_LONE_FIT_GLOB)
    if len(lone) and (df["family"] == "fi_decode").any() and not _is_fi_lone_fit(df).any():
        df = pd.concat([df, lone], ignore_index=True)
        meta["fi_lone_fit_rows"] = int(len(lone))
    ops = build_ops(df, hw.units, smem)
    meas = df["median_us"].to_numpy(float)
    has = np.bincount(ops.setting, minlength=len(df)) > 0
    base = fit_rows(df) & has
    fp8 = df["dtype"].to_numpy() == "fp8"
    fam = df["family"].to_numpy()
    dram = (hw.efficiency.dram_latency_s or 0.35e-6) * 1e6
    for name, fams, kinds, comb in FIT_GROUPS:
        borrow = {f"cta_serial_us.{k}": eff.cta_serial_s.get(src, 0.0) * 1e6 for k, src in CTA_SERIAL_FROM.items()
                  if k in kinds}
        if borrow:   # CTA_SERIAL_FROM: the same kernel's fitted serial CTA time, before this group's fit
            eff = efficiency_with(eff, borrow)
            meta["measured"].update({f"cta_serial_us.{k}": f"cta_serial_us.{src} of this fit (CTA_SERIAL_FROM)"
                                     for k, src in CTA_SERIAL_FROM.items() if k in kinds})
        rows = base & np.isin(fam, fams) & (fp8 == name.endswith("fp8kv"))
        params = []
        for k in kinds:
            # CHAIN_TENSOR kinds (hwmodels.roofline): the tensor work is on the per-stage chain, no compute term
            params += _params(k, dram, tensor=k.startswith(("attn_fi_", "attn_flashmla", "attn_triton_sgl"))
                              and k not in CHAIN_TENSOR_KINDS)
            if k.startswith("attn_triton_sgl"):   # priced as vLLM's Triton kernel (hwmodels.roofline CHAIN_ISSUE)
                params += [(f"chain_queue.{k}", 0.3, 0.0, 1.0)]
        if comb:
            params += [] if comb in FIXED_ZERO else [(f"fixed_us.{comb}", 1.0, 0.0, FIXED_US_MAX)]
            params += [(f"iter_us.{comb}", 0.2, 0.02, 3.0)]
        if rows.sum() < 2 * len(params):
            meta[name] = {"rows": int(rows.sum()), "skipped": f"fewer than {2 * len(params)} fit rows"}
            continue
        base_eff = eff
        eff, fitted, fun = solve_terms(ops, hw, base_eff, params, rows, meas, len(df))
        for key, start in EXTRA_STARTS.get(name, ()):   # further starting points; the smallest rms log error is kept
            alt = [(p_[0], start if p_[0] == key else p_[1], p_[2], p_[3]) for p_ in params]
            e2, f2, u2 = solve_terms(ops, hw, base_eff, alt, rows, meas, len(df))
            if np.sum(u2 ** 2) < np.sum(fun ** 2):
                eff, fitted, fun = e2, f2, u2
        meta[name] = {"rows": int(rows.sum()), "params": fitted, "rms_log_error": float(np.sqrt(np.mean(fun ** 2)))}
    # the never-measured kinds borrow the nearest measured kind's terms (BORROWED)
    up = {}
    for k, src in BORROWED.items():
        for part, d_ in (("memory", eff.memory), ("compute", eff.compute)):
            up[f"{part}.{k}"] = d_[src]
        for part, d_ in (("fixed_us", eff.fixed_s), ("iter_us", eff.iter_s), ("cta_fixed_us", eff.cta_fixed_s),
                         ("sync_us", eff.sync_s)):
            up[f"{part}.{k}"] = d_.get(src, 0.0) * 1e6
        up[f"cta_slots.{k}"] = {"attn_fa3": 1.0, "attn_fa4": 1.0, "attn_xqa": XQ.XQA_SLOTS,
                                "attn_xqa_fp8kv": XQ.XQA_GMMA_SLOTS}.get(k, eff.cta_slots.get(src, 1.0))
    eff = efficiency_with(eff, up)
    meta["borrowed"] = dict(BORROWED)
    if fa3 is not None and len(fa3):
        eff, meta["fa3"] = fit_fa3(fa3, hw, eff, fa3_grids)
        meta["borrowed"] = {k: v for k, v in BORROWED.items() if k != "attn_fa3"}
        meta["borrowed"]["attn_fa4"] = "attn_fa3"
        eff, meta["fa3_binary"] = fit_fa3_binary(DATA_DIR, hw, eff)
    if xqa is not None and len(xqa):
        eff, meta["xqa"] = fit_xqa(xqa, hw, eff, xqa_grids)
        meta["borrowed"] = {k: v for k, v in meta["borrowed"].items() if k not in XQA_KINDS}
    if tv is not None and len(tv):
        eff, meta["triton_vllm"] = fit_triton_vllm(tv, hw, eff, tv_grids)
        meta["borrowed"] = {k: v for k, v in meta["borrowed"].items() if k not in TV_KINDS}
    return eff, meta


# ---------------------------------------------------------------------------------------------------------------------
# the fa3 family, measured through FA4-CuTe's sm_90 forward
# ---------------------------------------------------------------------------------------------------------------------
#: lab/kernels/measure_fa4cute_attention.py's CSVs (a `_repeat` file: the same grid timed again on the same machine)
FA3_GLOB = "fa3_fa4cute_nvidia*.csv"
#: the fa3 family's first look, priced before the measurement (lab/kernels/predict_fa4cute_attention.py)
FA3_FIRST_LOOK_CSV = "fa3_fa4cute_first_look.csv"
FA3_KEYS = ("model", "heads", "kv_heads", "head_dim", "batch", "q_rows", "context", "page_size")


def _newest_with_profile(data_dir: Path, glob: str, prefix: str) -> tuple[Path | None, Path | None]:
    """(the newest measurement CSV matching glob, its launch profile: the same name with prefix + 'grids_'), None
    where missing; repeat runs, nvidia-smi logs and launch profiles themselves are not measurements."""
    fs = sorted(p for p in DF.glob(Path(data_dir), glob) if DF.suffix(p) == ".csv"
                and not DF.stem(p).endswith(("_repeat", "_nvidia-smi")) and "_grids_" not in p.name)
    if not fs:
        return None, None
    f = fs[-1]
    g = DF.resolve(f.with_name(DF.name(f).replace(prefix, prefix + "grids_", 1)))
    return f, (g if g.is_file() else None)


def latest_fa3(data_dir: Path = DATA_DIR) -> tuple[Path | None, Path | None, Path | None]:
    """(the newest FA4-CuTe measurement, its repeat run, its launch profile), None where missing."""
    f, g = _newest_with_profile(data_dir, FA3_GLOB, "fa3_fa4cute_")
    if f is None:
        return None, None, None
    rep = DF.resolve(f.with_name(DF.stem(f) + "_repeat.csv"))
    return f, (rep if rep.is_file() else None), g


def load_fa3(data_dir: Path = DATA_DIR) -> pd.DataFrame:
    """The fa3 family's measured rows. With a repeat run each shape's time is the smaller of the two runs' medians
    (the same grid timed twice back to back on one machine; interference only adds time: 12 of 275 shapes differ by
    > 3 %, the rest by a median 0.3 %); run1_us / run2_us keep both. Empty when nothing was measured."""
    f, rep, _ = latest_fa3(data_dir)
    if f is None:
        return pd.DataFrame()
    df = load(f)
    df["run1_us"] = df["median_us"]
    if rep is not None:
        r = load(rep)[list(FA3_KEYS) + ["median_us"]].rename(columns={"median_us": "run2_us"})
        df = df.merge(r, on=list(FA3_KEYS), how="left")
        df["median_us"] = np.fmin(df["run1_us"], df["run2_us"].fillna(np.inf))
    df["layout"] = np.where(df["page_size"] == 0, "contiguous", "page " + df["page_size"].astype(int).astype(str))
    df.attrs["file"] = str(f)
    return df


def fa3_fit_rows(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(attn_fa3's fit rows, attn_fa3_tma's fit rows) of the fa3 measurement, both Llama-3.1-8B heads at q 1:
    cp.async page walk   page 16: context 1024-16384 at batch <= 64 (the middle regime, 12 rows) and context 16-256 at
                         every batch (18 rows: one-block CTAs in 1 to 32 waves, the only rows that tell the kernel's
                         fixed time from the CTA turnover of every later wave, hwmodels.roofline CTA_ALONE)
    TMA                  contiguous K/V, context 1024-16384 at batch <= 64 (9 rows): the TMA path's own block rate
    Everything else (other heads, pages 1 / 64 / 128, q > 1, batch >= 256 in the middle, long contexts) is held out.
    Chosen before the errors of the rules above were seen; the held-out rows of this campaign had been seen under the
    earlier rules (looked-at)."""
    if not len(df):
        return np.zeros(0, bool), np.zeros(0, bool)
    T, B = df["context"].to_numpy(float), df["batch"].to_numpy(float)
    q, page = df["q_rows"].fillna(1).to_numpy(float), df["page_size"].fillna(0).to_numpy(float)
    base = (df["family"].to_numpy() == "fa3") & (df["model"].to_numpy() == "llama8b") & (q <= 1)
    mid = (T >= 1024) & (T <= 16384) & (B <= 64)
    return base & (page == 16) & (mid | (T <= 256)), base & (page == 0) & mid


def fit_fa3(df: pd.DataFrame, hw: HardwareSpec, eff: Efficiency, grids: pd.DataFrame | None = None):
    """Fit attn_fa3's terms on its fit rows (fa3_fit_rows: Llama-3.1-8B heads, q 1, page 16: the middle regime and the
    one-block short contexts), resident CTAs from its launch profile, the prologue's dependent loads at the measured
    DRAM latency; then attn_fa3_tma's block rate (compute and memory efficiency; its per-CTA, turnover, fixed and
    load terms are attn_fa3's: the same CTA outside its K/V loop) on the contiguous fit rows; attn_fa4 borrows
    attn_fa3 (Blackwell not measured). Returns (Efficiency, meta)."""
    smem = float(hw.smem_per_unit_bytes or 233472)
    dram = (hw.efficiency.dram_latency_s or 0.35e-6) * 1e6
    up = {"sync_us.attn_fa3": dram}
    meta: dict = {"measured": {}}
    for k, (v, how) in measured_slots(grids, smem).items():
        if k == "attn_fa3":
            up["cta_slots.attn_fa3"] = v
            meta["measured"]["cta_slots.attn_fa3"] = how
    eff = efficiency_with(eff, up)
    ops = build_ops(df, hw.units, smem)
    meas = df["median_us"].to_numpy(float)
    rows, rows_tma = fa3_fit_rows(df)
    # one CTA per SM, not persistent: each wave after the first adds one CTA turnover (the previous CTA's epilogue, O
    # through shared memory and its TMA store, its exit, this CTA's dispatch and setup: cta_fixed_us under
    # hwmodels.roofline CTA_ALONE); the first wave's setup and the last one's epilogue are the kernel's fixed time
    params = _params("attn_fa3", dram, tensor=True) + [("cta_fixed_us.attn_fa3", 1.0, 0.0, 20.0)]

    def solve(params, rows, eff):
        return solve_terms(ops, hw, eff, params, rows, meas, len(df))

    eff, p1, f1 = solve(params, rows, eff)
    # the TMA path: the same CTA outside its K/V loop (attn_fa3's fixed, turnover, per-block load and prologue terms),
    # its own rate of streaming blocks (compute, memory)
    same = {"sync_us.attn_fa3_tma": dram, "cta_slots.attn_fa3_tma": eff.cta_slots.get("attn_fa3", 1.0)}
    for part, d_ in (("fixed_us", eff.fixed_s), ("iter_us", eff.iter_s), ("cta_fixed_us", eff.cta_fixed_s)):
        same[f"{part}.attn_fa3_tma"] = d_.get("attn_fa3", 0.0) * 1e6
    eff = efficiency_with(eff, same)
    p2, f2 = {}, np.zeros(0)
    if rows_tma.any():
        eff, p2, f2 = solve([("memory.attn_fa3_tma", 0.9, 0.5, 1.0), ("compute.attn_fa3_tma", 0.7, 0.02, 1.0)],
                            rows_tma, eff)
    meta.update({"rows": int(rows.sum()), "rows_tma": int(rows_tma.sum()), "params": {**p1, **p2},
                 "rms_log_error": float(np.sqrt(np.mean(f1 ** 2))),
                 "rms_log_error_tma": float(np.sqrt(np.mean(f2 ** 2))) if len(f2) else float("nan"),
                 "data": Path(df.attrs.get("file", "")).name})
    up = {}
    for part, d_ in (("memory", eff.memory), ("compute", eff.compute)):
        up[f"{part}.attn_fa4"] = d_["attn_fa3"]
    for part, d_ in (("fixed_us", eff.fixed_s), ("iter_us", eff.iter_s), ("cta_fixed_us", eff.cta_fixed_s),
                     ("sync_us", eff.sync_s)):
        up[f"{part}.attn_fa4"] = d_.get("attn_fa3", 0.0) * 1e6
    up["cta_slots.attn_fa4"] = eff.cta_slots.get("attn_fa3", 1.0)
    return efficiency_with(eff, up), meta


# ---------------------------------------------------------------------------------------------------------------------
# the fa3 family's own hopper/ binary: the persistent main kernel's per-tile scheduler loads and fixed time, the
# prepare kernel's own terms
# ---------------------------------------------------------------------------------------------------------------------
#: lab/kernels/measure_fa3_binary.py's CSVs: the first-look grid, blind grids 1 and 2 (fit rows named in
#: fa3_binary_fit_rows)
FA3_BINARY_GLOBS = ("fa3_binary_nvidia*.csv", "fa3_binary_blind_nvidia*.csv", "fa3_binary_blind2_nvidia*.csv")
#: the grid label of each FA3_BINARY_GLOBS file (column `grid`)
FA3_BINARY_GRIDS = ("first", "blind1", "blind2")
FA3_BINARY_KEYS = ("model", "dtype", "heads", "kv_heads", "head_dim", "batch", "q_rows", "context", "page_size",
                   "num_splits")


def load_fa3_binary(data_dir: Path = DATA_DIR) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(rows, kernel records) of the FA3 binary's first-look grid and blind grids 1 and 2 (the newest CSV of each,
    column `grid` = first / blind1 / blind2; the records of every `_grids` file with the row's shape parsed from their
    label)."""
    rows, recs = [], []
    for glob, grid in zip(FA3_BINARY_GLOBS, FA3_BINARY_GRIDS):
        fs = sorted(p for p in DF.glob(Path(data_dir), glob) if not DF.stem(p).endswith(("_repeat", "_nvidia-smi", "_grids")))
        if not fs:
            continue
        d = pd.read_csv(fs[-1])
        d = d[pd.to_numeric(d["median_us"], errors="coerce").notna()].drop_duplicates(list(FA3_BINARY_KEYS))
        rows.append(d.assign(grid=grid))
        g = DF.resolve(fs[-1].with_name(DF.stem(fs[-1]) + "_grids.csv"))
        if g.is_file():
            recs.append(pd.read_csv(g).assign(grid=grid))
    if not rows:
        return pd.DataFrame(), pd.DataFrame()
    rec = pd.concat(recs, ignore_index=True) if recs else pd.DataFrame()
    if len(rec):
        rec["batch"] = rec["label"].str.extract(r":B(\d+):")[0].astype(float)
    return pd.concat(rows, ignore_index=True), rec


def fa3_binary_fit_rows(df: pd.DataFrame) -> np.ndarray:
    """The FA3 binary's fit rows for attn_fa3_persist / attn_fa3_persist_fp8kv: EVERY measured row of the first-look
    grid (115: num_splits 0 and 1), blind grid 1 (50) and blind grid 2 (49), 214 rows. All were seen before this fit
    (looked-at: blind grids 1 and 2 were priced blind by earlier models and stop being held out here); the judge is
    blind grid 3 (fa3_binary_blind3_*), in none of them."""
    return df["grid"].isin(FA3_BINARY_GRIDS).to_numpy()


def fa3_binary_ops(df: pd.DataFrame, sms: int):
    """Op table of every FA3-binary row as simulator.kernels.fa3.fa3 launches it (num_splits as the row ran)."""
    a = {c: df[c].to_numpy(float) for c in ("batch", "q_rows", "context", "heads", "kv_heads", "head_dim",
                                            "page_size", "num_splits")}
    kvb = np.where(df["dtype"].to_numpy() == "e4m3", 1.0, 2.0)
    b = OpBuilder(len(df))
    launches, _ = FA3.fa3(a["batch"], a["q_rows"], a["context"], a["heads"], a["kv_heads"], a["head_dim"], kvb,
                          a["page_size"], sms, num_splits=a["num_splits"])
    emit(b, launches, sms)
    return b.build()


#: the persistent main kernel's kinds: the bf16 build and the fp8 (e4m3) build (128 x 160 tiles, V transposed in shared
#: memory by the producer: its own per-block time)
FA3_PERSIST_KINDS = ("attn_fa3_persist", "attn_fa3_persist_fp8kv")
_P, _P8 = FA3_PERSIST_KINDS
#: the fp8 build at causal prefill tiles: the fit's fp8 terms tied to it (the same numbers on the device fitted: a device
#: that names its own attn_fa3_persist_fp8kv decode terms keeps these, hwmodels/opkinds.py)
_PP8 = "attn_fa3_prefill_fp8kv"
#: the binary's own terms, fitted together on fa3_binary_fit_rows [(name, start, low, high)]: the kernel's fixed time and
#: a prologue load (both builds), the per-tile turnover of a CTA's later tiles (cta_fixed: simulator.kernels.fa3
#: PERSIST_TILE_WAVES; both builds), the streaming rate (memory: the binary's own, no longer the stand-in's; both
#: builds) and each build's per-block time (iter: a lone CTA's 128-key bf16 / 160-key fp8 block)
FA3_PERSIST_PARAMS = [(f"fixed_us.{_P}|fixed_us.{_P8}|fixed_us.{_PP8}", 1.0, 0.0, 20.0),
                      (f"sync_us.{_P}|sync_us.{_P8}|sync_us.{_PP8}", 0.35, 0.05, 3.0),
                      (f"cta_fixed_us.{_P}|cta_fixed_us.{_P8}|cta_fixed_us.{_PP8}", 1.0, 0.0, 10.0),
                      (f"memory.{_P}|memory.{_P8}|memory.{_PP8}", 0.9, 0.5, 1.0), (f"iter_us.{_P}", 1.6, 0.5, 3.0),
                      (f"iter_us.{_P8}|iter_us.{_PP8}", 1.6, 0.5, 4.0)]


def fit_fa3_binary(data_dir: Path, hw: HardwareSpec, eff: Efficiency):
    """FA3's own binary (hopper/ @ 0251105a): attn_fa3_persist and its fp8 build attn_fa3_persist_fp8kv start from
    attn_fa3's terms and fit their own (FA3_PERSIST_PARAMS: fixed time, prologue load, per-tile turnover, streaming rate,
    per-block time) on fa3_binary_fit_rows; attn_prepare_fa3's fixed time and per-step time are fitted on every record of the prepare
    kernel in both grids' profiles (its device time: no graph node cost). Returns (Efficiency, meta)."""
    df, rec = load_fa3_binary(data_dir)
    if not len(df):
        return eff, {"rows": 0, "skipped": "no fa3_binary measurement"}
    meta: dict = {}
    up = {}
    for k in FA3_PERSIST_KINDS + (_PP8,):   # attn_fa3's terms as the starting point (the compute rate unused: CHAIN_TENSOR)
        up.update({f"cta_slots.{k}": eff.cta_slots.get("attn_fa3", 1.0), f"memory.{k}": eff.memory["attn_fa3"],
                   f"compute.{k}": eff.compute["attn_fa3"]})
        for part, d_ in (("iter_us", eff.iter_s), ("cta_fixed_us", eff.cta_fixed_s), ("fixed_us", eff.fixed_s),
                         ("sync_us", eff.sync_s)):
            up[f"{part}.{k}"] = d_.get("attn_fa3", 0.0) * 1e6
    eff = efficiency_with(eff, up)
    prep = rec[rec["kernel_name"].astype(str).str.contains("prepare_varlen_num_blocks")] if len(rec) else rec
    if len(prep) >= 4:
        st = FA3.prepare_steps(prep["batch"].to_numpy(float))
        y = prep["dur_us"].to_numpy(float)
        A = np.stack([np.ones_like(st), st], axis=1)
        (f0, s0), *_ = np.linalg.lstsq(A, y, rcond=None)
        f0, s0 = max(float(f0), 0.0), max(float(s0), 0.0)
        eff = efficiency_with(eff, {"fixed_us.attn_prepare_fa3": f0, "sync_us.attn_prepare_fa3": s0})
        r = np.log((f0 + s0 * st) / y)
        meta["prepare"] = {"records": int(len(prep)), "fixed_us": f0, "sync_us": s0,
                           "rms_log_error": float(np.sqrt(np.mean(r ** 2)))}
    rows = fa3_binary_fit_rows(df)
    ops = fa3_binary_ops(df, hw.units)
    meas = df["median_us"].to_numpy(float)
    eff, p, f = solve_terms(ops, hw, eff, FA3_PERSIST_PARAMS, rows, meas, len(df))
    meta.update({"rows": int(rows.sum()), "params": p, "rms_log_error": float(np.sqrt(np.mean(f ** 2))),
                 "data": ", ".join(sorted(set(df["grid"])))})
    return eff, meta


def solve_terms(ops, hw: HardwareSpec, eff: Efficiency, params, rows, meas, n: int):
    """Least squares of log(priced / measured) on `rows` over `params` [(dotted name, start, low, high)], every other
    term as in `eff`. Returns (the efficiency with the fitted terms, {name: value}, the residuals)."""
    names = [p[0] for p in params]

    def terms(x):   # a name "a|b" is one parameter that sets both terms
        return {k: v for n_, v in zip(names, x) for k in n_.split("|")}

    rows = np.asarray(rows, dtype=bool)
    sub = ops.settings_subset(rows)   # only the judged settings are priced (each op row's price is its own)
    m = meas[rows]

    def resid(x):
        return np.log(predict_us(sub, hw, efficiency_with(eff, terms(x)), sub.n_settings) / m)

    x0 = np.array([p[1] for p in params])
    lo, hi = np.array([p[2] for p in params]), np.array([p[3] for p in params])
    r = least_squares(resid, np.clip(x0, lo, hi), bounds=(lo, hi), x_scale="jac")
    return efficiency_with(eff, terms(r.x)), {n_: float(v) for n_, v in zip(names, r.x)}, r.fun


def join_prices(df: pd.DataFrame, prices: pd.DataFrame, keys, errors: dict, extra=("model_commit",)) -> pd.DataFrame:
    """Measured rows joined on `keys` with a committed price file: for each {price column: error column} of `errors`
    the error in % (price / measured median - 1), plus `extra` columns of the price file and the regime labels."""
    keys = [k for k in keys if k in prices.columns]
    m = df.merge(prices[keys + list(errors) + [c for c in extra if c in prices.columns]], on=keys, how="inner")
    for pc, ec in errors.items():
        m[ec] = (m[pc] / m["median_us"] - 1.0) * 100.0
    return pd.concat([m.reset_index(drop=True), regime_labels(m).drop(columns=["family"])], axis=1)


def joined_first_look(df: pd.DataFrame, path: Path, keys, errors: dict) -> pd.DataFrame:
    """A family's committed first-look prices (`path`) joined with its measured rows (join_prices); empty when either
    is missing."""
    if not Path(path).is_file() or not len(df):
        return pd.DataFrame()
    return join_prices(df, pd.read_csv(path), keys, errors)


def newest_blind_grid(data_dir: Path, glob: str, pred_csv: str, keys, drop=("_nvidia-smi",), prepare=None):
    """The newest measured file of a blind grid (`glob`; launch profiles and stems ending in `drop` left out), prepared
    by `prepare(rows, file)` if given, joined with the two prices committed before it was measured (BLIND_ERRORS,
    pred_csv), `attrs["file"]` = the measured file; empty when either is missing."""
    fs = sorted(p for p in DF.glob(Path(data_dir), glob) if "_grids_" not in p.name and not DF.stem(p).endswith(tuple(drop)))
    pp = DF.resolve(Path(data_dir) / pred_csv)
    if not fs or not pp.is_file():
        return pd.DataFrame()
    df = load(fs[-1])
    if prepare is not None:
        df = prepare(df, fs[-1])
    out = join_prices(df, pd.read_csv(pp), list(keys), BLIND_ERRORS, ("model_commit", "base_commit"))
    out.attrs["file"] = str(fs[-1])
    return out


def fa3_first_look(df: pd.DataFrame, data_dir: Path = DATA_DIR) -> pd.DataFrame:
    """The fa3 first look (priced before the measurement) joined with the measured rows: first_struct_err_pct (the
    measured kernel's launch structure, fa4cute_sm90) and first_fa3_err_pct (fa3 as the product priced it), with
    regime labels; empty when either is missing."""
    return joined_first_look(df, DF.resolve(Path(data_dir) / FA3_FIRST_LOOK_CSV), FA3_KEYS, {"pred_struct_us": "first_struct_err_pct",
                                                      "pred_fa3_us": "first_fa3_err_pct"})


# ---------------------------------------------------------------------------------------------------------------------
# the xqa family (TensorRT-LLM's XQA kernels), measured through FlashInfer's port
# ---------------------------------------------------------------------------------------------------------------------
XQA_GLOB = "xqa_attention_nvidia*.csv"
XQA_FIRST_LOOK_CSV = "xqa_first_look.csv"
XQA_KEYS = ("model", "dtype", "heads", "kv_heads", "head_dim", "batch", "q_rows", "context", "page_size")
#: the family's kinds: mha.cu (bf16 K/V) and the sm_90 GMMA kernel mha_sm90.cu (fp8 K/V)
XQA_KINDS = ("attn_xqa", "attn_xqa_fp8kv")
#: the kinds whose CTA is alone on its SM (hwmodels.roofline CTA_ALONE): mha.cu at 145 KB of shared memory per CTA; its
#: per-wave CTA turnover (cta_fixed_us: the previous CTA's warp-group merge through shared memory, output store and
#: exit, this CTA's dispatch, barrier init, PDL wait and Q load) is fitted on xqa_fit_rows' one-tile short rows
XQA_CTA_ALONE = ("attn_xqa",)
#: the kinds fitted on the one-tile short rows too, each with the per-CTA term of its own structure: mha.cu (attn_xqa,
#: alone on its SM) a per-wave CTA turnover (cta_fixed_us, hwmodels.roofline CTA_ALONE); the GMMA kernel
#: (attn_xqa_fp8kv, 3 CTAs per SM) the SM time of every CTA beyond the first on its SM (cta_serial_us, on the SM's serial
#: path beside the K/V stream, with the later waves' prologue loads: hwmodels.roofline CTA_SERIAL_AFTER_FIRST). An
#: additive per-wave term for the GMMA kernel (priced before the blind grid, xqa_blind_*.csv) was collinear with its
#: per-tile chain on one-tile rows and displaced the per-tile page walk (iter_us 0.82 -> 0.03 us; blind fp8 median
#: 9.3 -> 15.6 %): LOOKED-AT, it is not this term
XQA_SHORT_FIT_KINDS = ("attn_xqa", "attn_xqa_fp8kv")
#: the per-CTA term each kind fits on its short rows (XQA_SHORT_FIT_KINDS)
XQA_CTA_TERM = {"attn_xqa": "cta_fixed_us", "attn_xqa_fp8kv": "cta_serial_us"}


def latest_xqa(data_dir: Path = DATA_DIR) -> tuple[Path | None, Path | None]:
    """(the newest XQA measurement, its launch profile), None where missing."""
    return _newest_with_profile(data_dir, XQA_GLOB, "xqa_attention_")


def load_xqa(data_dir: Path = DATA_DIR) -> pd.DataFrame:
    """The xqa family's measured rows (lab/kernels/measure_xqa_attention.py); empty when nothing was measured."""
    f, _ = latest_xqa(data_dir)
    return load(f) if f is not None else pd.DataFrame()


def profile_slots(grids: pd.DataFrame, smem_per_sm: float, masks) -> dict[str, tuple[float, str]]:
    """kind -> (resident CTAs per SM, how) from a launch profile (lab/kernels' *_grids_*.csv): for each (kind, boolean
    mask over the profile's launches) the most common occupancy of those launches (registers x threads, shared memory;
    simulator.calibration.fit_regimes.occupancy), at least 1."""
    from simulator.calibration.fit_regimes import occupancy

    threads = (pd.to_numeric(grids["block_x"], errors="coerce").fillna(1)
               * pd.to_numeric(grids["block_y"], errors="coerce").fillna(1)
               * pd.to_numeric(grids["block_z"], errors="coerce").fillna(1)).to_numpy(float)
    regs = pd.to_numeric(grids["regs"], errors="coerce").fillna(0).to_numpy(float)
    smem = pd.to_numeric(grids["smem"], errors="coerce").fillna(0).to_numpy(float)
    occ = occupancy(regs, smem, threads, smem_per_sm)
    out = {}
    for kind, m in masks:
        if not m.any():
            continue
        vals, counts = np.unique(occ[m], return_counts=True)
        v = float(vals[np.argmax(counts)])
        i = int(np.flatnonzero(m & (occ == v))[0])
        out[kind] = (max(v, 1.0), f"{int(m.sum())} launches; {int(regs[i])} registers x {int(threads[i])} threads, "
                                  f"{int(smem[i])} B shared memory -> {v:g} per SM")
    return out


def xqa_slots(grids: pd.DataFrame | None, smem_per_sm: float) -> dict[str, tuple[float, str]]:
    """kind -> (resident CTAs per SM, how) from the XQA launch profile: both kernels are named kernel_mha; the GMMA
    kernel is the one of 3 warpgroups (block z = 3), mha.cu's has z = 2 (its warp specialisation)."""
    if grids is None or grids.empty:
        return {}
    bz = pd.to_numeric(grids["block_z"], errors="coerce").fillna(0).to_numpy(float)
    name = grids["kernel_name"].astype(str).str.contains("kernel_mha").to_numpy()
    return profile_slots(grids, smem_per_sm, (("attn_xqa", name & (bz == 2)), ("attn_xqa_fp8kv", name & (bz == 3))))


def xqa_fit_rows(df: pd.DataFrame) -> np.ndarray:
    """The xqa family's fit rows: Llama-3.1-8B heads (32/8), page 16, one query row, bf16 and fp8 K/V, context
    1024-16384 at batch <= 64 (the middle regime, 12 + 12 rows) and context 16-256 at every batch (18 + 18 rows:
    one-tile CTAs in 1 to 32 waves, the only rows that tell a kernel's fixed time from its per-wave CTA turnover,
    hwmodels.roofline CTA_ALONE). Chosen before the errors of the rules fitted on them were seen; every other row of
    the 2026-11-27 measurement had been seen under the earlier rules (looked-at), the blind grid is the test.
    LOOKED-AT (after the blind grid): the fp8 short rows were dropped while the GMMA kernel had only an additive per-wave
    term; they are fit rows again with its own per-CTA SM time (XQA_SHORT_FIT_KINDS, XQA_CTA_TERM)."""
    if not len(df):
        return np.zeros(0, bool)
    T, B = df["context"].to_numpy(float), df["batch"].to_numpy(float)
    q, page = df["q_rows"].fillna(1).to_numpy(float), df["page_size"].fillna(0).to_numpy(float)
    base = (df["family"].to_numpy() == "xqa") & (df["model"].to_numpy() == "llama8b") & (q <= 1) & (page == 16)
    mid = (T >= 1024) & (T <= 16384) & (B <= 64)
    short_ok = df["dtype"].to_numpy() != "fp8" if "attn_xqa_fp8kv" not in XQA_SHORT_FIT_KINDS else True
    return base & (mid | ((T <= 256) & short_ok))


def _smem(hw: HardwareSpec) -> float:
    return float(hw.smem_per_unit_bytes or 233472)


def _family_fit_setup(df: pd.DataFrame, hw: HardwareSpec, eff: Efficiency, kinds, slots: dict):
    """The common start of a measured family's fit: each kind's in-kernel phase at the measured DRAM latency, no
    per-wave CTA time until fitted, resident CTAs from its launch profile (`slots`: kind -> (value, how)), the rows'
    ops and measured medians. Returns (Efficiency, meta, ops, measured us, DRAM latency in us)."""
    dram = (hw.efficiency.dram_latency_s or 0.35e-6) * 1e6
    up = {}
    meta: dict = {"measured": {}, "groups": {}}
    for k in kinds:
        up[f"sync_us.{k}"] = dram
        up[f"cta_fixed_us.{k}"] = 0.0
    for k, (v, how) in slots.items():
        up[f"cta_slots.{k}"] = v
        meta["measured"][f"cta_slots.{k}"] = how
    return (efficiency_with(eff, up), meta, build_ops(df, hw.units, _smem(hw)), df["median_us"].to_numpy(float),
            dram)


def fit_xqa(df: pd.DataFrame, hw: HardwareSpec, eff: Efficiency, grids: pd.DataFrame | None = None):
    """Fit attn_xqa (bf16 rows) and attn_xqa_fp8kv (fp8 rows) on the XQA measurement's fit rows (xqa_fit_rows:
    Llama-3.1-8B heads, page 16, one query row, context 1024-16384 at batch <= 64, and context <= 256 at every batch),
    resident CTAs from its launch profile, the prologue's dependent loads at the measured DRAM latency (the
    multi-block merge is priced as the merging CTA's loads, simulator/kernels/xqa.py). mha.cu's CTA is alone on its SM
    (hwmodels.roofline CTA_ALONE): its per-wave CTA turnover (cta_fixed_us: the warp-group merge through shared memory,
    mergeAndSaveOutTile, the output store, exit, the next CTA's dispatch, barrier init, PDL wait and Q load) is fitted
    on the one-tile short rows; the GMMA kernel's SM time per CTA beyond the first on its SM (cta_serial_us,
    hwmodels.roofline CTA_SERIAL_AFTER_FIRST) on its short and middle rows (XQA_CTA_TERM). Returns (Efficiency, meta)."""
    fp8 = df["dtype"].to_numpy() == "fp8"
    base = xqa_fit_rows(df)
    # the terms the shipped ceiling and the GMMA steady-state tiles were tested on (XQA_FIT_WITHOUT_CEILING,
    # XQA_FIT_WITHOUT_STEADY): the ops are built inside too (the steady-state tiles are the ops' serial_iters)
    with _xqa_ceiling_off():
        eff, meta, ops, meas, dram = _family_fit_setup(df, hw, eff, XQA_KINDS, xqa_slots(grids, _smem(hw)))
        eff, meta = _fit_xqa_kinds(ops, hw, eff, meta, meas, dram, base, fp8, len(df))
    meta.update({"rows": int(base.sum()), "data": Path(df.attrs.get("file", "")).name,
                 "rms_log_error": float(np.sqrt(np.mean([g["rms_log_error"] ** 2 for g in meta["groups"].values()])))})
    return eff, meta


#: fit the xqa kinds' terms (fit_xqa) and shares (XQA_ROW_SHARE, XQA_GMMA_COL_SHARE, LOCKSTEP_SHARE) with
#: hwmodels.roofline.SM_STREAM_CEILING held off for them: the ceiling shipped on top of the terms fitted without it (the
#: model the twelfth XQA blind grid priced and tested; the refit with it, e4c53d3, moved the tenth grid 2 of 7 -> 1 of 7
#: regimes and was not shipped), so `--write` and the share fits reproduce the shipped values
XQA_FIT_WITHOUT_CEILING = True


#: the xqa fits (the kinds' terms and the shares) run without the GMMA kernel's steady-state tiles and its loaded chain
#: (simulator.kernels.xqa.XQA_GMMA_STEADY, attn_xqa_fp8kv in hwmodels.roofline CHAIN_LOADED: the share was fitted on
#: its own named rows with every other term as committed), so `--write` and the share fits reproduce the shipped values
XQA_FIT_WITHOUT_STEADY = True


@contextmanager
def _xqa_ceiling_off():
    """hwmodels.roofline.SM_STREAM_CEILING without the xqa kinds while a fit runs (XQA_FIT_WITHOUT_CEILING), the
    GMMA kernel's steady-state tiles off (XQA_FIT_WITHOUT_STEADY) and mha.cu's late CTAs off (simulator.kernels.xqa
    XQA_LATE, fitted on top of the terms fitted without it) and its XQA_SPEC_TILE_SHARE and XQA_SPEC_STREAM_SHARE off
    (likewise)."""
    from hwmodels import roofline as RF

    keep = dict(RF.SM_STREAM_CEILING)
    keep_steady, keep_loaded, keep_late = XQ.XQA_GMMA_STEADY, RF.CHAIN_LOADED, XQ.XQA_LATE
    keep_spec = (XQ.XQA_SPEC_TILE_SHARE, XQ.XQA_SPEC_STREAM_SHARE)
    XQ.XQA_LATE = False   # mha.cu's late CTAs (XQA_LATE_LOADS was fitted under the terms fitted without them)
    # the verification build's chain premium (grid 17) and per-SM stream premium (grid 18), fitted on top of the terms
    XQ.XQA_SPEC_TILE_SHARE, XQ.XQA_SPEC_STREAM_SHARE = 0.0, 0.0
    if XQA_FIT_WITHOUT_CEILING:
        RF.SM_STREAM_CEILING = {k: v for k, v in keep.items() if k not in XQA_KINDS}
    if XQA_FIT_WITHOUT_STEADY:
        XQ.XQA_GMMA_STEADY = False
        RF.CHAIN_LOADED = tuple(k for k in keep_loaded if k != KIND_CODE["attn_xqa_fp8kv"])
    try:
        yield
    finally:
        RF.SM_STREAM_CEILING = keep
        XQ.XQA_GMMA_STEADY, RF.CHAIN_LOADED, XQ.XQA_LATE = keep_steady, keep_loaded, keep_late
        XQ.XQA_SPEC_TILE_SHARE, XQ.XQA_SPEC_STREAM_SHARE = keep_spec


def _fit_xqa_kinds(ops, hw: HardwareSpec, eff: Efficiency, meta: dict, meas, dram: float, base, fp8, n: int):
    """fit_xqa's per-kind least squares (its docstring)."""
    for kind, rows in (("attn_xqa", base & ~fp8), ("attn_xqa_fp8kv", base & fp8)):
        params = _params(kind, dram, tensor=True)
        # each kind's per-CTA term (XQA_CTA_TERM): mha.cu's per-wave CTA turnover (alone on its SM, CTA_ALONE), the
        # GMMA kernel's SM time per CTA beyond the first on its SM (CTA_SERIAL_AFTER_FIRST)
        if kind in XQA_SHORT_FIT_KINDS:
            params.append((f"{XQA_CTA_TERM[kind]}.{kind}", 1.0, 0.0, 20.0))
        eff, fitted, fun = solve_terms(ops, hw, eff, params, rows, meas, n)
        meta.setdefault("params", {}).update(fitted)
        meta["groups"][kind] = {"rows": int(rows.sum()), "rms_log_error": round(float(np.sqrt(np.mean(fun ** 2))), 4)}
    return eff, meta


def xqa_first_look(df: pd.DataFrame, data_dir: Path = DATA_DIR) -> pd.DataFrame:
    """The XQA first look (priced before the measurement, lab/kernels/predict_xqa_attention.py) joined with the
    measured rows: first_main_err_pct ((a) the model at db3789c) and first_struct_err_pct ((b) the port's structure,
    borrowed rates), with regime labels; empty when either is missing."""
    return joined_first_look(df, DF.resolve(Path(data_dir) / XQA_FIRST_LOOK_CSV), XQA_KEYS, {"pred_main_us": "first_main_err_pct",
                                                      "pred_struct_us": "first_struct_err_pct"})


# ---------------------------------------------------------------------------------------------------------------------
# the triton_vllm family: vLLM's Triton unified attention, run from a copy of its source
# ---------------------------------------------------------------------------------------------------------------------
#: lab/kernels/measure_triton_vllm_attention.py's CSVs and the first look priced before them
#: (lab/kernels/predict_triton_vllm_attention.py)
TV_GLOB = "triton_vllm_attention_nvidia*.csv"
TV_FIRST_LOOK_CSV = "triton_vllm_first_look.csv"
TV_KEYS = ("model", "dtype", "heads", "kv_heads", "head_dim", "batch", "q_rows", "context", "page_size")
#: the starting values of the fitted chain_queue share (fit_triton_vllm: the best of the fits from each is kept)
TV_QUEUE_STARTS = (0.0, 0.25, 0.5, 0.75)
#: the family's kinds: the 2D / 3D kernel reading bf16 or fp8 K/V, and reduce_segments
TV_KINDS = ("attn_triton_vllm", "attn_triton_vllm_fp8kv", "attn_combine_triton_vllm")
#: the 2D / 3D kernels have no fitted per-launch constant of their own: the constant belongs to the 3D launch
#: structure (16 segments, then reduce_segments behind it) and is fitted on reduce_segments (fixed_us.
#: attn_combine_triton_vllm, on the bf16 fit rows), so the 3D launches of bf16 and fp8 K/V pay the same constant and
#: the 2D kernel (no reduce) none: triton_unified_attention.py @ 001ceb3e, the grid, the prologue's search and
#: metadata loads and the reduce are the same code whichever K/V dtype the tiles hold (fp8 only adds the in-loop
#: conversion (k.to(f32) x k_scale).to(bf16), priced in the fp8 kind's tile terms). Fitted per kind on the kernels, the
#: fp8 kind's constant came out at 0.88 us against the bf16 kind's 2.67 us and the 2D kernel paid it: fp8 decode at
#: context <= 256 was priced 15-21 % fast, bf16 2D one-tile programs 11-35 % slow (the second blind grid, looked-at)
TV_NO_FIXED = ("attn_triton_vllm", "attn_triton_vllm_fp8kv")
#: a program's tail (cta_fixed_us of the 2D / 3D kinds, priced once per wave by hwmodels.roofline): what every program
#: runs after its last tile's K / V arrive, whatever its length: that tile's two tl.dot calls, its mask, max, exp and
#: sums, then the epilogue's stores (the 2D kernel: acc / L to the output; the 3D kernel: segm_output, segm_max,
#: segm_expsum) and the program's exit (kernel_unified_attention_2d / _3d @ 001ceb3e). The chain of n tiles is the
#: prologue's loads (the first tile's block-table entries and K / V, peeled by the pipeliner), n - 1 steady-state
#: iterations and this tail, so a one-tile program is its prologue plus the tail alone. Fitted per kind on the
#: family's fit rows (the fp8 fit set holds one- to six-tile programs at batch 8-768; the bf16 rows hold lone long
#: programs and one-wave middle ones), bounded by TV_TAIL_MAX_US
TV_TAIL_MAX_US = 5.0
#: where the program tail is paid: the last wave's only (fixed_us of the 2D / 3D kinds, once per launch) or every
#: wave's (cta_fixed_us). A program's tail (its last tile's dots, softmax and epilogue stores) is issue and store work
#: of that program alone; 4-5 programs share an SM (VLLM_REGS_BY_G) and they do not start in step after the first
#: wave: a program of a later wave runs its prologue's dependent loads while the programs beside it run their tails,
#: so only the last wave's tails are exposed (the tails' issue is in the tiles' compute term already: every tile, the
#: last included, is priced in the flops). Priced per wave, 2D one-tile launches of 5-7 waves (batch 176-480) were 21-41
#: % slow on the fifth blind grid (looked-at)
TV_TAIL_ONCE = False
TV_TAIL_TERM = "fixed_us" if TV_TAIL_ONCE else "cta_fixed_us"
#: the gap between two back-to-back nodes of this family's timing harness (a CUDA graph of the same launch captured
#: back to back, lab/harness.py time_graph), us: MEASURED from the committed launch profiles as (the graph time per
#: call - the profiled spans of its kernels) / its kernels, the median over the profiled launches of at most
#: TV_GAP_MAX_SPAN_US (tv_harness_gap(): 0.22 us over 105 launches; LOOKED-AT data, not fitted). The device's
#: launch_graph (1.0 us) is the node cost of a tiny elementwise kernel (lab/measure.py launch_graph: its span and the
#: gap together); this family's fitted terms price the whole span of its kernels, so its measured rows are priced
#: with this gap (predict_us); None = the device's launch_graph
TV_HARNESS_GAP_US: float | None = 0.22
#: the longest profiled launch the gap is measured on: a short launch's graph time and profiled span differ by the
#: gap alone; in long launches run-to-run differences of the kernel (several us) swamp it
TV_GAP_MAX_SPAN_US = 30.0
#: launch profiles measured after the gap was set (the sixth Triton decode call, whose blind grid tested it): left out
#: of tv_harness_gap by default; with them the median is 0.20 us over 117 launches
TV_GAP_LATER = ("triton_decode_blind6_",)


#: the vLLM Triton timing harness's K/V copies (lab/kernels/measure_production_attention.py copies_for, run by every
#: triton_vllm grid): ceil(TV_HARNESS_COPY_BYTES / one call's K/V bytes) copies, at most TV_HARNESS_MAX_COPIES, rotated
#: call by call through the CUDA graph
TV_HARNESS_COPY_BYTES, TV_HARNESS_MAX_COPIES = float(128 << 20), 16.0
#: the H100 SXM's L2 (NVIDIA H100 Tensor Core GPU datasheet / architecture whitepaper: 50 MB), in two partitions of
#: 25 MB each; the harness rows were all measured on it
TV_HARNESS_L2_BYTES = float(50 << 20)
#: whether the harness's K/V L2 hits are priced (tv_harness_kv_l2_hit); False = every K/V load from DRAM (the model
#: before)
TV_HARNESS_KV_L2 = True
#: whether the harness's K/V footprint counts only the copies its graph touches: the graph captures `calls` calls
#: (lab/harness.py time_graph: about ceil(target_us / one call's time), at least 2) and call i reads copy i mod R, so
#: a long call captured fewer times than its R copies reads min(calls, R) of them (the measured rows' `calls` column;
#: a row without one keeps R). False = R copies whatever the calls (the rule before). Read from the harness's code after
#: the first H200 grid's warm lone 2D miss (+13.9 %: 2-19 calls of R = 16, footprints 1.5-31 MB where the rule said
#: 2.5-142 MB; LOOKED-AT); judged blind on the H200's second vLLM Triton grid (lab/kernels/triton_decode_h200_calls.py,
#: 36 new shapes, each warm row's call count fixed in the committed prediction): warm 4 of 4 regimes against main's 3
#: of 4 (lone 2D 6.2 / 8.7 % against 8.4 / 25.5 %): SHIPPED. No fitted term moved (TV_FIT_HARNESS_CALLS)
TV_HARNESS_CALLS = True
#: whether the family's fit (fit_triton_vllm) prices its fit rows with the graph's calls too: False = the shipped terms,
#: fitted with the R-copy footprint (4 of the 94 fit rows would change footprint); True = candidate B of the same
#: grid (the terms refitted, rms log error 0.0501 -> 0.0509), which tied A's 8 of 8 warm and cold regimes and so, by
#: the rule declared before the call, was not shipped (it moves every engine price of the family by up to ~2 %)
TV_FIT_HARNESS_CALLS = False


def tv_harness_kv_l2_hit(B, T, Hkv, d, kvb, calls=None):
    """The share of a harness row's K/V tile loads that hit in the L2 (simulator.kernels.triton_engines
    VLLM_KV_L2_HIT): the harness replays the call over R = min(16, ceil(128 MiB / K/V bytes)) copies of the K/V (each
    call's pages: B x ceil(T / 16) blocks of 16 tokens x Hkv x d x 2 (K and V) x K/V bytes), so its footprint is R x
    the K/V bytes. All hit where that is at most one L2 partition (TV_HARNESS_L2_BYTES / 2: the copies stay in the
    L2 from one replay to the next), none where it is the whole L2 or more (each copy is evicted before the call comes
    back to it), linear between. An ASSUMPTION chosen with the committed rows' errors seen (looked-at: lone and few
    verification programs whose harness footprint is 8-32 MB ran 17-29 % faster than priced, those of >= 64 MB within
    a few %); 0 when TV_HARNESS_KV_L2 is False. An engine pays no such hits (triton_vllm's default kv_l2_hit 0)."""
    B, T, Hkv, d, kvb = (np.asarray(x, dtype=np.float64) for x in (B, T, Hkv, d, kvb))
    if not TV_HARNESS_KV_L2:
        return np.zeros(np.broadcast(B, T, Hkv, d, kvb).shape)
    kv = B * np.ceil(T / 16.0) * 16.0 * Hkv * d * 2.0 * kvb
    copies = np.clip(np.ceil(TV_HARNESS_COPY_BYTES / np.maximum(kv, 1.0)), 1.0, TV_HARNESS_MAX_COPIES)
    if TV_HARNESS_CALLS and calls is not None:   # the graph's calls touch only the first `calls` copies
        copies = np.minimum(copies, np.maximum(np.asarray(calls, dtype=np.float64), 1.0))
    half = TV_HARNESS_L2_BYTES / 2.0
    return np.clip((TV_HARNESS_L2_BYTES - copies * kv) / half, 0.0, 1.0)


def latest_triton_vllm(data_dir: Path = DATA_DIR) -> tuple[Path | None, Path | None]:
    """(the newest vLLM Triton measurement, its launch profile), None where missing."""
    return _newest_with_profile(data_dir, TV_GLOB, "triton_vllm_attention_")


def load_triton_vllm(data_dir: Path = DATA_DIR) -> pd.DataFrame:
    """The triton_vllm family's measured rows; empty when nothing was measured."""
    f, _ = latest_triton_vllm(data_dir)
    return load(f) if f is not None else pd.DataFrame()


def triton_vllm_slots(grids: pd.DataFrame | None, smem_per_sm: float) -> dict[str, tuple[float, str]]:
    """kind -> (resident CTAs per SM, how) from the launch profile: the most common occupancy of the 2D / 3D kernel's
    launches reading bf16 (attn_triton_vllm) or fp8 K/V (label ':fp8:'), and of reduce_segments."""
    if grids is None or grids.empty:
        return {}
    name = grids["kernel_name"].astype(str)
    main = name.str.contains("kernel_unified_attention").to_numpy()
    fp8 = grids["label"].astype(str).str.contains(":fp8:").to_numpy()
    return profile_slots(grids, smem_per_sm, (("attn_triton_vllm", main & ~fp8), ("attn_triton_vllm_fp8kv", main & fp8),
                                              ("attn_combine_triton_vllm", name.str.contains("reduce_segments").to_numpy())))


def tv_harness_gap(data_dir: Path = DATA_DIR, skip: tuple[str, ...] = TV_GAP_LATER) -> tuple[float, int]:
    """(gap us, launches) between back-to-back nodes of the vLLM Triton family's timing harness (TV_HARNESS_GAP_US):
    for every profiled launch of the committed launch profiles (triton_*grids*.csv, family triton_vllm, label
    'triton_vllm:model:dtype:qN:path:B..:T..') whose measured row is in the file of the same name without '_grids' (the
    block table layout 'perm' where the file has several) and whose profiled spans sum to at most TV_GAP_MAX_SPAN_US:
    (the row's graph time - the summed spans) / the launch's kernels; the median, rounded to 0.01 us. Profile files
    whose names start with one of `skip` are left out."""
    gaps = []
    for g in sorted(DF.glob(Path(data_dir), "triton_*grids*.csv")):
        f = DF.resolve(g.with_name(DF.name(g).replace("_grids", "")))
        if not f.is_file() or g.name.startswith(tuple(skip)):
            continue
        gr, me = pd.read_csv(g), pd.read_csv(f)
        gr = gr[gr["label"].astype(str).str.startswith("triton_vllm:")]
        if "layout" in me.columns:
            me = me[me["layout"].fillna("perm").astype(str) == "perm"]
        for lab, x in gr.groupby("label", sort=False):
            _, model, dtype, q, _path, b, t = str(lab).split(":")
            m = me[(me["model"] == model) & (me["dtype"] == dtype) & (me["batch"] == int(b[1:]))
                   & (me["context"] == int(t[1:])) & (me["q_rows"].fillna(1) == int(q[1:]))]
            span = float(x["dur_us"].sum())
            if len(m) and span <= TV_GAP_MAX_SPAN_US and np.isfinite(m["median_us"].iloc[0]):
                gaps.append((float(m["median_us"].iloc[0]) - span) / len(x))
    return (round(float(np.median(gaps)), 2), len(gaps)) if gaps else (float("nan"), 0)


def load_triton_vllm_lone_fit(data_dir: Path = DATA_DIR) -> pd.DataFrame:
    """The lone-program fit rows of the triton_vllm family: the page-layout diagnosis measured with the third Triton
    decode blind grid (TD_BLIND3_GLOB, row_role "diagnosis", Llama-3.1-8B heads 32/8 only, as the other fit rows, bf16):
    verification (q 2, the 2D kernel) of batch 1 and 4 at context 4096-90000, 8 or 32 programs each walking its
    sequence alone, every block-table layout (the layout moved the time by 3 % at most, lab/kernels/
    triton_decode_blind3.py). They pin the lone program's iteration, which the decode fit rows (up to 128 programs
    per launch) share with the chain's queueing term. Empty when not measured."""
    fs = sorted(p for p in DF.glob(Path(data_dir), TD_BLIND3_GLOB) if "_grids_" not in p.name
                and not DF.stem(p).endswith("_nvidia-smi"))
    if not fs:
        return pd.DataFrame()
    d = load(fs[-1])
    keep = (d["row_role"].astype(str) == "diagnosis").to_numpy() & (d["model"].to_numpy() == "llama8b")
    # bf16 only: the fp8 diagnosis is one shape (batch 1, context 90000, four layouts), and with it the fp8 kind's
    # fit moved its queueing share from 0.09 to 0.56 (a second minimum of the same fit rows); chosen after seeing the
    # errors on the measured grids (looked-at)
    keep = keep & (d["dtype"].to_numpy() == "bf16")
    out = d[keep]
    # the fourth Triton decode call's named fit sets (chosen and committed before it was measured, lab/kernels/
    # triton_decode_blind4.py): the fp8 kind's fit set (row_role fit_fp8: one-tile decode at batch 8-768, middle
    # contexts, lone long decode, verification) and the lone programs of the G 4 binary (fit_lone, heads 32/8: 2D and
    # 3D, bf16 and fp8, context 32768 / 90000); Llama-3.1-8B heads 32/8 only, as every other fit row of the family
    f4 = sorted(p for p in DF.glob(Path(data_dir), TD_BLIND4_GLOB) if "_grids_" not in p.name
                and not DF.stem(p).endswith("_nvidia-smi"))
    if f4:
        d4 = load(f4[-1])
        role = d4["row_role"].astype(str)
        out = pd.concat([out, d4[role.isin(["fit_fp8", "fit_lone"]).to_numpy() & (d4["model"].to_numpy() == "llama8b")]],
                        ignore_index=True)
    return out.reset_index(drop=True)


#: the fourth Triton decode call (lab/kernels/triton_decode_blind4.py: row_role "blind" for the blind grid, "fit_fp8"
#: and "fit_lone" for the fit sets named before the measurement) and its prices, committed before the measurement
#: (lab/kernels/predict_triton_decode_blind4.py: base = main's model, new = the revised model)
TD_BLIND4_GLOB = "triton_decode_blind4_nvidia*.csv"
TD_BLIND4_PRED_CSV = "triton_decode_blind4_predictions.csv"


def load_triton_decode_blind4(data_dir: Path = DATA_DIR, role: str = "blind") -> pd.DataFrame:
    """The fourth Triton decode call's measured rows of `role` ("blind", "fit_fp8" or "fit_lone") joined with the prices
    committed before the measurement (base_err_pct: main's model, new_err_pct: the revised model), with regime labels;
    empty when either is missing."""
    b = newest_blind_grid(data_dir, TD_BLIND4_GLOB, TD_BLIND4_PRED_CSV, TD_BLIND3_KEYS)
    if not len(b):
        return b
    out = b[b["row_role"].astype(str) == role].reset_index(drop=True)
    out.attrs["file"] = b.attrs["file"]
    return out


#: the fifth Triton decode call (lab/kernels/triton_decode_blind5.py: short contexts 16-256 at batch 1-480, bf16 / fp8,
#: q 1-4, and middle-context controls; row_role "blind") and its prices, committed before the measurement
#: (lab/kernels/predict_triton_decode_blind5.py: base = main's model, v1 = a program tail per K/V dtype, new = one tail)
TD_BLIND5_GLOB = "triton_decode_blind5_nvidia*.csv"
TD_BLIND5_PRED_CSV = "triton_decode_blind5_predictions.csv"


def load_triton_decode_blind5(data_dir: Path = DATA_DIR) -> pd.DataFrame:
    """The fifth Triton decode call's measured rows joined with the prices committed before the measurement
    (base_err_pct: main's model, new_err_pct: the revised model, v1_err_pct: its first variant), with regime labels;
    empty when either is missing."""
    return _with_v1(newest_blind_grid(data_dir, TD_BLIND5_GLOB, TD_BLIND5_PRED_CSV, TD_BLIND3_KEYS), data_dir,
                    TD_BLIND5_PRED_CSV)


def _with_v1(b: pd.DataFrame, data_dir: Path, pred_csv: str) -> pd.DataFrame:
    """A Triton decode blind grid's joined rows `b` (newest_blind_grid) plus its variant's committed prices from
    `pred_csv` (pred_v1_us, v1_commit) and their errors (v1_err_pct); `b` as it is when empty."""
    if not len(b):
        return b
    pp = pd.read_csv(DF.resolve(Path(data_dir) / pred_csv))
    keys = [k for k in TD_BLIND3_KEYS if k in pp.columns]
    attrs = dict(b.attrs)
    b = b.merge(pp[keys + ["pred_v1_us", "v1_commit"]], on=keys, how="left")
    b.attrs.update(attrs)
    b["v1_err_pct"] = (b["pred_v1_us"] / b["median_us"] - 1.0) * 100.0
    return b


#: the sixth Triton decode call (lab/kernels/triton_decode_blind6.py: verification of 1-8 sequences at contexts 12-252,
#: 2D one-tile decode at batch 160-600, controls; row_role "blind"; and a K/V extent diagnosis, row_role "diagnosis")
#: and its prices, committed before the measurement (lab/kernels/predict_triton_decode_blind6.py: base = main's model,
#: new = the harness's node gap, v1 = that gap and the program tail once per launch)
TD_BLIND6_GLOB = "triton_decode_blind6_nvidia*.csv"
TD_BLIND6_PRED_CSV = "triton_decode_blind6_predictions.csv"


def blind6_regime(df: pd.DataFrame) -> np.ndarray:
    """The sixth grid's regimes, named before the measurement: 'verify B<=8 short' (q 2-4, batch 1-8, context <= 256),
    '2D one-tile decode B>=150' (q 1, batch >= 150, context <= 64), else 'control'."""
    q, b, t = (df[c].to_numpy(float) for c in ("q_rows", "batch", "context"))
    return np.where((q > 1) & (b <= 8) & (t <= 256), "verify B<=8 short",
                    np.where((q == 1) & (b >= 150) & (t <= 64), "2D one-tile decode B>=150", "control"))


def load_triton_decode_blind6(data_dir: Path = DATA_DIR, role: str = "blind") -> pd.DataFrame:
    """The sixth Triton decode call's measured rows of `role` ("blind" or "diagnosis") joined with the prices committed
    before the measurement (base_err_pct: main's model, new_err_pct: the shipped model, v1_err_pct: its variant), with
    regime labels (blind6_regime in column grid6_regime); empty when either is missing."""
    b = _with_v1(newest_blind_grid(data_dir, TD_BLIND6_GLOB, TD_BLIND6_PRED_CSV, TD_BLIND3_KEYS), data_dir,
                 TD_BLIND6_PRED_CSV)
    if not len(b):
        return b
    attrs = dict(b.attrs)
    b["grid6_regime"] = blind6_regime(b)
    out = b[b["row_role"].astype(str) == role].reset_index(drop=True)
    out.attrs.update(attrs)
    return out


def lone_iter_ratios(data_dir: Path = DATA_DIR) -> dict[float, tuple[float, float, float, float]]:
    """The lone iteration of each compiled GQA binary against G 4's (simulator.kernels.triton_engines VLLM_ITER_BY_G),
    from the fourth Triton decode call's fit_lone rows (batch 1: one program per KV head and segment walking its range
    alone): per G, kernel (3D = q 1, 2D = q 2) and K/V dtype, the median over contexts 32768 / 90000 (and over the
    models of that G) of the row's time over the G 4 (heads 32/8) row's at the same context, kernel and dtype, rounded
    to 3 decimals; (3D bf16, 3D fp8, 2D bf16, 2D fp8) per G as VLLM_ITER_BY_G. Rule fixed before the measurement
    (every ratio is taken as measured). Empty when not measured."""
    f4 = sorted(p for p in DF.glob(Path(data_dir), TD_BLIND4_GLOB) if "_grids_" not in p.name
                and not DF.stem(p).endswith("_nvidia-smi"))
    if not f4:
        return {}
    d = load(f4[-1])
    d = d[d["row_role"].astype(str) == "fit_lone"].copy()
    d["G"] = np.floor(d["heads"] / d["kv_heads"])
    ref = d[d["G"] == 4][["dtype", "q_rows", "context", "median_us"]].rename(columns={"median_us": "ref_us"})
    m = d[d["G"] != 4].merge(ref, on=["dtype", "q_rows", "context"])
    m["ratio"] = m["median_us"] / m["ref_us"]
    out = {}
    for g, x in m.groupby("G"):
        med = x.groupby(["q_rows", "dtype"])["ratio"].median()
        out[float(g)] = tuple(round(float(med.get((q, dt), 1.0)), 3)
                              for q, dt in ((1, "bf16"), (1, "fp8"), (2, "bf16"), (2, "fp8")))
    return out


def fit_triton_vllm(df: pd.DataFrame, hw: HardwareSpec, eff: Efficiency, grids: pd.DataFrame | None = None,
                    data_dir: Path | None = DATA_DIR):
    """Fit attn_triton_vllm (with reduce_segments' attn_combine_triton_vllm) on the bf16 rows and
    attn_triton_vllm_fp8kv on the fp8 rows of the fit set (fit_rows: Llama-3.1-8B decode, context 1024-16384, batch
    <= 64; chosen before the measurement) and of the lone-program fit rows (load_triton_vllm_lone_fit, from
    `data_dir`; None = none); resident CTAs from the launch profile, the prologue's dependent loads at
    the measured DRAM latency. iter_us is the lone program's iteration and compute the rate of the tiles' issue on
    the busiest SM (hwmodels.roofline CHAIN_ISSUE); cta_fixed_us the program's tail (TV_TAIL_MAX_US), fitted per kind
    and then, with every term of both kinds, refitted once jointly on all the fit rows as one value for both kinds
    (the epilogue is the same code for either K/V dtype). The rows are priced as predict_us prices them: each launch
    with the harness's measured node gap (TV_HARNESS_GAP_US), not the device's launch_graph. Returns (Efficiency,
    meta)."""
    attrs = dict(df.attrs)
    lone = load_triton_vllm_lone_fit(data_dir) if data_dir is not None else pd.DataFrame()
    df = pd.concat([df, lone], ignore_index=True) if len(lone) else df
    if not TV_FIT_HARNESS_CALLS:   # the fit rows' warm footprint R copies (the shipped terms' fit)
        df = df.drop(columns=["calls"], errors="ignore")
    df.attrs.update(attrs)
    is_lone = np.arange(len(df)) >= len(df) - len(lone)
    eff, meta, ops, meas, dram = _family_fit_setup(df, hw, eff, TV_KINDS, triton_vllm_slots(grids, _smem(hw)))
    eff = efficiency_with(eff, {f"fixed_us.{k}": 0.0 for k in TV_KINDS if k in FIXED_ZERO})
    fp8 = df["dtype"].to_numpy() == "fp8"
    base = (fit_rows(df) & (df["family"].to_numpy() == "triton_vllm")) | is_lone
    meta["lone_rows"] = int(is_lone.sum())
    comb = "attn_combine_triton_vllm"
    for kind, rows in (("attn_triton_vllm", base & ~fp8), ("attn_triton_vllm_fp8kv", base & fp8)):
        # the queue share trades against the issue rate (compute) and the lone chain: the least-squares surface has a
        # local minimum at each end, so the fit starts from every TV_QUEUE_STARTS value and keeps the best
        best = None
        for q0 in TV_QUEUE_STARTS:
            params = _params(kind, dram, tensor=True) + [(f"chain_queue.{kind}", q0, 0.0, 1.0)]
            if kind in TV_NO_FIXED:   # the per-launch constant is reduce_segments' (TV_NO_FIXED)
                params = [p for p in params if p[0] != f"fixed_us.{kind}"]
                eff = efficiency_with(eff, {f"fixed_us.{kind}": 0.0})
            # every program's last tile and epilogue: the last wave's (TV_TAIL_ONCE) or once per wave
            params.append((f"{TV_TAIL_TERM}.{kind}", 2.0, 0.0, TV_TAIL_MAX_US))
            if kind == "attn_triton_vllm":
                params += [(f"fixed_us.{comb}", 1.0, 0.0, FIXED_US_MAX), (f"iter_us.{comb}", 0.2, 0.02, 3.0)]
            got = solve_terms(ops, hw, eff, params, rows, meas, len(df))
            if best is None or np.mean(got[2] ** 2) < np.mean(best[2] ** 2) - 1e-12:
                best = got
        eff, fitted, fun = best
        meta.setdefault("params", {}).update(fitted)
        meta["groups"][kind] = {"rows": int(rows.sum()), "rms_log_error": round(float(np.sqrt(np.mean(fun ** 2))), 4)}
    # one tail for both kinds (TV_PROGRAM_TAIL): every term of both kinds refitted together on all the fit rows, from
    # the per-kind fits, the tail one shared parameter
    bounds = {p[0]: (p[2], p[3]) for k in ("attn_triton_vllm", "attn_triton_vllm_fp8kv") for p in _params(k, dram, True)}
    bounds.update({f"chain_queue.{k}": (0.0, 1.0) for k in TV_KINDS})
    bounds.update({f"fixed_us.{comb}": (0.0, FIXED_US_MAX), f"iter_us.{comb}": (0.02, 3.0)})
    tails = [f"{TV_TAIL_TERM}.{k}" for k in TV_NO_FIXED]
    names = [n for n in meta["params"] if n not in tails]
    params = [(n, meta["params"][n], *bounds[n]) for n in names]
    params.append(("|".join(tails), 0.5 * sum(meta["params"][n] for n in tails), 0.0, TV_TAIL_MAX_US))
    eff, fitted, fun = solve_terms(ops, hw, eff, params, base, meas, len(df))
    meta["params"].update({k: v for n, v in fitted.items() for k in n.split("|")})
    idx = np.flatnonzero(base)
    for kind, rows in (("attn_triton_vllm", base & ~fp8), ("attn_triton_vllm_fp8kv", base & fp8)):
        f = fun[np.isin(idx, np.flatnonzero(rows))]
        meta["groups"][kind] = {"rows": int(rows.sum()), "rms_log_error": round(float(np.sqrt(np.mean(f ** 2))), 4)}
    meta.update({"rows": int(base.sum()), "data": Path(df.attrs.get("file", "")).name,
                 "rms_log_error": float(np.sqrt(np.mean([g["rms_log_error"] ** 2 for g in meta["groups"].values()])))})
    return eff, meta


def triton_vllm_first_look(df: pd.DataFrame, data_dir: Path = DATA_DIR) -> pd.DataFrame:
    """The triton_vllm first look (priced before the measurement) joined with the measured rows: first_main_err_pct
    ((a) the model at f5528fc) and first_struct_err_pct ((b) the source's structure, borrowed rates), with regime
    labels; empty when either is missing."""
    return joined_first_look(df, DF.resolve(Path(data_dir) / TV_FIRST_LOOK_CSV), TV_KEYS, {"pred_main_us": "first_main_err_pct",
                                                     "pred_struct_us": "first_struct_err_pct"})


#: the triton_vllm blind grid (lab/kernels/measure_triton_vllm_attention.py --grid blind: contexts 40-200, 600-6000,
#: 20K-100K, batches 1-3, 10-40, 150-700, heads 32/8, 8/1, 28/4, 64/8, q 1-3, none of the first grid's shapes) and its
#: prices, committed before it was measured (lab/kernels/predict_triton_vllm_blind.py)
TV_BLIND_GLOB = "triton_vllm_blind_nvidia*.csv"
TV_BLIND_PRED_CSV = "triton_vllm_blind_predictions.csv"


def load_triton_vllm_blind(data_dir: Path = DATA_DIR) -> pd.DataFrame:
    """The triton_vllm blind grid's measured rows (grid "x4": the fourth) joined with the prices committed before the measurement:
    base_err_pct (the model at base_commit) and new_err_pct (the model at model_commit), with regime labels; empty
    when either is missing."""
    return newest_blind_grid(data_dir, TV_BLIND_GLOB, TV_BLIND_PRED_CSV, TV_KEYS)



#: the second blind grid of the two Triton decode families (lab/kernels/triton_decode_blind2.py: triton_vllm at q 1-4
#: and sgl_triton at q 1, contexts 56-90000, batches 1-768, heads 32/8, 8/1, 28/4, 64/8, bf16 / fp8, none in any
#: committed row) and its prices, committed before it was measured (lab/kernels/predict_triton_decode_blind2.py: base =
#: the model at the branch point, new = the revised model)
TD_BLIND2_GLOB = "triton_decode_blind2_nvidia*.csv"
TD_BLIND2_PRED_CSV = "triton_decode_blind2_predictions.csv"
TD_BLIND2_KEYS = ("family", "model", "dtype", "heads", "kv_heads", "head_dim", "batch", "q_rows", "context", "page_size")


def load_triton_decode_blind2(data_dir: Path = DATA_DIR) -> pd.DataFrame:
    """The second Triton decode blind grid's measured rows joined with its committed prices (base_err_pct,
    new_err_pct), with regime labels; empty when either is missing."""
    return newest_blind_grid(data_dir, TD_BLIND2_GLOB, TD_BLIND2_PRED_CSV, TD_BLIND2_KEYS)


#: the third blind grid of the two Triton decode families and the K/V page-layout diagnosis measured in the same call
#: (lab/kernels/triton_decode_blind3.py: column row_role "blind" for the grid, "diagnosis" for the fit / diagnosis
#: rows; column layout the block table's page layout) and its prices, committed before the measurement
#: (lab/kernels/predict_triton_decode_blind3.py: base = main's model, new = the revised model)
TD_BLIND3_GLOB = "triton_decode_blind3_nvidia*.csv"
TD_BLIND3_PRED_CSV = "triton_decode_blind3_predictions.csv"
TD_BLIND3_KEYS = TD_BLIND2_KEYS + ("row_role", "layout")


def load_triton_decode_blind3(data_dir: Path = DATA_DIR, role: str = "blind") -> pd.DataFrame:
    """The third Triton decode blind grid's measured rows of `role` ("blind" or "diagnosis") joined with the prices
    committed before the measurement (base_err_pct, new_err_pct), with regime labels; empty when either is missing."""
    b = newest_blind_grid(data_dir, TD_BLIND3_GLOB, TD_BLIND3_PRED_CSV, TD_BLIND3_KEYS)
    if not len(b):
        return b
    out = b[b["row_role"].astype(str) == role].reset_index(drop=True)
    out.attrs["file"] = b.attrs["file"]
    return out


#: a blind grid's two committed prices (the revised model, the model before it) and their error columns
BLIND_ERRORS = {"pred_new_us": "new_err_pct", "pred_base_us": "base_err_pct"}
#: the fa3 blind grid (lab/kernels/measure_fa4cute_attention.py --grid blind) and its prices, committed before it was
#: measured (lab/kernels/predict_fa4cute_attention.py --grid blind)
FA3_BLIND_GLOB = "fa3_fa4cute_blind_nvidia*.csv"
FA3_BLIND_PRED_CSV = "fa3_fa4cute_blind_predictions.csv"


def load_fa3_blind(data_dir: Path = DATA_DIR) -> pd.DataFrame:
    """The blind grid's measured rows joined with the prices committed before the measurement: base_err_pct (the
    model at base_commit) and new_err_pct (the model at model_commit), with regime labels and the K/V path (`kv_path`:
    TMA or cp.async); empty when either is missing."""
    keys = list(FA3_KEYS)

    def smaller_of_repeat(df, f):   # the same grid timed again back to back: the smaller median, as load_fa3
        df["run1_us"] = df["median_us"]
        rep = DF.resolve(f.with_name(DF.stem(f) + "_repeat.csv"))
        if rep.is_file():
            r = load(rep)[keys + ["median_us"]].rename(columns={"median_us": "run2_us"})
            df = df.merge(r, on=keys, how="left")
            df["median_us"] = np.fmin(df["run1_us"], df["run2_us"].fillna(np.inf))
        return df

    out = newest_blind_grid(data_dir, FA3_BLIND_GLOB, FA3_BLIND_PRED_CSV, keys, ("_nvidia-smi", "_repeat"),
                            smaller_of_repeat)
    if not len(out):
        return out
    out["layout"] = np.where(out["page_size"] == 0, "contiguous", "page " + out["page_size"].astype(int).astype(str))
    out["kv_path"] = np.where(FA3.fa4cute_kv_tma(out["page_size"].to_numpy(float)), "TMA", "cp.async")
    return out


#: the xqa blind grid (lab/kernels/measure_xqa_attention.py --grid blind) and its prices, committed before it was
#: measured (lab/kernels/predict_xqa_attention.py --grid blind)
XQA_BLIND_GLOB = "xqa_blind_nvidia*.csv"
XQA_BLIND_PRED_CSV = "xqa_blind_predictions.csv"


#: the CTA_ALONE grid (lab/kernels/measure_xqa_attention.py --grid alone: bf16 K/V, short contexts in many waves) and its
#: prices committed before the measurement (lab/kernels/predict_xqa_attention.py --grid alone)
XQA_ALONE_GLOB = "xqa_alone_nvidia*.csv"
XQA_ALONE_PRED_CSV = "xqa_alone_predictions.csv"
#: the third blind grid (lab/kernels/measure_xqa_attention.py --grid s6: verification rows, lone fp8 calls, merged splits,
#: q 1 controls) and its prices committed before the measurement (lab/kernels/predict_xqa_attention.py --grid s6)
XQA_S6_GLOB = "xqa_s6_nvidia*.csv"
XQA_S6_PRED_CSV = "xqa_s6_predictions.csv"
#: the fourth blind grid (lab/kernels/measure_xqa_attention.py --grid x4) and its prices committed before it
XQA_X4_GLOB = "xqa_x4_nvidia*.csv"
XQA_X4_PRED_CSV = "xqa_x4_predictions.csv"
#: the fifth blind grid (lab/kernels/measure_xqa_attention.py --grid x5) and its prices committed before it
XQA_X5_GLOB = "xqa_x5_nvidia*.csv"
XQA_X5_PRED_CSV = "xqa_x5_predictions.csv"
#: the sixth blind grid (lab/kernels/measure_xqa_attention.py --grid x6) and its prices committed before it
XQA_X6_GLOB = "xqa_x6_nvidia*.csv"
XQA_X6_PRED_CSV = "xqa_x6_predictions.csv"
#: the seventh blind grid (lab/kernels/measure_xqa_attention.py --grid x7: verification q 2-8 bf16 / fp8, fp8 decode in
#: the middle at small batch, q 1 controls) and its prices committed before it was measured
XQA_X7_GLOB = "xqa_x7_nvidia*.csv"
XQA_X7_PRED_CSV = "xqa_x7_predictions.csv"
#: the eighth blind grid (lab/kernels/measure_xqa_attention.py --grid x8: fp8 verification at q 2-8 over Llama and Qwen
#: heads, short and middle, batch 1-256, q 1 / bf16 controls) and its prices committed before it was measured
XQA_X8_GLOB = "xqa_x8_nvidia*.csv"
XQA_X8_PRED_CSV = "xqa_x8_predictions.csv"
#: the ninth blind grid (lab/kernels/measure_xqa_attention.py --grid x9: fp8 verification at q 2-4 over G 4 / 7 builds
#: whose registers were profiled, bf16 verification, q 1 controls) and its prices committed before it was measured
XQA_X9_GLOB = "xqa_x9_nvidia*.csv"
XQA_X9_PRED_CSV = "xqa_x9_predictions.csv"
#: the lock-step W-sweep (lab/kernels/measure_xqa_attention.py --grid lock: bf16 one-tile CTAs in 1-8 waves at 1-4
#: slices; fit / diagnosis rows, not blind)
XQA_LOCK_GLOB = "xqa_lock_nvidia*.csv"


def load_xqa_lock(data_dir: Path = DATA_DIR) -> pd.DataFrame:
    """The newest lock-step W-sweep (XQA_LOCK_GLOB; empty when none), with W = ceil(8 B / SMs) waves per row."""
    files = sorted(DF.glob(data_dir, XQA_LOCK_GLOB))
    if not files:
        return pd.DataFrame()
    df = pd.read_csv(files[-1])
    df = df[df["note"].isna() | (df["note"].astype(str) == "")].reset_index(drop=True)
    df.attrs["file"] = str(files[-1])
    return df


def xqa_lockstep_share(df: pd.DataFrame, hw: HardwareSpec, eff: Efficiency | None = None,
                       bounds: tuple = (0.0, 4.0)) -> tuple[float, float]:
    """hwmodels.roofline.LOCKSTEP_SHARE fitted on the lock-step W-sweep's rows (load_xqa_lock: bf16 one-tile mha.cu
    CTAs in 1-8 nearly full waves at 1-4 filled 64-key slices): the share minimising the rows' rms log error with
    every other term as `eff` (the fitted file) prices it; a one-dimensional bounded search. Returns (share, rms);
    the module constant is restored."""
    from scipy.optimize import minimize_scalar

    from hwmodels import roofline as RF

    eff = eff or hw.efficiency
    ops = build_ops(df, hw.units, _smem(hw))
    meas = df["median_us"].to_numpy(float)
    keep = RF.LOCKSTEP_SHARE

    def rms(share):
        RF.LOCKSTEP_SHARE = float(share)
        return float(np.sqrt(np.mean(np.log(predict_us(ops, hw, eff, len(df)) / meas) ** 2)))

    try:
        with _xqa_ceiling_off():
            r = minimize_scalar(rms, bounds=bounds, method="bounded", options={"xatol": 1e-3})
        return float(r.x), float(r.fun)
    finally:
        RF.LOCKSTEP_SHARE = keep


def xqa_verify_fit_rows(df: pd.DataFrame) -> np.ndarray:
    """The fit rows of simulator.kernels.xqa.XQA_ROW_SHARE: the q 1 fit rows' windows (xqa_fit_rows: Llama-3.1-8B heads,
    page 16, context 16-256 at every batch and 1024-16384 at batch <= 64) at q 2 and q 4, bf16 K/V (mha.cu's
    verification build). Named before the share was fitted; every one had been seen (LOOKED-AT) under the earlier
    rules."""
    if not len(df):
        return np.zeros(0, bool)
    T, B = df["context"].to_numpy(float), df["batch"].to_numpy(float)
    q, page = df["q_rows"].fillna(1).to_numpy(float), df["page_size"].fillna(0).to_numpy(float)
    base = ((df["family"].to_numpy() == "xqa") & (df["model"].to_numpy() == "llama8b") & (q > 1) & (page == 16)
            & (df["dtype"].to_numpy() == "bf16"))
    return base & (((T >= 1024) & (T <= 16384) & (B <= 64)) | (T <= 256))


def _fit_xqa_share(name: str, fit: pd.DataFrame, hw: HardwareSpec, eff: Efficiency | None,
                   bounds: tuple) -> tuple[float, float, int]:
    """The value of the share simulator.kernels.xqa.<name> minimising the rms log error of the rows `fit` with every
    other term as `eff` (default: the fitted file) prices it; a one-dimensional bounded search. Returns (share, rms,
    rows); the module constant is restored."""
    from scipy.optimize import minimize_scalar

    from simulator.kernels import xqa as XQ

    eff = eff or hw.efficiency
    rows = fit.reset_index(drop=True)
    meas = rows["median_us"].to_numpy(float)
    keep = getattr(XQ, name)

    def rms(share):
        setattr(XQ, name, float(share))
        ops = build_ops(rows, hw.units, _smem(hw))
        return float(np.sqrt(np.mean(np.log(predict_us(ops, hw, eff, len(rows)) / meas) ** 2)))

    try:
        with _xqa_ceiling_off():
            r = minimize_scalar(rms, bounds=bounds, method="bounded", options={"xatol": 1e-3})
        return float(r.x), float(r.fun), len(rows)
    finally:
        setattr(XQ, name, keep)


def xqa_row_share(df: pd.DataFrame, hw: HardwareSpec, eff: Efficiency | None = None,
                  bounds: tuple = (0.0, 1.0)) -> tuple[float, float, int]:
    """simulator.kernels.xqa.XQA_ROW_SHARE fitted on xqa_verify_fit_rows(df): the share minimising those rows' rms log
    error with every other term as `eff` (the fitted file) prices it; a one-dimensional bounded search. Returns
    (share, rms, rows); the module constant is restored."""
    return _fit_xqa_share("XQA_ROW_SHARE", df[xqa_verify_fit_rows(df)], hw, eff, bounds)


def xqa_gmma_verify_fit_rows(df: pd.DataFrame) -> np.ndarray:
    """The fit rows of simulator.kernels.xqa.XQA_GMMA_COL_SHARE: the measurement's fp8 verification rows (the GMMA
    kernel's SPEC_Q_SEQ_LEN build, q 2 and q 4: 8 and 16 query heads per CTA), Llama-3.1-8B heads, page 16, every
    context and batch of the campaign (30 rows). Named before the share was fitted; every one had been seen (LOOKED-AT)
    under the earlier rules."""
    if not len(df):
        return np.zeros(0, bool)
    q, page = df["q_rows"].fillna(1).to_numpy(float), df["page_size"].fillna(0).to_numpy(float)
    return ((df["family"].to_numpy() == "xqa") & (df["model"].to_numpy() == "llama8b") & (q > 1) & (page == 16)
            & (df["dtype"].to_numpy() == "fp8"))


def xqa_gmma_col_share(df: pd.DataFrame, hw: HardwareSpec, eff: Efficiency | None = None,
                       bounds: tuple = (0.0, 5.0)) -> tuple[float, float, int]:
    """simulator.kernels.xqa.XQA_GMMA_COL_SHARE fitted on xqa_gmma_verify_fit_rows(df): the share minimising those rows'
    rms log error with every other term as `eff` (the fitted file) prices it; a one-dimensional bounded search.
    Returns (share, rms, rows); the module constant is restored."""
    return _fit_xqa_share("XQA_GMMA_COL_SHARE", df[xqa_gmma_verify_fit_rows(df)], hw, eff, bounds)


#: the per-SM stream scan (lab/kernels/measure_xqa_attention.py --grid x11, its rows with split_sms set): fit rows of
#: hwmodels.roofline.SM_STREAM_CEILING, named before they were measured
XQA_X11_GLOB = "xqa_x11_nvidia*.csv"


def xqa_stream_fit_rows(df: pd.DataFrame) -> np.ndarray:
    """The fit rows of hwmodels.roofline.SM_STREAM_CEILING: the stream scan's rows (split_sms set: the launcher handed 1
    SM, so every (sequence, KV head[, token block]) is one unsplit CTA), Llama-3.1-8B heads (G 4), page 16: one variable
    moves, the launch's CTAs (batch 1-50 x 8 KV heads = 8-400 CTAs), at a fixed chain of 16384 keys (and 4096 at a few
    batches); bf16 K/V at q 1, 2, 4 (mha.cu) and fp8 K/V at q 1 (mha_sm90.cu). Named before the scan was measured."""
    if not len(df) or "split_sms" not in df.columns:
        return np.zeros(len(df), bool)
    page = df["page_size"].fillna(0).to_numpy(float)
    return ((df["family"].to_numpy() == "xqa") & (df["model"].to_numpy() == "llama8b") & (page == 16)
            & df["split_sms"].notna().to_numpy() & (df["split_sms"].fillna(0).to_numpy(float) > 0))


def load_xqa_x11(data_dir: Path = DATA_DIR) -> pd.DataFrame:
    """The newest x11 measurement (XQA_X11_GLOB, its failed rows dropped; empty when none): the stream scan's rows
    (split_sms set) and the eleventh blind grid's (split_sms empty)."""
    files = sorted(p for p in Path(data_dir).glob(XQA_X11_GLOB) if "_grids_" not in p.name
                   and p.suffix == ".csv" and not p.stem.endswith("_nvidia-smi"))
    if not files:
        return pd.DataFrame()
    df = pd.read_csv(files[-1])
    df = df[df["note"].isna() | (df["note"].astype(str) == "")].reset_index(drop=True)
    df.attrs["file"] = str(files[-1])
    return df


def xqa_stream_per_sm(df: pd.DataFrame, hw: HardwareSpec, eff: Efficiency | None = None,
                      bounds: tuple = (5e9, 1e12)) -> dict[str, tuple[float, float, int]]:
    """hwmodels.roofline.SM_STREAM_CEILING fitted on xqa_stream_fit_rows(df), per kind (attn_xqa on the bf16 rows,
    attn_xqa_fp8kv on the fp8 rows): the per-SM rate (bytes / s) minimising those rows' rms log error with every other
    term as `eff` (the fitted file) prices it; a one-dimensional bounded search in log rate (the upper bound = no
    ceiling inside the scan). Returns {kind: (rate, rms, rows)}; the module constant is restored. The rate was fitted
    before hwmodels.roofline.SM_STREAM_TAIL and SM_STREAM_SOFT (the fifteenth and sixteenth xqa grids' rules, which read
    it): the search holds both off (the late loads at XQA_LATE_LOADS_HARD), so it reproduces the shipped rate."""
    from scipy.optimize import minimize_scalar

    from hwmodels import roofline as RF

    eff = eff or hw.efficiency
    fit = df[xqa_stream_fit_rows(df)].reset_index(drop=True)
    keep, keep_tail = dict(RF.SM_STREAM_CEILING), RF.SM_STREAM_TAIL
    keep_soft, keep_loads = RF.SM_STREAM_SOFT, XQ.XQA_LATE_LOADS
    RF.SM_STREAM_TAIL, RF.SM_STREAM_SOFT, XQ.XQA_LATE_LOADS = (), (), XQ.XQA_LATE_LOADS_HARD
    keep_spec = (XQ.XQA_SPEC_TILE_SHARE, XQ.XQA_SPEC_STREAM_SHARE)
    XQ.XQA_SPEC_TILE_SHARE, XQ.XQA_SPEC_STREAM_SHARE = 0.0, 0.0   # fitted before grid 17's and grid 18's shares
    out = {}
    try:
        for kind, dt in (("attn_xqa", "bf16"), ("attn_xqa_fp8kv", "fp8")):
            rows = fit[fit["dtype"].to_numpy() == dt].reset_index(drop=True)
            if not len(rows):
                continue
            meas = rows["median_us"].to_numpy(float)
            ops = build_ops(rows, hw.units, _smem(hw))

            def rms(lr, kind=kind, ops=ops, rows=rows, meas=meas):
                RF.SM_STREAM_CEILING = {**keep, kind: float(np.exp(lr))}
                return float(np.sqrt(np.mean(np.log(predict_us(ops, hw, eff, len(rows)) / meas) ** 2)))

            r = minimize_scalar(rms, bounds=tuple(np.log(bounds)), method="bounded", options={"xatol": 1e-4})
            out[kind] = (float(np.exp(r.x)), float(r.fun), len(rows))
            RF.SM_STREAM_CEILING = dict(keep)
        return out
    finally:
        RF.SM_STREAM_CEILING, RF.SM_STREAM_TAIL = keep, keep_tail
        RF.SM_STREAM_SOFT, XQ.XQA_LATE_LOADS = keep_soft, keep_loads
        XQ.XQA_SPEC_TILE_SHARE, XQ.XQA_SPEC_STREAM_SHARE = keep_spec


def xqa_gmma_unsplit_share(df: pd.DataFrame, hw: HardwareSpec, eff: Efficiency | None = None,
                           bounds: tuple = (0.3, 1.0)) -> tuple[float, float, float, int]:
    """simulator.kernels.xqa.XQA_GMMA_UNSPLIT_SHARE fitted ONLY on the fp8 rows of xqa_stream_fit_rows(df) (the per-SM
    stream scan: 8-400 unsplit GMMA CTAs of 256 tiles), every other term as `eff` prices it: a one-dimensional bounded
    search of the rows' rms log error with XQA_GMMA_UNSPLIT on. Returns (share, rms, rms at share 1, rows); the module
    constants are restored."""
    fit = df[xqa_stream_fit_rows(df) & (df["dtype"].to_numpy() == "fp8")].reset_index(drop=True)
    return _xqa_share_search(fit, hw, eff or hw.efficiency, bounds, "XQA_GMMA_UNSPLIT", "XQA_GMMA_UNSPLIT_SHARE")


def _xqa_share_search(fit: pd.DataFrame, hw: HardwareSpec, eff: Efficiency, bounds: tuple, flag: str,
                      share: str) -> tuple[float, float, float, int]:
    """A one-dimensional bounded search of simulator.kernels.xqa's module constant `share` (with the rule `flag` on)
    for the smallest rms log error of the rows `fit`, every other term as `eff` prices them. Returns (share, rms, rms
    at share 1, rows); both module constants are restored."""
    from scipy.optimize import minimize_scalar

    meas = fit["median_us"].to_numpy(float)
    keep = (getattr(XQ, flag), getattr(XQ, share))
    try:
        setattr(XQ, flag, True)

        def rms(x):
            setattr(XQ, share, float(x))
            ops = build_ops(fit, hw.units, _smem(hw))
            return float(np.sqrt(np.mean(np.log(predict_us(ops, hw, eff, len(fit)) / meas) ** 2)))

        r = minimize_scalar(rms, bounds=bounds, method="bounded", options={"xatol": 1e-4})
        return float(r.x), float(r.fun), rms(1.0), len(fit)
    finally:
        setattr(XQ, flag, keep[0])
        setattr(XQ, share, keep[1])


#: the twelfth xqa blind grid's measured rows (lab/kernels/measure_xqa_attention.py --grid x12: two calls, two files)
XQA_X12_GLOB = "xqa_x12_nvidia*.csv"


def load_xqa_x12(data_dir: Path = DATA_DIR) -> pd.DataFrame:
    """The twelfth grid's measured rows (both calls' files, failed rows dropped; empty when none)."""
    files = sorted(p for p in Path(data_dir).glob(XQA_X12_GLOB) if "_grids_" not in p.name and p.suffix == ".csv"
                   and not p.stem.endswith("_nvidia-smi"))
    if not files:
        return pd.DataFrame()
    df = pd.concat([pd.read_csv(f) for f in files], ignore_index=True)
    return df[df["note"].isna() | (df["note"].astype(str) == "")].reset_index(drop=True)


def xqa_gmma_steady_fit_rows(x11: pd.DataFrame, x12: pd.DataFrame) -> pd.DataFrame:
    """The fit rows of simulator.kernels.xqa.XQA_GMMA_STEADY_SHARE, named before the fit: the fp8 rows of the per-SM
    stream scan (xqa_stream_fit_rows: 8-400 unsplit GMMA CTAs of 256 tiles) and the twelfth grid's fp8 few-CTA rows
    (role "fewcta": Llama-3.1-70B TP 8 / Llama-3.1-8B TP 4 under TensorRT-LLM's split, 21-42 tiles per CTA; LOOKED-AT:
    their errors were seen before the rule)."""
    parts = []
    if len(x11):
        parts.append(x11[xqa_stream_fit_rows(x11) & (x11["dtype"].to_numpy() == "fp8")])
    if len(x12) and "role" in x12.columns:
        parts.append(x12[(x12["dtype"].to_numpy() == "fp8") & (x12["role"].astype(str).to_numpy() == "fewcta")])
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def xqa_gmma_steady_share(x11: pd.DataFrame, x12: pd.DataFrame, hw: HardwareSpec, eff: Efficiency | None = None,
                          bounds: tuple = (0.3, 1.0)) -> tuple[float, float, float, int]:
    """simulator.kernels.xqa.XQA_GMMA_STEADY_SHARE fitted ONLY on xqa_gmma_steady_fit_rows(x11, x12), every other term
    as `eff` (the fitted file) prices it: a one-dimensional bounded search of the rows' rms log error with
    XQA_GMMA_STEADY on and the kind's loaded chain (hwmodels.roofline CHAIN_LOADED) as shipped. Returns (share, rms, rms
    at share 1, rows); the module constants are restored."""
    return _xqa_share_search(xqa_gmma_steady_fit_rows(x11, x12), hw, eff or hw.efficiency, bounds,
                             "XQA_GMMA_STEADY", "XQA_GMMA_STEADY_SHARE")


#: the tenth xqa blind grid's measured rows
XQA_X10_GLOB = "xqa_x10_nvidia*.csv"


def load_xqa_x10(data_dir: Path = DATA_DIR) -> pd.DataFrame:
    """The tenth grid's measured rows (failed rows dropped; empty when none)."""
    files = sorted(p for p in Path(data_dir).glob(XQA_X10_GLOB) if "_grids_" not in p.name and p.suffix == ".csv"
                   and not p.stem.endswith("_nvidia-smi"))
    if not files:
        return pd.DataFrame()
    df = pd.concat([load(f) for f in files], ignore_index=True)
    return df[df["note"] == ""].reset_index(drop=True)


def xqa_late_fit_rows(x10: pd.DataFrame, x11: pd.DataFrame, x12: pd.DataFrame) -> pd.DataFrame:
    """The fit rows of simulator.kernels.xqa.XQA_LATE_LOADS, named before the fit: every bf16 (mha.cu) row of the tenth,
    eleventh and twelfth grids timed with programmatic dependent launch on (the twelfth grid's enable_pdl-off
    diagnostics left out), the eleventh grid's per-SM stream scan included; LOOKED-AT (their middle rows' misses
    motivated the rule)."""
    parts = []
    for d in (x10, x11, x12):
        if len(d):
            keep = d["dtype"].to_numpy() == "bf16"
            if "pdl" in d.columns:
                keep &= pd.to_numeric(d["pdl"], errors="coerce").fillna(1).to_numpy() != 0
            parts.append(d[keep])
    out = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    if len(out) and "split_sms" in out.columns:
        out["split_sms"] = pd.to_numeric(out["split_sms"], errors="coerce")
    return out


def xqa_late_loads(x10: pd.DataFrame, x11: pd.DataFrame, x12: pd.DataFrame, hw: HardwareSpec,
                   eff: Efficiency | None = None, bounds: tuple = (0.0, 60.0)) -> tuple[float, float, float, int]:
    """simulator.kernels.xqa.XQA_LATE_LOADS fitted ONLY on xqa_late_fit_rows(x10, x11, x12), every other term as `eff`
    prices it (a one-dimensional bounded search of the rows' rms log error with XQA_LATE on). Returns (loads, rms, rms
    at 1 load, rows); the module constants are restored."""
    from hwmodels import roofline as RF

    keep = RF.SM_STREAM_SOFT
    try:   # fitted before the sixteenth grid's soft knee (SM_STREAM_SOFT) and grid 17's share: reproduces the HARD loads
        RF.SM_STREAM_SOFT = ()
        with xqa_before_spec_tile():
            return _xqa_share_search(xqa_late_fit_rows(x10, x11, x12), hw, eff or hw.efficiency, bounds, "XQA_LATE",
                                     "XQA_LATE_LOADS")
    finally:
        RF.SM_STREAM_SOFT = keep


#: the fourteenth xqa blind grid's measured rows and the prices committed before them
XQA_X14_GLOB, XQA_X14_PRED_CSV = "xqa_x14_nvidia*.csv", "xqa_x14_predictions.csv"


def load_xqa_x14(data_dir: Path = DATA_DIR) -> pd.DataFrame:
    """The fourteenth grid's measured rows (failed rows dropped) joined with the committed prices on the shape and its
    role: base_err_pct / new_err_pct (%); empty when either file is missing."""
    files = sorted(p for p in Path(data_dir).glob(XQA_X14_GLOB) if "_grids_" not in p.name and p.suffix == ".csv"
                   and not p.stem.endswith("_nvidia-smi"))
    pp = Path(data_dir) / XQA_X14_PRED_CSV
    if not files or not pp.is_file():
        return pd.DataFrame()
    df = pd.concat([load(f) for f in files], ignore_index=True)
    df = df[df["note"] == ""].reset_index(drop=True)
    out = join_prices(df, pd.read_csv(pp), list(XQA_KEYS) + ["role"],
                      {"pred_base_us": "base_err_pct", "pred_new_us": "new_err_pct"}, ("model_commit", "base_commit"))
    out.attrs["file"] = " + ".join(f.name for f in files)
    return out


#: the fifteenth xqa blind grid's measured rows (the nopdl diagnostics among them) and the prices committed before them;
#: the diagnostic scan measured after its call (xqa_x15d_*.csv, LOOKED-AT)
XQA_X15_GLOB, XQA_X15_PRED_CSV = "xqa_x15_nvidia*.csv", "xqa_x15_predictions.csv"
XQA_X15D_GLOB = "xqa_x15d_nvidia*.csv"


def _measured(data_dir: Path, glob: str) -> tuple[pd.DataFrame, list]:
    files = sorted(p for p in Path(data_dir).glob(glob) if "_grids_" not in p.name and p.suffix == ".csv"
                   and not p.stem.endswith("_nvidia-smi"))
    if not files:
        return pd.DataFrame(), files
    df = pd.concat([load(f) for f in files], ignore_index=True)
    return df[df["note"] == ""].reset_index(drop=True), files


def load_xqa_x15(data_dir: Path = DATA_DIR) -> pd.DataFrame:
    """The fifteenth grid's measured rows (failed rows dropped) joined with the committed prices on the shape, its role
    and pdl: base_err_pct / new_err_pct (%); empty when either file is missing."""
    df, files = _measured(data_dir, XQA_X15_GLOB)
    pp = Path(data_dir) / XQA_X15_PRED_CSV
    if not len(df) or not pp.is_file():
        return pd.DataFrame()
    out = join_prices(df, pd.read_csv(pp), list(XQA_KEYS) + ["role", "pdl"],
                      {"pred_base_us": "base_err_pct", "pred_new_us": "new_err_pct"}, ("model_commit", "base_commit"))
    out.attrs["file"] = " + ".join(f.name for f in files)
    return out


def load_xqa_x15d(data_dir: Path = DATA_DIR) -> pd.DataFrame:
    """The diagnostic scan measured after the fifteenth grid's call (failed rows dropped; empty when none)."""
    return _measured(data_dir, XQA_X15D_GLOB)[0]


@contextmanager
def xqa_before_soft():
    """The xqa model before the sixteenth grid's soft knee (hwmodels.roofline SM_STREAM_SOFT off, XQA_LATE_LOADS at
    XQA_LATE_LOADS_HARD): what the fourteenth and fifteenth grids' committed prices were made with."""
    from hwmodels import roofline as RF

    keep = (RF.SM_STREAM_SOFT, XQ.XQA_LATE_LOADS)
    with xqa_before_spec_tile():
        try:
            RF.SM_STREAM_SOFT, XQ.XQA_LATE_LOADS = (), XQ.XQA_LATE_LOADS_HARD
            yield
        finally:
            RF.SM_STREAM_SOFT, XQ.XQA_LATE_LOADS = keep


@contextmanager
def xqa_before_spec_tile():
    """The xqa model before the seventeenth grid's verification chain premium (simulator.kernels.xqa
    XQA_SPEC_TILE_SHARE 0, and so XQA_SPEC_STREAM_SHARE 0): what the sixteenth grid's committed prices (and every fit
    before grid 17) were made with."""
    keep = (XQ.XQA_SPEC_TILE_SHARE, XQ.XQA_SPEC_STREAM_SHARE)
    try:
        XQ.XQA_SPEC_TILE_SHARE, XQ.XQA_SPEC_STREAM_SHARE = 0.0, 0.0
        yield
    finally:
        XQ.XQA_SPEC_TILE_SHARE, XQ.XQA_SPEC_STREAM_SHARE = keep


@contextmanager
def xqa_before_spec_stream():
    """The xqa model before the eighteenth grid's verification per-SM stream premium (simulator.kernels.xqa
    XQA_SPEC_STREAM_SHARE 0, XQA_SPEC_TILE_SHARE at grid 17's shipped XQA_SPEC_TILE_SHARE_CANDIDATE): main at f9af03b,
    what the seventeenth grid's shipped prices and the eighteenth grid's base prices were made with."""
    keep = (XQ.XQA_SPEC_TILE_SHARE, XQ.XQA_SPEC_STREAM_SHARE)
    try:
        XQ.XQA_SPEC_TILE_SHARE, XQ.XQA_SPEC_STREAM_SHARE = XQ.XQA_SPEC_TILE_SHARE_CANDIDATE, 0.0
        yield
    finally:
        XQ.XQA_SPEC_TILE_SHARE, XQ.XQA_SPEC_STREAM_SHARE = keep


#: the sixteenth xqa blind grid's measured rows and the prices committed before them
XQA_X16_GLOB, XQA_X16_PRED_CSV = "xqa_x16_nvidia*.csv", "xqa_x16_predictions.csv"


def load_xqa_x16(data_dir: Path = DATA_DIR) -> pd.DataFrame:
    """The sixteenth grid's measured rows (failed rows dropped) joined with the committed prices on the shape and its
    role: base_err_pct / new_err_pct (%); empty when either file is missing."""
    df, files = _measured(data_dir, XQA_X16_GLOB)
    pp = Path(data_dir) / XQA_X16_PRED_CSV
    if not len(df) or not pp.is_file():
        return pd.DataFrame()
    out = join_prices(df, pd.read_csv(pp), list(XQA_KEYS) + ["role"],
                      {"pred_base_us": "base_err_pct", "pred_new_us": "new_err_pct"}, ("model_commit", "base_commit"))
    out.attrs["file"] = " + ".join(f.name for f in files)
    return out


#: the grids whose bf16 PDL-on rows fit the soft knee jointly with XQA_LATE_LOADS (all LOOKED-AT before the sixteenth grid)
XQA_SOFT_FIT_GLOBS = (XQA_X10_GLOB, XQA_X11_GLOB, XQA_X12_GLOB, XQA_X14_GLOB, XQA_X15_GLOB, XQA_X15D_GLOB)


def xqa_soft_fit_rows(data_dir: Path = DATA_DIR) -> pd.DataFrame:
    """The fit rows of hwmodels.roofline.SM_STREAM_SOFT_P and XQA_LATE_LOADS (jointly), named before the sixteenth grid:
    every bf16 (mha.cu) row timed with programmatic dependent launch on of the tenth, eleventh (the per-SM stream scan
    included), twelfth, fourteenth and fifteenth grids and the fifteenth grid's diagnostic scan (x15d); LOOKED-AT."""
    parts = []
    for g in XQA_SOFT_FIT_GLOBS:
        d = _measured(data_dir, g)[0]
        if not len(d):
            continue
        keep = d["dtype"].to_numpy() == "bf16"
        if "pdl" in d.columns:
            keep &= pd.to_numeric(d["pdl"], errors="coerce").fillna(1).to_numpy() != 0
        parts.append(d[keep])
    out = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    if len(out) and "split_sms" in out.columns:
        out["split_sms"] = pd.to_numeric(out["split_sms"], errors="coerce")
    return out.reset_index(drop=True)


def xqa_soft_knee(fit: pd.DataFrame, hw: HardwareSpec, eff: Efficiency | None = None,
                  ps=tuple(np.round(np.arange(1.5, 8.01, 0.25), 2)),
                  bounds: tuple = (0.0, 60.0), rates=None) -> tuple[float, float, float, float, float, int]:
    """hwmodels.roofline.SM_STREAM_SOFT_P and simulator.kernels.xqa.XQA_LATE_LOADS fitted JOINTLY on the rows `fit`
    (xqa_soft_fit_rows), every other term as `eff` prices them: for each p of the grid `ps` (SM_STREAM_SOFT on) and,
    where `rates` is given, each attn_xqa per-SM rate of that grid (hwmodels.roofline.SM_STREAM_CEILING, bytes / s; None
    = the committed rate) a bounded search in the loads (XQA_LATE on); the set of the smallest rms log error. Returns
    (p, loads, rate, rms, rms of the model before (soft off, XQA_LATE_LOADS_HARD, the committed rate), rows); the module
    constants are restored."""
    from scipy.optimize import minimize_scalar

    from hwmodels import roofline as RF

    eff = eff or hw.efficiency
    meas = fit["median_us"].to_numpy(float)
    keep = (RF.SM_STREAM_SOFT, RF.SM_STREAM_SOFT_P, XQ.XQA_LATE, XQ.XQA_LATE_LOADS)
    keep_rate = dict(RF.SM_STREAM_CEILING)
    rates = (keep_rate["attn_xqa"],) if rates is None else tuple(rates)

    def rms(loads):
        XQ.XQA_LATE_LOADS = float(loads)
        ops = build_ops(fit, hw.units, _smem(hw))
        return float(np.sqrt(np.mean(np.log(predict_us(ops, hw, eff, len(fit)) / meas) ** 2)))

    keep_spec = (XQ.XQA_SPEC_TILE_SHARE, XQ.XQA_SPEC_STREAM_SHARE)
    try:
        # fitted before the seventeenth grid's verification chain premium (and the eighteenth's stream premium)
        XQ.XQA_SPEC_TILE_SHARE, XQ.XQA_SPEC_STREAM_SHARE = 0.0, 0.0
        XQ.XQA_LATE = True
        RF.SM_STREAM_SOFT = ()
        base = rms(XQ.XQA_LATE_LOADS_HARD)
        RF.SM_STREAM_SOFT = RF.SM_STREAM_SOFT_CANDIDATE
        best = None
        for rate in rates:
            RF.SM_STREAM_CEILING = {**keep_rate, "attn_xqa": float(rate)}
            for p in ps:
                RF.SM_STREAM_SOFT_P = float(p)
                r = minimize_scalar(rms, bounds=bounds, method="bounded", options={"xatol": 1e-3})
                if best is None or r.fun < best[3]:
                    best = (float(p), float(r.x), float(rate), float(r.fun))
        return best[0], best[1], best[2], best[3], base, len(fit)
    finally:
        RF.SM_STREAM_SOFT, RF.SM_STREAM_SOFT_P, XQ.XQA_LATE, XQ.XQA_LATE_LOADS = keep
        RF.SM_STREAM_CEILING = keep_rate
        XQ.XQA_SPEC_TILE_SHARE, XQ.XQA_SPEC_STREAM_SHARE = keep_spec



#: the seventeenth xqa blind grid's measured rows and the prices committed before them
XQA_X17_GLOB, XQA_X17_PRED_CSV = "xqa_x17_nvidia*.csv", "xqa_x17_predictions.csv"


def load_xqa_x17(data_dir: Path = DATA_DIR) -> pd.DataFrame:
    """The seventeenth grid's measured rows (failed rows dropped) joined with the committed prices on the shape and its
    role: base_err_pct / new_err_pct (%); empty when either file is missing."""
    df, files = _measured(data_dir, XQA_X17_GLOB)
    pp = Path(data_dir) / XQA_X17_PRED_CSV
    if not len(df) or not pp.is_file():
        return pd.DataFrame()
    out = join_prices(df, pd.read_csv(pp), list(XQA_KEYS) + ["role"],
                      {"pred_base_us": "base_err_pct", "pred_new_us": "new_err_pct"}, ("model_commit", "base_commit"))
    out.attrs["file"] = " + ".join(f.name for f in files)
    return out

#: the grids whose bf16 q 2 rows fit simulator.kernels.xqa.XQA_SPEC_TILE_SHARE (all LOOKED-AT before the seventeenth grid)
XQA_SPEC_TILE_FIT_GLOBS = XQA_SOFT_FIT_GLOBS + (XQA_X16_GLOB,)


def xqa_spec_tile_fit_rows(data_dir: Path = DATA_DIR) -> pd.DataFrame:
    """The fit rows of XQA_SPEC_TILE_SHARE, named before the seventeenth grid: every bf16 (mha.cu) q 2 row timed with
    programmatic dependent launch on of grids 10-16 (the soft knee's grids and the sixteenth) whose CTAs walk at least
    XQA_SPEC_TILE_MIN_TILES tiles (the rows the share prices); LOOKED-AT."""
    parts = []
    for g in XQA_SPEC_TILE_FIT_GLOBS:
        d = _measured(data_dir, g)[0]
        if not len(d):
            continue
        keep = (d["dtype"].to_numpy() == "bf16") & (pd.to_numeric(d["q_rows"]).to_numpy() == 2)
        if "pdl" in d.columns:
            keep &= pd.to_numeric(d["pdl"], errors="coerce").fillna(1).to_numpy() != 0
        parts.append(d[keep])
    out = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    if not len(out):
        return out
    out["split_sms"] = pd.to_numeric(out.get("split_sms"), errors="coerce")
    return out[xqa_chain_tiles(out) >= XQ.XQA_SPEC_TILE_MIN_TILES].reset_index(drop=True)


def xqa_chain_tiles(df: pd.DataFrame, sms: int = 132) -> np.ndarray:
    """Serial 256-key tiles per CTA of mha.cu under the port's split (the launcher handed split_sms, else `sms`)."""
    a = {c: df[c].to_numpy(float) for c in ("batch", "context", "kv_heads")}
    sp = pd.to_numeric(df["split_sms"], errors="coerce").to_numpy(float) if "split_sms" in df else np.full(len(df), np.nan)
    mb = XQ.port_split(a["batch"], a["context"], a["kv_heads"], np.where(np.isnan(sp), float(sms), sp),
                       np.zeros(len(df), bool), df["page_size"].to_numpy(float))
    return np.ceil(np.ceil(a["context"] / XQ.XQA_TILE) / mb)


def xqa_spec_tile_share(fit: pd.DataFrame, hw: HardwareSpec, eff: Efficiency | None = None,
                        bounds: tuple = (0.0, 1.0)) -> tuple[float, float, float, int]:
    """simulator.kernels.xqa.XQA_SPEC_TILE_SHARE fitted (one dimension, every other term as committed) on the rows `fit`
    (xqa_spec_tile_fit_rows): the share of the smallest rms log error. Returns (share, rms, rms at share 0, rows); the
    module constant is restored."""
    from scipy.optimize import minimize_scalar

    eff = eff or hw.efficiency
    meas = fit["median_us"].to_numpy(float)
    keep = (XQ.XQA_SPEC_TILE_SHARE, XQ.XQA_SPEC_STREAM_SHARE)

    def rms(share):
        XQ.XQA_SPEC_TILE_SHARE = float(share)
        ops = build_ops(fit, hw.units, _smem(hw))
        return float(np.sqrt(np.mean(np.log(predict_us(ops, hw, eff, len(fit)) / meas) ** 2)))

    try:
        XQ.XQA_SPEC_STREAM_SHARE = 0.0   # fitted before the eighteenth grid's stream premium
        base = rms(0.0)
        r = minimize_scalar(rms, bounds=bounds, method="bounded", options={"xatol": 1e-4})
        return float(r.x), float(r.fun), base, len(fit)
    finally:
        XQ.XQA_SPEC_TILE_SHARE, XQ.XQA_SPEC_STREAM_SHARE = keep


def xqa_spec_stream_fit_rows(data_dir: Path = DATA_DIR) -> pd.DataFrame:
    """The fit rows of simulator.kernels.xqa.XQA_SPEC_STREAM_SHARE, named before the eighteenth grid: the bf16 q 2 rows
    of >= XQA_SPEC_TILE_MIN_TILES tiles per CTA of grids 10-16 (xqa_spec_tile_fit_rows) and of the seventeenth grid
    (PDL on); LOOKED-AT."""
    a = xqa_spec_tile_fit_rows(data_dir)
    d = _measured(data_dir, XQA_X17_GLOB)[0]
    if len(d):
        keep = (d["dtype"].to_numpy() == "bf16") & (pd.to_numeric(d["q_rows"]).to_numpy() == 2)
        if "pdl" in d.columns:
            keep &= pd.to_numeric(d["pdl"], errors="coerce").fillna(1).to_numpy() != 0
        d = d[keep].copy()
        d["split_sms"] = pd.to_numeric(d.get("split_sms"), errors="coerce")
        d = d[xqa_chain_tiles(d) >= XQ.XQA_SPEC_TILE_MIN_TILES]
    out = pd.concat([x for x in (a, d) if len(x)], ignore_index=True) if (len(a) or len(d)) else pd.DataFrame()
    return out.reset_index(drop=True)


def xqa_spec_stream_share(fit: pd.DataFrame, hw: HardwareSpec, eff: Efficiency | None = None,
                          bounds: tuple = (0.0, 1.0)) -> tuple[float, float, float, int]:
    """simulator.kernels.xqa.XQA_SPEC_STREAM_SHARE fitted (one dimension, XQA_SPEC_TILE_SHARE 0, every other term as
    committed) on the rows `fit` (xqa_spec_stream_fit_rows). Returns (share, rms log error, rms of main's model (the
    committed XQA_SPEC_TILE_SHARE, stream share 0), rows); the module constants are restored."""
    from scipy.optimize import minimize_scalar

    eff = eff or hw.efficiency
    meas = fit["median_us"].to_numpy(float)
    keep = (XQ.XQA_SPEC_TILE_SHARE, XQ.XQA_SPEC_STREAM_SHARE)

    def rms(share, tile=0.0):
        XQ.XQA_SPEC_TILE_SHARE, XQ.XQA_SPEC_STREAM_SHARE = float(tile), float(share)
        ops = build_ops(fit, hw.units, _smem(hw))
        return float(np.sqrt(np.mean(np.log(predict_us(ops, hw, eff, len(fit)) / meas) ** 2)))

    try:
        base = rms(0.0, keep[0])
        r = minimize_scalar(rms, bounds=bounds, method="bounded", options={"xatol": 1e-4})
        return float(r.x), float(r.fun), base, len(fit)
    finally:
        XQ.XQA_SPEC_TILE_SHARE, XQ.XQA_SPEC_STREAM_SHARE = keep


#: the eighteenth xqa blind grid's measured rows and the prices committed before them
XQA_X18_GLOB, XQA_X18_PRED_CSV = "xqa_x18_nvidia*.csv", "xqa_x18_predictions.csv"


def load_xqa_x18(data_dir: Path = DATA_DIR) -> pd.DataFrame:
    """The eighteenth grid's measured rows (failed rows dropped) joined with the committed prices on the shape and its
    role: base_err_pct / new_err_pct (%); empty when either file is missing."""
    df, files = _measured(data_dir, XQA_X18_GLOB)
    pp = Path(data_dir) / XQA_X18_PRED_CSV
    if not len(df) or not pp.is_file():
        return pd.DataFrame()
    out = join_prices(df, pd.read_csv(pp), list(XQA_KEYS) + ["role"],
                      {"pred_base_us": "base_err_pct", "pred_new_us": "new_err_pct"}, ("model_commit", "base_commit"))
    out.attrs["file"] = " + ".join(f.name for f in files)
    return out


def load_xqa_blind(data_dir: Path = DATA_DIR, grid: str = "blind") -> pd.DataFrame:
    """The xqa blind grid's (grid "blind"), the CTA_ALONE grid's (grid "alone") or the third blind grid's (grid "s6")
    measured rows joined with the prices committed before the measurement: base_err_pct (the model at base_commit) and
    new_err_pct (the model at model_commit), with regime labels; empty when either is missing."""
    glob, pred = {"blind": (XQA_BLIND_GLOB, XQA_BLIND_PRED_CSV), "alone": (XQA_ALONE_GLOB, XQA_ALONE_PRED_CSV),
                  "s6": (XQA_S6_GLOB, XQA_S6_PRED_CSV), "x4": (XQA_X4_GLOB, XQA_X4_PRED_CSV),
                  "x5": (XQA_X5_GLOB, XQA_X5_PRED_CSV), "x6": (XQA_X6_GLOB, XQA_X6_PRED_CSV),
                  "x7": (XQA_X7_GLOB, XQA_X7_PRED_CSV), "x8": (XQA_X8_GLOB, XQA_X8_PRED_CSV),
                  "x9": (XQA_X9_GLOB, XQA_X9_PRED_CSV)}[grid]
    return newest_blind_grid(data_dir, glob, pred, XQA_KEYS)


MERGE_SHARES = tuple(np.round(np.arange(0.45, 0.86, 0.05), 2))


def _fi_mla_scan(df: pd.DataFrame, hw: HardwareSpec, grids: pd.DataFrame | None, attr: str,
                 shares) -> list[tuple[float, float]]:
    """For each share set simulator.kernels.flashinfer.<attr>, refit the fi_mla group on df's fi_mla rows and record its
    rms log error (a one-dimensional fit of the rows the other terms fit). Returns [(share, rms)]; the attribute is
    restored."""
    from simulator.kernels import flashinfer as fi

    rows = df[df["family"] == "fi_mla"].reset_index(drop=True)
    keep = getattr(fi, attr)
    out = []
    try:
        for s in shares:
            setattr(fi, attr, float(s))
            _, meta = fit(rows, hw, grids)
            out.append((float(s), float(meta["fi_mla"]["rms_log_error"])))
    finally:
        setattr(fi, attr, keep)
    return out


def merge_share_scan(df: pd.DataFrame, hw: HardwareSpec, grids: pd.DataFrame | None = None,
                     shares=MERGE_SHARES) -> list[tuple[float, float]]:
    """FlashInfer MLA's merge link (simulator.kernels.flashinfer.FI_MLA_MERGE_LOAD_SHARE: one link of the in-kernel
    merge's chain as a share of a dependent DRAM load) chosen on the fit rows: for each share the fi_mla group is
    refitted on the campaign's fit rows (middle regime) and its rms log error recorded. Returns [(share, rms)]; the
    module keeps the share with the smallest error."""
    return _fi_mla_scan(df, hw, grids, "FI_MLA_MERGE_LOAD_SHARE", shares)


PARTIAL_SHARES = tuple(np.round(np.arange(0.0, 1.01, 0.1), 2))


def partial_stage_scan(df: pd.DataFrame, hw: HardwareSpec, grids: pd.DataFrame | None = None,
                       shares=PARTIAL_SHARES) -> list[tuple[float, float]]:
    """FlashInfer MLA's partial last stage (simulator.kernels.flashinfer.FI_MLA_PARTIAL_STAGE_SHARE: the part of a
    stage's chain time that does not scale with its tokens) chosen on the fit rows as merge_share_scan chooses the merge
    link: for each share the fi_mla group is refitted and its rms log error recorded. Returns [(share, rms)]."""
    return _fi_mla_scan(df, hw, grids, "FI_MLA_PARTIAL_STAGE_SHARE", shares)


#: the per-SM rates (GB/s) FlashInfer MLA's per-item first-stage fill is scanned over (1e6 = no fill term)
FILL_RATES_GBS = (10.0, 15.0, 20.0, 25.0, 30.0, 40.0, 60.0, 1e6)


def fill_rate_scan(df: pd.DataFrame, hw: HardwareSpec, grids: pd.DataFrame | None = None,
                   rates=FILL_RATES_GBS) -> list[tuple[float, float]]:
    """FlashInfer MLA's per-item first-stage fill (simulator.kernels.flashinfer.FI_MLA_FILL_RATE_SM) chosen on the fit
    rows as merge_share_scan chooses the merge link: for each per-SM rate (GB/s) the fi_mla group is refitted and its
    rms log error recorded. Returns [(GB/s, rms)]."""
    res = _fi_mla_scan(df, hw, grids, "FI_MLA_FILL_RATE_SM", tuple(r * 1e9 for r in rates))
    return [(r / 1e9, e) for r, e in res]


CTA_LAUNCH_SHARES = (0.0, 0.25, 0.47, 0.75, 1.0, 1.5, 2.0, 3.0)


def cta_launch_scan(df: pd.DataFrame, hw: HardwareSpec, grids: pd.DataFrame | None = None,
                    shares=CTA_LAUNCH_SHARES) -> list[tuple[float, float, float]]:
    """The CUDA-core decode call's CTA launch share (simulator.kernels.flashinfer.FI_DECODE_CTA_LAUNCH_SHARE) on the fit
    rows: for each share the decode groups are refitted on df's fi_decode rows (+ the lone-CTA fit rows) and their rms
    log errors recorded. Returns [(share, rms bf16, rms fp8)]; the module's value is the measured one (its docstring),
    this scan is shown beside it."""
    from simulator.kernels import flashinfer as fi

    rows = df[df["family"] == "fi_decode"].reset_index(drop=True)
    keep = fi.FI_DECODE_CTA_LAUNCH_SHARE
    out = []
    try:
        for s in shares:
            fi.FI_DECODE_CTA_LAUNCH_SHARE = float(s)
            _, meta = fit(rows, hw, grids)
            out.append((float(s), float(meta["fi_decode"]["rms_log_error"]),
                        float(meta["fi_decode_fp8kv"]["rms_log_error"])))
    finally:
        fi.FI_DECODE_CTA_LAUNCH_SHARE = keep
    return out


#: the per-SM rates the MLA kinds' per-request / per-item tile terms are scanned over (GB/s; 1e6 = no bytes term)
RATES_GBS = (15.0, 20.0, 25.0, 30.0, 35.0, 42.5, 50.0, 60.0, 80.0, 1e6)


def rate_scan(df: pd.DataFrame, hw: HardwareSpec, grids: pd.DataFrame | None = None, rates=RATES_GBS):
    """The MLA kinds' tile rates chosen on the fit rows (the campaign's middle rows + the mla_fit2 rows): FlashMLA's
    exposed per-request Q tile (simulator.kernels.flashmla.FM_Q_RATE_SM) and FlashInfer MLA's per-item output store
    (simulator.kernels.flashinfer.FI_MLA_O_RATE_SM). For each rate the family's group is refitted and its rms log
    error recorded. Returns {family: [(GB/s, rms)]}; the modules keep the rate with the smallest error."""
    from simulator.kernels import flashinfer as fi
    from simulator.kernels import flashmla as fm

    out = {}
    for fam, mod, attr in (("flashmla", fm, "FM_Q_RATE_SM"), ("fi_mla", fi, "FI_MLA_O_RATE_SM")):
        rows = df[df["family"] == fam].reset_index(drop=True)
        keep = getattr(mod, attr)
        out[fam] = []
        try:
            for r in rates:
                setattr(mod, attr, float(r) * 1e9)
                _, meta = fit(rows, hw, grids)
                out[fam].append((float(r), float(meta[fam]["rms_log_error"])))
        finally:
            setattr(mod, attr, keep)
    return out


def evaluate(df: pd.DataFrame, hw: HardwareSpec, eff: Efficiency, first: Efficiency | None = None) -> pd.DataFrame:
    """Every row with its prediction, error, part (fit / held-out) and regime labels; `first_err_pct` from the
    first look's efficiency when given."""
    smem = float(hw.smem_per_unit_bytes or 233472)
    ops = build_ops(df, hw.units, smem)
    out = pd.concat([df.reset_index(drop=True), regime_labels(df).drop(columns=["family"])], axis=1)
    pred = predict_us(ops, hw, eff, len(df))
    out["pred_us"] = pred
    out["err_pct"] = (pred / out["median_us"] - 1.0) * 100.0
    if first is not None:
        out["first_err_pct"] = (predict_us(ops, hw, first, len(df)) / out["median_us"] - 1.0) * 100.0
    fit3 = np.logical_or(*fa3_fit_rows(df)) if len(df) else np.zeros(0, bool)
    fam = df["family"].to_numpy()
    fitx = xqa_fit_rows(df)
    out["part"] = np.where(np.where(fam == "fa3", fit3, np.where(fam == "xqa", fitx, fit_rows(df))), "fit", "held-out")
    return out


def accuracy(ev: pd.DataFrame, by=("family", "phase", "kv", "ctx_regime", "batch_regime"), col="err_pct",
             part="held-out") -> pd.DataFrame:
    g = ev[ev["part"] == part] if part else ev
    rows = []
    for key, x in g.groupby(list(by)):
        e = x[col].abs()
        rows.append({**dict(zip(by, key if isinstance(key, tuple) else (key,))), "n": len(x),
                     "median": float(np.median(e)), "p90": float(np.percentile(e, 90)),
                     "signed": float(np.median(x[col]))})
    t = pd.DataFrame(rows)
    if len(t):
        t["goal"] = np.where((t["median"] <= 10.0) & (t["p90"] <= 25.0), "met", "MISSED")
    return t


def latest(data_dir: Path) -> tuple[Path | None, Path | None]:
    """The newest campaign CSV and its launch-profile CSV."""
    fs = sorted(p for p in DF.glob(Path(data_dir), DATA_GLOB) if "_grids" not in p.name)
    if not fs:
        return None, None
    f = fs[-1]
    g = DF.resolve(f.with_name(DF.name(f).replace("production_attention_", "production_attention_grids_", 1)))
    return f, (g if g.is_file() else None)


# ---------------------------------------------------------------------------------------------------------------------
# first-look error, writing, command line
# ---------------------------------------------------------------------------------------------------------------------
FIRST_LOOK_CSV = "first_look_flashinfer_decode.csv"
SHAPE_KEYS = ("family", "model", "dtype", "heads", "kv_heads", "head_dim", "batch", "q_rows", "context", "page_size")


def first_look_errors(df: pd.DataFrame, data_dir: Path) -> pd.DataFrame:
    """The committed first look (priced before the measurement) joined with the measured rows: first_look_err_pct."""
    p = DF.resolve(Path(data_dir) / FIRST_LOOK_CSV)
    if not p.is_file():
        return pd.DataFrame()
    fl = pd.read_csv(p)
    keys = [k for k in SHAPE_KEYS if k in fl.columns and k in df.columns]
    m = df.merge(fl[keys + ["first_look_us"]], on=keys, how="inner")
    m["first_look_err_pct"] = (m["first_look_us"] / m["median_us"] - 1.0) * 100.0
    return pd.concat([m.reset_index(drop=True), regime_labels(m).drop(columns=["family"])], axis=1)


FRESH_PREDICTIONS_CSV = "production_attention_fresh_predictions.csv"
FRESH_GLOB = "production_attention_fresh_nvidia*.csv"
#: the same shapes priced by the model before this revision (code at 4423c3e, fixed before the fresh grid existed;
#: priced after the measurement, reproducible from that commit)
FRESH_EARLIER_CSV = "production_attention_fresh_predictions_4423c3e.csv"


def fresh_errors(data_dir: Path = DATA_DIR, predictions: str = FRESH_PREDICTIONS_CSV) -> tuple[pd.DataFrame, str]:
    """The fresh grid (measure_production_attention.py --grid fresh) measured, joined with its predictions committed
    before the measurement (lab/kernels/predict_fresh_production_attention.py): err_pct = pred / measured - 1, with
    regime labels. Returns (rows, the model commit that priced them); empty when either file is missing.
    `predictions` may name another model's file (FRESH_EARLIER_CSV: the model before the rules were revised)."""
    p = DF.resolve(Path(data_dir) / predictions)
    ms = sorted(p for p in DF.glob(Path(data_dir), FRESH_GLOB) if "_grids" not in p.name)
    if not p.is_file() or not ms:
        return pd.DataFrame(), ""
    pr = pd.read_csv(p)
    meas = load(ms[-1])
    keys = [k for k in SHAPE_KEYS if k in pr.columns and k in meas.columns]
    for k in keys:
        if k not in ("family", "model", "dtype"):
            pr[k] = pd.to_numeric(pr[k], errors="coerce")
    m = meas.merge(pr[keys + ["pred_us", "model_commit"]], on=keys, how="inner")
    m["err_pct"] = (m["pred_us"] / m["median_us"] - 1.0) * 100.0
    m["part"] = "fresh"
    commit = str(pr["model_commit"].iloc[0]) if len(pr) else ""
    return pd.concat([m.reset_index(drop=True), regime_labels(m).drop(columns=["family"])], axis=1), commit


OWNED_PARTS = ("memory", "compute", "fixed_us", "sync_us", "cta_slots", "iter_us", "cta_fixed_us", "cta_serial_us",
               "chain_queue")


def own_kinds() -> tuple[str, ...]:
    ks = set(BORROWED) | set(BORROWED.values()) | set(FIRST_LOOK_FROM) | {"attn_fa3_tma", "attn_fa3_persist",
                                                                           "attn_fa3_persist_fp8kv", "attn_prepare_fa3"}
    for fam in FAMILY_KINDS.values():
        ks |= set(fam)
    return tuple(sorted(ks))


def _pooled(ev: pd.DataFrame, col: str | None = None) -> dict:
    """{family: {n, median, p90}} of |error| % (per-regime tables: benchmarks/calibration_accuracy.py)."""
    if ev is None or not len(ev):
        return {}
    col = col or ("first_look_err_pct" if "first_look_err_pct" in ev.columns else "err_pct")
    out = {}
    for fam, g in ev.groupby("family"):
        e = g[col].abs()
        out[str(fam)] = {"n": int(len(g)), "median": round(float(np.median(e)), 1),
                         "p90": round(float(np.percentile(e, 90)), 1)}
    return out


def write(eff: Efficiency, meta: dict, data_file: str, table: pd.DataFrame, first: pd.DataFrame, out_dir: Path,
          target: str = "H100-SXM", fa3_table: pd.DataFrame | None = None, fa3_first: pd.DataFrame | None = None,
          xqa_table: pd.DataFrame | None = None, xqa_first: pd.DataFrame | None = None,
          tv_table: pd.DataFrame | None = None, tv_first: pd.DataFrame | None = None) -> Path:
    """Merge the production kinds' terms into out_dir/<target>.yaml (other fits' terms kept)."""
    from simulator.calibration import checks as C

    p = Path(out_dir) / f"{target}.yaml"
    kinds = own_kinds()
    own: dict = {part: {} for part in OWNED_PARTS}
    src = {"memory": eff.memory, "compute": eff.compute, "fixed_us": eff.fixed_s, "sync_us": eff.sync_s,
           "cta_slots": eff.cta_slots, "iter_us": eff.iter_s, "cta_fixed_us": eff.cta_fixed_s,
           "cta_serial_us": eff.cta_serial_s, "chain_queue": eff.chain_queue}
    scale = {"fixed_us": 1e6, "sync_us": 1e6, "iter_us": 1e6, "cta_fixed_us": 1e6, "cta_serial_us": 1e6}
    for part, d_ in src.items():
        for k in kinds:
            if k in d_:
                own[part][k] = round(float(d_[k]) * scale.get(part, 1.0), 4)
    own["production_attention"] = {
        "source": f"simulator/calibration/fit_production_attention.py on {DF.name(data_file)}: FlashInfer / SGLang Triton / "
                  "FlashMLA kernel families (simulator/kernels), fitted on the middle regime, every other regime held out; "
                  f"never-measured kinds borrow: {', '.join(f'{k} <- {v}' for k, v in meta.get('borrowed', BORROWED).items())}"
                  + ("; attn_fa3 fitted on " + meta["fa3"]["data"] + " (FA4-CuTe's sm_90 forward, flash-attn-4 4.0.0b36, "
                     "lab/kernels/measure_fa4cute_attention.py) on Llama-3.1-8B q 1 page 16 (middle regime and context "
                     "<= 256), attn_fa3_tma's block rate on its contiguous middle rows (fa3_fit_rows)" if "fa3" in meta else "")
                  + ("; attn_xqa / attn_xqa_fp8kv fitted on " + meta["xqa"]["data"] + " (FlashInfer's port of "
                     "TensorRT-LLM's XQA kernels, flashinfer-python 0.6.4, lab/kernels/measure_xqa_attention.py), "
                     "Llama-3.1-8B page-16 decode rows of the middle regime and of context <= 256 (xqa_fit_rows)" if "xqa" in meta else "")
                  + ("; attn_triton_vllm / attn_triton_vllm_fp8kv / attn_combine_triton_vllm fitted on "
                     + meta["triton_vllm"]["data"] + " (vLLM's Triton unified attention @ 001ceb3e run from a copy of its "
                     "source, lab/kernels/measure_triton_vllm_attention.py), Llama-3.1-8B decode rows of the middle "
                     "regime only" if "triton_vllm" in meta else ""),
        "fit": {k: {kk: (round(vv, 4) if isinstance(vv, float) else vv) for kk, vv in m.items() if kk != "params"}
                for k, m in meta.items() if isinstance(m, dict) and k not in ("borrowed",)},
        "accuracy_held_out": _pooled(table),
        "first_look": _pooled(first),
    }
    if fa3_table is not None and len(fa3_table):
        own["production_attention"]["accuracy_held_out"].update(_pooled(fa3_table))
    if fa3_first is not None and len(fa3_first):
        own["production_attention"]["first_look"]["fa3"] = _pooled(fa3_first, "first_struct_err_pct").get("fa3", {})
    if xqa_table is not None and len(xqa_table):
        own["production_attention"]["accuracy_held_out"].update(_pooled(xqa_table))
    if xqa_first is not None and len(xqa_first):
        own["production_attention"]["first_look"]["xqa_main"] = _pooled(xqa_first, "first_main_err_pct").get("xqa", {})
        own["production_attention"]["first_look"]["xqa_struct"] = _pooled(xqa_first, "first_struct_err_pct").get("xqa", {})
    if tv_table is not None and len(tv_table):
        own["production_attention"]["accuracy_held_out"].update(_pooled(tv_table))
    if tv_first is not None and len(tv_first):
        own["production_attention"]["first_look"]["triton_vllm_main"] = _pooled(tv_first, "first_main_err_pct").get(
            "triton_vllm", {})
        own["production_attention"]["first_look"]["triton_vllm_struct"] = _pooled(tv_first, "first_struct_err_pct").get(
            "triton_vllm", {})
    owned = {part: kinds for part in OWNED_PARTS}
    owned["production_attention"] = None
    return C.write_checked(p, C.merge_into(p, own, owned), "")


def _grouped_family_report(label: str, rows: pd.DataFrame, m: dict | None, first_look, data_dir: Path,
                           hw: HardwareSpec, eff) -> tuple[pd.DataFrame | None, pd.DataFrame | None]:
    """A family fitted in groups (xqa, triton_vllm): print its fit (rows, rms per group, terms) and its error per
    regime; return (the evaluated rows, the first look priced before the measurement), (None, None) without rows."""
    if not len(rows):
        return None, None
    ev = evaluate(rows, hw, eff)
    fl = first_look(rows, data_dir)
    print(f"{label}: {m['rows']} fit rows, " + ", ".join(
        f"{k} rms {g['rms_log_error']:.3f}" for k, g in m["groups"].items()) + "; "
          + ", ".join(f"{k} {v:.4g}" for k, v in m["params"].items()))
    print(accuracy(ev, by=("family", "phase", "kv", "ctx_regime", "batch_regime")).round(1).to_string(index=False))
    return ev, fl


def main(argv=None) -> None:
    import argparse

    from hwmodels.spec import FITTED_DIR, load_hardware

    ap = argparse.ArgumentParser(description="fit the production attention families (module docstring)")
    ap.add_argument("--data", default=None, help="campaign CSV (default: the newest in hwmodels/calibration/data)")
    ap.add_argument("--write", action="store_true", help="merge the fitted terms into the shipped H100-SXM file")
    ap.add_argument("--scan-merge", action="store_true",
                    help="print the FlashInfer MLA merge-link scan (merge_share_scan) on the fit rows")
    ap.add_argument("--scan-rates", action="store_true",
                    help="print the MLA kinds' per-request / per-item tile rate scan (rate_scan) on the fit rows")
    ap.add_argument("--scan-fill", action="store_true",
                    help="print FlashInfer MLA's per-item first-stage fill rate scan (fill_rate_scan) on the fit rows")
    ap.add_argument("--scan-sgl-p", action="store_true",
                    help="print SGLang Triton's co-resident knee exponent scan (sgl_coresident_p_scan)")
    ap.add_argument("--scan-cta-launch", action="store_true",
                    help="print the CUDA-core decode call's CTA launch share scan (cta_launch_scan) on the fit rows")
    args = ap.parse_args(argv)
    data_dir = DATA_DIR
    f, g = (Path(args.data), None) if args.data else latest(data_dir)
    if f is None:
        raise SystemExit("no production_attention_*.csv")
    if args.data:
        gg = DF.resolve(f.with_name(DF.name(f).replace("production_attention_", "production_attention_grids_", 1)))
        g = gg if gg.is_file() else None
    df = load(f)
    grids = pd.read_csv(g) if g is not None else None
    hw = load_hardware("H100-SXM")
    fa3 = load_fa3(data_dir)
    _, _, fg = latest_fa3(data_dir)
    xq = load_xqa(data_dir)
    _, xg = latest_xqa(data_dir)
    tv = load_triton_vllm(data_dir)
    _, tg = latest_triton_vllm(data_dir)
    eff, meta = fit(df, hw, grids, fa3, pd.read_csv(fg) if fg is not None else None, xq,
                    pd.read_csv(xg) if xg is not None else None, tv, pd.read_csv(tg) if tg is not None else None)
    ev = evaluate(df, hw, eff)
    table = accuracy(ev)
    fl = first_look_errors(df, data_dir)
    ftab = accuracy(fl, col="first_look_err_pct", part=None) if len(fl) else pd.DataFrame()
    pd.set_option("display.width", 200)
    print(f"{f.name}: {len(df)} timed rows ({df.attrs['failed']} failed)")
    for k, m in meta.items():
        if isinstance(m, dict) and "rows" in m:
            print(f"  {k}: {m.get('rows')} fit rows, rms log error {m.get('rms_log_error', float('nan')):.3f} "
                  f"{m.get('skipped', '')}")
    print(table.round(1).to_string(index=False))
    if len(ftab):
        print("first look (priced from source before measuring):")
        print(ftab.round(1).to_string(index=False))
    if args.scan_cta_launch:
        from simulator.kernels import flashinfer as fi
        print(f"CUDA-core decode CTA launch share (module: {fi.FI_DECODE_CTA_LAUNCH_SHARE}); rms log error on the fit "
              "rows (bf16, fp8):")
        for s_, b_, f_ in cta_launch_scan(df, hw, grids):
            print(f"  {s_:.2f}: {b_:.4f} {f_:.4f}")
    if args.scan_sgl_p:
        print("SGLang Triton co-resident knee exponent (hwmodels.roofline CHAIN_ISSUE_HIDDEN_P); rms log error:")
        for p_, r_ in sgl_coresident_p_scan(df, hw, data_dir):
            print(f"  {p_:.1f}  {r_:.4f}")
    if args.scan_merge:
        from simulator.kernels import flashinfer as fi
        print(f"FlashInfer MLA merge link share (module: {fi.FI_MLA_MERGE_LOAD_SHARE}); rms log error on the fit rows:")
        for s_, r_ in merge_share_scan(df, hw, grids):
            print(f"  {s_:.2f}  {r_:.4f}")
    if args.scan_fill:
        from simulator.kernels import flashinfer as fi
        print(f"FlashInfer MLA per-item first-stage fill rate (module: {fi.FI_MLA_FILL_RATE_SM / 1e9:g} GB/s per SM); "
              "rms log error on the fit rows: " + ", ".join(f"{r_:g} {e_:.4f}" for r_, e_ in fill_rate_scan(df, hw, grids)))
    if args.scan_rates:
        for fam_, res in rate_scan(df, hw, grids).items():
            print(f"{fam_} per-SM tile rate (GB/s): rms log error on the fit rows: "
                  + ", ".join(f"{r_:g} {e_:.4f}" for r_, e_ in res))
    ev3 = fl3 = None
    if len(fa3):
        ev3 = evaluate(fa3, hw, eff)
        ev3["layout"] = fa3["layout"].to_numpy()
        fl3 = fa3_first_look(fa3, data_dir)
        m3 = meta["fa3"]
        print(f"fa3 (FA4-CuTe sm_90): {m3['rows']} fit rows, rms log error {m3['rms_log_error']:.3f}, "
              + ", ".join(f"{k} {v:.4g}" for k, v in m3["params"].items()))
        print(accuracy(ev3, by=("family", "phase", "layout", "ctx_regime", "batch_regime")).round(1).to_string(index=False))
        if fl3 is not None and len(fl3):
            print("fa3 first look (launch structure of the measured kernel, borrowed attn_fa3 terms):")
            print(accuracy(fl3, by=("family", "phase", "ctx_regime", "batch_regime"), col="first_struct_err_pct",
                           part=None).round(1).to_string(index=False))
    evx, flx = _grouped_family_report("xqa (FlashInfer's port)", xq, meta.get("xqa"), xqa_first_look, data_dir, hw,
                                      eff)
    evt, flt = _grouped_family_report("triton_vllm (vLLM Triton unified attention)", tv, meta.get("triton_vllm"),
                                      triton_vllm_first_look, data_dir, hw, eff)
    if args.write:
        print("wrote", write(eff, meta, str(f), ev[ev["part"] == "held-out"], fl, FITTED_DIR,
                             fa3_table=None if ev3 is None else ev3[ev3["part"] == "held-out"], fa3_first=fl3,
                             xqa_table=None if evx is None else evx[evx["part"] == "held-out"], xqa_first=flx,
                             tv_table=None if evt is None else evt[evt["part"] == "held-out"], tv_first=flt))


if __name__ == "__main__":
    main()


# --- vLLM's Triton kernel, eighth blind grid: warm (the harness), cold (the engine's state) and K/V-cold rows ---
TD_BLIND8_PRED = "triton_decode_blind8_predictions.csv"
TD_BLIND8_GLOB = "triton_decode_blind8_nvidia-*.csv"
TD_BLIND8_KEYS = ["model", "dtype", "batch", "q_rows", "context", "row_role"]


def triton_blind8_regime(df: pd.DataFrame) -> np.ndarray:
    """The eighth grid's regimes, named before the measurement: 'lone 2D' (one sequence, q >= 2), 'short decode'
    (q 1, context <= 512), 'verify' (q >= 2 of 2-16 sequences, context <= 700), else 'control'."""
    q, b, t = (df[c].to_numpy(float) for c in ("q_rows", "batch", "context"))
    return np.where((b == 1) & (q > 1), "lone 2D", np.where((q == 1) & (t <= 512), "short decode",
                    np.where((q > 1) & (t <= 700), "verify", "control")))


def load_triton_decode_blind8(data_dir: Path = DATA_DIR) -> pd.DataFrame:
    """vLLM's Triton kernel's eighth blind grid (lab/kernels/triton_decode_blind8.py: each shape warm, cold and K/V-cold):
    the measured rows joined with the committed prices (main / new / v1 _err_pct), with regime labels and the probe's
    line (attrs); empty when either file is missing."""
    fs = sorted(p for p in DF.glob(Path(data_dir), TD_BLIND8_GLOB) if "_grids" not in p.name and "smi" not in p.name)
    pf = DF.resolve(Path(data_dir) / TD_BLIND8_PRED)
    if not fs or not pf.is_file():
        return pd.DataFrame()
    m = pd.read_csv(fs[-1])
    probe = m[m["row_role"] == "probe"]
    m = m[np.isfinite(pd.to_numeric(m["median_us"], errors="coerce")) & (m["row_role"] != "probe")]
    p = pd.read_csv(pf)
    b = m.merge(p[TD_BLIND8_KEYS + [f"pred_{x}_us" for x in ("base", "new", "v1")] + ["base_commit", "model_commit", "v1_commit"]],
                on=TD_BLIND8_KEYS, how="inner")
    b["main_err_pct"] = (b["pred_base_us"] / b["median_us"] - 1.0) * 100.0
    for lab in ("new", "v1"):
        b[f"{lab}_err_pct"] = (b[f"pred_{lab}_us"] / b["median_us"] - 1.0) * 100.0
    b["regime"] = triton_blind8_regime(b)
    b.attrs["file"] = fs[-1].name
    b.attrs["probe"] = (f"{float(probe['median_us'].iloc[0]):.2f} us per call; {probe['note'].iloc[0]}"
                        if len(probe) else "")
    return b
