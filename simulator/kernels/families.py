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
from dataclasses import replace
from pathlib import Path

import numpy as np

from hwmodels.yamlio import load_yaml
from simulator.kernels import fa3 as FA3
from simulator.kernels import fi_sm90 as SM90
from simulator.kernels import flashinfer as FI
from simulator.kernels import flashmla as FM
from simulator.kernels import triton_engines as TE
from simulator.kernels import xqa as XQ

DATA = Path(__file__).parent / "data"
GQA_FAMILIES = ("fi_decode", "fi_tc", "flashinfer", "fa3", "fa4", "xqa", "triton_sgl", "triton_vllm")
#: vLLM's FLASH_ATTN (FA3 on SM90) calls FlashAttention-3 with the scheduler metadata computed once a step
#: (FlashAttentionMetadataBuilder aot_schedule, get_scheduler_metadata in build(); every layer's
#: flash_attn_varlen_func passes it, so FA3 launches no prepare kernel a layer) and, under its default FULL_AND_PIECEWISE
#: CUDA graphs, num_splits = flash_attn_max_num_splits_for_cuda_graph (32) for batches of <= max_cudagraph_capture_size
#: tokens (512 on SM90 with max_num_seqs 1024), 0 (FA3's heuristic) above (vllm 0.33.0 v1/attention/backends/
#: flash_attn.py build(), config/attention.py, config/compilation.py); FLASH_ATTN_MLA likewise (flashattn_mla.py
#: _build_decode). Measured for GQA (simulator/calibration/fa3_sparse_mla_h200.py SHAPES5, 25 calls as vLLM makes them,
#: 1 x H200, blind): the fa3 family as SGLang's call prices it, 3.2 / 6.5 %, 4 of 4 regimes; a family of vLLM's call
#: from source (no prepare kernel, the cap) 5.4 / 14.4 %, 3 of 4 (one to eight requests -12.5 %): the call launches no
#: prepare kernel (its spans), but its main kernel runs ~5 us longer, the prologue that the prepare's programmatic
#: dependent launch hid where the fa3 terms were fitted. That family was withdrawn: vLLM's GQA decode is priced as fa3
VLLM_FA3_SPLITS = 32.0
VLLM_FULL_GRAPH_TOKENS = 512.0


def vllm_fa3_splits(B, q) -> np.ndarray:
    """num_splits vLLM passes FA3: VLLM_FA3_SPLITS for a step of at most VLLM_FULL_GRAPH_TOKENS query rows, else 0."""
    rows = np.asarray(B, dtype=np.float64) * np.asarray(q, dtype=np.float64)
    return np.where(rows <= VLLM_FULL_GRAPH_TOKENS, VLLM_FA3_SPLITS, 0.0)
MLA_FAMILIES = ("fi_mla", "flashmla", "fa3_mla", "fa3_mla_vllm", "fa3_mla_fp8cast", "fi_mla_fp8cast")
#: FlashAttention-3's MLA decode: its hdim 64 x 512 kernel with qv (the RoPE part as q, the latent as qv and V) over the
#: paged latent cache (simulator/kernels/fa3.py; its terms judged on DSA's decode over top-k pages, simulator/
#: calibration/fa3_sparse_mla_h200.py). fa3_mla: SGLang's fa3 backend, its default for DeepSeek-V3 / R1 on Hopper
#: (server_args _get_default_attn_backend: "fa3" for MLA on SM90 with CUDA >= 12.3; page_size 1; flashattention_
#: backend.py forward_decode: flash_attn_with_kvcache(q_rope, k_rope / c_kv pages, qv = q_nope, page_table = req_to_token,
#: cache_seqlens, cu_seqlens_q, max_seqlen_q = 1 or 1 + drafts, causal, num_splits 0), v0.5.10.post1 / v0.5.23);
#: fa3_mla_vllm: vLLM's FLASH_ATTN_MLA, first in its SM90 MLA priorities with a bf16 cache (platforms/cuda.py
#: _get_backend_priorities @ 0.33.0; flashattn_mla.py forward_mqa: flash_attn_varlen_func with q_v, block 16, the
#: scheduler metadata computed once a step, num_splits as vllm_fa3_splits)
FA3_MLA_FAMILIES = {"fa3_mla": {"num_splits": 0.0, "prepare": True},
                    "fa3_mla_vllm": {"num_splits": "vllm", "prepare": False},
                    "fa3_mla_fp8cast": {"num_splits": 0.0, "prepare": True, "cast_pool": True}}
