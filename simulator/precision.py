"""Storage sizes and arithmetic dtypes of weights, KV cache, activations and logits."""
from __future__ import annotations

#: Bytes per stored element, with the per-group scale overhead of each format.
#: bf16/fp16: 2 bytes. fp8 (e4m3): 1 byte + one fp32 scale per 128x128 weight block (DeepSeek-V3 report,
#: sec. 3.3.2) -> 4/16384 byte; for KV, a per-tensor scale (vLLM fp8 KV cache), negligible.
#: int4: 0.5 byte + an fp16 scale and fp16 zero per group of 128 (KIVI / QServe-style group quantization;
#: group 128 is an assumption, the common default) -> 4/128 byte.
DTYPE_BYTES: dict[str, float] = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0 + 4.0 / (128 * 128),
    "int8": 1.0 + 4.0 / 128,
    "int4": 0.5 + 4.0 / 128,
}
#: The dtype GEMM arithmetic runs in for each weight dtype (weight-only int4 dequantizes to bf16).
WEIGHT_COMPUTE_DTYPE = {"bf16": "bf16", "fp16": "fp16", "fp8": "fp8", "int8": "int8", "int4": "bf16",
                        "fp32": "fp32"}

#: activations (hidden states, Q, attention outputs) are bf16 throughout (2 bytes)
ACT_BYTES = 2.0
ACT_DTYPE = "bf16"
#: logits are written in fp32 for sampling (vLLM / SGLang compute the LM head output in fp32)
LOGIT_BYTES = 4.0

#: fp8 GEMMs (simulator.layers.gemm with fp8 arithmetic): activations are quantized to fp8 per token by a
#: kernel of their own before every fp8 GEMM. Kernels that quantization takes: `fused` runtime 1 (one
#: amax + scale + cast kernel, as vLLM's scaled_fp8_quant / SGLang's per_token_group_quant_fp8 and our Triton
#: _quant_rowwise in lab/measure_regimes.py); `unfused` / `hf` runtimes 8 (eager PyTorch:
#: abs, amax, float, clamp, / 448, x / scale, clamp, to(float8): measure_regimes.py _quant_eager). MEASURED on
#: the H100 (data/regimes_*.csv, family gemm): 3-5 us one kernel, 16-24 us eager at decode sizes.
FP8_ACT_QUANT_KERNELS = {"fused": 1, "unfused": 8, "hf": 8}
#: The op kind of an fp8 GEMM: 'gemm_fp8' = per-tensor scales (torch._scaled_mm tensorwise -> cuBLASLt, split-K at
#: small M and long K: simulator.layers.fp8_gemm; MEASURED 0.55-0.65 x the bf16 time at M <= 256) — ASSUMPTION: engines' default for fp8 checkpoints
#: (vLLM Fp8LinearMethod: per-tensor weight scale, dynamic activation scale). 'gemm_fp8_rowwise' = per-token x
#: per-channel scales (torch 2.11 / CUDA 13: cuBLASLt's outer-vector-scaled nvjet kernel, 128 x 128 tiles, one
#: persistent CTA per SM, no split-K: MEASURED kernel names and grids, regimes_grids_*_v3.csv; one CTA chain over K
#: per output tile, up to 3 x the per-tensor kernel at small M).
FP8_GEMM_KIND = "gemm_fp8"
