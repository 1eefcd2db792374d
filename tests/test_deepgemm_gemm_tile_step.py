"""DeepGEMM's block-scaled fp8 GEMM (kind gemm_fp8_block): the layout heuristic and the tile-aware K step."""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hwmodels import datafiles as DF
from simulator.kernels import gemm_fp8 as G
from simulator.ops import OpBuilder


def test_k_step_adds_the_tiles_wgmma_time():
    """A K step = the kind's latency + the tile's WGMMA time at the SM's share of the fp8 peak; a 16-row tile issues
    m64 WGMMAs (priced as 64 rows)."""
    peak, sms = 1978.9e12, 132
    t = G.wgmma_step_s(64.0, 16.0, peak, sms)
    assert t == pytest.approx(2 * 64 * 16 * 128 / (peak / sms))
    assert G.wgmma_step_s(16.0, 16.0, peak, sms) == t
    assert G.wgmma_step_s(256.0, 128.0, peak, sms) == pytest.approx(32 * t)
    b = OpBuilder(1)
    G.add_block_gemm(b, "g", np.array([4.0]), 7168.0, 1536.0, 1.0, sms, step_lat_s=0.2e-6, fp8_flops_s=peak)
    assert G.block_layout(4.0, 1536.0, 7168.0, sms)[:2] == (16, 16)
    assert b.build().serial_iters[0] == pytest.approx(56 * (1 + t / 0.2e-6))
    b = OpBuilder(1)
    G.add_block_gemm(b, "g", np.array([4.0]), 7168.0, 1536.0, 1.0, sms)   # tile-blind: one iteration per K step
    assert b.build().serial_iters[0] == 56


def test_layout_heuristic_integer_costs_and_cluster_orientation():
    """sm90.hpp's comparison: multicast only with more than one wave; at M 1024, K 4096, N 6144 the integer cycle
    counts pick 128 x 192 with a 2-CTA cluster (the float re-implementation picked 256 x 96)."""
    assert G.block_layout(64.0, 6144.0, 4096.0, 132) == (64, 48, 1)
    assert G.block_layout(1024.0, 6144.0, 4096.0, 132) == (128, 192, 2)


