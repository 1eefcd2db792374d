"""Price the fresh grid of lab/kernels/measure_production_attention.py (--grid fresh) with the committed model BEFORE it
is measured: every shape of every part, launches from the family modules (simulator/kernels), terms fitted on the
campaign's middle rows (simulator/calibration/fit_production_attention.py `fit`, the newest campaign CSV and its launch
profile). Writes hwmodels/calibration/data/production_attention/production_attention_fresh_predictions.csv with the
commit of the code that priced it; that file is committed before the device run, so the fresh shapes' error is a test
of rules that were revised after the campaign's rows had been looked at.

    python lab/kernels/predict_fresh_production_attention.py [--out PATH] [--grid fresh|mla_merge|fresh_mla|fresh_fi|fresh_fi2]

--grid mla_merge prices the MLA merge grid (FlashInfer MLA shapes split into 2-4 pieces) into
production_attention_mla_merge_predictions.csv, committed before that grid is measured; --grid fresh_mla the fresh
MLA / Triton grid (FlashMLA, FlashInfer MLA and SGLang Triton shapes at batches none of the earlier grids measured) into
production_attention_fresh_mla_predictions.csv; --grid fresh_fi the FlashInfer check grid into
production_attention_fresh_fi_predictions.csv; --grid fresh_fi2 the second FlashInfer check grid into
production_attention_fresh_fi2_predictions.csv; --grid fresh_fi3 the third into production_attention_fresh_fi3_predictions.csv
(with --pdl: the model priced as if the CUDA-graph chain kept FlashInfer's programmatic dependent launch,
simulator/kernels/flashinfer.py FI_PDL_GRAPH = True, refitted so, into ..._predictions_pdl.csv); --grid mla_blind2 the MLA
blind grid (MLA_BLIND2_BT: the per-request / per-item terms at short contexts with many requests and long contexts with
few) into production_attention_mla_blind2_predictions.csv; --grid mla_blind3 the third MLA blind grid (MLA_BLIND3_*:
DeepSeek-V3's heads at TP 1-8) into production_attention_mla_blind3_predictions.csv; --grid fi_dec_blind the CUDA-core
decode blind grid (FIDB_*) into production_attention_fi_dec_blind_predictions.csv, --grid fi_dec_blind2 the second into
production_attention_fi_dec_blind2_predictions.csv, --grid fi_dec_blind3 the third into
production_attention_fi_dec_blind3_predictions.csv, --grid fi_dec_blind4 the fourth into
production_attention_fi_dec_blind4_predictions.csv, --grid fi_dec_blind5 the fifth into
production_attention_fi_dec_blind5_predictions.csv, --grid fi_dec_blind6 the sixth into
production_attention_fi_dec_blind6_predictions.csv, --grid fi_dec_blind7 the seventh into
production_attention_fi_dec_blind7_predictions.csv (--graph-placement: with FI_GRAPH_PLACEMENT on), --grid fi_dec_blind8
the eighth into production_attention_fi_dec_blind8_predictions.csv, --grid fi_tc_blind
the tensor-core (FA2 prefill) blind grid (FITB_*) into production_attention_fi_tc_blind_predictions.csv, --grid
mla_blind5 the fifth MLA blind grid (MLA_BLIND5_*) into production_attention_mla_blind5_predictions.csv, --grid
mla_blind6 the sixth (MLA_BLIND6_*) into production_attention_mla_blind6_predictions.csv (--mla-variant oob15:
FlashMLA's out-of-bound V fill at 15 ns per token), --grid mla_blind7 the seventh (MLA_BLIND7_*: FlashMLA at one request
per part) into production_attention_mla_blind7_predictions.csv (--mla-variant padded: FM_MMA_PADDED on) (with --out, e.g. one file per model priced; --cta-launch SHARE prices
it with simulator/kernels/flashinfer.py FI_DECODE_CTA_LAUNCH_SHARE set to SHARE, refitted so). Each is committed
before that grid is measured. With PYTHONPATH pointing
at an older checkout, the shapes still come from this script's folder and the prices (and the recorded model_commit)
from that checkout's model (an exported tree without .git names its commit in a MODEL_COMMIT file at its root).
"""
from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

