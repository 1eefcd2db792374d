"""The fourth blind grid of vLLM's Triton unified attention and two named fit sets, measured on the lent GPU in one call
(triton_vllm only: ext/vllm_unified_attention.py, a copy of vllm-project/vllm vllm/attention/ops/
triton_unified_attention.py @ 001ceb3e98e7a19ebe33f542a368fa73bf6c76ad kept outside the repository, launched as
lab/kernels/triton_decode_blind3.py run_vllm_layout does with the harness's page layout "perm").

Rows (column row_role), every set chosen and committed before the measurement:
  blind     blind4_shapes(): shapes in none of the committed CSVs, priced by main's model and the new one before this
            measurement (lab/kernels/predict_triton_decode_blind4.py): the regimes that miss (fp8 one-tile decode at
            batch >= 256, lone tiles of the G 8 binaries, decode at context >= 80K batch <= 3, verification at context
            2800-9000 batch 10-56) and controls from regimes that pass
  fit_fp8   fp8_fit_shapes(): the FIT SET of the fp8 K/V kind (attn_triton_vllm_fp8kv), Llama-3.1-8B heads 32/8 as the
            family's other fit rows, spanning the kind's regimes: one-tile decode (context <= 256) at batch 8-768,
            middle contexts at batch 8-384, lone long decode (batch 1-6, context 60K-120K), verification (q 2 / 4)
  fit_lone  lone_shapes(): one program per (KV head, segment) walking its range alone (batch 1), for the binary of
            every GQA group measured (G 4: 32/8, G 7: 28/4, G 8: 64/8 and 8/1), 2D (q 2) and 3D (q 1), bf16 and fp8, at
            context 32768 and 90000: the lone iteration of each compiled binary against G 4's (VLLM_ITER_BY_G)

After the rows, the PTX Triton wrote for the kernels (its cache) is copied to OUT/ptx for the loop's instruction count.

    python3 triton_decode_blind4.py --out DIR [--budget-s 100] [--smoke] [--list]   (beside ext/ and the blind3 script)
"""
from __future__ import annotations

import argparse
import glob
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import triton_blind_harness as H  # noqa: E402
import triton_decode_blind3 as B3  # noqa: E402

SCRIPT_VERSION = "blind4"
V = "triton_vllm"


def _row(model, kv, b, q, t, role):
    return B3._row(V, model, kv, b, q, t, role, "perm")


def blind4_shapes() -> list[dict]:
    """The fourth blind grid (module docstring); contexts / batches in none of the committed grids."""
    r = []
    # (a) fp8 one-tile decode at batch >= 256 (3D or 2D by the grid rule)
    for m, b, t in (("llama8b", 320, 72), ("llama8b", 704, 168), ("qwen7b", 384, 232), ("llama70b_tp8", 576, 120),
                    ("qwen72b", 288, 200), ("qwen7b", 272, 56)):
        r.append(_row(m, "fp8", b, 1, t, "blind"))
    # (b) lone tiles of the G 8 binaries (64/8 and 8/1 heads), 2D verification and 3D decode
    for m, kv, b, q, t in (("qwen72b", "bf16", 1, 2, 40000), ("qwen72b", "bf16", 2, 3, 60000),
                           ("llama70b_tp8", "bf16", 1, 2, 70000), ("qwen72b", "fp8", 1, 2, 50000),
                           ("qwen72b", "bf16", 1, 1, 104000), ("llama70b_tp8", "fp8", 3, 4, 36000)):
        r.append(_row(m, kv, b, q, t, "blind"))
    # (c) decode at context >= 80K, batch <= 3
    for m, kv, b, t in (("llama8b", "bf16", 1, 88000), ("llama8b", "bf16", 2, 120000), ("qwen7b", "bf16", 3, 92000),
                        ("llama8b", "fp8", 1, 104000), ("llama70b_tp8", "bf16", 2, 100000), ("qwen7b", "fp8", 2, 86000)):
        r.append(_row(m, kv, b, 1, t, "blind"))
    # (d) verification at context 2800-9000, batch 10-56
    for m, kv, b, q, t in (("qwen7b", "fp8", 12, 2, 4200), ("qwen7b", "fp8", 40, 2, 7600),
                           ("llama70b_tp8", "bf16", 20, 3, 3200), ("llama70b_tp8", "bf16", 48, 3, 6000),
                           ("llama8b", "bf16", 16, 2, 5000), ("qwen72b", "bf16", 28, 4, 3600),
                           ("llama8b", "fp8", 36, 3, 8400), ("qwen72b", "fp8", 52, 2, 2900)):
        r.append(_row(m, kv, b, q, t, "blind"))
    # (e) controls from regimes that pass
    for m, kv, b, q, t in (("llama8b", "bf16", 48, 1, 2600), ("qwen7b", "bf16", 12, 1, 12000),
                           ("llama70b_tp8", "fp8", 96, 1, 5200), ("llama8b", "bf16", 400, 4, 1000),
                           ("qwen7b", "fp8", 200, 1, 900), ("llama8b", "fp8", 24, 1, 6600)):
        r.append(_row(m, kv, b, q, t, "blind"))
    return r


