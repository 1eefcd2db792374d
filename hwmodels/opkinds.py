"""The vocabulary the hardware prices: kinds of kernel and the dtypes their arithmetic runs in.

An Op table (`simulator.ops.OpTable`) stores kinds and dtypes as small integer codes into these tuples so
that one numpy call prices many thousands of ops. The hardware layer owns the vocabulary because it is
the layer that must know how to price each entry; strategies only pick from it.
"""
from __future__ import annotations

#: kind -> what a kernel of that kind is. How each kind is priced is hwmodels.roofline's; which measurement and fit
#: its terms come from is listed in lab/README.md ("Op kinds").
KIND_MEANING: dict[str, str] = {
    "gemm": "a dense matrix multiply (cuBLAS / cuBLASLt in bf16 or fp16; the GEMM of any dtype without a kind of its own)",
    "attention": "the generic decode / prefill attention kernel (continuous split-KV over the cache)",
    "gather": "an index gather of selected K/V pages or tokens into a dense buffer",
    "topk": "a multi-kernel library top-k (torch.topk, sorts)",
    "elementwise": "a vectorized elementwise kernel (norms, activations, residual adds, narrowing casts)",
    "collective": "a ring all-reduce over the GPUs of a tensor-parallel group",
    "copy": "a memory copy (on the device, or between host and device)",
    "alltoall": "an all-to-all exchange (resharding between TP and DP layouts, expert dispatch)",
    "topk_cta": "a one-thread-block-per-row top-k selection kernel (DSA's radix select, Guess-Verify-Refine)",
    "attn_cudnn": "decode attention through cuDNN SDPA, one query row per sequence",
    "attn_cudnn_rows": "cuDNN SDPA with several query rows per sequence: another kernel, one CTA per query head",
    "attn_fa2": "FlashAttention-2 decode attention (split-KV as SDPA's flash backend calls it, or the varlen call)",
    "attn_flex": "FlexAttention's flex_decoding kernel",
    "attn_triton": "a Triton split-KV decode kernel with FlashAttention-2's split heuristic (lab/measure_regimes.py)",
    "attn_memeff": "memory-efficient SDPA: no split-KV, one CTA per query head walks the whole cache",
    "indexer": "a DSA-lightning-indexer-like logits kernel, one CTA per (query row, 64 keys)",
    "gemm_fp8_rowwise": "an fp8 GEMM with per-token x per-channel scales (persistent CTAs over whole tiles, no split-K)",
    "copy_strided": "a non-vectorized broadcast / strided elementwise kernel of plain PyTorch, bound by its element rate",
    "attn_combine_fa2": "FlashAttention-2's split-KV combine kernel (merges the splits' partial outputs)",
    "attn_combine_triton": "the Triton split-KV kernel's combine kernel",
    "attn_combine_cudnn": "cuDNN's split-KV combine kernel (lean_reduction)",
    "cast": "a dtype-widening copy or mixed-dtype broadcast arithmetic of plain PyTorch, bound by its element rate",
    "reduce": "a row reduction that adds (sum, mean over the last dim: torch's reduce_kernel)",
    "quant": "a fused per-token fp8 activation quantization, one CTA per row (amax pass, then scale-and-cast pass)",
    "attn_triton_fp8kv": "the Triton split-KV decode kernel reading fp8 K/V and converting it in registers",
    "gemm_fp8": "an fp8 GEMM with per-tensor scales (cuBLASLt's kernels; their split-K reduce is an op of its own)",
    "reduce_max": "a row reduction that takes a maximum (amax, max: torch's reduce_kernel with NaN-propagating compares)",
    "copy_broadcast": "transformers' repeat_kv copy of one K/V head's rows to its query heads, bound by load latency",
    "topk_sglang": "SGLang's sgl-kernel radix top-k, one 1024-thread CTA per row (simulator/kernels/topk_production.py)",
    "topk_trtllm": "TensorRT-LLM's indexer top-k (512-thread CTAs, split work on long rows; simulator/kernels/topk_production.py)",
    "topk_flashinfer": "FlashInfer's top-k (filtered one-CTA-per-row kernel, multi-CTA radix kernel on long rows; simulator/kernels/topk_production.py)",
    "gemm_fp8_block": "an fp8 GEMM with 1 x 128 activation and 128 x 128 weight scales (DeepGEMM's structure; kernels/gemm_fp8.py)",
    "indexer_dg": "DeepGEMM's fp8_paged_mqa_logits (DSA indexer, decode / verification): persistent CTAs over 256-key "
                  "work items (simulator/kernels/indexer.py)",
    "indexer_dg_cold": "DeepGEMM's fp8_paged_mqa_logits over keys that are not in L2 (every layer of a step reads its own "
                       "keys): the pages' stream waits for the first item's dependent loads (hwmodels/roofline.py "
                       "CHAIN_COLD_HEAD)",
    "allreduce_1shot": "an engine's custom one-shot peer-memory all-reduce (simulator/kernels/allreduce.py)",
    "allreduce_2shot": "an engine's custom two-shot (reduce-scatter + all-gather) peer-memory all-reduce",
    "allreduce_1shot_lamport": "TensorRT-LLM's one-shot all-reduce (fusion) kernel: pushes into every peer's Lamport "
                               "buffer, the data are the flags (no barrier round trip; simulator/kernels/allreduce.py)",
    "attn_fi_decode": "FlashInfer's CUDA-core paged decode kernel, bf16 K/V (simulator/kernels/flashinfer.py)",
    "attn_fi_decode_fp8kv": "FlashInfer's CUDA-core paged decode kernel reading fp8 K/V",
    "attn_fi_prefill": "FlashInfer's FA2 paged prefill kernel as it runs tensor-core decode and verification rows",
    "attn_fi_prefill_fp8kv": "the same FlashInfer prefill kernel reading fp8 K/V",
    "attn_fi_mla": "FlashInfer's persistent MLA kernel (sm_90, backend fa3)",
    "attn_combine_fi": "FlashInfer's VariableLengthMergeStates (persistent merge of split-KV partial states)",
    "attn_fa3": "FlashAttention-3 (hopper/) paged split-KV forward (simulator/kernels/fa3.py)",
    "attn_combine_fa3": "FlashAttention-3's split-KV combine kernel",
    "attn_fa3_persist": "FlashAttention-3's own hopper/ forward (persistent: one CTA per SM walking tiles from the "
                        "varlen dynamic tile scheduler; simulator/kernels/fa3.py fa3)",
    "attn_fa3_persist_fp8kv": "the same persistent hopper/ forward in fp8 e4m3 (128 x 160 tiles, V transposed in "
                              "shared memory by the producer warpgroup; simulator/kernels/fa3.py fa3)",
    "attn_prepare_fa3": "FlashAttention-3's prepare_varlen_num_blocks kernel (one CTA: split counts and m-blocks of "
                        "every request, sorted; simulator/kernels/fa3.py)",
    "attn_fa3_tma": "FlashAttention's sm_90 forward reading K/V by TMA (contiguous, or pages of one K/V block): the "
                    "fa3 family's measured stand-in on that path (simulator/kernels/fa3.py fa4cute_sm90)",
    "attn_fa4": "FlashAttention-4 (flash_attn/cute, Blackwell) forward (simulator/kernels/fa3.py)",
    "attn_flashmla": "FlashMLA's sm_90 split-KV MLA decode (simulator/kernels/flashmla.py)",
    "attn_combine_flashmla": "FlashMLA's split-KV combine kernel",
    "attn_xqa": "TensorRT-LLM's XQA mma kernel (mha.cu), bf16 K/V, multi-block with in-kernel merge (simulator/kernels/xqa.py)",
    "attn_xqa_fp8kv": "TensorRT-LLM's XQA sm_90 GMMA kernel (mha_sm90.cu) as it runs fp8 K/V (simulator/kernels/xqa.py)",
    "attn_triton_sgl": "SGLang's Triton grouped decode kernel, stage 1 (simulator/kernels/triton_engines.py)",
    "attn_triton_sgl_fp8kv": "SGLang's Triton grouped decode kernel, stage 1, reading fp8 K/V (simulator/kernels/triton_engines.py)",
    "attn_combine_triton_sgl": "SGLang's Triton decode stage-2 reduce",
    "attn_triton_vllm": "vLLM's Triton unified attention, 2D / 3D (simulator/kernels/triton_engines.py)",
    "attn_triton_vllm_fp8kv": "vLLM's Triton unified attention, 2D / 3D, reading fp8 K/V (simulator/kernels/triton_engines.py)",
    "attn_combine_triton_vllm": "vLLM's Triton unified attention reduce_segments kernel",
    "indexer_dg_prefill": "DeepGEMM's fp8_mqa_logits (DSA indexer, prefill): persistent CTAs over 2-row query blocks, "
                          "each walking its causal key range in 256-key blocks (simulator/kernels/indexer.py)",
    "gemm_fp8_block_cublaslt": "cuBLASLt's block-scaled fp8 GEMM (torch._scaled_mm: 128 x 128 tiles, split-K at decode; kernels/gemm_fp8.py)",
    "attn_flashmla_sparse": "FlashMLA's sm_90 sparse decode (DSA), 64-head CTAs walking the scheduler's 64-token index "
                            "tiles (simulator/kernels/flashmla_sparse.py)",
    "attn_flashmla_sparse_pair": "FlashMLA's sm_90 sparse decode at 128 heads: 2-CTA clusters sharing each tile's "
                                 "gather (simulator/kernels/flashmla_sparse.py)",
    "attn_flashmla_sparse_fwd": "FlashMLA's sm_90 sparse prefill kernel over independent rows (TensorRT-LLM's DSA "
                                "generation on Hopper): a CTA per (64 heads, row) streaming the row's k bf16 tokens "
                                "(simulator/strategies/dsa.py sparse_kernel prefill_kernel)",
    "attn_fa3_prefill_fp8kv": "FlashAttention-3's persistent hopper/ forward in fp8 e4m3 at causal prefill tiles: "
                              "attn_fa3_persist_fp8kv's terms on the device it was fitted on (a prefill tile's time is "
                              "its tensor work; a decode block's waits on the HBM: simulator/kernels/fa3.py)",}
