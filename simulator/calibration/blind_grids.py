"""Join a production-attention shape grid measured on the device with the two price files committed BEFORE it was
measured (the revised model's and the model before the revision), the blind tests benchmarks/calibration_accuracy.py
prints (FRESH MLA / TRITON SHAPES, FLASHINFER CHECK SHAPES).

Each price file holds the grid's shapes (simulator.calibration.fit_production_attention SHAPE_KEYS), `pred_us` and
`model_commit` (the commit of the model that priced them, written by lab/kernels/predict_fresh_production_attention.py).
"""
from __future__ import annotations

import pandas as pd

from hwmodels import datafiles as DF

#: the shape keys that are text; every other key is compared as a number (the price files store them as written)
TEXT_KEYS = ("family", "model", "dtype")


def _shapes(path, keys) -> pd.DataFrame:
    d = pd.read_csv(path)
    for k in keys:
        if k not in TEXT_KEYS:
            d[k] = pd.to_numeric(d[k], errors="coerce")
    return d


def blind_errors(FP, glob: str, pred_name: str, before_name: str):
    """(joined rows, measured file name) for the newest measured file matching `glob` in FP.DATA_DIR (launch-profile
    `_grids` files left out), joined on the shape keys with `pred_name` (the revised model: pred_us, model_commit) and
    `before_name` (before_us, before_commit): err / err_before = prediction / measured median - 1, in %, plus the
    regime labels of FP.regime_labels. (None, "") while the measurement or either price file is missing."""
    ms = sorted(p for p in DF.glob(FP.DATA_DIR, glob) if "_grids" not in p.name)
    pp, pb = DF.resolve(FP.DATA_DIR / pred_name), DF.resolve(FP.DATA_DIR / before_name)
    if not ms or not pp.is_file() or not pb.is_file():
        return None, ""
    meas = FP.load(ms[-1])
    keys = [k for k in FP.SHAPE_KEYS if k in meas.columns]
    pr, be = _shapes(pp, keys), _shapes(pb, keys)
    m = meas.merge(pr[keys + ["pred_us", "model_commit"]], on=keys, how="inner")
    m = m.merge(be[keys + ["pred_us", "model_commit"]].rename(columns={"pred_us": "before_us",
                                                                      "model_commit": "before_commit"}),
                on=keys, how="inner")
    m["err"] = (m["pred_us"] / m["median_us"] - 1.0) * 100.0
    m["err_before"] = (m["before_us"] / m["median_us"] - 1.0) * 100.0
    m = pd.concat([m.reset_index(drop=True), FP.regime_labels(m).drop(columns=["family"])], axis=1)
    m.attrs["timed_of"] = len(meas) + meas.attrs.get("failed", 0)
    return m, ms[-1].name