def test_decode2_grid_predicted_before_measuring_on_new_shapes():
    """The decode-2 grid's committed predictions cover its shapes, none of which any other committed CSV holds, and
    its new-model layouts are the heuristic's."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lab" / "kernels"))
    import predict_deepgemm_gemm_decode2 as P

    from simulator.calibration import fit_production_topk_gemm as F

    p = pd.read_csv(F.DATA_DIR / "deepgemm_gemm_decode2_prediction_aa5ca0b_2026-11-27.csv")
    shapes = set(zip(p["rows"], p["k"], p["n"]))
    assert len(p) == 53 and shapes == set(P.grid()) and not shapes & P.committed_shapes()
    assert (p["pred_main_us"] > 0).all() and (p["pred_new_us"] > 0).all()
    assert list(p["layout_new"]) == ["x".join(map(str, G.block_layout(float(m), n, k, 132)))
                                     for m, k, n in zip(p["rows"], p["k"], p["n"])]


def test_promotion_term_is_the_tiles_accumulator_fmas_on_the_fp32_lanes():
    """PROMOTION's per-step term: max(64, block_m) x block_n FMAs at the SM's share of the fp32 peak, added to the
    K step only when fp32_flops_s is passed."""
    fp32, peak, sms = 66.9e12, 1978.9e12, 132
    assert G.promotion_step_s(16.0, 32.0, fp32, sms) == pytest.approx(2 * 64 * 32 / (fp32 / sms))
    assert G.promotion_step_s(256.0, 112.0, fp32, sms) == pytest.approx(2 * 256 * 112 / (fp32 / sms))
    b = OpBuilder(1)
    G.add_block_gemm(b, "g", np.array([4.0]), 7168.0, 1536.0, 1.0, sms, step_lat_s=0.2e-6, fp8_flops_s=peak,
                     fp32_flops_s=fp32)
    extra = G.wgmma_step_s(16.0, 16.0, peak, sms) + G.promotion_step_s(16.0, 16.0, fp32, sms)
    assert b.build().serial_iters[0] == pytest.approx(56 * (1 + extra / 0.2e-6))


def test_decode3_grid_blind_and_layouts_are_deepgemms_printed_configs():
    """The decode-3 grid: committed predictions cover its shapes, none in any other committed CSV and no (K, N) seen
    before; the measurement has the same 53 shapes; and the (block_m, block_n, cluster) DeepGEMM printed for each
    (DG_PRINT_CONFIGS in the measurement log) is block_layout's."""
    import re
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lab" / "kernels"))
    import predict_deepgemm_gemm_decode3 as P

    from simulator.calibration import fit_production_topk_gemm as F

    p = pd.read_csv(F.DATA_DIR / "deepgemm_gemm_decode3_prediction_bbe3701_2026-11-27.csv")
    shapes = set(zip(p["rows"], p["k"], p["n"]))
    seen = P.committed_shapes()
    assert len(p) == 53 and shapes == set(P.grid()) and not shapes & seen
    assert not {(k, n) for _, k, n in shapes} & {(k, n) for _, k, n in seen}
    m = pd.read_csv(F.DATA_DIR / "deepgemm_gemm_decode3_nvidia-h100-80gb-hbm3_2026-11-27.csv")
    assert set(zip(m["rows"], m["k"], m["n"])) == shapes and (m["rel_err"] < 1e-2).all()
    log = DF.read_text(F.DATA_DIR / "deepgemm_gemm_decode3_nvidia-h100-80gb-hbm3_2026-11-27.log")
    pat = r"m=(\d+), n=(\d+), k=(\d+),.*?block_m=(\d+), block_n=(\d+), block_k=128, cluster_m=(\d), cluster_n=(\d)"
    printed = {(int(a), int(c), int(b)): (int(bm), int(bn), int(cm) * int(cn))
               for a, b, c, bm, bn, cm, cn in re.findall(pat, log)}
    assert set(printed) == shapes
    assert all(G.block_layout(float(mm), n, k, 132) == printed[(mm, k, n)] for mm, k, n in shapes)


def test_runtime_sfb_tiles_are_the_unspecialised_promotions_and_cost_their_fitted_steps():
    """DeepGEMM's 1D2D kernel keeps scale_b's column choice a run-time predicate only for block_n that neither divides
    128 nor has 128 / gcd(128, block_n) <= 4 (sm90_fp8_gemm_1d2d.cuh @ 54e2261); such a tile's K step costs the fitted
    runtime_sfb_steps per 64 promoted accumulators per thread, the constant is the committed fit's value."""
    import pytest

    import hwmodels
    from hwmodels.yamlio import load_yaml

    assert [b for b in range(16, 193, 16) if G.runtime_sfb(b)] == [48, 80, 112, 144, 176]
    assert G.sfb_selects(256, 112) == 112 and G.sfb_selects(16, 144) == 72
    doc = load_yaml(Path(hwmodels.__file__).resolve().parent / "calibration" / "fitted" / "H100-SXM.yaml", "f")
    assert G.RUNTIME_SFB_STEP_LATS == pytest.approx(doc["production_kernels"]["gemm_fp8_block"]["runtime_sfb_steps"])
    b = [OpBuilder(1) for _ in range(2)]
    for bj, n in zip(b, (4608.0, 4096.0)):   # 128 x 144 (runtime) vs 256 x 128 (uniform) at M 1024
        G.add_block_gemm(bj, "g", np.array([1024.0]), 7168.0, n, 1.0, 132, step_lat_s=1e-7, fp8_flops_s=1.979e15)
    it = [bj.build().serial_iters[0] for bj in b]
    extra = 56 * G.RUNTIME_SFB_STEP_LATS * 72 / 64.0
    base = 56 * (1.0 + G.wgmma_step_s(128, 144, 1.979e15, 132) / 1e-7)
    assert it[0] == pytest.approx(base + extra)
    assert it[1] == pytest.approx(56 * (1.0 + G.wgmma_step_s(256, 128, 1.979e15, 132) / 1e-7))


