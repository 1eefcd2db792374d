"""FlashInfer's top-k grid 11 (simulator/calibration/topk_flashinfer_grid11.py): the per-wave lookup candidate's
structure (rows-independent base at one and two waves, its two ramps to the miss price, grid 6's terms past two waves),
the committed prediction (76 rows, two prices, new shapes) and its measurement."""
import numpy as np
import pandas as pd
import pytest

from simulator.calibration import fit_production_topk_gemm as F
from simulator.calibration import topk_flashinfer_grid11 as G
from simulator.kernels import topk_flashinfer as FK

C = FK.PT_WAVE_CANDIDATE
L2 = FK.STREAM_FLOOR_L2_BYTES


def _n_at(rows, s):
    return s * L2 / (8.0 * rows)


def test_wave_candidate_structure():
    base = C["base_wave_phases"] + C["base_kscore_phases"] * 12.0
    # below the ramps: the base, whatever the rows (one wave: 1 and 120 rows; two waves: 200 rows, 0.37 of the L2)
    for r in (1.0, 120.0, 200.0):
        assert FK.pt_lookup_phases(r, 12000.0, C) == pytest.approx(base)
    # one wave: still the base at 0.9 of the L2 (past the two-wave ramp's start), the full miss price past ramp1_hi
    n1 = _n_at(120.0, 0.9)
    assert FK.pt_lookup_phases(120.0, n1, C) == pytest.approx(C["base_wave_phases"] + C["base_kscore_phases"] * n1 / 1e3)
    full = FK.pt_lookup_phases(120.0, _n_at(120.0, C["ramp1_hi"] + 0.1), PT_FULL)
    assert FK.pt_lookup_phases(120.0, _n_at(120.0, C["ramp1_hi"] + 0.1), C) == pytest.approx(full)
    # two waves: the full miss price past ramp_hi, halfway at the ramp's middle
    n2 = _n_at(200.0, (C["ramp_lo"] + C["ramp_hi"]) / 2)
    b2 = C["base_wave_phases"] + C["base_kscore_phases"] * n2 / 1e3
    assert FK.pt_lookup_phases(200.0, n2, C) == pytest.approx(0.5 * (b2 + FK.pt_lookup_phases(200.0, n2, PT_FULL)))
    # past max_waves: grid 6's terms
    assert FK.pt_lookup_phases(400.0, 30000.0, C) == pytest.approx(FK.pt_lookup_phases(400.0, 30000.0,
                                                                                         FK.PT_LOOKUP_CANDIDATE))


PT_FULL = FK.PT_MISS_CANDIDATE | {"miss_row_phases": C["miss_row_phases"], "l2_miss_at": 0.0}


def test_grid11_prediction_is_new():
    seen = set()
    for f in F.DATA_DIR.glob("*topk*.csv"):
        if "figrid11" in f.name or "flashinfer_grid11" in f.name:
            continue
        d = pd.read_csv(f)
        if "rows" in d:
            seen |= {(int(r), int(v)) for r, v in zip(d["rows"], d["n"])}
    assert len(set(G.FI_GRID11)) == len(G.FI_GRID11) == 38
    assert not {(r, n) for _, r, n in G.FI_GRID11} & seen
    assert all(n > 2048 for _, _, n in G.FI_GRID11)   # torch.topk's check needs n >= k
    p = G.prediction()
    assert len(p) == 76 and set(p["kernel"]) == {"fi_topk", "fi_topk_pt"}
    for c in ("pred_main_us", "pred_us", "regime", "fi_path", "waves", "vec", "set_l2"):
        assert c in p.columns
    moved = ~np.isclose(p["pred_us"], p["pred_main_us"], rtol=1e-4)
    # the candidate moves only filtered page-table rows of <= 2 waves
    assert ((p.loc[moved, "kernel"] == "fi_topk_pt") & (p.loc[moved, "waves"] <= 2)
            & (p.loc[moved, "fi_path"] == "filtered")).all()


def test_grid11_shipped_and_measured():
    # grid 11 shipped C; grid 12 replaced it with PT_WAVE3_CANDIDATE (tests/test_topk_flashinfer_grid12.py)
    assert FK.PT_LOOKUP_SHIPPED is FK.PT_WAVE3_CANDIDATE
    m = G.measured()
    assert len(m) == 76 and m["median_us"].gt(0).all()
    a = G.accuracy(m)
    assert set(a["goal_main"]) <= {"met", "MISSED"} and len(a) == 14
    assert (a["goal_cand"] == "met").sum() > (a["goal_main"] == "met").sum()
