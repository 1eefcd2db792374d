"""Where the time of FlashInfer's CUDA-core decode call goes, CTA by CTA: an instrumented build of the real kernels.

The script patches the carried FlashInfer 0.6.4 headers (the installed copy under the device's site directory, never
the repository) before the JIT build, so the decode kernel (BatchDecodeWithPagedKVCacheKernel, decode.cuh) and the
merge kernel of its split path (PersistentVariableLengthMergeStatesKernel, cascade.cuh) each write one record per CTA
into a __device__ buffer: %globaltimer (ns, one clock for the whole GPU) and clock64 (the SM's own cycles) at the
CTA's entry and at its exit (after a __syncthreads, so the CTA's last thread is done; the merge kernel also after its
griddepcontrol.wait, the decode kernel not: DECODE_WAIT_RECORD), its %smid, and for the decode kernel whether the CTA is valid (block_valid_mask: the CUDA-graph grid launches
padded CTAs that return at once) and its (request, chunk); for the merge kernel the number of (row, head) items it
walked. Two extern "C" host functions in the same translation unit (fi_probe_clear, fi_probe_read) read the buffer.
The kernels' own code is unchanged; the records add two timer reads, one __syncthreads and a few stores per CTA.

Per shape (Llama-3.1-8B / -70B heads, bf16 K/V, page 16, the engines' CUDA-graph plan): the call is timed with the
campaign's CUDA-graph timer (lab/harness.py time_graph, as measure_production_attention.py) with the instrumented
kernels, then four calls are enqueued behind a spin and the last call's records are read (it ran behind the third, as
in a chain). Writes fi_cta_records.csv (every CTA) and fi_cta_summary.csv (per shape) to --out and prints the summary.

    python3 probe_fi_decode_ctas.py --out DIR [--smoke]
"""
from __future__ import annotations

import argparse
import csv
import ctypes
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SLOTS = 8192          # records per kernel
WORDS = 8             # u64 per record

PROBE_DEFS = r'''
#ifndef FI_PROBE_DEFINED
#define FI_PROBE_DEFINED
#include <cuda_runtime.h>
#define FI_PROBE_SLOTS 8192
// [kernel 0 = decode, 1 = merge][CTA][8 words]
__device__ unsigned long long fi_probe_buf[2 * FI_PROBE_SLOTS * 8];
extern "C" __attribute__((visibility("default"))) int fi_probe_clear() {
  void* p = nullptr;
  cudaError_t e = cudaGetSymbolAddress(&p, fi_probe_buf);
  if (e != cudaSuccess) return (int)e;
  e = cudaMemset(p, 0, sizeof(fi_probe_buf));
  if (e != cudaSuccess) return (int)e;
  return (int)cudaDeviceSynchronize();
}
extern "C" __attribute__((visibility("default"))) int fi_probe_read(void* host, unsigned long long bytes) {
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) return (int)e;
  return (int)cudaMemcpyFromSymbol(host, fi_probe_buf, bytes);
}
__device__ __forceinline__ unsigned long long fi_probe_gt() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ unsigned fi_probe_smid() {
  unsigned s;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  return s;
}
// the CTA's timestamps live in shared memory, not registers, so the kernels keep their register counts (and residency)
// [0] globaltimer at entry, [1] at the PDL wait, [2] clock64 at entry, [3] at the PDL wait
__device__ __forceinline__ unsigned long long* fi_probe_sh() {
  __shared__ unsigned long long v[4];
  return v;
}
#endif
'''

# --- cascade.cuh: the definitions, and the persistent merge kernel's records
CASCADE_ANCHOR = '#include "state.cuh"\n\nnamespace flashinfer {'
MERGE_ENTRY_OLD = '''seq_len_ptr,
    uint32_t num_heads) {
  uint32_t tx = threadIdx.x, ty = threadIdx.y;
  uint32_t cta_id = blockIdx.x;
  uint32_t num_ctas = gridDim.x;
  const uint32_t seq_len = seq_len_ptr ? *seq_len_ptr : max_seq_len;'''
MERGE_ENTRY_NEW = '''seq_len_ptr,
    uint32_t num_heads) {
  if (threadIdx.x == 0 && threadIdx.y == 0) {
    fi_probe_sh()[0] = fi_probe_gt(); fi_probe_sh()[2] = (unsigned long long)clock64();
  }
  uint32_t tx = threadIdx.x, ty = threadIdx.y;
  uint32_t cta_id = blockIdx.x;
  uint32_t num_ctas = gridDim.x;
  const uint32_t seq_len = seq_len_ptr ? *seq_len_ptr : max_seq_len;'''
