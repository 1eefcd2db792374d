"""Grid 1's committed prediction of torch's own RMSNorm kernel: main's price (simulator.calibration.fit's builder) beside
the kernel's form (simulator.calibration.torch_rmsnorm). Its own module because fit prices the report's rows with the
form, so torch_rmsnorm must not import fit; this module imports both. `python -m
simulator.calibration.torch_rmsnorm_prediction [--grid2]` prints the table grid 1's (grid 2's) prediction CSV holds."""
from __future__ import annotations

import numpy as np
import pandas as pd

from simulator.calibration.torch_rmsnorm import CAND, CONTROLS, GRID, NOL2, regime, rmsnorm_us


def main_us(rows, n) -> np.ndarray:
    """Main's price of F.rms_norm rows (simulator.calibration.fit's builder: one elementwise op, one block per row,
    with the committed H100 fitted efficiencies)."""
    from dataclasses import replace

    from hwmodels.spec import load_efficiency
    from simulator.calibration import fit as F

    rows = np.asarray(rows, dtype=float)
    df = pd.DataFrame({"family": "elementwise", "op_kind": "rmsnorm", "dtype": "bf16", "batch": rows,
                       "n": np.asarray(n, dtype=float), "device": "NVIDIA H100 80GB HBM3", "backend": "F.rms_norm"})
    hw = F.spec_for(df)
    eff = load_efficiency(hw.name)
    hw = replace(hw, launch_graph_s=eff.launch_graph_s or hw.launch_graph_s,
                 launch_eager_s=eff.launch_eager_s or hw.launch_eager_s)   # as fit.errors prices a row
    return F.predict_us(F.build_ops(df, hw.units), hw, eff, df["family"].to_numpy())


def prediction_table() -> pd.DataFrame:
    """Every grid-1 row (and control) priced by main and both candidates (the committed prediction CSV)."""
    shapes = [(r, n, "blind") for r, n in GRID] + [(r, n, "control") for r, n in CONTROLS]
    t = pd.DataFrame(shapes, columns=["rows", "n", "kind"])
    t["regime"] = [regime(r) for r in t["rows"]]
    t["pred_main_us"] = main_us(t["rows"], t["n"]).round(3)
    t["pred_cand_us"] = rmsnorm_us(t["rows"], t["n"], CAND).round(3)
    t["pred_nol2_us"] = rmsnorm_us(t["rows"], t["n"], NOL2).round(3)
    return t



def prediction_table2() -> pd.DataFrame:
    """Every grid-2 row (controls first: the first is also the run's warm-up) priced by main f845e58's shipped form
    (`main`: torch_rmsnorm.CAND, grid 1's), grid 2's candidate (`cand2`: CAND2), its named variant (`cand2b`: CAND2B)
    and the builder's one elementwise op (`builder`, for reference); `sets` = the harness's rotation sets."""
    from simulator.calibration.torch_rmsnorm import CAND2, CAND2B, CONTROLS2, GRID2, harness_sets, rmsnorm2_us

    shapes = [(r, n, "control") for r, n in CONTROLS2] + [(r, n, "blind") for r, n in GRID2]
    t = pd.DataFrame(shapes, columns=["rows", "n", "kind"])
    t["regime"] = [regime(r) for r in t["rows"]]
    t["sets"] = harness_sets(t["rows"], t["n"]).astype(int)
    t["pred_main_us"] = rmsnorm_us(t["rows"], t["n"], CAND).round(3)
    t["pred_cand2_us"] = rmsnorm2_us(t["rows"], t["n"], CAND2).round(3)
    t["pred_cand2b_us"] = rmsnorm2_us(t["rows"], t["n"], CAND2B).round(3)
    t["pred_builder_us"] = main_us(t["rows"], t["n"]).round(3)
    return t


def prediction_table3() -> pd.DataFrame:
    """Every grid-3 row (controls first: the first is also the run's first timed shape) priced by main 4c6b642's
    shipped form (`main`: torch_rmsnorm.CAND2, grid 2's), grid 3's candidate (`cand3`: CAND3) and its named variant
    (`cand3e`: CAND3E); `target` = n <= 2048 at >= 8 blocks per SM; `sets` = the harness's rotation sets."""
    from simulator.calibration.torch_rmsnorm import (
        CAND2,
        CAND3,
        CONTROLS3,
        GRID3,
        harness_sets,
        rmsnorm2_us,
        rmsnorm3_us,
        rmsnorm3e_us,
        target,
    )

    shapes = [(r, n, "control") for r, n in CONTROLS3] + [(r, n, "blind") for r, n in GRID3]
    t = pd.DataFrame(shapes, columns=["rows", "n", "kind"])
    t["regime"] = [regime(r) for r in t["rows"]]
    t["target"] = target(t["rows"], t["n"]).astype(int)
    t["sets"] = harness_sets(t["rows"], t["n"]).astype(int)
    t["pred_main_us"] = rmsnorm2_us(t["rows"], t["n"], CAND2).round(3)
    t["pred_cand3_us"] = rmsnorm3_us(t["rows"], t["n"], CAND3).round(3)
    t["pred_cand3e_us"] = rmsnorm3e_us(t["rows"], t["n"]).round(3)
    return t


if __name__ == "__main__":
    import sys

    if "--grid3" in sys.argv:
        print(prediction_table3().to_string(index=False))
    else:
        print((prediction_table2() if "--grid2" in sys.argv else prediction_table()).to_string(index=False))
