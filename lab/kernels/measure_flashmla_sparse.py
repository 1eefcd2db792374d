"""FlashMLA's sparse decode on one Hopper GPU: the kernel DeepSeek-V3.2's DSA attention runs in SGLang
(`flash_mla_with_kvcache(..., indices=..., use_legacy=True)` on SM90: sgl_flash_mla 1.0.0's frozen csrc_legacy
kernels, the V3.2 KV cache format: 656 bytes a token = 512 fp8 e4m3 latent values, 4 fp32 scales, 64 bf16 RoPE values;
pages of 64 tokens; one KV head). Called through its op, torch.ops.flash_mla_legacy.sparse_decode_fwd, loaded from the
wheel's _C_legacy extension alone (the wheel's Python loader also wants its SM100 extension, which SM90 does not run).

Per shape (batch B, query rows per sequence s_q, query heads H: 64 or 128, the kernel's only head counts, SGLang
padding fewer heads to 64; topk k; context N tokens a sequence): q (B, s_q, H, 576) bf16; each sequence's N tokens
on its own pages of a pool of B x ceil(N / 64) pages, dealt out in a random order; indices (B, s_q, k) int32: k
distinct random positions of the sequence (page x 64 + offset), -1 past N when N < k. The scheduler metadata is made by
the first (eager) call and reused, as an engine reuses it across a step's layers. Timed in CUDA graphs
(_timing.time_graph): `fmla_sparse` with the K/V pool rotated through copies past the L2 (the engine's state: a layer's
cache not read since that layer's last step), `fmla_sparse_warm` on one pool (the L2 keeps what fits). The launched
kernels (names, grids) go to the notes file. Output checked against a reference on the first shapes.

    python3 measure_flashmla_sparse.py --out DIR --so LEGACY_SO --shapes PREDICTION.csv [--tag TAG] [--smoke] [--prefill]

--prefill: FlashMLA's sparse prefill (flash_mla_sparse_fwd, the legacy op sparse_prefill_fwd on SM90) over one causal
prompt of P tokens a shape (the prediction's `prompt`, `heads`, `topk`): q (P, H, 576) bf16, kv (P, 1, 576) bf16, indices
(P, 1, k): row i's min(i + 1, k) positions of [0, i] (random for rows past k, duplicates possible), -1 after; kernel
`fmla_sparse_prefill`.

--spans: also each decode shape's kernels one by one (kernel_spans): 24 eager calls over the rotated cold pools under
torch.profiler, per call the sparse kernel's start and end and the combine kernel's start and end (the combine is launched
with programmatic dependent launch, so it may start before the sparse kernel ends and wait inside); medians of the
sparse kernel's span, the combine's exposed tail (its end - the sparse kernel's end), the call (the combine's end - the
sparse kernel's start) and the combine's start lag, in DIR/flashmla_sparse_<device>_<date>_<tag>_spans.csv.

--prefill-rows: FlashMLA's sparse prefill kernel over `rows` independent query rows (the prediction's `heads`, `rows`,
`topk`, `context`, `shared`), as TensorRT-LLM runs its DSA decode on Hopper (every generation row a row of
flash_mla_sparse_fwd over the bf16 cache pool): q (rows, H, 576) bf16; kv a bf16 pool of `context` tokens per row
(shared 2: each row its own sequence) or of one sequence (shared 1); indices (rows, 1, k): k distinct positions of the
row's sequence; the pool rotated through copies past the L2 (cold); kernel `fmla_sparse_fwd_rows`.

CSV: DIR/flashmla_sparse_<device>_<date>_<tag>.csv.
"""
from __future__ import annotations

import argparse
import csv
import datetime as dt
import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _timing as T  # noqa: E402
from measure_production_kernels import launched_kernels  # noqa: E402

SCRIPT_VERSION = 7
PAGE = 64
BYTES_PER_TOKEN = 656
L2_BYTES = 50 * (1 << 20)


def shapes_of(path: Path) -> list[dict]:
    """The distinct (batch, s_q, heads, topk, context) of a prediction CSV, in its order, each with `shared` (the CSV's
    column of that name, 0 where absent: 1 = every row indexes one sequence of `context` tokens, as an engine's
    flattened prompt rows do; 2 = every row its own sequence)."""
    out, seen = [], set()
    for r in csv.DictReader(open(path)):
        key = tuple(int(float(r[c])) for c in ("batch", "s_q", "heads", "topk", "context"))
        if key not in seen:
            seen.add(key)
            shared = int(float(r.get("shared") or 0))
            out.append(dict(zip(("batch", "s_q", "heads", "topk", "context"), key))
                       | {"shared": shared, "overlap": float(r.get("overlap") or 0.0)})
    return out


