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
    assert TR.SHIPPED == "cand"   # grid 1's decision (grid 2 then shipped CAND2: SHIPPED2)
    # novelty: no blind shape was in measure.py's campaign (hidden 4096 / 14336)
    assert not set(TR.GRID) & {(r, n) for r in (1, 16, 64, 256, 1024, 4096, 16384) for n in (4096, 14336)}


def test_grid2_form_structure_warm_reread_and_stream():
    c = dict(TR.CAND2, stream_bps=1e30)   # no stream: the chain alone
    # a lone row's round: l_hit while the input's rotation footprint sits under warm_lo x L2, l_miss above warm_hi
    warm = TR.rmsnorm2_us(1, 1024, c, sets=1) - c["t0_us"]
    cold = TR.rmsnorm2_us(1, 1024, c, sets=1e6) - c["t0_us"]
    assert np.isclose(warm, 2 * c["l_hit_us"]) and np.isclose(cold, 2 * c["l_miss_us"])
    # the chain counts waves of SMs x 16 blocks, as grid 1's form
    assert np.isclose(TR.rmsnorm2_us(2113, 4096, c, sets=1) - TR.rmsnorm2_us(2112, 4096, c, sets=1),
                      8 * c["l_hit_us"])
    # the second pass re-reads its row from HBM once one wave's rows overflow rr_hi x L2; not under rr_lo x L2
    z = dict(TR.CAND2, t0_us=0.0, l_hit_us=0.0, l_miss_us=0.0, l2_out_share=0.0)
    n = 16384   # one wave: 2112 rows x 32 KiB = 66 MiB > 0.65 x 50 MiB
    big = TR.rmsnorm2_us(2112, n, z, sets=1)
    assert np.isclose(big, (2 * 2 * 2112 * n + 2 * n + 2 * 2112 * n) / TR.CAND2["stream_bps"] * 1e6)
    small = TR.rmsnorm2_us(64, 2048, z, sets=1)
    assert np.isclose(small, (2 * 64 * 2048 + 2 * 2048 + 2 * 64 * 2048) / TR.CAND2["stream_bps"] * 1e6)
    # the harness's rotation sets (lab/harness.py: 256 MiB of input + output, at most 16) are the default
    assert TR.harness_sets(1, 4096) == 16 and TR.harness_sets(16384, 14336) == 1 and TR.harness_sets(2048, 8192) == 4
    assert np.isclose(TR.rmsnorm2_us(512, 16384), TR.rmsnorm2_us(512, 16384, sets=8))
    # grid 2 shipped its form (grid 3 then shipped CAND3: test_grid3_files_and_judgement); another device's stream
    # scales with its HBM rate
    assert TR.SHIPPED2 == "cand2"
    assert TR.shipped_us(16384, 8192, hbm_bps=4.8e12) < TR.shipped_us(16384, 8192)


def test_grid2_files_and_judgement():
    with DF.open_text(DATA_DIR / TR.GRID2_PREDICTION) as f:
        pred = pd.read_csv(f)
    assert len(pred) == len(TR.GRID2) + len(TR.CONTROLS2) == 35
    # the committed prices are the constants' (nothing refitted after the measurement)
    assert np.allclose(pred["pred_cand2_us"], TR.rmsnorm2_us(pred["rows"], pred["n"], TR.CAND2), atol=1e-3)
    assert np.allclose(pred["pred_cand2b_us"], TR.rmsnorm2_us(pred["rows"], pred["n"], TR.CAND2B), atol=1e-3)
    assert np.allclose(pred["pred_main_us"], TR.rmsnorm_us(pred["rows"], pred["n"], TR.CAND), atol=1e-3)
    m = TR.measured2()
    assert set(TR.GRID2_COLUMNS) <= set(m.columns) and len(m) == 35
    assert (m["kind"] == "blind").sum() == 32 and (m["kind"] == "control").sum() == 3
    assert (m["median_us"] > 0).all() and (m["rotation_sets"] == TR.harness_sets(m["rows"], m["n"])).all()
    assert (m[m["kind"] == "blind"]["regime"] == "mid").sum() >= 12
    g = TR.accuracy(m).set_index("regime")
    assert (g.loc[list(TR.REGIMES), "cand2_met"] == "yes").sum() == 3
    assert (g.loc[list(TR.REGIMES), "main_met"] == "yes").sum() == 1
    assert TR.ship_decision(g.reset_index()) and TR.SHIPPED2 == "cand2"
    # novelty: no blind shape of grid 2 was in the campaign or in grid 1
    camp = {(r, n) for r in (1, 16, 64, 256, 1024, 4096, 16384) for n in (4096, 14336)}
    assert not set(TR.GRID2) & (camp | set(TR.GRID))


def test_grid2_second_lease_carries_grid2s_committed_prices():
    """The replicate's rows are grid 2's shapes with grid 2's committed H100 prices (not the H200 prices the run's
    command line named); the shipped form meets all three regimes there too."""
    first, rep = TR.measured2(), TR.measured2(TR.GRID2_REPLICATE)
    assert len(rep) == 35 and set(map(tuple, rep[["rows", "n"]].to_numpy())) == set(map(tuple, first[["rows", "n"]].to_numpy()))
    j = first.merge(rep, on=["rows", "n"], suffixes=("", "_rep"))
    for _, col in TR.MODELS2:
        assert np.allclose(j[col], j[f"{col}_rep"])
    assert (rep["rotation_sets"] == TR.harness_sets(rep["rows"], rep["n"])).all()
    g = TR.accuracy(rep).set_index("regime")
    assert (g.loc[list(TR.REGIMES), "cand2_met"] == "yes").sum() == 3


