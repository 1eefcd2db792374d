"""The roofline's loop floor (ops with serial_iters) and the latency fit (simulator/calibration/fit_latency.py)."""
from dataclasses import replace

import pandas as pd
import pytest

from hwmodels.errors import SparsesimError
from hwmodels.roofline import price
from hwmodels.spec import efficiency_from_dict, load_hardware
from simulator.calibration import fit_latency as FT
from simulator.ops import OpBuilder


def _op(iters, bytes_read=1e3, units=32):
    b = OpBuilder(1)
    b.add("scan", "attention", bytes_read=bytes_read, parallel_units=units, serial_iters=iters, dtype="fp16")
    return b.build()


def test_loop_floor_binds_only_when_calibrated():
    hw = load_hardware("H100-SXM")
    e = hw.efficiency
    assert e.loop_iter_s and 1e-7 < e.loop_iter_s < 1e-5          # measured: about 1.4 us per iteration
    t = price(_op(128), hw, "graph")[0]
    # 128 iterations x loop_iter + the attention kind's fixed time + the graph gap
    assert t == pytest.approx(128 * e.loop_iter_s + e.fixed_s["attention"] + hw.launch_graph_s)
    # without the floor, 1 kB prices at its (tiny) bytes
    bare = hw.with_efficiency(replace(e, loop_iter_s=None))
    assert price(_op(128), bare, "graph")[0] < 0.1 * t
    # a bandwidth-bound op is unaffected: 10 GB at ~3.2 TB/s takes ~3 ms >> 128 x 1.4 us
    big = price(_op(128, bytes_read=1e10, units=1e4), hw, "graph")[0]
    assert big == pytest.approx(price(_op(0, bytes_read=1e10, units=1e4), hw, "graph")[0])


def test_latency_block_parsed_and_checked():
    e = efficiency_from_dict({"latency": {"loop_iter_us": 1.5, "dram_us": 0.35, "l2_us": 0.14}}, "x.yaml")
    assert e.loop_iter_s == pytest.approx(1.5e-6) and e.dram_latency_s == pytest.approx(0.35e-6)
    with pytest.raises(SparsesimError, match="latency.loop_iter_us"):
        efficiency_from_dict({"latency": {"loop_iter_us": -1}}, "x.yaml")


def _synthetic(slope=1.25, c=4.0):
    rows = [{"device": "d", "family": "chase", "footprint_bytes": f, "median_us": m}
            for f, m in ((4 << 20, 0.15), (16 << 20, 0.15), (256 << 20, 0.35), (2 << 30, 0.36))]
    for ctas in (8, 16, 32, 64):
        for iters in (8, 16, 32, 64, 128):
            for indirect in (0, 1):
                for cache in ("cold", "hot"):
                    t = c + iters * slope * (1.0 if indirect else 0.8) * (1.0 if cache == "cold" else 0.6)
                    rows.append({"device": "d", "family": "page_scan", "ctas": ctas, "iterations": iters,
                                 "indirect": indirect, "cache": cache, "bytes_moved": 1e3 * iters,
                                 "median_us": t})
    return pd.DataFrame(rows)


def test_fit_recovers_the_slope_from_the_selector_rows_only():
    df = _synthetic()
    p = FT.fit(df)
    # fit rows: cold, indirect, <= 32 CTAs, >= 16 iterations: exactly t = 4 + 1.25 * iters
    assert p["loop_iter_us"] == pytest.approx(1.25) and p["intercept_us"] == pytest.approx(4.0)
    assert p["dram_us"] == pytest.approx(0.355) and p["l2_us"] == pytest.approx(0.15)
    assert p["fit_rows"] == 3 * 4
    hw = load_hardware("H100-SXM")
    hw = hw.with_efficiency(replace(hw.efficiency, loop_iter_s=p["loop_iter_us"] * 1e-6))
    chk = FT.check(df, hw)
    groups = set(FT.error_table(chk)["group"])
    assert "fit: selector structure, <= 32 CTAs, cold" in groups and "check: L2-hot launches" in groups
    with pytest.raises(SparsesimError, match="page_scan"):
        FT.fit(df[df["family"] == "chase"])
