"""One-GPU campaign for production kernels the model prices from their sources: top-k selection over long score rows
(torch.topk and SGLang's sgl-kernel radix top-k, built from a copy kept outside the repository) and fp8 GEMMs
(torch._scaled_mm with per-tensor, per-row and 1x128 / 128x128 block scales) at decode and prefill shapes.

    python lab/kernels/measure_production_kernels.py --out DIR [--lib DIR] [--smoke] [--only topk|gemm]
                                                     [--rotate] [--grid committed|fresh|fresh2|fresh3] [--sass]

--grid fresh: the shapes of the fresh hold-out (FRESH_*: top-k rows 2-512 over 8K-512K in all three distributions,
SGLang's kernel only; bf16 / per-tensor / per-row fp8 GEMMs at K 7168 with N 256-2304 and at N 576 with K 2048 / 4096,
M 1 / 16 / 64, weights rotated past the L2), CSV suffix _fresh, and for every GEMM shape the kernels the call launches
(torch.profiler: name, grid, block, registers, shared memory) in the _notes file. --grid fresh2: the second GEMM
hold-out (FRESH2_*: bf16 / per-tensor fp8 at K 7168 and 5120 with N 384-3072, N 576 / 1024 at K 1536-6144, M 1 / 8 /
32 / 64; weights rotated; kernels recorded likewise), CSV suffix _fresh2. --grid fresh3: the third GEMM hold-out
(FRESH3_*: bf16 / per-tensor fp8 at the (K, N) of Llama-3.1-8B / 70B at TP 1-8, Qwen2.5-7B and DeepSeek-V3 decode
layers, M 1 / 12 / 48; weights rotated; kernels recorded likewise; the same lists as simulator/calibration/
small_m_gemm_holdout.py), CSV suffix _fresh3. --grid topk_blind: the blind top-k set
(BLIND_TOPK: SGLang's kernel over decode rows 1-64, multi-wave rows 160-2048 and prefill rows 1536 / 4096, row lengths
3K-786K in none of the earlier grids, all three distributions), CSV suffix _topk_blind. --grid topk_blind2: the second
(BLIND2_TOPK: score tensors / rows in flight of 38-57 MiB around the L2's edge, short rows of 2.5K-14K at decode and
prefill), CSV suffix _topk_blind2. --grid topk_blind3: the third (BLIND3_TOPK: short rows of 2.2K-15.5K at decode
rows 1-256 on the recorded scores, with long-row, prefill and gaussian / uniform controls), CSV suffix _topk_blind3.
--grid blind5 --shapes CSV: the fifth GEMM set (fp8 per-tensor / per-row / block scales at the shapes of the
committed prediction CSV; weights rotated; kernels of the block and per-tensor rows recorded), CSV suffix _blind5.
--grid list --shapes CSV --tag SUFFIX: any committed shape list of bf16 / fp8 GEMM rows (the H200 GEMM transfer grid:
lab/kernels/predict_h200_gemm.py), measured as --grid blind5 measures, bf16 rows through torch.nn.functional.linear;
CSV suffix SUFFIX.
--sass: the SASS of sgl_topk.so's
kernel (cuobjdump, when the machine has it) into DIR, to read how the sweep loops issue their loads.

--lib: a folder holding sgl_topk.so (SGLang's kernel compiled for sm_90a; the copy is not part of the repository) and
scores_<trace>.npy (recorded score rows: `measure.gvr_rows` of the shipped codegqa traces, log-probabilities, fp16).
Rows longer than a recorded row are drawn from that row's values with replacement, each value dithered within its fp16
rounding interval (x * (1 + u * 2^-11), u uniform in [-1, 1)) so that the fp32 rows have no ties that fp16 storage
made. Writes DIR/production_kernels_<device>_<date>.csv (one row per measurement; family topk | gemm). Timing:
lab/kernels/_timing.py (CUDA-graph replays after a spin kernel).
"""
from __future__ import annotations

import argparse
import csv
import ctypes
import datetime as dt
import math
import os
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _timing as T  # noqa: E402

