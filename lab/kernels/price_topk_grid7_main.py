"""Grid 7 (simulator/calibration/topk_engines.py GRID7) priced by the model at main 6648a5d:

    git archive 6648a5d | tar -x -C EXPORT
    python lab/kernels/price_topk_grid7_main.py EXPORT simulator/calibration/topk_engines.py OUT.csv

EXPORT's simulator and hwmodels are imported (checked); GRID7 is read from the file given. Writes pred_main_us (main's
product price: SGLang's model, TensorRT-LLM's borrowed terms) and pred_mainjob_us (main's calibration-only TensorRT-LLM
job model, fitted on TRT_FIT by main's code).
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
    exec(src[src.index("GRID7 = ("):src.index("GRID7_PREDICTION")], ns)
    grid = ns["GRID7"]
    hw = load_hardware("H100-SXM")
    x = E.fit_trtllm_job(hw)
    print("main's job terms", x)
    t = E.frame(grid)
    t = t[t["kernel"] == "sgl_topk"].reset_index(drop=True)
    t["pred_main_us"] = E.predict_us(t, hw, hw.efficiency)
    t["pred_mainjob_us"] = np.nan
    jf = E.trtllm_job_frame(grid)
    jf["pred_main_us"] = E.predict_us(jf, hw, hw.efficiency)
    jf["pred_mainjob_us"] = E.predict_trtllm_job(jf, hw, x)
    res = pd.concat([t, jf], ignore_index=True)[F.SHAPE_KEYS + ["pred_main_us", "pred_mainjob_us"]]
    res.to_csv(out, index=False, float_format="%.4f")
    print(len(res), "rows ->", out)


if __name__ == "__main__":
    main(*sys.argv[1:4])
