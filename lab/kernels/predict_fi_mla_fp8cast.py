"""Price SGLang's flashinfer_mla backend over an fp8 MLA cache (family fi_mla_fp8cast; simulator/calibration/
fi_mla_fp8cast_h200.py) BEFORE it is measured: the family's FIRST LOOK from its engine's source (pred_us) beside what
the product priced `kernel: fi_mla` over an fp8 cache at before (pred_main_us: FlashInfer's own fp8 MLA kernel), with
the bf16-pool controls. Writes hwmodels/calibration/data/production_kernels/fi_mla_fp8cast_h200_prediction_2026-11-29.csv
with the model's commit.

--extend: SGLang's flashinfer_mla extend over a cached prefix (EXTEND_SHAPES: the wrapper planned causal at prompt
rows, over an fp8 pool after the cast or over a bf16 one), priced by the product as committed (the dense strategy's
generic op for the attention: no FlashInfer MLA prefill model). Writes fi_mla_extend_h200_prediction_2026-11-29.csv.

--extend2: extend grid 2 (EXTEND_SHAPES2, blind): the absorbed extend (families.MLA_ABSORBED_EXTEND) against main's
generic op. Writes fi_mla_extend_h200_grid2_prediction_2026-11-29.csv.

--extend3: extend grid 3 (EXTEND_SHAPES3, blind): FlashInfer's causal MLAPlan (flashinfer.py fi_mla_extend) against
the same plan at the decode fit's stage time and main's absorbed generic op. Writes
fi_mla_extend_h200_grid3_prediction_2026-11-29.csv.

--boundary: FlashInfer's MLA decode where the plan's pieces straddle the clusters (BOUNDARY_SHAPES, bf16 pool).
Writes fi_mla_boundary_h200_prediction_2026-11-29.csv.

    python lab/kernels/predict_fi_mla_fp8cast.py [--extend | --extend2 | --extend3 | --boundary]
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _committed import head_or_exit  # noqa: E402

from hwmodels.spec import load_hardware  # noqa: E402
from simulator.calibration import fi_mla_fp8cast_h200 as S  # noqa: E402


def main() -> None:
    commit = head_or_exit(ROOT)
    modes = {"--boundary": (S.predict_boundary, S.PREDICTION_BOUNDARY),
             "--extend3": (S.predict_extend3, S.PREDICTION_EXTEND3), "--extend2": (S.predict_extend2, S.PREDICTION_EXTEND2),
             "--extend": (S.predict_extend, S.PREDICTION_EXTEND)}
    flag = next((f for f in modes if f in sys.argv[1:]), None)
    pricer, name = modes.get(flag, (S.predict, S.PREDICTION))
    res = pricer(load_hardware("H200"))
    res["model_commit"] = commit
    res.to_csv(S.DATA_DIR / name, index=False, float_format="%.4f")
    print(f"{len(res)} rows priced at {commit[:10]} -> {S.DATA_DIR / name}")
    print(res[[c for c in res.columns if c != "model_commit"]].round(1).to_string())


if __name__ == "__main__":
    main()
