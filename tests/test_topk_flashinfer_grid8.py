"""FlashInfer's top-k grid 8 (simulator/calibration/topk_flashinfer_grid8.py): the lookups' L2-miss rule follows its
stated structure, its term is the looked-at fit, and the committed prediction (74 rows, two prices) covers new shapes."""
import numpy as np
import pandas as pd
import pytest

from simulator.calibration import fit_production_topk_gemm as F
from simulator.calibration import topk_flashinfer_grid8 as G
from simulator.kernels import topk_flashinfer as FK

C = FK.PT_MISS_CANDIDATE


def test_miss_rule_structure():
    old = FK.pt_lookup_phases(240.0, 30350.0, FK.PT_LOOKUP_CANDIDATE)
    # 2 x 240 x 30,350 x 4 B = 58 MB > 0.84 x 50 MiB, 2 waves: every wave a full one of 132 CTAs
    new = FK.pt_lookup_phases(240.0, 30350.0, C)
    assert new == pytest.approx(C["wave_phases"] + 132 * C["miss_row_phases"] * min(1.0, 30350 * 4 / (2048 * 64)))
    assert new != pytest.approx(old)
    # the set in the L2, or 3+ waves: grid 6's terms unchanged
    for r, n in ((150.0, 27130.0), (1000.0, 27650.0), (30.0, 80110.0)):
        assert FK.pt_lookup_phases(r, n, C) == pytest.approx(FK.pt_lookup_phases(r, n, FK.PT_LOOKUP_CANDIDATE))
    # a larger L2 moves the miss
    assert FK.pt_lookup_phases(240.0, 30350.0, C, l2_bytes=126 * 2 ** 20) == pytest.approx(old)


def test_miss_term_is_the_looked_at_fit():
    from hwmodels.spec import load_hardware

    x = G.fit_pt_miss(load_hardware("H100-SXM"))
    assert x["miss_row_phases"] == pytest.approx(C["miss_row_phases"])
    assert x["fit_rows"] > 10


def test_grid8_prediction_is_new_and_committed():
    seen = set()
    for f in F.DATA_DIR.glob("*topk*.csv"):
        if "figrid8" in f.name or "flashinfer_grid8" in f.name:
            continue
        seen |= {int(v) for v in pd.read_csv(f)["n"]}
    assert len(set(G.FI_GRID8)) == len(G.FI_GRID8) == 37
    assert not {n for _, _, n in G.FI_GRID8} & seen
    p = G.prediction()
    assert len(p) == 74 and set(p["kernel"]) == {"fi_topk", "fi_topk_pt"}
    for c in ("pred_main_us", "pred_us", "regime", "fi_path", "waves", "l2_miss"):
        assert c in p.columns
    assert p[["pred_main_us", "pred_us"]].gt(0).all().all()
    # the candidate moves only page-table rows of <= 2 waves past the L2
    moved = ~np.isclose(p["pred_us"], p["pred_main_us"])
    assert (p.loc[moved, "kernel"] == "fi_topk_pt").all() and p.loc[moved, "l2_miss"].all()
    assert (p.loc[moved, "waves"] <= 2).all()


def test_partial_wave_stat():
    from simulator.kernels import topk_production as P

    v = np.linspace(1.0, 3.0, 64)
    assert G.partial_wave_stat(v, 100) == pytest.approx(P.expected_max(v, 100))
    # a full second wave: the sqrt rule; a near-empty one prices below it (its few 2-row SMs' spread is smaller)
    full = G.partial_wave_stat(v, 264)
    assert full == pytest.approx(np.mean(v) + (P.expected_max(v, 132) - np.mean(v)) / np.sqrt(2.0))
    assert G.partial_wave_stat(v, 136) < full
    assert G.partial_wave_stat(v, 136) >= np.mean(v)
