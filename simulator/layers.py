"""Op accounting for the model body: everything in a forward pass except the attention kernel itself.

Per layer: input norm, QKV projections (or MLA's low-rank q/kv paths and absorbed per-head matrices),
RoPE + KV-cache write, output projection, TP all-reduce, post-attention norm, MLP or MoE (router, experts,
shared experts, combine), TP all-reduce. Per step: embedding gather, final norm, LM head, sampling.
The attention kernel over the cache comes from the attention strategy (simulator/strategies/).
Under TensorRT-LLM's all-reduce (combo.allreduce == 'trtllm'), Llama layers wider than 4096 fuse the residual add +
RMSNorm into both all-reduces, as its PyTorch backend does (trtllm_fused_norm): those norm kernels leave the step
wherever its strategy table picks a custom kernel (norm_in_allreduce).

All counts are per device under tensor parallelism `combo.tp` (heads, FFN columns, vocabulary split over
ranks; the MLA latent cache and small replicated matrices are not split). `rows` = tokens the pass
processes = batch x query rows per sequence.

GEMM convention: x[M,K] @ W[K,N]: flops 2MKN; reads W (K*N weight bytes) + x (M*K activation bytes);
writes M*N activation bytes. A multiply-add is 2 flops.
"""
from __future__ import annotations

import numpy as np

from simulator.combo import Combo
from simulator.kernels import cublaslt as CL
from simulator.kernels.decode_attention import torch_reduce_layout
from simulator.ops import OpBuilder
from simulator.precision import ACT_BYTES, ACT_DTYPE, FP8_ACT_QUANT_KERNELS, FP8_GEMM_KIND, LOGIT_BYTES

#: Kernels a plain-PyTorch decoder layer launches for each fused op of an inference engine, as in the
#: reference step of lab/measure.py (DecodeModel.step): RoPE on q and on k is 7 kernels
#: each (two products, a difference, two products, a sum, a cat) plus two cache copies; SiLU and the
#: gate product are two; F.rms_norm is one; and the two residual additions that engines fuse into the
#: next norm are two more kernels per layer ("residual_add").
UNFUSED_TORCH_KERNELS = {"rope_kv_write": 16, "mlp_act": 2, "moe_experts_act": 2, "moe_shared_act": 2}
RESIDUAL_ADDS_PER_LAYER = 2


#: `kernels: hf` - Hugging Face transformers' Llama modules (modeling_llama, transformers 5.17), MEASURED: the
#: torch.profiler kernel list of one decode step (hwmodels/calibration/data/regimes_hf_profile_*.csv, 1,757
#: kernels at B=1, T=2048, 32 layers): LlamaRMSNorm is 8 kernels (to fp32, pow, mean, + eps, rsqrt, mul, to
#: bf16, weight mul: 65 of each = 2 per layer + the final norm); apply_rotary_pos_emb is 10 (q * cos, neg,
#: cat, * sin, add; the same for k) and the StaticCache update 2 index_copy kernels -> rope_kv_write 12; the
#: MLP activation 2 (silu, mul); residual adds 2 per layer; q / k / v and gate / up are separate GEMMs
#: (nvjet: 7 per layer, HF_SPLIT_OPS); cuBLAS adds a split-K reduce kernel to 5 of them at decode sizes (160
#: splitKreduce_kernel calls), which are NOT separate ops: the `gemm` kind is fitted to whole torch GEMM calls,
#: split-K reduce and its graph node included (measure.py / measure_regimes.py time F.linear, and the isolated
#: o / down projections of the regimes campaign match the model within 2 %); pricing them again would double-count
#: ~0.35 ms of a 11 ms step (the HF step's error is smaller with that double count: see
#: benchmarks/calibration_accuracy.py); repeat_kv expands K and V in two copies (repeat_kv_ops); the SDPA call with HF's attention mask adds 3 mask kernels per layer
#: (where, 2 fills: 32 + 64 in the profile); 115 more per step build the rotary tables and the mask
#: (arange, long adds, compares, cos / sin, casts). fp8 activation quantization is 8 eager kernels.
HF_TORCH_KERNELS = {"qkv_a_norm": 8, "mlp_act": 2, "moe_experts_act": 2, "moe_shared_act": 2}
#: the RMSNorm ops that `kernels: hf` prices kernel by kernel (hf_rmsnorm_ops), and the rope / cache update
#: (hf_rope_ops): each kernel with its own op kind and bytes, as the torch.profiler kernel list shows them
#: (regimes_hf_profile_*.csv; regimes_grids_*_v3.csv hf_grid): casts up (kind cast), broadcast products and
#: rotate_half's strided neg / cat (kind copy_strided), the mean (kind reduce), the rest vectorized (elementwise)
HF_NORMS = ("attn_norm", "mlp_norm", "moe_norm", "final_norm")
HF_SPLIT_OPS = {"qkv_proj": 3, "mlp_gate_up": 2, "moe_shared_gate_up": 2}
HF_MASK_KERNELS_PER_LAYER = 3
HF_STEP_KERNELS = 115


class _Unfused:
    """Forwards ops, multiplying the kernel count of ops that plain PyTorch splits into several kernels.
    Each of those kernels is priced with the fused op's bytes (every eager kernel reads and writes tensors
    of about the fused op's size), which matters at decode sizes only through the launch count. Ops in
    `split` are one fused GEMM that the module runs as several GEMMs: each gets an equal share of the
    flops and bytes."""

    def __init__(self, inner, table=None, split=None):
        self.inner, self.n = inner, inner.n
        self.table = UNFUSED_TORCH_KERNELS if table is None else table
        self.split = split or {}

    def add(self, name, kind, *, count=1.0, **kw):
        k = self.split.get(name, 1)
        if k > 1:
            kw = {key: (np.asarray(v, dtype=np.float64) / k if key in ("flops", "bytes_read", "bytes_written",
                                                                      "reread_bytes") else v)
                  for key, v in kw.items()}
        self.inner.add(name, kind, count=np.asarray(count, dtype=np.float64) * self.table.get(name, 1) * k, **kw)