def test_grid6_blind_and_turnover_hidden_after_the_first_wave():
    """Grid 6: its committed predictions cover its 49 shapes, none in any earlier committed CSV, the measurement has the
    same shapes, DeepGEMM's printed (block_m, block_n, cluster) is block_layout's; and the kind's per-wave turnover is
    priced as hidden under the byte stream (roofline CTA_FIXED_HIDDEN): a memory-bound walk of several waves pays
    cta_fixed once, one wave pays it as before."""
    import re
    import sys
    from pathlib import Path

    from hwmodels import roofline as R
    from hwmodels.spec import load_hardware

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lab" / "kernels"))
    import predict_deepgemm_gemm_grid6 as P

    from simulator.calibration import fit_production_topk_gemm as F

    p = pd.read_csv(F.DATA_DIR / "deepgemm_gemm_grid6_prediction_33275dc_2026-11-27.csv")
    shapes = set(zip(p["rows"], p["k"], p["n"]))
    assert len(p) == 49 and shapes == {r[1:4] for r in P.grid()}
    assert not {("deepgemm",) + s for s in shapes} & P.committed_shapes()
    m = pd.read_csv(F.DATA_DIR / "deepgemm_gemm_grid6_nvidia-h100-80gb-hbm3_2026-11-27.csv")
    assert set(zip(m["rows"], m["k"], m["n"])) == shapes and (m["rel_err"] < 1e-2).all()
    log = DF.read_text(F.DATA_DIR / "deepgemm_gemm_grid6_nvidia-h100-80gb-hbm3_2026-11-27.log")
    pat = r"m=(\d+), n=(\d+), k=(\d+),.*?block_m=(\d+), block_n=(\d+), block_k=128, cluster_m=(\d), cluster_n=(\d)"
    printed = {(int(a), int(c), int(b)): (int(bm), int(bn), int(cm) * int(cn))
               for a, b, c, bm, bn, cm, cn in re.findall(pat, log)}
    assert set(printed) == shapes
    assert all(G.block_layout(mm, n, k, 132) == printed[(mm, k, n)] for mm, k, n in shapes)

    hw = load_hardware("H100-SXM")
    g = F.gemm_frame(pd.DataFrame([{"family": "gemm", "kernel": "fp8_block", "dist": "", "rows": r, "k": 256,
                                    "n": 8192} for r in (4096, 40)]))
    on = F.predict_gemm_us(g, hw, hw.efficiency)
    kb = R.KIND_CODE["gemm_fp8_block"]
    assert kb in R.CTA_FIXED_HIDDEN
    old = R.CTA_FIXED_HIDDEN
    try:
        R.CTA_FIXED_HIDDEN = tuple(x for x in old if x != kb)
        off = F.predict_gemm_us(g, hw, hw.efficiency)
    finally:
        R.CTA_FIXED_HIDDEN = old
    cf = hw.efficiency.cta_fixed_s["gemm_fp8_block"] * 1e6
    assert off[0] - on[0] > 5 * cf          # M 4096 K 256 N 8192: 8 waves, memory-bound: 7 turnovers hidden
    assert on[1] == pytest.approx(off[1])   # one wave: unchanged


