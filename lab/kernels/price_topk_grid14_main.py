"""Check grid 14's `pred_main_us` against the model of main's checkout: price the committed grid 14 prediction's
TensorRT-LLM rows with simulator.calibration.topk_engines.predict_trtllm as imported from the checkout first on
PYTHONPATH (run as `PYTHONPATH=/path/to/main python lab/kernels/price_topk_grid14_main.py PREDICTION.csv`) and print the
largest relative difference to the file's pred_main_us."""
from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from hwmodels.spec import load_hardware
from simulator.calibration import topk_engines as TE

t = pd.read_csv(sys.argv[1])
t = t[t["kernel"] != "sgl_topk"].reset_index(drop=True)
p = TE.predict_trtllm(t, load_hardware("H100-SXM"))
d = np.abs(p / t["pred_main_us"].to_numpy(float) - 1.0)
print(f"{TE.__file__}: {len(t)} rows, largest |difference| to pred_main_us {100 * d.max():.4f} %")
