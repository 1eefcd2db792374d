"""What a cuBLASLt split-K GEMM costs inside a CUDA graph (its splitKreduce kernel's device time and the gaps between
the graph's kernels), the kernels of a Llama-3.1-8B decoder layer's GEMMs at decode M, and a blind set of small-M GEMMs.

    python lab/kernels/measure_gemm_graph_launch.py --out DIR [--smoke] [--skip-blind]

Phases (CSV rows in DIR/gemm_graph_launch_<device>_<date>.csv, `section` column; kernel lists in the _notes file):
  chain    N_CALLS identical GEMMs (torch.nn.functional.linear in bf16, torch._scaled_mm per-tensor fp8 with scalar
           scales and bf16 out), weights rotated past the L2, captured back to back in one CUDA graph. graph_us = CUDA
           events around a replay (after a spin kernel) / N_CALLS; then one replay under torch.profiler (CUPTI): the
           kernels each GEMM launched (the nvjet kernel, and where cuBLASLt splits K its splitKreduce_kernel), their
           device durations, and the gaps between consecutive kernels read from the CUPTI start / end stamps (gemm ->
           reduce, reduce -> next GEMM, or GEMM -> next GEMM where nothing splits). The same calls eagerly (after a
           spin, under the profiler) give the eager durations. Also a chain of one-element x.add_(1) nodes: the
           graph gap of a trivial kernel.
  layer    a Llama-3.1-8B decoder layer's GEMMs (hidden 4096, MLP 14336, 32 / 8 heads of 128) at M 1 / 8 / 32 / 64,
           bf16, in two styles: `hf` = transformers' LlamaDecoderLayer (nn.Linear: q, k, v, o, gate, up, down, weight
           [N, K]) and `own` = lab/serving/model_torch.py (h @ W with W [K, N]: fused qkv, o, fused gate_up, down).
           LAYERS_IN_GRAPH layers (LAYER_SETS distinct weight sets, > the L2) captured in one graph: graph time per
           layer, and per GEMM its kernels, device time and the gaps (one profiled replay).
  blind    BLIND4_KN x BLIND4_M x {bf16, per-tensor fp8}: timed exactly as measure_production_kernels.py --grid fresh3
           (its Sink / CSV columns / rotation; suffix _blind4), kernel names in the _blind4 notes. Shapes: the decode
           layers of Qwen2.5-14B (TP 1 / 2 / 4), Qwen2.5-32B (TP 1), Llama-3.2-3B (TP 1), Mistral-Nemo-12B (TP 1),
           none of them in an earlier production_kernels_*.csv; the model's predictions were committed before this
           ran (simulator/calibration/small_m_gemm_holdout.py BLIND4_KN).
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _timing as T  # noqa: E402
import measure_production_kernels as MP  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import harness  # noqa: E402

SCRIPT_VERSION = 1
N_CALLS = 32
L2_BYTES = 50 * 1024 * 1024
#: (dtype, M, K, N): shapes cuBLASLt splits (the fresh tables: K 14336 x N 4096, K 4096 x N 4096 / 1024 at M 1,
#: fp8 K 7168 at M 12-16) and shapes it does not (large N, small K, fp8 K 4096)
CHAIN = [("bf16", 1, 14336, 4096), ("bf16", 16, 14336, 4096), ("bf16", 64, 14336, 4096), ("bf16", 1, 4096, 4096),
         ("bf16", 8, 4096, 1024), ("bf16", 1, 4096, 6144), ("bf16", 1, 4096, 14336), ("bf16", 1, 4096, 28672),
         ("bf16", 32, 4096, 28672), ("bf16", 1, 1024, 4096), ("bf16", 64, 4096, 4096),
         ("fp8", 1, 14336, 4096), ("fp8", 16, 7168, 4096), ("fp8", 1, 4096, 4096), ("fp8", 1, 4096, 28672),
         ("fp8", 64, 14336, 4096)]
LAYER_M = [1, 8, 32, 64]
LAYER_SETS = 4
LAYERS_IN_GRAPH = 32
H, FFN, HQ, HKV, D = 4096, 14336, 32, 8, 128
#: the blind set (same list as simulator/calibration/small_m_gemm_holdout.py BLIND4_KN): (K, N) of
#: Qwen2.5-14B (hidden 5120, MLP 13824, 40 / 8 heads of 128): qkv / o / gate_up / down TP1, qkv / o / down TP2,
#:   qkv / gate_up / down TP4; Qwen2.5-32B (MLP 27648): down TP1; Llama-3.2-3B (hidden 3072, MLP 8192, 24 / 8
#:   heads): qkv / o / gate_up / down TP1; Mistral-Nemo-12B (hidden 5120, 32 heads of 128, MLP 14336): o / down TP1
BLIND4_KN = [(5120, 7168), (5120, 5120), (5120, 27648), (13824, 5120), (5120, 3584), (2560, 5120), (6912, 5120),
             (5120, 1792), (5120, 6912), (3456, 5120), (27648, 5120), (3072, 5120), (3072, 3072), (3072, 16384),
             (8192, 3072), (4096, 5120), (14336, 5120)]
BLIND4_M = [1, 24, 40]

FIELDS = ["section", "style", "dtype", "m", "k", "n", "op", "kernels_per_call", "gemm_kernel", "split",
          "gemm_dev_us", "reduce_dev_us", "graph_us", "cupti_span_us", "gap_gemm_reduce_us", "gap_after_us",
          "eager_gemm_dev_us", "eager_reduce_dev_us", "calls", "note", "device", "torch", "cuda", "driver", "date",
          "script_version"]


def kernels_of(fn) -> list[dict]:
    """The CUDA kernels fn() ran (torch.profiler / CUPTI): name, start and duration (us), grid; the spin kernel
    (torch.cuda._sleep) dropped."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    with tempfile.NamedTemporaryFile(suffix=".json") as tf:
        prof.export_chrome_trace(tf.name)
        ev = json.load(open(tf.name)).get("traceEvents", [])
    out = [{"name": e.get("name", ""), "ts": float(e.get("ts", 0.0)), "dur": float(e.get("dur", 0.0)),
            "grid": (e.get("args") or {}).get("grid")} for e in ev if e.get("cat") == "kernel"]
    out = [k for k in out if "sleep" not in k["name"].lower() and "spin" not in k["name"].lower()]
    return sorted(out, key=lambda k: k["ts"])