#: SGLang's fa3 backend over an fp8 (e4m3) MLA cache on Hopper (fa3_mla_fp8cast): its absorbed decode (and the absorbed
#: extend inside its prefill graph) reads the layer's key buffer as `token_to_kv_pool.get_key_buffer(layer_id).to(q.dtype)`
#: (sglang srt/layers/attention/flashattention_backend.py forward_decode @ v0.5.10.post1 lines 1103-1105, @ v0.5.23 line
#: 2350; the fp8 query path is gated on head_dim <= 256 and MLA's is 576, so q stays bf16): a cast of the WHOLE pool
#: buffer of that layer, (max_total_num_tokens + page_size) x 576 fp8 values to bf16, on every layer of every step,
#: before FA3's bf16 qv kernel runs over the cast copy. Priced as PyTorch's copy kernel (op kind `copy`) over the
#: device's KV pool (AttentionLayout.kv_pool_tokens: simulator/memory.py kv_pool_tokens); read from source, the cast's
#: bytes measured on the H200 (simulator/calibration/fa3_sparse_mla_h200.py, the fp8 pool grid)
FP8_POOL_CAST_ELEMS_PER_CTA = 512.0   # PyTorch's unrolled elementwise copy: 128 threads x 4 elements a block
#: the op kind of that cast: `cast` (hwmodels/opkinds.py: PyTorch's up-casting copies, unrolled_elementwise_kernel, bound
#: by their element rate; its terms fitted on the H100's ew_kernel rows, lab/README.md "Op kinds", borrowed by the H200:
#: nothing fitted on the fp8 pool grid). The first look priced it as `copy` (a vectorized copy at the HBM rate): -76 %
#: on the grid's cast rows (0.34 T elements/s measured, 1.02 TB/s); the kind the project's own vocabulary names for
#: this kernel was chosen after that grid was seen (LOOKED-AT there), then judged on the fp8 pool grid 2 (blind)
POOL_CAST_KIND = "cast"
#: SGLang's flashinfer_mla backend (--attention-backend flashinfer on an MLA model) over an fp8 (e4m3) cache
#: (fi_mla_fp8cast): the same whole-pool cast, read from the engine, not from a kernel: its forward_decode, and the paged
#: branch of its forward_extend (an extend over a cached prefix), run FlashInfer's BatchMLAPagedAttentionWrapper on
#: `token_to_kv_pool.get_key_buffer(layer_id).to(q.dtype)`, both of the wrapper's dtypes planned as the model's bf16, on
#: every layer of every step and inside the decode CUDA graph (sgl-project/sglang#35322's description of
#: flashinfer_mla_backend.py, 2026-08-18, and #35291, which names both backends; the index's copies of that file,
#: 877bd661 and 004d79c, predate the cast: there the wrapper was planned at the cache's dtype). Priced as fi_mla over a
#: bf16 cache after pool_cast_launch; a prefix-free extend (the ragged wrapper over the new tokens' own K / V) casts
#: nothing. fi_mla at an fp8 cache stays FlashInfer's own fp8 MLA kernel (what #35322 would have SGLang call)
POOL_CAST_FAMILIES = ("fa3_mla_fp8cast", "fi_mla_fp8cast")


def casts_pool(family: str) -> bool:
    """Whether the family casts the layer's whole fp8 pool to bf16 before its kernel (POOL_CAST_FAMILIES)."""
    return family in POOL_CAST_FAMILIES