def fp8_fit_shapes() -> list[dict]:
    """The fp8 kind's fit set (module docstring), Llama-3.1-8B heads 32/8."""
    r = []
    for b, t in ((8, 112), (64, 176), (256, 80), (512, 240), (768, 144)):     # one-tile decode
        r.append(_row("llama8b", "fp8", b, 1, t, "fit_fp8"))
    for b, t in ((8, 12000), (128, 3000), (384, 1500)):                       # middle contexts
        r.append(_row("llama8b", "fp8", b, 1, t, "fit_fp8"))
    for b, t in ((1, 72000), (2, 120000), (6, 60000)):                        # lone long decode
        r.append(_row("llama8b", "fp8", b, 1, t, "fit_fp8"))
    for b, q, t in ((64, 2, 3000), (512, 4, 600)):                            # verification
        r.append(_row("llama8b", "fp8", b, q, t, "fit_fp8"))
    return r


def lone_shapes() -> list[dict]:
    """One program per (KV head, segment), batch 1, for every compiled GQA binary (module docstring)."""
    r = []
    for m in ("llama8b", "qwen7b", "qwen72b", "llama70b_tp8"):
        for kv in ("bf16", "fp8"):
            for q in (2, 1):
                for t in (32768, 90000):
                    r.append(_row(m, kv, 1, q, t, "fit_lone"))
    return r


def all_shapes() -> list[dict]:
    return blind4_shapes() + fp8_fit_shapes() + lone_shapes()


def _say_lone(say, s, path, med) -> None:
    """Log the lone-program rows only."""
    if s["row_role"] == "fit_lone":
        say(f"lone {s['model']:12s} {s['dtype']} q{s['q_rows']} T{s['context']} {path} {med:9.1f} us")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=100.0)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--list", action="store_true", help="print the rows and exit (no GPU)")
    args = ap.parse_args()
    shp = all_shapes()
    if args.smoke:
        shp = shp[:2] + [s for s in shp if s["row_role"] == "fit_lone"][:2]
    if args.list:
        for s in shp:
            print(s)
        print(len(shp), "rows")
        return
    say = H.run_grid(shp, args.out, args.budget_s, SCRIPT_VERSION, "triton_decode_blind4", _say_lone)
    # the PTX Triton compiled for the kernels (its cache), for the loop's instruction count per binary
    try:
        dst = os.path.join(args.out, "ptx")
        os.makedirs(dst, exist_ok=True)
        cache = os.environ.get("TRITON_CACHE_DIR", os.path.expanduser("~/.triton/cache"))
        n = 0
        for f in glob.glob(os.path.join(cache, "*", "kernel_unified_attention_*")):
            if f.endswith((".ptx", ".json")):
                shutil.copy(f, os.path.join(dst, os.path.basename(os.path.dirname(f))[:12] + "_" + os.path.basename(f)))
                n += 1
        say(f"ptx files {n}")
    except Exception as e:   # noqa: BLE001
        say(f"ptx copy failed: {e!r}")


if __name__ == "__main__":
    main()
