"""FlashInfer's top-k grid 6 (simulator/calibration/topk_flashinfer_grid6.py): the multi-wave statistic and the
page-table lookup phase follow their stated rules, the lookup terms are the grid 5 fit, and the committed prediction
(82 rows, three prices) was made for new shapes and joins the measurement row for row."""
import numpy as np
import pandas as pd
import pytest

from hwmodels.spec import load_hardware
from simulator.calibration import fit_production_topk_gemm as F
from simulator.calibration import topk_flashinfer_grid6 as G
from simulator.kernels import topk_flashinfer as FK
from simulator.kernels import topk_production as P
from simulator.ops import OpBuilder


def test_wave_stat_rules():
    v = np.array([1.0, 2.0, 3.0, 10.0])
    # one wave: the slowest of its rows under every rule
    for rule in ("main", "sqrt", "list"):
        assert G.wave_stat(v, 100, 132, rule) == pytest.approx(P.expected_max(v, 100))
    top, mean = P.expected_max(v, 132), v.mean()
    # 4 waves (400 rows on 132 SMs): mean / mean + excess / 2 / mean + excess / 4
    assert G.wave_stat(v, 400, 132, "main") == pytest.approx(mean)
    assert G.wave_stat(v, 400, 132, "sqrt") == pytest.approx(mean + (top - mean) / 2.0)
    assert G.wave_stat(v, 400, 132, "list") == pytest.approx(mean + (top - mean) / 4.0)
    assert G.wave_stat(v, 400, 132, "main") < G.wave_stat(v, 400, 132, "list") < G.wave_stat(v, 400, 132, "sqrt")


def test_pt_lookup_phases_grow_with_the_wave_and_the_span_then_saturate():
    t = FK.PT_LOOKUP_CANDIDATE
    one = FK.pt_lookup_phases(1.0, 10000.0, t)
    assert one == pytest.approx(t["wave_phases"] + t["row_phases"] + t["row_phases_per_kscore"] * 10.0)
    assert FK.pt_lookup_phases(132.0, 10000.0, t) > one
    # the span saturates at span_sat_kscores
    sat = t["span_sat_kscores"] * 1000.0
    assert FK.pt_lookup_phases(64.0, 2 * sat, t) == pytest.approx(FK.pt_lookup_phases(64.0, sat, t))
    assert FK.pt_lookup_phases(64.0, sat / 2, t) < FK.pt_lookup_phases(64.0, sat, t)
    # 264 rows = 2 full waves: per wave the same as one full wave
    assert FK.pt_lookup_phases(264.0, 20000.0, t) == pytest.approx(FK.pt_lookup_phases(132.0, 20000.0, t))


def test_pt_lookup_only_on_the_filtered_kernel_and_main_rule_kept_as_an_option():
    rows, n = np.array([300.0, 2.0]), np.array([20000.0, 640000.0])   # filtered (3 waves), radix
    st = {c: np.full(2, v) for c, v in (("sweeps", 2.0), ("gathers", 3000.0), ("gather_iters", 3.0),
                                          ("rounds", 3.0))}
    out = {}
    for key, kw in (("rag", {"page_table": False}), ("main", {"page_table": True, "pt_lookup": None}),
                    ("cand", {"page_table": True, "pt_lookup": FK.PT_LOOKUP_CANDIDATE})):
        b = OpBuilder(2)
        keep = FK.PT_LOOKUP_SHIPPED
        try:
            if key == "main":
                FK.PT_LOOKUP_SHIPPED = None
            FK.add_ops(b, rows, n, 2048.0, st["sweeps"], st["gathers"], gather_iters=st["gather_iters"],
                       rounds=st["rounds"], **kw)
        finally:
            FK.PT_LOOKUP_SHIPPED = keep
        out[key] = b.build()
    # main: one more load round on the filtered kernel; candidate: the lookup phase in its place
    assert out["main"].serial_iters[0] == out["rag"].serial_iters[0] + 1
    assert out["cand"].serial_iters[0] == out["rag"].serial_iters[0]
    assert out["cand"].sync_steps[0] - out["rag"].sync_steps[0] == pytest.approx(
        float(FK.pt_lookup_phases(300.0, 20000.0, FK.PT_LOOKUP_CANDIDATE)))
    # the radix kernel: the same under both
    assert out["cand"].serial_iters[1] == out["main"].serial_iters[1]
    assert out["cand"].sync_steps[1] == out["main"].sync_steps[1]


def test_pt_lookup_terms_are_the_grid5_fit():
    x = G.fit_pt_lookup(load_hardware("H100-SXM"))
    for k in ("wave_phases", "row_phases", "row_phases_per_kscore", "span_sat_kscores"):
        assert x[k] == pytest.approx(FK.PT_LOOKUP_CANDIDATE[k], rel=0.02, abs=1e-6)
    assert x["fit_rows"] == 53


def test_grid6_shapes_are_new_and_priced_by_three_models():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lab" / "kernels"))
    from data_order import committed_before  # the CSVs committed before grid 6's own (data_order.txt)

    seen = set()
    for f in committed_before(("topk_flashinfer_grid6", "topk_engines_nvidia-h100-80gb-hbm3_2026-11-27_figrid6"),
                              F.DATA_DIR.glob("*topk*.csv")):
        # TensorRT-LLM's grid 15 was designed at the same time, by another hand, and measured after grid 6's
        # prediction commit (716930a): it shares one row length (190,000) and is no earlier grid
        if "grid15" in f.name:
            continue
        seen |= {int(v) for v in pd.read_csv(f)["n"]}
    assert len(set(G.FI_GRID6)) == len(G.FI_GRID6) == 41
    assert not {n for _, _, n in G.FI_GRID6} & seen
    p = G.prediction()
    assert len(p) == 82 and set(p["kernel"]) == {"fi_topk", "fi_topk_pt"}
    for c in ("pred_main_us", "pred_us", "pred_alt_us", "regime", "fi_path", "waves"):
        assert c in p.columns
    assert p[["pred_main_us", "pred_us", "pred_alt_us"]].gt(0).all().all()
    # the candidate differs from main only where it should: multi-wave filtered launches and page-table rows
    same = np.isclose(p["pred_us"], p["pred_main_us"])
    moved = (p["waves"] > 1) | ((p["kernel"] == "fi_topk_pt") & (p["fi_path"] == "filtered"))
    assert same[~moved].all() and not same[moved].any()


def test_grid6_measurement_joins_the_prediction():
    m = G.measured()
    assert len(m) == 82 and m["median_us"].gt(0).all()
    t = G.accuracy(m)
    assert len(t) == 20 and int(t["n"].sum()) == 82
