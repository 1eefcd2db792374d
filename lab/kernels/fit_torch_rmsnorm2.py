"""s27rn: fit grid 2's candidate form of torch's RMSNorm (simulator.calibration.torch_rmsnorm.rmsnorm2_us) on the 44
looked-at rows: measure.py's 14 campaign rows (H100, 2026-11-22) + grid 1's 30 (27 blind, now looked-at, + 3 controls).
Soft-L1 least squares on log(pred / measured) over T0, l_hit, l_miss, STREAM, p (the ramps held at CAND2's).
    python lab/kernels/fit_torch_rmsnorm2.py [max_stream_TBps]     # 4 -> CAND2, 3.0 -> CAND2B"""
import sys

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from hwmodels import datafiles as DF
from hwmodels.calibration import DATA_DIR
from simulator.calibration import torch_rmsnorm as TR

with DF.open_text(DATA_DIR / "nvidia-h100-80gb-hbm3_2026-11-22.csv") as f:
    c = pd.read_csv(f)
c = c[(c.family == "elementwise") & (c.op_kind == "rmsnorm")].rename(columns={"batch": "rows"})
g = TR.measured1()
d = pd.concat([c[["rows", "n", "median_us", "rotation_sets"]], g[["rows", "n", "median_us", "rotation_sets"]]])
names = ["t0_us", "l_hit_us", "l_miss_us", "stream_bps", "p"]


def consts(x):
    k = dict(TR.CAND2, **dict(zip(names, x)))
    k["stream_bps"] = x[3] * 1e12
    return k


def res(x):
    return np.log(TR.rmsnorm2_us(d.rows, d.n, consts(x), sets=d.rotation_sets) / d.median_us)


hi = float(sys.argv[1]) if len(sys.argv) > 1 else 4.0
s = least_squares(res, [2.5, 0.34, 0.64, 2.8, 2.0], loss="soft_l1", f_scale=0.05,
                  bounds=([0, 0.1, 0.1, 1, 1], [5, 1, 2, hi, 8]))
print(len(d), "rows:", {k: round(v, 4) for k, v in zip(names, s.x)})
e = np.abs(np.exp(res(s.x)) - 1) * 100
print("median / p90 |err| %.1f / %.1f %%" % (np.median(e), np.percentile(e, 90)))
