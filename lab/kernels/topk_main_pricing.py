"""What the top-k grid pricing scripts (price_topk_grid7_main.py .. _grid12_main.py) share: a grid of
simulator/calibration/topk_engines.py priced by the model at an older main commit, unpacked from `git archive` into an
EXPORT folder whose simulator and hwmodels are imported (checked), on H100-SXM; the grid's tuples are read from the
topk_engines.py file given (the text between two markers), so the export's own copy need not have them."""
from __future__ import annotations

import importlib
import sys

import numpy as np
import pandas as pd


def load_export(export: str):
    """EXPORT's topk_engines and fit_production_topk_gemm modules and its H100-SXM spec (asserting that the imported
    simulator is EXPORT's)."""
    sys.path.insert(0, export)
    sim = importlib.import_module("simulator")
    assert sim.__file__.startswith(export), sim.__file__
    load_hardware = importlib.import_module("hwmodels.spec").load_hardware
    E = importlib.import_module("simulator.calibration.topk_engines")
    F = importlib.import_module("simulator.calibration.fit_production_topk_gemm")
    return E, F, load_hardware("H100-SXM")


def read_grid(grid_file: str, start: str, stop: str) -> dict:
    """The names defined in `grid_file` from the line starting `start` up to `stop` (executed on their own)."""
    src = open(grid_file).read()
    ns: dict = {}
    exec(src[src.index(start):src.index(stop)], ns)
    return ns


def sglang_rows(E, hw, shapes) -> pd.DataFrame:
    """SGLang's rows of `shapes` (E.frame) priced by the export's SGLang model (`pred_main_us`)."""
    t = E.frame(shapes)
    t = t[t["kernel"] == "sgl_topk"].reset_index(drop=True)
    t["pred_main_us"] = E.predict_us(t, hw, hw.efficiency)
    return t


def write(res: pd.DataFrame, out: str) -> None:
    res.to_csv(out, index=False, float_format="%.4f")
    print(len(res), "rows ->", out)


def price_controls_and_trtllm(export: str, grid_file: str, out: str, start: str, stop: str, grid: str,
                              controls: str, prefill: str | None = None) -> None:
    """SGLang's controls (the names `controls` of the grid file) by the export's SGLang model and TensorRT-LLM's rows of
    `grid` by the export's product price (its calibration's predict_trtllm: the decode dispatch), as `pred_main_us`;
    `prefill`: the name of the grid's prefill-entry shapes (priced as trt_topk_pf rows: the prefill entry's launch)."""
    E, F, hw = load_export(export)
    ns = read_grid(grid_file, start, stop)
    t = sglang_rows(E, hw, list(ns[controls]))
    j = E._trtllm_frame(ns[grid])
    if prefill is not None:
        pf = E._trtllm_frame(ns[prefill])
        pf["kernel"] = "trt_topk_pf"
        j = pd.concat([j, pf], ignore_index=True)
    j["pred_main_us"] = E.predict_trtllm(j, hw)
    res = pd.concat([t, j], ignore_index=True)[F.SHAPE_KEYS + ["pred_main_us"]]
    assert np.isfinite(res["pred_main_us"]).all()
    write(res, out)