def gemm_hbm_bytes(combo: Combo, rows, k: float, n: float):
    """A weight GEMM's HBM bytes per rank, [rows, k] @ [k, n]: its weights at the combo's weight bytes and its bf16
    activations in and out (what the tensor-parallel all-reduce after it carries in its op column after_gemm)."""
    return k * n * combo.wbytes + np.asarray(rows, dtype=np.float64) * (k + n) * ACT_BYTES


def gemm(b: OpBuilder, name: str, combo: Combo, rows, k: float, n: float, count: float,
         weight_bytes: float | None = None, dtype: str | None = None) -> None:
    """A weight GEMM of `rows` tokens: [rows, k] @ [k, n].

    fp8 arithmetic (fp8 weights): the activation is quantized to fp8 first by its own kernel (`act_quant`:
    reads the bf16 rows, writes fp8 rows and one fp32 scale per row; simulator.precision FP8_ACT_QUANT_KERNELS
    kernels) and the GEMM reads 1-byte activations, with op kind FP8_GEMM_KIND (per-tensor scales: the
    cuBLASLt fp8 GEMM, kind gemm; per-token x per-channel: the CUTLASS rowwise kernel, gemm_fp8_rowwise).
    Decode-sized rows (M <= 64) of bf16 and per-tensor fp8 GEMMs are priced as cuBLASLt runs them (a few CTAs walking
    serial K steps, plus the split-K reduce: simulator.kernels.cublaslt) where the device's fitted terms carry that
    chain (Combo.small_m_gemm: the H100 only); on other devices, and for M > 64, one kernel filling the device."""
    wb = combo.wbytes if weight_bytes is None else weight_bytes
    dt = dtype or combo.gemm_dtype
    small_m = combo.small_m_gemm
    if dt == "fp8":
        act_quant(b, rows, k, count, kernels=FP8_ACT_QUANT_KERNELS.get(getattr(combo, "kernels", "fused"), 1),
                  sms=combo.target.sm_count)
        fp8_gemm(b, name, rows, k, n, wb, count, small_m=small_m, splitk=combo.hardware.kind == "gpu")
        return
    where = None
    if small_m and dt == "bf16" and wb == ACT_BYTES:
        # decode-sized rows as cuBLASLt runs them (simulator.kernels.cublaslt); the other rows below
        cov = CL.add_gemm(b, name, "gemm", "bf16", rows, k, n, wb, ACT_BYTES, count, rule=True)
        where = ~cov if cov.any() else None
    b.add(name, "gemm", flops=2.0 * rows * k * n, bytes_read=k * n * wb + rows * k * ACT_BYTES,
          bytes_written=rows * n * ACT_BYTES, dtype=dt, count=count, where=where)


def act_quant(b: OpBuilder, rows, k: float, count, kernels: float = 1.0, sms: int | None = None) -> None:
    """Per-token fp8 quantization of a [rows, k] bf16 activation.

    fused (kernels = 1): one CTA per row reads it twice (the row's amax, then scale and cast: the structure of
    vLLM's per-token scaled_fp8_quant and of our Triton _quant_rowwise), writes fp8 values and one fp32 scale per
    row; the second pass re-reads what the first just read, from L2 while the activation fits (reread_bytes); each
    pass walks the row in QUANT_BLOCK-element blocks, one after another (serial_iters, kind quant).
    eager (kernels > 1): eager_quant_ops, the 8 kernels PyTorch runs (FP8_ACT_QUANT_KERNELS); `sms` = the target's SM
    count (torch's reduction picks its launch configuration from it)."""
    if kernels == 1:
        act = rows * k * ACT_BYTES
        b.add("act_quant", "quant", flops=3.0 * rows * k, bytes_read=2.0 * act, bytes_written=rows * k + rows * 4.0,
              reread_bytes=act, working_set=act, parallel_units=rows,
              serial_iters=2.0 * np.ceil(k / QUANT_BLOCK) * np.ones(np.shape(rows)), dtype="fp32", count=count)
    else:
        eager_quant_ops(b, rows, k, count, sms)


def torch_row_reduce(b, name: str, rows, length: float, elem_bytes: float, count, sms: int | None, l2_input: bool,
                     flops_per_elem: float = 1.0, kind: str = "reduce") -> None:
    """One torch row reduction (x.amax(-1) / x.mean(-1) over [rows, length], kind `kind`) with the launch configuration
    of Reduce.cuh's setReduceConfig (simulator.kernels.decode_attention.torch_reduce_layout: its CTAs and each thread's serial
    loads, priced in waves by the roofline; no layout when `sms` is None). l2_input: the input was just written by the
    kernel before (an intermediate), so it is read from L2 while it fits (reread_bytes, working set = the input).
    kind: 'reduce' for sums / means, 'reduce_max' for maxima (hwmodels.opkinds)."""
    e = np.asarray(rows, dtype=np.float64) * length
    inp = elem_bytes * e
    extra = {}
    if sms is not None:
        ctas, _, iters = torch_reduce_layout(rows, length, sms)
        extra = {"parallel_units": ctas, "serial_iters": iters}
    if l2_input:
        extra.update(reread_bytes=inp, working_set=inp)
    b.add(name, kind, flops=flops_per_elem * e, bytes_read=inp, bytes_written=np.asarray(rows, dtype=np.float64) * 4.0,
          dtype="fp32", count=count, **extra)


