"""Time block-scaled fp8 GEMMs (1 x 128 activation scales, 128 x 128 weight scales: DeepSeek-V3's recipe) on one GPU
through two libraries on the same shapes and the same quantized data:
    deepgemm   DeepGEMM's fp8_gemm_nt (deepseek-ai/DeepGEMM 54e2261, csrc/apis/gemm.hpp: on SM90 with fp32 scales the
               1D2D kernel, deep_gemm/include/deep_gemm/impls/sm90_fp8_gemm_1d2d.cuh), the kernel SGLang / vLLM run
               for DeepSeek-V3's linear layers; host code built on the machine (dg_upstream.py, DG_API_GROUPS
               gemm,layout,runtime), kernels JIT-compiled by nvcc on first use
    cublaslt   torch._scaled_mm with block scales (cuBLASLt's nvjet ..._Ablk128_Bvec128 kernels), as the committed
               production_kernels campaigns call it

    python measure_deepgemm_gemm.py --grid GRID.csv --out DIR [--smoke] [--jit-workers N]

GRID.csv: columns kernel (deepgemm | cublaslt), rows (M), k, n (the committed prediction of the blind grid). Weights
rotate over `copies` quantized copies (copies x N x K bytes >= 2 x the 50 MB L2, as the fifth GEMM set does), so no
timed call finds its weight in the L2. Timing: lab/harness.py's CUDA-graph timer (_timing.time_graph: calls back to
back in a graph, a spin before each timed replay, the median of 5 replays / calls): device time + the graph's gap.
The activation scales are handed to DeepGEMM already in its MN-major TMA-aligned layout (what SGLang's per-token-group
quantization kernel writes), so a timed call launches the GEMM kernel alone.
Before timing anything every (kernel, shape) is checked against a float32 torch reference of the dequantized product
(max |out - ref| / max |ref| <= MAX_REL_ERR, NaN fails); a failing shape is not timed (recorded in the log).
--jit-workers N: before the main pass, N processes call DeepGEMM once on every grid shape (small random data) so its
nvcc JIT builds run in parallel into the shared DG_JIT_CACHE_DIR (DeepGEMM renames each build atomically).
The cuBLASLt rows' launched kernels (names, grids) go to the _notes file (torch.profiler).
cuBLASLt scale layouts (SCRIPT_VERSION 2): each cuBLASLt shape is tried first with the plain layouts (scale_a over a
contiguous K/128 x M tensor, scale_b the contiguous N/128 x K/128 weight scales transposed) and, where that call
raises or fails the reference check, with the same scales in buffers whose leading dimension is padded to a multiple
of 4 floats (16 bytes: scale_a's M, scale_b's K/128), the alignment cuBLASLt's TMA loads of the scales need; the layout
that passed is written to the note column (plain / padded16).
"""
from __future__ import annotations

import argparse
import csv
import datetime as dt
import math
import os
import subprocess
import sys
import time
from pathlib import Path

try:   # the grid is read without torch (lab/kernels/predict_deepgemm_gemm.py, CPU smoke)
    import _timing as T
    import torch
except ImportError:
    torch = T = None

SCRIPT_VERSION = 2
L2_BYTES = 50 * 1024 * 1024
MAX_COPIES = 64
MAX_REL_ERR = 2e-2   # bf16 output (8 mantissa bits) of an fp32-accumulated product; a wrong layout gives O(1)
KERNELS = ("deepgemm", "cublaslt")
FIELDS = ["kernel", "rows", "n", "k", "median_us", "p20_us", "p80_us", "calls", "copies", "rel_err", "note", "device",
          "torch", "cuda", "driver", "deep_gemm", "date", "script_version"]


