"""The xqa family (simulator/kernels/xqa.py): the port's split rule reproduces the launch grids measured on the H100
(hwmodels/calibration/data/production_attention/xqa_attention_grids_*.csv), the kernel choice and tiles follow the
source, and the shipped attn_xqa / attn_xqa_fp8kv terms are the fit of the committed measurement."""
import contextlib
import re

import numpy as np
import pandas as pd
import pytest

from hwmodels import datafiles as DF
from simulator.calibration import fit_production_attention as FP
from simulator.kernels import xqa as XQ

SMS = 132



@contextlib.contextmanager
def _gmma_steady_off():
    """The GMMA kernel's steady-state tiles and its loaded chain off (the model before them)."""
    from hwmodels import roofline as RF

    keep = (XQ.XQA_GMMA_STEADY, RF.CHAIN_LOADED)
    XQ.XQA_GMMA_STEADY = False
    RF.CHAIN_LOADED = tuple(k for k in keep[1] if k != RF.KIND_CODE["attn_xqa_fp8kv"])
    try:
        yield
    finally:
        XQ.XQA_GMMA_STEADY, RF.CHAIN_LOADED = keep

def _grids():
    f, g = FP.latest_xqa(FP.DATA_DIR)
    assert f is not None and g is not None
    return pd.read_csv(g)


def test_port_split_reproduces_the_measured_grids():
    g = _grids()
    heads = {"llama8b": (32, 8), "llama70b_tp8": (8, 1), "qwen7b": (28, 4)}
    n = 0
    for r in g.itertuples():
        m = re.match(r"xqa_(bf16|fp8)_g(\d+)_p(\d+)_q(\d+):(\w+):B(\d+):T(\d+)", r.label)
        kv, G, page, q, model, B, T = m.group(1), *map(int, m.group(2, 3, 4)), m.group(5), *map(int, m.group(6, 7))
        hq, hkv = heads[model]
        assert hq // hkv == G
        gmma = kv == "fp8"
        assert int(r.block_z) == (3 if gmma else 2)       # mha_sm90.cu: 3 warpgroups; mha.cu: 4 x 1 x 2 warps
        mb = float(XQ.port_split(B, T, hkv, SMS, gmma, page))
        _, info = XQ.xqa(B, q, T, hq, hkv, 128.0, 1.0 if gmma else 2.0, SMS, page, split="port")
        if gmma:
            assert (int(r.grid_y), int(r.grid_z)) == (mb, hkv * B)
        else:
            assert (int(r.grid_x), int(r.grid_z)) == (mb, B)
            assert int(r.grid_y) == hkv * float(np.ravel(info["blocks"])[0])
        n += 1
    assert n >= 40


def test_kernel_choice_tiles_and_splits():
    B, q, T = np.array([1.0, 1.0, 16.0]), np.array([1.0, 1.0, 4.0]), np.array([32768.0, 32768.0, 4096.0])
    kvb = np.array([2.0, 1.0, 2.0])
    launches, info = XQ.xqa(B, q, T, 32.0, 8.0, 128.0, kvb, SMS, 16.0, split="port")
    assert [ln.kind for ln in launches] == ["attn_xqa", "attn_xqa_fp8kv"]
    assert list(launches[0].where) == [True, False, True] and list(launches[1].where) == [False, True, False]
    # mha.cu: 132 // 8 = 16 sub-sequences of 256-key tiles; GMMA: round((396 // 8) x 0.25) = 12 of 64-key tiles;
    # B 16: 132 // 128 = 1
    assert list(info["multi_block"]) == [16.0, 12.0, 1.0]
    assert list(info["tile"]) == [256.0, 64.0, 256.0]
    assert list(np.ravel(launches[0].serial_iters)[[0, 2]]) == [8.0, 16.0]
    # GMMA: 43 tiles per CTA; the first XQA_GMMA_PIPE_TILES at the fitted iteration, the rest at the steady share
    n = np.ceil(512.0 / 12.0)
    p, s = XQ.XQA_GMMA_PIPE_TILES, XQ.XQA_GMMA_STEADY_SHARE
    assert float(np.ravel(launches[1].serial_iters)[1]) == pytest.approx(p + (n - p) * s if XQ.XQA_GMMA_STEADY else n)
    # verification rows: mha.cu packs q x G = 16 (token, head) rows into one 32-row block; the GMMA kernel rounds
    # G = 4 to 8 rows (swap-AB)
    assert list(info["rows"]) == [16.0, 8.0, 32.0]
    # the product prices TensorRT-LLM's own rule
    _, trt = XQ.xqa(B, q, T, 32.0, 8.0, 128.0, kvb, SMS, 16.0)
    assert list(trt["multi_block"]) == list(XQ.xqa_multi_block(B, T, 8.0, SMS))
    with pytest.raises(ValueError):
        XQ.xqa(B, q, T, 32.0, 8.0, 128.0, kvb, SMS, 16.0, split="other")