def is_reduce(name: str) -> bool:
    return "splitKreduce" in name


def short(name: str) -> str:
    return "splitKreduce_kernel" if is_reduce(name) else name.split("(")[0][:90]


def graph_replay_us(g, reps: int = 7) -> float:
    xs = []
    for _ in range(reps):
        xs.append(harness.replay_us(T._env(), g))
    return statistics.median(xs)


def gaps(ks: list[dict]) -> tuple[list[float], list[float]]:
    """Gaps (us) between consecutive kernels: (after a GEMM kernel into its reduce, every other)."""
    g_red, g_other = [], []
    for a, b in zip(ks, ks[1:]):
        gap = b["ts"] - (a["ts"] + a["dur"])
        (g_red if (not is_reduce(a["name"]) and is_reduce(b["name"])) else g_other).append(gap)
    return g_red, g_other


def med(xs) -> float:
    return round(statistics.median(xs), 4) if xs else float("nan")


class Out:
    def __init__(self, out: Path, smoke: bool):
        self.v = T.versions()
        self.date = time.strftime("%Y-%m-%d", time.gmtime())
        slug = harness.device_slug(self.v["device"])
        self.path = out / f"gemm_graph_launch_{slug}_{self.date}.csv"
        self.notes_path = out / f"gemm_graph_launch_{slug}_{self.date}_notes.txt"
        self.f = open(self.path, "w", newline="")
        self.w = csv.DictWriter(self.f, fieldnames=FIELDS)
        self.w.writeheader()
        self.notes: list[str] = [f"versions: {self.v}"]

    def row(self, **kw):
        kw.update({"device": self.v["device"], "torch": self.v["torch"], "cuda": self.v["cuda"],
                   "driver": self.v["driver"], "date": self.date, "script_version": SCRIPT_VERSION})
        self.w.writerow({k: kw.get(k, "") for k in FIELDS})
        self.f.flush()

    def note(self, text: str):
        print(text, flush=True)
        self.notes.append(text)
        self.notes_path.write_text("\n".join(self.notes) + "\n")


