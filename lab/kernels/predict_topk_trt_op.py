"""Price TensorRT-LLM's torch-op top-k grid before it is ever timed (simulator/calibration/topk_trtllm_op.py): the first
look of the engine's dispatch (the two-launch split, single CTAs up to 200,000 columns), and the kernel's own dispatch
at the same shapes, both by the product as committed on the H200 (pred_us) and the H100-SXM (pred_h100_us).
Declared before the call: the op rows are the first look of the family's engine path; the kernel rows are judged with
the H200 grid's regimes. Every shape is checked against the committed top-k measurements first. Writes
hwmodels/calibration/data/production_kernels/topk_trtllm_op_prediction_2026-11-28.csv.

    python lab/kernels/predict_topk_trt_op.py [--split | --lead | --width]

--split: the second op grid (topk_trtllm_op.SPLIT_BLIND, the two-launch split at 17-300 rows, 12 new shapes), priced
after the first grid was judged by the product as committed (the merge launch's waves mended, LONE_L2_ROUND shipped);
declared before its call: it is the two-launch many-row regimes' H200 STANDING. Writes
production_kernels/topk_trtllm_op_split_prediction_2026-11-28.csv.
--lead: the third op grid (topk_trtllm_op.LEAD_BLIND, 14 new two-launch shapes), priced by main (TWO_LAUNCH_LEAD_SHARE
None) and the candidate (TWO_LAUNCH_LEAD_SHARE_CANDIDATE, re-fitted here on the looked-at rows: the fit must give it);
declared before its call: the candidate ships if it meets more of the grid's regimes (a tie: the lower pooled median
|error|), and the grid holds the two-launch many-row regimes' H200 STANDING whichever ships.
--width: the padded-buffer grid (topk_trtllm_op.WIDTH_BLIND, 11 rows: the torch op over a logits buffer wider than the
rows' live scores), by the product as committed; declared before its call: the padded buffer's H200 standing.
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
from simulator.calibration import topk_trtllm_op as O  # noqa: E402

OUT = F.DATA_DIR / O.PREDICTION


def main() -> None:
    commit = head_or_exit(ROOT)
    if "--width" in sys.argv[1:]:
        again = [(d, r, n) for d, r, n, _ in O.WIDTH_BLIND if (d, r, n) in committed_topk()]
        if again:
            raise SystemExit(f"shapes already measured: {again}")
        res = O.predict_width(load_hardware("H200"))
        res["model_commit"] = commit
        out = F.DATA_DIR / O.GRIDS["width"][0]
        res.to_csv(out, index=False, float_format="%.4f")
        print(f"{len(res)} rows priced at {commit[:10]} -> {out}")
        print(res[["kernel", "rows", "n", "regime", "pred_us", "pred_unpadded_us"]].round(1).to_string(index=False))
        return
    if "--lead" in sys.argv[1:]:
        from simulator.kernels import topk_trtllm as TK

        again = [s for s in O.LEAD_BLIND if s in committed_topk()]
        if again:
            raise SystemExit(f"shapes already measured: {again}")
        h200 = load_hardware("H200")
        fit = O.fit_lead_share(h200)
        print(f"fit on {fit['rows']} looked-at two-launch rows: rms log error {fit['rms']}")
        if fit["value"] != TK.TWO_LAUNCH_LEAD_SHARE_CANDIDATE:
            raise SystemExit(f"the fit gives {fit['value']}, the candidate is {TK.TWO_LAUNCH_LEAD_SHARE_CANDIDATE}")
        res = O.predict_lead(h200, TK.TWO_LAUNCH_LEAD_SHARE_CANDIDATE)
        res["model_commit"] = commit
        out = F.DATA_DIR / O.GRIDS["lead"][0]
        res.to_csv(out, index=False, float_format="%.4f")
        print(f"{len(res)} rows priced at {commit[:10]} -> {out}")
        print(res.groupby("regime")[["pred_main_us", "pred_us"]].agg(["size", "median"]).round(2).to_string())
        return
    if "--split" in sys.argv[1:]:
        again = [s for s in O.SPLIT_BLIND if s in committed_topk()]
        if again:
            raise SystemExit(f"shapes already measured: {again}")
        res = O.predict_split(load_hardware("H200"))
        res["model_commit"] = commit
        res.to_csv(F.DATA_DIR / O.SPLIT_PREDICTION, index=False, float_format="%.4f")
        print(f"{len(res)} rows priced at {commit[:10]} -> {F.DATA_DIR / O.SPLIT_PREDICTION}")
        print(res.groupby("regime")["pred_us"].agg(["size", "median"]).round(2).to_string())
        return
    again = [s for s in O.SHAPES if s in committed_topk()]
    if again:
        raise SystemExit(f"shapes already measured: {again}")
    assert len(set(O.SHAPES)) == len(O.SHAPES) and all(n > 2048 for _, _, n in O.SHAPES)
    res = O.predict(load_hardware("H200"))
    res["pred_h100_us"] = TE.predict_trtllm(res, load_hardware("H100-SXM"))
    res["model_commit"] = commit
    res.to_csv(OUT, index=False, float_format="%.4f")
    print(f"{len(res)} rows priced at {commit[:10]} -> {OUT}")
    print(res.groupby(["kernel", "regime"])[["pred_us", "pred_h100_us"]].agg(["size", "median"]).round(2).to_string())


if __name__ == "__main__":
    main()
