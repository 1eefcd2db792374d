"""Grid 7 (simulator/calibration/topk_engines.py GRID7) priced by the model at main 6648a5d:

    git archive 6648a5d | tar -x -C EXPORT
    python lab/kernels/price_topk_grid7_main.py EXPORT simulator/calibration/topk_engines.py OUT.csv

EXPORT's simulator and hwmodels are imported (checked); GRID7 is read from the file given. Writes pred_main_us (main's
product price: SGLang's model, TensorRT-LLM's borrowed terms) and pred_mainjob_us (main's calibration-only TensorRT-LLM
job model, fitted on TRT_FIT by main's code).
"""
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from topk_main_pricing import load_export, read_grid, sglang_rows, write  # noqa: E402


def main(export: str, grid_file: str, out: str) -> None:
    E, F, hw = load_export(export)
    grid = read_grid(grid_file, "GRID7 = (", "GRID7_PREDICTION")["GRID7"]
    x = E.fit_trtllm_job(hw)
    print("main's job terms", x)
    t = sglang_rows(E, hw, grid)
    t["pred_mainjob_us"] = np.nan
    jf = E.trtllm_job_frame(grid)
    jf["pred_main_us"] = E.predict_us(jf, hw, hw.efficiency)
    jf["pred_mainjob_us"] = E.predict_trtllm_job(jf, hw, x)
    write(pd.concat([t, jf], ignore_index=True)[F.SHAPE_KEYS + ["pred_main_us", "pred_mainjob_us"]], out)


if __name__ == "__main__":
    main(*sys.argv[1:4])