MERGE_WAIT_OLD = '''  asm volatile("griddepcontrol.wait;");
#endif

#pragma unroll 1
  for (uint32_t i = cta_id; i < seq_len * num_heads; i += num_ctas) {
    // NOTE (Yilong): necessary to prevent hazard on smaller `num_index_sets`
    __syncthreads();
'''
MERGE_WAIT_NEW = '''  asm volatile("griddepcontrol.wait;");
#endif
  if (tx == 0 && ty == 0) { fi_probe_sh()[1] = fi_probe_gt(); fi_probe_sh()[3] = (unsigned long long)clock64(); }

#pragma unroll 1
  for (uint32_t i = cta_id; i < seq_len * num_heads; i += num_ctas) {
    // NOTE (Yilong): necessary to prevent hazard on smaller `num_index_sets`
    __syncthreads();
'''
MERGE_EXIT_OLD = '''      s_merged[pos * num_heads + head_idx] = st.get_lse();
    }
  }
#if (__CUDACC_VER_MAJOR__ >= 12 && defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900))
  asm volatile("griddepcontrol.launch_dependents;");
#endif
}'''
MERGE_EXIT_NEW = '''      s_merged[pos * num_heads + head_idx] = st.get_lse();
    }
  }
  __syncthreads();
  if (tx == 0 && ty == 0 && cta_id < FI_PROBE_SLOTS) {
    unsigned long long* r = fi_probe_buf + (FI_PROBE_SLOTS + cta_id) * 8;
    const unsigned fi_total = seq_len * num_heads;
    const unsigned fi_items = fi_total > cta_id ? (fi_total - cta_id + num_ctas - 1) / num_ctas : 0u;
    r[0] = fi_probe_sh()[0]; r[1] = fi_probe_sh()[1]; r[2] = fi_probe_gt();
    r[3] = fi_probe_sh()[2]; r[4] = fi_probe_sh()[3]; r[5] = (unsigned long long)clock64();
    r[6] = (unsigned long long)fi_probe_smid() | ((unsigned long long)fi_items << 16); r[7] = 1ull;
  }
#if (__CUDACC_VER_MAJOR__ >= 12 && defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900))
  asm volatile("griddepcontrol.launch_dependents;");
#endif
}'''

# --- decode.cuh: the decode kernel's records (the time after its PDL wait from the device function)
DECODE_WAIT_OLD = '''// do not apply rotary embedding to q matrix
#if (__CUDACC_VER_MAJOR__ >= 12 && defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900))
    asm volatile("griddepcontrol.wait;");
#endif
'''
DECODE_WAIT_NEW = '''// do not apply rotary embedding to q matrix
#if (__CUDACC_VER_MAJOR__ >= 12 && defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900))
    asm volatile("griddepcontrol.wait;");
#endif
    if (tx == 0 && ty == 0 && tz == 0) {
      fi_probe_sh()[1] = fi_probe_gt(); fi_probe_sh()[3] = (unsigned long long)clock64();
    }
'''
DECODE_KERNEL_OLD = '''__global__ void BatchDecodeWithPagedKVCacheKernel(const __grid_constant__ Params params) {
  extern __shared__ uint8_t smem[];
  BatchDecodeWithPagedKVCacheDevice<POS_ENCODING_MODE, num_stages_smem, tile_size_per_bdx, vec_size,
                                    bdx, bdy, bdz, AttentionVariant>(params, smem);
}'''
DECODE_KERNEL_NEW = '''__global__ void __launch_bounds__(bdx * bdy * bdz,
    sizeof(typename Params::DTypeKV) == 2 ? (bdy == 8 ? 9 : 8) : (bdy == 8 ? 7 : 6))
BatchDecodeWithPagedKVCacheKernel(const __grid_constant__ Params params) {
  extern __shared__ uint8_t smem[];
  if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {
    fi_probe_sh()[0] = fi_probe_gt(); fi_probe_sh()[2] = (unsigned long long)clock64();
    fi_probe_sh()[1] = 0ull; fi_probe_sh()[3] = 0ull;
  }
  BatchDecodeWithPagedKVCacheDevice<POS_ENCODING_MODE, num_stages_smem, tile_size_per_bdx, vec_size,
                                    bdx, bdy, bdz, AttentionVariant>(params, smem);
  __syncthreads();
  const uint32_t fi_idx = blockIdx.y * gridDim.x + blockIdx.x;
  if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0 && fi_idx < FI_PROBE_SLOTS) {
    const bool valid = !(params.block_valid_mask && !params.block_valid_mask[blockIdx.x]);
    unsigned long long* r = fi_probe_buf + fi_idx * 8;
    r[0] = fi_probe_sh()[0]; r[1] = fi_probe_sh()[1]; r[2] = fi_probe_gt();
    r[3] = fi_probe_sh()[2]; r[4] = fi_probe_sh()[3]; r[5] = (unsigned long long)clock64();
    r[6] = (unsigned long long)fi_probe_smid() | ((unsigned long long)(valid ? 1 : 0) << 16) |
           ((unsigned long long)blockIdx.y << 20);
    r[7] = valid ? ((unsigned long long)params.request_indices[blockIdx.x] |
                    ((unsigned long long)params.kv_tile_indices[blockIdx.x] << 32)) : 0ull;
  }
}'''