def test_residency_is_the_launch_profile():
    slots = FP.xqa_slots(_grids(), 233472.0)
    assert slots["attn_xqa"][0] == XQ.XQA_SLOTS == 1.0
    assert slots["attn_xqa_fp8kv"][0] == XQ.XQA_GMMA_SLOTS == 3.0


def test_committed_terms_are_the_fit_of_the_committed_csv():
    from hwmodels.spec import load_hardware

    hw = load_hardware("H100-SXM")
    xq = FP.load_xqa(FP.DATA_DIR)
    assert len(xq) == 260
    eff, meta = FP.fit_xqa(xq, hw, hw.efficiency, _grids())
    assert meta["groups"]["attn_xqa"]["rows"] == 30 and meta["groups"]["attn_xqa_fp8kv"]["rows"] == 30
    e = hw.efficiency
    for k in FP.XQA_KINDS:
        assert e.memory[k] == pytest.approx(eff.memory[k], abs=1e-3)
        assert e.iter_s[k] * 1e6 == pytest.approx(eff.iter_s[k] * 1e6, abs=1e-3)
        assert e.fixed_s[k] * 1e6 == pytest.approx(eff.fixed_s[k] * 1e6, abs=1e-3)
        assert e.cta_fixed_s[k] * 1e6 == pytest.approx(eff.cta_fixed_s[k] * 1e6, abs=1e-3)
        assert e.cta_serial_s.get(k, 0.0) * 1e6 == pytest.approx(eff.cta_serial_s.get(k, 0.0) * 1e6, abs=1e-3)
        assert e.cta_slots[k] == eff.cta_slots[k]
    # the fit rows are Llama-3.1-8B page-16 decode rows of the middle regime and of context <= 256 at every batch
    fit = xq[FP.xqa_fit_rows(xq)]
    assert set(fit["model"]) == {"llama8b"} and set(fit["page_size"]) == {16} and set(fit["q_rows"]) == {1}
    mid = fit["context"].between(1024, 16384) & (fit["batch"] <= 64)
    short = fit["context"] <= 256
    assert (mid | short).all() and short.sum() == 36 and set(fit[short]["dtype"]) == {"bf16", "fp8"}


def test_mha_cu_cta_is_alone_on_its_sm():
    """mha.cu (one CTA per SM) pays its per-wave CTA turnover in waves 2..W only (hwmodels.roofline CTA_ALONE); the
    GMMA kernel (3 CTAs per SM) is not alone on its SM."""
    from hwmodels.opkinds import KIND_CODE
    from hwmodels.roofline import CTA_ALONE

    assert KIND_CODE["attn_xqa"] in CTA_ALONE and KIND_CODE["attn_xqa_fp8kv"] not in CTA_ALONE


def test_first_look_was_priced_before_and_covers_every_shape():
    xq = FP.load_xqa(FP.DATA_DIR)
    fl = FP.xqa_first_look(xq, FP.DATA_DIR)
    assert len(fl) == len(xq) and fl["pred_main_us"].notna().all() and fl["pred_struct_us"].notna().all()
    assert set(fl["phase"]) == {"decode", "verify"}


