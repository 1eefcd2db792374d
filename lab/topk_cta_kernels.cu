// topk_cta_kernels.cu -- single-CTA-per-row exact top-k kernels for calibrating sparsesim's
// topk pass model (simulator/strategies/topk.py). Device code only; compiled at run time by
// lab/measure_topk_cta.py through CuPy (NVRTC), one module per (TPB, UNROLL).
//
// Both kernels: gridDim.x = rows, blockDim.x = TPB (512 by default; 1024 possible), row r reads
// logits[r * stride .. r * stride + N) (fp32), writes k int32 indices to out[r * k ..] (unsorted;
// the SET is the exact top-k, ties broken arbitrarily) and a 4-int32 stats record to
// stats[r * 4 ..]:
//     [0] sweeps    full-row reads actually done (each reads N x 4 B of logits)
//     [1] passes    radix: histogram steps run (1..4); gvr: Phase-2 count passes
//     [2] cands     radix: threshold-bin items staged for the final selection (0 if step 3 ran);
//                   gvr: candidates collected in Phase 3
//     [3] flags     radix: 0 final rank (<= 512 staged), 1 final smem radix-select, 3 ended at step 3
//                   gvr: low nibble 1 secant converged, 2 bisection fallback converged,
//                        3 tie overflow (not guaranteed exact); bit 4 set when Phase 4 used the
//                        smem radix-select fallback instead of bin + rank.
//
// radix_topk follows the structure of TensorRT-LLM's topKPerRowJob (indexerTopK.cu, "half - 11 -
// 11 - 10 bit iterations"), written independently here:
//   step 0: bin = top 11 bits of the order-flipped fp16 of each value; steps 1/2/3: bits 31..21,
//   20..10, 9..0 of the order-flipped fp32 bits, steps 2/3 counting only elements whose earlier
//   bits equal the threshold prefix. Each step = 2 full-row sweeps: (1) shared-atomic 2048-bin
//   histogram, block scan to find the bin holding the k-th largest; (2) elements in bins above it
//   are appended to the output through ONE shared atomic counter, the threshold bin's elements are
//   staged in shared memory if they fit in 2048 slots (otherwise the next step runs; at step 0 a
//   continuing step promotes nothing, as in the production code, because fp16 bins do not nest
//   into fp32 bit prefixes). Step 3's threshold bin holds equal values: they fill the rest.
//   Final: exact selection of the remaining `need` among the <= 2048 staged items: rank counting
//   (each item counts the items that beat it; production uses the same O(n^2/T) "insertion" path
//   for <= 512 items) or, above 512 items, an exact 8-bit-digit radix select in shared memory
//   (production uses cub::BlockRadixSort of 2048 items there).
//   smem: 16 KB (histogram / staged items union) + 8 KB output staging + small.
//
// gvr_topk follows Guess-Verify-Refine (TensorRT-LLM gvrTopKJob, the GVR blog), written here:
//   P1 read the M predicted positions and their logits -> block-reduce pmin, pmax, pmean.
//   P2 count passes c(T) = #{x >= T} over the full row (per-thread counters, warp reduce, one
//      __syncthreads per pass, no atomics), T0 = pmean, bracket [pmin, pmax] with the production's
//      secant step (target count, f clamped to [0.05, 0.95], first step f <= 0.5) until
//      k <= c <= C (C = 6144); after GVR_MAX_SECANT passes or a collapsed bracket: bisection on the
//      order-preserving 32-bit key (always terminates; verified bounds only).
//   P3 one sweep: each thread writes its >= T elements at its exclusive-prefix offset of the LAST
//      pass's per-thread counts (same element order as the count pass; no atomics, no ballots).
//   P4 exact selection of the k largest of the n <= C candidates: min/max, a 2048-bin linear
//      histogram of the candidates (shared atomics), block scan for the bin of the k-th, elements
//      above it written out through a shared counter, the k-th bin's items ranked exactly among
//      themselves (fallback when that bin holds > 512 items: smem radix select over all candidates).
//   smem: 24 KB keys + 24 KB indices + 8 KB histogram + small ~= 57 KB (dynamic).
//
// Exactness: every decision compares fp32 values (or their order-preserving keys); bins are
// monotone in the value, so "above the threshold bin" is exact and the final in-bin step is an
// exact rank/select. Verified on the device against torch.topk by the measuring script.