#: record the decode CTA's time after its PDL wait (inside the kernel body): off, since it cost the group-8 kernel 8
#: registers in a local sm_90a build with FlashInfer's JIT flags (56 -> 64: 9 -> 8 resident CTAs, which would move the
#: very dispatch this probe reads); the entry / exit records keep the kernels' register counts
DECODE_WAIT_RECORD = False


def patch_headers(inc: str) -> None:
    """Insert the records into <inc>/flashinfer/attention/{cascade,decode}.cuh (idempotent; raises when an anchor of
    FlashInfer 0.6.4's text is missing, so a different version fails before anything is built)."""
    casc = os.path.join(inc, "flashinfer", "attention", "cascade.cuh")
    dec = os.path.join(inc, "flashinfer", "attention", "decode.cuh")
    for path, edits in ((casc, [(CASCADE_ANCHOR, '#include "state.cuh"\n' + PROBE_DEFS + '\nnamespace flashinfer {'),
                                (MERGE_ENTRY_OLD, MERGE_ENTRY_NEW), (MERGE_WAIT_OLD, MERGE_WAIT_NEW),
                                (MERGE_EXIT_OLD, MERGE_EXIT_NEW)]),
                        (dec, ([(DECODE_WAIT_OLD, DECODE_WAIT_NEW)] if DECODE_WAIT_RECORD else [])
                         + [(DECODE_KERNEL_OLD, DECODE_KERNEL_NEW)])):
        with open(path) as f:
            text = f.read()
        if "fi_probe_" in text:
            continue
        for old, new in edits:
            if text.count(old) != 1:
                raise RuntimeError(f"{path}: anchor found {text.count(old)} times: {old[:60]!r}")
            text = text.replace(old, new)
        with open(path, "w") as f:
            f.write(text)


#: (group, model, batch, context): the crowded S = 2 Llama-3.1-8B bf16 calls at a constant busiest-SM count (B 14 ->
#: 60 at TP 1, B 100 / 120 at TP 2), the Llama-3.1-70B TP 4 calls on the (594, 2) graph grid (B 70 meets, B 150
#: misses), and controls (short one-wave calls that meet)
SHAPES = ([("c: 8B S=2", "llama8b", b, 204) for b in (14, 28, 42, 52, 60)]
          + [("c: 8B S=2", "llama8b", 60, 176), ("c: 8B S=1 ctl", "llama8b", 60, 120)]
          + [("c: 8B TP2 S=2", "llama8b_tp2", b, 196) for b in (30, 100, 120)]
          + [("b: 70B TP4", "llama70b_tp4", b, t) for b in (70, 110, 150, 200) for t in (76, 124)]
          + [("control", "llama70b", 46, 88), ("control", "llama8b", 6, 118)])
HEADS = {"llama8b": (32, 8), "llama70b": (64, 8), "llama70b_tp4": (16, 2), "llama8b_tp2": (16, 4)}


