"""Measure the dependent-load latency of device memory and a latency-bound streaming kernel.

Run on one CUDA GPU (it changes no clock or GPU setting):

    python3 lab/measure_latency.py --out DIR [--quick]

Two families, one CSV (DIR/latency_<device-slug>_<date>.csv):

chase      one thread follows a random pointer cycle (`next = table[next]`, loads cached in L2 only, so
           every step is one round trip to L2 or DRAM). The footprint decides where the cycle lives:
           below L2 -> L2 latency; far above it -> DRAM latency (plus the TLB misses a huge random
           footprint adds, which is why several footprints are measured). `median_us` is per load.
page_scan  a kernel of the structure of the page-selector kernels in MMHA-derived decode kernels (one CTA
           of 256 threads per (query head, sequence), no split of the sequence across CTAs): 16 threads
           cover one logical page's key max and min vectors (128 fp16 each, 16 B per thread), four pages
           per thread are loaded per loop iteration (64 pages per CTA iteration), the page's block is
           found through a block table (a dependent load before the statistic loads: `indirect=1`, or
           computed: `indirect=0`), then a __syncthreads, the q . max / q . min products, a 16-lane
           reduction and one fp16 score written per page. Varying the pages per CTA and the number of
           CTAs separates the per-iteration latency chain from the bandwidth limit. Each launch is timed
           alone (CUDA events) 'cold' (L2 evicted first by writing 4x its size: a decode step streams far
           more than L2 between two calls of the same layer's kernel) and 'hot' (right after itself).
           The parameters of the structure (256 threads, 16 threads per 128-dim vector, 4 unrolled
           pages per thread, block-table indirection) are those of OmniServe's LServe page selector
           (kernels/csrc/fused_attention/sparse_utils/KVPageSelector, K_LOOP_UNROLL = 4 without smem
           preload; grid = (query heads, batch); multi-block never enabled for the selector).

Nothing here is fitted: `fit.py` reads the chase rows as the device's dependent-load latency and the
page_scan rows are a held-out check of the roofline's latency-chain term (hwmodels.roofline).
"""
from __future__ import annotations

import argparse
import datetime as dt
import statistics

from harness import driver_version, write_rows

SCRIPT_VERSION = 3

KERNELS = r"""
#include <cuda_fp16.h>
// each launch continues the cycle where the previous one stopped (state[0]), so a launch never
// revisits the slots an earlier launch brought into L2 unless the cycle is shorter than the run
extern "C" __global__ void chase(const unsigned int* __restrict__ table, long long steps,
                                 unsigned int* __restrict__ state) {
    unsigned int p = state[0];
    for (long long i = 0; i < steps; ++i) p = __ldcg(table + p);
    state[0] = p;
}

// grid (heads, batch); 256 threads. Pool layout per block (physical page): for each kv head,
// subs_per_block logical pages x (128 max halves, 128 min halves); block_stride_halves apart.
extern "C" __global__ void page_scan(const long long* __restrict__ block_table,
                                     const __half* __restrict__ pool,
                                     const __half* __restrict__ q,
                                     __half* __restrict__ out,
                                     int n_sub, int subs_per_block, int max_blocks,
                                     long long block_stride_halves, int heads_per_kv, int n_kv,
                                     int indirect) {
    const int h = blockIdx.x, b = blockIdx.y, H = gridDim.x;
    const int kvh = (h / heads_per_kv) % n_kv;
    const int t = threadIdx.x, lane = t & 15, row = t >> 4;
    const uint4 qv = *reinterpret_cast<const uint4*>(q + ((long long)b * H + h) * 128 + lane * 8);
    const half2* q2 = reinterpret_cast<const half2*>(&qv);
    for (int base = 0; base < n_sub; base += 64) {
        uint4 mx[4], mn[4];
        int sidx[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            int s = base + u * 16 + row;
            sidx[u] = s;
            s = s < n_sub ? s : n_sub - 1;
            const int blk = s / subs_per_block, within = s - blk * subs_per_block;
            long long off = indirect ? block_table[(long long)b * max_blocks + blk]
                                     : ((long long)b * max_blocks + blk) * block_stride_halves;
            const __half* p = pool + off + ((long long)kvh * subs_per_block + within) * 256 + lane * 8;
            mx[u] = *reinterpret_cast<const uint4*>(p);
            mn[u] = *reinterpret_cast<const uint4*>(p + 128);
        }
        __syncthreads();
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            const half2* a = reinterpret_cast<const half2*>(&mx[u]);
            const half2* c = reinterpret_cast<const half2*>(&mn[u]);
            half2 acc = __hmax2(__hmul2(q2[0], a[0]), __hmul2(q2[0], c[0]));
#pragma unroll
            for (int i = 1; i < 4; ++i) acc = __hadd2(acc, __hmax2(__hmul2(q2[i], a[i]), __hmul2(q2[i], c[i])));
            float v = __half2float(__hadd(acc.x, acc.y));
#pragma unroll
            for (int m = 8; m >= 1; m >>= 1) v += __shfl_xor_sync(0xffffffffu, v, m);
            if (lane == 0 && sidx[u] < n_sub) out[((long long)b * H + h) * n_sub + sidx[u]] = __float2half(v);
        }
    }
}
"""

