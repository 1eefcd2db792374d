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
