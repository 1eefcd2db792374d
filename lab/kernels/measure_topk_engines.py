"""Two production top-k engines on one grid: SGLang's sgl-kernel top-k (the .so built from topk.cu @ 06c48ca8, as
measure_production_kernels.py times it) and FlashInfer 0.6.4's top-k (flashinfer.topk's radix_topk_ragged_transform:
the DSA ragged transform, fp32 scores, offsets 0, every row its full length; FlashInfer's own dispatch picks its
filtered or multi-CTA radix kernel), k = 2048, at the (dist, rows, n) shapes of a committed prediction CSV
(simulator/calibration/topk_engines.py GRID4 / GRID5). Rows drawn as measure_production_kernels.py draws them (recorded rows
resampled with fp16 dither, gaussian, uniform; one generator, seed 0, per distribution in turn); both kernels time the
same tensor, in CUDA graphs (_timing.time_graph), after a correctness check (the selection's minimum >= the k-th
largest value). FlashInfer's launched kernel (name, grid, block, shared memory) is recorded per shape in the _notes file.

    python3 measure_topk_engines.py --out DIR --lib DIR_WITH_sgl_topk.so --shapes PREDICTION.csv [--tag grid5]
                                    [--page-table] [--smoke]

CSV: DIR/topk_engines_<device>_<date>_<tag>.csv (measure_production_kernels' columns; kernel sgl_topk / fi_topk /
fi_topk_pt / trt_topk (the kernel's own dispatch) / trt_topk_pf (its prefill entry) / trt_topk_op (TensorRT-LLM's
torch op as its DSA indexer calls it: the two-launch split at >= 200,000 columns) / trt_topk_op_w<W> (the same over a
logits buffer W columns wide whose rows hold n live scores) / trt_topk_pf_tri (the prefill entry over a causal
prompt's rows: row i of R ends at ceil((i + 1) n / R)) / sgl_topk_tri (SGLang's kernel over the same causal rows) /
fi_topk_tri (FlashInfer's ragged transform over them)).
"""
from __future__ import annotations

import argparse
import csv
import ctypes
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _timing as T  # noqa: E402
import measure_production_kernels as M  # noqa: E402

SCRIPT_VERSION = 4
TOPK_K = 2048


def shapes_of(path: Path) -> list[tuple[str, int, int]]:
    """The distinct (dist, rows, n) of a prediction CSV, in the order of M.TOPK_DISTS then rows, n."""
    rows = list(csv.DictReader(open(path)))
    s = {(r["dist"], int(float(r["rows"])), int(float(r["n"]))) for r in rows}
    order = {d: i for i, d in enumerate(M.TOPK_DISTS)}
    return sorted(s, key=lambda t: (order[t[0]], t[1], t[2]))