#: elements one CTA of the fused quantization kernel handles per step (measure_regimes.py _quant_rowwise BLOCK = 1024)
QUANT_BLOCK = 1024.0
#: flop-equivalents per element of the mixed-dtype broadcast division x / scale (bf16 / fp32 -> fp32), in units of
#: an up-cast's: MEASURED element rates 0.21-0.23 vs 0.32-0.33 T elements/s (regimes_*_v3.csv ew_kernel,
#: bcast_rowscale_bf16_fp32 vs cast_bf16_fp32 / cast_fp8_bf16, M >= 4096)
DIV_CAST_FLOPS = 1.5


def eager_quant_ops(b: OpBuilder, rows, k: float, count, sms: int | None = None) -> None:
    """Eager per-token fp8 quantization, x.abs().amax(-1).float().clamp(min).div(448); (x / scale).clamp(-448, 448)
    .to(float8) (lab/measure_regimes.py _quant_eager), as its 8 kernels (MEASURED kernel list,
    regimes_grids_*_v3.csv quant_eager): abs (vectorized), the row amax (kind reduce_max), three tiny kernels on the
    [rows, 1] scale, x / scale (a broadcast with promotion to fp32, converting element by element: kind cast,
    DIV_CAST_FLOPS per element), clamp (fp32, vectorized) and the cast to fp8 (vectorized). A kernel reading the tensor the kernel
    before it wrote (or read) reads it from L2 while it fits (reread_bytes, working set = that tensor)."""
    e = rows * k
    tiny = rows * 4.0
    b.add("act_quant", "elementwise", flops=e, bytes_read=2.0 * e, bytes_written=2.0 * e, dtype="fp32", count=count)
    torch_row_reduce(b, "act_quant", rows, k, 2.0, count, sms, l2_input=True, kind="reduce_max")
    b.add("act_quant", "elementwise", flops=rows, bytes_read=tiny, bytes_written=tiny, dtype="fp32",
          count=np.asarray(count, dtype=np.float64) * 3.0)
    b.add("act_quant", "cast", flops=DIV_CAST_FLOPS * e, bytes_read=2.0 * e + tiny, bytes_written=4.0 * e,
          reread_bytes=2.0 * e, working_set=4.0 * e, dtype="fp32", count=count)
    b.add("act_quant", "elementwise", flops=e, bytes_read=4.0 * e, bytes_written=4.0 * e, reread_bytes=4.0 * e,
          working_set=4.0 * e, dtype="fp32", count=count)
    b.add("act_quant", "elementwise", flops=e, bytes_read=4.0 * e, bytes_written=e, reread_bytes=4.0 * e,
          working_set=4.0 * e, dtype="fp32", count=count)


def hf_rmsnorm_ops(b, name: str, rows, h: float, count, sms: int | None = None) -> None:
    """transformers' LlamaRMSNorm as its 8 kernels (MEASURED kernel list, regimes_hf_profile_*.csv): x.to(fp32)
    (an up-cast: kind cast), pow(2) (vectorized), mean(-1) (kind reduce), + eps and rsqrt on [rows, 1] (tiny),
    h * rsqrt (a [rows, h] x [rows, 1] broadcast in fp32: copy_strided), .to(bf16) (vectorized) and weight * h
    (vectorized at one row, a broadcast over rows otherwise: copy_strided)."""
    e = rows * h
    c = np.asarray(count, dtype=np.float64)
    b.add(name, "cast", flops=e, bytes_read=2.0 * e, bytes_written=4.0 * e, dtype="fp32", count=c)
    b.add(name, "elementwise", flops=e, bytes_read=4.0 * e, bytes_written=4.0 * e, dtype="fp32", count=c)
    torch_row_reduce(b, name, rows, h, 4.0, c, sms, l2_input=True)   # mean(-1) of pow's output, just written
    b.add(name, "elementwise", flops=rows, bytes_read=rows * 4.0, bytes_written=rows * 4.0, dtype="fp32", count=2.0 * c)
    b.add(name, "copy_strided", flops=e, bytes_read=4.0 * e, bytes_written=4.0 * e, dtype="fp32", count=c)
    b.add(name, "elementwise", flops=e, bytes_read=4.0 * e, bytes_written=2.0 * e, dtype="fp32", count=c)
    one = np.asarray(rows, dtype=np.float64) <= 1
    b.add(name, "elementwise", flops=e, bytes_read=2.0 * e, bytes_written=2.0 * e, dtype="fp32", count=c, where=one)
    b.add(name, "copy_strided", flops=e, bytes_read=2.0 * e, bytes_written=2.0 * e, dtype="fp32", count=c, where=~one)


def hf_rope_ops(b, rows, hq: float, hkv: float, d: float, kvb: float, count) -> None:
    """transformers' apply_rotary_pos_emb on q and k (per tensor: x * cos and rotate_half(x) * sin as broadcast
    products, rotate_half's neg of a slice and its cat: copy_strided; the sum: vectorized) and the StaticCache
    update (index_copy_ of k and v: copy_strided): 12 kernels, as the MEASURED kernel list shows."""
    c = np.asarray(count, dtype=np.float64)
    for heads in (hq, hkv):
        e = rows * heads * d
        b.add("rope_kv_write", "copy_strided", flops=e, bytes_read=2.0 * e, bytes_written=2.0 * e, dtype="fp32",
              count=2.0 * c)                                   # x * cos, rotate_half(x) * sin
        b.add("rope_kv_write", "copy_strided", flops=e / 2, bytes_read=e, bytes_written=e, dtype="fp32", count=c)  # neg
        b.add("rope_kv_write", "copy_strided", flops=e, bytes_read=2.0 * e, bytes_written=2.0 * e, dtype="fp32",
              count=c)                                         # cat
        b.add("rope_kv_write", "elementwise", flops=e, bytes_read=4.0 * e, bytes_written=2.0 * e, dtype="fp32", count=c)
    e = rows * hkv * d
    b.add("rope_kv_write", "copy_strided", flops=e, bytes_read=2.0 * e, bytes_written=e * kvb, dtype="fp32",
          count=2.0 * c)                                       # index_copy_ of k and v into the cache