KINDS: tuple[str, ...] = tuple(KIND_MEANING)
KIND_CODE: dict[str, int] = {k: i for i, k in enumerate(KINDS)}

#: dtypes an op's arithmetic (tensor-core or vector) runs in
DTYPES: tuple[str, ...] = ("fp32", "bf16", "fp16", "fp8", "fp4", "int8", "int4")
DTYPE_CODE: dict[str, int] = {d: i for i, d in enumerate(DTYPES)}

#: When a device has no rate for a dtype, its arithmetic runs on the next wider unit that it does have
#: (e.g. fp8 weights on an A100 are dequantized and multiplied in bf16; int4 weight-only GEMMs run in bf16).
DTYPE_FALLBACK: dict[str, tuple[str, ...]] = {
    # a device that publishes no vector fp32 rate (SN40L) runs elementwise work on its bf16 units;
    # such work is memory-bound, so the stand-in rarely matters
    "fp32": ("fp32", "bf16"),
    "bf16": ("bf16", "fp32"),
    "fp16": ("fp16", "bf16", "fp32"),
    "fp8": ("fp8", "bf16", "fp32"),
    "fp4": ("fp4", "fp8", "bf16", "fp32"),
    "int8": ("int8", "fp8", "bf16", "fp32"),
    "int4": ("int4", "bf16", "fp32"),
}

COLLECTIVE = KIND_CODE["collective"]  # ring all-reduce
ALLTOALL = KIND_CODE["alltoall"]      # all-to-all exchange (resharding between TP and DP layouts)
GEMM = KIND_CODE["gemm"]
ATTENTION = KIND_CODE["attention"]
