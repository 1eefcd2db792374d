"""Which SM each CTA of a decode-shaped launch grid lands on when the kernel's residency is that of FlashInfer's
CUDA-core decode kernels (the hardware's block dispatch, not in any source). The earlier probe
(probe_block_placement.py) used a 256-thread kernel, 8 resident per SM; the compiled decode kernels have 128 threads
and 9 (group 8, bf16: 56 registers), 8 (group 4, bf16: 59), 7 (group 8, fp8 K/V: 72) or 6 (group 4, fp8 K/V: 77)
resident CTAs per SM (launch profile, production_attention_fi_dec_blind2_grids_*.csv). This probe compiles a
128-thread CUDA kernel (nvcc, sm_90a) that records %smid per CTA and spins ~30 us so the whole grid is resident, and
caps its residency at k per SM with dynamic shared memory: the largest size (in 128-byte steps, down from
228 KiB / k - 1 KiB) at which cudaOccupancyMaxActiveBlocksPerMultiprocessor reports k resident CTAs (the achieved
residency is recorded; a case that cannot reach exactly k is skipped and says so). The first run (2026-11-27) took
floor(228 KiB / k) - 1 KiB unrounded, which the allocation's granularity pushed one step down: its 9- and 7-per-SM
cases ran at 8 and 6. Grids: the CUDA-graph decode plans'
(max_grid / Hkv, Hkv) at each residency, and flat (k x SMs, 1) grids (one KV head). Writes fi_dispatch.csv
(grid, slots, occupancy, x, y, smid) to --out.

    python3 probe_fi_dispatch.py --out DIR
"""
from __future__ import annotations

import argparse
import csv
import ctypes
import os
import shutil
import subprocess
import tempfile

SRC = r'''
#include <cuda_runtime.h>
extern "C" __global__ void smid_kernel(int* out, int width, long long spin_ns) {
  extern __shared__ char buf[];
  unsigned sm; asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  unsigned long long t0, t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0)); t = t0;
  while ((long long)(t - t0) < spin_ns) { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); }
  buf[threadIdx.x] = (char)sm;
  __syncthreads();
  if (threadIdx.x == 0) out[blockIdx.y * width + blockIdx.x] = (int)sm + buf[0] * 0;
}
extern "C" int occupancy(int smem) {
  int occ = 0;
  cudaFuncSetAttribute(smid_kernel, cudaFuncAttributePreferredSharedMemoryCarveout, 100);
  cudaFuncSetAttribute(smid_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, smid_kernel, 128, smem);
  return occ;
}
extern "C" int probe(int* out, int gx, int gy, int smem, long long spin_ns, int* occ) {
  cudaFuncSetAttribute(smid_kernel, cudaFuncAttributePreferredSharedMemoryCarveout, 100);
  cudaFuncSetAttribute(smid_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(occ, smid_kernel, 128, smem);
  smid_kernel<<<dim3(gx, gy), 128, smem>>>(out, gx, spin_ns);
  cudaError_t e = cudaDeviceSynchronize();
  return (int)e;
}
'''


def cap_smem(occupancy, k: int, smem_sm: int = 233472, step: int = 128) -> int | None:
    """The largest dynamic shared memory (bytes, a multiple of step) at which occupancy(smem) == k resident CTAs per
    SM, searched down from smem_sm / k - 1 KiB (the per-CTA reserve); None when the steps jump past k."""
    smem = (smem_sm // k - 1024) // step * step
    while smem > 0:
        occ = occupancy(smem)
        if occ == k:
            return smem
        if occ > k:
            return None
        smem -= step
    return None


def main() -> None:
    import torch

    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    d = tempfile.mkdtemp()
    with open(os.path.join(d, "smid.cu"), "w") as f:
        f.write(SRC)
    subprocess.run([nvcc, "-O2", "-arch=sm_90a", "-shared", "-Xcompiler", "-fPIC", "-cudart", "static",
                    "-o", os.path.join(d, "smid.so"), os.path.join(d, "smid.cu")], check=True)
    so = ctypes.CDLL(os.path.join(d, "smid.so"))
    so.probe.restype = ctypes.c_int
    so.probe.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_longlong,
                         ctypes.POINTER(ctypes.c_int)]
    so.occupancy.restype = ctypes.c_int
    so.occupancy.argtypes = [ctypes.c_int]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    smem_sm = 233472
    rows = []
    cases = []
    for k in (9, 8, 7, 6):
        cases.append((k * sms // 8, 8, k))
        cases.append((k * sms, 1, k))
    for gx, gy, k in cases:
        smem = cap_smem(so.occupancy, k, smem_sm)
        if smem is None:
            print(f"grid {gx}x{gy} k {k}: no shared-memory size gives exactly {k} resident CTAs; skipped")
            continue
        out = torch.full((gy, gx), -1, dtype=torch.int32, device="cuda")
        occ = ctypes.c_int(0)
        torch.cuda.synchronize()
        for _ in range(2):
            rc = so.probe(ctypes.c_void_p(out.data_ptr()), gx, gy, smem, 30000, ctypes.byref(occ))
        o = out.cpu().tolist()
        per = {}
        for y in range(gy):
            for x in range(gx):
                rows.append({"grid": f"{gx}x{gy}", "slots": k, "occupancy": occ.value, "x": x, "y": y,
                             "smid": o[y][x]})
                per.setdefault(o[y][x], []).append((x, y))
        print(f"grid {gx}x{gy} k {k}: rc {rc} occupancy {occ.value} SMs used {len(per)}, CTAs per SM "
              f"{min(map(len, per.values()))}-{max(map(len, per.values()))}; x 0-7 of rows 0-1 on SMs "
              f"{[o[y][:8] for y in range(min(gy, 2))]}")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "fi_dispatch.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["grid", "slots", "occupancy", "x", "y", "smid"])
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    main()