#ifndef TPB
#define TPB 512
#endif
#ifndef UNROLL
#define UNROLL 4
#endif
#define NWARPS (TPB / 32)
#define RADIX_BINS 2048
#define RADIX_FINAL 2048
#define RANK_MAX 512
#define MAX_K 2048
#define GVR_C 6144
#define GVR_BINS 2048
#ifndef GVR_MAX_SECANT
#define GVR_MAX_SECANT 12
#endif
#define BIG_F 3.402823466e+38f

static_assert(TPB % 32 == 0 && TPB <= 1024, "TPB");
static_assert(RADIX_BINS % TPB == 0, "bins per thread");

typedef unsigned int u32;

// ---------------------------------------------------------------------------------------------
// keys
// ---------------------------------------------------------------------------------------------
// ascending key: larger float -> larger unsigned key
__device__ __forceinline__ u32 key_asc(float x) {
    u32 u = __float_as_uint(x);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
__device__ __forceinline__ float key_asc_inv(u32 k) {
    return __uint_as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}
// descending key (the production's bin order: smaller key = larger value)
__device__ __forceinline__ u32 key_desc(float x) { return ~key_asc(x); }

__device__ __forceinline__ u32 half_bin11(float x) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
    u32 b = h;
    b = (b & 0x8000u) ? b : (~b & 0x7fffu);
    return b >> 5;
}

template <int STEP>
__device__ __forceinline__ u32 radix_bin(float x, u32 kd) {
    if (STEP == 0) return half_bin11(x);
    if (STEP == 1) return kd >> 21;
    if (STEP == 2) return (kd >> 10) & 0x7ffu;
    return kd & 0x3ffu;
}

// ---------------------------------------------------------------------------------------------
// row sweep: 16-byte loads, UNROLL loads in flight per thread; fixed element->thread mapping
// ---------------------------------------------------------------------------------------------
template <typename F>
__device__ __forceinline__ void sweep_row(const float* __restrict__ row, int n, F&& f) {
    const int tid = threadIdx.x;
    int head = (int)(((16u - ((u32)(unsigned long long)row & 15u)) & 15u) >> 2);
    if (head > n) head = n;
    if (tid < head) f(__ldg(row + tid), tid);
    const float4* __restrict__ v4 = reinterpret_cast<const float4*>(row + head);
    const int nvec = (n - head) >> 2;
    for (int base = tid; base < nvec; base += TPB * UNROLL) {
        float4 buf[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            int j = base + u * TPB;
            if (j < nvec) buf[u] = __ldg(v4 + j);
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            int j = base + u * TPB;
            if (j < nvec) {
                int e = head + 4 * j;
                f(buf[u].x, e);
                f(buf[u].y, e + 1);
                f(buf[u].z, e + 2);
                f(buf[u].w, e + 3);
            }
        }
    }
    int t0 = head + 4 * nvec;  // < 4 tail elements
    if (t0 + tid < n) f(__ldg(row + t0 + tid), t0 + tid);
}

// ---------------------------------------------------------------------------------------------
// block helpers
// ---------------------------------------------------------------------------------------------
__device__ __forceinline__ int warp_incl_scan(int x) {
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        int y = __shfl_up_sync(0xffffffffu, x, o);
        if (lane >= o) x += y;
    }
    return x;
}

// exclusive block scan; scratch >= NWARPS + 1 ints; ends with a barrier (scratch reusable)
__device__ __forceinline__ int block_excl_scan(int v, int* scratch, int& total) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int x = warp_incl_scan(v);
    if (lane == 31) scratch[warp] = x;
    __syncthreads();
    if (warp == 0) {
        int w = (lane < NWARPS) ? scratch[lane] : 0;
        int s = warp_incl_scan(w);
        if (lane < NWARPS) scratch[lane] = s - w;
        if (lane == 31) scratch[NWARPS] = s;
    }
    __syncthreads();
    total = scratch[NWARPS];
    int r = scratch[warp] + x - v;
    __syncthreads();
    return r;
}

// hist[0..RADIX_BINS) in ascending-key order (= descending value). Finds the bin b with
// base + P(b) < k <= base + P(b) + hist[b]; out[0] = b, out[1] = base + P(b), out[2] = hist[b].
__device__ __forceinline__ void find_kth_bin(const int* hist, int base, int k, int* scratch, int* out) {
    constexpr int BPT = RADIX_BINS / TPB;
    int loc[BPT];
    int s = 0;
#pragma unroll
    for (int j = 0; j < BPT; ++j) {
        loc[j] = hist[threadIdx.x * BPT + j];
        s += loc[j];
    }
    int total;
    int run = block_excl_scan(s, scratch, total) + base;
#pragma unroll
    for (int j = 0; j < BPT; ++j) {
        if (run < k && run + loc[j] >= k) {
            out[0] = threadIdx.x * BPT + j;
            out[1] = run;
            out[2] = loc[j];
        }
        run += loc[j];
    }
    __syncthreads();
}