#: True = vLLM's MLA call (fa3_mla_vllm) keeps the prepare kernel's price: the main kernel's prologue, which runs
#: exposed when the scheduler metadata comes from the step (VLLM_FA3_SPLITS' comment: measured so on vLLM's GQA call);
#: False = no prepare kernel, nothing in its place (as fa3_mla_vllm was judged on the dense grid). Judged on the vLLM
#: MLA call grid (simulator/calibration/fa3_sparse_mla_h200.py SHAPES6: 16 new calls, 1 x H200, prices committed
#: 38fad8f before the call): 2.5 / 4.8 %, 3 of 3 regimes, against 4.6 / 13.5 %, 3 of 3: SHIPPED by the tie rule
VLLM_CALL_PROLOGUE = True
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


def engine_default_kernel(engine: str, architecture: str, mla: bool, kv_dtype: str = "bf16") -> str:
    """The family an engine runs by default (data/engine_attention_defaults.yaml): its `mla` or `gqa` family for the
    architecture, `mla_fp8` for an MLA model over an fp8 cache where the file names one."""
    e = engine_defaults()[engine]
    arch = e.get(architecture) or e["hopper"]
    if mla and kv_dtype == "fp8" and arch.get("mla_fp8"):
        return arch["mla_fp8"]
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
#: structure on attn_fa4's borrowed terms) and FlashInfer (its prefill wrappers, as the engine's backend calls them:
#: FI_PREFILL_MODES). The other families' engines prefill with kernels not modelled here (TensorRT-LLM's context FMHA,
#: the Triton backends' extend kernels): the dense strategy's generic prefill op prices them
PREFILL_FAMILY = {"fa3": "fa3", "fa4": "fa4", "fi_tc": "fi_tc", "fi_decode": "fi_tc", "flashinfer": "fi_tc"}
#: how an engine's FlashInfer backend runs a prefill chunk (DenseAttention's `flashinfer_prefill`; the kernels:
#: simulator/kernels/fi_sm90.py for FlashInfer's own sm_90 kernel, simulator/kernels/flashinfer.py fi_tc for its FA2 one):
#:   paged   BatchPrefillWithPagedKVCacheWrapper with the default backend "auto" (vLLM's FLASHINFER backend,
#:           vllm/v1/attention/backends/flashinfer.py _get_prefill_wrapper): FlashInfer's own sm_90 kernel on Hopper at
#:           bf16 K/V (flashinfer/utils.py determine_attention_backend), its FA2 kernel otherwise (fp8 K/V with a bf16
#:           query, or another architecture)
#:   ragged  SGLang's flashinfer backend (python/sglang/srt/layers/attention/flashinfer_backend.py): the chunk's new
#:           tokens through BatchPrefillWithRaggedKVCacheWrapper(backend "auto": the sm_90 kernel on Hopper; their K/V
#:           are the layer's fresh bf16 activations whatever the cache's dtype), causal; a cached prefix through the
#:           paged wrappers, built with backend "fa2", non-causal; the two merged by merge_state (cascade.cuh)
#:   fa2     FlashInfer's FA2 kernel for the whole chunk (a backend forced to "fa2"; the product's reading before)
FI_PREFILL_MODES = ("paged", "ragged", "fa2")


def _masked(launches, mask):
    """The launches, each priced only where `mask` (and its own `where`) holds."""
    out = []
    for ln in launches:
        w = mask if ln.where is None else (np.asarray(ln.where, dtype=bool) & mask)
        out.append(replace(ln, where=w))
    return out


def _merge_state_launch(B, P, Hq, dv, where):
    """merge_state (flashinfer cascade.cuh MergeStateKernel): two bf16 partial outputs with their fp32 log-sum-exps per
    (token, head) into one bf16 output; one element-wise pass (kind elementwise)."""
    from simulator.kernels.production import Launch
    rows = B * P * Hq
    return Launch("attention_merge", "elementwise", np.maximum(np.ceil(rows / 8.0), 1.0), 1.0, 0.0, 0.0,
                  6.0 * rows * dv, 2.0 * rows * (dv * 2.0 + 4.0), rows * dv * 2.0, where=where)


