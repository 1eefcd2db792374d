"""Price the MLA PREFILL grid (lab/kernels/measure_mla_prefill.py shapes()) BEFORE it is measured: FlashAttention-3's
varlen forward at DeepSeek's non-absorbed prefill heads (Q / K of 192 = 128 nope + 64 rope, V of 128; hopper/'s hdim
192 x 128 instantiations), causal, bf16, contiguous K / V, as vLLM's MLA backends prefill on Hopper. The first look of
the MLA prefill family, priced two ways on the device the grid runs on (the lent H200: the H100-SXM's terms through the
H200's unmeasured_kinds_from, judged blind there at 5.2 / 12.4 % over nine families) and, for reference, on the H100:

  pred_product_us  what the product charged for an MLA prefill chunk before: the dense strategy's one generic op
                   (simulator/strategies/dense.py layout_prefill_ops; causal pairs x (d_qk + d_v) at compute.attention,
                   fitted on cuDNN's prefill)
  pred_family_us   simulator/kernels/families.py mla_prefill_launches: FA3's launches (simulator/kernels/fa3.py fa3 with
                   dv = 128, paged = False): tile_size_fwd_sm90's 128 x 128 tile at hdim 192 / dv 128, each m-block's
                   keys bounded by its diagonal, the persistent scheduler's rounds; the measured d = 128 block time x
                   (192 + 128) / 256 (FA3_BLOCK_WORK_SCALE: an ASSUMPTION read from the mainloop, the MMA work a block)

Nothing here is fitted. Regimes (fixed before the call): fresh (O = 0) / chunked (O > 0) x heads per GPU (>= 64: TP 1-2
of DeepSeek-V3 / Kimi-K2; <= 32: TP 4-8); goal median <= 10 %, p90 <= 25 %.

Blind grid 2 (--grid blind2: measure_mla_prefill.blind2_shapes(), 48 shapes in no grid-1 row): pred_main_us = FA3's
launches as the first look priced them (the block work ratio), pred_new_us = the candidate (a 192 x 128 block =
1.106 d = 128 blocks, fitted on grid 1's rows; simulator.kernels.fa3.FA3_MLA_BLOCK since it shipped), pred_product_us as before, all
on the H200, with SHIP_RULE2 (fixed before the call) -> mla_prefill_blind2_predictions.csv.

    python lab/kernels/predict_mla_prefill.py [--grid blind2]   # writes hwmodels/calibration/data/production_attention/
                                                                #   mla_prefill_first_look.csv (blind2_predictions.csv)
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))
from measure_mla_prefill import blind2_shapes, shapes  # noqa: E402

from hwmodels.spec import load_hardware  # noqa: E402
from simulator.calibration import fit_production_attention as FP  # noqa: E402
from simulator.calibration import prefill_kernels as PK  # noqa: E402
from simulator.kernels.families import mla_prefill_launches  # noqa: E402
from simulator.kernels.production import emit  # noqa: E402
from simulator.model import load_model  # noqa: E402
from simulator.ops import OpBuilder  # noqa: E402

OUT = ROOT / "hwmodels/calibration/data/production_attention/mla_prefill_first_look.csv"
OUT2 = ROOT / "hwmodels/calibration/data/production_attention/mla_prefill_blind2_predictions.csv"
SHIP_RULE2 = ("regimes (fresh / chunked x >= 64 / <= 32 heads) met: candidate > main, or equal with lower pooled median "
              "and p90 |error|; else main (the work ratio) stays")
MLA = load_model("DeepSeek-V3").mla


def product_us(df: pd.DataFrame, hw) -> np.ndarray:
    """The dense strategy's generic prefill op for each MLA row (simulator.calibration.prefill_kernels.product_us)."""
    return PK.product_us(df.assign(kv_heads=df["heads"], dtype="bf16"), hw, mla=MLA)


def family_us(df: pd.DataFrame, hw) -> np.ndarray:
    """FA3's MLA prefill launches for each row (families.mla_prefill_launches)."""
    b = OpBuilder(len(df))
    a = {c: df[c].to_numpy(float) for c in ("batch", "q_rows", "context", "heads", "head_dim", "head_dim_v")}
    emit(b, mla_prefill_launches("flashmla", a["batch"], a["q_rows"], a["context"], a["heads"], a["head_dim"],
                                 a["head_dim_v"], hw.units), hw.units)
    return FP.predict_us(b.build(), hw, hw.efficiency, len(df))


def main() -> None:
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--grid", choices=("first", "blind2"), default="first")
    args = ap.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    if args.grid == "blind2":
        from simulator.calibration import mla_prefill as MP
        s = pd.DataFrame(blind2_shapes())
        hw = load_hardware("H200")
        out = s.copy()
        out["pred_product_us"] = np.round(product_us(s, hw), 3)
        out["pred_main_us"] = np.round(MP.family_us(s, hw, None), 3)
        out["pred_new_us"] = np.round(MP.family_us(s, hw, 1.106), 3)   # the candidate, FA3_MLA_BLOCK once shipped
        out["model_commit"], out["ship_rule"] = commit, SHIP_RULE2
        out.to_csv(OUT2, index=False)
        print(f"{len(out)} rows -> {OUT2.relative_to(ROOT)} (model at {commit})")
        return
    s = pd.DataFrame(shapes())
    out = s.copy()
    for dev, tag in (("H200", ""), ("H100-SXM", "_h100")):
        hw = load_hardware(dev)
        out[f"pred_product{tag}_us"] = np.round(product_us(s, hw), 3)
        out[f"pred_family{tag}_us"] = np.round(family_us(s, hw), 3)
    out["model_commit"] = commit
    out.to_csv(OUT, index=False)
    print(f"{len(out)} rows -> {OUT.relative_to(ROOT)} (model at {commit})")
    print(out[["model", "heads", "batch", "q_rows", "prefix", "pred_product_us", "pred_family_us"]].to_string())


if __name__ == "__main__":
    main()
