"""The roofline formula of hwmodels.roofline on hand-built op tables."""
import pytest

from hwmodels.errors import SparsesimError
from hwmodels.roofline import price
from hwmodels.spec import Efficiency, efficiency_from_dict, load_hardware
from simulator.ops import OpBuilder

H100 = load_hardware("H100-SXM").with_efficiency(Efficiency())  # the formula, uncalibrated


def one(kind="elementwise", **kw):
    b = OpBuilder(1)
    b.add("x", kind, **kw)
    return b.build()


def test_memory_bound_op_is_bytes_over_bandwidth_plus_launch():
    t = price(one(bytes_read=3.35e9, bytes_written=0.0), H100, "graph")[0]
    assert t == pytest.approx(1e-3 + H100.launch_graph_s)
    # eager: the host's launch and the device overlap; a kernel costs the slower of the two
    te = price(one(bytes_read=3.35e9), H100, "eager")[0]
    assert te == pytest.approx(max(1e-3, H100.launch_eager_s))
    tiny = price(one(bytes_read=1e3), H100, "eager")[0]
    assert tiny == pytest.approx(H100.launch_eager_s)


def test_compute_bound_op_uses_dtype_peak():
    t = price(one("gemm", flops=989.4e12 * 1e-3, dtype="bf16"), H100)[0]
    assert t == pytest.approx(1e-3 + H100.launch_graph_s)
    t8 = price(one("gemm", flops=989.4e12 * 1e-3, dtype="fp8"), H100)[0]
    assert t8 == pytest.approx(0.5e-3 + H100.launch_graph_s, rel=1e-3)


def test_fp8_falls_back_to_bf16_on_a100():
    a100 = load_hardware("A100-80GB")
    assert a100.flops_for("fp8") == a100.flops_for("bf16") == 312e12


def test_wave_quantization_and_small_kernels():
    U = H100.units
    full = price(one("gemm", flops=1e12, parallel_units=U), H100)[0]
    # one more CTA than SMs: two waves, the second nearly empty -> compute time x 2U/(U+1)
    over = price(one("gemm", flops=1e12, parallel_units=U + 1), H100)[0]
    launch = H100.launch_graph_s
    assert (over - launch) == pytest.approx((full - launch) * 2 * U / (U + 1))
    # a memory-bound kernel on a quarter of the SMs pulls a quarter of the bandwidth (uncalibrated)
    quarter = price(one(bytes_read=1e9, parallel_units=U / 4), H100)[0]
    assert quarter - launch == pytest.approx(4 * 1e9 / H100.hbm_bw_bytes_s)


def test_ring_allreduce():
    b = OpBuilder(1)
    b.add("ar", "collective", bytes_read=1e6, devices=8)
    t = price(b.build(), H100)[0]
    expect = 2 * 7 / 8 * 1e6 / H100.link_bw_bytes_s + 2 * 7 * H100.link_latency_s + H100.launch_graph_s
    assert t == pytest.approx(expect)
    b = OpBuilder(1)
    b.add("ar", "collective", bytes_read=1e6, devices=1)
    assert price(b.build(), H100)[0] == 0.0


def test_count_multiplies_and_efficiency_divides():
    t1 = price(one(bytes_read=1e9, count=1), H100)[0]
    t3 = price(one(bytes_read=1e9, count=3), H100)[0]
    assert t3 == pytest.approx(3 * t1)
    eff = efficiency_from_dict({"memory": {"elementwise": 0.5}}, "test")
    slow = H100.with_efficiency(eff)
    t = price(one(bytes_read=1e9), slow)[0]
    assert t - slow.launch_graph_s == pytest.approx(2 * 1e9 / H100.hbm_bw_bytes_s)


def test_bad_launch_mode_and_bad_efficiency():
    with pytest.raises(SparsesimError, match="launch mode"):
        price(one(bytes_read=1.0), H100, "warp")
    with pytest.raises(SparsesimError, match="unknown key 'tensor'; allowed: gemm"):
        efficiency_from_dict({"memory": {"tensor": 0.5}}, "f.yaml")
    with pytest.raises(SparsesimError, match="fraction"):
        efficiency_from_dict({"compute": {"gemm": 0}}, "f.yaml")


def test_uncalibrated_default_is_one():
    e = Efficiency()
    assert set(e.compute.values()) == {1.0} and set(e.saturation.values()) == {1.0}