def test_cta_alone_grid_is_new_and_priced_before_it_was_measured():
    """lab/kernels/measure_xqa_attention.py --grid alone: bf16 shapes in none of the campaign's or blind grid's rows,
    priced by two committed models before the measurement (xqa_alone_predictions.csv)."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "measure_xqa_attention", Path(__file__).resolve().parents[1] / "lab/kernels/measure_xqa_attention.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    keys = list(FP.XQA_KEYS)
    alone = pd.DataFrame(m.alone_shapes())[keys]
    seen = pd.concat([pd.DataFrame(m.shapes())[keys], pd.DataFrame(m.blind_shapes())[keys]])
    assert len(alone) == 54 and set(alone["dtype"]) == {"bf16"} and not len(alone.merge(seen, on=keys))
    b = FP.load_xqa_blind(FP.DATA_DIR, grid="alone")
    if not len(b):
        pytest.skip("CTA_ALONE grid not measured")
    assert len(b) == 54 and b["pred_new_us"].notna().all() and b["pred_base_us"].notna().all()
    assert (b["model_commit"] != b["base_commit"]).all()


def test_verification_cta_prices_its_rows_mask_and_merge_walk(monkeypatch):
    """mha.cu: a q 2 CTA (32 rows) pays its exposed last tile (1 + XQA_ROW_SHARE) times a q 1 CTA's (16 rows: the K / V
    fragments are loaded once for both 16-row blocks) and one mask load more; the merging CTA's loads follow each
    kernel's walk of its partials."""
    from hwmodels.opkinds import KIND_CODE
    from hwmodels.roofline import CTA_TILE_EXPOSED

    assert CTA_TILE_EXPOSED[KIND_CODE["attn_xqa"]] == 2.0    # gemm0 then gemm1 within one tile
    B, T = np.array([256.0, 256.0]), np.array([64.0, 64.0])
    launches, info = XQ.xqa(B, np.array([1.0, 2.0]), T, 32.0, 8.0, 128.0, 2.0, SMS, 16.0, split="port")
    ln = launches[0]
    assert list(info["rows"]) == [16.0, 32.0]
    f = np.ravel(ln.flops)
    assert 0.0 < XQ.XQA_ROW_SHARE < 1.0
    assert f[1] == pytest.approx((1.0 + XQ.XQA_ROW_SHARE) * f[0])   # 16 rows + the share of the second block
    assert f[0] == pytest.approx(2.0 * 256 * 8 * 16 * 256 * 2 * 128)
    assert list(np.ravel(ln.prologue_loads)) == [3.0, 4.0]   # + the draft mask
    # merged splits: the scratch stores' release before the semaphore (1), then mha.cu 1 + ceil(16 / 8) + ceil(16 / 2)
    # = 11 more loads; mha_sm90.cu 1 + ceil(12 / 4) = 4
    assert XQ.XQA_RELEASE_LOADS == 1.0
    monkeypatch.setattr(XQ, "XQA_LATE", False)   # 128 CTAs of 8 tiles: mha.cu's late CTAs (tests/test_xqa_late.py) off
    launches, info = XQ.xqa(np.array([1.0, 1.0]), 1.0, 32768.0, 32.0, 8.0, 128.0, np.array([2.0, 1.0]), SMS, 16.0,
                            split="port")
    assert list(info["multi_block"]) == [16.0, 12.0]
    assert float(np.ravel(launches[0].prologue_loads)[0]) == 3.0 + 1.0 + 11.0
    assert float(np.ravel(launches[1].prologue_loads)[1]) == 3.0 + 1.0 + 4.0
    # an unsplit call pays none of it
    launches, info = XQ.xqa(np.array([64.0]), 1.0, 64.0, 32.0, 8.0, 128.0, np.array([1.0]), SMS, 16.0, split="port")
    assert list(info["multi_block"]) == [1.0] and float(np.ravel(launches[0].prologue_loads)[0]) == 3.0


def test_one_tile_gemm1_walk_adds_a_load_past_two_slices():
    """mha.cu's one-tile CTA: 1-2 filled 64-key slices take one gemm1 step per warp group, 3-4 take two (one more
    dependent load); multi-tile CTAs and the GMMA kernel are unchanged."""
    from simulator.kernels import xqa as XQ

    def loads(T, kvb=2.0, B=4.0):
        launches, _ = XQ.xqa(B, 1.0, T, 32.0, 8.0, 128.0, kvb, 132, 16.0, split="port")
        return float(launches[0].prologue_loads[0] if hasattr(launches[0].prologue_loads, "__len__")
                     else launches[0].prologue_loads)

    assert loads(40.0) == loads(128.0)
    assert loads(129.0) == loads(40.0) + 1.0 == loads(256.0)
    assert loads(40.0, kvb=1.0, B=200.0) == loads(250.0, kvb=1.0, B=200.0)   # one sub-sequence: no merge
    # B = 64 x 8 heads = 512 CTAs: no split, two tiles per CTA: no walk load
    assert loads(300.0, B=64.0) == loads(40.0, B=64.0)


def test_lockstep_waves_expose_a_share_of_each_later_wave_load():
    """mha.cu's waves start in step (hwmodels.roofline CTA_LOCKSTEP): one wave adds nothing, W waves add
    LOCKSTEP_SHARE x (H(W) - 1) of one wave's load to the SMs' serial path; the GMMA kernel is not in step."""
    from hwmodels.opkinds import KIND_CODE
    from hwmodels.roofline import CTA_LOCKSTEP, LOCKSTEP_SHARE, lockstep_exposure

    assert KIND_CODE["attn_xqa"] in CTA_LOCKSTEP and KIND_CODE["attn_xqa_fp8kv"] not in CTA_LOCKSTEP
    e = lockstep_exposure(np.array([1.0, 2.0, 3.0, 64.0, 65.0, 1000.0])) / LOCKSTEP_SHARE
    assert e[0] == 0.0 and e[1] == pytest.approx(0.5) and e[2] == pytest.approx(0.5 + 1.0 / 3.0)
    assert e[4] == pytest.approx(e[3] + 1.0 / 65.0, abs=1e-4) and np.all(np.diff(e) > 0)