def gemm_fn(dtype: str, M: int, K: int, N: int, copies_cap: int = 32):
    """fn(i): one GEMM on the i-th rotated weight copy (copies x weight >= 2 x L2)."""
    wb = 1 if dtype == "fp8" else 2
    copies = max(2, min(copies_cap, math.ceil(2 * L2_BYTES / (N * K * wb))))
    ws = [torch.randn(N, K, device="cuda", dtype=torch.bfloat16) * 0.05 for _ in range(copies)]
    x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    if dtype == "bf16":
        return (lambda i: torch.nn.functional.linear(x, ws[i % copies])), copies
    w8t = [w.to(torch.float8_e4m3fn).t() for w in ws]
    x8 = x.to(torch.float8_e4m3fn)
    one = torch.ones((), device="cuda")
    return (lambda i: torch._scaled_mm(x8, w8t[i % copies], scale_a=one, scale_b=one, out_dtype=torch.bfloat16)), copies


def chain_phase(o: Out, smoke: bool):
    env = T._env()
    # the graph gap of a trivial kernel: N one-element adds
    x1 = torch.zeros(1, device="cuda")
    g = harness.capture_graph(env, lambda i: x1.add_(1.0), N_CALLS)
    us = graph_replay_us(g) / N_CALLS
    ks = kernels_of(g.replay)
    _, go = gaps(ks)
    o.row(section="chain", style="add1", dtype="fp32", m=1, k=1, n=1, op="x.add_(1)", kernels_per_call=len(ks) / N_CALLS,
          gemm_kernel=short(ks[0]["name"]) if ks else "", split=0, gemm_dev_us=med([k["dur"] for k in ks]),
          graph_us=round(us, 4), cupti_span_us=round((ks[-1]["ts"] + ks[-1]["dur"] - ks[0]["ts"]) / N_CALLS, 4) if ks else "",
          gap_after_us=med(go), calls=N_CALLS)
    for dtype, M, K, N in (CHAIN[:2] if smoke else CHAIN):
        fn, copies = gemm_fn(dtype, M, K, N)
        fn(0)
        torch.cuda.synchronize()
        g = harness.capture_graph(env, fn, N_CALLS)
        us = graph_replay_us(g) / N_CALLS
        ks = kernels_of(g.replay)
        gr, go = gaps(ks)
        red = [k for k in ks if is_reduce(k["name"])]
        gem = [k for k in ks if not is_reduce(k["name"])]

        def eager():
            T.spin()
            for i in range(N_CALLS):
                fn(i)
        ke = kernels_of(eager)
        rede = [k for k in ke if is_reduce(k["name"])]
        geme = [k for k in ke if not is_reduce(k["name"])]
        span = (ks[-1]["ts"] + ks[-1]["dur"] - ks[0]["ts"]) / N_CALLS if ks else float("nan")
        o.row(section="chain", style="linear" if dtype == "bf16" else "scaled_mm", dtype=dtype, m=M, k=K, n=N,
              op="gemm", kernels_per_call=round(len(ks) / N_CALLS, 3), gemm_kernel=short(gem[0]["name"]) if gem else "",
              split=int(bool(red)), gemm_dev_us=med([k["dur"] for k in gem]), reduce_dev_us=med([k["dur"] for k in red]),
              graph_us=round(us, 4), cupti_span_us=round(span, 4), gap_gemm_reduce_us=med(gr), gap_after_us=med(go),
              eager_gemm_dev_us=med([k["dur"] for k in geme]), eager_reduce_dev_us=med([k["dur"] for k in rede]),
              calls=N_CALLS, note=f"weights rotated over {copies} copies")
        o.note(f"chain {dtype} M {M} K {K} N {N}: graph {us:.3f} us/GEMM, kernels/GEMM {len(ks) / N_CALLS:.2f}, "
               f"gemm {med([k['dur'] for k in gem])} reduce {med([k['dur'] for k in red])} gaps gemm->reduce "
               f"{med(gr)} other {med(go)} | " + " | ".join(f"{short(k['name'])} grid {k['grid']}" for k in ks[:2]))
        del g
        torch.cuda.empty_cache()


