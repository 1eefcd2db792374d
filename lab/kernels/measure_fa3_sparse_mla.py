"""FlashAttention-3's MLA-absorbed decode over top-k pages of one token: the kernel SGLang runs for DeepSeek-V3.2's
DSA attention over a bf16 KV cache on Hopper (its default there: server_args _set_default_nsa_kv_cache_dtype gives
bfloat16 on SM90, _set_default_nsa_backends nsa_decode_backend "fa3"; nsa_backend.py _forward_fa3 @ sglang
0.5.10.post1, dsa_backend.py in later versions):

    flash_attn_with_kvcache(q=q_rope (N, H, 64), k_cache=pool[:, :, 512:] viewed (slots, 1, 1, 64),
        v_cache=pool[:, :, :512] viewed (slots, 1, 1, 512), qv=q_nope (N, H, 512), page_table (N, 2048) int32 slot
        indices, cache_seqlens = min(seq_len, 2048), cu_seqlens_q = arange(N + 1), max_seqlen_q = 1,
        softmax_scale, causal=True (FA3 drops it at one query row), num_splits=0)

every decode / verify / draft-extend row its own request of one row (N rows), the pool one layer's tokens of 576 bf16
values (512 latent + 64 RoPE; K and V strided views of it, no copy). page_table: a row whose sequence has at most 2048
tokens lists its slots in order (fast_topk_transform_fused: `i < length ? src_page_table[i] : -1`); a longer one 2048 of
its slots in no order (the indexer's picks). The FA3 build is flash-attention hopper/ @ 0251105a (lab/kernels/
build_fa3_binary.py --mla-decode: the bf16 hdim 64 x 512 instantiations; SGLang's sgl-kernel compiles the same
instantiations from its fork sgl-project/sgl-attn).

Per shape (the prediction CSV's rows `rows`, `heads`, `topk`, `context`, `num_splits`, and `s_q`, `overlap` where
present): rows / s_q sequences of `context` tokens on pages of 64 slots dealt out over the pool in a random order
(SGLang's pool page size is 64), s_q consecutive rows a sequence (page_table_for: an MTP verification's rows, each
keeping `overlap` of the previous row's keys); the
pool rotated through copies past the L2 (`fa3_sparse_mla`: a layer's cache not read since its last step) and one pool
(`fa3_sparse_mla_warm`). Timed in CUDA graphs (_timing.time_graph). --spans: each shape's kernels one by one (24 eager
calls under torch.profiler: medians of each kernel's duration and of the call's span). Output checked against a dense
reference on the first shapes.

--dense: the same kernel over a DENSE MLA cache, as SGLang's fa3 backend (its default for DeepSeek-V3 / R1 on Hopper:
page_size 1, num_splits 0) and vLLM's FLASH_ATTN_MLA (its default on SM90 with a bf16 cache: block 16, num_splits 32
under CUDA graphs, scheduler metadata computed once a step) call it for decode and verification: the prediction's
`batch`, `s_q`, `heads`, `context`, `page`, `num_splits`, `sched` (1: get_scheduler_metadata once, outside the timed
call, so the call launches no prepare kernel); each request's `context` tokens on runs of max(page, 64) consecutive
slots dealt out over the pool in a random order, the page table its pages in order (slot // page), cache_seqlens the
context, q of s_q rows a request (cu_seqlens_q, max_seqlen_q = s_q, causal: the verification's rows). Kernels
`fa3_mla_dense` (pool rotated past the L2) and `fa3_mla_dense_warm`.

--fp8pool: SGLang's fa3 backend over an fp8 (e4m3) MLA cache (forward_decode: `get_key_buffer(layer_id).to(q.dtype)`,
the layer's WHOLE pool cast to bf16, then the bf16 qv call over the cast copy; page 1, num_splits 0): the prediction's
`batch`, `heads`, `context`, `pool` (tokens of the pool, (pool, 1, 576) e4m3); batch 0 = the cast alone. Kernels
`fa3_mla_fp8cast` (pools rotated past the L2 where small) and `fa3_mla_fp8cast_warm`. A prediction with an `s_q` column
prices prompt rows too: s_q new tokens a request after context - s_q cached ones, causal (SGLang's absorbed extend inside
its prefill CUDA graph, which reads the same whole-pool cast).

--gqa (with --dense): the GQA decode / verification call vLLM's FLASH_ATTN makes (FA3's hdim 128 build,
build_fa3_binary.py without --mla*): q (batch x s_q, heads, 128), separate K and V pools of (pages, page, kv_heads, 128),
the same page tables and timing; the prediction adds `kv_heads`, and may add `kv_bytes` (1: q, K and V in float8_e4m3fn,
FA3's fp8 forward, as vLLM's FLASH_ATTN calls it over an fp8 cache; 2 or absent: bf16). Kernels `fa3_gqa_call` and
`fa3_gqa_call_warm`.
--cold (with --dense): the engine's state as lab/kernels/measure_attention_cold.py times it: enough K/V pool copies to
span >= COLD_BYTES (128 MiB) with NO cap on their count (the rotation otherwise stops at 8 copies, so a short call's
copies can stay in the 50 MB L2), and the cold kernel's graph captures a whole multiple of the copies (>= 64 calls),
so every call reads a pool last touched >= 128 MiB of K/V earlier, from HBM, while the page table, scheduler metadata,
Q and output stay warm, as an engine step's layers share them. The `_warm` row (one pool) is timed as before.

    python3 measure_fa3_sparse_mla.py --pkg FA3_PKG --out DIR --shapes PREDICTION.csv [--tag TAG] [--smoke] [--spans]
        [--dense [--gqa] [--cold] | --fp8pool]

CSV: DIR/fa3_sparse_mla_<device>_<date>_<tag>.csv (+ _spans.csv, _notes.txt).
"""
from __future__ import annotations