def test_lockstep_share_is_the_sweeps_fit():
    """LOCKSTEP_SHARE is what xqa_lockstep_share fits on the committed W-sweep under the committed fitted file (the
    shipped constant is not a free choice), and the sweep's increments fall with W at 3-4 slices (the lock-step shape)."""
    from hwmodels.roofline import LOCKSTEP_SHARE
    from hwmodels.spec import load_hardware

    d = FP.load_xqa_lock()
    if not len(d):
        pytest.skip("lock-step sweep not measured")
    share, rms = FP.xqa_lockstep_share(d, load_hardware("H100-SXM"))
    assert share == pytest.approx(LOCKSTEP_SHARE, abs=0.02) and rms < 0.06
    t = d[d["context"] == 240].sort_values("batch")["median_us"].to_numpy()
    assert t[1] - t[0] > t[-1] - t[-2]


def test_gmma_kernel_pays_its_cta_time_past_the_first_cta_per_sm():
    """The GMMA kernel's cta_serial (hwmodels.roofline CTA_SERIAL_AFTER_FIRST): a lone call pays none of it, a launch
    of many one-tile CTAs pays it for each CTA beyond the first on an SM; a long bandwidth-bound launch hides it."""
    from hwmodels.spec import load_hardware
    from simulator.calibration.fit import efficiency_with

    hw = load_hardware("H100-SXM")
    rows = pd.DataFrame({"family": "xqa", "model": "m", "dtype": "fp8", "heads": 32, "kv_heads": 8, "head_dim": 128,
                         "batch": [1, 512, 64], "q_rows": 1, "context": [16, 16, 16384], "page_size": 16})
    ops = FP.build_ops(rows, hw.units, 233472.0)
    base = FP.predict_us(ops, hw, efficiency_with(hw.efficiency, {"cta_serial_us.attn_xqa_fp8kv": 0.0}), 3)
    more = FP.predict_us(ops, hw, efficiency_with(hw.efficiency, {"cta_serial_us.attn_xqa_fp8kv": 1.0}), 3)
    assert more[0] == pytest.approx(base[0])                       # one CTA per SM: none
    assert more[1] - base[1] == pytest.approx(np.ceil(4096 / hw.units) - 1.0, rel=0.05)   # 31 CTAs past the first
    assert more[2] == pytest.approx(base[2], rel=1e-6)            # 512 long CTAs: the bytes


def test_row_share_is_the_verification_fit():
    """XQA_ROW_SHARE is what xqa_row_share fits on the named verification fit rows (xqa_verify_fit_rows: bf16, q 2 / 4,
    the q 1 fit rows' windows) under the committed fitted file, and it beats the share 1 of the rule before."""
    from hwmodels.spec import load_hardware

    xq = FP.load_xqa(FP.DATA_DIR)
    if not len(xq):
        pytest.skip("xqa campaign not measured")
    assert FP.xqa_verify_fit_rows(xq).sum() == 20
    share, rms, n = FP.xqa_row_share(xq, load_hardware("H100-SXM"))
    assert n == 20 and share == pytest.approx(XQ.XQA_ROW_SHARE, abs=0.02) and rms < 0.08


def test_gmma_col_share_is_the_verification_fit():
    """XQA_GMMA_COL_SHARE is what xqa_gmma_col_share fits on the named fp8 verification fit rows (xqa_gmma_verify_fit_rows:
    the campaign's 30 Llama-3.1-8B fp8 q 2 / 4 rows) under the committed fitted file, and it beats share 0 (the
    verification CTA priced as the decode CTA)."""
    from hwmodels.spec import load_hardware

    xq = FP.load_xqa(FP.DATA_DIR)
    if not len(xq):
        pytest.skip("xqa campaign not measured")
    hw = load_hardware("H100-SXM")
    rows = FP.xqa_gmma_verify_fit_rows(xq)
    assert rows.sum() == 30 and set(xq[rows]["dtype"]) == {"fp8"} and (xq[rows]["q_rows"] > 1).all()
    share, rms, n = FP.xqa_gmma_col_share(xq, hw)
    assert n == 30 and share == pytest.approx(XQ.XQA_GMMA_COL_SHARE, abs=0.02)
    d = xq[rows].reset_index(drop=True)
    keep = XQ.XQA_GMMA_COL_SHARE
    try:
        XQ.XQA_GMMA_COL_SHARE = 0.0
        zero = FP.predict_us(FP.build_ops(d, hw.units, 233472.0), hw, hw.efficiency, len(d))
    finally:
        XQ.XQA_GMMA_COL_SHARE = keep
    assert rms < np.sqrt(np.mean(np.log(zero / d["median_us"].to_numpy()) ** 2)) - 0.03


