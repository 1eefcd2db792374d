"""The vocabulary the hardware prices: kinds of kernel and the dtypes their arithmetic runs in.

An Op table (`simulator.ops.OpTable`) stores kinds and dtypes as small integer codes into these tuples so
that one numpy call prices many thousands of ops. The hardware layer owns the vocabulary because it is
the layer that must know how to price each entry; strategies only pick from it.
"""
from __future__ import annotations

#: topk      multi-kernel library top-k (torch.topk, sorts): calibrated on torch.topk
#: topk_cta  one-thread-block-per-row selection kernels (DSA's radix-select and GVR): calibrated on our own
#:           single-CTA kernels (hwmodels/calibration/measure_topk_cta.py)
#: attention the generic decode / prefill attention kernel (calibrated on cuDNN SDPA, continuous split-KV)
#: attn_*    decode attention of a named kernel family, whose CTAs the strategy counts from the family's own
#:           split heuristic (simulator/strategies/dense.py `kernel`): attn_cudnn (cuDNN SDPA), attn_fa2
#:           (FlashAttention-2 split-KV, as SDPA's flash backend), attn_cudnn_rows (cuDNN SDPA with several
#:           query rows: another kernel, one CTA per query head, one resident per SM), attn_flex (FlexAttention's flex_decoding),
#:           attn_triton (our Triton split-KV kernel with FA2's heuristic), attn_memeff (memory-efficient
#:           SDPA: no split-KV, one CTA per query head walks the whole cache); calibrated on
#:           hwmodels/calibration/measure_regimes.py
#: indexer   a DSA-lightning-indexer-like logits kernel, one CTA per (query row, 64 keys)
#: copy_strided  a broadcast / strided elementwise kernel of plain PyTorch (HF repeat_kv's expand + reshape, a
#:           [M, K] x [M, 1] or [M, K] x [K] product, rotate_half's neg of a slice and its cat: TensorIterator's
#:           non-vectorized elementwise_kernel<128, 4>), element-rate bound (one flop-equivalent per output element;
#:           MEASURED 0.23-0.46 T elements/s on the H100, hwmodels/calibration/data/regimes_*_v3.csv ew_kernel)
#: gemm_fp8_rowwise  fp8 GEMM with per-token x per-channel scales (torch 2.11 / CUDA 13: cuBLASLt's outer-vector-
#:           scaled nvjet kernel, 128 x 128 tiles, one persistent CTA per SM walking whole tiles over all of K, no
#:           split-K; MEASURED kernel names and grids), calibrated on torch._scaled_mm rowwise
#: attn_combine_fa2 / attn_combine_triton / attn_combine_cudnn  the combine kernel of a split-KV decode family
#:           (FlashAttention-2's splitkv_combine, our Triton combine, cuDNN's lean_reduction): its own fixed,
#:           per-wave and per-split-load times (simulator/kernels/decode_attention.py COMBINE_KIND)
#: cast      a dtype-converting kernel of plain PyTorch that converts one element at a time: the up-casting copies
#:           (fp8 -> bf16, bf16 -> fp32: TensorIterator's unrolled_elementwise_kernel) and broadcast arithmetic on
#:           mixed dtypes (bf16 [M, K] / fp32 [M, 1]: elementwise_kernel with dynamic casting), element-rate bound
#:           (MEASURED 0.21-0.33 T elements/s on the H100); narrowing casts are vectorized (kind elementwise)
#: reduce    a row reduction of plain PyTorch that adds (sum, mean over the last dim: reduce_kernel<512, 1>)
#: reduce_max  the same reduce_kernel with a maximum (x.amax(-1), torch.max): the same launch configuration, more ALU
#:           work per value (MaxOps propagates NaN: a compare, a NaN test and a select per value, after the bf16 ->
#:           fp32 convert; MeanOps one add), so its own iteration / fixed terms (issue 15 round 6: one kind served
#:           both and priced amax 8-16 % fast, mean 5-12 % slow at the same launch)
#: attn_triton_fp8kv  our Triton split-KV kernel reading K/V stored in fp8 and converting them in registers: another
#:           compiled kernel (MEASURED 128 registers and 38 KB shared memory vs 90 / 70 KB: 4 resident CTAs per SM instead
#:           of 3, regimes_grids_*_v4.csv) with its own iteration time and achieved bandwidth (issue 15 round 3; round 2
#:           scaled the bf16 kernel's iterations by one factor, which could not fit its latency- and bandwidth-bound corners)
#: gemm_fp8  fp8 GEMM with per-tensor scales (torch._scaled_mm tensorwise -> cuBLASLt's nvjet kernels, whose tile and
#:           split-K cuBLASLt's heuristics pick per shape; the split-K reduce is its own op, simulator.layers.fp8_gemm):
#:           issue 15 round 5 gave it terms of its own, fitted on torch._scaled_mm tensorwise (round 4 priced it with the
#:           bf16 `gemm` kind's terms, 13 % median error on held-out shapes)
#: copy_broadcast  transformers' repeat_kv (expand + reshape of one K/V head's row to its query heads): the same
#:           non-vectorized elementwise_kernel<128, 4> as copy_strided, but its time is set by load latency: each source
#:           row is loaded from HBM once and re-read by its other copies, which wait on that load when they run at the
#:           same time (hwmodels.roofline `broadcast`). Its own kind since issue 15 round 7 (as copy_strided, one rate
#:           per element: 548-614 us for the same 268 M elements, MEASURED over B x T, graph_chains_*_v6.csv)
#: quant     a fused per-token fp8 activation quantization (one CTA per row: amax pass, then scale-and-cast pass over
#:           the row in 1024-element blocks; vLLM's scaled_fp8_quant, our Triton _quant_rowwise), priced in waves of
#:           CTAs with a per-block chain (calibrated on _quant_rowwise)
#: attn_fi_decode / attn_fi_decode_fp8kv  FlashInfer's CUDA-core paged decode kernel, bf16 / fp8 K/V (simulator/kernels/flashinfer.py)
#: attn_fi_prefill / attn_fi_prefill_fp8kv  FlashInfer's FA2 paged prefill kernel: tensor-core decode and verification rows
#: attn_fi_mla  FlashInfer's persistent MLA kernel (sm_90, backend fa3)
#: attn_combine_fi  FlashInfer's VariableLengthMergeStates (persistent merge of split-KV partial states)
#: attn_fa3 / attn_combine_fa3  FlashAttention-3 (hopper/) paged split-KV forward and its combine kernel (simulator/kernels/fa3.py)
#: attn_fa4  FlashAttention-4 (flash_attn/cute, Blackwell) forward (simulator/kernels/fa3.py)
#: attn_flashmla / attn_combine_flashmla  FlashMLA's sm_90 split-KV MLA decode and its combine kernel (simulator/kernels/flashmla.py)
#: attn_xqa  TensorRT-LLM's XQA decode kernel, multi-block mode with in-kernel reduction (simulator/kernels/xqa.py)
#: attn_triton_sgl / attn_combine_triton_sgl  SGLang's Triton grouped decode kernel (stage 1) and its stage-2 reduce
#: attn_triton_vllm / attn_combine_triton_vllm  vLLM's Triton unified attention (2D / 3D) and its reduce_segments kernel
KINDS: tuple[str, ...] = ("gemm", "attention", "gather", "topk", "elementwise", "collective", "copy", "alltoall",
                          "topk_cta", "attn_cudnn", "attn_cudnn_rows", "attn_fa2", "attn_flex", "attn_triton", "attn_memeff",
                          "indexer", "gemm_fp8_rowwise", "copy_strided", "attn_combine_fa2", "attn_combine_triton",
                          "attn_combine_cudnn", "cast", "reduce", "quant", "attn_triton_fp8kv", "gemm_fp8",
                          "reduce_max", "copy_broadcast",
                          "attn_fi_decode", "attn_fi_decode_fp8kv", "attn_fi_prefill", "attn_fi_prefill_fp8kv",
                          "attn_fi_mla", "attn_combine_fi", "attn_fa3", "attn_combine_fa3", "attn_fa4", "attn_flashmla",
                          "attn_combine_flashmla", "attn_xqa", "attn_triton_sgl", "attn_combine_triton_sgl",
                          "attn_triton_vllm", "attn_combine_triton_vllm")
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
