"""Time DeepGEMM's DSA-indexer logits kernels on one GPU (sgl-deep-gemm, SGLang's packaging of DeepGEMM):
fp8_paged_mqa_logits (decode / verification over a paged fp8 key cache, block 64, with its schedule-metadata kernel
get_paged_mqa_logits_metadata timed on its own) and fp8_mqa_logits (prefill: ragged causal key ranges), at
DeepSeek-V3.2's indexer shape (64 heads x head dim 128, fp8 keys with one fp32 scale per token, fp32 head weights).

    python measure_deepgemm_indexer.py --out DIR [--smoke] [--part decode|prefill|all]

Grids (GRID_*): decode batch x context x next_n; prefill query rows x keys, row i of a chunk of S rows at the end of
a prompt of K tokens sees keys [0, K - S + i + 1) (what a DSA prefill chunk asks of the indexer). Timing: the CUDA-graph
timer of lab/harness.py (`_timing.time_graph`: calls back to back in a graph, a spin before each timed replay, the
median of 5 replays / calls). Decode rotates 8 block tables of random pages over a key pool of >= 160 MB (rotation
"warm8": a shape whose 8 tables touch less than the 50 MB L2 finds its keys there), or, for grid rows of rotation
"cold", one fresh table per call over consecutive slices of a 400 MB pool, >= 150 MB of pages between two uses of a
page (as layer after layer of a real step, each on its own keys).
--smoke checks the kernels against a torch reference on small shapes and times two shapes.

sgl-deep-gemm's _C.so is built against a newer PyTorch than the lent machine's; by default (DG_IMPL=upstream) the
entry points come from dg_upstream.py (DeepGEMM's host code built on the machine against its own PyTorch; the commit
and its kernel differences from 0.2.5 are in its docstring and the attempt notes). Kernels are JIT-compiled by nvcc on
first use (DG_JIT_CACHE_DIR). Nothing is timed unless every checked kernel matches the reference (MAX_REL_ERR).
"""
from __future__ import annotations

import argparse
import csv
import math
import os
import time

try:   # the grids are read without torch (lab/kernels/predict_deepgemm_indexer.py)
    import _timing as T
    import torch
except ImportError:
    torch = T = None

D, H, PAGE = 128, 64, 64
GRID_DECODE = [(b, c, n) for n in (1, 2) for b in (1, 4, 16, 64, 128)
               for c in (2048, 8192, 32768, 65536, 131072)]
GRID_PREFILL = [(1024, 8192), (1024, 16384), (1024, 32768), (1024, 65536),
                (4096, 4096), (4096, 8192), (4096, 16384), (4096, 32768), (4096, 65536),
                (8192, 8192), (8192, 16384), (8192, 32768), (8192, 65536)]
POOL_BYTES = 160 * 2**20
N_TABLES = 8
#: rotation "cold" (grid column `rotation`): the calls of one graph walk consecutive slices of a random permutation of
#: a key pool of COLD_POOL_BYTES, one fresh block table per call, with at least COLD_BYTES of pages touched between two
#: uses of a page (3 x the H100's 50 MB L2), as a decode step's 61 layers each read their own layer's keys; "warm8"
#: (the default, what the first two grids measured): 8 block tables of random pages rotated, so a shape whose 8 tables
#: touch less than the L2 finds its pages there
COLD_BYTES = 150 * 10**6
COLD_POOL_BYTES = 400 * 2**20
COLD_MAX_CALLS = 4096
MAX_REL_ERR = 1e-3   # fp8 inputs are exact in fp32: what differs is the accumulation order only
ERRS: list = []


def _dg():
    """dg_upstream (DeepGEMM's host code built on this machine against its own PyTorch: the path that measures), else
    dg_load (the sgl-deep-gemm wheel on an older PyTorch), else a plain import; the 0.2.x names
    fp8_fp4_(paged_)mqa_logits, else the upstream fp8_(paged_)mqa_logits."""
    if os.environ.get("DG_IMPL", "upstream") == "upstream":
        import dg_upstream as deep_gemm
        return deep_gemm
    try:
        from dg_load import deep_gemm
    except (ImportError, OSError):
        import deep_gemm
    for new, old in (("fp8_fp4_paged_mqa_logits", "fp8_paged_mqa_logits"), ("fp8_fp4_mqa_logits", "fp8_mqa_logits")):
        if not hasattr(deep_gemm, new):
            setattr(deep_gemm, new, getattr(deep_gemm, old))
    return deep_gemm


