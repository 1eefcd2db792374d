"""Price FA3's MLA-absorbed decode over top-k pages of one (SGLang's DSA decode over a bf16 cache on Hopper;
simulator/calibration/fa3_sparse_mla_h200.py) BEFORE it is measured: grid 1 is the FIRST LOOK of the family from
source (pred_us: FA3_QV_BLOCK "work"; pred_chain_us: "wg_chain"; pred_main_us: the product's price before the family,
FlashMLA's sparse decode over the bf16 cache). Writes hwmodels/calibration/data/production_kernels/
fa3_sparse_mla_h200_prediction_2026-11-29.csv with the model's commit.

--grid2: grid 2 (SHAPES2, blind), main (the first look's model) against the candidate (the combine's batch scan from
source + the qv tile terms fitted on grid 1), ship rule in the file. Writes fa3_sparse_mla_h200_grid2_prediction_2026-11-29.csv.

--mtp: grid 3 (SHAPES3: an MTP verification's flattened rows keeping 0 / 0.44 / 0.8 of the previous row's keys, blind),
main (every gather from HBM) against dsa.FA3_ROW_OVERLAP (the rows' distinct tokens from HBM). Writes
fa3_sparse_mla_h200_mtp_prediction_2026-11-29.csv.

--dense: the dense grid (SHAPES4: SGLang's fa3 backend and vLLM's FLASH_ATTN_MLA over a dense latent cache), the FIRST
LOOK of families fa3_mla / fa3_mla_vllm (the kernel's terms as judged on the sparse grids) beside FlashMLA's dense
decode (what the engine profiles priced before). Writes fa3_mla_dense_h200_prediction_2026-11-29.csv.

--gqa: vLLM's GQA call of FA3 (SHAPES5: its scheduler metadata once a step, <= 32 splits; hdim 128, page 16), the FIRST
LOOK of family fa3_vllm beside fa3 (the per-call prepare and FA3's heuristic: what the vLLM profile priced before).
Writes fa3_gqa_call_h200_prediction_2026-11-29.csv.

--vllm-mla: vLLM's MLA call grid (SHAPES6, blind), fa3_mla_vllm as shipped against families.VLLM_CALL_PROLOGUE.
Writes fa3_mla_vllm_h200_prediction_2026-11-29.csv.

--sglang-prefill: SGLang's MLA prefill grid (SHAPES7: the extend batch through FA3's qv kernel with causal rows, as its
prefill CUDA graph runs it, blind), fa3_mla's prefill as priced (FA3's varlen MHA) against
families.SGLANG_ABSORBED_PREFILL. Writes fa3_mla_prefill_h200_prediction_2026-11-29.csv.

--sglang-prefill2: the second SGLang MLA prefill grid (SHAPES8, blind), the absorbed price as shipped against a causal
call's K/V read once (fa3.FA3_QV_MBLOCK_REREAD_CAUSAL False). Writes fa3_mla_prefill_h200_grid2_prediction_2026-11-29.csv.

--split-scan: the split scan (SHAPES9: SGLang's dense call at small batch and long context with the split bound forced),
a fit set priced by the committed model before its call (pred_us and each launch alone). Writes
fa3_mla_split_scan_h200_prediction_2026-11-29.csv. --split-scan2: the second (SHAPES10: the combine's tail against its
partials' bytes, split bound and CTAs), fa3_mla_split_scan2_h200_prediction_2026-11-29.csv.

--grid3-dense / --grid3-sparse: grid 3 (blind, SHAPES11 dense calls / SHAPES12 DSA rows in no earlier grid), the model
as shipped (QV_SHIPPED) against the split candidate (QV_CANDIDATE), GRID3_RULE. Write
fa3_mla_dense_grid3_h200_prediction_2026-11-29.csv / fa3_sparse_mla_h200_grid3_prediction_2026-11-29.csv.

--fp8pool: SGLang's call over an fp8 MLA pool (SHAPES13: the layer's whole pool cast to bf16, then the qv call; the
cast alone at batch 0), fa3_mla_fp8cast's first look from source beside FlashMLA at an fp8 cache (the product's price
before). Writes fa3_mla_fp8cast_h200_prediction_2026-11-29.csv. --fp8pool2: its grid 2 (SHAPES14, blind: the cast as op
kind `cast` against the first look's `copy`), fa3_mla_fp8cast_h200_grid2_prediction_2026-11-29.csv. --fp8prefill: the
absorbed extend over an fp8 pool (SHAPES15, blind), fa3_mla_fp8cast_h200_prefill_prediction_2026-11-29.csv.
--gqa-cold: vLLM's FA3 GQA call in the engine's state (SHAPES16: short calls, K/V cold, metadata warm; the product's
price, fa3, FIRST LOOK), fa3_gqa_cold_h200_prediction_2026-11-29.csv; --gqa-cold8: the same over an fp8 (e4m3) cache
(SHAPES17, blind), fa3_gqa_cold_fp8_h200_prediction_2026-11-29.csv. --vllm-gqa3: vLLM's GQA call, grid 3 (SHAPES18,
blind, both dtypes cold: the candidate fa3_vllm_prologue against fa3), fa3_vllm_gqa_grid3_h200_prediction_2026-11-29.csv.
--fp8-probe: long calls both as vLLM and as SGLang call FA3, fp8 and bf16, cold (SHAPES19, a diagnosis),
fa3_gqa_fp8_probe_h200_prediction_2026-11-29.csv. --fp8-grid2: the fp8 cold grid 2 (SHAPES20, blind: the H200's own
fp8 iteration, FP8_ITER_SHARE_CANDIDATE, against the borrowed one), fa3_gqa_cold_fp8_grid2_h200_prediction_2026-11-29.csv.

    python lab/kernels/predict_fa3_sparse_mla.py [--grid2 | --mtp | --dense | --gqa | --vllm-mla | --sglang-prefill |
                                                  --sglang-prefill2 | --split-scan | --split-scan2 |
                                                  --grid3-dense | --grid3-sparse | --fp8pool | --fp8pool2 | --fp8prefill |
                                                  --gqa-cold | --gqa-cold8 | --vllm-gqa3 | --fp8-probe |
                                                  --fp8-grid2]
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _committed import head_or_exit  # noqa: E402

from hwmodels.spec import load_hardware  # noqa: E402
from simulator.calibration import fa3_sparse_mla_h200 as S  # noqa: E402

#: flag -> (the pricer, the prediction file); no flag: grid 1
MODES = {"--fp8-grid2": (S.predict20, S.PREDICTION20), "--fp8-probe": (S.predict19, S.PREDICTION19), "--vllm-gqa3": (S.predict18, S.PREDICTION18), "--gqa-cold8": (S.predict17, S.PREDICTION17), "--gqa-cold": (S.predict16, S.PREDICTION16), "--fp8prefill": (S.predict15, S.PREDICTION15), "--fp8pool2": (S.predict14, S.PREDICTION14), "--fp8pool": (S.predict13, S.PREDICTION13), "--grid3-dense": (S.predict11, S.PREDICTION11), "--grid3-sparse": (S.predict12, S.PREDICTION12), "--split-scan2": (S.predict10, S.PREDICTION10), "--split-scan": (S.predict9, S.PREDICTION9), "--sglang-prefill2": (S.predict8, S.PREDICTION8), "--sglang-prefill": (S.predict7, S.PREDICTION7), "--vllm-mla": (S.predict6, S.PREDICTION6), "--gqa": (S.predict5, S.PREDICTION5), "--dense": (S.predict4, S.PREDICTION4), "--mtp": (S.predict3, S.PREDICTION3), "--grid2": (S.predict2, S.PREDICTION2),
         "": (S.predict1, S.PREDICTION1)}


def main() -> None:
    commit = head_or_exit(ROOT)
    flag = next((f for f in MODES if f and f in sys.argv[1:]), "")
    pricer, name = MODES[flag]
    res = pricer(load_hardware("H200"))
    res["model_commit"] = commit
    res.to_csv(S.DATA_DIR / name, index=False, float_format="%.4f")
    print(f"{len(res)} rows priced at {commit[:10]} -> {S.DATA_DIR / name}")
    cols = [c for c in res.columns if c.startswith("pred_")]
    print(res.groupby("regime")[cols].median().round(2).to_string())


if __name__ == "__main__":
    main()