COLUMNS = ["device", "sm_count", "l2_bytes", "cupy_version", "cuda_version", "driver_version", "date",
           "script_version", "family", "footprint_bytes", "stride_bytes", "steps", "heads", "batch", "kv_heads",
           "n_sub", "subs_per_block", "indirect", "cache", "ctas", "iterations", "bytes_moved", "median_us", "p20_us",
           "p80_us", "repeats", "note"]


def _env():
    import cupy as cp

    dev = cp.cuda.Device(0)
    props = cp.cuda.runtime.getDeviceProperties(0)
    drv = driver_version()
    return {"device": props["name"].decode(), "sm_count": dev.attributes["MultiProcessorCount"],
            "l2_bytes": props["l2CacheSize"], "cupy_version": cp.__version__,
            "cuda_version": cp.cuda.runtime.runtimeGetVersion(), "driver_version": drv,
            "date": dt.date.today().isoformat(), "script_version": SCRIPT_VERSION}


def _time(fn, repeats: int, inner: int) -> tuple[float, float, float]:
    import cupy as cp

    fn()
    cp.cuda.Device(0).synchronize()
    samples = []
    for _ in range(repeats):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        for _ in range(inner):
            fn()
        b.record()
        b.synchronize()
        samples.append(cp.cuda.get_elapsed_time(a, b) * 1e3 / inner)
    samples.sort()
    q = statistics.quantiles(samples, n=5) if len(samples) >= 5 else [samples[0]] * 4
    return statistics.median(samples), q[0], q[3]