def kv_cache_fp8(x):
    """[blocks, 64, 1, D] bf16 -> the fused uint8 cache DeepGEMM reads: per block 64 x D fp8 values, then 64 fp32
    scales (amax / 448 per token)."""
    nb, bs, nh, d = x.shape
    sf = x.abs().float().amax(dim=3, keepdim=True).clamp(1e-4) / 448.0
    xs = (x * (1.0 / sf)).to(torch.float8_e4m3fn)
    out = torch.empty((nb, bs * (d + 4)), device=x.device, dtype=torch.uint8)
    out[:, :bs * d] = xs.view(nb, bs * d).view(torch.uint8)
    out[:, bs * d:] = sf.view(nb, bs).view(torch.uint8)
    return out.view(nb, bs, nh, d + 4)


def _context_lens(dg, b, ctx, n, sms):
    """context lens as this DeepGEMM takes them (1-D per sequence, else 2-D per (sequence, row): row j of next_n
    sees ctx - n + 1 + j keys) and the schedule metadata."""
    cl1 = torch.full((b,), ctx, device="cuda", dtype=torch.int32)
    try:
        if hasattr(dg, "BUILD"):   # the built DeepGEMM takes 2-D context lens only (it asserts)
            raise ValueError("2-D only")
        meta = dg.get_paged_mqa_logits_metadata(cl1, PAGE, sms)
        return cl1, meta, "1d"
    except Exception:   # noqa: BLE001 - the 2-D form is the other accepted one
        cl2 = (ctx - n + 1 + torch.arange(n, device="cuda", dtype=torch.int32))[None, :].repeat(b, 1).contiguous()
        return cl2, dg.get_paged_mqa_logits_metadata(cl2, PAGE, sms), "2d"


def cold_tables(b, nblk, pool_blocks, g) -> list:
    """Block tables for rotation "cold": table i = the i-th slice of b x nblk pages of a random permutation of the
    pool, cycling through it, enough tables that one rotation touches >= COLD_BYTES (module docstring)."""
    per = b * nblk
    n_t = min(COLD_MAX_CALLS, max(N_TABLES, math.ceil(COLD_BYTES / (per * PAGE * (D + 4)))))
    perm = torch.randperm(pool_blocks, device="cuda", generator=g)
    flat = perm[torch.arange(n_t * per, device="cuda") % pool_blocks].to(torch.int32)
    return list(flat.view(n_t, b, nblk).unbind(0))


def decode_case(dg, b, ctx, n, sms, pool, rotation="warm8", expand=1):
    """One decode shape; `expand` > 1 (next_n 1): `b` sequences as b / expand requests' rows, each request's block table
    repeated for its `expand` rows (an engine's flattened MTP rows: every row re-walks its request's keys)."""
    nblk = math.ceil(ctx / PAGE)
    g = torch.Generator(device="cuda").manual_seed(b * 7 + ctx + n)
    reqs = b // expand
    if rotation == "cold":
        tables = cold_tables(reqs, nblk, pool.shape[0], g)
    else:
        tables = [torch.randint(0, pool.shape[0], (reqs, nblk), device="cuda", dtype=torch.int32, generator=g)
                  for _ in range(N_TABLES)]
    if expand > 1:
        tables = [t.repeat_interleave(expand, dim=0).contiguous() for t in tables]
    n_t = len(tables)
    q = torch.randn(b, n, H, D, device="cuda", dtype=torch.bfloat16).to(torch.float8_e4m3fn)
    w = torch.randn(b * n, H, device="cuda", dtype=torch.float32)
    cl, meta, form = _context_lens(dg, b, ctx, n, sms)
    max_ctx = nblk * PAGE

    def logits(i):
        return dg.fp8_fp4_paged_mqa_logits(q, pool, w, cl, tables[i % n_t], meta, max_ctx)

    def metadata(i):
        return dg.get_paged_mqa_logits_metadata(cl, PAGE, sms)

    if rotation == "cold":   # every table once per replay: calls = tables (a replay of <= 1 ms per call)
        st = T.time_graph(logits, target_us=1000.0 * n_t, max_calls=n_t)
    else:
        st = T.time_graph(logits)
    return st, T.time_graph(metadata), form, n_t


def prefill_case(dg, s, k):
    q = torch.randn(s, H, D, device="cuda", dtype=torch.bfloat16).to(torch.float8_e4m3fn)
    kb = torch.randn(k, D, device="cuda", dtype=torch.bfloat16)
    ksf = kb.abs().float().amax(1).clamp(1e-4) / 448.0
    kf = (kb / ksf[:, None]).to(torch.float8_e4m3fn)
    w = torch.randn(s, H, device="cuda", dtype=torch.float32)
    ks = torch.zeros(s, device="cuda", dtype=torch.int32)
    ke = torch.arange(s, device="cuda", dtype=torch.int32) + (k - s + 1)

    def fn(i):
        return dg.fp8_fp4_mqa_logits(q, (kf, ksf), w, ks, ke, 0)

    return T.time_graph(fn, reps=5)