SCRIPT_VERSION = 7   # 4: --grid fresh3 and --grid topk_blind added; 5: --grid topk_blind2; 6: --grid topk_blind3 and
# --grid blind5 (added side by side, both measured as version 6; timing unchanged); 7: --grid list (bf16 rows in a
# --shapes list: torch.nn.functional.linear, weights rotated as the fp8 rows'; timing unchanged)
TOPK_K = 2048
#: (rows, row length) per phase; decode rows 1 / 16 / 128 over 4K-1M, prefill-like 1024 rows over 4K-64K
TOPK_DECODE = [(r, n) for r in (1, 16, 128) for n in (4096, 16384, 65536, 262144, 1048576)]
TOPK_PREFILL = [(1024, n) for n in (4096, 16384, 65536)]
TOPK_DISTS = ("recorded", "gaussian", "uniform")
#: (K, N) of weight GEMMs: Llama-3.1-8B qkv / down, Llama-70B TP8 o / gate-up, DeepSeek-V3 q_b (1536 x 24576) /
#: kv_a (7168 x 576) / shared expert down (2048 x 7168)
GEMM_KN = [(4096, 6144), (14336, 4096), (8192, 7168), (1536, 24576), (7168, 576), (2048, 7168)]
GEMM_M = [1, 16, 64, 256, 1024, 4096]
#: the fresh hold-out (shapes in none of the committed rows): top-k rows x length, every distribution; GEMM (K, N) and M
FRESH_TOPK = [(r, n) for r in (2, 8, 32, 256, 512) for n in (8192, 32768, 131072, 524288)]
FRESH_GEMM_KN = [(7168, n) for n in (256, 512, 1024, 1536, 2304)] + [(2048, 576), (4096, 576)]
FRESH_GEMM_M = [1, 16, 64]
#: the blind top-k set (SGLang's kernel only, every distribution; shapes in none of the earlier CSVs): decode rows 1-64,
#: multi-wave rows 160-2048, prefill rows 1536 / 4096 (--grid topk_blind, CSV suffix _topk_blind)
BLIND_TOPK = ([(r, n) for r in (1, 6, 24, 64) for n in (3072, 12288, 49152, 196608, 786432)]
              + [(r, n) for r in (160, 400, 1000, 2048) for n in (6144, 24576, 98304)]
              + [(r, 393216) for r in (400, 2048)]
              + [(r, n) for r in (1536, 4096) for n in (3072, 12288, 49152)])
#: the second blind top-k set (--grid topk_blind2, CSV suffix _topk_blind2; SGLang's kernel, every distribution; row
#: lengths in none of the earlier grids): score tensors of 38-56 MiB at one wave (rows 32 / 64 / 128) and rows in flight
#: of 38-57 MiB over several waves (rows 300 / 1200), both around the L2's edge; short rows of 2.5K-14K at decode (rows 1 /
#: 8 / 40) and prefill (rows 1024 / 3072). The same list as simulator/calibration/fit_production_topk_gemm.py BLIND2_TOPK
BLIND2_TOPK = ([(r, n) for r, ns in ((32, (311296, 360448, 409600, 458752)), (64, (155648, 180224, 204800, 229376)),
                                     (128, (77824, 90112, 102400, 114688))) for n in ns]
               + [(r, n) for r in (300, 1200) for n in (75776, 88064, 100352, 112640)]
               + [(r, n) for r in (1, 8, 40) for n in (2560, 5120, 10240, 14336)]
               + [(r, n) for r in (1024, 3072) for n in (2560, 7168, 14336)])
#: the third blind top-k set (--grid topk_blind3, CSV suffix _topk_blind3; SGLang's kernel; (distribution, rows, row
#: length), row lengths in none of the earlier grids): short rows of 2.2K-15.5K at decode rows 1-256 on the recorded
#: scores, with long decode rows, prefill row counts and gaussian / uniform controls. The same list as
#: simulator/calibration/fit_production_topk_gemm.py BLIND3_TOPK
BLIND3_SHORT = (2200, 2900, 3700, 4500, 6000, 7700, 9500, 11800, 15500)
BLIND3_TOPK = ([("recorded", r, n) for r in (1, 4, 16, 64, 256) for n in BLIND3_SHORT]
               + [("recorded", r, n) for r in (8, 32) for n in (2500, 5200, 13000)]
               + [("recorded", 132, n) for n in (3300, 8200, 14000)] + [("recorded", 200, n) for n in (4000, 12000)]
               + [("recorded", r, n) for r in (1, 16, 100) for n in (30000, 120000, 500000, 1000000)]
               + [("recorded", r, n) for r in (512, 2048) for n in (2900, 6000, 11800, 30000)]
               + [("recorded", 4096, n) for n in (4500, 9500)]
               + [(d, r, n) for d in ("gaussian", "uniform") for r in (1, 16, 64) for n in (3700, 9500)]
               + [(d, 2048, 6000) for d in ("gaussian", "uniform")] + [(d, 16, 120000) for d in ("gaussian", "uniform")])