def kv_pool(pages: int, gen) -> torch.Tensor:
    """A V3.2-format cache of `pages` pages: fp8 latent values, scales 1.0, bf16 RoPE values."""
    tokens = pages * PAGE
    lat = (torch.randn(tokens, 512, device="cuda", generator=gen) * 0.5).to(torch.float8_e4m3fn).view(torch.uint8)
    sc = torch.ones(tokens, 4, device="cuda", dtype=torch.float32).view(torch.uint8)
    rope = torch.randn(tokens, 64, device="cuda", generator=gen).to(torch.bfloat16).view(torch.uint8)
    return torch.cat([lat, sc, rope], dim=1).view(pages, PAGE, 1, BYTES_PER_TOKEN).contiguous()


def pool_pages(B: int, s_q: int, N: int, shared: int) -> int:
    """Pages of a shape's K/V pool: one sequence of N tokens (shared 1), one per row (shared 2), one per request (0)."""
    P = -(-N // PAGE)
    return P * (1 if shared == 1 else (B * s_q if shared == 2 else B))


def indices_for(B: int, s_q: int, k: int, N: int, gen, shared: int = 0, overlap: float = 0.0) -> torch.Tensor:
    """(B, s_q, k) int32: k distinct positions of each sequence's N tokens as pool indices, -1 past N; `shared` 1: every
    row's positions drawn from one sequence of N tokens (a pool of ceil(N / 64) pages), rows drawn in blocks of 64 at a
    time (argsort of random keys, the rows independent); 2: every row from its own sequence of N tokens (rows of
    distinct requests passed as one request); 0: a request's rows from its sequence, row s + 1 keeping round(overlap x
    k) of row s's positions (a random subset) and drawing the rest from the positions row s left out (consecutive
    query rows of one request, an MTP verification's, pick mostly the same keys)."""
    P = -(-N // PAGE)
    kk = min(k, N)
    out = torch.full((B, s_q, k), -1, dtype=torch.int32, device="cuda")
    if shared == 2:
        perm = torch.randperm(B * s_q * P, device="cuda", generator=gen).view(B * s_q, P)
        flat = out.view(B * s_q, k)
        for r in range(B * s_q):
            pos = torch.randperm(N, device="cuda", generator=gen)[:kk]
            flat[r, :kk] = (perm[r, pos // PAGE] * PAGE + pos % PAGE).to(torch.int32)
        return out
    if shared == 1:
        perm = torch.randperm(P, device="cuda", generator=gen)
        flat = out.view(B * s_q, k)
        for i in range(0, B * s_q, 64):
            n = min(64, B * s_q - i)
            pos = torch.argsort(torch.rand(n, N, device="cuda", generator=gen), dim=1)[:, :kk]
            flat[i:i + n, :kk] = (perm[pos // PAGE] * PAGE + pos % PAGE).to(torch.int32)
        return out
    perm = torch.randperm(B * P, device="cuda", generator=gen).view(B, P)
    keep = int(round(overlap * kk))
    for b in range(B):
        prev = None
        for s in range(s_q):
            if prev is None or keep == 0:
                pos = torch.randperm(N, device="cuda", generator=gen)[:kk]
            else:
                kept = prev[torch.randperm(kk, device="cuda", generator=gen)[:keep]]
                free = torch.ones(N, dtype=torch.bool, device="cuda")
                free[prev] = False
                cand = free.nonzero().squeeze(1)
                new = cand[torch.randperm(cand.numel(), device="cuda", generator=gen)[:kk - keep]]
                pos = torch.cat([kept, new])[torch.randperm(kk, device="cuda", generator=gen)]
            out[b, s, :kk] = (perm[b, pos // PAGE] * PAGE + pos % PAGE).to(torch.int32)
            prev = pos
    return out


def reference(q, kv, idx, scale):
    """Dense reference of one (b, s) row over its gathered entries (latent dequantized, RoPE appended)."""
    b, s = 0, 0
    flat = kv.view(-1, BYTES_PER_TOKEN)
    ix = idx[b, s][idx[b, s] >= 0].long()
    rows = flat[ix]
    lat = rows[:, :512].contiguous().view(torch.float8_e4m3fn).float()
    rope = rows[:, 528:656].contiguous().view(torch.bfloat16).float()
    k = torch.cat([lat, rope], dim=1)
    p = torch.softmax((q[b, s].float() @ k.T) * scale, dim=-1)
    return p @ lat


SPAN_CALLS = 24


def kernel_spans(fn, calls: int = SPAN_CALLS) -> dict:
    """Medians over `calls` eager fn(j) calls of the sparse kernel's span, the combine kernel's exposed tail (its end
    minus the sparse kernel's end), the call (combine end - sparse start) and the combine's start lag (its start minus
    the sparse kernel's start), us, from torch.profiler's kernel events (module docstring, --spans); the kernels one call
    launches and their short names."""
    import statistics

    ev = T.profiled_kernels(fn, calls)
    per = len(ev) // calls
    names = [("combine" if "combine" in e["name"] else ("sparse" if "sparse" in e["name"] else e["name"][:40]))
             for e in ev[:per]]
    out = {"sparse_us": [], "combine_tail_us": [], "call_us": [], "combine_lag_us": []}
    for c in range(calls):
        grp = ev[c * per:(c + 1) * per]
        sp = [e for e, n in zip(grp, names) if n == "sparse"]
        cb = [e for e, n in zip(grp, names) if n == "combine"]
        if not sp:
            continue
        s0, s1 = float(sp[0]["ts"]), float(sp[0]["ts"]) + float(sp[0]["dur"])
        out["sparse_us"].append(s1 - s0)
        if cb:
            c0, c1 = float(cb[0]["ts"]), float(cb[0]["ts"]) + float(cb[0]["dur"])
            out["combine_tail_us"].append(c1 - s1)
            out["call_us"].append(c1 - s0)
            out["combine_lag_us"].append(c0 - s0)
        else:
            out["call_us"].append(s1 - s0)
    med = {k: (round(statistics.median(v), 3) if v else float("nan")) for k, v in out.items()}
    return med | {"kernels": "+".join(names), "n": len(out["sparse_us"])}


def open_outputs(args, fields: list[str]):
    """(device name, date, CSV path, its file, its DictWriter with the header written, the notes file) of a campaign:
    DIR/flashmla_sparse_<device>_<date>_<tag>.csv and _notes.txt, the notes opened with the script and library."""
    dev = torch.cuda.get_device_name(0)
    date = dt.date.today().isoformat()
    slug = dev.lower().replace("nvidia ", "nvidia-").replace(" ", "-")
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"flashmla_sparse_{slug}_{date}_{args.tag}.csv"
    notes = open(args.out / f"flashmla_sparse_{slug}_{date}_{args.tag}_notes.txt", "w")
    notes.write(f"script {SCRIPT_VERSION}; torch {torch.__version__} cuda {torch.version.cuda}; {dev}; so {args.so}\n")
    f = open(path, "w", newline="")
    w = csv.DictWriter(f, fieldnames=fields)
    w.writeheader()
    return dev, date, path, f, w, notes


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--so", required=True, type=Path, help="the wheel's _C_legacy.abi3.so")
    ap.add_argument("--shapes", required=True, type=Path)
    ap.add_argument("--tag", default="grid1")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--prefill", action="store_true")
    ap.add_argument("--prefill-rows", action="store_true", help="the sparse prefill kernel over independent rows")
    ap.add_argument("--spans", action="store_true", help="also time each decode shape's kernels one by one")
    args = ap.parse_args()
    if args.prefill:
        return prefill_main(args)
    if args.prefill_rows:
        return prefill_rows_main(args)
    torch.ops.load_library(str(args.so))
    op = torch.ops.flash_mla_legacy.sparse_decode_fwd
    shapes = shapes_of(args.shapes)[: 2 if args.smoke else None]
    dev, date, path, f, w, notes = open_outputs(args, ["kernel", "batch", "s_q", "heads", "topk", "context", "median_us",
                                                       "p20_us", "p80_us", "calls", "copies", "note", "device", "date"])
    spans = None
    if args.spans:
        sf = open(path.with_name(path.stem + "_spans.csv"), "w", newline="")
        spans = csv.DictWriter(sf, fieldnames=["batch", "s_q", "heads", "topk", "context", "sparse_us",
                                               "combine_tail_us", "call_us", "combine_lag_us", "n", "kernels",
                                               "device", "date"])
        spans.writeheader()
    gen = torch.Generator(device="cuda")
    gen.manual_seed(0)
    print(f"{len(shapes)} shapes from {args.shapes.name}", flush=True)
    for i, s in enumerate(shapes):
        B, sq, H, k, N = s["batch"], s["s_q"], s["heads"], s["topk"], s["context"]
        pages = pool_pages(B, sq, N, s["shared"])
        pool_bytes = pages * PAGE * BYTES_PER_TOKEN
        copies = max(1, min(8, math.ceil(2.5 * L2_BYTES / pool_bytes)))
        try:
            kvs = [kv_pool(pages, gen) for _ in range(copies)]
            idx = indices_for(B, sq, k, N, gen, s["shared"], s["overlap"])
            q = torch.randn(B, sq, H, 576, device="cuda", dtype=torch.bfloat16, generator=gen)
            scale = 1.0 / math.sqrt(576)
            out, lse, meta, splits = op(q, kvs[0], idx, None, None, None, None, None, None, None, 512, scale, None)
            torch.cuda.synchronize()
            note = ""
            if i < 3:
                ref = reference(q, kvs[0], idx, scale)
                err = float((out[0, 0].float() - ref).abs().max() / ref.abs().max().clamp(min=1e-6))
                note = f"max rel err {err:.3g}" + (" WRONG" if err > 0.05 else "")
            for kern, n_kv in (("fmla_sparse", copies), ("fmla_sparse_warm", 1)):
                def fn(j, n_kv=n_kv, q=q, kvs=kvs, idx=idx, meta=meta, splits=splits, scale=scale):
                    op(q, kvs[j % n_kv], idx, None, None, meta, splits, None, None, None, 512, scale, None)
                st = T.time_graph(fn)
                w.writerow({"kernel": kern, "batch": B, "s_q": sq, "heads": H, "topk": k, "context": N,
                            "median_us": round(st["median"], 4), "p20_us": round(st["p20"], 4),
                            "p80_us": round(st["p80"], 4), "calls": st["calls"], "copies": n_kv, "note": note,
                            "device": dev, "date": date})
                f.flush()
            if spans is not None:
                def eager(j, q=q, kvs=kvs, idx=idx, meta=meta, splits=splits, scale=scale, n_kv=copies):
                    op(q, kvs[j % n_kv], idx, None, None, meta, splits, None, None, None, 512, scale, None)
                spans.writerow({"batch": B, "s_q": sq, "heads": H, "topk": k, "context": N, **kernel_spans(eager),
                                "device": dev, "date": date})
                sf.flush()
            if i < 40 or i % 5 == 0:
                names = launched_kernels(lambda fn=fn: fn(0))   # the last timed call (kvs[0])
                notes.write(f"B {B} s_q {sq} H {H} k {k} N {N}: splits sum {int(splits[-1]) if splits is not None else -1}"
                            f", meta {tuple(meta.shape) if meta is not None else None}: {' | '.join(names)[:600]}\n")
            print(f"B {B:4d} s_q {sq} H {H:3d} k {k} N {N:6d}: done {note}", flush=True)
            del kvs, idx, q
        except Exception as e:  # noqa: BLE001 - recorded, the campaign goes on
            print(f"B {B} s_q {sq} H {H} N {N}: {type(e).__name__}: {str(e)[:300]}", flush=True)
            notes.write(f"B {B} s_q {sq} H {H} N {N}: FAILED {type(e).__name__}: {str(e)[:300]}\n")
        torch.cuda.empty_cache()
    f.close()
    notes.close()
    if spans is not None:
        sf.close()
    print(f"wrote {path}", flush=True)


def prefill_main(args) -> None:
    """The --prefill campaign (module docstring)."""
    torch.ops.load_library(str(args.so))
    op = torch.ops.flash_mla_legacy.sparse_prefill_fwd
    rows = list(csv.DictReader(open(args.shapes)))
    shapes = list(dict.fromkeys((int(float(r["heads"])), int(float(r["prompt"])), int(float(r["topk"]))) for r in rows))
    shapes = shapes[: 2 if args.smoke else None]
    dev, date, path, f, w, notes = open_outputs(args, ["kernel", "heads", "prompt", "topk", "median_us", "p20_us",
                                                       "p80_us", "calls", "note", "device", "date"])
    gen = torch.Generator(device="cuda")
    gen.manual_seed(0)
    for H, P, k in shapes:
        try:
            q = torch.randn(P, H, 576, device="cuda", dtype=torch.bfloat16, generator=gen)
            kv = torch.randn(P, 1, 576, device="cuda", dtype=torch.bfloat16, generator=gen)
            i = torch.arange(P, device="cuda")[:, None]
            j = torch.arange(k, device="cuda")[None, :]
            rnd = (torch.rand(P, k, device="cuda", generator=gen) * (i + 1)).long()
            idx = torch.where(i < k, torch.where(j <= i, j, torch.full_like(j, -1)), rnd).to(torch.int32).view(P, 1, k)
            scale = 1.0 / math.sqrt(576)
            op(q, kv, idx, scale, 512, None, None, False, True)
            torch.cuda.synchronize()

            def fn(_j, q=q, kv=kv, idx=idx, scale=scale):
                op(q, kv, idx, scale, 512, None, None, False, True)
            st = T.time_graph(fn)
            w.writerow({"kernel": "fmla_sparse_prefill", "heads": H, "prompt": P, "topk": k,
                        "median_us": round(st["median"], 4), "p20_us": round(st["p20"], 4),
                        "p80_us": round(st["p80"], 4), "calls": st["calls"], "note": "", "device": dev, "date": date})
            f.flush()
            names = launched_kernels(lambda: fn(0))
            notes.write(f"prefill H {H} P {P} k {k}: {' | '.join(names)[:500]}\n")
            print(f"prefill H {H:3d} P {P:6d} k {k}: done", flush=True)
            del q, kv, idx
        except Exception as e:  # noqa: BLE001 - recorded, the campaign goes on
            print(f"prefill H {H} P {P}: {type(e).__name__}: {str(e)[:300]}", flush=True)
            notes.write(f"prefill H {H} P {P}: FAILED {type(e).__name__}: {str(e)[:300]}\n")
        torch.cuda.empty_cache()
    f.close()
    notes.close()
    print(f"wrote {path}", flush=True)


def prefill_rows_main(args) -> None:
    """The --prefill-rows campaign (module docstring)."""
    torch.ops.load_library(str(args.so))
    op = torch.ops.flash_mla_legacy.sparse_prefill_fwd
    keys = ("heads", "rows", "topk", "context", "shared")
    shapes = list(dict.fromkeys(tuple(int(float(r[c])) for c in keys) for r in csv.DictReader(open(args.shapes))))
    shapes = shapes[: 2 if args.smoke else None]
    dev, date, path, f, w, notes = open_outputs(args, ["kernel", *keys, "median_us", "p20_us", "p80_us", "calls",
                                                       "copies", "note", "device", "date"])
    gen = torch.Generator(device="cuda")
    gen.manual_seed(0)
    scale = 1.0 / math.sqrt(576)
    for H, R, k, N, shared in shapes:
        try:
            seqs = R if shared == 2 else 1
            pool_bytes = seqs * N * 576 * 2
            copies = max(1, min(8, math.ceil(2.5 * L2_BYTES / pool_bytes)))
            kvs = [torch.randn(seqs * N, 1, 576, device="cuda", dtype=torch.bfloat16, generator=gen)
                   for _ in range(copies)]
            q = torch.randn(R, H, 576, device="cuda", dtype=torch.bfloat16, generator=gen)
            kk = min(k, N)
            idx = torch.full((R, k), -1, dtype=torch.int32, device="cuda")
            for i in range(0, R, 64):
                n = min(64, R - i)
                pos = torch.argsort(torch.rand(n, N, device="cuda", generator=gen), dim=1)[:, :kk]
                base = (torch.arange(i, i + n, device="cuda")[:, None] * N) if shared == 2 else 0
                idx[i:i + n, :kk] = (pos + base).to(torch.int32)
            idx = idx.view(R, 1, k)
            op(q, kvs[0], idx, scale, 512, None, None, False, True)
            torch.cuda.synchronize()

            def fn(j, q=q, kvs=kvs, idx=idx, n_kv=copies):
                op(q, kvs[j % n_kv], idx, scale, 512, None, None, False, True)
            st = T.time_graph(fn)
            w.writerow({"kernel": "fmla_sparse_fwd_rows", "heads": H, "rows": R, "topk": k, "context": N,
                        "shared": shared, "median_us": round(st["median"], 4), "p20_us": round(st["p20"], 4),
                        "p80_us": round(st["p80"], 4), "calls": st["calls"], "copies": copies, "note": "",
                        "device": dev, "date": date})
            f.flush()
            names = launched_kernels(lambda fn=fn: fn(0))
            notes.write(f"rows H {H} R {R} k {k} N {N} shared {shared}: {' | '.join(names)[:500]}\n")
            print(f"rows H {H:3d} R {R:5d} N {N:6d} shared {shared}: done", flush=True)
            del kvs, q, idx
        except Exception as e:  # noqa: BLE001 - recorded, the campaign goes on
            print(f"rows H {H} R {R} N {N}: {type(e).__name__}: {str(e)[:300]}", flush=True)
            notes.write(f"rows H {H} R {R} N {N}: FAILED {type(e).__name__}: {str(e)[:300]}\n")
        torch.cuda.empty_cache()
    f.close()
    notes.close()
    print(f"wrote {path}", flush=True)


if __name__ == "__main__":
    main()