#: True = the engine's FlashInfer FA2 prefill calls are priced exactly where the cached prefix is a multiple of the call's
#: key tile (CTA_TILE_KV) and linearly in between (fa2_prefix_interpolated); False = exactly at every prefix length
FA2_PREFIX_INTERPOLATED = True


def fa2_prefix_interpolated(B, P, base, O, Hq, Hkv, d, kvb, page, sms: int, smem: float, causal):
    """Launches of one eager call of FlashInfer's FA2 prefill kernel (flashinfer.fi_tc, cuda_graph=False) over
    T = base + O keys, P query rows each, with the cached prefix O counted continuously: the call priced exactly at the
    prefix's key-tile multiples below and above O (O_lo = floor(O / kt) kt and O_lo + kt, kt = the call's CTA_TILE_KV,
    which depends on P, the GQA group and d, not on O) and interpolated, as two launch sets of weights 1 - w and w
    (Launch.weight; w = (O - O_lo) / kt). Why: the FA2 plan steps with the prefix at every key tile (the longest CTA's
    tiles) and every page where the split plan's chunk changes (scheduler.cuh PrefillSplitQOKVIndptr), so the engine's
    chunk surface (simulator/engine/step_cost.py _init_chunks, refined until linear interpolation in the prefix holds
    to 1e-4) needs ~4,500 prefix points on an 8B model at 128K where FlashInfer's sm_90 kernel (prefix continuous)
    needs ~230: serving_mooncake_h100 with every prefill on the FA2 kernel ran 1,149 s. The price is exact at every
    key-tile multiple; between, it stands within one tile's step of the exact plan (the judged rows off a multiple:
    simulator/calibration/prefill_kernels.py engine_us, benchmarks/calibration_accuracy.py). base = P for a causal call
    (T = P + O), 0 for SGLang's non-causal prefix call (T = O, at least 1 key)."""
    B, P, base, O, Hq, Hkv, kvb = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64)
                                                        for x in (B, P, base, O, Hq, Hkv, kvb)))
    if not FA2_PREFIX_INTERPOLATED:
        return FI.fi_tc(B, P, np.maximum(base + O, 1.0), Hq, Hkv, d, kvb, page, sms, smem, cuda_graph=False,
                        causal=causal)[0]
    ctq = FI.fa2_cta_tile_q(P * Hq / Hkv, d)
    kt = FI.fa2_tile_kv(ctq, d, kvb, smem)[0]
    n = FI.fa2_max_chunks(B * np.ceil(P * Hq / Hkv / ctq), Hkv, sms)
    lb = max(np.floor(128.0 / float(page)), 1.0)

    def regime(Ok):
        # 0: one chunk (the longest CTA walks every key: a tile more every kt of prefix); 1: split at the smallest chunk
        # (128 tokens: a chunk more every 128 tokens); 2: split at ceil(pages / n) pages (a tile more every n x kt)
        pages = np.maximum(np.ceil(np.maximum(base + Ok, 1.0) / float(page)), 1.0)
        c = FI.fa2_chunk_pages(pages, n, page)
        return np.where(c >= pages, 0, np.where(c <= lb, 1, 2))

    r = regime(O)
    step = np.select([r == 0, r == 1], [kt, lb * float(page)], np.maximum(n, 1.0) * kt)
    lo = np.floor(O / step) * step
    # a bracket that crosses a change of regime (the split starting, the chunk leaving its minimum): the exact plan
    same = (regime(lo) == r) & (regime(lo + step) == r)
    lo = np.where(same, lo, O)
    w = np.where(same, (O - lo) / step, 0.0)
    out = []
    for Ok, share in ((lo, 1.0 - w), (lo + step, w)):
        part = FI.fi_tc(B, P, np.maximum(base + Ok, 1.0), Hq, Hkv, d, kvb, page, sms, smem, cuda_graph=False,
                        causal=causal)[0]
        out += [replace(ln, weight=np.asarray(ln.weight, dtype=np.float64) * share) for ln in part]
    return out