def kernels_of(path: Path) -> dict:
    """{(dist, rows, n): the set of CSV kernel names the prediction CSV prices at that shape}."""
    out: dict = {}
    for r in csv.DictReader(open(path)):
        out.setdefault((r["dist"], int(float(r["rows"])), int(float(r["n"]))), set()).add(r.get("kernel", ""))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--lib", type=Path, default=None)
    ap.add_argument("--shapes", required=True, type=Path)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--tag", default="grid4")
    ap.add_argument("--trt-lib", type=Path, default=None, help="trt_topk.so (TensorRT-LLM's decode top-k launcher)")
    ap.add_argument("--page-table", action="store_true", help="also time FlashInfer's page-table transform")
    ap.add_argument("--only-listed", action="store_true",
                    help="time each kernel only at the shapes where the prediction CSV lists it (grid 8 on)")
    args = ap.parse_args()
    shapes = shapes_of(args.shapes)
    listed = kernels_of(args.shapes)

    def wanted(kern, dist, R, N):
        return (not args.only_listed) or kern in listed.get((dist, R, N), ())
    if args.smoke:
        shapes = [s for d in M.TOPK_DISTS for s in [x for x in shapes if x[0] == d][:2]]
    print(f"{len(shapes)} shapes from {args.shapes.name}", flush=True)
    sink = M.Sink(args.out, f"_{args.tag}")
    sink.f.close()
    sink.path.unlink()
    sink.path = args.out / sink.path.name.replace("production_kernels_", "topk_engines_")
    sink.f = open(sink.path, "w", newline="")
    sink.w = csv.DictWriter(sink.f, fieldnames=sink.FIELDS)
    sink.w.writeheader()
    print(f"versions: {sink.v}", flush=True)
    if not T.cuda():
        print("no GPU: shapes listed only", flush=True)
        return
    M.SCRIPT_VERSION = f"topk_engines {SCRIPT_VERSION}"
    dev = "cuda"
    sgl = None
    if args.lib is not None and (args.lib / "sgl_topk.so").is_file():
        sgl = ctypes.CDLL(str((args.lib / "sgl_topk.so").resolve()))
        sgl.sgl_topk_setup.restype = ctypes.c_int
        sgl.sgl_topk_launch.restype = ctypes.c_int
        sgl.sgl_topk_launch.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_longlong] * 2 + [ctypes.c_void_p]
        print(f"sgl_topk setup rc={sgl.sgl_topk_setup()}", flush=True)
    trt = None
    if args.trt_lib is not None and args.trt_lib.is_file():
        try:
            trt = ctypes.CDLL(str(args.trt_lib.resolve()))
            trt.trt_topk_launch.restype = ctypes.c_int
            trt.trt_topk_launch.argtypes = [ctypes.c_void_p] * 6 + [ctypes.c_int] * 2 + [ctypes.c_void_p]
            trt.trt_topk_blocks_per_row.restype = ctypes.c_int
            trt.trt_topk_blocks_per_row.argtypes = [ctypes.c_int] * 2
            if hasattr(trt, "trt_topk_op_launch"):
                trt.trt_topk_op_launch.restype = ctypes.c_int
                trt.trt_topk_op_launch.argtypes = [ctypes.c_void_p] * 5 + [ctypes.c_int] * 2 + [ctypes.c_void_p]
                trt.trt_topk_op_blocks_per_row.restype = ctypes.c_int
                trt.trt_topk_op_blocks_per_row.argtypes = [ctypes.c_int] * 2
            if hasattr(trt, "trt_topk_prefill_launch"):
                trt.trt_topk_prefill_launch.restype = ctypes.c_int
                trt.trt_topk_prefill_launch.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int] * 2 + [ctypes.c_void_p]
            print("trt_topk loaded", flush=True)
        except OSError as e:
            print(f"trt_topk unavailable: {e}", flush=True)
            trt = None
    fi = None
    try:
        import flashinfer
        from flashinfer.topk import get_topk_module
        fi = get_topk_module()
        sink.note(f"flashinfer {flashinfer.__version__} from {Path(flashinfer.__file__).parent}")
        print(f"flashinfer {flashinfer.__version__} top-k module built", flush=True)
    except Exception as e:  # noqa: BLE001 - SGLang's rows are still measured
        print(f"flashinfer unavailable: {type(e).__name__}: {str(e)[:300]}", flush=True)
    states = torch.zeros(1024 * 1024, dtype=torch.uint8, device=dev)   # flashinfer.topk's row-states buffer size
    gen = torch.Generator(device=dev)
    gen.manual_seed(0)
    for dist in M.TOPK_DISTS:
        rows_of = M._row_sampler(dist, args.lib, gen, dev)
        todo = [(R, N) for d, R, N in shapes if d == dist]
        if rows_of is None:
            print(f"no recorded rows in {args.lib}; skipping {dist}", flush=True)
            continue
        for R, N in todo:
            x = rows_of(R, N)
            kth = torch.topk(x, TOPK_K, dim=1).values[:, -1]
            lens = torch.full((R,), N, dtype=torch.int32, device=dev)
            offs = torch.zeros(R, dtype=torch.int32, device=dev)
            idx = torch.empty(R, TOPK_K, dtype=torch.int32, device=dev)

            def ok_sel(ix, x=x, kth=kth):
                got = torch.gather(x, 1, ix.clamp(min=0).long()).min(dim=1).values
                return bool(torch.all(got >= kth - 1e-6 * kth.abs().clamp(min=1)).item())
            if sgl is not None and wanted("sgl_topk", dist, R, N):
                def run_sgl(i, x=x, lens=lens, idx=idx, R=R, N=N):
                    rc = sgl.sgl_topk_launch(x.data_ptr(), idx.data_ptr(), lens.data_ptr(), R, N,
                                             torch.cuda.current_stream().cuda_stream)
                    if rc:
                        raise RuntimeError(f"sgl_topk launch rc={rc}")
                try:
                    run_sgl(0)
                    torch.cuda.synchronize()
                    ok = ok_sel(idx)
                    st = T.time_graph(run_sgl)
                    sink.emit("topk", "sgl_topk", dist, R, N, TOPK_K, st, note="" if ok else "WRONG SELECTION")
                except Exception as e:  # noqa: BLE001 - recorded, the campaign goes on
                    print(f"sgl_topk {dist} {R}x{N}: {e!r}", flush=True)
            if fi is not None and wanted("fi_topk", dist, R, N):
                def run_fi(i, x=x, lens=lens, offs=offs, idx=idx):
                    fi.radix_topk_ragged_transform(x, idx, offs, lens, states, TOPK_K)
                try:
                    idx.fill_(-1)
                    run_fi(0)
                    torch.cuda.synchronize()
                    ok = ok_sel(idx)
                    st = T.time_graph(run_fi)
                    sink.emit("topk", "fi_topk", dist, R, N, TOPK_K, st, note="" if ok else "WRONG SELECTION")
                    sink.note(f"fi_topk {dist} rows {R} n {N}: " + " | ".join(M.launched_kernels(lambda: run_fi(0))))
                except Exception as e:  # noqa: BLE001
                    print(f"fi_topk {dist} {R}x{N}: {type(e).__name__}: {str(e)[:200]}", flush=True)
            if fi is not None and wanted("fi_topk_tri", dist, R, N):
                # FlashInfer's ragged transform over a causal prompt's rows (SGLang's DSA top-k backend 'flashinfer'
                # at prefill): row i's length ceil((i + 1) N / R), offsets 0; checked against the masked rows' k-th
                ends = torch.ceil(torch.arange(1, R + 1, device=dev, dtype=torch.float64) * N / R).to(torch.int32)
                xm = x.masked_fill(torch.arange(N, device=dev)[None, :] >= ends[:, None].long(), float("-inf"))
                kth_m = torch.topk(xm, TOPK_K, dim=1).values[:, -1]

                def run_fi_tri(i, x=x, ends=ends, offs=offs, idx=idx):
                    fi.radix_topk_ragged_transform(x, idx, offs, ends, states, TOPK_K)
                try:
                    idx.fill_(-1)
                    run_fi_tri(0)
                    torch.cuda.synchronize()
                    got = torch.gather(xm, 1, idx.clamp(min=0).long()).min(dim=1).values
                    ok = bool(torch.all(got >= kth_m - 1e-6 * kth_m.abs().clamp(min=1).nan_to_num(1.0)).item())
                    st = T.time_graph(run_fi_tri)
                    sink.emit("topk", "fi_topk_tri", dist, R, N, TOPK_K, st,
                              note=("" if ok else "WRONG SELECTION") + " causal rows")
                    sink.note(f"fi_topk_tri {dist} rows {R} n {N}: "
                              + " | ".join(M.launched_kernels(lambda: run_fi_tri(0))))
                except Exception as e:  # noqa: BLE001
                    print(f"fi_topk_tri {dist} {R}x{N}: {type(e).__name__}: {str(e)[:200]}", flush=True)
                del ends, xm, kth_m
            if fi is not None and args.page_table:
                base = (torch.arange(R, dtype=torch.int64, device=dev) * N).unsqueeze(1)
                ptab = (base + torch.arange(N, dtype=torch.int64, device=dev)).to(torch.int32)
                outp = torch.empty(R, TOPK_K, dtype=torch.int32, device=dev)

                def run_pt(i, x=x, lens=lens, ptab=ptab, outp=outp):
                    fi.radix_topk_page_table_transform(x, outp, ptab, None, lens, states, TOPK_K)
                try:
                    outp.fill_(-1)
                    run_pt(0)
                    torch.cuda.synchronize()
                    ok = ok_sel((outp.long() - base).clamp(min=0).int())
                    st = T.time_graph(run_pt)
                    sink.emit("topk", "fi_topk_pt", dist, R, N, TOPK_K, st, note="" if ok else "WRONG SELECTION")
                    sink.note(f"fi_topk_pt {dist} rows {R} n {N}: " + " | ".join(M.launched_kernels(lambda: run_pt(0))))
                except Exception as e:  # noqa: BLE001
                    print(f"fi_topk_pt {dist} {R}x{N}: {type(e).__name__}: {str(e)[:200]}", flush=True)
                del ptab, outp, base
            if trt is not None and hasattr(trt, "trt_topk_prefill_launch") and wanted("trt_topk_pf", dist, R, N):
                # the prefill entry (invokeIndexerTopKPrefill): one 512-thread CTA per row, rows [0, N)
                starts = torch.zeros(R, dtype=torch.int32, device=dev)

                def run_pf(i, x=x, starts=starts, lens=lens, idx=idx, R=R, N=N):
                    rc = trt.trt_topk_prefill_launch(x.data_ptr(), starts.data_ptr(), lens.data_ptr(), idx.data_ptr(),
                                                     R, N, torch.cuda.current_stream().cuda_stream)
                    if rc:
                        raise RuntimeError(f"trt_topk_prefill launch rc={rc}")
                try:
                    idx.fill_(-1)
                    run_pf(0)
                    torch.cuda.synchronize()
                    ok = ok_sel(idx)
                    st = T.time_graph(run_pf)
                    sink.emit("topk", "trt_topk_pf", dist, R, N, TOPK_K, st,
                              note=("" if ok else "WRONG SELECTION") + " prefill entry")
                except Exception as e:  # noqa: BLE001
                    print(f"trt_topk_pf {dist} {R}x{N}: {type(e).__name__}: {str(e)[:200]}", flush=True)
                del starts
            if trt is not None and hasattr(trt, "trt_topk_prefill_launch") and wanted("trt_topk_pf_tri", dist, R, N):
                # the prefill entry over a causal prompt's rows, as the DSA indexer passes a chunk: row i ends at
                # ceil((i + 1) N / R) (R = N: row i holds i + 1 keys); checked against the masked rows' k-th value
                starts = torch.zeros(R, dtype=torch.int32, device=dev)
                ends = torch.ceil(torch.arange(1, R + 1, device=dev, dtype=torch.float64) * N / R).to(torch.int32)
                xm = x.masked_fill(torch.arange(N, device=dev)[None, :] >= ends[:, None].long(), float("-inf"))
                kth_m = torch.topk(xm, TOPK_K, dim=1).values[:, -1]

                def run_tri(i, x=x, starts=starts, ends=ends, idx=idx, R=R, N=N):
                    rc = trt.trt_topk_prefill_launch(x.data_ptr(), starts.data_ptr(), ends.data_ptr(), idx.data_ptr(),
                                                     R, N, torch.cuda.current_stream().cuda_stream)
                    if rc:
                        raise RuntimeError(f"trt_topk_prefill launch rc={rc}")
                try:
                    idx.fill_(-1)
                    run_tri(0)
                    torch.cuda.synchronize()
                    got = torch.gather(xm, 1, idx.clamp(min=0).long()).min(dim=1).values
                    ok = bool(torch.all(got >= kth_m - 1e-6 * kth_m.abs().clamp(min=1).nan_to_num(1.0)).item())
                    st = T.time_graph(run_tri)
                    sink.emit("topk", "trt_topk_pf_tri", dist, R, N, TOPK_K, st,
                              note=("" if ok else "WRONG SELECTION") + " prefill entry, causal rows")
                except Exception as e:  # noqa: BLE001
                    print(f"trt_topk_pf_tri {dist} {R}x{N}: {type(e).__name__}: {str(e)[:200]}", flush=True)
                del starts, ends, xm, kth_m
            if sgl is not None and wanted("sgl_topk_tri", dist, R, N):
                # SGLang's top-k over a causal prompt's rows (its DSA prefill: row i's length i + 1, the rows' starts
                # all 0 for one sequence): the same kernel with per-row lengths ceil((i + 1) N / R); checked against
                # the masked rows' k-th value
                ends = torch.ceil(torch.arange(1, R + 1, device=dev, dtype=torch.float64) * N / R).to(torch.int32)
                xm = x.masked_fill(torch.arange(N, device=dev)[None, :] >= ends[:, None].long(), float("-inf"))
                kth_m = torch.topk(xm, TOPK_K, dim=1).values[:, -1]

                def run_sgl_tri(i, x=x, ends=ends, idx=idx, R=R, N=N):
                    rc = sgl.sgl_topk_launch(x.data_ptr(), idx.data_ptr(), ends.data_ptr(), R, N,
                                             torch.cuda.current_stream().cuda_stream)
                    if rc:
                        raise RuntimeError(f"sgl_topk launch rc={rc}")
                try:
                    idx.fill_(-1)
                    run_sgl_tri(0)
                    torch.cuda.synchronize()
                    got = torch.gather(xm, 1, idx.clamp(min=0).long()).min(dim=1).values
                    ok = bool(torch.all(got >= kth_m - 1e-6 * kth_m.abs().clamp(min=1).nan_to_num(1.0)).item())
                    st = T.time_graph(run_sgl_tri)
                    sink.emit("topk", "sgl_topk_tri", dist, R, N, TOPK_K, st,
                              note=("" if ok else "WRONG SELECTION") + " causal rows")
                except Exception as e:  # noqa: BLE001
                    print(f"sgl_topk_tri {dist} {R}x{N}: {type(e).__name__}: {str(e)[:200]}", flush=True)
                del ends, xm, kth_m
            if trt is not None and wanted("trt_topk", dist, R, N):
                nb = trt.trt_topk_blocks_per_row(R, N)
                aux_i = torch.empty(R * nb * TOPK_K, dtype=torch.int32, device=dev)
                aux_v = torch.empty(R * nb * TOPK_K, dtype=torch.float32, device=dev)
                done = torch.zeros(R, dtype=torch.int32, device=dev)

                def run_trt(i, x=x, lens=lens, idx=idx, aux_i=aux_i, aux_v=aux_v, done=done, R=R, N=N):
                    rc = trt.trt_topk_launch(x.data_ptr(), lens.data_ptr(), idx.data_ptr(), aux_i.data_ptr(),
                                             aux_v.data_ptr(), done.data_ptr(), R, N,
                                             torch.cuda.current_stream().cuda_stream)
                    if rc:
                        raise RuntimeError(f"trt_topk launch rc={rc}")
                try:
                    idx.fill_(-1)
                    run_trt(0)
                    torch.cuda.synchronize()
                    ok = ok_sel(idx)
                    st = T.time_graph(run_trt)
                    sink.emit("topk", "trt_topk", dist, R, N, TOPK_K, st,
                              note=("" if ok else "WRONG SELECTION") + f" blocks_per_row={nb}")
                except Exception as e:  # noqa: BLE001
                    print(f"trt_topk {dist} {R}x{N}: {type(e).__name__}: {str(e)[:200]}", flush=True)
                del aux_i, aux_v, done
            ops = [k for k in sorted(listed.get((dist, R, N), ())) if k.startswith("trt_topk_op_w")]
            if wanted("trt_topk_op", dist, R, N):
                ops = ["trt_topk_op"] + ops
            for kop in (ops if trt is not None and hasattr(trt, "trt_topk_op_launch") else []):
                # TensorRT-LLM's torch op as its DSA indexer calls it (trt_topk_launch.cu trt_topk_op_launch); a kernel
                # name trt_topk_op_w<W> times it over a logits buffer W columns wide whose rows hold N live scores
                # (seq_lens N: the op's split and narrow choice read W, the kernels walk N)
                W = N if kop == "trt_topk_op" else int(kop.rsplit("_w", 1)[1])
                xw = x
                if W > N:
                    xw = torch.zeros(R, W, dtype=x.dtype, device=dev)
                    xw[:, :N] = x
                nb = trt.trt_topk_op_blocks_per_row(R, W)
                aux_i = torch.empty(R * 10 * TOPK_K, dtype=torch.int32, device=dev)
                aux_v = torch.empty(R * 10 * TOPK_K, dtype=torch.float32, device=dev)

                def run_op(i, xw=xw, lens=lens, idx=idx, aux_i=aux_i, aux_v=aux_v, R=R, W=W):
                    rc = trt.trt_topk_op_launch(xw.data_ptr(), lens.data_ptr(), idx.data_ptr(), aux_i.data_ptr(),
                                                aux_v.data_ptr(), R, W, torch.cuda.current_stream().cuda_stream)
                    if rc:
                        raise RuntimeError(f"trt_topk_op launch rc={rc}")
                try:
                    idx.fill_(-1)
                    run_op(0)
                    torch.cuda.synchronize()
                    ok = ok_sel(idx)
                    st = T.time_graph(run_op)
                    sink.emit("topk", kop, dist, R, N, TOPK_K, st,
                              note=("" if ok else "WRONG SELECTION") + f" blocks_per_row={nb}")
                except Exception as e:  # noqa: BLE001
                    print(f"{kop} {dist} {R}x{N}: {type(e).__name__}: {str(e)[:200]}", flush=True)
                del aux_i, aux_v, xw
            del x, kth
            torch.cuda.empty_cache()
        print(f"{dist}: {len(todo)} shapes done", flush=True)
    print(f"wrote {sink.path} ({sink.count} rows)")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
