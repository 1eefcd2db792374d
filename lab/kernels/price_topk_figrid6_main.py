"""Check FlashInfer grid 6's `pred_main_us` against the model of main's checkout: price the committed prediction's
shapes with simulator.calibration.topk_engines (frame, predict_us) as imported from the checkout first on PYTHONPATH
(run as `PYTHONPATH=/path/to/main python lab/kernels/price_topk_figrid6_main.py PREDICTION.csv`) and print the largest
relative difference to the file's pred_main_us."""
from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from hwmodels.spec import load_hardware
from simulator.calibration import topk_engines as TE

p = pd.read_csv(sys.argv[1])
shapes = list(dict.fromkeys(zip(p["dist"], p["rows"].astype(int), p["n"].astype(int))))
t = TE.frame(shapes)
t = t[t["kernel"] == TE.CSV_KERNEL["flashinfer"]]
pt = t.copy()
pt["kernel"] = TE.CSV_KERNEL["flashinfer_pt"]
t = pd.concat([t, pt], ignore_index=True)
t["pred"] = TE.predict_us(t, load_hardware("H100-SXM"), load_hardware("H100-SXM").efficiency)
j = p.merge(t[["kernel", "dist", "rows", "n", "pred"]], on=["kernel", "dist", "rows", "n"], how="inner")
d = np.abs(j["pred"] / j["pred_main_us"].to_numpy(float) - 1.0)
print(f"{TE.__file__}: {len(j)} of {len(p)} rows, largest |difference| to pred_main_us {100 * d.max():.4f} %")