def check(dg, sms) -> list[str]:
    """Small shapes against a torch reference (max |err| / max |ref|)."""
    out = []
    for n in (1, 2):
        b, ctx = 3, 1000
        nblk = math.ceil(ctx / PAGE)
        x = torch.randn(b * nblk, PAGE, 1, D, device="cuda", dtype=torch.bfloat16)
        kv = kv_cache_fp8(x)
        q = torch.randn(b, n, H, D, device="cuda", dtype=torch.bfloat16).to(torch.float8_e4m3fn)
        w = torch.randn(b * n, H, device="cuda", dtype=torch.float32)
        bt = torch.randperm(b * nblk, device="cuda", dtype=torch.int32).view(b, nblk)
        cl, meta, form = _context_lens(dg, b, ctx, n, sms)
        lg = dg.fp8_fp4_paged_mqa_logits(q, kv, w, cl, bt, meta, nblk * PAGE).float()
        # the fused cache per 64-token block: 64 x D fp8 values, then 64 fp32 scales (kv_cache_fp8)
        flat = kv.view(b * nblk, -1)
        vals = flat[:, :PAGE * D].contiguous().view(torch.float8_e4m3fn).float().view(b * nblk, PAGE, D)
        scl = flat[:, PAGE * D:].contiguous().view(torch.float32).view(b * nblk, PAGE)
        kvv = vals[bt.long()].view(b, nblk * PAGE, D)
        sc = scl[bt.long()].view(b, nblk * PAGE)
        ref = (torch.einsum("bnhd,btd->bnht", q.float(), kvv) * sc[:, None, None, :]).relu()
        ref = (ref * w.view(b, n, H, 1)).sum(2).view(b * n, -1)[:, :ctx]
        # rows of a 2-D context_lens see fewer keys: compare each row on the keys it sees
        lens = cl.view(-1).tolist() if form == "2d" else [ctx] * (b * n)
        err = max(float((lg[r, :L] - ref[r, :L]).abs().max()) for r, L in enumerate(lens)) / float(ref.abs().max())
        out.append(f"paged next_n={n} ({form} context_lens): rel err {err:.2e}")
        ERRS.append(err)
    s, k = 300, 700
    q = torch.randn(s, H, D, device="cuda", dtype=torch.bfloat16).to(torch.float8_e4m3fn)
    kb = torch.randn(k, D, device="cuda", dtype=torch.bfloat16)
    ksf = kb.abs().float().amax(1).clamp(1e-4) / 448.0
    kf = (kb / ksf[:, None]).to(torch.float8_e4m3fn)
    w = torch.randn(s, H, device="cuda", dtype=torch.float32)
    ks = torch.zeros(s, device="cuda", dtype=torch.int32)
    ke = torch.arange(s, device="cuda", dtype=torch.int32) + (k - s + 1)
    lg = dg.fp8_fp4_mqa_logits(q, (kf, ksf), w, ks, ke, 0).float()
    ref = ((torch.einsum("shd,td->sht", q.float(), kf.float()) * ksf[None, None, :]).relu() * w[:, :, None]).sum(1)
    err = max(float((lg[i, :int(ke[i])] - ref[i, :int(ke[i])]).abs().max()) for i in range(s)) / float(ref.abs().max())
    out.append(f"prefill ragged: rel err {err:.2e}, logits shape {tuple(lg.shape)}")
    ERRS.append(err)
    return out


def _decode_priority(case):
    b, c, n = case
    return ((16, 1, 128, 64, 4).index(b), n, c)


