"""FlashInfer's top-k grid 9 (simulator/calibration/topk_flashinfer_grid9.py): the re-fitted threshold candidate is the
looked-at fit and moves only page-table rows between its threshold and main's; the committed prediction (56 rows, two
prices) covers new shapes and its measurement joins it."""
import numpy as np
import pandas as pd
import pytest

from simulator.calibration import fit_production_topk_gemm as F
from simulator.calibration import topk_flashinfer_grid9 as G
from simulator.kernels import topk_flashinfer as FK

C = FK.PT_MISS9_CANDIDATE


def test_candidate_structure():
    assert C["l2_miss_at"] < FK.PT_MISS_CANDIDATE["l2_miss_at"]
    assert {k: v for k, v in C.items() if k not in ("l2_miss_at", "miss_row_phases")} == {
        k: v for k, v in FK.PT_MISS_CANDIDATE.items() if k not in ("l2_miss_at", "miss_row_phases")}
    # 2 x 190 x 25,996 x 4 B = 0.75 of the L2: a miss under the candidate, a hit under main
    assert FK.pt_lookup_phases(190.0, 25996.0, C) == pytest.approx(C["wave_phases"] + 132 * C["miss_row_phases"] * min(
        1.0, 25996 * 4 / (2048 * 64)))
    assert FK.pt_lookup_phases(190.0, 25996.0, FK.PT_MISS_CANDIDATE) == pytest.approx(
        FK.pt_lookup_phases(190.0, 25996.0, FK.PT_LOOKUP_CANDIDATE))
    # grid 9 kept grid 8's rule; grid 10's candidate replaced it (tests/test_topk_flashinfer_grid10.py)
    assert FK.PT_LOOKUP_SHIPPED is not C


def test_candidate_is_the_looked_at_fit():
    from hwmodels.spec import load_hardware

    x = G.fit_pt_miss9(load_hardware("H100-SXM"))
    assert x["l2_miss_at"] == pytest.approx(C["l2_miss_at"])
    assert x["miss_row_phases"] == pytest.approx(C["miss_row_phases"])
    assert x["fit_rows"] > 100


def test_grid9_prediction_is_new_and_measured():
    seen = set()
    for f in F.DATA_DIR.glob("*topk*.csv"):
        if "figrid9" in f.name or "flashinfer_grid9" in f.name:
            continue
        seen |= {int(v) for v in pd.read_csv(f)["n"]}
    assert len(set(G.FI_GRID9)) == len(G.FI_GRID9) == 28
    assert not {n for _, _, n in G.FI_GRID9} & seen
    p = G.prediction()
    assert len(p) == 56 and set(p["kernel"]) == {"fi_topk", "fi_topk_pt"}
    for c in ("pred_main_us", "pred_us", "regime", "fi_path", "waves", "vec", "set_l2"):
        assert c in p.columns
    assert p[["pred_main_us", "pred_us"]].gt(0).all().all()
    moved = ~np.isclose(p["pred_us"], p["pred_main_us"])
    assert (p.loc[moved, "kernel"] == "fi_topk_pt").all() and (p.loc[moved, "set_l2"] > C["l2_miss_at"]).all()
    assert (p.loc[moved, "waves"] <= 2).all() and moved.sum() >= 8
    m = G.measured()
    assert len(m) == 56 and m["median_us"].gt(0).all()
    assert set(G.accuracy(m)["goal_main"]) <= {"met", "MISSED"}