def repeat_kv_ops(b, name: str, B, T, hq, hkv, d, kvb: float, count, where=None, tensors: float = 2.0) -> None:
    """transformers' repeat_kv of K and V (expand + reshape of [B, hkv, T, d] to hq heads: one broadcast copy per
    tensor, `count` of each of the `tensors`, kind copy_broadcast). Every element written is one load: bytes_read counts them all,
    reread_bytes the (hq - hkv) / hq of them that re-read a source row another copy already read, and working_set
    is one source row (one KV head's T x d): what hwmodels.roofline's broadcast term prices (load latency: the
    copies of a row in flight together, a row near the L2's size). One flop-equivalent per element written."""
    e = np.asarray(B, dtype=np.float64) * T * hq * d
    b.add(name, "copy_broadcast", flops=e, bytes_read=e * kvb, bytes_written=e * kvb,
          reread_bytes=e * kvb * (1.0 - np.asarray(hkv, dtype=np.float64) / hq), working_set=np.asarray(T) * d * kvb,
          dtype="fp32", count=tensors * np.asarray(count, dtype=np.float64), where=where)


def fp8_gemm(b: OpBuilder, name: str, rows, k: float, n: float, wb: float, count, kind: str | None = None,
             small_m: bool = False, splitk: bool = True) -> None:
    """An fp8 GEMM on fp8 activations: [rows, k] (1 B) @ [k, n] (wb B) -> bf16. Kind FP8_GEMM_KIND unless given;
    the rowwise kernel (gemm_fp8_rowwise) has no split-K: a 128 x 128 output tile per CTA step, walking all of K
    in 128-wide steps (CTAs and serial iterations for hwmodels.roofline's wave model). MEASURED (regimes_grids_*_v3
    .csv): torch 2.11 / CUDA 13 runs rowwise scales as cuBLASLt's nvjet_sm90_qqtst_128x128_128x6_1x1_..._ovscale
    kernel for every measured shape (M 1-4096; not the CUTLASS f8f8bf16_rowwise path), grid = min(tiles, SMs)
    persistent CTAs of 214 KB shared memory (one per SM); the wave model with one slot per SM prices that.
    small_m (Combo.small_m_gemm: the device carries the fitted chain terms, the H100 only): per-tensor fp8 rows of
    M <= 64 are priced as cuBLASLt's small-M kernels (simulator.kernels.cublaslt: selection table, else its
    structural rule; few CTAs walking serial K steps plus the split-K reduce); the other rows as below. splitk: whether
    cuBLASLt's split-K reduce kernel follows a per-tensor GEMM where cuBLASLt splits K (splitk_reduce): a GPU's library
    choice, so False on a dataflow device (no cuBLASLt: its GEMM was never priced as split, and a reduce alone would
    only make a 16-row prefill dearer than a 29-row one)."""
    kind = kind or FP8_GEMM_KIND
    where = None
    if small_m and kind == "gemm_fp8" and wb == 1.0:
        # decode-sized rows as cuBLASLt runs them (small_m: the device carries the chain terms, Combo.small_m_gemm)
        cov = CL.add_gemm(b, name, kind, "fp8", rows, k, n, wb, 1.0, count, rule=True)
        if cov.any():
            where = ~cov
    extra = {}
    flops = 2.0 * rows * k * n
    if kind == "gemm_fp8_rowwise":
        tiles = np.ceil(np.asarray(rows, dtype=np.float64) / 128.0) * np.ceil(n / 128.0)
        extra = {"parallel_units": tiles, "serial_iters": np.ceil(k / 128.0) * np.ones(np.shape(rows))}
        # every CTA step multiplies a whole 128 x 128 x 128 tile whatever rows are valid (tile
        # flops; MEASURED 0.35-0.40 us per K step of one CTA at M = 1 over 8-32 tiles, regimes_*_v4.csv gemm_small
        # fp8_rowwise, about the tile's fp8 arithmetic on one SM: 4.2 MFLOP at 1/132 of 1979 TFLOP/s = 0.28 us)
        flops = 2.0 * tiles * 128.0 * 128.0 * np.ceil(k / 128.0) * 128.0
    b.add(name, kind, flops=flops, bytes_read=k * n * wb + rows * k * 1.0,
          bytes_written=rows * n * ACT_BYTES, dtype="fp8", count=count, where=where, **extra)
    if kind == "gemm_fp8" and splitk:
        splitk_reduce(b, name, rows, k, n, count if where is None else np.where(where, count, 0.0))


