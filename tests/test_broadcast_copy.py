"""transformers' repeat_kv as a broadcast copy (issue 15 round 7): kind copy_broadcast, its Op accounting, the roofline's
broadcast terms (load latency) and the measure_graph_chains.py v6 grid the fit reads."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from hwmodels import datafiles as DF
from hwmodels.calibration import DATA_DIR
from hwmodels.errors import SpecError
from hwmodels.roofline import FAR_MAX, INFLIGHT_ELEMS_PER_UNIT, broadcast_s, price
from hwmodels.spec import Efficiency, efficiency_from_dict, load_hardware
from simulator.layers import repeat_kv_ops
from simulator.ops import OpBuilder

REGIMES4 = DF.resolve(DATA_DIR / "regimes_nvidia-h100-80gb-hbm3_2026-11-22_v4.csv")
TERMS = {"lead_ps_per_byte": 0.2, "near_ps_per_byte": 0.05, "near_slope_ps_per_byte": 0.01, "far_ps_per_byte": 0.01,
         "far_l2_scale": 0.2}


def _ops(B, T, hq=32.0, hkv=8.0, d=128.0):
    B, T = np.atleast_1d(np.asarray(B, float)), np.atleast_1d(np.asarray(T, float))
    b = OpBuilder(len(B))
    repeat_kv_ops(b, "rkv", B, T, hq, hkv, d, 2.0, 1.0, tensors=1.0)
    return b.build()


def _hw(terms=TERMS):
    hw = load_hardware("H100-SXM")
    return hw.with_efficiency(replace(Efficiency(), broadcast_copy=dict(terms)))


def test_accounting_of_one_copy():
    o = _ops(8, 8192)
    e = 8 * 32 * 8192 * 128
    assert o.flops[0] == e and o.bytes_read[0] == 2 * e and o.bytes_written[0] == 2 * e
    assert o.reread_bytes[0] == pytest.approx(2 * e * 3 / 4) and o.working_set[0] == 8192 * 128 * 2


def test_no_terms_no_extra_time():
    hw = load_hardware("H100-SXM").with_efficiency(Efficiency())
    assert np.all(broadcast_s(_ops([1, 8], [512, 8192]), hw, hw.efficiency) == 0.0)


def test_lead_term_is_per_source_byte():
    hw = _hw({"lead_ps_per_byte": 1.0})
    o = _ops(8, 8192)
    assert broadcast_s(o, hw, hw.efficiency)[0] == pytest.approx((o.bytes_read - o.reread_bytes)[0] * 1e-12)


def test_near_term_only_when_a_rows_copies_fit_the_in_flight_window():
    hw = _hw({"near_ps_per_byte": 1.0})
    W = hw.units * INFLIGHT_ELEMS_PER_UNIT
    # G = 4 copies x T x 128 elements: 2W (none), W (full), W/4 (full, no slope)
    T = np.array([2 * W, W, W / 4]) / (4 * 128)
    o = _ops(np.ones(3), T)
    x = broadcast_s(o, hw, hw.efficiency) / (o.bytes_written * 1e-12)
    assert x == pytest.approx([0.0, 1.0, 1.0])
    hw = _hw({"near_slope_ps_per_byte": 1.0})
    x = broadcast_s(o, hw, hw.efficiency) / (o.bytes_written * 1e-12)
    assert x == pytest.approx([0.0, 0.0, 2.0])   # two halvings below W


def test_far_term_grows_with_the_row_and_is_held_beyond_the_measured_range():
    hw = _hw({"far_ps_per_byte": 1.0, "far_l2_scale": 0.25})
    row = np.array([0.1, 0.3, FAR_MAX, 2.0]) * hw.l2_bytes        # source-row bytes
    o = _ops(np.ones(4), row / 256.0)
    x = broadcast_s(o, hw, hw.efficiency) / (o.bytes_written * 1e-12)
    assert np.all(np.diff(x[:3]) > 0) and x[3] == pytest.approx(x[2])
    assert x[2] == pytest.approx(np.expm1(FAR_MAX / 0.25))


def test_only_broadcast_copies_get_the_terms():
    hw = _hw()
    b = OpBuilder(1)
    b.add("x", "copy_strided", flops=1e8, bytes_read=2e8, bytes_written=2e8, reread_bytes=1e8, working_set=1e6)
    b.add("y", "copy_broadcast", flops=1e8, bytes_read=2e8, bytes_written=2e8)   # no re-reads: not a broadcast
    assert np.all(broadcast_s(b.build(), hw, hw.efficiency) == 0.0)


def test_priced_time_includes_the_terms():
    o = _ops([8, 32], [8192, 2048])
    with_t, without = price(o, _hw(), "graph"), price(o, _hw({}), "graph")
    assert np.all(with_t > without)


def test_fitted_file_terms_parse_and_bad_ones_are_refused():
    eff = efficiency_from_dict({"broadcast_copy": TERMS}, "x.yaml")
    assert eff.broadcast_copy == TERMS
    with pytest.raises(SpecError, match="broadcast_copy.near_ps"):
        efficiency_from_dict({"broadcast_copy": {"near_ps_per_byte": -1.0}}, "x.yaml")
    with pytest.raises(SpecError, match="broadcast_copy.typo"):
        efficiency_from_dict({"broadcast_copy": {"typo": 1.0}}, "x.yaml")


def test_the_grid_joins_the_regimes_rows_with_the_hf_shapes_held_out():
    from simulator.calibration import fit_regimes as FR

    df = FR.load(REGIMES4)
    g = df[(df.kernel == "repeat_kv") & df.corner.str.startswith("grid")]
    assert len(g) >= 25 and df.attrs["repeat_kv_grid"].endswith("_v6.csv")
    hf = {(b, t + 16.0) for b, t in ((1, 512), (1, 2048), (1, 8192), (8, 2048), (8, 8192), (32, 2048))}
    on_hf = np.array([(b, t) in hf for b, t in zip(g.batch, g.context)])
    assert (g.corner[on_hf] == "grid_hf").all() and (g.corner[~on_hf] == "grid").all()
    held = FR.held_out(df) | FR.held_out_extra(df)
    fitted = FR.fit_sets(df)["copy_broadcast"][0]
    assert held[g.index[on_hf]].all() and not fitted[g.index[on_hf]].any() and fitted[g.index[~on_hf]].all()


def test_committed_fit_prices_repeat_kv_within_its_spread():
    """The committed H100 terms on the held-out HF-shape rows: the per-element spread across shapes is ~13 %
    (1.98-2.54 ps per element, graph_chains v6); one rate per element misses by up to 8 %."""
    from hwmodels.spec import load_efficiency
    from simulator.calibration import fit_regimes as FR

    df = FR.load(REGIMES4)
    hw = FR.hw_for(df, None)
    ev = FR.evaluate(df, hw, load_efficiency(hw.name))
    e = ev[(ev.kernel == "repeat_kv") & (ev.part == "held-out")]["after_err_pct"].abs()
    assert len(e) >= 10 and np.median(e) < 3.0