#: the second fresh hold-out (GEMMs only, bf16 and per-tensor fp8; shapes in no earlier campaign): --grid fresh2
FRESH2_GEMM_KN = [(k, n) for k in (7168, 5120) for n in (384, 768, 1280, 3072)] + [
    (k, n) for n in (576, 1024) for k in (1536, 3072, 6144)]
FRESH2_GEMM_M = [1, 8, 32, 64]
#: the third hold-out (GEMMs only, bf16 and per-tensor fp8; real models' decode-layer (K, N), in no earlier campaign):
#: Llama-3.1-8B o/gate_up TP1, qkv/down TP2, qkv/o/gate_up/down TP4, qkv/o/down TP8; Llama-3.1-70B qkv/down TP1, o/down
#: TP2, qkv/gate_up TP4, qkv/o/down TP8; Qwen2.5-7B qkv/down TP1; DeepSeek-V3 q_b TP8, dense down TP8, q_b/kv_b TP4
FRESH3_GEMM_KN = [(4096, 4096), (4096, 28672), (4096, 3072), (7168, 4096), (4096, 1536), (1024, 4096), (4096, 7168),
                  (3584, 4096), (4096, 768), (512, 4096), (1792, 4096), (8192, 10240), (28672, 8192), (4096, 8192),
                  (14336, 8192), (8192, 2560), (8192, 14336), (8192, 1280), (1024, 8192), (3584, 8192), (3584, 4608),
                  (18944, 3584), (1536, 3072), (2304, 7168), (1536, 6144), (512, 8192)]
FRESH3_GEMM_M = [1, 12, 48]


def _row_sampler(kind: str, lib: Path | None, gen: torch.Generator, dev):
    rec = None
    if kind == "recorded":
        f = lib / "scores_codegqa_16k.npy" if lib else None
        if f is None or not f.is_file():
            return None
        rec = torch.from_numpy(np.load(f).astype(np.float32)).to(dev)
        rec = [r[~torch.isnan(r)] for r in rec]

    def rows(R: int, N: int) -> torch.Tensor:
        if kind == "gaussian":
            return torch.randn(R, N, generator=gen, device=dev)
        if kind == "uniform":
            return torch.rand(R, N, generator=gen, device=dev)
        out = torch.empty(R, N, device=dev)
        for i in range(R):
            base = rec[i % len(rec)]
            idx = torch.randint(0, len(base), (N,), generator=gen, device=dev)
            u = torch.rand(N, generator=gen, device=dev) * 2.0 - 1.0
            out[i] = base[idx] * (1.0 + u * 2.0 ** -11)
        return out
    return rows