#: cuBLASLt's split-K choice for per-tensor-scaled fp8 GEMMs (torch 2.11 / CUDA 13 on the H100), MEASURED on the fit
#: shapes of measure_regimes.py (regimes_grids_*_v4.csv kernel names: `..._splitK_...` plus a splitKreduce_kernel):
#: the down projection (K 14336) splits at M <= 24 and not at M >= 32; no K = 4096 shape splits (N 1024, 4096 x 6144,
#: 14336, 28672, any M). The thresholds are the geometric midpoints between those observations: split iff
#: K > SPLITK_MIN_K and rows < SPLITK_MAX_ROWS. cuBLASLt's heuristic itself is not public; other shapes, GPUs and
#: library versions may choose otherwise (the held-out 1280 x 8192 shape also splits at M 32-64).
SPLITK_MIN_K = float(np.sqrt(4096.0 * 14336.0))
SPLITK_MAX_ROWS = float(np.sqrt(24.0 * 32.0))


def splitk_reduce(b: OpBuilder, name: str, rows, k: float, n: float, count) -> None:
    """cuBLASLt's split-K reduce kernel after an fp8 GEMM where it splits K (SPLITK_MIN_K / SPLITK_MAX_ROWS): one small
    kernel reading the fp32 partial outputs (two splits assumed: the partial count is not visible in the kernel name)
    and writing bf16 [rows, n]; kind elementwise."""
    r = np.asarray(rows, dtype=np.float64)
    split = (k > SPLITK_MIN_K) & (r < SPLITK_MAX_ROWS)
    if not np.any(split):
        return
    b.add(name, "elementwise", flops=2.0 * r * n, bytes_read=2.0 * r * n * 4.0, bytes_written=r * n * ACT_BYTES,
          dtype="fp32", count=np.where(split, np.asarray(count, dtype=np.float64), 0.0))


def head_bmm(b: OpBuilder, name: str, combo: Combo, rows, k: float, n: float, heads: float, count: float) -> None:
    """A per-head weight product done as ONE batched GEMM over the heads on this device: for each of `heads`
    heads, [rows, k] @ [k, n]. MLA's absorbed W_UK / W_UV run this way in every engine (torch.bmm over the
    head dimension: SGLang / vLLM DeepSeek attention backends, TensorRT-LLM's MLA), one kernel per layer."""
    wb = combo.wbytes
    b.add(name, "gemm", flops=2.0 * rows * k * n * heads, bytes_read=heads * (k * n * wb + rows * k * ACT_BYTES),
          bytes_written=heads * rows * n * ACT_BYTES, dtype=combo.gemm_dtype, count=count)


def elementwise(b: OpBuilder, name: str, rows, width_in: float, width_out: float, count: float,
                flops_per_elem: float = 4.0, out_bytes: float = ACT_BYTES) -> None:
    """A memory-bound vector kernel reading rows x width_in and writing rows x width_out elements."""
    b.add(name, "elementwise", flops=flops_per_elem * rows * width_in, bytes_read=rows * width_in * ACT_BYTES,
          bytes_written=rows * width_out * out_bytes, dtype="fp32", count=count)


def allreduce(b: OpBuilder, name: str, combo: Combo, rows, count: float, fused=False, gemm_bytes=None):
    """Tensor-parallel all-reduce of the hidden states (bf16) after a row-parallel GEMM, as combo.allreduce's engine
    runs it (simulator.kernels.allreduce: NCCL's ring, or the engine's custom one-shot / two-shot kernel below its
    size cap). `fused` (trtllm_fused_norm): the call carries the residual add + RMSNorm; returns where (per setting)
    the norm ran inside the all-reduce kernel, so the caller drops its own norm op there. `gemm_bytes`: the preceding
    GEMM's HBM bytes per rank (gemm_hbm_bytes), carried in the op column after_gemm (1 where not given)."""
    from simulator.kernels.allreduce import add_allreduce, trtllm_sm

    tp = combo.tp
    engine = getattr(combo, "allreduce", "nccl")
    h = combo.model.hidden
    nbytes = rows * h * ACT_BYTES
    t = combo.target
    kw = dict(hidden=h, sms=t.sm_count, fused=fused, sm=trtllm_sm(t.architecture),
              after_gemm=1.0 if gemm_bytes is None else np.maximum(np.asarray(gemm_bytes, dtype=np.float64), 1.0))
    if isinstance(tp, np.ndarray):  # an array-valued combo (docs/VECTOR_COMBOS.md): only where tp > 1
        if (tp > 1).any():
            return add_allreduce(b, name, engine, nbytes, tp, count, where=tp > 1, **kw)
    elif tp > 1:
        return add_allreduce(b, name, engine, nbytes, tp, count, **kw)
    return np.zeros(np.shape(rows), bool)


def trtllm_fused_norm(combo: Combo, site: str):
    """Whether TensorRT-LLM's PyTorch backend fuses a norm into this all-reduce (per setting where tp is an array):
    tensorrt_llm/_torch/models/modeling_llama.py @ 3a5901cd, LlamaDecoderLayer: fusion only for hidden_size > 4096
    ("accuracy issues" of small models) and tp > 1; site 'attn' (PRE_MLP_FUSION, not under attention DP): the
    attention output's all-reduce carries the residual add + post_attention_layernorm; site 'mlp' (POST_MLP_FUSION):
    the MLP's all-reduce carries the residual add + the next layer's input_layernorm (the last layer's: the final
    norm). Only the Llama family's dense layers (the file read), the engine's fused kernels, bf16 activations
    (fusion op RESIDUAL_RMS_NORM; fp8 / nvfp4 checkpoints fuse their quantization too, not modelled: their
    act_quant kernel stays). Thresholds are in kernels/data/trtllm_allreduce_strategy.yaml (llama_fusion)."""
    from simulator.kernels.allreduce import trtllm_rule

    m = combo.model
    rule = trtllm_rule()["fusion"]
    ok = (getattr(combo, "allreduce", "nccl") == "trtllm" and getattr(combo, "kernels", "fused") == "fused"
          and m.family == rule["family"] and not m.mla and not m.moe and m.hidden > rule["min_hidden_exclusive"])
    if site == "attn":
        ok = ok and combo.attn_dp == 1
    return np.asarray(combo.tp, float) > 1 if ok else False