def fi_prefill_launches(mode: str, B, P, T, Hq, Hkv, d, kvb, page, sms: int, smem_per_sm: float | None = None,
                        architecture: str = "hopper"):
    """Launches of one causal prefill chunk through an engine's FlashInfer backend (FI_PREFILL_MODES): B requests of P
    new tokens after T - P cached ones."""
    if mode not in FI_PREFILL_MODES:
        raise ValueError(f"flashinfer_prefill must be one of {FI_PREFILL_MODES}, got {mode!r}")
    B, P, T, Hq, Hkv, kvb = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in (B, P, T, Hq, Hkv, kvb)))
    smem = float(smem_per_sm or DEFAULT_SMEM_PER_SM)
    causal = np.ones(B.shape, dtype=bool)

    def fa2(mask):
        return _masked(fa2_prefix_interpolated(B, P, P, np.maximum(T - P, 0.0), Hq, Hkv, d, kvb, page, sms, smem,
                                               causal), mask)

    sm90 = architecture == "hopper" and mode != "fa2" and float(d) in (64.0, 128.0, 256.0)
    if not sm90:
        return fa2(np.ones(B.shape, dtype=bool))
    if mode == "paged":
        bf16 = kvb >= 2.0
        out = []
        if np.any(bf16):
            out += _masked(SM90.fi_sm90_prefill(B, P, T, Hq, Hkv, d, d, sms, paged=True)[0], bf16)
        if np.any(~bf16):
            out += fa2(~bf16)
        return out
    # ragged: the new tokens' own causal attention, then a cached prefix's (FA2, non-causal) and the merge
    O = np.maximum(T - P, 0.0)
    pre = O > 0.0
    out = SM90.fi_sm90_prefill(B, P, P, Hq, Hkv, d, d, sms, paged=False)[0]
    if np.any(pre):
        out += _masked(fa2_prefix_interpolated(B, P, 0.0, O, Hq, Hkv, d, kvb, page, sms, smem,
                                               np.zeros(B.shape, dtype=bool)), pre)
        out.append(_merge_state_launch(B, P, Hq, float(d), pre))
    return out


def gqa_prefill_launches(family: str, B, P, T, Hq, Hkv, d, kvb, page, sms: int, smem_per_sm: float | None = None,
                         flashinfer_prefill: str = "fa2", architecture: str = "hopper"):
    """Launches of one causal prefill call of a GQA family (PREFILL_FAMILY): B requests of P new query rows each after
    T - P cached tokens (the chunk's own K/V already in the cache), each query tile's keys bounded by its diagonal
    (simulator.kernels.production.causal_tile_blocks); FlashInfer's as its engine calls it (fi_prefill_launches, planned
    without a CUDA graph: an eager prefill)."""
    fam = PREFILL_FAMILY[family]
    causal = np.ones(np.broadcast(B, P, T).shape, dtype=bool)
    if fam == "fi_tc":
        return fi_prefill_launches(flashinfer_prefill, B, P, T, Hq, Hkv, d, kvb, page, sms, smem_per_sm, architecture)
    return FA3.fa3(B, P, T, Hq, Hkv, d, kvb, page, sms, kind="attn_fa4" if fam == "fa4" else "attn_fa3",
                   causal=causal)[0]