def test_unfilled_stages_price_a_short_k_loop_below_the_fitted_cta_time():
    """A K loop shorter than the pipeline's stages (gemm_fp8.UNFILLED_STAGES, FILL_CURVE): the op carries sync_steps =
    -(r^n - r^S) / (1 - r^S), priced at sync_us[gemm_fp8_block] = the fit's full fill (fill_us), r the fit's
    fill_step_ratio; the linear rule (FILL_CURVE off) carries -(S - n); a loop that fills its stages has none."""
    import pytest

    import hwmodels
    from hwmodels.spec import load_hardware
    from hwmodels.yamlio import load_yaml
    from simulator.calibration import fit_production_topk_gemm as F

    hw = load_hardware("H100-SXM")
    doc = load_yaml(Path(hwmodels.__file__).resolve().parent / "calibration" / "fitted" / "H100-SXM.yaml", "f")
    rec = doc["production_kernels"]["gemm_fp8_block"]
    fill, r = rec["fill_us"], G.FILL_STEP_RATIO
    assert G.FILL_CURVE and r == pytest.approx(rec["fill_step_ratio"])
    assert fill > 0 and hw.efficiency.sync_s["gemm_fp8_block"] * 1e6 == pytest.approx(fill)
    share = (r ** 2 - r ** 16) / (1 - r ** 16)
    b = OpBuilder(1)
    G.add_block_gemm(b, "g", np.array([8.0]), 256.0, 2048.0, 1.0, 132)     # 16 x 16 tiles, 16 stages, 2 K steps
    assert b.build().sync_steps[0] == pytest.approx(-share)
    G.FILL_CURVE = False
    try:
        b = OpBuilder(1)
        G.add_block_gemm(b, "g", np.array([8.0]), 256.0, 2048.0, 1.0, 132)
        assert b.build().sync_steps[0] == -14.0
    finally:
        G.FILL_CURVE = True
    b = OpBuilder(1)
    G.add_block_gemm(b, "g", np.array([8.0]), 7168.0, 2048.0, 1.0, 132)    # 56 K steps: every stage filled
    ops = b.build()
    assert ops.sync_steps is None or ops.sync_steps[0] == 0.0
    g = F.gemm_frame(pd.DataFrame([{"family": "gemm", "kernel": "fp8_block", "dist": "", "rows": 8, "n": 2048,
                                    "k": 256}]))
    on = F.predict_gemm_us(g, hw, hw.efficiency)[0]
    G.UNFILLED_STAGES = False
    try:
        off = F.predict_gemm_us(g, hw, hw.efficiency)[0]
    finally:
        G.UNFILLED_STAGES = True
    assert off - on == pytest.approx(share * fill, rel=1e-6)
    # the curve saves more than the linear rule's share of the same full fill (S - n) / S past the first steps only
    assert G.fill_curve_saved(np.array([8.0]), 2048.0, 128.0, np.array([16]), np.array([16]))[0] == pytest.approx(
        (r - r ** 16) / (1 - r ** 16))