import measure_production_attention as campaign  # the campaign's shape grids (this script's folder)
import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "hwmodels/calibration/data/production_attention/production_attention_fresh_predictions.csv"
OUT_MLA_MERGE = OUT.with_name("production_attention_mla_merge_predictions.csv")
OUT_FRESH_MLA = OUT.with_name("production_attention_fresh_mla_predictions.csv")
OUT_FRESH_FI = OUT.with_name("production_attention_fresh_fi_predictions.csv")
OUT_FRESH_FI2 = OUT.with_name("production_attention_fresh_fi2_predictions.csv")
OUT_FRESH_FI3 = OUT.with_name("production_attention_fresh_fi3_predictions.csv")
OUT_MLA_BLIND2 = OUT.with_name("production_attention_mla_blind2_predictions.csv")
OUT_MLA_BLIND3 = OUT.with_name("production_attention_mla_blind3_predictions.csv")
OUT_MLA_BLIND4 = OUT.with_name("production_attention_mla_blind4_predictions.csv")
OUT_MLA_BLIND5 = OUT.with_name("production_attention_mla_blind5_predictions.csv")
OUT_MLA_BLIND6 = OUT.with_name("production_attention_mla_blind6_predictions.csv")
OUT_MLA_BLIND7 = OUT.with_name("production_attention_mla_blind7_predictions.csv")
OUT_FI_DEC_BLIND = OUT.with_name("production_attention_fi_dec_blind_predictions.csv")
OUT_FI_DEC_BLIND2 = OUT.with_name("production_attention_fi_dec_blind2_predictions.csv")
OUT_FI_DEC_BLIND3 = OUT.with_name("production_attention_fi_dec_blind3_predictions.csv")
OUT_FI_DEC_BLIND4 = OUT.with_name("production_attention_fi_dec_blind4_predictions.csv")
OUT_FI_DEC_BLIND5 = OUT.with_name("production_attention_fi_dec_blind5_predictions.csv")
OUT_FI_DEC_BLIND6 = OUT.with_name("production_attention_fi_dec_blind6_predictions.csv")
OUT_FI_DEC_BLIND7 = OUT.with_name("production_attention_fi_dec_blind7_predictions.csv")
OUT_FI_DEC_BLIND8 = OUT.with_name("production_attention_fi_dec_blind8_predictions.csv")
OUT_FI_TC_BLIND = OUT.with_name("production_attention_fi_tc_blind_predictions.csv")
OUT_FI_TC_BLIND12 = OUT.with_name("production_attention_fi_tc_blind12_predictions.csv")
OUT_FI_TC_BLIND13 = OUT.with_name("production_attention_fi_tc_blind13_predictions.csv")
OUT_FI_TC_BLIND14 = OUT.with_name("production_attention_fi_tc_blind14_predictions.csv")
PARTS = ("fi_decode", "fi_tc", "fi_verify", "fi_mla", "flashmla", "sgl_triton")