def layer_phase(o: Out, smoke: bool):
    env = T._env()
    kv = HKV * D
    hf_shapes = [("q", H, HQ * D), ("k", H, kv), ("v", H, kv), ("o", HQ * D, H), ("gate", H, FFN), ("up", H, FFN),
                 ("down", FFN, H)]
    own_shapes = [("qkv", H, HQ * D + 2 * kv), ("o", HQ * D, H), ("gate_up", H, 2 * FFN), ("down", FFN, H)]
    for style, shapes in (("hf", hf_shapes), ("own", own_shapes)):
        sets = []
        for _ in range(1 if smoke else LAYER_SETS):
            if style == "hf":   # nn.Linear: weight [N, K]
                sets.append({nm: torch.randn(N, K, device="cuda", dtype=torch.bfloat16) * 0.02 for nm, K, N in shapes})
            else:               # model_torch: h @ W, W [K, N]
                sets.append({nm: torch.randn(K, N, device="cuda", dtype=torch.bfloat16) * 0.02 for nm, K, N in shapes})
        for M in (LAYER_M[:1] if smoke else LAYER_M):
            xs = {K: torch.randn(M, K, device="cuda", dtype=torch.bfloat16) for K in {K for _, K, _ in shapes}}

            def layer(i, sets=sets, xs=xs, shapes=shapes, style=style):
                w = sets[i % len(sets)]
                for nm, K, N in shapes:
                    if style == "hf":
                        torch.nn.functional.linear(xs[K], w[nm])
                    else:
                        xs[K] @ w[nm]
            layer(0)
            torch.cuda.synchronize()
            g = harness.capture_graph(env, layer, LAYERS_IN_GRAPH)
            per_layer = graph_replay_us(g) / LAYERS_IN_GRAPH
            ks = kernels_of(g.replay)
            ke = kernels_of(lambda: (T.spin(), layer(0)))
            # assign kernels to GEMMs in order: each GEMM = one non-reduce kernel + the reduces that follow it
            calls = []
            for k in ks:
                if is_reduce(k["name"]) and calls:
                    calls[-1].append(k)
                else:
                    calls.append([k])
            per_gemm = len(shapes)
            span = (ks[-1]["ts"] + ks[-1]["dur"] - ks[0]["ts"]) / LAYERS_IN_GRAPH if ks else float("nan")
            ok = len(calls) == per_gemm * LAYERS_IN_GRAPH
            o.row(section="layer", style=style, dtype="bf16", m=M, k=H, n=H, op="layer",
                  kernels_per_call=round(len(ks) / LAYERS_IN_GRAPH, 3), graph_us=round(per_layer, 4),
                  cupti_span_us=round(span, 4), gemm_dev_us=round(sum(k["dur"] for k in ks) / LAYERS_IN_GRAPH, 4),
                  gap_after_us=med(gaps(ks)[1]), gap_gemm_reduce_us=med(gaps(ks)[0]), calls=LAYERS_IN_GRAPH,
                  note="" if ok else f"kernel grouping off: {len(calls)} groups for {per_gemm} x {LAYERS_IN_GRAPH}")
            eg = []
            for k in ke:
                if is_reduce(k["name"]) and eg:
                    eg[-1].append(k)
                else:
                    eg.append([k])
            for j, (nm, K, N) in enumerate(shapes):
                grp = [calls[j + per_gemm * li] for li in range(LAYERS_IN_GRAPH)] if ok else []
                ge = eg[j] if len(eg) == per_gemm else []
                red = [c[1]["dur"] for c in grp if len(c) > 1]
                o.row(section="layer", style=style, dtype="bf16", m=M, k=K, n=N, op=nm,
                      kernels_per_call=(round(statistics.mean(len(c) for c in grp), 3) if grp else ""),
                      gemm_kernel=short(grp[0][0]["name"]) if grp else "", split=int(bool(red)),
                      gemm_dev_us=med([c[0]["dur"] for c in grp]), reduce_dev_us=med(red),
                      gap_gemm_reduce_us=med([c[1]["ts"] - c[0]["ts"] - c[0]["dur"] for c in grp if len(c) > 1]),
                      eager_gemm_dev_us=ge[0]["dur"] if ge else "",
                      eager_reduce_dev_us=ge[1]["dur"] if len(ge) > 1 else "", calls=LAYERS_IN_GRAPH)
            o.note(f"layer {style} M {M}: graph {per_layer:.2f} us/layer, {len(ks) / LAYERS_IN_GRAPH:.1f} kernels/layer; "
                   + " | ".join(f"{nm}: " + " + ".join(f"{short(k['name'])} grid {k['grid']}" for k in (eg[j] if len(eg) == per_gemm else []))
                                for j, (nm, _, _) in enumerate(shapes)))
            del g
        del sets
        torch.cuda.empty_cache()