// Exact: writes the indices of the `need` largest of vals[0..n) to dst[0..need) (any order, ties
// arbitrary). 8-bit digits of the ascending key, high to low, stopping once the chosen digit's
// items are all needed. h256: 256 ints of smem; scratch: >= 3 ints; cnt: 2 ints of smem.
__device__ void smem_select_emit(const float* vals, const int* idxs, int n, int need, int* dst,
                                 int* h256, int* scratch, int* cnt) {
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    u32 prefix = 0u, mask = 0u;
    int remaining = need;
    for (int shift = 24; shift >= 0; shift -= 8) {
        for (int i = tid; i < 256; i += TPB) h256[i] = 0;
        __syncthreads();
        for (int i = tid; i < n; i += TPB) {
            u32 kk = key_asc(vals[i]);
            if ((kk & mask) == prefix) atomicAdd(&h256[(kk >> shift) & 255u], 1);
        }
        __syncthreads();
        if (warp == 0) {
            int loc[8];
            int s = 0;
#pragma unroll
            for (int j = 0; j < 8; ++j) {
                loc[j] = h256[255 - (lane * 8 + j)];
                s += loc[j];
            }
            int run = warp_incl_scan(s) - s;
#pragma unroll
            for (int j = 0; j < 8; ++j) {
                if (run < remaining && run + loc[j] >= remaining) {
                    scratch[0] = 255 - (lane * 8 + j);
                    scratch[1] = run;
                    scratch[2] = loc[j];
                }
                run += loc[j];
            }
        }
        __syncthreads();
        const int d = scratch[0], above = scratch[1], cd = scratch[2];
        prefix |= (u32)d << shift;
        mask |= 0xffu << shift;
        remaining -= above;
        __syncthreads();  // scratch / h256 reuse
        if (cd == remaining) break;
    }
    if (tid == 0) {
        cnt[0] = 0;
        cnt[1] = need - remaining;
    }
    __syncthreads();
    for (int i = tid; i < n; i += TPB) {
        u32 kk = key_asc(vals[i]) & mask;
        if (kk > prefix) {
            dst[atomicAdd(&cnt[0], 1)] = idxs[i];
        } else if (kk == prefix) {
            int d = atomicAdd(&cnt[1], 1);
            if (d < need) dst[d] = idxs[i];
        }
    }
    __syncthreads();
}

// ---------------------------------------------------------------------------------------------
// radix_topk
// ---------------------------------------------------------------------------------------------
struct RadixSmem {
    union {
        int hist[RADIX_BINS];
        struct {
            float val[RADIX_FINAL];
            int idx[RADIX_FINAL];
        } it;
    } u;
    int outIdx[MAX_K];
    int h256[256];
    int scratch[NWARPS + 1];
    int sel[4];
    int found;
    int staged;
    int cnt[2];
};

template <int STEP>
__device__ __forceinline__ bool radix_step(const float* __restrict__ row, int N, int k, RadixSmem& s,
                                           u32& pattern, int& thrBin) {
    constexpr int SHIFT = STEP < 2 ? 0 : (STEP == 2 ? 21 : 10);
    if (STEP == 2) pattern = (u32)thrBin << 21;
    if (STEP == 3) pattern |= (u32)thrBin << 10;
    for (int i = threadIdx.x; i < RADIX_BINS; i += TPB) s.u.hist[i] = 0;
    __syncthreads();
    const u32 pat = pattern;
    // sweep 1: histogram
    sweep_row(row, N, [&](float x, int) {
        u32 kd = key_desc(x);
        if (SHIFT == 0 || ((kd ^ pat) >> SHIFT) == 0u) atomicAdd(&s.u.hist[radix_bin<STEP>(x, kd)], 1);
    });
    __syncthreads();
    find_kth_bin(s.u.hist, s.found, k, s.scratch, s.sel);
    const int tb = s.sel[0], before = s.sel[1], bsize = s.sel[2];
    const bool cont = (STEP < 3) && (bsize > RADIX_FINAL);
    const bool promote = !(STEP == 0 && cont);
    if (STEP == 3) {
        __syncthreads();
        if (threadIdx.x == 0) s.u.hist[tb] = before;  // tie slots start after everything above
        __syncthreads();
    }
    // sweep 2: promote elements above the threshold bin; stage (or, at step 3, take) its elements
    sweep_row(row, N, [&](float x, int e) {
        u32 kd = key_desc(x);
        if (SHIFT == 0 || ((kd ^ pat) >> SHIFT) == 0u) {
            int b = (int)radix_bin<STEP>(x, kd);
            if (b < tb) {
                if (promote) s.outIdx[atomicAdd(&s.found, 1)] = e;
            } else if (b == tb) {
                if (STEP < 3) {
                    if (!cont) {
                        int d = atomicAdd(&s.staged, 1);
                        s.u.it.val[d] = x;
                        s.u.it.idx[d] = e;
                    }
                } else {
                    int d = atomicAdd(&s.u.hist[tb], 1);
                    if (d < k) s.outIdx[d] = e;
                }
            }
        }
    });
    __syncthreads();
    thrBin = tb;
    return cont;
}

