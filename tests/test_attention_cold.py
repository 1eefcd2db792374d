"""The cold K/V grid: the harness's cold option (no copy cap, whole multiples of the copies per graph), the warm-share
rule kept off, and the committed grid (predictions before the measurement, every measured row priced)."""
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hwmodels import datafiles as DF
from simulator.calibration import fit_production_attention as FP

ROOT = Path(__file__).resolve().parents[1]


def _lab(name):
    import importlib

    here = str(ROOT / "lab" / "kernels")
    sys.path.insert(0, here)
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(here)


def test_cold_option_spans_the_bytes_with_no_cap():
    mpa = _lab("measure_production_attention")
    old = mpa.COLD_BYTES
    try:
        assert mpa.copies_for(64 << 10) == 16          # the campaign's cap: 16 x 64 KiB stay in the L2
        mpa.COLD_BYTES = 128 << 20
        r = mpa.copies_for(64 << 10)
        assert r == 2048 and r * (64 << 10) >= 128 << 20
        assert mpa.cold_calls(r) == r and mpa.cold_calls(3) == 66 and mpa.cold_calls(2) == 64
    finally:
        mpa.COLD_BYTES = old


def test_warm_share_rule():
    mb = float(1 << 20)
    hit = FP.harness_kv_l2_hit(np.array([1 * mb, 2.5 * mb, 8 * mb, 64 * mb]))
    assert np.allclose(hit, [1.0, (50 - 40) / 25, 0.0, 0.0])
    assert FP.HARNESS_KV_L2 is False        # main's model kept: the rule lost on the cold grid


def test_cold_grid_priced_before_and_joined():
    # the report section lives in benchmarks/ (a checkout's folder, not installed: .ci/run's suite has none)
    A = pytest.importorskip("benchmarks.accuracy_sections.attention_cold")

    p = pd.read_csv(DF.resolve(FP.DATA_DIR / A.PRED))
    assert p["base_commit"].iloc[0] == "ea0997d" and set(p["mode"]) == {"warm", "cold"}
    b = A.load()
    m = pd.read_csv(sorted(DF.glob(FP.DATA_DIR, A.GLOB))[-1])
    assert len(b) == len(m) == 114
    r = A.ratios(b)
    ctrl = r[r["role"] == "control"]
    assert len(ctrl) == 8 and ctrl["ratio"].between(0.95, 1.05).all()


def test_cold_grid2_fi_tc_priced_before_by_the_shipped_model_and_joined():
    """Cold grid 2 (FlashInfer's tensor-core decode): 22 shapes in no committed fi_tc CSV, one price for both modes
    committed before the measurement; every measured row joins; controls agree both ways; the engine-state rows meet the
    bf16 regime and miss the fp8 one (short fp8 calls priced flat, measured growing with context)."""
    A = pytest.importorskip("benchmarks.accuracy_sections.attention_cold")
    M = _lab("measure_attention_cold")

    shapes = M.cold_shapes2()
    assert len(shapes) == 22 and {s["family"] for s in shapes} == {"fi_tc"}
    p = pd.read_csv(DF.resolve(FP.DATA_DIR / A.PRED2))
    assert len(p) == 44 and (p["pred_base_us"] == p["pred_new_us"]).all()
    b = A.load(glob=A.GLOB2, pred=A.PRED2)
    assert len(b) == 44 and (b["median_us"] > 0).all()
    r = A.ratios(b)
    ctrl = r[r["role"] == "control"]
    assert len(ctrl) == 2 and ctrl["ratio"].between(0.97, 1.03).all()
    assert r[r["role"] == "short"]["ratio"].median() > 1.03           # cold is slower at a warm footprint < 50 MB
    cold = b[b["mode"] == "cold"]
    med = cold.groupby("dtype")["main_err_pct"].apply(lambda e: e.abs().median())
    assert med["bf16"] < 10.0 and med["fp8"] > 10.0


def test_cold_grid3_priced_by_both_models_before_and_the_rule_ships_the_candidate():
    from simulator.calibration import fi_tc_fp8_grid3 as G3

    M = _lab("measure_attention_cold")
    assert len(M.cold_shapes3()) == 32
    p = pd.read_csv(DF.resolve(FP.DATA_DIR / G3.PRED), dtype={"base_commit": str, "model_commit": str})
    assert len(p) == 64 and set(p["base_commit"]) == {G3.PRED_BASE} and set(p["model_commit"]) == {G3.CAND_COMMIT}
    r = G3.judge()
    assert r is not None and r["met"] == {"main": 3, "new": 4} and r["ship"]
    assert r["pooled"]["new"][1] < r["pooled"]["main"][1]


def test_lone_tile_load_is_declared_by_fp8_decode_tiles_only_and_priced_at_one_cta_per_sm():
    from dataclasses import replace

    from hwmodels import roofline as R
    from hwmodels.spec import load_hardware
    from simulator.kernels import flashinfer as FI

    # Llama-3.1-8B decode (16-row tiles): fp8 declares its first tile's K and V bytes, bf16 and verification do not
    fp8, info = FI.fi_tc(4.0, 1.0, 256.0, 32.0, 8.0, 128.0, 1.0, 16.0, 132, 233472.0)
    bf16, _ = FI.fi_tc(4.0, 1.0, 256.0, 32.0, 8.0, 128.0, 2.0, 16.0, 132, 233472.0)
    ver, vinfo = FI.fi_tc(4.0, 8.0, 256.0, 32.0, 8.0, 128.0, 1.0, 16.0, 132, 233472.0)
    lt = [np.asarray(ln.lone_tile_bytes, dtype=float) for ln in fp8 if ln.name == "attention"]
    want = min(float(info["chunk_tokens"]), float(info["cta_tile_kv"])) * 128 * 1.0 * 2
    assert len(lt) == 1 and np.allclose(lt[0], want)
    assert all(np.all(np.asarray(ln.lone_tile_bytes) == 0.0) for ln in bf16 + ver)
    assert float(vinfo["cta_tile_q"]) > 16
    # the roofline adds the CTAs' tile loads at the kind's HBM rate only where <= 1 CTA per SM
    from simulator.ops import OpBuilder

    hw = load_hardware("H100-SXM")
    b = OpBuilder(2)
    b.add("attention", "attn_fi_prefill_fp8kv", bytes_read=1e6, parallel_units=np.array([100.0, 200.0]),
          lone_tile_bytes=32768.0)
    ops = b.build()
    on = R.price(ops, hw)
    off = R.price(replace(ops, lone_tile_bytes=None), hw)
    eff_m = hw.efficiency.memory["attn_fi_prefill_fp8kv"]
    assert np.isclose(on[0] - off[0], 32768.0 * 100 / (hw.hbm_bw_bytes_s * eff_m)) and np.isclose(on[1], off[1])