def test_grid8_blind_and_layouts_and_splits_recorded():
    """Grid 8: its committed predictions cover the measuring grid, no (kernel, M, K, N) of an earlier CSV but the two
    marked fill7 repeats; every row timed; DeepGEMM's printed (block_m, block_n, cluster) and stages are block_layout's
    and _stages'; every cuBLASLt row's launched kernel is recorded (its split count read off)."""
    import re
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lab" / "kernels"))
    import predict_gemm_grid8 as P

    from simulator.calibration import fit_production_topk_gemm as F

    c = pd.read_csv(F.DATA_DIR / "gemm_grid8_prediction_35b7db0_2026-11-27_cublaslt.csv")
    d = pd.read_csv(F.DATA_DIR / "gemm_grid8_prediction_35b7db0_2026-11-27_deepgemm.csv")
    assert set(zip(c["rows"], c["k"], c["n"])) == set(P.CUBLASLT)
    assert set(zip(d["rows"], d["k"], d["n"])) == {(m, k, n) for m, k, n, _ in P.DEEPGEMM}
    from gemm_grid_pricing import committed_grids

    seen = set()
    for x in committed_grids(P.OWN_PREFIX):
        kern = x["kernel"].astype(str) if "kernel" in x.columns else pd.Series("?", index=x.index)
        kern = kern.replace({"fp8_block": "deepgemm", "fp8_block_cublaslt": "cublaslt"})
        seen |= set(zip(kern, x["rows"].astype(int), x["k"].astype(int), x["n"].astype(int)))
    rows = {("cublaslt", *r) for r in P.CUBLASLT} | {("deepgemm", m, k, n) for m, k, n, _ in P.DEEPGEMM}
    assert rows & seen == {("deepgemm", m, k, n) for m, k, n, r in P.DEEPGEMM if r.startswith("repeat")}
    m = pd.read_csv(F.DATA_DIR / "gemm_grid8_nvidia-h100-80gb-hbm3_2026-11-27.csv")
    assert len(m) == 54 and m["median_us"].notna().all() and (m["rel_err"] < 1e-2).all()
    rec = F.cublaslt_recorded_splits(DF.read_text(F.DATA_DIR / "gemm_grid8_nvidia-h100-80gb-hbm3_2026-11-27_notes.txt"))
    assert set(rec) == set(P.CUBLASLT)
    log = DF.read_text(F.DATA_DIR / "gemm_grid8_nvidia-h100-80gb-hbm3_2026-11-27.log.gz")
    pat = (r"m=(\d+), n=(\d+), k=(\d+),.*?block_m=(\d+), block_n=(\d+), block_k=128, cluster_m=(\d), cluster_n=(\d)"
           r".*?num_stages=(\d+)")
    printed = {(int(a), int(c_), int(b)): (int(bm), int(bn), int(cm) * int(cn), int(st))
               for a, b, c_, bm, bn, cm, cn, st in re.findall(pat, log)}
    for mm, k, n, _ in P.DEEPGEMM:
        bm, bn, cl = G.block_layout(float(mm), n, k, 132)
        assert (bm, bn, cl, G._stages(float(mm), n, k, bm, bn)) == printed[(mm, k, n)]


def test_grid7_blind_and_layouts_and_stages_are_deepgemms_printed_configs():
    """Grid 7: its committed predictions cover the grid, no (M, K, N) of an earlier CSV; the measurement times every
    row; DeepGEMM's printed (block_m, block_n, cluster) and stage count are block_layout's and _stages' (the rule reads
    the stage count)."""
    import re
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lab" / "kernels"))
    import predict_deepgemm_gemm_grid7 as P

    from simulator.calibration import fit_production_topk_gemm as F

    p = pd.read_csv(F.DATA_DIR / "deepgemm_gemm_grid7_prediction_9720e84_2026-11-27.csv")
    shapes = set(zip(p["rows"], p["k"], p["n"]))
    assert len(p) == 41 and shapes == {(m, k, n) for _, m, k, n, _ in P.grid()}
    assert not {("deepgemm",) + s for s in shapes} & P.committed_shapes()
    m = pd.read_csv(F.DATA_DIR / "deepgemm_gemm_grid7_nvidia-h100-80gb-hbm3_2026-11-27.csv")
    assert shapes <= set(zip(m["rows"], m["k"], m["n"])) and (m["rel_err"] < 1e-2).all()
    log = DF.read_text(F.DATA_DIR / "deepgemm_gemm_grid7_nvidia-h100-80gb-hbm3_2026-11-27.log.gz")
    pat = (r"m=(\d+), n=(\d+), k=(\d+),.*?block_m=(\d+), block_n=(\d+), block_k=128, cluster_m=(\d), cluster_n=(\d)"
           r".*?num_stages=(\d+)")
    printed = {(int(a), int(c), int(b)): (int(bm), int(bn), int(cm) * int(cn), int(st))
               for a, b, c, bm, bn, cm, cn, st in re.findall(pat, log)}
    assert shapes <= set(printed)
    for mm, k, n in shapes:
        bm, bn, cl = G.block_layout(float(mm), n, k, 132)
        assert (bm, bn, cl, G._stages(float(mm), n, k, bm, bn)) == printed[(mm, k, n)]