def test_gmma_verification_columns_add_cta_time_on_every_cta_and_wide_ctas_take_two_slots():
    """mha_sm90.cu's verification CTA: each 8 valid query heads beyond G add XQA_GMMA_COL_SHARE of cta_serial to every
    CTA on its SM (the op's cta_extra, hwmodels.roofline CTA_SERIAL_AFTER_FIRST), decode CTAs add nothing; at 32 columns
    2 CTAs per SM (resident_ctas), at 8-16 the kind's 3 (q 4 x G 4: 56 registers, XQA_GMMA_REGS)."""
    from hwmodels.roofline import price
    from hwmodels.spec import load_hardware
    from simulator.kernels.production import emit
    from simulator.ops import OpBuilder

    hw = load_hardware("H100-SXM")
    B, T = 256.0, 64.0   # 2048 one-tile CTAs: 16 on each SM
    q = np.array([1.0, 4.0, 8.0])

    def ops():
        launches, _ = XQ.xqa(B, q, T, 32.0, 8.0, 128.0, 1.0, hw.units, 16.0, split="port")
        b = OpBuilder(3)
        emit(b, launches, hw.units)
        return b.build()

    o = ops()
    assert o.cta_extra.tolist() == pytest.approx([0.0, XQ.XQA_GMMA_COL_SHARE * 12 / 8, XQ.XQA_GMMA_COL_SHARE * 28 / 8])
    assert o.resident_ctas.tolist() == [0.0, 3.0, XQ.XQA_GMMA_WIDE_SLOTS]
    with _gmma_steady_off():   # the per-CTA term alone (the loaded chain would move with it)
        with_share = price(ops(), hw, "graph")
        keep = XQ.XQA_GMMA_COL_SHARE
        try:
            XQ.XQA_GMMA_COL_SHARE = 0.0
            without = price(ops(), hw, "graph")
        finally:
            XQ.XQA_GMMA_COL_SHARE = keep
    per_sm = np.ceil(2048 / hw.units)
    serial = hw.efficiency.cta_serial_s["attn_xqa_fp8kv"]
    assert with_share[0] == without[0]
    assert with_share[1] - without[1] == pytest.approx(XQ.XQA_GMMA_COL_SHARE * 12 / 8 * per_sm * serial, rel=1e-6)


