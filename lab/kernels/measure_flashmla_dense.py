"""FlashMLA's DENSE MLA decode on one Hopper GPU over an fp8 cache, the kernel vLLM runs for DeepSeek-V3 / R1 with
kv_cache_dtype fp8 on SM90 (its FLASHMLA backend: vllm/v1/attention/backends/mla/flashmla.py @ 0.33.0 calls
flash_mla_with_kvcache_fp8 -> vllm-project/FlashMLA's csrc/extension/sm90/dense_fp8, the fp8 kernel of deepseek-ai/
FlashMLA PR #54: fp8 e4m3 q and cache, a per-tensor descale each, pages of 64, its own split scheduler
get_mla_decoding_metadata_dense_fp8), and over a bf16 cache (the legacy dense_decode_fwd: what the `flashmla` family's
terms were fitted on) as the control. Both from sgl_flash_mla 1.0.0's _C_legacy extension alone (torch.ops.
flash_mla_legacy.fwd_kvcache_mla_fp8 / dense_decode_fwd; its dense fp8 kernel is the same PR #54 kernel: the wheel's
flash_mla_interface.py routes SGLang's fp8 dense calls there).

Per shape (the prediction's `batch`, `s_q`, `heads`, `context`, `kv`: fp8 | bf16): q (B, s_q, H, 576) of the cache's
dtype; each sequence's N tokens on its own pages of 64 in a pool of B x ceil(N / 64) pages dealt out in a random order
(block_table (B, pages)); the scheduler metadata made once (as an engine makes it once a step) and reused; timed in CUDA
graphs (_timing.time_graph): `fmla_dense` with the pool rotated through copies past the L2 (the engine's state),
`fmla_dense_warm` on one pool. Output checked against a reference on the first shapes.

    python3 measure_flashmla_dense.py --out DIR --so LEGACY_SO --shapes PREDICTION.csv [--tag TAG] [--smoke] [--spans]

--spans: each shape's kernels one by one too (measure_fa3_sparse_mla.kernel_spans: 24 eager calls over the rotated
pools under torch.profiler; medians of the split kernel's and the combine's durations, the call's span and its tail past
the split kernel's end), DIR/flashmla_dense_<device>_<date>_<tag>_spans.csv.

CSV: DIR/flashmla_dense_<device>_<date>_<tag>.csv (+ _notes.txt).
"""
from __future__ import annotations

import argparse
import csv
import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure_fa3_sparse_mla import close_outputs, open_outputs, record  # noqa: E402
from measure_production_kernels import launched_kernels  # noqa: E402

SCRIPT_VERSION = 3   # 2: --spans; 3: the FA3 campaign's output helpers (same columns)
PAGE = 64
DIM, DV = 576, 512
L2_BYTES = 50 * (1 << 20)
KEYS = ("batch", "s_q", "heads", "context", "kv")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--so", required=True, type=Path, help="sgl_flash_mla 1.0.0's _C_legacy.abi3.so")
    ap.add_argument("--shapes", required=True, type=Path)
    ap.add_argument("--tag", default="fp8")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--spans", action="store_true")
    args = ap.parse_args()
    torch.ops.load_library(str(args.so))
    ops = torch.ops.flash_mla_legacy
    rows = list(csv.DictReader(open(args.shapes)))
    shapes = list(dict.fromkeys((int(float(r["batch"])), int(float(r["s_q"])), int(float(r["heads"])),
                                 int(float(r["context"])), r["kv"]) for r in rows))[: 3 if args.smoke else None]
    args.pkg = args.so   # open_outputs names the library it was given in the notes
    dev, date, stem, f, w, notes, sf, sw = open_outputs(args, "flashmla_dense", list(KEYS))
    gen = torch.Generator(device="cuda")
    gen.manual_seed(0)
    scale = 1.0 / math.sqrt(192.0)
    one = torch.ones(1, dtype=torch.float32, device="cuda")
    print(f"{len(shapes)} shapes from {args.shapes.name}", flush=True)
    for i, key in enumerate(shapes):
        B, sq, H, N, kv = key
        try:
            fp8 = kv == "fp8"
            dt_ = torch.float8_e4m3fn if fp8 else torch.bfloat16
            P = -(-N // PAGE)
            copies = max(1, min(8, math.ceil(2.5 * L2_BYTES / (B * P * PAGE * DIM * (1 if fp8 else 2)))))
            pools = [torch.randn(B * P, PAGE, 1, DIM, device="cuda", generator=gen).mul(0.5).to(dt_)
                     for _ in range(copies)]
            bt = torch.randperm(B * P, device="cuda", generator=gen).view(B, P).to(torch.int32)
            seqlens = torch.full((B,), N, dtype=torch.int32, device="cuda")
            q = torch.randn(B, sq, H, DIM, device="cuda", generator=gen).mul(0.5).to(dt_)
            if fp8:
                meta, splits = ops.get_mla_decoding_metadata_dense_fp8(seqlens, sq * H, 1)

                def call(j, n_kv=copies, pools=pools, q=q, bt=bt, seqlens=seqlens, meta=meta, splits=splits):
                    return ops.fwd_kvcache_mla_fp8(q, pools[j % n_kv], DV, seqlens, bt, scale, sq > 1, meta, splits,
                                                   one, one)
            else:
                out0 = ops.dense_decode_fwd(q, pools[0], DV, seqlens, bt, scale, sq > 1, None, None)
                meta, splits = out0[2], out0[3]

                def call(j, n_kv=copies, pools=pools, q=q, bt=bt, seqlens=seqlens, meta=meta, splits=splits):
                    return ops.dense_decode_fwd(q, pools[j % n_kv], DV, seqlens, bt, scale, sq > 1, meta, splits)
            out = call(0)
            torch.cuda.synchronize()
            note = ""
            if i < 3:   # sequence 0's last query row, head 0, against a reference over its pages
                o = out[0]
                pages = bt[0].long()
                rws = pools[0][pages].reshape(-1, DIM)[:N].float()
                qq = q[0, sq - 1, 0].float()
                ref = torch.softmax((qq @ rws.T) * scale, dim=-1) @ rws[:, :DV]
                err = float((o[0, sq - 1, 0].float() - ref).abs().max() / ref.abs().max().clamp(min=1e-6))
                note = f"max rel err {err:.3g}" + (" WRONG" if err > 0.1 else "")
            record((f, w, sf, sw), "fmla_dense", dict(zip(KEYS, key)), call, copies, note, dev, date)
            names = launched_kernels(lambda call=call: call(0))
            notes.write(f"{dict(zip(KEYS, key))}: splits {splits.tolist()[:4]}... {' | '.join(names)[:600]}\n")
            print(f"B {B:4d} s_q {sq} H {H:3d} N {N:6d} {kv}: done {note}", flush=True)
            del pools, q, bt
        except Exception as e:  # noqa: BLE001 - recorded, the campaign goes on
            print(f"{key}: {type(e).__name__}: {str(e)[:300]}", flush=True)
            notes.write(f"{key}: FAILED {type(e).__name__}: {str(e)[:300]}\n")
        torch.cuda.empty_cache()
    close_outputs(f, notes, sf, stem)


if __name__ == "__main__":
    main()
