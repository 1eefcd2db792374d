"""Error of the engine's decode pricing on mixed batches, per strategy: the decode term of a batch whose rows attend
different contexts, priced (a) at the batch's mean context (decode_s: what the engine does for tuples whose decode
cost is linear in a row's context), (b) per row from the surface (row_mean_s: the mean over the rows of
decode(batch, context_i), what the engine does for per-row tuples), against (c) the exact price of the batch
(exact_decode_rows_s: one launch per op over rows of different contexts, additive quantities summed over the rows,
the per-CTA chain the longest row's; a one-CTA-per-row top-k (kind topk_cta) at its longest row's CTA, the persistent
DeepGEMM indexer's chain summed over the rows). The last column is the exact price under the older rule (every op's
additive quantities summed, its chain the longest row's setting's), which averaged the top-k CTAs over the rows and
gave the persistent indexer the chain of a whole batch of longest rows.

    python benchmarks/per_row_error.py

Which moments of the rows' contexts each strategy's decode cost depends on:
  dense, SpecAttn, StreamingLLM ring, SnapKV  linear in each row's context (KV bytes, QK flops): the SUM (= batch x
        mean) is exact up to page rounding and the split-KV chain, which follows the LONGEST row
  DSA (indexer + top-k)  the indexer is linear (sum), the top-k select and the sparse attention are min(T, 2048) per
        row: sum of min(T_i, k) needs each row (a clipped first moment), not the mean
  NSA, LServe, Quest     selection budgets per row (min(pages_i, budget)), streaming windows min(T_i, w): clipped
        first moments again, priced per row
  GVR top-k              passes depend on each row's length (a rho per length): per row
The mixed batches: one long row and seven 1K rows, and a 16-row batch spread log-uniformly over 1K-128K.
The mean-context rule does not see that a launch lasts as long as its slowest CTA: where one long row's chain (DSA's
top-k over 128K keys, LServe's page scan) dominates a batch of short rows, it under-prices it. The per-row rule
charges the ops the strategies name in decode_longest_row_ops (top-k CTAs, LServe / Quest page selection and what
runs only on long rows) at least their longest row alone, each op on its own; every other op at the mean over the
rows (the sum of their work).
"""
from __future__ import annotations

import time

import numpy as np

from simulator.combo import make_combo
from simulator.engine.step_cost import StepCostModel

CASES = [
    ("dense", "H100-SXM", "Llama-3.1-8B", {}),
    ("SnapKV (4K budget)", "H100-SXM", "Llama-3.1-8B", {"kv_policy": "snapkv"}),
    ("StreamingLLM (4K ring)", "H100-SXM", "Llama-3.1-8B", {"kv_policy": "streamingllm"}),
    ("NSA", "H100-SXM", "Llama-3.1-8B", {"attention": "nsa"}),
    ("LServe", "A100-80GB", "Llama-3-8B-Gradient-1048k", {"attention": "lserve"}),
    ("Quest", "A100-80GB", "Llama-2-7B-64K-whatif", {"attention": "quest"}),
    ("SpecAttn + draft", "A100-80GB", "Llama-2-7B-64K-whatif",
     {"attention": {"specattn": {"p": 0.97, "kv_reduction": 0.7189}},
      "speculation": {"draft_model": {"model": "TinyLlama-1.1B", "k": 4}}}),
    ("DSA + radix", "B200", "DeepSeek-V3.2-Exp",
     {"attention": "dsa", "topk": {"radix": {"kernel": "trtllm_b200"}}, "tp": 8, "ep": 8, "kv_dtype": "fp8"}),
    ("DSA + GVR", "B200", "DeepSeek-V3.2-Exp", {"attention": "dsa", "topk": "gvr", "tp": 8, "ep": 8, "kv_dtype": "fp8"}),
]


def batches(max_ctx: int) -> list[tuple[str, np.ndarray]]:
    rng = np.random.default_rng(0)
    long = min(131072, max_ctx - 1)
    return [
        (f"1 x {long // 1024}K + 7 x 1K", np.array([long] + [1024] * 7, dtype=np.float64)),
        ("16 rows log-uniform 1K..max", np.exp(rng.uniform(np.log(1024), np.log(long), 16)).round()),
        ("32 x 8K (uniform)", np.full(32, 8192.0)),
    ]


def main() -> None:
    print(f"{'strategy':<24}{'batch':<30}{'per_row':>8}{'mean-ctx err':>14}{'per-row err':>13}{'exact ms':>10}"
          f"{'old-rule ms':>13}")
    for label, hw, model, kw in CASES:
        c = make_combo(hw, model, **kw)
        t0 = time.perf_counter()
        m = StepCostModel(c, 8192, 64)
        build = time.perf_counter() - t0
        for blabel, ctx in batches(int(m.max_context)):
            b = len(ctx)
            exact = m.exact_decode_rows_s(b, ctx)
            old = m.exact_decode_rows_s(b, ctx, kind_rules=False)
            att = ctx if m.kv_cap is None else np.minimum(ctx, m.kv_cap)   # the scheduler's attended contexts
            mean = m.decode_s(b, float(att.mean()), False, float(att.max()))
            rows = m.row_mean_s(b, ctx)
            print(f"{label:<24}{blabel:<30}{str(m.per_row):>8}{mean / exact - 1:>+14.2%}{rows / exact - 1:>+13.2%}"
                  f"{exact * 1e3:>10.3f}{old * 1e3:>13.3f}")
        print(f"{'':<24}(cost model built in {build:.1f} s)")


if __name__ == "__main__":
    main()