def _q(xs, p):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * p
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def summarize(label, dec, mrg, clock_mhz):
    """One summary row from the decode and merge records (lists of dicts); times in us from the decode's first
    CTA start."""
    if not dec:
        return {"label": label, "note": "no decode records"}
    t0 = min(r["gt_start"] for r in dec)
    valid = [r for r in dec if r["valid"]]
    per_sm = {}
    for r in valid:
        per_sm.setdefault(r["smid"], []).append(r)
    busiest = max(len(v) for v in per_sm.values()) if per_sm else 0
    dur = [(r["clk_end"] - r["clk_start"]) / clock_mhz for r in valid]
    run = [(r["clk_end"] - r["clk_wait"]) / clock_mhz for r in valid if r["clk_wait"]]
    starts = [(r["gt_start"] - t0) / 1e3 for r in valid]
    ends = [(r["gt_end"] - t0) / 1e3 for r in valid]
    dec_end_all = max((r["gt_end"] - t0) / 1e3 for r in dec)
    hist = {}
    for v in per_sm.values():
        hist[len(v)] = hist.get(len(v), 0) + 1
    # the SM whose last CTA ends last, and its CTAs' span
    last_sm = max(per_sm, key=lambda s: max(r["gt_end"] for r in per_sm[s])) if per_sm else -1
    row = {"label": label, "ctas": len(dec), "valid": len(valid), "sms_used": len(per_sm), "busiest_sm_ctas": busiest,
           "ctas_per_sm_hist": " ".join(f"{k}:{hist[k]}" for k in sorted(hist)),
           "last_sm_ctas": len(per_sm.get(last_sm, [])),
           "cta_us_med": statistics.median(dur) if dur else float("nan"), "cta_us_p90": _q(dur, 0.9),
           "cta_us_max": max(dur) if dur else float("nan"),
           "run_after_wait_us_med": statistics.median(run) if run else float("nan"),
           "start_us_p90": _q(starts, 0.9), "start_us_max": max(starts) if starts else float("nan"),
           "valid_end_us_med": statistics.median(ends) if ends else float("nan"),
           "valid_end_us_max": max(ends) if ends else float("nan"), "decode_end_us": dec_end_all}
    if mrg:
        ms = [(r["gt_start"] - t0) / 1e3 for r in mrg]
        mw = [(r["gt_wait"] - t0) / 1e3 for r in mrg]
        me = [(r["gt_end"] - t0) / 1e3 for r in mrg]
        items = [r["items"] for r in mrg]
        mrun = [(r["clk_end"] - r["clk_wait"]) / clock_mhz for r in mrg]
        row.update({"merge_ctas": len(mrg), "merge_items_max": max(items), "merge_items_sum": sum(items),
                    "merge_start_us_min": min(ms), "merge_wait_us_min": min(mw), "merge_wait_us_max": max(mw),
                    "merge_run_us_med": statistics.median(mrun), "merge_run_us_max": max(mrun),
                    "merge_end_us_max": max(me), "call_us": max(me)})
    else:
        row["call_us"] = dec_end_all
    return row


