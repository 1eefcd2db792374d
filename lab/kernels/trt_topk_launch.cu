// Built beside trt_topk_kernels.cuh, a local transcription of TensorRT-LLM cpp/tensorrt_llm/kernels/indexerTopK.cu @
// 07339e94 (its decode kernels and device helpers; not part of this repository): nvcc -O3 -std=c++17 -arch=sm_90a
// -shared -Xcompiler -fPIC -o trt_topk.so trt_topk_launch.cu
// Own launcher (extern C, for ctypes) of the transcribed TensorRT-LLM decode top-k kernels, following
// invokeIndexerTopKDecodeImpl's tiers for fp32 with no previous indices (no GVR) and no multi-pass scratch:
// single block (512 threads; 256 when useNarrowBlock) below the adaptive split-work threshold, else the fused
// split-work kernel (done counters given), 1024 threads where the slice holds >= 30,000 scores, else 512.
#include "trt_topk_kernels.cuh"
#include <cuda_runtime.h>

extern "C" int trt_topk_blocks_per_row(int rows, int n) {
  long long thr = rows >= 128 ? (1LL << 40) : rows >= 64 ? 524LL * 1024 : rows > 8 ? 200000LL : 65LL * 1024;
  return n >= thr ? trtk::fusedAuxBlocksPerRow(rows, n) : 1;
}

extern "C" int trt_topk_launch(const float* logits, const int* seqLens, int* out, int* auxIdx, float* auxLogits,
                               int* done, int rows, int n, void* stream_) {
  cudaStream_t stream = (cudaStream_t)stream_;
  const int topK = 2048, stride0 = n, stride1 = 1, next_n = 1;
  int nb = trt_topk_blocks_per_row(rows, n);
  if (nb == 1) {
    int sortThr = rows >= 4096 ? 200000 : rows >= 1024 ? 100000 : 12288;
    bool narrow = rows >= 256 && (long long)rows * n >= (4LL << 20) && n < sortThr;
    size_t smem = topK * sizeof(int32_t);
    if (narrow)
      trtk::topKPerRowDecode<256, false, false, float><<<rows, 256, smem, stream>>>(logits, seqLens, out, stride0,
                                                                                 stride1, topK, next_n);
    else
      trtk::topKPerRowDecode<512, false, false, float><<<rows, 512, smem, stream>>>(logits, seqLens, out, stride0,
                                                                                 stride1, topK, next_n);
  } else {
    bool wide = (n / nb) >= 30000;
    size_t smem = 2 * topK * sizeof(int32_t);
    static bool a512 = false, a1024 = false;
    dim3 grid(rows, nb);
    if (wide) {
      if (!a1024) {
        cudaFuncSetAttribute(trtk::topKPerRowDecodeFused<1024, float>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             (int)smem);
        a1024 = true;
      }
      trtk::topKPerRowDecodeFused<1024, float><<<grid, 1024, smem, stream>>>(logits, seqLens, out, auxIdx, auxLogits,
                                                                           done, stride0, stride1, topK, next_n, nb);
    } else {
      if (!a512) {
        cudaFuncSetAttribute(trtk::topKPerRowDecodeFused<512, float>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             (int)smem);
        a512 = true;
      }
      trtk::topKPerRowDecodeFused<512, float><<<grid, 512, smem, stream>>>(logits, seqLens, out, auxIdx, auxLogits,
                                                                         done, stride0, stride1, topK, next_n, nb);
    }
  }
  return (int)cudaGetLastError();
}

// The prefill entry (invokeIndexerTopKPrefill): one 512-thread topKPerRowPrefill CTA per row whatever its length,
// rows [rowStarts[i], rowEnds[i]) of a row-major [rows, n] tensor (the caller passes 0 / n for full rows).
extern "C" int trt_topk_prefill_launch(const float* logits, const int* rowStarts, const int* rowEnds, int* out,
                                       int rows, int n, void* stream_) {
  cudaStream_t stream = (cudaStream_t)stream_;
  const int topK = 2048;
  trtk::topKPerRowPrefill<512, float><<<rows, 512, topK * sizeof(int32_t), stream>>>(logits, rowStarts, rowEnds, out,
                                                                                    n, 1, topK, 0);
  return (int)cudaGetLastError();
}

// TensorRT-LLM's torch op as its DSA indexer calls it (cpp/tensorrt_llm/thop/IndexerTopKOp.cpp @ 07339e94:
// splitWorkThreshold = 200 * 1000 for every row count; no done counter, no multi-pass scratch, no previous indices):
// invokeIndexerTopKDecodeImpl's single-block tier below 200,000 columns (the narrow rule as above), else its original
// two-launch split: topKPerRowDecode<512, multipleBlocksPerRow> over a (rows, 10) grid writing each slice's top-k to
// the aux buffers (rows x 10 x topK each), then topKPerRowDecode<1024, mergeBlocks> over rows CTAs merging them.
extern "C" int trt_topk_op_blocks_per_row(int rows, int n) { return n >= 200000 ? 10 : 1; }

extern "C" int trt_topk_op_launch(const float* logits, const int* seqLens, int* out, int* auxIdx, float* auxLogits,
                                  int rows, int n, void* stream_) {
  cudaStream_t stream = (cudaStream_t)stream_;
  const int topK = 2048, stride0 = n, stride1 = 1, next_n = 1;
  if (n < 200000) {
    int sortThr = rows >= 4096 ? 200000 : rows >= 1024 ? 100000 : 12288;
    bool narrow = rows >= 256 && (long long)rows * n >= (4LL << 20) && n < sortThr;
    size_t smem = topK * sizeof(int32_t);
    if (narrow)
      trtk::topKPerRowDecode<256, false, false, float><<<rows, 256, smem, stream>>>(logits, seqLens, out, stride0,
                                                                                 stride1, topK, next_n);
    else
      trtk::topKPerRowDecode<512, false, false, float><<<rows, 512, smem, stream>>>(logits, seqLens, out, stride0,
                                                                                 stride1, topK, next_n);
  } else {
    const int nb = 10;
    trtk::topKPerRowDecode<512, true, false, float><<<dim3(rows, nb), 512, 2 * topK * sizeof(int32_t), stream>>>(
        logits, seqLens, auxIdx, stride0, stride1, topK, next_n, auxLogits, 0, nullptr);
    trtk::topKPerRowDecode<1024, false, true, float><<<rows, 1024, topK * sizeof(int32_t), stream>>>(
        auxLogits, seqLens, out, nb * topK, 1, topK, next_n, nullptr, nb, auxIdx);
  }
  return (int)cudaGetLastError();
}
