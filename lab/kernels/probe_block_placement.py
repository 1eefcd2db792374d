"""Which SM each CTA of a launch grid lands on (the hardware's block dispatch order, not in any kernel's source): a
Triton kernel of 256 threads (at most 8 resident per SM by threads, as FlashInfer's CUDA-core decode kernel at
Llama-3.1-8B's heads) records %smid per program and spins ~30 us so the whole grid is resident at once. Grids: the
CUDA-graph decode plans' (padded batch, KV heads) = (132, 8), (148, 8), (99, 8), and (1056,) flat. Writes
block_placement.csv (grid, x, y, smid) to --out.

    python3 probe_block_placement.py --out DIR
"""
from __future__ import annotations

import argparse
import csv
import os


def main() -> None:
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def smid_kernel(out_ptr, width, spin_ns):
        x = tl.program_id(0)
        y = tl.program_id(1)
        sm = tl.inline_asm_elementwise("mov.u32 $0, %smid;", "=r,r", [x], dtype=tl.int32, is_pure=False, pack=1)
        t0 = tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l,r", [x], dtype=tl.int64, is_pure=False,
                                       pack=1)
        t = t0
        while t - t0 < spin_ns:
            t = tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l,r", [x], dtype=tl.int64, is_pure=False,
                                          pack=1)
        tl.store(out_ptr + y * width + x, sm)

    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    rows = []
    for gx, gy in ((132, 8), (148, 8), (99, 8), (1056, 1)):
        out = torch.full((gy, gx), -1, dtype=torch.int32, device="cuda")
        for _ in range(2):
            smid_kernel[(gx, gy)](out, gx, 30000, num_warps=8)
        torch.cuda.synchronize()
        o = out.cpu().tolist()
        for y in range(gy):
            for x in range(gx):
                rows.append({"grid": f"{gx}x{gy}", "x": x, "y": y, "smid": o[y][x]})
        per = {}
        for y in range(gy):
            for x in range(gx):
                per.setdefault(o[y][x], []).append((x, y))
        print(f"grid {gx}x{gy}: SMs used {len(per)}, CTAs per SM {min(map(len, per.values()))}-"
              f"{max(map(len, per.values()))}; x 0-7 of rows 0..{gy - 1} on SMs "
              f"{[o[y][:8] for y in range(min(gy, 3))]}")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "block_placement.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["grid", "x", "y", "smid"])
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    main()