def parse(buf, n_dec, n_mrg):
    dec, mrg = [], []
    for i in range(n_dec):
        w = buf[i * WORDS:(i + 1) * WORDS]
        if w[7] == 0 and w[6] == 0 and w[0] == 0:
            continue
        dec.append({"cta": i, "gt_start": w[0], "gt_wait": w[1], "gt_end": w[2], "clk_start": w[3], "clk_wait": w[4],
                    "clk_end": w[5], "smid": w[6] & 0xFFFF, "valid": (w[6] >> 16) & 1, "y": w[6] >> 20,
                    "request": w[7] & 0xFFFFFFFF, "chunk": w[7] >> 32})
    for i in range(n_mrg):
        w = buf[(SLOTS + i) * WORDS:(SLOTS + i + 1) * WORDS]
        if w[7] != 1:
            continue
        mrg.append({"cta": i, "gt_start": w[0], "gt_wait": w[1], "gt_end": w[2], "clk_start": w[3], "clk_wait": w[4],
                    "clk_end": w[5], "smid": w[6] & 0xFFFF, "items": w[6] >> 16})
    return dec, mrg


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--clock-mhz", type=float, default=1980.0, help="SM clock for clock64 -> us (the log's)")
    args = ap.parse_args()
    sys.path.insert(0, HERE)
    os.makedirs(args.out, exist_ok=True)
    import measure_production_attention as M
    import torch

    fi, note = M.import_flashinfer()
    inc = os.path.join(os.path.dirname(fi.__file__), "data", "include")
    patch_headers(inc)
    print("flashinfer", fi.__version__, note, "patched", inc, flush=True)
    from flashinfer.jit import attention as A
    from flashinfer.jit.core import build_jit_specs
    bf, i32 = torch.bfloat16, torch.int32
    spec = A.gen_batch_decode_module(bf, bf, bf, i32, 128, 128, 0, False, False)
    t = time.time()
    build_jit_specs([spec], verbose=False)
    lib = ctypes.CDLL(str(spec.get_library_path()))
    print(f"built in {time.time() - t:.0f} s: {spec.get_library_path()}", flush=True)
    lib.fi_probe_clear.restype = ctypes.c_int
    lib.fi_probe_read.restype = ctypes.c_int
    lib.fi_probe_read.argtypes = [ctypes.c_void_p, ctypes.c_ulonglong]
    ws = torch.zeros(1 << 30, dtype=torch.uint8, device="cuda")
    nwords = 2 * SLOTS * WORDS
    host = (ctypes.c_ulonglong * nwords)()
    summ, recs = [], []
    shapes = SHAPES[:2] if args.smoke else SHAPES
    for group, model, B, T in shapes:
        hq, hkv = HEADS[model]
        s = dict(family="fi_decode", model=model, heads=hq, kv_heads=hkv, head_dim=128, dtype="bf16", batch=B,
                 q_rows=1, context=T, page_size=16)
        label = f"{model}:B{B}:T{T}"
        try:
            fn, R, plan = M.run_fi_paged(torch, fi, s, ws, False, False)
            med, p20, p80, calls = M.time_graph(torch, fn)
            fn(0)
            torch.cuda.synchronize()
            rc = lib.fi_probe_clear()
            torch.cuda._sleep(int(400 * 2000))
            for i in range(4):
                fn(i)
            rc2 = lib.fi_probe_read(ctypes.cast(host, ctypes.c_void_p), nwords * 8)
            buf = list(host)
            dec, mrg = parse(buf, SLOTS, SLOTS)
            row = summarize(label, dec, mrg, args.clock_mhz)
            row.update({"group": group, "model": model, "heads": hq, "kv_heads": hkv, "batch": B, "context": T,
                        "graph_us": round(med, 3), "graph_p20_us": round(p20, 3), "graph_p80_us": round(p80, 3),
                        "plan": plan, "rc": f"{rc}/{rc2}"})
            summ.append(row)
            t0 = min(r["gt_start"] for r in dec) if dec else 0
            for kern, rs in (("decode", dec), ("merge", mrg)):
                for r in rs:
                    recs.append({"label": label, "kernel": kern, **{k: r.get(k, "") for k in
                                 ("cta", "smid", "valid", "y", "request", "chunk", "items")},
                                 "start_us": round((r["gt_start"] - t0) / 1e3, 3),
                                 "wait_us": round((r["gt_wait"] - t0) / 1e3, 3) if r["gt_wait"] else "",
                                 "end_us": round((r["gt_end"] - t0) / 1e3, 3),
                                 "clk_run": r["clk_end"] - r["clk_start"],
                                 "clk_after_wait": (r["clk_end"] - r["clk_wait"]) if r["clk_wait"] else ""})
            print(f"{label:24s} graph {med:7.2f} us | valid {row.get('valid')} of {row.get('ctas')} busiest "
                  f"{row.get('busiest_sm_ctas')} hist {row.get('ctas_per_sm_hist')} | CTA med/max "
                  f"{row.get('cta_us_med', 0):.2f}/{row.get('cta_us_max', 0):.2f} us, start max "
                  f"{row.get('start_us_max', 0):.2f}, decode end {row.get('valid_end_us_max', 0):.2f} | merge wait "
                  f"{row.get('merge_wait_us_min', float('nan')):.2f}-{row.get('merge_wait_us_max', float('nan')):.2f} "
                  f"items {row.get('merge_items_max', '')} run {row.get('merge_run_us_max', float('nan')):.2f} end "
                  f"{row.get('call_us', float('nan')):.2f}", flush=True)
        except Exception as e:   # noqa: BLE001
            print(label, "failed:", repr(e)[:600], flush=True)
            summ.append({"label": label, "group": group, "note": f"failed: {repr(e)[:300]}"})
        for name, rows in (("fi_cta_summary.csv", summ), ("fi_cta_records.csv", recs)):
            keys = []
            for r in rows:
                keys += [k for k in r if k not in keys]
            with open(os.path.join(args.out, name), "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=keys)
                w.writeheader()
                w.writerows(rows)


if __name__ == "__main__":
    main()
