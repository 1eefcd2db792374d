"""The production attention families a user can pick (`attention: {dense: {kernel: <family>}}`) and the launches
each prices for a decode / verification call; the rule table with sources (data/attention_families.yaml) and the
engines' default choices (data/engine_attention_defaults.yaml).

family       kernel (engine, version)                                               model kinds
fi_decode    FlashInfer CUDA-core paged decode (SGLang flashinfer backend, G < 4)   GQA (G in 1, 2, 3, 4, 8), 1 row
fi_tc        FlashInfer FA2 tensor-core paged kernel (decode G >= 4 / fp8; verify)  GQA
flashinfer   SGLang's FlashInfer choice: fi_tc for fp8 K/V, G >= 4 or several rows, else fi_decode
fi_mla       FlashInfer persistent MLA kernel (sm_90 backend fa3)                   MLA
fa3 / fa4    FlashAttention-3 (vLLM / SGLang on H100) / -4 (Blackwell)              GQA
flashmla     FlashMLA sm_90 dense decode (vLLM / SGLang, DeepSeek)                  MLA
xqa          TensorRT-LLM XQA (generation phase)                                    GQA
triton_sgl   SGLang's Triton grouped decode kernel                                  GQA, one row
triton_vllm  vLLM's Triton unified attention                                        GQA
"""
from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from hwmodels.yamlio import load_yaml
from simulator.kernels import fa3 as FA3
from simulator.kernels import flashinfer as FI
from simulator.kernels import flashmla as FM
from simulator.kernels import triton_engines as TE
from simulator.kernels import xqa as XQ

DATA = Path(__file__).parent / "data"
GQA_FAMILIES = ("fi_decode", "fi_tc", "flashinfer", "fa3", "fa4", "xqa", "triton_sgl", "triton_vllm")
MLA_FAMILIES = ("fi_mla", "flashmla")
FAMILIES = GQA_FAMILIES + MLA_FAMILIES
#: shared memory per SM when the target does not report it: 228 KiB (H100 / H200 / B200: CUDA's
#: cudaDevAttrMaxSharedMemoryPerMultiprocessor on sm_90 / sm_100)
DEFAULT_SMEM_PER_SM = 233472.0


@functools.lru_cache(maxsize=1)
def family_table() -> dict:
    """data/attention_families.yaml (the rules and their sources)."""
    return load_yaml(DATA / "attention_families.yaml", "attention kernel family table")["families"]


@functools.lru_cache(maxsize=1)
def engine_defaults() -> dict:
    return load_yaml(DATA / "engine_attention_defaults.yaml", "engine attention defaults")["engines"]


def engine_default_kernel(engine: str, architecture: str, mla: bool) -> str:
    """The family an engine runs by default (data/engine_attention_defaults.yaml)."""
    e = engine_defaults()[engine]
    arch = e.get(architecture) or e["hopper"]
    return arch["mla" if mla else "gqa"]


def refuse(family: str, G, q_rows_max: float | None = None, mla: bool = False) -> str | None:
    """Why `family` cannot run this model (None when it can)."""
    if family in MLA_FAMILIES and not mla:
        return f"kernel={family} is an MLA kernel; the model is GQA/MHA"
    if family in GQA_FAMILIES and mla:
        return f"kernel={family} is a GQA/MHA kernel; the model uses MLA (fi_mla or flashmla)"
    if family == "fi_decode" and not np.all(np.isin(np.asarray(G), FI.FI_DECODE_GROUPS)):
        return (f"kernel=fi_decode is compiled for query heads per KV head {FI.FI_DECODE_GROUPS} "
                "(flashinfer utils.cuh DISPATCH_GQA_GROUP_SIZE); use fi_tc")
    return None


def gqa_launches(family: str, B, q, T, Hq, Hkv, d, kvb, page, sms: int, smem_per_sm: float | None = None):
    """Launches of one decode / verification call of a GQA family (q rows per sequence)."""
    smem = float(smem_per_sm or DEFAULT_SMEM_PER_SM)
    q = np.asarray(q, dtype=np.float64)
    if family == "flashinfer":
        G = np.asarray(Hq, dtype=np.float64) / np.asarray(Hkv, dtype=np.float64)
        tc = (np.asarray(kvb) < 2) | (G >= 4) | (q > 1) | ~np.isin(G, FI.FI_DECODE_GROUPS)
        if np.all(tc):
            family = "fi_tc"
        elif not np.any(tc):
            family = "fi_decode"
        else:
            a, _ = FI.fi_tc(B, q, T, Hq, Hkv, d, kvb, page, sms, smem)
            c, _ = FI.fi_decode(B, T, Hq, Hkv, d, kvb, page, sms, smem)
            for ln in a:
                ln.where = tc if ln.where is None else (np.asarray(ln.where) & tc)
            for ln in c:
                ln.where = ~tc if ln.where is None else (np.asarray(ln.where) & ~tc)
            return a + c
    if family == "fi_decode":
        return FI.fi_decode(B, T, Hq, Hkv, d, kvb, page, sms, smem)[0]
    if family == "fi_tc":
        return FI.fi_tc(B, q, T, Hq, Hkv, d, kvb, page, sms, smem)[0]
    if family in ("fa3", "fa4"):
        return FA3.fa3(B, q, T, Hq, Hkv, d, kvb, page, sms, kind="attn_fa4" if family == "fa4" else "attn_fa3")[0]
    if family == "xqa":
        return XQ.xqa(B, q, T, Hq, Hkv, d, kvb, sms, page)[0]
    if family == "triton_sgl":
        return TE.triton_sgl(B, T, Hq, Hkv, d, kvb, sms, smem)[0]
    if family == "triton_vllm":
        return TE.triton_vllm(B, q, T, Hq, Hkv, d, kvb, sms, smem)[0]
    raise ValueError(f"unknown GQA family {family!r}")


