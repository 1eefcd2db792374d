"""Blind grid 12 of the engines' all-reduce kernels: the H200's own engines' terms (GRID12_CANDIDATE: h200_links,
fit_h200_terms, h200_candidate, and their writer write_h200_engine_terms, superseded after grid 15 by
engine_allreduce_grid15.write_h200_grid15_terms) (moved unchanged from engine_allreduce.py, whose live code it
imports; the grid's record is the comment above its shapes). `python -m simulator.calibration.engine_allreduce_grid12
MODEL_COMMIT` writes its prediction.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from hwmodels.spec import HardwareSpec
from simulator.calibration.engine_allreduce import (
    DATA_DIR,
    IMPL_KIND,
    TERMS,
    fit_engine_terms,
    grid,
    predict_with,
    size_regime,
    trtllm_launch_columns,
    with_engine_terms,
)
from simulator.calibration.engine_allreduce_grid11 import BLIND11_REPLICATE_CSV

#: blind grid 12 (4 x H200, the H200's OWN terms): main prices the H200 as shipped at BLIND12_MAIN_COMMIT (H200.yaml
#: carries no engine_ar and no custom-kind link terms: the engines' kernels fall back to the own kernel's structure at
#: the datasheet link rate, memory / link_ceiling 1.0, fixed 0, a barrier = the spec's 3 us link latency); the candidate
#: (GRID12_CANDIDATE, h200_candidate) = the H200's own engines' terms (fit_engine_terms, the family's fit, on the H200
#: rows only: H200_FIT_CSVS = the 4 x H200 campaign + grid 11's first run; grid 11's replicate NOT fitted) with the
#: custom kinds' link terms (memory / link_ceiling of allreduce_1shot / _2shot) taken from the H100's own-kernel fit
#: (H200_LINKS_FROM: the same NVLink 4, 18 links, 450 GB/s; no own-kernel campaign on the H200). Shapes: token counts in
#: no earlier grid, >= 4 rows a cell; the 4-rank probes of TensorRT-LLM's two-shot at 120-132 CTAs in clusters of 4 / 8
#: (126 / 129 x 4096, 121 x 4096, 58 / 62 x 8192, 123 x 7168) price no cluster-capacity rule: flashinfer 0.6.4's
#: allreduce_fusion_kernel_launcher (trtllm_allreduce_fusion.cuh @ f1e6fdcb) sets grid = min(SMs, clusters x size) and
#: never asks how many clusters are co-resident (cudaOccupancyMaxActiveClusters), which is the die's GPC layout, in no
#: source: they are measured to read that effect, not to judge a rule
BLIND12_SHAPES = ((22, 1024), (26, 1024), (22, 1280),
                  (35, 4096), (43, 4096), (50, 4096), (54, 4096), (57, 3584),
                  (70, 4096), (86, 4096), (99, 4096), (121, 4096), (126, 4096), (58, 8192), (62, 8192),
                  (129, 4096), (189, 4096), (265, 4096), (385, 4096), (550, 4096), (690, 4096), (930, 4096),
                  (123, 7168), (197, 5120), (410, 8192),
                  (34, 768), (38, 768), (41, 768))
BLIND12_CONTROL = ((22, 1024), (26, 1024), (22, 1280),
                   (35, 4096), (50, 4096), (70, 4096), (99, 4096), (58, 8192),
                   (129, 4096), (189, 4096), (265, 4096), (385, 4096), (690, 4096),
                   (34, 768), (38, 768))
BLIND12_PRED_CSV = "engine_allreduce_blind12_prediction_H200_2026-11-27.csv.gz"
BLIND12_MEAS_GLOB = "engine_allreduce_blind12_nvidia*.csv"
BLIND12_MAIN_COMMIT = "b118817"
#: the H200 rows the H200's own terms are fitted on (grid 11's replicate, BLIND11_REPLICATE_CSV, is not)
H200_FIT_CSVS = ("engine_allreduce_nvidia-h200_x4_2026-11-26.csv", "engine_allreduce_blind11_nvidia-h200_x4_2026-11-27.csv")
#: the device whose own-kernel link terms (fit_production_allreduce.py) the H200's custom kinds take
H200_LINKS_FROM = "H100-SXM"
H200_LINK_KINDS = ("allreduce_1shot", "allreduce_2shot")
#: blind grid 12's candidate: fit_h200_terms (fit_engine_terms on H200_FIT_CSVS' 358 rows, us), as committed before grid 12
GRID12_CANDIDATE = {"barrier": 0.6998, "phase": 3.4981, "flag_store": 1.0368, "norm": 1.6308}


def h200_links(h200: HardwareSpec, src: HardwareSpec) -> HardwareSpec:
    """`h200` with the custom kinds' link terms (memory = one peer's rate, link_ceiling = every peer's together; of
    H200_LINK_KINDS) of `src` (the H100's own-kernel fit, H200_LINKS_FROM) and no engines' terms."""
    from dataclasses import replace

    from simulator.calibration.fit_production_allreduce import own_kernel

    e, s = h200.efficiency, src.efficiency
    mem = {**e.memory, **{k: s.memory[k] for k in H200_LINK_KINDS}}
    ceil = {**e.link_ceiling, **{k: s.link_ceiling[k] for k in H200_LINK_KINDS if k in s.link_ceiling}}
    return own_kernel(h200.with_efficiency(replace(e, memory=mem, link_ceiling=ceil)))


def h200_fit_rows() -> pd.DataFrame:
    """The 4 x H200 rows the H200's own terms are fitted on (H200_FIT_CSVS, 2- and 4-rank, every implementation)."""
    return pd.concat([pd.read_csv(DATA_DIR / f) for f in H200_FIT_CSVS], ignore_index=True)


def fit_h200_terms(h200: HardwareSpec, src: HardwareSpec) -> dict:
    """The H200's own engines' terms: fit_engine_terms (the family's fit) on h200_fit_rows, the link terms h200_links'."""
    return fit_engine_terms(h200_fit_rows(), h200_links(h200, src))


def h200_candidate(h200: HardwareSpec, src: HardwareSpec, terms: dict = GRID12_CANDIDATE) -> HardwareSpec:
    """Blind grid 12's candidate H200: h200_links + the engines' `terms` (us)."""
    return with_engine_terms(h200_links(h200, src), {k: terms[k] for k in TERMS})


def write_h200_engine_terms(out_dir: Path, target: str = "H200") -> tuple[Path, dict]:
    """Fit the H200's own engines' terms (fit_h200_terms) and merge them into out_dir/<target>.yaml: engine_allreduce_us,
    the record under engine_allreduce, and the custom kinds' memory / link_ceiling taken from H200_LINKS_FROM (other
    terms kept). SUPERSEDED after blind grid 15: H200.yaml's keys are now written by
    engine_allreduce_grid15.write_h200_grid15_terms (GRID15_H200_CANDIDATE); rerunning this one reverts them."""
    from hwmodels.spec import load_hardware
    from simulator.calibration import checks as C

    h200, src = load_hardware("H200"), load_hardware(H200_LINKS_FROM)
    f = fit_h200_terms(h200, src)
    se = src.efficiency
    doc = {"engine_allreduce_us": {n: f[n] for n in TERMS},
           "memory": {k: se.memory[k] for k in H200_LINK_KINDS},
           "link_ceiling": {k: se.link_ceiling[k] for k in H200_LINK_KINDS},
           "engine_allreduce": {
               "source": "simulator/calibration/engine_allreduce_grid12.py write_h200_engine_terms: "
                         f"fit_engine_terms on {', '.join(H200_FIT_CSVS)} (4 x H200, lab/kernels/"
                         "measure_engine_allreduce.py, flashinfer-"
                         "python 0.6.4: vLLM's custom all-reduce and TensorRT-LLM's all-reduce fusion, plain and + "
                         "RMSNorm, 2 and 4 ranks): barrier / phase / flag_store / norm as on the H100 (engine_allreduce "
                         f"there); the custom kinds' memory / link_ceiling are {H200_LINKS_FROM}'s own-kernel fit "
                         "(production_allreduce there: the same NVLink 4, no own-kernel campaign on the H200); "
                         f"{BLIND11_REPLICATE_CSV} not fitted; grid 12's 4 x H200 call ran on H100s, so these terms were judged on "
                         "grid 14's H200 rows (an H100 request run on 4 x H200), priced late from the frozen terms "
                         "(engine_allreduce_h200.py): 25 of 31 regimes against 3 of 31 without them",
               "links_from": H200_LINKS_FROM,
               "terms": f}}
    p = Path(out_dir) / f"{target}.yaml"
    merged = C.merge_into(p, doc, {"engine_allreduce_us": None, "engine_allreduce": None,
                                   "memory": H200_LINK_KINDS, "link_ceiling": H200_LINK_KINDS})
    return C.write_checked(p, merged, ""), f


def blind12_grid() -> pd.DataFrame:
    """Blind grid 12's rows: BLIND12_SHAPES at 4 ranks and BLIND12_CONTROL at 2 ranks, every implementation the lab script
    runs (lab/kernels/measure_engine_allreduce.py --grid blind12)."""
    return pd.concat([grid((4,), list(BLIND12_SHAPES)), grid((2,), list(BLIND12_CONTROL))], ignore_index=True)


def blind12_prediction(out: str | Path, model_commit: str) -> pd.DataFrame:
    """Write blind grid 12's prediction BEFORE it is measured: pred_main_us = main's H200 as shipped (predict_us with
    load_hardware('H200') at BLIND12_MAIN_COMMIT, unchanged on this branch), pred_new_us = the candidate (h200_candidate,
    GRID12_CANDIDATE), pred_h100_us = the H100 model (as grid 11 judged it; not scored); plus the fusion kernel's launch
    config of each TensorRT-LLM row."""
    from hwmodels.spec import load_hardware

    h200, h100 = load_hardware("H200"), load_hardware("H100-SXM")
    df = blind12_grid()
    df["kind"] = df["impl"].map(IMPL_KIND)
    df["pred_main_us"] = np.round(predict_with(df, h200, {}), 3)
    df["pred_new_us"] = np.round(predict_with(df, h200_candidate(h200, h100), {}), 3)
    df["pred_h100_us"] = np.round(predict_with(df, h100, {}), 3)
    trtllm_launch_columns(df, int(h200.units), tokens_per_cluster=False)
    df["regime"] = size_regime(df["bytes"])
    df["device"] = h200.name
    df["main_model"] = f"H200 as shipped at {BLIND12_MAIN_COMMIT} (no engine_ar, no custom-kind link terms)"
    df["new_model"] = (f"the model at {model_commit}: H200 + engines' terms (us) {GRID12_CANDIDATE} fitted on "
                       f"{', '.join(H200_FIT_CSVS)} only + {H200_LINKS_FROM}'s custom-kind link terms")
    df.to_csv(out, index=False)
    return df


def main() -> None:  # pragma: no cover - writes the committed prediction
    """`python -m simulator.calibration.engine_allreduce_grid12 MODEL_COMMIT` writes blind grid 12's prediction."""
    import sys

    df = blind12_prediction(DATA_DIR / BLIND12_PRED_CSV, sys.argv[1])
    print(df.groupby(["impl", "world", "regime"])[["pred_main_us", "pred_new_us"]].agg(["size", "median"]).round(2))


if __name__ == "__main__":
    main()