def blind_phase(out: Path, smoke: bool):
    """BLIND4_KN x BLIND4_M, timed as measure_production_kernels.py --grid fresh3 times its shapes."""
    sink = MP.Sink(out, "_blind4")
    f8 = torch.float8_e4m3fn
    for K, N in (BLIND4_KN[:1] if smoke else BLIND4_KN):
        copies = max(2, min(64, math.ceil(2 * L2_BYTES / (N * K))))
        ws = [torch.randn(N, K, device="cuda", dtype=torch.bfloat16) * 0.05 for _ in range(copies)]
        w8s = [w.to(f8) for w in ws]
        tag = f"rotated over {copies} weight copies"
        for M in BLIND4_M:
            x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
            st = T.time_graph(lambda i, x=x, ws=ws, c=copies: torch.nn.functional.linear(x, ws[i % c]))
            sink.emit("gemm", "bf16", "", M, N, K, st, note=tag)
            x8 = x.to(f8)
            one = torch.ones((), device="cuda")
            wts = [w8.t() for w8 in w8s]
            fn = (lambda i, x8=x8, wts=wts, one=one: torch._scaled_mm(x8, wts[i % copies], scale_a=one, scale_b=one,
                                                                       out_dtype=torch.bfloat16))
            st = T.time_graph(fn)
            sink.emit("gemm", "fp8_tensorwise", "", M, N, K, st, note=tag)
            sink.note(f"kernels fp8_tensorwise (M {M}, K {K}, N {N}): "
                      + " | ".join(MP.launched_kernels(lambda fn=fn: fn(0))))
            sink.note(f"kernels bf16 (M {M}, K {K}, N {N}): " + " | ".join(
                MP.launched_kernels(lambda x=x, w=ws[0]: torch.nn.functional.linear(x, w))))
        del ws, w8s
        torch.cuda.empty_cache()
    print(f"wrote {sink.path} ({sink.count} rows)", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--skip-blind", action="store_true")
    ap.add_argument("--only", choices=("chain", "layer", "blind"), default=None)
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    if not torch.cuda.is_available():
        print("no CUDA: nothing to measure")
        return
    o = Out(a.out, a.smoke)
    t0 = time.time()
    for name, ph in (("chain", lambda: chain_phase(o, a.smoke)), ("layer", lambda: layer_phase(o, a.smoke)),
                     ("blind", lambda: blind_phase(a.out, a.smoke))):
        if a.only not in (None, name) or (name == "blind" and a.skip_blind):
            continue
        try:
            ph()
        except Exception as ex:  # noqa: BLE001
            import traceback
            traceback.print_exc()
            o.note(f"{name} phase failed: {type(ex).__name__}: {str(ex)[:300]}")
        o.note(f"{name} done at {time.time() - t0:.1f} s")
    print(f"wrote {o.path}")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