#: MLA decode families whose engines prefill through a modelled kernel on Hopper, non-absorbed (the latent expanded to
#: per-head K of d_qk = qk_nope + qk_rope = 192 and V of d_v = 128): vLLM's MLA backends (FLASHMLA among them) run the
#: prefill of new tokens with FlashAttention-3's flash_attn_varlen_func, causal, and the cached context through the same
#: kernel by chunks (hopper/'s hdim 192 x 128 instantiations); SGLang's flashinfer MLA backend (fi_mla,
#: flashinfer_mla_backend.py) runs a prefix-free extend through BatchPrefillWithRaggedKVCacheWrapper at head_dim_qk 192 /
#: head_dim_vo 128 (backend "auto": FlashInfer's own sm_90 kernel, simulator/kernels/fi_sm90.py) and an extend with a
#: cached prefix through its paged MLA wrapper (not modelled at prefill rows: those chunks keep the dense strategy's
#: generic op, mla_prefill_covered)
MLA_PREFILL_FAMILY = {"flashmla": "fa3", "fi_mla": "fi_sm90", "fa3_mla": "fa3", "fa3_mla_vllm": "fa3",
                      "fa3_mla_fp8cast": "fa3", "fi_mla_fp8cast": "fi_sm90"}


#: MLA decode families whose engine runs an extend over a cached prefix through its ABSORBED MLA kernel at prompt rows
#: (the chunks mla_prefill_covered leaves to the generic op): SGLang's flashinfer_mla backend, the paged branch of
#: forward_extend (BatchMLAPagedAttentionWrapper planned causal over the latent pool: flashinfer_mla_backend.py @
#: 004d79c, `prefill_wrapper_paged.run(q_nope, q_rope, k_buf[:, :, :512], k_buf[:, :, 512:])`). Such a chunk does
#: 2 x (d_ckv + d_kpe + d_ckv) = 2 x 1088 flops a (query, key) pair a head, against the expanded MHA form's
#: 2 x (192 + 128) = 2 x 320 the generic op counts: the generic op priced its first grid (fi_mla extend grid 1, 1 x
#: H200) -66..-70 % on a bf16 pool, measured / priced 2.96-3.30 where the work ratio is 3.4. The generic op with the
#: absorbed pair's work and the latent's bytes (DenseAttention._generic_prefill_ops absorbed), built after that grid
#: (LOOKED-AT there), judged on extend grid 2 (blind)
MLA_ABSORBED_EXTEND = ("fi_mla", "fi_mla_fp8cast")


#: SGLang's flashinfer_mla extend over a cached prefix (the chunks FlashInfer's ragged wrapper does not run) priced as
#: the paged MLA wrapper planned causal (simulator/kernels/flashinfer.py fi_mla_extend: MLAPlan's causal plan, the
#: decode call's kernel terms). False = those chunks keep the generic op in its absorbed form (MLA_ABSORBED_EXTEND: the
#: rule before, extend grid 2: 4.7 / 26.0 %, its short extend +91 %: the generic op spreads over q tiles x heads, MLAPlan
#: over every SM)
FI_MLA_CAUSAL_EXTEND = True


def mla_prefill_covered(family: str, T, P) -> np.ndarray:
    """Where the family's MLA prefill kernels price a chunk (MLA_PREFILL_FAMILY): every chunk for FA3's varlen forward;
    for FlashInfer's, the prefix-free ones (T == P, the ragged wrapper) and, with FI_MLA_CAUSAL_EXTEND, the ones over a
    cached prefix too (the paged MLA wrapper, causal)."""
    T, P = np.broadcast_arrays(np.asarray(T, dtype=np.float64), np.asarray(P, dtype=np.float64))
    if MLA_PREFILL_FAMILY.get(family) == "fi_sm90" and not FI_MLA_CAUSAL_EXTEND:
        return T <= P
    return np.ones(T.shape, dtype=bool)


