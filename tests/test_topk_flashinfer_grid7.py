"""FlashInfer's top-k grid 7 (simulator/calibration/topk_flashinfer_grid7.py): the HBM stream floor follows its
stated rule (load width, L2 misses), its term is the looked-at fit, it ships, the launched-rows statistic, and the
committed prediction (100 rows, three prices) was made for new shapes and joins the measurement row for row."""
import numpy as np
import pandas as pd
import pytest

from simulator.calibration import fit_production_topk_gemm as F
from simulator.calibration import topk_flashinfer_grid6 as G6
from simulator.calibration import topk_flashinfer_grid7 as G
from simulator.kernels import topk_flashinfer as FK
from simulator.kernels import topk_production as P
from simulator.ops import OpBuilder

FL = FK.STREAM_FLOOR_CANDIDATE


def test_stream_floor_by_load_width_and_l2_misses():
    # a 2-wave launch of 117,170-score rows misses the L2 on both sweeps: float2 rows (n = 2 mod 4) pay
    # 2 x (ceil(n / 4096) x 3 - ceil(n / 2048)), float4 rows nothing (ceil(n / 8192) x 3 < ceil(n / 2048)), scalar most
    x = FK.stream_floor_iters(250.0, 117170.0, 2.0, FL)
    assert x == pytest.approx(2 * (np.ceil(117170 / 4096) * FL["loaded_round_iters"] - np.ceil(117170 / 2048)))
    assert FK.stream_floor_iters(250.0, 117172.0, 2.0, FL) == 0.0
    assert FK.stream_floor_iters(250.0, 117171.0, 2.0, FL) > x > 0.0
    # rows in the L2 (both sweeps): none; a launch past the L2 whose wave fits: the first sweep only
    assert FK.stream_floor_iters(40.0, 20210.0, 2.0, FL) == 0.0
    first_only = FK.stream_floor_iters(640.0, 20210.0, 2.0, FL)
    assert first_only == pytest.approx(np.ceil(20210 / 4096) * FL["loaded_round_iters"] - np.ceil(20210 / 2048))
    # a larger L2 (the caller's l2_bytes) moves the misses
    assert FK.stream_floor_iters(640.0, 20210.0, 2.0, FL, l2_bytes=126.0 * 2 ** 20) == 0.0


def test_stream_floor_enters_the_filtered_kernel_only_and_ships():
    assert FK.STREAM_FLOOR_SHIPPED is FK.STREAM_FLOOR_CANDIDATE
    rows, n = np.array([250.0, 3.0]), np.array([117170.0, 190002.0])   # filtered (2 waves), radix (3 <= 11)
    st = {c: np.full(2, v) for c, v in (("sweeps", 2.0), ("gathers", 3000.0), ("gather_iters", 3.0), ("rounds", 3.0))}
    out = {}
    for key, fl in (("none", {"loaded_round_iters": 0.0, "l2_miss_at": 0.84}), ("floor", FL)):
        b = OpBuilder(2)
        FK.add_ops(b, rows, n, 2048.0, st["sweeps"], st["gathers"], gather_iters=st["gather_iters"],
                   rounds=st["rounds"], stream_floor=fl)
        out[key] = b.build()
    assert out["floor"].serial_iters[0] - out["none"].serial_iters[0] == pytest.approx(
        float(FK.stream_floor_iters(250.0, 117170.0, 2.0, FL)))
    assert out["floor"].serial_iters[1] == out["none"].serial_iters[1]


def test_stream_floor_term_is_the_looked_at_fit():
    from hwmodels.spec import load_hardware

    x = G.fit_stream_floor(load_hardware("H100-SXM"))
    assert x["loaded_round_iters"] == pytest.approx(FL["loaded_round_iters"])
    assert x["rms_log_error"] < x["rms_log_error_no_floor"]


def test_launched_stat():
    v = np.array([9.0, 1.0, 2.0, 3.0, 4.0, 5.0])
    assert G.launched_stat(v, 1) == 9.0          # one row: the harness's row 0
    assert G.launched_stat(v, 3) == 9.0
    w = np.array([1.0, 2.0, 9.0, 3.0])
    assert G.launched_stat(w, 2) == 2.0          # rows 0..1 only
    # more rows than sampled: grid 6's rule (expected_max); more than one wave: its sqrt rule
    assert G.launched_stat(w, 10) == pytest.approx(P.expected_max(w, 10))
    assert G.launched_stat(w, 400) == pytest.approx(G6.wave_stat(w, 400, 132, "sqrt"))


def test_grid7_shapes_are_new_and_priced_by_three_models():
    seen = set()
    for f in F.DATA_DIR.glob("*topk*.csv"):
        if "figrid7" in f.name or "flashinfer_grid7" in f.name:
            continue
        seen |= {int(v) for v in pd.read_csv(f)["n"]}
    assert len(set(G.FI_GRID7)) == len(G.FI_GRID7) == 50
    assert not {n for _, _, n in G.FI_GRID7} & seen
    p = G.prediction()
    assert len(p) == 100 and set(p["kernel"]) == {"fi_topk", "fi_topk_pt"}
    for c in ("pred_main_us", "pred_us", "pred_alt_us", "regime", "fi_path", "waves", "vec"):
        assert c in p.columns
    assert p[["pred_main_us", "pred_us", "pred_alt_us"]].gt(0).all().all()
    # the candidate differs from main only where the floor binds: filtered float2 / scalar rows past the L2
    moved = ~np.isclose(p["pred_us"], p["pred_main_us"])
    fl = FK.stream_floor_iters(p["rows"], p["n"], p["sweeps"], FL) > 0
    assert (moved == (fl & (p["fi_path"] == "filtered"))).all() and moved.sum() >= 20
    assert (p.loc[moved, "vec"] < 4).all()


def test_grid7_measurement_joins_the_prediction_and_the_product_table():
    from hwmodels.spec import load_hardware

    m = G.measured()
    assert len(m) == 100 and m["median_us"].gt(0).all()
    t = G.accuracy(m)
    assert len(t) == 18 and int(t["n"].sum()) == 100
    # the candidate met more regimes than main (what shipped it)
    assert (t["goal_cand"] == "met").sum() > (t["goal_main"] == "met").sum()
    p = G.product_accuracy(load_hardware("H100-SXM"), m)
    assert len(p) == 18 and {"prod_med", "cal_med", "goal_prod"} <= set(p.columns)


def test_product_launch_stats_follow_the_calibration_rule():
    one = FK.launch_stats(1.0, 20000.0)
    many = FK.launch_stats(100.0, 20000.0)
    two = FK.launch_stats(264.0, 20000.0)
    vals = FK._LAUNCH_VALUES[(16384, 2048, FK.LAUNCH_SAMPLE)]
    for c in P.STAT_NAMES:
        assert one[c] == pytest.approx(np.mean(vals[c]))                     # one row: the mean row
        assert many[c] == pytest.approx(P.expected_max(vals[c], 100.0))      # one wave: its expected slowest row
        top, mean = P.expected_max(vals[c], 132.0), np.mean(vals[c])
        assert two[c] == pytest.approx(mean + (top - mean) / np.sqrt(2.0))  # 2 waves: grid 6's sqrt rule
    # arrays keep their shape; the first 4 sampled rows are default_stats' (its max is theirs)
    a = FK.launch_stats(np.array([1.0, 300.0]), np.array([20000.0, 20000.0]))
    assert a["gathers"].shape == (2,)
    d = P.default_stats("flashinfer", 20000.0)
    assert d["gathers"] == pytest.approx(np.max(vals["gathers"][:4]))