extern "C" __global__ void __launch_bounds__(TPB)
radix_topk(const float* __restrict__ logits, long long stride, int N, int k, int* __restrict__ out,
           int* __restrict__ stats) {
    __shared__ RadixSmem s;
    const int tid = threadIdx.x;
    const float* row = logits + (long long)blockIdx.x * stride;
    int* outp = out + (long long)blockIdx.x * k;
    if (N <= k) {
        for (int i = tid; i < k; i += TPB) outp[i] = (i < N) ? i : -1;
        if (tid == 0) {
            int* st = stats + 4 * blockIdx.x;
            st[0] = 0; st[1] = 0; st[2] = N; st[3] = 0;
        }
        return;
    }
    if (tid == 0) {
        s.found = 0;
        s.staged = 0;
    }
    __syncthreads();
    u32 pattern = 0u;
    int thrBin = -1;
    int steps = 1;
    bool cont = radix_step<0>(row, N, k, s, pattern, thrBin);
    if (cont) { ++steps; cont = radix_step<1>(row, N, k, s, pattern, thrBin); }
    if (cont) { ++steps; cont = radix_step<2>(row, N, k, s, pattern, thrBin); }
    int flag = 3;
    int staged = 0;
    if (cont) {
        ++steps;
        radix_step<3>(row, N, k, s, pattern, thrBin);
    } else {
        staged = s.staged;
        const int base = s.found;
        const int need = k - base;
        if (staged <= RANK_MAX) {
            flag = 0;
            for (int i = tid; i < staged; i += TPB) {
                const float v = s.u.it.val[i];
                int r = 0;
                for (int j = 0; j < staged; ++j) {
                    const float w = s.u.it.val[j];
                    r += (w > v) || (w == v && j < i);
                }
                if (r < need) s.outIdx[base + r] = s.u.it.idx[i];
            }
            __syncthreads();
        } else {
            flag = 1;
            smem_select_emit(s.u.it.val, s.u.it.idx, staged, need, s.outIdx + base, s.h256, s.scratch, s.cnt);
        }
    }
    for (int i = tid; i < k; i += TPB) outp[i] = s.outIdx[i];
    if (tid == 0) {
        int* st = stats + 4 * blockIdx.x;
        st[0] = 2 * steps;
        st[1] = steps;
        st[2] = staged;
        st[3] = flag;
    }
}

// ---------------------------------------------------------------------------------------------
// gvr_topk
// ---------------------------------------------------------------------------------------------
struct GvrSmem {
    float keys[GVR_C];
    int vals[GVR_C];
    int hist[GVR_BINS];
    int wsum[2][32];
    float wf[3][32];
    int scratch[NWARPS + 1];
    int sel[4];
    int cnt[2];
};