def read_grid(path: str) -> tuple[list, list]:
    """(decode (batch, context, next_n, rotation, expand), prefill (rows, keys)) shapes of a grid CSV, in file order
    (rotation "warm8", expand 1 where the grid has no such column)."""
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    dec = [(int(r["batch"]), int(r["context"]), int(r["next_n"]), r.get("rotation") or "warm8",
            int(r.get("expand") or 1)) for r in rows if r["part"] == "decode"]
    pre = [(int(r["rows"]), int(r["keys"])) for r in rows if r["part"] == "prefill"]
    return dec, pre


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--part", default="all", choices=("decode", "prefill", "all"))
    ap.add_argument("--grid", default="", help="CSV of shapes (part,batch,context,next_n,rows,keys[,set]) measured "
                                                "instead of GRID_* (e.g. deepgemm_indexer_blind2_grid.csv)")
    args = ap.parse_args()
    t0 = time.time()
    dg = _dg()
    sms = dg.get_num_sms()
    v = T.versions()
    v["deep_gemm"] = getattr(dg, "BUILD", None) or \
        "sgl-deep-gemm " + open(os.path.join(os.path.dirname(dg.__file__), "VERSION")).read().strip()
    print(v, "sms", sms, "import s", round(time.time() - t0, 1), flush=True)
    for line in check(dg, sms):
        print(line, flush=True)
    print("check done s", round(time.time() - t0, 1), flush=True)
    if not ERRS or not all(e <= MAX_REL_ERR for e in ERRS):   # a NaN fails too   # nothing is timed unless every kernel matches the reference
        raise SystemExit(f"CHECK FAILED: rel errors {ERRS} (allowed {MAX_REL_ERR})")
    # prefill first, then decode by batch 16 (the fit's), 1, 128, 64, 4: a run cut short keeps the rows that matter most
    grid_d = [(1, 8192, 1, "warm8", 1), (16, 32768, 2, "warm8", 1), (1, 1024, 1, "cold", 1)] if args.smoke else \
        [(b, c, n, "warm8", 1) for b, c, n in sorted(GRID_DECODE, key=_decode_priority)]
    grid_p = [(1024, 8192)] if args.smoke else GRID_PREFILL
    if args.grid:
        grid_d, grid_p = read_grid(args.grid)
    os.makedirs(args.out, exist_ok=True)
    cols = ["part", "batch", "context", "next_n", "rows", "keys", "median_us", "p20_us", "p80_us", "calls",
            "meta_us", "context_lens", "rotation", "tables", "expand", "device", "torch", "cuda", "driver", "deep_gemm", "date"]
    path = os.path.join(args.out, "deepgemm_indexer.csv")
    with open(path, "w", newline="") as fh:
        wr = csv.DictWriter(fh, fieldnames=cols)
        wr.writeheader()
        base = {"device": v["device"], "torch": v["torch"], "cuda": v["cuda"], "driver": v["driver"],
                "deep_gemm": v["deep_gemm"], "date": time.strftime("%Y-%m-%d", time.gmtime())}
        if args.part in ("prefill", "all"):
            for s, k in grid_p:
                try:
                    st = prefill_case(dg, s, k)
                except Exception as e:   # noqa: BLE001
                    print("prefill fail", s, k, repr(e)[:300], flush=True)
                    continue
                wr.writerow({**base, "part": "prefill", "batch": 1, "context": k, "next_n": 0, "rows": s, "keys": k,
                             "median_us": round(st["median"], 3), "p20_us": round(st["p20"], 3),
                             "p80_us": round(st["p80"], 3), "calls": st["calls"], "meta_us": "",
                             "context_lens": "ragged", "rotation": "", "tables": "", "expand": ""})
                fh.flush()
                print(f"prefill S={s:5d} K={k:6d} {st['median']:10.2f} us t={time.time() - t0:.0f}s", flush=True)
                torch.cuda.empty_cache()
        if args.part in ("decode", "all"):
            need = max(b * math.ceil(c / PAGE) for b, c, _, _, _ in grid_d)
            nb = max(need, POOL_BYTES // (PAGE * (D + 4)))
            pool = kv_cache_fp8(torch.randn(nb, PAGE, 1, D, device="cuda", dtype=torch.bfloat16))
            cold_pool = None
            if any(r == "cold" for _, _, _, r, _ in grid_d):
                ncold = max(need, COLD_POOL_BYTES // (PAGE * (D + 4)))
                cold_pool = kv_cache_fp8(torch.randn(ncold, PAGE, 1, D, device="cuda", dtype=torch.bfloat16))
            for b, c, n, rot, ex in grid_d:
                try:
                    st, mt, form, n_t = decode_case(dg, b, c, n, sms, cold_pool if rot == "cold" else pool, rot, ex)
                except Exception as e:   # noqa: BLE001 - report and go on
                    print("decode fail", b, c, n, repr(e)[:300], flush=True)
                    continue
                wr.writerow({**base, "part": "decode", "batch": b, "context": c, "next_n": n, "rows": b * n,
                             "keys": c, "median_us": round(st["median"], 3), "p20_us": round(st["p20"], 3),
                             "p80_us": round(st["p80"], 3), "calls": st["calls"], "meta_us": round(mt["median"], 3),
                             "context_lens": form, "rotation": rot, "tables": n_t, "expand": ex})
                fh.flush()
                print(f"decode B={b:4d} ctx={c:6d} n={n} {rot:5s} x{n_t:<4d} calls {st['calls']:4d} "
                      f"{st['median']:9.2f} us  meta {mt['median']:6.2f} us "
                      f"t={time.time() - t0:.0f}s", flush=True)
            del pool, cold_pool
            torch.cuda.empty_cache()
    print("wrote", path, "total s", round(time.time() - t0, 1), flush=True)


if __name__ == "__main__":
    main()
