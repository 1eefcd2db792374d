"""The H200's own engines' all-reduce terms: frozen before grid 14, priced late on its H200 rows, shipped."""
from __future__ import annotations

import numpy as np
import pandas as pd

from hwmodels import datafiles as DF
from hwmodels.spec import load_hardware
from simulator.calibration import engine_allreduce as EA
from simulator.calibration import engine_allreduce_grid12 as G12
from simulator.calibration import engine_allreduce_grid14 as G14
from simulator.calibration import engine_allreduce_h200 as H


def test_the_late_prices_are_the_frozen_candidate_and_the_shipped_h200():
    h200, h100 = load_hardware("H200"), load_hardware("H100-SXM")
    # frozen: the candidate's code path reproduces its grid-12 prices, committed before grid 14 was measured
    g12 = pd.read_csv(DF.resolve(EA.DATA_DIR / G12.BLIND12_PRED_CSV)).head(12)
    assert np.allclose(np.round(EA.predict_with(g12, G12.h200_candidate(h200, h100), {}), 3), g12["pred_new_us"], atol=0)
    late = pd.read_csv(EA.DATA_DIR / H.H200_GRID14_PRED_CSV)
    assert len(late) == 235 and (late["pred_new_us"] > 0).all()
    # shipped until grid 15 (H200.yaml now carries GRID15_H200_CANDIDATE, engine_allreduce_grid15): the GRID12 terms
    # + the H100's custom-kind link terms (h200_candidate) price grid 14 as pred_new13_us
    sub = late.head(20)
    # (grid 16's rules on the H200 as they were shipped then: grid 24's link keys came later and do not apply here)
    from simulator.calibration.engine_allreduce_grid16 import GRID16_H200_RULES, with_rules
    then = with_rules(h200, GRID16_H200_RULES)
    assert np.allclose(np.round(EA.predict_us(sub, G12.h200_candidate(then, h100)), 3), sub["pred_new13_us"], atol=0)


def test_grid14_ran_on_h200s():
    meas = pd.read_csv(DF.glob(EA.DATA_DIR, G14.BLIND14_MEAS_GLOB)[-1])
    assert set(meas["device"]) == {"NVIDIA H200"} and len(meas) == 235