def test_h200_prediction_is_the_transferred_forms():
    from simulator.calibration import torch_rmsnorm_h200 as H

    with DF.open_text(DATA_DIR / H.PREDICTION) as f:
        pred = pd.read_csv(f)
    now = H.prediction_table()
    assert len(pred) == 35 and list(pred.columns) == list(now.columns)
    for _, col in H.MODELS:
        assert np.allclose(pred[col], now[col], atol=1e-3)
    # the H200's faster HBM makes the stream rows cheaper than the H100's prices of the same shapes
    h100 = TR.rmsnorm2_us(pred["rows"], pred["n"], TR.CAND2)
    assert (pred["pred_cand2_us"] <= h100 + 1e-3).all() and (pred["pred_cand2_us"] < h100 - 1e-3).any()


def test_h200_run_carries_the_committed_h200_prices():
    from simulator.calibration import torch_rmsnorm_h200 as H

    m = H.measured()
    with DF.open_text(DATA_DIR / H.PREDICTION) as f:
        pred = pd.read_csv(f)
    j = pred.merge(m, on=["rows", "n"], suffixes=("", "_run"))
    assert len(m) == len(j) == 35 and (m["median_us"] > 0).all()
    for _, col in H.MODELS:
        assert np.allclose(j[col], j[f"{col}_run"])
    g = H.accuracy(m).set_index("regime")
    assert (g.loc[list(TR.REGIMES), "cand3_met"] == "yes").sum() == 3


def test_grid3_form_structure_issue_term_and_overlap():
    # chain and stream off: what is left over T0 is the SM's issue work, ceil(rows / SMs) x (c_blk + rounds x c_rnd)
    z = dict(TR.CAND3, l_hit_us=0.0, l_miss_us=0.0, stream_bps=1e30)
    for rows, n in ((1, 512), (133, 513), (16000, 256), (2112, 1664)):
        issue = np.ceil(rows / 132) * (z["c_blk_us"] + np.ceil(n / 512) * z["c_rnd_us"])
        assert np.isclose(TR.rmsnorm3_us(rows, n, z, sets=1) - z["t0_us"], issue)
        assert np.isclose(TR.rmsnorm3_us(rows, n, z, sets=1, form="E") - z["t0_us"], issue)
    # p = 1 without the issue term is grid 2's sum (same chain, bytes); p > 1 overlaps the three (never above the sum)
    c1 = dict(TR.CAND2, c_blk_us=0.0, c_rnd_us=0.0)
    r, n = np.array([1, 700, 2060, 14000, 30720]), np.array([4096, 9216, 2048, 1000, 2048])
    assert np.allclose(TR.rmsnorm3_us(r, n, c1), TR.rmsnorm2_us(r, n, TR.CAND2))
    summed = TR.rmsnorm3_us(r, n, dict(TR.CAND3, p=1.0))
    assert (TR.rmsnorm3_us(r, n, TR.CAND3) < summed).all()
    # the stream sits at the datasheet (3.35 TB/s), not above it as grid 2's 3.66
    assert TR.CAND3["stream_bps"] <= TR.H100_HBM_BPS < TR.CAND2["stream_bps"]
    # the target rows: n <= 2048 at >= 8 blocks per SM
    assert list(TR.target([925, 924, 2100, 2100], [896, 896, 2048, 2049])) == [True, False, True, False]


def test_grid3_files_and_judgement():
    with DF.open_text(DATA_DIR / TR.GRID3_PREDICTION) as f:
        pred = pd.read_csv(f)
    assert len(pred) == len(TR.GRID3) + len(TR.CONTROLS3) == 38
    # the committed prices are the constants' (nothing refitted after the measurement)
    assert np.allclose(pred["pred_main_us"], TR.rmsnorm2_us(pred["rows"], pred["n"], TR.CAND2), atol=1e-3)
    assert np.allclose(pred["pred_cand3_us"], TR.rmsnorm3_us(pred["rows"], pred["n"], TR.CAND3), atol=1e-3)
    assert np.allclose(pred["pred_cand3e_us"], TR.rmsnorm3e_us(pred["rows"], pred["n"]), atol=1e-3)
    m = TR.measured3()
    assert set(TR.GRID3_COLUMNS) <= set(m.columns) and len(m) == 38
    assert (m["kind"] == "blind").sum() == 35 and (m["kind"] == "control").sum() == 3
    assert (m["median_us"] > 0).all() and (m["rotation_sets"] == TR.harness_sets(m["rows"], m["n"])).all()
    b = m[m["kind"] == "blind"]
    assert (b["target"] == 1).sum() == 21 >= 12
    assert (b["target"] == TR.target(b["rows"], b["n"]).astype(int)).all()
    g = TR.accuracy(m, TR.MODELS3).set_index("regime")
    assert (g.loc[list(TR.REGIMES), "cand3_met"] == "yes").sum() == 3
    assert (g.loc[list(TR.REGIMES), "main_met"] == "yes").sum() == 2
    assert TR.ship_decision(g.reset_index(), "cand3", "main") and TR.SHIPPED3 == "cand3"
    assert np.isclose(TR.shipped_us(300, 6144), TR.rmsnorm3_us(300, 6144, TR.CAND3))
    assert TR.shipped_us(16384, 8192, hbm_bps=4.8e12) < TR.shipped_us(16384, 8192)
    # novelty: no blind shape of grid 3 was in the campaign, grid 1 or grid 2 (its replicate: grid 2's shapes)
    camp = {(r, n) for r in (1, 16, 64, 256, 1024, 4096, 16384) for n in (4096, 14336)}
    assert not set(TR.GRID3) & (camp | set(TR.GRID) | set(TR.GRID2) | set(TR.CONTROLS2))
    assert set(TR.CONTROLS3) <= camp | set(TR.GRID2)