def main() -> None:
    from hwmodels.spec import load_hardware
    from simulator.calibration import fit_production_attention as FP

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None)
    ap.add_argument("--grid", default="fresh", choices=("fresh", "mla_merge", "fresh_mla", "fresh_fi", "fresh_fi2",
                                                        "fresh_fi3", "mla_blind2", "mla_blind3", "mla_blind4", "mla_blind5", "mla_blind6", "mla_blind7",
                                                        "fi_dec_blind", "fi_dec_blind2", "fi_dec_blind3",
                                                        "fi_dec_blind4", "fi_dec_blind5", "fi_dec_blind6",
                                                        "fi_dec_blind7", "fi_dec_blind8", "fi_tc_blind",
                                                        "fi_tc_blind12", "fi_tc_blind13", "fi_tc_blind14"))
    ap.add_argument("--graph-placement", action="store_true",
                    help="price the CUDA-core decode call with the CUDA-graph grids' probed placement on "
                         "(simulator/kernels/flashinfer.py FI_GRAPH_PLACEMENT)")
    ap.add_argument("--pdl", action="store_true", help="price FlashInfer's calls with PDL kept in the graph chain")
    ap.add_argument("--cta-launch", type=float, default=None,
                    help="price the CUDA-core decode call with this CTA launch share (FI_DECODE_CTA_LAUNCH_SHARE)")
    ap.add_argument("--mla-variant", default="", choices=("", "tensor_body", "partial0.4", "tail_unsplit", "q_l2", "fill21",
                                                     "fill30", "nofill", "oob15", "padded"),
                    help="price an alternative FlashInfer MLA rule (refitted so): tensor_body = the stages' tensor work "
                         "as a compute term of the body again (no CHAIN_TENSOR); partial0.4 = a partial last stage at "
                         "0.4 + 0.6 x its tokens / 64 of a stage (FI_MLA_PARTIAL_STAGE_SHARE)")
    ap.add_argument("--fi-tc-variant", default="", choices=("", "main", "last_wave_merge"),
                    help="price the FA2 prefill call with its flags off (main: FI_TC_LAST_WAVE_SHARE and "
                         "FI_TC_MERGE_AS_DECODE False) or on (last_wave_merge), the fitted file refitted so")
    args = ap.parse_args()
    if args.fi_tc_variant:
        from simulator.kernels import flashinfer as FIw
        FIw.FI_TC_LAST_WAVE_SHARE = FIw.FI_TC_MERGE_AS_DECODE = args.fi_tc_variant == "last_wave_merge"
    if args.mla_variant == "tensor_body":
        import hwmodels.roofline as R
        from simulator.calibration import fit_production_attention as FPv
        R.CHAIN_TENSOR, FPv.CHAIN_TENSOR_KINDS = (), ()
    elif args.mla_variant == "tail_unsplit":   # the tail round only where the items are whole requests
        from simulator.kernels import flashinfer as FIt
        FIt.FI_MLA_TAIL_UNSPLIT_ONLY = True
    elif args.mla_variant == "q_l2":   # both MLA families' Q as an L2 re-read (FI_MLA_Q_L2, FM_Q_L2)
        from simulator.kernels import flashinfer as FIq
        from simulator.kernels import flashmla as FMq
        FIq.FI_MLA_Q_L2 = FMq.FM_Q_L2 = True
    elif args.mla_variant in ("fill21", "fill30", "nofill"):   # FlashInfer MLA's first-stage fill at another rate
        from simulator.kernels import flashinfer as FIf
        FIf.FI_MLA_FILL_RATE_SM = {"fill21": 21.4e9, "fill30": 30e9, "nofill": float("inf")}[args.mla_variant]
    elif args.mla_variant == "oob15":   # FlashMLA's out-of-bound V zero-fill at 15 ns per token
        from simulator.kernels import flashmla as FMo
        FMo.FM_OOB_TOKEN_S = 15e-9
    elif args.mla_variant == "padded":   # FlashMLA's tensor term as the MMAs' padded work (FM_MMA_PADDED)
        from simulator.kernels import flashmla as FMp
        FMp.FM_MMA_PADDED = True
    elif args.mla_variant == "partial0.4":
        from simulator.kernels import flashinfer as FIv
        FIv.FI_MLA_PARTIAL_STAGE_SHARE = 0.4
    args.out = args.out or str({"fresh": OUT, "mla_merge": OUT_MLA_MERGE, "fresh_mla": OUT_FRESH_MLA,
                                "fresh_fi": OUT_FRESH_FI, "fresh_fi2": OUT_FRESH_FI2,
                                "fresh_fi3": OUT_FRESH_FI3, "mla_blind2": OUT_MLA_BLIND2,
                                "mla_blind3": OUT_MLA_BLIND3, "mla_blind4": OUT_MLA_BLIND4, "mla_blind5": OUT_MLA_BLIND5, "mla_blind6": OUT_MLA_BLIND6, "mla_blind7": OUT_MLA_BLIND7,
                                "fi_dec_blind": OUT_FI_DEC_BLIND,
                                "fi_dec_blind2": OUT_FI_DEC_BLIND2,
                                "fi_dec_blind3": OUT_FI_DEC_BLIND3, "fi_dec_blind4": OUT_FI_DEC_BLIND4,
                                "fi_dec_blind5": OUT_FI_DEC_BLIND5, "fi_dec_blind6": OUT_FI_DEC_BLIND6,
                                "fi_dec_blind7": OUT_FI_DEC_BLIND7, "fi_dec_blind8": OUT_FI_DEC_BLIND8,
                                "fi_tc_blind": OUT_FI_TC_BLIND, "fi_tc_blind12": OUT_FI_TC_BLIND12,
                                "fi_tc_blind13": OUT_FI_TC_BLIND13, "fi_tc_blind14": OUT_FI_TC_BLIND14}[args.grid])
    if args.graph_placement:
        from simulator.kernels import flashinfer as FIg
        if not hasattr(FIg, "FI_GRAPH_PLACEMENT"):
            raise SystemExit("this model has no graph-placement rule")
        FIg.FI_GRAPH_PLACEMENT = True
    if args.cta_launch is not None:
        from simulator.kernels import flashinfer as FIc
        FIc.FI_DECODE_CTA_LAUNCH_SHARE = args.cta_launch
    if args.pdl:
        from simulator.kernels import flashinfer as FI
        if not hasattr(FI, "FI_PDL_GRAPH"):
            raise SystemExit("this model has no PDL rule")
        FI.FI_PDL_GRAPH = True
        args.out = args.out.replace(".csv", "_pdl.csv")
    # the model is the simulator package imported (PYTHONPATH may point at an older checkout: its commit is recorded)
    model_root = Path(FP.__file__).resolve().parents[2]
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=model_root, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "simulator", "hwmodels", "lab"], cwd=model_root,
                           capture_output=True, text=True).stdout.strip()
    if not (model_root / ".git").exists() and (model_root / "MODEL_COMMIT").is_file():
        # an exported tree of an older commit (git archive COMMIT | tar -x, with the commit written to MODEL_COMMIT)
        commit, dirty = (model_root / "MODEL_COMMIT").read_text().strip(), ""
    if dirty:
        raise SystemExit(f"uncommitted changes under simulator/ hwmodels/ lab/: commit the model first\n{dirty}")
    m = campaign
    shapes = pd.DataFrame([s for p in PARTS for s in m.shapes(p, args.grid)])
    f, g = FP.latest(FP.DATA_DIR)
    df = FP.load(f)
    hw = load_hardware("H100-SXM")
    eff, _ = FP.fit(df, hw, pd.read_csv(g) if g is not None else None)
    shapes["median_us"] = np.nan
    ops = FP.build_ops(shapes, hw.units, float(hw.smem_per_unit_bytes or 233472))
    shapes["pred_us"] = np.round(FP.predict_us(ops, hw, eff, len(shapes)), 3)
    shapes = shapes.drop(columns=["median_us"])
    shapes["fitted_on"] = f.name
    shapes["model_commit"] = commit + ("+pdl" if args.pdl else "") + \
        (f"+cta_launch{args.cta_launch:g}" if args.cta_launch is not None else "") + (f"+{args.mla_variant}" if args.mla_variant else "") + \
        (f"+{args.fi_tc_variant}" if args.fi_tc_variant else "") + \
        ("+graph_placement" if args.graph_placement else "")
    shapes.to_csv(args.out, index=False)
    print(f"{len(shapes)} {args.grid} shapes priced at {commit[:10]} -> {args.out}")
    print(shapes.groupby(["family", "model", "dtype"])["pred_us"].describe()[["count", "min", "50%", "max"]].to_string())


if __name__ == "__main__":
    main()