#: SGLang's fa3 backend runs a DeepSeek-V3 / R1 extend batch through the ABSORBED MLA path (FA3's qv kernel over the
#: latent cache, flash_attn_with_kvcache with cu_seqlens_q, causal) whenever its prefill CUDA graph replays it, which
#: is on by default: v0.5.23's breakable prefill graph up to min(8192, chunked_prefill_size = 8192 on H100 / H200)
#: tokens (v0.5.10.post1's piecewise graph up to 2048), its handler pinning AttnForwardMethod.MLA inside the graph
#: (models/deepseek_common/attention_backend_handler.py _handle_attention_backend); larger batches run MHA_ONE_SHOT /
#: MHA_CHUNKED_KV (FA3's varlen 192 x 128 forward). True = fa3_mla's prefill chunks of <= SGLANG_ABSORBED_PREFILL_TOKENS
#: priced as the qv kernel at prefill rows (fa3 with causal rows: the family's prefill tile terms, the qv block rule);
#: False = every chunk as the varlen 192 x 128 forward (the rule before). A candidate of the SGLang MLA prefill grid
#: (simulator/calibration/fa3_sparse_mla_h200.py SHAPES7), priced with main before its call: 20.0 / 56.2 %, 1 of 4
#: regimes (a cached prefix 4-11 %, fresh prompts +42..+47 %) against the MHA price's 70.5 / 72.0 %, 0 of 4 (-70 %: the
#: engine runs ~3.4x the MMA work a pair): SHIPPED by the rule (more regimes)
SGLANG_ABSORBED_PREFILL = True
SGLANG_ABSORBED_PREFILL_TOKENS = 8192.0


def pool_cast_launch(pool_tokens, d_ckv: float, d_kpe: float, shape, where=None):
    """The cast of a layer's whole fp8 MLA pool to bf16 that SGLang's fa3 backend makes before its qv kernel
    (FA3_MLA_FAMILIES fa3_mla_fp8cast's comment): pool_tokens x (d_ckv + d_kpe) fp8 values read, twice the bytes
    written, PyTorch's copy kernel (FP8_POOL_CAST_ELEMS_PER_CTA a block)."""
    from simulator.kernels.production import Launch
    e = np.broadcast_to(np.asarray(pool_tokens, dtype=np.float64) * (d_ckv + d_kpe), shape)
    return Launch("kv_pool_cast", POOL_CAST_KIND, np.maximum(np.ceil(e / FP8_POOL_CAST_ELEMS_PER_CTA), 1.0), 1.0, 1.0,
                  0.0, e, e, 2.0 * e, dtype="fp32", where=(e > 0.0) if where is None else (np.asarray(where) & (e > 0.0)))


def mla_prefill_launches(family: str, B, P, T, H, d_qk, d_v, sms: int, d_ckv: float = 512.0, d_kpe: float = 64.0,
                         pool_tokens=0.0, kvb=2.0):
    """Launches of one causal MLA prefill call (MLA_PREFILL_FAMILY): B requests of P new query rows after T - P cached
    tokens, every head its own K (d_qk) and V (d_v), bf16 and contiguous (the up-projected K / V, loaded by TMA). FA3:
    the prefix's keys walked by the same causal call (bottom-right aligned), as one chunk; num_splits = 1, the varlen
    interface's default (hopper/flash_attn_interface.py flash_attn_varlen_func, kept by sgl-kernel's wrapper).
    FlashInfer's sm_90 ragged kernel: the new tokens alone (T = P; the caller prices a chunk with a prefix otherwise,
    mla_prefill_covered), and with FI_MLA_CAUSAL_EXTEND a chunk over a cached prefix as the paged MLA wrapper planned
    causal over the latent (kvb its bytes; the whole pool's bf16 cast first for a POOL_CAST_FAMILIES member)."""
    kind = MLA_PREFILL_FAMILY.get(family)
    if kind == "fi_sm90":
        ragged = SM90.fi_sm90_prefill(B, P, P, H, H, d_qk, d_v, sms, paged=False)[0]
        fresh = np.asarray(T, dtype=np.float64) <= np.asarray(P, dtype=np.float64)
        if not FI_MLA_CAUSAL_EXTEND or np.all(fresh):
            return ragged
        one = np.ones(np.broadcast(B, P, T, H).shape)
        fresh = np.broadcast_to(fresh, one.shape)
        cast = casts_pool(family)
        paged = FI.fi_mla_extend(B * one, P * one, np.maximum(T, P) * one, H * one, d_ckv, d_kpe, 2.0 if cast else kvb,
                                 1.0, sms)[0]
        if cast:
            paged.insert(0, pool_cast_launch(pool_tokens, d_ckv, d_kpe, one.shape))
        for ln, w in [(x, fresh) for x in ragged] + [(x, ~fresh) for x in paged]:
            ln.where = w if ln.where is None else (np.asarray(ln.where) & w)
        return ragged + paged
    if kind != "fa3":
        raise ValueError(f"no MLA prefill kernel modelled for {family!r}")
    causal = np.ones(np.broadcast(B, P, T, H).shape, dtype=bool)
    mha = FA3.fa3(B, P, T, H, H, d_qk, 2.0, 0.0, sms, causal=causal, dv=d_v, paged=False, num_splits=1.0)[0]
    if family not in ("fa3_mla", "fa3_mla_fp8cast") or not SGLANG_ABSORBED_PREFILL:
        return mha
    absorbed = np.asarray(B, dtype=np.float64) * np.asarray(P, dtype=np.float64) <= SGLANG_ABSORBED_PREFILL_TOKENS
    absorbed = np.broadcast_to(absorbed, causal.shape)
    one = np.ones(causal.shape)
    qv = FA3.fa3(B * one, P * one, T * one, H * one, one, float(d_kpe), 2.0, 1.0, sms, causal=causal,
                 dv=float(d_ckv), qv=float(d_ckv), T_bound=T * one)[0]
    for ln in qv:
        ln.where = absorbed if ln.where is None else (np.asarray(ln.where) & absorbed)
    for ln in mha:
        ln.where = ~absorbed if ln.where is None else (np.asarray(ln.where) & ~absorbed)
    if FA3_MLA_FAMILIES[family].get("cast_pool"):   # the absorbed extend reads the pool's bf16 cast too
        qv.append(pool_cast_launch(pool_tokens, d_ckv, d_kpe, causal.shape, where=absorbed))
    return qv + mha


