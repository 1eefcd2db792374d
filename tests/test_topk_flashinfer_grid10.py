"""FlashInfer's top-k grid 10 (simulator/calibration/topk_flashinfer_grid10.py): the ramp candidate blends the hit and
miss lookup prices over its span, the short-row rule touches only filtered rows 2K < n <= 1024 x VEC, the candidate's
ramp is the looked-at fit; the committed prediction (66 rows, two prices) covers new shapes."""
import numpy as np
import pandas as pd
import pytest

from simulator.calibration import fit_production_topk_gemm as F
from simulator.calibration import topk_flashinfer_grid10 as G
from simulator.kernels import topk_flashinfer as FK

C = FK.PT_RAMP_CANDIDATE


def test_ramp_structure():
    hit = FK.pt_lookup_phases(150.0, 20000.0, FK.PT_LOOKUP_CANDIDATE)
    l2 = FK.STREAM_FLOOR_L2_BYTES
    # rows x n at set fractions below, inside and past the ramp (2 x rows x n x 4 B / L2)
    n_at = {s: s * l2 / (8.0 * 150.0) for s in (0.5, (C["ramp_lo"] + C["ramp_hi"]) / 2, 1.1)}
    lo, mid, hi = (FK.pt_lookup_phases(150.0, v, C) for v in n_at.values())
    assert lo == pytest.approx(FK.pt_lookup_phases(150.0, n_at[0.5], FK.PT_LOOKUP_CANDIDATE))
    full = FK.pt_lookup_phases(150.0, n_at[1.1], FK.PT_MISS_CANDIDATE | {"miss_row_phases": C["miss_row_phases"]})
    assert hi == pytest.approx(full)
    m_hit = FK.pt_lookup_phases(150.0, n_at[(C["ramp_lo"] + C["ramp_hi"]) / 2], FK.PT_LOOKUP_CANDIDATE)
    m_full = FK.pt_lookup_phases(150.0, n_at[(C["ramp_lo"] + C["ramp_hi"]) / 2],
                                 FK.PT_MISS_CANDIDATE | {"miss_row_phases": C["miss_row_phases"], "l2_miss_at": 0.0})
    assert mid == pytest.approx(0.5 * (m_hit + m_full))
    # past max_waves: grid 6's terms
    assert FK.pt_lookup_phases(400.0, 30000.0, C) == pytest.approx(FK.pt_lookup_phases(400.0, 30000.0,
                                                                                         FK.PT_LOOKUP_CANDIDATE))
    assert hit > 0


def test_short_rule_scope():
    t = pd.DataFrame({"rows": [100, 100, 100, 100, 4], "n": [2564, 4092, 3002, 4100, 3000]})
    assert list(G.short_rows(t)) == [True, True, False, False, True]


def test_ramp_is_the_looked_at_fit():
    from hwmodels.spec import load_hardware

    x = G.fit_pt_ramp(load_hardware("H100-SXM"))
    assert (x["ramp_lo"], x["ramp_hi"]) == (C["ramp_lo"], C["ramp_hi"])
    assert x["miss_row_phases"] == pytest.approx(C["miss_row_phases"])
    assert x["fit_rows"] > 150


def test_grid10_prediction_is_new():
    seen = set()
    for f in F.DATA_DIR.glob("*topk*.csv"):
        if "figrid10" in f.name or "flashinfer_grid10" in f.name:
            continue
        d = pd.read_csv(f)
        if "rows" in d:
            seen |= {(int(r), int(v)) for r, v in zip(d["rows"], d["n"])}
    assert len(set(G.FI_GRID10)) == len(G.FI_GRID10) == 33
    assert not {(r, n) for _, r, n in G.FI_GRID10} & seen
    p = G.prediction()
    assert len(p) == 66 and set(p["kernel"]) == {"fi_topk", "fi_topk_pt"}
    for c in ("pred_main_us", "pred_us", "regime", "fi_path", "waves", "vec", "set_l2"):
        assert c in p.columns
    assert p[["pred_main_us", "pred_us"]].gt(0).all().all()
    moved = ~np.isclose(p["pred_us"], p["pred_main_us"], rtol=1e-4)
    short = G.short_rows(p)
    # the candidate moves only short rows (both transforms) and page-table rows past the ramp's start
    assert (short[moved] | ((p.loc[moved, "kernel"] == "fi_topk_pt") & (p.loc[moved, "set_l2"] > C["ramp_lo"]))).all()
    assert (p.loc[short, "pred_us"] < p.loc[short, "pred_main_us"]).all()


def test_grid10_shipped_and_measured():
    # grid 10 shipped C; grid 11 replaced it with PT_WAVE_CANDIDATE, grid 12 with PT_WAVE3_CANDIDATE (test_..._grid12.py)
    assert FK.PT_LOOKUP_SHIPPED is FK.PT_WAVE3_CANDIDATE and FK.SHORT_SWEEP_SHIPPED is FK.SHORT_SWEEP_CANDIDATE
    m = G.measured()
    # the copy-path rows (n <= k) are not measured: the harness's selection check needs n >= k
    assert len(m) == 62 and m["median_us"].gt(0).all() and (m["n"] > 2048).all()
    a = G.accuracy(m)
    assert set(a["goal_main"]) <= {"met", "MISSED"}
    assert (a["goal_cand"] == "met").sum() > (a["goal_main"] == "met").sum()
