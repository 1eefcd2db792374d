"""Grid 10 (simulator/calibration/topk_engines.py GRID10) priced by the model at main 46789a6 (the product's price before
a 1024-thread CTA was alone on its SM, topk_trtllm.WIDE_ALONE):

    git archive 46789a6 | tar -x -C EXPORT
    python lab/kernels/price_topk_grid10_main.py EXPORT simulator/calibration/topk_engines.py OUT.csv

EXPORT's simulator and hwmodels are imported (checked); GRID10 and GRID10_SGL_CONTROLS are read from the file given.
Writes pred_main_us: SGLang's controls by main's SGLang model, TensorRT-LLM by main's product price
(topk_trtllm.add_priced_ops through its calibration's predict_trtllm: the decode dispatch).
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
    exec(src[src.index("GRID10_WIDE_MULTI = ("):src.index("GRID10_PREDICTION")], ns)
    hw = load_hardware("H100-SXM")
    t = E.frame(list(ns["GRID10_SGL_CONTROLS"]))
    t = t[t["kernel"] == "sgl_topk"].reset_index(drop=True)
    t["pred_main_us"] = E.predict_us(t, hw, hw.efficiency)
    j = E._trtllm_frame(ns["GRID10"])
    j["pred_main_us"] = E.predict_trtllm(j, hw)
    res = pd.concat([t, j], ignore_index=True)[F.SHAPE_KEYS + ["pred_main_us"]]
    assert np.isfinite(res["pred_main_us"]).all()
    res.to_csv(out, index=False, float_format="%.4f")
    print(len(res), "rows ->", out)


if __name__ == "__main__":
    main(*sys.argv[1:4])