__device__ __forceinline__ float warp_min(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fminf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ __forceinline__ float warp_sumf(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// block sum of per-thread counts; double-buffered warp partials -> one barrier per call; every
// thread gets the same total
__device__ __forceinline__ int block_count_sum(int v, GvrSmem& s, int parity) {
    v = __reduce_add_sync(0xffffffffu, v);
    if ((threadIdx.x & 31) == 0) s.wsum[parity][threadIdx.x >> 5] = v;
    __syncthreads();
    int t = 0;
#pragma unroll
    for (int w = 0; w < NWARPS; ++w) t += s.wsum[parity][w];
    return t;
}

__device__ __forceinline__ int count_ge(const float* __restrict__ row, int N, float T) {
    int c = 0;
    sweep_row(row, N, [&](float x, int) { c += (x >= T); });
    return c;
}

extern "C" __global__ void __launch_bounds__(TPB)
gvr_topk(const float* __restrict__ logits, long long stride, int N, const int* __restrict__ preIdx, int M,
         int k, int target, int* __restrict__ out, int* __restrict__ stats) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    GvrSmem& s = *reinterpret_cast<GvrSmem*>(smem_raw);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const float* row = logits + (long long)blockIdx.x * stride;
    const int* pre = preIdx + (long long)blockIdx.x * M;
    int* outp = out + (long long)blockIdx.x * k;
    int* st = stats + 4 * blockIdx.x;
    if (N <= k) {
        for (int i = tid; i < k; i += TPB) outp[i] = (i < N) ? i : -1;
        if (tid == 0) { st[0] = 0; st[1] = 0; st[2] = N; st[3] = 0; }
        return;
    }

    // ---- P1: guess from the predicted positions ----
    float lmin = BIG_F, lmax = -BIG_F, lsum = 0.f;
    int lcnt = 0;
    for (int i = tid; i < M; i += TPB) {
        int idx = __ldg(pre + i);
        if (idx >= 0 && idx < N) {
            float v = __ldg(row + idx);
            lmin = fminf(lmin, v);
            lmax = fmaxf(lmax, v);
            lsum += v;
            ++lcnt;
        }
    }
    lmin = warp_min(lmin);
    lmax = warp_max(lmax);
    lsum = warp_sumf(lsum);
    lcnt = __reduce_add_sync(0xffffffffu, lcnt);
    if (lane == 0) {
        s.wf[0][warp] = lmin;
        s.wf[1][warp] = lmax;
        s.wf[2][warp] = lsum;
        s.wsum[1][warp] = lcnt;
    }
    __syncthreads();
    float pmin = BIG_F, pmax = -BIG_F, psum = 0.f;
    int pcnt = 0;
#pragma unroll
    for (int w = 0; w < NWARPS; ++w) {
        pmin = fminf(pmin, s.wf[0][w]);
        pmax = fmaxf(pmax, s.wf[1][w]);
        psum += s.wf[2][w];
        pcnt += s.wsum[1][w];
    }

    // ---- P2: verify (secant count passes, bisection fallback) ----
    int passes = 0, mode = 0, c = 0, myc = 0;
    float T = 0.f;
    float vlo = pmin, vhi = pmax;
    int clo = M + M / 4, chi = 1;  // production's initial guesses for c(pmin), c(pmax)
    bool lo_ok = false, hi_ok = false;  // bounds verified by a count pass
    if (pcnt > 0 && pmin < pmax) {
        T = psum / (float)pcnt;
        for (;;) {
            myc = count_ge(row, N, T);
            c = block_count_sum(myc, s, passes & 1);
            ++passes;
            if (c >= k && c <= GVR_C) { mode = 1; break; }
            if (c > GVR_C) { vlo = T; clo = c; lo_ok = true; }
            else { vhi = T; chi = c; hi_ok = true; }
            if (passes >= GVR_MAX_SECANT) break;
            const float range = vhi - vlo;
            float nv;
            if (clo > chi && range > 1e-10f) {
                float f = (float)(clo - target) / (float)(clo - chi);
                f = fmaxf(0.05f, fminf(0.95f, f));
                if (passes == 1) f = fminf(f, 0.5f);
                nv = vlo + range * f;
            } else {
                nv = 0.5f * (vlo + vhi);
            }
            if (nv <= vlo) nv = vlo + range * 0.05f;
            if (nv >= vhi) nv = vhi - range * 0.05f;
            if (nv == vlo || nv == vhi) {
                nv = 0.5f * (vlo + vhi);
                if (nv == vlo || nv == vhi) break;  // bracket collapsed
            }
            T = nv;
        }
    }
    if (mode == 0) {
        // bisection on the ascending key; invariant c(lo) >= k (>= C+1 when verified), c(hi) < k
        u32 lo = lo_ok ? key_asc(vlo) : key_asc(-BIG_F);
        u32 hi = hi_ok ? key_asc(vhi) : key_asc(__uint_as_float(0x7f800000u));  // +inf
        while (hi - lo > 1u) {
            const u32 mid = lo + (hi - lo) / 2u;
            T = key_asc_inv(mid);
            myc = count_ge(row, N, T);
            c = block_count_sum(myc, s, passes & 1);
            ++passes;
            if (c >= k && c <= GVR_C) { mode = 2; break; }
            if (c > GVR_C) lo = mid; else hi = mid;
        }
        if (mode == 0) {  // more than C - k + 1 equal values at the k-th: collect truncated
            T = key_asc_inv(lo);
            myc = count_ge(row, N, T);
            c = block_count_sum(myc, s, passes & 1);
            ++passes;
            mode = (c > GVR_C) ? 3 : 2;
        }
    }

    // ---- P3: collect (prefix-sum offsets from the last pass's per-thread counts) ----
    int total;
    int pos = block_excl_scan(myc, s.scratch, total);
    sweep_row(row, N, [&](float x, int e) {
        if (x >= T) {
            if (pos < GVR_C) {
                s.keys[pos] = x;
                s.vals[pos] = e;
            }
            ++pos;
        }
    });
    __syncthreads();
    const int n = min(total, GVR_C);

    // ---- P4: exact top-k of the n candidates ----
    int p4flag = 0;
    if (n == k) {
        for (int i = tid; i < k; i += TPB) outp[i] = s.vals[i];
    } else {
        float cmin = BIG_F, cmax = -BIG_F;
        for (int i = tid; i < n; i += TPB) {
            float v = s.keys[i];
            cmin = fminf(cmin, v);
            cmax = fmaxf(cmax, v);
        }
        cmin = warp_min(cmin);
        cmax = warp_max(cmax);
        if (lane == 0) {
            s.wf[0][warp] = cmin;
            s.wf[1][warp] = cmax;
        }
        for (int i = tid; i < GVR_BINS; i += TPB) s.hist[i] = 0;
        __syncthreads();
        cmin = BIG_F;
        cmax = -BIG_F;
#pragma unroll
        for (int w = 0; w < NWARPS; ++w) {
            cmin = fminf(cmin, s.wf[0][w]);
            cmax = fmaxf(cmax, s.wf[1][w]);
        }
        const float range = cmax - cmin;
        const float inv = (range > 0.f) ? ((float)(GVR_BINS - 1) + 0.99f) / range : 0.f;
        // descending bin: 0 holds the largest values; monotone in the value
        auto dbin = [&](float v) {
            int b = (int)((v - cmin) * inv);
            b = min(max(b, 0), GVR_BINS - 1);
            return GVR_BINS - 1 - b;
        };
        for (int i = tid; i < n; i += TPB) atomicAdd(&s.hist[dbin(s.keys[i])], 1);
        __syncthreads();
        find_kth_bin(s.hist, 0, k, s.scratch, s.sel);
        const int tb = s.sel[0], before = s.sel[1], bsize = s.sel[2];
        if (bsize <= RANK_MAX) {
            if (tid == 0) { s.cnt[0] = 0; s.cnt[1] = 0; }
            __syncthreads();
            int* gath = s.hist;  // histogram no longer needed
            for (int i = tid; i < n; i += TPB) {
                const int b = dbin(s.keys[i]);
                if (b < tb) outp[atomicAdd(&s.cnt[0], 1)] = s.vals[i];
                else if (b == tb) gath[atomicAdd(&s.cnt[1], 1)] = i;
            }
            __syncthreads();
            const int need = k - before;
            for (int g = tid; g < bsize; g += TPB) {
                const float v = s.keys[gath[g]];
                int r = 0;
                for (int j = 0; j < bsize; ++j) {
                    const float w = s.keys[gath[j]];
                    r += (w > v) || (w == v && j < g);
                }
                if (r < need) outp[before + r] = s.vals[gath[g]];
            }
        } else {
            p4flag = 16;
            smem_select_emit(s.keys, s.vals, n, k, outp, s.hist, s.scratch, s.cnt);
        }
    }
    if (tid == 0) {
        st[0] = passes + 1;
        st[1] = passes;
        st[2] = total;
        st[3] = mode | p4flag;
    }
}

// sizes of the shared-memory layouts (the launcher reads them to size dynamic smem)
extern "C" __global__ void smem_sizes(int* o) {
    o[0] = (int)sizeof(GvrSmem);
    o[1] = (int)sizeof(RadixSmem);
}

// busy-wait one thread for ns nanoseconds (keeps the GPU busy while the host enqueues launches)
extern "C" __global__ void spin_ns(long long ns) {
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        unsigned long long t0, t;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
        do {
            asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        } while (t - t0 < (unsigned long long)ns);
    }
}