import argparse
import csv
import datetime as dt
import math
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _timing as T  # noqa: E402
from measure_production_kernels import launched_kernels  # noqa: E402

SCRIPT_VERSION = 7   # 2: s_q / overlap (an MTP verification's flattened rows); 3: --dense; 4: --gqa; 5: spans' tail_us;
#                      6: --fp8pool; 7: its prompt rows (s_q)
PAGE = 64
DIM, DV, DR = 576, 512, 64
L2_BYTES = 50 * (1 << 20)
#: --cold: the bytes the rotated K/V pool copies span at least (measure_attention_cold.py's COLD_BYTES)
COLD_BYTES = 128 << 20
SPAN_CALLS = 24


def shapes_of(path: Path) -> list[dict]:
    """The distinct (rows, heads, topk, context, num_splits, s_q, overlap) of a prediction CSV, in its order (s_q 1 and
    overlap 0 where the CSV has no such column)."""
    keys = ("rows", "heads", "topk", "context", "num_splits")
    out = []
    for r in csv.DictReader(open(path)):
        k = tuple(int(float(r.get(c) or 0)) for c in keys) + (int(float(r.get("s_q") or 1)),
                                                               float(r.get("overlap") or 0.0))
        if k not in out:
            out.append(k)
    return [dict(zip(keys + ("s_q", "overlap"), k)) for k in out]


