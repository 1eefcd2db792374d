"""Price the causal-prompt prefill top-k grid before it is measured (simulator/calibration/topk_trtllm_prefill.py): the
product's price of TensorRT-LLM's prefill entry over whole causal prompts (rows of the mean length), on the H200.
Declared before the call: the grid is the DSA prefill top-k approximation's H200 standing. Writes
hwmodels/calibration/data/production_kernels/topk_trtllm_prefill_prediction_2026-11-28.csv.

    python lab/kernels/predict_topk_trt_prefill.py [--lead | --stagger]

--lead: the prefill lead share's blind grid (topk_trtllm_prefill.BLIND_UNIFORM / BLIND_CAUSAL), main (PREFILL_LEAD_SHARE
None) and the candidate (PREFILL_LEAD_SHARE_CANDIDATE, re-fitted here: the fit must give it); declared before its call:
the candidate ships if it meets more regimes (a tie: the lower pooled median |error|). Writes
production_kernels/topk_trtllm_prefill_lead_prediction_2026-11-28.csv.

--stagger: the prefill stagger grid (topk_trtllm_prefill.STAGGER_*, 30 new shapes + 12 scan rows), main (the model as
shipped) and the candidate (topk_trtllm.STAGGERED_CANDIDATE: the L2 term's job share on the first pair's partner only,
PREFILL_LEAD_SHARE None); declared before its call: the candidate ships if it meets more of the grid's regimes (the
controls, priced alike, aside), a tie by the lower pooled median |error| over the judged rows; its prefill regimes and
causal prompts become the prefill entry's H200 STANDING. Writes
production_kernels/topk_trtllm_prefill_stagger_prediction_2026-11-28.csv.
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
from simulator.calibration import topk_trtllm_prefill as PF  # noqa: E402


def main() -> None:
    commit = head_or_exit(ROOT)
    if "--stagger" in sys.argv[1:]:
        t = PF.stagger_frame()
        again = [s for s in zip(t["dist"], t["rows"].astype(int), t["n"].astype(int)) if s in committed_topk()]
        if again:
            raise SystemExit(f"shapes already measured: {again}")
        res = PF.predict_stagger(load_hardware("H200"))
        res["model_commit"] = commit
        out = F.DATA_DIR / PF.PREDICTION3
        res.to_csv(out, index=False, float_format="%.4f")
        print(f"{len(res)} rows priced at {commit[:10]} -> {out}")
        print(res[["kernel", "dist", "rows", "n", "regime", "pred_main_us", "pred_us"]].round(1).to_string(index=False))
        return
    if "--lead" in sys.argv[1:]:
        from simulator.kernels import topk_trtllm as TK

        again = [s for s in PF.BLIND_UNIFORM + PF.BLIND_CAUSAL if s in committed_topk()]
        if again:
            raise SystemExit(f"shapes already measured: {again}")
        fit = PF.fit_prefill_lead()
        print(f"fit on {fit['rows']} looked-at prefill rows: rms log error {fit['rms']}")
        if fit["value"] != TK.PREFILL_LEAD_SHARE_CANDIDATE:
            raise SystemExit(f"the fit gives {fit['value']}, the candidate is {TK.PREFILL_LEAD_SHARE_CANDIDATE}")
        res = PF.predict_blind(load_hardware("H200"), TK.PREFILL_LEAD_SHARE_CANDIDATE)
        res["model_commit"] = commit
        out = F.DATA_DIR / PF.PREDICTION2
        res.to_csv(out, index=False, float_format="%.4f")
        print(f"{len(res)} rows priced at {commit[:10]} -> {out}")
        print(res[["kernel", "dist", "rows", "n", "pred_main_us", "pred_us"]].round(1).to_string(index=False))
        return
    again = [s for s in PF.SHAPES if s in committed_topk()]
    if again:
        raise SystemExit(f"shapes already measured: {again}")
    res = PF.predict(load_hardware("H200"))
    res["model_commit"] = commit
    out = F.DATA_DIR / PF.PREDICTION
    res.to_csv(out, index=False, float_format="%.4f")
    print(f"{len(res)} rows priced at {commit[:10]} -> {out}")
    print(res[["dist", "rows", "n", "regime", "pred_us"]].round(1).to_string(index=False))


if __name__ == "__main__":
    main()