def test_eighth_grid_is_new_and_priced_before_it_was_measured():
    """lab/kernels/measure_xqa_attention.py --grid x8: shapes in none of the earlier measured rows, priced by main's model
    and the column share (xqa_x8_predictions.csv) before the measurement."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "measure_xqa_attention", Path(__file__).resolve().parents[1] / "lab/kernels/measure_xqa_attention.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    keys = list(FP.XQA_KEYS)
    x8 = pd.DataFrame(m.x8_shapes())[keys]
    seen = pd.concat([pd.DataFrame(f())[keys] for f in (m.shapes, m.blind_shapes, m.alone_shapes, m.s6_shapes,
                                                         m.x4_shapes, m.x5_shapes, m.x6_shapes, m.x7_shapes)])
    assert len(x8) == 45 and not len(x8.merge(seen, on=keys))
    b = FP.load_xqa_blind(FP.DATA_DIR, grid="x8")
    if not len(b):
        pytest.skip("eighth grid not measured")
    assert len(b) == 45 and b["pred_new_us"].notna().all() and b["pred_base_us"].notna().all()
    assert (b["model_commit"] != b["base_commit"]).all()


def test_gmma_residency_follows_the_profiled_registers():
    """mha_sm90.cu's verification builds: the residency is the occupancy of their MEASURED registers (XQA_GMMA_REGS:
    every entry is in a committed launch profile), a build without a profile keeps the launch-bounds rule."""
    from pathlib import Path

    import pandas as pd

    import hwmodels

    data = Path(hwmodels.__file__).resolve().parent / "calibration" / "data" / "production_attention"
    g = pd.concat([pd.read_csv(f) for f in sorted(DF.glob(data, "xqa_*_grids_*.csv"))], ignore_index=True)
    g = g[pd.to_numeric(g["block_z"], errors="coerce") == 3]
    lab = g["label"].str.extract(r"xqa_fp8_g(\d+)_p16_q(\d+):")
    ok = lab[0].notna().to_numpy() & g["regs"].notna().to_numpy()
    g, lab = g[ok], lab[ok]
    seen = {(int(q), int(G)): (int(r), int(m)) for q, G, r, m in zip(lab[1], lab[0], g["regs"], g["smem"])}
    for key, val in XQ.XQA_GMMA_REGS.items():
        assert seen[key] == val, key
    assert [float(XQ.gmma_resident(q, G)) for q, G in ((1, 4), (2, 4), (3, 4), (4, 4), (8, 4), (2, 7), (4, 7))] == \
        [3.0, 3.0, 2.0, 3.0, 2.0, 2.0, 1.0]
    # q 3 x G 4 (2 per SM by its registers), q 4 x G 7 (1), q 2 x G 8 and q 4 x G 8 (not profiled: 3 and 2)
    q, Hq, Hkv = np.array([3.0, 4.0, 2.0, 4.0]), np.array([32.0, 28.0, 8.0, 8.0]), np.array([8.0, 4.0, 1.0, 1.0])
    got = XQ.xqa(64.0, q, 200.0, Hq, Hkv, 128.0, 1.0, 132, 16.0, split="port")[0][0].resident
    assert got.tolist() == [2.0, 1.0, 0.0, XQ.XQA_GMMA_WIDE_SLOTS]
    before = XQ.xqa(64.0, q, 200.0, Hq, Hkv, 128.0, 1.0, 132, 16.0, split="port", use_regs=False)[0][0].resident
    assert before.tolist() == [0.0, XQ.XQA_GMMA_WIDE_SLOTS, 0.0, XQ.XQA_GMMA_WIDE_SLOTS]


def test_ninth_grid_is_new_and_priced_before_it_was_measured():
    """lab/kernels/measure_xqa_attention.py --grid x9: shapes in none of the earlier measured rows, priced by main's model
    and the residency from the registers (xqa_x9_predictions.csv) before the measurement; its fp8 builds are all in
    XQA_GMMA_REGS (the grid tests the table, not the fallback)."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "measure_xqa_attention", Path(__file__).resolve().parents[1] / "lab/kernels/measure_xqa_attention.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    keys = list(FP.XQA_KEYS)
    x9 = pd.DataFrame(m.x9_shapes())[keys]
    seen = pd.concat([pd.DataFrame(f())[keys] for f in (m.shapes, m.blind_shapes, m.alone_shapes, m.s6_shapes,
                                                         m.x4_shapes, m.x5_shapes, m.x6_shapes, m.x7_shapes,
                                                         m.x8_shapes)])
    assert len(x9) == 44 and not len(x9.merge(seen, on=keys))
    f8 = x9[x9["dtype"] == "fp8"]
    assert all((int(q), int(h // k)) in XQ.XQA_GMMA_REGS for q, h, k in zip(f8["q_rows"], f8["heads"], f8["kv_heads"]))
    b = FP.load_xqa_blind(FP.DATA_DIR, grid="x9")
    if not len(b):
        pytest.skip("ninth grid not measured")
    assert len(b) == 44 and b["pred_new_us"].notna().all() and b["pred_base_us"].notna().all()
    assert (b["model_commit"] != b["base_commit"]).all()


def test_prologue_loads_recur_in_the_waves_of_the_launchs_own_residency():
    """emit counts a launch's sync_steps (its prologue's dependent loads, once per wave) at the launch's own resident
    CTAs per SM where it sets one: the GMMA verification build q 4 x G 7 (1 per SM by its registers) runs 600 CTAs in
    5 waves on 132 SMs, not the 2 of the kind's 3 per SM; a build at the kind's residency is unchanged."""
    from simulator.kernels.production import emit
    from simulator.ops import OpBuilder

    q, Hq, Hkv = np.array([4.0, 2.0]), np.array([28.0, 32.0]), np.array([4.0, 8.0])
    B = np.array([150.0, 75.0])   # 600 CTAs each: 4 x 150 (G 7, one per SM) and 8 x 75 (G 4, 3 per SM)
    launches, info = XQ.xqa(B, q, 55.0, Hq, Hkv, 128.0, 1.0, 132, 16.0, split="port")
    assert info["ctas"].tolist() == [600.0, 600.0]
    b = OpBuilder(2)
    emit(b, launches, 132)
    o = b.build()
    assert o.resident_ctas.tolist() == [1.0, 3.0]
    assert o.sync_steps.tolist() == [5.0 * XQ.XQA_PROLOGUE_LOADS, 2.0 * XQ.XQA_PROLOGUE_LOADS]


def test_tenth_grid_is_new_and_priced_before_it_was_measured():
    """lab/kernels/measure_xqa_attention.py --grid x10: shapes in none of the earlier measured rows, priced by main's model
    and the candidate (xqa_x10_predictions.csv, two different commits) before the measurement."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "measure_xqa_attention", Path(__file__).resolve().parents[1] / "lab/kernels/measure_xqa_attention.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    keys = list(FP.XQA_KEYS)
    x10 = pd.DataFrame(m.x10_shapes())[keys]
    seen = pd.concat([pd.DataFrame(f())[keys] for f in (m.shapes, m.blind_shapes, m.alone_shapes, m.s6_shapes,
                                                         m.x4_shapes, m.x5_shapes, m.x6_shapes, m.x7_shapes,
                                                         m.x8_shapes, m.x9_shapes)])
    assert len(x10) == 49 and not len(x10.merge(seen, on=keys))
    p = pd.read_csv(DF.resolve(FP.DATA_DIR / "xqa_x10_predictions.csv"))
    assert len(p.merge(x10, on=keys)) == 49
    assert (p["model_commit"] != p["base_commit"]).all() and p["pred_base_us"].notna().all()


def test_per_sm_stream_ceiling_binds_only_below_the_hbm_rate():
    """hwmodels.roofline.SM_STREAM_CEILING: the busiest SM's ceil(n / U) CTAs stream their bytes at the kind's per-SM
    rate; with none set a launch prices as before; the fitted mha.cu rate binds at 8 unsplit CTAs of 16384 keys (8 x
    8.4 MB at ~51 GB/s per SM, measured 160 us) and not at 128 (the HBM rate binds)."""
    from hwmodels import roofline as RF
    from hwmodels.spec import load_hardware

    hw = load_hardware("H100-SXM")
    df = pd.DataFrame([{"family": "xqa", "model": "llama8b", "dtype": "bf16", "heads": 32, "kv_heads": 8,
                        "head_dim": 128, "batch": b, "q_rows": 1, "context": 16384, "page_size": 16, "split_sms": 1}
                       for b in (1, 16)])
    ops = FP.build_ops(df, hw.units, 233472.0)
    assert ops.parallel_units.tolist() == [8.0, 128.0]       # the launcher handed 1 SM: unsplit CTAs
    keep = dict(RF.SM_STREAM_CEILING)
    # shipped: the procedure's rate under main's terms (module comment), not the candidate refitted with them
    assert keep == {"attn_xqa": pytest.approx(50.58e9)} and RF.SM_STREAM_CEILING_CANDIDATE["attn_xqa"] < keep["attn_xqa"]
    on = FP.predict_us(ops, hw, hw.efficiency, 2)
    try:
        RF.SM_STREAM_CEILING = {}
        off = FP.predict_us(ops, hw, hw.efficiency, 2)
    finally:
        RF.SM_STREAM_CEILING = keep
    assert "attn_xqa" in keep and "attn_xqa_fp8kv" not in keep
    kv = 16384 * 128 * 2 * 2.0
    assert on[0] > off[0] and on[0] >= kv / keep["attn_xqa"] * 1e6
    # the soft knee (SM_STREAM_SOFT, the sixteenth grid) leaves 128 CTAs within 1 % of the HBM rate's price; the hard
    # ceiling (the rule before it) not at all
    assert on[1] == pytest.approx(off[1], rel=0.01)
    keep_soft = RF.SM_STREAM_SOFT
    try:
        RF.SM_STREAM_SOFT = ()
        hard = FP.predict_us(ops, hw, hw.efficiency, 2)
    finally:
        RF.SM_STREAM_SOFT = keep_soft
    assert hard[1] == pytest.approx(off[1])


def test_eleventh_grid_priced_before_and_the_scan_fit_is_the_committed_rate():
    """lab/kernels/measure_xqa_attention.py --grid x11: the blind shapes are in no earlier measured row (the controls
    only in the tenth grid's unmeasured prices), priced by main's model before the call (the mechanism without a
    ceiling priced them identically); the committed attn_xqa rate is the fit of the named scan rows."""
    import importlib.util
    from pathlib import Path

    from hwmodels import roofline as RF
    from hwmodels.spec import load_hardware

    spec = importlib.util.spec_from_file_location(
        "measure_xqa_attention", Path(__file__).resolve().parents[1] / "lab/kernels/measure_xqa_attention.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    keys = list(FP.XQA_KEYS)
    x11 = pd.DataFrame(m.x11_blind())[keys]
    measured = pd.concat([pd.read_csv(f) for f in sorted(FP.DATA_DIR.glob("xqa_*nvidia*.csv"))
                          if "_grids_" not in f.name and "x11" not in f.name and not f.stem.endswith("_nvidia-smi")])
    measured = measured[measured["median_us"].notna()]
    seen = x11.merge(measured[keys].drop_duplicates(), on=keys)
    # one control repeats a row the tenth grid's call did reach (fp8 q 1 B 9 T 1150): controls may repeat, blind rows not
    assert len(x11) == 45 and len(seen) == 1
    assert (seen["dtype"].iloc[0], seen["q_rows"].iloc[0], seen["context"].iloc[0], seen["batch"].iloc[0]) == \
        ("fp8", 1, 1150, 9)
    p = pd.read_csv(FP.DATA_DIR / "xqa_x11_predictions.csv")
    assert len(p.merge(x11, on=keys)) == 45 and (p["pred_here_us"] == p["pred_base_us"]).all()
    df = FP.load_xqa_x11()
    assert FP.xqa_stream_fit_rows(df).sum() == 41
    fit = FP.xqa_stream_per_sm(df[df["dtype"] == "bf16"], load_hardware("H100-SXM"))
    # fitted with main's other terms; the candidate's 49.51 GB/s is the same fit after the refit it forces (module
    # comment in hwmodels/roofline.py): the two agree within a few %
    assert fit["attn_xqa"][0] == pytest.approx(RF.SM_STREAM_CEILING_CANDIDATE["attn_xqa"], rel=0.04)
    assert fit["attn_xqa"][0] == pytest.approx(RF.SM_STREAM_CEILING["attn_xqa"], rel=1e-3)   # the shipped rate


def test_twelfth_grid_reproduces_trtllm_split_and_the_unsplit_gmma_share_is_off():
    """lab/kernels/measure_xqa_attention.py --grid x12: the rows marked with TensorRT-LLM's split hand the port's
    launcher the SM count whose split equals computeMultiBlockCount (simulator.kernels.xqa xqa_multi_block / port_split);
    main's model keeps the unsplit GMMA walk off (XQA_GMMA_UNSPLIT) and, on, an unsplit fp8 CTA's chain of n tiles is
    1 + (n - 1) x XQA_GMMA_UNSPLIT_SHARE tiles while a split one's is not moved."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "measure_xqa_attention", Path(__file__).resolve().parents[1] / "lab/kernels/measure_xqa_attention.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    s = pd.DataFrame(m.x12_shapes())
    t = s[s["split_sms"].notna()]
    assert len(t) >= 12
    B, T, H = (t[c].to_numpy(float) for c in ("batch", "context", "kv_heads"))
    gm = (t["dtype"] == "fp8").to_numpy()
    assert (XQ.port_split(B, T, H, t["split_sms"].to_numpy(float), gm) == XQ.xqa_multi_block(B, T, H, 132)).all()
    assert XQ.XQA_GMMA_UNSPLIT is False
    args = (np.array([8.0, 1.0]), 1.0, np.array([16384.0, 32768.0]), 8.0, 1.0, 128.0, 1.0, 132)
    with _gmma_steady_off():
        off, _ = XQ.xqa(*args, split="port", split_sms=np.array([1.0, 132.0]))
        try:
            XQ.XQA_GMMA_UNSPLIT = True
            on, info = XQ.xqa(*args, split="port", split_sms=np.array([1.0, 132.0]))
        finally:
            XQ.XQA_GMMA_UNSPLIT = False
    assert info["multi_block"].tolist()[0] == 1.0 and info["multi_block"].tolist()[1] > 1.0
    assert on[0].serial_iters[0] == pytest.approx(1.0 + 255.0 * XQ.XQA_GMMA_UNSPLIT_SHARE)
    assert on[0].serial_iters[1] == off[0].serial_iters[1]


def test_gmma_steady_share_is_fitted_on_its_named_rows_and_the_fits_hold_it_off():
    """simulator.kernels.xqa.XQA_GMMA_STEADY_SHARE: fitted only on the x11 scan's fp8 rows and the twelfth grid's fp8
    few-CTA rows (12 named rows); a CTA's first XQA_GMMA_PIPE_TILES tiles stay at the fitted iteration; the xqa fits
    run with the steady-state tiles and the kind's loaded chain off (XQA_FIT_WITHOUT_STEADY)."""
    from hwmodels import roofline as RF
    from hwmodels.spec import load_hardware

    hw = load_hardware("H100-SXM")
    x11, x12 = FP.load_xqa_x11(), FP.load_xqa_x12()
    rows = FP.xqa_gmma_steady_fit_rows(x11, x12)
    assert len(rows) == 12 and set(rows["dtype"]) == {"fp8"}
    share, rms, rms1, n = FP.xqa_gmma_steady_share(x11, x12, hw)
    assert share == pytest.approx(XQ.XQA_GMMA_STEADY_SHARE, abs=5e-4) and rms < rms1 and n == 12
    launches, _ = XQ.xqa(1.0, 1.0, np.array([128.0, 64.0 * 40]), 8.0, 1.0, 128.0, 1.0, 132, 16.0, split="port",
                         split_sms=1.0)
    assert np.ravel(launches[0].serial_iters).tolist() == pytest.approx(
        [2.0, XQ.XQA_GMMA_PIPE_TILES + (40.0 - XQ.XQA_GMMA_PIPE_TILES) * XQ.XQA_GMMA_STEADY_SHARE])
    fp8 = RF.KIND_CODE["attn_xqa_fp8kv"]
    assert fp8 in RF.CHAIN_LOADED
    with FP._xqa_ceiling_off():
        assert XQ.XQA_GMMA_STEADY is False and fp8 not in RF.CHAIN_LOADED
    assert XQ.XQA_GMMA_STEADY is True and fp8 in RF.CHAIN_LOADED