def page_table_for(N: int, k: int, ctx: int, gen, s_q: int = 1, overlap: float = 0.0
                   ) -> tuple[torch.Tensor, torch.Tensor, int]:
    """(page_table (N, k) int32, cache_seqlens (N,) int32, pool slots): N / s_q requests, each a sequence of ctx tokens
    on its own ceil(ctx / 64) pages, dealt out over the pool in a random order, and s_q consecutive rows (an MTP
    verification's rows, flattened as SGLang passes them); ctx <= k: the sequence's slots in order then -1; else k
    distinct random positions of the sequence, in no order, each row after a request's first keeping round(overlap x k)
    of the previous row's positions (a random subset) and drawing the rest from those it left out."""
    R = N // s_q
    P = -(-ctx // PAGE)
    perm = torch.randperm(R * P, device="cuda", generator=gen).view(R, P)
    pt = torch.full((N, k), -1, dtype=torch.int32, device="cuda")
    req = torch.arange(N, device="cuda") // s_q
    if ctx <= k:
        pos = torch.arange(ctx, device="cuda")[None, :].expand(N, ctx)
    elif s_q == 1 or overlap <= 0.0:
        pos = torch.cat([torch.argsort(torch.rand(min(64, N - i), ctx, device="cuda", generator=gen), dim=1)[:, :k]
                         for i in range(0, N, 64)])
    else:
        keep = int(round(overlap * k))
        rows = []
        for _ in range(R):
            prev = None
            for _s in range(s_q):
                if prev is None:
                    cur = torch.randperm(ctx, device="cuda", generator=gen)[:k]
                else:
                    kept = prev[torch.randperm(k, device="cuda", generator=gen)[:keep]]
                    free = torch.ones(ctx, dtype=torch.bool, device="cuda")
                    free[prev] = False
                    cand = free.nonzero().squeeze(1)
                    new = cand[torch.randperm(cand.numel(), device="cuda", generator=gen)[:k - keep]]
                    cur = torch.cat([kept, new])[torch.randperm(k, device="cuda", generator=gen)]
                rows.append(cur)
                prev = cur
        pos = torch.stack(rows)
    pt[:, :min(ctx, k)] = (perm[req][torch.arange(N, device="cuda")[:, None], pos // PAGE] * PAGE
                           + pos % PAGE).to(torch.int32)
    seqlens = torch.full((N,), min(ctx, k), dtype=torch.int32, device="cuda")
    return pt, seqlens, R * P * PAGE


def kernel_spans(fn, calls: int = SPAN_CALLS) -> dict:
    """Medians over `calls` eager fn(j) calls of each launched kernel's duration (keyed by a short name), of the call's
    span (first kernel's start to last kernel's end) and of its tail (the last kernel's end past the main kernel's end:
    what of a PDL-launched combine the main kernel does not hide), us."""
    ev = T.profiled_kernels(fn, calls)
    per = max(len(ev) // calls, 1)

    def short(n):
        return ("prepare" if "prepare" in n else "combine" if "ombine" in n else "main" if "Flash" in n or "flash" in n
                else n[:24])
    names = [short(e["name"]) for e in ev[:per]]
    durs = {n: [] for n in names}
    span, tail = [], []
    for c in range(calls):
        grp = ev[c * per:(c + 1) * per]
        for e, n in zip(grp, names):
            durs[n].append(float(e["dur"]))
        if grp:
            end = max(float(e["ts"]) + float(e["dur"]) for e in grp)
            span.append(end - float(grp[0]["ts"]))
            mains = [float(e["ts"]) + float(e["dur"]) for e, n in zip(grp, names) if n == "main"]
            if mains:   # the call's time past its main kernel's end: the combine's exposed tail under PDL
                tail.append(end - max(mains))
    out = {f"{n}_us": round(statistics.median(v), 3) for n, v in durs.items() if v}
    med = (lambda v: round(statistics.median(v), 3) if v else float("nan"))
    return out | {"span_us": med(span), "tail_us": med(tail), "kernels": "+".join(names)}


def open_outputs(args, prefix: str, keys: list):
    """(device, date, stem, CSV file, its writer, notes file, spans file or None, its writer or None) of a campaign:
    DIR/<prefix>_<device>_<date>_<tag>.csv with `keys` and the timing columns, _notes.txt opened with the script and
    library, and with --spans _spans.csv (the keys and each kernel's median duration)."""
    dev = torch.cuda.get_device_name(0)
    date = dt.date.today().isoformat()
    slug = dev.lower().replace("nvidia ", "nvidia-").replace(" ", "-")
    args.out.mkdir(parents=True, exist_ok=True)
    stem = f"{prefix}_{slug}_{date}_{args.tag}"
    f = open(args.out / f"{stem}.csv", "w", newline="")
    w = csv.DictWriter(f, fieldnames=["kernel", *keys, "median_us", "p20_us", "p80_us", "calls", "copies", "note",
                                      "device", "date"])
    w.writeheader()
    notes = open(args.out / f"{stem}_notes.txt", "w")
    notes.write(f"script {SCRIPT_VERSION}; torch {torch.__version__} cuda {torch.version.cuda}; {dev}; pkg {args.pkg}\n")
    sf = sw = None
    if args.spans:
        sf = open(args.out / f"{stem}_spans.csv", "w", newline="")
        sw = csv.DictWriter(sf, fieldnames=[*keys, "prepare_us", "main_us", "combine_us", "span_us", "tail_us", "kernels",
                                            "device", "date"], extrasaction="ignore")
        sw.writeheader()
    return dev, date, stem, f, w, notes, sf, sw


def record(files, kernel: str, row: dict, call, copies: int, note: str, dev: str, date: str,
           whole_copies: bool = False) -> None:
    """Time one shape's call(j, n_kv) in CUDA graphs over its `copies` rotated pools (`kernel`) and over one pool
    (`kernel`_warm), a CSV row each with the shape's `row` columns; with --spans (the spans writer in `files`) its
    kernels one by one too. files: (CSV file, its writer, spans file, its writer) from open_outputs. whole_copies
    (--cold): the rotated graph holds the smallest multiple of the copies that is >= 64 calls."""
    f, w, sf, sw = files
    for kern, n_kv in ((kernel, copies), (kernel + "_warm", 1)):
        if whole_copies and n_kv > 1:
            n = int(n_kv * max(1, math.ceil(64 / n_kv)))
            st = T.time_graph(lambda j, n_kv=n_kv: call(j, n_kv), target_us=1e12, max_calls=n)
        else:
            st = T.time_graph(lambda j, n_kv=n_kv: call(j, n_kv))
        w.writerow(row | {"kernel": kern, "median_us": round(st["median"], 4), "p20_us": round(st["p20"], 4),
                          "p80_us": round(st["p80"], 4), "calls": st["calls"], "copies": n_kv, "note": note,
                          "device": dev, "date": date})
        f.flush()
    if sw is not None:
        sw.writerow(row | kernel_spans(lambda j: call(j)) | {"device": dev, "date": date})
        sf.flush()


def close_outputs(f, notes, sf, stem: str) -> None:
    """Close a campaign's files (open_outputs) and say where its CSV went."""
    for x in (f, notes, sf):
        if x is not None:
            x.close()
    print(f"wrote {stem}.csv", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pkg", required=True, type=Path, help="folder holding flash_attn_interface.py, flash_attn_3/")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--shapes", required=True, type=Path)
    ap.add_argument("--tag", default="grid1")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--spans", action="store_true")
    ap.add_argument("--dense", action="store_true", help="a dense MLA cache (module docstring)")
    ap.add_argument("--gqa", action="store_true", help="with --dense: vLLM's GQA call (module docstring)")
    ap.add_argument("--cold", action="store_true", help="with --dense: K/V copies spanning >= 128 MiB, no cap")
    ap.add_argument("--fp8pool", action="store_true", help="SGLang's call over an fp8 pool (module docstring)")
    args = ap.parse_args()
    sys.path.insert(0, str(args.pkg))
    if args.fp8pool:
        fp8pool_main(args)
        return
    if args.dense:
        return dense_main(args)
    from flash_attn_interface import flash_attn_with_kvcache

    shapes = shapes_of(args.shapes)[: 3 if args.smoke else None]
    keys = ["rows", "heads", "topk", "context", "num_splits", "s_q", "overlap"]
    dev, date, stem, f, w, notes, sf, sw = open_outputs(args, "fa3_sparse_mla", keys)
    gen = torch.Generator(device="cuda")
    gen.manual_seed(0)
    print(f"{len(shapes)} shapes from {args.shapes.name}", flush=True)
    for i, s in enumerate(shapes):
        N, H, k, ctx, ns = s["rows"], s["heads"], s["topk"], s["context"], s["num_splits"]
        sq, ov = s["s_q"], s["overlap"]
        try:
            pt, seqlens, slots = page_table_for(N, k, ctx, gen, sq, ov)
            pool_bytes = slots * DIM * 2
            copies = max(1, min(8, math.ceil(2.5 * L2_BYTES / pool_bytes)))
            pools = [torch.randn(slots, 1, DIM, device="cuda", dtype=torch.bfloat16, generator=gen)
                     for _ in range(copies)]
            kc = [p[:, :, DV:].view(-1, 1, 1, DR) for p in pools]
            vc = [p[:, :, :DV].view(-1, 1, 1, DV) for p in pools]
            q = torch.randn(N, H, DR, device="cuda", dtype=torch.bfloat16, generator=gen)
            qv = torch.randn(N, H, DV, device="cuda", dtype=torch.bfloat16, generator=gen)
            cu = torch.arange(N + 1, dtype=torch.int32, device="cuda")
            scale = 1.0 / math.sqrt(192.0)

            def call(j, n_kv=copies, q=q, kc=kc, vc=vc, qv=qv, pt=pt, seqlens=seqlens, cu=cu, ns=ns):
                return flash_attn_with_kvcache(q=q, k_cache=kc[j % n_kv], v_cache=vc[j % n_kv], qv=qv, page_table=pt,
                                               cache_seqlens=seqlens, cu_seqlens_q=cu, max_seqlen_q=1,
                                               softmax_scale=scale, causal=True, num_splits=ns)
            out = call(0)
            torch.cuda.synchronize()
            note = ""
            if i < 3:
                ix = pt[0][pt[0] >= 0].long()
                rows = pools[0].view(-1, DIM)[ix].float()
                logits = (q[0].float() @ rows[:, DV:].T + qv[0].float() @ rows[:, :DV].T) * scale
                ref = torch.softmax(logits, dim=-1) @ rows[:, :DV]
                o = out[0] if isinstance(out, tuple) else out
                err = float((o[0].float() - ref).abs().max() / ref.abs().max().clamp(min=1e-6))
                note = f"max rel err {err:.3g}" + (" WRONG" if err > 0.05 else "")
            record((f, w, sf, sw), "fa3_sparse_mla", {"rows": N, "heads": H, "topk": k, "context": ctx,
                                                      "num_splits": ns, "s_q": sq, "overlap": ov},
                   call, copies, note, dev, date)
            if i < 40 or i % 5 == 0:
                names = launched_kernels(lambda call=call: call(0))
                notes.write(f"N {N} H {H} k {k} ctx {ctx} ns {ns}: {' | '.join(names)[:700]}\n")
            print(f"N {N:5d} H {H:3d} k {k} ctx {ctx:6d} ns {ns} s_q {sq} overlap {ov}: done {note}", flush=True)
            del pools, kc, vc, q, qv, pt
        except Exception as e:  # noqa: BLE001 - recorded, the campaign goes on
            print(f"N {N} H {H} ctx {ctx}: {type(e).__name__}: {str(e)[:300]}", flush=True)
            notes.write(f"N {N} H {H} ctx {ctx} ns {ns}: FAILED {type(e).__name__}: {str(e)[:300]}\n")
        torch.cuda.empty_cache()
    close_outputs(f, notes, sf, stem)


DENSE_KEYS = ("batch", "s_q", "heads", "context", "page", "num_splits", "sched")


def dense_pages(B: int, ctx: int, page: int, gen) -> tuple[torch.Tensor, int]:
    """(page_table (B, ceil(ctx / page)) int32 of page indices, pool slots): each request's ctx tokens on runs of
    max(page, 64) consecutive slots dealt out over the pool in a random order."""
    run = max(page, 64)
    R = -(-ctx // run)
    perm = torch.randperm(B * R, device="cuda", generator=gen).view(B, R)
    pos = torch.arange(0, ctx, page, device="cuda")
    slots = perm[:, pos // run] * run + (pos % run)[None, :]
    return (slots // page).to(torch.int32), B * R * run


POOL_KEYS = ("batch", "heads", "context", "pool")
#: an fp8-pool prediction's extra key: s_q query rows a request (absent or 1: decode; above: SGLang's absorbed extend of
#: s_q new tokens after context - s_q cached ones, causal, as its prefill CUDA graph runs it)
POOL_ROWS = "s_q"


def fp8pool_main(args) -> None:
    """The --fp8pool campaign (module docstring)."""
    from flash_attn_interface import flash_attn_with_kvcache

    rows_ = list(csv.DictReader(open(args.shapes)))
    keys = POOL_KEYS + ((POOL_ROWS,) if rows_ and POOL_ROWS in rows_[0] else ())
    shapes = list(dict.fromkeys(tuple(int(float(r.get(c) or 0)) for c in keys) for r in rows_))[
        : 3 if args.smoke else None]
    dev, date, stem, f, w, notes, sf, sw = open_outputs(args, "fa3_mla_fp8cast", list(keys))
    gen = torch.Generator(device="cuda")
    gen.manual_seed(0)
    print(f"{len(shapes)} fp8-pool shapes from {args.shapes.name}", flush=True)
    scale = 1.0 / math.sqrt(192.0)
    for i, key in enumerate(shapes):
        B, H, ctx, pool = key[:4]
        sq = max(key[4], 1) if len(key) > 4 else 1
        try:
            copies = max(1, min(8, math.ceil(2.5 * L2_BYTES / (pool * DIM))))
            pools = [torch.randn(pool, 1, DIM, device="cuda", generator=gen).to(torch.float8_e4m3fn)
                     for _ in range(copies)]
            note = ""
            if B == 0:
                def call(j, n_kv=copies, pools=pools):
                    return pools[j % n_kv].to(torch.bfloat16)
            else:
                pt, slots = dense_pages(B, ctx, 1, gen)
                assert slots <= pool, f"{B} x {ctx} tokens do not fit a pool of {pool}"
                q = torch.randn(B * sq, H, DR, device="cuda", dtype=torch.bfloat16, generator=gen)
                qv = torch.randn(B * sq, H, DV, device="cuda", dtype=torch.bfloat16, generator=gen)
                cu = torch.arange(0, B * sq + 1, sq, dtype=torch.int32, device="cuda")
                seqlens = torch.full((B,), ctx, dtype=torch.int32, device="cuda")

                def call(j, n_kv=copies, pools=pools, q=q, qv=qv, pt=pt, seqlens=seqlens, cu=cu, sq=sq):
                    kv = pools[j % n_kv].to(torch.bfloat16)          # SGLang: get_key_buffer(layer_id).to(q.dtype)
                    return flash_attn_with_kvcache(q=q, k_cache=kv[:, :, DV:].view(-1, 1, 1, DR),
                                                   v_cache=kv[:, :, :DV].view(-1, 1, 1, DV), qv=qv, page_table=pt,
                                                   cache_seqlens=seqlens, cu_seqlens_q=cu, max_seqlen_q=sq,
                                                   softmax_scale=scale, causal=True, num_splits=0)
                if i < 3 and sq == 1:   # request 0 against a reference over the dequantized pool
                    out = call(0)
                    o = out[0] if isinstance(out, tuple) else out
                    slot = pt[0].long()[:ctx]
                    rows = pools[0].view(-1, DIM)[slot].float()
                    logits = (q[0].float() @ rows[:, DV:].T + qv[0].float() @ rows[:, :DV].T) * scale
                    ref = torch.softmax(logits, dim=-1) @ rows[:, :DV]
                    err = float((o[0].float() - ref).abs().max() / ref.abs().max().clamp(min=1e-6))
                    note = f"max rel err {err:.3g}" + (" WRONG" if err > 0.05 else "")
            record((f, w, sf, sw), "fa3_mla_fp8cast", dict(zip(keys, key)), call, copies, note, dev, date)
            names = launched_kernels(lambda call=call: call(0))
            notes.write(f"{dict(zip(keys, key))}: {' | '.join(names)[:700]}\n")
            print(f"B {B:4d} s_q {sq} H {H:3d} ctx {ctx:6d} pool {pool:8d}: done {note}", flush=True)
            del pools
        except Exception as e:  # noqa: BLE001 - recorded, the campaign goes on
            print(f"{key}: {type(e).__name__}: {str(e)[:300]}", flush=True)
            notes.write(f"{key}: FAILED {type(e).__name__}: {str(e)[:300]}\n")
        torch.cuda.empty_cache()
    close_outputs(f, notes, sf, stem)


def dense_main(args) -> None:
    """The --dense campaign (module docstring)."""
    from flash_attn_interface import flash_attn_with_kvcache, get_scheduler_metadata

    rows_ = list(csv.DictReader(open(args.shapes)))
    keys = DENSE_KEYS + (("kv_heads",) if args.gqa else ()) + (("kv_bytes",) if args.gqa and rows_ and "kv_bytes" in rows_[0]
                                                               else ())
    shapes = list(dict.fromkeys(tuple(int(float(r.get(c) or 0)) for c in keys) for r in rows_))[: 3 if args.smoke else None]
    gqa = bool(args.gqa)
    d_qk, d_v = (128, 128) if gqa else (DR, DV)
    dev, date, stem, f, w, notes, sf, sw = open_outputs(args, "fa3_gqa_call" if gqa else "fa3_mla_dense", list(keys))
    gen = torch.Generator(device="cuda")
    gen.manual_seed(0)
    print(f"{len(shapes)} dense shapes from {args.shapes.name}", flush=True)
    scale = 1.0 / math.sqrt(192.0)
    for i, key in enumerate(shapes):
        B, sq, H, ctx, page, ns, sched = key[:7]
        Hk = key[7] if gqa else 1
        # --gqa with a kv_bytes column: 1 = fp8 (e4m3) q, K and V, as vLLM's FA3 call over an fp8 cache takes them
        fp8 = gqa and len(key) > 8 and key[8] == 1
        tdt = torch.float8_e4m3fn if fp8 else torch.bfloat16
        try:
            pt, slots = dense_pages(B, ctx, page, gen)
            row = Hk * (d_qk + d_v) if gqa else DIM
            eb = 1 if fp8 else 2
            copies = max(1, min(8, math.ceil(2.5 * L2_BYTES / (slots * row * eb))))
            if args.cold:   # the engine's state (module docstring, --cold)
                copies = max(2, math.ceil(COLD_BYTES / (slots * row * eb)))
            if gqa:   # separate K and V pools, as vLLM's cache holds them
                pools = [torch.randn(2, slots, Hk, d_qk, device="cuda", dtype=torch.bfloat16, generator=gen).to(tdt)
                         for _ in range(copies)]
                kc = [p[0].view(-1, page, Hk, d_qk) for p in pools]
                vc = [p[1].view(-1, page, Hk, d_v) for p in pools]
                qv = None
            else:
                pools = [torch.randn(slots, 1, DIM, device="cuda", dtype=torch.bfloat16, generator=gen)
                         for _ in range(copies)]
                kc = [p[:, :, DV:].view(-1, page, 1, DR) for p in pools]
                vc = [p[:, :, :DV].view(-1, page, 1, DV) for p in pools]
                qv = torch.randn(B * sq, H, DV, device="cuda", dtype=torch.bfloat16, generator=gen)
            q = torch.randn(B * sq, H, d_qk, device="cuda", dtype=torch.bfloat16, generator=gen).to(tdt)
            cu = torch.arange(0, B * sq + 1, sq, dtype=torch.int32, device="cuda")
            seqlens = torch.full((B,), ctx, dtype=torch.int32, device="cuda")
            meta = None
            if sched:
                meta = get_scheduler_metadata(B, sq, ctx, H, Hk, d_qk, seqlens, tdt, headdim_v=d_v,
                                              cu_seqlens_q=cu, page_size=page, causal=True, num_splits=ns)

            def call(j, n_kv=copies, q=q, kc=kc, vc=vc, qv=qv, pt=pt, seqlens=seqlens, cu=cu, ns=ns, meta=meta, sq=sq):
                return flash_attn_with_kvcache(q=q, k_cache=kc[j % n_kv], v_cache=vc[j % n_kv], qv=qv, page_table=pt,
                                               cache_seqlens=seqlens, cu_seqlens_q=cu, max_seqlen_q=sq,
                                               softmax_scale=scale, causal=True, num_splits=ns,
                                               scheduler_metadata=meta)
            out = call(0)
            torch.cuda.synchronize()
            note = ""
            if i < 3:   # request 0's last row against a dense reference over its whole context
                slot = (pt[0].long()[:, None] * page + torch.arange(page, device="cuda")[None, :]).reshape(-1)[:ctx]
                r = sq - 1
                o = out[0] if isinstance(out, tuple) else out
                if gqa:   # query head 0 against KV head 0
                    kk, vv = pools[0][0][slot, 0].float(), pools[0][1][slot, 0].float()
                    ref = torch.softmax((q[r, 0].float() @ kk.T) * scale, dim=-1) @ vv
                    got = o[r, 0].float()
                else:
                    rows = pools[0].view(-1, DIM)[slot].float()
                    logits = (q[r].float() @ rows[:, DV:].T + qv[r].float() @ rows[:, :DV].T) * scale
                    ref = torch.softmax(logits, dim=-1) @ rows[:, :DV]
                    got = o[r].float()
                err = float((got - ref).abs().max() / ref.abs().max().clamp(min=1e-6))
                note = f"max rel err {err:.3g}" + (" WRONG" if err > 0.05 else "")
            record((f, w, sf, sw), "fa3_gqa_call" if gqa else "fa3_mla_dense", dict(zip(keys, key)), call, copies,
                   note, dev, date, whole_copies=bool(args.cold))
            names = launched_kernels(lambda call=call: call(0))
            notes.write(f"{dict(zip(keys, key))}: {' | '.join(names)[:700]}\n")
            print(f"B {B:4d} s_q {sq} H {H:3d}/{Hk} ctx {ctx:6d} page {page} ns {ns} sched {sched}: done {note}",
                  flush=True)
            del pools, kc, vc, q, qv, pt
        except Exception as e:  # noqa: BLE001 - recorded, the campaign goes on
            print(f"{key}: {type(e).__name__}: {str(e)[:300]}", flush=True)
            notes.write(f"{key}: FAILED {type(e).__name__}: {str(e)[:300]}\n")
        torch.cuda.empty_cache()
    close_outputs(f, notes, sf, stem)


if __name__ == "__main__":
    main()
