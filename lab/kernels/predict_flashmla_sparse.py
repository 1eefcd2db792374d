"""Price the FlashMLA sparse decode grid before it is measured (simulator/calibration/flashmla_sparse_h200.py): the
product's DSA attention price today (the generic attention kind, no candidate) at DeepSeek-V3.2's decode shapes on the
H200, per layer. Declared before the call: this is the first look of the product's DSA attention against FlashMLA's
sparse decode; regimes as flashmla_sparse_h200.regime. Writes
hwmodels/calibration/data/production_kernels/flashmla_sparse_h200_prediction_2026-11-28.csv.

    python lab/kernels/predict_flashmla_sparse.py [--grid2 | --grid3 | --grid4 | --grid5 | --grid6 | --rows | --rows2 | --mtp | --prefill | --prefill2 | --spans]

--grid2: the second grid (flashmla_sparse_h200.SHAPES2, 24 new shapes), main (pad_heads 0) against the candidate
(dsa.PAD_HEADS_CANDIDATE: the kernel's 64-head CTAs); declared before its call: the candidate ships if it meets more
regimes, a tie by the lower pooled median; the grid holds FlashMLA sparse decode's H200 STANDING. Writes
production_kernels/flashmla_sparse_h200_grid2_prediction_2026-11-28.csv.

--grid3: the third grid (flashmla_sparse_h200.SHAPES3, 22 new shapes), main (the strategy's defaults) against the
scheduler's tile chain (sparse_kernel flashmla, its terms fitted on grid 1 alone); declared before its call: the
candidate ships if it meets more regimes, a tie by the lower pooled median; the grid holds the STANDING. Writes
production_kernels/flashmla_sparse_h200_grid3_prediction_2026-11-28.csv.

--grid4: the fourth grid (flashmla_sparse_h200.SHAPES4, 39 new (heads, batch, s_q)), main (as shipped) against the
combine as FlashMLA's combine kernel (flashmla_sparse.COMBINE_CHAIN) with the tile terms refitted on the SPANS campaign's
kernel spans; declared before its call: the candidate ships if it meets more regimes, a tie by the lower pooled median;
the grid holds the STANDING. Run with --spans (each kernel timed too). Writes
production_kernels/flashmla_sparse_h200_grid4_prediction_2026-11-29.csv.

--grid5: the kernel at the engines' row layouts (flashmla_sparse_h200.SHAPES5: SGLang's flattened rows, prefill and
decode; vLLM's one request of every row), priced by the product as committed (no candidate), BLIND. Writes
production_kernels/flashmla_sparse_h200_grid5_prediction_2026-11-29.csv.

--grid6: rows sharing a sequence within and past the L2, and one request of distinct sequences' rows
(flashmla_sparse_h200.SHAPES6), main (as shipped) against SHARED_ROWS_L2 with iter_l2 fitted on grid 5's prefill
rows; declared before its call: the candidate ships if it meets more regimes, a tie by the lower pooled median. Writes
production_kernels/flashmla_sparse_h200_grid6_prediction_2026-11-29.csv.

--rows: TensorRT-LLM's DSA generation on Hopper (flashmla_sparse_h200.ROWS_SHAPES: decode rows through the sparse
PREFILL kernel), priced by the product with sparse_kernel prefill_kernel, no candidate: the FIRST LOOK. Writes
production_kernels/flashmla_sparse_fwd_rows_h200_prediction_2026-11-29.csv (measure with --prefill-rows).

--rows2: the second rows grid (ROWS_SHAPES2), main (the first look's op) against the rows kind (dsa.SPARSE_FWD_ROWS_KIND
on fit_rows' terms, fitted on the first rows grid); declared before its call: the candidate ships if it meets more
regimes, a tie by the lower pooled median. Writes production_kernels/flashmla_sparse_fwd_rows_h200_grid2_prediction_2026-11-29.csv.

--mtp: the MTP rows grid (MTP_SHAPES: a request's consecutive rows keeping a share of the previous row's keys), main
against dsa row_overlap at the grid's overlap; declared before its call: the candidate ships if it meets more
regimes, a tie by the lower pooled median. Writes production_kernels/flashmla_sparse_h200_mtp_prediction_2026-11-29.csv.

--prefill: FlashMLA's sparse prefill over one causal prompt (flashmla_sparse_h200.PREFILL_SHAPES: TP 1 / 2 / 8, P 2K-32K)
priced as the product prices DSA prefill attention today; no candidate: the FIRST LOOK. Writes
production_kernels/flashmla_sparse_prefill_h200_prediction_2026-11-28.csv.

--prefill2: the second prefill grid (PREFILL_SHAPES2, 12 new prompts), main against sparse_prefill flashmla; declared
before its call: the candidate ships if it meets more regimes, a tie by the lower pooled median. Writes
production_kernels/flashmla_sparse_prefill_h200_grid2_prediction_2026-11-28.csv.

--spans: the diagnostic SPANS campaign (flashmla_sparse_h200.SPANS_SHAPES: the kernels timed one by one), priced by the
product as shipped, per op (the tile chain and the combine). Writes
production_kernels/flashmla_sparse_h200_spans_prediction_2026-11-29.csv.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _committed import head_or_exit  # noqa: E402

from hwmodels.spec import load_hardware  # noqa: E402
from simulator.calibration import fit_production_topk_gemm as F  # noqa: E402
from simulator.calibration import flashmla_sparse_h200 as S  # noqa: E402

#: flag -> (the pricer, the prediction file); no flag: grid 1
MODES = {"--mtp": (S.predict_mtp, S.MTP_PREDICTION), "--rows2": (S.predict_rows2, S.ROWS_PREDICTION2), "--rows": (S.predict_rows, S.ROWS_PREDICTION), "--grid6": (S.predict6, S.PREDICTION6), "--grid5": (S.predict5, S.PREDICTION5), "--grid4": (S.predict4, S.PREDICTION4), "--spans": (S.predict_spans, S.SPANS_PREDICTION), "--prefill2": (S.predict_prefill2, S.PREFILL_PREDICTION2), "--prefill": (S.predict_prefill, S.PREFILL_PREDICTION),
         "--grid3": (S.predict3, S.PREDICTION3), "--grid2": (S.predict2, S.PREDICTION2), "": (S.predict, S.PREDICTION)}


def main() -> None:
    commit = head_or_exit(ROOT)
    flag = next((f for f in MODES if f and f in sys.argv[1:]), "")
    pricer, name = MODES[flag]
    res = pricer(load_hardware("H200"))
    res["model_commit"] = commit
    res.to_csv(F.DATA_DIR / name, index=False, float_format="%.4f")
    print(f"{len(res)} rows priced at {commit[:10]} -> {F.DATA_DIR / name}")
    cols = [c for c in ("pred_main_us", "pred_us") if c in res.columns]
    print(res.groupby("regime")[cols].median().round(2).to_string())


if __name__ == "__main__":
    main()
