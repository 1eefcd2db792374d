"""torch's own RMSNorm kernel form (simulator/calibration/torch_rmsnorm.py) and its blind grid 1's committed files."""
from __future__ import annotations

import numpy as np
import pandas as pd

from hwmodels import datafiles as DF
from simulator.calibration import torch_rmsnorm as TR
from simulator.calibration.fit import DATA_DIR


def test_form_structure_rounds_waves_and_l2_output():
    c = dict(TR.CAND, stream_bps=1e30)   # no stream: the chain alone
    # a round is 128 threads x 4 elements: n 512 and 513 differ by one round
    assert np.isclose(TR.rmsnorm_us(1, 513, c) - TR.rmsnorm_us(1, 512, c), c["round_us"])
    # a wave is 132 SMs x 16 blocks: one more row past 2112 adds a wave of the row's chain
    w = TR.rmsnorm_us(2113, 4096, c) - TR.rmsnorm_us(2112, 4096, c)
    assert np.isclose(w, 8 * c["round_us"])
    # an output within the L2 share is never written to HBM; the no-L2 variant writes it
    small = (64, 4096)
    kept = TR.rmsnorm_us(*small, dict(TR.CAND, round_us=0.0, t0_us=0.0))
    assert np.isclose(kept, (2 * 64 * 4096 + 2 * 4096) / TR.CAND["stream_bps"] * 1e6)
    assert TR.rmsnorm_us(*small, dict(TR.CAND, l2_out_share=0.0)) > TR.rmsnorm_us(*small, TR.CAND)
    # another device's stream scales with its datasheet HBM rate only
    assert TR.rmsnorm_us(16384, 8192, hbm_bps=4.8e12) < TR.rmsnorm_us(16384, 8192)
    assert TR.report_part("H100-SXM") == "looked-at" and TR.report_part("H200") == "transfer"


def test_grid1_files_and_judgement():
    with DF.open_text(DATA_DIR / TR.GRID1_PREDICTION) as f:
        pred = pd.read_csv(f)
    assert len(pred) == len(TR.GRID) + len(TR.CONTROLS) == 30
    # the committed candidate prices are the shipped constants' (nothing refitted after the measurement)
    assert np.allclose(pred["pred_cand_us"], TR.rmsnorm_us(pred["rows"], pred["n"], TR.CAND), atol=1e-3)
    assert np.allclose(pred["pred_nol2_us"], TR.rmsnorm_us(pred["rows"], pred["n"], TR.NOL2), atol=1e-3)
    m = TR.measured1()
    assert set(TR.GRID1_COLUMNS) <= set(m.columns)
    assert (m["kind"] == "blind").sum() == 27 and (m["kind"] == "control").sum() == 3
    assert (m["median_us"] > 0).all()
    g = TR.grid1_accuracy(m).set_index("regime")
    assert (g.loc[list(TR.REGIMES), "cand_met"] == "yes").sum() == 2
    assert (g.loc[list(TR.REGIMES), "main_met"] == "yes").sum() == 0
    assert TR.SHIPPED == "cand"
    # novelty: no blind shape was in measure.py's campaign (hidden 4096 / 14336)
    assert not set(TR.GRID) & {(r, n) for r in (1, 16, 64, 256, 1024, 4096, 16384) for n in (4096, 14336)}
