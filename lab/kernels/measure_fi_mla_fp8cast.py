"""SGLang's flashinfer_mla backend over an fp8 (e4m3) MLA cache on Hopper, as its decode runs it (family fi_mla_fp8cast,
simulator/kernels/families.py POOL_CAST_FAMILIES): the layer's WHOLE pool cast to bf16 (`get_key_buffer(layer_id)
.to(q.dtype)`, sgl-project/sglang#35322's description of flashinfer_mla_backend.py forward_decode), then FlashInfer's
BatchMLAPagedAttentionWrapper over the cast copy, planned with bf16 q and kv dtypes, page size 1 (SGLang's token pool),
causal False, the latent and RoPE parts passed as the two strided views of the (pool, 1, 576) buffer.

Per row of the prediction CSV (`batch`, `heads`, `context`, `pool`, `cast`): `batch` requests of `context` tokens on
runs of 64 consecutive slots dealt out over a pool of `pool` tokens in a random order (measure_fa3_sparse_mla.dense_pages);
cast 1 = the pool in e4m3, cast then run (kernel `fi_mla_fp8cast`); cast 0 = the same call over a bf16 pool, no cast
(`fi_mla_bf16pool`, the control: the MLA kernel alone in this harness). Pools rotated through copies past the L2 where
small (the kernel name as is) and one pool (`_warm`), timed in CUDA graphs (measure_fa3_sparse_mla.record, _timing.
time_graph), FlashInfer's wrapper created with use_cuda_graph and planned once before the capture, as SGLang's decode
graph replays it. Output of request 0 checked against a reference over the dequantized pool on the first rows.

A prediction with an `s_q` column (keys `batch`, `s_q`, `context`, `heads`, `pool`, `cast`) times SGLang's extend over
a cached prefix instead (the paged branch of forward_extend: the same wrapper planned causal, s_q new rows a request
over `context` keys, the last s_q of them the new tokens'), after the same cast where cast 1; the reference checks
request 0's last row.

    python3 measure_fi_mla_fp8cast.py --out DIR --shapes PREDICTION.csv [--tag TAG] [--smoke]

CSV: DIR/fi_mla_fp8cast_<device>_<date>_<tag>.csv (+ _notes.txt with each shape's launched kernels).
"""
from __future__ import annotations

import argparse
import csv
import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure_fa3_sparse_mla import (  # noqa: E402
    DIM,
    DR,
    DV,
    L2_BYTES,
    close_outputs,
    dense_pages,
    launched_kernels,
    open_outputs,
    record,
)

