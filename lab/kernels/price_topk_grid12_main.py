"""Grid 12 (simulator/calibration/topk_engines.py GRID12) priced by the model at main ea0997d (the product's price
before the register-limited residency of 512-thread CTAs, topk_trtllm.REG_RESIDENT):

    git archive ea0997d | tar -x -C EXPORT
    python lab/kernels/price_topk_grid12_main.py EXPORT simulator/calibration/topk_engines.py OUT.csv

EXPORT's simulator and hwmodels are imported (checked); GRID12_* are read from the file given. Writes pred_main_us:
SGLang's controls by main's SGLang model, TensorRT-LLM by main's product price (topk_trtllm.add_priced_ops through its
calibration's predict_trtllm: the decode dispatch, the prefill entry's launch for trt_topk_pf rows).
"""
import importlib
import sys

import numpy as np
import pandas as pd


def main(export: str, grid_file: str, out: str) -> None:
    sys.path.insert(0, export)
    sim = importlib.import_module("simulator")
    assert sim.__file__.startswith(export), sim.__file__
    load_hardware = importlib.import_module("hwmodels.spec").load_hardware
    E = importlib.import_module("simulator.calibration.topk_engines")
    F = importlib.import_module("simulator.calibration.fit_production_topk_gemm")
    src = open(grid_file).read()
    ns: dict = {}
    exec(src[src.index("GRID12_SPLIT512 = ("):src.index("GRID12_PREDICTION")], ns)
    hw = load_hardware("H100-SXM")
    t = E.frame(list(ns["GRID12_SGL_CONTROLS"]))
    t = t[t["kernel"] == "sgl_topk"].reset_index(drop=True)
    t["pred_main_us"] = E.predict_us(t, hw, hw.efficiency)
    j = E._trtllm_frame(ns["GRID12"])
    pf = E._trtllm_frame(ns["GRID12_PREFILL"])
    pf["kernel"] = "trt_topk_pf"
    j = pd.concat([j, pf], ignore_index=True)
    j["pred_main_us"] = E.predict_trtllm(j, hw)
    res = pd.concat([t, j], ignore_index=True)[F.SHAPE_KEYS + ["pred_main_us"]]
    assert np.isfinite(res["pred_main_us"]).all()
    res.to_csv(out, index=False, float_format="%.4f")
    print(len(res), "rows ->", out)


if __name__ == "__main__":
    main(*sys.argv[1:4])