def mla_launches(family: str, B, q, T, H, d_ckv, d_kpe, kvb, page, sms: int, pool_tokens=0.0):
    """Launches of one MLA decode / verification call (absorbed: one latent of d_ckv + d_kpe per token); pool_tokens:
    the device's KV pool in tokens, what the POOL_CAST_FAMILIES cast whole a layer (FA3_MLA_FAMILIES' comment)."""
    if family in ("fi_mla", "fi_mla_fp8cast"):
        if not casts_pool(family):
            return FI.fi_mla(B, q, T, H, d_ckv, d_kpe, kvb, page, sms)[0]
        one = np.ones(np.broadcast(B, q, T, H).shape)   # FlashInfer's MLA kernel over the bf16 cast (POOL_CAST_FAMILIES)
        return [pool_cast_launch(pool_tokens, d_ckv, d_kpe, one.shape),
                *FI.fi_mla(B * one, q * one, T * one, H * one, d_ckv, d_kpe, 2.0, page, sms)[0]]
    if family == "flashmla":
        return FM.flashmla(B, q, T, H, d_ckv, d_kpe, kvb, sms)[0]
    if family in FA3_MLA_FAMILIES:   # FA3's qv kernel over the paged latent (FA3_MLA_FAMILIES); the page table as wide
        # as the step's longest context (each setting one context: T)
        c = FA3_MLA_FAMILIES[family]
        one = np.ones(np.broadcast(B, q, T, H).shape)
        ns = vllm_fa3_splits(B * one, q * one) if c["num_splits"] == "vllm" else c["num_splits"]
        cast = bool(c.get("cast_pool"))
        out = FA3.fa3(B * one, q * one, T * one, H * one, one, float(d_kpe), 2.0 if cast else kvb, page, sms,
                      dv=float(d_ckv), qv=float(d_ckv), T_bound=T * one, num_splits=ns,
                      prepare=c["prepare"] or (family == "fa3_mla_vllm" and VLLM_CALL_PROLOGUE))[0]
        return [pool_cast_launch(pool_tokens, d_ckv, d_kpe, one.shape), *out] if cast else out
    raise ValueError(f"unknown MLA family {family!r}")