def topk_phase(sink, lib: Path | None, smoke: bool, fresh: bool = False, blind: bool = False, blind2: bool = False,
               blind3: bool = False):
    dev = "cuda" if T.cuda() else "cpu"
    gen = torch.Generator(device=dev)
    gen.manual_seed(0)
    sgl = None
    if T.cuda() and lib is not None and (lib / "sgl_topk.so").is_file():
        sgl = ctypes.CDLL(str((lib / "sgl_topk.so").resolve()))
        sgl.sgl_topk_setup.restype = ctypes.c_int
        sgl.sgl_topk_launch.restype = ctypes.c_int
        sgl.sgl_topk_launch.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_longlong] * 2 + [ctypes.c_void_p]
        rc = sgl.sgl_topk_setup()
        print(f"sgl_topk setup rc={rc}", flush=True)
    shapes = BLIND2_TOPK if blind2 else (BLIND_TOPK if blind else (FRESH_TOPK if fresh else TOPK_DECODE + TOPK_PREFILL))
    fresh = fresh or blind or blind2 or blind3
    if smoke:
        shapes = [(1, 4096), (4, 16384)]
    for dist in TOPK_DISTS:
        rows_of = _row_sampler(dist, lib, gen, dev)
        if rows_of is None:
            print(f"topk: no recorded rows in {lib}; skipping {dist}", flush=True)
            continue
        if blind3:   # BLIND3_TOPK names each shape's distribution
            shapes = [(r, n) for d, r, n in BLIND3_TOPK if d == dist]
            if smoke:
                shapes = shapes[:2]
        for R, N in shapes:
            if not fresh and dist == "uniform" and (R, N) not in ((1, 16384), (1, 262144), (16, 65536), (128, 16384), (1024, 16384)):
                continue
            x = rows_of(R, N)
            ok = True
            if sgl is not None:
                lens = torch.full((R,), N, dtype=torch.int32, device=dev)
                idx = torch.empty(R, TOPK_K, dtype=torch.int32, device=dev)

                def run_sgl(i, x=x, lens=lens, idx=idx, R=R, N=N):
                    rc = sgl.sgl_topk_launch(x.data_ptr(), idx.data_ptr(), lens.data_ptr(), R, N,
                                             torch.cuda.current_stream().cuda_stream)
                    if rc:
                        raise RuntimeError(f"sgl_topk launch rc={rc}")
                try:
                    run_sgl(0)
                    torch.cuda.synchronize()
                    # correctness: the selected set's minimum equals the k-th largest value
                    kth = torch.topk(x, TOPK_K, dim=1).values[:, -1]
                    got = torch.gather(x, 1, idx.clamp(min=0).long()).min(dim=1).values
                    ok = bool(torch.all(got >= kth - 1e-6 * kth.abs().clamp(min=1)).item())
                    st = T.time_graph(run_sgl)
                    sink.emit("topk", "sgl_topk", dist, R, N, TOPK_K, st, note="" if ok else "WRONG SELECTION")
                except Exception as e:  # noqa: BLE001 - recorded, the campaign goes on
                    print(f"sgl_topk {dist} {R}x{N}: {e!r}", flush=True)
            if not fresh:   # the fresh hold-out times SGLang's kernel only
                st = T.time_graph(lambda i, x=x: torch.topk(x, TOPK_K, dim=1, sorted=False))
                sink.emit("topk", "torch_topk", dist, R, N, TOPK_K, st)
            del x
            if T.cuda():
                torch.cuda.empty_cache()


L2_BYTES = 50 * 1024 * 1024   # H100 SXM's L2 (the lent H100 reported 50 MB): weights smaller than it stay resident


def launched_kernels(fn) -> list[str]:
    """The CUDA kernels one fn() call launches (torch.profiler): name, grid, block, registers and shared memory."""
    import json
    import tempfile

    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    with tempfile.NamedTemporaryFile(suffix=".json") as tf:
        prof.export_chrome_trace(tf.name)
        ev = json.load(open(tf.name)).get("traceEvents", [])
    out = []
    for e in ev:
        if e.get("cat") == "kernel":
            a = e.get("args", {})
            out.append(f"{e.get('name')} grid {a.get('grid')} block {a.get('block')} regs "
                       f"{a.get('registers per thread')} smem {a.get('shared memory')} ({e.get('dur')} us)")
    return out