def norm_in_allreduce(combo: Combo, rows, site: str) -> np.ndarray:
    """Where (per setting) the all-reduce at `site` carries its norm: TensorRT-LLM fuses it there
    (trtllm_fused_norm) and its table picks a custom kernel for the RESIDUAL_RMS_NORM call (an NCCL pick runs the
    norm as its own kernel). The same mask `allreduce` returns when it adds that call."""
    from simulator.kernels.allreduce import choose, trtllm_sm

    f = np.asarray(trtllm_fused_norm(combo, site), bool)
    shape = np.broadcast(np.asarray(rows, float), np.asarray(combo.tp, float)).shape
    if not f.any():
        return np.zeros(shape, bool)
    h = combo.model.hidden
    pick = choose("trtllm", combo.tp, np.asarray(rows, float) * h * ACT_BYTES, h, "residual_rms_norm",
                  trtllm_sm(combo.target.architecture))
    return np.broadcast_to(f & (pick != "nccl"), shape)


def norm(b, combo: Combo, name: str, rows, h: float, count) -> None:
    """An RMSNorm: one kernel, or HF's 8 (kernels: hf, hf_rmsnorm_ops)."""
    if getattr(combo, "kernels", "fused") == "hf":
        hf_rmsnorm_ops(b, name, rows, h, count, sms=combo.target.sm_count)
    else:
        elementwise(b, name, rows, h, h, count)


def attention_in_ops(b: OpBuilder, combo: Combo, rows, count: float, phase: str, norm_count=None) -> None:
    """Projections and cache writes before the attention kernel; the input norm runs `norm_count` times (default
    `count`; fewer where the previous layer's all-reduce carried it: trtllm_fused_norm)."""
    m, h = combo.model, combo.model.hidden
    norm(b, combo, "attn_norm", rows, h, count if norm_count is None else norm_count)
    if m.mla:
        a = m.mla
        hd = combo.heads_dev
        # q_a and kv_a (with the shared rope key) fused into one replicated GEMM, as SGLang / vLLM do
        gemm(b, "qkv_a_proj", combo, rows, h, a.q_lora_rank + a.kv_lora_rank + a.qk_rope_head_dim, count)
        elementwise(b, "qkv_a_norm", rows, a.q_lora_rank + a.kv_lora_rank, a.q_lora_rank + a.kv_lora_rank, count)
        gemm(b, "q_b_proj", combo, rows, a.q_lora_rank, hd * (a.qk_nope_head_dim + a.qk_rope_head_dim), count)
        if phase == "decode":
            # absorbed W_UK: per head q_nope[128] @ W_UK[128, 512] -> latent query, batched over the heads
            head_bmm(b, "q_absorb", combo, rows, a.qk_nope_head_dim, a.kv_lora_rank, hd, count)
        else:
            # prefill runs MHA on expanded keys/values: latent[512] -> per head K_nope[128] and V[128]
            gemm(b, "kv_b_proj", combo, rows, a.kv_lora_rank, hd * (a.qk_nope_head_dim + a.v_head_dim), count)
        lat = a.kv_lora_rank + a.qk_rope_head_dim
        b.add("rope_kv_write", "elementwise", flops=4.0 * rows * (hd + 1) * a.qk_rope_head_dim,
              bytes_read=rows * (hd * a.qk_rope_head_dim + lat) * ACT_BYTES,
              bytes_written=rows * (hd * a.qk_rope_head_dim * ACT_BYTES + lat * combo.kvbytes),
              dtype="fp32", count=count)
    else:
        hq, hkv, d = combo.heads_dev, combo.kv_heads_dev, m.head_dim
        gemm(b, "qkv_proj", combo, rows, h, (hq + 2 * hkv) * d, count)
        if getattr(combo, "kernels", "fused") == "hf":
            hf_rope_ops(b, rows, hq, hkv, d, combo.kvbytes, count)
            return
        b.add("rope_kv_write", "elementwise", flops=4.0 * rows * (hq + hkv) * d,
              bytes_read=rows * (hq + 2 * hkv) * d * ACT_BYTES,
              bytes_written=rows * (hq * d * ACT_BYTES + 2 * hkv * d * combo.kvbytes),
              dtype="fp32", count=count)


def attention_out_ops(b: OpBuilder, combo: Combo, rows, count: float, phase: str):
    """Output projection (and MLA's absorbed W_UV) after the attention kernel, and the TP all-reduce; returns where
    (per setting) that all-reduce carried the post-attention norm (trtllm_fused_norm)."""
    m, h = combo.model, combo.model.hidden
    hd = combo.heads_dev
    if m.mla:
        a = m.mla
        if phase == "decode":
            head_bmm(b, "v_absorb", combo, rows, a.kv_lora_rank, a.v_head_dim, hd, count)
        k = hd * a.v_head_dim
    else:
        k = hd * m.head_dim
    gemm(b, "o_proj", combo, rows, k, h, count)
    return allreduce(b, "allreduce_attn", combo, rows, count, fused=trtllm_fused_norm(combo, "attn"),
                     gemm_bytes=gemm_hbm_bytes(combo, rows, k, h))