def read_grid(path) -> list[tuple[str, int, int, int]]:
    """(kernel, M, K, N) of the grid CSV, sorted by (K, N) so each weight set is made once."""
    out = set()
    for r in csv.DictReader(open(path)):
        kern = r["kernel"]
        if kern not in KERNELS:
            raise SystemExit(f"{path}: kernel {kern!r}: allowed {KERNELS}")
        m, k, n = int(float(r["rows"])), int(float(r["k"])), int(float(r["n"]))
        if k % 128 or n % 128:
            raise SystemExit(f"{path}: K {k} / N {n} must be multiples of 128 (block scales)")
        out.add((kern, m, k, n))
    return sorted(out, key=lambda t: (t[2], t[3], t[0], t[1]))


def copies_for(k: int, n: int) -> int:
    return max(2, min(MAX_COPIES, math.ceil(2 * L2_BYTES / (n * k))))


def quant_weight(k, n, dev):
    """A random bf16 weight [N, K] quantized per 128 x 128 block: (fp8 [N, K], fp32 scales [N / 128, K / 128])."""
    w = torch.randn(n, k, device=dev, dtype=torch.bfloat16)
    blk = w.float().view(n // 128, 128, k // 128, 128).abs().amax(dim=(1, 3)).clamp(1e-4) / 448.0
    w8 = (w.float().view(n // 128, 128, k // 128, 128) / blk[:, None, :, None]).view(n, k).to(torch.float8_e4m3fn)
    return w8, blk.contiguous()


def quant_act(m, k, dev):
    """A random activation [M, K] quantized per 1 x 128 group: (fp8 [M, K], fp32 scales [M, K / 128] contiguous)."""
    x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
    s = x.float().view(m, k // 128, 128).abs().amax(dim=2).clamp(1e-4) / 448.0
    x8 = (x.float().view(m, k // 128, 128) / s[:, :, None]).view(m, k).to(torch.float8_e4m3fn)
    return x8, s.contiguous()


def reference(x8, sa, w8, sb):
    """float32 (x8 * sa) @ (w8 * sb).T, each scale broadcast over its 1 x 128 / 128 x 128 block."""
    xa = x8.float() * sa.repeat_interleave(128, dim=1)
    wb = w8.float() * sb.repeat_interleave(128, dim=0).repeat_interleave(128, dim=1)
    return xa @ wb.t()


def mn_major_aligned(sa):
    """[M, K / 128] scales laid out MN-major with M padded to 4 (16 bytes: the TMA alignment), the layout DeepGEMM's
    get_mn_major_tma_aligned_tensor returns and returns unchanged (csrc/jit_kernels/impls/smxx_layout.hpp @ 54e2261):
    made here so that no transpose kernel is JIT-built or launched."""
    m, kb = sa.shape
    buf = torch.zeros(kb, (m + 3) // 4 * 4, device=sa.device, dtype=torch.float32)
    buf[:, :m] = sa.t()
    return buf[:, :m].t()


def rel_err(out, ref) -> float:
    e = float((out.float() - ref).abs().max() / ref.abs().max().clamp(1e-30))
    return e if e == e else float("inf")


def padded16(t):
    """A [rows, cols] view with stride (1, ceil4(rows)): t's values in a column-major buffer whose leading dimension
    (rows) is padded to a multiple of 4 floats (16 bytes)."""
    r, c = t.shape
    buf = torch.zeros(c, (r + 3) // 4 * 4, device=t.device, dtype=t.dtype)
    buf[:, :r] = t.t()
    return buf[:, :r].t()


class Calls:
    """The two libraries' calls on one shape: fn(kernel)(i) computes with weight copy i % copies into `d`;
    layout (cuBLASLt): plain or padded16 scales (module docstring)."""

    def __init__(self, dg, x8, sa, ws, layout: str = "plain"):
        self.dg, self.x8, self.ws = dg, x8, ws
        m, k = x8.shape
        n = ws[0][0].shape[0]
        self.d = torch.empty(m, n, device=x8.device, dtype=torch.bfloat16)
        self.sa_dg = mn_major_aligned(sa) if dg is not None else None
        # torch._scaled_mm block scales: scale_a [M, K/128] over a contiguous (K/128 x M) tensor, scale_b [K/128, N/128]
        # = the contiguous (N/128 x K/128) weight scales transposed (the committed campaigns' layouts,
        # lab/kernels/measure_production_kernels.py)
        if layout == "padded16":
            self.sa_t = padded16(sa)
            self.wt = [(w8.t(), padded16(sb.t())) for w8, sb in ws]
        else:
            self.sa_t = sa.t().contiguous().t()
            self.wt = [(w8.t(), sb.t()) for w8, sb in ws]

    def fn(self, kern):
        c = len(self.ws)
        if kern == "deepgemm":
            def f(i):
                w8, sb = self.ws[i % c]
                self.dg.fp8_gemm_nt(self.x8, self.sa_dg, w8, sb, self.d)
                return self.d
        else:
            def f(i):
                w8t, sbt = self.wt[i % c]
                return torch._scaled_mm(self.x8, w8t, scale_a=self.sa_t, scale_b=sbt, out_dtype=torch.bfloat16)
        return f


def launched_kernels(fn) -> list[str]:
    import json
    import tempfile

    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    with tempfile.NamedTemporaryFile(suffix=".json") as tf:
        prof.export_chrome_trace(tf.name)
        ev = json.load(open(tf.name)).get("traceEvents", [])
    return [f"{e.get('name')} grid {e.get('args', {}).get('grid')} ({e.get('dur')} us)" for e in ev
            if e.get("cat") == "kernel"]


def _dg():
    os.environ.setdefault("DG_API_GROUPS", "gemm,layout,runtime")
    import dg_upstream as dg
    return dg


def jit_worker(grid_csv, idx: int, nworkers: int) -> None:
    """One pre-compiling process: DeepGEMM once on every grid shape i with i % nworkers == idx (tiny timing-free
    calls on random data; the JIT builds land in DG_JIT_CACHE_DIR)."""
    dg = _dg()
    shapes = sorted({(m, k, n) for kern, m, k, n in read_grid(grid_csv) if kern == "deepgemm"})
    for i, (m, k, n) in enumerate(shapes):
        if i % nworkers != idx:
            continue
        x8, sa = quant_act(m, k, "cuda")
        w8, sb = quant_weight(k, n, "cuda")
        d = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        t0 = time.time()
        dg.fp8_gemm_nt(x8, mn_major_aligned(sa), w8, sb, d)
        torch.cuda.synchronize()
        print(f"jit worker {idx}: M {m} K {k} N {n} first call {time.time() - t0:.1f} s", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", required=True, type=Path)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--smoke", action="store_true", help="no timing on the CPU: read the grid, print the plan")
    ap.add_argument("--jit-workers", type=int, default=0)
    ap.add_argument("--tag", default="blind", help="the CSV's name: deepgemm_gemm_<tag>_<device>_<date>.csv")
    ap.add_argument("--jit-worker", type=str, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    grid = read_grid(args.grid)
    if args.jit_worker:
        i, n = (int(x) for x in args.jit_worker.split("/"))
        jit_worker(args.grid, i, n)
        return
    kns = sorted({(k, n) for _, _, k, n in grid})
    print(f"grid {args.grid.name}: {len(grid)} rows, {len(kns)} (K, N) weight sets, "
          f"{sum(k == 'deepgemm' for k, *_ in grid)} deepgemm / {sum(k == 'cublaslt' for k, *_ in grid)} cublaslt",
          flush=True)
    for k, n in kns:
        print(f"  K {k} N {n}: {copies_for(k, n)} weight copies ({copies_for(k, n) * k * n / 2**20:.0f} MiB)")
    if args.smoke or torch is None or not torch.cuda.is_available():
        print("smoke / no CUDA: plan only")
        return
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    need_dg = any(kern == "deepgemm" for kern, *_ in grid)
    dg = _dg() if need_dg else None   # a cuBLASLt-only grid runs without DeepGEMM's build
    if need_dg:
        print(f"deep_gemm import {time.time() - t0:.1f} s; sms {dg.get_num_sms()}", flush=True)
    if args.jit_workers > 0 and need_dg:
        t1 = time.time()
        procs = [subprocess.Popen([sys.executable, __file__, "--grid", str(args.grid),
                                   "--jit-worker", f"{i}/{args.jit_workers}"]) for i in range(args.jit_workers)]
        rcs = [p.wait() for p in procs]
        print(f"jit pre-compile: {args.jit_workers} workers, rc {rcs}, {time.time() - t1:.1f} s", flush=True)
    v = T.versions() | {"deep_gemm": dg.BUILD if dg is not None else "-"}
    print(v, flush=True)
    slug = v["device"].lower().replace(" ", "-")
    path = args.out / f"deepgemm_gemm_{args.tag}_{slug}_{dt.date.today().isoformat()}.csv"
    notes = []
    fh = open(path, "w", newline="")
    w = csv.DictWriter(fh, fieldnames=FIELDS)
    w.writeheader()
    done = 0
    for k, n in kns:
        torch.cuda.empty_cache()
        c = copies_for(k, n)
        ws = [quant_weight(k, n, "cuda") for _ in range(c)]
        for kern, m in [(kk, mm) for kk, mm, k2, n2 in grid if (k2, n2) == (k, n)]:
            x8, sa = quant_act(m, k, "cuda")
            row = {"kernel": kern, "rows": m, "n": n, "k": k, "copies": c, "device": v["device"], "torch": v["torch"],
                   "cuda": v["cuda"], "driver": v["driver"], "deep_gemm": v["deep_gemm"],
                   "date": dt.date.today().isoformat(), "script_version": SCRIPT_VERSION}
            try:
                ref = reference(x8, sa, *ws[1 % c])
                tried = []
                for layout in (("plain", "padded16") if kern == "cublaslt" else ("plain",)):
                    calls = Calls(dg, x8, sa, ws, layout)
                    f = calls.fn(kern)
                    try:
                        out = f(1).clone()
                        torch.cuda.synchronize()
                        e = rel_err(out, ref)
                    except Exception as ex:  # noqa: BLE001 - the next layout is tried, the failure recorded
                        e = float("inf")
                        print(f"{kern} M {m} K {k} N {n} ({layout}): {type(ex).__name__}: {str(ex)[:160]}", flush=True)
                    tried.append(f"{layout} {e:.2g}")
                    if e <= MAX_REL_ERR:
                        break
                row["rel_err"] = f"{e:.2e}"
                if not e <= MAX_REL_ERR:
                    print(f"CHECK FAILED {kern} M {m} K {k} N {n}: rel err {'; '.join(tried)}; not timed", flush=True)
                    row["note"] = f"check failed ({'; '.join(tried)}): not timed"
                    w.writerow(row)
                    continue
                del ref, out
                st = T.time_graph(f)
                row |= {"median_us": round(st["median"], 4), "p20_us": round(st["p20"], 4),
                        "p80_us": round(st["p80"], 4), "calls": st["calls"],
                        "note": f"rotated over {c} weight copies; scales {layout}"}
                w.writerow(row)
                fh.flush()
                done += 1
                if kern == "cublaslt":
                    notes.append(f"kernels cublaslt (M {m}, K {k}, N {n}, scales {layout}): "
                                 + " | ".join(launched_kernels(lambda f=f: f(0))))
                print(f"{kern:9s} M {m:5d} K {k:6d} N {n:6d}  {st['median']:9.3f} us  err {e:.1e}", flush=True)
            except Exception as ex:  # noqa: BLE001 - recorded, the campaign goes on
                print(f"{kern} M {m} K {k} N {n}: {type(ex).__name__}: {str(ex)[:200]}", flush=True)
                row["note"] = f"failed: {type(ex).__name__}: {str(ex)[:120]}"
                w.writerow(row)
        del ws
    fh.close()
    (path.parent / (path.stem + "_notes.txt")).write_text("\n".join(notes) + "\n")
    print(f"wrote {path} ({done} timed rows) in {time.time() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    main()
