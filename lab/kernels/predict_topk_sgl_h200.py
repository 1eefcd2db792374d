"""Price the H200 SGLang top-k grid before it is measured (simulator/calibration/topk_sglang_h200.py).

The product as committed prices every row (the H100-SXM's fitted top-k terms on the H200 through
unmeasured_kinds_from); no candidate. Declared before the call: the new rows become SGLang top-k's H200 STANDING
whatever their result; the transfer rows (grid 5's shapes) are judged beside the H100's own measurement of them. The
new shapes are checked against every committed top-k measurement first. Writes
hwmodels/calibration/data/production_kernels/topk_sglang_h200_prediction_2026-11-28.csv (the H100-SXM's prices too,
`pred_h100_us`, for reference); lab/kernels/measure_topk_engines.py --shapes --only-listed reads it.

    python lab/kernels/predict_topk_sgl_h200.py [--fit-rows | --grid2 | --causal]

--fit-rows: the shape list of the H200's own fit rows (topk_sglang_h200.FIT_SHAPES: FIT_TOPK's shapes, re-measured on
the H200 to fit SGLang's terms there; priced by the product as committed for reference, never judged). Writes
production_kernels/topk_sglang_h200_fit_prediction_2026-11-28.csv.

--grid2: the second H200 SGLang grid (topk_sglang_h200.NEW2, 36 new shapes, 4 a regime), priced by main (the H100-SXM's
borrowed terms) and the candidate (the H200's own terms fitted on the fit rows alone, topk_sglang_h200.candidate_eff);
declared before its call: the candidate ships if it meets more regimes, a tie by the lower pooled median |error|; the
grid holds SGLang top-k's H200 STANDING. Writes production_kernels/topk_sglang_h200_grid2_prediction_2026-11-28.csv.

--causal: SGLang's top-k over 9 whole causal prompts (topk_sglang_h200.CAUSAL), priced as the product prices DSA prefill
top-k (the "causal" rows rule) on the H200's own SGLang terms; no candidate; declared before its call as SGLang's
causal-prompt H200 STANDING. Writes production_kernels/topk_sglang_h200_causal_prediction_2026-11-28.csv.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _committed import head_or_exit  # noqa: E402
from predict_topk_fi_h200 import committed_topk  # noqa: E402

from hwmodels.spec import load_hardware  # noqa: E402
from simulator.calibration import fit_production_topk_gemm as F  # noqa: E402
from simulator.calibration import topk_engines as TE  # noqa: E402
from simulator.calibration import topk_sglang_h200 as S  # noqa: E402

OUT = F.DATA_DIR / S.PREDICTION


def main() -> None:
    commit = head_or_exit(ROOT)
    if "--fit-rows" in sys.argv[1:]:
        res = S.fit_frame(load_hardware("H200"))
        res["model_commit"] = commit
        res.to_csv(F.DATA_DIR / S.FIT_PREDICTION, index=False, float_format="%.4f")
        print(f"{len(res)} fit rows listed at {commit[:10]} -> {F.DATA_DIR / S.FIT_PREDICTION}")
        return
    if "--causal" in sys.argv[1:]:
        again = [s for s in S.CAUSAL if s in committed_topk()]
        if again:
            raise SystemExit(f"prompts already measured: {again}")
        res = S.predict_causal(load_hardware("H200"))
        res["model_commit"] = commit
        res.to_csv(F.DATA_DIR / S.CAUSAL_PREDICTION, index=False, float_format="%.4f")
        print(f"{len(res)} prompts priced at {commit[:10]} -> {F.DATA_DIR / S.CAUSAL_PREDICTION}")
        print(res[["dist", "n", "regime", "priced_rows", "priced_n", "pred_us"]].round(1).to_string(index=False))
        return
    if "--grid2" in sys.argv[1:]:
        again = [s for s in S.NEW2 if s in committed_topk()]
        if again:
            raise SystemExit(f"new shapes already measured: {again}")
        print(f"the H200's own terms (fit rows alone): {S.fit_h200()}")
        res = S.predict2(load_hardware("H200"))
        res["model_commit"] = commit
        res.to_csv(F.DATA_DIR / S.PREDICTION2, index=False, float_format="%.4f")
        print(f"{len(res)} rows priced at {commit[:10]} -> {F.DATA_DIR / S.PREDICTION2}")
        print(res.groupby("regime")[["pred_main_us", "pred_us"]].median().round(2).to_string())
        return
    again = [s for s in S.NEW if s in committed_topk()]
    if again:
        raise SystemExit(f"new shapes already measured: {again}")
    assert len(set(S.NEW)) == len(S.NEW) and all(n > 2048 for _, _, n in S.NEW)
    per = S.regime_sets()["new"]
    if len(per) != 9 or set(per.values()) != {4}:
        raise SystemExit(f"the new rows are not 4 in each of the nine regimes: {per}")
    h200, h100 = load_hardware("H200"), load_hardware("H100-SXM")
    res = S.predict(h200)
    res["pred_h100_us"] = TE.predict_us(res, h100, h100.efficiency)
    res["model_commit"] = commit
    res.to_csv(OUT, index=False, float_format="%.4f")
    print(f"{len(res)} rows priced at {commit[:10]} -> {OUT}")
    print(res.groupby(["set", "regime"])[["pred_us", "pred_h100_us"]].agg(["size", "median"]).round(2).to_string())


if __name__ == "__main__":
    main()