def gemm_phase(sink, smoke: bool, rotate: bool = False, fresh: bool = False, fresh2: bool = False,
               fresh3: bool = False):
    """Every GEMM shape x M through cuBLAS / cuBLASLt. rotate: each captured call reads the next of `copies` weight
    copies (copies x weight bytes >= 2 x L2), so no call finds its weight in the L2 (without it, weights under ~50 MB
    are re-read from the L2 by every call of the timed graph: decode rows then time the L2, not the HBM)."""
    dev = "cuda" if T.cuda() else "cpu"
    if not T.cuda():
        print("gemm: no CUDA; smoke only checks shapes", flush=True)
    f8 = torch.float8_e4m3fn
    kns = GEMM_KN[:1] if smoke else (FRESH3_GEMM_KN if fresh3 else (
        FRESH2_GEMM_KN if fresh2 else (FRESH_GEMM_KN if fresh else GEMM_KN)))
    ms = [1, 64] if smoke else (FRESH3_GEMM_M if fresh3 else (
        FRESH2_GEMM_M if fresh2 else (FRESH_GEMM_M if fresh else GEMM_M)))
    fresh2 = fresh2 or fresh3   # bf16 + per-tensor fp8 only, as the second hold-out
    fresh = fresh or fresh2
    for K, N in kns:
        cap = 64 if fresh else 16   # fresh: small weights (N 256 at K 7168: 1.8 MB) need more copies to pass the L2
        copies = max(2, min(cap, math.ceil(2 * L2_BYTES / (N * K)))) if rotate else 1   # sized on the fp8 weight
        ws = [torch.randn(N, K, device=dev, dtype=torch.bfloat16) * 0.05 for _ in range(copies)]
        w8s = [w.to(f8) for w in ws] if T.cuda() else None
        tag = f"rotated over {copies} weight copies" if rotate else ""
        for M in ms:
            x = torch.randn(M, K, device=dev, dtype=torch.bfloat16)
            st = T.time_graph(lambda i, x=x, ws=ws, c=copies: torch.nn.functional.linear(x, ws[i % c]))
            sink.emit("gemm", "bf16", "", M, N, K, st, note=tag)
            if not T.cuda():
                continue
            x8 = x.to(f8)
            one = torch.ones((), device=dev)
            wts = [w8.t() for w8 in w8s]
            kerns = {
                "fp8_tensorwise": lambda i: torch._scaled_mm(x8, wts[i % copies], scale_a=one, scale_b=one,
                                                             out_dtype=torch.bfloat16),
            }
            sa = torch.ones(M, 1, device=dev)
            sb = torch.ones(1, N, device=dev)
            if not fresh2:
                kerns["fp8_rowwise"] = lambda i: torch._scaled_mm(x8, wts[i % copies], scale_a=sa, scale_b=sb,
                                                                  out_dtype=torch.bfloat16)
            # block scales: activation 1 x 128 (M x K/128, K-major as the blockwise path wants: a column-major view),
            # weight 128 x 128 (K/128 x N/128)
            if K % 128 == 0 and N % 128 == 0 and not fresh:
                sa_b = torch.ones(K // 128, M, device=dev).t()
                sb_b = torch.ones(N // 128, K // 128, device=dev).t()
                kerns["fp8_block"] = lambda i: torch._scaled_mm(x8, wts[i % copies], scale_a=sa_b, scale_b=sb_b,
                                                                out_dtype=torch.bfloat16)
            for name, fn in kerns.items():
                try:
                    st = T.time_graph(fn)
                    sink.emit("gemm", name, "", M, N, K, st, note=tag)
                    if fresh:
                        sink.note(f"kernels {name} (M {M}, K {K}, N {N}): "
                                  + " | ".join(launched_kernels(lambda fn=fn: fn(0))))
                except Exception as e:  # noqa: BLE001
                    print(f"gemm {name} M{M} K{K} N{N}: {type(e).__name__}: {str(e)[:160]}", flush=True)
            if fresh:
                try:
                    sink.note(f"kernels bf16 (M {M}, K {K}, N {N}): " + " | ".join(
                        launched_kernels(lambda x=x, w=ws[0]: torch.nn.functional.linear(x, w))))
                except Exception as e:  # noqa: BLE001
                    print(f"profile bf16 M{M} K{K} N{N}: {e!r}", flush=True)
        del ws, w8s
    if T.cuda() and not fresh:
        # the kernel each scaling mode runs (names only), one shape
        from torch.profiler import ProfilerActivity, profile
        K, N = GEMM_KN[0]
        x8 = torch.randn(64, K, device=dev).to(f8)
        w8t = torch.randn(N, K, device=dev).to(f8).t()
        one = torch.ones((), device=dev)
        tries = {"fp8_tensorwise": (one, one), "fp8_rowwise": (torch.ones(64, 1, device=dev), torch.ones(1, N, device=dev)),
                 "fp8_block": (torch.ones(K // 128, 64, device=dev).t(), torch.ones(N // 128, K // 128, device=dev).t())}
        for name, (a, b) in tries.items():
            try:
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    torch._scaled_mm(x8, w8t, scale_a=a, scale_b=b, out_dtype=torch.bfloat16)
                    torch.cuda.synchronize()
                ks = [e.key for e in prof.key_averages() if e.device_type.name == "CUDA"]
                sink.note(f"kernels {name} (M 64, K {K}, N {N}): {' | '.join(ks)}")
            except Exception as e:  # noqa: BLE001
                print(f"profile {name}: {e!r}", flush=True)


def gemm_list_phase(sink, shapes_csv: Path, smoke: bool, profile_kinds=("fp8_block", "fp8_tensorwise")):
    """The GEMM shapes listed in `shapes_csv` (columns kernel, rows, k, n: the committed prediction of the fifth GEMM set,
    simulator/calibration/fit_production_topk_gemm.py blind5_shapes) through torch._scaled_mm, weights rotated past the
    L2 as gemm_phase(rotate=True) does; per-tensor scales (scalar), per-row (M x 1, 1 x N) or 1x128 / 128x128 block
    scales (the committed campaigns' calls). The kernels of the `profile_kinds` rows go to the _notes file."""
    dev = "cuda" if T.cuda() else "cpu"
    rows = list(csv.DictReader(open(shapes_csv)))
    todo = sorted({(r["kernel"], int(float(r["rows"])), int(float(r["k"])), int(float(r["n"]))) for r in rows},
                  key=lambda t: (t[2], t[3], t[0], t[1]))
    if smoke:
        todo = todo[:3]
    print(f"gemm list: {len(todo)} shapes from {shapes_csv.name}", flush=True)
    if not T.cuda():
        return
    f8 = torch.float8_e4m3fn
    cur, ws8, copies = None, None, 1
    for kern, M, K, N in todo:
        if (K, N) != cur:
            ws8 = None
            torch.cuda.empty_cache()
            copies = max(2, min(64, math.ceil(2 * L2_BYTES / (N * K))))
            ws8 = [(torch.randn(N, K, device=dev, dtype=torch.bfloat16) * 0.05).to(f8) for _ in range(copies)]
            cur = (K, N)
        wts = [w.t() for w in ws8]
        x8 = torch.randn(M, K, device=dev, dtype=torch.bfloat16).to(f8)
        if kern == "bf16":   # the same weights in bf16 (twice the fp8 bytes: still past the L2), one linear
            wb = [w.to(torch.bfloat16) for w in ws8]
            xb = x8.to(torch.bfloat16)

            def fb(i, xb=xb, wb=wb, c=copies):
                return torch.nn.functional.linear(xb, wb[i % c])
            try:
                st = T.time_graph(fb)
                sink.emit("gemm", kern, "", M, N, K, st, note=f"rotated over {copies} weight copies")
            except Exception as e:  # noqa: BLE001 - recorded, the campaign goes on
                print(f"gemm {kern} M{M} K{K} N{N}: {type(e).__name__}: {str(e)[:160]}", flush=True)
            del wb
            continue
        if kern == "fp8_tensorwise":
            sa = sb = torch.ones((), device=dev)
        elif kern == "fp8_rowwise":
            sa, sb = torch.ones(M, 1, device=dev), torch.ones(1, N, device=dev)
        else:
            sa, sb = torch.ones(K // 128, M, device=dev).t(), torch.ones(N // 128, K // 128, device=dev).t()

        def fn(i, x8=x8, wts=wts, sa=sa, sb=sb, c=copies):
            return torch._scaled_mm(x8, wts[i % c], scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
        try:
            st = T.time_graph(fn)
            sink.emit("gemm", kern, "", M, N, K, st, note=f"rotated over {copies} weight copies")
            if kern in profile_kinds:
                sink.note(f"kernels {kern} (M {M}, K {K}, N {N}): " + " | ".join(launched_kernels(lambda fn=fn: fn(0))))
        except Exception as e:  # noqa: BLE001 - recorded, the campaign goes on
            print(f"gemm {kern} M{M} K{K} N{N}: {type(e).__name__}: {str(e)[:160]}", flush=True)
    ws8 = None


class Sink:
    FIELDS = ["family", "kernel", "dist", "rows", "n", "k", "median_us", "p20_us", "p80_us", "calls", "note",
              "device", "torch", "cuda", "driver", "date", "script_version"]

    def __init__(self, out: Path, suffix: str = ""):
        self.v = T.versions()
        slug = self.v["device"].lower().replace(" ", "-")
        self.path = out / f"production_kernels_{slug}_{dt.date.today().isoformat()}{suffix}.csv"
        self.f = open(self.path, "w", newline="")
        self.w = csv.DictWriter(self.f, fieldnames=self.FIELDS)
        self.w.writeheader()
        self.notes = []
        self.count = 0

    def emit(self, family, kernel, dist, rows, n, k, st, note=""):
        row = {"family": family, "kernel": kernel, "dist": dist, "rows": rows, "n": n, "k": k,
               "median_us": round(st["median"], 4), "p20_us": round(st["p20"], 4), "p80_us": round(st["p80"], 4),
               "calls": st["calls"], "note": note, "device": self.v["device"], "torch": self.v["torch"],
               "cuda": self.v["cuda"], "driver": self.v["driver"], "date": dt.date.today().isoformat(),
               "script_version": SCRIPT_VERSION}
        self.w.writerow(row)
        self.f.flush()
        self.count += 1   # measurements go to the CSV only: predictions are committed before anyone reads them

    def note(self, text):
        self.notes.append(text)
        (self.path.parent / (self.path.stem + "_notes.txt")).write_text("\n".join(self.notes) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--lib", type=Path, default=None)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--only", choices=("topk", "gemm"), default=None)
    ap.add_argument("--rotate", action="store_true", help="GEMMs: rotate weight copies past the L2 (CSV suffix _rotated)")
    ap.add_argument("--grid", choices=("committed", "fresh", "fresh2", "fresh3", "topk_blind", "topk_blind2",
                                       "topk_blind3", "blind5", "list"),
                    default="committed",
                    help="fresh: the fresh hold-out's shapes (module docstring; GEMM weights rotated; suffix _fresh); "
                         "fresh2: the second GEMM hold-out (FRESH2_*, bf16 + per-tensor fp8; suffix _fresh2); "
                         "fresh3: the third (FRESH3_*, real models' decode-layer shapes; suffix _fresh3); "
                         "topk_blind: the blind top-k set (BLIND_TOPK, SGLang only; suffix _topk_blind); "
                         "topk_blind2: the second (BLIND2_TOPK; suffix _topk_blind2); "
                         "topk_blind3: the third (BLIND3_TOPK; suffix _topk_blind3); "
                         "blind5: the fifth GEMM set, fp8 only (the shapes of --shapes; suffix _blind5); "
                         "list: the bf16 / fp8 shapes of --shapes (suffix --tag)")
    ap.add_argument("--tag", default="_list", help="--grid list: the CSV suffix")
    ap.add_argument("--sass", action="store_true", help="dump the SASS of --lib's sgl_topk.so into --out")
    ap.add_argument("--shapes", type=Path, default=None,
                    help="--grid blind5: the committed prediction CSV whose shapes are measured (kernel, rows, k, n)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.grid in ("blind5", "list"):
        if args.shapes is None or not args.shapes.is_file():
            ap.error(f"--grid {args.grid} needs --shapes CSV (a committed prediction: kernel, rows, k, n)")
        sink = Sink(args.out, "_blind5" if args.grid == "blind5" else args.tag)
        print(f"versions: {sink.v}", flush=True)
        gemm_list_phase(sink, args.shapes, args.smoke)
        print(f"wrote {sink.path} ({sink.count} rows)")
        return
    fresh3 = args.grid == "fresh3"
    fresh2 = args.grid == "fresh2"
    fresh = args.grid == "fresh"
    blind = args.grid == "topk_blind"
    blind2 = args.grid == "topk_blind2"
    blind3 = args.grid == "topk_blind3"
    sink = Sink(args.out, "_topk_blind3" if blind3 else "_topk_blind2" if blind2 else "_topk_blind" if blind else ("_fresh3" if fresh3 else ("_fresh2" if fresh2 else (
        "_fresh" if fresh else ("_rotated" if args.rotate else "")))))
    print(f"versions: {sink.v}", flush=True)
    if args.sass and args.lib is not None:
        import shutil
        import subprocess
        cands = list(Path("/usr/local").glob("cuda*/bin/cuobjdump")) + list(
            Path(torch.__file__).resolve().parents[1].glob("nvidia/*/bin/cuobjdump"))
        tool = shutil.which("cuobjdump") or next((str(p) for p in cands), None)
        if tool:
            r = subprocess.run([tool, "-sass", str(args.lib / "sgl_topk.so")], capture_output=True, text=True)
            (args.out / "sgl_topk_sass.txt").write_text(r.stdout + r.stderr)
        else:
            print("no cuobjdump on this machine", flush=True)
    if args.only in (None, "gemm") and not (blind or blind2 or blind3):
        gemm_phase(sink, args.smoke, args.rotate or fresh or fresh2 or fresh3, fresh, fresh2, fresh3)
    if args.only in (None, "topk") and not (fresh2 or fresh3):
        topk_phase(sink, args.lib, args.smoke, fresh, blind, blind2, blind3)
    print(f"wrote {sink.path} ({sink.count} rows)")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