def measure_chase(mod, env, rows, quick: bool):
    import cupy as cp

    k = mod.get_function("chase")
    # one slot per 128-B line: the lines a cycle touches are footprint / 128 (a cycle over a large
    # footprint touches far more lines than L2 holds, a small one fits); launches continue the cycle
    stride = 128
    foots = [4 << 20, 16 << 20, 256 << 20, 2 << 30] if not quick else [8 << 20, 256 << 20]
    for foot in foots:
        slots = foot // stride
        elems = foot // 4
        table = cp.zeros(elems, dtype=cp.uint32)
        perm = cp.random.permutation(slots).astype(cp.int64) * (stride // 4)
        table[perm] = cp.roll(perm, -1).astype(cp.uint32)
        steps = 100000
        state = cp.asarray([int(perm[0])], dtype=cp.uint32)
        med, p20, p80 = _time(lambda: k((1,), (1,), (table, cp.int64(steps), state)), 5, 1)
        rows.append({**env, "family": "chase", "footprint_bytes": foot, "stride_bytes": stride, "steps": steps,
                     "median_us": med / steps, "p20_us": p20 / steps, "p80_us": p80 / steps, "repeats": 5,
                     "note": f"per dependent load (ld.global.cg), one thread; cycle of {slots} lines, "
                             f"{6 * steps} steps timed in all"})
        print(f"chase {foot / 2**20:8.0f} MiB  {med / steps * 1e3:7.1f} ns/load", flush=True)
        del table, perm


def _time_cold(fn, flush, repeats: int) -> tuple[float, float, float]:
    """GPU time of single launches of `fn`, each after `flush()` evicted the L2 (CUDA events around the
    one kernel: the flush and the launch gap are not counted)."""
    import cupy as cp

    fn()
    samples = []
    for _ in range(repeats):
        flush()
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        fn()
        b.record()
        b.synchronize()
        samples.append(cp.cuda.get_elapsed_time(a, b) * 1e3)
    samples.sort()
    q = statistics.quantiles(samples, n=5)
    return statistics.median(samples), q[0], q[3]


def measure_page_scan(mod, env, rows, quick: bool):
    import cupy as cp

    k = mod.get_function("page_scan")
    subs_per_block = 4               # physical page 64 tokens / logical page 16 tokens (LServe defaults)
    kv_heads, heads_per_kv = 8, 4    # Llama-3-8B: 32 query heads, 8 KV heads
    block_stride = 64 * 1024         # halves: 128 KiB per physical page (its KV data sits beside the stats)
    scratch = cp.empty(4 * int(env["l2_bytes"]), dtype=cp.uint8)   # written between launches: evicts L2

    def flush():
        scratch.fill(1)

    nsubs = [512, 1024, 2048, 4096, 8192, 16384] if not quick else [1024, 8192]
    grids = [(8, 1), (16, 1), (32, 1), (32, 2), (32, 4), (32, 8), (32, 16)] if not quick else [(32, 1), (32, 8)]
    for heads, batch in grids:
        for n_sub in nsubs:
            blocks = -(-n_sub // subs_per_block)
            pool_halves = batch * blocks * block_stride
            if pool_halves * 2 > 24 << 30:
                continue
            pool = cp.empty(pool_halves, dtype=cp.float16)
            pool[::997] = 0.5  # touch the pages (values are irrelevant for time)
            order = cp.random.permutation(batch * blocks).astype(cp.int64) * block_stride
            q = cp.random.standard_normal(batch * heads * 128, dtype=cp.float32).astype(cp.float16)
            out = cp.empty(batch * heads * n_sub, dtype=cp.float16)
            iters = -(-n_sub // 64)
            for indirect in (1, 0):
                args = (order, pool, q, out, cp.int32(n_sub), cp.int32(subs_per_block), cp.int32(blocks),
                        cp.int64(block_stride), cp.int32(heads_per_kv), cp.int32(kv_heads), cp.int32(indirect))
                # bytes the CTAs' statistics loads touch (kv heads in use x pages x 512 B) + scores written
                used_kv = min(kv_heads, -(-heads // heads_per_kv))
                bytes_moved = batch * used_kv * n_sub * 512 + batch * heads * n_sub * 2
                for cache in ("cold", "hot"):
                    launch = lambda: k((heads, batch), (256,), args)  # noqa: E731
                    if cache == "cold":
                        med, p20, p80 = _time_cold(launch, flush, 15)
                    else:
                        med, p20, p80 = _time_cold(launch, lambda: None, 15)
                    rows.append({**env, "family": "page_scan", "heads": heads, "batch": batch,
                                 "kv_heads": kv_heads, "n_sub": n_sub, "subs_per_block": subs_per_block,
                                 "indirect": indirect, "cache": cache, "ctas": heads * batch, "iterations": iters,
                                 "bytes_moved": bytes_moved, "median_us": med, "p20_us": p20, "p80_us": p80,
                                 "repeats": 15,
                                 "note": "GPU time of one launch (CUDA events); cold: L2 evicted before it"})
                    print(f"page_scan {cache} ctas={heads * batch:4d} n_sub={n_sub:6d} indirect={indirect} "
                          f"{med:9.1f} us  {med / iters:6.2f} us/iter  {bytes_moved / med / 1e3:8.1f} GB/s",
                          flush=True)
            del pool, order, q, out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    import cupy as cp

    env = _env()
    mod = cp.RawModule(code=KERNELS, options=("-std=c++17",))
    rows: list[dict] = []
    measure_chase(mod, env, rows, args.quick)
    measure_page_scan(mod, env, rows, args.quick)
    write_rows(args.out, "latency", env["device"], env["date"], COLUMNS, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