def mlp_ops(b: OpBuilder, combo: Combo, rows, ffn: int, count: float, prefix: str = "mlp"):
    """Dense MLP with its FFN width split over TP ranks: gated (gate+up fused, act*mul, down) or plain. Returns the
    down projection's HBM bytes per rank (gemm_hbm_bytes: what the all-reduce after it declares)."""
    m, h = combo.model, combo.model.hidden
    f = ffn / combo.tp
    if m.mlp_matrices == 3:
        gemm(b, f"{prefix}_gate_up", combo, rows, h, 2 * f, count)
        elementwise(b, f"{prefix}_act", rows, 2 * f, f, count)
    else:
        gemm(b, f"{prefix}_up", combo, rows, h, f, count)
        elementwise(b, f"{prefix}_act", rows, f, f, count)
    gemm(b, f"{prefix}_down", combo, rows, f, h, count)
    return gemm_hbm_bytes(combo, rows, f, h)


def expected_distinct_experts(experts: int, top_k: int, tokens) -> np.ndarray:
    """Expected number of distinct routed experts that `tokens` tokens touch, each picking `top_k` of
    `experts` uniformly at random: E * (1 - (1 - k/E)^tokens).

    Uniform routing is an assumption (real routers are skewed, which touches fewer experts and makes
    this an upper bound on expert weight traffic)."""
    tokens = np.asarray(tokens, dtype=np.float64)
    return experts * (1.0 - (1.0 - top_k / experts) ** tokens)


def streams_all_experts(combo: Combo) -> bool:
    """Whether the runtime streams EVERY routed expert's weights each step: a compiled static dataflow graph
    (a dataflow device run as a graph). The SN40L compiler "operates primarily on static graphs, where all
    operations are executed on tensors with fixed shapes" (SnapStream sec. 2.3), so its fused FFN kernel holds
    every expert's GEMM with a fixed token slot count and cannot skip an expert no token routes to; sec. 4.2:
    samples routed to an expert are fused ("batch-sample fusion") and "the weights for each expert are loaded
    only once": once per step, for every expert. A dynamic runtime (GPUs, eager or CUDA graphs over grouped
    GEMMs) reads only the experts the step's tokens touch."""
    return combo.hardware.kind == "dataflow" and combo.launch == "graph"


def moe_ops(b: OpBuilder, combo: Combo, rows, count: float):
    """One MoE FFN: router GEMM + top-k gating, routed experts (grouped GEMMs over the distinct experts
    touched), shared experts (a dense MLP, TP-sharded), weighted combine. Returns the routed experts' down GEMM's
    HBM bytes per device (what the all-reduce after the layer declares, with gemm_hbm_bytes' meaning).

    ep == 1: every expert is TP-sharded (each device holds 1/tp of every expert's columns and computes
    every token-expert pair on its slice). ep == tp (TP attention + EP MoE, "TEP"): each device holds
    E/ep whole experts and computes the pairs routed to them; hidden states are replicated after the
    attention all-reduce, so no dispatch is needed and the partial outputs are summed by the same
    all-reduce as under TP. Per device we price the expected (mean) load; routing imbalance makes the
    busiest device slower than this (an assumption we state rather than hide). A static dataflow graph
    (`streams_all_experts`) reads every expert's weights whatever the routing."""
    m, h = combo.model, combo.model.hidden
    e = m.moe
    f = e.expert_ffn / combo.tp if combo.ep == 1 else e.expert_ffn
    gemm(b, "moe_router", combo, rows, h, e.experts, count, weight_bytes=ACT_BYTES, dtype=ACT_DTYPE)
    elementwise(b, "moe_gating", rows, e.experts, e.top_k, count)
    rows_arr = np.asarray(rows, dtype=np.float64)
    touched = (np.full_like(rows_arr, float(e.experts)) if streams_all_experts(combo)
               else expected_distinct_experts(e.experts, e.top_k, rows_arr)) / combo.ep
    assign = rows * e.top_k / combo.ep  # token-expert pairs computed on this device
    gate_up_n = (m.mlp_matrices - 1) * f
    b.add("moe_experts_gate_up", "gemm", flops=2.0 * assign * h * gate_up_n,
          bytes_read=touched * h * gate_up_n * combo.wbytes + assign * h * ACT_BYTES,
          bytes_written=assign * gate_up_n * ACT_BYTES, dtype=combo.gemm_dtype, count=count)
    elementwise(b, "moe_experts_act", assign, gate_up_n, f, count)
    down_read = touched * f * h * combo.wbytes + assign * f * ACT_BYTES
    b.add("moe_experts_down", "gemm", flops=2.0 * assign * f * h, bytes_read=down_read,
          bytes_written=assign * h * ACT_BYTES, dtype=combo.gemm_dtype, count=count)
    if e.shared_experts:
        mlp_ops(b, combo, rows, e.shared_experts * e.expert_ffn, count, prefix="moe_shared")
    b.add("moe_combine", "elementwise", flops=2.0 * assign * h, bytes_read=assign * h * ACT_BYTES,
          bytes_written=rows * h * ACT_BYTES, dtype="fp32", count=count)
    return down_read + assign * h * ACT_BYTES


def ffn_ops(b: OpBuilder, combo: Combo, rows, phase: str, attn_fused=False):
    """Post-attention norm + FFN for every layer (dense layers and MoE layers counted separately). attn_fused: where
    the attention's all-reduce carried the post-attention norm (no mlp_norm kernel there). Returns where the MLP's
    all-reduce carried the next layer's input norm (trtllm_fused_norm)."""
    m, h = combo.model, combo.model.hidden
    mlp_fused = False
    if m.dense_layers:
        keep = np.where(np.asarray(attn_fused, bool), 0.0, 1.0)
        norm(b, combo, "mlp_norm", rows, h, m.dense_layers * keep)
        down = mlp_ops(b, combo, rows, m.ffn, m.dense_layers)
        mlp_fused = allreduce(b, "allreduce_mlp", combo, rows, m.dense_layers, fused=trtllm_fused_norm(combo, "mlp"),
                              gemm_bytes=down)
    if m.moe and m.moe_layers:
        norm(b, combo, "moe_norm", rows, h, m.moe_layers)
        down = moe_ops(b, combo, rows, m.moe_layers)
        allreduce(b, "allreduce_moe", combo, rows, m.moe_layers, gemm_bytes=down)
    return mlp_fused