KEYS = ("batch", "heads", "context", "pool", "cast")
EXTEND_KEYS = ("batch", "s_q", "context", "heads", "pool", "cast")
WORKSPACE_BYTES = 128 << 20   # FlashInfer's float workspace, as SGLang sizes it (global_config.flashinfer_workspace_size)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--shapes", type=Path, required=True)
    ap.add_argument("--tag", default="grid1")
    ap.add_argument("--smoke", action="store_true")
    args = ap.parse_args()
    args.spans, args.pkg = False, "flashinfer"
    import flashinfer as fi

    rows = list(csv.DictReader(open(args.shapes)))
    keys = EXTEND_KEYS if rows and "s_q" in rows[0] else KEYS
    shapes = list(dict.fromkeys(tuple(int(float(r[c])) for c in keys) for r in rows))[: 2 if args.smoke else None]
    dev, date, stem, f, w, notes, sf, sw = open_outputs(args, "fi_mla_fp8cast", list(keys))
    notes.write(f"flashinfer {fi.__version__}\n")
    gen = torch.Generator(device="cuda")
    gen.manual_seed(0)
    ws = torch.empty(WORKSPACE_BYTES, dtype=torch.uint8, device="cuda")
    scale = 1.0 / math.sqrt(192.0)
    print(f"{len(shapes)} shapes from {args.shapes.name}; flashinfer {fi.__version__}", flush=True)
    for i, key in enumerate(shapes):
        d = dict(zip(keys, key))
        B, H, ctx, pool, cast, sq = d["batch"], d["heads"], d["context"], d["pool"], d["cast"], d.get("s_q", 1)
        try:
            elem = 1 if cast else 2
            copies = max(1, min(8, math.ceil(2.5 * L2_BYTES / (pool * DIM * elem))))
            dtype = torch.float8_e4m3fn if cast else torch.bfloat16
            pools = [torch.randn(pool, 1, DIM, device="cuda", generator=gen).to(dtype) for _ in range(copies)]
            pt, slots = dense_pages(B, ctx, 1, gen)
            assert slots <= pool, f"{B} x {ctx} tokens do not fit a pool of {pool}"
            kv_indices = pt.reshape(-1).contiguous()
            kv_indptr = torch.arange(0, B + 1, device="cuda", dtype=torch.int32) * ctx
            qo_indptr = torch.arange(0, B + 1, device="cuda", dtype=torch.int32) * sq
            kv_lens = torch.full((B,), ctx, device="cuda", dtype=torch.int32)
            wrap = fi.mla.BatchMLAPagedAttentionWrapper(ws, use_cuda_graph=True, qo_indptr=qo_indptr,
                                                        kv_indptr=kv_indptr, kv_indices=kv_indices,
                                                        kv_len_arr=kv_lens, backend="auto")
            wrap.plan(qo_indptr, kv_indptr, kv_indices, kv_lens, H, DV, DR, 1, sq > 1, scale, torch.bfloat16,
                      torch.bfloat16)
            q_nope = torch.randn(B * sq, H, DV, device="cuda", dtype=torch.bfloat16, generator=gen)
            q_pe = torch.randn(B * sq, H, DR, device="cuda", dtype=torch.bfloat16, generator=gen)
            out = torch.empty_like(q_nope)

            def call(j, n_kv=copies, pools=pools, wrap=wrap, q_nope=q_nope, q_pe=q_pe, out=out, cast=cast):
                kv = pools[j % n_kv].to(torch.bfloat16) if cast else pools[j % n_kv]   # SGLang: .to(q.dtype)
                wrap.run(q_nope, q_pe, kv[:, :, :DV], kv[:, :, DV:], out=out)
                return out

            note = ""
            if i < 3:   # request 0's last row against a reference over the (dequantized) pool (it sees every key)
                o = call(0)
                slot = pt[0].long()[:ctx]
                kvr = pools[0].view(-1, DIM)[slot].float()
                r0 = sq - 1
                logits = (q_nope[r0].float() @ kvr[:, :DV].T + q_pe[r0].float() @ kvr[:, DV:].T) * scale
                ref = torch.softmax(logits, dim=-1) @ kvr[:, :DV]
                err = float((o[r0].float() - ref).abs().max() / ref.abs().max().clamp(min=1e-6))
                note = f"max rel err {err:.3g}" + (" WRONG" if err > 0.05 else "")
            kernel = "fi_mla_fp8cast" if cast else "fi_mla_bf16pool"
            record((f, w, sf, sw), kernel, d, call, copies, note, dev, date)
            names = launched_kernels(lambda call=call: call(0))
            notes.write(f"{d}: {' | '.join(names)[:700]}\n")
            print(f"B {B:4d} s_q {sq:5d} H {H:3d} ctx {ctx:6d} pool {pool:8d} cast {cast}: done {note}", flush=True)
            del pools, wrap
        except Exception as e:  # noqa: BLE001 - recorded, the campaign goes on
            print(f"{key}: {type(e).__name__}: {str(e)[:300]}", flush=True)
            notes.write(f"{key}: FAILED {type(e).__name__}: {str(e)[:300]}\n")
        torch.cuda.empty_cache()
    close_outputs(f, notes, sf, stem)


if __name__ == "__main__":
    main()