#: GQA families whose prefill kernel the product prices from its own launches (gqa_prefill_launches): FlashAttention-3
#: (vLLM's FLASH_ATTN and SGLang's fa3 backend run the same varlen paged forward for a prefill chunk; fa4 takes fa3's
#: structure on attn_fa4's borrowed terms) and FlashInfer (SGLang's flashinfer backend and vLLM's FLASHINFER backend
#: plan BatchPrefillWithPagedKVCacheWrapper, backend fa2, for an extend / chunked-prefill batch, whichever decode
#: kernel they pick). The other families' engines prefill with kernels not modelled here (TensorRT-LLM's context FMHA,
#: the Triton backends' extend kernels): the dense strategy's generic prefill op prices them
PREFILL_FAMILY = {"fa3": "fa3", "fa4": "fa4", "fi_tc": "fi_tc", "fi_decode": "fi_tc", "flashinfer": "fi_tc"}


def gqa_prefill_launches(family: str, B, P, T, Hq, Hkv, d, kvb, page, sms: int, smem_per_sm: float | None = None):
    """Launches of one causal prefill call of a GQA family (PREFILL_FAMILY): B requests of P new query rows each after
    T - P cached tokens (the chunk's own K/V already in the cache), each query tile's keys bounded by its diagonal
    (simulator.kernels.production.causal_tile_blocks); FlashInfer planned without a CUDA graph (an eager prefill)."""
    fam = PREFILL_FAMILY[family]
    causal = np.ones(np.broadcast(B, P, T).shape, dtype=bool)
    if fam == "fi_tc":
        return FI.fi_tc(B, P, T, Hq, Hkv, d, kvb, page, sms, float(smem_per_sm or DEFAULT_SMEM_PER_SM),
                        cuda_graph=False, causal=causal)[0]
    return FA3.fa3(B, P, T, Hq, Hkv, d, kvb, page, sms, kind="attn_fa4" if fam == "fa4" else "attn_fa3",
                   causal=causal)[0]


#: MLA decode families whose engines prefill through FlashAttention-3's varlen forward on Hopper, non-absorbed (the
#: latent expanded to per-head K of d_qk = qk_nope + qk_rope = 192 and V of d_v = 128; hopper/'s hdim 192 x 128
#: instantiations): vLLM's MLA backends (FLASHMLA among them) run the prefill of new tokens with flash_attn_varlen_func,
#: causal, and the cached context through the same kernel by chunks. FlashInfer's MLA backend (fi_mla: SGLang) prefills
#: with FlashInfer's ragged FA2 kernel, not modelled: the dense strategy's generic prefill op prices it
MLA_PREFILL_FAMILY = {"flashmla": "fa3"}


def mla_prefill_launches(family: str, B, P, T, H, d_qk, d_v, sms: int):
    """Launches of one causal MLA prefill call (MLA_PREFILL_FAMILY): B requests of P new query rows after T - P cached
    tokens, every head its own K (d_qk) and V (d_v), bf16 and contiguous (the up-projected K / V, loaded by TMA); the
    prefix's keys are walked by the same causal call (bottom-right aligned), as one chunk; num_splits = 1, the varlen
    interface's default (hopper/flash_attn_interface.py flash_attn_varlen_func, kept by sgl-kernel's wrapper)."""
    if MLA_PREFILL_FAMILY.get(family) != "fa3":
        raise ValueError(f"no MLA prefill kernel modelled for {family!r}")
    return FA3.fa3(B, P, T, H, H, d_qk, 2.0, 0.0, sms, causal=np.ones(np.broadcast(B, P, T).shape, dtype=bool),
                   dv=d_v, paged=False, num_splits=1.0)[0]


def mla_launches(family: str, B, q, T, H, d_ckv, d_kpe, kvb, page, sms: int):
    """Launches of one MLA decode / verification call (absorbed: one latent of d_ckv + d_kpe per token)."""
    if family == "fi_mla":
        return FI.fi_mla(B, q, T, H, d_ckv, d_kpe, kvb, page, sms)[0]
    if family == "flashmla":
        return FM.flashmla(B, q, T, H, d_ckv, d_kpe, kvb, sms)[0]
    raise ValueError(f"unknown MLA family {family!r}")
