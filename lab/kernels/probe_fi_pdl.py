"""Does programmatic dependent launch (PDL) act in the CUDA-graph timing of FlashInfer's decode / prefill calls, and what
does a lone short call cost beside the same call in a chain?

FlashInfer 0.6.4 launches its decode, prefill and merge kernels with cudaLaunchAttributeProgrammaticStreamSerialization
when `enable_pdl` (decode.py / prefill.py run: enable_pdl = device_support_pdl(device), True on sm_90); each kernel
reads its plan arrays before `griddepcontrol.wait` and issues `griddepcontrol.launch_dependents` after its output store
(include/flashinfer/attention/decode.cuh, prefill.cuh, cascade.cuh). Per shape, with enable_pdl True and False:
  chain_us   one call's time in a CUDA graph of calls back to back (lab/harness.py time_graph: what the campaign times)
  lone_us    one replay of a graph holding ONE call, after a spin (median of 15)
  kernel_us  the sum of the call's kernels' CUPTI durations (one eager call under torch.profiler)
  prog_edges the graph's programmatic edges (cudaGraphGetEdges_v2 on a two-call graph: edge type 1 or a from-port of
             cudaGraphKernelNodePortProgrammatic / LaunchCompletion); -1 when it could not be read

    python3 probe_fi_pdl.py --out DIR     (needs measure_production_attention.py and harness.py beside it)
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
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

#: (family, model, dtype, batch, context): short CUDA-core decode calls at one or two tiles, a middle control, short
#: tensor-core / verification calls at one and many waves
SHAPES = [("fi_decode", "llama8b", "bf16", 1, 8), ("fi_decode", "llama8b", "bf16", 1, 64),
          ("fi_decode", "llama8b", "bf16", 3, 24), ("fi_decode", "llama8b", "bf16", 6, 100),
          ("fi_decode", "llama8b", "fp8", 2, 48), ("fi_decode", "llama70b", "bf16", 4, 72),
          ("fi_decode", "llama8b", "bf16", 3, 3000), ("fi_decode", "llama8b", "bf16", 300, 48),
          ("fi_tc", "llama8b", "bf16", 3, 48), ("fi_tc", "llama8b", "bf16", 400, 48),
          ("fi_verify", "llama8b", "fp8", 3, 72), ("fi_verify", "llama8b", "bf16", 200, 100)]
COLS = ["family", "model", "dtype", "batch", "q_rows", "context", "page_size", "pdl", "chain_us", "chain_p20",
        "chain_p80", "chain_calls", "lone_us", "lone_p20", "lone_p80", "kernel_us", "kernels", "prog_edges",
        "edges", "device", "torch", "cuda", "flashinfer", "date", "note"]


def graph_edges(torch, fn) -> tuple[int, int]:
    """(programmatic edges, all edges) of a CUDA graph of two calls, read with cudaGraphGetEdges_v2 (CUDA 12.3-12.x) or
    cudaGraphGetEdges (CUDA 13, the same arguments)."""
    try:
        g = torch.cuda.CUDAGraph(keep_graph=True)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            fn(1)
        torch.cuda.current_stream().wait_stream(s)
        with torch.cuda.graph(g):
            fn(0)
            fn(1)
        raw = ctypes.c_void_p(g.raw_cuda_graph())
        lib = None
        for name in ("libcudart.so.13", "libcudart.so.12", "libcudart.so"):
            try:
                lib = ctypes.CDLL(name)
                break
            except OSError:
                continue
        if lib is None:
            import glob
            for d in sys.path:
                for p in glob.glob(os.path.join(d, "nvidia", "**", "libcudart.so*"), recursive=True):
                    lib = lib or ctypes.CDLL(p)
        n = ctypes.c_size_t(0)
        try:   # CUDA 12.3-12.x: the _v2 entry point has the edge data; CUDA 13: cudaGraphGetEdges itself
            f = lib.cudaGraphGetEdges_v2
        except AttributeError:
            f = lib.cudaGraphGetEdges
        rc = f(raw, None, None, None, ctypes.byref(n))
        if rc != 0:
            return -1, -rc
        m = n.value
        frm, to = (ctypes.c_void_p * m)(), (ctypes.c_void_p * m)()
        data = (ctypes.c_ubyte * (8 * m))()
        rc = f(raw, frm, to, data, ctypes.byref(n))
        if rc != 0:
            return -1, -rc
        prog = sum(1 for i in range(m) if data[8 * i + 2] == 1 or data[8 * i] in (1, 2))
        del g
        return prog, m
    except Exception as e:   # noqa: BLE001
        print("edges:", repr(e)[:300], flush=True)
        return -1, -1


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=60.0)
    args = ap.parse_args()
    t0 = time.time()
    import harness
    import measure_production_attention as M
    import torch

    fi, note = M.import_flashinfer()
    env = harness.Env("cuda:0")
    ws = torch.zeros(1 << 30, dtype=torch.uint8, device="cuda")
    meta = {"device": env.name, "torch": torch.__version__, "cuda": torch.version.cuda, "flashinfer": fi.__version__,
            "date": env.date}
    out = open(os.path.join(args.out, "fi_pdl_probe.csv"), "w", newline="")
    w = csv.DictWriter(out, fieldnames=COLS)
    w.writeheader()
    print(f"{'shape':38s} pdl  chain   lone  kernels  edges", flush=True)
    for fam, model, kv, B, T in SHAPES:
        if time.time() - t0 > args.budget_s:
            print("budget reached", flush=True)
            break
        hq, hkv = M.HEADS[model]
        q = 4 if fam == "fi_verify" else 1
        s = dict(family=fam, model=model, heads=hq, kv_heads=hkv, head_dim=128, dtype=kv, batch=B, q_rows=q,
                 context=T, page_size=16)
        for pdl in (True, False):
            try:
                base, _, _ = M.run_fi_paged(torch, fi, s, ws, fam != "fi_decode", fam == "fi_verify")
                fn = _with_pdl(base, pdl)
                r = harness.time_graph(env, fn, target_us=250.0, reps=5, max_calls=128)
                g = harness.capture_graph(env, fn, 1)
                xs = [harness.replay_us(env, g) for _ in range(15)]
                del g
                kern = M.profile_one(torch, fn, "x")
                ku = sum(float(k["dur_us"] or 0) for k in kern)
                pe, ne = graph_edges(torch, fn)
                row = {**s, "pdl": int(pdl), "chain_us": f"{r['median']:.3f}", "chain_p20": f"{r['p20']:.3f}",
                       "chain_p80": f"{r['p80']:.3f}", "chain_calls": r["calls"],
                       "lone_us": f"{statistics.median(xs):.3f}", "lone_p20": f"{harness.quantile(xs, 0.2):.3f}",
                       "lone_p80": f"{harness.quantile(xs, 0.8):.3f}", "kernel_us": f"{ku:.3f}", "kernels": len(kern),
                       "prog_edges": pe, "edges": ne, **meta, "note": note}
                print(f"{fam} {model} {kv} B{B} T{T}".ljust(38) + f" {int(pdl)}  {r['median']:6.2f} "
                      f"{statistics.median(xs):6.2f} {ku:6.2f}x{len(kern)}  {pe}/{ne}", flush=True)
            except Exception as e:   # noqa: BLE001
                row = {**s, "pdl": int(pdl), **meta, "note": f"failed: {repr(e)[:300]}"}
                print(fam, B, T, pdl, "failed", repr(e)[:300], flush=True)
            w.writerow({k: row.get(k, "") for k in COLS})
            out.flush()
            torch.cuda.empty_cache()
    print(f"probe {time.time() - t0:.0f} s", flush=True)


def _with_pdl(fn, pdl: bool):
    """fn(i) of run_fi_paged with enable_pdl forced: the wrapper's run() is called through a patched bound method."""
    w = None
    for c in fn.__closure__ or ():
        v = c.cell_contents
        if hasattr(v, "run") and hasattr(v, "plan"):
            w = v
    if w is None:
        raise RuntimeError("no wrapper in the call's closure")
    run = w.run

    def patched(*a, **k):
        k["enable_pdl"] = pdl
        return run(*a, **k)

    w.run = patched
    return fn


if __name__ == "__main__":
    main()
