"""FlashInfer's top-k grid 12 (simulator/calibration/topk_flashinfer_grid12.py): the 3+-wave lookup window's and the
gather sector rule's structure, and the committed prediction (72 rows, new shapes, which rows each part moves)."""
import numpy as np
import pandas as pd
import pytest

from simulator.calibration import fit_production_topk_gemm as F
from simulator.calibration import topk_flashinfer_grid12 as G
from simulator.kernels import topk_flashinfer as FK
from simulator.kernels import topk_production as P

C3 = FK.PT_WAVE3_CANDIDATE
L2 = FK.STREAM_FLOOR_L2_BYTES


def _n_at(rows, s):
    return s * L2 / (8.0 * rows)


def test_wave3_window_structure():
    w = C
    full = FK.PT_MISS_CANDIDATE | {"miss_row_phases": C3["miss_row_phases"], "l2_miss_at": 0.0, "max_waves": 99.0}
    # one and two waves: PT_WAVE_CANDIDATE's prices unchanged
    for r, s in ((120.0, 0.9), (200.0, 0.7), (250.0, 1.2)):
        n = _n_at(r, s)
        assert FK.pt_lookup_phases(r, n, C3) == pytest.approx(FK.pt_lookup_phases(r, n, w))
    # 3+ waves: grid 6's hit terms outside the window, the full miss price inside it, halfway on an edge
    mid = (C3["ramp3_lo"] + C3["ramp3_w"] + C3["ramp3_hi"] - C3["ramp3_w"]) / 2.0
    for s, f in ((C3["ramp3_lo"] - 0.05, 0.0), (mid, 1.0), (C3["ramp3_hi"] + 0.05, 0.0),
                 (C3["ramp3_lo"] + C3["ramp3_w"] / 2.0, 0.5), (3.0, 0.0)):
        n = _n_at(400.0, s)
        hit = FK.pt_lookup_phases(400.0, n, FK.PT_LOOKUP_CANDIDATE)
        assert FK.pt_lookup_phases(400.0, n, C3) == pytest.approx(hit + f * (FK.pt_lookup_phases(400.0, n, full) - hit))


C = FK.PT_WAVE_CANDIDATE


def test_gather_sector_rule():
    g = FK.GATHER_SECTOR_CANDIDATE
    # sparse candidates: about one sector each; dense: the row's sectors per round; never more than one a candidate
    assert FK.gather_bytes(1e6, 100.0, 1.0, g) == pytest.approx(100.0 * P.SECTOR_BYTES, rel=1e-3)
    assert FK.gather_bytes(8000.0, 8000.0, 1.0, g) == pytest.approx(1000.0 * P.SECTOR_BYTES)
    x = FK.gather_bytes(35748.0, 29328.0, 4.0, g)
    assert 0.4 * 29328.0 * P.SECTOR_BYTES < x < 0.6 * 29328.0 * P.SECTOR_BYTES
    assert np.all(FK.gather_bytes([3e4, 3e4], [10.0, 3e4], [4.0, 0.0], g) <= np.array([10.0, 3e4]) * P.SECTOR_BYTES)
    assert FK.GATHER_SECTOR_SHIPPED is g


@pytest.fixture(scope="module")
def pred():
    return G.prediction()


def test_grid12_prediction_is_new(pred):
    seen = set()
    for f in F.DATA_DIR.glob("*topk*.csv"):
        if "figrid12" in f.name or "flashinfer_grid12" in f.name:
            continue
        d = pd.read_csv(f)
        if "rows" in d:
            seen |= {(int(r), int(v)) for r, v in zip(d["rows"], d["n"])}
    assert len(set(G.FI_GRID12)) == len(G.FI_GRID12) == 36
    assert not {(r, n) for _, r, n in G.FI_GRID12} & seen
    assert all(n > 2048 for _, _, n in G.FI_GRID12)   # torch.topk's check needs n >= k
    assert len(pred) == 72 and set(pred["kernel"]) == {"fi_topk", "fi_topk_pt"}
    for c in G.COLUMNS:
        assert c in pred.columns


def test_grid12_parts_move_their_rows(pred):
    # the window moves only filtered page-table rows of 3+ waves; the sector rule only rows past the L1
    w3 = ~np.isclose(pred["pred_wave3_us"], pred["pred_main_us"], rtol=1e-4)
    assert ((pred.loc[w3, "kernel"] == "fi_topk_pt") & (pred.loc[w3, "waves"] >= 3)).all() and w3.sum() >= 10
    gs = ~np.isclose(pred["pred_gather_us"], pred["pred_main_us"], rtol=1e-4)
    assert (pred.loc[gs, "n"] * 4 > P.SGL_L1_BYTES).all()
    full = (pred["rows"] >= 120) & (pred["rows"] <= 132) & (pred["n"] * 4 > P.SGL_L1_BYTES)
    assert (pred.loc[full & (pred["dist"] == "recorded"), "pred_gather_us"]
            < pred.loc[full & (pred["dist"] == "recorded"), "pred_main_us"]).all()


def test_grid12_shipped_and_measured():
    assert FK.PT_LOOKUP_SHIPPED is C3 and FK.GATHER_SECTOR_SHIPPED is FK.GATHER_SECTOR_CANDIDATE
    m = G.measured()
    assert len(m) == 72 and m["median_us"].gt(0).all()
    a = G.accuracy(m)
    assert set(a["goal_main"]) <= {"met", "MISSED"} and len(a) == 14
    assert (a["goal_cand"] == "met").sum() > (a["goal_main"] == "met").sum()