def head_ops(b: OpBuilder, combo: Combo, rows, logit_rows, final_fused=False) -> None:
    """Embedding gather, final norm, LM head (vocabulary split over TP ranks) and sampling. final_fused: where the
    last layer's all-reduce carried the final norm (trtllm_fused_norm; no final_norm kernel there).

    rows: tokens embedded; logit_rows: tokens whose logits are needed (all rows in decode/verification,
    the last token per sequence in prefill). Embedding and LM head stay bf16 whatever the weight dtype
    (fp8 / int4 recipes keep them in bf16)."""
    m, h = combo.model, combo.model.hidden
    v = m.vocab / combo.tp
    b.add("embedding", "gather", bytes_read=rows * h * ACT_BYTES, bytes_written=rows * h * ACT_BYTES,
          dtype="fp32")
    norm(b, combo, "final_norm", logit_rows, h, np.where(np.asarray(final_fused, bool), 0.0, 1.0))
    b.add("lm_head", "gemm", flops=2.0 * logit_rows * h * v, bytes_read=h * v * ACT_BYTES + logit_rows * h * ACT_BYTES,
          bytes_written=logit_rows * v * LOGIT_BYTES, dtype=ACT_DTYPE)
    b.add("sampling", "elementwise", flops=4.0 * logit_rows * v, bytes_read=logit_rows * v * LOGIT_BYTES,
          bytes_written=logit_rows * 8.0, dtype="fp32")


def attention_dp_reshard(b: OpBuilder, combo: Combo, rows, count: float, name: str, width: float) -> None:
    """All-to-all between the projections' TP layout (heads split, all sequences) and the attention
    kernel's DP layout (sequences split): each device exchanges its `width`-wide slice of every row."""
    b.add(name, "alltoall", bytes_read=rows * width * ACT_BYTES, dtype=ACT_DTYPE, count=count,
          devices=combo.attn_dp)


def body_ops(b: OpBuilder, combo: Combo, rows, logit_rows, phase: str, attention_kernel) -> None:
    """All ops of one forward pass; `attention_kernel(b, layers)` adds the attention kernel itself, run in `layers`
    layers (its StepShape.layers)."""
    m = combo.model
    if combo.kernels in ("unfused", "hf"):
        b = _Unfused(b) if combo.kernels == "unfused" else _Unfused(b, HF_TORCH_KERNELS, HF_SPLIT_OPS)
        b.add("residual_add", "elementwise", flops=rows * m.hidden, bytes_read=2 * rows * m.hidden * ACT_BYTES,
              bytes_written=rows * m.hidden * ACT_BYTES, dtype="fp32", count=RESIDUAL_ADDS_PER_LAYER * m.layers)
    if combo.kernels == "hf":
        # HF's attention mask (where + fills over the cache length) per layer, the per-step rotary tables and
        # mask construction (tiny kernels; see HF_TORCH_KERNELS)
        # the mask's where (a broadcast: copy_strided) and two fills (regimes_hf_profile_*.csv)
        b.add("hf_attn_mask", "copy_strided", flops=rows, bytes_read=rows * 4.0, bytes_written=rows * 4.0,
              dtype="fp32", count=m.layers)
        b.add("hf_attn_mask", "elementwise", flops=rows, bytes_read=rows * 4.0, bytes_written=rows * 4.0,
              dtype="fp32", count=(HF_MASK_KERNELS_PER_LAYER - 1) * m.layers)
        b.add("hf_step_misc", "elementwise", flops=rows, bytes_read=rows * 4.0, bytes_written=rows * 4.0,
              dtype="fp32", count=HF_STEP_KERNELS)
    # layers 1 .. L-1 take their input norm from the previous layer's MLP all-reduce where that fuses it
    mlp_fuses = norm_in_allreduce(combo, rows, "mlp")
    attention_in_ops(b, combo, rows, m.layers, phase, norm_count=m.layers - np.where(mlp_fuses, m.layers - 1.0, 0.0))
    # the all-to-all between the projections' TP layout and the attention's DP layout: every decode step under
    # attention DP, and a prefill whose prompt's attention runs on its DP group (Combo.prefill_dp)
    dp = bool(np.any(np.asarray(combo.attn_dp) > 1)) and (phase == "decode" or combo.prefill_dp)
    if dp:
        q_width = combo.heads_dev * ((m.mla.kv_lora_rank + m.mla.qk_rope_head_dim) if m.mla else m.head_dim)
        attention_dp_reshard(b, combo, rows, m.layers, "attn_dp_reshard_in", q_width)
    attention_kernel(b, m.layers)
    if dp:
        o_width = combo.heads_dev * (m.mla.kv_lora_rank if m.mla else m.head_dim)
        attention_dp_reshard(b, combo, rows, m.layers, "attn_dp_reshard_out", o_width)
    attn_fused = attention_out_ops(b, combo, rows, m.layers, phase)
    mlp_fused = ffn_ops(b, combo, rows, phase, attn_fused)
    head_ops(b, combo, rows, logit_rows, final_fused=mlp_fused)
