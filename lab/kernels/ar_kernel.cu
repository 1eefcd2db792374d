// A small one-shot / two-shot peer-memory all-reduce of bf16 (written for the measurement; single process driving
// several GPUs with peer access). Structure as vLLM csrc/custom_all_reduce.cuh describes it: 512-thread blocks,
// at most 36 blocks, a start barrier (one peer flag store per rank + polling), 16-B packed loads, fp32 accumulation;
// two-shot = reduce-scatter into a scratch buffer, a grid-wide barrier across ranks, then all-gather from the peers'
// scratch buffers; an end barrier so no rank leaves while others still read its buffers.
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cstdint>
struct Sig { uint32_t start[8]; uint32_t mid[8]; uint32_t end[8]; uint32_t cnt_mid; uint32_t cnt_end; uint32_t pad[6]; uint32_t epoch[64]; };
struct Args { const uint4* in[8]; uint4* tmp[8]; Sig* sig[8]; };
__device__ __forceinline__ void acc8(float* a, uint4 v) {
  const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&v);
#pragma unroll
  for (int i = 0; i < 4; i++) { float2 f = __bfloat1622float2(h[i]); a[2*i] += f.x; a[2*i+1] += f.y; }
}
__device__ __forceinline__ uint4 pack8(const float* a) {
  uint4 v; __nv_bfloat162* h = reinterpret_cast<__nv_bfloat162*>(&v);
#pragma unroll
  for (int i = 0; i < 4; i++) h[i] = __floats2bfloat162_rn(a[2*i], a[2*i+1]);
  return v;
}
__device__ __forceinline__ uint32_t ld_vol(const uint32_t* p) { return *reinterpret_cast<const volatile uint32_t*>(p); }
__device__ __forceinline__ void st_vol(uint32_t* p, uint32_t v) { *reinterpret_cast<volatile uint32_t*>(p) = v; }

template <int W>
__device__ void barrier_all_blocks(const Args& a, int rank, uint32_t e, uint32_t* cnt, int which, bool all_wait) {
  // which: 1 = mid, 2 = end. The last block of this rank to arrive signals every peer; then (all_wait) every block
  // waits for every peer's signal, else only the signalling block does.
  Sig* me = a.sig[rank];
  __shared__ int last;
  __syncthreads();
  if (threadIdx.x == 0) { __threadfence_system(); uint32_t prev = atomicAdd(cnt, 1u); last = ((prev + 1) % gridDim.x) == 0; }
  __syncthreads();
  if (last && threadIdx.x < W) { __threadfence_system(); st_vol(which == 1 ? &a.sig[threadIdx.x]->mid[rank] : &a.sig[threadIdx.x]->end[rank], e); }
  if ((all_wait || last) && threadIdx.x < W) { const uint32_t* f = which == 1 ? &me->mid[threadIdx.x] : &me->end[threadIdx.x]; while (ld_vol(f) < e) {} }
  __syncthreads();
}

template <int W>
__global__ void __launch_bounds__(512, 1) oneshot(Args a, uint4* out, int rank, int n) {
  Sig* me = a.sig[rank];
  const uint32_t e = me->epoch[blockIdx.x] + 1;
  if (blockIdx.x == 0 && threadIdx.x < W) st_vol(&a.sig[threadIdx.x]->start[rank], e);
  if (threadIdx.x < W) while (ld_vol(&me->start[threadIdx.x]) < e) {}
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
#pragma unroll
    for (int j = 0; j < W; j++) acc8(acc, a.in[j][i]);
    out[i] = pack8(acc);
  }
  barrier_all_blocks<W>(a, rank, e, &me->cnt_end, 2, false);
  if (threadIdx.x == 0) me->epoch[blockIdx.x] = e;
}

template <int W>
__global__ void __launch_bounds__(512, 1) twoshot(Args a, uint4* out, int rank, int n) {
  Sig* me = a.sig[rank];
  const uint32_t e = me->epoch[blockIdx.x] + 1;
  const int part = n / W;
  if (blockIdx.x == 0 && threadIdx.x < W) st_vol(&a.sig[threadIdx.x]->start[rank], e);
  if (threadIdx.x < W) while (ld_vol(&me->start[threadIdx.x]) < e) {}
  __syncthreads();
  const int tid = blockIdx.x * blockDim.x + threadIdx.x, stride = gridDim.x * blockDim.x;
  for (int i = tid; i < part; i += stride) {
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
#pragma unroll
    for (int j = 0; j < W; j++) acc8(acc, a.in[(rank + j) % W][rank * part + i]);
    a.tmp[rank][i] = pack8(acc);
  }
  barrier_all_blocks<W>(a, rank, e, &me->cnt_mid, 1, true);
  for (int i = tid; i < part; i += stride) {
#pragma unroll
    for (int j = 0; j < W; j++) { int r = (rank + j) % W; out[r * part + i] = a.tmp[r][i]; }
  }
  barrier_all_blocks<W>(a, rank, e, &me->cnt_end, 2, false);
  if (threadIdx.x == 0) me->epoch[blockIdx.x] = e;
}

extern "C" int ar_enable_peer(int dev, int peer) {
  cudaSetDevice(dev);
  cudaError_t r = cudaDeviceEnablePeerAccess(peer, 0);
  if (r == cudaErrorPeerAccessAlreadyEnabled) { cudaGetLastError(); return 0; }
  return (int)r;
}
extern "C" int ar_launch(int dev, int two, int world, int rank, void** in, void** tmp, void** sig, void* out, long long n16,
                         int blocks, void* stream) {
  cudaSetDevice(dev);
  Args a;
  for (int j = 0; j < 8; j++) { a.in[j] = j < world ? (const uint4*)in[j] : nullptr; a.tmp[j] = j < world ? (uint4*)tmp[j] : nullptr;
                                a.sig[j] = j < world ? (Sig*)sig[j] : nullptr; }
  dim3 g(blocks), b(512);
  cudaStream_t s = (cudaStream_t)stream;
  int n = (int)n16;
#define L(W) do { if (two) twoshot<W><<<g, b, 0, s>>>(a, (uint4*)out, rank, n); else oneshot<W><<<g, b, 0, s>>>(a, (uint4*)out, rank, n); } while (0)
  switch (world) { case 2: L(2); break; case 4: L(4); break; case 8: L(8); break; default: return -1; }
  return (int)cudaGetLastError();
}
